"""The differential operators of ndgrad.func (laplacian, divergence, hessian_diag,
hessian_trace_estimate, biharmonic) against closed forms and the exact Hessian and Jacobian
routes, composed with vmap and grad, and their errors."""

from __future__ import annotations

import numpy as np
import pytest

import ndgrad as nd
from ndgrad.func import (biharmonic, derivatives, divergence, grad, hessian, hessian_diag,
                         hessian_trace_estimate, jacfwd, jvp, laplacian, vmap)
from support import Cube, close, fd_gradient, host

RNG_SEED = 1234


def _mlp(d=8, width=12, seed=0):
    """A 3-layer tanh MLP R^d -> R with fixed random weights."""
    rng = np.random.default_rng(seed)
    Ws = [nd.tensor(rng.standard_normal(s) / np.sqrt(s[1]))
          for s in [(width, d), (width, width), (width, width)]]
    bs = [nd.tensor(0.3 * rng.standard_normal(width)) for _ in range(3)]
    w = nd.tensor(rng.standard_normal(width) / np.sqrt(width))

    def f(x):
        a = x
        for W, b in zip(Ws, bs):
            a = nd.tanh(W @ a + b)
        return w @ a
    return f


def _trace_of_hessian(f, x):
    H = host(hessian(f)(x))
    n = x.numel()
    return np.trace(H.reshape(H.shape[:H.ndim - 2 * x.ndim] + (n, n)), axis1=-2, axis2=-1)


# ------------------------------------------------------------------------------ laplacian
@pytest.mark.parametrize("method", ["taylor", "hessian"])
def test_laplacian_closed_forms(method):
    x = nd.tensor([0.5, -1.0, 2.0, 0.25, 1.5])
    close(laplacian(lambda v: (v ** 2).sum(), method=method)(x), 2 * 5)
    a = np.array([0.3, -0.2, 0.1, 0.5, -0.4])
    at = nd.tensor(a)
    expected = (a @ a) * np.exp(a @ host(x))
    close(laplacian(lambda v: nd.exp(at @ v), method=method)(x), expected)
    # any input shape: the sum runs over every element
    X = nd.tensor([[1.0, 2.0], [3.0, -1.0]])
    close(laplacian(lambda v: (v ** 3).sum(), method=method)(X), 6 * host(X).sum())


@pytest.mark.parametrize("method", ["taylor", "hessian"])
def test_laplacian_of_a_tanh_mlp_is_the_trace_of_its_hessian(method):
    f = _mlp()
    x = nd.tensor(np.random.default_rng(RNG_SEED).standard_normal(8))
    close(laplacian(f, method=method)(x), _trace_of_hessian(f, x), rtol=1e-10, atol=1e-10)


def test_laplacian_elementwise_over_the_output():
    x = nd.tensor([0.3, -0.7, 1.1])

    def f(v):
        return nd.stack([nd.sin(v[0]) * v[1] ** 2, (v * v).sum(), nd.exp(v[0] * v[2])])
    x0, x1, x2 = host(x)
    expected = [-np.sin(x0) * x1 ** 2 + 2 * np.sin(x0), 6.0,
                (x2 ** 2 + x0 ** 2) * np.exp(x0 * x2)]
    got = laplacian(f)(x)
    assert tuple(got.shape) == (3,)
    close(got, expected)
    close(laplacian(f, method="hessian")(x), expected)
    # a matrix output of a matrix input
    X = nd.tensor([[0.3, -0.7], [1.1, 0.2]])
    g = lambda M: nd.tanh(M @ M) * M[0, 0]  # noqa: E731
    close(laplacian(g)(X), _trace_of_hessian(g, X), rtol=1e-10, atol=1e-12)


def test_laplacian_of_constant_affine_and_scalar_input_functions_and_float32():
    x = nd.tensor([0.3, -0.7, 1.1])
    close(laplacian(lambda v: nd.tensor(3.0))(x), 0.0)
    close(laplacian(lambda v: 2 * v.sum() + 1)(x), 0.0)
    close(laplacian(lambda v: v)(x), [0.0, 0.0, 0.0])
    s = nd.tensor(0.7)
    close(laplacian(lambda t: nd.sin(t) * t)(s), -np.sin(0.7) * 0.7 + 2 * np.cos(0.7))
    x32 = nd.tensor([0.3, -0.7, 1.1], dtype="float32")
    got = laplacian(lambda v: nd.tanh(v * v[::-1]).sum())(x32)
    assert got.dtype == np.float32
    close(got, laplacian(lambda v: nd.tanh(v * v[::-1]).sum())(x), rtol=1e-5)


