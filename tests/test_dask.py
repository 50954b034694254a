"""The Dask backend (device "dask", ndgrad/core/backend_dask.py): registered ops on chunked
Dask arrays against the NumPy backend, the logistic-regression gradient against its closed
form (threads and a distributed LocalCluster), laziness (task executions counted), the
function transforms on Dask inputs, and the errors."""

from __future__ import annotations

import numpy as np
import pytest

dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")

from hypothesis import HealthCheck, Phase, given, seed, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import ndgrad  # noqa: E402
from ndgrad.checks.strategies import op_samples  # noqa: E402
from ndgrad.core.backend import DaskUnsupported  # noqa: E402
from ndgrad.core.dispatch import DeviceMismatchError  # noqa: E402
from ndgrad.core.ops import COMPOSITES, REGISTRY  # noqa: E402

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
# Ops that fail on Dask arrays with an error of Dask's own (not DaskUnsupported): what the
# next session should turn into DaskUnsupported or make work.
KNOWN_ERRORS = {
    "fft.irfftn": "Dask's FFT needs the transformed axes in one chunk",
    "fft.irfft": "Dask's FFT needs the transformed axis in one chunk",
    "fft.hfft": "Dask's FFT needs the transformed axis in one chunk",
    "index_add": "values broadcast against a Dask setitem",
    "repeat": "Dask's repeat needs an integer axis",
    "trim_zeros": "unknown chunk sizes (data-dependent shape)",
    "compress": "data-dependent shape (a float condition from the sampler)",
    "extract": "data-dependent shape",
    "linalg.tensorinv": "Dask's lu needs square chunks",
    "linalg.tensorsolve": "Dask's lu needs square chunks",
    "piecewise": "boolean-mask assignment on Dask arrays",
    "polydiv": "reads values on the host (.tolist())",
    "polymul": "reads values on the host (.tolist())",
    "roots": "reads values on the host (.tolist())",
}


def _run(op, args, kwargs, lazy):
    """Forward values and the vjp of a fixed cotangent, as NumPy arrays."""
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
    return [v.detach().numpy() for v in ndgrad.compute(*outs, *grads)]


SWEEP = {}


@seed(20)
@settings(max_examples=1, deadline=None, database=None, phases=[Phase.generate],
          suppress_health_check=list(HealthCheck))
@given(st.data())
def _sweep(data):
    for name in sorted(REGISTRY) + sorted(COMPOSITES):
        op = REGISTRY.get(name) or COMPOSITES[name]
        try:
            args, kwargs = data.draw(op_samples(op))
            ref = _run(op, args, kwargs, False)
        except Exception:  # noqa: BLE001 - sampled input the NumPy run refuses: not ours
            continue
        try:
            with dask.config.set(scheduler="sync"):
                got = _run(op, args, kwargs, True)
        except DaskUnsupported as exc:
            SWEEP[name] = ("unsupported", str(exc))
            continue
        except Exception as exc:  # noqa: BLE001 - recorded and asserted on below
            SWEEP[name] = ("error", f"{type(exc).__name__}: {exc}")
            continue
        same = len(ref) == len(got) and all(
            np.allclose(r, g, rtol=1e-10, atol=1e-12, equal_nan=True) for r, g in zip(ref, got))
        SWEEP[name] = ("ok",) if same else ("mismatch", repr((ref, got)))


def test_registered_ops_on_dask_agree_with_numpy():
    """One pass over every registered op and composite on small chunked arrays (uneven
    chunks): forward values and vjps agree with the NumPy backend; what Dask cannot do raises
    DaskUnsupported naming the ndgrad function; Dask's own errors are the known list."""
    _sweep()
    by = {}
    for name, r in SWEEP.items():
        by.setdefault(r[0], []).append(name)
    assert not by.get("mismatch"), {n: SWEEP[n] for n in by.get("mismatch", ())}
    unexpected = {n: SWEEP[n][1] for n in by.get("error", ()) if n not in KNOWN_ERRORS}
    assert not unexpected, unexpected
    for name in by.get("unsupported", ()):
        msg = SWEEP[name][1]
        assert "cannot run on Dask arrays" in msg and ".compute()" in msg, msg
    assert len(by["ok"]) >= 250, len(by["ok"])
    for name in ("exp", "sum", "matmul", "tensordot", "einsum", "where", "cumsum",
                 "linalg.solve", "linalg.inv", "linalg.norm", "getitem", "reshape"):
        assert SWEEP.get(name, ("ok",))[0] == "ok", (name, SWEEP.get(name))


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


def test_dask_with_gpu_tensor_is_an_error_naming_both_devices():
    import conftest
    B = conftest._emulated_backend()
    gpu = ndgrad.asarray(B.asarray(np.ones(3)))
    x = ndgrad.asarray(da.ones(3, chunks=2))
    with pytest.raises(DeviceMismatchError, match="dask and cuda:0"):
        x + gpu


# ------------------------------------------------------------------ distributed
@pytest.fixture(scope="module")
def client():
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=None)
    c = distributed.Client(cluster)
    yield c
    c.close()
    cluster.close()


def test_gradient_on_worker_processes(client):
    X, y, dX, dy = _data(n=400, chunks=100)
    w0 = np.array([-0.3, 0.2, 0.7])
    w = ndgrad.tensor(w0, requires_grad=True)
    loss = _loss(w, ndgrad.asarray(dX), ndgrad.asarray(dy))
    (g,) = ndgrad.autograd.grad(loss, [w], retain_graph=True)
    lv, gv = ndgrad.compute(loss, g)  # runs on the cluster (the client is the default)
    value, grad = _closed_form(w0, X, y)
    np.testing.assert_allclose(lv.item(), value, rtol=1e-12)
    np.testing.assert_allclose(gv.numpy(), grad, rtol=1e-12)
    loss.backward()
    np.testing.assert_allclose(w.grad.numpy(), grad, rtol=1e-12)
    assert len(client.scheduler_info()["workers"]) == 2
