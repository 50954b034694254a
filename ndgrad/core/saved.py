"""What a node saves: saved values with their versions, saved outputs, saved-tensor hooks,
and the stand-ins of values a node does not save.

Note [Saved tensors and versions]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
A :class:`SavedValue` is PyTorch's SavedVariable: the saved tensor, its version at save time,
and what to say when it is stale. Every Tensor has a version counter shared with its views
(made on first need); in-place operations bump it. Before a rule runs, the engine unpacks
the node's saved values: one modified in place since is an error naming the op, the value's
shape and both versions. An output is saved as its content (the raw array, or a transform's
inner value), its counter and the node's output number (:class:`SavedOutput`), never as the
output Tensor, whose ``grad_fn`` is the node (a reference cycle); unpacking rebuilds a
Tensor with the node as its ``grad_fn``, carrying the transform data the output had (a dual
level's tangent: forward over reverse needs it). Under saved-tensor hooks the two are
:class:`PackedValue` and :class:`PackedOutput` instead (Note [Saved-tensor hooks]); every
node saves through ``graph.save_value`` / ``graph.save_output`` (``graph.record`` inlines
the plain case).

This module knows values, not nodes: the node a message names, and a leaf's accumulator,
come from the caller (core/graph.py).
"""

from __future__ import annotations

import os
import weakref

from . import levels
from .backend import _BACKEND_BY_TYPE, NUMPY
from .grad_mode import STATE
from .tensor import ShapeMetadata, Tensor, VersionCounter, _meta, _new

_PROTOCOLS = os.path.join("numpy", "protocols.py")  # (ndgrad/numpy/protocols.py: out=)

__all__ = ["SavedValue", "SavedOutput", "PackedValue", "PackedOutput", "InputMeta",
           "FREED", "FREED_MSG", "SAVED_TYPES", "stand_ins",
           "plain_output", "hooks_now", "hookable", "raise_inference_save"]


class InputMeta(ShapeMetadata):
    """Stand-in for an unsaved input whose rule reads only its shape, ndim, dtype or size."""

    __slots__ = ("shape", "dtype")

    def __init__(self, shape, dtype):
        self.shape = shape
        self.dtype = dtype

    def __repr__(self):
        return f"InputMeta(shape={self.shape}, dtype={self.dtype})"


def stand_ins(args):
    """The stand-ins a node of an op whose rules read only metadata saves for the inputs of
    a backend with ``stand_ins`` (``InputMeta`` of the shape ``B.stand_in`` gives: Note
    [Backend plug-ins] in core/backend.py), or None when no input has one."""
    saved = None
    for k, a in enumerate(args):
        d = a._data if isinstance(a, Tensor) else None
        if d is not None and _BACKEND_BY_TYPE.get(type(d), NUMPY).stand_ins:
            if saved is None:
                saved = [None] * len(args)
            saved[k] = InputMeta(_BACKEND_BY_TYPE[type(d)].stand_in(d), d.dtype)
    return saved


class _Freed:
    __slots__ = ()
    plain = False  # (a freed saved output is read by the general path, which says so)

    def __repr__(self):
        return "<freed>"


FREED = _Freed()

FREED_MSG = (
    "Trying to backward through the graph a second time (or directly access saved tensors "
    "after they have already been freed). Saved intermediate values of the graph are freed "
    "when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to "
    "backward through the graph a second time or if you need to access saved tensors after "
    "calling backward."
)


def _modified_msg(node, arr, which, counter, expected):
    shape = list(getattr(arr, "shape", ()))
    dtype = getattr(arr, "dtype", "?")
    cur = counter.value
    where = _where_modified(counter, cur, expected)
    hint = ("make that operation out-of-place" if where else
            "find the in-place operation that modified it afterwards (an `*_` method, "
            "`x[...] = v` or an augmented assignment such as `+=`) and make it out-of-place")
    return (
        "one of the variables needed for gradient computation has been modified by an "
        f"inplace operation: [{dtype} array of shape {shape}], which is {which} saved by "
        f"{node.name()}, is at version {cur}; expected version {expected} instead.{where} "
        f"Hint: the operation that saved it is the one named; {hint}, or `.clone()` the "
        "tensor before modifying it. ndgrad.autograd.detect_anomaly() shows where the saving "
        "operation was called."
    )


