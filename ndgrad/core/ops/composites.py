"""Composite functions: written with ``F`` from primitives, so they need no rules of their
own; registered (``defcomposite``) so the property suite checks them like primitives.
"""

from __future__ import annotations

from .registry import SHAPE, VARIADIC, defcomposite


def _meshgrid_sample(d):
    n = d.integers(1, 3)
    xs = tuple(d.array((d.integers(1, 3),)) for _ in range(n))
    return xs, {"indexing": d.choice(["xy", "ij"])}


@defcomposite(nin=VARIADIC, sample=_meshgrid_sample, method=False, kind=SHAPE)
def meshgrid(F, *xi, indexing="xy"):
    """Coordinate grids from 1-D tensors (NumPy semantics; differentiable).

    Parameters
    ----------
    *xi : 1-D tensors
    indexing : {"xy", "ij"}
        Cartesian ("xy", NumPy's default) or matrix ("ij") indexing.

    Examples
    --------
    >>> import ndgrad
    >>> gx, gy = ndgrad.meshgrid(ndgrad.tensor([1.0, 2.0, 3.0]), ndgrad.tensor([4.0, 5.0]))
    >>> gx.shape, gy.shape
    ((2, 3), (2, 3))
    >>> gy
    tensor([[4., 4., 4.],
            [5., 5., 5.]])
    """
    if indexing not in ("xy", "ij"):
        raise ValueError(f"meshgrid: indexing must be 'xy' or 'ij', got {indexing!r}")
    n = len(xi)
    for k, x in enumerate(xi):
        if len(x.shape) != 1:
            raise ValueError(f"meshgrid expects 1-D inputs; input {k} has shape {tuple(x.shape)}")
    sizes = [x.shape[0] for x in xi]
    if indexing == "xy" and n >= 2:
        sizes[0], sizes[1] = sizes[1], sizes[0]
    out = []
    for k, x in enumerate(xi):
        axis = k
        if indexing == "xy" and n >= 2 and k < 2:
            axis = 1 - k
        shape = [1] * n
        shape[axis] = x.shape[0]
        out.append(F.broadcast_to(F.reshape(x, tuple(shape)), tuple(sizes)))
    return tuple(out)
