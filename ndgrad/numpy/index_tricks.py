"""``ndgrad.r_`` and ``ndgrad.c_``: NumPy's index-expression concatenators.

``r_[a, b, 0:3, 7]`` concatenates its pieces along the first axis (1-D pieces end to end),
``c_[a, b]`` stacks 1-D pieces as columns (along the last axis, 1-D pieces becoming
``(n, 1)``). Pieces are tensors (differentiable: the result is a ``concatenate`` of them),
arrays, lists, numbers, and slices, which become ``arange(start, stop, step)`` (or
``linspace(start, stop, n)`` for an imaginary step ``nj``, as NumPy). NumPy's string
directives (``r_['0,2', ...]``, ``'r'``, ``'c'``) are not supported.
"""

from __future__ import annotations

import numpy as np

from .array_api import result_type
from ..core.creation import asarray
from ..core.ops import concatenate
from ..core.tensor import Tensor

__all__ = ["r_", "c_"]


def _slice_values(s):
    start = 0 if s.start is None else s.start
    step = 1 if s.step is None else s.step
    if isinstance(step, complex):
        return np.linspace(start, s.stop, int(abs(step)))
    return np.arange(start, s.stop, step)


class _Concatenator:
    def __init__(self, name, columns):
        self._name = name
        self._columns = columns

    def __getitem__(self, key):
        items = key if isinstance(key, tuple) else (key,)
        if any(isinstance(k, str) for k in items):
            raise NotImplementedError(f"ndgrad.{self._name}: string directives (NumPy's "
                                      f"'r', 'c', '0,2,...') are not supported; reshape the "
                                      f"pieces and use ndgrad.concatenate")
        device = next((k.device for k in items if isinstance(k, Tensor)), None)
        pieces = []
        for k in items:
            if isinstance(k, slice):
                k = _slice_values(k)
            if not isinstance(k, Tensor):
                k = asarray(k, device=device) if device is not None else asarray(k)
            pieces.append(k)
        if not pieces:
            return asarray(np.zeros(0))
        dtype = result_type(*pieces)
        out = []
        for p in pieces:
            p = p.astype(dtype) if p.dtype != dtype else p
            if self._columns:
                p = p.reshape(1, 1) if p.ndim == 0 else p.reshape(-1, 1) if p.ndim == 1 else p
            elif p.ndim == 0:
                p = p.reshape(1)
            out.append(p)
        return concatenate(out, axis=-1 if self._columns else 0)

    def __len__(self):
        return 0

    def __repr__(self):
        return f"ndgrad.{self._name}"


r_ = _Concatenator("r_", columns=False)
r_.__doc__ = """Concatenate pieces along the first axis, as ``numpy.r_``.

Examples
--------
>>> import ndgrad
>>> a = ndgrad.tensor([1.0, 2.0], requires_grad=True)
>>> y = ndgrad.r_[a, 0:2, 5.0]
>>> y
tensor([1., 2., 0., 1., 5.], grad_fn=<ConcatBackward0>)
>>> (y * y).sum().backward()
>>> a.grad
tensor([2., 4.])
"""

c_ = _Concatenator("c_", columns=True)
c_.__doc__ = """Stack 1-D pieces as columns (concatenate along the last axis), as ``numpy.c_``.

Examples
--------
>>> import ndgrad
>>> ndgrad.c_[ndgrad.tensor([1.0, 2.0]), ndgrad.tensor([3.0, 4.0])]
tensor([[1., 3.],
        [2., 4.]])
"""
__test__ = {"r_": r_.__doc__, "c_": c_.__doc__}  # their examples, for --doctest-modules
