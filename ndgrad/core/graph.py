"""The backward graph: Nodes, saved values, the one way to record a node, leaf accumulation,
hooks, and the one check of a gradient against its input.

A :class:`Node` is recorded (:func:`record`) for each operation whose inputs require grad.
It keeps what its vjp rules read (and nothing else) as :class:`SavedValue` objects, one
*edge* per input (where that input's gradient goes, and the shape and dtype it must have),
a sequence number (the engine runs Nodes in decreasing sequence order) and hooks. Leaves
that require grad get an :class:`AccumulateGrad` Node when first used, shared by every graph
built while it lives. Custom ``autograd.Function`` nodes (core/function.py) are Nodes too.

Note [What a node saves]
~~~~~~~~~~~~~~~~~~~~~~~~
Which of ``out`` and the inputs an op's vjp rules read is found once, when the op is declared
(Note [What a rule reads] in core/ops/registry.py); a Node saves exactly what the rules for
its grad-requiring inputs read. ``y = x * 2.0`` saves nothing but the scalar; ``tanh`` saves
only its output. This keeps the memory of a recorded computation close to the hand-written
one. A rule that reads an input only as ``x.shape`` / ``x.ndim`` / ``x.dtype`` / ``x.size``
(``sum``'s does) does not make it saved: the edge records shape and dtype, and the rule gets
an :class:`InputMeta` stand-in. So ``s = a.sum(); a += 1; s.backward()`` is fine, as in
PyTorch.

Note [Saved tensors and versions]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
A :class:`SavedValue` is PyTorch's SavedVariable: the saved tensor, its version at save time,
and what to say when it is stale. Every Tensor has a version counter shared with its views
(made on first need); in-place operations bump it. Before a rule runs, the engine unpacks
the node's saved values: one modified in place since is an error naming the op, the value's
shape and both versions. An output is saved as its content (the raw array, or a transform's
inner value), its counter and the node's output number (:class:`SavedOutput`), never as the
output Tensor, whose ``grad_fn`` is this Node (a reference cycle); unpacking rebuilds a
Tensor with this Node as its ``grad_fn``, carrying the transform data the output had (a dual
level's tangent: forward over reverse needs it). Under saved-tensor hooks the two are
:class:`PackedValue` and :class:`PackedOutput` instead (Note [Saved-tensor hooks]); every
node saves through ``save_value`` / ``save_output`` (``record`` inlines the plain case).
"""

from __future__ import annotations

import inspect
import itertools
import weakref

import numpy as _np

from . import anomaly
from . import levels
from .backend import _BACKEND_BY_TYPE, _DASK, NUMPY, is_differentiable_dtype
from .grad_mode import SAVED_HOOK_THREADS, STATE
from .hooks import NodeHooks, add_hook
from .tensor import Tensor, VersionCounter, _fresh, _meta, _new

__all__ = ["Node", "OpNode", "AccumulateGrad", "SavedValue", "SavedOutput", "PackedValue",
           "PackedOutput", "save_value", "save_output", "FREED", "record", "expose_saved_names",
           "fit_gradient", "leaf_accumulator", "new_seq"]

_seq = itertools.count()
_NDARRAY = NUMPY.array_type
# NumPy scalars (what NumPy gives for 0-d results) are raw cotangents of the CPU backend
_SCALARS = {t: NUMPY for t in (_np.float64, _np.float32, _np.float16, _np.complex128,
                                 _np.complex64)}
_acc_seq = itertools.count()


def new_seq():
    """The next sequence number: a Node is always numbered after the Nodes of its inputs."""
    return next(_seq)


class InputMeta:
    """Stand-in for an unsaved input whose rule reads only its shape, ndim, dtype or size."""

    __slots__ = ("shape", "dtype")

    def __init__(self, shape, dtype):
        self.shape = shape
        self.dtype = dtype

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        n = 1
        for s in self.shape:
            n *= s
        return n

    def __repr__(self):
        return f"InputMeta(shape={self.shape}, dtype={self.dtype})"


class ChunkedShape(tuple):
    """A lazy (Dask) input's shape with its ``chunks``: a rule that broadcasts a cotangent
    back to the shape (``reductions.expand_reduced``) gives it the input's chunks, so the
    cotangent is built chunk by chunk, aligned with the data, never as one chunk (Note [Lazy
    gradients] in core/engine.py)."""


