"""ndgrad.linalg decompositions: eigh, eigvalsh, eig, eigvals, svd, svdvals, qr.

The registry-driven suites (tests/test_op_properties.py, tests/test_op_batching.py,
tests/forward_ad) already check every rule against finite differences and vmap against a
loop. Here: identities of the decompositions, NumPy / SciPy as references, closed-form
derivatives (eigenvalue and singular value gradients, matrix functions, Frobenius norms),
directional finite differences of gauge-invariant and gauge-dependent losses, and the
errors a user can cause.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg

import ndgrad
import ndgrad.forward_ad as fwAD
from ndgrad.functional import hvp
from support import fd_derivative

LA = ndgrad.linalg


def _rng(seed):
    return np.random.default_rng(seed)


def _rand(rng, shape, complex_):
    a = rng.standard_normal(shape)
    return a + 1j * rng.standard_normal(shape) if complex_ else a


def _hermitian(rng, n, complex_, batch=()):
    a = _rand(rng, batch + (n, n), complex_)
    return (a + np.conj(np.swapaxes(a, -1, -2))) / 2


def _mH(a):
    return np.conj(np.swapaxes(a, -1, -2))


def _grad(f, a):
    """Gradient of the real scalar ``f(tensor)`` at the array ``a``."""
    x = ndgrad.tensor(a, requires_grad=True)
    f(x).backward()
    return x.grad.cpu().numpy()


def _value(f, a):
    return float(f(ndgrad.tensor(a)).item())


def _fd(f, a, e):
    """Central difference of the real scalar ndgrad function ``f`` at ``a`` along ``e``."""
    return float(fd_derivative(lambda z: _value(f, z), a, e))


def _pair(g, e):
    """The real pairing <g, e> = Re tr(g^H e): the directional derivative along e of a loss
    whose gradient (PyTorch's convention) is g."""
    return float(np.real(np.sum(np.conj(g) * e)))


def _assert_pivots_positive(v):
    """The gauge ndgrad returns: each column's entry of largest magnitude is real > 0."""
    idx = np.argmax(np.abs(v), axis=-2)[..., None, :]
    piv = np.take_along_axis(v, idx, axis=-2)
    assert np.all(np.real(piv) > 0)
    np.testing.assert_allclose(np.imag(piv), 0, atol=1e-14)


COMPLEX = pytest.mark.parametrize("complex_", [False, True], ids=["real", "complex"])


# ----------------------------------------------------------------------------- eigh
@COMPLEX
def test_eigh_reconstructs_and_matches_numpy(complex_):
    a = _hermitian(_rng(0), 3, complex_, batch=(2,))
    res = LA.eigh(ndgrad.tensor(a))
    assert type(res).__name__ == "EighResult"
    lam, v = res.eigenvalues.cpu().numpy(), res.eigenvectors.cpu().numpy()
    assert lam.dtype == np.float64 and v.dtype == a.dtype
    np.testing.assert_allclose(lam, np.linalg.eigvalsh(a), rtol=1e-12, atol=1e-13)
    assert np.all(np.diff(lam, axis=-1) > 0)
    np.testing.assert_allclose(_mH(v) @ v, np.broadcast_to(np.eye(3), (2, 3, 3)), atol=1e-13)
    np.testing.assert_allclose((v * lam[..., None, :]) @ _mH(v), a, atol=1e-13)
    _assert_pivots_positive(v)
    # the same vectors as NumPy's, up to the sign / phase
    overlap = np.abs(np.sum(np.conj(v) * np.linalg.eigh(a)[1], axis=-2))
    np.testing.assert_allclose(overlap, 1.0, rtol=1e-12)


def test_eigh_decomposes_the_hermitian_part():
    a = _rand(_rng(1), (3, 3), True)  # not Hermitian
    h = (a + _mH(a)) / 2
    for uplo in "LU":
        lam, v = LA.eigh(ndgrad.tensor(a), UPLO=uplo)
        np.testing.assert_allclose(lam.cpu().numpy(), np.linalg.eigvalsh(h), rtol=1e-12)
        np.testing.assert_allclose(LA.eigvalsh(ndgrad.tensor(a), UPLO=uplo).cpu().numpy(),
                                   np.linalg.eigvalsh(h), rtol=1e-12)
    # integer input computes in float64, as NumPy
    lam = LA.eigvalsh(ndgrad.tensor([[2, 1], [1, 2]]))
    assert lam.dtype == ndgrad.float64
    np.testing.assert_allclose(lam.cpu().numpy(), [1.0, 3.0], rtol=1e-14)


def test_eigh_float32_stays_float32():
    a = _hermitian(_rng(2), 3, False).astype(np.float32)
    x = ndgrad.tensor(a, requires_grad=True)
    lam, v = LA.eigh(x)
    assert lam.dtype == ndgrad.float32 and v.dtype == ndgrad.float32
    (lam.sum() + v.abs().sum()).backward()
    assert x.grad.dtype == ndgrad.float32


@COMPLEX
def test_eigenvalue_gradient_is_the_eigenvector_outer_product(complex_):
    a = _hermitian(_rng(3), 4, complex_)
    _, v = np.linalg.eigh(a)
    for k in range(4):
        expected = np.outer(v[:, k], np.conj(v[:, k]))
        np.testing.assert_allclose(_grad(lambda x, k=k: LA.eigh(x)[0][k], a), expected, atol=1e-12)
        np.testing.assert_allclose(_grad(lambda x, k=k: LA.eigvalsh(x)[k], a), expected, atol=1e-12)


@COMPLEX
def test_matrix_function_gradient_closed_form(complex_):
    # f(A) = V diag(sin L) V^H; d f = V (D o (V^H dA V)) V^H with the divided differences
    # D_ij = (sin l_i - sin l_j) / (l_i - l_j), D_ii = cos l_i (Daleckii-Krein)
    rng = _rng(4)
    a = _hermitian(rng, 4, complex_)
    w = _rand(rng, (4, 4), complex_)
    lam, v = np.linalg.eigh(a)
    d = np.subtract.outer(np.sin(lam), np.sin(lam)) / (np.subtract.outer(lam, lam) + np.eye(4))
    d[np.diag_indices(4)] = np.cos(lam)
    wh = (w + _mH(w)) / 2

    def loss(x):
        lam_, v_ = LA.eigh(x)
        fa = (v_ * ndgrad.sin(lam_)) @ ndgrad.conj(ndgrad.matrix_transpose(v_))
        return ndgrad.real(ndgrad.conj(ndgrad.tensor(w)) * fa).sum()

    g = _grad(loss, a)
    np.testing.assert_allclose(g, v @ (d * (_mH(v) @ wh @ v)) @ _mH(v), atol=1e-12)
    e = _hermitian(rng, 4, complex_)
    assert _pair(g, e) == pytest.approx(_fd(loss, a, e), rel=1e-7)


def test_eigh_phase_dependent_loss_matches_finite_differences():
    # a loss of the raw complex eigenvectors depends on their phase; ndgrad's phase (pivot
    # entry real positive) is a smooth function of the input, so the loss has a derivative
    rng = _rng(5)
    a = _hermitian(rng, 3, True)
    w1, w2 = rng.standard_normal((2, 3, 3))

    def loss(x):
        v = LA.eigh(x)[1]
        return (ndgrad.real(v) * ndgrad.tensor(w1) + ndgrad.imag(v) * ndgrad.tensor(w2)).sum()

    g = _grad(loss, a)
    for seed in range(3):
        e = _rand(_rng(100 + seed), (3, 3), True)  # any direction, Hermitian or not
        assert _pair(g, e) == pytest.approx(_fd(loss, a, e), rel=1e-6, abs=1e-9)


@COMPLEX
def test_eigh_gauge_invariant_loss_matches_finite_differences(complex_):
    rng = _rng(6)
    a = _hermitian(rng, 4, complex_, batch=(2,))
    w = rng.standard_normal((2, 4, 4))

    def loss(x):
        lam, v = LA.eigh(x)
        return (ndgrad.abs(v) ** 2 * ndgrad.tensor(w)).sum() + (lam ** 3).sum()

    g = _grad(loss, a)
    e = _rand(rng, a.shape, complex_)
    assert _pair(g, e) == pytest.approx(_fd(loss, a, e), rel=1e-6)


def test_sum_of_squared_eigenvalues_second_order():
    # sum(L^2) = ||herm(A)||_F^2: gradient 2 herm(A), Hessian-vector product 2 herm(E)
    rng = _rng(7)
    a = _hermitian(rng, 3, False) + 0.3 * rng.standard_normal((3, 3))
    e = rng.standard_normal((3, 3))
    for f in (lambda x: (LA.eigvalsh(x) ** 2).sum(), lambda x: (LA.eigh(x)[0] ** 2).sum()):
        np.testing.assert_allclose(_grad(f, a), a + a.T, atol=1e-12)
        _, hv = hvp(f, ndgrad.tensor(a), ndgrad.tensor(e))
        np.testing.assert_allclose(hv.cpu().numpy(), e + e.T, atol=1e-10)


def test_eigvalsh_forward_mode_and_jacobian():
    rng = _rng(8)
    a = _hermitian(rng, 3, False)
    e = _hermitian(rng, 3, False)
    _, v = np.linalg.eigh(a)
    with fwAD.dual_level():
        lam = LA.eigvalsh(fwAD.make_dual(ndgrad.tensor(a), ndgrad.tensor(e)))
        t = fwAD.unpack_dual(lam).tangent.cpu().numpy()
    np.testing.assert_allclose(t, np.einsum("ik,ij,jk->k", v, e, v), atol=1e-12)
    jac = ndgrad.func.jacrev(LA.eigvalsh)(ndgrad.tensor(a)).cpu().numpy()
    np.testing.assert_allclose(jac, np.einsum("ik,jk->kij", v, v), atol=1e-12)


def test_repeated_eigenvalues_keep_eigenvalue_gradients_finite():
    # the unused eigenvector cotangent is zero: its 1 / (l_j - l_i) = 1 / 0 must not make nans
    eye = np.eye(3)
    np.testing.assert_allclose(_grad(lambda x: (LA.eigh(x)[0] * ndgrad.tensor([1.0, 2.0, 3.0]))
                                     .sum(), eye).trace(), 6.0)
    np.testing.assert_allclose(_grad(lambda x: LA.eigh(x)[0].sum(), eye), eye, atol=1e-15)
    np.testing.assert_allclose(_grad(lambda x: LA.svd(x)[1].sum(), eye), eye, atol=1e-15)
    np.testing.assert_allclose(_grad(lambda x: ndgrad.real(LA.eig(x)[0]).sum(), eye), eye,
                               atol=1e-15)


# ----------------------------------------------------------------------------- svd
SHAPES = pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5)], ids=["square", "tall",
                                                                           "wide"])


