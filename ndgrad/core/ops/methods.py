"""The Tensor's operators and the methods that need the op layer (or the engine), gathered
as one class whose members ``ndgrad.core.ops`` attaches to :class:`~ndgrad.core.tensor.Tensor`
(the Tensor's own module knows nothing of operations: core's layers import downwards only).
"""

from __future__ import annotations

import weakref

from ..backend import Device, as_dtype
from ..dispatch import TENSOR_F as F
from ..dispatch import apply
from ..inplace import apply_inplace
from ..backward import tensor_backward
from ..accumulate import accumulate_into
from ..grad_mode import STATE
from ..hooks import add_hook
from ..tensor import Tensor, _meta
from .indexing import getitem_public, setitem
from .registry import REGISTRY as OP

__all__ = ["TensorMethods"]


def _is_device(a):
    """Whether ``a`` (a str or Device) names a device rather than a dtype."""
    if isinstance(a, Device):
        return True
    try:
        Device(a)
    except ValueError:
        return False
    return True


def _shape_args(name, args):
    """``f(2, 3)`` or ``f((2, 3))`` as a tuple of ints."""
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        args = tuple(args[0])
    for a in args:
        if not isinstance(a, int) or isinstance(a, bool):
            raise TypeError(f"{name}() takes integer sizes, got {type(a).__name__} {a!r}")
    return tuple(args)


def _dim(dim, ndim, name):
    if not -ndim <= dim < ndim:
        raise IndexError(f"{name}: dimension out of range (expected to be in range of "
                         f"[{-ndim}, {ndim - 1}], but got {dim})")
    return dim % ndim


