"""The backward engine: runs the graph from roots to leaves.

Iterative (no recursion: a chain of 100,000 ops is fine). Nodes run in decreasing sequence
number from a heap: a Node is always created after the Nodes of its inputs, so when a Node
is popped every cotangent it will receive has arrived and no dependency counting is needed.
One :class:`BackwardPass` holds what a run knows (its options, what it captures, how nodes
read their saved values); every node's gradients go through ``graph.fit_gradient``
(Note [Broadcasting is undone by the engine] in core/graph.py), and a leaf's reach its
``.grad`` through ``accumulate.accumulate_into``.

Note [Formulas on arrays or on Tensors]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
A node's vjp rules run on raw arrays with the backend's namespace ``F`` (first order at NumPy
speed) unless something they read must be recorded or transformed: then they run on Tensors
with ndgrad's ``F``, so their own operations are recorded (higher order) and processed by the
transform levels their values belong to. The engine decides per node, from the values
themselves: a value must stay a Tensor when it is a transform's value (a Tensor subclass,
or a tensor carrying a level's data such as a tangent), or when it requires grad while the
pass records (``create_graph``). So ``create_graph`` only says whether the pass records;
forward over reverse (a cotangent carrying a tangent), reverse over reverse with respect to
the cotangent, and per-example gradients under vmap need no flag. A pass over the graph of a
``func.grad``/``vjp`` level reads that level's values one level down (``_lower_for``) unless
it records at that level: the transform's own pass computes the gradient as the levels
outside see it.
"""

from __future__ import annotations

# Note [No cells on the hot path]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A comprehension, generator or lambda inside a function that reads one of the function's
# locals turns that local into a cell: made on every call and read through an indirection
# (from Python 3.12 list, dict and set comprehensions are inlined and make none; generator
# expressions and lambdas still do).
# The functions every op or every node goes through (apply, record, OpNode.backward, _run,
# the levels' process) use loops or small helpers instead. In OpNode.backward alone the
# eight cells of one comprehension cost 8 % of a backward pass of small ops (W1 of the peer
# benchmark). tests/core/test_engine.py checks these functions for cell variables.

from heapq import heappop, heappush
from operator import attrgetter

from . import anomaly
from .backend import backend_of
from .dispatch import TENSOR_F
from .grad_mode import PROFILER, STATE, current_pass
from .hooks import run_posthooks, run_prehooks, run_tensor_hooks
from .accumulate import accumulate_into, owned_by_engine
from .graph import AccumulateGrad, OpNode, fit_gradient, leaf_accumulator
from .tensor import Tensor, _as_tensor, _wrap_raw

__all__ = ["run_backward", "BackwardPass", "current_pass", "queue_callback"]


class BackwardPass:
    """One run of the engine: its options, what it captures, and how nodes read their
    saved values (Note [Formulas on arrays or on Tensors])."""

    __slots__ = ("grad_on", "strip", "retain_graph", "accumulate", "inputs", "capture",
                 "results", "needed", "owned", "callbacks", "deferred")

    def __init__(self, retain_graph, create_graph, level, inputs, accumulate):
        self.grad_on = bool(create_graph)
        # a func.grad/vjp level's values are read one level down, unless the pass records
        # at that (live) level
        self.strip = level if level is not None and (
            not level.alive or not create_graph) else None
        self.retain_graph = retain_graph
        self.accumulate = accumulate
        self.inputs = inputs
        self.capture = None
        self.results = None
        self.needed = None
        self.owned = {}  # AccumulateGrad node -> its gradient array is the engine's alone
        self.callbacks = []  # run when the pass ends (queue_callback)
        self.deferred = None  # (leaf, gradient) pairs finished when the pass ends (Note
        #                       [Deferred gradients] in core/accumulate.py)

    def read(self, node, grads):
        """``(F, inputs, out, grads)`` for the rules of ``node`` when a value they read must
        stay a Tensor: everything as Tensors (a grad level's values one level down)."""
        strip = self.strip
        inputs = node._unpack()
        if strip is not None:
            for k, v in enumerate(inputs):
                if isinstance(v, Tensor):
                    inputs[k] = v._lower_for(strip)
        out = node._checked_out()
        if out is not None:
            out = out.content if out.level is strip and strip is not None else out.rebuild(node)
        tensors = []  # (loops, not comprehensions: those would make `strip` a cell)
        for g in grads:
            tensors.append(g if g is None else g._lower_for(strip) if isinstance(g, Tensor)
                           else _wrap_raw(g))
        return TENSOR_F, inputs, out, tensors


