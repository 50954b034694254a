"""examples/gallery/plot_gaussian_process.py: the gradient of the negative log marginal
likelihood against central differences of a NumPy/SciPy implementation written here, the
optimum a stationary point of it, and the posterior mean and variance against NumPy's closed
forms at the hyperparameters found."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg

from support import run_example

pytestmark = pytest.mark.cpu_only("the gallery runs on the default device")


def _gram(a, b, ell, s):
    return s ** 2 * np.exp(-0.5 * np.subtract.outer(a, b) ** 2 / ell ** 2)


def _nlml(theta, x, y):
    ell, s, sigma = np.exp(theta)
    K = _gram(x, x, ell, s) + sigma ** 2 * np.eye(x.size)
    c, low = scipy.linalg.cho_factor(K, lower=True)
    return (0.5 * y @ scipy.linalg.cho_solve((c, low), y) + np.log(np.diag(c)).sum()
            + 0.5 * x.size * np.log(2 * np.pi))


def _fd_gradient(theta, x, y, h=1e-5):
    return np.array([(_nlml(theta + h * e, x, y) - _nlml(theta - h * e, x, y)) / (2 * h)
                     for e in np.eye(theta.size)])


@pytest.fixture(scope="module")
def example():
    return run_example("plot_gaussian_process")


def test_the_nlml_gradient_matches_central_differences(example):
    g = example
    x, y = g["x_train"], g["y_train"]
    fd = _fd_gradient(g["theta_start"], x, y)
    np.testing.assert_allclose(g["grad_start"], fd, rtol=1e-7, atol=1e-8)
    np.testing.assert_allclose(g["nlml_opt"], _nlml(g["theta_opt"], x, y), rtol=1e-12)


def test_the_optimum_is_stationary(example):
    g = example
    x, y = g["x_train"], g["y_train"]
    assert np.max(np.abs(g["grad_opt"])) < 1e-5
    np.testing.assert_allclose(_fd_gradient(g["theta_opt"], x, y), 0.0, atol=1e-5)
    # no bound is active: an interior minimum, lower than the start
    lo, hi = np.array(g["bounds"]).T
    assert np.all(g["theta_opt"] > lo + 0.1) and np.all(g["theta_opt"] < hi - 0.1)
    assert g["nlml_opt"] < _nlml(g["theta_start"], x, y) - 1.0


def test_the_posterior_matches_the_closed_form(example):
    g = example
    x, y, xs = g["x_train"], g["y_train"], g["x_test"]
    ell, s, sigma = np.exp(g["theta_opt"])
    K = _gram(x, x, ell, s) + sigma ** 2 * np.eye(x.size)
    Ks = _gram(x, xs, ell, s)
    mean = Ks.T @ np.linalg.solve(K, y)
    var = s ** 2 - np.einsum("ij,ij->j", Ks, np.linalg.solve(K, Ks))
    np.testing.assert_allclose(g["mean"], mean, rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(g["variance"], var, rtol=1e-7, atol=1e-10)
    np.testing.assert_allclose(g["band"], 2 * np.sqrt(var), rtol=1e-6, atol=1e-8)
