"""Elementwise primitives: unary and binary math, comparisons and predicates, ``where``,
``clip``.

Binary ops broadcast; their vjp rules return cotangents in the broadcast shape and the engine
sums them back (Note [Broadcasting is undone by the engine]). Complex-capable ops follow the
conjugate Wirtinger convention: a holomorphic ``f`` has ``vjp = g * conj(f'(x))`` and
``jvp = t * f'(x)``; the non-holomorphic ones (``abs``, ``sign``, ``real``, ``imag``, ``conj``)
spell out both rules.

Note [Gradients at kinks]
~~~~~~~~~~~~~~~~~~~~~~~~~
Where an op is not differentiable (``abs`` and ``sign`` at 0, ties of ``maximum``, the bounds
of ``clip``, the jumps of ``floor`` and friends) the rules return what PyTorch returns, so that
results agree with it: ``abs'(0) = 0``; a tie of ``maximum``/``minimum`` splits the gradient
evenly; ``clip`` passes the gradient on the closed interval ``min <= x <= max``; step
functions (``floor``, ``ceil``, ``round``, ``trunc``, ``sign``, ``floor_divide``) have zero
gradient. The domains keep the property suite's draws away from these points, where finite
differences are meaningless.

Note [Derivatives at special points]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
At exact zeros, tiny values (whose squares underflow), subnormals and huge values, a rule
that is right in exact arithmetic can be silently wrong in floating point, at first order or
once it is differentiated again (nested reverse mode, forward over reverse and Taylor mode
differentiate the rule's own formula). The rules avoid four traps:

* terms growing like ``1/x^k`` that cancel: ``i1' = i0 - i1/x`` differentiates to
  ``i1/x^2 - i1'/x``, noise of 1e154 at ``x = 1e-170``. Identities exact at 0 instead:
  ``i1' = (i0 + I_2)/2``, ``j1' = (j0 - J_2)/2`` (special_bessel.py).
* intermediate powers that over- or underflow: ``hypot``'s ``x / out`` differentiates to
  ``1/out^2`` terms (``inf - inf`` at ``1e-170``), ``atan2``'s ``x / (x^2 + y^2)`` underflows
  to ``x / 0``. These rules compute in units of a power of two ``s`` near the inputs
  (:func:`_inverse_scale`, from the values alone: a constant for every derivative, and
  scaling by it is exact): every intermediate is of order one and only the factors ``1/s^k``
  applied last carry the scale, overflowing only where the derivative itself does. (Nested
  forward mode still carries ``1/s`` in its tangents from the start: its third derivative can
  meet ``inf - inf`` where the terms of ``1/x^2`` overflow.)
* a quotient inside a logarithm: ``log(x / y)`` differentiates through ``x / y^2`` and
  underflows, and is ``-inf`` where ``x / y`` underflows though ``log x - log y`` is finite
  (``kl_div``, ``rel_entr``).
* a value absorbed by a larger one: ``logaddexp``'s ``exp(x - out)`` is 1 at ``x = y =
  1e150`` (``out = x + log 2`` rounds to ``x``); ``sigmoid(x - y)`` is 1/2.

tests/test_rules_at_special_points.py sweeps every differentiable op of the registry at these
points against finite differences in rescaled coordinates; an op that cannot be right there
declares ``notes["special_points"]`` with the reason.
"""

from __future__ import annotations

import math

from ..dispatch import apply
from ..tensor import Tensor
from .batching import keeps_identity, scales_identity
from . import series
from .registry import (COMPARISON, ELEMENTWISE, Domain, defalias, defop, elementwise, linear,
                       multilinear, piecewise_linear, sample_numpy)

# Domains (where the property suite samples); the `valid` predicates keep draws away from
# kinks and poles, where finite differences are meaningless. Complex draws take real and
# imaginary parts from the same ranges, so a range also keeps complex draws off branch cuts.
REALS = Domain((-2.0, 2.0), complex=True)
REALS_ONLY = Domain((-2.0, 2.0))
POSITIVE = Domain((0.2, 3.0), complex=True)
UNIT = Domain((-0.9, 0.9), complex=True)  # inside the branch points of asin, atanh, ...

_LN2 = math.log(2.0)
_LN10 = math.log(10.0)


# ------------------------------------------------------------------------- sampling helpers
# Test-time code (the property suite calls these on NumPy arrays), so NumPy is imported
# inside them; the rules below never touch NumPy.
_np = sample_numpy  # samplers only, never a formula


def _signed(low, high):
    """Sampler for a unary op with a kink or pole at 0: ``|x|`` in [low, high], random signs
    (complex draws land in the first or third quadrant, at least ``low`` from 0)."""
    def sample(d):
        np = _np()
        shape = d.shape()
        mag = d.array(shape, low, high)
        return (np.where(d.bool_array(shape), mag, -mag),), {}
    return sample


def _far(a, b, tol=1e-3):
    np = _np()
    return bool(np.all(np.abs(np.asarray(a) - np.asarray(b)) > tol))


def _off_integers(x, *rest, tol=1e-3, **kw):
    np = _np()
    x = np.asarray(x)
    return bool(np.all(np.abs(x - np.round(x)) > tol))


def _off_integer_quotients(x, y, **kw):
    np = _np()
    return _off_integers(np.asarray(x) / np.asarray(y))


# ------------------------------------------------------------------------- arithmetic
@defop(kind=ELEMENTWISE, nin=2, domain=REALS, method=True, inplace_method="add_")
def add(B, x, y):
    """Elementwise ``x + y``, broadcasting.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.add(ndgrad.tensor([1.0, 2.0]), 1.5)
    tensor([2.5, 3.5])
    """
    return B.add(x, y)


add.defvjp(lambda F, g, out, x, y: g,
           lambda F, g, out, x, y: g)
add.defjvp_linear()
add.defstructure(linear(coefficients=(1, 1)))  # (x + y)


@defop(kind=ELEMENTWISE, nin=2, domain=REALS, method=True,
       inplace_method=["sub_", "subtract_"])
def subtract(B, x, y):
    """Elementwise ``x - y``, broadcasting. Alias: ``sub``.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.subtract(ndgrad.tensor([1.0, 2.0]), 1.0)
    tensor([0., 1.])
    """
    return B.subtract(x, y)


subtract.defvjp(lambda F, g, out, x, y: g,
                lambda F, g, out, x, y: -g)
subtract.defjvp_linear()
subtract.defstructure(linear(coefficients=(1, -1)))  # (x - y)


@defop(kind=ELEMENTWISE, nin=2, domain=REALS, method=True,
       inplace_method=["mul_", "multiply_"])
def multiply(B, x, y):
    """Elementwise ``x * y``, broadcasting. Alias: ``mul``.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.multiply(ndgrad.tensor([1.0, 2.0]), ndgrad.tensor([3.0, 4.0]))
    tensor([3., 8.])
    """
    return B.multiply(x, y)


multiply.defvjp(lambda F, g, out, x, y: g * F.conj(y),
                lambda F, g, out, x, y: g * F.conj(x))
multiply.defjvp_each(lambda F, t, out, x, y: t * y,
                     lambda F, t, out, x, y: x * t)
multiply.defstructure(multilinear())


@defop(kind=ELEMENTWISE, nin=2, domain=Domain((-2.0, 2.0), (0.5, 2.0), complex=True),
       method=True, inplace_method=["div_", "divide_", "true_divide_"])
def divide(B, x, y):
    """Elementwise ``x / y`` (true division), broadcasting. Aliases: ``div``,
    ``true_divide``.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.divide(ndgrad.tensor([1.0, 3.0]), 2.0)
    tensor([0.5, 1.5])
    """
    return B.divide(x, y)


