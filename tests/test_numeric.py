"""NumPy's remaining numeric functions (ndgrad/numpy/elementwise.py, statistics.py, creation.py):
what the registry suites do not draw. Edge values (zeros, infinities, NaN, subnormals, powers of
two), gradients at NaNs, ties and steps, keyword variants, error messages, and the plain
creation functions, each against NumPy or a closed form."""

from __future__ import annotations

import math

import numpy as np
import pytest

import ndgrad as nd
from ndgrad import func
from ndgrad.numpy import creation
from support import close, host, val

NAN, INF = float("nan"), float("inf")


def grad_of(f, *xs):
    """Gradients of ``f(*xs).sum()`` (real) at float64 tensors made from ``xs``."""
    arrays = [np.asarray(x) for x in xs]
    ts = [nd.tensor(a.astype(np.result_type(a, np.float64)), requires_grad=True)
          for a in arrays]
    out = f(*ts)
    out = nd.real(out) if out.dtype.kind == "c" else out
    gs = nd.autograd.grad(out.sum(), ts, allow_unused=True)
    return [host(g) if g is not None else None for g in gs]


# ------------------------------------------------------------------------- aliases
def test_aliases_are_the_ops():
    for alias, target in [("amax", "max"), ("amin", "min"), ("mod", "remainder"),
                          ("around", "round"), ("conjugate", "conj")]:
        assert getattr(nd, alias) is getattr(nd, target), alias
    x = nd.tensor([[1.0, 5.0], [7.0, 2.0]])
    close(nd.amax(x, axis=0), np.amax(host(x), axis=0))
    close(nd.around(nd.tensor([1.25, 2.5]), 1), np.around([1.25, 2.5], 1))
    with pytest.raises(TypeError, match="initial"):
        nd.amax(x, initial=0.0)


# ------------------------------------------------------------------------- elementwise
def test_fmod_values_and_gradient():
    x = np.array([-7.0, 7.0, -7.0, 7.0, -6.0, 5.5, -1e-20, 1e300])
    y = np.array([3.0, -3.0, -3.0, 3.0, 3.0, 2.0, 3.0, 7.0])
    close(nd.fmod(nd.tensor(x), nd.tensor(y)), np.fmod(x, y), atol=0)
    close(nd.fmod(nd.tensor([-7, 7]), nd.tensor([3, -3])), np.fmod([-7, 7], [3, -3]))
    gx, gy = grad_of(nd.fmod, x[:6], y[:6])
    close(gx, np.ones(6))
    close(gy, -np.trunc(x[:6] / y[:6]))  # PyTorch's fmod: -trunc(x / y)


def test_heaviside():
    x1 = np.array([-1.5, 0.0, 2.0, NAN, -0.0])
    x2 = np.array([0.25, 0.5, 0.75, 0.5, 0.3])
    close(nd.heaviside(nd.tensor(x1), nd.tensor(x2)), np.heaviside(x1, x2))
    g1, g2 = grad_of(nd.heaviside, x1[[0, 1, 2, 4]], x2[[0, 1, 2, 4]])
    close(g1, np.zeros(4))
    close(g2, [0.0, 1.0, 0.0, 1.0])  # only where x1 == 0 (-0.0 included)


def test_nan_to_num():
    x = np.array([NAN, INF, -INF, 1.5, -2.0])
    close(nd.nan_to_num(nd.tensor(x)), np.nan_to_num(x), rtol=0)
    close(nd.nan_to_num(nd.tensor(x), nan=9.0, posinf=8.0, neginf=-8.0),
          np.nan_to_num(x, nan=9.0, posinf=8.0, neginf=-8.0))
    x32 = nd.tensor(x, dtype=nd.float32)
    close(nd.nan_to_num(x32), np.nan_to_num(x.astype(np.float32)), rtol=0)
    assert nd.nan_to_num(x32).dtype == np.float32
    z = np.array([complex(NAN, INF), complex(1.0, -INF), 2.0 + 3.0j])
    close(nd.nan_to_num(nd.tensor(z), posinf=5.0), np.nan_to_num(z, posinf=5.0))
    (g,) = grad_of(nd.nan_to_num, x)
    close(g, [0.0, 0.0, 0.0, 1.0, 1.0])
    close(nd.nan_to_num(nd.tensor([1, 2])), [1, 2])
    t = nd.tensor(x)
    assert nd.nan_to_num(t, copy=False) is t
    close(t, np.nan_to_num(x), rtol=0)


