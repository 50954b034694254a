"""A compiled function called with tensors that require grad, or under ``func.grad`` and
forward mode: one node whose forward, backward and jvp are compiled programs (Note
[Differentiating a compiled function]).

Note [Differentiating a compiled function]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
``compile(f)(x)`` with ``x`` requiring grad (grad mode on, no transform level visible), or
inside ``func.grad``/``vjp`` levels and forward mode's dual levels only (``grad(compile(f))``,
``jvp(compile(f))``, nested, in either order), with the arguments positional tensors and
the outputs tensors of floating dtypes, records one node: a custom Function whose forward
runs f's program on the plain values, whose backward runs the program of ``vjp(f)`` and
whose jvp the program of ``jvp(f)`` (each compiled too, once per signature; each computes
f's forward again, as ``jax.jit(jax.vjp)`` would without saved residuals). The levels
process the node as any custom Function (Note [Wrapper levels] in core/wrapper_level.py,
Note [Data levels] in core/data_level.py): a grad level runs the forward one level down and
records the node; a dual level calls its jvp. Every program is traced below all visible
levels, so no level lifts the tensors it makes. So ``.backward()``, ``autograd.grad``,
``func.grad`` and ``func.jvp`` through a compiled function run compiled programs
(``grad(compile(f))`` of a 100-step tanh chain on 16 values: 0.53 ms against 3.0 ms for
``grad(f)``), and their values are differentiable: a derivative of the backward or the jvp
calls that program with level values and runs it the same way, or as eager code.

Under a vmap, the call of a compiled function whose arguments the vmap batches runs the
program of ``vmap(f)`` (compiled once per choice of batched arguments) one level down on
the batched values, batch first, and batches its outputs (``call_batched``): as JAX's
batching rule of a jitted call. The node is a Function whose class has
``generate_vmap_rule``: under a vmap its forward, backward and jvp run once, on batched
values, and call compiled functions that run batched programs. So ``vmap(compile(f))``,
``jacrev``, ``jacfwd``, ``hessian`` and ``vmap(grad(...))`` of a compiled function run
compiled programs. A call none of whose arguments is a value of a visible level (jacfwd's
primal: a constant of the transform) runs its program below the levels (``call_below``).
Under a data level whose data has a form as tensors (a jet's Taylor coefficients, the
Forward Laplacian's gradient batch and Laplacian: the interpreter's ``pack`` and
``unpack``), a call whose arguments carry the level's data runs the program of ``f``
pushed through a new level of the same kind with the same parameters (``jet(f)`` of the
same order, ``laplacian``'s level of the same number of directions), compiled once per
choice of carried arguments: it takes the arguments and their data, and returns ``f``'s
outputs and theirs, which the call gives its outputs at the level (``call_at_data_level``).
So ``jet``, ``derivatives``, ``hessian_diag`` and ``laplacian`` of a compiled function run
compiled programs.

A random draw whose eager numbers depend on a vmap the program is not traced under (one
draw per element of every vmap with ``randomness="different"``), and a function that reads
a value of a level from its closure (Note [Tensors a derivative follows through a
constant] in functional/compiler.py), run as eager code; so does a compiled function under
a sparsity level.
"""

from __future__ import annotations

from ..core import levels as _levels
from ..core.data_level import DataInterpreter, data_of
from ..core.backend import is_differentiable_dtype
from ..core.dispatch import TENSOR_F
from ..core.function import Function
from ..core.grad_mode import STATE
from ..core.tensor import innermost_level
from ..forward_ad import _DUAL as DUAL_INTERPRETER
from ..core.tensor import Tensor
from .grad_level import _GRAD as GRAD_INTERPRETER
from .grad_level import GradTensor
from .pytree import tree_flatten, tree_unflatten
from .transforms import jvp, vjp
from .vmap import _VMAP as VMAP_INTERPRETER
from .vmap import BatchedTensor, vmap

__all__ = ["call_at_levels"]


