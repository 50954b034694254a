"""ndgrad.interpolate: values against SciPy, derivatives against finite differences (gradcheck)
and against SciPy's splines of unit vectors (the spline is linear in y), vmap against a loop."""

from __future__ import annotations

import numpy as np
import pytest

import ndgrad
from ndgrad import interpolate as I
from ndgrad.checks import gradcheck, gradgradcheck
from ndgrad.func import jacrev, vmap
from support import close, host

si = pytest.importorskip("scipy.interpolate")

RNG = np.random.default_rng(0)
X = np.concatenate([[0.0], np.sort(RNG.uniform(0.0, 5.0, 5)), [5.0]])
Y = RNG.normal(size=(3, 7))
XQ = np.linspace(-0.5, 5.5, 13)  # both sides outside [X[0], X[-1]], and inside


def t(a, grad=False):
    return ndgrad.tensor(np.asarray(a, dtype=float), requires_grad=grad)


@pytest.mark.parametrize("bc", ["not-a-knot", "natural", "clamped",
                                ((1, [0.3, -0.2, 1.0]), (2, [-1.0, 0.5, 0.0]))])
def test_cubic_spline_matches_scipy(bc):
    ours = I.CubicSpline(t(X), t(Y), axis=1, bc_type=bc)
    ref = si.CubicSpline(X, Y, axis=1, bc_type=bc)
    for nu in (0, 1, 2, 3):
        close(ours(t(XQ.reshape(1, 13)), nu=nu), ref(XQ.reshape(1, 13), nu), rtol=1e-10,
              atol=1e-10)
    close(ours.derivative()(t(XQ)), ref.derivative()(XQ), rtol=1e-10, atol=1e-10)
    close(ours.c.reshape(4, 6, 3), ref.c, rtol=1e-10, atol=1e-10)


def test_cubic_spline_periodic_and_few_points():
    yp = Y.T.copy()
    yp[-1] = yp[0]
    ours = I.CubicSpline(t(X), t(yp), bc_type="periodic")
    close(ours(t(XQ)), si.CubicSpline(X, yp, bc_type="periodic")(XQ), rtol=1e-10, atol=1e-12)
    for n in (2, 3):  # SciPy's special cases: a line, a parabola
        close(I.CubicSpline(t(X[:n]), t(Y[0, :n]))(t(XQ)),
              si.CubicSpline(X[:n], Y[0, :n])(XQ), rtol=1e-10, atol=1e-12)
    out = I.CubicSpline(t(X), t(Y[0]), extrapolate=False)(t(XQ))
    assert np.isnan(host(out)[[0, -1]]).all() and not np.isnan(host(out)[1:-1]).any()


def test_cubic_spline_errors():
    with pytest.raises(ValueError, match="strictly increasing"):
        I.CubicSpline(t([0.0, 2.0, 1.0]), t([1.0, 2.0, 3.0]))
    with pytest.raises(ValueError, match="doesn't match"):
        I.CubicSpline(t([0.0, 1.0, 2.0]), t([1.0, 2.0]))
    with pytest.raises(ValueError, match="periodic"):
        I.CubicSpline(t([0.0, 1.0, 2.0]), t([1.0, 2.0, 3.0]), bc_type="periodic")
    with pytest.raises(ValueError, match="bc_type"):
        I.CubicSpline(t([0.0, 1.0, 2.0]), t([1.0, 2.0, 3.0]), bc_type="free")


@pytest.mark.parametrize("kind", ["linear", "nearest", "cubic"])
def test_interp1d_matches_scipy(kind):
    perm = np.random.default_rng(2).permutation(7)  # unsorted x, assume_sorted=False
    for fill in [(-1.0, 2.0), "extrapolate", np.nan]:
        ours = I.interp1d(t(X[perm]), t(Y[:, perm]), kind=kind, bounds_error=False,
                          fill_value=fill)(t(XQ.reshape(13, 1)))
        ref = si.interp1d(X[perm], Y[:, perm], kind=kind, bounds_error=False,
                          fill_value=fill)(XQ.reshape(13, 1))
        assert ours.shape == ref.shape == (3, 13, 1)
        close(ours, ref, rtol=1e-10, atol=1e-12, equal_nan=True)
    ours = I.interp1d(t(X), t(Y.T), kind=kind, axis=0)(t(XQ[1:-1]))
    close(ours, si.interp1d(X, Y.T, kind=kind, axis=0)(XQ[1:-1]), rtol=1e-10, atol=1e-12)
    with pytest.raises(ValueError, match="below the interpolation range"):
        I.interp1d(t(X), t(Y), kind=kind)(t(XQ))


