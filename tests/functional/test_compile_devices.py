"""Compiled programs on every backend (issue 36's "every backend"): the program calls the
backend's own functions on its arrays, CuPy's (emulated without a GPU) and Dask's, and gives
eager ndgrad's values there."""

from __future__ import annotations

import numpy as np
import pytest

import ndgrad as nd
from ndgrad.func import compile, grad, hessian
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
