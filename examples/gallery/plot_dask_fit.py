"""
A least-squares fit over chunked data with Dask
===============================================

When the design matrix does not fit in memory, wrap a :mod:`dask.array` array with
:func:`ndgrad.asarray`: every operation on it, and the backward pass, adds tasks to a Dask
graph, and :func:`ndgrad.compute` runs the loss and its gradient in one pass over the
chunks. The parameters stay small NumPy-backed tensors; the data is generated (or read)
chunk by chunk and never held whole.

Here we fit ``y ≈ X w`` by gradient descent, the loss ``|X w - y|² / (2 m)`` and its gradient
computed from the chunks at each step, and compare with NumPy's ``lstsq`` on the same data.
Then we measure, from the arrays' ``nbytes``, how much Dask holds at once during one pass
against the size of the data.
"""

from __future__ import annotations

import os

import dask
import dask.array as da
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.ticker import NullFormatter

import ndgrad

SMALL = bool(os.environ.get("NDGRAD_EXAMPLE_SMALL"))
m, chunk, d = (6_000, 2_000, 5) if SMALL else (400_000, 50_000, 5)
iterations = 6 if SMALL else 40


def make_data(rows, chunk_rows):
    """A lazy (X, y): X = Z A with Z standard normal, y = X w_true + noise, drawn by Dask from
    a seed, chunk by chunk. The singular values of A are 1 ... 2, so X^T X / m has its
    eigenvalues near 1 ... 4."""
    rng = da.random.default_rng(0)
    Z = rng.standard_normal((rows, d), chunks=(chunk_rows, d))
    Q, _ = np.linalg.qr(np.random.default_rng(1).standard_normal((d, d)))
    A = Q * np.linspace(1.0, 2.0, d)
    w_true = np.linspace(-1.0, 1.0, d)
    X = Z @ A
    y = X @ w_true + 0.1 * rng.standard_normal(rows, chunks=chunk_rows)
    return X, y


X, y = make_data(m, chunk)
Xt, yt = ndgrad.asarray(X), ndgrad.asarray(y)
print(f"X: {m} x {d} float64, {X.nbytes / 1e6:.1f} MB in {X.numblocks[0]} chunks of "
      f"{chunk * d * 8 / 1e6:.2f} MB")


def loss_fn(w):
    r = Xt @ w - yt
    return (r * r).mean() / 2


# %%
# Gradient descent, one pass over the chunks per step
# ---------------------------------------------------
# The step ``2 / (λ_min + λ_max)`` uses the extreme eigenvalues of the d x d matrix
# ``X^T X / m`` (one more pass, computed by Dask). Each iteration asks
# :func:`ndgrad.autograd.grad` for the gradient as a lazy tensor and computes the loss and the
# gradient together; ``w`` and its gradient are NumPy-backed.
with dask.config.set(scheduler="threads"):
    gram = (X.T @ X / m).compute()
    eigenvalues = np.linalg.eigvalsh(gram)
    step = 2.0 / (eigenvalues[0] + eigenvalues[-1])
    w = ndgrad.zeros(d, requires_grad=True)
    losses, weights = [], [w.detach().numpy().copy()]
    for it in range(iterations):
        loss = loss_fn(w)
        (g,) = ndgrad.autograd.grad(loss, [w])
        loss_value, gradient = ndgrad.compute(loss, g)
        if it == 0:
            gradient_at_start = gradient.numpy()
        losses.append(loss_value.item())
        w = (w.detach() - step * gradient).requires_grad_()
        weights.append(w.detach().numpy().copy())
losses = np.array(losses)
weights = np.array(weights)
w_fit = weights[-1]
print(f"eigenvalues of X^T X / m: {eigenvalues.min():.3f} ... {eigenvalues.max():.3f}, "
      f"step {step:.4f}")
for it in sorted({0, 1, 2, 5, 10, iterations - 1} & set(range(iterations))):
    print(f"iteration {it:3d}: loss {losses[it]:.12f}")
print("fitted w:", np.array2string(w_fit, precision=6))

# %%
# What Dask holds during one pass, against the size of the data
# -------------------------------------------------------------
# A Dask callback sums the ``nbytes`` of the intermediate results the scheduler holds after
# each task; the largest sum is the pass's peak. With the synchronous scheduler (one task at
# a time, the same order every run) the peak grows far more slowly than the data: a few
# chunks at a time are in memory, never the whole of X.
sizes = [m // 3, m, 3 * m] if SMALL else [m // 4, m, 4 * m]
data_bytes, peak_bytes = [], []


def track(key, result, dsk, state, worker_id):
    held = sum(getattr(v, "nbytes", 0) for v in state["cache"].values())
    peak[0] = max(peak[0], held)


for rows in sizes:
    Xs, ys = make_data(rows, chunk)
    Xst, yst = ndgrad.asarray(Xs), ndgrad.asarray(ys)
    w0 = ndgrad.zeros(d, requires_grad=True)
    r = Xst @ w0 - yst
    loss = (r * r).mean() / 2
    (g,) = ndgrad.autograd.grad(loss, [w0])
    peak = [0]
    with dask.config.set(scheduler="synchronous"), dask.callbacks.Callback(posttask=track):
        ndgrad.compute(loss, g)
    data_bytes.append(Xs.nbytes + ys.nbytes)
    peak_bytes.append(peak[0])
    print(f"{rows:9d} rows: data {data_bytes[-1] / 1e6:8.2f} MB, peak held during a pass "
          f"{peak_bytes[-1] / 1e6:6.2f} MB")
data_bytes = np.array(data_bytes, dtype=float)
peak_bytes = np.array(peak_bytes, dtype=float)

# %%
# The figures: the loss against the iteration, and the memory held against the data
# ----------------------------------------------------------------------------------
# The least-squares solution by Dask's own chunked QR (``dask.array.linalg.lstsq``, also out
# of core) gives the smallest loss, to which gradient descent converges linearly.
with dask.config.set(scheduler="threads"):
    w_star = da.linalg.lstsq(X, y)[0].compute()
    r_star = (X @ w_star - y)
    loss_star = float((r_star * r_star).mean().compute()) / 2
print(f"distance from Dask's lstsq solution: {np.linalg.norm(w_fit - w_star):.1e}, loss "
      f"{losses[-1]:.12f} against the least {loss_star:.12f}")
fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(11, 4))
ax0.semilogy(losses - loss_star, "o-", ms=3)
ax0.set_xlabel("iteration")
ax0.set_ylabel("loss - least-squares minimum")
ax0.set_title(f"gradient descent over {X.numblocks[0]} chunks")
ax1.loglog(data_bytes / 1e6, data_bytes / 1e6, "k--", lw=1, label="the data")
ax1.loglog(data_bytes / 1e6, peak_bytes / 1e6, "o-", label="peak held during a pass")
ax1.set_xlabel("data (MB)")
for axis in (ax1.xaxis, ax1.yaxis):
    axis.set_minor_formatter(NullFormatter())
ax1.set_ylabel("MB")
ax1.set_title("memory held, from the arrays' nbytes")
ax1.legend()
fig.tight_layout()
plt.show()
