"""Custom derivative rules with JAX's API: ``custom_vjp``, ``custom_jvp``, and implicit
differentiation of solvers: ``custom_root``, ``custom_fixed_point`` (JAXopt's decorators).
``ndgrad.func`` re-exports them; ``ndgrad.optimize`` is built on ``custom_root``.

Note [Custom rules on Functions]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
Each decorated function runs as one custom :class:`~ndgrad.autograd.Function` (a private
subclass here), so it composes with the transforms exactly as Functions do (Note
[Functions under transforms] in core/function.py): the primal computation runs once, at
the bottom, on plain tensors with grad mode off; ``.backward()``, ``autograd.grad``,
``func.grad``/``vjp``/``jacrev`` run its ``backward`` (the user's ``bwd``, the transpose of the
user's jvp rule, or the implicit-function-theorem solve); ``jvp``/``jacfwd`` run its ``jvp``;
``vmap`` runs ``fwd``/``bwd`` (``fun`` and the rule) once on the whole batch, as JAX
batches them, so they must be written with ndgrad operations; with
``vmap_method="sequential"`` it runs once per batch element instead (Note [Functions under
vmap] in functional/vmap.py), for rules that call code vmap cannot batch (SciPy).

The arguments are pytrees: their tensor leaves are the Function's inputs, every other leaf
is passed through as a constant (and gets no cotangent). The output may be a pytree of
tensors.

Higher order. ``forward`` runs with grad mode off, so the residuals a ``fwd`` returns do not
depend on the inputs. When a backward pass is itself differentiated (``create_graph=True``,
``grad(grad(f))``, ``jacfwd(jacrev(f))``) ``bwd`` is run on residuals recomputed by ``fwd``
from the saved inputs with grad mode on, so the second derivative goes through ``fwd`` and
``bwd`` (both must then be written with ndgrad operations), as JAX differentiates them.
"""

from __future__ import annotations

import contextlib
import functools
import threading

from ..core.backend import is_differentiable_dtype
from ..core.tensor import innermost_level
from ..core.function import Function
from ..core.grad_mode import STATE
from ..core.levels import visible_levels
from ..core.tensor import Tensor
from .pytree import tree_flatten, tree_unflatten

__all__ = ["custom_vjp", "custom_jvp", "custom_root", "custom_fixed_point"]


# ------------------------------------------------------------------------ shared helpers
def _nondiff(nondiff_argnums, who):
    nums = tuple(nondiff_argnums)
    for n in nums:
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise TypeError(f"{who}: nondiff_argnums must be non-negative ints, got {n!r}")
    return tuple(sorted(set(nums)))


class _Call:
    """One call of a decorated function: its arguments split into the positional
    non-differentiable ones and the pytree of the differentiable ones, whose tensor leaves
    are the Function's inputs."""

    def __init__(self, rule, args, nondiff):
        self.rule = rule
        self.nargs = len(args)
        for n in nondiff:
            if n >= len(args):
                raise ValueError(f"{rule.__name__}: nondiff_argnums contains {n}, but only "
                                 f"{len(args)} positional arguments were passed")
        self.nondiff = nondiff
        self.static = tuple(args[n] for n in nondiff)
        diff = tuple(a for k, a in enumerate(args) if k not in nondiff)
        leaves, self.spec = tree_flatten(diff)
        self.is_input = [isinstance(x, Tensor) for x in leaves]
        self.consts = [None if t else x for x, t in zip(leaves, self.is_input)]
        self.inputs = tuple(x for x, t in zip(leaves, self.is_input) if t)
        self.ospec = None

    def diff_args(self, inputs):
        """The differentiable arguments (a tuple) with ``inputs`` as their tensor leaves."""
        it = iter(inputs)
        leaves = [next(it) if t else c for t, c in zip(self.is_input, self.consts)]
        return tree_unflatten(self.spec, leaves)

    def all_args(self, inputs):
        """Every positional argument, in the caller's order."""
        diff = iter(self.diff_args(inputs))
        static = iter(self.static)
        return tuple(next(static) if k in self.nondiff else next(diff)
                     for k in range(self.nargs))

    def outputs(self, out, who):
        leaves, spec = tree_flatten(out)
        if not leaves or not all(isinstance(o, Tensor) for o in leaves):
            raise TypeError(f"{self.rule.__name__}: {who} must return a Tensor or a pytree of "
                            f"Tensors, got {type(out).__name__}")
        if self.ospec is None:
            self.ospec = spec
        return tuple(leaves)

    def result(self, leaves):
        # (a one-output Function may come back unwrapped from a level's loop)
        return tree_unflatten(self.ospec, [leaves] if isinstance(leaves, Tensor) else
                              list(leaves))

    def input_cotangents(self, cts, who):
        """Tensor leaves of a tuple of cotangents, one per differentiable argument."""
        ndiff = self.nargs - len(self.nondiff)
        if not isinstance(cts, (tuple, list)) or len(cts) != ndiff:
            n = len(cts) if isinstance(cts, (tuple, list)) else 1
            raise TypeError(
                f"{self.rule.__name__}: {who} must return a tuple with one cotangent per "
                f"differentiable positional argument ({ndiff}), got "
                f"{type(cts).__name__ if not isinstance(cts, (tuple, list)) else n} "
                f"{'entries' if isinstance(cts, (tuple, list)) else ''}".rstrip())
        out = []
        for k, (arg, ct) in enumerate(zip(self.diff_args(self.inputs), cts)):
            aleaves, aspec = tree_flatten(arg)
            if ct is None:
                out.extend(None for a in aleaves if isinstance(a, Tensor))
                continue
            cleaves, cspec = tree_flatten(ct)
            if cspec != aspec:
                raise TypeError(f"{self.rule.__name__}: the cotangent {who} returned for "
                                f"argument {k} has structure {cspec!r}, but the argument has "
                                f"{aspec!r}")
            out.extend(c for a, c in zip(aleaves, cleaves) if isinstance(a, Tensor))
        return tuple(out)


