"""Differentiating SciPy's solvers: the ODE adjoint against the forward solve alone, and an
optimum's derivative against the optimisation.

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

S1  one ``func.jvp`` (in the infection rate) of a 3-state SIR epidemic (``y' = f(t, y, β,
    γ)``, 161 output times over 160 days, RK45 at ``rtol=1e-6, atol=1e-8``): the forward
    sensitivity equations (a solve of size 3 x 6 whose right-hand side needs ``∂f/∂(y, θ)``
    at every evaluation), against the plain solve (``ndgrad.integrate.solve_ivp``, nothing
    recorded); SciPy's solve with a NumPy right-hand side is printed for scale.
                                                                        target <= 10x
S2  S1 with BDF (ndgrad's Jacobian for the Newton iterations).                 target <= 10x

M1  the derivative of a 1,000-dimensional ``ndgrad.optimize.minimize`` solution (L-BFGS-B
    on a smooth, coupled, strongly convex objective with 1,000 parameters ``θ``) with
    respect to ``θ``: ``sum(c * x*(θ)).backward()`` (implicit function theorem: conjugate
    gradients on Hessian-vector products, no dense Hessian), against the solve itself
    (``minimize``, recorded).                                          target <= 0.5x

Run ``python benchmarks/bench_scipy.py`` (``--rounds N``; ``--only O``, ``S`` or ``M`` for one
group). Each figure is the median of the rounds, the calls timed side by side, alternating,
in one run; the adjoint and forward sensitivity gradients are checked against each other
first, the SIR jvp against finite differences of SciPy solves.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import ndgrad
from ndgrad.func import grad, jvp
from ndgrad.integrate import solve_ivp
from ndgrad.optimize import minimize

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


def sir(t, y, beta, gamma):
    s, i, r = y[0], y[1], y[2]
    infection = beta * s * i / (s + i + r)
    return ndgrad.stack([-infection, infection - gamma * i, gamma * i])


def sir_numpy(t, y, beta, gamma):
    s, i, r = y
    infection = beta * s * i / (s + i + r)
    return [-infection, infection - gamma * i, gamma * i]


SIR_T = np.linspace(0.0, 160.0, 161)
SIR_Y0 = [990.0, 10.0, 0.0]


def sir_run(method, how):
    """One S1/S2 call: ``how`` is "jvp", "plain" (ndgrad) or "scipy"."""
    kw = dict(t_eval=SIR_T, method=method, rtol=1e-6, atol=1e-8)
    if how == "scipy":
        import scipy.integrate as si
        return si.solve_ivp(sir_numpy, (0.0, 160.0), SIR_Y0, args=(0.3, 0.1), **kw).y
    y0, gamma = ndgrad.tensor(SIR_Y0), ndgrad.tensor(0.1)
    if how == "plain":
        return solve_ivp(sir, (0.0, 160.0), y0, args=(ndgrad.tensor(0.3), gamma), **kw).y
    return jvp(lambda b: solve_ivp(sir, (0.0, 160.0), y0, args=(b, gamma), **kw).y,
               (ndgrad.tensor(0.3),), (ndgrad.tensor(1.0),))[1]


def check_sir(method):
    """The jvp against central differences of SciPy solves at tight tolerances."""
    import scipy.integrate as si
    tangent = sir_run(method, "jvp").numpy()
    kw = dict(t_eval=SIR_T, method=method, rtol=1e-11, atol=1e-9)
    eps = 1e-6
    up, down = (si.solve_ivp(sir_numpy, (0.0, 160.0), SIR_Y0, args=(b, 0.1), **kw).y
                for b in (0.3 + eps, 0.3 - eps))
    fd = (up - down) / (2 * eps)
    return float(np.abs(tangent - fd).max() / np.abs(fd).max())


M = 1000


def objective(x, theta):
    # strongly convex: a data term, a smooth penalty and a chain coupling (a sparse Hessian)
    d = x[1:] - x[:-1]
    return (0.5 * (x - theta) ** 2 + 0.1 * ndgrad.log(ndgrad.cosh(x))).sum() \
        + 0.5 * (d * d).sum()


def minimize_and_derivative(theta0, c):
    """(seconds of the solve, seconds of the derivative, the gradient)."""
    theta = ndgrad.tensor(theta0, requires_grad=True)
    t0 = time.perf_counter()
    res = minimize(objective, ndgrad.zeros(M), args=(theta,), method="L-BFGS-B",
                   options=dict(gtol=1e-10, ftol=1e-14, maxiter=10000))
    t1 = time.perf_counter()
    (c * res.x).sum().backward()
    t2 = time.perf_counter()
    assert res.success, res.message
    return t1 - t0, t2 - t1, theta.grad.numpy()


def check_minimize_derivative(theta0, c, g):
    """The gradient against the closed form of the implicit function theorem: with
    H = d²f/dx² at x*, dx*/dθ = H⁻¹ (f_xθ = -I), so the gradient is H⁻¹ c."""
    x = minimize(objective, ndgrad.zeros(M), args=(ndgrad.tensor(theta0),),
                 method="L-BFGS-B", options=dict(gtol=1e-10, ftol=1e-14, maxiter=10000)).x
    xs = x.numpy()
    H = np.diag(1.0 + 0.1 / np.cosh(xs) ** 2 + 2.0)
    H[0, 0] -= 1.0
    H[-1, -1] -= 1.0
    H -= np.diag(np.ones(M - 1), 1) + np.diag(np.ones(M - 1), -1)
    ref = np.linalg.solve(H, c.numpy())
    return float(np.abs(g - ref).max() / np.abs(ref).max())


def median_time(fn, rounds):
    ts = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def ode_workloads(rounds, rng_parts):
    A, k, y0, rng = rng_parts
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
        for _ in range(rounds):   # alternating
            base.append(median_time(lambda c=c, t=t_eval: run(A, k, y0, c, t), 1))
            cost.append(median_time(lambda c=c, t=t_eval, s=sens: run(A, k, y0, c, t, s), 1))
        b, m = statistics.median(base), statistics.median(cost)
        print(f"{name}  {what:16s} {sens:8s} gradient {m * 1e3:8.1f} ms, forward solve "
              f"{b * 1e3:7.1f} ms: {m / b:5.2f}x")


def sir_workloads(rounds):
    for name, method in (("S1", "RK45"), ("S2", "BDF")):
        err = check_sir(method)
        times = {how: [] for how in ("scipy", "plain", "jvp")}
        for _ in range(rounds):   # alternating
            for how in times:
                times[how].append(median_time(lambda h=how, m=method: sir_run(m, h), 1))
        sp, plain, tangent = (statistics.median(times[h]) for h in ("scipy", "plain", "jvp"))
        print(f"{name}  SIR {method:5s} jvp {tangent * 1e3:7.1f} ms, plain solve "
              f"{plain * 1e3:6.1f} ms: {tangent / plain:5.2f}x (SciPy with NumPy "
              f"{sp * 1e3:5.1f} ms; jvp vs finite differences {err:.1e} relative)")


def minimize_workload(rounds, rng):
    theta0 = np.sin(np.linspace(0, 6 * np.pi, M)) + 0.3 * rng.normal(size=M)
    c = ndgrad.tensor(rng.normal(size=M))
    solve_s, deriv_s = [], []
    for _ in range(rounds):
        s_, d_, g = minimize_and_derivative(theta0, c)
        solve_s.append(s_)
        deriv_s.append(d_)
    err = check_minimize_derivative(theta0, c, g)
    s_, d_ = statistics.median(solve_s), statistics.median(deriv_s)
    print(f"M1  {M}-dim minimize (L-BFGS-B), derivative in {M} parameters "
          f"{d_ * 1e3:7.1f} ms, the solve {s_ * 1e3:7.1f} ms: {d_ / s_:5.2f}x "
          f"(gradient vs closed form: {err:.1e} relative)")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--only", choices=["O", "S", "M"], default=None,
                        help="run only the O, S or M workloads")
    opts = parser.parse_args()
    parts = problem()
    if opts.only in (None, "O"):
        ode_workloads(opts.rounds, parts)
    if opts.only in (None, "S"):
        sir_workloads(opts.rounds)
    if opts.only in (None, "M"):
        minimize_workload(opts.rounds, parts[3])


if __name__ == "__main__":
    main()
