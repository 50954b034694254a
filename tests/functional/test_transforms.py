"""The composable transforms of ndgrad.func: grad, grad_and_value, vjp, jvp, linearize,
jacrev, jacfwd, hessian, and their compositions with each other and with vmap.

Every numerical check is against an independent reference computed with NumPy: a closed
form, or central finite differences of a NumPy version of the function. Agreement between
two transforms is only ever checked in addition to that. The contract is torch.func's (and
JAX's) as documented; torch and JAX are never imported.

Some ops have no vmap batching rule yet and fall back to a per-element loop with a
UserWarning; those results are correct and the warning is not an error here.
"""

from __future__ import annotations

import warnings
from itertools import permutations
from math import factorial

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import ndgrad as nd
import ndgrad.forward_ad as fwAD
from ndgrad.autograd import grad as autograd_grad
from ndgrad.func import (biharmonic, derivatives, grad, grad_and_value, hessian, hessian_diag,
                         hessian_sparsity, jacfwd, jacobian_sparsity, jacrev, jet, jvp, laplacian,
                         linearize, vjp, vmap)
from ndgrad.core.backend import NUMPY
from ndgrad.core.ops import REGISTRY
from registry_harness import FLOAT, cases, draw, outs, public_call, view_outputs
from support import Cube, close, fd_gradient, fd_hessian, fd_jacobian, random_like, val

RNG = np.random.default_rng(20240611)
N = 4
A = RNG.normal(size=(N, N))
W = RNG.normal(size=(3, N))
X = RNG.normal(size=N)
V = RNG.normal(size=N)


# --------------------------------------------------------------------------- helpers
def T(a, requires_grad=False):
    """A float64 (or complex128) tensor from ``a``."""
    a = np.asarray(a)
    a = a.astype(np.complex128 if np.iscomplexobj(a) else np.float64)
    return nd.tensor(a, requires_grad=requires_grad)


def close_fd(a, b):
    """Comparison with a finite-difference reference (truncation error ~1e-10)."""
    close(a, b, rtol=1e-6, atol=1e-7)


def no_graph(t):
    return isinstance(t, nd.Tensor) and not t.requires_grad and t.grad_fn is None


def active_levels():
    """How many dual levels are active (public API only: a new level's number)."""
    level = fwAD.enter_dual_level()
    fwAD.exit_dual_level(level=level)
    return level


@pytest.fixture(autouse=True)
def _fresh_rng_and_no_level_left():
    """Each test draws from the same seeded generator, whichever tests run before it; no
    test leaves a dual level active."""
    global RNG
    RNG = np.random.default_rng(7)
    yield
    assert active_levels() == 0, "a transform left a dual level active"


# --------------------------------------------------------------------------- functions
def scalar_fn(x):
    """sum(x^4)/4 + x.A.x/2 + sum(sin x)."""
    return (x ** 4).sum() / 4 + 0.5 * (x @ T(A) @ x) + nd.sin(x).sum()


def scalar_fn_np(x):
    return (x ** 4).sum() / 4 + 0.5 * (x @ A @ x) + np.sin(x).sum()


def scalar_fn_grad(x):
    return x ** 3 + 0.5 * (A + A.T) @ x + np.cos(x)


def scalar_fn_hess(x):
    return np.diag(3 * x ** 2 - np.sin(x)) + (A + A.T) / 2


def tanh_layer(x):
    return nd.tanh(T(W) @ x)


def tanh_layer_jac(x):
    """d tanh(W x)/dx = (1 - y^2)[:, None] * W."""
    y = np.tanh(W @ x)
    return (1 - y ** 2)[:, None] * W


# =========================================================================== grad
def test_grad_matches_closed_form_and_finite_differences():
    g = grad(scalar_fn)(T(X))
    close(g, scalar_fn_grad(X))
    close_fd(g, fd_gradient(scalar_fn_np, X))
    assert g.shape == (N,) and g.dtype == nd.float64


def test_grad_of_a_0d_input():
    g = grad(lambda x: x ** 3 + nd.sin(x))(T(0.7))
    assert g.shape == ()
    close(g, 3 * 0.7 ** 2 + np.cos(0.7))


def test_grad_argnums_int_negative_and_tuple():
    x, y, z = RNG.normal(size=3), RNG.normal(size=3), RNG.normal(size=2)

    def f(x, y, z):
        return (x * y ** 2).sum() + nd.exp(z).sum() * x[0]

    gx = y ** 2 + np.array([np.exp(z).sum(), 0, 0])
    gy = 2 * x * y
    gz = np.exp(z) * x[0]
    args = (T(x), T(y), T(z))
    close(grad(f)(*args), gx)
    close(grad(f, argnums=1)(*args), gy)
    close(grad(f, argnums=-1)(*args), gz)
    close(grad(f, argnums=-3)(*args), gx)
    g = grad(f, argnums=(0, 2))(*args)
    assert isinstance(g, tuple) and len(g) == 2
    close(g[0], gx)
    close(g[1], gz)
    g = grad(f, argnums=(2, -2))(*args)        # the order of argnums, not of the arguments
    close(g[0], gz)
    close(g[1], gy)
    g = grad(f, argnums=(1,))(*args)           # a 1-tuple gives a 1-tuple
    assert isinstance(g, tuple) and len(g) == 1
    close(g[0], gy)


def test_grad_non_tensor_arguments_pass_through():
    def f(x, scale, name):
        assert name == "label"
        return scale * (x ** 2).sum()

    close(grad(f)(T(X), 3.0, "label"), 6 * X)
    # keyword arguments are not differentiated, but are passed through
    close(grad(lambda x, *, k: k * (x ** 3).sum())(T(X), k=2.0), 6 * X ** 2)


def test_grad_pytree_inputs_keep_their_structure():
    a, b, c, d = RNG.normal(size=2), RNG.normal(size=3), RNG.normal(size=(2, 2)), \
        RNG.normal(size=())

    # tuple
    g = grad(lambda p: (p[0] ** 2).sum() * p[1].sum())((T(a), T(b)))
    assert isinstance(g, tuple) and len(g) == 2
    close(g[0], 2 * a * b.sum())
    close(g[1], np.full(3, (a ** 2).sum()))

    # list
    g = grad(lambda p: (nd.sin(p[0]) * p[1][:2]).sum())([T(a), T(b)])
    assert isinstance(g, list) and len(g) == 2
    close(g[0], np.cos(a) * b[:2])
    close(g[1], np.concatenate([np.sin(a), [0.0]]))

    # dict: same keys, in the same (insertion) order
    params = {"w": T(c), "b": T(a)}
    g = grad(lambda p: ((p["w"] @ p["b"]) ** 2).sum())(params)
    assert isinstance(g, dict) and list(g) == ["w", "b"]
    r = c @ a
    close(g["w"], 2 * r[:, None] * a[None, :])
    close(g["b"], c.T @ (2 * r))

    # nested
    tree = {"z": [T(a), (T(b), T(d))], "a": T(c)}

    def f(t):
        x, (y, s) = t["z"]
        return (x ** 3).sum() + s * y.sum() + nd.exp(t["a"]).sum()

    g = grad(f)(tree)
    assert list(g) == ["z", "a"] and isinstance(g["z"], list) and isinstance(g["z"][1], tuple)
    close(g["z"][0], 3 * a ** 2)
    close(g["z"][1][0], np.full(3, d))
    close(g["z"][1][1], b.sum())
    close(g["a"], np.exp(c))


def test_grad_pytree_with_argnums_tuple():
    a, b = RNG.normal(size=2), RNG.normal(size=2)

    def f(scale, pair, d):
        return scale * (pair[0] * pair[1]).sum() + (d["u"] ** 2).sum()

    gp, gd = grad(f, argnums=(1, 2))(2.0, (T(a), T(b)), {"u": T(b)})
    assert isinstance(gp, tuple) and isinstance(gd, dict)
    close(gp[0], 2 * b)
    close(gp[1], 2 * a)
    close(gd["u"], 2 * b)


def test_grad_has_aux():
    def f(x):
        y = nd.sin(x)
        return (y ** 2).sum(), {"y": y, "tag": "aux"}

    g, aux = grad(f, has_aux=True)(T(X))
    close(g, 2 * np.sin(X) * np.cos(X))
    assert aux["tag"] == "aux"
    close(aux["y"], np.sin(X))


def test_grad_has_aux_tensors_carry_no_graph():
    _, aux = grad(lambda x: ((x ** 2).sum(), x * 2), has_aux=True)(T(X))
    close(aux, 2 * X)
    assert no_graph(aux)


def test_grad_and_value():
    g, v = grad_and_value(scalar_fn)(T(X))
    close(g, scalar_fn_grad(X))
    close(v, scalar_fn_np(X))
    assert no_graph(g) and no_graph(v)

    g, (v, aux) = grad_and_value(lambda x: ((x ** 3).sum(), x.sum()), has_aux=True)(T(X))
    close(g, 3 * X ** 2)
    close(v, (X ** 3).sum())
    close(aux, X.sum())

    (ga, gb), v = grad_and_value(lambda a, b: (a * b).sum(), argnums=(0, 1))(T(X), T(V))
    close(ga, V)
    close(gb, X)
    close(v, X @ V)


def test_grad_of_a_function_that_ignores_its_input_is_zero():
    g = grad(lambda x, y: (y ** 2).sum())(T(X), T(V))
    close(g, np.zeros(N))
    g = grad(lambda x: T(3.0))(T(X))
    close(g, np.zeros(N))
    gx, gy = grad(lambda x, y: (x ** 2).sum(), argnums=(0, 1))(T(X), T(V))
    close(gx, 2 * X)
    close(gy, np.zeros(N))


@pytest.mark.parametrize("f, exc, match", [
    (lambda x: x ** 2, RuntimeError, "scalar Tensor, got one of shape \\[4\\]"),
    (lambda x: (x ** 2).sum(keepdims=True), RuntimeError, "scalar Tensor"),
    (lambda x: (x ** 2).sum() * (1 + 1j), RuntimeError, "complex"),
    (lambda x: 3.0, RuntimeError, "return a Tensor, got a float"),
    (lambda x: ((x ** 2).sum(), (x ** 3).sum()), RuntimeError, "return a Tensor, got a tuple"),
])
def test_grad_output_errors(f, exc, match):
    with pytest.raises(exc, match=match):
        grad(f)(T(X))
    with pytest.raises(exc, match=match):
        grad_and_value(f)(T(X))


