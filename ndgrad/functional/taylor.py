"""Taylor mode: ``jet`` (JAX's ``jax.experimental.jet`` contract) and ``derivatives``.

``jet(fun, primals, series)`` pushes truncated Taylor series through ``fun`` in one pass: each
input follows a path ``x(t)`` with derivative coefficients ``[x1, ..., xK]`` at ``t = 0``
(``xk`` is the k-th derivative), and the result is ``fun``'s output and its coefficients
``[y1, ..., yK]``. The K-th derivative of ``tanh`` costs O(K^2) operations this way, where
nesting first-order transforms costs a number that grows exponentially with K.

Note [Taylor rules]
~~~~~~~~~~~~~~~~~~~
A jet is a transform level (Note [Levels] in core/levels.py), as forward mode's dual level is:
a tensor's series lives in its per-level data (``_meta.level_data[level]``, a list of K
tensors). The interpreter runs each op one level down, then its Taylor rule: the op's own
(``Op.deftaylor``), else the one its declared structure gives (``Op.structure``, Note [Op
structure] in core/ops/registry.py):

* linear (``defjvp_linear``, the shape and indexing ops, ``where``, ``sort``, the piecewise
  constant ops, ...): an op affine in its array inputs, or piecewise so: ``y_k`` is the op's
  jvp at ``x_k``;
* multilinear (``multiply``, ``matmul``, ``einsum``, ...): linear in each input
  separately: ``y_k`` is the sum over the splits ``k = k_1 + ... + k_n`` of the multinomial
  coefficient times the op on ``(x1_{k_1}, ..., xn_{k_n})`` (Leibniz's rule for two);
* a rule of its own: the ODE recurrences of ``exp``, ``log``, ``sin``, ``cos``, ``tanh``,
  ``sigmoid``, ``sqrt``, ``square``, ``reciprocal``, ``divide``, and ``pow`` by a constant
  composing its own derivatives (core/ops/series.py; Note [Taylor mode at singular points]
  there says what they give where a derivative is infinite);
* elementwise (every op whose jvp comes from its vjp, ``defjvp_from_vjp``): with
  ``y' = sum_i d_i x_i'`` and ``d_i`` the op's derivative (its vjp rule at a cotangent of
  ones), ``y_k = sum_i sum_{j<k} C(k-1, j) d_{i,j} x_{i,k-j}``, where the series of ``d_i``
  comes from a nested jet of the vjp rule (exact, O(K^2) rule evaluations);
* none (``Op.taylor is None``): an exact generic rule, the derivatives of ``t -> op(x(t))`` at 0 by
  nested forward mode of the op alone (cost doubling with each order; the registry test
  names these ops).

The rule's coefficients are made of ndgrad operations below the level, so a jet composes with
the levels outside it: ``vmap`` of a jet, ``grad`` of a Taylor coefficient, jets of jets.
"""

from __future__ import annotations

from itertools import product
from math import comb, factorial

from ..core.backend import is_differentiable_dtype
from ..core.creation import zeros, zeros_like
from ..core.data_level import DataInfo, DataInterpreter, data_of, fit_to
from ..core.dispatch import TENSOR_F, apply
from ..core.ops.series import masked
from ..core.tensor import Tensor
from .pytree import tree_flatten, tree_unflatten
from .transforms import jvp

__all__ = ["jet", "derivatives"]


class _JetInfo(DataInfo):
    __slots__ = ("order",)

    def __init__(self, order, who="jet"):
        super().__init__(who)  # (who: jet, derivatives, hessian_diag)
        self.order = order

    def params(self):
        return (self.order, self.who)


# ------------------------------------------------------------------------------ the rules
def _linear(op, series, out, args, params, K):
    """Affine ops: coefficient k is the jvp at the inputs' coefficients k."""
    coeffs = []
    for k in range(K):
        tangents = tuple(None if s is None else s[k] for s in series)
        coeffs.append(op.jvp(TENSOR_F, tangents, out, *args, **params))
    if op.nout == 1:
        return [coeffs]
    return [[coeffs[k][i] for k in range(K)] for i in range(len(out))]


