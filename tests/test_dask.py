"""The Dask backend (device "dask", ndgrad/core/backend_dask.py): registered ops on chunked
Dask arrays against the NumPy backend, the logistic-regression gradient against its closed
form (threads and a distributed LocalCluster), laziness (task executions counted), the
function transforms on Dask inputs, and the errors."""

from __future__ import annotations

import ast
import contextlib
import logging
import multiprocessing
import re
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

_NO_DASK = "Dask is not installed (it comes with the test extra: pip install -e '.[test]')"
dask = pytest.importorskip("dask", reason=_NO_DASK)
da = pytest.importorskip("dask.array", reason=_NO_DASK)

from hypothesis import HealthCheck, Phase, given, seed, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import ndgrad  # noqa: E402
from ndgrad.checks.strategies import op_samples  # noqa: E402
from ndgrad.core.backend_dask import DaskUnsupported  # noqa: E402
from ndgrad.core.devices import DeviceMismatchError  # noqa: E402
from ndgrad.core.ops import COMPOSITES, REGISTRY  # noqa: E402
from support import HANG_S  # noqa: E402

pytestmark = pytest.mark.cpu_only("the Dask backend computes with NumPy chunks on the host")


def chunked(a):
    """``a`` as a Dask array with uneven chunks along its first axis."""
    if a.ndim >= 1 and a.shape[0] >= 2:
        return da.from_array(a, chunks=((1, a.shape[0] - 1),) + a.shape[1:])
    return da.from_array(a)


class Tasks(dask.callbacks.Callback):
    """Counts the tasks Dask runs (its local schedulers call ``_pretask`` for each)."""

    def __init__(self):
        super().__init__()
        self.n = 0

    def _pretask(self, key, dsk, state):
        self.n += 1


# ------------------------------------------------------------------ registry-driven
def _run(op, args, kwargs, lazy):
    """Forward values, the vjp of a fixed cotangent and the jvp of a fixed tangent, as
    NumPy arrays."""
    nin = op.nin if op.nin >= 0 else len(args)
    ins = []
    for k, a in enumerate(args):
        if k < nin and isinstance(a, np.ndarray):
            t = ndgrad.asarray(chunked(a) if lazy else a)
            if a.dtype.kind in "fc":
                t.requires_grad_(True)
            ins.append(t)
        else:
            ins.append(a)
    out = op.public(*ins, **kwargs)
    outs = [o for o in (out if isinstance(out, tuple) else (out,)) if isinstance(o, ndgrad.Tensor)]
    leaves = [t for t in ins if isinstance(t, ndgrad.Tensor) and t.requires_grad]
    douts = [o for o in outs if o.requires_grad]
    grads = []
    if douts and leaves:
        rng = np.random.default_rng(0)
        cots = [ndgrad.asarray(rng.standard_normal(o.shape).astype(o.dtype)) for o in douts]
        grads = [g for g in ndgrad.autograd.grad(douts, leaves, cots, allow_unused=True)
                 if g is not None]
    tangent_outs = []
    if douts and leaves:
        rng = np.random.default_rng(1)
        where = [k for k, t in enumerate(ins) if isinstance(t, ndgrad.Tensor) and
                 t.requires_grad]
        tans = []
        for k in where:
            t = rng.standard_normal(ins[k].shape).astype(args[k].dtype)
            tans.append(ndgrad.asarray(chunked(t) if lazy else t))

        def f(*xs):
            full = list(ins)
            for k, x in zip(where, xs):
                full[k] = x
            out = op.public(*full, **kwargs)
            return tuple(o for o in (out if isinstance(out, tuple) else (out,))
                         if isinstance(o, ndgrad.Tensor) and o.dtype.kind in "fc")
        _, tangent_outs = ndgrad.func.jvp(f, tuple(ins[k].detach() for k in where),
                                          tuple(tans))
    return [v.detach().numpy() for v in ndgrad.compute(*outs, *grads, *tangent_outs,
                                                       optimize_graph=False)]


SWEEP = {}  # dtype -> {op name: ("ok",) | ("unsupported", message) | (outcome, detail)}

