"""NumPy's joining functions, written from the shape and indexing primitives: ``concatenate``,
``vstack`` / ``row_stack``, ``hstack``, ``dstack``, ``column_stack``, ``block``, and the
editing ones that join new values in, ``append`` and ``insert``. Registered
(``defcomposite``), so the property suites check them, and NumPy code that calls them on
Tensors runs these (ndgrad/numpy/protocols.py).

They move data: an output element's gradient goes to the input element it was copied from.
``insert``'s ``obj`` is a constant; the values inserted are differentiable.
"""

from __future__ import annotations

from ..core.ops.indexing import _axis
from ..core.ops.registry import SHAPE, VARIADIC, defalias, defcomposite
from ._arraylike import (_ANYC, _along, _arr, _as_dtype, _assigned, _atleast, _constant, _join,
                         _like, _nd, _no_out, _numel)


# ------------------------------------------------------------------------------ joining
def _sample_concatenate(d):
    n = d.integers(1, 3)
    if d.integers(0, 4) == 0:  # axis=None: any shapes, flattened
        return tuple(d.array(d.shape(max_dims=3, max_side=3)) for _ in range(n)), {"axis": None}
    shape = list(d.shape(min_dims=1, max_dims=3, max_side=3))
    axis = d.axis(len(shape), none=False)
    arrays = []
    for _ in range(n):
        shape[axis] = d.integers(1, 3)
        arrays.append(d.array(tuple(shape)))
    kwargs = {"axis": axis}
    if d.boolean():
        kwargs["dtype"] = d.dtype
    return tuple(arrays), kwargs


@defcomposite(nin=VARIADIC, pack=True, kind=SHAPE, domain=_ANYC, method=False,
              sample=_sample_concatenate)
def concatenate(F, *arrays, axis=0, out=None, dtype=None, casting="same_kind"):
    """Join a sequence of tensors along an existing axis (NumPy's ``concatenate``;
    :func:`concat` is the array API's name, without ``dtype`` and ``casting``).

    Parameters
    ----------
    arrays : sequence of tensors
        The same shape except along ``axis``.
    axis : int or None
        None: the inputs are flattened first.
    out : None
        Not supported (ndgrad returns a new tensor).
    dtype : dtype, optional
        The result's dtype (the inputs are cast to it, under the rule ``casting``).
    casting : {"no", "equiv", "safe", "same_kind", "unsafe"}

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.concatenate([ndgrad.tensor([[1.0, 2.0]]), ndgrad.tensor([[3.0, 4.0]])])
    tensor([[1., 2.],
            [3., 4.]])
    >>> ndgrad.concatenate([ndgrad.tensor([[1.0, 2.0]]), ndgrad.tensor([3.0])], axis=None)
    tensor([1., 2., 3.])
    """
    _no_out("concatenate", out)
    like = _like(arrays)
    return _join(F, "concatenate", [_arr(F, a, like) for a in arrays], axis, dtype, casting)


def _sample_vstack(d):
    tail = d.shape(min_dims=1, max_dims=2, max_side=3)
    arrays = []
    for _ in range(d.integers(1, 3)):
        r = d.choice(["rows", "1d", "0d"] if tail == (1,) else
                     ["rows", "1d"] if len(tail) == 1 else ["rows"])
        shape = {"rows": (d.integers(1, 2),) + tail, "1d": tail, "0d": ()}[r]
        arrays.append(d.array(shape))
    return tuple(arrays), {}


@defcomposite(nin=VARIADIC, pack=True, kind=SHAPE, domain=_ANYC, method=False,
              sample=_sample_vstack)
def vstack(F, *tup, dtype=None, casting="same_kind"):
    """Stack tensors in sequence vertically (row-wise): :func:`concatenate` along the first
    axis after :func:`atleast_2d` (1-D tensors become rows). Alias: ``row_stack``.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.vstack([ndgrad.tensor([1.0, 2.0]), ndgrad.tensor([[3.0, 4.0], [5.0, 6.0]])])
    tensor([[1., 2.],
            [3., 4.],
            [5., 6.]])
    """
    like = _like(tup)
    return _join(F, "vstack", [_atleast(F, a, 2, like) for a in tup], 0, dtype, casting)


defalias("row_stack", "vstack")


def _sample_hstack(d):
    n = d.integers(1, 3)
    if d.boolean():  # 1-D (and 0-d) tensors: joined along their one axis
        return tuple(d.array(d.choice([(d.integers(1, 3),), ()])) for _ in range(n)), {}
    lead = d.integers(1, 3)
    rest = d.shape(max_dims=1, max_side=3)
    return tuple(d.array((lead, d.integers(1, 2)) + rest) for _ in range(n)), {}


