"""``ndgrad.optimize``: SciPy's solvers (``scipy.optimize``) for functions written with ndgrad
operations, their solutions differentiable with respect to the tensors in ``args``.

This module owns ``minimize``, ``root``, ``root_scalar``, ``fixed_point`` and
``least_squares``, with SciPy's
names, signatures and result types. ndgrad supplies the derivatives SciPy asks for (the
gradient ``jac``, Hessian-vector products ``hessp``, the Jacobian of a root problem,
``fprime``), SciPy runs its algorithm on host arrays, and the solution comes back as a
Tensor differentiable with respect to every Tensor in ``args`` by the implicit function
theorem (:func:`ndgrad.func.custom_root`, Note [Implicit differentiation] in
``functional/custom.py``): no derivative goes through SciPy's iterations.

* ``minimize``: through ``grad_x f(x, theta) = 0`` at the optimum, by conjugate gradients
  on Hessian-vector products (no dense Hessian). With a bound active at the solution, or
  with constraints, the derivative raises NotImplementedError (the optimality condition is
  then the KKT system, not implemented).
* ``root``: through ``fun(x, theta) = 0`` (GMRES on Jacobian-vector products);
  ``root_scalar``: through ``f(x, theta) = 0``; ``fixed_point``: through ``x = func(x, theta)``.
* ``least_squares``: through ``grad_x C(x, theta) = 0`` for the cost ``C`` SciPy minimizes
  (``½|r|²`` for the linear loss; its Jacobian ``JᵀJ + Σ r_i ∇²r_i``, exact, not
  Gauss-Newton); active bounds raise NotImplementedError when differentiating.

A solution SciPy reports as failed (``success=False``, an unconverged root) is returned as
SciPy returns it. Differentiating it looks at the condition the derivative comes from, not
only at SciPy's flag (Note [Differentiating a flagged solution] in ``functional/custom.py``):
when that condition holds to rounding level (BFGS's "precision loss" stop with a gradient
of 1e-11), the derivative is computed, with a RuntimeWarning quoting SciPy's message; when
it does not, a RuntimeError quotes SciPy's message and the residual: never a silently wrong
derivative. Errors name the public function called (``ndgrad.optimize.minimize: ...``).
SciPy is imported on first use (``import ndgrad`` loads no SciPy); the solvers work on host
memory, so tensors on a GPU are copied to the host and back at each evaluation.
"""

from __future__ import annotations

import numpy as np

from ..core import ops as _ops
from ..core.creation import asarray
from ..core.lazy import compute as _compute
from ..core.tensor import Tensor, host_array as _host
from ..functional.custom import custom_fixed_point, custom_root
from ..functional.transforms import grad, grad_and_value, hessian, jacrev, jvp

__name__ = "ndgrad.optimize"  # its public name (Note [Public module names] in scipy/__init__.py)

__all__ = ["minimize", "root", "root_scalar", "fixed_point", "least_squares"]

_HESSP_METHODS = ("newton-cg", "trust-ncg", "trust-krylov", "trust-constr")
_HESS_METHODS = ("dogleg", "trust-exact")
_JAC_ROOT_METHODS = ("hybr", "lm")


def _start(x0):
    """``x0`` as a detached Tensor, and its shape, dtype and device."""
    x = x0.detach() if isinstance(x0, Tensor) else asarray(np.asarray(x0, dtype=float))
    if x.dtype.kind != "f":
        x = x.astype("float64")
    return x, tuple(x.shape), x.dtype, x.device


def _tensor_like(a, shape, dtype, device):
    return asarray(np.asarray(a, dtype=dtype).reshape(shape), device=device)


def _args(args, who, unpack=False):
    """``args`` as SciPy's ``who`` takes it: a tuple as it is; anything else wrapped in a
    tuple (``minimize``, ``root``, ``root_scalar``: ``args=0.5`` is ``args=(0.5,)``), or, for
    ``least_squares`` and ``fixed_point`` (``unpack``), unpacked as SciPy's ``fun(x, *args)``
    unpacks it (a list or an array gives its entries; a number raises)."""
    if isinstance(args, tuple):
        return args
    if not unpack:
        return (args,)
    try:
        return tuple(args)
    except TypeError:
        raise TypeError(f"ndgrad.optimize.{who}: args must be a tuple of the further "
                        f"arguments of fun (SciPy's {who} calls fun(x, *args)), got "
                        f"{type(args).__name__}; pass args=(value,)") from None


