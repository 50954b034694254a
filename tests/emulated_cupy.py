"""A NumPy-backed stand-in for CuPy, so the CUDA backend's code paths run without a GPU.

ndgrad's :class:`~ndgrad.core.backend.CupyBackend` takes the ``cupy`` and ``cupyx`` modules as
arguments (Note [The CUDA backend]); the test suite hands it the two modules below. They
present CuPy 14.2's API surface (the name lists, signatures and ufunc type tables at the end
were read from ``cupy-cuda13x`` 14.2.0) over NumPy memory, and behave as CuPy does where
ndgrad could go wrong (Note [What the emulation reproduces]).

What it cannot catch: ``numpy.asarray(device_array)`` silently views the memory (it is a NumPy
subclass), and most GPU-only numerics (TF32 matmuls, non-deterministic reductions, the last
bits of every special function).

Note [What the emulation reproduces]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
Each item is a behaviour of real CuPy that made ndgrad fail on a GPU, or could:

* devices: device arrays are their own type (:class:`ndarray`, a NumPy subclass); mixing one
  with a host ``numpy.ndarray`` in an operation raises TypeError; each array remembers its
  device, and an operation on an array of another device than the current one raises; two
  devices are visible.
* scalars: operations return 0-d device arrays where NumPy returns scalars, and an integer
  index (``a[k]``) returns a 0-d *view* of ``a``, not a copy: writing through ``a[k] = ...``
  changes a value read earlier as ``v = a[k]``.
* signatures: every function and ``ndarray`` method whose CuPy signature differs from NumPy's
  takes CuPy's parameters only (``CUPY_SIGNATURES``, ``_METHOD_SIGNATURES``): no
  ``initial=``/``where=`` in reductions, no ``upper=`` in ``linalg.cholesky``, no ``rtol=`` or
  ``hermitian=`` in ``linalg.pinv``/``matrix_rank``, ``pinv``'s ``rcond`` default 1e-15, ...
  Ufuncs take ``out``, ``dtype`` and ``casting`` only, and allocate C-ordered outputs.
* dtypes: ``cupyx.scipy.special``'s ufuncs have CuPy's arity and type tables
  (``SPECIAL_UFUNCS``): ``zeta`` takes two arguments; ``erf``, ``ndtr``, ... refuse complex
  input; float16 ``erf`` gives float64. ``logical_*`` refuse complex input.
  ``cupyx.scatter_add`` with an integer-array index supports int32, int64, float16, float32,
  float64, uint32 and uint64 only (no complex). ``asarray`` refuses object (and string)
  data with ValueError.
* shapes: ``linalg.solve`` does not broadcast batch dimensions (``b`` is ``(M,)`` or has
  ``a``'s batch shape exactly), nor do ``linalg.cross`` (equal shapes) and
  ``cupyx.scipy.linalg.solve_triangular``; ``cupyx.scipy.linalg.expm`` takes one matrix;
  ``tensordot`` of a 0-d operand needs ``axes`` 0 or ``((), ())`` (a pair of lists is not).
* Python scalars where CuPy wants arrays: ``where(condition, ...)`` needs an array condition,
  so ``cupyx.scipy.special.polygamma(n, x)`` with a Python ``n`` fails, as on a GPU.
* errors: ``linalg.solve``/``inv`` of a singular matrix and ``cholesky`` of an indefinite one
  do not raise (cuSOLVER's status is not checked): solve and inv give non-finite values,
  cholesky what LAPACK's potrf leaves (a non-positive pivot on the diagonal).
* memory layout: host data is copied to the device C-ordered unless ``order`` is ``'K'``,
  ``'A'`` or ``'F'``; ``asnumpy`` copies back C-ordered unless ``order`` is ``'A'`` or
  ``'F'`` (``'K'`` is an error).
* numerics, in part: ``gammaln`` and ``i0`` (``_NUDGED``) are returned one ulp away from
  SciPy's values, as the GPU's are not bit-identical to SciPy's; a test that compares them
  bit for bit with SciPy fails here as it does on a GPU.
* contract differences measured on an H100 (CuPy 14.2, CUDA 13), each of which gave ndgrad
  a wrong value or an error there: an assignment through an integer-array index that repeats
  a position keeps the *first* write; float ``remainder`` is ``x1 - floor(x1 / x2) * x2``
  (no digit left for a huge quotient); ``rfftn``/``irfftn`` take unsorted ``axes`` sorted
  but ``s`` in its order; ``allclose``/``array_equal`` give 0-d arrays; ``lexsort`` takes
  one array of keys; ``take_along_axis`` does not check bounds; ``sph_harm_y`` is NaN where
  ``|m| > n``; the random generator cannot be copied (its state is a device array beside a
  lock). (cuFFT's wrong real transforms of length 1 are not reproduced.)
* no floating-point warnings (CuPy does not report division by zero or invalid values).
* ``cupy.fuse``: a fused function runs on device arrays and scalars only, and inside it only
  ufuncs (``cupy.ufunc``) may be called (``FUSE_LOG`` lists each fused call's kernel name,
  for the compile tests; the kernel itself is the function run op by op).
* timing and markers: ``cuda.Event``/``cuda.get_elapsed_time`` (an event never recorded, or
  events of two devices, cannot be timed) and ``cuda.nvtx.RangePush``/``RangePop``, whose
  calls are logged in ``NVTX_LOG`` for the profiler's tests.
"""

from __future__ import annotations

import inspect
import math
import threading
import time
import types

import numpy as np
import scipy.linalg
import scipy.special

_CURRENT = [0]  # the current device
DEVICE_COUNT = 2


class Device:
    """``cupy.cuda.Device(i)``: a device (an array's ``.device``), and a context manager that
    makes it the current one."""

    def __init__(self, i=None):
        self.id = _CURRENT[0] if i is None else int(i)
        if not 0 <= self.id < DEVICE_COUNT:
            raise RuntimeError(f"cudaErrorInvalidDevice: invalid device ordinal {self.id}")

    def __eq__(self, other):
        return isinstance(other, Device) and other.id == self.id

    def __hash__(self):
        return hash(self.id)

    def __repr__(self):
        return f"<CUDA Device {self.id}>"

    def use(self):
        _CURRENT[0] = self.id

    def __enter__(self):
        self._prev = _CURRENT[0]
        _CURRENT[0] = self.id
        return self

    def __exit__(self, *exc):
        _CURRENT[0] = self._prev


class Event:
    """``cupy.cuda.Event()``: a point in the current device's work. ``record()`` places it
    (here: reads the host clock, as the emulated device works synchronously); an event of
    another device, or one never recorded, cannot be timed, as in CUDA."""

    def __init__(self, block=False, disable_timing=False, interprocess=False):
        self.device_id = _CURRENT[0]
        self.disable_timing = disable_timing
        self._ns = None

    def record(self, stream=None):
        self._ns = time.perf_counter_ns()

    def synchronize(self):
        pass

    @property
    def done(self):
        return True


def get_elapsed_time(start_event, end_event):
    """``cupy.cuda.get_elapsed_time``: milliseconds between two recorded events."""
    for e in (start_event, end_event):
        if e._ns is None or e.disable_timing:
            raise RuntimeError("cudaErrorInvalidResourceHandle: invalid resource handle")
    if start_event.device_id != end_event.device_id:
        raise RuntimeError("cudaErrorInvalidResourceHandle: events of two devices")
    return (end_event._ns - start_event._ns) / 1e6


# NVTX ranges pushed and popped through `cupy.cuda.nvtx`, in order: ("push", message) and
# ("pop", None); tests read it (and clear it) to check that ranges are balanced.
NVTX_LOG = []


def _range_push(message, id_color=-1):
    if not isinstance(message, str):
        raise TypeError(f"RangePush() argument 'message' must be str, not {type(message).__name__}")
    NVTX_LOG.append(("push", message))


def _range_pop():
    NVTX_LOG.append(("pop", None))