# Checked to work lazily (with the chunks the sweep gives them), beyond "ok or DaskUnsupported".
MUST_WORK = ("exp", "sum", "matmul", "tensordot", "einsum", "where", "cumsum", "linalg.solve",
             "linalg.inv", "linalg.norm", "getitem", "reshape", "index_put", "index_add",
             "repeat", "piecewise", "compress", "extract", "linalg.eigh", "linalg.eigvalsh",
             "linalg.eig", "linalg.eigvals", "linalg.cross", "linalg.matrix_exp",
             "linalg.matrix_rank", "take_along_axis")
MUST_WORK_REAL = ("sort", "argsort", "median", "quantile", "special.lambertw")
# What no chunking makes lazy: the result's shape (or dtype) depends on the values.
DATA_DEPENDENT = ("trim_zeros", "polymul", "polydiv", "roots")


def _swept(name, dtype):
    """Whether the sweep of ``dtype`` runs the op or composite ``name``: complex128 runs
    those whose domain is complex, but elementwise primitives (NumPy's ufunc on each chunk,
    whatever the dtype: left out to keep the Dask tests within their time budget)."""
    op = REGISTRY.get(name) or COMPOSITES[name]
    return dtype == "float64" or op.domain.complex and not (
        name in REGISTRY and op.kind == "elementwise")