def _needs_higher_order(values):
    """Whether a backward pass is being recorded for values that carry derivatives (so
    residuals must be recomputed with grad mode on)."""
    return STATE.grad_enabled and any(isinstance(v, Tensor) and v.requires_grad
                                      for v in values)


def _primal_only(inputs):
    """No level among the inputs and nothing to record: the call is the function itself."""
    return innermost_level(inputs) is None and not (
        STATE.grad_enabled and any(t.requires_grad for t in inputs))


def _zeros_like(x):
    from ..core.creation import zeros_like
    return zeros_like(x)


# ------------------------------------------------------------------------ custom_vjp
class _CustomVJPFunction(Function):
    @staticmethod
    def vmap_loop(call, *inputs):  # (how vmap's loop warning names it: the rule's function)
        return call.rule.vmap_loop()

    @staticmethod
    def forward(ctx, call, *inputs):
        fn = call.rule
        with _primal_calls(fn):
            out = fn.fwd(*call.all_args(inputs))
        if not (isinstance(out, tuple) and len(out) == 2):
            raise TypeError(f"{fn.__name__}: the fwd given to defvjp must return a pair "
                            f"(output, residuals), got {type(out).__name__}")
        ctx.call = call
        ctx.residuals = out[1]
        ctx.save_for_backward(*inputs)
        ctx.save_for_forward(*inputs)
        return call.outputs(out[0], "fwd's output")

    @staticmethod
    def backward(ctx, *grads):
        call = ctx.call
        fn = call.rule
        inputs = ctx.saved_tensors
        residuals = ctx.residuals
        if _needs_higher_order(inputs):  # (Note [Custom rules on Functions]: higher order)
            residuals = fn.fwd(*call.all_args(inputs))[1]
        g = call.result(grads)
        cts = fn.bwd(*call.static, residuals, g)
        return (None,) + call.input_cotangents(cts, "bwd")

    @staticmethod
    def jvp(ctx, _call, *tangents):
        call = ctx.call
        fn = call.rule
        if fn.jvp_rule is None:
            raise TypeError(
                f"can't apply forward-mode autodiff (jvp, jacfwd, hessian) to the custom_vjp "
                f"function {fn.__name__}: it has only a reverse-mode rule. Use "
                f"{fn.__name__}.defjvp(rule) to give it a forward-mode rule too, use "
                "custom_jvp instead, or use reverse mode (jacrev).")
        return _run_jvp_rule(call, fn.jvp_rule, ctx.saved_tensors, tangents)


class _VectorizedCustomVJP(_CustomVJPFunction):
    generate_vmap_rule = True  # (Note [Functions under vmap] in functional/vmap.py)


def _run_jvp_rule(call, rule, inputs, tangents):
    tangents = [_zeros_like(x) if t is None else t for x, t in zip(inputs, tangents)]
    primals = call.diff_args(inputs)
    tans = call.diff_args(tangents)
    res = rule(*call.static, primals, tans)
    if not (isinstance(res, (tuple, list)) and len(res) == 2):
        raise TypeError(f"{call.rule.__name__}: the jvp rule must return a pair (primal_out, "
                        f"tangent_out), got {type(res).__name__}")
    leaves, _ = tree_flatten(res[1])
    return tuple(leaves)


