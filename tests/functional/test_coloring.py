"""Colorings of sparsity patterns (ndgrad.functional.coloring): column, row and star
colorings, their seed matrices, and recovery of J and symmetric H from compressed products.

References: validity is checked against the definitions, with the pattern itself (a column
coloring is valid iff ``P @ S`` has no entry above 1, i.e. no row meets two columns of one
color, Curtis, Powell and Reid 1974) and, for star colorings, by brute force over every path
on four vertices (Gebremedhin, Manne and Pothen 2005, "What color is your Jacobian?", SIAM
Review 47, Definition 4.4). Color counts are checked against known chromatic numbers (a
tridiagonal pattern needs 3 column colors, the 5-point stencil 5: a row with k nonzeros
forces k colors, and the 2-D grid coloring (i + 2j) mod 5 shows 5 suffice) and against SciPy's
``scipy.optimize._numdiff.group_columns``. Recovery is checked exactly against the random
matrices that were compressed.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import ndgrad.functional.coloring as coloring_module
from ndgrad.functional.coloring import (Coloring, coloring, column_coloring, row_coloring,
                                        star_coloring)

try:
    from scipy.optimize._numdiff import group_columns
except ImportError:  # private SciPy API
    group_columns = None

pytestmark = pytest.mark.cpu_only("host algorithms on scipy.sparse patterns")

ORDERS = ["natural", "largest_first", "smallest_last", "incidence_degree", "dsatur", "best"]
needs_group_columns = pytest.mark.skipif(group_columns is None,
                                         reason="scipy.optimize._numdiff.group_columns is gone")


# ------------------------------------------------------------------------------- patterns
def tridiagonal(n):
    return sp.csr_array(sp.diags_array([np.ones(n - 1), np.ones(n), np.ones(n - 1)],
                                       offsets=[-1, 0, 1], shape=(n, n)))


def banded(n, half_bandwidth):
    offsets = range(-half_bandwidth, half_bandwidth + 1)
    return sp.csr_array(sp.diags_array([np.ones(n - abs(k)) for k in offsets],
                                       offsets=list(offsets), shape=(n, n)))


def stencil(k):
    """The 5-point Laplacian pattern on a k x k grid (n = k**2)."""
    path = tridiagonal(k)
    eye = sp.eye_array(k)
    return sp.csr_array(sp.kron(path, eye) + sp.kron(eye, path))


def arrowhead(n):
    dense = np.eye(n)
    dense[0, :] = dense[:, 0] = 1.0
    return sp.csr_array(dense)


def random_pattern(rng, m, n, density):
    return sp.csr_array(sp.random_array((m, n), density=density, rng=rng) != 0)


def random_symmetric_pattern(rng, n, density):
    upper = sp.random_array((n, n), density=density, rng=rng) != 0
    return sp.csr_array((upper + upper.T + sp.eye_array(n)) != 0)


def values_on(pattern, rng):
    """A dense matrix with random nonzero values exactly on the pattern."""
    dense = pattern.toarray().astype(bool)
    return np.where(dense, rng.uniform(1.0, 2.0, dense.shape) * rng.choice([-1, 1], dense.shape),
                    0.0)


def symmetric_values_on(pattern, rng):
    values = values_on(pattern, rng)
    return np.triu(values) + np.triu(values, 1).T


# -------------------------------------------------------------------- reference checks
def one_hot(colors):
    """The seed matrix, built independently of Coloring.seed_matrix."""
    colors = np.asarray(colors)
    return np.eye(colors.max() + 1 if colors.size else 0)[colors]


def assert_valid_column_coloring(pattern, colors):
    """No row meets two columns of one color: every entry of P @ S is 0 or 1."""
    dense = pattern.toarray().astype(bool).astype(int)
    assert len(colors) == dense.shape[1]
    assert (dense @ one_hot(colors).astype(int)).max(initial=0) <= 1


def assert_valid_star_coloring(pattern, colors):
    """Distance-1 coloring, and no path on four vertices with only two colors."""
    dense = pattern.toarray().astype(bool)
    np.fill_diagonal(dense, False)
    neighbours = [np.flatnonzero(row).tolist() for row in dense]
    for i, j in zip(*np.nonzero(dense)):
        assert colors[i] != colors[j], f"adjacent {i}, {j} share color {colors[i]}"
    for b, c in zip(*np.nonzero(dense)):
        for a in neighbours[b]:
            for d in neighbours[c]:
                if len({a, b, c, d}) == 4:
                    assert not (colors[a] == colors[c] and colors[b] == colors[d]), \
                        f"path {a}-{b}-{c}-{d} has two colors"


def ncolors_of(colors):
    return len(set(np.asarray(colors).tolist()))


# ------------------------------------------------------------------------------ validity
@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("make", [lambda: tridiagonal(30), lambda: stencil(6),
                                  lambda: arrowhead(12), lambda: banded(25, 3),
                                  lambda: random_pattern(np.random.default_rng(0), 40, 30, 0.1)],
                         ids=["tridiagonal", "stencil", "arrowhead", "banded", "random"])
def test_column_and_row_colorings_are_valid(make, order):
    pattern = make()
    c = column_coloring(pattern, order=order)
    assert c.kind == "column" and c.colors.shape == (pattern.shape[1],)
    assert_valid_column_coloring(pattern, c.colors)
    assert c.ncolors == ncolors_of(c.colors)
    r = row_coloring(pattern, order=order)
    assert r.kind == "row" and r.colors.shape == (pattern.shape[0],)
    assert_valid_column_coloring(pattern.T, r.colors)


@settings(max_examples=15)
@given(m=st.integers(1, 40), n=st.integers(1, 40), density=st.floats(0.01, 0.3),
       seed=st.integers(0, 2**16), order=st.sampled_from(ORDERS))
def test_column_coloring_valid_on_random_patterns(m, n, density, seed, order):
    pattern = random_pattern(np.random.default_rng(seed), m, n, density)
    assert_valid_column_coloring(pattern, column_coloring(pattern, order=order).colors)
    assert_valid_column_coloring(pattern.T, row_coloring(pattern, order=order).colors)


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("make", [lambda: tridiagonal(20), lambda: stencil(5),
                                  lambda: arrowhead(10), lambda: banded(20, 3)],
                         ids=["tridiagonal", "stencil", "arrowhead", "banded"])
def test_star_coloring_is_a_star_coloring(make, order):
    pattern = make()
    c = star_coloring(pattern, order=order)
    assert c.kind == "star"
    assert_valid_star_coloring(pattern, c.colors)


@settings(max_examples=20)
@given(n=st.integers(1, 25), density=st.floats(0.02, 0.4), seed=st.integers(0, 2**16),
       order=st.sampled_from(ORDERS))
def test_star_coloring_valid_on_random_symmetric_patterns(n, density, seed, order):
    pattern = random_symmetric_pattern(np.random.default_rng(seed), n, density)
    assert_valid_star_coloring(pattern, star_coloring(pattern, order=order).colors)


def test_star_checker_has_teeth():
    """The brute-force check rejects a proper coloring with a two-colored path."""
    path = tridiagonal(4)
    assert_valid_star_coloring(path, [0, 1, 2, 0])
    with pytest.raises(AssertionError, match="two colors"):
        assert_valid_star_coloring(path, [0, 1, 0, 1])
    with pytest.raises(AssertionError, match="share color"):
        assert_valid_star_coloring(path, [0, 0, 1, 2])


# --------------------------------------------------------------------------- color counts
@pytest.mark.parametrize("order", ORDERS)
def test_tridiagonal_needs_exactly_three_colors(order):
    assert column_coloring(tridiagonal(100), order=order).ncolors == 3
    assert row_coloring(tridiagonal(100), order=order).ncolors == 3
    assert star_coloring(tridiagonal(100), order=order).ncolors == 3  # a path needs 3


def test_five_point_stencil_gets_the_optimal_five_colors():
    """A row of the stencil has 5 nonzeros, so 5 colors are a lower bound; smallest_last and
    "best" reach it on the 20 x 20 grid, largest_first does not."""
    pattern = stencil(20)
    assert pattern.shape == (400, 400)
    assert np.diff(pattern.indptr).max() == 5
    best = column_coloring(pattern, order="best")
    assert best.ncolors == 5
    assert column_coloring(pattern, order="smallest_last").ncolors == 5
    assert column_coloring(pattern, order="largest_first").ncolors >= 5
    assert_valid_column_coloring(pattern, best.colors)
    # the grid coloring (i + 2j) mod 5 shows that 5 suffice (independent of the algorithm)
    i, j = np.divmod(np.arange(400), 20)
    assert_valid_column_coloring(pattern, (i + 2 * j) % 5)


def test_large_stencil():
    """The 128 x 128 stencil (16,384 columns): 5 colors, and J recovered exactly."""
    pattern = stencil(128)
    c = column_coloring(pattern, order="best")
    assert c.ncolors == 5
    # validity without a dense matrix: P @ S has no entry above 1
    assert ((pattern != 0).astype(int) @ one_hot(c.colors).astype(int)).max() == 1
    rng = np.random.default_rng(3)
    jacobian = pattern.astype(float)
    jacobian.data = rng.standard_normal(jacobian.nnz)
    recovered = c.decompress(jacobian @ one_hot(c.colors), pattern)
    assert np.array_equal(recovered.indptr, jacobian.indptr)
    assert np.array_equal(recovered.indices, jacobian.indices)
    assert np.array_equal(recovered.data, jacobian.data)


@pytest.mark.parametrize("order", ORDERS)
def test_extreme_patterns(order):
    n = 17
    diagonal = sp.eye_array(n, format="csr")
    assert column_coloring(diagonal, order=order).ncolors == 1
    assert row_coloring(diagonal, order=order).ncolors == 1
    assert star_coloring(diagonal, order=order).ncolors == 1
    dense = np.ones((n, n))
    assert column_coloring(dense, order=order).ncolors == n
    assert row_coloring(dense, order=order).ncolors == n
    assert star_coloring(dense, order=order).ncolors == n
    empty = sp.csr_array((3, 5))
    assert column_coloring(empty, order=order).ncolors == 1  # five independent columns
    assert column_coloring(np.zeros((3, 0)), order=order).ncolors == 0


@pytest.mark.parametrize("order", ORDERS)
def test_arrowhead_column_n_colors_star_two(order):
    n = 30
    pattern = arrowhead(n)
    assert column_coloring(pattern, order=order).ncolors == n
    assert row_coloring(pattern, order=order).ncolors == n
    star = star_coloring(pattern, order=order)
    assert star.ncolors == 2
    assert_valid_star_coloring(pattern, star.colors)


# ------------------------------------------------------------- the lower bounds, reached
def grid(rows, cols, offsets):
    """The pattern of a stencil with these ``(di, dj)`` offsets on a rows x cols grid (C
    order; the stencil cut at the edges)."""
    idx = np.arange(rows * cols).reshape(rows, cols)
    i, j = np.divmod(np.arange(rows * cols), cols)
    r, c = [], []
    for di, dj in offsets:
        inside = (i + di >= 0) & (i + di < rows) & (j + dj >= 0) & (j + dj < cols)
        r.append(idx.reshape(-1)[inside])
        c.append(idx[i[inside] + di, j[inside] + dj])
    r, c = np.concatenate(r), np.concatenate(c)
    return sp.csr_array((np.ones(r.size), (r, c)), shape=(rows * cols, rows * cols))


FIVE = [(0, 0), (1, 0), (-1, 0), (0, 1), (0, -1)]
NINE = [(a, b) for a in (-1, 0, 1) for b in (-1, 0, 1)]


def assert_valid_columns_sparse(pattern, colors):
    """As assert_valid_column_coloring, without a dense matrix: P @ S has no entry above 1."""
    S = sp.csr_array((np.ones(len(colors)), (np.arange(len(colors)), colors)))
    assert (sp.csr_array(pattern != 0).astype(np.int64) @ S.astype(np.int64)).max() <= 1


@pytest.mark.parametrize("name, make", [
    *[(f"tridiagonal-{n}", lambda n=n: tridiagonal(n)) for n in (5, 30, 1000)],
    *[(f"banded-{k}-{n}", lambda k=k, n=n: banded(n, k)) for k in (2, 3, 5)
      for n in (2 * k + 1, 37, 200)],
    *[(f"5-point-{r}x{c}", lambda r=r, c=c: grid(r, c, FIVE))
      for r, c in ((3, 9), (4, 4), (6, 6), (8, 9), (12, 13), (20, 41), (50, 50))],
    *[(f"9-point-{r}x{c}", lambda r=r, c=c: grid(r, c, NINE))
      for r, c in ((5, 5), (8, 9), (16, 17), (30, 31))],
])
def test_best_reaches_the_row_bound_on_standard_structures(name, make):
    # a row with k nonzeros joins its k columns pairwise: k colors at least; "best" reaches
    # that (largest-first, natural, DSatur, ... in turn; Note [The best coloring]) on the
    # tridiagonal, banded (2 k + 1), 5-point and 9-point stencil patterns, square or not
    pattern = make()
    bound = int(np.diff(sp.csr_array(pattern).indptr).max())
    c = column_coloring(pattern)
    assert c.ncolors == bound, (name, c.ncolors, bound, c.order)
    assert_valid_columns_sparse(pattern, c.colors)
    r = row_coloring(pattern)
    assert r.ncolors == int(np.diff(sp.csc_array(pattern).indptr).max())
    assert_valid_columns_sparse(sp.csr_array(pattern.T), r.colors)


def star_colorable(pattern, k):
    """Whether a star coloring with k colors exists (exhaustive backtracking over vertices in
    breadth-first order, the first vertex of each new color class fixed): an independent
    reference for the star chromatic number of small patterns."""
    dense = sp.csr_array(pattern).toarray() != 0
    np.fill_diagonal(dense, False)
    adj = [np.flatnonzero(row).tolist() for row in dense]
    n = len(adj)
    order, seen = [], [False] * n
    for s in range(n):
        if not seen[s]:
            seen[s], queue = True, [s]
            while queue:
                v = queue.pop(0)
                order.append(v)
                for u in adj[v]:
                    if not seen[u]:
                        seen[u] = True
                        queue.append(u)
    col = [-1] * n

    def two_colored_path_through(v):
        c = col[v]
        if any(col[u] == c for u in adj[v]):
            return True
        for b in adj[v]:
            cb = col[b]
            if cb < 0:
                continue
            for x in adj[b]:        # v - b - x - y
                if x != v and col[x] == c and any(
                        y not in (b, v) and col[y] == cb for y in adj[x]):
                    return True
            for a in adj[v]:        # a - v - b - x
                if a != b and col[a] == cb and any(
                        x not in (v, a) and col[x] == c for x in adj[b]):
                    return True
        return False

    def extend(i, used):
        if i == n:
            return True
        v = order[i]
        for c in range(min(k, used + 1)):
            col[v] = c
            if not two_colored_path_through(v) and extend(i + 1, max(used, c + 1)):
                return True
        col[v] = -1
        return False
    return extend(0, 0)


def test_star_colorable_has_teeth():
    assert star_colorable(tridiagonal(4), 3) and not star_colorable(tridiagonal(4), 2)
    assert star_colorable(arrowhead(6), 2)
    assert star_colorable(grid(4, 4, FIVE), 5) and not star_colorable(grid(4, 4, FIVE), 4)


@pytest.mark.parametrize("name, make, optimum", [
    *[(f"path-{n}", lambda n=n: tridiagonal(n), 3) for n in (4, 10, 300)],
    *[(f"5-point-{r}x{c}", lambda r=r, c=c: grid(r, c, FIVE), 5)
      for r, c in ((4, 4), (5, 7), (6, 6), (8, 9), (12, 13), (40, 41))],
    *[(f"banded-{k}-{n}", lambda k=k, n=n: banded(n, k), 2 * k + 1)
      for k in (2, 3) for n in (10, 14, 60)],
    ("arrowhead", lambda: arrowhead(40), 2),
])
def test_best_star_coloring_reaches_the_star_chromatic_number(name, make, optimum):
    # the fewest colors of any star coloring (one Hessian-vector product each): 3 for a
    # path, 5 for the 5-point stencil's grid (6 before: the star greedy alone), 2 k + 1 for
    # a band of half-bandwidth k, 2 for an arrowhead; where the pattern is small, the
    # exhaustive search shows that one color fewer admits no star coloring
    pattern = make()
    c = star_coloring(pattern)
    assert c.ncolors == optimum, (name, c.ncolors, c.order)
    if pattern.shape[0] <= 100:
        assert_valid_star_coloring(pattern, c.colors)
        if pattern.shape[0] <= 36:
            assert not star_colorable(pattern, optimum - 1)
    rng = np.random.default_rng(7)
    H = sp.csr_array(pattern).astype(float)
    H.data = rng.uniform(1.0, 2.0, H.nnz)
    H = sp.csr_array(H + H.T)
    recovered = c.decompress(H @ one_hot(c.colors), pattern)
    np.testing.assert_array_equal(recovered.toarray(), H.toarray())


@settings(max_examples=25)
@given(m=st.integers(1, 60), n=st.integers(1, 60), density=st.floats(0.0, 0.3),
       seed=st.integers(0, 2**16), order=st.sampled_from(["natural", "largest_first",
                                                          "smallest_last",
                                                          "incidence_degree"]))
def test_compiled_greedy_is_first_fit(m, n, density, seed, order):
    # Note [Greedy column coloring]: SciPy's group_columns in an order is the first-fit
    # coloring of the intersection graph in that order
    pattern = random_pattern(np.random.default_rng(seed), m, n, density)
    csc = sp.csc_array(pattern)
    intersection = sp.csr_array(csc.T @ csc)
    intersection.sort_indices()
    graph = coloring_module._without_diagonal(intersection)
    vertex_order = coloring_module._vertex_order(order, *graph)
    assert sorted(vertex_order.tolist()) == list(range(n))
    ours = coloring_module._greedy_distance1(*graph, vertex_order)
    got = coloring_module._greedy_columns(csc, lambda: graph, vertex_order)
    np.testing.assert_array_equal(got, ours)
    assert_valid_column_coloring(pattern, ours)


def test_dsatur_colors_odd_cycles_and_bipartite_graphs_optimally():
    # DSatur is exact on bipartite graphs (Brélaz 1979): 2 colors for any even cycle, a
    # path, a grid; an odd cycle needs 3
    for n in (6, 7, 50, 51):
        ring = sp.csr_array((np.ones(2 * n), (np.r_[np.arange(n), (np.arange(n) + 1) % n],
                                              np.r_[(np.arange(n) + 1) % n, np.arange(n)])),
                            shape=(n, n))
        indptr, indices = coloring_module._without_diagonal(sp.csr_array(ring != 0))
        colors = coloring_module._dsatur(indptr, indices)
        assert ncolors_of(colors) == (2 if n % 2 == 0 else 3)
        assert all(colors[i] != colors[(i + 1) % n] for i in range(n))
    indptr, indices = coloring_module._without_diagonal(sp.csr_array(grid(7, 9, FIVE) != 0))
    assert ncolors_of(coloring_module._dsatur(indptr, indices)) == 2


# ---------------------------------------------------------------- never worse than SciPy
@needs_group_columns
@settings(max_examples=20)
@given(m=st.integers(5, 200), n=st.integers(5, 200), density=st.floats(0.01, 0.2),
       seed=st.integers(0, 2**16), order=st.sampled_from(ORDERS))
def test_never_worse_than_group_columns_on_random_patterns(m, n, density, seed, order):
    pattern = random_pattern(np.random.default_rng(seed), m, n, density)
    scipy_ncolors = ncolors_of(group_columns(pattern)) if pattern.nnz else 1
    assert column_coloring(pattern, order=order).ncolors <= scipy_ncolors
    scipy_row_ncolors = ncolors_of(group_columns(pattern.T)) if pattern.nnz else 1
    assert row_coloring(pattern, order=order).ncolors <= scipy_row_ncolors


@needs_group_columns
@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("make", [lambda: tridiagonal(100), lambda: stencil(20),
                                  lambda: arrowhead(40), lambda: banded(60, 4),
                                  lambda: sp.eye_array(9)],
                         ids=["tridiagonal", "stencil", "arrowhead", "banded", "diagonal"])
def test_never_worse_than_group_columns_on_structures(make, order):
    pattern = make()
    assert column_coloring(pattern, order=order).ncolors <= ncolors_of(group_columns(pattern))


def test_scipy_grouping_is_kept_when_it_has_fewer_colors(monkeypatch):
    """Where SciPy's grouping wins it is returned, labelled; where SciPy has none, ours."""
    pattern = stencil(20)
    ours = column_coloring(pattern, order="largest_first")
    assert ours.ncolors > 5
    i, j = np.divmod(np.arange(400), 20)
    grid_coloring = (i + 2 * j) % 5
    monkeypatch.setattr(coloring_module, "_scipy_group_columns", lambda csc: grid_coloring)
    kept = column_coloring(pattern, order="largest_first")
    assert kept.ncolors == 5 and kept.order == "scipy_group_columns"
    assert np.array_equal(kept.colors, grid_coloring)
    monkeypatch.setattr(coloring_module, "_scipy_group_columns", lambda csc: None)
    alone = column_coloring(pattern, order="largest_first")
    assert alone.order == "largest_first" and np.array_equal(alone.colors, ours.colors)


