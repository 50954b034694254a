"""The reverse-mode transform level behind ``func.grad``, ``vjp``, ``jacrev`` (PyTorch's
GradTransform, functorch's grad interpreter).

Note [Grad levels]
~~~~~~~~~~~~~~~~~~
``func.grad(f)(x)`` enters a level ``G`` and calls ``f`` on a :class:`GradTensor`: a tensor of
level ``G`` that wraps ``x`` (``_value``) and has its own autograd state, a leaf that
requires grad. An operation with a value of ``G`` among its inputs goes to ``G``'s
interpreter (Note [Levels] in core/levels.py), which

1. runs the op one level down, on the wrapped values (every other input is a constant at
   ``G``: a captured tensor, a value of an outer level), inside ``levels.below(G)`` and with
   the grad mode of the levels outside (``prev_grad``: an enclosing ``no_grad`` still stops
   their recording, Note [Grad modes of a level]);
2. wraps the results as values of ``G``;
3. records the op on them with ``graph.record``, the same node an op on plain tensors gets,
   when a value of ``G`` that requires grad took part: the graph of level ``G``.

The gradient is one backward pass over that graph (core/engine.py). Its nodes saved values of
``G``; the pass reads them one level down (``GradTensor._lower_for``): the formulas compute
on the wrapped values, so what they compute is recorded and transformed by the levels
outside, exactly as the values were. Nothing decides a ``create_graph`` by walking the
graph: ``grad(grad(f))``, ``jacrev(grad(f))``, ``vmap(grad(f))`` and ``grad`` through a
``vjp_fn`` made outside it all follow from each level recording its own values. A value of
``G`` used after ``G`` exited (a ``vjp_fn`` called later) is its wrapped value.

Writing in place into a tensor captured from outside ``f`` with a value of ``G`` is refused:
the captured tensor cannot become a value of ``G``, and the level's dependence would be lost.
A tensor made inside ``f`` (``zeros``, ``tensor``, ...) is a value of ``G`` from the start
(``Interpreter.lift``), so writing into it is fine.

Views of ``G``'s values are linked and kept current at ``G`` as plain views are (Note
[In-place on views] in core/views.py): a view taken before an in-place change of its base is
stale, and its history is regenerated where it is next read, by applying its view op to the
base again, at ``G``. That is only possible while ``G`` is active: after it exited, the op
would run on the wrapped values and give the view no history at ``G`` (a gradient of zero,
silently: ``grad`` of ``y0 = y[0]; y.sin_(); return y0`` was zero). The outputs of ``f``
are the only values whose histories at ``G`` are read after ``G`` exits (they are the roots
of the level's backward passes, also of a ``vjp_fn`` called later), so the transforms settle
them before leaving (:func:`settle`, then :func:`leave`). Inside a ``vmap`` the values ``G``
wraps are batched; they are linked as views when their physical values share memory
(``BatchedTensor._shares_memory``), so ``vmap(grad(f))`` keeps its views current too.

Note [Grad modes of a level]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~
Inside ``f`` grad mode is on (and inference mode off), whatever it was outside, so ``G``
records; a ``no_grad`` inside ``f`` stops it. The levels below see the mode they had when
``G`` was entered (and an inner ``no_grad``): ``grad`` under an outer ``no_grad`` or
``inference_mode`` computes its result without recording it outside, as ``torch.func``.
"""

from __future__ import annotations

from itertools import repeat

from ..core import creation
from ..core import levels as _levels
from ..core.backend import DIFFERENTIABLE_DTYPES as _DIFF_DTYPES
from ..core.backend import is_differentiable_dtype
from ..core.dispatch import VARIADIC, apply
from ..core.views import check_view_history, link_view
from ..core.inplace import apply_inplace, inplace
from ..core.function import finish_node, new_ctx, wire
from ..core.grad_mode import GRAD_DISABLED_THREADS as _GRAD_OFF
from ..core.grad_mode import INFERENCE_BLOCKS as _INFERENCE
from ..core.grad_mode import STATE
from ..core.graph import record
from ..core.ops import REGISTRY
from ..core.tensor import Tensor, _new
from ..core.wrapper_level import WrapperInterpreter, WrapperTensor
from .pytree import tree_flatten

__all__ = ["GradTensor", "enter", "leave", "settle", "track", "lower", "lower_tree"]

_INDEX_PUT = REGISTRY["index_put"]
_CLONE = REGISTRY["clone"]
below = _levels.below
_hide = _levels.hide
_unhide = _levels.unhide


