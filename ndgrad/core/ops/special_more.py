"""More of ``ndgrad.special``: incomplete beta, Bessel functions of real order, exponential
integrals, Lambert W, complete elliptic integrals and confluent / Gauss hypergeometric
functions, with SciPy's names and signatures.

Declared like the functions of ``special.py`` (``namespace="special"``; forward passes call
``B.special``, which is SciPy on the NumPy backend and cupyx, or SciPy on the host where cupyx
lacks the function, on the CUDA backend). Derivative rules are written with ``F`` in terms of
functions of the namespace, so they differentiate again:

* Bessel functions in ``z`` by the recurrences ``J_v' = (J_(v-1) - J_(v+1)) / 2`` (``Y_v``
  likewise), ``I_v' = (I_(v-1) + I_(v+1)) / 2`` and ``K_v' = -(K_(v-1) + K_(v+1)) / 2``, here
  for the exponentially scaled ``ive = I_v e^-|z|`` and ``kve = K_v e^z`` (``iv`` and ``kv``
  are those times ``e^|z|`` / ``e^-z``: plain functions in ``ndgrad/scipy/special.py``);
* ``expn(n, x)' = -expn(n - 1, x)`` (``expn(0, x) = e^-x / x``);
* ``lambertw' = e^-W / (1 + W)`` (= ``W / (x (1 + W))`` without the 0/0 at ``x = 0``);
* ``dK/dm = (E - (1 - m) K) / (2 m (1 - m))``, ``dE/dm = (E - K) / (2 m)`` (limits
  ``pi/8`` and ``-pi/8`` at ``m = 0``);
* ``hyp1f1(a, b, x)' = a/b hyp1f1(a+1, b+1, x)``, ``hyp2f1(a, b, c, z)' = ab/c
  hyp2f1(a+1, b+1, c+1, z)``;
* ``betainc(a, b, x)' = x^(a-1) (1-x)^(b-1) / B(a, b)`` and ``betaincinv`` by the inverse
  function rule; in the shapes ``a, b`` (no closed form) by the helper primitive
  ``_betainc_d`` of special_shape.py (first order only), and ``betaincinv`` by the implicit
  function theorem.

Note [Parameters that are not differentiated]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
Orders of Bessel functions (``v``), the order ``n`` of ``expn`` and the parameters ``a, b, c``
of the hypergeometric functions have no closed-form derivative in the functions available here
(they are series in digamma-weighted terms). As for ``gammainc``'s ``a`` (Note [Derivatives
that are not implemented] in ``special.py``), a gradient with respect to them raises
``NotImplementedError`` saying to detach them; the samplers draw them as integers or
Python numbers, which the property suite does not differentiate. The shapes ``a, b`` of the
incomplete beta function and its inverse are differentiable to first order (Note [Shape
derivatives of the incomplete gamma and beta functions] in special_shape.py); their samplers
draw them the same way, and tests/special/test_special_shape.py checks those derivatives.
"""

from __future__ import annotations

import math

from .registry import ELEMENTWISE, Domain, defop
from .special import _not_differentiable, _real_only, power_times_exp


# ------------------------------------------------------------------------- samplers
def _param(d, shape, low, high, integer=False):
    """A parameter that is not differentiated: an integer array or a Python number."""
    if integer or d.boolean():
        return d.int_array(shape, int(math.ceil(low)), int(math.floor(high)))
    return float(d.array((), low, high))


def _sample_params(ranges, x_range, integer=False):
    """Sampler of ``f(*params, x)``: the parameters from ``ranges`` (not differentiated),
    ``x`` a float array from ``x_range``."""
    def sample(d):
        shapes = d.shapes(len(ranges) + 1)
        params = tuple(_param(d, s, lo, hi, integer) for s, (lo, hi) in zip(shapes, ranges))
        return params + (d.array(shapes[-1], *x_range),), {}
    return sample