# -------------------------------------------------------------------------------- recovery
@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("make", [lambda: tridiagonal(30), lambda: stencil(7),
                                  lambda: arrowhead(15), lambda: banded(25, 3),
                                  lambda: random_pattern(np.random.default_rng(1), 50, 35, 0.08),
                                  lambda: random_pattern(np.random.default_rng(2), 20, 60, 0.05)],
                         ids=["tridiagonal", "stencil", "arrowhead", "banded", "tall", "wide"])
def test_column_and_row_recovery_is_exact(make, order):
    pattern = make()
    rng = np.random.default_rng(4)
    jacobian = values_on(pattern, rng)
    c = column_coloring(pattern, order=order)
    recovered = c.decompress(jacobian @ one_hot(c.colors), pattern)
    assert isinstance(recovered, sp.csr_array) and recovered.has_canonical_format
    assert np.array_equal(recovered.toarray(), jacobian)
    assert recovered.nnz == np.count_nonzero(pattern.toarray())
    r = row_coloring(pattern, order=order)
    recovered = r.decompress(one_hot(r.colors).T @ jacobian, pattern)
    assert np.array_equal(recovered.toarray(), jacobian)


@settings(max_examples=15)
@given(m=st.integers(1, 30), n=st.integers(1, 30), density=st.floats(0.02, 0.3),
       seed=st.integers(0, 2**16))
