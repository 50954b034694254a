"""Differentiating SciPy's ODE solver: the adjoint gradient against the forward solve alone.

The problem: ``y' = A y - k * y`` with ``A`` the 100 x 100 second-difference (diffusion)
matrix, stiff (eigenvalues from about -10 to -4e4), and ``k`` 100 decay rates; BDF over
``[0, 1]`` at ``rtol=1e-6, atol=1e-9`` with ndgrad's Jacobian; ``y0`` a smooth profile
plus noise.

O1  the gradient of a loss of the final state, ``sum(c * y(1))``, with respect to the 100
    rates and ``y0`` by ``ndgrad.integrate.solve_ivp``'s continuous adjoint (the forward
    solve with dense output, one backward solve of size 100, and the rates' integral by a
    vectorized quadrature), against the forward solve alone (``ndgrad.integrate.solve_ivp``,
    nothing recorded).                                                   target <= 4x
O2  the same with the loss observing 10 times (``t_eval`` 0.1, ..., 1.0): the backward solve
    restarts at each observation, where ``c_k`` jumps into the adjoint and excites its fast
    modes (a fresh stiff transient per interval).                           (reported)
O3  O1's gradient by the forward sensitivity equations (``sensitivity="forward"``, one
    solve of size 100 x 201 with a sparse Jacobian).                        (reported)

Run ``python benchmarks/bench_scipy.py`` (``--rounds N``). Each figure is the median of the
rounds, the calls timed side by side, alternating, in one run; the adjoint and forward
sensitivity gradients are checked against each other first.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import ndgrad
from ndgrad.func import grad
from ndgrad.integrate import solve_ivp

N = 100


def problem():
    h = 1.0 / (N + 1)
    A = (np.diag(-2.0 * np.ones(N)) + np.diag(np.ones(N - 1), 1)
         + np.diag(np.ones(N - 1), -1)) / h ** 2
    rng = np.random.default_rng(0)
    k = rng.uniform(0.5, 2.0, N)
    y0 = np.sin(np.pi * np.arange(1, N + 1) * h) + 0.1 * rng.normal(size=N)
    return ndgrad.tensor(A), ndgrad.tensor(k), ndgrad.tensor(y0), rng


def make_rhs(A):
    def rhs(t, y, k):          # (A a constant: a tensor in args would be differentiated)
        return A @ y - k * y
    return rhs


def run(A, k, y0, c, t_eval, sensitivity=None):
    kw = dict(method="BDF", t_eval=t_eval, rtol=1e-6, atol=1e-9)
    rhs = make_rhs(A)
    if sensitivity is None:
        return solve_ivp(rhs, (0.0, 1.0), y0, args=(k,), **kw).y
    return grad(lambda k, y0: (c * solve_ivp(rhs, (0.0, 1.0), y0, args=(k,),
                                             sensitivity=sensitivity, **kw).y).sum(),
                argnums=(0, 1))(k, y0)


def median_time(fn, rounds):
    ts = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    opts = parser.parse_args()
    A, k, y0, rng = problem()
    final, ten = [1.0], list(np.linspace(0.1, 1.0, 10))
    c1 = ndgrad.tensor(rng.normal(size=(N, 1)))
    c10 = ndgrad.tensor(rng.normal(size=(N, 10)))
    ga, gf = run(A, k, y0, c1, final, "adjoint"), run(A, k, y0, c1, final, "forward")
    agree = max(float(np.abs(ga[i].numpy() - gf[i].numpy()).max() /
                      np.abs(gf[i].numpy()).max()) for i in range(2))
    print(f"{N}-state stiff linear ODE (BDF), gradients in {N} rates and y0; adjoint and "
          f"forward sensitivities agree to {agree:.1e} (relative)")
    cases = [
        ("O1", "final state", final, c1, "adjoint"),
        ("O2", "10 observations", ten, c10, "adjoint"),
        ("O3", "final state", final, c1, "forward"),
    ]
    for name, what, t_eval, c, sens in cases:
        base, cost = [], []
        for _ in range(opts.rounds):   # alternating
            base.append(median_time(lambda c=c, t=t_eval: run(A, k, y0, c, t), 1))
            cost.append(median_time(lambda c=c, t=t_eval, s=sens: run(A, k, y0, c, t, s), 1))
        b, m = statistics.median(base), statistics.median(cost)
        print(f"{name}  {what:16s} {sens:8s} gradient {m * 1e3:8.1f} ms, forward solve "
              f"{b * 1e3:7.1f} ms: {m / b:5.2f}x")


if __name__ == "__main__":
    main()
