"""Overhead benchmarks: nested differentiation and the func transforms on small problems.

Run by hand (never a timed test):  python benchmarks/bench_overhead.py [--rounds N] [--torch]
                                   [--n N] [--gc on|frozen|off]

Each workload runs ndgrad and the same computation written by hand in NumPy (a closed form)
side by side in one process, alternating, and reports the median of repeated rounds as a ratio
to NumPy (and, with ``--torch`` and PyTorch installed, the same code in PyTorch CPU with one
thread, and ndgrad's time as a ratio to PyTorch's). Every result is first checked against an
independently computed closed form. Only ndgrad's public API is used, so the script runs
unchanged on any version of ndgrad's kernel.

N1  nested: the 6th derivative of tanh at 50 points by six repeated
    ``ndgrad.autograd.grad(y.sum(), x, create_graph=True)``. Closed form: the derivatives of
    tanh are polynomials in t = tanh(x), P_0(t) = t, P_{n+1}(t) = P_n'(t) (1 - t^2) (the NumPy
    column runs this recurrence with ``np.polynomial`` and evaluates P_6(tanh x); the check
    uses exact integer coefficients). Peer: ``torch.autograd.grad(create_graph=True)``.
T1  func.grad overhead: ``g = ndgrad.func.grad(f)`` built once and called repeatedly, where
    ``f(x) = (exp(sin(x[0]) * cos(x[1])) + tanh(x[0] * x[1])).sum()`` on a 2-element tensor:
    exactly 10 ops (2 index, sin, cos, mul, exp, mul, tanh, add, sum). Closed-form gradient
    in NumPy. Peer: ``torch.func.grad`` of the same function. Microseconds per call.
T2  leapfrog: velocity Verlet for N = 1000 particles in 2-D (unit mass, dt = 0.01, 100 steps),
    potential U(q) = sum_i U_1(q_i), U_1(q) = 0.5 |q|^2 + 0.1 |q|^4 (no pair terms, so forces
    are per particle), forces ``-ndgrad.func.vmap(ndgrad.func.grad(U_1))(q)`` over the particle
    axis, 101 force evaluations per run; the state stays in ndgrad tensors (``--n`` sets N;
    at small N the fixed per-op cost dominates and the ratio grows). NumPy: batched
    closed-form forces ``-(1 + 0.4 |q_i|^2) q_i``. Peer: ``torch.func.vmap(torch.func.grad)``.
    Also reported: one force evaluation on its own (T2f).

Each round times a loop of back-to-back calls lasting about 0.05 s (one call where a single
call takes longer), as ``bench_transforms.py`` does. The cyclic garbage collector stays on
during timing: users pay for it too. Timings on a shared machine are noisy; compare ratios
from one run.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time

import numpy as np

import ndgrad

_torch = None  # the torch module when --torch is given and PyTorch is installed


# ----------------------------------------------------------------------------- N1
N1_ORDER = 6


def tanh_derivative_exact(x, n):
    """d^n/dx^n tanh(x) from exact integer coefficients of P_n(t), t = tanh x (the check)."""
    coeffs = {1: 1}  # P_0(t) = t as {power: integer coefficient}
    for _ in range(n):
        nxt = {}
        for k, c in coeffs.items():  # d/dt (c t^k) * (1 - t^2) = c k t^(k-1) - c k t^(k+1)
            if k == 0:
                continue
            nxt[k - 1] = nxt.get(k - 1, 0) + c * k
            nxt[k + 1] = nxt.get(k + 1, 0) - c * k
        coeffs = {k: c for k, c in nxt.items() if c != 0}
    t = np.tanh(x)
    return sum(float(c) * t ** k for k, c in coeffs.items())


def n1_numpy(x0, n):
    P = np.polynomial.Polynomial
    p = P([0.0, 1.0])
    one_minus_t2 = P([1.0, 0.0, -1.0])
    for _ in range(n):
        p = p.deriv() * one_minus_t2
    return p(np.tanh(x0))


def n1_ndgrad(x0, n):
    x = ndgrad.tensor(x0, requires_grad=True)
    y = ndgrad.tanh(x)
    for _ in range(n):
        (y,) = ndgrad.autograd.grad(y.sum(), x, create_graph=True)
    return y.detach().numpy()


def n1_torch(x0, n):  # pragma: no cover - optional peer
    x = _torch.tensor(x0, requires_grad=True)
    y = _torch.tanh(x)
    for _ in range(n):
        (y,) = _torch.autograd.grad(y.sum(), x, create_graph=True)
    return y.detach().numpy()


# ----------------------------------------------------------------------------- T1
def t1_f(lib):
    """The 10-op scalar function, written once for ndgrad and torch (``lib`` is the module)."""
    def f(x):
        a = x[0]                                   # 1  index
        b = x[1]                                   # 2  index
        s = lib.sin(a)                             # 3  sin
        c = lib.cos(b)                             # 4  cos
        e = lib.exp(s * c)                         # 5  mul, 6  exp
        h = lib.tanh(a * b)                        # 7  mul, 8  tanh
        return (e + h).sum()                       # 9  add, 10 sum
    return f


def t1_numpy(x):
    a, b = x[0], x[1]
    e = np.exp(np.sin(a) * np.cos(b))
    sech2 = 1.0 - np.tanh(a * b) ** 2
    return np.array([e * np.cos(a) * np.cos(b) + sech2 * b,
                     -e * np.sin(a) * np.sin(b) + sech2 * a])


def t1_reference(x):
    """The same gradient with Python's math module, element by element (the check)."""
    import math
    a, b = float(x[0]), float(x[1])
    e = math.exp(math.sin(a) * math.cos(b))
    sech2 = 1.0 / math.cosh(a * b) ** 2
    return np.array([e * math.cos(a) * math.cos(b) + sech2 * b,
                     -e * math.sin(a) * math.sin(b) + sech2 * a])


