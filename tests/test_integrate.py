"""ndgrad.integrate: SciPy's solve_ivp and quad with ndgrad's integrands, differentiable by the
adjoint and forward sensitivity equations.

References: closed forms (exponential decay, the matrix exponential of a stiff linear
system, erf), central finite differences of SciPy solves at tight tolerances, and
ndgrad.checks.gradcheck.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import ndgrad as nd
from ndgrad.checks import gradcheck
from ndgrad.func import grad, jacfwd, jacrev, jvp, vmap
from ndgrad.integrate import odeint, quad, solve_ivp
from support import close, fd_derivative, host

TIGHT = dict(rtol=1e-10, atol=1e-12)
DEVICE_PATHS = "the device paths are covered by the decay, failure and quad tests"
T_EVAL = [0.3, 1.0, 1.7, 2.5]


pytestmark = pytest.mark.filterwarnings("ignore:vmap. ndgrad.integrate:UserWarning")


def decay(t, y, k):
    return -k * y


@pytest.mark.parametrize("sensitivity", ["adjoint", "forward"])
def test_decay_sensitivities_against_the_closed_form(sensitivity):
    k0, y00 = 0.8, np.array([1.5, -0.5])
    T = np.array(T_EVAL)

    def y_of(y0, k):
        return solve_ivp(decay, (0.0, 3.0), y0, method="DOP853", t_eval=T_EVAL, args=(k,),
                         sensitivity=sensitivity, **TIGHT).y
    y0, k = nd.tensor(y00), nd.tensor(k0)
    close(y_of(y0, k), y00[:, None] * np.exp(-k0 * T), rtol=1e-9, atol=1e-12)
    dk = -T * y00[:, None] * np.exp(-k0 * T)                         # (2, 4)
    dy0 = np.einsum("ij,t->itj", np.eye(2), np.exp(-k0 * T))       # (2, 4, 2)
    close(jacrev(y_of, argnums=1)(y0, k), dk, rtol=1e-8, atol=1e-10)
    close(jacrev(y_of, argnums=0)(y0, k), dy0, rtol=1e-8, atol=1e-10)
    close(jvp(lambda k: y_of(y0, k), (k,), (nd.tensor(1.0),))[1], dk, rtol=1e-8, atol=1e-10)
    close(jacfwd(y_of, argnums=0)(y0, k), dy0, rtol=1e-8, atol=1e-10)
    kr, y0r = nd.tensor(k0, requires_grad=True), nd.tensor(y00, requires_grad=True)
    res = solve_ivp(decay, (0.0, 3.0), y0r, t_eval=T_EVAL, args=(kr,),
                    sensitivity=sensitivity, **TIGHT)
    assert res.success and res.t.shape == (4,) and tuple(res.y.shape) == (2, 4)
    res.y.sum().backward()
    close(kr.grad, dk.sum(), rtol=1e-8)
    close(y0r.grad, np.exp(-k0 * T).sum() * np.ones(2), rtol=1e-8)


@pytest.mark.cpu_only(DEVICE_PATHS)
@pytest.mark.parametrize("sensitivity", ["adjoint", "forward"])
def test_derivative_in_t_eval_is_the_right_hand_side(sensitivity):
    t = nd.tensor(T_EVAL)
    g = grad(lambda t: solve_ivp(decay, (0.0, 3.0), nd.tensor([2.0]), t_eval=t,
                                 args=(nd.tensor(0.5),), sensitivity=sensitivity,
                                 **TIGHT).y.sum())(t)
    close(g, -0.5 * 2.0 * np.exp(-0.5 * np.array(T_EVAL)), rtol=1e-8)


def lotka_volterra(t, y, rates):
    a, b, c, d = rates[0], rates[1], rates[2], rates[3]
    return nd.stack([a * y[0] - b * y[0] * y[1], d * y[0] * y[1] - c * y[1]])


def _lv_loss(y0, rates, sensitivity="adjoint"):
    y = solve_ivp(lotka_volterra, (0.0, 4.0), y0, method="DOP853", t_eval=[1.0, 2.5, 4.0],
                  args=(rates,),
                  sensitivity=sensitivity, **TIGHT).y
    return (y * y).sum() + y[0].sum()


@pytest.mark.cpu_only("finite differences of many SciPy solves: the values, once")
def test_lotka_volterra_adjoint_and_forward_match_finite_differences():
    y0, rates = np.array([1.0, 0.5]), np.array([1.1, 0.4, 0.9, 0.3])
    ga = grad(_lv_loss, argnums=(0, 1))(nd.tensor(y0), nd.tensor(rates))
    gf = grad(lambda y, r: _lv_loss(y, r, "forward"), argnums=(0, 1))(nd.tensor(y0),
                                                                      nd.tensor(rates))
    x = np.concatenate([y0, rates])
    eps = 1e-5
    fd = np.array([(_lv_loss(nd.tensor((x + e)[:2]), nd.tensor((x + e)[2:])).item()
                    - _lv_loss(nd.tensor((x - e)[:2]), nd.tensor((x - e)[2:])).item())
                   / (2 * eps) for e in eps * np.eye(6)])
    adj = np.concatenate([host(ga[0]), host(ga[1])])
    fwd = np.concatenate([host(gf[0]), host(gf[1])])
    close(adj, fwd, rtol=1e-7, atol=1e-9)
    close(adj, fd, rtol=1e-5, atol=1e-7)


@pytest.mark.cpu_only(DEVICE_PATHS)
@pytest.mark.parametrize("sensitivity", ["adjoint", "forward"])
def test_stiff_linear_system_with_bdf_against_the_matrix_exponential(sensitivity):
    rng = np.random.default_rng(0)
    Q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    A_np = -Q @ np.diag([1.0, 30.0, 1000.0]) @ Q.T
    y0_np = np.array([1.0, -2.0, 0.5])
    ts = [0.1, 0.5, 1.0]
    c = nd.tensor(rng.normal(size=(3, 3)))

    def loss(A, y0):
        res = solve_ivp(lambda t, y, A: A @ y, (0.0, 1.0), y0, method="BDF", t_eval=ts,
                        args=(A,), rtol=1e-9, atol=1e-11, sensitivity=sensitivity)
        assert res.success and res.njev > 0       # ndgrad's Jacobian was used
        return (c * res.y).sum(), res.y

    def reference(A, y0):
        y = nd.stack([nd.linalg.matrix_exp(A * t) @ y0 for t in ts], axis=1)
        return (c * y).sum(), y

    A, y0 = nd.tensor(A_np), nd.tensor(y0_np)
    close(loss(A, y0)[1], reference(A, y0)[1], rtol=1e-6, atol=1e-8)
    g = grad(lambda A, y0: loss(A, y0)[0], argnums=(0, 1))(A, y0)
    r = grad(lambda A, y0: reference(A, y0)[0], argnums=(0, 1))(A, y0)
    close(g[1], r[1], rtol=1e-6, atol=1e-8)
    close(g[0], r[0], rtol=1e-5, atol=1e-7)


@pytest.mark.cpu_only(DEVICE_PATHS)
@pytest.mark.parametrize("method", ["Radau", "LSODA", "DOP853"])
def test_other_methods(method):
    k = nd.tensor(0.8)
    g = grad(lambda k: solve_ivp(decay, (0.0, 3.0), nd.tensor([1.0]), method=method,
                                 t_eval=[2.0], args=(k,), **TIGHT).y.sum())(k)
    close(g, -2.0 * math.exp(-1.6), rtol=1e-6)


@pytest.mark.cpu_only(DEVICE_PATHS)
def test_gradcheck():
    def f(y0, k):
        return solve_ivp(decay, (0.0, 1.0), y0, t_eval=[0.5, 1.0], args=(k,), **TIGHT).y
    assert gradcheck(f, (nd.tensor([1.0, 2.0], requires_grad=True),
                         nd.tensor(0.7, requires_grad=True)), atol=1e-6, rtol=1e-5)


@pytest.mark.cpu_only(DEVICE_PATHS)
def test_result_is_scipys_and_t_eval_none():
    from scipy.integrate._ivp.ivp import OdeResult
    k = nd.tensor(0.8)
    res = solve_ivp(decay, (0.0, 2.0), nd.tensor([1.0]), args=(k,), **TIGHT)
    assert isinstance(res, OdeResult) and isinstance(res.y, nd.Tensor)
    assert res.sol is None and res.t[0] == 0.0 and res.t[-1] == 2.0
    g = grad(lambda k: solve_ivp(decay, (0.0, 2.0), nd.tensor([1.0]), args=(k,),
                                 **TIGHT).y[0, -1])(k)
    close(g, -2.0 * math.exp(-1.6), rtol=1e-8)
    for sensitivity in ("adjoint", "forward"):    # at SciPy's own steps
        def total(k, sensitivity=sensitivity):
            return solve_ivp(decay, (0.0, 2.0), nd.tensor([1.0]), args=(k,),
                             sensitivity=sensitivity, **TIGHT).y.sum()
        gs = grad(total)(k)
        close(gs, (-res.t * np.exp(-0.8 * res.t)).sum(), rtol=1e-8)
    _, tangent = jvp(lambda k: solve_ivp(decay, (0.0, 2.0), nd.tensor([1.0]), args=(k,),
                                         **TIGHT).y, (k,), (nd.tensor(1.0),))
    close(tangent, -res.t * np.exp(-0.8 * res.t)[None], rtol=1e-8, atol=1e-12)


@pytest.mark.cpu_only(DEVICE_PATHS)
def test_quad_gradcheck():
    f = lambda a, b, lo: quad(_gauss, lo, b, args=(a,))[0]  # noqa: E731
    assert gradcheck(f, (nd.tensor(1.3, requires_grad=True), nd.tensor(0.9, requires_grad=True),
                         nd.tensor(0.1, requires_grad=True)), atol=1e-7, rtol=1e-6)


def test_failed_integration_refuses_to_differentiate():
    y0 = nd.tensor([1.0], requires_grad=True)
    res = solve_ivp(lambda t, y: y * y, (0.0, 2.0), y0)         # blows up at t = 1
    assert not res.success
    with pytest.raises(RuntimeError, match="SciPy's message: " + res.message[:20]):
        res.y.sum().backward()
    with pytest.raises(RuntimeError, match="integration failed"):
        jvp(lambda y0: solve_ivp(lambda t, y: y * y, (0.0, 2.0), y0).y, (y0.detach(),),
            (nd.tensor([1.0]),))


@pytest.mark.cpu_only(DEVICE_PATHS)
def test_bad_arguments_and_second_derivatives():
    with pytest.raises(ValueError, match="sensitivity must be one of"):
        solve_ivp(decay, (0.0, 1.0), nd.tensor([1.0]), args=(nd.tensor(1.0),),
                  sensitivity="backsolve")
    k = nd.tensor(0.5, requires_grad=True)
    y = solve_ivp(decay, (0.0, 1.0), nd.tensor([1.0]), args=(k,), t_eval=[1.0], **TIGHT).y
    (gk,) = nd.autograd.grad(y.sum(), k, create_graph=True)
    close(gk, -math.exp(-0.5), rtol=1e-8)
    with pytest.raises(NotImplementedError, match="second derivatives"):
        gk.backward()
    f = lambda k: solve_ivp(decay, (0.0, 1.0), nd.tensor([1.0]), args=(k,)).y.sum()  # noqa
    for second in (grad(grad(f)), jacfwd(jacrev(f))):
        with pytest.raises(NotImplementedError, match="second derivatives"):
            second(nd.tensor(0.5))
    with pytest.raises(NotImplementedError, match="second derivatives"):
        grad(grad(lambda a: quad(_gauss, 0.0, 1.0, args=(a,))[0]))(nd.tensor(1.0))


def _gauss(x, a):
    return nd.exp(-a * x * x)


def test_quad_closed_forms():
    a, b = nd.tensor(1.3), nd.tensor(0.9)

    def exact(a, b):
        return 0.5 * math.sqrt(math.pi / a) * math.erf(math.sqrt(a) * b)
    value, err = quad(_gauss, 0.0, b, args=(a,))
    close(value, exact(1.3, 0.9), rtol=1e-12)
    assert 0 <= err < 1e-10
    ga, gb = grad(lambda a, b: quad(_gauss, 0.0, b, args=(a,))[0], argnums=(0, 1))(a, b)
    eps = 1e-6
    close(ga, (exact(1.3 + eps, 0.9) - exact(1.3 - eps, 0.9)) / (2 * eps), rtol=1e-7)
    close(gb, math.exp(-1.3 * 0.81), rtol=1e-12)
    _, t = jvp(lambda a, b: quad(_gauss, 0.0, b, args=(a,))[0], (a, b),
               (nd.tensor(1.0), nd.tensor(2.0)))
    close(t, host(ga) + 2 * host(gb), rtol=1e-10)
    lo = nd.tensor(0.2, requires_grad=True)
    quad(_gauss, lo, 1.0, args=(nd.tensor(1.0),))[0].backward()
    close(lo.grad, -math.exp(-0.04), rtol=1e-12)
    inf = grad(lambda a: quad(_gauss, 0.0, math.inf, args=(a,))[0])(a)
    close(inf, -0.25 * math.sqrt(math.pi) * 1.3 ** -1.5, rtol=1e-8)


@pytest.mark.cpu_only(DEVICE_PATHS)
def test_adjoint_of_a_right_hand_side_that_cannot_be_vectorized():
    # the adjoint's parameter quadrature vectorizes fun with vmap; float(t) cannot be, so
    # it loops over the quadrature nodes instead, with the same result
    def branching(t, y, k):
        return -k * y if float(t) < 10.0 else -2.0 * k * y
    T = [0.5, 2.0]
    k0, y00 = 0.7, np.array([1.5, -0.5])

    def loss(y0, k):
        return (solve_ivp(branching, (0.0, 2.0), y0, t_eval=T, args=(k,), **TIGHT).y ** 2).sum()
    gy0, gk = grad(loss, argnums=(0, 1))(nd.tensor(y00), nd.tensor(k0))
    t = np.array(T)
    y = y00[:, None] * np.exp(-k0 * t)
    close(gk, (2 * y * (-t * y)).sum(), rtol=1e-8)
    close(gy0, (2 * y * np.exp(-k0 * t)).sum(axis=1), rtol=1e-8)


@pytest.mark.cpu_only(DEVICE_PATHS)
def test_under_vmap_in_both_orders():
    # SciPy cannot batch: the solve and its adjoint run once per batch element, each with its
    # own solution (a per-example gradient that used another element's would be wrong)
    ks = np.array([0.5, 0.8, 1.2])

    def y_end(k):
        return solve_ivp(decay, (0.0, 2.0), nd.tensor([1.0]), t_eval=[2.0], args=(k,),
                         **TIGHT).y.sum()
    expected = -2.0 * np.exp(-2.0 * ks)                     # d/dk exp(-2k)
    close(vmap(grad(y_end))(nd.tensor(ks)), expected, rtol=1e-8)
    close(grad(lambda k: vmap(y_end)(k).sum())(nd.tensor(ks)), expected, rtol=1e-8)
    close(vmap(lambda k: jvp(y_end, (k,), (nd.tensor(1.0),))[1])(nd.tensor(ks)), expected,
          rtol=1e-8)
    a = np.array([0.5, 1.3])

    def gauss(a):
        return quad(_gauss, 0.0, 1.0, args=(a,))[0]
    eps = 1e-6
    fd = [(quad(_gauss, 0.0, 1.0, args=(nd.tensor(v + eps),))[0].item()
           - quad(_gauss, 0.0, 1.0, args=(nd.tensor(v - eps),))[0].item()) / (2 * eps)
          for v in a]
    close(vmap(grad(gauss))(nd.tensor(a)), fd, rtol=1e-7)


# --------------------------------------------------------------------------- odeint
def sir(y, t, beta, gamma):
    s, i, r = y[0], y[1], y[2]
    infection = beta * s * i / (s + i + r)
    return nd.stack([-infection, infection - gamma * i, gamma * i])


def sir_np(y, t, beta, gamma):
    s, i, r = y
    infection = beta * s * i / (s + i + r)
    return np.array([-infection, infection - gamma * i, gamma * i])


SIR_Y0, SIR_RATES, SIR_T = np.array([990.0, 10.0, 0.0]), (0.3, 0.1), np.linspace(0, 60, 7)
ODE_TIGHT = dict(rtol=1e-12, atol=1e-10)


def test_odeint_values_and_infodict_are_scipys():
    from scipy.integrate import odeint as sp_odeint
    got = odeint(sir, nd.tensor(SIR_Y0), SIR_T, args=tuple(nd.tensor(r) for r in SIR_RATES))
    want = sp_odeint(sir_np, SIR_Y0, SIR_T, args=SIR_RATES)
    assert tuple(got.shape) == (7, 3)
    close(got, want, rtol=1e-9, atol=1e-9)   # (the same LSODA; f rounded alike)
    y, info = odeint(lambda t, y, b, g: sir(y, t, b, g), SIR_Y0, SIR_T,
                     args=SIR_RATES, full_output=True, tfirst=True, hmax=5.0, mxstep=1000)
    wy, winfo = sp_odeint(sir_np, SIR_Y0, SIR_T, args=SIR_RATES, full_output=True,
                          hmax=5.0, mxstep=1000)
    close(y, wy, rtol=1e-9, atol=1e-9)
    assert info["message"] == winfo["message"] == "Integration successful."
    np.testing.assert_array_equal(info["nst"], winfo["nst"])
    # a scalar state, decreasing and repeated times, one time
    close(odeint(lambda y, t: -y, 1.0, [1.0, 0.5, 0.5, 0.0]),
          sp_odeint(lambda y, t: -y, 1.0, [1.0, 0.5, 0.5, 0.0]), rtol=1e-12)
    close(odeint(lambda y, t: -y, [1.0, 2.0], [0.3]), [[1.0, 2.0]])
    assert tuple(odeint(lambda y, t: -y, [1.0, 2.0], []).shape) == (0, 2)


def _odeint_fd(loss, x, rel):
    """Central differences of ``loss`` (a float of a float vector), steps ``rel`` relative."""
    steps = rel * np.maximum(1.0, np.abs(x))
    return np.array([fd_derivative(loss, x, e, eps=h) for e, h in zip(np.eye(x.size), steps)])


@pytest.mark.cpu_only("finite differences of many SciPy solves: the values, once")
@pytest.mark.parametrize("sensitivity", ["adjoint", "forward"])
def test_odeint_gradients_in_y0_args_and_t_against_finite_differences(sensitivity):
    """d/d(y0, beta, gamma, t) of a loss of SIR's trajectory, t[0] (the initial time)
    included, against central differences of SciPy odeint re-solves at tight tolerances;
    jvp and jacfwd against the same."""
    from scipy.integrate import odeint as sp_odeint
    w = np.random.default_rng(3).normal(size=(7, 3))

    def loss_np(x):
        y = sp_odeint(sir_np, x[:3], x[5:], args=(x[3], x[4]), **ODE_TIGHT)
        return float((w * y).sum() + (y[-1] ** 2).sum() * 1e-4)

    def loss(y0, beta, gamma, t):
        y = odeint(sir, y0, t, args=(beta, gamma), sensitivity=sensitivity, **ODE_TIGHT)
        return (nd.tensor(w) * y).sum() + (y[-1] ** 2).sum() * 1e-4
    x = np.concatenate([SIR_Y0, SIR_RATES, SIR_T + 1.0])   # (t[0] = 1: a moving start)
    args = (nd.tensor(x[:3]), nd.tensor(x[3]), nd.tensor(x[4]), nd.tensor(x[5:]))
    g = grad(loss, argnums=(0, 1, 2, 3))(*args)
    got = np.concatenate([host(gi).reshape(-1) for gi in g])
    fd = _odeint_fd(loss_np, x, 1e-5)
    close(got, fd, rtol=1e-6, atol=1e-6)
    assert abs(got[5]) > 1.0     # (the initial time's derivative is not zero)
    direction = np.random.default_rng(4).normal(size=len(x))
    _, tangent = jvp(loss, args, tuple(nd.tensor(d) for d in
                                       (direction[:3], direction[3], direction[4],
                                        direction[5:])))
    close(tangent, fd @ direction, rtol=1e-6)
    jf = jacfwd(lambda y0: odeint(sir, y0, x[5:], args=(nd.tensor(x[3]), nd.tensor(x[4])),
                                  **ODE_TIGHT)[-1])(nd.tensor(x[:3]))
    jfd = np.stack([(sp_odeint(sir_np, x[:3] + e, x[5:], args=(x[3], x[4]), **ODE_TIGHT)[-1]
                     - sp_odeint(sir_np, x[:3] - e, x[5:], args=(x[3], x[4]),
                                 **ODE_TIGHT)[-1]) / 2e-4 for e in 1e-4 * np.eye(3)], axis=1)
    close(jf, jfd, rtol=1e-6, atol=1e-8)


@pytest.mark.cpu_only(DEVICE_PATHS)
def test_odeint_captured_tensors_closed_forms_and_refusals():
    """A rate the function captures is differentiated like one in args (y = y0 exp(-k t));
    second derivatives, a non-tuple args, a bad y0, t or right-hand side, and a failed
    integration are refused with messages that name odeint."""
    t = np.array([0.0, 0.5, 2.0])

    def y_of(k, **kw):
        return odeint(lambda y, t: -k * y, nd.tensor([2.0]), t, rtol=1e-11, atol=1e-12, **kw)
    for sensitivity in ("adjoint", "forward"):
        g = grad(lambda k, s=sensitivity: y_of(k, sensitivity=s).sum())(nd.tensor(0.7))
        close(g, (-t * 2.0 * np.exp(-0.7 * t)).sum(), rtol=1e-8)
    k = nd.tensor(0.7, requires_grad=True)
    y_of(k)[-1, 0].backward()
    close(k.grad, -2.0 * 2.0 * np.exp(-1.4), rtol=1e-8)
    close(vmap(grad(lambda k: y_of(k)[-1, 0]))(nd.tensor([0.5, 0.7])),
          -4.0 * np.exp(-2.0 * np.array([0.5, 0.7])), rtol=1e-8)
    with pytest.raises(NotImplementedError, match="second derivatives through "
                                                  "ndgrad.integrate.odeint"):
        grad(grad(lambda k: y_of(k)[-1, 0]))(nd.tensor(0.7))
    with pytest.raises(TypeError, match="odeint: extra arguments must be in a tuple"):
        odeint(lambda y, t, k: -k * y, [1.0], t, args=[0.5])
    with pytest.raises(ValueError, match="odeint: initial condition y0 must be "
                                         "one-dimensional"):
        odeint(lambda y, t: -y, np.ones((2, 2)), t)
    with pytest.raises(ValueError, match="odeint: the values in t must be monotonically"):
        odeint(lambda y, t: -y, [1.0], [0.0, 1.0, 0.5])
    with pytest.raises(RuntimeError, match="odeint: the size of the array returned by the "
                                           "right-hand side \\(2\\) does not match the size "
                                           "of y0 \\(1\\)"):
        odeint(lambda y, t: nd.concatenate([y, y]), [1.0], t)
    from scipy.integrate import ODEintWarning
    y0 = nd.tensor([1.0], requires_grad=True)
    with pytest.warns(ODEintWarning, match="Excess work done"):
        y = odeint(lambda y, t: -y, y0, [0.0, 100.0], mxstep=5)
    with pytest.raises(RuntimeError, match="odeint: cannot differentiate the solution: "
                                           "SciPy's integration failed. SciPy's message: "
                                           "Excess work done"):
        y.sum().backward()


# ------------------------------------------------------------- args and captured tensors
@pytest.mark.cpu_only(DEVICE_PATHS)
def test_args_are_taken_as_scipy_takes_them():
    """solve_ivp unpacks any iterable args (a list, an array, None for none) and refuses a
    number with SciPy's TypeError; its jac gets the args as SciPy's does; quad wraps a
    non-tuple args into one argument, as SciPy's quad."""
    import scipy.integrate as si
    k = 0.5
    want = si.solve_ivp(lambda t, y, k: -k * y, (0.0, 1.0), [1.0], args=[k], **TIGHT).y
    for args in ([k], np.array([k]), (nd.tensor(k),), nd.tensor([k])):
        got = solve_ivp(lambda t, y, k: -k * y, (0.0, 1.0), [1.0], args=args, **TIGHT).y
        close(got, want, rtol=1e-9)
    close(solve_ivp(lambda t, y: -y, (0.0, 1.0), [1.0], args=None, **TIGHT).y[0, -1],
          math.exp(-1.0), rtol=1e-9)
    with pytest.raises(TypeError, match="Supplied 'args' cannot be unpacked"):
        si.solve_ivp(lambda t, y, k: -k * y, (0.0, 1.0), [1.0], args=k)
    for bad in (k, nd.tensor(k)):
        with pytest.raises(TypeError, match="ndgrad.integrate.solve_ivp: Supplied 'args' "
                                            "cannot be unpacked. Please supply `args` as a "
                                            "tuple \\(e.g. `args=\\("):
            solve_ivp(lambda t, y, k: -k * y, (0.0, 1.0), [1.0], args=bad)
    jac_calls = []

    def jac(t, y, k):
        jac_calls.append(float(k))
        return -float(k) * np.eye(1)
    kt = nd.tensor(0.5)
    res = solve_ivp(lambda t, y, k: -k * y, (0.0, 1.0), [1.0], method="BDF", args=(kt,),
                    jac=jac, t_eval=[1.0], rtol=1e-8, atol=1e-10)
    assert jac_calls and set(jac_calls) == {0.5}
    close(res.y, [[math.exp(-0.5)]], rtol=1e-6)
    gf = grad(lambda k: solve_ivp(lambda t, y, k: -k * y, (0.0, 1.0), nd.tensor([1.0]),
                                  method="BDF", args=(k,), jac=jac, t_eval=[1.0],
                                  sensitivity="forward", **TIGHT).y.sum())(kt)
    close(gf, -math.exp(-0.5), rtol=1e-7)
    value, _ = quad(lambda x, ab: ab[0] * x + ab[1], 0.0, 1.0, args=[nd.tensor(2.0), 3.0])
    close(value, si.quad(lambda x, ab: ab[0] * x + ab[1], 0.0, 1.0, args=[2.0, 3.0])[0])


