"""User-defined differentiable functions: :class:`Function`, its ``ctx``, ``once_differentiable``.

A subclass of :class:`Function` gives ``forward`` and ``backward`` (static methods) and is
called through ``.apply(...)``, as ``torch.autograd.Function``. Each subclass ``MyFn`` gets a
Node class ``MyFnBackward`` (a :class:`~ndgrad.core.graph.Node`): one instance of it is the
``ctx`` that ``forward`` receives and, when the call is recorded, the ``grad_fn`` of the
outputs. The engine runs it like any other Node (always through its general path: a
FunctionNode is not an OpNode), so hooks, ``retain_graph``, anomaly mode and ``create_graph``
work for custom functions exactly as for built-in ops.

Note [Saved tensors of a Function]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
``ctx.save_for_backward(*tensors)`` only remembers its arguments; they are saved once
``forward`` (and ``setup_context``) returned and the outputs are wired, with the version each
tensor has then (Note [Saved tensors and versions] in graph.py), so a tensor marked dirty is
saved at its bumped version, as in PyTorch. An input or an intermediate is kept as the Tensor
itself. An *output* is kept as its raw array plus its version counter, never as the output
Tensor (whose ``grad_fn`` is this Node: a reference cycle); ``ctx.saved_tensors`` rebuilds a
Tensor with this Node as its ``grad_fn``, so that differentiating ``backward`` again
(``create_graph=True``) goes back through the Function, as it must. ``release()`` (after a
backward without ``retain_graph``) drops them; reading ``ctx.saved_tensors`` afterwards raises
the "backward through the graph a second time" error.

Note [What a Function's backward may return]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
One value per positional input of ``forward`` (trailing extra Nones are dropped, as in
PyTorch), a Tensor or None. A non-None value for an input that is not a Tensor is an error;
for a Tensor input that does not require grad it is ignored (PyTorch's contract: "you can
just pass None" there, so code that always returns every gradient keeps working). A gradient
whose shape broadcasts to the input's is summed back to it; a gradient of another floating
dtype is cast; any other shape, an integer or bool gradient, a complex gradient for a real
input or a gradient on another device is an error naming the Function and the input index.
"""

from __future__ import annotations

import functools
import inspect
import warnings

from .anomaly import forward_trace as _trace
from .backend import _BACKEND_BY_TYPE, is_differentiable_dtype
from . import levels as _levels
from .dispatch import _ANOMALY, _rebase_base, _regenerate, _write_back, input_edge
from .engine import _unbroadcast
from .grad_mode import STATE
from .graph import _FREED_MSG, Node, VersionCounter, _modified_msg, leaf_accumulator, new_seq
from .graph import _NodeHooks
from .tensor import Tensor, _new

__all__ = ["Function", "FunctionCtx", "BackwardCFunction", "once_differentiable"]

_P = inspect.Parameter
_POSITIONAL = (_P.POSITIONAL_ONLY, _P.POSITIONAL_OR_KEYWORD)


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
        for i, t in enumerate(tensors):
            if t is not None and not isinstance(t, Tensor):
                raise TypeError(
                    f"save_for_backward can only save tensors (or None), but argument {i} is of "
                    f"type {type(t).__name__}; store other values as ctx attributes, e.g. "
                    "`ctx.k = k`"
                )
        self._fn_to_save = tensors

    def save_for_forward(self, *tensors):
        """Save tensors (or None) for the forward-mode rule ``jvp``, which reads them back
        with ``ctx.saved_tensors`` (see :mod:`ndgrad.forward_ad`)."""
        for i, t in enumerate(tensors):
            if t is not None and not isinstance(t, Tensor):
                raise TypeError(f"save_for_forward expects tensors or None, but argument {i} "
                                f"is of type {type(t).__name__}")
        self._fn_saved_for_forward = tensors

    def mark_dirty(self, *tensors):
        """Declare inputs that ``forward`` modified in place.

        Such an input must be returned as an output; it keeps its identity, its version is
        bumped and its history continues from this Function.
        """
        for i, t in enumerate(tensors):
            if not isinstance(t, Tensor):
                raise TypeError(f"mark_dirty expects tensors, but argument {i} is of type "
                                f"{type(t).__name__}")
        self._fn_dirty = tensors

    def mark_non_differentiable(self, *tensors):
        """Declare outputs that are not differentiable (indices, masks, ...).

        They do not require grad; ``backward`` still receives a gradient argument for each
        (zeros, or None with ``set_materialize_grads(False)``).
        """
        for i, t in enumerate(tensors):
            if not isinstance(t, Tensor):
                raise TypeError(f"mark_non_differentiable expects tensors, but argument {i} is "
                                f"of type {type(t).__name__}")
        self._fn_non_diff = tensors

    def set_materialize_grads(self, value):
        """With False, ``backward`` receives None (not zeros) for outputs without a gradient."""
        self._fn_materialize = bool(value)


