"""``ndgrad.linalg``: the differentiable functions of this namespace.

Each function is a registered primitive (or composite) declared in
``ndgrad/core/ops/`` with ``namespace="linalg"`` (Note [Namespaces] in
``ndgrad/core/ops/registry.py``), so the property suite checks its vjp, jvp, second
order and batching rule like every other op's.

The array API's ``linalg`` extension also lists functions whose semantics are those of the
top-level ones (``matmul``, ``matrix_transpose``, ``outer``, ``tensordot``, ``vecdot``):
they are the same functions, re-exported here. (``linalg.diagonal`` and ``linalg.trace``
differ from the top-level ones, which take NumPy's ``axis1=0, axis2=1``: they are
registered in this namespace of their own.) :class:`LinAlgError` is NumPy's, raised for
singular or non-positive-definite input.
"""

from __future__ import annotations

from . import _linalg_scipy
from .core import ops as _ops
from .core.ops.decompositions import EighResult, EigResult, QRResult, SVDResult
from .core.ops.dense_linalg import LinAlgError, LstsqResult, SlogdetResult

globals().update(_ops.NAMESPACED["linalg"])
__test__ = _ops.doctests(_ops.NAMESPACED["linalg"])  # their examples, for --doctest-modules

# array-API linalg names with the top-level semantics: the same functions
_SHARED = ("matmul", "matrix_transpose", "outer", "tensordot", "vecdot")
globals().update({_name: _ops.PUBLIC[_name] for _name in _SHARED})
# scipy.linalg's functions, written with the ones above (plain functions: ndgrad/_linalg_scipy.py)
globals().update({_name: getattr(_linalg_scipy, _name) for _name in _linalg_scipy.__all__})

__all__ = sorted(set(_ops.NAMESPACED["linalg"]) | set(_SHARED) | set(_linalg_scipy.__all__)) + [
    "LinAlgError", "EighResult", "EigResult", "QRResult", "SVDResult", "LstsqResult",
    "SlogdetResult"]
