"""``ndgrad.scipy``: SciPy's subpackages, differentiable.

``import ndgrad.scipy.stats as st`` or ``from ndgrad.scipy import special``, as with
``jax.scipy``: each subpackage here is ndgrad's module of that name itself
(``ndgrad.scipy.special is ndgrad.special``), also importable by its full name, with its own
submodules (``ndgrad.scipy.signal.windows``, ``ndgrad.scipy.sparse.linalg``). SciPy's
subpackages ndgrad does not have raise an AttributeError saying so. Importing these loads
SciPy only on first use of a function that needs it, as ``ndgrad.special`` and the others do.

Examples
--------
>>> import ndgrad
>>> import ndgrad.scipy.stats as st
>>> from ndgrad.scipy import special
>>> x = ndgrad.tensor([0.5, 1.0], requires_grad=True)
>>> st.norm.logpdf(x).sum().backward()   # d/dx log N(x) = -x
>>> x.grad
tensor([-0.5, -1. ])
>>> special is ndgrad.special
True
"""

# Note [SciPy's subpackages in ndgrad.scipy]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Each subpackage is an alias: the module object ndgrad already has, bound here and entered
# in sys.modules under ``ndgrad.scipy.<name>`` (and each of its submodules under
# ``ndgrad.scipy.<name>.<sub>``), so ``import ndgrad.scipy.X`` finds the existing module
# instead of loading its file a second time as a new module. A submodule left out of
# _NESTED would be loaded twice by ``import ndgrad.scipy.X.sub``; tests/test_namespaces.py
# checks that every submodule of every aliased package is in it.

from __future__ import annotations

import sys as _sys

from .. import (fft, integrate, interpolate, linalg, ndimage, optimize, signal, sparse,
                special, stats)
from ..signal import windows as _windows
from ..sparse import linalg as _sparse_linalg

__all__ = ["fft", "integrate", "interpolate", "linalg", "ndimage", "optimize", "signal",
           "sparse", "special", "stats"]

_NESTED = {"signal.windows": _windows, "sparse.linalg": _sparse_linalg}

for _name in __all__:
    _sys.modules[f"{__name__}.{_name}"] = globals()[_name]
for _name, _module in _NESTED.items():
    _sys.modules[f"{__name__}.{_name}"] = _module


def __getattr__(name):
    if name.startswith("_"):
        raise AttributeError(f"module 'ndgrad.scipy' has no attribute {name!r}")
    import scipy  # (only for this message: ndgrad.scipy loads SciPy on first use)
    if name in getattr(scipy, "__all__", ()):
        raise AttributeError(
            f"ndgrad.scipy has no {name!r}: ndgrad does not differentiate scipy.{name}; "
            f"ndgrad.scipy has {', '.join(__all__)}. Call scipy.{name} on t.detach().numpy() "
            "(the values, without a derivative)")
    raise AttributeError(f"module 'ndgrad.scipy' has no attribute {name!r}")
