"""Matrix decompositions of ``ndgrad.linalg``: eigh, eigvalsh, eig, eigvals, svd, svdvals, qr.

Every op takes a matrix or a stack of matrices (the last two dimensions; the leading ones
are batch dimensions), computes with LAPACK through the backend, and has a vjp, a jvp and a
batching rule (the op itself on the physical array: the batch dimension leads, the matrix
dimensions stay last). The derivative formulas are the standard ones (as in PyTorch's
``FunctionsManual.cpp``, re-derived here; each rule says what it computes), written with
``F`` ops only, so they differentiate again (second order, forward over reverse, vmap).
Functions that only return values (eigvalsh, eigvals, svdvals) recompute the vectors in
their rules, from the saved input.

Note [Gauge of eigenvectors and singular vectors]
-------------------------------------------------
An eigenvector (a pair of singular vectors) is defined up to a sign for real inputs and a
unit phase ``e^{i phi}`` for complex ones. LAPACK returns *some* choice, which may jump under
a tiny change of the input: then the outputs are not even continuous, a finite-difference
check of them is meaningless, and a loss that depends on the choice has no gradient.
ndgrad fixes the gauge in the forward: in every eigenvector of ``eigh`` / ``eig`` and every
left singular vector of ``svd`` (the right one follows, so that ``U diag(S) Vh`` is
unchanged) the entry of largest magnitude is made real and positive. For generic inputs this
choice (which row is the pivot) is locally constant, so the outputs are smooth functions of
the input and every derivative is well defined, for every loss.

The standard formulas assume another gauge (``Im(v_j^H dv_j) = 0``). The gauge fix is a
linear correction of the tangent: ``dv_j + i theta_j v_j`` with ``theta_j`` the real number
that keeps the pivot real, ``theta_j = -Im(dv_j[p_j]) / v_j[p_j]``; the jvp rules add it,
and the vjp rules apply its adjoint to the cotangent first,
``g_j + i (Im(g_j^H v_j) / v_j[p_j]) e_{p_j}`` (eigenvectors; svd moves the phase of ``u_j``
and ``v_j`` together). The adjoint projects the cotangent onto the gauge-invariant ones: for
a loss that does not depend on the phase (``|V|^2``, ``V diag(f(L)) V^H``, ...) it changes
nothing, and the gradient is PyTorch's. For real inputs the gauge is a sign, locally
constant: no correction at all. PyTorch raises instead when a complex loss depends on the
phase; here such a loss simply has the derivative of the gauge-fixed function.

Note [Exactly repeated eigenvalues]
-----------------------------------
The vector derivatives divide by eigenvalue gaps ``lambda_j - lambda_i`` (``svd``: by
``S_j - S_i`` and ``S_j + S_i``, the partial fractions of ``S_j / (S_j^2 - S_i^2)``, and by
``S_j`` for the complement of a non-square input). Close values give large derivatives, as
in PyTorch: no special handling. Values that are *exactly* equal
(the identity, a symmetric graph Laplacian, an orthogonal matrix's singular values, a zero
singular value of a rank-deficient input) would give ``0 * inf = nan`` even when the vector
cotangent is zero, i.e. for a loss of the eigenvalues alone: the engine hands a multi-output
rule zeros for the outputs the loss does not use, where PyTorch passes "undefined" and
skips the term. So ``1 / 0`` is taken as 0 in these rules (a pseudo-inverse of the gaps):
the eigenvalue-only gradient is then finite and PyTorch's, and so is the gradient of any
loss that does not depend on the choice of basis inside a repeated eigenspace (its
cotangent has no component along those pairs). A loss that does depend on it has no
derivative there; it gets a finite value instead of PyTorch's inf / nan.
"""

from __future__ import annotations

from collections import namedtuple

from ..dispatch import apply
from .solves import LinAlgError
from .contractions import _eye
from .registry import LINALG, Domain, defop, sample_numpy

__all__ = ["EighResult", "EigResult", "SVDResult", "QRResult"]

ANY = Domain((-2.0, 2.0), complex=True)

EighResult = namedtuple("EighResult", ["eigenvalues", "eigenvectors"])
EigResult = namedtuple("EigResult", ["eigenvalues", "eigenvectors"])
SVDResult = namedtuple("SVDResult", ["U", "S", "Vh"])
QRResult = namedtuple("QRResult", ["Q", "R"])


_np = sample_numpy  # samplers only, never a formula


# ----------------------------------------------------------------------------- input checks
def _matrix_input(B, a, name, square=False):
    """``a`` as a backend array of a LAPACK dtype, checked: at least 2-D (square if asked)."""
    a = B.asarray(a)
    kind = a.dtype.kind
    if kind in "biu":
        a = B.asarray(a, dtype=B.float64)  # as NumPy: integer (and bool) input computes in f64
    elif kind not in "fc":
        raise TypeError(f"linalg.{name}: expected a floating point or complex matrix, got "
                        f"dtype {a.dtype}")
    elif a.dtype.itemsize < 4:
        raise TypeError(f"linalg.{name}: {a.dtype} is not supported (LAPACK has no half "
                        "precision); cast the input to float32 or float64 first")
    # (LinAlgError, a ValueError, as NumPy raises for these)
    if a.ndim < 2:
        raise LinAlgError(f"linalg.{name}: expected a matrix or a stack of matrices (at least 2 "
                         f"dimensions), got shape {tuple(a.shape)}")
    if square and a.shape[-1] != a.shape[-2]:
        raise LinAlgError(f"linalg.{name}: expected a square matrix or a stack of square "
                         f"matrices (shape (..., n, n)), got shape {tuple(a.shape)}")
    return a


