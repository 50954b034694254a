"""Reductions and scans: sum, prod, mean, var, std, max, min, argmax, argmin, all, any,
logsumexp, cumulative_sum, cumulative_prod, and ``linalg.vector_norm``.

Reductions take ``axis`` (int, tuple or None) and ``keepdims``; the public functions also
accept PyTorch's ``dim`` / ``keepdim``. A vjp re-expands the cotangent with
:func:`expand_reduced` (or :func:`unreduce`, which only restores the reduced axes as length-1
dimensions and lets broadcasting do the rest), which undoes ``keepdims=False``.

Scans (``cumulative_sum``, ``cumulative_prod``) follow the array API: ``axis`` is required
for inputs with more than one dimension and ``include_initial=True`` prepends the identity.

Note [Products with zeros]
--------------------------
The derivative of a product with respect to one factor is the product of all the *other*
factors. Dividing the result by the factor (``out / x``) is exact, cheap and differentiable
when no factor is zero, and is what ``prod`` and ``cumulative_prod`` use then. With zeros,
as ``torch.prod`` / ``torch.cumprod`` do, the rules switch to formulas without division:

* ``prod``: the product of the other elements of a slice is the product of an exclusive
  cumulative product from the left and one from the right (O(n), differentiable to any
  order, since it is made of ``cumulative_prod`` and slicing). A reduction over several
  axes is a chain of one-axis reductions, so its "others" product is the product of the
  one-axis factors of the chain.
* ``cumulative_prod``: first order (raw arrays) uses an O(n) formula that treats the
  elements before the first zero, the first zero and the rest separately. Under
  ``create_graph`` (Tensors) that formula's derivative would be wrong at the zeros, so,
  like PyTorch, the rule switches to an O(n^2) formula that is exact to every order: the
  products ``prod_{j <= k, j != i} x_j`` for all pairs ``(i, k)`` of the scanned axis.
"""

from __future__ import annotations

import builtins
import math
import operator

from ..tensor import Tensor
from .batching import flatten, shift_axis, values_unknown
from .registry import REDUCTION, SCAN, Domain, defop, linear, sample_numpy


# This module defines ops named sum, max, min, all and any: the helpers use the builtins.
_bmax = builtins.max
_bsum = builtins.sum
_bany = builtins.any


def normalize_axis(axis, ndim):
    """``axis`` as a sorted tuple of non-negative ints (None: every axis)."""
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, int) or hasattr(axis, "__index__"):
        axis = (int(axis),)
    out = []
    for a in axis:
        a = int(a)
        if not -_bmax(ndim, 1) <= a < _bmax(ndim, 1):
            raise ValueError(f"axis {a} is out of bounds for a tensor of dimension {ndim}")
        out.append(a % ndim if ndim else 0)
    if len(set(out)) != len(out):
        raise ValueError(f"repeated axis in {tuple(axis)}")
    return tuple(sorted(out))


def _kept_shape(x_shape, axis):
    """The keepdims=True shape of a reduction of ``x_shape`` over ``axis``."""
    axes = normalize_axis(axis, len(x_shape))
    kept = list(x_shape)  # (no comprehension: it would make axes a cell)
    for k in axes:
        if k < len(kept):  # (a 0-d input's axis 0 is no dimension)
            kept[k] = 1
    return tuple(kept)


def _numel(x_shape, axis):
    n = 1
    for a in normalize_axis(axis, len(x_shape)):
        n *= x_shape[a]
    return n


def unreduce(F, g, x_shape, axis, keepdims):
    """A reduced array ``g`` with the reduced axes restored as length-1 dimensions (it
    broadcasts against ``x_shape``)."""
    if keepdims or not len(x_shape):
        return g
    shape = _kept_shape(x_shape, axis)
    return g if tuple(g.shape) == shape else F.reshape(g, shape)


def expand_reduced(F, g, x_shape, axis, keepdims):
    """Broadcast a reduced cotangent ``g`` back to ``x_shape``; a backend's stand-in shape
    broadcasts its backend's raw cotangent itself (Dask: with the input's chunks; Note
    [Backend plug-ins] in core/backend.py)."""
    g = unreduce(F, g, x_shape, axis, keepdims)
    if type(x_shape) is not tuple and hasattr(x_shape, "broadcast"):
        out = x_shape.broadcast(g)  # (None: not its backend's raw cotangent)
        if out is not None:
            return out
    return F.broadcast_to(g, x_shape)


def _is_taped(*arrays):
    """True when a formula runs on Tensors (create_graph, nested forward levels): rules with a
    cheaper first-order-only variant must then use the variant that is exact to every order."""
    return _bany(isinstance(a, Tensor) for a in arrays)


# the smallest normal magnitude per floating width (float16/32/64, and complex64/128's parts)
_TINY_NORMAL = {2: 2.0 ** -14, 4: 2.0 ** -126, 8: 2.0 ** -1022, 16: 2.0 ** -1022}


def _normal(F, a):
    """Elementwise: ``a`` is finite and of normal magnitude (neither 0 nor subnormal)."""
    dt = a.dtype
    m = F.abs(a)
    return F.isfinite(m) & (m >= _TINY_NORMAL.get(dt.itemsize // 2 if dt.kind == "c" else
                                                   dt.itemsize, 2.0 ** -1022))


# the exponents of the normal range per floating width: scaling by 2^-e stays exact
_EXPONENTS = {2: (-14.0, 15.0), 4: (-126.0, 127.0), 8: (-1022.0, 1023.0)}


def _stop(x):
    """``x`` as a constant: no derivative flows through it (raw arrays are constants)."""
    return x.detach() if isinstance(x, Tensor) else x


def inverse_scale_along(F, x, axis, ignore_nan=False):
    """``1 / s`` per slice of ``x`` reduced over ``axis`` (kept as length-1 dimensions), for
    the power of two ``s`` with ``s <= max |x| < 2 s`` (1 where the slice is all 0 or not
    finite; ``ignore_nan``: of the elements that are not NaN), from the values alone: a
    constant for every derivative, and scaling by it is exact. A rule or forward computes in
    units of ``s`` so that squares neither under- nor overflow (Note [Derivatives at special
    points] in elementwise.py)."""
    a = F.abs(_stop(x))
    if ignore_nan:
        a = F.where(F.isnan(a), 0.0, a)
    m = F.max(a, axis=axis, keepdims=True)
    dt = m.dtype
    lo, hi = _EXPONENTS.get(dt.itemsize, _EXPONENTS[8])
    e = F.floor(F.log2(F.where(F.isfinite(m) & (m > 0), m, 1.0)))
    return F.exp2(-F.clip(e, lo, hi))


