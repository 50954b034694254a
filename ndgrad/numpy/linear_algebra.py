"""``numpy.linalg``'s functions written from the linalg primitives, declared in the
``linalg`` namespace: ``tensorsolve``, ``tensorinv``, ``cond``. (The public module is
``ndgrad.linalg``, which also holds the primitives and scipy.linalg's functions: Note
[The linalg and fft namespaces] in ndgrad/scipy/linalg.py. This file is not named ``linalg.py``:
``ndgrad.numpy.linalg`` is that public module.)
"""

from __future__ import annotations

import builtins
import math

from ..core.ops.dense_linalg import LinAlgError
from ..core.ops.linalg import _eye
from ..core.ops.reductions import inverse_scale_along
from ..core.ops.registry import LINALG, defcomposite, sample_numpy
from ..core.ops.special import _stop
from ._arraylike import _ANYC, _arr


# ------------------------------------------------------------------------ numpy.linalg
def _sample_tensorsolve(d):
    np = sample_numpy()
    bshape = d.choice([(2,), (2, 2), (3,), (1, 3)])
    q = math.prod(bshape)
    rest = d.choice([(q,), bshape[::-1]])
    a = d.matrix((q, q)).reshape(tuple(bshape) + tuple(rest))
    if d.boolean():  # axes: the axis given is moved last, so put it first here
        return (np.moveaxis(a, -1, 0), d.array(bshape)), {"axes": (0,)}
    return (a, d.array(bshape)), {}


@defcomposite(kind=LINALG, nin=2, domain=_ANYC, sample=_sample_tensorsolve,
              namespace="linalg")
def tensorsolve(F, a, b, axes=None):
    """The ``x`` with ``tensordot(a, x, axes=x.ndim) == b``: ``a`` of shape
    ``b.shape + x.shape`` (after moving ``axes`` of ``a`` to the end), solved as one square
    system (NumPy's ``tensorsolve``); differentiable in ``a`` and ``b``.

    Examples
    --------
    >>> import ndgrad
    >>> a = ndgrad.reshape(ndgrad.tensor([2.0, 0.0, 0.0, 0.0, 0.0, 4.0, 0.0, 0.0,
    ...                                   0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 8.0]), (2, 2, 4))
    >>> ndgrad.linalg.tensorsolve(a, ndgrad.tensor([[2.0, 4.0], [3.0, 8.0]]))
    tensor([1., 1., 3., 1.])
    """
    a, b = _arr(F, a), _arr(F, b)
    an = len(a.shape)
    if axes is not None:
        order = list(builtins.range(an))
        for k in axes:
            if k not in order:
                raise ValueError(f"tensorsolve: axes {tuple(axes)!r} must be distinct "
                                 f"non-negative axes of a ({an}-D)")
            order.remove(k)
            order.append(k)
        a = F.permute_dims(a, tuple(order))
    old = tuple(a.shape[-(an - len(b.shape)):])  # (NumPy's slice: all of a's when equal)
    size = math.prod(old)
    if math.prod(a.shape) != size ** 2:
        raise LinAlgError("tensorsolve: input arrays must satisfy the requirement "
                          "prod(a.shape[b.ndim:]) == prod(a.shape[:b.ndim]); got shapes "
                          f"{tuple(a.shape)} and {tuple(b.shape)}")
    x = F.linalg.solve(F.reshape(a, (size, size)), F.reshape(b, (-1,)))
    return F.reshape(x, old)


def _sample_tensorinv(d):
    shape, ind = d.choice([((4, 2, 2), 1), ((2, 3, 6), 2), ((2, 2, 2, 2), 2), ((3, 3), 1)])
    q = math.prod(shape[ind:])
    return (d.matrix((q, q)).reshape(shape),), {"ind": ind}


