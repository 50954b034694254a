"""``ndgrad.fft``: the differentiable functions of this namespace, NumPy's and SciPy's.

Each function is a registered primitive (ndgrad/core/ops/fft.py) or composite
(ndgrad/numpy/fourier.py) declared with ``namespace="fft"`` (Note [Namespaces] in
``ndgrad/core/ops/registry.py``), so the property suite checks its vjp, jvp, second
order and batching rule like every other op's; assembled here (Note [The linalg and fft
namespaces] in linalg.py). ``fftfreq`` and ``rfftfreq`` are plain creation functions (not
differentiable), defined beside the composites.
"""

from __future__ import annotations

from ..core import ops as _ops
from ..numpy.fourier import fftfreq, rfftfreq  # noqa: F401  (public)

__name__ = "ndgrad.fft"  # its public name (Note [Public module names] in scipy/__init__.py)

globals().update(_ops.NAMESPACED["fft"])
__test__ = _ops.doctests(_ops.NAMESPACED["fft"])  # their examples, for --doctest-modules

__all__ = sorted([*_ops.NAMESPACED["fft"], "fftfreq", "rfftfreq"])
