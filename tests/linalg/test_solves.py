"""ndgrad.linalg, part A: solves, determinants, Cholesky, norms and products.

The registry-driven suites (tests/test_op_properties.py, tests/test_op_batching.py,
tests/forward_ad) check every rule against finite differences and vmap against a loop. Here:
identities, NumPy / SciPy as independent references, closed-form derivatives, the
behaviour the documentation promises at special points (singular and ill-scaled matrices,
zero vectors, ignored triangles), and the errors a user can cause.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg

import ndgrad
import ndgrad.forward_ad as fwAD
from ndgrad.checks import gradcheck, gradgradcheck
from ndgrad.functional import hvp
from support import val

LA = ndgrad.linalg
INF = float("inf")


def _rng(seed):
    return np.random.default_rng(seed)


def _rand(rng, shape, complex_=False):
    a = rng.standard_normal(shape)
    return a + 1j * rng.standard_normal(shape) if complex_ else a


def _mH(a):
    return np.conj(np.swapaxes(a, -1, -2))


def _spd(rng, n, complex_=False, batch=()):
    a = _rand(rng, batch + (n, n), complex_)
    return a @ _mH(a) + n * np.eye(n)


def _well(rng, n, complex_=False, batch=()):
    """A well-conditioned square matrix."""
    return _rand(rng, batch + (n, n), complex_) / np.sqrt(n) + 2.0 * np.eye(n)


def _grad(f, *arrays):
    """Gradients of the real scalar ``f(*tensors)`` at ``arrays``."""
    xs = [ndgrad.tensor(a, requires_grad=True) for a in arrays]
    f(*xs).backward()
    grads = [x.grad.cpu().numpy() for x in xs]
    return grads[0] if len(grads) == 1 else grads


def _t(a):
    return ndgrad.tensor(a)


# ----------------------------------------------------------------------------- solve, inv
@pytest.mark.parametrize("complex_", [False, True])
def test_solve_matches_inverse_times_b(complex_):
    rng = _rng(0)
    a = _well(rng, 3, complex_, batch=(2,))
    b = _rand(rng, (4, 1, 3, 2), complex_)  # batch dimensions broadcast with a's
    x = val(LA.solve(_t(a), _t(b)))
    assert x.shape == (4, 2, 3, 2)
    np.testing.assert_allclose(x, np.linalg.inv(a) @ b, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(x, val(LA.inv(_t(a)) @ _t(b)), rtol=1e-12, atol=1e-12)


def test_solve_vector_rule_is_numpy2s():
    """A 1-D b is a vector for every batch of a; a 2-D b is a matrix, never a stack of
    vectors."""
    rng = _rng(1)
    a = _well(rng, 3, batch=(2,))
    b = rng.standard_normal(3)
    x = val(LA.solve(_t(a), _t(b)))
    assert x.shape == (2, 3)
    np.testing.assert_allclose(x, np.stack([np.linalg.solve(m, b) for m in a]), rtol=1e-12)
    bs = rng.standard_normal((2, 3))  # two vectors? no: one 2 x 3 matrix, which does not fit
    with pytest.raises(ValueError, match=r"b\[\.\.\., None\]"):
        LA.solve(_t(a), _t(bs))
    x = val(LA.solve(_t(a), _t(bs[..., None])))[..., 0]
    np.testing.assert_allclose(x, np.stack([np.linalg.solve(m, v) for m, v in zip(a, bs)]),
                               rtol=1e-12)


@pytest.mark.parametrize("complex_", [False, True])
def test_solve_gradients_closed_form(complex_):
    """gb = a^-H g and ga = -gb x^H, for a vector and for a matrix right-hand side."""
    rng = _rng(2)
    a = _well(rng, 3, complex_)
    for b in (_rand(rng, (3,), complex_), _rand(rng, (3, 2), complex_)):
        g = _rand(rng, b.shape, complex_)
        ga, gb = _grad(lambda A, B, g=g: ndgrad.real(ndgrad.sum(LA.solve(A, B) * _t(np.conj(g)))),
                       a, b)
        x = np.linalg.solve(a, b)
        gb_ref = np.linalg.solve(_mH(a), g)
        np.testing.assert_allclose(gb, gb_ref, rtol=1e-10, atol=1e-12)
        ga_ref = -np.outer(gb_ref, np.conj(x)) if b.ndim == 1 else -gb_ref @ _mH(x)
        np.testing.assert_allclose(ga, ga_ref, rtol=1e-10, atol=1e-12)


def test_inverse_gradient_and_hessian_vector_product():
    rng = _rng(3)
    a = _well(rng, 3)
    g = rng.standard_normal((3, 3))
    ga = _grad(lambda A: ndgrad.sum(LA.inv(A) * _t(g)), a)
    ai = np.linalg.inv(a)
    np.testing.assert_allclose(ga, -ai.T @ g @ ai.T, rtol=1e-10, atol=1e-12)
    assert gradgradcheck(lambda A: LA.inv(A), (ndgrad.tensor(a, requires_grad=True),))


# ----------------------------------------------------------------------------- det, slogdet
@pytest.mark.parametrize("complex_", [False, True])
def test_det_gradient_is_det_times_inverse_transpose(complex_):
    rng = _rng(4)
    a = _well(rng, 3, complex_, batch=(2,))
    d = val(LA.det(_t(a)))
    np.testing.assert_allclose(d, np.linalg.det(a), rtol=1e-12)
    g = _rand(rng, (2,), complex_)
    ga = _grad(lambda A: ndgrad.real(ndgrad.sum(LA.det(A) * _t(np.conj(g)))), a)
    # PyTorch's convention: g * conj(d det / dA) = g * conj(det * A^-T)
    expected = g[:, None, None] * np.conj(d[:, None, None] * np.swapaxes(np.linalg.inv(a), -1,
                                                                         -2))
    np.testing.assert_allclose(ga, expected, rtol=1e-10, atol=1e-12)


def test_det_gradient_at_singular_matrices_is_the_cofactor_matrix():
    """det is a polynomial: at a singular matrix its gradient is the cofactor matrix (from the
    SVD, where the solve would fail), zero when the rank is below n - 1."""
    a = np.array([[1.0, 2.0], [2.0, 4.0]])
    np.testing.assert_allclose(_grad(LA.det, a), [[4.0, -2.0], [-2.0, 1.0]], atol=1e-12)
    a3 = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]])
    cof = np.array([[4.0, 4.0, -4.0], [-2.0, -2.0, 2.0], [0.0, 0.0, 0.0]])
    np.testing.assert_allclose(_grad(LA.det, a3), cof, atol=1e-12)
    np.testing.assert_allclose(_grad(LA.det, np.zeros((3, 3))), np.zeros((3, 3)), atol=1e-12)
    # forward mode reads the same cofactors: d det along e = sum(cof * e)
    e = _rng(5).standard_normal((3, 3))
    with fwAD.dual_level():
        out = LA.det(fwAD.make_dual(_t(a3), _t(e)))
        tangent = fwAD.unpack_dual(out).tangent
    np.testing.assert_allclose(tangent.cpu().numpy(), np.sum(cof * e), atol=1e-12)


@pytest.mark.parametrize("complex_", [False, True])
def test_slogdet_matches_log_abs_det(complex_):
    rng = _rng(6)
    a = _well(rng, 3, complex_, batch=(2, 2))
    r = LA.slogdet(_t(a))
    assert type(r).__name__ == "SlogdetResult" and r.sign is r[0] and r.logabsdet is r[1]
    d = np.linalg.det(a)
    np.testing.assert_allclose(val(r.logabsdet), np.log(np.abs(d)), rtol=1e-12)
    np.testing.assert_allclose(val(r.sign), d / np.abs(d), rtol=1e-12)


@pytest.mark.parametrize("complex_", [False, True])
def test_logdet_gradient_is_inverse_transpose(complex_):
    """d/dA log|det A| = A^-T; PyTorch's convention conjugates it for complex A."""
    rng = _rng(7)
    a = _well(rng, 4, complex_)
    ga = _grad(lambda A: LA.slogdet(A).logabsdet, a)
    np.testing.assert_allclose(ga, np.conj(np.linalg.inv(a).T), rtol=1e-10, atol=1e-12)


