"""A compiled function called with tensors that require grad: one node whose forward and
backward are compiled programs (Note [Differentiating a compiled function]).

Note [Differentiating a compiled function]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
``compile(f)(x)`` with ``x`` requiring grad (grad mode on, no transform level visible, the
arguments positional tensors, the outputs tensors of floating dtypes) records one node, a
custom Function whose forward runs f's program on the detached arguments and whose backward
runs the program of ``vjp(f)`` (compiled too, once per signature: it computes f's forward
again with its pullback, as ``jax.jit(jax.vjp)`` would without saved residuals), given the
saved arguments and the cotangents (zeros for the outputs that got none). So ``.backward()``
and ``autograd.grad`` through a compiled function run compiled programs both ways, and the
backward's own values are differentiable: with ``create_graph`` the backward's program is
called with tensors that require grad and runs as eager code, recording its graph (higher
order). Other calls (under a transform: ``grad(compile(f))``, ``vmap(compile(f))``; keyword
or pytree arguments) run ``f`` itself, as eager code.
"""

from __future__ import annotations

from ..core.backend import is_differentiable_dtype
from ..core.dispatch import TENSOR_F
from ..core.function import Function
from ..core.tensor import Tensor
from .transforms import vjp

__all__ = ["call_differentiably"]


class _CompiledCall(Function):
    """The node of a compiled function's call (Note [Differentiating a compiled
    function])."""

    @staticmethod
    def vmap_loop(compiled, *xs):  # (how vmap's loop warning would name it)
        name = getattr(compiled, "__name__", "a function")
        return (f"the compiled function {name}",
                "a compiled function's node is recorded per element below a vmap")

    @staticmethod
    def forward(ctx, compiled, *xs):
        ctx.compiled = compiled
        ctx.save_for_backward(*xs)
        out = compiled(*[x.detach() for x in xs])
        ctx.single = not isinstance(out, tuple)
        ctx.outs = (out,) if ctx.single else out
        return out

    @staticmethod
    def backward(ctx, *grads):
        xs = ctx.saved_tensors
        cts = tuple(g if g is not None else TENSOR_F.zeros_like(o)
                    for g, o in zip(grads, ctx.outs))
        gs = _pullback(ctx.compiled, len(xs))(*xs, *cts)
        return (None,) + (gs if isinstance(gs, tuple) else (gs,))


def _pullback(compiled, n):
    """The compiled pullback of ``compiled``'s function for ``n`` arguments (made once)."""
    made = compiled.__dict__.setdefault("_pullbacks", {})
    p = made.get(n)
    if p is None:
        p = made[n] = type(compiled)(pullback_of(compiled.fun, n), (), (),
                                     compiled.assume_finite, compiled.cache_size)
    return p


def pullback_of(fun, n):
    """``(x_1..x_n, ct_1..) -> the gradients of x_1..x_n``: the pullback of ``fun``."""
    def pull(*args):
        xs, cts = args[:n], args[n:]
        _, fn = vjp(fun, *xs)
        g = fn(cts[0] if len(cts) == 1 else cts)
        return g if isinstance(g, tuple) else (g,)
    return pull


def call_differentiably(compiled, args):
    """The call of ``compiled`` with ``args`` recorded as one node, or None where it does
    not apply (Note [Differentiating a compiled function])."""
    if not args or not all(type(a) is Tensor for a in args):
        return None
    if not any(is_differentiable_dtype(a.dtype) and a._requires_grad for a in args):
        return None
    probe = compiled.program(*[a.detach() for a in args])
    leaves = probe.outputs
    if probe.out_spec.kind not in ("leaf", "tuple") or any(
            c.kind != "leaf" for c in probe.out_spec.children) or not all(
            hasattr(o, "dtype") and is_differentiable_dtype(o.dtype) for o in leaves):
        return None
    return _CompiledCall.apply(compiled, *args)
