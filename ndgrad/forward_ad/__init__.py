"""Forward-mode automatic differentiation: dual tensors with nested levels.

The PyTorch ``torch.autograd.forward_ad`` contract, without its single-level limit. Inside a
dual level, :func:`make_dual` gives a tensor a *tangent* (a direction); every operation on
it then carries the tangent along (one jvp rule evaluation per op), and :func:`unpack_dual`
reads the output's tangent: the Jacobian-vector product, with no backward pass.

>>> import ndgrad
>>> import ndgrad.forward_ad as fwAD
>>> x = ndgrad.tensor([0.0, 1.0, 2.0])
>>> with fwAD.dual_level():
...     y = ndgrad.exp(fwAD.make_dual(x, ndgrad.ones(3)))
...     jvp = fwAD.unpack_dual(y).tangent
>>> jvp
tensor([1.        , 2.71828183, 7.3890561 ])

How it works (Note [Forward mode])
----------------------------------
A dual level is a transform level (Note [Levels] in ``ndgrad/core/levels.py``) whose
interpreter is :class:`_DualInterpreter`, a data level: its skeleton is the data levels' one
(Note [Data levels] in ``ndgrad/core/data_level.py``), and it supplies the jvp rules and how
tangents are read, kept and written in place. As in PyTorch, a tangent belongs to a tensor: it is
kept in the tensor's per-level data (``_meta.level_data[level]``), so any tensor can carry
one, also one made before the level or one that gets a tangent by an in-place operation.
When the innermost visible level among an op's inputs is a dual level ``L`` (the recursive
scheme of JAX's autodidax, which avoids perturbation confusion), its interpreter:

1. reads the inputs' level-``L`` tangents;
2. runs the op on the same inputs inside ``levels.below(L)``, where level ``L`` (and the
   deeper ones) are invisible, so the op carries the outer levels' tangents and is recorded
   for reverse mode as usual, and nothing is hidden or restored on the tensors themselves;
3. evaluates the op's jvp rule with ``F`` = the ndgrad namespace, still below ``L``: the
   tangent is made of ndgrad ops, so it carries outer-level tangents (forward over forward)
   and is recorded for reverse mode when something requires grad (reverse over forward); it
   is broadcast and cast to the output's shape and dtype;
4. attaches it to the output at level ``L``.

A node that saves its output keeps the output's per-level data with it (Note [Saved tensors
and versions] in ``ndgrad/core/saved.py``), so a backward pass inside the level sees the
tangents of saved outputs too (forward over reverse).

Views and in-place: a view op's jvp is the view op applied to the tangent, so the tangent of
a view of a dual tensor is a view of the base's tangent. An in-place op on a tensor with a
tangent writes the new tangent *into* its tangent's memory (so a view's tangent update is
seen by its base's tangent); a tensor (or view) that had no tangent gets one (a view's base
then gets a zero tangent first, and the view's tangent is derived from it through the view
chain). A view made while its base had no tangent gets its tangent from the base's, through
the view chain, when it is next used (the two share memory from then on). An old tangent
that cannot hold the new one (a constant of a transform outside the level), or one that is
the caller's (``func.jvp``'s), is replaced by a copy first, and the views' tangents are
derived again (Note [Tangents of views]).

:func:`exit_dual_level` drops the tangents of that level from every tensor that got one
(a per-level list of weak references).

A dual level belongs to the thread that entered it, like every transform level (Note
[Levels per thread] in ``ndgrad/core/levels.py``): threads enter, use and exit their own
levels at the same time, numbered from 0 in each thread. A tensor carrying the tangent of a
level entered in another thread is refused in an operation (an error that names the
level), and has no tangent for :func:`unpack_dual` there. PyTorch's levels are process wide
instead, and only one may be active at a time; ndgrad's nest, so they are per thread.
"""

from __future__ import annotations

import threading
import weakref
from collections import namedtuple

from ..core import levels as _levels
from ..core.backend import is_differentiable_dtype
from ..core.data_level import DataInfo, DataInterpreter, fit_to
from ..core.dispatch import TENSOR_F, apply
from ..core.inplace import apply_inplace
from ..core.function import Function
from ..core.ops import REGISTRY
from ..core.tensor import Tensor, drop_level_data, level_data, set_level_data

