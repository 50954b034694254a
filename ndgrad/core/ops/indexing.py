"""Indexing primitives: ``__getitem__`` (basic and advanced), ``index_put`` (the op behind
``__setitem__``), ``index_add`` (scatter-add, the vjp of advanced indexing), take,
take_along_axis, sort and the non-differentiable argsort.

Indices are parameters, not inputs: Tensors and lists in an index are replaced by backend
arrays once, by the public functions (:func:`normalize_index`), so formulas index raw
cotangents and Tensors alike with ``g[index]`` / ``F.getitem(g, index)``. Repeated indices
accumulate in every backward (``index_add`` scatters with addition).
"""

from __future__ import annotations

import math
import numbers
import operator

from ..backend import NUMPY, backend_of
from ..dispatch import apply
from ..inplace import apply_inplace
from ..tensor import Tensor
from .batching import at_level, flatten, is_batched, pad_to, shift_axis, with_batch
from .registry import INDEXING, Domain, defop, linear
from .shape import broadcast_to, reshape

ANY = Domain((-2.0, 2.0), complex=True)
REAL = Domain((-2.0, 2.0))


def normalize_index(index):
    """``index`` with Tensors replaced by their arrays and lists by arrays.

    Raises IndexError for float Tensors or lists (only integer and bool arrays index).
    """
    if isinstance(index, tuple):
        return tuple(normalize_index(i) for i in index)
    if isinstance(index, Tensor):
        if index.dtype.kind not in "iub":
            raise IndexError(f"tensors used as indices must be integer or bool, got {index.dtype}")
        if type(index) is not Tensor or (index._meta is not None and index._meta.level_data):
            return index  # a transform's value (a per-example index inside vmap, a grad
            #               level's, a compile trace's value): its level takes it
        return index._data
    if isinstance(index, list):
        if any(isinstance(i, Tensor) for i in index):
            index = [i._data if type(i) is Tensor else i for i in index]
        arr = NUMPY.asarray(index)
        if arr.dtype.kind not in "iub" and arr.size:
            raise IndexError("lists used as indices must hold integers or bools")
        return arr if arr.size else arr.astype("int64")
    return index


def on_device(B, index, select=True):
    """``index`` with its host index arrays (NumPy arrays, from lists or CPU tensors) on
    backend ``B``'s device, as CuPy needs them; the index itself on the CPU. A backend with
    ``host_indices`` indexes with host arrays and checks the index
    (``B.host_index``); ``select``: it picks elements out (not an assignment's target)."""
    if B.array_type is _HOST_ARRAY:
        return index
    if B.host_indices:
        return B.host_index(index, select)
    if isinstance(index, tuple):
        return tuple(on_device(B, i, select) for i in index)
    if type(index) is _HOST_ARRAY:
        return B.asarray(index)
    return index


_HOST_ARRAY = NUMPY.array_type


def _is_integer(i):
    return type(i) is int or (isinstance(i, numbers.Integral) and not isinstance(i, bool))


def is_basic(index):
    """True when ``index`` has only ints, slices, None and Ellipsis (a view, no repeats)."""
    if not isinstance(index, tuple):
        index = (index,)
    for i in index:
        if not (type(i) is int or i is None or i is Ellipsis or isinstance(i, slice) or
                _is_integer(i)):
            return False
    return True


def iota(F, n, like):
    """``[0, 1, ..., n - 1]`` (int64) in a formula, on ``like``'s device: for index arrays
    built from shapes."""
    return F.arange(n, like=like)


def _values_cotangent(F, gv, vnd):
    """NumPy drops leading length-1 dimensions of assigned values (``x[0] = v[None]``); give
    their cotangent (``gv``) those dimensions back so the engine can match it to the values
    (``vnd`` dimensions). The rules pass ``values.ndim``: values are read for their metadata
    only, so they are not saved (``x[1:3] *= w`` assigns a view of x to itself)."""
    if vnd > gv.ndim:
        gv = F.reshape(gv, (1,) * (vnd - gv.ndim) + tuple(gv.shape))
    return gv