# ------------------------------------------------------------------------------ signatures
def _table(text):
    """``name: rest`` lines -> {name: rest}."""
    out = {}
    for line in text.strip().splitlines():
        name, _, rest = line.strip().partition(":")
        if name:
            out[name] = rest.strip()
    return out


def _signature(spec):
    """An inspect.Signature from a compact spec: ``a axis= * keepdims=`` (``=``: has a
    default; ``*``, ``/``, ``*args``, ``**kwargs`` as in Python)."""
    P = inspect.Parameter
    params, kind = [], P.POSITIONAL_OR_KEYWORD
    words = spec.split()
    if "/" in words:
        kind = P.POSITIONAL_ONLY
    for w in words:
        if w == "/":
            kind = P.POSITIONAL_OR_KEYWORD
        elif w == "*":
            kind = P.KEYWORD_ONLY
        elif w.startswith("**"):
            params.append(P(w[2:], P.VAR_KEYWORD))
        elif w.startswith("*"):
            params.append(P(w[1:], P.VAR_POSITIONAL))
            kind = P.KEYWORD_ONLY
        elif w.endswith("="):
            params.append(P(w[:-1], kind, default=None))
        else:
            params.append(P(w, kind))
    return inspect.Signature(params)


def _with_signature(fn, name, spec, reference=None):
    """``fn`` (NumPy's) called as CuPy's function of signature ``spec``: arguments CuPy does
    not take are a TypeError, as in CuPy; those it takes are passed on to ``fn`` under the
    name ``reference`` (``fn``'s own signature) gives them, by position where CuPy renamed
    a parameter (``tup`` for ``arrays``, ``M`` for ``a``, ...)."""
    P = inspect.Parameter
    sig = _signature(spec)
    try:
        ref = None if reference is False else inspect.signature(reference or fn)
    except (TypeError, ValueError):
        ref = None
    cp_params = list(sig.parameters.values())
    ref_params = list(ref.parameters.values()) if ref is not None else []
    short = name.rpartition(".")[2]

    def call(*args, **kwargs):
        try:
            bound = sig.bind(*args, **kwargs)
        except TypeError as exc:
            raise TypeError(f"{short}() {exc}") from None
        if ref is None:
            return fn(*args, **kwargs)
        pos, kw = [], {}
        for i, p in enumerate(cp_params):
            if p.name not in bound.arguments:
                continue
            v = bound.arguments[p.name]
            if p.kind is P.VAR_POSITIONAL:
                pos.extend(v)
                continue
            if p.kind is P.VAR_KEYWORD:
                kw.update(v)
                continue
            q = ref.parameters.get(p.name)
            if i < len(ref_params) and p.kind is not P.KEYWORD_ONLY and (
                    q is None or q.kind is P.KEYWORD_ONLY):
                q = ref_params[i]  # renamed in CuPy (NumPy may keep the old name)
            if q is None or q.kind is P.VAR_KEYWORD:
                kw[p.name] = v
            elif q.kind is P.POSITIONAL_ONLY or q.kind is P.VAR_POSITIONAL:
                pos.append(v)
            else:
                kw[q.name] = v
        return fn(*pos, **kw)

    call.__name__ = short
    call.__wrapped__ = fn
    return call


# ndarray methods whose CuPy signature differs from NumPy's (CuPy 14.2's docstrings)
_METHOD_SIGNATURES = _table("""
    all: axis= out= keepdims=
    any: axis= out= keepdims=
    argmax: axis= out= dtype= keepdims=
    argmin: axis= out= dtype= keepdims=
    argpartition: kth axis=
    argsort: axis= kind=
    clip: min= max= out=
    item:
    max: axis= out= keepdims=
    mean: axis= dtype= out= keepdims=
    min: axis= out= keepdims=
    partition: kth axis=
    prod: axis= dtype= out= keepdims=
    sort: axis= kind=
    std: axis= dtype= out= ddof= keepdims=
    sum: axis= dtype= out= keepdims=
    take: indices axis= out=
    var: axis= dtype= out= ddof= keepdims=
""")


# -------------------------------------------------------------------------------- ndarray
class ndarray(np.ndarray):  # noqa: N801 - CuPy's name
    """A device array: NumPy memory behind CuPy's rules (Note [What the emulation
    reproduces])."""

    def __array_finalize__(self, obj):
        self._device_id = getattr(obj, "_device_id", _CURRENT[0])

    @property
    def device(self):
        return Device(self._device_id)

    def get(self, stream=None, order="C", out=None, blocking=True):
        """A host copy: C-ordered unless ``order`` is 'F' or 'A' (CuPy's ``ndarray.get``)."""
        host = self.view(np.ndarray)
        if out is not None:
            out[...] = host
            return out
        order = order.upper()
        if order == "A":
            order = "F" if host.flags.f_contiguous else "C"
        if order not in ("C", "F") and host.size:
            raise ValueError(f"unsupported order: {order}")
        return np.array(host, order=order if order in ("C", "F") else "C", copy=True)

    def __getitem__(self, index):
        raw = _unwrap(index)
        r = np.ndarray.__getitem__(self.view(np.ndarray), raw)
        if isinstance(r, np.generic):
            # CuPy: an integer index gives a 0-d view of the array, not a scalar copy
            r = np.ndarray.__getitem__(self.view(np.ndarray),
                                       (raw if isinstance(raw, tuple) else (raw,)) + (...,))
        return _wrap(r, self._device_id)

    def __setitem__(self, index, value):
        _check((value,))
        index, value = _unwrap(index), _unwrap(value)
        if _has_integer_array(index):  # CuPy: of repeated positions, the *first* write stays
            host = self.view(np.ndarray)
            pos = np.arange(host.size).reshape(host.shape)[index]
            flat = pos.reshape(-1)
            _, first = np.unique(flat, return_index=True)
            if first.size < flat.size:
                v = np.broadcast_to(np.asarray(value, dtype=host.dtype), pos.shape).reshape(-1)
                host[np.unravel_index(flat[first], host.shape)] = v[first]
                return
        np.ndarray.__setitem__(self, index, value)

    def __array_ufunc__(self, ufunc, method, *inputs, out=None, **kwargs):
        dev = _check(inputs + (out or ()))
        if out is not None:
            kwargs["out"] = tuple(_unwrap(o) for o in out)
        elif method == "__call__":
            kwargs["order"] = "C"  # CuPy allocates C-ordered outputs
        with np.errstate(all="ignore"):  # CuPy reports no floating-point errors
            r = getattr(ufunc, method)(*_unwrap(inputs), **_unwrap(kwargs))
        if out is not None:
            return out[0] if len(out) == 1 else out
        return _wrap(r, dev)

    def __array_function__(self, func, types_, args, kwargs):
        dev = _check(args, kwargs)
        with np.errstate(all="ignore"):
            return _wrap(func(*_unwrap(args), **_unwrap(kwargs)), dev)

    def __repr__(self):
        return "emulated_cupy." + repr(self.view(np.ndarray))

    def __reduce__(self):  # pragma: no cover - not picklable, as a GPU array is not
        raise TypeError("emulated device arrays are not picklable")


def _method(name, spec):
    base = getattr(np.ndarray, name)
    # (CuPy's parameter names are NumPy's here: the arguments pass on as given)
    f = _with_signature(lambda self, *a, **k: base(self, *a, **k), name, "self " + spec,
                        reference=False)
    f.__name__ = name
    return f


for _name, _spec in _METHOD_SIGNATURES.items():
    setattr(ndarray, _name, _method(_name, _spec))
ndarray.__module__ = "cupy"  # as CuPy's own: ndgrad recognises CuPy arrays by their module