def test_recovery_on_random_patterns(m, n, density, seed):
    rng = np.random.default_rng(seed)
    pattern = random_pattern(rng, m, n, density)
    jacobian = values_on(pattern, rng)
    c = column_coloring(pattern)
    assert np.array_equal(c.decompress(jacobian @ c.seed_matrix(), pattern).toarray(), jacobian)
    r = row_coloring(pattern)
    assert np.array_equal(r.decompress(r.seed_matrix().T @ jacobian, pattern).toarray(),
                          jacobian)


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("make", [lambda: tridiagonal(30), lambda: banded(30, 3),
                                  lambda: arrowhead(20), lambda: stencil(8),
                                  lambda: random_symmetric_pattern(np.random.default_rng(5),
                                                                   40, 0.08)],
                         ids=["tridiagonal", "banded", "arrowhead", "stencil", "random"])
def test_star_recovery_is_exact(make, order):
    pattern = make()
    hessian = symmetric_values_on(pattern, np.random.default_rng(6))
    assert np.array_equal(hessian, hessian.T)
    c = star_coloring(pattern, order=order)
    recovered = c.decompress(hessian @ one_hot(c.colors), pattern)
    assert np.array_equal(recovered.toarray(), hessian)


@settings(max_examples=20)
@given(n=st.integers(1, 40), density=st.floats(0.02, 0.3), seed=st.integers(0, 2**16),
       order=st.sampled_from(ORDERS))
