"""NumPy's elementwise functions that are not primitives, written with ``F`` from them:
``sinc``, ``i0``, ``fmod``, ``heaviside``, ``nan_to_num``, ``angle``, ``rint``, ``fix``,
``divmod``, ``modf``, ``frexp``, ``ldexp``, ``spacing``, ``sort_complex``, ``deg2rad`` /
``radians``, ``rad2deg`` / ``degrees``, ``logaddexp2``, ``fabs``, ``float_power``, ``fmax``,
``fmin``; and NumPy's other names of primitives (``amax``, ``amin``, ``mod``, ``around``,
``conjugate``). Registered (``defcomposite``), so the property suites check them like
primitives; NumPy code calling them on Tensors runs these. ``gcd`` and ``lcm`` have no
derivative: they are in ``ndgrad/numpy/without_derivative.py``.

Step functions (``rint``, ``fix``, ``spacing``, the integral part of ``modf``, the quotient
of ``divmod``) have a zero gradient, as PyTorch's ``round`` and ``trunc``.
"""

from __future__ import annotations

import math
import numbers

from ..core.backend import get_default_dtype
from ..core.ops.elementwise import _apart, _off_integer_quotients, _off_integers
from ..core.ops.registry import Domain, ELEMENTWISE, SHAPE, defalias, defcomposite, sample_numpy
from ..core.tensor import Tensor
from ._arraylike import _ANY, _ANYC, _dtype_of, _is_floating, _no_out, _real_only


# ------------------------------------------------------------- NumPy's elementwise extras
# NumPy's names for functions of primitives (np.deg2rad, np.logaddexp2, ...); NumPy code
# calling them on Tensors runs these (ndgrad/numpy/protocols.py).
_LN2 = 0.6931471805599453
_DEG = 0.017453292519943295  # pi / 180


def float_operand(F, x):
    """``x`` in the floating dtype NumPy's floating-point ufunc loops compute it in: itself
    when floating or complex (or not an array), else the smallest float that holds its
    values, as ``numpy.promote_types(dtype, float16)``: bool and 8-bit integers float16,
    16-bit float32, wider float64 (``np.deg2rad(True)`` is float16, ``np.rint(1)`` float64)."""
    dt = getattr(x, "dtype", None)
    if dt is None or dt.kind in "fc":
        return x
    return F.astype(x, "float16" if dt.itemsize == 1 else "float32" if dt.itemsize == 2
                    else "float64")


@defcomposite(kind=ELEMENTWISE, domain=Domain((-4.0, 4.0)))
def deg2rad(F, x):
    """Degrees to radians, elementwise. Alias: ``radians``.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.deg2rad(ndgrad.tensor([180.0]))
    tensor([3.14159265])
    """
    return float_operand(F, x) * _DEG


@defcomposite(kind=ELEMENTWISE, domain=Domain((-4.0, 4.0)))
def rad2deg(F, x):
    """Radians to degrees, elementwise. Alias: ``degrees``.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.rad2deg(ndgrad.tensor([3.141592653589793]))
    tensor([180.])
    """
    return float_operand(F, x) * (1.0 / _DEG)


defalias("radians", "deg2rad")
defalias("degrees", "rad2deg")


@defcomposite(kind=ELEMENTWISE, nin=2, domain=Domain((-3.0, 3.0)))
def logaddexp2(F, x, y):
    """``log2(2**x + 2**y)``, elementwise, computed stably.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.logaddexp2(ndgrad.tensor([1.0]), ndgrad.tensor([1.0]))
    tensor([2.])
    """
    x, y = float_operand(F, x), float_operand(F, y)
    return F.logaddexp(x * _LN2, y * _LN2) * (1.0 / _LN2)


@defcomposite(kind=ELEMENTWISE, domain=Domain((-2.0, 2.0)))
def fabs(F, x):
    """Absolute value of a real tensor, elementwise (NumPy's ``fabs``; ``abs`` also takes
    complex input).

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.fabs(ndgrad.tensor([-1.5, 2.0]))
    tensor([1.5, 2. ])
    """
    if x.dtype.kind == "c":
        raise TypeError("fabs: complex input is not supported (use abs)")
    return F.abs(float_operand(F, x))  # (NumPy's fabs has floating loops only)