# ------------------------------------------------------------------------------ vmap
# Note [Batching an index]
# ~~~~~~~~~~~~~~~~~~~~~~~~
# The batching rules of getitem, index_put, index_add (and take) index the whole batch (batch
# dimension first) with a physical index built from one element's NumPy index:
#
# * An unbatched index gets a leading ``slice(None)``. NumPy puts the dimensions of the
#   advanced indices (arrays, and ints when an array is present) where they stand when they
#   are adjacent, and FIRST when a slice, None or Ellipsis separates them: the batch
#   dimension then lands right after them and is moved back to the front.
# * An index holding per-example (batched) arrays pairs them with the batch dimension through
#   an advanced index ``arange(batch)`` in front, the batched arrays padded so that their
#   batch dimension lines up with it. NumPy then puts the advanced dimensions first (batch,
#   then the broadcast index shape); where one element's advanced indices were adjacent at
#   output position p > 0 they are moved back to p. A batched boolean mask becomes the
#   integer arrays of its True positions, which must be equally many in every element (the
#   results would have different shapes otherwise). Repeated per-example positions in
#   index_put give every duplicate the gradient (PyTorch's convention): which write survives
#   cannot be read from values that differ per element.
#
# ``move`` (moveaxis arguments) takes ``x_phys[index]`` to the batch-first layout, ``(batch,)``
# + one element's selection; the inverse move takes values from it to ``x_phys[index]``'s.
_NEWAXIS, _ELLIPSIS, _SLICE, _INT, _ARRAY, _MASK = range(6)


def _index_kind(e):
    if e is None:
        return _NEWAXIS
    if e is Ellipsis:
        return _ELLIPSIS
    if isinstance(e, slice):
        return _SLICE
    if _is_integer(e):
        return _INT
    if isinstance(e, bool) or getattr(getattr(e, "dtype", None), "kind", None) == "b":
        return _MASK
    return _ARRAY  # (anything else: NumPy says what is wrong with it)


def _mask_positions(F, m):
    """The True positions of the batched boolean mask ``m`` (batch first): one integer array
    ``(batch, count)`` per mask dimension."""
    shape = tuple(m.shape[1:])
    if not shape:
        raise IndexError("vmap: a 0-d boolean index that differs per batch element is not "
                         "supported")
    flat = flatten(F, m)
    counts = F.sum(flat, axis=1)
    c = int(counts[0])
    if not bool(F.all(F.equal(counts, c))):
        raise IndexError(
            "vmap: a boolean index selects different numbers of elements in different batch "
            "elements, so the results have different shapes and cannot be batched")
    pos = F.argsort(F.logical_not(flat), axis=1)[:, :c]  # stable: the True positions, in order
    stride = flat.shape[1]
    out = []
    for s in shape:
        stride //= s
        out.append(F.remainder(F.floor_divide(pos, stride), s))
    return out


def _batch_index(F, entries, nd, n):
    """``(physical index, move, selection ndim)`` of one element's NumPy index applied to a
    batch of ``n`` elements of ``nd`` dimensions each (Note [Batching an index]).

    ``entries``: the index as ``(value, batched)`` pairs; a batched value is physical (batch
    first). The caller indexes a batched (physical) tensor.
    """
    if any(b and _index_kind(e) == _MASK for e, b in entries):
        entries = [p for e, b in entries
                   for p in ([(i, True) for i in _mask_positions(F, e)]
                             if b and _index_kind(e) == _MASK else [(e, b)])]
    kinds = [_index_kind(e) for e, _ in entries]
    ndims = [(e.ndim - 1 if b else getattr(e, "ndim", 0)) for e, b in entries]
    if kinds.count(_ELLIPSIS) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    has_array = _ARRAY in kinds or _MASK in kinds
    consumed, na, adv = 0, 0, []
    for i, (k, d) in enumerate(zip(kinds, ndims)):
        consumed += d if k == _MASK else int(k in (_SLICE, _INT, _ARRAY))
        if k in (_ARRAY, _MASK) or k == _INT and has_array:
            adv.append(i)
            na = max(na, 1 if k == _MASK else d)
    ell = nd - consumed  # dimensions the Ellipsis (or the implicit trailing one) stands for
    if ell < 0:
        raise IndexError(f"too many indices for tensor: tensor is {nd}-dimensional, but "
                         f"{consumed} were indexed")
    sel_nd = kinds.count(_SLICE) + kinds.count(_NEWAXIS) + ell + (na if has_array else 0)
    adjacent = bool(adv) and adv[-1] - adv[0] == len(adv) - 1
    values = tuple(e for e, _ in entries)
    if not any(b for _, b in entries):
        return (slice(None),) + values, (None if adjacent or not adv else (na, 0)), sel_nd
    like = next(e for e, b in entries if b)  # a batched index: the batch's device
    batch = F.reshape(F.arange(n, like=like), (n,) + (1,) * na)
    index = (batch,) + tuple(pad_to(F, e, na) if b else e for e, b in entries)
    p = 0  # the output position of one element's advanced dimensions, were they adjacent
    for k in kinds[:adv[0]]:
        p += ell if k == _ELLIPSIS else 1
    if adjacent and p:
        return index, (tuple(range(1, 1 + na)), tuple(range(1 + p, 1 + p + na))), sel_nd
    return index, None, sel_nd


