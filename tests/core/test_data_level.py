"""The data levels' base (Note [Data levels] in ndgrad/core/data_level.py): a data level is
its propagation rule; the skeleton (inputs' data, the op one level down, views, in-place
changes, custom Functions, entering and leaving) is the base's, written once."""

from __future__ import annotations

import numpy as np
import pytest

import ndgrad as nd
import ndgrad.func  # noqa: F401  (loads the transforms' interpreters)
from ndgrad.core import levels
from ndgrad.core.data_level import DataInfo, DataInterpreter, data_of, fit_to
from ndgrad.core.dispatch import TENSOR_F
from support import close, cube_function, fd_derivative, host

RNG = np.random.default_rng(26)
X0 = RNG.normal(size=5)
V0 = RNG.normal(size=5)


@pytest.fixture(autouse=True)
def _no_level_left():
    yield
    assert levels.STACK == [] and levels.VISIBLE[0] == 0


class _Tangents(DataInterpreter):
    """A first-order forward mode in a few lines: the ops' jvp rules, nothing else."""

    name = "tangents"

    def propagate(self, lv, op, data, out, args, params):
        t = op.jvp(TENSOR_F, data, out, *args, **params)
        return [t] if op.nout == 1 else list(t)

    def function_rule(self, lv, cls, ctx, args, kwargs, data, outs):
        primals = tuple(args)
        tangents = tuple(TENSOR_F.zeros_like(a) if d is None else d
                         for a, d in zip(args, data))
        _, t = nd.func.jvp(lambda *xs: cls.apply(*xs, **kwargs), primals, tangents)
        return [t] if len(outs) == 1 else list(t)

    def zeros(self, data):
        return TENSOR_F.zeros_like(data)

    def fit(self, lv, out, data, who):
        return fit_to(data, tuple(out.shape), out, who, "the test's rule gave a tangent")


_T = _Tangents()


def _tangent(f, x, v):
    """``f(x)`` and its derivative along ``v``, at a ``_Tangents`` level."""
    lv = _T.enter(DataInfo("tangent"))
    try:
        y = f(_T.carrier(lv, x, v))
        t = data_of(y, lv)
    finally:
        _T.leave(lv)
    return y, t


_Cube = cube_function()  # (x**3 with its own backward and jvp)


def _f(x):
    y = nd.tanh(x) * x
    w = y[1:4]            # a view, changed in place: the base's data follows
    w.mul_(nd.sin(x[:3]))
    z = _Cube.apply(y) + nd.exp(-x).sum()
    return z[::-1] / 3


def test_a_data_level_is_its_propagation_rule():
    """A level that supplies only ``propagate``, ``function_rule``, ``zeros`` and ``fit``
    differentiates ops, a view changed in place and a custom Function: its tangent equals
    central differences of the same function."""
    x = nd.tensor(X0)
    y, t = _tangent(_f, x, nd.tensor(V0))
    close(y, host(_f(nd.tensor(X0))))
    close(t, fd_derivative(lambda x: host(_f(nd.tensor(x))), X0, V0, eps=1e-6), rtol=1e-7,
          atol=1e-8)
    # the level's data is gone once it is left, and the user's tensor never carried it
    assert y._meta is None or not y._meta.level_data
    assert x._meta is None or not x._meta.level_data


def test_an_op_without_data_gets_none_and_a_zero_after_an_inplace_write():
    """Inputs without data give no data (the rule is not asked); an in-place write of a
    constant into a tensor with data leaves it the base's ``zeros``."""
    def f(x):
        c = nd.cos(nd.tensor(X0))         # no data: a constant
        y = x * 2
        y[...] = c                        # the result carries none: zeros(old)
        return y, c

    lv = _T.enter(DataInfo("tangent"))
    try:
        y, c = f(_T.carrier(lv, nd.tensor(X0), nd.tensor(V0)))
        assert data_of(c, lv) is None
        close(data_of(y, lv), np.zeros(5))
        close(y, np.cos(X0))
    finally:
        _T.leave(lv)


def _interpreters(cls):
    for sub in cls.__subclasses__():
        yield sub
        yield from _interpreters(sub)


def test_every_data_level_is_written_on_the_base():
    """Every interpreter that keeps its data on tensors (the transforms' data levels: forward
    mode's dual levels, jets, the Forward Laplacian, sparsity detection) is a DataInterpreter
    and writes no skeleton of its own: none defines ``process``, ``process_function`` or
    ``process_inplace`` (forward mode supplies only how its tangents are read, kept and
    written in place: Note [Data levels])."""
    found = []
    for cls in _interpreters(levels.Interpreter):
        if not cls.keeps_tensor_data or cls is DataInterpreter or \
                cls.__module__.startswith("tests") or cls.__module__ == __name__:
            continue
        found.append(cls.__module__)
        assert issubclass(cls, DataInterpreter), cls
        for name in ("process", "process_function", "process_inplace", "attach"):
            assert name not in vars(cls), f"{cls.__name__} defines its own {name}"
    assert "ndgrad.forward_ad" in found and len(found) >= 4, found


def _int_target(x):
    t = nd.zeros(3, dtype=nd.int64)
    t.add_(x * 0.5)              # float into an int tensor: refused, as NumPy's same_kind
    return x * t


def _widened_target(x):
    t = nd.zeros(3)
    t.add_(nd.stack([x, x]))     # the result is (2, 3): it cannot be written into (3,)
    return t


_AT_EVERY_DATA_LEVEL = {
    "jvp": lambda f, x: nd.func.jvp(f, (x,), (nd.ones(3),)),
    "jet": lambda f, x: nd.func.jet(f, (x,), ([nd.ones(3)],)),
    "laplacian": lambda f, x: nd.func.laplacian(lambda x: f(x).sum())(x),
    "jacobian_sparsity": lambda f, x: nd.func.jacobian_sparsity(f, x),
}


@pytest.mark.parametrize("level", sorted(_AT_EVERY_DATA_LEVEL))
@pytest.mark.parametrize("f, match", [
    (_int_target, "add: result type float64 can't be cast to the desired output type int64"),
    (_widened_target, r"add: output with shape \[3\] doesn't match the broadcast shape "
                      r"\[2, 3\]")])
def test_an_inplace_op_at_a_data_level_is_checked_as_eagerly(level, f, match):
    """The data levels' one in-place protocol checks the op's result as core's does: the
    same error as eager ndgrad, naming the op the user called (a jet named its own write,
    ``index_put``, or let NumPy's broadcasting error through)."""
    x = nd.tensor([1.0, 2.0, 3.0])
    with pytest.raises(RuntimeError, match=match):
        f(x)
    with pytest.raises(RuntimeError, match=match):
        _AT_EVERY_DATA_LEVEL[level](f, x)
