"""NumPy's differences, sums along an axis and their kin, written from primitives: ``diff``,
``ediff1d``, ``gradient``, ``trapezoid``, ``cumsum``, ``cumprod``, ``nancumsum``,
``nancumprod``, ``interp`` and ``unwrap``.
"""

from __future__ import annotations

from ..core.ops.indexing import _axis
from ..core.ops.registry import (Domain, INDEXING, REDUCTION, SCAN, SHAPE, VARIADIC, defcomposite,
                                 sample_numpy)
from ..core.ops.special_shared import _stop
from ._arraylike import _ANY, _ANYC, _RANK, _along, _arr, _count_le, _floating, _ndim


def _diff_sample(d):
    shape = d.shape(min_dims=1, max_dims=3, min_side=2)
    axis = d.integers(-len(shape), len(shape) - 1)
    kwargs = {"axis": axis, "n": d.integers(0, 2)}
    if d.boolean():
        side = list(shape)
        side[axis] = 1
        kwargs[d.choice(["prepend", "append"])] = d.array(tuple(side))
    return (d.array(shape),), kwargs


@defcomposite(kind=SHAPE, domain=Domain((-2.0, 2.0), complex=True), sample=_diff_sample)
def diff(F, a, *, axis=-1, n=1, prepend=None, append=None):
    """The ``n``-th forward difference along ``axis``: ``a[1:] - a[:-1]``, ``n`` times
    (NumPy's ``diff``; the array API's signature). ``prepend``/``append`` (tensors that
    match ``a`` off ``axis``, or numbers) are joined to ``a`` first; all are differentiable.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.diff(ndgrad.tensor([1.0, 4.0, 9.0, 16.0]))
    tensor([3., 5., 7.])
    >>> ndgrad.diff(ndgrad.tensor([1.0, 4.0, 9.0, 16.0]), n=2)
    tensor([2., 2.])
    """
    if n < 0:
        raise ValueError(f"diff: order n must be non-negative, got {n}")
    ndim = len(a.shape)
    if ndim == 0:
        raise ValueError("diff requires input that is at least one dimensional")
    axis = axis + ndim if axis < 0 else axis
    if not 0 <= axis < ndim:
        raise ValueError(f"diff: axis {axis} is out of bounds for a {ndim}-D tensor")
    if n == 0:
        return a  # (as NumPy: prepend and append are not joined either)
    side = list(a.shape)
    side[axis] = 1

    def joined(v):  # a number or 0-d tensor spreads over a's shape off the axis
        if hasattr(v, "shape") and len(v.shape) > 0:
            return v
        if hasattr(v, "shape"):
            return F.broadcast_to(v, tuple(side))
        return F.zeros(tuple(side), dtype=a.dtype, like=a) + v

    parts = [joined(v) if v is not a else v for v in (prepend, a, append) if v is not None]
    if len(parts) > 1:
        a = F.concat(parts, axis=axis)
    for _ in range(n):
        length = a.shape[axis]
        hi = (slice(None),) * axis + (slice(1, length),)
        lo = (slice(None),) * axis + (slice(0, length - 1),)
        a = a[hi] - a[lo]
    return a


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


# -------------------------------------------------------------------------------- signals
def _sample_ediff1d(d):
    x = d.array(d.shape(max_dims=2))
    kw = {}
    for key in ("to_begin", "to_end"):
        kind = d.choice([None, "number", "array"])
        if kind == "number":
            kw[key] = 0.5
        elif kind == "array":
            kw[key] = d.array(d.shape(max_dims=2, max_side=2))
    return (x,), kw


def _cast_same_kind(F, v, dtype, who, what):
    v = _arr(F, v)
    if _RANK.get(v.dtype.kind, 9) > _RANK.get(dtype.kind, 9):
        raise TypeError(f"{who}: dtype of `{what}` must be compatible with input `ary` under "
                        f"the `same_kind` rule (got {v.dtype} for {dtype})")
    v = F.reshape(v, (-1,))
    return v if v.dtype == dtype else F.astype(v, dtype)