# ------------------------------------------------------------------ the run
def _graph_level(roots):
    """The transform level whose graph the roots' histories are in (None: plain tensors)."""
    levels = {t._autograd_level() for t in roots}
    if len(levels) > 1:
        raise RuntimeError(
            "backward()/grad(): the outputs belong to the graphs of different function "
            "transforms (e.g. one computed inside ndgrad.func.grad and one outside it); "
            "differentiate them separately")
    return levels.pop() if levels else None


def run_backward(roots, grads, retain_graph, create_graph, inputs=None, accumulate=True,
                 all_needed=False):
    """Run the graph from ``roots`` with cotangents ``grads``. Accumulates into leaves'
    ``.grad`` (``accumulate``), or returns the gradients of ``inputs``. ``all_needed``: the
    caller knows that every node of the graph leads to one of ``inputs`` (Note [Passes that
    need every node]).

    Grad mode during the pass is ``create_graph`` (Note [Formulas on arrays or on
    Tensors])."""
    p = BackwardPass(retain_graph, create_graph, _graph_level(roots), inputs, accumulate)
    prev = STATE.grad_enabled
    STATE.grad_enabled = p.grad_on
    outer = STATE.backward_passes
    STATE.backward_passes = outer + (p,)
    try:
        results = _run(roots, grads, p, all_needed)
        for fn in p.callbacks:  # (a callback may queue another: it runs too)
            fn()
        return results
    finally:
        STATE.backward_passes = outer
        STATE.grad_enabled = prev


def queue_callback(fn):
    """Run ``fn()`` once the backward pass running in this thread has finished (after every
    gradient of the pass is accumulated), as PyTorch's engine ``queue_callback``."""
    p = current_pass()
    if p is None:
        raise RuntimeError("queue_callback can only be called while a backward pass runs "
                           "(from a hook); there is none in this thread")
    p.callbacks.append(fn)


def _root_edge(t):
    if t._grad_fn is not None:
        return t._grad_fn, t._output_nr
    return leaf_accumulator(t), 0


# Note [Passes that need every node]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A pass that returns the gradients of some inputs runs only the nodes that lead to one of
# them (`_needed_nodes`, a walk of the whole graph before the pass). The pass of `func.grad`,
# `vjp` and `jacrev` over a grad level's graph asks for every leaf the level tracks, and its
# graph has edges only to the level's own values that require grad, which all descend from
# those leaves: every node is needed, and the walk (about 6 % of a `func.grad` of ten ops,
# benchmarks/bench_overhead.py T1) is skipped. A leaf the user makes inside the function
# (`requires_grad_()` on a value of the level) breaks this; the level then says so and the
# walk is done (functional/grad_level.py, `_GradInfo.extra_leaves`). A value of the level
# never carries a node of another graph: a custom Function none of whose inputs is the
# level's runs below it, so a tensor its forward makes is not lifted into the level (Note
# [Functions under transforms] in core/function.py).
def _needed_nodes(start, targets):
    """``(needed, whole)``: for each node reachable from ``start``, whether some target node
    is reachable from it; and the nodes that are needed, are no target, and need every one of
    their inputs: those take the engine's common path."""
    seen = set(start)
    stack = list(seen)
    order = []
    while stack:
        node = stack.pop()
        order.append(node)
        for e in node.edges:
            if e is not None and e[0] not in seen:
                seen.add(e[0])
                stack.append(e[0])
    order.sort(key=_SEQ)  # a node's inputs were made before it: they come first
    needed = {}
    whole = set()
    for node in order:
        if node in targets:
            needed[node] = True
            continue
        some = False
        every = True
        for e in node.edges:
            if e is not None:
                if needed[e[0]]:
                    some = True
                else:
                    every = False
        needed[node] = some
        if some and every:
            whole.add(node)
    return needed, whole


_SEQ = attrgetter("seq")


