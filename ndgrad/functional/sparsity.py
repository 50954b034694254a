"""Sparsity patterns of Jacobians and Hessians, found without computing a derivative:
``jacobian_sparsity`` and ``hessian_sparsity`` (``ndgrad.func``).

Note [Sparsity propagation]
~~~~~~~~~~~~~~~~~~~~~~~~~~~
``f`` runs at a transform level (Note [Levels] in core/levels.py) whose data on each tensor
``t`` that depends on the input ``x`` is a boolean ``scipy.sparse`` matrix ``D_t`` of shape
``(t.size, x.size)``: row ``k`` holds the input elements that element ``k`` of ``t`` (C order)
depends on. ``x`` starts with the identity; every primitive maps its inputs' matrices to its
outputs' by the rule its declaration names (``Op.defsparsity``), else the one its declared
structure gives (``Op.structure``, Note [Op structure] in core/ops/registry.py), else its
``kind``'s default; the pattern of ``f`` is ``D`` of its output. The values are computed
too, at ``x``: shapes, control flow and the ``"local"`` rules use them. The rules:

* ``elementwise`` (the default of elementwise ops): an output element depends on the
  elements of the inputs at its position (broadcasting included), of the inputs with a
  derivative (the structure's ``inputs``: ``copysign``, its first only);
* ``zero``: on nothing (``sign``, comparisons, integer outputs; the piecewise constant ops
  by their structure);
* ``moves`` (the default of shape and indexing ops): each output element is an input
  element or a constant. Found by running the op's forward on element numbers: once with
  ``id + 1`` and once with ``id + 1 + K`` per input (the other inputs zero); an output that
  moves by ``K`` came from element ``id``, one that does not move is a constant, anything
  else (a sum of elements, as ``index_add`` with repeated indices) depends on every element
  of that input. An op whose output changes shape with the numbers (``trim_zeros``) is
  treated as dense;
* ``reduction`` (the default of reductions): on the elements reduced into it;
  ``extremum``: the same under ``"global"``, the largest (smallest) under ``"local"``;
* ``scan``: on the elements up to it along the axis;
* ``contraction`` (a multilinear op declared ``matrix_product``, ``matmul``): ``C[i, j]``
  on ``A[i, :]`` and ``B[:, j]``;
* ``multilinear`` (any other op declared multilinear: ``tensordot``, ``vecdot``,
  ``einsum``, ``outer``, ``linalg.cross``): linear in each input for fixed others, so output
  ``k`` depends on element ``p`` of input ``i`` where the op with ``e_p`` for input ``i``
  and generic values for the others is nonzero at ``k`` (exact, one run per element);
* ``where``: the union of ``x``'s and ``y``'s under ``"global"``, the one the condition
  selects under ``"local"``; ``extremum`` (``maximum``, ``minimum``; ``max``, ``min`` over
  their axes), ``clip``: the union of the candidates under ``"global"``, under ``"local"``
  the candidates equal to the output (every one on a tie); ``remainder``: under
  ``"local"``, not on ``y`` where ``d/dy = -floor(x / y)`` is zero;
* ``sort``: along the axis any to any (``"global"``), the sorting permutation (``"local"``);
* ``dense`` (the default of dense linear algebra and FFTs): every output element on every
  input element; for the ``ndgrad.linalg`` functions of stacks of matrices, on the elements
  of its own matrix of the stack. A custom Function, or an op of no known kind, is dense
  too, with a warning naming it.

So the pattern contains every entry the Jacobian can have (at ``x`` for ``"local"``, at every
point reached by the same control flow for ``"global"``), and equals the Jacobian's nonzeros
for elementwise, shape and indexing computations. ``hessian_sparsity`` also gathers, for a
scalar ``f``, the pairs of input elements that interact nonlinearly: an op declared linear,
piecewise linear or piecewise constant (``Op.structure``), or whose rule selects input
elements (``moves``, ``sort``, ``where``, ``extremum``, ``clip``), adds none; one declared
multilinear (``multiply``, ``matmul``, ``outer``, ``tensordot``, ``vecdot``, ``einsum``,
``linalg.cross``) is linear in each input, so it adds only the pairs of an element of one
input with an element of another that reach the same output element (for a matrix product,
through the same contracted index; none if only one input depends on ``x``); any other the
pairs within each output element's dependencies (``D_outᵀ D_out``).
The Hessian's pattern is their union.

The rules read an op's parameters by name, whether they were given by keyword or by position
(Note [Rules read parameters by name]), and a rule's result must have one row per output
element: a rule that breaks this is an error naming the op, never a silently wrong pattern.
In-place operations and views follow Note [Views at the data levels] in core/data_level.py:
a view's pattern follows an in-place change of its base, and a write through a view reaches
its base.
"""

from __future__ import annotations

