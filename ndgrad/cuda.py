"""``ndgrad.cuda``: whether CUDA devices are usable (``torch.cuda``'s names).

Importing ndgrad never imports CuPy: these functions do, on first call.
"""

from __future__ import annotations

from .core.backend import cuda_device_count

__all__ = ["is_available", "device_count"]


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
