"""GPU benchmarks: ndgrad on CuPy against the same computation written by hand in CuPy.

Run by hand (never a timed test):
    python benchmarks/bench_gpu.py [--rounds N] [--torch] [--cpu] [--n N] [--size S] [--jac J]

Each workload runs ndgrad on CUDA tensors and the hand-written CuPy forward + analytic backward
(or closed form) side by side in one process, alternating, and reports the median of repeated
rounds as a ratio to the hand-written CuPy (and to PyTorch CUDA with ``--torch`` when it is
installed with CUDA). Every round times a loop of back-to-back calls (steady state, as a
training loop runs) between two device synchronizations; everything is warmed up first, since
CuPy compiles each kernel on its first use. Every result is first checked against the
hand-written one, so the comparison is like for like.

``--cpu`` runs the same workloads with NumPy arrays on the CPU (ndgrad on the CPU against
hand-written NumPy; PyTorch CPU, one thread, with ``--torch``): CPU figures, and a smoke test
of this script on machines without a GPU (``--cpu --rounds 1 --size 256`` takes seconds).
Without ``--cpu`` and without a usable GPU the script says so and exits 0.

G1  ``--n`` (1,000,000) float32 and float64 values, 10 x ``y = tanh(y * 1.0001 + 0.5)``
    (and 100 x in float32), ``y.sum().backward()``; by hand: keep the ys, then
    ``g = g * (1 - y*y) * 1.0001``. Short memory-bound kernels: on the GPU this measures
    ndgrad's per-op overhead against CuPy's own launch cost.
                                                  (reported; W2's CPU target is <= 1.05x)
G2  float32 matmul chain, X, W1, W2, W3 ``--size`` x ``--size`` (4096 on the GPU, 1024 with
    ``--cpu``): ``mean((tanh(tanh(X @ W1) @ W2) @ W3) ** 2)``, gradients of W1, W2, W3; by
    hand: the five backward matmuls. Compute bound.          target <= 1.05x
G3  ``--jac`` x ``--jac`` (256x256) float64 Jacobian of ``x -> tanh(A @ x)``; closed form
    ``(1 - tanh(A x)**2)[:, None] * A``: ``func.jacrev`` (one batched backward), ``func.jacfwd``,
    ``functional.jacobian(vectorize=True)`` (bench_transforms.py's W4 on the GPU).

Each workload also times ``ndgrad.func.compile`` of its derivative (``compile(grad)``,
``compile(jacrev)``, ``compile(jacfwd)``): the program traced once, its elementwise chains
fused into one CuPy kernel each.
                                                  (reported; W4's CPU target is <= 15x)
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time

import numpy as np

import ndgrad
from ndgrad import func, functional


# ----------------------------------------------------------------------------- environments
class Env:
    """Where a run computes: ``xp`` (cupy or numpy), ``sync()`` (waits for the device), the
    hand-written column's name, and the device type ("cuda" or "cpu", ndgrad's and
    PyTorch's)."""

    def __init__(self, xp, sync, label, device_type, header):
        self.xp = xp
        self.sync = sync
        self.label = label
        self.device_type = device_type
        self.header = header


def gpu_env():
    import cupy

    dev = cupy.cuda.Device()
    name = cupy.cuda.runtime.getDeviceProperties(dev.id)["name"]
    if isinstance(name, bytes):
        name = name.decode()
    header = f"GPU {dev.id}: {name}; CuPy {cupy.__version__}"
    # Make ndgrad install its CUDA backend now: until a CUDA device has been used once,
    # ndgrad.asarray(cupy_array) does not know CuPy's array type and takes the NumPy path.
    # check() asserts every ndgrad result is on the GPU, so a CPU fallback is never timed.
    ndgrad.empty(0, device=f"cuda:{dev.id}")
    # The whole device, not one stream: the PyTorch peer runs on its own stream.
    return Env(cupy, dev.synchronize, "cupy", "cuda", header)


def cpu_env():
    return Env(np, lambda: None, "numpy", "cpu", "CPU (--cpu)")