def test_grad_has_aux_needs_a_pair():
    with pytest.raises(RuntimeError, match="must return a pair"):
        grad(lambda x: (x ** 2).sum(), has_aux=True)(T(X))


@pytest.mark.parametrize("argnums, exc, match", [
    (2, ValueError, "only 2 positional inputs"),
    (-3, ValueError, "only 2 positional inputs"),
    ((0, 5), ValueError, "only 2 positional inputs"),
    (1.0, TypeError, "argnums must be an int or a tuple of ints"),
    ([0], TypeError, "argnums must be an int or a tuple of ints"),
    (True, TypeError, "argnums must be an int or a tuple of ints"),
    ((0, "1"), TypeError, "must contain ints"),
    ((), ValueError, "non-empty"),
    ((0, 0), ValueError, "must not repeat"),
    ((1, -1), ValueError, "must not repeat"),
])
def test_argnums_errors(argnums, exc, match):
    def f(x, y):
        return (x * y).sum()

    for transform in (grad, grad_and_value, jacrev, jacfwd):
        with pytest.raises(exc, match=match):
            transform(f, argnums=argnums)(T(X), T(V))


def test_grad_input_errors():
    f = lambda x: (x ** 2).sum()  # noqa: E731
    with pytest.raises(RuntimeError, match="floating point or complex.*int64"):
        grad(f)(nd.tensor([1, 2, 3]))
    with pytest.raises(TypeError, match="to be a Tensor.*got a ndarray"):
        grad(f)(X)
    with pytest.raises(TypeError, match="got a float at leaf 1"):
        grad(lambda p: p[0].sum())((T(X), 1.0))


def test_grad_results_carry_no_graph_and_inputs_are_untouched():
    x = T(X)
    params = {"w": T(A), "b": T(V)}
    before = {k: val(v).copy() for k, v in params.items()}

    def loss(p, x):
        return (nd.tanh(p["w"] @ x + p["b"]) ** 2).sum()

    g, v = grad_and_value(loss)(params, x)
    assert all(no_graph(t) for t in g.values()) and no_graph(v)
    # the inputs: same objects, same values, no grad, no graph
    assert list(params) == ["w", "b"]
    for k, t in params.items():
        assert not t.requires_grad and t.grad is None and t.grad_fn is None
        np.testing.assert_array_equal(val(t), before[k])
    assert not x.requires_grad and x.grad is None
    # the result matches the closed form
    y = np.tanh(A @ X + V)
    dz = 2 * y * (1 - y ** 2)
    close(g["w"], np.outer(dz, X))
    close(g["b"], dz)


def test_grad_leaves_a_requires_grad_input_alone_but_differentiable():
    """An input that requires grad (outside the transform) gets no .grad from grad(f), and
    the result is differentiable with respect to it, as torch.func does."""
    x = T(X, requires_grad=True)
    g = grad(scalar_fn)(x)
    assert x.grad is None and x.grad_fn is None
    close(g, scalar_fn_grad(X))
    (h,) = autograd_grad(g.sum(), x)             # sum of the Hessian's rows
    close(h, scalar_fn_hess(X).sum(axis=0))


# =========================================================================== nesting
def test_third_derivative_by_nested_grad():
    f = lambda x: x ** 5 + nd.sin(x) * x  # noqa: E731
    for x0 in (0.3, -1.2, 2.0):
        x = T(x0)
        d1 = grad(f)(x)
        d2 = grad(grad(f))(x)
        d3 = grad(grad(grad(f)))(x)
        close(d1, 5 * x0 ** 4 + np.cos(x0) * x0 + np.sin(x0))
        close(d2, 20 * x0 ** 3 - np.sin(x0) * x0 + 2 * np.cos(x0))
        close(d3, 60 * x0 ** 2 - np.cos(x0) * x0 - 3 * np.sin(x0))
        assert no_graph(d1) and no_graph(d2) and no_graph(d3)


def test_nested_grad_with_vector_input():
    """grad of a scalar function of grad: d/dx sum(grad f)^2 = 2 H grad f."""
    def outer(x):
        return (grad(scalar_fn)(x) ** 2).sum()

    g = grad(outer)(T(X))
    close(g, 2 * scalar_fn_hess(X) @ scalar_fn_grad(X))
    close_fd(g, fd_gradient(lambda x: (scalar_fn_grad(x) ** 2).sum(), X))


def test_no_perturbation_confusion_reverse():
    """d/dx [x * d/dy (x * y)] = d/dx x^2 = 2x (a confused implementation gets x or 1)."""
    three = T(3.0)
    for x0 in (0.5, 2.0, -1.5):
        f = lambda x: x * grad(lambda y: x * y)(three)  # noqa: E731
        close(f(T(x0)), x0 ** 2)
        close(grad(f)(T(x0)), 2 * x0)


def test_no_perturbation_confusion_forward():
    three, one = T(3.0), T(1.0)
    for x0 in (0.5, 2.0, -1.5):
        def f(x):
            return x * jvp(lambda y: x * y, (three,), (one,))[1]

        out, tangent = jvp(f, (T(x0),), (one,))
        close(out, x0 ** 2)
        close(tangent, 2 * x0)


def test_no_perturbation_confusion_mixed_modes():
    three, one = T(3.0), T(1.0)
    for x0 in (0.5, -1.5):
        # reverse outside, forward inside
        f = lambda x: x * jvp(lambda y: x * y, (three,), (one,))[1]  # noqa: E731
        close(grad(f)(T(x0)), 2 * x0)
        # forward outside, reverse inside
        g = lambda x: x * grad(lambda y: x * y)(three)  # noqa: E731
        close(jvp(g, (T(x0),), (one,))[1], 2 * x0)
        # d/dx [x * d/dy (x + y)] = 1
        h = lambda x: x * grad(lambda y: x + y)(three)  # noqa: E731
        close(grad(h)(T(x0)), 1.0)


@pytest.mark.parametrize("compose", [
    lambda f: jacfwd(jacrev(f)),
    lambda f: jacrev(jacrev(f)),
    lambda f: jacrev(jacfwd(f)),
    lambda f: jacfwd(jacfwd(f)),
    lambda f: hessian(f),
    lambda f: jacfwd(grad(f)),
    lambda f: jacrev(grad(f)),
], ids=["fwd(rev)", "rev(rev)", "rev(fwd)", "fwd(fwd)", "hessian", "fwd(grad)", "rev(grad)"])
def test_hessian_by_every_composition(compose):
    H = compose(scalar_fn)(T(X))
    assert H.shape == (N, N)
    close(H, scalar_fn_hess(X))
    close_fd(H, fd_jacobian(scalar_fn_grad, X))
    assert no_graph(H)


def test_hessian_argnums_and_matrix_input():
    """f(M, v) = sum(sin(M) v): the Hessian in M is diag-shaped (4-d), in v it is 0."""
    M, v = RNG.normal(size=(2, 3)), RNG.normal(size=3)

    def f(M, v):
        return (nd.sin(M) @ v).sum()

    HM = hessian(f)(T(M), T(v))
    assert HM.shape == (2, 3, 2, 3)
    ref = np.zeros((2, 3, 2, 3))
    for i in range(2):
        for j in range(3):
            ref[i, j, i, j] = -np.sin(M[i, j]) * v[j]
    close(HM, ref)
    Hv = hessian(f, argnums=1)(T(M), T(v))
    close(Hv, np.zeros((3, 3)))
    HMv = jacfwd(jacrev(f, argnums=0), argnums=1)(T(M), T(v))   # mixed second derivative
    assert HMv.shape == (2, 3, 3)
    ref = np.zeros((2, 3, 3))
    for i in range(2):
        for j in range(3):
            ref[i, j, j] = np.cos(M[i, j])
    close(HMv, ref)


def test_third_derivative_tensors():
    """f = sum(x^4)/4 + sum(sin x): d3f/dx_i dx_j dx_k = delta_ijk (6 x_i - cos x_i)."""
    f = lambda x: (x ** 4).sum() / 4 + nd.sin(x).sum()  # noqa: E731
    ref = np.zeros((N, N, N))
    for i in range(N):
        ref[i, i, i] = 6 * X[i] - np.cos(X[i])
    for t in (jacrev(jacrev(jacrev(f))), jacfwd(jacfwd(jacfwd(f))), jacfwd(hessian(f)),
              jacrev(hessian(f)), jacrev(jacfwd(grad(f)))):
        D3 = t(T(X))
        assert D3.shape == (N, N, N)
        close(D3, ref)
        assert no_graph(D3)


def test_grad_ignores_an_outer_no_grad_and_respects_an_inner_one():
    """As torch.func: grad is a function transform, an enclosing no_grad does not change
    its result; a no_grad inside f cuts what it computes."""
    with nd.no_grad():
        close(grad(scalar_fn)(T(X)), scalar_fn_grad(X))
        close(jacrev(tanh_layer)(T(X)), tanh_layer_jac(X))
        close(grad(grad(lambda x: x ** 4))(T(1.5)), 12 * 1.5 ** 2)

    def f(x):
        with nd.no_grad():
            c = x * 1.0          # a constant for the gradient
        return (x * c).sum()

    close(grad(f)(T(X)), X)      # not 2x


def test_grad_under_an_outer_no_grad_records_no_outer_graph():
    x = T(X, requires_grad=True)
    with nd.no_grad():
        out, _ = vjp(tanh_layer, x)
        assert no_graph(out) and no_graph(jacrev(tanh_layer)(x))
        g = grad(scalar_fn)(x)
    close(g, scalar_fn_grad(X))
    assert no_graph(g)


def inplace_fn(x):
    """3 x0^3 + x1^3 + ... written with in-place ops on an intermediate."""
    y = x * 1.0
    y.mul_(x)                # y = x^2
    y[0] = y[0] * 3          # y0 = 3 x0^2
    return (y * x).sum()


def inplace_fn_grad(x):
    return np.concatenate([[9 * x[0] ** 2], 3 * x[1:] ** 2])


def inplace_fn_hess(x):
    return np.diag(np.concatenate([[18 * x[0]], 6 * x[1:]]))


