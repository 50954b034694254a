"""Taylor mode (ndgrad.func.jet, derivatives): every primitive's Taylor rule against nested
forward mode, closed forms, and jet composed with the other transforms."""

from __future__ import annotations

import re
from itertools import product
from math import factorial
from pathlib import Path

import numpy as np
import pytest
import scipy.special as sp
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import ndgrad as nd
from ndgrad.core.backend import NUMPY
from ndgrad.core.ops import REGISTRY
from ndgrad.core.ops.registry import ELEMENTWISE
from ndgrad.core.ops import series as series_rules
from ndgrad.func import derivatives, jet
from ndgrad.functional.taylor import _nested
from registry_harness import (FLOAT, Sample, assert_close, cases, draw, elementwise_function,
                              outs, paired, points_in_domain, public_call, random_like,
                              require, view_outputs)
from registry_matrix import differentiable_without, each, family, is_primitive
from support import close, host

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


@family("taylor", lambda name, op, dtype: is_primitive(name) and
        differentiable_without("jvp", "fd")(name, op, dtype))
def test_taylor(bank):
    """Every differentiable primitive (a family of the registry matrix, Note [The registry
    matrix]): its Taylor rule (declared, derived from its kind, or the nested-jvp fallback)
    to order 4 equals the derivatives of ``op(x(t))`` by nested forward mode, on the bank's
    small samples and random series (seeded by the sample). The device cases run in
    test_taylor_rules_on_every_device."""
    each(bank.differentiable("composed"), lambda e: _check_sample(bank.name, e.sample, e.index),
         f"{bank.name} ({bank.dtype}) Taylor rule")


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


INF, NAN = np.inf, np.nan


@pytest.mark.parametrize("f, x0, expected", [
    # integer powers are polynomials: exact at 0 (each order's own value, not nan)
    (lambda v: v ** 2, 0.0, [0, 0, 2, 0]),
    (lambda v: v ** 2.0, 0.0, [0, 0, 2, 0]),
    (lambda v: v ** nd.tensor(2.0), 0.0, [0, 0, 2, 0]),
    (lambda v: nd.float_power(v, 2), 0.0, [0, 0, 2, 0]),
    (lambda v: v ** 1, 0.0, [0, 1, 0, 0]),
    (lambda v: v ** 0, 0.0, [1, 0, 0, 0]),
    (lambda v: v ** 3, 0.0, [0, 0, 0, 6]),
    (lambda v: nd.power(v, 4), 0.0, [0, 0, 0, 0, 24, 0]),
    # ... and at a tiny base, whose power underflows (it gave zeros, silently)
    (lambda v: v ** 2, 1e-170, [0, 2e-170, 2, 0]),
    (lambda v: v ** 3, 1e-170, [0, 0, 6e-170, 6]),
    # negative integers: the poles' infinities, with the sign of the zero
    (lambda v: v ** -1, 0.0, [INF, -INF, INF, -INF]),
    (lambda v: v ** -1, -0.0, [-INF, -INF, -INF, -INF]),
    (lambda v: v ** -2, 0.0, [INF, -INF, INF, -INF]),
    (lambda v: v ** -2, -0.0, [INF, INF, INF, INF]),
    (nd.reciprocal, 0.0, [INF, -INF, INF, -INF]),
    # real powers at 0: 0 where the derivative of that order vanishes, else its infinity
    (lambda v: v ** 0.5, 0.0, [0, INF, -INF, INF]),
    (lambda v: v ** 0.5, -0.0, [0, INF, -INF, INF]),
    (lambda v: v ** 2.5, 0.0, [0, 0, 0, INF]),
    (lambda v: v ** -0.5, 0.0, [INF, -INF, INF, -INF]),
    (nd.sqrt, 0.0, [0, INF, -INF, INF]),
    (nd.log, 0.0, [-INF, INF, -INF, INF]),
    (nd.log, -0.0, [-INF, -INF, -INF, -INF]),
    # cbrt: +inf from both sides at order 1 (it was sign(x) * abs(x) ** (1/3): nan)
    (nd.cbrt, 0.0, [0, INF, -INF, INF]),
    (nd.cbrt, -0.0, [0, INF, INF, INF]),
    # undefined: a negative base with a real exponent
    (lambda v: v ** 0.5, -1.0, [NAN, NAN, NAN, NAN]),
])
def test_derivatives_of_powers_at_zero_and_tiny_bases(f, x0, expected):
    """``derivatives`` of ``x ** p`` (every form: a number, a float, a tensor exponent,
    ``float_power``), ``reciprocal``, ``sqrt`` and ``log`` at 0, -0 and a tiny base equal the
    closed form ``p (p-1) ... (p-k+1) x0 ** (p-k)`` (Note [Taylor mode at singular points]):
    exact values, infinities with their signs, nan only where the function is undefined."""
    with np.errstate(all="ignore"):
        got = derivatives(f, nd.tensor(x0), len(expected) - 1)
    np.testing.assert_allclose(np.array([float(g) for g in got]), np.array(expected, float),
                               rtol=1e-15, atol=0)