# d(x/y)/dy = -x/y^2 = -out/y, as -(g out) / y (Note [Derivatives at special points]: the
# cotangent meets the value first, so a cotangent of the value's inverse scale makes an
# intermediate of order one; out / y, of x / y^2, underflowed at y = 2^1018 where the
# gradient is -2^-1018 for g = 2^1018, x = 1, and overflowed at y = 2^-1018). The tangent
# likewise: (-t out) / y
divide.defvjp(lambda F, g, out, x, y: g / F.conj(y),
              lambda F, g, out, x, y: -(g * F.conj(out)) / F.conj(y))
divide.defjvp_each(lambda F, t, out, x, y: t / y,
                   lambda F, t, out, x, y: -t * out / y)
divide.deftaylor(series.RULES["divide"])


@multiply.defidentity
def _multiply_identity(F, i, s, args, batched, params):
    # (s_b e_b) * o = (s_b o) e_b for an unbatched scalar or vector o, on either side
    o = args[1 - i]
    return ("identity", s * o) if scales_identity(o, not batched[1 - i], s.shape[0]) else None


@divide.defidentity
def _divide_identity(F, i, s, args, batched, params):
    o = args[1]
    if i != 0 or not scales_identity(o, not batched[1], s.shape[0]):
        return None
    return "identity", s / o


@defop(kind=ELEMENTWISE, nin=2, domain=Domain((-3.0, 3.0), (0.5, 2.0),
                                               valid=_off_integer_quotients),
       inplace_method="floor_divide_", piecewise_constant=True)
def floor_divide(B, x, y):
    """Elementwise ``floor(x / y)`` (Python's ``//``), broadcasting.

    A step function: its gradient is zero with respect to both inputs (Note [Piecewise-constant
    ops] in registry.py).

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.floor_divide(ndgrad.tensor([7.0, -7.0]), 2.0)
    tensor([ 3., -4.])
    """
    return B.floor_divide(x, y)




@defop(kind=ELEMENTWISE, nin=2, domain=Domain((-3.0, 3.0), (0.5, 2.0),
                                               valid=_off_integer_quotients),
       inplace_method="remainder_",
       notes={"jumps": "remainder(x, y) jumps where x / y crosses an integer: its derivatives "
                       "(1 and -floor(x / y)) hold between the jumps, which finite "
                       "differences straddle at extreme points (fmod(x, 5e-324))"})
def remainder(B, x, y):
    """Elementwise remainder of ``x / y`` with the sign of ``y`` (Python's ``%``), i.e.
    ``x - floor(x / y) * y``.

    Gradients: ``1`` for ``x`` and ``-floor(x / y)`` for ``y``, as PyTorch.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.remainder(ndgrad.tensor([7.0, -7.0]), 3.0)
    tensor([1., 2.])
    """
    return B.remainder(x, y)


remainder.defvjp(lambda F, g, out, x, y: g,
                 lambda F, g, out, x, y: -g * F.floor_divide(x, y))
remainder.defjvp_from_vjp()
remainder.defsparsity("remainder")  # (d/dy = -floor(x / y): zero where |x| < |y|)


@defop(kind=ELEMENTWISE, domain=REALS, method=True, inplace_method=["neg_", "negative_"])
def negative(B, x):
    """Elementwise ``-x``. Alias: ``neg``.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.negative(ndgrad.tensor([1.0, -2.0]))
    tensor([-1.,  2.])
    """
    return B.negative(x)


negative.defvjp(lambda F, g, out, x: -g)
negative.defjvp_linear()
negative.defidentity(keeps_identity(lambda F, s: -s))


@defop(kind=ELEMENTWISE, domain=REALS)
def positive(B, x):
    """Elementwise ``+x`` (a copy of ``x``).

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.positive(ndgrad.tensor([1.0, -2.0]))
    tensor([ 1., -2.])
    """
    return B.positive(x)


positive.defvjp(lambda F, g, out, x: g)
positive.defjvp_linear()
positive.defidentity(keeps_identity(lambda F, s: s))


# ------------------------------------------------------------------------- pow and friends
_HUGE_EXPONENT = 2.0 ** 53  # from here on y - 1 rounds to y: every float is an even integer


def _odd_power(F, x, y):
    """``x ** (y - 1)`` for ``|y| >= 2**53``, where ``y - 1`` rounds to the even ``y``: the
    odd power has the sign of ``x`` (``(-1) ** (1e150 - 1)`` is -1; ``|x| ** (y - 1)`` and
    ``|x| ** y`` agree to rounding or are both 0 or inf there)."""
    return F.where(x < 0, -1.0, 1.0) * F.abs(x) ** y


def _pow_vjp_x(F, g, out, x, y):
    # d x**y / dx = y * x**(y - 1); 0 where y == 0 (as PyTorch), without evaluating 0 * inf
    if isinstance(y, (int, float)):
        if y == 0:
            return F.zeros_like(g)
        if y == 1:
            return g
        if y >= _HUGE_EXPONENT or y <= -_HUGE_EXPONENT:
            return g * (y * _odd_power(F, x, y))
        # y == 2 is the common square: 2 * x, not a second power (W6's Hessian has nine)
        return g * F.conj(y * (x if y == 2 else x ** (y - 1)))
    p = x ** F.where(y == 0, 1.0, y - 1)
    if not F.iscomplexobj(y):
        p = F.where(F.abs(y) >= _HUGE_EXPONENT, _odd_power(F, x, y), p)
    return g * F.conj(y * p)


def _pow_vjp_y(F, g, out, x, y):
    # d x**y / dy = x**y * log(x); 0 where x == 0 (PyTorch masks x == 0 for y >= 0)
    if isinstance(x, (int, float, complex)):
        if x == 0:
            return F.zeros_like(g)
        return g * F.conj(out * F.log(x))
    return g * F.conj(out * F.log(F.where(x == 0, 1.0, x)))


@defop(kind=ELEMENTWISE, nin=2, domain=Domain((0.5, 2.0), (-2.0, 2.0), complex=True),
       inplace_method="pow_")
def pow(B, x, y):
    """Elementwise power ``x ** y``, broadcasting. Alias: ``power``.

    Both inputs are differentiable: ``d/dx = y * x**(y-1)`` (0 where ``y == 0``) and
    ``d/dy = x**y * log(x)`` (0 where ``x == 0``). A negative base with a real exponent gives
    ``nan`` unless the exponent is an integer, as in NumPy, and its derivative in the exponent
    is ``nan``, as PyTorch's.

    The 0 of ``d/dy`` at ``x == 0`` is PyTorch's convention (``0 ** y`` is constant in
    ``y > 0``), and every higher derivative follows it: a term ``x ** (y - k) log(x) ** j``
    counts as 0 at ``x == 0``. That is the limit where ``y > k``, not otherwise: with both
    base and exponent moving, ``t ** (2 + t)`` has the third derivative 4 at ``t = 0`` by
    every mode (nested reverse and forward, Taylor), where the limit is ``-inf`` (from the
    mixed ``d3/dx2dy = 3 + 2 log x`` at ``y = 2``). A convention, kept, not a limit.

    Examples
    --------
    >>> import ndgrad
    >>> x = ndgrad.tensor([-2.0, 3.0], requires_grad=True)
    >>> y = ndgrad.pow(x, 2)
    >>> y
    tensor([4., 9.], grad_fn=<PowBackward0>)
    >>> y.sum().backward()
    >>> x.grad
    tensor([-4.,  6.])
    """
    if (type(y) is int or type(y) is float) and y == 2 and \
            getattr(x, "dtype", None) is not None and x.dtype.kind == "f":
        # as NumPy's own ``x ** 2``: its power loop squares 2.7x slower than ``square`` does
        # (the same values: pow(x, 2) is x * x exactly rounded; and, for a real floating x,
        # the same dtype). Declared as pow's special case below (Note [Special cases of an op]
        # in core/ops/registry.py), written there again: a call here would cost eager x ** 2
        # a tenth of its time; a test holds the two to the same arguments
        return B.square(x)
    return B.power(x, y)