def _divides_exactly(F, x, out, taped):
    """Whether a product's rules may divide by a factor (Note [Products with zeros]): no factor
    is 0, and every factor and product is a finite normal number (``out / x`` loses the
    product where it underflowed: ``prod([1e-170, 2e-170, 3])`` is 0, its derivative in the
    first factor 6e-170). A formula that will be differentiated again (``taped``) also needs
    the factors within 2^20 of each other: the second derivative of ``out / x_i`` in ``x_i``
    is ``out / x_i^2 - out / x_i^2``, rounding noise of ``eps out / x_i^2`` against entries of
    ``out / (x_i x_j)``. Inside vmap (or a compile trace) the values cannot be read: False
    (the exact formulas)."""
    if values_unknown(x) or values_unknown(out):
        return False
    if not bool(F.all(_normal(F, x))) or not bool(F.all(_normal(F, out))):
        return False
    if taped and _numel(x.shape, None):  # (an empty x has no factor to divide by)
        m = F.abs(x)
        return bool(F.max(m) <= 2.0 ** 20 * F.min(m))
    return True


def _slice_along(ndim, axis, s):
    return (slice(None),) * axis + (s,)


def _flip(x, axis):
    return x[_slice_along(x.ndim, axis, slice(None, None, -1))]


# ----------------------------------------------------------------------------- samplers
def _reduction_kwargs(d, shape):
    ndim = len(shape)
    return {"axis": d.choice([None] + ([d.axis(ndim, none=False), d.axes(ndim)] if ndim else [])),
            "keepdims": d.boolean()}


def _distinct_array(d, shape):
    """Values at least ~3/size apart: no near-ties, so finite differences of max/min/argmax
    are valid (ties are tested separately, against torch)."""
    import numpy as np  # sampling runs in the test suite, not in formulas
    n = 1
    for s in shape:
        n *= s
    perm = np.asarray(d.permutation(n), dtype=np.float64)
    spacing = 3.0 / _bmax(n, 1)
    x = (perm - (n - 1) / 2.0) * spacing + d.array((n,), -0.2 * spacing, 0.2 * spacing,
                                                    dtype=np.float64)
    return x.reshape(shape)


def _sample_distinct(d):
    shape = d.shape()
    return (_distinct_array(d, shape),), _reduction_kwargs(d, shape)


def _sample_arg(d):
    shape = d.shape()
    axis = d.axis(len(shape)) if shape else None
    return (_distinct_array(d, shape),), {"axis": axis, "keepdims": d.boolean()}


def _sample_bool(d):
    shape = d.shape()
    x = d.bool_array(shape) if d.boolean() else d.int_array(shape, -1, 1).astype(d.dtype)
    return (x,), _reduction_kwargs(d, shape)


def _sample_var(d):
    shape = d.shape()
    kw = _reduction_kwargs(d, shape)
    kw["correction"] = d.choice([0, 1, 0.5])
    if _numel(shape, kw["axis"]) - kw["correction"] <= 0:
        d.reject()
    return (d.array(shape),), kw


def _sample_std(d):
    # at least two elements per slice: a one-element slice has zero variance, where std's
    # derivative is infinite (NaN gradient, as torch's)
    args, kw = _sample_var(d)
    if _numel(args[0].shape, kw["axis"]) < 2:
        d.reject()
    return args, kw


def _sample_scan(d):
    shape = d.shape(min_dims=1)
    kw = {"axis": d.axis(len(shape), none=len(shape) == 1)}
    if d.boolean():
        kw["include_initial"] = True
    return (d.array(shape),), kw


def _unit_array(d, shape):
    """Magnitudes in [0.5, 1.5], either sign (or phase): products of many of them stay
    moderate, so finite differences stay accurate; zeros are tested separately (vs torch)."""
    sign = d.bool_array(shape) * 2.0 - 1.0
    x = sign * d.array(shape, 0.5, 1.5, dtype="float64")
    if d.dtype.kind == "c":
        x = x * (1 + 0.3j * d.array(shape, -1.0, 1.0, dtype="float64"))
    # an array also for shape (): arithmetic on 0-d arrays gives NumPy scalars, which the
    # suites would take for constants (numbers), leaving a 0-d input untested
    return sample_numpy().asarray(x, dtype=d.dtype)


def _sample_prod(d):
    shape = d.shape()
    return (_unit_array(d, shape),), _reduction_kwargs(d, shape)


def _sample_cumprod(d):
    args, kw = _sample_scan(d)
    return (_unit_array(d, args[0].shape),), kw


# ----------------------------------------------------------------------------- sum, mean
@defop(kind=REDUCTION, domain=Domain((-2.0, 2.0), complex=True))
def sum(B, a, axis=None, *, keepdims=False, dtype=None):
    """Sum of elements over ``axis`` (all axes by default).

    Parameters
    ----------
    a : Tensor
    axis : int or tuple of ints, optional
        Axes to reduce (negative counts from the end); None reduces all. ``dim`` is
        accepted as an alias.
    keepdims : bool
        Keep the reduced axes as length-1 dimensions (alias ``keepdim``).
    dtype : dtype, optional
        Accumulate and return in this dtype.

    Examples
    --------
    >>> import ndgrad
    >>> x = ndgrad.tensor([[1.0, 2.0], [3.0, 4.0]])
    >>> ndgrad.sum(x, axis=0)
    tensor([4., 6.])
    >>> x.sum(dim=1, keepdim=True)
    tensor([[3.],
            [7.]])
    """
    return B.sum(a, axis=axis, keepdims=keepdims, dtype=dtype)


sum.defvjp(lambda F, g, out, x, axis=None, keepdims=False, dtype=None:
           expand_reduced(F, g, x.shape, axis, keepdims))
sum.defjvp_linear()


@sum.defidentity
def _sum_identity(F, i, s, args, batched, params):
    # the sum of s_b e_b over its one axis is s_b
    if params.get("axis") not in (None, 0, -1, (0,), (-1,)) or len(args) > 1:
        return None
    out = s if params.get("dtype") is None else F.astype(s, params["dtype"])
    return "value", (F.expand_dims(out, -1) if params.get("keepdims") else out)


