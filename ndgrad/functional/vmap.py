"""vmap: the batching transform.

``vmap(f)`` maps ``f`` over a batch dimension of its inputs with ONE call of ``f``: every op
inside runs once, on the whole batch, through its batching rule (declared with the op in
``ndgrad/core/ops``), not once per batch element.

Note [Batched tensors]
~~~~~~~~~~~~~~~~~~~~~~
Inside ``vmap``, an input mapped over is a :class:`BatchedTensor`: a Tensor whose shape,
dtype and values are those of ONE batch element (its *logical* view), holding the whole
batch as an ordinary Tensor, ``_value``, with the batch dimension first (its *physical*
value), and the vmap :class:`~ndgrad.core.levels.Level` it belongs to. Nested vmaps nest
them: the physical value of a level-2 batched tensor may itself be a level-1 one.

Every op on a batched tensor reaches this module through ``core.levels`` (Note [Levels]):
the op's batching rule runs on the physical values (``rule(F, batched, *args, **params)``,
``batched`` saying which array inputs carry the batch dimension first) with ordinary ndgrad
ops, which the outer levels (an enclosing vmap, a dual level, reverse mode) see and record as
usual; the result is wrapped again. An op without a rule runs once per batch element (a
Python loop) and warns once; the property suite lists those ops.

Two graphs, one per level of meaning. Reverse mode OUTSIDE the vmap (``grad(vmap(f))``)
differentiates the physical computation: the rules' ops are recorded on the physical
tensors. Reverse mode INSIDE it differentiates the logical one: ``vmap(func.grad(f))`` through
the grad level's own values, and ``ndgrad.autograd`` on batched tensors (a batched tensor made
to require grad inside the vmap, or an unbatched tensor that requires grad, entering an op)
through a node recorded on the batched output (``graph.record``, like any op node: its saved
values are batched tensors, version-checked through their physical values). A formula that
reads a batched value runs on Tensors (Note [Formulas on arrays or on Tensors] in
core/engine.py), so its ops are batched: a gradient of an unbatched tensor that depends on
batched values comes out batched, one gradient per example.

Randomness: ``randn``/``rand`` inside a vmap follow ``randomness``: "error" (the default)
raises, "different" draws independent values for every batch element, "same" draws one
value shared by the batch.
"""

from __future__ import annotations

import functools
from itertools import repeat
import warnings

from ..core import creation
from ..core import backward as _engine
from ..core import levels as _levels
from ..core.backend import backend_for_device, is_differentiable_dtype
from ..core.creation import asarray as _asarray
from ..core.dispatch import TENSOR_F, VARIADIC, apply
from ..core.tensor import innermost_level
from ..core.views import link_view
from ..core.function import Function, new_ctx
from ..core.inplace import apply_inplace, inplace
from ..core.grad_mode import STATE
from ..core.graph import record
from ..core.ops import PUBLIC, REGISTRY
from ..core.ops.batching import default_rule
from ..core.tensor import Tensor, _new, finish
from ..core.wrapper_level import WrapperInterpreter, WrapperTensor
from .pytree import tree_flatten, tree_unflatten

__all__ = ["vmap", "BatchedTensor", "fallback_ops", "batched_grad", "autograd_grad"]

below = _levels.below
_MOVEAXIS = REGISTRY["moveaxis"]
_INDEX_PUT = REGISTRY["index_put"]
_STACK_OP = REGISTRY["stack"]
_CLONE = REGISTRY["clone"]


class VmapInfo:
    """What a vmap level knows: its batch ``size`` and ``randomness``."""

    __slots__ = ("size", "randomness")

    def __init__(self, size, randomness):
        self.size = size
        self.randomness = randomness


# ------------------------------------------------------------------------ batched tensors
class _NoRawData:
    """A batched tensor's ``_data``: code that reads raw arrays must not meet one."""

    __slots__ = ()

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        raise RuntimeError(
            "internal error: the raw array of a batched tensor (inside vmap) was read (."
            f"{name}); this operation does not support vmap yet. Please report it, with the "
            "code that raised it.")


_NO_DATA = _NoRawData()


def _escaped():
    raise RuntimeError(
        "a batched tensor made inside a vmap was used after that vmap returned (it escaped, "
        "e.g. stored in a global, a list or a closure variable). Return it from the vmapped "
        "function instead: vmap then gives it back with the batch dimension.")


def _no_value(what):
    raise RuntimeError(
        f"vmap: {what} of a batched tensor is not supported inside vmap: the value differs "
        "per batch element (data-dependent Python control flow cannot be vectorized). Use "
        "ndgrad.where for data-dependent choices, or return the tensor from the function.")