@SHAPES
@COMPLEX
def test_svd_reconstructs_and_matches_numpy(shape, complex_):
    a = _rand(_rng(10), (2,) + shape, complex_)
    res = LA.svd(ndgrad.tensor(a))
    assert type(res).__name__ == "SVDResult"
    u, s, vh = res.U.cpu().numpy(), res.S.cpu().numpy(), res.Vh.cpu().numpy()
    k = min(shape)
    assert u.shape == (2, shape[0], k) and s.shape == (2, k) and vh.shape == (2, k, shape[1])
    np.testing.assert_allclose(s, np.linalg.svd(a, compute_uv=False), rtol=1e-12)
    np.testing.assert_allclose((u * s[..., None, :]) @ vh, a, atol=1e-12)
    np.testing.assert_allclose(_mH(u) @ u, np.broadcast_to(np.eye(k), (2, k, k)), atol=1e-13)
    np.testing.assert_allclose(vh @ _mH(vh), np.broadcast_to(np.eye(k), (2, k, k)), atol=1e-13)
    _assert_pivots_positive(u)
    np.testing.assert_allclose(LA.svdvals(ndgrad.tensor(a)).cpu().numpy(), s, rtol=1e-12)
    # full_matrices=True: NumPy's shapes, and the leading columns are the reduced ones
    uf, sf, vhf = LA.svd(ndgrad.tensor(a), full_matrices=True)
    assert uf.shape == (2,) + (shape[0],) * 2 and vhf.shape == (2,) + (shape[1],) * 2
    np.testing.assert_allclose(uf.cpu().numpy()[..., :k], u, atol=1e-13)
    np.testing.assert_allclose(vhf.cpu().numpy()[..., :k, :], vh, atol=1e-13)
    np.testing.assert_allclose(_mH(uf.cpu().numpy()) @ uf.cpu().numpy(),
                               np.broadcast_to(np.eye(shape[0]), (2,) + (shape[0],) * 2),
                               atol=1e-13)


