"""The example graph pictured on profiling.rst: docs/conf.py runs this file and renders
``dot`` to _static/graph_example.svg when the documentation is built."""
from __future__ import annotations

import numpy as np

import ndgrad
from ndgrad.autograd.graph import to_dot

rng = np.random.default_rng(0)
W = ndgrad.tensor(rng.standard_normal((4, 3)), requires_grad=True)
b = ndgrad.zeros(4, requires_grad=True)
x = ndgrad.tensor(rng.standard_normal(3))

loss = (ndgrad.tanh(W @ x + b) ** 2).sum()
dot = to_dot(loss, params={"W": W, "b": b}, show_saved=True)
