"""How NumPy's mirror reads its arguments: array-likes made arrays of ``F``, axes checked and
normalised, ``out=`` refused, the joined and broadcast shapes, weights checked and cast, and
the domains the property suite draws these functions' inputs from (``_ANY`` real, ``_ANYC``
complex). Shared by the subject modules of ``ndgrad/numpy/``; nothing here is public.

Note [Binning is a sort]
~~~~~~~~~~~~~~~~~~~~~~~~
Which bin a value falls in (histograms, ``interp``'s segment) is NumPy's
``searchsorted(edges, v, side="right")``, computed here from stable ``argsort`` of the edges
and values together (:func:`_count_le`): ``O((n + m) log(n + m))``, batched under ``vmap``
like any op, on every backend. Bin indices are integers: no derivative flows through them.
"""

from __future__ import annotations

import math
import operator

from ..core.backend import NUMPY, backend_of, float64
from ..core.creation import asarray
from ..core.dispatch import TENSOR_F
from ..core.ops.indexing import _axis
from ..core.ops.registry import Domain
from ..core.ops.special_shared import _stop
from ..core.tensor import Tensor




def _dtype_of(x):
    return getattr(x, "dtype", None)


def _is_floating(x):
    dt = _dtype_of(x)
    return dt.kind in "fc" if dt is not None else isinstance(x, (float, complex))


def _ones_linked(F, x, shape):
    """Ones of ``shape`` (in ``x``'s dtype) that depend on ``x`` with a zero derivative: a
    result that is constant in a tensor input still records it (and carries a tangent), as
    every result computed from a tensor that requires grad does."""
    return F.where(F.ones(shape, dtype="bool", like=x), 1, x)


def _real_only(who, *xs):
    for x in xs:
        dt = _dtype_of(x)
        if (dt is not None and dt.kind == "c") or isinstance(x, complex):
            raise TypeError(f"{who}: complex input is not supported (NumPy's {who} has no "
                            "complex loop)")


_EPS = {"e": 2.0 ** -10, "f": 2.0 ** -23, "d": 2.0 ** -52, "F": 2.0 ** -23, "D": 2.0 ** -52}
_RANK = {"b": 0, "u": 1, "i": 1, "f": 2, "c": 3}  # NumPy's same_kind casting order


# ------------------------------------------------------------------------------- helpers

def _atleast_1d(F, x):
    x = _arr(F, x)
    return F.reshape(x, (1,)) if len(x.shape) == 0 else x


def _check_1d(who, what, a, b):
    """Raise ``who``'s ValueError unless ``a`` and ``b`` (``what``) are both 1-D."""
    if len(a.shape) != 1 or len(b.shape) != 1:
        raise ValueError(f"{who}: {what} must be 1-D, got shapes {tuple(a.shape)} and "
                         f"{tuple(b.shape)}")


def _real_weights(F, weights, n, of, who):
    """``weights`` in float64 (NumPy sums weights in float64) after ``who``'s checks: real,
    one value per element of ``of`` (``n`` of them)."""
    w = _arr(F, weights)
    if tuple(w.shape) != (n,):
        raise ValueError(f"{who}: the weights and {of} don't have the same length "
                         f"({tuple(w.shape)} and {n})")
    if w.dtype.kind == "c":
        raise TypeError(f"{who}: weights must be real (NumPy sums them in float64)")
    return w if w.dtype == float64 else F.astype(w, float64)


def _tolist(x):
    """The values of ``x`` (not batched) as Python numbers. A backend that reads no values
    raises its ``unsupported`` (the ndgrad function is named by its public wrapper)."""
    x = _stop(x)
    B = x.backend if isinstance(x, Tensor) else backend_of(x)
    if not B.reads_values or not hasattr(x, "tolist"):
        raise B.unsupported("", why="its result's shape or dtype depends on the values of "
                                      "its input, which are not computed (Note [Values that "
                                      "decide a shape] in ndgrad/numpy/polynomials.py)")
    return x.tolist()


def _ndim(v):
    if hasattr(v, "shape"):
        return len(v.shape)
    if isinstance(v, (list, tuple)):
        return 1 + (_ndim(v[0]) if len(v) else 0)
    return 0


def _conj(F, x):
    return F.conj(x) if x.dtype.kind == "c" else x


def _floating(F, x):
    """``x`` with integer and boolean dtypes made float64 (NumPy's ``x + 0.0``)."""
    return F.astype(x, float64) if x.dtype.kind in "biu" else x


def _count_le(F, edges, v):
    """How many of the sorted 1-D ``edges`` are ``<= v``, for each element of ``v``: NumPy's
    ``searchsorted(edges, v, side="right")``, int64 of ``v``'s shape (Note [Binning is a
    sort]). In one stable sort of the edges followed by the values, an edge equal to a value
    comes first; a value's position there, less its rank among the values, counts the edges
    before it."""
    edges, v = _stop(edges), _stop(v)
    flat = F.reshape(v, (-1,))
    both = F.concat([edges, flat], axis=0)
    pos = F.argsort(F.argsort(both, stable=True), stable=True)  # inverse permutations
    rank = F.argsort(F.argsort(flat, stable=True), stable=True)
    return F.reshape(pos[edges.shape[0]:] - rank, tuple(v.shape))


_ANYC = Domain((-2.0, 2.0), complex=True)
_ANY = Domain((-2.0, 2.0))
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
