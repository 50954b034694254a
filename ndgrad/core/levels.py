"""Transform levels: the stack every transform shares (one per thread), and the interface a
transform implements.

Note [Levels]
~~~~~~~~~~~~~
A transform that changes what operations do (a dual level of ``ndgrad.forward_ad``, a
``vmap``, a ``func.grad``/``vjp``) pushes a :class:`Level` on its thread's stack for its
duration (Note [Levels per thread]). Its ``depth`` orders it against the others: a level
entered inside another is deeper. Each level has an :class:`Interpreter`, the transform's
rules for one operation:

* ``process(level, op, args, params)``: run ``op`` where some input is a value of ``level``;
* ``process_inplace(level, op, target, args, params)``: the same for an in-place op;
* ``process_function(level, cls, args, kwargs, needs)``: a custom ``autograd.Function``;
* ``random(kind, shape, dtype, device, requires_grad)``: a random draw (vmap's randomness).

The first three are written once per level pattern (the two Notes named below), in
``WrapperInterpreter`` and ``DataInterpreter``; a transform's interpreter subclasses one of
them and supplies its rules.

A value belongs to a level either by being one of its Tensor subclasses (vmap's batched
tensors, ``func.grad``'s tracked tensors: each wraps the value one level down as ``_value`` and
names its level as ``_level``, a ``WrapperTensor``: Note [Wrapper levels] in
core/wrapper_level.py) or by carrying per-tensor data for it (a dual level's tangent, a jet's
series, in ``_meta.level_data``: Note [Data levels] in core/data_level.py). ``dispatch.apply``
hands an operation to the interpreter of the deepest *visible* level among its inputs
(autodidax's ``find_top_trace``, functorch's interpreter stack). The interpreter does its work
one level down: it calls ``apply`` again on the values as the levels below see them
(unwrapped), inside :class:`below`, which hides its own level and the deeper ones, so the inner
call finds the next level down, and so on. So transforms compose in the order they were
entered, ``jvp(vmap(f))`` as well as ``vmap(jvp(f))``, and no level's values or data are
confused with another's.

Nothing here names a transform: the transforms (``ndgrad.functional``,
``ndgrad.forward_ad``) bring their interpreters; core calls them through this interface. With
no level visible, the hot path pays one list read per operation (:data:`VISIBLE`).

Note [Levels per thread]
~~~~~~~~~~~~~~~~~~~~~~~~
A level belongs to the thread that entered it, as grad mode does (core/grad_mode.py) and as
functorch's interpreter stack does: each thread has its own stack (``_HERE.stack``), its
levels' depths count from 0 in that thread, and an operation in one thread never sees the
levels of another, so two threads may run ``func.grad``, ``vmap``, ``jet``, dual levels of
``ndgrad.forward_ad``, ... at the same time. (PyTorch's own forward-AD levels are process
wide, but PyTorch allows only one of them at a time, so two threads cannot both be inside
one; ndgrad's dual levels are transform levels like the others, and nest, so they are per
thread too.)

The hot path still reads one global, :data:`VISIBLE`: a list holding one 1 per visible
level of any thread, then a final 0, so ``VISIBLE[0]`` is true exactly while some thread
has a visible level. :func:`push`, :func:`pop`, :func:`hide` and :func:`unhide` change it
by one ``VISIBLE.insert(0, 1)`` or ``VISIBLE.pop(0)`` per level: a single call into the
list, which no other thread interrupts, so no lock is needed (``x[0] += 1`` is not atomic;
a hide/unhide pair, which a level pays per operation it runs, took 0.45 us with the single
thread's counter, takes 0.6 us with this list and took 1.3 us with a lock around a counter,
one loaded machine, timeit). While it
is 0, the common case, ``dispatch.apply`` reads no thread-local; while another thread's
levels make it true, an operation here finds no level among its (plain) inputs and runs
as usual, after a short look at them. :data:`STACK` holds every thread's active levels,
for the readers that ask only whether any level exists (``graph.record``,
``saved.SavedOutput``); what a thread's levels are is :func:`active_levels`.

A value of one thread's level that reaches another thread (a tensor carrying the tangent of
a dual level entered elsewhere, a transform's value kept in a shared object) is refused
where an interpreter would run it (:func:`hide`), with a message that names the level: its
tangent or its batch cannot be followed there, and ignoring it would be silently wrong.
"""

from __future__ import annotations

import threading

__all__ = ["Interpreter", "Level", "STACK", "VISIBLE", "push", "pop", "below",
           "visible_levels", "lift_created", "active_levels", "HiddenValueError"]


