"""``apply``: THE hot path every primitive goes through.

``apply(op, *args, **params)`` unwraps Tensors, picks the backend from the inputs, runs the
op's forward on raw arrays and wraps the result. Only when grad mode is on and an input
requires grad does it build a Node; only then does it look at what to save. Keep this module
lean: every added attribute read here is paid on every operation (see benchmarks/).
"""

from __future__ import annotations

from weakref import ref as _weakref

from . import levels as _levels
from .backend import _BACKEND_BY_TYPE, DIFFERENTIABLE_DTYPES, NUMPY, WEAK_FLOAT_DTYPES
from .grad_mode import GRAD_DISABLED_THREADS as _GRAD_OFF
from .grad_mode import INFERENCE_BLOCKS, STATE
from .graph import _TENSOR_F, OpNode, VersionCounter, _NodeHooks, leaf_accumulator
from .graph import _seq as _seq_counter
from .ops.registry import VARIADIC
from . import tensor as _tensor_mod
from .tensor import Tensor, _mark_inference, _meta, _new, same_device

__all__ = ["apply", "apply_inplace"]

_DIFF_DTYPES = DIFFERENTIABLE_DTYPES  # (Note [Differentiable dtypes] in core/backend.py)
_WEAK_FLOATS = WEAK_FLOAT_DTYPES  # bfloat16 once seen: Python floats keep its dtype

# Transforms (forward mode, vmap) hand ops to their handlers through core.levels
# (Note [Levels]): with no level active, that is one list read per op.
_LEVELS_ACTIVE = _levels.ACTIVE
_NOT_HANDLED = _levels.NOT_HANDLED
_level_apply = _levels.apply_hook
_level_inplace = _levels.inplace_hook


def apply(op, *args, **params):
    """Run ``op`` on ``args`` (Tensors, arrays or Python scalars), recording it if needed."""
    if _LEVELS_ACTIVE[0]:  # a transform level is active (Note [Levels])
        claim = params  # (plain Tensors only and no parameters: no level can claim it)
        if not claim:
            for a in args:
                if type(a) is not Tensor or a._meta is not None:
                    claim = True
                    break
        if claim:
            r = _level_apply(op, args, params)
            if r is not _NOT_HANDLED:
                return r
    nin = op.nin
    n = len(args)
    # Fast paths: one or two inputs and no extra positional parameters (most calls).
    if n == nin == 1:
        a = args[0]
        if type(a) is Tensor:
            d = a._data
            out = op.forward(_BACKEND_BY_TYPE[type(d)], d, **params)
            requires_grad = a._requires_grad
        else:  # an array or a Python scalar: its own backend (NumPy for scalars)
            out = op.forward(_BACKEND_BY_TYPE.get(type(a), NUMPY), a, **params)
            requires_grad = False
        extra = ()
    elif n == nin == 2:
        a, b = args
        requires_grad = False
        if type(a) is Tensor:
            da = a._data
            B = _BACKEND_BY_TYPE[type(da)]
            requires_grad = a._requires_grad
            if type(b) is Tensor:
                db = b._data
                if type(db) is not B.array_type:  # Note [Mixing devices]
                    return apply(op, *same_device(op, args), **params)
                if b._requires_grad:
                    requires_grad = True
            else:
                db = b
                if B is not NUMPY and type(b) is _NDARRAY:  # a NumPy array with a GPU tensor
                    return apply(op, *same_device(op, args), **params)
                if _WEAK_FLOATS and type(b) is float and da.dtype in _WEAK_FLOATS:
                    db = da.dtype.type(b)
        elif type(b) is Tensor:
            da = a
            db = b._data
            B = _BACKEND_BY_TYPE[type(db)]
            requires_grad = b._requires_grad
            if B is not NUMPY and type(a) is _NDARRAY:
                return apply(op, *same_device(op, args), **params)
            if _WEAK_FLOATS and type(a) is float and db.dtype in _WEAK_FLOATS:
                da = db.dtype.type(a)
        else:
            da, db = a, b
            B = _BACKEND_BY_TYPE.get(type(a)) or _BACKEND_BY_TYPE.get(type(b), NUMPY)
        out = op.forward(B, da, db, **params)
        extra = ()
    else:
        return _apply_general(op, args, params)
    if op.nout != 1:
        return _wrap_outputs(op, args, extra, params, out, requires_grad)
    if type(out) is not _NDARRAY:
        out = _as_array(out)
    if requires_grad and op.differentiable and (not _GRAD_OFF[0] or STATE.grad_enabled) and \
            out.dtype in _DIFF_DTYPES:
        t = _new(out, True)
        t._grad_fn = _record_fast(op, args, params, t, out)
    else:
        t = _new(out, False)
        if INFERENCE_BLOCKS[0] and STATE.inference:
            _mark_inference(t)
    if op.view:
        _link_view(op, args, (), params, t, 0)
    return t


