"""The Bessel functions of ``ndgrad.special`` (primitives): ``i0``, ``i1``, ``i0e``, ``i1e``,
``j0``, ``j1``, ``y0``, ``y1`` and those of real order ``jv``, ``yv``, ``ive``, ``kve``; and
``sinc`` (``sin(pi x) / (pi x)``, the spherical Bessel function ``j_0(pi x)``).

Derivative rules in ``z`` by the recurrences ``J_v' = (J_(v-1) - J_(v+1)) / 2`` (``Y_v``
likewise), ``I_v' = (I_(v-1) + I_(v+1)) / 2`` and ``K_v' = -(K_(v-1) + K_(v+1)) / 2``, here
for the exponentially scaled ``ive = I_v e^-|z|`` and ``kve = K_v e^z`` (``iv`` and ``kv``
are those times ``e^|z|`` / ``e^-z``: plain functions in ``ndgrad/scipy/special.py``); the
orders are not differentiated (Note [Parameters that are not differentiated] in
special_shared.py).

~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
``i1' = i0 - i1 / x``, ``j1' = j0 - j1 / x`` and ``i1e'`` divide by ``x``. Taking the limit
at ``x = 0`` with a ``where`` is right at 0 only: near 0 the differentiated rule has terms
of ``1/x^2`` that cancel, noise of 1e154 at ``x = 1e-170`` (and of 1e-6 already at
``1e-5``) in the second derivative. The rules use the recurrences instead, exact at 0 and with
no division: ``i1' = (i0 + I_2) / 2``, ``j1' = (j0 - J_2) / 2``, ``i1e' = (i0e + ive(2, x)) / 2 -
sign(x) i1e``, whose own derivatives are further recurrences (``ive``, ``jv``). ``sinc'`` has
the same problem with a nonzero second derivative at 0 (``-pi^2/3``): near 0 it is evaluated
as its Taylor polynomial (through ``x^7``), whose derivatives are right at 0 too.
"""

from __future__ import annotations

from .elementwise import _signed
from .registry import Domain, ELEMENTWISE, defop
from .special_shared import (_I0E_PRIME, _I1E_PRIME, _PI, _large_x, _nd, _notes, _real_only,
                             _sample_params)


# ------------------------------------------------------------------------- Bessel functions
@defop(kind=ELEMENTWISE, namespace="special", domain=Domain((-3.0, 3.0)))
def i0(B, x):
    """Modified Bessel function of the first kind of order 0, elementwise.

    ``d/dx i0(x) = i1(x)``. Real inputs only.

    Examples
    --------
    >>> import ndgrad
    >>> x = ndgrad.tensor([0.0, 1.0], requires_grad=True)
    >>> ndgrad.special.i0(x)
    tensor([1.        , 1.26606588], grad_fn=<SpecialI0Backward0>)
    >>> ndgrad.special.i0(x).sum().backward()
    >>> x.grad
    tensor([0.       , 0.5651591])
    """
    _real_only("i0", x)
    return B.special.i0(x)


i0.defvjp(lambda F, g, out, x: g * F.special.i1(x))
i0.defjvp_from_vjp()


@defop(kind=ELEMENTWISE, namespace="special", domain=Domain((-3.0, 3.0)))
def i1(B, x):
    """Modified Bessel function of the first kind of order 1, elementwise.

    ``d/dx i1(x) = i0(x) - i1(x) / x`` (``1/2`` at 0). Real inputs only.

    Examples
    --------
    >>> import ndgrad
    >>> x = ndgrad.tensor([0.0, 1.0], requires_grad=True)
    >>> ndgrad.special.i1(x)
    tensor([0.       , 0.5651591], grad_fn=<SpecialI1Backward0>)
    >>> ndgrad.special.i1(x).sum().backward()
    >>> x.grad
    tensor([0.5       , 0.70090677])
    """
    _real_only("i1", x)
    return B.special.i1(x)


# i1' = (i0 + I_2) / 2 (I_2 = ive(2, x) e^|x|): exact at 0 and with no 1/x to cancel (Note
# [Removable singularities]); beyond |x| = 1e3 it overflows either way (SciPy's ive is nan
# beyond 1e10: clipped). i0 is anchored at its exact value at 0, 1 (a GPU's i0(0) is one ulp
# below: 1 - i0(0) is a constant, 0 on the CPU)
def _i1_grad(F, g, x):
    i0 = F.special.i0(x) + (1 - F.special.i0(F.zeros((), dtype=x.dtype, like=x)))
    return g * (0.5 * (i0 + F.special.ive(2, F.clip(x, -1e3, 1e3)) * F.exp(F.abs(x))))


