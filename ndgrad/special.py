"""``ndgrad.special``: the differentiable functions of this namespace.

Each function is a registered primitive (or composite) declared in
``ndgrad/core/ops/`` with ``namespace="special"`` (Note [Namespaces] in
``ndgrad/core/ops/registry.py``), so the property suite checks its vjp, jvp, second
order and batching rule like every other op's.
"""

from __future__ import annotations

from .core import ops as _ops

globals().update(_ops.NAMESPACED["special"])
__test__ = _ops.doctests(_ops.NAMESPACED["special"])  # their examples, for --doctest-modules

__all__ = sorted(_ops.NAMESPACED["special"])