__all__ = ["dual_level", "enter_dual_level", "exit_dual_level", "make_dual", "unpack_dual",
           "UnpackedDualTensor"]

class _Duals(threading.local):
    """This thread's dual levels (Note [Levels per thread] in core/levels.py: a dual level
    belongs to the thread that entered it, like every transform level)."""

    def __init__(self):
        self.stack = []   # the active dual levels' depths, innermost last (Note [Levels])
        self.levels = {}  # depth -> its core.levels.Level


_DUALS = _Duals()


def _duals():
    """This thread's dual levels, without those a transform outside them exited (core's
    ``levels.pop`` exits the levels left active inside the one it exits); their tangents
    are dropped."""
    duals = _DUALS
    stack = duals.stack
    while stack and not duals.levels[stack[-1]].alive:
        lv = duals.levels.pop(stack.pop())
        drop_level_data(lv, lv.info.holders)
    return duals


class _DualInfo(DataInfo):
    """What a dual level keeps: the tensors given a tangent (weakly: exiting the level drops
    their tangents) and how current its views' tangents are (Note [Tangents of views])."""

    __slots__ = ("epoch", "stamps")

    def __init__(self):
        super().__init__("forward_ad")
        self.epoch = 0    # how many times a tangent shared by views was replaced
        self.stamps = {}  # id(view) -> (weakref to it, the epoch of its tangent, or _OWN/_LENT)

    def stamp(self, t):
        s = self.stamps.get(id(t))
        return s[1] if s is not None and s[0]() is t else None

    def current(self, view):
        s = self.stamp(view)
        return s is not None and (s < 0 or s == self.epoch)


_OWN = -1   # a view's own tangent, never derived from its parent's (make_dual's dual)
_LENT = -2  # and the caller's memory: the first in-place change copies it (func.jvp's)


_RESHAPE = REGISTRY["reshape"]
_INDEX_PUT = REGISTRY["index_put"]
below = _levels.below

UnpackedDualTensor = namedtuple("UnpackedDualTensor", ["primal", "tangent"])
UnpackedDualTensor.__doc__ = """What :func:`unpack_dual` returns: ``(primal, tangent)``.

``tangent`` is None when the tensor carries no tangent at the level asked for."""


# ------------------------------------------------------------------------------ levels
def enter_dual_level():
    """Enter a new dual level (nested in the active ones) and return it.

    Prefer the :func:`dual_level` context manager, which exits it for you.

    Returns
    -------
    int
        The new level: its depth among this thread's active transform levels (dual levels,
        vmaps, ..., Note [Levels] in ``ndgrad/core/levels.py``): 0 for the outermost, 1 for
        one nested in it, and so on.

    Examples
    --------
    >>> import ndgrad.forward_ad as fwAD
    >>> level = fwAD.enter_dual_level()
    >>> fwAD.exit_dual_level(level=level)
    """
    lv = _levels.push(_DUAL, _DualInfo())
    level = lv.depth
    duals = _duals()
    duals.stack.append(level)
    duals.levels[level] = lv
    return level


def exit_dual_level(*, level=None):
    """Exit the innermost dual level; the tangents of that level are dropped from every
    tensor.

    Parameters
    ----------
    level : int, optional
        The level to exit (default: the innermost); only the innermost one can be exited.

    Raises
    ------
    RuntimeError
        When no level is active, or ``level`` is not the innermost active level.

    Examples
    --------
    >>> import ndgrad, ndgrad.forward_ad as fwAD
    >>> level = fwAD.enter_dual_level()
    >>> x = fwAD.make_dual(ndgrad.ones(2), ndgrad.ones(2))
    >>> fwAD.exit_dual_level()
    >>> fwAD.unpack_dual(x).tangent is None
    True
    """
    duals = _duals()
    if not duals.stack:
        raise RuntimeError("exit_dual_level: no dual level is active in this thread (enter "
                           "one with `with ndgrad.forward_ad.dual_level():` or "
                           "enter_dual_level(); a dual level belongs to the thread that "
                           "entered it)")
    inner = duals.stack[-1]
    if level is None:
        level = inner
    if level != inner:
        raise RuntimeError(
            f"exit_dual_level: can only exit the innermost dual level, which is {inner}, but "
            f"level {level} was given; exit the levels nested in it first")
    lv = duals.levels[level]
    _levels.pop(lv)  # raises if a transform entered inside it is still active
    del duals.levels[level]
    drop_level_data(lv, lv.info.holders)
    duals.stack.pop()


