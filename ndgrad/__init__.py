"""ndgrad: automatic differentiation for NumPy (and CuPy) arrays.

The public namespace: :class:`Tensor`, creation functions, every op, dtypes, grad modes, and
the sub-namespaces ``autograd``, ``functional``, ``func``, ``forward_ad``, ``checks``,
``linalg``, ``fft``, ``special``, ``optimize``, ``integrate`` and ``sparse``; and NumPy's and
SciPy's namespaces to import as theirs, ``import ndgrad.numpy as np`` and ``ndgrad.scipy``
(``import ndgrad.scipy.stats as st``).

Examples
--------
>>> import ndgrad
>>> x = ndgrad.tensor([0.5, 1.0], requires_grad=True)
>>> y = ndgrad.tanh(x).sum()
>>> y.backward()
>>> x.grad
tensor([0.78644773, 0.41997434])
"""

from __future__ import annotations

import sys as _sys

from .core.backend import (Device, bool_, complex64, complex128, device, float16, float32,
                           float64, get_default_device, get_default_dtype, int8, int16, int32,
                           int64, set_default_device, set_default_dtype, uint8, uint16,
                           uint32, uint64)
from .core.creation import (arange, asanyarray, asarray, asarray_chkfinite, empty, empty_like,
                            eye, fromiter, full, full_like, is_tensor, linspace, manual_seed,
                            ones, ones_like, rand, rand_like, randn, randn_like, tensor, zeros,
                            zeros_like)
from .core.grad_mode import (enable_grad, inference_mode, is_grad_enabled,
                             is_inference_mode_enabled, no_grad, set_grad_enabled)
from .core.tensor import Tensor
from .core.lazy import compute, persist
from .core import ops as _ops
from . import numpy as _numpy_namespace  # noqa: E402  (NumPy's mirror: import ndgrad.numpy as np)
from . import autograd, checks, forward_ad, functional, func  # noqa: E402
from .func import compile  # noqa: E402,A004  (ndgrad.compile is ndgrad.func.compile)
from . import cuda, utils  # noqa: E402
# SciPy's mirror (each module imports SciPy on first use only), which also assembles linalg
# and fft; every module of it is entered under its public name too (ndgrad.stats, ...)
from . import scipy  # noqa: E402
from .scipy import (fft, integrate, interpolate, linalg, ndimage, optimize, signal,  # noqa: E402
                    sparse, special, stats)
# (Note [SciPy's subpackages in ndgrad.scipy])
_sys.modules.update(scipy.public_names(_sys.modules))
from .numpy import protocols as _protocols  # noqa: E402
from .numpy import array_api as _array_api  # noqa: E402
from .numpy import without_derivative as _without_derivative  # noqa: E402
from .numpy.index_tricks import c_, r_  # noqa: E402
from .numpy.array_api import (__array_api_version__, __array_namespace_info__,  # noqa: E402
                              can_cast, count_nonzero, e, finfo, from_dlpack, iinfo, inf,
                              isdtype, nan, newaxis, nonzero, pi, result_type, searchsorted,
                              unique_all, unique_counts, unique_inverse, unique_values)

bool = bool_  # noqa: A001  (ndgrad.bool, as torch.bool)


def __getattr__(name):
    # ndgrad.bfloat16 imports ml_dtypes on first use (Note [Differentiable dtypes])
    if name == "bfloat16":
        from .core.backend import bfloat16
        try:
            return bfloat16()
        except TypeError as exc:  # no ml_dtypes: hasattr(ndgrad, "bfloat16") is False
            raise AttributeError(f"ndgrad.bfloat16 is not available: {exc}") from None
    raise AttributeError(f"module 'ndgrad' has no attribute {name!r}")


__version__ = "0.1.0"

# Every registered op (and composite) becomes a public function: ndgrad.exp, ndgrad.sum, ...
globals().update(_ops.PUBLIC)
globals().update(_numpy_namespace.creation.CREATION)  # NumPy's creation: array, identity, tri ...
globals().update(_numpy_namespace.selecting.INPLACE)  # NumPy's in-place writers: put, place ...
globals().update(_numpy_namespace.statistics.PLAIN)  # histogramdd
globals().update(_without_derivative.FUNCTIONS)  # NumPy's functions without a derivative
__test__ = _ops.doctests(_ops.PUBLIC)  # their examples, for --doctest-modules
_protocols.install()  # np.sin(t), np.sum(t), ... run ndgrad's functions
_array_api.install()  # t.__array_namespace__() is this module
_numpy_namespace._install(globals())  # Note [NumPy's names in ndgrad.numpy]

__all__ = sorted(
    ["Tensor", "tensor", "asarray", "zeros", "ones", "empty", "full", "zeros_like",
     "ones_like", "full_like", "empty_like", "arange", "linspace", "eye", "randn", "rand",
     "randn_like", "rand_like", "asanyarray", "asarray_chkfinite", "fromiter",
     "manual_seed", "is_tensor", "device", "Device", "float16", "float32", "float64",
     "complex64", "complex128", "int8", "int16", "int32", "int64", "uint8", "uint16",
     "uint32", "uint64", "bool_", "bool", "finfo", "iinfo", "isdtype", "result_type",
     "can_cast", "unique_all", "unique_counts", "unique_inverse", "unique_values",
     "searchsorted", "nonzero", "count_nonzero", "from_dlpack", "e", "pi", "inf", "nan",
     "newaxis",
     "get_default_dtype", "set_default_dtype", "get_default_device", "set_default_device",
     "no_grad", "enable_grad", "set_grad_enabled",
     "inference_mode", "is_grad_enabled", "is_inference_mode_enabled", "autograd", "checks",
     "forward_ad", "functional", "func", "linalg", "fft", "special", "cuda", "utils",
     "optimize", "integrate", "sparse", "compute", "persist", "compile"]
    + list(_ops.PUBLIC) + list(_numpy_namespace.creation.CREATION)
    + list(_numpy_namespace.selecting.INPLACE) + list(_numpy_namespace.statistics.PLAIN)
    + list(_without_derivative.FUNCTIONS)
)