class _GradInfo:
    """What a grad level remembers: the modes outside it (Note [Grad modes of a level])."""

    __slots__ = ("prev_grad", "prev_inference", "plain", "extra_leaves")

    def __init__(self, prev_grad, prev_inference):
        self.prev_grad = prev_grad
        self.prev_inference = prev_inference
        self.plain = prev_grad and not prev_inference  # below it, the modes are as inside
        # a leaf that requires grad was made inside the function (not tracked): the level's
        # passes must find the nodes they need (Note [Passes that need every node])
        self.extra_leaves = False


class _Outside:
    """Context manager: the grad modes of the levels outside ``level`` (calling one level
    down, Note [Grad modes of a level])."""

    __slots__ = ("info", "prev")

    def __init__(self, level):
        self.info = level.info

    def __enter__(self):
        self.prev = (STATE.grad_enabled, STATE.inference)
        STATE.grad_enabled = self.prev[0] and self.info.prev_grad
        STATE.inference = self.info.prev_inference
        return self

    def __exit__(self, *exc):
        STATE.grad_enabled, STATE.inference = self.prev
        return False


class GradTensor(WrapperTensor):
    """A value of a ``func.grad``/``vjp`` level: the value one level down (``_value``) with
    the level's own autograd state (Note [Grad levels]). Users meet them inside the
    transformed function; they behave as the value they wrap. Metadata and what the graph
    asks of a value are the wrapper levels' (Note [Wrapper levels] in core/wrapper_level.py).
    """

    __slots__ = ()

    @staticmethod
    def _wrap(value, level):
        t = _new(None, False, GradTensor)
        t._value = value
        t._level = level
        return t

    @property
    def _batched(self):
        return self._value._batched

    def requires_grad_(self, requires_grad=True):
        super().requires_grad_(requires_grad)
        if self._requires_grad and self._grad_fn is None:
            self._level.info.extra_leaves = True  # (Note [Passes that need every node])
        return self

    def numpy(self):
        if self._requires_grad:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use "
                               "tensor.detach().numpy() instead.")
        return self._value.detach().numpy()

    def __array__(self, dtype=None, copy=None):
        if self._requires_grad:
            raise RuntimeError("Can't convert a Tensor that requires grad to a NumPy array. "
                               "Use np.asarray(tensor.detach()) instead.")
        return self._value.detach().__array__(dtype, copy)

    def item(self):
        return self._value.item()

    def tolist(self):
        return self._value.tolist()

    def detach(self):
        """The value without this level's history (its history at the levels outside is
        kept, as functorch's ``detach`` at a level)."""
        return _wrap(self._value, self._level)

    def __repr__(self):
        inner = repr(self._value)
        return inner[:-1] + (", requires_grad=True)" if self._requires_grad and
                             self._grad_fn is None else ")")

    def __reduce_ex__(self, protocol):
        raise RuntimeError("can't pickle a value of ndgrad.func.grad/vjp (a tensor inside the "
                           "transformed function); return it from the function first")

    def _like(self, fn_name, dtype, device, requires_grad, *extra):
        # made one level down, then a constant of this level and of the ones inside it
        level = self._level
        with below(level):
            t = getattr(creation, fn_name)(self._value, *extra, dtype=dtype, device=device,
                                           requires_grad=requires_grad)
        return t if requires_grad else _levels.lift_created(_wrap(t, level), level)

    # -- what the graph and the engine call (core/tensor.py), beyond the wrappers' own
    def _lower_for(self, level):
        return self._value if self._level is level else self

    def _autograd_level(self):
        return self._level

    def _alive(self):
        return self if self._level.alive else self._value._alive()

    def _copy_value(self):
        level = self._level
        with below(level), _Outside(level):
            return apply(_CLONE, self._value)


_wrap = GradTensor._wrap


def _own(a, level):
    return type(a) is GradTensor and a._level is level


def _lower_value(x, level, raw=False):
    """``x`` one level down: level values unwrapped, in containers too. With ``raw``, for an
    op's parameters (an index), a plain Tensor that results becomes its array, which stays
    valid after the level exits (a node keeps its parameters)."""
    if type(x) is GradTensor:
        if x._level is not level:
            return x
        x = x._value
        # (a tensor carrying a data level's value stays a tensor: a compile trace's index
        # made its array would be a constant of the program, its value at the trace)
        return x._data if raw and type(x) is Tensor and not (
            x._meta is not None and x._meta.level_data) else x
    # (map, not a comprehension: that would make level and raw cells, made on every call:
    # Note [No cells on the hot path] in core/engine.py)
    if type(x) in (tuple, list):
        return type(x)(map(_lower_value, x, repeat(level), repeat(raw)))
    if type(x) is dict:
        return dict(zip(x, map(_lower_value, x.values(), repeat(level), repeat(raw))))
    return x


