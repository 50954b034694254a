"""The Function classes PyTorch keeps for code written before static Functions:
:class:`NestedIOFunction` (nested inputs and outputs, instance methods) and
:class:`InplaceFunction` (an ``inplace`` flag on the instance), as
``torch.autograd.function``'s; ``ndgrad.autograd`` and ``ndgrad.autograd.function`` export
them.

Both are built on the core's :class:`~ndgrad.core.function.Function`, as
``once_differentiable`` is: a NestedIOFunction runs as one Function on the tensors among its
flattened inputs, so saved-tensor checks, hooks, anomaly mode and ``create_graph`` work as for
any Function.

Note [Nested inputs and outputs of a NestedIOFunction]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
``MyFn()(*inputs)`` (or ``MyFn.apply(*inputs)``, which makes the instance) flattens
``inputs`` (tuples, lists, namedtuples and dicts, in the order of
:mod:`ndgrad.functional.pytree`) and runs ``MyFn`` as one Function whose positional inputs
are the Tensors among the leaves followed by the instance (a non-tensor input, last, so that
the index a gradient error names counts tensors only). Its ``forward`` calls
``self.forward_extended(*inputs)`` on the original nested inputs (the same Tensor objects, so
``mark_dirty`` can name them), flattens what it returns into the Function's outputs (every
leaf) and keeps that structure, a :class:`~ndgrad.functional.pytree.TreeSpec` holding no
tensor, on the instance; the call returns the outputs rebuilt in it. Its ``backward``
rebuilds the gradients in the output structure, calls ``self.backward_extended`` and matches
what that returns against the input structure leaf by leaf: a structural mismatch or a
gradient for a leaf that is not a Tensor is an error naming where it is.

The instance is the ``self`` both methods receive. The backward node keeps it; it reaches the
node only while one of its methods runs (``_nio_ctx``), so no reference cycle outlives a
call. Its attributes carry values from ``forward_extended`` to ``backward_extended``, which is
why an instance runs once: a second run would overwrite what the first one's backward reads.
"""

from __future__ import annotations

from ..core.function import Function
from ..core.tensor import Tensor, innermost_level
from ..functional.pytree import tree_flatten, tree_unflatten

__all__ = ["NestedIOFunction", "InplaceFunction"]


def _leaf_paths(spec, where, out):
    """The path of each leaf of ``spec`` (``input 1[0]['a']``), in flattening order."""
    if spec.kind == "leaf":
        out.append(where)
    elif spec.kind == "dict":
        for k, c in zip(spec.keys, spec.children):
            _leaf_paths(c, f"{where}[{k!r}]", out)
    else:
        for k, c in enumerate(spec.children):
            _leaf_paths(c, f"{where}[{k}]", out)
    return out


def _tensors_of(who, what, tree, none_ok):
    """The Tensors among the leaves of ``tree``, Nones skipped; any other leaf is an error."""
    leaves, spec = tree_flatten(tree)
    tensors = []
    for leaf, where in zip(leaves, _leaf_paths(spec, "", [])):
        if isinstance(leaf, Tensor):
            tensors.append(leaf)
        elif leaf is not None:
            raise TypeError(
                f"{who}.{what} takes tensors{' (or None)' if none_ok else ''} nested in "
                f"tuples, lists and dicts, but the value at argument{where} is of type "
                f"{type(leaf).__name__}; store other values as attributes of self, e.g. "
                "`self.k = k`")
    return tensors, leaves, spec


def _describe(g):
    return "a Tensor" if isinstance(g, Tensor) else f"a {type(g).__name__}"