@defop(kind=REDUCTION, domain=Domain((-2.0, 2.0), complex=True))
def mean(B, a, axis=None, *, keepdims=False):
    """Arithmetic mean over ``axis`` (all axes by default).

    Parameters
    ----------
    a : Tensor
    axis : int or tuple of ints, optional
        Axes to reduce (alias ``dim``); None reduces all.
    keepdims : bool
        Keep the reduced axes as length-1 dimensions (alias ``keepdim``).

    Examples
    --------
    >>> import ndgrad
    >>> x = ndgrad.tensor([[1.0, 2.0], [3.0, 5.0]], requires_grad=True)
    >>> ndgrad.mean(x, axis=1)
    tensor([1.5, 4. ], grad_fn=<MeanBackward0>)
    >>> x.mean().backward()
    >>> x.grad
    tensor([[0.25, 0.25],
            [0.25, 0.25]])
    """
    return B.mean(a, axis=axis, keepdims=keepdims)


mean.defvjp(lambda F, g, out, x, axis=None, keepdims=False:
            expand_reduced(F, g, x.shape, axis, keepdims) / _numel(x.shape, axis))
mean.defjvp_linear()


# ----------------------------------------------------------------------------- prod
def _exclusive_prod(F, y, a):
    """For each element of ``y``, the product of the other elements along axis ``a``."""
    nd = y.ndim
    drop_last = _slice_along(nd, a, slice(None, -1))
    left = F.cumulative_prod(y, axis=a, include_initial=True)[drop_last]
    right = _flip(F.cumulative_prod(_flip(y, a), axis=a, include_initial=True)[drop_last], a)
    return left * right


def _prod_others(F, x, out, axis, keepdims):
    """For each element of ``x``, the product of the other elements of its reduced slice
    (Note [Products with zeros]); broadcastable to ``x.shape``."""
    if x.ndim == 0:
        return F.ones_like(x)
    if _divides_exactly(F, x, out, _is_taped(x, out)):
        return unreduce(F, out, x.shape, axis, keepdims) / x
    others = None
    y = x
    for a in normalize_axis(axis, x.ndim):
        f = _exclusive_prod(F, y, a)
        others = f if others is None else others * f
        y = F.prod(y, axis=a, keepdims=True)
    return F.ones_like(x) if others is None else others


@defop(kind=REDUCTION, domain=Domain((-2.0, 2.0), complex=True), sample=_sample_prod)
def prod(B, a, axis=None, *, keepdims=False, dtype=None):
    """Product of elements over ``axis`` (all axes by default).

    The gradient is exact when the input has zeros (one or several), as ``torch.prod``'s.

    Parameters
    ----------
    a : Tensor
    axis : int or tuple of ints, optional
        Axes to reduce (alias ``dim``); None reduces all.
    keepdims : bool
        Keep the reduced axes as length-1 dimensions (alias ``keepdim``).
    dtype : dtype, optional
        Accumulate and return in this dtype.

    Examples
    --------
    >>> import ndgrad
    >>> x = ndgrad.tensor([2.0, 0.0, 3.0], requires_grad=True)
    >>> y = ndgrad.prod(x)
    >>> y
    tensor(0., grad_fn=<ProdBackward0>)
    >>> y.backward()
    >>> x.grad
    tensor([0., 6., 0.])
    """
    return B.prod(a, axis=axis, keepdims=keepdims, dtype=dtype)


prod.defvjp(lambda F, g, out, x, axis=None, keepdims=False, dtype=None:
            unreduce(F, g, x.shape, axis, keepdims)
            * F.conj(_prod_others(F, x, out, axis, keepdims)))


def _prod_jvp(F, tangents, out, x, axis=None, keepdims=False, dtype=None):
    r = F.sum(tangents[0] * _prod_others(F, x, out, axis, keepdims), axis=axis,
              keepdims=keepdims)
    return r if dtype is None else F.astype(r, dtype)


prod.defjvp(_prod_jvp)


# ----------------------------------------------------------------------------- var, std
def _var_vjp(F, g, out, x, axis=None, keepdims=False, correction=0):
    # d var = 2 (x - mean) / (N - correction), as torch's var_backward (also for complex x)
    n = _numel(x.shape, axis) - correction
    return unreduce(F, g, x.shape, axis, keepdims) * (2.0 / n) * (
        x - F.mean(x, axis=axis, keepdims=True))


def _var_jvp(F, tangents, out, x, axis=None, keepdims=False, correction=0):
    # d var = 2 re(sum(conj(x - mean) dx)) / (N - correction): the mean's own change drops
    # out (the deviations sum to zero); for complex x the variance is real, so its tangent is
    # the real part (x - mean times dx, without the conjugate, is not the derivative)
    n = _numel(x.shape, axis) - correction
    dev = x - F.mean(x, axis=axis, keepdims=True)
    t = tangents[0]
    prod = F.real(F.conj(dev) * t) if F.iscomplexobj(dev) else dev * t
    return F.sum(prod, axis=axis, keepdims=keepdims) * (2.0 / n)


_VAR_ALIASES = {"dim": "axis", "keepdim": "keepdims", "ddof": "correction"}


@defop(kind=REDUCTION, domain=Domain((-2.0, 2.0), complex=True), sample=_sample_var,
       kwarg_aliases=_VAR_ALIASES)
def var(B, a, axis=None, *, correction=0, keepdims=False):
    """Variance over ``axis``: ``sum(|x - mean|**2) / (N - correction)``; real also for
    complex ``a`` (as NumPy's and PyTorch's).

    Parameters
    ----------
    a : Tensor
    axis : int or tuple of ints, optional
        Axes to reduce (alias ``dim``); None reduces all.
    correction : int or float
        Degrees-of-freedom correction (alias ``ddof``): 0 (the default, as NumPy and the
        array API) gives the population variance, 1 the unbiased sample variance (PyTorch's
        default).
    keepdims : bool
        Keep the reduced axes as length-1 dimensions (alias ``keepdim``).

    Examples
    --------
    >>> import ndgrad
    >>> x = ndgrad.tensor([1.0, 2.0, 3.0, 4.0])
    >>> ndgrad.var(x)
    tensor(1.25)
    >>> x.var(correction=1)
    tensor(1.66666667)
    """
    return B.var(a, axis=axis, ddof=correction, keepdims=keepdims)


var.defvjp(_var_vjp)
var.defjvp(_var_jvp)


@defop(kind=REDUCTION, domain=Domain((-2.0, 2.0), complex=True), sample=_sample_std,
       kwarg_aliases=_VAR_ALIASES)