_NDARRAY = NUMPY.array_type


def _record_fast(op, args, params, t, out):
    """_record for one or two inputs, one output, no extra positionals (the common case)."""
    node = _OpNode_new(OpNode)
    if len(args) == 1:
        a = args[0]
        if a._meta is not None:
            _check_view_history(a)
        fn = a._grad_fn
        edges = ((fn, a._output_nr) if fn is not None else (leaf_accumulator(a), 0),)
        d = a._data
        meta = ((d.shape, d.dtype),)
        needs = _ONE_NEEDED
    else:
        edges = []
        meta = []
        needs = []
        for a in args:
            if type(a) is Tensor and a._requires_grad:
                if a._meta is not None:
                    _check_view_history(a)
                fn = a._grad_fn
                edges.append((fn, a._output_nr) if fn is not None else (leaf_accumulator(a), 0))
                d = a._data
                meta.append((d.shape, d.dtype))
                needs.append(True)
            else:
                edges.append(None)
                meta.append(None)
                needs.append(False)
        needs = tuple(needs)
    plan = op._save_cache.get(needs)
    if plan is None:
        plan = op.save_mask(needs)
    save_out, mask = plan
    if mask is None or True in mask:
        _save_inputs(node, op, args, mask)
    else:
        node.saved = None
    if save_out:
        c = t._version = VersionCounter()
        node.out_data = out
        node.out_version = c
        node.out_expected = 0
    else:
        node.out_data = None
    node.op = op
    node.extra = ()
    node.params = params if params else _NO_PARAMS
    node.in_meta = meta
    node.edges = edges
    node.seq = _next_seq()
    node.hooks = _NodeHooks(_anomaly_trace()) if _ANOMALY[0] else None
    node.nout = 1
    return node


_ONE_NEEDED = (True,)
_NO_PARAMS = {}  # shared by every node whose op got no parameters: never mutated


def _save_inputs(node, op, args, mask):
    """Save the inputs in ``mask`` (None: all) with their versions."""
    saved = []
    versions = []
    for k, a in enumerate(args):
        if mask is None or mask[k]:
            if type(a) is Tensor:
                m = a._meta
                if m is not None and m.inference:
                    _raise_inference_save(op)
                c = a._version
                versions.append(c.value if c is not None else 0)
            else:
                versions.append(0)
            saved.append(a)
        else:
            saved.append(None)
            versions.append(0)
    node.saved = saved
    node.versions = versions


def _as_array(out):
    """Forward results that are not arrays of their backend (NumPy scalars from 0-d ops)."""
    if type(out) in _BACKEND_BY_TYPE:
        return out
    return NUMPY.asarray(out)


def _apply_general(op, args, params):
    nin = op.nin
    if nin == VARIADIC:
        extra = ()
    else:
        if len(args) < nin:
            raise TypeError(f"{op.name}() takes {nin} array argument(s), got {len(args)}")
        extra = args[nin:]
        args = args[:nin]
    datas = []
    B = None
    requires_grad = False
    mixed = False
    for a in args:
        if type(a) is Tensor:
            d = a._data
            if B is None:
                B = _BACKEND_BY_TYPE[type(d)]
            elif B.array_type is not type(d):
                mixed = True
            if a._requires_grad:
                requires_grad = True
            datas.append(d)
        else:
            datas.append(a)
    if B is None:  # no tensor among the inputs: the first array's backend
        B = next((_BACKEND_BY_TYPE[type(d)] for d in datas if type(d) in _BACKEND_BY_TYPE),
                 NUMPY)
    elif B is not NUMPY and not mixed:
        mixed = any(type(d) is _NDARRAY for d in datas)  # NumPy arrays with GPU tensors
    if mixed:  # Note [Mixing devices]
        return apply(op, *same_device(op, args), *extra, **params)
    out = op.forward(B, *datas, *extra, **params)
    if op.nout != 1:
        return _wrap_outputs(op, args, extra, params, out, requires_grad)
    if type(out) is not B.array_type:
        out = _as_array(out)
    if requires_grad and op.differentiable and (not _GRAD_OFF[0] or STATE.grad_enabled) and \
            out.dtype in _DIFF_DTYPES:
        t = _new(out, True)
        t._grad_fn = _record(op, args, extra, params, (t,), (out,))
    else:
        t = _new(out, False)
        if INFERENCE_BLOCKS[0] and STATE.inference:
            _mark_inference(t)
    if op.view:
        _link_view(op, args, extra, params, t, 0)
    return t