def _match(spec, g, where, out, who):
    """Append ``(gradient, path)`` for each leaf of input structure ``spec`` from the
    gradient structure ``g`` (None stands for a whole subtree without gradient)."""
    if g is None:
        for p in _leaf_paths(spec, where, []):
            out.append((None, p))
        return
    kind = spec.kind
    if kind == "leaf":
        if isinstance(g, (tuple, list, dict)):
            raise RuntimeError(
                f"{who}.backward_extended returned {_describe(g)} for {where}, which is a "
                "Tensor (or another single value): return one gradient there, or None")
        out.append((g, where))
        return
    if kind == "dict":
        if not isinstance(g, dict):
            raise RuntimeError(
                f"{who}.backward_extended returned {_describe(g)} for {where}, which is a "
                f"dict with keys {list(spec.keys)}: return a dict of gradients (keys left out "
                "mean None)")
        extra = [k for k in g if k not in spec.keys]
        if extra:
            raise RuntimeError(
                f"{who}.backward_extended returned gradients for the keys {extra} of {where}, "
                f"which has only the keys {list(spec.keys)}")
        for k, c in zip(spec.keys, spec.children):
            _match(c, g.get(k), f"{where}[{k!r}]", out, who)
        return
    n = len(spec.children)
    if not isinstance(g, (tuple, list)) or len(g) != n:
        got = f"{_describe(g)} of length {len(g)}" if isinstance(g, (tuple, list)) else \
            _describe(g)
        raise RuntimeError(
            f"{who}.backward_extended returned {got} for {where}, which is a {kind} of {n} "
            f"values: return a tuple or list of {n} gradients there (None where there is "
            "none), or None for all of them")
    for k, (c, gk) in enumerate(zip(spec.children, g)):
        _match(c, gk, f"{where}[{k}]", out, who)