def _lazy_standins(args):
    """The stand-ins a node of an op whose rules read only metadata saves for its lazy
    inputs (their shapes with chunks), or None when no input is lazy."""
    saved = None
    for k, a in enumerate(args):
        d = a._data if isinstance(a, Tensor) else None
        if d is not None and _BACKEND_BY_TYPE.get(type(d), NUMPY).lazy:
            if saved is None:
                saved = [None] * len(args)
            shape = ChunkedShape(d.shape)
            shape.chunks = d.chunks
            saved[k] = InputMeta(shape, d.dtype)
    return saved


class _Freed:
    __slots__ = ()
    plain = False  # (a freed saved output is read by the general path, which says so)

    def __repr__(self):
        return "<freed>"


FREED = _Freed()

_FREED_MSG = (
    "Trying to backward through the graph a second time (or directly access saved tensors "
    "after they have already been freed). Saved intermediate values of the graph are freed "
    "when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to "
    "backward through the graph a second time or if you need to access saved tensors after "
    "calling backward."
)


def _modified_msg(node, arr, which, cur, expected):
    shape = list(getattr(arr, "shape", ()))
    dtype = getattr(arr, "dtype", "?")
    return (
        "one of the variables needed for gradient computation has been modified by an "
        f"inplace operation: [{dtype} array of shape {shape}], which is {which} saved by "
        f"{node.name()}, is at version {cur}; expected version {expected} instead. Hint: "
        "the operation that saved it is the one named; find the in-place operation that "
        "modified it afterwards (an `*_` method, `x[...] = v` or an augmented assignment such "
        "as `+=`) and make it out-of-place, or `.clone()` the tensor before modifying it. "
        "ndgrad.autograd.detect_anomaly() shows where the saving operation was called."
    )


def _raise_inference_save(name):
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
                                             f"input {which}", cur, self.version))
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
            raise RuntimeError(_modified_msg(node, arr, which, self.counter.value,
                                             self.version))

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
def _hooks_now():
    """The innermost (pack, unpack) pair of this thread, or None."""
    hooks = STATE.saved_hooks
    return hooks[-1] if hooks else None


def _hookable(t):
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

    def __init__(self, t, hooks):
        self.packed = _pack(hooks[0], t)
        self.unpack_hook = hooks[1]
        self.shape = tuple(t.shape)
        self.dtype = t.dtype
        self.grad_fn = t._grad_fn
        self.output_nr = t._output_nr
        # a leaf that requires grad: its accumulator (which holds the leaf, not its copy)
        self.accumulator = leaf_accumulator(t) if t._requires_grad and t._grad_fn is None \
            else None

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
_SAVED_TYPES = (SavedValue, PackedValue)


def save_value(t):
    """What a node keeps of tensor ``t``, an input or intermediate it saves: a SavedValue,
    or a PackedValue under saved-tensor hooks (Note [Saved-tensor hooks])."""
    if SAVED_HOOK_THREADS[0] and _hookable(t):
        hooks = _hooks_now()
        if hooks is not None:
            return PackedValue(t, hooks)
    return SavedValue(t)


def save_output(outs, single, nr=0, diff=True):
    """What a node keeps of its output(s) ``outs``: a SavedOutput, or a PackedOutput under
    saved-tensor hooks."""
    if SAVED_HOOK_THREADS[0] and all(_hookable(t) for t in outs):
        hooks = _hooks_now()
        if hooks is not None:
            return PackedOutput(outs, single, hooks, nr, diff)
    return SavedOutput(outs, single, nr, diff)


