"""Products and contractions, the primitives: matmul, tensordot, vecdot, einsum, outer,
matrix_transpose, trace, diagonal, and ``linalg.cross``.

Matrix ops batch over leading dimensions with NumPy's broadcasting rules; 1-D operands of
matmul are promoted and the promotion undone, as NumPy does. All these ops are linear in each
input, so their vjp rules are contractions of the cotangent with the conjugated other inputs
(the conjugate-Wirtinger convention) and their jvp rules are the op applied to the tangents.

Note [einsum as the universal vjp]
----------------------------------
Contractions whose cotangent has to be routed back to an arbitrary layout (tensordot's
permuted axes, einsum's operands, the diagonals of trace and diagonal) are written as one
``einsum`` each: the output subscripts say where every axis goes, so no transposes are
needed, and einsum is itself an op with rules, so the formulas differentiate to any order.
Letters that must be *created* (a repeated index such as ``'ii->i'``, a diagonal) are made
with a 0/1 matrix from :func:`_eye`, built from ``F`` ops (cumulative sums of ones and a
comparison) so that it lives on the formula's backend.
"""

from __future__ import annotations

import builtins
import functools
import string

from ..dispatch import apply
from ..tensor import Tensor
from .batching import flatten, logical_ndim, pad_to
from .registry import LINALG, VARIADIC, Domain, defop, multilinear

_LETTERS = string.ascii_letters  # NumPy's einsum accepts a-z and A-Z
_bmax = builtins.max
ANY = Domain((-2.0, 2.0), complex=True)


def _mT(F, a):
    return F.matrix_transpose(a) if a.ndim >= 2 else a


def _eye(F, n, m, k, like):
    """The ``n x m`` 0/1 matrix with ones where ``j == i + k``, with the dtype and on the
    device of ``like`` (from F ops: backend-neutral)."""
    rows = F.cumulative_sum(F.ones((n, 1), like=like), axis=0)
    cols = F.cumulative_sum(F.ones((1, m), like=like), axis=1)
    return F.astype(F.equal(rows + k, cols), like.dtype)


# ----------------------------------------------------------------------------- matmul
def _matmul_vjp_x(F, g, out, x, y):
    # out = x @ y, so dx = g @ y^H; 1-D operands are promoted and the promotion undone.
    # Batch dimensions the operand did not have are summed by the engine.
    if y.ndim == 1:  # (..., k) @ (k,) -> (...)
        return F.expand_dims(g, -1) * F.conj(y)
    if x.ndim == 1:  # (k,) @ (..., k, m) -> (..., m)
        if y.ndim == 2:  # y g: one matrix-vector product (a matrix product under vmap)
            return F.matmul(g, F.matrix_transpose(F.conj(y)))
        return F.squeeze(F.matmul(F.conj(y), F.expand_dims(g, -1)), axis=-1)
    return F.matmul(g, _mT(F, F.conj(y)))


def _matmul_vjp_y(F, g, out, x, y):
    # dy = x^H @ g
    if x.ndim == 1:  # (k,) @ (..., k, m) -> (..., m); also covers 1-D @ 1-D
        if y.ndim == 1:
            return g * F.conj(x)
        return F.expand_dims(F.conj(x), -1) * F.expand_dims(g, -2)
    if y.ndim == 1:  # (..., n, k) @ (k,) -> (..., n)
        if x.ndim == 2:  # g^T x: one vector-matrix product (a matrix product under vmap)
            return F.matmul(g, F.conj(x))
        return F.squeeze(F.matmul(_mT(F, F.conj(x)), F.expand_dims(g, -1)), axis=-1)
    return F.matmul(_mT(F, F.conj(x)), g)


def _sample_matmul(d):
    k = d.integers(1, 3)
    case = d.choice(["1@1", "1@N", "N@1", "N@N"])
    if case == "1@1":
        return (d.array((k,)), d.array((k,))), {}
    bx, by = d.shapes(2, max_dims=2, max_side=3)
    n, m = d.integers(1, 3), d.integers(1, 3)
    if case == "1@N":
        return (d.array((k,)), d.array(tuple(by) + (k, m))), {}
    if case == "N@1":
        return (d.array(tuple(bx) + (n, k)), d.array((k,))), {}
    return (d.array(tuple(bx) + (n, k)), d.array(tuple(by) + (k, m))), {}


@defop(kind=LINALG, nin=2, domain=ANY, sample=_sample_matmul)
def matmul(B, x, y):
    """Matrix product with NumPy's rules (1-D promotion, broadcast batch dimensions).

    A 1-D first operand is a row vector and a 1-D second operand a column vector (the
    promoted dimension is removed from the result); the leading (batch) dimensions
    broadcast. Also available as the ``@`` operator.

    Examples
    --------
    >>> import ndgrad
    >>> a = ndgrad.tensor([[1.0, 2.0], [3.0, 4.0]])
    >>> ndgrad.matmul(a, ndgrad.tensor([1.0, 1.0]))
    tensor([3., 7.])
    >>> (ndgrad.ones(2, 1, 3, 4) @ ndgrad.ones(5, 4, 2)).shape
    (2, 5, 3, 2)
    """
    return B.matmul(x, y)


