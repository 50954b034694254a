"""Shape primitives: reshape, permute_dims (and the composites transpose, swapaxes), moveaxis,
expand_dims, squeeze, broadcast_to, broadcast_arrays, concat, stack, split, unstack, flip,
roll, tile, repeat, pad, tril, triu, clone, astype.

All are linear in their array inputs, so their jvp is the op applied to the tangent; their vjp
rules route the cotangent back to the input's layout. The jvp rules are written out (one line
each) rather than taken from ``defjvp_linear`` because these ops are often called with their
parameters positionally (``reshape(x, (2, 3))``, ``split(x, 3)``), and such parameters reach a
rule as extra positional arguments, which a rule must pass on.

Semantics follow NumPy where NumPy and PyTorch disagree (``transpose``, ``split``, ``repeat``,
``pad``); each docstring says so.
"""

from __future__ import annotations

import math
import operator

from ..backend import Device, as_dtype, backend_for_device, backend_of, get_default_device
from ..dispatch import apply
from ..tensor import Tensor
from .batching import (batch_size, flatten, keeps_identity, logical_ndim, pad_to, shift_axes,
                       shift_axis, with_batch)
from .registry import SHAPE, VARIADIC, Domain, defalias, defop, linear

ANY = Domain((-2.0, 2.0), complex=True)


def _linear_jvp(op):
    """The jvp of an op linear in its one array input: the op applied to the tangent."""
    fn = op.of

    def jvp(F, tangents, out, x, *extra, **params):
        return fn(F)(tangents[0], *extra, **params)
    op.defjvp(jvp)
    op.defstructure(linear())
    return op


def _as_int_tuple(seq):
    if hasattr(seq, "tolist"):  # a backend array (or a Tensor) of ints
        seq = seq.tolist()
    if isinstance(seq, int) or hasattr(seq, "__index__") and not isinstance(seq, (list, tuple)):
        return (operator.index(seq),)
    return tuple(operator.index(s) for s in seq)


# ------------------------------------------------------------------------------ reshape
def _sample_reshape(d):
    shape = d.shape(max_dims=3)
    size = 1
    for s in shape:
        size *= s
    target = d.choice([(size,), (-1,), (1, size), tuple(reversed(shape)), shape + (1,),
                       (size, 1, 1)])
    if d.boolean() and len(target) > 1:  # one inferred size
        k = d.integers(0, len(target) - 1)
        target = target[:k] + (-1,) + target[k + 1:] if -1 not in target else target
    return (d.array(shape),), {"shape": target}


@defop(kind=SHAPE, domain=ANY, view=True, sample=_sample_reshape, notes={"signature": (
    "the new sizes may also be given as separate arguments, ``*shape``, as ndarray.reshape "
    "and PyTorch take them (reshape(x, 2, 3)); NumPy's reshape(x, (2, 3), 'C'), its order "
    "by position after one shape, is read as NumPy reads it")})
def reshape(B, a, shape):
    """Give ``a`` a new shape with the same number of elements.

    Parameters
    ----------
    a : Tensor
    shape : int or tuple of ints
        The new shape; one entry may be ``-1``, inferred from the size. The method also takes
        the sizes as separate arguments, as NumPy's and PyTorch's do: ``x.reshape(3, 2)``.
    order : {"C", "F"}
        Read and write the elements in C (last index fastest, the default) or Fortran order,
        as NumPy's ``order``; ``"A"`` (by the memory layout) is not supported.
    copy : bool, optional
        True: never a view; False: never a copy (a ValueError where no view exists).

    Returns
    -------
    Tensor
        A view of ``a`` where NumPy can make one, a copy otherwise.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.reshape(ndgrad.arange(6.0), (2, 3))
    tensor([[0., 1., 2.],
            [3., 4., 5.]])
    >>> ndgrad.arange(6.0).reshape(3, -1).shape
    (3, 2)
    """
    return B.reshape(a, shape)


reshape.defvjp(lambda F, g, out, x, shape: F.reshape(g, x.shape))
_linear_jvp(reshape)
reshape.defscatter(lambda F, parent, child, shape: F.reshape(child, parent.shape))