@defcomposite(nin=VARIADIC, pack=True, kind=SHAPE, domain=_ANYC, method=False,
              sample=_sample_hstack)
def hstack(F, *tup, dtype=None, casting="same_kind"):
    """Stack tensors in sequence horizontally (column-wise): :func:`concatenate` along the
    second axis, or the first for 1-D tensors (0-d ones count as 1-D).

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.hstack([ndgrad.tensor([1.0, 2.0]), ndgrad.tensor(3.0)])
    tensor([1., 2., 3.])
    >>> ndgrad.hstack([ndgrad.tensor([[1.0], [2.0]]), ndgrad.tensor([[3.0], [4.0]])])
    tensor([[1., 3.],
            [2., 4.]])
    """
    like = _like(tup)
    arrays = [_atleast(F, a, 1, like) for a in tup]
    axis = 0 if arrays and _nd(arrays[0]) == 1 else 1
    return _join(F, "hstack", arrays, axis, dtype, casting)


def _sample_dstack(d):
    m, k = d.integers(1, 3), d.integers(1, 3)
    choices = ["3d", "2d"] + (["1d"] if m == 1 else []) + (["0d"] if m == k == 1 else [])
    arrays = []
    for _ in range(d.integers(1, 3)):
        r = d.choice(choices)
        shape = {"3d": (m, k, d.integers(1, 2)), "2d": (m, k), "1d": (k,), "0d": ()}[r]
        arrays.append(d.array(shape))
    return tuple(arrays), {}


@defcomposite(nin=VARIADIC, pack=True, kind=SHAPE, domain=_ANYC, method=False,
              sample=_sample_dstack)
def dstack(F, *tup):
    """Stack tensors in sequence depth-wise: :func:`concatenate` along the third axis after
    :func:`atleast_3d` (a ``(m, n)`` tensor becomes ``(m, n, 1)``, a ``(n,)`` one
    ``(1, n, 1)``).

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.dstack([ndgrad.tensor([1.0, 2.0]), ndgrad.tensor([3.0, 4.0])])
    tensor([[[1., 3.],
             [2., 4.]]])
    """
    like = _like(tup)
    return _join(F, "dstack", [_atleast(F, a, 3, like) for a in tup], 2)


def _sample_column_stack(d):
    n = d.integers(1, 3)
    arrays = []
    for _ in range(d.integers(1, 3)):
        r = d.choice(["1d", "2d"] + (["0d"] if n == 1 else []))
        arrays.append(d.array({"1d": (n,), "2d": (n, d.integers(1, 2)), "0d": ()}[r]))
    return tuple(arrays), {}


@defcomposite(nin=VARIADIC, pack=True, kind=SHAPE, domain=_ANYC, method=False,
              sample=_sample_column_stack)
def column_stack(F, *tup):
    """Stack 1-D tensors as columns into a 2-D tensor (2-D ones are joined as they are):
    :func:`concatenate` along the second axis.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.column_stack([ndgrad.tensor([1.0, 2.0]), ndgrad.tensor([3.0, 4.0])])
    tensor([[1., 3.],
            [2., 4.]])
    """
    arrays, like = [], _like(tup)
    for a in tup:
        a = _arr(F, a, like)
        if _nd(a) < 2:
            a = F.reshape(a, (-1, 1))
        arrays.append(a)
    return _join(F, "column_stack", arrays, 1)


def _block_index(index):
    return "arrays" + "".join(f"[{i}]" for i in index)


def _block_depths(arrays, index=()):
    """NumPy's ``_block_check_depths_match``: ``(index of the first leaf, largest leaf
    ndim)``; the index ends in None where the first list is empty."""
    if type(arrays) is tuple:
        raise TypeError(f"block: {_block_index(index)} is a tuple. Only lists can be used to "
                        "arrange blocks, and block does not allow implicit conversion from "
                        "tuple to array")
    if type(arrays) is list and arrays:
        first, ndim = None, 0
        for i, a in enumerate(arrays):
            idx, nd = _block_depths(a, index + (i,))
            ndim = max(ndim, nd)
            if first is None:
                first = idx
                continue
            if len(idx) != len(first):
                raise ValueError(f"block: list depths are mismatched. First element was at "
                                 f"depth {len(first)}, but there is an element at depth "
                                 f"{len(idx)} ({_block_index(idx)})")
            if idx[-1] is None:
                first = idx
        return first, ndim
    if type(arrays) is list:
        return index + (None,), 0
    return index, len(getattr(arrays, "shape", ()))