def _index_entries(index, level):
    parts = index if isinstance(index, tuple) else (index,)
    return [(e._value, True) if at_level(e, level) else (e, False) for e in parts]


def _batch_size(arrays, batched, entries):
    for a, b in zip(arrays, batched):
        if b:
            return a.shape[0]
    return next(e.shape[0] for e, b in entries if b)


# ------------------------------------------------------------------------------ samplers
def _draw_slice(d, s):
    """A non-empty slice of a side of length ``s``, any step, spelled in NumPy's ways."""
    step = d.choice([1, 2, -1, -2, None])
    start = d.integers(0, s - 1)
    if step is None or step > 0:
        stop = d.integers(start + 1, s + 1)  # s + 1: past the end is allowed
        stop = None if stop >= s and d.boolean() else stop
    else:
        stop = d.integers(-1, start - 1)
        stop = None if stop == -1 else stop - s  # a negative stop counts from the end
    start = start - s if d.boolean() else start
    return slice(start, stop, step)


def _draw_index(d, shape, advanced=True, repeats=True):
    """A random index into ``shape``: basic, advanced (repeats included), boolean or mixed.

    The selection is never empty (the finite-difference checks need elements).
    """
    nd = len(shape)
    kind = d.choice(["basic", "advanced", "bool", "mixed"] if advanced and nd else ["basic"])
    if kind == "bool":
        k = d.integers(1, nd)
        mask = d.bool_array(shape[:k])
        mask[tuple(d.integers(0, s - 1) for s in shape[:k])] = True  # selects something
        if k == nd and d.boolean():
            return mask
        return (mask,) + tuple(slice(None) for _ in range(d.integers(0, nd - k)))
    if kind == "advanced":
        k = d.integers(1, min(nd, 2))
        m = d.integers(1, 4)
        parts = []
        for s in shape[:k]:
            arr = d.int_array((m,), -s, s - 1)
            if repeats and m > 1 and d.boolean():
                arr[-1] = arr[0]  # a repeated index
            parts.append(arr)
        if k == 1 and d.boolean():
            return parts[0] if d.boolean() else parts[0].reshape(m, 1)
        return tuple(parts)
    parts = []
    first_len = None
    for s in shape:
        r = d.integers(0, 2 if kind == "basic" else 3)
        if r == 0:
            parts.append(d.integers(-s, s - 1))
        elif r == 1:
            parts.append(_draw_slice(d, s))
        elif r == 2 and kind == "basic" or r == 2 and d.boolean():
            parts.append(slice(None))
        else:  # an index array; later ones broadcast against the first
            m = d.integers(1, 3) if first_len is None else d.choice([1, first_len])
            first_len = m if first_len is None else first_len
            arr = d.int_array((m,), -s, s - 1)
            if repeats and m > 1 and d.boolean():
                arr[-1] = arr[0]
            parts.append(arr)
        if d.integers(0, 4) == 0:
            parts.append(None)
    if parts and d.integers(0, 4) == 0:  # an Ellipsis standing for some leading dimensions
        parts = [Ellipsis] + parts[d.integers(0, len(parts)):]
    return tuple(parts)


# ------------------------------------------------------------------------------ getitem
def _sample_getitem(d):
    shape = d.shape(max_dims=3)
    return (d.array(shape),), {"index": _draw_index(d, shape)}


