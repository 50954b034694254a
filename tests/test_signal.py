"""ndgrad/numpy/ (products.py, calculus.py, convolution.py, polynomials.py, statistics.py,
linear_algebra.py): products, signals, polynomials, histograms, linalg.tensorsolve,
tensorinv and cond.

The registry-driven suites check every function's values against NumPy, its derivatives
against finite differences and vmap against a loop on the samples the functions declare.
Here: what those samples leave out on purpose (floating values to bin, one interpolation
point, degree-0 fits, real roots, 2-vector cross products), keyword variants, the
derivative conventions at knots and bin edges, the behaviour inside vmap where a value
decides a shape, and the errors a user can cause.
"""

from __future__ import annotations


import numpy as np
import pytest

import ndgrad
from ndgrad import func
from support import close, fd_gradient, host, val

T = ndgrad.tensor


def _rng(seed=0):
    return np.random.default_rng(seed)


def _grad(f, *xs):
    """Gradients of the scalar ``f`` at the arrays ``xs`` (NumPy)."""
    leaves = [T(np.asarray(x), requires_grad=True) for x in xs]
    f(*leaves).backward()
    return [host(x.grad) if x.grad is not None else np.zeros(x.shape) for x in leaves]


def close_all(got, expected, **kw):
    """:func:`close` for each of several results (shapes may differ)."""
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        close(g, e, **kw)


# ---------------------------------------------------------------------------- products
def test_products_keyword_variants_and_errors():
    rng = _rng(1)
    a, b = rng.standard_normal((2, 3)), rng.standard_normal((3, 2))
    close(ndgrad.vdot(T(a), T(b)), np.vdot(a, b))
    with pytest.raises(ValueError, match="vdot: a and b must have the same number"):
        ndgrad.vdot(T(a), T(b[:2]))
    with pytest.raises(ValueError, match="matvec: expected shapes"):
        ndgrad.matvec(T(a), T(b))
    with pytest.raises(TypeError, match="matvec: out= is not supported"):
        ndgrad.matvec(T(a), T(a[0]), out=T(a[0]))
    with pytest.raises(ValueError, match="vecmat: expected shapes"):
        ndgrad.vecmat(T(a), T(a))

    x, y = rng.standard_normal((3, 4)), rng.standard_normal((2, 4, 3))
    close(ndgrad.cross(T(x), T(y), axisa=0, axisc=1), np.cross(x, y, axisa=0, axisc=1))
    z = rng.standard_normal((2, 3))
    close(ndgrad.cross(T(z), T(z[::-1].copy()), axis=1), np.cross(z, z[::-1], axis=1))
    with pytest.raises(ValueError, match="cross: incompatible dimensions"):
        ndgrad.cross(T(x), T(x))
    with pytest.raises(np.exceptions.AxisError, match="cross: axisb 2 is out of bounds"):
        ndgrad.cross(T(z), T(z), axisb=2)


def test_cross_of_2_vectors_is_deprecated_as_in_numpy():
    rng = _rng(2)
    a2, b2, b3 = rng.standard_normal((4, 2)), rng.standard_normal((4, 2)), \
        rng.standard_normal((4, 3))
    # NumPy 2.0-2.4's results (2.5 removed 2-vectors): a 2-vector is a 3-vector with z = 0,
    # and two 2-vectors give the z component alone
    def pad(v):
        return np.concatenate([v, np.zeros(v.shape[:-1] + (1,))], axis=-1)
    expected = [np.cross(pad(a2), pad(b2))[..., 2], np.cross(pad(a2), b3),
                np.cross(b3, pad(a2), axisc=0)]
    for got, e in zip([lambda: ndgrad.cross(T(a2), T(b2)), lambda: ndgrad.cross(T(a2), T(b3)),
                       lambda: ndgrad.cross(T(b3), T(a2), axisc=0)], expected):
        with pytest.warns(DeprecationWarning, match="2-dimensional vectors") as record:
            r = got()
        assert record[0].filename == __file__  # (points at the caller)
        close(r, e)
    # d/da (a x b)_z with 2-vectors: (b1, -b0)
    with pytest.warns(DeprecationWarning):
        g = _grad(lambda a: ndgrad.sum(ndgrad.cross(a, T(b2))), a2)[0]
    close(g, np.stack([b2[:, 1], -b2[:, 0]], axis=-1))