# Note [A chain skips the heap]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# When a node's gradients make exactly one node ready and no other node waits (a chain of
# ops, the common shape of a small computation), that node runs next whatever its sequence
# number: it is kept aside (`ready`) instead of going through the heap. If another node
# becomes ready too, it is pushed like any other. It is the right next node: every node
# that holds a gradient is in the heap or is `ready`, and a node that has none yet can only
# get one through them. Measured: 7 % of the backward pass of the peer benchmark's W1 (3 %
# of forward + backward), interleaved runs on one core.
def _run(roots, grads, p, all_needed=False):
    buffers = {}
    heap = []  # (-seq, node): sequence numbers are unique, so nodes are never compared
    if p.inputs is not None:
        # capture: (node, output_nr) -> indices in inputs (leaves: their AccumulateGrad node)
        p.capture = {}
        for k, t in enumerate(p.inputs):
            p.capture.setdefault(_root_edge(t), []).append(k)
        p.results = [None] * len(p.inputs)
    for t, g in zip(roots, grads):
        if g is None:
            continue
        node, nr = _root_edge(t)
        buf = buffers.get(node)
        if buf is None:
            buf = buffers[node] = [None] * node.nout
            heappush(heap, (-node.seq, node))
        buf[nr] = g if buf[nr] is None else _add(buf[nr], g)
    needed = whole = None
    if p.capture is not None and not all_needed:
        # only run what leads to a requested input
        needed, whole = _needed_nodes([e[1] for e in heap], {key[0] for key in p.capture})
        p.needed = needed
    # anomaly mode: every node takes the general path (Note [Anomaly mode costs nothing when off]);
    # so does profiling, which times each node there (Note [Profiling] in core/grad_mode.py)
    profiler = PROFILER[0]
    general = anomaly.ENABLED[0] or profiler is not None
    retain = p.retain_graph
    owned = p.owned
    pop = buffers.pop
    ready = None  # the one node ready to run, not pushed (Note [A chain skips the heap])
    while True:
        if ready is not None:
            node = ready
            ready = None
        elif heap:
            node = heappop(heap)[1]
        else:
            break
        grads_out = pop(node)
        if type(node) is OpNode and not general and node.hooks is None and node.nout == 1 \
                and (whole is None or node in whole):
            if grads_out[0] is None:
                continue
            grads_in = node.backward(p, grads_out)  # the common case
        else:
            if profiler is None:
                grads_in = _general_node(node, grads_out, p)
            else:
                grads_in = profiler.node(_general_node, node, grads_out, p)
            if grads_in is None:
                continue
        for edge, gi in zip(node.edges, grads_in):
            if edge is None or gi is None:
                continue
            nxt, nr, shape, dtype = edge
            try:
                fits = gi.shape == shape and gi.dtype == dtype
            except AttributeError:  # a Python number (e.g. 1j * a NumPy scalar in a rule)
                fits = False
            if not fits:
                gi = fit_gradient(gi, shape, dtype, node, _index(node.edges, edge))
            if needed is not None and not needed.get(nxt, False):
                continue
            buf = buffers.get(nxt)
            if buf is None:
                buf = buffers[nxt] = [None] * nxt.nout
                if ready is None and not heap:
                    ready = nxt
                else:
                    heappush(heap, (-nxt.seq, nxt))
                buf[nr] = gi
                if type(nxt) is AccumulateGrad:
                    owned[nxt] = owned_by_engine(gi, node, grads_out, grads_in)
            else:
                cur = buf[nr]
                if cur is None:
                    buf[nr] = gi
                else:
                    buf[nr] = _add(cur, gi)
                    if type(nxt) is AccumulateGrad:
                        owned[nxt] = True  # a sum the engine just made
        if not retain:
            node.release()
        if ready is not None and heap:  # not the only one: it waits its turn
            heappush(heap, (-ready.seq, ready))
            ready = None
    return p.results


_OP_BACKWARD = OpNode.backward  # (nodes whose rules can be skipped one by one)


def _index(edges, edge):
    """The input number of ``edge`` (for error messages)."""
    return next(i for i, e in enumerate(edges) if e is edge)


