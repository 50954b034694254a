"""``ndgrad.fft``: the differentiable functions of this namespace.

Each function is a registered primitive (or composite) declared in
``ndgrad/core/ops/`` with ``namespace="fft"`` (Note [Namespaces] in
``ndgrad/core/ops/registry.py``), so the property suite checks its vjp, jvp, second
order and batching rule like every other op's. ``fftfreq`` and ``rfftfreq`` are plain
creation functions (not differentiable), defined beside them in ``ndgrad/core/ops/fft.py``.
"""

from __future__ import annotations

from ..core import ops as _ops
from ..core.ops.fft import fftfreq, rfftfreq  # noqa: F401  (public)

__name__ = "ndgrad.fft"  # its public name (Note [Public module names] in scipy/__init__.py)

globals().update(_ops.NAMESPACED["fft"])
__test__ = _ops.doctests(_ops.NAMESPACED["fft"])  # their examples, for --doctest-modules

__all__ = sorted([*_ops.NAMESPACED["fft"], "fftfreq", "rfftfreq"])
