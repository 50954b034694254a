"""``ndgrad.sparse.linalg``: SciPy's iterative linear solvers (``cg``, ``gmres``, ``minres``,
``bicgstab``) with solutions differentiable with respect to the right-hand side and the
operator's parameters.

This module owns those four functions: SciPy's names, signatures and ``(x, info)`` results,
with ``x`` a Tensor. The operator ``A`` may be a dense tensor (differentiated), a NumPy or
CuPy array, a ``scipy.sparse`` matrix or array, a ``scipy.sparse.linalg.LinearOperator``
(constants), or a Python function ``matvec(v)`` written with ndgrad operations, whose
captured tensors are differentiated like any other computation.

Note [Differentiating a linear solve]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
``x = A(θ)⁻¹ b`` has the derivative ``dx = A⁻¹ (db - dA x)``. The operator's parameters
``θ`` are explicit: the tensor ``A`` itself, or the tensors a matvec captures in its closure
cells (``_Closure``, which can call the matvec with other values in their place: the
values one transform level down, where the solves run). Two Functions:

    xhat = _PrimalSolve(b, *θ)         # SciPy's solver; non-differentiable
    x    = _LinSolve(b, xhat, *θ)      # value xhat; derivative A⁻¹ (db - dA x)

Reverse mode is ONE adjoint solve ``u = A⁻ᴴ x̄`` with the same method on the adjoint
operator, ``b̄ = u`` and ``θ̄`` the vjp of ``θ -> A_θ x`` at ``-u`` (``Ā = -u xᴴ`` for a
dense ``A``); forward mode is one solve ``A⁻¹ (db - dA x)`` (a jvp of ``θ -> A_θ x``).
Those solves go through the same two Functions, and ``x`` is ``_LinSolve``'s saved output,
so second derivatives are exact. The adjoint of a matvec is ``func.vjp`` of it (it is
linear). The derivative solves use the caller's ``rtol``, ``atol``, ``maxiter`` and ``M``
(its adjoint), with no ``x0`` or ``callback``; one that does not converge raises a
RuntimeError. A primal solution SciPy reports as unconverged (``info != 0``) is returned
with its ``info``, but differentiating it raises a RuntimeError: never a derivative of an
unconverged solution. A matvec that depends on a tensor requiring grad which it does not
capture in its closure (an object's attribute) is refused when called with grad mode on.
While a derivative solve runs, the matvec's closure cells hold the values one level down
(solves in several threads that share one matvec take turns, under a lock); another thread
calling that same matvec directly in the meantime would see them, so do not share a matvec
between a solve and other work running at the same time.

SciPy runs on host memory: tensors on a GPU are copied to the host for the solve (and for
each matvec of a function operator) and the solution is copied back.
"""

from __future__ import annotations

import copy
import functools
import threading

import numpy as np

from ...core.creation import asarray, zeros
from ...core.grad_mode import STATE, no_grad
from ...core.levels import visible_levels
from ...core.tensor import Tensor, host_array as _host
from ...core.function import Function
from ...functional.pytree import tree_flatten, tree_unflatten

__name__ = "ndgrad.sparse.linalg"  # (Note [Public module names] in ndgrad/scipy/__init__.py)

__all__ = ["cg", "gmres", "minres", "bicgstab"]

_NOT_FOR_DERIVATIVES = ("x0", "callback", "callback_type", "show", "check")


