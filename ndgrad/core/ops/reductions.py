"""Reductions and scans: sum, prod, mean, var, std, max, min, argmax, argmin, all, any,
logsumexp, cumulative_sum, cumulative_prod.

Reductions take ``axis`` (int, tuple or None) and ``keepdims``; the public functions also
accept PyTorch's ``dim`` / ``keepdim``. A vjp re-expands the cotangent with
:func:`expand_reduced`, which undoes ``keepdims=False``.
"""

from __future__ import annotations

from .registry import REDUCTION, Domain, defop


def normalize_axis(axis, ndim):
    """``axis`` as a sorted tuple of non-negative ints (None: every axis)."""
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, int) or hasattr(axis, "__index__"):
        axis = (int(axis),)
    out = []
    for a in axis:
        a = int(a)
        if not -max(ndim, 1) <= a < max(ndim, 1):
            raise ValueError(f"axis {a} is out of bounds for a tensor of dimension {ndim}")
        out.append(a % ndim if ndim else 0)
    if len(set(out)) != len(out):
        raise ValueError(f"repeated axis in {tuple(axis)}")
    return tuple(sorted(out))


def expand_reduced(F, g, x_shape, axis, keepdims):
    """Broadcast a reduced cotangent ``g`` back to ``x_shape``."""
    if not keepdims and axis is not None and len(x_shape):
        axes = normalize_axis(axis, len(x_shape))
        shape = tuple(1 if k in axes else s for k, s in enumerate(x_shape))
        g = F.reshape(g, shape)
    return F.broadcast_to(g, x_shape)


@defop(kind=REDUCTION, domain=Domain((-2.0, 2.0), complex=True))
def sum(B, x, axis=None, keepdims=False):
    """Sum of elements over ``axis`` (all axes by default).

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
    return B.sum(x, axis=axis, keepdims=keepdims)


sum.defvjp(lambda F, g, out, x, axis=None, keepdims=False:
           expand_reduced(F, g, x.shape, axis, keepdims))
sum.defjvp_linear()