@pytest.mark.cpu_only("compositions are device independent")
def test_laplacian_composes_with_the_other_transforms():
    f = lambda v: nd.tanh(v[0] * v[1]) * nd.exp(v[2]) + (v ** 3).sum()  # noqa: E731
    x = nd.tensor([0.3, -0.7, 1.1])
    e = nd.tensor([1.0, 0.5, -0.2])
    ref = laplacian(f, method="hessian")
    close(laplacian(grad(f))(x), grad(ref)(x), rtol=1e-10)        # ∇Δf both ways
    close(jvp(laplacian(f), (x,), (e,))[1], jvp(ref, (x,), (e,))[1], rtol=1e-10)
    close(hessian(laplacian(f))(x), hessian(ref)(x), rtol=1e-9, atol=1e-12)
    g = lambda v: derivatives(lambda t: f(v * t), nd.tensor(1.0), 2)[2]  # noqa: E731
    close(laplacian(g)(x), laplacian(g, method="hessian")(x), rtol=1e-10)
    pts = nd.tensor(np.random.default_rng(RNG_SEED).standard_normal((2, 3, 3)))
    close(vmap(vmap(laplacian(f)))(pts), vmap(vmap(ref))(pts), rtol=1e-10)


_M = np.array([[0.5, -1.0, 0.2], [0.3, 0.8, -0.6], [1.1, 0.1, 0.4]])
# One function per way an op carries the pass (Note [Forward Laplacian]).
_FUNCTIONS = {
    "linear ops": lambda x: (x.reshape(3, 1) * x[None, :]).T.sum() * x[0],
    "multilinear, both inputs": lambda x: x @ nd.tensor(_M) @ x + (x * x * x).sum(),
    "einsum": lambda x: nd.einsum("i,ij,j->", x, nd.tensor(_M), nd.sin(x)),
    "elementwise, two inputs": lambda x: nd.atan2(x[0] + 2, x[1] ** 2 + 1) * x[2]
    + nd.hypot(x, x[::-1] + 1).sum(),
    "Taylor rules": lambda x: (x / (x[::-1] ** 2 + 1)).sum()
    + ((x ** 2 + 1) ** (x[::-1] * 0.3)).sum() + nd.sqrt(x ** 2 + 1).sum()
    + nd.log(x ** 2 + 2).sum() + (nd.sigmoid(x) * nd.cos(x)).sum(),
    "no Taylor rule": lambda x: nd.abs(x - 5).sum() * x[0] + nd.prod(x + 2)
    + nd.special.logsumexp(x * x) + nd.linalg.det(nd.tensor(_M) + nd.diag(x) * x[0]),
    "broadcasting": lambda x: nd.atan2(x[None, :], x[:, None] + 2).sum()
    + (x[None, :] * nd.sin(x[:, None])).sum()
    + (nd.tanh(x)[None, :] * nd.tensor([[1.0], [2.0]])).sum() * x[0],
    "piecewise": lambda x: nd.where(x > 0, x ** 2, nd.sin(x)).sum()
    + nd.maximum(x, x ** 3).sum(),
    "complex intermediates": lambda x: nd.real(nd.exp(1j * x) * x).sum(),
    "in place": lambda x: (lambda y: (y.mul_(2), y.exp_(), y.sum())[-1])(x * 1),
    "custom Function": lambda x: Cube.apply(x).sum() * x[0],
    "vmap inside": lambda x: vmap(lambda r: (r ** 3).sum() * r[0])(nd.stack([x, x ** 2])).sum(),
}


@pytest.mark.cpu_only("the op kinds are device independent; the device cases run above")
@pytest.mark.parametrize("name", sorted(_FUNCTIONS))
def test_laplacian_through_every_kind_of_op(name):
    f = _FUNCTIONS[name]
    x = nd.tensor([0.3, -0.7, 1.1])
    close(laplacian(f)(x), _trace_of_hessian(f, x), rtol=1e-10, atol=1e-10)


