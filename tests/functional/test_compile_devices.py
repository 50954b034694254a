"""Compiled programs on every backend (issue 36's "every backend"): the program calls the
backend's own functions on its arrays, CuPy's (emulated without a GPU) and Dask's, and gives
eager ndgrad's values there."""

from __future__ import annotations

import numpy as np
import pytest

import ndgrad as nd
from ndgrad.func import compile, grad, hessian, jacrev
from support import close

RNG = np.random.default_rng(362)
X0 = RNG.normal(size=6)


def _f(x):
    return (nd.tanh(x) ** 2 * nd.exp(-x)).sum() + (x[1:] * x[:-1]).sum()


def test_a_compiled_gradient_runs_on_the_device_of_its_arguments(device):
    x = nd.tensor(X0, device=device)
    cg = compile(grad(_f))
    cg(x)
    out = cg(x)                       # the program's run
    assert str(out.device) == str(x.device) and type(out._data) is type(x._data)
    close(out.cpu() if device != "cpu" else out, grad(_f)(nd.tensor(X0)), atol=1e-13)
    h = compile(hessian(_f))
    h(x)
    close(h(x).cpu() if device != "cpu" else h(x), hessian(_f)(nd.tensor(X0)), atol=1e-12)


@pytest.mark.cpu_only("Dask arrays are a backend of their own")
def test_a_compiled_gradient_of_dask_arrays_is_a_dask_graph():
    da = pytest.importorskip("dask.array")
    x = nd.asarray(da.from_array(X0, chunks=3))
    cg = compile(grad(_f))
    cg(x)
    out = cg(x)
    assert type(out._data) is type(x._data)     # (lazy: a graph of the program)
    assert "out=" not in cg.source(x)          # (no buffer of a lazy backend is reused)
    close(nd.compute(out)[0], grad(_f)(nd.tensor(X0)), atol=1e-13)


def _tanh_chain(x):
    y = x
    for _ in range(3):
        y = nd.tanh(y * 1.0001 + 0.5)
    return (y ** 2).sum()


@pytest.mark.gpu_only("CuPy's fusion of elementwise chains (cupy.fuse)")
def test_elementwise_chains_fuse_into_one_kernel_each(device):
    """On the CUDA backend each run of elementwise steps of a compiled program is one fused
    kernel (Note [Fused kernels] in ndgrad/functional/program.py): the gradient of a tanh
    chain is one kernel from the input to the gradient, the Hessian's runs are kernels
    between its other steps, and the values are eager's (finite differences too)."""
    emulated = pytest.importorskip("emulated_cupy")
    x = nd.tensor(X0, device=device)
    B = x.backend
    log = emulated.FUSE_LOG if B._cp.fuse is emulated.fuse else None
    cg = compile(grad(_tanh_chain))
    cg(x)
    src = cg.source(x)
    # (its constant factors are Python numbers, written in the kernel: it reads x alone)
    assert src.count("def fused_") == 1 and "v25, = fused_1(v0)" in src
    if log is not None:
        log.clear()
    out = cg(x)
    if log is not None:
        assert log == ["ndgrad_fused_1"]          # (one kernel ran, nothing else)
    expected = grad(_tanh_chain)(nd.tensor(X0))
    close(out.cpu(), expected, atol=1e-13)
    h = 1e-6
    fd = [(_tanh_chain(nd.tensor(X0 + h * e)).item() - _tanh_chain(nd.tensor(X0 - h * e))
           .item()) / (2 * h) for e in np.eye(X0.size)]
    close(out.cpu(), fd, atol=1e-7)
    ch = compile(hessian(_f))
    ch(x)
    kernels = ch.source(x).count("def fused_")
    steps = sum(1 for line in ch.source(x).splitlines() if line.startswith("    v"))
    assert 1 <= kernels < steps
    if log is not None:
        log.clear()
    close(ch(x).cpu(), hessian(_f)(nd.tensor(X0)), atol=1e-12)
    if log is not None:
        assert len(log) == kernels


@pytest.mark.gpu_only("CuPy's fusion of elementwise chains (cupy.fuse)")
def test_a_kernel_the_backend_cannot_fuse_runs_as_its_steps(device, monkeypatch):
    """A fused kernel that fails to build or run on its first call runs as its steps from
    then on: the program's values are eager's."""
    x = nd.tensor(X0, device=device)
    B = x.backend
    made = []

    def refusing(f, name):
        def kernel(*args):
            made.append(name)
            raise TypeError("not supported in fusion")
        return kernel

    fusable = B.elementwise_fusion()[1]
    monkeypatch.setattr(B, "elementwise_fusion", lambda: (refusing, fusable))
    cg = compile(grad(_tanh_chain))
    cg(x)
    expected = grad(_tanh_chain)(nd.tensor(X0))
    for _ in range(2):
        close(cg(x).cpu(), expected, atol=1e-13)
    assert made == ["ndgrad_fused_1"]      # (tried once, then its steps)


@pytest.mark.cpu_only("NumPy's programs")
def test_a_numpy_program_has_no_fused_kernels():
    """NumPy has no fusion: its programs call each ufunc, writing into buffers (out=)."""
    src = compile(grad(_tanh_chain)).source(nd.tensor(X0))
    assert "fused" not in src and "out=" in src


def test_a_folded_constant_stays_on_the_programs_device(device):
    """A constant the optimiser computes (a negation moved onto a constant factor: Note
    [Program rewrites]) is an array of the program's backend: on the CUDA backend it was a
    host array, which CuPy refuses (jacrev(grad(f)) of an in-place update failed)."""
    def f(x):
        y = x * 1.0
        w = y[1:4]
        w.mul_(nd.cos(x[:3]))
        return (y * y).sum()

    x = nd.tensor(X0, device=device)
    c = compile(jacrev(grad(f)))
    c(x)
    got = c(x)
    assert all(type(k) is not np.ndarray or device == "cpu" for k in c.program(x).consts)
    close(got.cpu() if device != "cpu" else got, jacrev(grad(f))(nd.tensor(X0)), atol=1e-12)
