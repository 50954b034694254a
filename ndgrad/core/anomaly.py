"""Anomaly detection: find the forward line behind a failing backward.

In anomaly mode every Node records the traceback of the forward call that created it (the
user's code: frames inside ndgrad are trimmed from the inner end). When a Node's backward
fails, the engine warns with that traceback and attaches it to the exception as a note; with
``check_nan`` a Node whose backward returns NaN raises ``RuntimeError("Function
'LogBackward0' returned nan values in its 0th output.")``, with the same traceback.

Note [Anomaly mode costs nothing when off]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
The mode is one global flag, ``ENABLED[0]`` in this module, as PyTorch's is one process-wide
flag. ``graph.record`` reads it only when it records a Node (where it already sets ``node.hooks``):
when on, the Node gets a ``_NodeHooks`` carrying the trace, and a Node with hooks takes the
engine's general path, where failures are annotated. The engine reads the flag once per
backward: when on, every Node takes the general path, so Nodes made before anomaly mode was
switched on are NaN-checked too. Off, neither the forward hot path nor the engine's common
path does any extra work.
"""

from __future__ import annotations

import functools
import os
import sys
import traceback
import warnings

from .backend import backend_of
from .tensor import Tensor

__all__ = ["detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled",
           "is_anomaly_check_nan_enabled"]

# The mode: one process-wide flag (Note [Anomaly mode costs nothing when off]), read where a
# node is recorded and once per backward pass; and check_nan, read when it is on.
ENABLED = [False]
_CHECK_NAN = [True]

_PKG_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_INTERNAL: dict = {}


def _internal(filename):
    r = _INTERNAL.get(filename)
    if r is None:
        r = _INTERNAL[filename] = os.path.abspath(filename).startswith(_PKG_DIR)
    return r


def _user_frame(depth=1):
    """The innermost frame outside the ndgrad package (None if there is none)."""
    f = sys._getframe(depth + 1)
    while f is not None and _internal(f.f_code.co_filename):
        f = f.f_back
    return f


def forward_trace():
    """The formatted stack of the current forward call, up to the user's innermost frame."""
    f = _user_frame()
    if f is None:  # called from ndgrad alone: keep everything
        f = sys._getframe(1)
    return traceback.format_stack(f)


def user_stacklevel():
    """The ``stacklevel`` that makes a warning issued by the caller point at user code."""
    f = sys._getframe(2)
    level = 2
    while f is not None and _internal(f.f_code.co_filename):
        f = f.f_back
        level += 1
    return level if f is not None else 2


def is_anomaly_enabled():
    """Whether anomaly detection is on.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.autograd.is_anomaly_enabled()
    False
    """
    return ENABLED[0]


def is_anomaly_check_nan_enabled():
    """Whether anomaly detection also checks backward results for NaN.

    Examples
    --------
    >>> import ndgrad
    >>> with ndgrad.autograd.set_detect_anomaly(True, check_nan=False):
    ...     ndgrad.autograd.is_anomaly_check_nan_enabled()
    False
    """
    return _CHECK_NAN[0]


def _set(mode, check_nan):
    ENABLED[0] = bool(mode)
    _CHECK_NAN[0] = bool(check_nan)


_WARNING = ("Anomaly Detection has been enabled. This mode will increase the runtime and should "
            "only be enabled for debugging.")


