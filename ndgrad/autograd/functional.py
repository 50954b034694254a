"""``ndgrad.autograd.functional``: ``torch.autograd.functional``'s names.

They are the very objects of :mod:`ndgrad.functional` (``ndgrad.autograd.functional.jacobian
is ndgrad.functional.jacobian``), here so that code written for ``torch.autograd.functional``
finds them where it looks.

Examples
--------
>>> import ndgrad
>>> from ndgrad.autograd.functional import jacobian
>>> jacobian(lambda x: x ** 2, ndgrad.tensor([1.0, 3.0]))
tensor([[2., 0.],
        [0., 6.]])
"""

from __future__ import annotations

from ..functional.api import hessian, hvp, jacobian, jvp, vhp, vjp

__all__ = ["vjp", "jvp", "jacobian", "hessian", "hvp", "vhp"]