import warnings

import numpy as np

from ..core.backend import NUMPY, is_differentiable_dtype
from ..core.data_level import DataInfo, DataInterpreter, data_of
from ..core.ops.registry import ELEMENTWISE, Algebra
from ..core.tensor import Tensor, host_array as _host

__all__ = ["jacobian_sparsity", "hessian_sparsity"]

_KINDS = ("global", "local")
_DEFAULTS = {"elementwise": "elementwise", "comparison": "zero", "shape": "moves",
             "indexing": "moves", "reduction": "reduction", "scan": "scan", "linalg": "dense"}
_SHIFT = float(2 ** 40)  # (element numbers stay exact in float64 up to 2**53)


def _sp():
    import scipy.sparse as sp
    return sp


class _SparsityInfo(DataInfo):
    __slots__ = ("n", "kind", "hessian", "warned")

    def __init__(self, n, kind, hessian):
        super().__init__("hessian_sparsity" if hessian else "jacobian_sparsity")
        self.n = n
        self.kind = kind
        self.hessian = None if not hessian else _sp().csr_array((n, n), dtype=bool)
        self.warned = set()


# ------------------------------------------------------------------------------ helpers
def _empty(rows, n):
    return _sp().csr_array((rows, n), dtype=bool)


def _rows(D, index):
    """Rows ``index`` of ``D`` (a flat integer array; -1 selects an empty row)."""
    index = np.asarray(index, dtype=np.int64).reshape(-1)
    if D.shape[0] == 0:
        return _empty(index.size, D.shape[1])
    missing = index < 0
    if not missing.any():
        return D[index]
    picked = D[np.where(missing, 0, index)].tocsr()
    keep = _sp().diags_array((~missing).astype(np.int8), format="csr", dtype=np.int8)
    return (keep @ picked).astype(bool)


def _union(*Ds):
    Ds = [D for D in Ds if D is not None]
    if not Ds:
        return None
    if len(Ds) == 1:
        return Ds[0]
    out = Ds[0]
    for D in Ds[1:]:
        out = out + D
    return out.astype(bool).tocsr()


def _gather(D, into, rows, size):
    """Row ``g`` of the result (``size`` rows): the union of ``D``'s rows ``rows[t]`` over the
    ``t`` with ``into[t] == g`` (a 0/1 aggregation matrix times ``D``)."""
    into = np.asarray(into, dtype=np.int64).reshape(-1)
    rows = np.asarray(rows, dtype=np.int64).reshape(-1)
    R = _sp().csr_array((np.ones(rows.size, dtype=np.int8), (into, rows)),
                        shape=(size, D.shape[0]))
    return (R @ D.astype(np.int8)).astype(bool).tocsr()


def _group(D, groups, size):
    """Row ``g`` of the result: the union of ``D``'s rows ``k`` with ``groups[k] == g``."""
    return _gather(D, groups, np.arange(D.shape[0]), size)


def _group_pairs(D, members, size):
    """Row ``g``: the union of ``D``'s rows ``members[g, :]``."""
    return _gather(D, np.repeat(np.arange(size), members.shape[1]), members, size)


def _matmul_operands(sa, sb):
    """Element numbers of ``matmul``'s operands of shapes ``sa`` and ``sb`` (NumPy's rules:
    1-D operands promoted, batch dimensions broadcast): ``(A (..., m, k), B (..., k, p),
    batch)``."""
    ia = np.arange(int(np.prod(sa, dtype=np.int64))).reshape(sa)
    ib = np.arange(int(np.prod(sb, dtype=np.int64))).reshape(sb)
    a2 = ia[None, :] if ia.ndim == 1 else ia
    b2 = ib[:, None] if ib.ndim == 1 else ib
    batch = np.broadcast_shapes(a2.shape[:-2], b2.shape[:-2])
    return (np.broadcast_to(a2, batch + a2.shape[-2:]),
            np.broadcast_to(b2, batch + b2.shape[-2:]), batch)


def _dense_rows(Ds, size, n):
    """Every one of ``size`` rows depends on every element any of ``Ds`` depends on."""
    cols = np.zeros(n, dtype=bool)
    for D in Ds:
        if D is not None and D.nnz:
            cols[D.tocoo().col] = True
    idx = np.flatnonzero(cols)
    if not idx.size or not size:
        return _empty(size, n)
    indptr = np.arange(size + 1, dtype=np.int64) * idx.size
    return _sp().csr_array((np.ones(size * idx.size, dtype=bool), np.tile(idx, size), indptr),
                           shape=(size, n))


def _broadcast_index(shape, out_shape):
    """For each element of ``out_shape``, the element of ``shape`` broadcast to it."""
    ids = np.arange(int(np.prod(shape, dtype=np.int64))).reshape(shape)
    return np.broadcast_to(ids, out_shape).reshape(-1)


