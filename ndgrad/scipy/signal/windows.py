"""``ndgrad.signal.windows``: SciPy's window functions (``scipy.signal.windows``) as tensors.

Windows are constants: each function calls SciPy's with the same arguments and returns its
values as a float64 Tensor on the default device (no derivative: parameters such as a
Kaiser window's ``beta`` are not differentiated).
"""

from __future__ import annotations

import numpy as np

from ...core import creation as _creation

__name__ = "ndgrad.signal.windows"  # (Note [Public module names] in ndgrad/scipy/__init__.py)

_NAMES = ("barthann", "bartlett", "blackman", "blackmanharris", "bohman", "boxcar",
          "chebwin", "cosine", "dpss", "exponential", "flattop", "gaussian",
          "general_cosine", "general_gaussian", "general_hamming", "hamming", "hann",
          "kaiser", "kaiser_bessel_derived", "lanczos", "nuttall", "parzen", "taylor", "triang",
          "tukey")

__all__ = sorted(_NAMES + ("get_window",))


_EXAMPLE_ARGS = {"chebwin": ", at=100", "dpss": ", NW=1.5", "gaussian": ", std=1.0",
                 "general_cosine": ", a=[0.5, 0.5]", "general_gaussian": ", p=1.5, sig=1.0",
                 "general_hamming": ", alpha=0.6", "kaiser": ", beta=8.6",
                 "kaiser_bessel_derived": ", beta=8.6"}


def _wrap(name):
    def window(*args, **kwargs):
        from scipy.signal import windows as scipy_windows
        return _creation.asarray(np.asarray(getattr(scipy_windows, name)(*args, **kwargs)))

    window.__name__ = window.__qualname__ = name
    window.__doc__ = (f"SciPy's ``scipy.signal.windows.{name}`` (same arguments) as a "
                      "Tensor (a constant).\n\n"
                      "Examples\n--------\n"
                      ">>> from ndgrad.signal import windows\n"
                      f">>> windows.{name}(4{_EXAMPLE_ARGS.get(name, '')}).shape\n(4,)\n")
    return window


for _name in _NAMES:
    globals()[_name] = _wrap(_name)
del _name


def get_window(window, Nx, fftbins=True):
    """A window of length ``Nx`` by name (``scipy.signal.get_window``), as a Tensor (a
    constant).

    Parameters
    ----------
    window : str, float or tuple
        A window name, ``(name, parameters...)``, or a Kaiser ``beta``, as in SciPy.
    Nx : int
        The number of samples.
    fftbins : bool
        Periodic (for spectral analysis, the default) or symmetric (for filter design).

    Examples
    --------
    >>> from ndgrad import signal
    >>> signal.get_window("hann", 4)
    tensor([0. , 0.5, 1. , 0.5])
    """
    from scipy.signal import get_window as scipy_get_window
    return _creation.asarray(np.asarray(scipy_get_window(window, Nx, fftbins=fftbins)))

