"""Differential operators: ``laplacian``, ``divergence``, ``hessian_diag``,
``hessian_trace_estimate`` and ``biharmonic`` (``ndgrad.func`` re-exports them).

Note [Forward Laplacian]
~~~~~~~~~~~~~~~~~~~~~~~~
The Laplacian ``sum_d d^2 f / dx_d^2`` is the sum of the second Taylor coefficients of ``f``
along the d basis directions. Pushing d order-2 jets (or a Hessian) through ``f`` costs d
second-order passes; the Forward Laplacian (Li et al. 2023) collapses them into ONE pass
that carries, for every intermediate value ``v``:

* its primal,
* ``J_v``: its gradient with respect to ``x``, a batch of d first-order coefficients with
  the leading axis d (shape ``(d, *v.shape)``), and
* ``L_v``: its Laplacian, one collapsed second-order coefficient (shape ``v.shape``), None
  where it is known to be zero (the input, and everything affine in it).

So each intermediate value holds O(d) numbers per element, never a d x d block. The pass is
a transform level (Note [Levels] in core/levels.py) with the interpreter
:class:`_ForwardLaplacianInterpreter`, which keeps ``(J, L)`` in each tensor's per-level
data (``_meta.level_data[level]``), as Taylor mode's jet level keeps its series. For each
op it runs the op one level down, then propagates ``(J, L)`` by the structure the op
declares (``Op.structure``, Note [Op structure] in core/ops/registry.py):

* a signed sum (linear with ``coefficients``: ``add``, ``subtract``): the inputs' batches
  pass through, scaled by the coefficients, with no zero tangent made for a constant input
  (a bias);
* linear: both go through the op's jvp, ``J_y`` by ``vmap`` of the jvp over the
  leading axis, ``L_y`` as one more jvp (skipped while every input's L is zero);
* multilinear (``multiply``, ``matmul``, ``einsum``, ...): with ``op`` linear in each
  input, ``J_y = sum_i op(.., J_i, ..)`` and
  ``L_y = sum_i op(.., L_i, ..) + 2 sum_{i<j} sum_d op(.., J_i,d, .., J_j,d, ..)``;
* elementwise, and the elementwise ops with a Taylor rule of their own (``tanh``,
  ``exp``, ``divide``, ``pow``, ...): with ``f_i`` the op's derivative in input i (its vjp
  rule at a cotangent of ones, conjugated for complex values) and ``f_ij`` its second
  derivatives (``jvp`` of that expression, at the size of the output, not of the batch),
  ``J_y = sum_i f_i J_i`` and ``L_y = sum_i f_i L_i + sum_{i,j} f_ij sum_d J_i,d J_j,d``:
  plain broadcasting over the leading axis, no ``vmap``, and ``sum_d J_i,d J_j,d`` one
  ``einsum``. Three passes over the batch (``f' J``, and the einsum's two reads) where the
  ODE recurrence of ``tanh`` vmapped over the directions makes five or six. A zero ``L_i``
  adds nothing even where ``f_i`` is infinite (``sqrt`` at 0: Note [Taylor mode at
  singular points] in core/ops/series.py);
* an op with a Taylor rule function but no vjp rule per input, or with several outputs,
  or none at all (``abs``, ``prod``, ``logsumexp``, the decompositions, custom Functions):
  its order-2 Taylor coefficients, from its rule (or the exact nested-forward-mode
  fallback of ``jet``), ``vmap``-ed over the d directions with the series ``[J_d, L / d]``
  per input, and the second coefficients summed over d. This is exact: an order-2 rule is
  ``y2 = A(x2) + Q(x1)`` with ``A`` linear and ``Q`` quadratic (the chain rule to second
  order), so ``sum_d y2(J_d, L/d) = A(L) + sum_d Q(J_d)``, which is the Laplacian of ``y``;
  splitting L equally lets one vmapped call serve, with ``L/d`` the same for every
  direction (not batched). (A custom Function takes the directions one at a time, a Python
  loop: vmap would run it per direction anyway, having no batching rule for it.)

Note [Scaled gradient batches]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
An elementwise op of one moving input gives ``J_y = f' J_x``, a full pass over the batch
that the next op may not need: a final layer ``w @ tanh(z)`` needs only
``J_z @ (w * f')``. So such an op (and ``multiply`` by a constant) keeps its batch as
``_Scaled(scale, base)``, unmultiplied; a chain of them multiplies the scales (output-sized),
``sum_d J_d^2`` of it is ``scale^2 * sum_d base_d^2``, ``matmul`` of a constant with it
moves the scale onto the constant when that is no larger than the batch, ``add`` passes it
through; every other consumer multiplies it out first (``_dense``), which costs what the
eager product would have.

Every quantity is made of ndgrad ops one level down, so the pass composes with the levels
outside it: ``vmap(laplacian(f))`` over points (the identity ``J`` of the input is one
unbatched constant, and stays unbatched until ``f`` mixes it with a batched value),
``grad`` of a Laplacian (a physics-informed loss), and ``laplacian(laplacian(f))``.
In-place operations and views follow Note [Views at the data levels] in core/data_level.py, as in a
jet: a view's ``(J, L)`` follows an in-place change of its base, and a write through a view
reaches its base.
"""