@defcomposite(kind=SCAN, domain=_ANYC, sample=_sample_ediff1d, method=False)
def ediff1d(F, ary, to_end=None, to_begin=None):
    """The differences of consecutive elements of ``ary`` flattened, with ``to_begin`` and
    ``to_end`` (flattened; cast to ``ary``'s dtype) before and after them.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.ediff1d(ndgrad.tensor([1.0, 2.0, 4.0, 7.0]), to_begin=-1.0, to_end=[8.0, 9.0])
    tensor([-1.,  1.,  2.,  3.,  8.,  9.])
    """
    ary = F.reshape(_arr(F, ary), (-1,))
    parts = [ary[1:] - ary[:-1]]
    if to_begin is not None:
        parts.insert(0, _cast_same_kind(F, to_begin, ary.dtype, "ediff1d", "to_begin"))
    if to_end is not None:
        parts.append(_cast_same_kind(F, to_end, ary.dtype, "ediff1d", "to_end"))
    return F.concat(parts, axis=0) if len(parts) > 1 else parts[0]


def _sample_gradient(d):
    edge_order = d.choice([1, 2])
    shape = d.shape(min_dims=1, max_dims=2, min_side=edge_order + 1)
    f = d.array(shape)
    axis = d.choice([None, d.axis(len(shape), none=False)] +
                    ([tuple(range(len(shape)))[::-1]] if len(shape) > 1 else []))
    axes = tuple(range(len(shape))) if axis is None else \
        (axis if isinstance(axis, tuple) else (axis,))
    spacing = d.choice(["none", "scalar", "each"])
    if spacing == "none":
        varargs = ()
    elif spacing == "scalar":
        varargs = (d.choice([0.5, 2.0]),)
    else:  # per axis: a number or increasing coordinates (steps at least 0.3 apart)
        varargs = tuple(d.choice([0.7, None]) for _ in axes)
        varargs = tuple(v if v is not None else sample_numpy().cumsum(
            d.array((shape[ax],), 0.3, 1.0, dtype="float64")) for v, ax in zip(varargs, axes))
    kw = {"edge_order": edge_order}
    if axis is not None:
        kw["axis"] = axis
    return (f,) + varargs, kw


@defcomposite(kind=SCAN, nin=VARIADIC, domain=_ANYC, sample=_sample_gradient, method=False)
def gradient(F, f, *varargs, axis=None, edge_order=1):
    """The derivative of sampled ``f`` along each of ``axis`` (all by default), by second
    order central differences inside and one-sided differences of order ``edge_order``
    (1 or 2) at the ends, as NumPy's ``gradient``.

    Parameters
    ----------
    f : Tensor
    *varargs : numbers or 1-D tensors
        The spacing: none (1), one number for every axis, or one per axis, each a number
        or the coordinates along that axis (differentiable; the non-uniform formulas).
    axis : int or tuple of ints, optional
    edge_order : {1, 2}

    Returns
    -------
    Tensor or tuple of Tensors
        One derivative per axis; a tuple when there are several, as NumPy's.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.gradient(ndgrad.tensor([1.0, 2.0, 4.0, 7.0, 11.0]))
    tensor([1. , 1.5, 2.5, 3.5, 4. ])
    >>> ndgrad.gradient(ndgrad.tensor([1.0, 4.0, 9.0, 16.0]), ndgrad.tensor([1.0, 2.0, 3.0, 5.0]))
    tensor([3. , 4. , 4.5, 3.5])
    """
    f = _arr(F, f)
    nd = len(f.shape)
    if axis is None:
        axes = tuple(range(nd))
    else:
        axes = tuple(_axis("gradient", ax, nd) for ax in
                     (axis if isinstance(axis, (tuple, list)) else (axis,)))
        if len(set(axes)) != len(axes):
            raise ValueError(f"gradient: repeated axis in {axis!r}")
    if edge_order not in (1, 2):
        raise ValueError(f"gradient: edge_order must be 1 or 2, got {edge_order!r}")
    n = len(varargs)
    if n == 0:
        dx = [1.0] * len(axes)
    elif n == 1 and _ndim(varargs[0]) == 0:
        dx = list(varargs) * len(axes)
    elif n == len(axes):
        dx = []
        for ax, dist in zip(axes, varargs):
            if _ndim(dist) == 0:
                dx.append(dist)
                continue
            dist = _arr(F, dist)
            if len(dist.shape) != 1:
                raise ValueError("gradient: distances must be either scalars or 1d")
            if dist.shape[0] != f.shape[ax]:
                raise ValueError("gradient: when 1d, distances must match the length of the "
                                 "corresponding dimension")
            dist = _floating(F, dist)
            dx.append(dist[1:] - dist[:-1])
    else:
        raise TypeError(f"gradient: invalid number of arguments: {n} spacings for "
                        f"{len(axes)} axes (give none, one, or one per axis)")
    f = _floating(F, f)
    out = [_gradient_along(F, f, ax, h, edge_order) for ax, h in zip(axes, dx)]
    return out[0] if len(axes) == 1 else tuple(out)