def _sweep(dtype):
    """One draw per registered op and composite (float64, or complex128 for those whose
    domain is complex but elementwise primitives), run on NumPy and on chunked Dask arrays:
    SWEEP[dtype]."""
    if dtype in SWEEP:
        return SWEEP[dtype]
    outcomes = {}

    @seed(20)
    @settings(max_examples=1, deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(st.data())
    def run(data):
        for name in sorted(REGISTRY) + sorted(COMPOSITES):
            op = REGISTRY.get(name) or COMPOSITES[name]
            if not _swept(name, dtype):
                continue
            try:
                args, kwargs = data.draw(op_samples(op, complex=dtype == "complex128"))
                ref = _run(op, args, kwargs, False)
            except Exception:  # noqa: BLE001 - sampled input the NumPy run refuses: not ours
                continue
            try:
                with dask.config.set(scheduler="sync"), warnings.catch_warnings():
                    # (Dask's tril/triu/take cast a complex meta array to real: no values)
                    warnings.filterwarnings("ignore", "Casting complex values to real")
                    got = _run(op, args, kwargs, True)
            except DaskUnsupported as exc:
                outcomes[name] = ("unsupported", str(exc))
                continue
            except Exception as exc:  # noqa: BLE001 - recorded and asserted on below
                outcomes[name] = ("error", f"{type(exc).__name__}: {exc}")
                continue
            same = len(ref) == len(got) and all(
                np.allclose(r, g, rtol=1e-10, atol=1e-12, equal_nan=True)
                for r, g in zip(ref, got))
            outcomes[name] = ("ok",) if same else ("mismatch", repr((ref, got)))
    run()
    SWEEP[dtype] = outcomes
    return outcomes


@pytest.mark.parametrize("dtype", ["float64", "complex128"])
def test_registered_ops_on_dask_agree_with_numpy(dtype):
    """One pass over every registered op and composite on small chunked arrays (uneven
    chunks), float64 and complex128 inputs: each either agrees with the NumPy backend
    (forward values, vjp and jvp) or raises DaskUnsupported naming the ndgrad function the
    user called and saying to compute first; no third outcome."""
    outcomes = _sweep(dtype)
    by = {}
    for name, r in outcomes.items():
        by.setdefault(r[0], []).append(name)
    other = {n: outcomes[n] for kind in set(by) - {"ok", "unsupported"} for n in by[kind]}
    assert not other, other
    for name in by.get("unsupported", ()):
        msg = outcomes[name][1]
        assert msg.startswith(f"ndgrad.{name} ") and "cannot run on Dask arrays" in msg and \
            "t.compute()" in msg, (name, msg)
    for name in DATA_DEPENDENT:
        if _swept(name, dtype):
            assert outcomes[name][0] == "unsupported", (name, outcomes[name])
            assert "depends on the values" in outcomes[name][1], outcomes[name][1]
    assert len(by["ok"]) >= (300 if dtype == "float64" else 140), len(by["ok"])
    for name in MUST_WORK + MUST_WORK_REAL:
        if _swept(name, dtype):
            assert outcomes[name][0] == "ok", (name, outcomes[name])


# ------------------------------------------------------------------ logistic regression
def _data(n=200, d=3, chunks=60):
    rng = np.random.default_rng(1)
    X = rng.standard_normal((n, d))
    y = (rng.random(n) < 0.5).astype(float)
    return X, y, da.from_array(X, chunks=(chunks, d)), da.from_array(y, chunks=chunks)


def _loss(w, X, y):
    z = X @ w
    return (ndgrad.logaddexp(0.0, z) - y * z).sum()  # sum(softplus(z) - y z)


def _closed_form(w, X, y):
    z = X @ w
    return np.sum(np.logaddexp(0, z) - y * z), X.T @ (1 / (1 + np.exp(-z)) - y)


def test_logistic_regression_backward_into_numpy_parameters():
    X, y, dX, dy = _data()
    w0 = np.array([0.3, -0.2, 0.1])
    w = ndgrad.tensor(w0, requires_grad=True)
    tasks = Tasks()
    with tasks:
        loss = _loss(w, ndgrad.asarray(dX), ndgrad.asarray(dy))
        assert loss.device == "dask" and tasks.n == 0
        loss.backward()
    value, grad = _closed_form(w0, X, y)
    assert type(w.grad._data) is np.ndarray and w.grad.device == "cpu"
    np.testing.assert_allclose(w.grad.numpy(), grad, rtol=1e-12)
    assert tasks.n > 0
    np.testing.assert_allclose(loss.item(), value, rtol=1e-12)


def test_laziness_and_one_compute():
    """Nothing runs before compute(); the loss and its gradient in one dask.compute."""
    X, y, dX, dy = _data()
    w0 = np.array([0.5, 0.1, -0.4])
    w = ndgrad.tensor(w0, requires_grad=True)
    tasks = Tasks()
    starts = []
    with tasks, dask.callbacks.Callback(start=lambda dsk: starts.append(1)):
        loss = _loss(w, ndgrad.asarray(dX), ndgrad.asarray(dy))
        (g,) = ndgrad.autograd.grad(loss, [w])
        assert g.device == "dask" and tasks.n == 0 and not starts
        lv, gv = ndgrad.compute(loss, g)
    assert len(starts) == 1
    value, grad = _closed_form(w0, X, y)
    np.testing.assert_allclose(lv.item(), value, rtol=1e-12)
    np.testing.assert_allclose(gv.numpy(), grad, rtol=1e-12)
    assert repr(loss).startswith("tensor(<lazy")  # a repr computes nothing


def test_func_transforms_on_dask_inputs():
    xs = np.linspace(-1.0, 2.0, 7)
    x = ndgrad.asarray(da.from_array(xs, chunks=((3, 4),)))
    f = lambda v: (ndgrad.sin(v) * v).sum()  # noqa: E731
    df = np.sin(xs) + xs * np.cos(xs)
    g = ndgrad.func.grad(f)(x)
    assert g.device == "dask"
    np.testing.assert_allclose(g.compute().numpy(), df, rtol=1e-12)
    g, v = ndgrad.func.grad_and_value(f)(x)
    v, g = ndgrad.compute(v, g)
    np.testing.assert_allclose(v.item(), np.sum(np.sin(xs) * xs), rtol=1e-12)
    np.testing.assert_allclose(g.numpy(), df, rtol=1e-12)
    t = np.arange(7.0)
    _, tangent = ndgrad.func.jvp(f, (x,), (ndgrad.asarray(da.from_array(t, chunks=4)),))
    np.testing.assert_allclose(tangent.item(), df @ t, rtol=1e-12)
    _, pullback = ndgrad.func.vjp(lambda v: ndgrad.sin(v) * v, x)
    (ct,) = pullback(ndgrad.asarray(da.from_array(t, chunks=4)))
    np.testing.assert_allclose(ct.compute().numpy(), df * t, rtol=1e-12)
    rows = ndgrad.asarray(da.from_array(np.arange(12.0).reshape(3, 4), chunks=2))
    r = ndgrad.func.vmap(lambda row: (row * row).sum())(rows)
    np.testing.assert_allclose(r.compute().numpy(), (np.arange(12.0).reshape(3, 4) ** 2).sum(1))


def test_compute_is_differentiable_and_persist_keeps_history():
    xs = np.array([0.5, 1.0, 2.0])
    x = ndgrad.asarray(da.from_array(xs, chunks=2), requires_grad=True)
    y = ndgrad.exp(x).persist()
    assert y.device == "dask" and y.grad_fn is not None
    z = y.compute()
    assert z.device == "cpu"
    (g,) = ndgrad.autograd.grad(z.sum(), [x])
    np.testing.assert_allclose(g.compute().numpy(), np.exp(xs), rtol=1e-14)


# ------------------------------------------------------------------ errors
def test_unsupported_op_names_the_function():
    x = ndgrad.asarray(da.from_array(np.array([3.0, 1.0, 2.0]), chunks=2))
    with pytest.raises(NotImplementedError, match=r"ndgrad\.sort .*dask.array has no sort.*"
                                                  r"\.compute\(\)"):
        ndgrad.sort(x)


def test_bincount_needs_minlength_and_computes_nothing_to_find_it():
    x = ndgrad.asarray(da.from_array(np.array([0, 1, 1, 3]), chunks=2))
    with pytest.raises(DaskUnsupported, match=r"ndgrad\.bincount .*pass minlength"):
        ndgrad.bincount(x)  # (max(x) would be computed silently)
    w = ndgrad.tensor([0.5, 1.0, 2.0, 1.0], requires_grad=True)
    r = ndgrad.bincount(x, weights=w, minlength=5)
    assert r.device == "dask"
    np.testing.assert_array_equal(r.compute().detach().numpy(), [0.5, 3.0, 0.0, 1.0, 0.0])
    (r * ndgrad.tensor([1.0, 2.0, 3.0, 4.0, 5.0])).sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), [1.0, 2.0, 2.0, 4.0])  # the bin's factor