def _write(target, result):
    """The write of the in-place protocol at a grad level: one level down, where the value
    is (its levels record it)."""
    level = target._level
    with below(level), _Outside(level):
        apply_inplace(_INDEX_PUT, target._value, result._value, index=Ellipsis)


def _captured(op, target, level):
    raise RuntimeError(
        f"{op.name}: an in-place operation writes a value that depends on the input of a "
        f"function being transformed (ndgrad.func.grad, vjp, jacrev, ...) into a tensor "
        f"captured from outside that function (shape {list(target.shape)}, dtype "
        f"{target.dtype}). The captured tensor cannot carry the transform's dependence, so the "
        "result would be silently wrong. Pass that tensor to the function as an input, or use "
        "an out-of-place operation and return the result.")


class _GradInterpreter(WrapperInterpreter):
    """The rules of a grad level (Note [Grad levels])."""

    name = "grad"

    def process(self, level, op, args, params):
        nin = len(args) if op.nin == VARIADIC else op.nin
        arrays = args[:nin]
        extra = args[nin:]
        inner = []
        needs = []
        for a in arrays:
            if type(a) is GradTensor and a._level is level:
                inner.append(a._value)
                needs.append(a._requires_grad)
            else:
                inner.append(a)
                needs.append(False)
        if extra:
            extra_in = _lower_value(extra, level, True)
        else:
            extra_in = extra
        params_in = _lower_value(params, level, True) if params else params
        # one level down, with the grad modes outside the level (`below` and `_Outside`,
        # written out: this is the level's hot path)
        hid = _hide(level)
        if level.info.plain and not _GRAD_OFF[0] and not _INFERENCE[0]:
            grad_on = True  # (no thread has a mode set: nothing to switch)
            try:
                out = apply(op, *inner, *extra_in, **params_in)
            finally:
                _unhide(hid)
        else:
            grad_on, inference = STATE.grad_enabled, STATE.inference
            info = level.info
            STATE.grad_enabled = grad_on and info.prev_grad
            STATE.inference = info.prev_inference
            try:
                out = apply(op, *inner, *extra_in, **params_in)
            finally:
                STATE.grad_enabled, STATE.inference = grad_on, inference
                _unhide(hid)
        if op.nout == 1:
            res = _wrap(out, level)
            outs = (res,)
            first = out
        else:
            res = outs = tuple(map(_wrap, out, repeat(level)))  # (no cell: map, not a generator)
            first = out[0] if out else None
        if grad_on and op.differentiable and True in needs and first is not None and \
                (first._data.dtype in _DIFF_DTYPES if type(first) is Tensor else
                 is_differentiable_dtype(first.dtype)):
            record(op, arrays, outs, extra_in, params_in, tuple(needs))
        if op.view:
            for k, t in enumerate(outs):
                link_view(op, arrays, extra, params, t, k)
        return res

    def process_inplace(self, level, op, target, args, params):
        if not _own(target, level):
            _captured(op, target, level)
        return inplace(op, target, tuple(args), params, _write)

    def lift(self, level, t):
        """A tensor made inside the transformed function is a value of the level (a
        constant of it), so the function may write the level's values into it."""
        return _wrap(t, level)

    # a custom Function at a grad level: the skeleton is the wrapper levels' (Note [Wrapper
    # levels] in core/wrapper_level.py); one run below, the level records the Function
    def function_mode(self, level):
        return _Outside(level)

    def function_inputs(self, level, cls, args, kwargs, needs):
        own = tuple(_own(a, level) and a._requires_grad for a in args)
        combined = own if needs is None else tuple(a or b for a, b in zip(own, needs))
        return [([_lower_value(a, level) for a in args], _lower_value(kwargs, level),
                 combined)]

    def function_outputs(self, level, outs):
        out = outs[0]
        if not isinstance(out, tuple):
            return _wrap(out, level) if isinstance(out, Tensor) else out
        return tuple(_wrap(o, level) if isinstance(o, Tensor) else o for o in out)

    def function_ctx(self, level, cls, args, result, ctxs, needs):
        own = tuple(_own(a, level) and a._requires_grad for a in args)
        if not (STATE.grad_enabled and True in own):
            return ctxs[0]
        wrapped = result if isinstance(result, tuple) else (result,)
        return _function_node(ctxs[0], level, args, wrapped, own)


_GRAD = _GradInterpreter()


# ------------------------------------------------------------------------ custom Functions
# A custom Function at a grad level is a primitive of the level (Note [Functions under
# transforms] in core/function.py): it runs one level down, and the level records a node of
# the Function's own class whose ctx attributes are the ctx's below (one shared __dict__)
# and whose saved_tensors are the level's values: the level's inputs and outputs for the
# tensors saved from them, so that a backward recorded at the level (create_graph inside f)
# differentiates through them; in the level's own pass, the values one level down.
_NODE_CLASSES = {}