def _check(args, kwargs=None):
    """The device of the device arrays among ``args``; TypeError for a host array, ValueError
    for an array on another device than the current one (CuPy's rules)."""
    if getattr(_FUSING, "depth", 0) and not getattr(_FUSING, "ufunc", False):
        raise TypeError("only ufuncs can be called inside a function fused by cupy.fuse")
    dev = None
    stack = list(args) + (list(kwargs.values()) if kwargs else [])
    while stack:
        a = stack.pop()
        if isinstance(a, ndarray):
            if a._device_id != _CURRENT[0]:
                raise ValueError(f"The device where the array resides ({a._device_id}) is "
                                 f"different from the current device ({_CURRENT[0]}).")
            dev = a._device_id
        elif isinstance(a, np.ndarray):
            raise TypeError(f"Unsupported type {type(a)}")
        elif type(a) in (list, tuple):
            stack.extend(a)
    return _CURRENT[0] if dev is None else dev


def _unwrap(x):
    if isinstance(x, ndarray):
        return x.view(np.ndarray)
    if type(x) in (list, tuple):
        return type(x)(_unwrap(e) for e in x)
    if type(x) is dict:
        return {k: _unwrap(v) for k, v in x.items()}
    return x


def _wrap(r, dev):
    if isinstance(r, np.ndarray):
        out = r.view(ndarray)
        out._device_id = dev
        return out
    if isinstance(r, np.generic) and not isinstance(r, (np.void,)):
        out = np.asarray(r).view(ndarray)  # CuPy returns 0-d arrays, not scalars
        out._device_id = dev
        return out
    if isinstance(r, tuple):
        vals = [_wrap(e, dev) for e in r]
        return type(r)(*vals) if hasattr(r, "_fields") else tuple(vals)
    if isinstance(r, list):
        return [_wrap(e, dev) for e in r]
    return r


def _on_device(fn, check_inputs=True):
    """A NumPy/SciPy function over device arrays (it does not dispatch on its own)."""
    def call(*args, **kwargs):
        dev = _check(args, kwargs) if check_inputs else _CURRENT[0]
        with np.errstate(all="ignore"):
            return _wrap(fn(*_unwrap(args), **_unwrap(kwargs)), dev)
    call.__name__ = getattr(fn, "__name__", "function")
    return call


# Functions that make arrays without array arguments, or from host data (which CuPy copies).
_CREATION = set("""
    zeros ones empty full arange eye identity linspace logspace tri indices tril_indices
    triu_indices diag_indices fromiter frombuffer asanyarray ascontiguousarray asfortranarray
""".split())

_SUPPORTED_CHARS = set("?bhilqBHILQefdFD")  # CuPy's dtypes


def _host_copy(a, dtype, order):
    """Host data as CuPy copies it to the device: C order unless ``order`` asks for F
    ('F'; 'K'/'A' for F-contiguous NumPy data); only CuPy's numeric dtypes."""
    if order is not None and order[0] in "KAka":
        order = "F" if isinstance(a, np.ndarray) and a.flags.f_contiguous and \
            not a.flags.c_contiguous else "C"
    host = np.array(a, dtype=dtype, order="F" if order in ("F", "f") else "C", copy=True)
    if host.dtype.char not in _SUPPORTED_CHARS:
        raise ValueError(f"Unsupported dtype {host.dtype}")
    return _wrap(host, _CURRENT[0])


def _asarray(a, dtype=None, order=None, *, copy=None, blocking=False):
    """``cupy.asarray``: the array itself when nothing changes, else a device copy (from host
    data too, C-ordered unless ``order`` says otherwise)."""
    if isinstance(a, ndarray):
        if copy is not True and (dtype is None or np.dtype(dtype) == a.dtype):
            return a
        if copy is False:
            raise ValueError("Unable to avoid copy while creating an array as requested.")
        return _wrap(np.array(a.view(np.ndarray), dtype=dtype, order=order or "K"),
                     _CURRENT[0])
    return _host_copy(a, dtype, order)


def _array(obj, dtype=None, copy=True, order="K", subok=False, ndmin=0, *, blocking=False):
    if isinstance(obj, ndarray):
        return _wrap(np.array(obj.view(np.ndarray), dtype=dtype, copy=copy, order=order,
                              ndmin=ndmin), _CURRENT[0])
    r = _host_copy(obj, dtype, order)
    return r if r.ndim >= ndmin else r.reshape((1,) * (ndmin - r.ndim) + r.shape)


# ---------------------------------------------------------------------------------- ufuncs
_UFUNC_KWARGS = {"out", "dtype", "casting"}


def _ufunc_kwargs(kwargs):
    bad = {k: v for k, v in kwargs.items() if k not in _UFUNC_KWARGS}
    if bad:
        raise TypeError(f"Wrong arguments {bad}")


class _ufunc:  # noqa: N801 - a ufunc's stand-in
    """A NumPy ufunc as CuPy's: device arrays out (for scalar inputs too, C-ordered), CuPy's
    keyword arguments, and no complex input where CuPy has no complex loop (``_REAL_ONLY``)."""

    def __init__(self, f, name=None):
        self._f = f
        self.__name__ = name or f.__name__
        self.nin, self.nout = f.nin, f.nout

    def __call__(self, *args, **kwargs):
        _ufunc_kwargs(kwargs)
        if self.__name__ in _REAL_ONLY and any(
                np.iscomplexobj(_unwrap(a)) for a in args[:self.nin]):
            raise TypeError(f"Wrong type ({tuple(_dtype_of(a) for a in args[:self.nin])}) "
                            f"of arguments for cupy_{self.__name__}")
        _FUSING.ufunc = True
        try:
            dev = _check(args, kwargs)
        finally:
            _FUSING.ufunc = False
        if "out" not in kwargs:
            kwargs["order"] = "C"
        with np.errstate(all="ignore"):
            return _wrap(self._f(*_unwrap(args), **_unwrap(kwargs)), dev)

    def at(self, a, indices, b=None):
        if self.__name__ != "add":
            raise NotImplementedError(f"`cupy_{self.__name__}.at` is not supported yet")
        scatter_add(a, indices, b)

    def reduce(self, array, axis=0, dtype=None, out=None, keepdims=False):
        if self.__name__ == "add":
            return array.sum(axis, dtype, out, keepdims)
        if self.__name__ == "multiply":
            return array.prod(axis, dtype, out, keepdims)
        raise NotImplementedError(f"`cupy_{self.__name__}.reduce` is not supported yet")

    def outer(self, A, B, **kwargs):
        A, B = _asarray(A), _asarray(B)
        return self(A.reshape(A.shape + (1,) * B.ndim), B.reshape((1,) * A.ndim + B.shape),
                    **kwargs)


_REAL_ONLY = {"logical_and", "logical_or", "logical_xor", "logical_not"}


# ------------------------------------------------------------------------------ cupy.fuse
_FUSING = threading.local()
FUSE_LOG = []  # the kernel name of each call of a fused function


def fuse(*args, kernel_name=None):
    """``cupy.fuse``: ``fuse(f)`` or ``fuse(kernel_name=...)(f)``. The fused function takes
    device arrays and scalars, and calls only ufuncs (anything else raises, as CuPy's
    fusion cannot compile it); it runs op by op here."""
    def make(f):
        name = kernel_name or getattr(f, "__name__", "fused")

        def fused(*xs):
            for x in xs:
                if not isinstance(x, (ndarray, int, float, complex, bool, np.generic)):
                    raise TypeError(f"Unsupported type {type(x)} for a fused function")
            _FUSING.depth = getattr(_FUSING, "depth", 0) + 1
            try:
                out = f(*xs)
            finally:
                _FUSING.depth -= 1
            FUSE_LOG.append(name)
            return out
        fused.__name__ = name
        return fused
    if len(args) == 1 and callable(args[0]):
        return make(args[0])
    if args:
        raise TypeError("fuse() takes a function, or keyword arguments")
    return make


def _dtype_of(a):
    return a.dtype if hasattr(a, "dtype") else np.asarray(a).dtype


