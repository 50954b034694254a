"""User-defined differentiable functions: :class:`Function`, its ``ctx``, ``once_differentiable``.

A subclass of :class:`Function` gives ``forward`` and ``backward`` (static methods) and is
called through ``.apply(...)``, as ``torch.autograd.Function``. Each subclass ``MyFn`` gets a
Node class ``MyFnBackward`` (a :class:`~ndgrad.core.graph.Node`): one instance of it is the
``ctx`` that ``forward`` receives and, when the call is recorded, the ``grad_fn`` of the
outputs. The engine runs it like any other Node (always through its general path: a
FunctionNode is not an OpNode), so hooks, ``retain_graph``, anomaly mode and ``create_graph``
work for custom functions exactly as for built-in ops. Under a transform level the Function
is processed by the level's interpreter like a primitive (Note [Functions under
transforms]).

Note [Saved tensors of a Function]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
``ctx.save_for_backward(*tensors)`` only remembers its arguments; they are saved once
``forward`` (and ``setup_context``) returned and the outputs are wired, as the graph's
:class:`~ndgrad.core.saved.SavedValue` objects (Note [Saved tensors and versions] in
saved.py), with the version each tensor has then, so a tensor marked dirty is saved at its
bumped version, as in PyTorch. An input or an intermediate is kept as the Tensor itself. An
*output* is kept as a :class:`~ndgrad.core.saved.SavedOutput`, never as the output Tensor
(whose ``grad_fn`` is this Node: a reference cycle); ``ctx.saved_tensors`` rebuilds a Tensor
with this Node as its ``grad_fn``, so that differentiating ``backward`` again
(``create_graph=True``) goes back through the Function, as it must. ``release()`` (after a
backward without ``retain_graph``) drops them; reading ``ctx.saved_tensors`` afterwards raises
the "backward through the graph a second time" error.

Note [What a Function's backward may return]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
One value per positional input of ``forward`` (trailing extra Nones are dropped, as in
PyTorch), a Tensor or None. A non-None value for an input that is not a Tensor is an error;
for a Tensor input that does not require grad it is ignored (PyTorch's contract: "you can
just pass None" there, so code that always returns every gradient keeps working). The graph's
one gradient check (``graph.fit_gradient``) takes it from there: a gradient whose shape
broadcasts to the input's is summed back to it; a gradient of another floating dtype is
cast; any other shape, an integer or bool gradient, a complex gradient for a real input or a
gradient on another device is an error naming the Function and the input index.

Note [Functions under transforms]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
Under a transform level, ``Function.apply`` goes to the level's interpreter
(``process_function``), which runs the Function one level down (:func:`apply_function`) and
does its own part: a dual level calls ``jvp``, vmap runs it once per batch element, a
``func.grad`` level records a node of the Function's class at its level that shares the
ctx's attributes and shows the level's values as ``saved_tensors`` (functional/grad_level.py,
with :func:`new_ctx`, :func:`wire` and :func:`finish_node`). The
forward runs once, at the bottom, on plain tensors; ``needs_input_grad`` there says which
inputs any level needs a gradient for.

A Function none of whose inputs is a visible level's value is a constant of those levels,
and its forward runs below every level that would take a tensor made there as a value of
its own (``Interpreter.lift``: a ``func.grad`` level's constants), as the forward of a
Function on a level's values does: its outputs are plain tensors, recorded (or not) at the
bottom. Otherwise an output made inside ``forward`` (``ndgrad.tensor(scipy_result)``) would
be a value of the level carrying the bottom's node: the level's graph would reach a node
outside it, and the level's backward pass, which runs every node it reaches (Note [Passes
that need every node] in core/engine.py), would run the Function's backward inside its own
(a ``custom_jvp`` whose rule calls the function again recursed without end). Levels that do
not lift (vmap, dual levels) stay visible: a random draw in the forward is one per batch
element, as in PyTorch.

A Function receives the tensors it uses through its inputs (torch.func's rule): a value of
a hidden level that ``forward`` or ``setup_context`` reads from a closure, a global or an
attribute is an error naming the Function and saying to pass it to ``apply`` (Note [A
level's values below it] in core/levels.py); the forward-mode levels, whose values are
plain tensors, are shown again in a refusing state while they run (Note [Data levels below
a Function] in core/refusing.py).
"""

from __future__ import annotations

import inspect
import warnings