i1.defvjp(lambda F, g, out, x: _i1_grad(F, g, x))
i1.defjvp_from_vjp()


@defop(kind=ELEMENTWISE, namespace="special", domain=Domain((0.1, 3.0)),
       sample=_signed(0.1, 3.0))
def i0e(B, x):
    """Exponentially scaled modified Bessel function of order 0, ``exp(-|x|) i0(x)``.

    ``d/dx i0e(x) = i1e(x) - sign(x) i0e(x)``: a kink at 0, where the gradient is
    ``i1e(0) = 0`` (``sign(0) = 0``). Real inputs only.

    Examples
    --------
    >>> import ndgrad
    >>> x = ndgrad.tensor([1.0, 10.0], requires_grad=True)
    >>> ndgrad.special.i0e(x)
    tensor([0.46575961, 0.12783334], grad_fn=<SpecialI0eBackward0>)
    >>> ndgrad.special.i0e(x).sum().backward()
    >>> x.grad
    tensor([-0.25784919, -0.00657066])
    """
    _real_only("i0e", x)
    return B.special.i0e(x)


i0e.defvjp(lambda F, g, out, x: g * _large_x(
    F, x, lambda t: F.special.i1e(t) - F.sign(t) * F.special.i0e(t), _I0E_PRIME, odd=True))
i0e.defjvp_from_vjp()


@defop(kind=ELEMENTWISE, namespace="special", domain=Domain((0.1, 3.0)),
       sample=_signed(0.1, 3.0))
def i1e(B, x):
    """Exponentially scaled modified Bessel function of order 1, ``exp(-|x|) i1(x)``.

    ``d/dx i1e(x) = i0e(x) - i1e(x) (sign(x) + 1 / x)`` (``1/2`` at 0). Real inputs only.

    Examples
    --------
    >>> import ndgrad
    >>> x = ndgrad.tensor([0.0, 1.0], requires_grad=True)
    >>> ndgrad.special.i1e(x)
    tensor([0.        , 0.20791042], grad_fn=<SpecialI1eBackward0>)
    >>> ndgrad.special.i1e(x).sum().backward()
    >>> x.grad
    tensor([0.5       , 0.04993878])
    """
    _real_only("i1e", x)
    return B.special.i1e(x)


# i1e' = (i0e + ive(2, x)) / 2 - sign(x) i1e (Note [Removable singularities])
i1e.defvjp(lambda F, g, out, x: g * _large_x(
    F, x, lambda t: 0.5 * (F.special.i0e(t) + F.special.ive(2, t)) - F.sign(t) * F.special.i1e(t),
    _I1E_PRIME, odd=False))
i1e.defjvp_from_vjp()


@defop(kind=ELEMENTWISE, namespace="special", domain=Domain((-5.0, 5.0)))
def j0(B, x):
    """Bessel function of the first kind of order 0, elementwise.

    ``d/dx j0(x) = -j1(x)``. Real inputs only.

    Examples
    --------
    >>> import ndgrad
    >>> x = ndgrad.tensor([0.0, 1.0], requires_grad=True)
    >>> ndgrad.special.j0(x)
    tensor([1.        , 0.76519769], grad_fn=<SpecialJ0Backward0>)
    >>> ndgrad.special.j0(x).sum().backward()
    >>> x.grad
    tensor([-0.        , -0.44005059])
    """
    _real_only("j0", x)
    return B.special.j0(x)


j0.defvjp(lambda F, g, out, x: -g * F.special.j1(x))
j0.defjvp_from_vjp()


@defop(kind=ELEMENTWISE, namespace="special", domain=Domain((-5.0, 5.0)))
def j1(B, x):
    """Bessel function of the first kind of order 1, elementwise.

    ``d/dx j1(x) = j0(x) - j1(x) / x`` (``1/2`` at 0). Real inputs only.

    Examples
    --------
    >>> import ndgrad
    >>> x = ndgrad.tensor([0.0, 1.0], requires_grad=True)
    >>> ndgrad.special.j1(x)
    tensor([0.        , 0.44005059], grad_fn=<SpecialJ1Backward0>)
    >>> ndgrad.special.j1(x).sum().backward()
    >>> x.grad
    tensor([0.5      , 0.3251471])
    """
    _real_only("j1", x)
    return B.special.j1(x)