def _takes(a, char, weak=True):
    """Whether argument ``a`` fits a loop's input type ``char`` (CuPy: safe casting for
    arrays and NumPy scalars; Python scalars by kind next to an array (``weak``), else as
    NumPy's default types)."""
    d = np.dtype(char)
    if not weak and isinstance(a, (bool, int, float, complex)) and \
            not isinstance(a, np.generic):
        return np.can_cast(np.asarray(a).dtype, d, "safe")
    if isinstance(a, bool):
        return True
    if isinstance(a, int) and not isinstance(a, np.generic):
        return d.kind in "iufc"
    if isinstance(a, float):
        return d.kind in "fc"
    if isinstance(a, complex):
        return d.kind == "c"
    return np.can_cast(_dtype_of(a), d, "safe")


class _special_ufunc:  # noqa: N801 - a cupyx.scipy.special ufunc's stand-in
    """A ``cupyx.scipy.special`` ufunc: CuPy's arity and type table over SciPy's function
    (its name, types and error messages are CuPy's)."""

    def __init__(self, name, nin, nout, loops, impl):
        self.__name__ = name
        self.name = f"cupyx_scipy_special_{name}"
        self.nin, self.nout = nin, nout
        self.types = loops
        self._impl = impl

    def __call__(self, *args, **kwargs):
        out = kwargs.pop("out", None)
        _ufunc_kwargs(kwargs)
        if not self.nin <= len(args) <= self.nin + self.nout:
            raise TypeError(f"Wrong number of arguments for {self.name!r}. It must be either "
                            f"{self.nin} or {self.nin + self.nout} (with outputs), but given "
                            f"{len(args)}.")
        ins = args[:self.nin]
        dev = _check(args)
        weak = any(isinstance(a, (np.ndarray, np.generic)) for a in ins)
        for loop in self.types:
            tin, _, tout = loop.partition("->")
            if all(_takes(a, c, weak) for a, c in zip(ins, tin)):
                break
        else:
            raise TypeError(f"Wrong type ({tuple(_dtype_of(a) for a in ins)}) of arguments "
                            f"for {self.name}")
        with np.errstate(all="ignore"):
            r = self._impl(*(np.asarray(_unwrap(a), dtype=c) for a, c in zip(ins, tin)))
        rs = r if isinstance(r, tuple) else (r,)
        rs = tuple(np.asarray(x, dtype=c) for x, c in zip(rs, tout))
        if self.__name__ in _NUDGED:
            rs = tuple(_nudge(x) for x in rs)
        res = tuple(_wrap(x if x.flags.c_contiguous else np.array(x, order="C"), dev)
                    for x in rs)
        if out is not None:
            out[...] = res[0]
            return out
        return res[0] if len(res) == 1 else res


# Special functions whose GPU results are known to differ from SciPy's in the last bit
# (gammaln: multigammaln compared with SciPy's gammaln; i0: i0(0) is not exactly 1).
_NUDGED = {"gammaln", "i0"}


def _nudge(x):
    """One ulp toward zero (zeros, infinities and NaNs unchanged)."""
    if x.dtype.kind != "f":
        return x
    return np.where(np.isfinite(x), np.nextafter(x, np.zeros_like(x)), x)


# ----------------------------------------------------------------- functions ported from CuPy
def _where(condition, x=None, y=None):
    """``cupy.where``: the condition must be an array (CuPy calls ``condition.astype``)."""
    missing = (x is None, y is None).count(True)
    if missing == 1:
        raise ValueError("Must provide both 'x' and 'y' or neither.")
    if missing == 2:
        return _wrap(np.nonzero(_unwrap(condition)), _check((condition,)))
    condition = condition.astype("?", copy=False)  # AttributeError for a Python bool
    dev = _check((condition, x, y))
    return _wrap(np.where(*_unwrap((condition, x, y))), dev)


def _tensordot(a, b, axes=2):
    if a.ndim == 0 or b.ndim == 0:
        if axes != 0 and axes != ((), ()):
            raise ValueError("An input is zero-dim while axes has dimensions")
        return _ufunc(np.multiply)(a, b)
    return _on_device(np.tensordot)(a, b, axes)


def _einsum(*operands, **kwargs):
    kwargs = dict(kwargs)
    kw = {k: kwargs.pop(k) for k in ("dtype", "optimize") if k in kwargs}
    kwargs.pop("casting", None)
    if kwargs:
        raise TypeError(f"Did not understand the following kwargs: {list(kwargs.keys())}")
    return _on_device(np.einsum)(*operands, **kw)


def _assert_stacked_square(a):
    if a.ndim < 2:
        raise np.linalg.LinAlgError(f"{a.ndim}-dimensional array given. Array must be at "
                                    "least two-dimensional")
    if a.shape[-1] != a.shape[-2]:
        raise np.linalg.LinAlgError("Last 2 dimensions of the array must be square")


def _lu_solve_unchecked(a, b):
    """NumPy's solve, or for a singular matrix what an unchecked LU solve gives: not
    finite."""
    try:
        return np.linalg.solve(a, b)
    except np.linalg.LinAlgError:
        out = np.empty(np.broadcast_shapes(a.shape[:-2], b.shape[:-2]) + b.shape[-2:],
                       dtype=np.result_type(a, b, np.float64))
        for idx in np.ndindex(out.shape[:-2]):
            ai = a[idx] if a.ndim > 2 else a
            bi = b[idx] if b.ndim > 2 else b
            try:
                out[idx] = np.linalg.solve(ai, bi)
            except np.linalg.LinAlgError:
                out[idx] = np.inf
        return out


def _solve(a, b):
    """``cupy.linalg.solve`` (14.2): ``b`` is (M,) or has ``a``'s shape but the last axis."""
    dev = _check((a, b))
    a, b = _unwrap(a), _unwrap(b)
    _assert_stacked_square(a)
    if b.ndim == 0:
        raise ValueError("b must have at least one dimension")
    if b.ndim == 1:
        if a.shape[-1] != b.size:
            raise ValueError("a must have (..., M, M) shape and b must have (M,) for "
                             "one-dimensional b")
        x = _lu_solve_unchecked(a, np.broadcast_to(b, a.shape[:-1])[..., None])[..., 0]
    elif a.shape[:-1] != b.shape[:-1]:
        raise ValueError("a must have (..., M, M) shape and b must have (..., M, K) for "
                         "multidimensional b")
    else:
        x = _lu_solve_unchecked(a, b)
    return _wrap(np.ascontiguousarray(x), dev)


def _inv(a):
    dev = _check((a,))
    a = _unwrap(a)
    _assert_stacked_square(a)
    eye = np.broadcast_to(np.eye(a.shape[-1], dtype=a.dtype), a.shape)
    return _wrap(_lu_solve_unchecked(a, eye), dev)


def _cholesky(a):
    """``cupy.linalg.cholesky``: no ``upper``; an indefinite matrix does not raise, the
    factor is what LAPACK's potrf leaves (the failed pivot on the diagonal, lower part)."""
    dev = _check((a,))
    a = _unwrap(a)
    _assert_stacked_square(a)
    try:
        return _wrap(np.linalg.cholesky(a), dev)
    except np.linalg.LinAlgError:
        pass
    x = np.array(a, dtype=np.result_type(a, np.float64), copy=True)
    n = x.shape[-1]
    for idx in np.ndindex(x.shape[:-2]):
        m = x[idx]
        for j in range(n):
            d = m[j, j] - np.vdot(m[j, :j], m[j, :j])
            if not d.real > 0:
                m[j, j] = d
                break
            m[j, j] = np.sqrt(d.real)
            for i in range(j + 1, n):
                m[i, j] = (m[i, j] - np.dot(m[i, :j], np.conj(m[j, :j]))) / m[j, j]
    return _wrap(np.tril(x), dev)