def to_host(r):
    """A result (a Tensor, a CuPy/NumPy array, a torch tensor, or a list of them) as a list
    of NumPy arrays: used once per workload, for the correctness check, never timed."""
    if isinstance(r, (list, tuple)):
        return [a for e in r for a in to_host(e)]
    if isinstance(r, ndgrad.Tensor):
        return [r.detach().cpu().numpy()]
    if hasattr(r, "detach"):  # a torch tensor
        return [r.detach().cpu().numpy()]
    if hasattr(r, "get"):  # a CuPy array
        return [r.get()]
    return [np.asarray(r)]


# ----------------------------------------------------------------------------- G1
def g1_fns(env):
    xp = env.xp

    def hand(x0, n):
        ys = []
        y = x0
        for _ in range(n):
            y = xp.tanh(y * 1.0001 + 0.5)
            ys.append(y)
        _ = y.sum()
        g = xp.ones_like(y)
        for y in reversed(ys):
            g = g * (1.0 - y * y) * 1.0001
        return g

    def nd(x0, n):
        x = ndgrad.asarray(x0, requires_grad=True)  # no copy: stays where x0 is
        y = x
        for _ in range(n):
            y = ndgrad.tanh(y * 1.0001 + 0.5)
        y.sum().backward()
        return x.grad

    def chain(x, n):
        y = x
        for _ in range(n):
            y = ndgrad.tanh(y * 1.0001 + 0.5)
        return y.sum()

    # (the gradient traced once into a program; on the GPU its elementwise chain is one
    # fused kernel: Note [Fused kernels] in ndgrad/functional/program.py)
    compiled = func.compile(func.grad(chain), static_argnums=1)
    return hand, {"ndgrad": nd, "ndgrad compile(grad)": compiled}


def g1_torch(env):  # pragma: no cover - optional peer
    import torch

    def fn(x0, n):
        x = torch.from_dlpack(x0).requires_grad_(True)  # no copy
        y = x
        for _ in range(n):
            y = torch.tanh(y * 1.0001 + 0.5)
        y.sum().backward()
        return x.grad
    return {"torch": fn}


# ----------------------------------------------------------------------------- G2
def g2_problem(env, rng, size):
    def mat(scale):
        return env.xp.asarray((rng.standard_normal((size, size)) * scale).astype(np.float32))
    return (mat(1.0), [mat(1.0 / np.sqrt(size)) for _ in range(3)])


def g2_fns(env):
    xp = env.xp

    def hand(X, Ws):
        W1, W2, W3 = Ws
        h1 = xp.tanh(X @ W1)
        h2 = xp.tanh(h1 @ W2)
        out = h2 @ W3
        _ = (out * out).mean()
        g_out = (2.0 / out.size) * out
        gW3 = h2.T @ g_out
        g_a2 = (g_out @ W3.T) * (1.0 - h2 * h2)
        gW2 = h1.T @ g_a2
        g_a1 = (g_a2 @ W2.T) * (1.0 - h1 * h1)
        gW1 = X.T @ g_a1
        return [gW1, gW2, gW3]

    def nd(X, Ws):
        W1, W2, W3 = ps = [ndgrad.asarray(W, requires_grad=True) for W in Ws]
        out = ndgrad.tanh(ndgrad.tanh(ndgrad.asarray(X) @ W1) @ W2) @ W3
        (out * out).mean().backward()
        return [p.grad for p in ps]

    def loss(X, W1, W2, W3):
        out = ndgrad.tanh(ndgrad.tanh(X @ W1) @ W2) @ W3
        return (out * out).mean()

    compiled = func.compile(func.grad(loss, argnums=(1, 2, 3)))
    return hand, {"ndgrad": nd,
                  "ndgrad compile(grad)": lambda X, Ws: list(compiled(X, *Ws))}


def g2_torch(env):  # pragma: no cover - optional peer
    import torch

    def fn(X, Ws):
        W1, W2, W3 = ps = [torch.from_dlpack(W).requires_grad_(True) for W in Ws]
        out = torch.tanh(torch.tanh(torch.from_dlpack(X) @ W1) @ W2) @ W3
        (out * out).mean().backward()
        return [p.grad for p in ps]
    return {"torch": fn}