class _CustomRule:
    """What ``custom_vjp`` and ``custom_jvp`` share: the wrapped ``fun``, its non-differentiable
    arguments, and the call, which runs ``fun`` itself when nothing needs a derivative and
    else the subclass's Function (``_function``) once its rule is set (``_missing``)."""

    _kind = _functions = _set_by = None

    def __init__(self, fun, nondiff_argnums=(), *, vmap_method="vectorized", _public=None):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = _nondiff(nondiff_argnums, self._kind)
        if vmap_method not in _VMAP_METHODS:
            raise ValueError(f"{self._kind}: vmap_method must be one of {_VMAP_METHODS}, got "
                             f"{vmap_method!r}")
        self.vmap_method = vmap_method
        self.fwd = self.bwd = self.jvp_rule = None
        # (_public, for ndgrad's functions built on this: "name", the public function, and
        # "vmap", why it runs once per batch element, for vmap's warning)
        self.public = _public or {}

    def vmap_loop(self):
        """``(name, why)`` for vmap's warning when it runs this function once per batch
        element (Note [Functions under vmap] in functional/vmap.py)."""
        name = self.public.get("name") or f"the {self._kind} function {self.__name__}"
        if self.vmap_method == "sequential":
            return name, self.public.get("vmap") or "declared with vmap_method='sequential'"
        return name, ("a derivative outside this vmap records it, which needs one node per "
                      "element")

    def __call__(self, *args, **kwargs):
        if kwargs:
            raise TypeError(f"{self.__name__}: a {self._kind} function takes positional "
                            "arguments only (pass keyword values positionally)")
        missing = self._missing()
        if missing:
            raise AttributeError(f"No {missing} defined for the {self._kind} function "
                                 f"{self.__name__}: call {self._set_by} first")
        call = _Call(self, args, self.nondiff_argnums)
        if self in _PRIMAL.rules or _primal_only(call.inputs):  # (JAX's primal call)
            return self.fun(*args)
        function = self._functions[self.vmap_method == "vectorized"]
        outs = function.apply(call, *call.inputs)
        return call.result(outs)


_VMAP_METHODS = ("vectorized", "sequential")


class _PrimalCalls(threading.local):
    rules = frozenset()


_PRIMAL = _PrimalCalls()


@contextlib.contextmanager
def _primal_calls(rule):
    """While a rule's Function computes its output (``fwd``, or ``fun`` for custom_jvp), a
    call of the same decorated function is a primal call: ``fun`` itself. (At the bottom of
    the levels that is so anyway; under ``vmap`` with a vectorized rule the Function runs on
    the batched values, where the call would otherwise apply the Function again.)"""
    outer = _PRIMAL.rules
    _PRIMAL.rules = outer | {rule}
    try:
        yield
    finally:
        _PRIMAL.rules = outer


class custom_vjp(_CustomRule):
    """A function with a reverse-mode rule of your own (``jax.custom_vjp``).

    Decorate ``fun`` and give the rule with ``fun.defvjp(fwd, bwd)``:

    - ``fwd(*args) -> (output, residuals)``: the output and whatever ``bwd`` needs
      (``residuals`` is any Python value: tensors, pytrees of them, numbers);
    - ``bwd(*nondiff_args, residuals, g) -> cotangents``: ``g`` has the output's structure;
      return a tuple with one cotangent per positional argument not in ``nondiff_argnums``
      (None for one that needs none), each with its argument's structure.

    The rule, never the autodiff of ``fun``'s body, gives the derivatives of every reverse
    transform (``.backward()``, ``autograd.grad``, ``func.grad``, ``vjp``, ``jacrev``, nested
    ones). Under forward mode (``jvp``, ``jacfwd``, ``hessian``) it raises a TypeError, as
    JAX does, unless a forward rule is given too with ``fun.defjvp(rule)`` (an ndgrad
    extension, with :class:`custom_jvp`'s ``rule``). Under ``vmap``, ``fwd`` and ``bwd`` run
    on the whole batch (Note [Custom rules on Functions]).

    Parameters
    ----------
    fun : callable
        The primal function of tensors (pytrees of them) and other values.
    nondiff_argnums : tuple of int
        Positional arguments that are not differentiated (passed first to ``bwd``).
    vmap_method : {"vectorized", "sequential"}
        How ``vmap`` runs the rule: on the batched values (the default: ``fwd`` and ``bwd``
        must then be written with ndgrad operations), or once per batch element (for a rule
        that calls code vmap cannot batch, such as SciPy on host arrays). A keyword-only
        ndgrad extension, named as ``jax.pure_callback``'s option.

    Examples
    --------
    A clipped gradient, and a stable ``log1p(exp(x))`` whose rule uses its own residual:

    >>> import ndgrad
    >>> from ndgrad.func import custom_vjp, grad
    >>> @custom_vjp
    ... def clip_gradient(x):
    ...     return x
    >>> clip_gradient.defvjp(lambda x: (x, None),
    ...                      lambda res, g: (ndgrad.clip(g, -1.0, 1.0),))
    >>> grad(lambda x: (3.0 * clip_gradient(x)).sum())(ndgrad.tensor([1.0, 2.0]))
    tensor([1., 1.])
    >>> @custom_vjp
    ... def softplus(x):
    ...     return ndgrad.logaddexp(x, 0.0)
    >>> softplus.defvjp(lambda x: (softplus(x), ndgrad.special.expit(x)),
    ...                 lambda s, g: (g * s,))
    >>> grad(softplus)(ndgrad.tensor(0.0))
    tensor(0.5)
    """

    _kind, _set_by = "custom_vjp", "defvjp(fwd, bwd)"
    _functions = (_CustomVJPFunction, _VectorizedCustomVJP)

    def _missing(self):
        return "VJP" if self.fwd is None else None

    def defvjp(self, fwd, bwd):
        """Set the reverse-mode rule: ``fwd(*args) -> (out, residuals)`` and
        ``bwd(*nondiff_args, residuals, g) -> tuple of cotangents``."""
        self.fwd, self.bwd = fwd, bwd

    def defjvp(self, rule):
        """Also give a forward-mode rule (as :meth:`custom_jvp.defjvp`), used by ``jvp``,
        ``jacfwd`` and ``hessian`` (an ndgrad extension: JAX has no forward mode for
        ``custom_vjp`` functions)."""
        self.jvp_rule = rule
        return rule