def _pow_special(x, y):
    """``pow(x, 2)`` of a real floating ``x`` is ``square(x)``: the forward's shortcut (Note
    [Special cases of an op] in core/ops/registry.py)."""
    if (type(y) is int or type(y) is float) and y == 2 and \
            getattr(x, "dtype", None) is not None and x.dtype.kind == "f":
        return "square", (x,)
    return None


pow.defspecial(_pow_special)
pow.defvjp(_pow_vjp_x, _pow_vjp_y)
pow.defjvp_from_vjp()
pow.deftaylor(series.RULES["pow"])


@defop(kind=ELEMENTWISE, domain=REALS, inplace_method="square_")
def square(B, x):
    """Elementwise ``x * x``.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.square(ndgrad.tensor([-3.0, 0.5]))
    tensor([9.  , 0.25])
    """
    return B.square(x)


square.defvjp(lambda F, g, out, x: g * F.conj(2 * x))
square.defjvp_from_vjp()
square.deftaylor(series.RULES["square"])


@defop(kind=ELEMENTWISE, domain=POSITIVE, inplace_method="sqrt_")
def sqrt(B, x):
    """Elementwise square root (principal branch for complex inputs).

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.sqrt(ndgrad.tensor([4.0, 2.25]))
    tensor([2. , 1.5])
    """
    return B.sqrt(x)


sqrt.defvjp(lambda F, g, out, x: g / F.conj(2 * out))
sqrt.defjvp_from_vjp()
sqrt.deftaylor(series.RULES["sqrt"])


@defop(kind=ELEMENTWISE, domain=Domain((0.2, 3.0)), sample=_signed(0.2, 3.0))
def cbrt(B, x):
    """The real cube root, elementwise (negative for negative ``x``).

    ``d/dx cbrt(x) = 1 / (3 cbrt(x)^2)``, infinite at 0 (``+inf`` from both sides, also in
    Taylor mode: Note [Taylor mode at singular points]). Real input only, as NumPy's.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.cbrt(ndgrad.tensor([8.0, -27.0]))
    tensor([ 2., -3.])
    """
    if getattr(x, "dtype", None) is not None and x.dtype.kind == "c":
        raise TypeError("cbrt: complex input is not supported (NumPy's cbrt is real; "
                        "x ** (1 / 3) gives the principal complex root)")
    return B.cbrt(x)


cbrt.defvjp(lambda F, g, out, x: g / (3 * F.square(out)))
cbrt.defjvp_from_vjp()
cbrt.deftaylor(series.RULES["cbrt"])


@defop(kind=ELEMENTWISE, domain=Domain((0.3, 2.0), complex=True), sample=_signed(0.3, 2.0),
       inplace_method="reciprocal_",
       notes={"integer inputs": "1 / x in floating point, as PyTorch's reciprocal (NumPy's "
                                "integer reciprocal truncates: 0 for 2, an error for 0)"})
def reciprocal(B, x):
    """Elementwise ``1 / x`` (floating point also for integer inputs).

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.reciprocal(ndgrad.tensor([2.0, -0.5]))
    tensor([ 0.5, -2. ])
    """
    return B.divide(1, x)


# -g out^2 as -(g out) out: out^2 underflowed at x = 2^600 (the gradient 0 for a cotangent of
# 2^600, where it is -2^-600) and overflowed at 2^-600 (Note [Derivatives at special points])
reciprocal.defvjp(lambda F, g, out, x: -(g * F.conj(out)) * F.conj(out))
reciprocal.defjvp_from_vjp()
reciprocal.deftaylor(series.RULES["reciprocal"])


# ------------------------------------------------------------------------- abs, sign, parts
def _sign_vjp(F, g, out, x):
    if not F.iscomplexobj(x):
        return F.zeros_like(g)  # a step function
    # sgn(z) = z/|z| (PyTorch's sgn): vjp = (g - conj(g) sgn^2) / (2|z|), 0 at z = 0
    a = F.abs(x)
    zero = a == 0
    return F.where(zero, 0.0, (g - F.conj(g) * (out * out)) / (2 * F.where(zero, 1.0, a)))


def _sign_jvp(F, tangents, out, x):
    t = tangents[0]
    if not F.iscomplexobj(x):
        return F.zeros_like(out)
    # d sgn = (t - sgn^2 conj(t)) / (2|z|)
    a = F.abs(x)
    zero = a == 0
    return F.where(zero, 0.0, (t - (out * out) * F.conj(t)) / (2 * F.where(zero, 1.0, a)))


@defop(kind=ELEMENTWISE, domain=Domain((0.1, 2.0), complex=True), sample=_signed(0.1, 2.0),
       inplace_method="sign_")
def sign(B, x):
    """Elementwise sign: -1, 0 or 1 for real ``x``; ``x / |x|`` (0 at 0) for complex ``x``
    (NumPy 2's convention, PyTorch's ``sgn``).

    Real inputs: zero gradient. Complex inputs: the derivative of ``z / |z|`` (0 at 0).

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.sign(ndgrad.tensor([-2.0, 0.0, 3.0]))
    tensor([-1.,  0.,  1.])
    >>> ndgrad.sign(ndgrad.tensor([3 + 4j]))
    tensor([0.6+0.8j])
    """
    return B.sign(x)


sign.defvjp(_sign_vjp)
sign.defjvp(_sign_jvp)
sign.defsparsity("zero")


def _abs_jvp(F, tangents, out, x):
    t = tangents[0]
    if F.iscomplexobj(x):
        # d|z| = Re(conj(z) dz) / |z| = Re(conj(sgn z) dz)
        return F.real(F.conj(F.sign(x)) * t)
    return t * F.sign(x)


@defop(kind=ELEMENTWISE, domain=Domain((0.1, 2.0), complex=True), sample=_signed(0.1, 2.0),
       inplace_method=["abs_", "absolute_"])
def abs(B, x):
    """Elementwise absolute value (the modulus for complex ``x``). Alias: ``absolute``.

    The gradient is ``g * sign(x)`` (``g * x / |x|`` for complex ``x``), 0 at ``x = 0``.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.abs(ndgrad.tensor([-1.5, 2.0]))
    tensor([1.5, 2. ])
    >>> ndgrad.abs(ndgrad.tensor([3 + 4j]))
    tensor([5.])
    """
    return B.abs(x)


abs.defvjp(lambda F, g, out, x: g * F.sign(x))
abs.defjvp(_abs_jvp)
abs.defstructure(piecewise_linear())  # (real x: no second derivative off 0)


@defop(kind=ELEMENTWISE, domain=REALS, view=True, method=False)
def real(B, val):
    """Real part, elementwise (``val`` itself for real ``val``; a view of a complex ``val``).

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.real(ndgrad.tensor([1 + 2j, 3 - 1j]))
    tensor([1., 3.])
    """
    return B.real(val)


# real(z) = (z + conj z)/2: the cotangent comes back as g (+ 0j); the engine casts it
real.defvjp(lambda F, g, out, x: g)
real.defjvp_linear()


def _real_scatter(F, parent, child):
    if parent.dtype.kind != "c":
        return child  # real(x) of a real x is x itself
    return child + 1j * F.imag(parent)


real.defscatter(_real_scatter)


def _imag_vjp(F, g, out, x):
    if x.dtype.kind != "c":  # read as metadata only: x is not saved
        return F.zeros_like(g)  # imag of a real input is constant 0
    # imag(z) = (z - conj z)/(2i): PyTorch's convention gives g * 1j (g first: a NumPy
    # scalar g, from 0-d arithmetic, stays a NumPy scalar instead of a Python complex)
    return g * 1j


