"""NumPy's statistics and products, written from primitives: order statistics (``quantile``,
``percentile``, ``median``), the NaN-ignoring reductions, ``ptp``, ``average``,
``trapezoid``, and ``dot``, ``inner``, ``kron``. Registered (``defcomposite``), so the
property suites check them like primitives; NumPy code calling them on Tensors runs these.

Order statistics differentiate through ``sort``: the gradient of a quantile goes to the
(at most two) elements it interpolates between, split by the interpolation weights, as in
PyTorch's ``quantile``; at ties, to the element the stable sort puts first.
"""

from __future__ import annotations

import math
import warnings

from ..backend import float64
from ..tensor import Tensor
from .batching import is_batched
from .linalg import _eye
from .reductions import inverse_scale_along
from .registry import LINALG, REDUCTION, SCAN, SHAPE, Domain, defcomposite
from .stacking import _arr

_ANY = Domain((-2.0, 2.0))
_ANYC = Domain((-2.0, 2.0), complex=True)


# ------------------------------------------------------------------------- order statistics
def _to_last(F, a, axis):
    """``a`` with the reduced ``axis`` (None: all; an int or a tuple) moved last and merged
    into one, and the shape a ``keepdims`` result has."""
    nd = len(a.shape)
    if axis is None:
        axes = tuple(range(nd))
    else:
        axes = axis if isinstance(axis, tuple) else (axis,)
        for ax in axes:
            if not -nd <= ax < max(nd, 1):
                raise ValueError(f"axis {ax} is out of bounds for a {nd}-D tensor")
        axes = tuple(sorted({ax % nd for ax in axes})) if nd else ()
    rest = tuple(k for k in range(nd) if k not in axes)
    if rest + axes != tuple(range(nd)):
        a = F.permute_dims(a, rest + axes)
    size = math.prod(a.shape[len(rest):])
    a = F.reshape(a, tuple(a.shape[:len(rest)]) + (size,))
    keep = tuple(1 if k in axes else a.shape[rest.index(k)] for k in range(nd))
    return a, keep


def _qs(q, who):
    """``q`` (a number, a sequence or a constant tensor of numbers in [0, 1]) as floats, and
    whether it was a scalar."""
    values = q.tolist() if hasattr(q, "tolist") else q
    scalar = not isinstance(values, (list, tuple))
    flat = [values] if scalar else list(values)
    if any(isinstance(v, (list, tuple)) for v in flat):
        raise ValueError(f"{who}: q must be a number or a 1-D sequence")
    for v in flat:
        if not 0.0 <= v <= 1.0:
            raise ValueError(f"{who}: quantiles must be in the range [0, 1], got {v}")
    return [float(v) for v in flat], scalar


def _quantile_input(F, a, axis, method, who):
    """``_to_last`` of ``a`` in a floating dtype, after the checks every quantile function
    makes (the linear method only, no empty tensor)."""
    if method != "linear":
        raise ValueError(f"{who}: only method='linear' (NumPy's default) is supported, got "
                         f"{method!r}")
    if a.dtype.kind not in "fc":  # (NumPy's quantiles of integers and bools are float64)
        a = F.astype(a, "float64")
    a2, keep = _to_last(F, a, axis)
    if a2.shape[-1] == 0:
        raise ValueError(f"{who}: cannot take a quantile of an empty tensor")
    return a2, keep


def _quantiles(F, a, qs, scalar, axis, keepdims, method, who):
    a2, keep = _quantile_input(F, a, axis, method, who)
    n = a2.shape[-1]
    s = F.sort(a2, axis=-1)
    out = []
    for q in qs:
        pos = q * (n - 1)
        lo = min(int(math.floor(pos)), n - 1)
        frac = pos - lo
        v = s[..., lo]
        if frac > 0:
            v = v * (1.0 - frac) + s[..., lo + 1] * frac
        if keepdims:
            v = F.reshape(v, keep)
        out.append(v)
    return out[0] if scalar else F.stack(out, axis=0)


def _sample_quantile(d):
    shape = d.shape()
    x = d.array(shape)
    q = d.choice([0.0, 0.3, 0.5, 1.0, [0.25, 0.9]])
    axis = d.choice([None] + ([d.axis(len(shape), none=False)] if shape else []))
    return (x, q), {"axis": axis, "keepdims": d.boolean()}


