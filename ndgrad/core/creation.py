"""Creation functions (``tensor``, ``zeros``, ``arange``, ``randn``, ...) and the formula
helpers that are not ops (``zeros_like`` and friends in both formula namespaces).

Every creation function takes ``dtype``, ``device`` and, where the result is floating,
``requires_grad``. Python floats become the default dtype (:func:`set_default_dtype`).
"""

from __future__ import annotations

import operator
import warnings

from . import levels
from .backend import (_CUDA, NUMPY, Device, _placed, _seed_state, as_dtype,
                      backend_for_device, backend_of, get_default_dtype)
from .namespace import TENSOR_F, holds_tensor, stack_nested
from .tensor import Tensor, _default_float, _wrap_raw, as_data, finish

__all__ = ["tensor", "asarray", "zeros", "ones", "empty", "full", "zeros_like", "ones_like",
           "full_like", "empty_like", "arange", "linspace", "eye", "randn", "rand",
           "manual_seed", "is_tensor", "randn_like", "rand_like", "asanyarray",
           "asarray_chkfinite", "fromiter", "constant_data"]


def tensor(data, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Make a tensor holding a copy of ``data``.

    Parameters
    ----------
    data : array_like
        Nested sequences, scalars, NumPy arrays or tensors.
    dtype : dtype, optional
        Python floats become the default dtype (float64 unless changed), Python ints int64.
    device : str or device, optional
        ``"cpu"`` (default).
    requires_grad : bool
        Record operations on this tensor; only floating and complex dtypes may.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    tensor([[1., 2.],
            [3., 4.]], requires_grad=True)
    >>> ndgrad.tensor([1, 2]).dtype
    dtype('int64')

    ``tensor`` always makes a new leaf, as ``torch.tensor`` does: from tensors that require
    grad or carry a transform's value it copies the values and warns that the result has no
    history (Note [tensor() makes a leaf]); :func:`asarray`, :func:`stack` or
    ``x.clone()`` keep the derivative.
    """
    if isinstance(data, Tensor) or (type(data) in (list, tuple) and holds_tensor(data)):
        data = _values_of(data)
    return finish(as_data(data, dtype, device, copy=True), requires_grad)


# Note [tensor() makes a leaf]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# `ndgrad.tensor(data)` is PyTorch's `torch.tensor`: a new leaf holding a copy of the values,
# never part of a graph. When `data` holds tensors that require grad, or values of a
# transform (`func.grad`'s, a dual level's, a Taylor series'), the derivative through them
# would be silently lost, so it warns (PyTorch warns for `torch.tensor(t)`) and names what
# keeps it: `asarray`/`array`/`stack` (differentiable, as `jax.numpy.array`), or `x.clone()`.
# A transform's value is read one level down (`constant_data`); a vmap batch has no single
# value and is refused there, as every function without a derivative refuses it.
def _values_of(data):
    lost = []

    def plain(e):
        if isinstance(e, (list, tuple)):
            return [plain(x) for x in e]
        if not isinstance(e, Tensor):
            return e
        m = e._meta
        if e._requires_grad or type(e) is not Tensor or (m is not None and m.level_data):
            lost.append(e)
        arr, _ = constant_data(e, "ndgrad.tensor")
        return _wrap_raw(arr)

    out = plain(data)
    if lost:
        warnings.warn(
            "ndgrad.tensor(data) makes a new leaf with no history (as torch.tensor): data holds "
            f"{len(lost)} tensor(s) that require grad or carry a transform's value, and the "
            "derivative through them is not kept. Use ndgrad.asarray(...) or ndgrad.stack(...) "
            "to keep it, or .detach() the tensors to say that a constant is meant.",
            UserWarning, stacklevel=3)
    return out


def asarray(a, dtype=None, *, device=None, copy=None, requires_grad=False) -> Tensor:
    """Convert ``a`` to a tensor, sharing memory with NumPy arrays where possible.

    A Tensor is returned as is when no conversion is needed; a conversion of a Tensor (its
    dtype, its device, a copy) stays in its graph, as :func:`astype` and :func:`clone` do.
    A (nested) list or tuple holding tensors is stacked differentiably, as JAX's
    ``jnp.asarray`` does (numbers in it take the tensors' dtype and device). ``copy`` follows
    the array API: None copies only when needed (a dtype change), True always copies, False
    never does (and raises ValueError when a copy would be needed).

    Examples
    --------
    >>> import numpy as np, ndgrad
    >>> a = np.arange(3.0)
    >>> t = ndgrad.asarray(a)
    >>> t.numpy() is a or np.shares_memory(t.numpy(), a)
    True
    >>> x = ndgrad.tensor(2.0, requires_grad=True)
    >>> ndgrad.asarray([x, 3 * x, 1.0])
    tensor([2., 6., 1.], grad_fn=<StackBackward0>)
    """
    if type(a) in (list, tuple) and holds_tensor(a):
        return from_tensor(stacked(a, copy, "asarray"), dtype, device, None, requires_grad,
                           "asarray")
    if isinstance(a, Tensor):
        return from_tensor(a, dtype, device, copy, requires_grad, "asarray")
    return finish(as_data(a, dtype, device, copy=copy), requires_grad)


def stacked(seq, copy, who):
    """The (nested) sequence ``seq`` holding tensors, stacked differentiably (Note
    [Sequences of tensors] in core/namespace.py): always a new tensor, so ``copy=False`` is
    a ValueError (NumPy's, for a sequence)."""
    if copy is False:
        raise ValueError(f"ndgrad.{who}(copy=False): a sequence holding tensors becomes a new "
                         "tensor, which is a copy; pass copy=None (or leave copy out)")
    return stack_nested(seq, who)


def from_tensor(t, dtype, device, copy, requires_grad, who, ndmin=0):
    """Tensor ``t`` converted as ``asarray``/``array`` say, in its graph: moved to
    ``device`` (``Tensor.to``), cast to ``dtype`` (``astype``), copied (``clone``) when
    ``copy`` is True and nothing else made a copy; ``copy=False`` refuses a conversion."""
    out, copied = t, False
    if device is not None and Device(device) != out.device:
        out, copied = out.to(device), True
    d = as_dtype(dtype)
    if d is not None and d != out.dtype:
        if copy is False:
            raise ValueError(f"ndgrad.{who}(copy=False): converting {out.dtype} to {d} needs a "
                             "copy; pass copy=None to copy only when needed")
        out, copied = TENSOR_F.astype(out, d), True
    if copy is False and copied:
        raise ValueError(f"ndgrad.{who}(copy=False): moving the tensor to {device} needs a "
                         "copy; pass copy=None to copy only when needed")
    if copy and not copied:
        out = TENSOR_F.clone(out)
    if out.ndim < ndmin:
        out = TENSOR_F.reshape(out, (1,) * (ndmin - out.ndim) + tuple(out.shape))
    if requires_grad and not out.requires_grad:
        out.requires_grad_(True)
    return out


def asanyarray(a, dtype=None, order=None, *, device=None, copy=None, like=None) -> Tensor:
    """NumPy's ``asanyarray``: :func:`asarray` (a Tensor has no subclasses to pass through).

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.asanyarray([1.0, 2.0])
    tensor([1., 2.])
    """
    _numpy_layout("asanyarray", order, like)
    return asarray(a, dtype=dtype, device=device, copy=copy)


def asarray_chkfinite(a, dtype=None, order=None) -> Tensor:
    """:func:`asarray`, refusing NaN and infinite values with a ValueError (NumPy's
    ``asarray_chkfinite``).

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.asarray_chkfinite([1.0, float("inf")])
    Traceback (most recent call last):
    ...
    ValueError: array must not contain infs or NaNs
    """
    _numpy_layout("asarray_chkfinite", order, None)
    t = asarray(a, dtype=dtype)
    if t.dtype.kind in "fc" and not bool(t.backend.isfinite(t.detach()._data).all()):
        raise ValueError("array must not contain infs or NaNs")
    return t


def fromiter(iter, dtype, count=-1, *, like=None, device=None) -> Tensor:  # noqa: A002  (NumPy's name)
    """A 1-D tensor from the values of an iterable (NumPy's ``fromiter``; ``dtype`` is
    required, ``count=-1`` reads to the end).

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.fromiter((k * k for k in range(4)), dtype=ndgrad.float64)
    tensor([0., 1., 4., 9.])
    """
    _numpy_layout("fromiter", None, like)
    import numpy
    return asarray(numpy.fromiter(iter, dtype=as_dtype(dtype), count=count), device=device)


def _numpy_layout(who, order, like):
    if order not in (None, "K", "A", "C"):
        raise TypeError(f"ndgrad.{who}: order={order!r} is not supported (a Tensor's memory "
                        "layout is its own); leave order at its default")
    if like is not None:
        raise TypeError(f"ndgrad.{who}: like= is not supported; pass device= instead")


def constant_data(x, who):
    """``(array, backend)``: what a function without a derivative computes on. A Tensor's
    data; a transform's value read one level down (through the host, on a GPU); a vmap
    batch, which has no single value, is refused. Used by ndgrad's functions without a
    derivative (``ndgrad.argwhere`` ...), the array API's and NumPy's protocols."""
    if not isinstance(x, Tensor):
        x = asarray(x)
    if type(x) is Tensor:
        return x._data, x.backend
    try:
        data = x.detach().cpu().numpy()
        B = x.backend
        return (data if B.name == "numpy" else B.asarray(data)), B
    except (RuntimeError, TypeError) as exc:
        raise TypeError(f"{who}: its result has no derivative and cannot be computed on this "
                        f"transform's value ({exc}); call it outside the transform, or on a "
                        "value returned from it") from None


def is_tensor(obj):
    """True if ``obj`` is an ndgrad Tensor."""
    return isinstance(obj, Tensor)


def _dtype_or_default(dtype, floating=True):
    d = as_dtype(dtype)
    return d if d is not None else (get_default_dtype() if floating else None)


def _shape(size, shape=None, who="zeros"):
    """The shape a creation function was given: ints by position (``zeros(2, 3)``, PyTorch's
    form), one int or sequence by position (``zeros((2, 3))``, NumPy's) or as ``shape=``
    (the array API's keyword)."""
    if shape is not None:
        if size:
            raise TypeError(f"ndgrad.{who}: the shape was given by position and as shape=; "
                            "give it once")
        size = (shape,)
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = size[0]
    try:
        return tuple(operator.index(s) for s in size)
    except TypeError:
        raise TypeError(f"ndgrad.{who}: the shape must be ints, {who}(2, 3), or one sequence "
                        f"of ints, {who}((2, 3)); got {size!r} (pass dtype and device by "
                        "keyword)") from None


# (Note [Signatures are NumPy's] in tests/test_signatures.py)
_SIZE_SIGNATURE = (
    "the shape may also be given as separate ints, ``*size``, as PyTorch takes it (zeros(2, "
    "3)); NumPy's dtype by position after the shape, zeros((2, 3), 'f4'), is a TypeError that "
    "asks for dtype= by keyword, never read as a size")


def zeros(*size, shape=None, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A tensor of zeros; ``zeros(2, 3)``, ``zeros((2, 3))`` and ``zeros(shape=(2, 3))``
    (the array API's form) all work.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.zeros(2, 3).shape
    (2, 3)
    >>> ndgrad.zeros(shape=3)
    tensor([0., 0., 0.])
    """
    B, device = _placed(device)
    with B.on(device):
        return finish(B.zeros(_shape(size, shape, "zeros"), dtype=_dtype_or_default(dtype)),
                      requires_grad)


def ones(*size, shape=None, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A tensor of ones; the shape as :func:`zeros` takes it.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.ones(2)
    tensor([1., 1.])
    """
    B, device = _placed(device)
    with B.on(device):
        return finish(B.ones(_shape(size, shape, "ones"), dtype=_dtype_or_default(dtype)),
                      requires_grad)


def empty(*size, shape=None, dtype=None, device=None, requires_grad=False) -> Tensor:
    """An uninitialised tensor; the shape as :func:`zeros` takes it.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.empty(3, 1).shape
    (3, 1)
    """
    B, device = _placed(device)
    with B.on(device):
        return finish(B.empty(_shape(size, shape, "empty"), dtype=_dtype_or_default(dtype)),
                      requires_grad)


def full(shape, fill_value, dtype=None, *, device=None, requires_grad=False) -> Tensor:
    """A tensor filled with ``fill_value`` (its dtype follows the value, floats the default).

    ``fill_value`` may be an array of values that broadcasts to ``shape``, as in NumPy. A
    Tensor ``fill_value`` (or a list holding tensors) is differentiable, as in JAX and HIPS
    autograd: the result is ``fill_value`` broadcast to ``shape`` (and cast to ``dtype``),
    so its gradient is the cotangent summed over the broadcast dimensions.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.full((2,), 7.0)
    tensor([7., 7.])
    >>> v = ndgrad.tensor(0.5, requires_grad=True)
    >>> ndgrad.full((2, 3), v).sum().backward()
    >>> v.grad
    tensor(6.)
    """
    if isinstance(shape, int):
        shape = (shape,)
    if type(fill_value) in (list, tuple) and holds_tensor(fill_value):
        fill_value = stack_nested(fill_value, "full")
    if isinstance(fill_value, Tensor):
        return _filled(fill_value, tuple(shape), dtype, device, requires_grad, "full")
    B, device = _placed(device)
    d = as_dtype(dtype)
    if d is None:
        d = _default_float(NUMPY.asarray(fill_value)).dtype
    with B.on(device):
        return finish(B.full(tuple(shape), fill_value, dtype=d), requires_grad)


zeros.signature_notes = ones.signature_notes = empty.signature_notes = _SIZE_SIGNATURE


def _filled(value, shape, dtype, device, requires_grad, who):
    """``full``'s result for a Tensor fill value: ``value`` on ``device`` and of ``dtype``,
    broadcast to ``shape`` and copied (a new tensor, not a view), in its graph."""
    v = from_tensor(value, dtype, device, None, False, who)
    try:
        out = TENSOR_F.clone(TENSOR_F.broadcast_to(v, shape))
    except ValueError:
        raise ValueError(f"ndgrad.{who}: the fill value of shape {tuple(v.shape)} does not "
                         f"broadcast to the shape {shape}") from None
    if requires_grad and not out.requires_grad:
        out.requires_grad_(True)
    return out


def _like(fn_name, x, dtype, device, requires_grad, *extra):
    if type(x) is not Tensor and isinstance(x, Tensor):
        return x._like(fn_name, dtype, device, requires_grad, *extra)  # a transform's value
    data = x._data if isinstance(x, Tensor) else backend_of(x).asarray(x)
    src = backend_of(data)
    B = backend_for_device(device) if device is not None else src
    d = as_dtype(dtype) or data.dtype
    if B is src and (device is None or Device(device) == B.device_of(data)):
        out = getattr(B, fn_name)(data, *extra, dtype=d)
    else:
        with B.on(device):
            out = getattr(B, fn_name[:-5])(data.shape, *extra, dtype=d)
    return finish(out, requires_grad)


def zeros_like(a, dtype=None, *, device=None, requires_grad=False) -> Tensor:
    """Zeros with the shape (and by default dtype and device) of ``a``.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.zeros_like(ndgrad.ones(2))
    tensor([0., 0.])
    """
    return _like("zeros_like", a, dtype, device, requires_grad)


def ones_like(a, dtype=None, *, device=None, requires_grad=False) -> Tensor:
    """Ones with the shape (and by default dtype and device) of ``a``.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.ones_like(ndgrad.zeros(2))
    tensor([1., 1.])
    """
    return _like("ones_like", a, dtype, device, requires_grad)


def empty_like(a, dtype=None, *, device=None, requires_grad=False) -> Tensor:
    """An uninitialised tensor shaped like ``a``.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.empty_like(ndgrad.zeros(2, 2)).shape
    (2, 2)
    """
    return _like("empty_like", a, dtype, device, requires_grad)


def full_like(a, fill_value, dtype=None, *, device=None, requires_grad=False) -> Tensor:
    """``fill_value`` with the shape (and by default dtype and device) of ``a``.

    A Tensor ``fill_value`` (or a list holding tensors) is differentiable, as in :func:`full`:
    its gradient is the cotangent summed over the broadcast dimensions (it is cast to the
    dtype of ``a`` unless ``dtype`` is given, as NumPy's ``full_like`` casts its value).

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.full_like(ndgrad.zeros(2), 3.0)
    tensor([3., 3.])
    >>> v = ndgrad.tensor(0.5, requires_grad=True)
    >>> (ndgrad.full_like(ndgrad.zeros(4), v) * ndgrad.arange(4.0)).sum().backward()
    >>> v.grad
    tensor(6.)
    """
    if type(fill_value) in (list, tuple) and holds_tensor(fill_value):
        fill_value = stack_nested(fill_value, "full_like")
    if isinstance(fill_value, Tensor):
        if not isinstance(a, Tensor):
            a = asarray(a)
        return _filled(fill_value, tuple(a.shape), a.dtype if dtype is None else dtype,
                       a.device if device is None else device, requires_grad, "full_like")
    return _like("full_like", a, dtype, device, requires_grad, fill_value)


def arange(start, stop=None, step=1, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Evenly spaced values in ``[start, stop)``.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.arange(4)
    tensor([0, 1, 2, 3])
    >>> ndgrad.arange(0.0, 1.0, 0.25)
    tensor([0.  , 0.25, 0.5 , 0.75])
    """
    B, device = _placed(device)
    args = (0, start, step) if stop is None else (start, stop, step)  # arange(stop, step=k)
    d = as_dtype(dtype)
    with B.on(device):
        arr = B.arange(*args, dtype=d) if d is not None else B.arange(*args)
    if d is None:
        arr = _default_float(arr)
    return finish(arr, requires_grad)


def linspace(start, stop, num=50, *, endpoint=True, dtype=None, device=None,
             requires_grad=False) -> Tensor:
    """``num`` evenly spaced values from ``start`` to ``stop``.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.linspace(0, 1, 5)
    tensor([0.  , 0.25, 0.5 , 0.75, 1.  ])
    """
    B, device = _placed(device)
    with B.on(device):
        return finish(B.linspace(start, stop, num, endpoint=endpoint,
                                  dtype=_dtype_or_default(dtype)), requires_grad)


def eye(N, M=None, k=0, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    """The ``N x M`` identity (ones on diagonal ``k``).

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.eye(2)
    tensor([[1., 0.],
            [0., 1.]])
    """
    B, device = _placed(device)
    with B.on(device):
        return finish(B.eye(N, M, k=k, dtype=_dtype_or_default(dtype)), requires_grad)


def manual_seed(seed):
    """Seed ndgrad's random number generators (``randn``, ``rand``).

    Examples
    --------
    >>> import ndgrad
    >>> _ = ndgrad.manual_seed(0); a = ndgrad.randn(3)
    >>> _ = ndgrad.manual_seed(0); b = ndgrad.randn(3)
    >>> bool((a == b).all())
    True
    """
    _seed_state["seed"] = int(seed)
    NUMPY.manual_seed(int(seed))
    if _CUDA["backend"] is not None:
        _CUDA["backend"].manual_seed(int(seed))
    return seed


def randn(*shape, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Standard normal samples.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.randn(2, 3).shape
    (2, 3)
    """
    return _random("randn", _shape(shape, who="randn"), dtype, device, requires_grad)


def rand(*shape, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Uniform samples in [0, 1).

    Examples
    --------
    >>> import ndgrad
    >>> bool(((ndgrad.rand(5) >= 0) & (ndgrad.rand(5) < 1)).all())
    True
    """
    return _random("rand", _shape(shape, who="rand"), dtype, device, requires_grad)


def randn_like(x, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Standard normal samples with the shape (and by default dtype and device) of ``x``.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.randn_like(ndgrad.zeros((2, 3))).shape
    (2, 3)
    """
    return _random_like("randn", x, dtype, device, requires_grad)


def rand_like(x, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Uniform samples in [0, 1) with the shape (and by default dtype and device) of ``x``.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.rand_like(ndgrad.zeros(4)).dtype
    dtype('float64')
    """
    return _random_like("rand", x, dtype, device, requires_grad)


def _random_like(kind, x, dtype, device, requires_grad):
    if not isinstance(x, Tensor):
        x = asarray(x)
    return _random(kind, tuple(x.shape), dtype if dtype is not None else x.dtype,
                   device if device is not None else x.device, requires_grad)


def sample(kind, shape, dtype, device):
    """Raw samples: ``kind`` is "randn" (standard normal) or "rand" (uniform in [0, 1))."""
    B, device = _placed(device)
    d = _dtype_or_default(dtype)
    with B.on(device):
        if kind == "rand":
            return B.generator().random(shape).astype(d)
        if d.kind == "c":
            real = B.generator().standard_normal((2,) + shape) / 2 ** 0.5
            return (real[0] + 1j * real[1]).astype(d)
        return B.generator().standard_normal(shape).astype(d)


def _random(kind, shape, dtype, device, requires_grad):
    if levels.VISIBLE[0]:  # a transform may change random draws (vmap's randomness)
        for lv in reversed(levels.visible_levels()):
            if lv.interpreter.transforms_random:
                return lv.interpreter.random(kind, shape, dtype, device, requires_grad)
    return finish(sample(kind, shape, dtype, device), requires_grad)


# ------------------------------------------------------------------ formula helpers
def iscomplexobj(x):
    """True if ``x`` (tensor, array or scalar) is complex."""
    if isinstance(x, Tensor):
        return x.dtype.kind == "c"
    return isinstance(x, complex) or getattr(getattr(x, "dtype", None), "kind", "") == "c"


def _formula_zeros(shape, dtype=None, like=None):
    return zeros(shape, dtype=dtype, device=None if like is None else like.device)


def _formula_ones(shape, dtype=None, like=None):
    return ones(shape, dtype=dtype, device=None if like is None else like.device)


def _formula_arange(n, like=None):
    return arange(n, device=None if like is None else like.device)


FORMULA_HELPERS = ("zeros_like", "ones_like", "full_like", "empty_like", "iscomplexobj")
FORMULA_EXTRA = {"zeros": _formula_zeros, "ones": _formula_ones, "arange": _formula_arange}


def raw_helpers(B):
    """The same helpers over raw arrays of backend ``B`` (``like=``: an array whose device the
    result goes on; B's arrays are all on its current device)."""
    def raw_zeros(shape, dtype=None, like=None):
        return B.zeros(shape, dtype=dtype)

    def raw_ones(shape, dtype=None, like=None):
        return B.ones(shape, dtype=dtype)

    def raw_arange(n, like=None):
        return B.arange(n)

    return {
        "zeros_like": B.zeros_like,
        "ones_like": B.ones_like,
        "full_like": B.full_like,
        "empty_like": B.empty_like,
        "iscomplexobj": B.iscomplexobj,
        "zeros": raw_zeros,
        "ones": raw_ones,
        "arange": raw_arange,
    }