def test_complex_slogdet_sign_gradient():
    """sign = det / |det| has a derivative for complex input: d sign = i sign Im tr(A^-1 dA);
    the gradient of Re(conj(c) sign) is then -i Im(conj(c) sign) A^-H."""
    rng = _rng(8)
    a = _well(rng, 3, True)
    c = 0.3 - 1.2j
    ga = _grad(lambda A: ndgrad.real(LA.slogdet(A).sign * np.conj(c)), a)
    sign = np.linalg.slogdet(a)[0]
    expected = -1j * np.imag(np.conj(c) * sign) * _mH(np.linalg.inv(a))
    np.testing.assert_allclose(ga, expected, rtol=1e-10, atol=1e-12)


def test_slogdet_of_an_ill_scaled_matrix():
    """1e-200 * A: det underflows to 0, slogdet and its gradient stay exact."""
    rng = _rng(9)
    a = _well(rng, 3)
    s = 1e-200 * a
    assert LA.det(_t(s)).item() == 0.0
    sign, logabsdet = LA.slogdet(_t(s))
    sa, la = np.linalg.slogdet(a)
    assert sign.item() == sa
    np.testing.assert_allclose(logabsdet.item(), la + 3 * np.log(1e-200), rtol=1e-14)
    ga = _grad(lambda A: LA.slogdet(A).logabsdet, s)
    np.testing.assert_allclose(ga, np.linalg.inv(a).T * 1e200, rtol=1e-10)


def test_logdet_hessian_vector_product():
    """d/dt grad logdet(A + tV) = -(A^-1 V A^-1)^T: forward over reverse through the vjp."""
    rng = _rng(10)
    a = _spd(rng, 3)
    v = rng.standard_normal((3, 3))
    _, hv = hvp(lambda A: LA.slogdet(A).logabsdet, _t(a), _t(v))
    ai = np.linalg.inv(a)
    np.testing.assert_allclose(hv.cpu().numpy(), -(ai @ v @ ai).T, rtol=1e-10, atol=1e-12)


