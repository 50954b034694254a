"""ndgrad.ndimage: values against SciPy in every boundary mode, derivatives against finite
differences (gradcheck) in the image, the filter weights and the sample coordinates, vmap
against a loop."""

from __future__ import annotations

import numpy as np
import pytest

import ndgrad
from ndgrad import ndimage as ni
from ndgrad.checks import gradcheck, gradgradcheck
from ndgrad.func import jacfwd, jacrev, vmap
from support import close, fd_gradient

sn = pytest.importorskip("scipy.ndimage")
_SCIPY_ALIASED_REFLECT = tuple(int(v) for v in
                               __import__("scipy").__version__.split(".")[:2]) < (1, 18)

RNG = np.random.default_rng(1)
A = RNG.normal(size=(5, 6))
W = RNG.normal(size=(2, 3))
MODES = ["reflect", "constant", "nearest", "mirror", "wrap", "grid-mirror", "grid-constant",
         "grid-wrap"]


def t(a, grad=False):
    return ndgrad.tensor(np.asarray(a, dtype=float), requires_grad=grad)


@pytest.mark.parametrize("mode", MODES)
def test_filters_match_scipy(mode):
    a = t(A)
    kw = {"mode": mode, "cval": 0.3}
    cases = [
        (ni.gaussian_filter(a, [1.5, 0.7], order=[0, 1], **kw),
         sn.gaussian_filter(A, [1.5, 0.7], order=[0, 1], **kw)),
        # a kernel wider than the image: the extension repeats
        (ni.gaussian_filter(a, 3.0, order=2, **kw), sn.gaussian_filter(A, 3.0, order=2, **kw)),
        (ni.gaussian_filter1d(a, 0.8, axis=0, **kw), sn.gaussian_filter1d(A, 0.8, axis=0, **kw)),
        (ni.uniform_filter(a, [2, 3], origin=[-1, 1], **kw),
         sn.uniform_filter(A, [2, 3], origin=[-1, 1], **kw)),
        (ni.uniform_filter1d(a, 4, axis=0, **kw), sn.uniform_filter1d(A, 4, axis=0, **kw)),
        (ni.correlate(a, t(W), origin=[0, -1], **kw), sn.correlate(A, W, origin=[0, -1], **kw)),
        (ni.convolve(a, t(W), **kw), sn.convolve(A, W, **kw)),
        (ni.correlate1d(a, t(W[1]), axis=0, origin=1, **kw),
         sn.correlate1d(A, W[1], axis=0, origin=1, **kw)),
        (ni.convolve1d(a, t(W[0, :2]), origin=-1, **kw),
         sn.convolve1d(A, W[0, :2], origin=-1, **kw)),
        (ni.sobel(a, axis=0, **kw), sn.sobel(A, axis=0, **kw)),
        (ni.laplace(a, **kw), sn.laplace(A, **kw)),
    ]
    for ours, ref in cases:
        close(ours, ref, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("mode", MODES)
def test_interpolation_matches_scipy(mode):
    a = t(A)
    kw = {"mode": mode, "cval": 0.3}
    # far outside on both sides
    coords = np.random.default_rng(2).uniform(-3.0, 8.0, size=(2, 4, 3))
    for order in (0, 1):
        close(ni.map_coordinates(a, t(coords), order=order, **kw),
              sn.map_coordinates(A, coords, order=order, **kw))
    close(ni.shift(a, [0.3, -1.6], order=1, **kw), sn.shift(A, [0.3, -1.6], order=1, **kw))
    close(ni.zoom(a, [1.5, 0.7], order=1, **kw), sn.zoom(A, [1.5, 0.7], order=1, **kw))
    m = np.array([[0.9, 0.2], [-0.3, 1.1]])
    close(ni.affine_transform(a, t(m), offset=[0.53, -1.07], output_shape=(4, 7), order=1, **kw),
          sn.affine_transform(A, m, offset=[0.53, -1.07], output_shape=(4, 7), order=1, **kw))


def _exact_half_sample_coefficients(x, order, axes=None):
    """B-spline coefficients of ``x`` for the half-sample symmetric boundary ("reflect"),
    exactly: the periodic ("grid-wrap") prefilter of the signal followed by its mirror image,
    whose first half they are (SciPy < 1.18's own start of that recursion reads a value it
    is updating: SciPy issue 24550)."""
    for d in range(x.ndim) if axes is None else axes:
        n = x.shape[d]
        doubled = np.concatenate([x, np.flip(x, d)], axis=d)
        x = np.take(sn.spline_filter1d(doubled, order, axis=d, mode="grid-wrap"),
                    np.arange(n), axis=d)
    return x


def _scipy_spline(fn, x, *args, order, mode, prefilter=True, **kw):
    """``fn`` (a scipy.ndimage spline function) of ``x``; with an old SciPy's half-sample
    prefilter replaced by the exact one (``_exact_half_sample_coefficients``)."""
    if prefilter and order > 1 and _SCIPY_ALIASED_REFLECT and mode in ("reflect", "grid-mirror"):
        return fn(_exact_half_sample_coefficients(x, order), *args, order=order, mode=mode,
                  prefilter=False, **kw)
    return fn(x, *args, order=order, mode=mode, prefilter=prefilter, **kw)


@pytest.mark.parametrize("order", [2, 3, 4, 5])
def test_spline_interpolation_matches_scipy(order):
    a = t(A)
    rng = np.random.default_rng(6 + order)
    coords = rng.uniform(-3.0, 8.0, size=(2, 30))
    long = rng.normal(size=40)
    c1 = rng.uniform(-5.0, 45.0, size=(1, 25))
    m = np.array([[0.9, 0.2], [-0.3, 1.1]])
    for mode in MODES:
        kw = {"order": order, "mode": mode, "cval": 0.3}
        for pf in (True, False):
            close(ni.map_coordinates(a, t(coords), prefilter=pf, **kw),
                  _scipy_spline(sn.map_coordinates, A, coords, prefilter=pf, **kw), atol=1e-10)
        close(ni.map_coordinates(t(long), t(c1), **kw),
              _scipy_spline(sn.map_coordinates, long, c1, **kw), atol=1e-10)
        close(ni.shift(a, [0.3, -1.6], **kw), _scipy_spline(sn.shift, A, [0.3, -1.6], **kw),
              atol=1e-10)
        close(ni.zoom(a, [1.7, 0.8], **kw), _scipy_spline(sn.zoom, A, [1.7, 0.8], **kw),
              atol=1e-10)
        close(ni.affine_transform(a, t(m), offset=[0.53, -1.07], output_shape=(4, 7), **kw),
              _scipy_spline(sn.affine_transform, A, m, offset=[0.53, -1.07],
                            output_shape=(4, 7), **kw), atol=1e-10)
        half = _SCIPY_ALIASED_REFLECT and mode in ("reflect", "grid-mirror", "nearest")
        close(ni.spline_filter(a, order, mode=mode),
              _exact_half_sample_coefficients(A, order) if half else
              sn.spline_filter(A, order, mode=mode), atol=1e-10)
        close(ni.spline_filter1d(a, order, axis=0, mode=mode),
              _exact_half_sample_coefficients(A, order, axes=[0]) if half else
              sn.spline_filter1d(A, order, axis=0, mode=mode), atol=1e-10)
    # with the whole- and half-sample prefilters the spline passes through the samples
    grid = np.indices(A.shape).reshape(2, -1).astype(float)
    for mode in ("mirror", "reflect"):
        close(ni.map_coordinates(a, t(grid), order=order, mode=mode), A.ravel(), atol=1e-12)


def test_transform_variants_match_scipy():
    a = t(A)
    close(ni.zoom(a, 0.6, order=1, grid_mode=True, mode="grid-constant"),
          sn.zoom(A, 0.6, order=1, grid_mode=True, mode="grid-constant"))
    close(ni.zoom(a, 2.0, order=0), sn.zoom(A, 2.0, order=0))
    h = np.array([[0.9, 0.2, 0.41], [-0.3, 1.1, -0.73], [0.0, 0.0, 1.0]])
    for m in (h, h[:2], np.array([0.8, 1.3])):  # homogeneous, (d, d+1), diagonal
        close(ni.affine_transform(a, t(m), order=1, mode="nearest"),
              sn.affine_transform(A, m, order=1, mode="nearest"))
    rng = np.random.default_rng(3)
    vol = rng.normal(size=(3, 4, 2))
    c = rng.uniform(-0.5, 3.5, size=(3, 5))
    close(ni.map_coordinates(t(vol), t(c), order=1, mode="mirror"),
          sn.map_coordinates(vol, c, order=1, mode="mirror"))


def test_errors():
    a = t(A)
    for bad in (6, -1, 2.5):
        with pytest.raises(RuntimeError, match="spline order"):
            ni.map_coordinates(a, t(np.zeros((2, 3))), order=bad)
    with pytest.raises(RuntimeError, match="spline order"):
        ni.shift(a, 0.5, order=7)
    with pytest.raises(RuntimeError, match="spline order"):
        ni.spline_filter(a, order=1)  # SciPy's spline_filter takes orders 2 to 5
    with pytest.raises(NotImplementedError, match="float64"):
        ni.spline_filter1d(a, output=np.float32)
    with pytest.raises(RuntimeError, match="boundary mode"):
        ni.spline_filter(a, mode="periodic")
    with pytest.raises(RuntimeError, match="boundary mode"):
        ni.gaussian_filter(a, 1.0, mode="periodic")
    with pytest.raises(RuntimeError, match="sequence argument `sigma`"):
        ni.gaussian_filter(a, t([1.0, 2.0, 3.0]))
    with pytest.raises(ValueError, match="scalar per axis"):
        ni.gaussian_filter1d(a, t([1.0, 2.0]))
    with pytest.raises(RuntimeError, match="rank"):
        ni.correlate(a, t(W[0]))
    with pytest.raises(RuntimeError, match="first axis"):
        ni.map_coordinates(a, t(np.zeros((3, 4))), order=1)
    with pytest.raises(ValueError, match="origin"):
        ni.correlate1d(a, t(W[0]), origin=2)


@pytest.mark.cpu_only("finite differences: the device does not change the derivative rules")
def test_gradients_in_image_weights_and_coordinates():
    rng = np.random.default_rng(4)
    img = t(rng.normal(size=(4, 5)), True)
    w = t(rng.normal(size=(2, 3)), True)
    assert gradcheck(lambda a, k: ni.correlate(a, k, mode="mirror"), (img, w))
    assert gradcheck(lambda a, k: ni.convolve1d(a, k, axis=0, mode="constant", cval=0.5),
                     (img, w[0]))
    assert gradcheck(lambda a: ni.gaussian_filter(a, 0.8, order=[1, 0], mode="wrap"), (img,))
    assert gradcheck(lambda a: ni.sobel(ni.uniform_filter(a, 2), axis=1) + ni.laplace(a),
                     (img,))
    # coordinates away from the integers (where the order-1 interpolant has kinks)
    c = t(np.floor(rng.uniform(-2.0, 6.0, (2, 7))) + rng.uniform(0.1, 0.9, (2, 7)), True)
    for mode in ("constant", "grid-constant", "reflect", "mirror", "wrap", "grid-wrap"):
        assert gradcheck(lambda a, cc, m=mode: ni.map_coordinates(a, cc, order=1, mode=m),
                         (img, c))
    assert gradcheck(lambda a: ni.map_coordinates(a, c.detach(), order=0, mode="nearest"),
                     (img,))
    m = t([[0.9, 0.2], [-0.3, 1.1]], True)
    off = t([0.23, -0.61], True)
    s = t([0.3, -1.45], True)
    assert gradcheck(lambda a, mm, o: ni.affine_transform(a, mm, o, order=1, mode="nearest"),
                     (img, m, off))
    assert gradcheck(lambda a, sh: ni.shift(a, sh, order=1, mode="reflect"), (img, s))
    for mode in ("constant", "reflect", "grid-wrap"):  # order 3: smooth in the coordinates
        assert gradcheck(lambda a, cc, m=mode: ni.map_coordinates(a, cc, mode=m), (img, c),
                         check_forward_ad=True)
    # order 2: continuously differentiable (coordinates away from the half-integers, where
    # the second derivative jumps)
    c2 = t(np.floor(rng.uniform(-2.0, 6.0, (2, 7))) + rng.uniform(-0.4, 0.4, (2, 7)), True)
    for mode in ("mirror", "grid-wrap"):
        assert gradcheck(lambda a, cc, m=mode: ni.map_coordinates(a, cc, order=2, mode=m),
                         (img, c2), check_forward_ad=True)
    assert gradcheck(lambda a, sh: ni.shift(a, sh, order=2, mode="reflect"), (img, s))


def test_vmap_over_a_batch_of_images_matches_loop():
    rng = np.random.default_rng(5)
    imgs = t(rng.normal(size=(3, 5, 6)))
    out = vmap(lambda a: ni.gaussian_filter(a, [1.0, 0.5], mode="reflect"))(imgs)
    close(out, np.stack([sn.gaussian_filter(A_i, [1.0, 0.5]) for A_i in imgs.cpu().numpy()]))
    coords = t(rng.uniform(-1.0, 6.0, (3, 2, 4)))
    for order in (1, 2, 3, 5):
        out = vmap(lambda a, c, o=order: ni.map_coordinates(a, c, order=o, mode="mirror"))(
            imgs, coords)
        close(out, np.stack([sn.map_coordinates(a_i, c_i, order=order, mode="mirror")
                             for a_i, c_i in zip(imgs.cpu().numpy(), coords.cpu().numpy())]))


@pytest.mark.cpu_only("finite differences: the device does not change the derivative rules")
def test_spline_orders_4_and_5_gradients():
    rng = np.random.default_rng(12)
    img = t(rng.normal(size=(4, 5)), True)
    c = t(rng.uniform(-2.0, 6.0, (2, 6)), True)
    for order, mode in ((4, "nearest"), (5, "grid-constant"), (4, "reflect"), (5, "wrap"),
                        (5, "grid-wrap"), (4, "mirror")):
        assert gradcheck(lambda a, cc, o=order, m=mode: ni.map_coordinates(a, cc, order=o,
                                                                           mode=m, cval=0.4),
                         (img, c), check_forward_ad=True)
    # the prefilter's adjoint (the transposed matrix), alone
    for mode in ("nearest", "grid-wrap", "reflect"):
        assert gradcheck(lambda a, m=mode: ni.spline_filter(a, 5, mode=m), (img,),
                         check_forward_ad=True)
    s = t([0.3, -1.45], True)
    assert gradcheck(lambda a, sh: ni.shift(a, sh, order=5, mode="mirror"), (img, s))
    m = t([[0.9, 0.2], [-0.3, 1.1]], True)
    off = t([0.23, -0.61], True)
    assert gradcheck(lambda a, mm, o: ni.affine_transform(a, mm, o, order=4, mode="nearest"),
                     (img, m, off))
    assert gradgradcheck(lambda cc: ni.map_coordinates(img.detach(), cc, order=4,
                                                       mode="grid-wrap"), (c[:, :3],))


def test_spline_order_4_jacrev_matches_jacfwd_and_differences():
    rng = np.random.default_rng(13)
    img = t(rng.normal(size=(5, 4)))
    s0 = np.array([0.37, -0.81])

    def f(sh):
        return ni.shift(img, sh, order=4, mode="reflect")

    jr = jacrev(f)(t(s0))
    close(jr, jacfwd(f)(t(s0)))
    eps = 1e-6
    fd = np.stack([(_scipy_spline(sn.shift, img.cpu().numpy(), s0 + eps * e, order=4,
                                  mode="reflect")
                    - _scipy_spline(sn.shift, img.cpu().numpy(), s0 - eps * e, order=4,
                                    mode="reflect"))
                   / (2 * eps) for e in np.eye(2)], axis=-1)
    close(jr, fd, atol=1e-7, rtol=1e-6)


def test_gaussian_sigma_derivatives_match_scipy_differences():
    w = np.random.default_rng(14).normal(size=A.shape)  # a random functional of the output
    cases = [  # (ndgrad sigma maker, SciPy keyword arguments); no radius change within eps
        (dict(order=[1, 0], mode="reflect"), [0.9, 1.7]),
        (dict(order=2, mode="constant", cval=0.3), [1.3]),
        (dict(order=[0, 3], mode="wrap", radius=[2, 3]), [0.8, 1.1]),
    ]
    for kw, s0 in cases:
        def ref(s, kw=kw):
            return float((sn.gaussian_filter(A, s if len(s) > 1 else s[0], **kw) * w).sum())
        sig = t(s0 if len(s0) > 1 else s0[0], True)
        out = ni.gaussian_filter(t(A), sig, **kw)
        close(out, sn.gaussian_filter(A, s0 if len(s0) > 1 else s0[0], **kw))
        (out * t(w)).sum().backward()
        close(sig.grad, fd_gradient(ref, s0).reshape(sig.shape), rtol=1e-7, atol=1e-8)
    # a per-axis sequence of scalar tensors, and gaussian_filter1d
    s1, s2 = t(0.7, True), t(2.2, True)
    (ni.gaussian_filter(t(A), [s1, s2]) * t(w)).sum().backward()
    close([s1.grad, s2.grad],
          fd_gradient(lambda s: float((sn.gaussian_filter(A, s) * w).sum()), [0.7, 2.2]),
          rtol=1e-7, atol=1e-8)
    s3 = t(1.1, True)
    (ni.gaussian_filter1d(t(A), s3, axis=0, order=1, truncate=3.0) * t(w)).sum().backward()
    close(s3.grad, fd_gradient(lambda s: float((sn.gaussian_filter1d(
        A, s[0], axis=0, order=1, truncate=3.0) * w).sum()), [1.1])[0], rtol=1e-7, atol=1e-8)


@pytest.mark.cpu_only("finite differences: the device does not change the derivative rules")
def test_gaussian_sigma_gradcheck_and_compositions():
    rng = np.random.default_rng(15)
    img = t(rng.normal(size=(4, 5)), True)
    assert gradcheck(lambda a, s: ni.gaussian_filter1d(a, s, order=2, mode="mirror"),
                     (img, t(0.9, True)), check_forward_ad=True)
    assert gradcheck(lambda a, s: ni.gaussian_filter(a, s, order=[1, 0], mode="nearest"),
                     (img, t([0.8, 1.3], True)), check_forward_ad=True)
    assert gradgradcheck(lambda s: ni.gaussian_filter(img.detach(), s), (t([0.8, 1.3], True),))
    # jacrev against jacfwd in the per-axis sigma; vmap over images against a loop
    s0 = t([0.8, 1.3])
    close(jacrev(lambda s: ni.gaussian_filter(img.detach(), s, order=[0, 1]))(s0),
          jacfwd(lambda s: ni.gaussian_filter(img.detach(), s, order=[0, 1]))(s0))
    imgs = rng.normal(size=(3, 4, 5))
    out = vmap(lambda a: ni.gaussian_filter(a, s0, mode="wrap"))(t(imgs))
    close(out, np.stack([sn.gaussian_filter(a, [0.8, 1.3], mode="wrap") for a in imgs]))