def _function_node(ctx, level, args, outs, needs):
    cls = ctx._forward_cls._backward_cls  # (ctx may be a level's node itself)
    node_cls = _NODE_CLASSES.get(cls)
    if node_cls is None:
        node_cls = _NODE_CLASSES[cls] = type(cls.__name__, (_LevelFunctionNode, cls), {
            "__slots__": ("_below", "_level", "_args", "_lower", "_outs"),
            "__module__": cls.__module__,
            "__qualname__": cls.__qualname__})
    node = new_ctx(node_cls)
    node.__dict__ = ctx.__dict__
    node._below, node._level, node._args, node._lower = ctx, level, tuple(args), False
    node._outs = tuple(outs)
    node._fn_materialize = ctx._fn_materialize
    node.needs_input_grad = needs
    wire(node, args, needs)
    finish_node(node, outs)
    for k, t in enumerate(outs):
        if isinstance(t, Tensor) and is_differentiable_dtype(t.dtype):
            t._grad_fn = node
            t._output_nr = k
            t._requires_grad = True
    return node


class _LevelFunctionNode:
    """The behaviour of a Function's node at a grad level (mixed into the Function's node
    class, before it; the class adds the slots ``_below``, ``_level``, ``_args``, ``_lower``,
    ``_outs``)."""

    __slots__ = ()

    @property
    def saved_tensors(self):
        below = self._below
        if self._fn_freed or self._fn_in_jvp or self._lower:
            if self._fn_freed:
                return super().saved_tensors  # (raises the freed-graph error)
            below._fn_in_jvp = self._fn_in_jvp
            try:
                saved = below.saved_tensors  # values one level down
            finally:
                below._fn_in_jvp = False
            if self._fn_in_jvp and not self._lower:
                # the jvp of a dual level inside this one (grad of a jvp): the Function's
                # inputs and outputs it saved are this level's values, so the tangent's
                # computation is recorded here and differentiable (the gradient was zero)
                saved = tuple(self._level_value(v) for v in saved)
            return saved
        out = []
        for s, kind in zip(below.saved_tensors, self.saved_kinds()):
            if kind is not None and kind[0] == "in":
                s = self._args[kind[1]]
            elif kind is not None and kind[0] == "out" and s is not None:
                s = _wrap(s, self._level)
                s._grad_fn = self
                s._output_nr = kind[1]
                s._requires_grad = True
            out.append(s)
        return tuple(out)

    def _level_value(self, v):
        """``v``, a value one level down, as this level's input or output it is the value
        of."""
        for a in self._args + self._outs:
            if type(a) is GradTensor and a._level is self._level and (
                    a._value is v or (type(v) is Tensor and type(a._value) is Tensor and
                                      a._value._data is v._data)):
                return a  # (an output: the forward's tensor, or one around its array)
        return v

    def saved_kinds(self):
        return self._below.saved_kinds()

    def backward(self, pass_, grads, skip=None):
        self._lower = pass_.strip is self._level
        return super().backward(pass_, grads, skip)

    def release(self):
        super().release()
        self._args = None
        self._outs = None
        if self._below.seq < 0:  # a ctx no graph refers to but this node
            self._below.release()


# ------------------------------------------------------------------------ the transforms' API
def enter():
    """Enter a new grad level (Note [Grad modes of a level]); return it."""
    level = _levels.push(_GRAD, _GradInfo(STATE.grad_enabled, STATE.inference))
    STATE.grad_enabled = True
    STATE.inference = False
    return level


def settle(tree, level):
    """Bring the histories of the level's values in ``tree`` (the function's outputs) up to
    date while ``level`` is active: a view whose base changed in place since it was taken
    is regenerated now, at the level (Note [Grad levels])."""
    leaves, _ = tree_flatten(tree)
    for t in leaves:
        if type(t) is GradTensor and t._level is level and t._meta is not None:
            check_view_history(t)


def leave(level):
    """Exit ``level`` and restore the modes outside it."""
    try:
        _levels.pop(level)
    finally:  # (also when levels entered inside it were left active: pop exits them too)
        STATE.grad_enabled = level.info.prev_grad
        STATE.inference = level.info.prev_inference


def track(x, level):
    """``x`` as a value of ``level`` that requires grad (a leaf of the level's graph)."""
    t = _wrap(x, level)
    t._requires_grad = True
    return t


def lower(x, level):
    """A result of the transformed function as the caller sees it: one level down."""
    return x._value if type(x) is GradTensor and x._level is level else x


def lower_tree(tree, level):
    return _lower_value(tree, level)