@pytest.mark.cpu_only("the routes are device independent")
def test_the_forward_laplacian_takes_a_signed_sum_from_the_declaration(monkeypatch):
    """Note [Op structure]: ``subtract`` declares itself the sum ``x - y`` (coefficients
    (1, -1)), and the Forward Laplacian passes the batches through by those coefficients,
    knowing no op by name: declared ``x + 2 y`` instead, the pass follows the declaration."""
    from ndgrad.core.ops import REGISTRY
    from ndgrad.core.ops.registry import linear

    x = nd.tensor([0.3, -0.7, 1.1])
    xv = host(x)

    def f(v):
        return nd.subtract(v ** 3, nd.exp(v)).sum()
    close(laplacian(f)(x), (6 * xv - np.exp(xv)).sum(), rtol=1e-12)
    monkeypatch.setattr(REGISTRY["subtract"], "structure", linear(coefficients=(1, 2)))
    close(laplacian(f)(x), (6 * xv + 2 * np.exp(xv)).sum(), rtol=1e-12)


@pytest.mark.cpu_only("the routes are device independent")
@pytest.mark.parametrize("name", ["tanh", "exp", "sin", "sqrt", "log", "divide", "pow"])
def test_the_taylor_rule_route_with_the_laplacian_split_equally_is_exact(name):
    """Note [Forward Laplacian]: an op's order-2 Taylor rule vmapped over the directions with
    the series [J_d, L / d], second coefficients summed, equals the elementwise scheme."""
    from ndgrad.core.ops import REGISTRY
    from ndgrad.functional.operators import _by_jet, _dense, _elementwise

    op = REGISTRY[name]
    rng = np.random.default_rng(RNG_SEED)
    d = 4
    args = tuple(nd.tensor(rng.uniform(0.5, 2.0, 3)) for _ in range(op.nin))
    data = tuple((nd.tensor(rng.standard_normal((d, 3))), nd.tensor(rng.standard_normal(3)))
                 for _ in range(op.nin))
    out = getattr(nd, name)(*args)
    (J1, L1), = _by_jet(op, data, out, args, {}, d)
    (J2, L2), = _elementwise(op, data, out, args, {}, d)
    close(J1, _dense(J2))
    close(L1, L2, rtol=1e-11)


def test_vmap_of_laplacian_over_points_is_a_loop():
    f = _mlp(d=4, width=6)
    pts = nd.tensor(np.random.default_rng(RNG_SEED).standard_normal((5, 4)))
    got = vmap(laplacian(f))(pts)
    assert tuple(got.shape) == (5,)
    close(got, [host(laplacian(f)(pts[i])) for i in range(5)], rtol=1e-12, atol=1e-12)
    close(got, [_trace_of_hessian(f, pts[i]) for i in range(5)], rtol=1e-10, atol=1e-10)


def test_grad_of_the_laplacian():
    f = _mlp(d=4, width=6)
    x = nd.tensor([0.2, -0.5, 0.9, 0.1])
    g = grad(laplacian(f))(x)
    close(g, grad(laplacian(f, method="hessian"))(x), rtol=1e-9, atol=1e-10)
    lap = laplacian(f)
    fd = fd_gradient(lambda z: lap(nd.tensor(z)).item(), host(x), eps=1e-5)
    close(g, fd, rtol=1e-6, atol=1e-7)


@pytest.mark.cpu_only("reverse over a vmapped Forward Laplacian: the CPU case checks it")
def test_a_physics_informed_loss_differentiates_through_the_laplacian():
    """Poisson residual ``Δu + 1`` of a small tanh network at a few points: the gradient of
    the mean squared residual with respect to the weights, by both methods."""
    rng = np.random.default_rng(RNG_SEED)
    W = nd.tensor(rng.standard_normal((6, 2)))
    v = nd.tensor(rng.standard_normal(6))
    pts = nd.tensor(rng.standard_normal((4, 2)))

    def loss(W, method):
        u = lambda x, W: v @ nd.tanh(W @ x)  # noqa: E731
        lap = vmap(laplacian(u, method=method), in_dims=(0, None))(pts, W)
        return ((lap + 1.0) ** 2).mean()
    expected = grad(loss)(W, "hessian")
    close(grad(loss)(W, "taylor"), expected, rtol=1e-9, atol=1e-12)
    Wr = W.detach().requires_grad_()  # the same through .backward()
    loss(Wr, "taylor").backward()
    close(Wr.grad, expected, rtol=1e-9, atol=1e-12)


