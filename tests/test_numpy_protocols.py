"""NumPy's protocols on Tensors (ndgrad/numpy/protocols.py): functions written only with
``np.*`` calls, differentiated unmodified under every transform, against closed forms; each
ufunc that ndgrad implements, drawn from the registry, against ndgrad's own op; the ufunc
methods, ``out=``, and the errors."""

from __future__ import annotations

import io

import numpy as np
import pytest
import scipy.special
from hypothesis import assume, given
from hypothesis import strategies as st

import ndgrad as nd
from ndgrad.numpy import protocols
from ndgrad.core.ops import COMPOSITES, REGISTRY
from registry_harness import FLOAT, draw
from support import assert_close, close, random_like, val



RNG = np.random.default_rng(7)


# --------------------------------------------------------------- NumPy code, transformed
def f_sin2(x):
    return np.sum(np.sin(x) ** 2)


def test_grad_of_numpy_code():
    xv = np.array([0.3, -1.2, 2.0])
    close(nd.func.grad(f_sin2)(nd.tensor(xv)), np.sin(2 * xv))
    x = nd.tensor(xv, requires_grad=True)
    y = f_sin2(x)
    assert isinstance(y, nd.Tensor) and y.grad_fn is not None
    y.backward()
    close(x.grad, np.sin(2 * xv))


@pytest.mark.cpu_only("NumPy arrays as operands (they count as cpu tensors)")
def test_jacrev_and_jacfwd_of_numpy_code():
    W = RNG.standard_normal((4, 3))
    xv = RNG.standard_normal(3)
    f = lambda x: np.tanh(np.dot(W, x))  # noqa: E731
    expected = (1 - np.tanh(W @ xv) ** 2)[:, None] * W
    close(nd.func.jacrev(f)(nd.tensor(xv)), expected)
    close(nd.func.jacfwd(f)(nd.tensor(xv)), expected)


@pytest.mark.cpu_only("NumPy arrays as operands (they count as cpu tensors)")
def test_hessian_of_numpy_code():
    A = RNG.standard_normal((3, 3))
    xv = RNG.standard_normal(3)

    def f(x):
        return np.sum(x ** 4) / 4 + 0.5 * np.dot(x, np.matmul(A, x)) + np.sum(np.sin(x))

    close(nd.func.hessian(f)(nd.tensor(xv)), np.diag(3 * xv**2 - np.sin(xv)) + (A + A.T) / 2)


@pytest.mark.cpu_only("NumPy arrays as operands (they count as cpu tensors)")
def test_vmap_of_grad_of_numpy_code():
    w = np.array([1.0, -2.0])
    rows = RNG.standard_normal((5, 2))
    per_example = nd.func.vmap(nd.func.grad(lambda r: np.sum(np.exp(r) * w)))
    close(per_example(nd.tensor(rows)), np.exp(rows) * w)


def test_three_deep_composition_of_numpy_code():
    # d^3/dx^3 of sum(cos x) = sin x, by jvp over grad over grad, under vmap
    f = lambda x: np.sum(np.cos(x))  # noqa: E731
    g2 = nd.func.grad(lambda x: np.sum(nd.func.grad(f)(x)))
    xs = RNG.standard_normal((4, 3))
    third = nd.func.vmap(lambda x: nd.func.jvp(g2, (x,), (nd.ones(3),))[1])(nd.tensor(xs))
    close(third, np.sin(xs))


def _script(x):
    """A finite-difference script in plain NumPy with the functions NumPy code reaches
    for: the stacking, differencing, interpolation, polynomial and statistics functions.
    Its closed form: sum over the interior of (x[k+1] - 2 x[k] + x[k-1])^2, plus
    interp(0.5; [0, 1, 2], x[:3]) = (x0 + x1) / 2, plus polyval([1, 0], mean(x)) =
    mean(x), plus median of [x0, x0] = x0."""
    padded = np.hstack([x[:1], x, x[-1:]])
    second = np.diff(np.diff(padded))[1:-1]
    return (np.sum(second ** 2) + np.interp(0.5, [0.0, 1.0, 2.0], x[:3])
            + np.polyval(np.array([1.0, 0.0]), np.average(x))
            + np.median(np.vstack([x[:1], x[:1]])))


def _script_gradient(xv):
    n = len(xv)
    D = np.zeros((n - 2, n))  # the interior second differences
    for k in range(n - 2):
        D[k, k:k + 3] = [1.0, -2.0, 1.0]
    g = 2 * D.T @ (D @ xv) + 1.0 / n
    g[:2] += 0.5
    g[0] += 1.0
    return g, 2 * D.T @ D