# ------------------------------------------------------------------ nodes
class Node:
    """Base class of the backward graph's nodes.

    ``edges`` has one entry per input: None (no gradient flows there) or
    ``(next_node, output_nr, shape, dtype)``, where the input's gradient goes and what it
    must look like. Subclasses implement ``backward(pass_, grads, skip)`` returning one
    gradient (or None) per edge, and ``name()``. ``hooks`` is None unless hooks were
    registered or anomaly mode recorded a trace: the engine checks that one slot per node.
    """

    __slots__ = ("edges", "seq", "hooks", "nout", "_metadata", "__weakref__")

    # A node of several outputs gets zeros for the outputs that received no gradient (a
    # custom Function decides for itself: ctx.set_materialize_grads).
    materializes = True

    def name(self):
        return type(self).__name__

    @property
    def next_functions(self):
        """((Node or None, output_nr), ...) for each input, as in PyTorch."""
        return tuple((None, 0) if e is None else (e[0], e[1]) for e in self.edges)

    def release(self):
        """Drop the saved values (after a backward without retain_graph)."""

    def _saved_items(self):
        """``(name, value)`` for each value this node saved (none here)."""
        return []

    @property
    def metadata(self):
        """A dict for the user's own notes about this node (made on first use)."""
        try:
            return self._metadata
        except AttributeError:
            self._metadata = {}
            return self._metadata

    def _saved_by_name(self, key, raw):
        """``grad_fn._saved_<key>`` (``raw``: ``_raw_saved_<key>``); see expose_saved_names."""
        items = dict(self._saved_items())
        if key not in items:
            if self._is_freed():
                raise RuntimeError(_FREED_MSG)
            known = ", ".join(f"_saved_{k}" for k in items) or "none"
            raise AttributeError(f"{self.name()} saved no value named {key!r} (it has: {known})")
        return items[key] if raw else self._saved_value(key)

    def _is_freed(self):
        return False

    def _saved_value(self, key):
        return dict(self._saved_items())[key]

    def _hooks(self):
        h = self.hooks
        if h is None:
            h = self.hooks = NodeHooks()
        return h

    @property
    def trace(self):
        return None if self.hooks is None else self.hooks.trace

    def register_hook(self, fn):
        """``fn(grad_inputs, grad_outputs)`` runs after this node; may return new grad_inputs."""
        return add_hook(self._hooks().post, fn)

    def register_prehook(self, fn):
        """``fn(grad_outputs)`` runs before this node; may return new grad_outputs."""
        return add_hook(self._hooks().pre, fn)

    def _add_tensor_hook(self, output_nr, fn):
        return add_hook(self._hooks().tensor.setdefault(output_nr, {}), fn)

    def __repr__(self):
        return f"<{self.name()} object at {id(self):#x}>"


