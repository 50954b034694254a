"""``ndgrad.ndimage``: filters and geometric transforms of SciPy's ``scipy.ndimage``, written
with ndgrad operations, so their results are differentiable in the image (and the filter
weights of ``correlate``/``convolve``, the ``sigma`` of the Gaussian filters), and the
interpolating transforms in the sample coordinates too, in every transform (``grad``, ``jvp``,
``vmap``, ...).

What it owns: ``correlate1d``, ``convolve1d``, ``correlate``, ``convolve``,
``gaussian_filter1d``, ``gaussian_filter``, ``uniform_filter1d``, ``uniform_filter``, ``sobel``,
``laplace`` (filters), and ``map_coordinates``, ``shift``, ``zoom``, ``affine_transform``
(B-spline interpolation of order 0 to 5), ``spline_filter1d``, ``spline_filter`` (the spline
prefilter).

Note [ndimage boundary modes]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
The filters pad the input (:func:`ndgrad.pad`) and take a weighted sum of shifted windows.
SciPy's names map to NumPy's ``pad`` modes: "reflect" (``d c b a | a b c d | d c b a``, the
half-sample symmetric extension) is NumPy's "symmetric", "mirror" (``d c b | a b c d | c b a``)
is NumPy's "reflect", "nearest" is "edge", "wrap" and "constant" (with ``cval``) keep their
names; "grid-mirror", "grid-constant" and "grid-wrap" are "reflect", "constant" and "wrap".

The interpolating transforms take, for a sample point ``c`` and a B-spline of ``order``, the
neighbours ``start .. start + order`` with ``start = floor(c) - order // 2`` (odd orders) or
``round(c) - order // 2`` (even orders), weighted by the B-spline's polynomial pieces at the
fraction ``c - floor(c)`` (or ``c - round(c)``). Each neighbour's integer index is mapped into
the input as SciPy extends the coefficients: reflect / grid-mirror (period ``2n``), mirror
(period ``2n - 2``; also for "constant" and "wrap"), nearest (clamp), grid-wrap (period
``n``), grid-constant (``cval`` outside). "constant" gives ``cval`` for any sample point
outside ``[0, n - 1]`` in some dimension, and SciPy's "wrap" wraps the coordinate with period
``n - 1`` (SciPy's documented legacy behaviour; "grid-wrap" is the periodic one). The weights
are polynomials in ``c`` (the floor is a constant index), so ``d/dcoordinate`` comes from
them: order 1 is continuous, order ``k`` is ``k - 1`` times continuously differentiable in the
coordinates; ``order=0`` (``floor(c + 0.5)``) is differentiable in the input only.

Note [ndimage spline prefilter]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
For ``order`` 2 to 5 with ``prefilter=True`` the input is first replaced by its B-spline
coefficients (``spline_filter``): SciPy runs, along each axis, a recursive filter with
``order // 2`` poles (Unser, Aldroubi & Eden 1991), each a causal and an anticausal pass whose
first value is initialized by the boundary mode: whole-sample symmetric ("mirror",
"constant", "wrap", "grid-constant"), half-sample symmetric ("reflect", "grid-mirror",
"nearest") or periodic ("grid-wrap"). The filter is linear, so ndgrad builds its ``n x n``
matrix once per (length, order, mode) by running SciPy's recursion on the columns of the
identity (NumPy, cached) and applies it with :func:`ndgrad.matmul`: the values are SciPy's up
to rounding, and the derivative in the input is the exact adjoint (the transposed matrix).
SciPy before 1.18 read, in the last term of its half-sample initialization, the first value
it was updating (SciPy issue 24550), so on short axes its "reflect" spline missed the samples
(by about ``1e-6`` for order 3 on 5 samples); ndgrad computes the exact initialization, as
SciPy 1.18 does, and its spline passes through the samples. For "nearest" and
"grid-constant" SciPy pads the input with 12 samples (edge values, ``cval``) before filtering
and interpolates in the padded coefficients; ndgrad does the same.
"""

from __future__ import annotations

import functools
import itertools
import numbers

import numpy as np

from ..core.ops import PUBLIC as _PUBLIC
from ..core.tensor import Tensor
from .interpolate import _const, _float

__name__ = "ndgrad.ndimage"  # its public name (Note [Public module names] in scipy/__init__.py)

F = type("F", (), {k: staticmethod(v) for k, v in _PUBLIC.items()})

__all__ = ["correlate1d", "convolve1d", "correlate", "convolve", "gaussian_filter1d",
           "gaussian_filter", "uniform_filter1d", "uniform_filter", "sobel", "laplace",
           "map_coordinates", "shift", "zoom", "affine_transform", "spline_filter1d",
           "spline_filter"]


_PAD_MODE = {"reflect": "symmetric", "grid-mirror": "symmetric", "mirror": "reflect",
             "nearest": "edge", "wrap": "wrap", "grid-wrap": "wrap", "constant": "constant",
             "grid-constant": "constant"}




