"""examples/gallery/plot_hessian_newton.py: the gradients and Hessians of Rosenbrock's
function it computes with ndgrad.func against their closed forms written here (and SciPy's
rosen_der, rosen_hess), its gradient-descent and Newton paths against the same iterations
run here on the closed forms, and Newton's minimum at (1, 1)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import rosen, rosen_der, rosen_hess

from support import run_example

pytestmark = pytest.mark.cpu_only("the gallery runs on the default device")


def f(p):
    x, y = p
    return (1 - x) ** 2 + 100 * (y - x ** 2) ** 2


def gradient(p):
    x, y = p
    return np.array([-2 * (1 - x) - 400 * x * (y - x ** 2), 200 * (y - x ** 2)])


def hessian(p):
    x, y = p
    return np.array([[2 - 400 * y + 1200 * x ** 2, -400 * x], [-400 * x, 200.0]])


@pytest.fixture(scope="module")
def example():
    return run_example("plot_hessian_newton")


def test_the_closed_forms_here_are_scipys():
    p = np.array([0.3, -0.7])
    np.testing.assert_allclose(f(p), rosen(p), rtol=1e-15)
    np.testing.assert_allclose(gradient(p), rosen_der(p), rtol=1e-14)
    np.testing.assert_allclose(hessian(p), rosen_hess(p), rtol=1e-14)


def test_the_gradients_and_hessians_are_the_closed_forms(example):
    g = example
    points = g["check_points"]
    assert points.shape == (4, 2)
    np.testing.assert_allclose(g["check_gradients"], [gradient(p) for p in points],
                               rtol=1e-13, atol=1e-11)
    np.testing.assert_allclose(g["check_hessians"], [hessian(p) for p in points],
                               rtol=1e-13, atol=1e-11)
    # and the example's functions at points drawn here, among them the minimum
    rng = np.random.default_rng(12345)
    for p in [*rng.uniform(-3.0, 3.0, size=(3, 2)), np.array([1.0, 1.0])]:
        np.testing.assert_allclose(g["gradient"](p), gradient(p), rtol=1e-13, atol=1e-11)
        np.testing.assert_allclose(g["hessian_np"](p), hessian(p), rtol=1e-13, atol=1e-11)
        np.testing.assert_allclose(g["f_np"](p), f(p), rtol=1e-14, atol=1e-300)


def test_newton_finds_the_minimum(example):
    g = example
    np.testing.assert_allclose(g["newton_minimum"], [1.0, 1.0], rtol=0, atol=1e-8)
    assert g["newton_error"] <= 1e-8
    np.testing.assert_allclose(g["newton_values"][-1], 0.0, atol=1e-16)
    np.testing.assert_array_equal(g["newton_path"][0], [-1.2, 1.0])
    # gradient descent, the comparison, is still far from it after its iterations
    assert g["gd_error"] > 1e-2


def test_the_paths_are_the_iterations_on_the_closed_forms(example):
    g = example
    p = np.array([-1.2, 1.0])
    path = [p]
    for _ in range(len(g["gd_path"]) - 1):
        p = p - g["learning_rate"] * gradient(p)
        path.append(p)
    np.testing.assert_allclose(g["gd_path"], path, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(g["gd_values"], [f(q) for q in path], rtol=1e-9, atol=1e-14)

    p = np.array([-1.2, 1.0])
    path = [p]
    while np.linalg.norm(gradient(p)) >= 1e-12 and len(path) <= 100:
        gr = gradient(p)
        d = np.linalg.solve(hessian(p), -gr)
        if gr @ d >= 0:
            d = -gr
        t = 1.0
        while f(p + t * d) > f(p) + 1e-4 * t * (gr @ d) and t > 1e-20:
            t *= 0.5
        p = p + t * d
        path.append(p)
    assert len(g["newton_path"]) == len(path)
    np.testing.assert_allclose(g["newton_path"], path, rtol=1e-9, atol=1e-12)
