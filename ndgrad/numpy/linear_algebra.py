"""``numpy.linalg``'s functions written from the linalg primitives, declared in the
``linalg`` namespace: ``tensorsolve``, ``tensorinv``, ``cond``. (The public module is
``ndgrad.linalg``, which also holds the primitives and scipy.linalg's functions: Note
[The linalg and fft namespaces] in ndgrad/scipy/linalg.py. This file is not named ``linalg.py``:
``ndgrad.numpy.linalg`` is that public module.)
"""

from __future__ import annotations

import builtins
import math

from ..core.ops.solves import LinAlgError
from ..core.ops.contractions import _eye
from ..core.ops.reductions import inverse_scale_along
from ..core.ops.registry import LINALG, defcomposite, sample_numpy
from ..core.ops.special_shared import _stop
from ._arraylike import _ANYC, _arr
from ..core.ops.batching import is_batched
from ..core.ops.registry import VARIADIC
from ..core.ops.reductions import _check_vector_ord, _norm_sample_values
from ..core.ops.solves import (ANY, _INF, LstsqResult, _batch_shape, _bmax, _check_square,
                               _identity, _np)


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
    # solves.py). norm(x) norm(inv(x)) differentiates through |x|^-3 (inv's second
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


def _sample_logdet(d):
    n = d.integers(1, 3)
    return (d.spd_matrix(_batch_shape(d) + (n, n)),), {}


@defcomposite(domain=ANY, sample=_sample_logdet, namespace="linalg")
def logdet(F, a):
    """Natural logarithm of the determinant, from :func:`slogdet` (stable for ill-scaled
    matrices: ``det`` is never formed), as ``torch.logdet``.

    For real ``a`` it is ``nan`` where ``det(a) < 0`` and ``-inf`` where ``a`` is singular;
    for complex ``a`` it is the complex logarithm ``log|det| + i arg(det)``. Its gradient is
    ``g * a^-H`` (one solve), exact for ill-scaled matrices.

    Parameters
    ----------
    a : Tensor, shape (..., n, n)

    Examples
    --------
    >>> import ndgrad
    >>> a = ndgrad.tensor([[2.0, 0.0], [0.0, 3.0]], requires_grad=True)
    >>> ndgrad.linalg.logdet(a * 1e-200)   # det underflows to 0; its log does not
    tensor(-919.24227773, grad_fn=<WhereBackward0>)
    >>> ndgrad.linalg.logdet(a).backward()
    >>> a.grad                              # a^-T
    tensor([[0.5       , 0.        ],
            [0.        , 0.33333333]])
    """
    sign, logabsdet = F.linalg.slogdet(a)
    if F.iscomplexobj(sign):
        return F.log(sign) + logabsdet  # log of the unit complex sign is i arg(det)
    return F.where(sign < 0, float("nan"), logabsdet)


# ----------------------------------------------------------------------------- matrix_norm
_MATRIX_ORDS = ("fro", "nuc", 1, -1, 2, -2, _INF, -_INF)


def _check_matrix_ord(name, ord):
    ok = ord in ("fro", "nuc") if isinstance(ord, str) else \
        (not isinstance(ord, bool) and isinstance(ord, (int, float)) and ord in _MATRIX_ORDS)
    if not ok:
        raise ValueError(f"{name}: invalid norm order {ord!r} for matrices; use one of 'fro', "
                         "'nuc', 1, -1, 2, -2, inf, -inf (vector p-norms: "
                         "ndgrad.linalg.vector_norm)")
    return ord


def _matrix_norm_last2(F, x, ord):
    """The matrix norm of each matrix of ``x`` (last two axes), those axes removed."""
    if ord == "fro":
        return F.linalg.vector_norm(x, ord=2, axis=(-2, -1))
    if ord in (1, -1, _INF, -_INF):
        # largest (smallest) absolute column sum (ord 1) or row sum (ord inf)
        sums = F.sum(F.abs(x), axis=-2 if ord in (1, -1) else -1)
        return F.max(sums, axis=-1) if ord > 0 else F.min(sums, axis=-1)
    s = F.linalg.svdvals(x)
    if ord == "nuc":
        return F.sum(s, axis=-1)
    return F.max(s, axis=-1) if ord == 2 else F.min(s, axis=-1)


