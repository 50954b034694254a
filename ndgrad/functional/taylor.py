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

import weakref
from itertools import product
from math import comb, factorial

from ..core import levels as _levels
from ..core.backend import is_differentiable_dtype
from ..core.creation import zeros, zeros_like
from ..core.dispatch import TENSOR_F, VARIADIC, apply
from ..core.function import apply_function
from ..core.inplace import apply_inplace
from ..core.ops import REGISTRY
from ..core.ops.series import masked
from ..core.tensor import Tensor, drop_level_data, level_data, set_level_data
from ..core.views import link_view
from ..forward_ad import fit_to
from .pytree import tree_flatten, tree_unflatten
from .transforms import jvp

__all__ = ["jet", "derivatives"]

below = _levels.below
_INDEX_PUT = REGISTRY["index_put"]
_RESHAPE = REGISTRY["reshape"]


class _JetInfo:
    __slots__ = ("order", "holders", "views", "who")

    def __init__(self, order, who="jet"):
        self.order = order
        self.who = who  # what the user called, for errors (jet, derivatives, hessian_diag)
        self.holders = []  # weakrefs to the tensors given a series at this level
        self.views = LevelViews()  # (Note [Views at the data levels])


def _series(a, lv):
    return data_of(a, lv)


def _set_series(t, lv, series):
    set_data(t, lv, series)


def _attach(out, coeffs, lv, who):
    if coeffs is None or not isinstance(out, Tensor) or not is_differentiable_dtype(out.dtype):
        return
    with below(lv):
        coeffs = [fit_to(c, tuple(out.shape), out, who, "its Taylor rule gave a coefficient")
                  for c in coeffs]
    _set_series(out, lv, coeffs)


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
class _JetInterpreter(_levels.Interpreter):
    """Taylor mode's rules at a jet level (Note [Taylor rules])."""

    name = "jet"
    keeps_tensor_data = True  # series live in each tensor's _meta.level_data

    def process(self, lv, op, args, params):
        K = lv.info.order
        nin = len(args) if op.nin == VARIADIC else op.nin
        series = tuple(_series(a, lv) for a in args[:nin])
        with below(lv):
            out = apply(op, *args, **params)
        if op.view:  # (Note [Views at the data levels])
            link_views(op, args, nin, params, out)
        if not op.differentiable or all(s is None for s in series):
            return out
        with below(lv):
            coeffs = _coefficients(op, series, out, args, params, K)
        outs = (out,) if op.nout == 1 else tuple(out)
        for o, c in zip(outs, coeffs or ()):
            _attach(o, c, lv, op.qualname)
        return out

    def process_inplace(self, lv, op, target, args, params):
        return inplace_through_copy(lv, op, target, args, params,
                                    lambda s: [TENSOR_F.zeros_like(c) for c in s],
                                    lv.info.who)

    def process_function(self, lv, cls, args, kwargs, needs):
        """A custom Function: its forward one level down, and its series by nested forward
        mode (its ``jvp``)."""
        series = tuple(_series(a, lv) for a in args)
        with below(lv):
            outs, ctx = apply_function(cls, args, kwargs, needs)
            if all(s is None for s in series):
                return outs, ctx
            derivs = _nested(lambda *xs: cls.apply(*xs, **kwargs), tuple(args), series,
                             lv.info.order)
        if isinstance(outs, tuple):
            for i, o in enumerate(outs):
                _attach(o, [d[i] for d in derivs], lv, cls.__name__)
        else:
            _attach(outs, derivs, lv, cls.__name__)
        return outs, ctx


_JET = _JetInterpreter()


# Note [Views at the data levels]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A jet, the Forward Laplacian and sparsity detection keep their data on each tensor (a
# series; a gradient batch and a Laplacian; a dependency matrix). A view's data is its view
# op's rule applied to its parent's data when the view was made. An in-place change of its
# base, or of another view of the base, changes the memory they share, so the view's data is
# then stale (a view taken before ``y.sin_()`` kept the old series: silently wrong). As
# core's views regenerate their histories (Note [In-place on views] in core/views.py):
#
# * each level numbers the in-place changes of every base (the root of a chain of views)
#   made at the level (its epoch), and stamps a view's data with its base's epoch when the
#   data is set (``set_data``);
# * where a view's data is read (``data_of``: an op's inputs, the transform's outputs), a
#   stamp that is not its base's epoch is brought up to date by running its view op again,
#   at the level, on its parent (brought up to date first); so is a view with no data whose
#   base got data after the view was made. A view whose parent carries no data keeps its
#   own (a transform's input is a view of the user's tensor that carries the level's data);
# * an in-place change at the level (``inplace_through_copy``) runs the op out of place on
#   a copy of the target, which carries its data, and writes the result into the target
#   one level down; the target takes the result's data. A view's new data is written up its
#   chain of views with each view op's declared ``scatter`` rule, ``parent_new =
#   scatter(parent, child_new)``, run at the level, so that the level's own rules give each
#   parent's new data, up to the base; a base that carried no data gets data this way
#   (``y = zeros(3); w = y[:2]; w += 3 * x[:2]``). Then the base's epoch moves on.
#
# Forward mode's dual levels keep a view's tangent as a view of its base's tangent and
# write a new tangent into the old one's memory instead; these levels cannot: a dependency
# matrix is not an array, and the Forward Laplacian keeps a zero Laplacian as None and a
# gradient batch as an unmultiplied product. Views of a transform's values that dispatch
# does not link are linked by their own level (a ``func.grad`` level's; vmap's batched
# values, Note [Views of batched values] in functional/vmap.py: ``y = zeros_like(x); w =
# y[:2]`` inside ``vmap(laplacian(f))`` is a view made while neither it nor its base carried
# the level's data); ``link_views`` links any other at the level. Only views pay: reading a
# tensor that is not a view costs what it did.
class LevelViews:
    """A data level's epochs of bases and stamps of views (Note [Views at the data
    levels]), keyed by ``id`` with a weak reference that says the tensor is the same (a
    Tensor compares elementwise, so it cannot be a weak dictionary's key)."""

    __slots__ = ("epochs", "stamps")

    def __init__(self):
        self.epochs = {}  # id(base) -> (weakref to it, its epoch)
        self.stamps = {}  # id(view) -> (weakref to it, its base's epoch when its data was set)

    def epoch(self, base):
        e = self.epochs.get(id(base))
        return e[1] if e is not None and e[0]() is base else 0

    def current(self, view, base):
        s = self.stamps.get(id(view))
        return s is not None and s[0]() is view and s[1] == self.epoch(base)

    def stamp(self, view, base):
        self.stamps[id(view)] = (weakref.ref(view), self.epoch(base))

    def advance(self, base):
        self.epochs[id(base)] = (weakref.ref(base), self.epoch(base) + 1)