# ----------------------------------------------------------------------------- T2
T2_N, T2_STEPS, T2_DT = 1000, 100, 0.01


def t2_problem(rng, n=T2_N):
    return rng.standard_normal((n, 2)), rng.standard_normal((n, 2))


def t2_forces_numpy(q):
    r2 = (q * q).sum(axis=1, keepdims=True)
    return -(1.0 + 0.4 * r2) * q


def u_single(q):  # one particle's potential; q has shape (2,) (ndgrad or torch tensor)
    r2 = (q * q).sum()
    return 0.5 * r2 + 0.1 * r2 * r2


def leapfrog(forces, q, p, steps=T2_STEPS, dt=T2_DT):
    """Velocity Verlet with unit masses; works on NumPy arrays, ndgrad and torch tensors."""
    f = forces(q)
    for _ in range(steps):
        p = p + (0.5 * dt) * f
        q = q + dt * p
        f = forces(q)
        p = p + (0.5 * dt) * f
    return q, p


def t2_ndgrad_forces():
    grad_u = ndgrad.func.vmap(ndgrad.func.grad(u_single))
    return lambda q: -grad_u(q)


def t2_torch_forces():  # pragma: no cover - optional peer
    grad_u = _torch.func.vmap(_torch.func.grad(u_single))
    return lambda q: -grad_u(q)


# ----------------------------------------------------------------------------- harness
def timed(fn, args, number):
    """Seconds per call over ``number`` back-to-back calls (steady state, as timeit)."""
    t0 = time.perf_counter()
    for _ in range(number):
        fn(*args)
    return (time.perf_counter() - t0) / number


def compare(fns, rounds, budget=0.05):
    """Median seconds per call of each ``fns[name] = (fn, args)``, alternating every round.

    Each round times a loop of calls lasting about ``budget`` seconds (at least one call)."""
    times = {name: [] for name in fns}
    numbers = {}
    for name, (fn, args) in fns.items():  # warm up, and size the loops
        fn(*args)
        t = timed(fn, args, 1)
        numbers[name] = max(1, min(100_000, int(budget / max(t, 1e-7))))
    order = list(fns.items())
    for r in range(rounds):
        # alternate the order every round: whoever runs second must not always pay (or
        # profit from) what the first left in the caches and the allocator
        for name, (fn, args) in (order if r % 2 == 0 else order[::-1]):
            gc.collect()  # the cyclic GC stays on: users pay for it too
            times[name].append(timed(fn, args, numbers[name]))
    return {name: statistics.median(ts) for name, ts in times.items()}


def _as_np(r):
    if isinstance(r, (tuple, list)):
        return np.concatenate([_as_np(v).ravel() for v in r])
    return r.detach().numpy() if hasattr(r, "detach") else np.asarray(r)