class BatchedTensor(WrapperTensor):
    """A Tensor inside :func:`vmap`: one batch element's view of a batched value.

    Users do not make these; vmap wraps the inputs it maps over (Note [Batched tensors]).
    ``shape``, ``dtype`` and every op are those of one batch element; the rest of the
    metadata is the wrapper levels' (Note [Wrapper levels] in core/wrapper_level.py).
    """

    __slots__ = ("_phys", "_diag")
    _batched = True  # (one value per batch element: formulas cannot read them)

    @staticmethod
    def _wrap(value, level):
        """The batched tensor at ``level`` of ``value`` (a Tensor, batch dimension first)."""
        t = _new(_NO_DATA, False, BatchedTensor)
        t._phys = value
        t._level = level
        t._diag = None
        return t

    @property
    def _value(self):
        """The physical value (batch dimension first); made on first use for a scaled
        identity batch (Note [Identity batches])."""
        v = self._phys
        if v is None:
            s = self._diag
            v = self._phys = _identity(s.shape[0], s.dtype, s.device) * s
        return v

    # -- the logical view
    @property
    def _carrier(self):
        return self._phys if self._phys is not None else self._diag

    @property
    def shape(self):
        if self._phys is None:
            return tuple(self._diag.shape)
        return tuple(self._phys.shape[1:])

    def requires_grad_(self, requires_grad=True):
        requires_grad = bool(requires_grad)
        if self._grad_fn is not None:
            if not requires_grad:
                raise RuntimeError("you can only change requires_grad flags of leaf variables; "
                                   "use .detach() for a tensor cut from the graph")
            return self
        if requires_grad and not is_differentiable_dtype(self.dtype):
            raise RuntimeError(f"only Tensors of floating point and complex dtype can require "
                               f"gradients; this tensor has dtype {self.dtype}")
        self._requires_grad = requires_grad
        return self

    def detach(self):
        return _wrap(self._value.detach(), self._level)

    def _like(self, fn_name, dtype, device, requires_grad, *extra):
        # made one level down, batched like this value, then seen by the levels inside
        fn = getattr(creation, fn_name)
        level = self._level
        with below(level):
            t = _wrap(fn(self._value, *extra, dtype=dtype, device=device), level)
        if requires_grad:
            return t.requires_grad_()
        return _levels.lift_created(t, level)

    # -- values that would need one batch element
    def numpy(self):
        _no_value("numpy()")

    def __array__(self, dtype=None, copy=None):
        if not self._level.alive:
            _escaped()
        _no_value("conversion to a NumPy array")

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        # NumPy meets a batched tensor when a NumPy value comes first (``array * x``) or a
        # NumPy function is called on one: the Tensor's protocol runs ndgrad's function for
        # it (ndgrad/numpy/protocols.py: every ufunc method, out=, SciPy's ufuncs under any
        # name), batched; before that protocol is installed, the op of the same name
        if not self._level.alive:
            _escaped()
        protocol = getattr(Tensor, "__array_ufunc__", None)
        if protocol is not None:
            return protocol(self, ufunc, method, *inputs, **kwargs)
        fn = PUBLIC.get(ufunc.__name__)
        if method != "__call__" or kwargs or fn is None:
            return NotImplemented
        return fn(*inputs)

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        if not self._level.alive:
            _escaped()
        _no_value("export through DLPack (__dlpack__, np.from_dlpack, ...)")

    def item(self):
        _no_value("item()")

    def tolist(self):
        _no_value("tolist()")

    def __bool__(self):
        _no_value("bool() (an `if` or `while` on a tensor)")

    def __index__(self):
        _no_value("use as a Python index")

    def __repr__(self):
        return (f"BatchedTensor(level={self._level.depth}, batch dimension 0 of "
                f"{self._value!r})")

    def __reduce_ex__(self, protocol):
        _no_value("pickling")

    # -- what the graph and the engine call (core/tensor.py), beyond the wrappers' own
    def _alive(self):
        if not self._level.alive:
            _escaped()
        return self

    def _memory(self):
        # batched values share memory when their physical values do: a view op's output is
        # linked to its input then (Note [Views of batched values]), and so is a view of a
        # grad level's value that wraps batched ones (vmap(func.grad(f))); a scaled identity
        # batch not yet made has no memory
        return self._phys

    def _copy_value(self):
        return apply(_CLONE, self._value)

    def _gradient_for_plain_tensor_message(self, t):
        return ("backward() inside vmap computed a batched gradient for a tensor that is not "
                f"batched (shape {list(t.shape)}); its .grad cannot hold one gradient per batch "
                "element. Use ndgrad.func.grad or ndgrad.autograd.grad inside vmap instead.")


_wrap = BatchedTensor._wrap


# ------------------------------------------------------------------------ the handler
def _slice_param(x, level, b):
    if type(x) is BatchedTensor and x._level is level:
        return x._value[b]
    if isinstance(x, (tuple, list)):
        return type(x)(_slice_param(v, level, b) for v in x)
    if isinstance(x, dict):
        return {k: _slice_param(v, level, b) for k, v in x.items()}
    return x


def _depth_of(x):
    if type(x) is BatchedTensor:
        lv = x._level
        if not lv.alive:
            _escaped()
        return lv.depth
    if isinstance(x, (tuple, list)):
        return max((_depth_of(v) for v in x), default=-1)
    if isinstance(x, dict):
        return max((_depth_of(v) for v in x.values()), default=-1)
    return -1


