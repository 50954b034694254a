"""
The Laplacian of a neural network: Forward Laplacian against the Hessian's trace
================================================================================

Physics-informed networks and neural-network wave functions put the Laplacian
``Δu = Σ_i ∂²u/∂x_i²`` of a network ``u(x)`` into their loss, at many collocation points.
Taking the trace of the full Hessian costs ``d`` Hessian-vector products per point, each a
forward and a backward pass, and builds a ``d x d`` matrix per point only to keep its
diagonal sum.

:func:`ndgrad.func.laplacian` computes it by the *Forward Laplacian*: one forward pass that
carries, for every intermediate value, its gradient and its Laplacian alone, with no
Hessian and no backward pass. Both compose with :func:`ndgrad.func.vmap` over the points.
Here we check that the two agree and measure how their costs grow with the dimension ``d``.
"""

from __future__ import annotations

import os
import time

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.ticker import NullLocator

import ndgrad
from ndgrad.func import hessian, laplacian, vmap

SMALL = bool(os.environ.get("NDGRAD_EXAMPLE_SMALL"))
dims = [4, 16, 64, 128] if SMALL else [4, 16, 64, 128, 256, 512]
n_points = 16 if SMALL else 64
width = 32 if SMALL else 64
repeats = 3
rng = np.random.default_rng(0)


def mlp(params):
    """u(x) = w3 · tanh(W2 tanh(W1 x + b1) + b2): a scalar network of a point x."""
    W1, b1, W2, b2, w3 = (ndgrad.tensor(p) for p in params)

    def u(x):
        h = ndgrad.tanh(x @ W1 + b1)
        h = ndgrad.tanh(h @ W2 + b2)
        return h @ w3
    return u


def by_forward_laplacian(u, X):
    """Δu at each row of X, one Forward Laplacian pass mapped over the rows."""
    return vmap(laplacian(u))(X).numpy()


def by_hessian_trace(u, X):
    """Δu at each row of X, the trace of each row's d x d Hessian."""
    return np.trace(vmap(hessian(u))(X).numpy(), axis1=-2, axis2=-1)


def best_time(fn, *args):
    """The fastest of ``repeats`` runs of fn(*args) (seconds) and its result."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        out = fn(*args)
        times.append(time.perf_counter() - start)
    return min(times), out


# %%
# The two Laplacians at a batch of points, for each dimension
# -----------------------------------------------------------
# ``vmap(laplacian(u))`` maps the Forward Laplacian over the points;
# ``vmap(hessian(u))`` gives a ``d x d`` Hessian per point, whose trace is the reference.
params, points, lap_forward, lap_hessian = {}, {}, {}, {}
seconds_forward, seconds_hessian = [], []
for d in dims:
    params[d] = [rng.standard_normal((d, width)) / np.sqrt(d), 0.1 * rng.standard_normal(width),
                 rng.standard_normal((width, width)) / np.sqrt(width),
                 0.1 * rng.standard_normal(width), rng.standard_normal(width) / np.sqrt(width)]
    points[d] = rng.standard_normal((n_points, d))
    u, X = mlp(params[d]), ndgrad.tensor(points[d])
    by_forward_laplacian(u, X)  # (a first call, so that both timings are of warm code)
    t_fwd, lap_forward[d] = best_time(by_forward_laplacian, u, X)
    t_hes, lap_hessian[d] = best_time(by_hessian_trace, u, X)
    seconds_forward.append(t_fwd)
    seconds_hessian.append(t_hes)
    difference = np.max(np.abs(lap_forward[d] - lap_hessian[d]))
    print(f"d = {d:4d}: Forward Laplacian {1e3 * t_fwd:8.2f} ms, trace of Hessian "
          f"{1e3 * t_hes:8.2f} ms, ratio {t_hes / t_fwd:5.1f}x, largest difference "
          f"{difference:.1e}")
seconds_forward = np.array(seconds_forward)
seconds_hessian = np.array(seconds_hessian)
ratio = seconds_hessian / seconds_forward

# %%
# The measured cost against the dimension
# ---------------------------------------
# (Times measured on the machine that built this page; they vary from run to run.) The
# Hessian route grows about as ``d²`` for large ``d``, the Forward Laplacian about as ``d``.
fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(11, 4))
ax0.loglog(dims, seconds_forward, "o-", label="laplacian (Forward Laplacian)")
ax0.loglog(dims, seconds_hessian, "s-", label="trace(vmap(hessian))")
ax0.set_xticks(dims, [str(d) for d in dims])
ax0.xaxis.set_minor_locator(NullLocator())
ax0.set_xlabel("dimension d")
ax0.set_ylabel(f"seconds for {n_points} points")
ax0.set_title("measured cost")
ax0.legend()
d_last = dims[-1]
ax1.plot(lap_hessian[d_last], lap_forward[d_last], "o")
lims = [min(lap_hessian[d_last].min(), lap_forward[d_last].min()),
        max(lap_hessian[d_last].max(), lap_forward[d_last].max())]
ax1.plot(lims, lims, "k--", lw=1)
ax1.set_xlabel("trace of the Hessian")
ax1.set_ylabel("Forward Laplacian")
ax1.set_title(f"Δu at {n_points} points, d = {d_last}")
fig.tight_layout()
plt.show()
