"""The backward engine: runs the graph from roots to leaves.

Iterative (no recursion: a chain of 100,000 ops is fine). Nodes run in decreasing sequence
number from a heap: a Node is always created after the Nodes of its inputs, so when a Node
is popped every cotangent it will receive has arrived and no dependency counting is needed.

Note [Broadcasting is undone by the engine]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
A vjp rule may return its cotangent in the broadcast (output) shape. The engine sums it back
to the input's shape (over leading dimensions and over dimensions the input had as 1), casts
it to the input's dtype (a real input's cotangent keeps the real part), and then validates
shape and dtype, naming the Node on a mismatch. This is the only place that does it.
"""

from __future__ import annotations

from heapq import heappop, heappush

from . import levels as _levels
from .anomaly import _CHECK_NAN, annotate, check_nan
from .backend import is_differentiable_dtype
from .dispatch import _ANOMALY, _as_array
from .grad_mode import STATE
from .graph import FREED, AccumulateGrad, OpNode, leaf_accumulator
from .tensor import Tensor, _fresh_view, _new, _wrap_raw

__all__ = ["backward", "grad", "run_backward", "accumulate_into"]

_LEVELS_ACTIVE = _levels.ACTIVE


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
            _fresh_view(t)  # a view whose base changed in place: its history, regenerated
        if not t._requires_grad:
            raise RuntimeError(
                f"element {i} of tensors does not require grad and does not have a grad_fn. "
                "Make sure an input of the computation has requires_grad=True and that it did "
                "not run under ndgrad.no_grad()."
            )
    return grads


def _make_grads(outputs, grad_outputs, is_grads_batched=False):
    """Validate or create the root cotangents (raw arrays or Tensors)."""
    result = []
    for i, (out, g) in enumerate(zip(outputs, grad_outputs)):
        if type(out) is not Tensor or (isinstance(g, Tensor) and type(g) is not Tensor):
            # a batched tensor (inside vmap: Note [Batched tensors] in functional/vmap.py)
            result.append(_make_grad_logical(i, out, g, is_grads_batched))
            continue
        if g is None:
            if not out._requires_grad:
                result.append(None)
                continue
            if out._data.size != 1:
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
            result.append(B.ones_like(out._data))
            continue
        gdata = g._data if isinstance(g, Tensor) else out.backend.asarray(g)
        if type(gdata) is not type(out._data):
            raise RuntimeError(
                f"grad_output[{i}] is on {g.device}, but output[{i}] is on {out.device}; "
                "gradients must be on the output's device (use .to(output.device))")
        expected = out.shape
        gshape = gdata.shape[1:] if is_grads_batched else gdata.shape
        if gshape != expected:
            raise RuntimeError(
                f"Mismatch in shape: grad_output[{i}] has a shape of {list(gshape)} and "
                f"output[{i}] has a shape of {list(expected)}."
                + (" (with is_grads_batched=True the first dimension is the batch)"
                   if is_grads_batched else "")
            )
        if (gdata.dtype.kind == "c") != (out.dtype.kind == "c"):
            raise RuntimeError(
                f"For complex tensors, both grad_output and output are required to have the same "
                f"dtype. Mismatch in dtype: grad_output[{i}] has a dtype of {gdata.dtype} and "
                f"output[{i}] has a dtype of {out.dtype}."
            )
        if not is_differentiable_dtype(gdata.dtype):
            raise RuntimeError(f"grad_output[{i}] has dtype {gdata.dtype}; gradients must be "
                               "floating point or complex")
        if gdata.dtype != out.dtype:
            if isinstance(g, Tensor) and g._requires_grad:
                g = g.astype(out.dtype)
            else:
                gdata = gdata.astype(out.dtype)
                g = None
        if isinstance(g, Tensor) and g._requires_grad:
            result.append(g)
        else:
            result.append(gdata)
    return result