_WARNED = set()
# Ops that ran through the per-element loop (no batching rule), for the property suite.
_FALLBACK_SEEN = set()


def fallback_ops():
    """Names of the registered ops that have no batching rule (vmap loops over them)."""
    return sorted(name for name, op in REGISTRY.items()
                  if op.batch_rule is None and default_rule(op) is None)


def _warn_fallback(name, why, declared=None):
    """Warn once per op that vmap loops over it; ``declared``: the op's own reason
    (``notes["vmap"]``), for an op that cannot have a rule (no report asked for then)."""
    _FALLBACK_SEEN.add(name)
    if name in _WARNED:
        return
    _WARNED.add(name)
    if declared:
        message = f"vmap: {name} runs once per batch element (a Python loop): {declared}"
    else:
        message = (f"vmap: {name} {why}, so it runs once per batch element (a Python loop), "
                   "which is slow. Please report this so a rule can be added.")
    warnings.warn(message, UserWarning, stacklevel=4)


def _loop(level, op, phys, batched, extra, params):
    """Run ``op`` once per batch element and stack the results (the fallback)."""
    size = level.info.size
    results = []
    for b in range(size):
        args_b = [p[b] if isb else p for p, isb in zip(phys, batched)]
        extra_b = _slice_param(list(extra), level, b)
        params_b = _slice_param(params, level, b)
        results.append(apply(op, *args_b, *extra_b, **params_b))
    if op.nout == 1:
        return apply(_STACK_OP, *results, axis=0)
    return tuple(apply(_STACK_OP, *[r[k] for r in results], axis=0)
                 for k in range(len(results[0])))


# Note [Views of batched values]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A view op's output at a vmap level is linked to the batched input whose physical value it
# views, as dispatch links a plain tensor's views (Note [In-place on views] in
# core/views.py): it shares its base's version counter, and the levels inside the vmap that
# keep data on tensors know it for a view. Without the link, a view of a batched value made
# while nothing in it carried a level's data (``y = zeros_like(x); w = y[:2]; w += 3 * x[:2]``
# inside ``vmap(laplacian(f))``, ``vmap(jet(f))``, ``vmap(jvp(f))`` with an unbatched
# tangent) was no view to them, and the write reached only the view's data: the Laplacian
# was 0, not 36. In-place on a view of a batched value that takes part in a gradient
# computation inside the vmap goes through core's protocol like any view's (its new value
# written up the chain with the view ops' scatter rules; it was refused before). The link
# costs what a plain view's does, about 2 us per view op: in-process A/B of this function
# with and without it, medians of 21 interleaved rounds, a vmap over 64 rows of 8 getitems
# 505 -> 560 us, slices with an in-place change 132 -> 140 us, a two-layer MLP (no views)
# 97 -> 98 us, vmap(laplacian(mlp)) 731 -> 761 us.
def _apply_batched(level, op, args, params):
    nin = len(args) if op.nin == VARIADIC else op.nin
    arrays = args[:nin]
    extra = args[nin:]
    batched = []
    record_it = False
    for a in arrays:
        isb = type(a) is BatchedTensor and a._level is level
        batched.append(isb)
        if isinstance(a, Tensor) and a._requires_grad:
            record_it = True
    batched = tuple(batched)
    record_it = record_it and op.differentiable and STATE.grad_enabled
    with below(level):
        res = _batched_value(level, op, arrays, batched, extra, params)
    outs = (res,) if op.nout == 1 else res
    if op.view:  # (Note [Views of batched values])
        for k, o in enumerate(outs):
            link_view(op, arrays, extra, params, o, k)
    if record_it and outs and is_differentiable_dtype(outs[0].dtype):
        record(op, arrays, outs, extra, params)  # the logical graph (Note [Batched tensors])
    return res


def _batched_value(level, op, arrays, batched, extra, params):
    """The op's result at ``level``: its batching rule run on the physical values."""
    if op.identity_batch is not None:
        i = _identity_input(arrays, level)
        if i >= 0:
            args = _physical(arrays, batched, i)  # (the identity stays unmade)
            args.extend(extra)
            r = op.identity_batch(TENSOR_F, i, arrays[i]._diag, args, batched, params)
            if r is not None:
                how, v = r
                if how == "identity":  # a scaled identity, made dense if ever needed
                    return _identity_result(level, op, arrays, batched, extra, params, v)
                return _wrap(v, level)
    rule = op.batch_rule
    if rule is None:
        rule = default_rule(op)
    phys = _physical(arrays, batched)
    # (the innermost level among the inputs is this one: a parameter's depth is at most its)
    if (extra and _depth_of(extra) == level.depth) or \
            (params and _depth_of(params) == level.depth):
        if op.batch_params and rule is not None:
            out = rule(TENSOR_F, batched, *phys, *extra, _level=level, **params)
        else:
            _warn_fallback(op.qualname, "got a batched tensor as a parameter (e.g. an index)")
            out = _loop(level, op, phys, batched, extra, params)
    elif rule is None:
        _warn_fallback(op.qualname, "has no batching rule", op.notes.get("vmap"))
        out = _loop(level, op, phys, batched, extra, params)
    else:
        out = rule(TENSOR_F, batched, *phys, *extra, **params)
    if op.nout == 1:
        return _wrap(out, level)
    return tuple(map(_wrap, out, repeat(level)))  # (no cell: map, not a generator)