class dual_level:
    """Context manager: enter a new dual level, exit it (dropping its tangents) on exit.

    ``with dual_level() as level:`` binds the level's number. Levels nest: tangents of an
    outer level are carried through the computations of an inner one, without confusion.

    Examples
    --------
    >>> import ndgrad, ndgrad.forward_ad as fwAD
    >>> with fwAD.dual_level() as level:
    ...     x = fwAD.make_dual(ndgrad.tensor(3.0), ndgrad.tensor(1.0))
    ...     fwAD.unpack_dual(x * x).tangent
    tensor(6.)
    >>> fwAD.unpack_dual(x).tangent is None  # outside its level, a tangent is gone
    True
    """

    def __enter__(self):
        self.level = enter_dual_level()
        return self.level

    def __exit__(self, *exc):
        exit_dual_level(level=self.level)
        return False


# ------------------------------------------------------------------------------ tangents
def _tangent(a, lv):
    return level_data(a, lv)


def _set_tangent(t, lv, tangent, own=False):
    """Give ``t`` its tangent at ``lv``; a view's is current now, or its own (``own``: it is
    never derived from its parent's, Note [Tangents of views])."""
    info = lv.info
    set_level_data(t, lv, tangent, info.holders)
    if own or info.epoch:
        m = t._meta
        if m.base is not None:
            info.stamps[id(t)] = (weakref.ref(t), _OWN if own else info.epoch)


def _input_tangent(a, lv):
    """``a``'s tangent at level ``lv``; for a view made before its base got one, or whose
    tangent is stale (Note [Tangents of views]), derived from its parent's through its view
    op (so the two share memory from now on)."""
    t = _tangent(a, lv)
    if t is not None and not lv.info.epoch:
        return t  # (no tangent shared by views was replaced at this level: all current)
    if not isinstance(a, Tensor):
        return None
    m = a._meta
    if m is None or m.base is None:
        return t
    if t is None:
        return _view_tangent(a, lv) if _tangent(m.base, lv) is not None else None
    if lv.info.current(a):
        return t
    parent, vop, extra, params, k = m.view_of  # a stale view's, from its parent's
    pt = _input_tangent(parent, lv)
    if pt is None:  # the parent has none: the view keeps its own (make_dual's)
        _set_tangent(a, lv, t)
        return t
    with below(lv):
        t = apply(vop, pt, *extra, **params)
    if k >= 0:
        t = t[k]
    _set_tangent(a, lv, t)
    return t


def _view_tangent(t, lv):
    """The tangent of view ``t`` at ``lv``, made from its base's (a zero tangent for the base
    when it has none) through the chain of view ops, so that they share memory."""
    if _tangent(t, lv) is not None:
        return _input_tangent(t, lv)  # (a stale one brought up to date)
    m = t._meta
    with below(lv):
        if m is None or m.base is None:
            tangent = TENSOR_F.zeros_like(t.detach())
        else:
            parent, vop, extra, params, k = m.view_of
            pt = _view_tangent(parent, lv)
            tangent = apply(vop, pt, *extra, **params)
            if k >= 0:
                tangent = tangent[k]
    _set_tangent(t, lv, tangent)
    return tangent


def _fit(tangent, out, who):
    """The rule's tangent as a Tensor of ``out``'s shape and dtype, with its own memory."""
    return fit_to(tangent, tuple(out.shape), out, who,
                  "the forward-mode rule returned a tangent", copy=True)


