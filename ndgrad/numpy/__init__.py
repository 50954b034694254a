"""``ndgrad.numpy``: NumPy's namespace, differentiable.

``import ndgrad.numpy as np`` and NumPy code runs on ndgrad's Tensors, as with
``autograd.numpy`` or ``jax.numpy``: this module holds every public name of the installed
NumPy's namespace that ndgrad has, the very objects ``ndgrad.<name>`` holds (functions,
creation functions, the constants ``pi``, ``e``, ``inf``, ``nan``, ``newaxis``, the dtypes,
``r_`` and ``c_``), with the submodules ``linalg`` and ``fft`` (``ndgrad.linalg`` and
``ndgrad.fft`` themselves) and ``random`` (:mod:`ndgrad.numpy.random`: ``rand``, ``randn``,
``seed``). A NumPy name ndgrad does not have raises an AttributeError that says what it is
and what to do instead (Note [NumPy's names in ndgrad.numpy]).

Examples
--------
>>> import ndgrad
>>> import ndgrad.numpy as np
>>> def f(x):
...     return np.sum(np.tanh(x) ** 2)
>>> x = np.array([0.0, 0.5])
>>> g = ndgrad.func.grad(f)(x)        # 2 tanh(x) / cosh(x)^2
>>> np.allclose(g, 2 * np.tanh(x) / np.cosh(x) ** 2)
True
>>> np.linalg is ndgrad.linalg and np.sin is ndgrad.sin
True
"""

# Note [NumPy's names in ndgrad.numpy]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# ndgrad's face (ndgrad/__init__.py) assembles the public namespace and hands it to
# ``_install``, which copies the entries whose names are public names of NumPy's namespace:
# no list of names is kept here, so a function added to ndgrad under its NumPy name is in
# ndgrad.numpy at once, and this module never imports the face (Note [Layers]). Of the
# modules the face holds, only those in _SUBMODULES mirror NumPy's submodule of that name
# (``ndgrad.core`` is not ``numpy.core``); each is also registered in sys.modules, so
# ``import ndgrad.numpy.linalg`` gives the module ``ndgrad.linalg`` itself. A public NumPy name
# left out raises an AttributeError from ``__getattr__``, with the reason of its group in
# NOT_IN_NDGRAD (tests/test_numpy_namespace.py checks these groups against what ndgrad
# lacks), else one chosen by what the NumPy object is (a scalar type, another class, a
# submodule, a function).

from __future__ import annotations

import sys as _sys
from types import ModuleType as _ModuleType

import numpy as _np

# NumPy's functions written from the primitives, by subject: importing them declares them,
# and each declaration is published as it is made (Note [Publishing a declaration] in
# core/ops/registry.py). Then what is written with them, and the protocols.
from . import (_arraylike, applying, calculus, convolution, creation, elementwise,  # noqa: F401
               fourier, joining, linear_algebra, polynomials, products, selecting, shaping,
               splitting, statistics)
from . import array_api, index_tricks, protocols, random, without_derivative  # noqa: F401
from .protocols import _detach_hint

_SUBMODULES = ("linalg", "fft")

# NumPy's functions that ndgrad deliberately does not have, by reason: they do not compute on
# array values, so they have nothing to differentiate.
NOT_IN_NDGRAD = {
    "printing and formatting (a Tensor prints itself; call them on t.detach().numpy())": {
        "array2string", "array_repr", "array_str", "base_repr", "binary_repr",
        "format_float_positional", "format_float_scientific", "get_printoptions",
        "set_printoptions", "printoptions", "typename"},
    "file I/O (load with NumPy, then ndgrad.asarray)": {
        "load", "save", "savez", "savez_compressed", "loadtxt", "savetxt", "genfromtxt",
        "fromfile", "fromregex"},
    "datetime and business days (ndgrad has no datetime dtypes)": {
        "busday_count", "busday_offset", "is_busday", "datetime_as_string", "datetime_data",
        "isnat"},
    "NumPy's own state and build (error handling, buffers, configuration, tests; call "
    "NumPy's own)": {
        "geterr", "seterr", "geterrcall", "seterrcall", "getbufsize", "setbufsize",
        "show_config", "show_runtime", "test", "get_include", "info"},
    "memory layout and raw buffers (a Tensor owns its memory; strides are not part of its "
    "contract: make a NumPy array with NumPy, then ndgrad.asarray)": {
        "ascontiguousarray", "asfortranarray", "isfortran", "require", "may_share_memory",
        "shares_memory", "copyto", "nested_iters", "frombuffer", "fromstring"},
    "NumPy's matrix class (deprecated by NumPy itself; use 2-d tensors and @)": {
        "asmatrix", "bmat"},
    "bit operations on the binary representation (call them on t.detach().numpy())": {
        "packbits", "unpackbits", "bitwise_count"},
    "ufuncs made from Python functions (use ndgrad.func.vmap)": {"frompyfunc", "vectorize"},
}

_GROUP = {name: reason for reason, names in NOT_IN_NDGRAD.items() for name in names}
_NUMPY_NAMES = frozenset(n for n in dir(_np) if not n.startswith("_"))


def _install(public):
    """Copy into this module the entries of ``public`` (the face's namespace) that are public
    names of NumPy's namespace (Note [NumPy's names in ndgrad.numpy])."""
    here = _sys.modules[__name__]
    names = ["random"]
    for name in sorted(_NUMPY_NAMES & public.keys()):
        value = public[name]
        if isinstance(value, _ModuleType) and name not in _SUBMODULES:
            continue
        setattr(here, name, value)
        names.append(name)
        if name in _SUBMODULES:
            _sys.modules[f"{__name__}.{name}"] = value
    here.__all__ = sorted(names)


def _why_not(name):
    """What NumPy's ``name`` is and what to do instead, for a name ndgrad does not have."""
    obj = getattr(_np, name)
    if name in _GROUP:
        return f"NumPy's {name} is left out: {_GROUP[name]}"
    if isinstance(obj, type) and issubclass(obj, _np.generic):
        return (f"numpy.{name} is a NumPy scalar type; ndgrad's dtypes are dtype objects "
                "(ndgrad.numpy.float64, int64, bool, ...: x.astype(ndgrad.numpy.float64)), and "
                "ndgrad.numpy.isdtype(x.dtype, 'real floating') asks for a kind of dtype")
    if isinstance(obj, type):
        return (f"numpy.{name} is a NumPy class ndgrad does not mirror; ndgrad's array is "
                "ndgrad.Tensor (np.asarray makes one; isinstance(x, ndgrad.Tensor) tests for "
                f"one), and numpy.{name} itself works on t.detach().numpy()")
    if isinstance(obj, _ModuleType):
        return (f"numpy.{name} is a NumPy submodule ndgrad does not mirror (ndgrad.numpy has "
                f"{', '.join(_SUBMODULES)} and random); call numpy.{name}'s functions on "
                "t.detach().numpy(), without a derivative")
    if callable(obj):
        return _detach_hint(name)
    return (f"numpy.{name} has no ndgrad counterpart; use NumPy's own (numpy.{name}) and "
            "make a Tensor of its result with ndgrad.numpy.asarray")


def __getattr__(name):
    if name not in _NUMPY_NAMES:
        raise AttributeError(f"module 'ndgrad.numpy' has no attribute {name!r}")
    raise AttributeError(f"ndgrad.numpy has no {name!r}: {_why_not(name)}")
