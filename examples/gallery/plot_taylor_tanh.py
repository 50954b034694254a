"""
Six derivatives of tanh from one call
=====================================

Taylor mode (:func:`ndgrad.func.derivatives`) carries a truncated power series through each
operation, so one forward pass gives every derivative up to the order asked for, on a whole
grid of points at once. Nested reverse mode would need six passes, each differentiating the
graph of the one before.

The derivatives of ``tanh`` are polynomials in ``t = tanh(x)``: ``d/dx P(t) = (1 - t^2)
P'(t)``, starting from ``P(t) = t``; we compare with those closed forms.
"""

from __future__ import annotations

import os

import matplotlib.pyplot as plt
import numpy as np

import ndgrad
from ndgrad.func import derivatives

ORDER = 6
n_points = 41 if os.environ.get("NDGRAD_EXAMPLE_SMALL") else 401
x = np.linspace(-3.0, 3.0, n_points)

# %%
# One call of ``derivatives`` along the grid: ``ds[k]`` is the k-th derivative at every point
# (the function is elementwise, so each point's series is its own).
ds = derivatives(ndgrad.tanh, ndgrad.tensor(x), ORDER)
taylor = np.stack([d.numpy() for d in ds])

# %%
# The closed forms: P_0(t) = t and P_(k+1)(t) = (1 - t^2) P_k'(t), as NumPy polynomials.
P = np.polynomial.Polynomial([0.0, 1.0])
one_minus_t2 = np.polynomial.Polynomial([1.0, 0.0, -1.0])
t = np.tanh(x)
closed = []
for _ in range(ORDER + 1):
    closed.append(P(t))
    P = one_minus_t2 * P.deriv()
closed = np.stack(closed)

max_error = np.max(np.abs(taylor - closed), axis=1)
for k, err in enumerate(max_error):
    print(f"order {k}: largest difference from the closed form {err:.1e}")

# %%
# Each derivative, scaled to its largest value so that all fit on one plot.
fig, ax = plt.subplots(figsize=(7, 4))
for k in range(ORDER + 1):
    scale = np.max(np.abs(closed[k]))
    ax.plot(x, taylor[k] / scale, label=f"$d^{k}/dx^{k}$ tanh / {scale:.3g}")
ax.set_xlabel("x")
ax.set_title("tanh and its first six derivatives, from one Taylor-mode pass")
ax.legend(fontsize="small", ncol=2)
fig.tight_layout()
plt.show()