# ------------------------------------------------------------------------------ interpreter
class _DualInterpreter(DataInterpreter):
    """Forward mode's rules at a dual level (Note [Forward mode] in the module docstring);
    the skeleton is the data levels' (Note [Data levels] in core/data_level.py), with the
    tangents of views sharing memory (Note [Tangents of views])."""

    name = "dual"
    read = staticmethod(_input_tangent)
    store = staticmethod(_set_tangent)

    def propagate(self, lv, op, tangents, out, args, params):
        if op.jvp is None:
            raise NotImplementedError(
                f"{op.qualname} has no forward-mode rule, so an input carrying a tangent "
                f"cannot go through it: {op.notes.get('jvp', 'no jvp rule is declared')}")
        tangent = op.jvp(TENSOR_F, tangents, out, *args, **params)
        return (tangent,) if op.nout == 1 else tangent

    def function_rule(self, lv, cls, ctx, args, kwargs, tangents, outs):
        """Function ``cls``'s ``jvp`` for this level's tangents."""
        if cls.jvp is Function.jvp:
            raise NotImplementedError(
                f"{cls.__name__}: an input carries a forward-mode tangent (a dual level is "
                "active), so you must override the jvp static method of this custom "
                "ndgrad.autograd.Function: @staticmethod jvp(ctx, *tangents) returning the "
                "output tangents (save what it needs with ctx.save_for_forward).")
        # (the ctx's own class: vmap's per-element ctx runs the jvp per element)
        tangent = _jvp_of(ctx._forward_cls, ctx, tangents)
        tans = tangent if isinstance(tangent, (tuple, list)) else (tangent,)
        if len(tans) != len(outs):
            raise RuntimeError(
                f"{cls.__name__}.jvp returned {len(tans)} tangent(s), but forward returned "
                f"{len(outs)} output(s); return one tangent (or None) per output")
        return tans

    def zeros(self, tangent):
        return TENSOR_F.zeros_like(tangent)

    def fit(self, lv, out, tangent, who):
        return _fit(tangent, out, who)

    def write_inplace(self, lv, op, target, new, old, tangent):
        """The new tangent is written into the target's old tangent (Note [Tangents of
        views]): its views' tangents, which share its memory, follow."""
        with below(lv):
            apply_inplace(_INDEX_PUT, target, new, index=Ellipsis)
        if tangent is None:
            return target
        m = target._meta
        if old is None and m is not None and m.base is not None:
            old = _view_tangent(target, lv)  # a view: its base gets a tangent too
        if old is None:
            _set_tangent(target, lv, tangent)
            return target
        root = _root(target, lv)
        if not _holds(old, tangent) or lv.info.stamp(root) == _LENT:
            old = _promote(target, root, lv, tangent)
        with below(lv):
            apply_inplace(_INDEX_PUT, old, tangent, index=Ellipsis)
        return target


_DUAL = _DualInterpreter()


# Note [Tangents of views]
# ~~~~~~~~~~~~~~~~~~~~~~~~
# A view's tangent is its view op applied to its parent's tangent, so the two share memory,
# and an in-place change writes the new tangent into the old one's memory: the base's
# tangent and every view's follow, with no bookkeeping. That write is impossible when the
# new tangent is a value of a transform level the old one is not a value of: the tangent
# of ``y = v.clone()`` in ``jacfwd(f)`` is a clone of jacfwd's basis, a constant of the
# transforms outside; after ``y.sin_()`` under ``vmap(jacfwd(f))`` the new tangent is
# batched by the outer vmap, and under ``hessian(hessian(f))`` a value of the outer
# Hessian's grad level (vmap refused the write, the grad level called the basis a captured
# tensor; a zero tangent given to a base made without one is the same case under
# ``jacfwd(jacfwd(f))``). Then the tangent is promoted: the tangent of the target's root
# (the view, up its chain of parents that carry tangents, whose memory it shares) is
# replaced by a copy that is a value of every level the new tangent is a value of (``old +
# 0``, the zero made from the new tangent), the target's tangent is derived from it and
# written as before. The views of the root still hold the old memory, so the level's epoch
# moves on: a view's tangent set since is stamped with the epoch, and one with an older
# stamp is stale and derived again from its parent's where it is read (a view whose parent
# has no tangent keeps its own: ``make_dual``'s dual, a view of the user's tensor, is
# stamped as such). Until a level promotes a tangent, its epoch is 0 and reading a tangent
# costs one comparison more.
def _levels_of(t):
    """The transform levels ``t`` is a value of (those that wrap it), innermost first."""
    found = []
    lv = t._level
    while lv is not None:
        found.append(lv)
        t = t._value
        lv = t._level
    return found