@defop(kind=ELEMENTWISE, domain=REALS, view=True, method=False)
def imag(B, val):
    """Imaginary part, elementwise (zeros for real ``val``, as NumPy; a view of a complex
    ``val``).

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.imag(ndgrad.tensor([1 + 2j, 3 - 1j]))
    tensor([ 2., -1.])
    """
    if getattr(val, "dtype", None) is not None and val.dtype.kind != "c":
        return B.zeros_like(val)  # a writeable array (NumPy's imag of a real array is not)
    return B.imag(val)


imag.defvjp(_imag_vjp)
imag.defjvp_linear()
imag.defsparsity("imag")  # (zero on a real input)
# only a complex x gives a view (a real x's imaginary part is a new array of zeros)
imag.defscatter(lambda F, parent, child: F.real(parent) + 1j * child)


@defop(kind=ELEMENTWISE, domain=REALS,
       notes={"integer inputs": "a bool stays bool, as PyTorch's conj (NumPy's conjugate has "
                                "no bool loop and gives int8)"})
def conj(B, x):
    """Complex conjugate, elementwise (returns a real input unchanged).

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.conj(ndgrad.tensor([1 + 2j]))
    tensor([1.-2.j])
    """
    dt = getattr(x, "dtype", None)
    if dt is None:  # a Python scalar
        return x.conjugate() if isinstance(x, complex) else x
    return B.conj(x) if dt.kind == "c" else x


conj.defvjp(lambda F, g, out, x: F.conj(g))
conj.defjvp_linear()
conj.defidentity(keeps_identity(lambda F, s: F.conj(s)))


def _conj_public(x):
    # as PyTorch: conj of a real tensor is the tensor itself (every vjp rule calls conj: a
    # plain tensor's dtype is read from its array, not through the property)
    if (x._data.dtype.kind if type(x) is Tensor else
            x.dtype.kind if isinstance(x, Tensor) else "c") != "c":
        return x
    return apply(conj, x)


conj.defpublic(_conj_public)


def _conj_formula(x):
    # (a Python number given back as conj's forward gives it: Note [Formulas on Python
    # numbers] in registry.py; a plain tensor's test first, as the public function's: every
    # vjp rule calls conj)
    t = type(x)
    if t is Tensor:
        return x if x._data.dtype.kind != "c" else apply(conj, x)
    if t is float or t is int or t is bool:
        return x
    if t is complex:
        return x.conjugate()
    return _conj_public(x)


conj.defformula(_conj_formula)


# ------------------------------------------------------------------------- exp / log
@defop(kind=ELEMENTWISE, domain=REALS, inplace_method="exp_")
def exp(B, x):
    """Elementwise exponential.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.exp(ndgrad.tensor([0.0, 1.0]))
    tensor([1.        , 2.71828183])
    """
    return B.exp(x)


exp.defvjp(lambda F, g, out, x: g * F.conj(out))
exp.defjvp_from_vjp()
exp.deftaylor(series.RULES["exp"])


@defop(kind=ELEMENTWISE, domain=Domain((-3.0, 3.0), complex=True))
def exp2(B, x):
    """``2 ** x``, elementwise (exact for integer ``x``, as NumPy's).

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.exp2(ndgrad.tensor([0.0, 3.0, -1.0]))
    tensor([1. , 8. , 0.5])
    """
    if getattr(x, "dtype", None) is not None and x.dtype.kind == "c":
        return B.exp(x * _LN2)  # (complex: the same function, where exp2 has no such loop)
    return B.exp2(x)


exp2.defvjp(lambda F, g, out, x: g * F.conj(out * _LN2))  # d 2^x = ln 2 * 2^x dx
exp2.defjvp_from_vjp()
exp2.deftaylor(series.ode_rule(lambda F, xs, ys, j: ys[j] * _LN2))


@defop(kind=ELEMENTWISE, domain=REALS, inplace_method="expm1_")
def expm1(B, x):
    """Elementwise ``exp(x) - 1``, accurate for small ``x``.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.expm1(ndgrad.tensor([0.0, 1e-10]))
    tensor([0.e+00, 1.e-10])
    """
    return B.expm1(x)


expm1.defvjp(lambda F, g, out, x: g * F.conj(out + 1))
expm1.defjvp_from_vjp()


@defop(kind=ELEMENTWISE, domain=POSITIVE, inplace_method="log_")
def log(B, x):
    """Natural logarithm, elementwise (principal branch for complex inputs).

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.log(ndgrad.tensor([1.0]))
    tensor([0.])
    """
    return B.log(x)


log.defvjp(lambda F, g, out, x: g / F.conj(x))
log.defjvp_from_vjp()
log.deftaylor(series.RULES["log"])


@defop(kind=ELEMENTWISE, domain=Domain((-0.5, 2.0), complex=True), inplace_method="log1p_")
def log1p(B, x):
    """Elementwise ``log(1 + x)``, accurate for small ``x``.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.log1p(ndgrad.tensor([0.0, 1e-10]))
    tensor([0.e+00, 1.e-10])
    """
    return B.log1p(x)


log1p.defvjp(lambda F, g, out, x: g / F.conj(1 + x))
log1p.defjvp_from_vjp()


@defop(kind=ELEMENTWISE, domain=POSITIVE, inplace_method="log2_")
def log2(B, x):
    """Base-2 logarithm, elementwise.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.log2(ndgrad.tensor([1.0, 8.0]))
    tensor([0., 3.])
    """
    return B.log2(x)


log2.defvjp(lambda F, g, out, x: g / F.conj(x * _LN2))
log2.defjvp_from_vjp()


@defop(kind=ELEMENTWISE, domain=POSITIVE, inplace_method="log10_")
def log10(B, x):
    """Base-10 logarithm, elementwise.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.log10(ndgrad.tensor([1.0, 100.0]))
    tensor([0., 2.])
    """
    return B.log10(x)


log10.defvjp(lambda F, g, out, x: g / F.conj(x * _LN10))
log10.defjvp_from_vjp()


@defop(kind=ELEMENTWISE, nin=2, domain=Domain((-3.0, 3.0)))
def logaddexp(B, x, y):
    """Elementwise ``log(exp(x) + exp(y))``, computed without overflow.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.logaddexp(ndgrad.tensor([0.0, 1000.0]), 0.0)
    tensor([6.93147181e-01, 1.00000000e+03])
    """
    return B.logaddexp(x, y)


# d/dx = exp(x) / (exp(x) + exp(y)) = sigmoid(x - y), not exp(x - out): at x = y = 1e150,
# out = x + log 2 rounds to x (Note [Derivatives at special points])
logaddexp.defvjp(lambda F, g, out, x, y: g * F.sigmoid(x - y),
                 lambda F, g, out, x, y: g * F.sigmoid(y - x))
logaddexp.defjvp_from_vjp()


@defop(kind=ELEMENTWISE, domain=REALS, inplace_method="sigmoid_")
def sigmoid(B, x):
    """Logistic sigmoid ``1 / (1 + exp(-x))``, elementwise (SciPy's ``expit``).

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.sigmoid(ndgrad.tensor([0.0, 2.0]))
    tensor([0.5       , 0.88079708])
    """
    if getattr(x, "dtype", None) is not None and x.dtype.kind == "c":
        return 1 / (1 + B.exp(-x))
    return B.special.expit(x)


sigmoid.defvjp(lambda F, g, out, x: g * F.conj(out * (1 - out)))
sigmoid.defjvp_from_vjp()
sigmoid.deftaylor(series.RULES["sigmoid"])


# ------------------------------------------------------------------------- trigonometric
@defop(kind=ELEMENTWISE, domain=REALS, inplace_method="sin_")
def sin(B, x):
    """Elementwise sine.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.sin(ndgrad.tensor([0.0, 1.0]))
    tensor([0.        , 0.84147098])
    """
    return B.sin(x)


sin.defvjp(lambda F, g, out, x: g * F.conj(F.cos(x)))
sin.defjvp_from_vjp()
sin.deftaylor(series.RULES["sin"])


