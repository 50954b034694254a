"""What the Python array API standard asks of a namespace beyond its operations:
``Tensor.__array_namespace__``, ``__array_api_version__``, the inspection object
(``__array_namespace_info__``), the data type functions (``finfo``, ``iinfo``, ``isdtype``,
``result_type``, ``can_cast``) and the standard's functions without a derivative
(``unique_*``, ``searchsorted``, ``nonzero``, ``from_dlpack``).

A library written against the standard reaches ndgrad through ``x.__array_namespace__()``
and gets the ``ndgrad`` module: its operations are ndgrad's differentiable ones.

Examples
--------
>>> import ndgrad
>>> x = ndgrad.tensor([3.0, 1.0, 3.0])
>>> xp = x.__array_namespace__()
>>> xp is ndgrad, xp.__array_api_version__
(True, '2024.12')
>>> xp.unique_counts(x)
UniqueCountsResult(values=tensor([1., 3.]), counts=tensor([1, 2]))
>>> xp.isdtype(x.dtype, "real floating"), float(xp.finfo(x.dtype).eps)
(True, 2.220446049250313e-16)
"""

from __future__ import annotations

import sys
from typing import NamedTuple

import numpy as np

from ..core.backend import (_COMPLEX_OF, Device, as_dtype, backend_of, get_default_device,
                           get_default_dtype)
from ..core.creation import asarray, constant_data
from ..core.tensor import Tensor

__all__ = ["__array_api_version__", "__array_namespace_info__", "finfo", "iinfo", "isdtype",
           "result_type", "can_cast", "unique_all", "unique_counts", "unique_inverse",
           "unique_values", "searchsorted", "nonzero", "count_nonzero", "from_dlpack",
           "e", "pi", "inf", "nan", "newaxis", "install"]

__array_api_version__ = "2024.12"

# the standard's constants
e = float(np.e)
pi = float(np.pi)
inf = float("inf")
nan = float("nan")
newaxis = None
_VERSIONS = ("2021.12", "2022.12", "2023.12", "2024.12")


# ------------------------------------------------------------------------- data types
def _dtype(x):
    """The dtype of a Tensor, an array or a dtype-like."""
    if isinstance(x, Tensor) or hasattr(x, "dtype") and not isinstance(x, (type, np.dtype)):
        return x.dtype
    return as_dtype(x)


class finfo_object(NamedTuple):
    """Machine limits of a floating dtype, as Python numbers (the standard's form)."""

    bits: int
    eps: float
    max: float
    min: float
    smallest_normal: float
    dtype: np.dtype


class iinfo_object(NamedTuple):
    """Machine limits of an integer dtype, as Python numbers."""

    bits: int
    max: int
    min: int
    dtype: np.dtype


def finfo(type):  # noqa: A002  (the standard's parameter name)
    """Machine limits of a floating dtype (or of a Tensor's dtype): ``bits``, ``eps``,
    ``max``, ``min``, ``smallest_normal`` (Python numbers) and ``dtype`` (the real dtype of
    a complex one).

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.finfo(ndgrad.float32).bits
    32
    """
    f = np.finfo(_dtype(type))
    return finfo_object(int(f.bits), float(f.eps), float(f.max), float(f.min),
                        float(f.smallest_normal), f.dtype)


def iinfo(type):  # noqa: A002
    """Machine limits of an integer dtype (or of a Tensor's dtype): ``bits``, ``max``,
    ``min``, ``dtype``.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.iinfo(ndgrad.int8).max
    127
    """
    i = np.iinfo(_dtype(type))
    return iinfo_object(int(i.bits), int(i.max), int(i.min), i.dtype)


def isdtype(dtype, kind):
    """Whether ``dtype`` is of ``kind``: a dtype, one of "bool", "signed integer",
    "unsigned integer", "integral", "real floating", "complex floating", "numeric", or a
    tuple of those.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.isdtype(ndgrad.float32, ("integral", "real floating"))
    True
    """
    return np.isdtype(np.dtype(dtype), kind)