def _block_assemble(F, arrays, depth, list_ndim, result_ndim, like):
    if type(arrays) is list:
        parts = [_block_assemble(F, a, depth + 1, list_ndim, result_ndim, like)
                 for a in arrays]
        return _join(F, "block", parts, result_ndim - (list_ndim - depth))
    a = _arr(F, arrays, like)
    if _nd(a) < result_ndim:
        a = F.reshape(a, (1,) * (result_ndim - _nd(a)) + tuple(a.shape))
    return a


def _sample_block(d):
    if d.integers(0, 2):  # a single tensor (the one case whose input the suites differentiate)
        return (d.array(d.shape(max_dims=2, max_side=3)),), {}
    # nested lists of arrays: compared with NumPy (tests/test_stacking.py differentiates them)
    r1, r2, c1, c2 = (d.integers(1, 2) for _ in range(4))
    if d.boolean():
        return ([d.array((r1,)), d.array((r2,))],), {}
    return ([[d.array((r1, c1)), d.array((r1, c2))],
             [d.array((r2, c1)), d.array((r2, c2))]],), {}


@defcomposite(kind=SHAPE, domain=_ANYC, method=False, sample=_sample_block,
              sequences=("arrays",))
def block(F, arrays):
    """Assemble a tensor from nested lists of blocks (NumPy's ``block``): the innermost lists
    are joined along the last axis, the next ones along the second-to-last, and so on; blocks
    get leading length-1 dimensions up to the result's number of dimensions (the nesting
    depth, or the largest block's dimensions if more). Only lists nest (a tuple is an error);
    a tensor alone is returned as a copy.

    Examples
    --------
    >>> import ndgrad
    >>> A = ndgrad.tensor([[1.0, 2.0], [3.0, 4.0]])
    >>> ndgrad.block([[A, ndgrad.zeros((2, 1))], [ndgrad.ones((1, 2)), ndgrad.tensor(5.0)]])
    tensor([[1., 2., 0.],
            [3., 4., 0.],
            [1., 1., 5.]])
    """
    first, arr_ndim = _block_depths(arrays)
    if first and first[-1] is None:
        raise ValueError(f"block: list at {_block_index(first[:-1])} cannot be empty")
    list_ndim = len(first)
    result_ndim = max(arr_ndim, list_ndim)
    if list_ndim == 0:
        return F.clone(_atleast_nd(F, _arr(F, arrays), result_ndim))
    return _block_assemble(F, arrays, 0, list_ndim, result_ndim, _like(arrays))


def _atleast_nd(F, a, n):
    return a if _nd(a) >= n else F.reshape(a, (1,) * (n - _nd(a)) + tuple(a.shape))


# ------------------------------------------------------------------------------ editing
def _sample_append(d):
    shape = list(d.shape(min_dims=1, max_dims=3, max_side=3))
    if d.boolean():
        return (d.array(tuple(shape)), d.array(d.shape(max_dims=2, max_side=3))), {}
    axis = d.axis(len(shape), none=False)
    arr = d.array(tuple(shape))
    shape[axis] = d.integers(1, 2)
    return (arr, d.array(tuple(shape))), {"axis": axis}


@defcomposite(nin=2, kind=SHAPE, domain=_ANYC, method=False, sample=_sample_append)
def append(F, arr, values, axis=None):
    """``values`` joined to the end of ``arr`` along ``axis`` (both flattened when ``axis``
    is None); both are differentiable.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.append(ndgrad.tensor([1.0, 2.0]), ndgrad.tensor([[3.0], [4.0]]))
    tensor([1., 2., 3., 4.])
    """
    like = _like(arr, values)
    return _join(F, "append", [_arr(F, arr, like), _arr(F, values, like)], axis)


def _flattened(F, arr, axis, who):
    """``(arr, axis)``: flattened with axis 0 when ``axis`` is None."""
    if axis is None:
        return (arr if _nd(arr) == 1 else F.reshape(arr, (-1,))), 0
    return arr, _axis(who, axis, _nd(arr))