from __future__ import annotations

import functools

import numpy as np

from ..core import levels as _levels
from ..core.backend import is_differentiable_dtype
from ..core.creation import asarray, rand, zeros_like
from ..core.data_level import DataInfo, DataInterpreter, data_of, fit_to
from ..core.dispatch import TENSOR_F
from ..core.ops.registry import ELEMENTWISE
from ..core.ops.series import masked
from ..core.tensor import Tensor
from .taylor import _coefficients, _nested, jet
from .transforms import grad, hessian, jvp
from .vmap import _identity, vmap

__all__ = ["laplacian", "divergence", "hessian_diag", "hessian_trace_estimate", "biharmonic"]

below = _levels.below
_METHODS = ("taylor", "hessian")


# ------------------------------------------------------------------------------ the level
class _LaplacianInfo(DataInfo):
    __slots__ = ("d",)

    def __init__(self, d, who="laplacian"):
        super().__init__(who)  # (biharmonic runs two of these)
        self.d = d  # the number of directions; each tensor's data is (J, L)

    def params(self):
        return (self.d, self.who)


def _fit(c, shape, out, who, what):
    """``c`` as a Tensor of ``shape`` and ``out``'s dtype (broadcast, cast)."""
    return fit_to(c, shape, out, who, f"the Forward Laplacian rule gave a {what}")


class _Scaled:
    """A gradient batch kept as ``scale * base``, unmultiplied (Note [Scaled gradient
    batches]): ``base`` has the leading direction axis, ``scale`` none."""

    __slots__ = ("scale", "base")

    def __init__(self, scale, base):
        self.scale = scale
        self.base = base


def _dense(J):
    return J.scale * J.base if type(J) is _Scaled else J


def _broadcast_shape(*shapes):
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        return None


def _over_directions(fn, batches):
    """``vmap(fn)`` over the leading (direction) axis of the batches, None where an input has
    none."""
    return vmap(fn, in_dims=tuple(None if b is None else 0 for b in batches))(*batches)


def _add(a, b):
    return b if a is None else (a if b is None else a + b)


def _expand(J, ndim_out):
    """A batch (leading direction axis) of a value with fewer dimensions than the output,
    made to broadcast against it; a scaled batch keeps its form (its scale, without the
    direction axis, broadcasts from the right anyway)."""
    if type(J) is _Scaled:
        return _Scaled(J.scale, _expand(J.base, ndim_out))
    extra = ndim_out - (J.ndim - 1)
    if extra <= 0:
        return J
    return TENSOR_F.reshape(J, (J.shape[0],) + (1,) * extra + tuple(J.shape[1:]))


def _scaled_by(f, J):
    """The batch ``f * J`` for a factor ``f`` without the direction axis, unmultiplied (a
    Python number multiplies at once)."""
    if not isinstance(f, Tensor):
        return f * _dense(J)
    if type(J) is _Scaled:
        return _Scaled(f * J.scale, J.base)
    return _Scaled(f, J)


def _sum_over_directions(a, b):
    """``sum_d a_d b_d`` for batches with the leading direction axis (one pass, no
    temporary product); scaled batches are summed on their bases."""
    if type(a) is _Scaled and a is b:
        return a.scale * a.scale * TENSOR_F.einsum("i...,i...->...", a.base, a.base)
    return TENSOR_F.einsum("i...,i...->...", _dense(a), _dense(b))


# ------------------------------------------------------------------------------ the rules
def _linear(op, data, out, args, params, d):
    """Affine ops: ``J_y`` is the jvp vmapped over the directions, ``L_y`` one jvp."""
    nin = len(data)
    moving = [i for i, s in enumerate(data) if s is not None]

    def push(*jd):
        tangents = [None] * nin
        for i, t in zip(moving, jd):
            tangents[i] = t
        return op.jvp(TENSOR_F, tuple(tangents), out, *args, **params)

    J = _over_directions(push, [_dense(data[i][0]) for i in moving])
    Ls = tuple(None if s is None else s[1] for s in data)
    L = None
    if any(x is not None for x in Ls):
        L = op.jvp(TENSOR_F, Ls, out, *args, **params)
    if op.nout == 1:
        return [(J, L)]
    return [(J[k], None if L is None else L[k]) for k in range(len(out))]