# (helpers, not comprehensions in _batched_value: those would make its locals cells, made on
# every call: Note [No cells on the hot path] in core/engine.py)
def _identity_input(arrays, level):
    """The index of the first input that is an identity batch of ``level`` (-1: none)."""
    for i, a in enumerate(arrays):
        if type(a) is BatchedTensor and a._diag is not None and a._level is level:
            p = a._phys
            if p is not None and p._counter().value:
                a._diag = None  # written through a view since (Note [Identity batches])
                continue
            return i
    return -1


def _identity_result(level, op, arrays, batched, extra, params, scale):
    """The identity batch with ``scale`` an op's identity rule gave; a view op's shares its
    input's memory, as any view's does (Note [Identity batches])."""
    if op.view:
        rule = op.batch_rule or default_rule(op)
        res = _wrap(rule(TENSOR_F, batched, *_physical(arrays, batched), *extra, **params),
                    level)
    else:
        res = _wrap(None, level)
    res._diag = scale
    return res


def _physical(arrays, batched, skip=-1):
    """The physical values of ``arrays`` (None in place of input ``skip``)."""
    phys = []
    for j, (a, b) in enumerate(zip(arrays, batched)):
        phys.append(None if j == skip else a._value if b else a)
    return phys


def _write_batched(target, result):
    """The write of the in-place protocol at a vmap level: one level down, into the
    physical value (whose own level records it)."""
    level = target._level
    with below(level):
        apply_inplace(_INDEX_PUT, target._value, result._value, index=Ellipsis)
    target._diag = None  # (Note [Identity batches]: the new value is not known to be one)


def _apply_inplace_batched(level, op, target, args, params):
    if not (type(target) is BatchedTensor and target._level is level):
        raise RuntimeError(
            f"vmap: the in-place operation {op.name} would write a value that differs per "
            f"batch element into a tensor that is not batched (shape {list(target.shape)}). "
            "Use the out-of-place op, or pass that tensor through vmap (in_dims) so that it "
            "is batched too.")
    # Note [In-place operations] in core/inplace.py, with the physical write (a view's
    # change reaches its base's history there: Note [Views of batched values])
    return inplace(op, target, tuple(args), params, _write_batched)


# Note [Functions under vmap]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A custom Function whose class sets ``generate_vmap_rule = True`` (PyTorch's flag: forward,
# backward and jvp are written with ndgrad operations) runs once on the batched values, at
# this level: its operations are batched like any others, and its ctx is the one ctx.
# Any other Function runs once per batch element, below this level, and the elements'
# ctxs are gathered into the ctx of a ``_PerElement`` Function, whose backward and jvp run
# the Function's own per element on the slices of the batched gradients (tangents). Either
# way the levels outside get one ctx, so ``vmap(grad(f))``, ``vmap(jvp(f))`` and
# ``vmap(jacrev(f))`` of a Function work. When a level outside the vmap (or the plain
# graph: ``.backward()`` through vmap) must record the Function, it runs per element even
# with ``generate_vmap_rule``: below the vmap those levels record one node per element.
# Running per element warns once, naming the Function and why: a Function class can name
# what the user called (ndgrad's SciPy-backed functions are built on custom_vjp, custom_root
# and private Functions) with a static ``vmap_loop(*args) -> (name, why)`` (``_loop_of``).
def _per_element_inputs(level, cls, args, kwargs, needs):
    name, why = _loop_of(cls, args)
    _warn_fallback(name, "has no batching rule", why)
    return [([_slice_param(a, level, b) for a in args], _slice_param(kwargs, level, b), needs)
            for b in range(level.info.size)]


def _per_element_ctx(cls, level, ctxs, needs, args):
    ctx = new_ctx(_PerElement._backward_cls)
    ctx.needs_input_grad = ctxs[0].needs_input_grad if ctxs else needs
    ctx.per_element = (cls, level, ctxs)
    name = _loop_of(cls, args)[0]
    ctx.loop_name = name if name.startswith("ndgrad.") else None  # (one of ndgrad's own)
    return ctx


def _loop_of(cls, args):
    """``(name, why)`` for the warning of a Function vmap runs once per batch element (Note
    [Functions under vmap]): the class's own ``vmap_loop(*args)`` where it has one (the
    public function, and why it loops), else the class and why."""
    describe = getattr(cls, "vmap_loop", None)
    found = describe(*args) if describe is not None else None
    if found is not None:
        return found
    name = f"the custom Function {cls.__name__}"
    if cls.generate_vmap_rule:
        return name, ("a derivative outside this vmap records it, which needs one node per "
                      "element")
    return name, ("its class does not set generate_vmap_rule = True (set it when its forward "
                  "and backward are written with ndgrad operations, which vmap batches)")