def test_make_interp_spline_matches_scipy():
    for k in (1, 3):
        ours = I.make_interp_spline(t(X), t(Y.T), k=k)
        ref = si.make_interp_spline(X, Y.T, k=k)
        close(ours(t(XQ)), ref(XQ), rtol=1e-10, atol=1e-10)
        close(ours(t(XQ), nu=1), ref(XQ, nu=1), rtol=1e-10, atol=1e-10)
    ours = I.make_interp_spline(t(X), t(Y[0]), bc_type="natural")
    close(ours(t(XQ)), si.make_interp_spline(X, Y[0], bc_type="natural")(XQ), rtol=1e-10)
    with pytest.raises(NotImplementedError, match="k=2"):
        I.make_interp_spline(t(X), t(Y[0]), k=2)


GRID = (np.r_[0.0, np.sort(RNG.uniform(0, 1, 2)), 1.0],
        np.r_[0.0, np.sort(RNG.uniform(0, 1, 3)), 1.0], np.array([0.0, 0.3, 1.0]))
VALUES = RNG.normal(size=(4, 5, 3, 2))
XI = RNG.uniform(-0.2, 1.2, (6, 3))


@pytest.mark.parametrize("method", ["linear", "nearest"])
def test_regular_grid_matches_scipy(method):
    for fill in (None, np.nan, -3.0):
        ours = I.interpn(tuple(t(g) for g in GRID), t(VALUES), t(XI), method=method,
                         bounds_error=False, fill_value=fill)
        ref = si.interpn(GRID, VALUES, XI, method=method, bounds_error=False,
                         fill_value=fill)
        close(ours, ref, rtol=1e-12, atol=1e-12, equal_nan=True)
    # descending grid in one dimension, xi as a tuple of arrays
    g = (GRID[0][::-1], GRID[1], GRID[2])
    rgi = I.RegularGridInterpolator(tuple(t(a) for a in g), t(VALUES[::-1]), method=method)
    inside = np.clip(XI, 0.31, 0.69)
    ref = si.RegularGridInterpolator(g, VALUES[::-1], method=method)(inside)
    close(rgi(tuple(t(inside[:, d]) for d in range(3))), ref, rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="out of bounds in dimension"):
        rgi(t(XI))
    with pytest.raises(NotImplementedError, match="quintic"):
        I.RegularGridInterpolator(tuple(t(a) for a in GRID), t(VALUES), method="quintic")


def test_regular_grid_cubic_matches_scipy():
    # SciPy's "cubic" solves its system iteratively (gcrotmk, about 1e-5); "cubic_legacy" is
    # the same tensor-product not-a-knot spline by exact 1-D solves
    g = (np.r_[0.0, np.sort(RNG.uniform(0, 1, 3)), 1.0], np.linspace(0.0, 1.0, 6), GRID[0])
    v = np.random.default_rng(5).normal(size=(5, 6, 4, 2))
    for fill in (None, np.nan):
        ours = I.interpn(tuple(t(a) for a in g), t(v), t(XI), method="cubic",
                         bounds_error=False, fill_value=fill)
        ref = si.interpn(g, v, XI, method="cubic_legacy", bounds_error=False,
                         fill_value=fill)
        close(ours, ref, rtol=1e-10, atol=1e-12, equal_nan=True)
    with pytest.raises(ValueError, match="at least 4 points"):
        I.interpn(tuple(t(a) for a in GRID), t(VALUES), t(XI[:1] * 0), method="cubic")


