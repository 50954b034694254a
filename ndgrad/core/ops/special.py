"""``ndgrad.special``: differentiable special functions with SciPy's names and signatures.

Every function here is declared with ``namespace="special"`` (Note [Namespaces] in
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

Note [Derivatives that are not implemented]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
``gammainc(a, x)`` / ``gammaincc(a, x)`` have no closed-form derivative with respect to the
shape ``a`` (a series or a quadrature of ``log(t) t^(a-1) e^-t``). PyTorch's ``igamma``
raises there; here the first derivative is the primitive ``_gammainc_da`` (special_shape.py,
Note [Shape derivatives of the incomplete gamma and beta functions]), a series and a continued
fraction differentiated term by term, as TensorFlow and JAX do. Its own derivative in ``a`` is
not implemented: a second derivative in ``a`` raises ``NotImplementedError`` naming the
function. The derivative in ``x`` is exact (``x^(a-1) e^-x / Gamma(a)``) to any order. The
property suite draws ``a`` as integers or Python numbers, which it does not differentiate;
tests/special/test_special_shape.py checks the derivative in ``a``.

``zeta(x, q)`` was in the same position for ``x`` (``-sum_k log(k + q) / (k + q)^x``, whose
own derivatives are further such series; PyTorch's ``torch.special.zeta`` still raises). It
is differentiable now: those series are the primitive ``zeta_derivative(x, q, n)``, closed
under differentiation in ``x`` and ``q`` (Note [Derivatives of zeta in x]).

Note [Removable singularities]
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

import math

from .elementwise import _off_integers, _signed  # samplers shared with the step functions
from .registry import ELEMENTWISE, Domain, defop, sample_numpy

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


# ------------------------------------------------------------------------- gamma family
_GAMMA_DOMAIN = Domain((-2.5, 4.0))


@defop(kind=ELEMENTWISE, namespace="special", domain=_GAMMA_DOMAIN,
       sample=_off_poles(-2.5, 4.0))
def gamma(B, x):
    """Gamma function, elementwise (poles at 0, -1, -2, ...).

    ``d/dx gamma(x) = gamma(x) digamma(x)``. Real inputs only here.

    Examples
    --------
    >>> import ndgrad
    >>> x = ndgrad.tensor([1.0, 5.0], requires_grad=True)
    >>> ndgrad.special.gamma(x)
    tensor([ 1., 24.], grad_fn=<SpecialGammaBackward0>)
    >>> ndgrad.special.gamma(x).sum().backward()
    >>> x.grad
    tensor([-0.57721566, 36.14682404])
    """
    _real_only("gamma", x)
    return B.special.gamma(x)


gamma.defvjp(lambda F, g, out, x: g * (out * F.special.digamma(x)))
gamma.defjvp_from_vjp()


@defop(kind=ELEMENTWISE, namespace="special", domain=Domain((-3.0, 3.0), valid=_off_integers),
       piecewise_constant=True)
def gammasgn(B, x):
    """Sign of the gamma function: 1 for ``x > 0``; on ``(-k-1, -k)``, ``(-1)^(k+1)``; NaN at
    the poles -1, -2, ... and at ``-inf`` (SciPy's ``gammasgn``, which gives -1 at ``-0.0``).

    Piecewise constant: its output requires grad when ``x`` does, with a zero derivative, as
    ``ndgrad.floor``'s (Note [Piecewise-constant ops] in registry.py). Real inputs only.

    Examples
    --------
    >>> import ndgrad
    >>> x = ndgrad.tensor([2.5, -0.5, -1.5], requires_grad=True)
    >>> ndgrad.special.gammasgn(x)
    tensor([ 1., -1.,  1.], grad_fn=<SpecialGammasgnBackward0>)
    >>> ndgrad.autograd.grad(ndgrad.special.gammasgn(x).sum(), x)
    (tensor([0., 0., 0.]),)
    """
    _real_only("gammasgn", x)
    return B.special.gammasgn(x)


@defop(kind=ELEMENTWISE, namespace="special", domain=_GAMMA_DOMAIN,
       sample=_off_poles(-2.5, 4.0))
def gammaln(B, x):
    """Logarithm of the absolute value of the gamma function, ``log|gamma(x)|``.

    ``d/dx gammaln(x) = digamma(x)`` (also for negative ``x``, where ``gamma`` changes
    sign). Real inputs only.

    Examples
    --------
    >>> import ndgrad
    >>> x = ndgrad.tensor([1.0, 200.0], requires_grad=True)
    >>> ndgrad.special.gammaln(x)  # gamma(200) overflows, its logarithm does not
    tensor([  0.        , 857.93366983], grad_fn=<SpecialGammalnBackward0>)
    >>> ndgrad.special.gammaln(x).sum().backward()
    >>> x.grad
    tensor([-0.57721566,  5.29581528])
    """
    _real_only("gammaln", x)
    return B.special.gammaln(x)


gammaln.defvjp(lambda F, g, out, x: g * F.special.digamma(x))
gammaln.defjvp_from_vjp()


@defop(kind=ELEMENTWISE, namespace="special", domain=_GAMMA_DOMAIN,
       sample=_off_poles(-2.5, 4.0))
def digamma(B, x):
    """Digamma function ``psi(x) = d/dx log gamma(x)``, elementwise.

    ``d/dx digamma(x) = polygamma(1, x)``. Real inputs only here.

    Examples
    --------
    >>> import ndgrad
    >>> x = ndgrad.tensor([1.0], requires_grad=True)
    >>> ndgrad.special.digamma(x)  # minus the Euler-Mascheroni constant
    tensor([-0.57721566], grad_fn=<SpecialDigammaBackward0>)
    >>> ndgrad.special.digamma(x).sum().backward()
    >>> x.grad  # pi^2 / 6
    tensor([1.64493407])
    """
    _real_only("digamma", x)
    return B.special.digamma(x)


digamma.defvjp(lambda F, g, out, x: g * F.special.polygamma(1, x))
digamma.defjvp_from_vjp()


def _check_order(B, n):
    """``n`` of polygamma: non-negative integers (SciPy silently returns NaN otherwise)."""
    if _is_complex(n) or isinstance(n, bool):
        raise TypeError(f"special.polygamma: the order n must be a non-negative integer, "
                        f"got {n!r}")
    na = B.asarray(n)
    if na.dtype.kind not in "iuf" or (na.size and (bool(B.any(na < 0)) or
                                                   bool(B.any(na != B.floor(na))))):
        raise ValueError(f"special.polygamma: the order n must be a non-negative integer "
                         f"(0 for digamma, 1 for trigamma, ...), got {n!r}")


def _sample_polygamma(d):
    sn, sx = d.shapes(2)
    n = d.int_array(sn, 0, 3) if d.boolean() else d.integers(0, 3)
    return (n, d.array(sx, 0.3, 4.0)), {}


@defop(kind=ELEMENTWISE, nin=2, namespace="special", domain=Domain((0.3, 4.0)),
       sample=_sample_polygamma)
def polygamma(B, n, x):
    """Polygamma function: the ``n``-th derivative of :func:`digamma`, elementwise.

    Parameters
    ----------
    n : int or integer tensor
        Order: a non-negative integer (broadcasts with ``x``); not differentiable.
    x : tensor
        Real argument (differentiable).

    Notes
    -----
    ``d/dx polygamma(n, x) = polygamma(n + 1, x)``, so every order differentiates again.

    Examples
    --------
    >>> import ndgrad
    >>> x = ndgrad.tensor([1.0, 2.0], requires_grad=True)
    >>> ndgrad.special.polygamma(1, x)
    tensor([1.64493407, 0.64493407], grad_fn=<SpecialPolygammaBackward0>)
    >>> ndgrad.special.polygamma(1, x).sum().backward()
    >>> x.grad
    tensor([-2.40411381, -0.40411381])
    """
    _check_order(B, n)
    _real_only("polygamma", x)
    return B.special.polygamma(n, x)


polygamma.defvjp(None, lambda F, g, out, n, x: g * F.special.polygamma(n + 1, x))
polygamma.defjvp_from_vjp()


def _sample_multigammaln(d):
    dim = d.integers(1, 3)
    low = (dim - 1) / 2
    return (d.array(d.shape(), low + 0.3, low + 3.0), dim), {}


@defop(kind=ELEMENTWISE, namespace="special", domain=Domain((1.3, 4.0)),
       sample=_sample_multigammaln)
def multigammaln(B, a, d):
    """Logarithm of the multivariate gamma function of dimension ``d``, elementwise in ``a``.

    ``log Gamma_d(a) = d (d - 1) / 4 log(pi) + sum_{j=1..d} gammaln(a + (1 - j) / 2)``,
    defined for ``a > (d - 1) / 2``.

    Parameters
    ----------
    a : tensor
        Real argument (differentiable): ``d/da = sum_{j=0..d-1} digamma(a - j / 2)``.
    d : int
        Dimension, a positive integer (not differentiable).

    Examples
    --------
    >>> import ndgrad
    >>> a = ndgrad.tensor([2.0], requires_grad=True)
    >>> ndgrad.special.multigammaln(a, 2)
    tensor([0.45158271], grad_fn=<SpecialMultigammalnBackward0>)
    >>> ndgrad.special.multigammaln(a, 2).sum().backward()
    >>> a.grad
    tensor([0.45927431])
    """
    if isinstance(d, bool) or not isinstance(d, int) and not (
            hasattr(d, "__index__") and getattr(d, "ndim", 0) == 0):
        raise TypeError(f"special.multigammaln: the dimension d must be a positive int, "
                        f"got {d!r}")
    d = int(d)
    if d < 1:
        raise ValueError(f"special.multigammaln: the dimension d must be a positive int, "
                         f"got {d}")
    _real_only("multigammaln", a)
    a_arr = B.asarray(a)
    if a_arr.size and bool(B.any(a_arr <= (d - 1) / 2)):
        raise ValueError(f"special.multigammaln: every element of a must be greater than "
                         f"(d - 1) / 2 = {(d - 1) / 2} for d = {d}; the smallest is "
                         f"{float(B.min(a_arr))}")
    return B.special.multigammaln(a, d)


def _multigammaln_vjp(F, g, out, a, d):
    total = F.special.digamma(a)
    for j in range(1, int(d)):
        total = total + F.special.digamma(a - j / 2)
    return g * total


multigammaln.defvjp(_multigammaln_vjp)
multigammaln.defjvp_from_vjp()


_POSITIVE2 = Domain((0.3, 3.0))
# (read by tests/test_rules_at_special_points.py, Note [Derivatives at special points])
_BETA_POLES = {"special_points": (
    "where a, b or a + b is a non-positive integer, SciPy's beta is the finite limit of a "
    "ratio of poles of Gamma (beta(-30, 1) = -1/30) while the rule's digamma(a) - "
    "digamma(a + b) is nan there; and for a >> b (1e150 and 0.5) that difference, -b/a, "
    "cancels to 0")}


@defop(kind=ELEMENTWISE, nin=2, namespace="special", domain=_POSITIVE2, notes=_BETA_POLES)
def beta(B, a, b):
    """Beta function ``gamma(a) gamma(b) / gamma(a + b)``, elementwise, broadcasting.

    ``d/da beta(a, b) = beta(a, b) (digamma(a) - digamma(a + b))``, and symmetrically for
    ``b``. Real inputs only.

    Examples
    --------
    >>> import ndgrad
    >>> a = ndgrad.tensor([1.0, 2.0], requires_grad=True)
    >>> ndgrad.special.beta(a, 2.0)
    tensor([0.5       , 0.16666667], grad_fn=<SpecialBetaBackward0>)
    >>> ndgrad.special.beta(a, 2.0).sum().backward()
    >>> a.grad
    tensor([-0.75      , -0.13888889])
    """
    _real_only("beta", a, b)
    return B.special.beta(a, b)


beta.defvjp(lambda F, g, out, a, b: g * (out * (F.special.digamma(a)
                                                 - F.special.digamma(a + b))),
            lambda F, g, out, a, b: g * (out * (F.special.digamma(b)
                                                 - F.special.digamma(a + b))))
beta.defjvp_from_vjp()


@defop(kind=ELEMENTWISE, nin=2, namespace="special", domain=_POSITIVE2, notes=_BETA_POLES)
def betaln(B, a, b):
    """Logarithm of the absolute value of the beta function, elementwise, broadcasting.

    ``d/da betaln(a, b) = digamma(a) - digamma(a + b)``, and symmetrically for ``b``. Real
    inputs only.

    Examples
    --------
    >>> import ndgrad
    >>> a = ndgrad.tensor([1.0, 2.0], requires_grad=True)
    >>> ndgrad.special.betaln(a, 2.0)
    tensor([-0.69314718, -1.79175947], grad_fn=<SpecialBetalnBackward0>)
    >>> ndgrad.special.betaln(a, 2.0).sum().backward()
    >>> a.grad
    tensor([-1.5       , -0.83333333])
    """
    _real_only("betaln", a, b)
    return B.special.betaln(a, b)


betaln.defvjp(lambda F, g, out, a, b: g * (F.special.digamma(a) - F.special.digamma(a + b)),
              lambda F, g, out, a, b: g * (F.special.digamma(b) - F.special.digamma(a + b)))
betaln.defjvp_from_vjp()


# ------------------------------------------------------------------------- incomplete gamma
def _sample_gammainc(d):
    sa, sx = d.shapes(2)
    # `a` is drawn as integers or a Python number: the suite does not differentiate those
    # (its derivative in a is first order only: Note [Derivatives that are not implemented])
    a = d.int_array(sa, 1, 4) if d.boolean() else float(d.array((), 0.5, 3.0))
    return (a, d.array(sx, 0.2, 4.0)), {}


def _gammainc_dx(F, a, x):
    # x^(a-1) e^(-x) / Gamma(a); xlogy keeps x = 0, a = 1 finite (the density there is 1)
    return power_times_exp(F, x, a - 1, -x - F.special.gammaln(a))


def power_times_exp(F, x, p, rest):
    """``x ** p * exp(rest)`` for ``x >= 0``: by logs, ``exp(xlogy(p, x) + rest)`` (the power
    and ``exp(rest)`` may under- or overflow apart), except at tiny ``0 < x < 2^-256``: there
    the log's derivatives overflow from the third on (2 / x^3), so Taylor mode's series of the
    log form are inf - inf where the density's are numbers (Note [Taylor mode at singular
    points]); the power form ``x ** p exp(min(rest, 700))`` is exact there (where ``rest``
    exceeds 700 the power has underflowed: the product is 0 either way)."""
    tiny = (x > 0) & (x < 2.0 ** -256)
    xl = F.where(tiny, 0.5, x)
    by_logs = F.exp(F.special.xlogy(p, xl) + rest)
    xt = F.where(tiny, x, 0.5)
    by_power = F.pow(xt, p) * F.exp(F.minimum(rest, 700.0))
    return F.where(tiny, by_power, by_logs)


def _gammainc_da(F, g, a, x):
    # dP/da: no closed form; the helper primitive of special_shape.py (first order only)
    return g * F.special._gammainc_da(a, x)


_GAMMAINC_NOTES = {"partial": "the sampler draws a as integers or numbers (not "
                              "differentiated): the derivative in a is first order only "
                              "(special._gammainc_da, whose derivative in a raises); "
                              "tests/special/test_special_shape.py checks it"}


@defop(kind=ELEMENTWISE, nin=2, namespace="special", domain=Domain((0.5, 3.0), (0.2, 4.0)),
       sample=_sample_gammainc, notes=_GAMMAINC_NOTES)
def gammainc(B, a, x):
    """Regularized lower incomplete gamma function
    ``P(a, x) = 1/gamma(a) * integral_0^x t^(a-1) e^-t dt``, elementwise, broadcasting.

    Parameters
    ----------
    a : tensor or number
        Shape, ``a > 0``. Differentiable to first order: ``dP/da`` has no closed form and is
        summed numerically (relative error below ``1e-12`` for ``a`` in ``[0.05, 1000]``);
        a second derivative in ``a`` raises ``NotImplementedError``.
    x : tensor
        ``x >= 0`` (differentiable, to any order): ``d/dx P(a, x) = x^(a-1) e^-x /
        gamma(a)``.

    Examples
    --------
    >>> import ndgrad
    >>> x = ndgrad.tensor([1.0, 2.0], requires_grad=True)
    >>> ndgrad.special.gammainc(1.0, x)  # 1 - exp(-x)
    tensor([0.63212056, 0.86466472], grad_fn=<SpecialGammaincBackward0>)
    >>> ndgrad.special.gammainc(1.0, x).sum().backward()
    >>> x.grad
    tensor([0.36787944, 0.13533528])
    """
    _real_only("gammainc", a, x)
    return B.special.gammainc(a, x)


gammainc.defvjp(lambda F, g, out, a, x: _gammainc_da(F, g, a, x),
                lambda F, g, out, a, x: g * _gammainc_dx(F, a, x))
gammainc.defjvp_from_vjp()


@defop(kind=ELEMENTWISE, nin=2, namespace="special", domain=Domain((0.5, 3.0), (0.2, 4.0)),
       sample=_sample_gammainc, notes=_GAMMAINC_NOTES)
def gammaincc(B, a, x):
    """Regularized upper incomplete gamma function ``Q(a, x) = 1 - P(a, x)``, elementwise.

    Parameters
    ----------
    a : tensor or number
        Shape, ``a > 0``. Differentiable to first order (``dQ/da = -dP/da``, summed
        numerically, as for :func:`gammainc`); a second derivative in ``a`` raises
        ``NotImplementedError``.
    x : tensor
        ``x >= 0`` (differentiable, to any order): ``d/dx Q(a, x) = -x^(a-1) e^-x /
        gamma(a)``.

    Examples
    --------
    >>> import ndgrad
    >>> x = ndgrad.tensor([1.0, 2.0], requires_grad=True)
    >>> ndgrad.special.gammaincc(1.0, x)  # exp(-x)
    tensor([0.36787944, 0.13533528], grad_fn=<SpecialGammainccBackward0>)
    >>> ndgrad.special.gammaincc(1.0, x).sum().backward()
    >>> x.grad
    tensor([-0.36787944, -0.13533528])
    """
    _real_only("gammaincc", a, x)
    return B.special.gammaincc(a, x)


gammaincc.defvjp(lambda F, g, out, a, x: _gammainc_da(F, -g, a, x),
                 lambda F, g, out, a, x: -g * _gammainc_dx(F, a, x))
gammaincc.defjvp_from_vjp()


# ------------------------------------------------------------------------- zeta
# Note [Derivatives of zeta in x]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# d^n/dx^n zeta(x, q) = (-1)^n sum_{k>=0} log(k + q)^n (k + q)^-x =: S_n(x, q) is the primitive
# ``zeta_derivative(x, q, n)``; its own derivatives are S_{n+1} (in x) and, by Leibniz on
# d/dq zeta(x, q) = -x zeta(x + 1, q), -(x S_n(x + 1, q) + n S_{n-1}(x + 1, q)) (in q), so
# every order of zeta in x and q differentiates again. The forward (``_zeta_sums``):
#
# * Euler-Maclaurin summation for x > 1, q > 0: the first _ZETA_N terms directly (smallest
#   first), then for the rest of f(t) = log(t + q)^m (t + q)^-x, t >= N: the integral in
#   closed form (u = log(t + q) makes it the upper incomplete gamma function of integer order
#   m + 1: (N + q)^(1-x) sum_{j<=m} m!/j! L^j / (x - 1)^(m+1-j), L = log(N + q)), f(N) / 2,
#   and the corrections -sum_{j<=_ZETA_M} B_2j / (2j)! f^(2j-1)(N). The derivatives of f are
#   exact: f^(d)(t) = (t + q)^(-x-d) sum_i m!/(m-i)! e_{d,i} log(t + q)^(m-i), where e_{0,0}
#   = 1 and e_{d+1,i} = e_{d,i-1} - (x + d) e_{d,i} (the same e serve every order m).
#   N = 8, M = 10 give about 1e-15 relative error for x in (1, 100], q in [1e-5, 1e3] and
#   n <= 8, measured against 40-digit arithmetic (up to 5e-15 for q < 1, where the k = 0 term
#   has the other sign and the sum is smaller than its terms; near a zero of S_n the error is
#   small in absolute, not relative, terms). Every term is an analytic function of x, so
#   finite differences of the forward see a smooth function.
# * The same formula is the analytic continuation of zeta(x, q) to x < 1 (the remainder of
#   Euler-Maclaurin is analytic in x there, down to about x = -2M). SciPy's Hurwitz zeta is
#   NaN for x < 1, and so are its derivatives here; the Riemann zeta (q=None) is defined for
#   every x != 1, so there x in [-1/2, 1) uses the continuation (q = 1) and x < -1/2 the
#   reflection formula zeta(s) = chi(s) zeta(1 - s), chi(s) = (2 pi)^s / pi sin(pi s / 2)
#   Gamma(1 - s), differentiated by Leibniz: chi^(k) from the derivatives of log Gamma(1 - s)
#   (polygamma) through complete Bell polynomials, and the shifted sines. The direct sum
#   cancels catastrophically for negative x, the reflection near x = 0 (where zeta(1 - s)
#   has its pole): hence the split at -1/2. For n <= 6 the error is below 3e-14 from the
#   pole down to x = -250 (where the values overflow); it grows with n next to the split.
# * At the pole x = 1 the value is the limit from the right, (-1)^n inf (SciPy: zeta(1) =
#   inf); q <= 0 gives NaN for n >= 1 (log(k + q) of a negative number; SciPy's zeta(x, q)
#   accepts q < 0 for integer x only). n = 0 is SciPy's zeta itself.
def _bernoulli_over_factorial(count):
    """``[B_2 / 2!, B_4 / 4!, ...]`` (``count`` of them), computed exactly (Akiyama-Tanigawa)
    and rounded once."""
    from fractions import Fraction
    a = [Fraction(0)] * (2 * count + 1)
    out = []
    for m in range(2 * count + 1):
        a[m] = Fraction(1, m + 1)
        for j in range(m, 0, -1):
            a[j - 1] = j * (a[j - 1] - a[j])
        if m >= 2 and m % 2 == 0:
            out.append(float(a[0] / math.factorial(m)))
    return tuple(out)


_ZETA_N = 8       # terms summed directly
_ZETA_M = 10      # Euler-Maclaurin corrections
_ZETA_B = _bernoulli_over_factorial(_ZETA_M)
_ZETA_REFLECT = -0.5  # Riemann zeta: reflection formula below, continuation above
_LOG_2PI = math.log(2 * math.pi)
_PI_32 = math.pi ** 1.5


def _zeta_sums(B, x, q, n):
    """``[S_0(x, q), ..., S_n(x, q)]`` by Euler-Maclaurin (Note [Derivatives of zeta in x]):
    float64 arrays ``x`` (any real; the continuation below 1) and ``q > 0``, broadcast."""
    N = _ZETA_N
    nq = N + q
    L = B.log(nq)
    P = B.power(nq, -x)                   # (N + q)^-x
    r = 1.0 / (x - 1.0)
    # tail integrals: T_m = L^m r + m r T_{m-1}, times (N + q)^(1-x); plus f(N) / 2
    sums = []
    t = None
    Lm = B.ones_like(L)
    for m in range(n + 1):
        t = Lm * r if m == 0 else Lm * r + m * r * t
        sums.append((t * nq + 0.5 * Lm) * P)
        Lm = Lm * L
    # Bernoulli corrections: f_m^(d)(N) = (N + q)^(-x-d) sum_i m!/(m-i)! e_i L^(m-i)
    e = [B.ones_like(x)] + [B.zeros_like(x)] * n
    Pd = P
    corr = [0.0] * (n + 1)
    d = 0
    for j, b in enumerate(_ZETA_B):
        for _ in range(1 if j == 0 else 2):
            e = [e[0] * -(x + d)] + [e[i - 1] - (x + d) * e[i] for i in range(1, n + 1)]
            d += 1
            Pd = Pd / nq
        for m in range(n + 1):
            h = e[0]                      # Horner in L: sum_i m!/(m-i)! e_i L^(m-i)
            for i in range(1, m + 1):
                h = h * L + (math.factorial(m) // math.factorial(m - i)) * e[i]
            corr[m] = corr[m] + b * h * Pd
    # where (N + q)^-x underflows, the tail is below the sum's last bit (its coefficients
    # may be inf there: x = inf)
    small = P == 0
    sums = [B.where(small, 0.0, s - c) for s, c in zip(sums, corr)]
    # the first N terms, smallest first
    for k in range(N - 1, -1, -1):
        lk = B.log(k + q)
        p = B.power(k + q, -x)
        for m in range(n + 1):
            sums[m] = sums[m] + p
            p = p * lk
    return [s if m % 2 == 0 else -s for m, s in enumerate(sums)]


def _riemann_reflected(B, s, n):
    """``zeta^(n)(s)`` for ``s < 0`` from ``zeta(s) = chi(s) zeta(1 - s)``
    (Note [Derivatives of zeta in x])."""
    z = 1.0 - s
    sums = _zeta_sums(B, z, 1.0, n)            # S_m(1 - s), m = 0..n
    # chi = G sin(pi s / 2), G = (2 pi)^s Gamma(1 - s) / pi; Gamma by the duplication
    # formula, so G stays finite as long as the result is
    h = B.power(2 * _PI, 0.5 * s)
    G = (h * B.special.gamma(0.5 * z)) * (h * B.special.gamma(0.5 * z + 0.5)) * \
        B.power(2.0, z - 1.0) / _PI_32
    # G^(l) = G Y_l(g_1, ..., g_l), g_i the derivatives of log G: complete Bell polynomials
    g = [None, _LOG_2PI - B.special.digamma(z)] + [
        (1 if i % 2 == 0 else -1) * B.special.polygamma(i - 1, z) for i in range(2, n + 1)]
    Y = [B.ones_like(z)]
    for m in range(n):
        Y.append(sum(math.comb(m, i) * Y[m - i] * g[i + 1] for i in range(m + 1)))
    # d^j/ds^j sin(pi s / 2) = (pi / 2)^j sin(pi s / 2 + j pi / 2); s reduced mod 4 exactly
    theta = (_PI / 2) * B.fmod(s, 4.0)
    sin, cos = B.sin(theta), B.cos(theta)
    shifted = (sin, cos, -sin, -cos)
    total = 0.0
    for k in range(n + 1):
        chi_k = sum(math.comb(k, i) * Y[i] * ((_PI / 2) ** (k - i) * shifted[(k - i) % 4])
                    for i in range(k + 1))
        term = math.comb(n, k) * chi_k * sums[n - k]
        total = total + (term if (n - k) % 2 == 0 else -term)
    return G * total


def _check_zeta_order(n):
    if isinstance(n, bool) or not hasattr(n, "__index__"):
        raise TypeError(f"special.zeta_derivative: the order n must be a non-negative int "
                        f"(0 for zeta itself, 1 for the first derivative in x, ...), got {n!r}")
    n = int(n.__index__())
    if n < 0:
        raise ValueError(f"special.zeta_derivative: the order n must be a non-negative int "
                         f"(0 for zeta itself, 1 for the first derivative in x, ...), got {n}")
    return n


def _zeta_derivative_args(x, q=None, n=1):
    return (x, q), {"n": n}


def _sample_zeta_derivative(d):
    (x, q), _ = _sample_zeta(d)
    return (x, q), {"n": d.integers(0, 3)}


@defop(kind=ELEMENTWISE, nin=2, namespace="special", domain=Domain((1.5, 6.0), (0.3, 3.0)),
       sample=_sample_zeta_derivative)
def zeta_derivative(B, x, q=None, n=1):
    """The ``n``-th derivative in ``x`` of :func:`zeta`: Riemann (``q=None``) or Hurwitz
    ``d^n/dx^n zeta(x, q) = (-1)^n sum_{k>=0} log(k + q)^n (k + q)^-x``.

    SciPy has no such function (mpmath's is ``zeta(s, a, derivative)``); this is what the
    gradient of :func:`zeta` in ``x`` calls.

    Parameters
    ----------
    x : tensor or number
        Exponent (differentiable): ``d/dx zeta_derivative(x, q, n) = zeta_derivative(x, q,
        n + 1)``. The Hurwitz function needs ``x > 1`` (NaN below, as SciPy's ``zeta(x, q)``);
        the Riemann function (``q=None``) is defined for every ``x != 1``. At ``x = 1``
        (the pole) the result is the limit from the right, ``(-1)^n inf``.
    q : tensor, number or None
        Shift ``q > 0`` (differentiable):
        ``d/dq = -(x zeta_derivative(x + 1, q, n) + n zeta_derivative(x + 1, q, n - 1))``.
        None (the default) gives the Riemann zeta function's derivatives; ``q <= 0`` gives
        NaN for ``n >= 1``.
    n : int
        Order of the derivative, a non-negative int (not differentiable); ``n=0`` is
        :func:`zeta` itself.

    Notes
    -----
    For ``x > 1`` the series is summed by Euler-Maclaurin: eight terms directly, the rest as
    its integral in closed form plus ten Bernoulli corrections, with a relative error of about
    ``1e-15`` (for ``n`` up to 8, ``x`` up to 100 and ``q`` in ``[1e-5, 1e3]``). Left of the
    pole, the Riemann function's derivatives come from the same formula's analytic
    continuation down to ``x = -1/2`` and from the reflection formula below that (relative
    error below ``3e-14`` for ``n`` up to 6). Real inputs only. Float32 inputs give a
    float32 result (computed in float64).

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.special.zeta_derivative(2.0)  # zeta'(2)
    tensor(-0.93754825)
    >>> ndgrad.special.zeta_derivative(0.0)  # zeta'(0) = -log(2 pi) / 2
    tensor(-0.91893853)
    >>> x = ndgrad.tensor([2.0, 3.0], requires_grad=True)
    >>> ndgrad.special.zeta(x).sum().backward()
    >>> x.grad
    tensor([-0.93754825, -0.19812624])
    """
    n = _check_zeta_order(n)
    _real_only("zeta_derivative", x, q, why="it is computed for real x and q only, as "
               "scipy.special.zeta")
    if n == 0:
        return B.special.zeta(x) if q is None else B.special.zeta(x, q)
    rt = B.result_type(x) if q is None else B.result_type(x, q)
    dtype = B.float32 if rt in (B.float16, B.float32) else B.float64
    xa = B.asarray(x, dtype=B.float64)
    with B.errstate(all="ignore"):
        if q is None:
            reflect = xa < _ZETA_REFLECT
            out = _zeta_sums(B, B.where(reflect, 2.0, xa), 1.0, n)[n]
            if bool(B.any(reflect)):
                out = B.where(reflect, _riemann_reflected(B, B.where(reflect, xa, -1.0), n),
                              out)
        else:
            qa = B.asarray(q, dtype=B.float64)
            ok = (xa > 1) & (qa > 0)
            out = _zeta_sums(B, B.where(ok, xa, 2.0), B.where(ok & (qa < B.inf), qa, 1.0),
                             n)[n]
            out = B.where(ok, B.where(qa < B.inf, out, 0.0), B.nan)
        out = B.where(xa == 1, -B.inf if n % 2 else B.inf, out)
    return B.asarray(out, dtype=dtype)


def _zeta_derivative_dq(F, g, out, x, q, n=1):
    d = x * F.special.zeta_derivative(x + 1, q, n=n)
    if n:
        d = d + n * F.special.zeta_derivative(x + 1, q, n=n - 1)
    return -g * d


zeta_derivative.defvjp(lambda F, g, out, x, q, n=1: g * F.special.zeta_derivative(x, q, n=n + 1),
                       _zeta_derivative_dq)
zeta_derivative.defjvp_from_vjp()
zeta_derivative.defargs(_zeta_derivative_args)


def _sample_zeta(d):
    sx, sq = d.shapes(2)
    x = d.array(sx, 1.5, 6.0)
    if d.boolean():  # Riemann zeta
        return (x, None), {}
    return (x, d.array(sq, 0.3, 3.0)), {}


def _zeta_args(x, q=None):
    return (x, q), {}


@defop(kind=ELEMENTWISE, nin=2, namespace="special", domain=Domain((1.5, 6.0), (0.3, 3.0)),
       sample=_sample_zeta)
def zeta(B, x, q=None):
    """Riemann zeta ``zeta(x)`` or Hurwitz zeta ``zeta(x, q) = sum_{k>=0} (k + q)^-x``.

    Parameters
    ----------
    x : tensor or number
        Exponent (differentiable): ``d/dx zeta(x, q) = zeta_derivative(x, q, n=1)
        = -sum_k log(k + q) / (k + q)^x`` (:func:`zeta_derivative`, itself differentiable to
        any order). The Hurwitz function is defined for ``x > 1``.
    q : tensor, number or None
        Shift (differentiable): ``d/dq zeta(x, q) = -x zeta(x + 1, q)``. None (the default)
        gives the Riemann zeta function of ``x``, defined (and differentiable) for every real
        ``x != 1``.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.special.zeta(2.0)  # pi^2 / 6
    tensor(1.64493407)
    >>> q = ndgrad.tensor([1.0, 2.0], requires_grad=True)
    >>> ndgrad.special.zeta(2.0, q)
    tensor([1.64493407, 0.64493407], grad_fn=<SpecialZetaBackward0>)
    >>> ndgrad.special.zeta(2.0, q).sum().backward()
    >>> q.grad
    tensor([-2.40411381, -0.40411381])
    >>> x = ndgrad.tensor([2.0], requires_grad=True)
    >>> ndgrad.special.zeta(x).backward()
    >>> x.grad  # zeta'(2)
    tensor([-0.93754825])
    """
    _real_only("zeta", x, q)
    if q is None:
        return B.special.zeta(x)
    return B.special.zeta(x, q)


zeta.defvjp(lambda F, g, out, x, q: g * F.special.zeta_derivative(x, q, n=1),
            lambda F, g, out, x, q: g * (-x * F.special.zeta(x + 1, q)))
zeta.defjvp_from_vjp()
zeta.defargs(_zeta_args)


# ------------------------------------------------------------------------- logistic
@defop(kind=ELEMENTWISE, namespace="special", domain=Domain((0.05, 0.85)))
def logit(B, x):
    """Logit ``log(x / (1 - x))``, the inverse of :func:`expit`, on ``(0, 1)``.

    ``d/dx logit(x) = 1 / (x (1 - x))``. Real inputs only.

    Examples
    --------
    >>> import ndgrad
    >>> x = ndgrad.tensor([0.5, 0.75], requires_grad=True)
    >>> ndgrad.special.logit(x)
    tensor([0.        , 1.09861229], grad_fn=<SpecialLogitBackward0>)
    >>> ndgrad.special.logit(x).sum().backward()
    >>> x.grad
    tensor([4.        , 5.33333333])
    """
    _real_only("logit", x)
    return B.special.logit(x)


logit.defvjp(lambda F, g, out, x: g / (x * (1 - x)))
logit.defjvp_from_vjp()


@defop(kind=ELEMENTWISE, namespace="special", domain=Domain((-4.0, 4.0)))
def log_expit(B, x):
    """``log(expit(x))``, accurate for large ``|x|`` (``-log1p(exp(-x))``).

    ``d/dx log_expit(x) = 1 - expit(x) = expit(-x)``. Real inputs only.

    Examples
    --------
    >>> import ndgrad
    >>> x = ndgrad.tensor([-100.0, 0.0], requires_grad=True)
    >>> ndgrad.special.log_expit(x)
    tensor([-100.        ,   -0.69314718], grad_fn=<SpecialLogExpitBackward0>)
    >>> ndgrad.special.log_expit(x).sum().backward()
    >>> x.grad
    tensor([1. , 0.5])
    """
    _real_only("log_expit", x)
    return B.special.log_expit(x)


log_expit.defvjp(lambda F, g, out, x: g * F.sigmoid(-x))
log_expit.defjvp_from_vjp()


# ------------------------------------------------------------------------- x log y
def _kept_ratio(F, x, y, keep):
    """``x / y`` where ``keep``, else 0, with no ``0 / 0`` formed where it is not kept (its
    derivative would be nan even where ``where`` discards it)."""
    return F.where(keep, x / F.where(keep, y, 1.0), 0.0)


def _ratio(F, x, y):
    """``x / y``, and 0 at ``x = y = 0`` (not ``0 / 0``)."""
    return _kept_ratio(F, x, y, F.logical_or(x != 0, y != 0))


@defop(kind=ELEMENTWISE, nin=2, namespace="special", domain=Domain((-2.0, 2.0), (0.2, 3.0)))
def xlogy(B, x, y):
    """``x * log(y)``, with ``0`` where ``x == 0`` (even where ``y == 0``), broadcasting.

    Gradients (as PyTorch's ``xlogy``): ``log(y)`` for ``x`` (the function is ``x log(y)``
    for every ``x`` when ``y > 0``, so also at ``x = 0``), except ``0`` where ``x == 0`` and
    ``y <= 0`` (there ``x log(y)`` is not defined around the point; 0 is the derivative along
    the line ``x = 0``, where the function is 0, not ``log(0) = -inf``), and ``x / y`` for
    ``y``. Real inputs only here.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.special.xlogy(ndgrad.tensor([0.0, 2.0]), ndgrad.tensor([0.0, 3.0]))
    tensor([0.        , 2.19722458])
    >>> x = ndgrad.tensor([0.0, 2.0], requires_grad=True)
    >>> y = ndgrad.tensor([2.0, 3.0], requires_grad=True)
    >>> ndgrad.special.xlogy(x, y).sum().backward()
    >>> x.grad, y.grad
    (tensor([0.69314718, 1.09861229]), tensor([0.        , 0.66666667]))
    >>> x = ndgrad.tensor(0.0, requires_grad=True)
    >>> ndgrad.special.xlogy(x, 0.0).backward()
    >>> x.grad  # not log(0) = -inf
    tensor(0.)
    """
    _real_only("xlogy", x, y)
    return B.special.xlogy(x, y)


# d/dx = log(y), and 0 where x == 0 and y <= 0: PyTorch's rule (derivatives.yaml, Note
# [Gradient formula for xlogy at x = 0, y <= 0]), written xlogy(keep, y) (xlogy(0, y) = 0
# for every y, without a warning)
# and d/dy = x / y, 0 where x == 0 and y <= 0 too (the function is 0 along y there; x / y
# was 0 / 0 = nan at y = 0), consistent with the x rule's derivative in y
xlogy.defvjp(lambda F, g, out, x, y:
             g * F.special.xlogy(F.logical_or(x != 0, y > 0), y),
             lambda F, g, out, x, y: g * _kept_ratio(F, x, y, F.logical_or(x != 0, y > 0)))
xlogy.defjvp_from_vjp()


@defop(kind=ELEMENTWISE, nin=2, namespace="special", domain=Domain((-2.0, 2.0), (-0.5, 2.0)))
def xlog1py(B, x, y):
    """``x * log1p(y)``, with ``0`` where ``x == 0`` (even where ``y == -1``), broadcasting.

    Gradients (as PyTorch's ``xlog1py``): ``log1p(y)`` for ``x`` (also at ``x = 0``), except
    ``0`` where ``x == 0`` and ``y <= -1`` (not ``log1p(-1) = -inf``), and ``x / (1 + y)`` for
    ``y``. Real inputs only here.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.special.xlog1py(ndgrad.tensor([0.0, 2.0]), ndgrad.tensor([-1.0, 1e-20]))
    tensor([0.e+00, 2.e-20])
    >>> x = ndgrad.tensor([0.0, 2.0], requires_grad=True)
    >>> y = ndgrad.tensor([1.0, 1e-20], requires_grad=True)
    >>> ndgrad.special.xlog1py(x, y).sum().backward()
    >>> x.grad, y.grad
    (tensor([6.93147181e-01, 1.00000000e-20]), tensor([0., 2.]))
    >>> x = ndgrad.tensor(0.0, requires_grad=True)
    >>> ndgrad.special.xlog1py(x, -1.0).backward()
    >>> x.grad  # not log1p(-1) = -inf
    tensor(0.)
    """
    _real_only("xlog1py", x, y)
    return B.special.xlog1py(x, y)


# d/dx = log1p(y), and 0 where x == 0 and y <= -1 (PyTorch's rule, as xlogy's)
xlog1py.defvjp(lambda F, g, out, x, y:
               g * F.special.xlog1py(F.logical_or(x != 0, y > -1), y),
               lambda F, g, out, x, y: g * _kept_ratio(F, x, 1 + y, F.logical_or(x != 0, y > -1)))
xlog1py.defjvp_from_vjp()


# ------------------------------------------------------------------------- entropies
@defop(kind=ELEMENTWISE, namespace="special", domain=Domain((0.1, 3.0)))
def entr(B, x):
    """Elementwise entropy term ``-x log(x)`` for ``x > 0``, ``0`` at 0, ``-inf`` below.

    ``d/dx entr(x) = -(log(x) + 1)`` (``+inf`` at 0, as PyTorch's ``entr``). Real inputs
    only.

    Examples
    --------
    >>> import ndgrad
    >>> x = ndgrad.tensor([0.5, 2.0], requires_grad=True)
    >>> ndgrad.special.entr(x)
    tensor([ 0.34657359, -1.38629436], grad_fn=<SpecialEntrBackward0>)
    >>> ndgrad.special.entr(x).sum().backward()
    >>> x.grad
    tensor([-0.30685282, -1.69314718])
    """
    _real_only("entr", x)
    return B.special.entr(x)


entr.defvjp(lambda F, g, out, x: -g * (F.log(x) + 1))
entr.defjvp_from_vjp()


@defop(kind=ELEMENTWISE, nin=2, namespace="special", domain=Domain((0.1, 3.0)))
def rel_entr(B, x, y):
    """Relative entropy term ``x log(x / y)`` (``0`` for ``x = 0, y >= 0``; ``inf`` outside
    the domain), elementwise, broadcasting.

    Gradients for ``x, y > 0``: ``log(x / y) + 1`` and ``-x / y``. Real inputs only.

    Examples
    --------
    >>> import ndgrad
    >>> x = ndgrad.tensor([0.5, 1.0], requires_grad=True)
    >>> ndgrad.special.rel_entr(x, 0.25)
    tensor([0.34657359, 1.38629436], grad_fn=<SpecialRelEntrBackward0>)
    >>> ndgrad.special.rel_entr(x, 0.25).sum().backward()
    >>> x.grad
    tensor([1.69314718, 2.38629436])
    """
    _real_only("rel_entr", x, y)
    return B.special.rel_entr(x, y)


# log x - log y, not log(x / y): x / y underflows (-inf at x = 1e-300, y = 1e150) and its
# derivatives go through x / y^2 (Note [Derivatives at special points] in elementwise.py);
# x / y is 0 at x = y = 0 (the function is 0, or y, along y there)
rel_entr.defvjp(lambda F, g, out, x, y: g * (F.log(x) - F.log(y) + 1),
                lambda F, g, out, x, y: -g * _ratio(F, x, y))
rel_entr.defjvp_from_vjp()


@defop(kind=ELEMENTWISE, nin=2, namespace="special", domain=Domain((0.1, 3.0)))
def kl_div(B, x, y):
    """Kullback-Leibler divergence term ``x log(x / y) - x + y`` (``y`` for ``x = 0``;
    ``inf`` outside the domain), elementwise, broadcasting.

    Gradients for ``x, y > 0``: ``log(x / y)`` and ``1 - x / y``. Real inputs only.

    Examples
    --------
    >>> import ndgrad
    >>> y = ndgrad.tensor([0.5, 1.0], requires_grad=True)
    >>> ndgrad.special.kl_div(1.0, y)
    tensor([0.19314718, 0.        ], grad_fn=<SpecialKlDivBackward0>)
    >>> ndgrad.special.kl_div(1.0, y).sum().backward()
    >>> y.grad
    tensor([-1.,  0.])
    """
    _real_only("kl_div", x, y)
    return B.special.kl_div(x, y)


kl_div.defvjp(lambda F, g, out, x, y: g * (F.log(x) - F.log(y)),
              lambda F, g, out, x, y: g * (1 - _ratio(F, x, y)))
kl_div.defjvp_from_vjp()


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


def _stop(x):
    """A constant copy of ``x``: no gradient or tangent flows through it (raw arrays are
    constants already)."""
    return x.detach() if hasattr(x, "detach") else x