from .backend import is_differentiable_dtype
from .inplace import check_inplace, note_where, rebase
from .grad_mode import PROFILER, STATE
from .graph import Node, edge_to, fit_gradient, record_node, save_output, save_value
from .saved import FREED_MSG, SAVED_TYPES, SavedOutput, raise_inference_save
from .levels import STACK, VISIBLE, HiddenValueError, Interpreter, below, visible_levels
from .refusing import refuse_hidden, refuse_returned, restore
from .tensor import Tensor, _new, _wrap_raw, innermost_level, is_live

__all__ = ["Function", "FunctionCtx", "BackwardCFunction", "apply_function", "new_ctx", "wire",
           "finish_node"]

_P = inspect.Parameter
_POSITIONAL = (_P.POSITIONAL_ONLY, _P.POSITIONAL_OR_KEYWORD)


def _tensors(who, values, none=False, hint=""):
    for i, t in enumerate(values):
        if not (isinstance(t, Tensor) or (none and t is None)):
            raise TypeError(f"{who} can only take tensors{' (or None)' if none else ''}, but "
                            f"argument {i} is of type {type(t).__name__}{hint}")
    return values


class FunctionCtx:
    """The methods ``ctx`` offers inside ``forward`` / ``setup_context`` and ``backward``.

    ``ctx`` is the Function's backward Node itself (``y.grad_fn``); any other attribute may be
    set on it to pass values from ``forward`` to ``backward``.
    """

    __slots__ = ()

    def save_for_backward(self, *tensors):
        """Save tensors (or None) for ``backward``; read them back with ``ctx.saved_tensors``.

        Use this (not ``ctx.x = x``) for inputs and outputs: saved tensors are checked for
        in-place modification before ``backward`` reads them, and freed after a backward
        without ``retain_graph``.
        """
        self._fn_to_save = _tensors("save_for_backward", tensors, none=True,
                                    hint="; it saves tensors: store other values as ctx "
                                         "attributes, e.g. `ctx.k = k`")

    def save_for_forward(self, *tensors):
        """Save tensors (or None) for the forward-mode rule ``jvp``, which reads them back
        with ``ctx.saved_tensors`` (see :mod:`ndgrad.forward_ad`)."""
        self._fn_saved_for_forward = _tensors("save_for_forward", tensors, none=True)

    def mark_dirty(self, *tensors):
        """Declare inputs that ``forward`` modified in place.

        Such an input must be returned as an output; it keeps its identity, its version is
        bumped and its history continues from this Function.
        """
        self._fn_dirty = _tensors("mark_dirty", tensors)

    def mark_non_differentiable(self, *tensors):
        """Declare outputs that are not differentiable (indices, masks, ...).

        They do not require grad; ``backward`` still receives a gradient argument for each
        (zeros, or None with ``set_materialize_grads(False)``).
        """
        self._fn_non_diff = _tensors("mark_non_differentiable", tensors)

    def set_materialize_grads(self, value):
        """With False, ``backward`` receives None (not zeros) for outputs without a gradient."""
        self._fn_materialize = bool(value)