@defcomposite(kind=ELEMENTWISE, nin=2, domain=Domain((0.5, 2.0), (-2.0, 2.0), complex=True))
def float_power(F, x, y):
    """``x ** y`` computed in double precision (float64, or complex128 for complex input),
    whatever the inputs' dtypes.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.float_power(ndgrad.tensor([2.0], dtype=ndgrad.float32), 3).dtype
    dtype('float64')
    """
    complex_ = any(getattr(v, "dtype", None) is not None and v.dtype.kind == "c" or
                   isinstance(v, complex) for v in (x, y))
    wide = "complex128" if complex_ else "float64"
    x = F.astype(x, wide) if hasattr(x, "dtype") else x
    y = F.astype(y, wide) if hasattr(y, "dtype") else y
    return F.pow(x, y)


# (drawn apart, as maximum's: at a tie the derivative is a kink)
@defcomposite(kind=ELEMENTWISE, nin=2, domain=Domain((-2.0, 2.0), valid=_apart))
def fmax(F, x, y):
    """Elementwise maximum that ignores NaN: where one of ``x``, ``y`` is NaN the other is
    returned (``maximum`` propagates NaN).

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.fmax(ndgrad.tensor([1.0, float("nan")]), ndgrad.tensor([float("nan"), 2.0]))
    tensor([1., 2.])
    """
    return F.where(F.isnan(y), x, F.where(F.isnan(x), y, F.maximum(x, y)))


@defcomposite(kind=ELEMENTWISE, nin=2, domain=Domain((-2.0, 2.0), valid=_apart))
def fmin(F, x, y):
    """Elementwise minimum that ignores NaN (see :func:`fmax`).

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.fmin(ndgrad.tensor([1.0, float("nan")]), ndgrad.tensor([float("nan"), 2.0]))
    tensor([1., 2.])
    """
    return F.where(F.isnan(y), x, F.where(F.isnan(x), y, F.minimum(x, y)))



# NumPy's names for existing ops (one declaration, more public names)
defalias("amax", "max")
defalias("amin", "min")
defalias("mod", "remainder")
defalias("around", "round")
defalias("conjugate", "conj")


# --------------------------------------------------------------------------- elementwise
@defcomposite(kind=ELEMENTWISE, domain=_ANYC, method=False)
def sinc(F, x):
    """Normalized sinc ``sin(pi x) / (pi x)`` (1 at 0), elementwise: NumPy's ``sinc``
    (the same function as :func:`ndgrad.special.sinc`). Complex inputs are supported.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.sinc(ndgrad.tensor([0.0, 0.5, 1.5]))
    tensor([ 1.        ,  0.63661977, -0.21220659])
    """
    return F.special.sinc(x)


@defcomposite(kind=ELEMENTWISE, domain=Domain((-3.0, 3.0)), method=False)
def i0(F, x):
    """Modified Bessel function of the first kind of order 0, elementwise (NumPy's ``i0``;
    :func:`ndgrad.special.i0`). ``d/dx i0(x) = i1(x)``. Real inputs only.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.i0(ndgrad.tensor([0.0, 1.0]))
    tensor([1.        , 1.26606588])
    """
    return F.special.i0(x)


def _sign_split(F, v):
    """``(s, v * s)``: the sign of ``v`` as a constant +-1 (from the sign bit, so -0.0 gives
    -1; no derivative) and ``|v|`` exactly, with derivative ``s`` everywhere (0 included,
    where ``abs`` has none)."""
    dt = _dtype_of(v)
    if dt is None:
        s = -1 if math.copysign(1.0, v) < 0 else 1
        return s, v * s
    one = F.ones_like(v)
    s = F.where(F.signbit(v) if dt.kind == "f" else v < 0, -one, one)
    return s, v * s


def _sample_fmod(d):
    sx, sy = d.shapes(2)
    x = d.array(sx, -3.0, 3.0)
    y = sample_numpy().asarray(d.array(sy, 0.5, 2.0) * d.choice([1.0, -1.0]))
    return (x, y), {}


@defcomposite(kind=ELEMENTWISE, nin=2, method=False, sample=_sample_fmod,
              domain=Domain((-3.0, 3.0), (0.5, 2.0), valid=_off_integer_quotients))