def std(B, a, axis=None, *, correction=0, keepdims=False):
    """Standard deviation over ``axis``: the square root of :func:`var`.

    Where the variance is zero the derivative is infinite; the gradient there is 0, as
    PyTorch's. Where NumPy's computation would under- or overflow (deviations below about
    1e-154, whose squares underflow, or above 1e154), the input is scaled by a power of two
    first: ``std([1, 2, 3] * 1e-170)`` is 8.2e-171, not NumPy's 0, and its derivative is
    finite, as it is wherever the inputs are not all equal.

    Parameters
    ----------
    a : Tensor
    axis : int or tuple of ints, optional
        Axes to reduce (alias ``dim``); None reduces all.
    correction : int or float
        Degrees-of-freedom correction (alias ``ddof``), 0 by default.
    keepdims : bool
        Keep the reduced axes as length-1 dimensions (alias ``keepdim``).

    Examples
    --------
    >>> import ndgrad
    >>> x = ndgrad.tensor([[1.0, 3.0], [2.0, 2.0]])
    >>> ndgrad.std(x, axis=1)
    tensor([1., 0.])
    >>> ndgrad.std(ndgrad.tensor([1.0, 2.0, 3.0]) * 1e-170)
    tensor(8.16496581e-171)
    """
    out = B.std(a, axis=axis, ddof=correction, keepdims=keepdims)
    mag = B.abs(out)
    if bool(B.all((mag >= 2.0 ** -450) & (mag <= 2.0 ** 450))):
        return out
    # (a tiny or huge spread, a constant slice, or NaN: in units of a power of two near the
    # largest magnitude, NumPy's result where it was exact)
    inv = inverse_scale_along(B, a, axis)
    r = B.std(a * inv, axis=axis, ddof=correction, keepdims=True) / inv
    return B.reshape(r, out.shape)


def _std_parts(F, out, x, axis, keepdims, correction, taped):
    """``x - mean``, ``std`` (kept dimensions) and ``N - correction``; in units of a power of
    two ``s`` near max |x| (:func:`inverse_scale_along`) where the rule will be
    differentiated again (``taped``): the derivatives of their quotient have ``1 / std^2``
    terms that overflow at a spread of 1e-170 otherwise. (At first order the quotient is
    exact as it is.)"""
    dev = x - F.mean(x, axis=axis, keepdims=True)
    o = unreduce(F, out, x.shape, axis, keepdims)
    if taped:
        inv = inverse_scale_along(F, x, axis)
        dev, o = dev * inv, o * inv
    return dev, o, _numel(x.shape, axis) - correction


def _std_vjp(F, g, out, x, axis=None, keepdims=False, correction=0):
    # g (x - mean) / (N std), and 0 where std == 0, as torch's std_backward (the derivative
    # is infinite there; the masked value keeps a constant slice from poisoning the gradient
    # with NaN)
    dev, o, n = _std_parts(F, out, x, axis, keepdims, correction, _is_taped(g, out, x))
    zero = F.equal(o, 0)
    # (the quotient on the reduced shape, then one product with the deviations)
    c = F.where(zero, 0.0, unreduce(F, g, x.shape, axis, keepdims) / (n * F.where(zero, 1.0, o)))
    return c * dev


def _std_jvp(F, tangents, out, x, axis=None, keepdims=False, correction=0):
    # re(sum(conj(x - mean) dx)) / (N std) (see _var_jvp), 0 where std == 0
    t = tangents[0]
    dev, o, n = _std_parts(F, out, x, axis, keepdims, correction, _is_taped(t, out, x))
    prod = F.real(F.conj(dev) * t) if F.iscomplexobj(dev) else dev * t
    zero = F.equal(o, 0)
    r = F.where(zero, 0.0, F.sum(prod, axis=axis, keepdims=True) / (n * F.where(zero, 1.0, o)))
    return F.reshape(r, out.shape)


std.defvjp(_std_vjp)
std.defjvp(_std_jvp)


# ----------------------------------------------------------------------------- max, min
def _minmax_vjp(F, g, out, x, axis=None, keepdims=False):
    # ties share the gradient evenly, as torch.amax / torch.amin
    mask = F.equal(x, unreduce(F, out, x.shape, axis, keepdims))
    count = F.sum(mask, axis=axis, keepdims=True)
    return F.where(mask, unreduce(F, g, x.shape, axis, keepdims) / count, 0.0)


def _minmax_jvp(F, tangents, out, x, axis=None, keepdims=False):
    mask = F.equal(x, unreduce(F, out, x.shape, axis, keepdims))
    count = F.sum(mask, axis=axis, keepdims=keepdims)
    return F.sum(F.where(mask, tangents[0], 0.0), axis=axis, keepdims=keepdims) / count


@defop(kind=REDUCTION, domain=Domain((-2.0, 2.0)), sample=_sample_distinct)
def max(B, a, axis=None, *, keepdims=False):
    """Largest element over ``axis`` (all axes by default), as ``torch.amax``.

    Ties share the gradient evenly.

    Parameters
    ----------
    a : Tensor
    axis : int or tuple of ints, optional
        Axes to reduce (alias ``dim``); None reduces all.
    keepdims : bool
        Keep the reduced axes as length-1 dimensions (alias ``keepdim``).

    Examples
    --------
    >>> import ndgrad
    >>> x = ndgrad.tensor([[1.0, 5.0], [5.0, 2.0]], requires_grad=True)
    >>> ndgrad.max(x, axis=1)
    tensor([5., 5.], grad_fn=<MaxBackward0>)
    >>> x.max().backward()
    >>> x.grad
    tensor([[0. , 0.5],
            [0.5, 0. ]])
    """
    return B.max(a, axis=axis, keepdims=keepdims)


max.defvjp(_minmax_vjp)
max.defjvp(_minmax_jvp)
max.defstructure(linear(piecewise=True))  # (its Jacobian is constant along a smooth path)
max.defsparsity("extremum")


@defop(kind=REDUCTION, domain=Domain((-2.0, 2.0)), sample=_sample_distinct)
def min(B, a, axis=None, *, keepdims=False):
    """Smallest element over ``axis`` (all axes by default), as ``torch.amin``.

    Ties share the gradient evenly.

    Parameters
    ----------
    a : Tensor
    axis : int or tuple of ints, optional
        Axes to reduce (alias ``dim``); None reduces all.
    keepdims : bool
        Keep the reduced axes as length-1 dimensions (alias ``keepdim``).

    Examples
    --------
    >>> import ndgrad
    >>> x = ndgrad.tensor([[1.0, 5.0], [0.0, 2.0]])
    >>> ndgrad.min(x, axis=0)
    tensor([0., 2.])
    >>> x.min(dim=1, keepdim=True)
    tensor([[1.],
            [0.]])
    """
    return B.min(a, axis=axis, keepdims=keepdims)


min.defvjp(_minmax_vjp)
min.defjvp(_minmax_jvp)
min.defstructure(linear(piecewise=True))  # (its Jacobian is constant along a smooth path)
min.defsparsity("extremum")


