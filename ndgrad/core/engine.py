"""The backward engine: runs the graph from roots to leaves.

Iterative (no recursion: a chain of 100,000 ops is fine). Nodes run in decreasing sequence
number from a heap: a Node is always created after the Nodes of its inputs, so when a Node
is popped every cotangent it will receive has arrived and no dependency counting is needed.
One :class:`BackwardPass` holds what a run knows (its options, what it captures, how nodes
read their saved values); every node's gradients go through ``graph.fit_gradient``
(Note [Broadcasting is undone by the engine] in core/graph.py).

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

from heapq import heappop, heappush

from . import anomaly
from .backend import _BACKEND_BY_TYPE, NUMPY, backend_of, is_differentiable_dtype
from .dispatch import TENSOR_F
from .grad_mode import STATE
from .graph import (FREED, AccumulateGrad, OpNode, SavedOutput, SavedValue, fit_gradient,
                    leaf_accumulator)
from .tensor import Tensor, _fresh, _new, _wrap_raw

__all__ = ["backward", "grad", "run_backward", "accumulate_into", "BackwardPass"]


class BackwardPass:
    """One run of the engine: its options, what it captures, and how nodes read their
    saved values (Note [Formulas on arrays or on Tensors])."""

    __slots__ = ("grad_on", "strip", "plain", "retain_graph", "accumulate", "inputs",
                 "capture", "results", "needed", "owned")

    def __init__(self, retain_graph, create_graph, level, inputs, accumulate):
        self.grad_on = bool(create_graph)
        # a func.grad/vjp level's values are read one level down, unless the pass records
        # at that (live) level
        self.strip = level if level is not None and (
            not level.alive or not create_graph) else None
        # nothing records and no level's values are read through: nodes may read raw arrays
        self.plain = not self.grad_on and self.strip is None
        self.retain_graph = retain_graph
        self.accumulate = accumulate
        self.inputs = inputs
        self.capture = None
        self.results = None
        self.needed = None
        self.owned = {}  # AccumulateGrad node -> its gradient array is the engine's alone

    def read(self, inputs, out, grads, node):
        """``(F, inputs, out, grads)`` for a node's rules, from its unpacked saved inputs,
        its saved output (a SavedOutput or None) and its incoming gradients."""
        strip = self.strip
        grad_on = self.grad_on
        on_tensors = False
        for k, v in enumerate(inputs):
            if isinstance(v, Tensor):
                if type(v) is not Tensor:
                    v = inputs[k] = v._lower_for(strip)
                    if type(v) is not Tensor:
                        on_tensors = True
                        continue
                m = v._meta
                if (m is not None and m.level_data) or (grad_on and v._requires_grad):
                    on_tensors = True
        lowered_out = None
        if out is not None:
            if out.cls is Tensor:
                if grad_on or (out.meta is not None and _has_level_data(out.meta)):
                    on_tensors = True
            elif strip is not None and out.level is strip:
                content = out.content
                lowered_out = content  # the inner value(s): the output one level down
                for c in (content if type(content) is tuple else (content,)):
                    if type(c) is not Tensor or _live(c, grad_on):
                        on_tensors = True
            else:
                on_tensors = True  # a transform's value (a batch): rebuilt as a Tensor
        gs = list(grads)
        for i, g in enumerate(gs):
            if isinstance(g, Tensor):
                if type(g) is not Tensor:
                    g = gs[i] = g._lower_for(strip)
                    if type(g) is not Tensor:
                        on_tensors = True
                        continue
                if _live(g, grad_on):
                    on_tensors = True
        if on_tensors:
            for i, g in enumerate(gs):
                if g is not None and not isinstance(g, Tensor):
                    gs[i] = _wrap_raw(g)
            if out is not None:
                out = lowered_out if lowered_out is not None else out.rebuild(node)
            return TENSOR_F, inputs, out, gs
        for k, v in enumerate(inputs):
            if type(v) is Tensor:
                inputs[k] = v._data
        if out is not None:
            out = lowered_out if lowered_out is not None else out.content
            if type(out) is tuple and out and type(out[0]) is Tensor:
                out = tuple(o._data for o in out)
            elif type(out) is Tensor:
                out = out._data
        g0 = None
        for i, g in enumerate(gs):
            if type(g) is Tensor:
                g = gs[i] = g._data
            if g0 is None and g is not None:
                g0 = g
        return _BACKEND_BY_TYPE.get(type(g0), NUMPY).F, inputs, out, gs


def _live(v, grad_on):
    """Whether Tensor ``v`` must stay a Tensor in a formula (Note [Formulas on arrays or on
    Tensors])."""
    m = v._meta
    return (m is not None and bool(m.level_data)) or (grad_on and v._requires_grad)


def _has_level_data(meta):
    metas = meta if type(meta) is tuple else (meta,)
    return any(m.level_data for m in metas)


# ------------------------------------------------------------------ roots
def _as_tuple(x):
    if isinstance(x, Tensor):
        return (x,)
    if x is None:
        return ()
    return tuple(x)


def _roots_and_grads(fname, what, roots, grads):
    """Validate the roots of a backward pass; return one gradient (or None) per root."""
    if grads is None:
        grads = (None,) * len(roots)
    elif isinstance(grads, Tensor) or not isinstance(grads, (tuple, list)):
        grads = (grads,)
    grads = tuple(grads)
    if len(grads) != len(roots):
        raise RuntimeError(f"{fname}(): got {len(grads)} gradients for {len(roots)} {what}; pass "
                           f"one gradient (or None) per entry of {what}")
    for i, t in enumerate(roots):
        if not isinstance(t, Tensor):
            raise TypeError(f"{fname}(): {what}[{i}] is a {type(t).__name__}, not a Tensor")
        if t._meta is not None:
            _fresh(t)  # a view whose base changed in place: its history, regenerated
        if not t._requires_grad:
            raise RuntimeError(
                f"element {i} of tensors does not require grad and does not have a grad_fn. "
                "Make sure an input of the computation has requires_grad=True and that it did "
                "not run under ndgrad.no_grad()."
            )
    return grads


def make_grads(outputs, grad_outputs, is_grads_batched=False):
    """Validate or create the root cotangents: raw arrays, or Tensors where they must stay
    Tensors (they require grad, or are a transform's values)."""
    result = []
    for i, (out, g) in enumerate(zip(outputs, grad_outputs)):
        if g is None:
            if not out._requires_grad:
                result.append(None)
                continue
            if out.size != 1:
                raise RuntimeError(
                    f"grad can be implicitly created only for scalar outputs; output {i} has "
                    f"shape {list(out.shape)}. Pass grad_outputs (or backward's gradient) with "
                    "the output's shape, e.g. ndgrad.ones_like(output)."
                )
            if out.dtype.kind == "c":
                raise RuntimeError(
                    f"grad can be implicitly created only for real scalar outputs; output {i} "
                    f"has dtype {out.dtype}. Pass grad_outputs explicitly."
                )
            B = out.backend
            with B.on(out.device):
                result.append(B.ones(tuple(out.shape), dtype=out.dtype))
            continue
        if not isinstance(g, Tensor):
            g = out.backend.asarray(g)
        gshape = tuple(g.shape)[1:] if is_grads_batched else tuple(g.shape)
        gdev = g.device if isinstance(g, Tensor) else backend_of(g).device_of(g)
        if gdev != out.device:
            raise RuntimeError(
                f"grad_output[{i}] is on {gdev}, but output[{i}] is on {out.device}; "
                "gradients must be on the output's device (use .to(output.device))")
        expected = tuple(out.shape)
        if gshape != expected:
            raise RuntimeError(
                f"Mismatch in shape: grad_output[{i}] has a shape of {list(gshape)} and "
                f"output[{i}] has a shape of {list(expected)}."
                + (" (with is_grads_batched=True the first dimension is the batch)"
                   if is_grads_batched else "")
            )
        if (g.dtype.kind == "c") != (out.dtype.kind == "c"):
            raise RuntimeError(
                f"For complex tensors, both grad_output and output are required to have the same "
                f"dtype. Mismatch in dtype: grad_output[{i}] has a dtype of {g.dtype} and "
                f"output[{i}] has a dtype of {out.dtype}."
            )
        if not is_differentiable_dtype(g.dtype):
            raise RuntimeError(f"grad_output[{i}] has dtype {g.dtype}; gradients must be "
                               "floating point or complex")
        if g.dtype != out.dtype:
            g = g.astype(out.dtype)
        if type(g) is Tensor and not _live(g, True):
            g = g._data
        result.append(g)
    return result


def _graph_level(roots):
    """The transform level whose graph the roots' histories are in (None: plain tensors)."""
    levels = {id(t._autograd_level()): t._autograd_level() for t in roots}
    if len(levels) > 1:
        raise RuntimeError(
            "backward()/grad(): the outputs belong to the graphs of different function "
            "transforms (e.g. one computed inside ndgrad.func.grad and one outside it); "
            "differentiate them separately")
    return next(iter(levels.values())) if levels else None


# ------------------------------------------------------------------ public API
def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False,
             grad_variables=None, inputs=None):
    """Accumulate gradients of ``tensors`` into the ``.grad`` of graph leaves.

    Parameters
    ----------
    tensors : Tensor or sequence of Tensors
        The roots; each must require grad.
    grad_tensors : Tensor, array or sequence, optional
        Cotangents of the roots (the "vector" of the vector-Jacobian product); may be omitted
        only for scalar roots.
    retain_graph : bool, optional
        Keep the graph's saved values for another backward (defaults to ``create_graph``).
    create_graph : bool
        Record the backward pass itself so that higher-order derivatives can be taken.
    inputs : Tensor or sequence of Tensors, optional
        Accumulate only into these tensors' ``.grad`` (leaves or not).

    Examples
    --------
    >>> import ndgrad
    >>> x = ndgrad.tensor([1.0, 2.0], requires_grad=True)
    >>> ndgrad.autograd.backward((x * x).sum())
    >>> x.grad
    tensor([2., 4.])
    """
    if grad_variables is not None:
        grad_tensors = grad_variables
    tensors = _as_tuple(tensors)
    if not tensors:
        raise RuntimeError("backward() received no tensors to differentiate")
    grad_tensors = _roots_and_grads("backward", "tensors", tensors, grad_tensors)
    if inputs is not None:
        inputs = _as_tuple(inputs)
        if not inputs:
            raise RuntimeError("'inputs' argument to backward() cannot be empty.")
        for t in inputs:
            if not t._requires_grad:
                raise RuntimeError("One of the differentiated Tensors (inputs=) does not "
                                   "require grad")
    if retain_graph is None:
        retain_graph = create_graph
    grads = make_grads(tensors, grad_tensors)
    run_backward(tensors, grads, retain_graph, create_graph, inputs, accumulate=True)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         only_inputs=True, allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """Return the gradients of ``outputs`` with respect to ``inputs`` (no accumulation).

    Parameters
    ----------
    outputs : Tensor or sequence of Tensors
    inputs : Tensor or sequence of Tensors
        Leaves or intermediate tensors that ``outputs`` depend on.
    grad_outputs : sequence, optional
        Cotangents for ``outputs`` (None is allowed for scalar outputs).
    retain_graph : bool, optional
        Defaults to ``create_graph``.
    create_graph : bool
        Make the returned gradients differentiable (for higher-order derivatives).
    allow_unused : bool, optional
        Return None for inputs the outputs do not depend on instead of raising.
    is_grads_batched : bool
        Treat the first dimension of each grad_output as a batch (vectorized through vmap;
        ``ndgrad.autograd.grad`` handles it).
    materialize_grads : bool
        Return zeros instead of None for unused inputs.

    Returns
    -------
    tuple of Tensor (or None)

    Examples
    --------
    >>> import ndgrad
    >>> x = ndgrad.tensor(2.0, requires_grad=True)
    >>> (dx,) = ndgrad.autograd.grad(x ** 3, x, create_graph=True)
    >>> dx
    tensor(12., grad_fn=<MultiplyBackward0>)
    >>> ndgrad.autograd.grad(dx, x)
    (tensor(12.),)
    """
    if is_grads_batched:
        raise RuntimeError("is_grads_batched=True is handled by ndgrad.autograd.grad (through "
                           "vmap); call that one")
    if materialize_grads and allow_unused is False:
        raise ValueError("Expected allow_unused to be True or not passed when "
                         "materialize_grads=True, but got: allow_unused=False.")
    if allow_unused is None:
        allow_unused = materialize_grads
    outputs = _as_tuple(outputs)
    inputs = check_inputs(inputs)
    grad_outputs = _roots_and_grads("grad", "outputs", outputs, grad_outputs)
    if retain_graph is None:
        retain_graph = create_graph
    grads = make_grads(outputs, grad_outputs)
    result = run_backward(outputs, grads, retain_graph, create_graph, inputs,
                          accumulate=False)
    out = []
    for i, (t, g) in enumerate(zip(inputs, result)):
        if g is None:
            if not allow_unused:
                raise RuntimeError(
                    f"One of the differentiated Tensors (inputs[{i}]) appears to not have been "
                    "used in the graph. Set allow_unused=True if this is the desired behavior.")
            if materialize_grads:
                g = TENSOR_F.zeros_like(t)
        elif not isinstance(g, Tensor):
            g = _wrap_raw(g)
        out.append(g)
    return tuple(out)