@pytest.mark.cpu_only(DEVICE_PATHS)
def test_events_are_called_with_args_as_scipy_calls_them():
    """SciPy 1.17 calls each event as event(t, y, *args), keeping its terminal and direction:
    t_events and y_events as SciPy's, with args given as numbers and as tensors (an event
    may return a tensor); y(t) = exp(-k t) crosses k at ln(1/k)/k and k/2 at ln(2/k)/k."""
    import scipy.integrate as si
    k = 0.5

    def crossing(t, y, k):
        return y[0] - k

    def half(t, y, k):
        return y[0] - k / 2
    half.terminal, half.direction = True, -1.0
    want = si.solve_ivp(lambda t, y, k: -k * y, (0.0, 5.0), [1.0], args=(k,),
                        events=[crossing, half], **TIGHT)
    close(np.concatenate(want.t_events), [math.log(2) / k, math.log(4) / k], rtol=1e-8)
    assert want.status == 1
    for args in ((k,), (nd.tensor(k),), [k]):
        got = solve_ivp(lambda t, y, k: -k * y, (0.0, 5.0), nd.tensor([1.0]), args=args,
                        events=[crossing, half], **TIGHT)
        assert got.status == want.status and len(got.t_events) == 2
        for a, b in zip(got.t_events, want.t_events):
            close(a, b, rtol=1e-12)
        for a, b in zip(got.y_events, want.y_events):
            close(a, b, rtol=1e-12)
        close(got.t, want.t, rtol=1e-12)
        close(got.y, want.y, rtol=1e-12)
    # a single event, not in a list, and events with no args (called as event(t, y))
    got = solve_ivp(lambda t, y, k: -k * y, (0.0, 5.0), [1.0], args=(k,), events=crossing,
                    **TIGHT)
    close(got.t_events[0], want.t_events[0], rtol=1e-12)
    got = solve_ivp(lambda t, y: -k * y, (0.0, 5.0), [1.0], events=lambda t, y: y[0] - k,
                    **TIGHT)
    close(got.t_events[0], want.t_events[0], rtol=1e-12)


