"""In-place operations: the one protocol every level shares (Note [In-place operations]),
and how an in-place change of a view reaches its base's history (Note [In-place on views]
in core/views.py: PyTorch's CopySlices).

``apply_inplace(op, target, *args)`` is ``target <- op(target, *args)``: plain tensors go
through :func:`inplace` here; a transform level's values go to the level's interpreter
(``process_inplace``), which calls :func:`inplace` with its own write, one level down.
Custom Functions that modify their inputs (``ctx.mark_dirty``) use :func:`check_inplace`
and :func:`rebase`.
"""

from __future__ import annotations

import os
import sys

from .backend import NUMPY
from .dispatch import TENSOR_F, _alive_values, _VISIBLE, apply
from .grad_mode import STATE
from .graph import OpNode
from .saved import FREED
from .tensor import Tensor, owning_level
from .views import base_now_requires_grad, check_view_history, regenerate

__all__ = ["apply_inplace", "inplace", "check_inplace", "check_inplace_result", "rebase",
           "BEFORE_WRITE", "note_where", "ReadOnlyTargetError"]


def _write_back(view, new):
    """Record ``new`` (the new value of ``view``) up the view chain into the base; return
    the base's new value (recorded; its data is not the base's memory)."""
    child = new
    t = view
    while True:
        parent, vop, extra, params, k = t._meta.view_of
        if vop.scatter is None:
            raise RuntimeError(
                f"in-place operation on a view made by {vop.name}, which cannot be written "
                f"to: {vop.notes.get('scatter', 'it declares no scatter rule')}")
        pm = parent._meta
        if pm is not None and pm.base is not None:
            check_view_history(parent)
        pin = parent._stand_in(False)
        if k >= 0:
            child = vop.scatter(TENSOR_F, k, pin, child, *extra, **params)
        else:
            child = vop.scatter(TENSOR_F, pin, child, *extra, **params)
        if parent._meta is None or parent._meta.base is None:
            return child
        t = parent


def _rebase_base(base, new_base):
    """Point ``base``'s history at ``new_base``'s node (its data is already written)."""
    node = new_base._grad_fn
    if node is not None:
        _continue_history(base, new_base)
        _repoint_saved_output(node, new_base, base)


def _continue_history(target, new):
    """``target``'s history continues from ``new``'s node (so do its views')."""
    if not target._requires_grad:
        base_now_requires_grad(target)
    target._grad_fn = new._grad_fn
    target._output_nr = new._output_nr
    target._requires_grad = True


def _repoint_saved_output(node, result, target):
    """``result``'s node saved it as its output, and its value now lives in ``target``'s
    storage at ``target``'s new version: the saved output is that (so a later in-place
    change of ``target`` is detected)."""
    if type(node) is not OpNode:
        return
    so = node.saved_out
    if so is None or so is FREED or type(so.content) is tuple:
        return
    if so.content is result._saved_content():
        so.content = target._saved_content()
        so.counter = c = target._counter()
        so.version = c.value


# Note [In-place operations]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~
# ``target <- op(target, *args)`` runs the op functionally on a stand-in for ``target`` that
# carries its current history (a copy of its old value when the op's rule reads it), so the
# op is recorded as usual; then the result is written into ``target``'s memory, the version
# counter is bumped (saved values of the old value are then stale) and ``target``'s history
# is rebased onto the op's node. In-place on a leaf that requires grad (or a view of one) is
# an error under grad mode (allowed under ``no_grad``, for parameter updates); in-place on a
# view carries the change into its base's history (Note [In-place on views]). The same
# protocol serves every level: a transform gives its own stand-in and its own write (one
# level down), and its values keep their histories at their level. Grad mode is never
# switched off here: the levels below a transform's value record its computation even where
# the value's own level records nothing (``grad(vmap(f))`` differentiates the physical
# computation of an in-place op on a batched value), so for a transform's value the old
# value is copied whenever a rule of the op could read it, whatever this level needs.
def apply_inplace(op, target, *args, **params):
    """``target <- op(target, *args, **params)`` in place (Note [In-place operations])."""
    if not isinstance(target, Tensor):
        raise TypeError(f"{op.name}: in-place target must be a Tensor, got {type(target).__name__}")
    if _VISIBLE[0]:
        level = owning_level((target,) + args, params)
        if level is not None:
            return level.interpreter.process_inplace(level, op, target, args, params)
    if type(target) is not Tensor or any(isinstance(a, Tensor) and type(a) is not Tensor
                                         for a in args):
        values = _alive_values((target,) + args)  # values of exited transform levels
        target, args = values[0], tuple(values[1:])
    return inplace(op, target, args, params)


