"""NumPy's remaining numeric functions, written from primitives: the elementwise extras
(``fmod``, ``heaviside``, ``nan_to_num``, ``angle``, ``rint``, ``fix``, ``frexp``,
``ldexp``, ``modf``, ``divmod``, ``spacing``, ``sinc``, ``i0``, ``sort_complex``), the
NaN-ignoring order statistics and product (``nanquantile``, ``nanpercentile``,
``nanmedian``, ``nanprod``), NumPy's aliases of existing ops (``amax``, ``amin``, ``mod``,
``around``, ``conjugate``), and the creation functions: ``copy``, ``vander``, and
``logspace``, ``geomspace``, ``kaiser``, which are differentiable in their number inputs
(``start``/``stop``, ``beta``) when those are Tensors, as in JAX.

These are registered (``defcomposite``), so the property suites check them like primitives;
NumPy code calling them on Tensors runs these. Functions whose result depends on a data
decision (``real_if_close``) or that take no tensor input at all (``array``, ``identity``,
``tri``, ``indices``, ``fromfunction`` and the windows ``bartlett``, ``blackman``,
``hamming``, ``hanning``) are plain functions at the end of this module
(:data:`CREATION`). ``gcd`` and ``lcm`` have no derivative: they are in
``ndgrad/without_derivative.py``.

Step functions (``rint``, ``fix``, ``spacing``, the integral part of ``modf``, the quotient
of ``divmod``) have a zero gradient, as PyTorch's ``round`` and ``trunc``.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from ..backend import _placed, as_dtype, get_default_dtype
from ..creation import _numpy_layout, asarray, eye, from_tensor, stacked
from ..creation import linspace as _creation_linspace
from ..dispatch import TENSOR_F
from ..namespace import holds_tensor
from ..tensor import Tensor, as_data, finish
from .composites import float_operand
from .elementwise import _off_integer_quotients, _off_integers
from .reductions import _sample_prod
from .registry import (ELEMENTWISE, LINALG, REDUCTION, SHAPE, Domain, defalias, defcomposite,
                       sample_numpy)
from .stacking import _no_out
from .statistics import _non_nan, _qs, _quantile_input, _sample_percentile, _sample_quantile

_ANY = Domain((-2.0, 2.0))
_ANYC = Domain((-2.0, 2.0), complex=True)

# NumPy's names for existing ops (one declaration, more public names)
defalias("amax", "max")
defalias("amin", "min")
defalias("mod", "remainder")
defalias("around", "round")
defalias("conjugate", "conj")


def _dtype_of(x):
    return getattr(x, "dtype", None)


def _is_floating(x):
    dt = _dtype_of(x)
    return dt.kind in "fc" if dt is not None else isinstance(x, (float, complex))


def _ones_linked(F, x, shape):
    """Ones of ``shape`` (in ``x``'s dtype) that depend on ``x`` with a zero derivative: a
    result that is constant in a tensor input still records it (and carries a tangent), as
    every result computed from a tensor that requires grad does."""
    return F.where(F.ones(shape, dtype="bool", like=x), 1, x)


def _real_only(who, *xs):
    for x in xs:
        dt = _dtype_of(x)
        if (dt is not None and dt.kind == "c") or isinstance(x, complex):
            raise TypeError(f"{who}: complex input is not supported (NumPy's {who} has no "
                            "complex loop)")


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


# ------------------------------------------------------------------------ NaN-ignoring
def _nan_quantiles(F, a, qs, scalar, axis, keepdims, method, who):
    """Linear-interpolation quantiles of the non-NaN elements over ``axis``, as PyTorch's
    ``nanquantile``: NaNs sort last, and each slice interpolates among its own count of
    values (NaN for a slice of NaNs only, with zero gradients)."""
    a2, keep = _quantile_input(F, a, axis, method, who)
    s = F.sort(a2, axis=-1)  # (stable: tied elements keep their index order)
    _, _, count = _non_nan(F, a2, -1, True)
    last = F.maximum(count - 1.0, 0.0)
    out = []
    for q in qs:
        pos = last * q
        lo, hi = F.floor(pos), F.ceil(pos)
        w = pos - lo
        v_lo = F.take_along_axis(s, F.astype(lo, "int64"), axis=-1)
        v_hi = F.take_along_axis(s, F.astype(hi, "int64"), axis=-1)
        v = F.where(count > 0, v_lo + (v_hi - v_lo) * w, math.nan)[..., 0]
        if keepdims:
            v = F.reshape(v, keep)
        out.append(v)
    return out[0] if scalar else F.stack(out, axis=0)


def _quantile_args(who, out, weights, interpolation):
    _no_out(who, out)
    if weights is not None:
        raise TypeError(f"{who}: weights= is not supported (NumPy allows it only with "
                        "method='inverted_cdf'); leave it None")
    if interpolation is not None:
        raise TypeError(f"{who}: interpolation= is NumPy's deprecated name of method=; use "
                        "method='linear' (the default)")


# (Note [Signatures are NumPy's] in tests/test_signatures.py)
_INTERPOLATION = {"signature": (
    "``interpolation``: NumPy's former name of method= (gone from NumPy 2.4), accepted only to "
    "say so in a TypeError")}


@defcomposite(kind=REDUCTION, domain=_ANY, method=False, sample=_sample_quantile,
              notes=_INTERPOLATION)
def nanquantile(F, a, q, axis=None, out=None, overwrite_input=False, method="linear",
                keepdims=False, *, weights=None, interpolation=None):
    """The ``q``-th quantiles (``q`` in [0, 1], a number or a 1-D sequence) of the non-NaN
    elements of ``a`` over ``axis``, linearly interpolated (NumPy's default method); NaN
    where a slice is all NaN.

    The gradient goes to the (at most two) elements interpolated between, split by the
    weights, as PyTorch's ``nanquantile``; tied elements keep their index order (a stable
    sort); it is zero at the NaNs. ``overwrite_input`` is accepted and has no effect.

    Examples
    --------
    >>> import ndgrad
    >>> x = ndgrad.tensor([1.0, float("nan"), 4.0, 2.0], requires_grad=True)
    >>> y = ndgrad.nanquantile(x, 0.25)
    >>> y
    tensor(1.5, grad_fn=<GetitemBackward0>)
    >>> y.backward()
    >>> x.grad
    tensor([0.5, 0. , 0. , 0.5])
    """
    _quantile_args("nanquantile", out, weights, interpolation)
    qs, scalar = _qs(q, "nanquantile")
    return _nan_quantiles(F, a, qs, scalar, axis, keepdims, method, "nanquantile")


@defcomposite(kind=REDUCTION, domain=_ANY, method=False, sample=_sample_percentile,
              notes=_INTERPOLATION)
def nanpercentile(F, a, q, axis=None, out=None, overwrite_input=False, method="linear",
                  keepdims=False, *, weights=None, interpolation=None):
    """The ``q``-th percentiles (``q`` in [0, 100]) of the non-NaN elements of ``a``:
    :func:`nanquantile` of ``q / 100``.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.nanpercentile(ndgrad.tensor([1.0, float("nan"), 3.0]), 50)
    tensor(2.)
    """
    _quantile_args("nanpercentile", out, weights, interpolation)
    values = q.tolist() if hasattr(q, "tolist") else q
    scaled = [v / 100 for v in values] if isinstance(values, (list, tuple)) else values / 100
    qs, scalar = _qs(scaled, "nanpercentile")
    return _nan_quantiles(F, a, qs, scalar, axis, keepdims, method, "nanpercentile")


@defcomposite(kind=REDUCTION, domain=_ANY, method=False)
def nanmedian(F, a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """The median of the non-NaN elements of ``a`` over ``axis`` (the mean of the two middle
    values for an even count, as NumPy's; PyTorch's ``nanmedian`` takes the lower one).

    The gradient goes to the middle element(s), zero at the NaNs.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.nanmedian(ndgrad.tensor([[3.0, float("nan"), 1.0], [2.0, 5.0, 4.0]]), axis=1)
    tensor([2., 4.])
    """
    _no_out("nanmedian", out)
    return _nan_quantiles(F, a, [0.5], True, axis, keepdims, "linear", "nanmedian")


def _sample_nanprod(d):
    # (values near the unit circle: products stay moderate; where= masks are tested in
    # tests/test_numeric.py, a NumPy mask being a CPU array)
    (x,), kwargs = _sample_prod(d)
    if d.boolean():
        kwargs["initial"] = d.choice([2.0, -0.5])
    return (x,), kwargs


@defcomposite(kind=REDUCTION, domain=_ANYC, method=False, sample=_sample_nanprod)
def nanprod(F, a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=True):
    """Product over ``axis`` treating NaNs as one (their gradient is zero); ``initial``
    multiplies the result, ``where`` (a boolean mask broadcast to ``a``) selects the
    elements included.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.nanprod(ndgrad.tensor([2.0, float("nan"), 3.0]))
    tensor(6.)
    """
    _no_out("nanprod", out)
    if a.dtype.kind not in "fc":  # (no NaN: NumPy's prod, in its integer dtype)
        a = F.where(where, a, 1) if where is not True else a
        p = F.prod(a, axis=axis, keepdims=keepdims, dtype=dtype)
        return p if initial is None else p * int(initial)  # (initial cast to the dtype)
    skip = F.isnan(a)
    if where is not True:
        skip = F.logical_or(skip, F.logical_not(where))
    p = F.prod(F.where(skip, 1.0, a), axis=axis, keepdims=keepdims, dtype=dtype)
    return p if initial is None else p * initial


# ------------------------------------------------------------------------------ creation
def _sample_copy(d):
    return (d.array(d.shape()),), ({"order": d.choice(["K", "C", "A"])} if d.boolean() else {})


@defcomposite(kind=SHAPE, domain=_ANYC, method=True, sample=_sample_copy)
def copy(F, a, order="K", subok=False):
    """A copy of ``a`` with its own storage; differentiable (the gradient flows back to
    ``a``), as :func:`clone`. ``order`` may be "K", "A" or "C" (a Tensor's layout is its
    own); ``subok`` makes no difference (the copy is a Tensor).

    Examples
    --------
    >>> import ndgrad
    >>> x = ndgrad.tensor([1.0, 2.0], requires_grad=True)
    >>> ndgrad.copy(x)
    tensor([1., 2.], grad_fn=<CloneBackward0>)
    """
    if order not in ("K", "A", "C"):
        raise ValueError(f"copy: order={order!r} is not supported (a Tensor's memory layout "
                         "is its own); use 'K', 'A' or 'C'")
    return F.clone(a)


def _sample_vander(d):
    x = d.array((d.integers(1, 4),))
    return (x,), {"N": d.choice([None, 0, 1, 2, 4]), "increasing": d.boolean()}


@defcomposite(kind=LINALG, domain=_ANYC, method=False, sample=_sample_vander)
def vander(F, x, N=None, increasing=False):
    """The Vandermonde matrix of the 1-D ``x``: columns ``x**(N-1), ..., x**0`` (``N``
    defaults to ``len(x)``; ascending powers with ``increasing``), built by cumulative
    products as NumPy's; differentiable in ``x``.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.vander(ndgrad.tensor([1.0, 2.0, 3.0]), 3)
    tensor([[1., 1., 1.],
            [4., 2., 1.],
            [9., 3., 1.]])
    """
    if len(x.shape) != 1:
        raise ValueError(f"vander: x must be a one-dimensional array or sequence, got shape "
                         f"{tuple(x.shape)}")
    n = x.shape[0]
    N = n if N is None else int(N)
    if N < 0:
        raise ValueError(f"vander: N must be non-negative, got {N}")
    if x.dtype.kind == "b":
        x = F.astype(x, "int64")  # (NumPy: the dtype promoted with int)
    col = F.expand_dims(x, -1)
    if N == 0:
        return col[:, :0]
    cols = [_ones_linked(F, col, (n, 1))]
    if N > 1:
        cols.append(F.broadcast_to(col, (n, N - 1)))
    v = F.cumulative_prod(F.concat(cols, axis=1), axis=1)
    return v if increasing else F.flip(v, axis=1)


def _num(num, who):
    try:
        num = int(num.__index__())
    except (AttributeError, TypeError):
        raise TypeError(f"{who}: num must be an integer, got {type(num).__name__}") from None
    if num < 0:
        raise ValueError(f"{who}: number of samples, {num}, must be non-negative")
    return num


def _first_tensor(*values):
    return next((v for v in values if isinstance(v, Tensor)), None)


def _real_float(*values):
    """The real floating dtype NumPy's ``linspace`` computes ``values`` in: the widest
    floating one among them (integers count as float64), else the default dtype (Python
    numbers)."""
    size = 0
    for v in values:
        dt = _dtype_of(v)
        if dt is not None:
            size = max(size, 8 if dt.kind in "iub" else
                       dt.itemsize // 2 if dt.kind == "c" else dt.itemsize)
    return {2: "float16", 4: "float32", 8: "float64"}[size] if size else \
        str(get_default_dtype())


def _as_operand(F, v, like):
    """A number as a 0-d tensor (the default floating dtype, complex128 for a complex
    number) on ``like``'s device; a tensor as it is."""
    if _dtype_of(v) is not None:
        return v
    if not isinstance(v, numbers.Number):
        raise TypeError(f"expected a number or a tensor, got {type(v).__name__} (convert "
                        "sequences with ndgrad.asarray)")
    dt = "complex128" if isinstance(v, complex) else str(get_default_dtype())
    return F.zeros((), dtype=dt, like=like) + v


def _ndim(v):
    return len(v.shape) if _dtype_of(v) is not None else 0


def _pad_dims(F, v, nd):
    """``v`` with leading length-1 axes up to ``nd`` dimensions (NumPy's ``ndmin``)."""
    k = _ndim(v)
    return F.reshape(v, (1,) * (nd - k) + tuple(v.shape)) if k < nd else v


def _linspace(F, start, stop, num, endpoint, like):
    """NumPy's ``linspace`` along a new first axis, with F's operations: differentiable in
    ``start`` and ``stop`` (``stop`` itself is the last value with ``endpoint``)."""
    shape = tuple(F.broadcast_arrays(start, stop)[0].shape)
    div = num - 1 if endpoint else num
    t = F.astype(F.arange(num, like=like), _real_float(start, stop))
    t = F.reshape(t, (num,) + (1,) * len(shape))
    delta = stop - start
    y = t * (delta / div if div > 0 else delta) + start  # (div <= 0: t is 0, y is start)
    if endpoint and num > 1:
        end = F.expand_dims(stop + F.zeros_like(y[0]), 0)
        y = F.concat([y[:-1], end], axis=0)
    return y


def _sample_logspace(d):
    sa, sb = d.shapes(2, max_dims=2, max_side=3)
    kwargs = {"endpoint": d.boolean(), "base": d.choice([10.0, 2.0]),
              "axis": d.choice([0, -1])}
    return (d.array(sa, -1.0, 1.0), d.array(sb, -1.0, 1.0), d.choice([1, 2, 4])), kwargs


@defcomposite(nin=2, domain=Domain((-1.0, 1.0), complex=True), method=False,
              sample=_sample_logspace)
def logspace(F, start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0):
    """``num`` values ``base ** y`` for ``y`` evenly spaced from ``start`` to ``stop``
    (excluding ``stop`` unless ``endpoint``), along a new ``axis``; ``start``, ``stop`` and
    ``base`` broadcast.

    Numbers or tensors: tensor ``start``, ``stop`` and ``base`` are differentiable (as in
    JAX); the result goes on their device (numbers: the default device, default dtype).

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.logspace(0.0, 3.0, num=4)
    tensor([   1.,   10.,  100., 1000.])
    >>> start = ndgrad.tensor(0.0, requires_grad=True)
    >>> ndgrad.logspace(start, 1.0, num=2, base=2.0).sum().backward()
    >>> start.grad  # d/dstart (2**start) at 0: log(2)
    tensor(0.69314718)
    """
    num = _num(num, "logspace")
    like = _first_tensor(start, stop, base)
    start, stop = _as_operand(F, start, like), _as_operand(F, stop, like)
    nd = max(_ndim(start), _ndim(stop), _ndim(base))
    y = _linspace(F, _pad_dims(F, start, nd), _pad_dims(F, stop, nd), num, endpoint, like)
    if axis != 0:
        y = F.moveaxis(y, 0, axis)
    if _dtype_of(base) is not None:
        base = F.expand_dims(_pad_dims(F, base, nd), axis)
    out = F.pow(base, y)
    return out if dtype is None else F.astype(out, as_dtype(dtype))


def _any_zero(F, v):
    try:
        return bool(F.any(v == 0))
    except RuntimeError:  # a vmap batch has no single value to check (zero then gives NaN)
        return False


def _sample_geomspace(d):
    sa, sb = d.shapes(2, max_dims=2, max_side=3)
    sign = d.choice([1.0, -1.0])  # (same signs: off the logarithm's branch cut)
    kwargs = {"endpoint": d.boolean(), "axis": d.choice([0, -1])}
    np = sample_numpy()
    # (num >= 2: with num=1 the result is start alone, and nested grads of an unused input
    # trip a transform bug; tests/test_numeric.py covers num=1)
    return (np.asarray(sign * d.array(sa, 0.5, 3.0)), np.asarray(sign * d.array(sb, 0.5, 3.0)),
            d.choice([2, 3, 4])), kwargs


@defcomposite(nin=2, domain=Domain((0.5, 3.0), complex=True), method=False,
              sample=_sample_geomspace)
def geomspace(F, start, stop, num=50, endpoint=True, dtype=None, axis=0):
    """``num`` values in geometric progression from ``start`` to ``stop`` (exactly those at
    the ends), along a new ``axis``; negative (both) and complex values as NumPy's: the
    progression of ``start / sign(start)`` to ``stop / sign(start)``, times ``sign(start)``.

    Numbers or tensors: tensor ``start`` and ``stop`` are differentiable (as in JAX).

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.geomspace(1.0, 1000.0, num=4)
    tensor([   1.,   10.,  100., 1000.])
    >>> ndgrad.geomspace(-1.0, -16.0, num=5)
    tensor([ -1.,  -2.,  -4.,  -8., -16.])
    """
    num = _num(num, "geomspace")
    like = _first_tensor(start, stop)
    start, stop = _as_operand(F, start, like), _as_operand(F, stop, like)
    if _any_zero(F, start) or _any_zero(F, stop):
        raise ValueError("geomspace: a geometric sequence cannot include zero")
    real = _real_float(start, stop)
    complex_ = start.dtype.kind == "c" or stop.dtype.kind == "c"
    dt = {"float16": "complex64", "float32": "complex64"}.get(real, "complex128") \
        if complex_ else real
    start, stop = F.astype(start, dt), F.astype(stop, dt)  # (both complex, or both real)
    sign = F.sign(start)
    start, stop = start / sign, stop / sign
    y = F.pow(10.0, _linspace(F, F.log10(start), F.log10(stop), num, endpoint, like))
    if num > 0:  # the ends exactly
        parts = [F.expand_dims(start + F.zeros_like(y[0]), 0)]
        if num > 1:
            parts.append(y[1:-1] if endpoint else y[1:])
            if endpoint:
                parts.append(F.expand_dims(stop + F.zeros_like(y[0]), 0))
        y = F.concat(parts, axis=0) if len(parts) > 1 else parts[0]
    y = y * sign
    if axis != 0:
        y = F.moveaxis(y, 0, axis)
    if dtype is None:
        return y
    dtype = as_dtype(dtype)
    return F.astype(F.floor(y) if dtype.kind in "iu" else y, dtype)


def _sample_kaiser(d):
    return (d.integers(1, 5), d.array((), 0.0, 8.0)), {}


@defcomposite(nin=2, domain=Domain((0.0, 8.0)), method=False, sample=_sample_kaiser)
def kaiser(F, M, beta):
    """The Kaiser window of ``M`` points with shape parameter ``beta``:
    ``i0(beta * sqrt(1 - ((n - alpha) / alpha)**2)) / i0(beta)``, ``alpha = (M - 1) / 2``.

    ``beta`` may be a 0-d tensor: the window is differentiable in it (as JAX's), and goes
    on its device (a number: the default device, float64).

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.kaiser(4, 5.0)
    tensor([0.03671089, 0.7753221 , 0.7753221 , 0.03671089])
    """
    if M != int(M):
        raise ValueError(f"kaiser: M must be an integer, got {M!r}")
    M = int(M)
    if isinstance(beta, numbers.Number):
        beta = F.zeros((), dtype="float64") + float(beta)
    if len(beta.shape) != 0:
        raise ValueError(f"kaiser: beta must be a number or a 0-d tensor, got shape "
                         f"{tuple(beta.shape)}")
    if not _is_floating(beta):
        beta = F.astype(beta, "float64")
    if M <= 1:  # (NumPy: an empty window, or [1.])
        return _ones_linked(F, beta, (max(M, 0),))
    n = F.astype(F.arange(M, like=beta), beta.dtype)
    alpha = (M - 1) / 2.0
    r = F.sqrt(1.0 - ((n - alpha) / alpha) ** 2.0)
    return F.special.i0(beta * r) / F.special.i0(beta)


# ------------------------------------------------------------------ plain functions
# Functions that take no tensor to differentiate (or decide on the data): not registered.
def real_if_close(a, tol=100):
    """``real(a)`` if every imaginary part of the complex ``a`` is within ``tol`` machine
    epsilons of zero (``tol`` itself when it is below 1), else ``a`` (a real ``a`` as it
    is). Differentiable either way.

    The result's dtype depends on the values, so it cannot run under ``vmap``.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.real_if_close(ndgrad.tensor([2.1 + 4e-14j, 5.2 + 3e-15j]), tol=1000)
    tensor([2.1, 5.2])
    >>> ndgrad.real_if_close(ndgrad.tensor([2.1 + 4e-13j]))
    tensor([2.1+4.e-13j])
    """
    nd = TENSOR_F  # (the public functions, filled in once the registry is built)
    if not isinstance(a, Tensor):
        a = asarray(a)
    if a.dtype.kind != "c":
        return a
    if tol > 1:
        tol = tol * {8: 1.1920928955078125e-07, 16: 2.220446049250313e-16}.get(
            a.dtype.itemsize, 2.220446049250313e-16)
    if bool(nd.all(nd.abs(nd.imag(a)) < tol)):
        return nd.real(a)
    return a


def _layout(who, order, like, device):
    """NumPy's ``order`` (a Tensor's layout is its own) and ``like`` (a Tensor: the device
    it is on, unless ``device`` is given)."""
    if isinstance(like, Tensor):
        return like.device if device is None else device
    _numpy_layout(who, order, like)
    return device


def _float_or(dtype):
    """NumPy's ``float`` default is ndgrad's default floating dtype."""
    return get_default_dtype() if dtype is None or dtype is float else as_dtype(dtype)


def array(object, dtype=None, *, copy=True, order="K", subok=False,  # noqa: A002
          ndmin=0, like=None, device=None, requires_grad=False):
    """NumPy's ``array``: a tensor from ``object`` (nested sequences, scalars, arrays,
    tensors), with at least ``ndmin`` dimensions.

    A Tensor stays in its graph: the copy (``copy=True``, the default), the cast to
    ``dtype`` and the move to ``device`` are differentiable, as :func:`copy` and
    :func:`astype`; ``copy=None`` copies only when needed, ``copy=False`` never (a
    ValueError when a copy is needed). A (nested) list or tuple holding tensors is stacked
    differentiably, as JAX's ``jnp.array`` does: numbers in it take the tensors' dtype and
    device, and the result is a new tensor (so ``copy=False`` is a ValueError, as NumPy's
    for a list). Other data becomes a new leaf, as :func:`tensor`. ``device`` and
    ``requires_grad`` are ndgrad's additions; ``order`` may be "K", "A" or "C" and ``like``
    a Tensor (the result goes on its device).

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.array([1, 2], ndmin=2)
    tensor([[1, 2]])
    >>> x = ndgrad.tensor([1.0, 2.0], requires_grad=True)
    >>> ndgrad.array(x, dtype=ndgrad.float32)
    tensor([1., 2.], dtype=float32, grad_fn=<AstypeBackward0>)
    >>> a, b = ndgrad.tensor(3.0, requires_grad=True), ndgrad.tensor(4.0, requires_grad=True)
    >>> m = ndgrad.array([[a, 1.0], [2.0, b]])
    >>> m
    tensor([[3., 1.],
            [2., 4.]], grad_fn=<StackBackward0>)
    >>> ndgrad.linalg.det(m).backward()
    >>> a.grad, b.grad  # d det / da = b, d det / db = a
    (tensor(4.), tensor(3.))
    """
    device = _layout("array", order, like, device)
    ndmin = int(ndmin)
    if type(object) in (list, tuple) and holds_tensor(object):
        return from_tensor(stacked(object, copy, "array"), dtype, device, None, requires_grad,
                           "array", ndmin)
    if isinstance(object, Tensor):
        return from_tensor(object, dtype, device, copy, requires_grad, "array", ndmin)
    data = as_data(object, dtype, device, copy=copy)
    if data.ndim < ndmin:
        data = data.reshape((1,) * (ndmin - data.ndim) + data.shape)
    return finish(data, requires_grad)


def identity(n, dtype=None, *, like=None, device=None, requires_grad=False):
    """The ``n x n`` identity matrix (the default floating dtype unless ``dtype``).

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.identity(2)
    tensor([[1., 0.],
            [0., 1.]])
    """
    device = _layout("identity", None, like, device)
    return eye(int(n), dtype=dtype, device=device, requires_grad=requires_grad)


def tri(N, M=None, k=0, dtype=float, *, like=None, device=None, requires_grad=False):
    """``N x M`` (``M`` defaults to ``N``) with ones at and below diagonal ``k`` and zeros
    elsewhere (``float``: the default floating dtype).

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.tri(2, 3, k=1)
    tensor([[1., 1., 0.],
            [1., 1., 1.]])
    """
    device = _layout("tri", None, like, device)
    B, device = _placed(device)
    with B.on(device):
        return finish(B.tri(N, M, k, dtype=_float_or(dtype)), requires_grad)


def indices(dimensions, dtype=int, sparse=False, *, device=None, requires_grad=False):
    """The index grids of a shape: ``out[k][i0, i1, ...] = ik``, stacked into one tensor
    of shape ``(len(dimensions), *dimensions)``, or with ``sparse`` a tuple of broadcastable
    tensors (each of length ``dimensions[k]`` along axis ``k``). No derivative (indices).

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.indices((2, 3))[1]
    tensor([[0, 1, 2],
            [0, 1, 2]])
    """
    dims = tuple(int(n) for n in dimensions)
    B, device = _placed(device)
    d = _float_or(dtype) if dtype is float else as_dtype(dtype)
    with B.on(device):
        grids = [B.arange(n, dtype=d).reshape((1,) * k + (n,) + (1,) * (len(dims) - k - 1))
                 for k, n in enumerate(dims)]
        if sparse:
            return tuple(finish(g, requires_grad) for g in grids)
        out = B.stack([B.broadcast_to(g, dims) for g in grids]) if dims else \
            B.zeros((0,), dtype=d)
    return finish(out, requires_grad)


def fromfunction(function, shape, *, dtype=float, like=None, **kwargs):
    """``function(*grids, **kwargs)`` on the index grids of ``shape`` (:func:`indices` in
    ``dtype``, the default floating dtype for ``float``); its result is returned as it is.
    ``like`` may be a Tensor: the grids go on its device.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.fromfunction(lambda i, j: i + 10 * j, (2, 2))
    tensor([[ 0., 10.],
            [ 1., 11.]])
    """
    device = _layout("fromfunction", None, like, None)
    return function(*indices(shape, dtype=dtype, device=device), **kwargs)


def _window(who, M, dtype, device, requires_grad, formula):
    if M != int(M):
        raise ValueError(f"{who}: M must be an integer, got {M!r}")
    M = int(M)
    B, device = _placed(device)
    d = _float_or(dtype)
    with B.on(device):
        if M < 1:
            w = B.zeros((0,), dtype=d)
        elif M == 1:
            w = B.ones((1,), dtype=d)
        else:  # NumPy's formulas, in float64
            n = B.arange(1 - M, M, 2, dtype="float64")
            w = formula(B, n, float(M)).astype(d)
    return finish(w, requires_grad)


def bartlett(M, *, dtype=None, device=None, requires_grad=False):
    """The Bartlett (triangular) window of ``M`` points, ending in zeros.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.bartlett(5)
    tensor([0. , 0.5, 1. , 0.5, 0. ])
    """
    return _window("bartlett", M, dtype, device, requires_grad, lambda B, n, M: B.where(
        n <= 0, 1 + n / (M - 1), 1 - n / (M - 1)))


def blackman(M, *, dtype=None, device=None, requires_grad=False):
    """The Blackman window of ``M`` points.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.blackman(3)
    tensor([-1.38777878e-17,  1.00000000e+00, -1.38777878e-17])
    """
    return _window("blackman", M, dtype, device, requires_grad, lambda B, n, M: (
        0.42 + 0.5 * B.cos(math.pi * n / (M - 1)) + 0.08 * B.cos(2.0 * math.pi * n / (M - 1))))


def hamming(M, *, dtype=None, device=None, requires_grad=False):
    """The Hamming window of ``M`` points.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.hamming(3)
    tensor([0.08, 1.  , 0.08])
    """
    return _window("hamming", M, dtype, device, requires_grad,
                   lambda B, n, M: 0.54 + 0.46 * B.cos(math.pi * n / (M - 1)))


def hanning(M, *, dtype=None, device=None, requires_grad=False):
    """The Hann window of ``M`` points.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.hanning(3)
    tensor([0., 1., 0.])
    """
    return _window("hanning", M, dtype, device, requires_grad,
                   lambda B, n, M: 0.5 + 0.5 * B.cos(math.pi * n / (M - 1)))


def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0, *,
             device=None, requires_grad=False):
    """``num`` evenly spaced values from ``start`` to ``stop`` (NumPy's ``linspace``),
    excluding ``stop`` unless ``endpoint``, along a new ``axis`` when ``start`` and ``stop``
    are arrays (they broadcast).

    Numbers give a new leaf (``device``, ``requires_grad``); tensor ``start`` and ``stop``
    are differentiable (as in JAX), the result on their device. With ``retstep``, also the
    spacing.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.linspace(0, 1, 5)
    tensor([0.  , 0.25, 0.5 , 0.75, 1.  ])
    >>> stop = ndgrad.tensor(2.0, requires_grad=True)
    >>> ndgrad.linspace(0.0, stop, 3).sum().backward()   # d/dstop (0 + stop/2 + stop)
    >>> stop.grad
    tensor(1.5)
    """
    num = _num(num, "linspace")
    if _first_tensor(start, stop) is None and np.ndim(start) == 0 and np.ndim(stop) == 0:
        out = _creation_linspace(start, stop, num, endpoint=endpoint, dtype=dtype,
                                 device=device, requires_grad=requires_grad)
        if not retstep:
            return out
        div = num - 1 if endpoint else num
        return out, (stop - start) / div if div > 0 else float("nan")
    F = TENSOR_F
    like = _first_tensor(start, stop)
    start = start if isinstance(start, Tensor) or isinstance(start, numbers.Number) else \
        asarray(start, device=device)
    stop = stop if isinstance(stop, Tensor) or isinstance(stop, numbers.Number) else \
        asarray(stop, device=device)
    like = like if like is not None else _first_tensor(start, stop)
    start, stop = _as_operand(F, start, like), _as_operand(F, stop, like)
    nd = max(_ndim(start), _ndim(stop))
    y = _linspace(F, _pad_dims(F, start, nd), _pad_dims(F, stop, nd), num, endpoint, like)
    if axis != 0:
        y = F.moveaxis(y, 0, axis)
    if dtype is not None:
        y = F.astype(y, as_dtype(dtype))
    if not retstep:
        return y
    div = num - 1 if endpoint else num
    return y, ((stop - start) / div if div > 0 else (stop - start) * float("nan"))


# The plain functions, for the package to export: name -> function.
CREATION = {f.__name__: f for f in (real_if_close, array, identity, tri, indices, linspace,
                                     fromfunction, bartlett, blackman, hamming, hanning)}