_AUGMENTED = {"__iadd__": "+=", "__isub__": "-=", "__imul__": "*=", "__itruediv__": "/=",
              "__ifloordiv__": "//=", "__imod__": "%=", "__ipow__": "**=", "__imatmul__": "@="}


def _where_modified(counter, cur, expected):
    """``" The tensor was modified in place at <file>:<line> in <function> by <what>."``,
    from what the last in-place write noted on ``counter`` when it made version ``cur``
    (Note [Where a tensor was modified in place] in core/inplace.py), or ``""``."""
    where = getattr(counter, "where", None)
    if where is None or where[0] != cur:  # (a later change noted nothing: not this one)
        return ""
    _, code, line, entry = where
    name = "?" if entry is None else entry.co_name
    if name in _AUGMENTED:
        what = f"{_AUGMENTED[name]} ({name})"
    elif name == "__setitem__":
        what = "x[...] = value (__setitem__)"
    elif entry is not None and entry.co_filename.endswith(_PROTOCOLS):
        what = "the out= argument of a NumPy function"
    else:
        what = name
    function = getattr(code, "co_qualname", code.co_name)
    more = f", the last of {cur - expected} in-place changes since it was saved" \
        if cur - expected > 1 else ""
    return (f" The tensor was modified in place at {code.co_filename}:{line} in {function} "
            f"by {what}{more}.")


def raise_inference_save(name):
    raise RuntimeError(
        f"Inference tensors cannot be saved for backward ({name}). An inference tensor was "
        "made inside `ndgrad.inference_mode()`; make it outside inference mode, or `.clone()` "
        "it outside inference mode to get a normal tensor."
    )


# ------------------------------------------------------------------ saved values
def _version_of(t):
    """``t``'s version now (0 for a tensor never modified in place)."""
    c = t._vcounter if type(t) is Tensor else t._counter()
    return 0 if c is None else c.value


class SavedValue:
    """A tensor a node saved, with its version at save time (Note [Saved tensors and
    versions])."""

    __slots__ = ("value", "version")

    def __init__(self, t):
        self.value = t
        self.version = _version_of(t)

    def unpack(self, node, which):
        """The saved tensor; a RuntimeError if it was modified in place since. ``which``
        names it in that message (an int k: "input k")."""
        t = self.value
        cur = _version_of(t)
        if cur != self.version:
            raise RuntimeError(_modified_msg(node, t, which if type(which) is str else
                                             f"input {which}", t._counter(), self.version))
        return t