def _sample_matrix_norm(d):
    m, n = d.integers(1, 3), d.integers(1, 3)
    shape = _batch_shape(d, max_dims=1) + (m, n)
    ord = d.choice(_MATRIX_ORDS)
    x = d.matrix(shape) if ord in (2, -2, "nuc") else _norm_sample_values(d, shape)
    kw = {"ord": ord}
    if d.boolean():
        kw["keepdims"] = True
    return (x,), kw


@defcomposite(domain=ANY, sample=_sample_matrix_norm, namespace="linalg")
def matrix_norm(F, x, *, ord="fro", keepdims=False):
    """Matrix norm of each matrix of ``x`` (its last two axes): the array API's
    ``linalg.matrix_norm`` (``ord`` and ``keepdims`` keyword-only, as there).

    ``ord``: ``'fro'`` (Frobenius, default), ``'nuc'`` (nuclear: the sum of the singular
    values), ``2`` / ``-2`` (largest / smallest singular value), ``1`` / ``-1`` (largest /
    smallest absolute column sum), ``inf`` / ``-inf`` (largest / smallest absolute row sum).

    Parameters
    ----------
    x : Tensor, shape (..., m, n)
    ord : {'fro', 'nuc', 1, -1, 2, -2, inf, -inf}
    keepdims : bool
        Keep the two matrix axes as length-1 dimensions.

    Notes
    -----
    Differentiable, composed of differentiable functions: the singular-value norms
    (``2``, ``-2``, ``'nuc'``) through :func:`svdvals`, whose gradient needs distinct singular
    values (and is a subgradient choice where they repeat); the 1- and inf-norms through
    ``abs``, ``sum`` and ``max``/``min`` (ties share the gradient evenly).

    Examples
    --------
    >>> import ndgrad
    >>> x = ndgrad.tensor([[1.0, -2.0], [3.0, 4.0]])
    >>> ndgrad.linalg.matrix_norm(x, ord=1)
    tensor(6.)
    >>> ndgrad.linalg.matrix_norm(x, ord=float("inf"))
    tensor(7.)
    """
    ord = _check_matrix_ord("matrix_norm", ord)
    if len(x.shape) < 2:
        raise ValueError(f"matrix_norm: `x` must be a matrix or a stack of matrices "
                         f"(..., m, n), got shape {tuple(x.shape)}; for vectors use "
                         "vector_norm")
    r = _matrix_norm_last2(F, x, ord)
    return F.reshape(r, tuple(r.shape) + (1, 1)) if keepdims else r


# ----------------------------------------------------------------------------- norm
def _sample_norm(d):
    case = d.choice(["flat", "vector", "matrix"])
    if case == "flat":
        shape = d.shape(max_dims=3, max_side=3)
        kw = {} if d.boolean() else {"keepdims": True}
        return (_norm_sample_values(d, shape),), kw
    if case == "vector":
        shape = d.shape(min_dims=1, max_dims=2, max_side=3)
        kw = {"ord": d.choice([None, 2, 1, _INF, -_INF, 3])}
        if len(shape) > 1 or d.boolean():
            kw["axis"] = d.axis(len(shape), none=False)
        if d.boolean():
            kw["keepdims"] = True
        return (_norm_sample_values(d, shape),), kw
    ord = d.choice([None, "fro", "nuc", 1, -1, 2, -2, _INF, -_INF])
    m, n = d.integers(1, 3), d.integers(1, 3)
    if d.boolean():
        shape, kw = (m, n), {"ord": ord}
    else:  # a stack, the matrix axes given explicitly (in any order)
        shape = (2, m, n)
        kw = {"ord": ord, "axis": d.choice([(1, 2), (2, 1), (-2, -1), (0, 2)])}
        if kw["axis"] == (0, 2):
            shape = (m, 2, n)
    x = d.matrix(shape) if kw.get("axis") in (None, (1, 2), (-2, -1)) and \
        ord in (2, -2, "nuc") else _norm_sample_values(d, shape)
    if ord in (2, -2, "nuc") and kw.get("axis") in ((2, 1), (0, 2)):
        # distinct singular values for the transposed/strided matrices too
        x = _np().moveaxis(d.matrix((2, m, n)), (1, 2), kw["axis"]) if kw["axis"] == (2, 1) \
            else _np().moveaxis(d.matrix((2, m, n)), (1, 2), (0, 2))
    if d.boolean():
        kw["keepdims"] = True
    return (x,), kw