def _level_below(level, args, kwargs):
    """Whether the values one level down belong to a level (a grad or dual level outside
    this vmap) or require grad in the plain graph: those must see the Function as one of
    their primitives, so it runs per element below this level, where they record it."""
    leaves, _ = tree_flatten((list(args), kwargs))
    values = [x._value if type(x) is BatchedTensor and x._level is level else x
              for x in leaves]
    if STATE.grad_enabled and any(isinstance(v, Tensor) and v._requires_grad for v in values):
        return True
    with below(level):
        return innermost_level(values) is not None


def _stack_results(results, level):
    """One batched value per position of the elements' results (a tuple, or one value)."""
    if isinstance(results[0], tuple):
        return tuple(_stack_results([r[k] for r in results], level)
                     for k in range(len(results[0])))
    like = next((r for r in results if r is not None), None)
    if not isinstance(like, Tensor):
        return results[0]        # (a non-tensor output, or None: the first element's)
    if any(r is None for r in results):  # (a rule's None for some elements: their zeros)
        results = [TENSOR_F.zeros_like(like) if r is None else r for r in results]
    return _wrap(apply(_STACK_OP, *results, axis=0), level)


class _PerElement(Function):
    """The ctx of a Function that vmap ran once per batch element (Note [Functions under
    vmap]): ``ctx.per_element`` is ``(cls, level, ctxs)``."""

    @staticmethod
    def forward(ctx, *args):
        raise RuntimeError("_PerElement is made by vmap, never applied")

    @staticmethod
    def backward(ctx, *grads):
        return _per_element(ctx, "backward", grads)

    @staticmethod
    def jvp(ctx, *tangents):
        return _per_element(ctx, "jvp", tangents)


def _per_element(ctx, rule, values):
    cls, level, ctxs = ctx.per_element
    caller = getattr(ctx, "_level", None)  # (a grad level's node shares this ctx's fields)
    if any(lv.depth > level.depth and lv is not caller and lv.interpreter is not _VMAP
           for lv in _levels.visible_levels()):
        # a derivative transform inside the vmap besides the caller's records this rule (a
        # second derivative): the elements' ctxs hold values below the vmap, out of its reach
        name = getattr(ctx, "loop_name", None)
        if name is not None:  # (one of ndgrad's functions: no Function for the user to fix)
            raise NotImplementedError(
                f"vmap: a derivative of {name}'s {rule} inside vmap (a second derivative, e.g. "
                f"vmap(hessian(f))): vmap runs {name} once per batch element, which supports "
                "first derivatives only; take the second derivative outside vmap (hessian(f), "
                "or a loop of hessians)")
        raise NotImplementedError(
            f"vmap: a derivative of {cls.__name__}'s {rule} inside vmap (a second derivative, "
            f"e.g. vmap(hessian(f))): vmap ran {cls.__name__} once per batch element, which "
            "supports first derivatives only. Set generate_vmap_rule = True on the Function "
            "(vmap_method='vectorized' for custom_vjp/custom_jvp) if its rules are written "
            "with ndgrad operations, or take the second derivative outside vmap.")
    inner = innermost_level(values)
    if inner is not None and inner.depth > level.depth:
        # values batched by a vmap inside this one (jacfwd's tangents): that vmap's elements
        # first, each holding values of this level
        with below(inner):
            parts = [_per_element(ctx, rule, [_slice_param(v, inner, b) for v in values])
                     for b in range(inner.info.size)]
            return _stack_results(parts, inner)
    results = []
    with below(level):
        for b, ctx_b in enumerate(ctxs):
            values_b = [_slice_param(v, level, b) for v in values]
            ctx_b._fn_in_jvp = rule == "jvp"
            try:
                r = getattr(cls, rule)(ctx_b, *values_b)
            except _levels.HiddenValueError as e:  # (Note [A level's values below it])
                e.in_function(cls, rule, ())
                raise
            finally:
                ctx_b._fn_in_jvp = False
            results.append(r if isinstance(r, tuple) else (r,))
        n = {len(r) for r in results}
        if len(n) != 1:
            raise RuntimeError(f"{cls.__name__}.{rule} returned different numbers of values "
                               "for different batch elements")
        out = _stack_results(results, level)
    return out if rule == "backward" or len(out) != 1 else out[0]


# Note [Identity batches]
# ~~~~~~~~~~~~~~~~~~~~~~~
# jacrev and jacfwd push the rows (columns) of an identity matrix through one batched pass.
# A batched tensor that vmap knows to be a scaled identity (element b is s[b] * e_b, for a
# logical vector of size n and a batch of n: ``_diag`` holds s, unbatched) keeps that
# knowledge through the ops that preserve it (scaling by an unbatched vector or scalar,
# negation, a cast, a same-shape reshape), and a matrix product with it is a scaling of the
# matrix's rows or columns: O(n^2) instead of the O(n^3) dense product. The physical value
# is always there too (dense): every other op simply uses it. This is what makes the
# Jacobian of ``x -> f(A @ x)`` cost about as much as its closed form. The ops that keep an
# identity batch declare how (``Op.defidentity``, next to their other rules).
#
# The knowledge is about memory, so it must follow in-place changes. A write into the batch
# itself drops it (``_write_batched``). A write through a view of it (a view op runs on the
# physical value, which it shares) bumps the physical value's version counter: a batch whose
# physical value was made (its version is 0 then: a fresh product, or the read-only cached
# identity) and has a version since is no identity any more (``_identity_input``; the
# Hessian of ``y = v * 1.0; y[1:].mul_(v[1:])`` kept the diagonal of before the write). An
# identity-keeping view op (a same-shape reshape) gives a batch that shares its input's
# physical memory, as a view must (a write through it changed a copy: ``jacfwd`` lost it).
_IDENTITIES = {}  # (n, dtype, device) -> a read-only identity matrix (the last few used)