def result_type(*arrays_and_dtypes):
    """The dtype the standard's promotion rules give for Tensors, dtypes and Python
    scalars (a Python scalar takes the other operand's kind where it fits).

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.result_type(ndgrad.ones(2, dtype=ndgrad.float32), ndgrad.int8, 1.0)
    dtype('float32')
    """
    if not arrays_and_dtypes:
        raise ValueError("result_type() needs at least one array or dtype")
    args = [a if isinstance(a, (bool, int, float, complex)) else _dtype(a)
            for a in arrays_and_dtypes]
    return np.result_type(*args)


def can_cast(from_, to, /):
    """Whether a dtype (or a Tensor's dtype) casts to ``to`` under the standard's "safe"
    rules.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.can_cast(ndgrad.int8, ndgrad.float32)
    True
    >>> ndgrad.can_cast(ndgrad.float64, ndgrad.float32)
    False
    """
    return bool(np.can_cast(_dtype(from_), np.dtype(to)))


# ------------------------------------------------------------------------- inspection
class _Info:
    """The namespace's capabilities, devices and dtypes (the standard's inspection API)."""

    __module__ = "ndgrad"

    def capabilities(self):
        return {"boolean indexing": True, "data-dependent shapes": True, "max dimensions": 64}

    def default_device(self):
        return get_default_device()

    def devices(self):
        found = [Device("cpu")]
        cuda = sys.modules["ndgrad"].cuda
        if cuda.is_available():
            found += [Device("cuda", k) for k in range(cuda.device_count())]
        return found

    def default_dtypes(self, *, device=None):
        real = get_default_dtype()
        return {"real floating": real, "complex floating": _COMPLEX_OF[real],
                "integral": np.dtype("int64"), "indexing": np.dtype("int64")}

    def dtypes(self, *, device=None, kind=None):
        names = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                 "uint64", "float32", "float64", "complex64", "complex128"]
        table = {n: np.dtype(n) for n in names}
        if kind is None:
            return table
        return {n: d for n, d in table.items() if np.isdtype(d, kind)}


_INFO = _Info()


def __array_namespace_info__():
    """The inspection object: ``capabilities()``, ``default_device()``, ``devices()``,
    ``default_dtypes()``, ``dtypes()``.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.__array_namespace_info__().default_dtypes()["real floating"]
    dtype('float64')
    """
    return _INFO


# ------------------------------------------------------------- without a derivative
class UniqueAllResult(NamedTuple):
    values: Tensor
    indices: Tensor
    inverse_indices: Tensor
    counts: Tensor


class UniqueCountsResult(NamedTuple):
    values: Tensor
    counts: Tensor


class UniqueInverseResult(NamedTuple):
    values: Tensor
    inverse_indices: Tensor


def _unique(x, who, **flags):
    data, B = constant_data(x, who)
    out = B.unique(data.reshape(-1), equal_nan=False, **flags)
    return data, [asarray(o) for o in (out if isinstance(out, tuple) else (out,))]


def unique_all(x, /):
    """The unique values of ``x`` (flattened, sorted), the index of each one's first
    occurrence, the inverse indices (``x``'s shape) and the counts; no derivative.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.unique_all(ndgrad.tensor([2.0, 1.0, 2.0])).counts
    tensor([1, 2])
    """
    data, (values, indices, inverse, counts) = _unique(
        x, "unique_all", return_index=True, return_inverse=True, return_counts=True)
    return UniqueAllResult(values, indices, inverse.reshape(data.shape), counts)


def unique_counts(x, /):
    """The unique values of ``x`` and how often each occurs; no derivative.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.unique_counts(ndgrad.tensor([2, 1, 2])).values
    tensor([1, 2])
    """
    _, (values, counts) = _unique(x, "unique_counts", return_counts=True)
    return UniqueCountsResult(values, counts)