def test_cbrt_is_exact_real_and_infinitely_steep_at_zero():
    """``cbrt`` is NumPy's (exact on cubes), real only, and its derivative at 0 is +inf by
    nested reverse mode too (the composite ``sign(x) * abs(x) ** (1/3)`` gave nan)."""
    assert nd.cbrt(nd.tensor(27.0)).item() == 3.0
    with np.errstate(all="ignore"):
        g = nd.func.grad(lambda v: nd.cbrt(v).sum())(nd.tensor([0.0, -0.0, 8.0]))
    close(g, [INF, INF, 1 / 12], rtol=1e-15)
    with pytest.raises(TypeError, match="cbrt: complex input is not supported"):
        nd.cbrt(nd.tensor([1 + 1j]))


def test_powers_along_curved_paths_and_tensor_exponents_at_zero():
    """An integer power along any path through 0 is exact; a tensor of exponents mixes
    polynomials, real powers and poles element by element; an exponent carrying a series
    of its own (the generic rule) agrees at 0."""
    z = nd.tensor(0.0)
    # x(t) = 2t + 3t^2/2 + 5t^3/6: x^3 = 8t^3 + ..., so y3 = 48 (and y1 = y2 = 0)
    _, ys = jet(lambda v: v ** 3, (z,), ([nd.tensor(2.0), nd.tensor(3.0), nd.tensor(5.0)],))
    assert [float(y) for y in ys] == [0.0, 0.0, 48.0]
    # x^2 along the same path: 2 x1^2 = 8, 6 x1 x2 = 36
    _, ys = jet(lambda v: v ** 2, (z,), ([nd.tensor(2.0), nd.tensor(3.0), nd.tensor(5.0)],))
    assert [float(y) for y in ys] == [0.0, 8.0, 36.0]
    p = nd.tensor([0.0, 1.0, 2.0, 3.0, 0.5, -1.0])
    with np.errstate(all="ignore"):
        got = np.array([_np(d) for d in derivatives(lambda v: v ** p, nd.zeros(6), 3)]).T
    np.testing.assert_array_equal(got, [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 2, 0], [0, 0, 0, 6],
                                        [0, INF, -INF, INF], [INF, -INF, INF, -INF]])
    # x ** y with y carrying a (zero) series: the generic elementwise rule
    zero, one = nd.tensor(0.0), nd.tensor(1.0)
    _, ys = jet(lambda a, b: a ** b, (z, nd.tensor(2.0)), ([one, zero, zero], [zero] * 3))
    assert [float(y) for y in ys] == [0.0, 2.0, 0.0]


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


# ------------------------------------------------------------------------ views and in-place
# Note [Views at the data levels] in ndgrad/core/data_level.py: a view's series follows an
# in-place change of its base (it kept the old one), a view written in place updates its
# base and the other views of it (a view without a series did not; one with a series was
# refused with NotImplementedError).
def _sin_squared_derivatives(x, v, K):
    """d^k/dt^k of sum sin(x + t v)^2 = sum (1 - cos(2 (x + t v))) / 2, k = 0..K."""
    return [np.sum((1 - np.cos(2 * x)) / 2)] + [
        np.sum(-0.5 * (2 * v) ** k * np.cos(2 * x + k * np.pi / 2)) for k in range(1, K + 1)]