class TensorMethods:
    """The members attached to Tensor (see the module docstring)."""

    @property
    def T(self):
        """All dimensions reversed (NumPy's ``.T``)."""
        return F.permute_dims(self, tuple(range(self.ndim - 1, -1, -1)))

    @property
    def mT(self):
        """The last two dimensions swapped (a batch of matrix transposes)."""
        return F.matrix_transpose(self)

    @property
    def real(self):
        """The real part (NumPy's ``.real``): a differentiable view of a complex tensor."""
        return F.real(self)

    @property
    def imag(self):
        """The imaginary part (NumPy's ``.imag``; zeros for a real tensor), differentiable."""
        return F.imag(self)

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
        ref = weakref.ref(self)

        def _retain(grad):
            t = ref()
            if t is not None:
                accumulate_into(t, grad, STATE.grad_enabled)
            return None
        _retain._is_retain = True
        m.retain_handle = self._grad_fn._add_tensor_hook(self._output_nr, _retain)

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
        return add_hook(m.hooks, hook)

    backward = tensor_backward

    def clone(self):
        """A copy with its own storage; differentiable (gradient flows back to self)."""
        return F.clone(self)

    def astype(self, dtype, *, copy=True, device=None):
        """Cast to ``dtype``; differentiable between floating/complex dtypes. ``copy=False``
        returns ``self`` when it already has ``dtype``; ``device`` moves the result (the
        array API's ``astype``)."""
        return F.astype(self, as_dtype(dtype), copy=copy, device=device)

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
            out = F.to_device(out, device)  # (an unavailable device: says how to get it)
        if copy and out is self:
            out = self.clone()
        return out

    def to_device(self, device, /, *, stream=None):
        """This tensor on ``device`` (the array API's spelling of ``.to(device)``)."""
        if stream is not None:
            raise ValueError("to_device: streams are not supported; pass stream=None")
        return self.to(device)

    def cpu(self):
        """This tensor on the CPU (``self`` when it is there already)."""
        return self.to("cpu")

    def cuda(self, device=None):
        """This tensor on CUDA device ``device`` (an index or ``"cuda:N"``; default ``cuda:0``,
        where PyTorch's default is the current device)."""
        return self.to("cuda" if device is None else
                       (f"cuda:{device}" if isinstance(device, int) else device))

    # -- PyTorch's spellings, where they do not clash with NumPy's (size and repeat keep
    # NumPy's meaning)
    def unsqueeze(self, dim):
        """A new axis of length 1 at ``dim`` (PyTorch's name for ``expand_dims``).

        >>> import ndgrad
        >>> ndgrad.ones(3).unsqueeze(0).shape
        (1, 3)
        """
        return F.expand_dims(self, dim)

    def view(self, *shape):
        """The same data with another shape, never copied (PyTorch's ``view``): a
        RuntimeError where the layout does not allow it, as for a transposed matrix (use
        ``reshape``, which copies there).

        >>> import ndgrad
        >>> ndgrad.arange(6.0).view(2, -1).shape
        (2, 3)
        """
        shape = _shape_args("view", shape)
        out = F.reshape(self, shape)
        if type(self) is Tensor and self._data.size and not self._shares_memory(out):
            raise RuntimeError(
                f"view size is not compatible with the input tensor's layout (shape "
                f"{list(self.shape)}, not contiguous in the order viewed); use "
                ".reshape(...) instead")
        return out

    def flatten(self, start_dim=0, end_dim=-1):
        """Dimensions ``start_dim`` to ``end_dim`` (inclusive) merged into one.

        >>> import ndgrad
        >>> ndgrad.ones((2, 3, 4)).flatten(1).shape
        (2, 12)
        """
        n = self.ndim
        if n == 0:
            return F.reshape(self, (1,))
        s, e = _dim(start_dim, n, "flatten"), _dim(end_dim, n, "flatten")
        if s > e:
            raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
        shape = tuple(self.shape)
        merged = 1
        for k in shape[s:e + 1]:
            merged *= k
        return F.reshape(self, shape[:s] + (merged,) + shape[e + 1:])

    def expand(self, *sizes):
        """Broadcast to ``sizes`` (-1 keeps a dimension; new dimensions go in front), a view
        (PyTorch's ``expand``; NumPy's ``broadcast_to``).

        >>> import ndgrad
        >>> ndgrad.ones((3, 1)).expand(2, -1, 4).shape
        (2, 3, 4)
        """
        sizes = _shape_args("expand", sizes)
        new = len(sizes) - self.ndim
        if new < 0:
            raise RuntimeError(f"expand: the number of sizes provided ({len(sizes)}) must be "
                               f"greater or equal to the number of dimensions ({self.ndim})")
        shape = []
        for i, k in enumerate(sizes):
            if k == -1:
                if i < new:
                    raise RuntimeError("expand: -1 is not allowed in a new leading dimension")
                k = self.shape[i - new]
            shape.append(k)
        return F.broadcast_to(self, tuple(shape))

    def narrow(self, dim, start, length):
        """The ``length`` entries from ``start`` along ``dim`` (a view).

        >>> import ndgrad
        >>> ndgrad.arange(5.0).narrow(0, 1, 3)
        tensor([1., 2., 3.])
        """
        d = _dim(dim, self.ndim, "narrow")
        size = self.shape[d]
        if start < 0:
            start += size
        if not (0 <= start <= size and 0 <= length and start + length <= size):
            raise IndexError(f"narrow: start ({start}) + length ({length}) exceeds dimension "
                             f"size ({size})")
        return self[(slice(None),) * d + (slice(start, start + length),)]

    def t(self):
        """The transpose of a matrix (a 0-D or 1-D tensor is returned as is).

        >>> import ndgrad
        >>> ndgrad.ones((2, 3)).t().shape
        (3, 2)
        """
        if self.ndim > 2:
            raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is "
                               f"{self.ndim}D; use .mT or .permute(...)")
        return F.permute_dims(self, tuple(range(self.ndim - 1, -1, -1)))

    def mm(self, other):
        """Matrix product of two matrices (2-D only; ``@`` broadcasts).

        >>> import ndgrad
        >>> ndgrad.ones((2, 3)).mm(ndgrad.ones((3, 4))).shape
        (2, 4)
        """
        for name, t in (("self", self), ("mat2", other)):
            if getattr(t, "ndim", None) != 2:
                raise RuntimeError(f"mm: {name} must be a matrix (2-D), got "
                                   f"{getattr(t, 'ndim', type(t).__name__)} dimensions")
        return F.matmul(self, other)

    def permute(self, *dims):
        """The dimensions reordered (PyTorch's name for ``permute_dims``).

        >>> import ndgrad
        >>> ndgrad.ones((2, 3, 4)).permute(2, 0, 1).shape
        (4, 2, 3)
        """
        return F.permute_dims(self, _shape_args("permute", dims))

    def double(self):
        return self.astype("float64")

    def float(self):
        return self.astype("float32")

    # ------------------------------------------------------------------ operators
    def __add__(self, other) -> Tensor:
        return apply(OP["add"], self, other)

    def __radd__(self, other) -> Tensor:
        return apply(OP["add"], other, self)

    def __sub__(self, other) -> Tensor:
        return apply(OP["subtract"], self, other)

    def __rsub__(self, other) -> Tensor:
        return apply(OP["subtract"], other, self)

    def __mul__(self, other) -> Tensor:
        return apply(OP["multiply"], self, other)

    def __rmul__(self, other) -> Tensor:
        return apply(OP["multiply"], other, self)

    def __truediv__(self, other) -> Tensor:
        return apply(OP["divide"], self, other)

    def __rtruediv__(self, other) -> Tensor:
        return apply(OP["divide"], other, self)

    def __floordiv__(self, other) -> Tensor:
        return apply(OP["floor_divide"], self, other)

    def __rfloordiv__(self, other) -> Tensor:
        return apply(OP["floor_divide"], other, self)

    def __mod__(self, other) -> Tensor:
        return apply(OP["remainder"], self, other)

    def __rmod__(self, other) -> Tensor:
        return apply(OP["remainder"], other, self)

    def __pow__(self, other) -> Tensor:
        return apply(OP["pow"], self, other)

    def __rpow__(self, other) -> Tensor:
        return apply(OP["pow"], other, self)

    def __matmul__(self, other) -> Tensor:
        return apply(OP["matmul"], self, other)

    def __rmatmul__(self, other) -> Tensor:
        return apply(OP["matmul"], other, self)

    def __neg__(self) -> Tensor:
        return apply(OP["negative"], self)

    def __pos__(self) -> Tensor:
        return apply(OP["positive"], self)

    def __abs__(self) -> Tensor:
        return apply(OP["abs"], self)

    def __invert__(self) -> Tensor:
        if self.dtype.kind not in "biu":
            raise TypeError(f"~ is defined for integer and bool tensors (bitwise not); this "
                            f"tensor has dtype {self.dtype}. Use ndgrad.logical_not or `-x`.")
        return apply(OP["bitwise_invert"], self)

    # bitwise on integers, logical on bools (NumPy's and the standard's meaning)
    def __and__(self, other) -> Tensor:
        return apply(OP["bitwise_and"], self, other)

    def __rand__(self, other) -> Tensor:
        return apply(OP["bitwise_and"], other, self)

    def __or__(self, other) -> Tensor:
        return apply(OP["bitwise_or"], self, other)

    def __ror__(self, other) -> Tensor:
        return apply(OP["bitwise_or"], other, self)

    def __xor__(self, other) -> Tensor:
        return apply(OP["bitwise_xor"], self, other)

    def __rxor__(self, other) -> Tensor:
        return apply(OP["bitwise_xor"], other, self)

    def __lshift__(self, other) -> Tensor:
        return apply(OP["bitwise_left_shift"], self, other)

    def __rlshift__(self, other) -> Tensor:
        return apply(OP["bitwise_left_shift"], other, self)

    def __rshift__(self, other) -> Tensor:
        return apply(OP["bitwise_right_shift"], self, other)

    def __rrshift__(self, other) -> Tensor:
        return apply(OP["bitwise_right_shift"], other, self)

    def __eq__(self, other):
        return apply(OP["equal"], self, other)

    def __ne__(self, other):
        return apply(OP["not_equal"], self, other)

    def __lt__(self, other) -> Tensor:
        return apply(OP["less"], self, other)

    def __le__(self, other) -> Tensor:
        return apply(OP["less_equal"], self, other)

    def __gt__(self, other) -> Tensor:
        return apply(OP["greater"], self, other)

    def __ge__(self, other) -> Tensor:
        return apply(OP["greater_equal"], self, other)

    # augmented assignment: in place, like NumPy (Note: rebases history, see dispatch)
    def __iadd__(self, other) -> Tensor:
        return apply_inplace(OP["add"], self, other)

    def __isub__(self, other) -> Tensor:
        return apply_inplace(OP["subtract"], self, other)

    def __imul__(self, other) -> Tensor:
        return apply_inplace(OP["multiply"], self, other)

    def __itruediv__(self, other) -> Tensor:
        return apply_inplace(OP["divide"], self, other)

    def __ifloordiv__(self, other) -> Tensor:
        return apply_inplace(OP["floor_divide"], self, other)

    def __imod__(self, other) -> Tensor:
        return apply_inplace(OP["remainder"], self, other)

    def __ipow__(self, other) -> Tensor:
        return apply_inplace(OP["pow"], self, other)

    def __imatmul__(self, other) -> Tensor:
        return apply_inplace(OP["matmul"], self, other)

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
        return apply_inplace(OP["index_put"], self, value, index=Ellipsis)

    def zero_(self):
        """Set every element to zero in place; returns self."""
        return apply_inplace(OP["index_put"], self, 0, index=Ellipsis)

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
        if src is self or (type(src) is Tensor and type(self) is Tensor and
                src._data is self._data):
            return self
        return apply_inplace(OP["index_put"], self, src, index=Ellipsis)

    def __getitem__(self, index) -> Tensor:
        return getitem_public(self, index)

    def __setitem__(self, index, value):
        setitem(self, index, value)
