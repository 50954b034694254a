"""Functional transforms: ``torch.autograd.functional``'s contract (:mod:`.api`) and the
composable transforms (:mod:`.transforms`, :mod:`.vmap`), which ``ndgrad.func`` re-exports.
"""

from __future__ import annotations

from .api import hessian, hvp, jacobian, jvp, vhp, vjp
from .vmap import vmap  # noqa: F401

__all__ = ["vjp", "jvp", "jacobian", "hessian", "hvp", "vhp", "vmap"]