def _public(who, condition, second_order=None, result=True):
    """What custom_root needs to name ``ndgrad.optimize.<who>`` in its errors, and to judge
    a solution SciPy reports as failed (Note [Differentiating a flagged solution] in
    functional/custom.py): SciPy's report and the optimality condition in words.
    ``result=False``: the solver returns no SciPy result (``fixed_point``: SciPy raises)."""
    def failure(out):
        res = out[1]
        if getattr(res, "success", getattr(res, "converged", True)):
            return getattr(res, "_ndgrad_error", None)
        msg = getattr(res, "message", None) or getattr(res, "flag", "did not converge")
        msg = " ".join(str(msg).split())  # (MINPACK's messages are wrapped)
        return f"SciPy's {who} reported a failure (SciPy's message: {msg})"
    return dict(name=f"ndgrad.optimize.{who}", failure=failure if result else None,
                condition=condition, second_order=second_order)


_SECOND_ORDER_HINT = ("write fun with operations that have second derivatives (a custom "
                      "Function needs a backward written with ndgrad operations, not "
                      "once_differentiable)")


def _result(res, x):
    out = type(res)(res)
    out.x = x
    return out


def _derivatives_by_ndgrad(who, **given):
    """Refuse SciPy's derivative arguments (``jac``, ``hess``, ``hessp``) other than None:
    ndgrad computes them by differentiating ``fun`` (SciPy's ``jac=True``, ``fun`` returning
    the gradient too, and its finite-difference names would be ignored or wrong here)."""
    for name, value in given.items():
        if value is not None:
            raise TypeError(
                f"ndgrad.optimize.{who}: {name}={value!r} is not supported: ndgrad computes "
                f"the derivatives of fun by differentiating it, so leave "
                f"{', '.join(given)} None (SciPy's parameters, kept at SciPy's positions)")


