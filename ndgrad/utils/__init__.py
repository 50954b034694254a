"""``ndgrad.utils``: utilities beside autograd, as ``torch.utils`` (``checkpoint``)."""
from __future__ import annotations

from . import checkpoint

__all__ = ["checkpoint"]