def test_transforms_of_a_function_with_inplace_ops():
    close(grad(inplace_fn)(T(X)), inplace_fn_grad(X))
    close(vmap(grad(inplace_fn))(T(XS)), np.stack([inplace_fn_grad(x) for x in XS]))
    close(jacrev(grad(inplace_fn))(T(X)), inplace_fn_hess(X))       # reverse over reverse
    close(jvp(inplace_fn, (T(X),), (T(V),))[1], inplace_fn_grad(X) @ V)   # forward
    close(jacfwd(inplace_fn)(T(X)), inplace_fn_grad(X))


@pytest.mark.parametrize("compose", [
    lambda f: jacfwd(grad(f)),
    lambda f: hessian(f),
    lambda f: (lambda x: jvp(grad(f), (x,), (T(np.eye(N)[1]),))[1]),
], ids=["jacfwd(grad)", "hessian", "jvp(grad)"])
def test_forward_over_reverse_through_inplace_ops(compose):
    out = compose(inplace_fn)(T(X))
    ref = inplace_fn_hess(X)
    close(out, ref if out.ndim == 2 else ref[1])


# The reported forward-over-reverse cases: ``func.hessian`` (jacfwd over jacrev) read a base's
# tangent through vmap's knowledge of an identity batch after a write through a view had
# changed it (Note [Identity batches] in functional/vmap.py): the diagonal came out
# [2, 1.56, 5.76] and all zeros.
def _mul_through_view(v):
    y = v * 1.0
    w = y[1:]
    w.mul_(v[1:])
    return (y ** 2).sum()          # v0^2 + v1^4 + v2^4


def _add_through_view(v):
    y = v * 0.0
    w = y[:2]
    w += 3 * v[:2]
    return (y ** 2).sum()          # 9 v0^2 + 9 v1^2


P3 = np.array([0.4, -1.3, 0.8])


@pytest.mark.parametrize("f, hess", [
    (_mul_through_view, lambda v: np.diag([2.0, 12 * v[1] ** 2, 12 * v[2] ** 2])),
    (_add_through_view, lambda v: np.diag([18.0, 18.0, 0.0])),
], ids=["mul_", "+="])
def test_hessian_after_an_inplace_change_through_a_view(f, hess):
    H = hess(P3)
    close(hessian(f)(T(P3)), H, rtol=1e-12, atol=1e-12)
    close(jacfwd(jacrev(f))(T(P3)), H, rtol=1e-12, atol=1e-12)
    close(jacfwd(grad(f))(T(P3)), H, rtol=1e-12, atol=1e-12)
    close(laplacian(f, method="hessian")(T(P3)), np.trace(H), rtol=1e-12)
    close(laplacian(f)(T(P3)), np.trace(H), rtol=1e-12)


# Fourth order through in-place changes: hessian(hessian(f)) raised that the inner
# Jacobian's basis was a tensor captured from outside (the old tangent of an in-place change
# could not hold the new one, a value of the outer Hessian's grad level: Note [Tangents of
# views] in forward_ad), and so did biharmonic(method="hessian").
def _x_sin_x(x):
    y = x.clone()
    y.sin_()
    y.mul_(x)
    return y.sum()                 # sum x_i sin x_i


def _cross_through_view(x):
    y = x * 1.0
    w = y[1:]
    w.mul_(x[:2])                  # y = [x0, x0 x1, x1 x2]
    return (y ** 2).sum()          # x0^2 + x0^2 x1^2 + x1^2 x2^2


def test_hessian_of_hessian_through_inplace_changes():
    x = P3
    d3 = -3 * np.sin(x) - x * np.cos(x)        # the third derivative of x sin x
    d4 = -4 * np.cos(x) + x * np.sin(x)        # its fourth
    # the closed forms, checked by central differences of the one below each
    h = 1e-5
    close((-3 * np.sin(x + h) - (x + h) * np.cos(x + h)
           - (-3 * np.sin(x - h) - (x - h) * np.cos(x - h))) / (2 * h), d4, rtol=1e-8)
    close((2 * np.cos(x + h) - (x + h) * np.sin(x + h)
           - 2 * np.cos(x - h) + (x - h) * np.sin(x - h)) / (2 * h), d3, rtol=1e-8)
    T3 = np.zeros((3, 3, 3))
    T4 = np.zeros((3, 3, 3, 3))
    for i in range(3):
        T3[i, i, i] = d3[i]
        T4[i, i, i, i] = d4[i]
    close(jacfwd(hessian(_x_sin_x))(T(x)), T3, rtol=1e-10, atol=1e-12)
    close(hessian(hessian(_x_sin_x))(T(x)), T4, rtol=1e-10, atol=1e-12)
    close(biharmonic(_x_sin_x, method="hessian")(T(x)), d4.sum(), rtol=1e-10)
    close(biharmonic(_x_sin_x)(T(x)), d4.sum(), rtol=1e-10)
    # a cross term through a view: d^4 (x0^2 x1^2) / dx0^2 dx1^2 = 4, in every order
    C = np.zeros((3, 3, 3, 3))
    for a, b in ((0, 1), (1, 2)):
        for idx in set(permutations((a, a, b, b))):
            C[idx] = 4.0
    close(hessian(hessian(_cross_through_view))(T(x)), C, rtol=1e-10, atol=1e-10)
    close(biharmonic(_cross_through_view, method="hessian")(T(x)), 16.0, rtol=1e-10)
    close(biharmonic(_cross_through_view)(T(x)), 16.0, rtol=1e-10)


def test_jacfwd_of_a_function_that_changes_its_input_in_place():
    # jacfwd's basis is vmap's cached identity: the tangent of its input is the caller's
    # memory, so an in-place change writes a copy (it raised 'assignment destination is
    # read-only' on the CPU; a GPU's cached identity cannot be made read-only)
    def f(v):
        v[:2].mul_(3.0)
        v.mul_(v * 1.0)            # [9 v0^2, 9 v1^2, v2^2]
        return v * 1.0
    close(jacfwd(f)(T(P3)), np.diag([18 * P3[0], 18 * P3[1], 2 * P3[2]]), rtol=1e-12)
    close(hessian(lambda v: f(v.clone()).sum())(T(P3)), np.diag([18.0, 18.0, 2.0]),
          rtol=1e-12)
    close(jacfwd(lambda v: v * 2.0)(T(P3)), 2 * np.eye(3), rtol=0)   # the basis is intact
    # func.jvp: the caller's tangent is left alone, the output's tangent is right
    t = T([1.0, 2.0, 3.0])
    _, tangent = jvp(f, (T(P3),), (t,))
    close(tangent, [18 * P3[0], 36 * P3[1], 6 * P3[2]], rtol=1e-12)
    close(t, [1.0, 2.0, 3.0], rtol=0)


# Views and in-place under every transform: each pattern as ndgrad code (views taken before
# an in-place change of their base, in-place on a view then reading the base, chains of
# views, ``y[i] = v``) and its NumPy closed form, R^4 -> R^3. PyTorch rebases a view's
# history onto its base's (CopySlices); func.grad/vjp gave zero for a view returned after
# its base changed (regenerated after the level exited), and vmap(grad)/grad(vmap) lost the
# dependence (views of batched values were not linked; in-place on a batched value ran
# under no_grad below the vmap).
def _view_before(x):
    y = x.clone()
    y0 = y[:3]
    y.sin_()
    return y0


def _view_before_read(x):
    y = x * 1.0
    y0 = y[1:]
    y.mul_(x)
    return y0 * 2.0


def _inplace_view_read_base(x):
    y = x.clone()
    y[1:].exp_()
    return y[:3] * y[1:]


def _inplace_view_return_base(x):
    y = x.clone()
    v = y[:3]
    v.mul_(x[1:])
    return y[:3]


def _chain(x):
    y = x.clone()
    w = y[1:][:2].reshape(2, 1)
    y.tanh_()
    return nd.concatenate([w.reshape(2), x[:1]])


def _chain_inplace_leaf(x):
    y = x * 2.0
    v = y[1:]
    v[1:].sin_()
    return v + y[:3]


def _sibling(x):
    y = x.clone()
    a, b = y[:2], y[1:]
    a.mul_(x[2:])
    return b


def _setitem(x):
    y = x.clone()
    v = y[:3]
    y[0] = x[2] * 3.0
    y[1:3] = x[:2] ** 2
    return v * 1.0


def _setitem_view_return(x):
    y = x.clone()
    v = y[1:]
    y[1] = x[0] * x[3]
    return v


def _transpose_chain(x):
    y = x.reshape(2, 2) * 1.0
    t = y.T
    d = t[0]
    y.cos_()
    return nd.concatenate([d, t[1, :1]])


# (a product by 2.0 reads the base's tangent whole: in a Jacobian by forward mode, through
# vmap's knowledge of an identity batch, Note [Identity batches])
def _inplace_view_by_slice(x):
    y = x * 1.0
    w = y[1:]
    w.mul_(x[:3])
    return (y * 2.0)[1:]


def _add_through_view_of_scaled_zeros(x):
    y = x * 0.0
    w = y[:2]
    w += 3.0 * x[:2]
    return (y * y)[:3] + x[1:] ** 2


def _add_through_view_of_zeros_like(x):
    y = nd.zeros_like(x)
    w = y[:2]
    w += 3.0 * x[:2]
    return (y * y)[:3] + x[1:] ** 2


def _inplace_twice(x):
    y = x.clone()
    y.sin_()
    y.mul_(x)
    return (y * 1.0)[:3]


def _np_zeros_view_add(x):
    y = np.zeros(4)
    y[:2] += 3.0 * x[:2]
    return (y * y)[:3] + x[1:] ** 2


def _np_chain_inplace_leaf(x):
    z = 2 * x
    z[2:] = np.sin(z[2:])
    return z[1:] + z[:3]


def _np_sibling(x):
    z = x.copy()
    z[:2] *= x[2:]
    return z[1:]