def _gradient_along(F, f, ax, h, edge_order):
    if f.shape[ax] < edge_order + 1:
        raise ValueError("gradient: shape of array too small to calculate a numerical "
                         "gradient, at least (edge_order + 1) elements are required.")
    nd = len(f.shape)

    def at(i):
        return f[_along(ax, slice(i, i + 1) if i != -1 else slice(-1, None))]

    uniform = _ndim(h) == 0
    if uniform:
        inner = (f[_along(ax, slice(2, None))] - f[_along(ax, slice(None, -2))]) / (2.0 * h)
    else:
        # weights of the second-order formula on non-uniform steps h1 (before), h2 (after)
        h1, h2 = h[:-1], h[1:]
        shape = tuple(-1 if k == ax else 1 for k in range(nd))
        a = F.reshape(-h2 / (h1 * (h1 + h2)), shape)
        b = F.reshape((h2 - h1) / (h1 * h2), shape)
        c = F.reshape(h1 / (h2 * (h1 + h2)), shape)
        inner = a * f[_along(ax, slice(None, -2))] + b * f[_along(ax, slice(1, -1))] + \
            c * f[_along(ax, slice(2, None))]
    if edge_order == 1:
        first = (at(1) - at(0)) / (h if uniform else h[0])
        last = (at(-1) - at(-2)) / (h if uniform else h[-1])
    else:
        if uniform:
            a, b, c = -1.5 / h, 2.0 / h, -0.5 / h
        else:
            h1, h2 = h[0], h[1]
            a = -(2.0 * h1 + h2) / (h1 * (h1 + h2))
            b = (h1 + h2) / (h1 * h2)
            c = -h1 / (h2 * (h1 + h2))
        first = a * at(0) + b * at(1) + c * at(2)
        if uniform:
            a, b, c = 0.5 / h, -2.0 / h, 1.5 / h
        else:
            h1, h2 = h[-2], h[-1]
            a = h2 / (h1 * (h1 + h2))
            b = -(h2 + h1) / (h1 * h2)
            c = (2.0 * h2 + h1) / (h2 * (h1 + h2))
        last = a * at(-3) + b * at(-2) + c * at(-1)
    return F.concat([first, inner, last], axis=ax)


def _away(np, x, points, margin):
    """``x`` moved by ``2 * margin`` wherever it is within ``margin`` of one of ``points``."""
    points = np.asarray(points, dtype=np.float64)
    if points.size == 0:
        return x
    dist = np.min(np.abs(np.asarray(x)[..., None] - points), axis=-1)
    return np.where(dist < margin, x + 2 * margin, x)