matmul.defvjp(_matmul_vjp_x, _matmul_vjp_y, saves=(("y", "x.shape"), ("x", "y.shape")))
matmul.defjvp_each(lambda F, t, out, x, y: F.matmul(t, y),
                   lambda F, t, out, x, y: F.matmul(x, t))
matmul.defstructure(multilinear(matrix_product=True))


def _matmul_batch(F, batched, x, y):
    bx, by = batched
    nx, ny = logical_ndim(x, bx), logical_ndim(y, by)
    if nx == 0 or ny == 0:
        raise ValueError(f"matmul: input operand {0 if nx == 0 else 1} does not have enough "
                         "dimensions (a 0-d operand; use multiply for scalars)")
    # a batch of vectors against one matrix is ONE matrix product (not a stack of
    # matrix-vector products): vectors (B, n) @ y (n, k), or A (m, n) @ vectors as (B, n) @ A^T
    if bx and not by and nx == 1 and ny == 2:
        return F.matmul(x, y)
    if by and not bx and ny == 1 and nx == 2:
        return F.matmul(y, F.matrix_transpose(x))
    if bx and not by and nx >= 2 and ny == 2:  # stacked matrices (B, ..., m, n) @ (n, k)
        return F.matmul(x, y)
    # promote 1-D elements as NumPy does (x a row, y a column); the batched operands padded to
    # the longest element rank keep the batch dimension leading; the promotion is undone last
    x = F.expand_dims(x, -2) if nx == 1 else x
    y = F.expand_dims(y, -1) if ny == 1 else y
    k = _bmax(nx, ny, 2)
    out = F.matmul(pad_to(F, x, k) if bx else x, pad_to(F, y, k) if by else y)
    promoted = (-2,) * (nx == 1) + (-1,) * (ny == 1)
    return F.squeeze(out, axis=promoted) if promoted else out


matmul.defbatch(_matmul_batch)


@matmul.defidentity
def _matmul_identity(F, i, s, args, batched, params):
    # a product with an identity batch (element b: s_b e_b) scales rows or columns: O(n^2)
    o = args[1 - i]
    if batched[1 - i] or not isinstance(o, Tensor) or o.ndim not in (1, 2):
        return None
    if i == 1:  # a . (s_b e_b) = s_b a[b];  A (m, n) @ (s_b e_b) = s_b A^T[b]
        return "value", (o * s if o.ndim == 1 else
                         F.matrix_transpose(o) * F.expand_dims(s, -1))
    # (s_b e_b) . b = s_b b[b];  (s_b e_b) @ B (n, k) = s_b B[b]
    return "value", (s * o if o.ndim == 1 else o * F.expand_dims(s, -1))


def _sample_min2d(d):
    return (d.array(d.shape(min_dims=2)),), {}


@defop(kind=LINALG, domain=ANY, view=True, sample=_sample_min2d)
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
matrix_transpose.defsparsity("moves")
matrix_transpose.defscatter(lambda F, parent, child: F.matrix_transpose(child))


def _matrix_transpose_batch(F, batched, x):
    if x.ndim < 3:
        raise ValueError(f"matrix_transpose needs at least 2 dimensions, got shape "
                         f"{x.shape[1:]}")
    return F.matrix_transpose(x)


matrix_transpose.defbatch(_matrix_transpose_batch)


# ----------------------------------------------------------------------------- tensordot
def _as_axis_list(a, ndim, name):
    seq = [a] if isinstance(a, int) or hasattr(a, "__index__") else list(a)
    out = []
    for v in seq:
        v = int(v)
        if not -ndim <= v < ndim:
            raise ValueError(f"tensordot: axis {v} is out of bounds for the {name} operand of "
                             f"dimension {ndim}")
        out.append(v % ndim)
    return out


@functools.lru_cache(maxsize=256)
def _tensordot_subscripts(axes, xnd, ynd):
    """einsum subscripts (x, y, out) of ``tensordot(x, y, axes)``."""
    if isinstance(axes, int):
        if not 0 <= axes <= min(xnd, ynd):
            raise ValueError(f"tensordot: axes={axes} needs both operands to have at least "
                             f"{axes} dimensions (they have {xnd} and {ynd})")
        ax, ay = list(range(xnd - axes, xnd)), list(range(axes))
    else:
        ax = _as_axis_list(axes[0], xnd, "first")
        ay = _as_axis_list(axes[1], ynd, "second")
        if len(ax) != len(ay):
            raise ValueError(f"tensordot: axes {axes!r} pair {len(ax)} axes of the first "
                             f"operand with {len(ay)} of the second; give equally many")
    if xnd + ynd > len(_LETTERS):
        raise ValueError("tensordot: too many dimensions")
    xl = list(_LETTERS[:xnd])
    yl = list(_LETTERS[xnd:xnd + ynd])
    for p, q in zip(ax, ay):
        yl[q] = xl[p]
    out = [c for k, c in enumerate(xl) if k not in ax] + [c for k, c in enumerate(yl)
                                                          if k not in ay]
    return "".join(xl), "".join(yl), "".join(out)