def _notes(which):
    return {"partial": f"differentiable in the last argument only: {which} are not "
                       "differentiated (no closed form; the rules raise NotImplementedError, "
                       "Note [Parameters that are not differentiated]); the sampler draws "
                       "them as integers or numbers"}


def _nd(name, arg, other="the last argument"):
    return _not_differentiable(name, arg, other, "it has no closed form in these functions")


# ------------------------------------------------------------------------- incomplete beta
_SHAPE_NOTES = {"partial": "the sampler draws the shapes a and b as integers or numbers (not "
                           "differentiated): their derivative is first order only "
                           "(special._betainc_d); tests/special/test_special_shape.py checks "
                           "it"}


def _beta_density(F, a, b, x):
    # x^(a-1) (1-x)^(b-1) / B(a, b), by logs inside (0, 1) (the powers and 1 / B(a, b) may
    # under- or overflow apart), and as powers at the end points x = 0, 1: there the log
    # form's derivative is exp(-inf) (a - 1) / 0, nan, where the density's is
    # (a - 1) 0^(a - 2), 0 for a > 2 (Note [Derivatives at special points] in elementwise.py).
    # Each branch gets a safe x where the other is taken.
    # (power_times_exp: the power form at tiny x too, for Taylor mode)
    edge = F.logical_or(x == 0, x == 1)
    xi = F.where(edge, 0.5, x)
    inner = power_times_exp(F, xi, a - 1, F.special.xlog1py(b - 1, -xi) - F.special.betaln(a, b))
    xe = F.where(edge, x, 0.5)
    at_edge = F.pow(xe, a - 1) * F.pow(1 - xe, b - 1) * F.exp(-F.special.betaln(a, b))
    return F.where(edge, at_edge, inner)


@defop(kind=ELEMENTWISE, nin=3, namespace="special",
       domain=Domain((0.5, 4.0), (0.5, 4.0), (0.05, 0.95)),
       sample=_sample_params([(0.5, 4.0), (0.5, 4.0)], (0.05, 0.95)),
       notes=_SHAPE_NOTES)
def betainc(B, a, b, x):
    """Regularized incomplete beta function
    ``I_x(a, b) = 1/B(a, b) * integral_0^x t^(a-1) (1-t)^(b-1) dt``, elementwise.

    Parameters
    ----------
    a, b : tensor or number
        Shapes, positive. Differentiable to first order (no closed form: a continued
        fraction differentiated term by term, relative error below ``1e-11`` for ``a, b``
        in ``[0.05, 400]``); a second derivative in them raises ``NotImplementedError``.
    x : tensor
        ``0 <= x <= 1`` (differentiable, to any order):
        ``d/dx = x^(a-1) (1-x)^(b-1) / B(a, b)``.

    Examples
    --------
    >>> import ndgrad
    >>> x = ndgrad.tensor([0.25, 0.5], requires_grad=True)
    >>> ndgrad.special.betainc(2.0, 3.0, x)
    tensor([0.26171875, 0.6875    ], grad_fn=<SpecialBetaincBackward0>)
    >>> ndgrad.special.betainc(2.0, 3.0, x).sum().backward()
    >>> x.grad  # 12 x (1 - x)^2
    tensor([1.6875, 1.5   ])
    """
    _real_only("betainc", a, b, x)
    return B.special.betainc(a, b, x)


betainc.defvjp(lambda F, g, out, a, b, x: g * F.special._betainc_d(a, b, x, wrt=0),
               lambda F, g, out, a, b, x: g * F.special._betainc_d(a, b, x, wrt=1),
               lambda F, g, out, a, b, x: g * _beta_density(F, a, b, x))
betainc.defjvp_from_vjp()


@defop(kind=ELEMENTWISE, nin=3, namespace="special",
       domain=Domain((0.5, 4.0), (0.5, 4.0), (0.05, 0.95)),
       sample=_sample_params([(0.8, 4.0), (0.8, 4.0)], (0.05, 0.95)),
       notes=_SHAPE_NOTES)
