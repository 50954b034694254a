"""Hooks: Tensor.register_hook, retain_grad, and Node pre/post hooks (issue "Reverse mode")."""

from __future__ import annotations

import numpy as np
import pytest

import ndgrad as nd
from ndgrad.autograd import grad
from support import close, val


XV = np.array([0.5, -1.5, 2.0])


# ---------------------------------------------------------------------------- tensor hooks
def test_leaf_hook_replaces_the_gradient():
    x = nd.tensor(XV, requires_grad=True)
    x.register_hook(lambda g: g * 10)
    (x * x).sum().backward()
    close(x.grad, 20 * XV)


def test_leaf_hook_sees_the_summed_gradient_once():
    calls = []
    x = nd.tensor(XV, requires_grad=True)
    x.register_hook(lambda g: calls.append(val(g).copy()))
    (x * x + nd.exp(x)).sum().backward()  # x reaches the leaf along three edges
    assert len(calls) == 1
    np.testing.assert_allclose(calls[0], 2 * XV + np.exp(XV))
    close(x.grad, 2 * XV + np.exp(XV))  # returning None keeps the gradient


def test_hooks_run_in_registration_order_and_chain():
    order = []
    x = nd.tensor(XV, requires_grad=True)

    def first(g):
        order.append("first")
        return g + 1.0

    def second(g):
        order.append("second")
        return g * 3.0

    x.register_hook(first)
    x.register_hook(second)
    x.sum().backward()
    assert order == ["first", "second"]
    close(x.grad, np.full(3, (1.0 + 1.0) * 3.0))


def test_non_leaf_hook_changes_what_flows_upstream():
    seen = []
    x = nd.tensor(XV, requires_grad=True)
    h = nd.exp(x)
    h.register_hook(lambda g: seen.append(val(g).copy()) or g * 0.5)
    (h * h + h).sum().backward()  # h used twice: the hook gets the sum, once
    assert len(seen) == 1
    np.testing.assert_allclose(seen[0], 2 * np.exp(XV) + 1)
    close(x.grad, 0.5 * (2 * np.exp(XV) + 1) * np.exp(XV))


def test_handle_remove_unregisters_the_hook():
    x = nd.tensor(XV, requires_grad=True)
    handle = x.register_hook(lambda g: g * 100)
    handle.remove()
    (x * 2).sum().backward()
    close(x.grad, np.full(3, 2.0))
    handle.remove()  # removing twice is harmless
    h = x * 1.0
    handle2 = h.register_hook(lambda g: g * 100)
    handle2.remove()
    x.grad = None
    (h * 2).sum().backward()
    close(x.grad, np.full(3, 2.0))


def test_handle_is_a_context_manager():
    x = nd.tensor(XV, requires_grad=True)
    with x.register_hook(lambda g: g * 7):
        x.sum().backward()
    close(x.grad, np.full(3, 7.0))
    x.sum().backward()
    close(x.grad, np.full(3, 8.0))


def test_leaf_hooks_apply_to_autograd_grad_too():
    x = nd.tensor(XV, requires_grad=True)
    x.register_hook(lambda g: g * 10)
    (gx,) = grad((x * x).sum(), x)
    close(gx, 20 * XV)
    assert x.grad is None


def test_hook_must_return_a_tensor_of_the_same_shape():
    x = nd.tensor(XV, requires_grad=True)
    x.register_hook(lambda g: nd.ones(2))
    with pytest.raises(RuntimeError, match=r"hook returned a gradient of shape \[2\].*\[3\]"):
        x.sum().backward()
    y = nd.tensor(XV, requires_grad=True)
    y.register_hook(lambda g: np.ones(3))
    with pytest.raises(TypeError, match="hook returned a ndarray.*Tensor or None"):
        y.sum().backward()


def test_register_hook_on_a_tensor_that_does_not_require_grad_is_an_error():
    with pytest.raises(RuntimeError, match="doesn't require gradient"):
        nd.tensor(XV).register_hook(lambda g: g)


