"""Anomaly detection: detect_anomaly, set_detect_anomaly (issue 3, "Anomaly detection").

The contract is PyTorch's: in anomaly mode each Node records the traceback of the forward
call that made it; a failing backward warns "Error detected in <Node>. Traceback of forward
call that caused the error: ..."; with check_nan a NaN returned by a backward formula raises
"Function '<Node>' returned nan values in its <i>th output.".
"""

from __future__ import annotations

import os
import re
import warnings

import numpy as np
import pytest

import ndgrad as nd
from ndgrad.autograd import (Function, detect_anomaly, is_anomaly_check_nan_enabled,
                             is_anomaly_enabled, set_detect_anomaly)

XV = np.array([0.0, 1.0, 2.0])
ENABLED_MSG = ("Anomaly Detection has been enabled. This mode will increase the runtime and "
               "should only be enabled for debugging.")
PKG_DIR = os.path.dirname(os.path.abspath(nd.__file__))

# NaN on purpose: NumPy's own RuntimeWarnings (log(0), inf * 0) are expected here.
pytestmark = [pytest.mark.filterwarnings("ignore:divide by zero encountered:RuntimeWarning"),
              pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")]


@pytest.fixture(autouse=True)
def _anomaly_off():
    """Every test starts and ends with anomaly mode off (and check_nan at its default)."""
    set_detect_anomaly(False)
    yield
    assert not is_anomaly_enabled(), "a test left anomaly mode on"
    set_detect_anomaly(False)


def quiet_detect_anomaly(check_nan=True):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return detect_anomaly(check_nan=check_nan)


class Boom(Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2.0

    @staticmethod
    def backward(ctx, g):
        raise ValueError("boom in backward")


def model_with_boom(x):
    h = x * 3.0
    return Boom.apply(h)  # <- the forward line of the failing node


def model_with_log(x):
    return nd.log(x)  # <- the forward line of LogBackward0


def anomaly_warnings(caught):
    return [str(w.message) for w in caught if str(w.message).startswith("Error detected in")]


# ---------------------------------------------------------------------------- the mode itself
def test_detect_anomaly_warns_and_restores_the_previous_state():
    assert (is_anomaly_enabled(), is_anomaly_check_nan_enabled()) == (False, True)
    with pytest.warns(UserWarning, match=re.escape(ENABLED_MSG)):
        cm = detect_anomaly(check_nan=False)
    with cm:
        assert (is_anomaly_enabled(), is_anomaly_check_nan_enabled()) == (True, False)
    assert (is_anomaly_enabled(), is_anomaly_check_nan_enabled()) == (False, True)


def test_detect_anomaly_restores_on_exception_and_when_nested():
    with set_detect_anomaly(True, check_nan=False):
        with pytest.raises(KeyError):
            with quiet_detect_anomaly(check_nan=True):
                assert is_anomaly_check_nan_enabled()
                raise KeyError("x")
        assert (is_anomaly_enabled(), is_anomaly_check_nan_enabled()) == (True, False)
    assert (is_anomaly_enabled(), is_anomaly_check_nan_enabled()) == (False, True)


def test_detect_anomaly_as_a_decorator():
    @quiet_detect_anomaly(check_nan=False)
    def inside():
        return is_anomaly_enabled(), is_anomaly_check_nan_enabled()

    assert not is_anomaly_enabled()
    assert inside() == (True, False)
    assert (is_anomaly_enabled(), is_anomaly_check_nan_enabled()) == (False, True)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")

        @detect_anomaly
        def bare():
            return is_anomaly_enabled(), is_anomaly_check_nan_enabled()

    assert bare() == (True, True)
    assert not is_anomaly_enabled()


def test_set_detect_anomaly_as_function_and_context_manager():
    set_detect_anomaly(True, check_nan=False)
    assert (is_anomaly_enabled(), is_anomaly_check_nan_enabled()) == (True, False)
    with set_detect_anomaly(False):
        assert (is_anomaly_enabled(), is_anomaly_check_nan_enabled()) == (False, True)
    assert (is_anomaly_enabled(), is_anomaly_check_nan_enabled()) == (True, False)
    set_detect_anomaly(False)
    assert (is_anomaly_enabled(), is_anomaly_check_nan_enabled()) == (False, True)

    @set_detect_anomaly(True)
    def inside():
        return is_anomaly_enabled()

    assert not is_anomaly_enabled()   # decorating does not switch it on
    assert inside() is True
    assert not is_anomaly_enabled()


# ---------------------------------------------------------------------------- traces
def test_no_trace_is_recorded_outside_anomaly_mode():
    x = nd.tensor(XV, requires_grad=True)
    y = nd.exp(x * 2.0)
    assert y.grad_fn.hooks is None and y.grad_fn.trace is None
    assert Boom.apply(x).grad_fn.trace is None


def test_trace_ends_at_the_users_forward_line():
    x = nd.tensor(XV + 1.0, requires_grad=True)
    with quiet_detect_anomaly():
        y = model_with_log(x)
        z = nd.softmax(x) if hasattr(nd, "softmax") else nd.logsumexp(x)
    for node, line in ((y.grad_fn, "return nd.log(x)"),
                       (z.grad_fn, "z = nd.softmax(x) if hasattr(nd, \"softmax\") else "
                                   "nd.logsumexp(x)")):
        trace = node.trace
        assert trace is not None
        last = trace[-1]
        assert os.path.abspath(__file__) in last and line in last
        assert not any(PKG_DIR + os.sep in frame.split('"')[1] for frame in trace
                       if frame.startswith('  File "'))


def test_failing_function_backward_shows_the_forward_traceback():
    x = nd.tensor(XV, requires_grad=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with detect_anomaly():
            y = model_with_boom(x)
            with pytest.raises(ValueError, match="boom in backward") as info:
                y.sum().backward()
    (msg,) = anomaly_warnings(caught)
    assert msg.startswith("Error detected in BoomBackward. Traceback of forward call that "
                          "caused the error:\n")
    assert "return Boom.apply(h)  # <- the forward line of the failing node" in msg
    assert "y = model_with_boom(x)" in msg
    assert msg.rstrip().endswith("return Boom.apply(h)  # <- the forward line of the failing "
                                 "node")
    assert [w.category for w in caught if str(w.message) == msg] == [RuntimeWarning]
    if hasattr(info.value, "add_note"):       # Python >= 3.11: the exception carries it too
        assert info.value.__notes__ == [msg]


def test_failing_builtin_backward_shows_the_forward_traceback():
    x = nd.tensor(XV, requires_grad=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with detect_anomaly():
            a = x * 1.0
            b = a * a  # saves a
            a.mul_(2.0)
            with pytest.raises(RuntimeError, match="modified by an inplace operation"):
                b.sum().backward()
    (msg,) = anomaly_warnings(caught)
    assert msg.startswith("Error detected in MultiplyBackward0.")
    assert msg.rstrip().endswith("b = a * a  # saves a")


def test_the_warning_points_at_the_users_backward_call():
    x = nd.tensor(XV, requires_grad=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with detect_anomaly():
            y = model_with_boom(x)
            with pytest.raises(ValueError):
                y.sum().backward()
    (w,) = [w for w in caught if str(w.message).startswith("Error detected")]
    assert os.path.abspath(w.filename) == os.path.abspath(__file__)


def test_no_warning_without_anomaly_mode():
    x = nd.tensor(XV, requires_grad=True)
    y = model_with_boom(x)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(ValueError, match="boom in backward") as info:
            y.sum().backward()
    assert anomaly_warnings(caught) == []
    assert not getattr(info.value, "__notes__", [])


# ---------------------------------------------------------------------------- NaN checks
def test_nan_check_names_the_node():
    x = nd.tensor(XV, requires_grad=True)   # log'(0) = inf, inf * 0 = nan
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with detect_anomaly():
            y = model_with_log(x) * 0.0
            with pytest.raises(RuntimeError, match=re.escape(
                    "Function 'LogBackward0' returned nan values in its 0th output.")):
                y.sum().backward()
    (msg,) = anomaly_warnings(caught)
    assert msg.startswith("Error detected in LogBackward0.")
    assert msg.rstrip().endswith("return nd.log(x)  # <- the forward line of LogBackward0")
    assert x.grad is None


def test_nan_check_reports_the_input_index():
    class NanSecond(Function):
        @staticmethod
        def forward(ctx, a, b):
            return a + b

        @staticmethod
        def backward(ctx, g):
            return g, g * np.nan

    a = nd.tensor(XV, requires_grad=True)
    b = nd.tensor(XV, requires_grad=True)
    with quiet_detect_anomaly(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = NanSecond.apply(a, b).sum()
        with pytest.raises(RuntimeError, match=re.escape(
                "Function 'NanSecondBackward' returned nan values in its 1th output.")):
            out.backward()


def test_check_nan_false_lets_nan_through():
    x = nd.tensor(XV, requires_grad=True)
    with quiet_detect_anomaly(check_nan=False):
        (nd.log(x) * 0.0).sum().backward()
    g = x.grad.cpu().numpy()
    assert np.isnan(g[0]) and np.array_equal(g[1:], [0.0, 0.0])


def test_no_nan_check_outside_anomaly_mode():
    x = nd.tensor(XV, requires_grad=True)
    (nd.log(x) * 0.0).sum().backward()
    assert np.isnan(x.grad.cpu().numpy()[0])


def test_nodes_made_before_anomaly_mode_are_nan_checked_in_it():
    x = nd.tensor(XV, requires_grad=True)
    y = (nd.log(x) * 0.0).sum()   # recorded without traces
    assert y.grad_fn.trace is None
    with quiet_detect_anomaly(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(RuntimeError, match=re.escape(
                "Function 'LogBackward0' returned nan values in its 0th output.")):
            y.backward()
    assert anomaly_warnings(caught) == []   # no trace was recorded to show


# ---------------------------------------------------------------------------- results unchanged
def test_anomaly_mode_gives_the_same_gradients_including_double_backward():
    def f(x):
        return (nd.tanh(x) * nd.exp(x)).sum()

    xv = np.array([0.3, -1.2, 0.8])
    x = nd.tensor(xv, requires_grad=True)
    (g_ref,) = nd.autograd.grad(f(x), x, create_graph=True)
    (h_ref,) = nd.autograd.grad(g_ref.sum(), x)
    with quiet_detect_anomaly():
        (g,) = nd.autograd.grad(f(x), x, create_graph=True)
        assert g.grad_fn.trace is not None   # nodes made by backward record a trace too
        (h,) = nd.autograd.grad(g.sum(), x)
    t, e = np.tanh(xv), np.exp(xv)
    np.testing.assert_allclose(g.detach().cpu().numpy(), (1 - t ** 2) * e + t * e)
    np.testing.assert_allclose(g.detach().cpu().numpy(), g_ref.detach().cpu().numpy())
    np.testing.assert_allclose(h.cpu().numpy(), h_ref.cpu().numpy())
    np.testing.assert_allclose(h.cpu().numpy(), -2 * t * (1 - t ** 2) * e + 2 * (1 - t ** 2) * e
                               + t * e)