class _Problem:
    """One linear system: the method, SciPy's options, and the operator in one of the forms
    ``"dense"`` (a tensor, ``params[0]``), ``"sparse"``/``"linop"`` (SciPy constants) or
    ``"matvec"`` (a function of ndgrad tensors); ``adjoint`` solves with ``Aᴴ``."""

    def __init__(self, name, kind, op, n, dtype, device, opts):
        self.name, self.kind, self.op = name, kind, op
        self.n, self.dtype, self.device, self.opts = n, dtype, device, opts
        self.adjoint = False
        self.primal = True
        self.info = 0

    @property
    def who(self):
        return f"ndgrad.sparse.linalg.{self.name}"

    def derived(self, adjoint=False):
        """The problem of a derivative solve (tangent, or adjoint if ``adjoint``)."""
        p = copy.copy(self)
        p.adjoint = self.adjoint ^ adjoint
        p.primal = False
        p.info = 0
        p.opts = {k: v for k, v in self.opts.items() if k not in _NOT_FOR_DERIVATIVES}
        return p

    def check(self):
        if self.info != 0:
            raise RuntimeError(
                f"{self.who}: cannot differentiate the solution: the solver did not converge "
                f"(info={self.info}: "
                f"{'breakdown or illegal input' if self.info < 0 else 'iteration limit'}), "
                "so it does not solve A x = b and its derivative would be wrong. Raise maxiter, "
                "loosen rtol/atol, precondition (M=...) or try another method")

    # ---- the operator on ndgrad tensors (recorded by the transforms)
    def apply(self, v, params):
        if self.kind == "dense":
            A = params[0]
            if self.adjoint:
                A = A.conj().T if A.dtype.kind == "c" else A.T
            y = A @ v
        else:  # matvec
            fn = functools.partial(self.op, params)
            if self.adjoint:
                from ...functional.transforms import vjp
                _, vjp_fn = vjp(fn, zeros(self.n, dtype=v.dtype, device=v.device))
                y = vjp_fn(v)[0]
            else:
                y = fn(v)
        shift = self.opts.get("shift", 0.0)
        return y - shift * v if shift else y

    # ---- the operator on host arrays (for SciPy)
    def host_operator(self, params):
        import scipy.sparse.linalg as sla
        if self.kind == "dense":
            A = _host(params[0])
            return A.conj().T if self.adjoint else A
        if self.kind == "sparse":
            return self.op.conj().T if self.adjoint else self.op
        if self.kind == "linop":
            return self.op.H if self.adjoint else self.op
        n, dtype, device = self.n, self.dtype, self.device
        fn = functools.partial(self.op, params)
        if self.adjoint:
            from ...functional.transforms import vjp
            _, vjp_fn = vjp(fn, zeros(n, dtype=dtype, device=device))
            fn = lambda t: vjp_fn(t)[0]  # noqa: E731

        def mv(v):
            with no_grad():
                out = fn(asarray(np.asarray(v, dtype=dtype).reshape(n), device=device))
            if not isinstance(out, Tensor) or out.shape != (n,):
                raise ValueError(f"{self.who}: the matvec must return a Tensor of shape "
                                 f"({n},), got {getattr(out, 'shape', type(out).__name__)}")
            return _host(out).astype(dtype, copy=False)
        return sla.LinearOperator((n, n), matvec=mv, dtype=dtype)

    def host_solve(self, rhs, params):
        import scipy.sparse.linalg as sla
        opts = dict(self.opts)
        M = opts.get("M")
        if isinstance(M, Tensor):
            M = _host(M)
        if M is not None and self.adjoint:
            M = sla.aslinearoperator(M).H
        opts["M"] = M
        if isinstance(opts.get("x0"), Tensor):
            opts["x0"] = _host(opts["x0"])
        b = _host(rhs).astype(self.dtype, copy=False).reshape(self.n)
        x, info = getattr(sla, self.name)(self.host_operator(params), b, **opts)
        if self.primal:
            if info != 0 and self.info == 0:
                self.info = int(info)
        elif info != 0:
            raise RuntimeError(
                f"{self.who}: the {'adjoint' if self.adjoint else 'tangent'} solve of the "
                f"derivative did not converge (info={info}); the derivative would be wrong. "
                "Raise maxiter, loosen rtol/atol, precondition (M=...) or try another method")
        return asarray(np.asarray(x, dtype=self.dtype), device=self.device)


# ------------------------------------------------------------------------ the two rules
def _loop(prob, *rest):  # (how vmap's loop warning names the two Functions below)
    return prob.who, "SciPy's solver runs on host arrays"