class BackwardCFunction(FunctionCtx, Node):
    """Base of the Node classes made for each :class:`Function` subclass (``MyFnBackward``).

    An instance is both the ``ctx`` of one call and, when the call is recorded, the
    ``grad_fn`` of its outputs. Subclasses have a ``__dict__``: user attributes live there.
    """

    __slots__ = ("needs_input_grad", "in_meta", "_fn_to_save", "_fn_saved",
                 "_fn_saved_for_forward", "_fn_dirty", "_fn_non_diff", "_fn_materialize",
                 "_fn_freed", "_fn_slot", "_fn_types", "_fn_outs", "_fn_in_jvp")

    _forward_cls = None

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
            raise RuntimeError(_FREED_MSG)
        if self._fn_in_jvp:  # inside jvp: what save_for_forward saved (as PyTorch)
            return tuple(self._fn_saved_for_forward)
        saved = self._fn_saved
        if saved is None:  # inside forward / setup_context, or nothing saved
            return tuple(self._fn_to_save)
        out = []
        for k, entry in enumerate(saved):
            if entry is None:
                out.append(None)
                continue
            kind, obj, counter, expected, which, nr, diff = entry
            if kind == "t":  # the tensor's counter now (an in-place op may have created one)
                counter = obj._version
            cur = counter.value if counter is not None else 0
            if cur != expected:
                data = obj._data if kind == "t" else obj
                raise RuntimeError(_modified_msg(self, data, f"saved tensor {k} ({which})",
                                                 cur, expected))
            if kind == "t":
                out.append(obj)
            else:  # an output: rebuilt around its raw array
                t = _new(obj, diff)
                if diff:
                    t._grad_fn = self
                    t._output_nr = nr
                t._version = counter
                out.append(t)
        return tuple(out)

    @property
    def saved_variables(self):  # PyTorch's old name
        return self.saved_tensors

    @property
    def dirty_tensors(self):
        return self._fn_dirty

    @property
    def non_differentiable(self):
        return self._fn_non_diff

    @property
    def to_save(self):
        return self._fn_to_save

    def release(self):
        """Free the saved tensors (the engine calls this after a backward without
        ``retain_graph``)."""
        self._fn_saved = None
        self._fn_to_save = ()
        self._fn_freed = True

    def apply_backward(self, grads, create_graph):
        cls = self._forward_cls
        outs = self._fn_outs
        materialize = self._fn_materialize
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
            elif isinstance(g, Tensor):  # (a batched tensor too, inside vmap)
                args.append(g)
            else:
                args.append(_new(g, False))
        user_fn = _user_backward(cls)
        result = user_fn(self, *args)
        return self._check_grads(result, create_graph)

    def _check_grads(self, result, create_graph):
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
            if not isinstance(r, Tensor):
                raise RuntimeError(
                    f"function {self.name()} returned a {type(r).__name__} as the gradient at "
                    f"index {i}; expected a Tensor or None (wrap arrays with ndgrad.asarray)")
            if edges[slot] is None:
                continue  # the input does not require grad: ignored, as in PyTorch
            shape, dtype = self.in_meta[slot]
            if type(r) is not Tensor:  # a batched gradient (inside vmap): checked as a Tensor
                if not is_differentiable_dtype(r.dtype) or (r.dtype.kind == "c" and
                                                             dtype.kind != "c"):
                    raise RuntimeError(
                        f"Function {self.name()} returned an invalid gradient at index {i} - "
                        f"expected a gradient of dtype {dtype} (or another floating dtype), "
                        f"but got dtype {r.dtype}")
                if tuple(r.shape) != tuple(shape) or r.dtype != dtype:
                    r = _unbroadcast(r, shape, dtype, self, i)
                grads[slot] = r
                continue
            data = r._data
            if type(data) is not self._fn_types[i]:
                raise RuntimeError(
                    f"Function {self.name()} returned an invalid gradient at index {i} - "
                    f"got a gradient on {r.device}, but the input is a "
                    f"{self._fn_types[i].__name__} on another device; move it with .to()")
            gkind = data.dtype.kind
            if not is_differentiable_dtype(data.dtype) or (gkind == "c" and dtype.kind != "c"):
                raise RuntimeError(
                    f"Function {self.name()} returned an invalid gradient at index {i} - "
                    f"expected a gradient of dtype {dtype} (or another floating dtype) for an "
                    f"input of dtype {dtype}, but got dtype {data.dtype}")
            g = r if create_graph else data
            if data.shape != shape or data.dtype != dtype:
                g = _unbroadcast(g, shape, dtype, self, i)
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
        if _levels.ACTIVE[0]:  # a transform level is active (Note [Levels] in core/levels.py)
            r = _levels.function_hook(cls, args, kwargs)
            if r is not _levels.NOT_HANDLED:
                return r
        return _run(cls, args, kwargs, setup)[0]


