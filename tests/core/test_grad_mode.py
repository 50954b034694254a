"""Grad modes: no_grad, enable_grad, set_grad_enabled, inference_mode, is_grad_enabled; as
context managers and decorators; thread-local (issue "Reverse mode")."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import ndgrad as nd


@pytest.fixture(autouse=True)
def grad_mode_restored():
    """A failing test must not leave grad mode off for the next one."""
    yield
    assert nd.is_grad_enabled(), "a test left grad mode disabled"
    assert not nd.is_inference_mode_enabled()


def x_():
    return nd.tensor([1.0, -2.0], requires_grad=True)


def test_grad_is_enabled_by_default_and_ops_record():
    assert nd.is_grad_enabled() is True
    y = x_() * 2
    assert y.requires_grad and y.grad_fn is not None


def test_no_grad_context():
    x = x_()
    with nd.no_grad() as ctx:
        assert nd.is_grad_enabled() is False
        y = x * 2
        assert isinstance(ctx, nd.no_grad)
    assert nd.is_grad_enabled() is True
    assert not y.requires_grad and y.grad_fn is None and y.is_leaf
    np.testing.assert_array_equal(y.cpu().numpy(), [2.0, -4.0])


def test_no_grad_restores_the_mode_after_an_exception():
    with pytest.raises(ValueError, match="boom"):
        with nd.no_grad():
            raise ValueError("boom")
    assert nd.is_grad_enabled()


def test_nested_modes_restore_their_outer_mode():
    x = x_()
    with nd.no_grad():
        with nd.enable_grad():
            assert nd.is_grad_enabled()
            y = x * 3
            with nd.no_grad():
                assert not nd.is_grad_enabled()
            assert nd.is_grad_enabled()
        assert not nd.is_grad_enabled()
        z = x * 3
    assert y.requires_grad and not z.requires_grad
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.cpu().numpy(), [3.0, 3.0])


def test_no_grad_as_a_decorator_with_and_without_parentheses():
    x = x_()

    @nd.no_grad()
    def f(t):
        """docstring kept"""
        return t * 2, nd.is_grad_enabled()

    @nd.no_grad
    def g(t):
        return t * 2, nd.is_grad_enabled()

    for fn in (f, g):
        y, mode = fn(x)
        assert mode is False and not y.requires_grad
        assert nd.is_grad_enabled()
    assert f.__name__ == "f" and f.__doc__ == "docstring kept"


def test_enable_grad_as_a_decorator():
    x = x_()

    @nd.enable_grad()
    def f(t):
        return t * 2

    @nd.enable_grad
    def g(t):
        return t * 2

    with nd.no_grad():
        y, z = f(x), g(x)
        assert not nd.is_grad_enabled()
    assert y.requires_grad and z.requires_grad
    (y + z).sum().backward()
    np.testing.assert_array_equal(x.grad.cpu().numpy(), [4.0, 4.0])


def test_set_grad_enabled_as_a_function():
    try:
        nd.set_grad_enabled(False)
        assert not nd.is_grad_enabled()
        assert not (x_() * 2).requires_grad
        nd.set_grad_enabled(True)
        assert nd.is_grad_enabled()
        assert (x_() * 2).requires_grad
    finally:
        nd.set_grad_enabled(True)


@pytest.mark.parametrize("outer", [True, False])
def test_set_grad_enabled_as_a_context_manager_restores_the_previous_mode(outer):
    with nd.set_grad_enabled(outer):
        for mode in (True, False):
            with nd.set_grad_enabled(mode):
                assert nd.is_grad_enabled() is mode
                assert (x_() * 2).requires_grad is mode
            assert nd.is_grad_enabled() is outer


def test_set_grad_enabled_as_a_decorator():
    @nd.set_grad_enabled(False)
    def f():
        return nd.is_grad_enabled(), (x_() * 2).requires_grad

    assert nd.is_grad_enabled()  # decorating does not change the mode
    assert f() == (False, False)
    assert nd.is_grad_enabled()
    with nd.no_grad():
        @nd.set_grad_enabled(True)
        def g():
            return nd.is_grad_enabled()
        assert not nd.is_grad_enabled()
        assert g() is True
        assert not nd.is_grad_enabled()


def test_mode_objects_are_reusable():
    ng = nd.no_grad()
    for _ in range(2):
        with ng:
            assert not nd.is_grad_enabled()
        assert nd.is_grad_enabled()


def test_inference_mode():
    x = x_()
    with nd.inference_mode():
        assert not nd.is_grad_enabled() and nd.is_inference_mode_enabled()
        y = x * 2
        z = nd.ones(2)
    assert nd.is_grad_enabled() and not nd.is_inference_mode_enabled()
    assert not y.requires_grad and y.grad_fn is None
    np.testing.assert_array_equal(y.cpu().numpy(), [2.0, -4.0])
    assert y.is_inference and z.is_inference
    assert not x.is_inference and not (x * 2).is_inference


def test_inference_tensors_cannot_be_saved_for_backward():
    x = x_()
    with nd.inference_mode():
        t = nd.tensor([3.0, 4.0]) * 1.0
        c = nd.tensor([3.0, 4.0])
    for inf in (t, c):
        with pytest.raises(RuntimeError, match="Inference tensors cannot be saved for backward.*"
                                               "clone"):
            x * inf  # multiply saves inf for x's gradient
    # an op that saves nothing of it may use it
    y = x + t
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.cpu().numpy(), [1.0, 1.0])
    # a clone made outside inference mode is a normal tensor
    w = (x * t.clone()).sum()
    x.grad = None
    w.backward()
    np.testing.assert_array_equal(x.grad.cpu().numpy(), [3.0, 4.0])


def test_inference_mode_false_is_a_no_op():
    x = x_()
    with nd.inference_mode(False):
        assert nd.is_grad_enabled() and not nd.is_inference_mode_enabled()
        y = x * 2
    assert y.requires_grad and not y.is_inference


def test_inference_mode_as_a_decorator():
    @nd.inference_mode()
    def f(t):
        return t * 2, nd.is_inference_mode_enabled()

    @nd.inference_mode
    def g(t):
        return t * 2, nd.is_inference_mode_enabled()

    for fn in (f, g):
        y, mode = fn(x_())
        assert mode is True and not y.requires_grad and y.is_inference
    assert not nd.is_inference_mode_enabled()


def test_decorated_generator_functions_run_in_the_mode():
    @nd.no_grad()
    def gen(t):
        for _ in range(2):
            yield nd.is_grad_enabled(), (t * 2).requires_grad

    it = gen(x_())
    assert next(it) == (False, False)
    assert nd.is_grad_enabled()  # the mode does not leak between steps
    assert next(it) == (False, False)
    assert nd.is_grad_enabled()


def test_decorated_generator_functions_forward_send_throw_and_return():
    @nd.no_grad()
    def gen():
        received = yield nd.is_grad_enabled()
        try:
            yield (received, nd.is_grad_enabled())
        except KeyError as e:
            yield ("caught", str(e), nd.is_grad_enabled())
        return "done"

    it = gen()
    assert next(it) is False
    assert it.send(41) == (41, False)
    assert it.throw(KeyError("k")) == ("caught", "'k'", False)
    assert nd.is_grad_enabled()
    with pytest.raises(StopIteration) as stop:
        next(it)
    assert stop.value.value == "done"
    assert nd.is_grad_enabled()


def test_no_grad_with_a_non_callable_argument_is_an_error():
    with pytest.raises(TypeError, match="no_grad\\(\\) takes no arguments"):
        nd.no_grad(3)


# ---------------------------------------------------------------------------- threads
def _in_thread(fn):
    out = {}

    def run():
        try:
            out["value"] = fn()
        except BaseException as e:  # pragma: no cover - reported below
            out["error"] = e

    th = threading.Thread(target=run)
    th.start()
    th.join()
    if "error" in out:
        raise out["error"]
    return out["value"]


def test_a_new_thread_starts_with_grad_enabled():
    x = x_()
    with nd.no_grad():
        mode, records = _in_thread(lambda: (nd.is_grad_enabled(), (x * 2).requires_grad))
        assert not nd.is_grad_enabled()
    assert mode is True and records is True
    with nd.inference_mode():
        assert _in_thread(nd.is_inference_mode_enabled) is False


def test_grad_mode_changes_in_a_thread_do_not_leak():
    def work():
        nd.set_grad_enabled(False)
        return nd.is_grad_enabled()

    assert _in_thread(work) is False
    assert nd.is_grad_enabled()


def test_backward_in_another_thread():
    x = x_()

    def work():
        y = nd.exp(x).sum()
        y.backward()
        return True

    with nd.no_grad():
        assert _in_thread(work)
    np.testing.assert_allclose(x.grad.cpu().numpy(), np.exp([1.0, -2.0]))