@defcomposite(kind=REDUCTION, domain=_ANY, sample=_sample_quantile)
def quantile(F, a, q, axis=None, *, keepdims=False, method="linear"):
    """The ``q``-th quantiles of ``a`` over ``axis`` (all elements by default), linearly
    interpolated (NumPy's default method).

    ``q`` is a number in [0, 1] or a sequence of them (then the quantiles stack along a new
    first axis); it is a constant. The gradient goes to the elements interpolated between.

    Examples
    --------
    >>> import ndgrad
    >>> x = ndgrad.tensor([1.0, 4.0, 2.0, 3.0], requires_grad=True)
    >>> ndgrad.quantile(x, 0.5)
    tensor(2.5, grad_fn=<AddBackward0>)
    >>> ndgrad.quantile(x, [0.0, 1.0])
    tensor([1., 4.], grad_fn=<StackBackward0>)
    """
    qs, scalar = _qs(q, "quantile")
    return _quantiles(F, a, qs, scalar, axis, keepdims, method, "quantile")


def _sample_percentile(d):
    (x, q), kw = _sample_quantile(d)
    return (x, [100 * v for v in q] if isinstance(q, list) else 100 * q), kw


@defcomposite(kind=REDUCTION, domain=_ANY, sample=_sample_percentile)
def percentile(F, a, q, axis=None, *, keepdims=False, method="linear"):
    """The ``q``-th percentiles (``q`` in [0, 100]) of ``a``: :func:`quantile` of ``q/100``.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.percentile(ndgrad.tensor([1.0, 2.0, 3.0, 4.0, 5.0]), 25)
    tensor(2.)
    """
    values = q.tolist() if hasattr(q, "tolist") else q
    scaled = [v / 100 for v in values] if isinstance(values, (list, tuple)) else values / 100
    qs, scalar = _qs(scaled, "percentile")
    return _quantiles(F, a, qs, scalar, axis, keepdims, method, "percentile")


@defcomposite(kind=REDUCTION, domain=_ANY)
def median(F, a, axis=None, *, keepdims=False):
    """The median of ``a`` over ``axis`` (the mean of the two middle values for an even
    count, as NumPy's; PyTorch's ``median`` takes the lower one).

    Examples
    --------
    >>> import ndgrad
    >>> x = ndgrad.tensor([3.0, 1.0, 4.0, 2.0], requires_grad=True)
    >>> m = ndgrad.median(x)
    >>> m
    tensor(2.5, grad_fn=<AddBackward0>)
    >>> m.backward()
    >>> x.grad
    tensor([0.5, 0. , 0. , 0.5])
    """
    return _quantiles(F, a, [0.5], True, axis, keepdims, "linear", "median")


# ------------------------------------------------------------------------- NaN-ignoring
@defcomposite(kind=REDUCTION, domain=_ANYC)
def nansum(F, a, axis=None, *, keepdims=False):
    """Sum over ``axis`` treating NaNs as zero (their gradient is zero).

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.nansum(ndgrad.tensor([1.0, float("nan"), 2.0]))
    tensor(3.)
    """
    if a.dtype.kind in "fc":  # (integers have no NaN: NumPy's sum, in their dtype)
        a = F.where(F.isnan(a), 0.0, a)
    return F.sum(a, axis=axis, keepdims=keepdims)


def _non_nan(F, a, axis, keepdims):
    """Where ``a`` is not NaN, and the sum and the count of those elements over ``axis``
    (the count in ``a``'s dtype: no promotion of float32)."""
    keep = F.logical_not(F.isnan(a))
    total = F.sum(F.where(keep, a, 0.0), axis=axis, keepdims=keepdims)
    count = F.sum(F.astype(F.where(keep, 1.0, 0.0), a.dtype), axis=axis, keepdims=keepdims)
    return keep, total, count


@defcomposite(kind=REDUCTION, domain=_ANYC)
def nanmean(F, a, axis=None, *, keepdims=False):
    """Mean over ``axis`` of the elements that are not NaN (NaN where all are).

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.nanmean(ndgrad.tensor([1.0, float("nan"), 2.0]))
    tensor(1.5)
    """
    keep, total, count = _non_nan(F, a, axis, keepdims)
    return total / count


def _nan_extremum(F, a, axis, keepdims, target, neutral):
    if a.dtype.kind not in "fc":  # (integers have no NaN: NumPy's max/min, in their dtype)
        return getattr(F, target)(a, axis=axis, keepdims=keepdims)
    nan = F.isnan(a)
    m = getattr(F, target)(F.where(nan, neutral, a), axis=axis, keepdims=keepdims)
    return F.where(F.all(nan, axis=axis, keepdims=keepdims), math.nan, m)


