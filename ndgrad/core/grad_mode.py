"""Grad modes: whether operations are recorded for reverse mode.

The state is thread-local (each thread starts with grad mode on), read once per operation by
:func:`ndgrad.core.dispatch.apply`. Every mode is usable as a context manager and as a
decorator.
"""

from __future__ import annotations

import functools
import inspect
import threading

__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "inference_mode",
           "is_grad_enabled", "is_inference_mode_enabled", "PROFILER", "RUN_HERE", "current_pass"]


class _State(threading.local):
    """Per-thread grad mode. Class attributes are each thread's defaults."""

    _grad = True
    inference = False
    saved_hooks = ()  # (pack, unpack) pairs, innermost last (Note [Saved-tensor hooks])
    saved_hooks_disabled = None  # the message to raise when hooks are set, or None
    backward_passes = ()  # the engine's passes running in this thread, innermost last

    @property
    def grad_enabled(self):
        return self._grad

    @grad_enabled.setter
    def grad_enabled(self, value):
        value = bool(value)
        if value != self._grad:
            with _LOCK:
                GRAD_DISABLED_THREADS[0] += -1 if value else 1
            self._grad = value


# Note [Grad mode on the hot path]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Reading a thread-local costs more than the rest of a small op's bookkeeping. So two global
# counters say whether any thread has grad mode off (GRAD_DISABLED_THREADS) or is inside
# inference_mode (INFERENCE_BLOCKS); while they are 0 (the common case) `apply` skips the
# thread-local reads: `not GRAD_DISABLED_THREADS[0] or STATE.grad_enabled`. The counters
# change under a lock, whenever a thread's mode changes; they are read without one.
GRAD_DISABLED_THREADS = [0]
INFERENCE_BLOCKS = [0]
# threads with saved-tensor hooks set, so that `record` reads the thread-local only then
SAVED_HOOK_THREADS = [0]
_LOCK = threading.Lock()
STATE = _State()


def current_pass():
    """The backward pass running in this thread (the innermost), or None."""
    passes = STATE.backward_passes
    return passes[-1] if passes else None


# Note [Profiling]
# ~~~~~~~~~~~~~~~~
# ndgrad.autograd.profiler (profile, record_function, emit_nvtx) sees every primitive call,
# every backward node and every custom Function call through one slot, PROFILER[0]: None
# while nothing observes (the common case), else the profiler's recorder, put there and taken
# away by the profiler at runtime (core never imports it). What the readers pay while it is
# None:
# * dispatch.apply: this one list read per operation, its first statement. While set,
#   ``recorder(op, args, params)`` runs the op itself (calling ``apply`` again: for that
#   call the recorder answers RUN_HERE, and ``apply`` goes on) and returns its result.
# * engine._run: one read per backward pass. While set, every node takes the engine's general
#   path, as in anomaly mode, and ``recorder.node(_general_node, node, grads_out, pass_)``
#   runs and times it; the common path is untouched.
# * Function.apply: one read per call; while set, ``recorder.function(cls, run, args,
#   kwargs)`` runs and times it.
# What the read in apply costs, measured on one pinned core: on the peer benchmark's W1 (tiny
# chain, forward and backward) 4.48-4.56 us/op with it against 4.50-4.53 without it (the same
# tree, alternated): within the noise; alone, on a no-grad `tanh` of 16 values, about 7 ns of
# 800. It is a truth test of a list item (no `is not None`: two instructions fewer).
PROFILER = [None]
RUN_HERE = object()  # the recorder's answer to its own call of `apply`: run the op here


def is_grad_enabled() -> bool:
    """Whether operations are currently recorded for differentiation.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.is_grad_enabled()
    True
    >>> with ndgrad.no_grad():
    ...     ndgrad.is_grad_enabled()
    False
    """
    return STATE.grad_enabled


def is_inference_mode_enabled() -> bool:
    """Whether an :class:`inference_mode` block is active in this thread."""
    return STATE.inference