def _make_grad_logical(i, out, g, is_grads_batched):
    """_make_grads for an output or grad_output that is a Tensor subclass (a batched tensor
    inside vmap): the same checks, on Tensors."""
    if g is None:
        if not out._requires_grad:
            return None
        if out.numel() != 1:
            raise RuntimeError(
                f"grad can be implicitly created only for scalar outputs; output {i} has shape "
                f"{list(out.shape)}. Pass grad_outputs with the output's shape.")
        if out.dtype.kind == "c":
            raise RuntimeError(f"grad can be implicitly created only for real scalar outputs; "
                               f"output {i} has dtype {out.dtype}. Pass grad_outputs explicitly.")
        from .creation import ones_like
        return ones_like(out)
    if not isinstance(g, Tensor):
        from .creation import asarray
        g = asarray(g, dtype=out.dtype)
    gshape = tuple(g.shape[1:]) if is_grads_batched else tuple(g.shape)
    if gshape != tuple(out.shape):
        raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of {list(gshape)} "
                           f"and output[{i}] has a shape of {list(out.shape)}.")
    if (g.dtype.kind == "c") != (out.dtype.kind == "c") or not is_differentiable_dtype(g.dtype):
        raise RuntimeError(f"grad_output[{i}] has dtype {g.dtype} but output[{i}] has dtype "
                           f"{out.dtype}; gradients must be floating point (complex for a "
                           "complex output)")
    return g if g.dtype == out.dtype else g.astype(out.dtype)


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
    grads = _make_grads(tensors, grad_tensors)
    run_backward(tensors, grads, retain_graph, create_graph, inputs, allow_unused=True,
                 accumulate=True)


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
        Treat the first dimension of each grad_output as a batch (vectorized through vmap).
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
    if materialize_grads and allow_unused is False:
        raise ValueError("Expected allow_unused to be True or not passed when "
                         "materialize_grads=True, but got: allow_unused=False.")
    if allow_unused is None:
        allow_unused = materialize_grads
    outputs = _as_tuple(outputs)
    single_input = isinstance(inputs, Tensor)
    inputs = _as_tuple(inputs)
    if not inputs:
        raise RuntimeError("grad requires at least one input")
    for i, t in enumerate(inputs):
        if not isinstance(t, Tensor):
            raise TypeError(f"grad(): inputs[{i}] is a {type(t).__name__}, not a Tensor")
        if not t._requires_grad:
            raise RuntimeError(f"One of the differentiated Tensors (inputs[{i}]) does not require "
                               "grad")
    grad_outputs = _roots_and_grads("grad", "outputs", outputs, grad_outputs)
    if retain_graph is None:
        retain_graph = create_graph
    if is_grads_batched:
        return _batched_grad(outputs, inputs, grad_outputs, retain_graph, create_graph,
                             allow_unused, materialize_grads)
    grads = _make_grads(outputs, grad_outputs)
    result = run_backward(outputs, grads, retain_graph, create_graph, inputs,
                          allow_unused=allow_unused, accumulate=False)
    out = []
    for i, (t, g) in enumerate(zip(inputs, result)):
        if g is None:
            if not allow_unused:
                raise RuntimeError(
                    f"One of the differentiated Tensors (inputs[{i}]) appears to not have been "
                    "used in the graph. Set allow_unused=True if this is the desired behavior.")
            if materialize_grads:
                from .creation import zeros_like
                g = zeros_like(t)
        elif not isinstance(g, Tensor):
            g = _wrap_raw(g)
        out.append(g)
    del single_input
    return tuple(out)


def _batched_grad(*args):
    """``grad(..., is_grads_batched=True)``: one batched backward pass, through vmap (which
    installs itself in :data:`_BATCHED_GRAD`: core does not import it)."""
    if _BATCHED_GRAD[0] is None:  # pragma: no cover - `import ndgrad` installs it
        raise RuntimeError("is_grads_batched=True needs ndgrad.functional: `import ndgrad`")
    return _BATCHED_GRAD[0](*args)


_BATCHED_GRAD = [None]


def _unbroadcast(g, shape, dtype, node, i):
    """Note [Broadcasting is undone by the engine]."""
    gshape = g.shape
    if gshape != shape:
        nd = len(gshape) - len(shape)
        if nd < 0:
            raise RuntimeError(_bad_shape(node, i, gshape, shape))
        axes = tuple(range(nd)) + tuple(
            k + nd for k, s in enumerate(shape) if s == 1 and gshape[k + nd] != 1)
        for k, s in enumerate(shape):
            if s != 1 and gshape[k + nd] != s:
                raise RuntimeError(_bad_shape(node, i, gshape, shape))
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


def _bad_shape(node, i, got, want):
    return (f"Function {node.name()} returned an invalid gradient at index {i} - got "
            f"{list(got)} but expected shape compatible with {list(want)}")


def _hook_tensor(g, create_graph):
    return g if isinstance(g, Tensor) else _wrap_raw(g)