# ----------------------------------------------------------------------------- cholesky
@pytest.mark.parametrize("complex_", [False, True])
@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_reconstructs(complex_, upper):
    rng = _rng(11)
    a = _spd(rng, 4, complex_, batch=(2,))
    f = val(LA.cholesky(_t(a), upper=upper))
    if upper:
        assert np.allclose(np.tril(f, -1), 0)
        np.testing.assert_allclose(_mH(f) @ f, a, rtol=1e-12, atol=1e-12)
    else:
        assert np.allclose(np.triu(f, 1), 0)
        np.testing.assert_allclose(f @ _mH(f), a, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(f, np.linalg.cholesky(a, upper=upper), rtol=1e-12, atol=1e-14)
    assert np.all(np.diagonal(f, axis1=-2, axis2=-1).real > 0)


@pytest.mark.parametrize("complex_", [False, True])
def test_cholesky_gradient_matches_finite_differences_in_every_entry(complex_):
    """The function factors the Hermitian part, so the (Hermitian) gradient is the exact
    derivative, upper entries included."""
    rng = _rng(12)
    a = _spd(rng, 3, complex_)
    x = ndgrad.tensor(a, requires_grad=True)
    assert gradcheck(LA.cholesky, (x,))
    assert gradcheck(lambda t: LA.cholesky(t, upper=True), (x,))
    g = _rand(rng, (3, 3), complex_)
    ga = _grad(lambda t: ndgrad.real(ndgrad.sum(LA.cholesky(t) * _t(np.conj(g)))), a)
    np.testing.assert_allclose(ga, _mH(ga), atol=1e-12)
    # a direction along which only the (otherwise ignored) upper triangle moves
    e = np.triu(_rand(rng, (3, 3), complex_), 1)
    h = 1e-6
    fd = (np.linalg.cholesky((a + h * e + _mH(a + h * e)) / 2)
          - np.linalg.cholesky((a - h * e + _mH(a - h * e)) / 2)) / (2 * h)
    np.testing.assert_allclose(np.real(np.sum(np.conj(g) * fd)), np.real(np.sum(np.conj(ga) * e)),
                               rtol=1e-6)


def test_cholesky_log_determinant_identity():
    """logdet A = 2 sum log diag(L): the gradients through cholesky and slogdet agree."""
    rng = _rng(13)
    a = _spd(rng, 4)
    via_chol = _grad(lambda t: 2 * ndgrad.sum(ndgrad.log(LA.diagonal(LA.cholesky(t)))), a)
    np.testing.assert_allclose(via_chol, np.linalg.inv(a).T, rtol=1e-10, atol=1e-12)
    assert gradgradcheck(lambda t: LA.cholesky(t), (ndgrad.tensor(a, requires_grad=True),))


# ----------------------------------------------------------------------------- triangular
@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("left", [False, True])
@pytest.mark.parametrize("unit", [False, True])
def test_solve_triangular_matches_scipy(upper, left, unit):
    rng = _rng(14)
    a = rng.standard_normal((2, 3, 3)) + 3 * np.eye(3)  # junk in the ignored triangle
    b = rng.standard_normal((3, 2) if left else (2, 3))
    x = val(LA.solve_triangular(_t(a), _t(b), upper=upper, left=left, unitriangular=unit))
    for k in range(2):
        if left:
            ref = scipy.linalg.solve_triangular(a[k], b, lower=not upper, unit_diagonal=unit)
        else:
            ref = scipy.linalg.solve_triangular(a[k].T, b.T, lower=upper,
                                                unit_diagonal=unit).T
        np.testing.assert_allclose(x[k], ref, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("complex_", [False, True])
def test_solve_triangular_large_systems_use_the_same_semantics(complex_):
    """n >= 48 goes to LAPACK's triangular solve, smaller systems to a masked LU solve
    (Note [Small triangular solves]): same results and gradients."""
    rng = _rng(15)
    n = 60
    a = np.tril(_rand(rng, (n, n), complex_)) / np.sqrt(n) + 2 * np.eye(n) + \
        np.triu(_rand(rng, (n, n), complex_), 1)  # junk above the diagonal
    b = _rand(rng, (n, 2), complex_)
    x = val(LA.solve_triangular(_t(a), _t(b), upper=False))
    np.testing.assert_allclose(np.tril(a) @ x, b, rtol=1e-10, atol=1e-10)
    xr = val(LA.solve_triangular(_t(a), _t(b.T.copy()), upper=False, left=False))
    np.testing.assert_allclose(xr @ np.tril(a), b.T, rtol=1e-10, atol=1e-10)
    g = _rand(rng, (n, 2), complex_)
    ga = _grad(lambda A: ndgrad.real(ndgrad.sum(
        LA.solve_triangular(A, _t(b), upper=False) * _t(np.conj(g)))), a)
    gb = np.linalg.solve(_mH(np.tril(a)), g)
    np.testing.assert_allclose(ga, np.tril(-gb @ _mH(x)), rtol=1e-8, atol=1e-10)


def test_solve_triangular_ignores_the_other_triangle():
    rng = _rng(16)
    a = np.tril(rng.standard_normal((3, 3))) + 3 * np.eye(3)
    junk = a + np.triu(rng.standard_normal((3, 3)), 1)
    b = rng.standard_normal((3, 2))
    x1 = val(LA.solve_triangular(_t(a), _t(b), upper=False))
    x2 = val(LA.solve_triangular(_t(junk), _t(b), upper=False))
    np.testing.assert_array_equal(x1, x2)
    ga = _grad(lambda A: ndgrad.sum(LA.solve_triangular(A, _t(b), upper=False,
                                                        unitriangular=True)), junk)
    assert np.all(np.triu(ga) == 0) and np.any(np.tril(ga, -1) != 0)


@pytest.mark.parametrize("complex_", [False, True])
@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_solve_matches_solve(complex_, upper):
    rng = _rng(17)
    a = _spd(rng, 3, complex_, batch=(2,))
    f = np.linalg.cholesky(a, upper=upper)
    b = _rand(rng, (3, 2), complex_)
    x = val(LA.cholesky_solve(_t(b), _t(f), upper=upper))
    np.testing.assert_allclose(x, np.linalg.solve(a, b), rtol=1e-10, atol=1e-12)
    g = _rand(rng, (2, 3, 2), complex_)
    gb, gf = _grad(lambda B, Fa: ndgrad.real(ndgrad.sum(
        LA.cholesky_solve(B, Fa, upper=upper) * _t(np.conj(g)))), b, f)
    np.testing.assert_allclose(gb, np.sum(np.linalg.solve(a, g), axis=0), rtol=1e-10)
    zero = np.tril(gf, -1) if upper else np.triu(gf, 1)  # the triangle that is not read
    assert np.all(zero == 0)
    assert gradcheck(lambda B, Fa: LA.cholesky_solve(B, Fa, upper=upper),
                     (ndgrad.tensor(b, requires_grad=True), ndgrad.tensor(f, requires_grad=True)))


# ----------------------------------------------------------------------------- pinv, lstsq
@pytest.mark.parametrize("shape", [(4, 2), (2, 4), (3, 3)])
@pytest.mark.parametrize("complex_", [False, True])
def test_pinv_matches_numpy_and_finite_differences(shape, complex_):
    rng = _rng(18)
    a = _rand(rng, (2,) + shape, complex_)
    p = val(LA.pinv(_t(a)))
    np.testing.assert_allclose(p, np.linalg.pinv(a), rtol=1e-10, atol=1e-12)
    assert gradcheck(LA.pinv, (ndgrad.tensor(a, requires_grad=True),))
    if shape[0] == shape[1]:  # invertible: the gradient of pinv is that of inv
        g = _rand(rng, a.shape, complex_)
        f = lambda f: lambda A: ndgrad.real(ndgrad.sum(f(A) * _t(np.conj(g))))  # noqa: E731
        np.testing.assert_allclose(_grad(f(LA.pinv), a), _grad(f(LA.inv), a), rtol=1e-8,
                                   atol=1e-10)


def test_pinv_of_a_rank_deficient_matrix_at_constant_rank():
    """Along perturbations that keep the rank (here: a = u v^T moved through u and v) the
    pseudo-inverse is smooth and the gradient is right."""
    rng = _rng(19)
    u, v = rng.standard_normal((4, 1)), rng.standard_normal((3, 1))
    g = rng.standard_normal((3, 4))
    uu = ndgrad.tensor(u, requires_grad=True)
    vv = ndgrad.tensor(v, requires_grad=True)
    assert gradcheck(lambda x, y: LA.pinv(x @ ndgrad.matrix_transpose(y)), (uu, vv))
    np.testing.assert_allclose(val(LA.pinv(_t(u @ v.T))), np.linalg.pinv(u @ v.T), atol=1e-12)
    assert np.isfinite(_grad(lambda a: ndgrad.sum(LA.pinv(a) * _t(g)), u @ v.T)).all()


@pytest.mark.parametrize("complex_", [False, True])
def test_pinv_hermitian(complex_):
    rng = _rng(20)
    a = _spd(rng, 3, complex_) - 4 * np.eye(3)  # indefinite, invertible
    np.testing.assert_allclose(val(LA.pinv(_t(a), hermitian=True)), np.linalg.inv(a),
                               rtol=1e-10, atol=1e-12)
    x = ndgrad.tensor(a, requires_grad=True)
    assert gradcheck(lambda t: LA.pinv(t, hermitian=True), (x,))


@pytest.mark.parametrize("complex_", [False, True])
def test_pinv_hermitian_rules_differentiate_as_the_function(complex_):
    """The rules read the Hermitian part of a, which is what is pseudo-inverted: reverse mode
    through the jvp rule, and through the vjp rule with a general cotangent, agree with
    central differences of the gradient in every direction, not only Hermitian ones."""
    from ndgrad import func
    rng = _rng(21)
    a = _spd(rng, 3, complex_) - 4 * np.eye(3)
    v, w = _rand(rng, (3, 3), complex_), _rand(rng, (3, 3), complex_)

    def pinv(t):
        return LA.pinv(t, hermitian=True)

    def pair(c, y):  # re <c, y>
        return ndgrad.real(ndgrad.sum(ndgrad.conj(_t(c)) * y))

    def grad_of_pair(x):  # the gradient of re <w, pinv(x)>, first order
        return _grad(lambda t: pair(w, pinv(t)), x)

    eps = 1e-6
    expected = (grad_of_pair(a + eps * v) - grad_of_pair(a - eps * v)) / (2 * eps)
    over_jvp = func.grad(lambda t: pair(w, func.jvp(pinv, (t,), (_t(v),))[1]))(_t(a))
    over_vjp = func.grad(lambda t: pair(v, func.vjp(pinv, t)[1](_t(w))[0]))(_t(a))
    np.testing.assert_allclose(val(over_jvp), expected, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(val(over_vjp), expected, rtol=1e-6, atol=1e-7)


def test_lstsq_matches_numpy_and_pinv():
    rng = _rng(21)
    a = rng.standard_normal((5, 3))
    b = rng.standard_normal((5, 2))
    r = LA.lstsq(_t(a), _t(b))
    assert type(r).__name__ == "LstsqResult"
    ref = np.linalg.lstsq(a, b, rcond=None)
    np.testing.assert_allclose(val(r.solution), ref[0], rtol=1e-10)
    np.testing.assert_allclose(val(r.residuals), ref[1], rtol=1e-10)
    assert r.rank.item() == ref[2] == 3 and r.rank.dtype == np.int64
    np.testing.assert_allclose(val(r.singular_values), ref[3], rtol=1e-12)
    np.testing.assert_allclose(val(r.residuals), np.sum((b - a @ ref[0]) ** 2, axis=0),
                               rtol=1e-10)
    # the solution's gradient is that of pinv(a) @ b; the residuals' that of ||b - a x||^2
    ga, gb = _grad(lambda A, B: ndgrad.sum(LA.lstsq(A, B).solution), a, b)
    ga2, gb2 = _grad(lambda A, B: ndgrad.sum(LA.pinv(A) @ B), a, b)
    np.testing.assert_allclose(ga, ga2, rtol=1e-12)
    np.testing.assert_allclose(gb, gb2, rtol=1e-12)
    assert gradcheck(lambda A, B: LA.lstsq(A, B)[:2],
                     (ndgrad.tensor(a, requires_grad=True), ndgrad.tensor(b, requires_grad=True)))


def test_lstsq_shapes_and_rank_deficiency():
    rng = _rng(22)
    a = rng.standard_normal((2, 4, 3))  # batched, unlike NumPy's
    b = rng.standard_normal(4)  # a vector for every matrix
    r = LA.lstsq(_t(a), _t(b))
    assert r.solution.shape == (2, 3) and r.residuals.shape == (2, 1) and r.rank.shape == (2,)
    for k in range(2):
        ref = np.linalg.lstsq(a[k], b, rcond=None)
        np.testing.assert_allclose(val(r.solution)[k], ref[0], rtol=1e-10)
        np.testing.assert_allclose(val(r.residuals)[k], ref[1], rtol=1e-10)
    deficient = np.outer(rng.standard_normal(4), rng.standard_normal(3))
    r = LA.lstsq(_t(deficient), _t(b))
    ref = np.linalg.lstsq(deficient, b, rcond=None)
    assert r.rank.item() == ref[2] == 1
    assert r.residuals.shape == ref[1].shape == (0,)
    np.testing.assert_allclose(val(r.solution), ref[0], rtol=1e-10, atol=1e-12)
    wide = LA.lstsq(_t(rng.standard_normal((2, 3))), _t(rng.standard_normal((2, 2))))
    assert wide.residuals.shape == (0,)


# ----------------------------------------------------------------------------- norms
VECTOR_ORDS = [2, 1, INF, -INF, 0, 3, 0.5, -1.5]
MATRIX_ORDS = ["fro", "nuc", 1, -1, 2, -2, INF, -INF]


@pytest.mark.parametrize("complex_", [False, True])
def test_vector_norm_matches_numpy_for_every_ord(complex_):
    rng = _rng(23)
    x = _rand(rng, (2, 3, 4), complex_)
    for ord in VECTOR_ORDS:
        for axis, keepdims in ((None, False), (-1, False), ((0, 2), True), (1, True)):
            got = val(LA.vector_norm(_t(x), ord=ord, axis=axis, keepdims=keepdims))
            ref = np.linalg.vector_norm(x, ord=ord, axis=axis, keepdims=keepdims)
            np.testing.assert_allclose(got, ref, rtol=1e-12, err_msg=f"ord={ord}")


@pytest.mark.parametrize("complex_", [False, True])
def test_matrix_norm_matches_numpy_for_every_ord(complex_):
    rng = _rng(24)
    x = _rand(rng, (2, 3, 4), complex_)
    for ord in MATRIX_ORDS:
        for keepdims in (False, True):
            got = val(LA.matrix_norm(_t(x), ord=ord, keepdims=keepdims))
            ref = np.linalg.matrix_norm(x, ord=ord, keepdims=keepdims)
            np.testing.assert_allclose(got, ref, rtol=1e-12, err_msg=f"ord={ord}")


def test_norm_matches_numpy_linalg_norm():
    rng = _rng(25)
    v, m, t = rng.standard_normal(5), rng.standard_normal((3, 4)), rng.standard_normal((2, 3, 4))
    cases = [(v, {}), (m, {}), (t, {}), (t, {"keepdims": True})]
    cases += [(v, {"ord": o}) for o in VECTOR_ORDS]
    cases += [(m, {"ord": o}) for o in MATRIX_ORDS + [None]]
    cases += [(t, {"ord": o, "axis": ax, "keepdims": k}) for o in MATRIX_ORDS
              for ax in ((1, 2), (2, 0), (-1, -3)) for k in (False, True)]
    cases += [(t, {"ord": o, "axis": 1, "keepdims": k}) for o in (None, 1, INF) for k in
              (False, True)]
    for x, kw in cases:
        got = val(LA.norm(_t(x), **kw))
        ref = np.linalg.norm(x, **kw)
        assert got.shape == np.shape(ref), kw
        np.testing.assert_allclose(got, ref, rtol=1e-12, err_msg=str(kw))


def test_norm_gradients_closed_forms():
    rng = _rng(26)
    x = rng.standard_normal(5)
    np.testing.assert_allclose(_grad(LA.vector_norm, x), x / np.linalg.norm(x), rtol=1e-12)
    np.testing.assert_allclose(_grad(lambda t: LA.vector_norm(t, ord=1), x), np.sign(x))
    p = 3.0
    expected = np.sign(x) * np.abs(x) ** (p - 1) / np.linalg.norm(x, p) ** (p - 1)
    np.testing.assert_allclose(_grad(lambda t: LA.vector_norm(t, ord=p), x), expected,
                               rtol=1e-12)
    # a subgradient (0) at the zero vector, as PyTorch's, not NaN
    np.testing.assert_array_equal(_grad(LA.vector_norm, np.zeros(3)), np.zeros(3))
    # ties of the inf-norm share the gradient evenly
    np.testing.assert_allclose(_grad(lambda t: LA.vector_norm(t, ord=INF),
                                     np.array([1.0, -2.0, 2.0])), [0.0, -0.5, 0.5])
    # matrix norms: nuclear U V^T, spectral u1 v1^T, Frobenius X / ||X||
    m = rng.standard_normal((4, 3))
    u, s, vh = np.linalg.svd(m, full_matrices=False)
    np.testing.assert_allclose(_grad(lambda t: LA.matrix_norm(t, ord="nuc"), m), u @ vh,
                               rtol=1e-10)
    np.testing.assert_allclose(_grad(lambda t: LA.matrix_norm(t, ord=2), m),
                               np.outer(u[:, 0], vh[0]), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(_grad(LA.matrix_norm, m), m / np.linalg.norm(m), rtol=1e-12)


def test_complex_vector_norm_gradient():
    """A real function of complex x: the gradient is x |x|^(p-2) / ||x||^(p-1)."""
    rng = _rng(27)
    z = _rand(rng, (4,), True)
    for p in (2.0, 3.0, 1.0):
        expected = z * np.abs(z) ** (p - 2) / np.linalg.norm(z, p) ** (p - 1)
        np.testing.assert_allclose(_grad(lambda t, p=p: LA.vector_norm(t, ord=p), z), expected,
                                   rtol=1e-12)


# ----------------------------------------------------------------------------- matrix_exp
@pytest.mark.parametrize("complex_", [False, True])
def test_matrix_exp_matches_scipy(complex_):
    rng = _rng(28)
    # norms from 1e-3 to ~50: every Pade degree and up to several squarings, in one stack
    a = np.stack([_rand(rng, (4, 4), complex_) * s for s in (1e-3, 0.05, 0.3, 1.0, 3.0, 25.0)])
    got = val(LA.matrix_exp(_t(a)))
    ref = scipy.linalg.expm(a)
    scale = np.max(np.abs(ref), axis=(-2, -1), keepdims=True)
    np.testing.assert_allclose(got / scale, ref / scale, rtol=0, atol=1e-12)
    # the backend-ops Pade path, for backends without scipy (Note [Matrix exponential forward])
    from ndgrad.core.backend import NUMPY
    from ndgrad.core.ops.solves import _expm
    np.testing.assert_allclose(_expm(NUMPY, a) / scale, ref / scale, rtol=0, atol=1e-12)
    np.testing.assert_allclose(val(LA.matrix_exp(_t(np.zeros((2, 3, 3))))),
                               np.broadcast_to(np.eye(3), (2, 3, 3)))
    assert LA.matrix_exp(_t(np.ones((2, 2), dtype=np.float32))).dtype == np.float32


def test_matrix_exp_gradient_closed_form_and_finite_differences():
    """For a diagonal A the Frechet derivative is elementwise: L(A, E)_ij = E_ij times the
    divided difference (e^a_i - e^a_j) / (a_i - a_j) (e^a_i on the diagonal)."""
    d = np.array([0.3, -0.7, 1.1])
    g = _rng(29).standard_normal((3, 3))
    ga = _grad(lambda t: ndgrad.sum(LA.matrix_exp(t) * _t(g)), np.diag(d))
    ei, ej = np.exp(d)[:, None], np.exp(d)[None, :]
    with np.errstate(invalid="ignore", divide="ignore"):
        dd = np.where(np.eye(3, dtype=bool), ei, (ei - ej) / (d[:, None] - d[None, :]))
    np.testing.assert_allclose(ga, g * dd, rtol=1e-10)
    a = ndgrad.tensor(_rng(30).standard_normal((2, 3, 3)) * 0.7, requires_grad=True)
    assert gradcheck(LA.matrix_exp, (a,))
    assert gradgradcheck(LA.matrix_exp, (a,))


def test_matrix_exp_of_antisymmetric_matrices_is_a_rotation():
    theta = 0.4
    a = np.array([[0.0, -theta], [theta, 0.0]])
    r = val(LA.matrix_exp(_t(a)))
    np.testing.assert_allclose(r, [[np.cos(theta), -np.sin(theta)],
                                   [np.sin(theta), np.cos(theta)]], rtol=1e-14)


# ----------------------------------------------------------------------------- products
def test_matrix_power():
    rng = _rng(31)
    a = _well(rng, 3, batch=(2,))
    ai = np.linalg.inv(a)
    np.testing.assert_allclose(val(LA.matrix_power(_t(a), -2)), ai @ ai, rtol=1e-12)
    np.testing.assert_allclose(val(LA.matrix_power(_t(a), 5)), np.linalg.matrix_power(a, 5),
                               rtol=1e-12)
    np.testing.assert_allclose(val(LA.matrix_power(_t(a), 1)), a)
    x = ndgrad.tensor(a, requires_grad=True)
    eye = LA.matrix_power(x, 0)
    np.testing.assert_array_equal(eye.detach().cpu().numpy(), np.broadcast_to(np.eye(3), (2, 3, 3)))
    eye.sum().backward()
    np.testing.assert_array_equal(x.grad.cpu().numpy(), np.zeros((2, 3, 3)))
    g = rng.standard_normal((3, 3))
    # d/dA sum(G * A^2) = G A^T + A^T G
    np.testing.assert_allclose(_grad(lambda t: ndgrad.sum(LA.matrix_power(t, 2) * _t(g)), a[0]),
                               g @ a[0].T + a[0].T @ g, rtol=1e-12)
    assert gradcheck(lambda t: LA.matrix_power(t, -3), (ndgrad.tensor(a, requires_grad=True),))


def test_multi_dot_matches_chained_products_and_picks_the_cheap_order():
    from ndgrad.numpy.linear_algebra import _chain_order
    rng = _rng(32)
    a, b, c, d = (rng.standard_normal(s) for s in ((10, 100), (100, 5), (5, 50), (50, 1)))
    got = val(LA.multi_dot([_t(a), _t(b), _t(c), _t(d)]))
    np.testing.assert_allclose(got, a @ b @ c @ d, rtol=1e-12)
    np.testing.assert_allclose(val(LA.multi_dot([_t(a[0]), _t(b), _t(c[:, 0])])),
                               a[0] @ b @ c[:, 0], rtol=1e-12)
    # (10x100)(100x5) first: 5000 multiplications, then (10x5)(5x50): 2500 more
    assert _chain_order([10, 100, 5, 50])[0][2] == 1
    assert _chain_order([50, 5, 100, 10])[0][2] == 0
    xs = [ndgrad.tensor(rng.standard_normal(s), requires_grad=True)
          for s in ((2, 3), (3, 4), (4,))]
    assert gradcheck(lambda *t: LA.multi_dot(list(t)), tuple(xs))


def test_cross_matches_numpy_and_gradient_closed_form():
    rng = _rng(33)
    x, y = rng.standard_normal((2, 3)), rng.standard_normal((3,))
    np.testing.assert_allclose(val(LA.cross(_t(x), _t(y))), np.linalg.cross(x, y))
    xc, yc = rng.standard_normal((3, 2)), rng.standard_normal((3, 2))
    np.testing.assert_allclose(val(LA.cross(_t(xc), _t(yc), axis=0)),
                               np.linalg.cross(xc, yc, axis=0))
    g = rng.standard_normal((2, 3))
    gx, gy = _grad(lambda a, b: ndgrad.sum(LA.cross(a, b) * _t(g)), x, y)
    np.testing.assert_allclose(gx, np.cross(y, g), rtol=1e-12)  # <g, dx x y> = <y x g, dx>
    np.testing.assert_allclose(gy, np.sum(np.cross(g, x), axis=0), rtol=1e-12)


def test_matrix_rank_and_array_api_aliases():
    rng = _rng(34)
    a = np.stack([rng.standard_normal((4, 2)) @ rng.standard_normal((2, 3)),
                  rng.standard_normal((4, 3))])
    r = LA.matrix_rank(ndgrad.tensor(a, requires_grad=True))
    assert r.dtype == np.int64 and not r.requires_grad
    np.testing.assert_array_equal(r.cpu().numpy(), [2, 3])
    assert LA.matrix_rank(_t(a[1]), tol=1e3).item() == 0
    assert LA.matrix_rank(_t(a[1]), rtol=1e-15).item() == 3
    # array-API linalg names: the last two axes (the top-level ones take axis1=0, axis2=1)
    x = rng.standard_normal((2, 3, 3))
    np.testing.assert_allclose(val(LA.diagonal(_t(x), offset=1)), np.linalg.diagonal(x, offset=1))
    np.testing.assert_allclose(val(LA.trace(_t(x))), np.linalg.trace(x))
    for name in ("matmul", "matrix_transpose", "outer", "tensordot", "vecdot"):
        assert getattr(LA, name) is getattr(ndgrad, name)
    assert LA.LinAlgError is np.linalg.LinAlgError


# ----------------------------------------------------------------------------- errors
@pytest.mark.parametrize("name", ["solve", "inv", "det", "slogdet", "cholesky", "matrix_exp",
                                  "matrix_power"])
def test_square_matrices_are_required(name):
    f = getattr(LA, name)
    args = {"solve": (_t(np.ones(2)),), "matrix_power": (2,)}.get(name, ())
    with pytest.raises(np.linalg.LinAlgError, match=rf"{name}: `a` must be a square matrix .* "
                                                    r"got shape \(2, 3\)"):
        f(_t(np.ones((2, 3))), *args)


def test_singular_and_indefinite_matrices(device):
    s = _t(np.array([[1.0, 2.0], [2.0, 4.0]]))
    indefinite = _t(np.array([[1.0, 0.0], [0.0, -1.0]]))
    if device == "cpu":
        with pytest.raises(np.linalg.LinAlgError,
                           match="solve: the matrix `a` is singular.*lstsq"):
            LA.solve(s, _t(np.ones(2)))
        with pytest.raises(np.linalg.LinAlgError, match="inv: the matrix is singular"):
            LA.inv(s)
        with pytest.raises(np.linalg.LinAlgError, match="cholesky: the matrix is not positive "
                                                        "definite"):
            LA.cholesky(indefinite)
    else:
        # on a GPU nothing raises: the results are not finite (docs/devices.rst, "Singular
        # matrices do not raise")
        assert not np.isfinite(val(LA.solve(s, _t(np.ones(2))))).all()
        assert not np.isfinite(val(LA.inv(s))).all()
        for upper in (False, True):
            assert np.isnan(val(LA.cholesky(indefinite, upper=upper))).all()
        batch = val(LA.cholesky(_t(np.stack([np.eye(2), np.array([[1.0, 0.0],
                                                                  [0.0, -1.0]])]))))
        np.testing.assert_array_equal(batch[0], np.eye(2))  # only the failed one is NaN
        assert np.isnan(batch[1]).all()
    with pytest.raises(np.linalg.LinAlgError, match="solve_triangular: the triangular matrix "
                                                    "is singular"):
        LA.solve_triangular(_t(np.array([[1.0, 0.0], [1.0, 0.0]])), _t(np.ones((2, 1))),
                            upper=False)
    with pytest.raises(np.linalg.LinAlgError, match="matrix_power: .*square"):
        LA.matrix_power(_t(np.ones((2, 3))), -1)


def test_shape_errors():
    a = _t(np.eye(3))
    with pytest.raises(ValueError, match="solve: `a` has 3 rows but the vector `b` has 2"):
        LA.solve(a, _t(np.ones(2)))
    with pytest.raises(ValueError, match=r"batch dimensions \(2,\) and \(3,\)"):
        LA.solve(_t(np.ones((2, 3, 3)) + np.eye(3)), _t(np.ones((3, 3, 1))))
    with pytest.raises(ValueError, match=r"solve_triangular: `b` must be a matrix.*b\[\.\.\., "
                                         r"None\]"):
        LA.solve_triangular(a, _t(np.ones(3)), upper=True)
    with pytest.raises(ValueError, match="solve_triangular: `a` is 3 x 3 but `b`.* 2 columns"):
        LA.solve_triangular(a, _t(np.ones((3, 2))), upper=True, left=False)
    with pytest.raises(TypeError, match="upper"):
        LA.solve_triangular(a, _t(np.ones((3, 1))))
    with pytest.raises(ValueError, match=r"cholesky_solve: the factor `L` must be a square .*"
                                         r"shape \(3, 1\).*argument order is "
                                         r"cholesky_solve\(b, L\)"):
        LA.cholesky_solve(a, _t(np.ones((3, 1))))  # swapped arguments
    with pytest.raises(ValueError, match=r"cholesky_solve: `L` is 3 x 3 but `b` .* has 2 rows"):
        LA.cholesky_solve(_t(np.ones((2, 1))), a)
    with pytest.raises(ValueError, match="lstsq: `a` has 3 rows"):
        LA.lstsq(a, _t(np.ones(2)))
    with pytest.raises(ValueError, match="cross: both operands need 3 elements"):
        LA.cross(_t(np.ones(2)), _t(np.ones(2)))
    with pytest.raises(ValueError, match="cross: a non-negative axis"):
        LA.cross(_t(np.ones((3, 2))), _t(np.ones(3)), axis=0)
    with pytest.raises(ValueError, match="multi_dot: expecting at least two arrays"):
        LA.multi_dot([a])
    with pytest.raises(ValueError, match="multi_dot: arrays 0 and 1 do not chain"):
        LA.multi_dot([a, _t(np.ones((2, 2)))])
    with pytest.raises(np.linalg.LinAlgError, match="pinv: `a` must be a matrix"):
        LA.pinv(_t(np.ones(3)))
    with pytest.raises(ValueError, match="matrix_rank: give `tol`"):
        LA.matrix_rank(a, tol=1.0, rtol=1.0)


def test_parameter_errors():
    a = _t(np.eye(2))
    with pytest.raises(TypeError, match=r"matrix_power: the exponent n must be an integer, got "
                                        r"2\.5"):
        LA.matrix_power(a, 2.5)
    with pytest.raises(ValueError, match="vector_norm: ord must be a number.*matrix_norm"):
        LA.vector_norm(a, ord="fro")
    with pytest.raises(ValueError, match="matrix_norm: invalid norm order 3 for matrices"):
        LA.matrix_norm(a, ord=3)
    with pytest.raises(ValueError, match="matrix_norm: `x` must be a matrix"):
        LA.matrix_norm(_t(np.ones(3)))
    with pytest.raises(ValueError, match="norm: invalid norm order 'bad' for matrices"):
        LA.norm(a, ord="bad")
    with pytest.raises(ValueError, match="norm: ord must be a number"):
        LA.norm(_t(np.ones(3)), ord="fro")
    with pytest.raises(ValueError, match="norm: with an `ord` and no `axis`, `x` must be 1-D or "
                                         "2-D"):
        LA.norm(_t(np.ones((2, 2, 2))), ord=2)
    with pytest.raises(ValueError, match="norm: the two axes must differ"):
        LA.norm(a, axis=(0, -2))


def test_logdet_is_stable_and_its_gradient_is_the_inverse_transpose():
    rng = _rng(41)
    a = rng.standard_normal((3, 3)) + 3 * np.eye(3)
    a = a if np.linalg.det(a) > 0 else a[[1, 0, 2]]
    t = ndgrad.tensor(a * 1e-200, requires_grad=True)  # det underflows to 0; logdet does not
    got = LA.logdet(t)
    np.testing.assert_allclose(val(got), np.log(np.linalg.det(a)) - 3 * 200 * np.log(10),
                               rtol=1e-13)
    (g,) = ndgrad.autograd.grad(got, t)
    np.testing.assert_allclose(val(g) * 1e-200, np.linalg.inv(a).T, rtol=1e-10)
    assert np.isnan(val(LA.logdet(_t(a[[1, 0, 2]]))))          # det < 0
    assert val(LA.logdet(_t(np.zeros((2, 2))))) == -np.inf     # singular
    z = a + 1j * rng.standard_normal((3, 3))
    np.testing.assert_allclose(val(LA.logdet(_t(z))), np.log(np.linalg.det(z)), rtol=1e-12)