@defop(kind=ELEMENTWISE, domain=REALS, inplace_method="cos_")
def cos(B, x):
    """Elementwise cosine.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.cos(ndgrad.tensor([0.0, 1.0]))
    tensor([1.        , 0.54030231])
    """
    return B.cos(x)


cos.defvjp(lambda F, g, out, x: -g * F.conj(F.sin(x)))
cos.defjvp_from_vjp()
cos.deftaylor(series.RULES["cos"])


@defop(kind=ELEMENTWISE, domain=Domain((-1.2, 1.2), complex=True), inplace_method="tan_")
def tan(B, x):
    """Elementwise tangent.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.tan(ndgrad.tensor([0.0, 1.0]))
    tensor([0.        , 1.55740772])
    """
    return B.tan(x)


tan.defvjp(lambda F, g, out, x: g * F.conj(1 + F.square(out)))
tan.defjvp_from_vjp()


@defop(kind=ELEMENTWISE, domain=UNIT, inplace_method=["asin_", "arcsin_"])
def asin(B, x):
    """Elementwise inverse sine. Alias: ``arcsin``.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.asin(ndgrad.tensor([0.0, 1.0]))
    tensor([0.        , 1.57079633])
    """
    return B.arcsin(x)


asin.defvjp(lambda F, g, out, x: g / F.conj(F.sqrt(1 - F.square(x))))
asin.defjvp_from_vjp()


@defop(kind=ELEMENTWISE, domain=UNIT, inplace_method=["acos_", "arccos_"])
def acos(B, x):
    """Elementwise inverse cosine. Alias: ``arccos``.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.acos(ndgrad.tensor([1.0, 0.0]))
    tensor([0.        , 1.57079633])
    """
    return B.arccos(x)


acos.defvjp(lambda F, g, out, x: -g / F.conj(F.sqrt(1 - F.square(x))))
acos.defjvp_from_vjp()


@defop(kind=ELEMENTWISE, domain=UNIT, inplace_method=["atan_", "arctan_"])
def atan(B, x):
    """Elementwise inverse tangent. Alias: ``arctan``.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.atan(ndgrad.tensor([0.0, 1.0]))
    tensor([0.        , 0.78539816])
    """
    return B.arctan(x)


atan.defvjp(lambda F, g, out, x: g / F.conj(1 + F.square(x)))
atan.defjvp_from_vjp()


def _stop(x):
    """``x`` as a constant: no derivative flows through it (raw arrays are constants)."""
    return x.detach() if isinstance(x, Tensor) else x


def _inverse_scale(F, *xs):
    """``1 / s`` for the power of two ``s`` with ``s <= max |x| < 2 s`` (1 where every ``x``
    is 0 or one is not finite; ``s`` kept within the normal range, so ``1 / s`` is finite),
    from the values alone: a constant for every derivative, and multiplying by it is exact
    (Note [Derivatives at special points])."""
    m = None
    for x in xs:
        a = F.abs(_stop(x))
        m = a if m is None else F.maximum(m, a)
    e = F.floor(F.log2(F.where(F.isfinite(m) & (m > 0), m, 1.0)))
    return F.exp2(-F.clip(e, -1022.0, 1023.0))


def _atan2_grad(F, g, y, x, wrt_y):
    # x / (x^2 + y^2) (for y; -y / ... for x); 0 at the origin, as PyTorch. First order (raw
    # arrays): (x / h) / h with h = hypot(x, y), x^2 + y^2 underflows at 1e-170. A rule that
    # will be differentiated again computes in units of s ~ hypot(x, y): X / (X^2 + Y^2) / s
    # with X = x / s, Y = y / s of order one, so nothing under- or overflows but the final
    # 1 / s, and the derivatives of the inner quotient add up at X and Y before it (Note
    # [Derivatives at special points])
    if not isinstance(g, Tensor):
        h = F.hypot(x, y)
        h = F.where(h == 0, 1.0, h)
        return g * ((x if wrt_y else -y) / h) / h
    inv = _inverse_scale(F, x, y)
    X, Y = x * inv, y * inv
    r2 = X * X + Y * Y
    return g * ((X if wrt_y else -Y) / F.where(r2 == 0, 1.0, r2)) * inv


def _atan2_valid(y, x, **kw):
    np = _np()
    y, x = np.broadcast_arrays(np.asarray(y), np.asarray(x))
    # away from the origin and from the branch cut (x < 0, y = 0), where atan2 jumps by 2 pi
    return bool(np.all(x * x + y * y > 1e-2) and np.all((x > 0) | (np.abs(y) > 1e-3)))


@defop(kind=ELEMENTWISE, nin=2, domain=Domain((-2.0, 2.0), valid=_atan2_valid),
       inplace_method=["atan2_", "arctan2_"])
def atan2(B, y, x):
    """Elementwise angle of the point ``(x, y)``, ``arctan(y / x)`` in the right quadrant,
    broadcasting. Alias: ``arctan2``.

    Gradients: ``x / (x**2 + y**2)`` for ``y`` and ``-y / (x**2 + y**2)`` for ``x``; 0 at the
    origin.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.atan2(ndgrad.tensor([1.0, 1.0]), ndgrad.tensor([1.0, -1.0]))
    tensor([0.78539816, 2.35619449])
    """
    return B.arctan2(y, x)


atan2.defvjp(lambda F, g, out, y, x: _atan2_grad(F, g, y, x, True),
             lambda F, g, out, y, x: _atan2_grad(F, g, y, x, False))
atan2.defjvp_from_vjp()


# ------------------------------------------------------------------------- hyperbolic
@defop(kind=ELEMENTWISE, domain=REALS, inplace_method="sinh_")
def sinh(B, x):
    """Elementwise hyperbolic sine.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.sinh(ndgrad.tensor([0.0, 1.0]))
    tensor([0.        , 1.17520119])
    """
    return B.sinh(x)


sinh.defvjp(lambda F, g, out, x: g * F.conj(F.cosh(x)))
sinh.defjvp_from_vjp()


@defop(kind=ELEMENTWISE, domain=REALS, inplace_method="cosh_")
def cosh(B, x):
    """Elementwise hyperbolic cosine.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.cosh(ndgrad.tensor([0.0, 1.0]))
    tensor([1.        , 1.54308063])
    """
    return B.cosh(x)


cosh.defvjp(lambda F, g, out, x: g * F.conj(F.sinh(x)))
cosh.defjvp_from_vjp()


# complex draws stay off the poles of tanh at +-i pi/2
@defop(kind=ELEMENTWISE, domain=Domain((-1.2, 1.2), complex=True), inplace_method="tanh_")
def tanh(B, x):
    """Hyperbolic tangent, elementwise.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.tanh(ndgrad.tensor([0.0]))
    tensor([0.])
    """
    return B.tanh(x)


# d tanh = 1 - tanh^2, reusing the saved output
# (square, not out * out: NumPy squares a float32 array twice as fast as it multiplies it)
tanh.defvjp(lambda F, g, out, x: g * F.conj(1 - F.square(out)))
tanh.defjvp_from_vjp()
tanh.deftaylor(series.RULES["tanh"])


@defop(kind=ELEMENTWISE, domain=UNIT, inplace_method=["asinh_", "arcsinh_"])
def asinh(B, x):
    """Elementwise inverse hyperbolic sine. Alias: ``arcsinh``.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.asinh(ndgrad.tensor([0.0, 1.0]))
    tensor([0.        , 0.88137359])
    """
    return B.arcsinh(x)


def _asinh_grad(F, g, x):
    # 1 / hypot(x, 1) for real x: sqrt(1 + x^2) overflows beyond 1e154 and its derivative's
    # (1 + x^2)^(3/2) beyond 1e103 (Note [Derivatives at special points])
    if F.iscomplexobj(x) or F.iscomplexobj(g):
        return g / F.conj(F.sqrt(1 + F.square(x)))
    return g / F.hypot(x, 1.0)