def _run(cls, args, kwargs, setup=None):
    """Run the Function on bound ``args``: (outputs, ctx node)."""
    if setup is None:
        setup = cls.setup_context is not Function.setup_context
    node = object.__new__(cls._backward_cls)
    node._fn_in_jvp = False
    node._fn_to_save = ()
    node._fn_saved = None
    node._fn_saved_for_forward = ()
    node._fn_dirty = ()
    node._fn_non_diff = ()
    node._fn_materialize = True
    node._fn_freed = False
    node.hooks = None
    node.nout = 1
    needs = tuple(type(a) is Tensor and a._requires_grad for a in args)
    node.needs_input_grad = needs
    record = STATE.grad_enabled and True in needs
    if record:
        _wire_inputs(node, args)
    else:
        node.edges = ()
        node.in_meta = None
        node.seq = -1
    prev = STATE.grad_enabled
    STATE.grad_enabled = False
    try:
        if setup:
            output = cls.forward(*args, **kwargs)
            cls.setup_context(node, args, output)
        else:
            output = cls.forward(node, *args, **kwargs)
    finally:
        STATE.grad_enabled = prev
    return _wrap_outputs(cls, node, args, output, record), node


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


def _wire_inputs(node, args):
    """Edges to the histories of the tensor inputs, their shape/dtype, and the map from input
    positions to edges (non-tensor inputs have no edge)."""
    edges = []
    meta = []
    slot = []
    types = []
    for a in args:
        if type(a) is Tensor:
            slot.append(len(edges))
            types.append(type(a._data))
            if a._requires_grad:
                edge, m = input_edge(a)
                edges.append(edge)
                meta.append(m)
            else:
                edges.append(None)
                meta.append(None)
        else:
            slot.append(-1)
            types.append(type(a))
    node.edges = tuple(edges)
    node.in_meta = meta
    node._fn_slot = tuple(slot)
    node._fn_types = tuple(types)


def _alias(t):
    """A new Tensor sharing ``t``'s data and version counter (an input returned as is)."""
    c = t._version
    if c is None:
        c = t._version = VersionCounter()
    a = _new(t._data, False)
    a._version = c
    return a


