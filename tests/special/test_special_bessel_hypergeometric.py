"""ndgrad.special's Bessel functions of real order, incomplete beta, hypergeometric and other
functions (ndgrad/core/ops/special_bessel.py, special_gamma.py, special_hypergeometric.py; and
the plain functions of ndgrad/scipy/special.py): derivatives against SciPy's own derivative
functions (``jvp``, ``yvp``, ``ivp``, ``kvp``) and closed forms other than the rules', the plain
functions' values, the parameters that are not differentiated, and a vmap. The registry suites
check the registered functions' values, vjp, jvp, second order and batching on every device; the
plain functions are compositions of them, so these tests run on the CPU."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.special as sp

import ndgrad as nd
from ndgrad import special as S
from ndgrad.checks import gradcheck, gradgradcheck
from ndgrad.func import grad, vmap

pytestmark = pytest.mark.cpu_only("compositions of registered ops; references from SciPy")

Z = np.array([0.4, 1.3, 2.7, 4.1])


def T(a, g=True):
    return nd.tensor(np.asarray(a, dtype=np.float64), requires_grad=g)


def V(t):
    return np.asarray(t.detach().numpy())


def d1(f, x0):
    """f'(x0) elementwise by reverse mode."""
    return V(grad(lambda x: nd.sum(f(x)))(T(x0, False)))


@pytest.mark.parametrize("v", [0, 1.5, 3])
def test_bessel_derivatives_against_scipy(v):
    for name, ref in (("jv", sp.jvp), ("yv", sp.yvp), ("iv", sp.ivp), ("kv", sp.kvp)):
        f = getattr(S, name)
        np.testing.assert_allclose(V(f(v, T(Z))), getattr(sp, name)(v, Z), rtol=1e-13)
        np.testing.assert_allclose(d1(lambda z, f=f: f(v, z), Z), ref(v, Z), rtol=1e-11,
                                   err_msg=name)
    # the scaled ones: d/dz ive = ivp e^-z - ive, d/dz kve = kvp e^z + kve (z > 0)
    np.testing.assert_allclose(d1(lambda z: S.ive(v, z), Z),
                               sp.ivp(v, Z) * np.exp(-Z) - sp.ive(v, Z), rtol=1e-11)
    np.testing.assert_allclose(d1(lambda z: S.kve(v, z), Z),
                               sp.kvp(v, Z) * np.exp(Z) + sp.kve(v, Z), rtol=1e-11)


def test_second_derivative_of_jv_is_bessels_equation():
    # z^2 J'' + z J' + (z^2 - v^2) J = 0
    v = 1.5
    z = T(Z)
    (g,) = nd.autograd.grad(nd.sum(S.jv(v, z)), z, create_graph=True)
    (h,) = nd.autograd.grad(nd.sum(g), z)
    np.testing.assert_allclose(Z**2 * V(h) + Z * V(g) + (Z**2 - v**2) * sp.jv(v, Z), 0.0,
                               atol=1e-12)


def test_integer_aliases_and_plain_functions():
    assert S.jn is S.jv  # as SciPy's (its jn is jv); its yn truncates the order: yn(n, z) = Y_n
    np.testing.assert_allclose(V(S.jn(2, T(Z))), sp.jn(2, Z), rtol=1e-13)
    np.testing.assert_allclose(V(S.yn(2, T(Z))), sp.yn(2, Z), rtol=1e-13)
    x = np.array([-2.5, -0.5, 0.5, 1.0, 3.5])
    np.testing.assert_allclose(V(S.rgamma(T(x))), sp.rgamma(x), rtol=1e-13)
    np.testing.assert_allclose(d1(S.rgamma, x), -sp.digamma(x) * sp.rgamma(x), rtol=1e-12)
    g = np.array([-2.5, -1.5, -0.5, -1.0, 0.0, 2.0])
    np.testing.assert_array_equal(V(S.gammasgn(T(g))), sp.gammasgn(g))
    np.testing.assert_allclose(V(S.exp1(T(Z))), sp.exp1(Z), rtol=1e-13)
    np.testing.assert_allclose(d1(S.exp1, Z), -np.exp(-Z) / Z, rtol=1e-12)


def test_closed_forms_of_the_other_derivatives():
    x = np.array([0.1, 0.45, 0.8])
    a, b = 2.5, 1.5
    np.testing.assert_allclose(d1(lambda x: S.betainc(a, b, x), x),
                               x ** (a - 1) * (1 - x) ** (b - 1) / sp.beta(a, b), rtol=1e-12)
    y = sp.betainc(a, b, x)
    np.testing.assert_allclose(V(S.betaincinv(a, b, T(y))), x, rtol=1e-12)
    np.testing.assert_allclose(d1(lambda y: S.betaincinv(a, b, y), y),
                               sp.beta(a, b) / (x ** (a - 1) * (1 - x) ** (b - 1)), rtol=1e-10)
    for n in (0, 1, 3):
        np.testing.assert_allclose(d1(lambda x, n=n: S.expn(n, x), Z),
                                   (sp.expn(n, Z + 1e-6) - sp.expn(n, Z - 1e-6)) / 2e-6,
                                   rtol=1e-7)
    w = np.array([-0.3, 0.0, 0.5, 4.0])
    np.testing.assert_allclose(V(S.lambertw(T(w))), sp.lambertw(w).real, rtol=1e-13)
    lw = sp.lambertw(w[2:]).real
    np.testing.assert_allclose(d1(S.lambertw, w)[2:], lw / (w[2:] * (1 + lw)), rtol=1e-12)
    assert np.isnan(V(S.lambertw(T([-1.0])))).all()  # below -1/e: no real value
    m = np.array([-0.5, 0.0, 0.3, 0.9])
    h = 1e-6
    np.testing.assert_allclose(d1(S.ellipk, m), (sp.ellipk(m + h) - sp.ellipk(m - h)) / 2 / h,
                               rtol=1e-7)
    np.testing.assert_allclose(d1(S.ellipe, m), (sp.ellipe(m + h) - sp.ellipe(m - h)) / 2 / h,
                               rtol=1e-7)
    z = np.array([-0.7, 0.2, 0.6])
    # 2F1(1, 1; 2; z) = -log(1 - z) / z and 1F1(a; a; x) = e^x
    np.testing.assert_allclose(d1(lambda z: S.hyp2f1(1.0, 1.0, 2.0, z), z),
                               1 / (z * (1 - z)) + np.log(1 - z) / z**2, rtol=1e-12)
    np.testing.assert_allclose(d1(lambda x: S.hyp1f1(1.5, 1.5, x), z), np.exp(z), rtol=1e-12)
    assert gradgradcheck(lambda z: S.hyp2f1(0.5, 1.5, 2.5, z), (T(z),))
    assert gradcheck(lambda z: S.kv(0.5, z), (T(Z),))


def test_parameters_are_not_differentiated():
    v = T(1.0)
    with pytest.raises(NotImplementedError, match="detach v"):
        nd.sum(S.jv(v, T(Z))).backward()
    with pytest.raises(ValueError, match="non-negative integer"):
        S.expn(1.5, T(Z))


def test_vmap_of_jv_matches_a_loop():
    zs = np.stack([Z, Z + 0.5])
    out = vmap(lambda z: grad(lambda t: nd.sum(S.jv(2, t)))(z))(T(zs, False))
    for k in range(2):
        np.testing.assert_allclose(V(out[k]), sp.jvp(2, zs[k]), rtol=1e-11)
