"""NumPy's statistics, written from primitives: order statistics (``quantile``,
``percentile``, ``median`` and their NaN-ignoring forms), the NaN-ignoring reductions
(``nansum``, ``nanmean``, ``nanmax``, ``nanmin``, ``nanprod``, ``nanvar``, ``nanstd``),
``ptp``, ``average``, ``cov``, ``corrcoef``, and the histograms (``histogram``,
``histogram2d``, ``histogramdd``, ``bincount``). Registered (``defcomposite``), so the property
suites check them like primitives; NumPy code calling them on Tensors runs these.

Order statistics differentiate through ``sort``: the gradient of a quantile goes to the
(at most two) elements it interpolates between, split by the interpolation weights, as in
PyTorch's ``quantile``; at ties, to the element the stable sort puts first. A histogram's
counts are constant in the samples; its weighted sums are differentiable in the weights.
"""

from __future__ import annotations

import builtins
import math
import operator
import warnings

from ..core.backend import backend_of, float64, int64
from ..core.creation import asarray, constant_data
from ..core.dispatch import TENSOR_F
from ..core.ops.batching import is_batched
from ..core.ops.reductions import _sample_prod, inverse_scale_along
from ..core.ops.registry import Domain, INDEXING, LINALG, REDUCTION, defcomposite
from ..core.ops.special_shared import _stop
from ..core.tensor import Tensor
from ._arraylike import _ANY, _ANYC, _arr, _count_le, _ndim, _no_out, _real_weights


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
    # at extreme scales] in solves.py). cov's squares overflowed at 2^1020 and
    # underflowed at 2^-1020 (the value nan), and its second derivatives, through
    # cov^-3/2 of its standard deviations, were nan or wrong at 2^+-500
    c = F.cov(v * inverse_scale_along(F, v, 1))
    if len(c.shape) == 0:
        return c / c
    d = F.sqrt(F.real(F.diagonal(c)))
    return c / F.expand_dims(d, -1) / F.expand_dims(d, 0)


# ------------------------------------------------------------------------ NaN-ignoring
def _nan_quantiles(F, a, qs, scalar, axis, keepdims, method, who):
    """Linear-interpolation quantiles of the non-NaN elements over ``axis``, as PyTorch's
    ``nanquantile``: NaNs sort last, and each slice interpolates among its own count of
    values (NaN for a slice of NaNs only, with zero gradients)."""
    a2, keep = _quantile_input(F, a, axis, method, who)
    s = F.sort(a2, axis=-1)  # (stable: tied elements keep their index order)
    _, _, count = _non_nan(F, a2, -1, True)
    last = F.maximum(count - 1.0, 0.0)
    out = []
    for q in qs:
        pos = last * q
        lo, hi = F.floor(pos), F.ceil(pos)
        w = pos - lo
        v_lo = F.take_along_axis(s, F.astype(lo, "int64"), axis=-1)
        v_hi = F.take_along_axis(s, F.astype(hi, "int64"), axis=-1)
        v = F.where(count > 0, v_lo + (v_hi - v_lo) * w, math.nan)[..., 0]
        if keepdims:
            v = F.reshape(v, keep)
        out.append(v)
    return out[0] if scalar else F.stack(out, axis=0)


def _quantile_args(who, out, weights, interpolation):
    _no_out(who, out)
    if weights is not None:
        raise TypeError(f"{who}: weights= is not supported (NumPy allows it only with "
                        "method='inverted_cdf'); leave it None")
    if interpolation is not None:
        raise TypeError(f"{who}: interpolation= is NumPy's deprecated name of method=; use "
                        "method='linear' (the default)")


# (Note [Signatures are NumPy's] in tests/test_signatures.py)
_INTERPOLATION = {"signature": (
    "``interpolation``: NumPy's former name of method= (gone from NumPy 2.4), accepted only to "
    "say so in a TypeError")}


@defcomposite(kind=REDUCTION, domain=_ANY, method=False, sample=_sample_quantile,
              notes=_INTERPOLATION)
