"""Core reverse-mode benchmarks: ndgrad against the same computation written by hand in NumPy.

Run by hand (never a timed test):  python benchmarks/bench_core.py [--rounds N] [--torch]
                                   [--gc on|frozen|off]

Each workload runs ndgrad and the hand-written NumPy forward + analytic backward side by side
in one process, alternating, and reports the median of repeated rounds as a ratio to NumPy
(and to PyTorch CPU when installed and ``--torch`` is given).

W1  16 float64 values, 100 x ``y = tanh(y * 1.0001 + 0.5)``, ``y.sum().backward()``:
    microseconds per recorded op (fwd + bwd).            target <= 4x NumPy
    Its floor: the same chain on a minimal Python tape (one object and one closure per op,
    no checks, no graph), the least any autodiff written in Python pays per op.
W2  the same with 1,000,000 values and 10 iterations.    target <= 1.05x NumPy,
    peak traced memory (tracemalloc)                      target <= 1.3x NumPy's
F1  forward mode: the W1 / W2 chain's forward pass with a tangent (``make_dual`` under a dual
    level, tangent read with ``unpack_dual``) against the plain ndgrad forward pass, no grad:
    the cost of carrying a jvp, as a ratio to the plain forward pass.
W3  float32 MLP, X 256x512, layers 512-512-512-10 with tanh, mean squared output,
    gradients of all six parameters.                       target <= 1.05x NumPy
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
import tracemalloc

import numpy as np

import ndgrad


# ----------------------------------------------------------------------------- W1 / W2
def chain_numpy(x0, n):
    ys = []
    y = x0
    for _ in range(n):
        y = np.tanh(y * 1.0001 + 0.5)
        ys.append(y)
    _ = y.sum()
    g = np.ones_like(y)
    for y in reversed(ys):
        g = g * (1.0 - y * y) * 1.0001
    return g


def chain_ndgrad(x0, n):
    x = ndgrad.asarray(x0, requires_grad=True)  # no copy, like the NumPy version
    y = x
    for _ in range(n):
        y = ndgrad.tanh(y * 1.0001 + 0.5)
    y.sum().backward()
    return x.grad.numpy()


def chain_torch(x0, n):  # pragma: no cover - optional peer
    import torch
    x = torch.tensor(x0, requires_grad=True)
    y = x
    for _ in range(n):
        y = torch.tanh(y * 1.0001 + 0.5)
    y.sum().backward()
    return x.grad.numpy()


class _TapeValue:
    __slots__ = ("data", "pullback", "parent")

    def __init__(self, data, pullback, parent):
        self.data = data
        self.pullback = pullback
        self.parent = parent


def chain_minimal_tape(x0, n):
    """W1's chain on the smallest tape Python allows: each op makes one value holding its
    pullback (a closure) and its parent; backward walks the chain. No version, shape, dtype
    or device checks, no hooks, no graph to share: the floor of a Python autodiff."""
    y = _TapeValue(x0, None, None)
    for _ in range(n):
        m = _TapeValue(y.data * 1.0001, lambda g: g * 1.0001, y)
        a = _TapeValue(m.data + 0.5, lambda g: g, m)
        out = np.tanh(a.data)
        y = _TapeValue(out, lambda g, out=out: g * (1.0 - np.square(out)), a)
    _ = y.data.sum()
    g = np.ones_like(y.data)
    while y.pullback is not None:
        g = y.pullback(g)
        y = y.parent
    return g


# ----------------------------------------------------------------------------- F1
def chain_forward_plain(x0, n):
    y = ndgrad.asarray(x0)
    for _ in range(n):
        y = ndgrad.tanh(y * 1.0001 + 0.5)
    return y.numpy()


def chain_forward_dual(x0, n):
    with ndgrad.forward_ad.dual_level():
        y = ndgrad.forward_ad.make_dual(ndgrad.asarray(x0), ndgrad.ones(x0.shape))
        for _ in range(n):
            y = ndgrad.tanh(y * 1.0001 + 0.5)
        return ndgrad.forward_ad.unpack_dual(y).tangent.numpy()


def chain_jvp_numpy(x0, n):
    y, t = x0, np.ones_like(x0)
    for _ in range(n):
        y = np.tanh(y * 1.0001 + 0.5)
        t = t * 1.0001 * (1.0 - y * y)
    return t


# ----------------------------------------------------------------------------- W3
def mlp_params(rng):
    def layer(i, o):
        w = (rng.standard_normal((i, o)) / np.sqrt(i)).astype(np.float32)
        return w, np.zeros(o, np.float32)
    W1, b1 = layer(512, 512)
    W2, b2 = layer(512, 512)
    W3, b3 = layer(512, 10)
    X = rng.standard_normal((256, 512)).astype(np.float32)
    return X, [W1, b1, W2, b2, W3, b3]


def mlp_numpy(X, params):
    W1, b1, W2, b2, W3, b3 = params
    h1 = np.tanh(X @ W1 + b1)
    h2 = np.tanh(h1 @ W2 + b2)
    out = h2 @ W3 + b3
    _ = (out * out).mean()
    g_out = (2.0 / out.size) * out
    gW3 = h2.T @ g_out
    gb3 = g_out.sum(0)
    g_h2 = g_out @ W3.T
    g_a2 = g_h2 * (1 - h2 * h2)
    gW2 = h1.T @ g_a2
    gb2 = g_a2.sum(0)
    g_h1 = g_a2 @ W2.T
    g_a1 = g_h1 * (1 - h1 * h1)
    gW1 = X.T @ g_a1
    gb1 = g_a1.sum(0)
    return [gW1, gb1, gW2, gb2, gW3, gb3]


def mlp_ndgrad(X, params):
    ps = [ndgrad.asarray(p, requires_grad=True) for p in params]
    W1, b1, W2, b2, W3, b3 = ps
    Xt = ndgrad.asarray(X)
    h1 = ndgrad.tanh(Xt @ W1 + b1)
    h2 = ndgrad.tanh(h1 @ W2 + b2)
    out = h2 @ W3 + b3
    loss = (out * out).mean()
    loss.backward()
    return [p.grad.numpy() for p in ps]


def mlp_torch(X, params):  # pragma: no cover - optional peer
    import torch
    ps = [torch.tensor(p, requires_grad=True) for p in params]
    W1, b1, W2, b2, W3, b3 = ps
    Xt = torch.tensor(X)
    h1 = torch.tanh(Xt @ W1 + b1)
    h2 = torch.tanh(h1 @ W2 + b2)
    out = h2 @ W3 + b3
    loss = (out * out).mean()
    loss.backward()
    return [p.grad.numpy() for p in ps]


# ----------------------------------------------------------------------------- harness
def timed(fn, *args):
    t0 = time.perf_counter()
    fn(*args)
    return time.perf_counter() - t0


def compare(label, fns, args, rounds, inner=1):
    """Median seconds per call of each fn, alternating the fns every round."""
    times = {name: [] for name in fns}
    for fn in fns.values():  # warm up
        fn(*args)
    order = list(fns.items())
    for r in range(rounds):
        # alternate the order every round: whoever runs second must not always pay (or
        # profit from) what the first left in the caches and the allocator
        for name, fn in (order if r % 2 == 0 else order[::-1]):
            gc.collect()  # the cyclic GC stays on: users pay for it too
            t = min(timed(fn, *args) for _ in range(inner))
            times[name].append(t)
    med = {name: statistics.median(ts) for name, ts in times.items()}
    return med


def peak_memory(fn, *args):
    gc.collect()
    tracemalloc.start()
    tracemalloc.reset_peak()
    fn(*args)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=21)
    p.add_argument("--torch", action="store_true", help="also time PyTorch CPU if installed")
    p.add_argument("--gc", choices=("on", "frozen", "off"), default="on",
                   help="the cyclic garbage collector while timing: on (as users run), frozen "
                        "(what exists before timing is not rescanned, as in the peer "
                        "benchmark), off (an upper bound on what fewer GC-tracked objects "
                        "per recorded op could gain)")
    opts = p.parse_args(argv)
    peers = {}
    if opts.torch:
        try:
            import torch
            torch.set_num_threads(1)
            peers = {"torch": True}
        except ImportError:
            print("(PyTorch not installed: skipping the peer column)")
    rng = np.random.default_rng(0)

    # correctness first: the benchmark compares like with like
    x_small = rng.standard_normal(16)
    np.testing.assert_allclose(chain_ndgrad(x_small, 100), chain_numpy(x_small, 100), rtol=1e-12)
    np.testing.assert_allclose(chain_minimal_tape(x_small, 100), chain_numpy(x_small, 100),
                               rtol=1e-12)
    X, params = mlp_params(rng)
    for a, b in zip(mlp_ndgrad(X, params), mlp_numpy(X, params)):
        assert a.dtype == b.dtype == np.float32
        np.testing.assert_allclose(a, b, rtol=2e-4, atol=1e-6)

    if opts.gc == "frozen":
        gc.collect()
        gc.freeze()
    elif opts.gc == "off":
        gc.disable()
    print(f"ndgrad {ndgrad.__version__}, NumPy {np.__version__}; median of {opts.rounds} rounds")
    print(f"{'workload':44s} {'numpy':>10s} {'ndgrad':>10s} {'ratio':>7s}"
          + ("  torch   ratio" if peers else ""))

    def row(label, med, unit_div=1.0, unit="ms"):
        scale = 1e3 if unit == "ms" else 1e6
        line = (f"{label:44s} {med['numpy'] * scale / unit_div:9.2f}{unit[0]} "
                f"{med['ndgrad'] * scale / unit_div:9.2f}{unit[0]} "
                f"{med['ndgrad'] / med['numpy']:6.2f}x")
        if "torch" in med:
            line += f" {med['torch'] * scale / unit_div:7.2f}  {med['torch'] / med['numpy']:5.2f}x"
        print(line)

    # W1
    fns = {"numpy": chain_numpy, "ndgrad": chain_ndgrad}
    if peers:
        fns["torch"] = chain_torch
    n_ops = 100 * 3 + 1
    med = compare("W1", dict(fns, tape=chain_minimal_tape), (x_small, 100), opts.rounds, inner=5)
    row("W1 16 values, 100 iters (us per recorded op)", med, unit_div=n_ops, unit="us")
    print(f"{'W1 floor: a minimal Python tape':44s} {'':10s} {med['tape'] * 1e6 / n_ops:9.2f}u "
          f"{med['tape'] / med['numpy']:6.2f}x")

    # W2
    x_big = rng.standard_normal(1_000_000)
    med = compare("W2", fns, (x_big, 10), max(6, opts.rounds // 2))
    row("W2 1e6 values, 10 iters (ms per run)", med)
    mem_np = peak_memory(chain_numpy, x_big, 10)
    mem_nd = peak_memory(chain_ndgrad, x_big, 10)
    print(f"{'W2 peak traced memory (MB)':44s} {mem_np / 1e6:9.1f}M {mem_nd / 1e6:9.1f}M "
          f"{mem_nd / mem_np:6.2f}x")

    # F1: forward mode (the chain's forward pass with a tangent vs without)
    np.testing.assert_allclose(chain_forward_dual(x_small, 100), chain_jvp_numpy(x_small, 100),
                               rtol=1e-10)
    for label, x, n, rounds, inner in (
            ("F1 16 values, 100 iters: dual / plain fwd", x_small, 100, opts.rounds, 5),
            ("F1 1e6 values, 10 iters: dual / plain fwd", x_big, 10, max(6, opts.rounds // 2),
             1)):
        med = compare("F1", {"plain": chain_forward_plain, "dual": chain_forward_dual},
                      (x, n), rounds, inner=inner)
        print(f"{label:44s} {med['plain'] * 1e3:9.2f}m {med['dual'] * 1e3:9.2f}m "
              f"{med['dual'] / med['plain']:6.2f}x")

    # W3
    fns = {"numpy": mlp_numpy, "ndgrad": mlp_ndgrad}
    if peers:
        fns["torch"] = mlp_torch
    med = compare("W3", fns, (X, params), max(5, opts.rounds // 2))
    row("W3 float32 MLP fwd+bwd (ms per run)", med)


if __name__ == "__main__":
    main()