@defop(kind=INDEXING, domain=ANY, view=True, method=False, sample=_sample_getitem)
def getitem(B, x, index):
    """``x[index]``, NumPy's indexing: basic (a view) or advanced (a copy).

    Basic indices are ints, slices (any step), ``None`` and ``Ellipsis``; advanced ones are
    integer arrays (lists, arrays or integer Tensors; negative entries count from the end)
    and boolean masks, alone or mixed with basic ones. Repeated indices accumulate in the
    gradient.

    Examples
    --------
    >>> import ndgrad
    >>> x = ndgrad.arange(6.0).reshape(2, 3)
    >>> ndgrad.getitem(x, (1, slice(0, 2)))
    tensor([3., 4.])
    >>> x[:, [0, 0]]
    tensor([[0., 0.],
            [3., 3.]])
    >>> x[x > 2.5]
    tensor([3., 4., 5.])
    >>> w = ndgrad.tensor([1.0, 2.0], requires_grad=True)
    >>> w[[0, 0, 1]].sum().backward()
    >>> w.grad
    tensor([2., 1.])
    """
    out = x[index if B.array_type is _HOST_ARRAY else on_device(B, index)]
    if type(out) is not B.array_type:  # NumPy gives a scalar for a 0-d result
        if is_basic(index):  # a trailing Ellipsis makes it a 0-d view
            return x[(index if isinstance(index, tuple) else (index,)) + (Ellipsis,)]
        return B.asarray(out)
    return out


# repeated indices accumulate: index_add scatters with addition. x is read for its shape
# only, so the node saves nothing: a view's node must not hold its base (the base may be
# modified in place through the view; Note [In-place on views])
getitem.defvjp(lambda F, g, out, x, index:
               F.index_add(F.zeros(x.shape, dtype=g.dtype, like=g), g, index=index))
getitem.defjvp(lambda F, tangents, out, x, index: F.getitem(tangents[0], index))
getitem.defstructure(linear())
# a basic index is a view: writing it back is index_put (Note [In-place on views])
getitem.defscatter(lambda F, parent, child, index: F.index_put(parent, child, index=index))


def _getitem_batch(F, batched, x, index, _level=None):
    entries = _index_entries(index, _level)
    n = _batch_size((x,), batched, entries)
    xp = x if batched[0] else with_batch(F, x, n)
    pindex, move, _ = _batch_index(F, entries, xp.ndim - 1, n)
    out = F.getitem(xp, pindex)
    return out if move is None else F.moveaxis(out, *move)


getitem.defbatch(_getitem_batch, params=True)


def getitem_public(x, index):
    index = normalize_index(index)
    return apply(getitem, x, index=index)


getitem.defpublic(getitem_public)


# ------------------------------------------------------------------------------ index_add
def _sample_index_add(d):
    shape = d.shape(min_dims=1, max_dims=3)
    index = _draw_index(d, shape)
    import numpy as np  # a test-time sampler, not a formula
    vshape = np.empty(shape)[index].shape
    if vshape and d.boolean():  # values that broadcast
        vshape = vshape[1:] if d.boolean() else (1,) + vshape[1:]
    return (d.array(shape), d.array(vshape)), {"index": index}


@defop(kind=INDEXING, nin=2, domain=ANY, method=False, sample=_sample_index_add)
def index_add(B, x, values, index):
    """``x`` with ``values`` added at ``x[index]``; repeated indices accumulate.

    The functional form of ``x[index] += values`` when ``index`` may repeat (PyTorch's
    ``index_put(..., accumulate=True)``). ``values`` broadcasts to ``x[index]``'s shape.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.index_add(ndgrad.zeros(3), ndgrad.ones(2), index=[0, 0])
    tensor([2., 0., 0.])
    >>> ndgrad.index_add(ndgrad.zeros((2, 2)), 1.5, index=(slice(None), 1))
    tensor([[0. , 1.5],
            [0. , 1.5]])
    """
    return _index_add_into(B, B.array(x, copy=True, dtype=B.result_type(x, values)), values,
                           index)


def _index_add_into(B, x, values, index):
    if is_basic(index) and B.adds_in_place:
        x[index] += values
    else:  # (the backend's scatter, also for a basic index where it adds otherwise)
        B.scatter_add(x, on_device(B, index, False), values)
    return x


index_add.definto(_index_add_into)  # (Note [Forwards that write into their first input])


index_add.defvjp(lambda F, g, out, x, values, index: g,
                 lambda F, g, out, x, values, index:
                 _values_cotangent(F, F.getitem(g, index), values.ndim))


def _index_add_jvp(F, tangents, out, x, values, index):
    tx, tv = tangents
    if tv is None:
        return tx
    return F.index_add(F.zeros_like(out) if tx is None else tx, tv, index=index)


index_add.defjvp(_index_add_jvp)
index_add.defstructure(linear())


