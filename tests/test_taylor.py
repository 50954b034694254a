"""Taylor mode (ndgrad.func.jet, derivatives): every primitive's Taylor rule against nested
forward mode, closed forms, and jet composed with the other transforms."""

from __future__ import annotations

import re
from math import factorial
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ndgrad as nd
from ndgrad.core.ops import REGISTRY
from ndgrad.core.ops import series as series_rules
from ndgrad.func import derivatives, jet
from ndgrad.functional.taylor import _nested
from registry_harness import FLOAT, Sample, assert_close, cases, draw, require
from support import host

ORDER = 4
PRIMITIVES = sorted(n for n, op in REGISTRY.items() if op.differentiable)


def _np(t):
    return t.detach().cpu().numpy()


def _random_series(rng, x, K=ORDER):
    """K derivative coefficients for input x (scaled down: higher orders of a path)."""
    out = []
    for k in range(1, K + 1):
        c = rng.standard_normal(x.shape) / k
        if x.dtype.kind == "c":
            c = c + 1j * rng.standard_normal(x.shape) / k
        out.append(nd.tensor(c.astype(x.dtype), dtype=x.dtype))
    return out


def _check_rule(name, dtype, data):
    op = REGISTRY[name]
    require(op, "jvp", "fd")
    sample = draw(data, op, dtype, max_side=3, max_dims=2)
    if not sample.pos:
        pytest.skip(f"{name}: this sample has no floating input")
    _check_sample(name, sample, data.draw(st.integers(0, 2 ** 16), label="seed"))


def _check_sample(name, sample, seed):
    rng = np.random.default_rng(seed)
    floats = [nd.tensor(a, dtype=a.dtype) for a in sample.floats]
    series = [_random_series(rng, a) for a in sample.floats]
    f = sample.function()
    prim, got = jet(f, tuple(floats), tuple(series))
    expected = _nested(f, tuple(floats), tuple(series), ORDER)
    for i, (o, g) in enumerate(zip(prim, got)):
        if o.dtype.kind not in "fc":
            continue
        for k in range(ORDER):
            assert_close(_np(g[k]), host(expected[k][i]),
                         f"{name}: Taylor coefficient {k + 1} of output {i}",
                         rtol=1e-6, atol=1e-8)


@pytest.mark.cpu_only("Taylor rules are device independent; the device cases run below")
@pytest.mark.parametrize("name, dtype", cases(PRIMITIVES))
@settings(max_examples=3, deadline=None)
@given(data=st.data())
def test_taylor_rule_matches_nested_forward_mode(name, dtype, data):
    """Every differentiable primitive: its Taylor rule (declared, derived from its kind, or
    the nested-jvp fallback) to order 4 equals the derivatives of ``op(x(t))`` by nested
    forward mode, on drawn inputs and random series."""
    _check_rule(name, dtype, data)


def test_a_wrong_taylor_coefficient_is_caught(monkeypatch):
    """The check above fails when one coefficient of a rule is off."""
    rule = series_rules.RULES["tanh"]

    def wrong(F, series, out, x):
        ys = rule(F, series, out, x)
        ys[2] = ys[2] * 1.001
        return ys

    sample = Sample(REGISTRY["tanh"], (np.array([0.3, -0.8, 1.1]),), {})
    _check_sample("tanh", sample, 0)  # the right rule passes
    monkeypatch.setattr(REGISTRY["tanh"], "taylor", wrong)
    with pytest.raises(AssertionError, match="Taylor coefficient 3"):
        _check_sample("tanh", sample, 0)


def test_ops_without_a_rule_of_their_own_are_listed_in_the_docs():
    """The ops whose series come from the nested-jvp fallback are the ones the docs list."""
    fallback = sorted(n for n in PRIMITIVES if REGISTRY[n].taylor is None)
    text = (Path(__file__).resolve().parents[1] / "docs" / "higher_order.rst").read_text()
    listed = re.search(r"\.\. fallback-ops-start\n(.*?)\.\. fallback-ops-end", text, re.S)
    assert listed, "docs/higher_order.rst lists the fallback ops between the markers"
    names = sorted(re.findall(r"``([\w.]+)``", listed.group(1)))
    assert names == fallback