# ----------------------------------------------------------------------------- G3
def g3_problem(env, rng, n):
    return (env.xp.asarray(rng.standard_normal((n, n)) / np.sqrt(n)),
            env.xp.asarray(rng.standard_normal(n)))


def g3_fns(env, A, x):
    xp = env.xp

    def hand(A, x):
        y = xp.tanh(A @ x)
        return (1.0 - y * y)[:, None] * A

    At, xt = ndgrad.asarray(A), ndgrad.asarray(x)

    def f(v):
        return ndgrad.tanh(At @ v)
    rev, fwd = func.compile(func.jacrev(f)), func.compile(func.jacfwd(f))
    return hand, {
        "ndgrad func.jacrev": lambda A, x: func.jacrev(f)(xt),
        "ndgrad func.jacfwd": lambda A, x: func.jacfwd(f)(xt),
        "ndgrad jacobian(vectorize)": lambda A, x: functional.jacobian(f, xt, vectorize=True),
        "ndgrad compile(jacrev)": lambda A, x: rev(xt),
        "ndgrad compile(jacfwd)": lambda A, x: fwd(xt),
    }


def g3_torch(env, A, x):  # pragma: no cover - optional peer
    import torch
    At, xt = torch.from_dlpack(A), torch.from_dlpack(x)

    def f(v):
        return torch.tanh(At @ v)
    return {
        "torch.func.jacrev": lambda A, x: torch.func.jacrev(f)(xt),
        "torch jacobian(vectorize)": lambda A, x: torch.autograd.functional.jacobian(
            f, xt, vectorize=True),
    }


# ----------------------------------------------------------------------------- harness
def timed(fn, args, number, sync):
    """Seconds per call over ``number`` back-to-back calls, between two synchronizations."""
    sync()
    t0 = time.perf_counter()
    for _ in range(number):
        fn(*args)
    sync()
    return (time.perf_counter() - t0) / number


def compare(fns, args, rounds, sync, budget):
    """Median seconds per call of each fn, alternating their order every round.

    Each fn is warmed up (CuPy compiles a kernel on its first use; the memory pool fills),
    then each round times a loop of calls lasting about ``budget`` seconds."""
    numbers = {}
    for name, fn in fns.items():
        fn(*args)
        t = timed(fn, args, 1, sync)
        numbers[name] = max(1, min(1000, int(budget / max(t, 1e-7))))
    times = {name: [] for name in fns}
    order = list(fns.items())
    for r in range(rounds):
        # alternate the order every round: whoever runs second must not always pay (or
        # profit from) what the first left in the caches and the memory pool
        for name, fn in (order if r % 2 == 0 else order[::-1]):
            gc.collect()  # the cyclic GC stays on during timing: users pay for it too
            times[name].append(timed(fn, args, numbers[name], sync))
    return {name: statistics.median(ts) for name, ts in times.items()}


def check(fns, args, expected, rtol, atol_rel, label, device_type):
    """Each fn's result equals the hand-written one (on host copies) before anything is
    timed: a wrong gradient is never timed silently."""
    for name, fn in fns.items():
        r = fn(*args)
        for t in (r if isinstance(r, list) else [r]):
            if isinstance(t, ndgrad.Tensor):
                assert t.device.type == device_type, f"{label} {name}: result on {t.device}"
        got = to_host(r)
        assert len(got) == len(expected), (label, name)
        for i, (a, b) in enumerate(zip(got, expected)):
            assert a.dtype == b.dtype, f"{label} {name}[{i}]: dtype {a.dtype} != {b.dtype}"
            np.testing.assert_allclose(a, b, rtol=rtol, atol=atol_rel * np.abs(b).max(),
                                       err_msg=f"{label}: {name}[{i}]")


