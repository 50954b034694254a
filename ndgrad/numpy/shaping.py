"""NumPy's functions that change an array's dimensions or order, written from the shape
primitives: ``atleast_1d`` / ``2d`` / ``3d``, ``ravel``, ``rollaxis``, ``rot90``,
``resize``, ``fliplr``, ``flipud``. They move data, so the gradient moves it back.
"""

from __future__ import annotations

import operator

from ..core.ops.indexing import _axis
from ..core.ops.registry import SHAPE, VARIADIC, defcomposite
from ..core.ops.shape import _as_int_tuple
from ._arraylike import _ANYC, _arr, _atleast, _like, _nd, _numel, _view


# ------------------------------------------------------------------------- matrices
def _sample_min2(d):
    return (d.array(d.shape(min_dims=2, max_dims=3)),), {}


def _sample_min1(d):
    return (d.array(d.shape(min_dims=1, max_dims=3)),), {}


@defcomposite(kind=SHAPE, domain=_ANYC, sample=_sample_min2)
def fliplr(F, m):
    """``m`` with its columns (axis 1) in reverse order.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.fliplr(ndgrad.tensor([[1.0, 2.0], [3.0, 4.0]]))
    tensor([[2., 1.],
            [4., 3.]])
    """
    if len(m.shape) < 2:
        raise ValueError("fliplr: the input must be at least 2-D")
    return F.flip(m, axis=1)


@defcomposite(kind=SHAPE, domain=_ANYC, sample=_sample_min1)
def flipud(F, m):
    """``m`` with its rows (axis 0) in reverse order.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.flipud(ndgrad.tensor([1.0, 2.0, 3.0]))
    tensor([3., 2., 1.])
    """
    if len(m.shape) < 1:
        raise ValueError("flipud: the input must be at least 1-D")
    return F.flip(m, axis=0)


# ------------------------------------------------------------------------------ dimensions
def _sample_atleast(d):
    return tuple(d.array(d.shape(max_dims=3, max_side=3)) for _ in range(d.integers(1, 3))), {}


@defcomposite(nin=VARIADIC, kind=SHAPE, domain=_ANYC, method=False, sample=_sample_atleast)
def atleast_1d(F, *arys):
    """Views of the inputs with at least one dimension (NumPy's ``atleast_1d``): a 0-d
    tensor becomes ``(1,)``. One tensor for one input, a tuple for several.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.atleast_1d(ndgrad.tensor(1.0))
    tensor([1.])
    >>> ndgrad.atleast_1d(ndgrad.tensor(1.0), ndgrad.tensor([2.0, 3.0]))
    (tensor([1.]), tensor([2., 3.]))
    """
    res = tuple(_atleast(F, a, 1, _like(arys)) for a in arys)
    return res[0] if len(res) == 1 else res


@defcomposite(nin=VARIADIC, kind=SHAPE, domain=_ANYC, method=False, sample=_sample_atleast)
def atleast_2d(F, *arys):
    """Views of the inputs with at least two dimensions (NumPy's ``atleast_2d``): ``(n,)``
    becomes ``(1, n)``, 0-d ``(1, 1)``. One tensor for one input, a tuple for several.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.atleast_2d(ndgrad.tensor([1.0, 2.0]))
    tensor([[1., 2.]])
    """
    res = tuple(_atleast(F, a, 2, _like(arys)) for a in arys)
    return res[0] if len(res) == 1 else res


@defcomposite(nin=VARIADIC, kind=SHAPE, domain=_ANYC, method=False, sample=_sample_atleast)
def atleast_3d(F, *arys):
    """Views of the inputs with at least three dimensions (NumPy's ``atleast_3d``):
    ``(m, n)`` becomes ``(m, n, 1)``, ``(n,)`` becomes ``(1, n, 1)``, 0-d ``(1, 1, 1)``. One
    tensor for one input, a tuple for several.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.atleast_3d(ndgrad.tensor([1.0, 2.0])).shape
    (1, 2, 1)
    """
    res = tuple(_atleast(F, a, 3, _like(arys)) for a in arys)
    return res[0] if len(res) == 1 else res


def _sample_ravel(d):
    return (d.array(d.shape(max_dims=3, max_side=3)),), {"order": d.choice(["C", "F"])}


