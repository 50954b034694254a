"""NumPy's array-manipulation functions, written from the shape and indexing primitives.

Joining (``concatenate``, ``vstack`` / ``row_stack``, ``hstack``, ``dstack``,
``column_stack``, ``block``), dimensions (``atleast_1d`` / ``2d`` / ``3d``, ``ravel``,
``rollaxis``, ``rot90``), splitting (``array_split``, ``hsplit``, ``vsplit``, ``dsplit``),
editing (``append``, ``insert``, ``delete``, ``resize``, ``trim_zeros``, ``diagflat``),
selecting (``compress``, ``extract``, ``choose``, ``select``, ``piecewise``, ``partition``)
and the ``apply_along_axis`` / ``apply_over_axes`` helpers. They are registered, so the
property suites check them, and NumPy code that calls them on Tensors runs these
(ndgrad/numpy_protocols.py). All are composites (``defcomposite``) but ``trim_zeros``, a
primitive: its output's shape depends on the values, so ``vmap`` must run it once per batch
element, which only a primitive can declare (its rules gather by positions computed from the
values, so they batch).

All of them move data: an output element's gradient goes to the input element it was copied
from (and to none where a constant or a zero fills it). Index, mask and condition arguments
(``insert``'s and ``delete``'s ``obj``, ``compress``'s ``condition``, ``choose``'s indices,
``select``'s ``condlist``, ``piecewise``'s ``condlist``) are constants; the values inserted,
chosen or selected are differentiable.

NumPy's in-place writers ``place``, ``put``, ``putmask``, ``fill_diagonal`` and
``put_along_axis`` are plain functions here (they modify their first argument and return
None, which the registry's suites cannot check): they write through the Tensor's indexed
assignment ``a[index] = values``, so the version counter and autograd's in-place checks
apply, and the values written are differentiable.
"""

from __future__ import annotations

import itertools
import math
import operator

from ..backend import NUMPY
from ..creation import asarray
from ..dispatch import TENSOR_F
from ..tensor import Tensor
from .batching import is_batched
from .indexing import _along_axis_index
from .registry import (INDEXING, SHAPE, VARIADIC, Domain, defalias, defcomposite, defop,
                       linear, sample_numpy)
from .shape import _as_int_tuple

__all__ = ["place", "put", "putmask", "fill_diagonal", "put_along_axis", "INPLACE"]

_ANY = Domain((-2.0, 2.0), complex=True)
_REAL = Domain((-2.0, 2.0))
_CASTINGS = ("no", "equiv", "safe", "same_kind", "unsafe")


# ------------------------------------------------------------------------------ helpers
def _arr(F, x, like=None):
    """``x`` as an array of ``F``: arrays and Tensors as they are, lists and numbers
    converted (NumPy's ``asarray``), on the device of ``like`` (a Tensor) when given."""
    if isinstance(x, Tensor) or hasattr(x, "shape") and hasattr(x, "__len__"):
        return x  # (a NumPy scalar has no __len__: it is converted like a number)
    if F is TENSOR_F:
        return asarray(x, device=like.device if isinstance(like, Tensor) else None)
    return F.clone(x)  # (a raw namespace: its backend's current device)


def _view(F, x):
    """A view of ``x`` (what NumPy returns where nothing moves): a Tensor for ndgrad's
    functions, also of a NumPy array."""
    if isinstance(x, Tensor) or F is not TENSOR_F:
        return x[...]
    return F.reshape(x, tuple(x.shape))


def _like(*items):
    """The first Tensor among ``items`` (nested lists and tuples searched), or None: where
    numbers and lists among them are converted to."""
    for x in items:
        if isinstance(x, Tensor):
            return x
        if isinstance(x, (list, tuple)):
            found = _like(*x)
            if found is not None:
                return found
    return None


def _nd(x):
    return len(x.shape)


def _numel(shape):
    return math.prod(shape)


def _axis(who, axis, ndim, what="axis"):
    """``axis`` in ``[0, ndim)``; NumPy's AxisError (a ValueError) naming ``who`` and the
    parameter ``what`` otherwise."""
    try:
        axis = operator.index(axis)
    except TypeError:
        raise TypeError(f"{who}: {what} must be an integer, got {type(axis).__name__}") from None
    if not -ndim <= axis < ndim:
        raise NUMPY.exceptions.AxisError(f"{who}: {what} {axis} is out of bounds for a "
                                         f"{ndim}-D tensor")
    return axis % ndim


def _no_out(who, out):
    """NumPy's ``out=``: only its default (None); ndgrad functions return new tensors."""
    if out is not None:
        raise TypeError(f"{who}: out= is not supported (ndgrad returns a new tensor, and an "
                        "in-place write would need its own derivative); drop out= and use "
                        "the result")


def _along(ax, index):
    """The index that applies ``index`` to dimension ``ax`` (all of the others kept)."""
    return (slice(None),) * ax + (index,)


def _broadcast_shapes(who, *shapes):
    nd = max((len(s) for s in shapes), default=0)
    out = [1] * nd
    for s in shapes:
        for k, n in enumerate(s):
            j = nd - len(s) + k
            if n != 1 and out[j] not in (1, n):
                raise ValueError(f"{who}: shapes {' '.join(map(str, shapes))} cannot be "
                                 "broadcast together")
            out[j] = n if n != 1 else out[j]
    return tuple(out)


def _assigned(F, who, v, shape):
    """``v`` broadcast to ``shape`` as ``a[...] = v`` assigns it (leading length-1
    dimensions of ``v`` beyond ``shape``'s are dropped)."""
    vs = tuple(v.shape)
    while len(vs) > len(shape) and vs[0] == 1:
        vs = vs[1:]
    if len(vs) > len(shape) or any(a not in (1, b) for a, b in zip(vs[::-1], shape[::-1])):
        raise ValueError(f"{who}: values of shape {tuple(v.shape)} cannot be broadcast to "
                         f"shape {tuple(shape)}")
    if vs != tuple(v.shape):
        v = F.reshape(v, vs)
    return v if vs == tuple(shape) else F.broadcast_to(v, tuple(shape))


def _as_dtype(F, v, dtype):
    return v if v.dtype == dtype else F.astype(v, dtype)


def _runs(positions):
    """Consecutive runs ``(start, stop)`` of a sorted list of positions."""
    runs = []
    for p in positions:
        if runs and runs[-1][1] == p:
            runs[-1][1] = p + 1
        else:
            runs.append([p, p + 1])
    return runs