def fmod(F, x1, x2, /, out=None):
    """Elementwise remainder of ``x1 / x2`` with the sign of the dividend ``x1`` (C's
    ``fmod``, PyTorch's ``fmod``): ``x1 - trunc(x1 / x2) * x2``. :func:`remainder`
    (``mod``) takes the sign of the divisor.

    Gradients, as PyTorch's: ``1`` for ``x1`` and ``-trunc(x1 / x2)`` for ``x2``.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.fmod(ndgrad.tensor([-7.0, 7.0, -7.0]), ndgrad.tensor([3.0, -3.0, -3.0]))
    tensor([-1.,  1., -1.])
    """
    _no_out("fmod", out)
    # |x1| remainder |x2| is exact (C's fmod of positive numbers), then x1's sign; the signs
    # are constants, so d/dx1 = sx * sx = 1 and d/dx2 = -sx * sy * floor(|x1 / x2|)
    if _dtype_of(x1) is not None and _dtype_of(x1).kind == "b":  # (NumPy's fmod has no
        x1 = F.astype(x1, "int8")                                 # bool loop: int8)
    if _dtype_of(x2) is not None and _dtype_of(x2).kind == "b":
        x2 = F.astype(x2, "int8")
    sx, ax = _sign_split(F, x1)
    sy, ay = _sign_split(F, x2)
    return F.remainder(ax, ay) * sx


def _sample_heaviside(d):
    sx, sy = d.shapes(2)
    x2 = d.array(sy)
    if d.boolean():  # integer steps, zeros included: the derivative in x2 where x1 == 0
        return (d.int_array(sx, -2, 2), x2), {}
    x1 = d.array(sx)
    if not bool(sample_numpy().all(sample_numpy().abs(x1) > 1e-3)):
        d.reject()  # (the step at 0)
    return (x1, x2), {}


@defcomposite(kind=ELEMENTWISE, nin=2, domain=_ANY, method=False, sample=_sample_heaviside)
def heaviside(F, x1, x2, /, out=None):
    """The Heaviside step: 0 where ``x1 < 0``, ``x2`` where ``x1 == 0``, 1 where ``x1 > 0``
    (NaN where ``x1`` is NaN), elementwise.

    The derivative in ``x1`` is 0 away from 0 (PyTorch has none); in ``x2``, 1 where
    ``x1 == 0`` and 0 elsewhere.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.heaviside(ndgrad.tensor([-1.5, 0.0, 2.0]), 0.5)
    tensor([0. , 0.5, 1. ])
    """
    _no_out("heaviside", out)
    if not _is_floating(x1) and not _is_floating(x2):  # (NumPy's floating loops)
        x1, x2 = float_operand(F, x1), float_operand(F, x2)
    at_zero = F.where(x1 == 0, x2, x1)  # (x1 itself where it is NaN)
    return F.where(x1 < 0, 0.0, F.where(x1 > 0, 1.0, at_zero))


# the largest finite value of each floating dtype (nan_to_num's default replacements)
_FLOAT_MAX = {"float16": 65504.0, "float32": 3.4028234663852886e38,
              "float64": 1.7976931348623157e308, "bfloat16": 3.3895313892515355e38}


def _replace_nonfinite(F, x, nan, posinf, neginf):
    name = str(x.dtype)
    if posinf is None or neginf is None:
        if name not in _FLOAT_MAX:
            raise TypeError(f"nan_to_num: no default replacement for infinities of dtype "
                            f"{name}; pass posinf= and neginf=")
        big = _FLOAT_MAX[name]
    pos = big if posinf is None else posinf
    neg = -big if neginf is None else neginf
    finite = F.where(x == math.inf, pos, F.where(x == -math.inf, neg, x))
    return F.where(F.isnan(x), nan, finite)


