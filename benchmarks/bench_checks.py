"""gradcheck speed: ratios to a hand-written NumPy finite-difference check, same run.

G1  gradcheck of ``f(a, b) = tanh(a @ b).sum(axis=1)``, a 8x6 and b 6x5 (float64), full mode,
    against a hand-written NumPy check that does the same work by hand: central differences
    over every input element (two evaluations of the NumPy function each), the closed-form
    Jacobian, and one ``allclose`` per input.                       target <= 5x
G2  the same with ``fast_mode=True``, against the same NumPy check.  target <= 1.2x

Run ``python benchmarks/bench_checks.py`` (``--torch`` adds torch.autograd.gradcheck when
PyTorch is installed). Each figure is the median of repeated loops of back-to-back calls,
all timed side by side in one run.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time

import numpy as np

import ndgrad
from ndgrad.checks import gradcheck


def f_numpy(a, b):
    return np.tanh(a @ b).sum(axis=1)


def numpy_check(a, b, eps=1e-6, atol=1e-5, rtol=1e-3):
    """Full finite-difference check by hand: numerical Jacobians of both inputs against the
    closed form d/da_ik = (1 - t_ij^2) b_kj summed over j, d/db_kj = (1 - t_ij^2) a_ik."""
    t = np.tanh(a @ b)
    s = 1.0 - t * t                                  # (8, 5)
    m = a.shape[0]
    ja = np.einsum("ij,kj->ik", s, b)                # d out_i / d a_ik (row i only)
    jac_a = np.zeros((m, a.size))
    for i in range(m):
        jac_a[i, i * a.shape[1]:(i + 1) * a.shape[1]] = ja[i]
    jac_b = (s[:, None, :] * a[:, :, None]).reshape(m, -1)  # d out_i / d b_kj
    ok = True
    for x, jac in ((a, jac_a), (b, jac_b)):
        flat = x.reshape(-1)
        num = np.empty((m, flat.size))
        for k in range(flat.size):
            orig = flat[k]
            flat[k] = orig + eps
            plus = f_numpy(a, b)
            flat[k] = orig - eps
            minus = f_numpy(a, b)
            flat[k] = orig
            num[:, k] = (plus - minus) / (2 * eps)
        ok &= np.allclose(jac, num, atol=atol, rtol=rtol)
    return ok


def timed(fn, number):
    t0 = time.perf_counter()
    for _ in range(number):
        fn()
    return (time.perf_counter() - t0) / number


def compare(fns, rounds, budget=0.1):
    times = {name: [] for name in fns}
    numbers = {name: max(1, min(500, int(budget / max(timed(fn, 1), 1e-7))))
               for name, fn in fns.items()}
    order = list(fns.items())
    for r in range(rounds):
        for name, fn in (order if r % 2 == 0 else order[::-1]):
            gc.collect()
            times[name].append(timed(fn, numbers[name]))
    return {name: statistics.median(ts) for name, ts in times.items()}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--torch", action="store_true", help="also time PyTorch CPU if installed")
    opts = p.parse_args(argv)
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((8, 6)), rng.standard_normal((6, 5))
    ta = ndgrad.tensor(a, requires_grad=True)
    tb = ndgrad.tensor(b, requires_grad=True)

    def f(x, y):
        return ndgrad.tanh(x @ y).sum(axis=1)

    fns = {
        "numpy": lambda: numpy_check(a.copy(), b.copy()),
        "ndgrad gradcheck": lambda: gradcheck(f, (ta, tb)),
        "ndgrad gradcheck(fast_mode)": lambda: gradcheck(f, (ta, tb), fast_mode=True),
    }
    if opts.torch:
        try:
            import torch
            xa = torch.tensor(a, requires_grad=True)
            xb = torch.tensor(b, requires_grad=True)

            def tf(x, y):
                return torch.tanh(x @ y).sum(dim=1)
            fns["torch gradcheck"] = lambda: torch.autograd.gradcheck(tf, (xa, xb))
            fns["torch gradcheck(fast_mode)"] = lambda: torch.autograd.gradcheck(
                tf, (xa, xb), fast_mode=True)
        except ImportError:
            print("(PyTorch not installed: skipping the peer rows)")
    for name, fn in fns.items():  # every check passes: like for like
        assert fn() is True, name
    med = compare(fns, opts.rounds)
    print(f"ndgrad {ndgrad.__version__}, NumPy {np.__version__}; median of {opts.rounds} rounds")
    print(f"\nG1/G2 gradcheck of tanh(a @ b).sum(axis=1), a 8x6, b 6x5 (targets: full <= 5x, "
          f"fast_mode <= 1.2x); hand-written NumPy check {med['numpy'] * 1e3:.3f} ms")
    for name in fns:
        if name != "numpy":
            print(f"  {name:30s} {med[name] * 1e3:10.3f} ms {med[name] / med['numpy']:8.2f}x")


if __name__ == "__main__":
    main()