def _shape(a):
    return tuple(a.shape) if isinstance(a, Tensor) else np.shape(a)


def _norm_axes(axis, ndim):
    if axis is None:
        return tuple(range(ndim))
    axes = (axis,) if np.ndim(axis) == 0 else tuple(axis)
    return tuple(sorted(int(a) % ndim for a in axes)) if ndim else ()


# ------------------------------------------------------------------------------ the rules
def _elementwise(op, data, out, args, params, n, lv):
    shape = _shape(out)
    size = int(np.prod(shape, dtype=np.int64))
    structure = op.structure
    Ds = []
    for i, D in enumerate(data):
        if D is None or not structure.concerns(i):  # (no derivative in input i)
            continue
        in_shape = _shape(args[i])
        index = None if in_shape == shape else _broadcast_index(in_shape, shape)
        if structure.multilinear:
            # (multiply) d(a b)/da = b: none where the other factor is zero, if it is a
            # constant (no data) or, under "local", at x
            other = args[1 - i]
            if data[1 - i] is None or lv.info.kind == "local":
                zero = np.broadcast_to(_host(other) == 0, shape).reshape(-1)
                if zero.any():
                    index = np.where(zero, -1, np.arange(size) if index is None else index)
        Ds.append(D if index is None else _rows(D, index))
    return _union(*Ds) if Ds else _empty(size, n)


def _where(op, data, out, args, params, n, lv):
    """``where(condition, x, y)``: global, the union; local, ``x``'s where the condition
    holds, ``y``'s elsewhere."""
    if lv.info.kind == "global":
        return _elementwise(op, data, out, args, params, n, lv)
    shape = _shape(out)
    cond = np.broadcast_to(_host(args[0]).astype(bool), shape).reshape(-1)
    return _picked(data, args, shape, n, [(1, cond), (2, ~cond)])


def _select(op, data, out, args, params, n, lv):
    """An elementwise selection among candidates (``maximum``/``minimum``: ``extremum``;
    ``clip``): global, the union; local, the candidates equal to the output (every tied
    one; all of them where the output is NaN)."""
    if lv.info.kind == "global":
        return _elementwise(op, data, out, args, params, n, lv)
    shape = _shape(out)
    y = _host(out).reshape(-1)
    nan = np.isnan(y)
    picks = []
    for i in range(len(data)):
        if data[i] is not None:
            c = np.broadcast_to(_host(args[i]), shape).reshape(-1)
            picks.append((i, (c == y) | nan))
    return _picked(data, args, shape, n, picks)


def _picked(data, args, shape, n, picks):
    """The union of input ``i``'s rows where ``mask`` holds, over ``picks`` of ``(i,
    mask)``."""
    size = int(np.prod(shape, dtype=np.int64))
    Ds = []
    for i, mask in picks:
        if i >= len(data) or data[i] is None:
            continue
        idx = _broadcast_index(_shape(args[i]), shape)
        Ds.append(_rows(data[i], np.where(mask, idx, -1)))
    return _union(*Ds) if Ds else _empty(size, n)


def _moves(op, data, out, args, params, n, lv):
    """Each output element from one input element or a constant (Note [Sparsity
    propagation]): the op's forward on element numbers."""
    outs = out if isinstance(out, (tuple, list)) else (out,)
    shapes = [_shape(o) for o in outs]
    sizes = [int(np.prod(s, dtype=np.int64)) for s in shapes]
    results = [[] for _ in outs]
    raw = []
    for a in args:
        if isinstance(a, Tensor):
            h = _host(a)
            raw.append(np.zeros(h.shape, dtype=np.float64) if h.dtype.kind in "fc" else h)
        else:
            raw.append(a)
    for i, D in enumerate(data):
        if D is None:
            continue
        ids = np.arange(D.shape[0], dtype=np.float64).reshape(_shape(args[i])) + 1.0
        runs = []
        for shift in (0.0, _SHIFT):
            values = list(raw)
            values[i] = ids + shift
            try:
                r = op.forward(NUMPY, *values, **params)
            except Exception:
                r = None
            runs.append(None if r is None else
                        [np.asarray(v) for v in (r if isinstance(r, (tuple, list)) else (r,))])
        ok = runs[0] is not None and runs[1] is not None and \
            [v.shape for v in runs[0]] == [tuple(s) for s in shapes]
        for k in range(len(outs)):
            if not ok:
                results[k].append(_dense_rows([D], sizes[k], n))
                continue
            a, b = runs[0][k].reshape(-1), runs[1][k].reshape(-1)
            if np.iscomplexobj(a):
                a, b = a.real, b.real
            moved = (b - a == _SHIFT) & (a >= 1) & (a <= D.shape[0])
            constant = a == b
            src = np.where(moved, a - 1, -1).astype(np.int64)
            part = _rows(D, src)
            mixed = ~(moved | constant)
            if mixed.any():
                extra = _dense_rows([D], sizes[k], n)
                keep = _sp().diags_array(mixed.astype(np.int8), format="csr", dtype=np.int8)
                part = _union(part, (keep @ extra.astype(np.int8)).astype(bool))
            results[k].append(part)
    merged = [_union(*r) if r else _empty(s, n) for r, s in zip(results, sizes)]
    return merged


