"""``ndgrad.special``'s primitives: what their families share.

Every primitive of these families is declared with ``namespace="special"`` (Note [Namespaces] in
``registry.py``): it is public as ``ndgrad.special.<name>``, formulas call it as
``F.special.<name>``, and the property suite compares it with ``scipy.special.<name>`` (or,
where SciPy has no such function, such as ``sinc`` and ``zeta_derivative``, with the
reference in the test suite's table, ``REFERENCES`` in tests/registry_harness.py).
Forward passes call ``B.special`` (SciPy on the NumPy backend); derivative rules are written
with ``F`` only, mostly in terms of other functions of this module (``gammaln' = digamma``,
``digamma' = polygamma(1, .)``, ``i0' = i1``, ``erfinv' = sqrt(pi)/2 exp(erfinv^2)``,
``zeta' = zeta_derivative(., n=1)``, ...), so they differentiate again to any order.

They are elementwise primitives (kind ELEMENTWISE: broadcasting, batching and sampling come
from the kind and the domain). ``expit``, ``logsumexp``, ``softmax`` and ``log_softmax`` are
composites over the core ops ``sigmoid`` and ``logsumexp`` (ndgrad/scipy/special.py), so they
agree with them by construction.

The families, one file each: special_error.py (error functions, the normal distribution,
Owen's T), special_gamma.py (gamma, beta, their incomplete and inverse forms with the shape
derivatives, zeta, the exponential integral), special_bessel.py (Bessel functions, sinc),
special_entropy.py (logistic functions, ``x log y``, entropies) and
special_hypergeometric.py (hypergeometric functions, elliptic integrals, the dilogarithm,
spherical harmonics, Lambert W). This module holds what they share: constants, argument
checks, rules that raise, samplers and the large-argument expansions (Note [Large
arguments]).

Declared with ``namespace="special"``, forward passes call ``B.special``, which is SciPy on
the NumPy backend and cupyx, or SciPy on the host where cupyx lacks the function, on the
CUDA backend.

~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
Orders of Bessel functions (``v``), the order ``n`` of ``expn`` and the parameters ``a, b, c``
of the hypergeometric functions have no closed-form derivative in the functions available here
(they are series in digamma-weighted terms). As for ``gammainc``'s ``a`` (Note [Derivatives
that are not implemented] in ``special_gamma.py``), a gradient with respect to them raises
``NotImplementedError`` saying to detach them; the samplers draw them as integers or
Python numbers, which the property suite does not differentiate. The shapes ``a, b`` of the
incomplete beta function and its inverse are differentiable to first order (Note [Shape
derivatives of the incomplete gamma and beta functions] in special_gamma.py); their samplers
draw them the same way, and tests/special/test_special_gamma.py checks those derivatives.
"""

from __future__ import annotations

import math

from .registry import sample_numpy


_SQRT_PI_2 = math.sqrt(math.pi) / 2      # 1 / erf'(0)
_TWO_SQRT_PI = 2 / math.sqrt(math.pi)     # erf'(0)
_SQRT_2PI = math.sqrt(2 * math.pi)
_SQRT_2_PI = math.sqrt(2 / math.pi)
_SQRT_HALF = math.sqrt(0.5)
_PI = math.pi
_INF = float("inf")
_NAN = float("nan")


# ------------------------------------------------------------------------- helpers
_np = sample_numpy  # samplers only, never a formula


def _is_complex(x):
    dt = getattr(x, "dtype", None)
    return dt.kind == "c" if dt is not None else isinstance(x, complex)


def _real_only(name, *xs, why=None):
    """SciPy's ``name`` has no complex loop: say so (SciPy's own error names ufunc types)."""
    for x in xs:
        if _is_complex(x):
            why = why or f"scipy.special.{name} is defined for real numbers only"
            raise TypeError(f"special.{name}: complex input is not supported ({why}); pass a "
                            "real tensor, e.g. x.real")