class NestedIOFunction(Function):
    r"""A custom Function over nested inputs and outputs, with instance methods
    (``torch.autograd.NestedIOFunction``, kept by PyTorch for old code; new code writes a
    :class:`Function`).

    Subclass it and write ``forward_extended(self, *inputs)`` and
    ``backward_extended(self, *grad_outputs)``; call it as ``MyFn()(*inputs)`` or
    ``MyFn.apply(*inputs)``. Inputs and outputs may be Tensors nested in tuples, lists,
    namedtuples and dicts (other leaves are passed through and get no gradient):

    - ``forward_extended`` runs with grad mode off on the inputs as given and returns the
      outputs in any nesting; the call returns them in that nesting.
    - ``backward_extended`` receives one gradient per output, each in its output's
      nesting (when ``forward_extended`` returns a tuple, one argument per element),
      and returns one gradient per input in its input's nesting (None for a whole
      subtree, or a leaf, without gradient; a dict may leave keys out).

    ``self`` plays ``ctx``'s part: ``self.save_for_backward(*nested)`` (read back, nested,
    as ``self.saved_tensors``), ``self.mark_dirty(*nested)``,
    ``self.mark_non_differentiable(*nested)``, ``self.set_materialize_grads(False)``,
    ``self.needs_input_grad`` (one bool per Tensor among the inputs, in flattening order)
    and any attribute set in ``forward_extended``. An instance runs once (Note [Nested inputs
    and outputs of a NestedIOFunction] in ``ndgrad/autograd/legacy.py``). It does not run
    under the ``ndgrad.func`` transforms or a forward-mode dual level: write a
    :class:`Function` (with ``jvp``, ``generate_vmap_rule``) for those.

    Examples
    --------
    >>> import ndgrad
    >>> from ndgrad.autograd import NestedIOFunction
    >>> class ScaleAll(NestedIOFunction):
    ...     def forward_extended(self, xs, opts):
    ...         self.save_for_backward({"w": opts["w"]})
    ...         return [x * opts["w"] for x in xs]
    ...
    ...     def backward_extended(self, grads):
    ...         w = self.saved_tensors[0]["w"]
    ...         return [g * w for g in grads], None
    >>> a = ndgrad.tensor([1.0, 2.0], requires_grad=True)
    >>> b = ndgrad.tensor(3.0, requires_grad=True)
    >>> ya, yb = ScaleAll.apply([a, b], {"w": ndgrad.tensor(2.0)})
    >>> (ya.sum() + yb).backward()
    >>> a.grad, b.grad
    (tensor([2., 2.]), tensor(2.))
    """

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        for name in ("forward", "backward", "vjp", "jvp", "setup_context"):
            if name in vars(cls):
                raise TypeError(
                    f"{cls.__name__} is a NestedIOFunction: write forward_extended(self, "
                    f"*inputs) and backward_extended(self, *grad_outputs), not {name!r} "
                    "(or subclass ndgrad.autograd.Function for a static forward/backward)")

    def __call__(self, *inputs):
        return _run(self, inputs)

    @classmethod
    def apply(cls, *inputs, **kwargs):
        """Run the Function on ``inputs`` with a new instance: ``cls()(*inputs)``."""
        if kwargs:
            raise TypeError(
                f"{cls.__name__}.apply() got keyword arguments {sorted(kwargs)}: a "
                "NestedIOFunction takes positional inputs only (nest values in a dict to "
                "name them)")
        return cls()(*inputs)

    def forward_extended(self, *inputs):
        """Compute the outputs from the (nested) inputs; override it."""
        raise NotImplementedError(
            f"{type(self).__name__}: a NestedIOFunction must implement "
            "forward_extended(self, *inputs)")

    def backward_extended(self, *grad_outputs):
        """Return the (nested) gradients of the inputs; override it."""
        raise NotImplementedError(
            f"{type(self).__name__}: a NestedIOFunction must implement "
            "backward_extended(self, *grad_outputs)")

    # The Function that runs a call (Note [Nested inputs and outputs of a NestedIOFunction]):
    # positional inputs (*tensors, self); outputs, every leaf of forward_extended's result.
    @staticmethod
    def forward(ctx, *args):
        fn = args[-1]
        ctx._nio_fn = fn
        fn.needs_input_grad = tuple(ctx.needs_input_grad[:-1])
        fn._nio_ctx = ctx
        try:
            result = fn.forward_extended(*fn._nio_inputs)
        finally:
            fn._nio_ctx = None
        if type(result) is tuple:
            leaves, spec = tree_flatten(result)
        else:  # one output, in whatever nesting: backward_extended gets one argument
            leaves, spec = tree_flatten((result,))
        if not leaves:
            raise RuntimeError(f"{type(fn).__name__}.forward_extended returned {result!r}, "
                               "which holds no value: return a tensor or a nesting of them")
        fn._nio_out_spec = spec
        fn._nio_out_tuple = type(result) is tuple
        return tuple(leaves)

    @staticmethod
    def backward(ctx, *grads):
        fn = ctx._nio_fn
        who = type(fn).__name__
        nested = tree_unflatten(fn._nio_out_spec, grads)
        prev = fn.__dict__.get("_nio_ctx")
        fn._nio_ctx = ctx
        try:
            result = fn.backward_extended(*nested)
        finally:
            fn._nio_ctx = prev
        spec = fn._nio_in_spec
        n = len(spec.children)
        if n == 1 and not (type(result) is tuple and len(result) == 1):
            result = (result,)  # one input: its gradient, as Function's backward
        elif isinstance(result, list):
            result = tuple(result)
        if type(result) is tuple and len(result) > n and all(r is None for r in result[n:]):
            result = result[:n]  # extra trailing Nones, as Function's backward
        if type(result) is not tuple or len(result) != n:
            got = len(result) if type(result) is tuple else _describe(result)
            raise RuntimeError(f"{who}.backward_extended returned {got} gradients for "
                               f"{n} inputs: return one per input of forward_extended (None "
                               "where there is none)")
        pairs = []
        for i, (c, g) in enumerate(zip(spec.children, result)):
            _match(c, g, f"input {i}", pairs, who)
        out = []
        for (g, where), is_tensor in zip(pairs, fn._nio_is_tensor):
            if is_tensor:
                out.append(g)
            elif g is not None:
                raise RuntimeError(
                    f"{who}.backward_extended returned a gradient for {where}, which is not "
                    "a Tensor: return None there")
        out.append(None)  # the instance
        return tuple(out)

    # self as ctx
    def _ctx(self, what):
        ctx = self.__dict__.get("_nio_ctx")
        if ctx is None:
            raise RuntimeError(f"{type(self).__name__}.{what} is only available while "
                               "forward_extended or backward_extended runs")
        return ctx

    def save_for_backward(self, *values):
        """Save tensors (or None), nested in tuples, lists and dicts, for
        ``backward_extended``, which reads them back in that nesting from
        ``self.saved_tensors``."""
        ctx = self._ctx("save_for_backward")
        _, leaves, spec = _tensors_of(type(self).__name__, "save_for_backward", values, True)
        ctx.save_for_backward(*leaves)
        self._nio_save_spec = spec

    @property
    def saved_tensors(self):
        """What ``save_for_backward`` saved, in its nesting (version-checked, as
        ``ctx.saved_tensors``)."""
        flat = self._ctx("saved_tensors").saved_tensors
        spec = self.__dict__.get("_nio_save_spec")
        return flat if spec is None else tree_unflatten(spec, flat)

    def mark_dirty(self, *args, **kwargs):
        """Declare inputs (Tensors nested anyhow; keyword values too) that
        ``forward_extended`` modified in place and returns (``ctx.mark_dirty``)."""
        ctx = self._ctx("mark_dirty")
        ctx.mark_dirty(*_tensors_of(type(self).__name__, "mark_dirty", (args, kwargs),
                                    False)[0])

    def mark_non_differentiable(self, *args, **kwargs):
        """Declare outputs (Tensors nested anyhow; keyword values too) that are not
        differentiable (``ctx.mark_non_differentiable``)."""
        ctx = self._ctx("mark_non_differentiable")
        ctx.mark_non_differentiable(*_tensors_of(type(self).__name__,
                                                 "mark_non_differentiable", (args, kwargs),
                                                 False)[0])

    def set_materialize_grads(self, value):
        """With False, ``backward_extended`` receives None (not zeros) for outputs without a
        gradient (``ctx.set_materialize_grads``)."""
        self._ctx("set_materialize_grads").set_materialize_grads(value)