def betaincinv(B, a, b, y):
    """Inverse of :func:`betainc` in ``x``: the ``x`` with ``betainc(a, b, x) = y``.

    Parameters
    ----------
    a, b : tensor or number
        Shapes, positive. Differentiable to first order, by the implicit function theorem:
        ``dx/da = -(dI/da)(a, b, x) / betainc'(x)`` (likewise ``b``); a second derivative in
        them raises ``NotImplementedError``.
    y : tensor
        ``0 <= y <= 1`` (differentiable): ``dx/dy = 1 / betainc'(x) = B(a, b) /
        (x^(a-1) (1-x)^(b-1))``.

    Examples
    --------
    >>> import ndgrad
    >>> y = ndgrad.tensor([0.26171875, 0.6875], requires_grad=True)
    >>> ndgrad.special.betaincinv(2.0, 3.0, y)
    tensor([0.25, 0.5 ], grad_fn=<SpecialBetaincinvBackward0>)
    >>> ndgrad.special.betaincinv(2.0, 3.0, y).sum().backward()
    >>> y.grad
    tensor([0.59259259, 0.66666667])
    """
    _real_only("betaincinv", a, b, y)
    return B.special.betaincinv(a, b, y)


# implicit function theorem on betainc(a, b, x) = y: dx/da = -(dI/da) / (dI/dx)
betaincinv.defvjp(
    lambda F, g, out, a, b, y: -g * F.special._betainc_d(a, b, out, wrt=0)
    / _beta_density(F, a, b, out),
    lambda F, g, out, a, b, y: -g * F.special._betainc_d(a, b, out, wrt=1)
    / _beta_density(F, a, b, out),
    lambda F, g, out, a, b, y: g / _beta_density(F, a, b, out))
betaincinv.defjvp_from_vjp()


# ------------------------------------------------------------------------- Bessel functions
_ORDER_NOTES = _notes("the orders v")


@defop(kind=ELEMENTWISE, nin=2, namespace="special", domain=Domain((0.0, 3.0), (0.3, 6.0)),
       sample=_sample_params([(-1.0, 3.0)], (0.3, 6.0)),
       notes={**_ORDER_NOTES, "special_points": (
           "SciPy's jv is 0 at fractional orders for z near the smallest normal "
           "(jv(0.55, 2.2e-308) = 0, in truth 1e-169): the forward, not the rule, is wrong "
           "there, and finite differences of it with it")})
def jv(B, v, z):
    """Bessel function of the first kind of real order ``v``, ``J_v(z)``, elementwise.

    Parameters
    ----------
    v : tensor or number
        Order (not differentiable: a gradient with respect to it raises
        ``NotImplementedError``).
    z : tensor
        Argument (differentiable): ``d/dz J_v = (J_(v-1) - J_(v+1)) / 2``. Non-integer
        orders need ``z >= 0`` (SciPy gives NaN for real ``z < 0``).

    Examples
    --------
    >>> import ndgrad
    >>> z = ndgrad.tensor([1.0, 2.5], requires_grad=True)
    >>> ndgrad.special.jv(1.5, z)
    tensor([0.24029784, 0.52508026], grad_fn=<SpecialJvBackward0>)
    >>> ndgrad.special.jv(0, z).sum().backward()
    >>> z.grad  # -J_1
    tensor([-0.44005059, -0.4970941 ])
    """
    return B.special.jv(v, z)


jv.defvjp(_nd("jv", "v", "z"), lambda F, g, out, v, z: g * F.conj(
    0.5 * (F.special.jv(v - 1, z) - F.special.jv(v + 1, z))))
jv.defjvp_from_vjp()


@defop(kind=ELEMENTWISE, nin=2, namespace="special", domain=Domain((0.0, 3.0), (0.5, 6.0)),
       sample=_sample_params([(-1.0, 3.0)], (0.5, 6.0)), notes=_ORDER_NOTES)