def test_jet_of_a_view_taken_before_an_inplace_change_of_its_base():
    x0, v0 = np.array([0.4, -1.3, 0.8]), np.array([0.7, -0.2, 1.1])

    def f(x):
        y = x.clone()
        y0 = y[:2]          # taken before y changes: sin(x[:2]) afterwards
        y.sin_()
        return (y0 ** 2).sum()
    got = derivatives(f, nd.tensor(x0), 4, direction=nd.tensor(v0))
    close(nd.stack(got), _sin_squared_derivatives(x0[:2], v0[:2], 4), rtol=1e-12, atol=1e-12)


def test_jet_of_a_tensor_written_through_a_view_that_carries_no_series():
    x0, v0 = np.array([0.4, -1.3, 0.8]), np.array([0.7, -0.2, 1.1])

    def f(x):
        y = nd.zeros(3)
        u = y[1:]           # a second view of y, made before the write
        w = y[:2]
        w += 3 * x[:2]      # w and y carry no series before this line
        w *= x[1:]
        return y, u
    (y, u), (ys, us) = jet(f, (nd.tensor(x0),), ([nd.tensor(v0), nd.zeros(3)],))
    # y = [3 x0 x1, 3 x1 x2, 0]: first and second derivatives along v
    first = 3 * np.array([v0[0] * x0[1] + x0[0] * v0[1], v0[1] * x0[2] + x0[1] * v0[2], 0])
    second = 3 * np.array([2 * v0[0] * v0[1], 2 * v0[1] * v0[2], 0])
    close(y, 3 * np.array([x0[0] * x0[1], x0[1] * x0[2], 0]))
    close(nd.stack(ys), [first, second], rtol=1e-12, atol=1e-12)
    close(nd.stack(us), [first[1:], second[1:]], rtol=1e-12, atol=1e-12)
    close(u, y[1:])


def test_inplace_changes_of_views_that_carry_a_series_inside_jet():
    x0 = np.array([0.3, -0.6, 0.9, 0.2])

    def f(x):
        y = x * 1.0
        y[1:].exp_()                          # in place on a view (was NotImplementedError)
        m = y.reshape(2, 2)
        m[:, 0].mul_(x[2:])                   # a view of a view: y[0] and y[2]
        return y
    got = derivatives(f, nd.tensor(x0), 3)
    # y = [x0 x2, exp(x1), exp(x2) x3, exp(x3)] along v = ones: derivatives in closed form
    e = np.exp(x0)
    ref = [[x0[0] * x0[2], e[1], e[2] * x0[3], e[3]],
           [x0[0] + x0[2], e[1], e[2] * (x0[3] + 1), e[3]],
           [2, e[1], e[2] * (x0[3] + 2), e[3]],
           [0, e[1], e[2] * (x0[3] + 3), e[3]]]
    close(nd.stack(got), ref, rtol=1e-12, atol=1e-12)


def test_an_input_of_jet_changed_in_place_updates_its_views():
    x0 = np.array([0.5, -1.5, 2.0])

    def f(x):
        v = x[:2]           # a view of jet's input, taken before the input changes
        x.mul_(2.0)
        return v * x[1:]
    got = derivatives(f, nd.tensor(x0.copy()), 2)
    close(nd.stack(got), [4 * x0[:2] * x0[1:], 4 * (x0[:2] + x0[1:]), [8.0, 8.0]],
          rtol=1e-12)


WRITABLE_VIEWS = sorted(n for n, op in REGISTRY.items() if op.view and op.scatter is not None)
# (imag of a real array is a new array of zeros, never a view)
VIEW_CASES = [c for c in cases(WRITABLE_VIEWS) if tuple(c.values) != ("imag", FLOAT)]