VIEW_PATTERNS = {
    "view_before": (_view_before, lambda x: np.sin(x[:3])),
    "view_before_read": (_view_before_read, lambda x: 2 * x[1:] ** 2),
    "inplace_view_read_base": (_inplace_view_read_base, lambda x: (
        np.concatenate([x[:1], np.exp(x[1:])])[:3] * np.exp(x[1:]))),
    "inplace_view_return_base": (_inplace_view_return_base, lambda x: x[:3] * x[1:]),
    "chain": (_chain, lambda x: np.array([np.tanh(x[1]), np.tanh(x[2]), x[0]])),
    "chain_inplace_leaf": (_chain_inplace_leaf, _np_chain_inplace_leaf),
    "sibling": (_sibling, _np_sibling),
    "setitem": (_setitem, lambda x: np.array([3 * x[2], x[0] ** 2, x[1] ** 2])),
    "setitem_view_return": (_setitem_view_return, lambda x: np.array([x[0] * x[3], x[2], x[3]])),
    "transpose_chain": (_transpose_chain, lambda x: np.cos(x)[[0, 2, 1]]),
    "inplace_view_by_slice": (_inplace_view_by_slice, lambda x: 2.0 * x[1:] * x[:3]),
    "add_through_view_of_scaled_zeros": (_add_through_view_of_scaled_zeros,
                                         _np_zeros_view_add),
    "add_through_view_of_zeros_like": (_add_through_view_of_zeros_like, _np_zeros_view_add),
    "inplace_twice": (_inplace_twice, lambda x: (np.sin(x) * x)[:3]),
}
WV = RNG.normal(size=3)


def _stencil(k, m=4, h=0.02):
    """Points ``j h`` (``j = -m..m``) and weights that give the k-th derivative at 0 of any
    polynomial of degree <= 2m exactly (an error O(h^(2m+1-k)) for smooth functions)."""
    t = np.arange(-m, m + 1) * h
    i = np.arange(2 * m + 1)
    A = t[None, :] ** i[:, None] / np.array([factorial(n) for n in i])[:, None]
    return t, np.linalg.solve(A, (i == k).astype(float))


def _fd_path(fn, x, series, K):
    """``[fn(x), d/dt, ..., d^K/dt^K]`` at 0 of ``fn`` along ``x(t) = x + sum_k s_k t^k / k!``
    (NumPy ``fn``, central stencils): the reference of Taylor mode."""
    def at(t):
        return fn(x + sum(s * t ** k / factorial(k) for k, s in enumerate(series, 1)))
    out = [np.asarray(fn(x))]
    for k in range(1, K + 1):
        t, w = _stencil(k)
        out.append(sum(wj * at(tj) for tj, wj in zip(t, w)))
    return np.stack(out)


def _fd_laplacian(fn, x):
    """The Laplacian of each output of the NumPy ``fn`` at ``x`` (second derivatives along
    the basis directions, summed)."""
    eye = np.eye(x.size)
    return sum(_fd_path(fn, x, [e, 0 * e], 2)[2] for e in eye)


def _fd_grad_laplacian(fn, x):
    """The Jacobian of ``_fd_laplacian(fn, .)`` at ``x`` (a first-derivative stencil of it)."""
    t, w = _stencil(1)
    return np.stack([sum(wj * _fd_laplacian(fn, x + tj * e) for tj, wj in zip(t, w))
                     for e in np.eye(x.size)], axis=-1)


V2, V3 = RNG.normal(size=N), RNG.normal(size=N)
# directions of the fourth derivatives hessian(hessian) is checked along
DIRS4 = [V, V2, V3] + list(np.eye(N))


def _fd_d4(fn, x, u):
    """The fourth derivative of the NumPy ``fn`` at ``x`` along ``u`` (a stencil)."""
    return _fd_path(fn, x, [u, 0 * u, 0 * u, 0 * u], 4)[4]


def _fd_biharmonic(fn, x):
    """``sum_ij d^4 fn / dx_i^2 dx_j^2`` at ``x`` from fourth directional derivatives:
    ``T(a, a, b, b) = (D(a + b) + D(a - b) - 2 D(a) - 2 D(b)) / 12``."""
    eye = np.eye(x.size)
    d4 = [_fd_d4(fn, x, e) for e in eye]
    total = sum(d4)
    for i in range(x.size):
        for j in range(x.size):
            if i != j:
                total = total + (_fd_d4(fn, x, eye[i] + eye[j]) + _fd_d4(fn, x, eye[i] - eye[j])
                                 - 2 * d4[i] - 2 * d4[j]) / 12
    return total


def _fd_hessians(fn, x):
    """The Hessian of each output of the NumPy ``fn`` at ``x``: ``(m, n, n)``."""
    return np.stack([fd_hessian(lambda z, k=k: fn(z)[k], x) for k in range(fn(x).size)])


def _along4(HH):
    """A fourth-derivative tensor contracted four times with each of ``DIRS4``."""
    return T([np.einsum("ijkl,i,j,k,l->", val(HH), u, u, u, u) for u in DIRS4])


def _stacked(y, ys):
    return nd.stack([y] + list(ys))


class _Contains:
    """A reference for a sparsity pattern that may hold more entries: the result must hold
    every entry of ``mask``."""

    def __init__(self, mask):
        self.mask = mask


VIEW_TRANSFORMS = {
    # name: (run(f, scalar f), reference(J, H, value function), second order?)
    "grad": (lambda f, s: grad(s)(T(X)), lambda J, H, fn: WV @ J, False),
    "vjp": (lambda f, s: vjp(f, T(X))[1](T(WV))[0], lambda J, H, fn: WV @ J, False),
    "vjp_pytree": (lambda f, s: vjp(lambda x: {"a": f(x), "b": f(x)[1:]}, T(X))[1](
        {"a": T(WV), "b": T(WV[1:])})[0], lambda J, H, fn: WV @ J + WV[1:] @ J[1:], False),
    "jvp": (lambda f, s: jvp(f, (T(X),), (T(V),))[1], lambda J, H, fn: J @ V, False),
    "jacrev": (lambda f, s: jacrev(f)(T(X)), lambda J, H, fn: J, False),
    "jacfwd": (lambda f, s: jacfwd(f)(T(X)), lambda J, H, fn: J, False),
    "vmap": (lambda f, s: vmap(f)(T(np.stack([X, V]))),
             lambda J, H, fn: np.stack([fn(X), fn(V)]), False),
    "vmap(grad)": (lambda f, s: vmap(grad(s))(T(np.stack([X, X]))),
                   lambda J, H, fn: np.stack([WV @ J, WV @ J]), False),
    "vmap(jacrev)": (lambda f, s: vmap(jacrev(f))(T(np.stack([X, X]))),
                     lambda J, H, fn: np.stack([J, J]), False),
    "grad(vmap)": (lambda f, s: grad(lambda x: (vmap(f)(nd.stack([x, x])) * T(WV)).sum())(
        T(X)), lambda J, H, fn: 2 * WV @ J, False),
    "hessian": (lambda f, s: hessian(s)(T(X)), lambda J, H, fn: H, True),
    "jacrev(grad)": (lambda f, s: jacrev(grad(s))(T(X)), lambda J, H, fn: H, True),
    "grad(grad)": (lambda f, s: grad(lambda x: (grad(s)(x) * T(V)).sum())(T(X)),
                   lambda J, H, fn: H @ V, True),
    "vjp(vjp)": (lambda f, s: vjp(lambda x: vjp(f, x)[1](T(WV))[0], T(X))[1](T(V))[0],
                 lambda J, H, fn: H @ V, True),
    "jvp(grad)": (lambda f, s: jvp(grad(s), (T(X),), (T(V),))[1],
                  lambda J, H, fn: H @ V, True),
    # forward over forward, forward inside vmap, fourth order (the old tangent of an
    # in-place change could not hold the new one: vmap or the outer grad level refused it)
    "jacfwd(jacfwd)": (lambda f, s: jacfwd(jacfwd(f))(T(X)),
                       lambda J, H, fn: _fd_hessians(fn, X), True),
    "jvp(jvp)": (lambda f, s: jvp(lambda x: jvp(f, (x,), (T(V),))[1], (T(X),), (T(V2),))[1],
                 lambda J, H, fn: np.einsum("kij,i,j->k", _fd_hessians(fn, X), V, V2), True),
    "vmap(jacfwd)": (lambda f, s: vmap(jacfwd(f))(T(np.stack([X, V]))),
                     lambda J, H, fn: np.stack([J, fd_jacobian(fn, V)]), False),
    "hessian(hessian)": (lambda f, s: _along4(hessian(hessian(s))(T(X))),
                         lambda J, H, fn: np.array([_fd_d4(lambda x: WV @ fn(x), X, u)
                                                    for u in DIRS4]), True),
    # Taylor mode and its data levels (a view's series was stale after an in-place change
    # of its base, and a view without one did not update its base)
    "jet": (lambda f, s: _stacked(*jet(f, (T(X),), ([T(V), T(V2), T(V3)],))),
            lambda J, H, fn: _fd_path(fn, X, [V, V2, V3], 3), True),
    "derivatives": (lambda f, s: nd.stack(derivatives(f, T(X), 3, direction=T(V))),
                    lambda J, H, fn: _fd_path(fn, X, [V, 0 * V, 0 * V], 3), True),
    "laplacian": (lambda f, s: laplacian(f)(T(X)), lambda J, H, fn: _fd_laplacian(fn, X), True),
    "laplacian(hessian)": (lambda f, s: laplacian(f, method="hessian")(T(X)),
                           lambda J, H, fn: _fd_laplacian(fn, X), True),
    "hessian_diag": (lambda f, s: hessian_diag(s)(T(X)), lambda J, H, fn: np.diag(H), True),
    "vmap(laplacian)": (lambda f, s: vmap(laplacian(f))(T(np.stack([X, V]))),
                        lambda J, H, fn: np.stack([_fd_laplacian(fn, X),
                                                   _fd_laplacian(fn, V)]), True),
    "grad(laplacian)": (lambda f, s: grad(lambda x: (laplacian(f)(x) * T(WV)).sum())(T(X)),
                        lambda J, H, fn: WV @ _fd_grad_laplacian(fn, X), True),
    "biharmonic": (lambda f, s: biharmonic(f)(T(X)), lambda J, H, fn: _fd_biharmonic(fn, X),
                   True),
    "biharmonic(hessian)": (lambda f, s: biharmonic(f, method="hessian")(T(X)),
                            lambda J, H, fn: _fd_biharmonic(fn, X), True),
    "jacobian_sparsity": (lambda f, s: T(jacobian_sparsity(f, T(X)).toarray()),
                          lambda J, H, fn: J != 0, False),
    # (a Hessian pattern may hold more: pairs of every op, also one whose value is unused)
    "hessian_sparsity": (lambda f, s: T(hessian_sparsity(s, T(X)).toarray()),
                         lambda J, H, fn: _Contains(np.abs(H) > 1e-6), True),
}


