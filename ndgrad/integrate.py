"""``ndgrad.integrate``: SciPy's ``solve_ivp`` and ``quad`` for functions written with ndgrad
operations, their results differentiable with respect to the initial state, the tensors in
``args`` and the evaluation times or limits.

SciPy integrates on host arrays, with ndgrad evaluating the integrand (grad mode off) and
supplying the Jacobian ``jac`` to the implicit methods (BDF, Radau, LSODA). No derivative
goes through SciPy's steps: the derivatives come from the sensitivity equations, solved by
SciPy too (Note [ODE sensitivities]), so the solver's tolerances govern their accuracy.

Note [ODE sensitivities]
~~~~~~~~~~~~~~~~~~~~~~~~
``y' = f(t, y, θ)``, ``y(t0) = y0``, observed at ``t_1 .. t_m``; ``g_k`` is the cotangent of
``y(t_k)``.

* Adjoint (reverse mode, ``sensitivity="adjoint"``): from the last ``t_k`` back to ``t0``,
  ``a' = -aᵀ ∂f/∂y`` (vector-Jacobian products of ``f`` by reverse-mode autodiff on plain
  tensors), with ``g_k`` added to ``a`` on passing ``t_k``; then ``dL/dy0 = a(t0)``,
  ``dL/dθ = ∫_{t0}^{tf} aᵀ ∂f/∂θ dt`` and ``dL/dt_k = g_k · f(t_k, y(t_k))``. The state
  ``y(t)`` the products need is the forward solve's dense output (SciPy's interpolant),
  not a backward re-integration of ``y``: integrating ``y`` backward is unstable for stiff,
  dissipative systems, while the interpolant is as accurate as the forward solve.
  The θ integral is a quadrature, not part of the stiff backward system (which would make
  that system ``n + p`` wide, its Newton matrices ``(n + p)²``, and let the integral's error
  estimate choose the steps): Gauss–Legendre on every step of both solves, the integrand
  at all nodes in one vectorized evaluation of ``f`` (``vmap``; a loop when ``f`` cannot
  be vectorized). On benchmarks/bench_scipy.py (100 stiff states, 100 rates) this took the
  gradient from 6.2 to about 3.8 times the forward solve. One backward solve per cotangent
  (``jacrev`` runs one per output row).
* Forward (``sensitivity="forward"``): ``S = ∂y/∂(y0, θ)`` (n × (n + p)) integrated with
  ``y``: ``S' = ∂f/∂y S + [0, ∂f/∂θ]``, ``S(t0) = [I, 0]`` (Jacobians by ``jacfwd``). Forward
  mode is ``S_k (dy0, dθ) + f_k dt_k``, reverse mode ``S_kᵀ g_k``; one solve serves every
  direction. ``jvp`` uses these in both modes.

The backward passes run on host arrays inside a Function with no derivative of its own, so
they vectorize under ``vmap`` (``jacrev``) by a loop and second derivatives raise
NotImplementedError instead of being silently wrong. ``quad`` is the same with
``∫ ∂f/∂θ dx`` (``scipy.integrate.quad_vec``) and Leibniz's rule for the limits.

SciPy is imported on first use (``import ndgrad`` loads no SciPy); tensors on a GPU are
copied to the host and back at each evaluation.
"""

from __future__ import annotations

import functools
import warnings

import numpy as np

from .core.backend import is_differentiable_dtype
from .core.creation import asarray
from .core.function import Function
from .core.ops import PUBLIC as _PUBLIC
from .autograd import grad as autograd_grad
from .core.grad_mode import enable_grad, no_grad
from .core.tensor import Tensor, host_array as _host
from .functional.custom import custom_vjp
from .functional.pytree import tree_flatten, tree_unflatten
from .functional.transforms import jacfwd, vjp
from .functional.vmap import vmap

__all__ = ["solve_ivp", "quad"]

stack, concatenate = _PUBLIC["stack"], _PUBLIC["concatenate"]

