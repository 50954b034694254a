"""ndgrad/core/ops/special_gamma.py (and sph_harm_y of special_hypergeometric.py): the derivatives
of gammainc, gammaincc, betainc and betaincinv in their shapes, gammaincinv / gammainccinv, and
sph_harm_y.

References: SciPy's values, and five-point central differences of SciPy's functions in the
shape (step ``h = 1e-3 a`` for ``a < 1``, ``1e-3 sqrt(a)`` above: truncation about
``h^4 f^(5) / 30``, rounding about ``1.5 eps |f| / h``; where the derivative is much
smaller than the function, as ``dP/da`` where ``P`` is near 1, the complementary function
is differenced instead). The registry
suites check the helper primitives' values, x-derivatives and batching on every device; these
tests check the shape derivatives themselves, compositions, and the errors. They run on the
CPU: the kernels run on the host whatever the backend.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.special as sp

import ndgrad as nd
import ndgrad.core.ops.special_gamma as M
import ndgrad.forward_ad as fwAD
from ndgrad import special as S
from ndgrad.checks import gradcheck, gradgradcheck
from ndgrad.func import grad, jacfwd, jacrev, vmap
from support import fd_derivative

pytestmark = pytest.mark.cpu_only("shape-derivative kernels run on the host; SciPy references")


def T(a, g=False):
    return nd.tensor(np.asarray(a, dtype=np.float64), requires_grad=g)


def V(t):
    return np.asarray(t.detach().numpy())


def fd5(f, a, *args):
    """The five-point central difference of the NumPy function ``f`` in its first argument,
    elementwise, with steps on the scale on which the functions vary."""
    a = np.asarray(a, dtype=np.float64)
    h = 1e-3 * np.where(a < 1, a, np.sqrt(a))
    return fd_derivative(lambda a_: f(a_, *args), a, eps=h, points=5)


def da(f, a, *rest, argnum=0):
    """The derivative of ndgrad's ``f(a, *rest)`` in argument ``argnum``, elementwise (sum of
    outputs), by reverse mode."""
    args = [T(v) for v in (a, *rest)]
    return V(grad(lambda *xs: nd.sum(f(*xs)), argnums=argnum)(*args))


# --------------------------------------------------------------------------- gammainc in a
# shapes from 0.05 to 1000 (stats: gamma's a, chi2's df / 2, gennorm's 1 / beta), x in both
# regimes (series below a + 1, continued fraction above) and in both tails
GAMMA_A = np.array([0.05, 0.3, 1.0, 2.5, 7.0, 40.0, 300.0, 1000.0])


def _gamma_points():
    a = GAMMA_A
    s = np.sqrt(a)
    x = np.stack([0.2 * a, np.maximum(a - 2 * s, 0.01), a + 0.5, a + 1.5, a + 2 * s + 1,
                  a + 6 * s + 3], axis=1).ravel()
    return np.repeat(a, 6), x


def test_gammainc_derivative_in_a_against_finite_differences():
    a, x = _gamma_points()
    dP = da(S.gammainc, a, x)
    dQ = da(S.gammaincc, a, x)
    np.testing.assert_array_equal(dQ, -dP)
    lower = x < a
    ref = np.where(lower, fd5(sp.gammainc, a, x), -fd5(sp.gammaincc, a, x))
    np.testing.assert_allclose(dP, ref, rtol=2e-7)
    # the helper is much tighter than the finite differences; and it is 0 at x = 0, NaN
    # outside the domain
    out = V(S._gammainc_da(T([2.0, 2.0, -1.0]), T([0.0, -1.0, 1.0])))
    assert out[0] == 0 and np.isnan(out[1:]).all()


def test_a_wrong_series_is_caught(monkeypatch):
    # the comparison above is sharp enough to see a kernel summed with too few terms
    a, x = _gamma_points()
    monkeypatch.setattr(M, "_MAXTERMS", 4)
    ref = np.where(x < a, fd5(sp.gammainc, a, x), -fd5(sp.gammaincc, a, x))
    assert not np.allclose(da(S.gammainc, a, x), ref, rtol=2e-7, atol=0)


def test_gammainc_second_derivatives():
    a0, x0 = np.array([0.7, 2.5, 6.0]), np.array([1.5, 1.0, 9.0])
    # mixed: d/dx dP/da = x^(a-1) e^-x / Gamma(a) (log x - digamma(a)), also by FD in a of
    # the closed-form density
    dens = lambda a, x: np.exp((a - 1) * np.log(x) - x - sp.gammaln(a))  # noqa: E731
    a, x = T(a0, True), T(x0, True)
    (gx,) = nd.autograd.grad(nd.sum(S.gammainc(a, x)), x, create_graph=True)
    (gxa,) = nd.autograd.grad(nd.sum(gx), a)
    np.testing.assert_allclose(V(gxa), fd5(dens, a0, x0), rtol=1e-8)
    # twice in a: not implemented, and said so (never a silent zero)
    (ga,) = nd.autograd.grad(nd.sum(S.gammainc(a, x)), a, create_graph=True)
    msg = r"special\.gammainc: the second derivative with respect to a is not implemented"
    with pytest.raises(NotImplementedError, match=msg):
        nd.autograd.grad(nd.sum(ga), a)
    with pytest.raises(NotImplementedError, match=msg):
        g1 = grad(lambda a: nd.sum(S.gammaincc(a, x.detach())))
        grad(lambda a: nd.sum(g1(a)))(a.detach())


def test_gammainc_transforms():
    a0, x0 = np.array([0.6, 1.7, 3.0]), np.array([0.4, 2.2, 5.5])
    ref_a = np.where(x0 < a0, fd5(sp.gammainc, a0, x0), -fd5(sp.gammaincc, a0, x0))

    def f(a, x):
        return S.gammainc(a, x)
    ja, jx = jacrev(f, argnums=(0, 1))(T(a0), T(x0))
    fa, fx = jacfwd(f, argnums=(0, 1))(T(a0), T(x0))
    np.testing.assert_allclose(np.diag(V(ja)), ref_a, rtol=2e-7)
    np.testing.assert_allclose(V(fa), V(ja), rtol=1e-13, atol=1e-16)
    np.testing.assert_allclose(V(fx), V(jx), rtol=1e-13, atol=1e-16)
    # jvp through public forward mode, and vmap of grad against a loop
    with fwAD.dual_level():
        out = fwAD.unpack_dual(S.gammainc(fwAD.make_dual(T(a0), T(np.ones(3))), T(x0)))
        np.testing.assert_allclose(V(out.tangent), ref_a, rtol=2e-7)
    g = vmap(grad(lambda a, x: S.gammaincc(a, x)))(T(a0), T(x0))
    loop = [V(grad(lambda a, i=i: S.gammaincc(a, T(x0[i])))(T(a0[i]))) for i in range(3)]
    np.testing.assert_allclose(V(g), np.array(loop), rtol=1e-14)


# --------------------------------------------------------------------------- betainc in a, b
BETA = [(0.05, 0.5), (0.5, 2.0), (2.5, 0.7), (7.0, 30.0), (30.0, 3.0), (100.0, 150.0)]


@pytest.mark.parametrize("a0,b0", BETA)
def test_betainc_derivatives_in_the_shapes(a0, b0):
    x = np.array([0.01, 0.2, a0 / (a0 + b0), 0.6, 0.97])
    a, b = np.full(5, a0), np.full(5, b0)
    got_a = da(S.betainc, a, b, x, argnum=0)
    got_b = da(S.betainc, a, b, x, argnum=1)
    # the smaller of I and 1 - I is differenced (1 - I_x(a, b) = I_(1-x)(b, a))
    upper = sp.betainc(a0, b0, x) > 0.5
    ref_a = np.where(upper, -fd5(lambda a_, x_: sp.betainc(b0, a_, 1 - x_), a, x),
                     fd5(lambda a_, x_: sp.betainc(a_, b0, x_), a, x))
    ref_b = np.where(upper, -fd5(lambda b_, x_: sp.betainc(b_, a0, 1 - x_), b, x),
                     fd5(lambda b_, x_: sp.betainc(a0, b_, x_), b, x))
    np.testing.assert_allclose(got_a, ref_a, rtol=2e-7)
    np.testing.assert_allclose(got_b, ref_b, rtol=2e-7)


def test_betaincinv_derivatives_and_errors():
    a0, b0 = np.array([0.8, 2.5, 12.0]), np.array([1.5, 0.9, 40.0])
    y0 = np.array([0.1, 0.5, 0.95])
    for argnum, ref in ((0, fd5(lambda a: sp.betaincinv(a, b0, y0), a0)),
                        (1, fd5(lambda b: sp.betaincinv(a0, b, y0), b0))):
        np.testing.assert_allclose(da(S.betaincinv, a0, b0, y0, argnum=argnum), ref, rtol=1e-7)
    # jacrev / jacfwd in all three arguments; vmap against a loop
    jr = jacrev(S.betaincinv, argnums=(0, 1, 2))(T(a0), T(b0), T(y0))
    jf = jacfwd(S.betaincinv, argnums=(0, 1, 2))(T(a0), T(b0), T(y0))
    for r, f in zip(jr, jf):
        np.testing.assert_allclose(V(f), V(r), rtol=1e-12, atol=1e-15)
    g = vmap(grad(S.betainc, argnums=1))(T(a0), T(b0), T(y0))
    loop = [V(grad(S.betainc, argnums=1)(T(a0[i]), T(b0[i]), T(y0[i]))) for i in range(3)]
    np.testing.assert_allclose(V(g), loop, rtol=1e-14)
    b = T(2.0, True)
    (gb,) = nd.autograd.grad(S.betainc(T(1.5), b, T(0.3)), b, create_graph=True)
    with pytest.raises(NotImplementedError, match=r"special\.betainc: the second derivative "
                                                  r"with respect to a and b"):
        nd.autograd.grad(gb, b)


# --------------------------------------------------------------------------- gammaincinv
def test_gammaincinv_values_and_derivatives():
    a0 = np.array([0.05, 0.4, 1.0, 3.5, 50.0, 800.0])
    y0 = np.array([1e-8, 0.2, 0.5, 0.9, 0.999, 1 - 1e-6])
    for f, ref in ((S.gammaincinv, sp.gammaincinv), (S.gammainccinv, sp.gammainccinv)):
        x = ref(a0, y0)
        np.testing.assert_allclose(V(f(T(a0), T(y0))), x, rtol=1e-15)
        dens = np.exp((a0 - 1) * np.log(x) - x - sp.gammaln(a0))
        sign = 1 if f is S.gammaincinv else -1
        np.testing.assert_allclose(da(f, a0, y0, argnum=1), sign / dens, rtol=1e-12)
        # (not at a = 0.05, y = 1e-8: x = 4e-157 varies too fast in a for the differences)
        np.testing.assert_allclose(da(f, a0, y0, argnum=0)[1:], fd5(ref, a0, y0)[1:],
                                   rtol=1e-6)
    # first order in y to any order: d2x/dy2 = -p'(x) / p(x)^3 with p'/p = (a - 1)/x - 1
    a, y = 2.5, np.array([0.3, 0.7])
    x = sp.gammaincinv(a, y)
    p = np.exp((a - 1) * np.log(x) - x - sp.gammaln(a))
    assert gradgradcheck(lambda y: S.gammaincinv(a, y), (T(y, True),))
    yt = T(y, True)
    (g,) = nd.autograd.grad(nd.sum(S.gammaincinv(a, yt)), yt, create_graph=True)
    (h,) = nd.autograd.grad(nd.sum(g), yt)
    np.testing.assert_allclose(V(h), -((a - 1) / x - 1) / p ** 2, rtol=1e-11)
    assert gradcheck(lambda a, y: S.gammainccinv(a, y), (T([0.7, 2.0], True), T(y, True)),
                     check_forward_ad=True)


# --------------------------------------------------------------------------- sph_harm_y
NM = [(0, 0), (1, 0), (1, 1), (1, -1), (2, -1), (3, 2), (3, -3), (4, 1), (5, -4), (2, 3)]
THETA = np.array([0.0, 0.3, 1.2, np.pi / 2, 2.4, np.pi])
PHI = np.array([-2.0, 0.0, 0.4, 1.0, 2.5, 3.0])


def _sph_fd(n, m, theta, phi, which, h=1e-6):
    if which == 0:
        return (sp.sph_harm_y(n, m, theta + h, phi) - sp.sph_harm_y(n, m, theta - h, phi)) / 2 / h
    return (sp.sph_harm_y(n, m, theta, phi + h) - sp.sph_harm_y(n, m, theta, phi - h)) / 2 / h


def _sph_d(n, m, theta, phi, which):
    """dY/dtheta or dY/dphi (complex) from the real and imaginary parts' gradients."""
    out = []
    for part in (lambda z: z.real, lambda z: z.imag):
        out.append(V(grad(lambda t, p, part=part: nd.sum(part(S.sph_harm_y(n, m, t, p))),
                          argnums=which)(T(theta), T(phi))))
    return out[0] + 1j * out[1]


