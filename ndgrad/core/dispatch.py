"""``apply``: THE hot path every primitive goes through; in-place operations and views.

``apply(op, *args, **params)`` unwraps Tensors, picks the backend from the inputs, runs the
op's forward on raw arrays and wraps the result. Only when grad mode is on and an input
requires grad does it record a Node (``graph.record``). When a transform level is visible
and an input belongs to one, the level's interpreter runs the op instead (Note [Levels] in
core/levels.py). Keep this module lean: every attribute read on the fast path is paid on
every operation (benchmarks/bench_core.py measures it).

Device mixing is decided by core/devices.py (Note [Mixing devices]); a view op's outputs are
linked to their bases by core/views.py (Note [In-place on views]).
"""

from __future__ import annotations


from . import levels as _levels
from .backend import (_BACKEND_BY_TYPE, DIFFERENTIABLE_DTYPES, NUMPY, WEAK_FLOAT_DTYPES,
                      Unsupported)
from .grad_mode import GRAD_DISABLED_THREADS as _GRAD_OFF
from .grad_mode import INFERENCE_BLOCKS, PROFILER, RUN_HERE, STATE
from .devices import DeviceMismatchError, same_device, scalars_to_device
from .graph import record
from .namespace import (PY_SCALARS as _PY_SCALARS, SEQUENCES as _SEQUENCES, TENSOR_F,
                        VARIADIC, Namespace, holds_tensor, inputs_by_position, scalar_array,
                        scalars_as_arrays, sequences_stacked, stack_nested)
from .tensor import Tensor, _mark_inference, _new, owning_level
from .views import link_view

__all__ = ["apply", "TENSOR_F", "Namespace", "VARIADIC"]

_DIFF_DTYPES = DIFFERENTIABLE_DTYPES  # (Note [Differentiable dtypes] in core/backend.py)
_WEAK_FLOATS = WEAK_FLOAT_DTYPES  # bfloat16 once seen: Python floats keep its dtype
_VISIBLE = _levels.VISIBLE
_PROFILER = PROFILER  # (Note [Profiling] in core/grad_mode.py)
_NDARRAY = NUMPY.array_type


# ------------------------------------------------------------------ the hot path
def apply(op, *args, **params):
    """Run ``op`` on ``args`` (Tensors, arrays or Python scalars), recording it if needed."""
    if _PROFILER[0]:  # the profiler observes: it runs the op (Note [Profiling])
        out = _PROFILER[0](op, args, params)
        if out is not RUN_HERE:
            return out
    try:
        if _VISIBLE[0]:  # a transform level is visible (Note [Levels])
            claim = params  # (plain Tensors without level data, and no parameters: no level's)
            if not claim:
                for a in args:
                    if isinstance(a, Tensor) and (type(a) is not Tensor or a._meta is not None):
                        claim = True
                        break
            if claim:
                level = owning_level(args, params)
                if level is not None:
                    if len(args) < op.nin:  # (array inputs by name, NumPy's round(a=x))
                        args, params = inputs_by_position(op, args, params) or (args, params)
                    if len(_BACKEND_BY_TYPE) > 1:  # (a GPU backend is installed)
                        args = scalars_to_device(op, args)
                    for a in args:  # (a level's value in a list: Note [Sequences of tensors])
                        if type(a) in _SEQUENCES:
                            stacked = sequences_stacked(args, op)
                            if stacked is not None:
                                return apply(op, *stacked, **params)
                    return level.interpreter.process(level, op, args, params)
        nin = op.nin
        n = len(args)
        # Fast paths: one or two inputs and no extra positional parameters (most calls).
        if n == nin == 1:
            a = args[0]
            if type(a) is Tensor:
                d = a._data
                # (Note [Forwards that hand their arguments on] in core/ops/registry.py)
                out = op.forward(_BACKEND_BY_TYPE[type(d)], d, **params) if params else \
                    op.bound[_BACKEND_BY_TYPE[type(d)]](d)
                requires_grad = a._requires_grad
            elif isinstance(a, Tensor):
                return _apply_general(op, args, params)
            else:  # an array or a Python scalar: its own backend (NumPy for scalars)
                if type(a) in _SEQUENCES and holds_tensor(a):
                    return apply(op, stack_nested(a, op.qualname), **params)
                if type(a) in _PY_SCALARS:  # Note [Python scalars as inputs]
                    a = scalar_array(a)
                out = op.forward(_BACKEND_BY_TYPE.get(type(a), NUMPY), a, **params)
                requires_grad = False
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
                        return _mixed(op, args, (), params)
                    if b._requires_grad:
                        requires_grad = True
                elif type(b) is float:  # (a Python float, the common case, first)
                    db = b
                    if _WEAK_FLOATS and da.dtype in _WEAK_FLOATS:
                        db = da.dtype.type(b)
                elif isinstance(b, Tensor):
                    return _apply_general(op, args, params)
                else:
                    db = b
                    if type(b) in _SEQUENCES:  # Note [Sequences of tensors]
                        return _apply_general(op, args, params)
                    if B is not NUMPY and type(b) is _NDARRAY:  # NumPy array, GPU tensor
                        return _mixed(op, args, (), params)
            elif type(b) is Tensor and not isinstance(a, Tensor):
                if type(a) in _SEQUENCES:
                    return _apply_general(op, args, params)
                da = a
                db = b._data
                B = _BACKEND_BY_TYPE[type(db)]
                requires_grad = b._requires_grad
                if B is not NUMPY and type(a) is _NDARRAY:
                    return _mixed(op, args, (), params)
                if _WEAK_FLOATS and type(a) is float and db.dtype in _WEAK_FLOATS:
                    da = db.dtype.type(a)
            elif isinstance(a, Tensor) or isinstance(b, Tensor):
                return _apply_general(op, args, params)
            else:
                if type(a) in _SEQUENCES or type(b) in _SEQUENCES:
                    return _apply_general(op, args, params)
                da, db = a, b
                if type(a) in _PY_SCALARS and type(b) in _PY_SCALARS:  # (Note [Python
                    da, db = scalars_as_arrays(args)                   # scalars as inputs])
                B = _BACKEND_BY_TYPE.get(type(a)) or _BACKEND_BY_TYPE.get(type(b), NUMPY)
            out = op.forward(B, da, db, **params) if params else op.bound[B](da, db)
        else:
            return _apply_general(op, args, params)
        return _result(op, args, (), params, out, requires_grad)

    except TypeError as exc:
        if op.signature is None:
            raise
        return _call_error(op, args, params, exc)
    except Unsupported as exc:  # (Note [Backend plug-ins]: name the ndgrad function)
        if exc.op is not None:
            raise
        raise exc.for_op(op.qualname) from None


