"""The backward graph: Nodes, the one way to record a node and what it saves, the leaves'
AccumulateGrad nodes, and the one check of a gradient against its input.

A :class:`Node` is recorded (:func:`record`) for each operation whose inputs require grad.
It keeps what its vjp rules read (and nothing else) as saved values (core/saved.py), one
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
an ``InputMeta`` stand-in (core/saved.py). So ``s = a.sum(); a += 1; s.backward()`` is fine, as in
PyTorch.

Saved values, their versions and saved-tensor hooks are core/saved.py's (Note [Saved tensors
and versions] there); a node saves through :func:`save_value` and :func:`save_output` here.
"""

from __future__ import annotations

import itertools
import weakref

import numpy as _np

from . import anomaly
from . import levels
from .backend import _BACKEND_BY_TYPE, _STAND_INS, NUMPY, is_differentiable_dtype
from .grad_mode import SAVED_HOOK_THREADS
from .hooks import NodeHooks, add_hook
from .saved import (FREED, FREED_MSG, SAVED_TYPES, InputMeta, PackedOutput, PackedValue,
                    SavedOutput, SavedValue, hookable, hooks_now, plain_output, stand_ins,
                    raise_inference_save)
from .tensor import Tensor, _fresh, _meta

__all__ = ["Node", "OpNode", "AccumulateGrad", "save_value", "save_output", "record",
           "record_node", "link_outputs", "fit_gradient", "leaf_accumulator", "edge_to"]

_seq = itertools.count()
_NDARRAY = NUMPY.array_type
# NumPy scalars (what NumPy gives for 0-d results) are raw cotangents of the CPU backend
_SCALARS = {t: NUMPY for t in (_np.float64, _np.float32, _np.float16, _np.complex128,
                                 _np.complex64)}
_acc_seq = itertools.count()


def save_value(t):
    """What a node keeps of tensor ``t``, an input or intermediate it saves: a SavedValue,
    or a PackedValue under saved-tensor hooks (Note [Saved-tensor hooks])."""
    if SAVED_HOOK_THREADS[0] and hookable(t):
        hooks = hooks_now()
        if hooks is not None:
            leaf = t._requires_grad and t._grad_fn is None
            return PackedValue(t, hooks, leaf_accumulator(t) if leaf else None)
    return SavedValue(t)