# Note [Large arguments]
# ~~~~~~~~~~~~~~~~~~~~~~
# Some derivatives are a small difference of two nearly equal values for large x:
# ``i0e' = i1e - sign(x) i0e`` is about ``-i0e / (2 x)``, ``i1e'`` and ``erfcx'`` likewise, so
# the difference loses ``log10(x)`` digits and is 0 (or twice the truth) at 1e150. Beyond
# ``|x| = 1e6`` (``x = 1e3`` for erfcx) the rules use the first terms of the asymptotic series
# of the derivative, whose next term is below double precision there; those series are
# differentiated like any formula (tests/test_rules_at_special_points.py).
_ASYMPTOTIC = 1e3      # erfcx: the next term, 105/8 x^-8, is 1e-18 of the first
_ASYMPTOTIC_BESSEL = 1e6  # i0e, i1e: the next term is x^-3 = 1e-18 of the first
# (2 pi |x|)^(-1/2) (c1 / |x| + c2 / x^2 + c3 / |x|^3): the derivatives of i0e (times
# -sign(x), for x != 0) and of i1e for large |x|, from I_v(x) e^-x ~ (2 pi x)^(-1/2)
# sum_k (-1)^k a_k(v) / x^k
_I0E_PRIME = (0.5, 3 / 16, 45 / 256)
_I1E_PRIME = (-0.5, 9 / 16, 75 / 256)


def _large_x(F, x, exact, coefficients, odd):
    """``exact(x)`` for ``|x| <= 1e6``, the asymptotic series of the derivative beyond (Note
    [Large arguments]; ``exact`` is evaluated at 1 there: SciPy's ``ive`` is nan beyond
    1e10); ``odd``: the derivative is odd in x (the series is for x > 0)."""
    a = F.abs(x)
    big = a > _ASYMPTOTIC_BESSEL
    u = 1 / F.where(big, a, 2 * _ASYMPTOTIC_BESSEL)
    c1, c2, c3 = coefficients
    series = F.sqrt(u / (2 * _PI)) * u * (c1 + u * (c2 + u * c3))
    return F.where(big, -F.sign(x) * series if odd else series, exact(F.where(big, 1.0, x)))


def _raising_rule(message):
    """A derivative rule that raises NotImplementedError(message) when it is reached."""
    def rule(F, *args, **params):
        raise NotImplementedError(message)
    return rule


def _not_differentiable(name, arg, other, detail):
    return _raising_rule(
        f"special.{name}: the derivative with respect to {arg} is not implemented "
        f"({detail}); detach {arg} ({arg}.detach()) or pass it as a constant (a number "
        f"or a tensor that does not require grad). The derivative with respect to "
        f"{other} is available.")


# ------------------------------------------------------------------------- samplers
def _off_poles(low, high, gap=0.15):
    """Unary sampler in [low, high] for functions with poles at 0, -1, -2, ... (gamma,
    digamma): negative draws are moved to at least ``gap`` from the nearest integer."""
    def sample(d):
        np = _np()
        x = d.array(d.shape(), low, high)
        k = np.floor(x)
        moved = k + gap + (x - k) * (1 - 2 * gap)
        x = np.where(x < gap, moved, x)
        return (x,), {}
    return sample


def _stop(x):
    """A constant copy of ``x``: no gradient or tangent flows through it (raw arrays are
    constants already)."""
    return x.detach() if hasattr(x, "detach") else x


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


# ------------------------------------------------------------------------- error rules
def _second_order(name, arg):
    return _raising_rule(
        f"special.{name}: the second derivative with respect to {arg} is not implemented "
        f"(the first derivative in {arg} is a numerically summed series, Note [Shape "
        f"derivatives of the incomplete gamma and beta functions]); derivatives of first "
        f"order in {arg}, and of any order in the other arguments, are available.")


def _not_an_order(name, arg):
    def rule(F, *args, **params):
        raise NotImplementedError(
            f"special.{name}: {arg} is an integer order and has no derivative; detach {arg} "
            f"({arg}.detach()) or pass it as an int. {name} is differentiable in theta and phi.")
    return rule