def nanquantile(F, a, q, axis=None, out=None, overwrite_input=False, method="linear",
                keepdims=False, *, weights=None, interpolation=None):
    """The ``q``-th quantiles (``q`` in [0, 1], a number or a 1-D sequence) of the non-NaN
    elements of ``a`` over ``axis``, linearly interpolated (NumPy's default method); NaN
    where a slice is all NaN.

    The gradient goes to the (at most two) elements interpolated between, split by the
    weights, as PyTorch's ``nanquantile``; tied elements keep their index order (a stable
    sort); it is zero at the NaNs. ``overwrite_input`` is accepted and has no effect.

    Examples
    --------
    >>> import ndgrad
    >>> x = ndgrad.tensor([1.0, float("nan"), 4.0, 2.0], requires_grad=True)
    >>> y = ndgrad.nanquantile(x, 0.25)
    >>> y
    tensor(1.5, grad_fn=<GetitemBackward0>)
    >>> y.backward()
    >>> x.grad
    tensor([0.5, 0. , 0. , 0.5])
    """
    _quantile_args("nanquantile", out, weights, interpolation)
    qs, scalar = _qs(q, "nanquantile")
    return _nan_quantiles(F, a, qs, scalar, axis, keepdims, method, "nanquantile")


@defcomposite(kind=REDUCTION, domain=_ANY, method=False, sample=_sample_percentile,
              notes=_INTERPOLATION)
def nanpercentile(F, a, q, axis=None, out=None, overwrite_input=False, method="linear",
                  keepdims=False, *, weights=None, interpolation=None):
    """The ``q``-th percentiles (``q`` in [0, 100]) of the non-NaN elements of ``a``:
    :func:`nanquantile` of ``q / 100``.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.nanpercentile(ndgrad.tensor([1.0, float("nan"), 3.0]), 50)
    tensor(2.)
    """
    _quantile_args("nanpercentile", out, weights, interpolation)
    values = q.tolist() if hasattr(q, "tolist") else q
    scaled = [v / 100 for v in values] if isinstance(values, (list, tuple)) else values / 100
    qs, scalar = _qs(scaled, "nanpercentile")
    return _nan_quantiles(F, a, qs, scalar, axis, keepdims, method, "nanpercentile")


