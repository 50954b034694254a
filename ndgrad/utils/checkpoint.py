"""Activation checkpointing: trading compute for memory, as ``torch.utils.checkpoint``.

``checkpoint(function, *args)`` runs ``function`` without keeping the values its operations
save for backward; backward recomputes them by running ``function`` again on the same inputs.
``checkpoint_sequential`` does that for the segments of a chain of functions, and
``ndgrad.func.checkpoint`` (JAX's ``remat``) makes a function that checkpoints itself.

Note [How checkpointing recomputes]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
The non-reentrant form (the default, as in PyTorch) is built on saved-tensor hooks (Note
[Saved-tensor hooks] in core/saved.py). During the forward, the pack hook keeps, instead of
each saved tensor, a handle: its position k in the order of saving, and its shape, dtype and
device. The first unpack of a backward pass runs ``function`` again, with grad mode on, on
fresh leaves that share the inputs' data and requires_grad (so the same ops record and save
the same values, in the same order), and the random generators put back to where they were
for the forward; a pack hook collects the saved values of that run, checks them against the
handles (a different shape, dtype or device is an error: the function is not
deterministic), and the handle's unpack returns value k. The recomputed values are dropped
when the pass ends; the recomputed graph is never used: unpacking gives each value its place
in the original graph, so ``create_graph=True`` (double backward), ``autograd.grad`` with
``inputs=``, nested checkpoints and hooks all work as without checkpointing. What is kept
per checkpoint: its inputs (to run it again) and its outputs; the handles say so
(``_Frame._kept_for_backward``), so ``memory_report`` counts the inputs.

Note [A backward inside a checkpoint]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
A checkpointed function may itself run a backward pass (``autograd.grad(..., create_graph=
True)``: a gradient penalty, a physics-informed residual), as PyTorch's non-reentrant form
allows. That pass unpacks handles while the forward is still running: the first unpack of
the pass recomputes the function as above, up to where it is (only the values saved so far
are compared with the forward's), and the recomputation's own backward pass reads the
values it saves as they are (its hooks keep each value and hand it back). It raised an
internal AssertionError ("a recomputed value was unpacked"). The reentrant form runs the
function without grad, as PyTorch's does, so a backward inside it finds nothing recorded.

Note [Checkpoints under transforms]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
Inside an ``ndgrad.func`` transform of the calling thread (a visible level: ``grad``, ``vjp``,
``jvp``, ``jacrev``, ``jacfwd``, ``hessian``, ``vmap``, ``jet``, the operators, a dual level
of ``forward_ad``), ``checkpoint`` in both forms is the plain call ``function(*args)``: the
transforms see every operation and save their values as usual, so every transform and every
composition of them gives the derivatives of ``function``, also of tensors it captures
(a transform's own values included). The memory saving then applies to ``.backward()`` and
``autograd.grad`` outside transforms only. (PyTorch refuses both forms under ``torch.func``:
saved-tensor hooks are disabled there, and its reentrant checkpoint is a Function without
``setup_context``.) Neither form can do better there:

* the non-reentrant form's hooks see only the values saved at the bottom, never a level's;
* the reentrant form is a custom Function, which a transform runs as a primitive one level
  down (Note [Functions under transforms] in core/function.py). Its backward ran the
  function again on fresh leaves copying the *bottom* tensors' ``requires_grad``: under
  ``func.grad`` the tensor one level down does not require grad (only the level's value
  does), so the rerun recorded nothing and the gradient was zero, silently. Forward-mode
  transforms need a ``jvp`` rule it cannot have, and a value of the level captured by the
  function would reach operations below its level (an error).

A reentrant checkpoint none of whose tensor inputs requires grad would have no edge in the
graph: its outputs would not require grad, and a tensor that ``function`` captures and that
requires grad (a parameter) would get no gradient from it, silently (PyTorch warns "None of
the inputs have requires_grad=True"). It runs as the non-reentrant form instead, which
follows captured tensors and keeps the same memory saving.
"""

from __future__ import annotations

import functools

from ..autograd.graph import saved_tensors_hooks
from ..core import levels
from ..core.backend import _CUDA, NUMPY
from ..core.backward import backward as _run_backward
from ..core.engine import current_pass, queue_callback
from ..core.function import Function
from ..core.grad_mode import STATE, enable_grad, no_grad
from ..core.tensor import Tensor, _new

__all__ = ["checkpoint", "checkpoint_sequential"]


def _rng_snapshot():
    backends = [NUMPY] + ([_CUDA["backend"]] if _CUDA["backend"] is not None else [])
    return [(B, B.rng_state()) for B in backends]


class _restored_rng:  # noqa: N801 - a context manager
    """Runs its block with the generators at ``snapshot``, then puts the current ones back."""

    def __init__(self, snapshot):
        self.snapshot = snapshot

    def __enter__(self):
        if self.snapshot is not None:
            self.current = [(B, B.rng_state()) for B, _ in self.snapshot]
            for B, state in self.snapshot:
                B.set_rng_state(state)

    def __exit__(self, *exc):
        if self.snapshot is not None:
            for B, state in self.current:
                B.set_rng_state(state)


