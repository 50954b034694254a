"""The Tensor: a backend array plus autograd metadata, operators and methods.

A Tensor wraps one backend array (``_data``). Its autograd state is ``requires_grad``,
``grad_fn`` (the Node that made it, None for leaves), ``grad`` and a version counter shared
with its views. Op methods (``x.exp()``, ``x.sum(axis=1)``) are attached from the op registry
by :mod:`ndgrad.core.ops`; the operators below route to the same ops.
"""

from __future__ import annotations

import warnings

from .backend import (_BACKEND_BY_TYPE, NUMPY, Device, as_dtype, backend_of,
                      default_complex_dtype, get_default_dtype, is_differentiable_dtype,
                      is_floating)
from .grad_mode import STATE
from . import graph as _graph
from .graph import VersionCounter

__all__ = ["Tensor"]


class _Meta:
    """Rarely used per-tensor state, allocated on demand (keeps ``_new`` cheap)."""

    __slots__ = ("hooks", "retains_grad", "inference", "retain_handle", "base", "accumulator",
                 "tangents", "view_fn", "view_of", "views", "made_without_grad")

    def __init__(self):
        self.hooks = None
        self.retains_grad = False
        self.inference = False
        self.retain_handle = None
        self.base = None          # the tensor this one is a view of
        self.accumulator = None   # weakref to the leaf's AccumulateGrad node
        self.tangents = None      # forward-mode tangents, per dual level
        self.view_fn = None       # base's grad_fn the view's history derives from
        self.view_of = None       # (parent, op, extra, params, k): how the view was made
        self.views = None         # weakrefs to views made while this base required no grad
        self.made_without_grad = False  # a view made under no_grad of a base requiring grad


_object_new = object.__new__


def _new(data, requires_grad):
    """Wrap a raw array (hot path: no validation)."""
    t = _object_new(Tensor)
    t._data = data
    t._requires_grad = requires_grad
    t._grad_fn = None
    t._output_nr = 0
    t._grad = None
    t._version = None
    t._meta = None
    return t


def _wrap_raw(data):
    """Wrap a raw result that may be a NumPy scalar (ops on 0-d arrays return those)."""
    if type(data) not in _BACKEND_BY_TYPE:
        data = backend_of(data).asarray(data)
    return _new(data, False)


def _mark_inference(t):
    m = t._meta = _Meta()
    m.inference = True


def _meta(t):
    m = t._meta
    if m is None:
        m = t._meta = _Meta()
    return m


def _fresh_view(t):
    """Regenerate a stale view's history (set by core.dispatch: _check_view_history)."""
    m = t._meta
    if m.base is not None and m.base._grad_fn is not m.view_fn:
        _VIEW_CHECK[0](t)


_VIEW_CHECK = [None]


# Note [Mixing devices]
# ~~~~~~~~~~~~~~~~~~~~~
# The inputs of one op must be on one device. dispatch.apply notices a mix when an input's
# array type is not the backend's (one comparison, made anyway) and calls `same_device`, which
# either raises a RuntimeError naming both devices, or, as PyTorch does, moves 0-d CPU
# inputs (0-d CPU tensors and NumPy 0-d arrays: scalars, such as those ops on Python numbers
# give inside formulas) to the device of the others, through the differentiable `to_device`
# op, so their gradient goes back to the CPU. Python scalars never count.
def same_device(op, args):
    """``args`` with 0-d CPU inputs moved to the device of the others (Note [Mixing
    devices]); a RuntimeError naming both devices when tensors of two devices meet."""
    target = None
    for a in args:
        d = a._data if type(a) is Tensor else a
        if type(d) in _BACKEND_BY_TYPE and not (type(d) is _NDARRAY and d.ndim == 0):
            dev = _BACKEND_BY_TYPE[type(d)].device_of(d)
            if target is None:
                target = dev
            elif dev != target:
                _raise_mixed(op, target, dev)
    if target is None:
        return args
    out = []
    for a in args:
        d = a._data if type(a) is Tensor else a
        if type(d) is _NDARRAY and target.type != "cpu":
            if d.ndim != 0:
                _raise_mixed(op, target, _CPU_DEVICE)
            a = _ops().to_device(a if type(a) is Tensor else _new(d, False), target)
        out.append(a)
    return out


def _raise_mixed(op, a, b):
    raise RuntimeError(
        f"{getattr(op, 'name', op)}: expected all tensors to be on the same device, but found "
        f"at least two devices, {a} and {b}; move them with .to(device) (NumPy arrays count "
        "as cpu)"
    )