def _signed_sum(op, data, out, args, params, d):
    """A linear op declared a sum ``sum_i c_i x_i`` (``add``, ``subtract``: in every layer's
    ``W @ x + b``): the inputs' batches, scaled by the declared coefficients, with no zero
    tangent made for a constant input (the generic linear rule's jvp fills one in and adds
    it: a pass over the batch for nothing)."""
    ndim = len(out.shape)
    moving = [i for i, s in enumerate(data) if s is not None]
    coefficients = op.structure.coefficients
    J = L = None
    for i in moving:
        Ji, Li = data[i]
        if len(moving) > 1:
            Ji = _dense(Ji)
        Ji = _expand(Ji, ndim)
        c = coefficients[i]
        if c != 1:
            Ji = _Scaled(c * Ji.scale, Ji.base) if type(Ji) is _Scaled else c * Ji
            Li = None if Li is None else c * Li
        J = _add(J, Ji)
        L = _add(L, Li)
    return [(J, L)]


def _matmul_scaled(data, args, i, d):
    """``matmul`` of a constant and a 1-D input ``i`` whose batch is ``s * B``: the scale
    moves onto the constant, ``W @ (s * b) = (W * s) @ b`` (``(s * a) @ W = a @ (s[:, None] *
    W)``), when the scaled constant is no larger than the batch (a final ``w @ h`` layer)."""
    J = data[i][0]
    other = args[1 - i]
    if type(J) is not _Scaled or data[1 - i] is not None or not isinstance(other, Tensor):
        return None
    x = args[i]
    n = x.shape[0] if x.ndim == 1 else -1
    if x.ndim != 1 or other.ndim not in (1, 2) or tuple(J.base.shape) != (d, n) or \
            (other.ndim == 2 and other.shape[1 - i] > d):
        return None
    s = J.scale
    if other.ndim == 1:
        w = other * s
    else:
        w = other * s if i == 1 else TENSOR_F.expand_dims(s, -1) * other
    if i == 1:
        return _over_directions(lambda b: TENSOR_F.matmul(w, b), [J.base])
    return _over_directions(lambda b: TENSOR_F.matmul(b, w), [J.base])


def _multilinear(op, data, out, args, params, d):
    """Ops linear in each input (Note [Forward Laplacian])."""
    nin = len(data)
    f = op.of(TENSOR_F)
    extra = args[nin:]
    moving = [i for i, s in enumerate(data) if s is not None]
    ndim = len(out.shape)
    # (an elementwise product, multiply: a scaled batch and one einsum for the pairs; NumPy's
    # matrix product: a scale moved onto a constant; both from the declaration)
    product = op.kind == ELEMENTWISE
    matrix_product = op.structure.matrix_product

    def call(replace):
        operands = list(args[:nin])
        for i, v in replace.items():
            operands[i] = v
        return f(operands, *extra, **params) if op.pack else f(*operands, *extra, **params)

    J = None
    L = None
    for i in moving:
        if product and len(moving) == 1:
            Ji = _scaled_by(args[1 - i], _expand(data[i][0], ndim))
        else:
            Ji = _matmul_scaled(data, args, i, d) if matrix_product else None
            if Ji is None:
                Ji = _over_directions(lambda t, i=i: call({i: t}), [_dense(data[i][0])])
        J = _add(_dense(J) if J is not None else None,
                 _dense(Ji) if J is not None else Ji)
        if data[i][1] is not None:
            L = _add(L, call({i: data[i][1]}))
    for a, i in enumerate(moving):
        for j in moving[a + 1:]:
            if product:  # sum_d J_i,d * J_j,d in one einsum
                both = _sum_over_directions(_expand(data[i][0], ndim),
                                            _expand(data[j][0], ndim))
            else:
                both = TENSOR_F.sum(_over_directions(
                    lambda s, t, i=i, j=j: call({i: s, j: t}),
                    [_dense(data[i][0]), _dense(data[j][0])]), axis=0)
            L = _add(L, 2 * both)
    return [(J, L)]