def _wrap_outputs(cls, node, args, output, record):
    is_tuple = isinstance(output, tuple)
    outs = output if is_tuple else (output,)
    if not outs:
        raise RuntimeError(f"{cls.__name__}.forward returned an empty tuple; return at least "
                           "one value")
    input_pos = {id(a): i for i, a in enumerate(args) if type(a) is Tensor}
    dirty = {id(t) for t in node._fn_dirty}
    non_diff = {id(t) for t in node._fn_non_diff}
    for t in node._fn_dirty:
        if id(t) not in input_pos:
            warnings.warn(
                f"{cls.__name__}: only input tensors should be given to ctx.mark_dirty(); a "
                "tensor made inside forward need not be marked.", UserWarning, stacklevel=3)
            continue
        if record:
            base = t._base
            if t._requires_grad and t._grad_fn is None:
                raise RuntimeError(
                    f"{cls.__name__}: a leaf tensor that requires grad (shape {list(t.shape)}) "
                    "was modified in place (ctx.mark_dirty). In-place changes to a leaf would "
                    "make its gradient meaningless; pass a `.clone()` of it, or call the "
                    "Function under `ndgrad.no_grad()` for a parameter update.")
            if base is not None and base._requires_grad and base._grad_fn is None:
                raise RuntimeError(
                    f"{cls.__name__}: an input modified in place (ctx.mark_dirty) is a view of a "
                    "leaf tensor that requires grad; in-place changes to the view would change "
                    "the leaf. Pass a `.clone()` of the leaf, or call the Function under "
                    "`ndgrad.no_grad()` for a parameter update.")
        if id(t) not in {id(o) for o in outs}:
            raise RuntimeError(f"{cls.__name__}: an input marked dirty (ctx.mark_dirty) must "
                               "be returned by forward as one of its outputs")
        c = t._version
        if c is None:
            c = t._version = VersionCounter()
        c.value += 1
    results = []
    infos = []
    seen = set()
    out_pos = {}
    for k, o in enumerate(outs):
        if not isinstance(o, Tensor):
            results.append(o)
            infos.append(None)
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
        d = t._data
        diff = record and oid not in non_diff and is_differentiable_dtype(d.dtype)
        if diff:
            t._grad_fn = node
            t._output_nr = k
            t._requires_grad = True
            if t._version is None:
                t._version = VersionCounter()
        elif t is o and not is_input:
            t._grad_fn = None
            t._requires_grad = False
        elif t is o and record:  # a dirty input declared non-differentiable: detach it
            t._grad_fn = None
            t._output_nr = 0
            t._requires_grad = False
        results.append(t)
        infos.append((d.shape, d.dtype, _BACKEND_BY_TYPE[type(d)]))
    if record:
        node.nout = len(outs)
        node._fn_outs = tuple(infos)
        node.seq = new_seq()
        if _ANOMALY[0]:
            node.hooks = _NodeHooks(_trace())
        _save(cls, node, args, outs, results, input_pos, out_pos, dirty)
        for k, t in enumerate(results):
            if type(t) is Tensor and id(t) in dirty and t._grad_fn is node and \
                    t._base is not None:
                _dirty_view(t, node, k)
    elif node._fn_to_save:
        node._fn_saved = [None if t is None else
                          ("t", t, None, t._version.value if t._version else 0, "saved", 0,
                           False) for t in node._fn_to_save]
    return tuple(results) if is_tuple else results[0]


def _dirty_view(t, node, k):
    """A view modified in place by a Function: its base's history gets the change
    (Note [In-place on views] in core/dispatch.py)."""
    new = _new(t._data, True)
    new._grad_fn = node
    new._output_nr = k
    base = t._base
    _rebase_base(base, _write_back(t, new))
    _regenerate(t)