def _sample_nan_to_num(d):
    np = sample_numpy()
    shape = d.shape()
    x = d.array(shape)
    kwargs = d.choice([{}, {"nan": 1.5}])
    if d.boolean():  # some entries NaN or infinite (their derivative is 0 on both sides)
        rng = np.random.default_rng(d.integers(0, 2 ** 16))
        hit = rng.random(shape) < 0.4
        # (complex: NaN only; the suites scale inputs, and a complex infinity times a real
        # number is NaN in one part)
        kinds = 1 if x.dtype.kind == "c" else 3
        part = np.where(hit, np.array([np.nan, np.inf, -np.inf])[rng.integers(0, kinds, shape)],
                        0)
        x = np.where(hit, part + 1j * x.imag if x.dtype.kind == "c" else part, x)
        # (finite replacements: the dtype's largest value overflows the suites' weighted
        # sums; tests/test_numeric.py checks the defaults)
        kwargs.update(posinf=3.0, neginf=-4.0)
    return (np.asarray(x),), kwargs


@defcomposite(kind=ELEMENTWISE, domain=_ANYC, method=False, sample=_sample_nan_to_num)
def nan_to_num(F, x, copy=True, nan=0.0, posinf=None, neginf=None):
    """``x`` with NaN replaced by ``nan``, positive infinity by ``posinf`` and negative
    infinity by ``neginf`` (by default the largest finite values of the dtype); for complex
    ``x``, in the real and imaginary parts separately.

    The gradient passes through the finite values and is 0 at the replaced ones.
    ``copy=False`` writes the result into ``x`` (an in-place operation, recorded as such).

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.nan_to_num(ndgrad.tensor([float("nan"), 1.0, float("-inf")]), neginf=-9.0)
    tensor([ 0.,  1., -9.])
    """
    dt = _dtype_of(x)
    if dt is None or dt.kind not in "fc":
        out = F.clone(x) if dt is not None else x  # integers and booleans: nothing to replace
    elif dt.kind == "c":
        re = _replace_nonfinite(F, F.real(x), nan, posinf, neginf)
        im = _replace_nonfinite(F, F.imag(x), nan, posinf, neginf)
        out = F.astype(re, dt) + F.astype(im, dt) * 1j
    else:
        out = _replace_nonfinite(F, x, nan, posinf, neginf)
    if copy:
        return out
    if not isinstance(x, Tensor):
        raise TypeError("nan_to_num: copy=False writes into x, which must be a Tensor")
    x.copy_(out)
    return x


def _angle_valid(z, **kw):
    np = sample_numpy()
    z = np.asarray(z)
    away = np.abs(z) > 1e-3
    if z.dtype.kind == "c":  # off the branch cut (the negative real axis)
        away = away & ((z.real > 1e-3) | (np.abs(z.imag) > 1e-3))
    return bool(np.all(away))


def _sample_angle(d):
    x = d.array(d.shape())
    return (x,), ({"deg": True} if d.boolean() else {})


@defcomposite(kind=ELEMENTWISE, method=False, sample=_sample_angle,
              domain=Domain((-2.0, 2.0), complex=True, valid=_angle_valid))
def angle(F, z, deg=False):
    """The counterclockwise angle of each complex value from the positive real axis, in
    ``(-pi, pi]`` (degrees with ``deg=True``): ``atan2(imag(z), real(z))``.

    For real ``z``: 0, or pi where the sign bit is set (NaN stays NaN), with a zero
    gradient, as PyTorch's ``angle``.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.angle(ndgrad.tensor([1.0 + 1.0j, -1.0]), deg=True)
    tensor([ 45., 180.])
    """
    dt = _dtype_of(z)
    if dt is not None and dt.kind == "c":
        a = F.atan2(F.imag(z), F.real(z))
    else:
        if dt is None or dt.kind not in "f":
            z = F.astype(z, get_default_dtype())
        zero = F.zeros_like(z)
        a = F.where(F.isnan(z), z, F.where(F.signbit(z), zero + math.pi, zero))
    return a * (180.0 / math.pi) if deg else a


def _off_half_integers(x, **kw):
    return _off_integers(sample_numpy().asarray(x) - 0.5)


@defcomposite(kind=ELEMENTWISE, method=False,
              domain=Domain((-3.0, 3.0), valid=_off_half_integers))
def rint(F, x, /, out=None):
    """Round to the nearest integer, halves to even (as a float). Zero gradient.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.rint(ndgrad.tensor([-1.5, 0.5, 1.7]))
    tensor([-2.,  0.,  2.])
    """
    _no_out("rint", out)
    return F.round(float_operand(F, x))  # (an integer input gives a float, as NumPy's)