@pytest.mark.parametrize("transform", list(VIEW_TRANSFORMS))
@pytest.mark.parametrize("pattern", list(VIEW_PATTERNS))
def test_views_and_inplace_under_every_transform(pattern, transform):
    f, fn = VIEW_PATTERNS[pattern]
    run, reference, second = VIEW_TRANSFORMS[transform]
    with nd.no_grad():  # the pattern computes its closed form
        close(f(T(X)), fn(X))
    J = fd_jacobian(fn, X)
    H = fd_hessian(lambda x: WV @ fn(x), X) if second else None
    out = run(f, lambda x: (f(x) * T(WV)).sum())
    ref = reference(J, H, fn)
    if isinstance(ref, _Contains):
        missing = np.argwhere(ref.mask & (val(out) == 0))
        assert missing.size == 0, f"the pattern misses the nonzeros at {missing.tolist()}"
    elif second:
        close(out, ref, rtol=1e-5, atol=1e-6)
    else:
        close_fd(out, ref)


# Every writable view op of the registry (each output that views its input), taken before
# its base is scaled in place by sum(x), and its base after the view is scaled so: the
# function is quadratic, so exact differences of NumPy's own views give its Jacobian and
# Hessians. Forward over reverse lost the change (vmap's identity batch), forward over
# forward and vmap(jacfwd) raised (the old tangent could not hold the new one).
WRITABLE_VIEWS = sorted(n for n, op in REGISTRY.items() if op.view and op.scatter is not None)
REAL_VIEW_CASES = [c for c in cases(WRITABLE_VIEWS)
                   if c.values[1] == FLOAT and c.values[0] != "imag"]  # (imag of a real: zeros)


def _scaled_through_a_view(op, k, extra, kwargs, write_view):
    def f(x):
        numpy = not isinstance(x, nd.Tensor)
        y = np.array(x) if numpy else x * 1.0
        view = outs(op.forward(NUMPY, y, *extra, **kwargs) if numpy
                    else public_call(op, [y], extra, kwargs))[k]
        (view if write_view else y).__imul__(x.sum())
        out = y if write_view else view
        return np.array(out) if numpy else out * 1.0
    return f


def _exact_jacobian(f, x):
    E = np.eye(x.size).reshape((x.size,) + x.shape)
    return np.moveaxis(np.stack([(f(x + e) - f(x - e)) / 2 for e in E]), 0, -1).reshape(
        np.shape(f(x)) + x.shape)


def _exact_hessian(f, x):
    E = np.eye(x.size).reshape((x.size,) + x.shape)
    f0 = f(x)
    H = np.stack([np.stack([f(x + a + b) - f(x + a) - f(x + b) + f0 for b in E], axis=-1)
                  for a in E], axis=-2)
    return H.reshape(np.shape(f0) + x.shape + x.shape)


@pytest.mark.parametrize("name, dtype", REAL_VIEW_CASES)
@settings(max_examples=3, deadline=None)
@given(data=st.data())
def test_every_view_op_follows_inplace_changes_under_forward_mode_transforms(name, dtype,
                                                                            data):
    op = REGISTRY[name]
    sample = draw(data, op, dtype)
    assume(isinstance(sample.args[0], np.ndarray) and 0 < sample.args[0].size <= 12)
    rng = np.random.default_rng(0)
    x = random_like(rng, sample.args[0])
    extra, kwargs = sample.args[1:], sample.kwargs
    views = view_outputs(op, x, extra, kwargs)
    assume(views)
    for k in views:
        for write_view in (False, True):
            f = _scaled_through_a_view(op, k, extra, kwargs, write_view)
            c = rng.normal(size=np.shape(f(x)))
            J, H = _exact_jacobian(f, x), _exact_hessian(f, x)
            Hs = np.tensordot(c, H, axes=c.ndim)     # the Hessian of sum(c f(x))
            v = rng.normal(size=x.shape)
            s = lambda z, f=f, c=c: (f(z) * T(c)).sum()  # noqa: E731
            what = f"{name} output {k}, {'through the view' if write_view else 'stale view'}"
            for got, ref, how in [
                    (jacfwd(f)(T(x)), J, "jacfwd"),
                    (hessian(s)(T(x)), Hs, "hessian"),
                    (jvp(grad(s), (T(x),), (T(v),))[1],
                     (Hs.reshape(x.size, x.size) @ v.reshape(-1)).reshape(x.shape), "jvp(grad)"),
                    (jacfwd(jacfwd(f))(T(x)), H, "jacfwd(jacfwd)"),
                    (vmap(jacfwd(f))(T(np.stack([v, x])))[1], J, "vmap(jacfwd)")]:
                np.testing.assert_allclose(val(got), ref, rtol=1e-9, atol=1e-9,
                                           err_msg=f"{how}: {what}")


def test_grad_of_a_view_taken_before_an_inplace_op_on_its_base():
    # PyTorch's TestGradTransform case: the view's history is rebased onto its base's
    def foo(x):
        y = x.clone()
        y0 = y[0]
        y.sin_()
        return y0
    x = T([0.5, 1.0, 2.0])
    close(grad(foo)(x), [np.cos(0.5), 0.0, 0.0])
    out, vjp_fn = vjp(foo, x)
    close(out, np.sin(0.5))
    close(vjp_fn(T(2.0))[0], [2 * np.cos(0.5), 0.0, 0.0])


def test_same_tensor_in_two_leaves_gets_two_gradients():
    x = T(X)
    g = grad(lambda p: (p[0] * p[1] ** 2).sum())((x, x))
    close(g[0], X ** 2)
    close(g[1], 2 * X * X)


def test_identity_functions():
    close(grad(lambda x: x)(T(2.0)), 1.0)
    close(jacrev(lambda x: x)(T(X)), np.eye(N))
    close(jacfwd(lambda x: x)(T(X)), np.eye(N))
    out, vjp_fn = vjp(lambda x: x, T(X))
    close(out, X)
    close(vjp_fn(T(V))[0], V)
    close(jvp(lambda x: x, (T(X),), (T(V),))[1], V)


# -- custom Functions
def test_transforms_of_a_custom_function():
    close(grad(lambda x: Cube.apply(x).sum())(T(X)), 3 * X ** 2)
    close(grad(grad(lambda x: Cube.apply(x)))(T(1.5)), 9.0)
    close(jvp(Cube.apply, (T(X),), (T(V),))[1], 3 * X ** 2 * V)
    close(jacfwd(Cube.apply)(T(X)), np.diag(3 * X ** 2))
    close(vmap(Cube.apply)(T(XS)), XS ** 3)        # a loop (no batching rule), with a warning
    close(grad(lambda xs: vmap(Cube.apply)(xs).sum())(T(XS)), 3 * XS ** 2)
    # forward mode inside vmap: the jvp runs per element on the elements' ctxs (also for the
    # tangents of a vmap inside this one: jacfwd's)
    close(vmap(lambda v: jvp(Cube.apply, (v,), (v,))[1])(T(XS)), 3 * XS ** 3)
    close(vmap(jacfwd(Cube.apply))(T(XS)), np.stack([np.diag(3 * r ** 2) for r in XS]))


@pytest.mark.parametrize("how", ["jacrev", "vmap(vjp_fn)", "is_grads_batched"])
def test_batched_backward_through_a_custom_function(how):
    if how == "jacrev":
        J = jacrev(Cube.apply)(T(X))
    elif how == "vmap(vjp_fn)":
        _, vjp_fn = vjp(Cube.apply, T(X))
        (J,) = vmap(vjp_fn)(T(np.eye(N)))
    else:
        x = T(X, requires_grad=True)
        (J,) = autograd_grad(Cube.apply(x), x, T(np.eye(N)), is_grads_batched=True)
    close(J, np.diag(3 * X ** 2))


# -- vmap compositions
B = 5
XS = RNG.normal(size=(B, N))
YS = RNG.choice([-1.0, 1.0], size=B)
W0 = RNG.normal(size=N)


def logistic_loss(w, x, y):
    """log(1 + exp(-y w.x)): gradient in w is -y x sigmoid(-y w.x)."""
    return nd.log(1 + nd.exp(-y * (x * w).sum()))


def logistic_grad_w(w, x, y):
    m = -y * (x @ w)
    return -y * x / (1 + np.exp(-m))


def test_vmap_of_grad_per_example_gradients_batched_input():
    f = lambda x: (nd.sin(x) * x).sum()  # noqa: E731
    g = vmap(grad(f))(T(XS))
    assert g.shape == (B, N)
    close(g, np.cos(XS) * XS + np.sin(XS))
    assert no_graph(g)
    loop = np.stack([val(grad(f)(T(x))) for x in XS])
    close(g, loop)


def test_vmap_of_grad_per_example_gradients_of_a_shared_parameter():
    """One gradient of the unbatched w per example: vmap(grad(loss), in_dims=(None, 0, 0))."""
    per_example = vmap(grad(logistic_loss), in_dims=(None, 0, 0))(T(W0), T(XS), T(YS))
    assert per_example.shape == (B, N)
    ref = np.stack([logistic_grad_w(W0, x, y) for x, y in zip(XS, YS)])
    close(per_example, ref)
    loop = np.stack([val(grad(logistic_loss)(T(W0), T(x), T(y))) for x, y in zip(XS, YS)])
    close(per_example, loop)
    close_fd(per_example[1], fd_gradient(
        lambda w: np.log(1 + np.exp(-YS[1] * (XS[1] @ w))), W0))
    # the sum of the per-example gradients is the gradient of the summed loss
    total = grad(lambda w: vmap(logistic_loss, in_dims=(None, 0, 0))(w, T(XS), T(YS)).sum())
    close(total(T(W0)), ref.sum(axis=0))


def test_vmap_of_grad_of_a_shared_parameter_carries_no_graph():
    g = vmap(grad(lambda w, x: ((w * x).sum()) ** 2), in_dims=(None, 0))(T(W0), T(XS))
    close(g, 2 * (XS @ W0)[:, None] * XS)
    assert no_graph(g)


def test_vmap_of_grad_per_example_gradients_of_dict_parameters():
    Wm, bv = RNG.normal(size=(2, N)), RNG.normal(size=2)
    ys = RNG.normal(size=(B, 2))
    params = {"W": T(Wm), "b": T(bv)}

    def loss(p, x, y):
        return ((nd.tanh(p["W"] @ x + p["b"]) - y) ** 2).sum()

    g = vmap(grad(loss), in_dims=(None, 0, 0))(params, T(XS), T(ys))
    assert list(g) == ["W", "b"] and g["W"].shape == (B, 2, N) and g["b"].shape == (B, 2)
    for k in range(B):
        h = np.tanh(Wm @ XS[k] + bv)
        dz = 2 * (h - ys[k]) * (1 - h ** 2)
        close(g["W"][k], np.outer(dz, XS[k]))
        close(g["b"][k], dz)
    g2 = vmap(grad(loss), in_dims=(None, 0, 0), chunk_size=2)(params, T(XS), T(ys))
    close(g2["W"], val(g["W"]))
    close(g2["b"], val(g["b"]))


