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
from ndgrad.integrate import quad, solve_ivp
from support import close, host

TIGHT = dict(rtol=1e-10, atol=1e-12)
DEVICE_PATHS = "the device paths are covered by the decay, failure and quad tests"
T_EVAL = [0.3, 1.0, 1.7, 2.5]


pytestmark = pytest.mark.filterwarnings("ignore:vmap. the custom Function:UserWarning")


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