def yv(B, v, z):
    """Bessel function of the second kind of real order ``v``, ``Y_v(z)``, elementwise.

    Parameters
    ----------
    v : tensor or number
        Order (not differentiable).
    z : tensor
        Argument, ``z > 0`` (differentiable): ``d/dz Y_v = (Y_(v-1) - Y_(v+1)) / 2``.

    Examples
    --------
    >>> import ndgrad
    >>> z = ndgrad.tensor([1.0, 2.5], requires_grad=True)
    >>> ndgrad.special.yv(0, z).sum().backward()
    >>> z.grad  # -Y_1
    tensor([ 0.78121282, -0.14591814])
    """
    return B.special.yv(v, z)


yv.defvjp(_nd("yv", "v", "z"), lambda F, g, out, v, z: g * F.conj(
    0.5 * (F.special.yv(v - 1, z) - F.special.yv(v + 1, z))))
yv.defjvp_from_vjp()


@defop(kind=ELEMENTWISE, nin=2, namespace="special", domain=Domain((0.0, 3.0), (0.2, 5.0)),
       sample=_sample_params([(-1.0, 3.0)], (0.2, 5.0)),
       notes={**_ORDER_NOTES, "special_points": (
           "SciPy's ive is nan at negative fractional orders for z = 0 and z below about "
           "1e-300 (ive(-0.45, 0) is +inf in truth), and the derivative's recurrence "
           "ive(v - 1, z) reaches them: the second derivative at 0 of ive(1.55, z) is nan, "
           "not +inf")})
def ive(B, v, z):
    """Exponentially scaled modified Bessel function of the first kind,
    ``ive(v, z) = I_v(z) e^-|z|`` (real ``z``), elementwise: no overflow for large ``z``.

    Parameters
    ----------
    v : tensor or number
        Order (not differentiable).
    z : tensor
        Argument (differentiable), ``z >= 0`` for non-integer ``v``:
        ``d/dz ive = (ive(v-1, z) + ive(v+1, z)) / 2 - sign(z) ive(v, z)``.

    Examples
    --------
    >>> import ndgrad
    >>> z = ndgrad.tensor([1.0, 800.0], requires_grad=True)
    >>> ndgrad.special.ive(0, z)
    tensor([0.46575961, 0.01410695], grad_fn=<SpecialIveBackward0>)
    >>> ndgrad.special.ive(0, z).sum().backward()
    >>> z.grad  # ive(1, z) - ive(0, z)
    tensor([-2.57849192e-01, -8.81959934e-06])
    """
    _real_only("ive", z, why="the sign(z) in its derivative is defined for real z here")
    return B.special.ive(v, z)


def _ive_dz(F, v, z):
    # the e^-|z| factor's -sign(z) ive(v, z), written with a z that is not 0: at 0 its own
    # derivative is sign(0) ive'(v, 0) = 0 * inf for 0 < v < 1 (nan, where the second
    # derivative is +inf)
    zs = F.where(z == 0, 1.0, z)
    kink = F.where(z == 0, 0.0, F.sign(zs) * F.special.ive(v, zs))
    return 0.5 * (F.special.ive(v - 1, z) + F.special.ive(v + 1, z)) - kink


ive.defvjp(_nd("ive", "v", "z"), lambda F, g, out, v, z: g * _ive_dz(F, v, z))
ive.defjvp_from_vjp()


@defop(kind=ELEMENTWISE, nin=2, namespace="special", domain=Domain((0.0, 3.0), (0.3, 5.0)),
       sample=_sample_params([(-1.0, 3.0)], (0.3, 5.0)), notes=_ORDER_NOTES)