def _keep(F, x, ax, positions):
    """A copy of ``x`` restricted to the sorted ``positions`` along ``ax``: the runs of
    consecutive positions sliced and joined (NumPy's ``delete`` returns a new array)."""
    runs = _runs(positions)
    if not runs:
        return x[_along(ax, slice(0, 0))]
    parts = [x[_along(ax, slice(a, b))] for a, b in runs]
    return F.concat(parts, axis=ax) if len(parts) > 1 else F.clone(parts[0])


def _constant(who, what, obj):
    """A constant index argument as Python values: ``(value, ndim, kind)`` with kind "b"
    (bools), "i" (ints); Tensors and arrays are read (they are not differentiated)."""
    if hasattr(obj, "tolist") and hasattr(obj, "dtype"):
        kind = obj.dtype.kind
        value = obj.tolist()
        ndim = len(obj.shape)
        if kind == "u":
            kind = "i"
    else:
        value = _listify(obj)
        ndim, probe = 0, value
        while isinstance(probe, list):
            ndim += 1
            probe = probe[0] if probe else None
        flat = _flatten(value)
        if all(isinstance(v, bool) for v in flat) and flat:
            kind = "b"
        elif all(isinstance(v, bool) or hasattr(v, "__index__") for v in flat):
            kind = "i"
        else:
            kind = "?"
    if kind not in "bi":
        raise TypeError(f"{who}: {what} must hold integers or bools, got {obj!r}")
    if kind == "i":
        value = _ints(value)
    return value, ndim, kind


def _listify(v):
    return [_listify(e) for e in v] if isinstance(v, (list, tuple)) else v


def _flatten(v):
    if isinstance(v, list):
        return [e for x in v for e in _flatten(x)]
    return [v]


def _ints(v):
    return [_ints(e) for e in v] if isinstance(v, list) else operator.index(v)


def _check_casting(who, arrays, dtype, casting):
    """NumPy's ``casting=`` rule for joining ``arrays`` (into ``dtype`` when given)."""
    if casting not in _CASTINGS:
        raise ValueError(f"{who}: casting must be one of {', '.join(map(repr, _CASTINGS))}, "
                         f"got {casting!r}")
    if dtype is None and casting in ("same_kind", "unsafe"):
        return None  # (promotion is always same_kind)
    dtypes = [a.dtype for a in arrays]
    # dtype logic only (dtypes are NumPy's on every backend): no array is computed on
    target = NUMPY.dtype(dtype) if dtype is not None else NUMPY.result_type(*dtypes)
    for d in dtypes:
        if not NUMPY.can_cast(d, target, casting):
            raise TypeError(f"{who}: cannot cast array data from {d} to {target} according "
                            f"to the rule {casting!r}")
    return target


def _join(F, who, arrays, axis, dtype=None, casting="same_kind"):
    """NumPy's ``concatenate`` of ``arrays`` (arrays of F) along ``axis`` (None: flattened),
    with its checks named after ``who``."""
    if not arrays:
        raise ValueError(f"{who}: need at least one array to concatenate")
    target = _check_casting(who, arrays, dtype, casting)
    if target is not None and dtype is not None:
        arrays = [_as_dtype(F, a, target) for a in arrays]
    if axis is None:
        return F.concat(list(arrays), axis=None)
    nd = _nd(arrays[0])
    if nd == 0:
        raise ValueError(f"{who}: zero-dimensional arrays cannot be concatenated")
    ax = _axis(who, axis, nd)
    first = tuple(arrays[0].shape)
    for k, a in enumerate(arrays[1:], 1):
        if _nd(a) != nd:
            raise ValueError(f"{who}: all the input arrays must have the same number of "
                             f"dimensions, but array 0 has {nd} dimension(s) and array {k} "
                             f"has {_nd(a)} dimension(s)")
        for d in range(nd):
            if d != ax and a.shape[d] != first[d]:
                raise ValueError(f"{who}: all the input array dimensions except for the "
                                 f"concatenation axis must match exactly, but along "
                                 f"dimension {d}, array 0 has size {first[d]} and array {k} "
                                 f"has size {a.shape[d]}")
    return F.concat(list(arrays), axis=ax)


def _atleast(F, x, n, like=None):
    """NumPy's ``atleast_1d`` / ``2d`` / ``3d`` of one array: a view with ones added
    (``3d``: a 1-D ``(k,)`` becomes ``(1, k, 1)`` and a 2-D ``(m, k)`` becomes ``(m, k, 1)``)."""
    x = _arr(F, x, like)
    shape = tuple(x.shape)
    if len(shape) >= n:  # (NumPy returns the array itself)
        return x if isinstance(x, Tensor) or F is not TENSOR_F else _view(F, x)
    if n == 3 and len(shape) == 1:
        return F.reshape(x, (1,) + shape + (1,))
    if n == 3 and len(shape) == 2:
        return F.reshape(x, shape + (1,))
    return F.reshape(x, (1,) * (n - len(shape)) + shape)


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