def check_inputs(inputs):
    """``grad``'s inputs as a tuple of Tensors that require grad."""
    inputs = _as_tuple(inputs)
    if not inputs:
        raise RuntimeError("grad requires at least one input")
    for i, t in enumerate(inputs):
        if not isinstance(t, Tensor):
            raise TypeError(f"grad(): inputs[{i}] is a {type(t).__name__}, not a Tensor")
        if not t._requires_grad:
            raise RuntimeError(f"One of the differentiated Tensors (inputs[{i}]) does not require "
                               "grad")
    return inputs


def tensor_backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
    """Accumulate the gradient of this tensor into the leaves' ``.grad``.

    See :func:`ndgrad.autograd.backward`.

    Examples
    --------
    >>> import ndgrad
    >>> x = ndgrad.tensor(3.0, requires_grad=True)
    >>> (x ** 3).backward()
    >>> x.grad
    tensor(27.)
    """
    backward((self,), None if gradient is None else (gradient,), retain_graph, create_graph,
             inputs=inputs)


# ------------------------------------------------------------------ the run
def run_backward(roots, grads, retain_graph, create_graph, inputs=None, accumulate=True):
    """Run the graph from ``roots`` with cotangents ``grads``. Accumulates into leaves'
    ``.grad`` (``accumulate``), or returns the gradients of ``inputs``.

    Grad mode during the pass is ``create_graph`` (Note [Formulas on arrays or on
    Tensors])."""
    p = BackwardPass(retain_graph, create_graph, _graph_level(roots), inputs, accumulate)
    prev = STATE.grad_enabled
    STATE.grad_enabled = p.grad_on
    try:
        return _run(roots, grads, p)
    finally:
        STATE.grad_enabled = prev