@defcomposite(kind=SHAPE, domain=_ANYC, sample=_sample_ravel)
def ravel(F, a, order="C"):
    """The elements of ``a`` as a 1-D tensor (a view where possible), read in row-major
    ("C") or column-major ("F") order.

    ndgrad tensors have no memory layout of their own, so the layout-dependent orders "A" and
    "K" are refused (ValueError): say "C" or "F".

    Examples
    --------
    >>> import ndgrad
    >>> x = ndgrad.tensor([[1.0, 2.0], [3.0, 4.0]])
    >>> ndgrad.ravel(x)
    tensor([1., 2., 3., 4.])
    >>> x.ravel(order="F")
    tensor([1., 3., 2., 4.])
    """
    a = _arr(F, a)
    if order == "C":
        return F.reshape(a, (-1,))
    if order == "F":
        if _nd(a) > 1:
            a = F.permute_dims(a, tuple(range(_nd(a) - 1, -1, -1)))
        return F.reshape(a, (-1,))
    if order in ("A", "K"):
        raise ValueError(f"ravel: order={order!r} reads the elements in memory order, which "
                         "an ndgrad tensor does not expose; use order='C' (row-major) or "
                         "order='F' (column-major)")
    raise ValueError(f"ravel: order must be one of 'C', 'F', 'A' or 'K', got {order!r}")


def _sample_rollaxis(d):
    shape = d.shape(min_dims=1, max_dims=3, max_side=3)
    n = len(shape)
    return (d.array(shape), d.integers(-n, n - 1)), {"start": d.integers(-n, n)}


@defcomposite(kind=SHAPE, domain=_ANYC, method=False, sample=_sample_rollaxis)
def rollaxis(F, a, axis, start=0):
    """A view of ``a`` with ``axis`` moved to stand before position ``start`` (NumPy's
    ``rollaxis``; :func:`moveaxis` is the clearer spelling).

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.rollaxis(ndgrad.zeros((3, 4, 5)), 2).shape
    (5, 3, 4)
    >>> ndgrad.rollaxis(ndgrad.zeros((3, 4, 5)), 0, 2).shape
    (4, 3, 5)
    """
    a = _arr(F, a)
    n = _nd(a)
    axis = _axis("rollaxis", axis, n)
    start = operator.index(start)
    if start < 0:
        start += n
    if not 0 <= start < n + 1:
        raise ValueError(f"rollaxis: 'start' arg requires {-n} <= start < {n + 1}, but "
                         f"{start - n if start < 0 else start} was passed in")
    if axis < start:
        start -= 1  # (the axis is removed first)
    if axis == start:
        return _view(F, a)
    axes = [k for k in range(n) if k != axis]
    axes.insert(start, axis)
    return F.permute_dims(a, tuple(axes))


def _sample_rot90(d):
    shape = d.shape(min_dims=2, max_dims=3, max_side=3)
    n = len(shape)
    a0, a1 = d.permutation(n)[:2]
    axes = (a0 - n if d.boolean() else a0, a1)
    return (d.array(shape),), {"k": d.integers(-1, 4), "axes": axes}


@defcomposite(kind=SHAPE, domain=_ANYC, method=False, sample=_sample_rot90)
def rot90(F, m, k=1, axes=(0, 1)):
    """Rotate ``m`` by 90 degrees ``k`` times in the plane of ``axes``, from the first axis
    towards the second (a view).

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.rot90(ndgrad.tensor([[1.0, 2.0], [3.0, 4.0]]))
    tensor([[2., 4.],
            [1., 3.]])
    """
    axes = tuple(axes)
    if len(axes) != 2:
        raise ValueError("rot90: len(axes) must be 2")
    m = _arr(F, m)
    n = _nd(m)
    a0, a1 = (operator.index(a) for a in axes)
    if a0 == a1 or abs(a0 - a1) == n:
        raise ValueError("rot90: axes must be different")
    if not (-n <= a0 < n and -n <= a1 < n):
        raise ValueError(f"rot90: axes={axes} out of range for a tensor of ndim={n}")
    k = operator.index(k) % 4
    if k == 0:
        return _view(F, m)
    if k == 2:
        return F.flip(m, axis=(a0, a1))
    perm = list(range(n))
    perm[a0], perm[a1] = perm[a1], perm[a0]
    if k == 1:
        return F.permute_dims(F.flip(m, axis=a1), tuple(perm))
    return F.flip(F.permute_dims(m, tuple(perm)), axis=a1)


def _sample_resize(d):
    shape = d.shape(max_dims=2, max_side=3)
    new = d.choice([d.integers(1, 7), tuple(d.integers(1, 3) for _ in range(d.integers(1, 3)))])
    return (d.array(shape), new), {}