def test_angle():
    x = np.array([1.5, -2.0, 0.0, -0.0, NAN, INF, -INF])
    close(nd.angle(nd.tensor(x)), np.angle(x))
    close(nd.angle(nd.tensor(x), deg=True), np.angle(x, deg=True))
    (g,) = grad_of(nd.angle, x[:4])
    close(g, np.zeros(4))  # PyTorch: real input, zero gradient
    z = np.array([1.0 + 1.0j, -1.0 + 0.5j, 0.3 - 2.0j])
    close(nd.angle(nd.tensor(z)), np.angle(z))
    # d angle / d(re, im) = (-im, re) / |z|^2; the gradient is re-part + 1j * im-part
    (g,) = grad_of(nd.angle, z)
    close(g, (-z.imag + 1j * z.real) / np.abs(z) ** 2)


def test_rounding_steps_have_zero_gradients():
    x = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.7, -0.3])
    close(nd.rint(nd.tensor(x)), np.rint(x))
    close(nd.fix(nd.tensor(x)), np.fix(x))
    for f in (nd.rint, nd.fix):
        close(grad_of(f, x)[0], np.zeros_like(x))
    with pytest.raises(TypeError, match="out="):
        nd.fix(nd.tensor(x), out=nd.zeros(7))


def test_spacing():
    x = np.array([1.0, -1.0, 0.0, -0.0, 0.75, 1e-310, -1e-310, NAN, INF, -INF,
                  np.finfo(np.float64).max])
    with np.errstate(all="ignore"):
        close(nd.spacing(nd.tensor(x)), np.spacing(x), rtol=0, atol=0)
    close(nd.spacing(nd.tensor([1.0, -3.0], dtype=nd.float32)),
          np.spacing(np.array([1.0, -3.0], dtype=np.float32)), rtol=0, atol=0)
    close(grad_of(nd.spacing, x[:7])[0], np.zeros(7))


def test_frexp_edges(device):
    tiny = np.nextafter(0.0, 1.0)
    x = np.array([8.0, -0.375, 0.0, -0.0, INF, -INF, NAN, tiny, -tiny, 2.0 ** -1022,
                  np.finfo(np.float64).max, np.nextafter(2.0, 0.0), np.nextafter(0.5, 1.0),
                  1.0, 3.0])
    m, e = nd.frexp(nd.tensor(x))
    rm, re = np.frexp(x)
    # exact on the CPU; CUDA's pow(2, k) is within 2 ulp for large |k| (docs/devices.rst)
    close(m, rm, rtol=0 if device == "cpu" else 5e-16, atol=0)
    np.testing.assert_array_equal(host(e), re)
    assert e.dtype == np.int32 and m.dtype == np.float64
    tiny32 = -1e-40 if device == "cpu" else -1e-30  # (CuPy's float32 kernels flush
    # subnormals to zero: docs/devices.rst)
    m32, e32 = nd.frexp(nd.tensor([3.0, tiny32], dtype=nd.float32))
    rm32, re32 = np.frexp(np.array([3.0, tiny32], dtype=np.float32))
    assert m32.dtype == np.float32
    close(m32, rm32, rtol=0, atol=0)
    np.testing.assert_array_equal(host(e32), re32)
    xs = np.array([3.0, -0.3, 100.0])
    (g,) = grad_of(lambda t: nd.frexp(t)[0], xs)
    close(g, 2.0 ** -np.frexp(xs)[1])  # dm/dx = 2**-e
    with pytest.raises(TypeError, match="complex"):
        nd.frexp(nd.tensor([1j]))