def _scaled_through_views(op, k, extra, kwargs, write_view):
    """``x -> `` the k-th output of view op ``op`` of a copy ``y`` of ``x``, taken before ``y``
    is scaled in place by ``sum(re x)`` (``write_view`` False), or ``y`` after that view is
    scaled so (True); on Tensors, or on NumPy arrays, whose views share memory too."""
    def f(x):
        numpy = not isinstance(x, nd.Tensor)
        y = np.array(x) if numpy else x * 1.0   # (a 0-d array, not a NumPy scalar, too)
        view = outs(op.forward(NUMPY, y, *extra, **kwargs) if numpy
                    else public_call(op, [y], extra, kwargs))[k]
        target = view if write_view else y
        target *= np.real(x).sum() if numpy else nd.real(x).sum()
        out = y if write_view else view
        return np.array(out) if numpy else out
    return f


@pytest.mark.parametrize("name, dtype", VIEW_CASES)
@settings(max_examples=4, deadline=None)
@given(data=st.data())
def test_every_view_op_follows_inplace_changes_inside_jet(name, dtype, data):
    """Every output of a view op that views its input, taken before its base is scaled in
    place, and its base after the view is scaled: along ``x + t v`` both are polynomials of
    degree 2 in ``t``, so the reference coefficients are exact differences of the same steps
    in NumPy at t = 0, 1, -1."""
    op = REGISTRY[name]
    sample = draw(data, op, dtype)
    assume(isinstance(sample.args[0], np.ndarray))
    rng = np.random.default_rng(0)
    x, v = random_like(rng, sample.args[0]), random_like(rng, sample.args[0])
    extra, kwargs = sample.args[1:], sample.kwargs
    views = view_outputs(op, x, extra, kwargs)
    assume(views)
    for k in views:
        for write_view in (False, True):
            f = _scaled_through_views(op, k, extra, kwargs, write_view)
            c = [f(x + t * v) for t in (0.0, 1.0, -1.0)]
            y, (y1, y2) = jet(f, (nd.tensor(x),), ([nd.tensor(v), nd.tensor(0 * v)],))
            what = f"{name} output {k}, {'through the view' if write_view else 'stale view'}"
            assert_close(y, c[0], what, rtol=1e-12, atol=1e-12)
            assert_close(y1, (c[1] - c[2]) / 2, what, rtol=1e-10, atol=1e-10)
            assert_close(y2, c[1] - 2 * c[0] + c[2], what, rtol=1e-10, atol=1e-10)


def test_inplace_change_of_a_broadcast_view_inside_jet_names_jet():
    def f(x):
        b = nd.broadcast_to(x * 1.0, (2, 3))
        b.mul_(2.0)
        return b
    with pytest.raises(RuntimeError, match=r"jet: the in-place operation multiply changes a "
                                           r"view made by broadcast_to, which cannot be "
                                           r"written back"):
        jet(f, (nd.ones(3),), ([nd.ones(3)],))


@pytest.mark.parametrize("call, name", [
    (lambda f: derivatives(f, nd.ones(3), 2), "derivatives"),
    (lambda f: nd.func.hessian_diag(f)(nd.ones(3)), "hessian_diag"),
    (lambda f: nd.func.hessian_trace_estimate(f, nd.ones(3), 3, key=0),
     "hessian_trace_estimate"),
    (lambda f: nd.func.laplacian(f)(nd.ones(3)), "laplacian"),
    (lambda f: nd.func.biharmonic(f)(nd.ones(3)), "biharmonic"),
], ids=["derivatives", "hessian_diag", "hessian_trace_estimate", "laplacian", "biharmonic"])
def test_inplace_change_of_a_broadcast_view_names_what_the_user_called(call, name):
    # the jet level runs under these; its error said "jet"; biharmonic's two Forward
    # Laplacian levels said "laplacian"
    def f(x):
        b = nd.broadcast_to(x * 1.0, (2, 3))
        b.mul_(2.0)
        return b.sum()
    with pytest.raises(RuntimeError, match=rf"^{name}: the in-place operation multiply "
                                           r"changes a view made by broadcast_to"):
        call(f)


