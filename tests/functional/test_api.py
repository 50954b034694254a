"""The torch.autograd.functional contract: ndgrad.functional's vjp, jvp, jacobian, hessian,
hvp and vhp.

References are closed forms and central finite differences, both computed with NumPy, and
PyTorch's documented ``torch.autograd.functional`` contract; torch itself is never imported.
Tests of ``strategy="forward-mode"`` / ``outer_jacobian_strategy="forward-mode"`` need
``ndgrad.functional.vmap`` and are skipped (with that reason) where it does not exist yet.
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

import ndgrad as nd
import ndgrad.forward_ad as fwAD
from ndgrad.autograd import Function
from ndgrad.functional import api
from ndgrad.functional.api import hessian, hvp, jacobian, jvp, vhp, vjp
from support import close, fd_jacobian, val

HAS_VMAP = importlib.util.find_spec("ndgrad.functional.vmap") is not None
needs_vmap = pytest.mark.skipif(
    not HAS_VMAP, reason="forward-mode Jacobians need ndgrad.functional.vmap (not written yet)")

RNG = np.random.default_rng(1234)
W = RNG.normal(size=(3, 4))
A = RNG.normal(size=(4, 4))
X = RNG.normal(size=4)
V4 = RNG.normal(size=4)


def T(a, requires_grad=False):
    return nd.tensor(np.asarray(a, dtype=np.float64), requires_grad=requires_grad)


def active_levels():
    """How many dual levels are active (public API only: a new level's number)."""
    level = fwAD.enter_dual_level()
    fwAD.exit_dual_level(level=level)
    return level


@pytest.fixture(autouse=True)
def _no_level_left():
    yield
    assert active_levels() == 0, "a dual level was left active"


# --------------------------------------------------------------------------- functions
def tanh_layer(x):
    return nd.tanh(T(W) @ x)


def tanh_layer_jac(x):
    """Closed form: d tanh(W x) / dx = (1 - y^2)[:, None] * W."""
    y = np.tanh(W @ x)
    return (1 - y ** 2)[:, None] * W


def scalar_fn(x):
    """sum(x^4)/4 + x.A.x/2 + sum(sin x): gradient x^3 + (A + A^T) x / 2 + cos x."""
    return (x ** 4).sum() / 4 + 0.5 * (x @ T(A) @ x) + nd.sin(x).sum()


def scalar_fn_hess(x):
    return np.diag(3 * x ** 2 - np.sin(x)) + (A + A.T) / 2


def two_in_two_out(a, b):
    """(a * sum(b), sin(a)[:2] * b[0, 1]) for a of shape (3,), b of shape (2, 2)."""
    return a * b.sum(), nd.sin(a)[:2] * b[0, 1]


def two_in_two_out_np(a, b):
    return a * b.sum(), np.sin(a)[:2] * b[0, 1]


A3 = RNG.normal(size=3)
B22 = RNG.normal(size=(2, 2))


def two_in_two_out_jac():
    """J[i][j] by finite differences, shape outputs[i].shape + inputs[j].shape."""
    ja = [fd_jacobian(lambda a, k=k: two_in_two_out_np(a, B22)[k], A3) for k in range(2)]
    jb = [fd_jacobian(lambda b, k=k: two_in_two_out_np(A3, b)[k], B22) for k in range(2)]
    return [[ja[0], jb[0]], [ja[1], jb[1]]]


def scalar2(x, y):
    """sum(x^2) * sum(y^3), x of shape (2,), y of shape (2, 2)."""
    return (x ** 2).sum() * (y ** 3).sum()


X2 = RNG.normal(size=2)
Y22 = RNG.normal(size=(2, 2))


def scalar2_hess():
    sx, sy = (X2 ** 2).sum(), (Y22 ** 3).sum()
    hxx = 2 * sy * np.eye(2)
    hxy = np.einsum("i,jk->ijk", 2 * X2, 3 * Y22 ** 2)
    hyx = np.moveaxis(hxy, 0, -1)
    hyy = sx * np.einsum("ij,ik,jl->ijkl", 6 * Y22, np.eye(2), np.eye(2))
    return [[hxx, hxy], [hyx, hyy]]


# --------------------------------------------------------------------------- public names
def test_public_names():
    import ndgrad.functional as F

    for name in ["vjp", "jvp", "jacobian", "hessian", "hvp", "vhp"]:
        assert getattr(F, name) is getattr(api, name)
        assert name in F.__all__


# --------------------------------------------------------------------------- vjp
def test_vjp_single_tensor_closed_form():
    x, v = T(X), RNG.normal(size=3)
    out, g = vjp(tanh_layer, x, T(v))
    close(out, np.tanh(W @ X))
    close(g, v @ tanh_layer_jac(X))
    assert g.shape == (4,) and not g.requires_grad and not out.requires_grad


def test_vjp_tuple_inputs_and_outputs():
    a, b = T(A3), T(B22)
    v = (RNG.normal(size=3), RNG.normal(size=2))
    out, (ga, gb) = vjp(two_in_two_out, (a, b), (T(v[0]), T(v[1])))
    assert isinstance(out, tuple) and len(out) == 2
    close(out[0], A3 * B22.sum())
    J = two_in_two_out_jac()
    close(ga, v[0] @ J[0][0] + v[1] @ J[1][0], rtol=1e-7, atol=1e-8)
    close(gb, np.tensordot(v[0], J[0][1], 1) + np.tensordot(v[1], J[1][1], 1),
          rtol=1e-7, atol=1e-8)


def test_vjp_tuple_of_one_keeps_tuples():
    out, g = vjp(lambda x: (x * 2,), (T([1.0, 2.0]),), (T([1.0, 3.0]),))
    assert isinstance(out, tuple) and isinstance(g, tuple)
    close(g[0], [2.0, 6.0])


def test_vjp_v_optional_for_single_element_output():
    x = T(X)
    _, g = vjp(lambda x: (x ** 3).sum(), x)
    close(g, 3 * X ** 2)
    _, g = vjp(lambda x: (x ** 3).sum().reshape(1, 1), x)  # one element, not 0-d
    close(g, 3 * X ** 2)
    with pytest.raises(RuntimeError, match="v can only be None if the output"):
        vjp(lambda x: x ** 3, x)


def test_vjp_v_errors():
    x = T([1.0, 2.0])
    with pytest.raises(RuntimeError, match=r"v has invalid shape: it should be \(2,\).*"
                                           r"got \(3,\)"):
        vjp(lambda x: x * 2, x, T([1.0, 2.0, 3.0]))
    with pytest.raises(RuntimeError, match=r"entry 1 in v has invalid shape: it should be "
                                           r"\(2,\) \(the shape of output 1\) but got \(1,\)"):
        vjp(lambda x: (x, x * 2), x, (T([1.0, 1.0]), T([1.0])))
    with pytest.raises(RuntimeError, match="tuple of invalid length: it should have 2"):
        vjp(lambda x: (x, x * 2), x, (T([1.0, 1.0]),))
    with pytest.raises(RuntimeError, match="v should be a single Tensor"):
        vjp(lambda x: x * 2, x, (T([1.0, 1.0]), T([1.0, 1.0])))


def test_vjp_complex():
    """PyTorch's convention: for holomorphic f, vjp = v * conj(f'(z)); for the real-valued
    |z|^2 the gradient is 2 z (twice the conjugate Wirtinger derivative)."""
    z = np.array([1 + 2j, 3 - 1j, -0.5 + 0.25j])
    v = np.array([1 - 1j, 2 + 0.5j, 0.3j])
    c = 0.7 - 0.2j
    out, g = vjp(lambda z: z ** 2 * c, nd.tensor(z), nd.tensor(v))
    close(out, z ** 2 * c)
    close(g, v * np.conj(2 * z * c))
    _, g = vjp(lambda z: (z * nd.conj(z)).real.sum(), nd.tensor(z))
    close(g, 2 * z)


# --------------------------------------------------------------------------- jvp
def test_jvp_single_tensor_closed_form():
    x = T(X)
    out, t = jvp(tanh_layer, x, T(V4))
    close(out, np.tanh(W @ X))
    close(t, tanh_layer_jac(X) @ V4)
    assert t.shape == (3,) and not t.requires_grad and not out.requires_grad


def test_jvp_tuple_inputs_and_outputs():
    va, vb = RNG.normal(size=3), RNG.normal(size=(2, 2))
    out, (ta, tb) = jvp(two_in_two_out, (T(A3), T(B22)), (T(va), T(vb)))
    close(out[1], np.sin(A3)[:2] * B22[0, 1])
    J = two_in_two_out_jac()
    close(ta, J[0][0] @ va + np.tensordot(J[0][1], vb, 2), rtol=1e-7, atol=1e-8)
    close(tb, J[1][0] @ va + np.tensordot(J[1][1], vb, 2), rtol=1e-7, atol=1e-8)


def test_jvp_v_optional_for_single_element_input():
    _, t = jvp(lambda x: nd.stack([x[0] ** 2, nd.sin(x[0])]), T([0.5]))
    close(t, [1.0, np.cos(0.5)])
    with pytest.raises(RuntimeError, match="v can only be None if the input"):
        jvp(lambda x: x * 2, T([1.0, 2.0]))
    with pytest.raises(RuntimeError, match=r"entry 0 in v has invalid shape: it should be "
                                           r"\(2,\) \(the shape of input 0\) but got \(3,\)"):
        jvp(lambda x, y: x * y, (T([1.0, 2.0]), T([1.0, 2.0])),
            (T([1.0, 2.0, 3.0]), T([1.0, 2.0])))


def test_jvp_uses_forward_mode():
    """A custom Function with a jvp rule and no backward: only forward mode can do it."""

    class Cube(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_forward(x)
            return x ** 3

        @staticmethod
        def backward(ctx, g):
            raise AssertionError("jvp must not run a backward pass")

        @staticmethod
        def jvp(ctx, t):
            (x,) = ctx.saved_tensors
            return 3 * x ** 2 * t

    _, t = jvp(Cube.apply, T(X), T(V4))
    close(t, 3 * X ** 2 * V4)


def test_jvp_complex():
    z = np.array([1 + 2j, 3 - 1j])
    v = np.array([1 + 1j, 1j])
    _, t = jvp(lambda z: nd.exp(z) * z, nd.tensor(z), nd.tensor(v))
    close(t, np.exp(z) * (1 + z) * v)
    _, t = jvp(lambda z: (z * nd.conj(z)).real, nd.tensor(z), nd.tensor(v))
    close(t, 2 * (np.conj(z) * v).real)  # d|z|^2 = 2 Re(conj(z) dz)


# --------------------------------------------------------------------------- jacobian
@pytest.mark.parametrize("vectorize", [False, True])
def test_jacobian_closed_form(vectorize):
    J = jacobian(tanh_layer, T(X), vectorize=vectorize)
    assert J.shape == (3, 4) and not J.requires_grad
    close(J, tanh_layer_jac(X))


@needs_vmap
def test_jacobian_forward_mode_closed_form():
    J = jacobian(tanh_layer, T(X), vectorize=True, strategy="forward-mode")
    close(J, tanh_layer_jac(X))


def _check_two_in_two_out(J):
    ref = two_in_two_out_jac()
    assert isinstance(J, tuple) and len(J) == 2
    for i in range(2):
        assert isinstance(J[i], tuple) and len(J[i]) == 2
        for j in range(2):
            assert J[i][j].shape == ref[i][j].shape
            close(J[i][j], ref[i][j], rtol=1e-7, atol=1e-8)


@pytest.mark.parametrize("vectorize", [False, True])
def test_jacobian_tuple_structure(vectorize):
    _check_two_in_two_out(jacobian(two_in_two_out, (T(A3), T(B22)), vectorize=vectorize))


@needs_vmap
def test_jacobian_tuple_structure_forward_mode():
    _check_two_in_two_out(jacobian(two_in_two_out, (T(A3), T(B22)), vectorize=True,
                                   strategy="forward-mode"))


def _mixed_structures(**kw):
    x, y = T(X[:2]), T(X[2:])
    one_out = jacobian(lambda x, y: x * y, (x, y), **kw)  # Tensor out, tuple in
    one_in = jacobian(lambda x: (x * 2, x.sum()), x, **kw)  # tuple out, Tensor in
    return one_out, one_in


@pytest.mark.parametrize("kw", [{}, {"vectorize": True},
                                pytest.param({"vectorize": True, "strategy": "forward-mode"},
                                             marks=needs_vmap)])
def test_jacobian_mixed_structures(kw):
    (jx, jy), (j0, j1) = _mixed_structures(**kw)
    close(jx, np.diag(X[2:]))
    close(jy, np.diag(X[:2]))
    close(j0, 2 * np.eye(2))
    close(j1, np.ones(2))
    assert j1.shape == (2,)


@pytest.mark.parametrize("vectorize", [False, True])
def test_jacobian_vectorize_agrees(vectorize):
    def f(x, y):
        return nd.exp(x) @ y, (x[:, None] * y).sum(axis=0)

    x, y = RNG.normal(size=3), RNG.normal(size=(3, 2))
    J = jacobian(f, (T(x), T(y)), vectorize=vectorize)
    ref = jacobian(f, (T(x), T(y)), vectorize=not vectorize)
    for i in range(2):
        for j in range(2):
            close(J[i][j], val(ref[i][j]))
    close(J[0][0], np.exp(x)[None, :] * y.T)


@needs_vmap
def test_jacobian_forward_and_reverse_agree():
    def f(x, y):
        return nd.sin(x) * y.sum(), nd.stack([x @ x, y.prod()])

    x, y = T(RNG.normal(size=3)), T(RNG.normal(size=2))
    fwd = jacobian(f, (x, y), vectorize=True, strategy="forward-mode")
    rev = jacobian(f, (x, y))
    for i in range(2):
        for j in range(2):
            close(fwd[i][j], val(rev[i][j]))


def test_jacobian_vectorize_is_one_batched_grad_call(monkeypatch):
    calls = []
    real_grad = api.grad

    def counting_grad(*args, **kw):
        calls.append(kw.get("is_grads_batched", False))
        return real_grad(*args, **kw)

    monkeypatch.setattr(api, "grad", counting_grad)
    jacobian(two_in_two_out, (T(A3), T(B22)), vectorize=True)
    assert calls == [True]
    calls.clear()
    jacobian(two_in_two_out, (T(A3), T(B22)))  # one backward per output element
    assert calls == [False] * 5


def test_jacobian_of_independent_output_is_zero():
    c = T([1.0, 2.0])
    for vectorize in (False, True):
        jx, jy = jacobian(lambda x, y: x * c, (T(X[:2]), T(X[:3])), vectorize=vectorize)
        close(jx, np.diag([1.0, 2.0]))
        close(jy, np.zeros((2, 3)))
        J = jacobian(lambda x: c * 3, T(X), vectorize=vectorize)
        close(J, np.zeros((2, 4)))


def test_jacobian_empty_output():
    for vectorize in (False, True):
        J = jacobian(lambda x: (x[:0], x * 2), T([1.0, 2.0]), vectorize=vectorize)
        assert J[0].shape == (0, 2)
        close(J[1], 2 * np.eye(2))


def test_jacobian_under_no_grad():
    with nd.no_grad():
        close(jacobian(tanh_layer, T(X)), tanh_layer_jac(X))
        _, h = hvp(scalar_fn, T(X), T(V4))
    close(h, scalar_fn_hess(X) @ V4)


def test_jacobian_strategy_errors():
    x = T(X)
    with pytest.raises(ValueError, match='"forward-mode" or "reverse-mode".*got \'fwd\''):
        jacobian(tanh_layer, x, strategy="fwd")
    with pytest.raises(NotImplementedError, match="pass vectorize=True"):
        jacobian(tanh_layer, x, strategy="forward-mode")
    with pytest.raises(NotImplementedError, match="create_graph=True and strategy="):
        jacobian(tanh_layer, x, strategy="forward-mode", vectorize=True, create_graph=True)
    with pytest.raises(RuntimeError, match='strict=True and strategy="forward-mode"'):
        jacobian(tanh_layer, x, strategy="forward-mode", vectorize=True, strict=True)
    with pytest.raises(RuntimeError, match="strict=True and vectorize=True"):
        jacobian(tanh_layer, x, strict=True, vectorize=True)


# --------------------------------------------------------------------------- hessian
@pytest.mark.parametrize("vectorize", [False, True])
def test_hessian_closed_form(vectorize):
    H = hessian(scalar_fn, T(X), vectorize=vectorize)
    assert H.shape == (4, 4) and not H.requires_grad
    close(H, scalar_fn_hess(X))


@needs_vmap
def test_hessian_forward_over_reverse():
    H = hessian(scalar_fn, T(X), vectorize=True, outer_jacobian_strategy="forward-mode")
    close(H, scalar_fn_hess(X))


@pytest.mark.parametrize("kw", [{}, {"vectorize": True},
                                pytest.param({"vectorize": True,
                                              "outer_jacobian_strategy": "forward-mode"},
                                             marks=needs_vmap)])
def test_hessian_tuple_inputs(kw):
    H = hessian(scalar2, (T(X2), T(Y22)), **kw)
    ref = scalar2_hess()
    assert isinstance(H, tuple) and all(isinstance(r, tuple) and len(r) == 2 for r in H)
    for i in range(2):
        for j in range(2):
            assert H[i][j].shape == ref[i][j].shape
            close(H[i][j], ref[i][j])


def test_hessian_single_element_nonscalar_output():
    H = hessian(lambda x: (x ** 3).sum().reshape(1, 1), T([1.0, 2.0]))
    close(H, np.diag([6.0, 12.0]))


def test_hessian_errors():
    x = T(X)
    with pytest.raises(RuntimeError, match="should contain a single element.*shape \\(4,\\)"):
        hessian(lambda x: x ** 2, x)
    with pytest.raises(RuntimeError, match="should return a single Tensor"):
        hessian(lambda x: (x.sum(), x.sum()), x)
    with pytest.raises(TypeError, match="must return a Tensor or a tuple of Tensors"):
        hessian(lambda x: 1.0, x)
    with pytest.raises(ValueError, match="outer_jacobian_strategy"):
        hessian(scalar_fn, x, outer_jacobian_strategy="backward")
    with pytest.raises(NotImplementedError, match="vectorize=True"):
        hessian(scalar_fn, x, outer_jacobian_strategy="forward-mode")
    with pytest.raises(NotImplementedError, match="create_graph=True"):
        hessian(scalar_fn, x, outer_jacobian_strategy="forward-mode", vectorize=True,
                create_graph=True)


# --------------------------------------------------------------------------- hvp / vhp
@pytest.mark.parametrize("fn", [hvp, vhp])
def test_hvp_vhp_closed_form(fn):
    out, r = fn(scalar_fn, T(X), T(V4))
    close(out, (X ** 4).sum() / 4 + 0.5 * X @ A @ X + np.sin(X).sum())
    close(r, scalar_fn_hess(X) @ V4)  # H is symmetric: H v == v^T H
    assert not r.requires_grad and not out.requires_grad


@pytest.mark.parametrize("fn", [hvp, vhp])
def test_hvp_vhp_tuple_inputs(fn):
    vx, vy = RNG.normal(size=2), RNG.normal(size=(2, 2))
    _, (rx, ry) = fn(scalar2, (T(X2), T(Y22)), (T(vx), T(vy)))
    H = scalar2_hess()
    close(rx, H[0][0] @ vx + np.tensordot(H[0][1], vy, 2))
    close(ry, H[1][0] @ vx + np.tensordot(H[1][1], vy, 2))


@pytest.mark.parametrize("fn", [hvp, vhp])
def test_hvp_vhp_v_optional_for_single_element_input(fn):
    out, r = fn(lambda x: (x ** 3).sum(), T([2.0]))
    close(out, 8.0)
    close(r, [12.0])
    with pytest.raises(RuntimeError, match="v can only be None if the input"):
        fn(scalar_fn, T(X))
    with pytest.raises(RuntimeError, match=r"v has invalid shape: it should be \(4,\)"):
        fn(scalar_fn, T(X), T([1.0]))


@pytest.mark.parametrize("fn", [hvp, vhp])
def test_hvp_vhp_need_single_element_output(fn):
    x = T(X)
    with pytest.raises(RuntimeError, match="should contain a single element"):
        fn(lambda x: x ** 2, x, T(V4))
    with pytest.raises(RuntimeError, match="should return a single Tensor"):
        fn(lambda x: (x.sum(),), x, T(V4))


def test_hvp_is_forward_over_reverse(monkeypatch):
    """One reverse pass (with create_graph) under a dual level; vhp takes two."""
    calls = []
    real_grad = api.grad

    def counting_grad(*args, **kw):
        calls.append((kw.get("create_graph"), active_levels() > 0))
        return real_grad(*args, **kw)

    monkeypatch.setattr(api, "grad", counting_grad)
    hvp(scalar_fn, T(X), T(V4))
    assert calls == [(True, True)]
    calls.clear()
    vhp(scalar_fn, T(X), T(V4))
    assert calls == [(True, False), (False, False)]


def test_hvp_uses_second_order_of_function_with_unused_input():
    _, (rx, ry) = hvp(lambda x, y: (x ** 3).sum(), (T(X), T([1.0, 2.0])),
                      (T(V4), T([1.0, 1.0])))
    close(rx, 6 * X * V4)
    close(ry, [0.0, 0.0])


# --------------------------------------------------------------------------- create_graph
def test_create_graph_results_are_differentiable():
    x0 = np.array([0.5, -1.5, 2.0])
    v = np.array([1.0, 2.0, -1.0])

    def leaf():
        return T(x0, requires_grad=True)

    x = leaf()
    _, g = vjp(lambda x: x ** 3, x, T(v), create_graph=True)  # 3 x^2 v
    assert g.requires_grad
    close(nd.autograd.grad(g.sum(), x)[0], 6 * x0 * v)

    x = leaf()
    _, t = jvp(lambda x: x ** 3, x, T(v), create_graph=True)  # 3 x^2 v
    close(t, 3 * x0 ** 2 * v)
    close(nd.autograd.grad(t.sum(), x)[0], 6 * x0 * v)

    x = leaf()
    J = jacobian(lambda x: x ** 3, x, create_graph=True)  # diag(3 x^2)
    close(nd.autograd.grad(J.sum(), x)[0], 6 * x0)

    x = leaf()
    J = jacobian(lambda x: x ** 3, x, create_graph=True, vectorize=True)
    close(nd.autograd.grad(J.sum(), x)[0], 6 * x0)

    for kw in ({}, {"vectorize": True}):
        x = leaf()
        H = hessian(lambda x: (x ** 4).sum(), x, create_graph=True, **kw)  # diag(12 x^2)
        close(H, np.diag(12 * x0 ** 2))
        close(nd.autograd.grad(H.sum(), x)[0], 24 * x0)

    for fn in (hvp, vhp):
        x = leaf()
        _, r = fn(lambda x: (x ** 4).sum(), x, T(v), create_graph=True)  # 12 x^2 v
        close(r, 12 * x0 ** 2 * v)
        close(nd.autograd.grad(r.sum(), x)[0], 24 * x0 * v)


def test_create_graph_differentiable_wrt_v():
    x0, v0 = np.array([0.5, -1.5]), np.array([2.0, 3.0])
    for fn, expected in ((vjp, 3 * x0 ** 2), (jvp, 3 * x0 ** 2)):
        v = T(v0, requires_grad=True)
        _, r = fn(lambda x: x ** 3, T(x0), v, create_graph=True)
        close(nd.autograd.grad(r.sum(), v)[0], expected)
    for fn in (hvp, vhp):
        v = T(v0, requires_grad=True)
        _, r = fn(lambda x: (x ** 4).sum(), T(x0), v, create_graph=True)
        close(nd.autograd.grad(r.sum(), v)[0], 12 * x0 ** 2)


def test_create_graph_output_is_differentiable():
    x = T([1.0, 2.0], requires_grad=True)
    out, _ = vjp(lambda x: x ** 2, x, T([1.0, 1.0]), create_graph=True)
    close(nd.autograd.grad(out.sum(), x)[0], [2.0, 4.0])
    out, _ = jvp(lambda x: x ** 2, x, T([1.0, 1.0]), create_graph=True)
    close(nd.autograd.grad(out.sum(), x)[0], [2.0, 4.0])


# --------------------------------------------------------------------------- inputs untouched
CALLS = [
    ("vjp", lambda x: vjp(scalar_fn, x)),
    ("jvp", lambda x: jvp(tanh_layer, x, T(V4))),
    ("jacobian", lambda x: jacobian(tanh_layer, x)),
    ("jacobian-vec", lambda x: jacobian(tanh_layer, x, vectorize=True)),
    ("hessian", lambda x: hessian(scalar_fn, x)),
    ("hvp", lambda x: hvp(scalar_fn, x, T(V4))),
    ("vhp", lambda x: vhp(scalar_fn, x, T(V4))),
]


def _flat(res):
    if isinstance(res, nd.Tensor):
        return [res]
    return [t for r in res for t in _flat(r)]


@pytest.mark.parametrize("requires_grad", [False, True])
@pytest.mark.parametrize("name,call", CALLS, ids=[c[0] for c in CALLS])
def test_inputs_untouched_and_results_detached(name, call, requires_grad):
    x = T(X, requires_grad=requires_grad)
    res = call(x)
    assert x.requires_grad is requires_grad and x.grad is None and x.grad_fn is None
    np.testing.assert_array_equal(x.detach().cpu().numpy(), X)
    for t in _flat(res):
        assert not t.requires_grad and t.grad_fn is None


# --------------------------------------------------------------------------- strict
def test_strict_independent_input():
    x, y = T([1.0, 2.0]), T([3.0])

    def f(x, y):
        return x * 2

    with pytest.raises(RuntimeError, match="vjp: the output of the user-provided function is "
                                           "independent of input 1.*strict=True was passed"):
        vjp(f, (x, y), T([1.0, 1.0]), strict=True)
    with pytest.raises(RuntimeError, match="jvp: the output of the user-provided function is "
                                           "independent of input 1.*strict=True"):
        jvp(f, (x, y), (T([1.0, 1.0]), T([1.0])), strict=True)
    with pytest.raises(RuntimeError, match="jacobian: output 0 of the user-provided function "
                                           "is independent of input 1.*strict=True"):
        jacobian(f, (x, y), strict=True)
    # strict=False: the mathematically expected zeros
    _, (gx, gy) = vjp(f, (x, y), T([1.0, 1.0]))
    close(gx, [2.0, 2.0])
    close(gy, [0.0])
    _, t = jvp(f, (x, y), (T([1.0, 1.0]), T([5.0])))
    close(t, [2.0, 2.0])
    close(jacobian(f, (x, y))[1], np.zeros((2, 1)))


def test_strict_output_independent_of_inputs():
    x = T([1.0, 2.0])
    for call in (lambda: vjp(lambda x: T([1.0, 1.0]), x, T([1.0, 1.0]), strict=True),
                 lambda: jvp(lambda x: T([1.0, 1.0]), x, T([1.0, 1.0]), strict=True),
                 lambda: jacobian(lambda x: T([1.0, 1.0]), x, strict=True)):
        with pytest.raises(RuntimeError, match="output 0 of the user-provided function does not "
                                               "require gradients.*strict=True"):
            call()
    _, t = jvp(lambda x: (x * 3, T([1.0, 1.0])), x, T([1.0, 1.0]))
    close(t[0], [3.0, 3.0])
    close(t[1], [0.0, 0.0])


def test_strict_second_order():
    x, y = T([1.0, 2.0]), T([3.0])

    def linear_in_y(x, y):
        return (x ** 3).sum() + y.sum()

    for fn in (hvp, vhp):
        with pytest.raises(RuntimeError, match="jacobian of the user-provided function with "
                                               "respect to input 1 is independent"):
            fn(linear_in_y, (x, y), (T([1.0, 1.0]), T([1.0])), strict=True)
        _, (rx, ry) = fn(linear_in_y, (x, y), (T([1.0, 1.0]), T([1.0])))
        close(rx, [6.0, 12.0])
        close(ry, [0.0])
    with pytest.raises(RuntimeError, match="jacobian of the user-provided function with respect "
                                           "to input 0 is independent"):
        hessian(lambda x: x.sum() * 2, x, strict=True)
    close(hessian(lambda x: x.sum() * 2, x), np.zeros((2, 2)))
    # PyTorch's rule: a zero Hessian block is an independent output in strict mode
    with pytest.raises(RuntimeError, match="output 0 .* independent of input 1"):
        hessian(lambda x, y: (x ** 2).sum() + (y ** 2).sum(), (x, y), strict=True)


def test_strict_with_create_graph_needs_differentiable_result():
    x = T([1.0, 2.0])
    msg = "does not require grad.*strict mode when create_graph=True"
    with pytest.raises(RuntimeError, match=msg):
        vjp(lambda x: x * 2, x, T([1.0, 1.0]), strict=True, create_graph=True)
    with pytest.raises(RuntimeError, match=msg):
        jvp(lambda x: x * 2, x, T([1.0, 1.0]), strict=True, create_graph=True)
    with pytest.raises(RuntimeError, match="with respect to input 0 does not depend on the "
                                           "inputs in a differentiable way"):
        jacobian(lambda x: x * 2, x, strict=True, create_graph=True)
    for fn in (hvp, vhp):  # a quadratic: constant Hessian
        with pytest.raises(RuntimeError, match=msg):
            fn(lambda x: 0.5 * (x * x).sum(), x, T([1.0, 1.0]), strict=True,
               create_graph=True)
    # not strict: the same calls succeed with the right numbers
    _, g = vjp(lambda x: x * 2, x, T([1.0, 1.0]), create_graph=True)
    close(g, [2.0, 2.0])
    _, r = hvp(lambda x: 0.5 * (x * x).sum(), x, T([1.0, 3.0]), create_graph=True)
    close(r, [1.0, 3.0])


# --------------------------------------------------------------------------- type errors
@pytest.mark.parametrize("fn", [vjp, jvp, jacobian, hessian, hvp, vhp])
def test_argument_types(fn):
    x = T([1.0])
    with pytest.raises(TypeError, match="must return a Tensor or a tuple of Tensors, but it is "
                                        "a float"):
        fn(lambda x: 3.0, x)
    with pytest.raises(TypeError, match="inputs must be a Tensor or a tuple of Tensors, but it "
                                        "is a list"):
        fn(lambda x: x, [x])
    with pytest.raises(TypeError, match="entry 1 of the tuple is a float"):
        fn(lambda x, y: x, (x, 1.0))


@pytest.mark.parametrize("fn", [vjp, jvp])
def test_v_type_error(fn):
    with pytest.raises(TypeError, match="v must be a Tensor or a tuple of Tensors"):
        fn(lambda x: x * 2, T([1.0, 2.0]), [1.0, 1.0])