class _CompiledCall(Function):
    """The node of a compiled function's call (Note [Differentiating a compiled
    function])."""

    # (under a vmap its forward, backward and jvp call compiled functions with batched
    # values, which run their batched programs: call_batched)
    generate_vmap_rule = True

    @staticmethod
    def vmap_loop(compiled, *xs):  # (how vmap's loop warning would name it)
        name = getattr(compiled, "__name__", "a function")
        return (f"the compiled function {name}",
                "a compiled function's node is recorded per element below a vmap")

    @staticmethod
    def forward(ctx, compiled, *xs):
        ctx.compiled = compiled
        ctx.save_for_backward(*xs)
        ctx.save_for_forward(*xs)
        plain = [x.detach() for x in xs]
        # (plain values: run below the levels shown only to refuse what the forward did not
        # receive, as its program reads nothing else; Note [Data levels below a Function] in
        # core/refusing.py)
        shown = _levels.visible_levels()
        out = _below(shown[0], lambda: compiled(*plain)) if shown and not _visible() else None
        if out is None:
            out = compiled(*plain)
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


    @staticmethod
    def jvp(ctx, compiled_tangent, *tangents):  # (the first input is the compiled function)
        xs = ctx.saved_tensors
        ts = tuple(t if t is not None else TENSOR_F.zeros_like(x) for t, x in zip(tangents, xs))
        out = _pushforward(ctx.compiled, len(xs))(*xs, *ts)
        return out if ctx.single or isinstance(out, tuple) else (out,)


def _pushforward(compiled, n):
    """The compiled pushforward (jvp) of ``compiled``'s function for ``n`` arguments."""
    return _derived(compiled, "_pushforwards", n, pushforward_of)


def _pullback(compiled, n):
    """The compiled pullback of ``compiled``'s function for ``n`` arguments."""
    return _derived(compiled, "_pullbacks", n, pullback_of)


def _derived(compiled, kind, n, of):
    """``compile(of(f, n))`` with ``compiled``'s settings, made once per ``n`` and kept on
    ``compiled`` (under ``kind``)."""
    made = compiled.__dict__.setdefault(kind, {})
    p = made.get(n)
    if p is None:
        p = made[n] = type(compiled)(of(compiled.fun, n), (), (), compiled.assume_finite,
                                     compiled.cache_size)
    return p


def pushforward_of(fun, n):
    """``(x_1..x_n, t_1..t_n) -> the tangent of fun's output``: the pushforward of ``fun``."""
    def push(*args):
        return jvp(fun, tuple(args[:n]), tuple(args[n:]))[1]
    return push


def pullback_of(fun, n):
    """``(x_1..x_n, ct_1..) -> the gradients of x_1..x_n``: the pullback of ``fun``."""
    def pull(*args):
        xs, cts = args[:n], args[n:]
        _, fn = vjp(fun, *xs)
        g = fn(cts[0] if len(cts) == 1 else cts)
        return g if isinstance(g, tuple) else (g,)
    return pull


def call_batched(compiled, args):
    """The call of ``compiled`` with ``args`` at the innermost visible level, a vmap's: the
    compiled program of ``vmap(f)`` run one level down on the batched values (batch first),
    its outputs batched at the level; or None where it does not apply (no argument batched
    there, or an argument that is not a tensor). Note [Differentiating a compiled
    function]."""
    level = innermost_level(args)
    if level is None or level.interpreter is not VMAP_INTERPRETER:
        return None
    dims = []
    values = []
    for a in args:
        if type(a) is BatchedTensor and a._level is level:
            dims.append(0)
            values.append(a._value)
        elif isinstance(a, Tensor):
            dims.append(None)
            values.append(a)
        else:
            return None
    if 0 not in dims:
        return None
    key = (tuple(dims), level.info.randomness)
    made = compiled.__dict__.setdefault("_batched", {})
    batched = made.get(key)
    if batched is None:
        batched = made[key] = type(compiled)(
            vmap(compiled.fun, in_dims=key[0], randomness=key[1]), (), (),
            compiled.assume_finite, compiled.cache_size)
    def run():
        if any(lv.depth > level.depth and lv.interpreter is VMAP_INTERPRETER
               for lv in _visible()) and _draws(batched.program(*values)):
            return None  # (a vmap inside this one, which eager code's draws see)
        return batched(*values)

    out = _below(level, run)
    if out is None:
        return None
    leaves, spec = tree_flatten(out)
    if not all(isinstance(o, Tensor) for o in leaves):
        return None
    return tree_unflatten(spec, [BatchedTensor._wrap(o, level) for o in leaves])