def data_of(a, lv):
    """``a``'s data at data level ``lv``, or None; a view's brought up to date first (Note
    [Views at the data levels]). ``lv`` must be visible (not below it)."""
    if not isinstance(a, Tensor):
        return None
    m = a._meta
    if m is None:
        return None
    if m.base is None:
        d = m.level_data
        return d.get(lv) if d else None
    if lv.info.views.current(a, m.base):
        return m.level_data.get(lv) if m.level_data else None
    parent, vop, extra, params, k = m.view_of
    if data_of(parent, lv) is not None:
        r = apply(vop, parent, *extra, **params)  # at the level: its rule for the view op
        if k >= 0:
            r = r[k]
        d = level_data(r, lv)
        if d is not None:
            set_level_data(a, lv, d, lv.info.holders)
        elif m.level_data:
            m.level_data.pop(lv, None)
    lv.info.views.stamp(a, m.base)
    return m.level_data.get(lv) if m.level_data else None


def set_data(t, lv, data):
    """Give ``t`` its data at data level ``lv``, current now (a view's is stamped)."""
    set_level_data(t, lv, data, lv.info.holders)
    base = t._meta.base
    if base is not None:
        lv.info.views.stamp(t, base)


def link_views(op, args, nin, params, out):
    """Link the outputs of view op ``op`` at a data level that dispatch did not link (views
    of vmap's batched values; Note [Views at the data levels])."""
    outs = (out,) if op.nout == 1 else out
    for k, o in enumerate(outs):
        if type(o) is not Tensor and isinstance(o, Tensor) and (
                o._meta is None or o._meta.base is None):
            link_view(op, args[:nin], tuple(args[nin:]), params, o, k)


def inplace_through_copy(lv, op, target, args, params, zeros, who):
    """An in-place op at a data level (a jet, the Forward Laplacian, sparsity detection):
    out of place on a copy carrying the target's data, written into the target one level
    down; the target takes the result's data (``zeros(old)`` when the result has none), and
    a view's new data is written up its chain of views (Note [Views at the data levels]).
    ``who`` names the transform in an error."""
    old = data_of(target, lv)
    new = apply(op, TENSOR_F.clone(target), *args, **params)
    data = level_data(new, lv)
    m = target._meta
    base = m.base if m is not None else None
    chain = []  # (a view's parent, its new value at the level), up to the base
    if base is not None and (data is not None or old is not None):
        t, child = target, new
        while t._meta is not None and t._meta.base is not None:
            parent, vop, extra, vparams, k = t._meta.view_of
            if vop.scatter is None:
                raise RuntimeError(
                    f"{who}: the in-place operation {op.name} changes a view made by "
                    f"{vop.name}, which cannot be written back into its base "
                    f"({vop.notes.get('scatter', 'it declares no scatter rule')}); use the "
                    "out-of-place operation")
            if k >= 0:
                child = vop.scatter(TENSOR_F, k, parent, child, *extra, **vparams)
            else:
                child = vop.scatter(TENSOR_F, parent, child, *extra, **vparams)
            chain.append((parent, child))
            t = parent
    with below(lv):
        apply_inplace(_INDEX_PUT, target, new, index=Ellipsis)
    if data is None:
        if old is None:
            return target
        with below(lv):
            data = zeros(old)
    lv.info.views.advance(target if base is None else base)
    set_data(target, lv, data)
    for parent, value in chain:
        d = level_data(value, lv)
        if d is not None:
            set_data(parent, lv, d)
    return target


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
    lv = _levels.push(_JET, _JetInfo(K, _who))
    try:
        inputs = []
        for p, c in zip(primals, coeffs):
            if K and c is not None and is_differentiable_dtype(p.dtype):
                with below(lv):  # a view of p (its data, its history) that carries c
                    x = apply(_RESHAPE, p, shape=tuple(p.shape))
                _set_series(x, lv, c)
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
            s = _series(o, lv)
            primal_out.append(o)
            series_out.append(list(s) if s is not None else [zeros_like(o) for _ in range(K)])
    finally:
        _levels.pop(lv)
        drop_level_data(lv, lv.info.holders)
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