def _root_edge(t):
    if t._grad_fn is not None:
        return t._grad_fn, t._output_nr
    return leaf_accumulator(t), 0


def _needed_nodes(start, targets):
    """Nodes from which some target node is reachable (iterative DFS)."""
    needed = {}
    stack = [(n, False) for n in start]
    while stack:
        node, done = stack.pop()
        if done:
            needed[node] = node in targets or any(
                e is not None and needed.get(e[0], False) for e in node.edges)
            continue
        if node in needed:
            continue
        needed[node] = False  # in progress (graphs are acyclic)
        stack.append((node, True))
        for e in node.edges:
            if e is not None and e[0] not in needed:
                stack.append((e[0], False))
    return needed


# Note [A chain skips the heap]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# When a node makes exactly one node ready and nothing else waits, that node is the next one
# the heap would return: it runs next without the heap. In a chain of ops (the common shape
# of a backward pass) this saves a push and a pop per node: about 7% of bench_core's W1.
def _run(roots, grads, p):
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
    needed = None
    if p.capture is not None:
        # only run what leads to a requested input
        needed = p.needed = _needed_nodes([e[1] for e in heap], {key[0] for key in p.capture})
    # anomaly mode: every node takes the general path (Note [Anomaly mode costs nothing when off])
    general = needed is not None or anomaly.ENABLED[0]
    retain = p.retain_graph
    owned = p.owned
    pop = buffers.pop
    direct = None  # Note [A chain skips the heap]
    while heap or direct is not None:
        if direct is not None:
            node = direct
            direct = None
        else:
            node = heappop(heap)[1]
        grads_out = pop(node)
        if type(node) is OpNode and not general and node.hooks is None and node.nout == 1:
            if grads_out[0] is None:
                continue
            grads_in = node.backward(p, grads_out)  # the common case
        else:
            grads_in = _general_node(node, grads_out, p)
            if grads_in is None:
                continue
        edges = node.edges
        if len(grads_in) != len(edges):
            raise RuntimeError(f"function {node.name()} returned an incorrect number of "
                               f"gradients (expected {len(edges)}, got {len(grads_in)})")
        for i, edge in enumerate(edges):
            if edge is None:
                continue
            gi = grads_in[i]
            if gi is None:
                continue
            nxt, nr, shape, dtype = edge
            try:
                fits = gi.shape == shape and gi.dtype == dtype
            except AttributeError:  # a Python number (e.g. 1j * a NumPy scalar in a rule)
                fits = False
            if not fits:
                gi = fit_gradient(gi, shape, dtype, node, i)
            if needed is not None and not needed.get(nxt, False):
                continue
            buf = buffers.get(nxt)
            if buf is None:
                buf = buffers[nxt] = [None] * nxt.nout
                if direct is None and not heap:
                    direct = nxt  # the only node ready: the heap would return it next
                else:
                    if direct is not None:
                        heappush(heap, (-direct.seq, direct))
                        direct = None
                    heappush(heap, (-nxt.seq, nxt))
                buf[nr] = gi
                if type(nxt) is AccumulateGrad:
                    owned[nxt] = _owned(gi, node, grads_out, grads_in)
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
    return p.results