@defcomposite(kind=REDUCTION, domain=_ANY)
def nanmax(F, a, axis=None, *, keepdims=False):
    """Maximum over ``axis`` ignoring NaNs (NaN where all are).

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.nanmax(ndgrad.tensor([1.0, float("nan"), 2.0]))
    tensor(2.)
    """
    return _nan_extremum(F, a, axis, keepdims, "max", -math.inf)


@defcomposite(kind=REDUCTION, domain=_ANY)
def nanmin(F, a, axis=None, *, keepdims=False):
    """Minimum over ``axis`` ignoring NaNs (NaN where all are).

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.nanmin(ndgrad.tensor([1.0, float("nan"), 2.0]))
    tensor(1.)
    """
    return _nan_extremum(F, a, axis, keepdims, "min", math.inf)


@defcomposite(kind=REDUCTION, domain=_ANY)
def ptp(F, a, axis=None, *, keepdims=False):
    """Range (peak to peak) over ``axis``: ``max - min``.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.ptp(ndgrad.tensor([[1.0, 5.0], [2.0, 3.0]]), axis=1)
    tensor([4., 1.])
    """
    return F.max(a, axis=axis, keepdims=keepdims) - F.min(a, axis=axis, keepdims=keepdims)


# ------------------------------------------------------------------------- weighted
def _sample_average(d):
    shape = d.shape(min_dims=1)
    x = d.array(shape)
    axis = d.choice([None, d.axis(len(shape), none=False)])
    if d.boolean():
        wshape = shape if axis is None else (shape[axis],)
        return (x,), {"axis": axis, "weights": d.array(wshape, 0.5, 2.0)}
    return (x,), {"axis": axis}


@defcomposite(kind=REDUCTION, domain=_ANYC, sample=_sample_average)
def average(F, a, axis=None, weights=None, returned=False, *, keepdims=False):
    """Weighted mean over ``axis``: ``sum(a * w) / sum(w)``; ``weights`` are 1-D along a
    single ``axis`` or of ``a``'s shape, and differentiable. With ``returned``, also the sum
    of the weights.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.average(ndgrad.tensor([1.0, 2.0, 4.0]), weights=ndgrad.tensor([1.0, 1.0, 2.0]))
    tensor(2.75)
    """
    if weights is None:
        if not returned:
            return F.mean(a, axis=axis, keepdims=keepdims)
        weights = F.zeros(tuple(a.shape), dtype=a.dtype, like=a) + 1.0
    w = weights
    if tuple(w.shape) != tuple(a.shape):
        if axis is None or isinstance(axis, tuple) or len(w.shape) != 1 or \
                w.shape[0] != a.shape[axis]:
            raise ValueError("average: weights must have a's shape, or be 1-D along a single "
                             "axis with that axis's length")
        shape = [1] * len(a.shape)
        shape[axis] = w.shape[0]
        w = F.reshape(w, tuple(shape))
    total = F.sum(w + F.zeros(tuple(a.shape), dtype=w.dtype, like=w), axis=axis,
                  keepdims=keepdims)
    avg = F.sum(a * w, axis=axis, keepdims=keepdims) / total
    return (avg, total) if returned else avg


def _sample_trapezoid(d):
    shape = d.shape(min_dims=1, min_side=2)
    axis = d.axis(len(shape), none=False)
    y = d.array(shape)
    if d.boolean():
        return (y,), {"x": d.array((shape[axis],)), "axis": axis}
    return (y,), {"dx": d.choice([1.0, 0.5]), "axis": axis}


@defcomposite(kind=REDUCTION, domain=_ANYC, sample=_sample_trapezoid)
def trapezoid(F, y, x=None, dx=1.0, axis=-1):
    """The integral of ``y`` along ``axis`` by the trapezoidal rule, at sample points ``x``
    (1-D along the axis, or ``y``'s shape; differentiable) or spacing ``dx``.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.trapezoid(ndgrad.tensor([0.0, 1.0, 4.0]), x=ndgrad.tensor([0.0, 1.0, 2.0]))
    tensor(3.)
    """
    nd = len(y.shape)
    ax = axis % nd
    n = y.shape[ax]
    hi = (slice(None),) * ax + (slice(1, n),)
    lo = (slice(None),) * ax + (slice(0, n - 1),)
    mid = (y[hi] + y[lo]) * 0.5
    if x is None:
        return F.sum(mid, axis=ax) * dx
    if len(x.shape) == 1:
        d = x[1:] - x[:-1]
        shape = [1] * nd
        shape[ax] = n - 1
        d = F.reshape(d, tuple(shape))
    else:
        d = x[hi] - x[lo]
    return F.sum(mid * d, axis=ax)


