"""examples/gallery/plot_bratu_newton.py: its sparse Jacobian against the 5-point Jacobian
written out here, its coloring (valid, and at the lower bound 5), and its Newton solution
against the discrete Bratu equations evaluated with NumPy."""

from __future__ import annotations

import numpy as np
import pytest

from support import run_example

pytestmark = pytest.mark.cpu_only("the gallery runs on the default device")


def _stencil(n, h):
    """The 5-point matrix -Δ_h on the n x n interior grid (zero boundary), dense."""
    T = (np.diag(np.full(n, 2.0)) - np.diag(np.ones(n - 1), 1) - np.diag(np.ones(n - 1), -1))
    return (np.kron(T, np.eye(n)) + np.kron(np.eye(n), T)) / h ** 2


def _residual(U, lam, h):
    P = np.pad(U, 1)
    lap = (P[2:, 1:-1] + P[:-2, 1:-1] + P[1:-1, 2:] + P[1:-1, :-2] - 4 * U) / h ** 2
    return -lap - lam * np.exp(U)


def test_bratu_newton_jacobian_coloring_and_solution():
    g = run_example("plot_bratu_newton")
    n, lam, h = g["n"], g["lam"], g["h"]
    assert h == pytest.approx(1.0 / (n + 1))
    u = g["solution"]
    assert u.shape == (n, n)

    # The Jacobian at the solution: -Δ_h - λ diag(e^u), written out.
    A = _stencil(n, h)
    expected = A - lam * np.diag(np.exp(u.reshape(-1)))
    np.testing.assert_allclose(g["J"], expected, rtol=1e-12, atol=1e-9)

    # The pattern is the stencil's, and its coloring is a valid one with 5 colors, the bound.
    pattern = g["pattern"].toarray().astype(bool)
    np.testing.assert_array_equal(pattern, A != 0)
    assert pattern.sum(axis=1).max() == 5
    assert g["ncolors"] == g["lower_bound"] == 5
    colors = g["colors"]
    assert sorted(set(colors.tolist())) == list(range(5))
    for c in range(5):  # the columns of one color share no row
        assert pattern[:, colors == c].sum(axis=1).max() <= 1

    # Newton converged, quadratically at the end, and u solves the discrete equations.
    r = g["residual_norms"]
    assert r[-1] < 1e-10 and r[0] == pytest.approx(lam)
    assert r[-2] < 1e-5 and r[-1] < 10 * r[-2] ** 2 + 1e-11
    assert np.max(np.abs(_residual(u, lam, h))) < 1e-10
    # the lower-branch solution: positive inside, symmetric under the square's symmetries
    assert u.min() > 0
    np.testing.assert_allclose(u, u.T, atol=1e-12)
    np.testing.assert_allclose(u, u[::-1], atol=1e-12)
