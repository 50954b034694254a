"""
Gaussian-process regression: hyperparameters by their gradient
===============================================================

A Gaussian process with a squared-exponential kernel has three hyperparameters: the length
scale ``ell`` (how fast the function varies), the signal variance ``s^2`` and the noise
variance ``sigma^2``. The standard way to choose them is to minimize the negative log
marginal likelihood of the data,

``NLML = 1/2 y^T K^-1 y + 1/2 log det K + n/2 log(2 pi)``, with
``K = s^2 exp(-(x_i - x_j)^2 / (2 ell^2)) + sigma^2 I``.

Written with :func:`ndgrad.linalg.cholesky` and a triangular solve, as one would in NumPy,
its gradient costs one backward pass, and SciPy's L-BFGS-B (through
:func:`ndgrad.optimize.minimize`) finds the optimum. No hand-derived ``dK/d theta`` traces.
"""

from __future__ import annotations

import os

import matplotlib.pyplot as plt
import numpy as np

import ndgrad
from ndgrad.func import grad
from ndgrad.linalg import cholesky, solve_triangular
from ndgrad.optimize import minimize

SMALL = bool(os.environ.get("NDGRAD_EXAMPLE_SMALL"))
n_train = 25 if SMALL else 120

# %%
# Noisy observations of a smooth function at random points (seeded).
rng = np.random.default_rng(1)
x_train = np.sort(rng.uniform(0.0, 6.0, n_train))
y_train = np.sin(1.5 * x_train) + 0.3 * np.cos(4.0 * x_train) + 0.2 * rng.standard_normal(n_train)
x = ndgrad.tensor(x_train)
y = ndgrad.tensor(y_train)

# %%
# The kernel and the negative log marginal likelihood, in ndgrad operations. The
# hyperparameters are optimized on a log scale, ``theta = log(ell, s, sigma)``, which keeps
# them positive. The Cholesky factor ``L`` gives both terms: ``y^T K^-1 y = |L^-1 y|^2`` and
# ``log det K = 2 sum log diag L``.


def kernel(a, b, ell, s):
    d = a[:, None] - b[None, :]
    return s ** 2 * ndgrad.exp(-0.5 * (d / ell) ** 2)


def nlml(theta):
    ell, s, sigma = ndgrad.exp(theta[0]), ndgrad.exp(theta[1]), ndgrad.exp(theta[2])
    K = kernel(x, x, ell, s) + sigma ** 2 * ndgrad.eye(n_train)
    L = cholesky(K)
    alpha = solve_triangular(L, y[:, None], upper=False)
    return (0.5 * (alpha * alpha).sum() + ndgrad.log(ndgrad.diagonal(L)).sum()
            + 0.5 * n_train * np.log(2 * np.pi))


theta_start = np.log([1.0, 1.0, 0.5])
grad_start = grad(nlml)(ndgrad.tensor(theta_start)).numpy()
print("NLML at the start:", f"{float(nlml(ndgrad.tensor(theta_start))):.4f},",
      "gradient", np.array2string(grad_start, precision=4))

# %%
# L-BFGS-B on the gradient. The bounds keep the noise from collapsing to zero, where ``K``
# would be singular.
bounds = [(-3.0, 3.0), (-3.0, 3.0), (-5.0, 1.0)]
res = minimize(nlml, ndgrad.tensor(theta_start), method="L-BFGS-B", bounds=bounds,
               options={"gtol": 1e-9, "ftol": 1e-15})
theta_opt = res.x.numpy()
nlml_opt = float(res.fun)
grad_opt = grad(nlml)(res.x).numpy()
ell_opt, s_opt, sigma_opt = np.exp(theta_opt)
print(f"L-BFGS-B: {res.nit} iterations, NLML {nlml_opt:.4f}")
print(f"  length scale {ell_opt:.4f}, signal std {s_opt:.4f}, noise std {sigma_opt:.4f}")
print(f"  largest gradient entry at the optimum: {np.abs(grad_opt).max():.1e}")

# %%
# The posterior at the optimum, on a grid: mean ``K_*^T K^-1 y`` and variance
# ``s^2 - diag(K_*^T K^-1 K_*)``, by the same Cholesky factor.
x_test = np.linspace(-0.5, 6.5, 60 if SMALL else 300)
xs = ndgrad.tensor(x_test)
ell, s, sigma = (ndgrad.tensor(v) for v in (ell_opt, s_opt, sigma_opt))
L = cholesky(kernel(x, x, ell, s) + sigma ** 2 * ndgrad.eye(n_train))
K_star = kernel(x, xs, ell, s)
V = solve_triangular(L, K_star, upper=False)
alpha = solve_triangular(L, y[:, None], upper=False)
mean = (V * alpha).sum(axis=0).numpy()
variance = (s ** 2 - (V * V).sum(axis=0)).numpy()
band = 2.0 * np.sqrt(variance)
print(f"posterior std: {np.sqrt(variance).min():.3f} among the data, "
      f"{np.sqrt(variance).max():.3f} at the edges")

# %%
# The data, the posterior mean and its 2-sigma band (the band of the latent function; the
# observations scatter around it by the noise std as well).
fig, ax = plt.subplots(figsize=(7, 4))
ax.fill_between(x_test, mean - band, mean + band, alpha=0.25, label=r"mean $\pm$ 2 std")
ax.plot(x_test, mean, label="posterior mean")
ax.plot(x_train, y_train, "k.", label="data")
ax.set_xlabel("x")
ax.set_ylabel("y")
ax.set_title(rf"GP fit: $\ell$ = {ell_opt:.2f}, s = {s_opt:.2f}, $\sigma$ = {sigma_opt:.3f}")
ax.legend(fontsize="small")
fig.tight_layout()
plt.show()
