"""Taylor rules of the ops with a known recurrence or closed form (exp, log, sin, cos, tanh,
sigmoid, sqrt, cbrt, square, reciprocal, divide, pow by a constant; linalg.inv and
linalg.solve),
for ``ndgrad.func.jet`` (Note [Taylor rules] in ndgrad/functional/taylor.py).

Series are lists of *derivative* coefficients, as in JAX's ``jet``: ``x = [x0, x1, ..., xK]``
with ``xk`` the k-th derivative of the path ``x(t)`` at 0. A rule gets, per input, its
``[x1, ..., xK]`` (or None for an input without a series) and returns ``[y1, ..., yK]``.
Most rules are O(K^2) recurrences from an ODE the function satisfies: for ``y' = d x'``,
Leibniz's rule gives ``y_k = sum_{j<k} C(k-1, j) d_j x_{k-j}``; a power by a constant
composes its own derivatives (Note [Taylor mode at singular points]).

Note [Taylor mode at singular points]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
Where a function is finite but a derivative is infinite (``x ** 0.5``, ``sqrt``, ``acos`` at
1), or where it has a pole (``log``, ``reciprocal``, ``x ** -1``, ``digamma`` at 0), a rule
meets ``0 * inf`` and ``inf - inf``. Three things make Taylor mode give there what nested
differentiation gives, the limit of the derivative:

* ``x ** p`` by a constant ``p`` (a number or a tensor without a series) does not use the
  recurrence ``x y' = p y x'``, which divides by ``x0`` (nan at 0: ``x ** 2`` gave
  ``[0, nan, nan]``) and loses everything when ``x0 ** p`` underflows (``x ** 2`` at
  ``1e-170`` gave zeros, silently). It composes the derivatives
  ``f^(m)(x0) = p (p-1) ... (p-m+1) x0 ** (p-m)``, each computed directly as the op's
  derivative formula computes it, by Faa di Bruno's formula
  ``y_k = sum_{m=1..k} f^(m)(x0) B_{k,m}(x1, ..., x_{k-m+1})`` (:func:`compose`, with
  ``B`` the partial Bell polynomials, :func:`bell`). An integer ``p >= 0`` is a polynomial:
  the sum stops at ``m = p``, every term is finite, and the result is exact everywhere, 0
  and tiny bases included.
* An input coefficient of order >= 2 that is zero contributes nothing, even against an
  infinite factor (:func:`masked`): in Faa di Bruno's terms ``m < k`` (their Bell
  polynomials are made of such coefficients), in the quotient recurrence of ``divide``,
  ``reciprocal`` and ``log``, and in the generic elementwise rule's terms ``d_j x_{k-j}``,
  ``k - j >= 2`` (functional/taylor.py). A path without curvature at an order has none to
  contribute.
* The first coefficient is never masked: ``f^(k)(x0) x1^k`` is kept as computed. So along a
  straight path ``x0 + t v`` (what ``derivatives``, ``hessian_diag`` and the trace
  estimators push) ``y_k = f^(k)(x0) v^k``, an infinity of the right sign where the
  derivative is infinite, 0 where the derivative of that order vanishes; and where ``v = 0``
  meets an infinite derivative (a path standing still at the singular point) the result is
  nan, as nested differentiation's ``0 * inf`` is: such a zero may be a convention (``abs``'s
  derivative at 0), not a structural zero, and masking it would turn ``sign(x) * abs(x) **
  (1/3)`` into a silent 0.

The rules follow the sign of a zero as the op's derivative formula does: ``1 / x`` and
``log`` at ``-0.0`` give the limit from below; ``sqrt``'s ``1 / (2 sqrt(-0.0))`` is ``-inf``,
as PyTorch and JAX give, while ``x ** 0.5``'s ``0.5 * (-0.0) ** -0.5`` is ``+inf``.
tests/test_taylor.py sweeps every elementwise op at these points against nested reverse mode.
"""

from __future__ import annotations

from math import comb
from numbers import Complex, Real

__all__ = ["leibniz", "ode_rule", "masked", "bell", "compose", "RULES"]