def _scatter_batch(op):
    fn = op.of

    def rule(F, batched, x, values, index, _level=None):
        entries = _index_entries(index, _level)
        n = _batch_size((x, values), batched, entries)
        xp = x if batched[0] else with_batch(F, x, n)
        pindex, move, sel_nd = _batch_index(F, entries, xp.ndim - 1, n)
        v = values
        if batched[1] or (move is not None and getattr(values, "ndim", 0)):
            # values in the batch-first layout (batch + one element's selection), then moved
            # to the layout of x[pindex]; unbatched values broadcast as they are otherwise
            v = values if batched[1] else with_batch(F, values, n)
            extra = v.ndim - 1 - sel_nd
            if extra > 0:  # NumPy drops leading length-1 dimensions of assigned values
                v = F.reshape(v, (n,) + tuple(v.shape[1 + extra:]))
            v = pad_to(F, v, sel_nd)
            if move is not None:
                v = F.moveaxis(v, move[1], move[0])
        return fn(F)(xp, v, index=pindex)
    op.defbatch(rule, params=True)


_scatter_batch(index_add)


def _index_add_public(x, values, index):
    return apply(index_add, x, values, index=normalize_index(index))


index_add.defpublic(_index_add_public)


# ------------------------------------------------------------------------------ index_put
def _sample_index_put(d):
    import numpy as np  # a test-time sampler, not a formula
    shape = d.shape(min_dims=1, max_dims=3)
    index = _draw_index(d, shape)  # repeats included: the public function keeps the last
    vshape = np.empty(shape)[index].shape
    if d.integers(0, 3) == 0:
        return (d.array(shape), d.choice([0.5, -1.25])), {"index": index}
    if vshape and d.boolean():
        vshape = vshape[1:]
    return (d.array(shape), d.array(vshape)), {"index": index}


@defop(kind=INDEXING, nin=2, domain=ANY, method=False, sample=_sample_index_put)
def index_put(B, x, values, index):
    """``x`` with ``x[index] = values`` (the functional form of ``__setitem__``).

    ``values`` (a scalar or a Tensor) broadcasts to ``x[index]``'s shape. Where an advanced
    index repeats a position, NumPy keeps the last value written there; the public function
    then gives the earlier, overwritten values a zero gradient (only the value that survives
    reaches the output). PyTorch's ``index_put_`` instead passes the gradient to every
    duplicate.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.index_put(ndgrad.zeros(3), 5.0, index=1)
    tensor([0., 5., 0.])
    >>> v = ndgrad.tensor([1.0, 2.0, 3.0], requires_grad=True)
    >>> y = ndgrad.index_put(ndgrad.zeros(2), v, index=[0, 0, 1])
    >>> y
    tensor([2., 3.], grad_fn=<IndexPutBackward0>)
    >>> y.sum().backward()
    >>> v.grad
    tensor([0., 1., 1.])
    """
    return _index_put_into(B, B.array(x, copy=True, dtype=B.result_type(x, values)), values,
                           index)


def _index_put_into(B, x, values, index):
    B.assign(x, on_device(B, index, False), values)
    return x


index_put.definto(_index_put_into)  # (Note [Forwards that write into their first input])


index_put.defvjp(lambda F, g, out, x, values, index: F.index_put(g, 0, index=index),
                 lambda F, g, out, x, values, index:
                 _values_cotangent(F, F.getitem(g, index), values.ndim))


def _index_put_jvp(F, tangents, out, x, values, index):
    tx, tv = tangents
    return F.index_put(F.zeros_like(out) if tx is None else tx, 0 if tv is None else tv,
                       index=index)


index_put.defjvp(_index_put_jvp)
index_put.defstructure(linear())
_scatter_batch(index_put)