_SENSITIVITIES = ("adjoint", "forward")
_IMPLICIT = ("BDF", "Radau", "LSODA")
_HIGHER = ("second derivatives through ndgrad.integrate.{} are not implemented (its "
           "backward and forward rules solve the sensitivity equations on host arrays)")


def _plain(values):
    return all(type(v) is Tensor and not v.requires_grad for v in values
               if isinstance(v, Tensor))


class _HostRule(Function):
    """A first-order rule computed on host arrays: ``forward(ctx, rule, *tensors)`` returns
    ``rule(*tensors)``; differentiating it raises (Note [ODE sensitivities])."""

    @staticmethod
    def forward(ctx, rule, *tensors):
        ctx.who = rule.who
        with no_grad():
            return tuple(rule(*tensors))

    @staticmethod
    def backward(ctx, *grads):
        raise NotImplementedError(_HIGHER.format(ctx.who))

    @staticmethod
    def jvp(ctx, *tangents):
        raise NotImplementedError(_HIGHER.format(ctx.who))


class _Rule:
    def __init__(self, fn, who):
        self.fn, self.who = fn, who

    def __call__(self, *tensors):
        return self.fn(*tensors)


def _apply_host_rule(who, fn, *tensors):
    with warnings.catch_warnings():  # (under vmap it loops by design: one solve per row)
        warnings.filterwarnings("ignore", message="vmap: the custom Function _HostRule")
        out = _HostRule.apply(_Rule(fn, who), *tensors)
    return (out,) if isinstance(out, Tensor) else tuple(out)


class _Problem:
    """The integrand and its derivatives on host arrays, for one call of solve_ivp."""

    def __init__(self, fun, args, dtype, device):
        self.fun, self.dtype, self.device = fun, dtype, device
        leaves, self.spec = tree_flatten(tuple(args))
        self.leaves = leaves
        self.diff = [k for k, x in enumerate(leaves)
                     if isinstance(x, Tensor) and is_differentiable_dtype(x.dtype)]
        self.tensor_idx = [k for k, x in enumerate(leaves) if isinstance(x, Tensor)]

    def args(self, tensors):
        """``args`` with its tensor leaves replaced by ``tensors`` (in leaf order)."""
        leaves = list(self.leaves)
        for k, t in zip(self.tensor_idx, tensors):
            leaves[k] = t
        return tree_unflatten(self.spec, leaves)

    def t(self, t):
        return asarray(float(t), dtype=self.dtype, device=self.device)

    def y(self, yh):
        return asarray(np.asarray(yh, dtype=self.dtype), device=self.device)

    def theta(self, tensors):
        """The differentiable tensors among ``tensors`` (the tensor leaves of args)."""
        pos = {k: i for i, k in enumerate(self.tensor_idx)}
        return [tensors[pos[k]] for k in self.diff]

    def with_theta(self, tensors, theta):
        full = list(tensors)
        pos = {k: i for i, k in enumerate(self.tensor_idx)}
        for k, th in zip(self.diff, theta):
            full[pos[k]] = th
        return self.args(full)

    def f(self, tensors):
        args = self.args(tensors)

        def f(t, yh):
            with no_grad():
                return _host(self.fun(self.t(t), self.y(yh), *args)).reshape(-1)
        return f

    def jac_y(self, tensors):
        args = self.args(tensors)

        def jac(t, yh):
            tt = self.t(t)
            return _host(jacfwd(lambda y: self.fun(tt, y, *args))(self.y(yh)))
        return jac

    def jacobians(self, t, yh, tensors):
        """``(∂f/∂y, ∂f/∂θ)`` at ``(t, y)``, the second (n, p) over the flattened θ."""
        theta = self.theta(tensors)
        tt, y = self.t(t), self.y(yh)
        n = y.shape[0]

        def g(y, *th):
            return self.fun(tt, y, *self.with_theta(tensors, th))
        J = jacfwd(g, argnums=tuple(range(1 + len(theta))))(y, *theta)
        Jy = _host(J[0]).reshape(n, n)
        Jth = [_host(j).reshape(n, -1) for j in J[1:]]
        return Jy, (np.concatenate(Jth, axis=1) if Jth else np.zeros((n, 0)))