def save_output(outs, single, nr=0, diff=True):
    """What a node keeps of its output(s) ``outs``: a SavedOutput, or a PackedOutput under
    saved-tensor hooks."""
    if SAVED_HOOK_THREADS[0] and all(hookable(t) for t in outs):
        hooks = hooks_now()
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

    __slots__ = ("edges", "seq", "hooks", "nout", "out_meta", "_metadata", "__weakref__")

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

    def _items_saved(self):
        """``(name, value)`` for each value this node saved (none here): for pictures and
        memory reports, and ``grad_fn._saved_<name>`` (core/ops/__init__.py)."""
        return []

    @property
    def metadata(self):
        """A dict for the user's own notes about this node (made on first use)."""
        try:
            return self._metadata
        except AttributeError:
            self._metadata = {}
            return self._metadata

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

    __slots__ = ("op", "extra", "params", "saved", "saved_out")

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

    def _items_saved(self):
        """``(name, value)`` for each value this node saved, without a version check: the
        inputs under the names of the op's parameters, ``out`` for the output (its content),
        then the op's other parameters. For introspection (``grad_fn._saved_x``), pictures
        and memory reports."""
        items = []
        saved = self.saved
        if saved is not None and saved is not FREED:
            names = self.op.input_names(len(saved))
            items.extend((names[k], v.value if type(v) in SAVED_TYPES else v)
                         for k, v in enumerate(saved) if v is not None)
        out = self.saved_out
        if out is not None and out is not FREED:
            items.append(("out", out.content if type(out) is SavedOutput else
                          out.packed[0] if out.single else out.packed))
        items.extend(self.params.items())
        return items

    def _unpack(self):
        saved = self.saved
        if saved is None:
            return [None] * len(self.edges)
        if saved is FREED:
            raise RuntimeError(FREED_MSG)
        values = []
        for k, v in enumerate(saved):
            values.append(v.unpack(self, k) if type(v) in SAVED_TYPES else v)
        return values

    def _checked_out(self):
        out = self.saved_out
        if out is not None:
            if out is FREED:
                raise RuntimeError(FREED_MSG)
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
_STACK = levels.STACK  # (no level exists: a plain output's SavedOutput, field by field)


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
# and backward), `plain_output` builds a plain single output's SavedOutput field by field
# (2.4 %), and `dispatch.apply` calls a forward without `**params` when there are none
# (1.3 %; that call is now the op's bound forward, Note [Forwards that hand their arguments
# on] in core/ops/registry.py, which takes no parameters). Each measured on W1's chain by
# interleaved A/B on one core against the same code without it; the peer benchmark's W1
# without all three: 4.28-4.29 us per op against 4.07-4.08 with them (PyTorch 4.06-4.14 in
# the same runs). The first two are copies of `edge_to` and of `SavedOutput.__init__`:
# tests/core/test_engine.py checks that each copy builds what the original does.
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
        node.saved = stand_ins(args) if _STAND_INS["on"] and op._meta_standins else None
        # (an input of a backend with stand-ins: Note [Backend plug-ins] in core/backend.py)
    else:
        saved = []
        for a, kept in zip(args, keep):
            if not kept:
                saved.append(None)
            elif isinstance(a, Tensor):
                m = a._meta
                if m is not None and m.inference:
                    raise_inference_save(op.name)
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
    node.seq = next(_seq)  # (record_node's stamps, inlined: Note [One recorder])
    node.hooks = NodeHooks(anomaly.forward_trace()) if _ANOMALY[0] else None
    if op.nout == 1:  # (a single output's node has no out_meta: only _materialize reads it)
        node.nout = 1
        t = outs[0]
        t._grad_fn = node
        t._output_nr = 0
        t._requires_grad = True
        if not save_out:
            node.saved_out = None
        elif type(t) is Tensor and not _STACK and not SAVED_HOOK_THREADS[0]:
            node.saved_out = plain_output(t)
        else:
            node.saved_out = save_output(outs, True)
    else:
        link_outputs(node, outs)
        node.saved_out = save_output(outs, False) if save_out else None
    return node


_ANOMALY = anomaly.ENABLED


def link_outputs(node, outs):
    """Make ``node`` the ``grad_fn`` of ``outs`` (its outputs 0, 1, ...) and give it what the
    engine reads of a node's outputs: ``nout``, and ``out_meta`` (each output's shape and
    dtype: the zeros of an output that got no gradient). Every node of several outputs gets
    them here: ``record``'s, and those of :func:`record_node`."""
    node.nout = len(outs)
    node.out_meta = tuple((tuple(o.shape), o.dtype) for o in outs)
    for i, t in enumerate(outs):
        t._grad_fn = node
        t._output_nr = i
        t._requires_grad = True


# Note [One recorder]
# ~~~~~~~~~~~~~~~~~~~
# Every node of a graph gets the same stamps when it is recorded: its edges, a sequence
# number drawn after its inputs' nodes got theirs (the engine's order), anomaly mode's trace
# of the forward call, and its outputs' count. An op's node gets them in `record` (inlined
# there: the hot path, Note [Small shortcuts on the hot path]); every other node gets them
# from `record_node`: a custom Function's at the bottom and at a grad level
# (core/function.py's finish_node), once_differentiable's DelayedError. The saved values'
# version stamps come from the same `save_value` / `save_output` for all of them. Nothing
# else numbers a node or asks anomaly mode for a trace (tests/core/test_function.py checks).
def record_node(node, edges, outs, link=True):
    """Record ``node``, a Node that is no op's (a custom Function's, once_differentiable's
    DelayedError), as ``record`` records an op's (Note [One recorder]): its ``edges``, its
    sequence number after its inputs' nodes, anomaly mode's trace, and its outputs ``outs``
    linked (:func:`link_outputs`); with ``link`` False only counted (``nout``): a Function
    links its outputs itself (some are no tensors, non-differentiable or rebased). Hooks
    the node got before (a Function's ctx in its forward) are kept."""
    node.edges = tuple(edges)
    node.seq = next(_seq)
    if _ANOMALY[0]:
        if node.hooks is None:
            node.hooks = NodeHooks(anomaly.forward_trace())
        else:
            node.hooks.trace = anomaly.forward_trace()
    if link:
        link_outputs(node, outs)
    else:
        node.nout = len(outs)


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