def test_a_scientific_script_in_plain_numpy_under_every_transform():
    xv = RNG.standard_normal(6)
    g, H = _script_gradient(xv)
    x = nd.tensor(xv)
    close(nd.func.grad(_script)(x), g)
    close(nd.func.hessian(_script)(x), H, atol=1e-10)
    close(nd.func.jacfwd(nd.func.grad(_script))(x), H, atol=1e-10)
    xs = RNG.standard_normal((3, 6))
    close(nd.func.vmap(nd.func.grad(_script))(nd.tensor(xs)),
          np.stack([_script_gradient(r)[0] for r in xs]))
    assert nd.checks.gradcheck(_script, (nd.tensor(xv, requires_grad=True),))
    assert nd.checks.gradgradcheck(_script, (nd.tensor(xv, requires_grad=True),))


def test_forward_mode_through_numpy_ufuncs():
    xv = np.array([0.5, 1.5])
    with nd.forward_ad.dual_level():
        d = nd.forward_ad.make_dual(nd.tensor(xv), nd.tensor([1.0, 2.0]))
        y = np.log1p(np.exp(d))
        close(nd.forward_ad.unpack_dual(y).tangent, scipy.special.expit(xv) * [1.0, 2.0])


def test_gradcheck_of_numpy_code():
    a = nd.tensor(RNG.standard_normal((3, 4)), requires_grad=True)
    b = nd.tensor(RNG.standard_normal((4, 2)), requires_grad=True)

    def f(a, b):
        return np.mean(np.logaddexp(0.0, np.matmul(a, b)), axis=0)

    assert nd.checks.gradcheck(f, (a, b))
    assert nd.checks.gradgradcheck(f, (a, b))