def test_hook_on_a_zero_dim_tensor():
    x = nd.tensor(1.5, requires_grad=True)
    x.register_hook(lambda g: g * 2)
    (x * x).backward()
    close(x.grad, 6.0)
    h = x * 1.0
    h.register_hook(lambda g: g + 1.0)
    x.grad = None
    (h * 3.0).backward()
    close(x.grad, 2 * (3.0 + 1.0))


def test_hook_gets_a_differentiable_gradient_under_create_graph():
    x = nd.tensor(XV, requires_grad=True)
    got = []
    x.register_hook(lambda g: got.append(g.requires_grad) or g * g)  # squares the gradient
    (gx,) = grad((x * x * x).sum(), x, create_graph=True)  # (3x^2)^2
    close(gx, 9 * XV**4)
    assert got == [True]
    # d/dx 9x^4 = 36x^3; the leaf hook runs again on this gradient (as in PyTorch)
    (ggx,) = grad(gx.sum(), x)
    close(ggx, (36 * XV**3) ** 2)
    assert got == [True, False]


# ---------------------------------------------------------------------------- retain_grad
def test_retain_grad_populates_a_non_leaf_grad():
    x = nd.tensor(XV, requires_grad=True)
    h = nd.tanh(x)
    h.retain_grad()
    assert h.retains_grad and not x.retains_grad
    (h * h).sum().backward()
    close(h.grad, 2 * np.tanh(XV))
    close(x.grad, 2 * np.tanh(XV) * (1 - np.tanh(XV) ** 2))


def test_retained_grad_accumulates_across_backward_calls():
    x = nd.tensor(XV, requires_grad=True)
    h = x * 2.0
    h.retain_grad()
    y = (h * h).sum()
    y.backward(retain_graph=True)
    y.backward()
    close(h.grad, 2 * 2 * (2 * XV))


def test_retain_grad_sees_the_gradient_after_other_hooks():
    x = nd.tensor(XV, requires_grad=True)
    h = x * 2.0
    h.retain_grad()
    h.register_hook(lambda g: g * 100)  # registered after retain_grad, still applied first
    h.sum().backward()
    close(h.grad, np.full(3, 100.0))
    close(x.grad, np.full(3, 200.0))


def test_retain_grad_on_a_leaf_is_a_no_op_and_needs_requires_grad():
    x = nd.tensor(XV, requires_grad=True)
    x.retain_grad()
    (x * 3).sum().backward()
    close(x.grad, np.full(3, 3.0))
    with pytest.raises(RuntimeError, match="retain_grad on Tensor that has requires_grad=False"):
        nd.tensor(XV).retain_grad()


def test_retain_grad_does_not_keep_the_tensor_alive():
    import gc
    import weakref
    x = nd.tensor(XV, requires_grad=True)
    h = x * 2.0
    h.retain_grad()
    y = (h * 3.0).sum()
    r = weakref.ref(h)
    del h
    gc.collect()
    assert r() is None
    y.backward()
    close(x.grad, np.full(3, 6.0))


# ---------------------------------------------------------------------------- node hooks
def test_node_post_hook_receives_grad_inputs_and_grad_outputs():
    a = nd.tensor([1.0, 2.0], requires_grad=True)
    b = nd.tensor([3.0, 4.0], requires_grad=True)
    y = a * b
    rec = {}

    def post(grad_inputs, grad_outputs):
        rec["gi"] = [val(g).copy() for g in grad_inputs]
        rec["go"] = [val(g).copy() for g in grad_outputs]

    y.grad_fn.register_hook(post)
    (y * nd.tensor([1.0, -1.0])).sum().backward()
    np.testing.assert_allclose(rec["go"][0], [1.0, -1.0])
    np.testing.assert_allclose(rec["gi"][0], [3.0, -4.0])  # d/da = g * b
    np.testing.assert_allclose(rec["gi"][1], [1.0, -2.0])  # d/db = g * a
    close(a.grad, [3.0, -4.0])


