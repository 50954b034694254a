"""Views: how a view is linked to its base, and how its history follows the base's.

A view op's output that shares memory with an input is linked to it here (``dispatch.apply``
calls :func:`link_view`); when an in-place operation changes the base's history
(core/inplace.py), each view's history is regenerated from it on its next read (Note
[In-place on views]). Regenerating a history applies the view's op again through the op's
own ``apply``, so this module sits below dispatch.
"""

from __future__ import annotations

from weakref import ref as _weakref

from .grad_mode import GRAD_DISABLED_THREADS as _GRAD_OFF
from .grad_mode import STATE, enable_grad
from .tensor import Tensor, _meta

__all__ = ["link_view", "base_now_requires_grad", "check_view_history", "regenerate"]


# Note [In-place on views]
# ~~~~~~~~~~~~~~~~~~~~~~~~
# A view shares memory (and the version counter) with its base, the tensor at the root of
# its chain of views. Each view records in its _meta the link it was made by,
# ``view_of = (parent, op, extra, params, k)`` (k: the output index of a multi-output op,
# -1 for single-output ones), so views of views compose, and ``view_fn``, the base's
# grad_fn when its history was last derived from the base's.
#
# In-place on a view inside a differentiable computation (PyTorch's CopySlices): the new
# value of the view is computed functionally, recorded (``new = op(v_old, ...)``), then
# written back up the chain with each view op's declared ``scatter`` rule
# (``parent_new = scatter(parent_old, child_new)``, recorded with ndgrad ops, so any order
# of derivatives works), up to the base. The data is written once, through the view's own
# memory (it is the base's), the shared version is bumped, the BASE's history is rebased
# onto the last scatter node, and the view's history is regenerated as its chain of view
# ops applied to the base's new history (no data is copied: view ops make views).
#
# A view whose base's history changed since (an in-place op on the base, or on another view
# of it) is stale: wherever its history is read (recording an op on it, grad_fn,
# requires_grad, backward roots), it is regenerated from the base's current history through
# the chain, as PyTorch does. The check is one comparison, and runs only for tensors that
# have a _meta; tensors that are not views never pay for it. A transform's values (a
# ``func.grad`` level's tensors) have views and histories of their own at their level, kept
# the same way.
def link_view(op, args, extra, params, t, k):
    """For a ``view=True`` op: link ``t`` (output ``k``) to the input whose memory it shares,
    if any (NumPy copies for some inputs, e.g. ``reshape`` of a non-contiguous array or
    advanced indexing; a multi-output op such as ``broadcast_arrays`` views a different
    input per output)."""
    for src in args:
        if isinstance(src, Tensor) and src._shares_memory(t):
            if op.view_replay is not None:
                vop, extra, params = op.view_replay(k, t)
                link = (src, vop, extra, params, -1)
            else:
                link = (src, op, extra, params, k if op.nout != 1 else -1)
            _share_version(src, t, link)
            return


def _share_version(src, t, link):
    """Make ``t`` a view of ``src``: it shares src's version counter and base, and records
    how it was made from src (Note [Saved tensors and versions], Note [In-place on views])."""
    sm = src._meta
    if sm is not None and sm.inference:
        return  # inference tensors track no versions and have no history to rebase
    t._vcounter = src._counter()
    base = sm.base if sm is not None else None
    if base is None:
        base = src
    m = _meta(t)
    m.base = base
    m.view_of = link
    m.refresh = check_view_history
    if base._requires_grad and _GRAD_OFF[0] and not STATE.grad_enabled:
        m.made_without_grad = True
    m.view_fn = base._grad_fn  # the base's history when the view was made
    if not base._requires_grad:
        _track_view(base, t)


def _track_view(base, t):
    """Remember (weakly) a view of a base that requires no grad: if an in-place op makes the
    base require grad, its views must too (their histories are then regenerated)."""
    bm = _meta(base)
    views = bm.views
    if views is None:
        views = bm.views = []
    elif len(views) >= 32 and len(views) & (len(views) - 1) == 0:  # prune at powers of two
        views[:] = [r for r in views if r() is not None]
    views.append(_weakref(t))


def base_now_requires_grad(base):
    """``base`` started to require grad through an in-place op: so do its views."""
    bm = base._meta
    if bm is None or bm.views is None:
        return
    for r in bm.views:
        v = r()
        if v is not None and v._meta.base is base:
            v._requires_grad = True  # its history is regenerated where it is read
    bm.views = None


def check_view_history(t):
    m = t._meta
    base = m.base
    if base is not None and base._grad_fn is not m.view_fn:
        regenerate(t)


def regenerate(t):
    """Derive view ``t``'s history from its base's current one (Note [In-place on views])."""
    m = t._meta
    base = m.base
    parent, vop, extra, params, k = m.view_of
    if parent is not base:
        pm = parent._meta
        if pm.base is not None and base._grad_fn is not pm.view_fn:
            regenerate(parent)
    with enable_grad():
        r = vop.apply(parent, *extra, **params)
    if k >= 0:
        r = r[k]
    if r._grad_fn is not None:
        t._grad_fn = r._grad_fn
        t._output_nr = r._output_nr
        t._requires_grad = True
    else:
        t._grad_fn = None
        t._output_nr = 0
        t._requires_grad = parent._requires_grad  # a view of a leaf: its own leaf
    m.view_fn = base._grad_fn