def minimize(fun, x0, args=(), method=None, jac=None, hess=None, hessp=None, bounds=None,
             constraints=(), tol=None, callback=None, options=None):
    """Minimize a scalar function of one tensor (``scipy.optimize.minimize``), with the
    gradient (and Hessian-vector products) by ndgrad; the minimizer is differentiable with
    respect to the tensors in ``args``.

    Parameters
    ----------
    fun : callable
        ``fun(x, *args) -> scalar Tensor``, written with ndgrad operations.
    x0 : Tensor or array_like
        The starting point (not differentiated); the solution has its shape.
    args : tuple
        Further arguments of ``fun``: tensors (differentiated: the solution depends on them)
        and other values. Anything but a tuple is one argument (``args=0.5`` is
        ``args=(0.5,)``), as in SciPy.
    method, bounds, constraints, tol, callback, options
        As for ``scipy.optimize.minimize``, at SciPy's positions.
    jac, hess, hessp : None
        SciPy's parameters, at SciPy's positions; only None is accepted (anything else is a
        TypeError): ``jac`` is ndgrad's gradient, ``hessp`` (Hessian-vector products by
        forward-over-reverse) is given to the methods that take it (Newton-CG, trust-ncg,
        trust-krylov, trust-constr), and the dense ``hess`` to dogleg and trust-exact,
        which need it.

    Returns
    -------
    scipy.optimize.OptimizeResult
        SciPy's result, with ``x`` a Tensor of ``x0``'s shape: differentiable (``.backward()``,
        ``func.grad``, ``jacrev``, ``jvp`` ...) with respect to the tensors in ``args`` by the
        implicit function theorem on ``grad_x fun(x, *args) = 0`` (conjugate gradients on
        Hessian-vector products). When SciPy reports a failure, differentiating it warns
        (quoting SciPy's message) if the gradient is zero to rounding level there, and
        raises a RuntimeError (quoting the message and the residual) if not (Note
        [Differentiating a flagged solution]); with a bound active at the solution or with
        constraints it raises NotImplementedError.

    Examples
    --------
    Ridge regression: the derivative of the optimum with respect to the L2 weight matches
    the closed form ``-(A'A + lam I)^-2 A'y``:

    >>> import numpy as np
    >>> import ndgrad
    >>> from ndgrad.optimize import minimize
    >>> A = ndgrad.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 7.0]])
    >>> y = ndgrad.tensor([1.0, 0.0, 2.0])
    >>> def loss(w, lam):
    ...     r = A @ w - y
    ...     return 0.5 * (r * r).sum() + 0.5 * lam * (w * w).sum()
    >>> lam = ndgrad.tensor(0.5, requires_grad=True)
    >>> res = minimize(loss, ndgrad.zeros(2), args=(lam,), method="BFGS", tol=1e-12)
    >>> res.success
    True
    >>> res.x.sum().backward()
    >>> H = A.numpy().T @ A.numpy() + 0.5 * np.eye(2)
    >>> expected = -np.linalg.solve(H, np.linalg.solve(H, A.numpy().T @ y.numpy())).sum()
    >>> bool(abs(lam.grad.item() - expected) < 1e-7)
    True
    """
    import scipy.optimize as so
    _derivatives_by_ndgrad("minimize", jac=jac, hess=hess, hessp=hessp)
    x0, shape, dtype, device = _start(x0)
    args = _args(args, "minimize")
    meth = method.lower() if isinstance(method, str) else method

    def objective(x, *theta):
        v = fun(x, *theta)
        if isinstance(v, Tensor) and v.ndim:
            if v.numel() != 1:
                raise ValueError(
                    f"ndgrad.optimize.minimize: fun must return a scalar, the objective to "
                    f"minimize; it returned a Tensor of shape {tuple(v.shape)}. minimize "
                    "needs a scalar objective: for residuals to make small use "
                    "ndgrad.optimize.least_squares, for equations to solve "
                    "ndgrad.optimize.root")
            v = v.reshape(())  # (a one-entry array, as SciPy accepts)
        return v

    def solver(x0, *theta):
        def f(xh):
            x = _tensor_like(xh, shape, dtype, device)
            g, v = grad_and_value(lambda x: objective(x, *theta))(x)
            v, g = _compute(v, g)  # (Dask-backed: both in one pass over the data)
            return float(v.item()), _host(g).reshape(-1)

        def hessp(xh, p):
            x = _tensor_like(xh, shape, dtype, device)
            v = _tensor_like(p, shape, dtype, device)
            return _host(jvp(grad(lambda x: objective(x, *theta)), (x,), (v,))[1]).reshape(-1)

        def hess(xh):
            x = _tensor_like(xh, shape, dtype, device)
            n = x.numel()
            return _host(hessian(lambda x: objective(x, *theta))(x)).reshape(n, n)

        kw = {}
        if meth in _HESSP_METHODS:
            kw["hessp"] = hessp
        elif meth in _HESS_METHODS:
            kw["hess"] = hess
        if callback is not None:
            kw["callback"] = callback
        res = so.minimize(f, _host(x0).reshape(-1), jac=True, method=method, bounds=bounds,
                          tol=tol, options=options, constraints=constraints, **kw)
        res._ndgrad_error = _constrained(res, bounds, constraints)
        return _tensor_like(res.x, shape, dtype, device), res

    def optimality(x, *theta):
        return grad(lambda x: objective(x, *theta))(x)
    public = _public("minimize", "grad_x fun(x, *args) = 0", (
        "the derivative of the minimizer comes from grad_x fun(x, *args) = 0, whose Jacobian "
        "is fun's Hessian, so it needs fun's second derivative: " + _SECOND_ORDER_HINT))
    x, res = custom_root(optimality, has_aux=True, solve="cg", _public=public)(solver)(
        x0, *args)
    return _result(res, x)