def _fresh_inputs(args):
    """Leaves sharing the data (and requires_grad) of the tensor arguments."""
    out = []
    for a in args:
        if type(a) is Tensor:
            a = _new(a._data, a._requires_grad)
        out.append(a)
    return out


class _Frame:
    """One call of a non-reentrant checkpoint (Note [How checkpointing recomputes])."""

    def __init__(self, function, args, kwargs, rng, check):
        self.function = function
        self.args = args
        self.kwargs = kwargs
        self.rng = rng
        self.check = check
        self.metas = []      # (shape, dtype, device) of each value the forward saved
        self.values = {}     # id(backward pass) -> the recomputed saved values
        self.done = False    # the forward returned (before: a backward inside it unpacks)

    def pack(self, t):
        self.metas.append((tuple(t.shape), t.dtype, t.device))
        return (self, len(self.metas) - 1)

    def _kept_for_backward(self):
        """``(label, value)`` for what this checkpoint keeps to run its function again, its
        arguments: what the handles its nodes hold keep alive, for ``memory_report``."""
        kept = [(f"checkpoint input {k}", a) for k, a in enumerate(self.args)]
        kept.extend((f"checkpoint input {key}", a) for key, a in self.kwargs.items())
        return kept

    @staticmethod
    def unpack(handle):
        frame, k = handle
        return frame.value(k)

    def value(self, k):
        p = current_pass()
        key = id(p)
        values = self.values.get(key)
        if values is None:
            values = self.recompute()
            if p is not None:
                self.values[key] = values
                queue_callback(lambda: self.values.pop(key, None))
        return values[k]

    def recompute(self):
        values = []

        def keep(t):
            values.append(_new(t._data, False))
            return t  # (a backward pass inside the function reads it back: Note [A backward
            #            inside a checkpoint])

        with enable_grad(), _restored_rng(self.rng), saved_tensors_hooks(keep, _same):
            self.function(*_fresh_inputs(self.args), **self.kwargs)
        if self.check:
            self._check(values if self.done else values[:len(self.metas)])
        elif len(values) < len(self.metas):
            raise RuntimeError(self._mismatch(f"it saved {len(values)} tensors, the forward "
                                              f"saved {len(self.metas)}"))
        return values

    def _check(self, values):
        if len(values) != len(self.metas):
            raise RuntimeError(self._mismatch(
                f"it saved {len(values)} tensors for backward, the forward saved "
                f"{len(self.metas)}"))
        for k, (v, (shape, dtype, device)) in enumerate(zip(values, self.metas)):
            got = (tuple(v.shape), v.dtype, v.device)
            if got != (shape, dtype, device):
                raise RuntimeError(self._mismatch(
                    f"saved tensor {k} has shape {list(got[0])}, dtype {got[1]} and device "
                    f"{got[2]}; in the forward it had shape {list(shape)}, dtype {dtype} and "
                    f"device {device}"))

    def _mismatch(self, what):
        name = getattr(self.function, "__qualname__", repr(self.function))
        return (f"checkpoint: recomputing {name} in backward did not repeat its forward: "
                f"{what}. A checkpointed function must do the same operations when run again "
                "on the same inputs (random ops are replayed with preserve_rng_state=True; "
                "branches on global state are not). determinism_check='none' skips this "
                "check.")


def _same(t):
    return t


def checkpoint(function, *args, use_reentrant=False, preserve_rng_state=True,
               determinism_check="default", **kwargs):
    """Run ``function(*args, **kwargs)`` without keeping what its operations save for
    backward; backward recomputes it (Note [How checkpointing recomputes]).

    Parameters
    ----------
    function : callable
        Returns a Tensor or a tuple of values. It must do the same operations when run again
        on the same inputs.
    use_reentrant : bool
        False (the default): hooks-based, works with ``autograd.grad``, ``inputs=``,
        ``create_graph=True``, keyword arguments and nested checkpoints. True: PyTorch's
        older form, a custom Function whose backward runs a backward of its own; it supports
        only ``.backward()``-style accumulation, positional arguments and first order. Inside
        an ``ndgrad.func`` transform both forms are the plain call, so every transform gives
        the derivatives of ``function`` (Note [Checkpoints under transforms]).
    preserve_rng_state : bool
        Replay the random generators in the recomputation, so that random ops repeat
        their draws.
    determinism_check : {"default", "none"}
        "default" compares the shape, dtype and device of every recomputed saved value with
        the forward's and raises on a difference.

    Examples
    --------
    >>> import ndgrad
    >>> from ndgrad.utils.checkpoint import checkpoint
    >>> x = ndgrad.tensor([0.5, 1.0], requires_grad=True)
    >>> y = checkpoint(lambda v: ndgrad.tanh(ndgrad.sin(v) * 2.0), x)
    >>> y.sum().backward()
    >>> x.grad
    tensor([0.78423443, 0.13946158])
    """
    if determinism_check not in ("default", "none"):
        raise ValueError(f"checkpoint: determinism_check must be 'default' or 'none', got "
                         f"{determinism_check!r}")
    if not callable(function):
        raise TypeError(f"checkpoint: function must be callable, got {type(function).__name__}")
    if use_reentrant and kwargs:
        raise ValueError("checkpoint(use_reentrant=True) takes positional arguments only "
                         f"(got {sorted(kwargs)}); use use_reentrant=False")
    if levels.VISIBLE[0] and levels.visible_levels():
        # inside an ndgrad.func transform in this thread, both forms are the plain call
        # (Note [Checkpoints under transforms]). (VISIBLE counts the levels of every thread;
        # another thread's transform changes nothing here: Note [Levels per thread].)
        return function(*args, **kwargs)
    rng = _rng_snapshot() if preserve_rng_state else None
    if use_reentrant and any(isinstance(a, Tensor) and a._requires_grad for a in args):
        return _Reentrant.apply(function, rng, *args)
    # (a reentrant checkpoint of no input that requires grad goes on as the non-reentrant
    # form: Note [Checkpoints under transforms], its last paragraph)
    if not STATE.grad_enabled:  # nothing is recorded: the plain call is right
        return function(*args, **kwargs)
    frame = _Frame(function, args, kwargs, rng, determinism_check == "default")
    with saved_tensors_hooks(frame.pack, frame.unpack):
        out = function(*args, **kwargs)
    frame.done = True
    return out