# ------------------------------------------------------------------------------ signals
def test_ediff1d_and_its_casting_rule():
    close(ndgrad.ediff1d(T([[1.0, 4.0], [9.0, 16.0]]), to_end=T([[0.5]]), to_begin=-1),
          np.ediff1d([[1.0, 4.0], [9.0, 16.0]], to_end=[[0.5]], to_begin=-1))
    r = ndgrad.ediff1d(T([1, 4, 9]), to_begin=0)
    assert r.dtype == ndgrad.int64 and val(r).tolist() == [0, 3, 5]
    with pytest.raises(TypeError, match="ediff1d: dtype of `to_begin` must be compatible"):
        ndgrad.ediff1d(T([1, 4, 9]), to_begin=0.5)


@pytest.mark.parametrize("edge_order", [1, 2])
def test_gradient_is_differentiable_in_the_coordinates(edge_order):
    rng = _rng(3)
    f = rng.standard_normal((4, 3))
    x = np.cumsum(rng.uniform(0.3, 1.0, 4))
    w = rng.standard_normal((4, 3))

    def loss(xs):
        return np.sum(w * np.gradient(f, xs, axis=0, edge_order=edge_order))
    g = _grad(lambda xs: ndgrad.sum(T(w) * ndgrad.gradient(T(f), xs, axis=0,
                                                           edge_order=edge_order)), x)[0]
    close(g, fd_gradient(loss, x), rtol=1e-6, atol=1e-8)
    # several axes: a tuple, as NumPy's (a list before NumPy 2)
    got = ndgrad.gradient(T(f), 2.0, edge_order=edge_order)
    assert isinstance(got, tuple) and len(got) == 2
    close(got, np.gradient(f, 2.0, edge_order=edge_order))
    close(ndgrad.gradient(T(f), T(x), 0.5, edge_order=edge_order),
          np.gradient(f, x, 0.5, edge_order=edge_order))


def test_gradient_errors():
    f = T(np.ones((2, 3)))
    with pytest.raises(TypeError, match="gradient: invalid number of arguments"):
        ndgrad.gradient(f, 1.0, 2.0, 3.0)
    with pytest.raises(ValueError, match="gradient: edge_order must be 1 or 2"):
        ndgrad.gradient(f, edge_order=3)
    with pytest.raises(ValueError, match="at least \\(edge_order \\+ 1\\) elements"):
        ndgrad.gradient(f, axis=0, edge_order=2)
    with pytest.raises(ValueError, match="distances must match the length"):
        ndgrad.gradient(f, T([0.0, 1.0]), axis=1)
    with pytest.raises(ValueError, match="gradient: repeated axis"):
        ndgrad.gradient(f, axis=(1, -1))


def test_correlate_modes_match_numpy_both_ways_round():
    rng = _rng(4)
    for n, m in [(2, 5), (5, 2), (4, 4), (1, 3)]:
        a = rng.standard_normal(n) + 1j * rng.standard_normal(n)
        v = rng.standard_normal(m) + 1j * rng.standard_normal(m)
        for mode in ("valid", "same", "full"):
            close(ndgrad.correlate(T(a), T(v), mode), np.correlate(a, v, mode))
    with pytest.raises(ValueError, match="correlate: v cannot be empty"):
        ndgrad.correlate(T([1.0]), T(np.zeros(0)))
    with pytest.raises(ValueError, match="correlate: mode must be"):
        ndgrad.correlate(T([1.0]), T([1.0]), "middle")


def test_interp_derivatives_at_knots_follow_the_right_segment():
    xp, fp = np.array([0.0, 1.0, 3.0]), np.array([0.0, 2.0, 3.0])
    x = np.array([-1.0, 0.0, 0.5, 1.0, 3.0, 4.0])
    gx, gxp, gfp = _grad(lambda x, xp, fp: ndgrad.sum(ndgrad.interp(x, xp, fp)), x, xp, fp)
    # slopes 2 on [0, 1), 0.5 on [1, 3); a knot takes the segment to its right; xp[-1] and
    # outside [xp[0], xp[-1]] the constant continuation (0)
    close(gx, [0.0, 2.0, 2.0, 0.5, 0.0, 0.0])
    # each value's weights on fp: (1 - t, t) of its segment; left/right give fp[0] / fp[-1]
    close(gfp, [2.0 + 0.5, 0.5 + 1.0, 1.0 + 1.0])
    # d/dxp of fp[j] + s (x - xp[j]) at x = 0.5 in segment 0: (t - 1) s and -t s
    # (x = 0 and 0.5 in segment 0, x = 1 in segment 1 with t = 0; xp[-1] and outside: none)
    close(gxp, [-2.0 + (0.5 - 1) * 2, -0.5 * 2 + (0 - 1) * 0.5, 0.0])