def _reshape_batch(F, batched, x, shape):
    shape = (operator.index(shape),) if not isinstance(shape, (tuple, list)) else tuple(shape)
    if -1 in shape:
        # resolved from one element's size: next to the batch size, NumPy could not infer it
        # for empty elements (a size that does not fit is left for NumPy to report)
        known, size = 1, 1
        for s in shape:
            known *= s if s != -1 else 1
        for s in x.shape[1:]:
            size *= s
        if known and size % known == 0:
            shape = tuple(size // known if s == -1 else s for s in shape)
    return F.reshape(x, (x.shape[0],) + shape)


reshape.defbatch(_reshape_batch)


@reshape.defidentity
def _reshape_identity(F, i, s, args, batched, params):
    # reshaping a vector to itself keeps an identity batch
    shape = params["shape"] if "shape" in params else args[1]
    return ("identity", s) if tuple(shape) in ((s.shape[0],), (-1,)) else None


def _reshape_public(a, /, *shape, order="C", copy=None, **kw):
    x = a
    if "shape" in kw:
        if shape:
            raise TypeError("reshape() got the shape both positionally and as shape=")
        shape = (kw.pop("shape"),)
    if kw:
        raise TypeError(f"reshape() got unexpected keyword arguments {sorted(kw)}")
    if len(shape) == 2 and isinstance(shape[1], str) and not isinstance(shape[0], str):
        order, shape = shape[1], shape[:1]  # (NumPy's reshape(a, shape, order))
    if not shape:
        raise TypeError("reshape() missing the new shape, e.g. reshape(x, (2, 3)) or "
                        "x.reshape(2, 3)")
    if order not in ("C", "F"):
        raise ValueError(f"ndgrad.reshape: order must be 'C' or 'F', got {order!r} ('A' and "
                         "'K' follow the memory layout, which is not part of a tensor's "
                         "contract)")
    shape = _as_int_tuple(shape[0]) if len(shape) == 1 else _as_int_tuple(shape)
    if order == "F":  # Fortran order: C order of the reversed dimensions
        rev = tuple(range(len(x.shape) - 1, -1, -1))
        out = apply(reshape, apply(permute_dims, x, axes=rev), shape=shape[::-1])
        out = apply(permute_dims, out, axes=tuple(range(len(shape) - 1, -1, -1)))
    else:
        out = apply(reshape, x, shape=shape)
    if copy is None:
        return out
    shared = type(out) is Tensor and type(x) is Tensor and \
        backend_of(out._data).shares_memory(out._data, x._data)
    if copy:  # (the array API's copy=True: never a view)
        return apply(clone, out) if shared or type(out) is not Tensor else out
    if type(out) is Tensor and type(x) is Tensor and not shared and x.size:
        raise ValueError(f"ndgrad.reshape(copy=False): a tensor of shape {tuple(x.shape)} and "
                         f"strides {x._data.strides} cannot be viewed with shape {shape} "
                         "without a copy; pass copy=None to copy when needed")
    return out


reshape.defpublic(_reshape_public)


# ------------------------------------------------------------------------------ permutations
def _inverse_permutation(axes, ndim):
    inv = [0] * ndim
    for i, a in enumerate(axes):
        inv[operator.index(a) % ndim] = i
    return tuple(inv)


def _sample_permute_dims(d):
    shape = d.shape(max_dims=4)
    axes = d.permutation(len(shape))
    if axes and d.boolean():  # negative spellings are allowed
        axes = tuple(a - len(shape) if d.boolean() else a for a in axes)
    return (d.array(shape),), {"axes": axes}


@defop(kind=SHAPE, domain=ANY, view=True, sample=_sample_permute_dims)
def permute_dims(B, a, axes):
    """Permute the dimensions of ``a``: output dimension ``i`` is input dimension ``axes[i]``.

    The array-API name; :func:`transpose` is NumPy's spelling (``axes`` optional) and
    :func:`swapaxes` exchanges two dimensions (PyTorch's ``x.transpose(0, 1)``).

    Parameters
    ----------
    a : Tensor
    axes : tuple of ints
        A permutation of ``range(x.ndim)`` (negative entries count from the end).

    Returns
    -------
    Tensor
        A view of ``a``.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.permute_dims(ndgrad.ones(2, 3, 4), (2, 0, 1)).shape
    (4, 2, 3)
    """
    return B.permute_dims(a, tuple(axes))


permute_dims.defvjp(lambda F, g, out, x, axes:
                    F.permute_dims(g, _inverse_permutation(axes, g.ndim)))
_linear_jvp(permute_dims)
permute_dims.defscatter(lambda F, parent, child, axes:
                        F.permute_dims(child, _inverse_permutation(axes, child.ndim)))
permute_dims.defbatch(lambda F, batched, x, axes: F.permute_dims(
    x, (0,) + tuple(shift_axis(operator.index(a), x.ndim - 1) for a in axes)))



def _sample_moveaxis(d):
    shape = d.shape(min_dims=1, max_dims=4)
    nd = len(shape)
    if d.boolean():
        return (d.array(shape),), {"source": d.axis(nd, none=False),
                                    "destination": d.axis(nd, none=False)}
    k = d.integers(1, nd)
    src = d.permutation(nd)[:k]
    dst = d.permutation(nd)[:k]
    return (d.array(shape),), {"source": src, "destination": dst}


@defop(kind=SHAPE, domain=ANY, view=True, sample=_sample_moveaxis)
def moveaxis(B, a, source, destination):
    """Move dimensions ``source`` of ``a`` to positions ``destination``; the others keep
    their order.

    Parameters
    ----------
    a : Tensor
    source, destination : int or sequence of ints
        As many destinations as sources; each is distinct.

    Returns
    -------
    Tensor
        A view of ``a``.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.moveaxis(ndgrad.ones(2, 3, 4), 0, -1).shape
    (3, 4, 2)
    >>> ndgrad.moveaxis(ndgrad.ones(2, 3, 4), (0, 1), (2, 0)).shape
    (3, 4, 2)
    """
    return B.moveaxis(a, source, destination)


moveaxis.defvjp(lambda F, g, out, x, source, destination: F.moveaxis(g, destination, source))
_linear_jvp(moveaxis)
moveaxis.defscatter(lambda F, parent, child, source, destination:
                    F.moveaxis(child, destination, source))
moveaxis.defbatch(lambda F, batched, x, source, destination: F.moveaxis(
    x, shift_axes(source, x.ndim - 1), shift_axes(destination, x.ndim - 1)))


# ------------------------------------------------------------------------------ length-1 dims
def _sample_expand_dims(d):
    shape = d.shape(max_dims=3)
    if d.boolean():
        return (d.array(shape),), {"axis": d.axis(len(shape) + 1, none=False)}
    k = d.integers(1, 2)
    axes = d.permutation(len(shape) + k)[:k]
    return (d.array(shape),), {"axis": axes}


def _axis_arg(axis):
    return axis if axis is None or isinstance(axis, int) else tuple(axis)


@defop(kind=SHAPE, domain=ANY, view=True, sample=_sample_expand_dims)
def expand_dims(B, a, axis=0):
    """Insert length-1 dimensions at ``axis`` (PyTorch's ``unsqueeze``).

    Parameters
    ----------
    a : Tensor
    axis : int or tuple of ints
        Positions of the new dimensions in the output (default 0).

    Returns
    -------
    Tensor
        A view of ``a``.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.expand_dims(ndgrad.ones(3), 0).shape
    (1, 3)
    >>> ndgrad.ones(3).expand_dims((0, -1)).shape
    (1, 3, 1)
    """
    return B.expand_dims(a, _axis_arg(axis))


# the inserted dimensions are the ones to squeeze (axis counts in the output, like g's)
expand_dims.defvjp(lambda F, g, out, x, axis=0: F.squeeze(g, axis=_axis_arg(axis)))
_linear_jvp(expand_dims)
expand_dims.defscatter(lambda F, parent, child, axis=0: F.reshape(child, parent.shape))


def _expand_dims_batch(F, batched, x, axis=0):
    axis = _axis_arg(axis)
    out_nd = x.ndim - 1 + (1 if isinstance(axis, int) else len(axis))  # axis counts in the output
    return F.expand_dims(x, shift_axes(axis, out_nd))


expand_dims.defbatch(_expand_dims_batch)


def _sample_squeeze(d):
    shape = list(d.shape(max_dims=3))
    for _ in range(d.integers(0, 2)):  # make sure there are length-1 dimensions
        shape.insert(d.integers(0, len(shape)), 1)
    shape = tuple(shape)
    ones = [k for k, s in enumerate(shape) if s == 1]
    if not ones or d.boolean():
        return (d.array(shape),), {}
    chosen = [k for k in ones if d.boolean()] or ones[:1]
    if len(chosen) == 1 and d.boolean():
        return (d.array(shape),), {"axis": chosen[0] - len(shape)}
    return (d.array(shape),), {"axis": tuple(chosen)}


@defop(kind=SHAPE, domain=ANY, view=True, sample=_sample_squeeze)
def squeeze(B, a, axis=None):
    """Remove length-1 dimensions: those in ``axis``, or all of them.

    Parameters
    ----------
    a : Tensor
    axis : int or tuple of ints, optional
        Dimensions to remove; each must have length 1.

    Returns
    -------
    Tensor
        A view of ``a``.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.squeeze(ndgrad.ones(1, 3, 1)).shape
    (3,)
    >>> ndgrad.ones(1, 3, 1).squeeze(axis=0).shape
    (3, 1)
    """
    return B.squeeze(a, axis=_axis_arg(axis))


squeeze.defvjp(lambda F, g, out, x, axis=None: F.reshape(g, x.shape))
_linear_jvp(squeeze)
squeeze.defscatter(lambda F, parent, child, axis=None: F.reshape(child, parent.shape))


def _squeeze_batch(F, batched, x, axis=None):
    if axis is None:  # every length-1 dimension of an element; never the batch dimension
        return F.squeeze(x, axis=tuple(k for k in range(1, x.ndim) if x.shape[k] == 1))
    return F.squeeze(x, axis=shift_axes(_axis_arg(axis), x.ndim - 1))


squeeze.defbatch(_squeeze_batch)


# ------------------------------------------------------------------------------ broadcasting
def _sample_broadcast_to(d):
    base = d.shape(max_dims=3)
    xshape = tuple(1 if d.boolean() else s for s in base)
    target = d.shape(max_dims=2) + base
    return (d.array(xshape),), {"shape": target}


_READ_ONLY = ("a broadcast view is read-only (NumPy refuses writes to it, PyTorch refuses "
              "in-place ops on expanded tensors): there is nothing to write back")


@defop(kind=SHAPE, domain=ANY, view=True, sample=_sample_broadcast_to,
       notes={"scatter": _READ_ONLY})
def broadcast_to(B, array, shape):
    """Broadcast ``array`` to ``shape`` with NumPy's rules (PyTorch's ``expand``).

    Parameters
    ----------
    array : Tensor
    shape : tuple of ints

    Returns
    -------
    Tensor
        A read-only view of ``array``; its gradient sums over the broadcast dimensions.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.broadcast_to(ndgrad.tensor([1.0, 2.0]), (2, 2))
    tensor([[1., 2.],
            [1., 2.]])
    """
    return B.broadcast_to(array, shape)


# the engine sums the cotangent back to x's shape (Note [Broadcasting is undone by the engine])
broadcast_to.defvjp(lambda F, g, out, x, shape: g)
_linear_jvp(broadcast_to)


def _broadcast_to_batch(F, batched, x, shape):
    shape = (operator.index(shape),) if not isinstance(shape, (tuple, list)) else tuple(shape)
    return F.broadcast_to(pad_to(F, x, len(shape)), (x.shape[0],) + shape)


broadcast_to.defbatch(_broadcast_to_batch)


def _sample_broadcast_arrays(d):
    shapes = d.shapes(d.integers(1, 3), max_dims=3)
    return tuple(d.array(s) for s in shapes), {}


@defop(kind=SHAPE, nin=VARIADIC, nout=VARIADIC, domain=ANY, method=False, view=True,
       sample=_sample_broadcast_arrays, notes={"scatter": _READ_ONLY})
def broadcast_arrays(B, *arrays):
    """Broadcast the arrays against each other (NumPy rules).

    Parameters
    ----------
    *arrays : Tensors

    Returns
    -------
    tuple of Tensor
        Read-only views, one per input, all of the broadcast shape.

    Examples
    --------
    >>> import ndgrad
    >>> a, b = ndgrad.broadcast_arrays(ndgrad.ones(3), ndgrad.zeros(2, 1))
    >>> a.shape, b.shape
    ((2, 3), (2, 3))
    """
    return tuple(B.broadcast_arrays(*arrays))


broadcast_arrays.defvjp_each(lambda F, i, g, out, *arrays: g[i])
broadcast_arrays.defjvp_linear()
# output k is input k broadcast to the common shape: its history is replayed as that
broadcast_arrays.view_replay = lambda k, out: (broadcast_to, (), {"shape": tuple(out.shape)})


def _broadcast_arrays_batch(F, batched, *arrays):
    # batched inputs padded to the longest element rank: then the batch dimension leads every
    # output (the unbatched inputs, no longer, align to the right as usual)
    k = max(logical_ndim(a, b) for a, b in zip(arrays, batched))
    return tuple(F.broadcast_arrays(*[pad_to(F, a, k) if b else a
                                      for a, b in zip(arrays, batched)]))


broadcast_arrays.defbatch(_broadcast_arrays_batch)


def _broadcast_arrays_public(*arrays):
    return apply(broadcast_arrays, *arrays)


broadcast_arrays.defpublic(_broadcast_arrays_public)


# ------------------------------------------------------------------------------ joining
def _sample_concat(d):
    n = d.integers(1, 3)
    if d.integers(0, 4) == 0:  # axis=None: any shapes, flattened
        return tuple(d.array(d.shape(max_dims=3)) for _ in range(n)), {"axis": None}
    shape = list(d.shape(min_dims=1, max_dims=3))
    axis = d.axis(len(shape), none=False)
    arrays = []
    for _ in range(n):
        shape[axis] = d.integers(1, 3)
        arrays.append(d.array(tuple(shape)))
    return tuple(arrays), {"axis": axis}


@defop(kind=SHAPE, nin=VARIADIC, domain=ANY, method=False, pack=True, sample=_sample_concat)
def concat(B, *arrays, axis=0):
    """Join tensors along an existing dimension (PyTorch's ``cat``).

    Parameters
    ----------
    arrays : sequence of Tensors
        Same shape except along ``axis``.
    axis : int or None
        The dimension to join along; None flattens the inputs first (NumPy).

    Returns
    -------
    Tensor

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.concat([ndgrad.zeros(2), ndgrad.ones(1)])
    tensor([0., 0., 1.])
    >>> ndgrad.concat([ndgrad.zeros((2, 1)), ndgrad.ones((2, 2))], axis=1)
    tensor([[0., 1., 1.],
            [0., 1., 1.]])
    >>> ndgrad.concat([ndgrad.zeros((1, 2)), ndgrad.ones(1)], axis=None)
    tensor([0., 0., 1.])
    """
    return B.concat(arrays, axis=axis)


def _concat_vjp(F, i, g, out, *arrays, axis=0):
    if axis is None:
        start = 0
        for a in arrays[:i]:
            start += a.size
        x = arrays[i]
        return F.reshape(g[start:start + x.size], x.shape)
    ax = axis % g.ndim
    start = 0
    for a in arrays[:i]:
        start += a.shape[ax]
    return g[(slice(None),) * ax + (slice(start, start + arrays[i].shape[ax]),)]


concat.defvjp_each(_concat_vjp)
concat.defjvp_linear()
defalias("cat", "concat")


def _concat_batch(F, batched, *arrays, axis=0):
    n = batch_size(arrays, batched)
    if axis is None:  # each element's inputs flattened, joined along its one axis
        flat = [flatten(F, a) if b else with_batch(F, F.reshape(a, (-1,)), n)
                for a, b in zip(arrays, batched)]
        return F.concat(flat, axis=1)
    nd = logical_ndim(arrays[0], batched[0])
    return F.concat([a if b else with_batch(F, a, n) for a, b in zip(arrays, batched)],
                    axis=shift_axis(axis, nd))


concat.defbatch(_concat_batch)


def _sample_stack(d):
    shape = d.shape(max_dims=3)
    n = d.integers(1, 3)
    return tuple(d.array(shape) for _ in range(n)), {"axis": d.axis(len(shape) + 1, none=False)}


@defop(kind=SHAPE, nin=VARIADIC, domain=ANY, method=False, pack=True, sample=_sample_stack)
def stack(B, *arrays, axis=0):
    """Join same-shaped tensors along a new dimension ``axis``.

    Parameters
    ----------
    arrays : sequence of Tensors
        All of the same shape.
    axis : int
        Position of the new dimension in the output.

    Returns
    -------
    Tensor

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.stack([ndgrad.zeros(2), ndgrad.ones(2)], axis=1)
    tensor([[0., 1.],
            [0., 1.]])
    """
    return B.stack(arrays, axis=axis)


stack.defvjp_each(lambda F, i, g, out, *arrays, axis=0:
                  g[(slice(None),) * (axis % g.ndim) + (i,)])
stack.defjvp_linear()


def _stack_batch(F, batched, *arrays, axis=0):
    n = batch_size(arrays, batched)
    nd = logical_ndim(arrays[0], batched[0])
    return F.stack([a if b else with_batch(F, a, n) for a, b in zip(arrays, batched)],
                   axis=shift_axis(axis, nd + 1))  # axis counts in the output


stack.defbatch(_stack_batch)


# ------------------------------------------------------------------------------ splitting
def _sample_split(d):
    shape = list(d.shape(min_dims=1, max_dims=3))
    axis = d.axis(len(shape), none=False)
    if shape[axis] == 1 or d.boolean():
        k = d.integers(1, 3)
        shape[axis] = k * d.integers(1, 2)
        return (d.array(tuple(shape)),), {"indices_or_sections": k, "axis": axis}
    n = shape[axis]  # cuts inside (0, n): no empty part
    cuts = sorted({d.integers(1, n - 1) for _ in range(d.integers(1, 3))})
    return (d.array(tuple(shape)),), {"indices_or_sections": cuts, "axis": axis}


@defop(kind=SHAPE, nout=VARIADIC, domain=ANY, view=True, sample=_sample_split)
def split(B, ary, indices_or_sections, axis=0):
    """Split ``ary`` into several tensors along ``axis`` (NumPy semantics).

    Parameters
    ----------
    ary : Tensor
    indices_or_sections : int or sequence of ints
        An int ``n``: ``n`` equal parts (the length along ``axis`` must divide). A sequence:
        the indices where the cuts go (``[2, 3]`` gives ``x[:2], x[2:3], x[3:]``). Note that
        PyTorch's ``split`` takes part *sizes* instead.
    axis : int

    Returns
    -------
    tuple of Tensor
        Views of ``ary``.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.split(ndgrad.arange(6.0), 3)
    (tensor([0., 1.]), tensor([2., 3.]), tensor([4., 5.]))
    >>> [p.shape for p in ndgrad.split(ndgrad.ones(2, 5), [1, 4], axis=1)]
    [(2, 1), (2, 3), (2, 1)]
    """
    if not isinstance(indices_or_sections, int) and hasattr(indices_or_sections, "__len__"):
        indices_or_sections = _as_int_tuple(indices_or_sections)
    return tuple(B.split(ary, indices_or_sections, axis=axis))


split.defvjp(lambda F, g, out, x, indices_or_sections, axis=0: F.concat(g, axis=axis))
_linear_jvp(split)


def _split_scatter(F, k, parent, child, indices_or_sections, axis=0):
    """Part ``k`` of ``split`` is ``parent[..., start:stop, ...]`` (np.split's slicing)."""
    ax = operator.index(axis) % parent.ndim
    n = parent.shape[ax]
    if isinstance(indices_or_sections, int):
        size = n // indices_or_sections
        start, stop = k * size, (k + 1) * size
    else:
        bounds = (0,) + _as_int_tuple(indices_or_sections) + (n,)
        start, stop = bounds[k], bounds[k + 1]
    return F.index_put(parent, child, index=(slice(None),) * ax + (slice(start, stop),))


split.defscatter(_split_scatter)
split.defbatch(lambda F, batched, x, indices_or_sections, axis=0: tuple(
    F.split(x, indices_or_sections, axis=shift_axis(operator.index(axis), x.ndim - 1))))


def _sample_unstack(d):
    shape = d.shape(min_dims=1, max_dims=3)
    return (d.array(shape),), {"axis": d.axis(len(shape), none=False)}


@defop(kind=SHAPE, nout=VARIADIC, domain=ANY, view=True, sample=_sample_unstack)
def unstack(B, x, *, axis=0):
    """Split ``x`` into the tensors along ``axis`` (that dimension removed): the inverse of
    :func:`stack` (PyTorch's ``unbind``).

    Parameters
    ----------
    x : Tensor
    axis : int

    Returns
    -------
    tuple of Tensor
        ``x.shape[axis]`` views of ``x``.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.unstack(ndgrad.tensor([[1.0, 2.0], [3.0, 4.0]]), axis=1)
    (tensor([1., 3.]), tensor([2., 4.]))
    """
    return tuple(B.moveaxis(x, axis, 0))


unstack.defvjp(lambda F, g, out, x, axis=0: F.stack(g, axis=axis))
_linear_jvp(unstack)
unstack.defscatter(lambda F, k, parent, child, axis=0:
                   F.index_put(parent, child,
                               index=(slice(None),) * (operator.index(axis) % parent.ndim) + (k,)))
unstack.defbatch(lambda F, batched, x, axis=0: tuple(
    F.unstack(x, axis=shift_axis(operator.index(axis), x.ndim - 1))))


# ------------------------------------------------------------------------------ reordering
def _sample_flip(d):
    shape = d.shape(max_dims=3)
    r = d.integers(0, 2)
    if r == 0 or not shape:
        return (d.array(shape),), {}
    if r == 1:
        return (d.array(shape),), {"axis": d.axis(len(shape), none=False)}
    return (d.array(shape),), {"axis": d.axes(len(shape))}


@defop(kind=SHAPE, domain=ANY, view=True, sample=_sample_flip)
def flip(B, m, axis=None):
    """Reverse the order of elements along ``axis`` (all axes by default).

    Parameters
    ----------
    m : Tensor
    axis : int or tuple of ints, optional

    Returns
    -------
    Tensor
        A view of ``m``.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.flip(ndgrad.tensor([[1.0, 2.0], [3.0, 4.0]]), axis=1)
    tensor([[2., 1.],
            [4., 3.]])
    """
    return B.flip(m, axis=_axis_arg(axis))


flip.defvjp(lambda F, g, out, x, axis=None: F.flip(g, axis=axis))
_linear_jvp(flip)
flip.defscatter(lambda F, parent, child, axis=None: F.flip(child, axis=axis))
flip.defbatch(lambda F, batched, x, axis=None:
              F.flip(x, axis=shift_axes(_axis_arg(axis), x.ndim - 1)))


def _negated(shift):
    return -shift if isinstance(shift, int) else tuple(-s for s in shift)


def _sample_roll(d):
    shape = d.shape(min_dims=1, max_dims=3)
    if d.boolean():
        return (d.array(shape),), {"shift": d.integers(-5, 5), "axis": None}
    axes = d.axes(len(shape)) or (0,)
    if len(axes) == 1 and d.boolean():
        return (d.array(shape),), {"shift": d.integers(-5, 5), "axis": axes[0]}
    return (d.array(shape),), {"shift": tuple(d.integers(-5, 5) for _ in axes), "axis": axes}


@defop(kind=SHAPE, domain=ANY, sample=_sample_roll)
def roll(B, a, shift, axis=None):
    """Shift elements cyclically by ``shift`` along ``axis`` (None: over the flattened
    tensor, keeping the shape).

    Parameters
    ----------
    a : Tensor
    shift : int or tuple of ints
        One shift, or one per axis in ``axis``.
    axis : int or tuple of ints, optional

    Returns
    -------
    Tensor

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.roll(ndgrad.arange(5.0), 2)
    tensor([3., 4., 0., 1., 2.])
    """
    if not isinstance(shift, int):
        shift = _as_int_tuple(shift)
    return B.roll(a, shift, axis=_axis_arg(axis))


roll.defvjp(lambda F, g, out, x, shift, axis=None: F.roll(g, _negated(shift), axis=axis))
_linear_jvp(roll)


def _roll_batch(F, batched, x, shift, axis=None):
    if axis is None:  # each element's flattened values
        return F.reshape(F.roll(flatten(F, x), shift, axis=1), x.shape)
    return F.roll(x, shift, axis=shift_axes(_axis_arg(axis), x.ndim - 1))


roll.defbatch(_roll_batch)


# ------------------------------------------------------------------------------ tile / repeat
def _sample_tile(d):
    shape = d.shape(max_dims=3)
    if d.boolean():
        return (d.array(shape),), {"reps": d.integers(1, 3)}
    return (d.array(shape),), {"reps": tuple(d.integers(1, 3) for _ in range(d.integers(0, 4)))}


@defop(kind=SHAPE, domain=ANY, sample=_sample_tile)
def tile(B, A, reps):
    """Repeat the whole of ``A`` ``reps`` times along each dimension (NumPy's ``tile``,
    PyTorch's ``Tensor.repeat``).

    Parameters
    ----------
    A : Tensor
    reps : int or tuple of ints
        Repetitions per dimension; a longer ``reps`` adds leading dimensions to ``A``, a
        shorter one is padded with 1s at the front.

    Returns
    -------
    Tensor

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.tile(ndgrad.tensor([1.0, 2.0]), 2)
    tensor([1., 2., 1., 2.])
    >>> ndgrad.tile(ndgrad.tensor([1.0, 2.0]), (2, 1))
    tensor([[1., 2.],
            [1., 2.]])
    """
    return B.tile(A, reps)


def _tile_vjp(F, g, out, x, reps):
    reps = _as_int_tuple(reps)
    nd = max(len(reps), x.ndim)
    reps = (1,) * (nd - len(reps)) + reps
    xs = (1,) * (nd - x.ndim) + tuple(x.shape)
    split_shape = []
    for r, s in zip(reps, xs):
        split_shape += [r, s]
    g = F.reshape(g, tuple(split_shape))
    return F.reshape(F.sum(g, axis=tuple(range(0, 2 * nd, 2))), x.shape)


tile.defvjp(_tile_vjp)
_linear_jvp(tile)


def _tile_batch(F, batched, x, reps):
    reps = _as_int_tuple(reps)
    nd = max(len(reps), x.ndim - 1)  # the element gets leading length-1 dims, reps leading 1s
    return F.tile(pad_to(F, x, nd), (1,) * (nd + 1 - len(reps)) + reps)


tile.defbatch(_tile_batch)


def _sample_repeat(d):
    shape = d.shape(max_dims=3)
    axis = d.axis(len(shape)) if shape else None
    n = math.prod(shape) if axis is None else shape[axis]
    if d.boolean():
        return (d.array(shape),), {"repeats": d.integers(1, 3), "axis": axis}
    repeats = [d.integers(0, 3) for _ in range(n)]  # some zeros: elements dropped
    repeats[d.integers(0, n - 1)] = d.integers(1, 3)  # a non-empty result
    return (d.array(shape),), {"repeats": tuple(repeats), "axis": axis}


@defop(kind=SHAPE, domain=ANY, sample=_sample_repeat)
def repeat(B, a, repeats, axis=None):
    """Repeat each element of ``a`` (NumPy's ``repeat``, PyTorch's ``repeat_interleave``).

    Note that ``x.repeat(...)`` is NumPy's method; PyTorch's ``Tensor.repeat`` is
    :func:`tile` here.

    Parameters
    ----------
    a : Tensor
    repeats : int or sequence of ints
        Repetitions of every element, or of each element along ``axis`` (non-negative).
    axis : int, optional
        The axis to repeat along; None repeats the flattened tensor (a 1-D result).

    Returns
    -------
    Tensor

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.repeat(ndgrad.tensor([1.0, 2.0]), 2)
    tensor([1., 1., 2., 2.])
    >>> ndgrad.repeat(ndgrad.tensor([[1.0, 2.0]]), [1, 3], axis=1)
    tensor([[1., 2., 2., 2.]])
    """
    if not isinstance(repeats, int):
        repeats = _as_int_tuple(repeats)
    return B.repeat(a, repeats, axis=axis)


def _repeat_vjp(F, g, out, x, repeats, axis=None):
    if axis is None:
        n, ax, gx_shape = x.size, 0, (x.size,)
    else:
        ax = axis % x.ndim
        n = x.shape[ax]
        gx_shape = x.shape
    if not isinstance(repeats, int):
        repeats = _as_int_tuple(repeats)
        if len(repeats) == 1:
            repeats = repeats[0]
    if isinstance(repeats, int):  # equal segments: a reshape and a sum
        gs = tuple(g.shape)
        gx = F.sum(F.reshape(g, gs[:ax] + (n, repeats) + gs[ax + 1:]), axis=ax + 1)
    else:  # segments of different lengths: scatter-add each output to its source
        seg = F.repeat(F.arange(n, like=g), repeats)
        zeros = F.zeros(gx_shape, dtype=g.dtype, like=g)
        gx = F.index_add(zeros, g, index=(slice(None),) * ax + (seg,))
    return F.reshape(gx, x.shape)


repeat.defvjp(_repeat_vjp)
_linear_jvp(repeat)


def _repeat_batch(F, batched, x, repeats, axis=None):
    if axis is None:  # each element's flattened values
        return F.repeat(flatten(F, x), repeats, axis=1)
    return F.repeat(x, repeats, axis=shift_axis(operator.index(axis), x.ndim - 1))


repeat.defbatch(_repeat_batch)


# ------------------------------------------------------------------------------ pad
_PAD_MODES = ("constant", "edge", "reflect", "symmetric", "wrap")


def _pad_widths(pad_width, ndim):
    """NumPy's ``pad_width`` broadcast to ``((before, after),) * ndim`` (Python ints)."""
    pw = pad_width.tolist() if hasattr(pad_width, "tolist") else pad_width
    if not isinstance(pw, (list, tuple)):
        pw = [[pw]]
    elif not pw or not isinstance(pw[0], (list, tuple)):
        pw = [list(pw)]
    rows = [list(r) for r in pw]
    if len(rows) not in (1, ndim) or any(len(r) not in (1, 2) for r in rows):
        raise ValueError(f"pad: pad_width {pad_width!r} can't be broadcast to ({ndim}, 2); "
                         "give an int, (before, after), or one (before, after) per dimension")
    rows = rows * ndim if len(rows) == 1 else rows
    out = []
    for r in rows:
        b, a = (r[0], r[0]) if len(r) == 1 else r
        b, a = operator.index(b), operator.index(a)
        if b < 0 or a < 0:
            raise ValueError(f"pad: pad widths must be non-negative, got {pad_width!r}")
        out.append((b, a))
    return tuple(out)


def _pad_source(n, before, after, mode):
    """For each output position along one axis, the input index it copies (NumPy's modes)."""
    src = []
    for i in range(-before, n + after):
        if mode == "edge":
            m = min(max(i, 0), n - 1)
        elif mode == "wrap":
            m = i % n
        elif mode == "symmetric":
            m = i % (2 * n)
            m = m if m < n else 2 * n - 1 - m
        elif n == 1:  # reflect
            m = 0
        else:
            p = 2 * (n - 1)
            m = i % p
            m = m if m < n else p - m
        src.append(m)
    return src


def _sample_pad(d):
    shape = d.shape(max_dims=3)
    mode = d.choice(_PAD_MODES)
    r = d.integers(0, 2)
    if r == 0 or not shape:
        pw = d.integers(0, 3)
    elif r == 1:
        pw = (d.integers(0, 3), d.integers(0, 3))
    else:
        pw = tuple((d.integers(0, 3), d.integers(0, 3)) for _ in shape)
    kw = {"pad_width": pw, "mode": mode}
    if mode == "constant" and d.boolean():
        kw["constant_values"] = d.choice([1.5, -2.0])
    return (d.array(shape),), kw


@defop(kind=SHAPE, domain=ANY, method=False, sample=_sample_pad)
def pad(B, array, pad_width, mode="constant", *, constant_values=0):
    """Pad ``array`` with NumPy's ``pad_width`` convention.

    Parameters
    ----------
    array : Tensor
    pad_width : int or sequence
        ``((before_0, after_0), ..., (before_n, after_n))``, or one ``(before, after)`` pair
        or one int for every dimension. (PyTorch's ``pad`` lists the *last* dimension first;
        this is NumPy's order.)
    mode : {"constant", "edge", "reflect", "symmetric", "wrap"}
        As in NumPy.
    constant_values : scalar
        The fill value of ``"constant"`` (not differentiated).

    Returns
    -------
    Tensor

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.pad(ndgrad.tensor([1.0, 2.0]), (1, 2))
    tensor([0., 1., 2., 0., 0.])
    >>> ndgrad.pad(ndgrad.tensor([1.0, 2.0, 3.0]), 2, mode="reflect")
    tensor([3., 2., 1., 2., 3., 2., 1.])
    """
    if mode not in _PAD_MODES:
        raise ValueError(f"pad: mode {mode!r} is not supported; use one of {_PAD_MODES}")
    pw = _pad_widths(pad_width, array.ndim)
    if not pw:  # a 0-d tensor has nothing to pad
        return B.array(array, copy=True)
    if mode == "constant":
        return B.pad(array, pw, mode="constant", constant_values=constant_values)
    if mode != "constant" and any(s == 0 and w != (0, 0) for s, w in zip(array.shape, pw)):
        raise ValueError(f"pad: can't pad an empty dimension in mode {mode!r}")
    return B.pad(array, pw, mode=mode)


def _pad_vjp(F, g, out, x, pad_width, mode="constant", constant_values=0):
    pw = _pad_widths(pad_width, g.ndim)
    if mode == "constant":  # the cotangent of x is the middle of g
        return g[tuple(slice(b, s - a) for (b, a), s in zip(pw, g.shape))]
    for k, (b, a) in enumerate(pw):  # every other mode copies along each axis in turn
        if b == 0 and a == 0:
            continue
        n = g.shape[k] - b - a
        src = _pad_source(n, b, a, mode)
        shape = tuple(g.shape[:k]) + (n,) + tuple(g.shape[k + 1:])
        g = F.index_add(F.zeros(shape, dtype=g.dtype, like=g), g, index=(slice(None),) * k + (src,))
    return g


pad.defvjp(_pad_vjp)
# constant_values is not differentiated: the tangent pads with zeros
pad.defjvp(lambda F, tangents, out, x, pad_width, mode="constant", constant_values=0:
           F.pad(tangents[0], pad_width, mode=mode))
pad.defstructure(linear())
pad.defbatch(lambda F, batched, x, pad_width, mode="constant", constant_values=0:
             F.pad(x, ((0, 0),) + _pad_widths(pad_width, x.ndim - 1), mode=mode,
                   constant_values=constant_values))


# ------------------------------------------------------------------------------ triangles
def _sample_tri(d):
    shape = d.shape(min_dims=2, max_dims=4)
    return (d.array(shape),), {"k": d.integers(-2, 2)}


@defop(kind=SHAPE, domain=ANY, sample=_sample_tri)
def tril(B, m, k=0):
    """The lower triangle of the matrices in ``m`` (last two dimensions); the rest zeroed.

    Parameters
    ----------
    m : Tensor
        At least 2-D.
    k : int
        Diagonal above which to zero (0: the main diagonal, > 0 above it).

    Returns
    -------
    Tensor

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.tril(ndgrad.ones(3, 3))
    tensor([[1., 0., 0.],
            [1., 1., 0.],
            [1., 1., 1.]])
    """
    if m.ndim < 2:
        raise ValueError(f"tril needs at least 2 dimensions, got shape {m.shape}")
    return B.tril(m, k=k)


tril.defvjp(lambda F, g, out, x, k=0: F.tril(g, k=k))
_linear_jvp(tril)


@defop(kind=SHAPE, domain=ANY, sample=_sample_tri)
def triu(B, m, k=0):
    """The upper triangle of the matrices in ``m`` (last two dimensions); the rest zeroed.

    Parameters
    ----------
    m : Tensor
        At least 2-D.
    k : int
        Diagonal below which to zero (0: the main diagonal, > 0 above it).

    Returns
    -------
    Tensor

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.triu(ndgrad.ones(3, 3), k=1)
    tensor([[0., 1., 1.],
            [0., 0., 1.],
            [0., 0., 0.]])
    """
    if m.ndim < 2:
        raise ValueError(f"triu needs at least 2 dimensions, got shape {m.shape}")
    return B.triu(m, k=k)


triu.defvjp(lambda F, g, out, x, k=0: F.triu(g, k=k))
_linear_jvp(triu)


def _triangle_batch(op):
    fn, name = op.of, op.name

    def rule(F, batched, x, k=0):
        if x.ndim < 3:
            raise ValueError(f"{name} needs at least 2 dimensions, got shape {x.shape[1:]}")
        return fn(F)(x, k=k)  # the last two dimensions: the batch leads
    op.defbatch(rule)


_triangle_batch(tril)
_triangle_batch(triu)


# ------------------------------------------------------------------------------ copies, casts
def _sample_clone(d):
    return (d.array(d.shape()),), {}


@defop(kind=SHAPE, domain=ANY, method=False, sample=_sample_clone)
def clone(B, x):
    """A copy of ``x`` with its own storage (differentiable: the gradient flows back to ``x``).

    Examples
    --------
    >>> import ndgrad
    >>> x = ndgrad.tensor([1.0], requires_grad=True)
    >>> ndgrad.clone(x)
    tensor([1.], grad_fn=<CloneBackward0>)
    """
    return B.array(x, copy=True)


clone.defvjp(lambda F, g, out, x: g)
clone.defjvp_linear()
clone.defsparsity("elementwise")
clone.defbatch(lambda F, batched, x: F.clone(x))
clone.defidentity(keeps_identity(lambda F, s: s))


def _sample_astype(d):
    import numpy as np  # a test-time sampler, not a formula
    return (d.array(d.shape()),), {"dtype": d.choice([np.dtype("float64"),
                                                      np.dtype("complex128")])}


@defop(kind=SHAPE, domain=Domain((-2.0, 2.0)), method=False, sample=_sample_astype)
def astype(B, x, dtype):
    """Cast ``x`` to ``dtype``; the gradient is cast back to ``x``'s dtype (a real input keeps
    the real part of a complex cotangent).

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.astype(ndgrad.tensor([1.5]), ndgrad.float32)
    tensor([1.5], dtype=float32)

    The array API's signature: ``astype(x, dtype, /, *, copy=True, device=None)``. A new
    tensor is returned unless ``copy=False`` and ``x`` already has ``dtype`` (then ``x``
    itself); ``device`` moves the result (differentiably, as :meth:`Tensor.to`).

    >>> x = ndgrad.tensor([1.5])
    >>> ndgrad.astype(x, ndgrad.float64, copy=False) is x, ndgrad.astype(x, "float64") is x
    (True, False)
    """
    return x.astype(dtype)


def _astype_public(x, /, dtype, *, copy=True, device=None):
    same_device = device is None or (isinstance(x, Tensor) and Device(device) == x.device)
    if copy is False and same_device and getattr(x, "dtype", None) == as_dtype(dtype):
        return x
    out = apply(astype, x, dtype)
    return out if same_device else out.to(device)


astype.defpublic(_astype_public)


# the engine casts the cotangent to x's dtype (a real input keeps the real part)
astype.defvjp(lambda F, g, out, x, dtype: g)
astype.defjvp(lambda F, tangents, out, x, dtype: F.astype(tangents[0], dtype))
astype.defstructure(linear())
astype.defsparsity("elementwise")
astype.defbatch(lambda F, batched, x, dtype: F.astype(x, dtype))
astype.defidentity(keeps_identity(lambda F, s, dtype: F.astype(s, dtype)))


# ------------------------------------------------------------------------------ devices
def _to_device_args(x, device, source=None):
    """Fill in ``source``, x's device, which the vjp sends the cotangent back to."""
    if source is None:
        source = x.device if isinstance(x, Tensor) else backend_of(x).device_of(x)
    return (x,), {"device": str(Device(device)), "source": str(source)}


def _sample_to_device(d):
    dev = str(get_default_device())  # the device the property suite runs on
    return (d.array(d.shape()),), {"device": dev, "source": dev}


@defop(kind=SHAPE, domain=ANY, method=False, sample=_sample_to_device,
       notes={"devices": "its samples name the device they move between (the default device "
                         "when drawn); tests/core/test_devices.py moves tensors between the "
                         "CPU and the CUDA backend and differentiates through the move"})
def to_device(B, x, device, source=None):
    """A copy of ``x`` on ``device`` (``"cpu"``, ``"cuda"``, ``"cuda:N"``), the array API's
    ``to_device``; differentiable, the gradient goes back to ``x``'s device. ``Tensor.to``,
    ``.cpu()`` and ``.cuda()`` call it.

    Examples
    --------
    >>> import ndgrad
    >>> x = ndgrad.tensor([1.0, 2.0], requires_grad=True)
    >>> y = ndgrad.to_device(x, "cpu")
    >>> y.device, y is x
    (device('cpu'), False)
    """
    dst = backend_for_device(device)
    if dst is not B:  # between backends: through host memory
        x = B.to_numpy(x)
    return dst.asarray(x, device=device, copy=True)


to_device.defargs(_to_device_args)
to_device.defsparsity("elementwise")
to_device.defvjp(lambda F, g, out, x, device, source=None: F.to_device(g, device=source,
                                                                       source=device))
to_device.defjvp(lambda F, tangents, out, x, device, source=None:
                 F.to_device(tangents[0], device=device, source=source))
to_device.defstructure(linear())
to_device.defbatch(lambda F, batched, x, device, source=None:
                   F.to_device(x, device=device, source=source))