_OP_BACKWARD = OpNode.backward  # (nodes whose rules can be skipped one by one)


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
        grads_out = _before_node(node, hooks, grads_out, p.grad_on)
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
        skip = [e is not None and not needed.get(e[0], False) for e in node.edges]
        if not any(skip):
            skip = None
    if (hooks is not None and hooks.trace is not None) or anomaly.ENABLED[0]:
        try:
            grads_in = node.backward(p, grads_out, skip)
            if anomaly.ENABLED[0] and anomaly._CHECK_NAN[0]:
                anomaly.check_nan(node, grads_in)
        except Exception as exc:
            if node.hooks is not None and node.hooks.trace is not None:
                anomaly.annotate(node, exc)
            raise
    else:
        grads_in = node.backward(p, grads_out, skip)
    if hooks is not None and hooks.post:
        if len(grads_in) != len(node.edges):
            raise RuntimeError(f"function {node.name()} returned an incorrect number of "
                               f"gradients (expected {len(node.edges)}, got {len(grads_in)})")
        grads_in = [None if gi is None or e is None else fit_gradient(gi, e[2], e[3], node, i)
                    for i, (gi, e) in enumerate(zip(grads_in, node.edges))]
        grads_in = _call_posthooks(node, grads_in, grads_out, p.grad_on)
    return grads_in