# ----------------------------------------------------------------------------- arg / logic
_NOT_DIFF = {"vjp": "integer or boolean output: not differentiable",
             "jvp": "integer or boolean output: not differentiable"}


@defop(kind=REDUCTION, domain=Domain((-2.0, 2.0)), differentiable=False, sample=_sample_arg,
       notes=_NOT_DIFF)
def argmax(B, a, axis=None, *, keepdims=False):
    """Index of the largest element along ``axis`` (of the flattened input when None).

    The first occurrence wins on ties. Returns an int64 tensor that never requires grad.

    Parameters
    ----------
    a : Tensor
    axis : int, optional
        Axis to search (alias ``dim``); None searches the flattened input.
    keepdims : bool
        Keep the reduced axis as a length-1 dimension (alias ``keepdim``).

    Examples
    --------
    >>> import ndgrad
    >>> x = ndgrad.tensor([[1.0, 5.0, 2.0], [7.0, 0.0, 7.0]])
    >>> ndgrad.argmax(x, axis=1)
    tensor([1, 0])
    >>> x.argmax()
    tensor(3)
    """
    return B.argmax(a, axis=axis, keepdims=keepdims)


@defop(kind=REDUCTION, domain=Domain((-2.0, 2.0)), differentiable=False, sample=_sample_arg,
       notes=_NOT_DIFF)
def argmin(B, a, axis=None, *, keepdims=False):
    """Index of the smallest element along ``axis`` (of the flattened input when None).

    The first occurrence wins on ties. Returns an int64 tensor that never requires grad.

    Parameters
    ----------
    a : Tensor
    axis : int, optional
        Axis to search (alias ``dim``); None searches the flattened input.
    keepdims : bool
        Keep the reduced axis as a length-1 dimension (alias ``keepdim``).

    Examples
    --------
    >>> import ndgrad
    >>> x = ndgrad.tensor([[1.0, 5.0, 2.0], [7.0, 0.0, 7.0]])
    >>> ndgrad.argmin(x, axis=1, keepdims=True)
    tensor([[0],
            [1]])
    """
    return B.argmin(a, axis=axis, keepdims=keepdims)


def _arg_batch(op):
    fn = op.of

    def rule(F, batched, x, axis=None, keepdims=False):
        if axis is None:  # an index into each element's flattened values
            r = fn(F)(flatten(F, x), axis=1, keepdims=keepdims)
            return F.reshape(r, (x.shape[0],) + (1,) * (x.ndim - 1)) if keepdims else r
        return fn(F)(x, axis=shift_axis(operator.index(axis), x.ndim - 1), keepdims=keepdims)
    op.defbatch(rule)


_arg_batch(argmax)
_arg_batch(argmin)


@defop(kind=REDUCTION, domain=Domain((-2.0, 2.0)), differentiable=False, sample=_sample_bool,
       notes=_NOT_DIFF)
def all(B, a, axis=None, *, keepdims=False):
    """Whether every element over ``axis`` is true (non-zero); a bool tensor.

    Parameters
    ----------
    a : Tensor
    axis : int or tuple of ints, optional
        Axes to reduce (alias ``dim``); None reduces all.
    keepdims : bool
        Keep the reduced axes as length-1 dimensions (alias ``keepdim``).

    Examples
    --------
    >>> import ndgrad
    >>> x = ndgrad.tensor([[1.0, 0.0], [2.0, 3.0]])
    >>> ndgrad.all(x, axis=1)
    tensor([False,  True])
    >>> x.all()
    tensor(False)
    """
    return B.all(a, axis=axis, keepdims=keepdims)


@defop(kind=REDUCTION, domain=Domain((-2.0, 2.0)), differentiable=False, sample=_sample_bool,
       notes=_NOT_DIFF)
def any(B, a, axis=None, *, keepdims=False):
    """Whether any element over ``axis`` is true (non-zero); a bool tensor.

    Parameters
    ----------
    a : Tensor
    axis : int or tuple of ints, optional
        Axes to reduce (alias ``dim``); None reduces all.
    keepdims : bool
        Keep the reduced axes as length-1 dimensions (alias ``keepdim``).

    Examples
    --------
    >>> import ndgrad
    >>> x = ndgrad.tensor([[0.0, 0.0], [2.0, 0.0]])
    >>> ndgrad.any(x, axis=1)
    tensor([False,  True])
    >>> x.any()
    tensor(True)
    """
    return B.any(a, axis=axis, keepdims=keepdims)


# ----------------------------------------------------------------------------- logsumexp
@defop(kind=REDUCTION, domain=Domain((-3.0, 3.0)),
       notes={"integer inputs": "integers and bools are computed in float64, as SciPy's "
                                "logsumexp (the reference composes NumPy's exp, whose bool "
                                "loop gives float16)"})
def logsumexp(B, x, axis=None, keepdims=False):
    """``log(sum(exp(x)))`` over ``axis``, computed stably (the maximum is subtracted first).

    Parameters
    ----------
    x : Tensor
    axis : int or tuple of ints, optional
        Axes to reduce (alias ``dim``); None reduces all.
    keepdims : bool
        Keep the reduced axes as length-1 dimensions (alias ``keepdim``).

    Examples
    --------
    >>> import ndgrad
    >>> x = ndgrad.tensor([[0.0, 0.0], [1000.0, 1000.0]], requires_grad=True)
    >>> y = ndgrad.logsumexp(x, axis=1)
    >>> y.tolist()  # no overflow: exp(1000) is never formed
    [0.6931471805599453, 1000.6931471805599]
    >>> y.sum().backward()
    >>> x.grad
    tensor([[0.5, 0.5],
            [0.5, 0.5]])
    """
    if x.dtype.kind not in "fc":
        x = B.asarray(x, dtype=B.float64)
    m = B.max(x, axis=axis, keepdims=True, initial=-B.inf)
    m = B.where(B.isfinite(m), m, 0)
    with B.errstate(divide="ignore"):  # log(0) = -inf for an all -inf (or empty) slice
        out = B.log(B.sum(B.exp(x - m), axis=axis, keepdims=True)) + m
    if not keepdims:
        out = B.reshape(out, tuple(s for k, s in enumerate(x.shape)
                                   if k not in normalize_axis(axis, x.ndim)))
    return out


logsumexp.defvjp(lambda F, g, out, x, axis=None, keepdims=False:
                 unreduce(F, g, x.shape, axis, keepdims)
                 * F.exp(x - unreduce(F, out, x.shape, axis, keepdims)))
