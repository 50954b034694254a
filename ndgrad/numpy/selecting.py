"""NumPy's selecting functions, written from the indexing primitives: ``compress``,
``extract``, ``choose``, ``select``, ``piecewise``, ``partition``, ``delete``; and NumPy's
in-place writers ``place``, ``put``, ``putmask``, ``fill_diagonal`` and ``put_along_axis``.

Index, mask and condition arguments (``delete``'s ``obj``, ``compress``'s ``condition``,
``choose``'s indices, ``select``'s and ``piecewise``'s ``condlist``) are constants; the values
chosen or selected are differentiable. The in-place writers are plain functions (they modify
their first argument and return None, which the registry's suites cannot check): they write
through the Tensor's indexed assignment ``a[index] = values``, so the version counter and
autograd's in-place checks apply, and the values written are differentiable.
"""

from __future__ import annotations

import math

from ..core.creation import asarray
from ..core.dispatch import TENSOR_F
from ..core.ops.batching import is_batched
from ..core.ops.indexing import _along_axis_index, _axis
from ..core.ops.registry import INDEXING, SHAPE, defcomposite, sample_numpy
from ..core.ops.shape import _as_int_tuple
from ..core.tensor import Tensor
from ._arraylike import (_ANY, _ANYC, _along, _arr, _as_dtype, _broadcast_shapes, _constant,
                         _flatten, _keep, _like, _listify, _nd, _no_out, _numel)
from .joining import _flattened


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


@defcomposite(kind=SHAPE, domain=_ANYC, method=False, sample=_sample_delete)
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


@defcomposite(nin=2, kind=INDEXING, domain=_ANYC, method=False, sample=_sample_compress)
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


@defcomposite(nin=2, kind=INDEXING, domain=_ANYC, method=False, sample=_sample_extract)
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


@defcomposite(nin=2, kind=INDEXING, domain=_ANYC, sample=_sample_choose,
              sequences=("choices",),
              notes={"compile": "mode='raise' checks the indices' values; with mode='wrap' or "
                                "'clip' choose compiles"})
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


@defcomposite(nin=2, kind=INDEXING, domain=_ANYC, method=False, sample=_sample_select,
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


@defcomposite(kind=INDEXING, domain=_ANYC, method=False, sample=_sample_piecewise)
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


@defcomposite(kind=INDEXING, domain=_ANY, method=False, sample=_sample_partition)
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
