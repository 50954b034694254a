"""The gamma and beta functions of ``ndgrad.special`` (primitives): ``gamma``, ``gammasgn``,
``gammaln``, ``digamma``, ``polygamma``, ``multigammaln``, ``beta``, ``betaln``, the
regularized incomplete functions ``gammainc``, ``gammaincc``, ``betainc``, ``betaincinv``,
the Hurwitz zeta function ``zeta`` and its derivatives ``zeta_derivative``, the exponential
integral ``expn``; and the shape derivatives of the incomplete functions, with their inverses
in the shape:

Four primitives (``namespace="special"``):

* ``_gammainc_da(a, x)``: ``dP/da`` of the regularized lower incomplete gamma function
  (``dQ/da = -dP/da``), the rule of ``gammainc`` / ``gammaincc`` in ``a``;
* ``_betainc_d(a, b, x, wrt)``: ``dI/da`` (``wrt=0``) or ``dI/db`` (``wrt=1``) of the
  regularized incomplete beta function, the rules of ``betainc`` / ``betaincinv`` in the
  shapes;
* ``_gammaincinv(a, y, upper)``: SciPy's ``gammaincinv`` (``upper=False``) and
  ``gammainccinv`` (``upper=True``), the public functions of ``ndgrad/scipy/special.py``;
* ``sph_harm_y(n, m, theta, phi)``.

The two leading underscores mark helpers: they are not public names of ``ndgrad.special``.

Derivative rules: ``gammaln' = digamma``, ``digamma' = polygamma(1, .)``, ``zeta' =
zeta_derivative(., n=1)``, ``expn(n, x)' = -expn(n - 1, x)`` (``expn(0, x) = e^-x / x``),
``betainc(a, b, x)' = x^(a-1) (1-x)^(b-1) / B(a, b)`` and ``betaincinv`` by the inverse
function rule; in the shapes ``a, b`` (no closed form) by ``_betainc_d`` (first order only),
and ``betaincinv`` by the implicit function theorem.

Note [Derivatives that are not implemented]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
``gammainc(a, x)`` / ``gammaincc(a, x)`` have no closed-form derivative with respect to the
shape ``a`` (a series or a quadrature of ``log(t) t^(a-1) e^-t``). PyTorch's ``igamma``
raises there; here the first derivative is the primitive ``_gammainc_da`` (below,
Note [Shape derivatives of the incomplete gamma and beta functions]), a series and a continued
fraction differentiated term by term, as TensorFlow and JAX do. Its own derivative in ``a`` is
not implemented: a second derivative in ``a`` raises ``NotImplementedError`` naming the
function. The derivative in ``x`` is exact (``x^(a-1) e^-x / Gamma(a)``) to any order. The
property suite draws ``a`` as integers or Python numbers, which it does not differentiate;
tests/special/test_special_gamma.py checks the derivative in ``a``.

``zeta(x, q)`` was in the same position for ``x`` (``-sum_k log(k + q) / (k + q)^x``, whose
own derivatives are further such series; PyTorch's ``torch.special.zeta`` still raises). It
is differentiable now: those series are the primitive ``zeta_derivative(x, q, n)``, closed
under differentiation in ``x`` and ``q`` (Note [Derivatives of zeta in x]).

Note [Shape derivatives of the incomplete gamma and beta functions]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
There is no closed form; as TensorFlow's and JAX's ``igamma_grad_a`` do, the classical
expansions are differentiated in forward mode, term by term, next to their values (in NumPy
arithmetic on the backend's arrays, with the values of ``gammaln``/``digamma``/``betaln`` from
``B.special``):

* ``P(a, x) = x^a e^-x / Gamma(a + 1) * sum_k s_k``, ``s_k = prod_{j<=k} x / (a + j)``, for
  ``x < a + 1``: ``ds_k/da = (x ds_(k-1) - s_k) / (a + k)``, so
  ``dP/da = x^a e^-x / Gamma(a + 1) (S (log x - digamma(a + 1)) + dS)``; both parts have
  one sign for ``x < a + 1/2``, so nothing cancels.
* ``Q(a, x) = x^a e^-x / Gamma(a) * f``, ``f`` Legendre's continued fraction
  ``1 / (x + 1 - a - 1 (1 - a) / (x + 3 - a - 2 (2 - a) / (x + 5 - a - ...)))``, for
  ``x >= a + 1``, evaluated by the forward three-term recurrence of its convergents with
  their derivatives in ``a`` (rescaled every step): ``dP/da = -dQ/da = -x^a e^-x / Gamma(a)
  (f (log x - digamma(a)) + df)``, again without cancellation. ``P`` near 1 thus gets its
  (tiny) derivative to full relative accuracy.
* ``I_x(a, b) = x^a (1 - x)^b / (a B(a, b)) * f(a, b, x)`` with the continued fraction of
  DLMF 8.17.22 for ``x < (a + 1) / (a + b + 2)``, else ``1 - I_(1-x)(b, a)``; the convergents
  carry two tangents (``a`` and ``b``) and the prefactor's logarithmic derivatives are
  ``log x - 1/a - digamma(a) + digamma(a + b)`` and ``log(1 - x) - digamma(b) +
  digamma(a + b)``.

The kernels run with NumPy on the host whatever the backend (their loops are many operations
on small arrays; on a GPU each would be a kernel launch), and the result is copied back.
The series is summed until its terms (value and derivative) are below ``1e-17`` of the sums;
the continued fractions until their convergents stop moving (``5e-16`` per step for the
gamma function, ``4e-15`` per block of 16 steps for the beta function), each element frozen
there (past convergence the recurrences only accumulate rounding: about ``1e-11`` after
5000 steps); at most 5000 terms. Measured against adaptive quadrature (SciPy's ``quad``
with algebraic-logarithmic weights) of ``integral (log t - digamma(a)) t^(a-1) e^-t dt /
Gamma(a)`` and its beta analogue, on grids of both regimes and both tails: the relative
error was below ``2e-13`` for ``a`` in ``[0.05, 1000]`` (every ``x > 0`` where the
derivative does not underflow), and below ``7e-12`` for the incomplete beta function with
``a, b`` in ``[0.05, 400]``. ``tests/special/test_special_gamma.py`` checks ``2e-7``
against five-point differences of SciPy's functions (their own accuracy) on such grids.
Neither ``dP/da`` nor ``dI/da`` has a zero inside the domain, so no relative accuracy is
lost near one. The derivatives of these
helpers in ``x`` are closed forms (``d/dx dP/da = d/da (x^(a-1) e^-x / Gamma(a))``); in the
shapes they are not implemented, so the second derivative of ``gammainc`` and ``betainc``
in a shape raises NotImplementedError naming the function and the argument (never a
silent 0).
"""

