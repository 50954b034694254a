"""``apply``: THE hot path every primitive goes through.

``apply(op, *args, **params)`` unwraps Tensors, picks the backend from the inputs, runs the
op's forward on raw arrays and wraps the result. Only when grad mode is on and an input
requires grad does it build a Node; only then does it look at what to save. Keep this module
lean: every added attribute read here is paid on every operation (see benchmarks/).
"""

from __future__ import annotations

from .backend import NUMPY, _BACKEND_BY_TYPE
from .grad_mode import STATE
from .graph import OpNode, VersionCounter, leaf_accumulator, new_seq
from .ops.registry import VARIADIC
from .tensor import Tensor, _check_devices, _mark_inference, _new

__all__ = ["apply", "apply_inplace"]

_DIFF_KINDS = frozenset("fc")


def apply(op, *args, **params):
    """Run ``op`` on ``args`` (Tensors, arrays or Python scalars), recording it if needed."""
    nin = op.nin
    if nin == VARIADIC:
        nin = len(args)
        datas = []
        extra = ()
    elif len(args) > nin:
        extra = args[nin:]
        args = args[:nin]
        datas = []
    else:
        extra = ()
        datas = []
    B = None
    requires_grad = False
    for a in args:
        if type(a) is Tensor:
            d = a._data
            if B is None:
                B = _BACKEND_BY_TYPE[type(d)]
            elif B.array_type is not type(d):
                _check_devices(op, args)
            if a._requires_grad:
                requires_grad = True
            datas.append(d)
        else:
            datas.append(a)
    if B is None:
        B = NUMPY
    out = op.forward(B, *datas, *extra, **params)

    record = requires_grad and op.differentiable and STATE.grad_enabled
    if op.nout == 1:
        if type(out) is not B.array_type:
            out = B.asarray(out)
        if record and out.dtype.kind in _DIFF_KINDS:
            t = _new(out, True)
            node = _record(op, B, args, extra, params, (t,), (out,))
            t._grad_fn = node
        else:
            t = _new(out, False)
            if STATE.inference:
                _mark_inference(t)
        if op.view:
            _share_version(args[0], t)
        return t

    outs = tuple(o if type(o) is B.array_type else B.asarray(o) for o in out)
    if record and outs and outs[0].dtype.kind in _DIFF_KINDS:
        ts = tuple(_new(o, True) for o in outs)
        node = _record(op, B, args, extra, params, ts, outs)
        for i, t in enumerate(ts):
            t._grad_fn = node
            t._output_nr = i
    else:
        ts = tuple(_new(o, False) for o in outs)
    if op.view:
        for t in ts:
            _share_version(args[0], t)
    return ts


def _share_version(src, t):
    """A view shares its base's version counter (Note [Saved tensors and versions])."""
    if type(src) is not Tensor and not isinstance(src, Tensor):
        return
    c = src._version
    if c is None:
        c = src._version = VersionCounter()
    t._version = c
    t._base = src._base if src._base is not None else src


def _record(op, B, args, extra, params, out_tensors, out_arrays):
    """Build the Node for one recorded call (Note [What a node saves])."""
    needs = tuple(type(a) is Tensor and a._requires_grad for a in args)
    node = OpNode.__new__(OpNode)
    edges = []
    for a, need in zip(args, needs):
        if not need:
            edges.append(None)
        elif a._grad_fn is not None:
            edges.append((a._grad_fn, a._output_nr))
        else:
            edges.append((leaf_accumulator(a), 0))
    save_out, mask = op.save_mask(needs)
    saved = None
    versions = None
    if mask is None or True in mask:
        saved = []
        versions = []
        for k, a in enumerate(args):
            if mask is None or mask[k]:
                if type(a) is Tensor:
                    if a._meta is not None and a._meta.inference:
                        _raise_inference_save(op)
                    c = a._version
                    versions.append(c.value if c is not None else 0)
                else:
                    versions.append(0)
                saved.append(a)
            else:
                saved.append(None)
                versions.append(0)
    node.op = op
    node.extra = extra
    node.params = params
    node.saved = saved
    node.versions = versions
    if save_out:
        c = VersionCounter()
        for t in out_tensors:
            t._version = c
        node.out_data = out_arrays[0] if op.nout == 1 else out_arrays
        node.out_version = (c, 0)
    else:
        node.out_data = None
        node.out_version = None
    node.in_meta = tuple((a._data.shape, a._data.dtype) if need else None
                         for a, need in zip(args, needs))
    node.needs = needs
    node.backend = B
    node.edges = tuple(edges)
    node.seq = new_seq()
    node.pre_hooks = None
    node.post_hooks = None
    node.tensor_hooks = None
    node.nout = len(out_arrays)
    node.out_shapes = None if op.nout == 1 else tuple((o.shape, o.dtype) for o in out_arrays)
    node.trace = _anomaly_trace() if _ANOMALY[0] else None
    return node


# Anomaly mode (core/anomaly.py) flips this flag; a list so the check is one index.
_ANOMALY = [False]


def _anomaly_trace():
    import traceback
    return traceback.format_stack()[:-3]


def _raise_inference_save(op):
    raise RuntimeError(
        f"Inference tensors cannot be saved for backward ({op.name}). An inference tensor was "
        "made inside `ndgrad.inference_mode()`; make it outside inference mode, or `.clone()` "
        "it outside inference mode to get a normal tensor."
    )


def apply_inplace(op, target, *args, **params):
    """``target <- op(target, *args, **params)`` in place, rebasing ``target``'s history.

    In-place on a leaf that requires grad is an error under grad mode (allowed under
    ``no_grad``, for parameter updates). A Node that needs ``target``'s old value saves a
    copy of it, with its old history.
    """
    if not isinstance(target, Tensor):
        raise TypeError(f"{op.name}: in-place target must be a Tensor, got {type(target).__name__}")
    grad_on = STATE.grad_enabled
    if grad_on and target._requires_grad and target._grad_fn is None:
        raise RuntimeError(
            f"a leaf tensor that requires grad (shape {list(target.shape)}) is being used in an "
            f"in-place operation ({op.name}). In-place changes to a leaf would make its gradient "
            "meaningless. For parameter updates wrap them in `with ndgrad.no_grad():`; "
            "otherwise use the out-of-place op or `.clone()` the leaf first."
        )
    base = target._base
    if grad_on and base is not None and base._requires_grad and base._grad_fn is None:
        raise RuntimeError(
            f"a view of a leaf tensor that requires grad is being used in an in-place "
            f"operation ({op.name}). Use the out-of-place op, or `.clone()` the leaf first."
        )
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
    data[...] = rdata
    c = target._version
    if c is None:
        c = target._version = VersionCounter()
    c.value += 1
    if record and result._grad_fn is not None:
        node = result._grad_fn
        if node.out_version is not None:
            # The saved output is now target's storage, at target's new version.
            node.out_data = data
            node.out_version = (c, c.value)
        target._grad_fn = node
        target._output_nr = 0
        target._requires_grad = True
    return target


class _NoGrad:
    __slots__ = ("prev",)

    def __enter__(self):
        self.prev = STATE.grad_enabled
        STATE.grad_enabled = False

    def __exit__(self, *exc):
        STATE.grad_enabled = self.prev