def test_star_recovery_on_random_symmetric_patterns(n, density, seed, order):
    rng = np.random.default_rng(seed)
    pattern = random_symmetric_pattern(rng, n, density)
    hessian = symmetric_values_on(pattern, rng)
    c = star_coloring(pattern, order=order)
    assert np.array_equal(c.decompress(hessian @ c.seed_matrix(), pattern).toarray(), hessian)


def test_star_recovery_of_a_chained_rosenbrock_hessian():
    """The Hessian of f(x) = sum 100 (x[i+1] - x[i]**2)**2 + (1 - x[i])**2, in closed form."""
    n = 12
    x = np.linspace(-1.0, 1.5, n)
    hessian = np.zeros((n, n))
    for i in range(n - 1):
        hessian[i, i] += 1200 * x[i] ** 2 - 400 * x[i + 1] + 2
        hessian[i + 1, i + 1] += 200
        hessian[i, i + 1] = hessian[i + 1, i] = -400 * x[i]
    c = star_coloring(tridiagonal(n))
    assert c.ncolors == 3
    recovered = c.decompress(hessian @ c.seed_matrix(), tridiagonal(n))
    np.testing.assert_array_equal(recovered.toarray(), hessian)


def test_invalid_colorings_recover_wrong_matrices():
    """The recovery checks have teeth: a coloring that breaks the rules gives a wrong matrix."""
    rng = np.random.default_rng(7)
    # columns 0 and 1 share row 0; giving them one color mixes J[0, 0] and J[0, 1]
    pattern = sp.csr_array(np.array([[1, 1, 0], [0, 1, 1], [1, 0, 0]]))
    jacobian = values_on(pattern, rng)
    bad = Coloring([0, 0, 1], kind="column")
    assert not np.array_equal(bad.decompress(jacobian @ bad.seed_matrix(), pattern).toarray(),
                              jacobian)
    good = Coloring([0, 1, 0], kind="column")
    assert_valid_column_coloring(pattern, good.colors)
    assert np.array_equal(good.decompress(jacobian @ good.seed_matrix(), pattern).toarray(),
                          jacobian)
    # rows 0 and 1 share column 1
    bad_rows = Coloring([0, 0, 1], kind="row")
    assert not np.array_equal(
        bad_rows.decompress(bad_rows.seed_matrix().T @ jacobian, pattern).toarray(), jacobian)
    # a proper but not star coloring of the path 0-1-2-3: H[1, 2] cannot be read directly
    path = tridiagonal(4)
    hessian = symmetric_values_on(path, rng)
    not_star = Coloring([0, 1, 0, 1], kind="star")
    assert not np.array_equal(
        not_star.decompress(hessian @ not_star.seed_matrix(), path).toarray(), hessian)
    star = Coloring([0, 1, 2, 0], kind="star")
    assert np.array_equal(star.decompress(hessian @ star.seed_matrix(), path).toarray(), hessian)