def test_vmap_of_grad_with_has_aux_and_argnums():
    def f(w, x):
        r = (w * x).sum()
        return r ** 2, r

    (gw, gx), aux = vmap(grad(f, argnums=(0, 1), has_aux=True), in_dims=(None, 0))(
        T(W0), T(XS))
    r = XS @ W0
    close(gw, 2 * r[:, None] * XS)
    close(gx, 2 * r[:, None] * W0[None, :])
    close(aux, r)


def test_grad_of_vmap():
    """grad w.r.t. a shared w of the summed batch: the sum of per-example gradients."""
    def total(w, xs):
        return vmap(lambda x: nd.tanh((w * x).sum()) ** 2)(xs).sum()

    g = grad(total)(T(W0), T(XS))
    t = np.tanh(XS @ W0)
    close(g, ((2 * t * (1 - t ** 2))[:, None] * XS).sum(axis=0))
    gx = grad(total, argnums=1)(T(W0), T(XS))
    close(gx, (2 * t * (1 - t ** 2))[:, None] * W0[None, :])
    assert no_graph(g) and no_graph(gx)


def test_vmap_of_vmap():
    xs = RNG.normal(size=(3, 2, N))

    def f(x):
        return nd.sin(x) * x.sum()

    out = vmap(vmap(f))(T(xs))
    assert out.shape == (3, 2, N)
    close(out, np.sin(xs) * xs.sum(axis=-1, keepdims=True))
    # in_dims on the inner level: map the inner vmap over the last axis
    out = vmap(vmap(lambda x: (x ** 2).sum(), in_dims=1))(T(xs))
    assert out.shape == (3, N)
    close(out, (xs ** 2).sum(axis=1))


def test_vmap_of_vmap_of_grad():
    xs = RNG.normal(size=(3, 2, N))
    g = vmap(vmap(grad(scalar_fn)))(T(xs))
    ref = np.stack([np.stack([scalar_fn_grad(x) for x in row]) for row in xs])
    close(g, ref)


def test_vmap_of_jvp():
    """vmap over tangents: the rows of J^T; vmap over primals: per-example JVPs."""
    def push(v):
        return jvp(tanh_layer, (T(X),), (v,))[1]

    JT = vmap(push)(T(np.eye(N)))
    close(JT, tanh_layer_jac(X).T)

    def per_example(x, v):
        return jvp(tanh_layer, (x,), (v,))

    vs = RNG.normal(size=(B, N))
    out, tangents = vmap(per_example)(T(XS), T(vs))
    close(out, np.tanh(XS @ W.T))
    close(tangents, np.stack([tanh_layer_jac(x) @ v for x, v in zip(XS, vs)]))


def test_grad_of_vmap_of_grad():
    """d/dX sum(vmap(grad f)(X)) for f(x) = sum(x^3): 6X."""
    def h(xs):
        return vmap(grad(lambda x: (x ** 3).sum()))(xs).sum()

    close(grad(h)(T(XS)), 6 * XS)

    # a shared w: d/dw sum_{b,i} d/dx_i sum(sin(w x_b)) = sum cos(w x) - w x sin(w x)
    def k(w):
        return vmap(grad(lambda x: nd.sin(w * x).sum()))(T(XS)).sum()

    w0 = 0.7
    close(grad(k)(T(w0)), (np.cos(w0 * XS) - w0 * XS * np.sin(w0 * XS)).sum())


def test_hvp_forward_over_reverse():
    for seed in range(3):
        v = np.random.default_rng(seed).normal(size=N)
        _, hv = jvp(grad(scalar_fn), (T(X),), (T(v),))
        close(hv, scalar_fn_hess(X) @ v)
    # reverse over reverse agrees
    v = T(V)
    hv2 = grad(lambda x: (grad(scalar_fn)(x) * v).sum())(T(X))
    close(hv2, scalar_fn_hess(X) @ V)


def test_vmap_of_jacrev_and_jacfwd_batched_jacobians():
    for jac in (jacrev, jacfwd):
        J = vmap(jac(tanh_layer))(T(XS))
        assert J.shape == (B, 3, N)
        close(J, np.stack([tanh_layer_jac(x) for x in XS]))


def test_vmap_of_hessian():
    H = vmap(hessian(scalar_fn))(T(XS[:3]))
    close(H, np.stack([scalar_fn_hess(x) for x in XS[:3]]))


# =========================================================================== vjp
def test_vjp_closed_form_and_output_without_graph():
    out, vjp_fn = vjp(tanh_layer, T(X))
    close(out, np.tanh(W @ X))
    assert no_graph(out)
    u = RNG.normal(size=3)
    (g,) = vjp_fn(T(u))
    close(g, u @ tanh_layer_jac(X))
    assert no_graph(g)


def test_vjp_pytree_primals_and_outputs():
    a, b, c = RNG.normal(size=3), RNG.normal(size=3), RNG.normal(size=(2, 3))

    def f(a, pair):
        b, c = pair
        return {"s": a * b, "t": ((c @ a).sum(), nd.sin(a))}

    out, vjp_fn = vjp(f, T(a), (T(b), T(c)))
    assert list(out) == ["s", "t"] and isinstance(out["t"], tuple)
    close(out["s"], a * b)
    close(out["t"][0], (c @ a).sum())
    close(out["t"][1], np.sin(a))

    u_s, u_t0, u_t1 = RNG.normal(size=3), 1.7, RNG.normal(size=3)
    cot = {"s": T(u_s), "t": (T(u_t0), T(u_t1))}
    grads = vjp_fn(cot)
    assert isinstance(grads, tuple) and len(grads) == 2 and isinstance(grads[1], tuple)
    ga, (gb, gc) = grads
    close(ga, u_s * b + u_t0 * c.sum(axis=0) + u_t1 * np.cos(a))
    close(gb, u_s * a)
    close(gc, u_t0 * np.tile(a, (2, 1)))

    # a second call gives the same result (the graph is kept)
    ga2, (gb2, gc2) = vjp_fn(cot)
    close(ga2, val(ga))
    close(gb2, val(gb))
    close(gc2, val(gc))


def test_vjp_fn_called_many_times_with_different_cotangents():
    out, vjp_fn = vjp(lambda x: nd.exp(x) * x, T(X))
    J = np.diag(np.exp(X) * (1 + X))
    for u in (V, -2 * V, np.ones(N)):
        close(vjp_fn(T(u))[0], u @ J)


def test_vmap_of_vjp_fn_over_the_identity_is_the_jacobian():
    _, vjp_fn = vjp(tanh_layer, T(X))
    (J,) = vmap(vjp_fn)(T(np.eye(3)))
    close(J, tanh_layer_jac(X))
    # with two primals: one Jacobian per primal
    M = RNG.normal(size=(3, N))
    _, vjp_fn = vjp(lambda m, x: nd.tanh(m @ x), T(M), T(X))
    Jm, Jx = vmap(vjp_fn)(T(np.eye(3)))
    y = np.tanh(M @ X)
    close(Jx, (1 - y ** 2)[:, None] * M)
    ref = np.zeros((3, 3, N))
    for i in range(3):
        ref[i, i] = (1 - y[i] ** 2) * X
    close(Jm, ref)


def test_vjp_has_aux():
    out, vjp_fn, aux = vjp(lambda x: (x ** 2, {"n": 3, "s": x.sum()}), T(X), has_aux=True)
    close(out, X ** 2)
    assert aux["n"] == 3
    close(aux["s"], X.sum())
    close(vjp_fn(T(V))[0], 2 * X * V)
    with pytest.raises(RuntimeError, match="must return a pair"):
        vjp(lambda x: x ** 2, T(X), has_aux=True)


def test_vjp_cotangent_errors():
    _, vjp_fn = vjp(lambda x: (x * 2, x[:2]), T(X))
    with pytest.raises(RuntimeError, match="structure of the output"):
        vjp_fn(T(V))
    with pytest.raises(RuntimeError, match="structure of the output"):
        vjp_fn((T(V),))
    with pytest.raises(RuntimeError, match="structure of the output"):
        vjp_fn([T(V), T(V[:2])])
    with pytest.raises(RuntimeError, match="cotangent leaf 1 has shape \\[4\\].*shape \\[2\\]"):
        vjp_fn((T(V), T(V)))
    with pytest.raises(RuntimeError, match="cotangent leaf 0 is a float"):
        vjp_fn((1.0, T(V[:2])))
    # still usable after an error
    g = vjp_fn((T(V), T(V[:2])))[0]
    close(g, 2 * V + np.concatenate([V[:2], [0, 0]]))


def test_vjp_errors_on_inputs_and_outputs():
    with pytest.raises(RuntimeError, match="output leaf 0 is a float"):
        vjp(lambda x: 3.0, T(X))
    with pytest.raises(RuntimeError, match="floating point or complex.*int64"):
        vjp(lambda x: x, nd.tensor([1, 2]))
    with pytest.raises(TypeError, match="got a list at leaf 0|got a float at leaf 0"):
        vjp(lambda x: x, [1.0])


def test_vjp_of_an_output_independent_of_the_input():
    _, vjp_fn = vjp(lambda x, y: y * 2, T(X), T(V))
    gx, gy = vjp_fn(T(np.ones(N)))
    close(gx, np.zeros(N))
    close(gy, 2 * np.ones(N))


# =========================================================================== jvp
def test_jvp_closed_form():
    out, t = jvp(tanh_layer, (T(X),), (T(V),))
    close(out, np.tanh(W @ X))
    close(t, tanh_layer_jac(X) @ V)
    assert no_graph(out) and no_graph(t)