def kve(B, v, z):
    """Exponentially scaled modified Bessel function of the second kind,
    ``kve(v, z) = K_v(z) e^z``, elementwise: no underflow for large ``z``.

    Parameters
    ----------
    v : tensor or number
        Order (not differentiable).
    z : tensor
        Argument, ``z > 0`` (differentiable):
        ``d/dz kve = kve(v, z) - (kve(v-1, z) + kve(v+1, z)) / 2``.

    Examples
    --------
    >>> import ndgrad
    >>> z = ndgrad.tensor([1.0, 2.0], requires_grad=True)
    >>> ndgrad.special.kve(0.5, z)  # sqrt(pi / (2 z))
    tensor([1.25331414, 0.88622693], grad_fn=<SpecialKveBackward0>)
    >>> ndgrad.special.kve(0.5, z).sum().backward()
    >>> z.grad
    tensor([-0.62665707, -0.22155673])
    """
    _real_only("kve", z, why="its derivative rule is written for real z here")
    return B.special.kve(v, z)


kve.defvjp(_nd("kve", "v", "z"), lambda F, g, out, v, z: g * (
    out - 0.5 * (F.special.kve(v - 1, z) + F.special.kve(v + 1, z))))
kve.defjvp_from_vjp()


# ------------------------------------------------------------------------- exponential integral
def _check_expn_order(B, n):
    if _is_int_like(B, n):
        return
    raise ValueError(f"special.expn: the order n must be a non-negative integer, got {n!r}")


def _is_int_like(B, n):
    if isinstance(n, bool) or isinstance(n, complex):
        return False
    na = B.asarray(n)
    return na.dtype.kind in "iuf" and not (na.size and (bool(B.any(na < 0)) or
                                                         bool(B.any(na != B.floor(na)))))


def _expn_dx(F, out, n, x):
    # expn(n, x)' = -expn(n-1, x); expn(0, x) = e^-x / x, whose derivative is
    # -expn(0, x) (1 + 1/x). |n - 1| keeps the unused branch's order valid (no NaN to mask),
    # and the unused 1/x a safe x (its derivative, times the zero the where gives it, is nan
    # at x = 0 in a second derivative)
    xs = F.where(n == 0, x, 1.0)
    return F.where(n == 0, -out * (1 + 1 / xs), -F.special.expn(abs(n - 1), x))


@defop(kind=ELEMENTWISE, nin=2, namespace="special", domain=Domain((0.0, 4.0), (0.2, 4.0)),
       sample=_sample_params([(0.0, 4.0)], (0.2, 4.0), integer=True),
       notes=_notes("the orders n"))
def expn(B, n, x):
    """Generalized exponential integral ``E_n(x) = integral_1^inf e^(-x t) / t^n dt``,
    elementwise.

    Parameters
    ----------
    n : int or integer tensor
        Order, a non-negative integer (not differentiable).
    x : tensor
        ``x > 0`` (differentiable): ``d/dx E_n(x) = -E_(n-1)(x)``, with
        ``E_0(x) = e^-x / x``.

    Examples
    --------
    >>> import ndgrad
    >>> x = ndgrad.tensor([0.5, 2.0], requires_grad=True)
    >>> ndgrad.special.expn(2, x)
    tensor([0.32664386, 0.03753426], grad_fn=<SpecialExpnBackward0>)
    >>> ndgrad.special.expn(2, x).sum().backward()
    >>> x.grad  # -E_1(x)
    tensor([-0.55977359, -0.04890051])
    """
    _check_expn_order(B, n)
    _real_only("expn", x)
    return B.special.expn(n, x)


expn.defvjp(_nd("expn", "n", "x"), lambda F, g, out, n, x: g * _expn_dx(F, out, n, x))
expn.defjvp_from_vjp()