@SHAPES
@COMPLEX
def test_singular_value_gradient_is_the_singular_vector_outer_product(shape, complex_):
    a = _rand(_rng(11), shape, complex_)
    u, _, vh = np.linalg.svd(a, full_matrices=False)
    for k in range(min(shape)):
        expected = np.outer(u[:, k], vh[k])
        np.testing.assert_allclose(_grad(lambda x, k=k: LA.svd(x)[1][k], a), expected, atol=1e-12)
        np.testing.assert_allclose(_grad(lambda x, k=k: LA.svdvals(x)[k], a), expected, atol=1e-12)


@SHAPES
@COMPLEX
def test_svd_gauge_invariant_losses(shape, complex_):
    rng = _rng(12)
    a = _rand(rng, shape, complex_)
    u, _, vh = np.linalg.svd(a, full_matrices=False)
    # the nuclear norm sum(S) has gradient U Vh
    np.testing.assert_allclose(_grad(lambda x: LA.svd(x)[1].sum(), a), u @ vh, atol=1e-12)
    w = _rand(rng, shape, complex_)

    def polar(x):  # a loss of the polar factor U Vh (invariant under the joint phase)
        uu, ss, vv = LA.svd(x)
        return ndgrad.real(ndgrad.conj(ndgrad.tensor(w)) * (uu @ vv)).sum() + (ss ** 3).sum()

    g = _grad(polar, a)
    e = _rand(rng, shape, complex_)
    assert _pair(g, e) == pytest.approx(_fd(polar, a, e), rel=1e-6)