def test_dask_with_gpu_tensor_is_an_error_naming_both_devices():
    import conftest
    B = conftest._emulated_backend()
    gpu = ndgrad.asarray(B.asarray(np.ones(3)))
    x = ndgrad.asarray(da.ones(3, chunks=2))
    with pytest.raises(DeviceMismatchError, match="dask and cuda:0"):
        x + gpu


# ------------------------------------------------------------------ linalg, split, gather
def test_lstsq_det_slogdet_split_take_along_axis_lazily():
    """The linear algebra and gathers the Dask backend adds, lazily, against NumPy: lstsq of
    a tall matrix chunked along its rows (Dask's tsqr SVD), det/slogdet blockwise over a
    stack, split by slicing, take_along_axis along a one-chunk axis; and their gradients."""
    rng = np.random.default_rng(3)
    A, b = rng.standard_normal((40, 3)), rng.standard_normal(40)
    a = ndgrad.asarray(da.from_array(A, chunks=(15, 3)), requires_grad=True)
    x = ndgrad.linalg.lstsq(a, ndgrad.asarray(da.from_array(b, chunks=15)))[0]
    assert x.device == "dask"
    (ga,) = ndgrad.autograd.grad((x * x).sum(), [a])
    xv, gav = ndgrad.compute(x, ga)
    x_ref = np.linalg.lstsq(A, b, rcond=None)[0]
    np.testing.assert_allclose(xv.detach().numpy(), x_ref, rtol=1e-10)
    # d/dA |x|^2 with x = A^+ b, full column rank: 2 (r w^T - A^+T x x^T... ) checked by
    # central differences of the NumPy solution
    f = lambda M: np.sum(np.linalg.lstsq(M, b, rcond=None)[0] ** 2)  # noqa: E731
    E = np.zeros_like(A)
    E[7, 1] = 1e-6
    np.testing.assert_allclose(gav.numpy()[7, 1], (f(A + E) - f(A - E)) / 2e-6, rtol=1e-6)

    S = rng.standard_normal((4, 3, 3))
    s = ndgrad.asarray(da.from_array(S, chunks=(3, 3, 3)), requires_grad=True)
    d = ndgrad.linalg.det(s)
    sign, logabs = ndgrad.linalg.slogdet(s)
    (gs,) = ndgrad.autograd.grad(d.sum(), [s])
    dv, sv, lv, gsv = ndgrad.compute(d, sign, logabs, gs)
    np.testing.assert_allclose(dv.detach().numpy(), np.linalg.det(S), rtol=1e-12)
    np.testing.assert_allclose(sv.detach().numpy(), np.sign(np.linalg.det(S)))
    np.testing.assert_allclose(lv.detach().numpy(), np.log(np.abs(np.linalg.det(S))), rtol=1e-12)
    # d det(S)/dS = det(S) S^-T
    np.testing.assert_allclose(gsv.detach().numpy(), np.linalg.det(S)[:, None, None] *
                               np.linalg.inv(S).transpose(0, 2, 1), rtol=1e-10)

    v = np.arange(10.0)
    parts = ndgrad.split(ndgrad.asarray(da.from_array(v, chunks=4)), [3, 7])
    assert [p.shape for p in parts] == [(3,), (4,), (3,)]
    np.testing.assert_array_equal(ndgrad.compute(*parts)[1].numpy(), v[3:7])
    M = rng.standard_normal((6, 4))
    idx = np.argsort(M, axis=1)
    m = ndgrad.asarray(da.from_array(M, chunks=(2, 4)), requires_grad=True)
    t = ndgrad.take_along_axis(m, ndgrad.asarray(idx), axis=1)
    (gm,) = ndgrad.autograd.grad((t * ndgrad.arange(4.0)).sum(), [m])
    tv, gmv = ndgrad.compute(t, gm)
    np.testing.assert_array_equal(tv.detach().numpy(), np.sort(M, axis=1))
    expected = np.zeros_like(M)
    np.put_along_axis(expected, idx, np.broadcast_to(np.arange(4.0), M.shape), axis=1)
    np.testing.assert_array_equal(gmv.numpy(), expected)