def _tensordot_key(axes):
    """A hashable form of ``axes`` (int, or pair of ints/sequences)."""
    if isinstance(axes, int) or hasattr(axes, "__index__"):
        return int(axes)
    a, b = axes

    def key(v):
        if isinstance(v, int) or hasattr(v, "__index__"):
            return int(v)
        return tuple(int(i) for i in v)
    return (key(a), key(b))


def _tensordot_vjp_x(F, g, out, x, y, axes=2):
    xs, ys, os = _tensordot_subscripts(_tensordot_key(axes), x.ndim, y.ndim)
    return F.einsum(g, F.conj(y), subscripts=f"{os},{ys}->{xs}")


def _tensordot_vjp_y(F, g, out, x, y, axes=2):
    xs, ys, os = _tensordot_subscripts(_tensordot_key(axes), x.ndim, y.ndim)
    return F.einsum(F.conj(x), g, subscripts=f"{xs},{os}->{ys}")


def _sample_tensordot(d):
    nc = d.integers(0, 2)
    cshape = tuple(d.integers(1, 3) for _ in range(nc))
    fx, fy = d.shape(max_dims=2, max_side=3), d.shape(max_dims=2, max_side=3)
    if d.boolean():
        return (d.array(fx + cshape), d.array(cshape + fy)), {"axes": nc}
    px = d.permutation(len(fx) + nc)
    py = d.permutation(len(fy) + nc)
    cx, cy = fx + cshape, cshape + fy
    xshape = tuple(cx[p] for p in px)
    yshape = tuple(cy[p] for p in py)
    ax = [px.index(len(fx) + j) for j in range(nc)]
    ay = [py.index(j) for j in range(nc)]
    if nc and d.boolean():
        ax[0] -= len(xshape)
    axes = (ax[0], ay[0]) if nc == 1 and d.boolean() else (ax, ay)
    return (d.array(xshape), d.array(yshape)), {"axes": axes}


@defop(kind=LINALG, nin=2, domain=ANY, method=False, sample=_sample_tensordot)
def tensordot(B, a, b, axes=2):
    """Contract ``a`` and ``b`` over the given axes (NumPy's ``tensordot``).

    Parameters
    ----------
    a, b : Tensor
    axes : int or (sequence, sequence)
        An int ``N`` contracts the last ``N`` axes of ``a`` with the first ``N`` of ``b``;
        a pair lists the axes of ``a`` and of ``b`` to contract, in matching order.

    Returns
    -------
    Tensor
        The free axes of ``a`` followed by the free axes of ``b``.

    Examples
    --------
    >>> import ndgrad
    >>> a = ndgrad.tensor([[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]])
    >>> b = ndgrad.ones(3, 2)
    >>> ndgrad.tensordot(a, b, axes=1)
    tensor([[ 3.,  3.],
            [12., 12.]])
    >>> ndgrad.tensordot(a, b, axes=([1, 0], [0, 1]))
    tensor(15.)
    """
    return B.tensordot(a, b, axes=axes)


tensordot.defvjp(_tensordot_vjp_x, _tensordot_vjp_y)
tensordot.defjvp_each(lambda F, t, out, x, y, axes=2: F.tensordot(t, y, axes=axes),
                      lambda F, t, out, x, y, axes=2: F.tensordot(x, t, axes=axes))
tensordot.defstructure(multilinear())


def _tensordot_batch(F, batched, x, y, axes=2):
    bx, by = batched
    nx, ny = logical_ndim(x, bx), logical_ndim(y, by)
    xs, ys, os = _tensordot_subscripts(_tensordot_key(axes), nx, ny)
    if bx and by:  # a batched contraction: the batch gets a letter of its own
        if nx + ny >= len(_LETTERS):
            raise ValueError("tensordot: too many dimensions")
        b = _LETTERS[nx + ny]
        return F.einsum(x, y, subscripts=f"{b}{xs},{b}{ys}->{b}{os}")
    ax = [k for k, c in enumerate(xs) if c in ys]
    ay = [ys.index(xs[k]) for k in ax]
    if bx:  # the batch dimension is a free axis of x: it leads the output
        return F.tensordot(x, y, axes=([k + 1 for k in ax], ay))
    out = F.tensordot(x, y, axes=(ax, [k + 1 for k in ay]))
    return F.moveaxis(out, nx - len(ax), 0)  # it followed x's free axes


tensordot.defbatch(_tensordot_batch)