class OpNode(Node):
    """The Node recorded for one call of a registered op."""

    __slots__ = ("op", "extra", "params", "saved", "saved_out", "out_meta")

    def name(self):
        return self.op.node_name

    def release(self):
        if self.saved is not None:
            self.saved = FREED
        if self.saved_out is not None:
            self.saved_out = FREED

    def backward(self, pass_, grads, skip=None):
        """The input cotangents, from the op's vjp rules. Its saved values are read as raw
        arrays with the backend's ``F`` when nothing they hold must stay a Tensor (first
        order at NumPy speed), else through ``pass_.read`` (Note [Formulas on arrays or on
        Tensors] in core/engine.py). ``skip[i]`` True: input ``i``'s cotangent is not
        needed."""
        op = self.op
        edges = self.edges
        params = self.params
        g = grads[0]
        raw = _read_raw(self, pass_, g) if op.nout == 1 else None
        if raw is None:
            F, inputs, out, grads = pass_.read(self, grads)
            g = grads[0] if op.nout == 1 else grads
        else:
            F, inputs, out = raw
        if op._meta_standins:  # (set when the node was recorded: Op.save_plan)
            # inputs read only for shape/dtype were not saved (Note [What a node saves])
            inputs = list(inputs)
            for k, e in enumerate(edges):
                if inputs[k] is None and e is not None:
                    inputs[k] = InputMeta(e[2], e[3])
        rules = op.vjp_rules
        extra = self.extra
        if rules is None:
            return _each_rule(op.vjp_each, edges, skip, F, g, out, inputs, extra, params)
        if not (extra or params):  # positional calls, no tuple or dict built: 6 % of W1
            if len(edges) == 1:
                return (rules[0](F, g, out, inputs[0]),)
            if len(edges) == 2 and skip is None:
                x, y = inputs
                e0, e1 = edges
                r0, r1 = rules
                return (None if e0 is None or r0 is None else r0(F, g, out, x, y),
                        None if e1 is None or r1 is None else r1(F, g, out, x, y))
        result = []  # (a loop, not a comprehension: one call less on the hot path)
        for i, e in enumerate(edges):
            rule = rules[i]
            if e is None or rule is None or (skip is not None and skip[i]):
                result.append(None)
            else:
                result.append(rule(F, g, out, *inputs, *extra, **params))
        return result

    def _saved_items(self):
        """``(name, value)`` for each value this node saved, without a version check: the
        inputs under the names of the op's parameters, ``out`` for the output (its content),
        then the op's other parameters. For introspection (``grad_fn._saved_x``), pictures
        and memory reports."""
        items = []
        saved = self.saved
        if saved is not None and saved is not FREED:
            names = _input_names(self.op, len(saved))
            items.extend((names[k], v.value if type(v) in _SAVED_TYPES else v)
                         for k, v in enumerate(saved) if v is not None)
        out = self.saved_out
        if out is not None and out is not FREED:
            items.append(("out", out.content if type(out) is SavedOutput else
                          out.packed[0] if out.single else out.packed))
        items.extend(self.params.items())
        return items

    def _is_freed(self):
        return self.saved is FREED or self.saved_out is FREED

    def _saved_value(self, key):
        if key == "out":
            out = self._checked_out()
            return out.rebuild(self)
        saved = self.saved
        if saved is not None and saved is not FREED:
            for name, v in zip(_input_names(self.op, len(saved)), saved):
                if name == key:
                    return v.unpack(self, f"input {name}") if type(v) in _SAVED_TYPES else v
        return self.params[key]

    def _unpack(self):
        saved = self.saved
        if saved is None:
            return [None] * len(self.edges)
        if saved is FREED:
            raise RuntimeError(_FREED_MSG)
        values = []
        for k, v in enumerate(saved):
            values.append(v.unpack(self, k) if type(v) in _SAVED_TYPES else v)
        return values

    def _checked_out(self):
        out = self.saved_out
        if out is not None:
            if out is FREED:
                raise RuntimeError(_FREED_MSG)
            out.check(self)
        return out


def _read_raw(node, pass_, g):
    """``(F, inputs, out)`` for the rules of single-output ``node`` as raw arrays with the
    backend's namespace, or None when a value they read must stay a Tensor (or is stale or
    freed: the general read says so)."""
    B = NUMPY if type(g) is _NDARRAY else (_BACKEND_BY_TYPE.get(type(g)) or
                                            _SCALARS.get(type(g)))
    params = node.params
    if B is None or (params and type(params) is LevelParams):
        return None
    saved = node.saved
    if saved is None:
        inputs = _NONES[len(node.edges)]
    elif saved is FREED:
        return None
    else:
        inputs = _raw(saved, pass_.strip, pass_.grad_on)
        if inputs is None:
            return None
    out = node.saved_out
    if out is None:
        return B.F, inputs, None
    if out.plain:  # (a plain output is a raw array: FREED is not plain)
        if out.counter.value == out.version and not pass_.grad_on:
            return B.F, inputs, out.content
    elif out is not FREED and out.level is pass_.strip and out.level is not None \
            and out.counter.value == out.version:
        c = out.content  # (a grad level's output: its value one level down)
        if type(c) is Tensor and not (c._meta is not None and c._meta.level_data) and \
                not (pass_.grad_on and c._requires_grad):
            return B.F, inputs, c._data
    return None


def _each_rule(each, edges, skip, F, g, out, inputs, extra, params):
    """The cotangents of a variadic op's inputs from its rule ``each(F, i, g, out, ...)``.
    (Not inlined in ``OpNode.backward``: a comprehension there would turn its locals into
    cells, made on every call.)"""
    result = []
    for i, e in enumerate(edges):
        result.append(None if e is None or (skip is not None and skip[i]) else
                      each(F, i, g, out, *inputs, *extra, **params))
    return result


class _Nones(dict):
    """``_NONES[n]``: the tuple of ``n`` Nones (the inputs of a node that saved none)."""

    def __missing__(self, n):
        nones = self[n] = (None,) * n
        return nones


