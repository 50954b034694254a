"""``ndgrad.autograd.gradcheck``: ``torch.autograd.gradcheck``'s module names.

:func:`gradcheck`, :func:`gradgradcheck` and :class:`GradcheckError` are the very objects of
:mod:`ndgrad.checks`. As in PyTorch, the attribute ``ndgrad.autograd.gradcheck`` is the
function, and ``from ndgrad.autograd.gradcheck import gradcheck, GradcheckError`` reads this
module.

Examples
--------
>>> import ndgrad
>>> from ndgrad.autograd.gradcheck import gradcheck
>>> gradcheck(ndgrad.tanh, (ndgrad.tensor([0.3, -1.0], requires_grad=True),))
True
"""

from __future__ import annotations

from ..checks.gradcheck import GradcheckError, gradcheck, gradgradcheck

__all__ = ["gradcheck", "gradgradcheck", "GradcheckError"]