# ----------------------------------------------------------------------------- vecdot
def _vecdot_axis(x1, x2, axis):
    """``axis`` as a negative index (relative to the broadcast shape, as the array API)."""
    nd = _bmax(x1.ndim, x2.ndim)
    axis = int(axis)
    if not -nd <= axis < nd:
        raise ValueError(f"vecdot: axis {axis} is out of bounds for inputs of dimensions "
                         f"{x1.ndim} and {x2.ndim}")
    return axis - nd if axis >= 0 else axis


def _sample_vecdot(d):
    k = d.integers(1, 3)
    lead = d.shapes(2, max_dims=2, max_side=3)
    nt = d.integers(0, 1)
    trail = d.shapes(2, min_dims=nt, max_dims=nt, max_side=3)
    s1 = tuple(lead[0]) + (k,) + tuple(trail[0])
    s2 = tuple(lead[1]) + (k,) + tuple(trail[1])
    return (d.array(s1), d.array(s2)), {"axis": -1 - nt}


@defop(kind=LINALG, nin=2, domain=ANY, method=False, sample=_sample_vecdot)
def vecdot(B, x1, x2, *, axis=-1):
    """Dot product of vectors along ``axis``: ``sum(conj(x1) * x2, axis)``, broadcasting the
    other dimensions (array-API ``vecdot``).

    Parameters
    ----------
    x1, x2 : Tensor
        The first operand is conjugated (for complex inputs).
    axis : int
        The axis of the vectors, relative to the broadcast shape (default: the last).

    Examples
    --------
    >>> import ndgrad
    >>> x = ndgrad.tensor([[1.0, 2.0], [3.0, 4.0]])
    >>> ndgrad.vecdot(x, ndgrad.tensor([1.0, 10.0]))
    tensor([21., 43.])
    >>> ndgrad.vecdot(ndgrad.tensor([1j]), ndgrad.tensor([1j]))
    tensor(1.+0.j)
    """
    return B.vecdot(x1, x2, axis=_vecdot_axis(x1, x2, axis))


# out = sum(conj(x1) x2): holomorphic in x2, anti-holomorphic in x1 (its vjp conjugates g)
vecdot.defvjp(
    lambda F, g, out, x1, x2, axis=-1:
        F.conj(F.expand_dims(g, _vecdot_axis(x1, x2, axis))) * x2,
    lambda F, g, out, x1, x2, axis=-1:
        F.expand_dims(g, _vecdot_axis(x1, x2, axis)) * x1)
vecdot.defjvp_each(lambda F, t, out, x1, x2, axis=-1: F.vecdot(t, x2, axis=axis),
                   lambda F, t, out, x1, x2, axis=-1: F.vecdot(x1, t, axis=axis))
vecdot.defstructure(multilinear())


def _vecdot_batch(F, batched, x1, x2, axis=-1):
    b1, b2 = batched
    nd = _bmax(logical_ndim(x1, b1), logical_ndim(x2, b2))
    axis = int(axis)
    if not -nd <= axis < nd:
        raise ValueError(f"vecdot: axis {axis} is out of bounds for inputs of dimensions "
                         f"{logical_ndim(x1, b1)} and {logical_ndim(x2, b2)}")
    # batched operands padded to the broadcast rank: a negative axis then means the same
    return F.vecdot(pad_to(F, x1, nd) if b1 else x1, pad_to(F, x2, nd) if b2 else x2,
                    axis=axis - nd if axis >= 0 else axis)


vecdot.defbatch(_vecdot_batch)


# ----------------------------------------------------------------------------- outer
def _flat(F, a):
    return F.reshape(a, (-1,))


def _sample_outer(d):
    return (d.array(d.shape(max_dims=1)), d.array(d.shape(max_dims=2, max_side=3))), {}


@defop(kind=LINALG, nin=2, domain=ANY, sample=_sample_outer)
def outer(B, a, b):
    """Outer product ``out[i, j] = a[i] * b[j]`` (inputs of more than one dimension are
    flattened, as NumPy's ``outer``).

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.outer(ndgrad.tensor([1.0, 2.0]), ndgrad.tensor([1.0, 10.0, 100.0]))
    tensor([[  1.,  10., 100.],
            [  2.,  20., 200.]])
    """
    return B.outer(a, b)


outer.defvjp(lambda F, g, out, x, y: F.reshape(F.matmul(g, F.conj(_flat(F, y))), x.shape),
             lambda F, g, out, x, y: F.reshape(F.matmul(F.conj(_flat(F, x)), g), y.shape))
outer.defjvp_each(lambda F, t, out, x, y: F.outer(t, y),
                  lambda F, t, out, x, y: F.outer(x, t))
outer.defstructure(multilinear())


def _outer_batch(F, batched, x, y):
    bx, by = batched
    # out[b, i, j] = x[b, i] * y[b, j]; an unbatched operand broadcasts over the batch
    xf = flatten(F, x) if bx else _flat(F, x)
    yf = flatten(F, y) if by else _flat(F, y)
    return F.expand_dims(xf, -1) * (F.expand_dims(yf, -2) if by else yf)