from __future__ import annotations

import math

from ..backend import NUMPY
from .elementwise import _off_integers
from .registry import Domain, ELEMENTWISE, defop
from .special_shared import (_PI, _is_complex, _nd, _notes, _off_poles, _real_only, _sample_params,
                             _second_order)


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


def _gammainc_da_rule(F, g, a, x):
    # dP/da: no closed form; the helper primitive below (first order only)
    return g * F.special._gammainc_da(a, x)


_GAMMAINC_NOTES = {"partial": "the sampler draws a as integers or numbers (not "
                              "differentiated): the derivative in a is first order only "
                              "(special._gammainc_da, whose derivative in a raises); "
                              "tests/special/test_special_gamma.py checks it"}


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


gammainc.defvjp(lambda F, g, out, a, x: _gammainc_da_rule(F, g, a, x),
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


gammaincc.defvjp(lambda F, g, out, a, x: _gammainc_da_rule(F, -g, a, x),
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


# ------------------------------------------------------------------------- incomplete beta
_SHAPE_NOTES = {"partial": "the sampler draws the shapes a and b as integers or numbers (not "
                           "differentiated): their derivative is first order only "
                           "(special._betainc_d); tests/special/test_special_gamma.py checks "
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


_TOL = 1e-17     # series: terms below this fraction of the sums
_CF_TOL = 5e-16  # continued fractions: steps below this fraction of the convergents
_BLOCK_TOL = 4e-15  # the same over a block of 16 steps (beta)
_MAXTERMS = 5000
_CHECK = 8  # convergence is tested every _CHECK terms


# ------------------------------------------------------------------------- the kernels
def _done(B, terms, sums):
    return all(bool(B.all(B.abs(t) <= _TOL * B.abs(s))) for t, s in zip(terms, sums))


def _converged(B, steps, values, tol=None):
    """Where a continued fraction's convergents (and their derivatives) have stopped moving.
    Each element's result is frozen there: past convergence, the recurrence only adds
    rounding errors (about 1e-11 after thousands of steps)."""
    out = None
    for t, v in zip(steps, values):
        c = B.abs(t) <= (_CF_TOL if tol is None else tol) * B.abs(v)
        out = c if out is None else out & c
    return out


def _gamma_lower_series(B, a, x, lx):
    """``dP/da`` by the power series (``x < a + 1``)."""
    s = B.ones_like(x)
    ds = B.zeros_like(x)
    S, dS = s, ds
    for k in range(1, _MAXTERMS):
        r = 1.0 / (a + k)
        s_new = s * x * r
        ds = (ds * x - s_new) * r
        s = s_new
        S, dS = S + s, dS + ds
        if k % _CHECK == 0 and _done(B, (s, ds), (S, dS)):
            break
    pref = B.exp(a * lx - x - B.special.gammaln(a + 1))
    return pref * (S * (lx - B.special.digamma(a + 1)) + dS)


def _gamma_upper_fraction(B, a, x, lx):
    """``dQ/da`` by Legendre's continued fraction (``x >= a + 1``)."""
    # convergents A_n / B_n of 1 / (b_1 + a_2 / (b_2 + ...)), b_n = x + 2n - 1 - a,
    # a_n = -(n - 1)(n - 1 - a); d(a_n)/da = n - 1, d(b_n)/da = -1
    zero, one = B.zeros_like(x), B.ones_like(x)
    A0, A1, B0, B1 = one, zero, zero, one          # A_(n-2), A_(n-1), B_(n-2), B_(n-1)
    dA0, dA1, dB0, dB1 = zero, zero, zero, zero
    f = df = fo = dfo = zero
    done = B.zeros(x.shape, dtype=bool)
    for n in range(1, _MAXTERMS):
        bn = x + (2 * n - 1) - a
        an, dan = (one, 0.0) if n == 1 else (-(n - 1) * (n - 1 - a), float(n - 1))
        A2 = bn * A1 + an * A0
        B2 = bn * B1 + an * B0
        dA2 = -A1 + bn * dA1 + dan * A0 + an * dA0
        dB2 = -B1 + bn * dB1 + dan * B0 + an * dB0
        c = 1.0 / B2                               # rescale (the ratios do not change)
        A0, A1, B0, B1 = A1 * c, A2 * c, B1 * c, one
        dA0, dA1, dB0, dB1 = dA1 * c, dA2 * c, dB1 * c, dB2 * c
        f_new = A1
        df_new = dA1 - A1 * dB1
        got = _converged(B, (f_new - f, df_new - df), (f_new, df_new)) & ~done
        fo, dfo = B.where(got, f_new, fo), B.where(got, df_new, dfo)
        done = done | got
        f, df = f_new, df_new
        if n % _CHECK == 0 and bool(B.all(done)):
            break
    f, df = B.where(done, fo, f), B.where(done, dfo, df)
    pref = B.exp(a * lx - x - B.special.gammaln(a))
    return pref * (f * (lx - B.special.digamma(a)) + df)


def _gammainc_da_kernel(B, a, x):
    """``dP(a, x)/da`` (Note [Shape derivatives of the incomplete gamma and beta
    functions]): float64 arrays, broadcast."""
    a, x = B.broadcast_arrays(B.asarray(a, dtype=B.float64), B.asarray(x, dtype=B.float64))
    with B.errstate(all="ignore"):
        ok = (a > 0) & (x > 0) & (x < B.inf)
        lower = x < a + 1
        a_s = B.where(ok, a, 1.0)
        out = B.zeros_like(x)
        if bool(B.any(ok & lower)):
            xl = B.where(ok & lower, x, 0.5)
            out = B.where(ok & lower, _gamma_lower_series(B, a_s, xl, B.log(xl)), out)
        if bool(B.any(ok & ~lower)):
            xu = B.where(ok & ~lower, x, a_s + 2.0)
            out = B.where(ok & ~lower, -_gamma_upper_fraction(B, a_s, xu, B.log(xu)), out)
        bad = ~(a > 0) | B.isnan(x) | (x < 0)
        return B.where(bad, B.nan, out)


def _beta_coefficients(B, p, q, z, n0, count):
    """The partial numerators ``a_n`` of the beta continued fraction for ``n = n0 ..
    n0 + count - 1`` (``n0`` even) and their derivatives in ``p`` and ``q``, as arrays with a
    leading axis of length ``count``: one vectorized evaluation per block of terms."""
    k = B.reshape(B.arange(count // 2, dtype=B.float64), (-1,) + (1,) * z.ndim)
    # a_n = d_(2m+1) for even n (m = n/2 - 1), d_(2m) for odd n (m = (n - 1)/2)
    m = n0 // 2 - 1 + k
    num, den = (p + m) * (p + q + m), (p + 2 * m) * (p + 2 * m + 1)
    odd = -z * num / den
    d_odd = (-z * ((2 * p + q + 2 * m) * den - num * (2 * p + 4 * m + 1)) / (den * den),
             -z * (p + m) / den)
    m = m + 1
    den = (p + 2 * m - 1) * (p + 2 * m)
    even = z * (m * (q - m)) / den
    d_even = (-even * (2 * p + 4 * m - 1) / den, z * m / den)
    return (odd, even), (d_odd, d_even)


def _beta_fraction(B, p, q, z):
    """``(dK/dp, dK/dq)`` of ``K = I_z(p, q)`` by the continued fraction (``z`` below
    ``(p + 1) / (p + q + 2)``)."""
    zero, one = B.zeros_like(z), B.ones_like(z)
    # convergents of 1 / (1 + d_1 / (1 + d_2 / (1 + ...))): b_n = 1, a_1 = 1, a_(n+1) = d_n.
    # After n = 1: A_1 = 1, B_1 = 1 (A_0 = 0, B_0 = 1), no derivative yet.
    A0, A1, B0, B1 = zero, one, one, one
    dA0, dA1, dB0, dB1 = [zero, zero], [zero, zero], [zero, zero], [zero, zero]
    f, df, fo, dfo = one, [zero, zero], one, [zero, zero]
    done = B.zeros(z.shape, dtype=bool)
    block = 16
    for n0 in range(2, 2 * _MAXTERMS, block):
        (odd, even), (d_odd, d_even) = _beta_coefficients(B, p, q, z, n0, block)
        for k in range(block):
            an = (odd if k % 2 == 0 else even)[k // 2]
            dan = d_odd if k % 2 == 0 else d_even
            A2 = A1 + an * A0
            B2 = B1 + an * B0
            dA2 = [dA1[i] + dan[i][k // 2] * A0 + an * dA0[i] for i in (0, 1)]
            dB2 = [dB1[i] + dan[i][k // 2] * B0 + an * dB0[i] for i in (0, 1)]
            A0, A1, B0, B1, dA0, dA1, dB0, dB1 = A1, A2, B1, B2, dA1, dA2, dB1, dB2
            if k % 4 == 3:                     # rescale (the ratios do not change)
                c = 1.0 / B1
                A0, A1, B0, B1 = A0 * c, A1 * c, B0 * c, one
                dA0, dA1 = [d * c for d in dA0], [d * c for d in dA1]
                dB0, dB1 = [d * c for d in dB0], [d * c for d in dB1]
        f_new = A1                             # (B1 = 1 after the last rescale)
        df_new = [dA1[i] - A1 * dB1[i] for i in (0, 1)]
        # (over a block, the converged values still move by a few rounding errors)
        got = _converged(B, (f_new - f, df_new[0] - df[0], df_new[1] - df[1]),
                         (f_new, *df_new), tol=_BLOCK_TOL) & ~done
        fo = B.where(got, f_new, fo)
        dfo = [B.where(got, df_new[i], dfo[i]) for i in (0, 1)]
        done = done | got
        f, df = f_new, df_new
        if bool(B.all(done)):
            break
    f = B.where(done, fo, f)
    df = [B.where(done, dfo[i], df[i]) for i in (0, 1)]
    dig = B.special.digamma(p + q)
    lp = B.log(z) - 1.0 / p - B.special.digamma(p) + dig
    lq = B.log1p(-z) - B.special.digamma(q) + dig
    K = B.exp(p * B.log(z) + q * B.log1p(-z) - B.log(p) - B.special.betaln(p, q))
    return K * (f * lp + df[0]), K * (f * lq + df[1])


def _betainc_d_kernel(B, a, b, x, wrt):
    """``dI_x(a, b)/da`` (``wrt=0``) or ``/db`` (``wrt=1``) (Note [Shape derivatives of the
    incomplete gamma and beta functions])."""
    a, b, x = B.broadcast_arrays(*(B.asarray(v, dtype=B.float64) for v in (a, b, x)))
    with B.errstate(all="ignore"):
        ok = (a > 0) & (b > 0) & (x > 0) & (x < 1)
        a_s, b_s = B.where(ok, a, 1.0), B.where(ok, b, 1.0)
        direct = x < (a_s + 1) / (a_s + b_s + 2)
        out = B.zeros_like(x)
        if bool(B.any(ok & direct)):
            xd = B.where(ok & direct, x, 0.25 / (a_s + b_s + 2))
            d = _beta_fraction(B, a_s, b_s, xd)[wrt]
            out = B.where(ok & direct, d, out)
        if bool(B.any(ok & ~direct)):
            # I_x(a, b) = 1 - I_(1-x)(b, a): the shapes change places
            xs = B.where(ok & ~direct, 1.0 - x, 0.25 / (a_s + b_s + 2))
            d = _beta_fraction(B, b_s, a_s, xs)[1 - wrt]
            out = B.where(ok & ~direct, -d, out)
        bad = ~(a > 0) | ~(b > 0) | B.isnan(x) | (x < 0) | (x > 1)
        return B.where(bad, B.nan, out)


def _on_host(B, kernel, dtype, *arrays, **params):
    """``kernel`` run with NumPy on the host, its result moved to ``B``'s device as
    ``dtype``: the expansions are loops of many operations on small arrays, which on a GPU
    would each be a kernel launch (and the values are final, not traced)."""
    host = [B.to_numpy(B.asarray(v)) for v in arrays]
    return B.asarray(kernel(NUMPY, *host, **params), dtype=dtype)


# ------------------------------------------------------------------------- samplers
def _number_or_ints(d, shape, low, high):
    """A parameter the suite does not differentiate: integers or a Python number."""
    if d.boolean():
        return d.int_array(shape, int(low) + 1, int(high))
    return float(d.array((), low, high))


# (small samples: the kernels are loops of many array operations, and the finite
# differences of the property suite call them twice per element)
_SMALL = {"max_dims": 2, "max_side": 3}


def _sample_gammainc_da(d):
    sa, sx = d.shapes(2, **_SMALL)
    return (_number_or_ints(d, sa, 0.5, 4.0), d.array(sx, 0.2, 6.0)), {}


def _sample_betainc_d(d):
    sa, sb, sx = d.shapes(3, **_SMALL)
    return ((_number_or_ints(d, sa, 0.5, 4.0), _number_or_ints(d, sb, 0.5, 4.0),
             d.array(sx, 0.05, 0.95)), {"wrt": d.integers(0, 1)})


def _sample_gammaincinv(d):
    sa, sy = d.shapes(2, **_SMALL)
    return (_number_or_ints(d, sa, 0.5, 4.0), d.array(sy, 0.05, 0.95)), {"upper": d.boolean()}


_SHAPE_DERIVATIVE_NOTES = {"partial": "the shape arguments are drawn as integers or numbers (not "
                           "differentiated): the derivative in them is not implemented; "
                           "tests/special/test_special_gamma.py checks the derivative in x"}


# (read by tests/test_taylor.py's sweep at special points: the rules in x are the density
# times log x - c, whose Taylor series at tiny x (below about 1e-103) carries the log's
# coefficient 1 / (3 x^3), which overflows, from order 3 on: inf where the derivative is a
# number, as in every Taylor arithmetic; nested differentiation is right there)
_LOG_SERIES_NOTES = {**_SHAPE_DERIVATIVE_NOTES, "taylor_special_points": (
    "order 3 at tiny x: the series of log x overflows (1 / (3 x^3)) in the rule in x, the "
    "density times (log x - c)")}


# ------------------------------------------------------------------------- d/da gammainc
def _gammainc_da_dx(F, a, x):
    # d/dx dP/da = d/da (x^(a-1) e^-x / Gamma(a)) = x^(a-1) e^-x / Gamma(a) (log x - psi(a));
    # 0 at x = 0 (a safe log there)
    pos = x > 0
    return F.where(pos, _gammainc_dx(F, a, x) * (F.log(F.where(pos, x, 1.0))
                                                 - F.special.digamma(a)), 0.0)


@defop(kind=ELEMENTWISE, nin=2, namespace="special", domain=Domain((0.5, 4.0), (0.2, 6.0)),
       sample=_sample_gammainc_da, notes=_LOG_SERIES_NOTES)
def _gammainc_da(B, a, x):
    """``d/da gammainc(a, x)``, the derivative of the regularized lower incomplete gamma
    function in its shape (``d/da gammaincc = -d/da gammainc``): the rule of ``gammainc``,
    ``gammaincc``, ``gammaincinv`` and ``gammainccinv`` in ``a`` (Note [Shape derivatives of
    the incomplete gamma and beta functions]). Differentiable in ``x``, not in ``a``.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.special._gammainc_da(1.0, ndgrad.tensor([1.0, 2.0]))
    tensor([-0.43172971, -0.22082543])
    """
    _real_only("gammainc", a, x)
    dtype = B.float32 if B.result_type(a, x) in (B.float16, B.float32) else B.float64
    return _on_host(B, _gammainc_da_kernel, dtype, a, x)


_gammainc_da.defvjp(_second_order("gammainc", "a"),
                    lambda F, g, out, a, x: g * _gammainc_da_dx(F, a, x))
_gammainc_da.defjvp_from_vjp()


# ------------------------------------------------------------------------- d/da, d/db betainc
def _betainc_d_dx(F, a, b, x, wrt):
    # d/dx dI/da = density (log x - psi(a) + psi(a + b)); dI/db: log(1 - x) - psi(b) + ...
    inside = (x > 0) & (x < 1)
    xs = F.where(inside, x, 0.5)
    shape, other = (a, b) if wrt == 0 else (b, a)
    lg = F.log(xs) if wrt == 0 else F.log1p(-xs)
    return F.where(inside, _beta_density(F, a, b, x) * (
        lg - F.special.digamma(shape) + F.special.digamma(shape + other)), 0.0)


def _betainc_d_args(a, b, x, wrt=0):
    return (a, b, x), {"wrt": wrt}


@defop(kind=ELEMENTWISE, nin=3, namespace="special",
       domain=Domain((0.5, 4.0), (0.5, 4.0), (0.05, 0.95)),
       sample=_sample_betainc_d, notes=_LOG_SERIES_NOTES)
def _betainc_d(B, a, b, x, wrt=0):
    """``d/da betainc(a, b, x)`` (``wrt=0``) or ``d/db betainc(a, b, x)`` (``wrt=1``): the
    rules of ``betainc`` and ``betaincinv`` in the shapes (Note [Shape derivatives of the
    incomplete gamma and beta functions]). Differentiable in ``x``, not in ``a``, ``b``.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.special._betainc_d(1.0, 1.0, ndgrad.tensor([0.5]), wrt=0)  # x^a log x, a = 1
    tensor([-0.34657359])
    """
    if wrt not in (0, 1):
        raise ValueError(f"special._betainc_d: wrt must be 0 (a) or 1 (b), got {wrt!r}")
    _real_only("betainc", a, b, x)
    dtype = B.float32 if B.result_type(a, b, x) in (B.float16, B.float32) else B.float64
    return _on_host(B, _betainc_d_kernel, dtype, a, b, x, wrt=wrt)


_betainc_d.defvjp(_second_order("betainc", "a and b"), _second_order("betainc", "a and b"),
                  lambda F, g, out, a, b, x, wrt=0: g * _betainc_d_dx(F, a, b, x, wrt))
_betainc_d.defjvp_from_vjp()
_betainc_d.defargs(_betainc_d_args)


# ------------------------------------------------------------------------- gammaincinv
def _gammaincinv_args(a, y, upper=False):
    return (a, y), {"upper": upper}


@defop(kind=ELEMENTWISE, nin=2, namespace="special", domain=Domain((0.5, 4.0), (0.05, 0.95)),
       sample=_sample_gammaincinv, notes=_SHAPE_DERIVATIVE_NOTES)
def _gammaincinv(B, a, y, upper=False):
    """SciPy's ``gammaincinv(a, y)`` (``upper=False``: the ``x`` with ``gammainc(a, x) = y``)
    or ``gammainccinv(a, y)`` (``upper=True``: ``gammaincc(a, x) = y``): the primitive of
    ``ndgrad.special.gammaincinv`` and ``gammainccinv``.

    ``dx/dy = +-1 / (x^(a-1) e^-x / Gamma(a))`` and, by the implicit function theorem,
    ``dx/da = -(dP/da)(a, x) / (x^(a-1) e^-x / Gamma(a))`` for both (``dQ/da = -dP/da``
    and ``dQ/dx = -dP/dx``).

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.special._gammaincinv(1.0, ndgrad.tensor([0.5]), upper=True)  # log 2
    tensor([0.69314718])
    """
    _real_only("gammaincinv", a, y)
    return B.special.gammainccinv(a, y) if upper else B.special.gammaincinv(a, y)


def _gammaincinv_dy(F, g, out, a, y, upper=False):
    d = g / _gammainc_dx(F, a, out)
    return -d if upper else d


_gammaincinv.defvjp(
    lambda F, g, out, a, y, upper=False: -g * F.special._gammainc_da(a, out)
    / _gammainc_dx(F, a, out),
    _gammaincinv_dy)
_gammaincinv.defjvp_from_vjp()
_gammaincinv.defargs(_gammaincinv_args)