@pytest.mark.cpu_only(DEVICE_PATHS)
@pytest.mark.parametrize("sensitivity", ["adjoint", "forward"])
def test_tensors_the_right_hand_side_captures_are_differentiated(sensitivity):
    """y' = -k y with k captured (directly, in a tuple, and by a helper closure): its
    gradient is the closed form in every mode (it was lost before: no derivative in the
    plain graph, an internal error under func.grad); a tensor the function reaches
    otherwise (an attribute) is refused instead of being silently constant."""
    t = np.array([0.5, 2.0])
    expected = (-t * 1.5 * np.exp(-0.8 * t)).sum()

    def direct(k):
        return solve_ivp(lambda s, y: -k * y, (0.0, 2.0), nd.tensor([1.5]), t_eval=t,
                         sensitivity=sensitivity, **TIGHT).y.sum()

    def nested(k):
        pair = (k, 1.0)

        def rate(y):
            return pair[0] * pair[1] * y
        return solve_ivp(lambda s, y: -rate(y), (0.0, 2.0), nd.tensor([1.5]), t_eval=t,
                         sensitivity=sensitivity, **TIGHT).y.sum()
    for f in (direct, nested):
        close(grad(f)(nd.tensor(0.8)), expected, rtol=1e-8)
        close(jvp(f, (nd.tensor(0.8),), (nd.tensor(1.0),))[1], expected, rtol=1e-8)
        k = nd.tensor(0.8, requires_grad=True)
        f(k).backward()
        close(k.grad, expected, rtol=1e-8)
    close(vmap(grad(direct))(nd.tensor([0.8, 0.5])),
          [expected, (-t * 1.5 * np.exp(-0.5 * t)).sum()], rtol=1e-8)

    class Model:
        def __init__(self, k):
            self.k = k

        def rhs(self, s, y):
            return -self.k * y
    with pytest.raises(ValueError, match="solve_ivp: the right-hand side depends on a "
                                         "tensor that requires grad .* neither in args nor "
                                         "captured"):
        solve_ivp(Model(nd.tensor(0.8, requires_grad=True)).rhs, (0.0, 2.0), [1.5])
    with pytest.raises(ValueError, match="neither in args nor captured"):
        grad(lambda k: solve_ivp(Model(k).rhs, (0.0, 2.0), [1.5]).y.sum())(nd.tensor(0.8))


