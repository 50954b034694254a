"""Taylor-mode benchmarks: high derivatives and the Forward Laplacian.

Run by hand (never a timed test):  python benchmarks/bench_taylor.py [--rounds N] [--no-torch]

PyTorch is not a dependency: where it is importable (one thread) it is timed as a peer,
unless ``--no-torch``. Each workload is first checked like for like (every route against the
reference), then timed side by side in one process, alternating, as the median of repeated
rounds of back-to-back calls (``bench_transforms.compare``); compare ratios within one run.

T1  the 6th derivative of ``tanh`` at 50 points; reference: the closed form, a degree-7
    polynomial in ``tanh(x)`` evaluated in NumPy (its coefficients computed once), and the
    same polynomial derived on each call, as the peer benchmark's W8 reference does. ndgrad
    ``func.jet`` (one order-6 Taylor pass), ``func.derivatives``, and six nested
    ``autograd.grad(create_graph=True)``; PyTorch's nested ``torch.autograd.grad``.
T2  the Laplacian of a 3-layer tanh MLP ``R^64 -> R`` (width 128, weights from a seed) at
    256 points: ``vmap(laplacian(f))`` (the Forward Laplacian, one pass) against
    ``vmap(hessian(f))`` and its trace in ndgrad (target: at most 0.3x), and against
    ``torch.func.vmap(torch.func.hessian(f))`` and its trace (target: faster), with the
    same Forward Laplacian written by hand in NumPy as the floor of the method. Then the peak
    memory (tracemalloc) of one call of each ndgrad route at d = 32 and d = 64: the Forward
    Laplacian holds O(d) numbers per intermediate value and point (a gradient batch), no
    d x d block.
"""

from __future__ import annotations

import argparse
import os
import sys
import tracemalloc

import numpy as np

import ndgrad
from ndgrad import func

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_transforms import compare  # noqa: E402


def _torch():
    try:
        import torch
    except ImportError:
        return None
    torch.set_num_threads(1)
    return torch


def _as_np(r):
    return r.detach().cpu().numpy() if hasattr(r, "detach") else np.asarray(r)


# ----------------------------------------------------------------------------- T1
ORDER = 6


def tanh_derivative_poly(n):
    """Coefficients (lowest first) of P_n with d^n/dx^n tanh(x) = P_n(tanh(x)):
    P_0 = t and P_{k+1} = P_k'(t) (1 - t^2)."""
    P = np.polynomial.Polynomial([0.0, 1.0])
    one_minus = np.polynomial.Polynomial([1.0, 0.0, -1.0])
    for _ in range(n):
        P = P.deriv() * one_minus
    return P.coef


def t1_fns(x, torch):
    coef = tanh_derivative_poly(ORDER)
    xt = ndgrad.asarray(x)
    one = ndgrad.ones_like(xt)
    series = [one] + [ndgrad.zeros_like(xt) for _ in range(ORDER - 1)]

    def nested():
        v = xt.detach().requires_grad_()
        y = ndgrad.tanh(v)
        for _ in range(ORDER):
            (y,) = ndgrad.autograd.grad(y.sum(), v, create_graph=True)
        return y

    fns = {
        "numpy closed form": lambda: np.polynomial.polynomial.polyval(np.tanh(x), coef),
        # the peer benchmark's W8 reference: the same polynomial, derived on each call
        "numpy closed form, derived per call": lambda: np.polynomial.polynomial.polyval(
            np.tanh(x), tanh_derivative_poly(ORDER)),
        "ndgrad func.jet": lambda: func.jet(ndgrad.tanh, (xt,), (series,))[1][ORDER - 1],
        "ndgrad func.derivatives": lambda: func.derivatives(ndgrad.tanh, xt, ORDER)[ORDER],
        "ndgrad nested autograd.grad": nested,
    }
    if torch is not None:
        tx = torch.tensor(x)

        def torch_nested():
            v = tx.detach().requires_grad_()
            y = torch.tanh(v)
            for _ in range(ORDER):
                (y,) = torch.autograd.grad(y.sum(), v, create_graph=True)
            return y
        fns["torch nested autograd.grad"] = torch_nested
    return fns