# ------------------------------------------------------------------------------ divergence
def test_divergence():
    A = np.array([[1.0, 2.0, 0.5], [-1.0, 3.0, 0.0], [0.2, 0.1, -2.0]])
    At = nd.tensor(A)
    x = nd.tensor([0.3, -0.7, 1.1])
    close(divergence(lambda v: At @ v)(x), np.trace(A))

    def field(v):
        return nd.stack([nd.sin(v[0]) * v[1], v[1] ** 2 * v[2], nd.exp(v[0] * v[2])])
    close(divergence(field)(x), np.trace(host(jacfwd(field)(x))), rtol=1e-12)
    X = nd.tensor([[0.3, -0.7], [1.1, 0.2]])  # a field on matrices: flattened order
    close(divergence(lambda M: M @ M)(X), np.trace(host(jacfwd(lambda M: M @ M)(X))
                                                   .reshape(4, 4)))


# ------------------------------------------------------------------------------ hessian_diag
def test_hessian_diag():
    f = _mlp(d=4, width=6)
    x = nd.tensor([0.2, -0.5, 0.9, 0.1])
    close(hessian_diag(f)(x), np.diag(host(hessian(f)(x))), rtol=1e-10, atol=1e-12)
    X = nd.tensor([[0.3, -0.7, 0.4], [1.1, 0.2, -0.3]])
    g = lambda M: (nd.tanh(M) ** 2).sum() * M[0, 1]  # noqa: E731
    got = hessian_diag(g)(X)
    assert tuple(got.shape) == (2, 3)
    close(got, np.diag(host(hessian(g)(X)).reshape(6, 6)).reshape(2, 3), rtol=1e-10)


# ------------------------------------------------------------------------------ estimates
def _quadratic(A):
    At = nd.tensor(A)
    return lambda x: 0.5 * (x @ At @ x) + nd.sin(x).sum()


@pytest.mark.cpu_only("a statistical check (many seeds); the device case runs below")
def test_hutchinson_is_unbiased():
    rng = np.random.default_rng(RNG_SEED)
    B = rng.standard_normal((6, 6))
    A = (B + B.T) / 2
    x = nd.tensor(rng.standard_normal(6))
    H = A - np.diag(np.sin(host(x)))
    exact = np.trace(H)
    f = _quadratic(A)
    seeds, m = 40, 25
    estimates = [hessian_trace_estimate(f, x, m, key=s).item() for s in range(seeds)]
    # Var(z^T H z) = 2 (||H||_F^2 - sum_i H_ii^2) for Rademacher z
    sd = np.sqrt(2 * ((H ** 2).sum() - (np.diag(H) ** 2).sum()) / (m * seeds))
    assert abs(np.mean(estimates) - exact) < 4 * sd, (np.mean(estimates), exact, sd)
    assert np.std(estimates) > 0  # (the seeds do draw different vectors)


@pytest.mark.cpu_only("a statistical check (many seeds)")
def test_hutch_plus_plus_is_unbiased_and_beats_hutchinson_on_a_low_rank_hessian():
    rng = np.random.default_rng(RNG_SEED)
    d, rank = 20, 3
    U = np.linalg.qr(rng.standard_normal((d, rank)))[0]
    A = U @ np.diag([100.0, 60.0, 30.0]) @ U.T + 0.05 * np.eye(d)
    x = nd.tensor(rng.standard_normal(d))
    exact = np.trace(A - np.diag(np.sin(host(x))))
    f = _quadratic(A)
    budget = 12  # a sketch of 4 columns captures the rank-3 part
    pp = np.array([hessian_trace_estimate(f, x, budget, method="hutch++", key=s).item()
                   for s in range(20)])
    hu = np.array([hessian_trace_estimate(f, x, budget, key=s).item() for s in range(20)])
    err_pp, err_hu = np.abs(pp - exact).mean(), np.abs(hu - exact).mean()
    assert err_pp < 0.05 * err_hu, (err_pp, err_hu)
    # unbiased: the residual part's standard deviation is small here
    assert abs(pp.mean() - exact) < 4 * pp.std() / np.sqrt(len(pp)) + 1e-9


def test_hessian_trace_estimate_is_reproducible_and_exact_for_a_multiple_of_the_identity():
    x = nd.tensor([0.5, -1.0, 2.0, 0.25])
    f = lambda v: 1.5 * (v ** 2).sum()  # noqa: E731  (every Rademacher sample is exact)
    close(hessian_trace_estimate(f, x, 3, key=7), 12.0)
    g = _quadratic(np.arange(16.0).reshape(4, 4) / 10)
    a = hessian_trace_estimate(g, x, 5, key=3)
    close(a, hessian_trace_estimate(g, x, 5, key=3))
    b = hessian_trace_estimate(g, x, 6, method="hutch++", key=3)
    close(b, hessian_trace_estimate(g, x, 6, method="hutch++", key=3))
    nd.manual_seed(0)
    c = hessian_trace_estimate(g, x, 5)
    nd.manual_seed(0)
    close(c, hessian_trace_estimate(g, x, 5))