def _run(fn, inputs):
    """Note [Nested inputs and outputs of a NestedIOFunction]."""
    cls = type(fn)
    who = cls.__name__
    if fn.__dict__.get("_nio_in_spec") is not None:
        raise RuntimeError(
            f"this {who} instance has already run: a NestedIOFunction instance runs once "
            f"(its attributes carry values to its backward_extended); call {who}()(...) or "
            f"{who}.apply(...) for each use")
    leaves, spec = tree_flatten(inputs)
    tensors = []
    for x in leaves:
        if isinstance(x, Tensor):
            tensors.append(x)
    if innermost_level(tensors) is not None:
        raise RuntimeError(
            f"{who} is a NestedIOFunction, which does not run under the ndgrad.func "
            "transforms or a forward-mode dual level; write it as an ndgrad.autograd.Function "
            "(static forward/backward, with jvp for forward mode and generate_vmap_rule for "
            "vmap)")
    fn._nio_in_spec = spec
    fn._nio_is_tensor = tuple(isinstance(x, Tensor) for x in leaves)
    fn._nio_inputs = inputs
    try:
        flat = Function.apply.__func__(cls, *tensors, fn)
    finally:
        fn._nio_inputs = None  # (the node keeps the instance: not its inputs)
    out = tree_unflatten(fn._nio_out_spec, flat)
    return out if fn._nio_out_tuple else out[0]


class InplaceFunction(Function):
    r"""A :class:`Function` whose instances keep an ``inplace`` flag
    (``torch.autograd.function.InplaceFunction``, kept by PyTorch for old code).

    ``InplaceFunction(inplace=True).inplace`` is True; the default is False. As in PyTorch,
    the Function still runs through ``apply``, with static methods: pass the choice to
    ``apply`` and keep it on ``ctx`` (``ctx.inplace = inplace``); an in-place ``forward``
    declares the modified input with ``ctx.mark_dirty`` and returns it.

    Examples
    --------
    >>> import ndgrad
    >>> from ndgrad.autograd.function import InplaceFunction
    >>> class Double(InplaceFunction):
    ...     @staticmethod
    ...     def forward(ctx, x, inplace=False):
    ...         ctx.inplace = inplace
    ...         if not inplace:
    ...             return x * 2.0
    ...         ctx.mark_dirty(x)
    ...         return x.mul_(2.0)
    ...
    ...     @staticmethod
    ...     def backward(ctx, grad):
    ...         return grad * 2.0, None
    >>> Double(inplace=True).inplace
    True
    >>> x = ndgrad.tensor([1.0, 2.0], requires_grad=True)
    >>> a = x * 3.0
    >>> b = Double.apply(a, True)
    >>> b is a, b.grad_fn.inplace
    (True, True)
    >>> b.sum().backward()
    >>> x.grad
    tensor([6., 6.])
    """

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def __call__(self, *args, **kwargs):
        who = type(self).__name__
        raise RuntimeError(
            f"{who} is a Function: call it through {who}.apply(...) (its instances only keep "
            "the inplace flag, as PyTorch's); pass the flag to apply and keep it on ctx "
            "(ctx.inplace = inplace)")
