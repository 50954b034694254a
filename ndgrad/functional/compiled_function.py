"""A compiled function called with tensors that require grad, or under ``func.grad``: one
node whose forward and backward are compiled programs (Note [Differentiating a compiled
function]).

Note [Differentiating a compiled function]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
``compile(f)(x)`` with ``x`` requiring grad (grad mode on, no transform level visible), or
inside ``func.grad``/``vjp`` levels only (``grad(compile(f))``, nested too), with the
arguments positional tensors and the outputs tensors of floating dtypes, records one node: a
custom Function whose forward runs f's program on the plain values and whose backward runs
the program of ``vjp(f)`` (compiled too, once per signature: it computes f's forward again
with its pullback, as ``jax.jit(jax.vjp)`` would without saved residuals), given the saved
arguments and the cotangents (zeros for the outputs that got none). A grad level processes
the node as any custom Function (Note [Wrapper levels] in core/wrapper_level.py): it runs
the forward one level down and records the node at the level. So ``.backward()``,
``autograd.grad`` and ``func.grad`` through a compiled function run compiled programs both
ways (``grad(compile(f))`` of a 100-step tanh chain on 16 values: 0.53 ms against 3.0 ms for
``grad(f)``), and the backward's own values are differentiable: with ``create_graph`` (or a
grad level outside) the backward's program is called with level values and runs as eager
code, recording its graph (higher order). Under a vmap or a data level (a dual level's
tangent, a jet) a compiled function runs as ``f`` itself, as eager code: a vmap would run
the node once per batch element, and a tangent would need the node's jvp.
"""

from __future__ import annotations

from ..core import levels as _levels
from ..core.backend import is_differentiable_dtype
from ..core.dispatch import TENSOR_F
from ..core.function import Function
from ..core.tensor import Tensor
from .grad_level import _GRAD as GRAD_INTERPRETER
from .grad_level import GradTensor
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
    if not args or not all(isinstance(a, Tensor) for a in args):
        return None
    if _levels.VISIBLE[0]:
        # under func.grad/vjp levels only: each records the node, and runs the program one
        # level down on plain values; under vmap or a data level (a tangent) it runs as
        # eager code (a vmap would loop over the node, a tangent needs the node's jvp)
        if any(lv.interpreter is not GRAD_INTERPRETER for lv in _levels.visible_levels()):
            return None
        if not any(isinstance(a, GradTensor) and a._level.interpreter is GRAD_INTERPRETER
                   for a in args):
            return None
    elif not any(is_differentiable_dtype(a.dtype) and a._requires_grad for a in args):
        return None
    plain = [_plain(a) for a in args]
    if any(p is None for p in plain):
        return None
    probe = compiled.program(*plain)
    leaves = probe.outputs
    if probe.out_spec.kind not in ("leaf", "tuple") or any(
            c.kind != "leaf" for c in probe.out_spec.children) or not all(
            hasattr(o, "dtype") and is_differentiable_dtype(o.dtype) for o in leaves):
        return None
    return _CompiledCall.apply(compiled, *args)


def _plain(a):
    """The plain tensor under the grad levels' values ``a`` wraps (detached), or None."""
    while type(a) is not Tensor:
        if not isinstance(a, GradTensor):
            return None
        a = a._value
    return a.detach()