# ------------------------------------------------------------------------------ at 0
def test_operators_at_zero_and_on_zero_coordinates_of_polynomials():
    """At 0 (and at points with zero coordinates), where x ** p's Taylor rule used to
    divide by x (nan), every operator of a polynomial or Gaussian input equals its closed
    form (Note [Taylor mode at singular points] in ndgrad/core/ops/series.py)."""
    d = 3
    zero = nd.zeros(d)
    gauss = lambda v: nd.exp(-(v ** 2).sum() / 2)  # noqa: E731  (Hessian at 0: -I)
    close(hessian_diag(gauss)(zero), -np.ones(d))
    close(hessian_diag(lambda v: (v ** 3).sum() + v[0] * v[1] ** 2)(zero), np.zeros(d))
    # at (0, 1, 0): d^2/dx_i^2 of sum x^3 + x_0^2 x_1^2 is 6 x_i + (2 x_1^2, 2 x_0^2, 0)
    p = nd.tensor([0.0, 1.0, 0.0])
    quartic = lambda v: (v ** 3).sum() + v[0] ** 2 * v[1] ** 2  # noqa: E731
    close(hessian_diag(quartic)(p), [2.0, 6.0, 0.0])
    for method in ("taylor", "hessian"):
        close(laplacian(gauss, method=method)(zero), -d)
        close(laplacian(quartic, method=method)(p), 8.0)
    square = lambda v: (v ** 2).sum()  # noqa: E731  (Hessian 2 I: every sample exact)
    close(hessian_trace_estimate(square, zero, 4, key=0), 2 * d)
    close(hessian_trace_estimate(gauss, zero, 4, key=0), -d)
    # hutch++ with a sketch of d columns: Q spans R^d and the trace is exact
    close(hessian_trace_estimate(square, zero, 3 * d, method="hutch++", key=0), 2 * d)
    close(hessian_trace_estimate(quartic, p, 3 * d, method="hutch++", key=0), 8.0)
    # biharmonic of sum x^4 + x_0^2 x_1^2: 24 d + 8
    close(biharmonic(lambda v: (v ** 4).sum() + v[0] ** 2 * v[1] ** 2)(zero), 24 * d + 8)


def test_forward_laplacian_where_an_intermediate_sits_at_a_singular_point():
    """The Forward Laplacian adds ``f' L`` only where ``L`` is nonzero: ``sqrt(x ** 1)`` at
    a zero coordinate has ``L = 0`` and ``f' = inf`` there (it gave nan); the Laplacian is
    ``sum -x^(-3/2) / 4``, ``-inf`` at (0, 1), as the Hessian route gives."""
    x = nd.tensor([0.0, 1.0])
    with np.errstate(all="ignore"):
        close(laplacian(lambda v: nd.sqrt(v ** 1).sum())(x), -np.inf)
        close(laplacian(lambda v: nd.sqrt(v ** 1).sum(), method="hessian")(x), -np.inf)
    y = nd.tensor([0.5, 2.0])
    close(laplacian(lambda v: nd.sqrt(v ** 1).sum())(y), (-host(y) ** -1.5 / 4).sum())


# ------------------------------------------------------------------------------ biharmonic
def test_biharmonic_closed_forms():
    d = 4
    x = nd.tensor([0.5, -1.0, 2.0, 0.3])
    # Δ x_i^4 = 12 x_i^2 and Δ 12 |x|^2 = 24 d;  Δ |x|^4 = 4 (d + 2) |x|^2, Δ² |x|^4 = 8 d (d + 2)
    close(biharmonic(lambda v: (v ** 4).sum())(x), 24 * d)
    close(biharmonic(lambda v: (v @ v) ** 2)(x), 8 * d * (d + 2))
    f = _mlp(d=3, width=4)
    y = nd.tensor([0.2, -0.4, 0.7])
    close(biharmonic(f)(y), laplacian(laplacian(f))(y), rtol=1e-12, atol=1e-12)
    close(biharmonic(f)(y), biharmonic(f, method="hessian")(y), rtol=1e-9, atol=1e-10)