def _pinv(a, rcond=1e-15):
    """``cupy.linalg.pinv(a, rcond)``: singular values at or below ``rcond`` times the
    largest are dropped."""
    dev = _check((a,))
    a = _unwrap(a)
    if a.size == 0:
        m, n = a.shape[-2:]
        return _wrap(np.empty(a.shape[:-2] + (n, m), dtype=a.dtype), dev)
    u, s, vt = np.linalg.svd(a.conj(), full_matrices=False)
    cutoff = np.asarray(rcond)[..., None] * np.amax(s, axis=-1, keepdims=True)
    leq = s <= cutoff
    with np.errstate(all="ignore"):
        s = 1 / s
    s[leq] = 0
    return _wrap(np.matmul(np.swapaxes(vt, -2, -1), s[..., None] * np.swapaxes(u, -2, -1)),
                 dev)


def _matrix_rank(M, tol=None):
    dev = _check((M,))
    M = _unwrap(M)
    if M.ndim < 2:
        return _wrap((M != 0).any().astype(int), dev)
    S = np.linalg.svd(M, compute_uv=False)
    if tol is None:
        tol = S.max(axis=-1, keepdims=True) * max(M.shape[-2:]) * np.finfo(S.dtype).eps
    return _wrap((S > tol).sum(axis=-1, dtype=np.intp), dev)


def _linalg_cross(x1, x2, /, *, axis=-1):
    if x1.shape != x2.shape:
        raise ValueError("x1 and x2 must have the same shape")
    if x1.ndim == 0:
        raise ValueError("cross() requires arrays of dimension at least 1")
    if x1.shape[axis] != 3:
        raise ValueError("cross() dimension must equal 3")
    return _on_device(np.cross)(x1, x2, axis=axis)


def _expm(a):
    """``cupyx.scipy.linalg.expm``: one matrix (its ``diag`` refuses more dimensions)."""
    if a.size == 0:
        return _wrap(np.zeros((0, 0), dtype=a.dtype), _check((a,)))
    if a.ndim > 2:
        raise ValueError("Input must be 1- or 2-d.")
    return _on_device(scipy.linalg.expm)(a)


def _solve_triangular(a, b, trans=0, lower=False, unit_diagonal=False, overwrite_b=False,
                      check_finite=False):
    """``cupyx.scipy.linalg.solve_triangular``: batched without broadcasting."""
    dev = _check((a, b))
    a, b = _unwrap(a), _unwrap(b)
    if a.ndim == 2:
        if a.shape[0] != a.shape[1]:
            raise ValueError("expected square matrix")
        if len(a) != len(b):
            raise ValueError("incompatible dimensions")
    elif a.ndim > 2:
        if a.shape[-1] != a.shape[-2]:
            raise ValueError("expected a batch of square matrices")
        if a.shape[:-2] != b.shape[:a.ndim - 2]:
            raise ValueError("incompatible batch count")
        if b.ndim < a.ndim - 1 or a.shape[-2] != b.shape[a.ndim - 2]:
            raise ValueError("incompatible dimensions")
    else:
        raise ValueError("expected one square matrix or a batch of square matrices")
    kw = dict(trans=trans, lower=lower, unit_diagonal=unit_diagonal, check_finite=False)
    if a.ndim == 2:
        x = scipy.linalg.solve_triangular(a, b, **kw)
    else:
        vec = b.ndim == a.ndim - 1
        x = np.empty(b.shape, dtype=np.result_type(a, b, np.float32))
        for idx in np.ndindex(a.shape[:-2]):
            x[idx] = scipy.linalg.solve_triangular(a[idx], b[idx], **kw) if not vec else \
                scipy.linalg.solve_triangular(a[idx], b[idx][:, None], **kw)[:, 0]
    return _wrap(x, dev)


def _broadcast_keeping_scalars(*args):
    """``cupy.broadcast_arrays``: Python scalars pass through unchanged."""
    arrays = [a for a in args if isinstance(a, ndarray)]
    shape = np.broadcast_shapes(*(a.shape for a in arrays)) if arrays else ()
    return tuple(_on_device(np.broadcast_to)(a, shape) if isinstance(a, ndarray) else a
                 for a in args)


def _make_polygamma(special):
    def polygamma(n, x):
        """``cupyx.scipy.special.polygamma`` (CuPy's code): a Python ``n`` stays a scalar, so
        ``n == 0`` is a bool and ``where`` refuses it."""
        n, x = _broadcast_keeping_scalars(n, x)
        fac2 = (-1.0) ** (n + 1) * special.gamma(n + 1.0) * special.zeta(n + 1.0, x)
        return _where(n == 0, special.digamma(x), fac2)
    return polygamma


def _make_multigammaln(special):
    def multigammaln(a, d):
        """``cupyx.scipy.special.multigammaln`` (CuPy's code)."""
        if not np.isscalar(d) or (math.floor(d) != d):
            raise ValueError("d should be a positive integer (dimension)")
        if np.isscalar(a):
            a = _asarray(a, dtype=float)
        if int(_unwrap(a <= 0.5 * (d - 1)).any()):
            raise ValueError("condition a > 0.5 * (d-1) not met")
        res = (d * (d - 1) * 0.25) * np.log(np.pi)
        gam0 = special.gammaln(a)
        if a.dtype.kind != "f":
            gam0 = gam0.astype(np.float64)
        res = res + gam0
        for j in range(2, d + 1):
            res += special.gammaln(a - (j - 1.0) / 2)
        return res
    return multigammaln


_REMAINDER = _TAKE_ALONG_AXIS = None  # NumPy's, as wrapped by make_modules
_ATOMIC_ADD = {np.dtype(t) for t in (np.int32, np.int64, np.float16, np.float32, np.float64,
                                     np.uint32, np.uint64)}


def _has_integer_array(index):
    for s in (index if isinstance(index, tuple) else (index,)):
        if isinstance(s, list) or (isinstance(s, np.ndarray) and s.dtype.kind in "iu"):
            return True
    return False


def scatter_add(a, slices, value):
    """``cupyx.scatter_add``: ``a[slices] += value`` with repeated indices accumulating; with
    an integer-array index only the dtypes CUDA's atomicAdd has."""
    _check((a, slices, value))
    if _has_integer_array(slices) and a.dtype not in _ATOMIC_ADD:
        raise TypeError("cupy.add.at only supports int32, int64, float16, float32, float64, "
                        "uint32, uint64 as data type")
    np.add.at(_unwrap(a), _unwrap(slices), _unwrap(value))


def asnumpy(a, stream=None, order="C", out=None, *, blocking=True):
    if isinstance(a, ndarray):
        return a.get(stream=stream, order=order, out=out, blocking=blocking)
    return np.asarray(a, order=order)


class _BitGenerator:
    """``cupy.random``'s bit generator: its state is a device array (``_state``), and it
    holds a lock, so it cannot be copied (``copy.deepcopy`` fails, as on a GPU)."""

    def __init__(self, seed):
        self.lock = threading.Lock()
        self._state = _wrap(np.array([seed, 0], dtype=np.uint64), _CURRENT[0])


class _Generator:
    """``cupy.random.Generator``'s stand-in: device arrays from NumPy generators keyed by the
    bit generator's device state (seed, draw count)."""

    def __init__(self, seed=None):
        seed = np.random.SeedSequence().entropy % 2 ** 63 if seed is None else seed
        self.bit_generator = _BitGenerator(seed)

    def _next(self):
        state = self.bit_generator._state.view(np.ndarray)
        g = np.random.default_rng([int(state[0]), int(state[1])])
        state[1] += 1
        return g

    def standard_normal(self, size=None, dtype=np.float64):
        return _wrap(self._next().standard_normal(size, dtype=dtype), _CURRENT[0])

    def random(self, size=None, dtype=np.float64):
        return _wrap(self._next().random(size, dtype=dtype), _CURRENT[0])


def _rng(seed=None):
    return _Generator(seed)


def _module(name, attrs):
    m = types.ModuleType(name)
    m.__dict__.update(attrs)
    return m


# NumPy functions CuPy keeps that a NumPy version removed
_REMOVED_FROM_NUMPY = {"row_stack": np.vstack}