# ----------------------------------------------------------------------------- T2
def mlp_weights(d, width=128, seed=0):
    rng = np.random.default_rng(seed)
    shapes = [(width, d), (width, width), (width, width)]
    Ws = [rng.standard_normal(s) / np.sqrt(s[1]) for s in shapes]
    bs = [0.1 * rng.standard_normal(width) for _ in shapes]
    w_out = rng.standard_normal(width) / np.sqrt(width)
    return Ws, bs, w_out


def make_mlp(tanh, Ws, bs, w_out):
    def f(x):
        a = x
        for W, b in zip(Ws, bs):
            a = tanh(W @ a + b)
        return w_out @ a
    return f


def numpy_forward_laplacian(weights):
    """The Forward Laplacian of the MLP written by hand in NumPy for a batch of points
    (the floor for the method here): per layer the gradient batch ``J`` (points, d, width),
    the Laplacian ``L``, ``S = sum_d J_d^2`` by einsum, and tanh's f' = 1 - a^2,
    f'' = -2 a f'. The first layer's ``J`` is ``W1^T`` for every point; the output layer
    needs no ``J``."""
    Ws, bs, w_out = weights

    def tanh_layer(z, Jz, L):
        """tanh's values, gradient batch and Laplacian from its input's."""
        a = np.tanh(z)
        f1 = 1.0 - a * a
        S = np.einsum("...dh,...dh->...h", Jz, Jz)
        La = -2.0 * a * f1 * S if L is None else f1 * L - 2.0 * a * f1 * S
        return a, f1, La

    def lap(X):
        Jz = Ws[0].T  # the first layer's input gradient batch, the same at every point
        a, f1, La = tanh_layer(X @ Ws[0].T + bs[0], Jz, None)
        for W, b in zip(Ws[1:], bs[1:]):
            Jz = (f1[:, None, :] * Jz) @ W.T
            a, f1, La = tanh_layer(a @ W.T + b, Jz, La @ W.T)
        return La @ w_out
    return lap


def t2_ndgrad(weights):
    f = make_mlp(ndgrad.tanh, *[[ndgrad.asarray(w) for w in ws] if isinstance(ws, list)
                                else ndgrad.asarray(ws) for ws in weights])
    forward_laplacian = func.vmap(func.laplacian(f))
    batched_hessian = func.vmap(func.hessian(f))
    return {
        "ndgrad vmap(laplacian(f))": forward_laplacian,
        "ndgrad vmap(hessian(f)) + trace": lambda p: ndgrad.trace(
            batched_hessian(p), axis1=-2, axis2=-1),
    }


def t2_torch(weights, torch):  # pragma: no cover - optional peer
    f = make_mlp(torch.tanh, *[[torch.tensor(w) for w in ws] if isinstance(ws, list)
                               else torch.tensor(ws) for ws in weights])
    batched = torch.func.vmap(torch.func.hessian(f))
    return {"torch.func vmap(hessian(f)) + trace":
            lambda p: batched(p).diagonal(dim1=-2, dim2=-1).sum(-1)}


def peak_mib(fn, arg):
    tracemalloc.start()
    try:
        fn(arg)
        return tracemalloc.get_traced_memory()[1] / 2 ** 20
    finally:
        tracemalloc.stop()


