"""How a leaf's gradient reaches ``.grad``: PyTorch's AccumulateGrad semantics.

The engine hands every gradient of a leaf that requires grad to :func:`accumulate_into`:
the first one becomes ``.grad`` with the parameter's memory layout (without a copy when
the engine owns the array: Note [Keeping fresh gradients]), later ones are added in place,
or out of place when the pass records (``create_graph``: ``.grad`` keeps its graph); a
gradient of a backend with ``deferred_gradients`` is computed once the pass ends (Note
[Deferred gradients]). The node itself,
``graph.AccumulateGrad``, and its hooks are the engine's.
"""

from __future__ import annotations

from .backend import _BACKEND_BY_TYPE
from .dispatch import TENSOR_F
from .grad_mode import current_pass
from .graph import OpNode
from .saved import FREED, SavedOutput, SavedValue
from .tensor import Tensor, _as_tensor, _new, _wrap_raw

__all__ = ["accumulate_into", "owned_by_engine"]


# Note [Keeping fresh gradients]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A leaf's first gradient is copied into a new array with the parameter's memory layout,
# unless the engine knows the array is its own (see owned_by_engine: made by a rule or by the
# engine's own sums, referenced nowhere else) and already has the parameter's dtype and
# strides: then it becomes ``.grad`` as is, as PyTorch steals an unshared gradient. For
# large parameters the copy (and the fresh allocation's page faults) is a visible cost: the
# MLP of the peer benchmark's W3 takes 6.4 ms per step without this, 5.1 ms with it.
def owned_by_engine(gi, node, grads_out, grads_in):
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


def accumulate_into(t, g, create_graph, owned=False):
    """Accumulate ``g`` into ``t.grad`` with the parameter's layout (the default layouts)."""
    if type(t) is not Tensor or (isinstance(g, Tensor) and type(g) is not Tensor):
        if type(t) is Tensor:
            raise RuntimeError(g._gradient_for_plain_tensor_message(t))
        g = _as_tensor(g)  # (a transform's tensor keeps a gradient of its own kind)
        t._grad = g if t._grad is None else t._grad + g
        return
    if isinstance(g, Tensor) and g._meta is not None and g._meta.level_data:
        # a gradient carrying a data level's data (a dual level's tangent, a compile trace's
        # value): ``.grad`` is made with ops, which the level follows (a copy of the
        # parameter's layout would drop the data)
        if t._grad is None:
            t._grad = TENSOR_F.clone(g)
        else:
            t._grad.add_(g)
        return
    B = t.backend
    gdata = g._data if isinstance(g, Tensor) else g
    if type(gdata) is not type(t._data) and \
            _BACKEND_BY_TYPE.get(type(gdata), B).deferred_gradients and \
            not (create_graph and isinstance(g, Tensor) and g._requires_grad):
        gdata = _deferred_gradient(t, gdata)  # Note [Deferred gradients]
        if gdata is None:
            return
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
                getattr(gdata, "strides", None) == getattr(d, "strides", None):
            # (an array library without strides: the gradient as it comes)
            t._grad = _new(gdata, False)  # Note [Keeping fresh gradients]
            return
        new = B.empty_like(d)  # same memory layout as the parameter
        new[...] = gdata
        t._grad = _new(new, False)
    elif create_graph or cur._requires_grad:
        t._grad = cur + _wrap_raw(gdata)
    else:
        cur._data += gdata  # in place: .grad keeps its identity


# Note [Deferred gradients]
# ~~~~~~~~~~~~~~~~~~~~~~~~~
# A leaf of another backend (a NumPy-backed model parameter) whose gradient comes as an array
# of a backend with `deferred_gradients` (a graph: Note [Backend plug-ins] in core/backend.py)
# does not keep that graph as `.grad`: `.backward()` keeps such gradients aside and, when the
# pass ends (an engine callback, as `queue_callback`), finishes all of them in one
# `B.compute`, so they share their intermediates and `.grad` is of the leaf's backend.
# Outside a pass (or with create_graph, which keeps the gradient's graph) nothing is deferred.
def _deferred_gradient(t, gdata):
    """Defer gradient ``gdata`` of leaf ``t`` to the end of the running pass (returns
    None), or, with no pass running, compute it now (returns the computed array)."""
    p = current_pass()
    if p is None:
        return _BACKEND_BY_TYPE[type(gdata)].to_numpy(gdata)
    if p.deferred is None:
        p.deferred = []
        p.callbacks.append(lambda: _finish_deferred(p))
    p.deferred.append((t, gdata))
    return None


def _finish_deferred(p):
    pending, p.deferred = p.deferred, None
    B = _BACKEND_BY_TYPE[type(pending[0][1])]
    values = B.compute(*[g for _, g in pending])
    for (t, _), v in zip(pending, values):
        accumulate_into(t, t.backend.asarray(v), False)