# ------------------------------------------------------------------------ singular points
# Every elementwise op at the special points of its domain (Note [Taylor mode at singular
# points] in ndgrad/core/ops/series.py): zeros of both signs, tiny values (whose powers
# underflow), the ends of many domains (+-1), flat tails (+-30), and integers and halves
# (the exponents where a power is a polynomial or has a branch point).
SPECIAL_POINTS = (0.0, -0.0, 1e-170, -1e-170, 0.5, 1.0, -1.0, 2.0, 3.0, 30.0, -30.0, -0.5,
                  1 / 3)
TINY = 1e-100  # below this, a reference that under- or overflowed is not a reference
SWEEP_ORDER = 3


def _grid(sample):
    """Per floating input, a column of points: every combination of the special points for
    up to two inputs; for more, each input through them with the others at the sample's."""
    nf = len(sample.pos)
    if nf <= 2:
        return [np.array(c) for c in zip(*product(SPECIAL_POINTS, repeat=nf))]
    base = [np.asarray(a).reshape(-1)[0] for a in sample.floats]
    rows = [base[:i] + [p] + base[i + 1:] for i in range(nf) for p in SPECIAL_POINTS]
    return [np.array(c) for c in zip(*rows)]


def _nested_reverse(f, xs, vs, K):
    """``[f, D f[v], ..., D^K f[v, ..., v]]`` of an elementwise ``f``, element by element,
    by nested reverse mode: ``autograd.grad(create_graph=True)`` of the sum, dotted with
    ``v`` (element j of the result depends on element j of each input only)."""
    xs = [x.detach().requires_grad_() for x in xs]
    cur = f(*xs)
    out = [_np(cur)]
    for _ in range(K):
        total = None
        if cur.requires_grad:
            gs = nd.autograd.grad(cur.sum(), xs, create_graph=True, allow_unused=True)
            for g, v in zip(gs, vs):
                if g is not None:
                    total = g * v if total is None else total + g * v
        cur = nd.zeros_like(cur) if total is None else total
        out.append(_np(cur))
    return out


def _limit_agrees(t, near):
    """Where nested differentiation gives nan at a point, Taylor mode's value ``t`` must be
    the limit of nested differentiation's values ``near`` at points approaching it along
    the path (from the side where they are defined): an infinity of the sign they take,
    growing, or a finite value they approach."""
    for far, closer in near:
        if np.isnan(far) or np.isnan(closer):
            continue
        if np.isinf(t):
            return np.sign(closer) == np.sign(t) and abs(closer) >= abs(far)
        return abs(closer - t) <= 1e-4 * max(1.0, abs(t))
    return False