def _signed(name, f, reference):
    spec = CUPY_SIGNATURES.get(name)
    return f if spec is None else _with_signature(f, name, spec, reference)


class PinnedHostArray(np.ndarray):
    """Host memory from ``cupyx.empty_pinned`` (a NumPy array, as in CuPy; a subclass only
    so that tests can see the page-locked staging was used)."""


def _empty_pinned(shape, dtype=float, order="C"):
    return np.empty(shape, dtype, order).view(PinnedHostArray)


def _remainder_lossy(x1, x2, **kwargs):
    """CuPy's float ``remainder``: ``x1 - floor(x1 / x2) * x2``, which loses every digit when
    the quotient is huge (``remainder(1e300, 7.0)`` is not 1)."""
    a, b = _unwrap(x1), _unwrap(x2)
    if np.result_type(a, b).kind == "f":
        with np.errstate(all="ignore"):
            r = np.subtract(a, np.floor(np.divide(a, b)) * b)
        return _wrap(np.asarray(r), _check((x1, x2)))
    return _REMAINDER(x1, x2, **kwargs)


def _real_fft_sorting_axes(f):
    """CuPy's ``rfftn``/``irfftn``: with ``axes`` not in increasing order, the axes are
    taken sorted while ``s`` keeps its order (the wrong lengths on the wrong axes)."""
    def call(a, s=None, axes=None, norm=None):
        if axes is not None and s is not None:
            nd = np.ndim(a)
            axes = sorted(ax % nd for ax in axes)
        return f(a, s=s, axes=axes, norm=norm)
    call.__name__ = f.__name__
    return call


def _as_0d(f):
    """CuPy's ``allclose``/``array_equal``: a 0-d device array, not a Python bool."""
    def call(*args, **kwargs):
        return _wrap(np.asarray(f(*_unwrap(args), **_unwrap(kwargs))), _check(args, kwargs))
    call.__name__ = f.__name__
    return call


def _lexsort(keys):
    """CuPy's ``lexsort``: the keys as one array (a sequence of them fails)."""
    if not isinstance(keys, ndarray):
        raise AttributeError("'tuple' object has no attribute 'ndim'")
    return _wrap(np.lexsort(_unwrap(keys)), keys._device_id)


def _take_along_axis_unchecked(a, indices, axis):
    """CuPy's ``take_along_axis`` does not check bounds (an index out of range wraps)."""
    n = a.shape[axis] if axis is not None else a.size
    return _TAKE_ALONG_AXIS(a, _wrap(np.mod(_unwrap(indices), n), indices._device_id)
                            if isinstance(indices, ndarray) else indices, axis)


def _sph_harm_y_nan(f):
    """CuPy's ``sph_harm_y`` is NaN where ``|m| > n`` (SciPy's, and the definition, 0)."""
    def call(n, m, theta, phi, **kwargs):
        r = f(n, m, theta, phi, **kwargs)
        bad = np.abs(_unwrap(m)) > _unwrap(n)
        if np.any(bad):
            host = np.where(bad, np.nan, _unwrap(r))
            return _wrap(np.asarray(host), _check((r,)))
        return r
    call.__name__ = "sph_harm_y"
    return call


def make_modules():
    """Fresh ``(cupy, cupyx)`` stand-ins."""
    main = {}
    for n in MAIN:
        f = getattr(np, n, None)
        if f is None:
            f = _REMOVED_FROM_NUMPY.get(n)
            if f is None:
                continue
        ref = f
        if isinstance(f, np.ufunc):
            f = _ufunc(f, n)  # CuPy's ufuncs give device arrays for scalar inputs too
        elif n in _CREATION:
            f = _on_device(f, check_inputs=False)
        main[n] = _signed(n, f, ref)
    global _REMAINDER, _TAKE_ALONG_AXIS
    _REMAINDER, _TAKE_ALONG_AXIS = main["remainder"], main["take_along_axis"]
    main.update(
        fuse=fuse, ufunc=_ufunc,
        asarray=_asarray, array=_array, where=_where, tensordot=_tensordot, einsum=_einsum,
        ndarray=ndarray, asnumpy=asnumpy, remainder=_remainder_lossy, mod=_remainder_lossy,
        allclose=_as_0d(np.allclose), array_equal=_as_0d(np.array_equal), lexsort=_lexsort,
        take_along_axis=_take_along_axis_unchecked,
        cuda=types.SimpleNamespace(
            Device=Device,
            runtime=types.SimpleNamespace(getDeviceCount=lambda: DEVICE_COUNT),
            Event=Event, get_elapsed_time=get_elapsed_time,
            nvtx=types.SimpleNamespace(RangePush=_range_push, RangePop=_range_pop,
                                       available=True)),
        random=types.SimpleNamespace(default_rng=_rng),
    )
    linalg = {n: _signed("linalg." + n, getattr(np.linalg, n), getattr(np.linalg, n))
              for n in LINALG}
    linalg.update(solve=_solve, inv=_inv, cholesky=_cholesky, pinv=_pinv,
                  matrix_rank=_matrix_rank, cross=_linalg_cross)
    main["linalg"] = _module("cupy.linalg", linalg)
    fft = {n: _signed("fft." + n, getattr(np.fft, n), getattr(np.fft, n)) for n in FFT}
    fft.update(rfftn=_real_fft_sorting_axes(fft["rfftn"]),
               irfftn=_real_fft_sorting_axes(fft["irfftn"]))
    main["fft"] = _module("cupy.fft", fft)
    cupy = _module("cupy", main)
    special = {}
    for n in SPECIAL:
        f = getattr(scipy.special, n)
        if n in SPECIAL_UFUNCS:
            nin, nout, *loops = SPECIAL_UFUNCS[n].split()
            special[n] = _special_ufunc(n, int(nin), int(nout), loops, f)
        else:
            # SciPy's Python-level functions would mix in host arrays: run those unwrapped.
            # (SciPy's multi-ufuncs, such as sph_harm_y, take their arrays by position only.)
            multi = type(f).__name__ == "MultiUFunc"
            special[n] = _signed("special." + n, _on_device(f), False if multi else f)
    special["sph_harm_y"] = _sph_harm_y_nan(special["sph_harm_y"])
    special = _module("cupyx.scipy.special", special)
    special.polygamma = _make_polygamma(special)
    special.multigammaln = _make_multigammaln(special)
    slinalg = {n: _on_device(getattr(scipy.linalg, n)) for n in SCIPY_LINALG}
    slinalg.update(expm=_expm, solve_triangular=_solve_triangular)
    slinalg = _module("cupyx.scipy.linalg", slinalg)
    cupyx = _module("cupyx", {"scatter_add": scatter_add, "empty_pinned": _empty_pinned,
                              "scipy": types.SimpleNamespace(special=special, linalg=slinalg)})
    return cupy, cupyx