def _general_node(node, grads_out, p):
    """Everything but the common case: leaves, hooks, capture, several outputs, anomaly
    traces, custom Functions. Returns the input gradients, or None when nothing flows on."""
    needed = p.needed
    if needed is not None and not needed.get(node, False):
        return None
    if type(node) is AccumulateGrad:
        _accumulate_node(node, grads_out[0], p)
        return None
    hooks = node.hooks
    if hooks is not None:
        grads_out = run_prehooks(node, grads_out)
    if p.capture is not None:
        _capture(node, grads_out, p)
    if node.nout > 1:
        if all(g is None for g in grads_out):
            return None
        if any(g is None for g in grads_out) and node.materializes:
            grads_out = _materialize(node, grads_out)
    elif grads_out[0] is None:
        return None
    skip = None
    if needed is not None and len(node.edges) > 1 and type(node).backward is _OP_BACKWARD:
        # rules of inputs that lead to no requested input are not run (they may not exist:
        # gammainc's in its shape parameter)
        skip = _unneeded_inputs(node.edges, needed)
    try:  # (a try costs nothing until it catches)
        grads_in = node.backward(p, grads_out, skip)
        if anomaly.ENABLED[0] and anomaly._CHECK_NAN[0]:
            anomaly.check_nan(node, grads_in)
    except Exception as exc:
        if node.hooks is not None and node.hooks.trace is not None:
            anomaly.annotate(node, exc)
        raise
    if len(grads_in) != len(node.edges):  # (here only: an OpNode gives one per input)
        raise RuntimeError(f"function {node.name()} returned an incorrect number of "
                           f"gradients (expected {len(node.edges)}, got {len(grads_in)})")
    if hooks is not None and hooks.post:
        grads_in = _fitted(node, grads_in)
        grads_in = run_posthooks(node, grads_in, grads_out)
    return grads_in


# (helpers, not comprehensions in _general_node: those would make its locals cells, created on
# every call)
def _unneeded_inputs(edges, needed):
    """Per input: True when it leads to no requested input; None when all do."""
    skip = []
    for e in edges:
        skip.append(e is not None and not needed.get(e[0], False))
    return skip if True in skip else None


def _fitted(node, grads_in):
    """``grads_in`` fitted to the node's inputs (before post-hooks see them)."""
    fitted = []
    for i, (gi, e) in enumerate(zip(grads_in, node.edges)):
        fitted.append(None if gi is None or e is None else fit_gradient(gi, e[2], e[3], node, i))
    return fitted


def _add(a, b):
    """Sum two cotangents (raw arrays, or Tensors: then the sum is an op like any other)."""
    if isinstance(a, Tensor) or isinstance(b, Tensor):
        return _as_tensor(a) + _as_tensor(b)
    return a + b


def _capture(node, grads_out, p):
    """Record (or accumulate) the gradient of requested non-leaf inputs made by ``node``."""
    for nr in range(node.nout):
        ks = p.capture.get((node, nr))
        if ks is not None and grads_out[nr] is not None:
            _deliver(p, ks, grads_out[nr])


def _deliver(p, ks, g):
    """Gradient ``g`` of the requested inputs ``ks``: returned, or accumulated into them."""
    for k in ks:
        if p.accumulate:
            accumulate_into(p.inputs[k], g, p.grad_on)
        else:
            p.results[k] = g


def _accumulate_node(node, g, p):
    """A leaf's AccumulateGrad: leaf hooks, then accumulate into .grad or capture."""
    owned = p.owned.pop(node, False)
    if g is None:
        return
    leaf = node.variable
    m = leaf._meta
    hooks = node.hooks
    if (m is not None and m.hooks) or (hooks is not None and hooks.pre):
        owned = False  # a hook may keep a reference
        if m is not None and m.hooks:
            g = run_tensor_hooks(m.hooks, g)
        if hooks is not None and hooks.pre:
            g = run_prehooks(node, [g])[0]
    ks = p.capture.get((node, 0)) if p.capture is not None else None
    if ks is not None:
        _deliver(p, ks, g)
    elif p.accumulate and p.capture is None:
        accumulate_into(leaf, g, p.grad_on, owned)
    if hooks is not None and hooks.post:
        run_posthooks(node, [], [g])


def _materialize(node, grads_out):
    """Zeros for the outputs of a multi-output node that got no gradient."""
    out = list(grads_out)
    ref = next(x for x in grads_out if x is not None)
    for k, g in enumerate(out):
        if g is None:
            shape, dtype = node.out_meta[k]
            if isinstance(ref, Tensor):
                out[k] = TENSOR_F.zeros(shape, dtype=dtype, like=ref)
            else:
                out[k] = backend_of(ref).zeros(shape, dtype=dtype)
    return out