def call_at_data_level(compiled, args):
    """The call of ``compiled`` with ``args`` at the innermost visible level, a data level
    whose data has a form as tensors: the compiled program of ``f`` through a new level of
    that kind, run one level down on the arguments and their data; its outputs get their
    data at the level. None where it does not apply (Note [Differentiating a compiled
    function])."""
    level = innermost_level(args)
    if level is None or level.received is not None or \
            not isinstance(level.interpreter, DataInterpreter) or \
            not all(isinstance(a, Tensor) for a in args):
        return None
    interpreter, info = level.interpreter, level.info
    params = info.params()
    if params is None:
        return None
    packs = []
    with _levels.below(level):
        for a in args:
            d = data_of(a, level)
            p = () if d is None else interpreter.pack(d)
            if p is None or not all(isinstance(t, Tensor) for t in p):
                return None
            packs.append(p)
    if not any(packs):
        return None
    key = (interpreter, type(info), params, tuple(len(p) for p in packs))
    made = compiled.__dict__.setdefault("_through_levels", {})
    through = made.get(key)
    if through is None:
        through = made[key] = type(compiled)(
            through_level(compiled.fun, interpreter, type(info), params, key[3]), (), (),
            compiled.assume_finite, compiled.cache_size)
    flat = list(args) + [t for p in packs for t in p]

    def run():
        # (a program that reads a value of a level from its closure runs as eager code at
        # the levels; values of a level outside: the call at that level decides)
        if all(type(t) is Tensor for t in flat) and through.program(*flat).reads_live:
            return None
        return through(*flat)

    got = _below(level, run)
    if got is None:
        return None
    out, packed = got
    leaves = tree_flatten(out)[0]
    who = getattr(compiled, "__name__", "a compiled function")
    for o, p in zip(leaves, packed):
        if p:
            interpreter.attach(level, o, interpreter.unpack(p), who)
    return out


def through_level(fun, interpreter, info_type, params, counts):
    """``(args, their data's tensors) -> (fun's output, its leaves' data's tensors)``: ``fun``
    run at a new level of ``interpreter`` (its info ``info_type(*params)``), the arguments
    carrying their data there (``counts[i]`` tensors for argument i, none: no data)."""
    n = len(counts)

    def through(*flat):
        lv = interpreter.enter(info_type(*params))
        try:
            xs = []
            k = n
            for a, c in zip(flat[:n], counts):
                if c:
                    a = interpreter.carrier(lv, a, interpreter.unpack(flat[k:k + c]))
                    k += c
                xs.append(a)
            out = fun(*xs)
            packed = []
            for o in tree_flatten(out)[0]:
                d = data_of(o, lv)
                with _levels.below(lv):
                    packed.append(() if d is None else interpreter.pack(d))
        finally:
            interpreter.leave(lv)
        return out, tuple(packed)
    return through


def call_below(compiled, args):
    """The call of ``compiled`` with ``args``, none a value of a visible level (a
    constant of a transform: ``jacfwd``'s primal, a Jacobian's basis), run as its program
    below every visible level; or None where it does not apply: an argument of a level, or
    one that requires grad; a program that reads a value of a level (Note [Tensors a
    derivative follows through a constant] in functional/compiler.py), or draws random
    numbers under a vmap (eager code draws per batch element)."""
    visible = _visible()
    if not visible or innermost_level(args) is not None:
        return None
    if STATE.grad_enabled and any(isinstance(a, Tensor) and a._requires_grad for a in args):
        return None
    def run():
        program = compiled.program(*args)
        if program.reads_live or (_draws(program) and any(
                lv.interpreter is VMAP_INTERPRETER for lv in visible)):
            return None
        return compiled(*args)

    return _below(visible[0], run)


