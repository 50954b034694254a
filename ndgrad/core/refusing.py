"""The data levels a custom Function's forward runs below, made to refuse the values of theirs
that the forward did not receive (Note [Data levels below a Function]).

Note [Data levels below a Function]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
A Function's forward and setup_context run one level below the transforms processing it
(Note [Functions under transforms] in core/function.py), and a value of a hidden level that
they read from a closure, a global or an attribute is a user error (Note [A level's values
below it] in core/levels.py). A level whose values are Tensor subclasses (vmap, func.grad)
meets such a value where an operation unwraps it. A level that keeps its data on plain
tensors (``keeps_tensor_data``: a dual level's tangent, a jet's series, the Forward
Laplacian's gradients, sparsity's dependencies) cannot: its values are plain tensors, and
``dispatch.apply`` does not look at a hidden level's data, so the forward computed with the
value and dropped its tangent (``c * x`` with ``x`` captured gave ``jvp`` 3, not 6, for
``x = 3``). Looking at every tensor's data on the hot path would slow every operation.

So while a forward runs (function.py's ``_run``), each such level of this thread that is
hidden is visible again, with this module's :class:`Refusing` interpreter standing in for its
own: an operation meeting one of the level's values reaches it, and it raises
HiddenValueError unless the value is one the Function received (one of the inputs of
``apply``, or a view of one, at any depth), the same error as a hidden grad or vmap level's
value gives; otherwise it runs the operation one level down, as hidden, so the forward
computes as before. Functions called inside the forward add their own inputs while they run
(a Function's forward may read what the Function around it received). A value returned as
it was read (``return x``) meets no operation, so the outputs are checked the same way
(``refuse_returned``; the level's rule would have given it the Function's tangent,
replacing its own). The cost is paid
only by operations that meet the level's values inside a forward below it (one more
dispatch each) and one read of ``levels.STACK`` per Function call; ``dispatch.apply`` and the
levels' own interpreters are unchanged. A Function's ``jvp`` and ``backward`` are not
guarded: a dual level's jvp reads the primal values of its level, which it may.
"""

from __future__ import annotations

from . import levels as _levels
from .dispatch import apply
from .inplace import apply_inplace
from .tensor import Tensor

__all__ = ["Refusing", "refuse_hidden", "refuse_returned", "restore"]

_hide, _unhide = _levels.hide, _levels.unhide


class Refusing(_levels.Interpreter):
    """Stands in for a hidden data level's interpreter while a Function's forward runs below
    it (Note [Data levels below a Function]): refuses the level's values the Function did not
    receive, and runs everything else one level down."""

    keeps_tensor_data = True

    def __init__(self, inner, run_function):
        self.inner = inner
        self.name = inner.name
        self.run_function = run_function
        self.received = []  # one {id: tensor} per Function whose forward runs below the level

    def _check(self, lv, values):
        for v in (values.values() if type(values) is dict else values):
            if isinstance(v, Tensor):
                if _belongs(v, lv) and not self._received(v):
                    raise _levels.HiddenValueError(lv)
            elif type(v) in (list, tuple, dict):
                self._check(lv, v)

    def _received(self, t):
        while True:
            for got in self.received:
                if got.get(id(t)) is t:
                    return True
            m = t._meta
            if m is None or m.view_of is None:
                return False
            t = m.view_of[0]  # a view of a received tensor is received too

    def process(self, lv, op, args, params):
        self._check(lv, args)
        if params:
            self._check(lv, params)
        hid = _hide(lv)
        try:
            return apply(op, *args, **params)
        finally:
            _unhide(hid)

    def process_inplace(self, lv, op, target, args, params):
        self._check(lv, (target,) + tuple(args))
        self._check(lv, params)
        with _levels.below(lv):
            return apply_inplace(op, target, *args, **params)

    def process_function(self, lv, cls, args, kwargs, needs):
        self._check(lv, args)
        self._check(lv, kwargs)
        with _levels.below(lv):
            return self.run_function(cls, args, kwargs, needs)


def _belongs(t, lv):
    """Whether ``t`` carries level ``lv``'s data, or its view base does (as
    ``tensor._level_of`` finds a level)."""
    m = t._meta
    if m is None:
        return False
    if m.level_data and lv in m.level_data:
        return True
    b = m.base
    return b is not None and b._meta is not None and bool(b._meta.level_data) and \
        lv in b._meta.level_data


def refuse_hidden(args, kwargs, run_function):
    """Before a Function's forward: this thread's hidden data levels refuse what it did not
    receive (``args``, ``kwargs``); returns what :func:`restore` needs. ``run_function`` is
    ``function.apply_function`` (a layer above this one)."""
    found = _levels.hidden_data_levels()
    if not found:
        return found
    got = {}
    for a in args:
        if isinstance(a, Tensor):
            got[id(a)] = a
    for a in kwargs.values():
        if isinstance(a, Tensor):
            got[id(a)] = a
    shown = []
    for lv in found:
        it = lv.interpreter
        if type(it) is not Refusing:
            it = lv.interpreter = Refusing(it, run_function)
        it.received.append(got)
        shown.append((lv, lv.hidden))
        lv.hidden = 0
        _levels.VISIBLE.insert(0, 1)  # (Note [Levels per thread]: one 1 per visible level)
    return shown


def refuse_returned(shown, output):
    """After the forward: an output that is a value of a level :func:`refuse_hidden` showed,
    which the Function did not receive, was returned as it was read (``return x``, with
    ``x`` captured), meeting no operation: refused too (the level's rule would give it the
    Function's tangent, replacing its own)."""
    for o in (output if type(output) is tuple else (output,)):
        if isinstance(o, Tensor):
            for lv, _ in shown:
                if _belongs(o, lv) and not lv.interpreter._received(o):
                    raise _levels.HiddenValueError(lv)


def restore(shown):
    """After the forward: the levels :func:`refuse_hidden` showed are hidden again as they
    were, with their own interpreters once no forward runs below them."""
    for lv, hidden in reversed(shown):
        if not lv.hidden and lv.alive:
            _levels.VISIBLE.pop(0)
        lv.hidden = hidden
        it = lv.interpreter
        it.received.pop()
        if not it.received:
            lv.interpreter = it.inner
