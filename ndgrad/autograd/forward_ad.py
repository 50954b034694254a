"""``ndgrad.autograd.forward_ad``: ``torch.autograd.forward_ad``'s names.

They are the very objects of :mod:`ndgrad.forward_ad` (``ndgrad.autograd.forward_ad.make_dual
is ndgrad.forward_ad.make_dual``; the dual levels are the same), here so that code written
for ``torch.autograd.forward_ad`` finds them where it looks.

Examples
--------
>>> import ndgrad
>>> import ndgrad.autograd.forward_ad as fwAD
>>> with fwAD.dual_level():
...     y = ndgrad.sin(fwAD.make_dual(ndgrad.tensor(0.0), ndgrad.tensor(2.0)))
...     fwAD.unpack_dual(y).tangent
tensor(2.)
"""

from __future__ import annotations

from ..forward_ad import (UnpackedDualTensor, dual_level, enter_dual_level, exit_dual_level,
                          make_dual, unpack_dual)

__all__ = ["UnpackedDualTensor", "enter_dual_level", "exit_dual_level", "make_dual",
           "unpack_dual", "dual_level"]