def _sweep(name, sample):
    """The mismatches of Taylor mode against nested reverse mode (or, where that gives
    nan, against the limit) at the special points, for each way the inputs move: ``[(at a
    tiny point, what)]``."""
    f = elementwise_function(name, sample)
    cols = points_in_domain(f, _grid(sample))
    with nd.no_grad():
        n = len(cols)
        points = [nd.tensor(c) for c in cols]
        y0 = _np(f(*points))
    if y0.dtype.kind != "f":
        return []
    tiny = np.zeros(len(y0), dtype=bool)
    zero = np.zeros(len(y0), dtype=bool)
    for c in cols:
        tiny |= (c != 0) & (np.abs(c) < TINY)
        zero |= c == 0
    # the points to check: the op is defined there (not nan), and did not overflow (an
    # infinite value away from 0, as erfcx(-30) = 2 exp(900): not a pole)
    checked = ~np.isnan(y0) & (np.isfinite(y0) | zero)
    # (moving inputs, inputs carrying a zero series): each alone, each with the others
    # still, all together
    ways = [((i,), ()) for i in range(n)]
    if n > 1:
        ways += [((i,), tuple(j for j in range(n) if j != i)) for i in range(n)]
        ways += [(tuple(range(n)), ())]
    bad = []
    for moving, still in ways:
        carried = moving + still

        def g(*xs, carried=carried):
            full = list(points)
            for i, x in zip(carried, xs):
                full[i] = x
            return f(*full)

        def at(shift, carried=carried, moving=moving):
            return [points[i] + shift if i in moving else points[i] for i in carried]

        ones = [nd.ones_like(points[i]) if i in moving else nd.zeros_like(points[i])
                for i in carried]
        zero = nd.zeros_like(points[0])
        _, ys = jet(g, tuple(at(0.0)), tuple([v] + [zero] * (SWEEP_ORDER - 1) for v in ones))
        T = [y0] + [_np(c) for c in ys]
        R = _nested_reverse(g, at(0.0), ones, SWEEP_ORDER)
        near = None
        # at a tiny point, only each input alone: where several inputs carry series, the
        # derivative in x ** p's exponent, x ** p log x, is an underflowed power times an
        # overflowed series (docs/higher_order.rst)
        here = checked & ~tiny if carried != moving or len(moving) > 1 else checked
        for k in range(1, SWEEP_ORDER + 1):
            scale = np.max([np.where(np.isfinite(r), np.abs(r), 0) for r in R[:k + 1]], axis=0)
            for e in np.flatnonzero(here):
                t, r = T[k][e], R[k][e]
                if tiny[e] and not (np.isfinite(r) and 0 < abs(r) < 1e100):
                    continue  # the reference under- or overflowed
                if np.isnan(r):
                    if np.isnan(t):
                        continue
                    if near is None:  # nested forward mode, and the values approaching
                        forward = [y0] + [_np(d) for d in _nested(g, tuple(at(0.0)), tuple(
                            [v] + [zero] * (SWEEP_ORDER - 1) for v in ones), SWEEP_ORDER)]
                        near = [[_nested_reverse(g, at(s * d), ones, SWEEP_ORDER)
                                 for d in (1e-5, 1e-7)] for s in (1, -1)]
                    # a rule's own convention there (forward mode follows it too), or the
                    # limit
                    ok = t == forward[k][e] or _limit_agrees(
                        t, [(a[k][e], b[k][e]) for a, b in near])
                else:
                    ok = t == r or abs(t - r) <= 1e-7 * abs(r) + 1e-9 * scale[e]
                if not ok:
                    at_ = ", ".join(repr(float(c[e])) for c in cols)
                    bad.append((bool(tiny[e]), f"{name}({at_}), moving {moving}, still "
                                f"{still}: order {k} is {t!r}, nested differentiation {r!r}"))
    return bad


def _simplest(bank):
    """The bank's simplest small sample with a floating input (hypothesis' first draw: its
    arrays have one element)."""
    entries = [e for e in bank.small if e.sample.pos]
    assert entries, f"{bank.name}: no small sample has a floating input"
    return entries[0].sample


@family("taylor_special_points", lambda name, op, dtype: op.kind == ELEMENTWISE and
        op.differentiable and dtype == FLOAT, devices=["cpu"])  # (device independent)
def test_taylor_special_points(bank):
    """Every differentiable elementwise op (registered or composite), at zeros of both signs,
    tiny values, domain ends, flat tails and integer and half-integer points, in each input
    alone, with the others carrying a zero series, and all together: Taylor mode's
    derivatives to order 3 equal nested reverse mode's (an infinity with its sign; at a
    tiny point only where the reference neither under- nor overflowed), and where nested
    differentiation gives nan (0 * inf, inf - inf), Taylor mode gives nan or the limit of
    the derivative approaching the point, or what nested forward mode gives (an op's rule
    may set a value at a boundary, as ``special._gammainc_da``'s 0 at x = 0) (Note [Taylor
    mode at singular points])."""
    with np.errstate(all="ignore"):
        bad = _sweep(bank.name, _simplest(bank))
    # an op that declares notes["taylor_special_points"] (why its series overflow at tiny
    # points, where nested differentiation does not) is held to the other points only
    if (bank.op.notes or {}).get("taylor_special_points"):
        bad = [b for b in bad if not b[0]]
    assert not bad, f"{len(bad)} mismatches:\n" + "\n".join(what for _, what in bad[:12])