def _shares_elements(data):
    """Whether several elements of ``data`` are one memory location (a zero stride along an
    axis longer than 1: a broadcast view)."""
    for n, st in zip(data.shape, data.strides):
        if st == 0 and n > 1:
            return True
    return False


class ReadOnlyTargetError(RuntimeError):
    """An in-place write met read-only memory (a broadcast view), before anything changed;
    ``op`` is the in-place operation the user called (set by :func:`_finish`)."""

    op = "an in-place operation"

    def __str__(self):
        return (f"{self.op}: the in-place target's memory is read-only: it is a view made by "
                "broadcast_to or expand (several of its elements share one memory location, "
                "so writing them is ambiguous) or an array NumPy marks read-only. Use the "
                "out-of-place operation, or `.clone()` the tensor before changing it in place.")


# Functions called with a plain tensor just before an in-place write changes its memory
# (``allow_mutation_on_saved_tensors`` keeps the old values of saved tensors through it).
BEFORE_WRITE = []


def _write_data(target, result):
    """The plain write: the data into ``target``'s memory, and a version bump, with where
    the user's code made it (Note [Where a tensor was modified in place])."""
    for fn in BEFORE_WRITE:
        fn(target)
    data = target._data
    if 0 in getattr(data, "strides", ()) and _shares_elements(data):
        raise ReadOnlyTargetError()  # (CuPy writes a broadcast view where NumPy refuses)
    try:
        data[...] = result._data
    except ValueError:
        flags = getattr(target._data, "flags", None)
        if flags is None or flags.writeable:
            raise
        raise ReadOnlyTargetError() from None
    m = target._meta
    if m is None or not m.inference:  # inference tensors track no versions
        c = target._counter()
        c.value += 1
        note_where(c)


# Note [Where a tensor was modified in place]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Reading a saved value that was modified in place since it was saved is an error (Note
# [Saved tensors and versions] in core/saved.py); to say where the modification happened
# without anomaly mode (PyTorch can only say so under it), every in-place write of a plain
# tensor (every level's write ends in `_write_data`) notes on the tensor's version counter
# the version it made and the first frame outside the ndgrad package: the user's code, its
# line and the function of ndgrad it called (`mul_`, `__setitem__`, a NumPy function with
# `out=`); saved.py's message names them while that version is still the current one. The
# other two bumps note themselves the same way (`note_where`): a custom Function's
# `ctx.mark_dirty` (at the line of its `apply`, "by mark_dirty") and
# `autograd.graph.increment_version` (at the line of its call). Only
# the in-place path pays for it: a walk of a few frames (a frame object each) and a tuple of
# references (no frame is kept). Measured by an in-process A/B of `_write_data` with and
# without it, interleaved, fastest of 61 rounds: `x.add_(c)` under no_grad on 16 values
# 3.4 -> 4.3 us, a recorded `y.mul_(c)` 4.9 -> 5.7 us, `x[3] = c` 4.1 -> 5.1 us; the
# counter's second slot leaves W1's chain as it was (3.82 against 3.81 us per op).
_PACKAGE = os.path.dirname(os.path.dirname(_write_data.__code__.co_filename)) + os.sep


def note_where(c, depth=3, what=None):
    """Note on version counter ``c`` where its current version was made: the first frame
    outside ndgrad from ``depth`` frames up, and ``what`` the user called (by default the
    outermost of ndgrad's frames on the way)."""
    # (frames 0 to 2 are this module's: note_where, _write_data and the protocol's call of
    # its write; each frame the walk steps through costs a frame object, about 0.2 us)
    f = sys._getframe(depth)
    entry = None
    while f is not None:
        code = f.f_code
        if not code.co_filename.startswith(_PACKAGE):
            c.where = (c.value, code, f.f_lineno, what or entry)
            return
        entry = code  # the outermost of ndgrad's frames so far: what the user called
        f = f.f_back