def test_jvp_several_primals_and_pytrees():
    a, b, ta, tb = (RNG.normal(size=3) for _ in range(4))
    c, tc = RNG.normal(size=(2, 3)), RNG.normal(size=(2, 3))

    def f(a, d):
        return {"p": a * d["b"], "q": [(d["c"] @ a).sum(), nd.sin(d["c"])]}

    out, t = jvp(f, (T(a), {"b": T(b), "c": T(c)}), (T(ta), {"b": T(tb), "c": T(tc)}))
    assert list(out) == ["p", "q"] and isinstance(out["q"], list)
    assert list(t) == ["p", "q"] and isinstance(t["q"], list)
    close(out["p"], a * b)
    close(t["p"], ta * b + a * tb)
    close(t["q"][0], (tc @ a + c @ ta).sum())
    close(t["q"][1], np.cos(c) * tc)
    close(out["q"][1], np.sin(c))


def test_jvp_against_finite_differences():
    def f_np(x):
        return np.sqrt(1 + x ** 2) * np.exp(-x.sum())

    _, t = jvp(lambda x: nd.sqrt(1 + x ** 2) * nd.exp(-x.sum()), (T(X),), (T(V),))
    close_fd(t, fd_jacobian(f_np, X) @ V)


def test_jvp_has_aux():
    out, t, aux = jvp(lambda x: (x ** 3, {"sq": x ** 2}), (T(X),), (T(V),), has_aux=True)
    close(out, X ** 3)
    close(t, 3 * X ** 2 * V)
    close(aux["sq"], X ** 2)
    assert fwAD.unpack_dual(aux["sq"]).tangent is None
    with pytest.raises(RuntimeError, match="must return a pair"):
        jvp(lambda x: x, (T(X),), (T(V),), has_aux=True)


def test_jvp_errors():
    x, v = T(X), T(V)
    with pytest.raises(RuntimeError, match="tangent leaf 0 has shape \\[3\\].*\\[4\\]"):
        jvp(nd.sin, (x,), (T(V[:3]),))
    with pytest.raises(RuntimeError, match="expected primals to be a tuple"):
        jvp(nd.sin, x, (v,))
    with pytest.raises(RuntimeError, match="expected tangents to be a tuple"):
        jvp(nd.sin, (x,), v)
    with pytest.raises(RuntimeError, match="same structure"):
        jvp(lambda a, b: a * b, (x, x), (v,))
    with pytest.raises(RuntimeError, match="same structure"):
        jvp(lambda d: d["a"], ({"a": x},), ([v],))
    with pytest.raises(RuntimeError, match="tangent leaf 0 is a float"):
        jvp(nd.sin, (x,), (1.0,))
    with pytest.raises(RuntimeError, match="output leaf 0 is a float"):
        jvp(lambda x: 3.0, (x,), (v,))
    with pytest.raises(RuntimeError, match="floating point or complex.*int64"):
        jvp(lambda x: x, (nd.tensor([1, 2]),), (T([1.0, 1.0]),))


@pytest.mark.parametrize("name, f, df, d2f", [
    ("tanh", np.tanh, lambda x: 1 - np.tanh(x) ** 2,
     lambda x: -2 * np.tanh(x) * (1 - np.tanh(x) ** 2)),
    ("exp", np.exp, np.exp, np.exp),
    ("sigmoid", lambda x: 1 / (1 + np.exp(-x)),
     lambda x: np.exp(-x) / (1 + np.exp(-x)) ** 2,
     lambda x: (1 / (1 + np.exp(-x))) * (1 - 1 / (1 + np.exp(-x)))
     * (1 - 2 / (1 + np.exp(-x)))),
    ("sqrt", np.sqrt, lambda x: 0.5 / np.sqrt(x), lambda x: -0.25 * x ** -1.5),
])
def test_jvp_through_ops_that_save_their_output(name, f, df, d2f):
    """Ops whose backward uses their output (tanh, exp, sigmoid, sqrt) keep the tangents of
    that output: jvp, jvp of jvp, jvp of grad and grad of jvp all see them."""
    op = getattr(nd, name)
    x = np.abs(X) + 0.3   # sqrt needs a positive input
    xt, vt = T(x), T(V)
    out, t = jvp(op, (xt,), (vt,))
    close(out, f(x))
    close(t, df(x) * V)
    # second derivative, forward over forward
    _, t2 = jvp(lambda y: jvp(op, (y,), (vt,))[1], (xt,), (vt,))
    close(t2, d2f(x) * V * V)
    # forward over reverse (hvp) and reverse over forward
    _, hv = jvp(grad(lambda y: op(y).sum()), (xt,), (vt,))
    close(hv, d2f(x) * V)
    g = grad(lambda y: (jvp(op, (y,), (vt,))[1]).sum())(xt)
    close(g, d2f(x) * V)
    # jacfwd of grad (vmapped forward over reverse)
    close(jacfwd(grad(lambda y: op(y).sum()))(xt), np.diag(d2f(x)))
    close_fd(t, fd_jacobian(f, x) @ V)


# =========================================================================== linearize
def test_linearize():
    out, jvp_fn = linearize(tanh_layer, T(X))
    close(out, np.tanh(W @ X))
    J = tanh_layer_jac(X)
    for seed in range(3):
        t = np.random.default_rng(seed).normal(size=N)
        close(jvp_fn(T(t)), J @ t)
    close(jvp_fn(T(V)), J @ V)   # repeated calls agree


def test_linearize_several_primals_and_errors():
    a, b = RNG.normal(size=3), RNG.normal(size=3)
    out, jvp_fn = linearize(lambda a, b: nd.exp(a) * b, T(a), T(b))
    close(out, np.exp(a) * b)
    ta, tb = RNG.normal(size=3), RNG.normal(size=3)
    close(jvp_fn(T(ta), T(tb)), np.exp(a) * ta * b + np.exp(a) * tb)
    with pytest.raises(RuntimeError, match="expects 2 tangent"):
        jvp_fn(T(ta))
    with pytest.raises(RuntimeError, match="shape"):
        jvp_fn(T(ta), T(np.ones(2)))


def test_vmap_of_linearize_jvp_fn_is_the_transposed_jacobian():
    _, jvp_fn = linearize(tanh_layer, T(X))
    close(vmap(jvp_fn)(T(np.eye(N))), tanh_layer_jac(X).T)


# =========================================================================== jacrev / jacfwd
@pytest.mark.parametrize("jac", [jacrev, jacfwd], ids=["jacrev", "jacfwd"])
def test_jacobian_of_tanh_layer(jac):
    J = jac(tanh_layer)(T(X))
    assert J.shape == (3, N)
    close(J, tanh_layer_jac(X))
    close_fd(J, fd_jacobian(lambda x: np.tanh(W @ x), X))
    assert no_graph(J)


@pytest.mark.parametrize("jac", [jacrev, jacfwd], ids=["jacrev", "jacfwd"])
def test_jacobian_shapes_matrix_input_and_output(jac):
    """f(M) = M @ Bm for M (2, 3): J[i, j, k, l] = delta_ik Bm[l, j], shape (2, 4, 2, 3)."""
    M, Bm = RNG.normal(size=(2, 3)), RNG.normal(size=(3, 4))
    J = jac(lambda m: m @ T(Bm))(T(M))
    assert J.shape == (2, 4, 2, 3)
    close(J, np.einsum("ik,lj->ijkl", np.eye(2), Bm))
    # a nonlinear one, against finite differences
    J = jac(lambda m: nd.exp(m) @ T(Bm) * m.sum())(T(M))
    close_fd(J, fd_jacobian(lambda m: np.exp(m) @ Bm * m.sum(), M))
    # scalar output and scalar input
    J = jac(lambda m: (m ** 2).sum())(T(M))
    assert J.shape == (2, 3)
    close(J, 2 * M)
    J = jac(lambda s: T(W) * s)(T(0.5))
    assert J.shape == (3, N)
    close(J, W)


@pytest.mark.parametrize("jac", [jacrev, jacfwd], ids=["jacrev", "jacfwd"])
def test_jacobian_structure_outputs_outer_argnums_inner(jac):
    a, b = RNG.normal(size=3), RNG.normal(size=(2, 2))

    def f(a, b):
        return {"u": a * b.sum(), "v": nd.sin(a)[:2] * b[0, 1]}

    def f_np(a, b):
        return {"u": a * b.sum(), "v": np.sin(a)[:2] * b[0, 1]}

    J = jac(f, argnums=(0, 1))(T(a), T(b))
    assert list(J) == ["u", "v"]
    for key, oshape in (("u", (3,)), ("v", (2,))):
        assert isinstance(J[key], tuple) and len(J[key]) == 2
        Ja, Jb = J[key]
        assert Ja.shape == oshape + (3,) and Jb.shape == oshape + (2, 2)
        close_fd(Ja, fd_jacobian(lambda a_, key=key: f_np(a_, b)[key], a))
        close_fd(Jb, fd_jacobian(lambda b_, key=key: f_np(a, b_)[key], b))
    close(J["u"][0], np.eye(3) * b.sum())

    # int argnums: no inner tuple; tuple outputs
    J = jac(lambda a, b: (a * 2, (b ** 2).sum()), argnums=1)(T(a), T(b))
    assert isinstance(J, tuple) and len(J) == 2
    close(J[0], np.zeros((3, 2, 2)))
    close(J[1], 2 * b)


@pytest.mark.parametrize("jac", [jacrev, jacfwd], ids=["jacrev", "jacfwd"])
def test_jacobian_pytree_input(jac):
    a, b = RNG.normal(size=3), RNG.normal(size=2)
    J = jac(lambda d: d["a"][:2] * d["b"])({"a": T(a), "b": T(b)})
    assert isinstance(J, dict) and list(J) == ["a", "b"]
    close(J["a"], np.hstack([np.diag(b), np.zeros((2, 1))]))
    close(J["b"], np.diag(a[:2]))


@pytest.mark.parametrize("jac", [jacrev, jacfwd], ids=["jacrev", "jacfwd"])
def test_jacobian_has_aux(jac):
    J, aux = jac(lambda x: (tanh_layer(x), {"norm": (x ** 2).sum(), "y": nd.sin(x)}),
                 has_aux=True)(T(X))
    close(J, tanh_layer_jac(X))
    close(aux["norm"], (X ** 2).sum())
    close(aux["y"], np.sin(X))
    assert aux["y"].shape == (N,)      # one copy, not one per basis vector


def test_jacrev_has_aux_passes_non_tensors_through():
    J, aux = jacrev(lambda x: (x * 2, {"k": 1, "name": "a"}), has_aux=True)(T(X))
    close(J, 2 * np.eye(N))
    assert aux == {"k": 1, "name": "a"}


