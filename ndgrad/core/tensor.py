"""The Tensor: a backend array and its autograd metadata.

A Tensor wraps one backend array (``_data``). Its autograd state is ``requires_grad``,
``grad_fn`` (the Node that made it, None for leaves), ``grad`` and a version counter shared
with its views; rarely used state (hooks, view links, transform data) lives in an optional
``_meta``. This module knows nothing of operations: the ops layer (``ndgrad.core.ops``)
attaches the operators and the op methods (``x + y``, ``x.exp()``, ``x[i]``, ``.backward()``),
so the layers of the core import downwards only (Note [Layers] in docs/how_it_works.rst).

A transform level (``vmap``, ``func.grad``) represents its values by subclasses of Tensor
that wrap the value one level down (``_value``) and name their level (``_level``); the few
methods below that the graph and the engine call on any tensor (``_counter``,
``_saved_content``, ``_lower_for``, ...) are overridden there (Note [Levels] in
core/levels.py).
"""

from __future__ import annotations

import warnings
import weakref

import numpy as _np

from .backend import (_BACKEND_BY_TYPE, NUMPY, _placed, as_dtype, backend_of,
                      default_complex_dtype, find_backend, get_default_dtype,
                      is_differentiable_dtype, is_floating)
from . import levels
from .grad_mode import INFERENCE_BLOCKS, STATE

__all__ = ["Tensor", "VersionCounter", "level_data", "set_level_data", "drop_level_data",
           "host_array", "owning_level", "innermost_level"]


class VersionCounter:
    """Shared by a tensor and its views; bumped by every in-place operation
    (Note [Saved tensors and versions] in core/saved.py). ``where``, set by an in-place
    write only: where the user's code made it (Note [Where a tensor was modified in place]
    in core/inplace.py)."""

    __slots__ = ("value", "where")

    def __init__(self):
        self.value = 0


class _Meta:
    """Rarely used per-tensor state, allocated on demand (keeps ``_new`` cheap)."""

    __slots__ = ("hooks", "retains_grad", "inference", "retain_handle", "base", "accumulator",
                 "level_data", "view_fn", "view_of", "views", "made_without_grad", "refresh")

    def __init__(self):
        self.hooks = None
        self.retains_grad = False
        self.inference = False
        self.retain_handle = None
        self.base = None          # the tensor this one is a view of
        self.accumulator = None   # weakref to the leaf's AccumulateGrad node
        self.level_data = None    # {Level: data}: what a transform level keeps per tensor
        self.view_fn = None       # base's grad_fn the view's history derives from
        self.view_of = None       # (parent, op, extra, params, k): how the view was made
        self.views = None         # weakrefs to views made while this base required no grad
        self.made_without_grad = False  # a view made under no_grad of a base requiring grad
        self.refresh = None       # regenerates a stale view's history (set by core.views)


_object_new = object.__new__


def _new(data, requires_grad, cls=None):
    """Wrap a raw array (hot path: no validation); with ``cls``, a blank instance of a
    transform's Tensor subclass, whose own fields the caller sets."""
    t = _object_new(cls or Tensor)
    t._data = data
    t._requires_grad = requires_grad
    t._grad_fn = None
    t._output_nr = 0
    t._grad = None
    t._vcounter = None
    t._meta = None
    return t


def _wrap_raw(data):
    """Wrap a raw result that may be a NumPy scalar (ops on 0-d arrays return those)."""
    if type(data) not in _BACKEND_BY_TYPE:
        data = backend_of(data).asarray(data)
    return _new(data, False)


def _as_tensor(g):
    """``g`` as a Tensor: itself, or a raw array (a gradient from a first-order rule) wrapped."""
    return g if isinstance(g, Tensor) else _wrap_raw(g)


def _mark_inference(t):
    m = t._meta = _Meta()
    m.inference = True


def _meta(t):
    m = t._meta
    if m is None:
        m = t._meta = _Meta()
    return m