_NONES = _Nones()


def expose_saved_names(ops):
    """Give OpNode the properties ``_saved_<name>`` and ``_raw_saved_<name>`` for the input
    and parameter names of ``ops``, and ``out`` (called once the registry is built): a saved
    value by the name of its rule's parameter, as PyTorch's ``grad_fn._saved_self`` (an
    input version-checked and unpacked, the output rebuilt); the raw one is what the node
    keeps. (Properties, not ``__getattr__``: a class with ``__getattr__`` pays on every
    attribute read, and the engine reads a node's attributes on its hot path.)"""
    names = {"out"}
    for op in ops:
        names.update(_input_names(op, 16 if op.nin < 0 else op.nin))
        names.update(p.name for p in list(inspect.signature(op.forward).parameters.values())[1:]
                     if p.kind is not p.VAR_POSITIONAL and p.kind is not p.VAR_KEYWORD)
    for name in sorted(names):
        if not hasattr(OpNode, f"_saved_{name}"):
            setattr(OpNode, f"_saved_{name}", property(
                lambda self, key=name: self._saved_by_name(key, False)))
            setattr(OpNode, f"_raw_saved_{name}", property(
                lambda self, key=name: self._saved_by_name(key, True)))


def _input_names(op, n):
    """The names of an op's ``n`` array inputs: its forward's parameters after the backend
    (``x``, ``y``), or ``arrays_0``, ``arrays_1``, ... for a variadic op (memoised)."""
    names = _NAMES.get((op, n))
    if names is None:
        names = _NAMES[(op, n)] = _find_input_names(op, n)
    return names


_NAMES = {}


def _find_input_names(op, n):
    names = []
    for p in list(inspect.signature(op.forward).parameters.values())[1:]:  # (after B)
        if p.kind is p.VAR_POSITIONAL:
            names.extend(f"{p.name}_{k}" for k in range(n - len(names)))
            break
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            names.append(p.name)
    return (names + [f"input_{k}" for k in range(len(names), n)])[:n]


def _raw(saved, strip, grad_on):
    """A node's saved inputs as raw arrays (a value of grad level ``strip`` one level down),
    or None when one must stay a Tensor, or is stale (the general read says so)."""
    inputs = []
    for v in saved:
        if type(v) is SavedValue:
            t = v.value
            if type(t) is not Tensor:
                t = t._lower_for(strip)
                if type(t) is not Tensor:
                    return None
            c = t._vcounter
            if (t._meta is not None and t._meta.level_data) or (grad_on and t._requires_grad) \
                    or (c is not None and c.value != v.version):
                return None
            v = t._data
        elif type(v) is PackedValue:
            return None  # (the general read unpacks it)
        inputs.append(v)
    return inputs


class AccumulateGrad(Node):
    """Sink node of a leaf that requires grad: accumulates into ``leaf.grad``."""

    __slots__ = ("variable",)

    def __init__(self, variable):
        self.variable = variable
        self.edges = ()
        # Unique and below every op node's: leaves accumulate after all ops have run, and
        # heap entries (-seq, node) never tie.
        self.seq = -1 - next(_acc_seq)
        self.hooks = None
        self.nout = 1

    def name(self):
        return "AccumulateGrad"


def leaf_accumulator(t):
    """The AccumulateGrad node of leaf ``t`` (created on first use, held weakly by ``t``)."""
    m = t._meta
    ref = m.accumulator if m is not None else None
    node = ref() if ref is not None else None
    if node is None:
        node = AccumulateGrad(t)
        _meta(t).accumulator = weakref.ref(node)
    return node


def edge_to(t):
    """The edge to input ``t`` (which requires grad): its node, output number, shape, dtype."""
    if t._meta is not None:
        _fresh(t)  # a view whose base changed in place: its history, regenerated
    fn = t._grad_fn
    if fn is None:
        fn, nr = leaf_accumulator(t), 0
    else:
        nr = t._output_nr
    if type(t) is Tensor:
        d = t._data
        return (fn, nr, d.shape, d.dtype)
    return (fn, nr, tuple(t.shape), t.dtype)


# ------------------------------------------------------------------ recording
_NO_PARAMS = {}  # shared by every node whose op got no parameters: never mutated


