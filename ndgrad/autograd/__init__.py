"""The ``torch.autograd``-shaped facade: backward, grad, grad modes, custom Functions,
anomaly detection, Variable; the ``graph`` and ``profiler`` modules.

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
from . import function, graph, profiler
from .function import Function, FunctionCtx, once_differentiable

__all__ = ["backward", "grad", "no_grad", "enable_grad", "set_grad_enabled",
           "inference_mode", "is_grad_enabled", "Variable", "Node", "Function", "FunctionCtx",
           "once_differentiable", "detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled",
           "is_anomaly_check_nan_enabled", "function", "graph", "profiler"]


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
