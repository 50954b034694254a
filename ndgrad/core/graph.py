"""The backward graph: Nodes, saved values with version checks, leaf accumulation, hooks.

A :class:`Node` is created by :func:`ndgrad.core.dispatch.apply` for each recorded operation.
It keeps the op, its parameters, the values its vjp rules read (and nothing else), edges to
the Nodes of its inputs, a sequence number (the engine runs Nodes in decreasing sequence
order) and hooks. Leaves that require grad get an :class:`AccumulateGrad` Node when first
used, shared by every graph built while it lives.

Note [What a node saves]
~~~~~~~~~~~~~~~~~~~~~~~~
Which of ``out`` and the inputs an op's vjp rules read is found once, when the op is declared
(``registry._RuleUse``); a Node saves exactly what the rules for its grad-requiring inputs
read. ``y = x * 2.0`` saves nothing but the scalar; ``tanh`` saves only its output. This is
what keeps the memory of a recorded computation close to the hand-written one. A rule that
reads an input only as ``x.shape`` / ``x.ndim`` / ``x.dtype`` / ``x.size`` (``sum``'s does)
does not make it saved: the Node's ``in_meta`` records shape and dtype, and the rule gets an
:class:`InputMeta` stand-in. So ``s = a.sum(); a += 1; s.backward()`` is fine, as in PyTorch.

Note [Saved tensors and versions]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
Every saved input is kept with the version of its version counter at save time, the saved
output with its counter and version. Before a rule runs, the engine compares: a saved value
modified in place since is an error naming the op, the value's shape and both versions. The
output is saved as its raw array (saving the output Tensor would make a reference cycle
Node -> Tensor -> Node); when a formula must be differentiated, a Tensor with this Node as its
``grad_fn`` is rebuilt from it.
"""

from __future__ import annotations

import itertools
import weakref

from .backend import _BACKEND_BY_TYPE
from .backend import NUMPY as _NUMPY

__all__ = ["Node", "OpNode", "AccumulateGrad", "RemovableHandle", "VersionCounter",
           "FREED"]

_seq = itertools.count()
_acc_seq = itertools.count()


class VersionCounter:
    """Shared by a tensor and its views; bumped by every in-place operation."""

    __slots__ = ("value",)

    def __init__(self):
        self.value = 0


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


class _Freed:
    __slots__ = ()

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