class BackwardCFunction(FunctionCtx, Node):
    """Base of the Node classes made for each :class:`Function` subclass (``MyFnBackward``).

    An instance is both the ``ctx`` of one call and, when the call is recorded, the
    ``grad_fn`` of its outputs. Subclasses have a ``__dict__``: user attributes live there.
    A transform level's node of the same Function (:func:`level_node`) shares that
    ``__dict__``.
    """

    __slots__ = ("needs_input_grad", "_fn_to_save", "_fn_saved", "_fn_saved_for_forward",
                 "_fn_dirty", "_fn_non_diff", "_fn_materialize", "_fn_freed", "_fn_slot",
                 "_fn_types", "_fn_outs", "_fn_in_jvp")

    _forward_cls = None
    materializes = False  # backward materializes (or not) by itself: set_materialize_grads

    def name(self):
        return type(self).__name__

    @property
    def materialize_grads(self):
        return self._fn_materialize

    @property
    def saved_tensors(self):
        """The tensors given to ``save_for_backward``, version-checked
        (Note [Saved tensors of a Function])."""
        if self._fn_freed:
            raise RuntimeError(FREED_MSG)
        if self._fn_in_jvp:  # inside jvp: what save_for_forward saved (as PyTorch)
            return tuple(self._fn_saved_for_forward)
        saved = self._fn_saved
        if saved is None:  # inside forward / setup_context, or nothing saved
            return tuple(self._fn_to_save)
        out = []
        for k, (entry, which, _) in enumerate(saved):
            if entry is None:
                out.append(None)
            elif type(entry) in SAVED_TYPES:
                out.append(entry.unpack(self, f"saved tensor {k} ({which})"))
            else:  # an output: rebuilt around its content, with this node as its grad_fn
                entry.check(self, f"saved tensor {k} ({which})")
                out.append(entry.rebuild(self))
        return tuple(out)

    def _items_saved(self):
        """``(name, value)`` for each tensor saved by ``save_for_backward`` (``saved_0``,
        ``saved_1``, ...), without a version check (see ``graph.OpNode._items_saved``)."""
        return [(f"saved_{k}", e.value if type(e) in SAVED_TYPES else
                 e.content if type(e) is SavedOutput else e.packed)
                for k, (e, _, _) in enumerate(self._fn_saved or ()) if e is not None]

    def saved_kinds(self):
        """What each saved tensor is: ("in", i), ("out", k) or ("mid", None)."""
        return [None if e is None else kind for e, _, kind in (self._fn_saved or ())]

    def release(self):
        """Free the saved tensors (the engine calls this after a backward without
        ``retain_graph``)."""
        self._fn_saved = None
        self._fn_to_save = ()
        self._fn_freed = True

    def backward(self, pass_, grads, skip=None):
        cls = self._forward_cls
        outs = self._fn_outs
        materialize = self._fn_materialize
        strip = pass_.strip
        args = []
        for k, g in enumerate(grads):
            info = outs[k]
            if info is None:  # a non-tensor output has no gradient
                args.append(None)
            elif g is None:
                if materialize:
                    shape, dtype, B = info
                    args.append(_new(B.zeros(shape, dtype=dtype), False))
                else:
                    args.append(None)
            elif isinstance(g, Tensor):
                args.append(g._lower_for(strip) if type(g) is not Tensor else g)
            else:
                args.append(_wrap_raw(g))  # (a rule may have made a NumPy scalar)
        result = _user_backward(cls)(self, *args)
        return self._check_grads(result, pass_)

    def _check_grads(self, result, pass_):
        """Note [What a Function's backward may return]."""
        if not isinstance(result, tuple):
            result = tuple(result) if isinstance(result, list) else (result,)
        slots = self._fn_slot
        n = len(slots)
        if len(result) > n and all(r is None for r in result[n:]):
            result = result[:n]
        if len(result) != n:
            raise RuntimeError(f"function {self.name()} returned an incorrect number of "
                               f"gradients (expected {n}, got {len(result)})")
        edges = self.edges
        grads = [None] * len(edges)
        for i, r in enumerate(result):
            if r is None:
                continue
            slot = slots[i]
            if slot < 0:
                raise RuntimeError(
                    f"function {self.name()} returned a gradient different than None at index "
                    f"{i}, but the corresponding forward input is not a Tensor (it is a "
                    f"{self._fn_types[i].__name__}); return None for it")
            e = edges[slot]
            if e is None:
                if not isinstance(r, Tensor):
                    fit_gradient(r, (), None, self, i, checked=True)  # (raises)
                continue  # the input does not require grad: ignored, as in PyTorch
            g = fit_gradient(r, e[2], e[3], self, i, checked=True, array_type=self._fn_types[i])
            if type(g) is Tensor and not is_live(g, pass_.grad_on):
                g = g._data
            grads[slot] = g
        return grads


def _user_backward(cls):
    backward_fn = cls.backward
    vjp_fn = cls.vjp
    base = Function.backward
    if backward_fn is not base and vjp_fn is not base:
        if backward_fn is not vjp_fn:
            raise RuntimeError(f"{cls.__name__} implements both 'backward' and 'vjp'; implement "
                               "only one of them (they are the same thing)")
        return backward_fn
    return vjp_fn if vjp_fn is not base else backward_fn


