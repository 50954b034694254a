"""Tensors pickle (and deepcopy) as PyTorch's do: data, device, requires_grad and a leaf's
.grad, never the graph; 0-d tensors take format specs."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

import ndgrad as nd
from support import close, host


def _used_leaf():
    w = nd.tensor([1.0, -2.0, 0.5], requires_grad=True)
    (w * w).sum().backward()  # used in a computation: it has an AccumulateGrad node now
    return w


@pytest.mark.parametrize("how", ["pickle", "deepcopy"])
def test_a_used_leaf_pickles_with_requires_grad_and_grad(how):
    w = _used_leaf()
    w2 = pickle.loads(pickle.dumps(w)) if how == "pickle" else copy.deepcopy(w)
    assert w2 is not w and w2.is_leaf and w2.requires_grad
    assert w2.device == w.device and w2.dtype == w.dtype
    close(w2.detach(), [1.0, -2.0, 0.5])
    close(w2.grad, [2.0, -4.0, 1.0])
    # an independent copy: its data, its grad and its graph are its own
    with nd.no_grad():
        w2.mul_(3.0)
    close(w.detach(), [1.0, -2.0, 0.5])
    w2.grad = None
    (w2 * 2.0).sum().backward()
    close(w2.grad, [2.0, 2.0, 2.0])
    close(w.grad, [2.0, -4.0, 1.0])


def test_pickling_keeps_dtype_and_plain_tensors():
    t = nd.tensor([[1, 2], [3, 4]], dtype=nd.int32)
    t2 = pickle.loads(pickle.dumps(t))
    assert t2.dtype == nd.int32 and not t2.requires_grad
    np.testing.assert_array_equal(host(t2), [[1, 2], [3, 4]])
    # a tensor made under no_grad from one that requires grad has no graph: it pickles
    w = _used_leaf()
    with nd.no_grad():
        y = w * 2.0
    close(pickle.loads(pickle.dumps(y)), [2.0, -4.0, 1.0])


@pytest.mark.parametrize("how", ["pickle", "deepcopy"])
def test_a_non_leaf_that_requires_grad_is_refused_with_a_hint(how):
    y = _used_leaf() * 2.0
    with pytest.raises(RuntimeError, match=r"grad_fn=<MultiplyBackward0>.*detach\(\)"):
        pickle.dumps(y) if how == "pickle" else copy.deepcopy(y)
    close(pickle.loads(pickle.dumps(y.detach())), [2.0, -4.0, 1.0])


def test_format_specs_on_0d_tensors_as_pytorch():
    loss = nd.tensor(0.123456789, requires_grad=True) * 1.0
    assert f"{loss:.4f}" == "0.1235"
    assert f"{nd.tensor(3):>4d}" == "   3"
    assert f"{nd.tensor(2.5):e}" == "2.500000e+00"
    assert f"{nd.tensor([1.0, 2.0])}" == str(nd.tensor([1.0, 2.0]))
    with pytest.raises(TypeError, match=r"shape \[2\]: only 0-d tensors take a format spec"):
        f"{nd.tensor([1.0, 2.0]):.2f}"
