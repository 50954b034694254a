"""The wrapper levels' values (Note [Wrapper levels] in ndgrad/core/wrapper_level.py): every
transform value that wraps the value one level down (func.grad's, vmap's) is a WrapperTensor,
which forwards the Tensor's metadata and what the graph asks of a value once."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

import ndgrad as nd
import ndgrad.forward_ad  # noqa: F401  (every transform's classes loaded)
import ndgrad.func  # noqa: F401
from ndgrad import func
from ndgrad.core import levels
from ndgrad.core.tensor import Tensor
from ndgrad.core.data_level import DataInterpreter
from ndgrad.core.wrapper_level import WrapperInterpreter, WrapperTensor
from support import Cube, close

RNG = np.random.default_rng(34)
X0 = RNG.normal(size=(3, 2))
XB = RNG.normal(size=(4, 3, 2))

# what the base forwards once: a wrapper class defines none of these itself
FORWARDED = ("dtype", "device", "backend", "ndim", "size", "dim", "numel", "__len__",
             "__iter__", "is_complex", "is_floating_point", "itemsize", "nbytes", "_counter",
             "_saved_content", "_from_saved", "_shares_memory", "_stand_in")


@pytest.fixture(autouse=True)
def _no_level_left():
    yield
    assert levels.STACK == [] and levels.VISIBLE[0] == 0


def _tensor_subclasses():
    out, todo = [], [Tensor]
    while todo:
        for s in todo.pop().__subclasses__():
            if s.__module__.startswith("ndgrad."):
                out.append(s)
                todo.append(s)
    return out


def test_every_transform_value_class_is_a_wrapper_tensor_that_forwards_nothing_again():
    classes = [c for c in _tensor_subclasses() if c is not WrapperTensor]
    assert len(classes) >= 2  # (func.grad's and vmap's at least)
    for c in classes:
        assert issubclass(c, WrapperTensor), c
        again = [name for name in FORWARDED if name in c.__dict__]
        assert again == [], f"{c.__qualname__} defines {again} again"
        assert "_wrap" in c.__dict__, c  # each supplies how a value of its level is made


def _subclasses(cls):
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


def test_every_interpreter_is_one_of_the_two_level_patterns():
    """Every transform's interpreter in ndgrad subclasses exactly one of the two level
    patterns' bases, and the skeleton a custom Function follows is written in those two
    only (Note [Levels]): no interpreter defines ``process_function``; a wrapper level's
    keeps its values as WrapperTensors, a data level's its data on plain tensors."""
    bases = (WrapperInterpreter, DataInterpreter)
    found = [c for c in _subclasses(levels.Interpreter)
             if c.__module__.startswith("ndgrad.") and c not in bases]
    assert {c.__name__ for c in found} >= {"_GradInterpreter", "_VmapInterpreter",
                                          "_DualInterpreter", "_JetInterpreter"}, found
    for c in found:
        assert issubclass(c, WrapperInterpreter) != issubclass(c, DataInterpreter), c
        assert "process_function" not in vars(c), f"{c.__qualname__} writes its own skeleton"
        assert c.keeps_tensor_data == issubclass(c, DataInterpreter), c
    defined = [c for c in _subclasses(levels.Interpreter) if "process_function" in vars(c)]
    assert sorted(c.__name__ for c in defined if c.__module__.startswith("ndgrad.")) == [
        "DataInterpreter", "WrapperInterpreter"]


@pytest.mark.filterwarnings("ignore:vmap. the custom Function .* runs once per batch element")
def test_a_function_follows_the_wrapper_skeleton_under_grad_and_vmap():
    """A custom Function under func.grad (recorded at the level) and under vmap, both with
    and without a batching rule (per element, or at the level), composed: the gradient of
    sum(x**3) per row equals the closed form 3 x**2."""
    class BatchedCube(Cube):
        generate_vmap_rule = True

    for cls in (Cube, BatchedCube):
        per_row = func.vmap(func.grad(lambda r, cls=cls: cls.apply(r).sum()))
        close(per_row(nd.tensor(X0)), 3 * X0 ** 2)
        outer = func.grad(lambda x, cls=cls: func.vmap(lambda r: cls.apply(r).sum())(x).sum())
        close(outer(nd.tensor(X0)), 3 * X0 ** 2)