def test_svd_phase_dependent_loss_matches_finite_differences():
    rng = _rng(13)
    a = _rand(rng, (4, 3), True)
    w1, w2 = rng.standard_normal((2, 4, 3))
    w3 = rng.standard_normal((3, 3))

    def loss(x):
        u, _, vh = LA.svd(x)
        return (ndgrad.real(u) * ndgrad.tensor(w1) + ndgrad.imag(u) * ndgrad.tensor(w2)).sum() \
            + (ndgrad.imag(vh) * ndgrad.tensor(w3)).sum()

    g = _grad(loss, a)
    e = _rand(rng, (4, 3), True)
    assert _pair(g, e) == pytest.approx(_fd(loss, a, e), rel=1e-6)


def test_frobenius_norm_through_singular_values_second_order():
    # sum(S^2) = ||A||_F^2: gradient 2 A, Hessian-vector product 2 E
    rng = _rng(14)
    a, e = rng.standard_normal((2, 4, 3))
    for f in (lambda x: (LA.svdvals(x) ** 2).sum(), lambda x: (LA.svd(x)[1] ** 2).sum()):
        np.testing.assert_allclose(_grad(f, a), 2 * a, atol=1e-12)
        _, hv = hvp(f, ndgrad.tensor(a), ndgrad.tensor(e))
        np.testing.assert_allclose(hv.cpu().numpy(), 2 * e, atol=1e-10)


# ----------------------------------------------------------------------------- qr
@SHAPES
@COMPLEX
def test_qr_reconstructs_and_matches_numpy(shape, complex_):
    a = _rand(_rng(20), (2,) + shape, complex_)
    res = LA.qr(ndgrad.tensor(a))
    assert type(res).__name__ == "QRResult"
    q, r = res.Q.cpu().numpy(), res.R.cpu().numpy()
    nq, nr = np.linalg.qr(a)
    np.testing.assert_allclose(q, nq, atol=1e-14)
    np.testing.assert_allclose(r, nr, atol=1e-14)
    np.testing.assert_allclose(q @ r, a, atol=1e-13)
    np.testing.assert_array_equal(r, np.triu(r))
    k = min(shape)
    np.testing.assert_allclose(_mH(q) @ q, np.broadcast_to(np.eye(k), (2, k, k)), atol=1e-13)
    r_only = LA.qr(ndgrad.tensor(a), mode="r")
    assert isinstance(r_only, ndgrad.Tensor)
    np.testing.assert_allclose(r_only.cpu().numpy(), np.linalg.qr(a, mode="r"), atol=1e-14)
    qc, rc = LA.qr(ndgrad.tensor(a), mode="complete")
    assert qc.shape == (2, shape[0], shape[0]) and rc.shape == (2,) + shape
    np.testing.assert_allclose(qc.cpu().numpy() @ rc.cpu().numpy(), a, atol=1e-13)