def _identity(n, dtype, device):
    """The n x n identity as a read-only tensor, cached: vmap knows these as identity
    batches, and a fresh one per Jacobian would cost more than the rest of a small Jacobian
    (its zeroed memory is paged in each time)."""
    key = (n, str(dtype), str(device))
    t = _IDENTITIES.get(key)
    if t is None:
        B = backend_for_device(device)
        with B.on(device):
            # a plain constant, whatever the mode it is first made in: never lifted to a
            # level, never an inference tensor (one made inside inference_mode() would make
            # every later Jacobian of this size outside it fail to save it for backward)
            t = _new(B.eye(n, dtype=dtype), False)
        t.backend.set_readonly(t._data)
        if len(_IDENTITIES) >= 8:
            _IDENTITIES.pop(next(iter(_IDENTITIES)))
        _IDENTITIES[key] = t
    return t


def _is_identity(t):
    return any(t is ident for ident in _IDENTITIES.values())


class _VmapInterpreter(WrapperInterpreter):
    """vmap's rules at its levels (Note [Levels] in core/levels.py)."""

    name = "vmap"
    transforms_random = True

    def process(self, level, op, args, params):
        return _apply_batched(level, op, args, params)

    def process_inplace(self, level, op, target, args, params):
        return _apply_inplace_batched(level, op, target, args, params)

    # a custom Function at a vmap level: the skeleton is the wrapper levels' (Note [Wrapper
    # levels] in core/wrapper_level.py; Note [Functions under vmap])
    def runs_at_level(self, level, cls, args, kwargs):
        return cls.generate_vmap_rule and not _level_below(level, args, kwargs)

    def function_inputs(self, level, cls, args, kwargs, needs):
        return _per_element_inputs(level, cls, args, kwargs, needs)

    def function_outputs(self, level, outs):
        return _stack_results(outs, level)

    def function_ctx(self, level, cls, args, result, ctxs, needs):
        return _per_element_ctx(cls, level, ctxs, needs, args)

    def random(self, kind, shape, dtype, device, requires_grad):
        """``randn``/``rand`` inside vmap: one draw per batch element of every level whose
        randomness is "different", shared by the elements of a level whose randomness is
        "same" (Note [Batched tensors])."""
        vlevels = [lv for lv in _levels.visible_levels() if lv.interpreter is self]
        for lv in vlevels:
            if lv.info.randomness == "error":
                raise RuntimeError(
                    f"vmap: called a random function ({kind}) inside a vmap with "
                    "randomness='error' (the default). Pass randomness='different' "
                    "(independent values per batch element) or randomness='same' (one value "
                    "for the whole batch) to vmap.")
        different = [lv for lv in vlevels if lv.info.randomness == "different"]
        lead = tuple(lv.info.size for lv in different)
        # the draw as the levels outside the vmaps make it (a compile trace records it:
        # each call draws again), one for every batch element of the "different" levels
        with below(vlevels[0]):
            draw = creation.randn if kind == "randn" else creation.rand
            t = draw(*(lead + tuple(shape)), dtype=dtype, device=device)
        for lv in different:
            t = _wrap(t, lv)  # outermost first: the innermost wrapper is the outermost object
        if requires_grad:
            t.requires_grad_()
        return t


_VMAP = _VmapInterpreter()


# ------------------------------------------------------------------------ the transform
def _normalize_dim(d, ndim, what):
    if not isinstance(d, int) or isinstance(d, bool):
        raise ValueError(f"vmap: {what} must be an int or None, got {d!r}")
    if not -ndim <= d < ndim:
        raise ValueError(f"vmap: {what} is {d}, but the tensor has {ndim} dimension(s) (valid: "
                         f"{-ndim} to {ndim - 1})")
    return d % ndim