def run_t1(rounds, torch):
    x = np.linspace(-2.0, 2.0, 50)
    fns = t1_fns(x, torch)
    expected = fns["numpy closed form"]()
    for name, fn in fns.items():
        np.testing.assert_allclose(_as_np(fn()), expected, rtol=1e-9, atol=1e-9,
                                   err_msg=name)
    med = compare({k: (lambda f=f: f()) for k, f in fns.items()}, (), rounds)
    base = med["numpy closed form"]
    print(f"\nT1 6th derivative of tanh at 50 points; NumPy closed form {base * 1e6:.1f} us")
    for name in fns:
        if name != "numpy closed form":
            print(f"  {name:38s} {med[name] * 1e3:9.3f} ms {med[name] / base:9.1f}x NumPy")
    jet_t = med["ndgrad func.jet"]
    print(f"  jet / the closed form derived per call (the peer benchmark's W8 reference): "
          f"{jet_t / med['numpy closed form, derived per call']:.2f}x")
    print(f"  nested autograd.grad / jet: {med['ndgrad nested autograd.grad'] / jet_t:.1f}x")
    if "torch nested autograd.grad" in med:
        print(f"  torch nested / ndgrad jet:  {med['torch nested autograd.grad'] / jet_t:.1f}x")


def run_t2(rounds, torch, d=64, points=256):
    weights = mlp_weights(d)
    pts = np.random.default_rng(1).standard_normal((points, d))
    fns = {"numpy hand-written Forward Laplacian": numpy_forward_laplacian(weights)}
    fns.update({k: (lambda p, f=f: f(ndgrad.asarray(p)))
                for k, f in t2_ndgrad(weights).items()})
    if torch is not None:
        fns.update({k: (lambda p, f=f: f(torch.tensor(p)))
                    for k, f in t2_torch(weights, torch).items()})
    expected = _as_np(fns["ndgrad vmap(hessian(f)) + trace"](pts))
    for name, fn in fns.items():
        np.testing.assert_allclose(_as_np(fn(pts)), expected, rtol=1e-10, atol=1e-12,
                                   err_msg=name)
    med = compare(fns, (pts,), rounds, budget=0.3)
    fl = med["ndgrad vmap(laplacian(f))"]
    print(f"\nT2 Laplacian of a tanh MLP R^{d} -> R (width 128, 3 layers) at {points} points")
    for name in fns:
        print(f"  {name:38s} {med[name] * 1e3:9.2f} ms")
    hand = med["numpy hand-written Forward Laplacian"]
    print(f"  Forward Laplacian / the same method by hand in NumPy: {fl / hand:.2f}x")
    print(f"  (NumPy by hand / ndgrad vmap(hessian) + trace: "
          f"{hand / med['ndgrad vmap(hessian(f)) + trace']:.2f}x)")
    print(f"  Forward Laplacian / ndgrad vmap(hessian) + trace: "
          f"{fl / med['ndgrad vmap(hessian(f)) + trace']:.2f}x (target <= 0.3x)")
    if torch is not None:
        print(f"  Forward Laplacian / torch.func vmap(hessian) + trace: "
              f"{fl / med['torch.func vmap(hessian(f)) + trace']:.2f}x (target < 1x)")
    print("  peak traced memory of one call (MiB):")
    for dd in (d // 2, d):
        routes = t2_ndgrad(mlp_weights(dd))
        p = ndgrad.asarray(np.random.default_rng(1).standard_normal((points, dd)))
        mem = {k: peak_mib(f, p) for k, f in routes.items()}
        print(f"    d = {dd:3d}: " + ", ".join(f"{k} {v:.1f}" for k, v in mem.items()))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--no-torch", action="store_true", help="do not time PyTorch")
    opts = p.parse_args(argv)
    torch = None if opts.no_torch else _torch()
    peer = f", PyTorch {torch.__version__} (1 thread)" if torch is not None else \
        " (PyTorch not importable: no peer rows)"
    print(f"ndgrad {ndgrad.__version__}, NumPy {np.__version__}{peer}; median of "
          f"{opts.rounds} rounds")
    run_t1(opts.rounds, torch)
    run_t2(opts.rounds, torch)


if __name__ == "__main__":
    main()
