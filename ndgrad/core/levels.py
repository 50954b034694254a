"""Transform levels: the one stack every transform shares, and the interface a transform
implements.

Note [Levels]
~~~~~~~~~~~~~
A transform that changes what operations do (a dual level of ``ndgrad.forward_ad``, a
``vmap``, a ``func.grad``/``vjp``) pushes a :class:`Level` on :data:`STACK` for its duration.
Its ``depth`` orders it against the others: a level entered inside another is deeper. Each
level has an :class:`Interpreter`, the transform's rules for one operation:

* ``process(level, op, args, params)``: run ``op`` where some input is a value of ``level``;
* ``process_inplace(level, op, target, args, params)``: the same for an in-place op;
* ``process_function(level, cls, args, kwargs, needs)``: a custom ``autograd.Function``;
* ``random(kind, shape, dtype, device, requires_grad)``: a random draw (vmap's randomness).

A value belongs to a level either by being one of its Tensor subclasses (vmap's batched
tensors, ``func.grad``'s tracked tensors: each wraps the value one level down as ``_value``
and names its level as ``_level``) or by carrying per-tensor data for it (a dual level's
tangent, in ``_meta.level_data``). ``dispatch.apply`` hands an operation to the interpreter of
the deepest *visible* level among its inputs (autodidax's ``find_top_trace``, functorch's
interpreter stack). The interpreter does its work one level down: it calls ``apply`` again on
the values as the levels below see them (unwrapped), inside :class:`below`, which hides its
own level and the deeper ones, so the inner call finds the next level down, and so on. So
transforms compose in the order they were entered, ``jvp(vmap(f))`` as well as
``vmap(jvp(f))``, and no level's values or data are confused with another's.

Nothing here names a transform: the transforms (``ndgrad.functional``,
``ndgrad.forward_ad``) bring their interpreters; core calls them through this interface. With
no level visible, the hot path pays one list read per operation (:data:`VISIBLE`).
"""

from __future__ import annotations

__all__ = ["Interpreter", "Level", "STACK", "VISIBLE", "push", "pop", "below",
           "visible_levels", "lift_created"]


class Interpreter:
    """A transform's rules for one operation at one of its levels (Note [Levels])."""

    name = "transform"

    def process(self, level, op, args, params):  # pragma: no cover - interface
        raise NotImplementedError

    def process_inplace(self, level, op, target, args, params):  # pragma: no cover
        raise NotImplementedError

    def process_function(self, level, cls, args, kwargs, needs):  # pragma: no cover
        """Run custom Function ``cls``: returns ``(outputs, ctx)``; ``needs`` says which
        inputs the levels above need a gradient for."""
        raise NotImplementedError

    # A transform that keeps its data on plain tensors (``_meta.level_data``: forward mode's
    # tangents) sets this; a node then keeps its saved outputs' metadata objects, so data
    # attached after the node was recorded is found when an output is rebuilt.
    keeps_tensor_data = False

    # A transform that changes random draws (vmap's ``randomness``) sets this and defines
    # ``random(kind, shape, dtype, device, requires_grad)``.
    transforms_random = False

    def lift(self, level, t):
        """A tensor made (by a creation function) while ``level`` is visible, as a value of
        ``level`` (autodidax's ``pure``); by default it stays a constant, as it is."""
        return t


class Level:
    """One active transform level: its ``interpreter``, ``depth`` in :data:`STACK`, whether
    it is still ``alive`` and ``hidden`` (inside :class:`below`), and the transform's own
    ``info``."""

    __slots__ = ("interpreter", "depth", "alive", "hidden", "info")

    def __init__(self, interpreter, depth, info):
        self.interpreter = interpreter
        self.depth = depth
        self.alive = True
        self.hidden = 0
        self.info = info

    def __repr__(self):
        return f"<{self.interpreter.name} level {self.depth}>"


STACK: list[Level] = []
VISIBLE = [0]  # how many levels are alive and not hidden: the hot path's one read


def push(interpreter, info=None):
    """Enter a new level (the innermost); return it."""
    level = Level(interpreter, len(STACK), info)
    STACK.append(level)
    VISIBLE[0] += 1
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
    if not level.hidden:
        VISIBLE[0] -= 1


def hide(level):
    """Hide ``level`` and the levels deeper than it (one more time each); returns them, for
    :func:`unhide`. :class:`below` is the context-manager form; interpreters on their hot
    path call the pair directly."""
    hid = STACK[level.depth:]
    n = 0
    for lv in hid:
        if not lv.hidden:
            n += 1
        lv.hidden += 1
    VISIBLE[0] -= n
    return hid


def unhide(hid):
    n = 0
    for lv in hid:
        lv.hidden -= 1
        if not lv.hidden and lv.alive:
            n += 1
    VISIBLE[0] += n


class below:
    """Context manager: while it is active, ``level`` and the levels deeper than it are
    invisible to operations (an interpreter computing one level down, Note [Levels]).
    Levels entered inside it are visible."""

    __slots__ = ("level", "hid")

    def __init__(self, level):
        self.level = level

    def __enter__(self):
        self.hid = hide(self.level)
        return self

    def __exit__(self, *exc):
        unhide(self.hid)
        return False


def visible_levels():
    """The levels operations see now, outermost first."""
    return [lv for lv in STACK if not lv.hidden]


def data_levels():
    """Whether a level that keeps data on tensors (``keeps_tensor_data``) is active."""
    for lv in STACK:
        if lv.interpreter.keeps_tensor_data:
            return True
    return False


def lift_created(t, inside=None):
    """A freshly made tensor as the visible levels see it (:meth:`Interpreter.lift`), from
    the outermost level in; with ``inside``, ``t`` is already a value of that level and
    only the levels deeper than it lift it (a transform value's ``zeros_like``)."""
    for lv in STACK if inside is None else STACK[inside.depth + 1:]:
        if not lv.hidden:
            t = lv.interpreter.lift(lv, t)
    return t
