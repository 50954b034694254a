"""Backends, devices and dtypes.

This module owns everything ndgrad knows about the array libraries underneath it. A
:class:`Backend` exposes array-API-named functions on raw arrays (``B.exp``, ``B.sum``,
``B.matmul``, ...) plus the extras derivative formulas need (``scatter_add``, special
functions, a random generator). This module is the only one that imports CuPy. NumPy is
imported by many modules (for dtypes and host-side values: indices, shapes, SciPy's host
routines, the NumPy protocols), but an op's forward and rules compute through the Backend
(``B``) and formula namespace (``F``) they are given, so they run on every backend.

Two backends live here: :data:`NUMPY` (device ``"cpu"``) and :class:`CupyBackend`
(``"cuda:N"``), made on first use of a CUDA device (Note [The CUDA backend]). Others are
plug-ins that register themselves (Note [Backend plug-ins]). :func:`backend_for_device`
resolves a device, :func:`backend_of` an array; the default
device (:func:`set_default_device`) is where creation functions put tensors when no device
is given.
"""

from __future__ import annotations

import contextlib
import copy
import importlib
import threading

import numpy as np

__all__ = [
    "Backend", "NumpyBackend", "CupyBackend", "Device", "device", "NUMPY", "Unsupported",
    "backend_of", "backend_for_device", "register_backend", "register_plugin",
    "find_backend", "install_cuda_backend",
    "get_default_device", "set_default_device",
    "float16", "float32", "float64", "complex64", "complex128",
    "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "bool_",
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
uint16 = np.dtype("uint16")
uint32 = np.dtype("uint32")
uint64 = np.dtype("uint64")
bool_ = np.dtype("bool")

_DTYPE_NAMES = {
    "float16": float16, "half": float16, "float32": float32, "float": float32,
    "float64": float64, "double": float64, "complex64": complex64,
    "complex128": complex128, "int8": int8, "int16": int16, "int32": int32,
    "int64": int64, "long": int64, "uint8": uint8, "uint16": uint16, "uint32": uint32,
    "uint64": uint64, "bool": bool_,
}
_COMPLEX_OF = {float16: complex64, float32: complex64, float64: complex128}
_default_dtype = float64

# Note [Differentiable dtypes]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Which dtypes may require grad is one set of dtype objects, DIFFERENTIABLE_DTYPES: the hot
# path tests `out.dtype in DIFFERENTIABLE_DTYPES` (a hash lookup, faster than reading
# `dtype.kind`). A dtype kind cannot decide it: bfloat16 (from ml_dtypes) has kind 'V', like
# a structured dtype. bfloat16 joins the set when it is first seen (`bfloat16()`, `as_dtype`,
# `is_differentiable_dtype`), so ml_dtypes is imported only by those who use it.
DIFFERENTIABLE_DTYPES = {float16, float32, float64, complex64, complex128,
                         np.dtype(np.longdouble), np.dtype(np.clongdouble)}
_FLOATING_DTYPES = {float16, float32, float64, np.dtype(np.longdouble)}


def bfloat16():
    """The bfloat16 dtype (from ml_dtypes; ``ndgrad.bfloat16`` calls this on first use).

    Raises a TypeError that says how to install ml_dtypes when it is missing.
    """
    try:
        import ml_dtypes
    except ImportError:
        raise TypeError("bfloat16 needs the ml_dtypes package: `pip install ml_dtypes`") from None
    d = np.dtype(ml_dtypes.bfloat16)
    _note_extension_dtype(d)
    return d


def _note_extension_dtype(d):
    """Make ml_dtypes' bfloat16 floating and differentiable (Note [Differentiable dtypes])."""
    if d.kind == "V" and d.name == "bfloat16" and d not in DIFFERENTIABLE_DTYPES:
        DIFFERENTIABLE_DTYPES.add(d)
        _FLOATING_DTYPES.add(d)
        WEAK_FLOAT_DTYPES.add(d)
        _COMPLEX_OF[d] = complex64
    return d


# ml_dtypes promotes `bfloat16 array * Python float` to float32: NumPy 2's weak Python
# scalars (NEP 50) are not applied to its dtypes. dispatch.apply casts a Python float to the
# array's dtype for the dtypes in this set (empty until bfloat16 is first seen), so bfloat16
# stays bfloat16, as float16 does and as in PyTorch.
WEAK_FLOAT_DTYPES = set()


def as_dtype(dtype):
    """Normalise ``dtype`` (an ndgrad/NumPy dtype, a scalar type or a name) to a dtype.

    Raises TypeError naming the value when it is not a dtype ndgrad supports.
    """
    if dtype is None:
        return None
    if isinstance(dtype, np.dtype):
        return dtype if dtype.kind != "V" else _note_extension_dtype(dtype)
    if isinstance(dtype, str) and dtype in _DTYPE_NAMES:
        return _DTYPE_NAMES[dtype]
    if isinstance(dtype, str) and dtype == "bfloat16":
        return bfloat16()
    try:
        return _note_extension_dtype(np.dtype(dtype))
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
    if d not in _FLOATING_DTYPES:
        raise TypeError(
            f"set_default_dtype() expects a floating dtype (float16, float32, float64), got {d}"
        )
    _default_dtype = d


def default_complex_dtype():
    return _COMPLEX_OF.get(_default_dtype, complex128)


def is_floating(dtype) -> bool:
    """Real floating dtypes: float16/32/64, longdouble, bfloat16."""
    return dtype in _FLOATING_DTYPES or (dtype.kind == "V" and
                                         _note_extension_dtype(dtype) in _FLOATING_DTYPES)


def is_complex(dtype) -> bool:
    return dtype.kind == "c"


def is_differentiable_dtype(dtype) -> bool:
    """Only floating and complex tensors may require grad (Note [Differentiable dtypes])."""
    return dtype in DIFFERENTIABLE_DTYPES or (
        dtype.kind == "V" and _note_extension_dtype(dtype) in DIFFERENTIABLE_DTYPES)


# ----------------------------------------------------------------------------- devices
class Device:
    """A device: ``"cpu"``, ``"cuda:N"`` or one a plug-in backend registers (``"dask"``:
    Note [Backend plug-ins]). Compares equal to its string form.

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
        if type not in _DEVICE_TYPES:
            known = ", ".join(repr(t) for t in _DEVICE_TYPES)
            raise ValueError(f"unknown device type {type!r}; expected one of {known}")
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
_DEVICE_TYPES = {"cpu": None, "cuda": None}  # device type -> plug-in making its backend
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
    # What a backend whose arrays are graphs computed later differs in (Note [Backend
    # plug-ins]); the kernel and the ops ask these, never which backend it is.
    reads_values = True  # an op may read values on the host (False: it must not compute)
    adds_in_place = True  # `out[index] += values` for a basic index (else B.scatter_add)
    takes_host_arrays = False  # NumPy arrays mix in as constants (Note [Mixing devices])
    deferred_gradients = False  # a leaf's gradient of this backend is finished by B.compute
    stand_ins = False  # B.stand_in: what a metadata-only node saves for an input
    host_indices = False  # index arrays stay NumPy arrays (core/ops/indexing.on_device)
    F = None  # set by ndgrad.core.ops once the registry is built

    def device_of(self, array) -> Device:  # pragma: no cover - interface
        raise NotImplementedError

    def asarray(self, data, dtype=None, device=None, copy=None):  # pragma: no cover
        raise NotImplementedError

    def on(self, device):
        """A context manager under which this backend's creation functions (``zeros``, ...)
        allocate on ``device``."""
        return _NO_CONTEXT

    def assign(self, out, index, values):
        """``out[index] = values``; where ``index`` repeats a position, the last value
        written there stays (NumPy's order)."""
        out[index] = values

    def scatter_add(self, target, index, values):  # pragma: no cover - interface
        """``target[index] += values`` with repeated indices accumulating, in place."""
        raise NotImplementedError

    def to_numpy(self, array):  # pragma: no cover - interface
        """``array`` as a NumPy array (a copy unless it already is host memory)."""
        raise NotImplementedError

    def set_readonly(self, array):
        """Make writes to ``array`` raise, where the array library can (a cached constant)."""

    def compute(self, *arrays, **kwargs):
        """NumPy arrays of ``arrays`` (a backend with ``deferred_gradients``: in one pass)."""
        return tuple(self.to_numpy(a) for a in arrays)

    def stand_in(self, array):
        """What a node whose rules read only metadata saves for input ``array`` (a backend
        with ``stand_ins``; an ``InputMeta``-like object), or None for nothing."""
        return None

    def summary(self, array):
        """A tensor's repr body where values are not read (``reads_values`` False)."""
        return f"<shape={tuple(array.shape)}>"

    def unsupported(self, label, hint="", *, why=None):
        """The error for function ``label`` this backend cannot run (Note [Backend
        plug-ins]); ``dispatch.apply`` names the ndgrad function."""
        return Unsupported(self.name, label, hint, why=why)

    def elementwise_fusion(self):
        """``(fuse, fusable)`` where the backend fuses chains of elementwise functions into
        one kernel, else None: ``fuse(f, name)`` makes ``f`` (which calls only functions
        for which ``fusable(fn)`` holds, on the backend's arrays and scalars) one kernel.
        Compiled programs use it (Note [Fused kernels] in functional/program.py)."""
        return None

    def rng_state(self):
        """A snapshot of this thread's random generator (``set_rng_state`` brings it back),
        or None when this thread has drawn nothing from this backend yet."""
        g = getattr(self._rng, "gen", None)
        if g is None:
            return None
        try:
            return copy.deepcopy(g)
        except Exception as exc:  # noqa: BLE001 - the array library's generator refuses
            raise RuntimeError(
                f"the {self.name} random generator cannot be copied ({exc}), so its state "
                "cannot be replayed; pass preserve_rng_state=False (random draws in the "
                "recomputation then differ from the forward's)") from None

    def set_rng_state(self, state):
        """Make this thread's generator continue from snapshot ``state`` (a copy of it)."""
        self._rng.gen = None if state is None else copy.deepcopy(state)

    # -- profiling (ndgrad.autograd.profiler; Note [Profiling] in core/grad_mode.py)
    def record_event(self):
        """A device event recorded now, in the order of the device's work, to time that work
        (``elapsed_ms`` of two of them); None where there is no device clock (the CPU)."""
        return None

    def elapsed_ms(self, start, end):
        """Device milliseconds between two events of :meth:`record_event`, once ``end`` has
        happened (this waits for it)."""
        raise NotImplementedError(f"the {self.name} backend has no device events")


_NO_CONTEXT = contextlib.nullcontext()


class _OnFirstUse:
    """A module imported on first attribute access (``import ndgrad`` loads no SciPy: it
    costs more than the rest of ndgrad's import). Each name read is kept on the instance, so
    later reads are plain attribute lookups."""

    def __init__(self, name):
        self._name = name
        self._module = None

    def _imported(self):
        """The module itself (imported now, if it was not yet)."""
        module = self._module
        if module is None:
            module = self._module = importlib.import_module(self._name)
        return module

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        value = getattr(self._imported(), attr)
        setattr(self, attr, value)
        return value

    def __repr__(self):
        return f"<{self._name}, imported on first use>"


SCIPY_SPECIAL = _OnFirstUse("scipy.special")
SCIPY_LINALG = _OnFirstUse("scipy.linalg")


class NumpyBackend(Backend):
    """The CPU backend over NumPy (and SciPy for special functions)."""

    name = "numpy"
    array_type = np.ndarray

    def __init__(self):
        # Copy NumPy's public callables onto the instance: `B.tanh` is then a plain
        # instance-dict lookup, as fast as `np.tanh`.
        for name, value in vars(np).items():
            # the class's own methods (asarray, ...) win over NumPy's same-named functions;
            # (vars, not getattr: reading NumPy's on-demand submodules imports f2py, testing, ...)
            if not name.startswith("_") and not hasattr(type(self), name):
                setattr(self, name, value)
        self.special = SCIPY_SPECIAL
        self.linalg = np.linalg
        self.fft = np.fft
        self.scipy_linalg = SCIPY_LINALG  # triangular and Cholesky solves, expm
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
# Called with each backend registered after ndgrad.core.ops was built (it gives it its F).
_ON_REGISTER = []


# Note [Backend plug-ins]
# ~~~~~~~~~~~~~~~~~~~~~~~
# This module owns the registry of backends, keyed by array type (`_BACKEND_BY_TYPE`), and
# names no backend but NumPy and CuPy, which it defines. Another backend is a plug-in: its
# module defines a Backend subclass and calls `register_backend(array_type, B)` when it is
# imported. A plug-in that must not be imported with ndgrad (it imports its array library)
# registers a finder instead, from a light module the package does import:
# `register_plugin(device_type, find)`; `find(array_type)` makes and returns the backend
# (importing the plug-in) for an array type it owns, else None, and `find(None)` makes it for
# its device type. `find_backend` asks the finders only on a registry miss (an array of an
# unknown type reaching `asarray`), so importing ndgrad imports no array library and a
# registered type costs one dict lookup. The Dask backend is one (core/lazy.py registers its
# finder, which imports core/backend_dask.py only for an array whose module is Dask's: Dask
# is then imported already; or for device='dask').
# What such a backend does differently is backend attributes and hooks that the kernel and the
# ops read without naming it: `reads_values` (False: an op must not read values on the host;
# it raises `B.unsupported(...)`, an `Unsupported` that `dispatch.apply` completes with the
# ndgrad function's name), `adds_in_place`, `takes_host_arrays` (NumPy arrays mix in as
# constants), `deferred_gradients` (a leaf's gradient finished by `B.compute` when the
# backward pass ends: Note [Deferred gradients] in core/accumulate.py), `stand_ins` with
# `B.stand_in` (what a metadata-only node saves), `summary` (a repr that reads no values).
_FINDERS = []  # find(array_type or None) -> Backend or None, in registration order


def register_backend(array_type, backend):
    """Make arrays of ``array_type`` compute with ``backend`` (Note [Backend plug-ins])."""
    _BACKEND_BY_TYPE[array_type] = backend
    if backend.stand_ins:
        _STAND_INS["on"] = True
    for hook in _ON_REGISTER:
        hook(backend)


def register_plugin(device_type, find):
    """Register a backend plug-in's finder for ``device_type`` (Note [Backend plug-ins]):
    ``find(array_type)`` gives the backend for arrays of an unregistered type it owns (made
    and registered then), else None; ``find(None)`` the backend of its device type."""
    _DEVICE_TYPES[device_type] = find
    _FINDERS.append(find)


def find_backend(array_type):
    """The backend of arrays of ``array_type``, asking the plug-ins' finders on a registry
    miss (None: no backend owns it)."""
    B = _BACKEND_BY_TYPE.get(array_type)
    if B is None:
        for find in _FINDERS:
            B = find(array_type)
            if B is not None:
                break
    return B


# Set once a backend with stand-ins is registered: `graph.record` asks only then.
_STAND_INS = {"on": False}


class Unsupported(NotImplementedError):
    """A function a backend cannot run (Note [Backend plug-ins]). ``apply`` names the ndgrad
    function that needed it (:meth:`for_op`), and a composite the one the user called (the
    primitive inside stays named, ``via``). ``why``: the reason, when it is not a function the
    array library lacks (a result whose shape depends on the values)."""

    def __init__(self, backend, label, hint="", op=None, *, why=None, via=None):
        self.backend, self.label, self.hint, self.op, self.why, self.via = \
            backend, label, hint, op, why, via
        super().__init__(self.message())

    def message(self):
        needed = f"ndgrad.{self.op}" if self.op is not None else "this operation"
        if self.via is not None:
            needed += f" (through ndgrad.{self.via})"
        reason = self.why if self.why is not None else f"{self.backend} has no {self.label}"
        return (f"{needed} cannot run on {self.backend} arrays: {reason}"
                f"{' (' + self.hint + ')' if self.hint else ''}. Compute the tensor first")

    def for_op(self, qualname):
        """The same error naming the ndgrad function ``qualname`` (the one named before, if
        another, as the function it went through)."""
        via = self.via if self.via is not None else (
            self.op if self.op not in (None, qualname) else None)
        return type(self)(self.backend, self.label, self.hint, qualname, why=self.why, via=via)


def backend_of(array):
    """The backend that owns ``array`` (NumPy for Python scalars and NumPy scalars)."""
    return _BACKEND_BY_TYPE.get(type(array), NUMPY)


# ----------------------------------------------------------------------------- CUDA
# Note [The CUDA backend]
# ~~~~~~~~~~~~~~~~~~~~~~~
# CuPy is imported in this module only, and only on first use of a CUDA device
# (`device="cuda"`, `.cuda()`, `ndgrad.cuda.*`): importing ndgrad never imports it, and a
# machine without it works as before. `CupyBackend` receives the `cupy` and `cupyx` modules
# as arguments rather than importing them, so the test suite can hand it a NumPy-backed
# stand-in with CuPy's API (tests/emulated_cupy.py) and run every CUDA code path on machines
# without a GPU; `install_cuda_backend` is how it does.
#
# Where CuPy lacks a function ndgrad's formulas call (`errstate`, `vecdot`,
# `linalg.vector_norm`), the backend defines it on the device. Any other missing function
# (a SciPy special function or linalg routine CuPy does not have) runs on the host: its array
# arguments are copied to NumPy, the NumPy/SciPy function runs, and array results are copied
# back. Such calls are correct but slow; `CupyBackend.host_fallbacks` records their names.
#
# Where CuPy has the function but not NumPy's (or SciPy's) contract, the backend gives it
# that contract (Note [CuPy is not NumPy]); tests/emulated_cupy.py reproduces each of these
# differences, so the suite's emulated device catches them without a GPU.
#
# Devices: a CuPy array knows its device (`a.device.id`). Creation functions allocate under
# `B.on(device)`; operations run where CuPy runs them, on its current device, which is the
# device of their inputs unless the user switched it (`ndgrad.cuda.device(n)`). Tensors on
# two different devices in one op are an error that names both, and 0-d CPU tensors move to
# the device of the others (Note [Mixing devices] in core/devices.py).
_CUDA = {"backend": None}


# Note [CuPy is not NumPy]
# ~~~~~~~~~~~~~~~~~~~~~~~~
# CuPy 14.2 differs from NumPy 2 / SciPy where ndgrad's formulas rely on them; the CUDA
# backend restores NumPy's contract (the methods above), and tests/emulated_cupy.py reproduces
# each difference (its Note [What the emulation reproduces]):
# * keywords: `max`/`min` have no `initial`; `linalg.cholesky` no `upper`; `linalg.pinv` is
#   `pinv(a, rcond=1e-15)` (no `rtol`, no `hermitian`); `linalg.matrix_rank(M, tol)`.
# * batching: `linalg.solve`, `linalg.cross` and `cupyx.scipy.linalg.solve_triangular` do not
#   broadcast; `cupyx.scipy.linalg.expm` takes one matrix.
# * arguments: `where` needs an array condition, `cupyx.scipy.special.polygamma` an array
#   order; `tensordot` of a 0-d operand needs `axes` as a pair of tuples; `zeta` is the
#   Hurwitz function only; `erf`, `erfc`, `erfcx`, `ndtr`, `log_ndtr`, ... take no complex
#   input (the complex case runs on the host); `scatter_add` has no complex atomic add.
# * errors: cuSOLVER's status is not checked, so singular matrices do not raise (see
#   docs/devices.rst); `asarray` of object data is a ValueError in CuPy (a TypeError here, as
#   on the CPU).
# * layout: host data is copied C-ordered and copied back C-ordered unless asked otherwise.
_NOVALUE = object()
_FFT_ND = ("fftn", "ifftn", "rfftn", "irfftn", "fft2", "ifft2", "rfft2", "irfft2")
_ATOMIC_ADD = {np.dtype(t) for t in ("int32", "int64", "float16", "float32", "float64",
                                     "uint32", "uint64")}


def _inexact(dtype):
    return dtype if dtype.kind in "fc" else np.dtype(np.float64)


def _broadcast_batch(cp, a, b):
    """``a`` (..., m, m) and ``b`` (..., m, k) broadcast to a common batch shape."""
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    return (cp.broadcast_to(a, batch + a.shape[-2:]), cp.broadcast_to(b, batch + b.shape[-2:]))


def _complex_on_host(B, f, host, label):
    """CuPy ufunc ``f`` without complex loops: complex arguments run ``host`` (SciPy's) on
    the host instead of raising."""
    if any(c in "FD" for t in f.types for c in t.partition("->")[0]):
        return f
    on_host = _on_host(B, host, label)

    def call(*args, **kwargs):
        for a in args:
            if isinstance(a, complex) or getattr(getattr(a, "dtype", None), "kind", "") == "c":
                return on_host(*args, **kwargs)
        return f(*args, **kwargs)

    call.__name__ = getattr(f, "__name__", label)
    return call


def vector_norm_of(xp, x, axis=None, keepdims=False, ord=2):
    """``numpy.linalg.vector_norm`` written with array module ``xp``'s reductions (for the
    libraries that have none: CuPy, Dask)."""
    a = xp.abs(x)
    if ord == 2:
        return xp.sqrt(xp.sum(a * a, axis=axis, keepdims=keepdims))
    if ord == float("inf"):
        return xp.max(a, axis=axis, keepdims=keepdims)
    if ord == -float("inf"):
        return xp.min(a, axis=axis, keepdims=keepdims)
    if ord == 0:
        return xp.sum(a != 0, axis=axis, keepdims=keepdims).astype(a.dtype)
    if ord == 1:
        return xp.sum(a, axis=axis, keepdims=keepdims)
    return xp.sum(a ** ord, axis=axis, keepdims=keepdims) ** (1.0 / ord)


class CupyBackend(Backend):
    """The CUDA backend over CuPy (and cupyx.scipy for special functions and linalg).

    Parameters
    ----------
    cupy, cupyx : modules
        CuPy's two modules (or stand-ins with their API; Note [The CUDA backend]).
    """

    name = "cupy"

    def __init__(self, cupy, cupyx):
        self._cp = cupy
        self._cpx = cupyx
        for name in dir(cupy):
            # (cupy.testing would import pytest: not a computation, never loaded here)
            if not name.startswith("_") and name != "testing" and not hasattr(type(self), name):
                try:
                    setattr(self, name, getattr(cupy, name))
                except Exception:  # noqa: BLE001 - a lazily loaded submodule that fails
                    pass
        self.array_type = self.ndarray = cupy.ndarray
        self.host_fallbacks = set()
        on_host = self._host_function
        self.linalg = SubNamespace("linalg", lambda: cupy.linalg, np.linalg, on_host,
                                   vector_norm=self._vector_norm, solve=self._solve,
                                   cholesky=self._cholesky, pinv=self._pinv,
                                   matrix_rank=self._matrix_rank, cross=self._cross)
        self.fft = SubNamespace("fft", lambda: cupy.fft, np.fft, on_host,
                                rfft=self._rfft_1d(False), irfft=self._rfft_1d(True),
                                **{name: self._fft_nd(name) for name in _FFT_ND})
        self.special = SubNamespace("special", lambda: _import(cupyx, "scipy.special"),
                                    SCIPY_SPECIAL, on_host, self._special_on_device,
                                    zeta=self._zeta, polygamma=self._polygamma)
        self.scipy_linalg = SubNamespace("scipy_linalg", lambda: _import(cupyx, "scipy.linalg"),
                                         SCIPY_LINALG, on_host, expm=self._expm,
                                         solve_triangular=self._solve_triangular)
        self._rng = threading.local()
        self._devices = {}

    def _host_function(self, label, f):
        """NumPy's or SciPy's ``f``, for a name CuPy lacks: run on the host."""
        return _on_host(self, f, label) if callable(f) and not isinstance(f, type) else f

    def _special_on_device(self, label, name, f):
        """CuPy's special ufunc ``f``; complex arguments go to SciPy's on the host when it
        has no complex loop."""
        if hasattr(f, "types") and hasattr(f, "nin"):
            return _complex_on_host(self, f, getattr(SCIPY_SPECIAL, name), f"{label}(complex)")
        return f

    def __getattr__(self, name):
        # Only reached for names CuPy lacks (instance attributes win): run NumPy's on the host.
        if name.startswith("_") or not callable(getattr(np, name, None)):
            raise AttributeError(f"the CuPy backend has no {name!r}")
        f = _on_host(self, getattr(np, name), name)
        setattr(self, name, f)
        return f

    def elementwise_fusion(self):
        """``cupy.fuse`` over CuPy's ufuncs (Note [Fused kernels] in functional/program.py)."""
        fuse = getattr(self._cp, "fuse", None)
        ufunc = getattr(self._cp, "ufunc", None)
        if fuse is None or not isinstance(ufunc, type):
            return None
        return (lambda f, name: fuse(kernel_name=name)(f)), (lambda fn: isinstance(fn, ufunc))

    # -- functions CuPy lacks, on the device
    def errstate(self, **kwargs):
        """CuPy does not report floating-point errors: nothing to silence."""
        return _NO_CONTEXT

    def vecdot(self, x1, x2, axis=-1):
        return (self._cp.conj(x1) * x2).sum(axis=axis)

    def _vector_norm(self, x, axis=None, keepdims=False, ord=2):
        return vector_norm_of(self._cp, x, axis, keepdims, ord)

    # -- NumPy's contract where CuPy's differs (Note [CuPy is not NumPy])
    def where(self, condition, x=None, y=None):
        """``numpy.where``: CuPy's needs an array condition (a Python bool has no
        ``astype``)."""
        cp = self._cp
        if not isinstance(condition, cp.ndarray):
            condition = cp.asarray(condition)
        if x is None and y is None:
            return cp.where(condition)
        return cp.where(condition, x, y)

    def max(self, a, axis=None, out=None, keepdims=False, initial=_NOVALUE):
        """``numpy.max`` with ``initial`` (CuPy's has none)."""
        return self._extremum(self._cp.max, self._cp.maximum, a, axis, out, keepdims, initial)

    def min(self, a, axis=None, out=None, keepdims=False, initial=_NOVALUE):
        """``numpy.min`` with ``initial`` (CuPy's has none)."""
        return self._extremum(self._cp.min, self._cp.minimum, a, axis, out, keepdims, initial)

    amax, amin = max, min

    def _extremum(self, reduce, combine, a, axis, out, keepdims, initial):
        if initial is _NOVALUE:
            return reduce(a, axis=axis, out=out, keepdims=keepdims)
        cp = self._cp
        axes = tuple(range(a.ndim)) if axis is None else \
            tuple(k % a.ndim for k in ((axis,) if isinstance(axis, int) else axis))
        if any(a.shape[k] == 0 for k in axes):  # an empty reduction is `initial`
            shape = tuple(1 if k in axes else n for k, n in enumerate(a.shape)) if keepdims \
                else tuple(n for k, n in enumerate(a.shape) if k not in axes)
            r = cp.full(shape, initial, dtype=a.dtype)
        else:
            r = combine(reduce(a, axis=axis, keepdims=keepdims), initial)
        if out is not None:
            out[...] = r
            return out
        return r

    def tensordot(self, a, b, axes=2):
        """``numpy.tensordot``: CuPy's takes a pair of *tuples* of axes for 0-d operands."""
        if isinstance(axes, (list, tuple)):
            axes = tuple(tuple(ax) if isinstance(ax, (list, tuple)) else ax for ax in axes)
        return self._cp.tensordot(a, b, axes)

    def remainder(self, x1, x2, out=None):
        """``numpy.remainder``: CuPy's float remainder loses all precision when the quotient
        is huge (``remainder(1e300, 7.0)`` is not 1). C's ``fmod`` is exact; the sign of the
        divisor is then given as NumPy does."""
        cp = self._cp
        if cp.result_type(x1, x2).kind != "f":
            return cp.remainder(x1, x2) if out is None else cp.remainder(x1, x2, out=out)
        m = cp.fmod(x1, x2)
        r = cp.where((m != 0) & ((m < 0) != (cp.asarray(x2) < 0)), m + x2, m)
        if out is None:
            return r
        out[...] = r
        return out

    mod = remainder

    def lexsort(self, keys, axis=-1):
        """``numpy.lexsort``: CuPy's takes the keys as one array, not a sequence of them."""
        cp = self._cp
        if not isinstance(keys, cp.ndarray):
            keys = cp.stack([cp.asarray(k) for k in keys])
        # CuPy sorts along the keys' last axis: move ``axis`` there and the result back
        axis = axis % (keys.ndim - 1)
        order = cp.lexsort(cp.moveaxis(keys, axis + 1, -1))
        return cp.moveaxis(order, -1, axis)

    def allclose(self, a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
        """``numpy.allclose``: a Python bool (CuPy's is a 0-d array)."""
        return bool(self._cp.allclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan))

    def array_equal(self, a1, a2, equal_nan=False):
        """``numpy.array_equal``: a Python bool (CuPy's is a 0-d array)."""
        return bool(self._cp.array_equal(a1, a2, equal_nan=equal_nan))

    def array_equiv(self, a1, a2):
        """``numpy.array_equiv``: a Python bool; CuPy has none."""
        cp = self._cp
        a1, a2 = cp.asarray(a1), cp.asarray(a2)
        try:
            a1, a2 = cp.broadcast_arrays(a1, a2)
        except ValueError:
            return False
        return bool(cp.all(a1 == a2))

    def assign(self, out, index, values):
        """``out[index] = values`` where a repeated position keeps the *last* value written
        (NumPy's order). CuPy's scatter writes repeated positions in no defined order, so
        the overwritten writes are dropped first."""
        cp = self._cp
        parts = index if isinstance(index, tuple) else (index,)
        if not any(isinstance(p, cp.ndarray) and p.dtype.kind in "iu" and p.size > 1
                   for p in parts):
            out[index] = values
            return
        pos = cp.arange(out.size).reshape(out.shape)[index]
        flat = pos.reshape(-1)
        _, first_from_end = cp.unique(flat[::-1], return_index=True)
        if first_from_end.size == flat.size:
            out[index] = values
            return
        keep = flat.size - 1 - first_from_end
        v = cp.broadcast_to(cp.asarray(values, dtype=out.dtype), pos.shape).reshape(-1)
        out[cp.unravel_index(flat[keep], out.shape)] = v[keep]

    def _rfft_1d(self, inverse):
        """``numpy.fft.rfft`` / ``irfft``: cuFFT's real transforms of length 1 are wrong (an
        ``irfft`` with ``n=1`` is not the first coefficient's real part); a length-1
        transform is that first entry, under every ``norm``."""
        cp = self._cp
        native = cp.fft.irfft if inverse else cp.fft.rfft

        def transform(a, n=None, axis=-1, norm=None, **kwargs):
            if (n if n is not None else (None if inverse else a.shape[axis])) != 1 or kwargs:
                return native(a, n=n, axis=axis, norm=norm, **kwargs)
            first = cp.take(a, cp.arange(min(1, a.shape[axis])), axis=axis)
            if first.shape[axis] == 0:
                shape = list(a.shape)
                shape[axis] = 1
                first = cp.zeros(shape, dtype=a.dtype)
            if inverse:
                return first.real.astype(_inexact(first.real.dtype))
            return first.astype(np.result_type(_inexact(first.dtype), np.complex64))

        transform.__name__ = "irfft" if inverse else "rfft"
        return transform

    def _fft_nd(self, name):
        """``numpy.fft.<name>`` for n-dimensional transforms: CuPy's pairs ``s`` with the
        wrong axes when ``axes`` are not in increasing order (``rfftn(x, s=(1, 2), axes=(1,
        0))`` has the wrong shape), and cuFFT's real transforms of length 1 are wrong. Those
        cases run as NumPy defines them, one axis at a time (the real axis last for
        ``rfftn``, first for ``irfftn``)."""
        cp_fft = self._cp.fft
        native = getattr(cp_fft, name)
        real = name.lstrip("i").startswith("r")
        inverse = name.startswith("i")
        two = name.endswith("2")

        def transform(a, s=None, axes=(-2, -1) if two else None, norm=None, **kwargs):
            if kwargs or (axes is None and s is None):
                return native(a, s=s, axes=axes, norm=norm, **kwargs)
            nd = a.ndim
            axes = list(range(nd - len(s), nd)) if axes is None else [ax % nd for ax in axes]
            s = [None] * len(axes) if s is None else [None if n == -1 else n for n in s]
            n_real = None
            if real and axes:
                n_real = s[-1] if s[-1] is not None else \
                    (2 * (a.shape[axes[-1]] - 1) if inverse else a.shape[axes[-1]])
            if n_real != 1 and all(i < j for i, j in zip(axes, axes[1:])):
                if all(n is None for n in s):
                    return native(a, axes=tuple(axes), norm=norm)
                full = [a.shape[ax] if n is None else n for ax, n in zip(axes, s)]
                if real:
                    full[-1] = n_real
                return native(a, s=tuple(full), axes=tuple(axes), norm=norm)
            one = self.fft.ifft if inverse else self.fft.fft
            if real and inverse:  # complex inverse on all but the last axis, then irfft
                for ax, n in zip(axes[:-1], s[:-1]):
                    a = one(a, n=n, axis=ax, norm=norm)
                return self.fft.irfft(a, n=n_real, axis=axes[-1], norm=norm)
            if real:  # rfft on the last axis, then the complex transform on the others
                a = self.fft.rfft(a, n=s[-1], axis=axes[-1], norm=norm)
                axes, s = axes[:-1], s[:-1]
            for ax, n in zip(reversed(axes), reversed(s)):
                a = one(a, n=n, axis=ax, norm=norm)
            return a

        transform.__name__ = name
        return transform

    def _solve(self, a, b):
        """``numpy.linalg.solve``: CuPy's does not broadcast the batch dimensions of a stack
        of matrices ``b``."""
        cp = self._cp
        if b.ndim >= 2 and a.shape[:-2] != b.shape[:-2]:
            a, b = _broadcast_batch(cp, a, b)
        return cp.linalg.solve(a, b)

    def _cholesky(self, a, upper=False):
        """``numpy.linalg.cholesky`` with ``upper``. cuSOLVER's status is not checked (that
        would wait for the GPU), and a failed factorization leaves a partial factor: it is
        replaced by NaN, as a singular ``solve`` or ``inv`` gives non-finite values
        (docs/devices.rst)."""
        cp = self._cp
        L = cp.linalg.cholesky(a)
        d = cp.diagonal(L, axis1=-2, axis2=-1).real
        L = cp.where(~cp.all(d > 0, axis=-1)[..., None, None], cp.nan, L)  # (NaN > 0 is false)
        if upper:
            L = cp.swapaxes(L, -1, -2)
            return cp.conj(L) if L.dtype.kind == "c" else L
        return L

    def _pinv(self, a, rcond=None, hermitian=False, *, rtol=_NOVALUE):
        """``numpy.linalg.pinv`` (NumPy 2's ``rtol``) through CuPy's ``pinv(a, rcond)``;
        ``hermitian`` only selects an algorithm in NumPy, the SVD gives the same result."""
        if rcond is None:
            if rtol is _NOVALUE:
                rcond = 1e-15
            elif rtol is None:
                rcond = max(a.shape[-2:]) * np.finfo(_inexact(a.dtype)).eps
            else:
                rcond = rtol
        elif rtol is not _NOVALUE:
            raise ValueError("`rtol` and `rcond` can't be both set.")
        return self._cp.linalg.pinv(a, rcond=rcond)

    def _matrix_rank(self, A, tol=None, hermitian=False, *, rtol=None):
        """``numpy.linalg.matrix_rank`` (NumPy 2: ``hermitian``, ``rtol``, stacks)."""
        cp = self._cp
        if rtol is not None and tol is not None:
            raise ValueError("`tol` and `rtol` can't be both set.")
        if A.ndim < 2:
            return int(not bool(cp.all(A == 0)))
        S = cp.abs(cp.linalg.eigvalsh(A)) if hermitian else cp.linalg.svd(A, compute_uv=False)
        if tol is None:
            if rtol is None:
                rtol = max(A.shape[-2:]) * np.finfo(S.dtype).eps
            else:
                rtol = cp.asarray(rtol)[..., None]
            tol = S.max(axis=-1, keepdims=True) * rtol
        else:
            tol = cp.asarray(tol)[..., None]
        return cp.count_nonzero(S > tol, axis=-1)

    def _cross(self, x1, x2, axis=-1):
        """``numpy.linalg.cross``: CuPy's needs operands of equal shapes (no broadcasting)."""
        cp = self._cp
        if x1.shape != x2.shape:
            x1, x2 = cp.broadcast_arrays(x1, x2)
        return cp.linalg.cross(x1, x2, axis=axis)

    def _zeta(self, x, q=None, out=None):
        """``scipy.special.zeta``: CuPy's is the Hurwitz function only (two arguments). The
        Riemann function is the Hurwitz one at ``q = 1`` for ``x >= 1``; its continuation to
        ``x < 1`` runs on the host (SciPy)."""
        f = _import(self._cpx, "scipy.special").zeta
        if q is not None:
            return f(x, q) if out is None else f(x, q, out)
        cp = self._cp
        xa = x if isinstance(x, cp.ndarray) else cp.asarray(x)
        if bool(cp.any(xa < 1)):
            r = _on_host(self, SCIPY_SPECIAL.zeta, "special.zeta")(xa)
        else:
            r = f(xa, 1.0)
        if out is not None:
            out[...] = r
            return out
        return r

    def _polygamma(self, n, x):
        """``scipy.special.polygamma``: CuPy's needs an array order ``n`` (with a Python
        int, ``n == 0`` is a bool, which its ``where`` refuses)."""
        cp = self._cp
        n = n if isinstance(n, cp.ndarray) else cp.asarray(n)
        x = x if isinstance(x, cp.ndarray) else cp.asarray(x)
        return _import(self._cpx, "scipy.special").polygamma(n, x)

    def _expm(self, a):
        """``scipy.linalg.expm``, batched: CuPy's takes one matrix."""
        f = _import(self._cpx, "scipy.linalg").expm
        if a.ndim <= 2:
            return f(a)
        n = a.shape[-1]
        return self._cp.stack([f(m) for m in a.reshape((-1, n, n))]).reshape(a.shape)

    def _solve_triangular(self, a, b, trans=0, lower=False, unit_diagonal=False,
                          overwrite_b=False, check_finite=False):
        """``scipy.linalg.solve_triangular``, batched with broadcasting: CuPy's needs equal
        batch dimensions."""
        cp = self._cp
        if b.ndim >= 2 and (a.ndim > 2 or b.ndim > 2) and a.shape[:-2] != b.shape[:-2]:
            a, b = _broadcast_batch(cp, a, b)
        return _import(self._cpx, "scipy.linalg").solve_triangular(
            a, b, trans=trans, lower=lower, unit_diagonal=unit_diagonal,
            overwrite_b=overwrite_b, check_finite=check_finite)

    # -- devices and conversion
    def device_count(self):
        return _device_count(self._cp)

    def device_of(self, array):
        i = array.device.id
        d = self._devices.get(i)
        if d is None:
            d = self._devices[i] = Device("cuda", i)
        return d

    def on(self, device):
        if device is None:
            return _NO_CONTEXT
        return self._cp.cuda.Device(Device(device).index)

    def use(self, device):
        """Make ``device`` CuPy's current device (for this thread)."""
        self._cp.cuda.Device(Device(device).index).use()

    def asarray(self, data, dtype=None, device=None, copy=None):
        """Array-API ``asarray`` onto the GPU: from host data that always copies, so
        ``copy=False`` is then an error."""
        if dtype is not None and np.dtype(dtype).kind == "V":
            raise TypeError(f"CuPy does not support {dtype}; keep {dtype} tensors on the CPU")
        if not isinstance(data, self.array_type):
            if copy is False:
                raise ValueError("asarray(copy=False): moving host data to the GPU needs a "
                                 "copy; pass copy=None")
            if isinstance(data, np.ndarray) and data.dtype.kind == "V":
                raise TypeError(f"CuPy does not support {data.dtype}; keep {data.dtype} "
                                "tensors on the CPU")
            copy = None
        with self.on(device):
            if device is not None and isinstance(data, self.array_type) and \
                    self.device_of(data) != Device(device):
                return self._cp.array(data, dtype=dtype, copy=True)  # device to device
            try:
                # order="K": a Fortran-ordered array stays Fortran-ordered (CuPy's default
                # copies host data in C order)
                return self._cp.asarray(data, dtype=dtype, order="K", copy=copy)
            except ValueError:
                if not isinstance(data, self.array_type) and dtype is None and \
                        np.asarray(data).dtype == object:
                    raise TypeError("could not convert the data to a numeric tensor (got an "
                                    "object array); pass numbers, nested sequences of numbers, "
                                    "or arrays") from None
                raise

    def to_numpy(self, array):
        return self._cp.asnumpy(array, order="A")  # keeps a Fortran order (CuPy's: "C")

    def to_host(self, array, pinned=False):
        """``array`` copied to host memory: page-locked memory (``cupyx.empty_pinned``, which
        copies back to the device faster) when ``pinned``."""
        empty_pinned = getattr(self._cpx, "empty_pinned", None) if pinned else None
        if empty_pinned is None:
            return self.to_numpy(array)
        out = empty_pinned(array.shape, array.dtype)
        array.get(out=out)
        return out

    # -- profiling: CUDA events time device work; NVTX ranges name it for Nsight
    def record_event(self):
        """A ``cupy.cuda.Event`` recorded now on the current stream."""
        event = self._cp.cuda.Event()
        event.record()
        return event

    def elapsed_ms(self, start, end):
        """Milliseconds between two recorded events (waits for ``end``)."""
        end.synchronize()
        return float(self._cp.cuda.get_elapsed_time(start, end))

    def has_nvtx(self):
        """Whether this CuPy can emit NVTX ranges (it may be built without NVTX)."""
        try:
            nvtx = _import(self._cp, "cuda.nvtx")
        except ImportError:
            return False
        return bool(getattr(nvtx, "available", True))

    def range_push(self, name):
        """Open an NVTX range named ``name``: NVIDIA's Nsight tools show it over the work
        done until the matching :meth:`range_pop`."""
        self._cp.cuda.nvtx.RangePush(name)

    def range_pop(self):
        """Close the innermost NVTX range."""
        self._cp.cuda.nvtx.RangePop()

    def scatter_add(self, target, index, values):
        """``numpy.add.at``. CuPy's atomic add (with an integer-array index) has no complex
        or small integer types: a complex target accumulates its real and imaginary parts
        apart, a small integer one in int64."""
        dt = target.dtype
        if dt in _ATOMIC_ADD:
            self._cpx.scatter_add(target, index, values)
            return target
        cp = self._cp
        values = values if isinstance(values, cp.ndarray) else cp.asarray(values)
        if dt.kind == "c":
            re = cp.zeros(target.shape, dtype=target.real.dtype)
            im = cp.zeros(target.shape, dtype=target.real.dtype)
            self._cpx.scatter_add(re, index, values.real.astype(re.dtype))
            self._cpx.scatter_add(im, index, values.imag.astype(im.dtype))
            target += re + 1j * im
        else:
            acc = cp.zeros(target.shape, dtype=cp.int64)
            self._cpx.scatter_add(acc, index, values.astype(cp.int64))
            target += acc.astype(dt)
        return target

    # -- random numbers: one Generator per thread, reseeded by manual_seed
    def generator(self):
        g = getattr(self._rng, "gen", None)
        if g is None:
            g = self._rng.gen = self._cp.random.default_rng(_seed_state["seed"])
        return g

    def manual_seed(self, seed):
        self._rng.gen = self._cp.random.default_rng(seed)

    def rng_state(self):
        """A snapshot of this thread's generator: CuPy's cannot be copied (it holds a lock),
        so the snapshot is the generator and a copy of its bit generator's device state."""
        g = getattr(self._rng, "gen", None)
        if g is None:
            return None
        state = getattr(getattr(g, "bit_generator", None), "_state", None)
        if not isinstance(state, self._cp.ndarray):
            return super().rng_state()  # (a stand-in or another CuPy: copied, or a clear error)
        return g, state.copy()

    def set_rng_state(self, state):
        if not (isinstance(state, tuple) and len(state) == 2):
            return super().set_rng_state(state)
        g, saved = state
        g.bit_generator._state[...] = saved  # (the snapshot stays valid: it is copied in)
        self._rng.gen = g


def _import(module, dotted):
    """``module.<dotted>``, importing the submodule when it is not loaded yet."""
    obj = module
    try:
        for part in dotted.split("."):
            obj = getattr(obj, part)
        return obj
    except AttributeError:
        return importlib.import_module(f"{module.__name__}.{dotted}")


class SubNamespace:
    """A backend's sub-namespace (``linalg``, ``fft``, ``special``, ``scipy_linalg``): the
    device library's function where it has one, else the host's (NumPy's or SciPy's) as
    ``on_host(label, f)`` makes it usable; keywords are the backend's own versions. A name is
    looked up on first use, then kept. ``load()`` gives the device library on first use
    (cupyx.scipy.linalg loads cuBLAS, which only a GPU machine has); ``on_device(label,
    name, f)``, when given, may wrap the device's function."""

    def __init__(self, label, load, host, on_host, on_device=None, **own):
        self._label = label
        self._load = load
        self._host = host
        self._on_host = on_host
        self._on_device = on_device
        self.__dict__.update(own)

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        label = f"{self._label}.{name}"
        try:
            f = getattr(self._load(), name)
        except (ImportError, AttributeError):
            f = self._on_host(label, getattr(self._host, name))  # (AttributeError: neither)
        else:
            if self._on_device is not None:
                f = self._on_device(label, name, f)
        setattr(self, name, f)
        return f


def _on_host(B, fn, label):
    """``fn`` (a NumPy/SciPy function) called with B's arrays copied to the host and its array
    results copied back."""
    array_type = B.array_type

    def to_host(a):
        if isinstance(a, array_type):
            return B.to_numpy(a)
        if type(a) in (list, tuple):
            return type(a)(to_host(e) for e in a)
        return a

    def to_device(r):
        if isinstance(r, (np.ndarray, np.generic)):  # (SciPy gives scalars for 0-d input)
            return B.asarray(r)
        if isinstance(r, tuple):
            vals = [to_device(e) for e in r]
            return type(r)(*vals) if hasattr(r, "_fields") else tuple(vals)
        if isinstance(r, list):
            return [to_device(e) for e in r]
        return r

    def call(*args, **kwargs):
        B.host_fallbacks.add(label)
        return to_device(fn(*to_host(args), **{k: to_host(v) for k, v in kwargs.items()}))

    call.__name__ = getattr(fn, "__name__", label)
    return call


def install_cuda_backend(cupy, cupyx):
    """Make ``"cuda"`` devices compute with a :class:`CupyBackend` over these modules.

    ndgrad calls this itself with the real CuPy on first use of a CUDA device; tests call it
    with a stand-in (Note [The CUDA backend]). Returns the backend.
    """
    B = CupyBackend(cupy, cupyx)
    _CUDA["backend"] = B
    register_backend(cupy.ndarray, B)
    return B


def _cuda_backend():
    """The CUDA backend, made on first use; None without CuPy or a GPU."""
    B = _CUDA["backend"]
    if B is None:
        try:
            import cupy
            import cupyx
        except Exception:  # noqa: BLE001 - not installed, or a broken CUDA installation
            return None
        if _device_count(cupy) > 0:
            B = install_cuda_backend(cupy, cupyx)
    return B


def _find_cuda(array_type):
    """The CUDA backend for a CuPy array before any CUDA use (Note [Backend plug-ins])."""
    if array_type is not None and array_type.__module__.partition(".")[0] == "cupy":
        return _cuda_backend()
    return None


_FINDERS.append(_find_cuda)


def _device_count(cupy):
    try:
        return int(cupy.cuda.runtime.getDeviceCount())
    except Exception:  # noqa: BLE001 - no driver / no device
        return 0


def cuda_device_count() -> int:
    """How many CUDA devices CuPy sees; 0 without CuPy, a driver or a GPU. CuPy is imported
    here, on first use, never when ndgrad is imported."""
    B = _CUDA["backend"]
    if B is not None:
        return B.device_count()
    try:
        import cupy
    except Exception:  # noqa: BLE001 - not installed, or a broken CUDA installation
        return 0
    return _device_count(cupy)


def _unavailable(dev, why):
    return RuntimeError(
        f"device {str(dev)!r} is not available: {why}. "
        'Install the extra with `pip install "ndgrad[cuda12]"` (or `[cuda13]`), or use '
        "device='cpu'."
    )


def backend_for_device(dev) -> Backend:
    """Resolve a device (string, :class:`Device` or None: the default device) to its backend."""
    if dev is None:
        return _DEFAULT["backend"]
    if dev == "cpu":
        return NUMPY
    dev = Device(dev)
    if dev.type == "cpu":
        return NUMPY
    find = _DEVICE_TYPES[dev.type]
    if find is not None:
        return find(None)
    B = _cuda_backend()
    if B is None:
        raise _unavailable(dev, "ndgrad's CUDA backend needs CuPy and a GPU")
    n = B.device_count()
    if dev.index >= n:
        raise RuntimeError(f"device {str(dev)!r} is not available: CuPy sees {n} GPU(s) "
                           f"(cuda:0 to cuda:{n - 1})")
    return B


# ----------------------------------------------------------------------------- default device
_DEFAULT = {"device": _CPU, "backend": NUMPY}


def _placed(device):
    """The backend and device for a creation call (None: the default device)."""
    if device is None:
        return _DEFAULT["backend"], _DEFAULT["device"]
    return backend_for_device(device), device


def get_default_device() -> Device:
    """The device creation functions use when none is given (``cpu`` unless changed).

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.get_default_device()
    device('cpu')
    """
    return _DEFAULT["device"]


def set_default_device(device):
    """Set the device that creation functions (``tensor``, ``zeros``, ``randn``, ...) use when
    none is given, as ``torch.set_default_device`` does. Tensors made from other tensors or
    from arrays of a device (``asarray(cupy_array)``) stay where their data is.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.set_default_device("cpu")
    >>> ndgrad.zeros(2).device
    device('cpu')
    """
    dev = Device("cpu" if device is None else device)
    B = backend_for_device(dev)  # raises for an unavailable device
    _DEFAULT["device"] = dev
    _DEFAULT["backend"] = B
    if dev.type == "cuda":
        B.use(dev)  # operations run on CuPy's current device: make it this one
