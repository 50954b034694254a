"""NumPy's splitting functions, written from the shape primitives: ``array_split``, ``hsplit``,
``vsplit``, ``dsplit`` (``split`` itself is a primitive). Each piece's gradient goes back to
the part of the input it was cut from.
"""

from __future__ import annotations

import operator

from ..core.ops.indexing import _axis
from ..core.ops.registry import SHAPE, defcomposite
from ..core.ops.shape import _as_int_tuple
from ._arraylike import _ANYC, _arr, _nd


# ------------------------------------------------------------------------------ splitting
def _split_points(who, n, indices_or_sections, equal):
    """The cut points of ``array_split`` (``equal``: ``split``'s rule, sections of equal
    length) of a length ``n``."""
    shape = getattr(indices_or_sections, "shape", None)  # (a 0-d array is a number)
    if len(shape) > 0 if shape is not None else hasattr(indices_or_sections, "__len__"):
        return list(_as_int_tuple(indices_or_sections))
    sections = operator.index(indices_or_sections)
    if sections <= 0:
        raise ValueError(f"{who}: number sections must be larger than 0, got {sections}")
    each, extras = divmod(n, sections)
    if equal and extras:
        raise ValueError(f"{who}: array split does not result in an equal division (length "
                         f"{n} into {sections} sections)")
    points, p = [], 0
    for s in range(sections - 1):
        p += each + (1 if s < extras else 0)
        points.append(p)
    return points


def _split(F, who, ary, indices_or_sections, axis, equal):
    ary = _arr(F, ary)
    ax = _axis(who, axis, _nd(ary))
    points = _split_points(who, ary.shape[ax], indices_or_sections, equal)
    return list(F.split(ary, points, axis=ax))


def _sample_array_split(d):
    shape = list(d.shape(min_dims=1, max_dims=3, max_side=4))
    axis = d.axis(len(shape), none=False)
    n = shape[axis]
    if n == 1 or d.boolean():
        return (d.array(tuple(shape)), d.integers(1, n)), {"axis": axis}  # (uneven allowed)
    cuts = sorted({d.integers(1, n - 1) for _ in range(d.integers(1, 2))})
    return (d.array(tuple(shape)), cuts), {"axis": axis}


@defcomposite(kind=SHAPE, domain=_ANYC, method=False, sample=_sample_array_split)
def array_split(F, ary, indices_or_sections, axis=0):
    """Split ``ary`` into a list of views along ``axis``: :func:`split`, except that an
    integer number of sections need not divide the length (the first ``length % sections``
    parts are one longer).

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.array_split(ndgrad.arange(5.0), 3)
    [tensor([0., 1.]), tensor([2., 3.]), tensor([4.])]
    """
    return _split(F, "array_split", ary, indices_or_sections, axis, False)


def _sample_xsplit(min_dims, axis_of):
    def sample(d):
        shape = list(d.shape(min_dims=min_dims, max_dims=3, max_side=3))
        axis = axis_of(len(shape))
        if d.boolean():
            k = d.integers(1, 2)
            shape[axis] = k * d.integers(1, 2)
            return (d.array(tuple(shape)), k), {}
        n = shape[axis]
        return (d.array(tuple(shape)), sorted({d.integers(0, n) for _ in range(2)})), {}
    return sample


@defcomposite(kind=SHAPE, domain=_ANYC, method=False,
              sample=_sample_xsplit(1, lambda nd: 1 if nd > 1 else 0))
def hsplit(F, ary, indices_or_sections):
    """Split ``ary`` horizontally (column-wise): :func:`split` along the second axis, the
    first for a 1-D tensor. Returns a list of views.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.hsplit(ndgrad.tensor([[1.0, 2.0], [3.0, 4.0]]), 2)
    [tensor([[1.],
            [3.]]), tensor([[2.],
            [4.]])]
    """
    ary = _arr(F, ary)
    if _nd(ary) == 0:
        raise ValueError("hsplit only works on arrays of 1 or more dimensions")
    return _split(F, "hsplit", ary, indices_or_sections, 1 if _nd(ary) > 1 else 0, True)


@defcomposite(kind=SHAPE, domain=_ANYC, method=False, sample=_sample_xsplit(2, lambda nd: 0))
def vsplit(F, ary, indices_or_sections):
    """Split ``ary`` vertically (row-wise): :func:`split` along the first axis of a tensor
    of at least 2 dimensions. Returns a list of views.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.vsplit(ndgrad.tensor([[1.0, 2.0], [3.0, 4.0]]), 2)
    [tensor([[1., 2.]]), tensor([[3., 4.]])]
    """
    ary = _arr(F, ary)
    if _nd(ary) < 2:
        raise ValueError("vsplit only works on arrays of 2 or more dimensions")
    return _split(F, "vsplit", ary, indices_or_sections, 0, True)


@defcomposite(kind=SHAPE, domain=_ANYC, method=False, sample=_sample_xsplit(3, lambda nd: 2))
def dsplit(F, ary, indices_or_sections):
    """Split ``ary`` depth-wise: :func:`split` along the third axis of a tensor of at least 3
    dimensions. Returns a list of views.

    Examples
    --------
    >>> import ndgrad
    >>> [p.shape for p in ndgrad.dsplit(ndgrad.zeros((2, 2, 4)), [1])]
    [(2, 2, 1), (2, 2, 3)]
    """
    ary = _arr(F, ary)
    if _nd(ary) < 3:
        raise ValueError("dsplit only works on arrays of 3 or more dimensions")
    return _split(F, "dsplit", ary, indices_or_sections, 2, True)