def _multilinear(op, series, out, args, params, K):
    """Ops linear in each array input: the multinomial (Leibniz) sum of the op over the
    splits of each order among the inputs with a series."""
    nin = len(series)
    f = op.of(TENSOR_F)
    extra = args[nin:]
    moving = [i for i, s in enumerate(series) if s is not None]
    coeffs = []
    for k in range(1, K + 1):
        total = None
        for split in product(range(k + 1), repeat=len(moving)):
            if sum(split) != k:
                continue
            operands = list(args[:nin])
            weight = factorial(k)
            for i, ki in zip(moving, split):
                weight //= factorial(ki)
                if ki:
                    operands[i] = series[i][ki - 1]
            term = f(operands, *extra, **params) if op.pack else f(*operands, *extra, **params)
            term = term if weight == 1 else term * weight
            total = term if total is None else total + term
        coeffs.append(total)
    return [coeffs]


def _elementwise(op, series, out, args, params, K):
    """``y' = sum_i d_i x_i'`` with ``d_i`` the op's vjp rule at a cotangent of ones: each
    ``d_i``'s series comes from a nested jet of the rule, one order more per step."""
    nin = len(series)
    F = TENSOR_F
    ones = F.ones_like(out)
    rules = op.vjp_rules
    xs = [None if s is None else [args[i]] + list(s) for i, s in enumerate(series)]
    ys = [out]

    def derivative(i):
        rule = rules[i]
        return lambda *v: F.conj(rule(F, ones, v[nin], *v[:nin], *args[nin:], **params))

    coeffs = []
    for k in range(1, K + 1):
        total = None
        for i in range(nin):
            if xs[i] is None or rules[i] is None:
                continue
            d = derivative(i)
            if k == 1:
                ds = [d(*args[:nin], out)]
            else:  # d's series to order k - 1, from the inputs' and the output's so far
                d0, dser = jet(d, tuple(args[:nin]) + (out,),
                               tuple(None if x is None else x[1:k] for x in xs) + (ys[1:k],))
                ds = [d0] + list(dser)
            # (x's coefficients of order >= 2 masked: Note [Taylor mode at singular points])
            term = ds[0] * xs[i][1] if k == 1 else masked(F, ds[0], xs[i][k])
            for j in range(1, k):
                c = comb(k - 1, j)
                term = term + (c * (ds[j] * xs[i][1]) if j == k - 1 else
                               c * masked(F, ds[j], xs[i][k - j]))
            total = term if total is None else total + term
        ys.append(total)
        coeffs.append(total)
    return [coeffs]


def _path(primals, series, t):
    """The inputs on the path ``x(t) = x0 + sum_k x_k t^k / k!``."""
    out = []
    for p, s in zip(primals, series):
        if s is not None:
            for k, c in enumerate(s, 1):
                p = p + c * (t ** k / factorial(k))
        out.append(p)
    return out


def _nested(fn, primals, series, K):
    """Derivatives 1..K at 0 of ``t -> fn(*x(t))`` (a Tensor or a tuple), by nested forward
    mode: the exact rule of ops without one of their own."""
    p = next(p for p, s in zip(primals, series) if s is not None)
    real = TENSOR_F.real(zeros((), dtype=p.dtype)).dtype  # (t is real for complex inputs)
    t0 = zeros((), dtype=real, device=p.device)
    one = TENSOR_F.ones_like(t0)

    def h0(t):
        return fn(*_path(primals, series, t))

    derivs = []
    h = h0
    for _ in range(K):
        prev = h

        def h(t, prev=prev):
            return jvp(prev, (t,), (one,))[1]
        derivs.append(h(t0))
    return derivs