def check_inplace(target, what):
    """Refuse an in-place change of ``target`` that autograd cannot follow (a leaf that
    requires grad or a view of one, under grad mode; an inference tensor outside inference
    mode; a view made under no_grad changed with grad on). ``what`` names the operation."""
    m = target._meta
    if m is not None and m.inference and not STATE.inference:
        raise RuntimeError(
            f"Inplace update to inference tensor outside InferenceMode is not allowed "
            f"({what}). An inference tensor was made inside `ndgrad.inference_mode()`; "
            "`.clone()` it outside inference mode to get a normal tensor you can modify.")
    if not STATE.grad_enabled:
        return
    base = m.base if m is not None else None
    if base is None:
        if target._requires_grad and target._grad_fn is None:
            raise RuntimeError(
                f"{what}: a leaf tensor that requires grad (shape {list(target.shape)}) was "
                "modified in place by an in-place operation. In-place changes to a leaf would "
                "make its gradient meaningless. For parameter updates wrap them in `with "
                "ndgrad.no_grad():`; otherwise use the out-of-place op or `.clone()` the leaf "
                "first.")
        return
    if base._requires_grad and base._grad_fn is None:
        raise RuntimeError(
            f"{what}: a view of a leaf tensor that requires grad was modified in place by an "
            "in-place operation; in-place changes to the view would change the leaf. Use the "
            "out-of-place op, `.clone()` the leaf first, or wrap parameter updates in `with "
            "ndgrad.no_grad():`.")
    if m.made_without_grad and base._requires_grad:
        raise RuntimeError(
            f"A view was created in no_grad mode and is being modified in place ({what}) "
            "with grad mode enabled. This use is ambiguous and error-prone, so it is "
            "forbidden (as in PyTorch): make the view and the in-place operation both "
            "inside the no_grad block (if the change should not be recorded) or both "
            "outside it (if it should).")
    check_view_history(target)  # the view's history, derived from the base's current one


def rebase(target, new):
    """``target``'s memory now holds the value of ``new`` (a Tensor with history): its
    history continues from ``new``'s node, and for a view, so does its base's (the change is
    written back up the chain of views: Note [In-place on views])."""
    m = target._meta
    base = m.base if m is not None else None
    node = new._grad_fn
    if base is not None and STATE.grad_enabled and (node is not None or base._requires_grad):
        if new.dtype != target.dtype:
            new = TENSOR_F.astype(new, target.dtype)
        _rebase_base(base, _write_back(target, new))
        regenerate(target)
    elif node is not None:
        _continue_history(target, new)


def inplace(op, target, args, params, write=_write_data):
    """The in-place protocol for ``target`` at its own level (Note [In-place operations]);
    ``write(target, result)`` puts the new value in ``target``'s memory."""
    check_inplace(target, op.name)
    record_it = STATE.grad_enabled and op.differentiable and (
        target._requires_grad or any(isinstance(a, Tensor) and a._requires_grad for a in args))
    needs = (target._requires_grad,) + tuple(
        isinstance(a, Tensor) and a._requires_grad for a in args[:op.nin - 1])
    if type(target) is not Tensor and STATE.grad_enabled and op.differentiable:
        # a transform's value: the levels below may record what this one does not
        # (grad(vmap(f)) records the batched values' physical computation), so the old
        # value is kept whenever a rule could read it
        needs = (True,) * len(needs)
    elif not record_it:
        return _finish(op, target, apply(op, target, *args, **params), write, False)
    _, mask = op.save_plan(needs)
    old = target._stand_in(mask is None or bool(mask and mask[0]))  # its old value
    return _finish(op, target, apply(op, old, *args, **params), write, record_it)


def _finish(op, target, result, write, record_it):
    """Write ``result``, the new value of ``target``, and continue its history."""
    check_inplace_result(op, target, result)
    try:
        write(target, result)
    except ReadOnlyTargetError as exc:  # (a level's write ends in a plain one's: the
        exc.op = op.name                # outermost, what the user called, names it last)
        raise
    if record_it and result._grad_fn is not None:
        _repoint_saved_output(result._grad_fn, result, target)
    if STATE.grad_enabled:
        rebase(target, result)
    return target


def check_inplace_result(op, target, result):
    """Refuse ``result`` as the new value of in-place target ``target`` when its shape
    differs or its dtype cannot be cast to the target's (NumPy's same_kind rule); every
    level's in-place protocol checks with this."""
    if tuple(result.shape) != tuple(target.shape):
        raise RuntimeError(
            f"{op.name}: output with shape {list(target.shape)} doesn't match the broadcast "
            f"shape {list(result.shape)} of the in-place operation; an in-place op cannot "
            "change its target's shape"
        )
    if result.dtype != target.dtype:
        if not NUMPY.can_cast(result.dtype, target.dtype, "same_kind"):
            raise RuntimeError(
                f"{op.name}: result type {result.dtype} can't be cast to the desired output "
                f"type {target.dtype} of the in-place target; use the out-of-place op or "
                "convert the target with .astype() first"
            )