def _check_uplo(name, UPLO):
    if UPLO not in ("L", "U"):
        raise ValueError(f"linalg.{name}: UPLO must be 'L' or 'U', got {UPLO!r}")


# ----------------------------------------------------------------------------- formula helpers
def _mH(F, x):
    """Conjugate transpose of the matrices in ``x``."""
    t = F.matrix_transpose(x)
    return F.conj(t) if F.iscomplexobj(x) else t


def _diag(F, x):
    return F.diagonal(x, axis1=-2, axis2=-1)


def _diag_embed(F, v, eye):
    return F.expand_dims(v, -2) * eye


def _eye_n(F, n, like):
    return _eye(F, n, n, 0, like)


def _safe_inv(F, x):
    """``1 / x``, and 0 where ``x`` is exactly 0 (Note [Exactly repeated eigenvalues])."""
    zero = F.equal(x, 0)
    return F.where(zero, 0, 1 / F.where(zero, 1, x))


def _inv_gaps(F, lam):
    """``1 / (lam_j - lam_i)`` at ``[..., i, j]`` off the diagonal, 0 on it (and 0 for
    exactly equal values: Note [Exactly repeated eigenvalues])."""
    return _safe_inv(F, F.expand_dims(lam, -2) - F.expand_dims(lam, -1))


def _sv_gaps(F, S, eye):
    """``(Fr, Fc)``: ``S_j / (S_j^2 - S_i^2)`` and ``S_i / (S_j^2 - S_i^2)`` at ``[..., i, j]``
    off the diagonal, 0 on it, as the partial fractions ``(1 / (S_j - S_i) +- 1 / (S_j +
    S_i)) / 2``: of the scale ``1 / S``, where ``S^2`` under- or overflows (at ``|a|`` of
    2^-1016 the gaps of the squares were 0, the derivatives of the vectors silently wrong;
    at 2^1019 nan; differentiated again, ``1 / S^3`` terms overflowed at 1e-150: Note [Linear
    algebra at extreme scales] in solves.py). An exactly repeated value drops the
    ``1 / (S_j - S_i)`` part only (Note [Exactly repeated eigenvalues])."""
    d = _inv_gaps(F, S)
    sums = _safe_inv(F, F.expand_dims(S, -2) + F.expand_dims(S, -1)) * (1 - eye)
    return (d + sums) / 2, (d - sums) / 2


def _pivots(F, V):
    """(mask, r) for gauge-fixed vectors ``V`` (Note [Gauge of eigenvectors and singular
    vectors]): ``mask`` (..., n, k) is 1 at each column's pivot row (its entry of largest
    magnitude), ``r`` (..., 1, k) the (real, positive) pivot values."""
    n = V.shape[-2]
    idx = F.argmax(F.abs(V), axis=-2, keepdims=True)
    rows = F.reshape(F.arange(n, like=V), (n, 1))
    re = F.real(V)
    mask = F.astype(F.equal(rows, idx), re.dtype)
    return mask, F.sum(re * mask, axis=-2, keepdims=True)


def _gauge_tangent(F, dV, V):
    """The tangent ``dV`` rotated by ``i theta_j v_j`` so that the pivots stay real; returns
    (new dV, theta (..., 1, k))."""
    if V.shape[-2] == 0:
        return dV, F.zeros_like(F.real(F.sum(dV, axis=-2, keepdims=True)))
    mask, r = _pivots(F, V)
    theta = -F.sum(F.imag(dV) * mask, axis=-2, keepdims=True) / r
    return dV + 1j * (V * theta), theta


def _gauge_cotangent(F, gV, V, c=None):
    """The adjoint of :func:`_gauge_tangent` applied to the cotangent ``gV``: with ``c``
    (..., 1, k) the real pairing of the cotangent with the gauge direction (default: that of
    ``gV`` with ``i V``, ``-Im(g_j^H v_j)``)."""
    if V.shape[-2] == 0:
        return gV
    mask, r = _pivots(F, V)
    if c is None:
        c = -F.imag(F.sum(F.conj(gV) * V, axis=-2, keepdims=True))
    return gV - 1j * (mask * (c / r))


def _fix_gauge(B, V, Vh=None):
    """Forward (raw arrays): scale each column of ``V`` by the unit phase (sign) that makes its
    entry of largest magnitude real and positive; the rows of ``Vh`` by the conjugates."""
    if V.shape[-1] == 0 or V.shape[-2] == 0:
        return V, Vh
    idx = B.expand_dims(B.argmax(B.abs(V), axis=-2), -2)
    piv = B.take_along_axis(V, idx, axis=-2)
    if V.dtype.kind == "c":
        phase = B.conj(piv) / B.abs(piv)
    else:
        phase = B.where(piv < 0, -1.0, 1.0).astype(V.dtype)
    V = V * phase
    if Vh is not None:
        Vh = Vh * B.conj(B.swapaxes(phase, -1, -2))
    return V, Vh


def _herm_raw(B, a):
    t = B.swapaxes(a, -1, -2)
    return (a + (B.conj(t) if a.dtype.kind == "c" else t)) / 2


def _herm(F, x):
    return (x + _mH(F, x)) / 2


def _solve(F, a, b):
    """``a^{-1} b`` for stacks of square ``a`` and matrices ``b``."""
    return F.linalg.solve(a, b)


