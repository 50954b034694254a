"""Shape primitives: reshape, permute_dims, moveaxis, expand_dims, squeeze, broadcast_to,
broadcast_arrays, concat, stack, split, unstack, flip, roll, tile, repeat, pad, tril, triu,
clone, astype.

All are linear, so their jvp is the op applied to the tangent; their vjp rules route the
cotangent back to the input's layout.
"""

from __future__ import annotations

from .registry import SHAPE, Domain, defop

ANY = Domain((-2.0, 2.0), complex=True)


@defop(kind=SHAPE, domain=ANY, view=True)
def reshape(B, x, shape):
    """Give ``x`` a new shape with the same number of elements (``-1`` infers one size).

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.reshape(ndgrad.arange(6.0), (2, 3)).shape
    (2, 3)
    >>> ndgrad.arange(6.0).reshape(3, 2).shape
    (3, 2)
    """
    return B.reshape(x, shape)


reshape.defvjp(lambda F, g, out, x, shape: F.reshape(g, x.shape))
reshape.defjvp_linear()


@defop(kind=SHAPE, domain=ANY, method=False)
def broadcast_to(B, x, shape):
    """Broadcast ``x`` to ``shape`` (NumPy rules).

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.broadcast_to(ndgrad.tensor([1.0, 2.0]), (2, 2))
    tensor([[1., 2.],
            [1., 2.]])
    """
    return B.broadcast_to(x, shape)


# the engine sums the cotangent back to x's shape
broadcast_to.defvjp(lambda F, g, out, x, shape: g)
broadcast_to.defjvp_linear()


@defop(kind=SHAPE, domain=ANY)
def expand_dims(B, x, axis):
    """Insert a length-1 dimension at ``axis``.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.expand_dims(ndgrad.ones(3), 0).shape
    (1, 3)
    """
    return B.expand_dims(x, axis)


expand_dims.defvjp(lambda F, g, out, x, axis: F.reshape(g, x.shape))
expand_dims.defjvp_linear()


@defop(kind=SHAPE, domain=ANY)
def squeeze(B, x, axis=None):
    """Remove length-1 dimensions (those in ``axis``, or all).

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.squeeze(ndgrad.ones(1, 3, 1)).shape
    (3,)
    """
    return B.squeeze(x, axis=axis)


squeeze.defvjp(lambda F, g, out, x, axis=None: F.reshape(g, x.shape))
squeeze.defjvp_linear()


@defop(kind=SHAPE, domain=ANY, method=False)
def clone(B, x):
    """A copy of ``x`` with its own storage (differentiable).

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.clone(ndgrad.tensor([1.0]))
    tensor([1.])
    """
    return B.array(x, copy=True)


clone.defvjp(lambda F, g, out, x: g)
clone.defjvp_linear()


@defop(kind=SHAPE, domain=Domain((-2.0, 2.0)), method=False)
def astype(B, x, dtype):
    """Cast ``x`` to ``dtype``; the gradient is cast back to ``x``'s dtype.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.astype(ndgrad.tensor([1.5]), ndgrad.float32).dtype
    dtype('float32')
    """
    return x.astype(dtype)


# the engine casts the cotangent to x's dtype (a real input keeps the real part)
astype.defvjp(lambda F, g, out, x, dtype: g)
astype.defjvp(lambda F, tangents, out, x, dtype: F.astype(tangents[0], dtype))
