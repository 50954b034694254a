"""ndgrad.linalg's functions from scipy.linalg (ndgrad/scipy/linalg.py): values against
scipy.linalg, derivatives against finite differences (gradcheck), a vmap and a jacrev
composition. They are compositions of registered ops, whose device paths the registry
suites check: these tests run on the CPU only."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg as sl

import ndgrad as nd
from ndgrad.checks import gradcheck, gradgradcheck
from ndgrad.func import jacrev, jvp, vmap

pytestmark = pytest.mark.cpu_only("compositions of registered ops; values against SciPy")

L = nd.linalg
RNG = np.random.default_rng(3)


def T(a, grad=True):
    return nd.tensor(np.asarray(a, dtype=np.float64), requires_grad=grad)


def V(t):
    return np.asarray(t.detach().numpy())


A = RNG.normal(size=(3, 3)) + 3 * np.eye(3)
B = RNG.normal(size=(2, 2)) - 3 * np.eye(2)
Q = RNG.normal(size=(3, 2))
SPD = A @ A.T + np.eye(3)


def test_matrix_equations():
    np.testing.assert_allclose(V(L.solve_sylvester(T(A), T(B), T(Q))),
                               sl.solve_sylvester(A, B, Q), rtol=1e-12, atol=1e-13)
    q3 = Q @ Q.T
    np.testing.assert_allclose(V(L.solve_continuous_lyapunov(T(A), T(q3))),
                               sl.solve_continuous_lyapunov(A, q3), rtol=1e-12, atol=1e-13)
    a = A / 5
    np.testing.assert_allclose(V(L.solve_discrete_lyapunov(T(a), T(q3))),
                               sl.solve_discrete_lyapunov(a, q3), rtol=1e-11, atol=1e-12)
    assert gradcheck(L.solve_sylvester, (T(A), T(B), T(Q)))
    assert gradcheck(L.solve_discrete_lyapunov, (T(a), T(q3)))
    with pytest.raises(ValueError, match="q must have shape"):
        L.solve_sylvester(T(A), T(B), T(Q.T))


def test_banded_solvers():
    n = 5
    ab = RNG.normal(size=(4, n))  # l = 1, u = 2
    ab[1 + 2] += 6.0  # dominant diagonal (row u)
    b = RNG.normal(size=(n, 2))
    np.testing.assert_allclose(V(L.solve_banded((1, 2), T(ab), T(b))),
                               sl.solve_banded((1, 2), ab, b), rtol=1e-12)
    assert gradcheck(lambda ab, b: L.solve_banded((1, 2), ab, b), (T(ab), T(b[:, 0])))
    hb = RNG.normal(size=(2, n))
    hb[1] = 4.0 + RNG.uniform(size=n)  # upper form: diagonal in the last row
    for lower, abh in ((False, hb), (True, hb[::-1].copy())):
        if lower:
            abh[1] = np.roll(abh[1], -1)  # lower form: sub-diagonal shifted left
        np.testing.assert_allclose(V(L.solveh_banded(T(abh), T(b), lower=lower)),
                                   sl.solveh_banded(abh, b, lower=lower), rtol=1e-12)
    assert gradcheck(lambda ab, b: L.solveh_banded(ab, b), (T(hb), T(b)))
    with pytest.raises(ValueError, match="ab must have shape"):
        L.solve_banded((1, 1), T(ab), T(b))


def test_factor_and_solve():
    b = RNG.normal(size=(3, 2))
    for lower in (False, True):
        c, low = L.cho_factor(T(SPD), lower=lower)
        ref = sl.cho_factor(SPD, lower=lower)[0]
        tri = np.tril if lower else np.triu
        np.testing.assert_allclose(V(c), tri(ref), rtol=1e-12)
        np.testing.assert_allclose(V(L.cho_solve((c, low), T(b))), np.linalg.solve(SPD, b),
                                   rtol=1e-12)
    assert gradcheck(lambda a, b: L.cho_solve(L.cho_factor(a), b), (T(SPD), T(b)))

    a = RNG.normal(size=(4, 4))
    lu, piv = L.lu_factor(T(a))
    ref_lu, ref_piv = sl.lu_factor(a)
    np.testing.assert_allclose(V(lu), ref_lu, rtol=1e-12, atol=1e-14)
    np.testing.assert_array_equal(piv, ref_piv)
    b4 = RNG.normal(size=4)
    for trans in (0, 1):
        np.testing.assert_allclose(V(L.lu_solve((lu, piv), T(b4), trans=trans)),
                                   sl.lu_solve((ref_lu, ref_piv), b4, trans=trans), rtol=1e-11)
    assert gradcheck(lambda a, b: L.lu_solve(L.lu_factor(a), b), (T(a), T(b4)))
    assert gradcheck(lambda a, b: L.lu_solve(L.lu_factor(a), b, trans=1), (T(a), T(b4)))
    assert gradgradcheck(lambda a: L.lu_factor(a)[0], (T(a[:3, :3]),))


@pytest.mark.parametrize("name", ["triangular", "two negative", "random", "complex input"])
def test_sqrtm_with_eigenvalues_on_the_negative_axis_is_scipys_complex_root(name):
    rng = np.random.default_rng(11)
    a = {"triangular": np.array([[-4.0, 1.0], [0.0, 9.0]]),
         "two negative": np.array([[-1.0, 0.5], [0.2, -4.0]]),
         "random": np.array([[1.2, -0.4, 0.3], [0.7, -2.0, 0.1], [0.2, 0.5, 0.8]]),
         "complex input": np.array([[-4.0, 1.0 + 1.0j], [0.0, 2.0 - 1.0j]])}[name]
    assert (np.linalg.eigvals(a).real < 0).any()
    ref = sl.sqrtm(a)
    assert ref.dtype == np.complex128
    x = L.sqrtm(nd.tensor(a))
    assert x.dtype == ref.dtype
    np.testing.assert_allclose(V(x), ref, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(V(x @ x), a, rtol=1e-12, atol=1e-13)
    if a.dtype.kind == "c":
        return  # (a complex A on the cut: the root jumps across it, no derivative)
    # the derivative of the complex root of a real A against central differences of
    # SciPy's: forward (a jvp along a real direction) and reverse (a real loss's gradient)
    e = rng.normal(size=a.shape)
    h = 1e-6
    fd = (sl.sqrtm(a + h * e) - sl.sqrtm(a - h * e)) / (2 * h)
    _, t = jvp(L.sqrtm, (nd.tensor(a),), (nd.tensor(e),))
    np.testing.assert_allclose(V(t), fd, rtol=1e-7, atol=1e-8)
    w = rng.normal(size=a.shape) + 1j * rng.normal(size=a.shape)

    def loss(m):
        return np.real(np.sum(np.conj(w) * sl.sqrtm(m)))
    g = nd.func.grad(lambda m: nd.real((nd.conj(nd.tensor(w)) * L.sqrtm(m)).sum()))(
        nd.tensor(a))
    fd_g = np.zeros(a.shape)
    for idx in np.ndindex(a.shape):
        d = np.zeros(a.shape)
        d[idx] = h
        fd_g[idx] = (loss(a + d) - loss(a - d)) / (2 * h)
    assert g.dtype == np.float64
    np.testing.assert_allclose(V(g), fd_g, rtol=1e-7, atol=1e-8)


def test_sqrtm_keeps_scipys_dtypes():
    neg = np.array([[-4.0, 1.0], [0.0, 9.0]])
    for dtype in (np.float32, np.float64):
        for m in (neg, -neg):  # (-neg: eigenvalues 4 and -9)
            assert L.sqrtm(nd.tensor(m.astype(dtype))).dtype == sl.sqrtm(m.astype(dtype)).dtype
        pos = np.array([[4.0, 1.0], [0.0, 9.0]], dtype=dtype)
        assert L.sqrtm(nd.tensor(pos)).dtype == sl.sqrtm(pos).dtype == dtype
    np.testing.assert_allclose(V(L.sqrtm(nd.tensor(neg.astype(np.float32)))),
                               sl.sqrtm(neg.astype(np.float32)), rtol=1e-5, atol=1e-6)


def test_matrix_functions():
    m = SPD / 4 + np.array([[0.0, 0.3, 0.0], [0.0, 0.0, 0.2], [0.1, 0.0, 0.0]])  # non-symmetric
    np.testing.assert_allclose(V(L.sqrtm(T(m))), sl.sqrtm(m), rtol=1e-10)
    np.testing.assert_allclose(V(L.logm(T(m))), sl.logm(m), rtol=1e-9, atol=1e-12)
    m2 = m[:2, :2]  # 2 x 2 for the derivatives: the iterations are recorded op by op
    assert gradcheck(L.sqrtm, (T(m2),))
    assert gradcheck(L.logm, (T(m2),))
    e = RNG.normal(size=(3, 3))
    a = A / 3
    ex, fr = L.expm_frechet(T(a), T(e))
    ref_ex, ref_fr = sl.expm_frechet(a, e)
    np.testing.assert_allclose(V(ex), ref_ex, rtol=1e-12)
    np.testing.assert_allclose(V(fr), ref_fr, rtol=1e-11)
    # the Fréchet derivative is matrix_exp's jvp
    np.testing.assert_allclose(V(fr), V(jvp(L.matrix_exp, (T(a, False),), (T(e, False),))[1]),
                               rtol=1e-11)
    assert gradcheck(lambda a, e: L.expm_frechet(a, e, compute_expm=False), (T(a), T(e)))
    for side in ("right", "left"):
        u, p = L.polar(T(A), side=side)
        ru, rp = sl.polar(A, side=side)
        np.testing.assert_allclose(V(u), ru, rtol=1e-12, atol=1e-13)
        np.testing.assert_allclose(V(p), rp, rtol=1e-12, atol=1e-13)
    assert gradcheck(lambda a: L.polar(a)[1], (T(A),))


def test_special_matrices():
    c, r = RNG.normal(size=3), RNG.normal(size=4)
    np.testing.assert_allclose(V(L.toeplitz(T(c), T(r))), sl.toeplitz(c, r))
    np.testing.assert_allclose(V(L.toeplitz(T(c))), sl.toeplitz(c))
    np.testing.assert_allclose(V(L.circulant(T(c))), sl.circulant(c))
    assert gradcheck(L.toeplitz, (T(c), T(r)))
    assert gradcheck(L.circulant, (T(c),))
    x, y = RNG.normal(size=(2, 2)), RNG.normal(size=3)
    np.testing.assert_allclose(V(L.block_diag(T(x), T(y), T(2.0))), sl.block_diag(x, y, 2.0))
    assert gradcheck(lambda x, y: L.block_diag(x, y), (T(x), T(y)))
    d, e = RNG.normal(size=4), RNG.normal(size=3)
    w, v = L.eigh_tridiagonal(T(d), T(e))
    rw, rv = sl.eigh_tridiagonal(d, e)
    np.testing.assert_allclose(V(w), rw, rtol=1e-12)
    np.testing.assert_allclose(np.abs(np.sum(V(v) * rv, axis=0)), 1.0, rtol=1e-12)  # up to sign
    assert gradcheck(lambda d, e: L.eigh_tridiagonal(d, e, eigvals_only=True), (T(d), T(e)))


def test_compositions():
    # vmap over a batch of right-hand sides against a loop
    a, qs = A, RNG.normal(size=(3, 3, 2))
    out = vmap(lambda q: L.solve_sylvester(T(a, False), T(B, False), q))(T(qs, False))
    for k in range(3):
        np.testing.assert_allclose(V(out[k]), sl.solve_sylvester(a, B, qs[k]), rtol=1e-12)
    # jacrev of toeplitz's sum of squares: c[k]^2 appears 3, 4, 2 times in the 3 x 3 matrix
    c = RNG.normal(size=3)
    jc = jacrev(lambda c: nd.sum(L.toeplitz(c) ** 2))(T(c, False))
    np.testing.assert_allclose(V(jc), 2 * c * np.array([3.0, 4.0, 2.0]), rtol=1e-13)
