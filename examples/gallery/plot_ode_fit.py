"""
Fitting an oscillator's parameters through its ODE solver
=========================================================

A damped oscillator ``x'' + 2 zeta omega x' + omega^2 x = 0`` is observed at a few times, with
noise. Which natural frequency ``omega``, damping ratio ``zeta`` and initial displacement
``x0`` explain the data? :func:`ndgrad.integrate.solve_ivp` is SciPy's solver with derivatives:
the gradient of a least-squares loss with respect to the parameters comes from one adjoint
(backward-in-time) solve, however many parameters there are, and
:func:`ndgrad.optimize.minimize` hands it to SciPy's BFGS.

Once fitted, :func:`ndgrad.func.jacfwd` of the solve gives the sensitivities
``d x(t) / d theta_k`` along the whole trajectory (forward sensitivity equations): which
parameter the data at each time constrain, the raw material of confidence intervals and of
experimental design.
"""

from __future__ import annotations

import os

import matplotlib.pyplot as plt
import numpy as np

import ndgrad
from ndgrad.func import jacfwd
from ndgrad.integrate import solve_ivp
from ndgrad.optimize import minimize

SMALL = bool(os.environ.get("NDGRAD_EXAMPLE_SMALL"))
n_obs = 12 if SMALL else 60
T_END = 6.0 if SMALL else 12.0
RTOL, ATOL = (1e-7, 1e-9) if SMALL else (1e-9, 1e-11)

# %%
# The model: the state is ``(x, v)``; ``theta = (omega, zeta, x0)``, the oscillator starting
# at rest at ``x0``. The right-hand side is written with ndgrad operations, so the solver can
# differentiate it. The tolerances govern the gradient's accuracy as well as the solution's
# (the adjoint solve uses them too), so they are tighter than a plain simulation would need;
# DOP853, the eighth-order method, takes few steps at such tolerances.


def oscillator(t, y, omega, zeta):
    x, v = y[0], y[1]
    return ndgrad.stack([v, -2.0 * zeta * omega * v - omega ** 2 * x])


def trajectory(theta, times):
    """The displacement x(t) at ``times`` for the parameters ``theta``."""
    y0 = ndgrad.stack([theta[2], ndgrad.zeros_like(theta[2])])
    sol = solve_ivp(oscillator, (0.0, T_END), y0, method="DOP853", t_eval=times,
                    args=(theta[0], theta[1]), rtol=RTOL, atol=ATOL)
    return sol.y[0]


# %%
# Synthetic data from known parameters, with seeded Gaussian noise.
theta_true = np.array([1.3, 0.15, 2.0])
noise = 0.05
rng = np.random.default_rng(0)
t_obs = np.linspace(0.2, T_END, n_obs)
x_clean = trajectory(ndgrad.tensor(theta_true), t_obs).numpy()
x_obs = x_clean + noise * rng.standard_normal(n_obs)

# %%
# The loss is the mean squared misfit; ``minimize`` differentiates it (the adjoint solve) and
# runs SciPy's BFGS from a rough first guess.
data = ndgrad.tensor(x_obs)


def loss(theta):
    r = trajectory(theta, t_obs) - data
    return (r * r).mean()


theta_start = np.array([1.2, 0.25, 1.7])
res = minimize(loss, ndgrad.tensor(theta_start), method="BFGS", tol=1e-7)
theta_fit = res.x.numpy()
loss_fit = float(res.fun)
grad_at_fit = ndgrad.func.grad(loss)(res.x).numpy()
print(f"BFGS: {res.nit} iterations, {res.nfev} solves; loss {loss_fit:.3e}")
for name, true, fit in zip(["omega", "zeta", "x0"], theta_true, theta_fit):
    print(f"  {name:>5}: true {true:.4f}, fitted {fit:.4f}")
print(f"  gradient at the fit: {np.abs(grad_at_fit).max():.1e} (largest entry)")

# %%
# Sensitivities of the fitted trajectory: ``jacfwd`` of ``theta -> x(t)`` on a fine grid is
# the ``(n_times, 3)`` matrix of ``d x(t) / d theta_k``. The frequency's sensitivity grows
# along the trajectory (a phase error accumulates), the initial displacement's decays with
# the envelope.
t_fine = np.linspace(0.0, T_END, 31 if SMALL else 301)
x_fit = trajectory(ndgrad.tensor(theta_fit), t_fine).numpy()
sensitivity = jacfwd(lambda th: trajectory(th, t_fine))(ndgrad.tensor(theta_fit)).numpy()
print("largest |d x(t) / d theta_k| over the trajectory:",
      ", ".join(f"{n} {v:.2f}" for n, v in zip(["omega", "zeta", "x0"],
                                               np.abs(sensitivity).max(axis=0))))

# %%
# The data and the fit, then the three sensitivities over time.
fig, (ax0, ax1) = plt.subplots(2, 1, figsize=(7, 6), sharex=True)
ax0.plot(t_obs, x_obs, "o", ms=4, label="noisy observations")
ax0.plot(t_fine, trajectory(ndgrad.tensor(theta_true), t_fine).numpy(), "k:", label="truth")
ax0.plot(t_fine, x_fit, label="fitted model")
ax0.set_ylabel("x(t)")
ax0.legend(fontsize="small")
ax0.set_title("Damped oscillator fitted through solve_ivp's adjoint gradient")
for k, name in enumerate(["omega", "zeta", "x_0"]):
    ax1.plot(t_fine, sensitivity[:, k], label=rf"$\partial x(t) / \partial \{name}$"
             if name != "x_0" else r"$\partial x(t) / \partial x_0$")
ax1.axhline(0.0, color="0.7", lw=0.8)
ax1.set_xlabel("t")
ax1.set_ylabel("sensitivity")
ax1.legend(fontsize="small")
fig.tight_layout()
plt.show()