# ------------------------------------------------------------------------- products
def _ndim(v):
    return len(v.shape) if hasattr(v, "shape") else 0  # (a Python number: 0)


def _sample_dot(d):
    case = d.choice(["1.1", "2.1", "2.2", "3.2", "0.2"])
    k, m, n = d.integers(1, 3), d.integers(1, 3), d.integers(1, 3)
    shapes = {"1.1": ((k,), (k,)), "2.1": ((m, k), (k,)), "2.2": ((m, k), (k, n)),
              "3.2": ((2, m, k), (k, n)), "0.2": ((), (m, n))}[case]
    return tuple(d.array(s) for s in shapes), {}


@defcomposite(kind=LINALG, nin=2, domain=_ANYC, sample=_sample_dot)
def dot(F, a, b):
    """NumPy's ``dot``: a product with a scalar, or the sum over ``a``'s last axis and
    ``b``'s second-to-last (its only axis when 1-D). For 2-D operands, a matrix product.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.dot(ndgrad.tensor([1.0, 2.0]), ndgrad.tensor([3.0, 4.0]))
    tensor(11.)
    """
    if _ndim(a) == 0 or _ndim(b) == 0:
        return a * b
    return F.tensordot(a, b, axes=([len(a.shape) - 1], [max(len(b.shape) - 2, 0)]))


def _sample_inner(d):
    k = d.integers(1, 3)
    sa = tuple(d.integers(1, 3) for _ in range(d.integers(0, 2))) + (k,)
    sb = tuple(d.integers(1, 3) for _ in range(d.integers(0, 2))) + (k,)
    return (d.array(sa), d.array(sb)), {}


@defcomposite(kind=LINALG, nin=2, domain=_ANYC, sample=_sample_inner)
def inner(F, a, b):
    """Sum over the last axes of ``a`` and ``b`` (no conjugation), NumPy's ``inner``.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.inner(ndgrad.tensor([[1.0, 2.0], [3.0, 4.0]]), ndgrad.tensor([1.0, 1.0]))
    tensor([3., 7.])
    """
    if _ndim(a) == 0 or _ndim(b) == 0:
        return a * b
    return F.tensordot(a, b, axes=([len(a.shape) - 1], [len(b.shape) - 1]))


def _sample_kron(d):
    na, nb = d.integers(1, 2), d.integers(1, 2)
    return (d.array(tuple(d.integers(1, 3) for _ in range(na))),
            d.array(tuple(d.integers(1, 3) for _ in range(nb)))), {}


@defcomposite(kind=LINALG, nin=2, domain=_ANYC, sample=_sample_kron)
def kron(F, a, b):
    """The Kronecker product: blocks ``a[i, j] * b`` (any number of dimensions; the shorter
    shape is padded with leading ones).

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.kron(ndgrad.tensor([1.0, 10.0]), ndgrad.tensor([1.0, 2.0, 3.0]))
    tensor([ 1.,  2.,  3., 10., 20., 30.])
    """
    if _ndim(a) == 0 or _ndim(b) == 0:
        return a * b
    nd = max(len(a.shape), len(b.shape))
    sa = (1,) * (nd - len(a.shape)) + tuple(a.shape)
    sb = (1,) * (nd - len(b.shape)) + tuple(b.shape)
    ea = F.reshape(a, tuple(v for s in sa for v in (s, 1)))
    eb = F.reshape(b, tuple(v for s in sb for v in (1, s)))
    return F.reshape(ea * eb, tuple(x * y for x, y in zip(sa, sb)))


# ------------------------------------------------------------------------- NumPy's scans
def _sample_scan(d):
    shape = d.shape()
    x = d.array(shape)
    return (x,), {"axis": d.choice([None] + ([d.axis(len(shape), none=False)] if shape
                                              else []))}