class _Mode:
    """Base of the grad-mode context managers; subclasses define ``_enter_state``.

    As a decorator, a mode wraps each call in a fresh instance of itself; a generator function
    runs each of its steps in the mode, and its caller runs in its own mode between steps (as
    PyTorch's decorators do).
    """

    def __call__(self, fn):
        cls, mode_args = self.__class__, self._args()
        if inspect.isgeneratorfunction(fn):
            @functools.wraps(fn)
            def generator_wrapper(*args, **kwargs):
                gen = fn(*args, **kwargs)
                try:
                    with cls(*mode_args):
                        response = gen.send(None)
                    while True:
                        try:
                            request = yield response
                        except GeneratorExit:
                            with cls(*mode_args):
                                gen.close()
                            raise
                        except BaseException as exc:
                            with cls(*mode_args):
                                response = gen.throw(exc)
                        else:
                            with cls(*mode_args):
                                response = gen.send(request)
                except StopIteration as stop:
                    return stop.value
            return generator_wrapper

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with cls(*mode_args):
                return fn(*args, **kwargs)
        return wrapper

    def _args(self):
        return ()

    def __enter__(self):
        self._prev = (STATE.grad_enabled, STATE.inference)
        self._enter_state()
        return self

    def __exit__(self, *exc):
        STATE.grad_enabled, STATE.inference = self._prev
        return False


class _NoParamMode(_Mode):
    """A mode without arguments, also usable as a bare decorator (``@ndgrad.no_grad``)."""

    def __new__(cls, orig_func=None):
        if orig_func is None:
            return super().__new__(cls)
        if not callable(orig_func):
            raise TypeError(f"{cls.__name__}() takes no arguments (got {orig_func!r}); use "
                            f"`with ndgrad.{cls.__name__}():` or `@ndgrad.{cls.__name__}`")
        return cls()(orig_func)


class no_grad(_NoParamMode):
    """Disable recording: results of operations do not require grad.

    A context manager, and a decorator with or without parentheses.

    Examples
    --------
    >>> import ndgrad
    >>> x = ndgrad.tensor([1.0], requires_grad=True)
    >>> with ndgrad.no_grad():
    ...     y = x * 2
    >>> y.requires_grad
    False
    >>> @ndgrad.no_grad
    ... def double(t):
    ...     return t * 2
    >>> double(x).requires_grad
    False
    """

    def _enter_state(self):
        STATE.grad_enabled = False


class enable_grad(_NoParamMode):
    """Enable recording inside a :class:`no_grad` block.

    Examples
    --------
    >>> import ndgrad
    >>> x = ndgrad.tensor([1.0], requires_grad=True)
    >>> with ndgrad.no_grad():
    ...     with ndgrad.enable_grad():
    ...         y = x * 2
    >>> y.requires_grad
    True
    """

    def _enter_state(self):
        STATE.grad_enabled = True


class set_grad_enabled(_Mode):
    """Set grad mode to ``mode``; also a context manager restoring the previous mode.

    Called as a plain function it takes effect immediately, like PyTorch's.

    Examples
    --------
    >>> import ndgrad
    >>> with ndgrad.set_grad_enabled(False):
    ...     ndgrad.is_grad_enabled()
    False
    >>> ndgrad.is_grad_enabled()
    True
    """

    def __init__(self, mode: bool):
        self.mode = bool(mode)
        self._prev = (STATE.grad_enabled, STATE.inference)
        STATE.grad_enabled = self.mode

    def _args(self):
        return (self.mode,)

    def __call__(self, fn):
        # Used as a decorator: undo the immediate effect of construction.
        STATE.grad_enabled, STATE.inference = self._prev
        return super().__call__(fn)

    def __enter__(self):
        return self  # already applied in __init__, `_prev` saved there

    def _enter_state(self):  # pragma: no cover - __enter__ is overridden
        STATE.grad_enabled = self.mode


class inference_mode(_Mode):
    """Like :class:`no_grad`, and tensors made inside are inference tensors.

    ``inference_mode(False)`` is a no-op, as in PyTorch.

    Examples
    --------
    >>> import ndgrad
    >>> x = ndgrad.tensor([1.0], requires_grad=True)
    >>> with ndgrad.inference_mode():
    ...     y = x * 2
    >>> y.requires_grad
    False
    """

    def __new__(cls, mode=True):
        if callable(mode):  # bare decorator: @ndgrad.inference_mode
            return cls()(mode)
        return super().__new__(cls)

    def __init__(self, mode: bool = True):
        self.mode = bool(mode)

    def _args(self):
        return (self.mode,)

    def _enter_state(self):
        if self.mode:
            STATE.grad_enabled = False
            STATE.inference = True
            with _LOCK:
                INFERENCE_BLOCKS[0] += 1

    def __exit__(self, *exc):
        if self.mode:
            with _LOCK:
                INFERENCE_BLOCKS[0] -= 1
        return super().__exit__(*exc)
