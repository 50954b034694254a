"""Sparsity detection (ndgrad.func.jacobian_sparsity, hessian_sparsity) for every registered
op and on structured problems.

References: the nonzeros of dense Jacobians and Hessians computed by ``jacrev``/``hessian``
(checked against finite differences by the registry suites), and closed-form patterns
(tridiagonal, banded, block-diagonal, 2-D stencil, arrowhead). The detected pattern must
contain every nonzero (for every op, at hypothesis-drawn points), and equal the nonzeros
for elementwise, shape and indexing ops under ``kind="local"``.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, assume, given, settings
from hypothesis import strategies as st

import ndgrad as nd
from ndgrad.core.backend import NUMPY
from ndgrad.core.ops import COMPOSITES, REGISTRY
from ndgrad.core.ops.registry import VARIADIC
from ndgrad.func import (coloring, hessian, hessian_sparsity, jacobian_sparsity, jacrev,
                         sparse_hessian, sparse_jacfwd, sparse_jacobian, sparse_jacrev)
from registry_harness import (FLOAT, differentiable, draw, entry, outs, public_call,
                              view_outputs)
from support import fd_jacobian, host

HOST = pytest.mark.cpu_only("sparsity patterns are host-side index sets; the ops' device "
                            "paths are the registry suites' (test_on_the_default_device below "
                            "runs on every device)")

FEW = settings(max_examples=2, deadline=None, phases=[Phase.explicit, Phase.generate],
               suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
SIZES = {"max_side": 4, "max_dims": 3}
EXACT_KINDS = ("elementwise", "shape", "indexing")
# value-dependent moves whose local pattern the element-number rule cannot see exactly
NOT_EXACT = {
    "trim_zeros": "which elements are trimmed depends on the values",
    "index_add": "an element that sums several (a repeated index) is taken to depend on "
                 "every element of the summed input",
    "histogram": "the bin edges depend on the smallest and largest samples only",
    "bincount": "a bin sums the weights of every sample in it (as index_add)",
    "histogram2d": "the bin edges depend on the smallest and largest samples only",
    "special.sph_harm_y": "an element whose order |m| exceeds its degree n is 0 for every "
                          "angle (SciPy's convention): a zero set by the integer arguments",
}


def _dense_pattern(f, x):
    J = host(jacrev(f)(x))
    out_size = int(np.prod(J.shape[:J.ndim - x.ndim], dtype=np.int64)) if x.ndim else J.size
    return J.reshape(out_size, x.numel()) != 0


@HOST
@pytest.mark.parametrize("name", differentiable(sorted(REGISTRY) + sorted(COMPOSITES), "vjp"))
@FEW
@given(data=st.data())
def test_pattern_contains_the_jacobian_nonzeros_of_every_op(name, data):
    op = entry(name)
    sample = draw(data, op, FLOAT, **SIZES)
    if not sample.pos:
        pytest.skip(f"{name}: no floating input")
    f = sample.function(floating_outputs=True)
    floats = [nd.tensor(a) for a in sample.floats]
    exact = op.kind in EXACT_KINDS and name not in NOT_EXACT and \
        getattr(op, "sparsity", None) != "dense"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i in range(len(floats)):
            for k in range(len(f(*floats))):
                def fi(x, i=i, k=k):
                    xs = list(floats)
                    xs[i] = x
                    return f(*xs)[k]
                x = floats[i]
                true = _dense_pattern(fi, x)
                # (a nonzero that vanishes by coincidence at a simple drawn point, as
                # d/dy kl_div(x, y) = 1 - x / y at x = y, is still a structural one)
                nearby = x + nd.tensor(1e-3 * np.random.default_rng(0).uniform(
                    0.5, 1.0, tuple(x.shape)))
                generic = true | _dense_pattern(fi, nearby)
                for kind in ("global", "local"):
                    P = jacobian_sparsity(fi, x, kind=kind).toarray()
                    assert P.shape == true.shape, (name, P.shape, true.shape)
                    missing = true & ~P
                    assert not missing.any(), (
                        f"{name} ({kind}), input {i}, output {k}: the pattern misses "
                        f"Jacobian nonzeros at {np.argwhere(missing)[:5].tolist()}")
                    if exact and kind == "local":
                        extra = P & ~generic
                        assert not extra.any(), (
                            f"{name}: the pattern of an {op.kind} op has entries the Jacobian "
                            f"does not, at {np.argwhere(extra)[:5].tolist()}")


# Broadcasting against constants around each op (Note [Rules read parameters by name] in
# ndgrad/functional/sparsity.py came from this sweep). The op's floating input ``i`` is
# ``base + x * C``: ``base`` the drawn value (so the op sees a valid input), ``x`` a smaller
# variable (taken at 0) that a constant ``C`` of another shape broadcasts; the op's output
# is multiplied by constants of several shapes (one with an extra leading axis) and reduced
# over axes given by keyword, by position and with keepdims.
def _pre_broadcasts(s):
    """``(x shape, C shape)`` pairs whose product broadcasts against shape ``s``."""
    out = [((), ())]
    if len(s) >= 1:
        out.append((s[:-1] + (1,), s[-1:]))
        out.append((s[1:], (1,) * len(s[1:])))
    if len(s) >= 2:
        out.append(((1,) + s[1:], (s[0],) + (1,) * (len(s) - 1)))
    return out


def _post_reductions(t):
    """Functions of an op's output of shape ``t`` (a constant product, then a reduction)."""
    rng = np.random.default_rng(11)
    W = nd.tensor(rng.uniform(0.5, 1.5, t))
    W2 = nd.tensor(rng.uniform(0.5, 1.5, (2,) + t))
    out = [lambda y: y * W,
           lambda y: nd.sum(y * W2, 0),                       # axis by position
           lambda y: (y * W2).sum(axis=0, keepdims=True)]
    if len(t) >= 1:
        Wt = nd.tensor(rng.uniform(0.5, 1.5, t[-1:]))
        out.append(lambda y: nd.sum(y * Wt, -1))
        out.append(lambda y: nd.mean(y * W2, tuple(range(1, len(t) + 1)), keepdims=True))
        out.append(lambda y: (y * Wt[None]).prod(-1))
    return out


