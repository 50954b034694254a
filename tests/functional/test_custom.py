"""Custom derivative rules (ndgrad.func.custom_vjp, custom_jvp) and implicit differentiation
(custom_root, custom_fixed_point) under every transform.

A rule that is deliberately *different* from the true derivative (twice cos for sin) shows
that each transform uses the rule, not autodiff of the body; the correct rule is checked
against closed forms. Implicit derivatives are checked against closed forms (the cube root,
the fixed point of x = cos(theta x)) and finite differences of re-solves.
"""

from __future__ import annotations

import functools
import warnings

import numpy as np
import pytest

import ndgrad as nd
from ndgrad.autograd import grad as autograd_grad
from ndgrad.func import (custom_fixed_point, custom_jvp, custom_root, custom_vjp, grad,
                         hessian, jacfwd, jacrev, jvp, vjp, vmap)
from support import Cube, close, host, loop_messages

X = np.array([0.3, -1.1, 2.0])



RECORDED_OUTSIDE = "a derivative outside this vmap records it, which needs one node per element"


def _sin_vjp(scale):
    @custom_vjp
    def f(x):
        return nd.sin(x)
    f.defvjp(lambda x: (nd.sin(x), nd.cos(x)), lambda c, g: (scale * c * g,))
    return f


def _sin_jvp(scale):
    @custom_jvp
    def f(x):
        return nd.sin(x)

    @f.defjvp
    def _(primals, tangents):
        (x,), (t,) = primals, tangents
        return nd.sin(x), scale * nd.cos(x) * t
    return f


