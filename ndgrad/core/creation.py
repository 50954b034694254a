"""Creation functions (``tensor``, ``zeros``, ``arange``, ``randn``, ...) and the formula
helpers that are not ops (``zeros_like`` and friends in both formula namespaces).

Every creation function takes ``dtype``, ``device`` and, where the result is floating,
``requires_grad``. Python floats become the default dtype (:func:`set_default_dtype`).
"""

from __future__ import annotations

from . import levels
from .backend import (_CUDA, NUMPY, Device, _placed, _seed_state, as_dtype,
                      backend_for_device, backend_of, get_default_dtype)
from .tensor import Tensor, _default_float, as_data, finish

__all__ = ["tensor", "asarray", "zeros", "ones", "empty", "full", "zeros_like", "ones_like",
           "full_like", "empty_like", "arange", "linspace", "eye", "randn", "rand",
           "manual_seed", "is_tensor", "randn_like", "rand_like", "asanyarray",
           "asarray_chkfinite", "fromiter", "constant_data"]


def tensor(data, dtype=None, device=None, requires_grad=False):
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
    """
    return finish(as_data(data, dtype, device, copy=True), requires_grad)


def asarray(obj, dtype=None, device=None, copy=None, requires_grad=False):
    """Convert ``obj`` to a tensor, sharing memory with NumPy arrays where possible.

    A Tensor is returned as is when no conversion is needed. ``copy`` follows the array API:
    None copies only when needed (a dtype change), True always copies, False never does (and
    raises ValueError when a copy would be needed).

    Examples
    --------
    >>> import numpy as np, ndgrad
    >>> a = np.arange(3.0)
    >>> t = ndgrad.asarray(a)
    >>> t.numpy() is a or np.shares_memory(t.numpy(), a)
    True
    """
    if isinstance(obj, Tensor) and (dtype is None or as_dtype(dtype) == obj.dtype) and \
            (device is None or obj.device == device) and not copy:
        if requires_grad and not obj.requires_grad:
            obj.requires_grad_(True)
        return obj
    return finish(as_data(obj, dtype, device, copy=copy), requires_grad)


def asanyarray(a, dtype=None, order=None, *, device=None, copy=None, like=None):
    """NumPy's ``asanyarray``: :func:`asarray` (a Tensor has no subclasses to pass through).

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.asanyarray([1.0, 2.0])
    tensor([1., 2.])
    """
    _numpy_layout("asanyarray", order, like)
    return asarray(a, dtype=dtype, device=device, copy=copy)


def asarray_chkfinite(a, dtype=None, order=None):
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


def fromiter(iter, dtype, count=-1, *, like=None, device=None):  # noqa: A002  (NumPy's name)
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


def _shape(shape):
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        return tuple(shape[0])
    return tuple(int(s) for s in shape)


def zeros(*shape, dtype=None, device=None, requires_grad=False):
    """A tensor of zeros; ``zeros(2, 3)`` and ``zeros((2, 3))`` both work.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.zeros(2, 3).shape
    (2, 3)
    """
    B, device = _placed(device)
    with B.on(device):
        return finish(B.zeros(_shape(shape), dtype=_dtype_or_default(dtype)), requires_grad)


def ones(*shape, dtype=None, device=None, requires_grad=False):
    """A tensor of ones.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.ones(2)
    tensor([1., 1.])
    """
    B, device = _placed(device)
    with B.on(device):
        return finish(B.ones(_shape(shape), dtype=_dtype_or_default(dtype)), requires_grad)


def empty(*shape, dtype=None, device=None, requires_grad=False):
    """An uninitialised tensor.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.empty(3, 1).shape
    (3, 1)
    """
    B, device = _placed(device)
    with B.on(device):
        return finish(B.empty(_shape(shape), dtype=_dtype_or_default(dtype)), requires_grad)


def full(shape, fill_value, dtype=None, device=None, requires_grad=False):
    """A tensor filled with ``fill_value`` (its dtype follows the value, floats the default).

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.full((2,), 7.0)
    tensor([7., 7.])
    """
    B, device = _placed(device)
    if isinstance(shape, int):
        shape = (shape,)
    d = as_dtype(dtype)
    if d is None:
        d = _default_float(NUMPY.asarray(fill_value)).dtype
    with B.on(device):
        return finish(B.full(tuple(shape), fill_value, dtype=d), requires_grad)


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


def zeros_like(x, dtype=None, device=None, requires_grad=False):
    """Zeros with the shape (and by default dtype and device) of ``x``.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.zeros_like(ndgrad.ones(2))
    tensor([0., 0.])
    """
    return _like("zeros_like", x, dtype, device, requires_grad)


def ones_like(x, dtype=None, device=None, requires_grad=False):
    """Ones with the shape (and by default dtype and device) of ``x``.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.ones_like(ndgrad.zeros(2))
    tensor([1., 1.])
    """
    return _like("ones_like", x, dtype, device, requires_grad)


def empty_like(x, dtype=None, device=None, requires_grad=False):
    """An uninitialised tensor shaped like ``x``.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.empty_like(ndgrad.zeros(2, 2)).shape
    (2, 2)
    """
    return _like("empty_like", x, dtype, device, requires_grad)


def full_like(x, fill_value, dtype=None, device=None, requires_grad=False):
    """``fill_value`` with the shape (and by default dtype and device) of ``x``.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.full_like(ndgrad.zeros(2), 3.0)
    tensor([3., 3.])
    """
    return _like("full_like", x, dtype, device, requires_grad, fill_value)


def arange(start, stop=None, step=1, *, dtype=None, device=None, requires_grad=False):
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
             requires_grad=False):
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


def eye(n, m=None, k=0, *, dtype=None, device=None, requires_grad=False):
    """The ``n x m`` identity (ones on diagonal ``k``).

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.eye(2)
    tensor([[1., 0.],
            [0., 1.]])
    """
    B, device = _placed(device)
    with B.on(device):
        return finish(B.eye(n, m, k=k, dtype=_dtype_or_default(dtype)), requires_grad)


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


def randn(*shape, dtype=None, device=None, requires_grad=False):
    """Standard normal samples.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.randn(2, 3).shape
    (2, 3)
    """
    return _random("randn", _shape(shape), dtype, device, requires_grad)


def rand(*shape, dtype=None, device=None, requires_grad=False):
    """Uniform samples in [0, 1).

    Examples
    --------
    >>> import ndgrad
    >>> bool(((ndgrad.rand(5) >= 0) & (ndgrad.rand(5) < 1)).all())
    True
    """
    return _random("rand", _shape(shape), dtype, device, requires_grad)


def randn_like(x, dtype=None, device=None, requires_grad=False):
    """Standard normal samples with the shape (and by default dtype and device) of ``x``.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.randn_like(ndgrad.zeros((2, 3))).shape
    (2, 3)
    """
    return _random_like("randn", x, dtype, device, requires_grad)


def rand_like(x, dtype=None, device=None, requires_grad=False):
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