def _broadcast_variants(floats, f, i, k):
    """``(fi, x0)``: output ``k`` of the op, through a constant product and a reduction, as a
    function of a variable broadcast into input ``i``; one per pre- and post-broadcast
    (paired, cycling the shorter list)."""
    rng = np.random.default_rng(12)
    base = floats[i]
    pres = _pre_broadcasts(tuple(base.shape))
    posts = _post_reductions(tuple(f(*floats)[k].shape))
    for v in range(max(len(pres), len(posts))):
        xshape, cshape = pres[v % len(pres)]
        post = posts[v % len(posts)]
        C = nd.tensor(rng.uniform(0.5, 1.5, cshape))

        def fi(x, C=C, post=post):
            xs = list(floats)
            xs[i] = base + x * C
            return post(f(*xs)[k])
        yield fi, nd.zeros(xshape, dtype=base.dtype)


@HOST
@pytest.mark.parametrize("name", differentiable(sorted(REGISTRY) + sorted(COMPOSITES), "vjp"))
@FEW
@given(data=st.data())
def test_patterns_contain_the_nonzeros_under_broadcasting_of_every_op(name, data):
    # the Jacobian's nonzeros (jacrev) are in jacobian_sparsity's pattern, with the op's
    # input broadcast from a smaller variable and its output broadcast against constants and
    # reduced (every variant), and where the op has second derivatives the Hessian's nonzeros
    # (hessian) in hessian_sparsity's (the first variant of each input and output: the dense
    # Hessians were half of the suite's sparsity time)
    op = entry(name)
    sample = draw(data, op, FLOAT, **SIZES)
    if not sample.pos:
        pytest.skip(f"{name}: no floating input")
    second = not any(k in (getattr(op, "notes", None) or {}) for k in ("gradgrad", "fd"))
    f = sample.function(floating_outputs=True)
    floats = [nd.tensor(a) for a in sample.floats]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i in range(len(floats)):
            for k in range(len(f(*floats))):
                for variant, (fi, x) in enumerate(_broadcast_variants(floats, f, i, k)):
                    true = _dense_pattern(fi, x)
                    for kind in ("global", "local"):
                        P = jacobian_sparsity(fi, x, kind=kind).toarray()
                        assert P.shape == true.shape, (name, P.shape, true.shape)
                        missing = true & ~P
                        assert not missing.any(), (
                            f"{name} ({kind}), input {i}, output {k}, x {tuple(x.shape)}: "
                            f"the pattern misses Jacobian nonzeros at "
                            f"{np.argwhere(missing)[:5].tolist()}")
                    if not second or variant:
                        continue  # (the Hessian on the first variant)
                    h = lambda v, fi=fi: nd.sum(fi(v))  # noqa: E731
                    H = host(hessian(h)(x)).reshape(x.numel(), x.numel()) != 0
                    for kind in ("global", "local"):
                        P = hessian_sparsity(h, x, kind=kind).toarray()
                        missing = H & ~P
                        assert not missing.any(), (
                            f"{name} ({kind}), input {i}, output {k}, x {tuple(x.shape)}: "
                            f"the Hessian pattern misses nonzeros at "
                            f"{np.argwhere(missing)[:5].tolist()}")


def _parameters(op):
    """The parameters of the op's public function after its array inputs (the forward's,
    or its argument normaliser's where it has one)."""
    import inspect
    fn = op.normalize_args
    params = list(inspect.signature(fn or op.forward).parameters.values())
    return params[op.nin + (fn is None):]


def _both_ways(op, sample):
    """The sample's parameters (``extra`` and ``kwargs``) given once by position (every one
    the forward takes so, defaults filled in between) and once by keyword:
    ``((positional, keywords), keywords)``."""
    params = _parameters(op)
    named = dict(zip((p.name for p in params), sample.extra))
    named.update(sample.kwargs)
    positional = []
    for p in params:
        if p.kind is not p.POSITIONAL_OR_KEYWORD:
            break
        positional.append(p)
    # (none given: the first one's default, given both ways)
    last = max((k for k, p in enumerate(positional) if p.name in named), default=0)
    values = [named.get(p.name, p.default) for p in positional[:last + 1]]
    rest = {k: v for k, v in named.items()
            if k not in {p.name for p in positional[:last + 1]}}
    named.update((p.name, v) for p, v in zip(positional, values))
    return (values, rest), named