def _metadata(t):
    return (tuple(t.shape), t.ndim, t.size, t.numel(), t.dim(), len(t), np.dtype(t.dtype),
            t.is_complex(), t.is_floating_point(), t.itemsize, t.nbytes, str(t.device))


def _expected(a):
    return (a.shape, a.ndim, a.size, a.size, a.ndim, a.shape[0], a.dtype,
            a.dtype.kind == "c", a.dtype.kind == "f", a.itemsize, a.nbytes,
            str(nd.tensor(a).device))


def _rows_squared(seen):
    """sum over rows (by iterating the value) squared: its gradient is 2 * colsum per row."""
    def f(x):
        seen.append(_metadata(x))
        s = sum(iter(x))          # iteration: one row per step
        return (s ** 2).sum()
    return f


def _closed_form(x):
    return np.broadcast_to(2 * x.sum(axis=0), x.shape)


def test_a_grad_levels_value_has_its_wrapped_values_metadata():
    seen = []
    g = func.grad(_rows_squared(seen))(nd.tensor(X0))
    assert seen == [_expected(X0)]
    close(g, _closed_form(X0))


def test_a_batched_value_has_one_elements_metadata():
    seen = []
    g = func.vmap(func.grad(_rows_squared(seen)))(nd.tensor(XB))
    assert seen == [_expected(X0)]  # one element's: (3, 2)
    close(g, np.stack([_closed_form(x) for x in XB]))


@pytest.mark.parametrize("dtype", [np.float32, np.complex128])
def test_a_batched_value_of_another_dtype(dtype):
    seen = []

    def f(x):
        seen.append(_metadata(x))
        return x * 2

    xb = XB.astype(dtype) * (1 + 1j if dtype == np.complex128 else 1)
    y = func.vmap(f)(nd.tensor(xb))
    assert seen == [_expected(xb[0])]
    close(y, 2 * xb)


def test_an_identity_batch_has_its_logical_metadata_before_its_value_is_made():
    # jacfwd pushes the columns of an identity through one batched pass: the batched
    # tangent has no physical value until read (Note [Identity batches] in vmap.py)
    seen = []

    def f(x):
        return nd.sin(x) * 3.0

    def tangents_seen(t):
        seen.append((type(t).__name__, t._phys is None, tuple(t.shape), t.ndim, t.size,
                     len(t), np.dtype(t.dtype)))
        return t

    vmap_module = importlib.import_module("ndgrad.functional.vmap")
    original = vmap_module._identity_input

    def spy(arrays, level):
        for a in arrays:
            if type(a) is vmap_module.BatchedTensor and a._level is level:
                tangents_seen(a)
        return original(arrays, level)

    vmap_module._identity_input = spy
    try:
        x = RNG.normal(size=5)
        J = func.jacfwd(f)(nd.tensor(x))
    finally:
        vmap_module._identity_input = original
    close(J, np.diag(3 * np.cos(x)))
    assert ("BatchedTensor", True, (5,), 1, 5, 5, np.dtype(np.float64)) in seen


def _write_through_a_view(x):
    y = x * 1.0
    y[1:].mul_(x[1:])     # y = (x0, x1^2, x2^2, ...): a stand-in, the version counter,
    return (y ** 2).sum()  # the view's link through the wrapped values' memory


def _write_closed_form(x):
    g = 4 * x ** 3
    g[0] = 2 * x[0]
    return g


def test_an_in_place_write_through_a_view_of_a_wrapper_value():
    x = RNG.normal(size=4)
    close(func.grad(_write_through_a_view)(nd.tensor(x)), _write_closed_form(x))
    xb = RNG.normal(size=(3, 4))
    close(func.vmap(func.grad(_write_through_a_view))(nd.tensor(xb)),
          np.stack([_write_closed_form(r) for r in xb]))


def test_a_saved_output_of_a_wrapper_value_is_rebuilt_at_its_level():
    # tanh saves its output; at a grad level inside vmap the node keeps the wrapped value and
    # rebuilds a value of the level (WrapperTensor._from_saved) for the second derivative
    xb = RNG.normal(size=(3, 4))

    def f(x):
        return nd.tanh(x).sum()

    d2 = func.vmap(lambda x: func.grad(lambda y: func.grad(f)(y).sum())(x))(nd.tensor(xb))
    t = np.tanh(xb)
    close(d2, -2 * t * (1 - t ** 2))