def _run_tensor_hooks(hooks, g, create_graph):
    """Call tensor hooks in order, retain_grad's last; each may replace the gradient."""
    gt = _hook_tensor(g, create_graph)
    fns = list(hooks.values())
    fns.sort(key=lambda f: getattr(f, "_is_retain", False))
    for fn in fns:
        r = fn(gt)
        if r is not None:
            if not isinstance(r, Tensor):
                raise TypeError(f"a tensor hook returned a {type(r).__name__}; hooks must "
                                "return a Tensor or None")
            if r.shape != gt.shape:
                raise RuntimeError(f"hook returned a gradient of shape {list(r.shape)} for a "
                                   f"gradient of shape {list(gt.shape)}; shapes must match")
            gt = r
    if isinstance(g, Tensor) or create_graph:
        return gt
    return gt._data


# Note [Keeping fresh gradients]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A leaf's first gradient is copied into a new array with the parameter's memory layout,
# unless the engine knows the array is its own (see _owned: made by a rule or by the
# engine's own sums, referenced nowhere else) and already has the parameter's dtype and
# strides: then it becomes ``.grad`` as is, as PyTorch steals an unshared gradient. For
# large parameters the copy (and the fresh allocation's page faults) is a visible cost.
def accumulate_into(t, g, create_graph, owned=False):
    """Accumulate ``g`` into ``t.grad`` with the parameter's layout (the default layouts)."""
    if type(t) is not Tensor or (isinstance(g, Tensor) and type(g) is not Tensor):
        _accumulate_logical(t, g)  # a batched tensor or gradient (inside vmap)
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
        p = t._data
        if owned and type(gdata) is type(p) and gdata.dtype == p.dtype and \
                gdata.strides == p.strides:
            t._grad = _new(gdata, False)  # Note [Keeping fresh gradients]
            return
        new = B.empty_like(p)  # same memory layout as the parameter
        new[...] = gdata
        t._grad = _new(new, False)
    elif create_graph or cur._requires_grad:
        t._grad = cur + _wrap_raw(gdata)
    else:
        cur._data += gdata  # in place: .grad keeps its identity


def _accumulate_logical(t, g):
    if type(t) is Tensor:
        raise RuntimeError(
            "backward() inside vmap computed a batched gradient for a tensor that is not "
            f"batched (shape {list(t.shape)}); its .grad cannot hold one gradient per batch "
            "element. Use ndgrad.func.grad or ndgrad.autograd.grad inside vmap instead.")
    if not isinstance(g, Tensor):
        g = _wrap_raw(g)
    t._grad = g if t._grad is None else t._grad + g


def run_backward(roots, grads, retain_graph, create_graph, inputs=None, allow_unused=False,
                 accumulate=True):
    """Run the graph. Returns the gradients for ``inputs`` when ``accumulate`` is False.

    While a transform level is active (a vmap, a dual level: Note [Levels]), formulas always
    run on Tensors (``F`` = ndgrad), with grad mode set by ``create_graph``: cotangents may
    be batched tensors, whose ops the vmap level batches (Note [Batched tensors] in
    functional/vmap.py), and tangents must be carried through the formulas."""
    prev = STATE.grad_enabled
    STATE.grad_enabled = bool(create_graph)
    try:
        return _run(roots, grads, retain_graph, create_graph or bool(_LEVELS_ACTIVE[0]),
                    inputs, accumulate)
    finally:
        STATE.grad_enabled = prev


def _root_node(t):
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


def _run(roots, grads, retain_graph, create_graph, inputs, accumulate):
    buffers = {}
    heap = []  # (-seq, node): sequence numbers are unique, so nodes are never compared
    # capture: (node, output_nr) -> indices in inputs (leaves: their AccumulateGrad node)
    capture = None
    results = None
    needed = None
    if inputs is not None:
        capture = {}
        for k, t in enumerate(inputs):
            capture.setdefault(_root_node(t), []).append(k)
        results = [None] * len(inputs)
    for t, g in zip(roots, grads):
        if g is None:
            continue
        node, nr = _root_node(t)
        buf = buffers.get(node)
        if buf is None:
            buf = buffers[node] = [None] * node.nout
            heappush(heap, (-node.seq, node))
        buf[nr] = g if buf[nr] is None else _add(buf[nr], g, create_graph)
    if capture is not None:
        # only run what leads to a requested input
        needed = _needed_nodes([e[1] for e in heap], {key[0] for key in capture})
    # anomaly mode: every node takes the general path (Note [Anomaly mode costs nothing when off])
    fast = needed is None and not _ANOMALY[0]
    pop = buffers.pop
    owned = {}  # AccumulateGrad node -> its gradient array is the engine's alone (may be kept)
    direct = None  # the one node the last step made ready, when nothing else is pending
    while heap or direct is not None:
        if direct is not None:  # a chain: the heap would return this very node
            node = direct
            direct = None
        else:
            node = heappop(heap)[1]
        grads_out = pop(node)
        if type(node) is OpNode and node.hooks is None and node.nout == 1 and fast:
            # the common case: an op node, one output, no hooks, nothing to capture
            if grads_out[0] is None:
                continue
            step = None
            grads_in = node.apply_backward(grads_out, create_graph)
            meta = node.in_meta
        else:
            step = _general_node(node, grads_out, needed, capture, results, inputs, accumulate,
                                 create_graph, owned)
            if step is None:
                continue
            grads_in, meta = step
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
            if meta is not None:
                shape, dtype = meta[i]
                try:
                    fits = gi.shape == shape and gi.dtype == dtype
                except AttributeError:  # a Python number (e.g. 1j * a NumPy scalar in a rule)
                    gi, fits = _as_array(gi), False
                if not fits:
                    gi = _unbroadcast(gi, shape, dtype, node, i)
            nxt, nr = edge
            if needed is not None and not needed.get(nxt, False):
                continue
            buf = buffers.get(nxt)
            if buf is None:
                buf = buffers[nxt] = [None] * nxt.nout
                if direct is None and not heap:
                    direct = nxt
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
                    buf[nr] = _add(cur, gi, create_graph)
                    if type(nxt) is AccumulateGrad:
                        owned[nxt] = True  # a sum the engine just made
        if not retain_graph:
            if type(node) is OpNode:  # release the saved values (inlined OpNode.release)
                if node.saved is not None:
                    node.saved = FREED
                if node.out_data is not None:
                    node.out_data = FREED
            elif step is not None:
                node.release()
    return results