def unique_inverse(x, /):
    """The unique values of ``x`` and, for each element, the index of its value in them;
    no derivative.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.unique_inverse(ndgrad.tensor([2, 1, 2])).inverse_indices
    tensor([1, 0, 1])
    """
    data, (values, inverse) = _unique(x, "unique_inverse", return_inverse=True)
    return UniqueInverseResult(values, inverse.reshape(data.shape))


def unique_values(x, /):
    """The unique values of ``x``, sorted; no derivative.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.unique_values(ndgrad.tensor([3, 1, 3]))
    tensor([1, 3])
    """
    return _unique(x, "unique_values")[1][0]


def searchsorted(x1, x2, /, *, side="left", sorter=None):
    """Where the values of ``x2`` would be inserted into the sorted 1-D ``x1`` to keep it
    sorted (int64 indices); no derivative.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.searchsorted(ndgrad.tensor([1.0, 2.0, 3.0]), ndgrad.tensor([2.5, 0.0]))
    tensor([2, 0])
    """
    if side not in ("left", "right"):
        raise ValueError(f"searchsorted: side must be 'left' or 'right', got {side!r}")
    a, B = constant_data(x1, "searchsorted")
    v, _ = constant_data(x2, "searchsorted")
    s = None if sorter is None else constant_data(sorter, "searchsorted")[0]
    return asarray(B.searchsorted(a, v, side=side, sorter=s).astype("int64"))


def nonzero(x, /):
    """The indices of the nonzero elements of ``x``, one int64 Tensor per dimension; no
    derivative.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.nonzero(ndgrad.tensor([0.0, 2.0, 0.0, 1.0]))
    (tensor([1, 3]),)
    """
    data, B = constant_data(x, "nonzero")
    if data.ndim == 0:
        raise ValueError("nonzero: a 0-d tensor has no indices; use reshape(1) or atleast_1d")
    return tuple(asarray(i.astype("int64")) for i in B.nonzero(data))


def count_nonzero(x, /, *, axis=None, keepdims=False):
    """How many elements of ``x`` are nonzero, over ``axis`` (all by default); an int64
    Tensor, no derivative.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.count_nonzero(ndgrad.tensor([[0.0, 1.0], [2.0, 3.0]]), axis=1)
    tensor([1, 2])
    """
    data, _ = constant_data(x, "count_nonzero")
    return asarray((data != 0).sum(axis=axis, keepdims=keepdims).astype("int64"))


def from_dlpack(x, /, *, device=None, copy=None):
    """A Tensor sharing the memory of an object that supports DLPack (a NumPy or CuPy
    array, a Tensor of another library); it does not require grad.

    Examples
    --------
    >>> import numpy as np
    >>> import ndgrad
    >>> ndgrad.from_dlpack(np.arange(3.0))
    tensor([0., 1., 2.])
    """
    if isinstance(x, Tensor):
        return x.detach() if copy is not True else x.detach().clone()
    try:
        kwargs = {} if copy is None else {"copy": copy}
        data = np.from_dlpack(x, **kwargs)
    except (BufferError, RuntimeError, TypeError):
        B = backend_of(x) if hasattr(x, "__cuda_array_interface__") else None
        if B is None:
            raise
        data = B.from_dlpack(x)
    t = asarray(data)
    return t if device is None else t.to(device)


# --------------------------------------------------------------------------- protocol
def _array_namespace(self, /, *, api_version=None):
    """The ``ndgrad`` namespace (the array API standard's entry point)."""
    if api_version is not None and api_version not in _VERSIONS:
        raise ValueError(f"ndgrad implements the array API versions {', '.join(_VERSIONS)}; "
                         f"got api_version={api_version!r}")
    return sys.modules["ndgrad"]


def install(tensor_cls=Tensor):
    """Attach ``__array_namespace__`` to the Tensor class."""
    tensor_cls.__array_namespace__ = _array_namespace
