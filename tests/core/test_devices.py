"""Devices: the CPU, clear errors for CUDA on machines without it, and the CUDA backend's
contracts (transfers, device-mixing errors, dtypes, transforms and checks on the device), run
on the emulated CUDA device everywhere (Note [Devices in the test suite] in tests/conftest.py)."""

from __future__ import annotations

import subprocess
import sys
import types

import numpy as np
import pytest

import ndgrad as nd


def test_importing_ndgrad_does_not_import_cupy():
    out = subprocess.run([sys.executable, "-c",
                          "import ndgrad, sys; print('cupy' in sys.modules)"],
                         capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def _fake_cupy(count):
    def get_device_count():
        if isinstance(count, Exception):
            raise count
        return count
    runtime = types.SimpleNamespace(getDeviceCount=get_device_count)
    mod = types.ModuleType("cupy")
    mod.cuda = types.SimpleNamespace(runtime=runtime)
    return mod


@pytest.mark.cpu_only("it replaces CuPy with fakes that see no or two GPUs")
def test_cuda_availability_follows_what_cupy_sees(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)  # not installed: import fails
    assert nd.cuda.device_count() == 0 and nd.cuda.is_available() is False
    monkeypatch.setitem(sys.modules, "cupy", _fake_cupy(RuntimeError("no CUDA driver")))
    assert nd.cuda.device_count() == 0 and nd.cuda.is_available() is False
    monkeypatch.setitem(sys.modules, "cupy", _fake_cupy(2))
    assert nd.cuda.device_count() == 2 and nd.cuda.is_available() is True


def test_to_casts_and_keeps_the_cpu():
    x = nd.tensor([1.5, -2.0], device="cpu", requires_grad=True)
    assert x.to("cpu") is x and x.cpu() is x and x.to(nd.device("cpu")) is x
    assert x.to(x) is x                               # same device and dtype as another tensor
    y = x.to(nd.float32)
    assert y.dtype == np.float32 and y.device == "cpu"
    assert x.to("cpu", "float32").dtype == np.float32
    assert x.to(dtype=nd.complex128).dtype == np.complex128
    assert x.to(nd.tensor([1], dtype=nd.int64)).dtype == np.int64
    c = x.to(copy=True)
    assert c is not x and np.array_equal(c.detach().cpu().numpy(), x.detach().cpu().numpy())
    (y * y).sum().backward()                          # the cast is differentiable
    np.testing.assert_allclose(x.grad.cpu().numpy(), 2 * np.array([1.5, -2.0]), rtol=1e-6)
    assert x.grad.dtype == np.float64


@pytest.mark.cpu_only("it is about machines without a GPU")
def test_cuda_without_a_gpu_says_how_to_get_one(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)
    x = nd.tensor([1.0])
    for call in (x.cuda, lambda: x.cuda(1), lambda: x.to("cuda:1"),
                 lambda: nd.tensor([1.0], device="cuda"), lambda: nd.zeros(2, device="cuda")):
        with pytest.raises(RuntimeError, match=r'pip install "ndgrad\[cuda12\]"'):
            call()
    with pytest.raises(RuntimeError, match="'cuda:1' is not available"):
        x.cuda(1)


def test_to_argument_errors():
    x = nd.tensor([1.0])
    with pytest.raises(TypeError, match="'gpu' is neither a device"):
        x.to("gpu")
    with pytest.raises(TypeError, match="got the dtype twice"):
        x.to(nd.float32, nd.float64)
    with pytest.raises(TypeError, match="got the device twice"):
        x.to("cpu", "cpu")
    with pytest.raises(ValueError, match="unknown device type 'tpu'"):
        x.to(device="tpu")


# ---------------------------------------------------------------- the CUDA backend (emulated)
# These run on the emulated CUDA device of tests/emulated_cupy.py everywhere (and on a real GPU
# where there is one): the CuPy code paths of ndgrad, on machines without a GPU. The `device`
# fixture (tests/conftest.py) makes that device the default; "cpu" runs check the same
# contracts between the CPU and itself where they apply.
from ndgrad.checks import gradcheck, gradgradcheck  # noqa: E402
from ndgrad.core import backend as _backend  # noqa: E402
from support import host  # noqa: E402




@pytest.mark.gpu_only("the CUDA backend's contract (real or emulated)")
def test_tensors_live_on_the_requested_device(device):
    x = nd.tensor([1.0, 2.0], device="cuda")
    assert x.device == "cuda:0" and x.device == nd.device("cuda", 0)
    assert type(x._data) is not np.ndarray
    assert "device='cuda:0'" in repr(x)
    for t in (nd.zeros(2, 3, device="cuda"), nd.ones(2, device="cuda:0"),
              nd.full((2,), 3.0, device="cuda"), nd.arange(3, device="cuda"),
              nd.linspace(0, 1, 3, device="cuda"), nd.eye(2, device="cuda"),
              nd.randn(2, device="cuda"), nd.rand(2, device="cuda"),
              nd.empty(2, device="cuda"), nd.zeros_like(x), nd.ones_like(x, device="cuda"),
              nd.full_like(x, 2.0), nd.asarray([1.0], device="cuda")):
        assert t.device == "cuda:0", t
    assert nd.zeros_like(x, device="cpu").device == "cpu"
    np.testing.assert_array_equal(host(nd.arange(3, device="cuda")), [0, 1, 2])
    np.testing.assert_array_equal(host(nd.eye(2, device="cuda")), np.eye(2))
    nd.manual_seed(3)
    a = host(nd.randn(4, device="cuda"))
    nd.manual_seed(3)
    np.testing.assert_array_equal(host(nd.randn(4, device="cuda")), a)


@pytest.mark.gpu_only("the CUDA backend's contract (real or emulated)")
def test_moving_between_devices_is_differentiable(device):
    x = nd.tensor([0.5, -1.5, 2.0], device="cpu", requires_grad=True)
    y = x.to("cuda")
    assert y.device == "cuda:0" and y.grad_fn is not None
    e = y.exp() * y
    z = e.cuda()
    assert z is e                                  # already there: the same tensor
    assert z.cpu().device == "cpu"
    z.cpu().sum().backward()
    assert x.grad.device == "cpu"                  # .grad lives on the parameter's device
    xs = np.array([0.5, -1.5, 2.0])
    np.testing.assert_allclose(host(x.grad), np.exp(xs) * (1 + xs), rtol=1e-12)
    # a parameter on the GPU gets its gradient there, through a CPU detour
    w = nd.tensor([1.0, 2.0], device="cuda", requires_grad=True)
    (w.cpu() ** 3).sum().backward()
    assert w.grad.device == "cuda:0"
    np.testing.assert_allclose(host(w.grad), 3 * np.array([1.0, 2.0]) ** 2)
    # every order, both ways
    xd = nd.tensor([0.3, 0.7], dtype=nd.float64, device="cpu", requires_grad=True)
    assert gradcheck(lambda t: (t.to("cuda") ** 3).sin().to("cpu"), (xd,))
    assert gradgradcheck(lambda t: (t.to("cuda") ** 3).sin().cpu(), (xd,))
    xc = nd.tensor([0.3, 0.7], dtype=nd.float64, device="cuda", requires_grad=True)
    assert gradcheck(lambda t: t.cpu().tanh().cuda() * t, (xc,), check_forward_ad=True)


@pytest.mark.gpu_only("the CUDA backend's contract (real or emulated)")
def test_mixing_devices_is_an_error_naming_both(device):
    a = nd.tensor([1.0, 2.0], device="cuda")
    b = nd.tensor([1.0, 2.0], device="cpu")
    for call in (lambda: a + b, lambda: b * a, lambda: nd.where(a > 0, a, b),
                 lambda: nd.stack([a, b]), lambda: nd.matmul(b, a)):
        with pytest.raises(RuntimeError, match=r"same device.*(cuda:0 and cpu|cpu and cuda:0)"):
            call()
    np.testing.assert_allclose(host(a * 2.0 + 1), [3.0, 5.0])  # Python scalars are fine
    assert (a * 2.0).device == "cuda:0"


@pytest.mark.gpu_only("the CUDA backend's contract (real or emulated)")
def test_a_device_mix_names_the_function_called(device):
    """The message starts with the public function's name: the op's (with its namespace),
    or a composite's, whichever op inside it met the two devices."""
    a = nd.tensor([[1.0, 2.0], [0.5, 3.0]], device="cuda")
    b = np.array([[1.0, 2.0], [3.0, 4.0]])
    for name, call in [("special.xlogy", lambda: nd.special.xlogy(a, b)),
                       ("add", lambda: a + b),
                       ("special.logsumexp", lambda: nd.special.logsumexp(a, b=b)),
                       ("linalg.solve", lambda: nd.linalg.solve(a, b))]:
        with pytest.raises(RuntimeError, match=rf"^{name}: expected all tensors to be on the "
                                               r"same device, but found at least two "
                                               r"devices, (cuda:0 and cpu|cpu and cuda:0)"):
            call()


@pytest.mark.gpu_only("the CUDA backend's contract (real or emulated)")
def test_numpy_of_a_gpu_tensor_says_to_call_cpu_first(device):
    a = nd.tensor([1.0, 2.0], device="cuda")
    with pytest.raises(TypeError, match=r"cuda:0 tensor.*\.cpu\(\)"):
        a.numpy()
    with pytest.raises(TypeError, match=r"\.cpu\(\)"):
        np.asarray(a)
    np.testing.assert_array_equal(a.cpu().numpy(), [1.0, 2.0])
    assert a.tolist() == [1.0, 2.0] and a[1].item() == 2.0 and float(a.sum()) == 3.0


@pytest.mark.gpu_only("the CUDA backend's contract (real or emulated)")
def test_gradients_must_be_on_the_output_device(device):
    w = nd.tensor([1.0, 2.0], device="cuda", requires_grad=True)
    y = w * 2
    with pytest.raises(RuntimeError, match=r"grad_output\[0\] is on cpu, but output\[0\] is on "
                                           r"cuda:0"):
        y.backward(nd.ones(2, device="cpu"))
    with pytest.raises(RuntimeError, match="assigned grad is on cpu, but the tensor is on cuda:0"):
        w.grad = nd.zeros(2, device="cpu")
    y.backward(nd.ones(2, device="cuda"))
    np.testing.assert_allclose(host(w.grad), [2.0, 2.0])


@pytest.mark.gpu_only("the CUDA backend's contract (real or emulated)")
def test_a_second_gpu(device):
    if nd.cuda.device_count() < 2:
        pytest.skip("one GPU")
    x = nd.tensor([1.0, 2.0], device="cuda:1", requires_grad=True)
    assert x.device == "cuda:1"
    with nd.cuda.device(1):
        y = (x * x).sum()
        y.backward()
        assert x.grad.device == "cuda:1"
        np.testing.assert_allclose(host(x.grad), [2.0, 4.0])
    z = x.detach().to("cuda:0")
    assert z.device == "cuda:0"
    np.testing.assert_allclose(host(z), [1.0, 2.0])
    with pytest.raises(RuntimeError, match=r"'cuda:7' is not available: CuPy sees \d GPU"):
        nd.zeros(1, device="cuda:7")


@pytest.mark.gpu_only("the CUDA backend's contract (real or emulated)")
def test_cupy_arrays_are_wrapped_in_place(device):
    B = _backend.backend_for_device("cuda")
    raw = B.asarray(np.array([1.0, 2.0]))
    t = nd.asarray(raw)
    assert t.device == "cuda:0" and t._data is raw          # no copy
    assert nd.tensor(raw).device == "cuda:0" and nd.tensor(raw)._data is not raw
    assert nd.asarray(raw, device="cpu").device == "cpu"
    with pytest.raises(ValueError, match="needs a copy"):
        nd.asarray(np.ones(2), device="cuda", copy=False)


@pytest.mark.gpu_only("the CUDA backend's contract (real or emulated)")
def test_default_device(device):
    prev = nd.get_default_device()
    try:
        nd.set_default_device("cpu")
        assert nd.zeros(1).device == "cpu" and nd.tensor([1.0]).device == "cpu"
        nd.set_default_device("cuda")
        assert nd.zeros(1).device == "cuda:0" and nd.tensor(np.ones(2)).device == "cuda:0"
        assert nd.get_default_device() == "cuda:0"
        assert nd.tensor(nd.ones(1, device="cpu")).device == "cpu"  # a tensor stays put
    finally:
        nd.set_default_device(prev)


@pytest.mark.gpu_only("the CUDA backend's contract (real or emulated)")
def test_functions_cupy_lacks_run_on_the_device_or_the_host(device):
    B = _backend.backend_for_device("cuda")
    a = nd.tensor([[3.0, -4.0], [1.0, 2.0]], device="cuda", requires_grad=True)
    for ord_ in (2, 1, np.inf, -np.inf, 0, 3):                  # vector_norm: on the device
        n = nd.linalg.vector_norm(a, ord=ord_, axis=-1)
        np.testing.assert_allclose(host(n), np.linalg.vector_norm(
            np.array([[3.0, -4.0], [1.0, 2.0]]), ord=ord_, axis=-1), rtol=1e-12)
    np.testing.assert_allclose(host(nd.vecdot(a, a)), [25.0, 5.0])
    r = B.geomspace(1.0, 8.0, 4)        # CuPy 14.2 has no geomspace: NumPy's, on the host
    assert type(r) is B.array_type and "geomspace" in B.host_fallbacks
    np.testing.assert_allclose(B.to_numpy(r), [1.0, 2.0, 4.0, 8.0])


@pytest.mark.gpu_only("the CUDA backend's contract (real or emulated)")
def test_dtypes_on_the_device(device):
    for dt, tol in ((nd.float16, 1e-2), (nd.float32, 1e-6), (nd.float64, 1e-12),
                    (nd.complex64, 1e-6), (nd.complex128, 1e-12)):
        x = nd.tensor([0.5, 1.5], dtype=dt, device="cuda", requires_grad=True)
        y = (x * x).real.sum() if dt.kind == "c" else (x * x).sum()
        y.backward()
        assert x.grad.dtype == dt and x.grad.device == "cuda:0"
        np.testing.assert_allclose(host(x.grad), [1.0, 3.0], rtol=tol)


@pytest.mark.cpu_only("bfloat16 (ml_dtypes) is a CPU dtype: CuPy does not support it")
def test_bfloat16_on_the_cpu():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    bf16 = nd.bfloat16
    assert bf16 == np.dtype(ml_dtypes.bfloat16) and nd.core.backend.as_dtype("bfloat16") == bf16
    x = nd.tensor([0.5, 1.5, -2.0], dtype=bf16, requires_grad=True)
    assert x.is_floating_point()
    # Python floats are weak (NEP 50), as for float16: bfloat16 stays bfloat16
    assert (x * 2.0).dtype == bf16 and (1.5 - x).dtype == bf16 and (x + 1).dtype == bf16
    np.testing.assert_array_equal((x * 2.0).detach().numpy().astype(np.float32), [1, 3, -4])
    y = (x * x).sum()
    y.backward()
    assert x.grad.dtype == bf16
    np.testing.assert_array_equal(x.grad.cpu().numpy().astype(np.float32), [1.0, 3.0, -4.0])
    z = nd.tensor([0.25, 0.5], dtype=bf16, requires_grad=True)
    g, = nd.autograd.grad(nd.exp(z).sum(), z)
    np.testing.assert_allclose(g.cpu().numpy().astype(np.float64), np.exp([0.25, 0.5]), rtol=1e-2)
    with pytest.raises(RuntimeError, match="floating point and complex"):
        nd.tensor([1, 2]).requires_grad_()


@pytest.mark.gpu_only("the CUDA backend's contract (real or emulated)")
def test_bfloat16_is_refused_by_the_cuda_backend(device):
    pytest.importorskip("ml_dtypes")
    with pytest.raises(TypeError, match="CuPy does not support bfloat16"):
        nd.tensor([1.0], dtype=nd.bfloat16, device="cuda")
    with pytest.raises(TypeError, match="CuPy does not support bfloat16"):
        nd.tensor([1.0], dtype=nd.bfloat16).to("cuda")


@pytest.mark.gpu_only("the CUDA backend's contract (real or emulated)")
def test_transforms_and_checks_on_the_device(device):
    A = nd.tensor(np.array([[1.0, 2.0], [0.5, -1.0]]), device="cuda")
    x = nd.tensor([0.3, -0.2], device="cuda", requires_grad=True)
    J = nd.func.jacrev(lambda v: nd.tanh(A @ v))(x)
    assert J.device == "cuda:0"
    a, xs = np.array([[1.0, 2.0], [0.5, -1.0]]), np.array([0.3, -0.2])
    np.testing.assert_allclose(host(J), (1 - np.tanh(a @ xs) ** 2)[:, None] * a, rtol=1e-12)
    H = nd.func.hessian(lambda v: (v ** 4).sum())(x)
    np.testing.assert_allclose(host(H), np.diag(12 * xs ** 2), rtol=1e-12)
    v = nd.func.vmap(lambda r: (r * x).sum())(nd.ones(3, 2, device="cuda"))
    np.testing.assert_allclose(host(v), [0.1, 0.1, 0.1], rtol=1e-12)
    assert gradcheck(lambda t: nd.linalg.solve(A + 3 * nd.eye(2, device="cuda"), t.sin()), (x,),
                     check_forward_ad=True, check_batched_grad=True)


def test_dlpack_shares_the_data_and_refuses_a_graph():
    x = nd.tensor([1.0, 2.0, 3.0], device="cpu")
    a = np.from_dlpack(x)
    a[0] = 7.0                                         # the same memory
    np.testing.assert_array_equal(x.numpy(), [7.0, 2.0, 3.0])
    assert not hasattr(x, "__cuda_array_interface__")  # a CPU tensor has none
    w = nd.tensor([1.0], device="cpu", requires_grad=True)
    with pytest.raises(RuntimeError, match="requires grad through DLPack; use tensor.detach"):
        np.from_dlpack(w)


def test_a_cupy_array_before_any_cuda_use_stays_on_the_gpu(monkeypatch):
    """asarray(cupy_array) sets the CUDA backend up when it has not been used yet (it used
    to treat the array as NumPy data)."""
    import emulated_cupy
    cupy, cupyx = emulated_cupy.make_modules()
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    monkeypatch.setitem(sys.modules, "cupyx", cupyx)
    monkeypatch.setitem(_backend._CUDA, "backend", None)     # no CUDA use yet
    monkeypatch.delitem(_backend._BACKEND_BY_TYPE, cupy.ndarray, raising=False)
    a = cupy.asarray(np.array([1.0, 2.0]))
    t = nd.asarray(a, requires_grad=True)
    assert t.device == "cuda:0" and t._data is a
    (t * t).sum().backward()
    np.testing.assert_allclose(host(t.grad), [2.0, 4.0])
    _backend._BACKEND_BY_TYPE.pop(cupy.ndarray, None)        # (monkeypatch restores it)