_OP_APPLY_BACKWARD = OpNode.apply_backward  # (nodes whose rules can be skipped one by one)


def _general_node(node, grads_out, needed, capture, results, inputs, accumulate, create_graph,
                  owned):
    """Everything but the common case: leaves, hooks, capture, several outputs, anomaly
    traces, other node types. Returns (grads_in, in_meta) or None when nothing flows on."""
    if needed is not None and not needed.get(node, False):
        return None
    if type(node) is AccumulateGrad:
        _accumulate_node(node, grads_out[0], capture, results, inputs, accumulate, create_graph,
                         owned.pop(node, False))
        return None
    hooks = node.hooks
    if hooks is not None:
        grads_out = _before_node(node, hooks, grads_out, create_graph)
    if capture is not None:
        _capture(node, grads_out, capture, results, inputs, accumulate, create_graph)
    if node.nout > 1:
        if all(g is None for g in grads_out):
            return None
        if any(g is None for g in grads_out) and not getattr(node, "_fn_outs", None):
            # (a custom Function's node materializes, or not, by itself: core/function.py)
            grads_out = _materialize(node, grads_out, create_graph)
    elif grads_out[0] is None:
        return None
    skip = None
    if needed is not None and len(node.edges) > 1 and \
            type(node).apply_backward is _OP_APPLY_BACKWARD:
        # rules of inputs that lead to no requested input are not run (they may not exist:
        # gammainc's in its shape parameter)
        skip = [e is not None and not needed.get(e[0], False) for e in node.edges]
        if not any(skip):
            skip = None
    if (hooks is not None and hooks.trace is not None) or _ANOMALY[0]:
        try:
            grads_in = node.apply_backward(grads_out, create_graph) if skip is None else \
                node.apply_backward(grads_out, create_graph, skip)
            if _ANOMALY[0] and _CHECK_NAN[0]:
                check_nan(node, grads_in)
        except Exception as exc:
            if node.hooks is not None and node.hooks.trace is not None:
                _annotate_anomaly(node, exc)
            raise
    elif skip is not None:
        grads_in = node.apply_backward(grads_out, create_graph, skip)
    else:
        grads_in = node.apply_backward(grads_out, create_graph)
    meta = getattr(node, "in_meta", None)
    if hooks is not None and hooks.post:
        if len(grads_in) != len(node.edges):
            raise RuntimeError(f"function {node.name()} returned an incorrect number of "
                               f"gradients (expected {len(node.edges)}, got {len(grads_in)})")
        grads_in = _call_posthooks(node, _checked(node, grads_in, meta), grads_out,
                                   create_graph)
        meta = None
    return grads_in, meta


def _add(a, b, create_graph):
    """Sum two cotangents (raw arrays in first order, Tensors when recording)."""
    if create_graph or isinstance(a, Tensor) or isinstance(b, Tensor):
        return _as_t(a) + _as_t(b)
    return a + b