# ------------------------------------------------------------------------- Lambert W
@defop(kind=ELEMENTWISE, namespace="special", domain=Domain((-0.3, 3.0)))
def lambertw(B, z, k=0, tol=1e-8):
    """Lambert W function: the ``w`` with ``w e^w = z`` on branch ``k``, elementwise.

    Unlike SciPy, which always returns complex numbers, a real ``z`` gives a real result
    (``NaN`` where the branch's value is not real, e.g. ``z < -1/e``); a complex ``z`` gives
    SciPy's complex result on any branch.

    Parameters
    ----------
    z : tensor
        Argument (differentiable; holomorphic): ``W'(z) = e^-W / (1 + W)``
        (``= W / (z (1 + W))``, written without the 0/0 at ``z = 0``).
    k : int
        Branch (``0``: principal, real for real ``z >= -1/e``; ``-1``: real on
        ``[-1/e, 0)``).
    tol : float
        SciPy's stopping tolerance of the Halley iteration.

    Examples
    --------
    >>> import ndgrad
    >>> z = ndgrad.tensor([0.0, 1.0], requires_grad=True)
    >>> ndgrad.special.lambertw(z)  # the omega constant at 1
    tensor([0.        , 0.56714329], grad_fn=<SpecialLambertwBackward0>)
    >>> ndgrad.special.lambertw(z).sum().backward()
    >>> z.grad
    tensor([1.        , 0.36189626])
    """
    w = B.special.lambertw(z, k, tol)
    if not _is_complex(z):
        real = getattr(z, "dtype", None)  # (an integer z: float64, SciPy's complex128's part)
        w = B.where(w.imag == 0, w.real, float("nan")).astype(
            z.dtype if real is not None and real.kind == "f" else "float64")
    return w


def _is_complex(x):
    dt = getattr(x, "dtype", None)
    return dt.kind == "c" if dt is not None else isinstance(x, complex)


lambertw.defvjp(lambda F, g, out, z, k=0, tol=1e-8: g * F.conj(F.exp(-out) / (1 + out)))
lambertw.defjvp_from_vjp()


# ------------------------------------------------------------------------- elliptic integrals
# Near m = 0, dK/dm and dE/dm are 0/0 forms whose differentiated closed forms cancel terms
# of 1/m^2 (nan at 5e-324, 1e300 at 1e-300, and 0 instead of K''(0) from a where taking the
# limit; Note [Removable singularities] in special.py): below |m| = 1e-2 their Taylor
# polynomials, K(m) = pi/2 sum_n c_n m^n and E(m) = pi/2 sum_n c_n m^n / (1 - 2n) with
# c_n = (C(2n, n) / 4^n)^2, differentiated term by term through m^7 (next term below 1e-16).
_ELLIP_SMALL = 1e-2
_ELLIPK_D = [math.pi / 2 * n * (math.comb(2 * n, n) / 4 ** n) ** 2 for n in range(1, 9)]
_ELLIPE_D = [c / (1 - 2 * n) for n, c in enumerate(_ELLIPK_D, 1)]


def _near_zero(F, m, closed, coefficients):
    """``closed(m)`` for ``|m| >= 1e-2`` (evaluated at 1/2 below), the polynomial
    ``sum_j coefficients[j] m^j`` below."""
    small = F.abs(m) < _ELLIP_SMALL
    ms = F.where(small, m, 0.0)  # (m^7 overflows at 1e150: inf times the where's zero)
    poly = coefficients[-1]
    for c in reversed(coefficients[:-1]):
        poly = c + ms * poly
    return F.where(small, poly, closed(F.where(small, 0.5, m)))


@defop(kind=ELEMENTWISE, namespace="special", domain=Domain((-1.0, 0.9)))
def ellipk(B, m):
    """Complete elliptic integral of the first kind
    ``K(m) = integral_0^(pi/2) (1 - m sin^2 t)^(-1/2) dt``, elementwise (``m < 1``).

    ``dK/dm = (E(m) - (1 - m) K(m)) / (2 m (1 - m))`` (``pi/8`` at ``m = 0``). Real only.

    Examples
    --------
    >>> import ndgrad
    >>> m = ndgrad.tensor([0.0, 0.5], requires_grad=True)
    >>> ndgrad.special.ellipk(m)
    tensor([1.57079633, 1.85407468], grad_fn=<SpecialEllipkBackward0>)
    >>> ndgrad.special.ellipk(m).sum().backward()
    >>> m.grad
    tensor([0.39269908, 0.84721308])
    """
    _real_only("ellipk", m)
    return B.special.ellipk(m)