def _constrained(res, bounds, constraints):
    """The error differentiating ``res.x`` must raise (active bounds, constraints), or None."""
    if constraints:
        return NotImplementedError(
            "ndgrad.optimize.minimize: differentiating a solution of a constrained problem "
            "(constraints=...) is not implemented (its optimality condition is the KKT "
            "system); only unconstrained optima and inactive bounds are differentiable")
    if bounds is None:
        return None
    import scipy.optimize as so
    x = np.asarray(res.x, dtype=float).reshape(-1)
    if isinstance(bounds, so.Bounds):
        lo, hi = np.broadcast_to(bounds.lb, x.shape), np.broadcast_to(bounds.ub, x.shape)
    else:
        pairs = list(bounds)
        lo = np.array([-np.inf if b[0] is None else b[0] for b in pairs], dtype=float)
        hi = np.array([np.inf if b[1] is None else b[1] for b in pairs], dtype=float)
    scale = 1e-8 * (1 + np.abs(x))
    active = (np.abs(x - lo) <= scale) | (np.abs(hi - x) <= scale)
    if active.any():
        return NotImplementedError(
            f"ndgrad.optimize.minimize: the bounds are active at the solution (components "
            f"{np.flatnonzero(active).tolist()}); differentiating a solution with active "
            "bounds is not implemented (its optimality condition is not grad f = 0)")
    return None


def root(fun, x0, args=(), method="hybr", jac=None, tol=None, callback=None, options=None):
    """Find a root of ``fun(x, *args)`` (``scipy.optimize.root``), with the Jacobian by
    ndgrad; the root is differentiable with respect to the tensors in ``args``.

    Parameters
    ----------
    fun : callable
        ``fun(x, *args) -> Tensor`` of ``x``'s shape, written with ndgrad operations.
    x0 : Tensor or array_like
    args : tuple
        Further arguments of ``fun`` (tensors among them are differentiated); anything but
        a tuple is one argument, as in SciPy.
    method, tol, callback, options
        As for ``scipy.optimize.root``, at SciPy's positions; the methods "hybr" and "lm"
        get ndgrad's Jacobian.
    jac : None
        SciPy's parameter, at SciPy's position; only None is accepted (anything else is a
        TypeError): the Jacobian is ndgrad's.

    Returns
    -------
    scipy.optimize.OptimizeResult
        With ``x`` a Tensor of ``x0``'s shape, differentiable by the implicit function theorem
        on ``fun(x, *args) = 0`` (GMRES on Jacobian-vector products). When SciPy reports a
        failure, differentiating it warns if ``fun(x) = 0`` holds to rounding level there
        and raises a RuntimeError (quoting SciPy's message and the residual) if not.

    Examples
    --------
    >>> import ndgrad
    >>> from ndgrad.optimize import root
    >>> from ndgrad.func import grad
    >>> f = lambda x, a: x ** 2 - a
    >>> root(f, ndgrad.tensor([1.0]), args=(ndgrad.tensor([4.0]),)).x
    tensor([2.])
    >>> grad(lambda a: root(f, ndgrad.tensor([1.0]), args=(a,)).x.sum())(
    ...     ndgrad.tensor([4.0]))                        # d sqrt(a) / da = 1 / (2 sqrt(a))
    tensor([0.25])
    """
    import scipy.optimize as so
    _derivatives_by_ndgrad("root", jac=jac)
    x0, shape, dtype, device = _start(x0)
    args = _args(args, "root")
    meth = method.lower() if isinstance(method, str) else method

    def solver(x0, *theta):
        def F(xh):
            x = _tensor_like(xh, shape, dtype, device)
            return _host(fun(x, *theta)).reshape(-1)

        def J(xh):
            x = _tensor_like(xh, shape, dtype, device)
            n = x.numel()
            return _host(jacrev(lambda x: fun(x, *theta))(x)).reshape(n, n)

        kw = dict(jac=J) if meth in _JAC_ROOT_METHODS else {}
        res = so.root(F, _host(x0).reshape(-1), method=method, tol=tol, callback=callback,
                      options=options, **kw)
        return _tensor_like(res.x, shape, dtype, device), res

    x, res = custom_root(fun, has_aux=True, solve="gmres",
                         _public=_public("root", "fun(x, *args) = 0"))(solver)(x0, *args)
    return _result(res, x)