def leibniz(a, b, k):
    """The k-th derivative coefficient of the product of series ``a`` and ``b`` (lists from
    order 0): ``sum_j C(k, j) a_j b_{k-j}``."""
    total = a[0] * b[k]
    for j in range(1, k + 1):
        total = total + comb(k, j) * a[j] * b[k - j]
    return total


def _chain(d, x, k):
    """``y_k`` for ``y' = d x'``: ``sum_{j<k} C(k-1, j) d_j x_{k-j}``."""
    total = d[0] * x[k]
    for j in range(1, k):
        total = total + comb(k - 1, j) * d[j] * x[k - j]
    return total


def masked(F, c, x):
    """``c * x``, but 0 where ``x`` is 0 even where ``c`` is infinite: a derivative times an
    input coefficient of order >= 2 (Note [Taylor mode at singular points])."""
    return F.where(x == 0, 0, c) * x


def bell(xs, K):
    """The partial Bell polynomials of the series ``xs = [x0, x1, ..., xK]``, in derivative
    form: ``B[k][m] = B_{k,m}(x1, ..., x_{k-m+1})`` for ``1 <= m <= k <= K``, by
    ``B_{k,m} = sum_{i=1}^{k-m+1} C(k-1, i-1) x_i B_{k-i,m-1}`` (``B[k][1] = x_k``,
    ``B[k][k] = x1^k``)."""
    B = [[None] * (K + 1) for _ in range(K + 1)]
    for k in range(1, K + 1):
        B[k][1] = xs[k]
        for m in range(2, k + 1):
            total = None
            for i in range(1, k - m + 2):
                term = xs[i] * B[k - i][m - 1]
                c = comb(k - 1, i - 1)
                term = term if c == 1 else c * term
                total = term if total is None else total + term
            B[k][m] = total
    return B


def compose(F, fs, xs, out, singular=True):
    """``[y1, ..., yK]`` of ``y = f(x)`` from ``fs[m] = f^(m)(x0)`` (m = 1..K; None where
    zero) and x's series ``xs = [x0, ..., xK]``, by Faa di Bruno's formula; ``singular``:
    some ``fs[m]`` may be infinite, so the terms ``m < k`` are :func:`masked` (Note [Taylor
    mode at singular points])."""
    K = len(xs) - 1
    B = bell(xs, K)
    ys = []
    for k in range(1, K + 1):
        total = None
        for m in range(1, k + 1):
            f = fs[m]
            if f is None:
                continue
            term = f * B[k][m] if m == k or not singular else masked(F, f, B[k][m])
            total = term if total is None else total + term
        ys.append(F.zeros_like(out) if total is None else total)
    return ys


def ode_rule(derivative):
    """The rule of a unary elementwise op with ``y' = d x'``, where ``derivative(F, x, y, j)``
    gives d's coefficient j from the series of x and y (known up to order j)."""
    def rule(F, series, out, x, **params):
        s = series[0]
        K = len(s)
        xs = [x] + list(s)
        ys = [out]
        ds = []
        for k in range(1, K + 1):
            ds.append(derivative(F, xs, ys, k - 1))
            ys.append(_chain(ds, xs, k))
        return ys[1:]
    return rule


def _square_series(ys, j):
    """Coefficient j of y^2."""
    return leibniz(ys, ys, j)


# d tanh = (1 - y^2) dx;  d exp = y dx;  d sigmoid = (y - y^2) dx
def _tanh_d(F, xs, ys, j):
    return (1 - ys[0] * ys[0]) if j == 0 else -_square_series(ys, j)


def _exp_d(F, xs, ys, j):
    return ys[j]


def _sigmoid_d(F, xs, ys, j):
    return ys[j] - _square_series(ys, j)


def _quotient(F, a, b, K):
    """Series of q = a / b (lists from order 0): b q = a gives
    q_k = (a_k - sum_{j>=1} C(k, j) b_j q_{k-j}) / b_0, b's coefficients of order >= 2
    masked (Note [Taylor mode at singular points]: at b_0 = 0 along a straight path each
    q_k is an infinity of the right sign). Computed from q itself, so a tiny b_0 with a
    tiny a_0 does not overflow."""
    qs = [a[0] / b[0]]
    for k in range(1, K + 1):
        total = a[k] - k * (b[1] * qs[k - 1])
        for j in range(2, k + 1):
            total = total - comb(k, j) * masked(F, qs[k - j], b[j])
        qs.append(total / b[0])
    return qs[1:]