ellipk.defvjp(lambda F, g, out, m: g * _near_zero(
    F, m, lambda t: (F.special.ellipe(t) - (1 - t) * F.special.ellipk(t)) / (2 * t * (1 - t)),
    _ELLIPK_D))
ellipk.defjvp_from_vjp()


@defop(kind=ELEMENTWISE, namespace="special", domain=Domain((-1.0, 0.9)))
def ellipe(B, m):
    """Complete elliptic integral of the second kind
    ``E(m) = integral_0^(pi/2) (1 - m sin^2 t)^(1/2) dt``, elementwise (``m <= 1``).

    ``dE/dm = (E(m) - K(m)) / (2 m)`` (``-pi/8`` at ``m = 0``). Real only.

    Examples
    --------
    >>> import ndgrad
    >>> m = ndgrad.tensor([0.0, 0.5], requires_grad=True)
    >>> ndgrad.special.ellipe(m)
    tensor([1.57079633, 1.35064388], grad_fn=<SpecialEllipeBackward0>)
    >>> ndgrad.special.ellipe(m).sum().backward()
    >>> m.grad
    tensor([-0.39269908, -0.5034308 ])
    """
    _real_only("ellipe", m)
    return B.special.ellipe(m)


ellipe.defvjp(lambda F, g, out, m: g * _near_zero(
    F, m, lambda t: (F.special.ellipe(t) - F.special.ellipk(t)) / (2 * t), _ELLIPE_D))
ellipe.defjvp_from_vjp()


# ------------------------------------------------------------------------- hypergeometric
@defop(kind=ELEMENTWISE, nin=3, namespace="special",
       domain=Domain((0.5, 3.0), (0.5, 3.0), (-2.0, 2.0)),
       sample=_sample_params([(0.5, 3.0), (0.5, 3.0)], (-2.0, 2.0)),
       notes=_notes("the parameters a and b"))
def hyp1f1(B, a, b, x):
    """Confluent hypergeometric function ``1F1(a; b; x) = sum_k (a)_k / (b)_k x^k / k!``
    (Kummer's ``M``), elementwise.

    Parameters
    ----------
    a, b : tensor or number
        Parameters (not differentiable: a gradient raises ``NotImplementedError``).
    x : tensor
        Argument (differentiable): ``d/dx 1F1(a; b; x) = a/b 1F1(a+1; b+1; x)``.

    Examples
    --------
    >>> import ndgrad
    >>> x = ndgrad.tensor([0.5, 1.0], requires_grad=True)
    >>> ndgrad.special.hyp1f1(1.0, 1.0, x)  # exp(x)
    tensor([1.64872127, 2.71828183], grad_fn=<SpecialHyp1f1Backward0>)
    >>> ndgrad.special.hyp1f1(1.0, 1.0, x).sum().backward()
    >>> x.grad
    tensor([1.64872127, 2.71828183])
    """
    _real_only("hyp1f1", a, b)
    return B.special.hyp1f1(a, b, x)


hyp1f1.defvjp(_nd("hyp1f1", "a", "x"), _nd("hyp1f1", "b", "x"),
              lambda F, g, out, a, b, x: g * F.conj(a / b * F.special.hyp1f1(a + 1, b + 1, x)))
hyp1f1.defjvp_from_vjp()