def _last_write_wins(x, values, index):
    """Drop the writes that a later write to the same position overwrites.

    ``x[[0, 0]] = v`` keeps ``v[1]`` (NumPy writes in order); recording the assignment
    restricted to the surviving writes gives ``v[0]`` its true gradient, zero. Only done
    when it can matter: ``values`` requires grad and an integer index array repeats.
    """
    if not (isinstance(values, Tensor) and values._requires_grad):
        return values, index
    parts = index if isinstance(index, tuple) else (index,)
    if any(is_batched(p) for p in parts):  # per-example positions (Note [Batching an index])
        return values, index
    arrays = [p for p in parts
              if getattr(p, "dtype", None) is not None and p.dtype.kind in "iu" and p.size > 1]
    if not arrays:
        return values, index
    B = backend_of(arrays[0])  # x's backend; x is read for its shape only (it may be batched)
    xshape = tuple(x.shape)
    xsize = 1
    for s in xshape:
        xsize *= s
    pos = B.arange(xsize).reshape(xshape)[index]  # the flat target of every write
    flat = pos.reshape(-1)
    _, first_from_end = B.unique(flat[::-1], return_index=True)
    if first_from_end.size == flat.size:
        return values, index  # no position is written twice
    keep = B.zeros(flat.size, dtype=bool)
    keep[flat.size - 1 - first_from_end] = True
    keep = keep.reshape(pos.shape)
    v = values
    if v.ndim > pos.ndim:  # NumPy drops leading length-1 dimensions of values
        v = apply(reshape, v, shape=v.shape[v.ndim - pos.ndim:])
    v = apply(getitem, apply(broadcast_to, v, shape=pos.shape), index=keep)
    return v, tuple(B.unravel_index(pos[keep], xshape))


def _index_put_public(x, values, index):
    index = normalize_index(index)
    values, index = _last_write_wins(x, values, index)
    return apply(index_put, x, values, index=index)


index_put.defpublic(_index_put_public)


def setitem(x, index, value):
    """``x[index] = value`` in place (rebases ``x``'s history when recording)."""
    index = normalize_index(index)
    value, index = _last_write_wins(x, value, index)
    return apply_inplace(index_put, x, value, index=index)


# ------------------------------------------------------------------------------ take
def _sample_take(d):
    shape = d.shape(min_dims=1, max_dims=3)
    axis = d.axis(len(shape))
    n = math.prod(shape) if axis is None else shape[axis]
    ishape = d.shape(max_dims=2, max_side=3)
    return (d.array(shape), d.int_array(ishape, -n, n - 1)), {"axis": axis}


@defop(kind=INDEXING, nin=2, domain=Domain((-2.0, 2.0), complex=True, integer_inputs=(1,)),
       sample=_sample_take)
def take(B, a, indices, axis=None):
    """Elements of ``a`` at integer ``indices`` along ``axis`` (NumPy's ``take``).

    Parameters
    ----------
    a : Tensor
    indices : int array or Tensor
        May repeat (repeats accumulate in the gradient) and be negative.
    axis : int, optional
        None: index the flattened ``a``.

    Returns
    -------
    Tensor
        ``x.shape[:axis] + indices.shape + x.shape[axis + 1:]``.

    Examples
    --------
    >>> import ndgrad
    >>> x = ndgrad.tensor([[1.0, 2.0], [3.0, 4.0]])
    >>> ndgrad.take(x, ndgrad.tensor([3, 0]))
    tensor([4., 1.])
    >>> x.take([1, 1], axis=1)
    tensor([[2., 2.],
            [4., 4.]])
    """
    return B.asarray(B.take(a, indices, axis=axis))


def _take_vjp(F, g, out, x, indices, axis=None):
    if axis is None:
        flat = F.index_add(F.zeros((x.size,), dtype=g.dtype, like=g), g, index=indices)
        return F.reshape(flat, x.shape)
    ax = axis % x.ndim
    return F.index_add(F.zeros(x.shape, dtype=g.dtype, like=g), g,
                       index=(slice(None),) * ax + (indices,))


take.defvjp(_take_vjp, None)
take.defjvp(lambda F, tangents, out, x, indices, axis=None:
            F.take(tangents[0], indices, axis=axis))
take.defstructure(linear())


def _take_batch(F, batched, x, indices, axis=None):
    bx, bi = batched
    if not bi:
        if axis is None:
            return F.take(flatten(F, x), indices, axis=1)
        return F.take(x, indices, axis=shift_axis(operator.index(axis), x.ndim - 1))
    if not bx:  # one x for the whole batch of indices, whose dimensions land at axis
        if axis is None:
            return F.take(x, indices)
        a = shift_axis(operator.index(axis), x.ndim) - 1
        return F.moveaxis(F.take(x, indices, axis=a), a, 0)
    # per-example indices into per-example x: x[b, ..., indices[b], ...], a batched gather
    xs = flatten(F, x) if axis is None else x
    a = 0 if axis is None else shift_axis(operator.index(axis), x.ndim - 1) - 1
    n = x.shape[0]
    pindex, move, _ = _batch_index(F, [(slice(None), False)] * a + [(indices, True)],
                                   xs.ndim - 1, n)
    out = F.getitem(xs, pindex)
    return out if move is None else F.moveaxis(out, *move)


