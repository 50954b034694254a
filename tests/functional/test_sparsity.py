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
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import ndgrad as nd
from ndgrad.core.ops import COMPOSITES, REGISTRY
from ndgrad.func import hessian, hessian_sparsity, jacobian_sparsity, jacrev
from registry_harness import FLOAT, draw, entry, require
from support import host

HOST = pytest.mark.cpu_only("sparsity patterns are host-side index sets; the ops' device "
                            "paths are the registry suites' (test_on_the_default_device below "
                            "runs on every device)")

FEW = settings(max_examples=3, deadline=None, phases=[Phase.explicit, Phase.generate],
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
}


def _dense_pattern(f, x):
    J = host(jacrev(f)(x))
    out_size = int(np.prod(J.shape[:J.ndim - x.ndim], dtype=np.int64)) if x.ndim else J.size
    return J.reshape(out_size, x.numel()) != 0


@HOST
@pytest.mark.parametrize("name", sorted(REGISTRY) + sorted(COMPOSITES))
@FEW
@given(data=st.data())
def test_pattern_contains_the_jacobian_nonzeros_of_every_op(name, data):
    op = entry(name)
    require(op, "vjp")
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
from ndgrad.func import (coloring, sparse_hessian, sparse_jacfwd, sparse_jacobian,  # noqa: E402
                         sparse_jacrev)


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