@defcomposite(kind=SHAPE, domain=_ANYC, method=False, sample=_sample_resize)
def resize(F, a, new_shape):
    """A tensor of shape ``new_shape`` filled with the elements of ``a`` (flattened),
    repeated cyclically as often as needed (NumPy's ``resize``; zeros if ``a`` is empty).
    The gradient of each element of ``a`` sums over its copies.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.resize(ndgrad.tensor([1.0, 2.0, 3.0]), (2, 4))
    tensor([[1., 2., 3., 1.],
            [2., 3., 1., 2.]])
    """
    a = _arr(F, a)
    new_shape = _as_int_tuple(new_shape)
    if any(s < 0 for s in new_shape):
        raise ValueError(f"resize: all elements of `new_shape` must be non-negative, got "
                         f"{new_shape}")
    flat = F.reshape(a, (-1,))
    n, total = flat.shape[0], _numel(new_shape)
    if n == 0:  # (+ the empty sum: the result stays connected to a)
        return F.zeros(new_shape, dtype=a.dtype, like=a) + F.sum(flat)
    reps = -(-total // n)
    if reps > 1:
        flat = F.tile(flat, (reps,))
    return F.reshape(flat[:total], new_shape)


def _sample_transpose(d):
    shape = d.shape(max_dims=4)
    form = d.choice(["none", "tuple", "varargs"])
    if form == "none":
        return (d.array(shape),), {}
    axes = d.permutation(len(shape))
    if form == "tuple":
        return (d.array(shape), axes), {}
    return (d.array(shape),) + tuple(axes), {}


@defcomposite(kind=SHAPE, domain=_ANYC, sample=_sample_transpose, notes={"signature": (
    "the axes may also be given as separate arguments, ``*more_axes``, as "
    "ndarray.transpose(1, 0, 2) takes them; every call NumPy's transpose(a, axes) accepts "
    "binds as there")})
def transpose(F, a, axes=None, *more_axes):
    """Permute the dimensions of ``a`` with NumPy's semantics (all reversed by default).

    ``transpose(x)`` reverses the dimensions; ``transpose(x, axes)`` is
    :func:`permute_dims`. Like ``ndarray.transpose``, the method also takes the axes as
    separate arguments: ``x.transpose(1, 0, 2)``.

    Note that this is NumPy's meaning, not PyTorch's: for a PyTorch-style
    ``x.transpose(dim0, dim1)`` (exchange two dimensions) use :func:`swapaxes`. On a 2-D
    tensor ``x.transpose(0, 1)`` is the identity permutation here.

    Parameters
    ----------
    a : Tensor
    axes : tuple of ints, optional
        A permutation of ``range(x.ndim)``; default: reversed.

    Returns
    -------
    Tensor
        A view of ``a``.

    Examples
    --------
    >>> import ndgrad
    >>> x = ndgrad.ones(2, 3, 4)
    >>> ndgrad.transpose(x).shape
    (4, 3, 2)
    >>> x.transpose(1, 0, 2).shape
    (3, 2, 4)
    >>> ndgrad.transpose(x, (0, 2, 1)).shape
    (2, 4, 3)
    """
    if more_axes:
        axes = (axes,) + more_axes
    elif axes is None:
        axes = tuple(range(a.ndim - 1, -1, -1))
    else:
        axes = _as_int_tuple(axes)
    if len(axes) != a.ndim:
        raise ValueError(
            f"transpose: axes {tuple(axes)} don't match a tensor of {a.ndim} dimensions; pass "
            "a permutation of all dimensions (NumPy semantics), or use swapaxes(x, i, j) to "
            "exchange two dimensions as PyTorch's x.transpose(i, j) does")
    return F.permute_dims(a, tuple(axes))


def _sample_swapaxes(d):
    shape = d.shape(min_dims=1, max_dims=4)
    return (d.array(shape),), {"axis1": d.axis(len(shape), none=False),
                                "axis2": d.axis(len(shape), none=False)}


@defcomposite(kind=SHAPE, domain=_ANYC, sample=_sample_swapaxes)
def swapaxes(F, a, axis1, axis2):
    """Exchange two dimensions of ``a`` (PyTorch's ``x.transpose(dim0, dim1)``).

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.ones(2, 3, 4).swapaxes(0, 2).shape
    (4, 3, 2)
    """
    nd = a.ndim
    i, j = operator.index(axis1), operator.index(axis2)
    if not (-nd <= i < nd and -nd <= j < nd):
        raise ValueError(f"swapaxes: axes ({i}, {j}) out of range for {nd} dimensions")
    axes = list(range(nd))
    axes[i % nd], axes[j % nd] = axes[j % nd], axes[i % nd]
    return F.permute_dims(a, tuple(axes))
