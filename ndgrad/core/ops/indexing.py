"""Indexing primitives: ``__getitem__`` (basic and advanced), ``index_put`` (the op behind
``__setitem__``), ``index_add`` (scatter-add, the vjp of advanced indexing), take,
take_along_axis, sort.
"""

from __future__ import annotations

from ..tensor import Tensor
from .registry import INDEXING, Domain, defop

ANY = Domain((-2.0, 2.0), complex=True)


def normalize_index(index):
    """Index with Tensors replaced by their arrays and lists by arrays (hashable-free)."""
    if isinstance(index, tuple):
        return tuple(normalize_index(i) for i in index)
    if isinstance(index, Tensor):
        if index.dtype.kind not in "iub":
            raise IndexError(f"tensors used as indices must be integer or bool, got {index.dtype}")
        return index._data
    if isinstance(index, list):
        from ..backend import NUMPY
        arr = NUMPY.asarray(index)
        if arr.dtype.kind not in "iub":
            raise IndexError("lists used as indices must hold integers or bools")
        return arr
    return index


def is_basic(index):
    """True when ``index`` has only ints, slices, None and Ellipsis (a view, no repeats)."""
    if not isinstance(index, tuple):
        index = (index,)
    for i in index:
        if not (i is None or i is Ellipsis or isinstance(i, (int, slice))):
            return False
    return True


@defop(kind=INDEXING, domain=ANY, view=True, method=False)
def getitem(B, x, index):
    """``x[index]``: basic indexing (a view) or advanced indexing (a copy).

    Examples
    --------
    >>> import ndgrad
    >>> x = ndgrad.arange(6.0).reshape(2, 3)
    >>> ndgrad.getitem(x, (1, slice(0, 2)))
    tensor([3., 4.])
    >>> x[:, [0, 0]]
    tensor([[0., 0.],
            [3., 3.]])
    """
    return x[index]


# repeated indices accumulate: index_add scatters with addition
getitem.defvjp(lambda F, g, out, x, index: F.index_add(F.zeros_like(x), g, index=index))
getitem.defjvp_linear()


def _getitem_public(x, index):
    from ..dispatch import apply
    return apply(getitem, x, index=normalize_index(index))


_getitem_public.__doc__ = getitem.__doc__
getitem.custom_public = _getitem_public


@defop(kind=INDEXING, nin=2, domain=ANY, method=False)
def index_add(B, x, values, index):
    """``x`` with ``values`` added at ``index``; repeated indices accumulate.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.index_add(ndgrad.zeros(3), ndgrad.ones(2), index=[0, 0])
    tensor([2., 0., 0.])
    """
    out = B.array(x, copy=True, dtype=B.result_type(x, values))
    if is_basic(index):
        out[index] += values
    else:
        B.scatter_add(out, index, values)
    return out


index_add.defvjp(lambda F, g, out, x, values, index: g,
                 lambda F, g, out, x, values, index: g[index])
index_add.defjvp_linear()


def _index_add_public(x, values, index):
    from ..dispatch import apply
    return apply(index_add, x, values, index=normalize_index(index))


_index_add_public.__doc__ = index_add.__doc__
index_add.custom_public = _index_add_public


@defop(kind=INDEXING, nin=2, domain=ANY, method=False)
def index_put(B, x, values, index):
    """``x`` with ``x[index] = values`` (the functional form of ``__setitem__``).

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.index_put(ndgrad.zeros(3), 5.0, index=1)
    tensor([0., 5., 0.])
    """
    out = B.array(x, copy=True)
    out[index] = values
    return out


def _index_put_vjp_x(F, g, out, x, values, index):
    return F.index_put(g, F.zeros_like(g[index]), index=index)


index_put.defvjp(_index_put_vjp_x,
                 lambda F, g, out, x, values, index: g[index])
index_put.defjvp_linear()


def _index_put_public(x, values, index):
    from ..dispatch import apply
    return apply(index_put, x, values, index=normalize_index(index))


_index_put_public.__doc__ = index_put.__doc__
index_put.custom_public = _index_put_public


def setitem(x, index, value):
    """``x[index] = value`` in place (rebases ``x``'s history when recording)."""
    from ..dispatch import apply_inplace
    return apply_inplace(index_put, x, value, index=normalize_index(index))