def test_interp_variants_and_errors():
    rng = _rng(5)
    xp = np.cumsum(rng.uniform(0.3, 1.0, 5))
    fp = rng.standard_normal(5) + 1j * rng.standard_normal(5)
    x = rng.uniform(-1, 5, (2, 3))
    close(ndgrad.interp(T(x), T(xp), T(fp), left=-9.0, right=T(9.0)),
          np.interp(x, xp, fp, left=-9.0, right=9.0))
    close(ndgrad.interp(T(x * 3), T(xp), T(fp), period=-2.5),
          np.interp(x * 3, xp, fp, period=-2.5))
    close(ndgrad.interp(0.3, [0.0, 1.0], [1.0, 3.0]), np.interp(0.3, [0.0, 1.0], [1.0, 3.0]))
    # one point: fp[0] there, left / right on either side; constant in x and xp
    close(ndgrad.interp(T(x), T(xp[:1]), T(fp[:1]), left=1.0, right=2.0),
          np.interp(x, xp[:1], fp[:1], left=1.0, right=2.0))
    g = _grad(lambda f: ndgrad.sum(ndgrad.real(ndgrad.interp(T(x), T(xp[:1]), f))), fp[:1].real)
    close(g[0], [x.size])  # fp[0] everywhere (left and right default to it)
    with pytest.raises(ValueError, match="interp: fp and xp are not of the same length"):
        ndgrad.interp(T(x), T(xp), T(fp[:2]))
    with pytest.raises(ValueError, match="interp: period must be a non-zero value"):
        ndgrad.interp(T(x), T(xp), T(fp), period=0)
    with pytest.raises(TypeError, match="interp: x and xp must be real"):
        ndgrad.interp(T(fp), T(xp), T(fp))
    with pytest.raises(ValueError, match="interp: array of sample points is empty"):
        ndgrad.interp(T(x), T(np.zeros(0)), T(np.zeros(0)))


def test_unwrap_passes_the_derivative_through():
    p = np.array([[0.0, 3.0, 6.5, 1.0], [2.0, -4.0, 1.0, 7.5]])
    for kw in ({}, {"axis": 0, "period": 4.0}, {"discont": 2.0}):
        close(ndgrad.unwrap(T(p), **kw), np.unwrap(p, **kw))
    w = _rng(6).standard_normal(p.shape)
    close(_grad(lambda q: ndgrad.sum(T(w) * ndgrad.unwrap(q)), p)[0], w)
    r = ndgrad.unwrap(T([0, 5, 10, 3]), period=6)  # integers: NumPy's integer arithmetic
    close(r, np.unwrap([0, 5, 10, 3], period=6))


# --------------------------------------------------------------------------- polynomials
def test_poly_real_for_conjugate_pairs_and_matrices():
    for z in ([1 + 1j, 1 - 1j, 2.0], [1 + 1j, 2.0], [[0.0, 1.0], [-1.0, 0.0]]):
        got, expected = ndgrad.poly(T(np.array(z))), np.poly(np.array(z))
        assert got.dtype == expected.dtype
        close(got, expected)
    one = ndgrad.poly(T(np.zeros(0)))
    assert one.shape == () and float(one) == 1.0
    with pytest.raises(ValueError, match="poly: input must be 1d or non-empty square"):
        ndgrad.poly(T(np.ones((2, 3))))
    # d/dz_k of the coefficients of prod (x - z_j): minus those of prod_{j != k} (x - z_j)
    z = np.array([0.5, -1.0, 2.0])
    w = np.array([0.3, -0.7, 1.1, 0.2])
    g = _grad(lambda z: ndgrad.sum(T(w) * ndgrad.poly(z)), z)[0]
    close(g, [-np.dot(w[1:], np.poly(np.delete(z, k))) for k in range(3)])