# ------------------------------------------------------------------------ custom_jvp
class _CustomJVPFunction(Function):
    vmap_loop = staticmethod(_CustomVJPFunction.vmap_loop)

    @staticmethod
    def forward(ctx, call, *inputs):
        ctx.call = call
        ctx.save_for_backward(*inputs)
        ctx.save_for_forward(*inputs)
        with _primal_calls(call.rule):
            return call.outputs(call.rule.fun(*call.all_args(inputs)), "the function")

    @staticmethod
    def jvp(ctx, _call, *tangents):
        call = ctx.call
        return _run_jvp_rule(call, call.rule.jvp_rule, ctx.saved_tensors, tangents)

    @staticmethod
    def backward(ctx, *grads):
        # The jvp rule is linear in the tangents: the cotangent is the vjp of
        # t -> tangent_out(primals, t) (JAX transposes it the same way).
        from .transforms import vjp
        call = ctx.call
        inputs = ctx.saved_tensors
        diff = [k for k, x in enumerate(inputs) if is_differentiable_dtype(x.dtype)]

        def tangent_out(*ts):
            full = [_zeros_like(x) for x in inputs]
            for k, t in zip(diff, ts):
                full[k] = t
            return _run_jvp_rule(call, call.rule.jvp_rule, inputs, full)

        zeros = tuple(_zeros_like(inputs[k]) for k in diff)
        _, vjp_fn = vjp(tangent_out, *zeros)
        cts = vjp_fn(tuple(grads))
        out = [None] * len(inputs)
        for k, c in zip(diff, cts):
            out[k] = c
        return (None,) + tuple(out)


class _VectorizedCustomJVP(_CustomJVPFunction):
    generate_vmap_rule = True


class custom_jvp(_CustomRule):
    """A function with a forward-mode rule of your own (``jax.custom_jvp``).

    Decorate ``fun`` and give the rule with ``fun.defjvp(rule)``:
    ``rule(*nondiff_args, primals, tangents) -> (primal_out, tangent_out)``, where
    ``primals`` and ``tangents`` are tuples of the differentiable positional arguments and
    ``tangent_out`` has the output's structure; it must be linear in ``tangents``.

    Forward mode (``jvp``, ``jacfwd``, ``forward_ad``) calls the rule; reverse mode
    (``.backward()``, ``grad``, ``vjp``, ``jacrev``) transposes it: the cotangent is the vjp of
    ``t -> tangent_out(primals, t)``, computed by ``func.vjp`` of the rule, as JAX transposes
    it; so the rule must be written with ndgrad operations. The primal output is ``fun``'s
    (the rule's ``primal_out`` is not used). Under ``vmap`` ``fun`` and the rule run on the
    whole batch, or per batch element with ``vmap_method="sequential"`` (as for
    :class:`custom_vjp`).

    Parameters
    ----------
    fun : callable
    nondiff_argnums : tuple of int
        Positional arguments that are not differentiated (passed first to ``rule``).
    vmap_method : {"vectorized", "sequential"}
        As for :class:`custom_vjp`.

    Examples
    --------
    >>> import ndgrad
    >>> from ndgrad.func import custom_jvp, grad, jvp
    >>> @custom_jvp
    ... def f(x, y):
    ...     return ndgrad.sin(x) * y
    >>> @f.defjvp
    ... def f_jvp(primals, tangents):
    ...     x, y = primals
    ...     dx, dy = tangents
    ...     return f(x, y), ndgrad.cos(x) * dx * y + ndgrad.sin(x) * dy
    >>> x, y = ndgrad.tensor(0.0), ndgrad.tensor(2.0)
    >>> jvp(f, (x, y), (ndgrad.tensor(1.0), ndgrad.tensor(0.0)))
    (tensor(0.), tensor(2.))
    >>> grad(f, argnums=(0, 1))(x, y)
    (tensor(2.), tensor(0.))
    """

    _kind, _set_by = "custom_jvp", "defjvp(rule)"
    _functions = (_CustomJVPFunction, _VectorizedCustomJVP)

    def _missing(self):
        return "JVP" if self.jvp_rule is None else None

    def defjvp(self, rule):
        """Set the rule ``rule(*nondiff_args, primals, tangents) -> (primal_out,
        tangent_out)``; returns it (so it can decorate it)."""
        self.jvp_rule = rule
        return rule