# ---------------------------------------------------------------- CuPy 14.2's API surface
# The names CuPy shares with NumPy / numpy.linalg / numpy.fft / scipy.special / scipy.linalg.
MAIN = """
    abs absolute acos acosh add all allclose amax amin angle any append apply_along_axis
    apply_over_axes arange arccos arccosh arcsin arcsinh arctan arctan2 arctanh argmax
    argmin argpartition argsort argwhere around array array2string array_equal
    array_equiv array_repr array_split array_str asanyarray asarray asarray_chkfinite
    ascontiguousarray asfortranarray asin asinh astype atan atan2 atanh atleast_1d
    atleast_2d atleast_3d average bartlett base_repr binary_repr bincount bitwise_and
    bitwise_count bitwise_invert bitwise_left_shift bitwise_not bitwise_or
    bitwise_right_shift bitwise_xor blackman bool bool_ broadcast broadcast_arrays
    broadcast_shapes broadcast_to byte c_ can_cast cbrt cdouble ceil choose clip
    column_stack common_type complex128 complex64 complexfloating compress concat
    concatenate conj conjugate convolve copy copysign copyto corrcoef correlate cos cosh
    count_nonzero cov cross csingle cumprod cumsum cumulative_prod cumulative_sum
    deg2rad degrees delete diag diag_indices diag_indices_from diagflat diagonal diff
    digitize divide divmod dot double dsplit dstack dtype e ediff1d einsum empty
    empty_like equal euler_gamma exceptions exp exp2 expand_dims expm1 extract eye fabs
    fft fill_diagonal finfo fix flatiter flatnonzero flip fliplr flipud float16 float32
    float64 float_power floating floor floor_divide fmax fmin fmod
    format_float_positional format_float_scientific frexp from_dlpack frombuffer
    fromfile fromfunction fromiter fromstring full full_like gcd generic genfromtxt
    get_printoptions gradient greater greater_equal half hamming hanning heaviside
    histogram histogram2d histogramdd hsplit hstack hypot i0 identity iinfo imag
    index_exp indices inexact inf inner int16 int32 int64 int8 int_ intc integer interp
    intersect1d intp invert isclose iscomplex iscomplexobj isdtype isfinite isfortran
    isin isinf isnan isneginf isposinf isreal isrealobj isscalar issubdtype iterable ix_
    kaiser kron lcm ldexp left_shift less less_equal lexsort lib linalg linspace load
    loadtxt log log10 log1p log2 logaddexp logaddexp2 logical_and logical_not logical_or
    logical_xor logspace long longlong mask_indices matmul matrix_transpose max maximum
    may_share_memory mean median meshgrid mgrid min min_scalar_type minimum mintypecode
    mod modf moveaxis multiply nan nan_to_num nanargmax nanargmin nancumprod nancumsum
    nanmax nanmean nanmedian nanmin nanprod nanstd nansum nanvar ndarray ndim ndindex
    negative newaxis nextafter nonzero not_equal number ogrid ones ones_like outer
    packbits pad partition percentile permute_dims pi piecewise place poly poly1d
    polyadd polyfit polymul polynomial polysub polyval positive pow power printoptions
    prod promote_types ptp put put_along_axis putmask quantile r_ rad2deg radians random
    ravel ravel_multi_index real real_if_close reciprocal remainder repeat require
    reshape resize result_type right_shift rint roll rollaxis roots rot90 round
    row_stack s_ save savetxt savez savez_compressed searchsorted select
    set_printoptions setdiff1d setxor1d shape shares_memory short show_config sign
    signbit signedinteger sin sinc single sinh size sort sort_complex split sqrt square
    squeeze stack std subtract sum swapaxes take take_along_axis tan tanh tensordot
    testing tile trace transpose trapezoid tri tril tril_indices tril_indices_from
    trim_zeros triu triu_indices triu_indices_from true_divide trunc typename typing
    ubyte ufunc uint uint16 uint32 uint64 uint8 uintc uintp ulong ulonglong union1d
    unique unique_all unique_counts unique_inverse unique_values unpackbits
    unravel_index unsignedinteger unwrap ushort vander var vdot vectorize vsplit vstack
    where zeros zeros_like
""".split()
LINALG = """
    LinAlgError cholesky cond cross det eig eigh eigvals eigvalsh inv lstsq matmul
    matrix_power matrix_rank matrix_transpose norm pinv qr slogdet solve svd tensorinv
    tensorsolve
""".split()
FFT = """
    fft fft2 fftfreq fftn fftshift hfft ifft ifft2 ifftn ifftshift ihfft irfft irfft2
    irfftn rfft rfft2 rfftfreq rfftn
""".split()
SPECIAL = """
    bdtr bdtrc bdtri beta betainc betaincinv betaln binom boxcox boxcox1p cbrt chdtr
    chdtrc chdtri cosdg cosm1 cotdg digamma ellipeinc ellipj ellipk ellipkinc ellipkm1
    entr erf erfc erfcinv erfcx erfinv exp1 exp10 exp2 expi expit expm1 expn exprel fdtr
    fdtrc fdtri gamma gammainc gammaincc gammainccinv gammaincinv gammaln gammasgn gdtr
    gdtrc huber i0 i0e i1 i1e inv_boxcox inv_boxcox1p j0 j1 k0 k0e k1 k1e kl_div
    lambertw log1p log_expit log_ndtr log_softmax loggamma logit logsumexp lpmv
    multigammaln nbdtr nbdtrc nbdtri ndtr ndtri pdtr pdtrc pdtri poch polygamma
    pseudo_huber psi radian rel_entr rgamma round shichi sici sinc sindg softmax
    sph_harm_y spherical_yn tandg wright_bessel xlog1py xlogy y0 y1 yn zeta zetac
""".split()
SCIPY_LINALG = """
    bandwidth block_diag circulant companion convolution_matrix dft expm fiedler
    fiedler_companion hadamard hankel helmert hilbert khatri_rao leslie lu lu_factor
    lu_solve solve_triangular toeplitz
""".split()