@SHAPES
@COMPLEX
def test_qr_gradient_matches_finite_differences(shape, complex_):
    rng = _rng(21)
    a = _rand(rng, shape, complex_)
    k = min(shape)
    wq, wr = _rand(rng, (shape[0], k), complex_), _rand(rng, (k, shape[1]), complex_)

    def loss(x):
        q, r = LA.qr(x)
        return ndgrad.real(ndgrad.conj(ndgrad.tensor(wq)) * q).sum() + \
            ndgrad.real(ndgrad.conj(ndgrad.tensor(wr)) * r ** 2).sum()

    g = _grad(loss, a)
    for seed in range(2):
        e = _rand(_rng(200 + seed), shape, complex_)
        assert _pair(g, e) == pytest.approx(_fd(loss, a, e), rel=1e-6)


@COMPLEX
def test_qr_r_mode_frobenius_norm(complex_):
    # for a tall A, ||R||_F = ||A||_F (Q has orthonormal columns): gradient 2 A
    a = _rand(_rng(22), (5, 3), complex_)
    f = lambda x: (ndgrad.abs(LA.qr(x, mode="r")) ** 2).sum()  # noqa: E731
    np.testing.assert_allclose(_grad(f, a), 2 * a, atol=1e-12)


# ----------------------------------------------------------------------------- eig, eigvals
def _nonsymmetric(rng, n, complex_):
    v = _rand(rng, (n, n), complex_) + 2 * np.eye(n)
    lam = np.arange(n) * 0.8 - 1.0 + (0.5j * rng.standard_normal(n) if complex_ else 0)
    return (v * lam) @ np.linalg.inv(v)


@COMPLEX
def test_eig_matches_numpy_up_to_phase(complex_):
    a = _nonsymmetric(_rng(30), 4, complex_)
    res = LA.eig(ndgrad.tensor(a))
    assert type(res).__name__ == "EigResult"
    lam, v = res.eigenvalues.cpu().numpy(), res.eigenvectors.cpu().numpy()
    assert lam.dtype == np.complex128 and v.dtype == np.complex128
    nlam, nv = np.linalg.eig(a)
    np.testing.assert_allclose(lam, nlam, rtol=1e-12)  # NumPy's order
    np.testing.assert_allclose(np.abs(np.sum(np.conj(v) * nv, axis=0)), 1.0, rtol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(v, axis=0), 1.0, rtol=1e-13)
    np.testing.assert_allclose(a @ v, v * lam, atol=1e-12)
    _assert_pivots_positive(v)
    np.testing.assert_allclose(LA.eigvals(ndgrad.tensor(a)).cpu().numpy(), lam, rtol=1e-12)


def test_eig_of_real_matrices_is_complex():
    lam = LA.eigvals(ndgrad.tensor([[0.0, -2.0], [2.0, 0.0]])).cpu().numpy()
    np.testing.assert_allclose(np.sort_complex(lam), [-2j, 2j], atol=1e-15)
    lam32, v32 = LA.eig(ndgrad.tensor(np.diag([1.0, 2.0]).astype(np.float32)))
    assert lam32.dtype == ndgrad.complex64 and v32.dtype == ndgrad.complex64