take.defbatch(_take_batch)


def _along_axis_index(F, indices, axis, shape):
    """The advanced index equivalent to ``take_along_axis(., indices, axis)``."""
    nd = len(shape)
    index = []
    for d in range(nd):
        if d == axis:
            index.append(indices)
        else:
            index.append(F.reshape(iota(F, shape[d], indices),
                                   (1,) * d + (shape[d],) + (1,) * (nd - d - 1)))
    return tuple(index)


def _sample_take_along_axis(d):
    shape = d.shape(min_dims=1, max_dims=3)
    if d.integers(0, 4) == 0:
        n = 1
        for s in shape:
            n *= s
        return (d.array(shape), d.int_array((d.integers(1, 5),), -n, n - 1)), {"axis": None}
    axis = d.axis(len(shape), none=False)
    ishape = tuple(d.integers(1, 4) if k == axis % len(shape) else
                   (1 if d.integers(0, 3) == 0 else s) for k, s in enumerate(shape))
    n = shape[axis]
    return (d.array(shape), d.int_array(ishape, -n, n - 1)), {"axis": axis}


@defop(kind=INDEXING, nin=2, method=False, sample=_sample_take_along_axis,
       domain=Domain((-2.0, 2.0), complex=True, integer_inputs=(1,)))
def take_along_axis(B, arr, indices, axis=-1):
    """Pick values from ``arr`` at ``indices`` along ``axis`` (NumPy / array-API
    ``take_along_axis``, PyTorch's ``gather``).

    Parameters
    ----------
    arr : Tensor
    indices : int array or Tensor
        As many dimensions as ``arr``; the others broadcast against ``arr``'s. Typically the
        output of :func:`argsort` or of ``argmax(..., keepdims=True)``.
    axis : int or None
        None: ``arr`` flattened, ``indices`` 1-D.

    Returns
    -------
    Tensor

    Examples
    --------
    >>> import ndgrad
    >>> x = ndgrad.tensor([[3.0, 1.0, 2.0], [0.5, 2.5, 1.5]])
    >>> ndgrad.take_along_axis(x, ndgrad.argsort(x, axis=1), axis=1)
    tensor([[1. , 2. , 3. ],
            [0.5, 1.5, 2.5]])
    """
    return B.take_along_axis(arr, indices, axis=axis)


def _take_along_axis_vjp(F, g, out, x, indices, axis=-1):
    if axis is None:
        flat = F.index_add(F.zeros((x.size,), dtype=g.dtype, like=g), g, index=indices)
        return F.reshape(flat, x.shape)
    index = _along_axis_index(F, indices, axis % x.ndim, tuple(x.shape))
    return F.index_add(F.zeros(x.shape, dtype=g.dtype, like=g), g, index=index)


take_along_axis.defvjp(_take_along_axis_vjp, None)
take_along_axis.defjvp(lambda F, tangents, out, x, indices, axis=-1:
                       F.take_along_axis(tangents[0], indices, axis=axis))
take_along_axis.defstructure(linear())


def _take_along_axis_batch(F, batched, x, indices, axis=-1):
    bx, bi = batched
    # an unbatched operand gets a length-1 batch dimension, which broadcasts
    ip = indices if bi else F.expand_dims(indices, 0)
    if axis is None:  # x flattened, indices 1-D
        return F.take_along_axis(flatten(F, x) if bx else F.reshape(x, (1, -1)), ip, axis=1)
    xp = x if bx else F.expand_dims(x, 0)
    return F.take_along_axis(xp, ip, axis=shift_axis(operator.index(axis), xp.ndim - 1))


take_along_axis.defbatch(_take_along_axis_batch)


# ------------------------------------------------------------------------------ sort
def _sample_sort(d):
    import numpy as np  # a test-time sampler, not a formula
    shape = d.shape(max_dims=2)
    axis = d.axis(len(shape)) if shape else None
    x = d.array(shape)
    # no ties: sort is not differentiable where two values swap
    flat = np.sort(x.ravel())
    if flat.size > 1 and np.min(np.diff(flat)) < 1e-3:
        d.reject()
    kw = {"axis": axis}
    if d.boolean():
        kw["descending"] = True
    return (x,), kw


# (Note [Signatures are NumPy's] in tests/test_signatures.py)
_SORT_SIGNATURE = (
    "the array API's ``descending`` keyword, which NumPy does not have (NumPy sorts in "
    "ascending order only); NumPy's kind= and order= are not accepted (a TypeError)")