@defcomposite(kind=ELEMENTWISE, method=False, domain=Domain((-3.0, 3.0), valid=_off_integers))
def fix(F, x, out=None):
    """Round toward zero (as a float), NumPy's ``fix``; :func:`trunc`. Zero gradient.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.fix(ndgrad.tensor([-1.7, 1.7]))
    tensor([-1.,  1.])
    """
    _no_out("fix", out)
    return F.trunc(x)


@defcomposite("divmod", kind=ELEMENTWISE, nin=2, method=False,
              domain=Domain((-3.0, 3.0), (0.5, 2.0), valid=_off_integer_quotients))
def divmod_(F, x1, x2, /, out=None):
    """``(floor_divide(x1, x2), remainder(x1, x2))`` together, as Python's ``divmod``.

    The quotient has a zero gradient; the remainder's is :func:`remainder`'s.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.divmod(ndgrad.tensor([7.0, -7.0]), 3.0)
    (tensor([ 2., -3.]), tensor([1., 2.]))
    """
    _no_out("divmod", out)
    return F.floor_divide(x1, x2), F.remainder(x1, x2)


@defcomposite(kind=ELEMENTWISE, method=False, domain=Domain((-3.0, 3.0), valid=_off_integers))
def modf(F, x, /, out=None):
    """The fractional and integral parts of ``x``, elementwise, both with the sign of ``x``.

    The fractional part ``x - trunc(x)`` has derivative 1; the integral part 0.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.modf(ndgrad.tensor([-3.5, 2.25]))
    (tensor([-0.5 ,  0.25]), tensor([-3.,  2.]))
    """
    _no_out("modf", out)
    _real_only("modf", x)
    x = float_operand(F, x)  # (both parts are floats, as NumPy's)
    inf = F.isinf(x)
    zero = F.copysign(F.zeros_like(x), x)
    finite = F.where(inf, zero, x)  # (no inf - inf)
    return F.where(inf, zero, finite - F.trunc(finite)), F.trunc(x)


def _times_pow2(F, v, k):
    """``v * 2**k`` for integer-valued float ``k``, exactly: in two factors, each a normal
    number wherever the result is (``2**k`` alone overflows for ``k >= 1024``)."""
    h = F.floor(k * 0.5)
    return v * F.pow(2.0, h) * F.pow(2.0, k - h)  # (exact on the CPU; CUDA's pow is within
    # 2 ulp of 2**h for large |h|: docs/devices.rst)


def _frexp_valid(x, **kw):
    np = sample_numpy()
    ax = np.abs(np.asarray(x))
    return bool(np.all(ax > 1e-3)) and _off_integers(np.log2(ax))  # (steps at 2**k)


@defcomposite(kind=ELEMENTWISE, method=False, domain=Domain((-3.0, 3.0), valid=_frexp_valid))
def frexp(F, x, /, out=None):
    """Mantissa and exponent: ``x == m * 2**e`` with ``0.5 <= |m| < 1`` (``m = x``, ``e = 0``
    at 0, infinities and NaN); ``e`` is int32, as NumPy's.

    ``dm/dx = 2**-e`` (constant on each binade).

    Examples
    --------
    >>> import ndgrad
    >>> m, e = ndgrad.frexp(ndgrad.tensor([8.0, -0.375, 0.0]))
    >>> m
    tensor([ 0.5 , -0.75,  0.  ])
    >>> e
    tensor([ 4, -1,  0], dtype=int32)
    """
    _no_out("frexp", out)
    _real_only("frexp", x)
    x = float_operand(F, x)  # (NumPy's floating loops: bool gives float16)
    ok = F.logical_and(F.isfinite(x), x != 0)
    ax = F.where(ok, F.abs(x), 1.0)
    e = F.floor(F.log2(ax)) + 1.0
    # log2 may round across an integer next to a power of two: correct by one either way
    m = _times_pow2(F, ax, -e)
    e = F.where(m >= 1.0, e + 1.0, F.where(m < 0.5, e - 1.0, e))
    e = F.where(ok, e, 0.0)
    return _times_pow2(F, x, -e), F.astype(e, "int32")


