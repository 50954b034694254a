"""NumPy's products, written from the contraction primitives: ``dot``, ``inner``, ``kron``,
``vdot``, ``matvec``, ``vecmat``, ``cross``.
"""

from __future__ import annotations

import warnings

from ..core.ops.indexing import _axis
from ..core.ops.registry import LINALG, defcomposite, sample_numpy
from ._arraylike import _ANYC, _arr, _conj, _no_out


# ------------------------------------------------------------------------- products
def _ndim_or_0(v):
    return len(v.shape) if hasattr(v, "shape") else 0  # (a Python number: 0)


def _sample_dot(d):
    case = d.choice(["1.1", "2.1", "2.2", "3.2", "0.2"])
    k, m, n = d.integers(1, 3), d.integers(1, 3), d.integers(1, 3)
    shapes = {"1.1": ((k,), (k,)), "2.1": ((m, k), (k,)), "2.2": ((m, k), (k, n)),
              "3.2": ((2, m, k), (k, n)), "0.2": ((), (m, n))}[case]
    return tuple(d.array(s) for s in shapes), {}


@defcomposite(kind=LINALG, nin=2, domain=_ANYC, sample=_sample_dot)
def dot(F, a, b):
    """NumPy's ``dot``: a product with a scalar, or the sum over ``a``'s last axis and
    ``b``'s second-to-last (its only axis when 1-D). For 2-D operands, a matrix product.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.dot(ndgrad.tensor([1.0, 2.0]), ndgrad.tensor([3.0, 4.0]))
    tensor(11.)
    """
    if _ndim_or_0(a) == 0 or _ndim_or_0(b) == 0:
        return a * b
    return F.tensordot(a, b, axes=([len(a.shape) - 1], [max(len(b.shape) - 2, 0)]))


def _sample_inner(d):
    k = d.integers(1, 3)
    sa = tuple(d.integers(1, 3) for _ in range(d.integers(0, 2))) + (k,)
    sb = tuple(d.integers(1, 3) for _ in range(d.integers(0, 2))) + (k,)
    return (d.array(sa), d.array(sb)), {}


@defcomposite(kind=LINALG, nin=2, domain=_ANYC, sample=_sample_inner)
def inner(F, a, b):
    """Sum over the last axes of ``a`` and ``b`` (no conjugation), NumPy's ``inner``.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.inner(ndgrad.tensor([[1.0, 2.0], [3.0, 4.0]]), ndgrad.tensor([1.0, 1.0]))
    tensor([3., 7.])
    """
    if _ndim_or_0(a) == 0 or _ndim_or_0(b) == 0:
        return a * b
    return F.tensordot(a, b, axes=([len(a.shape) - 1], [len(b.shape) - 1]))


def _sample_kron(d):
    na, nb = d.integers(1, 2), d.integers(1, 2)
    return (d.array(tuple(d.integers(1, 3) for _ in range(na))),
            d.array(tuple(d.integers(1, 3) for _ in range(nb)))), {}


@defcomposite(kind=LINALG, nin=2, domain=_ANYC, sample=_sample_kron)
def kron(F, a, b):
    """The Kronecker product: blocks ``a[i, j] * b`` (any number of dimensions; the shorter
    shape is padded with leading ones).

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.kron(ndgrad.tensor([1.0, 10.0]), ndgrad.tensor([1.0, 2.0, 3.0]))
    tensor([ 1.,  2.,  3., 10., 20., 30.])
    """
    if _ndim_or_0(a) == 0 or _ndim_or_0(b) == 0:
        return a * b
    nd = max(len(a.shape), len(b.shape))
    sa = (1,) * (nd - len(a.shape)) + tuple(a.shape)
    sb = (1,) * (nd - len(b.shape)) + tuple(b.shape)
    ea = F.reshape(a, tuple(v for s in sa for v in (s, 1)))
    eb = F.reshape(b, tuple(v for s in sb for v in (1, s)))
    return F.reshape(ea * eb, tuple(x * y for x, y in zip(sa, sb)))


# ------------------------------------------------------------------------------- products
def _sample_vdot(d):
    k, m = d.integers(1, 3), d.integers(1, 3)
    shapes = d.choice([((k * m,), (k * m,)), ((k, m), (k * m,)), ((k, m), (m, k)), ((), ())])
    return tuple(d.array(s) for s in shapes), {}


@defcomposite(kind=LINALG, nin=2, domain=_ANYC, sample=_sample_vdot, method=False)
def vdot(F, a, b, /):
    """The dot product of ``a`` and ``b`` flattened, conjugating ``a``: ``sum(conj(a) * b)``.

    ``a`` and ``b`` may have any shapes with the same number of elements (NumPy's ``vdot``).

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.vdot(ndgrad.tensor([1 + 2j, 3j]), ndgrad.tensor([1.0, 1.0]))
    tensor(1.-5.j)
    >>> ndgrad.vdot(ndgrad.tensor([[1.0, 2.0], [3.0, 4.0]]), ndgrad.tensor([1.0, 0.0, 0.0, 1.0]))
    tensor(5.)
    """
    a, b = F.reshape(_arr(F, a), (-1,)), F.reshape(_arr(F, b), (-1,))
    if a.shape[0] != b.shape[0]:
        raise ValueError(f"vdot: a and b must have the same number of elements, got "
                         f"{a.shape[0]} and {b.shape[0]}")
    return F.vecdot(a, b)


def _sample_matvec(d, vec_first=False):
    s1, s2 = d.shapes(2, max_dims=2, max_side=2)
    m, n = d.integers(1, 3), d.integers(1, 3)
    mat, vec = d.array(tuple(s1) + (n, m) if vec_first else tuple(s1) + (m, n)), \
        d.array(tuple(s2) + (n,))
    return ((vec, mat) if vec_first else (mat, vec)), {}


