"""Hooks: what users attach to tensors and nodes to read or replace gradients during a
backward pass, the handles that remove them, and how the engine calls them.

Note [Hooks]
~~~~~~~~~~~~
For each node the engine runs, in order: the tensor hooks of its outputs (``register_hook``
on a non-leaf; ``retain_grad``'s last), its pre-hooks ``fn(grad_outputs)``, the node itself,
its post-hooks ``fn(grad_inputs, grad_outputs)``; a leaf's tensor hooks run before its
gradient is accumulated. Hooks see Tensors. A hook may return a replacement: one gradient per
gradient it got, each a Tensor or None with the shape of the one it replaces (a wrong shape
would otherwise broadcast silently into ``.grad``). A node has hooks only when some were
registered (or anomaly mode recorded a trace): the engine checks that one slot per node.
"""

from __future__ import annotations

import itertools

from .grad_mode import STATE
from .tensor import Tensor, _as_tensor, is_live

__all__ = ["RemovableHandle", "add_hook", "NodeHooks", "run_tensor_hooks", "run_prehooks",
           "run_posthooks"]


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


def add_hook(container, fn):
    h = RemovableHandle(container)
    container[h._key] = fn
    return h


class NodeHooks:
    """Hooks of one Node (and its anomaly trace), allocated only when there are any."""

    __slots__ = ("pre", "post", "tensor", "trace")

    def __init__(self, trace=None):
        self.pre = {}
        self.post = {}
        self.tensor = {}  # output_nr -> {handle id: hook}
        self.trace = trace


def _tensors(grads):
    return tuple(None if g is None else _as_tensor(g) for g in grads)


def _back(gts, grads):
    """The hooks' Tensors in the engine's form: raw where the engine had raw arrays, unless a
    hook gave something that must stay a Tensor."""
    return [gt if gt is None or isinstance(g, Tensor) or type(gt) is not Tensor or
            is_live(gt, STATE.grad_enabled) else gt._data for gt, g in zip(gts, grads)]


def _checked(who, new, old):
    new = tuple(new)
    if len(new) != len(old):
        raise RuntimeError(f"{who} returned {len(new)} gradients, expected {len(old)}")
    for i, (n, o) in enumerate(zip(new, old)):
        if n is None:
            continue
        if not isinstance(n, Tensor):
            raise TypeError(f"{who} returned a {type(n).__name__} at index {i}; a hook must "
                            "return a Tensor or None for each gradient")
        if o is not None and tuple(n.shape) != tuple(o.shape):
            raise RuntimeError(f"{who} returned a gradient of shape {list(n.shape)} at index "
                               f"{i}, but the gradient it replaces has shape {list(o.shape)}; "
                               "shapes must match")
    return new


def run_tensor_hooks(hooks, g):
    """A tensor's hooks (a dict), in order, retain_grad's last, on its gradient ``g``."""
    (gt,) = _tensors((g,))
    for fn in sorted(hooks.values(), key=lambda f: getattr(f, "_is_retain", False)):
        r = fn(gt)
        if r is not None:
            (gt,) = _checked("a tensor hook", (r,), (gt,))
    return _back((gt,), (g,))[0]


def run_prehooks(node, grads_out):
    """The tensor hooks of ``node``'s outputs, then its pre-hooks (Note [Hooks])."""
    hooks = node.hooks
    if hooks.tensor:
        grads_out = list(grads_out)
        for nr, hs in hooks.tensor.items():
            if hs and grads_out[nr] is not None:
                grads_out[nr] = run_tensor_hooks(hs, grads_out[nr])
    if hooks.pre:
        gts = _tensors(grads_out)
        for fn in list(hooks.pre.values()):
            r = fn(gts)
            if r is not None:
                gts = _checked(f"pre-hook of {node.name()}", r, gts)
        grads_out = _back(gts, grads_out)
    return grads_out


def run_posthooks(node, grads_in, grads_out):
    """``node``'s post-hooks; a returned tuple replaces the input gradients."""
    gi = _tensors(grads_in)
    go = _tensors(grads_out)
    for fn in list(node.hooks.post.values()):
        r = fn(gi, go)
        if r is not None:
            gi = _checked(f"hook of {node.name()}", r, gi)
    return _back(gi, grads_in)