# j1' = (j0 - J_2) / 2 (Note [Removable singularities])
j1.defvjp(lambda F, g, out, x: g * (0.5 * (F.special.j0(x) - F.special.jv(2, x))))
j1.defjvp_from_vjp()


@defop(kind=ELEMENTWISE, namespace="special", domain=Domain((0.3, 5.0)))
def y0(B, x):
    """Bessel function of the second kind of order 0, for ``x > 0`` (``-inf`` at 0).

    ``d/dx y0(x) = -y1(x)``. Real inputs only.

    Examples
    --------
    >>> import ndgrad
    >>> x = ndgrad.tensor([1.0], requires_grad=True)
    >>> ndgrad.special.y0(x)
    tensor([0.08825696], grad_fn=<SpecialY0Backward0>)
    >>> ndgrad.special.y0(x).sum().backward()
    >>> x.grad
    tensor([0.78121282])
    """
    _real_only("y0", x)
    return B.special.y0(x)


y0.defvjp(lambda F, g, out, x: -g * F.special.y1(x))
y0.defjvp_from_vjp()


@defop(kind=ELEMENTWISE, namespace="special", domain=Domain((0.3, 5.0)))
def y1(B, x):
    """Bessel function of the second kind of order 1, for ``x > 0`` (``-inf`` at 0).

    ``d/dx y1(x) = y0(x) - y1(x) / x``. Real inputs only.

    Examples
    --------
    >>> import ndgrad
    >>> x = ndgrad.tensor([1.0], requires_grad=True)
    >>> ndgrad.special.y1(x)
    tensor([-0.78121282], grad_fn=<SpecialY1Backward0>)
    >>> ndgrad.special.y1(x).sum().backward()
    >>> x.grad
    tensor([0.86946979])
    """
    _real_only("y1", x)
    return B.special.y1(x)


y1.defvjp(lambda F, g, out, x: g * (F.special.y0(x) - out / x))
y1.defjvp_from_vjp()


# ------------------------------------------------------------------------- sinc
# Taylor coefficients of sinc'(x) = sum_k>=1 (-1)^k pi^2k 2k x^(2k-1) / (2k+1)!
_SINC_C1 = -_PI ** 2 / 3
_SINC_C3 = _PI ** 4 / 30
_SINC_C5 = -_PI ** 6 / 840
_SINC_C7 = _PI ** 8 / 45360
_SINC_SMALL = 1e-2  # below: the Taylor polynomial (relative error < 1e-18); above: closed form


def _sinc_derivative(F, x):
    # (cos(pi x) - sinc(x)) / x away from 0; its Taylor polynomial near 0, whose derivatives
    # at 0 are sinc's up to the 8th (Note [Removable singularities])
    small = F.abs(x) < _SINC_SMALL
    xs = F.where(small, 1.0, x)
    exact = (F.cos(_PI * xs) - F.special.sinc(xs)) / xs
    x2 = x * x
    taylor = x * (_SINC_C1 + x2 * (_SINC_C3 + x2 * (_SINC_C5 + x2 * _SINC_C7)))
    return F.where(small, taylor, exact)


@defop(kind=ELEMENTWISE, namespace="special", domain=Domain((-2.0, 2.0), complex=True))
def sinc(B, x):
    """Normalized sinc ``sin(pi x) / (pi x)`` (1 at 0), elementwise: NumPy's ``sinc``
    (SciPy has no ``special.sinc``).

    Holomorphic: complex inputs are supported. ``d/dx sinc(x) = (cos(pi x) - sinc(x)) / x``
    (0 at 0; near 0 its Taylor polynomial, so higher derivatives at 0 are right too).

    Examples
    --------
    >>> import ndgrad
    >>> x = ndgrad.tensor([0.5, 1.5], requires_grad=True)
    >>> ndgrad.special.sinc(x)
    tensor([ 0.63661977, -0.21220659], grad_fn=<SpecialSincBackward0>)
    >>> ndgrad.special.sinc(x).sum().backward()
    >>> x.grad
    tensor([-1.27323954,  0.14147106])
    """
    return B.sinc(x)


sinc.defvjp(lambda F, g, out, x: g * F.conj(_sinc_derivative(F, x)))
sinc.defjvp_from_vjp()


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