@defcomposite(kind=LINALG, nin=2, domain=_ANYC, sample=_sample_matvec, method=False)
def matvec(F, x1, x2, /, out=None):
    """Matrix-vector products ``x1 @ x2`` over the last axes: ``(..., m, n), (..., n) ->
    (..., m)``, the leading dimensions broadcast (NumPy's ``matvec`` gufunc; no
    conjugation).

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.matvec(ndgrad.tensor([[1.0, 2.0], [3.0, 4.0]]), ndgrad.tensor([1.0, -1.0]))
    tensor([-1., -1.])
    """
    _no_out("matvec", out)
    x1, x2 = _arr(F, x1), _arr(F, x2)
    if len(x1.shape) < 2 or len(x2.shape) < 1 or x1.shape[-1] != x2.shape[-1]:
        raise ValueError(f"matvec: expected shapes (..., m, n) and (..., n), got "
                         f"{tuple(x1.shape)} and {tuple(x2.shape)}")
    return F.squeeze(F.matmul(x1, F.expand_dims(x2, -1)), axis=-1)


@defcomposite(kind=LINALG, nin=2, domain=_ANYC,
              sample=lambda d: _sample_matvec(d, vec_first=True), method=False)
def vecmat(F, x1, x2, /, out=None):
    """Vector-matrix products over the last axes, conjugating the vector:
    ``(..., n), (..., n, m) -> (..., m)``, ``sum_n conj(x1[..., n]) x2[..., n, m]`` (NumPy's
    ``vecmat`` gufunc).

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.vecmat(ndgrad.tensor([1j, 1.0]), ndgrad.tensor([[1.0, 2.0], [3.0, 4.0]]))
    tensor([3.-1.j, 4.-2.j])
    """
    _no_out("vecmat", out)
    x1, x2 = _arr(F, x1), _arr(F, x2)
    if len(x1.shape) < 1 or len(x2.shape) < 2 or x1.shape[-1] != x2.shape[-2]:
        raise ValueError(f"vecmat: expected shapes (..., n) and (..., n, m), got "
                         f"{tuple(x1.shape)} and {tuple(x2.shape)}")
    return F.squeeze(F.matmul(F.expand_dims(_conj(F, x1), -2), x2), axis=-2)


def _sample_cross(d):
    sa, sb = d.shapes(2, max_dims=2, max_side=2)
    # the vectors' axis inserted at a drawn position of each operand
    pa, pb = d.integers(0, len(sa)), d.integers(0, len(sb))
    a = sample_numpy().moveaxis(d.array(tuple(sa) + (3,)), -1, pa)
    b = sample_numpy().moveaxis(d.array(tuple(sb) + (3,)), -1, pb)
    nc = max(len(sa), len(sb)) + 1
    if pa == len(sa) and pb == len(sb) and d.boolean():
        return (a, b), {"axis": -1}
    return (a, b), {"axisa": pa - len(sa) - 1 if d.boolean() else pa, "axisb": pb,
                    "axisc": d.integers(-nc, nc - 1)}


@defcomposite(kind=LINALG, nin=2, domain=_ANYC, sample=_sample_cross, method=False)
def cross(F, a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """The cross product of 3-vectors along ``axisa`` of ``a`` and ``axisb`` of ``b`` (the
    others broadcast), the vectors of the result along ``axisc``; ``axis`` sets all three.

    2-vectors count as 3-vectors with a zero third component; two 2-vectors give the scalar
    third component only. NumPy 2 deprecates 2-vectors and so does this function (a
    DeprecationWarning, as NumPy's).

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.cross(ndgrad.tensor([1.0, 0.0, 0.0]), ndgrad.tensor([0.0, 1.0, 0.0]))
    tensor([0., 0., 1.])
    >>> ndgrad.cross(ndgrad.tensor([[1.0, 2.0], [0.0, 1.0], [0.0, 0.0]]),
    ...              ndgrad.tensor([0.0, 0.0, 1.0]), axisa=0)
    tensor([[ 0., -1.,  0.],
            [ 1., -2.,  0.]])
    """
    if axis is not None:
        axisa = axisb = axisc = axis
    a, b = _arr(F, a), _arr(F, b)
    if len(a.shape) < 1 or len(b.shape) < 1:
        raise ValueError("cross: at least one array has zero dimension")
    a = F.moveaxis(a, _axis("cross", axisa, len(a.shape), "axisa"), -1)
    b = F.moveaxis(b, _axis("cross", axisb, len(b.shape), "axisb"), -1)
    na, nb = a.shape[-1], b.shape[-1]
    if na not in (2, 3) or nb not in (2, 3):
        raise ValueError(f"cross: incompatible dimensions for cross product (dimension must "
                         f"be 2 or 3), got {na} and {nb}")
    if na == 2 or nb == 2:
        warnings.warn("Arrays of 2-dimensional vectors are deprecated. Use arrays of "
                      "3-dimensional vectors instead. (deprecated in NumPy 2.0)",
                      DeprecationWarning, stacklevel=3)
    a0, a1, b0, b1 = a[..., 0], a[..., 1], b[..., 0], b[..., 1]
    z = a0 * b1 - a1 * b0
    if na == 2 and nb == 2:
        return z
    if na == 2:
        b2 = b[..., 2]
        x, y = a1 * b2, -(a0 * b2)
    elif nb == 2:
        a2 = a[..., 2]
        x, y = -(a2 * b1), a2 * b0
    else:
        a2, b2 = a[..., 2], b[..., 2]
        x, y = a1 * b2 - a2 * b1, a2 * b0 - a0 * b2
    cp = F.stack([x, y, z], axis=-1)
    return F.moveaxis(cp, -1, _axis("cross", axisc, len(cp.shape), "axisc"))