def test_polyfit_gradients_and_unsupported_options():
    rng = _rng(7)
    x, y = np.linspace(-1.0, 1.0, 5), rng.standard_normal(5)
    close(ndgrad.polyfit(T(x), T(y), 0), np.polyfit(x, y, 0))
    # degree 0 is the (weighted) mean of y
    w = rng.uniform(0.5, 2.0, 5)
    g = _grad(lambda y: ndgrad.sum(ndgrad.polyfit(T(x), y, 0, w=T(w))), y)[0]
    close(g, w ** 2 / np.sum(w ** 2))

    def loss(xs):
        return np.sum(np.polyfit(xs, y, 2) * [1.0, -2.0, 0.5])
    g = _grad(lambda xs: ndgrad.sum(ndgrad.polyfit(xs, T(y), 2) * T([1.0, -2.0, 0.5])), x)[0]
    close(g, fd_gradient(loss, x), rtol=1e-6, atol=1e-8)
    with pytest.raises(ValueError, match="polyfit: full=True .* is not supported"):
        ndgrad.polyfit(T(x), T(y), 1, full=True)
    with pytest.raises(ValueError, match="polyfit: cov=True is not supported"):
        ndgrad.polyfit(T(x), T(y), 1, cov=True)
    with pytest.raises(TypeError, match="polyfit: expected x and y to have same length"):
        ndgrad.polyfit(T(x), T(y[:3]), 1)
    with pytest.warns(np.exceptions.RankWarning, match="poorly conditioned"):
        ndgrad.polyfit(T([1.0, 1.0, 1.0]), T([1.0, 2.0, 3.0]), 1)


def test_polynomial_arithmetic_edge_cases():
    p = np.array([2.0, -1.0, 3.0])
    for m in range(4):
        close(ndgrad.polyder(T(p), m), np.polyder(p, m))
    close(ndgrad.polyint(T(p), 3, k=[1.0, 2.0, 3.0]), np.polyint(p, 3, k=[1.0, 2.0, 3.0]))
    close(ndgrad.polyint(T(p), 2, k=1.5), np.polyint(p, 2, k=1.5))
    assert ndgrad.polyder(T([1, 2, 3])).dtype == ndgrad.int64  # integers stay, as NumPy's
    with pytest.raises(ValueError, match="polyint: k must be a scalar or a rank-1 array"):
        ndgrad.polyint(T(p), 3, k=[1.0, 2.0])
    with pytest.raises(ValueError, match="polyder: order of derivative must be positive"):
        ndgrad.polyder(T(p), -1)
    # polymul drops leading zeros (numpy.poly1d), polyadd does not
    close(ndgrad.polymul(T([0.0, 1.0, 2.0]), T([1.0, 1.0])), np.polymul([0.0, 1.0, 2.0],
                                                                          [1.0, 1.0]))
    close(ndgrad.polyadd(T([0.0, 1.0]), T([1.0])), np.polyadd([0.0, 1.0], [1.0]))
    # polydiv: a shorter dividend has quotient [0] and is its own remainder; NumPy's
    # remainder trimming (|r[0]| <= 1e-8)
    for u, v in [([1.0, 2.0], [1.0, 2.0, 3.0]), ([1e-9, 1.0], [1.0]), ([1.0, 3.0, 2.0],
                                                                       [1.0, 1.0])]:
        q, r = ndgrad.polydiv(T(u), T(v))
        eq, er = np.polydiv(u, v)
        close(q, eq)
        close(r, er)
    g = _grad(lambda u: ndgrad.sum(ndgrad.polydiv(u, T([1.0, 2.0, 3.0]))[1]), [1.0, 2.0])[0]
    close(g, [1.0, 1.0])