asinh.defvjp(lambda F, g, out, x: _asinh_grad(F, g, x))
asinh.defjvp_from_vjp()


@defop(kind=ELEMENTWISE, domain=Domain((1.1, 3.0), complex=True),
       inplace_method=["acosh_", "arccosh_"])
def acosh(B, x):
    """Elementwise inverse hyperbolic cosine (real for ``x >= 1``). Alias: ``arccosh``.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.acosh(ndgrad.tensor([1.0, 2.0]))
    tensor([0.        , 1.3169579])
    """
    return B.arccosh(x)


# sqrt(x - 1) * sqrt(x + 1) (not sqrt(x*x - 1)): the principal branch for complex x too
acosh.defvjp(lambda F, g, out, x: g / F.conj(F.sqrt(x - 1) * F.sqrt(x + 1)))
acosh.defjvp_from_vjp()


@defop(kind=ELEMENTWISE, domain=UNIT, inplace_method=["atanh_", "arctanh_"])
def atanh(B, x):
    """Elementwise inverse hyperbolic tangent (real for ``|x| < 1``). Alias: ``arctanh``.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.atanh(ndgrad.tensor([0.0, 0.5]))
    tensor([0.        , 0.54930614])
    """
    return B.arctanh(x)


atanh.defvjp(lambda F, g, out, x: g / F.conj(1 - F.square(x)))
atanh.defjvp_from_vjp()


# ------------------------------------------------------------------------- rounding
# (step functions: their derivatives come from piecewise_constant=True, Note
# [Piecewise-constant ops] in registry.py)
_STEP = Domain((-3.0, 3.0), valid=_off_integers)


@defop(kind=ELEMENTWISE, domain=_STEP, inplace_method="floor_", piecewise_constant=True)
def floor(B, x):
    """Elementwise floor: the largest integer ``<= x`` (as a float). Zero gradient.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.floor(ndgrad.tensor([-1.5, 1.5]))
    tensor([-2.,  1.])
    """
    return B.floor(x)




@defop(kind=ELEMENTWISE, domain=_STEP, inplace_method="ceil_", piecewise_constant=True)
def ceil(B, x):
    """Elementwise ceiling: the smallest integer ``>= x`` (as a float). Zero gradient.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.ceil(ndgrad.tensor([-1.5, 1.5]))
    tensor([-1.,  2.])
    """
    return B.ceil(x)




@defop(kind=ELEMENTWISE, domain=_STEP, inplace_method="trunc_", piecewise_constant=True)
def trunc(B, x):
    """Elementwise truncation toward zero (as a float). Zero gradient.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.trunc(ndgrad.tensor([-1.5, 1.5]))
    tensor([-1.,  1.])
    """
    return B.trunc(x)




def _round_sample(d):
    np = _np()
    shape = d.shape()
    decimals = d.choice([0, 1, 2])
    x = d.array(shape, -3.0, 3.0)
    # kinks at the half-steps (k + 1/2) / 10**decimals
    if not _off_integers(np.asarray(x) * 10.0 ** decimals - 0.5, tol=1e-3):
        d.reject()
    return (x,), {"decimals": decimals}


@defop(kind=ELEMENTWISE, domain=Domain((-3.0, 3.0)), sample=_round_sample,
       inplace_method="round_", piecewise_constant=True)
def round(B, a, decimals=0):
    """Round to ``decimals`` decimal places, halves to even (NumPy's rule; PyTorch's too).
    Zero gradient.

    Parameters
    ----------
    a : tensor
    decimals : int
        Number of decimal places (negative: to the left of the point).

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.round(ndgrad.tensor([0.5, 1.5, 2.675]))
    tensor([0., 2., 3.])
    >>> ndgrad.round(ndgrad.tensor([1.234, -5.678]), decimals=1)
    tensor([ 1.2, -5.7])
    """
    return B.round(a, decimals=decimals)




# ------------------------------------------------------------------------- two-input, non-smooth
def _apart(x, y, **kw):
    return _far(*_np().broadcast_arrays(_np().asarray(x), _np().asarray(y)))


@defop(kind=ELEMENTWISE, nin=2, domain=Domain((-2.0, 2.0), valid=_apart))
def maximum(B, x, y):
    """Elementwise maximum, broadcasting (NaN if either is NaN).

    Where ``x == y`` the gradient is split evenly, ``g / 2`` to each input (as PyTorch).

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.maximum(ndgrad.tensor([1.0, 5.0]), ndgrad.tensor([3.0, 2.0]))
    tensor([3., 5.])
    """
    return B.maximum(x, y)


maximum.defvjp(lambda F, g, out, x, y: F.where(x == y, g / 2, F.where(x < y, 0.0, g)),
               lambda F, g, out, x, y: F.where(x == y, g / 2, F.where(x > y, 0.0, g)))
maximum.defjvp_from_vjp()
maximum.defsparsity("extremum")  # (local: the larger input; both on a tie)


@defop(kind=ELEMENTWISE, nin=2, domain=Domain((-2.0, 2.0), valid=_apart))
def minimum(B, x, y):
    """Elementwise minimum, broadcasting (NaN if either is NaN).

    Where ``x == y`` the gradient is split evenly, ``g / 2`` to each input (as PyTorch).

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.minimum(ndgrad.tensor([1.0, 5.0]), ndgrad.tensor([3.0, 2.0]))
    tensor([1., 2.])
    """
    return B.minimum(x, y)


minimum.defvjp(lambda F, g, out, x, y: F.where(x == y, g / 2, F.where(x > y, 0.0, g)),
               lambda F, g, out, x, y: F.where(x == y, g / 2, F.where(x < y, 0.0, g)))
minimum.defjvp_from_vjp()
minimum.defsparsity("extremum")


def _hypot_grad(F, g, out, x, y, wrt_x):
    # x / out, 0 at the origin; exact at first order (raw arrays). A rule that will be
    # differentiated again computes in units of s ~ max(|x|, |y|): X / hypot(X, Y) with
    # X = x / s, Y = y / s of order one (x / out's derivatives have 1 / out^2 terms, inf - inf
    # at out = 1e-170; Note [Derivatives at special points])
    if not isinstance(g, Tensor):
        return g * ((x if wrt_x else y) / F.where(out == 0, 1.0, out))
    inv = _inverse_scale(F, x, y)
    X, Y = x * inv, y * inv
    h = F.hypot(X, Y)
    return g * ((X if wrt_x else Y) / F.where(h == 0, 1.0, h))


def _hypot_valid(x, y, **kw):
    np = _np()
    x, y = np.broadcast_arrays(np.asarray(x), np.asarray(y))
    return bool(np.all(x * x + y * y > 1e-2))


@defop(kind=ELEMENTWISE, nin=2, domain=Domain((-2.0, 2.0), valid=_hypot_valid),
       inplace_method="hypot_")
def hypot(B, x, y):
    """Elementwise ``sqrt(x**2 + y**2)``, without overflow, broadcasting.

    Gradients ``x / hypot`` and ``y / hypot``; 0 at the origin (where PyTorch gives NaN).

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.hypot(ndgrad.tensor([3.0, 5.0]), 4.0)
    tensor([5.        , 6.40312424])
    """
    return B.hypot(x, y)


hypot.defvjp(lambda F, g, out, x, y: _hypot_grad(F, g, out, x, y, True),
             lambda F, g, out, x, y: _hypot_grad(F, g, out, x, y, False))
hypot.defjvp_from_vjp()


def _copysign_valid(x, y, **kw):
    np = _np()
    return bool(np.all(np.abs(x) > 1e-3) and np.all(np.abs(y) > 1e-3))