def _elementwise(op, data, out, args, params, d):
    """``J_y = sum_i f_i J_i``, ``L_y = sum_i f_i L_i + sum_ij f_ij sum_d J_i,d J_j,d``."""
    F = TENSOR_F
    nin = len(data)
    extra = args[nin:]
    rules = op.vjp_rules
    moving = [i for i, s in enumerate(data) if s is not None and rules[i] is not None]
    if not moving:
        return [(None, None)]
    complex_ = out.dtype.kind == "c" or any(
        isinstance(a, Tensor) and a.dtype.kind == "c" for a in args[:nin])
    ones = F.ones_like(out)
    shape = tuple(out.shape)

    def derivative(i):
        rule = rules[i]

        def di(*v):  # v: the moving inputs, then the output
            full = list(args[:nin])
            for k, m in zip(moving, v):
                full[k] = m
            r = rule(F, ones, v[-1], *full, *extra, **params)
            return F.conj(r) if complex_ else r
        return di

    primals = tuple(args[i] for i in moving) + (out,)
    firsts = {i: derivative(i)(*primals) for i in moving}
    ndim = len(shape)
    Js = {i: _expand(data[i][0] if len(moving) == 1 else _dense(data[i][0]), ndim)
          for i in moving}
    J = None
    L = None
    for i in moving:
        if len(moving) == 1:
            J = _scaled_by(firsts[i], Js[i])
        else:
            J = _add(J, firsts[i] * Js[i])
        if data[i][1] is not None:
            # (a zero Laplacian of the input adds nothing, even where f_i is infinite:
            # Note [Taylor mode at singular points] in core/ops/series.py)
            L = _add(L, masked(F, firsts[i], data[i][1]))
    for a, i in enumerate(moving):
        di = derivative(i)
        for j in moving[a:]:
            tangents = tuple(F.ones_like(args[m]) if m == j else F.zeros_like(args[m])
                             for m in moving) + (F.broadcast_to(firsts[j], shape),)
            fij = jvp(di, primals, tangents)[1]
            s = _sum_over_directions(Js[i], Js[j])
            L = _add(L, fij * s if i == j else 2 * (fij * s))
    return [(J, L)]


def _by_jet(op, data, out, args, params, d):
    """Any other op: its order-2 Taylor coefficients (its rule, or the exact fallback)
    vmapped over the directions with the series ``[J_d, L / d]``; the second coefficients
    summed over d (Note [Forward Laplacian])."""
    nin = len(data)
    moving = [i for i, s in enumerate(data) if s is not None]
    outs = (out,) if op.nout == 1 else tuple(out)
    with_out = [isinstance(o, Tensor) and is_differentiable_dtype(o.dtype) for o in outs]
    shares = {i: (zeros_like(args[i]) if data[i][1] is None else data[i][1] / d)
              for i in moving}

    def per_direction(*jd):
        series = [None] * nin
        for i, t in zip(moving, jd):
            series[i] = [t, shares[i]]
        coeffs = _coefficients(op, tuple(series), out, args, params, 2)
        res = []
        for o, ok, c in zip(outs, with_out, coeffs or ()):
            if not ok or c is None:
                res.append(None)
                continue
            res.append([_fit(c[0], tuple(o.shape), o, op.qualname, "coefficient"),
                        _fit(c[1], tuple(o.shape), o, op.qualname, "coefficient")])
        return res

    res = _over_directions(per_direction, [_dense(data[i][0]) for i in moving])
    return [(None, None) if r is None else (r[0], TENSOR_F.sum(r[1], axis=0)) for r in res]


def _propagate(op, data, out, args, params, d):
    """Per output, its ``(J, L)`` (Note [Forward Laplacian])."""
    structure = op.structure
    if structure.coefficients is not None:
        return _signed_sum(op, data, out, args, params, d)
    if structure.linear:
        return _linear(op, data, out, args, params, d)
    if structure.multilinear:
        return _multilinear(op, data, out, args, params, d)
    if (structure.elementwise or callable(op.taylor)) and op.nout == 1 and \
            op.vjp_rules is not None and op.jvp is not None:
        return _elementwise(op, data, out, args, params, d)
    return _by_jet(op, data, out, args, params, d)