def _scan(F, a, axis, target, nan_neutral=None):
    if nan_neutral is not None and a.dtype.kind in "fc":
        a = F.where(F.isnan(a), nan_neutral, a)
    if axis is None or len(a.shape) == 0:
        a, axis = F.reshape(a, (-1,)), 0
    return getattr(F, target)(a, axis=axis)


@defcomposite(kind=SCAN, domain=_ANYC, sample=_sample_scan)
def cumsum(F, a, axis=None):
    """Cumulative sum along ``axis`` (of the flattened tensor by default), NumPy's
    ``cumsum`` (the array API's :func:`cumulative_sum` keeps a 1-D input's axis).

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.cumsum(ndgrad.tensor([[1.0, 2.0], [3.0, 4.0]]))
    tensor([ 1.,  3.,  6., 10.])
    """
    return _scan(F, a, axis, "cumulative_sum")


@defcomposite(kind=SCAN, domain=_ANYC, sample=_sample_scan)
def cumprod(F, a, axis=None):
    """Cumulative product along ``axis`` (of the flattened tensor by default).

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.cumprod(ndgrad.tensor([1.0, 2.0, 3.0]))
    tensor([1., 2., 6.])
    """
    return _scan(F, a, axis, "cumulative_prod")


@defcomposite(kind=SCAN, domain=_ANY, sample=_sample_scan)
def nancumsum(F, a, axis=None):
    """Cumulative sum treating NaNs as zero.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.nancumsum(ndgrad.tensor([1.0, float("nan"), 2.0]))
    tensor([1., 1., 3.])
    """
    return _scan(F, a, axis, "cumulative_sum", 0.0)


@defcomposite(kind=SCAN, domain=_ANY, sample=_sample_scan)
def nancumprod(F, a, axis=None):
    """Cumulative product treating NaNs as one.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.nancumprod(ndgrad.tensor([2.0, float("nan"), 3.0]))
    tensor([2., 2., 6.])
    """
    return _scan(F, a, axis, "cumulative_prod", 1.0)


def _nan_moment(F, a, axis, ddof, keepdims):
    keep, total, count = _non_nan(F, a, axis, True)
    dev = F.where(keep, a - total / count, 0.0)
    sq = F.real(dev * F.conj(dev)) if a.dtype.kind == "c" else dev * dev
    out = F.sum(sq, axis=axis, keepdims=True) / (F.real(count) - ddof)
    return out if keepdims else F.squeeze(out, axis=axis if axis is not None else
                                          tuple(range(len(a.shape))))


def _sample_nan_moment(d):
    shape = d.shape(min_dims=1, min_side=2)
    axis = d.choice([None, d.axis(len(shape), none=False)])
    return (d.array(shape),), {"axis": axis, "ddof": d.choice([0, 1]),
                               "keepdims": d.boolean()}


@defcomposite(kind=REDUCTION, domain=_ANYC, sample=_sample_nan_moment)
def nanvar(F, a, axis=None, *, ddof=0, keepdims=False):
    """Variance over ``axis`` of the elements that are not NaN, divided by ``count - ddof``.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.nanvar(ndgrad.tensor([1.0, float("nan"), 3.0]))
    tensor(1.)
    """
    return _nan_moment(F, a, axis, ddof, keepdims)


@defcomposite(kind=REDUCTION, domain=_ANYC, sample=_sample_nan_moment)
def nanstd(F, a, axis=None, *, ddof=0, keepdims=False):
    """Standard deviation over ``axis`` of the elements that are not NaN (computed, as
    :func:`std`, without under- or overflow at tiny or huge spreads, with a zero gradient
    where the variance is 0).

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.nanstd(ndgrad.tensor([1.0, float("nan"), 3.0]))
    tensor(1.)
    """
    # in units of a power of two near the largest magnitude (inverse_scale_along): the
    # variance of a spread of 1e-170 underflows to 0, whose square root's derivative is inf;
    # and 0 with a zero derivative where the variance is 0, as std (sqrt's inf times the
    # variance's zero derivative was nan)
    inv = inverse_scale_along(F, a, axis, ignore_nan=True)
    m = _nan_moment(F, a * inv, axis, ddof, True)
    zero = F.equal(m, 0)
    r = F.where(zero, 0.0, F.sqrt(F.where(zero, 1.0, m))) / inv
    return r if keepdims else F.squeeze(r, axis=axis if axis is not None else
                                        tuple(range(len(a.shape))))


# ------------------------------------------------------------------------- matrices
def _sample_min2(d):
    return (d.array(d.shape(min_dims=2, max_dims=3)),), {}


