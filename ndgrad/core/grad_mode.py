"""Grad modes: whether operations are recorded for reverse mode.

The state is thread-local (each thread starts with grad mode on), read once per operation by
:func:`ndgrad.core.dispatch.apply`. Every mode is usable as a context manager and as a
decorator.
"""

from __future__ import annotations

import functools
import threading

__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "inference_mode",
           "is_grad_enabled", "is_inference_mode_enabled"]


class _State(threading.local):
    # Class attributes are the per-thread defaults.
    grad_enabled = True
    inference = False


STATE = _State()


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
    """Base of the grad-mode context managers; subclasses define ``_enter_state``."""

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.__class__(*self._args()):
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


class no_grad(_Mode):
    """Disable recording: results of operations do not require grad.

    Examples
    --------
    >>> import ndgrad
    >>> x = ndgrad.tensor([1.0], requires_grad=True)
    >>> with ndgrad.no_grad():
    ...     y = x * 2
    >>> y.requires_grad
    False
    """

    def _enter_state(self):
        STATE.grad_enabled = False


class enable_grad(_Mode):
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

    def __init__(self, mode: bool = True):
        self.mode = bool(mode)

    def _args(self):
        return (self.mode,)

    def _enter_state(self):
        if self.mode:
            STATE.grad_enabled = False
            STATE.inference = True