class _ForwardLaplacianInterpreter(DataInterpreter):
    """The Forward Laplacian's rules at its level (Note [Forward Laplacian]); the skeleton is
    the data levels' (Note [Data levels] in core/data_level.py)."""

    name = "laplacian"

    def propagate(self, lv, op, data, out, args, params):
        return [None if r is None or r[0] is None else r
                for r in _propagate(op, data, out, args, params, lv.info.d)]

    def function_rule(self, lv, cls, ctx, args, kwargs, data, outs):
        """A custom Function's contribution from order-2 jets by nested forward mode (its
        ``jvp``), one direction at a time (a Python loop, as vmap's own for a Function
        without a batching rule)."""
        d = lv.info.d
        Js = [None if s is None else _dense(s[0]) for s in data]
        shares = [None if s is None else
                  (zeros_like(args[i]) if s[1] is None else s[1] / d)
                  for i, s in enumerate(data)]
        c1 = []
        c2 = None
        for k in range(d):
            series = [None if J is None else [J[k], share] for J, share in zip(Js, shares)]
            y1, y2 = _nested(lambda *xs: cls.apply(*xs, **kwargs), tuple(args), series, 2)
            c1.append(y1)
            c2 = y2 if c2 is None else (
                tuple(_add(a, b) for a, b in zip(c2, y2)) if isinstance(y2, tuple) else c2 + y2)
        if not isinstance(c2, tuple):
            return [(TENSOR_F.stack(c1), c2)]
        return [(TENSOR_F.stack([c[i] for c in c1]), L) if isinstance(o, Tensor) else None
                for i, (o, L) in enumerate(zip(outs, c2))]

    def zeros(self, data):
        return (TENSOR_F.zeros_like(_dense(data[0])), None)

    def pack(self, data):
        J, L = data  # (a Laplacian of None, zero so far, is no tensor)
        return (_dense(J),) if L is None else (_dense(J), L)

    def unpack(self, tensors):
        return (tensors[0], tensors[1] if len(tensors) > 1 else None)

    def fit(self, lv, out, data, who):
        J, L = data
        shape = tuple(out.shape)
        full = (lv.info.d,) + shape
        if type(J) is _Scaled and not (
                isinstance(J.scale, Tensor) and J.scale.dtype == J.base.dtype == out.dtype and
                _broadcast_shape(tuple(J.scale.shape), tuple(J.base.shape)) == full):
            J = _dense(J)
        if type(J) is not _Scaled:
            J = _fit(J, full, out, who, "gradient batch")
        if L is not None:
            L = _fit(L, shape, out, who, "Laplacian")
        return (J, L)


_FL = _ForwardLaplacianInterpreter()


# ------------------------------------------------------------------------------ helpers
def _check_callable(f, who):
    if not callable(f):
        raise TypeError(f"{who}: expected a function, got {type(f).__name__}")


def _check_point(x, who):
    if not isinstance(x, Tensor):
        raise TypeError(f"{who}: x must be a Tensor, got {type(x).__name__}")
    if not is_differentiable_dtype(x.dtype) or x.dtype.kind == "c":
        raise TypeError(f"{who}: x must be a real floating-point Tensor (the operator "
                        f"differentiates along real directions), got dtype {x.dtype}")


def _check_method(method, allowed, who):
    if method not in allowed:
        raise ValueError(f"{who}: unknown method {method!r}; use one of "
                         f"{', '.join(repr(m) for m in allowed)}")


def _check_output(y, who, scalar=False):
    if not isinstance(y, Tensor):
        raise TypeError(f"{who}: f must return a Tensor, got {type(y).__name__}")
    if scalar and y.ndim != 0:
        raise RuntimeError(f"{who}: f must return a scalar (0-d) Tensor, got one of shape "
                           f"{list(y.shape)}")


def _basis(x):
    """The d basis directions of ``x``'s space, ``(d, *x.shape)`` (vmap knows the 1-D case
    as an identity batch, Note [Identity batches])."""
    n = x.numel()
    eye = _identity(n, x.dtype, x.device)
    shape = tuple(x.shape)
    return eye if shape == (n,) else TENSOR_F.reshape(eye, (n,) + shape)


def _forward_laplacian(f, x, args, kwargs, who="laplacian"):
    """One Forward Laplacian pass: ``(y, L_y)`` (Note [Forward Laplacian]); ``who`` names
    what the user called in errors."""
    d = x.numel()
    lv = _FL.enter(_LaplacianInfo(d, who))
    try:
        xv = _FL.carrier(lv, x, (_basis(x), None))  # a view of x carrying (I, 0)
        y = f(xv, *args, **kwargs)
        _check_output(y, who)
        s = data_of(y, lv)
        with below(lv):  # (J_y is not needed: a scaled one is never multiplied out)
            L = zeros_like(y) if s is None or s[1] is None else s[1]
    finally:
        _FL.leave(lv)
    return y, L