@defop(kind=ELEMENTWISE, nin=2, domain=Domain((-2.0, 2.0), valid=_copysign_valid),
       inplace_method="copysign_")
def copysign(B, x, y):
    """Elementwise ``|x|`` with the sign of ``y``, broadcasting.

    Gradients (as PyTorch): ``g * copysign(x, y) / x`` for ``x`` (0 at ``x = 0``), zero for
    ``y``.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.copysign(ndgrad.tensor([1.0, -2.0, 3.0]), -1.0)
    tensor([-1., -2., -3.])
    """
    return B.copysign(x, y)


# sign(x) sign(out): +-1, and 0 where x = 0, as PyTorch's out / x; piecewise constant, so
# its own derivatives are exactly zero (out / x differentiates to out / x^2 - 1 / x: nan at
# 1e-170; Note [Derivatives at special points])
copysign.defvjp(lambda F, g, out, x, y: g * (F.sign(x) * F.sign(out)),
                lambda F, g, out, x, y: F.zeros_like(g))
copysign.defjvp_from_vjp()
copysign.defstructure(elementwise(inputs=(0,)))  # (no derivative in y)


# ------------------------------------------------------------------------- where, clip
def _where_sample(d):
    s_c, s_x, s_y = d.shapes(3)
    return (d.bool_array(s_c), d.array(s_x), d.array(s_y)), {}


def _where_jvp(F, tangents, out, condition, x, y):
    _, tx, ty = tangents
    if tx is None:
        tx = F.zeros_like(x)
    if ty is None:
        ty = F.zeros_like(y)
    return F.where(condition, tx, ty)


@defop(kind=ELEMENTWISE, nin=3, domain=REALS, sample=_where_sample, method=False)
def where(B, condition, x, y):
    """Elementwise selection: ``x`` where ``condition`` is true, else ``y``, broadcasting.

    Parameters
    ----------
    condition : bool tensor or array_like
        Not differentiable.
    x, y : tensor or scalar
        Both differentiable; each gets the gradient where it was selected, zero elsewhere.

    Examples
    --------
    >>> import ndgrad
    >>> x = ndgrad.tensor([1.0, -2.0, 3.0], requires_grad=True)
    >>> y = ndgrad.where(x > 0, x, 0.0)
    >>> y
    tensor([1., 0., 3.], grad_fn=<WhereBackward0>)
    >>> y.sum().backward()
    >>> x.grad
    tensor([1., 0., 1.])
    """
    return B.where(condition, x, y)


where.defvjp(None,
             lambda F, g, out, condition, x, y: F.where(condition, g, 0.0),
             lambda F, g, out, condition, x, y: F.where(condition, 0.0, g))
where.defjvp(_where_jvp)
where.defstructure(linear(piecewise=True))  # (linear in x and y for a fixed condition)
where.defsparsity("where")


def _clip_args(a, a_min=None, a_max=None, *, min=None, max=None):
    """Every array input positional (the bounds may be tensors, scalars or None), with
    NumPy's signature: ``a_min``/``a_max`` by position or name, or the array API's (and
    PyTorch's) ``min``/``max`` by name."""
    if min is not None:
        if a_min is not None:
            raise TypeError("ndgrad.clip: the lower bound was given twice, as a_min and as "
                            "min=; give one")
        a_min = min
    if max is not None:
        if a_max is not None:
            raise TypeError("ndgrad.clip: the upper bound was given twice, as a_max and as "
                            "max=; give one")
        a_max = max
    return (a, a_min, a_max), {}


def _clip_vjp_x(F, g, out, x, min, max):
    # the closed interval min <= x <= max passes the gradient (PyTorch's clamp)
    if min is None and max is None:
        return g
    if min is None:
        keep = x <= max
    elif max is None:
        keep = x >= min
    else:
        keep = (x >= min) & (x <= max)
    return F.where(keep, g, 0.0)


def _clip_vjp_min(F, g, out, x, min, max):
    # min is the result where x < min, unless max wins (min > max gives max everywhere)
    take = x < min if max is None else (x < min) & (min < max)
    return F.where(take, g, 0.0)


def _clip_vjp_max(F, g, out, x, min, max):
    take = x > max if min is None else (x > max) | (max < min)
    return F.where(take, g, 0.0)


def _clip_sample(d):
    np = _np()
    s_x, s_lo, s_hi = d.shapes(3)
    x = d.array(s_x, -2.0, 2.0)
    lo = d.choice(["array", "scalar", "none"])
    hi = d.choice(["array", "scalar", "none"])
    lo = d.array(s_lo, -1.5, -0.1) if lo == "array" else (-0.5 if lo == "scalar" else None)
    hi = d.array(s_hi, 0.1, 1.5) if hi == "array" else (0.5 if hi == "scalar" else None)
    for bound in (lo, hi):  # stay away from the kinks at the bounds
        if bound is not None and not _far(*np.broadcast_arrays(x, np.asarray(bound))):
            d.reject()
    return (x, lo, hi), {}


@defop(kind=ELEMENTWISE, nin=3, domain=Domain((-2.0, 2.0)), sample=_clip_sample,
       inplace_method=["clip_", "clamp_"])
def clip(B, a, a_min=None, a_max=None):
    """Clamp ``a`` elementwise to ``[a_min, a_max]``. Alias: ``clamp``.

    Parameters
    ----------
    a : tensor
    a_min, a_max : tensor, scalar or None
        Bounds, broadcasting with ``a``; None leaves that side unbounded. Tensor bounds are
        differentiable (as in PyTorch's ``clamp``). Where ``a_min > a_max`` the result is
        ``a_max``. NumPy's names; the array API's (and PyTorch's) ``min=`` and ``max=`` are
        accepted by keyword too.

    Notes
    -----
    ``a`` gets the gradient on the closed interval ``a_min <= a <= a_max``; a bound gets it
    where it is the result (as PyTorch).

    Examples
    --------
    >>> import ndgrad
    >>> x = ndgrad.tensor([-2.0, 0.5, 3.0], requires_grad=True)
    >>> y = ndgrad.clip(x, -1.0, 1.0)
    >>> y
    tensor([-1. ,  0.5,  1. ], grad_fn=<ClipBackward0>)
    >>> y.sum().backward()
    >>> x.grad
    tensor([0., 1., 0.])
    >>> ndgrad.clamp(ndgrad.tensor([-2.0, 3.0]), min=0.0)
    tensor([0., 3.])
    """
    if a_min is None and a_max is None:
        return B.copy(a)
    return B.clip(a, a_min, a_max)


clip.defvjp(_clip_vjp_x, _clip_vjp_min, _clip_vjp_max)
clip.defjvp_from_vjp()
clip.defargs(_clip_args)
clip.defsparsity("clip")


# ------------------------------------------------------------------------- comparisons
def _comparison(name, np_name, doc_example):
    def forward(B, x, y):
        return getattr(B, np_name)(x, y)
    forward.__name__ = name
    forward.__doc__ = (f"Elementwise ``{doc_example}`` (a bool tensor that never requires "
                       "grad).\n\n    Examples\n    --------\n    >>> import ndgrad\n"
                       f"    >>> ndgrad.{name}(ndgrad.tensor([1.0, 2.0]), 1.0)\n"
                       "    tensor(" + _EXAMPLES[name] + ")\n    ")
    return defop(kind=COMPARISON, nin=2, differentiable=False, method=False,
                 domain=REALS_ONLY, notes={"vjp": "comparisons are not differentiable"})(forward)


_EXAMPLES = {
    "equal": "[ True, False]", "not_equal": "[False,  True]", "less": "[False, False]",
    "less_equal": "[ True, False]", "greater": "[False,  True]",
    "greater_equal": "[ True,  True]",
}
equal = _comparison("equal", "equal", "x == y")
not_equal = _comparison("not_equal", "not_equal", "x != y")
less = _comparison("less", "less", "x < y")
less_equal = _comparison("less_equal", "less_equal", "x <= y")
greater = _comparison("greater", "greater", "x > y")
greater_equal = _comparison("greater_equal", "greater_equal", "x >= y")