# Signatures (CuPy's parameters, in the compact form of `_signature`) of the functions whose
# parameters differ from NumPy's / SciPy's: read from cupy-cuda13x 14.2.0 with inspect.signature.
CUPY_SIGNATURES = _table('''
    all: a axis= out= keepdims=
    amax: a axis= out= keepdims=
    amin: a axis= out= keepdims=
    any: a axis= out= keepdims=
    arange: start stop= step= dtype=
    argmax: a axis= dtype= out= keepdims=
    argmin: a axis= dtype= out= keepdims=
    argpartition: a kth axis=
    argsort: a axis= kind=
    array: obj dtype= copy= order= subok= ndmin= * blocking=
    array2string: a *args **kwargs
    array_str: arr max_line_width= precision= suppress_small=
    asanyarray: a dtype= order= * copy= blocking=
    asarray: a dtype= order= * copy= blocking=
    ascontiguousarray: a dtype=
    asfortranarray: a dtype=
    astype: x dtype / * copy=
    broadcast_arrays: *args
    broadcast_to: array shape
    clip: a a_min a_max out=
    concat: tup axis= out= * dtype= casting=
    concatenate: tup axis= out= * dtype= casting=
    copy: a order=
    corrcoef: a y= rowvar= bias= ddof= * dtype=
    count_nonzero: a axis=
    cov: a y= rowvar= bias= ddof= fweights= aweights= * dtype=
    delete: arr indices axis=
    ediff1d: arr to_end= to_begin=
    empty: shape dtype= order=
    empty_like: prototype dtype= order= subok= shape=
    extract: condition a
    eye: N M= k= dtype= order=
    flip: a axis=
    fliplr: a
    flipud: a
    format_float_positional: x *args **kwargs
    format_float_scientific: x *args **kwargs
    full: shape fill_value dtype= order=
    full_like: a fill_value dtype= order= subok= shape=
    histogram: x bins= range= density= weights=
    identity: n dtype=
    indices: dimensions dtype=
    intersect1d: arr1 arr2 assume_unique= return_indices=
    isin: element test_elements assume_unique= invert=
    lexsort: keys
    linspace: start stop num= endpoint= retstep= dtype= axis=
    load: file mmap_mode= allow_pickle=
    max: a axis= out= keepdims=
    mean: a axis= dtype= out= keepdims=
    min: a axis= out= keepdims=
    nanargmax: a axis= dtype= out= keepdims=
    nanargmin: a axis= dtype= out= keepdims=
    nanmax: a axis= out= keepdims=
    nanmean: a axis= dtype= out= keepdims=
    nanmin: a axis= out= keepdims=
    nanprod: a axis= dtype= out= keepdims=
    nanstd: a axis= dtype= out= ddof= keepdims=
    nansum: a axis= dtype= out= keepdims=
    nanvar: a axis= dtype= out= ddof= keepdims=
    ones: shape dtype= order=
    ones_like: a dtype= order= subok= shape=
    partition: a kth axis=
    percentile: a q axis= out= overwrite_input= method= keepdims= * interpolation=
    piecewise: x condlist funclist
    prod: a axis= dtype= out= keepdims=
    quantile: a q axis= out= overwrite_input= method= keepdims= * interpolation=
    require: a dtype= requirements=
    reshape: a newshape order= * copy=
    rot90: a k= axes=
    savetxt: fname X *args **kwargs
    savez: file *args **kwds
    savez_compressed: file *args **kwds
    show_config: * _full=
    sort: a axis= kind=
    stack: tup axis= out= * dtype= casting=
    std: a axis= dtype= out= ddof= keepdims=
    sum: a axis= dtype= out= keepdims=
    take: a indices axis= out=
    take_along_axis: a indices axis
    tri: N M= k= dtype=
    trim_zeros: filt trim=
    union1d: arr1 arr2
    unique: ar return_index= return_inverse= return_counts= axis= * equal_nan=
    unpackbits: a axis= bitorder=
    unravel_index: indices dims order=
    var: a axis= dtype= out= ddof= keepdims=
    zeros: shape dtype= order=
    zeros_like: a dtype= order= subok= shape=
    linalg.cholesky: a
    linalg.matrix_power: M n
    linalg.matrix_rank: M tol=
    linalg.matrix_transpose: a
    linalg.pinv: a rcond=
    linalg.svd: a full_matrices= compute_uv=
    fft.fft: a n= axis= norm=
    fft.fft2: a s= axes= norm=
    fft.fftfreq: n d=
    fft.fftn: a s= axes= norm=
    fft.hfft: a n= axis= norm=
    fft.ifft: a n= axis= norm=
    fft.ifft2: a s= axes= norm=
    fft.ifftn: a s= axes= norm=
    fft.ihfft: a n= axis= norm=
    fft.irfft: a n= axis= norm=
    fft.irfft2: a s= axes= norm=
    fft.irfftn: a s= axes= norm=
    fft.rfft: a n= axis= norm=
    fft.rfft2: a s= axes= norm=
    fft.rfftfreq: n d=
    fft.rfftn: a s= axes= norm=
    special.round: a decimals= out=
    special.sph_harm_y: n m theta phi * diff_n=
''')
SPECIAL_UFUNCS = _table('''
    bdtr: 3 1 fff->f dld->d ddd->d
    bdtrc: 3 1 fff->f dld->d ddd->d
    bdtri: 3 1 fff->f dld->d ddd->d
    beta: 2 1 ll->d LL->d ee->d ff->f dd->d
    betainc: 3 1 fff->f ddd->d
    betaincinv: 3 1 fff->f ddd->d
    betaln: 2 1 ll->d LL->d ee->d ff->f dd->d
    binom: 2 1 ff->f dd->d
    boxcox: 2 1 ee->f ff->f dd->d
    boxcox1p: 2 1 ee->f ff->f dd->d
    cbrt: 1 1 l->d L->d e->d f->f d->d
    chdtr: 2 1 ff->f dd->d
    chdtrc: 2 1 ff->f dd->d
    chdtri: 2 1 ff->f dd->d
    cosdg: 1 1 l->d L->d e->d f->f d->d
    cosm1: 1 1 l->d L->d e->d f->f d->d
    cotdg: 1 1 l->d L->d e->d f->f d->d
    digamma: 1 1 l->d e->d f->f d->d F->F D->D
    ellipeinc: 2 1 ff->f dd->d
    ellipj: 2 4 ff->ffff dd->dddd
    ellipk: 1 1 f->f d->d
    ellipkinc: 2 1 ff->f dd->d
    ellipkm1: 1 1 f->f d->d
    entr: 1 1 f->f d->d
    erf: 1 1 e->d f->f d->d
    erfc: 1 1 e->d f->f d->d
    erfcinv: 1 1 f->f d->d
    erfcx: 1 1 e->d f->f d->d
    erfinv: 1 1 f->f d->d
    exp1: 1 1 f->f d->d
    exp10: 1 1 e->d l->d L->d f->f d->d
    exp2: 1 1 e->d l->d L->d f->f d->d
    expi: 1 1 f->f d->d
    expit: 1 1 e->d f->f d->d
    expm1: 1 1 e->d l->d L->d f->f d->d F->F D->D
    expn: 2 1 ff->f dd->d
    exprel: 1 1 l->d L->d e->d f->f d->d F->F D->D
    fdtr: 3 1 fff->f ddd->d
    fdtrc: 3 1 fff->f ddd->d
    fdtri: 3 1 fff->f ddd->d
    gamma: 1 1 l->d e->d f->f d->d F->F D->D
    gammainc: 2 1 ff->f dd->d
    gammaincc: 2 1 ff->f dd->d
    gammainccinv: 2 1 ff->f dd->d
    gammaincinv: 2 1 ff->f dd->d
    gammaln: 1 1 l->d e->d f->f d->d
    gammasgn: 1 1 l->d L->d e->d f->f d->d
    gdtr: 3 1 fff->f ddd->d
    gdtrc: 3 1 fff->f ddd->d
    huber: 2 1 ff->f dd->d
    i0: 1 1 l->d L->d e->d f->f d->d
    i0e: 1 1 l->d L->d e->d f->f d->d
    i1: 1 1 l->d L->d e->d f->f d->d
    i1e: 1 1 l->d L->d e->d f->f d->d
    inv_boxcox: 2 1 ee->f ff->f dd->d
    inv_boxcox1p: 2 1 ee->f ff->f dd->d
    j0: 1 1 l->d L->d e->d f->f d->d
    j1: 1 1 l->d L->d e->d f->f d->d
    k0: 1 1 l->d L->d e->d f->f d->d
    k0e: 1 1 l->d L->d e->d f->f d->d
    k1: 1 1 l->d L->d e->d f->f d->d
    k1e: 1 1 l->d L->d e->d f->f d->d
    kl_div: 2 1 ff->f dd->d
    log1p: 1 1 l->d L->d e->d f->f F->F d->d D->D
    log_expit: 1 1 e->d f->f d->d
    log_ndtr: 1 1 e->d f->f d->d
    loggamma: 1 1 l->d e->d f->f d->d F->F D->D
    logit: 1 1 e->d f->f d->d
    lpmv: 3 1 fff->f ddd->d
    nbdtr: 3 1 lld->d fff->f ddd->d
    nbdtrc: 3 1 lld->d fff->f ddd->d
    nbdtri: 3 1 lld->d fff->f ddd->d
    ndtr: 1 1 e->d f->f d->d
    ndtri: 1 1 f->f d->d
    pdtr: 2 1 ff->f dd->d
    pdtrc: 2 1 ff->f dd->d
    pdtri: 2 1 ld->d ff->f dd->d
    poch: 2 1 ff->f dd->d
    pseudo_huber: 2 1 ff->f dd->d
    psi: 1 1 l->d e->d f->f d->d F->F D->D
    radian: 3 1 lll->d LLL->d eee->d fff->f ddd->d
    rel_entr: 2 1 ff->f dd->d
    rgamma: 1 1 l->d e->d f->f d->d F->F D->D
    shichi: 1 2 f->ff d->dd F->FF D->DD
    sici: 1 2 f->ff d->dd F->FF D->DD
    sinc: 1 1 e->e f->f d->d F->F D->D
    sindg: 1 1 l->d L->d e->d f->f d->d
    tandg: 1 1 l->d L->d e->d f->f d->d
    wright_bessel: 3 1 fff->f ddd->d
    xlog1py: 2 1 ee->d ll->d LL->d ff->f dd->d FF->F DD->D
    xlogy: 2 1 ee->d ll->d LL->d ff->f dd->d FF->F DD->D
    y0: 1 1 l->d L->d e->d f->f d->d
    y1: 1 1 l->d L->d e->d f->f d->d
    yn: 2 1 id->d dd->d
    zeta: 2 1 ff->f dd->d
    zetac: 1 1 l->d L->d e->d f->f d->d
''')