@defop(kind=INDEXING, domain=REAL, sample=_sample_sort, notes={"signature": _SORT_SIGNATURE})
def sort(B, a, axis=-1, *, descending=False, stable=True):
    """The values of ``a`` sorted along ``axis`` (NumPy's ``sort``; array-API keywords).

    Parameters
    ----------
    a : Tensor
    axis : int or None
        None: sort the flattened tensor.
    descending : bool
    stable : bool
        Keep the order of equal elements (matters for :func:`argsort`).

    Returns
    -------
    Tensor
        The sorted values; for the permutation use :func:`argsort`. The gradient flows back
        through the permutation (at ties, to one of the equal elements).

    Examples
    --------
    >>> import ndgrad
    >>> x = ndgrad.tensor([3.0, 1.0, 2.0], requires_grad=True)
    >>> y = ndgrad.sort(x)
    >>> y
    tensor([1., 2., 3.], grad_fn=<SortBackward0>)
    >>> (y * ndgrad.tensor([1.0, 10.0, 100.0])).sum().backward()
    >>> x.grad
    tensor([100.,   1.,  10.])
    """
    if axis is None:
        a, axis = B.reshape(a, (-1,)), -1
    out = B.sort(a, axis=axis, kind="stable" if stable else None)
    return B.flip(out, axis=axis) if descending else out


def _sort_vjp(F, g, out, x, axis=-1, descending=False, stable=True):
    xf = F.reshape(x, (-1,)) if axis is None else x
    ax = -1 if axis is None else axis
    perm = F.argsort(xf, axis=ax, descending=descending, stable=stable)
    gx = F.take_along_axis(g, F.argsort(perm, axis=ax), axis=ax)  # g through perm's inverse
    return F.reshape(gx, x.shape) if axis is None else gx


def _sort_jvp(F, tangents, out, x, axis=-1, descending=False, stable=True):
    t = tangents[0]
    if axis is None:
        x, t, axis = F.reshape(x, (-1,)), F.reshape(t, (-1,)), -1
    perm = F.argsort(x, axis=axis, descending=descending, stable=stable)
    return F.take_along_axis(t, perm, axis=axis)


sort.defvjp(_sort_vjp)
sort.defjvp(_sort_jvp)
sort.defstructure(linear(piecewise=True))  # (its Jacobian is constant along a smooth path)
sort.defsparsity("sort")  # (moves elements by value: along the axis, any to any)


def _sort_batch(op):
    fn = op.of

    def rule(F, batched, x, axis=-1, descending=False, stable=True):
        if axis is None:  # each element's flattened values
            x, axis = flatten(F, x), 1
        else:
            axis = shift_axis(operator.index(axis), x.ndim - 1)
        return fn(F)(x, axis=axis, descending=descending, stable=stable)
    op.defbatch(rule)


_sort_batch(sort)


@defop(kind=INDEXING, domain=REAL, differentiable=False, sample=_sample_sort,
       notes={"signature": _SORT_SIGNATURE})
def argsort(B, a, axis=-1, *, descending=False, stable=True):
    """The indices that sort ``a`` along ``axis`` (array-API ``argsort``; not differentiable).

    Parameters
    ----------
    a : Tensor
    axis : int or None
        None: indices into the flattened tensor.
    descending : bool
    stable : bool
        Equal elements keep their relative order (also when descending).

    Returns
    -------
    Tensor
        int64 indices; ``take_along_axis(x, argsort(x, axis), axis)`` is ``sort(x, axis)``.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.argsort(ndgrad.tensor([3.0, 1.0, 2.0]))
    tensor([1, 2, 0])
    >>> ndgrad.argsort(ndgrad.tensor([1.0, 2.0, 1.0]), descending=True)
    tensor([1, 0, 2])
    """
    if axis is None:
        a, axis = B.reshape(a, (-1,)), -1
    kind = "stable" if stable else None
    if not descending:
        return B.argsort(a, axis=axis, kind=kind)
    # stable descending: sort the reversed array ascending, reverse, map the indices back
    n = a.shape[axis]
    rev = B.argsort(B.flip(a, axis=axis), axis=axis, kind=kind)
    return (n - 1) - B.flip(rev, axis=axis)


_sort_batch(argsort)


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


@defop(kind=INDEXING, domain=ANY, method=False, sample=_sample_trim_zeros,
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
