"""A short tour of ndgrad: gradients, a second derivative, Jacobians, per-example gradients,
linear algebra and special functions.

Every result is checked against its closed form; the script exits non-zero if one disagrees.

Run it with::

    pip install -e . && python examples/quickstart.py
"""

from __future__ import annotations

import numpy as np

import ndgrad
from ndgrad import autograd, checks, func


def check(name, got, expected, rtol=1e-10, atol=1e-12):
    """Print ``got`` next to the closed form and fail loudly if they differ."""
    got = np.asarray(got)
    err = float(np.max(np.abs(got - expected))) if got.size else 0.0
    ok = np.allclose(got, expected, rtol=rtol, atol=atol)
    print(f"  {name:<28} max |error| = {err:.1e}  {'ok' if ok else 'MISMATCH'}")
    assert ok, f"{name}: ndgrad gave\n{got}\nbut the closed form is\n{expected}"


def main():
    np.set_printoptions(precision=4, suppress=True)
    xs = np.array([-1.7, -0.6, 0.2, 0.9, 1.4])

    # (a) The gradient of a scalar function of a vector, with .backward().
    #     f(x) = sum(sin(x) * x^2),  df/dx_i = cos(x_i) x_i^2 + 2 x_i sin(x_i)
    print("(a) gradient of f(x) = sum(sin(x) * x**2)")
    x = ndgrad.tensor(xs, requires_grad=True)
    f = ndgrad.sum(ndgrad.sin(x) * x**2)
    f.backward()
    print(f"  x          = {xs}\n  f(x)       = {f.item():.6f}\n  df/dx      = {x.grad.numpy()}")
    check("f(x)", f.item(), np.sum(np.sin(xs) * xs**2))
    check("df/dx", x.grad.numpy(), np.cos(xs) * xs**2 + 2 * xs * np.sin(xs))

    # (b) A second derivative: differentiate the gradient again. create_graph=True records
    #     the backward pass itself, so its result can be differentiated.
    #     g(x) = x exp(-x^2/2),  g'(x) = (1 - x^2) exp(-x^2/2),  g''(x) = (x^3 - 3x) exp(-x^2/2)
    print("(b) second derivative of g(x) = x * exp(-x**2 / 2)")
    x = ndgrad.tensor(xs, requires_grad=True)
    g = x * ndgrad.exp(-(x**2) / 2)
    # g acts elementwise, so the gradient of sum(g) is g' at every point (and likewise g'').
    (dg,) = autograd.grad(g.sum(), x, create_graph=True)
    (d2g,) = autograd.grad(dg.sum(), x)
    gauss = np.exp(-xs**2 / 2)
    print(f"  g'(x)      = {dg.detach().numpy()}\n  g''(x)     = {d2g.numpy()}")
    check("g'(x)", dg.detach().numpy(), (1 - xs**2) * gauss)
    check("g''(x)", d2g.numpy(), (xs**3 - 3 * xs) * gauss)

    # (c) A Jacobian, one row per backward pass. retain_graph=True keeps the graph alive
    #     for the next row.  h(x) = A @ tanh(x),  dh/dx = A * (1 - tanh(x)^2)  (column scaling)
    print("(c) Jacobian of h(x) = A @ tanh(x), row by row")
    A_np = np.array([[1.0, -2.0, 0.5], [0.0, 3.0, 1.0]])
    x_np = np.array([0.3, -0.7, 1.1])
    A = ndgrad.tensor(A_np)
    x = ndgrad.tensor(x_np, requires_grad=True)
    h = A @ ndgrad.tanh(x)
    rows = [autograd.grad(h[i], x, retain_graph=True)[0].numpy() for i in range(h.shape[0])]
    J = np.stack(rows)
    print(f"  J =\n{J}")
    check("Jacobian", J, A_np * (1 - np.tanh(x_np) ** 2))

    # (d) The same Jacobian in one batched backward pass (ndgrad.func.jacrev), and its
    #     Hessian-free cousin: per-example gradients of a least-squares loss with vmap(grad).
    #     loss(w; x, y) = (x . w - y)^2,  d loss / dw = 2 (x . w - y) x
    print("(d) jacrev, and per-example gradients with vmap(grad(loss))")
    J2 = func.jacrev(lambda v: A @ ndgrad.tanh(v))(ndgrad.tensor(x_np))
    check("jacrev", J2.numpy(), A_np * (1 - np.tanh(x_np) ** 2))
    rng = np.random.default_rng(0)
    X_np, y_np, w_np = rng.standard_normal((4, 3)), rng.standard_normal(4), rng.standard_normal(3)

    def loss(w, x, y):
        return (x @ w - y) ** 2
    per_example = func.vmap(func.grad(loss), in_dims=(None, 0, 0))(
        ndgrad.tensor(w_np), ndgrad.tensor(X_np), ndgrad.tensor(y_np))
    print(f"  per-example gradients =\n{per_example.numpy()}")
    check("per-example gradients", per_example.numpy(),
          2 * (X_np @ w_np - y_np)[:, None] * X_np)

    # (e) Scientific functions: d/dA log det A = A^-T (ndgrad.linalg, never forming det), and
    #     d/dx erf(x) = 2/sqrt(pi) exp(-x^2) (ndgrad.special); gradcheck confirms a third
    #     derivative against finite differences of the second.
    print("(e) linalg.logdet, special.erf, and gradcheck")
    M_np = np.array([[2.0, 0.5, 0.0], [0.5, 1.5, 0.3], [0.0, 0.3, 1.0]])
    M = ndgrad.tensor(M_np, requires_grad=True)
    (dM,) = autograd.grad(ndgrad.linalg.logdet(M), M)
    print(f"  d logdet(M) / dM =\n{dM.numpy()}")
    check("d logdet / dM", dM.numpy(), np.linalg.inv(M_np).T)
    xs = ndgrad.tensor(np.array([-1.0, 0.2, 1.5]), requires_grad=True)
    (derf,) = autograd.grad(ndgrad.special.erf(xs).sum(), xs)
    check("d erf / dx", derf.numpy(), 2 / np.sqrt(np.pi) * np.exp(-xs.detach().numpy() ** 2))
    ok = checks.gradgradcheck(lambda v: ndgrad.special.erf(v) * ndgrad.sin(v), (xs,))
    print(f"  gradgradcheck(erf(x) * sin(x)) = {ok}")
    if not ok:
        raise SystemExit("gradgradcheck failed")

    print("All results match their closed forms.")


if __name__ == "__main__":
    main()