def _sample_min1(d):
    return (d.array(d.shape(min_dims=1, max_dims=3)),), {}


@defcomposite(kind=SHAPE, domain=_ANYC, sample=_sample_min2)
def fliplr(F, m):
    """``m`` with its columns (axis 1) in reverse order.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.fliplr(ndgrad.tensor([[1.0, 2.0], [3.0, 4.0]]))
    tensor([[2., 1.],
            [4., 3.]])
    """
    if len(m.shape) < 2:
        raise ValueError("fliplr: the input must be at least 2-D")
    return F.flip(m, axis=1)


@defcomposite(kind=SHAPE, domain=_ANYC, sample=_sample_min1)
def flipud(F, m):
    """``m`` with its rows (axis 0) in reverse order.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.flipud(ndgrad.tensor([1.0, 2.0, 3.0]))
    tensor([3., 2., 1.])
    """
    if len(m.shape) < 1:
        raise ValueError("flipud: the input must be at least 1-D")
    return F.flip(m, axis=0)


def _sample_diag(d):
    k = d.integers(-2, 2)
    if d.boolean():
        return (d.array((d.integers(1, 3),)),), {"k": k}
    return (d.array((d.integers(1, 4), d.integers(1, 4))),), {"k": k}


@defcomposite(kind=SHAPE, domain=_ANYC, sample=_sample_diag)
def diag(F, v, k=0):
    """NumPy's ``diag``: for a 1-D ``v``, the square matrix with ``v`` on diagonal ``k``;
    for a 2-D ``v``, its diagonal ``k``.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.diag(ndgrad.tensor([1.0, 2.0]), k=1)
    tensor([[0., 1., 0.],
            [0., 0., 2.],
            [0., 0., 0.]])
    """
    if len(v.shape) == 2:
        return F.diagonal(v, offset=k)
    if len(v.shape) != 1:
        raise ValueError(f"diag: input must be 1-D or 2-D, got {len(v.shape)}-D")
    n = v.shape[0] + abs(k)
    # row i of the result holds vpad[i] at column i + k (a 0/1 mask picks it out)
    pad = F.zeros((abs(k),), dtype=v.dtype, like=v)
    vpad = F.concat([v, pad] if k >= 0 else [pad, v], axis=0)
    return F.expand_dims(vpad, -1) * _eye(F, n, n, k, v)


# ------------------------------------------------------------------------- covariance
def _sample_cov(d):
    variables, observations = d.integers(1, 3), d.integers(2, 4)  # (N - ddof > 0)
    rowvar = d.boolean()
    shape = (variables, observations) if rowvar else (observations, variables)
    return (d.array(shape),), {"rowvar": rowvar, "ddof": d.choice([None, 0])}


def _variables(F, m, rowvar, dtype, name, who):
    """``m`` (``cov``'s ``m`` or ``y``) as a 2-D tensor of variables by observations, as
    NumPy reads it: at least 2-D, transposed for ``rowvar=False`` (``m`` when it is 2-D,
    ``y`` when it has more than one row), cast to ``dtype`` (ints and bools to float64)."""
    m = _arr(F, m)
    nd = len(m.shape)
    if nd > 2:
        raise ValueError(f"{who}: {name} has more than 2 dimensions (shape {tuple(m.shape)}); "
                         "pass one variable per row (or column, with rowvar=False)")
    if dtype is not None:
        m = F.astype(m, dtype)
    elif m.dtype.kind in "biu":
        m = F.astype(m, float64)
    x = F.reshape(m, (1, -1) if nd == 1 else (1, 1)) if nd < 2 else m
    transpose = nd == 2 if name == "m" else x.shape[0] != 1
    return F.matrix_transpose(x) if not rowvar and transpose else x


_NO_DOF = "cov: degrees of freedom <= 0 (N - ddof, or with weights their sum less ddof times " \
    "NumPy's correction): the result is inf or nan"


