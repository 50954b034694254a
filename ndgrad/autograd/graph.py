"""``ndgrad.autograd.graph``: looking at and managing the backward graph, as
``torch.autograd.graph``.

Examples
--------
>>> import ndgrad
>>> x = ndgrad.tensor([1.0, 2.0], requires_grad=True)
>>> y = ndgrad.tanh(x)
>>> isinstance(y.grad_fn, ndgrad.autograd.graph.Node)
True
"""

from __future__ import annotations

from ..core.graph import Node
from ._pictures import DotGraph, MemoryReport, memory_report, render, to_dot

__all__ = ["Node", "to_dot", "render", "memory_report", "DotGraph", "MemoryReport"]