class Function:
    r"""Base class of user-defined differentiable functions (``torch.autograd.Function``).

    Subclass it, write ``forward`` and ``backward`` as static methods, and call the
    subclass through ``MyFn.apply(*args)`` (never ``forward`` directly):

    - ``forward(ctx, *args, **kwargs)`` computes the outputs (one Tensor or a tuple; any
      mix of tensors and other values in, and out). It runs with grad mode off. It may call
      ``ctx.save_for_backward(*tensors)``, ``ctx.mark_dirty(*inputs_modified_in_place)``,
      ``ctx.mark_non_differentiable(*outputs)``, ``ctx.set_materialize_grads(False)`` and set
      any attribute on ``ctx``; ``ctx.needs_input_grad`` tells which inputs need a gradient.
    - ``backward(ctx, *grad_outputs)`` gets one gradient per output (Tensors; None for
      non-tensor outputs) and returns one gradient per positional input of ``forward`` (None
      for inputs that are not tensors or need none). Written with ndgrad operations it is
      itself differentiable: higher-order derivatives go through the Function.

    Alternatively ``forward(*args)`` takes no ``ctx`` and a static
    ``setup_context(ctx, inputs, output)`` fills ``ctx`` afterwards.

    Under ``vmap`` a Function runs once per batch element, unless the class sets
    ``generate_vmap_rule = True`` (its rules are written with ndgrad operations, which vmap
    batches): then it runs once on the batch (Note [Functions under vmap] in
    functional/vmap.py).

    Examples
    --------
    >>> import ndgrad
    >>> class Exp(ndgrad.autograd.Function):
    ...     @staticmethod
    ...     def forward(ctx, x):
    ...         y = ndgrad.exp(x)
    ...         ctx.save_for_backward(y)
    ...         return y
    ...
    ...     @staticmethod
    ...     def backward(ctx, grad):
    ...         (y,) = ctx.saved_tensors
    ...         return grad * y
    >>> x = ndgrad.tensor([0.0, 1.0], requires_grad=True)
    >>> y = Exp.apply(x)
    >>> y
    tensor([1.        , 2.71828183], grad_fn=<ExpBackward>)
    >>> y.sum().backward()
    >>> x.grad
    tensor([1.        , 2.71828183])
    """

    _backward_cls = BackwardCFunction
    generate_vmap_rule = False

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        name = cls.__name__ + "Backward"
        cls._backward_cls = type(name, (BackwardCFunction,), {
            "_forward_cls": cls, "__module__": cls.__module__,
            "__qualname__": cls.__qualname__ + "Backward",
        })

    def __call__(self, *args, **kwargs):
        raise RuntimeError(
            f"{type(self).__name__} is a Function: call it through "
            f"{type(self).__name__}.apply(...), with forward and backward as static methods "
            "(forward(ctx, ...) and backward(ctx, ...))"
        )

    @staticmethod
    def forward(*args, **kwargs):
        """Compute the outputs; override as ``forward(ctx, *args, **kwargs)`` (or
        ``forward(*args, **kwargs)`` with :meth:`setup_context`)."""
        raise NotImplementedError(
            "You must implement the forward function for a custom ndgrad.autograd.Function.")

    @staticmethod
    def setup_context(ctx, inputs, output):
        """Fill ``ctx`` from ``inputs`` (a tuple) and ``output``, when ``forward`` takes no
        ``ctx``. Not overriding it means ``forward`` takes ``ctx`` first."""
        raise NotImplementedError("setup_context is not implemented.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        """Return the gradients of the inputs from the gradients of the outputs."""
        raise NotImplementedError(
            "You must implement either the backward or vjp method for your custom "
            "ndgrad.autograd.Function to use it with backward mode AD.")

    vjp = backward  # backward and vjp are aliases of each other, as in PyTorch

    @staticmethod
    def jvp(ctx, *grad_inputs):
        """Forward-mode rule: one tangent per positional input of ``forward`` (None where
        the input carries none) -> the tangent of each output (a tuple for several).
        Override it to use the Function under a dual level (:mod:`ndgrad.forward_ad`); it
        reads what ``ctx.save_for_forward`` saved through ``ctx.saved_tensors``."""
        raise NotImplementedError(
            "You must implement the jvp function for a custom ndgrad.autograd.Function to use "
            "it with forward mode AD (a @staticmethod jvp(ctx, *tangents) returning the "
            "output tangents; save what it needs with ctx.save_for_forward).")

    @classmethod
    def apply(cls, *args, **kwargs):
        """Run the Function on ``args``, recording it when an input requires grad."""
        setup = cls.setup_context is not Function.setup_context
        if setup:
            args, kwargs = _bind_all(cls, args, kwargs)
        elif kwargs:
            args, kwargs = _bind_ctx_form(cls, args, kwargs)
        if PROFILER[0]:  # timed under the Function's name (Note [Profiling])
            return PROFILER[0].function(cls, apply_function, args, kwargs)
        return apply_function(cls, args, kwargs)[0]


def apply_function(cls, args, kwargs, needs=None):
    """Run Function ``cls`` on bound ``args`` at the visible levels: ``(outputs, ctx)``.

    A transform level among the inputs processes it (Note [Functions under transforms]);
    ``needs`` says which inputs the levels above need a gradient for."""
    level = innermost_level(args, kwargs)
    if level is not None:
        return level.interpreter.process_function(level, cls, args, kwargs, needs)
    if VISIBLE[0]:  # a constant of every visible level (Note [Functions under transforms])
        for lv in visible_levels():
            if type(lv.interpreter).lift is not Interpreter.lift:
                with below(lv):
                    return _run(cls, args, kwargs, needs)
    return _run(cls, args, kwargs, needs)


_CTX_STATE = dict(_fn_in_jvp=False, _fn_to_save=(), _fn_saved=None, _fn_saved_for_forward=(),
                  _fn_dirty=(), _fn_non_diff=(), _fn_materialize=True, _fn_freed=False,
                  hooks=None, nout=1, edges=(), seq=-1, _fn_slot=(), _fn_types=(), _fn_outs=())


def new_ctx(node_cls):
    """A fresh ctx (a node of class ``node_cls``, not yet in a graph)."""
    node = object.__new__(node_cls)
    for name, value in _CTX_STATE.items():
        setattr(node, name, value)
    return node


def _run(cls, args, kwargs, needs=None):
    """Run the Function on bound ``args`` (no level's values among them): (outputs, ctx)."""
    setup = cls.setup_context is not Function.setup_context
    node = new_ctx(cls._backward_cls)
    own = tuple(isinstance(a, Tensor) and a._requires_grad for a in args)
    node.needs_input_grad = own if needs is None else tuple(
        a or b for a, b in zip(own, needs))
    record_it = STATE.grad_enabled and True in own
    if record_it:
        wire(node, args, own)
    prev = STATE.grad_enabled
    STATE.grad_enabled = False
    where = "forward"
    # (Note [Data levels below a Function] in core/refusing.py)
    shown = refuse_hidden(args, kwargs) if STACK else None
    try:
        if setup:
            output = cls.forward(*args, **kwargs)
            where = "setup_context"
            cls.setup_context(node, args, output)
        else:
            output = cls.forward(node, *args, **kwargs)
        if shown:  # (forward returned a value it did not receive, as is)
            where = "forward"
            refuse_returned(shown, output)
    except HiddenValueError as e:  # (Note [A level's values below it] in core/levels.py)
        e.in_function(cls, where, args)
        raise
    finally:
        STATE.grad_enabled = prev
        if shown:
            restore(shown)
    return _wrap_outputs(cls, node, args, output, record_it), node


def wire(node, args, needs):
    """Edges to the histories of the tensor inputs that need a gradient, and the map from
    input positions to edges (non-tensor inputs have no edge)."""
    edges = []
    slot = []
    types = []
    for a, need in zip(args, needs):
        if isinstance(a, Tensor):
            slot.append(len(edges))
            types.append(type(a._data) if type(a) is Tensor else None)
            edges.append(edge_to(a) if need else None)
        else:
            slot.append(-1)
            types.append(type(a))
    node.edges = tuple(edges)
    node._fn_slot = tuple(slot)
    node._fn_types = tuple(types)


def finish_node(node, outs):
    """Record a wired Function node through the graph's recorder (``graph.record_node``:
    numbered after its inputs' nodes, anomaly mode's trace; Note [One recorder] in
    core/graph.py) and note its outputs' shapes, dtypes and backends (backward's zeros)."""
    record_node(node, node.edges, outs, link=False)
    node._fn_outs = tuple(None if not isinstance(t, Tensor) else
                          (tuple(t.shape), t.dtype, t.backend) for t in outs)


def _alias(t):
    """A new Tensor sharing ``t``'s data and version counter (an input returned as is)."""
    a = _new(t._data, False)
    a._vcounter = t._counter()
    return a


def _wrap_outputs(cls, node, args, output, record_it):
    is_tuple = isinstance(output, tuple)
    outs = output if is_tuple else (output,)
    if not outs:
        raise RuntimeError(f"{cls.__name__}.forward returned an empty tuple; return at least "
                           "one value")
    input_pos = {id(a): i for i, a in enumerate(args) if isinstance(a, Tensor)}
    dirty = {id(t) for t in node._fn_dirty}
    non_diff = {id(t) for t in node._fn_non_diff}
    out_ids = {id(o) for o in outs}
    for t in node._fn_dirty:
        if id(t) not in input_pos:
            warnings.warn(
                f"{cls.__name__}: only input tensors should be given to ctx.mark_dirty(); a "
                "tensor made inside forward need not be marked.", UserWarning, stacklevel=4)
            continue
        if record_it:
            check_inplace(t, cls.__name__)
        if id(t) not in out_ids:
            raise RuntimeError(f"{cls.__name__}: an input marked dirty (ctx.mark_dirty) must "
                               "be returned by forward as one of its outputs")
        t._counter().value += 1
        note_where(t._counter(), 1, FunctionCtx.mark_dirty.__code__)  # (at the apply's line)
    results = []
    seen = set()
    out_pos = {}
    for k, o in enumerate(outs):
        if not isinstance(o, Tensor):
            results.append(o)
            continue
        oid = id(o)
        is_input = oid in input_pos
        if oid in dirty and is_input and oid not in seen:
            t = o  # modified in place: keeps its identity, its history is rebased below
        elif is_input or oid in seen:
            t = _alias(o)  # an input returned as is (or an output returned twice)
        else:
            t = o
        seen.add(oid)
        out_pos.setdefault(oid, k)
        if not (record_it and oid not in non_diff and is_differentiable_dtype(t.dtype)):
            if t is o and (not is_input or record_it):  # (a dirty input declared
                t._grad_fn = None                         # non-differentiable: detached)
                t._output_nr = 0
                t._requires_grad = False
        elif not (t is o and oid in dirty and is_input):
            t._grad_fn = node
            t._output_nr = k
            t._requires_grad = True
        results.append(t)
    if record_it:
        finish_node(node, results)
        for k, t in enumerate(results):
            if isinstance(t, Tensor) and id(t) in dirty and id(outs[k]) in input_pos:
                stand_in = _new(t._data, True)
                stand_in._grad_fn = node
                stand_in._output_nr = k
                rebase(t, stand_in)  # (a view: its base's history gets the change too)
    _save(cls, node, results, input_pos, out_pos, dirty, record_it)
    return tuple(results) if is_tuple else results[0]


def _save(cls, node, results, input_pos, out_pos, dirty, record_it):
    """Note [Saved tensors of a Function]: (saved value, what it is, its kind) per tensor."""
    saved = []
    for t in node._fn_to_save:
        if t is None:
            saved.append((None, None, None))
            continue
        m = t._meta
        if record_it and m is not None and m.inference:
            raise_inference_save(cls.__name__)
        tid = id(t)
        k = out_pos.get(tid)
        if k is not None and (tid not in input_pos or tid in dirty):
            r = results[k]  # an output (a dirty input is one too)
            if r._grad_fn is node:  # no reference cycle: its content and counter
                saved.append((save_output((r,), True, nr=k), f"output {k}", ("out", k)))
            else:
                saved.append((save_value(r), f"output {k}", ("out", k)))
        elif tid in input_pos:
            i = input_pos[tid]
            saved.append((save_value(t), f"input {i}", ("in", i)))
        else:
            saved.append((save_value(t), "intermediate", ("mid", None)))
    node._fn_saved = saved
    node._fn_to_save = ()


def _bind_ctx_form(cls, args, kwargs):
    """``forward(ctx, ...)`` called with keywords: keywords that name positional parameters
    become positional inputs (needs_input_grad and backward's gradients cover them), as in
    PyTorch; skipped parameters before them take their defaults. Keyword-only parameters
    stay keywords (passed to forward; never differentiated)."""
    params = [p for p in list(inspect.signature(cls.forward).parameters.values())[1:]
              if p.kind in _POSITIONAL]
    kwargs = dict(kwargs)
    last = -1
    for k, p in enumerate(params):
        if p.name in kwargs and p.kind is _P.POSITIONAL_OR_KEYWORD:
            last = k
    args = list(args)
    for k in range(len(args), last + 1):
        p = params[k]
        if p.name in kwargs:
            args.append(kwargs.pop(p.name))
        elif p.default is not _P.empty:
            args.append(p.default)
        else:
            raise TypeError(f"{cls.__name__}.forward() missing required argument: "
                            f"{p.name!r} (position {k})")
    return tuple(args), kwargs


def _bind_all(cls, args, kwargs):
    """``forward(*args)`` with ``setup_context``: bind to forward's signature, defaults
    included, as PyTorch does; ``inputs`` of setup_context are the positional values."""
    try:
        bound = inspect.signature(cls.forward).bind(*args, **kwargs)
    except TypeError as e:
        raise TypeError(f"{cls.__name__}.forward(): {e}") from None
    bound.apply_defaults()
    return tuple(bound.args), dict(bound.kwargs)