def test_ldexp():
    x1 = np.array([0.75, 1.5, 1e-300, 3.0, 1.0])
    x2 = np.array([2, -1, 1100, -1074, 1024])
    with np.errstate(all="ignore"):
        close(nd.ldexp(nd.tensor(x1), nd.tensor(x2)), np.ldexp(x1, x2), rtol=0, atol=0)
    close(nd.ldexp(nd.tensor([3, 5]), 2), np.ldexp([3, 5], 2))
    r32 = nd.ldexp(nd.tensor([1.5], dtype=nd.float32), nd.tensor([3]))
    assert r32.dtype == np.float32
    close(r32, [12.0])
    gx, = grad_of(lambda a: nd.ldexp(a, nd.tensor([2, -1, 0])), [1.0, 2.0, 3.0])
    close(gx, [4.0, 0.5, 1.0])
    with pytest.raises(TypeError, match="integers"):
        nd.ldexp(nd.tensor([1.0]), nd.tensor([2.0]))


def test_modf_and_divmod():
    x = np.array([-3.5, 2.25, -0.5, INF, -INF, NAN, 4.0])
    frac, whole = nd.modf(nd.tensor(x))
    rf, rw = np.modf(x)
    close(frac, rf, equal_nan=True)
    close(whole, rw, equal_nan=True)
    assert np.array_equal(np.signbit(host(frac)[:5]), np.signbit(rf[:5]))
    g = grad_of(lambda t: nd.modf(t)[0] + 10 * nd.modf(t)[1], x[:3])[0]
    close(g, np.ones(3))  # the fractional part's derivative is 1, the integral part's 0
    a, b = np.array([7.0, -7.0, 7.5]), np.array([3.0, 3.0, -2.0])
    q, r = nd.divmod(nd.tensor(a), nd.tensor(b))
    close(q, np.divmod(a, b)[0])
    close(r, np.divmod(a, b)[1])
    ga, gb = grad_of(lambda s, t: nd.divmod(s, t)[1], a, b)
    close(ga, np.ones(3))
    close(gb, -np.floor_divide(a, b))


def test_sort_complex():
    z = np.array([1.0 + 2.0j, 1.0 - 1.0j, -3.0 + 0.0j, 1.0 - 1.0j, 0.5 + 9.0j])
    close(nd.sort_complex(nd.tensor(z)), np.sort_complex(z))
    m = np.array([[2.0, -1.0, 0.5], [0.0, 3.0, 1.0]])
    r = nd.sort_complex(nd.tensor(m))
    assert r.dtype == np.complex128
    close(r, np.sort_complex(m))
    assert nd.sort_complex(nd.tensor([3, 1], dtype=nd.int8)).dtype == np.complex64
    # the gradient follows each value to its place; at a tie (1-1j twice) both get theirs
    w = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    (g,) = grad_of(lambda t: nd.sort_complex(t) * nd.tensor(w), z)
    order = np.lexsort((z.imag, z.real), axis=-1)
    expected = np.empty(5, complex)
    expected[order] = w
    close(g, expected)
    with pytest.raises(ValueError, match="0-d"):
        nd.sort_complex(nd.tensor(1.0))


# ------------------------------------------------------------------------ NaN-ignoring
def test_nanquantile_values():
    x = np.array([[1.0, NAN, 4.0, 2.0, 7.0], [NAN, NAN, NAN, NAN, NAN], [3.0, 3.0, NAN, 1.0, 2.0]])
    t = nd.tensor(x)
    with np.errstate(all="ignore"), pytest.warns(RuntimeWarning):
        for q in (0.0, 0.3, 0.5, 1.0, [0.1, 0.9]):
            close(nd.nanquantile(t, q, axis=1), np.nanquantile(x, q, axis=1), equal_nan=True)
            close(nd.nanquantile(t, q, axis=1, keepdims=True),
                  np.nanquantile(x, q, axis=1, keepdims=True), equal_nan=True)
        close(nd.nanpercentile(t, [25, 50], axis=1), np.nanpercentile(x, [25, 50], axis=1),
              equal_nan=True)
        close(nd.nanmedian(t, axis=1), np.nanmedian(x, axis=1), equal_nan=True)
    close(nd.nanmedian(t), np.nanmedian(x))
    close(nd.nanquantile(t, 0.4, axis=(0, 1)), np.nanquantile(x, 0.4, axis=(0, 1)))