def _normalize_axis(axis, ndim, name):
    if not -ndim <= axis < ndim:
        raise ValueError(f"{name}: axis {axis} is out of bounds for an array of dimension "
                         f"{ndim}")
    return axis % ndim


@defcomposite(domain=ANY, sample=_sample_norm, namespace="linalg")
def norm(F, x, ord=None, axis=None, keepdims=False):
    """Matrix or vector norm with NumPy's ``numpy.linalg.norm`` rules.

    * ``axis=None``: with ``ord=None`` the 2-norm of the flattened array (any number of
      dimensions); otherwise ``x`` must be 1-D (a vector norm) or 2-D (a matrix norm).
    * ``axis`` an int: vector norms along it (:func:`vector_norm`).
    * ``axis`` a pair of ints: matrix norms over those two axes (:func:`matrix_norm`; the
      first names the rows).

    Parameters
    ----------
    x : Tensor
    ord : {None, number, inf, -inf, 'fro', 'nuc'}
        Vector orders are numbers; matrix orders are ``'fro'``, ``'nuc'``, 1, -1, 2, -2, inf,
        -inf. ``None``: 2 for vectors, ``'fro'`` for matrices.
    axis : None, int or pair of ints
    keepdims : bool

    Notes
    -----
    Differentiable as :func:`vector_norm` and :func:`matrix_norm`, which it calls.

    Examples
    --------
    >>> import ndgrad
    >>> x = ndgrad.tensor([[3.0, 4.0], [0.0, 0.0]])
    >>> ndgrad.linalg.norm(x)
    tensor(5.)
    >>> ndgrad.linalg.norm(x, axis=1)
    tensor([5., 0.])
    >>> ndgrad.linalg.norm(x, ord=1)
    tensor(4.)
    """
    ndim = len(x.shape)
    if axis is None:
        if ord is None:
            return F.linalg.vector_norm(x, ord=2, axis=None, keepdims=keepdims)
        if ndim == 1:
            axis = (0,)
        elif ndim == 2:
            axis = (0, 1)
        else:
            raise ValueError(f"norm: with an `ord` and no `axis`, `x` must be 1-D or 2-D, got "
                             f"{ndim} dimensions; pass `axis` (an int for vector norms, a pair "
                             "for matrix norms)")
    elif isinstance(axis, int) or hasattr(axis, "__index__"):
        axis = (int(axis),)
    else:
        axis = tuple(int(a) for a in axis)
    if len(axis) == 1:
        ord = _check_vector_ord("norm", ord)
        return F.linalg.vector_norm(x, ord=ord, axis=axis[0], keepdims=keepdims)
    if len(axis) != 2:
        raise ValueError(f"norm: `axis` must be None, an int or a pair of ints, got {axis}")
    row, col = (_normalize_axis(a, ndim, "norm") for a in axis)
    if row == col:
        raise ValueError(f"norm: the two axes must differ, got {axis}")
    ord = _check_matrix_ord("norm", "fro" if ord is None else ord)
    r = _matrix_norm_last2(F, F.moveaxis(x, (row, col), (-2, -1)), ord)
    if keepdims:
        shape = list(x.shape)
        shape[row] = shape[col] = 1
        r = F.reshape(r, tuple(shape))
    return r


# ----------------------------------------------------------------------------- matrix_power
def _sample_matrix_power(d):
    n = d.integers(1, 3)
    return (d.matrix(_batch_shape(d, max_dims=1) + (n, n)), d.integers(-3, 4)), {}