@defcomposite(nin=VARIADIC, pack=True, kind=SHAPE, domain=_ANY, method=False,
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


@defcomposite(nin=VARIADIC, pack=True, kind=SHAPE, domain=_ANY, method=False,
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


@defcomposite(nin=VARIADIC, pack=True, kind=SHAPE, domain=_ANY, method=False,
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


@defcomposite(nin=VARIADIC, pack=True, kind=SHAPE, domain=_ANY, method=False,
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


@defcomposite(nin=VARIADIC, pack=True, kind=SHAPE, domain=_ANY, method=False,
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


@defcomposite(kind=SHAPE, domain=_ANY, method=False, sample=_sample_block,
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


# ------------------------------------------------------------------------------ dimensions
def _sample_atleast(d):
    return tuple(d.array(d.shape(max_dims=3, max_side=3)) for _ in range(d.integers(1, 3))), {}


@defcomposite(nin=VARIADIC, kind=SHAPE, domain=_ANY, method=False, sample=_sample_atleast)
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


@defcomposite(nin=VARIADIC, kind=SHAPE, domain=_ANY, method=False, sample=_sample_atleast)
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


@defcomposite(nin=VARIADIC, kind=SHAPE, domain=_ANY, method=False, sample=_sample_atleast)
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


@defcomposite(kind=SHAPE, domain=_ANY, sample=_sample_ravel)
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


@defcomposite(kind=SHAPE, domain=_ANY, method=False, sample=_sample_rollaxis)
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


@defcomposite(kind=SHAPE, domain=_ANY, method=False, sample=_sample_rot90)
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


@defcomposite(kind=SHAPE, domain=_ANY, method=False, sample=_sample_array_split)
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


@defcomposite(kind=SHAPE, domain=_ANY, method=False,
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


@defcomposite(kind=SHAPE, domain=_ANY, method=False, sample=_sample_xsplit(2, lambda nd: 0))
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


@defcomposite(kind=SHAPE, domain=_ANY, method=False, sample=_sample_xsplit(3, lambda nd: 2))
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


# ------------------------------------------------------------------------------ editing
def _sample_append(d):
    shape = list(d.shape(min_dims=1, max_dims=3, max_side=3))
    if d.boolean():
        return (d.array(tuple(shape)), d.array(d.shape(max_dims=2, max_side=3))), {}
    axis = d.axis(len(shape), none=False)
    arr = d.array(tuple(shape))
    shape[axis] = d.integers(1, 2)
    return (arr, d.array(tuple(shape))), {"axis": axis}


@defcomposite(nin=2, kind=SHAPE, domain=_ANY, method=False, sample=_sample_append)
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


@defcomposite(nin=3, kind=SHAPE, domain=_ANY, method=False, sample=_sample_insert)
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


def _sample_delete(d):
    np = sample_numpy()
    shape = d.shape(min_dims=1, max_dims=3, max_side=3)
    axis = d.choice([None, d.axis(len(shape), none=False)])
    n = _numel(shape) if axis is None else shape[axis]
    kind = d.choice(["int", "list", "mask", "slice"])
    if n == 1:  # nothing may be deleted: an empty list
        obj = []
    elif kind == "int":
        obj = d.integers(-n, n - 1)
    elif kind == "list":
        obj = [d.integers(-n, n - 1) for _ in range(d.integers(1, n - 1))]
    elif kind == "mask":
        obj = d.bool_array((n,))
        obj[d.integers(0, n - 1)] = False  # (something is kept)
    else:
        obj = slice(d.integers(1, n - 1), None, d.choice([None, 2]))
    if isinstance(obj, list) and d.boolean():
        obj = np.array(obj, dtype=np.int64)
    return (d.array(shape), obj), {"axis": axis}


@defcomposite(kind=SHAPE, domain=_ANY, method=False, sample=_sample_delete)
def delete(F, arr, obj, axis=None):
    """A copy of ``arr`` without the entries ``obj`` along ``axis`` (of the flattened
    ``arr`` when ``axis`` is None), NumPy's ``delete``.

    ``obj`` is an int, a slice, a sequence of ints, or a boolean mask of the axis' length;
    it is a constant.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.delete(ndgrad.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]), 1, axis=1)
    tensor([[1., 3.],
            [4., 6.]])
    >>> ndgrad.delete(ndgrad.tensor([1.0, 2.0, 3.0, 4.0]), [True, False, True, False])
    tensor([2., 4.])
    """
    arr = _arr(F, arr)
    arr, ax = _flattened(F, arr, axis, "delete")
    n = arr.shape[ax]
    if isinstance(obj, slice):
        gone = set(range(*obj.indices(n)))
    else:
        value, ndim, kind = _constant("delete", "obj", obj)
        if kind == "b":
            if ndim != 1 or len(value) != n:
                raise ValueError(f"delete: boolean array argument obj to delete must be one "
                                 f"dimensional and match the axis length of {n}")
            gone = {i for i, b in enumerate(value) if b}
        else:
            flat = _flatten(value)
            for i in flat:
                if not -n <= i < n:
                    raise IndexError(f"delete: index {i} is out of bounds for axis {ax} with "
                                     f"size {n}")
            gone = {i % n for i in flat}
    return _keep(F, arr, ax, [i for i in range(n) if i not in gone])


def _sample_resize(d):
    shape = d.shape(max_dims=2, max_side=3)
    new = d.choice([d.integers(1, 7), tuple(d.integers(1, 3) for _ in range(d.integers(1, 3)))])
    return (d.array(shape), new), {}


@defcomposite(kind=SHAPE, domain=_ANY, method=False, sample=_sample_resize)
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


def _sample_trim_zeros(d):
    # no exact zeros: trimming one changes the output's shape, where finite differences
    # cannot follow (tests/test_stacking.py trims zeros and checks their gradient)
    shape = d.shape(min_dims=1, max_dims=2, max_side=3)
    axis = d.choice([None, d.axis(len(shape), none=False)])
    return (d.array(shape),), {"trim": d.choice(["fb", "f", "b", "BF"]), "axis": axis}


def _trim_axes(trim, axis, ndim):
    """The checked ``trim`` (lower case) and the trimmed axes of ``trim_zeros``."""
    if not isinstance(trim, str) or trim.lower() not in ("fb", "bf", "f", "b"):
        raise ValueError(f"trim_zeros: unexpected character(s) in `trim`: {trim!r}")
    if axis is None:
        return trim.lower(), tuple(range(ndim))
    axes = tuple(_axis("trim_zeros", ax, ndim)
                 for ax in (axis if isinstance(axis, (tuple, list)) else (axis,)))
    if len(set(axes)) != len(axes):
        raise ValueError(f"trim_zeros: repeated axis in {axis!r}")
    return trim.lower(), axes


@defop(kind=INDEXING, domain=_ANY, method=False, sample=_sample_trim_zeros,
       notes={"vmap": "the trimmed shape depends on the values, so there is no batching "
                      "rule; the batch elements' trimmed shapes must agree"})
def trim_zeros(B, filt, trim="fb", axis=None):
    """``filt`` without its leading ("f") and/or trailing ("b") zeros along ``axis`` (every
    axis when None: the smallest box holding every nonzero element), NumPy's ``trim_zeros``.

    The trimmed elements are zeros the output does not depend on: their gradient is zero.
    The result is a copy (NumPy returns a view). The output's shape depends on the values,
    so ``vmap`` runs it once per batch element (their trimmed shapes must agree).

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.trim_zeros(ndgrad.tensor([0.0, 0.0, 1.0, 2.0, 0.0]))
    tensor([1., 2.])
    >>> ndgrad.trim_zeros(ndgrad.tensor([0.0, 1.0, 0.0]), trim="b")
    tensor([0., 1.])
    """
    filt = B.asarray(filt)  # (a list or a number, from the public function)
    trim, axes = _trim_axes(trim, axis, filt.ndim)
    if not axes:
        return B.array(filt, copy=True)
    if not B.reads_values:
        raise B.unsupported("trim_zeros", why="the result's shape depends on the values "
                                                "(where the zeros are)")
    nonzero = filt != 0
    index = [slice(None)] * filt.ndim
    for ax in axes:
        others = tuple(k for k in range(filt.ndim) if k != ax)
        where = B.nonzero(B.any(nonzero, axis=others) if others else nonzero)[0]
        if where.shape[0] == 0:  # all zero: empty along every trimmed axis (NumPy's rule)
            index[ax] = slice(0, 0)
            continue
        start = int(where[0]) if "f" in trim else 0
        stop = int(where[-1]) + 1 if "b" in trim else filt.shape[ax]
        index[ax] = slice(start, stop)
    return B.array(filt[tuple(index)], copy=True)


def _trim_starts(F, filt, trim, axis):
    """Per trimmed axis, ``(axis, first kept position)`` of ``trim_zeros(filt)``, the
    positions as (0-d) integer arrays of ``F``, computed without reading a value (so that
    the rules run batched)."""
    trim, axes = _trim_axes(trim, axis, filt.ndim)
    nonzero = F.not_equal(filt, 0)
    starts = []
    for ax in axes:
        others = tuple(k for k in range(filt.ndim) if k != ax)
        line = F.any(nonzero, axis=others) if others else nonzero
        starts.append((ax, F.argmax(F.astype(line, "int8"), axis=0) if "f" in trim else 0))
    return starts


def _positions(F, n, ax, ndim, like):
    """``arange(n)`` laid along dimension ``ax`` of ``ndim``."""
    return F.reshape(F.arange(n, like=like), (1,) * ax + (n,) + (1,) * (ndim - ax - 1))


# The kept block of axis ax starts at s (0-d): the output's entry j along ax is filt's entry
# s + j; transposed, filt's entry i gets the cotangent's entry i - s where 0 <= i - s < k.
def _trim_zeros_vjp(F, g, out, filt, trim="fb", axis=None):
    for ax, s in _trim_starts(F, filt, trim, axis):
        n, k = filt.shape[ax], g.shape[ax]
        shape = tuple(g.shape[:ax]) + (n,) + tuple(g.shape[ax + 1:])
        if k == 0:
            g = F.zeros(shape, dtype=g.dtype, like=g)
            continue
        rel = _positions(F, n, ax, g.ndim, g) - s
        inside = F.logical_and(F.greater_equal(rel, 0), F.less(rel, k))
        g = F.where(inside, F.take_along_axis(g, F.clip(rel, 0, k - 1), axis=ax), 0)
    return g


def _trim_zeros_jvp(F, tangents, out, filt, trim="fb", axis=None):
    t = tangents[0]
    for ax, s in _trim_starts(F, filt, trim, axis):
        t = F.take_along_axis(t, _positions(F, out.shape[ax], ax, t.ndim, t) + s, axis=ax)
    return t


trim_zeros.defvjp(_trim_zeros_vjp)
trim_zeros.defjvp(_trim_zeros_jvp)
trim_zeros.defstructure(linear(piecewise=True))  # (a slice, fixed along a smooth path)


def _sample_diagflat(d):
    return (d.array(d.shape(min_dims=1, max_dims=2, max_side=2)),), {"k": d.integers(-2, 2)}


@defcomposite(kind=SHAPE, domain=_ANY, method=False, sample=_sample_diagflat)
def diagflat(F, v, k=0):
    """The square matrix with the flattened ``v`` on diagonal ``k`` (zeros elsewhere).

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.diagflat(ndgrad.tensor([[1.0, 2.0]]), k=-1)
    tensor([[0., 0., 0.],
            [1., 0., 0.],
            [0., 2., 0.]])
    """
    return F.diag(F.reshape(_arr(F, v), (-1,)), operator.index(k))


# ------------------------------------------------------------------------------ selecting
def _compress(F, who, condition, a, ax):
    """The entries of ``a`` (an array of F) along ``ax`` where the 1-D ``condition`` is
    true (a shorter condition counts as False past its end, a longer one must be)."""
    n = a.shape[ax]
    if isinstance(condition, (list, tuple)):  # a host constant
        cond = [bool(c) for c in _flatten(_listify(condition))]
        m = len(cond)
        if m > n and any(cond[n:]):
            raise IndexError(f"{who}: index {n + cond[n:].index(True)} is out of bounds for "
                             f"axis {ax} with size {n}")
        cond = cond[:n] + [False] * (n - m)
        return a[_along(ax, cond)]
    cond = _arr(F, condition, a)
    if _nd(cond) != 1:
        raise ValueError(f"{who}: condition must be a 1-d array, got shape "
                         f"{tuple(cond.shape)}")
    if cond.dtype.kind != "b":
        cond = F.not_equal(cond, 0)
    m = cond.shape[0]
    if m > n:
        if bool(F.any(cond[n:])):  # (a value read: not inside vmap)
            raise IndexError(f"{who}: the condition selects an index past the size {n} of "
                             f"axis {ax}")
        cond = cond[:n]
    elif m < n:
        cond = F.concat([cond, F.zeros((n - m,), dtype=cond.dtype, like=cond)], axis=0)
    return a[_along(ax, cond)]


def _sample_compress(d):
    shape = d.shape(min_dims=1, max_dims=3, max_side=3)
    axis = d.choice([None, d.axis(len(shape), none=False)])
    n = _numel(shape) if axis is None else shape[axis]
    cond = d.bool_array((d.integers(1, n),))
    cond[d.integers(0, len(cond) - 1)] = True  # (the output is not empty)
    # a list: a constant the batching suites leave unbatched (a condition that differs per
    # batch element is tests/test_stacking.py's: nested vmap cannot index with one yet)
    return (cond.tolist(), d.array(shape)), {"axis": axis}


@defcomposite(nin=2, kind=INDEXING, domain=_ANY, method=False, sample=_sample_compress)
def compress(F, condition, a, axis=None, out=None):
    """The slices of ``a`` along ``axis`` (of the flattened ``a`` when None) where the 1-D
    ``condition`` (a constant) is true, NumPy's ``compress``.

    A ``condition`` shorter than the axis counts as False past its end. (Not a Tensor
    method: NumPy's method takes the condition second.)

    Examples
    --------
    >>> import ndgrad
    >>> a = ndgrad.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    >>> ndgrad.compress([False, True, True], a, axis=0)
    tensor([[3., 4.],
            [5., 6.]])
    >>> ndgrad.compress([False, True], a)
    tensor([2.])
    """
    _no_out("compress", out)
    a = _arr(F, a)
    a, ax = _flattened(F, a, axis, "compress")
    return _compress(F, "compress", condition, a, ax)


def _sample_extract(d):
    shape = d.shape(min_dims=1, max_dims=3, max_side=3)
    cond = d.bool_array(shape)
    cond[tuple(d.integers(0, s - 1) for s in shape)] = True
    return (cond.tolist(), d.array(shape)), {}  # (a constant list: see _sample_compress)


@defcomposite(nin=2, kind=INDEXING, domain=_ANY, method=False, sample=_sample_extract)
def extract(F, condition, arr):
    """The elements of ``arr`` where ``condition`` (a constant, nonzero meaning true) is
    true, both flattened: ``compress(ravel(condition), ravel(arr))``.

    Examples
    --------
    >>> import ndgrad
    >>> x = ndgrad.tensor([[1.0, -2.0], [-3.0, 4.0]])
    >>> ndgrad.extract(x > 0, x)
    tensor([1., 4.])
    """
    arr = F.reshape(_arr(F, arr, _like(condition)), (-1,))
    if not isinstance(condition, (list, tuple)):
        condition = F.reshape(_arr(F, condition, arr), (-1,))
    return _compress(F, "extract", condition, arr, 0)


def _sample_choose(d):
    shape = d.shape(max_dims=2, max_side=3)
    n = d.integers(1, 3)
    mode = d.choice(["raise", "wrap", "clip"])
    lo, hi = (0, n - 1) if mode == "raise" else (-n - 1, 2 * n)
    ishape = shape[1:] if shape and d.boolean() else shape  # (broadcast against the choices)
    return (d.int_array(ishape, lo, hi), d.array((n,) + shape)), {"mode": mode}


@defcomposite(nin=2, kind=INDEXING, domain=_ANY, sample=_sample_choose,
              sequences=("choices",))
def choose(F, a, choices, out=None, mode="raise"):
    """Entries picked from ``choices`` by the index tensor ``a``: ``out[i] =
    choices[a[i]][i]``, ``a`` and the choices broadcast together (NumPy's ``choose``).

    ``a`` is a constant; the choices are differentiable (each output entry's gradient goes
    to the choice it was picked from). ``mode`` says what an index outside
    ``[0, len(choices))`` does: "raise" (ValueError), "wrap" (taken modulo) or "clip"
    (clipped to the range).

    Examples
    --------
    >>> import ndgrad
    >>> c = [ndgrad.tensor([1.0, 2.0, 3.0]), ndgrad.tensor([10.0, 20.0, 30.0])]
    >>> ndgrad.choose(ndgrad.tensor([1, 0, 1]), c)
    tensor([10.,  2., 30.])
    >>> ndgrad.choose(ndgrad.tensor([2, -1, 0]), c, mode="clip")
    tensor([10.,  2.,  3.])
    """
    _no_out("choose", out)
    if mode not in ("raise", "wrap", "clip"):
        raise ValueError(f"choose: mode must be 'raise', 'wrap' or 'clip', got {mode!r}")
    like = _like(a, choices)
    a = _arr(F, a, like)
    if a.dtype.kind not in "biu":
        raise TypeError(f"choose: the indices must be integers, got dtype {a.dtype}")
    choices = [_arr(F, c, like) for c in choices]
    n = len(choices)
    if n == 0:
        raise ValueError("choose: choices must not be empty")
    shape = _broadcast_shapes("choose", tuple(a.shape), *(tuple(c.shape) for c in choices))
    idx = F.astype(a, "int64") if a.dtype.kind == "b" else a
    if mode == "wrap":
        idx = F.remainder(idx, n)
    elif mode == "clip":
        idx = F.clip(idx, 0, n - 1)
    else:  # a negative index becomes n, which take_along_axis refuses as out of bounds
        idx = F.where(F.less(idx, 0), n, idx)
    stacked = F.stack([c if tuple(c.shape) == shape else F.broadcast_to(c, shape)
                       for c in choices], axis=0)
    if tuple(idx.shape) != shape:
        idx = F.broadcast_to(idx, shape)
    try:
        if mode == "raise" and not is_batched(idx) and bool(F.any(F.greater_equal(idx, n))):
            raise IndexError  # (checked here: CuPy's take_along_axis does not check bounds)
        out = F.take_along_axis(stacked, F.reshape(idx, (1,) + shape), axis=0)
    except IndexError:
        raise ValueError(f"choose: invalid entry in choice array (an index outside [0, {n}); "
                         "mode='wrap' or 'clip' maps such indices into the range)") from None
    return F.reshape(out, shape)


def _sample_select(d):
    shape = d.shape(max_dims=2, max_side=3)
    n = d.integers(1, 3)
    kwargs = {"default": d.choice([0, 0.5])} if d.boolean() else {}
    return (d.bool_array((n,) + shape), d.array((n,) + shape)), kwargs


@defcomposite(nin=2, kind=INDEXING, domain=_ANY, method=False, sample=_sample_select,
              sequences=("condlist", "choicelist"))
def select(F, condlist, choicelist, default=0):
    """Entries from ``choicelist`` by the first true condition of ``condlist`` (``default``
    where none is), everything broadcast together (NumPy's ``select``).

    The conditions (boolean) are constants; the choices and ``default`` are differentiable.
    A condition tensor or choice tensor is read as the sequence of its rows.

    Examples
    --------
    >>> import ndgrad
    >>> x = ndgrad.tensor([-2.0, 0.5, 3.0])
    >>> ndgrad.select([x < 0, x > 1], [-x, x * 10], default=x)
    tensor([ 2. ,  0.5, 30. ])
    """
    if len(condlist) != len(choicelist):
        raise ValueError("select: list of cases must be same length as list of conditions")
    if len(condlist) == 0:
        raise ValueError("select: select with an empty condition list is not possible")
    like = _like(condlist, choicelist, default)
    conds = [_arr(F, c, like) for c in condlist]
    for i, c in enumerate(conds):
        if c.dtype.kind != "b":
            raise TypeError(f"select: invalid entry {i} in condlist: should be boolean, got "
                            f"dtype {c.dtype}")
    # (Python numbers stay numbers: they do not promote, as in NumPy)
    choices = [c if type(c) in (int, float, complex) else _arr(F, c, like)
               for c in choicelist]
    out = default if type(default) in (int, float, complex) else _arr(F, default, like)
    for c, choice in zip(conds[::-1], choices[::-1]):
        out = F.where(c, choice, out)
    if not hasattr(out, "shape"):  # (every choice and the default were numbers)
        out = F.where(conds[0], out, out)
    return out


def _pw_square(x):
    return x * x


def _pw_affine(x, scale=2.0):
    return x * scale + 1.0


def _sample_piecewise(d):
    np = sample_numpy()
    shape = d.shape(max_dims=2, max_side=3)
    n = d.integers(1, 2)
    conds = d.bool_array((n,) + shape)
    if n == 2 and d.boolean():  # overlapping conditions: the later one wins
        conds[1] = conds[1] | conds[0]
    funcs = [d.choice([_pw_square, _pw_affine, -0.5]) for _ in range(n + d.integers(0, 1))]
    return (d.array(shape), np.asarray(conds), funcs), {}


def _single_condition(condlist, xnd):
    """NumPy's rule: ``condlist`` is one condition (not a list of them) when it is a bool,
    or when its first entry is a scalar and ``x`` is not 0-d (for an array: when it is 1-D
    and ``x`` is not 0-d; indexing a Tensor gives 0-d Tensors where NumPy gives scalars)."""
    if isinstance(condlist, bool) or type(condlist).__name__ == "bool":
        return True
    if hasattr(condlist, "shape"):
        return len(condlist.shape) == 0 or len(condlist.shape) == 1 and xnd != 0
    first = condlist[0]
    is_array = isinstance(first, (list, Tensor)) or hasattr(first, "shape") and \
        hasattr(first, "__len__")
    return not is_array and xnd != 0


@defcomposite(kind=INDEXING, domain=_ANY, method=False, sample=_sample_piecewise)
def piecewise(F, x, condlist, funclist, *args, **kw):
    """A function of ``x`` defined piecewise: where ``condlist[k]`` is true the entries are
    ``funclist[k](x[condlist[k]], *args, **kw)`` (or the number ``funclist[k]``); one extra
    function is used where no condition is true, elsewhere the result is 0 (NumPy's
    ``piecewise``; a later condition overrides an earlier one).

    The conditions are constants; the functions are called on (differentiable) tensors.
    The result has ``x``'s dtype. On a Dask-backed ``x`` (whose selected entries would have
    a shape that depends on the values) each function is called on the whole of ``x`` and
    :func:`where` picks its entries: the functions must then be elementwise, and defined
    (with a finite derivative) on the entries they do not get.

    Examples
    --------
    >>> import ndgrad
    >>> x = ndgrad.tensor([-2.0, -0.5, 1.0, 3.0])
    >>> ndgrad.piecewise(x, [x < 0, x >= 0], [lambda v: -v, lambda v: v * v])
    tensor([2. , 0.5, 1. , 9. ])
    >>> ndgrad.piecewise(x, [x > 2], [0.0, lambda v: v])  # one extra: "otherwise"
    tensor([-2. , -0.5,  1. ,  0. ])
    """
    x = _arr(F, x)
    n2 = len(funclist)
    if _single_condition(condlist, _nd(x)):
        condlist = [condlist]
    conds = []
    for c in condlist:
        c = _arr(F, c, x)
        if c.dtype.kind != "b":
            c = F.not_equal(c, 0)
        conds.append(c)
    n = len(conds)
    if n == n2 - 1:  # the "otherwise" condition
        anyc = conds[0]
        for c in conds[1:]:
            anyc = F.logical_or(anyc, c)
        conds.append(F.logical_not(anyc))
    elif n != n2:
        raise ValueError(f"piecewise: with {n} condition(s), either {n} or {n + 1} functions "
                         "are expected")
    y = F.index_put(x, 0, index=...)  # zeros, on x's graph (with a zero gradient)
    if isinstance(x, Tensor) and not x.backend.reads_values:
        # (x[cond] has a shape that depends on the values; where() keeps x's shape)
        for cond, func in zip(conds, funclist):
            y = F.where(cond, func(x, *args, **kw) if callable(func) else func, y)
        return y if y.dtype == x.dtype else F.astype(y, x.dtype)
    for cond, func in zip(conds, funclist):
        if not callable(func):
            y = F.index_put(y, func, index=cond)
            continue
        vals = x[cond]
        if _numel(vals.shape) > 0:
            y = F.index_put(y, func(vals, *args, **kw), index=cond)
    return y if y.dtype == x.dtype else F.astype(y, x.dtype)


def _sample_partition(d):
    np = sample_numpy()
    shape = d.shape(min_dims=1, max_dims=2, max_side=4)
    x = d.array(shape)
    flat = np.sort(x.ravel())
    if flat.size > 1 and np.min(np.diff(flat)) < 1e-3:
        d.reject()  # (no ties: the sorted order moves where two values swap)
    axis = d.choice([None, d.axis(len(shape), none=False)])
    n = x.size if axis is None else shape[axis]
    kth = d.choice([d.integers(-n, n - 1), [d.integers(0, n - 1), d.integers(-n, -1)]])
    return (x, kth), {"axis": axis}


@defcomposite(kind=INDEXING, domain=_REAL, method=False, sample=_sample_partition)
def partition(F, a, kth, axis=-1, kind="introselect", order=None):
    """``a`` rearranged along ``axis`` (of the flattened ``a`` when None) so that the
    element at each position ``kth`` is the one a sort would put there, smaller ones before
    it and larger ones after (NumPy's ``partition``).

    ndgrad returns the fully sorted values, one of the arrangements this contract allows
    (NumPy's order within the parts is unspecified, and differs). The values move, so the
    gradient follows each element back to where it came from (at ties, as :func:`sort`'s).

    Examples
    --------
    >>> import ndgrad
    >>> x = ndgrad.tensor([3.0, 1.0, 2.0], requires_grad=True)
    >>> y = ndgrad.partition(x, 1)
    >>> y
    tensor([1., 2., 3.], grad_fn=<SortBackward0>)
    >>> y[1].backward()
    >>> x.grad
    tensor([0., 0., 1.])
    """
    if kind != "introselect":
        raise ValueError(f"partition: kind must be 'introselect', got {kind!r}")
    if order is not None:
        raise ValueError("partition: order= (fields of structured arrays) is not supported")
    a = _arr(F, a)
    if axis is None:
        a, axis = F.reshape(a, (-1,)), 0
    ax = _axis("partition", axis, _nd(a))
    n = a.shape[ax]
    for k in _as_int_tuple(kth):
        if not -n <= k < n:
            raise ValueError(f"partition: kth(={k}) out of bounds ({n})")
    return F.sort(a, axis=ax)


# ------------------------------------------------------------------------------ apply
def _aa_sum_squares(v):
    return (v * v).sum()


def _aa_reverse_scaled(v, scale=1.0):
    return v[::-1] * scale


def _aa_outer(v):
    return v[:, None] * v[None, :]


def _sample_apply_along_axis(d):
    shape = d.shape(min_dims=1, max_dims=3, max_side=3)
    func = d.choice([_aa_sum_squares, _aa_reverse_scaled, _aa_outer])
    args = (d.choice([2.0, -0.5]),) if func is _aa_reverse_scaled and d.boolean() else ()
    return (func, d.axis(len(shape), none=False), d.array(shape)) + args, {}


@defcomposite(nin=3, kind=SHAPE, domain=_ANY, method=False, sample=_sample_apply_along_axis)
def apply_along_axis(F, func1d, axis, arr, *args, **kwargs):
    """``func1d(v, *args, **kwargs)`` for every 1-D slice ``v`` of ``arr`` along ``axis``,
    the results (all of one shape) put where the slices were: the result's dimensions
    replace ``axis`` (NumPy's ``apply_along_axis``). ``func1d`` gets differentiable tensors.

    Examples
    --------
    >>> import ndgrad
    >>> x = ndgrad.tensor([[1.0, 2.0], [3.0, 4.0]])
    >>> ndgrad.apply_along_axis(lambda v: v[0] * v[1], 1, x)
    tensor([ 2., 12.])
    """
    arr = _arr(F, arr)
    nd = _nd(arr)
    ax = _axis("apply_along_axis", axis, nd)
    moved = arr if ax == nd - 1 else F.moveaxis(arr, ax, -1)
    outer = tuple(moved.shape[:-1])
    if any(s == 0 for s in outer):
        raise ValueError("apply_along_axis: cannot apply_along_axis when any iteration "
                         "dimensions are 0")
    results = []
    for idx in itertools.product(*(range(s) for s in outer)):
        r = _arr(F, func1d(moved[idx], *args, **kwargs), arr)
        if results and tuple(r.shape) != tuple(results[0].shape):
            raise ValueError(f"apply_along_axis: func1d returned shape {tuple(r.shape)} for "
                             f"the slice at {idx}, and {tuple(results[0].shape)} for the "
                             "first")
        results.append(r)
    res_shape = tuple(results[0].shape)
    out = F.stack(results, axis=0) if len(results) > 1 else F.expand_dims(results[0], 0)
    out = F.reshape(out, outer + res_shape)
    k, r = len(outer), len(res_shape)
    perm = tuple(range(ax)) + tuple(range(k, k + r)) + tuple(range(ax, k))
    return out if perm == tuple(range(k + r)) else F.permute_dims(out, perm)


def _aoa_sum(x, axis):
    return x.sum(axis=axis)


def _aoa_sum_squares_keepdims(x, axis):
    return (x * x).sum(axis=axis, keepdims=True)


def _sample_apply_over_axes(d):
    shape = d.shape(min_dims=1, max_dims=3, max_side=3)
    n = len(shape)
    perm = d.permutation(n)
    axes = d.choice([perm[0] - n if d.boolean() else perm[0],
                     list(perm[:d.integers(1, n)])])
    return (d.choice([_aoa_sum, _aoa_sum_squares_keepdims]), d.array(shape), axes), {}


@defcomposite(nin=2, kind=SHAPE, domain=_ANY, method=False, sample=_sample_apply_over_axes)
def apply_over_axes(F, func, a, axes):
    """``func(a, axis)`` applied over each of ``axes`` in turn, a reduced axis put back as
    a length-1 axis (NumPy's ``apply_over_axes``): ``func`` must keep ``a``'s number of
    dimensions or remove one.

    Examples
    --------
    >>> import ndgrad
    >>> x = ndgrad.arange(6.0).reshape(2, 3)
    >>> ndgrad.apply_over_axes(ndgrad.sum, x, [0, 1])
    tensor([[15.]])
    """
    val = _view(F, _arr(F, a))
    n = _nd(val)
    for axis in _as_int_tuple(axes):  # (an int, or a sequence or 1-D array of them)
        if axis < 0:
            axis += n
        res = _arr(F, func(val, axis), val)
        if _nd(res) != _nd(val):
            res = F.expand_dims(res, axis=axis)
            if _nd(res) != _nd(val):
                raise ValueError("apply_over_axes: function is not returning an array of the "
                                 "correct shape")
        val = res
    return val


# ------------------------------------------------------------------------------ in place
# NumPy's functions that write into their first argument: plain functions (the registry's
# suites check functions that return their result), written with the ndgrad namespace and
# the Tensor's in-place indexed assignment, so that the version counter, the checks on
# leaves and on saved tensors, and the history of the written values all apply.
def _target(who, a):
    if not isinstance(a, Tensor):
        raise TypeError(f"{who}: the array written to must be an ndgrad Tensor (it is "
                        f"modified in place), got {type(a).__name__}")
    return a


def _const(x, a):
    """A constant argument (mask, indices) as a Tensor on ``a``'s device."""
    return x if isinstance(x, Tensor) else asarray(x, device=a.device)


def _flat_values(F, v, a):
    """The values to write as a 1-D Tensor of ``a``'s dtype (differentiable)."""
    v = v if isinstance(v, Tensor) else asarray(v, device=a.device)
    return _as_dtype(F, F.reshape(v, (-1,)), a.dtype)


def _unravel(F, flat, shape):
    """The row-major multi-index (a tuple of integer Tensors) of the flat positions."""
    index = []
    for s in reversed(shape):
        index.append(F.remainder(flat, s))
        flat = F.floor_divide(flat, s)
    return tuple(reversed(index))


def _mask(who, mask, a):
    F = TENSOR_F
    mask = _const(mask, a)
    if _numel(mask.shape) != _numel(a.shape):
        raise ValueError(f"{who}: mask and data must be the same size (mask has "
                         f"{_numel(mask.shape)} elements, data {_numel(a.shape)})")
    if mask.dtype.kind != "b":
        mask = F.not_equal(mask, 0)
    return F.reshape(mask, tuple(a.shape))


def place(arr, mask, vals):
    """Write the values ``vals`` (cycled as needed) in order into the entries of ``arr``
    where ``mask`` is true, in place (NumPy's ``place``; returns None).

    ``mask`` (a constant) has as many elements as ``arr``; ``vals`` is flattened and is
    differentiable. ``arr`` must not be a leaf that requires grad.

    Examples
    --------
    >>> import ndgrad
    >>> a = ndgrad.tensor([1.0, -2.0, 3.0, -4.0])
    >>> ndgrad.place(a, a < 0, ndgrad.tensor([0.5]))
    >>> a
    tensor([1. , 0.5, 3. , 0.5])
    """
    F = TENSOR_F
    _target("place", arr)
    mask = _mask("place", mask, arr)
    count = int(F.sum(F.astype(mask, "int64")))
    if count == 0:
        return None
    v = _flat_values(F, vals, arr)
    if v.shape[0] == 0:
        raise ValueError("place: cannot insert from an empty array")
    arr[mask] = F.resize(v, (count,))
    return None


def put(a, ind, v, mode="raise"):
    """Write ``v`` (cycled as needed) into the flat positions ``ind`` of ``a``, in place
    (NumPy's ``put``; returns None). A repeated position keeps the last value written.

    ``ind`` (integers, a constant) index the flattened ``a``; ``mode`` says what an index
    outside ``[-a.size, a.size)`` does: "raise" (IndexError), "wrap" (modulo the size) or
    "clip" (clipped to ``[0, a.size - 1]``: a negative index writes the first element).

    Examples
    --------
    >>> import ndgrad
    >>> a = ndgrad.zeros((2, 2))
    >>> ndgrad.put(a, [0, 3], ndgrad.tensor([5.0, 6.0]))
    >>> a
    tensor([[5., 0.],
            [0., 6.]])
    """
    F = TENSOR_F
    _target("put", a)
    if mode not in ("raise", "wrap", "clip"):
        raise ValueError(f"put: mode must be 'raise', 'wrap' or 'clip', got {mode!r}")
    ind = _const(ind, a)
    if ind.dtype.kind not in "iu":
        raise TypeError(f"put: the indices must be integers, got dtype {ind.dtype}")
    ind = F.reshape(ind, (-1,))
    m, size = ind.shape[0], _numel(a.shape)
    if m == 0:
        return None
    if size == 0:
        raise IndexError("put: cannot replace in an empty array")
    if mode == "raise":
        bad = F.logical_or(F.less(ind, -size), F.greater_equal(ind, size))
        if bool(F.any(bad)):
            raise IndexError(f"put: index {int(ind[bad][0])} is out of bounds for size {size}")
        ind = F.where(F.less(ind, 0), ind + size, ind)
    elif mode == "wrap":
        ind = F.remainder(ind, size)
    else:
        ind = F.clip(ind, 0, size - 1)
    values = _flat_values(F, v, a)
    if values.shape[0] == 0:
        return None  # (as NumPy: nothing to write)
    values = F.resize(values, (m,))
    if _nd(a) == 0:
        a[...] = values[m - 1]
    else:
        a[_unravel(F, ind, tuple(a.shape))] = values
    return None


def putmask(a, mask, values):
    """Set ``a.flat[n] = values.flat[n % values.size]`` wherever ``mask.flat[n]`` is true,
    in place (NumPy's ``putmask``; returns None): the values are cycled over the whole
    array, not over the true entries (that is :func:`place`).

    Examples
    --------
    >>> import ndgrad
    >>> a = ndgrad.tensor([1.0, -2.0, 3.0, -4.0])
    >>> ndgrad.putmask(a, a < 0, ndgrad.tensor([10.0, 20.0]))
    >>> a
    tensor([ 1., 20.,  3., 20.])
    """
    F = TENSOR_F
    _target("putmask", a)
    mask = _mask("putmask", mask, a)
    v = _flat_values(F, values, a)
    if v.shape[0] == 0:
        return None  # (as NumPy: nothing to write)
    full = F.reshape(F.resize(v, (_numel(a.shape),)), tuple(a.shape))
    a[mask] = full[mask]
    return None


def fill_diagonal(a, val, wrap=False):
    """Write ``val`` (a number, or values cycled along the diagonal) into the main diagonal
    of ``a``, in place (NumPy's ``fill_diagonal``; returns None).

    ``a`` has at least 2 dimensions, all of one length beyond 2; a tall matrix gets one
    diagonal, or, with ``wrap``, a diagonal restarting every ``ncols + 1`` rows.

    Examples
    --------
    >>> import ndgrad
    >>> a = ndgrad.zeros((2, 3))
    >>> ndgrad.fill_diagonal(a, ndgrad.tensor([1.0, 2.0]))
    >>> a
    tensor([[1., 0., 0.],
            [0., 2., 0.]])
    """
    F = TENSOR_F
    _target("fill_diagonal", a)
    shape = tuple(a.shape)
    if len(shape) < 2:
        raise ValueError("fill_diagonal: array must be at least 2-d")
    size = _numel(shape)
    if len(shape) == 2:
        step = shape[1] + 1
        end = size if wrap else min(size, shape[1] * shape[1])
    else:
        if len(set(shape)) != 1:
            raise ValueError(f"fill_diagonal: all dimensions of input must be of equal "
                             f"length, got shape {shape}")
        step = 1 + sum(math.prod(shape[:k]) for k in range(1, len(shape)))
        end = size
    positions = list(range(0, end, step))
    v = _flat_values(F, val, a)
    if not positions or v.shape[0] == 0:
        return None
    index = []
    flat = positions
    for s in reversed(shape):
        index.append([p % s for p in flat])
        flat = [p // s for p in flat]
    a[tuple(reversed(index))] = F.resize(v, (len(positions),))
    return None


def put_along_axis(arr, indices, values, axis):
    """Write ``values`` into ``arr`` at ``indices`` along ``axis``, in place (NumPy's
    ``put_along_axis``, the in-place inverse of :func:`take_along_axis`; returns None).

    ``indices`` (integers, a constant) have ``arr``'s number of dimensions (1-D with
    ``axis=None``, indexing the flattened ``arr``); ``values`` broadcast to them and are
    differentiable. A repeated position keeps the last value written.

    Examples
    --------
    >>> import ndgrad
    >>> a = ndgrad.tensor([[10.0, 30.0, 20.0], [60.0, 40.0, 50.0]])
    >>> ndgrad.put_along_axis(a, ndgrad.argmax(a, axis=1, keepdims=True), 0.0, axis=1)
    >>> a
    tensor([[10.,  0., 20.],
            [ 0., 40., 50.]])
    """
    F = TENSOR_F
    _target("put_along_axis", arr)
    indices = _const(indices, arr)
    if indices.dtype.kind not in "iu":
        raise TypeError(f"put_along_axis: `indices` must be an integer array, got dtype "
                        f"{indices.dtype}")
    values = values if isinstance(values, Tensor) else asarray(values, device=arr.device)
    values = _as_dtype(F, values, arr.dtype)
    shape = tuple(arr.shape)
    if axis is None:
        if _nd(indices) != 1:
            raise ValueError("put_along_axis: when axis=None, `indices` must have a single "
                             "dimension")
        size = _numel(shape)
        bad = F.logical_or(F.less(indices, -size), F.greater_equal(indices, size))
        if bool(F.any(bad)):
            raise IndexError(f"put_along_axis: index {int(indices[bad][0])} is out of bounds "
                             f"for the flattened array of size {size}")
        flat = F.where(F.less(indices, 0), indices + size, indices)
        arr[_unravel(F, flat, shape)] = values
        return None
    ax = _axis("put_along_axis", axis, len(shape))
    if _nd(indices) != len(shape):
        raise ValueError(f"put_along_axis: `indices` and `arr` must have the same number of "
                         f"dimensions ({_nd(indices)} and {len(shape)})")
    n = shape[ax]
    bad = F.logical_or(F.less(indices, -n), F.greater_equal(indices, n))
    if bool(F.any(bad)):
        raise IndexError(f"put_along_axis: index {int(indices[bad][0])} is out of bounds for "
                         f"axis {ax} with size {n}")
    arr[_along_axis_index(F, indices, ax, shape)] = values
    return None


# NumPy's in-place writers by name, for the ndgrad namespace (and so for NumPy's protocols,
# which find ndgrad.<name>): ndgrad/__init__.py adds them as it adds numeric.CREATION.
INPLACE = {f.__name__: f for f in (place, put, putmask, fill_diagonal, put_along_axis)}