def _fallback(op, series, out, args, params, K):
    nin = len(series)
    extra = args[nin:]

    def fn(*xs):
        return apply(op, *xs, *extra, **params)

    derivs = _nested(fn, tuple(args[:nin]), series, K)
    if op.nout == 1:
        return [derivs]
    return [[derivs[k][i] for k in range(K)] for i in range(op.nout)]


def _coefficients(op, series, out, args, params, K):
    """Per output, its ``[y1, ..., yK]`` (Note [Taylor rules]): the op's own rule, else its
    structure's."""
    rule = op.taylor
    structure = op.structure
    if callable(rule):
        coeffs = rule(TENSOR_F, series, out, *args, **params)
        if coeffs is not None:
            return [coeffs]
        return _elementwise(op, series, out, args, params, K)  # (the rule declined)
    if structure.linear:
        return _linear(op, series, out, args, params, K)
    if structure.multilinear:
        return _multilinear(op, series, out, args, params, K)
    if structure.elementwise:
        return _elementwise(op, series, out, args, params, K)
    return _fallback(op, series, out, args, params, K)


# ------------------------------------------------------------------------------ interpreter
class _JetInterpreter(DataInterpreter):
    """Taylor mode's rules at a jet level (Note [Taylor rules]); the skeleton is the data
    levels' (Note [Data levels] in core/data_level.py)."""

    name = "jet"

    def propagate(self, lv, op, series, out, args, params):
        return _coefficients(op, series, out, args, params, lv.info.order)

    def function_rule(self, lv, cls, ctx, args, kwargs, series, outs):
        """A custom Function's series by nested forward mode (its ``jvp``)."""
        derivs = _nested(lambda *xs: cls.apply(*xs, **kwargs), tuple(args), series,
                         lv.info.order)
        if len(outs) == 1 and not isinstance(derivs[0], tuple):
            return [derivs]
        return [[d[i] for d in derivs] for i in range(len(outs))]

    def zeros(self, series):
        return [TENSOR_F.zeros_like(c) for c in series]

    def pack(self, series):
        return tuple(series)

    def unpack(self, tensors):
        return list(tensors)

    def fit(self, lv, out, coeffs, who):
        return [fit_to(c, tuple(out.shape), out, who, "its Taylor rule gave a coefficient")
                for c in coeffs]


_JET = _JetInterpreter()


# ------------------------------------------------------------------------------ the API
def _check(primals, series):
    if not isinstance(primals, (tuple, list)) or not isinstance(series, (tuple, list)):
        raise TypeError("jet(fun, primals, series): primals and series must be tuples, e.g. "
                        "jet(f, (x,), ([x1, x2],))")
    if len(primals) != len(series):
        raise ValueError(f"jet: {len(primals)} primals but {len(series)} series; give one "
                         "series (a list of coefficients) per primal")
    orders = set()
    out = []
    for i, (p, s) in enumerate(zip(primals, series)):
        if s is None:  # (internal: an input without a series, maybe a Python number)
            out.append(None)
            continue
        if not isinstance(p, Tensor):
            raise TypeError(f"jet: primal {i} is a {type(p).__name__}, not a Tensor")
        if not isinstance(s, (list, tuple)):
            raise TypeError(f"jet: series {i} is a {type(s).__name__}; it must be a list of "
                            "derivative coefficients [x1, ..., xK]")
        orders.add(len(s))
        coeffs = []
        for k, c in enumerate(s, 1):
            c = c if isinstance(c, Tensor) else TENSOR_F.asarray(c, dtype=p.dtype,
                                                                 device=p.device)
            if tuple(c.shape) != tuple(p.shape):
                raise ValueError(f"jet: coefficient {k} of series {i} has shape "
                                 f"{list(c.shape)}, its primal has shape {list(p.shape)}")
            coeffs.append(c if c.dtype == p.dtype else c.astype(p.dtype))
        out.append(coeffs)
    if len(orders) > 1:
        raise ValueError(f"jet: the series have different lengths {sorted(orders)}; give "
                         "every primal the same number of coefficients")
    return out, (orders.pop() if orders else 0)