class Interpreter:
    """A transform's rules for one operation at one of its levels (Note [Levels]).

    The three ``process`` methods of the interface are written once per level pattern, not
    here: ``WrapperInterpreter`` (core/wrapper_level.py) and ``DataInterpreter``
    (core/data_level.py) each own them, and a transform subclasses one of the two."""

    name = "transform"

    # A transform that keeps its data on plain tensors (``_meta.level_data``: forward mode's
    # tangents) sets this; a node then keeps its saved outputs' metadata objects, so data
    # attached after the node was recorded is found when an output is rebuilt.
    keeps_tensor_data = False

    # A level whose data is a value's own, not a derivative (compile's tracer: the program
    # value a tensor holds), sets this: ``detach()`` keeps it (it cuts the graph, not the
    # computation); a tangent or a series is dropped by detach, as PyTorch drops a tangent.
    keeps_data_detached = False

    # A level whose values are not computed while it runs (compile's tracer) sets this: a
    # formula that picks between exact branches by the values takes the value-independent one
    # (core/ops/batching.values_unknown).
    values_unknown = False

    # A transform that changes random draws (vmap's ``randomness``) sets this and defines
    # ``random(kind, shape, dtype, device, requires_grad)``.
    transforms_random = False

    def refuse_conversion(self, level, t, what):
        """Called before ``t``, which carries data of ``level``, is read as a Python or NumPy
        value (``what``: ``"item()"``, ``"numpy()"``, ...); a level whose values have no
        value of their own yet (compile's tracer) raises. By default reading is fine."""

    def lift(self, level, t):
        """A tensor made (by a creation function) while ``level`` is visible, as a value of
        ``level`` (autodidax's ``pure``); by default it stays a constant, as it is."""
        return t


class Level:
    """One active transform level: its ``interpreter``, ``depth`` in :data:`STACK`, whether
    it is still ``alive`` and ``hidden`` (inside :class:`below`), the transform's own
    ``info``, and what it ``received`` while it refuses (core/refusing.py)."""

    __slots__ = ("interpreter", "depth", "alive", "hidden", "info", "received")

    def __init__(self, interpreter, depth, info):
        self.interpreter = interpreter
        self.depth = depth
        self.alive = True
        self.hidden = 0
        self.info = info
        # while a custom Function's forward runs below this (data) level: the tensors each
        # such Function received, and the level refuses the others (Note [Data levels below
        # a Function] in core/refusing.py); None otherwise
        self.received = None

    def __repr__(self):
        return f"<{self.interpreter.name} level {self.depth}>"


class _Here(threading.local):
    """This thread's levels (Note [Levels per thread])."""

    def __init__(self):
        self.stack = []  # this thread's active levels, outermost first


_HERE = _Here()
STACK: list[Level] = []  # every thread's active levels (any order): does any level exist?
# The hot path's read (Note [Levels per thread]): one 1 per visible level of any thread,
# then a final 0, so VISIBLE[0] is true exactly while some level is visible somewhere.
VISIBLE = [0]
_show = VISIBLE.insert  # _show(0, 1): one more visible level (atomic: no lock needed)
_unshow = VISIBLE.pop   # _unshow(0): one fewer


def active_levels():
    """This thread's active levels, outermost first (a copy)."""
    return list(_HERE.stack)


def push(interpreter, info=None):
    """Enter a new level (this thread's innermost); return it."""
    stack = _HERE.stack
    level = Level(interpreter, len(stack), info)
    stack.append(level)
    STACK.append(level)
    _show(0, 1)
    return level


def pop(level):
    """Leave ``level``, which must be this thread's innermost one."""
    stack = _HERE.stack
    if not stack or stack[-1] is not level:
        inner = stack[-1] if stack else None
        if level in stack:
            # levels entered inside it are still active (one was never exited): they are
            # exited with it, so that this thread's later transforms start clean
            while stack[-1] is not level:
                _leave(stack.pop())
            _leave(stack.pop())
            raise RuntimeError(
                f"cannot exit {level!r} cleanly: {inner!r}, entered inside it, is still "
                "active (transforms must be exited in the reverse order they were entered); "
                "both are exited now")
        if not level.alive:
            raise RuntimeError(f"cannot exit {level!r}: it was exited already")
        raise RuntimeError(
            f"cannot exit {level!r}: it was entered in another thread; a transform level "
            "belongs to the thread that entered it (Note [Levels per thread])")
    stack.pop()
    _leave(level)


def _leave(level):
    level.alive = False
    STACK.remove(level)
    if not level.hidden:
        _unshow(0)