# ------------------------------------------------------------------ transform levels' data
# A transform level that keeps data on plain tensors (forward mode's tangents, Taylor mode's
# series, the Forward Laplacian's gradient batches) keeps it in ``_meta.level_data[level]``
# through these three: ``holders`` (the level's own list) remembers the tensors weakly, so
# that leaving the level drops its data from every one of them.
def level_data(t, lv):
    """``t``'s data for transform level ``lv``, or None (also for a non-Tensor)."""
    if not isinstance(t, Tensor):
        return None
    m = t._meta
    if m is None or not m.level_data:
        return None
    return m.level_data.get(lv)


def set_level_data(t, lv, value, holders):
    """Give ``t`` the data ``value`` for level ``lv``, remembering ``t`` in ``holders``."""
    m = _meta(t)
    if m.level_data is None:
        m.level_data = {}
    m.level_data[lv] = value
    n = len(holders)
    if n >= 64 and n & (n - 1) == 0:  # prune dead references at powers of two
        holders[:] = [r for r in holders if r() is not None]
    holders.append(weakref.ref(t))


def host_array(x):
    """``x`` (a Tensor on any device, an array or a number) as a NumPy array on the host,
    detached: what code handing values to SciPy reads."""
    if isinstance(x, Tensor):
        x = x.detach().cpu().numpy()
    return _np.asarray(x)


def drop_level_data(lv, holders):
    """Remove level ``lv``'s data from every tensor in ``holders`` (the level is over)."""
    for r in holders:
        t = r()
        if t is not None and t._meta is not None and t._meta.level_data:
            t._meta.level_data.pop(lv, None)


def owning_level(args, params=None):
    """The deepest visible transform level that one of ``args`` (or a tensor in ``params``)
    belongs to, or None: the level whose interpreter runs an op on them (Note [Levels] in
    core/levels.py)."""
    best = _level_in(args, -1)
    if params:
        lv = _level_in(params, -1 if best is None else best.depth)
        if lv is not None:
            best = lv
    return best


def innermost_level(values, params=None):
    """The deepest visible transform level among ``values`` (and ``params``), or None."""
    if not levels.VISIBLE[0]:
        return None
    return owning_level(values, params)


def _level_in(x, depth):
    """The deepest visible level deeper than ``depth`` among the values of sequence or dict
    ``x`` (nested ones too)."""
    best = None
    for v in (x.values() if type(x) is dict else x):
        if isinstance(v, Tensor):
            lv = _level_of(v, depth)
        elif type(v) in (list, tuple, dict):
            lv = _level_in(v, depth)
        else:
            continue
        if lv is not None:
            best, depth = lv, lv.depth
    return best


def _level_of(t, depth):
    """The deepest visible level deeper than ``depth`` that tensor ``t`` belongs to: its own
    (a transform's Tensor subclass), one it carries data for, or one its view base does."""
    best = None
    lv = t._level
    if lv is not None and lv.alive and not lv.hidden and lv.depth > depth:
        best, depth = lv, lv.depth
    m = t._meta
    if m is not None:
        for data in (m.level_data, m.base._meta.level_data if m.base is not None and
                     m.base._meta is not None else None):
            if data:
                for lv in data:
                    if lv.alive and not lv.hidden and lv.depth > depth:
                        best, depth = lv, lv.depth
    return best


def _fresh(t):
    """Regenerate a stale view's history where it is read (Note [In-place on views] in
    core/views.py): one comparison for tensors that have a ``_meta``."""
    m = t._meta
    base = m.base
    if base is not None and base._grad_fn is not m.view_fn:
        m.refresh(t)


def is_live(t, grad_on):
    """Whether a formula must read tensor ``t`` as a Tensor rather than its raw array: it
    carries a transform level's data, or it requires grad while the computation records
    (Note [Formulas on arrays or on Tensors] in core/engine.py)."""
    m = t._meta
    return (m is not None and bool(m.level_data)) or (grad_on and t._requires_grad)