def _broadcast_prefix(prefix, tree, what):
    """Per-leaf values of ``prefix``, a pytree prefix of ``tree`` (an int/None applies to a
    whole subtree)."""
    if prefix is None or isinstance(prefix, int):
        leaves, _ = tree_flatten(tree)
        return [prefix] * len(leaves)
    if isinstance(prefix, (tuple, list)):
        if not isinstance(tree, (tuple, list)) or len(prefix) != len(tree):
            n = len(tree) if isinstance(tree, (tuple, list)) else 1
            raise ValueError(
                f"vmap: {what} is a {type(prefix).__name__} of {len(prefix)} entries, but it "
                f"must match the structure of the arguments ({n} entries here); pass an int "
                "or None to use one value for everything")
        out = []
        for p, t in zip(prefix, tree):
            out.extend(_broadcast_prefix(p, t, what))
        return out
    if isinstance(prefix, dict):
        if not isinstance(tree, dict) or set(prefix) != set(tree):
            raise ValueError(f"vmap: {what} is a dict whose keys must match the argument's "
                             f"keys; got {sorted(prefix)} for "
                             f"{sorted(tree) if isinstance(tree, dict) else type(tree).__name__}")
        out = []
        for k in tree:
            out.extend(_broadcast_prefix(prefix[k], tree[k], what))
        return out
    raise ValueError(f"vmap: {what} must be an int, None, or a tuple/list/dict of those; got "
                     f"{type(prefix).__name__}")


def vmap(func, in_dims=0, out_dims=0, randomness="error", *, chunk_size=None):
    """Vectorize ``func`` over a dimension of its inputs.

    ``vmap(func)(xs)`` returns what stacking ``func(x)`` over the slices ``x`` of ``xs``
    would, computed in one vectorized call: each op inside ``func`` runs once, on the whole
    batch, through its batching rule. Composes with every other transform (``grad``,
    ``jvp``, ``vmap`` itself) in any order.

    Parameters
    ----------
    func : callable
        Takes tensors (or pytrees of tuples, lists and dicts of tensors) and returns a tensor
        or a pytree of tensors. Keyword arguments are passed through unbatched.
    in_dims : int, None, or a pytree prefix of the positional arguments
        The batch dimension of each input; None for an input that is not mapped over (it is
        the same for every batch element). Default 0.
    out_dims : int, None, or a pytree prefix of the outputs
        Where the batch dimension goes in each output (default 0). None: the output must not
        depend on the batch (it is returned as is).
    randomness : {"error", "different", "same"}
        What ``ndgrad.randn``/``rand`` do inside ``func``: raise (default), draw independent
        values per batch element, or one value for the whole batch.
    chunk_size : int, optional
        Process at most this many batch elements per call of ``func`` (less memory, more
        Python overhead); the results are concatenated.

    Returns
    -------
    callable
        The vectorized function.

    Raises
    ------
    ValueError
        Bad ``in_dims``/``out_dims`` (not matching the arguments, out of range), inputs whose
        batch sizes differ, no input mapped over, or a bad ``randomness``/``chunk_size``.

    Examples
    --------
    >>> import ndgrad
    >>> from ndgrad.func import vmap
    >>> xs = ndgrad.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    >>> vmap(lambda x: (x * x).sum())(xs)                  # one sum per row
    tensor([ 5., 25., 61.])
    >>> w = ndgrad.tensor([1.0, -1.0])
    >>> vmap(lambda x, w: x @ w, in_dims=(0, None))(xs, w)  # w is shared
    tensor([-1., -1., -1.])
    """
    if randomness not in ("error", "different", "same"):
        raise ValueError(f"vmap: randomness must be 'error', 'different' or 'same', got "
                         f"{randomness!r}")
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size < 1):
        raise ValueError(f"vmap: chunk_size must be None or a positive int, got {chunk_size!r}")
    if not callable(func):
        raise TypeError(f"vmap: expected a function, got {type(func).__name__}")

    @functools.wraps(func)
    def vectorized(*args, **kwargs):
        leaves, spec = tree_flatten(args)
        dims = _broadcast_prefix(in_dims, list(args), "in_dims")
        size = None
        norm = []
        for k, (x, d) in enumerate(zip(leaves, dims)):
            if d is None:
                norm.append(None)
                continue
            if not isinstance(x, Tensor):
                raise ValueError(
                    f"vmap: in_dims is {d} for argument leaf {k}, a {type(x).__name__}; only "
                    "tensors can be mapped over (use None for other arguments)")
            if x.ndim == 0:
                raise ValueError(f"vmap: cannot map over a 0-d tensor (argument leaf {k}); "
                                 "use in_dims=None for it")
            d = _normalize_dim(d, x.ndim, f"in_dims for argument leaf {k}")
            n = x.shape[d]
            if size is None:
                size = n
            elif n != size:
                raise ValueError(
                    f"vmap: the mapped dimensions of the inputs must have the same size; got "
                    f"{size} and {n} (argument leaf {k}, dimension {d})")
            norm.append(d)
        if size is None:
            raise ValueError("vmap: no input is mapped over (every in_dims is None, or no "
                             "tensor was passed); at least one input needs a batch dimension")
        if chunk_size is not None and chunk_size < size:
            return _chunked(leaves, norm, spec, kwargs, size)
        return _run(leaves, norm, spec, kwargs, size)

    def _run(leaves, norm, spec, kwargs, size):
        level = _levels.push(_VMAP, VmapInfo(size, randomness))
        try:
            inner = []
            for x, d in zip(leaves, norm):
                if d is None:
                    inner.append(x)
                else:
                    v = x if d == 0 else apply(_MOVEAXIS, x, source=d, destination=0)
                    bt = _wrap(v, level)
                    if d == 0 and x.ndim == 2 and x.shape[0] == x.shape[1] and _is_identity(x):
                        B = x.backend
                        with B.on(x.device):
                            bt._diag = finish(B.ones(x.shape[0], dtype=x.dtype), False,
                                              lift=False)
                    inner.append(bt)
            out = func(*tree_unflatten(spec, inner), **kwargs)
        finally:
            _levels.pop(level)
        return _unwrap_outputs(out, level, size)

    def _unwrap_outputs(out, level, size):
        oleaves, ospec = tree_flatten(out)
        odims = _broadcast_prefix(out_dims, out, "out_dims")
        res = []
        for k, (o, d) in enumerate(zip(oleaves, odims)):
            if o is None:
                res.append(None)
                continue
            if not isinstance(o, Tensor):
                raise ValueError(
                    f"vmap: the function must return tensors (or pytrees of them); output "
                    f"leaf {k} is a {type(o).__name__}")
            batched = type(o) is BatchedTensor and o._level is level
            if d is None:
                if batched:
                    raise ValueError(
                        f"vmap: out_dims is None for output leaf {k}, but it depends on the "
                        "mapped inputs (it is batched); give it an out_dim")
                res.append(o)
                continue
            if batched:
                v = o._value
            else:  # does not depend on the batch: every element gets the same value
                v = TENSOR_F.broadcast_to(o, (size,) + tuple(o.shape))
            nd = v.ndim
            d = _normalize_dim(d, nd, f"out_dims for output leaf {k}")
            if d != 0:
                v = apply(_MOVEAXIS, v, source=0, destination=d)
            res.append(v)
        return tree_unflatten(ospec, res)

    def _chunked(leaves, norm, spec, kwargs, size):
        parts = []
        for start in range(0, size, chunk_size):
            stop = min(start + chunk_size, size)
            chunk = []
            for x, d in zip(leaves, norm):
                if d is None:
                    chunk.append(x)
                else:
                    idx = (slice(None),) * d + (slice(start, stop),)
                    chunk.append(x[idx])
            parts.append(_run(chunk, norm, spec, kwargs, stop - start))
        flat = [tree_flatten(p)[0] for p in parts]
        ospec = tree_flatten(parts[0])[1]
        odims = _broadcast_prefix(out_dims, parts[0], "out_dims")
        res = []
        for k, d in enumerate(odims):
            pieces = [f[k] for f in flat]
            if pieces[0] is None or d is None:
                res.append(pieces[0])
            else:
                res.append(TENSOR_F.concat(pieces, axis=d))
        return tree_unflatten(ospec, res)

    return vectorized