def _wrap_outputs(op, args, extra, params, out, requires_grad):
    outs = tuple(_as_array(o) for o in out)
    if requires_grad and op.differentiable and (not _GRAD_OFF[0] or STATE.grad_enabled) and \
            outs and outs[0].dtype in _DIFF_DTYPES:
        ts = tuple(_new(o, True) for o in outs)
        node = _record(op, args, extra, params, ts, outs)
        for i, t in enumerate(ts):
            t._grad_fn = node
            t._output_nr = i
    else:
        ts = tuple(_new(o, False) for o in outs)
        if INFERENCE_BLOCKS[0] and STATE.inference:
            for t in ts:
                _mark_inference(t)
    if op.view:
        for k, t in enumerate(ts):
            _link_view(op, args, extra, params, t, k)
    return ts


def _share_version(src, t, link):
    """Make ``t`` a view of ``src``: it shares src's version counter and base, and records
    how it was made from src (Note [Saved tensors and versions], Note [In-place on views])."""
    sm = src._meta
    if sm is not None and sm.inference:
        return  # inference tensors track no versions and have no history to rebase
    c = src._version
    if c is None:
        c = src._version = VersionCounter()
    t._version = c
    base = sm.base if sm is not None else None
    if base is None:
        base = src
    m = _meta(t)
    m.base = base
    m.view_of = link
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


def _base_now_requires_grad(base):
    """``base`` started to require grad through an in-place op: so do its views."""
    bm = base._meta
    if bm is None or bm.views is None:
        return
    for r in bm.views:
        v = r()
        if v is not None and v._meta.base is base:
            v._requires_grad = True  # its history is regenerated where it is read
    bm.views = None


def _link_view(op, args, extra, params, t, k):
    """For a ``view=True`` op: link ``t`` (output ``k``) to the input whose memory it shares,
    if any (NumPy copies for some inputs, e.g. ``reshape`` of a non-contiguous array or
    advanced indexing; a multi-output op such as ``broadcast_arrays`` views a different
    input per output)."""
    d = t._data
    B = _BACKEND_BY_TYPE[type(d)]
    for src in args:
        if type(src) is Tensor and B.may_share_memory(src._data, d):
            if op.view_replay is not None:
                vop, extra, params = op.view_replay(k, t)
                link = (src, vop, extra, params, -1)
            else:
                link = (src, op, extra, params, k if op.nout != 1 else -1)
            _share_version(src, t, link)
            return


def input_edge(a):
    """For an input ``a`` that requires grad: the edge to its Node, and its (shape, dtype).

    (_record_fast has the same lines inlined: it is the hot path.)"""
    if a._meta is not None:
        _check_view_history(a)
    fn = a._grad_fn
    d = a._data
    edge = (fn, a._output_nr) if fn is not None else (leaf_accumulator(a), 0)
    return edge, (d.shape, d.dtype)


def _record(op, args, extra, params, out_tensors, out_arrays):
    """Build the Node for one recorded call (Note [What a node saves])."""
    needs = []
    edges = []
    meta = []
    for a in args:
        if type(a) is Tensor and a._requires_grad:
            needs.append(True)
            edge, m = input_edge(a)
            edges.append(edge)
            meta.append(m)
        else:
            needs.append(False)
            edges.append(None)
            meta.append(None)
    needs = tuple(needs)
    save_out, mask = op.save_mask(needs)
    node = _OpNode_new(OpNode)
    if mask is None or True in mask:
        _save_inputs(node, op, args, mask)
    else:
        node.saved = None
    if save_out:
        c = VersionCounter()
        for t in out_tensors:
            t._version = c
        node.out_data = out_arrays[0] if op.nout == 1 else out_arrays
        node.out_version = c
        node.out_expected = 0
    else:
        node.out_data = None
    finish_node(node, op, extra, params, meta, edges)
    if op.nout == 1:
        node.nout = 1
        node.out_shapes = None
    else:
        node.nout = len(out_arrays)
        node.out_shapes = tuple((o.shape, o.dtype) for o in out_arrays)
    return node


_OpNode_new = object.__new__