@HOST
@pytest.mark.parametrize("name", differentiable(sorted(
    n for n, op in REGISTRY.items() if op.nin != VARIADIC and any(
        p.kind is p.POSITIONAL_OR_KEYWORD for p in _parameters(op))), "vjp"))
@FEW
@given(data=st.data())
def test_parameters_by_position_give_the_pattern_they_give_by_keyword(name, data):
    # sum(x, 1) is sum(x, axis=1): the rules read parameters by name (Note [Rules read
    # parameters by name]); a rule that missed a positional axis reduced over every axis
    op = REGISTRY[name]
    sample = draw(data, op, FLOAT, **SIZES)
    assume(sample.pos)
    (positional, rest), named = _both_ways(op, sample)

    def call(xs, by_position):
        ins = sample.inputs(xs)
        out = op.public(*ins, *positional, **rest) if by_position else \
            op.public(*ins, **named)
        return tuple(o for o in outs(out) if o.dtype.kind in "fc")
    floats = [nd.tensor(a) for a in sample.floats]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i in range(len(floats)):
            for k in range(len(call(floats, False))):
                def fi(x, by_position, i=i, k=k):
                    xs = list(floats)
                    xs[i] = x
                    return call(xs, by_position)[k]
                true = _dense_pattern(lambda x: fi(x, True), floats[i])
                for kind in ("global", "local"):
                    P = jacobian_sparsity(fi, floats[i], True, kind=kind).toarray()
                    assert not (true & ~P).any(), (name, kind, i, k)
                    np.testing.assert_array_equal(
                        P, jacobian_sparsity(fi, floats[i], False, kind=kind).toarray())


MULTILINEAR = sorted(n for n, op in REGISTRY.items() if op.structure.multilinear)


@HOST
@pytest.mark.parametrize("name", MULTILINEAR)
@FEW
@given(data=st.data())
def test_multilinear_ops_pair_only_elements_of_different_inputs(name, data):
    # an op declared multilinear (Op.structure) is linear in each input: its Hessian pairs an
    # element of one input with one of another, never two of the same input; so a
    # weighted sum of its output has an empty Hessian pattern in one input, and in all of
    # its inputs at once (one variable, split) empty diagonal blocks
    op = REGISTRY[name]
    sample = draw(data, op, FLOAT, **SIZES)
    f = sample.function(floating_outputs=True)
    floats = [nd.tensor(a) for a in sample.floats]
    rng = np.random.default_rng(13)
    W = nd.tensor(rng.uniform(0.5, 1.5, tuple(f(*floats)[0].shape)))
    for i in range(len(floats)):
        def alone(x, i=i):
            xs = list(floats)
            xs[i] = x
            return nd.sum(f(*xs)[0] * W)
        assert not (host(hessian(alone)(floats[i])) != 0).any()
        assert hessian_sparsity(alone, floats[i]).nnz == 0, (name, i)
    sizes = [x.numel() for x in floats]
    if len(floats) < 2:
        return
    bounds = np.cumsum([0] + sizes)

    def together(x):
        xs = [x[bounds[j]:bounds[j + 1]].reshape(tuple(floats[j].shape))
              for j in range(len(floats))]
        return nd.sum(f(*xs)[0] * W)
    x = nd.concat([v.reshape(-1) for v in floats])
    true = host(hessian(together)(x)) != 0
    P = hessian_sparsity(together, x).toarray()
    assert not (true & ~P).any()
    for j in range(len(floats)):
        block = slice(bounds[j], bounds[j + 1])
        assert not true[block, block].any()
        assert not P[block, block].any(), (name, j)


def _split_inputs(floats):
    """``x`` -> the inputs, for one variable holding all of ``floats`` (C order, in turn)."""
    bounds = np.cumsum([0] + [v.numel() for v in floats])

    def split(x):
        return [x[bounds[j]:bounds[j + 1]].reshape(tuple(floats[j].shape))
                for j in range(len(floats))]
    return split, bounds


def _meeting_pairs(J, bounds):
    """Pairs ``(p, q)`` of elements of different inputs that some output element depends on
    both of (``J``: the dense Jacobian's nonzeros, outputs by inputs)."""
    Ji = J.astype(np.int64)
    meet = (Ji.T @ Ji) > 0
    for j in range(len(bounds) - 1):
        meet[bounds[j]:bounds[j + 1], bounds[j]:bounds[j + 1]] = False
    return meet


