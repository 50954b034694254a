"""Linear-algebra primitives of the core: matmul, tensordot, vecdot, einsum, outer,
matrix_transpose, trace, diagonal.

Matrix ops batch over leading dimensions with NumPy's broadcasting rules; 1-D operands of
matmul are promoted and the promotion undone, as NumPy does.
"""

from __future__ import annotations

from .registry import LINALG, Domain, defop


def _mT(F, a):
    return F.matrix_transpose(a) if a.ndim >= 2 else a


def _matmul_vjp_x(F, g, out, x, y):
    # out = x @ y, so dx = g @ y^H; 1-D operands are promoted and the promotion undone.
    # Batch dimensions the operand did not have are summed by the engine.
    if y.ndim == 1:  # (..., k) @ (k,) -> (...)
        return F.expand_dims(g, -1) * F.conj(y)
    if x.ndim == 1:  # (k,) @ (..., k, m) -> (..., m)
        return F.squeeze(F.matmul(F.conj(y), F.expand_dims(g, -1)), axis=-1)
    return F.matmul(g, _mT(F, F.conj(y)))


def _matmul_vjp_y(F, g, out, x, y):
    # dy = x^H @ g
    if x.ndim == 1:  # (k,) @ (..., k, m) -> (..., m); also covers 1-D @ 1-D
        if y.ndim == 1:
            return g * F.conj(x)
        return F.expand_dims(F.conj(x), -1) * F.expand_dims(g, -2)
    if y.ndim == 1:  # (..., n, k) @ (k,) -> (..., n)
        return F.squeeze(F.matmul(_mT(F, F.conj(x)), F.expand_dims(g, -1)), axis=-1)
    return F.matmul(_mT(F, F.conj(x)), g)


@defop(kind=LINALG, nin=2, domain=Domain((-2.0, 2.0), complex=True), method=False)
def matmul(B, x, y):
    """Matrix product with NumPy's rules (1-D promotion, broadcast batch dimensions).

    Examples
    --------
    >>> import ndgrad
    >>> a = ndgrad.tensor([[1.0, 2.0], [3.0, 4.0]])
    >>> ndgrad.matmul(a, ndgrad.tensor([1.0, 1.0]))
    tensor([3., 7.])
    """
    return B.matmul(x, y)


matmul.defvjp(_matmul_vjp_x, _matmul_vjp_y)
matmul.defjvp_each(lambda F, t, out, x, y: F.matmul(t, y),
                   lambda F, t, out, x, y: F.matmul(x, t))


@defop(kind=LINALG, domain=Domain((-2.0, 2.0), complex=True), view=True)
def matrix_transpose(B, x):
    """Swap the last two dimensions.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.matrix_transpose(ndgrad.ones(2, 3)).shape
    (3, 2)
    """
    if x.ndim < 2:
        raise ValueError(f"matrix_transpose needs at least 2 dimensions, got shape {x.shape}")
    return B.swapaxes(x, -1, -2)


matrix_transpose.defvjp(lambda F, g, out, x: F.matrix_transpose(g))
matrix_transpose.defjvp_linear()