def _seq(value, n, name):
    """``value`` repeated for ``n`` axes, or checked to have ``n`` entries (a 1-D Tensor gives
    its entries, as Tensors)."""
    if isinstance(value, Tensor):
        if value.ndim == 0:
            return [value] * n
        value = [value[i] for i in range(value.shape[0])] if value.ndim == 1 else [None]
    elif isinstance(value, (str, numbers.Number)) or (
            not isinstance(value, (list, tuple)) and np.ndim(value) == 0):
        return [value] * n
    value = list(value)
    if len(value) != n:
        raise RuntimeError(f"sequence argument `{name}` must have length equal to input rank "
                           f"({n}), got {len(value)}.")
    return value


def _check_mode(mode):
    if mode not in _PAD_MODE:
        raise RuntimeError(f"boundary mode not supported: {mode!r}; use one of "
                           f"{sorted(_PAD_MODE)}.")


# ------------------------------------------------------------------------------ filters


def correlate1d(input, weights, axis=-1, output=None, mode="reflect", cval=0.0, origin=0):
    """One-dimensional correlation along ``axis`` (SciPy's ``ndimage.correlate1d``):
    ``out[i] = sum_j weights[j] * in[i + j - (len(weights) // 2 + origin)]`` with the input
    extended by ``mode`` (Note [ndimage boundary modes]). Differentiable in ``input`` and
    ``weights``.

    Examples
    --------
    >>> import ndgrad
    >>> from ndgrad import ndimage
    >>> ndimage.correlate1d(ndgrad.tensor([2.0, 8.0, 0.0, 4.0]), ndgrad.tensor([1.0, 3.0]))
    tensor([ 8., 26.,  8., 12.])
    """
    if output is not None:
        raise NotImplementedError("ndimage: `output` is not supported; use the return value.")
    _check_mode(mode)
    x = _float(input)
    w = _float(weights, x.device)
    if w.ndim != 1 or w.shape[0] < 1:
        raise RuntimeError("no filter weights given: `weights` must be a non-empty 1-D array.")
    L = w.shape[0]
    center = L // 2 + origin
    if not 0 <= center < L:
        raise ValueError(f"invalid origin {origin} for a filter of length {L}: need "
                         f"{-(L // 2)} <= origin <= {L - 1 - L // 2}.")
    axis = axis % x.ndim if x.ndim else 0
    n = x.shape[axis]
    xm = F.moveaxis(x, axis, -1)
    pad = [(0, 0)] * (xm.ndim - 1) + [(center, L - 1 - center)]
    kw = {"constant_values": cval} if _PAD_MODE[mode] == "constant" else {}
    xp = F.pad(xm, pad, mode=_PAD_MODE[mode], **kw)
    windows = xp[..., _const(np.arange(n)[:, None] + np.arange(L)[None, :], x).astype("int64")]
    out = F.matmul(windows, w.astype(windows.dtype))  # (..., n, L) @ (L,)
    return F.moveaxis(out, -1, axis)


def convolve1d(input, weights, axis=-1, output=None, mode="reflect", cval=0.0, origin=0):
    """One-dimensional convolution along ``axis`` (SciPy's ``ndimage.convolve1d``): correlation
    with the reversed weights (and the origin mirrored). Differentiable in ``input`` and
    ``weights``.

    Examples
    --------
    >>> import ndgrad
    >>> from ndgrad import ndimage
    >>> ndimage.convolve1d(ndgrad.tensor([2.0, 8.0, 0.0, 4.0]), ndgrad.tensor([1.0, 3.0]))
    tensor([14., 24.,  4., 16.])
    """
    w = _float(weights)
    origin = -origin
    if not w.shape[0] & 1:
        origin -= 1
    return correlate1d(input, F.flip(w), axis, output, mode, cval, origin)


def correlate(input, weights, output=None, mode="reflect", cval=0.0, origin=0):
    """Multidimensional correlation (SciPy's ``ndimage.correlate``): ``weights`` has the
    input's rank; each axis is extended by ``mode``. Differentiable in ``input`` and
    ``weights``. Costs one shifted window per weight (meant for small kernels).

    Examples
    --------
    >>> import ndgrad
    >>> from ndgrad import ndimage
    >>> a = ndgrad.arange(9.0).reshape(3, 3)
    >>> ndimage.correlate(a, ndgrad.ones((2, 2)), mode="constant")
    tensor([[ 0.,  1.,  3.],
            [ 3.,  8., 12.],
            [ 9., 20., 24.]])
    """
    return _correlate_nd(input, weights, output, mode, cval, origin, flip=False)


