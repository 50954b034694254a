"""Taylor rules of the ops with a known recurrence (exp, log, sin, cos, tanh, sigmoid, sqrt,
square, reciprocal, divide, pow by a constant; linalg.inv and linalg.solve), for
``ndgrad.func.jet`` (Note [Taylor rules] in ndgrad/functional/taylor.py).

Series are lists of *derivative* coefficients, as in JAX's ``jet``: ``x = [x0, x1, ..., xK]``
with ``xk`` the k-th derivative of the path ``x(t)`` at 0. A rule gets, per input, its
``[x1, ..., xK]`` (or None for an input without a series) and returns ``[y1, ..., yK]``.
Each rule below is an O(K^2) recurrence from an ODE the function satisfies: for ``y' = d x'``,
Leibniz's rule gives ``y_k = sum_{j<k} C(k-1, j) d_j x_{k-j}``.
"""

from __future__ import annotations

from math import comb

__all__ = ["leibniz", "ode_rule", "RULES"]


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
    """Series of q = a / b (lists from order 0; b[0] != 0): b q = a gives
    q_k = (a_k - sum_{j>=1} C(k, j) b_j q_{k-j}) / b_0."""
    qs = [a[0] / b[0]]
    for k in range(1, K + 1):
        total = a[k]
        for j in range(1, k + 1):
            total = total - comb(k, j) * b[j] * qs[k - j]
        qs.append(total / b[0])
    return qs[1:]


def _full(F, x, s, K):
    """Input x's series from order 0: ``[x, x1, ..., xK]``, zeros where it has none."""
    return [x] + (list(s) if s is not None else [F.zeros_like(x)] * K)


def _divide_rule(F, series, out, x, y):
    sx, sy = series
    K = len(sx if sx is not None else sy)
    return _quotient(F, _full(F, x, sx, K), _full(F, y, sy, K), K)


def _reciprocal_rule(F, series, out, x):
    K = len(series[0])
    return _quotient(F, _full(F, F.ones_like(x), None, K), _full(F, x, series[0], K), K)


def _log_rule(F, series, out, x):
    # y' = x' / x: y's series from order 1 is the quotient of x's from order 1 by x's
    xs = [x] + list(series[0])
    return [xs[1] / x] + _quotient(F, xs[1:], xs[:-1], len(series[0]) - 1)


def _sqrt_rule(F, series, out, x):
    # y^2 = x  gives  y_k = (x_k - sum_{1<=j<k} C(k, j) y_j y_{k-j}) / (2 y_0)
    xs = [x] + list(series[0])
    K = len(series[0])
    ys = [out]
    for k in range(1, K + 1):
        total = xs[k]
        for j in range(1, k):
            total = total - comb(k, j) * ys[j] * ys[k - j]
        ys.append(total / (2 * out))
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
    # y = x^p with p constant: x y' = p y x'  gives
    # y_k = (p sum_{j<k} C(k-1, j) y_j x_{k-j} - sum_{1<=j<k} C(k-1, j) x_j y_{k-j}) / x_0
    xs = [x] + list(sx)
    K = len(sx)
    ys = [out]
    for k in range(1, K + 1):
        total = y * _chain(ys, xs, k)
        for j in range(1, k):
            total = total - comb(k - 1, j) * xs[j] * ys[k - j]
        ys.append(total / x)
    return ys[1:]


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
    "sin": _sin_rule,
    "cos": _cos_rule,
    "square": _square_rule,
    "reciprocal": _reciprocal_rule,
    "divide": _divide_rule,
    "pow": _pow_rule,
    "linalg.solve": _solve_rule,
    "linalg.inv": _inv_rule,
}