class _PrimalSolve(Function):
    """SciPy's solve; its derivative is zero (the derivative is ``_LinSolve``'s)."""

    vmap_loop = staticmethod(_loop)

    @staticmethod
    def forward(ctx, prob, b, *params):
        x = prob.host_solve(b, params)
        ctx.mark_non_differentiable(x)
        ctx.prob = prob
        return x

    @staticmethod
    def backward(ctx, g):
        return (None,) * (len(ctx.needs_input_grad))

    @staticmethod
    def jvp(ctx, *tangents):
        p = ctx.prob
        return zeros(p.n, dtype=p.dtype, device=p.device)


class _LinSolve(Function):
    """Value ``xhat``; derivative ``A⁻¹ (db - dA x)`` (Note [Differentiating a linear
    solve]). Inputs: ``prob, b, xhat, *params``."""

    vmap_loop = staticmethod(_loop)

    @staticmethod
    def forward(ctx, prob, b, xhat, *params):
        ctx.prob = prob
        x = xhat.clone()
        ctx.save_for_backward(x, *params)
        ctx.save_for_forward(x, *params)
        return x

    @staticmethod
    def backward(ctx, g):
        from ...functional.transforms import vjp
        prob = ctx.prob
        prob.check()
        x, *params = ctx.saved_tensors
        u = _solve(prob.derived(adjoint=True), g, params)
        pcts = ()
        if params:
            _, vjp_fn = vjp(lambda *ps: prob.apply(x, ps), *params)
            pcts = tuple(vjp_fn(-u))
        return (None, u, None) + pcts

    @staticmethod
    def jvp(ctx, _prob, db, _dxhat, *dparams):
        from ...functional.transforms import jvp
        prob = ctx.prob
        prob.check()
        x, *params = ctx.saved_tensors
        rhs = db
        moving = [k for k, d in enumerate(dparams) if d is not None]
        if moving:
            def apply(*ps):
                full = list(params)
                for k, p in zip(moving, ps):
                    full[k] = p
                return prob.apply(x, full)
            _, dy = jvp(apply, tuple(params[k] for k in moving),
                        tuple(dparams[k] for k in moving))
            rhs = -dy if rhs is None else rhs - dy
        if rhs is None:
            return zeros(prob.n, dtype=prob.dtype, device=prob.device)
        return _solve(prob.derived(), rhs, params)


def _solve(prob, rhs, params):
    """``A⁻¹ rhs`` for ``prob``, differentiable (Note [Differentiating a linear solve])."""
    xhat = _PrimalSolve.apply(prob, rhs, *params)
    return _LinSolve.apply(prob, rhs, xhat, *params)


class _Closure:
    """A matvec function with the tensors it captures (in its closure cells, also inside
    tuples, lists and dicts there) made explicit, so that they can be replaced by their
    values one transform level down (the solves run there)."""

    def __init__(self, fn):
        self.fn = fn
        self.cells = []
        params = []
        for cell in getattr(fn, "__closure__", None) or ():
            try:
                value = cell.cell_contents
            except ValueError:  # an empty cell
                continue
            leaves, spec = tree_flatten(value)
            if any(isinstance(v, Tensor) for v in leaves):
                self.cells.append((cell, value, leaves, spec))
                params.extend(v for v in leaves if isinstance(v, Tensor))
        self.params = tuple(params)

    def __call__(self, params, v):
        if not self.cells:
            return self.fn(v)
        it = iter(params)
        # (one lock for every swap: two threads solving with one matvec do not see each
        # other's values; a thread calling the matvec itself meanwhile still would)
        with _CELLS:
            try:
                for cell, _value, leaves, spec in self.cells:
                    cell.cell_contents = tree_unflatten(
                        spec, [next(it) if isinstance(x, Tensor) else x for x in leaves])
                return self.fn(v)
            finally:
                for cell, value, _leaves, _spec in self.cells:
                    cell.cell_contents = value


_CELLS = threading.RLock()