def test_roots_trims_zeros_and_is_real_for_real_roots():
    for p in ([1.0, -3.0, 2.0], [0.0, 0.0, 1.0, -1.0, 0.0, 0.0], [5.0], [0.0, 0.0],
              [1.0, 0.0, 1.0], [1j, 2.0, 1.0]):
        got, expected = ndgrad.roots(T(np.array(p))), np.roots(p)
        assert got.dtype == expected.dtype, p
        close(got, expected)
    # d r / d p_k = -r^(n-k) / p'(r) for a simple root r
    p = np.array([1.0, -6.0, 11.0, -6.0])  # roots 3, 2, 1
    g = _grad(lambda p: ndgrad.roots(p)[0], p)[0]
    r, dp = 3.0, np.polyval(np.polyder(p), 3.0)
    close(g, [-r ** 3 / dp, -r ** 2 / dp, -r / dp, -1 / dp], rtol=1e-8)
    with pytest.raises(ValueError, match="roots: input must be a rank-1 array"):
        ndgrad.roots(T(np.ones((2, 2))))


def test_inside_vmap_roots_are_complex_and_untrimmed():
    ps = np.array([[1.0, -3.0, 2.0], [2.0, -2.0, -4.0]])
    got = func.vmap(ndgrad.roots)(T(ps))
    assert got.dtype == ndgrad.complex128
    close(got, np.stack([np.roots(p) for p in ps]).astype(complex))
    q, r = func.vmap(ndgrad.polydiv)(T([[3.0, 5.0, 2.0], [1.0, 0.0, -1.0]]),
                                     T([[2.0, 1.0], [1.0, 1.0]]))
    close(q, [np.polydiv([3.0, 5.0, 2.0], [2.0, 1.0])[0], [1.0, -1.0]])
    close(r, [np.polydiv([3.0, 5.0, 2.0], [2.0, 1.0])[1], [0.0]])


# ---------------------------------------------------------------------------- histograms
def test_histogram_of_floating_values_matches_numpy():
    rng = _rng(8)
    a = rng.standard_normal((4, 5)) * 2
    w = rng.standard_normal((4, 5))
    for bins, kw in [(10, {}), (4, {"range": (-1.0, 1.0)}), ([-3.0, -1.0, 0.0, 2.5], {}),
                     ("auto", {}), (3, {"density": True, "weights": w}),
                     (3, {"weights": w + 1j})]:
        kw_t = {k: (T(v) if isinstance(v, np.ndarray) else v) for k, v in kw.items()}
        got, expected = ndgrad.histogram(T(a), bins, **kw_t), np.histogram(a, bins, **kw)
        assert got[0].dtype == expected[0].dtype, (bins, kw)
        close_all(got, expected)
    close_all(ndgrad.histogram(T([0.0, 1.0, 2.0, 3.0]), 3),
              np.histogram([0.0, 1.0, 2.0, 3.0], 3))  # the last edge in the last bin
    close_all(ndgrad.histogram(T([2.0, 2.0]), 2), np.histogram([2.0, 2.0], 2))  # widened


def test_histogram_derivatives_are_in_the_weights_only():
    rng = _rng(9)
    a, w = rng.uniform(0, 3, 7), rng.uniform(0.5, 2, 7)
    c = np.array([0.3, -1.2, 0.8])
    ga, gw = _grad(lambda a, w: ndgrad.sum(T(c) * ndgrad.histogram(a, 3, range=(0, 3),
                                                                    weights=w)[0]), a, w)
    close(ga, np.zeros(7))
    close(gw, c[np.minimum(a.astype(int), 2)])  # the bin's coefficient
    # density h = s / (S * width): dh_i/dw_j = ([bin(j) == i] - h_i * width) / (S * width)
    h, edges = np.histogram(a, 3, range=(0, 3), weights=w, density=True)
    S = w.sum()
    gw = _grad(lambda w: ndgrad.sum(T(c) * ndgrad.histogram(T(a), 3, range=(0, 3), weights=w,
                                                             density=True)[0]), w)[0]
    close(gw, (c[np.minimum(a.astype(int), 2)] - np.dot(c, h)) / S, rtol=1e-10)
    _, edges = ndgrad.histogram(T(a, requires_grad=True), 3)
    assert not edges.requires_grad  # constants, also from the data's range