def convolve(input, weights, output=None, mode="reflect", cval=0.0, origin=0):
    """Multidimensional convolution (SciPy's ``ndimage.convolve``): correlation with the
    weights reversed in every axis. Differentiable in ``input`` and ``weights``.

    Examples
    --------
    >>> import ndgrad
    >>> from ndgrad import ndimage
    >>> a = ndgrad.tensor([[1.0, 2.0, 0.0], [5.0, 3.0, 0.0], [0.0, 0.0, 7.0]])
    >>> ndimage.convolve(a, ndgrad.tensor([[0.0, 1.0], [1.0, 0.0]]), mode="constant")
    tensor([[7., 3., 0.],
            [3., 0., 7.],
            [0., 7., 0.]])
    """
    return _correlate_nd(input, weights, output, mode, cval, origin, flip=True)


def _correlate_nd(input, weights, output, mode, cval, origin, flip):
    if output is not None:
        raise NotImplementedError("ndimage: `output` is not supported; use the return value.")
    x = _float(input)
    w = _float(weights, x.device)
    if w.ndim != x.ndim:
        raise RuntimeError(f"filter weights array has rank {w.ndim}, but the input has rank "
                           f"{x.ndim}: they must be equal.")
    modes = _seq(mode, x.ndim, "mode")
    origins = [int(o) for o in _seq(origin, x.ndim, "origin")]
    if flip:
        w = F.flip(w)
        origins = [-o - (0 if s & 1 else 1) for o, s in zip(origins, w.shape)]
    pad = []
    for o, s in zip(origins, w.shape):
        c = s // 2 + o
        if not 0 <= c < s:
            raise ValueError(f"invalid origin {o} for a filter of size {s}.")
        pad.append((c, s - 1 - c))
    xp = x
    for d, m in enumerate(modes):  # pad axis by axis (each with its own mode)
        _check_mode(m)
        width = [(0, 0)] * x.ndim
        width[d] = pad[d]
        kw = {"constant_values": cval} if _PAD_MODE[m] == "constant" else {}
        xp = F.pad(xp, width, mode=_PAD_MODE[m], **kw)
    out = None
    for offs in itertools.product(*[range(s) for s in w.shape]):
        window = xp[tuple(slice(o, o + n) for o, n in zip(offs, x.shape))]
        term = w[offs] * window
        out = term if out is None else out + term
    return out


def _gaussian_kernel1d(sigma, order, x, exp=np.exp):
    """SciPy's ``_gaussian_kernel1d`` at the offsets ``x``: the normalized
    ``exp(-x² / (2 sigma²))`` times the polynomial ``p`` with ``d^order/dx^order exp(-x² /
    (2 sigma²)) = p(x) exp(...)``, whose coefficients follow ``q'[k] = (k + 1) q[k + 1] -
    q[k - 1] / sigma²`` (SciPy's recursion). NumPy values, or, with ``x`` a Tensor and
    ``exp=F.exp``, ndgrad operations (differentiable in a Tensor ``sigma``)."""
    if order < 0:
        raise ValueError("order must be non-negative")
    sigma2 = sigma * sigma
    phi = exp(-0.5 * x * x / sigma2)
    phi = phi / phi.sum()
    if order == 0:
        return phi
    q = [1.0] + [0.0] * order
    for _ in range(order):
        q = [((k + 1) * q[k + 1] if k < order else 0.0) - (q[k - 1] / sigma2 if k else 0.0)
             for k in range(order + 1)]
    poly = None
    for k, qk in enumerate(q):
        term = qk * x ** k
        poly = term if poly is None else poly + term
    return poly * phi


def _offsets(radius):
    return np.arange(-radius, radius + 1, dtype=float)


def _sigma_value(sigma):
    """The host value of ``sigma`` (a number or a scalar Tensor): it fixes the radius."""
    if isinstance(sigma, Tensor):
        if sigma.ndim != 0:
            raise ValueError(f"sigma must be a scalar per axis, got a Tensor of shape "
                             f"{tuple(sigma.shape)}.")
        return float(sigma.detach())
    return float(sigma)


def gaussian_filter1d(input, sigma, axis=-1, order=0, output=None, mode="reflect", cval=0.0,
                      truncate=4.0, *, radius=None):
    """One-dimensional Gaussian filter (SciPy's ``ndimage.gaussian_filter1d``): correlation with
    the sampled Gaussian (``order`` > 0: its derivative) of radius
    ``int(truncate * sigma + 0.5)`` (or ``radius``). Differentiable in ``input`` and, when
    ``sigma`` is a (scalar) Tensor, in ``sigma``: the kernel weights are functions of
    ``sigma`` while the radius, an integer, is not (the result jumps where the radius
    changes).

    Examples
    --------
    >>> import ndgrad
    >>> from ndgrad import ndimage
    >>> ndimage.gaussian_filter1d(ndgrad.tensor([1.0, 2.0, 3.0, 4.0, 5.0]), 1.0)
    tensor([1.42704095, 2.06782203, 3.        , 3.93217797, 4.57295905])
    >>> s = ndgrad.tensor(1.0, requires_grad=True)
    >>> ndimage.gaussian_filter1d(ndgrad.tensor([0.0, 0.0, 1.0, 0.0, 0.0]), s)[2].backward()
    >>> s.grad  # a wider Gaussian has a lower peak
    tensor(-0.39891475)
    """
    sv = _sigma_value(sigma)
    lw = int(truncate * sv + 0.5) if radius is None else int(radius)
    if lw < 0:
        raise ValueError("Radius must be a nonnegative integer.")
    if isinstance(sigma, Tensor):
        x = _float(input)
        weights = F.flip(_gaussian_kernel1d(_float(sigma, x.device).astype(x.dtype),
                                            int(order), _const(_offsets(lw), x), F.exp))
        return correlate1d(x, weights, axis, output, mode, cval, 0)
    weights = _gaussian_kernel1d(sv, int(order), _offsets(lw))[::-1].copy()
    return correlate1d(input, weights, axis, output, mode, cval, 0)