def _add(a, b):
    """Sum two cotangents (raw arrays, or Tensors: then the sum is an op like any other)."""
    if isinstance(a, Tensor) or isinstance(b, Tensor):
        return _as_t(a) + _as_t(b)
    return a + b


def _as_t(g):
    return g if isinstance(g, Tensor) else _wrap_raw(g)


def _from_hook(gt, g):
    """A hook's Tensor result in the engine's form: raw unless it must stay a Tensor."""
    if isinstance(g, Tensor) or type(gt) is not Tensor or _live(gt, STATE.grad_enabled):
        return gt
    return gt._data


def _run_tensor_hooks(hooks, g):
    """Call tensor hooks in order, retain_grad's last; each may replace the gradient."""
    gt = _as_t(g)
    fns = list(hooks.values())
    fns.sort(key=lambda f: getattr(f, "_is_retain", False))
    for fn in fns:
        r = fn(gt)
        if r is not None:
            if not isinstance(r, Tensor):
                raise TypeError(f"a tensor hook returned a {type(r).__name__}; hooks must "
                                "return a Tensor or None")
            if tuple(r.shape) != tuple(gt.shape):
                raise RuntimeError(f"hook returned a gradient of shape {list(r.shape)} for a "
                                   f"gradient of shape {list(gt.shape)}; shapes must match")
            gt = r
    return _from_hook(gt, g)