# --------------------------------------------------------------------------- custom_vjp
@pytest.mark.parametrize("make", [_sin_vjp, _sin_jvp], ids=["custom_vjp", "custom_jvp"])
@pytest.mark.parametrize("scale", [1.0, 2.0], ids=["correct", "deliberately-2x"])
def test_reverse_transforms_use_the_rule(make, scale):
    f = make(scale)
    x = nd.tensor(X)
    d1, d2 = scale * np.cos(X), -scale * np.sin(X)   # the rule's first and second derivative
    close(f(x), np.sin(X))
    close(grad(lambda v: f(v).sum())(x), d1)
    close(jacrev(f)(x), np.diag(d1))
    out, vjp_fn = vjp(f, x)
    close(vjp_fn(nd.ones(3))[0], d1)
    xr = nd.tensor(X, requires_grad=True)
    f(xr).sum().backward()
    close(xr.grad, d1)
    (g,) = autograd_grad(f(xr).sum(), xr, create_graph=True)
    close(g, d1)
    close(autograd_grad(g.sum(), xr)[0], d2)
    close(grad(lambda v: grad(lambda w: f(w).sum())(v).sum())(x), d2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        close(vmap(f)(x), np.sin(X))


@pytest.mark.parametrize("scale", [1.0, 2.0], ids=["correct", "deliberately-2x"])
def test_custom_jvp_forward_transforms_use_the_rule(scale):
    f = _sin_jvp(scale)
    x = nd.tensor(X)
    d1 = scale * np.cos(X)
    out, t = jvp(f, (x,), (nd.ones(3),))
    close(out, np.sin(X))
    close(t, d1)
    close(jacfwd(f)(x), np.diag(d1))
    close(hessian(lambda v: f(v).sum())(x), np.diag(-scale * np.sin(X)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        close(vmap(lambda v: jvp(f, (v,), (nd.ones_like(v),))[1])(x), d1)


def test_custom_vjp_with_a_forward_rule_and_pytrees_and_nondiff_argnums():
    def f(k, xs):
        return {"p": xs[0] * xs[1] * k}
    cf = custom_vjp(f, nondiff_argnums=(0,))

    def fwd(k, xs):
        return f(k, xs), (k, xs)

    def bwd(k, res, g):
        (_, (a, b)) = res
        return ((g["p"] * b * k, g["p"] * a * k),)
    cf.defvjp(fwd, bwd)
    a, b = nd.tensor(2.0), nd.tensor(5.0)
    ga, gb = grad(lambda a, b: cf(3.0, (a, b))["p"], argnums=(0, 1))(a, b)
    close(ga, 15.0)
    close(gb, 6.0)
    with pytest.raises(TypeError, match="forward-mode autodiff"):
        jvp(lambda a: cf(3.0, (a, b))["p"], (a,), (nd.tensor(1.0),))
    cf.defjvp(lambda k, p, t: (f(k, p[0]), {"p": k * (t[0][0] * p[0][1] +
                                                       p[0][0] * t[0][1])}))
    close(jvp(lambda a: cf(3.0, (a, b))["p"], (a,), (nd.tensor(1.0),))[1], 15.0)


def test_custom_vjp_errors():
    @custom_vjp
    def f(x):
        return x
    with pytest.raises(AttributeError, match="defvjp"):
        f(nd.tensor(1.0))
    f.defvjp(lambda x: (x, None), lambda r, g: g)  # not a tuple
    with pytest.raises(TypeError, match="one cotangent per"):
        grad(f)(nd.tensor(1.0))


def test_custom_jvp_nondiff_argnums():
    @functools.partial(custom_jvp, nondiff_argnums=(0,))
    def power(n, x):
        return x ** n

    @power.defjvp
    def _(n, primals, tangents):
        return power(n, primals[0]), n * primals[0] ** (n - 1) * tangents[0]
    x = nd.tensor(2.0)
    close(grad(lambda v: power(3, v))(x), 12.0)
    close(jvp(lambda v: power(3, v), (x,), (nd.tensor(1.0),))[1], 12.0)


# --------------------------------------------------------------------------- custom_root
def _cube_root(solve):
    @custom_root(lambda x, th: x ** 3 - th, solve=solve)
    def solver(x0, th):  # Newton's method on plain values
        x = x0
        for _ in range(60):
            x = x - (x ** 3 - th) / (3 * x ** 2)
        return x
    return solver


@pytest.mark.parametrize("solve", ["gmres", "cg", "dense"])
def test_custom_root_cube_root(solve):
    solver = _cube_root(solve)
    th = nd.tensor([8.0, 27.0, 2.0])
    x0 = nd.ones(3)
    r = np.cbrt(host(th))
    d1, d2 = 1 / (3 * r ** 2), -2 / 9 * host(th) ** (-5 / 3)
    close(solver(x0, th), r)
    close(grad(lambda t: solver(x0, t).sum())(th), d1, rtol=1e-9)
    close(jacrev(lambda t: solver(x0, t))(th), np.diag(d1), rtol=1e-9, atol=1e-12)
    close(jvp(lambda t: solver(x0, t), (th,), (nd.ones(3),))[1], d1, rtol=1e-9)
    close(jacfwd(lambda t: solver(x0, t))(th), np.diag(d1), rtol=1e-9, atol=1e-12)
    close(hessian(lambda t: solver(x0, t).sum())(th), np.diag(d2), rtol=1e-8, atol=1e-12)
    thr = nd.tensor(host(th), requires_grad=True)
    (g,) = autograd_grad(solver(x0, thr).sum(), thr, create_graph=True)
    close(g, d1, rtol=1e-9)
    close(autograd_grad(g.sum(), thr)[0], d2, rtol=1e-8)


def test_custom_root_quadratic_minimiser():
    rng = np.random.default_rng(0)
    M = rng.normal(size=(4, 4))
    A = nd.tensor(M @ M.T + 4 * np.eye(4))

    def grad_f(x, b):  # the gradient of 1/2 x'Ax - b'x
        return A @ x - b

    @custom_root(grad_f, solve="cg")
    def minimise(x0, b):
        return nd.linalg.solve(A, b)
    b = nd.tensor(rng.normal(size=4))
    close(jacrev(lambda b: minimise(nd.zeros(4), b))(b), np.linalg.inv(host(A)), rtol=1e-8,
          atol=1e-10)
    g = grad(lambda b: minimise(nd.zeros(4), b).sum())(b)
    close(g, np.linalg.solve(host(A), np.ones(4)), rtol=1e-8)


def test_custom_fixed_point():
    T = lambda x, th: nd.cos(th * x)  # noqa: E731

    @custom_fixed_point(T)
    def iterate(x0, th):
        x = x0
        for _ in range(300):
            x = T(x, th)
        return x
    th = nd.tensor(0.8)
    x = iterate(nd.tensor(0.5), th)
    close(x, np.cos(0.8 * host(x)))
    s = np.sin(0.8 * host(x))
    expected = -host(x) * s / (1 + 0.8 * s)
    close(grad(lambda t: iterate(nd.tensor(0.5), t))(th), expected, rtol=1e-9)
    close(jvp(lambda t: iterate(nd.tensor(0.5), t), (th,), (nd.tensor(1.0),))[1], expected,
          rtol=1e-9)


def test_custom_root_failure_refuses_derivatives():
    # a solver's report of failure is judged by the optimality condition (Note
    # [Differentiating a flagged solution]): refused off the root, warned at it
    def flagged(offset):
        @custom_root(lambda x, th: x - th, has_aux=True,
                     _public=dict(name="my_solver", failure=lambda out: out[1]))
        def solver(x0, th):
            return th * 1.0 + offset, "Maximum number of iterations has been exceeded."
        return lambda t: solver(nd.tensor(0.0), t)[0]
    th = nd.tensor(1.0)
    close(flagged(0.5)(th), 1.5)
    with pytest.raises(RuntimeError, match=r"^my_solver: cannot differentiate the solution: "
                       r"Maximum number of iterations.*largest residual is 5\.00e-01"):
        grad(flagged(0.5))(th)
    with pytest.warns(RuntimeWarning, match="my_solver: Maximum number.*rounding level"):
        close(grad(flagged(0.0))(th), 1.0)
    with pytest.raises(ValueError, match="solve must be"):
        custom_root(lambda x: x, solve="lu")


def test_calls_without_a_rule_or_with_keywords_are_refused():
    f = custom_vjp(lambda x: x * 2.0)
    g = custom_jvp(lambda x: x * 2.0)
    x = nd.tensor([1.0], requires_grad=True)
    with pytest.raises(AttributeError, match=r"No VJP defined .* call defvjp\(fwd, bwd\)"):
        f(x)
    with pytest.raises(AttributeError, match=r"No JVP defined .* call defjvp\(rule\)"):
        g(x)
    with pytest.raises(TypeError, match="custom_jvp function takes positional arguments"):
        g(x=x)


# --------------------------------------------------------------------------- host computations
# A custom_jvp whose function makes a fresh tensor from a host computation (SciPy) and whose
# rule calls the function again: under .backward()/autograd.grad the rule's transpose runs
# the Function on inputs that require grad at the bottom while vjp's level is visible; the
# fresh output was lifted into that level with the bottom's node, and the level's pass ran
# the Function's backward inside its own without end (Note [Functions under transforms]).
# vonmises.ppf's derivative in q is 1 / pdf(ppf), its second k sin(y) / pdf(ppf)^2; norm's
# ppf with a scale s: dy/dq = 1 / pdf(y; s), dy/ds = y / s.
Q = np.array([0.3, 0.6, 0.85])
KAPPA = 2.0


def _vonmises_ppf(calls_again, nargs):
    st = pytest.importorskip("scipy.stats")

    def ppf(q, k):
        return nd.tensor(st.vonmises.ppf(host(q), host(k)))

    def dens(y, k):
        return nd.exp(k * nd.cos(y)) / (2 * np.pi * nd.special.i0(k))

    if nargs == 2:
        @custom_jvp
        def f(q, k):
            return ppf(q, k)

        @f.defjvp
        def _(primals, tangents):
            (q, k), (tq, _tk) = primals, tangents
            y = f(q, k) if calls_again else ppf(q, k)
            return y, tq / dens(y, k)
        return lambda q, k=None: f(q, nd.tensor(KAPPA) if k is None else k)

    @custom_jvp
    def g(q):
        return ppf(q, nd.tensor(KAPPA))

    @g.defjvp
    def _(primals, tangents):
        (q,), (tq,) = primals, tangents
        y = g(q) if calls_again else ppf(q, nd.tensor(KAPPA))
        return y, tq / dens(y, nd.tensor(KAPPA))
    return lambda q, k=None: g(q)


def _vonmises_closed_forms():
    st = pytest.importorskip("scipy.stats")
    y = st.vonmises.ppf(Q, KAPPA)
    p = st.vonmises.pdf(y, KAPPA)
    # y' = 1/p(y); p'(y) = -k sin(y) p(y), so y'' = -p'(y) y' / p(y)^2 = k sin(y) / p(y)^2
    return y, 1 / p, KAPPA * np.sin(y) / p ** 2


@pytest.mark.parametrize("nargs", [1, 2], ids=["one-arg", "two-args"])
@pytest.mark.parametrize("calls_again", [True, False], ids=["rule-calls-f", "rule-on-host"])
def test_custom_jvp_of_a_host_computation_in_every_reverse_transform(nargs, calls_again):
    f = _vonmises_ppf(calls_again, nargs)
    y, d1, d2 = _vonmises_closed_forms()
    q = nd.tensor(Q, requires_grad=True)
    close(f(q), y)
    nd.sum(f(q)).backward()
    close(q.grad, d1, rtol=1e-10)
    close(autograd_grad(nd.sum(f(q)), q)[0], d1, rtol=1e-10)
    close(grad(lambda v: nd.sum(f(v)))(nd.tensor(Q)), d1, rtol=1e-10)
    close(jacrev(f)(nd.tensor(Q)), np.diag(d1), rtol=1e-10)
    close(jvp(f, (nd.tensor(Q),), (nd.ones(3),))[1], d1, rtol=1e-10)
    if not calls_again:
        return  # (the rule's y is then a constant: its second derivative is not y'')
    # second order: the rule is differentiable (through f again)
    (g,) = autograd_grad(nd.sum(f(q)), q, create_graph=True)
    close(g, d1, rtol=1e-10)
    close(autograd_grad(nd.sum(g), q)[0], d2, rtol=1e-9)
    q.grad = None
    (g,) = autograd_grad(nd.sum(f(q)), q, create_graph=True)
    nd.sum(g).backward()
    close(q.grad, d2, rtol=1e-9)
    close(grad(grad(lambda v: nd.sum(f(v))))(nd.tensor(Q[0])), d2[0], rtol=1e-9)
    close(hessian(lambda v: nd.sum(f(v)))(nd.tensor(Q)), np.diag(d2), rtol=1e-9, atol=1e-12)


def test_custom_jvp_of_a_host_computation_with_a_second_input_that_requires_grad():
    # the reported case with kappa requiring grad too (its tangent unused by the rule: the
    # rule's derivative in it is zero), and norm.ppf with a scale, whose rule has both parts
    st = pytest.importorskip("scipy.stats")
    f = _vonmises_ppf(True, 2)
    y, d1, _ = _vonmises_closed_forms()
    q = nd.tensor(Q, requires_grad=True)
    k = nd.tensor(KAPPA, requires_grad=True)
    nd.sum(f(q, k)).backward()
    close(q.grad, d1, rtol=1e-10)
    close(k.grad, 0.0)

    @custom_jvp
    def norm_ppf(q, s):
        return nd.tensor(st.norm.ppf(host(q), scale=host(s)))

    @norm_ppf.defjvp
    def _(primals, tangents):
        (q, s), (tq, ts) = primals, tangents
        y = norm_ppf(q, s)
        pdf = nd.exp(-0.5 * (y / s) ** 2) / (s * np.sqrt(2 * np.pi))
        return y, tq / pdf + ts * y / s

    S = 1.7
    yn = st.norm.ppf(Q, scale=S)
    dq, ds = 1 / st.norm.pdf(yn, scale=S), yn / S
    q = nd.tensor(Q, requires_grad=True)
    s = nd.tensor(S, requires_grad=True)
    nd.sum(norm_ppf(q, s)).backward()
    close(q.grad, dq, rtol=1e-10)
    close(s.grad, ds.sum(), rtol=1e-10)
    gq, gs = autograd_grad(nd.sum(norm_ppf(q, s)), (q, s))
    close(gq, dq, rtol=1e-10)
    close(gs, ds.sum(), rtol=1e-10)
    gq, gs = grad(lambda a, b: nd.sum(norm_ppf(a, b)), argnums=(0, 1))(nd.tensor(Q),
                                                                      nd.tensor(S))
    close(gq, dq, rtol=1e-10)
    close(gs, ds.sum(), rtol=1e-10)
    # second order in s: dy/ds = y / s is constant in s (y is linear in s): zero
    (g,) = autograd_grad(nd.sum(norm_ppf(q, s)), s, create_graph=True)
    close(autograd_grad(g, s)[0], 0.0, atol=1e-10)


# --------------------------------------------------------------------------- under vmap
def _counted_sin_vjp(scale, vmap_method):
    calls = {"fwd": 0, "bwd": 0}

    def fwd(x):
        calls["fwd"] += 1
        return nd.sin(x), nd.cos(x)

    def bwd(c, g):
        calls["bwd"] += 1
        return (scale * c * g,)
    f = custom_vjp(nd.sin, vmap_method=vmap_method)
    f.defvjp(fwd, bwd)
    f.defjvp(lambda p, t: (nd.sin(p[0]), scale * nd.cos(p[0]) * t[0]))
    return f, calls


@pytest.mark.parametrize("vmap_method", ["vectorized", "sequential"])
@pytest.mark.parametrize("scale", [1.0, 2.0], ids=["correct", "deliberately-2x"])
def test_custom_vjp_under_vmap_in_every_composition(vmap_method, scale, loop_warnings):
    # the rule (not autodiff of sin) in every order of vmap and a derivative transform; a
    # vectorized rule runs fwd and bwd once for the batch, a sequential one per element (and
    # a vectorized one too under a level outside the vmap); vmap's warning names it and why
    f, calls = _counted_sin_vjp(scale, vmap_method)
    xs = nd.tensor(X)
    d1 = scale * np.cos(X)
    per_call = 1 if vmap_method == "vectorized" else len(X)
    why = ("declared with vmap_method='sequential'" if vmap_method == "sequential" else
           RECORDED_OUTSIDE)
    with pytest.warns(UserWarning, match="vmap: the custom_vjp function sin runs once") as seen:
        close(vmap(grad(f))(xs), d1)
        assert calls == {"fwd": per_call, "bwd": per_call}
        close(grad(lambda v: vmap(f)(v).sum())(xs), d1)          # (a level outside the vmap:
        close(vmap(jacrev(f))(xs[:, None]), d1[:, None, None])     #  per element, below it)
        close(vmap(lambda v: jvp(f, (v,), (nd.ones_like(v),))[1])(xs), d1)
        close(vmap(lambda v: vjp(f, v)[1](nd.ones_like(v))[0])(xs), d1)
        # second order through the rule: d²/dx² [f(x) x] = 2 f'(x) + x f''(x), f' the rule's
        # scale * cos, whose own derivative (autodiff of bwd) is -scale * sin; per element,
        # only first derivatives
        second = vmap(grad(grad(lambda v: f(v) * v)))
        if vmap_method == "vectorized":
            close(second(xs), 2 * d1 - X * scale * np.sin(X))
        else:
            with pytest.raises(NotImplementedError, match="once per batch element, which "
                                                          "supports first derivatives only"):
                second(xs)
    assert loop_messages(seen) == [f"vmap: the custom_vjp function sin runs once per batch element "
                            f"(a Python loop): {why}"]


def test_custom_jvp_under_vmap_in_every_composition(loop_warnings):
    f = _sin_jvp(2.0)                      # deliberately twice the derivative
    xs = nd.tensor(X)
    d1 = 2.0 * np.cos(X)
    close(vmap(grad(f))(xs), d1)
    # a level outside the vmap records it: once per element, and vmap says so
    with pytest.warns(UserWarning, match="vmap: the custom_jvp function f runs once") as seen:
        close(grad(lambda v: vmap(f)(v).sum())(xs), d1)
    close(vmap(jacfwd(f))(xs), d1)
    close(vmap(lambda v: jvp(f, (v,), (nd.ones_like(v),))[1])(xs), d1)
    assert loop_messages(seen) == [f"vmap: the custom_jvp function f runs once per batch element "
                            f"(a Python loop): {RECORDED_OUTSIDE}"]


def test_vmap_method_is_checked():
    with pytest.raises(ValueError, match="vmap_method must be one of"):
        custom_vjp(nd.sin, vmap_method="batched")


class _Cube(Cube):
    calls = 0

    @staticmethod
    def forward(ctx, x):
        type(ctx)._forward_cls.calls += 1
        return Cube.forward(ctx, x)


class _VectorizedCube(_Cube):
    generate_vmap_rule = True
    calls = 0


@pytest.mark.parametrize("cls", [_Cube, _VectorizedCube], ids=["per-element", "generate_vmap_rule"])
def test_functions_under_vmap_in_every_composition(cls, loop_warnings):
    # vmap's warning names the user's Function and why it loops: its class does not set
    # generate_vmap_rule, or (with it set) a level outside the vmap records it
    xs = nd.tensor(X)
    cls.calls = 0
    name = f"vmap: the custom Function {cls.__name__} runs once"
    with pytest.warns(UserWarning, match=name) as seen:
        close(vmap(grad(cls.apply))(xs), 3 * X ** 2)
        assert cls.calls == (1 if cls.generate_vmap_rule else len(X))
        close(grad(lambda v: vmap(cls.apply)(v).sum())(xs), 3 * X ** 2)
        if cls.generate_vmap_rule:
            close(vmap(grad(grad(cls.apply)))(xs), 6 * X)
        else:
            with pytest.raises(NotImplementedError, match="generate_vmap_rule = True"):
                vmap(grad(grad(cls.apply)))(xs)
        inner = grad(lambda w: vmap(cls.apply)(w).sum())      # (levels outside the vmap: any
        close(grad(lambda v: inner(v).sum())(xs), 6 * X)        #  order, per element below)
        close(vmap(lambda v: jvp(cls.apply, (v,), (nd.ones_like(v),))[1])(xs), 3 * X ** 2)
        close(vmap(jacrev(cls.apply))(xs[:, None]), 3 * X[:, None, None] ** 2)
        xr = nd.tensor(X, requires_grad=True)                   # the plain graph, through vmap
        (vmap(cls.apply)(xr) + xr).sum().backward()
    close(xr.grad, 3 * X ** 2 + 1)
    why = (RECORDED_OUTSIDE if cls.generate_vmap_rule else
           "its class does not set generate_vmap_rule = True (set it when its forward and "
           "backward are written with ndgrad operations, which vmap batches)")
    assert loop_messages(seen) == [f"vmap: the custom Function {cls.__name__} runs once per batch "
                            f"element (a Python loop): {why}"]