def finish_node(node, op, extra, params, in_meta, edges):
    """Set what every recorded op node holds besides its saved values (also used by vmap's
    nodes; _record_fast has the same lines inlined: it is the hot path)."""
    node.op = op
    node.extra = extra
    node.params = params
    node.in_meta = in_meta
    node.edges = edges
    node.seq = _next_seq()
    node.hooks = _NodeHooks(_anomaly_trace()) if _ANOMALY[0] else None


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
# have a _meta; tensors that are not views never pay for it.
def _check_view_history(t):
    m = t._meta
    base = m.base
    if base is not None and base._grad_fn is not m.view_fn:
        _regenerate(t)


_tensor_mod._VIEW_CHECK[0] = _check_view_history


def _regenerate(t):
    """Derive view ``t``'s history from its base's current one (Note [In-place on views])."""
    m = t._meta
    base = m.base
    parent, vop, extra, params, k = m.view_of
    if parent is not base:
        pm = parent._meta
        if pm.base is not None and base._grad_fn is not pm.view_fn:
            _regenerate(parent)
    prev = STATE.grad_enabled
    STATE.grad_enabled = True
    try:
        r = apply(vop, parent, *extra, **params)
    finally:
        STATE.grad_enabled = prev
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


def _stand_in(t):
    """A Tensor with ``t``'s data and current history, to record functional ops on."""
    s = _new(t._data, t._requires_grad)
    s._grad_fn = t._grad_fn
    s._output_nr = t._output_nr
    return s


def _write_back(view, new):
    """Record ``new`` (the new value of ``view``) up the view chain into the base; return
    the base's new value (recorded; its data is not the base's memory)."""
    F = _TENSOR_F[0]
    child = new
    t = view
    while True:
        parent, vop, extra, params, k = t._meta.view_of
        if vop.scatter is None:
            raise RuntimeError(
                f"in-place operation on a view made by {vop.name}, which cannot be written "
                f"to: {vop.notes.get('scatter', 'it declares no scatter rule')}")
        pm = parent._meta
        if pm is not None and pm.base is not None:
            _check_view_history(parent)
        pin = _stand_in(parent)
        if k >= 0:
            child = vop.scatter(F, k, pin, child, *extra, **params)
        else:
            child = vop.scatter(F, pin, child, *extra, **params)
        if parent._meta is None or parent._meta.base is None:
            return child
        t = parent


def _rebase_base(base, new_base):
    """Point ``base``'s history at ``new_base``'s node (its data is already written)."""
    node = new_base._grad_fn
    if node is not None:
        if not base._requires_grad:
            _base_now_requires_grad(base)
        base._grad_fn = node
        base._output_nr = new_base._output_nr
        base._requires_grad = True
        if type(node) is OpNode and node.out_data is not None:
            # the scatter node's output is the base's memory at the new version
            node.out_data = base._data
            node.out_version = base._version
            node.out_expected = base._version.value
_next_seq = _seq_counter.__next__


# Anomaly mode (core/anomaly.py) flips this flag; a list so the check is one index.
_ANOMALY = [False]


def _anomaly_trace():
    """The forward traceback a Node records in anomaly mode, up to the user's own frame."""
    from .anomaly import forward_trace
    return forward_trace()


def _raise_inference_save(op):
    raise RuntimeError(
        f"Inference tensors cannot be saved for backward ({op.name}). An inference tensor was "
        "made inside `ndgrad.inference_mode()`; make it outside inference mode, or `.clone()` "
        "it outside inference mode to get a normal tensor."
    )