class LevelParams(dict):
    """A node's parameters when one holds a transform's value (vmap's batched index of
    ``x[i]`` under ``vmap(grad(...))``): the rules then run on Tensors (``pass_.read``),
    since the raw formula namespace cannot take that value."""

    __slots__ = ()


def _holds_level_value(v):
    if isinstance(v, Tensor):
        return type(v) is not Tensor
    if type(v) in (tuple, list):
        for u in v:
            if _holds_level_value(u):
                return True
    return False
_OpNode_new = object.__new__


def _record_plan(op, needs):
    """``(save_out, keep)`` for a node of ``op`` whose inputs ``needs`` a gradient:
    ``op.save_plan`` with ``keep`` one flag per input, or None when no input is saved."""
    save_out, mask = op.save_plan(needs)
    if mask is None:
        return save_out, (True,) * len(needs)
    return save_out, mask if True in mask else None


# Note [Small shortcuts on the hot path]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Three shortcuts are each under the 5 % an optimization must pay and are kept because
# together they pay it: `record` inlines `edge_to` for a plain Tensor (1 % of W1, forward
# and backward), `_plain_output` builds a plain single output's SavedOutput field by field
# (2.4 %), and `dispatch.apply` calls a forward without `**params` when there are none
# (1.3 %). Each measured on W1's chain by interleaved A/B on one core against the same code
# without it; the peer benchmark's W1 without all three: 4.28-4.29 us per op against
# 4.07-4.08 with them (PyTorch 4.06-4.14 in the same runs). The first two are copies of
# `edge_to` and of `SavedOutput.__init__`: tests/core/test_engine.py checks that each copy
# builds what the original does.
def record(op, args, outs, extra=(), params=_NO_PARAMS, needs=None):
    """Record one call of ``op``: the Node, linked as the ``grad_fn`` of ``outs``.

    Every op node is made here: by ``dispatch.apply`` for plain tensors and by the
    transforms for their levels' values. ``needs`` says which of ``args`` need a gradient
    (default: the Tensors that require grad; a transform passes its own view). The node
    saves what the op's rules for those inputs read (Note [What a node saves]).
    """
    edges = []
    key = 1  # which inputs need a gradient, one bit each after a leading 1 (the plan's key)
    if needs is None:
        for a in args:
            key <<= 1
            if type(a) is Tensor:  # edge_to, inlined (Note [Small shortcuts on the hot path])
                if not a._requires_grad:
                    edges.append(None)
                    continue
                if a._meta is not None:
                    _fresh(a)
                fn = a._grad_fn
                d = a._data
                edges.append((leaf_accumulator(a), 0, d.shape, d.dtype) if fn is None
                             else (fn, a._output_nr, d.shape, d.dtype))
            elif isinstance(a, Tensor) and a._requires_grad:
                edges.append(edge_to(a))
            else:
                edges.append(None)
                continue
            key |= 1
    else:
        for a, need in zip(args, needs):
            key <<= 1
            if need:
                edges.append(edge_to(a))
                key |= 1
            else:
                edges.append(None)
    plan = op._save_cache.get(key)
    if plan is None:
        plan = op._save_cache[key] = _record_plan(op, tuple(e is not None for e in edges))
    save_out, keep = plan
    node = _OpNode_new(OpNode)
    if keep is None:
        node.saved = _lazy_standins(args) if _DASK["backend"] is not None and \
            op._meta_standins else None  # (a Dask input: Note [Lazy gradients])
    else:
        saved = []
        for a, kept in zip(args, keep):
            if not kept:
                saved.append(None)
            elif isinstance(a, Tensor):
                m = a._meta
                if m is not None and m.inference:
                    _raise_inference_save(op.name)
                saved.append(save_value(a) if SAVED_HOOK_THREADS[0] else SavedValue(a))
            else:
                saved.append(a)
        node.saved = saved
    node.op = op
    node.extra = extra
    if params:
        for v in params.values():
            if _holds_level_value(v):
                params = LevelParams(params)
                break
        node.params = params
    else:
        node.params = _NO_PARAMS
    node.edges = edges
    node.seq = next(_seq)
    node.hooks = None
    if _ANOMALY[0]:
        node.hooks = NodeHooks(anomaly.forward_trace())
    if op.nout == 1:  # (a single output's node has no out_meta: only _materialize reads it)
        node.nout = 1
        t = outs[0]
        t._grad_fn = node
        t._output_nr = 0
        t._requires_grad = True
        if not save_out:
            node.saved_out = None
        elif type(t) is Tensor and not _STACK and not SAVED_HOOK_THREADS[0]:
            node.saved_out = _plain_output(t)
        else:
            node.saved_out = save_output(outs, True)
    else:
        node.nout = len(outs)
        node.out_meta = tuple((tuple(o.shape), o.dtype) for o in outs)
        for i, t in enumerate(outs):
            t._grad_fn = node
            t._output_nr = i
            t._requires_grad = True
        node.saved_out = save_output(outs, False) if save_out else None
    return node


