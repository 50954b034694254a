"""Backends, devices and dtypes.

This module owns everything ndgrad knows about the array libraries underneath it. A
:class:`Backend` exposes array-API-named functions on raw arrays (``B.exp``, ``B.sum``,
``B.matmul``, ...) plus the extras derivative formulas need (``scatter_add``, special
functions, a random generator). Nothing outside this module imports numpy (or, later, cupy)
for computation: everything else receives a Backend.

Only the NumPy backend (device ``"cpu"``) exists today. A CuPy backend plugs in by
subclassing :class:`Backend` and registering its array type with :func:`register_backend`;
:func:`backend_for_device` is where a ``"cuda"`` device string will be resolved.
"""

from __future__ import annotations

import threading

import numpy as np
import scipy.linalg
import scipy.special

__all__ = [
    "Backend", "NumpyBackend", "Device", "device", "NUMPY",
    "backend_of", "backend_for_device", "register_backend",
    "float16", "float32", "float64", "complex64", "complex128",
    "int8", "int16", "int32", "int64", "uint8", "bool_",
    "get_default_dtype", "set_default_dtype", "as_dtype",
    "is_floating", "is_complex", "is_differentiable_dtype",
]

# ----------------------------------------------------------------------------- dtypes
# ndgrad's dtypes are NumPy dtype objects: `t.dtype == ndgrad.float32` and
# `t.dtype == np.float32` both hold, and CuPy uses the same objects.
float16 = np.dtype("float16")
float32 = np.dtype("float32")
float64 = np.dtype("float64")
complex64 = np.dtype("complex64")
complex128 = np.dtype("complex128")
int8 = np.dtype("int8")
int16 = np.dtype("int16")
int32 = np.dtype("int32")
int64 = np.dtype("int64")
uint8 = np.dtype("uint8")
bool_ = np.dtype("bool")

_DTYPE_NAMES = {
    "float16": float16, "half": float16, "float32": float32, "float": float32,
    "float64": float64, "double": float64, "complex64": complex64,
    "complex128": complex128, "int8": int8, "int16": int16, "int32": int32,
    "int64": int64, "long": int64, "uint8": uint8, "bool": bool_,
}
_COMPLEX_OF = {float16: complex64, float32: complex64, float64: complex128}
_default_dtype = float64


def as_dtype(dtype):
    """Normalise ``dtype`` (an ndgrad/NumPy dtype, a scalar type or a name) to a dtype.

    Raises TypeError naming the value when it is not a dtype ndgrad supports.
    """
    if dtype is None:
        return None
    if isinstance(dtype, np.dtype):
        return dtype
    if isinstance(dtype, str) and dtype in _DTYPE_NAMES:
        return _DTYPE_NAMES[dtype]
    try:
        return np.dtype(dtype)
    except TypeError:
        raise TypeError(
            f"{dtype!r} is not a dtype; use one of ndgrad.float32, ndgrad.float64, "
            "ndgrad.complex128, ndgrad.int64, ndgrad.bool_, ... or a NumPy dtype"
        ) from None


def get_default_dtype():
    """Return the floating dtype that Python floats become (float64 unless changed).

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.get_default_dtype()
    dtype('float64')
    """
    return _default_dtype


def set_default_dtype(dtype):
    """Set the floating dtype that Python floats and float creation functions produce.

    Parameters
    ----------
    dtype : float16, float32 or float64

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.set_default_dtype(ndgrad.float32)
    >>> ndgrad.tensor([1.5]).dtype
    dtype('float32')
    >>> ndgrad.set_default_dtype(ndgrad.float64)
    """
    global _default_dtype
    d = as_dtype(dtype)
    if d.kind != "f":
        raise TypeError(
            f"set_default_dtype() expects a floating dtype (float16, float32, float64), got {d}"
        )
    _default_dtype = d


def default_complex_dtype():
    return _COMPLEX_OF.get(_default_dtype, complex128)


def is_floating(dtype) -> bool:
    return dtype.kind == "f"


def is_complex(dtype) -> bool:
    return dtype.kind == "c"


def is_differentiable_dtype(dtype) -> bool:
    """Only floating and complex tensors may require grad."""
    return dtype.kind in "fc"


# ----------------------------------------------------------------------------- devices
class Device:
    """A device: ``"cpu"`` or ``"cuda:N"``. Compares equal to its string form.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.device("cpu") == "cpu"
    True
    """

    __slots__ = ("type", "index")

    def __init__(self, type, index=None):
        if isinstance(type, Device):
            type, index = type.type, type.index
        elif isinstance(type, str) and ":" in type:
            type, _, idx = type.partition(":")
            if not idx.isdigit():
                raise ValueError(
                    f"invalid device string {type}:{idx!r}; expected 'cpu' or 'cuda:N'")
            index = int(idx)
        if type not in ("cpu", "cuda"):
            raise ValueError(f"unknown device type {type!r}; expected 'cpu' or 'cuda'")
        if type == "cuda" and index is None:
            index = 0
        self.type = type
        self.index = index

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __repr__(self):
        return f"device('{self}')"

    def __eq__(self, other):
        if isinstance(other, str):
            try:
                other = Device(other)
            except ValueError:
                return False
        if not isinstance(other, Device):
            return NotImplemented
        return self.type == other.type and self.index == other.index

    def __hash__(self):
        return hash((self.type, self.index))


