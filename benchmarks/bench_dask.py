"""ndgrad on Dask arrays: a logistic regression over data that never sits in memory whole.

The data: ``X`` of ``--rows`` x 10 float64 (default 2*10^7 rows, 1.6 GB) and labels ``y``,
generated lazily in chunks of ``--chunk`` rows from a seed (``dask.array.random``), so each
evaluation regenerates the chunks it reads and none is kept.

D1  value and gradient of ``sum(softplus(X @ w) - y * (X @ w))`` with respect to the NumPy
    parameters ``w``: ndgrad (``autograd.grad`` + ``ndgrad.compute``, one ``dask.compute``)
    against the hand-written Dask value and gradient ``X.T @ (sigmoid(X @ w) - y)`` in one
    ``dask.compute``; rounds alternate, the median ratio is reported.      target <= 1.2x
    Also reported: the two graphs' task counts (``len(dict(graph))``).
D2  peak resident memory of one evaluation, each in a fresh subprocess
    (``ru_maxrss``: the interpreter, NumPy and Dask included).  target <= 25 % of the data
D3  the fit: ``ndgrad.optimize.minimize(..., method="L-BFGS-B")`` over the lazy ``X`` against
    the same fit on the data computed into memory (SciPy's L-BFGS-B on the hand-written
    NumPy value and gradient, rows ``--fit-rows``): the largest difference of the weights.

Run ``python benchmarks/bench_dask.py`` (``--rows 2000000`` for a quick run,
``--scheduler`` to pick Dask's scheduler; default: threads). The gradients are checked
against the hand-written ones first. Timings on a shared machine are noisy.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

import numpy as np

import dask
import dask.array as da

import ndgrad

D = 10
SEED = 20
W_TRUE = np.linspace(-1.0, 1.0, D)


def data(rows, chunk):
    """Lazy ``X`` (rows x D) and ``y`` (rows,), the same values for the same arguments."""
    rng = da.random.default_rng(SEED)
    X = rng.standard_normal((rows, D), chunks=(chunk, D))
    u = rng.random(rows, chunks=chunk)
    y = (u < 1.0 / (1.0 + da.exp(-(X @ W_TRUE)))).astype(np.float64)
    return X, y


def by_hand(X, y, w):
    """The hand-written Dask value and gradient (graphs)."""
    z = X @ w
    loss = da.sum(da.logaddexp(0.0, z) - y * z)
    return loss, X.T @ (1.0 / (1.0 + da.exp(-z)) - y)


def loss_fn(w, X, y):
    z = X @ w
    return (ndgrad.logaddexp(0.0, z) - y * z).sum()


def by_ndgrad_graphs(X, y, w):
    """ndgrad's value and gradient (lazy tensors)."""
    wt = ndgrad.tensor(w, requires_grad=True)
    loss = loss_fn(wt, ndgrad.asarray(X), ndgrad.asarray(y))
    (g,) = ndgrad.autograd.grad(loss, [wt])
    return loss, g


def hand(X, y, w):
    value, grad = dask.compute(*by_hand(X, y, w))
    return float(value), np.asarray(grad)


def ndg(X, y, w):
    value, grad = ndgrad.compute(*by_ndgrad_graphs(X, y, w))
    return value.item(), grad.numpy()


def tasks(*arrays):
    """Number of tasks in the merged graph of ``arrays`` (what one dask.compute runs)."""
    graph = {}
    for a in arrays:
        graph.update(dict(a.__dask_graph__()))
    return len(graph)


def one_evaluation(which, rows, chunk):
    """Child process: one evaluation, then the peak resident memory (bytes)."""
    X, y = data(rows, chunk)
    w = 0.1 * np.ones(D)
    (hand if which == "hand" else ndg)(X, y, w)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * (1 if sys.platform ==
                                                                    "darwin" else 1024)
    print(json.dumps({"peak": peak}))


def peak_memory(which, args):
    out = subprocess.run([sys.executable, __file__, "--child", which, "--rows", str(args.rows),
                          "--chunk", str(args.chunk), "--scheduler", args.scheduler],
                         check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])["peak"]


