"""ndgrad.linalg.funm and ndgrad.linalg.schur (ndgrad/scipy/linalg.py). funm: values against
scipy.linalg (funm, expm, sinm, cosm, sqrtm, logm and closed forms), its errest and message,
derivatives against finite differences (gradcheck, gradgradcheck) and against the Fréchet
derivative of expm (scipy.linalg.expm_frechet), jacrev against jacfwd, vmap against a loop.
schur: values against scipy.linalg.schur on every device, and its refusal to be
differentiated."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg as sl

import ndgrad as nd
import ndgrad.forward_ad as fwAD
from ndgrad.checks import gradcheck, gradgradcheck
from ndgrad.func import grad, hessian, jacfwd, jacrev, jvp, vmap

L = nd.linalg
RNG = np.random.default_rng(21)
A = RNG.normal(size=(4, 4))  # real, non-normal, distinct eigenvalues (a complex pair)
SPD = A @ A.T + np.eye(4)
C = RNG.normal(size=(3, 3)) + 1j * RNG.normal(size=(3, 3))
E = RNG.normal(size=(4, 4))
host = pytest.mark.cpu_only("funm is a composition of registered ops (eig, solve)")


def T(a, grad=False):
    return nd.tensor(np.asarray(a), requires_grad=grad)


def V(t):
    return np.asarray(t.detach().cpu().numpy())


def poly(x):
    return x ** 3 - 2 * x + 1


@host
@pytest.mark.parametrize("func, ref, m", [
    (np.exp, sl.expm, A), (np.sin, sl.sinm, A), (np.cos, sl.cosm, A),
    (np.sqrt, sl.sqrtm, SPD), (np.log, sl.logm, SPD),
    (poly, lambda m: m @ m @ m - 2 * m + np.eye(len(m)), A), (np.exp, sl.expm, C)],
    ids=["exp", "sin", "cos", "sqrt-spd", "log-spd", "poly", "exp-complex"])
def test_funm_values(func, ref, m):
    f = L.funm(T(m), func)
    assert f.dtype == m.dtype  # a real A gives a real F where F is real (SciPy's _maybe_real)
    scale = np.abs(ref(m)).max()
    np.testing.assert_allclose(V(f), ref(m), rtol=0, atol=1e-12 * scale)
    np.testing.assert_allclose(V(f), sl.funm(m, func), rtol=0, atol=1e-12 * scale)


@host
def test_funm_complex_result_errest_and_errors(capsys):
    m = np.diag([-4.0, 9.0])  # sqrt of a negative eigenvalue: complex, as SciPy's
    f = L.funm(T(m), np.sqrt)
    assert f.dtype == np.complex128
    np.testing.assert_allclose(V(f), sl.funm(m, np.sqrt), atol=1e-15)
    # errest: eps * cond(V) = eps for a normal matrix; non-finite F gives inf
    f, err = L.funm(T(SPD), np.exp, disp=False)
    assert err == pytest.approx(np.finfo(float).eps, rel=1e-6)
    with np.errstate(divide="ignore", invalid="ignore"):  # log(0)
        assert L.funm(T(np.diag([0.0, 1.0])), np.log, disp=False)[1] == np.inf
    # a defective matrix (a Jordan block): large error, reported as SciPy does
    jordan = np.array([[1.0, 1.0], [0.0, 1.0]])
    assert L.funm(T(jordan), np.exp, disp=False)[1] == 1.0
    L.funm(T(jordan), np.exp)
    assert "funm result may be inaccurate, approximate err = 1.0" in capsys.readouterr().out
    L.funm(T(A), np.exp)
    assert capsys.readouterr().out == ""
    with pytest.raises(ValueError, match="square 2-D"):
        L.funm(T(A[:3]), np.exp)
    with pytest.raises(ValueError, match="one value per eigenvalue"):
        L.funm(T(A), lambda w: w.sum())
    with pytest.raises(TypeError, match="callable"):
        L.funm(T(A), "exp")


@host
def test_funm_derivatives():
    m = A[:3, :3]
    assert gradcheck(lambda a: L.funm(a, np.sin), (T(m, True),))
    assert gradgradcheck(lambda a: L.funm(a, np.sin), (T(m, True),))
    assert gradcheck(lambda a: L.funm(a, np.sqrt), (T(SPD[:3, :3], True),))
    assert gradcheck(lambda a: L.funm(a, np.exp), (T(C, True),))  # complex input
    # jvp is the Fréchet derivative: for exp, expm_frechet's (SciPy's and ndgrad's)
    _, tan = jvp(lambda a: L.funm(a, np.exp), (T(A),), (T(E),))
    np.testing.assert_allclose(V(tan), sl.expm_frechet(A, E)[1], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(V(tan), V(L.expm_frechet(T(A), T(E), compute_expm=False)),
                               rtol=1e-12, atol=1e-12)
    # the gradient of <G, f(A)> is the adjoint L(A^T, G) (f real on the real axis)
    g = grad(lambda a: nd.sum(T(E) * L.funm(a, np.exp)))(T(A))
    np.testing.assert_allclose(V(g), sl.expm_frechet(A.T, E)[1], rtol=1e-12, atol=1e-12)
    # jacrev against jacfwd
    jr = jacrev(lambda a: L.funm(a, np.cos))(T(m))
    jf = jacfwd(lambda a: L.funm(a, np.cos))(T(m))
    np.testing.assert_allclose(V(jr), V(jf), rtol=1e-12, atol=1e-13)
    # the Hessian of sum(expm(a)) against central differences of its gradient
    # L(a^T, ones) from scipy.linalg.expm_frechet
    h = V(hessian(lambda a: nd.sum(L.funm(a, np.exp)))(T(m)))
    ones, step, fd = np.ones((3, 3)), 1e-5, np.empty((3, 3, 3, 3))
    for i, j in np.ndindex(3, 3):
        d = np.zeros((3, 3))
        d[i, j] = step
        fd[:, :, i, j] = (sl.expm_frechet((m + d).T, ones)[1]
                          - sl.expm_frechet((m - d).T, ones)[1]) / (2 * step)
    np.testing.assert_allclose(h, fd, rtol=1e-7, atol=1e-8)


@host
def test_funm_vmap():
    batch = RNG.normal(size=(3, 3, 3))
    out = vmap(lambda a: L.funm(a, np.exp))(T(batch))
    f, err = vmap(lambda a: L.funm(a, np.exp, disp=False))(T(batch))
    # complex under vmap (no single value decides realness): the imaginary part is ~0 here
    assert out.dtype == np.complex128 and err.shape == (3,)
    assert float(abs(out.imag).max()) < 1e-13
    out = out.real
    for k in range(3):
        fk, ek = L.funm(T(batch[k]), np.exp, disp=False)
        np.testing.assert_allclose(V(out[k]), V(fk), rtol=1e-13, atol=1e-14)
        np.testing.assert_allclose(V(out[k]), sl.funm(batch[k], np.exp), rtol=1e-11)
        assert float(err[k]) == pytest.approx(ek, rel=1e-6)


@pytest.mark.parametrize("output", ["real", "complex"])
def test_schur_values(output):
    t, z = L.schur(T(A), output=output)
    rt, rz = sl.schur(A, output=output)
    np.testing.assert_allclose(V(t), rt, rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(V(z), rz, rtol=1e-13, atol=1e-14)
    assert t.device == nd.get_default_device()
    t, z, sdim = L.schur(T(A), output=output, sort="lhp")
    rt, rz, rsdim = sl.schur(A, output=output, sort="lhp")
    assert sdim == rsdim
    np.testing.assert_allclose(V(t), rt, rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(V(z), rz, rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(V(L.schur(T(C))[0]), sl.schur(C)[0], rtol=1e-13, atol=1e-14)


def test_schur_is_not_differentiated():
    with pytest.raises(NotImplementedError, match="linalg.schur.*eig"):
        L.schur(T(A, True))
    for transform in (jacrev, jacfwd, vmap):
        with pytest.raises(NotImplementedError, match="linalg.schur"):
            transform(lambda a: L.schur(a)[0])(T(A))
    with fwAD.dual_level(), pytest.raises(NotImplementedError, match="linalg.schur"):
        L.schur(fwAD.make_dual(T(A), T(E)))
    t, _ = L.schur(T(A, True).detach())  # the values alone
    np.testing.assert_allclose(V(t), sl.schur(A)[0], rtol=1e-13, atol=1e-14)
    with pytest.raises(ValueError, match="square 2-D"):
        L.schur(T(A[:3]))