# ------------------------------------------------------------------------ implicit differentiation
# Note [Implicit differentiation]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# x*(theta) solves F(x, theta) = 0. Differentiating the identity F(x*(theta), theta) = 0:
# A dx = -B dtheta with A = dF/dx, B = dF/dtheta at (x*, theta). Forward mode solves
# A dx = -B dtheta (B dtheta is a jvp of F in theta); reverse mode solves A^T u = g and returns
# -B^T u (a vjp of F in theta). A and A^T are applied matrix-free by ndgrad's jvp and vjp of F
# in x. The solve itself:
#
# * on plain values (no transform level visible, nothing to record): a matrix-free solve on
#   host arrays, by scipy.sparse.linalg's cg (A symmetric, e.g. F = grad f) or gmres (any A),
#   or the dense Jacobian (jacrev) and a dense solve ("dense");
# * otherwise (a cotangent batched by jacrev's vmap, a tangent of an enclosing jvp, a
#   backward pass being recorded for a higher derivative): the dense Jacobian and
#   ndgrad.linalg.solve, written with ndgrad operations, so the enclosing transform batches,
#   pushes tangents through or records the solve like any other computation; the solution
#   x* saved by the Function is its output, so its derivative inside goes through the
#   Function again: second derivatives are implicit too.
#
# The solver itself runs in the Function's forward: on plain values, with grad mode off; no
# derivative ever goes through its iterations.
_SOLVES = ("cg", "gmres", "dense")


def _plain(values):
    if visible_levels() or STATE.grad_enabled and any(
            isinstance(v, Tensor) and v.requires_grad for v in values):
        return False
    return all(type(v) is Tensor or not isinstance(v, Tensor) for v in values)


def _dense_matrix(fun, x, transpose, via):
    """The Jacobian of ``fun`` at ``x`` as an (n, n) matrix (transposed if asked)."""
    from ..core.ops import reshape
    from .transforms import jacfwd, jacrev
    n = x.numel()
    J = reshape((jacrev if via == "rev" else jacfwd)(fun)(x), (n, n))
    return J.T if transpose else J


def _host_solve(call, matvec, b, x, transpose):
    """Solve ``A v = b`` for the tensor ``b`` (``A`` given by ``matvec`` on tensors shaped as
    ``x``) on host arrays; the result as a tensor like ``b``."""
    import numpy as np
    import scipy.sparse.linalg as sla
    from ..core.creation import asarray
    shape, n, device = tuple(x.shape), x.numel(), x.device
    dtype = np.result_type(x.dtype, b.dtype)
    bh = np.asarray(b.detach().cpu().numpy(), dtype=dtype).reshape(n)

    def mv(v):
        t = asarray(np.asarray(v, dtype=dtype).reshape(shape), device=device)
        # (a copy: a matvec that hands its input back, F = x - theta's, would alias the
        # vector SciPy's gmres updates in place, and gmres then fails on the identity)
        return np.array(matvec(t).detach().cpu().numpy(), dtype=dtype).reshape(n)

    op = sla.LinearOperator((n, n), matvec=mv, dtype=dtype)
    kw = dict(rtol=call.tol, atol=0.0, maxiter=call.maxiter)
    if call.solve == "cg":
        v, info = sla.cg(op, bh, **kw)
    else:
        v, info = sla.gmres(op, bh, restart=min(n, 50), **kw)
    if info != 0:
        raise _LinearSolveError(
            f"{call.name}: the linear solve of the implicit function theorem ({call.solve}) "
            f"did not converge (info={info}); the derivative would be wrong. Try "
            "solve='dense', or solve='gmres' if dF/dx is not symmetric positive definite")
    return asarray(v.reshape(shape), device=device).astype(b.dtype)


class _LinearSolveError(RuntimeError):
    """The implicit function theorem's own linear solve failed (not an error of ``F``)."""


def _solve(call, fun, x, b, transpose):
    """``(dF/dx)^T v = b`` (``transpose``) or ``(dF/dx) v = b`` at ``x``, where
    ``fun = F(., theta)`` (Note [Implicit differentiation])."""
    from ..core.ops import NAMESPACED, reshape
    from .transforms import jvp, vjp
    if call.solve != "dense" and _plain([x, b]):
        if transpose:
            _, vjp_fn = vjp(fun, x)
            return _host_solve(call, lambda v: vjp_fn(v)[0], b, x, True)
        return _host_solve(call, lambda v: jvp(fun, (x,), (v,))[1], b, x, False)
    A = _dense_matrix(fun, x, transpose, "rev")
    v = NAMESPACED["linalg"]["solve"](A, reshape(b, (x.numel(),)))
    return reshape(v, tuple(x.shape))


