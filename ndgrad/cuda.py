"""``ndgrad.cuda``: whether CUDA devices are usable (``torch.cuda``'s names).

Importing ndgrad never imports CuPy: these functions do, on first call.
"""

from __future__ import annotations

from .core.backend import backend_for_device, cuda_device_count, Device

__all__ = ["is_available", "device_count", "device"]


def device_count() -> int:
    """The number of CUDA devices ndgrad can use (0 without CuPy or a GPU).

    Examples
    --------
    >>> import ndgrad
    >>> devices = [f"cuda:{i}" for i in range(ndgrad.cuda.device_count())] or ["cpu"]
    >>> ndgrad.zeros(2, device=devices[-1]).shape
    (2,)
    """
    return cuda_device_count()


def is_available() -> bool:
    """Whether a CUDA device can be used: CuPy is installed (``pip install "ndgrad[cuda12]"``
    or ``[cuda13]``) and sees a GPU.

    Examples
    --------
    >>> import ndgrad
    >>> device = "cuda" if ndgrad.cuda.is_available() else "cpu"
    >>> ndgrad.ones(3, device=device).sum().item()
    3.0
    """
    return device_count() > 0


def device(index):
    """A context manager that makes CUDA device ``index`` CuPy's current device, where
    operations on tensors of that device run (``cupy.cuda.Device``).

    Examples
    --------
    >>> import ndgrad
    >>> if ndgrad.cuda.device_count() > 1:
    ...     with ndgrad.cuda.device(1):
    ...         x = ndgrad.ones(3, device="cuda:1")
    ...         print((x * 2).sum().item())
    ... else:
    ...     print(6.0)
    6.0
    """
    dev = Device("cuda", index) if isinstance(index, int) else Device(index)
    if dev.type != "cuda":
        raise ValueError(f"ndgrad.cuda.device() expects a CUDA device, got {dev}")
    return backend_for_device(dev).on(dev)