@defop(kind=ELEMENTWISE, nin=4, namespace="special",
       domain=Domain((0.5, 2.0), (0.5, 2.0), (1.5, 3.0), (-0.8, 0.7)),
       sample=_sample_params([(0.5, 2.0), (0.5, 2.0), (1.5, 3.0)], (-0.8, 0.7)),
       notes=_notes("the parameters a, b and c"))
def hyp2f1(B, a, b, c, z):
    """Gauss hypergeometric function ``2F1(a, b; c; z) = sum_k (a)_k (b)_k / (c)_k
    z^k / k!``, elementwise (``z < 1`` for real ``z``).

    Parameters
    ----------
    a, b, c : tensor or number
        Parameters (not differentiable: a gradient raises ``NotImplementedError``).
    z : tensor
        Argument (differentiable): ``d/dz 2F1(a, b; c; z) = ab/c 2F1(a+1, b+1; c+1; z)``.

    Examples
    --------
    >>> import ndgrad
    >>> z = ndgrad.tensor([-0.5, 0.5], requires_grad=True)
    >>> ndgrad.special.hyp2f1(1.0, 1.0, 2.0, z)  # -log(1 - z) / z
    tensor([0.81093022, 1.38629436], grad_fn=<SpecialHyp2f1Backward0>)
    >>> ndgrad.special.hyp2f1(1.0, 1.0, 2.0, z).sum().backward()
    >>> z.grad
    tensor([0.2885271 , 1.22741128])
    """
    _real_only("hyp2f1", a, b, c)
    return B.special.hyp2f1(a, b, c, z)


hyp2f1.defvjp(_nd("hyp2f1", "a", "z"), _nd("hyp2f1", "b", "z"), _nd("hyp2f1", "c", "z"),
              lambda F, g, out, a, b, c, z: g * F.conj(
                  a * b / c * F.special.hyp2f1(a + 1, b + 1, c + 1, z)))
hyp2f1.defjvp_from_vjp()


# ------------------------------------------------------------------------- dilogarithm
@defop(kind=ELEMENTWISE, namespace="special", domain=Domain((0.05, 3.0)))
def spence(B, z):
    """Spence's function (SciPy's convention), ``spence(z) = integral_1^z log(t) / (1 - t)
    dt``, elementwise, for real ``z >= 0``.

    ``d/dz spence(z) = log(z) / (1 - z)`` (``-1`` at ``z = 1``; near 1 its Taylor
    polynomial, so higher derivatives are right there too). Real only.

    Examples
    --------
    >>> import ndgrad
    >>> z = ndgrad.tensor([0.5, 2.0], requires_grad=True)
    >>> ndgrad.special.spence(z)
    tensor([ 0.58224053, -0.82246703], grad_fn=<SpecialSpenceBackward0>)
    >>> ndgrad.special.spence(z).sum().backward()
    >>> z.grad      # log(z) / (1 - z)
    tensor([-1.38629436, -0.69314718])
    """
    _real_only("spence", z)
    return B.special.spence(z)


_SPENCE_SMALL = 1e-2
_SPENCE_D = [-1.0 / (k + 1) for k in range(8)]


def _spence_dz(F, z):
    # log(z) / (1 - z) = log(1 - w) / w = -(1 + w/2 + w^2/3 + ...) with w = 1 - z: its Taylor
    # polynomial through w^7 for |w| < 1e-2 (a where taking the limit -1 at z = 1 alone left
    # the second derivative 0 there, and the closed form's derivatives cancel 1/w^2 terms)
    near = F.abs(1 - z) < _SPENCE_SMALL
    w = F.where(near, 1 - z, 0.0)  # (w^7 overflows at 1e150: inf times the where's zero)
    poly = _SPENCE_D[-1]
    for c in reversed(_SPENCE_D[:-1]):
        poly = c + w * poly
    zs = F.where(near, 2.0, z)
    return F.where(near, poly, F.log(zs) / (1 - zs))


spence.defvjp(lambda F, g, out, z: g * _spence_dz(F, z))
spence.defjvp_from_vjp()


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