def _sample_ldexp(d):
    sx, se = d.shapes(2)
    return (d.array(sx), d.int_array(se, -3, 3)), {}


@defcomposite(kind=ELEMENTWISE, nin=2, method=False, domain=_ANY, sample=_sample_ldexp)
def ldexp(F, x1, x2, /, out=None):
    """``x1 * 2**x2`` for integer exponents ``x2``, elementwise (exact wherever the result
    is representable). Differentiable in ``x1`` (derivative ``2**x2``).

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.ldexp(ndgrad.tensor([0.75, 1.5]), ndgrad.tensor([2, -1]))
    tensor([3.  , 0.75])
    """
    _no_out("ldexp", out)
    _real_only("ldexp", x1)
    dt2 = _dtype_of(x2)
    if (dt2 is not None and dt2.kind not in "iub") or (dt2 is None and
                                                        not isinstance(x2, numbers.Integral)):
        raise TypeError("ldexp: the exponents x2 must be integers (got "
                        f"{dt2 if dt2 is not None else type(x2).__name__}); cast them with "
                        "astype(int)")
    like = x1 if _dtype_of(x1) is not None else (x2 if dt2 is not None else None)
    if _dtype_of(x1) is not None:
        x1 = float_operand(F, x1)
    elif not isinstance(x1, (float, complex)):  # a Python int or bool beside the exponent
        x1 = F.zeros((), dtype="float16", like=like) + x1  # array: NumPy's float16 loop
    dt = _dtype_of(x1) or get_default_dtype()
    if dt2 is None:
        x2 = F.zeros((), dtype="int64", like=like) + x2
    return _times_pow2(F, x1, F.astype(x2, dt))


def _spacing_valid(x, **kw):
    return _frexp_valid(x)


@defcomposite(kind=ELEMENTWISE, method=False,
              domain=Domain((-3.0, 3.0), valid=_spacing_valid))
def spacing(F, x, /, out=None):
    """The distance from ``x`` to the adjacent floating value away from zero (negative for
    negative ``x``; NaN at infinities), elementwise.

    A step function (constant on each binade): zero gradient, as :func:`floor`'s.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.spacing(ndgrad.tensor([1.0, -1.0]))
    tensor([ 2.22044605e-16, -2.22044605e-16])
    """
    _no_out("spacing", out)
    _real_only("spacing", x)
    x = float_operand(F, x)
    v = F.nextafter(x, x)  # x's value, without a derivative
    away = F.full_like(v, math.inf)
    step = F.nextafter(v, F.where(v < 0, -away, away)) - v
    return F.where(F.isnan(x), x, step)  # (connected to x: zero gradient except at NaN)


def _sample_sort_complex(d):
    np = sample_numpy()
    shape = d.shape(min_dims=1)
    a = d.array(shape)
    gaps = np.diff(np.sort(np.real(a), axis=-1), axis=-1)
    if gaps.size and gaps.min() < 1e-3:
        d.reject()  # (real parts apart: the order does not change under finite differences)
    return (a,), {}


@defcomposite(kind=SHAPE, domain=_ANYC, method=False, sample=_sample_sort_complex)
def sort_complex(F, a):
    """``a`` sorted along its last axis by real part, then imaginary part; always complex
    (complex128, complex64 for small integers).

    The gradient follows the values to their places (at ties, the stable sort's order).

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.sort_complex(ndgrad.tensor([1.0 + 2.0j, 1.0 - 1.0j, -3.0 + 0.0j]))
    tensor([-3.+0.j,  1.-1.j,  1.+2.j])
    """
    if len(a.shape) == 0:
        raise ValueError("sort_complex: cannot sort a 0-d tensor")
    if a.dtype.kind != "c":
        small = a.dtype.kind in "iub" and a.dtype.itemsize <= 2
        return F.astype(F.sort(a, axis=-1), "complex64" if small else "complex128")
    by_imag = F.take_along_axis(a, F.argsort(F.imag(a), axis=-1), axis=-1)
    return F.take_along_axis(by_imag, F.argsort(F.real(by_imag), axis=-1), axis=-1)