def _weights(F, w, n, name, who, like):
    """``cov``'s ``fweights`` or ``aweights``: 1-D, one per observation, not negative
    (``fweights`` integers), NumPy's checks and errors; values are read only where they
    can be (not inside ``vmap``, not where the backend reads no values)."""
    w = _arr(F, w, like=like)
    if len(w.shape) > 1:
        raise RuntimeError(f"{who}: cannot handle multidimensional {name} (shape "
                           f"{tuple(w.shape)}); pass one weight per observation, 1-D")
    if len(w.shape) == 0 or w.shape[0] != n:
        raise RuntimeError(f"{who}: incompatible numbers of samples and {name}: {n} "
                           f"observations, {name} of shape {tuple(w.shape)}")
    readable = not is_batched(w) and not (isinstance(w, Tensor) and not w.backend.reads_values)
    if readable and name == "fweights" and w.dtype.kind not in "biu" and \
            not bool(F.all(w == F.round(w))):
        raise TypeError(f"{who}: fweights must be integer (frequencies: how many times each "
                        "observation occurs); pass integral values")
    if readable and bool(F.any(w < 0)):
        raise ValueError(f"{who}: {name} cannot be negative")
    return F.astype(w, float64) if w.dtype.kind in "biu" else w


@defcomposite(kind=LINALG, domain=_ANYC, sample=_sample_cov)
def cov(F, m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None, *,
        dtype=None):
    """The covariance matrix of the variables in ``m`` (rows, or columns with
    ``rowvar=False``), with NumPy's signature.

    Parameters
    ----------
    m : Tensor
        1-D (one variable) or 2-D.
    y : Tensor, optional
        More variables, of ``m``'s form: stacked after ``m``'s (as NumPy's ``y``).
    rowvar : bool
        Each row is a variable (the default); else each column.
    bias, ddof : bool, int
        Normalized by ``N - 1`` by default, ``N`` with ``bias``, ``N - ddof`` with ``ddof``
        (with weights: NumPy's ``v1 - ddof v2 / v1``, ``v1`` the sum of the weights, ``v2``
        that of the weights times ``aweights``).
    fweights, aweights : Tensor, optional
        Integer frequency weights and observation weights, one per observation;
        differentiable in ``aweights`` (and in floating ``fweights``).
    dtype : dtype, optional
        The data are cast to it first (ints and bools are float64 otherwise).

    Complex data are conjugated as NumPy does; one variable gives a 0-d result.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.cov(ndgrad.tensor([[0.0, 1.0, 2.0], [2.0, 1.0, 0.0]]))
    tensor([[ 1., -1.],
            [-1.,  1.]])
    >>> ndgrad.cov(ndgrad.tensor([0.0, 1.0, 2.0]), ndgrad.tensor([2.0, 1.0, 0.0]),
    ...            aweights=ndgrad.tensor([1.0, 2.0, 1.0]))
    tensor([[ 0.8, -0.8],
            [-0.8,  0.8]])
    """
    x = _variables(F, m, rowvar, dtype, "m", "cov")
    if y is not None:
        x = F.concat([x, _variables(F, y, rowvar, dtype, "y", "cov")], axis=0)
    if ddof is not None and ddof != int(ddof):
        raise ValueError(f"cov: ddof must be integer, got {ddof!r}")
    if ddof is None:
        ddof = 0 if bias else 1
    n = x.shape[1]
    w = a = None
    if fweights is not None:
        w = _weights(F, fweights, n, "fweights", "cov", x)
    if aweights is not None:
        a = _weights(F, aweights, n, "aweights", "cov", x)
        w = a if w is None else w * a
    if w is None:
        fact = n - ddof
        if fact <= 0:
            warnings.warn(_NO_DOF, RuntimeWarning, stacklevel=3)
        xc = x - F.mean(x, axis=1, keepdims=True)
        c = F.matmul(xc, F.matrix_transpose(F.conj(xc)))
        c = c / fact if fact > 0 else c * math.inf  # (NumPy's c * (1 / 0): inf or nan)
    else:
        v1 = F.sum(w)
        xc = x - F.sum(x * w, axis=1, keepdims=True) / v1
        fact = v1 if ddof == 0 else v1 - ddof if a is None else \
            v1 - ddof * (F.sum(w * a) / v1)
        positive = fact > 0
        if not is_batched(positive) and \
                not (isinstance(fact, Tensor) and not fact.backend.reads_values) \
                and not bool(positive):
            warnings.warn(_NO_DOF, RuntimeWarning, stacklevel=3)
        # (NumPy's c * (1 / 0) where not positive: inf or nan, also in the imaginary parts)
        c = F.matmul(xc, F.matrix_transpose(F.conj(xc * w))) * (1.0 / F.where(positive, fact,
                                                                                0.0))
    return F.squeeze(c) if 1 in c.shape else c  # (NumPy squeezes: one variable gives 0-d)