device = Device
_CPU = Device("cpu")


# ----------------------------------------------------------------------------- backends
class Backend:
    """The interface every array library implements for ndgrad.

    Attributes hold the array library's array-API functions under their standard names
    (``exp``, ``sum``, ``matmul``, ``permute_dims``, ``concat``, ...). Subclasses add the
    extras below. ``F`` is the raw formula namespace for this backend (built by
    ``ndgrad.core.ops``): derivative formulas called with it run directly on arrays.
    """

    name = "abstract"
    array_type = None
    F = None  # set by ndgrad.core.ops once the registry is built

    def device_of(self, array) -> Device:  # pragma: no cover - interface
        raise NotImplementedError

    def asarray(self, data, dtype=None, device=None, copy=None):  # pragma: no cover
        raise NotImplementedError

    def scatter_add(self, target, index, values):  # pragma: no cover - interface
        """``target[index] += values`` with repeated indices accumulating, in place."""
        raise NotImplementedError

    def to_numpy(self, array):  # pragma: no cover - interface
        raise NotImplementedError

    def set_readonly(self, array):
        """Make writes to ``array`` raise, where the array library can (a cached constant)."""


class NumpyBackend(Backend):
    """The CPU backend over NumPy (and SciPy for special functions)."""

    name = "numpy"
    array_type = np.ndarray

    def __init__(self):
        # Copy NumPy's public callables onto the instance: `B.tanh` is then a plain
        # instance-dict lookup, as fast as `np.tanh`.
        for name in dir(np):
            # the class's own methods (asarray, ...) win over NumPy's same-named functions
            if not name.startswith("_") and not hasattr(type(self), name):
                try:
                    setattr(self, name, getattr(np, name))
                except AttributeError:  # pragma: no cover
                    pass
        self.special = scipy.special
        self.linalg = np.linalg
        self.fft = np.fft
        self.scipy_linalg = scipy.linalg  # triangular and Cholesky solves, expm
        self.ndarray = np.ndarray
        self._rng = threading.local()

    # -- devices and conversion
    def device_of(self, array):
        return _CPU

    def asarray(self, data, dtype=None, device=None, copy=None):
        """Array-API ``asarray``: ``copy`` True (always), False (never, or raise), None."""
        return np.asarray(data, dtype=dtype, copy=copy)

    def to_numpy(self, array):
        return array

    def scatter_add(self, target, index, values):
        np.add.at(target, index, values)
        return target

    def set_readonly(self, array):
        array.flags.writeable = False

    # -- random numbers: one Generator per thread, reseeded by manual_seed
    def generator(self):
        g = getattr(self._rng, "gen", None)
        if g is None:
            g = self._rng.gen = np.random.default_rng(_seed_state["seed"])
        return g

    def manual_seed(self, seed):
        self._rng.gen = np.random.default_rng(seed)


_seed_state = {"seed": None}

NUMPY = NumpyBackend()

# array type -> backend; `backend_of` is on the hot path, so it is one dict lookup.
_BACKEND_BY_TYPE = {np.ndarray: NUMPY}


def register_backend(array_type, backend):
    """Make arrays of ``array_type`` compute with ``backend`` (used by the CuPy backend)."""
    _BACKEND_BY_TYPE[array_type] = backend


def backend_of(array):
    """The backend that owns ``array`` (NumPy for Python scalars and NumPy scalars)."""
    return _BACKEND_BY_TYPE.get(type(array), NUMPY)


def cuda_device_count() -> int:
    """How many CUDA devices CuPy sees; 0 without CuPy, a driver or a GPU. CuPy is imported
    here, on first use, never when ndgrad is imported."""
    try:
        import cupy
    except Exception:  # noqa: BLE001 - not installed, or a broken CUDA installation
        return 0
    try:
        return int(cupy.cuda.runtime.getDeviceCount())
    except Exception:  # noqa: BLE001 - no driver / no device
        return 0


def backend_for_device(dev) -> Backend:
    """Resolve a device (string, :class:`Device` or None) to its backend."""
    if dev is None:
        return NUMPY
    dev = Device(dev)
    if dev.type == "cpu":
        return NUMPY
    raise RuntimeError(
        f"device {str(dev)!r} is not available: ndgrad's CUDA backend needs CuPy and a GPU. "
        'Install the extra with `pip install "ndgrad[cuda12]"` (or `[cuda13]`), or use '
        "device='cpu'."
    )
