"""examples/gallery/plot_dask_fit.py: its gradient descent over Dask chunks against the same
iterations in NumPy on the data in memory, its first gradient against the closed form
X^T (X w - y) / m, its distance to NumPy's lstsq against gradient descent's contraction
bound, and its byte counts against the arrays' sizes."""

from __future__ import annotations

import numpy as np
import pytest

from support import run_example

pytestmark = pytest.mark.cpu_only("the gallery runs on the default device")


def test_dask_fit_matches_numpy():
    g = run_example("plot_dask_fit")
    X, y = g["X"].compute(), g["y"].compute()  # the data in memory, for the references
    m, d = X.shape
    assert m == g["m"] and g["X"].numblocks[0] > 1

    # the gradient at w = 0: X^T (X 0 - y) / m
    np.testing.assert_allclose(g["gradient_at_start"], -X.T @ y / m, rtol=1e-12, atol=1e-14)

    # the same iterations in NumPy, with the step from NumPy's eigenvalues
    lam = np.linalg.eigvalsh(X.T @ X / m)
    step = 2.0 / (lam[0] + lam[-1])
    assert g["step"] == pytest.approx(step, rel=1e-12)
    w = np.zeros(d)
    weights, losses = [w], []
    for _ in range(g["iterations"]):
        r = X @ w - y
        losses.append(r @ r / (2 * m))
        w = w - step * (X.T @ r / m)
        weights.append(w)
    np.testing.assert_allclose(g["weights"], np.array(weights), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(g["losses"], np.array(losses), rtol=1e-10)

    # gradient descent's bound: |w_k - w*| <= ((k - 1) / (k + 1))^k |w*| (k the condition
    # number), w* from lstsq, and it is not met by a wrong fit (the bound shrinks with k)
    w_star = np.linalg.lstsq(X, y, rcond=None)[0]
    np.testing.assert_allclose(g["w_star"], w_star, rtol=1e-10, atol=1e-12)  # Dask's tsqr
    r_star = X @ w_star - y
    assert g["loss_star"] == pytest.approx(r_star @ r_star / (2 * m), rel=1e-10)
    assert np.all(g["losses"] > g["loss_star"])
    rho = (lam[-1] - lam[0]) / (lam[-1] + lam[0])
    for k, wk in enumerate(g["weights"]):
        assert np.linalg.norm(wk - w_star) <= rho ** k * np.linalg.norm(w_star) * (1 + 1e-9)
    assert np.linalg.norm(g["w_fit"] - w_star) < 0.1 * np.linalg.norm(w_star)

    # the byte counts: (X, y) of each size, and a pass holds less than the largest data
    rows = np.array(g["sizes"])
    np.testing.assert_array_equal(g["data_bytes"], rows * (d + 1) * 8)
    assert np.all(g["peak_bytes"] > 0)
    assert g["peak_bytes"][-1] < g["data_bytes"][-1] / 2