@defcomposite(kind=REDUCTION, domain=_ANY, method=False)
def nanmedian(F, a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """The median of the non-NaN elements of ``a`` over ``axis`` (the mean of the two middle
    values for an even count, as NumPy's; PyTorch's ``nanmedian`` takes the lower one).

    The gradient goes to the middle element(s), zero at the NaNs.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.nanmedian(ndgrad.tensor([[3.0, float("nan"), 1.0], [2.0, 5.0, 4.0]]), axis=1)
    tensor([2., 4.])
    """
    _no_out("nanmedian", out)
    return _nan_quantiles(F, a, [0.5], True, axis, keepdims, "linear", "nanmedian")


def _sample_nanprod(d):
    # (values near the unit circle: products stay moderate; where= masks are tested in
    # tests/test_numeric.py, a NumPy mask being a CPU array)
    (x,), kwargs = _sample_prod(d)
    if d.boolean():
        kwargs["initial"] = d.choice([2.0, -0.5])
    return (x,), kwargs


@defcomposite(kind=REDUCTION, domain=_ANYC, method=False, sample=_sample_nanprod)
def nanprod(F, a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=True):
    """Product over ``axis`` treating NaNs as one (their gradient is zero); ``initial``
    multiplies the result, ``where`` (a boolean mask broadcast to ``a``) selects the
    elements included.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.nanprod(ndgrad.tensor([2.0, float("nan"), 3.0]))
    tensor(6.)
    """
    _no_out("nanprod", out)
    if a.dtype.kind not in "fc":  # (no NaN: NumPy's prod, in its integer dtype)
        a = F.where(where, a, 1) if where is not True else a
        p = F.prod(a, axis=axis, keepdims=keepdims, dtype=dtype)
        return p if initial is None else p * int(initial)  # (initial cast to the dtype)
    skip = F.isnan(a)
    if where is not True:
        skip = F.logical_or(skip, F.logical_not(where))
    p = F.prod(F.where(skip, 1.0, a), axis=axis, keepdims=keepdims, dtype=dtype)
    return p if initial is None else p * initial


# ------------------------------------------------------------------------------ histograms
def _range_pair(rng, who):
    """NumPy's outer edges from a given ``range``: floats, widened by 0.5 where equal."""
    first, last = (float(v) for v in rng)
    if first > last:
        raise ValueError(f"{who}: max must be larger than min in range parameter.")
    if not (math.isfinite(first) and math.isfinite(last)):
        raise ValueError(f"{who}: supplied range of [{first}, {last}] is not finite")
    if first == last:
        first, last = first - 0.5, last + 0.5
    return first, last


def _data_range(F, a, who):
    """NumPy's outer edges from the data: its minimum and maximum (constants), widened by 0.5
    where equal."""
    if math.prod(a.shape) == 0:
        return 0.0, 1.0
    lo, hi = F.min(_stop(a)), F.max(_stop(a))
    if not is_batched(lo) and not bool(F.logical_and(F.isfinite(lo), F.isfinite(hi))):
        raise ValueError(f"{who}: autodetected range of [{float(lo)}, {float(hi)}] is not "
                         "finite")
    same = F.equal(lo, hi)
    return F.where(same, lo - 0.5, lo), F.where(same, hi + 0.5, hi)


def _linspace(F, lo, hi, num, dtype, like):
    """NumPy's ``linspace(lo, hi, num)`` (``arange * step + lo``, the last value ``hi``);
    ``lo`` and ``hi`` numbers or 0-d constants."""
    step = (hi - lo) / (num - 1)
    y = F.astype(F.arange(num, like=like), dtype) * step + lo
    return F.concat([y[:-1], F.zeros((1,), dtype=dtype, like=like) + hi], axis=0)


def _edges_given(F, b, who, what):
    e = _stop(_arr(F, b))
    if len(e.shape) != 1:
        raise ValueError(f"{who}: `{what}` must be a scalar or 1d array")
    if e.shape[0] < 2:
        raise ValueError(f"{who}: `{what}` must hold at least two edges, got {e.shape[0]}")
    if not is_batched(e) and bool(F.any(F.greater(e[:-1], e[1:]))):
        raise ValueError(f"{who}: `{what}` must increase monotonically, when an array")
    return e


def _bin_count_of(b, who, what):
    try:
        n = operator.index(b)
    except TypeError:
        raise TypeError(f"{who}: `{what}` must be an integer, a string, or an array") from None
    if n < 1:
        raise ValueError(f"{who}: `{what}` must be positive, when an integer")
    return n


def _histogram_edges(F, a, bins, rng, weights, who):
    if isinstance(bins, str):
        if weights is not None:
            raise TypeError(f"{who}: automated estimation of the number of bins is not "
                            "supported for weighted data")
        if is_batched(a):
            raise ValueError(f"{who}: bins={bins!r} estimates the edges from the values of "
                             "a, which differ per batch element inside vmap; pass a number of "
                             "bins with range=, or the edges")
        data, B = constant_data(a, who)
        edges = B.histogram_bin_edges(data, bins=bins, range=rng)
        return asarray(edges) if F is TENSOR_F else edges
    if _ndim(bins) == 0:
        n = _bin_count_of(bins, who, "bins")
        lo, hi = _range_pair(rng, who) if rng is not None else _data_range(F, a, who)
        dtype = a.dtype if a.dtype.kind == "f" else float64
        return _linspace(F, lo, hi, n + 1, dtype, a)
    return _edges_given(F, bins, who, "bins")


def _bin_index(F, edges, v):
    """The bin of each value of 1-D ``v``: ``i`` with ``edges[i] <= v < edges[i + 1]`` (the
    last bin closed), and ``nbins`` (one past the last) outside them or for NaN."""
    nb = edges.shape[0] - 1
    idx = F.where(F.equal(_stop(v), edges[-1]), nb - 1, _count_le(F, edges, v) - 1)
    return F.where(F.logical_or(F.less(idx, 0), F.greater(idx, nb - 1)), nb, idx)


def _binned_sum(F, n, idx, w):
    """``sum(w[idx == i])`` for each bin ``i < n`` (index ``n`` collects what falls outside)."""
    return F.index_add(F.zeros((n + 1,), dtype=w.dtype, like=w), w, idx)[:n]


def _sample_edges(d):
    """Increasing integer edges (a list: constant edges, int output as NumPy's)."""
    start = d.integers(-3, 0)
    return [start + k for k in range(d.integers(1, 4) + 1)]


def _integer_values(d, shape, edges):
    """Integer values to bin (on the edges too), the first inside them (a density divides by
    the total). Integers, not floats: the counts have no derivative in the values, and the
    transform compositions of the suite fail on a floating input without one (a bug of
    ndgrad.func: nested grad and vmap of grad, with an input the output does not depend on;
    tests/test_signal.py covers floating values)."""
    x = d.int_array(shape, edges[0] - 1, edges[-1] + 1)
    x.flat[0] = d.integers(edges[0], edges[-1])
    return x


def _sample_histogram(d):
    shape = d.shape(min_dims=1, max_dims=2)
    edges = _sample_edges(d)
    return (_integer_values(d, shape, edges), edges, None, d.choice([None, False, True]),
            d.array(shape, 0.5, 2.0)), {}


@defcomposite(kind=INDEXING, nin=5, domain=_ANYC, sample=_sample_histogram, method=False,
              sequences=("range",))
def histogram(F, a, bins=10, range=None, density=None, weights=None):  # noqa: A002
    """The histogram of ``a`` (flattened): the count (with ``weights``, the sum of the
    weights) of the values in each bin, and the bin edges, as NumPy's ``histogram``.

    Parameters
    ----------
    a : Tensor
    bins : int, sequence of edges, or str
        A number of equal bins over ``range`` (the data's minimum and maximum by default),
        the increasing edges, or the name of one of NumPy's estimators
        (``numpy.histogram_bin_edges``). Each bin holds ``edges[i] <= v < edges[i + 1]``, the
        last also its right edge; values outside are not counted.
    range : (float, float), optional
    density : bool, optional
        Divide by the total and the bin widths: a density that integrates to 1.
    weights : Tensor, optional
        Of ``a``'s shape; real or complex.

    Returns
    -------
    hist : Tensor
        int64 counts, or sums of the weights, or (``density``) floats.
    bin_edges : Tensor
        Constants.

    Notes
    -----
    Differentiable in ``weights`` (the sums, and the density through them). The counts are
    piecewise constant in ``a``: its gradient is zero. The edges are constants, also where
    they come from the data's range: no gradient flows to ``a``, ``bins`` or ``range``.

    Examples
    --------
    >>> import ndgrad
    >>> a = ndgrad.tensor([0.5, 1.5, 1.7, 3.0])
    >>> ndgrad.histogram(a, bins=3, range=(0.0, 3.0))
    (tensor([1, 2, 1]), tensor([0., 1., 2., 3.]))
    >>> w = ndgrad.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    >>> h, edges = ndgrad.histogram(a, bins=[0.0, 1.0, 3.0], weights=w)
    >>> h
    tensor([1., 9.], grad_fn=<GetitemBackward0>)
    """
    a = _arr(F, a)
    if a.dtype.kind == "c":
        raise TypeError("histogram: a must be real")
    flat = F.reshape(_stop(a), (-1,))
    w = None
    if weights is not None:
        w = _arr(F, weights)
        if tuple(w.shape) != tuple(a.shape):
            raise ValueError(f"histogram: weights should have the same shape as a "
                             f"({tuple(w.shape)} and {tuple(a.shape)})")
        w = F.reshape(w, (-1,))
    edges = _histogram_edges(F, flat, bins, range, weights, "histogram")
    nb = edges.shape[0] - 1
    idx = _bin_index(F, edges, flat)
    if w is None:
        w = F.ones(tuple(flat.shape), dtype=int64, like=flat)
    n = _binned_sum(F, nb, idx, w)
    if density:
        db = F.astype(edges[1:] - edges[:-1], float64)
        return n / db / F.sum(n), edges
    return n, edges


def _histogramdd(F, sample, bins, rng, density, weights, who):
    """NumPy's ``histogramdd`` on the 1-D columns ``sample``: the float64 histogram (sums of
    the weights) and the list of edges."""
    dim = len(sample)
    count = sample[0].shape[0]
    try:
        if len(bins) != dim:
            raise ValueError(f"{who}: the dimension of bins must be equal to the dimension of "
                             "the sample x.")
    except TypeError:  # a number of bins for every dimension
        bins = dim * [bins]
    if rng is None:
        rng = (None,) * dim
    elif len(rng) != dim:
        raise ValueError(f"{who}: range argument must have one entry per dimension")
    edges = []
    for i, (col, b, r) in enumerate(zip(sample, bins, rng)):
        if _ndim(b) == 0:
            n = _bin_count_of(b, who, f"bins[{i}]")
            lo, hi = _range_pair(r, who) if r is not None else _data_range(F, col, who)
            dtype = col.dtype if r is None and col.dtype.kind == "f" else float64
            edges.append(_linspace(F, lo, hi, n + 1, dtype, col))
        else:
            edges.append(_edges_given(F, b, who, f"bins[{i}]"))
    nbs = [e.shape[0] - 1 for e in edges]
    total = math.prod(nbs)
    flat = inside = None
    for i, (col, e) in enumerate(zip(sample, edges)):
        c = _count_le(F, e, col)  # NumPy's searchsorted(side="right"); 0 and nbs[i] + 1 outside
        c = F.where(F.equal(col, e[-1]), c - 1, c)
        ok = F.logical_and(F.greater(c, 0), F.less(c, nbs[i] + 1))
        term = (c - 1) * math.prod(nbs[i + 1:])
        flat, inside = (term, ok) if flat is None else (flat + term, F.logical_and(inside, ok))
    flat = F.where(inside, flat, total)
    if weights is None:
        w = F.ones((count,), dtype=float64, like=sample[0])
    else:
        w = _real_weights(F, weights, count, "the samples", who)
    hist = F.reshape(_binned_sum(F, total, flat, w), tuple(nbs))
    if density:
        s = F.sum(hist)
        for i, e in enumerate(edges):
            shape = tuple(nbs[i] if k == i else 1 for k in builtins.range(dim))
            hist = hist / F.reshape(e[1:] - e[:-1], shape)
        hist = hist / s
    return hist, edges


def _sample_histogram2d(d):
    n = d.integers(1, 4)
    ex, ey = _sample_edges(d), _sample_edges(d)
    return (_integer_values(d, (n,), ex), _integer_values(d, (n,), ey), [ex, ey], None,
            d.choice([None, True]), d.array((n,), 0.5, 2.0, dtype="float64")), {}


@defcomposite(kind=INDEXING, nin=6, domain=_ANY, sample=_sample_histogram2d, method=False,
              sequences=("bins", "range"))
def histogram2d(F, x, y, bins=10, range=None, density=None, weights=None):  # noqa: A002
    """The two-dimensional histogram of the points ``(x, y)``: counts (float64; with
    ``weights``, sums of the real weights) per bin, and the edges along ``x`` and ``y``, as
    NumPy's ``histogram2d``.

    ``bins`` is a number of bins or the edges, for both axes or ``[for x, for y]``; ``range``
    ``[[xmin, xmax], [ymin, ymax]]``. Differentiable in ``weights``; the edges are constants
    and the gradient in ``x`` and ``y`` is zero (as :func:`histogram`).

    Examples
    --------
    >>> import ndgrad
    >>> h, xe, ye = ndgrad.histogram2d(ndgrad.tensor([0.1, 0.2, 0.9]),
    ...                                ndgrad.tensor([0.8, 0.9, 0.1]), bins=2,
    ...                                range=[[0.0, 1.0], [0.0, 1.0]])
    >>> h
    tensor([[0., 2.],
            [1., 0.]])
    """
    x, y = _arr(F, x), _arr(F, y)
    if len(x.shape) != 1 or len(y.shape) != 1 or x.shape[0] != y.shape[0]:
        raise ValueError(f"histogram2d: x and y must be 1-D of the same length, got shapes "
                         f"{tuple(x.shape)} and {tuple(y.shape)}")
    try:
        nbins = len(bins)
    except TypeError:
        nbins = 1
    if nbins != 1 and nbins != 2:
        bins = [bins, bins]
    hist, edges = _histogramdd(F, [_stop(x), _stop(y)], bins, range, density, weights,
                               "histogram2d")
    return hist, edges[0], edges[1]


def _sample_bincount(d):
    n = d.integers(0, 4)
    return (d.int_array((n,), 0, 4), d.array((n,), dtype="float64")), {
        "minlength": d.choice([5, 6])}


@defcomposite(kind=INDEXING, nin=2, domain=_ANY, sample=_sample_bincount, method=False)
def bincount(F, x, /, weights=None, minlength=0):
    """How many times each value ``0, 1, ..., max(x)`` occurs in the non-negative integers
    ``x`` (at least ``minlength`` of them); with ``weights``, the sum of their weights
    (float64), as NumPy's ``bincount``.

    Differentiable in ``weights``; the counts without weights are integers (no derivative).
    Inside ``vmap``, where ``x`` differs per batch element, and on Dask, where ``x`` is not
    computed yet, the length of the result cannot follow ``max(x)``: it is ``minlength``,
    which must then be given and exceed every value (Note [Values that decide a shape]).

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.bincount(ndgrad.tensor([0, 1, 1, 3]))
    tensor([1, 2, 0, 1])
    >>> ndgrad.bincount(ndgrad.tensor([0, 1, 1, 3]), weights=ndgrad.tensor([0.5, 1.0, 2.0, 1.0]))
    tensor([0.5, 3. , 0. , 1. ])
    """
    x = _arr(F, x)
    if len(x.shape) != 1:
        raise ValueError(f"bincount: x must be 1-D, got shape {tuple(x.shape)}")
    if x.dtype.kind not in "biu":
        raise TypeError(f"bincount: x must hold non-negative integers, got dtype {x.dtype}")
    minlength = operator.index(minlength)
    if minlength < 0:
        raise ValueError("bincount: 'minlength' must not be negative")
    x = _stop(x)
    if x.dtype != int64:
        x = F.astype(x, int64)
    n = x.shape[0]
    B = x.backend if isinstance(x, Tensor) else backend_of(x)
    unread = not B.reads_values
    if unread and minlength == 0:  # (max(x) would be computed, silently)
        raise B.unsupported("", why="the length of the result is max(x) + 1, a value not "
                                      "computed yet: pass minlength (more than every value "
                                      "of x); the result then has that length")
    if is_batched(x) or unread:
        if minlength == 0:
            raise ValueError("bincount: inside vmap, where x differs per batch element, the "
                             "length of the result cannot be max(x) + 1: pass minlength (more "
                             "than every value of x); the result then has that length")
        length = minlength
    elif n == 0:
        length = minlength
    else:
        if int(F.min(x)) < 0:
            raise ValueError("bincount: x must have no negative elements")
        length = max(int(F.max(x)) + 1, minlength)
    if weights is None:
        w = F.ones((n,), dtype=int64, like=x)
    else:
        w = _real_weights(F, weights, n, "x", "bincount")
    # (where values are not read the counts are of x's backend: the index x is one)
    return F.index_add(F.zeros((length,), dtype=w.dtype, like=x if unread else w), w, x)


def histogramdd(sample, bins=10, range=None, density=None, weights=None):  # noqa: A002
    """The ``D``-dimensional histogram of ``N`` points, as NumPy's ``histogramdd``: the
    counts (float64; with ``weights``, sums of the real weights) per bin, and the list of
    the ``D`` edge arrays.

    ``sample`` is an ``(N, D)`` tensor or a sequence of ``D`` 1-D tensors of length ``N``;
    ``bins`` a number of bins or edges, for every dimension or one per dimension; ``range`` a
    ``(min, max)`` per dimension. Differentiable in ``weights``; the edges are constants and
    the gradient in ``sample`` is zero (as :func:`histogram`).

    A plain function rather than a registered composite: its result nests a list of edges
    inside a pair, which the registry suites do not take; ``histogram2d``, registered, runs
    the same code (``tests/test_signal.py`` checks this one against NumPy).

    Examples
    --------
    >>> import ndgrad
    >>> pts = ndgrad.tensor([[0.1, 0.8], [0.2, 0.9], [0.9, 0.1]])
    >>> h, edges = ndgrad.histogramdd(pts, bins=2, range=[(0.0, 1.0), (0.0, 1.0)])
    >>> h
    tensor([[0., 2.],
            [1., 0.]])
    >>> len(edges), edges[0]
    (2, tensor([0. , 0.5, 1. ]))
    """
    F = TENSOR_F
    if isinstance(sample, (list, tuple)):
        cols = [_arr(F, c) for c in sample]
        for c in cols:
            if len(c.shape) != 1 or c.shape[0] != cols[0].shape[0]:
                raise ValueError("histogramdd: a sequence sample must hold 1-D tensors of one "
                                 f"length, got shapes {[tuple(c.shape) for c in cols]}")
    else:
        s = _arr(F, sample)
        if len(s.shape) == 1:
            s = F.reshape(s, (s.shape[0], 1))
        if len(s.shape) != 2:
            raise ValueError(f"histogramdd: sample must be (N, D) or a sequence of D 1-D "
                             f"tensors, got shape {tuple(s.shape)}")
        cols = [s[:, k] for k in builtins.range(s.shape[1])]
    return _histogramdd(F, [_stop(c) for c in cols], bins, range, density, weights,
                        "histogramdd")


PLAIN = {"histogramdd": histogramdd}