def test_nanquantile_gradients():
    # NaNs get nothing; the two interpolated elements share by the weights; an all-NaN slice
    # gives NaN with zero gradients
    x = np.array([[1.0, NAN, 4.0, 2.0], [NAN, NAN, NAN, NAN]])
    t = nd.tensor(x, requires_grad=True)
    y = nd.nanquantile(t, 0.25, axis=1)  # row 0: position 0.5 between 1.0 and 2.0
    assert np.isnan(val(y)[1])
    (g,) = nd.autograd.grad(y[0], t)
    close(g, [[0.5, 0.0, 0.0, 0.5], [0.0, 0.0, 0.0, 0.0]])
    (g,) = nd.autograd.grad(nd.nanmedian(t, axis=1)[0], t)
    close(g, [[0.0, 0.0, 0.0, 1.0], [0.0] * 4])
    # ties keep their index order (a stable sort, as PyTorch's on CPU): the median of
    # [3, nan, 3, 1] is the first 3, the maximum the second
    t = nd.tensor([3.0, NAN, 3.0, 1.0], requires_grad=True)
    (g,) = nd.autograd.grad(nd.nanquantile(t, 0.5), t)
    close(g, [1.0, 0.0, 0.0, 0.0])
    (g,) = nd.autograd.grad(nd.nanquantile(t, 1.0), t)
    close(g, [0.0, 0.0, 1.0, 0.0])
    # forward mode agrees
    tangent = np.array([0.1, 0.2, 0.3, 0.4])
    _, jv = func.jvp(lambda u: nd.nanquantile(u, 0.75), (nd.tensor([3.0, NAN, 5.0, 1.0]),),
                     (nd.tensor(tangent),))
    close(jv, 0.5 * 0.1 + 0.5 * 0.3)  # position 1.5 of [1, 3, 5]


def test_nanquantile_errors():
    t = nd.tensor([1.0, 2.0])
    with pytest.raises(ValueError, match="method='linear'"):
        nd.nanquantile(t, 0.5, method="nearest")
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        nd.nanquantile(t, 1.5)
    with pytest.raises(TypeError, match="out="):
        nd.nanmedian(t, out=nd.zeros(()))
    with pytest.raises(TypeError, match="weights="):
        nd.nanpercentile(t, 50, weights=t)


def test_nanprod():
    x = np.array([[2.0, NAN, 3.0], [0.5, 4.0, NAN]])
    t = nd.tensor(x)
    close(nd.nanprod(t), np.nanprod(x))
    close(nd.nanprod(t, axis=1, keepdims=True), np.nanprod(x, axis=1, keepdims=True))
    mask = np.array([[True, True, False], [True, False, True]])
    close(nd.nanprod(t, axis=1, where=nd.tensor(mask), initial=2.0),
          np.nanprod(x, axis=1, where=mask, initial=2.0))
    (g,) = grad_of(lambda u: nd.nanprod(u, axis=1), x)
    close(g, [[3.0, 0.0, 2.0], [4.0, 0.5, 0.0]])


# ------------------------------------------------------------------------ creation
def test_copy():
    x = nd.tensor([1.0, 2.0], requires_grad=True)
    y = nd.copy(x)
    assert y.requires_grad and host(y) is not host(x)
    (g,) = nd.autograd.grad((y * 3).sum(), x)
    close(g, [3.0, 3.0])
    close(x.detach().copy(), [1.0, 2.0])
    with pytest.raises(ValueError, match="order='F'"):
        nd.copy(x, order="F")