def gaussian_filter(input, sigma, order=0, output=None, mode="reflect", cval=0.0,
                    truncate=4.0, *, radius=None, axes=None):
    """Multidimensional Gaussian filter (SciPy's ``ndimage.gaussian_filter``): a
    :func:`gaussian_filter1d` along each axis (``sigma``, ``order``, ``mode``, ``radius`` may be
    per-axis sequences; axes with ``sigma`` 0 are skipped). Differentiable in ``input`` and in
    ``sigma`` where it is a Tensor (a scalar, a 1-D Tensor with one entry per axis, or a
    sequence of scalar Tensors; see :func:`gaussian_filter1d`).

    Examples
    --------
    >>> import ndgrad
    >>> from ndgrad import ndimage
    >>> x = ndgrad.zeros((3, 3))
    >>> x[1, 1] = 1.0
    >>> ndimage.gaussian_filter(x, 1.0, mode="constant")[1, 1]
    tensor(0.15915589)
    """
    x = _float(input)
    axes = list(range(x.ndim)) if axes is None else [a % x.ndim for a in axes]
    k = len(axes)
    sigmas, orders = _seq(sigma, k, "sigma"), _seq(order, k, "order")
    modes, radii = _seq(mode, k, "mode"), _seq(radius, k, "radius")
    if output is not None:
        raise NotImplementedError("ndimage: `output` is not supported; use the return value.")
    for ax, s, o, m, r in zip(axes, sigmas, orders, modes, radii):
        if _sigma_value(s) > 1e-15:
            x = gaussian_filter1d(x, s, ax, o, None, m, cval, truncate, radius=r)
    return x


def uniform_filter1d(input, size, axis=-1, output=None, mode="reflect", cval=0.0, origin=0):
    """One-dimensional mean over windows of ``size`` (SciPy's ``ndimage.uniform_filter1d``).
    Differentiable in ``input``.

    Examples
    --------
    >>> import ndgrad
    >>> from ndgrad import ndimage
    >>> ndimage.uniform_filter1d(ndgrad.tensor([2.0, 8.0, 0.0, 4.0, 1.0]), size=3)
    tensor([4.        , 3.33333333, 4.        , 1.66666667, 2.        ])
    """
    if size < 1:
        raise RuntimeError("incorrect filter size: `size` must be >= 1.")
    return correlate1d(input, np.full(int(size), 1.0 / size), axis, output, mode, cval, origin)


def uniform_filter(input, size=3, output=None, mode="reflect", cval=0.0, origin=0, *,
                   axes=None):
    """Multidimensional mean filter (SciPy's ``ndimage.uniform_filter``): a
    :func:`uniform_filter1d` along each axis (``size``, ``mode``, ``origin`` may be sequences).
    Differentiable in ``input``.

    Examples
    --------
    >>> import ndgrad
    >>> from ndgrad import ndimage
    >>> ndimage.uniform_filter(ndgrad.eye(3), size=2)
    tensor([[1.  , 0.5 , 0.  ],
            [0.5 , 0.5 , 0.25],
            [0.  , 0.25, 0.5 ]])
    """
    x = _float(input)
    axes = list(range(x.ndim)) if axes is None else [a % x.ndim for a in axes]
    k = len(axes)
    for ax, s, m, o in zip(axes, _seq(size, k, "size"), _seq(mode, k, "mode"),
                           _seq(origin, k, "origin")):
        if s > 1:
            x = uniform_filter1d(x, s, ax, output, m, cval, o)
    return x