@COMPLEX
def test_eigenvalue_derivative_uses_left_eigenvectors(complex_):
    # d lambda_k = (w_k^H dA v_k) / (w_k^H v_k): the gradient of Re lambda_k is
    # conj(D_k) with D_k = conj(w_k) v_k^T / (w_k^H v_k) (its real part for a real A)
    a = _nonsymmetric(_rng(31), 3, complex_)
    lam = LA.eigvals(ndgrad.tensor(a)).cpu().numpy()
    slam, wl, vr = scipy.linalg.eig(a, left=True, right=True)
    for k in range(3):
        j = int(np.argmin(np.abs(slam - lam[k])))
        w, v = wl[:, j], vr[:, j]
        d = np.outer(np.conj(w), v) / (np.conj(w) @ v)
        for part, expected in ((ndgrad.real, np.conj(d)), (ndgrad.imag, 1j * np.conj(d))):
            exp = expected if complex_ else np.real(expected)
            np.testing.assert_allclose(_grad(lambda x, p=part, k=k: p(LA.eigvals(x)[k]), a), exp,
                                       atol=1e-11)
            np.testing.assert_allclose(_grad(lambda x, p=part, k=k: p(LA.eig(x)[0][k]), a), exp,
                                       atol=1e-11)


@COMPLEX
def test_eig_vector_losses_match_finite_differences(complex_):
    rng = _rng(32)
    a = _nonsymmetric(rng, 3, complex_)
    w = rng.standard_normal((3, 3))

    def invariant(x):
        lam, v = LA.eig(x)
        return (ndgrad.abs(v) ** 2 * ndgrad.tensor(w)).sum() + ndgrad.real(lam ** 2).sum()

    def phase_dependent(x):
        v = LA.eig(x)[1]
        return (ndgrad.real(v) * ndgrad.tensor(w) + ndgrad.imag(v)).sum()

    for loss in (invariant, phase_dependent):
        g = _grad(loss, a)
        e = _rand(rng, (3, 3), complex_)
        assert _pair(g, e) == pytest.approx(_fd(loss, a, e), rel=1e-6)


# ----------------------------------------------------------------------------- forward mode
FORWARD_CASES = [
    ("eigh", lambda rng, c: _hermitian(rng, 3, c, batch=(2,))),
    ("eig", lambda rng, c: _nonsymmetric(rng, 3, c)),
    ("svd", lambda rng, c: _rand(rng, (2, 4, 3), c)),
    ("svd", lambda rng, c: _rand(rng, (3, 4), c)),
    ("qr", lambda rng, c: _rand(rng, (2, 4, 3), c)),
    ("qr", lambda rng, c: _rand(rng, (3, 4), c)),
]


