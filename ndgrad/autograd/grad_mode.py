"""``ndgrad.autograd.grad_mode``: ``torch.autograd.grad_mode``'s names.

``no_grad``, ``enable_grad``, ``set_grad_enabled`` and ``inference_mode`` are the very objects
``ndgrad`` and ``ndgrad.autograd`` export; :class:`set_multithreading_enabled` (and
:func:`is_multithreading_enabled`, which ``torch.autograd`` exports) and
:class:`enforce_grad_layout_policy` live here.

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
           "set_multithreading_enabled", "is_multithreading_enabled",
           "enforce_grad_layout_policy"]


class _Setting(threading.local):
    multithreading = True  # each thread's defaults, as PyTorch's
    grad_layout = True


_SETTING = _Setting()


class _ThreadSetting:
    """A per-thread setting applied at once, and restored when a ``with`` block ends."""

    _name = ""

    def __init__(self, mode):
        if not isinstance(mode, bool):
            raise TypeError(f"{type(self).__name__}(mode) takes a bool, got "
                            f"{type(mode).__name__}")
        self.mode = mode
        self._prev = getattr(_SETTING, self._name)
        setattr(_SETTING, self._name, mode)

    def __enter__(self):
        return None

    def __exit__(self, *exc):
        setattr(_SETTING, self._name, self._prev)
        return False


def is_multithreading_enabled():
    """Whether multithreaded backward is enabled in this thread (True unless
    :class:`set_multithreading_enabled` turned it off).

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.autograd.is_multithreading_enabled()
    True
    """
    return _SETTING.multithreading


class set_multithreading_enabled(_ThreadSetting):
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

    _name = "multithreading"


class enforce_grad_layout_policy(_ThreadSetting):
    """Whether a leaf's accumulated gradient must have the parameter's memory layout, in this
    thread, at once when called, and until the ``with`` block ends when used as a context
    manager (as PyTorch's).

    PyTorch's ``enforce_grad_layout_policy(False)`` *permits* its engine to keep a gradient
    of another layout where it would copy it (its documentation: ``.grad`` "may" then have
    the incoming gradient's strides). ndgrad always gives ``.grad`` the parameter's layout
    (Note [Keeping fresh gradients] in ``ndgrad/core/accumulate.py``), which satisfies both
    settings; the setting is recorded and changes nothing else.

    Parameters
    ----------
    enable : bool
        True (the default setting) to enforce the layout, False to relax it.

    Examples
    --------
    >>> import numpy as np, ndgrad
    >>> p = ndgrad.tensor(np.ones((3, 2)).T, requires_grad=True)   # Fortran order
    >>> with ndgrad.autograd.enforce_grad_layout_policy(False):
    ...     (p * 2.0).sum().backward()
    >>> p.grad.numpy().strides == p.detach().numpy().strides
    True
    """

    _name = "grad_layout"
