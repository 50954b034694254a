"""``ndgrad.autograd.grad_mode``: ``torch.autograd.grad_mode``'s names.

``no_grad``, ``enable_grad``, ``set_grad_enabled`` and ``inference_mode`` are the very objects
``ndgrad`` and ``ndgrad.autograd`` export; :class:`set_multithreading_enabled` (and
:func:`is_multithreading_enabled`, which ``torch.autograd`` exports) live here.

ndgrad's backward pass always runs on the thread that started it, as PyTorch's does when no
accelerator's worker threads are involved: there are no worker threads to turn on or off, so
``set_multithreading_enabled`` only records the setting (per thread, as PyTorch's) for
:func:`is_multithreading_enabled` to report; gradients and where they are computed are the
same either way.
"""

from __future__ import annotations

import threading

from ..core.grad_mode import enable_grad, inference_mode, no_grad, set_grad_enabled

__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "inference_mode",
           "set_multithreading_enabled", "is_multithreading_enabled"]


class _Setting(threading.local):
    enabled = True  # each thread's default, as PyTorch's


_SETTING = _Setting()


def is_multithreading_enabled():
    """Whether multithreaded backward is enabled in this thread (True unless
    :class:`set_multithreading_enabled` turned it off).

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.autograd.is_multithreading_enabled()
    True
    """
    return _SETTING.enabled


class set_multithreading_enabled:
    """Enable or disable multithreaded backward in this thread, at once when called, and
    until the ``with`` block ends when used as a context manager (as PyTorch's).

    ndgrad's backward pass always runs on the calling thread (module docstring): the setting
    is recorded for :func:`is_multithreading_enabled` and changes nothing else.

    Parameters
    ----------
    mode : bool
        True (the default setting) to enable, False to disable.

    Examples
    --------
    >>> import ndgrad
    >>> with ndgrad.autograd.set_multithreading_enabled(False):
    ...     ndgrad.autograd.is_multithreading_enabled()
    False
    >>> ndgrad.autograd.is_multithreading_enabled()
    True
    """

    def __init__(self, mode):
        if not isinstance(mode, bool):
            raise TypeError("set_multithreading_enabled(mode) takes a bool, got "
                            f"{type(mode).__name__}")
        self.mode = mode
        self._prev = _SETTING.enabled
        _SETTING.enabled = mode

    def __enter__(self):
        return None

    def __exit__(self, *exc):
        _SETTING.enabled = self._prev
        return False