@pytest.mark.cpu_only("finite differences: the device does not change the derivative rules")
@pytest.mark.parametrize("bc", ["not-a-knot", "natural", "clamped", "periodic"])
def test_cubic_spline_gradients_in_knots_values_and_points(bc):
    x = t([0.0, 1.1, 2.0, 3.2, 4.0], True)
    q = t([0.3, 1.7, 2.0, 3.9, -0.5, 4.6], True)
    if bc == "periodic":
        y = t([0.0, 1.0, -1.0, 2.0], True)
        assert gradcheck(lambda a, b, c: I.CubicSpline(
            a, ndgrad.concatenate([b, b[:1]]), bc_type=bc)(c, nu=1), (x, y, q))
    else:
        y = t([0.0, 1.0, -1.0, 2.0, 0.5], True)
        assert gradcheck(lambda a, b, c: I.CubicSpline(a, b, bc_type=bc)(c), (x, y, q),
                         check_forward_ad=True)  # reverse and forward mode


@pytest.mark.cpu_only("finite differences of second order")
def test_cubic_spline_second_order_and_bc_values():
    x = t([0.0, 1.1, 2.0, 3.2, 4.0], True)
    y = t([0.0, 1.0, -1.0, 2.0, 0.5], True)
    q = t([0.3, 2.5, 4.6], True)
    assert gradgradcheck(lambda a, b, c: I.CubicSpline(a, b)(c), (x, y, q))
    d = t(0.7, True)  # the clamped slope value is differentiable too
    assert gradcheck(lambda v, c: I.CubicSpline(x.detach(), y.detach(),
                                                bc_type=((1, v), (2, v)))(c), (d, q))


def test_spline_jacobian_in_y_is_scipy_spline_of_unit_vectors():
    # the spline is linear in y: column j of d spline(q) / dy is the spline through e_j
    q = t([0.5, 2.0, 4.9, 5.5])
    J = jacrev(lambda y: I.CubicSpline(t(X), y, bc_type="natural")(q))(t(Y[0]))
    close(J, si.CubicSpline(X, np.eye(7), bc_type="natural")(host(q)), rtol=1e-10,
          atol=1e-12)


@pytest.mark.cpu_only("finite differences: the device does not change the derivative rules")
def test_interp1d_and_grid_gradients():
    x = t([0.0, 1.1, 2.0, 3.2, 4.0], True)
    y = t([0.0, 1.0, -1.0, 2.0, 0.5], True)
    q = t([0.3, 1.7, 3.9, -0.5, 4.6], True)
    assert gradcheck(lambda a, b, c: I.interp1d(a, b, fill_value="extrapolate")(c),
                     (x, y, q))
    assert gradcheck(lambda a, b, c: I.interp1d(a, b, kind="cubic",
                                                               fill_value="extrapolate")(c),
                     (x, y, q))
    assert gradcheck(lambda b: I.interp1d(x.detach(), b, kind="nearest")(q.detach()[:3]),
                     (y,))
    g0, g1 = t([0.0, 0.4, 1.0], True), t([0.0, 0.5, 0.7, 1.2], True)
    v = t(np.random.default_rng(3).normal(size=(3, 4)), True)
    xi = t([[0.2, 0.3], [0.7, 1.1], [0.5, 0.6], [1.3, -0.1]], True)
    assert gradcheck(lambda a, b, c, d: I.interpn((a, b), c, d, bounds_error=False,
                                                  fill_value=None), (g0, g1, v, xi))
    assert gradcheck(lambda c: I.interpn((g0.detach(), g1.detach()), c, xi.detach()[:3],
                                         method="nearest"), (v,))
    g0, g1 = t([0.0, 0.4, 0.6, 1.3], True), t([0.0, 0.5, 0.7, 1.2, 1.5], True)
    v = t(np.random.default_rng(6).normal(size=(4, 5)), True)
    assert gradcheck(lambda a, b, c, d: I.interpn((a, b), c, d, method="cubic"),
                     (g0, g1, v, xi[:3]))


def test_vmap_over_values_and_queries_matches_loop():
    x = t(X)
    ys = t(Y)
    qs = t(np.random.default_rng(4).uniform(0.0, 5.0, (3, 4)))
    out = vmap(lambda y, q: I.CubicSpline(x, y)(q))(ys, qs)
    close(out, np.stack([si.CubicSpline(X, Y[i])(host(qs)[i]) for i in range(3)]),
          rtol=1e-10, atol=1e-12)
    out = vmap(lambda y, q: I.interp1d(x, y, bounds_error=False)(q))(ys, qs)
    close(out, np.stack([np.interp(host(qs)[i], X, Y[i], left=np.nan, right=np.nan)
                         for i in range(3)]), rtol=1e-12, atol=1e-12, equal_nan=True)