@HOST
@pytest.mark.parametrize("name", MULTILINEAR)
@FEW
@given(data=st.data())
def test_multilinear_ops_patterns_come_from_their_declaration(name, data):
    # an op declared multilinear (Op.structure, Note [Op structure]) needs no sparsity rule
    # of its own: at a generic point (no zero entries) its Jacobian pattern is exactly the
    # dense Jacobian's nonzeros, and its Hessian pattern pairs exactly the elements of
    # different inputs that meet in an output element (a matrix product, per contracted
    # index: a subset of those). Before, tensordot, vecdot, einsum and cross were dense.
    op = REGISTRY[name]
    sample = draw(data, op, FLOAT, **SIZES)
    f = sample.function(floating_outputs=True)
    floats = [nd.tensor(a) for a in sample.floats]
    split, bounds = _split_inputs(floats)
    rng = np.random.default_rng(17)
    n = int(bounds[-1])
    x = nd.tensor(rng.uniform(0.5, 1.5, n) * rng.choice([-1.0, 1.0], n))

    def together(x):
        return f(*split(x))[0]
    m = together(x).numel()
    J = host(jacrev(together)(x)).reshape(m, n) != 0
    np.testing.assert_array_equal(jacobian_sparsity(together, x).toarray(), J)
    W = nd.tensor(rng.uniform(0.5, 1.5, tuple(together(x).shape)))

    def weighted(x):
        return nd.sum(together(x) * W)
    true = host(hessian(weighted)(x)) != 0
    P = hessian_sparsity(weighted, x).toarray()
    meet = _meeting_pairs(J, bounds)
    assert not (true & ~P).any()
    assert not (P & ~meet).any()
    if not op.structure.matrix_product:
        np.testing.assert_array_equal(P, meet)


# (op, NumPy's own function, the shapes of a and b)
CONTRACTIONS = {
    "tensordot": (lambda a, b: nd.tensordot(a, b, 1), lambda a, b: np.tensordot(a, b, 1),
                  (2, 3), (3, 2)),
    "einsum": (lambda a, b: nd.einsum("ij,jk->ik", a, b),
               lambda a, b: np.einsum("ij,jk->ik", a, b), (2, 3), (3, 2)),
    "vecdot": (nd.vecdot, lambda a, b: np.sum(a * b, axis=-1), (2, 3), (2, 3)),
    "linalg.cross": (nd.linalg.cross, np.cross, (2, 3), (2, 3)),
}


@HOST
@pytest.mark.parametrize("name", sorted(CONTRACTIONS))
def test_hessian_pattern_after_a_contraction_is_smaller_than_dense(name):
    # f(a, b) = sum(op(a, b) ** 2): the square pairs the elements each output element
    # depends on, so the pattern is as fine as the op's Jacobian pattern. From the
    # multilinear declaration that is exact: it contains the dense Hessian's nonzeros and is
    # smaller than dense (before, these ops' outputs depended on every input element: dense).
    fn, npfn, sa, sb = CONTRACTIONS[name]
    rng = np.random.default_rng(5)
    na = int(np.prod(sa))
    n = na + int(np.prod(sb))

    def f(x):
        return nd.sum(fn(x[:na].reshape(sa), x[na:].reshape(sb)) ** 2)
    x = nd.tensor(rng.uniform(0.5, 1.5, n) * rng.choice([-1.0, 1.0], n))
    true = host(hessian(f)(x)) != 0
    P = hessian_sparsity(f, x).toarray()
    assert not (true & ~P).any()
    assert P.sum() < n * n
    # the exact pattern: pairs within each output element's dependencies (the Jacobian's
    # nonzeros of op, by central differences of NumPy's own function)
    x0 = host(x)
    J = fd_jacobian(lambda v: npfn(v[:na].reshape(sa), v[na:].reshape(sb)).reshape(-1), x0)
    Ji = (np.abs(J) > 1e-6).astype(np.int64)
    np.testing.assert_array_equal(P, (Ji.T @ Ji) > 0)


# ------------------------------------------------------------------------------ structures
def _tridiagonal(n):
    return (np.abs(np.subtract.outer(np.arange(n), np.arange(n))) <= 1)


def bratu(u, lam=1.0):
    padded = nd.pad(u, 1)
    return padded[2:] - 2 * u + padded[:-2] + lam * nd.exp(u)


def laplace_2d(u):              # u: (m, m), 5-point stencil with a nonlinear term
    p = nd.pad(u, 1)
    return (p[:-2, 1:-1] + p[2:, 1:-1] + p[1:-1, :-2] + p[1:-1, 2:] - 4 * u) + u ** 3


def _stencil(m):
    idx = np.arange(m * m).reshape(m, m)
    P = np.eye(m * m, dtype=bool)
    for di, dj in ((1, 0), (-1, 0), (0, 1), (0, -1)):
        for i in range(m):
            for j in range(m):
                if 0 <= i + di < m and 0 <= j + dj < m:
                    P[idx[i, j], idx[i + di, j + dj]] = True
    return P


def banded(u):                   # bandwidth 2: u[i] couples u[i-2 .. i+2]
    p = nd.pad(u, 2)
    return nd.sin(p[:-4] + 0.5 * p[4:]) + nd.exp(p[1:-3]) + p[3:-1] ** 3 + u


def block_diagonal(u):           # 4 independent blocks of 3
    blocks = u.reshape(4, 3)
    return (blocks @ nd.ones((3, 3)) * nd.tanh(blocks)).reshape(-1)


def arrowhead(u):                # every output depends on u[0]; u[0]'s on everything
    head = (u ** 2).sum().reshape(1)
    return nd.concat([head, u[1:] * u[0]])