def _run(name, A, b, opts):
    import scipy.sparse as sp
    import scipy.sparse.linalg as sla
    if not isinstance(b, Tensor):
        b = asarray(b)
    n = b.numel()
    if b.ndim not in (1, 2) or b.shape[0] != n:
        raise ValueError(f"ndgrad.sparse.linalg.{name}: b must have shape (n,) or (n, 1), got "
                         f"{tuple(b.shape)}")
    params = ()
    if isinstance(A, Tensor):
        kind, op, params, adtype = "dense", None, (A,), A.dtype
    elif sp.issparse(A):
        kind, op, adtype = "sparse", A, A.dtype
    elif isinstance(A, sla.LinearOperator):
        kind, op, adtype = "linop", A, A.dtype
    elif callable(A):
        op = _Closure(A)
        kind, params, adtype = "matvec", op.params, None
    else:
        A = asarray(A)
        kind, op, params, adtype = "dense", None, (A,), A.dtype
    if kind != "matvec" and tuple(A.shape) != (n, n):
        raise ValueError(f"ndgrad.sparse.linalg.{name}: A has shape {tuple(A.shape)}, but b "
                         f"has {n} elements (A must be ({n}, {n}))")
    dtype = np.result_type(b.dtype, *(() if adtype is None else (adtype,)))
    if dtype.kind not in "fc":
        dtype = np.dtype("float64")
    prob = _Problem(name, kind, op, n, dtype, b.device, opts)
    rhs = b.reshape(n)
    if rhs.dtype != dtype:
        rhs = rhs.astype(dtype)
    x = _solve(prob, rhs, params)
    if kind == "matvec" and STATE.grad_enabled and not visible_levels():
        probe = op(tuple(p.detach() for p in params), x.detach())
        if isinstance(probe, Tensor) and probe.requires_grad:
            raise ValueError(
                f"ndgrad.sparse.linalg.{name}: the matvec depends on a tensor that requires "
                "grad but is not captured directly in its closure (an attribute of an "
                "object, a global ...); its derivative would be lost. Capture it in a local "
                "variable the matvec closes over")
    return x, prob.info


def cg(A, b, x0=None, *, rtol=1e-5, atol=0.0, maxiter=None, M=None, callback=None):
    """Solve ``A x = b`` by conjugate gradients (``scipy.sparse.linalg.cg``; ``A`` Hermitian
    positive definite), the solution differentiable with respect to ``b`` and ``A``.

    Parameters
    ----------
    A : Tensor, array, scipy.sparse matrix or array, LinearOperator, or callable
        The ``(n, n)`` operator: a tensor (differentiated), an array or a SciPy sparse
        matrix or ``LinearOperator`` (constants), or a function ``matvec(v) -> A @ v`` of an
        ``(n,)`` tensor written with ndgrad operations, differentiated with respect to the
        tensors it closes over.
    b : Tensor or array_like
        The right-hand side, shape ``(n,)`` or ``(n, 1)`` (differentiated).
    x0 : Tensor or array_like, optional
        The starting guess (not differentiated).
    rtol, atol, maxiter, M, callback
        As for SciPy. ``rtol``, ``atol``, ``maxiter`` and ``M`` (its adjoint) also govern the
        derivative's solve.

    Returns
    -------
    x : Tensor
        The solution, shape ``(n,)``. Its derivative comes from ONE solve with the adjoint
        operator (reverse mode) or with ``A`` (forward mode), never through the iterations
        (Note [Differentiating a linear solve]); differentiating it raises a RuntimeError
        when ``info != 0``.
    info : int
        SciPy's: 0 converged, > 0 iteration limit reached, < 0 breakdown.

    Examples
    --------
    >>> import ndgrad
    >>> from ndgrad.sparse.linalg import cg
    >>> A = ndgrad.tensor([[4.0, 1.0], [1.0, 3.0]], requires_grad=True)
    >>> b = ndgrad.tensor([1.0, 2.0], requires_grad=True)
    >>> x, info = cg(A, b, rtol=1e-12)
    >>> x.detach(), info
    (tensor([0.09090909, 0.63636364]), 0)
    >>> x.sum().backward()
    >>> b.grad                                          # A⁻ᵀ 1
    tensor([0.18181818, 0.27272727])
    >>> bool(ndgrad.allclose(A.grad, -b.grad[:, None] * x[None, :].detach()))
    True
    """
    return _run("cg", A, b, dict(x0=x0, rtol=rtol, atol=atol, maxiter=maxiter, M=M,
                                 callback=callback))