@defcomposite(domain=ANY, sample=_sample_matrix_power, namespace="linalg")
def matrix_power(F, a, n):
    """``a`` raised to the integer power ``n`` (matrix products, by repeated squaring).

    ``n = 0`` gives the identity, a negative ``n`` the power of :func:`inv` ``(a)``.

    Parameters
    ----------
    a : Tensor, shape (..., m, m)
    n : int

    Raises
    ------
    TypeError
        ``n`` is not an integer.
    LinAlgError
        ``a`` is not square, or ``n < 0`` and ``a`` is singular.

    Notes
    -----
    Differentiable (composed of ``matmul`` and ``inv``); ``n = 0`` has zero gradient.

    Examples
    --------
    >>> import ndgrad
    >>> a = ndgrad.tensor([[1.0, 1.0], [0.0, 1.0]])
    >>> ndgrad.linalg.matrix_power(a, 3)
    tensor([[1., 3.],
            [0., 1.]])
    >>> ndgrad.linalg.matrix_power(a, -1)
    tensor([[ 1., -1.],
            [ 0.,  1.]])
    """
    if isinstance(n, bool) or not (isinstance(n, int) or hasattr(n, "__index__")):
        raise TypeError(f"matrix_power: the exponent n must be an integer, got {n!r}")
    n = int(n.__index__()) if not isinstance(n, int) else n
    _check_square("matrix_power", a)
    if n == 0:
        # the identity, still a function of `a` (zero gradient), as torch returns it
        eye = _identity(F, a.shape[-1], a)
        return F.where(F.equal(F.zeros_like(a), 0), eye, a)
    if n < 0:
        a = F.linalg.inv(a)
        n = -n
    result = None
    base = a
    while True:
        if n & 1:
            result = base if result is None else F.matmul(result, base)
        n >>= 1
        if not n:
            break
        base = F.matmul(base, base)
    return F.clone(result) if result is a else result


# ----------------------------------------------------------------------------- multi_dot
def _sample_multi_dot(d):
    k = d.integers(2, 4)
    dims = [d.integers(1, 3) for _ in range(k + 1)]
    arrays = [d.array((dims[i], dims[i + 1])) for i in range(k)]
    if d.boolean():
        arrays[0] = d.array((dims[1],))
    if d.boolean():
        arrays[-1] = d.array((dims[-2],))
    return tuple(arrays), {}


def _chain_order(dims):
    """Optimal parenthesization of a matrix chain with shapes ``dims[i] x dims[i + 1]``
    (the classic O(k^3) dynamic programme): ``split[i][j]`` is where the product of
    matrices i..j splits."""
    k = len(dims) - 1
    cost = [[0] * k for _ in range(k)]
    split = [[0] * k for _ in range(k)]
    for length in range(1, k):
        for i in range(k - length):
            j = i + length
            best = None
            for s in range(i, j):
                c = cost[i][s] + cost[s + 1][j] + dims[i] * dims[s + 1] * dims[j + 1]
                if best is None or c < best:
                    best, split[i][j] = c, s
            cost[i][j] = best
    return split


def _chain_product(F, arrays, split, i, j):
    if i == j:
        return arrays[i]
    s = split[i][j]
    return F.matmul(_chain_product(F, arrays, split, i, s),
                    _chain_product(F, arrays, split, s + 1, j))


@defcomposite(nin=VARIADIC, domain=ANY, sample=_sample_multi_dot, namespace="linalg", pack=True)
def multi_dot(F, *arrays):
    """The product of two or more matrices, multiplied in the cheapest order.

    NumPy's ``multi_dot``: the first array may be 1-D (a row vector) and the last 1-D (a
    column vector); the others must be 2-D. The order of the products is chosen by the
    classic dynamic programme on the shapes; the result is the same as chaining ``@``.

    Parameters
    ----------
    arrays : sequence of Tensor

    Notes
    -----
    Differentiable in every array (a composition of ``matmul``).

    Examples
    --------
    >>> import ndgrad
    >>> a, b = ndgrad.ones(10, 100), ndgrad.ones(100, 5)
    >>> ndgrad.linalg.multi_dot([a, b, ndgrad.ones(5)]).shape
    (10,)
    """
    arrays = list(arrays)
    k = len(arrays)
    if k < 2:
        raise ValueError(f"multi_dot: expecting at least two arrays, got {k}")
    first_vec = len(arrays[0].shape) == 1
    last_vec = len(arrays[-1].shape) == 1
    if first_vec:
        arrays[0] = F.expand_dims(arrays[0], 0)
    if last_vec:
        arrays[-1] = F.expand_dims(arrays[-1], -1)
    for i, a in enumerate(arrays):
        if len(a.shape) != 2:
            raise ValueError(f"multi_dot: array {i} has shape {tuple(a.shape)}; all must be "
                             "2-D, except that the first and the last may be 1-D")
    for i in range(k - 1):
        if arrays[i].shape[1] != arrays[i + 1].shape[0]:
            raise ValueError(f"multi_dot: arrays {i} and {i + 1} do not chain (shapes "
                             f"{tuple(arrays[i].shape)} and {tuple(arrays[i + 1].shape)})")
    dims = [arrays[0].shape[0]] + [a.shape[1] for a in arrays]
    out = _chain_product(F, arrays, _chain_order(dims), 0, k - 1)
    if first_vec:
        out = F.squeeze(out, axis=0)
    if last_vec:
        out = F.squeeze(out, axis=-1)
    return out