def _sample_insert(d):
    shape = d.shape(min_dims=1, max_dims=3, max_side=3)
    arr = d.array(shape)
    axis = d.choice([None, d.axis(len(shape), none=False)])
    shp = (_numel(shape),) if axis is None else shape
    ax = 0 if axis is None else axis % len(shape)
    n = shp[ax]
    kind = d.choice(["scalar", "list", "slice"])
    if kind == "scalar":
        obj = d.integers(-n, n)
        other = shp[:ax] + shp[ax + 1:]
        vshape = d.choice([(), other] if other else [(), (d.integers(1, 2),)])
        return (arr, obj, d.array(vshape)), {"axis": axis}
    if kind == "list":
        obj = [d.integers(-n, n) for _ in range(d.integers(1, 3))]
    else:
        start = d.integers(0, n - 1)
        obj = slice(start, d.integers(start + 1, n + 1), d.choice([None, 1, 2]))
    count = len(obj) if kind == "list" else len(range(*obj.indices(n)))
    target = shp[:ax] + (count,) + shp[ax + 1:]
    return (arr, obj, d.array(d.choice([(), target]))), {"axis": axis}


@defcomposite(nin=3, kind=SHAPE, domain=_ANYC, method=False, sample=_sample_insert)
def insert(F, arr, obj, values, axis=None):
    """``arr`` with ``values`` inserted before the positions ``obj`` along ``axis`` (of the
    flattened ``arr`` when ``axis`` is None), NumPy's ``insert``.

    ``obj`` is an int, a slice, or a sequence of ints or bools (a mask of positions); it is a
    constant. ``values`` (differentiable) is cast to ``arr``'s dtype and broadcast as NumPy
    does: for a single int ``obj`` its first axis becomes ``axis`` (``insert(a, 1, [1, 2],
    axis=1)`` inserts one column), for a sequence it is laid out like ``arr[..., obj, ...]``.

    Examples
    --------
    >>> import ndgrad
    >>> a = ndgrad.tensor([[1.0, 2.0], [3.0, 4.0]])
    >>> ndgrad.insert(a, 1, ndgrad.tensor([5.0, 6.0]), axis=1)
    tensor([[1., 5., 2.],
            [3., 6., 4.]])
    >>> ndgrad.insert(ndgrad.tensor([1.0, 2.0, 3.0]), [0, 2], ndgrad.tensor([7.0, 8.0]))
    tensor([7., 1., 2., 8., 3.])
    """
    like = _like(arr, values)
    arr, values = _arr(F, arr, like), _arr(F, values, like)
    arr, ax = _flattened(F, arr, axis, "insert")
    nd = _nd(arr)
    n = arr.shape[ax]
    if isinstance(obj, slice):
        indices, scalar = list(range(*obj.indices(n))), False
    else:
        value, ndim, kind = _constant("insert", "obj", obj)
        if kind == "b":
            if ndim != 1:
                raise ValueError("insert: boolean array argument obj to insert must be one "
                                 "dimensional")
            indices = [i for i, b in enumerate(value) if b]
        elif ndim > 1:
            raise ValueError("insert: index array argument obj to insert must be one "
                             "dimensional or scalar")
        else:
            indices = [value] if ndim == 0 else list(value)
        scalar = ndim == 0
    values = _as_dtype(F, values, arr.dtype)
    for i in indices:
        if not -n <= i <= n:
            raise IndexError(f"insert: index {i} is out of bounds for axis {ax} with size {n}")
    if len(indices) == 1:
        index = indices[0] + n if indices[0] < 0 else indices[0]
        v = _atleast_nd(F, values, nd)
        if scalar:  # (NumPy: a[:, 0] = ... broadcasts otherwise than a[:, [0]] = ...)
            v = F.moveaxis(v, 0, ax)
        numnew = v.shape[ax]
        target = tuple(arr.shape[:ax]) + (numnew,) + tuple(arr.shape[ax + 1:])
        v = _assigned(F, "insert", v, target)
        parts = [arr[_along(ax, slice(0, index))], v, arr[_along(ax, slice(index, n))]]
        return F.concat(parts, axis=ax)
    # several positions: inserted values go to the (stably) sorted positions, each shifted
    # by the number of insertions before it; the old elements fill the rest in order
    indices = [i + n if i < 0 else i for i in indices]
    numnew = len(indices)
    target = tuple(arr.shape[:ax]) + (numnew,) + tuple(arr.shape[ax + 1:])
    v = _assigned(F, "insert", values, target)
    if numnew == 0:  # (joined with the empty values: the result is on their graph too)
        return F.concat([arr, v], axis=ax)
    order = sorted(range(numnew), key=lambda k: indices[k])
    source = [None] * (n + numnew)
    for shift, k in enumerate(order):
        source[indices[k] + shift] = n + k  # position in concat([arr, v])
    old = iter(range(n))
    source = [next(old) if s is None else s for s in source]
    joined = F.concat([arr, v], axis=ax)
    return joined[_along(ax, source)]