class _RootCall(_Call):
    def __init__(self, rule, args, solver, F, solve, has_aux, tol, maxiter, public):
        super().__init__(rule, args, ())
        self.solver, self.F, self.solve, self.has_aux = solver, F, solve, has_aux
        self.tol, self.maxiter = tol, maxiter
        self.failure = public.get("failure")
        self.name = public.get("name") or getattr(solver, "__name__", "custom_root")
        self.condition = public.get("condition") or "optimality_fun(x, *theta) = 0"
        self.second_order = public.get("second_order")

    def theta_fun(self, x, inputs, diff):
        """``F(x, .)`` as a function of the differentiable tensor leaves ``diff`` (indices
        into ``inputs``) of theta."""
        def f(*ts):
            full = list(inputs)
            for k, t in zip(diff, ts):
                full[k] = t
            return self.F(x, *self.diff_args(full))
        return f

    def x_fun(self, inputs):
        args = self.diff_args(inputs)
        return lambda x: self.F(x, *args)


class _CustomRootFunction(Function):
    @staticmethod
    def vmap_loop(call, *inputs):  # (how vmap's loop warning names it: ndgrad.optimize.<who>)
        return call.name, ("custom_root runs its solver on plain values (ndgrad.optimize's "
                           "solvers are SciPy's, on host arrays)")

    @staticmethod
    def forward(ctx, call, x0, *inputs):
        out = call.solver(x0.detach(), *call.diff_args([t.detach() for t in inputs]))
        x, aux = out if call.has_aux else (out, None)
        if not isinstance(x, Tensor):
            raise TypeError(f"{call.name}: the solver must return a Tensor (the solution), "
                            f"got {type(x).__name__}")
        ctx.call = call
        ctx.failure = call.failure(out) if call.failure is not None else None
        ctx.save_for_backward(x, *inputs)
        ctx.save_for_forward(x, *inputs)
        return (x, aux) if call.has_aux else x

    @staticmethod
    def _check(ctx):
        failure = ctx.failure
        if isinstance(failure, BaseException):
            raise type(failure)(*failure.args)
        if failure is not None:
            x, *inputs = ctx.saved_tensors
            with _second_order(ctx.call):  # (the Newton step differentiates F)
                _judge_flagged(ctx.call, failure, x, inputs)
            ctx.failure = None  # (judged once: differentiable, and warned)

    @staticmethod
    def backward(ctx, g, *_aux):
        from .transforms import vjp
        call = ctx.call
        _CustomRootFunction._check(ctx)
        with _second_order(call):
            x, *inputs = ctx.saved_tensors
            diff = [k for k, t in enumerate(inputs) if is_differentiable_dtype(t.dtype)]
            u = _solve(call, call.x_fun(inputs), x, g, transpose=True)
            _, vjp_fn = vjp(call.theta_fun(x, inputs, diff), *(inputs[k] for k in diff))
            cts = vjp_fn(u)
        out = [None] * len(inputs)
        for k, c in zip(diff, cts):
            out[k] = -c
        return (None, None) + tuple(out)

    @staticmethod
    def jvp(ctx, _call, _x0_t, *tangents):
        from .transforms import jvp
        call = ctx.call
        _CustomRootFunction._check(ctx)
        with _second_order(call):
            x, *inputs = ctx.saved_tensors
            diff = [k for k, (t, d) in enumerate(zip(inputs, tangents))
                    if d is not None and is_differentiable_dtype(t.dtype)]
            if not diff:
                return (_zeros_like(x), None) if call.has_aux else _zeros_like(x)
            _, rhs = jvp(call.theta_fun(x, inputs, diff), tuple(inputs[k] for k in diff),
                         tuple(tangents[k] for k in diff))
            dx = _solve(call, call.x_fun(inputs), x, -rhs, transpose=False)
        return (dx, None) if call.has_aux else dx


@contextlib.contextmanager
def _second_order(call):
    """Errors raised while differentiating ``F`` (not the linear solve's own) get the
    caller's explanation of why that derivative is needed, when it gave one
    (``ndgrad.optimize``: the derivative of a minimizer needs ``fun``'s Hessian)."""
    if call.second_order is None:
        yield
        return
    try:
        yield
    except (_LinearSolveError, _FlaggedSolutionError):
        raise
    except (RuntimeError, NotImplementedError, TypeError, ValueError) as e:
        msg = f"{call.name}: {call.second_order}; differentiating it failed with: {e}"
        try:
            err = type(e)(msg)
        except Exception:
            err = RuntimeError(msg)
        raise err from e


