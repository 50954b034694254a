"""Devices on a machine without CUDA: the CPU, and clear errors for CUDA (the CuPy backend
and its GPU-parametrized suite come with issue 8)."""

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


def test_cuda_availability_follows_what_cupy_sees(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)  # not installed: import fails
    assert nd.cuda.device_count() == 0 and nd.cuda.is_available() is False
    monkeypatch.setitem(sys.modules, "cupy", _fake_cupy(RuntimeError("no CUDA driver")))
    assert nd.cuda.device_count() == 0 and nd.cuda.is_available() is False
    monkeypatch.setitem(sys.modules, "cupy", _fake_cupy(2))
    assert nd.cuda.device_count() == 2 and nd.cuda.is_available() is True


def test_to_casts_and_keeps_the_cpu():
    x = nd.tensor([1.5, -2.0], requires_grad=True)
    assert x.to("cpu") is x and x.cpu() is x and x.to(nd.device("cpu")) is x
    assert x.to(x) is x                               # same device and dtype as another tensor
    y = x.to(nd.float32)
    assert y.dtype == np.float32 and y.device == "cpu"
    assert x.to("cpu", "float32").dtype == np.float32
    assert x.to(dtype=nd.complex128).dtype == np.complex128
    assert x.to(nd.tensor([1], dtype=nd.int64)).dtype == np.int64
    c = x.to(copy=True)
    assert c is not x and np.array_equal(c.detach().numpy(), x.detach().numpy())
    (y * y).sum().backward()                          # the cast is differentiable
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.array([1.5, -2.0]), rtol=1e-6)
    assert x.grad.dtype == np.float64


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