# ------------------------------------------------------------------------------ views
# Note [Views at the data levels] in ndgrad/core/data_level.py: a view taken before an
# in-place change of its base kept its old gradient batch and Laplacian (laplacian of the
# first function gave 4.0 for 2 cos(2 x0) + 2 cos(2 x1)); a view without data written in
# place did not update its base; an in-place change of a view carrying data was refused.
def _view_before(x):
    y = x.clone()
    y0 = y[:2]
    y.sin_()
    return (y0 ** 2).sum()          # sin(x0)^2 + sin(x1)^2


def _through_a_view(x, y=None):
    y = nd.zeros(3) if y is None else y
    w = y[:2]
    w += 3 * x[:2]
    y[1:].mul_(x[1:] ** 2)          # a view that carries data, changed in place
    return (y ** 2).sum()           # 9 x0^2 + 9 x1^6


def test_laplacian_through_views_and_inplace_changes():
    x0 = np.array([0.4, -1.3, 0.8])
    x = nd.tensor(x0)
    ref = 2 * np.cos(2 * x0[:2]).sum()
    for method in ("taylor", "hessian"):
        close(laplacian(_view_before, method=method)(x), ref, rtol=1e-12)
    close(laplacian(_through_a_view)(x), 18 + 270 * x0[1] ** 4, rtol=1e-12)
    close(laplacian(lambda v: _through_a_view(v, v * 0.0))(x), 18 + 270 * x0[1] ** 4,
          rtol=1e-12)
    # the diagonal of the Hessian, a Laplacian per point (views of batched values), nested
    close(hessian_diag(_view_before)(x), np.append(2 * np.cos(2 * x0[:2]), 0.0), rtol=1e-12,
          atol=1e-12)
    pts = np.array([x0, [0.1, 0.7, -0.5]])
    close(vmap(laplacian(_view_before))(nd.tensor(pts)), 2 * np.cos(2 * pts[:, :2]).sum(1),
          rtol=1e-12)
    # (inside vmap the written tensor must be batched: vmap refuses a batched write into an
    # unbatched one)
    close(vmap(laplacian(lambda v: _through_a_view(v, v * 0.0)))(nd.tensor(pts)),
          18 + 270 * pts[:, 1] ** 4, rtol=1e-12)
    # sin(x)^2 = (1 - cos 2x) / 2: its fourth derivative is -8 cos 2x
    close(biharmonic(_view_before)(x), -8 * np.cos(2 * x0[:2]).sum(), rtol=1e-12)


# ------------------------------------------------------------------------------ errors
def test_errors():
    x = nd.tensor([1.0, 2.0])
    with pytest.raises(ValueError, match="unknown method 'forward'"):
        laplacian(lambda v: v.sum(), method="forward")
    with pytest.raises(TypeError, match="expected a function"):
        laplacian(3.0)
    with pytest.raises(TypeError, match="x must be a Tensor"):
        laplacian(lambda v: v.sum())([1.0, 2.0])
    with pytest.raises(TypeError, match="real floating-point"):
        laplacian(lambda v: v.sum())(nd.tensor([1, 2]))
    with pytest.raises(TypeError, match="real floating-point"):
        laplacian(lambda v: v.sum())(nd.tensor([1.0 + 1j]))
    with pytest.raises(TypeError, match="f must return a Tensor"):
        laplacian(lambda v: 3.0)(x)
    with pytest.raises(RuntimeError, match="scalar"):
        hessian_diag(lambda v: v * v)(x)
    with pytest.raises(RuntimeError, match="as many elements"):
        divergence(lambda v: v.sum())(x)
    f = lambda v: (v ** 2).sum()  # noqa: E731
    with pytest.raises(ValueError, match="num_samples must be >= 1"):
        hessian_trace_estimate(f, x, 0)
    with pytest.raises(TypeError, match="num_samples must be an int"):
        hessian_trace_estimate(f, x, 2.5)
    with pytest.raises(ValueError, match="num_samples >= 3"):
        hessian_trace_estimate(f, x, 2, method="hutch++")
    with pytest.raises(ValueError, match="unknown method 'hutch'"):
        hessian_trace_estimate(f, x, 4, method="hutch")
    with pytest.raises(TypeError, match="key must be an int"):
        hessian_trace_estimate(f, x, 4, key="seed")
    with pytest.raises(RuntimeError, match="scalar"):
        hessian_trace_estimate(lambda v: v * 2, x, 4, key=0)
    with pytest.raises(ValueError, match="unknown method"):
        biharmonic(f, method="jet")