@pytest.mark.cpu_only("finite differences of many SciPy solves: the values, once")
@pytest.mark.parametrize("n", [3, 12])
def test_forward_sensitivities_of_a_coupled_system_match_finite_differences(n):
    """jvp and jacfwd (forward sensitivities; their Jacobians by reverse rows for a few
    states, by jacfwd for more: Note [ODE sensitivities]) against central differences of
    SciPy re-solves, in y0 and in the rates."""
    import scipy.integrate as si
    rng = np.random.default_rng(n)
    K = rng.uniform(0.2, 1.0, size=(n, n)) / n
    y00, r0 = rng.uniform(0.5, 1.5, n), rng.uniform(0.5, 1.5, n)
    t_eval = [0.5, 1.0, 2.0]

    def rhs(t, y, r, K):
        return r * y * (1.0 - K @ y) - 0.1 * y * nd.sin(t)

    def rhs_np(t, y, r):
        return r * y * (1.0 - K @ y) - 0.1 * y * np.sin(t)

    def y_np(y0, r):
        return si.solve_ivp(rhs_np, (0.0, 2.0), y0, t_eval=t_eval, args=(r,),
                            **TIGHT).y

    def y_of(y0, r):
        return solve_ivp(rhs, (0.0, 2.0), y0, t_eval=t_eval, args=(r, K), **TIGHT).y
    dy0, dr = rng.normal(size=n), rng.normal(size=n)
    _, tangent = jvp(y_of, (nd.tensor(y00), nd.tensor(r0)), (nd.tensor(dy0), nd.tensor(dr)))
    eps = 1e-6
    fd = (y_np(y00 + eps * dy0, r0 + eps * dr) - y_np(y00 - eps * dy0, r0 - eps * dr)) / (2 * eps)
    close(tangent, fd, rtol=1e-6, atol=1e-8)
    J = jacfwd(y_of, argnums=1)(nd.tensor(y00), nd.tensor(r0))
    Jfd = np.stack([(y_np(y00, r0 + e) - y_np(y00, r0 - e)) / (2 * eps)
                    for e in eps * np.eye(n)], axis=-1)
    close(J, Jfd, rtol=1e-6, atol=1e-8)


