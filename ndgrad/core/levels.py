"""Transform levels: the one stack shared by forward mode and vmap.

Note [Levels]
~~~~~~~~~~~~~
A transform that changes what every op does (a dual level of ``ndgrad.forward_ad``, a
``vmap``) pushes a :class:`Level` on :data:`STACK` when it starts and pops it when it ends.
Its ``depth`` (its index in the stack) orders it against the others: a level entered inside
another is deeper. While any level is active, ``dispatch.apply`` (and ``apply_inplace``,
``Function.apply``) hand every call to :func:`apply_hook`, which asks each transform kind
for the innermost (deepest) of its levels among the call's inputs and hands the call to that
kind's handler, at that level. The handler does its work one level down, by calling
``apply`` again on the inputs as the outer levels see them (a dual level hides its
tangents, vmap unwraps its batched tensors), which finds the next level, and so on: the
recursive scheme of JAX's autodidax (``find_top_trace``). So transforms of different kinds
compose in the order they were entered, ``jvp(vmap(f))`` as well as ``vmap(jvp(f))``, and
none is confused by another's values.

The transforms register here (``register_kind``); core never imports them. With no level
active, the hot path pays one list read per op. A kind claims a value only through a Tensor
subclass (vmap's batched tensors), a Tensor's ``_meta`` (a dual level's tangents), a
container, or an op parameter: so ``dispatch.apply`` skips the hook for a call on plain
Tensors without ``_meta`` and no parameters, most of the physical calls a transform makes.
"""

from __future__ import annotations

__all__ = ["Level", "STACK", "ACTIVE", "VMAP_ACTIVE", "NOT_HANDLED", "push", "pop",
           "register_kind", "apply_hook", "inplace_hook", "function_hook"]


class Level:
    """One active transform level: its ``kind`` ("dual", "vmap"), ``depth`` in :data:`STACK`,
    whether it is still ``alive``, and the transform's own ``info`` (vmap: batch size and
    randomness)."""

    __slots__ = ("kind", "depth", "alive", "info")

    def __init__(self, kind, depth, info):
        self.kind = kind
        self.depth = depth
        self.alive = True
        self.info = info

    def __repr__(self):
        return f"<{self.kind} level {self.depth}>"


STACK: list[Level] = []
ACTIVE = [0]       # len(STACK): the hot path's one read
VMAP_ACTIVE = [0]  # how many vmap levels are active (the engine then runs formulas on Tensors)
NOT_HANDLED = object()  # a hook's answer "no input belongs to an active level"

# kind name -> handler object with:
#   innermost(args, params) -> depth of the deepest level of this kind among the inputs, or -1
#   apply(level, op, args, params) -> outputs
#   apply_inplace(level, op, target, args, params) -> target
#   apply_function(level, cls, args, kwargs) -> outputs
_KINDS: dict = {}


def register_kind(kind, handler):
    _KINDS[kind] = handler


def push(kind, info=None):
    """Enter a new level of ``kind`` (innermost); return it."""
    level = Level(kind, len(STACK), info)
    STACK.append(level)
    ACTIVE[0] = len(STACK)
    if kind == "vmap":
        VMAP_ACTIVE[0] += 1
    return level


def pop(level):
    """Leave ``level``, which must be the innermost one."""
    if not STACK or STACK[-1] is not level:
        inner = STACK[-1] if STACK else None
        raise RuntimeError(
            f"cannot exit {level!r}: the innermost active transform level is {inner!r}; "
            "transforms must be exited in the reverse order they were entered")
    STACK.pop()
    level.alive = False
    ACTIVE[0] = len(STACK)
    if level.kind == "vmap":
        VMAP_ACTIVE[0] -= 1


def _top(args, params):
    best = -1
    handler = None
    for h in _KINDS.values():
        d = h.innermost(args, params)
        if d > best:
            best = d
            handler = h
    return best, handler


def apply_hook(op, args, params):
    """``dispatch.apply``'s hook (Note [Levels])."""
    depth, handler = _top(args, params)
    if handler is None:
        return NOT_HANDLED
    return handler.apply(STACK[depth], op, args, params)


def inplace_hook(op, target, args, params):
    """``dispatch.apply_inplace``'s hook."""
    depth, handler = _top((target,) + args, params)
    if handler is None:
        return NOT_HANDLED
    return handler.apply_inplace(STACK[depth], op, target, args, params)


def function_hook(cls, args, kwargs):
    """``Function.apply``'s hook."""
    depth, handler = _top(args, kwargs)
    if handler is None:
        return NOT_HANDLED
    return handler.apply_function(STACK[depth], cls, args, kwargs)