def root_scalar(f, args=(), method=None, bracket=None, fprime=None, fprime2=None, x0=None,
                x1=None, xtol=None, rtol=None, maxiter=None, options=None):
    """Find a root of a scalar function ``f(x, *args)`` (``scipy.optimize.root_scalar``),
    with ``fprime``/``fprime2`` by ndgrad when a method needs them; the root is
    differentiable with respect to the tensors in ``args`` (``dx/dtheta = -f_theta / f_x``).

    Parameters
    ----------
    f : callable
        ``f(x, *args) -> 0-d Tensor`` for a 0-d tensor ``x``, written with ndgrad operations.
    args, method, bracket, x0, x1, xtol, rtol, maxiter, options
        As for ``scipy.optimize.root_scalar`` (anything but a tuple in ``args`` is one
        argument). ``fprime`` and ``fprime2``: None (ndgrad's
        derivatives are passed when the method is "newton" or "halley", or when only ``x0``
        is given), or SciPy's.

    Returns
    -------
    scipy.optimize.RootResults
        With ``root`` a 0-d Tensor, differentiable with respect to the tensors in ``args``;
        differentiating a root SciPy reports as unconverged warns if ``f(x) = 0`` holds to
        rounding level there and raises a RuntimeError quoting SciPy's flag if not.

    Examples
    --------
    >>> import ndgrad
    >>> from ndgrad.optimize import root_scalar
    >>> from ndgrad.func import grad
    >>> f = lambda x, a: x ** 3 - a
    >>> sol = root_scalar(f, args=(ndgrad.tensor(8.0),), bracket=(0.0, 5.0), xtol=1e-14)
    >>> sol.root
    tensor(2.)
    >>> grad(lambda a: root_scalar(f, args=(a,), bracket=(0.0, 5.0), xtol=1e-14).root)(
    ...     ndgrad.tensor(8.0))                              # 1 / (3 x^2)
    tensor(0.08333333)
    """
    import scipy.optimize as so
    args = _args(args, "root_scalar")
    meth = method.lower() if isinstance(method, str) else method
    start = asarray(float(x0) if x0 is not None else 0.0)
    device = start.device
    dtype = start.dtype

    def solver(_start, *theta):
        def scalar(x):
            return asarray(x, dtype=dtype, device=device)

        def F(x):
            return float(f(scalar(x), *theta).item())

        def d1(x):
            return float(grad(lambda x: f(x, *theta))(scalar(x)).item())

        def d2(x):
            return float(grad(grad(lambda x: f(x, *theta)))(scalar(x)).item())

        kw = dict(fprime=fprime, fprime2=fprime2)
        auto = meth in ("newton", "halley") or (meth is None and bracket is None and
                                                x0 is not None and x1 is None)
        if fprime is None and auto:
            kw["fprime"] = d1
        if fprime2 is None and meth == "halley":
            kw["fprime2"] = d2
        res = so.root_scalar(F, method=method, bracket=bracket, x0=x0, x1=x1, xtol=xtol,
                             rtol=rtol, maxiter=maxiter, options=options, **kw)
        return scalar(res.root), res

    x, res = custom_root(f, has_aux=True, solve="dense",
                         _public=_public("root_scalar", "f(x, *args) = 0"))(solver)(
        start, *args)
    res.root = x
    return res