outer.defbatch(_outer_batch)


# ----------------------------------------------------------------------------- einsum
def _ndim(a):
    """Dimensions of an einsum operand (a Tensor, an array, a Python scalar or nested list)."""
    n = 0
    while isinstance(a, (list, tuple)):
        a = a[0] if len(a) else None
        n += 1
    return n + getattr(a, "ndim", 0)


def _bad_einsum(msg):
    return ValueError(f"einsum: {msg}")


@functools.lru_cache(maxsize=512)
def _einsum_parse(subscripts, ndims):
    """``(input labels, output label)`` of an einsum call with operands of ``ndims``
    dimensions: ``'...'`` expanded to letters, the implicit output made explicit (NumPy's
    rules: broadcast dimensions first, then the labels that appear once, in char order)."""
    s = subscripts.replace(" ", "")
    if "->" in s:
        ins, out = s.split("->")
    else:
        ins, out = s, None
    in_list = ins.split(",")
    if len(in_list) != len(ndims):
        raise _bad_einsum(f"{subscripts!r} names {len(in_list)} operands, got {len(ndims)}")
    used = {c for c in s if c in _LETTERS}
    free = [c for c in _LETTERS if c not in used]
    n_ell = 0
    for sub, nd in zip(in_list, ndims):
        if "..." in sub:
            n_ell = _bmax(n_ell, nd - (len(sub) - 3))
    if n_ell > len(free):
        raise _bad_einsum("too many dimensions")
    ell = "".join(free[:n_ell])
    labels = []
    for i, (sub, nd) in enumerate(zip(in_list, ndims)):
        if "..." in sub:
            k = nd - (len(sub) - 3)
            if k < 0:
                raise _bad_einsum(f"operand {i} has {nd} dimensions, fewer than {sub!r} names")
            sub = sub.replace("...", ell[n_ell - k:])
        elif len(sub) != nd:
            raise _bad_einsum(f"operand {i} has {nd} dimensions but {sub!r} names {len(sub)}")
        labels.append(sub)
    if out is None:
        counts = {}
        for sub in in_list:
            for c in sub.replace("...", ""):
                counts[c] = counts.get(c, 0) + 1
        out = ell + "".join(sorted(c for c, n in counts.items() if n == 1))
    else:
        out = out.replace("...", ell)
    return tuple(labels), out


def _einsum_vjp(F, i, g, out, *operands, subscripts):
    # d out / d operand_i: contract g with the conjugated other operands onto operand i's
    # labels (Note [einsum as the universal vjp]).
    x = operands[i]
    labels, olabel = _einsum_parse(subscripts, tuple(_ndim(a) for a in operands))
    target = labels[i]
    uniq = "".join(dict.fromkeys(target))             # first occurrences, in order
    others = [j for j in range(len(operands)) if j != i]
    avail = set(olabel).union(*(set(labels[j]) for j in others))
    have = "".join(c for c in uniq if c in avail)
    subs = ",".join([olabel] + [labels[j] for j in others]) + "->" + have
    G = F.einsum(g, *[F.conj(operands[j]) for j in others], subscripts=subs)
    # labels only operand i has (summed in the forward): the cotangent is constant along them
    size = {c: x.shape[target.index(c)] for c in uniq}
    gsize = dict(zip(have, G.shape))
    if len(have) < len(uniq):
        G = F.reshape(G, tuple(gsize.get(c, 1) for c in uniq))
    full = tuple(_bmax(gsize.get(c, 1), size[c]) for c in uniq)
    if tuple(G.shape) != full:
        G = F.broadcast_to(G, full)
    if len(uniq) == len(target):
        return G
    # a repeated label (a diagonal, 'ii->i'): place G on the diagonal with 0/1 matrices
    spare = iter(c for c in _LETTERS if c not in target)
    renamed, deltas = [], []
    seen = set()
    for c in target:
        if c in seen:
            f = next(spare)
            renamed.append(f)
            deltas.append(c + f)
        else:
            seen.add(c)
            renamed.append(c)
    eyes = [_eye(F, size[p[0]], size[p[0]], 0, G) for p in deltas]
    return F.einsum(G, *eyes, subscripts=",".join([uniq] + deltas) + "->" + "".join(renamed))


def _einsum_jvp(F, tangents, out, *operands, subscripts):
    total = None
    for i, t in enumerate(tangents):
        if t is None:
            continue
        ops = list(operands)
        ops[i] = t
        c = F.einsum(*ops, subscripts=subscripts)
        total = c if total is None else total + c
    return total


_EINSUM_CASES = [
    # (subscripts, operand label strings used to draw the shapes)
    ("ij,jk->ik", None), ("ij,jk", None), ("i,i->", None), ("i,i", None), ("i,j->ij", None),
    ("ii->i", None), ("ii", None), ("iij->ji", None), ("ij->ji", None), ("ij->", None),
    ("ij,ij->ij", None), ("bij,bjk->bik", None), ("ijk,ikl,lm->jm", None),
    ("ij,j->i", "broadcast"), ("...ij,...jk->...ik", "ellipsis"), ("i...->...", "ellipsis"),
    ("...i,...i", "ellipsis"), ("ij,kl->", None), ("ba,ab->", None),
]


