"""Sparse Jacobians by coloring against one evaluation of the residual, SciPy's
finite-difference ``approx_derivative`` with the same pattern, and a dense ``jacfwd``.

S1  the 1-D Bratu residual ``u[i-1] - 2 u[i] + u[i+1] + exp(u[i])``, n = 10,000:
    ``sparse_jacfwd`` (pattern and coloring computed once, reused)      target <= 20x
S2  a 2-D 5-point Laplacian with a cubic term on a 128 x 128 grid (n = 16,384), the same
                                                                        target <= 30x
    and the pattern detection itself (``jacobian_sparsity``)            target <= 50x

Each line gives the times, the ratios to one evaluation of the residual, the number of
colors, and the ratio of SciPy's ``approx_derivative(..., sparsity=P)`` (forward differences:
approximate) to ndgrad's exact Jacobian, after checking that the two agree to
finite-difference accuracy. S3 times a dense ``jacfwd`` of S1 at n = 2,000 for scale. S4
solves a stiff reaction-diffusion system (the 1-D Brusselator, 2 x 400 states) with SciPy's
``solve_ivp(method="BDF")`` given ndgrad's sparse Jacobian, against the same solve given
ndgrad's dense one (``jacfwd``), and checks that the solutions agree.

C1 prints, for standard structures, the colors of ndgrad's column coloring (one jvp each)
against the lower bound (the most nonzeros in one row) and SciPy's ``group_columns``; C2 the
colors of the star coloring of symmetric patterns (one Hessian-vector product each) against
the star chromatic number (the fewest colors any star coloring has: 3 for a path, 5 for the
grid of the 5-point stencil, 2k + 1 for a band of half-bandwidth k, 2 for an arrowhead; 8 for
the 9-point stencil's king graph on the 5 x 5 to 12 x 12 grids, by exhaustive search) and
the star greedy alone; C3 times the colorings of a 5-point stencil of 10**5 columns.

Run ``python benchmarks/bench_sparse.py`` (``--rounds N``; ``--coloring`` for C1-C3 only):
medians of the rounds, the callables timed side by side, alternating, in one run.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import ndgrad
from ndgrad.func import jacfwd, jacobian_sparsity, sparse_jacfwd


def bratu(u, lam=1.0):
    p = ndgrad.pad(u, 1)
    return p[2:] - 2 * u + p[:-2] + lam * ndgrad.exp(u)


def laplace_2d(u):
    p = ndgrad.pad(u, 1)
    return (p[:-2, 1:-1] + p[2:, 1:-1] + p[1:-1, :-2] + p[1:-1, 2:] - 4 * u) + u ** 3


def timed(fns, rounds):
    """Median seconds per call of each callable, timed alternating."""
    times = [[] for _ in fns]
    for _ in range(rounds):
        for k, fn in enumerate(fns):
            reps = 1
            while True:
                t0 = time.perf_counter()
                for _ in range(reps):
                    fn()
                dt = time.perf_counter() - t0
                if dt > 0.05 or reps >= 1000:
                    break
                reps *= 4
            times[k].append(dt / reps)
    return [statistics.median(t) for t in times]


def case(name, f, x, rounds):
    from scipy.optimize._numdiff import approx_derivative
    P = jacobian_sparsity(f, x)
    jac = sparse_jacfwd(f, P)
    J = jac(x)

    def residual_np(v):
        return f(ndgrad.tensor(v.reshape(tuple(x.shape)))).numpy().reshape(-1)
    x0 = x.numpy().reshape(-1)
    fd = approx_derivative(residual_np, x0, sparsity=P)
    err = float(np.abs((J - fd).toarray() if hasattr(J - fd, "toarray") else J - fd).max())
    ev, pat, jt, ap = timed([lambda: f(x), lambda: jacobian_sparsity(f, x), lambda: jac(x),
                             lambda: approx_derivative(residual_np, x0, sparsity=P)], rounds)
    print(f"{name}  n={x.numel():6d}  residual {ev * 1e6:7.1f} us | sparse Jacobian "
          f"{jt * 1e3:6.2f} ms = {jt / ev:5.1f}x ({jac.ncolors} colors) | pattern "
          f"{pat * 1e3:6.2f} ms = {pat / ev:5.1f}x | SciPy approx_derivative "
          f"{ap * 1e3:6.2f} ms = {ap / jt:4.1f}x ndgrad's (|difference| {err:.0e})")


def grid(rows, cols, offsets):
    """The pattern of a stencil with these ``(di, dj)`` offsets on a rows x cols grid."""
    import scipy.sparse as sp
    idx = np.arange(rows * cols).reshape(rows, cols)
    i, j = np.divmod(np.arange(rows * cols), cols)
    r, c = [], []
    for di, dj in offsets:
        inside = (i + di >= 0) & (i + di < rows) & (j + dj >= 0) & (j + dj < cols)
        r.append(idx.reshape(-1)[inside])
        c.append(idx[i[inside] + di, j[inside] + dj])
    r, c = np.concatenate(r), np.concatenate(c)
    return sp.csr_array((np.ones(r.size, dtype=bool), (r, c)), shape=(rows * cols,) * 2)


FIVE = [(0, 0), (1, 0), (-1, 0), (0, 1), (0, -1)]
NINE = [(a, b) for a in (-1, 0, 1) for b in (-1, 0, 1)]


def band(n, k):
    return grid(1, n, [(0, d) for d in range(-k, k + 1)])


def arrow(n):
    import scipy.sparse as sp
    A = sp.lil_array((n, n), dtype=bool)
    A.setdiag(True)
    A[0, :] = True
    A[:, 0] = True
    return sp.csr_array(A)


def coloring_tables(rounds):
    import scipy.sparse as sp
    from scipy.optimize._numdiff import group_columns

    from ndgrad.functional.coloring import column_coloring, star_coloring
    print("C1  column coloring (jvps): colors against the lower bound (most nonzeros in a row)")
    print(f"    {'structure':24s} {'n':>7s} {'bound':>5s} {'ndgrad':>6s} {'won by':>16s} "
          f"{'SciPy':>5s} {'time':>8s}")
    for name, P in [("tridiagonal", band(10_000, 1)), ("banded, k = 2", band(10_000, 2)),
                    ("banded, k = 5", band(10_000, 5)),
                    ("5-point, 100 x 100", grid(100, 100, FIVE)),
                    ("5-point, 100 x 101", grid(100, 101, FIVE)),
                    ("5-point, 37 x 80", grid(37, 80, FIVE)),
                    ("9-point, 100 x 100", grid(100, 100, NINE)),
                    ("9-point, 64 x 150", grid(64, 150, NINE)), ("arrowhead", arrow(2_000))]:
        bound = int(np.diff(P.indptr).max())
        (t,) = timed([lambda P=P: column_coloring(P)], rounds)
        c = column_coloring(P)
        scipy = int(group_columns(sp.csc_array(P)).max()) + 1
        print(f"    {name:24s} {P.shape[1]:7d} {bound:5d} {c.ncolors:6d} {c.order:>16s} "
              f"{scipy:5d} {t * 1e3:6.1f} ms")
    print("C2  star coloring (Hessian-vector products): colors against the star chromatic "
          "number")
    print(f"    {'structure':24s} {'n':>7s} {'optimum':>7s} {'ndgrad':>6s} {'won by':>28s} "
          f"{'greedy':>6s} {'time':>8s}")
    for name, P, best in [("path", band(10_000, 1), 3), ("banded, k = 2", band(10_000, 2), 5),
                          ("banded, k = 3", band(10_000, 3), 7),
                          ("5-point, 100 x 100", grid(100, 100, FIVE), 5),
                          ("5-point, 100 x 101", grid(100, 101, FIVE), 5),
                          ("9-point, 100 x 100", grid(100, 100, NINE), 8),
                          ("arrowhead", arrow(2_000), 2)]:
        (t,) = timed([lambda P=P: star_coloring(P)], max(1, rounds // 2))
        c = star_coloring(P)
        greedy = star_coloring(P, order="largest_first").ncolors
        print(f"    {name:24s} {P.shape[1]:7d} {best:7d} {c.ncolors:6d} {c.order:>28s} "
              f"{greedy:6d} {t * 1e3:6.1f} ms")
    P = grid(316, 316, FIVE)
    col, star = timed([lambda: column_coloring(P), lambda: star_coloring(P)],
                      max(1, rounds // 2))
    print(f"C3  5-point stencil, {P.shape[1]} columns: column coloring {col:.2f} s "
          f"({column_coloring(P).ncolors} colors), star coloring {star:.2f} s "
          f"({star_coloring(P).ncolors} colors)")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--coloring", action="store_true", help="the coloring tables only")
    opts = parser.parse_args()
    coloring_tables(opts.rounds)
    if opts.coloring:
        return
    rng = np.random.default_rng(0)
    case("S1", bratu, ndgrad.tensor(rng.uniform(0, 1, 10_000)), opts.rounds)
    case("S2", laplace_2d, ndgrad.tensor(rng.uniform(0, 1, (128, 128))), opts.rounds)
    x = ndgrad.tensor(rng.uniform(0, 1, 2_000))
    P = jacobian_sparsity(bratu, x)
    jac = sparse_jacfwd(bratu, P)
    dense, sparse = timed([lambda: jacfwd(bratu)(x), lambda: jac(x)], max(3, opts.rounds // 2))
    print(f"S3  n=  2000  dense jacfwd {dense * 1e3:7.2f} ms, sparse {sparse * 1e3:5.2f} ms: "
          f"{dense / sparse:5.1f}x faster")
    reaction_diffusion(opts.rounds)


def brusselator(t, y, n=400, a=1.0, b=3.0, alpha=0.02):
    """The 1-D Brusselator on [0, 1] with Dirichlet ends (u = 1, v = 3), ``y = [u, v]``."""
    u, v = y[:n], y[n:]
    h2 = (1.0 / (n + 1)) ** 2
    up, vp = ndgrad.pad(u, 1, constant_values=1.0), ndgrad.pad(v, 1, constant_values=3.0)
    du = a + u * u * v - (b + 1) * u + alpha * (up[2:] - 2 * u + up[:-2]) / h2
    dv = b * u - u * u * v + alpha * (vp[2:] - 2 * v + vp[:-2]) / h2
    return ndgrad.concat([du, dv])


def reaction_diffusion(rounds):
    import scipy.integrate as si
    n = 400
    grid = np.linspace(0, 1, n + 2)[1:-1]
    y0 = np.concatenate([1 + np.sin(2 * np.pi * grid), np.full(n, 3.0)])

    def rhs(t, y):
        return brusselator(t, ndgrad.tensor(y)).numpy()
    f = lambda y: brusselator(0.0, y)  # noqa: E731
    P = jacobian_sparsity(f, ndgrad.tensor(y0))
    sparse_jac = sparse_jacfwd(f, P)
    dense_jac = jacfwd(f)
    kw = dict(method="BDF", rtol=1e-6, atol=1e-8)
    runs = {}

    def solve(which):
        jac = (lambda t, y: sparse_jac(ndgrad.tensor(y))) if which == "sparse" else \
            (lambda t, y: dense_jac(ndgrad.tensor(y)).numpy())
        runs[which] = si.solve_ivp(rhs, (0, 10), y0, jac=jac, **kw)
    ts, td = timed([lambda: solve("sparse"), lambda: solve("dense")], max(3, rounds // 2))
    a, b = runs["sparse"], runs["dense"]
    assert a.success and b.success
    diff = float(np.abs(a.y[:, -1] - b.y[:, -1]).max())
    print(f"S4  Brusselator 2x{n} (BDF): sparse Jacobian {ts * 1e3:7.1f} ms "
          f"({a.njev} Jacobians, {sparse_jac.ncolors} colors), dense {td * 1e3:7.1f} ms: "
          f"{td / ts:4.1f}x faster (final states agree to {diff:.0e})")


if __name__ == "__main__":
    main()