def test_what_dask_cannot_chunk_says_how_to_rechunk():
    v = ndgrad.asarray(da.from_array(np.arange(8.0), chunks=4))
    with pytest.raises(NotImplementedError, match=r"ndgrad\.fft\.fftn? .*several chunks.*"
                                                  r"rechunk"):
        ndgrad.fft.fft(v)
    np.testing.assert_allclose(ndgrad.fft.fft(ndgrad.asarray(v._data.rechunk(-1)))
                               .compute().numpy(), np.fft.fft(np.arange(8.0)))
    m = ndgrad.asarray(da.from_array(np.eye(4) * 2.0, chunks=(2, 4)))
    with pytest.raises(NotImplementedError, match=r"linalg\.inv .*square chunks.*rechunk"):
        ndgrad.linalg.inv(m)
    with pytest.raises(NotImplementedError, match=r"take_along_axis .*several chunks.*"
                                                  r"rechunk\(\{0: -1\}\)"):
        ndgrad.take_along_axis(v, ndgrad.asarray(np.array([1, 0])), axis=0)


def test_one_chunk_axis_ops_scatter_and_values_that_decide_a_shape():
    """sort, argsort and eigh blockwise (the axes they work along one chunk, the others
    chunked) against NumPy, with their gradients; repeat and index_add lazily (index_add
    leaves its input as it was); what needs several chunks of an axis, or has a shape that
    depends on the values, is an error saying so."""
    rng = np.random.default_rng(5)
    M = rng.standard_normal((6, 4))
    m = ndgrad.asarray(da.from_array(M, chunks=(2, 4)), requires_grad=True)
    s, i = ndgrad.sort(m, axis=1), ndgrad.argsort(m, axis=1)
    (g,) = ndgrad.autograd.grad((s * ndgrad.arange(4.0)).sum(), [m])
    sv, iv, gv = ndgrad.compute(s, i, g)
    np.testing.assert_array_equal(sv.detach().numpy(), np.sort(M, axis=1))
    np.testing.assert_array_equal(iv.numpy(), np.argsort(M, axis=1))
    expected = np.zeros_like(M)  # d/dM sum_k k sort(M)[r, k]: k at the k-th smallest
    np.put_along_axis(expected, np.argsort(M, axis=1), np.arange(4.0)[None], axis=1)
    np.testing.assert_array_equal(gv.numpy(), expected)
    with pytest.raises(NotImplementedError, match=r"ndgrad\.median \(through ndgrad\.sort\) "
                                                  r".*several chunks.*rechunk\(\{axis: -1\}\)"):
        ndgrad.median(m, axis=0)

    A = rng.standard_normal((4, 3, 3))
    S = A + A.transpose(0, 2, 1)
    st_ = ndgrad.asarray(da.from_array(S, chunks=(2, 3, 3)), requires_grad=True)
    L, V = ndgrad.linalg.eigh(st_)
    (gs,) = ndgrad.autograd.grad(L.sum(), [st_])
    Lv, Vv, gsv = (t.detach().numpy() for t in ndgrad.compute(L, V, gs))
    np.testing.assert_allclose(Lv, np.linalg.eigvalsh(S), rtol=1e-12)
    np.testing.assert_allclose(Vv @ (Lv[..., None] * Vv.transpose(0, 2, 1)), S, atol=1e-12)
    np.testing.assert_allclose(gsv, np.broadcast_to(np.eye(3), S.shape), atol=1e-12)  # trace

    x = ndgrad.asarray(da.from_array(np.arange(4.0).reshape(2, 2), chunks=(1, 2)))
    np.testing.assert_array_equal(ndgrad.repeat(x, (1, 0, 2, 1)).compute().numpy(),
                                  [0.0, 2.0, 2.0, 3.0])
    z = ndgrad.asarray(da.zeros(5, chunks=2))
    y = ndgrad.index_add(z, ndgrad.asarray(np.array([1.0, 2.0, 3.0])), index=np.array([0, 0, 4]))
    w = ndgrad.index_add(z, 5.0, index=(slice(1, 3), None))
    zv, yv, wv = ndgrad.compute(z, y, w)
    np.testing.assert_array_equal(zv.numpy(), np.zeros(5))
    np.testing.assert_array_equal(yv.numpy(), [3.0, 0.0, 0.0, 0.0, 3.0])
    np.testing.assert_array_equal(wv.numpy(), [0.0, 5.0, 5.0, 0.0, 0.0])

    v = ndgrad.asarray(da.from_array(np.array([0.0, 1.0, 0.0]), chunks=2))
    with pytest.raises(NotImplementedError, match=r"ndgrad\.trim_zeros .*shape depends on the "
                                                  r"values.*t\.compute\(\)"):
        ndgrad.trim_zeros(v)
    with pytest.raises(NotImplementedError, match=r"ndgrad\.getitem .*lazy boolean mask.*"
                                                  r"ndgrad\.where"):
        v[v > 0]
    with pytest.raises(NotImplementedError, match=r"ndgrad\.polymul .*depends on the values"):
        ndgrad.polymul(v, v)