logsumexp.defjvp(lambda F, tangents, out, x, axis=None, keepdims=False:
                 F.sum(tangents[0] * F.exp(x - unreduce(F, out, x.shape, axis, keepdims)),
                       axis=axis, keepdims=keepdims))


# ----------------------------------------------------------------------------- scans
def _scan_axis(axis, ndim, name):
    if axis is None:
        if ndim > 1:
            raise ValueError(f"{name}: `axis` is required for inputs with more than one "
                             f"dimension (got {ndim}); pass axis= (or dim=)")
        return 0
    return normalize_axis(axis, _bmax(ndim, 1))[0]


def _scan(B, fn, x, axis, dtype, include_initial, name):
    a = _scan_axis(axis, x.ndim, name)
    if x.ndim == 0:  # as torch: a 0-d input scans as one element
        r = fn(B.reshape(x, (1,)), axis=0, dtype=dtype, include_initial=include_initial)
        return r if include_initial else B.reshape(r, ())
    return fn(x, axis=a, dtype=dtype, include_initial=include_initial)


def _revcumsum(F, g, a):
    return _flip(F.cumulative_sum(_flip(g, a), axis=a), a)


def _drop_initial(F, arr, x, a, include_initial):
    """The scan output ``arr`` without its initial element (and in ``x``'s shape)."""
    if include_initial:
        arr = arr[_slice_along(_bmax(arr.ndim, 1), a, slice(1, None))]
    if x.ndim == 0:
        arr = F.reshape(arr, ())
    return arr


def _cumsum_vjp(F, g, out, x, axis=None, dtype=None, include_initial=False):
    a = _scan_axis(axis, x.ndim, "cumulative_sum")
    g = _drop_initial(F, g, x, a, include_initial)
    return g if x.ndim == 0 else _revcumsum(F, g, a)


@defop(kind=SCAN, domain=Domain((-2.0, 2.0), complex=True), sample=_sample_scan)
def cumulative_sum(B, x, *, axis=None, dtype=None, include_initial=False):
    """Cumulative sum along ``axis`` (array-API ``cumulative_sum``; NumPy's ``cumsum``).

    Parameters
    ----------
    x : Tensor
    axis : int, optional
        Axis to scan (alias ``dim``); required when ``x`` has more than one dimension.
    dtype : dtype, optional
        Accumulate and return in this dtype.
    include_initial : bool
        Prepend the sum of no elements (zero): the result is one longer along ``axis``.

    Examples
    --------
    >>> import ndgrad
    >>> x = ndgrad.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    >>> ndgrad.cumulative_sum(x, axis=1)
    tensor([[ 1.,  3.,  6.],
            [ 4.,  9., 15.]])
    >>> ndgrad.cumulative_sum(ndgrad.tensor([1.0, 2.0]), include_initial=True)
    tensor([0., 1., 3.])
    """
    return _scan(B, B.cumulative_sum, x, axis, dtype, include_initial, "cumulative_sum")


cumulative_sum.defvjp(_cumsum_vjp)
cumulative_sum.defjvp_linear()


def _cumprod_zero_masks(F, x, a):
    z = F.equal(x, 0)
    c = F.cumulative_sum(z, axis=a)          # number of zeros up to and including here
    before = F.equal(c, 0)                   # before the first zero
    first = F.equal(F.where(z, c, 0), 1)     # the first zero
    between = F.equal(F.where(z, 0, c), 1)   # strictly between the first and second zeros
    return c, before, first, between


def _iota(F, ndim, a, n, like):
    """0, 1, ..., n-1 along axis ``a`` of an ``ndim``-dim array (length 1 elsewhere), on
    ``like``'s device."""
    shape = tuple(n if k == a else 1 for k in range(ndim))
    return F.cumulative_sum(F.ones(shape, like=like), axis=a) - 1


def _cumprod_pairs(F, x, a):
    """(P, ge): ``P[.., i, k, ..] = prod_{j <= k, j != i} x_j`` over the scanned axis ``a``
    (split into axes a: i and a+1: k), and the mask ``k >= i``. O(n^2): exact to any order."""
    n = x.shape[a]
    r = _iota(F, x.ndim, a, n, x)
    ri = F.expand_dims(r, a + 1)             # i along axis a
    rk = F.expand_dims(r, a)                 # k along axis a + 1
    xs = F.where(F.equal(ri, rk), 1, F.expand_dims(x, a))   # x_j with x_i replaced by 1
    return F.cumulative_prod(xs, axis=a + 1), F.greater_equal(rk, ri)


def _cumprod_vjp(F, g, out, x, axis=None, dtype=None, include_initial=False):
    a = _scan_axis(axis, x.ndim, "cumulative_prod")
    g = _drop_initial(F, g, x, a, include_initial)
    if x.ndim == 0 or x.shape[a] <= 1:
        return g
    out = _drop_initial(F, out, x, a, include_initial)
    taped = _is_taped(g, x, out)
    if _divides_exactly(F, x, out, taped):
        return _revcumsum(F, g * F.conj(out), a) / F.conj(x)
    if taped:
        # Note [Products with zeros]: dx_i = sum_{k >= i} g_k conj(prod_{j <= k, j != i} x_j)
        P, ge = _cumprod_pairs(F, x, a)
        return F.sum(F.where(ge, F.expand_dims(g, a) * F.conj(P), 0), axis=a + 1)
    c, before, first, between = _cumprod_zero_masks(F, x, a)
    if not _exact_before_first_zero(F, x, out, before):
        return _cumprod_vjp_scan(F, g, x, a)
    # first order, O(n): before the first zero dx_i = revcumsum(g out)_i / x_i; at the first
    # zero z, dx_z = prod_{j<z} x_j * sum_{z <= k < z2} g_k prod_{z<j<=k} x_j; elsewhere 0.
    xs = F.where(before, x, 1)
    dx_before = _revcumsum(F, g * F.conj(out), a) / F.conj(xs)
    tail = F.cumulative_prod(F.where(between, x, 1), axis=a)
    s = F.sum(F.where(F.equal(c, 1), g, 0) * F.conj(tail), axis=a, keepdims=True)
    excl = F.cumulative_prod(x, axis=a, include_initial=True)[
        _slice_along(x.ndim, a, slice(None, -1))]
    return F.where(before, dx_before, F.where(first, s * F.conj(excl), 0))


def _exact_before_first_zero(F, x, out, before):
    """Whether the first-order zero formula's division (before the first zero) is exact:
    the factors and products there are finite normal numbers."""
    return bool(F.all(F.where(before, _normal(F, x) & _normal(F, out), True)))