# ------------------------------------------------------------------------------ the API
def laplacian(f, *, method="taylor", _who="laplacian"):
    """The Laplacian of ``f``: ``x -> sum_i d^2 f / dx_i^2 (x)``.

    ``f`` maps a real tensor ``x`` (of any shape: the sum runs over all its elements) to a
    scalar, or to a tensor, whose elements then each get their Laplacian (the result has the
    output's shape). Extra positional and keyword arguments of the returned function are
    passed to ``f`` unchanged (not differentiated).

    Parameters
    ----------
    f : callable
        ``x -> Tensor`` built of ndgrad operations (any of them: each carries the pass by
        the Taylor kind it declares, Note [Forward Laplacian] in the module's source).
    method : {"taylor", "hessian"}
        ``"taylor"`` (default): the Forward Laplacian, ONE forward pass carrying every
        intermediate value's gradient (d first-order coefficients) and Laplacian (one
        collapsed second-order coefficient): about the cost of d forward-mode tangents,
        with O(d) extra numbers per intermediate element, no Hessian and no backward pass.
        ``"hessian"``: the trace of :func:`hessian` (forward over reverse, d tangents
        through a forward and a backward pass, a d x d block per output element): the
        reference.

    Returns
    -------
    callable
        ``lap(x, *args, **kwargs)``, with the shape of ``f``'s output. It composes with the
        other transforms: ``vmap(laplacian(f))(points)``, ``grad`` of a Laplacian,
        ``laplacian(laplacian(f))``.

    Raises
    ------
    ValueError
        An unknown ``method``.
    TypeError
        ``f`` is not callable, ``x`` is not a real floating Tensor, or ``f`` does not
        return a Tensor.

    Examples
    --------
    >>> import ndgrad
    >>> from ndgrad.func import laplacian
    >>> f = lambda x: (x ** 3).sum()                    # Laplacian 6 * sum(x)
    >>> laplacian(f)(ndgrad.tensor([1.0, 2.0, 3.0]))
    tensor(36.)
    >>> laplacian(lambda x: x[0] ** 2 * x)(ndgrad.tensor([1.0, 2.0]))  # elementwise
    tensor([6., 4.])
    """
    _check_callable(f, _who)  # (_who: what the user called, biharmonic's two Laplacians)
    _check_method(method, _METHODS, _who)

    @functools.wraps(f)
    def lap(x, *args, **kwargs):
        _check_point(x, _who)
        if method == "taylor":
            return _forward_laplacian(f, x, args, kwargs, _who)[1]
        y_shape = []

        def g(v):
            y = f(v, *args, **kwargs)
            _check_output(y, _who)
            y_shape.append(tuple(y.shape))
            return y
        H = hessian(g)(x)
        d = x.numel()
        H = TENSOR_F.reshape(H, y_shape[0] + (d, d))
        return TENSOR_F.trace(H, axis1=-2, axis2=-1)
    return lap


def biharmonic(f, *, method="taylor"):
    """The biharmonic operator of ``f``: the Laplacian of its Laplacian,
    ``sum_ij d^4 f / dx_i^2 dx_j^2``.

    It is ``laplacian(laplacian(f, method=method), method=method)``: with ``"taylor"``, a
    Forward Laplacian pass over a Forward Laplacian pass, which carries for each inner
    intermediate value a d x d block of second-order data (the inner gradient batch's
    gradient batch): about d^2 forward tangents' cost. (A direct order-4 collapsed Taylor
    pass is not implemented; the composition is exact.)

    Parameters
    ----------
    f : callable
        ``x -> Tensor`` (scalar, or elementwise over the output as for :func:`laplacian`).
    method : {"taylor", "hessian"}
        The method of both Laplacians (:func:`laplacian`).

    Returns
    -------
    callable
        ``x -> Δ²f(x)``, with the shape of ``f``'s output.

    Raises
    ------
    ValueError
        An unknown ``method``.

    Examples
    --------
    >>> import ndgrad
    >>> from ndgrad.func import biharmonic
    >>> biharmonic(lambda x: (x ** 4).sum())(ndgrad.tensor([0.5, -1.0, 2.0]))   # 24 d
    tensor(72.)
    """
    _check_callable(f, "biharmonic")
    _check_method(method, _METHODS, "biharmonic")
    return laplacian(laplacian(f, method=method, _who="biharmonic"), method=method,
                     _who="biharmonic")