def test_vander():
    x = np.array([1.0, 2.0, 3.0, 0.0])
    for N in (None, 0, 1, 2, 5):
        for inc in (False, True):
            close(nd.vander(nd.tensor(x), N, increasing=inc), np.vander(x, N, increasing=inc))
    z = np.array([1.0 + 1.0j, -0.5j])
    close(nd.vander(nd.tensor(z), 3), np.vander(z, 3))
    assert nd.vander(nd.tensor([1, 2])).dtype == np.int64
    # d/dx x^k = k x^(k-1), finite at 0
    (g,) = grad_of(lambda t: nd.vander(t, 4), x)
    close(g, 3 * x ** 2 + 2 * x + 1)
    t = nd.tensor(x, requires_grad=True)
    assert nd.vander(t, 1).requires_grad and nd.vander(t, 0).requires_grad
    with pytest.raises(ValueError, match="one-dimensional"):
        nd.vander(nd.ones((2, 2)))


def test_logspace():
    close(nd.logspace(0.0, 3.0, 4), np.logspace(0.0, 3.0, 4))
    close(nd.logspace(0.0, 3.0, 4, endpoint=False, base=2.0),
          np.logspace(0.0, 3.0, 4, endpoint=False, base=2.0))
    s, e = np.array([0.0, 1.0]), np.array([[2.0], [-1.0]])
    close(nd.logspace(nd.tensor(s), nd.tensor(e), 3, axis=-1),
          np.logspace(s, e, 3, axis=-1))
    base = np.array([2.0, 10.0])
    close(nd.logspace(nd.tensor(s), 2.0, 3, base=nd.tensor(base), axis=1),
          np.logspace(s, 2.0, 3, base=base, axis=1))
    close(nd.logspace(0.0, 2.0, 3, dtype=nd.int64), np.logspace(0.0, 2.0, 3, dtype=np.int64))
    assert nd.logspace(0.0, 1.0, 0).shape == (0,)
    close(nd.logspace(1.0, 5.0, 1), np.logspace(1.0, 5.0, 1))
    # d/dstart, d/dstop of 10**(start + k (stop - start) / 2), k = 0, 1, 2
    gs, ge = grad_of(lambda a, b: nd.logspace(a, b, 3), 0.5, 1.0)
    y = 10.0 ** np.array([0.5, 0.75, 1.0])
    close(gs, np.sum(y * np.log(10.0) * np.array([1.0, 0.5, 0.0])))
    close(ge, np.sum(y * np.log(10.0) * np.array([0.0, 0.5, 1.0])))
    with pytest.raises(ValueError, match="non-negative"):
        nd.logspace(0.0, 1.0, -1)


def test_geomspace():
    close(nd.geomspace(1.0, 1000.0, 4), np.geomspace(1.0, 1000.0, 4))
    close(nd.geomspace(-1.0, -16.0, 5, endpoint=False), np.geomspace(-1.0, -16.0, 5,
                                                                       endpoint=False))
    close(nd.geomspace(2.0, 9.0, 1), np.geomspace(2.0, 9.0, 1))
    z = (1.0 + 1.0j, 8.0 + 8.0j)
    close(nd.geomspace(*z, 4), np.geomspace(*z, 4))
    s, e = np.array([1.0, -2.0]), np.array([[4.0], [8.0]])
    with np.errstate(all="ignore"):
        close(nd.geomspace(nd.tensor(np.abs(s)), nd.tensor(e), 3, axis=1),
              np.geomspace(np.abs(s), e, 3, axis=1))
    close(nd.geomspace(1.0, 100.0, 3, dtype=nd.int64), np.geomspace(1.0, 100.0, 3,
                                                                    dtype=np.int64))
    # start * r^k with r = (stop/start)^(1/2): ends exact, middle sqrt(start * stop)
    gs, ge = grad_of(lambda a, b: nd.geomspace(a, b, 3), 2.0, 8.0)
    close(gs, 1.0 + 0.5 * math.sqrt(8.0 / 2.0))
    close(ge, 1.0 + 0.5 * math.sqrt(2.0 / 8.0))
    gs, ge = grad_of(lambda a, b: nd.geomspace(a, b, 1), 2.0, 8.0)
    close(gs, 1.0)
    assert ge is None or np.all(ge == 0)
    with pytest.raises(ValueError, match="zero"):
        nd.geomspace(0.0, 1.0, 3)


