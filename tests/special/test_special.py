"""ndgrad.special: identities, closed-form derivatives and error messages.

The registry-driven suites (tests/test_op_properties.py, tests/test_op_batching.py,
tests/forward_ad) already check every function against SciPy, finite differences, second
order, forward mode and vmap. This file adds independent references those checks cannot
give: closed forms of the derivatives (from SciPy functions other than the one under test),
identities between functions, agreement with the core ops that compute the same function,
behaviour at special points (removable singularities, zero weights, far tails), and the
error messages.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.special as sp

import ndgrad as nd
import ndgrad.forward_ad as fwAD
from ndgrad import special as S
from ndgrad.autograd import grad
from ndgrad.func import jacfwd, jacrev, vmap
from support import fd_derivative, val

RNG = np.random.default_rng(7)


def T(a, requires_grad=False, dtype=None):
    a = np.asarray(a)
    dtype = dtype or (np.complex128 if np.iscomplexobj(a) else np.float64)
    return nd.tensor(a.astype(dtype), requires_grad=requires_grad)


def d1(f, x0, *args, **kw):
    """f'(x0) elementwise by reverse mode (sum of outputs)."""
    x = T(x0, True)
    (g,) = grad(f(x, *args, **kw).sum(), x)
    return val(g)


def d2(f, x0):
    """f''(x0) elementwise: reverse over reverse."""
    x = T(x0, True)
    (g,) = grad(f(x).sum(), x, create_graph=True)
    (h,) = grad(g.sum(), x)
    return val(h)


# --------------------------------------------------------------------------- the namespace
def test_public_names_are_the_scipy_names():
    expected = {"erf", "erfc", "erfinv", "erfcinv", "erfcx", "gammaln", "gamma", "digamma",
                "polygamma", "multigammaln", "beta", "betaln", "expit", "logit", "log_expit",
                "xlogy", "xlog1py", "entr", "rel_entr", "kl_div", "logsumexp", "softmax",
                "log_softmax", "ndtr", "ndtri", "log_ndtr", "i0", "i0e", "i1", "i1e", "j0",
                "j1", "y0", "y1", "sinc", "zeta", "zeta_derivative", "gammainc", "gammaincc",
                # (the rest, and the plain functions of ndgrad/scipy/special.py)
                "betainc", "betaincinv", "jv", "yv", "ive", "kve", "expn", "lambertw",
                "ellipk", "ellipe", "hyp1f1", "hyp2f1", "jn", "yn", "iv", "kv", "exp1",
                "rgamma", "gammasgn", "spence", "owens_t",
                # special_gamma.py
                "gammaincinv", "gammainccinv", "sph_harm_y"}
    assert set(S.__all__) == expected
    for name in expected - {"sinc", "zeta_derivative"}:
        assert hasattr(sp, name), name  # every name but sinc and zeta_derivative is SciPy's
    assert "erf" not in dir(nd)  # namespaced, not at the top level


# --------------------------------------------------------------------------- closed forms
X = np.array([-1.7, -0.4, 0.3, 1.1, 2.2])
POS = np.array([0.35, 0.9, 1.6, 2.5, 3.7])