def test_histogram_errors():
    a = T([0.0, 1.0, 2.0])
    with pytest.raises(ValueError, match="histogram: weights should have the same shape"):
        ndgrad.histogram(a, weights=T([1.0]))
    with pytest.raises(TypeError, match="histogram: automated estimation"):
        ndgrad.histogram(a, "auto", weights=a)
    with pytest.raises(ValueError, match="`bins` must increase monotonically"):
        ndgrad.histogram(a, [0.0, 2.0, 1.0])
    with pytest.raises(ValueError, match="`bins` must be positive"):
        ndgrad.histogram(a, 0)
    with pytest.raises(ValueError, match="max must be larger than min"):
        ndgrad.histogram(a, 2, range=(1.0, 0.0))
    with pytest.raises(ValueError, match="autodetected range of \\[0.0, inf\\] is not finite"):
        ndgrad.histogram(T([0.0, float("inf")]))


def test_histogram2d_matches_numpy():
    rng = _rng(10)
    x, y, w = rng.standard_normal(15), rng.standard_normal(15), rng.uniform(0.5, 2, 15)
    for kw in [{}, {"bins": [3, [-1.0, 0.0, 1.0]], "weights": w, "density": True},
               {"bins": 4, "range": [[-1, 1], [0, 2]]}, {"bins": [-2.0, 0.0, 0.5, 2.0]}]:
        kw_t = {k: (T(v) if isinstance(v, np.ndarray) else v) for k, v in kw.items()}
        close_all(ndgrad.histogram2d(T(x), T(y), **kw_t), np.histogram2d(x, y, **kw))
    with pytest.raises(TypeError, match="histogram2d: weights must be real"):
        ndgrad.histogram2d(T(x), T(y), weights=T(w + 1j))
    # the length error words it as bincount's (one helper checks both)
    with pytest.raises(ValueError, match=r"histogram2d: the weights and the samples don't "
                                         r"have the same length \(\(14,\) and 15\)"):
        ndgrad.histogram2d(T(x), T(y), weights=T(w[:-1]))


@pytest.mark.parametrize("bins", [3, (2, 3, 4)])
def test_histogramdd_matches_numpy_and_differentiates_in_the_weights(bins):
    rng = np.random.default_rng(5)
    pts, w = rng.normal(size=(20, 3)), rng.random(20)
    W = ndgrad.tensor(w, requires_grad=True)
    h, edges = ndgrad.histogramdd(ndgrad.tensor(pts), bins=bins, weights=W)
    hn, en = np.histogramdd(pts, bins=bins, weights=w)
    close(h, hn)
    assert len(edges) == 3
    for e, e_np in zip(edges, en):
        close(e, e_np)
    # d/dw_i sum(c * h) = c at point i's bin
    c = rng.normal(size=hn.shape)
    (g,) = ndgrad.autograd.grad((h * ndgrad.tensor(c)).sum(), W)
    index = tuple(np.clip(np.searchsorted(e, pts[:, k], side="right") - 1, 0, len(e) - 2)
                  for k, e in enumerate(en))
    close(g, c[index])
    # the columns form, density, and NumPy's own function on Tensors
    cols = [ndgrad.tensor(pts[:, k]) for k in range(3)]
    h2, _ = np.histogramdd(cols, bins=bins, density=True)
    close(h2, np.histogramdd(pts, bins=bins, density=True)[0])
    with pytest.raises(ValueError, match="histogramdd"):
        ndgrad.histogramdd(ndgrad.ones((2, 2, 2)))


def test_histograms_inside_vmap_match_a_loop():
    rng = _rng(11)
    a, w = rng.standard_normal((3, 6)), rng.uniform(0.5, 2, (3, 6))
    # the edges follow each element's range: batched
    h, e = func.vmap(lambda a, w: ndgrad.histogram(a, 4, weights=w))(T(a), T(w))
    for k in range(3):
        close_all((h[k], e[k]), np.histogram(a[k], 4, weights=w[k]))
    g = func.vmap(func.grad(lambda w, a: ndgrad.histogram(a, 4, weights=w, density=True)[0][1]))(
        T(w), T(a))
    for k in range(3):
        close(g[k], _grad(lambda w, k=k: ndgrad.histogram(T(a[k]), 4, weights=w,
                                                          density=True)[0][1], w[k])[0])