def _sample_interp(d):
    np = sample_numpy()
    n = d.integers(2, 4)  # (one point: interp is constant in x and xp, tests/test_signal.py)
    period = d.choice([None, None, 2.5])
    if period is None:
        xp = np.cumsum(d.array((n,), 0.3, 1.2, dtype="float64")) - 1.5
        knots = xp
    else:  # distinct modulo the period, wrapped a multiple of it away
        base = np.sort(d.array((n,), 0.1, 2.4, dtype="float64"))
        base = base + 0.25 * np.arange(n) * (np.diff(base, prepend=base[0]) < 0.25)
        xp = base + period * d.int_array((n,), -1, 1)
        knots = np.concatenate([base % period, [0.0, period]])
    x = d.array(d.shape(max_dims=2, max_side=3), -2.5, 2.5, dtype="float64")
    if period is None:
        x = _away(np, x, knots, 0.02)
    else:  # away from the knots modulo the period
        x = np.where(np.min(np.abs(((x % period)[..., None]) - knots), axis=-1) < 0.02,
                     x + 0.05, x)
    fp = d.array((n,))
    kw = {} if period is None else {"period": period}
    if period is None and d.boolean():
        kw["left"], kw["right"] = -3.0, 3.0
    return (x, xp, fp), kw


@defcomposite(kind=INDEXING, nin=3, domain=_ANYC, sample=_sample_interp, method=False)
def interp(F, x, xp, fp, left=None, right=None, period=None):
    """Piecewise linear interpolation of the points ``(xp, fp)`` at ``x``, as NumPy's
    ``interp``: ``left`` (``fp[0]`` by default) below ``xp[0]``, ``right`` (``fp[-1]``) above
    ``xp[-1]``; with ``period``, ``x`` and ``xp`` are taken modulo it.

    ``xp`` must be increasing (unchecked, as in NumPy); ``fp`` may be complex.

    Notes
    -----
    Differentiable in ``x``, ``fp`` and ``xp`` (the formula ``fp[j] + s (x - xp[j])`` with
    ``s`` the slope of segment ``j``). The derivative in ``x`` is that slope; at a knot
    ``xp[j]`` it is the slope of the segment to its right (the right derivative), at
    ``xp[-1]`` and outside ``[xp[0], xp[-1]]`` zero (the constant ``right`` / ``left``
    continues there). PyTorch has no ``interp``.

    Examples
    --------
    >>> import ndgrad
    >>> x = ndgrad.tensor([0.5, 1.0, 2.5], requires_grad=True)
    >>> y = ndgrad.interp(x, ndgrad.tensor([0.0, 1.0, 2.0]), ndgrad.tensor([0.0, 10.0, 30.0]))
    >>> y
    tensor([ 5., 10., 30.], grad_fn=<WhereBackward0>)
    >>> y.sum().backward()
    >>> x.grad
    tensor([10., 20.,  0.])
    """
    x, xp, fp = _arr(F, x), _arr(F, xp), _arr(F, fp)
    if x.dtype.kind == "c" or xp.dtype.kind == "c":
        raise TypeError("interp: x and xp must be real (fp may be complex)")
    if len(xp.shape) != 1 or len(fp.shape) != 1:
        raise ValueError("interp: data points xp and fp must be 1-D sequences")
    if xp.shape[0] != fp.shape[0]:
        raise ValueError(f"interp: fp and xp are not of the same length ({fp.shape[0]} and "
                         f"{xp.shape[0]})")
    if xp.shape[0] == 0:
        raise ValueError("interp: array of sample points is empty")
    if period is not None:
        if period == 0:
            raise ValueError("interp: period must be a non-zero value")
        period = abs(period)
        left = right = None
        x, xp = F.remainder(_floating(F, x), period), F.remainder(_floating(F, xp), period)
        order = F.argsort(_stop(xp))
        xp, fp = F.take(xp, order), F.take(fp, order)
        xp = F.concat([xp[-1:] - period, xp, xp[:1] + period], axis=0)
        fp = F.concat([fp[-1:], fp, fp[:1]], axis=0)
    n = xp.shape[0]
    lo = fp[0] if left is None else left
    hi = fp[-1] if right is None else right
    if n == 1:
        y = F.where(F.less(x, xp[0]), lo, F.where(F.greater(x, xp[0]), hi, fp[0]))
        return y + F.zeros(tuple(x.shape), dtype=y.dtype, like=y)
    # segment j: xp[j] <= x < xp[j + 1], clipped to the first and last
    j = F.clip(_count_le(F, xp, x) - 1, 0, n - 2)
    xl, xr = F.take(xp, j), F.take(xp, j + 1)
    fl, fr = F.take(fp, j), F.take(fp, j + 1)
    y = (fr - fl) / (xr - xl) * (x - xl) + fl
    y = F.where(F.equal(x, xp[-1]), fp[-1], y)
    return F.where(F.less(x, xp[0]), lo, F.where(F.greater(x, xp[-1]), hi, y))