def _holds(old, new):
    """Whether ``new`` can be written into ``old``: ``old`` is a value of every transform
    level ``new`` is a value of."""
    if new._level is None:
        return True
    have = _levels_of(old)
    for lv in _levels_of(new):
        for h in have:
            if h is lv:
                break
        else:
            return False
    return True


def _root(t, lv):
    """The tensor whose tangent ``t``'s shares memory with: up ``t``'s chain of views while
    the parent has a tangent and the view's is not its own."""
    info = lv.info
    while True:
        m = t._meta
        if m is None or m.base is None:
            return t
        s = info.stamp(t)
        if s is not None and s < 0:
            return t
        parent = m.view_of[0]
        if _input_tangent(parent, lv) is None:
            return t
        t = parent


def _promote(target, root, lv, like):
    """Replace ``root``'s tangent, which ``target``'s shares, by a copy that can hold
    ``like`` and is the level's own, and give ``target`` its tangent derived from it (Note
    [Tangents of views])."""
    info = lv.info
    old = _input_tangent(root, lv)
    with below(lv):
        new = old + TENSOR_F.sum(TENSOR_F.zeros_like(like))  # old's values, like's levels
        if new.dtype != old.dtype:
            new = TENSOR_F.astype(new, old.dtype)
    info.epoch += 1
    _set_tangent(root, lv, new, own=True)  # (a root that is a view has its own tangent)
    return new if root is target else _input_tangent(target, lv)


def lend(dual, level):
    """Mark the tangent of ``dual`` (made by :func:`make_dual` at ``level``) as the caller's
    memory: an in-place change of ``dual`` or its views writes a copy, never the caller's
    tangent (``func.jvp``'s, and jacfwd's basis: Note [Tangents of views])."""
    lv = _duals().levels[level]
    lv.info.stamps[id(dual)] = (weakref.ref(dual), _LENT)
    return dual


def _jvp_of(cls, ctx, tangents):
    ctx._fn_in_jvp = True
    try:
        return cls.jvp(ctx, *tangents)
    except _levels.HiddenValueError as e:  # (Note [A level's values below it] in core/levels.py)
        e.in_function(cls, "jvp", ())
        raise
    finally:
        ctx._fn_in_jvp = False


# ------------------------------------------------------------------------------ public
def _resolve(level, who):
    stack = _duals().stack
    if level is None:
        if not stack:
            raise RuntimeError(
                f"{who}: no dual level is active in this thread; enter one first, e.g. "
                "`with ndgrad.forward_ad.dual_level():` (a dual level belongs to the thread "
                "that entered it)")
        return stack[-1]
    if level not in stack:
        raise RuntimeError(f"{who}: level {level} is not an active dual level of this thread "
                           f"(active: {list(stack)})")
    return level


def _identity_view(t, lv):
    """A view of ``t`` (same data, history through a view op, version counter) that carries
    ``t``'s tangents of every level but ``lv``."""
    with below(lv):
        return apply(_RESHAPE, t, shape=tuple(t.shape))