# Note [Differentiating a flagged solution]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A solver may report a failure at a point that satisfies F(x, theta) = 0 as well as floating
# point lets it: SciPy's BFGS stops with "Desired error not necessarily achieved due to
# precision loss" when its line search can no longer resolve the objective's decrease,
# often with a gradient of 1e-11 (SciPy's BFGS with the exact gradient stops at the same
# point). The derivative depends on the solution only through F's Jacobians there, so what
# decides whether it is right is how far x is from the exact root, not the solver's flag.
# That distance is, to first order, the Newton step d = (dF/dx)^-1 F(x, theta): the residual
# F measured in x's own units, whatever F's scale (a gradient of a sum of a million terms,
# a root of an equation written in other units). A flagged solution is differentiated, with
# a RuntimeWarning quoting the solver's message, when
#
#     max|d| <= tau max|x|,  tau = sqrt(eps) of x's dtype (1.5e-8 for float64),
#
# and refused otherwise (a RuntimeError quoting the message, the residual and the step); a
# step that cannot be computed (a singular dF/dx, a non-finite residual) refuses too.
#
# Why sqrt(eps). (1) The implicit derivative at x differs from the one at the exact root by
# O(|d|): a relative error of at most ~1.5e-8, smaller than what every solve that SciPy
# calls a success at its default tolerances already carries (BFGS's default gtol is 1e-5),
# so the rule admits nothing a success would not. (2) A minimizer that reads the objective's
# values cannot place the minimum closer than that: near it f changes by d^T H d / 2, which
# falls under f's own rounding, eps |f|, once |d| ~ sqrt(eps |f| / |H|) -- exactly where
# BFGS reports precision loss; a tighter tau would refuse solutions as good as floating point
# allows. The measure is relative to x's largest entry, as SciPy's xtol tests are
# (|dx| <= xtol |x|): at an exact root at x = 0 a flagged solution is refused unless its step
# is exactly 0. Nothing is computed unless the solver flagged a failure and a derivative is
# asked for: then one solve with dF/dx (dense up to 50 unknowns, the call's matrix-free solve
# above), once per solution.
class _FlaggedSolutionError(RuntimeError):
    """A flagged solution whose optimality condition does not hold to rounding level."""


def _newton_step(call, x, inputs):
    """``(F(x), d)`` with ``d = (dF/dx)^-1 F(x)`` on host arrays (``d`` None when it cannot
    be computed), on values detached from every graph."""
    import numpy as np
    from ..core.grad_mode import no_grad
    x = x.detach()
    inputs = [t.detach() for t in inputs]
    fun = call.x_fun(inputs)
    with no_grad():
        r = fun(x)
    rh = np.asarray(r.detach().cpu().numpy()).reshape(-1)
    if not np.all(np.isfinite(rh)):
        return rh, None
    try:
        if x.numel() <= 50:
            A = np.asarray(_dense_matrix(fun, x, False, "rev").detach().cpu().numpy())
            d = np.linalg.solve(A, rh)
        else:
            d = np.asarray(_solve(call, fun, x, r, transpose=False).detach().cpu().numpy())
    except (np.linalg.LinAlgError, _LinearSolveError):
        return rh, None
    d = d.reshape(-1)
    return rh, (d if np.all(np.isfinite(d)) else None)


def _judge_flagged(call, report, x, inputs):
    """Differentiate a solution its solver flagged as failed (warning) if its optimality
    condition holds to rounding level, else raise (Note [Differentiating a flagged
    solution])."""
    import warnings
    import numpy as np
    r, d = _newton_step(call, x, inputs)
    xh = np.abs(np.asarray(x.detach().cpu().numpy())).reshape(-1)
    tau = float(np.sqrt(np.finfo(np.result_type(xh.dtype, np.float32)).eps))
    res = f"{np.max(np.abs(r), initial=0.0):.2e}"
    scale = float(np.max(xh, initial=0.0))
    if d is not None:
        step = float(np.max(np.abs(d), initial=0.0))
        if step <= tau * scale:
            warnings.warn(
                f"{call.name}: {report}; but the solution satisfies {call.condition} to "
                f"rounding level (largest residual {res}, Newton step {step:.2e} against "
                f"|x| = {scale:.2e}, at most {tau:.1e} of it is rounding level): "
                "differentiating it", RuntimeWarning, stacklevel=2)
            return
        found = (f"its largest residual is {res} and the Newton step it implies is "
                 f"{step:.2e} against |x| = {scale:.2e} (rounding level: at most {tau:.1e} "
                 "of it)")
    else:
        found = (f"its largest residual is {res} and no Newton step could be computed "
                 "from it (dF/dx is singular there, or a value is not finite)")
    raise _FlaggedSolutionError(
        f"{call.name}: cannot differentiate the solution: {report}; and the solution does "
        f"not satisfy {call.condition}, the condition its derivative comes from, to "
        f"rounding level: {found} (Note [Differentiating a flagged solution]). Solve to "
        "convergence first (more iterations, another method, a better start)")