@pytest.mark.parametrize("name, make", FORWARD_CASES)
@COMPLEX
def test_dual_numbers_match_finite_differences(name, make, complex_):
    rng = _rng(50)
    a = make(rng, complex_)
    e = _rand(rng, a.shape, complex_)
    fn = getattr(LA, name)
    with fwAD.dual_level():
        outs = fn(fwAD.make_dual(ndgrad.tensor(a), ndgrad.tensor(e)))
        tangents = [fwAD.unpack_dual(o).tangent.cpu().numpy() for o in outs]
    h = 1e-6
    plus, minus = fn(ndgrad.tensor(a + h * e)), fn(ndgrad.tensor(a - h * e))
    for t, p, m in zip(tangents, plus, minus):
        np.testing.assert_allclose(t, (p.cpu().numpy() - m.cpu().numpy()) / (2 * h),
                                   rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("name, shape", [("eigh", (0, 0)), ("eig", (2, 0, 0)), ("svd", (0, 3)),
                                         ("svd", (3, 0)), ("qr", (0, 3)), ("qr", (3, 0)),
                                         ("eigvals", (0, 0)), ("svdvals", (3, 0))])
@COMPLEX
def test_empty_matrices(name, shape, complex_):
    a = np.zeros(shape, dtype=complex if complex_ else float)
    outs = getattr(LA, name)(ndgrad.tensor(a))
    outs = outs if isinstance(outs, tuple) else (outs,)
    expected = getattr(np.linalg, name)(a, **({"full_matrices": False} if name == "svd" else {}))
    expected = expected if isinstance(expected, tuple) else (expected,)
    assert [o.shape for o in outs] == [e.shape for e in expected]
    g = _grad(lambda x: sum(ndgrad.abs(o).sum() for o in _tuple(getattr(LA, name)(x))), a)
    assert g.shape == shape and g.dtype == a.dtype
    with fwAD.dual_level():
        outs = _tuple(getattr(LA, name)(fwAD.make_dual(ndgrad.tensor(a), ndgrad.tensor(a))))
        assert [fwAD.unpack_dual(o).tangent.shape for o in outs] == [e.shape for e in expected]


def _tuple(r):
    return r if isinstance(r, tuple) else (r,)


# ----------------------------------------------------------------------------- errors
@pytest.mark.parametrize("name", ["eigh", "eigvalsh", "eig", "eigvals"])
def test_square_input_is_required(name):
    fn = getattr(LA, name)
    with pytest.raises(LA.LinAlgError, match=rf"linalg.{name}: expected a square matrix or a "
                                         r"stack of square matrices .* got shape \(2, 3\)"):
        fn(ndgrad.ones(2, 3))
    with pytest.raises(LA.LinAlgError, match=rf"linalg.{name}: expected a matrix .*at least 2 "
                                         r"dimensions\), got shape \(3,\)"):
        fn(ndgrad.ones(3))


@pytest.mark.parametrize("name", ["svd", "svdvals", "qr"])
def test_matrix_input_is_required(name):
    with pytest.raises(LA.LinAlgError, match=rf"linalg.{name}: expected a matrix .*got shape "
                                         r"\(\)"):
        getattr(LA, name)(ndgrad.tensor(1.0))


def test_dtype_errors():
    with pytest.raises(TypeError, match="linalg.eigh: float16 is not supported .*cast the "
                                        "input to float32 or float64"):
        LA.eigh(ndgrad.ones(2, 2, dtype=ndgrad.float16))
    with pytest.raises(TypeError, match="linalg.svd: expected a floating point or complex "
                                        "matrix, got dtype <U1"):
        LA.svd(np.array([["a", "b"], ["c", "d"]]))


def test_parameter_errors():
    a = ndgrad.eye(2)
    with pytest.raises(ValueError, match="linalg.eigh: UPLO must be 'L' or 'U', got 'l'"):
        LA.eigh(a, UPLO="l")
    with pytest.raises(ValueError, match="linalg.eigvalsh: UPLO must be 'L' or 'U'"):
        LA.eigvalsh(a, UPLO=None)
    with pytest.raises(ValueError, match=r"linalg.qr: mode must be 'reduced', 'complete' or "
                                         r"'r', got 'raw' \(NumPy's 'raw' and 'economic' are "
                                         "not supported\\)"):
        LA.qr(a, mode="raw")
    with pytest.raises(TypeError, match="linalg.svd: full_matrices must be True or False, got "
                                        "'yes'"):
        LA.svd(a, full_matrices="yes")


def test_full_matrices_of_a_non_square_input_has_no_derivative():
    x = ndgrad.tensor(_rand(_rng(40), (4, 3), False), requires_grad=True)
    u, s, vh = LA.svd(x, full_matrices=True)
    assert u.shape == (4, 4)
    with pytest.raises(RuntimeError, match=r"linalg.svd: the decomposition with "
                                           r"full_matrices=True of a non-square input \(4 x 3\) "
                                           "is not differentiable: the 1 extra columns of U are an "
                                           "arbitrary basis of the complement. "
                                           "Use full_matrices=False"):
        s.sum().backward()
    with fwAD.dual_level():
        d = fwAD.make_dual(ndgrad.ones(2, 3), ndgrad.ones(2, 3))
        with pytest.raises(RuntimeError, match=r"non-square input \(2 x 3\)"):
            LA.svd(d, full_matrices=True)
    # a square input is fine
    y = ndgrad.tensor(_rand(_rng(41), (3, 3), False), requires_grad=True)
    LA.svd(y, full_matrices=True)[1].sum().backward()
    np.testing.assert_allclose(y.grad.cpu().numpy(), _grad(lambda t: LA.svd(t)[1].sum(),
                                                     y.detach().cpu().numpy()), atol=1e-13)


def test_complete_qr_of_a_tall_input_has_no_derivative():
    x = ndgrad.tensor(_rand(_rng(42), (4, 2), False), requires_grad=True)
    q, r = LA.qr(x, mode="complete")
    assert q.shape == (4, 4) and r.shape == (4, 2)
    with pytest.raises(RuntimeError, match=r"linalg.qr: mode='complete' of a tall input "
                                           r"\(4 x 2\) is not differentiable.*Use "
                                           "mode='reduced'"):
        r.sum().backward()