# ------------------------------------------------------------------ memory and passes
def test_reduction_cotangent_is_chunked_like_its_input():
    """The cotangent of a sum is broadcast with the input's chunks (no chunk larger than
    the input's, so the backward pass holds a few chunks at a time, as the forward does)."""
    xs = np.linspace(0.0, 1.0, 12)
    x = ndgrad.asarray(da.from_array(xs, chunks=3), requires_grad=True)
    (g,) = ndgrad.autograd.grad((1.0 - x).sum(), [x])
    assert g._data.chunks == ((3, 3, 3, 3),)
    np.testing.assert_array_equal(g.compute().numpy(), -np.ones(12))
    X = ndgrad.asarray(da.from_array(np.ones((6, 4)), chunks=(2, 4)), requires_grad=True)
    (g,) = ndgrad.autograd.grad(-X.mean(axis=1).sum(), [X])
    assert g._data.chunks == ((2, 2, 2), (4,))
    np.testing.assert_allclose(g.compute().numpy(), -0.25)


def test_minimize_over_lazy_data_one_pass_per_evaluation():
    """optimize.minimize over Dask-backed data: one dask.compute per evaluation (value and
    gradient together), and the weights of the same fit on the data in memory."""
    X, y, dX, dy = _data(n=300, chunks=100)
    Xt, yt = ndgrad.asarray(dX), ndgrad.asarray(dy)
    starts = []
    with dask.callbacks.Callback(start=lambda dsk: starts.append(1)):
        res = ndgrad.optimize.minimize(lambda w: _loss(w, Xt, yt), np.zeros(3),
                                       method="L-BFGS-B", tol=1e-12)
    assert res.success and len(starts) == res.nfev
    ref = ndgrad.optimize.minimize(lambda w: _loss(w, ndgrad.asarray(X), ndgrad.asarray(y)),
                                   np.zeros(3), method="L-BFGS-B", tol=1e-12)
    np.testing.assert_allclose(res.x.numpy(), ref.x.numpy(), atol=1e-10)
    np.testing.assert_allclose(_closed_form(res.x.numpy(), X, y)[1], 0.0, atol=1e-5)