def sobel(input, axis=-1, output=None, mode="reflect", cval=0.0):
    """Sobel filter (SciPy's ``ndimage.sobel``): the derivative ``[-1, 0, 1]`` along ``axis``
    and the smoothing ``[1, 2, 1]`` along the other axes. Differentiable in ``input``.

    Examples
    --------
    >>> import ndgrad
    >>> from ndgrad import ndimage
    >>> ndimage.sobel(ndgrad.tensor([[0.0, 1.0, 4.0], [0.0, 1.0, 4.0]]), axis=1)
    tensor([[ 4., 16., 12.],
            [ 4., 16., 12.]])
    """
    x = _float(input)
    axis = axis % x.ndim
    modes = _seq(mode, x.ndim, "mode")
    x = correlate1d(x, [-1.0, 0.0, 1.0], axis, output, modes[axis], cval, 0)
    for ax in range(x.ndim):
        if ax != axis:
            x = correlate1d(x, [1.0, 2.0, 1.0], ax, output, modes[ax], cval, 0)
    return x


def laplace(input, output=None, mode="reflect", cval=0.0):
    """Laplace filter (SciPy's ``ndimage.laplace``): the sum over axes of the second difference
    ``[1, -2, 1]``. Differentiable in ``input``.

    Examples
    --------
    >>> import ndgrad
    >>> from ndgrad import ndimage
    >>> ndimage.laplace(ndgrad.tensor([0.0, 1.0, 4.0, 9.0]))
    tensor([ 1.,  2.,  2., -5.])
    """
    x = _float(input)
    modes = _seq(mode, x.ndim, "mode")
    out = None
    for ax in range(x.ndim):
        term = correlate1d(x, [1.0, -2.0, 1.0], ax, output, modes[ax], cval, 0)
        out = term if out is None else out + term
    return out


# ------------------------------------------------------------------------------ interpolation


def _map_index(j, n, mode):
    """Integer indices ``j`` (a Tensor) mapped into ``0 .. n-1`` by ``mode``; for the constant
    modes also the mask of indices outside."""
    if mode in ("nearest", "constant", "wrap"):  # constant / wrap: the coordinate was handled
        return F.clip(j, 0, n - 1), None
    if mode == "grid-constant":
        return F.clip(j, 0, n - 1), (j < 0) | (j > n - 1)
    if mode == "grid-wrap":
        return F.remainder(j, n), None
    if mode in ("reflect", "grid-mirror"):  # half-sample symmetric, period 2n
        j = F.remainder(j, 2 * n)
        return F.where(j >= n, 2 * n - 1 - j, j), None
    if n == 1:  # mirror of one sample
        return j * 0, None
    j = F.remainder(j, 2 * n - 2)  # mirror: whole-sample symmetric, period 2n - 2
    return F.where(j >= n, 2 * n - 2 - j, j), None