def _result(op, args, extra, params, out, requires_grad):
    """The Tensor(s) around the forward's ``out``: recorded, marked, linked as views."""
    single = op.nout == 1
    if single:
        t = _new(out if type(out) is _NDARRAY else _as_array(out), False)
        outs = (t,)
    else:
        outs = tuple(_new(_as_array(o), False) for o in out)
        if not outs:
            return outs
        t = outs[0]
    if requires_grad and op.differentiable and (not _GRAD_OFF[0] or STATE.grad_enabled) and \
            t._data.dtype in _DIFF_DTYPES:
        record(op, args, outs, extra, params)
    elif INFERENCE_BLOCKS[0] and STATE.inference:
        for o in outs:
            _mark_inference(o)
    if op.view:
        for k, o in enumerate(outs):
            link_view(op, args, extra, params, o, k)
    return t if single else outs


def _call_error(op, args, params, exc):
    """Re-raise ``exc``, a TypeError from running ``op`` called through its public
    function; when the call does not fit the public signature, say so in its terms (the
    forward's own message would count its hidden backend argument). Array inputs given by
    name, NumPy's ``round(a=x)``, are run again by position (the fast paths take them so)."""
    try:
        op.signature.bind(*args, **params)
    except TypeError as bad:
        raise TypeError(f"ndgrad.{op.qualname}{op.signature}: {bad}") from None
    moved = inputs_by_position(op, args, params)
    if moved is not None:
        return apply(op, *moved[0], **moved[1])
    raise exc


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
    stacked = sequences_stacked(args, op)
    if stacked is not None:
        return apply(op, *stacked, *extra, **params)
    datas = []
    B = None
    requires_grad = False
    mixed = False
    for a in args:
        if isinstance(a, Tensor):
            if type(a) is not Tensor:  # a value of an exited transform level
                return apply(op, *_alive_values(args), *extra, **params)
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
        datas = scalars_as_arrays(datas) or datas  # (Note [Python scalars as inputs])
        B = next((_BACKEND_BY_TYPE[type(d)] for d in datas if type(d) in _BACKEND_BY_TYPE),
                 NUMPY)
    elif B is not NUMPY and not mixed:
        mixed = any(type(d) is _NDARRAY for d in datas)  # NumPy arrays with GPU tensors
    if mixed:  # Note [Mixing devices]
        return _mixed(op, args, extra, params)
    return _result(op, args, extra, params, op.forward(B, *datas, *extra, **params),
                   requires_grad)


def _alive_values(args):
    out = []
    for a in args:
        if isinstance(a, Tensor) and type(a) is not Tensor:
            alive = a._alive()
            if alive is a:  # (Note [A level's values below it] in core/levels.py)
                raise _levels.HiddenValueError(a._level)
            a = alive
        out.append(a)
    return out


def _mixed(op, args, extra, params):
    """Run ``op`` on inputs of two devices (Note [Mixing devices]): with arrays of a backend
    that ``takes_host_arrays`` among NumPy ones, on that backend; otherwise after
    ``same_device``."""
    taker = None
    for a in args:
        B = _BACKEND_BY_TYPE.get(type(a._data if type(a) is Tensor else a))
        if B is not None and B.takes_host_arrays:
            taker = B
            break
    if taker is not None:
        datas = []
        requires_grad = False
        for a in args:
            d = a._data if type(a) is Tensor else a
            if type(d) in _BACKEND_BY_TYPE and type(d) is not _NDARRAY and \
                    type(d) is not taker.array_type:
                raise DeviceMismatchError(op.qualname, taker.device_of(None),
                                          _BACKEND_BY_TYPE[type(d)].device_of(d))
            if type(a) is Tensor and a._requires_grad:
                requires_grad = True
            datas.append(d)
        return _result(op, args, extra, params, op.forward(taker, *datas, *extra, **params),
                       requires_grad)
    return apply(op, *same_device(op, args), *extra, **params)