def _sample_unwrap(d):
    np = sample_numpy()
    shape = d.shape(min_dims=1, max_dims=2, max_side=4)
    axis = d.axis(len(shape), none=False)
    period = d.choice([None, 4.0])
    discont = d.choice([None, None, 1.0, 5.0])
    per = 2 * np.pi if period is None else period
    half = per / 2
    steps = list(shape)
    steps[axis] = max(shape[axis] - 1, 0)
    dd = d.array(tuple(steps), -3 * per, 3 * per, dtype="float64")
    kinks = [half + k * per for k in range(-4, 4)]
    if discont is not None:
        kinks += [discont, -discont]
    dd = _away(np, dd, kinks, 0.05)
    p0 = d.array(tuple(1 if k == axis % len(shape) else s for k, s in enumerate(shape)),
                 -3.0, 3.0,
                 dtype="float64")
    p = np.concatenate([p0, p0 + np.cumsum(dd, axis=axis)], axis=axis)
    kw = {"axis": axis}
    if period is not None:
        kw["period"] = period
    if discont is not None:
        kw["discont"] = discont
    return (p,), kw


@defcomposite(kind=SCAN, domain=_ANY, sample=_sample_unwrap, method=False)
def unwrap(F, p, discont=None, axis=-1, *, period=6.283185307179586):
    """``p`` with jumps along ``axis`` larger than ``discont`` (``period / 2`` by default)
    replaced by their complement modulo ``period``, as NumPy's ``unwrap``.

    The correction is a multiple of ``period`` that is constant between jumps, so the
    derivative passes through unchanged (identity): ``unwrap(p) = p + constant``.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.unwrap(ndgrad.tensor([0.0, 3.0, 6.0, 9.0]), period=4.0)
    tensor([ 0., -1., -2., -3.])
    """
    p = _arr(F, p)
    if p.dtype.kind == "c":
        raise TypeError("unwrap: p must be real")
    nd = len(p.shape)
    ax = _axis("unwrap", axis, nd)
    dd = F.diff(_stop(p), axis=ax)
    if discont is None:
        discont = period / 2
    if p.dtype.kind in "biu" and isinstance(period, int):
        high, rem = divmod(period, 2)
        ambiguous = rem == 0
    else:
        high, ambiguous = period / 2, True
    low = -high
    ddmod = F.remainder(dd - low, period) + low
    if ambiguous:  # a jump of exactly half a period keeps its sign
        ddmod = F.where(F.logical_and(F.equal(ddmod, low), F.greater(dd, 0)), high, ddmod)
    correct = F.where(F.less(F.abs(dd), discont), 0, ddmod - dd)
    start = F.zeros(tuple(1 if k == ax else s for k, s in enumerate(p.shape)),
                    dtype=correct.dtype, like=correct)
    return p + F.concat([start, F.cumulative_sum(correct, axis=ax)], axis=ax)