def fixed_point(func, x0, args=(), xtol=1e-8, maxiter=500, method="del2"):
    """A fixed point ``x = func(x, *args)`` (``scipy.optimize.fixed_point``), differentiable
    with respect to the tensors in ``args`` by the implicit function theorem on
    ``func(x, *args) - x = 0`` (GMRES).

    SciPy raises a RuntimeError when it does not converge; so does this function. As in
    SciPy, ``args`` is unpacked into ``func(x, *args)`` (a tuple, or a list or array whose
    entries are the arguments).

    Examples
    --------
    >>> import ndgrad
    >>> from ndgrad.optimize import fixed_point
    >>> from ndgrad.func import grad
    >>> T = lambda x, a: ndgrad.sqrt(a + x)               # x = (1 + sqrt(1 + 4a)) / 2
    >>> fixed_point(T, ndgrad.tensor(1.0), args=(ndgrad.tensor(2.0),))
    tensor(2.)
    >>> grad(lambda a: fixed_point(T, ndgrad.tensor(1.0), args=(a,)))(ndgrad.tensor(2.0))
    tensor(0.33333333)
    """
    import scipy.optimize as so
    x0, shape, dtype, device = _start(x0)
    args = _args(args, "fixed_point", unpack=True)

    def solver(x0, *theta):
        def T(xh):
            x = _tensor_like(xh, shape, dtype, device)
            return _host(func(x, *theta)).reshape(np.shape(xh))

        x = so.fixed_point(T, _host(x0), xtol=xtol, maxiter=maxiter, method=method)
        return _tensor_like(x, shape, dtype, device)

    public = _public("fixed_point", "func(x, *args) - x = 0", result=False)
    return custom_fixed_point(func, solve="gmres", _public=public)(solver)(x0, *args)


def _rho(loss, z):
    """SciPy's robust loss ``rho(z)`` of ``z = (r / f_scale)**2``, with ndgrad operations."""
    if loss == "linear":
        return z
    if loss == "soft_l1":
        return 2.0 * (_ops.sqrt(1.0 + z) - 1.0)
    if loss == "huber":
        return _ops.where(z <= 1.0, z, 2.0 * _ops.sqrt(_ops.maximum(z, 1.0)) - 1.0)
    if loss == "cauchy":
        return _ops.log1p(z)
    if loss == "arctan":
        return _ops.arctan(z)
    raise ValueError(f"ndgrad.optimize.least_squares: loss must be one of 'linear', "
                     f"'soft_l1', 'huber', 'cauchy', 'arctan' (a callable loss has no "
                     f"ndgrad derivative), got {loss!r}")