def test_a_wrong_derivative_through_the_protocol_is_caught():
    # the protocol must route to the op with its own rule: a function whose "derivative"
    # is wrong (cos computed without differentiating it) fails gradcheck
    class WrongSin(nd.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return np.sin(x)

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * np.cos(2 * x)

    x = nd.tensor([0.4, 1.1], requires_grad=True)
    with pytest.raises(nd.checks.GradcheckError):
        nd.checks.gradcheck(WrongSin.apply, (x,))


# ------------------------------------------------------------------- every ufunc, drawn
def _public_to_entry():
    table = {}
    for op in list(REGISTRY.values()) + list(COMPOSITES.values()):
        public = getattr(op, "public", None)
        if public is not None:
            table[id(public)] = op
    return table


def _ufunc_cases():
    table = _public_to_entry()
    cases = []
    for library, space in (("numpy", np), ("scipy.special", scipy.special)):
        for name in sorted(dir(space)):
            ufunc = getattr(space, name)
            if not isinstance(ufunc, np.ufunc) or ufunc.__name__ != name:
                continue
            fn = protocols._ufunc_impl(ufunc)[2]
            op = table.get(id(fn)) if fn is not None else None
            if op is not None and op.differentiable:
                cases.append(pytest.param(ufunc, op, id=f"{library}.{name}"))
    return cases


UFUNC_CASES = _ufunc_cases()


def test_the_ufunc_table_covers_ndgrads_elementwise_ops():
    names = {p.id for p in UFUNC_CASES}
    for expected in ("numpy.sin", "numpy.add", "numpy.power", "numpy.arctan2", "numpy.matmul",
                     "numpy.conjugate", "scipy.special.expit", "scipy.special.gammaln"):
        assert expected in names
    assert len(names) >= 60


@pytest.mark.cpu_only("the protocol's device path runs in this module's other tests on every "
                      "device, and each op's in the registry matrix's device family")
@pytest.mark.parametrize("ufunc, op", UFUNC_CASES)
@given(data=st.data())
def test_each_ufunc_runs_ndgrads_op(ufunc, op, data):
    """``ufunc(*tensors)`` is ndgrad's op: the same values and the same vjp."""
    sample = draw(data, op, FLOAT)
    assert not sample.extra and len(sample.arrays) == ufunc.nin, sample
    via_numpy = sample.inputs(requires_grad=True)
    via_ndgrad = sample.inputs(requires_grad=True)
    got = ufunc(*via_numpy, **sample.kwargs)  # (vecdot's axis= is a gufunc keyword)
    want = op.public(*via_ndgrad, **sample.kwargs)
    if ufunc.nout == 1:
        got, want = (got,), (want,)
    assert isinstance(got, tuple) and len(got) == len(want) == ufunc.nout
    for g, w in zip(got, want):
        assert isinstance(g, nd.Tensor)
        assert_close(val(g), val(w), f"{ufunc.__name__} value")
    pairs = [(g, w) for g, w in zip(got, want) if g.requires_grad]
    if pairs:
        cots = [nd.tensor(random_like(np.random.default_rng(k), val(w)))
                for k, (_, w) in enumerate(pairs)]
        leaves = [[t for t in ts if isinstance(t, nd.Tensor) and t.requires_grad]
                  for ts in (via_numpy, via_ndgrad)]
        grads = nd.autograd.grad([g for g, _ in pairs], leaves[0], cots, allow_unused=True)
        ref = nd.autograd.grad([w for _, w in pairs], leaves[1], cots, allow_unused=True)
        for g, r in zip(grads, ref):
            if r is not None:
                assert_close(val(g), val(r), f"{ufunc.__name__} vjp")


def _alias_cases():
    """Every public name of NumPy and scipy.special that holds a ufunc ndgrad has under some
    name (of any of the names that hold the same ufunc, found here by walking both
    namespaces, not through ndgrad.numpy.protocols' table): ``scipy.special.digamma`` is the ufunc
    named ``psi``, which ndgrad has as ``digamma``."""
    table = _public_to_entry()
    cases = []
    for library, space, ndspace in (("numpy", np, nd), ("scipy.special", scipy.special,
                                                         nd.special)):
        groups = {}
        for name in sorted(dir(space)):
            obj = getattr(space, name)
            if isinstance(obj, np.ufunc) and not name.startswith("_"):
                groups.setdefault(obj, []).append(name)
        for names in groups.values():
            ops = [table.get(id(getattr(ndspace, n, None))) for n in names]
            op = next((o for o in ops if o is not None), None)
            if op is None:
                continue
            for name in names:
                cases.append(pytest.param(library, name, op, id=f"{library}.{name}"))
    return cases


ALIAS_CASES = _alias_cases()


def test_the_alias_walk_finds_the_names_under_other_names():
    names = {p.id for p in ALIAS_CASES}
    for expected in ("scipy.special.digamma", "scipy.special.psi", "numpy.absolute",
                     "numpy.abs", "numpy.conjugate", "numpy.arccos", "numpy.acos",
                     "numpy.true_divide", "scipy.special.jn"):
        assert expected in names


@pytest.mark.cpu_only("the protocol's device path runs in this module's other tests on every "
                      "device, and each op's in the registry matrix's device family")
@pytest.mark.parametrize("library, name, op", ALIAS_CASES)
@given(data=st.data())
def test_every_name_of_a_ufunc_ndgrad_has_runs_on_tensors(library, name, op, data):
    """Each name (``np.acos`` and ``np.arccos``, ``scipy.special.psi`` and ``digamma``)
    takes tensors and gives NumPy's (SciPy's) value on the same arrays, recorded."""
    ufunc = getattr(np if library == "numpy" else scipy.special, name)
    sample = draw(data, op, FLOAT)
    if sample.extra or len(sample.arrays) != ufunc.nin:
        pytest.skip(f"{op.qualname}'s sample has another signature than {library}.{name}")
    inputs = sample.inputs(requires_grad=True)
    assume(any(isinstance(t, nd.Tensor) for t in inputs))  # (not Python numbers only)
    got = ufunc(*inputs, **sample.kwargs)
    want = ufunc(*sample.arrays, **sample.kwargs)
    got, want = (got, want) if ufunc.nout > 1 else ((got,), (want,))
    for g, w in zip(got, want, strict=True):
        assert isinstance(g, nd.Tensor), f"{library}.{name} gave a {type(g).__name__}"
        assert_close(val(g), np.asarray(w), f"{library}.{name} value", rtol=1e-10, atol=1e-12)
        if op.differentiable and g.dtype.kind in "fc" and sample.pos:
            assert g.requires_grad, f"{library}.{name}: the result does not require grad"


# --------------------------------------------------------------------------- ufunc methods
def test_ufunc_reduce():
    xv = np.array([[1.0, -2.0, 3.0], [0.5, 4.0, -1.0]])
    x = nd.tensor(xv, requires_grad=True)
    close(np.add.reduce(x, axis=1), xv.sum(axis=1))
    close(np.add.reduce(x), xv.sum(axis=0))  # (a ufunc reduces axis 0 by default)
    close(np.add.reduce(x, axis=None, initial=10.0), xv.sum() + 10.0)
    (g,) = nd.autograd.grad(np.multiply.reduce(x, axis=0, keepdims=True).sum(), x)
    close(g, np.prod(xv, axis=0) / xv)
    (g,) = nd.autograd.grad(np.maximum.reduce(x, axis=None), x)
    close(g, (xv == xv.max()).astype(float))
    close(np.minimum.reduce(x, axis=1), xv.min(axis=1))


def test_ufunc_accumulate_and_outer():
    xv = np.array([1.0, 2.0, 3.0, 4.0])
    x = nd.tensor(xv, requires_grad=True)
    c = np.add.accumulate(x)
    close(c, np.cumsum(xv))
    (g,) = nd.autograd.grad(c.sum(), x)
    close(g, [4.0, 3.0, 2.0, 1.0])
    close(np.multiply.accumulate(x), np.cumprod(xv))
    b = nd.tensor([1.0, -1.0, 2.0], requires_grad=True)
    o = np.multiply.outer(x, b)
    close(o, np.multiply.outer(xv, [1.0, -1.0, 2.0]))
    ga, gb = nd.autograd.grad(o.sum(), [x, b])
    close(ga, np.full(4, 2.0))
    close(gb, np.full(3, xv.sum()))


def test_ufunc_at_is_an_indexed_in_place_update():
    x = nd.tensor([1.0, 2.0, 3.0], requires_grad=True)
    v = nd.tensor([10.0, 20.0, 30.0], requires_grad=True)
    t = x * 1.0
    version = t._version
    assert np.add.at(t, [0, 0, 2], v) is None
    close(t, [31.0, 2.0, 33.0])
    assert t._version > version
    gx, gv = nd.autograd.grad((t * nd.tensor([1.0, 2.0, 3.0])).sum(), [x, v])
    close(gx, [1.0, 2.0, 3.0])
    close(gv, [1.0, 1.0, 3.0])
    s = x * 1.0
    np.subtract.at(s, [1], 5.0)
    close(s, [1.0, -3.0, 3.0])
    leaf = nd.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf"):
        np.add.at(leaf, [0], 1.0)
    m = x * 1.0
    np.multiply.at(m, [0, 0], 2.0)  # (repeated: applied twice)
    close(m, [4.0, 2.0, 3.0])


def _binary_ufunc_cases():
    """Every binary NumPy ufunc with one output whose ndgrad function (under any of its
    names) is a differentiable registered op or composite, and the op."""
    table = _public_to_entry()
    cases = {}
    for name in sorted(dir(np)):
        ufunc = getattr(np, name)
        if not isinstance(ufunc, np.ufunc) or ufunc.nin != 2 or ufunc.nout != 1 or \
                ufunc in cases:
            continue
        names = [n for n in dir(np) if getattr(np, n) is ufunc]
        op = next((table[id(getattr(nd, n))] for n in names
                   if id(getattr(nd, n, None)) in table), None)
        if op is not None and op.differentiable and ufunc.signature is None:
            cases[ufunc] = op
    return [pytest.param(u, op, id=u.__name__) for u, op in cases.items()]


BINARY_UFUNCS = _binary_ufunc_cases()


def _values_in(op, shape, seed):
    """Values in the op's declared domain for both operands (the overlap of its two input
    ranges, where they overlap), distinct."""
    rng = np.random.default_rng(seed)
    (lo0, hi0), (lo1, hi1) = op.domain.range(0), op.domain.range(1)
    lo, hi = (max(lo0, lo1), min(hi0, hi1)) if max(lo0, lo1) < min(hi0, hi1) else (lo0, hi0)
    return rng.uniform(max(lo, -3.0), min(hi, 3.0), shape)


def _fold_reference(ufunc, xv, axis, keepdims=False, initial=None, where=None):
    """``ufunc.reduce`` along one axis as its definition, a left fold with NumPy's
    elementwise ufunc (NumPy 2.4's own arctan2.reduce and power.reduce compute
    ``f(x[0], x[-1])`` for float64, disagreeing with its accumulate)."""
    xs = np.moveaxis(xv, axis, 0)
    ms = None if where is None else np.moveaxis(np.broadcast_to(where, xv.shape), axis, 0)
    acc, start = (xs[0], 1) if initial is None else (np.full(xs.shape[1:], initial), 0)
    for k in range(start, xs.shape[0]):
        step = ufunc(acc, xs[k])
        acc = step if ms is None else np.where(ms[k], step, acc)
    return np.expand_dims(acc, axis) if keepdims else acc


def _numpy_or_error(fn, *args, **kwargs):
    with np.errstate(all="ignore"):
        try:
            return fn(*args, **kwargs), None
        except (TypeError, ValueError) as exc:
            return None, exc


@pytest.mark.cpu_only("NumPy masks and indices are host arrays")
@pytest.mark.parametrize("ufunc, op", BINARY_UFUNCS)
def test_binary_ufunc_methods(ufunc, op):
    """``reduce`` (axis 0, 1, None, a tuple, keepdims, initial, where), ``accumulate``,
    ``outer`` and ``at`` of every binary ufunc ndgrad has: NumPy's values (or NumPy's
    error) and gradients against finite differences (Note [Ufunc methods])."""
    xv = _values_in(op, (3, 4), 1)
    yv = _values_in(op, (4,), 2)
    mask = np.array([[True, False, True, True], [True, True, False, True],
                     [False, True, True, True]])
    init = float(_values_in(op, (), 3))  # (not one of the elements: fmod(x, x) is a jump)
    calls = [("reduce", {"axis": 0}), ("reduce", {"axis": 1, "keepdims": True}),
             ("reduce", {"axis": None}), ("reduce", {"axis": (0, 1)}),
             ("reduce", {"axis": 0, "initial": init}),
             ("reduce", {"axis": 1, "where": mask, "initial": init}),
             ("accumulate", {"axis": 1}), ("accumulate", {})]
    for method, kw in calls:
        what = f"numpy.{ufunc.__name__}.{method}({kw})"
        want, err = _numpy_or_error(getattr(ufunc, method), xv, **kw)
        if err is not None:
            with pytest.raises(type(err)):
                getattr(ufunc, method)(nd.tensor(xv), **kw)
            continue
        if method == "reduce" and isinstance(kw["axis"], int):  # (the definition)
            want = _fold_reference(ufunc, xv, **kw).astype(want.dtype)
        x = nd.tensor(xv, requires_grad=True)
        got = getattr(ufunc, method)(x, **kw)
        assert isinstance(got, nd.Tensor) and got.dtype == want.dtype, what
        close(got, want, rtol=1e-11, atol=1e-12)
        if got.dtype.kind == "f" and not getattr(op, "piecewise_constant", False):
            assert nd.checks.gradcheck(lambda t, m=method, k=kw: getattr(ufunc, m)(t, **k),
                                       (x,), eps=1e-6, atol=1e-5, rtol=1e-4), what
    # outer
    want, err = _numpy_or_error(ufunc.outer, xv[0], yv)
    if err is None:
        a, b = nd.tensor(xv[0], requires_grad=True), nd.tensor(yv, requires_grad=True)
        close(ufunc.outer(a, b), want, rtol=1e-11, atol=1e-12)
        if want.dtype.kind == "f" and not getattr(op, "piecewise_constant", False):
            assert nd.checks.gradcheck(ufunc.outer, (a, b), eps=1e-6, atol=1e-5, rtol=1e-4)
    # at, with a repeated index (applied twice, in order)
    index = np.array([0, 2, 0, 3])
    vals = yv
    want = xv[0].copy()
    _, err = _numpy_or_error(ufunc.at, want, index, vals)
    if err is None:
        def at(t, v):
            s = t * 1.0
            ufunc.at(s, index, v)
            return s
        a, v = nd.tensor(xv[0], requires_grad=True), nd.tensor(vals, requires_grad=True)
        close(at(a, v), want, rtol=1e-11, atol=1e-12)
        if want.dtype.kind == "f" and not getattr(op, "piecewise_constant", False):
            assert nd.checks.gradcheck(at, (a, v), eps=1e-6, atol=1e-5, rtol=1e-4)


def test_ufunc_methods_under_the_transforms():
    """Ufunc methods and SciPy's ufuncs under any name work on a transform's values (vmap's
    batched tensors once ran only ``ufunc(...)`` of the same name)."""
    xv = np.array([[1.0, 2.0, 0.5], [3.0, -4.0, 1.5]])
    x = nd.tensor(xv)
    close(nd.func.vmap(np.logaddexp.reduce)(x), scipy.special.logsumexp(xv, axis=1))
    close(nd.func.vmap(np.maximum.accumulate)(x), np.maximum.accumulate(xv, axis=1))
    close(nd.func.vmap(scipy.special.digamma)(nd.tensor(np.abs(xv))),
          scipy.special.psi(np.abs(xv)))
    close(nd.func.grad(np.hypot.reduce)(x[1]), xv[1] / np.sqrt((xv[1] ** 2).sum()))
    close(nd.func.vmap(nd.func.grad(np.hypot.reduce))(x),
          xv / np.sqrt((xv ** 2).sum(axis=1, keepdims=True)))
    t = nd.tensor([1.0, 0.0, 0.0])  # d/dx0 of max(x0, 2, 0.5) at x0 = 1: 0; of hypot: x0/|x|
    close(nd.func.jvp(np.maximum.reduce, (x[0],), (t,))[1], 0.0)
    close(nd.func.jvp(np.hypot.reduce, (x[0],), (t,))[1], 1.0 / np.sqrt(5.25))


def test_the_binary_ufunc_list_is_ndgrads():
    names = {p.id for p in BINARY_UFUNCS}
    for expected in ("logaddexp", "maximum", "hypot", "subtract", "arctan2", "power",
                     "copysign", "fmax"):
        assert expected in names
    assert len(names) >= 20


def test_out_is_an_in_place_write():
    x = nd.tensor([0.5, 1.0], requires_grad=True)
    y = nd.zeros(2)
    r = np.exp(x, out=y)
    assert r is y and y.requires_grad
    close(y, np.exp([0.5, 1.0]))
    (g,) = nd.autograd.grad(y.sum(), x)
    close(g, np.exp([0.5, 1.0]))
    s = nd.zeros(())
    assert np.sum(x, out=s) is s
    close(s, 1.5)


def _through_out(x):
    """NumPy code writing into its inputs with out= (the input itself, in first and second
    position, a tuple, a view overlapping the input, another tensor)."""
    y = x * 2.0
    np.sin(y, out=y)
    np.add(y, 1.0, out=(y,))
    np.subtract(3.0, y, out=y)
    np.multiply(y[:-1], y[1:], out=y[1:])  # (overlapping views of one tensor)
    w = nd.zeros(tuple(x.shape), dtype=x.dtype)
    np.exp(y, out=w)
    return w * y


def _through_out_numpy(xv):
    y = 3.0 - (np.sin(2.0 * xv) + 1.0)
    y[1:] = y[:-1] * y[1:]
    return np.exp(y) * y


def test_out_aliasing_an_input_is_the_in_place_op():
    """``np.sin(y, out=y)`` is ``y.sin_()``: the values are NumPy's and the derivatives,
    first and second, those of finite differences (backward failed with a version error)."""
    xv = np.array([0.3, -0.7, 1.1, 0.2])
    x = nd.tensor(xv, requires_grad=True)
    close(_through_out(x), _through_out_numpy(xv))
    assert nd.checks.gradcheck(_through_out, (x,))
    assert nd.checks.gradgradcheck(_through_out, (x,))
    y = x * 1.0
    assert np.sin(y, out=y) is y
    (g,) = nd.autograd.grad(y.sum(), x)
    close(g, np.cos(xv))


def test_out_aliasing_an_input_under_the_transforms():
    def f(x):
        y = x * 2.0
        np.sin(y, out=y)
        np.multiply(3.0, y, out=(y,))
        return y.sum()
    xv = np.array([0.5, 1.0])
    x = nd.tensor(xv)
    d = 6.0 * np.cos(2.0 * xv)  # d/dx 3 sin(2x)
    close(nd.func.grad(f)(x), d)
    close(nd.func.jvp(f, (x,), (nd.tensor([1.0, -2.0]),))[1], d[0] - 2.0 * d[1])
    close(nd.func.vmap(nd.func.grad(f))(nd.stack([x, 2.0 * x])),
          [d, 6.0 * np.cos(4.0 * xv)])


def test_out_into_a_leaf_that_requires_grad_names_the_ufunc():
    x = nd.tensor([0.5, 1.0], requires_grad=True)
    with pytest.raises(RuntimeError, match=r"numpy\.sin with out=: a leaf tensor that "
                                           r"requires grad \(shape \[2\]\) was modified in "
                                           r"place"):
        np.sin(x, out=x)
    with pytest.raises(RuntimeError, match=r"numpy\.add with out=: a view of a leaf tensor"):
        np.add(x[:1], 1.0, out=x[:1])
    with pytest.raises(RuntimeError, match=r"numpy\.sum with out=: a leaf tensor"):
        np.sum(x, out=nd.zeros((), requires_grad=True))
    with nd.no_grad():  # (a parameter update, as PyTorch allows under no_grad)
        np.multiply(x, 0.5, out=x)
    close(x.detach(), [0.25, 0.5])


# -------------------------------------------------------------------------- functions
@pytest.mark.cpu_only("NumPy arrays as operands (they count as cpu tensors)")
def test_reductions_with_numpys_signature():
    xv = np.array([[1.0, 2.0, 4.0], [3.0, -1.0, 0.5]])
    x = nd.tensor(xv, requires_grad=True)
    mask = np.array([[True, False, True], [False, True, True]])
    close(np.mean(x, axis=0, keepdims=True), xv.mean(axis=0, keepdims=True))
    close(np.sum(x, where=mask), xv.sum(where=mask))
    (g,) = nd.autograd.grad(np.sum(x, where=mask, initial=1.0), x)
    close(g, mask.astype(float))
    close(np.mean(x, axis=1, where=mask), np.mean(xv, axis=1, where=mask))
    close(np.prod(x, axis=1), xv.prod(axis=1))
    close(np.max(x, axis=1, initial=2.5), np.max(xv, axis=1, initial=2.5))
    close(np.amin(x), xv.min())
    n = xv.size
    s = np.std(x, ddof=1)
    close(s, np.std(xv, ddof=1))
    (g,) = nd.autograd.grad(s, x)
    close(g, (xv - xv.mean()) / ((n - 1) * np.std(xv, ddof=1)))
    close(np.var(x, axis=0), np.var(xv, axis=0))


@pytest.mark.cpu_only("NumPy arrays as operands (they count as cpu tensors)")
def test_shape_and_combining_functions():
    xv = np.arange(6.0).reshape(2, 3)
    x = nd.tensor(xv, requires_grad=True)
    close(np.concatenate([x, x], axis=None), np.concatenate([xv, xv], axis=None))
    close(np.concatenate((x, xv), axis=1), np.concatenate((xv, xv), axis=1))
    close(np.cumsum(x), np.cumsum(xv))
    close(np.cumprod(x + 1.0, axis=1), np.cumprod(xv + 1.0, axis=1))
    close(np.reshape(x, (3, 2)), xv.reshape(3, 2))
    close(np.ravel(x), xv.ravel())
    close(np.transpose(x), xv.T)
    close(np.clip(x, 1.0, 4.0), np.clip(xv, 1.0, 4.0))
    close(np.where(x > 2.0, x, 0.0), np.where(xv > 2.0, xv, 0.0))
    close(np.einsum("ij,ij->i", x, x), np.einsum("ij,ij->i", xv, xv))
    close(np.dot(x, xv.T), xv @ xv.T)
    a3 = RNG.standard_normal((2, 3, 4))
    b3 = RNG.standard_normal((5, 4, 2))
    close(np.dot(nd.tensor(a3), b3), np.dot(a3, b3))
    close(np.dot(x, 2.0), 2 * xv)
    close(np.sort(nd.tensor([3.0, 1.0, 2.0])), [1.0, 2.0, 3.0])
    close(np.round(nd.tensor([1.234, 5.678]), 1), [1.2, 5.7])
    (g,) = nd.autograd.grad(np.sum(np.concatenate([x, 2 * x])), x)
    close(g, np.full((2, 3), 3.0))


@pytest.mark.cpu_only("NumPy arrays as operands (they count as cpu tensors)")
def test_linalg_and_fft():
    A = RNG.standard_normal((3, 3)) + 3 * np.eye(3)
    bv = RNG.standard_normal(3)
    b = nd.tensor(bv, requires_grad=True)
    x = np.linalg.solve(A, b)
    close(x, np.linalg.solve(A, bv))
    (g,) = nd.autograd.grad(x.sum(), b)
    close(g, np.linalg.solve(A.T, np.ones(3)))
    At = nd.tensor(A, requires_grad=True)
    (g,) = nd.autograd.grad(np.linalg.det(At), At)
    close(g, np.linalg.det(A) * np.linalg.inv(A).T)
    close(np.linalg.norm(b), np.linalg.norm(bv))
    xv = RNG.standard_normal(8)
    x = nd.tensor(xv, requires_grad=True)
    close(np.fft.rfft(x), np.fft.rfft(xv))
    (g,) = nd.autograd.grad(np.sum(np.abs(np.fft.fft(x)) ** 2), x)
    close(g, 2 * 8 * xv)  # Parseval: sum |fft x|^2 = n sum x^2


def test_functions_without_a_derivative_return_tensors():
    x = nd.tensor([3.0, 1.0, 2.0, 1.0], requires_grad=True)
    i = np.argsort(x)
    assert isinstance(i, nd.Tensor) and not i.requires_grad
    close(i, [1, 3, 2, 0])
    u = np.unique(x)
    assert isinstance(u, nd.Tensor) and not u.requires_grad
    close(u, [1.0, 2.0, 3.0])
    close(np.searchsorted(nd.tensor([1.0, 2.0, 3.0]), x), [2, 0, 1, 0])
    close(np.isclose(x, nd.tensor([3.0, 1.0, 2.5, 1.0])), [True, True, False, True])
    assert np.allclose(x, [3.0, 1.0, 2.0, 1.0]) is True
    assert np.shape(x) == (4,) and np.ndim(x) == 1 and np.size(x) == 4
    (nz,) = np.nonzero(x > 1.5)
    close(nz, [0, 2])
    (nz,) = np.where(x > 1.5)
    close(nz, [0, 2])
    assert np.count_nonzero(x > 1.5) == 2
    # an index from NumPy inside a transformed function
    close(nd.func.grad(lambda t: t[np.argmax(t)] * 2)(nd.tensor([1.0, 3.0, 2.0])), [0, 2, 0])


@pytest.mark.cpu_only("NumPy arrays as operands (they count as cpu tensors)")
def test_mixing_arrays_and_tensors():
    x = nd.tensor([1.0, 2.0], requires_grad=True)
    y = np.array([3.0, 4.0]) * x + np.float64(1.0)
    assert isinstance(y, nd.Tensor)
    (g,) = nd.autograd.grad(y.sum(), x)
    close(g, [3.0, 4.0])


# ------------------------------------------------------------------------------ errors
def test_functions_ndgrad_lacks_are_refused_not_silently_wrong():
    # np.savetxt is on the namespace test's list of what ndgrad leaves out (file I/O)
    x = nd.tensor([1.0, 3.0, 2.0], requires_grad=True)
    with pytest.raises(TypeError, match=r"numpy.savetxt .*t\.detach\(\)"):
        np.savetxt(io.StringIO(), x)
    with pytest.raises(TypeError, match=r"dawsn .*t\.detach\(\)"):
        scipy.special.dawsn(x)  # a SciPy ufunc ndgrad.special does not have
    # without requires_grad there is nothing to differentiate: NumPy's own result
    out = io.StringIO()
    np.savetxt(out, x.detach(), fmt="%.1f")
    assert out.getvalue().split() == ["1.0", "3.0", "2.0"]
    close(scipy.special.dawsn(x.detach()), scipy.special.dawsn([1.0, 3.0, 2.0]))
    with nd.forward_ad.dual_level():  # a tangent is something to differentiate
        d = nd.forward_ad.make_dual(nd.tensor([1.0, 2.0]), nd.tensor([1.0, 0.0]))
        with pytest.raises(TypeError, match="numpy.savetxt"):
            np.savetxt(io.StringIO(), d)
    with pytest.raises(TypeError, match="dawsn"):
        nd.func.grad(lambda t: scipy.special.dawsn(t).sum())(nd.tensor([1.0]))


def test_numpy_statistics_run_ndgrads():
    xv = np.array([[3.0, 1.0, 4.0], [1.5, 9.0, 2.0]])
    x = nd.tensor(xv, requires_grad=True)
    close(np.median(x, axis=1), np.median(xv, axis=1))
    close(np.quantile(x, [0.2, 0.9], axis=0), np.quantile(xv, [0.2, 0.9], axis=0))
    close(np.percentile(x, 40), np.percentile(xv, 40))
    (g,) = nd.autograd.grad(np.median(x), x)  # the two middle values share the gradient
    close(g, [[0.5, 0.0, 0.0], [0.0, 0.0, 0.5]])
    nan = np.array([1.0, np.nan, 3.0])
    close(np.nanmean(nd.tensor(nan)), 2.0)
    close(np.nanmax(nd.tensor(nan)), 3.0)
    close(np.ptp(x, axis=0), np.ptp(xv, axis=0))
    close(np.average(x, axis=1, weights=[1.0, 2.0, 3.0]),
          np.average(xv, axis=1, weights=[1.0, 2.0, 3.0]))
    close(np.trapezoid(x, dx=0.5), np.trapezoid(xv, dx=0.5))
    close(np.kron(x, x[:1, :2]), np.kron(xv, xv[:1, :2]))
    close(np.inner(x, x), np.inner(xv, xv))
    close(np.cov(x), np.cov(xv))
    close(np.corrcoef(x, rowvar=False), np.corrcoef(xv, rowvar=False))
    close(np.cumsum(x, axis=0), np.cumsum(xv, axis=0))
    close(np.diag(x[0]), np.diag(xv[0]))
    close(np.polyval(x[0], x), np.polyval(xv[0], xv))
    close(np.convolve(x[0], x[1], mode="same"), np.convolve(xv[0], xv[1], mode="same"))
    close(np.nanstd(nd.tensor(nan), ddof=1), np.nanstd(nan, ddof=1))


def test_unsupported_arguments_name_themselves():
    x = nd.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(TypeError, match="out= must be an ndgrad Tensor"):
        np.sum(x, out=np.zeros(()))
    with pytest.raises(TypeError, match="out= must be an ndgrad Tensor"):
        np.exp(x, out=np.zeros(2))
    with pytest.raises(TypeError, match=r"numpy.exp: ndgrad does not support where="):
        np.exp(x, where=np.array([True, False]))
    with pytest.raises(TypeError, match=r"numpy.add: ndgrad does not support casting="):
        np.add(x, 1.0, casting="unsafe")
    with pytest.raises(TypeError, match=r"numpy.reshape: ndgrad does not support order="):
        np.reshape(x, (2, 1), order="A")
    with pytest.raises(ValueError, match=r"numpy\.subtract\.reduce: reduction operation "
                                         "'subtract' is not reorderable"):
        np.subtract.reduce(nd.ones((2, 2)) * x, axis=None)  # (NumPy's own error, named)
    with pytest.raises(TypeError, match="reduceat"):
        np.add.reduceat(x, [0])


@pytest.mark.cpu_only("np.asarray reads host memory")
def test_asarray_keeps_its_rule():
    x = nd.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="requires grad"):
        np.asarray(x)
    close(np.asarray(x.detach()), [1.0, 2.0])