def _sample_corrcoef(d):
    rowvar = d.boolean()
    shape = (d.integers(2, 3), d.integers(3, 5))
    return (d.array(shape if rowvar else shape[::-1]),), {"rowvar": rowvar}


@defcomposite(kind=LINALG, domain=Domain((-2.0, 2.0)), sample=_sample_corrcoef)
def corrcoef(F, x, y=None, rowvar=True, *, dtype=None):
    """Pearson correlation coefficients: :func:`cov` scaled by the standard deviations, with
    NumPy's signature (``y``: more variables, stacked after ``x``'s; ``dtype``: the data are
    cast to it first).

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.corrcoef(ndgrad.tensor([[0.0, 1.0, 2.0], [2.0, 1.0, 0.0]]))
    tensor([[ 1., -1.],
            [-1.,  1.]])
    >>> ndgrad.corrcoef(ndgrad.tensor([0.0, 1.0, 3.0]), ndgrad.tensor([1.0, 2.0, 2.0]))
    tensor([[1.        , 0.75592895],
            [0.75592895, 1.        ]])
    """
    v = _variables(F, x, rowvar, dtype, "m", "corrcoef")
    if y is not None:
        v = F.concat([v, _variables(F, y, rowvar, dtype, "y", "corrcoef")], axis=0)
    # corrcoef(x) is unchanged when a variable is scaled: each in units of the power of two
    # near its largest modulus (exact, a constant for every derivative: Note [Linear algebra
    # at extreme scales] in dense_linalg.py). cov's squares overflowed at 2^1020 and
    # underflowed at 2^-1020 (the value nan), and its second derivatives, through
    # cov^-3/2 of its standard deviations, were nan or wrong at 2^+-500
    c = F.cov(v * inverse_scale_along(F, v, 1))
    if len(c.shape) == 0:
        return c / c
    d = F.sqrt(F.real(F.diagonal(c)))
    return c / F.expand_dims(d, -1) / F.expand_dims(d, 0)


# ------------------------------------------------------------------------- polynomials
def _sample_polyval(d):
    return (d.array((d.integers(1, 4),)), d.array(d.shape(max_dims=2))), {}


@defcomposite(kind=LINALG, nin=2, domain=_ANYC, sample=_sample_polyval)
def polyval(F, p, x):
    """The polynomial with coefficients ``p`` (highest degree first) at ``x``, by Horner's
    rule; differentiable in both.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.polyval(ndgrad.tensor([1.0, 0.0, -1.0]), ndgrad.tensor([2.0, 3.0]))  # x^2 - 1
    tensor([3., 8.])
    """
    if len(p.shape) != 1:
        raise ValueError("polyval: the coefficients must be 1-D")
    y = p[0] + x * 0
    for k in range(1, p.shape[0]):
        y = y * x + p[k]
    return y


def _sample_convolve(d):
    return (d.array((d.integers(1, 5),)), d.array((d.integers(1, 4),))), {
        "mode": d.choice(["full", "same", "valid"])}


@defcomposite(kind=LINALG, nin=2, domain=_ANYC, sample=_sample_convolve)
def convolve(F, a, v, mode="full"):
    """Discrete linear convolution of two 1-D tensors (NumPy's modes "full", "same",
    "valid"); differentiable in both.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.convolve(ndgrad.tensor([1.0, 2.0, 3.0]), ndgrad.tensor([0.0, 1.0, 0.5]))
    tensor([0. , 1. , 2.5, 4. , 1.5])
    """
    if len(a.shape) != 1 or len(v.shape) != 1:
        raise ValueError("convolve: both inputs must be 1-D")
    if mode not in ("full", "same", "valid"):
        raise ValueError(f"convolve: mode must be 'full', 'same' or 'valid', got {mode!r}")
    if a.shape[0] < v.shape[0]:
        a, v = v, a
    n, m = a.shape[0], v.shape[0]
    out = None
    for j in range(m):  # v[j] times a shifted by j
        parts = [a]
        if j:
            parts.insert(0, F.zeros((j,), dtype=a.dtype, like=a))
        if m - 1 - j:
            parts.append(F.zeros((m - 1 - j,), dtype=a.dtype, like=a))
        term = v[j] * (F.concat(parts, axis=0) if len(parts) > 1 else a)
        out = term if out is None else out + term
    if mode == "full":
        return out
    if mode == "same":
        start = (m - 1) // 2
        return out[start:start + n]
    return out[m - 1:n]