def _before_node(node, hooks, grads_out, grad_on):
    """Tensor hooks (retain_grad included) on the node's outputs, then node pre-hooks."""
    if hooks.tensor:
        grads_out = list(grads_out)
        for nr, hs in hooks.tensor.items():
            if hs and grads_out[nr] is not None:
                grads_out[nr] = _run_tensor_hooks(hs, grads_out[nr])
    if hooks.pre:
        grads_out = _call_prehooks(node, grads_out)
    return grads_out


def _capture(node, grads_out, p):
    """Record (or accumulate) the gradient of requested non-leaf inputs made by ``node``."""
    for nr in range(node.nout):
        ks = p.capture.get((node, nr))
        if ks is not None and grads_out[nr] is not None:
            for k in ks:
                if p.accumulate:
                    accumulate_into(p.inputs[k], grads_out[nr], p.grad_on)
                else:
                    p.results[k] = grads_out[nr]


# Note [Keeping fresh gradients]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A leaf's first gradient is copied into a new array with the parameter's memory layout,
# unless the engine knows the array is its own (see _owned: made by a rule or by the
# engine's own sums, referenced nowhere else) and already has the parameter's dtype and
# strides: then it becomes ``.grad`` as is, as PyTorch steals an unshared gradient. For
# large parameters the copy (and the fresh allocation's page faults) is a visible cost.
def _owned(gi, node, grads_out, grads_in):
    """Whether gradient array ``gi``, going to a leaf, is referenced by nothing but the engine:
    a fresh result of ``node``'s rule (not a view, not its incoming cotangent passed
    through, not returned for two inputs, not a saved value). Such an array may become the
    leaf's ``.grad`` without a copy (Note [Keeping fresh gradients])."""
    if type(node) is not OpNode or getattr(gi, "base", 0) is not None:
        return False
    for x in grads_out:
        if x is gi:
            return False
    n = 0
    for x in grads_in:
        if x is gi:
            n += 1
    if n > 1:
        return False
    out = node.saved_out
    if type(out) is SavedOutput:
        content = out.content
        if content is gi or (type(content) is tuple and any(o is gi for o in content)):
            return False
    saved = node.saved
    if saved is not None and saved is not FREED:
        for v in saved:
            if v is gi or (type(v) is SavedValue and getattr(v.value, "_data", None) is gi):
                return False
    return True