# ------------------------------------------------------------------------ closed forms
def _tanh_derivatives(x, n):
    """Derivatives of tanh as polynomials in t = tanh(x): p_{k+1}(t) = p_k'(t) (1 - t^2)."""
    t = np.tanh(x)
    p = np.polynomial.Polynomial([0.0, 1.0])
    out = []
    for _ in range(n + 1):
        out.append(p(t))
        p = p.deriv() * np.polynomial.Polynomial([1.0, 0.0, -1.0])
    return out


def test_sixth_derivative_of_tanh():
    x0 = np.linspace(-2.0, 2.0, 50)
    got = derivatives(nd.tanh, nd.tensor(x0), 6)
    for k, (g, e) in enumerate(zip(got, _tanh_derivatives(x0, 6))):
        np.testing.assert_allclose(_np(g), e, rtol=1e-10, atol=1e-12, err_msg=f"order {k}")


@pytest.mark.parametrize("f, closed", [
    (nd.exp, lambda x, k: np.exp(x)),
    (nd.sin, lambda x, k: np.sin(x + k * np.pi / 2)),
    (nd.cos, lambda x, k: np.cos(x + k * np.pi / 2)),
    (nd.log, lambda x, k: np.log(x) if k == 0 else (-1) ** (k - 1) * factorial(k - 1) / x ** k),
    (nd.sqrt, lambda x, k: np.prod([0.5 - j for j in range(k)]) * x ** (0.5 - k)),
    (nd.reciprocal, lambda x, k: (-1) ** k * factorial(k) / x ** (k + 1)),
    (lambda v: v ** 3.5, lambda x, k: np.prod([3.5 - j for j in range(k)]) * x ** (3.5 - k)),
    (nd.sinh, lambda x, k: np.sinh(x) if k % 2 == 0 else np.cosh(x)),  # the generic rule
])
def test_derivatives_of_elementary_functions(f, closed):
    x0 = np.array([0.4, 1.3, 2.2])
    got = derivatives(f, nd.tensor(x0), 5)
    for k, g in enumerate(got):
        np.testing.assert_allclose(_np(g), closed(x0, k), rtol=1e-9, err_msg=f"order {k}")


def test_jet_of_a_product_and_a_quotient_with_two_inputs():
    # x(t) = a + t, y(t) = b + 2t:  x y = ab + (2a + b) t + 2 t^2;  x / y by its series
    a, b = nd.tensor(1.5), nd.tensor(0.5)
    one, two, zero = nd.tensor(1.0), nd.tensor(2.0), nd.tensor(0.0)
    _, ys = jet(lambda x, y: x * y, (a, b), ([one, zero, zero], [two, zero, zero]))
    assert [v.item() for v in ys] == [2 * 1.5 + 0.5, 4.0, 0.0]
    _, qs = jet(lambda x, y: x / y, (a, b), ([one, zero, zero], [two, zero, zero]))
    ts = np.array([-1e-3, 0.0, 1e-3])
    q = (1.5 + ts) / (0.5 + 2 * ts)
    np.testing.assert_allclose(qs[1].item(), (q[2] - 2 * q[1] + q[0]) / 1e-6, rtol=1e-4)


def test_pytree_outputs_and_inputs_without_series_effect():
    x = nd.tensor([0.2, 0.7])
    ones, zeros = nd.ones(2), nd.zeros(2)
    out, ser = jet(lambda v: {"a": nd.exp(v), "b": (v.sum(), nd.ones(3))}, (x,),
                   ([ones, zeros],))
    np.testing.assert_allclose(_np(ser["a"][1]), np.exp([0.2, 0.7]))
    assert ser["b"][0][0].item() == 2.0 and ser["b"][0][1].item() == 0.0
    np.testing.assert_array_equal(_np(ser["b"][1][0]), np.zeros(3))  # no dependence: zeros