@pytest.mark.cpu_only(DEVICE_PATHS)
@pytest.mark.parametrize("method", ["RK45", "DOP853", "BDF"])
def test_forward_sensitivities_where_the_solution_rests(method):
    """y0 = 0 is an equilibrium: the solution is 0, SciPy's error estimate is 0 and it takes
    a few giant steps, while S = ∂y/∂y0 = exp(A t) varies: the sensitivities along the
    solution refine those steps until S passes SciPy's error test (Note [ODE
    sensitivities]); the Jacobian is the matrix exponential."""
    from scipy.linalg import expm
    A = np.array([[-0.7, 0.0], [0.3, -0.2]])
    t = np.array([0.5, 2.0, 5.0, 10.0])

    def y_of(y0):
        return solve_ivp(lambda s, y: nd.tensor(A) @ y, (0.0, 10.0), y0, t_eval=t,
                         method=method, rtol=1e-8, atol=1e-10).y
    J = jacfwd(y_of)(nd.zeros(2))                       # (2, 4, 2)
    close(J, np.stack([expm(A * s) for s in t], axis=1), rtol=1e-6, atol=1e-8)


@pytest.mark.cpu_only(DEVICE_PATHS)
def test_odeint_forward_sensitivities_of_many_states():
    """More states than the sensitivities along the solution take: the augmented system,
    with LSODA, stiff (it switches to BDF and needs a dense Jacobian: the sparse one raised
    'setting an array element with a sequence'); the Jacobian in y0 is the matrix
    exponential."""
    from scipy.linalg import expm
    rng = np.random.default_rng(5)
    Q, _ = np.linalg.qr(rng.normal(size=(10, 10)))
    A = -Q @ np.diag(np.logspace(0, 3, 10)) @ Q.T
    t = np.array([0.0, 0.5, 1.0])
    J = jacfwd(lambda y0: odeint(lambda y, s: nd.tensor(A) @ y, y0, t, rtol=1e-10,
                                 atol=1e-12, mxstep=10000)[-1])(nd.tensor(rng.normal(size=10)))
    close(J, expm(A), rtol=1e-6, atol=1e-8)


def test_solve_ivp_takes_scipys_positional_arguments():
    """solve_ivp(fun, t_span, y0, method, t_eval, dense_output, events, vectorized, args):
    SciPy's parameters at SciPy's positions (dense_output was taken as args, events as rtol);
    rtol, atol and sensitivity are keyword-only."""
    def decay(t, y, k):
        return -k * y

    def crossing(t, y, k):
        return y[0] - 0.5
    k = nd.tensor(0.7)
    sol = solve_ivp(decay, (0.0, 2.0), nd.tensor([1.0]), "RK45", None, True, crossing, False,
                    (k,), rtol=1e-10, atol=1e-12)
    close(sol.sol(1.3), [math.exp(-0.7 * 1.3)], rtol=1e-7)
    close(sol.t_events[0], [math.log(2.0) / 0.7], rtol=1e-8)
    close(sol.y[0, -1], math.exp(-0.7 * 2.0), rtol=1e-8)
    with pytest.raises(TypeError, match="positional argument"):
        solve_ivp(decay, (0.0, 1.0), nd.tensor([1.0]), "RK45", None, False, None, False, (k,),
                  1e-6)