# ----------------------------------------------------------------------------- lstsq
def _sample_lstsq(d):
    m, n = d.integers(1, 3), d.integers(1, 3)
    ba, bb = d.shapes(2, max_dims=1, max_side=2)
    a = d.matrix(tuple(ba) + (m, n))
    b = d.array((m,)) if d.boolean() else d.array(tuple(bb) + (m, d.integers(1, 2)))
    return (a, b), ({"rcond": 1e-10} if d.boolean() else {})


_EPS = {"f": 2.0 ** -23, "d": 2.0 ** -52, "F": 2.0 ** -23, "D": 2.0 ** -52}


@defcomposite(nin=2, domain=ANY, sample=_sample_lstsq, namespace="linalg")
def lstsq(F, a, b, rcond=None):
    """Least-squares solution of ``a @ x = b``: the ``x`` of minimal norm among those that
    minimize ``||b - a x||``.

    ``b`` is a vector when 1-D and a (stack of) matrices otherwise, as in :func:`solve`.
    Unlike NumPy's, batched over leading dimensions (which broadcast).

    Parameters
    ----------
    a : Tensor, shape (..., m, n)
    b : Tensor, shape (m,) or (..., m, k)
    rcond : float, optional
        Singular values at or below ``rcond * largest`` count as zero; default
        ``max(m, n) * eps`` (NumPy's ``rcond=None``).

    Returns
    -------
    LstsqResult
        A named tuple ``(solution, residuals, rank, singular_values)`` as NumPy's:
        ``solution`` (..., n) or (..., n, k); ``residuals``, the squared residual norm of
        each column, (..., k) ((..., 1) for a vector ``b``) when ``m > n`` and ``a`` has full
        rank ``n``, else empty, shape (..., 0); ``rank`` (...), int64; ``singular_values``
        (..., min(m, n)), descending.

    Notes
    -----
    The solution is ``pinv(a, rtol=rcond) @ b`` (the SVD-based method of LAPACK's
    ``gelsd``, which NumPy uses), differentiable in ``a`` and ``b`` where the rank is
    locally constant, e.g. for full-rank ``a`` (see :func:`pinv`). ``residuals`` are
    computed from it and differentiable too, ``singular_values`` are :func:`svdvals` (a
    gradient needs distinct values), ``rank`` is an integer. Inside ``vmap`` the full-rank
    test of the residuals cannot read the ranks: residuals are then returned whenever
    ``m > n``.

    Examples
    --------
    >>> import ndgrad
    >>> a = ndgrad.tensor([[1.0, 0.0], [1.0, 1.0], [1.0, 2.0]])
    >>> x, residuals, rank, sv = ndgrad.linalg.lstsq(a, ndgrad.tensor([1.0, 3.0, 5.0]))
    >>> x
    tensor([1., 2.])
    >>> rank
    tensor(2)
    """
    if len(a.shape) < 2:
        raise LinAlgError(f"lstsq: `a` must be a matrix or a stack of matrices (..., m, n), "
                          f"got shape {tuple(a.shape)}")
    m, n = a.shape[-2:]
    vec = len(b.shape) == 1
    if len(b.shape) == 0 or b.shape[0 if vec else -2] != m:
        raise ValueError(f"lstsq: `a` has {m} rows but `b` has shape {tuple(b.shape)}; `b` must "
                         f"be ({m},) or (..., {m}, k)")
    # in units of powers of two c near max |a| and d near max |b| (exact, constants for every
    # derivative): y = pinv(a / c) (b / d), x = y d / c and the residual d (b / d - (a / c) y),
    # every factor of order one (Note [Linear algebra at extreme scales]: pinv(a) b
    # differentiates twice through |a|^-3 terms, under- or overflowing at |a| = 1e150 where
    # the solution's |a|^-2 and the residual's |a|^-2 |b|^2 do not; a tangent of b at 2^1018
    # overflowed in pinv(a) db)
    inv = inverse_scale_along(F, a, (-2, -1))
    an = a * inv
    bm = F.expand_dims(b, -1) if vec else b
    inv_b = inverse_scale_along(F, bm, (-2, -1))
    bn = bm * inv_b
    y = F.matmul(F.linalg.pinv(an, rtol=rcond), bn)
    x = y * (inv / inv_b)
    s = F.linalg.svdvals(a)
    rtol = rcond if rcond is not None else _bmax(m, n) * _EPS.get(s.dtype.char, 2.0 ** -52)
    if min(m, n) == 0:
        rank = F.sum(F.greater(s, 0), axis=-1)
    else:
        rank = F.sum(F.greater(s, rtol * F.max(s, axis=-1, keepdims=True)), axis=-1)
    full = m > n and (is_batched(rank) or bool(F.all(F.equal(rank, n))))
    if full:
        r = bn - F.matmul(an, y)
        ib = F.squeeze(inv_b, axis=-1)  # (|r|^2 / d^-2, d^-1 twice: d^-2 may not be a number)
        residuals = F.sum(F.real(r * F.conj(r)) if F.iscomplexobj(r) else r * r, axis=-2) / \
            ib / ib
    else:  # empty, (..., 0); sliced from x so that it is part of the graph like the others
        residuals = x[..., 0, :0]
        if F.iscomplexobj(residuals):
            residuals = F.real(residuals)
    batch = tuple(x.shape[:-2])
    if tuple(rank.shape) != batch:  # b had more batch dimensions than a
        rank = F.broadcast_to(rank, batch)
        s = F.broadcast_to(s, batch + tuple(s.shape[-1:]))
    if vec:
        x = F.squeeze(x, axis=-1)
    return LstsqResult(x, residuals, rank, s)