def _full(F, x, s, K):
    """Input x's series from order 0: ``[x, x1, ..., xK]``, zeros where it has none."""
    return [x] + (list(s) if s is not None else [F.zeros_like(x)] * K)


def _divide_rule(F, series, out, x, y):
    sx, sy = series
    if sy is None:  # linear in x: y_k = x_k / y (a zero x_k of order >= 2 stays zero)
        return [sx[0] / y] + [xk / F.where(xk == 0, 1, y) for xk in sx[1:]]
    K = len(sy)
    return _quotient(F, _full(F, x, sx, K), _full(F, y, sy, K), K)


def _reciprocal_rule(F, series, out, x):
    K = len(series[0])
    return _quotient(F, _full(F, F.ones_like(x), None, K), _full(F, x, series[0], K), K)


def _log_rule(F, series, out, x):
    # y' = x' / x: y's series from order 1 is the quotient of x's from order 1 by x's
    xs = [x] + list(series[0])
    return [xs[1] / x] + _quotient(F, xs[1:], xs[:-1], len(series[0]) - 1)


def _sqrt_rule(F, series, out, x):
    # y^2 = x  gives  y_k = (x_k - sum_{1<=j<k} C(k, j) y_j y_{k-j}) / (2 y_0): no input
    # coefficient multiplies an infinity, so at x = 0 along a straight path each y_k is the
    # infinity of the right sign (Note [Taylor mode at singular points])
    xs = [x] + list(series[0])
    K = len(series[0])
    ys = [out]
    for k in range(1, K + 1):
        total = xs[k]
        for j in range(1, k):
            total = total - comb(k, j) * ys[j] * ys[k - j]
        ys.append(total / (2 * out))
    return ys[1:]


def _cbrt_rule(F, series, out, x):
    # y' = d x' with d = 1 / (3 y^2) = w^2 / 3, w = 1 / y: w's series by the quotient
    # recurrence of 1 / y, d's by Leibniz's rule, each order from y's so far. No input
    # coefficient multiplies an infinity unmasked but x1 (Note [Taylor mode at singular
    # points]): at 0, +inf, -inf, +inf, ... (from below at -0.0: +inf, +inf, ...)
    xs = [x] + list(series[0])
    K = len(series[0])
    ys, ws, ds = [out], [F.reciprocal(out)], []
    for k in range(1, K + 1):
        ds.append(leibniz(ws, ws, k - 1) / 3)
        total = ds[k - 1] * xs[1]
        for j in range(k - 1):
            total = total + comb(k - 1, j) * masked(F, ds[j], xs[k - j])
        ys.append(total)
        if k < K:  # w_k = -(sum_{j>=1} C(k, j) y_j w_{k-j}) / y_0
            acc = ys[1] * ws[k - 1] * k
            for j in range(2, k + 1):
                acc = acc + comb(k, j) * ys[j] * ws[k - j]
            ws.append(-acc / out)
    return ys[1:]


def _sin_cos(F, x, s, K):
    """The series of sin and cos of x together: sin' = cos x', cos' = -sin x'."""
    xs = [x] + list(s)
    sins = [F.sin(x)]
    coss = [F.cos(x)]
    for k in range(1, K + 1):
        sins.append(_chain(coss, xs, k))
        coss.append(-_chain(sins, xs, k))
    return sins, coss


def _sin_rule(F, series, out, x):
    return _sin_cos(F, x, series[0], len(series[0]))[0][1:]


def _cos_rule(F, series, out, x):
    return _sin_cos(F, x, series[0], len(series[0]))[1][1:]


def _square_rule(F, series, out, x):
    xs = [x] + list(series[0])
    return [leibniz(xs, xs, k) for k in range(1, len(xs))]


