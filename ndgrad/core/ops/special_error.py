"""The error functions and the normal distribution of ``ndgrad.special`` (primitives): ``erf``,
``erfc``, ``erfcx``, ``erfinv``, ``erfcinv``, ``ndtr``, ``ndtri``, ``log_ndtr`` and Owen's T
function ``owens_t``. What the families share is in special_shared.py.
"""

from __future__ import annotations

import math

from .registry import Domain, ELEMENTWISE, defop
from .special_shared import (_ASYMPTOTIC, _SQRT_2PI, _SQRT_2_PI, _SQRT_HALF, _SQRT_PI_2,
                             _TWO_SQRT_PI, _real_only)


# ------------------------------------------------------------------------- error functions
@defop(kind=ELEMENTWISE, namespace="special", domain=Domain((-2.0, 2.0), complex=True))
def erf(B, x):
    """Error function ``erf(x) = 2/sqrt(pi) * integral_0^x exp(-t^2) dt``, elementwise.

    Holomorphic: complex inputs are supported. ``d/dx erf(x) = 2/sqrt(pi) exp(-x^2)``.

    Examples
    --------
    >>> import ndgrad
    >>> x = ndgrad.tensor([0.0, 0.5], requires_grad=True)
    >>> ndgrad.special.erf(x).sum().backward()
    >>> x.grad
    tensor([1.12837917, 0.87878258])
    """
    return B.special.erf(x)


erf.defvjp(lambda F, g, out, x: g * F.conj(_TWO_SQRT_PI * F.exp(-x * x)))
erf.defjvp_from_vjp()


@defop(kind=ELEMENTWISE, namespace="special", domain=Domain((-2.0, 2.0), complex=True))
def erfc(B, x):
    """Complementary error function ``1 - erf(x)``, elementwise (accurate for large ``x``).

    Holomorphic: complex inputs are supported. ``d/dx erfc(x) = -2/sqrt(pi) exp(-x^2)``.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.special.erfc(ndgrad.tensor([0.0, 10.0]))
    tensor([1.00000000e+00, 2.08848758e-45])
    """
    return B.special.erfc(x)


erfc.defvjp(lambda F, g, out, x: g * F.conj(-_TWO_SQRT_PI * F.exp(-x * x)))
erfc.defjvp_from_vjp()


@defop(kind=ELEMENTWISE, namespace="special", domain=Domain((-2.0, 2.0), complex=True))
def erfcx(B, x):
    """Scaled complementary error function ``exp(x^2) * erfc(x)``, elementwise.

    Holomorphic: complex inputs are supported. ``d/dx erfcx(x) = 2 x erfcx(x) - 2/sqrt(pi)``.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.special.erfcx(ndgrad.tensor([0.0, 30.0]))  # no overflow for large x
    tensor([1.        , 0.01879589])
    """
    return B.special.erfcx(x)


def _erfcx_grad(F, g, out, x):
    d = 2 * x * out - _TWO_SQRT_PI
    if F.iscomplexobj(x) or F.iscomplexobj(g):
        return g * F.conj(d)
    # for x > 1e3, 2 x erfcx(x) - 2/sqrt(pi) cancels (all digits lost by 1e8); its asymptotic
    # series -(1/sqrt(pi)) (x^-2 - 3/2 x^-4 + 15/4 x^-6) instead (Note [Large arguments])
    big = x > _ASYMPTOTIC
    u = 1 / F.where(big, x, 2 * _ASYMPTOTIC) ** 2
    series = -(1 / math.sqrt(math.pi)) * u * (1 - u * (1.5 - 3.75 * u))
    return g * F.where(big, series, d)


erfcx.defvjp(_erfcx_grad)
erfcx.defjvp_from_vjp()


@defop(kind=ELEMENTWISE, namespace="special", domain=Domain((-0.85, 0.85)))
def erfinv(B, x):
    """Inverse error function on ``(-1, 1)``, elementwise (``+-inf`` at ``+-1``).

    ``d/dx erfinv(x) = sqrt(pi)/2 exp(erfinv(x)^2)``. Real inputs only.

    Examples
    --------
    >>> import ndgrad
    >>> x = ndgrad.tensor([0.0, 0.5], requires_grad=True)
    >>> y = ndgrad.special.erfinv(x)
    >>> ndgrad.special.erf(y)
    tensor([0. , 0.5], grad_fn=<SpecialErfBackward0>)
    >>> y.sum().backward()
    >>> x.grad
    tensor([0.88622693, 1.11258482])
    """
    _real_only("erfinv", x)
    return B.special.erfinv(x)


erfinv.defvjp(lambda F, g, out, x: g * (_SQRT_PI_2 * F.exp(out * out)))
erfinv.defjvp_from_vjp()


@defop(kind=ELEMENTWISE, namespace="special", domain=Domain((0.15, 1.7)))
def erfcinv(B, x):
    """Inverse complementary error function on ``(0, 2)``: ``erfc(erfcinv(x)) = x``.

    ``d/dx erfcinv(x) = -sqrt(pi)/2 exp(erfcinv(x)^2)``. Real inputs only.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.special.erfcinv(ndgrad.tensor([0.5, 1.5]))
    tensor([ 0.47693628, -0.47693628])
    """
    _real_only("erfcinv", x)
    return B.special.erfcinv(x)


erfcinv.defvjp(lambda F, g, out, x: g * (-_SQRT_PI_2 * F.exp(out * out)))
erfcinv.defjvp_from_vjp()