def _cumprod_vjp_scan(F, g, x, a):
    """dx_i = conj(prod_{j<i} x_j) S_i with S_i = g_i + conj(x_(i+1)) S_(i+1): exact for any
    factors, tiny, huge or zero (no division; O(n) steps along the axis, first order on raw
    arrays only: Note [Products with zeros])."""
    n = x.shape[a]
    nd = x.ndim
    excl = F.cumulative_prod(x, axis=a, include_initial=True)[_slice_along(nd, a, slice(None, -1))]
    S = [None] * n
    S[n - 1] = g[_slice_along(nd, a, slice(n - 1, n))]
    for i in range(n - 2, -1, -1):
        S[i] = g[_slice_along(nd, a, slice(i, i + 1))] + \
            F.conj(x[_slice_along(nd, a, slice(i + 1, i + 2))]) * S[i + 1]
    return F.conj(excl) * F.concat(S, axis=a)


def _cumprod_jvp_scan(F, t, x, a):
    """d out_k = d out_(k-1) x_k + out_(k-1) t_k (the product rule along the axis): exact for
    any factors (no division; O(n) steps, first order on raw arrays only)."""
    n = x.shape[a]
    nd = x.ndim
    excl = F.cumulative_prod(x, axis=a, include_initial=True)
    T = [t[_slice_along(nd, a, slice(0, 1))]]
    for k in range(1, n):
        sl = _slice_along(nd, a, slice(k, k + 1))
        T.append(T[k - 1] * x[sl] + excl[sl] * t[sl])
    return F.concat(T, axis=a)


def _prepend_zero(F, r, x, a, include_initial):
    if x.ndim == 0:
        return F.concat([F.zeros_like(F.reshape(r, (1,))), F.reshape(r, (1,))], axis=0) \
            if include_initial else r
    if not include_initial:
        return r
    return F.concat([F.zeros_like(r[_slice_along(r.ndim, a, slice(0, 1))]), r], axis=a)


def _cumprod_jvp(F, tangents, out, x, axis=None, dtype=None, include_initial=False):
    t = tangents[0]
    a = _scan_axis(axis, x.ndim, "cumulative_prod")
    if x.ndim == 0:
        return _prepend_zero(F, t, x, a, include_initial)
    taped = _is_taped(t, x, out)
    if _divides_exactly(F, x, out, taped):
        return out * F.cumulative_sum(t / x, axis=a, include_initial=include_initial)
    if taped:
        P, ge = _cumprod_pairs(F, x, a)
        r = F.sum(F.where(ge, F.expand_dims(t, a + 1) * P, 0), axis=a)
        return _prepend_zero(F, r, x, a, include_initial)
    out = _drop_initial(F, out, x, a, include_initial)
    c, before, first, between = _cumprod_zero_masks(F, x, a)
    if not _exact_before_first_zero(F, x, out, before):
        return _prepend_zero(F, _cumprod_jvp_scan(F, t, x, a), x, a, include_initial)
    xs = F.where(before, x, 1)
    excl = F.cumulative_prod(x, axis=a, include_initial=True)[
        _slice_along(x.ndim, a, slice(None, -1))]
    tz = F.sum(F.where(first, t * excl, 0), axis=a, keepdims=True)   # t_z prod_{j<z} x_j
    tail = F.cumulative_prod(F.where(between, x, 1), axis=a)
    r = F.where(before, out * F.cumulative_sum(t / xs, axis=a),
                F.where(F.equal(c, 1), tz * tail, 0))
    return _prepend_zero(F, r, x, a, include_initial)


@defop(kind=SCAN, domain=Domain((-2.0, 2.0), complex=True), sample=_sample_cumprod)
def cumulative_prod(B, x, *, axis=None, dtype=None, include_initial=False):
    """Cumulative product along ``axis`` (array-API ``cumulative_prod``; NumPy's ``cumprod``).

    The gradient is exact when the input has zeros, as ``torch.cumprod``'s.

    Parameters
    ----------
    x : Tensor
    axis : int, optional
        Axis to scan (alias ``dim``); required when ``x`` has more than one dimension.
    dtype : dtype, optional
        Accumulate and return in this dtype.
    include_initial : bool
        Prepend the product of no elements (one): the result is one longer along ``axis``.

    Examples
    --------
    >>> import ndgrad
    >>> x = ndgrad.tensor([2.0, 0.0, 3.0], requires_grad=True)
    >>> y = ndgrad.cumulative_prod(x)
    >>> y
    tensor([2., 0., 0.], grad_fn=<CumulativeProdBackward0>)
    >>> y.sum().backward()
    >>> x.grad
    tensor([1., 8., 0.])
    """
    return _scan(B, B.cumulative_prod, x, axis, dtype, include_initial, "cumulative_prod")


cumulative_prod.defvjp(_cumprod_vjp)
cumulative_prod.defjvp(_cumprod_jvp)


# ----------------------------------------------------------------------------- vector_norm
def _check_vector_ord(name, ord):
    """A vector norm's ``ord`` as a float (None: 2); strings and other objects are refused."""
    if ord is None:
        return 2
    if isinstance(ord, (bool, str)) or not hasattr(ord, "__float__"):
        raise ValueError(f"{name}: ord must be a number (p, 0, inf or -inf), got {ord!r}; "
                         "'fro' and 'nuc' are matrix norms (ndgrad.linalg.matrix_norm)")
    ord = float(ord)
    if math.isnan(ord):
        raise ValueError(f"{name}: ord must be a number, not NaN")
    return ord


def _norm_weights(F, x, n, ord, axis):
    """``w`` with ``d ||x||_p = sum Re(conj(w) dx)``: ``x |x|^(p-2) / n^(p-1)`` for finite
    ``p != 0`` (0 at ``x = 0``, where it is a subgradient for ``p <= 1``), and for ``p = +-inf``
    the phase of the extreme entries, shared evenly between ties (as PyTorch does); ``n`` is
    the norm with the reduced axes kept."""
    ax = F.abs(x)
    if ord in (math.inf, -math.inf):
        hit = F.astype(F.equal(ax, n), ax.dtype)
        count = F.sum(hit, axis=axis, keepdims=True)
        return F.sign(x) * (hit / count)
    zero_n = F.equal(n, 0)
    n_safe = F.where(zero_n, F.ones_like(n), n)
    if ord == 2:
        return x / n_safe
    if ord == 1:
        return F.sign(x)
    zero_x = F.equal(ax, 0)
    ax_safe = F.where(zero_x, F.ones_like(ax), ax)
    # (x / n) (|x| / n)^(p-2): ratios of order one (x |x|^(p-2) / n^(p-1) under- or
    # overflowed at |x| of 1e-150 for p = 3: Note [Linear algebra at extreme scales])
    w = (x / n_safe) * (ax_safe / n_safe) ** (ord - 2)
    return F.where(zero_x, F.zeros_like(w), w) if ord < 1 else w


