"""examples/gallery/plot_ode_fit.py: the parameters fitted through ndgrad's adjoint gradient
against SciPy's own fit of the same loss (scipy.integrate.solve_ivp, finite-difference
gradients), and the jacfwd sensitivities against central differences of SciPy's solution at
tight tolerances."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.integrate import solve_ivp
from scipy.optimize import minimize

from support import run_example

pytestmark = pytest.mark.cpu_only("the gallery runs on the default device")


def _displacement(theta, times, t_end, rtol=1e-11, atol=1e-13):
    omega, zeta, x0 = theta

    def rhs(t, y):
        return [y[1], -2.0 * zeta * omega * y[1] - omega ** 2 * y[0]]

    sol = solve_ivp(rhs, (0.0, t_end), [x0, 0.0], method="DOP853", t_eval=times,
                    rtol=rtol, atol=atol)
    assert sol.success
    return sol.y[0]


@pytest.fixture(scope="module")
def example():
    return run_example("plot_ode_fit")


def test_the_fit_matches_scipys_fit_of_the_same_loss(example):
    g = example
    t_obs, x_obs, t_end = g["t_obs"], g["x_obs"], g["T_END"]

    def loss(theta):
        r = _displacement(theta, t_obs, t_end) - x_obs
        return np.mean(r * r)

    ref = minimize(loss, g["theta_start"], method="BFGS", jac="3-point",
                   options={"gtol": 1e-10})
    np.testing.assert_allclose(g["theta_fit"], ref.x, rtol=1e-6)
    np.testing.assert_allclose(g["loss_fit"], ref.fun, rtol=1e-5)
    # the noise is small: the fit lies near the parameters that made the data
    np.testing.assert_allclose(g["theta_fit"], g["theta_true"], rtol=0.1)
    # and it is a stationary point of the loss (ndgrad's gradient there, and SciPy's)
    assert np.max(np.abs(g["grad_at_fit"])) < 1e-5
    h = 1e-5
    fd = [(loss(g["theta_fit"] + h * e) - loss(g["theta_fit"] - h * e)) / (2 * h)
          for e in np.eye(3)]
    np.testing.assert_allclose(fd, 0.0, atol=1e-5)


def test_the_sensitivities_match_central_differences_of_scipys_solution(example):
    g = example
    theta, t_fine, t_end = g["theta_fit"], g["t_fine"], g["T_END"]
    sens = g["sensitivity"]
    assert sens.shape == (t_fine.size, 3)
    np.testing.assert_allclose(g["x_fit"], _displacement(theta, t_fine, t_end),
                               rtol=1e-5, atol=1e-6)
    h = 1e-5
    for k in range(3):
        e = np.zeros(3)
        e[k] = h
        fd = (_displacement(theta + e, t_fine, t_end)
              - _displacement(theta - e, t_fine, t_end)) / (2 * h)
        np.testing.assert_allclose(sens[:, k], fd, rtol=1e-5, atol=1e-6)
    # at t = 0 the displacement is x0 whatever omega and zeta are
    np.testing.assert_allclose(sens[0], [0.0, 0.0, 1.0], atol=1e-12)