class SavedOutput:
    """A node's saved output(s): content, counter and version, and how to rebuild the output
    Tensor(s) around this node (Note [Saved tensors and versions]). ``nr`` is the output
    number of a single saved output; ``diff`` False rebuilds it without history (a
    Function's non-differentiable output)."""

    __slots__ = ("content", "counter", "version", "cls", "level", "meta", "nr", "diff", "plain")

    def __init__(self, outs, single, nr=0, diff=True):
        o = outs[0]
        if type(o) is Tensor:
            c = o._vcounter
            if c is None:
                c = o._vcounter = VersionCounter()
            for t in outs:
                t._vcounter = c  # fresh outputs of one op: one counter
        else:
            c = o._counter()
        self.counter = c
        self.version = c.value
        self.cls = type(o)
        self.level = o._level
        self.nr = nr
        self.diff = diff
        keep = _STACK and levels.data_levels()
        if single:
            self.content = o._saved_content()
            self.meta = _meta(o) if keep else None
        else:
            self.content = tuple(t._saved_content() for t in outs)
            self.meta = tuple(_meta(t) for t in outs) if keep else None
        self.plain = self.cls is Tensor and self.meta is None  # its content is a raw array

    def check(self, node, which="output 0"):
        if self.counter.value != self.version:
            content = self.content
            arr = content[0] if type(content) is tuple else content
            raise RuntimeError(_modified_msg(node, arr, which, self.counter, self.version))

    def rebuild(self, node):
        """The output(s) as Tensors whose ``grad_fn`` is ``node``, with the transform data
        (tangents) they carried."""
        content = self.content
        if type(content) is not tuple:
            return self._one(content, node, self.nr, self.meta)
        metas = self.meta or (None,) * len(content)
        outs = []
        for i, c in enumerate(content):
            outs.append(self._one(c, node, i, metas[i]))
        return tuple(outs)

    def _one(self, content, node, nr, meta):
        t = self.cls._from_saved(content, self.level)
        if self.diff:
            t._grad_fn = node
            t._output_nr = nr
            t._requires_grad = True
        if type(t) is Tensor:
            t._vcounter = self.counter
        if meta is not None and meta.level_data:
            live = {lv: d for lv, d in meta.level_data.items() if lv.alive}
            if live:
                _meta(t).level_data = live
        return t


_STACK = levels.STACK  # (a node keeps a saved output's transform data while levels exist)


# Note [Saved-tensor hooks]
# ~~~~~~~~~~~~~~~~~~~~~~~~~
# Under ``ndgrad.autograd.graph.saved_tensors_hooks(pack, unpack)`` (thread-local; the
# innermost pair applies), every plain tensor a node saves, an op's or a custom Function's,
# input or output, is handed to ``pack`` (with grad mode off) as it is saved, and the node
# keeps only what ``pack`` returned (:class:`PackedValue`, :class:`PackedOutput`); when
# backward needs it, ``unpack`` (with the pass's grad mode) turns that back into a tensor of
# the same shape and dtype, which gets the saved tensor's place in the graph (its grad_fn,
# or the leaf's accumulator), so higher order works. As in PyTorch, the hooks own the value:
# an in-place change of the original after packing is not detected (``allow_mutation_on_
# saved_tensors`` relies on that). A packed output that is the output tensor itself is kept
# as its content (no cycle node -> output -> node). Values of transform levels are saved
# as usual: the hooks see plain tensors only. `record` reads the thread-local only while
# some thread has hooks set (``SAVED_HOOK_THREADS``).
def hooks_now():
    """The innermost (pack, unpack) pair of this thread, or None."""
    hooks = STATE.saved_hooks
    return hooks[-1] if hooks else None


def hookable(t):
    return type(t) is Tensor and not (t._meta is not None and t._meta.level_data)


def _pack(pack, t):
    prev = STATE.grad_enabled
    STATE.grad_enabled = False
    try:
        return pack(t)
    finally:
        STATE.grad_enabled = prev


def _unpacked(unpack, packed, shape, dtype, node, which):
    """``unpack(packed)`` checked against the saved tensor's shape and dtype."""
    t = unpack(packed)
    if type(which) is not str:  # (an input's number)
        which = f"input {which}"
    if not isinstance(t, Tensor):
        raise TypeError(
            f"the unpack hook of saved_tensors_hooks returned a {type(t).__name__} for "
            f"{which} of {node.name()}; it must return a Tensor (the value pack_hook got)")
    if tuple(t.shape) != shape or t.dtype != dtype:
        raise RuntimeError(
            f"the unpack hook of saved_tensors_hooks returned a tensor of shape "
            f"{list(t.shape)} and dtype {t.dtype} for {which} of {node.name()}, which saved "
            f"one of shape {list(shape)} and dtype {dtype}; unpack must give back the value "
            "pack_hook got")
    return t