def _vector_norm_vjp(F, g, out, x, *, ord=2, axis=None, keepdims=False):
    ord = _check_vector_ord("vector_norm", ord)
    if ord == 0:
        return F.zeros_like(x)  # a count: piecewise constant
    n = unreduce(F, out, x.shape, axis, keepdims)
    return unreduce(F, g, x.shape, axis, keepdims) * _norm_weights(F, x, n, ord, _axes(axis, x))


def _vector_norm_jvp(F, tangents, out, x, *, ord=2, axis=None, keepdims=False):
    ord = _check_vector_ord("vector_norm", ord)
    if ord == 0:
        return F.zeros_like(out)
    n = unreduce(F, out, x.shape, axis, keepdims)
    w = _norm_weights(F, x, n, ord, _axes(axis, x))
    prod = F.real(F.conj(w) * tangents[0]) if F.iscomplexobj(w) else w * tangents[0]
    return F.sum(prod, axis=axis, keepdims=keepdims)


def _axes(axis, x):
    return tuple(range(x.ndim)) if axis is None else axis


def _norm_sample_values(d, shape):
    """Entries of distinct moduli in [0.3, 1.8] with random signs (phases for complex): no
    zeros (kinks of |x|), no ties of the largest or smallest modulus."""
    np = sample_numpy()
    size = int(np.prod(shape)) if shape else 1
    perm = np.asarray(d.permutation(size), dtype=np.float64)
    mag = 0.3 + (perm + d.array((size,), 0.1, 0.9, dtype=np.float64)) * (1.5 / size)
    if d.dtype.kind == "c":
        phase = np.exp(1j * d.array((size,), -3.1, 3.1, dtype=np.float64))
        return (mag * phase).reshape(shape).astype(d.dtype)
    sign = np.where(d.bool_array((size,)), 1.0, -1.0)
    return (mag * sign).reshape(shape).astype(d.dtype)


def _sample_vector_norm(d):
    shape = d.shape(max_dims=3, max_side=3)
    x = _norm_sample_values(d, shape)
    ndim = len(shape)
    kw = {"ord": d.choice([2, 1, math.inf, -math.inf, 0, 3, 0.5, -1.5])}
    if ndim and d.boolean():
        kw["axis"] = d.choice([d.axis(ndim, none=False), d.axes(ndim)])
    if d.boolean():
        kw["keepdims"] = True
    return (x,), kw


@defop(kind=REDUCTION, domain=Domain((-2.0, 2.0), complex=True), sample=_sample_vector_norm,
       namespace="linalg")
def vector_norm(B, x, *, ord=2, axis=None, keepdims=False):
    """Vector norm over ``axis`` (all axes, i.e. the flattened array, by default): the array
    API's ``linalg.vector_norm`` (``ord``, ``axis`` and ``keepdims`` are keyword-only, as
    there; PyTorch's ``dim`` / ``keepdim`` are accepted too).

    ``ord``: ``p`` (any real number but 0) gives ``(sum |x|^p)^(1/p)``; ``inf`` and ``-inf``
    the largest and smallest modulus; ``0`` the number of non-zero entries.

    Parameters
    ----------
    x : Tensor
    ord : float
        Default 2 (Euclidean).
    axis : int, tuple of int or None
        The axes reduced; a tuple treats them together as one vector.
    keepdims : bool
        Keep the reduced axes as length-1 dimensions.

    Notes
    -----
    Differentiable wherever the norm is (``ord=0`` has zero gradient). At ``x = 0`` the
    gradient of the 2-norm is 0 (a subgradient, as PyTorch's), as are the ``|x_i|``-kinks of
    ``p <= 1``; ties of the ``inf``/``-inf`` norms share the gradient evenly.

    Examples
    --------
    >>> import ndgrad
    >>> x = ndgrad.tensor([3.0, -4.0], requires_grad=True)
    >>> n = ndgrad.linalg.vector_norm(x)
    >>> n
    tensor(5., grad_fn=<LinalgVectorNormBackward0>)
    >>> n.backward()
    >>> x.grad
    tensor([ 0.6, -0.8])
    >>> ndgrad.linalg.vector_norm(x.detach(), ord=float("inf"))
    tensor(4.)
    """
    ord = _check_vector_ord("vector_norm", ord)
    if ord in (0, 1, math.inf, -math.inf) or not x.size:
        # (no powers: nothing under- or overflows that the norm itself would not)
        return B.linalg.vector_norm(x, ord=ord, axis=axis, keepdims=keepdims)
    with B.errstate(over="ignore", divide="ignore"):  # (|x|^p out of range: caught below)
        n = B.linalg.vector_norm(x, ord=ord, axis=axis, keepdims=keepdims)
    if B.reads_values:
        # where n^p is within 2^+-900, no |x_i|^p overflowed (each is at most the sum) and
        # those that underflowed are below 2^-120 of the sum: NumPy's result is exact enough
        lg = B.abs(B.log2(B.where(n > 0, n, 1.0))) * abs(ord)
        if bool(B.all((n > 0) & (lg < 900.0))):
            return n
    return _vector_norm_scaled(B, x, ord, axis, keepdims)


def _vector_norm_scaled(B, x, ord, axis, keepdims):
    """The p-norm in units of a power of two near the largest modulus of each slice (the
    smallest, for ``p < 0``, which the norm is at most): ``|x|^p`` under- or overflows at
    ``|x|`` of 1e-150 for ``p = 3`` (the norm came out 0), at 1e-170 for ``p = 2`` (Note
    [Linear algebra at extreme scales]). Scaling by the power of two is exact."""
    axes = tuple(range(x.ndim)) if axis is None else axis
    ax = B.abs(x)
    if ord < 0:  # the smallest modulus, as 1 / the largest reciprocal (inf at a zero: norm 0)
        with B.errstate(divide="ignore"):
            inv = 1 / inverse_scale_along(B, 1 / ax, axes)
    else:
        inv = inverse_scale_along(B, ax, axes)
    n = B.linalg.vector_norm(x * inv, ord=ord, axis=axis, keepdims=keepdims)
    return n / (inv if keepdims else B.reshape(inv, n.shape))


vector_norm.defvjp(_vector_norm_vjp)
vector_norm.defjvp(_vector_norm_jvp)