# ------------------------------------------------------------------ making tensors from data
def finish(data, requires_grad, lift=True):
    """A new leaf tensor around the raw array ``data`` (an inference tensor inside
    ``inference_mode``); ``requires_grad`` is checked against the dtype. Made while a
    transform level is visible, it is a value of that level (``levels.lift_created``: a
    tensor made inside ``func.grad(f)`` can be written in place with the level's values),
    unless ``lift`` is False (an internal constant, cached across calls)."""
    t = _new(data, False)
    if requires_grad:
        t.requires_grad_(True)
    if INFERENCE_BLOCKS[0] and STATE.inference:
        _mark_inference(t)
    if lift and levels.VISIBLE[0] and not requires_grad:
        t = levels.lift_created(t)
    return t


def _default_float(arr):
    """Python floats (and complexes) follow the default dtype."""
    d = get_default_dtype()
    if is_floating(arr.dtype) and arr.dtype != d:
        return arr.astype(d)
    if arr.dtype.kind == "c" and arr.dtype != default_complex_dtype():
        return arr.astype(default_complex_dtype())
    return arr


def as_data(data, dtype, device, copy):
    """The raw array for ``tensor(data, ...)`` / ``asarray(data, ...)`` (array-API ``copy``)."""
    dtype = as_dtype(dtype)
    if isinstance(data, Tensor):
        data = data._data
        if device is None:
            device = backend_of(data).device_of(data)
    elif isinstance(data, (list, tuple)) and any(isinstance(e, Tensor) for e in _flat(data)):
        data = _nested_to_lists(data)
    if type(data) not in _BACKEND_BY_TYPE:
        find_backend(type(data))  # a plug-in's array: its backend (Note [Backend plug-ins])
    if device is None and type(data) in _BACKEND_BY_TYPE and type(data) is not _NDARRAY:
        B = _BACKEND_BY_TYPE[type(data)]  # a device array (CuPy) stays on its device
    else:
        B, device = _placed(device)
    native = type(data) is B.array_type
    if copy is False and dtype is not None and getattr(data, "dtype", dtype) != dtype:
        raise ValueError(f"asarray(copy=False): converting {data.dtype} to {dtype} needs a "
                         "copy; pass copy=None to copy only when needed")
    if native or hasattr(data, "__array__") or hasattr(data, "__array_interface__"):
        if not native and type(data) in _BACKEND_BY_TYPE and type(data) is not _NDARRAY:
            data = backend_of(data).to_numpy(data)  # another device's array: via the host
        arr = B.asarray(data, dtype=dtype, device=device, copy=copy)
    else:
        arr = B.asarray(data, dtype=dtype, device=device, copy=True)
        if dtype is None:
            arr = _default_float(arr)
    if arr.dtype == object:
        raise TypeError("could not convert the data to a numeric tensor (got an object array); "
                        "pass numbers, nested sequences of numbers, or arrays")
    return arr


def _flat(seq):
    for e in seq:
        if isinstance(e, (list, tuple)):
            yield from _flat(e)
        else:
            yield e


def _nested_to_lists(seq):
    return [_nested_to_lists(e) if isinstance(e, (list, tuple)) else
            (e.detach().tolist() if isinstance(e, Tensor) else e) for e in seq]


_NDARRAY = NUMPY.array_type


def _raise_not_host(t, what):
    raise TypeError(
        f"can't convert a {t.device} tensor to NumPy with {what}: its data is in GPU memory. "
        "Use .cpu() to copy the tensor to host memory first (e.g. t.cpu().numpy()).")


def _rebuild(host, device, requires_grad, grad):
    """Unpickle a tensor (Tensor.__reduce_ex__)."""
    t = finish(as_data(host, host.dtype, device, copy=None), False)
    t._requires_grad = requires_grad
    t._grad = grad
    return t


class ShapeMetadata:
    """``ndim`` and ``size`` from ``shape``, for what stands for an array without one
    (a wrapper level's value, an unsaved input's stand-in)."""

    __slots__ = ()

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        n = 1
        for s in self.shape:
            n *= s
        return n