def test_node_post_hook_can_replace_grad_inputs():
    a = nd.tensor([1.0, 2.0], requires_grad=True)
    b = nd.tensor([3.0, 4.0], requires_grad=True)
    y = a * b
    y.grad_fn.register_hook(lambda gi, go: (gi[0] * 0.0, gi[1] * 2.0))
    y.sum().backward()
    close(a.grad, [0.0, 0.0])
    close(b.grad, [2.0, 4.0])


def test_node_prehook_receives_and_can_replace_grad_outputs():
    x = nd.tensor(XV, requires_grad=True)
    y = nd.exp(x)
    seen = []

    def pre(grad_outputs):
        seen.append(val(grad_outputs[0]).copy())
        return (grad_outputs[0] * 2.0,)

    y.grad_fn.register_prehook(pre)
    (y * nd.tensor([1.0, 2.0, 3.0])).sum().backward()
    np.testing.assert_allclose(seen[0], [1.0, 2.0, 3.0])
    close(x.grad, 2.0 * np.array([1.0, 2.0, 3.0]) * np.exp(XV))


def test_node_hook_handles_remove():
    x = nd.tensor(XV, requires_grad=True)
    y = nd.exp(x)
    h1 = y.grad_fn.register_prehook(lambda go: (go[0] * 5.0,))
    h2 = y.grad_fn.register_hook(lambda gi, go: (gi[0] * 7.0,))
    h1.remove()
    h2.remove()
    y.sum().backward()
    close(x.grad, np.exp(XV))


def test_post_hook_returning_the_wrong_number_of_gradients_is_an_error():
    a = nd.tensor([1.0, 2.0], requires_grad=True)
    y = a * a
    y.grad_fn.register_hook(lambda gi, go: (gi[0],))
    with pytest.raises(RuntimeError, match="MultiplyBackward0 returned 1 gradients, expected 2"):
        y.sum().backward()


def test_node_hooks_returning_a_wrong_shape_are_an_error():
    a = nd.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = a * 2.0
    y.grad_fn.register_hook(lambda gi, go: (gi[0][:1], gi[1]))
    with pytest.raises(RuntimeError, match=r"MultiplyBackward0.*shape \[1\].*\[3\]"):
        y.sum().backward()
    assert a.grad is None
    b = nd.tensor([1.0, 2.0, 3.0], requires_grad=True)
    z = nd.exp(b)
    z.grad_fn.register_prehook(lambda go: (go[0][:1],))
    with pytest.raises(RuntimeError, match=r"ExpBackward0.*shape \[1\].*\[3\]"):
        z.sum().backward()
    assert b.grad is None


def test_hooks_on_the_accumulate_grad_node():
    x = nd.tensor(XV, requires_grad=True)
    y = x * 2.0
    acc = y.grad_fn.next_functions[0][0]
    assert acc.name() == "AccumulateGrad"
    seen = []
    acc.register_prehook(lambda go: (go[0] * 3.0,))
    acc.register_hook(lambda gi, go: seen.append((len(gi), val(go[0]).copy())))
    y.sum().backward()
    close(x.grad, np.full(3, 6.0))
    assert seen[0][0] == 0
    np.testing.assert_allclose(seen[0][1], np.full(3, 6.0))


def test_tensor_hooks_run_before_the_nodes_prehooks():
    order = []
    x = nd.tensor(XV, requires_grad=True)
    h = nd.exp(x)
    h.grad_fn.register_prehook(lambda go: order.append(("pre", val(go[0])[0])) or None)
    h.register_hook(lambda g: order.append(("tensor", val(g)[0])) or g * 2)
    h.sum().backward()
    assert order == [("tensor", 1.0), ("pre", 2.0)]
    close(x.grad, 2 * np.exp(XV))
