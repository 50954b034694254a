"""``ndgrad.scipy``: SciPy's subpackages, differentiable.

``import ndgrad.scipy.stats as st`` or ``from ndgrad.scipy import special``, as with
``jax.scipy``: each subpackage here is ndgrad's module of that name itself
(``ndgrad.scipy.special is ndgrad.special``), also importable by its public name
(``import ndgrad.stats``), with its own submodules (``ndgrad.scipy.signal.windows``,
``ndgrad.scipy.sparse.linalg``). SciPy's subpackages ndgrad does not have raise an
AttributeError saying so. Importing these loads SciPy only on first use of a function that
needs it.

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
# SciPy's mirror lives here: each subpackage's home is this package's module of that name
# (ndgrad/scipy/stats.py, signal/, sparse/, ...). ``ndgrad.linalg`` and ``ndgrad.fft`` are
# assembled here too (Note [The linalg and fft namespaces] in linalg.py). The face
# (ndgrad/__init__.py) enters every module loaded under ``ndgrad.scipy.`` in sys.modules under
# its public name as well (``ndgrad.stats``, ``ndgrad.signal.windows``), so ``import
# ndgrad.stats`` finds the module already loaded instead of loading its file a second time as
# a new module; each package here imports its submodules, so all are loaded by then.
# tests/test_namespaces.py checks that no file of ndgrad is loaded as two modules.
#
# Note [Public module names]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~
# A module of SciPy's mirror sets its ``__name__`` to its public name (``ndgrad.stats``, what
# users import and what it was called before it moved here) once its imports are done, so
# what it defines says ``__module__ == "ndgrad.stats"``: in reprs, pickles, the API docs and
# the stubs, as before. (A package sets it after importing its submodules: ``from . import
# windows`` reads the package's ``__name__``.)

from __future__ import annotations

from . import (fft, integrate, interpolate, linalg, ndimage, optimize, signal,  # noqa: F401
               sparse, special, stats)

__all__ = ["fft", "integrate", "interpolate", "linalg", "ndimage", "optimize", "signal",
           "sparse", "special", "stats"]


def public_names(modules):
    """``{public name: module}`` of SciPy's mirror's modules among ``modules`` (the face
    passes sys.modules): ``ndgrad.stats`` for ``ndgrad.scipy.stats`` (Note [SciPy's subpackages
    in ndgrad.scipy])."""
    prefix = __name__ + "."
    return {"ndgrad." + key[len(prefix):]: module for key, module in modules.items()
            if key.startswith(prefix) and not key[len(prefix):].startswith("_")}


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