def _sample_einsum(d):
    subs, special = d.choice(_EINSUM_CASES)
    ins = subs.split("->")[0].split(",")
    size = {c: d.integers(1, 3) for c in "".join(ins) if c != "."}
    ell = d.shapes(len(ins), max_dims=2, max_side=3) if special == "ellipsis" else None
    shapes = []
    for k, sub in enumerate(ins):
        shape = []
        for part in sub.split("..."):
            shape.append(tuple(size[c] for c in part))
        shapes.append(shape[0] + (tuple(ell[k]) + shape[1] if len(shape) > 1 else ()))
    if special == "broadcast" and d.boolean():
        shapes[1] = (1,)
    return tuple(d.array(s) for s in shapes), {"subscripts": subs}


@defop(kind=LINALG, nin=VARIADIC, domain=ANY, method=False, sample=_sample_einsum)
def einsum(B, *operands, subscripts):
    """Einstein summation: ``einsum(subscripts, *operands)``, as NumPy's ``einsum``.

    Supports explicit (``'ij,jk->ik'``) and implicit (``'ij,jk'``) output, repeated labels
    (``'ii->i'`` takes a diagonal, ``'ii'`` a trace), ``'...'`` for broadcast dimensions
    and length-1 dimensions broadcasting against a label's size. The gradient of every
    operand is again an einsum, so derivatives of any order work.

    Parameters
    ----------
    subscripts : str
        The labels of each operand's axes, comma separated, optionally ``->`` and the
        output's labels.
    *operands : Tensor

    Examples
    --------
    >>> import ndgrad
    >>> a = ndgrad.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    >>> ndgrad.einsum("ij,jk->ik", a, a)
    tensor([[ 7., 10.],
            [15., 22.]], grad_fn=<EinsumBackward0>)
    >>> d = ndgrad.einsum("ii->i", a)
    >>> d
    tensor([1., 4.], grad_fn=<EinsumBackward0>)
    >>> d.sum().backward()
    >>> a.grad
    tensor([[1., 0.],
            [0., 1.]])
    """
    return B.einsum(subscripts, *operands, optimize=len(operands) > 2)


einsum.defvjp_each(_einsum_vjp)
einsum.defjvp(_einsum_jvp)
einsum.defstructure(multilinear())


def _einsum_batch(F, batched, *operands, subscripts):
    # the batch dimension gets a subscript of its own, leading its operands and the output
    labels, out = _einsum_parse(subscripts, tuple(a.ndim - 1 if b else _ndim(a)
                                                  for a, b in zip(operands, batched)))
    used = set("".join(labels) + out)
    b = next((c for c in _LETTERS if c not in used), None)
    if b is None:
        raise _bad_einsum("too many dimensions to batch (no free subscript letter)")
    subs = ",".join(b + lab if isb else lab for lab, isb in zip(labels, batched))
    return F.einsum(*operands, subscripts=f"{subs}->{b}{out}")


einsum.defbatch(_einsum_batch)


def _einsum_sublist(sub):
    """NumPy's sublist ``[0, 1, ...]`` (integers 0-51, Ellipsis) as subscript letters."""
    letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
    out = []
    for s in sub:
        if s is Ellipsis:
            out.append("...")
        elif isinstance(s, int) and not isinstance(s, bool) and 0 <= s < 52:
            out.append(letters[s])
        else:
            raise ValueError(f"einsum: a subscript in a sublist must be an integer in [0, 52) "
                             f"or Ellipsis, got {s!r}")
    return "".join(out)


def _einsum_sublists(args):
    """NumPy's sublist form ``einsum(a, [0, 1], b, [1, 2][, [0, 2]])`` as
    ``(subscripts, operands)``."""
    operands, subs = list(args[0::2]), list(args[1::2])
    out = None
    if len(args) % 2:  # a trailing output sublist
        out = operands.pop()
    subscripts = ",".join(_einsum_sublist(s) for s in subs)
    if out is not None:
        subscripts += "->" + _einsum_sublist(out)
    return subscripts, tuple(operands)


def _einsum_public(*args, subscripts=None):
    """``einsum(subscripts, *operands)`` (or ``einsum(*operands, subscripts=...)``, or NumPy's
    sublist form ``einsum(a, [0, 1], b, [1, 2], [0, 2])``)."""
    if subscripts is None and len(args) >= 2 and isinstance(args[1], (list, tuple)):
        subscripts, args = _einsum_sublists(args)
    if subscripts is None:
        if not args or not isinstance(args[0], str):
            raise TypeError("einsum() expects the subscripts string first: "
                            "einsum('ij,jk->ik', a, b)")
        subscripts, args = args[0], args[1:]
    return apply(einsum, *args, subscripts=subscripts)