def _save(cls, node, args, outs, results, input_pos, out_pos, dirty):
    """Note [Saved tensors of a Function]."""
    saved = []
    for t in node._fn_to_save:
        if t is None:
            saved.append(None)
            continue
        m = t._meta
        if m is not None and m.inference:
            raise RuntimeError(
                f"Inference tensors cannot be saved for backward ({cls.__name__}). An inference "
                "tensor was made inside `ndgrad.inference_mode()`; make it outside inference "
                "mode, or `.clone()` it outside inference mode to get a normal tensor.")
        tid = id(t)
        k = out_pos.get(tid)
        if k is not None and (tid not in input_pos or tid in dirty):
            r = results[k]  # an output (a dirty input is one too): no reference cycle
            c = r._version
            if c is None:
                c = r._version = VersionCounter()
            saved.append(("o", r._data, c, c.value, f"output {k}", k, r._grad_fn is node))
        else:
            c = t._version
            which = f"input {input_pos[tid]}" if tid in input_pos else "intermediate"
            saved.append(("t", t, None, c.value if c is not None else 0, which, 0, False))
    node._fn_saved = saved
    node._fn_to_save = ()


# ----------------------------------------------------------------------- once_differentiable
_ONCE_MSG = ("trying to differentiate twice a function that was marked with "
             "@once_differentiable")


class DelayedError(Node):
    """Grad_fn of the results of a ``@once_differentiable`` backward run with
    ``create_graph=True``: differentiating through them raises."""

    __slots__ = ("msg",)

    def __init__(self, msg, edges, nout):
        self.msg = msg
        self.edges = tuple(edges)
        self.seq = new_seq()
        self.hooks = _NodeHooks(_trace()) if _ANOMALY[0] else None
        self.nout = nout

    def name(self):
        return "DelayedError"

    def apply_backward(self, grads, create_graph):
        raise RuntimeError(self.msg)

    def release(self):
        pass


def once_differentiable(fn):
    """Decorate a Function's ``backward`` that is not itself differentiable.

    ``backward`` then runs with grad mode off (it may use any code, e.g. raw NumPy through
    ``.numpy()``). Its results are first-order gradients; differentiating through them
    (``create_graph=True`` and a second backward) raises a RuntimeError instead of silently
    giving a wrong higher-order derivative.

    Examples
    --------
    >>> import ndgrad
    >>> from ndgrad.autograd import Function, once_differentiable
    >>> class Cube(Function):
    ...     @staticmethod
    ...     def forward(ctx, x):
    ...         ctx.save_for_backward(x)
    ...         return x ** 3
    ...
    ...     @staticmethod
    ...     @once_differentiable
    ...     def backward(ctx, grad):
    ...         (x,) = ctx.saved_tensors
    ...         return 3 * x ** 2 * grad
    >>> x = ndgrad.tensor([1.0, 2.0], requires_grad=True)
    >>> (g,) = ndgrad.autograd.grad(Cube.apply(x).sum(), x, create_graph=True)
    >>> g
    tensor([ 3., 12.], grad_fn=<DelayedError>)
    >>> ndgrad.autograd.grad(g.sum(), x)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    RuntimeError: trying to differentiate twice a function that was marked with ... (CubeBackward)
    """

    @functools.wraps(fn)
    def wrapper(ctx, *args):
        prev = STATE.grad_enabled
        STATE.grad_enabled = False
        try:
            outputs = fn(ctx, *args)
        finally:
            STATE.grad_enabled = prev
        if not prev:
            return outputs
        # Differentiating these results would need d(backward)/d(its inputs): the gradient
        # arguments and what the Function saved, i.e. the Function's own inputs.
        edges = []
        for a in args:
            if isinstance(a, Tensor) and a._requires_grad:
                fnode = a._grad_fn
                edges.append((fnode, a._output_nr) if fnode is not None
                             else (leaf_accumulator(a), 0))
        if isinstance(ctx, BackwardCFunction):
            edges.extend(e for e in ctx.edges if e is not None)
        if not edges:
            return outputs
        single = not isinstance(outputs, tuple)
        outs = (outputs,) if single else outputs
        name = ctx.name() if isinstance(ctx, Node) else getattr(fn, "__qualname__", "backward")
        err = DelayedError(f"{_ONCE_MSG} ({name})", edges, len(outs))
        wrapped = tuple(
            Tensor._from_node(o._data, err, i)
            if isinstance(o, Tensor) and is_differentiable_dtype(o._data.dtype) else o
            for i, o in enumerate(outs))
        return wrapped[0] if single else wrapped

    wrapper._once_differentiable = True
    return wrapper