def divergence(f):
    """The divergence of a vector field ``f: R^d -> R^d``: ``sum_i d f_i / dx_i`` (the trace
    of its Jacobian).

    ``x`` may have any shape; ``f(x)`` must have as many elements (they are matched in
    flattened order). Forward mode: d Jacobian-vector products along the basis directions
    in one vmapped pass (the cost of about d forward tangents), each keeping only its own
    diagonal entry.

    Parameters
    ----------
    f : callable
        ``x -> Tensor`` with as many elements as ``x``; extra arguments of the returned
        function are passed to ``f``.

    Returns
    -------
    callable
        ``div(x, *args, **kwargs)``, a 0-d tensor.

    Raises
    ------
    TypeError
        ``x`` is not a real floating Tensor, or ``f`` does not return a Tensor.
    RuntimeError
        ``f(x)`` does not have as many elements as ``x``.

    Examples
    --------
    >>> import ndgrad
    >>> from ndgrad.func import divergence
    >>> field = lambda x: ndgrad.stack([x[0] * x[1], x[1] ** 2])   # div = x1 + 2 x1
    >>> divergence(field)(ndgrad.tensor([1.0, 2.0]))
    tensor(6.)
    """
    _check_callable(f, "divergence")

    @functools.wraps(f)
    def div(x, *args, **kwargs):
        _check_point(x, "divergence")
        n = x.numel()

        def g(v):
            y = f(v, *args, **kwargs)
            _check_output(y, "divergence")
            if y.numel() != n:
                raise RuntimeError(
                    f"divergence: f must map x to as many elements as x has (a vector field "
                    f"R^d -> R^d); x has {n} elements (shape {list(x.shape)}), f(x) has "
                    f"{y.numel()} (shape {list(y.shape)})")
            return y

        def diagonal_entry(e):
            t = jvp(g, (x,), (e,))[1]
            return TENSOR_F.sum(TENSOR_F.reshape(t, (n,)) * TENSOR_F.reshape(e, (n,)))
        return TENSOR_F.sum(vmap(diagonal_entry)(_basis(x)))
    return div


def _quadratic_form(f, x, who):
    """``v -> v^T H v`` for the Hessian ``H`` of ``f`` at ``x``: one order-2 jet; ``who``
    names what the user called in errors."""
    zero = zeros_like(x)

    def q(v):
        y, (_, y2) = jet(f, (x,), ([v, zero],), _who=who)
        _check_output(y, who, scalar=True)
        return y2
    return q


def hessian_diag(f):
    """The diagonal of the Hessian of a scalar function, with the shape of ``x``.

    d order-2 Taylor passes (:func:`jet`), one per basis direction, in one vmapped pass:
    the second coefficient along ``e_i`` is ``d^2 f / dx_i^2``. The cost of about d
    second-order forward passes; no Hessian is formed.

    Parameters
    ----------
    f : callable
        ``x -> scalar Tensor``; extra arguments of the returned function are passed to it.

    Returns
    -------
    callable
        ``diag(x, *args, **kwargs)``, a tensor shaped like ``x``.

    Raises
    ------
    TypeError
        ``x`` is not a real floating Tensor, or ``f`` does not return a Tensor.
    RuntimeError
        ``f`` does not return a scalar.

    Examples
    --------
    >>> import ndgrad
    >>> from ndgrad.func import hessian_diag
    >>> hessian_diag(lambda x: (x ** 3).sum() + x[0] * x[1])(ndgrad.tensor([1.0, 2.0]))
    tensor([ 6., 12.])
    """
    _check_callable(f, "hessian_diag")

    @functools.wraps(f)
    def diag(x, *args, **kwargs):
        _check_point(x, "hessian_diag")
        q = _quadratic_form(lambda v: f(v, *args, **kwargs), x, "hessian_diag")
        return vmap(q)(_basis(x)).reshape(tuple(x.shape))
    return diag


def _rademacher(key, shape, x):
    """Random signs of ``shape`` in ``x``'s dtype and device: from NumPy's generator seeded
    with ``key`` (an int), or from ndgrad's generator (``key=None``)."""
    if key is None:
        u = rand(*shape, dtype=x.dtype, device=x.device)
        return TENSOR_F.where(u < 0.5, -1.0, 1.0).astype(x.dtype)
    rng = np.random.default_rng(key)
    signs = rng.integers(0, 2, size=shape) * 2.0 - 1.0
    return asarray(signs.astype(x.dtype), device=x.device)