def test_kaiser():
    for M in (0, 1, 2, 5, 6):
        close(nd.kaiser(M, 3.5), np.kaiser(M, 3.5), rtol=1e-13)
    close(nd.kaiser(5, 14), np.kaiser(5, 14), rtol=1e-13)
    beta = nd.tensor(2.0, requires_grad=True)
    (g,) = nd.autograd.grad(nd.kaiser(5, beta).sum(), beta)
    eps = 1e-6
    fd = (np.kaiser(5, 2.0 + eps).sum() - np.kaiser(5, 2.0 - eps).sum()) / (2 * eps)
    close(g, fd, rtol=1e-7)
    assert nd.kaiser(1, beta).requires_grad
    with pytest.raises(ValueError, match="0-d"):
        nd.kaiser(3, nd.tensor([1.0, 2.0]))


@pytest.mark.parametrize("name", ["bartlett", "blackman", "hamming", "hanning"])
def test_windows(name):
    fn = creation.CREATION[name]
    for M in (-1, 0, 1, 2, 5, 6):
        close(fn(M), getattr(np, name)(M), atol=1e-15)
    w = fn(4, dtype=nd.float32, requires_grad=True)
    assert w.dtype == np.float32 and w.requires_grad and w.is_leaf


def test_array():
    array = creation.array
    close(array([1, 2], ndmin=3), np.array([1, 2], ndmin=3))
    assert array([1.0]).dtype == np.float64 and array([1]).dtype == np.int64
    x = nd.tensor([1.0, 2.0], requires_grad=True)
    y = array(x)
    assert y is not x and y.requires_grad
    (g,) = nd.autograd.grad((array(x, dtype=nd.float32, ndmin=2) * 2).sum(), x)
    close(g, [2.0, 2.0])
    assert array(x, copy=None) is x
    with pytest.raises(ValueError, match="copy=False"):
        array(x, dtype=nd.float32, copy=False)
    with pytest.raises(TypeError, match="order='F'"):
        array([1.0], order="F")
    assert array([1.0], like=x).device == x.device
    leaf = array([1.0, 2.0], requires_grad=True)
    assert leaf.requires_grad and leaf.is_leaf


def test_array_of_tensors_and_numbers_is_differentiable():
    """``array([[a, 1], [2, b]])`` stacks (as JAX's ``jnp.array``): det's gradient is
    ``(b, a)``, under autograd and every transform; ``copy=False`` is NumPy's error."""
    a = nd.tensor(3.0, requires_grad=True)
    b = nd.tensor(4.0, requires_grad=True)
    m = nd.array([[a, 1.0], [2.0, b]])
    close(m, [[3.0, 1.0], [2.0, 4.0]])
    nd.linalg.det(m).backward()
    close(a.grad, 4.0)
    close(b.grad, 3.0)

    def det(v):  # det [[v0, 1], [2, v1]] = v0 v1 - 2
        return nd.linalg.det(nd.array([[v[0], 1.0], [2.0, v[1]]]))
    v = nd.tensor([3.0, 4.0])
    close(func.grad(det)(v), [4.0, 3.0])
    close(func.jvp(det, (v,), (nd.tensor([1.0, 10.0]),))[1], 4.0 + 30.0)
    close(func.hessian(det)(v), [[0.0, 1.0], [1.0, 0.0]])
    vs = nd.tensor([[3.0, 4.0], [2.0, 5.0]])
    close(func.vmap(det)(vs), [10.0, 8.0])
    close(func.vmap(func.grad(det))(vs), [[4.0, 3.0], [5.0, 2.0]])
    # asarray and array of a flat list; dtype and ndmin in the graph
    (g,) = nd.autograd.grad(nd.array([a, 2 * a], dtype=nd.float32, ndmin=2).sum(), a)
    assert g.dtype == nd.float64
    close(g, 3.0)
    (g,) = nd.autograd.grad((nd.asarray((a, a * a)) * nd.tensor([1.0, 1.0])).sum(), a)
    close(g, 1.0 + 2 * 3.0)
    with pytest.raises(ValueError, match=r"ndgrad\.array\(copy=False\): a sequence holding "
                                         r"tensors becomes a new tensor"):
        nd.array([a, b], copy=False)
    with pytest.raises(ValueError, match=r"ndgrad\.asarray\(copy=False\)"):
        nd.asarray([a, b], copy=False)
    assert nd.array([a, b], copy=None).requires_grad