@defcomposite(kind=LINALG, domain=_ANYC, sample=_sample_tensorinv, namespace="linalg")
def tensorinv(F, a, ind=2):
    """The inverse of ``a`` for :func:`tensordot` over ``ind`` axes: shape
    ``a.shape[ind:] + a.shape[:ind]`` (NumPy's ``tensorinv``); differentiable.

    Examples
    --------
    >>> import ndgrad
    >>> a = ndgrad.reshape(ndgrad.tensor([2.0, 0.0, 0.0, 0.0, 0.0, 4.0, 0.0, 0.0,
    ...                                   0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 8.0]), (4, 2, 2))
    >>> ndgrad.linalg.tensorinv(a, ind=1).shape
    (2, 2, 4)
    """
    a = _arr(F, a)
    if ind <= 0:
        raise ValueError(f"tensorinv: invalid ind argument {ind!r} (must be positive)")
    old = tuple(a.shape)
    size = math.prod(old[ind:])
    inv = F.linalg.inv(F.reshape(a, (size, -1)))
    return F.reshape(inv, old[ind:] + old[:ind])


def _sample_cond(d):
    p = d.choice([None, 2, -2, "fro", "nuc", math.inf, -math.inf, 1, -1])
    batch = d.choice([(), (2,)])
    n = d.integers(1, 3)
    m = d.integers(1, 3) if p in (None, 2, -2) else n
    return (d.matrix(batch + (m, n)),), {"p": p}


@defcomposite(kind=LINALG, domain=_ANYC, sample=_sample_cond, namespace="linalg")
def cond(F, x, p=None):
    """The condition number of ``x`` (a matrix or a stack) in the norm ``p``: the ratio of
    the largest to the smallest singular value for ``p`` None or 2 (``-2``: its inverse),
    else ``norm(x, p) * norm(inv(x), p)`` for ``'fro'``, ``'nuc'``, ``inf``, ``-inf``, 1,
    -1 (square ``x``), as NumPy's ``cond``; ``inf`` for a singular matrix.

    Differentiable: through :func:`ndgrad.linalg.svdvals` (distinct singular values) or the
    norms and the inverse.

    Examples
    --------
    >>> import ndgrad
    >>> x = ndgrad.tensor([[1.0, 0.0], [0.0, 4.0]])
    >>> ndgrad.linalg.cond(x)
    tensor(4.)
    >>> ndgrad.linalg.cond(x, 1)
    tensor(4.)
    """
    x = _arr(F, x)
    if len(x.shape) < 2:
        raise LinAlgError(f"cond: {len(x.shape)}-dimensional array given. Array must be at "
                          "least two-dimensional")
    if x.shape[-1] * x.shape[-2] == 0:
        raise LinAlgError("cond is not defined on empty arrays")
    # cond(c x) = cond(x): computed on x / c, c the power of two near max |x| of each matrix
    # (exact, and a constant for every derivative: Note [Linear algebra at extreme scales] in
    # dense_linalg.py). norm(x) norm(inv(x)) differentiates through |x|^-3 (inv's second
    # derivative): with |x| of 2^500 the second derivative of the 'fro' condition number was
    # a third or less of the truth, 1e-301 (nan at 2^-500), at 2^1019 its jvp 1/8 or -6
    # times the truth, 1e-307
    x = x * inverse_scale_along(F, x, (-2, -1))
    if p is None or (not isinstance(p, str) and p in (2, -2)):
        s = F.linalg.svdvals(x)
        return s[..., -1] / s[..., 0] if p == -2 else s[..., 0] / s[..., -1]
    if x.shape[-1] != x.shape[-2]:
        raise LinAlgError(f"cond: last 2 dimensions of the array must be square for p={p!r}, "
                          f"got shape {tuple(x.shape)}")
    try:
        inv = F.linalg.inv(x)
    except LinAlgError:  # NumPy: inf where a matrix is singular (an exactly zero pivot)
        singular = F.equal(F.linalg.det(_stop(x)), 0)
        mask = F.expand_dims(F.expand_dims(singular, -1), -1)
        eye = _eye(F, x.shape[-1], x.shape[-1], 0, x)
        r = F.linalg.matrix_norm(x, ord=p) * F.linalg.matrix_norm(
            F.linalg.inv(F.where(mask, eye, x)), ord=p)
        return F.where(singular, math.inf, r)
    return F.linalg.matrix_norm(x, ord=p) * F.linalg.matrix_norm(inv, ord=p)
