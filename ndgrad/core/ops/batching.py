"""Batching rules (vmap): the defaults that follow from an op's kind, and the helpers that
explicit rules use.

A batching rule is ``rule(F, batched, *args, **params)``: ``args`` are the op's arguments
as one level down sees them (``batched[i]`` says whether array input ``i`` carries the batch
dimension, always FIRST; the others are the same for every batch element), ``F`` is the
ndgrad namespace. It returns the op's output(s) for the whole batch, batch dimension first,
computed with ``F``'s ops (so outer transforms see them). Declared with ``op.defbatch(rule)``
next to the op; ops of kinds ELEMENTWISE, COMPARISON, REDUCTION and SCAN get one from their
kind (:func:`default_rule`). Note [Batched tensors] in ``ndgrad/functional/vmap.py`` says
how vmap uses them.

Examples
--------
The rule of an op that sums its last axis would be::

    def rule(F, batched, x):
        return F.sum(x, axis=-1)    # the batch dimension is first: the last axis is unchanged
"""

from __future__ import annotations

import inspect
from itertools import repeat

from ..tensor import Tensor
from .registry import _UNSET, COMPARISON, ELEMENTWISE, REDUCTION, SCAN, VARIADIC

__all__ = ["default_rule", "batch_size", "logical_ndim", "pad_to", "shift_axis",
           "shift_axes", "with_batch", "flatten", "is_batched", "at_level", "scales_identity",
           "keeps_identity"]


def _ndim(a):
    return getattr(a, "ndim", 0)


def logical_ndim(a, batched):
    """Dimensions of one batch element of ``a``."""
    return _ndim(a) - 1 if batched else _ndim(a)


def batch_size(args, batched):
    """The batch size: the first dimension of any batched argument."""
    for a, b in zip(args, batched):
        if b:
            return a.shape[0]
    raise ValueError("no batched argument")


def pad_to(F, a, ndim):
    """Batched ``a`` with size-1 dimensions inserted after the batch dimension, so that one
    element has ``ndim`` dimensions (NumPy broadcasting aligns the rest from the right)."""
    k = a.ndim - 1
    if k >= ndim:
        return a
    return F.reshape(a, (a.shape[0],) + (1,) * (ndim - k) + tuple(a.shape[1:]))


def with_batch(F, a, size):
    """Unbatched ``a`` broadcast to carry a batch dimension of ``size`` (a view)."""
    shape = tuple(getattr(a, "shape", ()))
    return F.broadcast_to(a, (size,) + shape)


def flatten(F, a):
    """Batched ``a`` with each batch element flattened: shape ``(batch, numel)`` (explicit sizes,
    so that empty elements reshape too)."""
    n = 1
    for s in a.shape[1:]:
        n *= s
    return F.reshape(a, (a.shape[0], n))


def is_batched(x):
    """Whether ``x`` is (or wraps) a batched tensor of some vmap level, whose values (one per
    batch element) a formula cannot read (``bool(x)`` raises): formulas then take a branch
    that holds for every value. Duck-typed: core does not import ``functional``."""
    return getattr(x, "_batched", False)


def values_unknown(x):
    """Whether ``x``'s values cannot be read where a formula runs: a batched tensor (one value
    per element), or a tensor carrying the data of a level whose values are not computed yet
    (``Interpreter.values_unknown``: compile's tracer). A formula that picks the faster of two
    exact branches by the values takes the branch that holds for every value then."""
    if getattr(x, "_batched", False):
        return True
    m = getattr(x, "_meta", None)  # (a Tensor's; a Dask array's _meta is an array)
    d = getattr(m, "level_data", None)
    if d:
        for lv in d:
            if lv.interpreter.values_unknown:
                return True
    return False


def at_level(x, level):
    """Whether the parameter value ``x`` is a tensor batched at vmap ``level`` (a rule declared
    with ``params=True`` gets ``_level``; its physical value, batch first, is ``x._value``)."""
    return level is not None and getattr(x, "_level", None) is level


def scales_identity(o, unbatched, n):
    """Whether ``o`` times (or over) an identity batch of size ``n`` is one too: an
    unbatched Python number, or an unbatched plain tensor of shape (), (1,) or (n,)
    (Note [Identity batches] in functional/vmap.py)."""
    if not unbatched:
        return False
    if isinstance(o, (int, float)):
        return True
    return type(o) is Tensor and tuple(o.shape) in ((), (1,), (n,))


def keeps_identity(scale):
    """The identity-batch rule of an op that keeps one, with ``scale(F, s, *args[1:],
    **params)`` the new scales (a unary op: negation, a cast, a copy)."""
    def rule(F, i, s, args, batched, params):
        return "identity", scale(F, s, *args[1:], **params)
    return rule


def shift_axis(axis, ndim):
    """A logical axis (maybe negative) as the physical one (batch first)."""
    if not -ndim <= axis < ndim:
        raise ValueError(f"axis {axis} is out of bounds for an array of dimension {ndim}")
    return axis % ndim + 1


def shift_axes(axis, ndim):
    """``axis`` (None, int, or tuple) as physical axes; None means every logical axis."""
    if axis is None:
        return tuple(range(1, ndim + 1))
    if isinstance(axis, (tuple, list)):
        return tuple(map(shift_axis, axis, repeat(ndim)))  # (map: no cell for ndim)
    return shift_axis(axis, ndim)


def _elementwise(op):
    fn = op.of
    nin = op.nin

    def rule(F, batched, *args, **params):
        arrays = args[:nin] if nin != VARIADIC else args
        extra = args[nin:] if nin != VARIADIC else ()
        k = 0  # (loops: a comprehension would make F and k cells, made on every op under
        for a, b in zip(arrays, batched):  # vmap: Note [No cells on the hot path])
            nd = logical_ndim(a, b)
            if nd > k:
                k = nd
        new = []
        for a, b in zip(arrays, batched):
            new.append(pad_to(F, a, k) if b else a)
        return fn(F)(*new, *extra, **params)
    return rule


def _param_names(op):
    """The names of ``op``'s parameters after its array inputs (positional ones bind to
    these: ``sum(x, 0)`` is ``sum(x, axis=0)``)."""
    params = list(inspect.signature(op.forward).parameters.values())[1 + op.nin:]
    return [p.name for p in params if p.kind == p.POSITIONAL_OR_KEYWORD]


def _bind(names, extra, params):
    if extra:
        params = dict(zip(names, extra), **params)
    return params


def _reduction(op):
    fn, names = op.of, _param_names(op)

    def rule(F, batched, x, *extra, **params):
        params = _bind(names, extra, params)
        axis = params.pop("axis", None)
        return fn(F)(x, axis=shift_axes(axis, x.ndim - 1), **params)
    return rule


def _scan(op):
    fn, name, names = op.of, op.name, _param_names(op)

    def rule(F, batched, x, *extra, **params):
        params = _bind(names, extra, params)
        axis = params.pop("axis", None)
        nd = x.ndim - 1
        if axis is None:
            if nd != 1:
                raise ValueError(f"{name}: axis must be given for a {nd}-d array (it may be "
                                 "omitted only for a 1-d array)")
            axis = 0
        return fn(F)(x, axis=shift_axis(axis, nd), **params)
    return rule


_KIND_RULES = {ELEMENTWISE: _elementwise, COMPARISON: _elementwise, REDUCTION: _reduction,
               SCAN: _scan}


def default_rule(op):
    """The batching rule ``op`` gets from its kind (memoised on the op), or None."""
    r = op.default_batch
    if r is _UNSET:
        make = _KIND_RULES.get(op.kind)
        r = op.default_batch = make(op) if make is not None else None
    return r