def test_bincount():
    x = np.array([0, 3, 1, 1, 7])
    r = ndgrad.bincount(T(x))
    assert r.dtype == ndgrad.int64
    close(r, np.bincount(x))
    w = np.array([0.5, 1.0, 2.0, -1.0, 3.0], dtype=np.float32)
    r = ndgrad.bincount(T(x), weights=T(w), minlength=10)
    assert r.dtype == ndgrad.float64  # as NumPy's
    close(r, np.bincount(x, weights=w, minlength=10))
    close(ndgrad.bincount(T(np.zeros(0, dtype=np.int64)), minlength=2), [0, 0])
    c = np.arange(8.0)
    close(_grad(lambda w: ndgrad.sum(T(c) * ndgrad.bincount(T(x), weights=w)), w)[0], c[x])
    # inside vmap the length is minlength
    xs = np.array([[0, 1, 1], [2, 2, 0]])
    close(func.vmap(lambda x: ndgrad.bincount(x, minlength=4))(T(xs)),
          [np.bincount(v, minlength=4) for v in xs])
    with pytest.raises(ValueError, match="bincount: inside vmap.*pass minlength"):
        func.vmap(ndgrad.bincount)(T(xs))
    with pytest.raises(ValueError, match="bincount: x must have no negative elements"):
        ndgrad.bincount(T([1, -1]))
    with pytest.raises(TypeError, match="bincount: x must hold non-negative integers"):
        ndgrad.bincount(T([1.0]))
    with pytest.raises(ValueError, match="bincount: 'minlength' must not be negative"):
        ndgrad.bincount(T([1]), minlength=-1)
    with pytest.raises(ValueError, match="bincount: the weights and x don't have the same"):
        ndgrad.bincount(T([1]), weights=T([1.0, 2.0]))


# -------------------------------------------------------------------------------- linalg
def test_tensorsolve_tensorinv_and_errors():
    rng = _rng(12)
    a, b = rng.standard_normal((6, 2, 3)), rng.standard_normal((2, 3))
    close(ndgrad.linalg.tensorsolve(T(a), T(b), axes=(0,)),
          np.linalg.tensorsolve(a, b, axes=(0,)))
    with pytest.raises(np.linalg.LinAlgError, match="tensorsolve: input arrays must satisfy"):
        ndgrad.linalg.tensorsolve(T(a), T(b[:1]))
    a4 = rng.standard_normal((4, 2, 2))
    inv = ndgrad.linalg.tensorinv(T(a4), ind=1)
    close(inv, np.linalg.tensorinv(a4, ind=1))
    close(ndgrad.tensordot(inv, T(a4), axes=1), np.einsum("ik,jl->ijkl", np.eye(2), np.eye(2)),
          atol=1e-10)
    with pytest.raises(ValueError, match="tensorinv: invalid ind argument"):
        ndgrad.linalg.tensorinv(T(a4), ind=0)


@pytest.mark.parametrize("p", [None, 2, -2, "fro", "nuc", np.inf, -np.inf, 1, -1])
def test_cond(p):
    x = _rng(13).standard_normal((2, 3, 3))
    close(ndgrad.linalg.cond(T(x), p), np.linalg.cond(x, p), rtol=1e-10)
    singular = np.array([[1.0, 2.0], [2.0, 4.0]])
    if p not in (None, 2, -2, "nuc"):  # an exactly zero pivot: inf, as NumPy (whose 'nuc'
        # norm of the non-finite inverse raises)
        close(ndgrad.linalg.cond(T(np.stack([singular, np.eye(2)])), p),
              np.linalg.cond(np.stack([singular, np.eye(2)]), p))


def test_cond_gradient_and_errors():
    x = np.array([[2.0, 1.0], [0.5, 3.0]])
    s = np.linalg.svd(x)
    u, sv, vh = s
    # d(s0/s1) = (u0 v0^T) / s1 - s0 (u1 v1^T) / s1^2
    expected = np.outer(u[:, 0], vh[0]) / sv[1] - sv[0] * np.outer(u[:, 1], vh[1]) / sv[1] ** 2
    close(_grad(ndgrad.linalg.cond, x)[0], expected, rtol=1e-10)
    with pytest.raises(np.linalg.LinAlgError, match="cond is not defined on empty arrays"):
        ndgrad.linalg.cond(T(np.zeros((0, 0))))
    with pytest.raises(np.linalg.LinAlgError, match="must be square"):
        ndgrad.linalg.cond(T(np.ones((2, 3))), 1)