def _reduction(op, data, out, args, params, n, lv):
    x = args[0]
    shape = _shape(x)
    ndim = len(shape)
    axes = _norm_axes(params.get("axis"), ndim)
    keep = [d for d in range(ndim) if d not in axes]
    ids = np.arange(int(np.prod(shape, dtype=np.int64))).reshape(shape)
    moved = np.transpose(ids, keep + list(axes))
    outer = int(np.prod([shape[d] for d in keep], dtype=np.int64))
    groups = np.empty(ids.size, dtype=np.int64)
    groups[moved.reshape(-1)] = np.repeat(np.arange(outer), ids.size // max(outer, 1))
    D = data[0]
    if op.sparsity == "extremum" and lv.info.kind == "local":
        xs = _host(x)
        xs = np.transpose(xs, keep + list(axes)).reshape(outer, -1)
        best = _host(out).reshape(outer, 1)     # (the extremum: the elements equal to it)
        chosen = (xs == best) | np.isnan(xs)
        flat = moved.reshape(outer, -1)
        src = np.full(ids.size, -1, dtype=np.int64)
        src[flat[chosen]] = flat[chosen]
        D = _rows(D, src)
    return _group(D, groups, outer)


def _scan(op, data, out, args, params, n, lv):
    x = args[0]
    shape = _shape(x)
    D = data[0]
    axis = params.get("axis")
    if axis is None:
        shape, axis = (int(np.prod(shape, dtype=np.int64)),), 0
    axis %= len(shape)
    ids = np.moveaxis(np.arange(int(np.prod(shape, dtype=np.int64))).reshape(shape), axis, -1)
    lines = ids.reshape(-1, shape[axis])
    initial = bool(params.get("include_initial"))
    L = shape[axis]
    rows, cols = [], []
    # output position j of a line depends on the line's first j (+1) elements
    out_len = L + initial
    out_ids = np.moveaxis(np.arange(int(np.prod(_shape(out), dtype=np.int64)))
                          .reshape(_shape(out)), axis, -1).reshape(-1, out_len)
    for j in range(out_len):
        upto = j if initial else j + 1
        if upto == 0:
            continue
        r = np.repeat(out_ids[:, j], upto)
        c = lines[:, :upto].reshape(-1)
        rows.append(r)
        cols.append(c)
    size = out_ids.size
    if not rows:
        return _empty(size, n)
    return _gather(D, np.concatenate(rows), np.concatenate(cols), size)


def _contraction(op, data, out, args, params, n, lv):
    """NumPy's matrix product (a multilinear op declared ``matrix_product``, ``matmul``: 1-D
    operands promoted, batch dimensions broadcast): each output element on the elements of
    the row and column it contracts."""
    A, B, batch = _matmul_operands(_shape(args[0]), _shape(args[1]))
    m, k, p = A.shape[-2], A.shape[-1], B.shape[-1]
    # for output (..., i, j) and each l: A[..., i, l] and B[..., l, j]
    ra = np.broadcast_to(A[..., :, None, :], batch + (m, p, k)).reshape(-1, k)
    rb = np.broadcast_to(np.swapaxes(B, -1, -2)[..., None, :, :],
                         batch + (m, p, k)).reshape(-1, k)
    size = ra.shape[0]
    Ds = []
    for D, r in ((data[0], ra), (data[1], rb)):
        if D is not None:
            Ds.append(_group_pairs(D, r, size))
    return _union(*Ds) if Ds else _empty(size, n)


MULTILINEAR_PROBES = 2048


def _multilinear(op, data, out, args, params, n, lv):
    """Any other op declared multilinear (``tensordot``, ``vecdot``, ``einsum``, ``outer``,
    ``linalg.cross``): linear in input ``i`` for fixed others, so output element ``k``
    depends on element ``p`` of ``i`` exactly where the op's forward, with ``e_p`` for
    ``i`` and generic values (seeded uniforms in [1, 2]) for the others, is nonzero at
    ``k`` (one run per element of each input with a pattern). Beyond MULTILINEAR_PROBES
    elements in all, those runs would cost more than the pattern saves (vecdot of 2 x 4800
    took 0.12 s against 0.007 s dense, and the boolean Jacobian is output size x input
    size): the pattern is then the dense one, as before the declaration was read."""
    shape = _shape(out)
    size = int(np.prod(shape, dtype=np.int64))
    nin = len(data)
    probes = sum(int(np.prod(_shape(args[i]), dtype=np.int64)) for i, D in enumerate(data)
                 if D is not None and op.structure.concerns(i))
    if probes > MULTILINEAR_PROBES:
        return _dense(op, data, out, args, params, n, lv)
    rng = np.random.default_rng(0)
    generic = []
    for a in args[:nin]:
        if isinstance(a, Tensor) or np.ndim(a):
            generic.append(rng.uniform(1.0, 2.0, _shape(a)))
        else:
            generic.append(a)
    extra = args[nin:]
    Ds = []
    for i, D in enumerate(data):
        if D is None or not op.structure.concerns(i):
            continue
        m = int(np.prod(_shape(args[i]), dtype=np.int64))
        J = np.zeros((size, m), dtype=bool)
        for p in range(m):
            probe = np.zeros(m)
            probe[p] = 1.0
            values = list(generic)
            values[i] = probe.reshape(_shape(args[i]))
            r = op.forward(NUMPY, values, *extra, **params) if op.pack else \
                op.forward(NUMPY, *values, *extra, **params)
            J[:, p] = np.asarray(r).reshape(-1) != 0
        Ds.append((_sp().csr_array(J.astype(np.int8)) @ D.astype(np.int8)).astype(bool))
    return _union(*Ds) if Ds else _empty(size, n)


def _sort(op, data, out, args, params, n, lv):
    x = args[0]
    shape = _shape(x)
    axis = params.get("axis", -1)
    if axis is None:            # (the flattened array)
        shape, axis = (int(np.prod(shape, dtype=np.int64)),), 0
        x = _host(x).reshape(shape)
    axis %= len(shape)
    if lv.info.kind == "global":
        return _reduction_lines(data[0], shape, axis)
    xs = _host(x).reshape(shape)
    order = np.argsort(-xs if params.get("descending") else xs, axis=axis, kind="stable")
    ids = np.arange(xs.size).reshape(shape)
    return _rows(data[0], np.take_along_axis(ids, order, axis=axis))


def _reduction_lines(D, shape, axis):
    """Every element on every element of its line along ``axis``."""
    ids = np.moveaxis(np.arange(int(np.prod(shape, dtype=np.int64))).reshape(shape), axis, -1)
    lines = ids.reshape(-1, shape[axis])
    L = shape[axis]
    members = np.repeat(lines, L, axis=0)               # row of every element: its line
    order = lines.reshape(-1)
    out = np.empty_like(members)
    out[order] = members
    return _group_pairs(D, out, out.shape[0])


def _dense(op, data, out, args, params, n, lv):
    """Every output element on every input element; for ``ndgrad.linalg``'s functions of
    stacks of matrices, within each matrix of the stack (the batch dimensions)."""
    outs = out if isinstance(out, (tuple, list)) else (out,)
    sizes = [int(np.prod(_shape(o), dtype=np.int64)) for o in outs]
    batch = _matrix_batch(op, data, outs, args)
    if batch is None:
        return [_dense_rows(data, size, n) for size in sizes]
    nb = int(np.prod(batch, dtype=np.int64))
    per_batch = []                      # (nb, n): each batch's union over the inputs
    for i, D in enumerate(data):
        if D is None:
            continue
        shape = _shape(args[i])
        if len(shape) < 2:              # a vector shared by every matrix of the stack
            per_batch.append(_dense_rows([D], nb, n))
            continue
        core = int(np.prod(shape[-2:], dtype=np.int64))
        own = np.arange(int(np.prod(shape[:-2], dtype=np.int64))).reshape(shape[:-2])
        which = np.broadcast_to(own, batch).reshape(-1)      # batch b reads own[b]
        groups = np.repeat(np.arange(own.size), core)
        U = _group(D, groups, own.size)
        per_batch.append(_rows(U, which))
    U = _union(*per_batch)
    return [_rows(U, np.repeat(np.arange(nb), size // nb if nb else 0)) for size in sizes]


def _matrix_batch(op, data, outs, args):
    """The batch shape of a linalg function of stacks of matrices, or None."""
    if op.namespace != "linalg":
        return None
    shapes = [_shape(args[i]) for i, D in enumerate(data) if isinstance(args[i], Tensor)]
    stacks = [s[:-2] for s in shapes if len(s) >= 2]
    if not stacks:
        return None
    try:
        batch = np.broadcast_shapes(*stacks)
    except ValueError:
        return None
    if not batch or any(_shape(o)[:len(batch)] != batch for o in outs
                        if isinstance(o, Tensor)):
        return None
    return batch


def _remainder(op, data, out, args, params, n, lv):
    """``remainder(x, y)``: ``d/dx = 1``; ``d/dy = -floor(x / y)``, which is zero on open sets
    (``0 <= x / y < 1``): under ``"local"``, no dependence on ``y`` there."""
    if lv.info.kind == "global" or data[1] is None:
        return _elementwise(op, data, out, args, params, n, lv)
    shape = _shape(out)
    size = int(np.prod(shape, dtype=np.int64))
    x = np.broadcast_to(_host(args[0]), shape).reshape(-1)
    y = np.broadcast_to(_host(args[1]), shape).reshape(-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        flat = np.floor(x / y) == 0
    Ds = [] if data[0] is None else [_rows(data[0], _broadcast_index(_shape(args[0]), shape))]
    idx = _broadcast_index(_shape(args[1]), shape)
    Ds.append(_rows(data[1], np.where(flat, -1, idx)))
    return _union(*Ds) if Ds else _empty(size, n)


def _imag(op, data, out, args, params, n, lv):
    """``imag``: zero on a real input (its imaginary part is 0), elementwise on a complex."""
    if np.dtype(args[0].dtype).kind != "c":
        return _empty(int(np.prod(_shape(out), dtype=np.int64)), n)
    return _elementwise(op, data, out, args, params, n, lv)


_RULES = {"zero": None, "imag": _imag, "remainder": _remainder, "elementwise": _elementwise,
          "where": _where, "extremum": None, "clip": _select, "moves": _moves,
          "reduction": _reduction, "scan": _scan, "contraction": _contraction,
          "multilinear": _multilinear, "sort": _sort, "dense": _dense}
# the rules whose every output element is one input element (or a constant) along a smooth
# path: piecewise linear, so they add no Hessian pairs whatever the op declares
_SELECTIONS = frozenset(("zero", "moves", "where", "sort", "extremum", "clip"))


def _rule_of(op):
    """The op's rule: the one it names (``Op.defsparsity``), else its structure's (Note [Op
    structure] in core/ops/registry.py), else its kind's default."""
    rule = op.sparsity
    structure = op.structure
    if rule is None:
        if structure.algebra is Algebra.PIECEWISE_CONSTANT:
            rule = "zero"
        elif structure.multilinear and op.kind != ELEMENTWISE:
            rule = "contraction" if structure.matrix_product else "multilinear"
        else:
            rule = _DEFAULTS.get(op.kind)
    if rule is None:
        return None, None
    if rule == "extremum":
        return (_reduction if op.kind == "reduction" else _select), rule
    return _RULES[rule], rule


# ------------------------------------------------------------------------------ parameters
# Note [Rules read parameters by name]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# An op's parameters reach ``apply`` by keyword (``sum(x, axis=1)``) or by position after its
# array inputs (``sum(x, 1)``, ``x.sum(1)``). The rules read them by name (``params["axis"]``)
# and see only the array inputs in ``args``, so the positional ones are named first, by the
# forward's signature (``Op.input_names``). A rule that saw ``sum(x, 1)`` as a sum over every
# axis gave a pattern of one row for an output of several elements, and the next rule failed
# on it (or, for the last op, the pattern was silently wrong); ``_check_rows`` now makes any
# such mismatch an error that names the op.
def _by_name(op, args, nin, params):
    """``args``' array inputs, and ``params`` with the positional parameters after them
    named."""
    names = op.input_names(len(args))[nin:]
    named = dict(zip(names, args[nin:]))
    named.update(params)
    return args[:nin], named


def _check_rows(op, rule, outs, res, n):
    for o, D in zip(outs, res):
        if D is None or not isinstance(o, Tensor):
            continue
        size = o.numel()
        if D.shape != (size, n):
            raise RuntimeError(
                f"jacobian_sparsity: the sparsity rule {rule!r} of {op.qualname} gave a "
                f"pattern of shape {D.shape} for an output of {size} elements and an input "
                f"of {n} (a bug in ndgrad: please report it); pass the pattern yourself "
                "(sparsity=) to go on")


# ------------------------------------------------------------------------------ Hessian pairs
def _pairs(lv, op, rule, rule_fn, data, out, out_data, args, params):
    """The nonlinear interactions ``op`` adds (Note [Sparsity propagation])."""
    structure = op.structure
    if structure.curvature_free or rule in _SELECTIONS:
        return          # (linear, or piecewise linear: no second derivative)
    if structure.multilinear:
        if sum(D is not None for D in data) < 2:
            return      # (linear in the one input that moves)
        add = _cross_pairs(lv, op, rule, rule_fn, data, out, args, params)
    else:
        add = _sp().csr_array((lv.info.n, lv.info.n), dtype=bool)
        for D in out_data:
            if D is not None:
                Di = D.astype(np.int8)
                add = add + (Di.T @ Di).astype(bool)
    lv.info.hessian = (lv.info.hessian + add + add.T).astype(bool).tocsr()


def _cross_pairs(lv, op, rule, rule_fn, data, out, args, params):
    """Pairs across the inputs of an op declared multilinear (``Op.structure``): linear in
    each input, so its second derivatives pair an element of one input with an element of
    another that reach the same output element, never two elements of one input. Per output
    element: a matrix product per contracted index, an elementwise op the elements broadcast
    to that position (whatever the other factors' values: a zero factor kills a first
    derivative, not the cross one), any other (``tensordot``, ``vecdot``, ``einsum``,
    ``outer``, ``cross``) the elements its rule says the output element depends on, input by
    input."""
    if rule == "contraction":
        return _contraction_pairs(data, args)
    n = lv.info.n
    rows = []
    for i, D in enumerate(data):
        if D is None:
            continue
        if rule == "elementwise":
            R = _rows(D, _broadcast_index(_shape(args[i]), _shape(out)))
        else:   # (rules whose pattern for one input does not read the others' values)
            only = tuple(D if j == i else None for j in range(len(data)))
            R = rule_fn(op, only, out, args, params, n, lv)
            R = R[0] if isinstance(R, (list, tuple)) else R
        rows.append(R.astype(np.int8))
    add = _sp().csr_array((n, n), dtype=bool)
    for a in range(len(rows)):
        for b in range(a + 1, len(rows)):
            add = add + (rows[a].T @ rows[b]).astype(bool)
    return add


def _contraction_pairs(data, args):
    """A matrix product's pairs, per contracted index."""
    Da, Db = data[0].astype(np.int8), data[1].astype(np.int8)
    sa, sb = _shape(args[0]), _shape(args[1])
    A, B, batch = _matmul_operands(sa, sb)
    k = A.shape[-1]
    nb = int(np.prod(batch, dtype=np.int64))
    # group A's elements by (batch, contracted index l), B's likewise
    ga = np.broadcast_to((np.arange(nb).reshape(batch + (1, 1)) * k +
                          np.arange(k).reshape(1, k) if batch else np.arange(k)[None, :]),
                         A.shape)
    gb = np.broadcast_to((np.arange(nb).reshape(batch + (1, 1)) * k +
                          np.arange(k).reshape(k, 1) if batch else np.arange(k)[:, None]),
                         B.shape)
    Ua = _gather(Da, ga, A, nb * k)
    Ub = _gather(Db, gb, B, nb * k)
    return (Ua.astype(np.int8).T @ Ub.astype(np.int8)).astype(bool)


# ------------------------------------------------------------------------------ the level
class _SparsityInterpreter(DataInterpreter):
    """The dependency rules at a sparsity level (Note [Sparsity propagation]); the skeleton
    is the data levels' (Note [Data levels] in core/data_level.py)."""

    name = "sparsity"
    rules_below = False  # (its rules run on host arrays: NumPy forwards, SciPy matrices)

    def propagate(self, lv, op, data, out, args, params):
        nin = len(data)
        outs = out if op.nout != 1 else (out,)
        rule, name = _rule_of(op)
        if name == "zero":
            return None
        if rule is None:
            rule, name = _dense, "dense"
            if op.qualname not in lv.info.warned:
                lv.info.warned.add(op.qualname)
                warnings.warn(f"jacobian_sparsity: {op.qualname} declares no sparsity rule; "
                              "its outputs are taken to depend on every element of its "
                              "inputs", stacklevel=4)
        if len(args) > nin:     # (Note [Rules read parameters by name])
            args, params = _by_name(op, args, nin, params)
        res = rule(op, data, out, args, params, lv.info.n, lv)
        res = list(res) if isinstance(res, (list, tuple)) else [res]
        _check_rows(op, name, outs, res, lv.info.n)
        if lv.info.hessian is not None:
            _pairs(lv, op, name, rule, data, out, res, args, params)
        return res

    def function_rule(self, lv, cls, ctx, args, kwargs, data, outs):
        """A custom Function: its outputs depend on every element of its inputs."""
        if cls.__name__ not in lv.info.warned:
            lv.info.warned.add(cls.__name__)
            warnings.warn(f"jacobian_sparsity: the custom Function {cls.__name__} has no "
                          "sparsity rule; its outputs are taken to depend on every element "
                          "of its inputs", stacklevel=4)
        res = []
        for o in outs:
            if isinstance(o, Tensor) and is_differentiable_dtype(o.dtype):
                D = _dense_rows(data, o.numel(), lv.info.n)
                if lv.info.hessian is not None:
                    Di = D.astype(np.int8)
                    lv.info.hessian = (lv.info.hessian + (Di.T @ Di).astype(bool)).tocsr()
                res.append(D)
            else:
                res.append(None)
        return res

    def zeros(self, D):
        return _empty(D.shape[0], D.shape[1])


_SPARSITY = _SparsityInterpreter()


def _trace(f, x, args, kind, hessian, who):
    if not callable(f):
        raise TypeError(f"{who}: expected a function, got {type(f).__name__}")
    if not isinstance(x, Tensor):
        raise TypeError(f"{who}: x must be a Tensor, got {type(x).__name__}")
    if not is_differentiable_dtype(x.dtype):
        raise TypeError(f"{who}: x must be a floating-point or complex Tensor, got dtype "
                        f"{x.dtype}")
    if kind not in _KINDS:
        raise ValueError(f"{who}: kind must be one of {_KINDS}, got {kind!r}")
    n = x.numel()
    lv = _SPARSITY.enter(_SparsityInfo(n, kind, hessian))
    try:
        eye = _sp().csr_array((np.ones(n, dtype=bool), np.arange(n), np.arange(n + 1)),
                              shape=(n, n))
        xv = _SPARSITY.carrier(lv, x, eye)  # a view of x carrying the identity
        y = f(xv, *args)
        if not isinstance(y, Tensor):
            raise TypeError(f"{who}: f must return a Tensor, got {type(y).__name__}")
        D = data_of(y, lv)
        H = lv.info.hessian
    finally:
        _SPARSITY.leave(lv)
    m = y.numel()
    D = _empty(m, n) if D is None else D
    return _sp().csr_array(D, dtype=bool), H, y


def jacobian_sparsity(f, x, *args, kind="global"):
    """The sparsity pattern of the Jacobian of ``f`` at ``x``, found by propagating index
    sets through the primitives, without computing any derivative.

    Parameters
    ----------
    f : callable
        ``f(x, *args) -> Tensor``, written with ndgrad operations.
    x : Tensor
        The point (any shape: the Jacobian's columns are its elements in C order).
    *args
        Further arguments of ``f`` (constants: no column of the pattern).
    kind : {"global", "local"}
        "global": the entries the Jacobian can have anywhere the same control flow is taken
        (``where``, ``maximum``, ``clip``, ``sort``, ``max`` keep every candidate); "local":
        those it can have at ``x`` (only the selected candidate).

    Returns
    -------
    scipy.sparse.csr_array
        Booleans of shape ``(f(x).size, x.size)``: ``True`` where the Jacobian may be
        nonzero. Every nonzero of the Jacobian is in it; for elementwise, shape and indexing
        computations it is exactly the nonzeros (Note [Sparsity propagation]).

    Examples
    --------
    A 1-D second difference: each residual depends on its neighbours, a tridiagonal pattern:

    >>> import ndgrad
    >>> from ndgrad.func import jacobian_sparsity
    >>> def residual(u):
    ...     padded = ndgrad.pad(u, 1)
    ...     return padded[2:] - 2 * u + padded[:-2] + ndgrad.exp(u)
    >>> P = jacobian_sparsity(residual, ndgrad.zeros(5))
    >>> P.toarray().astype(int)
    array([[1, 1, 0, 0, 0],
           [1, 1, 1, 0, 0],
           [0, 1, 1, 1, 0],
           [0, 0, 1, 1, 1],
           [0, 0, 0, 1, 1]])
    """
    D, _, _ = _trace(f, x, args, kind, False, "jacobian_sparsity")
    return D


def hessian_sparsity(f, x, *args, kind="global"):
    """The sparsity pattern of the Hessian of a scalar ``f`` at ``x``: the pairs of input
    elements that interact nonlinearly, found without computing a derivative (Note
    [Sparsity propagation]).

    Parameters
    ----------
    f : callable
        ``f(x, *args) -> 0-d Tensor``, written with ndgrad operations.
    x : Tensor
    *args
        Constants.
    kind : {"global", "local"}
        As for :func:`jacobian_sparsity`.

    Returns
    -------
    scipy.sparse.csr_array
        Symmetric booleans of shape ``(x.size, x.size)``.

    Examples
    --------
    >>> import ndgrad
    >>> from ndgrad.func import hessian_sparsity
    >>> def energy(u):   # a chain: each term couples two neighbours
    ...     return ((u[1:] - u[:-1]) ** 2).sum() + (u ** 4).sum()
    >>> hessian_sparsity(energy, ndgrad.zeros(4)).toarray().astype(int)
    array([[1, 1, 0, 0],
           [1, 1, 1, 0],
           [0, 1, 1, 1],
           [0, 0, 1, 1]])
    """
    _, H, y = _trace(f, x, args, kind, True, "hessian_sparsity")
    if y.numel() != 1:
        raise ValueError(f"hessian_sparsity: f must return a scalar, got shape "
                         f"{list(y.shape)}")
    return _sp().csr_array(H, dtype=bool)