# ----------------------------------------------------------------------------- trace, diagonal
def _sample_last2(d):
    shape = d.shape(min_dims=2, max_dims=3, max_side=3)
    offset = d.integers(-(shape[-2] - 1), shape[-1] - 1)
    return (d.array(shape),), ({"offset": offset} if offset or d.boolean() else {})


@defcomposite(domain=ANY, sample=_sample_last2, namespace="linalg")
def diagonal(F, x, offset=0):
    """The diagonals of the matrices of ``x`` (its last two axes): the array API's
    ``linalg.diagonal`` (``ndgrad.diagonal`` takes NumPy's ``axis1=0, axis2=1`` instead).

    Parameters
    ----------
    x : Tensor, shape (..., m, n)
    offset : int
        Positive: above the main diagonal; negative: below.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.linalg.diagonal(ndgrad.tensor([[[1.0, 2.0], [3.0, 4.0]]]))
    tensor([[1., 4.]])
    """
    return F.diagonal(x, offset=offset, axis1=-2, axis2=-1)


@defcomposite(domain=ANY, sample=_sample_last2, namespace="linalg")
def trace(F, x, offset=0, dtype=None):
    """Sum of the diagonal of each matrix of ``x`` (its last two axes): the array API's
    ``linalg.trace`` (``ndgrad.trace`` takes NumPy's ``axis1=0, axis2=1`` instead).

    Parameters
    ----------
    x : Tensor, shape (..., m, n)
    offset : int
    dtype : dtype, optional
        Cast ``x`` to it first.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.linalg.trace(ndgrad.tensor([[[1.0, 2.0], [3.0, 4.0]]]))
    tensor([5.])
    """
    if dtype is not None:
        x = F.astype(x, dtype)
    return F.trace(x, offset=offset, axis1=-2, axis2=-1)