def fit(args):
    rows = args.fit_rows or args.rows
    X, y = data(rows, args.chunk)
    Xt, yt = ndgrad.asarray(X), ndgrad.asarray(y)
    t = time.perf_counter()
    res = ndgrad.optimize.minimize(lambda w: loss_fn(w, Xt, yt) / rows, np.zeros(D),
                                   method="L-BFGS-B", tol=1e-12)
    t_lazy = time.perf_counter() - t
    import scipy.optimize as so
    Xm, ym = dask.compute(X, y)  # the same data, in memory

    def f(w):
        z = Xm @ w
        return (np.sum(np.logaddexp(0.0, z) - ym * z) / rows,
                Xm.T @ (1.0 / (1.0 + np.exp(-z)) - ym) / rows)
    t = time.perf_counter()
    ref = so.minimize(f, np.zeros(D), jac=True, method="L-BFGS-B", tol=1e-12)
    t_mem = time.perf_counter() - t
    diff = np.max(np.abs(res.x.numpy() - ref.x))
    print(f"D3  fit over {rows:,} rows: lazy (ndgrad.optimize.minimize, L-BFGS-B) "
          f"{res.nit} iterations, {res.nfev} evaluations, {t_lazy:.1f} s; in memory "
          f"(SciPy, NumPy) {ref.nit} iterations, {t_mem:.1f} s")
    print(f"    max |w_lazy - w_memory| = {diff:.2e}   (|w| max {np.max(np.abs(ref.x)):.3f})")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=20_000_000)
    p.add_argument("--chunk", type=int, default=500_000)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--fit-rows", type=int, default=0, help="rows of the fit (default --rows)")
    p.add_argument("--scheduler", default="threads")
    p.add_argument("--no-fit", action="store_true")
    p.add_argument("--child", choices=["hand", "ndgrad"], help=argparse.SUPPRESS)
    args = p.parse_args()
    dask.config.set(scheduler=args.scheduler)
    if args.child:
        one_evaluation(args.child, args.rows, args.chunk)
        return
    size = args.rows * D * 8
    print(f"X: {args.rows:,} x {D} float64 = {size / 1e9:.2f} GB in chunks of {args.chunk:,} "
          f"rows, generated lazily; scheduler {args.scheduler!r}, {os.cpu_count()} cores")

    X, y = data(args.rows, args.chunk)
    w = 0.1 * np.ones(D)
    print(f"    tasks per evaluation: hand-written {tasks(*by_hand(X, y, w))}, "
          f"ndgrad {tasks(*(t._data for t in by_ndgrad_graphs(X, y, w)))}")
    # check first (the same values), on a slice of the rows
    Xs, ys = X[: 4 * args.chunk], y[: 4 * args.chunk]
    (vh, gh), (vn, gn) = hand(Xs, ys, w), ndg(Xs, ys, w)
    assert np.isclose(vh, vn, rtol=1e-12) and np.allclose(gh, gn, rtol=1e-10), (vh, vn)

    times = {"hand": [], "ndgrad": []}
    for _ in range(args.rounds):
        for name, fn in (("hand", hand), ("ndgrad", ndg)):
            t = time.perf_counter()
            fn(X, y, w)
            times[name].append(time.perf_counter() - t)
    th, tn = statistics.median(times["hand"]), statistics.median(times["ndgrad"])
    ratio = statistics.median(n / h for n, h in zip(times["ndgrad"], times["hand"]))
    print(f"D1  value+gradient: hand-written Dask {th:.2f} s, ndgrad {tn:.2f} s per "
          f"evaluation (medians of {args.rounds}); median ratio {ratio:.2f}x  (target <= 1.2x)")
    mh, mn = peak_memory("hand", args), peak_memory("ndgrad", args)
    print(f"D2  peak RSS of one evaluation (fresh process): hand-written {mh / 1e6:.0f} MB "
          f"({mh / size:.1%} of the data), ndgrad {mn / 1e6:.0f} MB ({mn / size:.1%})  "
          f"(target <= 25 %)")
    if not args.no_fit:
        fit(args)


if __name__ == "__main__":
    main()