def _solve_upper(F, r, b):
    """``r^{-1} b`` for upper triangular ``r``."""
    return F.linalg.solve_triangular(r, b, upper=True)


def _rsolve_upper(F, b, r):
    """``b r^{-1}`` for upper triangular ``r``."""
    return F.linalg.solve_triangular(r, b, upper=True, left=False)


# ----------------------------------------------------------------------------- samples
def _batch(d):
    return tuple(d.shape(max_dims=2, max_side=2))


def _sample_eigh(d):
    n = d.integers(1, 4)
    a = d.hermitian_matrix(_batch(d) + (n, n), gap=0.3)
    return (a,), ({} if d.boolean() else {"UPLO": d.choice("LU")})


def _sample_svd(d):
    m, n = d.integers(1, 4), d.integers(1, 3)
    a = d.matrix(tuple(d.shape(max_dims=1, max_side=2)) + (m, n))
    options = [{}, {"full_matrices": False}] + ([{"full_matrices": True}] if m == n else [])
    return (a,), d.choice(options)


def _sample_svdvals(d):
    m, n = d.integers(1, 4), d.integers(1, 4)
    return (d.matrix(_batch(d) + (m, n)),), {}


def _sample_qr(d):
    np = _np()
    m, n = d.integers(1, 4), d.integers(1, 4)
    batch = _batch(d)
    if m >= n:
        a = d.matrix(batch + (m, n))
    else:  # wide: the leading square block must be invertible too
        a = np.concatenate([d.matrix(batch + (m, m)), d.array(batch + (m, n - m), -1.0, 1.0)],
                           axis=-1)
    modes = ["reduced", "r"] + (["complete"] if m <= n else [])
    mode = d.choice([None] + modes)
    return (a,), ({} if mode is None else {"mode": mode})