class Tensor:
    """An n-dimensional array that records operations for automatic differentiation.

    Make tensors with :func:`ndgrad.tensor` and the other creation functions.

    Examples
    --------
    >>> import ndgrad
    >>> x = ndgrad.tensor([1.0, 2.0, 3.0], requires_grad=True)
    >>> y = (x ** 2).sum()
    >>> y.backward()
    >>> x.grad
    tensor([2., 4., 6.])
    """

    __slots__ = ("_data", "_requires_grad", "_grad_fn", "_output_nr", "_grad", "_vcounter",
                 "_meta", "__weakref__")

    # NumPy's ufuncs and functions run ndgrad's (ndgrad/numpy/protocols.py attaches
    # __array_ufunc__ and __array_function__); np_array + tensor is then np.add's, a Tensor.
    __array_priority__ = 1000

    # A plain tensor belongs to no transform level (Note [Levels] in core/levels.py), and its
    # values can be read (a batch's cannot: ops.batching.is_batched).
    _level = None
    _batched = False

    def __new__(cls, data=None, *, dtype=None, device=None, requires_grad=False):
        return finish(as_data([] if data is None else data, dtype, device, copy=True),
                      requires_grad)

    # ------------------------------------------------------------------ array attributes
    @property
    def shape(self):
        """The shape, a tuple of ints."""
        return self._data.shape

    @property
    def dtype(self):
        """The dtype (``ndgrad.float64``, ...); compares equal to NumPy dtypes."""
        return self._data.dtype

    @property
    def device(self):
        """The device the data lives on (``device('cpu')``)."""
        return _BACKEND_BY_TYPE[type(self._data)].device_of(self._data)

    @property
    def ndim(self):
        return self._data.ndim

    @property
    def size(self):
        return self._data.size

    @property
    def itemsize(self):
        """Bytes per element."""
        return self.dtype.itemsize

    @property
    def nbytes(self):
        """Bytes of the elements (``size * itemsize``), as NumPy's and PyTorch's."""
        return self.size * self.dtype.itemsize

    def dim(self):
        """Number of dimensions (PyTorch spelling of ``ndim``)."""
        return self.ndim

    def numel(self):
        """Number of elements (PyTorch spelling of ``size``)."""
        return self.size

    def __len__(self):
        if self.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    def __iter__(self):
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self.shape[0]))

    @property
    def backend(self):
        return _BACKEND_BY_TYPE[type(self._data)]

    def is_complex(self):
        return self.dtype.kind == "c"

    def is_floating_point(self):
        return is_floating(self.dtype)

    # ------------------------------------------------------------------ autograd state
    @property
    def requires_grad(self):
        """Whether gradients are computed for this tensor. Settable on leaves."""
        if self._meta is not None:
            _fresh(self)
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value):
        self.requires_grad_(value)

    def requires_grad_(self, requires_grad=True):
        """Set ``requires_grad`` on a leaf, in place; returns self.

        Examples
        --------
        >>> import ndgrad
        >>> w = ndgrad.zeros(3).requires_grad_()
        >>> w.requires_grad
        True
        """
        requires_grad = bool(requires_grad)
        if self._grad_fn is not None:
            if not requires_grad:
                raise RuntimeError(
                    "you can only change requires_grad flags of leaf variables. If you want to "
                    "use a computed variable in a subgraph that doesn't require differentiation "
                    "use var_no_grad = var.detach()."
                )
            return self
        if requires_grad and not is_differentiable_dtype(self.dtype):
            raise RuntimeError(
                f"only Tensors of floating point and complex dtype can require gradients; this "
                f"tensor has dtype {self.dtype}. Convert it first, e.g. "
                "`t.astype(ndgrad.float64).requires_grad_()`."
            )
        self._requires_grad = requires_grad
        return self

    @property
    def grad_fn(self):
        """The Node that created this tensor (None for leaves).

        For a view whose base was modified in place since, the view's history is first
        derived again from the base's (Note [In-place on views] in core/views.py)."""
        if self._meta is not None:
            _fresh(self)
        return self._grad_fn

    @property
    def is_leaf(self):
        """True for tensors not made by a recorded operation."""
        if self._meta is not None:
            _fresh(self)
        return self._grad_fn is None

    @property
    def output_nr(self):
        return self._output_nr

    @property
    def grad(self):
        """The accumulated gradient (a Tensor or None); settable, also to None."""
        if self._grad_fn is not None and self._grad is None and not (
                self._meta is not None and self._meta.retains_grad):
            warnings.warn(
                "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. "
                "Its .grad attribute won't be populated during autograd.backward(). If you "
                "indeed want the gradient for a non-leaf Tensor, use .retain_grad() on the "
                "non-leaf Tensor.", UserWarning, stacklevel=2)
        return self._grad

    @grad.setter
    def grad(self, value):
        if value is None:
            self._grad = None
            return
        if not isinstance(value, Tensor):
            raise TypeError("assigned grad expected to be a Tensor or None, got "
                            f"{type(value).__name__}")
        if value.shape != self.shape:
            raise RuntimeError(f"assigned grad has shape {list(value.shape)}, but the tensor has "
                               f"shape {list(self.shape)}; they must match")
        if value.dtype != self.dtype:
            raise RuntimeError(f"assigned grad has dtype {value.dtype}, but the tensor has dtype "
                               f"{self.dtype}; they must match (use .astype())")
        if value.device != self.device:
            raise RuntimeError(f"assigned grad is on {value.device}, but the tensor is on "
                               f"{self.device}; they must match (use .to())")
        self._grad = value

    @property
    def retains_grad(self):
        return self._meta is not None and self._meta.retains_grad

    @property
    def is_inference(self):
        return self._meta is not None and self._meta.inference

    @property
    def data(self):
        """A detached alias of this tensor: shares storage and the version counter.

        Unlike PyTorch's ``.data``, in-place changes made through it are still seen by the
        "modified by an inplace operation" check: a saved value changed behind autograd's back
        is an error, never a silently wrong gradient. (Parameter updates such as
        ``p.data -= lr * p.grad`` after backward are unaffected.)
        """
        return self.detach()

    @data.setter
    def data(self, value):
        if not isinstance(value, Tensor):
            raise TypeError(f".data must be set to a Tensor, got {type(value).__name__}")
        self._data = value._data

    def detach(self):
        """A new tensor sharing storage with this one, cut from the graph.

        Examples
        --------
        >>> import ndgrad
        >>> x = ndgrad.tensor([1.0], requires_grad=True)
        >>> (x * 2).detach().requires_grad
        False
        """
        t = _new(self._data, False)
        t._vcounter = self._counter()
        m = self._meta
        if m is not None and m.level_data:  # (a level may keep its data: compile's tracer)
            for lv, d in list(m.level_data.items()):
                if lv.interpreter.keeps_data_detached:
                    set_level_data(t, lv, d, lv.info.holders)
        return t

    def detach_(self):
        """Detach this tensor from the graph in place (it becomes a leaf)."""
        if self._meta is not None and self._meta.base is not None:
            raise RuntimeError("detach_() is not allowed on a view; use detach() instead")
        self._grad_fn = None
        self._output_nr = 0
        self._requires_grad = False
        return self

    # ------------------------------------------------------------------ what the graph calls
    @property
    def _version(self):
        """How many times this tensor's memory was changed in place (shared with its views),
        as PyTorch's ``t._version``."""
        c = self._vcounter
        return 0 if c is None else c.value

    def _counter(self):
        """The version counter (made on first use), shared with views and aliases."""
        c = self._vcounter
        if c is None:
            c = self._vcounter = VersionCounter()
        return c

    def _saved_content(self):
        """What a node keeps of this tensor when it saves it as an output: the raw array
        (keeping the Tensor itself would make a cycle Node -> Tensor -> Node)."""
        return self._data

    @classmethod
    def _from_saved(cls, content, level):
        """The tensor rebuilt around saved content (:meth:`_saved_content`)."""
        return _new(content, False)

    def _lower_for(self, level):
        """This value as the graph of ``level`` sees it one level down (a plain tensor is
        its own value at every level)."""
        return self

    def _autograd_level(self):
        """The transform level whose graph this tensor's ``grad_fn`` belongs to (None: the
        graph of plain tensors)."""
        return None

    def _alive(self):
        """This tensor as an operation may use it now (a value of an exited transform level
        is its value one level down)."""
        return self

    def _shares_memory(self, other):
        """Whether ``other`` may view this tensor's memory (views are linked when so)."""
        d = other._data if type(other) is Tensor else None
        return d is not None and _BACKEND_BY_TYPE[type(self._data)].may_share_memory(
            self._data, d)

    def _stand_in(self, copy):
        """A tensor with this tensor's value (a copy of it when ``copy``) and its current
        history, to record functional ops on (the in-place protocol, core/dispatch.py)."""
        s = _new(self._data.copy() if copy else self._data, self._requires_grad)
        s._grad_fn = self._grad_fn
        s._output_nr = self._output_nr
        return s

    def _gradient_for_plain_tensor_message(self, t):
        """What to say when this gradient (a transform's value) would go into the ``.grad``
        of plain tensor ``t``."""
        return (f"backward() computed a gradient that is a value of a function transform for a "
                f"tensor outside it (shape {list(t.shape)}); its .grad cannot hold it. Use "
                "ndgrad.autograd.grad or the transform's own gradient (ndgrad.func.grad).")

    # ------------------------------------------------------------------ conversion
    def numpy(self):
        """The data as a NumPy array (shares memory). Errors while the tensor requires grad.

        Examples
        --------
        >>> import ndgrad
        >>> ndgrad.tensor([1.0, 2.0]).numpy()
        array([1., 2.])
        """
        if self._meta is not None and self._meta.level_data:
            _converting(self, "numpy()")
        if self._requires_grad:
            raise RuntimeError(
                "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() "
                "instead."
            )
        if type(self._data) is not _NDARRAY:
            _raise_not_host(self, "numpy()")
        return self._data

    def __array__(self, dtype=None, copy=None):
        if self._meta is not None and self._meta.level_data:
            _converting(self, "np.asarray()")
        if self._requires_grad:
            raise RuntimeError(
                "Can't convert a Tensor that requires grad to a NumPy array. Use "
                "np.asarray(tensor.detach()) instead."
            )
        if type(self._data) is not _NDARRAY:
            _raise_not_host(self, "np.asarray()")
        arr = self._data
        if dtype is not None and arr.dtype != dtype:
            return arr.astype(dtype)
        return arr.copy() if copy else arr

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """Share the data through DLPack (``np.from_dlpack(t)``, ``cupy.from_dlpack(t)``),
        with the array API's signature (2023.12): ``stream`` for a device's stream,
        ``max_version`` the consumer's DLPack version, ``dl_device`` the device the capsule
        must be on, ``copy`` True (always copy), False (never) or None (only if needed),
        each passed on to the array library. Like ``numpy()``, refused while the tensor
        requires grad; a transform's value (inside ``func.grad``) exports its value one
        level down, as ``numpy()`` reads it (vmap's batched tensors refuse: no single
        array)."""
        if self._requires_grad:
            raise RuntimeError("Can't export a Tensor that requires grad through DLPack; use "
                               "tensor.detach() first.")
        kwargs = {}
        for key, value in (("stream", stream), ("max_version", max_version),
                           ("dl_device", dl_device), ("copy", copy)):
            if value is not None:
                kwargs[key] = value
        if type(self) is not Tensor:  # (a transform's value: its value one level down)
            return self._value.detach().__dlpack__(**kwargs)
        return self._data.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        if type(self) is not Tensor:
            return self._value.__dlpack_device__()
        return self._data.__dlpack_device__()

    @property
    def __cuda_array_interface__(self):
        """CUDA tensors share their memory with CuPy, Numba, ... (``cupy.asarray(t)``);
        CPU tensors have no such interface."""
        if type(self._data) is _NDARRAY:
            raise AttributeError("a CPU tensor has no __cuda_array_interface__")
        if self._requires_grad:
            raise RuntimeError("Can't export a Tensor that requires grad through "
                               "__cuda_array_interface__; use tensor.detach() first.")
        return self._data.__cuda_array_interface__

    def item(self):
        """The value of a one-element tensor as a Python scalar."""
        if self._meta is not None and self._meta.level_data:
            _converting(self, "a Python scalar (item(), float(), int(), bool(), an index)")
        if self._data.size != 1:
            raise RuntimeError(f"a Tensor with {self._data.size} elements cannot be converted "
                               "to Scalar; item() needs exactly one element")
        d = self._data
        if type(d) is not _NDARRAY:
            d = _BACKEND_BY_TYPE[type(d)].to_numpy(d)  # (a graph's value: computed here)
        return d.item()

    def tolist(self):
        """The data as (nested) Python lists."""
        if self._meta is not None and self._meta.level_data:
            _converting(self, "tolist()")
        return self._data.tolist()

    def __float__(self):
        return float(self.item())

    def __int__(self):
        return int(self.item())

    def __complex__(self):
        return complex(self.item())

    def __index__(self):
        if self.dtype.kind not in "iu" or self.size != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    def __bool__(self):
        if self.size != 1:
            raise RuntimeError(f"Boolean value of Tensor with {self.size} values is "
                               "ambiguous; use .any() or .all()")
        return bool(self.item())

    def __format__(self, spec):
        """``f"{loss:.4f}"`` formats a 0-d tensor's value, as in PyTorch; other tensors take
        only the empty format (their repr)."""
        if not spec:
            return str(self)
        if self.ndim == 0:
            return format(self.item(), spec)
        raise TypeError(f"unsupported format string {spec!r} for a tensor of shape "
                        f"{list(self.shape)}: only 0-d tensors take a format spec (format "
                        "t.item() or t.tolist() instead)")

    def __repr__(self):
        B = _BACKEND_BY_TYPE[type(self._data)]
        if not B.reads_values:  # (a graph: never computed by a repr)
            body = B.summary(self._data)
        else:
            body = NUMPY.array2string(B.to_numpy(self._data), separator=", ",
                                      prefix="tensor(")
        extras = []
        if self._data.dtype not in (get_default_dtype(), _INT64, _BOOL,
                                    default_complex_dtype()) or self._data.size == 0:
            extras.append(f"dtype={self._data.dtype}")
        dev = self.device
        if dev != "cpu":
            extras.append(f"device='{dev}'")
        if self._grad_fn is not None:
            extras.append(f"grad_fn=<{self._grad_fn.name()}>")
        elif self._requires_grad:
            extras.append("requires_grad=True")
        return "tensor(" + body + "".join(", " + e for e in extras) + ")"

    __hash__ = object.__hash__

    # ------------------------------------------------------------------ pickling
    def __reduce_ex__(self, protocol):
        """Pickling (and ``copy.deepcopy``) keeps the data, the device, ``requires_grad``
        and a leaf's ``.grad``; the graph is not pickled, so a non-leaf that requires grad
        is refused (detach it first)."""
        if self._grad_fn is not None and self._requires_grad:
            raise RuntimeError(
                f"can't pickle a tensor that requires grad and has a history "
                f"(grad_fn=<{self._grad_fn.name()}>): the graph behind it cannot be saved. "
                "Pickle tensor.detach() (a leaf with the same data), or a leaf tensor.")
        host = _BACKEND_BY_TYPE[type(self._data)].to_numpy(self._data)
        if host is self._data:
            host = host.copy() if not host.flags.writeable else host
        return (_rebuild, (host, str(self.device), self._requires_grad, self._grad))


_INT64 = NUMPY.dtype("int64")
_BOOL = NUMPY.dtype("bool")


def _converting(t, what):
    """Before ``t``'s value is read as a Python or NumPy value: each level whose data ``t``
    carries may refuse it (``Interpreter.refuse_conversion``: compile's tracer does)."""
    for lv in list(t._meta.level_data):
        lv.interpreter.refuse_conversion(lv, t, what)