def _plain_output(t):
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


_ANOMALY = anomaly.ENABLED


# ------------------------------------------------------------------ gradients
# Note [Broadcasting is undone by the engine]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A vjp rule may return its cotangent in the broadcast (output) shape. `fit_gradient` sums it
# back to the input's shape (over leading dimensions and over dimensions the input had as 1),
# casts it to the input's dtype (a real input's cotangent keeps the real part), and then
# validates shape and dtype, naming the Node on a mismatch. It is the only place that does:
# op rules, custom Functions' backward and hooks all go through it.
def fit_gradient(g, shape, dtype, node, i, *, checked=False, array_type=None):
    """``g`` (a raw array or a Tensor) as the gradient of input ``i`` of ``node``, which has
    ``shape`` and ``dtype`` (Note [Broadcasting is undone by the engine]).

    ``checked`` (for gradients users give: a Function's backward, a hook) also refuses what
    no broadcasting or cast can fix: a non-Tensor, an integer or bool gradient, a complex
    gradient for a real input, a gradient on another device than ``array_type``'s."""
    if checked:
        _check_given(g, dtype, node, i, array_type)
    try:
        gshape = tuple(g.shape)
    except AttributeError:  # a Python number (e.g. 1j * a NumPy scalar in a rule)
        g = NUMPY.asarray(g)
        gshape = g.shape
    if gshape != shape:
        nd = len(gshape) - len(shape)
        if nd < 0:
            raise RuntimeError(_bad_shape(node, i, gshape, shape))
        axes = list(range(nd))  # (a loop, not a comprehension: no cells on this path)
        for k, s in enumerate(shape):
            if s == 1:
                if gshape[k + nd] != 1:
                    axes.append(k + nd)
            elif gshape[k + nd] != s:
                raise RuntimeError(_bad_shape(node, i, gshape, shape))
        axes = tuple(axes)
        if axes:
            g = g.sum(axis=axes, keepdims=True)
        if nd:
            g = g.reshape(shape)
    gd = g.dtype
    if gd != dtype:
        if gd.kind == "c" and dtype.kind != "c":
            g = g.real
        if g.dtype != dtype:
            g = g.astype(dtype)
    return g


def _check_given(g, dtype, node, i, array_type):
    if not isinstance(g, Tensor):
        raise RuntimeError(
            f"function {node.name()} returned a {type(g).__name__} as the gradient at index "
            f"{i}; expected a Tensor or None (wrap arrays with ndgrad.asarray)")
    if not is_differentiable_dtype(g.dtype) or (g.dtype.kind == "c" and dtype.kind != "c"):
        raise RuntimeError(
            f"Function {node.name()} returned an invalid gradient at index {i} - expected a "
            f"gradient of dtype {dtype} (or another floating dtype) for an input of dtype "
            f"{dtype}, but got dtype {g.dtype}")
    if array_type is not None and type(g) is Tensor and type(g._data) is not array_type:
        raise RuntimeError(
            f"Function {node.name()} returned an invalid gradient at index {i} - got a "
            f"gradient on {g.device}, but the input is a {array_type.__name__} on another "
            "device; move it with .to()")


def _bad_shape(node, i, got, want):
    return (f"Function {node.name()} returned an invalid gradient at index {i} - got "
            f"{list(got)} but expected shape compatible with {list(want)}")