einsum.defpublic(_einsum_public)


# ----------------------------------------------------------------------------- trace, diagonal
def _diag_subscripts(ndim, axis1, axis2, name):
    """(letters of x, letters of the other axes, letters of axis1 and axis2, axis1, axis2)."""
    if ndim < 2:
        raise ValueError(f"{name} needs at least 2 dimensions, got {ndim}")
    a1, a2 = axis1 % ndim if -ndim <= axis1 < ndim else None, \
        axis2 % ndim if -ndim <= axis2 < ndim else None
    if a1 is None or a2 is None:
        raise ValueError(f"{name}: axis1={axis1}, axis2={axis2} out of bounds for {ndim} "
                         "dimensions")
    if a1 == a2:
        raise ValueError(f"{name}: axis1 and axis2 cannot be the same ({axis1}, {axis2})")
    letters = _LETTERS[:ndim]
    rest = "".join(c for k, c in enumerate(letters) if k not in (a1, a2))
    return letters, rest, letters[a1], letters[a2], a1, a2


def _sample_diag(d):
    shape = d.shape(min_dims=2)
    nd = len(shape)
    axis1 = d.integers(-nd, nd - 1)
    axis2 = d.integers(-nd, nd - 1)
    if axis1 % nd == axis2 % nd:
        d.reject()
    n1, n2 = shape[axis1], shape[axis2]
    offset = d.integers(-(n1 - 1), n2 - 1)
    kw = {"offset": offset, "axis1": axis1, "axis2": axis2}
    if d.boolean() and offset == 0 and axis1 % nd == 0 and axis2 % nd == 1:
        kw = {}
    return (d.array(shape),), kw


_DIAGONAL_PARAMETERS = """Parameters
    ----------
    a : Tensor
        At least 2-D.
    offset : int
        Diagonal offset: positive above the main diagonal, negative below.
    axis1, axis2 : int
        The axes of the 2-D sub-arrays whose diagonals are {done}."""


def _diagonal_doc(done):
    """Put the Parameters section trace and diagonal share into the docstring of ``forward``
    (at its ``{parameters}``) before defop reads it; ``done``: what is done to the
    diagonals."""
    def fill(forward):
        forward.__doc__ = forward.__doc__.replace("{parameters}",
                                                  _DIAGONAL_PARAMETERS.format(done=done))
        return forward
    return fill


def _trace_vjp(F, g, out, x, offset=0, axis1=0, axis2=1):
    xs, rest, l1, l2, a1, a2 = _diag_subscripts(x.ndim, axis1, axis2, "trace")
    eye = _eye(F, x.shape[a1], x.shape[a2], offset, g)
    return F.einsum(g, eye, subscripts=f"{rest},{l1}{l2}->{xs}")


@defop(kind=LINALG, domain=ANY, sample=_sample_diag)
@_diagonal_doc("summed (the others remain)")
def trace(B, a, offset=0, axis1=0, axis2=1):
    """Sum along a diagonal (NumPy's ``trace``): ``sum_i a[..., i, ..., i + offset, ...]``
    over the axes ``axis1`` and ``axis2``.

    {parameters}

    Examples
    --------
    >>> import ndgrad
    >>> a = ndgrad.tensor([[0.0, 1.0, 2.0], [3.0, 4.0, 5.0], [6.0, 7.0, 8.0]])
    >>> ndgrad.trace(a)
    tensor(12.)
    >>> ndgrad.trace(a, offset=1)
    tensor(6.)
    """
    return B.trace(a, offset=offset, axis1=axis1, axis2=axis2)


trace.defvjp(_trace_vjp)
trace.defjvp_linear()


def _diag_batch(op):
    name = op.name

    def rule(F, batched, x, offset=0, axis1=0, axis2=1):
        a1, a2 = _diag_subscripts(x.ndim - 1, axis1, axis2, name)[4:]
        # the batch dimension is one of the other axes, which keep their order: it leads
        return getattr(F, name)(x, offset=offset, axis1=a1 + 1, axis2=a2 + 1)
    op.defbatch(rule)


_diag_batch(trace)


def _diagonal_vjp(F, g, out, x, offset=0, axis1=0, axis2=1):
    # x[.., r0 + k, .., c0 + k, ..] = g[.., k]: scatter back with two shifted 0/1 matrices
    xs, rest, l1, l2, a1, a2 = _diag_subscripts(x.ndim, axis1, axis2, "diagonal")
    k = next(c for c in _LETTERS if c not in xs)
    n = g.shape[-1]
    e1 = _eye(F, n, x.shape[a1], _bmax(0, -offset), g)
    e2 = _eye(F, n, x.shape[a2], _bmax(0, offset), g)
    return F.einsum(g, e1, e2, subscripts=f"{rest}{k},{k}{l1},{k}{l2}->{xs}")