def test_numpys_elementwise_extras():
    # the composites that give NumPy's names (registry-checked on their sample domains);
    # here the parts their domains leave out: cbrt of negatives, float_power's dtype, NaN
    xv = np.array([-8.0, -0.5, 1.0, 27.0])
    x = nd.tensor(xv, requires_grad=True)
    y = np.cbrt(x)
    close(y, np.cbrt(xv))
    (g,) = nd.autograd.grad(y.sum(), x)
    close(g, 1.0 / (3.0 * np.cbrt(xv) ** 2))
    p = np.float_power(nd.tensor([2.0, 3.0], dtype=nd.float32), 2)
    assert p.dtype == np.float64
    close(p, [4.0, 9.0])
    nan = float("nan")
    a = nd.tensor([1.0, nan, 3.0], requires_grad=True)
    b = nd.tensor([nan, 2.0, 4.0], requires_grad=True)
    close(np.fmax(a, b), [1.0, 2.0, 4.0])
    close(np.fmin(a, b), [1.0, 2.0, 3.0])
    ga, gb = nd.autograd.grad(np.fmax(a, b).sum(), [a, b])
    close(ga, [1.0, 0.0, 0.0])
    close(gb, [0.0, 1.0, 1.0])
    close(np.degrees(np.radians(x)), xv)
    close(np.logaddexp2(x, x), xv + 1.0)
