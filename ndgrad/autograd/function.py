"""``ndgrad.autograd.function``: custom Functions (core/function.py) and
:func:`once_differentiable`, as ``torch.autograd.function``.

``once_differentiable`` is built on the core's public pieces (a Node whose backward raises,
edges to the histories a result depends on), like the other transforms above the core.
"""

from __future__ import annotations

import functools

from ..core.backend import is_differentiable_dtype
from ..core.function import BackwardCFunction, Function, FunctionCtx
from ..core.grad_mode import STATE
from ..core.graph import Node, edge_to, record_node
from ..core.tensor import Tensor, _new
from .legacy import InplaceFunction, NestedIOFunction

__all__ = ["Function", "FunctionCtx", "BackwardCFunction", "once_differentiable",
           "InplaceFunction", "NestedIOFunction"]

_ONCE_MSG = ("trying to differentiate twice a function that was marked with "
             "@once_differentiable")


class DelayedError(Node):
    """Grad_fn of the results of a ``@once_differentiable`` backward run with
    ``create_graph=True``: differentiating through them raises. Recorded by
    ``graph.record_node``, which gives it what the recorder gives every node."""

    __slots__ = ("msg",)

    def __init__(self, msg):
        self.msg = msg
        self.hooks = None

    def name(self):
        return "DelayedError"

    def backward(self, pass_, grads, skip=None):
        raise RuntimeError(self.msg)


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
        edges = [edge_to(a) for a in args if isinstance(a, Tensor) and a._requires_grad]
        if isinstance(ctx, BackwardCFunction):
            edges.extend(e for e in ctx.edges if e is not None)
        if not edges:
            return outputs
        single = not isinstance(outputs, tuple)
        outs = (outputs,) if single else outputs
        # the node's outputs: new tensors with the values of the differentiable results
        diff = [k for k, o in enumerate(outs) if isinstance(o, Tensor) and
                is_differentiable_dtype(o.dtype)]
        if not diff:
            return outputs
        linked = [_new(outs[k]._data, False) if type(outs[k]) is Tensor else
                  outs[k].detach() for k in diff]
        name = ctx.name() if isinstance(ctx, Node) else getattr(fn, "__qualname__", "backward")
        record_node(DelayedError(f"{_ONCE_MSG} ({name})"), edges, linked)
        wrapped = list(outs)
        for k, t in zip(diff, linked):
            wrapped[k] = t
        return wrapped[0] if single else tuple(wrapped)

    wrapper._once_differentiable = True
    return wrapper

