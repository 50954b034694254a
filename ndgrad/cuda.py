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
    >>> ndgrad.cuda.device_count() >= 0
    True
    """
    return cuda_device_count()


def is_available() -> bool:
    """Whether a CUDA device can be used: CuPy is installed (``pip install "ndgrad[cuda12]"``
    or ``[cuda13]``) and sees a GPU.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.cuda.is_available() in (True, False)
    True
    """
    return device_count() > 0
