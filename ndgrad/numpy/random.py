"""``ndgrad.numpy.random``: the random draws of ``numpy.random`` that ndgrad has.

``rand`` and ``randn`` (NumPy's legacy ``numpy.random.rand(d0, d1, ...)`` and ``randn``
signatures) and ``seed``, which seeds them: the same objects as ``ndgrad.rand``,
``ndgrad.randn`` and ``ndgrad.manual_seed``. NumPy's other draws (``normal``, ``uniform``,
``default_rng`` ...) raise an AttributeError saying how to get them: draw with NumPy and make a
Tensor with ``ndgrad.numpy.asarray``.

Examples
--------
>>> import ndgrad.numpy as np
>>> _ = np.random.seed(0); a = np.random.randn(3)
>>> _ = np.random.seed(0); b = np.random.randn(3)
>>> bool((a == b).all())
True
"""

from __future__ import annotations

import numpy as _np

from ..core.creation import manual_seed as seed
from ..core.creation import rand, randn

__all__ = ["rand", "randn", "seed"]


def __getattr__(name):
    if name.startswith("_") or not hasattr(_np.random, name):
        raise AttributeError(f"module 'ndgrad.numpy.random' has no attribute {name!r}")
    raise AttributeError(
        f"ndgrad.numpy.random has no {name!r}: ndgrad draws only {', '.join(__all__)}; "
        f"draw with NumPy (numpy.random.default_rng(seed).{name}(...) or numpy.random.{name}) "
        "and make a Tensor of the sample with ndgrad.numpy.asarray")