@HOST
@pytest.mark.parametrize("f, n, expected", [
    (bratu, 8, lambda n: _tridiagonal(n)),
    (banded, 9, lambda n: np.abs(np.subtract.outer(np.arange(n), np.arange(n))) <= 2),
    (block_diagonal, 12, lambda n: np.kron(np.eye(4, dtype=bool), np.ones((3, 3), bool))),
    (arrowhead, 6, lambda n: np.eye(n, dtype=bool) | (np.arange(n) == 0)[None, :]
     | (np.arange(n) == 0)[:, None]),
], ids=["tridiagonal", "banded", "block-diagonal", "arrowhead"])
def test_structured_jacobian_patterns(f, n, expected):
    x = nd.tensor(np.random.default_rng(0).uniform(0.5, 1.5, n))
    P = jacobian_sparsity(f, x).toarray()
    np.testing.assert_array_equal(P, expected(n))
    np.testing.assert_array_equal(P, _dense_pattern(f, x))


@HOST
def test_two_dimensional_stencil_pattern():
    m = 6
    x = nd.tensor(np.random.default_rng(1).normal(size=(m, m)))
    P = jacobian_sparsity(laplace_2d, x).toarray()
    np.testing.assert_array_equal(P, _stencil(m))
    np.testing.assert_array_equal(P, _dense_pattern(laplace_2d, x))


@HOST
def test_local_and_global_differ_where_values_choose():
    x = nd.tensor([1.0, -2.0, 3.0, -4.0])
    y = nd.tensor([0.0, 0.0, 5.0, 5.0])

    def f(x):
        return nd.maximum(x, x[::-1]) + nd.where(x > 0, x, 0.0) + nd.clip(x, -3.0, 2.0)
    G = jacobian_sparsity(f, x, kind="global").toarray()
    L = jacobian_sparsity(f, x, kind="local").toarray()
    np.testing.assert_array_equal(L, _dense_pattern(f, x))
    assert G.sum() > L.sum() and (L <= G).all()
    # max over all: global every element, local the largest only
    np.testing.assert_array_equal(jacobian_sparsity(lambda v: nd.max(v * y), x,
                                                    kind="local").toarray(),
                                  [[False, False, True, False]])  # (15 = 3 * 5)
    # global: every candidate that depends on x (y's zeros are constants: v[0] * 0 is not)
    np.testing.assert_array_equal(jacobian_sparsity(lambda v: nd.max(v * y), x).toarray(),
                                  [[False, False, True, True]])


@HOST
def test_hessian_patterns():
    n = 7
    x = nd.tensor(np.random.default_rng(2).uniform(0.5, 1.5, n))

    def chain(u):
        return ((u[1:] - u[:-1]) ** 2).sum() + (u ** 4).sum()

    def separable(u):
        return (nd.exp(u) + 3 * u).sum()

    def bilinear(u):
        return (u[:3] @ u[3:6]) + u[6]

    def arrow(u):
        return u[0] * u.sum() + (u ** 2).sum()
    for f in (chain, separable, bilinear, arrow):
        H = hessian_sparsity(f, x).toarray()
        true = host(hessian(f)(x)) != 0
        assert not (true & ~H).any(), f.__name__
        np.testing.assert_array_equal(H, H.T)
    np.testing.assert_array_equal(hessian_sparsity(chain, x).toarray(), _tridiagonal(n))
    np.testing.assert_array_equal(hessian_sparsity(separable, x).toarray(), np.eye(n, dtype=bool))
    lin = hessian_sparsity(lambda u: (2 * u).sum() + u[0], x).toarray()
    assert not lin.any()                          # linear: no second derivative
    bil = hessian_sparsity(bilinear, x).toarray()
    expected = np.zeros((n, n), bool)
    expected[np.arange(3), np.arange(3, 6)] = expected[np.arange(3, 6), np.arange(3)] = True
    np.testing.assert_array_equal(bil, expected)