def _pow_rule(F, series, out, x, y):
    sx, sy = series
    if sy is not None or sx is None:
        return None  # (a series in the exponent: the generic elementwise rule)
    # y = x^p with p constant: f^(m) = p (p-1) ... (p-m+1) x^(p-m), composed (Note [Taylor
    # mode at singular points])
    xs = [x] + list(sx)
    K = len(sx)
    fs = [None]
    if isinstance(y, Real) and int(y) == y and 0 <= y < _HUGE:
        # a polynomial: f^(m) = 0 for m > p, every term finite; exact everywhere
        n = int(y)
        fall = 1.0  # (a float: p (p-1) ... overflows to inf, not an OverflowError)
        for m in range(1, min(n, K) + 1):
            fall *= n - m + 1
            fs.append(fall if m == n else fall * (x if m == n - 1 else x ** (n - m)))
        fs += [None] * (K + 1 - len(fs))
        return compose(F, fs, xs, out, singular=False)
    if isinstance(y, Complex):
        huge = isinstance(y, Real) and not -_HUGE < y < _HUGE
        fall = 1
        for m in range(1, K + 1):
            fall *= y - m + 1
            fs.append(fall * (_huge_power(F, x, y, m) if huge else x ** (y - m)))
        return compose(F, fs, xs, out)
    # a tensor exponent: where p is an integer below m, f^(m) is 0 (x^0 for the power, so
    # that 0 * x^(p-m) is not 0 * inf at x = 0)
    fall = None
    real = not F.iscomplexobj(y)
    for m in range(1, K + 1):
        fall = y if m == 1 else fall * (y - (m - 1))
        p = x ** F.where(fall == 0, 0, y - m)
        if real:
            p = F.where(F.abs(y) >= _HUGE, _huge_power(F, x, y, m), p)
        fs.append(fall * p)
    return compose(F, fs, xs, out)


_HUGE = 2.0 ** 53  # from here on y - m rounds to y: every float is an even integer


def _huge_power(F, x, y, m):
    """``x ** (y - m)`` for ``|y| >= 2**53``, where ``y - m`` rounds to the even ``y``: the
    sign of ``x`` to the power ``m`` times ``|x| ** y`` (which ``|x| ** (y - m)`` equals to
    rounding, or both are 0 or inf), as pow's own derivative (elementwise.py)."""
    sign = F.where(x < 0, -1.0, 1.0)
    return (sign if m % 2 else 1.0) * F.abs(x) ** y


def _solve_rule(F, series, out, a, b):
    # A X = b  gives  A_0 X_k = b_k - sum_{j>=1} C(k, j) A_j X_{k-j}
    sa, sb = series
    K = len(sa if sa is not None else sb)
    xs = [out]
    vector = b.ndim == 1  # (solve's b: a vector when 1-D, else a matrix or a stack of them)
    for k in range(1, K + 1):
        rhs = sb[k - 1] if sb is not None else F.zeros_like(b)
        if sa is not None:
            for j in range(1, k + 1):
                prev = xs[k - j]
                prod = F.matmul(sa[j - 1], prev[..., None])[..., 0] if vector else \
                    F.matmul(sa[j - 1], prev)
                rhs = rhs - comb(k, j) * prod
        xs.append(F.linalg.solve(a, rhs[..., None])[..., 0] if vector else
                  F.linalg.solve(a, rhs))
    return xs[1:]


def _inv_rule(F, series, out, a):
    # A Y = I  gives  Y_k = -Y_0 sum_{j>=1} C(k, j) A_j Y_{k-j}
    s = series[0]
    ys = [out]
    for k in range(1, len(s) + 1):
        total = comb(k, 1) * F.matmul(s[0], ys[k - 1])
        for j in range(2, k + 1):
            total = total + comb(k, j) * F.matmul(s[j - 1], ys[k - j])
        ys.append(-F.matmul(out, total))
    return ys[1:]


RULES = {
    "tanh": ode_rule(_tanh_d),
    "exp": ode_rule(_exp_d),
    "sigmoid": ode_rule(_sigmoid_d),
    "log": _log_rule,
    "sqrt": _sqrt_rule,
    "cbrt": _cbrt_rule,
    "sin": _sin_rule,
    "cos": _cos_rule,
    "square": _square_rule,
    "reciprocal": _reciprocal_rule,
    "divide": _divide_rule,
    "pow": _pow_rule,
    "linalg.solve": _solve_rule,
    "linalg.inv": _inv_rule,
}