def hessian_trace_estimate(f, x, num_samples, method="hutchinson", key=None):
    """A randomized, unbiased estimate of the trace of the Hessian of scalar ``f`` at ``x``
    (the Laplacian), from Hessian quadratic forms and products, no Hessian formed.

    Parameters
    ----------
    f : callable
        ``x -> scalar Tensor``.
    x : Tensor
        A real floating tensor of any shape.
    num_samples : int
        The budget in Hessian-vector operations (>= 1; >= 3 for ``"hutch++"``).
    method : {"hutchinson", "hutch++"}
        ``"hutchinson"``: the mean of ``z^T H z`` over ``num_samples`` Rademacher vectors
        ``z``, each one order-2 Taylor pass (vmapped together); variance
        ``2 (||H||_F^2 - sum_i H_ii^2) / num_samples``.
        ``"hutch++"`` (Meyer, Musco, Musco and Woodruff, 2021): a third of the budget sketches
        ``H S`` (Hessian-vector products, forward over reverse, for Rademacher ``S``), whose
        orthonormal basis ``Q`` gets its trace exactly (``tr(Q^T H Q)``, one quadratic form
        per column), and the rest estimates the trace of ``H`` projected off ``Q`` by
        Hutchinson. Far more accurate when ``H`` is dominated by a few large eigenvalues.
    key : int or None
        An int seeds NumPy's generator (reproducible); None draws from ndgrad's generator
        (``ndgrad.manual_seed``; inside ``vmap`` it follows vmap's ``randomness``).

    Returns
    -------
    Tensor
        A 0-d tensor.

    Raises
    ------
    ValueError
        ``num_samples < 1`` (``< 3`` for Hutch++), or an unknown ``method``.
    TypeError
        ``num_samples`` or ``key`` of the wrong type, ``x`` not a real floating Tensor.
    RuntimeError
        ``f`` does not return a scalar.

    Examples
    --------
    >>> import ndgrad
    >>> from ndgrad.func import hessian_trace_estimate
    >>> f = lambda x: (x ** 2).sum()                # Hessian 2 I: every sample is exact
    >>> hessian_trace_estimate(f, ndgrad.ones(5), 4, key=0)
    tensor(10.)
    >>> a = ndgrad.tensor([1.0, 2.0, 3.0, 0.0, 0.0])
    >>> g = lambda x: (a @ x) ** 2                  # Hessian 2 a a^T: rank one, trace 28
    >>> hessian_trace_estimate(g, ndgrad.ones(5), 6, key=0)
    tensor(53.33333333)
    >>> hessian_trace_estimate(g, ndgrad.ones(5), 6, method="hutch++", key=0)
    tensor(28.)
    """
    who = "hessian_trace_estimate"
    _check_callable(f, who)
    _check_point(x, who)
    _check_method(method, ("hutchinson", "hutch++"), who)
    if isinstance(num_samples, bool) or not isinstance(num_samples, (int, np.integer)):
        raise TypeError(f"{who}: num_samples must be an int, got {type(num_samples).__name__}")
    m = int(num_samples)
    if m < 1:
        raise ValueError(f"{who}: num_samples must be >= 1, got {m}")
    if method == "hutch++" and m < 3:
        raise ValueError(f"{who}: hutch++ splits num_samples in three parts (sketch, its "
                         f"trace, the rest); it needs num_samples >= 3, got {m}")
    if key is not None and (isinstance(key, bool) or not isinstance(key, (int, np.integer))):
        raise TypeError(f"{who}: key must be an int seed or None, got {type(key).__name__}")
    n = x.numel()
    shape = tuple(x.shape)

    def flat(v):  # f on flattened points
        return f(TENSOR_F.reshape(v, shape))
    xf = TENSOR_F.reshape(x, (n,))
    q = _quadratic_form(flat, xf, who)
    if method == "hutchinson":
        Z = _rademacher(key, (m, n), x)
        return TENSOR_F.mean(vmap(q)(Z))
    k = m // 3
    r = m - 2 * k
    keys = (None, None) if key is None else tuple(
        int(s) for s in np.random.SeedSequence(int(key)).generate_state(2))
    S = _rademacher(keys[0], (k, n), x)
    g = grad(flat)

    def hvp(s):
        return jvp(g, (xf,), (s,))[1]
    Y = vmap(hvp)(S)                                        # (k, n): (H S)^T
    Q = TENSOR_F.linalg.qr(TENSOR_F.moveaxis(Y, 0, 1)).Q.detach()   # (n, k), orthonormal
    exact = TENSOR_F.sum(vmap(q)(TENSOR_F.moveaxis(Q, 0, 1)))
    G = _rademacher(keys[1], (r, n), x)
    G = G - (G @ Q) @ TENSOR_F.moveaxis(Q, 0, 1)            # projected off span(Q)
    return exact + TENSOR_F.mean(vmap(q)(G))