def _sample_eig(d):
    """``V diag(lambda) V^-1`` with a well-conditioned ``V`` and eigenvalues at least 0.5
    apart; real draws mix real eigenvalues and complex-conjugate pairs (2x2 blocks)."""
    np = _np()
    n = d.integers(1, 3)
    batch = tuple(d.shape(max_dims=1, max_side=2))
    gap = 0.5
    span = 4.0 - gap * (n - 1)
    re = np.sort(d.array(batch + (n,), 0.0, span, dtype=np.float64), axis=-1)
    re = re - 2.0 + gap * np.arange(n)
    v = d.matrix(batch + (n, n), cond=3.0)
    if d.dtype.kind == "c":
        lam = re + 1j * d.array(batch + (n,), -1.0, 1.0, dtype=np.float64)
        block = lam[..., None, :] * np.eye(n)
    else:
        block = re[..., None, :] * np.eye(n)
        for p in range(d.integers(0, n // 2)):  # pair k: re[k] +- i b, re[k + 1] unused
            k = 2 * p
            b = d.array(batch, 0.3, 1.5, dtype=np.float64)
            block[..., k + 1, k + 1] = block[..., k, k]
            block[..., k, k + 1] = b
            block[..., k + 1, k] = -b
    a = v @ block @ np.linalg.inv(v)
    return (np.asarray(a, dtype=d.dtype),), {}


# ----------------------------------------------------------------------------- eigh
def _apply(op, *args, **kw):
    return apply(op, *args, **kw)


@defop(kind=LINALG, nout=2, domain=ANY, sample=_sample_eigh, namespace="linalg")
def eigh(B, a, UPLO="L"):
    """Eigenvalues and eigenvectors of a real symmetric or complex Hermitian matrix.

    ``a = V diag(L) V^H`` with ``L`` real in ascending order and ``V`` unitary (orthogonal).
    Batched over leading dimensions.

    Parameters
    ----------
    a : Tensor, shape (..., n, n)
        Symmetric (Hermitian) matrices.
    UPLO : {'L', 'U'}
        Accepted for NumPy compatibility. ndgrad decomposes the Hermitian part
        ``(a + a^H) / 2``, as ``jax.numpy.linalg.eigh`` does, so both triangles are read:
        for a Hermitian input this is NumPy's result for either ``UPLO``, and the gradient
        is the derivative of the function actually computed (it is Hermitian, PyTorch's).

    Returns
    -------
    EighResult
        Named tuple ``(eigenvalues, eigenvectors)``: ``(..., n)`` real and ``(..., n, n)``
        with the eigenvectors as columns.

    Notes
    -----
    Differentiable in ``a`` (first and higher order, forward mode, vmap). Eigenvectors are
    defined up to a sign (a phase when complex); ndgrad returns the one whose entry of
    largest magnitude is real and positive, a choice that is smooth for generic inputs, so
    every loss has a gradient (Note [Gauge of eigenvectors and singular vectors] in
    ``ndgrad/core/ops/decompositions.py``); for phase-independent losses it is PyTorch's.
    The eigenvector derivatives divide by the eigenvalue gaps ``L[j] - L[i]``: large for
    close eigenvalues, as in PyTorch. For exactly repeated ones the eigenvectors have no
    derivative; the gradient is then finite (the term of each equal pair is dropped) and
    correct for losses that do not depend on the basis of the repeated eigenspace, such as
    the eigenvalues alone (Note [Exactly repeated eigenvalues]). The eigenvalue derivatives
    are always finite: ``dL[k]/da = v_k v_k^H``.

    Examples
    --------
    >>> import ndgrad
    >>> a = ndgrad.tensor([[3.0, 2.0], [2.0, 6.0]], requires_grad=True)
    >>> L, V = ndgrad.linalg.eigh(a)
    >>> L
    tensor([2., 7.], grad_fn=<LinalgEighBackward0>)
    >>> L[1].backward()
    >>> a.grad
    tensor([[0.2, 0.4],
            [0.4, 0.8]])
    """
    a = _matrix_input(B, a, "eigh", square=True)
    _check_uplo("eigh", UPLO)
    lam, v = B.linalg.eigh(_herm_raw(B, a), UPLO=UPLO)
    return lam, _fix_gauge(B, v)[0]


def _eigh_vjp(F, g, out, a, UPLO="L"):
    # gA = V (diag(gL) + skew(V^H gV) / 2 o E) V^H, E_ij = 1 / (L_j - L_i) off the diagonal;
    # Hermitian: the derivative of the Hermitian part a -> (a + a^H) / 2 is self-adjoint on it
    gL, gV = g
    L, V = out
    eye = _eye_n(F, L.shape[-1], L)
    inner = _diag_embed(F, gL, eye)
    if F.iscomplexobj(V):
        gV = _gauge_cotangent(F, gV, V)
    X = _mH(F, V) @ gV
    inner = inner + (X - _mH(F, X)) / 2 * _inv_gaps(F, L)
    return V @ inner @ _mH(F, V)


def _eigh_jvp(F, tangents, out, a, UPLO="L"):
    # P = V^H dA_h V: dL = diag(P), dV = V (P o E) (+ the gauge correction, complex)
    (t,) = tangents
    L, V = out
    P = _mH(F, V) @ _herm(F, t) @ V
    dL = F.real(_diag(F, P))
    dV = V @ (P * _inv_gaps(F, L))
    if F.iscomplexobj(V):
        dV = _gauge_tangent(F, dV, V)[0]
    return dL, dV


eigh.defvjp(_eigh_vjp, saves=(("out",),))  # the factors, not `a`
eigh.defjvp(_eigh_jvp)
eigh.defbatch(lambda F, batched, a, UPLO="L": tuple(F.linalg.eigh(a, UPLO=UPLO)))


def _eigh_public(a, UPLO="L"):
    return EighResult(*_apply(eigh, a, UPLO=UPLO))


# ----------------------------------------------------------------------------- eigvalsh
@defop(kind=LINALG, domain=ANY, sample=_sample_eigh, namespace="linalg")
def eigvalsh(B, a, UPLO="L"):
    """Eigenvalues of a real symmetric or complex Hermitian matrix, in ascending order.

    Parameters
    ----------
    a : Tensor, shape (..., n, n)
        Symmetric (Hermitian) matrices.
    UPLO : {'L', 'U'}
        Accepted for NumPy compatibility; as :func:`ndgrad.linalg.eigh`, the Hermitian part
        ``(a + a^H) / 2`` is decomposed.

    Returns
    -------
    Tensor, shape (..., n)
        Real.

    Notes
    -----
    Differentiable in ``a`` to any order: ``dL[k]/da = v_k v_k^H`` (the eigenvectors are
    recomputed in the backward pass). The first derivative is finite even at repeated
    eigenvalues; the second divides by the eigenvalue gaps.

    Examples
    --------
    >>> import ndgrad
    >>> a = ndgrad.tensor([[3.0, 2.0], [2.0, 6.0]], requires_grad=True)
    >>> ndgrad.linalg.eigvalsh(a)
    tensor([2., 7.], grad_fn=<LinalgEigvalshBackward0>)
    """
    a = _matrix_input(B, a, "eigvalsh", square=True)
    _check_uplo("eigvalsh", UPLO)
    return B.linalg.eigvalsh(_herm_raw(B, a), UPLO=UPLO)


def _eigvalsh_vjp(F, g, out, a, UPLO="L"):
    # gA = V diag(g) V^H
    V = F.linalg.eigh(a, UPLO=UPLO)[1]
    return (V * F.expand_dims(g, -2)) @ _mH(F, V)


def _eigvalsh_jvp(F, tangents, out, a, UPLO="L"):
    # dL = diag(V^H dA_h V), real
    (t,) = tangents
    V = F.linalg.eigh(a, UPLO=UPLO)[1]
    return F.real(_diag(F, _mH(F, V) @ _herm(F, t) @ V))


eigvalsh.defvjp(_eigvalsh_vjp)
eigvalsh.defjvp(_eigvalsh_jvp)
eigvalsh.defbatch(lambda F, batched, a, UPLO="L": F.linalg.eigvalsh(a, UPLO=UPLO))


# ----------------------------------------------------------------------------- eig
def _eig_raw(B, a, name, vectors=True):
    a = _matrix_input(B, a, name, square=True)
    lam, v = B.linalg.eig(a)
    ctype = B.result_type(a.dtype, B.complex64)
    if not vectors:
        return lam.astype(ctype, copy=False)
    v = _fix_gauge(B, v)[0]  # (NumPy's real vectors, when all are real, get a sign)
    return lam.astype(ctype, copy=False), v.astype(ctype, copy=False)


@defop(kind=LINALG, nout=2, domain=ANY, sample=_sample_eig, namespace="linalg")
def eig(B, a):
    """Eigenvalues and right eigenvectors of a general square matrix.

    ``a V = V diag(L)``. The results are always complex (complex128 for float64 and
    complex128 input, complex64 for float32 and complex64), as ``torch.linalg.eig`` returns
    them; NumPy returns real arrays when every eigenvalue is real. The eigenvalues come in
    LAPACK's order, NumPy's (not sorted). Batched over leading dimensions.

    Parameters
    ----------
    a : Tensor, shape (..., n, n)

    Returns
    -------
    EigResult
        Named tuple ``(eigenvalues, eigenvectors)``, shapes ``(..., n)`` and ``(..., n, n)``;
        the eigenvectors are the columns, of unit norm.

    Notes
    -----
    Differentiable in ``a`` (first and higher order, forward mode, vmap); for a real ``a``
    the gradient is real (the real part of the complex formula, as PyTorch). Each
    eigenvector is defined up to a phase; ndgrad returns the one whose entry of largest
    magnitude is real and positive (NumPy's phase differs), smooth for generic inputs (Note
    [Gauge of eigenvectors and singular vectors] in ``ndgrad/core/ops/decompositions.py``).
    The derivatives divide by the eigenvalue gaps: large for close eigenvalues or an
    ill-conditioned eigenvector matrix, as in PyTorch; at exactly repeated eigenvalues see
    Note [Exactly repeated eigenvalues]. A defective matrix (eigenvectors linearly
    dependent) has no eigenvector derivative: the solves with ``V`` are then ill-conditioned
    or singular.

    Examples
    --------
    >>> import ndgrad
    >>> L, V = ndgrad.linalg.eig(ndgrad.tensor([[2.0, 1.0], [0.0, 3.0]]))
    >>> L
    tensor([2.+0.j, 3.+0.j])
    >>> L, V = ndgrad.linalg.eig(ndgrad.tensor([[0.0, -1.0], [1.0, 0.0]]))
    >>> L
    tensor([0.+1.j, 0.-1.j])
    """
    return _eig_raw(B, a, "eig")


def _eig_vjp(F, g, out, a):
    # gA = V^-H (diag(gL) + (V^H gV - V^H V diag(Re diag(V^H gV))) o conj(E)) V^H with
    # E_ij = 1 / (L_j - L_i) off the diagonal (the second term keeps the vectors unit-norm)
    gL, gV = g
    L, V = out
    eye = _eye_n(F, L.shape[-1], L)
    gV = _gauge_cotangent(F, gV, V)
    VH = _mH(F, V)
    X = VH @ gV
    M = X - (VH @ V) * F.expand_dims(F.real(_diag(F, X)), -2)
    inner = _diag_embed(F, gL, eye) + M * F.conj(_inv_gaps(F, L))
    return _solve(F, VH, inner @ VH)


def _eig_jvp(F, tangents, out, a):
    # P = V^-1 dA V: dL = diag(P), dV = V (P o E) - V diag(Re(v_j^H (V (P o E))_j)) (unit
    # norm), then the gauge correction
    (t,) = tangents
    L, V = out
    P = _solve(F, V, t @ V)
    dL = _diag(F, P)
    dV = V @ (P * _inv_gaps(F, L))
    dV = dV - V * F.expand_dims(F.real(F.sum(F.conj(V) * dV, axis=-2)), -2)
    return dL, _gauge_tangent(F, dV, V)[0]


eig.defvjp(_eig_vjp)
eig.defjvp(_eig_jvp)
eig.defbatch(lambda F, batched, a: tuple(F.linalg.eig(a)))


def _eig_public(a):
    return EigResult(*_apply(eig, a))


# ----------------------------------------------------------------------------- eigvals
@defop(kind=LINALG, domain=ANY, sample=_sample_eig, namespace="linalg")
def eigvals(B, a):
    """Eigenvalues of a general square matrix, always complex (as ``torch.linalg.eigvals``).

    The same values, in the same order, as :func:`ndgrad.linalg.eig` (they are computed by
    it, so that the backward pass pairs each eigenvalue with its own eigenvector).

    Parameters
    ----------
    a : Tensor, shape (..., n, n)

    Returns
    -------
    Tensor, shape (..., n)
        complex128 (complex64 for float32 / complex64 input).

    Notes
    -----
    Differentiable in ``a`` to any order: ``dL[k] = (w_k^H da v_k) / (w_k^H v_k)`` with
    ``v_k``, ``w_k`` the right and left eigenvectors; for a real ``a`` the gradient is real.
    At a defective matrix (a repeated eigenvalue without a full set of eigenvectors) the
    eigenvalues are not differentiable; the solve with the (nearly singular) eigenvector
    matrix then gives unreliable values or raises.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.linalg.eigvals(ndgrad.tensor([[2.0, 1.0], [0.0, 3.0]]))
    tensor([2.+0.j, 3.+0.j])
    """
    return _eig_raw(B, a, "eigvals", vectors=False)


def _eigvals_vjp(F, g, out, a):
    # gA = V^-H diag(g) V^H
    V = F.linalg.eig(a)[1]
    VH = _mH(F, V)
    return _solve(F, VH, F.expand_dims(g, -1) * VH)


def _eigvals_jvp(F, tangents, out, a):
    # dL = diag(V^-1 dA V)
    (t,) = tangents
    V = F.linalg.eig(a)[1]
    return _diag(F, _solve(F, V, t @ V))


eigvals.defvjp(_eigvals_vjp)
eigvals.defjvp(_eigvals_jvp)
eigvals.defbatch(lambda F, batched, a: F.linalg.eigvals(a))


# ----------------------------------------------------------------------------- svd
@defop(kind=LINALG, nout=3, domain=ANY, sample=_sample_svd, namespace="linalg")
def svd(B, a, full_matrices=False):
    """Singular value decomposition ``a = U diag(S) Vh``.

    Batched over leading dimensions. Note the default ``full_matrices=False`` (the reduced
    decomposition, the differentiable one), where NumPy and PyTorch default to ``True``.

    Parameters
    ----------
    a : Tensor, shape (..., m, n)
    full_matrices : bool
        False: ``U`` is ``(..., m, k)`` and ``Vh`` ``(..., k, n)`` with ``k = min(m, n)``.
        True: ``U`` is ``(..., m, m)`` and ``Vh`` ``(..., n, n)``; the extra columns (rows)
        are an arbitrary orthonormal basis of the complement, which has no derivative: the
        backward pass and forward mode raise unless ``a`` is square.

    Returns
    -------
    SVDResult
        Named tuple ``(U, S, Vh)``; ``S`` real, in descending order.

    Notes
    -----
    Differentiable in ``a`` (first and higher order, forward mode, vmap), for
    ``full_matrices=False`` or a square ``a``. Singular vectors are defined up to a sign (a
    phase) shared by ``u_j`` and ``v_j``; ndgrad returns the pair whose ``u_j`` has its
    entry of largest magnitude real and positive, smooth for generic inputs (Note [Gauge of
    eigenvectors and singular vectors] in ``ndgrad/core/ops/decompositions.py``). The vector
    derivatives divide by ``S[j]**2 - S[i]**2`` and (for non-square ``a``) by ``S[j]``:
    large for close or small singular values, as in PyTorch; for exactly repeated or zero
    ones the gradient stays finite and is correct for losses that do not depend on the
    basis of those singular subspaces, such as ``S`` alone (Note [Exactly repeated
    eigenvalues]). ``dS[k]/da = u_k v_k^H``.

    Examples
    --------
    >>> import ndgrad
    >>> a = ndgrad.tensor([[3.0, 0.0], [0.0, -2.0], [0.0, 0.0]], requires_grad=True)
    >>> U, S, Vh = ndgrad.linalg.svd(a)
    >>> S
    tensor([3., 2.], grad_fn=<LinalgSvdBackward0>)
    >>> U.shape, Vh.shape
    ((3, 2), (2, 2))
    >>> S.sum().backward()
    >>> a.grad
    tensor([[ 1.,  0.],
            [ 0., -1.],
            [ 0.,  0.]])
    """
    a = _matrix_input(B, a, "svd")
    if not isinstance(full_matrices, bool):
        raise TypeError(f"linalg.svd: full_matrices must be True or False, got "
                        f"{full_matrices!r}")
    u, s, vh = B.linalg.svd(a, full_matrices=full_matrices)
    k = s.shape[-1]
    if full_matrices and (u.shape[-1] != k or vh.shape[-2] != k):
        u1, vh1 = _fix_gauge(B, u[..., :k], vh[..., :k, :])
        u = B.concatenate([u1, u[..., k:]], axis=-1)
        vh = B.concatenate([vh1, vh[..., k:, :]], axis=-2)
    else:
        u, vh = _fix_gauge(B, u, vh)
    return u, s, vh


def _svd_full_error(U, Vh):
    m, n = U.shape[-2], Vh.shape[-1]
    return RuntimeError(
        f"linalg.svd: the decomposition with full_matrices=True of a non-square input ({m} x "
        f"{n}) is not differentiable: the {abs(m - n)} extra "
        f"{'columns of U' if m > n else 'rows of Vh'} are an arbitrary basis of the "
        "complement. Use "
        "full_matrices=False (the default), or linalg.svdvals if only S is needed.")


def _svd_vjp(F, g, out, a, full_matrices=False):
    # gA = U [ (J - J^H) o Fs S + S (K - K^H) o Fs + diag(gS) + i diag(Im(J - K)_jj / 2 S_j) ] Vh
    #      + (I - U U^H) gU S^-1 Vh + U S^-1 gVh (I - V V^H)
    # with J = U^H gU, K = V^H gV (gV = gVh^H), Fs_ij = 1 / (S_j^2 - S_i^2) off the diagonal;
    # Fs S_j and S_i Fs as partial fractions (_sv_gaps)
    gU, gS, gVh = g
    U, S, Vh = out
    m, k, n = U.shape[-2], S.shape[-1], Vh.shape[-1]
    if U.shape[-1] != k or Vh.shape[-2] != k:
        raise _svd_full_error(U, Vh)
    complex_ = F.iscomplexobj(U)
    if complex_:
        # the phases of u_j and vh_j move together (i u_j, -i vh_j): c_j is the cotangents'
        # pairing with that direction, removed through U's pivots
        c = F.expand_dims(F.imag(F.sum(F.conj(gVh) * Vh, axis=-1)), -2) - \
            F.imag(F.sum(F.conj(gU) * U, axis=-2, keepdims=True))
        gU = _gauge_cotangent(F, gU, U, c=c)
    eye = _eye_n(F, k, S)
    Fr, Fc = _sv_gaps(F, S, eye)
    Si = _safe_inv(F, S)
    J = _mH(F, U) @ gU
    K = Vh @ _mH(F, gVh)
    inner = (J - _mH(F, J)) * Fr + (K - _mH(F, K)) * Fc + _diag_embed(F, gS, eye)
    if complex_:
        inner = inner + _diag_embed(F, 0.5j * (F.imag(_diag(F, J)) - F.imag(_diag(F, K)))
                                    * Si, eye)
    gA = U @ inner @ Vh
    if m > k:
        gA = gA + ((gU - U @ J) * F.expand_dims(Si, -2)) @ Vh
    if n > k:
        gA = gA + U @ ((gVh - _mH(F, K) @ Vh) * F.expand_dims(Si, -1))
    return gA


def _svd_jvp(F, tangents, out, a, full_matrices=False):
    # P = U^H dA V: dS = Re diag(P); U^H dU = (P S + S P^H) o Fs (+ i Im(P_jj) / 2 S_j),
    # V^H dV = (S P + P^H S) o Fs (- the same); the complements: (I - U U^H) dA V S^-1 and
    # (I - V V^H) dA^H U S^-1; then the gauge correction (complex). Fs S as in _svd_vjp
    (t,) = tangents
    U, S, Vh = out
    m, k, n = U.shape[-2], S.shape[-1], Vh.shape[-1]
    if U.shape[-1] != k or Vh.shape[-2] != k:
        raise _svd_full_error(U, Vh)
    complex_ = F.iscomplexobj(U)
    eye = _eye_n(F, k, S)
    Fr, Fc = _sv_gaps(F, S, eye)
    Si = _safe_inv(F, S)
    V = _mH(F, Vh)
    tV = t @ V
    P = _mH(F, U) @ tV
    PH = _mH(F, P)
    dS = F.real(_diag(F, P))
    OU = P * Fr + PH * Fc
    OV = P * Fc + PH * Fr
    if complex_:
        im = _diag_embed(F, 0.5j * F.imag(_diag(F, P)) * Si, eye)
        OU, OV = OU + im, OV - im
    dU = U @ OU
    dV = V @ OV
    if m > k:
        dU = dU + (tV - U @ P) * F.expand_dims(Si, -2)
    if n > k:
        dV = dV + (_mH(F, t) @ U - V @ PH) * F.expand_dims(Si, -2)
    dVh = _mH(F, dV)
    if complex_:
        dU, theta = _gauge_tangent(F, dU, U)
        dVh = dVh - 1j * (F.matrix_transpose(theta) * Vh)
    return dU, dS, dVh


svd.defvjp(_svd_vjp, saves=(("out",),))  # the factors, not `a`
svd.defjvp(_svd_jvp)
svd.defbatch(lambda F, batched, a, full_matrices=False:
             tuple(F.linalg.svd(a, full_matrices=full_matrices)))


def _svd_public(a, full_matrices=False):
    return SVDResult(*_apply(svd, a, full_matrices=full_matrices))


# ----------------------------------------------------------------------------- svdvals
@defop(kind=LINALG, domain=ANY, sample=_sample_svdvals, namespace="linalg")
def svdvals(B, a):
    """Singular values of a matrix (or a stack of them), real, in descending order.

    Parameters
    ----------
    a : Tensor, shape (..., m, n)

    Returns
    -------
    Tensor, shape (..., min(m, n))

    Notes
    -----
    Differentiable in ``a`` to any order: ``dS[k]/da = u_k v_k^H`` (the singular vectors
    are recomputed in the backward pass). The first derivative is finite at repeated
    singular values when they are nonzero; at a zero singular value (a rank-deficient
    input) the norm is not differentiable.

    Examples
    --------
    >>> import ndgrad
    >>> a = ndgrad.tensor([[3.0, 0.0], [0.0, -2.0]], requires_grad=True)
    >>> s = ndgrad.linalg.svdvals(a)
    >>> s
    tensor([3., 2.], grad_fn=<LinalgSvdvalsBackward0>)
    >>> s[1].backward()
    >>> a.grad
    tensor([[ 0.,  0.],
            [ 0., -1.]])
    """
    a = _matrix_input(B, a, "svdvals")
    return B.linalg.svd(a, compute_uv=False)


def _svdvals_vjp(F, g, out, a):
    # gA = U diag(g) Vh
    U, _, Vh = F.linalg.svd(a, full_matrices=False)
    return (U * F.expand_dims(g, -2)) @ Vh


def _svdvals_jvp(F, tangents, out, a):
    # dS = Re diag(U^H dA V)
    (t,) = tangents
    U, _, Vh = F.linalg.svd(a, full_matrices=False)
    return F.real(_diag(F, _mH(F, U) @ t @ _mH(F, Vh)))


svdvals.defvjp(_svdvals_vjp)
svdvals.defjvp(_svdvals_jvp)
svdvals.defbatch(lambda F, batched, a: F.linalg.svdvals(a))


# ----------------------------------------------------------------------------- qr
_QR_MODES = ("reduced", "complete", "r")


def _check_mode(mode):
    if mode not in _QR_MODES:
        raise ValueError(f"linalg.qr: mode must be 'reduced', 'complete' or 'r', got {mode!r}"
                         + (" (NumPy's 'raw' and 'economic' are not supported)"
                            if mode in ("raw", "economic", "full", "e", "f") else ""))


@defop(kind=LINALG, nout=2, domain=ANY, sample=_sample_qr, namespace="linalg")
def qr(B, a, mode="reduced"):
    """QR decomposition ``a = Q R``: ``Q`` with orthonormal columns, ``R`` upper triangular.

    Batched over leading dimensions. The same results as NumPy's (LAPACK's Householder QR:
    the diagonal of ``R`` is real, of either sign).

    Parameters
    ----------
    a : Tensor, shape (..., m, n)
    mode : {'reduced', 'complete', 'r'}
        'reduced': ``Q`` is ``(..., m, k)`` and ``R`` ``(..., k, n)``, ``k = min(m, n)``.
        'complete': ``Q`` is ``(..., m, m)`` and ``R`` ``(..., m, n)``. 'r': only ``R``
        (reduced), returned alone as NumPy does.

    Returns
    -------
    QRResult or Tensor
        Named tuple ``(Q, R)``; ``R`` alone for mode 'r'.

    Notes
    -----
    Differentiable in ``a`` (first and higher order, forward mode, vmap) when the leading
    ``k x k`` block of ``R`` is invertible (``a`` of full rank, and for a wide ``a`` its
    first ``m`` columns independent), for every mode except 'complete' with ``m > n``: its
    extra columns of ``Q`` are an arbitrary basis, and differentiating it raises (as
    PyTorch). Unlike PyTorch, mode 'r' is differentiable (``Q`` is computed internally).

    Examples
    --------
    >>> import ndgrad
    >>> a = ndgrad.tensor([[3.0, 1.0], [4.0, 2.0]], requires_grad=True)
    >>> Q, R = ndgrad.linalg.qr(a)
    >>> R
    tensor([[-5. , -2.2],
            [ 0. ,  0.4]], grad_fn=<LinalgQrBackward0>)
    >>> ndgrad.linalg.qr(a, mode="r")
    tensor([[-5. , -2.2],
            [ 0. ,  0.4]], grad_fn=<LinalgQrBackward0>)
    """
    a = _matrix_input(B, a, "qr")
    _check_mode(mode)
    q, r = B.linalg.qr(a, mode="complete" if mode == "complete" else "reduced")
    return q, r


def _qr_complete_error(Q, R):
    return RuntimeError(
        f"linalg.qr: mode='complete' of a tall input ({Q.shape[-2]} x {R.shape[-1]}) is not "
        "differentiable: the extra columns of Q are an arbitrary basis of the complement. Use "
        "mode='reduced'.")


def _qr_copy_upper(F, N, eye):
    # the Hermitian matrix with N's strict upper triangle, its conjugate below and Re diag(N)
    return F.triu(N, k=1) + F.tril(_mH(F, N), k=-1) + _diag_embed(F, F.real(_diag(F, N)), eye)


def _qr_tall_vjp(F, gQ, gR, Q, R):
    # m >= n: gA = (gQ + Q copyu(gR R^H - Q^H gQ)) R^-H
    eye = _eye_n(F, R.shape[-1], R)
    N = gR @ _mH(F, R) - _mH(F, Q) @ gQ
    Z = gQ + Q @ _qr_copy_upper(F, N, eye)
    return _mH(F, _solve_upper(F, R, _mH(F, Z)))


def _qr_vjp(F, g, out, a, mode="reduced"):
    gQ, gR = g
    Q, R = out
    m, n = Q.shape[-2], R.shape[-1]
    if Q.shape[-1] != R.shape[-2] or (m > n and Q.shape[-1] != n):
        raise _qr_complete_error(Q, R)
    if m >= n:
        return _qr_tall_vjp(F, gQ, gR, Q, R)
    # wide: a = [X | Y] with X = Q R1 (square) and R2 = Q^H Y, so Y gets Q gR2 and Q gets
    # the extra cotangent Y gR2^H
    R1, R2 = R[..., :, :m], R[..., :, m:]
    gR1, gR2 = gR[..., :, :m], gR[..., :, m:]
    Y = Q @ R2
    gX = _qr_tall_vjp(F, gQ + Y @ _mH(F, gR2), gR1, Q, R1)
    return F.concat([gX, Q @ gR2], axis=-1)


def _qr_tall_jvp(F, t, Q, R):
    # Y = dA R^-1, X = Q^H Y; T = triu(X, 1) + tril(X, -1)^H + Re diag(X) (= dR R^-1):
    # dR = T R, dQ = Y - Q T
    eye = _eye_n(F, R.shape[-1], R)
    Y = _rsolve_upper(F, t, R)
    X = _mH(F, Q) @ Y
    T = F.triu(X, k=1) + _mH(F, F.tril(X, k=-1)) + _diag_embed(F, F.real(_diag(F, X)), eye)
    return Y - Q @ T, T @ R


def _qr_jvp(F, tangents, out, a, mode="reduced"):
    (t,) = tangents
    Q, R = out
    m, n = Q.shape[-2], R.shape[-1]
    if Q.shape[-1] != R.shape[-2] or (m > n and Q.shape[-1] != n):
        raise _qr_complete_error(Q, R)
    if m >= n:
        return _qr_tall_jvp(F, t, Q, R)
    dQ, dR1 = _qr_tall_jvp(F, t[..., :, :m], Q, R[..., :, :m])
    dR2 = _mH(F, dQ) @ (Q @ R[..., :, m:]) + _mH(F, Q) @ t[..., :, m:]
    return dQ, F.concat([dR1, dR2], axis=-1)


qr.defvjp(_qr_vjp, saves=(("out",),))  # the factors, not `a`
qr.defjvp(_qr_jvp)
qr.defbatch(lambda F, batched, a, mode="reduced":
            tuple(F.linalg.qr(a, mode="complete" if mode == "complete" else "reduced")))


def _qr_public(a, mode="reduced"):
    _check_mode(mode)
    if mode == "r":
        return _apply(qr, a, mode="reduced")[1]
    return QRResult(*_apply(qr, a, mode=mode))


# ----------------------------------------------------------------------------- publics
eigh.defpublic(_eigh_public)
eig.defpublic(_eig_public)
svd.defpublic(_svd_public)
qr.defpublic(_qr_public)