def make_dual(tensor, tangent, level=None):
    """A view of ``tensor`` that carries ``tangent`` at a dual level.

    Parameters
    ----------
    tensor : Tensor
        The primal, of a floating or complex dtype. The result shares its data and its
        history (gradients flow back to ``tensor``) and keeps its tangents of other levels.
    tangent : Tensor
        The direction: same shape and device as ``tensor``; a floating tangent for a
        floating primal (cast to its dtype), floating or complex for a complex one.
    level : int, optional
        The level (default: the innermost active one).

    Returns
    -------
    Tensor

    Raises
    ------
    RuntimeError
        No active level (or ``level`` is not active), or shapes or devices differ.
    TypeError
        ``tensor`` or ``tangent`` is not a Tensor.
    ValueError
        A dtype that is not floating or complex, or a complex tangent for a real primal.

    Examples
    --------
    >>> import ndgrad, ndgrad.forward_ad as fwAD
    >>> with fwAD.dual_level():
    ...     x = fwAD.make_dual(ndgrad.tensor([1.0, 2.0]), ndgrad.tensor([1.0, 2.0]))
    ...     fwAD.unpack_dual(ndgrad.sin(x)).tangent  # cos(x) * [1, 2]
    tensor([ 0.54030231, -0.83229367])
    """
    level = _resolve(level, "make_dual")
    lv = _duals().levels[level]
    if not isinstance(tensor, Tensor):
        raise TypeError(f"make_dual: expected the primal to be a Tensor, got "
                        f"{type(tensor).__name__}")
    if not isinstance(tangent, Tensor):
        raise TypeError(f"make_dual: expected the tangent to be a Tensor, got "
                        f"{type(tangent).__name__}")
    pk, tk = tensor.dtype.kind, tangent.dtype.kind
    if not is_differentiable_dtype(tensor.dtype):
        raise ValueError(f"make_dual: expected the primal to be floating point or complex, but "
                         f"got {tensor.dtype}")
    if not is_differentiable_dtype(tangent.dtype):
        raise ValueError(f"make_dual: expected the tangent to be floating point or complex, "
                         f"but got {tangent.dtype} (primal: {tensor.dtype})")
    if tk == "c" and pk != "c":
        raise ValueError(f"make_dual: a complex tangent ({tangent.dtype}) for a real primal "
                         f"({tensor.dtype}); use a real tangent, or a complex primal")
    if tangent.shape != tensor.shape:
        raise RuntimeError(f"make_dual: the tangent has shape {list(tangent.shape)} but the "
                           f"primal has shape {list(tensor.shape)}; they must be the same")
    if tangent.device != tensor.device:
        raise RuntimeError(f"make_dual: the tangent is on {tangent.device} but the primal is "
                           f"on {tensor.device}; they must be on the same device")
    own = tensor._level
    if own is not None and own.alive and own.depth > lv.depth:
        raise RuntimeError(
            f"make_dual: the primal is a value of {own!r}, entered inside dual level {level}; "
            "a tangent of the outer level cannot follow it through that transform. Make the "
            "dual tensor before entering the inner transform, or enter the dual level inside "
            "it.")
    if tangent.dtype != tensor.dtype:
        tangent = tangent.astype(tensor.dtype)
    dual = _identity_view(tensor, lv)
    _set_tangent(dual, lv, tangent, own=True)
    return dual


def unpack_dual(tensor, level=None):
    """Split a tensor into its primal and its tangent at a dual level.

    Parameters
    ----------
    tensor : Tensor
    level : int, optional
        The level (default: the innermost active one). With no active level, or at a level
        that was exited, the tangent is None.

    Returns
    -------
    UnpackedDualTensor
        ``(primal, tangent)``: ``primal`` shares ``tensor``'s data and history but not its
        tangent at ``level`` (it keeps those of other levels); ``tangent`` is None where
        there is none.

    Examples
    --------
    >>> import ndgrad, ndgrad.forward_ad as fwAD
    >>> with fwAD.dual_level():
    ...     x = fwAD.make_dual(ndgrad.tensor(2.0), ndgrad.tensor(1.0))
    ...     primal, tangent = fwAD.unpack_dual(x ** 3)
    >>> primal, tangent
    (tensor(8.), tensor(12.))
    """
    if not isinstance(tensor, Tensor):
        raise TypeError(f"unpack_dual: expected a Tensor, got {type(tensor).__name__}")
    duals = _duals()
    if level is None:
        if not duals.stack:
            return UnpackedDualTensor(tensor, None)
        level = duals.stack[-1]
    elif level not in duals.stack:
        return UnpackedDualTensor(tensor, None)
    lv = duals.levels[level]
    tangent = _input_tangent(tensor, lv)
    if tangent is None:
        return UnpackedDualTensor(tensor, None)
    return UnpackedDualTensor(_identity_view(tensor, lv), tangent)