@defop(kind=LINALG, domain=ANY, sample=_sample_diag)
@_diagonal_doc("taken")
def diagonal(B, a, offset=0, axis1=0, axis2=1):
    """A diagonal (NumPy's ``diagonal``): the axes ``axis1`` and ``axis2`` are removed and
    the diagonal ``a[..., i, ..., i + offset, ...]`` becomes the last axis.

    {parameters}

    Examples
    --------
    >>> import ndgrad
    >>> a = ndgrad.tensor([[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]])
    >>> ndgrad.diagonal(a)
    tensor([0., 4.])
    >>> ndgrad.diagonal(a, offset=1)
    tensor([1., 5.])
    """
    # NumPy returns a read-only view; a copy keeps in-place operations on the result valid
    return B.diagonal(a, offset=offset, axis1=axis1, axis2=axis2).copy()


diagonal.defvjp(_diagonal_vjp)
diagonal.defjvp_linear()
diagonal.defsparsity("moves")
_diag_batch(diagonal)


# ----------------------------------------------------------------------------- helpers of cross
def _cj(F, x):
    return F.conj(x) if F.iscomplexobj(x) else x


def _batch_pair(F, batched, a, b):
    """Two matrix operands with the batched ones padded to the same logical rank (so that the
    batch dimension leads and the rest broadcast from the right, as one level down)."""
    ba, bb = batched
    k = _bmax(logical_ndim(a, ba), logical_ndim(b, bb))
    return (pad_to(F, a, k) if ba else a), (pad_to(F, b, k) if bb else b)


# ----------------------------------------------------------------------------- cross
def _sample_cross(d):
    s1, s2 = d.shapes(2, max_dims=2, max_side=2)
    if d.boolean():
        return (d.array(tuple(s1) + (3,)), d.array(tuple(s2) + (3,))), {}
    k = d.integers(1, 2)
    return (d.array(tuple(s1) + (3, k)), d.array((3, k))), {"axis": -2}


def _cross_axis(axis, n1, n2):
    """``axis`` as a negative axis valid for both operands (NumPy lets a non-negative one
    count from the front of each operand separately: allowed when that is the same axis)."""
    if not (-n1 <= axis < n1 and -n2 <= axis < n2):
        raise ValueError(f"cross: axis {axis} is out of bounds for operands of dimension {n1} "
                         f"and {n2}")
    if axis >= 0:
        if axis - n1 != axis - n2:
            raise ValueError(f"cross: a non-negative axis ({axis}) names different dimensions "
                             f"of operands of dimension {n1} and {n2}; pass a negative axis "
                             "(counted from the end, as the array API recommends)")
        axis -= n1
    return axis


@defop(kind=LINALG, nin=2, domain=ANY, sample=_sample_cross, namespace="linalg")
def cross(B, x1, x2, axis=-1):
    """Cross product of 3-element vectors along ``axis`` (the array API's
    ``linalg.cross``); the other dimensions broadcast.

    Parameters
    ----------
    x1, x2 : Tensor
        Both of size 3 along ``axis``.
    axis : int
        The dimension holding the vectors (negative: counted from the end, the same for
        both operands and the result).

    Notes
    -----
    Bilinear, differentiable in both operands: ``g1 = cross(conj(x2), g)`` and
    ``g2 = cross(g, conj(x1))``.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.linalg.cross(ndgrad.tensor([1.0, 0.0, 0.0]), ndgrad.tensor([0.0, 1.0, 0.0]))
    tensor([0., 0., 1.])
    """
    axis = _cross_axis(axis, x1.ndim, x2.ndim)
    if x1.shape[axis] != 3 or x2.shape[axis] != 3:
        raise ValueError(f"cross: both operands need 3 elements along axis {axis}, got shapes "
                         f"{x1.shape} and {x2.shape}")
    return B.linalg.cross(x1, x2, axis=axis)


# <g, dx1 x x2> = <conj(x2) x g, dx1> (for real vectors: the scalar triple product)
cross.defvjp(lambda F, g, out, x1, x2, axis=-1: F.linalg.cross(_cj(F, x2), g,
                                                               axis=_cross_axis(axis, x1.ndim,
                                                                                x2.ndim)),
             lambda F, g, out, x1, x2, axis=-1: F.linalg.cross(g, _cj(F, x1),
                                                               axis=_cross_axis(axis, x1.ndim,
                                                                                x2.ndim)))
cross.defjvp_each(
    lambda F, t, out, x1, x2, axis=-1: F.linalg.cross(t, x2, axis=axis),
    lambda F, t, out, x1, x2, axis=-1: F.linalg.cross(x1, t, axis=axis))
cross.defstructure(multilinear())


def _cross_batch(F, batched, x1, x2, axis=-1):
    b1, b2 = batched
    axis = _cross_axis(axis, logical_ndim(x1, b1), logical_ndim(x2, b2))
    a, b = _batch_pair(F, batched, x1, x2)
    return F.linalg.cross(a, b, axis=axis)


cross.defbatch(_cross_batch)
