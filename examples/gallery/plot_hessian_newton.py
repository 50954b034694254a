"""
Newton's method with an exact Hessian, against gradient descent
===============================================================

Rosenbrock's function ``f(x, y) = (1 - x)^2 + 100 (y - x^2)^2`` has its minimum at (1, 1) at
the bottom of a long, narrow, curved valley: the gradient points mostly across the valley,
so gradient descent zig-zags and crawls along it, while Newton's method, which rescales each
step by the curvature, follows it and then converges quadratically.

:func:`ndgrad.func.hessian` gives the exact Hessian of a function written with ndgrad's
operations (forward-over-reverse, as ``jax.hessian``), and :func:`ndgrad.func.grad` its
gradient: no derivative is written by hand.
"""

from __future__ import annotations

import os

import matplotlib.pyplot as plt
import numpy as np

import ndgrad
from ndgrad.func import grad, hessian

small = bool(os.environ.get("NDGRAD_EXAMPLE_SMALL"))
gd_iterations = 300 if small else 10000


def rosenbrock(p):
    x, y = p[0], p[1]
    return (1 - x) ** 2 + 100 * (y - x ** 2) ** 2


grad_f = grad(rosenbrock)
hessian_f = hessian(rosenbrock)


def f_np(p):
    return float(rosenbrock(ndgrad.tensor(p)).item())


def gradient(p):
    return grad_f(ndgrad.tensor(p)).numpy()


def hessian_np(p):
    return hessian_f(ndgrad.tensor(p)).numpy()


# %%
# The derivatives at a few random points: the gradient is a vector of 2, the Hessian a
# symmetric 2 x 2 matrix.
rng = np.random.default_rng(0)
check_points = rng.uniform(-2.0, 2.0, size=(4, 2))
check_gradients = np.stack([gradient(p) for p in check_points])
check_hessians = np.stack([hessian_np(p) for p in check_points])
for p, gr, he in zip(check_points, check_gradients, check_hessians):
    print(f"at ({p[0]:+.3f}, {p[1]:+.3f}): gradient {np.array2string(gr, precision=3)}, "
          f"Hessian {np.array2string(he.ravel(), precision=3)}")


# %%
# Gradient descent takes fixed steps ``-lr g``, with ``lr`` just below ``2 / L`` for the
# largest curvature ``L`` on its way (about 1,500 near the start: larger steps diverge).
# Newton's method solves ``H d = -g`` and halves the step along ``d`` until ``f`` decreases
# enough (Armijo's backtracking line search), falling back to ``-g`` where ``H`` is not
# positive definite (where ``d`` would not go downhill). It stops where the gradient
# vanishes to rounding.
learning_rate = 1e-3


def line_search(p, value, g, d):
    t = 1.0
    while f_np(p + t * d) > value + 1e-4 * t * (g @ d) and t > 1e-20:
        t *= 0.5
    return p + t * d


def newton(p0, iterations=100, gtol=1e-12):
    p = np.array(p0, dtype=float)
    path, values = [p.copy()], [f_np(p)]
    for _ in range(iterations):
        g = gradient(p)
        if np.linalg.norm(g) < gtol:
            break
        d = np.linalg.solve(hessian_np(p), -g)
        if g @ d >= 0:
            d = -g
        p = line_search(p, values[-1], g, d)
        path.append(p.copy())
        values.append(f_np(p))
    return np.array(path), np.array(values)


def gradient_descent(p0, iterations, lr=learning_rate):
    p = np.array(p0, dtype=float)
    path, values = [p.copy()], [f_np(p)]
    for _ in range(iterations):
        p = p - lr * gradient(p)
        path.append(p.copy())
        values.append(f_np(p))
    return np.array(path), np.array(values)


start = np.array([-1.2, 1.0])
newton_path, newton_values = newton(start)
gd_path, gd_values = gradient_descent(start, gd_iterations)
newton_minimum, gd_minimum = newton_path[-1], gd_path[-1]
newton_error = float(np.max(np.abs(newton_minimum - 1.0)))
gd_error = float(np.max(np.abs(gd_minimum - 1.0)))
print(f"Newton:           {len(newton_path) - 1:5d} steps to ({newton_minimum[0]:.12f}, "
      f"{newton_minimum[1]:.12f}), f = {newton_values[-1]:.3e}, |p - (1, 1)| = "
      f"{newton_error:.1e}")
print(f"gradient descent: {len(gd_path) - 1:5d} steps to ({gd_minimum[0]:.12f}, "
      f"{gd_minimum[1]:.12f}), f = {gd_values[-1]:.3e}, |p - (1, 1)| = {gd_error:.1e}")

# %%
# The two paths over the contours of ``f`` (log-spaced levels), and ``f`` along them.
X, Y = np.meshgrid(np.linspace(-2.0, 2.0, 201), np.linspace(-1.0, 3.0, 201))
Z = (1 - X) ** 2 + 100 * (Y - X ** 2) ** 2

fig, (ax_path, ax_loss) = plt.subplots(1, 2, figsize=(11, 4.5))
ax_path.contour(X, Y, Z, levels=np.logspace(-1, 3.5, 15), cmap="viridis", linewidths=0.7)
ax_path.plot(gd_path[:, 0], gd_path[:, 1], ".-", ms=2, lw=0.8, color="tab:orange",
             label=f"gradient descent ({len(gd_path) - 1} steps)")
ax_path.plot(newton_path[:, 0], newton_path[:, 1], "o-", ms=4, color="tab:blue",
             label=f"Newton ({len(newton_path) - 1} steps)")
ax_path.plot([1.0], [1.0], "*", ms=14, color="tab:red", label="minimum (1, 1)")
ax_path.set_xlabel("x")
ax_path.set_ylabel("y")
ax_path.set_title("Paths from (-1.2, 1) over Rosenbrock's function")
ax_path.legend(fontsize="small", loc="lower right")

floor = 1e-30  # f reaches exactly 0 at (1, 1) in floating point
ax_loss.semilogy(np.maximum(newton_values, floor), "o-", ms=4, label="Newton")
ax_loss.semilogy(np.maximum(gd_values, floor), lw=1, label="gradient descent")
ax_loss.set_xscale("symlog", linthresh=10)
ax_loss.set_xlabel("iteration")
ax_loss.set_ylabel("f")
ax_loss.set_title("Convergence")
ax_loss.legend()
fig.tight_layout()
plt.show()
