"""``ndgrad.sparse``: SciPy's sparse solvers for ndgrad tensors.

This package owns ``ndgrad.sparse.linalg`` (the iterative linear solvers ``cg``, ``gmres``,
``minres`` and ``bicgstab``, their solutions differentiable with respect to the right-hand
side and the operator's parameters). It holds no sparse tensor type: the operator is a
dense tensor, a SciPy sparse matrix or ``LinearOperator``, or a matvec function. SciPy is
imported on first use (``import ndgrad`` loads no SciPy).
"""

from __future__ import annotations

from . import linalg

__name__ = "ndgrad.sparse"  # its public name (Note [Public module names] in scipy/__init__.py)

__all__ = ["linalg"]