def run(label, target, hand, fns, args, env, opts, rtol, atol_rel=0.0):
    expected = to_host(hand(*args))
    check(fns, args, expected, rtol, atol_rel, label, env.device_type)
    med = compare({env.label: hand, **fns}, args, opts.rounds, env.sync, opts.budget)
    base = med[env.label]
    print(f"\n{label} ({target}); hand-written {env.label} {base * 1e3:.3f} ms")
    for name in fns:
        print(f"  {name:34s} {med[name] * 1e3:10.3f} ms {med[name] / base:8.2f}x")


def torch_peer(env):
    """True when ``--torch`` can add PyTorch on this run's device."""
    try:
        import torch
    except ImportError:
        print("(PyTorch not installed: skipping the peer rows)")
        return False
    if env.device_type == "cuda" and not torch.cuda.is_available():
        print(f"(PyTorch {torch.__version__} has no CUDA: skipping the peer rows)")
        return False
    if env.device_type == "cpu":
        torch.set_num_threads(1)  # as bench_core.py: NumPy's elementwise ops use one thread
    print(f"PyTorch {torch.__version__} ({env.device_type}"
          + (", one thread)" if env.device_type == "cpu" else ")"))
    return True


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=11)
    p.add_argument("--torch", action="store_true",
                   help="also time PyTorch (CUDA; CPU with --cpu) if installed")
    p.add_argument("--cpu", action="store_true",
                   help="run the workloads with NumPy on the CPU instead of CuPy on the GPU")
    p.add_argument("--n", type=int, default=1_000_000, help="G1: number of values")
    p.add_argument("--size", type=int, default=None,
                   help="G2: matrix size (default 4096 on the GPU, 1024 with --cpu)")
    p.add_argument("--jac", type=int, default=256, help="G3: Jacobian size")
    p.add_argument("--budget", type=float, default=0.05,
                   help="seconds each round's loop of calls lasts, about (default 0.05)")
    opts = p.parse_args(argv)

    if opts.cpu:
        env = cpu_env()
    elif not ndgrad.cuda.is_available():
        print("bench_gpu: no CUDA device (CuPy is not installed or sees no GPU); nothing to "
              "time. Run with --cpu for the CPU figures.")
        return 0
    else:
        env = gpu_env()
    size = opts.size or (1024 if opts.cpu else 4096)
    use_torch = opts.torch and torch_peer(env)

    rng = np.random.default_rng(0)
    print(f"{env.header}; ndgrad {ndgrad.__version__}, NumPy {np.__version__}; median of "
          f"{opts.rounds} rounds; ratios to the hand-written {env.label} computation")

    # G1
    hand, fns = g1_fns(env)
    if use_torch:
        fns.update(g1_torch(env))
    for dtype, rtol, atol_rel in ((np.float32, 1e-4, 1e-6), (np.float64, 1e-10, 1e-14)):
        x0 = env.xp.asarray(rng.standard_normal(opts.n).astype(dtype))
        for steps in ((10, 100) if dtype == np.float32 else (10,)):
            run(f"G1 {opts.n:,} {np.dtype(dtype).name} values, {steps} iterations",
                "reported", hand, fns, (x0, steps), env, opts, rtol, atol_rel)
        del x0

    # G2
    X, Ws = g2_problem(env, rng, size)
    hand, fns = g2_fns(env)
    if use_torch:
        fns.update(g2_torch(env))
    run(f"G2 float32 {size}x{size} matmul chain, 3 weight gradients", "target <= 1.05x",
        hand, fns, (X, Ws), env, opts, rtol=1e-3, atol_rel=1e-4)
    del X, Ws

    # G3
    A, x = g3_problem(env, rng, opts.jac)
    hand, fns = g3_fns(env, A, x)
    if use_torch:
        fns.update(g3_torch(env, A, x))
    run(f"G3 {opts.jac}x{opts.jac} Jacobian of tanh(A @ x)", "reported; W4 CPU target <= 15x",
        hand, fns, (A, x), env, opts, rtol=1e-8, atol_rel=1e-12)

    if not opts.cpu:
        fallbacks = ndgrad.core.backend.backend_for_device("cuda").host_fallbacks
        if fallbacks:  # a function CuPy lacks ran on the host: correct, but slow
            print(f"\nhost fallbacks (copied to NumPy and back): {sorted(fallbacks)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