@pytest.mark.parametrize("chunk_size", [1, 2, 3, 100])
def test_jacrev_chunk_size(chunk_size):
    J = jacrev(tanh_layer, chunk_size=chunk_size)(T(X))
    close(J, tanh_layer_jac(X))
    # several outputs and inputs: the basis is split across outputs
    a, b = RNG.normal(size=3), RNG.normal(size=2)
    J = jacrev(lambda a, b: (a * b.sum(), a[:2] * b), argnums=(0, 1),
               chunk_size=chunk_size)(T(a), T(b))
    close(J[0][0], np.eye(3) * b.sum())
    close(J[0][1], np.tile(a[:, None], (1, 2)))
    close(J[1][0], np.hstack([np.diag(b), np.zeros((2, 1))]))
    close(J[1][1], np.diag(a[:2]))


def test_jacrev_of_one_output_element_is_its_gradient():
    """A single-element output takes one plain vjp (no vmap level); shapes follow the
    output's: () -> x.shape, (1,) -> (1,) + x.shape, (1, 1) -> (1, 1) + x.shape."""
    M = RNG.normal(size=(2, 3))
    for shape in [(), (1,), (1, 1)]:
        J = jacrev(lambda m, s=shape: (nd.sin(m) * 2.0).sum().reshape(s))(T(M))
        assert J.shape == shape + (2, 3)
        close(J.reshape((2, 3)), 2.0 * np.cos(M))
    a, b = RNG.normal(size=3), RNG.normal(size=(2,))
    (ja, jb), aux = jacrev(lambda a, b: ((a ** 2).sum() * b[0], "aux"), argnums=(0, 1),
                           has_aux=True)(T(a), T(b))
    close(ja, 2 * a * b[0])
    close(jb, np.array([(a ** 2).sum(), 0.0]))
    assert aux == "aux"
    H = hessian(lambda x: (x ** 3).sum() * x[0])(T(a))  # jacfwd over the one-output jacrev
    expected = np.diag(6 * a * a[0])
    expected[0, :] += 3 * a ** 2
    expected[:, 0] += 3 * a ** 2
    close(H, expected)


def test_jacrev_chunk_size_error():
    with pytest.raises(ValueError, match="chunk_size"):
        jacrev(tanh_layer, chunk_size=0)(T(X))


def test_jacfwd_randomness():
    def f(x):
        return x * nd.randn(N)

    with pytest.raises(RuntimeError):
        jacfwd(f)(T(X))
    # "same": one draw shared by every basis vector, so J is diagonal
    nd.manual_seed(0)
    J = jacfwd(f, randomness="same")(T(X))
    off = val(J) - np.diag(np.diag(val(J)))
    np.testing.assert_array_equal(off, 0)
    # the draw is the one made outside, with the same seed
    nd.manual_seed(0)
    close(J, np.diag(val(nd.randn(N))))


def test_jacfwd_and_jacrev_with_an_unused_input():
    J = jacfwd(lambda x, y: y * 2, argnums=(0, 1))(T(X), T(V))
    close(J[0], np.zeros((N, N)))
    close(J[1], 2 * np.eye(N))
    J = jacrev(lambda x, y: y * 2, argnums=(0, 1))(T(X), T(V))
    close(J[0], np.zeros((N, N)))
    close(J[1], 2 * np.eye(N))


def test_an_inner_grad_of_an_unused_input_is_a_zero_of_the_outer_level():
    """The inner grad's zero for an input its function ignores is lowered like its computed
    gradients: the outer transforms see a plain zero (it once leaked the inner level)."""
    def gv(a, b):
        ga, gb = grad(lambda a, b: (a * a).sum(), argnums=(0, 1))(a, b)  # (2a, 0)
        return (gb * 0.7 + ga * a).sum()  # 2 a . a
    a, b = T(X), T(V)
    g = grad(gv, argnums=(0, 1))(a, b)
    close(g[0], 4 * X)
    close(g[1], np.zeros(N))
    H = jacrev(grad(gv, argnums=(0, 1)), argnums=(0, 1))(a, b)
    close(H[0][0], 4 * np.eye(N))
    close(H[1][1], np.zeros((N, N)))
    H = jacfwd(grad(gv, argnums=(0, 1)), argnums=(0, 1))(a, b)
    close(H[0][0], 4 * np.eye(N))
    close(H[0][1], np.zeros((N, N)))
    gs = vmap(grad(gv, argnums=(0, 1)))(T(np.stack([X, 2 * X])), T(np.stack([V, V])))
    close(gs[0], np.stack([4 * X, 8 * X]))
    close(gs[1], np.zeros((2, N)))


def test_complex_jacobians_follow_the_torch_conventions():
    """For holomorphic f: C -> C, jacfwd gives J = f'(z); jacrev gives its conjugate (it
    pulls back real cotangents: the conjugate-Wirtinger convention of PyTorch's reverse
    mode). For real L of complex z, grad gives dL/dRe z + i dL/dIm z."""
    z = RNG.normal(size=3) + 1j * RNG.normal(size=3)
    zt = T(z)
    f = lambda z: z * z + nd.exp(z)  # noqa: E731
    fprime = 2 * z + np.exp(z)
    # d f / d Re(z) along each axis, by finite differences, is f'(z) for holomorphic f
    fd = np.array([(np.exp(z + h) + (z + h) ** 2 - np.exp(z - h) - (z - h) ** 2)[k] / 2e-6
                   for k, h in enumerate(np.eye(3) * 1e-6)])
    np.testing.assert_allclose(fprime, fd, rtol=1e-6)
    close(jacfwd(f)(zt), np.diag(fprime))
    close(jacrev(f)(zt), np.diag(np.conj(fprime)))

    # real loss of a complex input: L = sum |z|^2 + Re(sum z^3)
    def L(z):
        return (z * nd.conj(z)).real.sum() + (z ** 3).real.sum()

    def L_np(re, im):
        zz = re + 1j * im
        return (np.abs(zz) ** 2).sum() + (zz ** 3).real.sum()

    g = grad(L)(zt)
    d_re = fd_gradient(lambda r: L_np(r, z.imag), z.real)
    d_im = fd_gradient(lambda i: L_np(z.real, i), z.imag)
    close_fd(g, d_re + 1j * d_im)
    close(g, 2 * z + 3 * np.conj(z) ** 2)

    # real -> complex: jacfwd keeps the imaginary part
    x = RNG.normal(size=3)
    J = jacfwd(lambda x: nd.exp(x * (1 + 2j)))(T(x))
    close_fd(J, fd_jacobian(lambda x: np.exp(x * (1 + 2j)), x))


def test_autograd_grad_is_grads_batched():
    x = T(X, requires_grad=True)
    y = nd.tanh(T(W) @ x) * x[:3]
    us = RNG.normal(size=(6, 3))
    (batched,) = autograd_grad(y, x, T(us), retain_graph=True, is_grads_batched=True)
    assert batched.shape == (6, N)
    singles = np.stack([val(autograd_grad(y, x, T(u), retain_graph=True)[0]) for u in us])
    close(batched, singles)
    J = tanh_layer_jac(X) * X[:3, None] + np.hstack([np.diag(np.tanh(W @ X)),
                                                      np.zeros((3, 1))])
    close(batched, us @ J)


# =========================================================================== higher order
def test_grad_through_jacrev_and_jacfwd():
    """d/dx sum(J(x)) for J the Jacobian of tanh(W x), against finite differences."""
    def jac_sum_np(x):
        return tanh_layer_jac(x).sum()

    ref = fd_gradient(jac_sum_np, X)
    for jac in (jacrev, jacfwd):
        g = grad(lambda x, jac=jac: jac(tanh_layer)(x).sum())(T(X))
        close_fd(g, ref)
        assert no_graph(g)
    # closed form: sum_ij (1 - y_i^2) W_ij -> sum_i -2 y_i (1 - y_i^2) s_i W_i, s = W.sum(1)
    y = np.tanh(W @ X)
    close(g, (-2 * y * (1 - y ** 2) * W.sum(axis=1)) @ W)


def test_grad_of_a_hessian_entry_against_finite_differences():
    """Third derivatives: d/dx trace(H(x)) = 6 x - cos x (the A term is constant)."""
    g = grad(lambda x: nd.trace(hessian(scalar_fn)(x)))(T(X))
    close(g, 6 * X - np.cos(X))
    close_fd(g, fd_gradient(lambda x: np.trace(scalar_fn_hess(x)), X))


def test_jacrev_result_is_differentiable_for_an_outer_requires_grad_input():
    x = T(X, requires_grad=True)
    J = jacrev(tanh_layer)(x)
    close(J, tanh_layer_jac(X))
    (g,) = autograd_grad(J.sum(), x)
    close_fd(g, fd_gradient(lambda x: tanh_layer_jac(x).sum(), X))
    assert x.grad is None


def test_jacobians_of_a_real_and_a_complex_input_together():
    """The basis for a real input beside a complex one is the real part of the complex
    identity's rows (once cast with a ComplexWarning)."""
    a, b = np.array([1.0, 2.0]), np.array([1j, 2.0 - 1j])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Ja, Jb = jacfwd(lambda a, b: a * b, argnums=(0, 1))(T(a), T(b))
    close(Ja, np.diag(b))
    close(Jb, np.diag(a).astype(complex))


def test_a_leaf_made_inside_grad_runs_only_the_nodes_grad_needs():
    """func.grad skips the walk that finds the nodes leading to its inputs, since every node
    of its level's graph does (Note [Passes that need every node]); a leaf made inside f
    breaks that, and then the walk is done: the leaf's branch is not run (its hook stays
    silent, as in autograd.grad) and the gradient is right."""
    hits = []
    x0 = np.array([0.3, -1.2])

    def f(x):
        w = (x * 0.0 + 1.5).detach().requires_grad_()  # a leaf of the level, not an input
        w.register_hook(lambda g: hits.append(g) or g)
        return (nd.sin(x) * 2.0 + w * x * x).sum()

    close(grad(f)(nd.tensor(x0)), 2.0 * np.cos(x0) + 3.0 * x0)  # d/dx (1.5 x^2) = 3 x
    assert hits == []
    # the same function without the extra leaf takes the shortcut and agrees
    close(grad(lambda x: (nd.sin(x) * 2.0 + 1.5 * x * x).sum())(nd.tensor(x0)),
          2.0 * np.cos(x0) + 3.0 * x0)