def custom_root(optimality_fun, has_aux=False, solve="gmres", *, tol=1e-10, maxiter=None,
                _public=None):
    """Make a solver of ``optimality_fun(x, *theta) = 0`` differentiable in ``theta`` by the
    implicit function theorem (JAXopt's ``custom_root``).

    ``@custom_root(F)`` decorates ``solver(x0, *theta) -> x`` (or ``(x, aux)`` with
    ``has_aux``): the solver runs once, on plain values with grad mode off (no derivative
    goes through its iterations), and the derivatives of its solution ``x`` come from
    ``F(x, theta) = 0``: reverse mode solves ``(dF/dx)^T u = g`` and returns
    ``-(dF/dtheta)^T u``; forward mode solves ``(dF/dx) dx = -(dF/dtheta) dtheta``
    (Note [Implicit differentiation]). Every transform applies: ``.backward()``, ``grad``,
    ``vjp``, ``jacrev``, ``jvp``, ``jacfwd``, second derivatives; under ``vmap`` the solver runs
    once per batch element.

    Parameters
    ----------
    optimality_fun : callable
        ``F(x, *theta)``, written with ndgrad operations, returning a tensor shaped like
        ``x``; zero at the solution.
    has_aux : bool
        The solver returns ``(x, aux)``; ``aux`` is passed through, not differentiated.
    solve : {"gmres", "cg", "dense"}
        The linear solve with ``dF/dx``: matrix-free GMRES (any nonsingular ``dF/dx``),
        matrix-free conjugate gradients (``dF/dx`` symmetric positive definite, e.g.
        ``F = grad f`` at a minimum), or the dense Jacobian (small problems). Inside an
        enclosing transform that batches or records the solve, the dense Jacobian is used.
    tol, maxiter : float, int
        Relative tolerance and iteration limit of the matrix-free solves.

    Returns
    -------
    callable
        The decorator; the decorated ``solver(x0, *theta)``, where ``x0`` is a tensor (not
        differentiated) and ``theta`` any tensors (pytrees of them) and other values.

    Examples
    --------
    The cube root by bisection, differentiated by the implicit function theorem
    (``dx/dtheta = 1 / (3 x^2)``):

    >>> import ndgrad
    >>> from ndgrad.func import custom_root, grad
    >>> def F(x, theta):
    ...     return x ** 3 - theta
    >>> @custom_root(F)
    ... def cube_root(x0, theta):
    ...     lo, hi = 0.0, float(theta) + 1.0
    ...     for _ in range(100):
    ...         mid = (lo + hi) / 2
    ...         lo, hi = (mid, hi) if mid ** 3 < float(theta) else (lo, mid)
    ...     return ndgrad.tensor((lo + hi) / 2)
    >>> theta = ndgrad.tensor(8.0)
    >>> cube_root(ndgrad.tensor(1.0), theta)
    tensor(2.)
    >>> grad(lambda t: cube_root(ndgrad.tensor(1.0), t))(theta)   # 1 / (3 * 2**2)
    tensor(0.08333333)
    """
    # _public (for ndgrad.optimize, which builds its solvers on this): "name", the public
    # function named in errors; "failure", failure(solver's output) -> None, an exception to
    # raise on differentiation, or the solver's own report of a failure, judged by the
    # optimality condition (Note [Differentiating a flagged solution]); "condition", that
    # condition in words; "second_order", why differentiating F is needed, added to an error
    # raised while doing so.
    if solve not in _SOLVES:
        raise ValueError(f"custom_root: solve must be one of {_SOLVES}, got {solve!r}")

    def decorator(solver):
        @functools.wraps(solver)
        def wrapped(x0, *theta):
            from ..core.creation import asarray
            if not isinstance(x0, Tensor):
                x0 = asarray(x0)
            call = _RootCall(wrapped, theta, solver, optimality_fun, solve, has_aux, tol,
                             maxiter, _public or {})
            return _CustomRootFunction.apply(call, x0, *call.inputs)
        return wrapped
    return decorator


def custom_fixed_point(fixed_point_fun, has_aux=False, solve="gmres", *, tol=1e-10,
                       maxiter=None, _public=None):
    """Make a solver of ``x = fixed_point_fun(x, *theta)`` differentiable in ``theta``
    (JAXopt's ``custom_fixed_point``): :func:`custom_root` with
    ``F(x, theta) = T(x, theta) - x``.

    Examples
    --------
    The fixed point of ``x = cos(theta x)`` by iteration; ``dx/dtheta`` from the implicit
    function theorem, ``-x sin(theta x) / (1 + theta sin(theta x))``:

    >>> import ndgrad
    >>> from ndgrad.func import custom_fixed_point, grad
    >>> T = lambda x, theta: ndgrad.cos(theta * x)
    >>> @custom_fixed_point(T)
    ... def iterate(x0, theta):
    ...     x = x0
    ...     for _ in range(200):
    ...         x = T(x, theta)
    ...     return x
    >>> theta = ndgrad.tensor(1.0)
    >>> x = iterate(ndgrad.tensor(0.5), theta)
    >>> x
    tensor(0.73908513)
    >>> d = grad(lambda t: iterate(ndgrad.tensor(0.5), t))(theta)
    >>> s = ndgrad.sin(x)
    >>> bool(abs(d - (-x * s / (1 + s))) < 1e-12)
    True
    """
    def F(x, *theta):
        return fixed_point_fun(x, *theta) - x
    return custom_root(F, has_aux=has_aux, solve=solve, tol=tol, maxiter=maxiter,
                       _public=_public)