@HOST
def test_a_function_without_a_rule_is_dense_with_a_warning():
    class Double(nd.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return 2 * x

        @staticmethod
        def backward(ctx, g):
            return 2 * g
    x = nd.ones(3)
    with pytest.warns(UserWarning, match="Double has no sparsity rule"):
        P = jacobian_sparsity(lambda v: Double.apply(v) + v, x).toarray()
    assert P.all()


@HOST
def test_errors():
    with pytest.raises(TypeError, match="x must be a Tensor"):
        jacobian_sparsity(nd.sin, np.ones(3))
    with pytest.raises(TypeError, match="floating-point"):
        jacobian_sparsity(nd.sin, nd.arange(3))
    with pytest.raises(ValueError, match="kind must be one of"):
        jacobian_sparsity(nd.sin, nd.ones(3), kind="exact")
    with pytest.raises(ValueError, match="must return a scalar"):
        hessian_sparsity(nd.sin, nd.ones(3))


@HOST
@pytest.mark.parametrize("cshape", [(3,), (1, 3), (4, 1), (4, 3), (2, 4, 3)])
@pytest.mark.parametrize("reduce", ["position", "method", "keepdims", "mean"])
def test_blocks_times_a_broadcast_constant_summed_over_an_axis(cshape, reduce):
    # x reshaped into blocks, times a broadcast constant, summed over the block axis with
    # the axis given by position (the rules once read it as "every axis": a pattern of one
    # row, then "cannot reshape array of size 1 into shape (4,3)" or a wrong-length
    # pattern in sparse_hessian)
    rng = np.random.default_rng(14)
    C = nd.tensor(rng.uniform(0.5, 1.5, cshape))

    def f(x):
        p = x.reshape(4, 3) * C
        if reduce == "position":
            return nd.sum(p, -1)
        if reduce == "method":
            return p.sum(-1)
        if reduce == "keepdims":
            return nd.sum(p, -1, keepdims=True)
        return nd.mean(p, -1)
    x = nd.tensor(rng.normal(size=12))
    blocks = np.kron(np.eye(4, dtype=bool), np.ones((1, 3), bool))
    expected = np.tile(blocks, (int(np.prod(cshape[:-2])), 1))
    P = jacobian_sparsity(f, x).toarray()
    np.testing.assert_array_equal(P, expected)
    np.testing.assert_array_equal(P, _dense_pattern(f, x))

    def g(x):
        return nd.sum(nd.sin(f(x)), 0).sum()
    H = sparse_hessian(g, x)
    np.testing.assert_allclose(H.toarray(), host(hessian(g)(x)), rtol=1e-13, atol=1e-15)
    np.testing.assert_array_equal(hessian_sparsity(g, x).toarray(),
                                  np.kron(np.eye(4, dtype=bool), np.ones((3, 3), bool)))


@HOST
def test_a_rule_with_a_wrong_number_of_rows_is_an_error(monkeypatch):
    import ndgrad.functional.sparsity as sparsity
    monkeypatch.setitem(sparsity._RULES, "one_row",
                        lambda op, data, out, args, params, n, lv: sparsity._empty(1, n))
    monkeypatch.setattr(REGISTRY["exp"], "sparsity", "one_row")
    with pytest.raises(RuntimeError, match=r"rule 'one_row' of exp gave a pattern of shape "
                                           r"\(1, 3\) for an output of 3 elements"):
        jacobian_sparsity(nd.exp, nd.ones(3))


@HOST
def test_a_wrong_rule_is_caught():
    # a rule that drops a dependency (exp declared as having no derivative) or adds one (a
    # shape op treated as dense) fails the checks the registry test makes
    x = nd.tensor([0.1, 0.2, 0.3])
    op, flip = REGISTRY["exp"], REGISTRY["flip"]
    saved = op.sparsity, flip.sparsity
    try:
        op.sparsity = "zero"
        missing = _dense_pattern(nd.exp, x) & ~jacobian_sparsity(nd.exp, x).toarray()
        assert missing.sum() == 3 and np.diag(missing).all()
        flip.sparsity = "dense"
        extra = jacobian_sparsity(nd.flip, x).toarray() & ~_dense_pattern(nd.flip, x)
        assert extra.sum() == 6
    finally:
        op.sparsity, flip.sparsity = saved
    np.testing.assert_array_equal(jacobian_sparsity(nd.flip, x).toarray(), np.eye(3)[::-1] > 0)


# ------------------------------------------------------------------------------ by coloring


def _dense_jacobian(f, x):
    J = host(jacrev(f)(x))
    return J.reshape(-1, x.numel())


@HOST
@pytest.mark.parametrize("f, n", [(bratu, 30), (banded, 20), (block_diagonal, 12),
                                  (arrowhead, 9)],
                         ids=["tridiagonal", "banded", "block-diagonal", "arrowhead"])
@pytest.mark.parametrize("mode", ["auto", "forward", "reverse"])
def test_sparse_jacobian_equals_the_dense_one(f, n, mode):
    x = nd.tensor(np.random.default_rng(3).uniform(0.5, 1.5, n))
    J = sparse_jacobian(f, x, mode=mode)
    np.testing.assert_allclose(J.toarray(), _dense_jacobian(f, x), rtol=1e-13, atol=1e-14)
    assert J.nnz == jacobian_sparsity(f, x).nnz


@HOST
def test_color_counts_and_reusable_functions():
    x = nd.tensor(np.random.default_rng(4).uniform(0.5, 1.5, 50))
    P = jacobian_sparsity(bratu, x)
    jac = sparse_jacfwd(bratu, P)
    assert jac.ncolors == 3 == coloring(P).ncolors
    np.testing.assert_allclose(jac(x).toarray(), _dense_jacobian(bratu, x), rtol=1e-13)
    x2 = x * 1.1                                   # the coloring is reused at another point
    np.testing.assert_allclose(jac(x2).toarray(), _dense_jacobian(bratu, x2), rtol=1e-13)
    rev = sparse_jacrev(bratu, P)
    assert rev.ncolors == 3
    np.testing.assert_allclose(rev(x2).toarray(), _dense_jacobian(bratu, x2), rtol=1e-13)
    m = 12
    u = nd.tensor(np.random.default_rng(5).normal(size=(m, m)))
    S = jacobian_sparsity(laplace_2d, u)
    assert coloring(S).ncolors == 5                  # the 5-point stencil
    np.testing.assert_allclose(sparse_jacobian(laplace_2d, u, sparsity=S).toarray(),
                               _dense_jacobian(laplace_2d, u), rtol=1e-12, atol=1e-13)
    with pytest.raises(ValueError, match="the sparsity pattern has shape"):
        sparse_jacobian(bratu, x, sparsity=P[:10])
    with pytest.raises(ValueError, match="mode must be one of"):
        sparse_jacobian(bratu, x, mode="both")
    with pytest.raises(TypeError, match="pass the Jacobian's sparsity pattern"):
        sparse_jacfwd(bratu, None)
    with pytest.raises(TypeError, match="real floating-point"):
        sparse_jacobian(bratu, nd.arange(3))


@HOST
@pytest.mark.parametrize("name", ["chain", "arrow", "stencil"])
def test_sparse_hessian_equals_the_dense_one(name):
    rng = np.random.default_rng(6)
    if name == "stencil":
        x = nd.tensor(rng.uniform(0.5, 1.5, (6, 6)))

        def f(u):
            return (laplace_2d(u) ** 2).sum()
    elif name == "chain":
        x = nd.tensor(rng.uniform(0.5, 1.5, 30))

        def f(u):
            return ((u[1:] - u[:-1]) ** 2).sum() + nd.exp(u).sum()
    else:
        x = nd.tensor(rng.uniform(0.5, 1.5, 20))

        def f(u):
            return u[0] * (u ** 2).sum() + nd.sin(u).sum()
    H = sparse_hessian(f, x)
    dense = host(hessian(f)(x)).reshape(x.numel(), x.numel())
    np.testing.assert_allclose(H.toarray(), dense, rtol=1e-12, atol=1e-12)
    if name == "arrow":
        assert coloring(hessian_sparsity(f, x), kind="star").ncolors == 2


@HOST
def test_inside_scipy_solvers():
    import scipy.integrate as si
    import scipy.optimize as so
    n = 40

    def reaction_diffusion(t, u):
        p = nd.pad(u, 1)
        return 100.0 * (p[2:] - 2 * u + p[:-2]) + u * (1 - u)
    u0 = np.sin(np.linspace(0, np.pi, n)) ** 2
    P = jacobian_sparsity(lambda u: reaction_diffusion(0.0, u), nd.tensor(u0))
    jac = sparse_jacfwd(lambda u: reaction_diffusion(0.0, u), P)
    rhs = lambda t, u: host(reaction_diffusion(t, nd.tensor(u)))  # noqa: E731
    ours = si.solve_ivp(rhs, (0, 0.5), u0, method="BDF", jac=lambda t, u: jac(nd.tensor(u)),
                        rtol=1e-8, atol=1e-10)
    theirs = si.solve_ivp(rhs, (0, 0.5), u0, method="BDF", jac_sparsity=P, rtol=1e-8,
                          atol=1e-10)
    assert ours.success and theirs.success and ours.njev >= 1
    np.testing.assert_allclose(ours.y[:, -1], theirs.y[:, -1], rtol=1e-6, atol=1e-8)
    # least squares: fit of a tridiagonal nonlinear system, the Jacobian exact and sparse
    v_true = np.linspace(0.2, 1.0, n)
    target = host(bratu(nd.tensor(v_true), 0.5))

    def resid(v):
        return bratu(v, 0.5) - nd.tensor(target)
    Pr = jacobian_sparsity(resid, nd.ones(n))
    jr = sparse_jacfwd(resid, Pr)
    fun = lambda v: host(resid(nd.tensor(v)))  # noqa: E731
    a = so.least_squares(fun, np.zeros(n), jac=lambda v: jr(nd.tensor(v)), xtol=1e-14,
                         ftol=1e-14, gtol=1e-14)
    b = so.least_squares(fun, np.zeros(n), jac_sparsity=Pr, xtol=1e-14, ftol=1e-14,
                         gtol=1e-14)
    assert a.success and b.success
    np.testing.assert_allclose(a.x, b.x, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(a.x, v_true, rtol=1e-8)
    assert a.njev >= 1 and np.abs(a.fun).max() < 1e-10


def test_on_the_default_device():
    # the products run where x is (the default device of this run), the pattern and the
    # coloring on the host
    x = nd.tensor(np.random.default_rng(8).uniform(0.5, 1.5, 30))
    P = jacobian_sparsity(bratu, x)
    np.testing.assert_array_equal(P.toarray(), _tridiagonal(30))
    J = sparse_jacobian(bratu, x)
    np.testing.assert_allclose(J.toarray(), _dense_jacobian(bratu, x), rtol=1e-13)
    H = sparse_hessian(lambda u: (bratu(u) ** 2).sum(), x)
    dense = host(hessian(lambda u: (bratu(u) ** 2).sum())(x))
    np.testing.assert_allclose(H.toarray(), dense, rtol=1e-12, atol=1e-12)


@HOST
def test_stacks_of_matrices_are_dense_per_matrix():
    A = nd.tensor(np.random.default_rng(9).normal(size=(3, 2, 2)) + 3 * np.eye(2))
    for f in (nd.linalg.inv, nd.linalg.det, lambda a: nd.linalg.solve(a, nd.ones((3, 2, 1)))):
        P = jacobian_sparsity(f, A).toarray()
        true = _dense_pattern(f, A)
        rows_per_matrix = P.shape[0] // 3
        block = np.kron(np.eye(3, dtype=bool), np.ones((rows_per_matrix, 4), bool))
        np.testing.assert_array_equal(P, block)
        assert not (true & ~P).any()


@HOST
def test_transforms_inside_the_function():
    # the pattern of a gradient is the Hessian's; vmap inside f keeps the pattern per element
    chain = lambda u: ((u[1:] - u[:-1]) ** 2).sum() + (u ** 4).sum()  # noqa: E731
    x = nd.tensor(np.linspace(0.1, 1.0, 7))
    from ndgrad.func import grad, vmap
    np.testing.assert_array_equal(jacobian_sparsity(grad(chain), x).toarray(), _tridiagonal(7))
    np.testing.assert_allclose(sparse_jacobian(grad(chain), x).toarray(),
                               host(hessian(chain)(x)), rtol=1e-13)
    np.testing.assert_array_equal(jacobian_sparsity(vmap(nd.sin), x).toarray(), np.eye(7) > 0)


# Note [Views at the data levels] in ndgrad/core/data_level.py: a view's pattern follows an
# in-place change of its base or of another view of it (a view written in place without a
# pattern left its base's rows empty: a sparse Jacobian without those entries; a view with
# a pattern written in place was refused).
def _written_through_views(x, zero=None):
    n = x.shape[0]
    y = nd.zeros(n) if zero is None else zero
    w = y[:3]                                      # no pattern yet
    stale = y[2:]                                  # taken before the writes
    w += 3 * x[:3]
    y[3:].mul_(0.0).add_(nd.sin(x[::-1][:3]))      # y[3:] = sin(x[2::-1]), views of views
    a, b = y[:2], y[1:4]
    a.mul_(x[4:])                                  # a sibling of b written
    return nd.concatenate([b, stale * x[1:5]])


@HOST
def test_patterns_follow_views_through_inplace_changes():
    x = nd.tensor(np.random.default_rng(10).uniform(0.5, 1.5, 6))

    def written_once(v):
        y = nd.zeros(6)
        stale = y[1:]
        y[:3] += 2 * v[3:]
        return stale + nd.sin(v[1:])
    for f in (written_once, _written_through_views):
        J = host(jacrev(f)(x))
        np.testing.assert_array_equal(jacobian_sparsity(f, x).toarray(), J != 0)
        np.testing.assert_allclose(sparse_jacobian(f, x, mode="reverse").toarray(), J,
                                   rtol=1e-14, atol=0)
    # forward mode (a batch of jvps cannot write into an unbatched zeros: start from x)
    g = lambda v: _written_through_views(v, v * 0.0)  # noqa: E731
    np.testing.assert_allclose(sparse_jacobian(g, x, mode="forward").toarray(),
                               host(jacrev(g)(x)), rtol=1e-14, atol=0)
    s = lambda v: (g(v) ** 2).sum()  # noqa: E731
    H = host(jacrev(jacrev(s))(x))
    assert not ((np.abs(H) > 1e-12) & ~hessian_sparsity(s, x).toarray()).any()
    np.testing.assert_allclose(sparse_hessian(s, x).toarray(), H, rtol=1e-12, atol=1e-12)


WRITABLE_VIEWS = sorted(n for n, op in REGISTRY.items()
                        if op.view and op.scatter is not None and n != "imag")
# (imag of a real array is a new array of zeros, never a view)


@HOST
@pytest.mark.parametrize("name", WRITABLE_VIEWS)
@FEW
@given(data=st.data())
def test_every_view_op_follows_inplace_changes_in_patterns(name, data):
    """Every output of a view op that views its input, taken before its base is scaled in
    place by ``sum(x)`` (it then depends on every element), and the base after the view is
    scaled so: the pattern is the nonzeros of the Jacobian, by central differences (exact:
    the steps are quadratic) of the same steps in NumPy, whose views share memory too."""
    op = REGISTRY[name]
    sample = draw(data, op, FLOAT, **SIZES)
    assume(isinstance(sample.args[0], np.ndarray) and sample.args[0].size)
    x = np.random.default_rng(0).uniform(1.0, 2.0, np.shape(sample.args[0]))
    extra, kwargs = sample.args[1:], sample.kwargs
    views = view_outputs(op, x, extra, kwargs)
    assume(views)
    for k in views:
        for write_view in (False, True):
            def f(x, k=k, write_view=write_view):
                numpy = not isinstance(x, nd.Tensor)
                y = np.array(x) if numpy else x * 1.0
                view = outs(op.forward(NUMPY, y, *extra, **kwargs) if numpy
                            else public_call(op, [y], extra, kwargs))[k]
                target = view if write_view else y
                target *= x.sum()
                out = y if write_view else view
                return np.array(out).reshape(-1) if numpy else out
            J = fd_jacobian(f, x, eps=1e-3).reshape(-1, x.size)
            P = jacobian_sparsity(f, nd.tensor(x)).toarray()
            np.testing.assert_array_equal(
                P, np.abs(J) > 1e-9,
                err_msg=f"{name} output {k}, {'through the view' if write_view else 'stale'}")
