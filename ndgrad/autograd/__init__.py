"""The ``torch.autograd``-shaped facade: backward, grad, grad modes, custom Functions,
anomaly detection, Variable, gradcheck; the ``graph``, ``profiler``, ``function``,
``functional``, ``forward_ad``, ``grad_mode`` and ``anomaly_mode`` modules. Names that live
elsewhere in ndgrad (``gradcheck``, ``functional.jacobian``, ``forward_ad.make_dual``) are
the same objects here.

Examples
--------
>>> import ndgrad
>>> x = ndgrad.tensor([1.0, 2.0], requires_grad=True)
>>> ndgrad.autograd.grad((x ** 2).sum(), x)
(tensor([2., 4.]),)
"""

from __future__ import annotations

import warnings

from ..core.anomaly import (detect_anomaly, is_anomaly_check_nan_enabled, is_anomaly_enabled,
                           set_detect_anomaly)
from ..core.creation import tensor
from ..core.backward import backward
from ..core.grad_mode import (enable_grad, inference_mode, is_grad_enabled, no_grad,
                             set_grad_enabled)
from ..core.graph import Node
from ..core.tensor import Tensor
from ..functional.vmap import autograd_grad as grad
from . import anomaly_mode, forward_ad, function, functional, grad_mode, graph, profiler
from . import gradcheck as _gradcheck_module  # noqa: F401 (loaded first: as in PyTorch,
from ..checks.gradcheck import gradcheck, gradgradcheck  # the attribute is the function)
from .function import Function, FunctionCtx, once_differentiable
from .legacy import InplaceFunction, NestedIOFunction
from .grad_mode import (enforce_grad_layout_policy, is_multithreading_enabled,
                        set_multithreading_enabled)

__all__ = ["backward", "grad", "no_grad", "enable_grad", "set_grad_enabled",
           "inference_mode", "is_grad_enabled", "Variable", "Node", "Function", "FunctionCtx",
           "once_differentiable", "detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled",
           "is_anomaly_check_nan_enabled", "function", "graph", "profiler", "gradcheck",
           "gradgradcheck", "functional", "forward_ad", "grad_mode", "anomaly_mode",
           "NestedIOFunction", "InplaceFunction", "set_multithreading_enabled",
           "is_multithreading_enabled", "enforce_grad_layout_policy", "variable"]


def Variable(data, requires_grad=False, volatile=None):
    """Deprecated: ``Variable(t)`` returns a Tensor (as in PyTorch >= 0.4), with a warning.

    Examples
    --------
    >>> import warnings, ndgrad
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     v = ndgrad.autograd.Variable(ndgrad.tensor([1.0]), requires_grad=True)
    >>> v.requires_grad
    True
    """
    warnings.warn(
        "ndgrad.autograd.Variable is deprecated: Tensors carry autograd state themselves. Use "
        "ndgrad.tensor(data, requires_grad=...) or t.requires_grad_() instead.",
        DeprecationWarning, stacklevel=2)
    if isinstance(data, Tensor):
        # As PyTorch's: a new leaf sharing ``data``'s storage; ``data`` itself is untouched.
        return data.detach().requires_grad_(requires_grad)
    return tensor(data, requires_grad=requires_grad)


def variable(*args, **kwargs):
    """Removed long ago in PyTorch, kept there only to raise: use :func:`ndgrad.tensor`.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.autograd.variable([1.0])
    Traceback (most recent call last):
        ...
    RuntimeError: ndgrad.autograd.variable(...) is deprecated: use ndgrad.tensor(...) instead
    """
    raise RuntimeError("ndgrad.autograd.variable(...) is deprecated: use ndgrad.tensor(...) "
                       "instead")