# ------------------------------------------------------------------------ batched grad
def batched_grad(outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused,
                 materialize_grads):
    """``autograd.grad(..., is_grads_batched=True)``: ONE backward pass, vmapped over the
    first dimension of the grad_outputs."""
    sizes = {g.shape[0] for g in grad_outputs if g is not None and len(g.shape) > 0}
    if any(g is not None and len(g.shape) == 0 for g in grad_outputs) or len(sizes) != 1:
        shapes = [None if g is None else tuple(g.shape) for g in grad_outputs]
        raise RuntimeError("with is_grads_batched=True every grad_output needs the same "
                           f"leading batch dimension; got shapes {shapes}")
    _engine.make_grads(outputs, grad_outputs, is_grads_batched=True)  # validates the shapes
    present = [k for k, g in enumerate(grad_outputs) if g is not None]
    gos = [g if g is None or isinstance(g, Tensor) else _asarray(g) for g in grad_outputs]

    def one(*gs):
        full = [None] * len(grad_outputs)
        for k, g in zip(present, gs):
            full[k] = g
        # one batched pass: retain_graph and allow_unused mean what they say for a single one
        return _engine.grad(outputs, inputs, full, retain_graph=retain_graph,
                            create_graph=create_graph, allow_unused=allow_unused,
                            materialize_grads=materialize_grads)

    return tuple(vmap(one)(*[gos[k] for k in present]))


@functools.wraps(_engine.grad)
def autograd_grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         only_inputs=True, allow_unused=None, is_grads_batched=False, materialize_grads=False):
    if not is_grads_batched:
        return _engine.grad(outputs, inputs, grad_outputs, retain_graph, create_graph,
                            only_inputs, allow_unused, False, materialize_grads)
    # one batched backward pass, through vmap (core knows no transform)
    if materialize_grads and allow_unused is False:
        raise ValueError("Expected allow_unused to be True or not passed when "
                         "materialize_grads=True, but got: allow_unused=False.")
    if allow_unused is None:
        allow_unused = materialize_grads
    outputs = _engine._as_tuple(outputs)
    inputs = _engine.check_inputs(inputs)
    grad_outputs = _engine._roots_and_grads("grad", "outputs", outputs, grad_outputs)
    if retain_graph is None:
        retain_graph = create_graph
    return batched_grad(outputs, inputs, grad_outputs, retain_graph, create_graph,
                        allow_unused, materialize_grads)


autograd_grad.__module__ = "ndgrad.autograd"