# ------------------------------------------------------------------------- Coloring object
def test_seed_matrix_and_groups():
    c = Coloring([2, 0, 1, 0, 2], kind="column", order="natural")
    assert c.ncolors == 3 and c.kind == "column" and c.order == "natural"
    seed = c.seed_matrix()
    assert seed.dtype == np.float64 and seed.shape == (5, 3)
    assert np.array_equal(seed, one_hot([2, 0, 1, 0, 2]))
    assert c.seed_matrix(dtype=np.int8).dtype == np.int8
    assert [g.tolist() for g in c.groups()] == [[1, 3], [2], [0, 4]]
    assert Coloring([], kind="row").groups() == []
    assert Coloring([], kind="row").seed_matrix().shape == (0, 0)


def test_coloring_is_immutable_and_checked():
    c = Coloring([0, 1])
    with pytest.raises(AttributeError):
        c.ncolors = 5
    with pytest.raises(ValueError):
        c.colors[0] = 1  # read-only array
    with pytest.raises(ValueError, match="kind"):
        Coloring([0], kind="diagonal")
    with pytest.raises(ValueError, match="non-negative"):
        Coloring([0, -1])
    with pytest.raises(ValueError, match="every number"):
        Coloring([0, 2])


@pytest.mark.parametrize("convert", [sp.csr_array, sp.csc_array, sp.coo_array, sp.lil_array,
                                     sp.csr_matrix, sp.dok_array, np.asarray,
                                     lambda d: d.astype(bool).tolist()],
                         ids=["csr", "csc", "coo", "lil", "csr_matrix", "dok", "dense", "list"])