def gmres(A, b, x0=None, *, rtol=1e-5, atol=0.0, restart=None, maxiter=None, M=None,
          callback=None, callback_type=None):
    """Solve ``A x = b`` by restarted GMRES (``scipy.sparse.linalg.gmres``; any nonsingular
    ``A``), the solution differentiable with respect to ``b`` and ``A``.

    Parameters and results as for :func:`cg`, with SciPy's ``restart`` and
    ``callback_type``; the adjoint solve is GMRES on ``Aᴴ``.

    Examples
    --------
    The operator as a function closing over a tensor parameter ``d`` (a tridiagonal matrix
    with diagonal ``d``); the gradient with respect to ``d`` is ``-u * x``, where
    ``u = A⁻ᵀ 1``:

    >>> import ndgrad
    >>> from ndgrad.func import grad
    >>> from ndgrad.sparse.linalg import gmres
    >>> b = ndgrad.tensor([1.0, 0.0, 2.0])
    >>> def solve(d):
    ...     def matvec(v):
    ...         up = ndgrad.concatenate([v[1:], ndgrad.zeros(1)])
    ...         return d * v + up
    ...     x, info = gmres(matvec, b, rtol=1e-12)
    ...     return x
    >>> d = ndgrad.tensor([2.0, 3.0, 4.0])
    >>> solve(d)
    tensor([ 0.58333333, -0.16666667,  0.5       ])
    >>> grad(lambda d: solve(d).sum())(d)
    tensor([-0.29166667,  0.02777778, -0.10416667])
    """
    return _run("gmres", A, b, dict(x0=x0, rtol=rtol, atol=atol, restart=restart,
                                    maxiter=maxiter, M=M, callback=callback,
                                    callback_type=callback_type))


def minres(A, b, x0=None, *, rtol=1e-5, shift=0.0, maxiter=None, M=None, callback=None,
           show=False, check=False):
    """Solve ``(A - shift I) x = b`` by MINRES (``scipy.sparse.linalg.minres``; ``A``
    Hermitian, possibly indefinite), the solution differentiable with respect to ``b`` and
    ``A``.

    Parameters and results as for :func:`cg`, with SciPy's ``shift``, ``show`` and
    ``check`` (SciPy's ``minres`` has no ``atol``).

    Examples
    --------
    >>> import ndgrad
    >>> from ndgrad.sparse.linalg import minres
    >>> A = ndgrad.tensor([[1.0, 2.0], [2.0, -1.0]])        # symmetric indefinite
    >>> x, info = minres(A, ndgrad.tensor([3.0, 1.0]), rtol=1e-12)
    >>> x, info
    (tensor([1., 1.]), 0)
    """
    return _run("minres", A, b, dict(x0=x0, rtol=rtol, shift=shift, maxiter=maxiter, M=M,
                                     callback=callback, show=show, check=check))


def bicgstab(A, b, x0=None, *, rtol=1e-5, atol=0.0, maxiter=None, M=None, callback=None):
    """Solve ``A x = b`` by BiCGSTAB (``scipy.sparse.linalg.bicgstab``; any nonsingular
    ``A``), the solution differentiable with respect to ``b`` and ``A``.

    Parameters and results as for :func:`cg`; the adjoint solve is BiCGSTAB on ``Aᴴ``.

    Examples
    --------
    A SciPy sparse matrix is a constant; the solution is differentiable in ``b``:

    >>> import scipy.sparse as sp
    >>> import ndgrad
    >>> from ndgrad.func import jacrev
    >>> from ndgrad.sparse.linalg import bicgstab
    >>> A = sp.csr_array([[3.0, 1.0], [0.0, 2.0]])
    >>> jacrev(lambda b: bicgstab(A, b, rtol=1e-12)[0])(ndgrad.tensor([1.0, 1.0]))
    tensor([[ 0.33333333, -0.16666667],
            [ 0.        ,  0.5       ]])
    """
    return _run("bicgstab", A, b, dict(x0=x0, rtol=rtol, atol=atol, maxiter=maxiter, M=M,
                                       callback=callback))
