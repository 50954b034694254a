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
# Each derivative in its own panel (Taylor mode's values as dots, the closed form as a line),
# and the largest difference per order in the last one.
fig, axes = plt.subplots(2, 4, figsize=(11, 5))
every = max(1, n_points // 40)
for k, ax in enumerate(axes.flat[:ORDER + 1]):
    ax.plot(x, closed[k], color="0.6", lw=2.5, label="closed form")
    ax.plot(x[::every], taylor[k, ::every], ".", ms=4, color="C0", label="Taylor mode")
    ax.set_title(f"order {k}", fontsize="medium")
axes.flat[0].legend(fontsize="small")
last = axes.flat[ORDER + 1]
last.bar(range(ORDER + 1), np.maximum(max_error, 1e-17), color="C1")
last.set_yscale("log")
last.set_ylim(1e-17, 1e-10)
last.set_title("largest |Taylor - closed form|", fontsize="medium")
last.set_xlabel("order")
last.set_xticks(range(ORDER + 1))
for ax in axes.flat[:ORDER + 1]:
    ax.set_xticks([-3, 0, 3])
fig.suptitle("tanh and its first six derivatives, from one Taylor-mode pass")
fig.tight_layout()
plt.show()