class detect_anomaly:
    """Context manager (and decorator) that turns anomaly detection on.

    Each Node made inside records the traceback of the forward call that created it. When
    a backward formula fails, a warning shows that traceback (and the exception carries it
    as a note), so the failing line of the forward code is found; with ``check_nan=True``
    a Node whose backward returns NaN raises a RuntimeError naming it. This slows things
    down (a traceback per recorded operation): use it for debugging only. The previous state
    is restored on exit.

    Parameters
    ----------
    check_nan : bool
        Raise when a backward formula returns NaN (default True).

    Examples
    --------
    >>> import warnings, ndgrad
    >>> x = ndgrad.tensor([0.0, 1.0], requires_grad=True)
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     with ndgrad.autograd.detect_anomaly():
    ...         y = ndgrad.sqrt(x) * 0.0          # d sqrt(x) at 0 is inf; inf * 0 is nan
    ...         try:
    ...             y.sum().backward()
    ...         except RuntimeError as e:
    ...             print(e)
    Function 'SqrtBackward0' returned nan values in its 0th output.
    >>> lines = str(caught[-1].message).splitlines()
    >>> print(lines[0])  # the warning names the node and ends at the forward line
    Error detected in SqrtBackward0. Traceback of forward call that caused the error:
    >>> print(lines[-1].strip())
    y = ndgrad.sqrt(x) * 0.0          # d sqrt(x) at 0 is inf; inf * 0 is nan
    """

    def __new__(cls, check_nan=True):
        if callable(check_nan):  # bare decorator: @detect_anomaly
            self = super().__new__(cls)
            self.__init__()
            return self(check_nan)
        return super().__new__(cls)

    def __init__(self, check_nan=True):
        self.check_nan = bool(check_nan)
        self._prev = []
        warnings.warn(_WARNING, UserWarning, stacklevel=2)

    def __enter__(self):
        self._prev.append((ENABLED[0], _CHECK_NAN[0]))
        _set(True, self.check_nan)
        return self

    def __exit__(self, *exc):
        _set(*self._prev.pop())
        return False

    def __call__(self, fn):
        check_nan = self.check_nan

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            prev = (ENABLED[0], _CHECK_NAN[0])
            _set(True, check_nan)
            try:
                return fn(*args, **kwargs)
            finally:
                _set(*prev)
        return wrapper


class set_detect_anomaly:
    """Turn anomaly detection on or off: as a function call, or as a context manager that
    restores the previous state on exit.

    Parameters
    ----------
    mode : bool
        Anomaly detection on (True) or off (False).
    check_nan : bool
        With ``mode`` True, also raise when a backward formula returns NaN.

    Examples
    --------
    >>> import ndgrad
    >>> with ndgrad.autograd.set_detect_anomaly(True):
    ...     ndgrad.autograd.is_anomaly_enabled()
    True
    >>> ndgrad.autograd.is_anomaly_enabled()
    False
    """

    def __init__(self, mode, check_nan=True):
        self._prev = (ENABLED[0], _CHECK_NAN[0])
        self.mode = bool(mode)
        self.check_nan = bool(check_nan)
        _set(self.mode, self.check_nan)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _set(*self._prev)
        return False

    def __call__(self, fn):
        # As a decorator: undo the immediate effect of construction; apply it per call.
        _set(*self._prev)
        mode, check_nan = self.mode, self.check_nan

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            prev = (ENABLED[0], _CHECK_NAN[0])
            _set(mode, check_nan)
            try:
                return fn(*args, **kwargs)
            finally:
                _set(*prev)
        return wrapper


def check_nan(node, grads):
    """Raise if a gradient returned by ``node``'s backward contains NaN (anomaly mode)."""
    for i, g in enumerate(grads):
        if g is None:
            continue
        if isinstance(g, Tensor):
            if type(g) is not Tensor:
                continue  # a transform's value (a batch inside vmap): no single array to read
            d = g._data
        else:
            d = g
        B = backend_of(d)
        if bool(B.isnan(d).any()):
            raise RuntimeError(f"Function '{node.name()}' returned nan values in its {i}th "
                               "output.")


def annotate(node, exc):
    """Warn with the forward traceback of the Node whose backward raised ``exc``, and attach
    it to ``exc`` as a note."""
    msg = ("Error detected in " + node.name() + ". Traceback of forward call that caused the "
           "error:\n" + "".join(node.hooks.trace))
    warnings.warn(msg, RuntimeWarning, stacklevel=user_stacklevel())
    if hasattr(exc, "add_note"):
        exc.add_note(msg)