def _accumulate_node(node, g, p):
    """A leaf's AccumulateGrad: leaf hooks, then accumulate into .grad or capture."""
    owned = p.owned.pop(node, False)
    if g is None:
        return
    leaf = node.variable
    m = leaf._meta
    if m is not None and m.hooks:
        g = _run_tensor_hooks(m.hooks, g)
        owned = False  # a hook may have kept a reference
    hooks = node.hooks
    if hooks is not None and hooks.pre:
        g = _call_prehooks(node, [g])[0]
        owned = False
    ks = p.capture.get((node, 0)) if p.capture is not None else None
    if ks is not None:
        for k in ks:
            if p.accumulate:
                accumulate_into(p.inputs[k], g, p.grad_on)
            else:
                p.results[k] = g
    elif p.accumulate and p.capture is None:
        accumulate_into(leaf, g, p.grad_on, owned)
    if hooks is not None and hooks.post:
        _call_posthooks(node, [], [g], p.grad_on)


def accumulate_into(t, g, create_graph, owned=False):
    """Accumulate ``g`` into ``t.grad`` with the parameter's layout (the default layouts)."""
    if type(t) is not Tensor or (isinstance(g, Tensor) and type(g) is not Tensor):
        if type(t) is Tensor:
            raise RuntimeError(g._gradient_for_plain_tensor_message(t))
        g = _as_t(g)  # a transform's tensor keeps a gradient of its own kind
        t._grad = g if t._grad is None else t._grad + g
        return
    B = t.backend
    gdata = g._data if isinstance(g, Tensor) else g
    if isinstance(g, Tensor) and g._requires_grad and create_graph:
        # keep the graph of the gradient (higher order)
        if t._grad is None:
            t._grad = g if g._grad_fn is not None or g is not t else g.clone()
        else:
            t._grad = t._grad + g
        return
    cur = t._grad
    if cur is None:
        d = t._data
        if owned and type(gdata) is type(d) and gdata.dtype == d.dtype and \
                gdata.strides == d.strides:
            t._grad = _new(gdata, False)  # Note [Keeping fresh gradients]
            return
        new = B.empty_like(d)  # same memory layout as the parameter
        new[...] = gdata
        t._grad = _new(new, False)
    elif create_graph or cur._requires_grad:
        t._grad = cur + _wrap_raw(gdata)
    else:
        cur._data += gdata  # in place: .grad keeps its identity


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


def _call_prehooks(node, grads_out):
    gts = tuple(None if g is None else _as_t(g) for g in grads_out)
    for fn in list(node.hooks.pre.values()):
        r = fn(gts)
        if r is not None:
            gts = _hook_result(node, "pre-hook", r, gts)
    return [None if gt is None else _from_hook(gt, g) for gt, g in zip(gts, grads_out)]


def _call_posthooks(node, grads_in, grads_out, grad_on):
    """Post-hooks ``fn(grad_inputs, grad_outputs)``; a returned tuple replaces grad_inputs."""
    gi = tuple(None if g is None else _as_t(g) for g in grads_in)
    go = tuple(None if g is None else _as_t(g) for g in grads_out)
    replaced = False
    for fn in list(node.hooks.post.values()):
        r = fn(gi, go)
        if r is not None:
            gi = _hook_result(node, "hook", r, gi)
            replaced = True
    if not replaced:
        return grads_in
    return [None if g is None else _from_hook(g, None) for g in gi]


def _hook_result(node, kind, new, old):
    """A node hook may replace gradients, but not change their number or shapes (a wrong
    shape would otherwise broadcast silently into the leaves' ``.grad``)."""
    new = tuple(new)
    if len(new) != len(old):
        raise RuntimeError(f"{kind} of {node.name()} returned {len(new)} gradients, expected "
                           f"{len(old)}")
    for i, (n, o) in enumerate(zip(new, old)):
        if n is None:
            continue
        if not isinstance(n, Tensor):
            raise TypeError(f"{kind} of {node.name()} returned a {type(n).__name__} at index "
                            f"{i}; hooks must return Tensors or None")
        if o is not None and tuple(n.shape) != tuple(o.shape):
            raise RuntimeError(f"{kind} of {node.name()} returned a gradient of shape "
                               f"{list(n.shape)} at index {i}, but the gradient it replaces has "
                               f"shape {list(o.shape)}; shapes must match")
    return new