def apply_inplace(op, target, *args, **params):
    """``target <- op(target, *args, **params)`` in place, rebasing ``target``'s history.

    In-place on a leaf that requires grad (or a view of one) is an error under grad mode
    (allowed under ``no_grad``, for parameter updates). A Node that needs ``target``'s old
    value saves a copy of it, with its old history. In-place on a view carries the change
    into its base's history (Note [In-place on views]).
    """
    if not isinstance(target, Tensor):
        raise TypeError(f"{op.name}: in-place target must be a Tensor, got {type(target).__name__}")
    if _LEVELS_ACTIVE[0]:
        r = _level_inplace(op, target, args, params)
        if r is not _NOT_HANDLED:
            return r
    m = target._meta
    if m is not None and m.inference and not STATE.inference:
        raise RuntimeError(
            f"Inplace update to inference tensor outside InferenceMode is not allowed "
            f"({op.name}). An inference tensor was made inside `ndgrad.inference_mode()`; "
            "`.clone()` it outside inference mode to get a normal tensor you can modify.")
    grad_on = STATE.grad_enabled
    if grad_on and target._requires_grad and target._grad_fn is None and (
            m is None or m.base is None):
        raise RuntimeError(
            f"a leaf tensor that requires grad (shape {list(target.shape)}) is being used in an "
            f"in-place operation ({op.name}). In-place changes to a leaf would make its gradient "
            "meaningless. For parameter updates wrap them in `with ndgrad.no_grad():`; "
            "otherwise use the out-of-place op or `.clone()` the leaf first."
        )
    base = m.base if m is not None else None
    if base is not None and grad_on:
        if base._requires_grad and base._grad_fn is None:
            raise RuntimeError(
                f"a view of a leaf tensor that requires grad is being used in an in-place "
                f"operation ({op.name}). In-place changes to the view would change the leaf. "
                "Use the out-of-place op, `.clone()` the leaf first, or wrap parameter updates "
                "in `with ndgrad.no_grad():`."
            )
        if m.made_without_grad and base._requires_grad:
            raise RuntimeError(
                f"A view was created in no_grad mode and is being modified in place ({op.name}) "
                "with grad mode enabled. This use is ambiguous and error-prone, so it is "
                "forbidden (as in PyTorch): make the view and the in-place operation both "
                "inside the no_grad block (if the change should not be recorded) or both "
                "outside it (if it should).")
        _check_view_history(target)  # the view's history, derived from the base's current one
    # Run the op functionally, with a stand-in for target that carries its current history.
    record = grad_on and op.differentiable and (
        target._requires_grad or any(isinstance(a, Tensor) and a._requires_grad for a in args))
    if record:
        needs = (target._requires_grad,) + tuple(
            isinstance(a, Tensor) and a._requires_grad for a in args[:op.nin - 1])
        _, mask = op.save_mask(needs)
        if mask is None or (mask and mask[0]):
            old = _new(target._data.copy(), target._requires_grad)  # its old value, saved
        else:
            old = _new(target._data, target._requires_grad)  # not saved: no copy needed
        old._grad_fn = target._grad_fn
        old._output_nr = target._output_nr
        result = apply(op, old, *args, **params)
    else:
        with _NoGrad():
            result = apply(op, target, *args, **params)
    data = target._data
    rdata = result._data
    _check_inplace_result(op, data, rdata)
    # A view in a differentiable computation: its base's history gets the change too.
    copy_slices = base is not None and grad_on and (
        (record and result._grad_fn is not None) or base._requires_grad)
    if copy_slices:
        if rdata.dtype != data.dtype:
            result = apply(_ASTYPE[0], result, dtype=data.dtype)
        new_base = _write_back(target, result)
    data[...] = rdata
    if m is not None and m.inference:
        return target  # inference tensors track no versions
    c = target._version
    if c is None:
        c = target._version = VersionCounter()
    c.value += 1
    node = result._grad_fn if record else None
    if node is not None and node.out_data is not None and result._data is rdata:
        # The saved output is now target's storage, at target's new version.
        node.out_data = data
        node.out_version = c
        node.out_expected = c.value
    if copy_slices:
        _rebase_base(base, new_base)
        _regenerate(target)
    elif node is not None:
        if not target._requires_grad:
            _base_now_requires_grad(target)
        target._grad_fn = node
        target._output_nr = 0
        target._requires_grad = True
    return target


_ASTYPE = [None]  # the astype op, set by ndgrad.core.ops


def _check_inplace_result(op, data, rdata):
    if rdata.shape != data.shape:
        raise RuntimeError(
            f"{op.name}: output with shape {list(data.shape)} doesn't match the broadcast "
            f"shape {list(rdata.shape)} of the in-place operation; an in-place op cannot "
            "change its target's shape"
        )
    if rdata.dtype != data.dtype:
        B = _BACKEND_BY_TYPE[type(data)]
        if not B.can_cast(rdata.dtype, data.dtype, "same_kind"):
            raise RuntimeError(
                f"{op.name}: result type {rdata.dtype} can't be cast to the desired output type "
                f"{data.dtype} of the in-place target; use the out-of-place op or convert the "
                "target with .astype() first"
            )


class _NoGrad:
    __slots__ = ("prev",)

    def __enter__(self):
        self.prev = STATE.grad_enabled
        STATE.grad_enabled = False

    def __exit__(self, *exc):
        STATE.grad_enabled = self.prev