# ------------------------------------------------------------------ distributed
@pytest.fixture(scope="module")
def client():
    """A real scheduler and two worker processes on this machine (127.0.0.1, ports chosen by
    the system, no dashboards, quiet logs), not the default scheduler of other tests; closed
    when the module ends, also after a failure, and no worker process outlives it."""
    distributed = pytest.importorskip("distributed", reason=_NO_DASK)
    with contextlib.ExitStack() as stack:
        cluster = stack.enter_context(distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
            scheduler_port=0, dashboard_address=None, worker_dashboard_address=None,
            silence_logs=logging.ERROR, death_timeout=HANG_S))
        yield stack.enter_context(distributed.Client(cluster, set_as_default=False,
                                                     timeout=HANG_S))
    # the workers exit as fast as the machine lets them: their deadlines only end a hang (Note
    # [No test depends on the machine's speed] in tests/support.py)
    deadline = time.monotonic() + HANG_S
    while multiprocessing.active_children() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not multiprocessing.active_children(), multiprocessing.active_children()


def test_gradient_on_worker_processes(client):
    distributed = pytest.importorskip("distributed", reason=_NO_DASK)
    X, y, dX, dy = _data(n=400, chunks=100)
    w0 = np.array([-0.3, 0.2, 0.7])
    w = ndgrad.tensor(w0, requires_grad=True)
    loss = _loss(w, ndgrad.asarray(dX), ndgrad.asarray(dy))
    (g,) = ndgrad.autograd.grad(loss, [w], retain_graph=True)
    with distributed.get_task_stream(client) as stream:
        lv, gv = ndgrad.compute(loss, g, scheduler=client)
    workers = set(client.scheduler_info()["workers"])
    assert len(workers) == 2 and stream.data
    assert {t["worker"] for t in stream.data} <= workers  # ran on the worker processes
    value, grad = _closed_form(w0, X, y)
    np.testing.assert_allclose(lv.item(), value, rtol=1e-12)
    np.testing.assert_allclose(gv.numpy(), grad, rtol=1e-12)
    with dask.config.set(scheduler=client):  # .backward() computes w.grad on the cluster
        loss.backward()
    np.testing.assert_allclose(w.grad.numpy(), grad, rtol=1e-12)


# ------------------------------------------------------------------ the plug-in
# (Note [Backend plug-ins] in ndgrad/core/backend.py)
_DASK_FILES = ("backend_dask.py", "lazy.py")


def _names_in_code(path):
    """(line, identifier) for every name, attribute, definition and imported module in the
    code of ``path`` (comments and docstrings are not code)."""
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Name):
            out.append((node.lineno, node.id))
        elif isinstance(node, ast.Attribute):
            out.append((node.lineno, node.attr))
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            out.append((node.lineno, node.name))
        elif isinstance(node, ast.ImportFrom):
            out.extend((node.lineno, n) for n in [node.module or ""] + [a.name for a in node.names])
        elif isinstance(node, ast.Import):
            out.extend((node.lineno, a.name) for a in node.names)
    return out