@pytest.mark.parametrize("n,m", NM)
def test_sph_harm_y_values_and_derivatives(n, m):
    np.testing.assert_allclose(V(S.sph_harm_y(n, m, T(THETA), T(PHI))),
                               sp.sph_harm_y(n, m, THETA, PHI), rtol=1e-14, atol=1e-15)
    inner = (THETA > 0) & (THETA < np.pi)
    for which in (0, 1):
        got = _sph_d(n, m, THETA, PHI, which)
        ref = _sph_fd(n, m, THETA, PHI, which)
        np.testing.assert_allclose(got[inner], ref[inner], rtol=1e-7, atol=1e-8)
    # at the poles: the derivative from inside (0, pi), by one-sided differences
    h = 1e-6
    d0 = _sph_d(n, m, np.array([0.0, np.pi]), PHI[:2], 0)
    one_sided = np.array([
        (-3 * sp.sph_harm_y(n, m, 0.0, PHI[0]) + 4 * sp.sph_harm_y(n, m, h, PHI[0])
         - sp.sph_harm_y(n, m, 2 * h, PHI[0])) / (2 * h),
        (3 * sp.sph_harm_y(n, m, np.pi, PHI[1]) - 4 * sp.sph_harm_y(n, m, np.pi - h, PHI[1])
         + sp.sph_harm_y(n, m, np.pi - 2 * h, PHI[1])) / (2 * h)])
    np.testing.assert_allclose(d0, one_sided, rtol=1e-6, atol=1e-7)