# ------------------------------------------------------------------------- logical predicates
def _bool_sample(n):
    def sample(d):
        return tuple(d.bool_array(s) for s in d.shapes(n)), {}
    return sample


def _special_values_sample(d):
    np = _np()
    shape = d.shape()
    x = d.array(shape)
    pick = d.array(shape, 0.0, 1.0, dtype=np.float64)
    x = np.where(pick < 0.2, np.nan, np.where(pick > 0.9, np.inf,
                                              np.where(pick > 0.8, -np.inf, x)))
    return (x.astype(d.dtype),), {}


_NOT_DIFFERENTIABLE = {"vjp": "logical predicates are not differentiable (bool output)"}


def _predicate(name, nin, doc, example, result, sample, *, domain=REALS_ONLY, np_name=None,
               returns="a bool tensor that never requires grad", notes=_NOT_DIFFERENTIABLE,
               method=None):
    """A non-differentiable elementwise op running the backend's ``np_name`` (default
    ``name``): the logical predicates, and the bitwise operations."""
    # named signatures (x) / (x, y): the public function's signature comes from these
    fn_name = np_name or name
    if nin == 1:
        def forward(B, x):
            return getattr(B, fn_name)(x)
    else:
        def forward(B, x, y):
            return getattr(B, fn_name)(x, y)
    forward.__name__ = name
    forward.__doc__ = (f"{doc} ({returns}).\n\n"
                       "    Examples\n    --------\n    >>> import ndgrad\n"
                       f"    >>> {example}\n    {result}\n    ")
    return defop(kind=COMPARISON, nin=nin, differentiable=False, sample=sample,
                 domain=domain, notes=notes, method=method)(forward)


_B2 = "ndgrad.tensor([True, True, False, False]), ndgrad.tensor([True, False, True, False])"
logical_and = _predicate(
    "logical_and", 2, "Elementwise logical AND (nonzero is true)",
    f"ndgrad.logical_and({_B2})", "tensor([ True, False, False, False])", _bool_sample(2))
logical_or = _predicate(
    "logical_or", 2, "Elementwise logical OR (nonzero is true)",
    f"ndgrad.logical_or({_B2})", "tensor([ True,  True,  True, False])", _bool_sample(2))
logical_xor = _predicate(
    "logical_xor", 2, "Elementwise logical XOR (nonzero is true)",
    f"ndgrad.logical_xor({_B2})", "tensor([False,  True,  True, False])", _bool_sample(2))
logical_not = _predicate(
    "logical_not", 1, "Elementwise logical NOT (nonzero is true)",
    "ndgrad.logical_not(ndgrad.tensor([True, False]))", "tensor([False,  True])",
    _bool_sample(1))
_SPECIAL = "ndgrad.tensor([1.0, float('nan'), float('inf'), -float('inf')])"
isnan = _predicate("isnan", 1, "Elementwise test for NaN", f"ndgrad.isnan({_SPECIAL})",
                   "tensor([False,  True, False, False])", _special_values_sample, domain=REALS)
isinf = _predicate("isinf", 1, "Elementwise test for positive or negative infinity",
                   f"ndgrad.isinf({_SPECIAL})", "tensor([False, False,  True,  True])",
                   _special_values_sample, domain=REALS)
isfinite = _predicate("isfinite", 1, "Elementwise test for finiteness (not NaN, not infinite)",
                      f"ndgrad.isfinite({_SPECIAL})", "tensor([ True, False, False, False])",
                      _special_values_sample, domain=REALS)


signbit = _predicate("signbit", 1, "Elementwise test of the sign bit (true for negative values, "
                     "-0.0 and NaNs with the sign bit set)",
                     "ndgrad.signbit(ndgrad.tensor([-1.0, -0.0, 0.0, 2.0]))",
                     "tensor([ True,  True, False, False])",
                     _special_values_sample)  # (REALS_ONLY: there is no complex signbit)


# ------------------------------------------------------------------------- bitwise
def _int_sample(n, shift=False):
    def sample(d):
        shapes = d.shapes(n)
        arrays = [d.int_array(s, -50, 50) for s in shapes]
        if shift:  # a shift by 0..8 bits of a nonnegative integer
            arrays = [_np().abs(arrays[0]), d.int_array(shapes[1], 0, 8)]
        return tuple(arrays), {}
    return sample


_INTEGERS_ONLY = {"vjp": "bitwise operations are not differentiable (integer values)"}


def _bitwise(name, np_name, nin, doc, example, result, shift=False):
    return _predicate(name, nin, doc, example, result, _int_sample(nin, shift),
                      np_name=np_name, notes=_INTEGERS_ONLY, method=False,
                      returns="elementwise on integer or bool tensors; no derivative")


_I2 = "ndgrad.tensor([12, 10]), ndgrad.tensor([10, 6])"
bitwise_and = _bitwise("bitwise_and", "bitwise_and", 2, "Bitwise AND (``&``)",
                       f"ndgrad.bitwise_and({_I2})", "tensor([8, 2])")
bitwise_or = _bitwise("bitwise_or", "bitwise_or", 2, "Bitwise OR (``|``)",
                      f"ndgrad.bitwise_or({_I2})", "tensor([14, 14])")
bitwise_xor = _bitwise("bitwise_xor", "bitwise_xor", 2, "Bitwise XOR (``^``)",
                       f"ndgrad.bitwise_xor({_I2})", "tensor([ 6, 12])")
bitwise_invert = _bitwise("bitwise_invert", "invert", 1, "Bitwise NOT (``~``)",
                          "ndgrad.bitwise_invert(ndgrad.tensor([0, 5]))", "tensor([-1, -6])")
bitwise_left_shift = _bitwise("bitwise_left_shift", "left_shift", 2, "Left shift (``<<``)",
                              f"ndgrad.bitwise_left_shift({_I2})",
                              "tensor([12288,   640])", shift=True)
bitwise_right_shift = _bitwise("bitwise_right_shift", "right_shift", 2, "Right shift (``>>``)",
                               "ndgrad.bitwise_right_shift(ndgrad.tensor([12, 10]), 2)",
                               "tensor([3, 2])", shift=True)


def _nextafter_sample(d):
    shapes = d.shapes(2)
    return tuple(d.array(s) for s in shapes), {}


@defop(kind=ELEMENTWISE, nin=2, differentiable=False, method=False, domain=REALS_ONLY,
       sample=_nextafter_sample,
       notes={"vjp": "nextafter steps to the adjacent float: piecewise constant"})
def nextafter(B, x, y):
    """The next representable floating value after ``x`` towards ``y``, elementwise (no
    derivative).

    Examples
    --------
    >>> import ndgrad
    >>> float(ndgrad.nextafter(ndgrad.tensor(1.0), 2.0)) - 1.0  # one unit in the last place
    2.220446049250313e-16
    """
    return B.nextafter(x, y)


# ------------------------------------------------------------------------- aliases
# One declaration, more public names (and Tensor methods, where the op has one): the names a
# PyTorch or NumPy user reaches for.
for _alias, _target in {
    "sub": "subtract", "mul": "multiply", "div": "divide", "true_divide": "divide",
    "neg": "negative", "absolute": "abs", "power": "pow", "clamp": "clip",
    "arcsin": "asin", "arccos": "acos", "arctan": "atan", "arctan2": "atan2",
    "arcsinh": "asinh", "arccosh": "acosh", "arctanh": "atanh", "invert": "bitwise_invert",
    "bitwise_not": "bitwise_invert", "left_shift": "bitwise_left_shift",
    "right_shift": "bitwise_right_shift",
}.items():
    defalias(_alias, _target)
