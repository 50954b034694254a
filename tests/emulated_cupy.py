"""A NumPy-backed stand-in for CuPy, so the CUDA backend's code paths run without a GPU.

ndgrad's :class:`~ndgrad.core.backend.CupyBackend` takes the ``cupy`` and ``cupyx`` modules as
arguments (Note [The CUDA backend]); the test suite hands it the two modules below. They
present CuPy 14.2's API surface (the name lists at the end were read from ``cupy-cuda12x``
14.2.0) over NumPy memory, and behave as CuPy does where ndgrad could go wrong:

* device arrays are their own type (:class:`ndarray`, a NumPy subclass); mixing one with a
  host ``numpy.ndarray`` in an operation raises TypeError, as CuPy does;
* operations return 0-d device arrays where NumPy returns scalars, and indexing with
  integers (``a[k]``) a 0-d view of the element, which a later write to it changes;
* each array remembers its device; an operation on an array of another device than the
  current one raises, as CuPy does without peer access; two devices are visible;
* functions CuPy lacks (``errstate``, ``vecdot``, ``linalg.vector_norm``, ...) are missing;
* there is no implicit conversion: ``float()``/``.item()`` work, ``asnumpy`` copies out;
* no floating-point warnings (CuPy does not report division by zero or invalid values).

What it cannot catch: ``numpy.asarray(device_array)`` silently views the memory (it is a NumPy
subclass), and GPU-only numerics (TF32 matmuls, non-deterministic reductions).
"""

from __future__ import annotations

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


class ndarray(np.ndarray):  # noqa: N801 - CuPy's name
    """A device array: NumPy memory behind CuPy's rules (see the module docstring)."""

    def __array_finalize__(self, obj):
        self._device_id = getattr(obj, "_device_id", _CURRENT[0])

    @property
    def device(self):
        return Device(self._device_id)

    def get(self):
        return np.array(self.view(np.ndarray), copy=True)

    def __getitem__(self, index):
        index = _unwrap(index)
        r = np.ndarray.__getitem__(self, index)
        if isinstance(r, np.generic):  # integer indices: CuPy gives a 0-d VIEW, not a copy
            r = np.ndarray.__getitem__(self, (index if type(index) is tuple else (index,))
                                       + (Ellipsis,))
        return _wrap(r, self._device_id)

    def __setitem__(self, index, value):
        _check((value,))
        np.ndarray.__setitem__(self, _unwrap(index), _unwrap(value))

    def __array_ufunc__(self, ufunc, method, *inputs, out=None, **kwargs):
        dev = _check(inputs + (out or ()))
        if out is not None:
            kwargs["out"] = tuple(_unwrap(o) for o in out)
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


ndarray.__module__ = "cupy"  # as CuPy's own: ndgrad recognises CuPy arrays by their module


def _check(args, kwargs=None):
    """The device of the device arrays among ``args``; TypeError for a host array, ValueError
    for an array on another device than the current one (CuPy's rules)."""
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
    triu_indices diag_indices fromiter frombuffer array asanyarray ascontiguousarray
    asfortranarray
""".split())


def _asarray(a, dtype=None, order=None, *, copy=None, blocking=False):
    """``cupy.asarray``: the array itself when nothing changes, else a device copy (from host
    data too)."""
    if isinstance(a, ndarray) and copy is not True and (dtype is None or
                                                         np.dtype(dtype) == a.dtype):
        return a
    return _wrap(np.array(_unwrap(a), dtype=dtype, order=order or "K"), _CURRENT[0])


class _ufunc:  # noqa: N801 - a ufunc's stand-in
    """A NumPy ufunc whose results are device arrays even for scalar inputs, as CuPy's are."""

    def __init__(self, f):
        self._f = f
        self.__name__ = f.__name__
        self.nin, self.nout = f.nin, f.nout

    def __call__(self, *args, **kwargs):
        dev = _check(args, kwargs)
        with np.errstate(all="ignore"):
            return _wrap(self._f(*_unwrap(args), **_unwrap(kwargs)), dev)

    def __getattr__(self, name):  # reduce, outer, ...: on device arrays they dispatch
        return getattr(self._f, name)


def asnumpy(a, stream=None, order="C", out=None, *, blocking=True):
    if isinstance(a, ndarray):
        return a.get()
    return np.asarray(a, order=order)


def _rng(seed=None):
    g = np.random.default_rng(seed)

    class Generator:
        def standard_normal(self, size=None, dtype=np.float64):
            return _wrap(g.standard_normal(size, dtype=dtype), _CURRENT[0])

        def random(self, size=None, dtype=np.float64):
            return _wrap(g.random(size, dtype=dtype), _CURRENT[0])
    return Generator()


def scatter_add(a, slices, value):
    """``cupyx.scatter_add``: ``a[slices] += value`` with repeated indices accumulating."""
    _check((a, slices, value))
    np.add.at(_unwrap(a), _unwrap(slices), _unwrap(value))


def _module(name, attrs):
    m = types.ModuleType(name)
    m.__dict__.update(attrs)
    return m


def make_modules():
    """Fresh ``(cupy, cupyx)`` stand-ins."""
    main = {}
    for n in MAIN:
        f = getattr(np, n)
        if isinstance(f, np.ufunc):
            f = _ufunc(f)  # CuPy's ufuncs give device arrays for scalar inputs too
        elif n in _CREATION:
            f = _on_device(f, check_inputs=False)
        main[n] = f
    main["asarray"] = _asarray
    main.update(
        ndarray=ndarray, asnumpy=asnumpy,
        cuda=types.SimpleNamespace(
            Device=Device,
            runtime=types.SimpleNamespace(getDeviceCount=lambda: DEVICE_COUNT)),
        random=types.SimpleNamespace(default_rng=_rng),
        linalg=_module("cupy.linalg", {n: getattr(np.linalg, n) for n in LINALG}),
        fft=_module("cupy.fft", {n: getattr(np.fft, n) for n in FFT}),
    )
    cupy = _module("cupy", main)
    # SciPy's ufuncs dispatch on device arrays by themselves; its Python-level functions
    # (polygamma, zeta, multigammaln, ...) would mix in host arrays: run those unwrapped
    special = _module("cupyx.scipy.special", {
        n: f if isinstance(f, np.ufunc) else _on_device(f)
        for n, f in ((n, getattr(scipy.special, n)) for n in SPECIAL)})
    slinalg = _module("cupyx.scipy.linalg",
                      {n: _on_device(getattr(scipy.linalg, n)) for n in SCIPY_LINALG})
    cupyx = _module("cupyx", {"scatter_add": scatter_add,
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
