"""The ``ndgrad.autograd`` facade: backward, grad, grad modes and the deprecated Variable."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ndgrad as nd
import ndgrad.autograd as autograd
from support import val


def test_facade_exposes_the_same_grad_modes_as_the_top_level():
    assert autograd.no_grad is nd.no_grad
    assert autograd.enable_grad is nd.enable_grad
    assert autograd.set_grad_enabled is nd.set_grad_enabled
    assert autograd.inference_mode is nd.inference_mode
    assert autograd.is_grad_enabled is nd.is_grad_enabled
    with autograd.no_grad():
        assert not autograd.is_grad_enabled()
    assert autograd.is_grad_enabled()


def test_backward_accumulates_like_tensor_backward():
    xv = np.array([0.5, 1.5])
    x = nd.tensor(xv, requires_grad=True)
    autograd.backward(nd.exp(x).sum())
    np.testing.assert_allclose(val(x.grad), np.exp(xv))
    autograd.backward([x * x], grad_tensors=[nd.tensor([1.0, -1.0])])
    np.testing.assert_allclose(val(x.grad), np.exp(xv) + 2 * xv * [1.0, -1.0])
    autograd.backward(x * 3.0, nd.tensor([2.0, 2.0]))  # a single tensor and gradient
    np.testing.assert_allclose(val(x.grad), np.exp(xv) + 2 * xv * [1.0, -1.0] + 6.0)


def test_backward_needs_tensors():
    with pytest.raises(RuntimeError, match="received no tensors"):
        autograd.backward([])
    with pytest.raises(TypeError, match=r"tensors\[0\] is a float, not a Tensor"):
        autograd.backward([1.0])


def test_grad_returns_a_tuple_of_gradients():
    x = nd.tensor(2.0, requires_grad=True)
    y = nd.tensor(-1.0, requires_grad=True)
    gx, gy = autograd.grad(x * x * y, (x, y))
    np.testing.assert_allclose(val(gx), 2 * 2.0 * -1.0)
    np.testing.assert_allclose(val(gy), 4.0)
    assert x.grad is None and y.grad is None


def test_grad_rejects_non_tensors():
    x = nd.tensor(2.0, requires_grad=True)
    with pytest.raises(TypeError, match=r"inputs\[0\] is a ndarray, not a Tensor"):
        autograd.grad(x * x, [np.ones(1)])
    with pytest.raises(TypeError, match=r"outputs\[0\] is a float, not a Tensor"):
        autograd.grad([2.0], x)
    with pytest.raises(RuntimeError, match="at least one input"):
        autograd.grad(x * x, [])


def test_node_is_exported():
    x = nd.tensor([1.0], requires_grad=True)
    assert isinstance((x * 2).grad_fn, autograd.Node)
    assert isinstance((x * 2).grad_fn.next_functions[0][0], autograd.Node)


def test_variable_warns_and_returns_a_tensor():
    with pytest.warns(DeprecationWarning, match="Variable is deprecated.*requires_grad"):
        v = autograd.Variable(nd.tensor([1.0, 2.0]), requires_grad=True)
    assert type(v) is nd.Tensor
    assert v.requires_grad and v.is_leaf
    (v * v).sum().backward()
    np.testing.assert_array_equal(val(v.grad), [2.0, 4.0])


def test_variable_from_data_and_without_requires_grad():
    with pytest.warns(DeprecationWarning):
        v = autograd.Variable([1.5, 2.5])
    assert isinstance(v, nd.Tensor) and not v.requires_grad
    assert v.dtype == nd.float64
    np.testing.assert_array_equal(v.cpu().numpy(), [1.5, 2.5])
    with pytest.warns(DeprecationWarning):
        w = autograd.Variable(np.array([1.0, 2.0], dtype=np.float32), requires_grad=True)
    assert w.dtype == nd.float32 and w.requires_grad


def test_variable_of_a_non_leaf_gives_a_leaf():
    x = nd.tensor([1.0, 2.0], requires_grad=True)
    h = x * 3
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        with pytest.raises(DeprecationWarning):
            autograd.Variable(h)
    with pytest.warns(DeprecationWarning):
        v = autograd.Variable(h, requires_grad=True)
    assert v.is_leaf and v.requires_grad
    np.testing.assert_array_equal(val(v), [3.0, 6.0])
    (v * v).sum().backward()
    np.testing.assert_array_equal(val(v.grad), [6.0, 12.0])
    assert x.grad is None  # cut from h's history


def test_variable_of_a_tensor_is_a_new_leaf_sharing_storage():
    t = nd.tensor([1.0, 2.0])
    with pytest.warns(DeprecationWarning):
        v = autograd.Variable(t, requires_grad=True)
    assert v is not t and v.requires_grad
    assert not t.requires_grad  # the argument is not modified
    assert t.backend.shares_memory(v._data, t._data)
    x = nd.tensor([1.0, 2.0], requires_grad=True)
    with pytest.warns(DeprecationWarning):
        w = autograd.Variable(x)
    assert not w.requires_grad and w.is_leaf and x.requires_grad