def _before_node(node, hooks, grads_out, create_graph):
    """Tensor hooks (retain_grad included) on the node's outputs, then node pre-hooks."""
    if hooks.tensor:
        grads_out = list(grads_out)
        for nr, hs in hooks.tensor.items():
            if hs and grads_out[nr] is not None:
                grads_out[nr] = _run_tensor_hooks(hs, grads_out[nr], create_graph)
    if hooks.pre:
        grads_out = _call_prehooks(node, grads_out, create_graph)
    return grads_out


def _capture(node, grads_out, capture, results, inputs, accumulate, create_graph):
    """Record (or accumulate) the gradient of requested non-leaf inputs made by ``node``."""
    for nr in range(node.nout):
        ks = capture.get((node, nr))
        if ks is not None and grads_out[nr] is not None:
            for k in ks:
                if accumulate:
                    accumulate_into(inputs[k], grads_out[nr], create_graph)
                else:
                    results[k] = grads_out[nr]


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
    out = node.out_data
    if out is gi or (type(out) is tuple and any(o is gi for o in out)):
        return False
    saved = node.saved
    if saved is not None and saved is not FREED:
        for v in saved:
            if v is gi or (type(v) is Tensor and v._data is gi):
                return False
    return True


def _accumulate_node(node, g, capture, results, inputs, accumulate, create_graph, owned=False):
    """A leaf's AccumulateGrad: leaf hooks, then accumulate into .grad or capture."""
    if g is None:
        return
    leaf = node.variable
    m = leaf._meta
    if m is not None and m.hooks:
        g = _run_tensor_hooks(m.hooks, g, create_graph)
        owned = False  # a hook may have kept a reference
    hooks = node.hooks
    if hooks is not None and hooks.pre:
        g = _call_prehooks(node, [g], create_graph)[0]
        owned = False
    ks = capture.get((node, 0)) if capture is not None else None
    if ks is not None:
        for k in ks:
            if accumulate:
                accumulate_into(inputs[k], g, create_graph)
            else:
                results[k] = g
    elif accumulate and capture is None:
        accumulate_into(leaf, g, create_graph, owned)
    if hooks is not None and hooks.post:
        _call_posthooks(node, [], [g], create_graph)


def _checked(node, grads_in, meta):
    """Unbroadcast and cast every gradient (before post-hooks see them)."""
    if meta is None:
        return list(grads_in)
    return [None if gi is None or meta[i] is None else
            _unbroadcast(gi, meta[i][0], meta[i][1], node, i) for i, gi in enumerate(grads_in)]


def _as_t(g):
    return g if isinstance(g, Tensor) else _wrap_raw(g)


def _materialize(node, grads_out, create_graph):
    out = list(grads_out)
    shapes = getattr(node, "out_shapes", None)
    for k, g in enumerate(out):
        if g is None:
            ref = next(x for x in grads_out if x is not None)
            B = ref.backend if isinstance(ref, Tensor) else _backend(ref)
            shape, dtype = shapes[k] if shapes else (ref.shape, ref.dtype)
            z = B.zeros(shape, dtype=dtype)
            out[k] = _new(z, False) if create_graph else z
    return out


def _backend(arr):
    from .backend import backend_of
    return backend_of(arr)


def _call_prehooks(node, grads_out, create_graph):
    gts = tuple(None if g is None else _hook_tensor(g, create_graph) for g in grads_out)
    for fn in list(node.hooks.pre.values()):
        r = fn(gts)
        if r is not None:
            gts = _hook_result(node, "pre-hook", r, gts)
    return [None if g is None else (g if create_graph or g._requires_grad else g._data)
            for g in gts]


def _call_posthooks(node, grads_in, grads_out, create_graph):
    """Post-hooks ``fn(grad_inputs, grad_outputs)``; a returned tuple replaces grad_inputs."""
    gi = tuple(None if g is None else _hook_tensor(g, create_graph) for g in grads_in)
    go = tuple(None if g is None else _hook_tensor(g, create_graph) for g in grads_out)
    replaced = False
    for fn in list(node.hooks.post.values()):
        r = fn(gi, go)
        if r is not None:
            gi = _hook_result(node, "hook", r, gi)
            replaced = True
    if not replaced:
        return grads_in
    return [None if g is None else (g if create_graph or g._requires_grad else g._data)
            for g in gi]


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
        if o is not None and n.shape != o.shape:
            raise RuntimeError(f"{kind} of {node.name()} returned a gradient of shape "
                               f"{list(n.shape)} at index {i}, but the gradient it replaces has "
                               f"shape {list(o.shape)}; shapes must match")
    return new


def _annotate_anomaly(node, exc):
    """Show the forward traceback of the node whose backward raised ``exc`` (core/anomaly.py)."""
    annotate(node, exc)