def test_any_input_format_gives_the_same_coloring(convert):
    rng = np.random.default_rng(8)
    dense = random_symmetric_pattern(rng, 25, 0.1).toarray() * rng.standard_normal((25, 25))
    dense = dense + dense.T
    reference = csr = sp.csr_array(dense)
    for color in (column_coloring, row_coloring, star_coloring):
        assert np.array_equal(color(convert(dense)).colors, color(reference).colors)
    c = column_coloring(csr)
    assert np.array_equal(c.decompress(dense @ c.seed_matrix(), convert(dense)).toarray(), dense)


def test_explicit_zeros_are_not_in_the_pattern():
    with_zero = sp.csr_array((np.array([1.0, 0.0, 1.0]), np.array([0, 1, 1]),
                              np.array([0, 2, 3])), shape=(2, 2))
    assert column_coloring(with_zero).ncolors == 1  # column 0 meets row 0 only, column 1 row 1
    c = column_coloring(with_zero)
    assert c.decompress(np.array([[3.0], [4.0]]), with_zero).nnz == 2


def test_dispatcher():
    pattern = arrowhead(9)
    for kind, color in [("column", column_coloring), ("row", row_coloring),
                        ("star", star_coloring)]:
        for order in ORDERS:
            expected = color(pattern, order=order)
            got = coloring(pattern, kind=kind, order=order)
            assert got.kind == kind and np.array_equal(got.colors, expected.colors)
    with pytest.raises(ValueError, match="kind must be one of"):
        coloring(pattern, kind="acyclic")