def map_coordinates(input, coordinates, output=None, order=3, mode="constant", cval=0.0,
                    prefilter=True):
    """Interpolate ``input`` at ``coordinates`` (SciPy's ``ndimage.map_coordinates``) with
    B-splines of ``order`` 0 (nearest) to 5 (3, cubic, is SciPy's default); differentiable in
    ``input`` and, for orders 1 to 5, in ``coordinates``.

    Every mode of SciPy is supported for every order (Note [ndimage boundary modes], Note
    [ndimage spline prefilter]); ``prefilter=False`` takes ``input`` as the spline
    coefficients.

    Parameters
    ----------
    input : array_like, shape ``(n_1, ..., n_d)``
    coordinates : array_like, shape ``(d, ...)``
        The sample points (in index units); the output has shape ``coordinates.shape[1:]``.
    order : {0, 1, 2, 3, 4, 5}
    mode : {"constant", "grid-constant", "nearest", "reflect", "grid-mirror", "mirror",
        "wrap", "grid-wrap"}
        The extension beyond the edges (Note [ndimage boundary modes]).
    cval : float
    prefilter : bool
        For ``order`` > 1: whether ``input`` holds samples (filtered by :func:`spline_filter`
        first) or spline coefficients.

    Examples
    --------
    >>> import ndgrad
    >>> from ndgrad import ndimage
    >>> a = ndgrad.arange(12.0).reshape(4, 3)
    >>> ndimage.map_coordinates(a, ndgrad.tensor([[0.5, 2.0], [0.5, 1.0]]), order=1)
    tensor([2., 7.])
    """
    if output is not None:
        raise NotImplementedError("ndimage: `output` is not supported; use the return value.")
    _check_order(order, 0)
    _check_mode(mode)
    x = _float(input)
    c = _float(coordinates, x.device)
    if c.ndim < 1 or c.shape[0] != x.ndim:
        raise RuntimeError(f"invalid shape for coordinate array: its first axis must have the "
                           f"input's rank {x.ndim}, got shape {c.shape}.")
    out_shape = tuple(c.shape[1:])
    c = c.reshape(x.ndim, -1)
    npad = 0
    if order >= 2 and prefilter:
        if mode in ("nearest", "grid-constant"):  # SciPy pads 12 samples, then filters
            npad = _PREPAD
            kw = {"constant_values": cval} if mode == "grid-constant" else {}
            x = F.pad(x, [(npad, npad)] * x.ndim, mode=_PAD_MODE[mode], **kw)
        x = _spline_filter(x, order, mode, range(x.ndim))
    coords, outside = [], None
    for d in range(x.ndim):
        cd, n = c[d], x.shape[d]
        if mode == "constant":
            o = (cd < 0) | (cd > n - 1)
            outside = o if outside is None else outside | o
        elif mode == "wrap" and n > 1:  # SciPy's legacy wrap: period n - 1 outside [0, n-1]
            cd = F.where((cd < 0) | (cd > n - 1), F.remainder(cd, float(n - 1)), cd)
        coords.append(cd + npad if npad else cd)
    if order == 0:
        corners = [(tuple(F.floor(cd.detach() + 0.5).astype("int64") for cd in coords), None)]
    else:
        # the neighbours start .. start + order of each coordinate, start = floor(c) - order // 2
        # (odd orders) or round(c) - order // 2 (even orders); d weight / d c from the
        # polynomial pieces (the floor is a constant index)
        half = 0.0 if order & 1 else 0.5
        base = [F.floor(cd.detach() + half) for cd in coords]
        weights = [_bspline_weights(order, cd - b) for cd, b in zip(coords, base)]
        base = [b.astype("int64") - order // 2 for b in base]
        corners = []
        for corner in itertools.product(range(order + 1), repeat=x.ndim):
            weight = None
            for k, wd in zip(corner, weights):
                weight = wd[k] if weight is None else weight * wd[k]
            corners.append((tuple(b + k for b, k in zip(base, corner)), weight))
    # how the coefficients extend beyond the edges (SciPy's spline boundary mode)
    index_mode = "mirror" if mode in ("constant", "wrap") else mode
    out = None
    for idx, weight in corners:
        mapped, mask = [], None
        for d, j in enumerate(idx):
            jm, o = _map_index(j, x.shape[d], index_mode)
            mapped.append(jm)
            if o is not None:
                mask = o if mask is None else mask | o
        v = x[tuple(mapped)]
        if mask is not None:
            v = F.where(mask, _const(cval, v), v)
        term = v if weight is None else weight * v
        out = term if out is None else out + term
    if outside is not None:
        out = F.where(outside, _const(cval, out), out)
    return out.reshape(out_shape)


_PREPAD = 12  # SciPy's padding before the prefilter of modes "nearest", "grid-constant"


def _check_order(order, lowest):
    if isinstance(order, bool) or not isinstance(order, numbers.Integral) \
            or not lowest <= order <= 5:
        raise RuntimeError(f"spline order not supported: `order` must be an integer in "
                           f"{lowest}..5, got {order!r}.")


def _bspline_weights(order, t):
    """The B-spline weights (SciPy's ``get_spline_interpolation_weights``) of the neighbours
    ``start .. start + order`` at ``t = c - floor(c)`` (odd orders, in ``[0, 1)``) or
    ``t = c - round(c)`` (even orders, in ``[-1/2, 1/2)``): polynomials in ``t``."""
    if order == 1:
        return [1.0 - t, t]
    if order == 2:
        return [(0.5 - t) ** 2 / 2.0, 0.75 - t * t, (0.5 + t) ** 2 / 2.0]
    if order == 3:
        t2, t3 = t * t, t * t * t
        return [(1.0 - t) ** 3 / 6.0, (3.0 * t3 - 6.0 * t2 + 4.0) / 6.0,
                (-3.0 * t3 + 3.0 * t2 + 3.0 * t + 1.0) / 6.0, t3 / 6.0]
    if order == 4:
        def outer(y):  # the pieces at distance 1/2 .. 3/2 from the middle knot
            return y * (y * (y * (5.0 - y) / 6.0 - 1.25) + 5.0 / 24.0) + 55.0 / 96.0
        t2 = t * t
        return [(0.5 - t) ** 4 / 24.0, outer(1.0 + t), t2 * (t2 * 0.25 - 0.625) + 115.0 / 192.0,
                outer(1.0 - t), (0.5 + t) ** 4 / 24.0]

    def inner(y):  # order 5: the pieces at distance 0 .. 1 and 1 .. 2
        y2 = y * y
        return y2 * (y2 * (0.25 - y / 12.0) - 0.5) + 0.55

    def outer5(y):
        return y * (y * (y * (y * (y / 24.0 - 0.375) + 1.25) - 1.75) + 0.625) + 0.425
    return [(1.0 - t) ** 5 / 120.0, outer5(1.0 + t), inner(t), inner(1.0 - t), outer5(2.0 - t),
            t ** 5 / 120.0]


# SciPy's B-spline filter poles (Unser et al. 1991): order // 2 of them
_POLES = {2: (np.sqrt(8.0) - 3.0,), 3: (np.sqrt(3.0) - 2.0,),
          4: (np.sqrt(664.0 - np.sqrt(438976.0)) + np.sqrt(304.0) - 19.0,
              np.sqrt(664.0 + np.sqrt(438976.0)) - np.sqrt(304.0) - 19.0),
          5: (np.sqrt(67.5 - np.sqrt(4436.25)) + np.sqrt(26.25) - 6.5,
              np.sqrt(67.5 + np.sqrt(4436.25)) - np.sqrt(26.25) - 6.5)}
# the boundary initialization of SciPy's recursive filter, by mode
_FILTER_INIT = {"mirror": "mirror", "constant": "mirror", "grid-constant": "mirror",
                "wrap": "mirror", "grid-wrap": "periodic", "nearest": "reflect",
                "reflect": "reflect", "grid-mirror": "reflect"}


@functools.lru_cache(maxsize=64)
def _prefilter_matrix(n, order, init):
    """The ``n x n`` matrix of SciPy's 1-D spline prefilter (``spline_filter1d``) of ``order``
    with the boundary initialization ``init``: SciPy's recursion (gain, then per pole a causal
    and an anticausal pass) run on the columns of the identity (Note [ndimage spline
    prefilter])."""
    c = np.eye(n)
    if n < 2:
        return c
    zs = _POLES[order]
    c *= np.prod([(1.0 - z) * (1.0 - 1.0 / z) for z in zs])
    for z in zs:
        p = z ** np.arange(1, n)  # z, z^2, ..., z^(n-1)
        if init == "mirror":
            zn1 = z ** (n - 1)
            c[0] = (c[0] + zn1 * c[n - 1] + p[:n - 2] @ (c[1:n - 1] + zn1 * c[n - 2:0:-1])) \
                / (1.0 - zn1 * zn1)
        elif init == "periodic":
            c[0] = (c[0] + p @ c[n - 1:0:-1]) / (1.0 - z ** n)
        else:  # reflect (the last term reads the original c[0]: SciPy >= 1.18, gh-24550)
            zn, c0 = z ** n, c[0].copy()
            s = c0 + zn * c[n - 1] + p[:n - 2] @ (c[1:n - 1] + zn * c[n - 2:0:-1])
            s = s + p[n - 2] * (c[n - 1] + zn * c0)
            c[0] = s * z / (1.0 - zn * zn) + c0
        for i in range(1, n):
            c[i] += z * c[i - 1]
        if init == "mirror":
            c[n - 1] = (z * c[n - 2] + c[n - 1]) * z / (z * z - 1.0)
        elif init == "periodic":
            c[n - 1] = (c[n - 1] + p @ c[:n - 1]) * z / (z ** n - 1.0)
        else:
            c[n - 1] *= z / (z - 1.0)
        for i in range(n - 2, -1, -1):
            c[i] = z * (c[i + 1] - c[i])
    c.setflags(write=False)
    return c


def _spline_filter(x, order, mode, axes):
    """``x`` filtered along ``axes`` by the prefilter matrices (linear in ``x``: the adjoint is
    the transposed matrix)."""
    for d in axes:
        n = x.shape[d]
        if n < 2 or order < 2:
            continue
        M = _const(_prefilter_matrix(n, order, _FILTER_INIT[mode]), x)
        xm = F.moveaxis(x, d, 0)
        x = F.moveaxis(F.matmul(M, xm.reshape(n, -1)).reshape(xm.shape), 0, d)
    return x


def _output_dtype(output):
    if output is not None and np.dtype(output) != np.float64:
        raise NotImplementedError("ndimage: `output` other than float64 is not supported; use "
                                  "the return value.")


def spline_filter1d(input, order=3, axis=-1, output=np.float64, mode="mirror"):
    """The B-spline coefficients of ``input`` along ``axis`` (SciPy's
    ``ndimage.spline_filter1d``), for :func:`map_coordinates` with ``prefilter=False``:
    SciPy's recursive filter, applied as its matrix (Note [ndimage spline prefilter]). Orders
    0 and 1 return the input. Differentiable in ``input`` (linear).

    Examples
    --------
    >>> import ndgrad
    >>> from ndgrad import ndimage
    >>> ndimage.spline_filter1d(ndgrad.tensor([0.0, 6.0, 0.0]), order=2)
    tensor([-3.,  9., -3.])
    """
    _check_order(order, 0)
    _output_dtype(output)
    _check_mode(mode)
    x = _float(input)
    if x.ndim == 0:
        return x
    return _spline_filter(x, order, mode, [axis % x.ndim])


def spline_filter(input, order=3, output=np.float64, mode="mirror"):
    """Multidimensional B-spline prefilter (SciPy's ``ndimage.spline_filter``): a
    :func:`spline_filter1d` along every axis. Differentiable in ``input`` (linear).

    Examples
    --------
    >>> import ndgrad
    >>> from ndgrad import ndimage
    >>> c = ndimage.spline_filter(ndgrad.eye(3), order=3)
    >>> ndimage.map_coordinates(c, ndgrad.tensor([[1.0], [1.0]]), prefilter=False)
    tensor([1.])
    """
    _check_order(order, 2)
    _output_dtype(output)
    _check_mode(mode)
    x = _float(input)
    return _spline_filter(x, order, mode, range(x.ndim))


def _grid(shape, like):
    return _const(np.indices(shape, dtype=float).reshape(len(shape), -1), like)


def shift(input, shift, output=None, order=3, mode="constant", cval=0.0, prefilter=True):
    """Shift an array (SciPy's ``ndimage.shift``): ``out[i] = input[i - shift]``, interpolated
    with :func:`map_coordinates` (``order`` 0 to 5). Differentiable in ``input`` and, for
    orders 1 to 5, in ``shift``.

    Examples
    --------
    >>> import ndgrad
    >>> from ndgrad import ndimage
    >>> ndimage.shift(ndgrad.tensor([1.0, 2.0, 4.0, 8.0]), 0.5, order=1, mode="nearest")
    tensor([1. , 1.5, 3. , 6. ])
    """
    x = _float(input)
    s = F.broadcast_to(_float(shift, x.device), (x.ndim,))
    coords = _grid(x.shape, x) - s[:, None]
    return map_coordinates(x, coords.reshape((x.ndim,) + tuple(x.shape)), output, order, mode,
                           cval, prefilter)


def zoom(input, zoom, output=None, order=3, mode="constant", cval=0.0, prefilter=True, *,
         grid_mode=False):
    """Zoom an array (SciPy's ``ndimage.zoom``): the output has ``round(n * zoom)`` samples
    along each axis, output sample ``i`` taken at ``i * (n - 1) / (n_out - 1)`` (with
    ``grid_mode=True``: pixel centres, ``(i + 0.5) n / n_out - 0.5``). ``order`` 0 to 5;
    differentiable in ``input``. As in SciPy the sample points depend on ``zoom`` only
    through the output shape, so the result is piecewise constant in ``zoom`` (no
    derivative).

    Examples
    --------
    >>> import ndgrad
    >>> from ndgrad import ndimage
    >>> ndimage.zoom(ndgrad.tensor([0.0, 2.0, 4.0]), 5 / 3, order=1)
    tensor([0., 1., 2., 3., 4.])
    """
    x = _float(input)
    zooms = _seq(zoom, x.ndim, "zoom")
    out_shape = tuple(int(round(n * z)) for n, z in zip(x.shape, zooms))
    if any(n < 1 for n in out_shape):
        raise ValueError(f"zoom {zoom} gives an empty output of shape {out_shape}.")
    axes = []
    for n, m in zip(x.shape, out_shape):
        i = np.arange(m, dtype=float)
        if grid_mode:
            axes.append((i + 0.5) * (n / m) - 0.5)
        else:
            axes.append(i * ((n - 1) / (m - 1)) if m > 1 else np.zeros(1))
    coords = np.stack(np.meshgrid(*axes, indexing="ij"))
    if grid_mode and mode == "constant":
        mode = "grid-constant"  # SciPy switches with a warning
    return map_coordinates(x, _const(coords, x), output, order, mode, cval, prefilter)


def affine_transform(input, matrix, offset=0.0, output_shape=None, output=None, order=3,
                     mode="constant", cval=0.0, prefilter=True):
    """Affine transformation (SciPy's ``ndimage.affine_transform``): output point ``o`` takes
    the input at ``matrix @ o + offset`` (the "pull" convention), interpolated with
    :func:`map_coordinates`. ``matrix`` may be ``(d, d)``, ``(d,)`` (diagonal), or a
    homogeneous ``(d + 1, d + 1)`` or ``(d, d + 1)`` matrix. Differentiable in ``input`` and,
    for orders 1 to 5, in ``matrix`` and ``offset``.

    Examples
    --------
    >>> import ndgrad
    >>> from ndgrad import ndimage
    >>> a = ndgrad.tensor([[0.0, 1.0], [2.0, 3.0]])
    >>> ndimage.affine_transform(a, ndgrad.tensor([[0.0, 1.0], [1.0, 0.0]]), order=1)
    tensor([[0., 2.],
            [1., 3.]])
    """
    x = _float(input)
    d = x.ndim
    m = _float(matrix, x.device)
    off = _float(offset, x.device)
    if m.ndim == 2 and m.shape in ((d + 1, d + 1), (d, d + 1)):
        off = m[:d, d]
        m = m[:d, :d]
    elif m.ndim == 1 and m.shape[0] == d:
        m = F.diag(m)
    elif m.shape != (d, d):
        raise RuntimeError(f"invalid shape for the transformation matrix {m.shape} for an input "
                           f"of rank {d}: use (d, d), (d,), (d + 1, d + 1) or (d, d + 1).")
    off = F.broadcast_to(off, (d,))
    shape = tuple(x.shape) if output_shape is None else tuple(output_shape)
    coords = F.matmul(m, _grid(shape, x)) + off[:, None]
    return map_coordinates(x, coords.reshape((d,) + shape), output, order, mode, cval,
                           prefilter)