def test_the_kernel_and_the_ops_name_no_backend_plugin():
    """Outside the Dask backend's own files, no code of ndgrad/core names Dask or laziness:
    what a lazy backend does differently is backend attributes and hooks (66 names before:
    B.lazy, _DASK, dask_backend, DaskUnsupported, lazy_standins, ...)."""
    core = Path(ndgrad.__file__).parent / "core"
    files = [p for p in sorted(core.glob("*.py")) + sorted((core / "ops").glob("*.py"))
             if p.name not in _DASK_FILES]
    assert len(files) > 30
    found = [f"{p.relative_to(core)}:{line} {name}" for p in files
             for line, name in _names_in_code(p) if re.search("dask|lazy", name, re.I)]
    assert found == []
    # the checker sees such a name: lazy.py's own
    assert any(n == "register_plugin" for _, n in _names_in_code(core / "lazy.py"))
    assert [n for _, n in _names_in_code(core / "backend_dask.py") if n == "DaskUnsupported"]


class _HostArray(np.ndarray):
    """An array type no backend owns until a plug-in's finder registers one for it."""


def test_a_backend_plugs_in_by_array_type_through_its_finder():
    """A plug-in registers a finder (no import of it by the package); asarray asks the finders
    once, on the first array of an unregistered type, and the backend it registers then owns
    the type; the plug-in's device type resolves to it."""
    from ndgrad.core import backend as bk

    class Toy(bk.NumpyBackend):
        name = "toy"

        def to_numpy(self, array):
            return np.asarray(array) * 1.0  # (a copy, on the host)

    toy, asked = Toy(), []

    def find(array_type):
        asked.append(array_type)
        if array_type in (None, _HostArray):
            bk.register_backend(_HostArray, toy)
            return toy
        return None

    bk.register_plugin("toy", find)
    try:
        a = np.random.default_rng(3).standard_normal(4).view(_HostArray)
        x = ndgrad.asarray(a, requires_grad=True)
        assert asked.count(_HostArray) == 1 and bk.backend_of(a) is toy
        (2.0 * ndgrad.asarray(a) ** 2).sum()  # the second array: the registry, no finder
        assert asked.count(_HostArray) == 1
        (x ** 3).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), 3 * np.asarray(a) ** 2, rtol=1e-15)
        assert ndgrad.device("toy") == "toy" and bk.backend_for_device("toy") is toy
        assert toy.F is not None  # (the ops layer gave it its formula namespace)
    finally:
        bk._BACKEND_BY_TYPE.pop(_HostArray, None)
        bk._FINDERS.remove(find)
        bk._DEVICE_TYPES.pop("toy")
    with pytest.raises(ValueError, match="unknown device type 'toy'; expected one of"):
        ndgrad.device("toy")


def test_importing_ndgrad_imports_no_dask_and_a_dask_array_then_works():
    """The Dask backend is found on the first Dask array (Dask is imported by then), never
    loaded by ``import ndgrad``; device='dask' loads it too."""
    code = ("import sys, ndgrad; loaded = 'dask' in sys.modules; "
            "import dask.array as da; "
            "x = ndgrad.asarray(da.arange(4.0, chunks=2), requires_grad=True); "
            "(x * x).sum().backward(); "
            "print(loaded, x.device, x.grad.compute().numpy().tolist(), "
            "ndgrad.zeros(2, device='dask').device)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=HANG_S).stdout.split()
    assert out == ["False", "dask", "[0.0,", "2.0,", "4.0,", "6.0]", "dask"]


def test_the_dask_finder_claims_only_dask_arrays():
    """The finder gives the Dask backend for dask.array.Array and for device='dask', and
    nothing for Dask's other collections (a bag is not an array)."""
    from ndgrad.core.backend import backend_for_device, find_backend
    db = pytest.importorskip("dask.bag", reason=_NO_DASK)
    B = find_backend(da.Array)
    assert B is backend_for_device("dask") and B.array_type is da.Array
    assert find_backend(type(db.from_sequence([1.0, 2.0]))) is None
    np.testing.assert_array_equal(B.to_numpy(B.asarray(np.arange(3.0)) * 2), [0.0, 2.0, 4.0])