# Note [A level's values below it]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# What an interpreter runs one level down sees the values one level down only: the
# operations it hands down are given them (Note [Levels]). User code runs there too: a
# custom Function's forward and setup_context (Note [Functions under transforms] in
# core/function.py), and its backward or jvp where a level runs them one level down (vmap's
# per-element rules, a dual level's jvp). A value of the hidden level that such code reads
# from elsewhere (a closure, a global, an attribute) cannot be followed there: its
# derivative or its batch would be lost (before the levels hid it, func.grad of such a
# Function was silently wrong). So an operation that meets one raises HiddenValueError
# (dispatch's _alive_values), a user error, as torch.func's rule says: a Function receives
# the tensors it uses through its inputs. The innermost Function's forward or
# setup_context it passes through names itself in the message (core/function.py's _run), as
# do its backward and jvp where a level runs them one level down (vmap's _per_element,
# forward_ad's _jvp_of); elsewhere the message names the kinds of code that can do it. A
# level that keeps its data on plain tensors (forward mode) is not seen by the operations
# while hidden: while a Function's forward runs below it, it is shown again in a refusing
# state, to give the same error (Note [Data levels below a Function] in core/refusing.py).
class HiddenValueError(RuntimeError):
    """A value of the hidden transform level ``level`` reached an operation below it (Note
    [A level's values below it]); :meth:`in_function` says which Function read it."""

    def __init__(self, level):
        self.level = level
        self.named = False
        super().__init__(self._text(
            "A custom autograd.Function's forward, setup_context, backward or jvp (or a "
            "custom_vjp or custom_jvp function or rule)", "Such code", "pass the tensor to it "
            "as an input (a Function receives the tensors it uses as arguments of its apply, "
            "and saves what backward needs with ctx.save_for_backward)"))

    def _text(self, who, runs, give):
        return (f"{who} used a tensor of the transform level {self.level!r} (a value inside "
                "a function given to ndgrad.func.grad, jvp, jacrev, jacfwd, hessian, vmap, "
                "jet, ... or of a forward_ad dual level) that it did not receive as an input. "
                f"{runs} runs one level below the transform, which cannot follow a tensor "
                "read there from a closure, a global or an attribute: its derivative or its "
                f"batch would be lost. Instead, {give}.")

    def in_function(self, cls, where, args):
        """Name the custom Function ``cls`` whose method ``where`` (``"forward"``,
        ``"setup_context"``, ``"backward"``, ``"jvp"``) this passes through, called with
        ``args`` (the Function's inputs; a rule's caller gives ``()``); only
        the innermost one names it, and the exception keeps the traceback of the operation
        that met the value. One of ndgrad's own Functions is named by what the user called
        (its ``vmap_loop(*args)``), where that can be said; otherwise the message stays."""
        if self.named:
            return
        self.named = True
        describe = getattr(cls, "vmap_loop", None)
        n = cls.__name__
        if describe is None and not cls.__module__.startswith("ndgrad."):
            self.args = (self._text(
                f"{n}.{where}", "A custom Function",
                f"pass the tensor to {n}.apply as an input" + _GIVE[where] + " (as torch.func "
                "asks of an autograd.Function: it receives the tensors it uses as inputs)"),)
        elif describe is not None and args:
            self.args = (self._text(describe(*args)[0], "It",
                                    "pass the tensor to it as an argument"),)


_GIVE = {"forward": ", and return its gradient from backward",
         "setup_context": "; setup_context then finds it among its inputs",
         "backward": ", and save it for backward with ctx.save_for_backward",
         "jvp": ", and save it for jvp with ctx.save_for_forward"}


def _foreign(level):
    raise RuntimeError(
        f"a value of {level!r}, a transform level entered in another thread, was used in an "
        "operation in this thread. Transform levels (func.grad, vmap, jet, forward_ad's dual "
        "levels, ...) belong to the thread that entered them, and their values (a tangent, a "
        "batch, a Taylor series) cannot be followed in another one: run the computation in "
        "the thread that entered the transform, or enter it in this thread "
        "(Note [Levels per thread]).")


def hide(level):
    """Hide ``level`` and the levels deeper than it (one more time each); returns them, for
    :func:`unhide`. :class:`below` is the context-manager form; interpreters on their hot
    path call the pair directly."""
    stack = _HERE.stack
    depth = level.depth
    if depth >= len(stack) or stack[depth] is not level:
        if level.alive:
            _foreign(level)
        return ()  # an exited level: its values are the values one level down already
    hid = stack[depth:]
    for lv in hid:
        if not lv.hidden:
            _unshow(0)
        lv.hidden += 1
    return hid


def unhide(hid):
    for lv in hid:
        lv.hidden -= 1
        if not lv.hidden and lv.alive:
            _show(0, 1)


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
    """This thread's levels that operations see now, outermost first."""
    out = []
    for lv in _HERE.stack:
        if not lv.hidden:
            out.append(lv)
    return out


def data_levels():
    """Whether a level that keeps data on tensors (``keeps_tensor_data``) is active in this
    thread."""
    for lv in _HERE.stack:
        if lv.interpreter.keeps_tensor_data:
            return True
    return False


def hidden_data_levels():
    """This thread's hidden levels that keep data on tensors (``keeps_tensor_data``): those
    a custom Function's forward runs below (Note [Data levels below a Function] in
    core/refusing.py)."""
    out = []
    for lv in _HERE.stack:
        if lv.hidden and lv.interpreter.keeps_tensor_data:
            out.append(lv)
    return out


def lift_created(t, inside=None):
    """A freshly made tensor as the visible levels see it (:meth:`Interpreter.lift`), from
    the outermost level in; with ``inside``, ``t`` is already a value of that level and
    only the levels deeper than it lift it (a transform value's ``zeros_like``)."""
    stack = _HERE.stack
    for lv in stack if inside is None else stack[inside.depth + 1:]:
        if not lv.hidden:
            t = lv.interpreter.lift(lv, t)
    return t
