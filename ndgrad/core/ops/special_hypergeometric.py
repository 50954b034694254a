"""The hypergeometric functions of ``ndgrad.special`` and their kin (primitives): the
confluent and Gauss hypergeometric functions ``hyp1f1``, ``hyp2f1``, the complete elliptic
integrals ``ellipk``, ``ellipe`` (hypergeometric ``2F1`` in ``m``), the dilogarithm
``spence``, the spherical harmonics ``sph_harm_y`` (associated Legendre functions, also
``2F1``), and Lambert's ``W`` function ``lambertw``.

Derivative rules: ``hyp1f1(a, b, x)' = a/b hyp1f1(a+1, b+1, x)``, ``hyp2f1(a, b, c, z)' = ab/c
hyp2f1(a+1, b+1, c+1, z)``, ``dK/dm = (E - (1 - m) K) / (2 m (1 - m))``, ``dE/dm = (E - K) /
(2 m)`` (limits ``pi/8`` and ``-pi/8`` at ``m = 0``), ``lambertw' = e^-W / (1 + W)`` (= ``W /
(x (1 + W))`` without the 0/0 at ``x = 0``); the parameters are not differentiated (Note
[Parameters that are not differentiated] in special_shared.py).

Note [Derivatives of sph_harm_y]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
``Y_n^m(theta, phi) = c_nm P_n^m(cos theta) e^(i m phi)`` (SciPy >= 1.15's convention, with
the Condon-Shortley phase). ``dY/dphi = i m Y``, and the ladder relations
``dY/dtheta = m cot(theta) Y + sqrt((n - m)(n + m + 1)) e^(-i phi) Y_n^(m+1)
= -m cot(theta) Y - sqrt((n + m)(n - m + 1)) e^(i phi) Y_n^(m-1)`` average to
``dY/dtheta = (sqrt((n - m)(n + m + 1)) e^(-i phi) Y_n^(m+1)
- sqrt((n + m)(n - m + 1)) e^(i phi) Y_n^(m-1)) / 2``, with no ``cot``, so it holds at the
poles too and for every sign of ``m`` (``Y_n^m = 0`` for ``|m| > n``, where the coefficients
vanish as well). Both rules are written with ``sph_harm_y`` itself, so they differentiate
again to any order. SciPy evaluates ``P_n^m(cos theta)`` with ``|sin theta|``: its function
of ``theta`` is even and ``2 pi``-periodic, i.e. the values on ``[0, pi]`` reflected, so the
rule is multiplied by ``sign(sin theta)`` (``+1`` at the poles: the derivative from inside
``(0, pi)``; for ``|m| = 1`` the reflected function has a kink there).
"""

from __future__ import annotations

import math

from ..backend import NUMPY
from .registry import Domain, ELEMENTWISE, defop
from .special_gamma import _SMALL
from .special_shared import _is_complex, _nd, _not_an_order, _notes, _real_only, _sample_params


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


lambertw.defvjp(lambda F, g, out, z, k=0, tol=1e-8: g * F.conj(F.exp(-out) / (1 + out)))
lambertw.defjvp_from_vjp()


# ------------------------------------------------------------------------- elliptic integrals
# Near m = 0, dK/dm and dE/dm are 0/0 forms whose differentiated closed forms cancel terms
# of 1/m^2 (nan at 5e-324, 1e300 at 1e-300, and 0 instead of K''(0) from a where taking the
# limit; Note [Removable singularities] in special_bessel.py): below |m| = 1e-2 their Taylor
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


# ------------------------------------------------------------------------- sph_harm_y
def _check_orders(B, n, m):
    for name, v in (("n", n), ("m", m)):
        va = B.asarray(v)
        if va.dtype.kind == "c" or (va.dtype.kind == "f" and va.size and bool(
                B.any(va != B.floor(va)))) or va.dtype.kind not in "iuf":
            raise ValueError(f"special.sph_harm_y: the order {name} must be an integer (an "
                             f"int or an integer array), got {v!r}")
    if B.asarray(n).size and bool(B.any(B.asarray(n) < 0)):
        raise ValueError("special.sph_harm_y: the degree n must be non-negative")


def _sample_sph_harm_y(d):
    s = d.shapes(4, **_SMALL)
    n = d.int_array(s[0], 0, 4)
    m = d.int_array(s[1], -4, 4)
    return (n, m, d.array(s[2], 0.1, 3.0), d.array(s[3], -3.0, 3.0)), {}