def test_sph_harm_y_higher_order_and_transforms():
    th, ph = np.array([0.4, 1.3, 2.9]), np.array([0.2, -1.1, 2.0])
    # second derivatives: the Laplacian on the sphere gives -n(n + 1) Y
    n, m = 3, -2

    def re(t, p):
        return nd.sum(S.sph_harm_y(n, m, t, p).real)
    tt, pp = T(th, True), T(ph, True)
    (gt,) = nd.autograd.grad(re(tt, pp), tt, create_graph=True)
    (gtt,) = nd.autograd.grad(nd.sum(gt), tt)
    (gp,) = nd.autograd.grad(re(tt, pp), pp, create_graph=True)
    (gpp,) = nd.autograd.grad(nd.sum(gp), pp)
    lap = V(gtt) + np.cos(th) / np.sin(th) * V(gt) + V(gpp) / np.sin(th) ** 2
    np.testing.assert_allclose(lap, -n * (n + 1) * sp.sph_harm_y(n, m, th, ph).real,
                               rtol=1e-11, atol=1e-12)
    assert gradgradcheck(lambda t, p: S.sph_harm_y(2, 1, t, p), (T(th, True), T(ph, True)))
    # jacfwd (complex output) against jacrev of the real and imaginary parts; vmap against a
    # loop
    jf = V(jacfwd(lambda t: S.sph_harm_y(2, 1, t, T(ph)))(T(th)))
    jr_re = V(jacrev(lambda t: S.sph_harm_y(2, 1, t, T(ph)).real)(T(th)))
    jr_im = V(jacrev(lambda t: S.sph_harm_y(2, 1, t, T(ph)).imag)(T(th)))
    np.testing.assert_allclose(jf, jr_re + 1j * jr_im, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(np.diag(jf), _sph_fd(2, 1, th, ph, 0), rtol=1e-7)
    ns = np.array([1, 2, 4])
    g = vmap(grad(lambda t, n: S.sph_harm_y(n, 1, t, 0.3).imag))(T(th), nd.tensor(ns))
    loop = [V(grad(lambda t, i=i: S.sph_harm_y(int(ns[i]), 1, t, 0.3).imag)(T(th[i])))
            for i in range(3)]
    np.testing.assert_allclose(V(g), loop, rtol=1e-14)


def test_sph_harm_y_takes_diff_n_by_keyword_only_as_scipy():
    # SciPy 1.17: sph_harm_y(n, m, theta, phi, *, diff_n=0); a fifth positional argument is a
    # TypeError there (its ufunc reads it as a fifth input) and here (the signature says so)
    import inspect
    theta, phi = np.array([0.3, 1.2]), np.array([0.4, -2.0])
    np.testing.assert_allclose(V(S.sph_harm_y(3, -2, T(theta), T(phi), diff_n=0)),
                               sp.sph_harm_y(3, -2, theta, phi, diff_n=0), rtol=1e-14,
                               atol=1e-15)
    assert str(inspect.signature(S.sph_harm_y)) == "(n, m, theta, phi, *, diff_n=0)"
    with pytest.raises(TypeError):
        sp.sph_harm_y(3, -2, theta, phi, 0)
    with pytest.raises(TypeError, match=r"ndgrad\.special\.sph_harm_y\(n, m, theta, phi, \*, "
                                        r"diff_n=0\): too many positional arguments"):
        S.sph_harm_y(3, -2, T(theta), T(phi), 0)


def test_sph_harm_y_errors():
    with pytest.raises(ValueError, match="diff_n=1 is not supported"):
        S.sph_harm_y(1, 0, T(0.5), T(0.1), diff_n=1)
    with pytest.raises(ValueError, match="the order m must be an integer"):
        S.sph_harm_y(2, 0.5, T(0.5), T(0.1))
    with pytest.raises(ValueError, match="degree n must be non-negative"):
        S.sph_harm_y(-1, 0, T(0.5), T(0.1))
    n = T(2.0, True)
    with pytest.raises(NotImplementedError, match=r"sph_harm_y: n is an integer order"):
        nd.autograd.grad(S.sph_harm_y(n, 1, T(0.5), T(0.1)).real, n)
    with pytest.raises(TypeError, match="complex input is not supported"):
        S.sph_harm_y(1, 0, nd.tensor(0.5 + 0j), T(0.1))