def test_input_validation():
    with pytest.raises(ValueError, match="2-D"):
        column_coloring(np.ones(5))
    with pytest.raises(ValueError, match="2-D"):
        row_coloring(np.ones((2, 2, 2)))
    with pytest.raises(ValueError, match="order must be one of"):
        column_coloring(np.eye(3), order="random")
    with pytest.raises(ValueError, match="order must be one of"):
        star_coloring(np.eye(3), order="largest")
    with pytest.raises(ValueError, match="square"):
        star_coloring(np.ones((3, 4)))
    with pytest.raises(ValueError, match="symmetric"):
        star_coloring(np.triu(np.ones((4, 4))))
    c = column_coloring(tridiagonal(5))
    with pytest.raises(ValueError, match="compressed must have shape"):
        c.decompress(np.zeros((5, c.ncolors + 1)), tridiagonal(5))
    with pytest.raises(ValueError, match="does not fit"):
        c.decompress(np.zeros((6, c.ncolors)), tridiagonal(6))
    s = star_coloring(tridiagonal(5))
    with pytest.raises(ValueError, match="does not fit"):
        s.decompress(np.zeros((5, s.ncolors)), sp.csr_array((5, 6)))


@pytest.mark.parametrize("order", ["natural", "largest_first", "smallest_last",
                                   "incidence_degree", "dsatur"])
def test_orderings_are_deterministic(order):
    pattern = random_pattern(np.random.default_rng(9), 60, 60, 0.05)
    first, second = column_coloring(pattern, order), column_coloring(pattern.tocoo(), order)
    assert np.array_equal(first.colors, second.colors)