def test_jet_errors():
    x = nd.tensor([0.2, 0.7])
    with pytest.raises(ValueError, match="different lengths"):
        jet(lambda a, b: a * b, (x, x), ([x], [x, x]))
    with pytest.raises(ValueError, match="coefficient 1 of series 0 has shape"):
        jet(nd.exp, (x,), ([nd.ones(3)],))
    with pytest.raises(TypeError, match="must be tuples"):
        jet(nd.exp, x, [x])
    with pytest.raises(TypeError, match="must return Tensors"):
        jet(lambda v: 3, (x,), ([x],))
    with pytest.raises(ValueError, match="order must be >= 0"):
        derivatives(nd.exp, x, -1)


# ------------------------------------------------------------------------ compositions
def test_jet_composes_with_vmap_grad_and_itself(device):
    x0 = np.array([0.3, -0.8, 1.1])

    def third(v):  # third derivative of tanh at each v (elementwise), by jet
        return derivatives(nd.tanh, v, 3)[3]

    e3 = _tanh_derivatives(x0, 4)
    # vmap over points
    got = nd.func.vmap(lambda v: third(v))(nd.tensor(x0))
    np.testing.assert_allclose(_np(got), e3[3], rtol=1e-10)
    # reverse mode through a jet: the gradient of a Taylor coefficient is the next one
    g = nd.func.grad(lambda v: third(v).sum())(nd.tensor(x0))
    np.testing.assert_allclose(_np(g), e3[4], rtol=1e-10)
    x = nd.tensor(x0, requires_grad=True)
    third(x).sum().backward()
    np.testing.assert_allclose(_np(x.grad), e3[4], rtol=1e-10)
    # forward mode of a jet, and a jet of a jet
    _, t = nd.func.jvp(third, (nd.tensor(x0),), (nd.ones(3),))
    np.testing.assert_allclose(_np(t), e3[4], rtol=1e-10)
    outer = derivatives(third, nd.tensor(x0), 1)[1]
    np.testing.assert_allclose(_np(outer), e3[4], rtol=1e-10)


@pytest.mark.parametrize("name", ["tanh", "multiply", "matmul", "logsumexp", "sinh",
                                  "getitem"])
@settings(max_examples=2, deadline=None)
@given(data=st.data())
def test_taylor_rules_on_every_device(name, data):
    """A few rules of each kind (recurrence, multilinear, fallback, elementwise, linear) on
    the device under test."""
    _check_rule(name, FLOAT, data)


def test_in_place_operations_and_custom_functions_inside_jet():
    x0 = np.array([0.3, 0.9])

    def f(v):
        y = v * 1.0
        y.mul_(2.0)          # in place on a tensor carrying a series
        y[0] = y[0] * 1.5
        return nd.sin(y)

    got = derivatives(f, nd.tensor(x0), 3)
    scale = np.array([3.0, 2.0])
    for k, g in enumerate(got):
        np.testing.assert_allclose(_np(g), scale ** k * np.sin(scale * x0 + k * np.pi / 2),
                                   rtol=1e-12, err_msg=f"order {k}")

    class Cube(nd.autograd.Function):
        @staticmethod
        def forward(ctx, v):
            ctx.save_for_forward(v)
            return v ** 3

        @staticmethod
        def backward(ctx, g):
            raise AssertionError("jet does not run backward")

        @staticmethod
        def jvp(ctx, t):
            (v,) = ctx.saved_tensors
            return 3 * v ** 2 * t

    got = derivatives(lambda v: Cube.apply(v), nd.tensor(x0), 4)
    for k, e in enumerate([x0 ** 3, 3 * x0 ** 2, 6 * x0, 6 + 0 * x0, 0 * x0]):
        np.testing.assert_allclose(_np(got[k]), e, rtol=1e-12, atol=1e-12)