class RemovableHandle:
    """Returned by ``register_hook``; ``remove()`` unregisters the hook."""

    __slots__ = ("_container", "_key")
    _ids = itertools.count()

    def __init__(self, container):
        self._container = container
        self._key = next(RemovableHandle._ids)

    def remove(self):
        self._container.pop(self._key, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


def _add_hook(container, fn):
    h = RemovableHandle(container)
    container[h._key] = fn
    return h


class _NodeHooks:
    """Hooks of one Node (and its anomaly trace), allocated only when there are any.

    ``tangents``: forward-mode tangents of the node's saved outputs (Note [Saved outputs
    keep their tangents])."""

    __slots__ = ("pre", "post", "tensor", "trace", "tangents")

    def __init__(self, trace=None):
        self.pre = None
        self.post = None
        self.tensor = None
        self.trace = trace
        self.tangents = None


# Note [Saved outputs keep their tangents]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A node that saves its output (tanh's vjp reads it) keeps the raw array, not the output
# Tensor (that would be a reference cycle), and backward wraps the array again. In forward
# over reverse (a dual level around a backward pass), the output's tangent is needed too:
# forward mode records it in the node's hooks, ``tangents = {output_nr: [(level, tangent)]}``
# (``level`` a core.levels.Level, so a tangent of an exited level is never revived), and
# unpacking the output attaches the live ones to the new wrapper (``attach_saved_tangents``).
# PyTorch's SavedVariable keeps the forward gradient of a saved output the same way.
def attach_saved_tangents(node, t, output_nr):
    """Give ``t`` (a saved output of ``node``, wrapped again) the tangents it had."""
    entries = node.hooks.tangents.get(output_nr)
    if not entries:
        return t
    from .tensor import _meta
    m = _meta(t)
    for level, tangent in entries:
        if level.alive:
            if m.tangents is None:
                m.tangents = {}
            m.tangents[level.depth] = tangent
    return t


class Node:
    """Base class of the backward graph's nodes.

    Subclasses implement ``apply_backward(grads, create_graph)`` returning one gradient (or
    None) per input edge, and ``name()``. ``hooks`` is None unless hooks were registered or
    anomaly mode recorded a trace: the engine checks that one slot per node.
    """

    __slots__ = ("edges", "seq", "hooks", "nout", "__weakref__")

    def name(self):
        return type(self).__name__

    @property
    def next_functions(self):
        """((Node or None, output_nr), ...) for each input, as in PyTorch."""
        return tuple((None, 0) if e is None else e for e in self.edges)

    def _hooks(self):
        h = self.hooks
        if h is None:
            h = self.hooks = _NodeHooks()
        return h

    @property
    def pre_hooks(self):
        return None if self.hooks is None else self.hooks.pre

    @property
    def post_hooks(self):
        return None if self.hooks is None else self.hooks.post

    @property
    def tensor_hooks(self):
        return None if self.hooks is None else self.hooks.tensor

    @property
    def trace(self):
        return None if self.hooks is None else self.hooks.trace

    def register_hook(self, fn):
        """``fn(grad_inputs, grad_outputs)`` runs after this node; may return new grad_inputs."""
        h = self._hooks()
        if h.post is None:
            h.post = {}
        return _add_hook(h.post, fn)

    def register_prehook(self, fn):
        """``fn(grad_outputs)`` runs before this node; may return new grad_outputs."""
        h = self._hooks()
        if h.pre is None:
            h.pre = {}
        return _add_hook(h.pre, fn)

    def _add_tensor_hook(self, output_nr, fn):
        h = self._hooks()
        if h.tensor is None:
            h.tensor = {}
        d = h.tensor.setdefault(output_nr, {})
        return _add_hook(d, fn)

    def __repr__(self):
        return f"<{self.name()} object at {id(self):#x}>"


class OpNode(Node):
    """The Node recorded for one call of a registered op."""

    __slots__ = ("op", "extra", "params", "saved", "versions", "out_data", "out_version",
                 "out_expected",
                 "in_meta", "out_shapes")

    def name(self):
        return self.op.node_name

    def release(self):
        """Drop saved values after a backward without retain_graph (the engine inlines this)."""
        if self.saved is not None:
            self.saved = FREED
        if self.out_data is not None:
            self.out_data = FREED

    def _unpack_inputs(self, create_graph):
        """Saved inputs, version-checked (Note [Saved tensors and versions])."""
        saved = self.saved
        if saved is FREED:
            raise RuntimeError(_FREED_MSG)
        Tensor = _TENSOR[0]
        vs = self.versions
        out = []
        for k, v in enumerate(saved):
            if type(v) is Tensor:
                c = v._version
                cur = c.value if c is not None else 0
                if cur != vs[k]:
                    raise RuntimeError(_modified_msg(self, v._data, f"input {k}", cur, vs[k]))
                if not create_graph:
                    v = v._data
            out.append(v)
        return out

    def _unpack_out(self, create_graph):
        out = self.out_data
        if out is FREED:
            raise RuntimeError(_FREED_MSG)
        counter, ver = self.out_version, self.out_expected
        if counter.value != ver:
            arr = out[0] if isinstance(out, tuple) else out
            raise RuntimeError(_modified_msg(self, arr, "output 0", counter.value, ver))
        if create_graph:
            Tensor = _TENSOR[0]
            if isinstance(out, tuple):
                res = tuple(Tensor._from_node(o, self, i) for i, o in enumerate(out))
            else:
                res = Tensor._from_node(out, self, 0)
            if self.hooks is not None and self.hooks.tangents:
                for i, t in enumerate(res if isinstance(res, tuple) else (res,)):
                    attach_saved_tangents(self, t, i)
            return res
        return out

    def apply_backward(self, grads, create_graph, skip=None):
        """The input cotangents; ``skip[i]`` True: input ``i``'s is not needed (the engine
        computes only what leads to the requested inputs), its rule is not run."""
        op = self.op
        edges = self.edges
        if self.saved is not None:
            inputs = self._unpack_inputs(create_graph)
        else:
            inputs = (None,) * len(edges)
        if op.meta_standins:
            # inputs read only for shape/dtype were not saved (Note [What a node saves])
            inputs = [InputMeta(*m) if x is None and m is not None else x
                      for x, m in zip(inputs, self.in_meta)]
        out = self.out_data
        if out is not None:
            if create_graph or self.out_version.value != self.out_expected or out is FREED:
                out = self._unpack_out(create_graph)
        if create_graph:
            F = _TENSOR_F[0]
            wrap = _TENSOR[0]._wrap
            grads = tuple(g if g is None or isinstance(g, _TENSOR[0]) else wrap(g) for g in grads)
        else:
            g0 = grads[0]
            F = _NUMPY_F[0] if type(g0) is _NDARRAY else _BACKEND_BY_TYPE.get(type(g0), _NUMPY).F
        g = grads[0] if op.nout == 1 else grads
        extra = self.extra
        params = self.params
        rules = op.vjp_rules
        if rules is None:
            each = op.vjp_each
            result = []
            for i, e in enumerate(edges):
                result.append(None if e is None or (skip is not None and skip[i]) else
                              each(F, i, g, out, *inputs, *extra, **params))
            return result
        if len(edges) == 1:
            return (rules[0](F, g, out, *inputs, *extra, **params),)
        result = []
        for i, e in enumerate(edges):
            if e is None or (skip is not None and skip[i]):
                result.append(None)
            else:
                rule = rules[i]
                result.append(None if rule is None else
                              rule(F, g, out, *inputs, *extra, **params))
        return result


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


def new_seq():
    return next(_seq)


# The ndgrad namespace used as F when formulas are differentiated; set by ndgrad.core.ops.
_TENSOR_F = [None]
_NDARRAY = _NUMPY.array_type
_NUMPY_F = [None]  # NUMPY.F, set by ndgrad.core.ops
# The Tensor class, set by core.tensor (which imports this module).
_TENSOR = [None]


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


def leaf_accumulator(t):
    """The AccumulateGrad node of leaf ``t`` (created on first use, held weakly by ``t``)."""
    ref = t._accumulator
    node = ref() if ref is not None else None
    if node is None:
        node = AccumulateGrad(t)
        t._accumulator = weakref.ref(node)
    return node
