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
what keeps the memory of a recorded computation close to the hand-written one.

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

from .grad_mode import STATE

__all__ = ["Node", "OpNode", "AccumulateGrad", "RemovableHandle", "VersionCounter",
           "FREED"]

_seq = itertools.count()


class VersionCounter:
    """Shared by a tensor and its views; bumped by every in-place operation."""

    __slots__ = ("value",)

    def __init__(self):
        self.value = 0


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


class Node:
    """Base class of the backward graph's nodes.

    Subclasses implement ``apply_backward(grads, create_graph)`` returning one gradient (or
    None) per input edge, and ``name()``.
    """

    __slots__ = ("edges", "seq", "pre_hooks", "post_hooks", "tensor_hooks", "nout",
                 "trace", "__weakref__")

    def name(self):
        return type(self).__name__

    @property
    def next_functions(self):
        """((Node or None, output_nr), ...) for each input, as in PyTorch."""
        return tuple((None, 0) if e is None else e for e in self.edges)

    def register_hook(self, fn):
        """``fn(grad_inputs, grad_outputs)`` runs after this node; may return new grad_inputs."""
        if self.post_hooks is None:
            self.post_hooks = {}
        return _add_hook(self.post_hooks, fn)

    def register_prehook(self, fn):
        """``fn(grad_outputs)`` runs before this node; may return new grad_outputs."""
        if self.pre_hooks is None:
            self.pre_hooks = {}
        return _add_hook(self.pre_hooks, fn)

    def _add_tensor_hook(self, output_nr, fn):
        if self.tensor_hooks is None:
            self.tensor_hooks = {}
        d = self.tensor_hooks.setdefault(output_nr, {})
        return _add_hook(d, fn)

    def __repr__(self):
        return f"<{self.name()} object at {id(self):#x}>"


class OpNode(Node):
    """The Node recorded for one call of a registered op."""

    __slots__ = ("op", "extra", "params", "saved", "versions", "out_data", "out_version",
                 "in_meta", "backend", "needs", "out_shapes")

    def name(self):
        return self.op.node_name

    def release(self):
        """Drop saved values after a backward without retain_graph."""
        if self.saved is not None or self.out_data is not None:
            self.saved = FREED
            self.out_data = FREED

    def _unpack(self, create_graph):
        """Saved inputs and output, version-checked (Note [Saved tensors and versions])."""
        saved = self.saved
        if saved is FREED:
            raise RuntimeError(_FREED_MSG)
        from .tensor import Tensor
        inputs = ()
        if saved is not None:
            vs = self.versions
            out = []
            for k, v in enumerate(saved):
                if type(v) is Tensor:
                    cur = v._version.value if v._version is not None else 0
                    if cur != vs[k]:
                        raise RuntimeError(_modified_msg(self, v._data, f"input {k}", cur, vs[k]))
                    if not create_graph:
                        v = v._data
                out.append(v)
            inputs = out
        out = self.out_data
        if out is not None:
            counter, ver = self.out_version
            if counter.value != ver:
                arr = out[0] if isinstance(out, tuple) else out
                raise RuntimeError(_modified_msg(self, arr, "output 0", counter.value, ver))
            if create_graph:
                if isinstance(out, tuple):
                    out = tuple(Tensor._from_node(o, self, i) for i, o in enumerate(out))
                else:
                    out = Tensor._from_node(out, self, 0)
        return inputs, out

    def apply_backward(self, grads, create_graph):
        from .tensor import Tensor
        op = self.op
        inputs, out = self._unpack(create_graph)
        if create_graph:
            F = _TENSOR_F[0]
            grads = tuple(g if g is None or type(g) is Tensor else Tensor._wrap(g) for g in grads)
        else:
            F = self.backend.F
        g = grads[0] if op.nout == 1 else grads
        nin = len(self.edges)
        if not inputs:
            inputs = (None,) * nin
        elif len(inputs) < nin:  # pragma: no cover - defensive
            inputs = tuple(inputs) + (None,) * (nin - len(inputs))
        extra = self.extra
        params = self.params
        result = []
        for i, edge in enumerate(self.edges):
            if edge is None:
                result.append(None)
                continue
            rule = op.vjp_rule(i)
            if rule is None:
                result.append(None)
                continue
            result.append(rule(F, g, out, *inputs, *extra, **params))
        return result


class AccumulateGrad(Node):
    """Sink node of a leaf that requires grad: accumulates into ``leaf.grad``."""

    __slots__ = ("variable",)

    def __init__(self, variable):
        self.variable = variable
        self.edges = ()
        self.seq = -1
        self.pre_hooks = None
        self.post_hooks = None
        self.tensor_hooks = None
        self.nout = 1
        self.trace = None

    def name(self):
        return "AccumulateGrad"


def new_seq():
    return next(_seq)


# The ndgrad namespace used as F when formulas are differentiated; set by ndgrad.core.ops.
_TENSOR_F = [None]


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


def grad_enabled():
    return STATE.grad_enabled


def leaf_accumulator(t):
    """The AccumulateGrad node of leaf ``t`` (created on first use, held weakly by ``t``)."""
    ref = t._accumulator
    node = ref() if ref is not None else None
    if node is None:
        node = AccumulateGrad(t)
        t._accumulator = weakref.ref(node)
    return node
