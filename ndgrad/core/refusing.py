"""The data levels a custom Function's forward runs below, made to refuse the values of theirs
that the forward did not receive (Note [Data levels below a Function]): the refusing state of
a level and its check; the data levels' interpreters consult it.

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
hidden is visible again in a refusing state: its ``Level.received`` lists, per Function
whose forward runs below it, the tensors that Function received. An operation meeting one
of the level's values reaches the level's interpreter, whose skeleton (``DataInterpreter``,
Note [Data levels] in core/data_level.py) then only checks (:func:`check_received`): it
raises HiddenValueError unless the value is one a Function received (one of the inputs of
``apply``, or a view of one, at any depth), the same error as a hidden grad or vmap level's
value gives, and otherwise runs the operation one level down, as hidden, so the forward
computes as before. Functions called inside the forward add their own inputs while they run
(a Function's forward may read what the Function around it received). A value returned as
it was read (``return x``) meets no operation, so the outputs are checked the same way
(``refuse_returned``; the level's rule would have given it the Function's tangent,
replacing its own). The cost is paid
only by operations that meet the level's values inside a forward below it (one more
dispatch each), one read of ``levels.STACK`` per Function call and one attribute read per
operation at a data level; ``dispatch.apply`` is unchanged. A Function's ``jvp`` and
``backward`` are not guarded: a dual level's jvp reads the primal values of its level, which it may.
"""

from __future__ import annotations

from . import levels as _levels
from .tensor import Tensor

__all__ = ["check_received", "refuse_hidden", "refuse_returned", "restore"]


def check_received(lv, values):
    """Raise HiddenValueError for a value of data level ``lv`` among ``values`` (a sequence
    or a dict, searched into lists, tuples and dicts) that no Function whose forward runs
    below ``lv`` received (Note [Data levels below a Function]); a data level's interpreter
    calls it while ``lv.received`` is set, then runs the operation one level down."""
    for v in (values.values() if type(values) is dict else values):
        if isinstance(v, Tensor):
            if _belongs(v, lv) and not _received(lv, v):
                raise _levels.HiddenValueError(lv)
        elif type(v) in (list, tuple, dict):
            check_received(lv, v)


def _received(lv, t):
    while True:
        for got in lv.received:
            if got.get(id(t)) is t:
                return True
        m = t._meta
        if m is None or m.view_of is None:
            return False
        t = m.view_of[0]  # a view of a received tensor is received too


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


def refuse_hidden(args, kwargs):
    """Before a Function's forward: this thread's hidden data levels refuse what it did not
    receive (``args``, ``kwargs``); returns what :func:`restore` needs."""
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
        if lv.received is None:
            lv.received = []
        lv.received.append(got)
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
                if _belongs(o, lv) and not _received(lv, o):
                    raise _levels.HiddenValueError(lv)


def restore(shown):
    """After the forward: the levels :func:`refuse_hidden` showed are hidden again as they
    were; a level stops refusing once no forward runs below it."""
    for lv, hidden in reversed(shown):
        if not lv.hidden and lv.alive:
            _levels.VISIBLE.pop(0)
        lv.hidden = hidden
        lv.received.pop()
        if not lv.received:
            lv.received = None