def least_squares(fun, x0, jac="ndgrad", bounds=(-np.inf, np.inf), method="trf", ftol=1e-8,
                  xtol=1e-8, gtol=1e-8, x_scale=1.0, loss="linear", f_scale=1.0, *,
                  max_nfev=None, args=(), kwargs=None):
    """Nonlinear least squares ``min_x C(x) = ½ Σ f_scale² rho((r_i / f_scale)²)`` for the
    residuals ``r = fun(x, *args, **kwargs)`` (``scipy.optimize.least_squares``), with the
    Jacobian by ndgrad; the solution is differentiable with respect to the tensors in
    ``args``.

    Parameters
    ----------
    fun : callable
        ``fun(x, *args, **kwargs) -> Tensor`` of residuals (any shape; flattened), written
        with ndgrad operations.
    x0 : Tensor or array_like
        The starting point (not differentiated); the solution has its shape.
    jac : "ndgrad" or SciPy's ``jac``
        "ndgrad" (the default): the Jacobian of the residuals by ``jacrev``. Any other value
        is passed to SciPy (e.g. "2-point"); the derivative of the solution is ndgrad's in
        any case.
    bounds, method, ftol, xtol, gtol, x_scale, f_scale, max_nfev
        As for SciPy. From ``max_nfev`` on the parameters are keyword-only: SciPy has
        others before them (``diff_step``, ``tr_solver`` ...) that ndgrad does not take.
    loss : {"linear", "soft_l1", "huber", "cauchy", "arctan"}
        SciPy's named losses (a callable loss is not supported).
    args : tuple
        Further positional arguments of ``fun``: tensors (differentiated) and other values.
        As in SciPy, ``args`` is unpacked into ``fun(x, *args)``: a list or an array passes
        its entries as the arguments.
    kwargs : dict, optional
        Keyword arguments of ``fun`` (not differentiated).

    Returns
    -------
    scipy.optimize.OptimizeResult
        SciPy's result, with ``x`` a Tensor of ``x0``'s shape, differentiable with respect to
        the tensors in ``args`` by the implicit function theorem on ``grad_x C(x, *args) = 0``,
        whose Jacobian is the exact Hessian of the cost (``JᵀJ + Σ r_i ∇²r_i`` for the linear
        loss; the dense Hessian for up to 50 unknowns, conjugate gradients on
        Hessian-vector products above); it needs ``fun``'s second derivative. When SciPy
        reports a failure, differentiating it warns if ``grad_x C = 0`` holds to rounding
        level there and raises a RuntimeError (quoting SciPy's message and the residual)
        if not; it raises NotImplementedError when a bound is active at the solution.

    Examples
    --------
    An exponential decay ``a exp(-k t)`` fitted to data ``y``; the derivative of the fitted
    parameters with respect to the data:

    >>> import numpy as np
    >>> import ndgrad
    >>> from ndgrad.func import jacrev
    >>> from ndgrad.optimize import least_squares
    >>> t = ndgrad.tensor(np.linspace(0.0, 2.0, 6))
    >>> def residuals(p, y):
    ...     return p[0] * ndgrad.exp(-p[1] * t) - y
    >>> y = 3.0 * ndgrad.exp(-1.5 * t)
    >>> fit = lambda y: least_squares(residuals, [1.0, 1.0], args=(y,), xtol=1e-15,
    ...                               ftol=1e-15, gtol=1e-15).x
    >>> fit(y)
    tensor([3. , 1.5])
    >>> jacrev(fit)(y).shape                      # d(a, k) / dy
    (2, 6)
    """
    import scipy.optimize as so
    x0, shape, dtype, device = _start(x0)
    args = _args(args, "least_squares", unpack=True)
    kwargs = dict(kwargs or {})
    if callable(loss):
        _rho("callable", None)

    def residuals(x, theta):
        return fun(x, *theta, **kwargs).reshape(-1)

    def cost(x, *theta):
        r = residuals(x, theta)
        if loss == "linear":
            return 0.5 * (r * r).sum()
        z = (r / f_scale) ** 2
        return 0.5 * f_scale ** 2 * _rho(loss, z).sum()

    def solver(x0, *theta):
        def F(xh):
            return _host(residuals(_tensor_like(xh, shape, dtype, device), theta))

        def J(xh):
            x = _tensor_like(xh, shape, dtype, device)
            Jx = jacrev(lambda x: residuals(x, theta))(x)
            return _host(Jx).reshape(Jx.shape[0], -1)

        res = so.least_squares(F, _host(x0).reshape(-1), jac=J if jac == "ndgrad" else jac,
                               bounds=bounds, method=method, ftol=ftol, xtol=xtol, gtol=gtol,
                               x_scale=x_scale, loss=loss, f_scale=f_scale,
                               max_nfev=max_nfev)
        active = np.flatnonzero(np.asarray(res.active_mask))
        if active.size:
            res._ndgrad_error = NotImplementedError(
                f"ndgrad.optimize.least_squares: the bounds are active at the solution "
                f"(components {active.tolist()}); differentiating a solution with active "
                "bounds is not implemented (its optimality condition is not grad C = 0)")
        return _tensor_like(res.x, shape, dtype, device), res

    def optimality(x, *theta):
        return grad(lambda x: cost(x, *theta))(x)
    solve = "dense" if int(np.prod(shape, dtype=int)) <= 50 else "cg"
    public = _public(
        "least_squares", "grad_x C(x, *args) = 0 (J^T r = 0 for the linear loss)",
        "the derivative of the solution comes from grad_x C(x, *args) = 0 (J^T r = 0 for the "
        "linear loss), whose Jacobian J^T J + sum_i r_i Hess(r_i) needs the derivative of "
        "the residuals' Jacobian J, so it needs fun's second derivative: "
        + _SECOND_ORDER_HINT)
    x, res = custom_root(optimality, has_aux=True, solve=solve, _public=public)(solver)(
        x0, *args)
    return _result(res, x)
