"""The shape derivatives of ``ndgrad.special``'s incomplete gamma and beta functions, their
inverses in the shape, and the spherical harmonics ``sph_harm_y``.

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
``a, b`` in ``[0.05, 400]``. ``tests/special/test_special_shape.py`` checks ``2e-7``
against five-point differences of SciPy's functions (their own accuracy) on such grids.
Neither ``dP/da`` nor ``dI/da`` has a zero inside the domain, so no relative accuracy is
lost near one. The derivatives of these
helpers in ``x`` are closed forms (``d/dx dP/da = d/da (x^(a-1) e^-x / Gamma(a))``); in the
shapes they are not implemented, so the second derivative of ``gammainc`` and ``betainc``
in a shape raises NotImplementedError naming the function and the argument (never a
silent 0).

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

from ..backend import NUMPY
from .registry import ELEMENTWISE, Domain, defop
from .special import _gammainc_dx, _raising_rule, _real_only
from .special_more import _beta_density

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


_SHAPE_NOTES = {"partial": "the shape arguments are drawn as integers or numbers (not "
                           "differentiated): the derivative in them is not implemented; "
                           "tests/special/test_special_shape.py checks the derivative in x"}


# (read by tests/test_taylor.py's sweep at special points: the rules in x are the density
# times log x - c, whose Taylor series at tiny x (below about 1e-103) carries the log's
# coefficient 1 / (3 x^3), which overflows, from order 3 on: inf where the derivative is a
# number, as in every Taylor arithmetic; nested differentiation is right there)
_LOG_SERIES_NOTES = {**_SHAPE_NOTES, "taylor_special_points": (
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
       sample=_sample_gammaincinv, notes=_SHAPE_NOTES)
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