def test_plain_creation_functions():
    close(creation.identity(3), np.identity(3))
    assert creation.identity(2, dtype=nd.int64).dtype == np.int64
    close(creation.tri(3, 4, k=-1), np.tri(3, 4, k=-1))
    assert creation.tri(2).dtype == np.float64
    close(creation.indices((2, 3)), np.indices((2, 3)))
    for got, want in zip(creation.indices((2, 3), sparse=True), np.indices((2, 3), sparse=True)):
        close(got, want)
    assert creation.indices((2,), dtype=float).dtype == np.float64
    r = creation.fromfunction(lambda i, j, k=1: i * k + j, (2, 3), k=10)
    close(r, np.fromfunction(lambda i, j, k=1: i * k + j, (2, 3), k=10))
    with pytest.raises(TypeError, match="like="):
        creation.identity(2, like=np.ones(2))


def test_real_if_close():
    z = nd.tensor([2.1 + 4e-14j, 5.2 + 3e-15j], requires_grad=True)
    r = creation.real_if_close(z, tol=1000)
    assert r.dtype == np.float64
    close(r, np.real_if_close(host(z), tol=1000))
    (g,) = nd.autograd.grad(r.sum(), z)
    close(g, [1.0, 1.0])
    assert creation.real_if_close(z).dtype == np.complex128  # 4e-14 > 100 eps
    x = nd.tensor([1.0])
    assert creation.real_if_close(x) is x


def test_numpy_calls_run_these():
    # NumPy's functions on Tensors (NEP 18 / NEP 13) reach these, derivatives included
    x = nd.tensor([1.0, NAN, 4.0, 2.0], requires_grad=True)
    y = np.nanquantile(x, 0.25)
    assert isinstance(y, nd.Tensor) and y.requires_grad
    (g,) = nd.autograd.grad(y, x)
    close(g, [0.5, 0.0, 0.0, 0.5])
    m, e = np.frexp(nd.tensor([3.0, -0.5]))
    close(m, [0.75, -0.5])
    close(e, [2, 0])
    close(np.fmod(nd.tensor([-7.0, 7.0]), 3.0), [-1.0, 1.0])
    close(np.logspace(nd.tensor(0.0), 2.0, 3), [1.0, 10.0, 100.0])
    close(np.amax(nd.tensor([[1.0, 5.0], [7.0, 2.0]]), axis=1), [5.0, 7.0])


def test_real_if_close_decides_on_the_data():
    # its result's dtype depends on the values: no single answer for a vmap batch
    z = nd.tensor([[1.0 + 1e-20j], [1.0 + 1.0j]])
    with pytest.raises(RuntimeError, match="vmap"):
        func.vmap(creation.real_if_close)(z)


@pytest.mark.parametrize("shape, axis", [((0,), None), ((2, 0), 1), ((2, 0), 0), ((0, 3), 1)])
def test_products_of_empty_slices_in_every_mode(shape, axis):
    # an empty slice's product is 1 and has no factor: its derivatives are empty (the
    # second-order choice of formula read the maximum of the empty factors and raised)
    x = nd.zeros(shape)
    f = lambda v: nd.prod(v * 1.0, axis=axis)  # noqa: E731
    y, t = nd.func.jvp(f, (x,), (nd.ones(shape),))
    np.testing.assert_array_equal(y.cpu().numpy(), np.prod(np.zeros(shape), axis=axis))
    np.testing.assert_array_equal(t.cpu().numpy(), np.zeros(y.shape))
    h = nd.func.hessian(lambda v: nd.sum(f(v)))(x)
    assert h.shape == shape + shape