def main(argv=None):
    global _torch
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=21)
    p.add_argument("--torch", action="store_true", help="also time PyTorch CPU if installed")
    p.add_argument("--gc", choices=("on", "frozen", "off"), default="on",
                   help="the cyclic garbage collector while timing: on (as users run), frozen "
                        "(what exists before timing is not rescanned, as in the peer "
                        "benchmark), off (an upper bound on what fewer GC-tracked objects "
                        "per recorded op could gain)")
    p.add_argument("--n", type=int, default=T2_N, help=f"T2 particles (default {T2_N})")
    opts = p.parse_args(argv)
    if opts.torch:
        try:
            import torch
            torch.set_num_threads(1)
            _torch = torch
        except ImportError:
            print("(PyTorch not installed: skipping the peer column)")
    rng = np.random.default_rng(0)

    # ------------------------------------------------------------ problems
    x_n1 = np.linspace(-2.0, 2.0, 50)
    x_t1 = np.array([0.7, -1.3])
    xt_t1 = ndgrad.tensor(x_t1)
    g_nd = ndgrad.func.grad(t1_f(ndgrad))
    q0, p0 = t2_problem(rng, opts.n)
    qt0, pt0 = ndgrad.tensor(q0), ndgrad.tensor(p0)
    f_nd = t2_ndgrad_forces()
    if _torch is not None:
        xtt_t1 = _torch.tensor(x_t1)
        g_t = _torch.func.grad(t1_f(_torch))
        qtt0, ptt0 = _torch.tensor(q0), _torch.tensor(p0)
        f_t = t2_torch_forces()

    def t2_numpy(q, p):
        return leapfrog(t2_forces_numpy, q, p)

    def t2_nd(q, p):
        return leapfrog(f_nd, q, p)

    def t2_t(q, p):  # pragma: no cover - optional peer
        return leapfrog(f_t, q, p)

    # ------------------------------------------------------------ correctness first
    ref = tanh_derivative_exact(x_n1, N1_ORDER)
    np.testing.assert_allclose(n1_numpy(x_n1, N1_ORDER), ref, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(n1_ndgrad(x_n1, N1_ORDER), ref, rtol=1e-10, atol=1e-10)
    ref = t1_reference(x_t1)
    np.testing.assert_allclose(t1_numpy(x_t1), ref, rtol=1e-13)
    np.testing.assert_allclose(_as_np(g_nd(xt_t1)), ref, rtol=1e-13)
    q_ref, p_ref = t2_numpy(q0, p0)
    # the forces against the closed form at the start, then the whole trajectory
    np.testing.assert_allclose(_as_np(f_nd(qt0)), t2_forces_numpy(q0), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(_as_np(t2_nd(qt0, pt0)), np.concatenate(
        [q_ref.ravel(), p_ref.ravel()]), rtol=1e-10, atol=1e-12)
    if _torch is not None:
        np.testing.assert_allclose(n1_torch(x_n1, N1_ORDER), n1_numpy(x_n1, N1_ORDER),
                                   rtol=1e-10, atol=1e-10)
        np.testing.assert_allclose(_as_np(g_t(xtt_t1)), ref, rtol=1e-13)
        np.testing.assert_allclose(_as_np(t2_t(qtt0, ptt0)), np.concatenate(
            [q_ref.ravel(), p_ref.ravel()]), rtol=1e-10, atol=1e-12)

    if opts.gc == "frozen":
        gc.collect()
        gc.freeze()
    elif opts.gc == "off":
        gc.disable()
    print(f"ndgrad {ndgrad.__version__}, NumPy {np.__version__}"
          + (f", PyTorch {_torch.__version__} (1 thread)" if _torch is not None else "")
          + f"; median of {opts.rounds} rounds")
    print(f"{'workload':44s} {'numpy':>10s} {'ndgrad':>10s} {'nd/np':>8s}"
          + (f" {'torch':>10s} {'torch/np':>8s} {'nd/torch':>8s}" if _torch is not None else ""))

    def row(label, med, unit="us"):
        scale = 1e3 if unit == "ms" else 1e6
        line = (f"{label:44s} {med['numpy'] * scale:9.2f}{unit[0]} "
                f"{med['ndgrad'] * scale:9.2f}{unit[0]} "
                f"{med['ndgrad'] / med['numpy']:7.2f}x")
        if "torch" in med:
            line += (f" {med['torch'] * scale:9.2f}{unit[0]} "
                     f"{med['torch'] / med['numpy']:7.2f}x "
                     f"{med['ndgrad'] / med['torch']:7.2f}x")
        print(line, flush=True)

    # N1
    fns = {"numpy": (n1_numpy, (x_n1, N1_ORDER)), "ndgrad": (n1_ndgrad, (x_n1, N1_ORDER))}
    if _torch is not None:
        fns["torch"] = (n1_torch, (x_n1, N1_ORDER))
    row("N1 d^6/dx^6 tanh, 50 points, nested (us)", compare(fns, opts.rounds), unit="us")

    # T1
    fns = {"numpy": (t1_numpy, (x_t1,)), "ndgrad": (g_nd, (xt_t1,))}
    if _torch is not None:
        fns["torch"] = (g_t, (xtt_t1,))
    row("T1 func.grad of a 10-op f(x[0], x[1]) (us)", compare(fns, opts.rounds), unit="us")

    # T2f: one force evaluation
    fns = {"numpy": (t2_forces_numpy, (q0,)), "ndgrad": (f_nd, (qt0,))}
    if _torch is not None:
        fns["torch"] = (f_t, (qtt0,))
    row(f"T2f vmap(grad(U_1)) forces, N={opts.n} (us)", compare(fns, opts.rounds), unit="us")

    # T2: the whole integration
    fns = {"numpy": (t2_numpy, (q0, p0)), "ndgrad": (t2_nd, (qt0, pt0))}
    if _torch is not None:
        fns["torch"] = (t2_t, (qtt0, ptt0))
    row(f"T2 leapfrog N={opts.n}, {T2_STEPS} steps (ms per run)", compare(fns, opts.rounds),
        unit="ms")


if __name__ == "__main__":
    main()