_GAUSS_NODES = 3   # per step: exact for degree 5, so the error is the interpolants' (whose
                   # order is at most 5), not the rule's


def _dense_at(sol, times):
    """``sol(times).T`` for a ``scipy.integrate.OdeSolution``, one call per step that holds
    some of the times (``OdeSolution.__call__`` masks the whole array once per step)."""
    ts, pieces = sol.ts, sol.interpolants
    if ts[-1] < ts[0]:
        ts, pieces = ts[::-1], pieces[::-1]
    order = np.argsort(times, kind="stable")
    sorted_t = times[order]
    seg = np.clip(np.searchsorted(ts, sorted_t, side="right") - 1, 0, len(pieces) - 1)
    starts = np.concatenate([[0], np.flatnonzero(np.diff(seg)) + 1, [len(seg)]])
    out = None
    for lo, hi in zip(starts[:-1], starts[1:]):
        vals = np.asarray(pieces[seg[lo]](sorted_t[lo:hi])).reshape(-1, hi - lo).T
        if out is None:
            out = np.empty((len(times), vals.shape[1]))
        out[order[lo:hi]] = vals
    return out


def _parameter_quadrature(prob, tensors, y_of, pieces):
    """``∫ aᵀ ∂f/∂θ dt`` over the adjoint's pieces (Note [ODE sensitivities]), flattened θ.

    Gauss–Legendre on every step of the forward and the backward solve (both dense outputs
    are piecewise polynomials), the integrand evaluated at all nodes at once: the gradient in
    θ of ``Σ_i w_i a(t_i) · f(t_i, y(t_i), θ)`` with ``f`` vectorized by ``vmap``.
    """
    x, w = np.polynomial.legendre.leggauss(_GAUSS_NODES)
    T, W, A = [], [], []
    for lo, hi, a_of in pieces:
        span = sorted((lo, hi))
        cuts = np.concatenate([[lo, hi], y_of.ts, a_of.ts])
        cuts = np.unique(cuts[(cuts >= span[0]) & (cuts <= span[1])])
        left, width = cuts[:-1], np.diff(cuts)
        nodes = (left[:, None] + (x + 1) / 2 * width[:, None]).reshape(-1)
        weights = (w / 2 * width[:, None]).reshape(-1) * (1.0 if hi >= lo else -1.0)
        T.append(nodes)
        W.append(weights)
        A.append(_dense_at(a_of, nodes))
    T, W, A = np.concatenate(T), np.concatenate(W), np.concatenate(A)
    Y = _dense_at(y_of, T)
    theta = [th.detach().requires_grad_() for th in prob.theta(tensors)]
    args = prob.with_theta(tensors, theta)
    rows = max(1, int(4e6 // max(1, Y.shape[1])))   # (bounds the batch's memory)
    total = np.zeros(sum(th.numel() for th in theta))
    for s in range(0, len(T), rows):
        t, y = prob.y(T[s:s + rows]), prob.y(Y[s:s + rows])
        aw = prob.y(A[s:s + rows] * W[s:s + rows, None])
        with enable_grad():
            try:
                F = vmap(lambda t, y: prob.fun(t, y, *args))(t, y)
            except Exception:   # fun cannot be vectorized (it branches on values...): a loop
                F = stack([prob.fun(t[i], y[i], *args).reshape(-1) for i in range(len(t))])
            out = (aw * F.reshape(aw.shape)).sum()
        if not out.requires_grad:           # f does not depend on θ
            continue
        cts = autograd_grad(out, theta, allow_unused=True, materialize_grads=True)
        total += np.concatenate([_host(c).reshape(-1) for c in cts])
    return total


def _check(res, who):
    if not res.success:
        raise RuntimeError(f"ndgrad.integrate.{who}: cannot differentiate the solution: SciPy's "
                           f"integration failed. SciPy's message: {res.message}")


def _atol_scalar(atol):
    a = np.asarray(atol, dtype=float)
    return float(a.min()) if a.ndim else float(a)


def solve_ivp(fun, t_span, y0, method="RK45", t_eval=None, args=(), rtol=1e-3, atol=1e-6,
              sensitivity="adjoint", **options):
    """Solve an initial value problem (``scipy.integrate.solve_ivp``) for a right-hand side
    written with ndgrad operations; the solution is differentiable with respect to ``y0``,
    the tensors in ``args`` and ``t_eval``.

    Parameters
    ----------
    fun : callable
        ``fun(t, y, *args) -> Tensor`` of ``y``'s shape: ``t`` a 0-d tensor, ``y`` a 1-D tensor.
    t_span : pair of float
        ``(t0, tf)`` (not differentiated).
    y0 : Tensor or array_like
        The 1-D initial state.
    method : str
        As SciPy's; the implicit methods "BDF", "Radau" and "LSODA" get ndgrad's Jacobian
        ``∂f/∂y`` (by ``jacfwd``) as ``jac``.
    t_eval : Tensor or array_like, optional
        The times of the output (SciPy's own steps when None); a tensor is differentiated
        (``dy(t_k)/dt_k = f(t_k, y(t_k))``).
    args : tuple
        Further arguments of ``fun``: tensors (pytrees of them) are differentiated.
    rtol, atol : float
        SciPy's tolerances, used by the sensitivity solves too: they govern the accuracy of
        the derivatives as well as of the solution (tighten them for accurate gradients).
    sensitivity : {"adjoint", "forward"}
        How reverse mode is computed: the continuous adjoint (one backward solve of size
        ``n`` and a quadrature per cotangent; best for a scalar loss of many parameters) or
        the forward
        sensitivity equations (one solve of size ``n (1 + n + p)``, serving every cotangent;
        small problems, full Jacobians). Forward mode (``jvp``, ``jacfwd``) uses forward
        sensitivities in both cases (Note [ODE sensitivities]).
    **options
        Passed to SciPy's ``solve_ivp`` (``first_step``, ``max_step``, ``dense_output`` ...).

    Returns
    -------
    scipy.integrate._ivp.ivp.OdeResult
        SciPy's result, with ``y`` (shape ``(n, len(t))``) a Tensor differentiable by
        ``.backward()``, ``func.grad``, ``vjp``, ``jacrev``, ``jvp``, ``jacfwd``. First
        derivatives only: second derivatives raise NotImplementedError. Differentiating a
        failed integration (``success`` False) raises a RuntimeError quoting SciPy's message.

    Examples
    --------
    ``y' = -k y``: ``y(t) = y0 exp(-k t)``, so ``dy(t)/dk = -t y(t)``:

    >>> import numpy as np
    >>> import ndgrad
    >>> from ndgrad.integrate import solve_ivp
    >>> k = ndgrad.tensor(0.5, requires_grad=True)
    >>> sol = solve_ivp(lambda t, y, k: -k * y, (0.0, 2.0), ndgrad.tensor([1.0]),
    ...                 t_eval=[1.0, 2.0], args=(k,), rtol=1e-10, atol=1e-12)
    >>> sol.y.sum().backward()
    >>> expected = -(1.0 * np.exp(-0.5) + 2.0 * np.exp(-1.0))
    >>> bool(abs(k.grad.item() - expected) < 1e-8)
    True
    """
    if sensitivity not in _SENSITIVITIES:
        raise ValueError(f"ndgrad.integrate.solve_ivp: sensitivity must be one of "
                         f"{_SENSITIVITIES}, got {sensitivity!r}")
    y0 = y0 if isinstance(y0, Tensor) else asarray(np.asarray(y0, dtype=float))
    if y0.dtype.kind != "f":
        y0 = y0.astype("float64")
    if y0.ndim != 1:
        raise ValueError(f"ndgrad.integrate.solve_ivp: y0 must be 1-D, got shape "
                         f"{tuple(y0.shape)}")
    dtype, device = y0.dtype, y0.device
    t0, tf = float(t_span[0]), float(t_span[1])
    t_ev = t_eval if isinstance(t_eval, Tensor) else None
    t_eval_h = None if t_eval is None else (
        _host(t_eval) if t_ev is not None else np.asarray(t_eval, dtype=float))
    prob = _Problem(fun, args, dtype, device)
    tensors0 = tuple(prob.leaves[k] for k in prob.tensor_idx)
    meth = method if isinstance(method, str) else getattr(method, "__name__", "")
    implicit = meth in _IMPLICIT
    state = {}

    def scipy_solve(f, z0, jac, atol, times=t_eval_h, **kw):
        import scipy.integrate as si
        if implicit and "jac" not in options:
            kw["jac"] = jac
        return si.solve_ivp(f, (t0, tf), z0, method=method, t_eval=times, rtol=rtol,
                            atol=atol, **{**options, **kw})

    def forward_plain(y0, tensors):
        """The primal solve (dense output kept for the adjoint)."""
        res = scipy_solve(prob.f(tensors), _host(y0).reshape(-1), prob.jac_y(tensors),
                          atol, dense_output=sensitivity == "adjoint" or
                          bool(options.get("dense_output")))
        state["res"] = res
        return prob.y(res.y)

    def sensitivities(y0, tensors, res):
        """``(S, F)`` on host: S (m, n, n + p) and F = f(t_k, y_k) (n, m), cached by value."""
        # (at the primal's times: with t_eval None, SciPy's own steps)
        times = t_eval_h if t_eval_h is not None else res.t
        key = [_host(y0), np.asarray(times)] + [_host(t) for t in tensors]
        cached = state.get("sens")
        if cached is not None and len(cached[0]) == len(key) and all(
                a.shape == b.shape and np.array_equal(a, b) for a, b in zip(cached[0], key)):
            return cached[1]
        n = y0.shape[0]
        theta = prob.theta(tensors)
        p = sum(th.numel() for th in theta)
        q = n + p
        f = prob.f(tensors)

        def rhs(t, z):
            y, S = z[:n], z[n:].reshape(n, q)
            Jy, Jth = prob.jacobians(t, y, tensors)
            dS = Jy @ S
            dS[:, n:] += Jth
            return np.concatenate([f(t, y), dS.reshape(-1)])

        def jac(t, z):
            import scipy.sparse as sp
            Jy, _ = prob.jacobians(t, z[:n], tensors)
            return sp.block_diag([Jy, sp.kron(Jy, sp.identity(q))], format="csc")

        S0 = np.concatenate([np.eye(n), np.zeros((n, p))], axis=1)
        z0 = np.concatenate([key[0].reshape(-1), S0.reshape(-1)])
        res = scipy_solve(rhs, z0, jac, _atol_scalar(atol), times=times)
        _check(res, "solve_ivp")
        m = res.t.shape[0]
        S = res.y[n:].T.reshape(m, n, q)
        F = np.stack([f(t, res.y[:n, k]) for k, t in enumerate(res.t)], axis=1) if m else \
            np.zeros((n, 0))
        state["sens"] = (key, (S, F))
        return S, F

    def split(ct_flat, y0, tensors):
        """Cotangents of (y0, tensors) from a flat host vector over (y0, θ)."""
        n = y0.shape[0]
        out_y0 = prob.y(ct_flat[:n])
        theta = prob.theta(tensors)
        cts, off = [], n
        for th in theta:
            k = th.numel()
            cts.append(asarray(np.asarray(ct_flat[off:off + k], dtype=th.dtype)
                               .reshape(tuple(th.shape)), device=th.device))
            off += k
        return out_y0, cts

    def adjoint(y0, tensors, g, res):
        _check(res, "solve_ivp")
        n = y0.shape[0]
        theta = prob.theta(tensors)
        p = sum(th.numel() for th in theta)
        gh = _host(g).reshape(n, -1)
        ts, ys = res.t, res.y
        f = prob.f(tensors)
        jac_y = prob.jac_y(tensors)

        plain_args = prob.args([x.detach() for x in tensors])

        last = [None, None, None]   # (t, y, f(t, y)): the graph at the last t, kept

        def rhs(t, a):   # a' = -aᵀ ∂f/∂y
            # (on plain tensors, below any transform, with y the only leaf: recorded and run
            # back by the engine into y.grad, about twice as fast as func.vjp's level. The
            # implicit methods' Newton iterations call rhs again at the same t: the graph
            # recorded there is run again, which saves a third of the backward solve.)
            if last[0] != t:
                y = prob.y(res.sol(t)).requires_grad_()
                with enable_grad():
                    last[:] = t, y, prob.fun(prob.t(t), y, *plain_args)
            _, y, out = last
            if not out.requires_grad:        # f does not depend on y
                return np.zeros(n)
            ct = prob.y(a)
            y.grad = None
            out.backward(ct if out.shape == ct.shape else ct.reshape(tuple(out.shape)),
                         retain_graph=True)
            return -_host(y.grad).reshape(-1)

        def jac(t, a):
            return -jac_y(t, res.sol(t)).T

        import scipy.integrate as si
        a = np.zeros(n)
        t_ct = np.zeros(ts.shape[0])
        pieces = []                  # (from, to, a's dense output) from the last t_k back
        for k in range(len(ts) - 1, -1, -1):
            t_ct[k] = gh[:, k] @ f(ts[k], ys[:, k])
            a = a + gh[:, k]
            ta, tb = ts[k], ts[k - 1] if k > 0 else t0
            if ta != tb:
                kw = dict(jac=jac) if implicit else {}
                back = si.solve_ivp(rhs, (ta, tb), a, method=method, rtol=rtol,
                                    atol=_atol_scalar(atol), dense_output=p > 0, **kw)
                if not back.success:
                    raise RuntimeError("ndgrad.integrate.solve_ivp: the adjoint (backward) "
                                       f"integration failed. SciPy's message: {back.message}")
                pieces.append((tb, ta, back.sol))
                a = back.y[:, -1]
        q = _parameter_quadrature(prob, tensors, res.sol, pieces) if p else np.zeros(0)
        return np.concatenate([a, q]), t_ct

    def host_cotangents(y0, t_e, tensors, g, use_adjoint, res):
        if use_adjoint:
            flat, t_ct = adjoint(y0, tensors, g, res)
        else:
            S, F = sensitivities(y0, tensors, res)
            gh = _host(g).reshape(y0.shape[0], -1)
            flat = np.einsum("knq,nk->q", S, gh)
            t_ct = (gh * F).sum(axis=0)
        ct_y0, ct_th = split(flat, y0, tensors)
        out = [ct_y0] + ct_th
        if t_e is not None:
            out.append(asarray(t_ct.astype(t_e.dtype).reshape(tuple(t_e.shape)),
                               device=t_e.device))
        return out

    @functools.partial(custom_vjp, vmap_method="sequential")  # (SciPy on host arrays)
    def solve(y0, t_e, tensors):
        return forward_plain(y0, tensors)

    def fwd(y0, t_e, tensors):
        if _plain([y0, t_e, *tensors]) or "res" not in state:
            y = forward_plain(y0.detach(), tuple(t.detach() for t in tensors))
        else:  # recomputed for a higher derivative: the values are those of the first call
            y = prob.y(state["res"].y)
        # (SciPy's result travels with the residuals: under vmap every batch element has
        # its own)
        return y, (y0, t_e, tensors, state["res"])

    def bwd(residuals, g):
        y0, t_e, tensors, res = residuals
        use_adjoint = sensitivity == "adjoint"
        has_t = t_e is not None

        def rule(g, y0, *rest):  # (the Function's inputs, lowered below any level)
            t_e = rest[0] if has_t else None
            return host_cotangents(y0, t_e, tuple(rest[1:] if has_t else rest), g,
                                   use_adjoint, res)
        outs = _apply_host_rule("solve_ivp", rule, g,
                                *(x for x in (y0, t_e, *tensors) if x is not None))
        ct_y0, rest = outs[0], list(outs[1:])
        pos = {k: i for i, k in enumerate(prob.tensor_idx)}
        theta_pos = [pos[k] for k in prob.diff]
        cts = [None] * len(tensors)
        for i, c in zip(theta_pos, rest[:len(theta_pos)]):
            cts[i] = c
        ct_t = rest[len(theta_pos)] if t_e is not None else None
        return ct_y0, ct_t, tuple(cts)

    def jvp_rule(primals, tangents):
        y0, t_e, tensors = primals
        dy0, dt, dtensors = tangents
        if not _plain([y0, t_e, *tensors]):
            raise NotImplementedError(_HIGHER.format("solve_ivp"))
        S, F = sensitivities(y0, tensors, state["res"])
        pos = {k: i for i, k in enumerate(prob.tensor_idx)}
        dth = [dtensors[pos[k]].reshape(-1) for k in prob.diff]
        d = concatenate([dy0.reshape(-1)] + dth) if dth else dy0.reshape(-1)
        St = asarray(S.astype(dtype), device=device)
        dy = (St @ d).T
        if t_e is not None and dt is not None:
            dy = dy + prob.y(F) * dt.reshape(-1)
        return None, dy

    solve.defvjp(fwd, bwd)
    solve.defjvp(jvp_rule)
    y = solve(y0, t_ev, tensors0)
    res = state["res"]
    out = type(res)(res)
    out.y = y
    if not options.get("dense_output"):
        out.sol = None
    return out


def quad(func, a, b, args=(), **options):
    """Integrate a scalar function of one variable (``scipy.integrate.quad``), written with
    ndgrad operations; the value is differentiable with respect to the limits and the tensors
    in ``args``.

    ``d/dθ ∫ f = ∫ ∂f/∂θ`` (computed by ``scipy.integrate.quad_vec`` with ndgrad's gradient
    of ``func``), ``d/db = f(b)``, ``d/da = -f(a)`` (zero at an infinite limit). The
    quadrature's tolerances (``epsabs``, ``epsrel`` in ``options``) govern the derivative's
    accuracy too. First derivatives only: second derivatives raise NotImplementedError.

    Parameters
    ----------
    func : callable
        ``func(x, *args) -> 0-d Tensor`` for a 0-d tensor ``x``.
    a, b : float or 0-d Tensor
        The limits (may be infinite); tensors are differentiated.
    args : tuple
        Further arguments of ``func``; tensors (pytrees of them) are differentiated.
    **options
        Passed to ``scipy.integrate.quad`` (``epsabs``, ``epsrel``, ``limit``, ``points`` ...).

    Returns
    -------
    (Tensor, float)
        The integral as a 0-d tensor, and SciPy's estimate of its absolute error.

    Examples
    --------
    >>> import numpy as np
    >>> import ndgrad
    >>> from ndgrad.integrate import quad
    >>> from ndgrad.func import grad
    >>> f = lambda x, s: ndgrad.exp(-s * x)
    >>> value, err = quad(f, 0.0, 1.0, args=(ndgrad.tensor(2.0),))
    >>> bool(abs(value.item() - (1 - np.exp(-2.0)) / 2) < 1e-12)
    True
    >>> grad(lambda b: quad(f, 0.0, b, args=(ndgrad.tensor(2.0),))[0])(ndgrad.tensor(1.0))
    tensor(0.13533528)
    """
    import scipy.integrate as si
    leaves, spec = tree_flatten(tuple(args))
    tensor_idx = [k for k, x in enumerate(leaves) if isinstance(x, Tensor)]
    diff = [k for k in tensor_idx if is_differentiable_dtype(leaves[k].dtype)]
    tensors0 = tuple(leaves[k] for k in tensor_idx)
    ref = next((x for x in (a, b, *tensors0) if isinstance(x, Tensor)), None)
    dtype = ref.dtype if ref is not None and ref.dtype.kind == "f" else np.dtype("float64")
    device = ref.device if ref is not None else None
    state = {}

    def scalar(x):
        return asarray(float(x), dtype=dtype, device=device)

    def build(tensors):
        full = list(leaves)
        for k, t in zip(tensor_idx, tensors):
            full[k] = t
        return tree_unflatten(spec, full)

    def lim(x):
        return float(x.detach().cpu().numpy()) if isinstance(x, Tensor) else float(x)

    def integrate(a, b, tensors):
        args = build([t.detach() for t in tensors])

        def f(x):
            with no_grad():
                return float(func(scalar(x), *args).item())
        value, err = si.quad(f, lim(a), lim(b), **options)
        state["err"] = err
        return scalar(value)

    @functools.partial(custom_vjp, vmap_method="sequential")  # (SciPy on host arrays)
    def q(a, b, tensors):
        return integrate(a, b, tensors)

    def fwd(a, b, tensors):
        return integrate(a, b, tensors), (a, b, tensors)

    def rules(a, b, tensors):
        """``(f(a), f(b), [∫ ∂f/∂θ_i])`` on host (numbers and arrays)."""
        plain = [t.detach() for t in tensors]
        args = build(plain)
        pos = {k: i for i, k in enumerate(tensor_idx)}
        theta = [plain[pos[k]] for k in diff]
        ends = []
        for x in (a, b):
            x = lim(x)
            with no_grad():
                ends.append(float(func(scalar(x), *args).item()) if np.isfinite(x) else 0.0)
        grads = []
        if theta:
            def g(x):
                def h(*th):
                    full = list(plain)
                    for k, t in zip(diff, th):
                        full[pos[k]] = t
                    return func(scalar(x), *build(full))
                _, vjp_fn = vjp(h, *theta)
                cts = vjp_fn(asarray(1.0, dtype=dtype, device=device))
                return np.concatenate([_host(c).reshape(-1) for c in cts])
            kw = {k: options[k] for k in ("epsabs", "epsrel", "points") if k in options}
            total, _ = si.quad_vec(g, lim(a), lim(b), **kw)
            off = 0
            for th in theta:
                k = th.numel()
                grads.append(np.asarray(total[off:off + k]).reshape(tuple(th.shape)))
                off += k
        return ends, grads

    def bwd(residuals, g):
        a, b, tensors = residuals

        ka, kb = isinstance(a, Tensor), isinstance(b, Tensor)

        def host_rule(g, *inputs):  # (the Function's inputs, lowered below any level)
            it = iter(inputs)
            a_, b_ = next(it) if ka else a, next(it) if kb else b
            tensors_ = tuple(it)
            ends, grads = rules(a_, b_, tensors_)
            gh = float(_host(g))
            out = [scalar(-gh * ends[0]), scalar(gh * ends[1])]
            pos = {k: i for i, k in enumerate(tensor_idx)}
            for k, gr in zip(diff, grads):
                th = tensors_[pos[k]]
                out.append(asarray((gh * gr).astype(th.dtype), device=th.device))
            return out
        inputs = [x for x in (a, b, *tensors) if isinstance(x, Tensor)]
        outs = _apply_host_rule("quad", host_rule, g, *inputs)
        pos = {k: i for i, k in enumerate(tensor_idx)}
        cts = [None] * len(tensors)
        for k, c in zip(diff, outs[2:]):
            cts[pos[k]] = c
        return (outs[0] if isinstance(a, Tensor) else None,
                outs[1] if isinstance(b, Tensor) else None, tuple(cts))

    def jvp_rule(primals, tangents):
        a, b, tensors = primals
        da, db, dts = tangents
        if not _plain([x for x in (a, b, *tensors) if isinstance(x, Tensor)]):
            raise NotImplementedError(_HIGHER.format("quad"))
        ends, grads = rules(a, b, tensors)
        out = integrate(a, b, tensors)
        dv = scalar(0.0)
        if isinstance(a, Tensor):
            dv = dv - ends[0] * da
        if isinstance(b, Tensor):
            dv = dv + ends[1] * db
        pos = {k: i for i, k in enumerate(tensor_idx)}
        for k, gr in zip(diff, grads):
            th = tensors[pos[k]]
            dv = dv + (asarray(gr.astype(th.dtype), device=th.device) * dts[pos[k]]).sum()
        return out, dv

    q.defvjp(fwd, bwd)
    q.defjvp(jvp_rule)
    value = q(a, b, tensors0)
    return value, state["err"]