def call_differentiably(compiled, args):
    """The call of ``compiled`` with ``args`` recorded as one node, or None where it does
    not apply (Note [Differentiating a compiled function])."""
    if not args or not all(isinstance(a, Tensor) for a in args):
        return None
    if _levels.VISIBLE[0]:
        # under func.grad/vjp, dual and vmap levels only: a grad level records the node and
        # runs it one level down, a dual level calls its jvp, a vmap runs it once on the
        # batch (generate_vmap_rule); under a Taylor or sparsity level it runs as eager code
        if any(lv.interpreter is not GRAD_INTERPRETER and lv.interpreter is not
               DUAL_INTERPRETER and lv.interpreter is not VMAP_INTERPRETER
               for lv in _visible()):
            return None
        if not any(isinstance(a, GradTensor) or (a._meta is not None and a._meta.level_data)
                   for a in args):
            return None
    elif not any(is_differentiable_dtype(a.dtype) and a._requires_grad for a in args):
        return None
    plain = [_plain(a) for a in args]
    if any(p is None for p in plain):
        return None
    visible = _visible()
    # (traced below every level: none lifts the tensors the function makes)
    probe = _below(visible[0] if visible else None, lambda: compiled.program(*plain))
    if probe is None or probe.reads_live:
        return None
    leaves = probe.outputs
    if not leaves or not all(hasattr(o, "dtype") and is_differentiable_dtype(o.dtype)
                             for o in leaves):
        return None
    spec = probe.out_spec
    if spec.kind == "leaf" or (spec.kind == "tuple" and all(c.kind == "leaf"
                                                          for c in spec.children)):
        return _CompiledCall.apply(compiled, *args)
    # (another structure: the node's function returns its leaves, a tuple)
    flat = compiled.__dict__.get("_leaves")
    if flat is None:
        flat = compiled.__dict__["_leaves"] = type(compiled)(
            _leaves_of(compiled.fun), (), (), compiled.assume_finite, compiled.cache_size)
    out = _CompiledCall.apply(flat, *args)
    return tree_unflatten(spec, list(out) if type(out) is tuple else [out])


def _leaves_of(fun):
    """``fun`` returning the tuple of its output's leaves."""
    def leaves(*args):
        return tuple(tree_flatten(fun(*args))[0])
    return leaves


def call_at_levels(compiled, args):
    """The call of ``compiled`` with positional ``args`` inside transforms or with arguments
    that require grad, as a compiled program: batched under a vmap, through a data level of
    the same kind under a jet or a Forward Laplacian, one node under grad and dual levels,
    below the levels where no argument is theirs; or None: then the function runs as eager
    code (Note [Differentiating a compiled function])."""
    levels = _levels.VISIBLE[0]
    out = call_batched(compiled, args) if levels else None
    if out is None and levels:
        out = call_at_data_level(compiled, args)
    if out is None:
        out = call_differentiably(compiled, args)
    if out is None and levels:
        out = call_below(compiled, args)
    return out


def _below(level, run):
    """``run()`` with ``level`` and the levels inside it hidden (as it is for None); None
    where the function reads a value of a hidden level (Note [Tensors a derivative follows
    through a constant] in functional/compiler.py)."""
    try:
        if level is None:
            return run()
        with _levels.below(level):
            return run()
    except _levels.HiddenValueError:
        return None


def _draws(program):
    """Whether the program draws random numbers."""
    return any(s.kind == "random" for s in program.traced)


def _visible():
    """This thread's visible levels, outermost first, less those shown only to refuse their
    values (Note [Data levels below a Function] in core/refusing.py): hidden ones."""
    return [lv for lv in _levels.visible_levels() if lv.received is None]


def _plain(a):
    """The plain tensor under the grad levels' values ``a`` wraps (detached; a batch
    element's where a vmap batches it: the program's outputs are probed), or None."""
    while type(a) is not Tensor:
        if isinstance(a, GradTensor):
            a = a._value
        elif type(a) is BatchedTensor:
            a = a._value[0]
        else:
            return None
    return a.detach()