# ------------------------------------------------------------------------- normal distribution
@defop(kind=ELEMENTWISE, namespace="special", domain=Domain((-3.0, 3.0), complex=True))
def ndtr(B, x):
    """Standard normal cumulative distribution function ``(1 + erf(x / sqrt(2))) / 2``.

    Holomorphic: complex inputs are supported. The derivative is the normal density
    ``exp(-x^2 / 2) / sqrt(2 pi)``.

    Examples
    --------
    >>> import ndgrad
    >>> x = ndgrad.tensor([0.0, 1.0], requires_grad=True)
    >>> ndgrad.special.ndtr(x)
    tensor([0.5       , 0.84134475], grad_fn=<SpecialNdtrBackward0>)
    >>> ndgrad.special.ndtr(x).sum().backward()
    >>> x.grad
    tensor([0.39894228, 0.24197072])
    """
    return B.special.ndtr(x)


ndtr.defvjp(lambda F, g, out, x: g * F.conj(F.exp(-0.5 * x * x) / _SQRT_2PI))
ndtr.defjvp_from_vjp()


@defop(kind=ELEMENTWISE, namespace="special", domain=Domain((0.05, 0.85)))
def ndtri(B, x):
    """Inverse of :func:`ndtr` (the standard normal quantile function) on ``(0, 1)``.

    ``d/dx ndtri(x) = sqrt(2 pi) exp(ndtri(x)^2 / 2)``. Real inputs only.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.special.ndtri(ndgrad.tensor([0.5, 0.975]))
    tensor([0.        , 1.95996398])
    """
    _real_only("ndtri", x)
    return B.special.ndtri(x)


ndtri.defvjp(lambda F, g, out, x: g * (_SQRT_2PI * F.exp(0.5 * out * out)))
ndtri.defjvp_from_vjp()


@defop(kind=ELEMENTWISE, namespace="special", domain=Domain((-4.0, 3.0)))
def log_ndtr(B, x):
    """Logarithm of :func:`ndtr`, accurate far in the left tail.

    The derivative is the normal density over the distribution function,
    ``phi(x) / ndtr(x) = sqrt(2 / pi) / erfcx(-x / sqrt(2))``, computed without forming the
    tiny ``ndtr(x)`` of the left tail. Real inputs only here (SciPy also has a complex
    version).

    Examples
    --------
    >>> import ndgrad
    >>> x = ndgrad.tensor([-40.0], requires_grad=True)
    >>> ndgrad.special.log_ndtr(x)
    tensor([-804.60844201], grad_fn=<SpecialLogNdtrBackward0>)
    >>> ndgrad.special.log_ndtr(x).sum().backward()
    >>> x.grad  # about -x in the left tail
    tensor([40.02496885])
    """
    _real_only("log_ndtr", x)
    return B.special.log_ndtr(x)


_LOG_NDTR_SPLIT = 5.0


def _log_ndtr_derivative(F, x, out):
    # phi(x) / Phi(x) with Phi(x) = erfcx(-x / sqrt 2) exp(-x^2 / 2) / 2: relative accuracy
    # in the left tail, where exp(-x^2/2 - out) would lose digits to cancellation (1e-12 at
    # x = -200); right of the split erfcx(-x / sqrt 2) overflows (x > 37), and the exp form is
    # accurate. The erfcx branch gets a safe argument there, so neither branch makes NaN.
    left = x < _LOG_NDTR_SPLIT
    xl = F.where(left, x, 0.0)
    tail = _SQRT_2_PI / F.special.erfcx(xl * -_SQRT_HALF)
    # (and the exp branch a safe one left of it: exp(-x^2/2 - out) overflows to inf there,
    # and inf times the zero the where gives it is nan in a second derivative)
    xr = F.where(left, 0.0, x)
    return F.where(left, tail, F.exp(-0.5 * xr * xr - F.where(left, 0.0, out)) / _SQRT_2PI)


log_ndtr.defvjp(lambda F, g, out, x: g * _log_ndtr_derivative(F, x, out))
log_ndtr.defjvp_from_vjp()


# ------------------------------------------------------------------------- Owen's T
@defop(kind=ELEMENTWISE, nin=2, namespace="special", domain=Domain((-3.0, 3.0), (-3.0, 3.0)))
def owens_t(B, h, a):
    """Owen's T function, ``T(h, a) = 1/(2 pi) integral_0^a exp(-h^2 (1 + x^2) / 2) /
    (1 + x^2) dx``, elementwise, differentiable in both arguments:
    ``dT/da = exp(-h^2 (1 + a^2) / 2) / (2 pi (1 + a^2))`` and
    ``dT/dh = -phi(h) erf(a h / sqrt(2)) / 2`` (``phi`` the standard normal density). Real
    only.

    Examples
    --------
    >>> import ndgrad
    >>> h = ndgrad.tensor(0.5, requires_grad=True)
    >>> a = ndgrad.tensor(2.0, requires_grad=True)
    >>> ndgrad.special.owens_t(h, a)
    tensor(0.1415806, grad_fn=<SpecialOwensTBackward0>)
    >>> ndgrad.special.owens_t(h, a).backward()
    >>> h.grad, a.grad
    (tensor(-0.12017565), tensor(0.0170379))
    """
    _real_only("owens_t", h)
    _real_only("owens_t", a)
    return B.special.owens_t(h, a)


def _owens_exponent(F, h, a):
    # -h^2 (1 + a^2) / 2, kept above -1000 (its exp is 0 either way): at h = a = 1e150 it is
    # -inf, and its tangent inf times exp(-inf) = 0 is nan in forward mode
    return F.maximum(-0.5 * h * h * (1 + a * a), -1e3)


owens_t.defvjp(
    lambda F, g, out, h, a: g * (-F.exp(-0.5 * h * h) / math.sqrt(8 * math.pi)
                                 * F.special.erf(a * h / math.sqrt(2.0))),
    lambda F, g, out, h, a: g * F.exp(_owens_exponent(F, h, a)) / (2 * math.pi * (1 + a * a)))
owens_t.defjvp_from_vjp()