def _sph_dtheta(F, n, m, theta, phi):
    # Note [Derivatives of sph_harm_y]: the ladder relations, averaged (no cot theta)
    up = F.sqrt(F.maximum((n - m) * (n + m + 1), 0) * 1.0)
    down = F.sqrt(F.maximum((n + m) * (n - m + 1), 0) * 1.0)
    e = F.exp(1j * phi)
    d = 0.5 * (up * F.conj(e) * F.special.sph_harm_y(n, m + 1, theta, phi)
               - down * e * F.special.sph_harm_y(n, m - 1, theta, phi))
    return F.where(F.sin(theta) < 0, -d, d)


@defop(kind=ELEMENTWISE, nin=4, namespace="special",
       domain=Domain((0.0, 4.0), (-4.0, 4.0), (0.1, 3.0), (-3.0, 3.0)),
       sample=_sample_sph_harm_y,
       notes={"partial": "differentiable in theta and phi; the integer orders n and m are "
                         "drawn as integer arrays (not differentiated)"})
def sph_harm_y(B, n, m, theta, phi, *, diff_n=0):
    """Spherical harmonic ``Y_n^m(theta, phi)`` of degree ``n`` and order ``m``, elementwise
    (SciPy >= 1.15's ``sph_harm_y``: ``theta`` the polar angle, ``phi`` the azimuth; a complex
    result, with the Condon-Shortley phase and orthonormal on the sphere).

    Parameters
    ----------
    n, m : int or integer array
        Degree ``n >= 0`` and order ``m`` (``Y = 0`` for ``|m| > n``). Not differentiable:
        a gradient with respect to them raises ``NotImplementedError``.
    theta : tensor
        Polar angle (differentiable, to any order): ``dY/dtheta = (sqrt((n - m)(n + m + 1))
        e^(-i phi) Y_n^(m+1) - sqrt((n + m)(n - m + 1)) e^(i phi) Y_n^(m-1)) / 2``, also at
        the poles. SciPy's function is even in ``theta`` (it reflects ``theta`` into
        ``[0, pi]``), and so are the derivatives.
    phi : tensor
        Azimuth (differentiable, to any order): ``dY/dphi = i m Y``.
    diff_n : int, keyword-only (as in SciPy)
        Only ``0``: SciPy's ``diff_n > 0`` (its own derivatives) are replaced here by
        automatic differentiation (``ndgrad.func.jacfwd``, ``grad`` of the real and imaginary
        parts); other values raise ``ValueError``.

    Examples
    --------
    >>> import ndgrad
    >>> theta = ndgrad.tensor(0.5, requires_grad=True)
    >>> ndgrad.special.sph_harm_y(1, 0, theta, 0.0)  # sqrt(3 / (4 pi)) cos(theta)
    tensor(0.42878904+0.j, grad_fn=<SpecialSphHarmYBackward0>)
    >>> ndgrad.special.sph_harm_y(1, 0, theta, 0.0).real.backward()
    >>> theta.grad  # -sqrt(3 / (4 pi)) sin(theta)
    tensor(-0.23424852)
    """
    if diff_n != 0:
        raise ValueError(f"special.sph_harm_y: diff_n={diff_n!r} is not supported (only 0): "
                         "differentiate the result with ndgrad instead (ndgrad.func.jacfwd, "
                         "or grad of its .real and .imag)")
    _check_orders(B, n, m)
    _real_only("sph_harm_y", theta, phi)
    # (SciPy takes integer orders only: integral floats are cast)
    n, m = (B.asarray(v).astype(B.int64) if B.asarray(v).dtype.kind == "f" else v
            for v in (n, m))
    y = B.special.sph_harm_y(n, m, theta, phi)
    if B is not NUMPY:  # (CuPy's is NaN where |m| > n, SciPy's and the definition's 0)
        y = B.where(abs(B.asarray(m)) > B.asarray(n), 0, y)
    return y


sph_harm_y.defvjp(
    _not_an_order("sph_harm_y", "n"), _not_an_order("sph_harm_y", "m"),
    lambda F, g, out, n, m, theta, phi, diff_n=0: g * F.conj(_sph_dtheta(F, n, m, theta, phi)),
    lambda F, g, out, n, m, theta, phi, diff_n=0: g * F.conj(1j * m * out))
sph_harm_y.defjvp_each(
    _not_an_order("sph_harm_y", "n"), _not_an_order("sph_harm_y", "m"),
    lambda F, t, out, n, m, theta, phi, diff_n=0: t * _sph_dtheta(F, n, m, theta, phi),
    lambda F, t, out, n, m, theta, phi, diff_n=0: t * (1j * m * out))