def _ops():
    from . import ops
    return ops


_NDARRAY = NUMPY.array_type
_CPU_DEVICE = Device("cpu")


def _raise_not_host(t, what):
    raise TypeError(
        f"can't convert a {t.device} tensor to NumPy with {what}: its data is in GPU memory. "
        "Use .cpu() to copy the tensor to host memory first (e.g. t.cpu().numpy()).")


def _is_device(a):
    """Whether ``a`` (a str or Device) names a device rather than a dtype."""
    if isinstance(a, Device):
        return True
    try:
        Device(a)
    except ValueError:
        return False
    return True


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

    __slots__ = ("_data", "_requires_grad", "_grad_fn", "_output_nr", "_grad", "_version",
                 "_meta", "__weakref__")

    # NumPy defers binary operators to us (np_array + tensor -> Tensor.__radd__).
    __array_ufunc__ = None
    __array_priority__ = 1000

    def __new__(cls, data=None, *, dtype=None, device=None, requires_grad=False):
        from .creation import tensor
        return tensor([] if data is None else data, dtype=dtype, device=device,
                      requires_grad=requires_grad)

    # Rarely set state lives in `_meta` (Note: keeps `_new`, run for every op, cheap).
    @property
    def _base(self):
        m = self._meta
        return None if m is None else m.base

    @_base.setter
    def _base(self, value):
        if value is not None or self._meta is not None:
            _meta(self).base = value

    @property
    def _accumulator(self):
        m = self._meta
        return None if m is None else m.accumulator

    @_accumulator.setter
    def _accumulator(self, value):
        _meta(self).accumulator = value

    @property
    def _tangents(self):
        m = self._meta
        return None if m is None else m.tangents

    @_tangents.setter
    def _tangents(self, value):
        if value is not None or self._meta is not None:
            _meta(self).tangents = value

    @classmethod
    def _wrap(cls, data):
        return _wrap_raw(data)

    @classmethod
    def _from_node(cls, data, node, output_nr):
        t = _new(data, True)
        t._grad_fn = node
        t._output_nr = output_nr
        return t

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

    def dim(self):
        """Number of dimensions (PyTorch spelling of ``ndim``)."""
        return self._data.ndim

    def numel(self):
        """Number of elements (PyTorch spelling of ``size``)."""
        return self._data.size

    def __len__(self):
        if self._data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    @property
    def T(self):
        """All dimensions reversed (NumPy's ``.T``)."""
        return _ops().permute_dims(self, tuple(range(self.ndim - 1, -1, -1)))

    @property
    def mT(self):
        """The last two dimensions swapped (a batch of matrix transposes)."""
        return _ops().matrix_transpose(self)

    @property
    def real(self):
        """The real part (NumPy's ``.real``): a differentiable view of a complex tensor."""
        return _ops().real(self)

    @property
    def imag(self):
        """The imaginary part (NumPy's ``.imag``; zeros for a real tensor), differentiable."""
        return _ops().imag(self)

    @property
    def backend(self):
        return _BACKEND_BY_TYPE[type(self._data)]

    # ------------------------------------------------------------------ autograd state
    @property
    def requires_grad(self):
        """Whether gradients are computed for this tensor. Settable on leaves."""
        if self._meta is not None:
            _fresh_view(self)
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
        if requires_grad and not is_differentiable_dtype(self._data.dtype):
            raise RuntimeError(
                f"only Tensors of floating point and complex dtype can require gradients; this "
                f"tensor has dtype {self._data.dtype}. Convert it first, e.g. "
                "`t.astype(ndgrad.float64).requires_grad_()`."
            )
        self._requires_grad = requires_grad
        return self

    @property
    def grad_fn(self):
        """The Node that created this tensor (None for leaves).

        For a view whose base was modified in place since, the view's history is first
        derived again from the base's (Note [In-place on views] in core/dispatch.py)."""
        if self._meta is not None:
            _fresh_view(self)
        return self._grad_fn

    @property
    def is_leaf(self):
        """True for tensors not made by a recorded operation."""
        if self._meta is not None:
            _fresh_view(self)
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
        c = self._version
        if c is None:
            c = self._version = VersionCounter()
        t._version = c
        return t

    def detach_(self):
        """Detach this tensor from the graph in place (it becomes a leaf)."""
        if self._base is not None:
            raise RuntimeError("detach_() is not allowed on a view; use detach() instead")
        self._grad_fn = None
        self._output_nr = 0
        self._requires_grad = False
        return self

    def retain_grad(self):
        """Populate ``.grad`` for this non-leaf tensor during backward.

        Examples
        --------
        >>> import ndgrad
        >>> x = ndgrad.tensor([1.0, 2.0], requires_grad=True)
        >>> y = x * 3
        >>> y.retain_grad()
        >>> y.sum().backward()
        >>> y.grad
        tensor([1., 1.])
        """
        if not self._requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        if self._grad_fn is None:
            return  # leaves keep their grad anyway
        m = _meta(self)
        if m.retains_grad:
            return
        m.retains_grad = True
        import weakref
        ref = weakref.ref(self)

        def _retain(grad):
            t = ref()
            if t is not None:
                from .engine import accumulate_into
                accumulate_into(t, grad, STATE.grad_enabled)
            return None
        _retain._is_retain = True
        m.retain_handle = self._grad_fn._add_tensor_hook(self._output_nr, _retain)

    @property
    def retains_grad(self):
        return self._meta is not None and self._meta.retains_grad

    def register_hook(self, hook):
        """Register ``hook(grad) -> Tensor or None``, called with this tensor's gradient.

        A returned tensor replaces the gradient. Returns a handle with ``remove()``.

        Examples
        --------
        >>> import ndgrad
        >>> x = ndgrad.tensor([1.0, 2.0], requires_grad=True)
        >>> h = x.register_hook(lambda g: g * 10)
        >>> (x * x).sum().backward()
        >>> x.grad
        tensor([20., 40.])
        >>> h.remove()
        """
        if not self._requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self._grad_fn is not None:
            return self._grad_fn._add_tensor_hook(self._output_nr, hook)
        m = _meta(self)
        if m.hooks is None:
            m.hooks = {}
        from .graph import _add_hook
        return _add_hook(m.hooks, hook)

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        """Accumulate the gradient of this tensor into the leaves' ``.grad``.

        See :func:`ndgrad.autograd.backward`.

        Examples
        --------
        >>> import ndgrad
        >>> x = ndgrad.tensor(3.0, requires_grad=True)
        >>> (x ** 3).backward()
        >>> x.grad
        tensor(27.)
        """
        from .engine import backward
        backward((self,), None if gradient is None else (gradient,), retain_graph,
                 create_graph, inputs=inputs)

    # ------------------------------------------------------------------ conversion
    def numpy(self):
        """The data as a NumPy array (shares memory). Errors while the tensor requires grad.

        Examples
        --------
        >>> import ndgrad
        >>> ndgrad.tensor([1.0, 2.0]).numpy()
        array([1., 2.])
        """
        if self._requires_grad:
            raise RuntimeError(
                "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() "
                "instead."
            )
        if type(self._data) is not _NDARRAY:
            _raise_not_host(self, "numpy()")
        return self._data

    def __array__(self, dtype=None, copy=None):
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

    def __dlpack__(self, *args, **kwargs):
        """Share the data through DLPack (``np.from_dlpack(t)``, ``cupy.from_dlpack(t)``);
        like ``numpy()``, refused while the tensor requires grad."""
        if self._requires_grad:
            raise RuntimeError("Can't export a Tensor that requires grad through DLPack; use "
                               "tensor.detach() first.")
        return self._data.__dlpack__(*args, **kwargs)

    def __dlpack_device__(self):
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
        if self._data.size != 1:
            raise RuntimeError(f"a Tensor with {self._data.size} elements cannot be converted "
                               "to Scalar; item() needs exactly one element")
        return self._data.item()

    def tolist(self):
        """The data as (nested) Python lists."""
        return self._data.tolist()

    def __float__(self):
        return float(self.item())

    def __int__(self):
        return int(self.item())

    def __complex__(self):
        return complex(self.item())

    def __index__(self):
        if self._data.dtype.kind not in "iu" or self._data.size != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self._data.item())

    def __bool__(self):
        if self._data.size != 1:
            raise RuntimeError(f"Boolean value of Tensor with {self._data.size} values is "
                               "ambiguous; use .any() or .all()")
        return bool(self._data.item())

    def __iter__(self):
        if self._data.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self._data.shape[0]))

    def __repr__(self):
        B = _BACKEND_BY_TYPE[type(self._data)]
        arr = B.to_numpy(self._data)
        import numpy as _np  # only for printing
        body = _np.array2string(arr, separator=", ", prefix="tensor(")
        extras = []
        if self._data.dtype not in (get_default_dtype(), _np.dtype("int64"), _np.dtype("bool"),
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

    # ------------------------------------------------------------------ misc methods
    def clone(self):
        """A copy with its own storage; differentiable (gradient flows back to self)."""
        return _ops().clone(self)

    def astype(self, dtype):
        """Cast to ``dtype``; differentiable between floating/complex dtypes."""
        return _ops().astype(self, as_dtype(dtype))

    def type_as(self, other):
        return self.astype(other.dtype)

    def to(self, *args, device=None, dtype=None, copy=False):
        """This tensor on ``device`` and/or with ``dtype`` (PyTorch's forms: ``to(dtype)``,
        ``to(device)``, ``to(device, dtype)``, ``to(other_tensor)``, keywords).

        Returns ``self`` when nothing changes (unless ``copy=True``); a cast is differentiable
        between floating and complex dtypes (:meth:`astype`). A device that is not available
        (``"cuda"`` without CuPy and a GPU) is an error that says how to get one.

        Examples
        --------
        >>> import ndgrad
        >>> x = ndgrad.tensor([1.0, 2.0])
        >>> x.to(ndgrad.float32).dtype
        dtype('float32')
        >>> x.to("cpu") is x
        True
        """
        for a in args:
            if isinstance(a, Tensor):
                device = a.device if device is None else device
                dtype = a.dtype if dtype is None else dtype
            elif isinstance(a, (str, Device)) and _is_device(a):
                if device is not None:
                    raise TypeError("to() got the device twice")
                device = a
            elif a is not None:
                if dtype is not None:
                    raise TypeError("to() got the dtype twice")
                if isinstance(a, str):
                    try:
                        as_dtype(a)
                    except TypeError:
                        raise TypeError(f"to(): {a!r} is neither a device ('cpu', 'cuda', "
                                        "'cuda:N') nor a dtype ('float32', ...)") from None
                dtype = a
        out = self
        if dtype is not None and as_dtype(dtype) != out.dtype:
            out = out.astype(dtype)
        if device is not None and Device(device) != self.device:
            out = _ops().to_device(out, device)  # (an unavailable device: says how to get it)
        if copy and out is self:
            out = self.clone()
        return out

    def cpu(self):
        """This tensor on the CPU (``self`` when it is there already)."""
        return self.to("cpu")

    def cuda(self, device=None):
        """This tensor on CUDA device ``device`` (an index or ``"cuda:N"``; default ``cuda:0``,
        where PyTorch's default is the current device)."""
        return self.to("cuda" if device is None else
                       (f"cuda:{device}" if isinstance(device, int) else device))

    def double(self):
        return self.astype("float64")

    def float(self):
        return self.astype("float32")

    def size_(self):  # pragma: no cover - not public
        return self._data.size

    def is_complex(self):
        return self._data.dtype.kind == "c"

    def is_floating_point(self):
        return is_floating(self._data.dtype)

    @property
    def is_inference(self):
        return self._meta is not None and self._meta.inference

    # ------------------------------------------------------------------ operators
    def __add__(self, other):
        return _apply(_OP["add"], self, other)

    def __radd__(self, other):
        return _apply(_OP["add"], other, self)

    def __sub__(self, other):
        return _apply(_OP["subtract"], self, other)

    def __rsub__(self, other):
        return _apply(_OP["subtract"], other, self)

    def __mul__(self, other):
        return _apply(_OP["multiply"], self, other)

    def __rmul__(self, other):
        return _apply(_OP["multiply"], other, self)

    def __truediv__(self, other):
        return _apply(_OP["divide"], self, other)

    def __rtruediv__(self, other):
        return _apply(_OP["divide"], other, self)

    def __floordiv__(self, other):
        return _apply(_OP["floor_divide"], self, other)

    def __rfloordiv__(self, other):
        return _apply(_OP["floor_divide"], other, self)

    def __mod__(self, other):
        return _apply(_OP["remainder"], self, other)

    def __rmod__(self, other):
        return _apply(_OP["remainder"], other, self)

    def __pow__(self, other):
        return _apply(_OP["pow"], self, other)

    def __rpow__(self, other):
        return _apply(_OP["pow"], other, self)

    def __matmul__(self, other):
        return _apply(_OP["matmul"], self, other)

    def __rmatmul__(self, other):
        return _apply(_OP["matmul"], other, self)

    def __neg__(self):
        return _apply(_OP["negative"], self)

    def __pos__(self):
        return _apply(_OP["positive"], self)

    def __abs__(self):
        return _apply(_OP["abs"], self)

    def __invert__(self):
        if self.dtype.kind != "b":
            raise TypeError(f"~ is defined for bool tensors (logical not); this tensor has "
                            f"dtype {self.dtype}. Use ndgrad.logical_not or `-x - 1`.")
        return _apply(_OP["logical_not"], self)

    def __and__(self, other):
        return _apply(_OP["logical_and"], self, other)

    def __rand__(self, other):
        return _apply(_OP["logical_and"], other, self)

    def __or__(self, other):
        return _apply(_OP["logical_or"], self, other)

    def __ror__(self, other):
        return _apply(_OP["logical_or"], other, self)

    def __xor__(self, other):
        return _apply(_OP["logical_xor"], self, other)

    def __rxor__(self, other):
        return _apply(_OP["logical_xor"], other, self)

    def __eq__(self, other):
        return _apply(_OP["equal"], self, other)

    def __ne__(self, other):
        return _apply(_OP["not_equal"], self, other)

    def __lt__(self, other):
        return _apply(_OP["less"], self, other)

    def __le__(self, other):
        return _apply(_OP["less_equal"], self, other)

    def __gt__(self, other):
        return _apply(_OP["greater"], self, other)

    def __ge__(self, other):
        return _apply(_OP["greater_equal"], self, other)

    # augmented assignment: in place, like NumPy (Note: rebases history, see dispatch)
    def __iadd__(self, other):
        return _apply_inplace(_OP["add"], self, other)

    def __isub__(self, other):
        return _apply_inplace(_OP["subtract"], self, other)

    def __imul__(self, other):
        return _apply_inplace(_OP["multiply"], self, other)

    def __itruediv__(self, other):
        return _apply_inplace(_OP["divide"], self, other)

    def __ifloordiv__(self, other):
        return _apply_inplace(_OP["floor_divide"], self, other)

    def __imod__(self, other):
        return _apply_inplace(_OP["remainder"], self, other)

    def __ipow__(self, other):
        return _apply_inplace(_OP["pow"], self, other)

    def __imatmul__(self, other):
        return _apply_inplace(_OP["matmul"], self, other)

    # in-place writes of whole values: x[...] = value, recorded as index_put
    def fill_(self, value):
        """Set every element to ``value`` (a number or a 0-d tensor) in place; returns self.

        Examples
        --------
        >>> import ndgrad
        >>> ndgrad.ones(3).fill_(2.5)
        tensor([2.5, 2.5, 2.5])
        """
        if isinstance(value, Tensor) and value.ndim != 0:
            raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor "
                               f"with {value.ndim} dimensions; use copy_ to copy a tensor")
        return _apply_inplace(_OP["index_put"], self, value, index=Ellipsis)

    def zero_(self):
        """Set every element to zero in place; returns self."""
        return _apply_inplace(_OP["index_put"], self, 0, index=Ellipsis)

    def copy_(self, src):
        """Copy ``src`` (broadcast to this tensor's shape) into this tensor; returns self.

        Differentiable: the gradient of this tensor's old value is zero, ``src`` gets the
        gradient of the result (summed over broadcast dimensions).

        Examples
        --------
        >>> import ndgrad
        >>> y = ndgrad.zeros((2, 2))
        >>> y.copy_(ndgrad.tensor([1.0, 2.0]))
        tensor([[1., 2.],
                [1., 2.]])
        """
        if not isinstance(src, Tensor):
            raise TypeError(f"copy_ expects a Tensor source, got {type(src).__name__}")
        if src._data is self._data:
            return self
        return _apply_inplace(_OP["index_put"], self, src, index=Ellipsis)

    def __getitem__(self, index):
        return _getitem(self, index)

    def __setitem__(self, index, value):
        _setitem(self, index, value)


_graph._TENSOR[0] = Tensor

# Filled by ndgrad.core.ops after the registry is built (avoids an import cycle).
_OP: dict = {}
_apply = None
_apply_inplace = None
_getitem = None
_setitem = None


def _bind(ops_registry, apply, apply_inplace):
    global _apply, _apply_inplace, _getitem, _setitem
    from .ops import indexing
    _OP.update(ops_registry)
    _apply = apply
    _apply_inplace = apply_inplace
    _getitem = indexing._getitem_public
    _setitem = indexing.setitem
