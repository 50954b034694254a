"""NumPy's ``apply_along_axis`` and ``apply_over_axes``: a Python function applied to slices
of an array, written from the shape primitives (the function's own operations are recorded
as it runs on Tensors).
"""

from __future__ import annotations

import itertools

from ..core.ops.indexing import _axis
from ..core.ops.registry import SHAPE, defcomposite
from ..core.ops.shape import _as_int_tuple
from ._arraylike import _ANYC, _arr, _nd, _view


# ------------------------------------------------------------------------------ apply
def _aa_sum_squares(v):
    return (v * v).sum()


def _aa_reverse_scaled(v, scale=1.0):
    return v[::-1] * scale


def _aa_outer(v):
    return v[:, None] * v[None, :]


def _sample_apply_along_axis(d):
    shape = d.shape(min_dims=1, max_dims=3, max_side=3)
    func = d.choice([_aa_sum_squares, _aa_reverse_scaled, _aa_outer])
    args = (d.choice([2.0, -0.5]),) if func is _aa_reverse_scaled and d.boolean() else ()
    return (func, d.axis(len(shape), none=False), d.array(shape)) + args, {}


@defcomposite(nin=3, kind=SHAPE, domain=_ANYC, method=False, sample=_sample_apply_along_axis)
def apply_along_axis(F, func1d, axis, arr, *args, **kwargs):
    """``func1d(v, *args, **kwargs)`` for every 1-D slice ``v`` of ``arr`` along ``axis``,
    the results (all of one shape) put where the slices were: the result's dimensions
    replace ``axis`` (NumPy's ``apply_along_axis``). ``func1d`` gets differentiable tensors.

    Examples
    --------
    >>> import ndgrad
    >>> x = ndgrad.tensor([[1.0, 2.0], [3.0, 4.0]])
    >>> ndgrad.apply_along_axis(lambda v: v[0] * v[1], 1, x)
    tensor([ 2., 12.])
    """
    arr = _arr(F, arr)
    nd = _nd(arr)
    ax = _axis("apply_along_axis", axis, nd)
    moved = arr if ax == nd - 1 else F.moveaxis(arr, ax, -1)
    outer = tuple(moved.shape[:-1])
    if any(s == 0 for s in outer):
        raise ValueError("apply_along_axis: cannot apply_along_axis when any iteration "
                         "dimensions are 0")
    results = []
    for idx in itertools.product(*(range(s) for s in outer)):
        r = _arr(F, func1d(moved[idx], *args, **kwargs), arr)
        if results and tuple(r.shape) != tuple(results[0].shape):
            raise ValueError(f"apply_along_axis: func1d returned shape {tuple(r.shape)} for "
                             f"the slice at {idx}, and {tuple(results[0].shape)} for the "
                             "first")
        results.append(r)
    res_shape = tuple(results[0].shape)
    out = F.stack(results, axis=0) if len(results) > 1 else F.expand_dims(results[0], 0)
    out = F.reshape(out, outer + res_shape)
    k, r = len(outer), len(res_shape)
    perm = tuple(range(ax)) + tuple(range(k, k + r)) + tuple(range(ax, k))
    return out if perm == tuple(range(k + r)) else F.permute_dims(out, perm)


def _aoa_sum(x, axis):
    return x.sum(axis=axis)


def _aoa_sum_squares_keepdims(x, axis):
    return (x * x).sum(axis=axis, keepdims=True)


def _sample_apply_over_axes(d):
    shape = d.shape(min_dims=1, max_dims=3, max_side=3)
    n = len(shape)
    perm = d.permutation(n)
    axes = d.choice([perm[0] - n if d.boolean() else perm[0],
                     list(perm[:d.integers(1, n)])])
    return (d.choice([_aoa_sum, _aoa_sum_squares_keepdims]), d.array(shape), axes), {}


@defcomposite(nin=2, kind=SHAPE, domain=_ANYC, method=False, sample=_sample_apply_over_axes)
def apply_over_axes(F, func, a, axes):
    """``func(a, axis)`` applied over each of ``axes`` in turn, a reduced axis put back as
    a length-1 axis (NumPy's ``apply_over_axes``): ``func`` must keep ``a``'s number of
    dimensions or remove one.

    Examples
    --------
    >>> import ndgrad
    >>> x = ndgrad.arange(6.0).reshape(2, 3)
    >>> ndgrad.apply_over_axes(ndgrad.sum, x, [0, 1])
    tensor([[15.]])
    """
    val = _view(F, _arr(F, a))
    n = _nd(val)
    for axis in _as_int_tuple(axes):  # (an int, or a sequence or 1-D array of them)
        if axis < 0:
            axis += n
        res = _arr(F, func(val, axis), val)
        if _nd(res) != _nd(val):
            res = F.expand_dims(res, axis=axis)
            if _nd(res) != _nd(val):
                raise ValueError("apply_over_axes: function is not returning an array of the "
                                 "correct shape")
        val = res
    return val