def jet(fun, primals, series, *, _who="jet"):
    """Push truncated Taylor series through ``fun`` (Taylor mode, JAX's ``jet``).

    Parameters
    ----------
    fun : callable
        A function of Tensors returning a Tensor or a pytree of Tensors.
    primals : tuple of Tensors
        Where the series are taken.
    series : tuple of lists
        One list per primal, ``[x1, ..., xK]``: the derivative coefficients of the input path
        ``x(t)`` at ``t = 0`` (``xk`` is its k-th derivative). All lists have one length K.

    Returns
    -------
    (primal_out, series_out)
        ``fun(*primals)`` and, with its structure, the output's coefficients ``[y1, ...,
        yK]``: ``yk`` is the k-th derivative of ``fun(x(t))`` at 0.

    Examples
    --------
    The path ``x(t) = x + t`` gives the ordinary derivatives: of ``exp`` at 0, all ones.

    >>> import ndgrad
    >>> from ndgrad.func import jet
    >>> x = ndgrad.tensor(0.0)
    >>> one, zero = ndgrad.tensor(1.0), ndgrad.tensor(0.0)
    >>> y, ys = jet(ndgrad.exp, (x,), ([one, zero, zero],))
    >>> y, ys
    (tensor(1.), [tensor(1.), tensor(1.), tensor(1.)])
    """
    coeffs, K = _check(primals, series)
    lv = _JET.enter(_JetInfo(K, _who))
    try:
        inputs = []
        for p, c in zip(primals, coeffs):
            if K and c is not None and is_differentiable_dtype(p.dtype):
                x = _JET.carrier(lv, p, c)  # a view of p (its data, its history) carrying c
            else:
                x = p
            inputs.append(x)
        out = fun(*inputs)
        leaves, spec = tree_flatten(out)
        primal_out, series_out = [], []
        for k, o in enumerate(leaves):
            if not isinstance(o, Tensor):
                raise TypeError(f"jet: fun must return Tensors (or a pytree of them); output "
                                f"leaf {k} is a {type(o).__name__}")
            s = data_of(o, lv)
            primal_out.append(o)
            series_out.append(list(s) if s is not None else [zeros_like(o) for _ in range(K)])
    finally:
        _JET.leave(lv)
    return tree_unflatten(spec, primal_out), tree_unflatten(spec, series_out)


def derivatives(f, x, order, direction=None):
    """``[f(x), f'(x)[v], f''(x)[v, v], ..., f^(order)(x)[v, ..., v]]``: the derivatives of
    ``f`` at ``x`` along ``v = direction``, up to ``order``, in one Taylor pass (:func:`jet`).

    ``direction`` defaults to ones: for a scalar ``x``, the ordinary derivatives; for a
    function applied elementwise to a tensor, each element's own derivatives.

    Examples
    --------
    >>> import ndgrad
    >>> from ndgrad.func import derivatives
    >>> [round(float(d), 6) for d in derivatives(ndgrad.sin, ndgrad.tensor(0.3), 4)]
    [0.29552, 0.955336, -0.29552, -0.955336, 0.29552]
    """
    if not isinstance(x, Tensor):
        raise TypeError(f"derivatives: x must be a Tensor, got {type(x).__name__}")
    order = int(order)
    if order < 0:
        raise ValueError(f"derivatives: order must be >= 0, got {order}")
    v = TENSOR_F.ones_like(x) if direction is None else direction
    if tuple(v.shape) != tuple(x.shape):
        raise ValueError(f"derivatives: direction has shape {list(v.shape)}, x has shape "
                         f"{list(x.shape)}")
    series = [v] + [zeros_like(x) for _ in range(order - 1)] if order else []
    y, ys = jet(f, (x,), (series,), _who="derivatives")
    return [y] + list(ys)