@pytest.mark.cpu_only("the special points are device independent")
@pytest.mark.parametrize("x", [1e-170, 1e-150, 2.0 ** -300])
def test_taylor_mode_of_the_incomplete_gamma_and_beta_at_tiny_x(x):
    """The densities inside betainc's and gammainc's rules in x were exp(xlogy(a - 1, x) ...):
    at x below about 1e-103 the log's series overflows from order 3 on, and Taylor mode's
    third derivative was -inf or nan where it is (a - 1)(a - 2) x^(a - 3) / B(a, b) (failed
    before the power form at tiny x, special.power_times_exp)."""
    a, b = 2.72936590562509, 1.6
    for f, third in [
            (lambda t: nd.special.betainc(a, b, t),
             (a - 1) * (a - 2) * x ** (a - 3) * (1 - x) ** (b - 1) / sp.beta(a, b)),
            (lambda t: nd.special.gammainc(a, t),
             (a - 1) * (a - 2) * x ** (a - 3) / sp.gamma(a))]:
        ds = derivatives(f, nd.tensor(x), 3)
        close(ds[3], third, rtol=1e-12)
        close(ds[1], x ** (a - 1) * (third / ((a - 1) * (a - 2) * x ** (a - 3))), rtol=1e-12)




@family("taylor_zero_inputs", lambda name, op, dtype: op.kind != ELEMENTWISE and
        op.differentiable and dtype == FLOAT, devices=["cpu"])  # (a singular matrix raises
# on the CPU only: CuPy's solvers give inf and nan)
def test_taylor_zero_inputs(bank):
    """Every other differentiable op (reductions, scans, products, linear algebra, shapes,
    registered or composite) with all its floating inputs zero: Taylor mode's directional
    derivatives to order 3 along random directions, paired with a random cotangent, equal
    nested reverse mode's wherever those are numbers; where the op's rules meet a singular
    matrix, both raise."""
    name = bank.name
    sample = _simplest(bank)
    rng = np.random.default_rng(0)
    f = sample.function()
    xs = [nd.tensor(np.zeros_like(a)) for a in sample.floats]
    vs = [nd.tensor(rng.standard_normal(a.shape)) for a in sample.floats]
    with nd.no_grad(), np.errstate(all="ignore"):
        try:
            outs = f(*xs)
        except (np.linalg.LinAlgError, ValueError) as e:
            # not defined at zero inputs: Taylor mode there raises the same error
            with pytest.raises(type(e)):
                jet(f, tuple(xs), tuple([v] + [nd.zeros_like(v)] * (SWEEP_ORDER - 1)
                                        for v in vs))
            return
    w = [nd.tensor(rng.standard_normal(tuple(o.shape))) if o.dtype.kind in "fc" else None
         for o in outs]
    K = SWEEP_ORDER

    def nested():
        leaves = [x.detach().requires_grad_() for x in xs]
        cur = paired(f(*leaves), w)
        res = []
        for _ in range(K):
            total = None
            if cur.requires_grad:
                gs = nd.autograd.grad(cur, leaves, create_graph=True, allow_unused=True)
                for g, v in zip(gs, vs):
                    if g is not None:
                        total = nd.sum(g * v) if total is None else total + nd.sum(g * v)
            cur = nd.zeros_like(cur) if total is None else total
            res.append(float(cur))
        return res

    zero = [nd.zeros_like(v) for v in vs]
    with np.errstate(all="ignore"):
        try:
            prim, ser = jet(f, tuple(xs), tuple([v] + [z] * (K - 1) for v, z in zip(vs, zero)))
        except np.linalg.LinAlgError:
            with pytest.raises(np.linalg.LinAlgError):
                nested()
            return
        R = nested()
    T = [float(paired([s[k] for s in ser], w)) for k in range(K)]
    for k, (t, r) in enumerate(zip(T, R), 1):
        if np.isnan(r):
            continue  # (a degenerate input, such as interp's coinciding abscissae)
        np.testing.assert_allclose(t, r, rtol=1e-7, atol=1e-9 * max(1.0, *map(abs, R[:k])),
                                   err_msg=f"{name} at zero inputs, order {k}")
