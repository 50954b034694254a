"""examples/gallery/plot_forward_laplacian.py: the Laplacians of its network by the Forward
Laplacian and by the Hessian's trace, against each other and against a central-difference
Laplacian of the same network written in NumPy here. No timing is checked."""

from __future__ import annotations

import numpy as np
import pytest

from support import run_example

pytestmark = pytest.mark.cpu_only("the gallery runs on the default device")


def _u(params, X):
    W1, b1, W2, b2, w3 = params
    return np.tanh(np.tanh(X @ W1 + b1) @ W2 + b2) @ w3


def _fd_laplacian(params, X, h=1e-4):
    """Σ_i (u(x + h e_i) - 2 u(x) + u(x - h e_i)) / h², for each row x of X."""
    u0 = _u(params, X)
    total = np.zeros(X.shape[0])
    for i in range(X.shape[1]):
        e = np.zeros(X.shape[1])
        e[i] = h
        total += (_u(params, X + e) - 2 * u0 + _u(params, X - e)) / h ** 2
    return total


def test_forward_laplacian_matches_hessian_trace_and_finite_differences():
    g = run_example("plot_forward_laplacian")
    dims = g["dims"]
    assert len(dims) >= 3
    for d in dims:
        params, X = g["params"][d], g["points"][d]
        assert X.shape[1] == d
        fwd, hes = g["lap_forward"][d], g["lap_hessian"][d]
        assert fwd.shape == hes.shape == (X.shape[0],)
        np.testing.assert_allclose(fwd, hes, rtol=1e-12, atol=1e-12)
        fd = _fd_laplacian(params, X)
        np.testing.assert_allclose(fwd, fd, rtol=1e-5, atol=1e-6 * d)
        assert np.std(fwd) > 1e-3  # the points' Laplacians differ: a check with teeth
    assert g["ratio"].shape == (len(dims),) and np.all(g["ratio"] > 0)