class PackedValue:
    """A saved input (or intermediate) that went through a pack hook (Note [Saved-tensor
    hooks]): what ``pack`` returned, the unpack hook, and the tensor's place in the graph."""

    __slots__ = ("packed", "unpack_hook", "shape", "dtype", "grad_fn", "output_nr",
                 "accumulator")

    def __init__(self, t, hooks, accumulator):
        self.packed = _pack(hooks[0], t)
        self.unpack_hook = hooks[1]
        self.shape = tuple(t.shape)
        self.dtype = t.dtype
        self.grad_fn = t._grad_fn
        self.output_nr = t._output_nr
        # a leaf that requires grad: its accumulator (which holds the leaf, not its copy)
        self.accumulator = accumulator

    @property
    def value(self):
        return self.packed

    def unpack(self, node, which):
        """The tensor, from the unpack hook, in the saved tensor's place in the graph."""
        t = _unpacked(self.unpack_hook, self.packed, self.shape, self.dtype, node, which)
        r = _new(t._data, False)
        r._vcounter = t._counter()
        if self.grad_fn is not None:
            r._grad_fn = self.grad_fn
            r._output_nr = self.output_nr
            r._requires_grad = True
        elif self.accumulator is not None:
            r._requires_grad = True
            _meta(r).accumulator = weakref.ref(self.accumulator)
        return r


class PackedOutput:
    """A node's saved output(s) that went through a pack hook (Note [Saved-tensor hooks]).
    Read through the engine's general path (``plain`` False), like a SavedOutput."""

    __slots__ = ("packed", "unpack_hook", "metas", "nr", "diff", "single", "content",
                 "counter", "version")
    plain = False
    level = None

    def __init__(self, outs, single, hooks, nr=0, diff=True):
        self.unpack_hook = hooks[1]
        self.packed = tuple(_pack(hooks[0], t) for t in outs)
        # an output packed as itself is kept as its content (no cycle)
        self.packed = tuple((_SELF, t._data, t._counter()) if p is t else p
                            for p, t in zip(self.packed, outs))
        self.metas = tuple((tuple(t.shape), t.dtype) for t in outs)
        self.nr = nr
        self.diff = diff
        self.single = single
        self.content = None
        self.counter = _NEVER_STALE
        self.version = 0

    def check(self, node, which="output 0"):
        """(The hooks own the value: nothing to check.)"""

    def rebuild(self, node):
        outs = []
        for k, (p, (shape, dtype)) in enumerate(zip(self.packed, self.metas)):
            nr = self.nr if self.single else k
            if type(p) is tuple and len(p) == 3 and p[0] is _SELF:
                p = _new(p[1], False)
                p._vcounter = self.packed[k][2]
                p._grad_fn, p._output_nr, p._requires_grad = node, nr, self.diff
            t = _unpacked(self.unpack_hook, p, shape, dtype, node, f"output {nr}")
            r = _new(t._data, False)
            r._vcounter = t._counter()
            if self.diff:
                r._grad_fn = node
                r._output_nr = nr
                r._requires_grad = True
            outs.append(r)
        return outs[0] if self.single else tuple(outs)


_SELF = object()
_NEVER_STALE = VersionCounter()
SAVED_TYPES = (SavedValue, PackedValue)


def plain_output(t):
    """``SavedOutput((t,), True)`` for a plain Tensor while no transform level exists, built
    field by field (Note [Small shortcuts on the hot path])."""
    s = _SavedOutput_new(SavedOutput)
    c = t._vcounter
    if c is None:
        c = t._vcounter = _VersionCounter_new(VersionCounter)
        c.value = 0
    s.counter = c
    s.version = c.value
    s.content = t._data
    s.cls = Tensor
    s.level = None
    s.meta = None
    s.nr = 0
    s.diff = True
    s.plain = True
    return s


_SavedOutput_new = SavedOutput.__new__
_VersionCounter_new = VersionCounter.__new__