@pytest.mark.parametrize("name, x, derivative", [
    ("erf", X, lambda x: 2 / np.sqrt(np.pi) * np.exp(-x * x)),
    ("erfc", X, lambda x: -2 / np.sqrt(np.pi) * np.exp(-x * x)),
    ("erfcx", X, lambda x: 2 * x * sp.erfcx(x) - 2 / np.sqrt(np.pi)),
    # inverse functions: 1 / f'(f^-1(x))
    ("erfinv", X / 2.5, lambda x: 1 / (2 / np.sqrt(np.pi) * np.exp(-sp.erfinv(x) ** 2))),
    ("erfcinv", POS / 2, lambda x: -1 / (2 / np.sqrt(np.pi) * np.exp(-sp.erfcinv(x) ** 2))),
    ("ndtr", X, lambda x: np.exp(-x * x / 2) / np.sqrt(2 * np.pi)),
    ("ndtri", POS / 4, lambda x: np.sqrt(2 * np.pi) * np.exp(sp.ndtri(x) ** 2 / 2)),
    # phi / Phi through erfcx, without log_ndtr: Phi(x) = erfcx(-x/sqrt2) exp(-x^2/2) / 2
    ("log_ndtr", X, lambda x: 2 / (np.sqrt(2 * np.pi) * sp.erfcx(-x / np.sqrt(2)))),
    ("gammaln", POS, sp.digamma),
    ("gamma", POS, lambda x: sp.gamma(x) * sp.digamma(x)),
    ("digamma", POS, lambda x: sp.polygamma(1, x)),
    ("logit", POS / 4, lambda x: 1 / (x * (1 - x))),
    ("log_expit", X, lambda x: sp.expit(-x)),
    ("expit", X, lambda x: sp.expit(x) * sp.expit(-x)),
    ("entr", POS, lambda x: -np.log(x) - 1),
    ("i0", X, sp.i1),
    ("i0e", X, lambda x: sp.i1e(x) - np.sign(x) * sp.i0e(x)),
    ("i1", X, lambda x: sp.i0(x) - sp.i1(x) / x),
    ("i1e", X, lambda x: sp.i0e(x) - sp.i1e(x) * (np.sign(x) + 1 / x)),
    ("j0", X, lambda x: -sp.j1(x)),
    ("j1", X, lambda x: sp.j0(x) - sp.j1(x) / x),
    ("y0", POS, lambda x: -sp.y1(x)),
    ("y1", POS, lambda x: sp.y0(x) - sp.y1(x) / x),
    ("sinc", X, lambda x: (np.cos(np.pi * x) - np.sinc(x)) / x),
])
def test_first_derivative_closed_form(name, x, derivative):
    np.testing.assert_allclose(d1(getattr(S, name), x), derivative(x), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("name, x, second", [
    ("erf", X, lambda x: -4 * x / np.sqrt(np.pi) * np.exp(-x * x)),
    ("gammaln", POS, lambda x: sp.polygamma(1, x)),
    ("digamma", POS, lambda x: sp.polygamma(2, x)),
    ("i0", X, lambda x: sp.i0(x) - sp.i1(x) / x),  # i0'' = i1'
    ("j0", X, lambda x: -(sp.j0(x) - sp.j1(x) / x)),
    ("ndtr", X, lambda x: -x * np.exp(-x * x / 2) / np.sqrt(2 * np.pi)),
    ("logit", POS / 4, lambda x: (2 * x - 1) / (x * (1 - x)) ** 2),
    # erfinv'' = 2 y erfinv'^2 with y = erfinv(x)
    ("erfinv", X / 2.5,
     lambda x: 2 * sp.erfinv(x) * (np.sqrt(np.pi) / 2 * np.exp(sp.erfinv(x) ** 2)) ** 2),
])
def test_second_derivative_closed_form(name, x, second):
    np.testing.assert_allclose(d2(getattr(S, name), x), second(x), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("n", [0, 1, 2, 3])
def test_polygamma_orders(n):
    x0 = POS
    np.testing.assert_allclose(val(S.polygamma(n, T(x0))), sp.polygamma(n, x0), rtol=1e-14)
    # d/dx polygamma(n) = polygamma(n + 1); d2/dx2 = polygamma(n + 2)
    np.testing.assert_allclose(d1(lambda x: S.polygamma(n, x), x0), sp.polygamma(n + 1, x0),
                               rtol=1e-12)
    np.testing.assert_allclose(d2(lambda x: S.polygamma(n, x), x0), sp.polygamma(n + 2, x0),
                               rtol=1e-10)
    # the independent check: finite differences of SciPy's polygamma(n)
    np.testing.assert_allclose(d1(lambda x: S.polygamma(n, x), x0),
                               fd_derivative(lambda x: sp.polygamma(n, x), x0), rtol=1e-6)


def test_polygamma_zero_is_digamma_and_broadcasts_orders():
    x = T(POS[:3], True)
    np.testing.assert_allclose(val(S.polygamma(0, x)), val(S.digamma(x)), rtol=0, atol=1e-15)
    n = nd.tensor(np.array([0, 1, 2]))
    y = S.polygamma(n, x)
    np.testing.assert_allclose(val(y), sp.polygamma([0, 1, 2], POS[:3]), rtol=1e-14)
    (g,) = grad(y.sum(), x)
    np.testing.assert_allclose(val(g), sp.polygamma([1, 2, 3], POS[:3]), rtol=1e-12)


def test_multigammaln_derivative_is_a_sum_of_digammas():
    a0 = np.array([1.6, 2.5, 4.0])
    for dim in (1, 2, 3):
        expected = sum(sp.digamma(a0 - j / 2) for j in range(dim))
        np.testing.assert_allclose(d1(S.multigammaln, a0, dim), expected, rtol=1e-12)
        # and the definition, log(pi) d(d-1)/4 + sum_j gammaln(a - j/2)
        ref = dim * (dim - 1) / 4 * np.log(np.pi) + sum(sp.gammaln(a0 - j / 2)
                                                         for j in range(dim))
        np.testing.assert_allclose(val(S.multigammaln(T(a0), dim)), ref, rtol=1e-13)
    # d = 1 adds nothing to gammaln: bit for bit the device's gammaln (a GPU's is not
    # bit for bit SciPy's)
    assert val(S.multigammaln(T(a0), 1)).tolist() == val(S.gammaln(T(a0))).tolist()


def test_beta_and_betaln_gradients():
    a0, b0 = np.array([0.5, 1.5, 3.0]), np.array([2.0, 0.7, 1.2])
    a, b = T(a0, True), T(b0, True)
    ga, gb = grad(S.betaln(a, b).sum(), (a, b))
    np.testing.assert_allclose(val(ga), sp.digamma(a0) - sp.digamma(a0 + b0), rtol=1e-12)
    np.testing.assert_allclose(val(gb), sp.digamma(b0) - sp.digamma(a0 + b0), rtol=1e-12)
    ga, gb = grad(S.beta(a, b).sum(), (a, b))
    np.testing.assert_allclose(val(ga), fd_derivative(lambda t: sp.beta(t, b0), a0), rtol=1e-6)
    np.testing.assert_allclose(val(gb), fd_derivative(lambda t: sp.beta(a0, t), b0), rtol=1e-6)
    # beta = exp(betaln) for positive arguments, gradients included
    g1 = grad(S.beta(a, b).sum(), a)[0]
    g2 = grad(nd.exp(S.betaln(a, b)).sum(), a)[0]
    np.testing.assert_allclose(val(g1), val(g2), rtol=1e-12)


def test_entropies_gradients():
    x0, y0 = np.array([0.2, 1.0, 2.5]), np.array([1.3, 0.4, 2.5])
    x, y = T(x0, True), T(y0, True)
    gx, gy = grad(S.rel_entr(x, y).sum(), (x, y))
    np.testing.assert_allclose(val(gx), np.log(x0 / y0) + 1, rtol=1e-13)
    np.testing.assert_allclose(val(gy), -x0 / y0, rtol=1e-13)
    gx, gy = grad(S.kl_div(x, y).sum(), (x, y))
    np.testing.assert_allclose(val(gx), np.log(x0 / y0), rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(val(gy), 1 - x0 / y0, rtol=1e-13, atol=1e-15)
    # kl_div = rel_entr - x + y, and entr(x) = -rel_entr(x, 1)
    np.testing.assert_allclose(val(S.kl_div(x, y)), val(S.rel_entr(x, y) - x + y), rtol=1e-13,
                               atol=1e-15)
    np.testing.assert_allclose(d1(S.entr, x0), -d1(lambda t: S.rel_entr(t, 1.0), x0),
                               rtol=1e-13)


def test_xlogy_and_xlog1py_at_x_0_where_log_y_is_not_finite():
    """PyTorch's rule (derivatives.yaml, Note [Gradient formula for xlogy at x = 0, y <= 0]):
    where x == 0 and y <= 0 (xlog1py: y <= -1) the function is 0 along x = 0 but not defined
    around the point; the derivative in x is 0 there, not log(0) = -inf. At x = 0 with y > 0
    it stays log(y), the derivative (central differences agree)."""
    for f, y0, log in ((S.xlogy, [0.0, 0.5], np.log), (S.xlog1py, [-1.0, 0.5], np.log1p)):
        x = T([0.0, 0.0], True)
        (gx,) = grad(f(x, T(y0)).sum(), x)
        assert val(gx)[0] == 0.0
        np.testing.assert_allclose(val(gx)[1], log(0.5), rtol=1e-14)
        fd = (f(T([1e-7]), T([0.5])) - f(T([-1e-7]), T([0.5]))) / 2e-7
        np.testing.assert_allclose(val(fd), [log(0.5)], rtol=1e-8)
        # forward mode and the second derivative agree
        with fwAD.dual_level():
            t = fwAD.unpack_dual(f(fwAD.make_dual(T([0.0, 0.0]), T([1.0, 1.0])), T(y0))).tangent
        np.testing.assert_array_equal(val(t), val(gx))
        # d/dy of d/dx at x = 0, y = 0.5: d/dy log(y) (log1p(y))
        x, y = T([0.0], True), T([0.5], True)
        (gx,) = grad(f(x, y).sum(), x, create_graph=True)
        (gxy,) = grad(gx.sum(), y)
        np.testing.assert_allclose(val(gxy), [1.0 / (0.5 if f is S.xlogy else 1.5)],
                                   rtol=1e-14)


def test_xlogy_and_xlog1py():
    # the value 0 at x = 0 even where log(y) is -inf; d/dx = log(y) (also at x = 0, as torch)
    out = S.xlogy(T([0.0, 0.0, 2.0]), T([0.0, 2.0, 3.0]))
    assert val(out).tolist() == [0.0, 0.0, 2 * math.log(3.0)]
    x, y = T([0.0, 1.5], True), T([0.5, 3.0], True)
    gx, gy = grad(S.xlogy(x, y).sum(), (x, y))
    np.testing.assert_allclose(val(gx), np.log([0.5, 3.0]), rtol=1e-14)
    np.testing.assert_allclose(val(gy), [0.0, 0.5], rtol=1e-14)
    gx, gy = grad(S.xlog1py(x, y).sum(), (x, y))
    np.testing.assert_allclose(val(gx), np.log1p([0.5, 3.0]), rtol=1e-14)
    np.testing.assert_allclose(val(gy), [0.0, 1.5 / 4.0], rtol=1e-14)
    # xlog1py keeps precision where y is tiny (log(1 + 1e-20) would be 0)
    np.testing.assert_allclose(val(S.xlog1py(T([3.0]), T([1e-20]))), [3e-20], rtol=1e-15)


# --------------------------------------------------------------------------- special points
def test_removable_singularities_at_zero():
    z = np.array([0.0])
    # i1'(0) = j1'(0) = i1e'(0) = 1/2; the functions are odd, so their second derivatives are 0
    for f in (S.i1, S.j1, S.i1e):
        assert d1(f, z).tolist() == [0.5]
    assert d2(S.i1, z).tolist() == [0.0]
    assert d2(S.j1, z).tolist() == [0.0]
    # i0e has a kink at 0: the gradient there is i1e(0) - sign(0) i0e(0) = 0
    assert d1(S.i0e, z).tolist() == [0.0]
    # sinc: sinc'(0) = 0 and sinc''(0) = -pi^2/3 (the Taylor branch near 0)
    assert abs(d1(S.sinc, z)[0]) == 0.0
    np.testing.assert_allclose(d2(S.sinc, z), [-np.pi ** 2 / 3], rtol=1e-14)
    # both branches agree where they meet (|x| = 1e-2)
    for x0 in (0.0099999, 0.0100001, 0.3):
        np.testing.assert_allclose(d1(S.sinc, [x0]), fd_derivative(np.sinc, [x0], eps=1e-7),
                                   rtol=1e-6)
        np.testing.assert_allclose(d2(S.sinc, [x0]),
                                   fd_derivative(lambda t: (np.cos(np.pi * t) - np.sinc(t)) / t,
                                                 [x0], eps=1e-5), rtol=1e-5)


def test_sinc_complex_is_holomorphic():
    z0 = np.array([0.3 + 0.4j, -1.1 + 0.2j, 0.004 - 0.003j])
    dz = np.array([0.5 - 1.0j, 1.0 + 0.3j, -0.2 + 0.7j])
    h = 1e-7
    expected = (np.sinc(z0 + h * dz) - np.sinc(z0 - h * dz)) / (2 * h)  # f'(z) dz
    with fwAD.dual_level():
        out = S.sinc(fwAD.make_dual(T(z0), T(dz)))
        t = fwAD.unpack_dual(out).tangent
    np.testing.assert_allclose(val(t), expected, rtol=1e-7)
    # vjp: g * conj(f'(z)), the conjugate Wirtinger convention
    z = T(z0, True)
    g = T(np.ones(3, dtype=complex))
    (gz,) = grad(S.sinc(z), z, g)
    np.testing.assert_allclose(val(gz), np.conj(expected / dz), rtol=1e-7)


def test_erf_complex_derivative():
    z0 = np.array([0.5 + 0.5j, -1.0 + 0.25j])
    z = T(z0, True)
    (gz,) = grad(S.erf(z), z, T(np.ones(2, dtype=complex)))
    np.testing.assert_allclose(val(gz), np.conj(2 / np.sqrt(np.pi) * np.exp(-z0 * z0)),
                               rtol=1e-13)


def test_log_ndtr_far_left_tail():
    x0 = np.array([-40.0, -200.0, -1e5])
    y = S.log_ndtr(T(x0))
    np.testing.assert_allclose(val(y), sp.log_ndtr(x0), rtol=1e-14)
    # phi(x) / Phi(x) ~ -x for x -> -inf, finite (ndtr(x) itself underflows to 0 at -40)
    g = d1(S.log_ndtr, x0)
    np.testing.assert_allclose(g, 2 / (np.sqrt(2 * np.pi) * sp.erfcx(-x0 / np.sqrt(2))),
                               rtol=1e-12)
    assert np.all(np.isfinite(g))
    # both branches of the derivative (split at x = 5) agree with finite differences, to
    # second order, and far right (where erfcx(-x / sqrt 2) overflows) nothing is NaN
    x1 = np.array([-3.0, 0.5, 4.999, 5.001, 9.0])
    np.testing.assert_allclose(d1(S.log_ndtr, x1), fd_derivative(sp.log_ndtr, x1), rtol=1e-6)
    np.testing.assert_allclose(
        d2(S.log_ndtr, x1),
        fd_derivative(lambda t: 2 / (np.sqrt(2 * np.pi) * sp.erfcx(-t / np.sqrt(2))), x1),
        rtol=1e-5)
    far = np.array([40.0, 1e3])
    assert np.isfinite(d1(S.log_ndtr, far)).all() and np.isfinite(d2(S.log_ndtr, far)).all()


def test_gammaln_large_and_negative_arguments():
    x0 = np.array([-2.5, -0.5, 300.0])  # log|gamma| also where gamma < 0
    np.testing.assert_allclose(d1(S.gammaln, x0), sp.digamma(x0), rtol=1e-12)
    np.testing.assert_allclose(d1(S.gamma, x0[:2]), sp.gamma(x0[:2]) * sp.digamma(x0[:2]),
                               rtol=1e-12)


# --------------------------------------------------------------------------- core agreement
def test_expit_is_sigmoid():
    x0 = RNG.normal(size=(3, 4)) * 3
    x = T(x0, True)
    np.testing.assert_array_equal(val(S.expit(x)), val(nd.sigmoid(x)))
    np.testing.assert_allclose(val(S.expit(x)), sp.expit(x0), rtol=1e-15)
    g1 = grad(S.expit(x).sum(), x, create_graph=True)[0]
    g2 = grad(nd.sigmoid(x).sum(), x, create_graph=True)[0]
    np.testing.assert_array_equal(val(g1), val(g2))
    h1, h2 = grad(g1.sum(), x)[0], grad(g2.sum(), x)[0]
    np.testing.assert_array_equal(val(h1), val(h2))
    # logit is its inverse, with the reciprocal derivative
    p0 = sp.expit(x0)
    np.testing.assert_allclose(val(S.logit(S.expit(x))), x0, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(d1(S.logit, p0), 1 / (p0 * (1 - p0)), rtol=1e-12)


@pytest.mark.parametrize("axis, keepdims", [(None, False), (1, False), (0, True), ((0, 2), False),
                                            (-1, True)])
def test_logsumexp_without_b_is_the_core_op(axis, keepdims):
    x0 = RNG.normal(size=(2, 3, 4)) * 4
    x = T(x0, True)
    a = S.logsumexp(x, axis=axis, keepdims=keepdims)
    b = nd.logsumexp(x, axis=axis, keepdims=keepdims)
    np.testing.assert_array_equal(val(a), val(b))
    np.testing.assert_allclose(val(a), sp.logsumexp(x0, axis=axis, keepdims=keepdims),
                               rtol=1e-14)
    w = T(RNG.normal(size=a.shape))
    (ga,) = grad((a * w).sum(), x)
    (gb,) = grad((b * w).sum(), x)
    np.testing.assert_array_equal(val(ga), val(gb))


def test_logsumexp_with_weights_and_sign_matches_scipy():
    a0 = RNG.normal(size=(3, 4))
    b0 = RNG.uniform(0.5, 2.0, size=(3, 4)) * np.where(RNG.random((3, 4)) < 0.4, -1, 1)
    for axis in (None, 0, 1, (0, 1)):
        for keepdims in (False, True):
            out, sign = S.logsumexp(T(a0), axis=axis, b=T(b0), keepdims=keepdims,
                                    return_sign=True)
            r_out, r_sign = sp.logsumexp(a0, axis=axis, b=b0, keepdims=keepdims,
                                         return_sign=True)
            np.testing.assert_allclose(val(out), r_out, rtol=1e-13)
            np.testing.assert_array_equal(val(sign), r_sign)
            # without return_sign a negative sum is NaN, as SciPy
            plain = S.logsumexp(T(a0), axis=axis, b=T(b0), keepdims=keepdims)
            np.testing.assert_array_equal(
                np.isnan(val(plain)),
                np.isnan(sp.logsumexp(a0, axis=axis, b=b0, keepdims=keepdims)))
    # b a scalar and b broadcasting against a
    np.testing.assert_allclose(val(S.logsumexp(T(a0), axis=1, b=2.5)),
                               sp.logsumexp(a0, axis=1, b=2.5), rtol=1e-14)
    np.testing.assert_allclose(val(S.logsumexp(T(a0), axis=0, b=T(b0[0] ** 2))),
                               sp.logsumexp(a0, axis=0, b=b0[0] ** 2), rtol=1e-14)


def test_logsumexp_weights_on_another_device_is_an_error_naming_it(device):
    """b= meets a inside the function (in a where); a device mix is reported at the call, as
    special.logsumexp's, by the rule of every op's inputs: b with dimensions on another
    device (a NumPy array counts as cpu) is an error; a 0-d b is moved, as PyTorch moves 0-d
    CPU tensors."""
    a0 = np.array([[0.3, -1.2, 2.0], [1.0, 0.5, -0.5]])
    b0 = np.array([1.5, 0.4, 0.7])
    a = T(a0, True)
    expected = sp.logsumexp(a0, axis=1, b=b0)
    if device == "cpu":
        np.testing.assert_allclose(val(S.logsumexp(a, axis=1, b=b0)), expected, rtol=1e-14)
    else:
        for b in (b0, nd.tensor(b0, device="cpu")):
            with pytest.raises(RuntimeError, match=r"^special\.logsumexp: expected all tensors "
                                                   r"to be on the same device, but found at "
                                                   r"least two devices, (cuda:0 and cpu|"
                                                   r"cpu and cuda:0)"):
                S.logsumexp(a, axis=1, b=b)
    for b in (np.float64(2.5), np.array(2.5), nd.tensor(2.5, device="cpu")):
        out = S.logsumexp(a, axis=1, b=b)
        assert out.device == a.device
        np.testing.assert_allclose(val(out), sp.logsumexp(a0, axis=1, b=2.5), rtol=1e-14)
    b = nd.tensor(b0, requires_grad=True)  # on the device: fine, and differentiable in both
    out = S.logsumexp(a, axis=1, b=b)
    np.testing.assert_allclose(val(out), expected, rtol=1e-14)
    ga, gb = grad(out.sum(), (a, b))
    s = np.sum(b0 * np.exp(a0), axis=1, keepdims=True)
    np.testing.assert_allclose(val(ga), b0 * np.exp(a0) / s, rtol=1e-13)
    np.testing.assert_allclose(val(gb), np.sum(np.exp(a0) / s, axis=0), rtol=1e-13)


def test_logsumexp_gradients_in_a_and_b():
    a0 = np.array([[0.3, -1.2, 2.0], [1.0, 0.5, -0.5]])
    b0 = np.array([[1.5, -0.4, 0.7], [-2.0, 0.3, 0.2]])
    a, b = T(a0, True), T(b0, True)
    out, sign = S.logsumexp(a, axis=1, b=b, return_sign=True)
    ga, gb = grad(out.sum(), (a, b), retain_graph=True)
    s = np.sum(b0 * np.exp(a0), axis=1, keepdims=True)
    # d log|s| / da = b e^a / s, d / db = e^a / s
    np.testing.assert_allclose(val(ga), b0 * np.exp(a0) / s, rtol=1e-13)
    np.testing.assert_allclose(val(gb), np.exp(a0) / s, rtol=1e-13)
    np.testing.assert_array_equal(val(sign), np.sign(s[:, 0]))
    # the sign is piecewise constant: zero gradient
    ga, gb = grad(sign.sum(), (a, b), retain_graph=True)
    assert not val(ga).any() and not val(gb).any()
    # the same through finite differences of SciPy's function
    f = lambda t: sp.logsumexp(t, axis=1, b=b0, return_sign=True)[0].sum()  # noqa: E731
    num = np.zeros_like(a0)
    for idx in np.ndindex(a0.shape):
        e = np.zeros_like(a0)
        e[idx] = 1e-6
        num[idx] = (f(a0 + e) - f(a0 - e)) / 2e-6
    np.testing.assert_allclose(val(grad(out.sum(), a)[0]), num, rtol=1e-6)


def test_logsumexp_zero_weights_and_empty_sums():
    # an entry with b == 0 does not set the shift, however large a is there
    a = T([1000.0, 1.0], True)
    b = T([0.0, 1.0], True)
    out = S.logsumexp(a, b=b)
    assert val(out) == sp.logsumexp([1000.0, 1.0], b=[0.0, 1.0]) == 1.0
    ga, gb = grad(out, (a, b))
    assert val(ga).tolist() == [0.0, 1.0]
    assert val(gb)[1] == 1.0 and np.isfinite(val(gb)).all()
    # all weights zero: log(0) = -inf with sign 0, no warning, as SciPy
    out, sign = S.logsumexp(T([1.0, 2.0]), b=T([0.0, 0.0]), return_sign=True)
    assert val(out) == -np.inf and val(sign) == 0.0
    out, sign = S.logsumexp(T([-np.inf, -np.inf]), return_sign=True)
    assert (val(out), val(sign)) == sp.logsumexp([-np.inf, -np.inf], return_sign=True)


def test_logsumexp_under_vmap_with_batched_weights():
    a0 = RNG.normal(size=(3, 4))
    b0 = RNG.uniform(0.5, 2.0, size=(3, 4))
    got = vmap(lambda a, b: S.logsumexp(a, b=b))(T(a0), T(b0))
    np.testing.assert_allclose(val(got), sp.logsumexp(a0, axis=1, b=b0), rtol=1e-14)
    got = vmap(lambda b: S.logsumexp(T(a0[0]), b=b))(T(b0))
    np.testing.assert_allclose(val(got), [sp.logsumexp(a0[0], b=w) for w in b0], rtol=1e-14)


@pytest.mark.parametrize("axis", [None, 0, 1, (0, 1)])
def test_softmax_normalizes_and_matches_scipy(axis):
    x0 = RNG.normal(size=(3, 4)) * 3
    s = S.softmax(T(x0), axis=axis)
    np.testing.assert_allclose(val(s), sp.softmax(x0, axis=axis), rtol=1e-13)
    np.testing.assert_allclose(val(s).sum(axis=axis), 1.0, rtol=1e-14)
    np.testing.assert_allclose(val(S.log_softmax(T(x0), axis=axis)),
                               sp.log_softmax(x0, axis=axis), rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(np.exp(val(S.log_softmax(T(x0), axis=axis))), val(s),
                               rtol=1e-13)


def test_softmax_jacobian_closed_form():
    x0 = RNG.normal(size=5)
    s0 = sp.softmax(x0)
    J = val(jacrev(lambda x: S.softmax(x, axis=0))(T(x0)))
    np.testing.assert_allclose(J, np.diag(s0) - np.outer(s0, s0), rtol=1e-13, atol=1e-15)
    # rows: one Jacobian per row of a matrix, block diagonal over the rows
    x1 = RNG.normal(size=(2, 3))
    J1 = val(jacrev(lambda x: S.softmax(x, axis=1))(T(x1)))
    for i in range(2):
        s1 = sp.softmax(x1[i])
        np.testing.assert_allclose(J1[i, :, i, :], np.diag(s1) - np.outer(s1, s1), rtol=1e-13,
                                   atol=1e-15)
        np.testing.assert_allclose(J1[i, :, 1 - i, :], 0.0, atol=0)
    # log_softmax: I - 1 s^T
    JL = val(jacrev(lambda x: S.log_softmax(x, axis=0))(T(x0)))
    np.testing.assert_allclose(JL, np.eye(5) - np.outer(np.ones(5), s0), rtol=1e-13,
                               atol=1e-15)


def test_softmax_does_not_overflow():
    x = T([0.0, 1000.0, -1000.0], True)
    s = S.softmax(x)
    assert val(s).tolist() == [0.0, 1.0, 0.0]
    (g,) = grad(s[1], x)
    assert np.isfinite(val(g)).all()


# --------------------------------------------------------------------------- derivatives in
#                                                                             one argument only
@pytest.mark.parametrize("a", [0.5, 1.0, 2.5])
def test_gammainc_derivative_in_x(a):
    x0 = np.array([0.3, 1.0, 2.7, 5.0])
    expected = x0 ** (a - 1) * np.exp(-x0) / sp.gamma(a)
    np.testing.assert_allclose(d1(lambda x: S.gammainc(a, x), x0), expected, rtol=1e-12)
    np.testing.assert_allclose(d1(lambda x: S.gammainc(a, x), x0),
                               fd_derivative(lambda x: sp.gammainc(a, x), x0), rtol=1e-6)
    np.testing.assert_allclose(d1(lambda x: S.gammaincc(a, x), x0), -expected, rtol=1e-12)
    # second derivative: ((a - 1) / x - 1) times the first
    np.testing.assert_allclose(d2(lambda x: S.gammainc(a, x), x0),
                               ((a - 1) / x0 - 1) * expected, rtol=1e-11)


def test_gammainc_special_cases():
    x0 = np.array([0.3, 1.0, 2.7, 5.0])
    # a = 1: P(1, x) = 1 - exp(-x); its derivative at x = 0 is exactly 1
    assert d1(lambda x: S.gammainc(1.0, x), [0.0]).tolist() == [1.0]
    # a as an integer tensor (no gradient wanted) broadcasting against x
    a = nd.tensor(np.array([[1], [3]]))
    x = T(x0, True)
    (g,) = grad(S.gammainc(a, x).sum(), x)
    np.testing.assert_allclose(val(g), np.exp(-x0) + x0 ** 2 * np.exp(-x0) / 2, rtol=1e-12)


@pytest.mark.parametrize("name", ["gammainc", "gammaincc"])
def test_gammainc_derivative_in_a_is_first_order_only(name):
    # (the derivative itself: tests/special/test_special_gamma.py)
    f = getattr(S, name)
    a = T([2.0], True)
    x = T([1.5], True)
    msg = (r"special\.gammainc: the second derivative with respect to a is not "
           r"implemented")
    (ga,) = grad(f(a, x).sum(), a, create_graph=True)
    with pytest.raises(NotImplementedError, match=msg):
        grad(ga.sum(), a)
    with pytest.raises(NotImplementedError, match=msg):  # forward over forward
        jacfwd(jacfwd(lambda a: f(a, x.detach())))(a.detach())
    # detached a: the x gradient works
    (g,) = grad(f(a.detach(), x).sum(), x)
    sign = 1 if name == "gammainc" else -1
    np.testing.assert_allclose(val(g), sign * 1.5 * np.exp(-1.5), rtol=1e-13)


def test_zeta():
    # Riemann zeta (q=None), also left of the pole at 1 (analytic continuation)
    np.testing.assert_allclose(val(S.zeta(T([2.0, 4.0, 0.5, -1.0]))),
                               [np.pi ** 2 / 6, np.pi ** 4 / 90, sp.zeta(0.5), -1 / 12],
                               rtol=1e-14)
    # Hurwitz zeta: zeta(x, 1) is Riemann's; d/dq zeta(x, q) = -x zeta(x + 1, q)
    q0 = np.array([0.4, 1.0, 2.5])
    np.testing.assert_allclose(val(S.zeta(3.0, T(q0))), sp.zeta(3.0, q0), rtol=1e-14)
    np.testing.assert_allclose(d1(lambda q: S.zeta(3.0, q), q0), -3 * sp.zeta(4.0, q0),
                               rtol=1e-13)
    np.testing.assert_allclose(d1(lambda q: S.zeta(3.0, q), q0),
                               fd_derivative(lambda q: sp.zeta(3.0, q), q0), rtol=1e-6)
    np.testing.assert_allclose(d2(lambda q: S.zeta(3.0, q), q0), 12 * sp.zeta(5.0, q0),
                               rtol=1e-12)
    # zeta(2, q) = polygamma(1, q)
    np.testing.assert_allclose(val(S.zeta(2, T(q0))), val(S.polygamma(1, T(q0))), rtol=1e-13)


# zeta and its derivatives in x. Constants checked to 40 digits with mpmath (a scratch check,
# not a dependency): zeta'(2), zeta'(3), zeta''(2); Glaisher's constant A for zeta'(-1).
ZETA1_2 = -0.93754825431584375370257409456786497789786028861483
ZETA1_3 = -0.19812624288563685333068182150328579687557
ZETA2_2 = 1.98928023429890102342085868742151638149
GLAISHER = 1.28242712910062263687534256886979172776768892732500


def test_zeta_derivative_known_values():
    zd = S.zeta_derivative
    np.testing.assert_allclose(val(zd(T([2.0, 3.0]))), [ZETA1_2, ZETA1_3], rtol=4e-15)
    np.testing.assert_allclose(val(zd(T([2.0]), n=2)), [ZETA2_2], rtol=4e-15)
    # left of the pole (Riemann): zeta'(0) = -log(2 pi) / 2, zeta'(-1) = 1/12 - log A,
    # zeta'(-2k) = (-1)^k (2k)! zeta(2k + 1) / (2 (2 pi)^(2k))
    got = val(zd(T([0.0, -1.0, -2.0, -4.0, -10.0])))
    expected = [-np.log(2 * np.pi) / 2, 1 / 12 - np.log(GLAISHER)] + [
        (-1) ** k * math.factorial(2 * k) * sp.zeta(2 * k + 1) / (2 * (2 * np.pi) ** (2 * k))
        for k in (1, 2, 5)]
    np.testing.assert_allclose(got, expected, rtol=2e-14)


def test_zeta_derivative_identities():
    zd = S.zeta_derivative
    x0 = np.array([-7.3, -2.5, -0.6, -0.4, 0.3, 0.99, 1.01, 1.5, 2.0, 7.5, 40.0])
    q0 = np.array([[0.05], [0.5], [1.0], [3.7], [10.0]])
    # n = 0 is SciPy's zeta, Riemann (every x) and Hurwitz (to rounding: a GPU's differs)
    np.testing.assert_allclose(val(zd(T(x0), n=0)), sp.zeta(x0), rtol=1e-15)
    np.testing.assert_allclose(val(zd(T(x0), T(q0), n=0)), sp.zeta(x0, q0), rtol=1e-15)
    xh = x0[x0 > 1]
    for n in (1, 2, 5):
        # Hurwitz at q = 1 is Riemann; the shift zeta(x, q) = q^-x + zeta(x, q + 1)
        np.testing.assert_allclose(val(zd(T(xh), 1.0, n=n)), val(zd(T(xh), n=n)), rtol=4e-15)
        np.testing.assert_allclose(val(zd(T(xh), T(q0), n=n)),
                                   (-np.log(q0)) ** n * q0 ** -xh + val(zd(T(xh), T(q0 + 1),
                                                                           n=n)),
                                   rtol=1e-13)
    # zeta(x, 1/2) = (2^x - 1) zeta(x): d/dx gives 2^x log 2 zeta(x) + (2^x - 1) zeta'(x)
    np.testing.assert_allclose(val(zd(T(xh), 0.5)), 2 ** xh * np.log(2) * sp.zeta(xh)
                               + (2 ** xh - 1) * val(zd(T(xh))), rtol=1e-14)
    # zeta(2, q) = polygamma(1, q)
    np.testing.assert_allclose(val(zd(2.0, T(q0), n=0)), sp.polygamma(1, q0), rtol=1e-14)


def test_zeta_gradient_in_x():
    # Riemann (also left of the pole) and Hurwitz against central differences of SciPy's zeta
    x0 = np.array([-3.5, -0.7, -0.2, 0.5, 1.3, 2.0, 4.5])
    np.testing.assert_allclose(d1(S.zeta, x0), fd_derivative(sp.zeta, x0), rtol=1e-7)
    xh, q0 = np.array([1.3, 2.0, 4.5]), np.array([0.4, 1.0, 2.5])
    np.testing.assert_allclose(d1(lambda x: S.zeta(x, T(q0)), xh),
                               fd_derivative(lambda x: sp.zeta(x, q0), xh), rtol=1e-7)
    # forward mode and reverse mode agree; the gradient is zeta_derivative(n=1)
    with fwAD.dual_level():
        out = S.zeta(fwAD.make_dual(T(xh), T(np.ones(3))), T(q0))
        tangent = val(fwAD.unpack_dual(out).tangent)
    np.testing.assert_allclose(tangent, val(S.zeta_derivative(T(xh), T(q0))), rtol=1e-15)
    np.testing.assert_allclose(d1(lambda x: S.zeta(x, T(q0)), xh), tangent, rtol=1e-15)
    # the third derivative by reverse over reverse over reverse
    x = T([2.0, 3.0], True)
    (g,) = grad(S.zeta(x).sum(), x, create_graph=True)
    (h,) = grad(g.sum(), x, create_graph=True)
    (k,) = grad(h.sum(), x)
    np.testing.assert_allclose(val(h)[0], ZETA2_2, rtol=4e-15)
    np.testing.assert_allclose(val(k), val(S.zeta_derivative(T([2.0, 3.0]), n=3)), rtol=1e-15)


def test_zeta_second_order_in_x_and_q():
    from ndgrad.checks import gradcheck, gradgradcheck
    x = T([1.6, 2.5, 4.0], True)
    q = T([[0.5], [2.0]], True)
    assert gradcheck(S.zeta, (x, q))
    assert gradgradcheck(S.zeta, (x, q))
    assert gradgradcheck(S.zeta, (T([-2.5, -0.3, 0.4, 3.0], True),))  # Riemann, every x

    def f(x, q):
        return S.zeta_derivative(x, q, n=2)
    assert gradcheck(f, (x, q)) and gradgradcheck(f, (x, q))
    # d/dq zeta_derivative(x, q, n) = -(x S_n(x + 1, q) + n S_(n-1)(x + 1, q))
    x0, q0 = np.array([1.7, 3.0]), np.array([0.6, 2.2])
    for n in (0, 1, 3):
        qt = T(q0, True)
        (gq,) = grad(S.zeta_derivative(T(x0), qt, n=n).sum(), qt)
        h = 1e-6
        expected = (val(S.zeta_derivative(T(x0), T(q0 + h), n=n))
                    - val(S.zeta_derivative(T(x0), T(q0 - h), n=n))) / (2 * h)
        np.testing.assert_allclose(val(gq), expected, rtol=1e-7)


def test_zeta_derivative_is_smooth_where_the_method_changes():
    # Riemann: continuation above x = -1/2, reflection below; the two agree there
    zd = S.zeta_derivative
    for n in (1, 2, 4):
        below, above = val(zd(T([-0.5 - 1e-12, -0.5 + 1e-12]), n=n))
        slope = val(zd(T(-0.5), n=n + 1))
        assert abs(above - below - 2e-12 * slope) < 1e-13 * abs(above), n
        # a central difference across the switch sees one smooth function
        lo, hi = val(zd(T([-0.5 - 1e-5, -0.5 + 1e-5]), n=n))
        np.testing.assert_allclose((hi - lo) / 2e-5, slope, rtol=1e-8)


def test_zeta_derivative_outside_the_domain():
    zd = S.zeta_derivative
    # the pole: the limit from the right, (-1)^n inf, as SciPy's zeta(1) = inf
    assert val(zd(T([1.0]), n=1)).tolist() == [-np.inf]
    assert val(zd(T([1.0]), T([2.0]), n=2)).tolist() == [np.inf]
    # Hurwitz left of the pole and q <= 0: NaN (SciPy's zeta(x, q) is NaN for x < 1)
    assert np.isnan(sp.zeta(0.5, 2.0))
    assert np.isnan(val(zd(T([0.5, 2.0, 2.0]), T([2.0, 0.0, -0.5]), n=1))).all()
    # float32 in, float32 out (computed in float64)
    x = T([2.0, 3.0], True, dtype=np.float32)
    assert zd(x).dtype == nd.float32
    (g,) = grad(S.zeta(x).sum(), x)
    assert g.dtype == nd.float32
    np.testing.assert_allclose(val(g), [ZETA1_2, ZETA1_3], rtol=1e-6)


@pytest.mark.parametrize("n, error", [(-1, ValueError), (1.5, TypeError), (2.0, TypeError),
                                      (True, TypeError), (None, TypeError)])
def test_zeta_derivative_order_errors(n, error):
    with pytest.raises(error, match=r"special\.zeta_derivative: the order n must be a "
                                    r"non-negative int"):
        S.zeta_derivative(T([2.0]), n=n)


def test_zeta_derivative_refuses_complex():
    with pytest.raises(TypeError, match=r"special\.zeta_derivative: complex input is not "
                                        r"supported"):
        S.zeta_derivative(T([2.0 + 1.0j]))


# --------------------------------------------------------------------------- dtypes, vmap
def test_float32_stays_float32():
    x = T([0.3, 0.7], True, dtype=np.float32)
    for f in (S.erf, S.gammaln, S.digamma, S.i1, S.sinc, S.logit, S.expit):
        y = f(x)
        assert y.dtype == nd.float32, f
        (g,) = grad(y.sum(), x)
        assert g.dtype == nd.float32, f


def test_per_example_gradients_under_vmap():
    x0 = RNG.uniform(0.5, 3.0, size=(4, 3))

    def loss(x):
        return (S.gammaln(x) * S.i0e(x) + S.erf(x) * S.polygamma(2, x)).sum()

    per = vmap(nd.func.grad(loss))(T(x0))
    expected = (sp.digamma(x0) * sp.i0e(x0) + sp.gammaln(x0) * (sp.i1e(x0) - sp.i0e(x0))
                + 2 / np.sqrt(np.pi) * np.exp(-x0 ** 2) * sp.polygamma(2, x0)
                + sp.erf(x0) * sp.polygamma(3, x0))
    np.testing.assert_allclose(val(per), expected, rtol=1e-12)


# --------------------------------------------------------------------------- errors
def test_real_only_functions_refuse_complex_input():
    with pytest.raises(TypeError, match=r"special\.gammaln: complex input is not supported "
                                        r"\(scipy\.special\.gammaln is defined for real "
                                        r"numbers only\); pass a real tensor"):
        S.gammaln(T([1.0 + 1.0j]))
    with pytest.raises(TypeError, match=r"special\.xlogy: complex input is not supported"):
        S.xlogy(T([1.0]), T([1.0 + 1.0j]))
    with pytest.raises(TypeError, match="complex a or b is not supported with b= or "
                                        "return_sign=True"):
        S.logsumexp(T([1.0 + 1.0j]), b=T([1.0]))


def test_polygamma_order_errors():
    x = T([1.0])
    for bad in (-1, 1.5, nd.tensor([0, -2])):
        with pytest.raises(ValueError, match=r"special\.polygamma: the order n must be a "
                                             r"non-negative integer \(0 for digamma"):
            S.polygamma(bad, x)
    with pytest.raises(TypeError, match="order n must be a non-negative integer, got True"):
        S.polygamma(True, x)
    # an integral float order is accepted, as SciPy
    np.testing.assert_allclose(val(S.polygamma(2.0, x)), sp.polygamma(2, 1.0), rtol=1e-15)


def test_multigammaln_errors():
    with pytest.raises(ValueError, match=r"special\.multigammaln: every element of a must be "
                                         r"greater than \(d - 1\) / 2 = 1\.0 for d = 3; the "
                                         r"smallest is 0\.9"):
        S.multigammaln(T([0.9, 2.0]), 3)
    for bad in (0, -2):
        with pytest.raises(ValueError, match="the dimension d must be a positive int"):
            S.multigammaln(T([2.0]), bad)
    for bad in (2.0, "2", None):
        with pytest.raises(TypeError, match="the dimension d must be a positive int"):
            S.multigammaln(T([2.0]), bad)