class _Reentrant(Function):
    """PyTorch's reentrant checkpoint: the forward runs without grad; the backward runs the
    function again with grad and a backward pass of its own."""

    @staticmethod
    def vmap_loop(*args):  # (how vmap's loop warning names it)
        return ("ndgrad.utils.checkpoint.checkpoint(use_reentrant=True)",
                "its backward runs the function again in a backward pass of its own "
                "(use_reentrant=False is batched as any other computation)")

    @staticmethod
    def forward(ctx, function, rng, *args):
        ctx.function = function
        ctx.rng = rng
        ctx.tensor_pos = [k for k, a in enumerate(args) if isinstance(a, Tensor)]
        ctx.others = args
        ctx.save_for_backward(*(args[k] for k in ctx.tensor_pos))
        with no_grad():
            return function(*args)

    @staticmethod
    def backward(ctx, *grads):
        args = list(ctx.others)
        for k, t in zip(ctx.tensor_pos, ctx.saved_tensors):
            args[k] = t
        inputs = _fresh_inputs(args)
        with enable_grad(), _restored_rng(ctx.rng):
            outputs = ctx.function(*inputs)
        outputs = outputs if isinstance(outputs, tuple) else (outputs,)
        pairs = [(o, g) for o, g in zip(outputs, grads)
                 if isinstance(o, Tensor) and o.requires_grad and g is not None]
        if pairs:
            _run_backward([o for o, _ in pairs], [g for _, g in pairs])
        return (None, None) + tuple(a.grad if isinstance(a, Tensor) else None for a in inputs)


def checkpoint_sequential(functions, segments, input, use_reentrant=False, **kwargs):  # noqa: A002
    """Run the chain ``functions`` (a sequence of one-argument callables) on ``input`` in
    ``segments`` checkpointed segments: only each segment's input is kept, and each segment
    is recomputed in backward. The last segment runs without checkpointing (its values are
    needed at once), as in PyTorch.

    Examples
    --------
    >>> import ndgrad
    >>> from ndgrad.utils.checkpoint import checkpoint_sequential
    >>> x = ndgrad.tensor([0.5, 1.0], requires_grad=True)
    >>> y = checkpoint_sequential([ndgrad.sin, ndgrad.tanh, ndgrad.exp], 2, x)
    >>> y.sum().backward()
    >>> x.grad.shape
    (2,)
    """
    functions = list(functions)
    segments = int(segments)
    if not 1 <= segments:
        raise ValueError(f"checkpoint_sequential: segments must be at least 1, got {segments}")
    if not functions:
        raise ValueError("checkpoint_sequential: functions is empty")
    size = -(-len(functions) // segments)  # ceil: each segment has `size` functions or fewer
    bounds = [(k, min(k + size, len(functions))) for k in range(0, len(functions), size)]

    def run(lo, hi):
        def segment(v):
            for f in functions[lo:hi]:
                v = f(v)
            return v
        return segment

    for lo, hi in bounds[:-1]:
        input = checkpoint(run(lo, hi), input, use_reentrant=use_reentrant, **kwargs)  # noqa: A001
    lo, hi = bounds[-1]
    return run(lo, hi)(input)


def checkpointed(function, **options):
    """``function`` made to checkpoint itself on every call (``ndgrad.func.checkpoint``,
    JAX's ``remat``): ``checkpointed(f)(*args)`` is ``checkpoint(f, *args, **options)``."""
    @functools.wraps(function)
    def wrapped(*args, **kwargs):
        return checkpoint(function, *args, **options, **kwargs)
    return wrapped
