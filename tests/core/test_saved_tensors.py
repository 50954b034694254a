"""Saved-tensor hooks and the rest of ``ndgrad.autograd.graph``: every assertion compares
numbers with closed forms or with the same computation run without hooks."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import ndgrad as nd
from ndgrad.core import dispatch
from ndgrad.core import ops as ops_module
from ndgrad.core.ops import REGISTRY
from registry_harness import cases, draw
from support import host
from ndgrad.autograd.graph import (allow_mutation_on_saved_tensors, disable_saved_tensors_hooks,
                                   increment_version, register_multi_grad_hook, save_on_cpu,
                                   saved_tensors_hooks)

X0 = np.array([0.3, -1.2, 2.0])


def _x():
    return nd.tensor(X0.copy(), requires_grad=True)


def _np(t):
    return t.detach().cpu().numpy()


def _to_host(t):
    return _np(t).copy()


def _copying_hooks(log):
    """Hooks that keep a NumPy copy (not the tensor) and rebuild a new tensor from it."""
    def pack(t):
        log.append(("pack", nd.is_grad_enabled(), tuple(t.shape), _to_host(t)))
        return _to_host(t)

    def unpack(a):
        log.append(("unpack", nd.is_grad_enabled()))
        return nd.asarray(a)
    return pack, unpack


def test_pack_sees_every_saved_tensor_once_and_the_gradient_is_unchanged():
    x = _x()
    log = []
    with saved_tensors_hooks(*_copying_hooks(log)):
        y = nd.tanh(x * x)
    packs = [e for e in log if e[0] == "pack"]
    # x * x saves x twice; tanh saves its output
    assert len(packs) == 3
    np.testing.assert_array_equal(packs[0][3], X0)
    np.testing.assert_array_equal(packs[1][3], X0)
    np.testing.assert_allclose(packs[2][3], np.tanh(X0 * X0))
    assert all(grad_on is False for _, grad_on, _, _ in packs)  # pack runs with grad off
    y.sum().backward()
    assert [e for e in log if e[0] == "unpack"] == [("unpack", False)] * 3
    np.testing.assert_allclose(_np(x.grad), (1 - np.tanh(X0 ** 2) ** 2) * 2 * X0)


def test_copied_values_keep_their_place_in_the_graph_for_higher_order():
    # d2/dx2 sum(tanh(x^2)) = 2 sech^2(x^2) - 8 x^2 tanh(x^2) sech^2(x^2)
    x = _x()
    log = []
    with saved_tensors_hooks(*_copying_hooks(log)):
        y = nd.tanh(x * x).sum()
    (g,) = nd.autograd.grad(y, x, create_graph=True)
    assert ("unpack", True) in log  # unpack runs with the pass's grad mode
    (h,) = nd.autograd.grad(g.sum(), x)
    t = np.tanh(X0 ** 2)
    s2 = 1 - t ** 2
    np.testing.assert_allclose(_np(h), 2 * s2 - 8 * X0 ** 2 * t * s2, rtol=1e-12)


def test_a_leaf_unpacked_from_a_copy_still_accumulates_into_the_leaf():
    x = _x()
    with saved_tensors_hooks(_to_host, nd.asarray):
        y = (x * x).sum()
    (g,) = nd.autograd.grad(y, x, create_graph=True)
    g.sum().backward()
    np.testing.assert_allclose(_np(x.grad), [2.0, 2.0, 2.0])


def test_innermost_hooks_apply_and_hooks_are_per_thread():
    outer, inner, other = [], [], []
    x = _x()
    with saved_tensors_hooks(lambda t: outer.append(1) or t, lambda t: t):
        with saved_tensors_hooks(lambda t: inner.append(1) or t, lambda t: t):
            nd.exp(x)

            def work():
                other.append(nd.exp(x).grad_fn._raw_saved_out)
            th = threading.Thread(target=work)
            th.start()
            th.join()
        nd.exp(x)
    assert (len(outer), len(inner)) == (1, 1)
    # the other thread saved as usual: the raw array, not a packed Tensor
    assert isinstance(other[0], type(x._data))


def test_custom_function_saves_go_through_the_hooks():
    packed = []

    class Cube(nd.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = x ** 3
            mid = x * 2.0
            ctx.save_for_backward(x, y, mid)
            return y

        @staticmethod
        def backward(ctx, g):
            x, y, mid = ctx.saved_tensors
            return g * 3 * y / x + 0 * mid

    x = _x()
    with saved_tensors_hooks(lambda t: packed.append(_to_host(t)) or _to_host(t),
                             nd.asarray):
        y = Cube.apply(x)
    assert len(packed) == 3
    np.testing.assert_allclose(packed[1], X0 ** 3)
    y.sum().backward()
    np.testing.assert_allclose(_np(x.grad), 3 * X0 ** 2)


def test_disable_saved_tensors_hooks_refuses_new_hooks_with_the_message():
    with disable_saved_tensors_hooks("not in this solver"):
        with pytest.raises(RuntimeError, match="not in this solver"):
            with saved_tensors_hooks(lambda t: t, lambda t: t):
                pass

    @disable_saved_tensors_hooks("no hooks in f")
    def f():
        with saved_tensors_hooks(lambda t: t, lambda t: t):
            pass
    with pytest.raises(RuntimeError, match="no hooks in f"):
        f()
    with saved_tensors_hooks(lambda t: t, lambda t: t):  # allowed again outside
        pass


def test_bad_unpack_results_are_errors_naming_the_node():
    x = _x()
    with saved_tensors_hooks(lambda t: t, lambda t: t[:2]):
        y = nd.exp(x)
    with pytest.raises(RuntimeError, match=r"ExpBackward0.*shape \[3\]"):
        y.sum().backward()
    with saved_tensors_hooks(lambda t: t, lambda t: 7):
        y = nd.exp(x)
    with pytest.raises(TypeError, match="must return a Tensor"):
        y.sum().backward()
    with pytest.raises(TypeError, match="two functions"):
        saved_tensors_hooks(1, 2)


def test_save_on_cpu_keeps_device_values_on_the_host(device):
    x = nd.tensor(X0.copy(), requires_grad=True, device=device)
    with save_on_cpu(pin_memory=True):
        y = nd.tanh(x * x)
    raw = y.grad_fn._raw_saved_out
    if device == "cpu":
        assert raw[0] is None and raw[1].grad_fn is None
        assert np.shares_memory(_np(raw[1]), _np(y))
    else:
        # host memory from the backend's page-locked allocator (CuPy's empty_pinned: a NumPy
        # array over pinned memory; the emulated device's: a PinnedHostArray)
        pinned_type = type(x.backend._cpx.empty_pinned((1,), np.float64))
        assert raw[0] == x.device and type(raw[1]) is pinned_type
        assert isinstance(raw[1], np.ndarray)
        np.testing.assert_allclose(np.asarray(raw[1]), np.tanh(X0 ** 2))
    y.sum().backward()
    assert x.grad.device == x.device
    np.testing.assert_allclose(_np(x.grad), (1 - np.tanh(X0 ** 2) ** 2) * 2 * X0)


def test_saved_values_by_name_and_node_metadata():
    x = _x()
    y = x * nd.tensor(X0 * 2)
    z = nd.tanh(y)
    s = (z * z).sum(axis=0)
    np.testing.assert_array_equal(_np(y.grad_fn._saved_y), X0 * 2)
    np.testing.assert_allclose(_np(z.grad_fn._saved_out), np.tanh(2 * X0 ** 2))
    assert z.grad_fn._saved_out.grad_fn is z.grad_fn
    assert s.grad_fn._saved_axis == 0
    assert s.grad_fn.name() == "SumBackward0"
    assert s.grad_fn.next_functions[0][0].name() == "MultiplyBackward0"
    with pytest.raises(AttributeError, match="saved no value named 'q'.*_saved_out"):
        _ = z.grad_fn._saved_q
    z.grad_fn.metadata["step"] = 3
    assert z.grad_fn.metadata == {"step": 3}
    s.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        _ = z.grad_fn._saved_out


def test_a_saved_input_changed_in_place_is_refused_when_read_by_name():
    a = _x() * 1.0
    y = nd.exp(a * a)
    a.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        _ = y.grad_fn.next_functions[0][0]._saved_x


def test_multi_grad_hook_all_and_any():
    a, b, c = (nd.tensor([v], requires_grad=True) for v in (1.0, 2.0, 3.0))
    seen = []
    h = register_multi_grad_hook((a, b, c), seen.append)
    (a * b).sum().backward()
    assert len(seen) == 1
    ga, gb, gc = seen[0]
    assert gc is None
    np.testing.assert_array_equal(_np(ga), [2.0])
    np.testing.assert_array_equal(_np(gb), [1.0])
    (a * c).sum().backward()  # once per pass
    assert len(seen) == 2 and seen[1][1] is None
    np.testing.assert_array_equal(_np(seen[1][2]), [1.0])
    h.remove()
    (a * b).sum().backward()
    assert len(seen) == 2
    first = []
    register_multi_grad_hook((a, b), first.append, mode="any")
    (a * b * 5.0).sum().backward()
    assert len(first) == 1 and _np(first[0])[0] in (5.0, 10.0)
    with pytest.raises(ValueError, match="'all' or 'any'"):
        register_multi_grad_hook((a,), print, mode="some")


def test_increment_version_makes_saved_values_stale():
    x = _x()
    a = x * 1.0
    y = nd.exp(a * a)
    assert a._version == 0
    increment_version(a)
    assert a._version == 1
    with pytest.raises(RuntimeError, match="is at version 1; expected version 0"):
        y.sum().backward()


def test_allow_mutation_on_saved_tensors_keeps_the_old_values():
    x = _x()
    with allow_mutation_on_saved_tensors():
        a = x * 1.0
        y = nd.sin(a)
        a.add_(1.0)
        a[0] = 5.0
        (y.sum() + (a * a).sum()).backward()
    # d/dx [sum sin(x) + sum((x + 1)^2 with a[0] overwritten)]
    expected = np.cos(X0) + 2 * (X0 + 1)
    expected[0] = np.cos(X0[0])
    np.testing.assert_allclose(_np(x.grad), expected)
    x2 = _x()
    a = x2 * 1.0
    y = nd.sin(a)
    a.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_transform_values_are_saved_as_usual_under_hooks():
    packed = []
    with saved_tensors_hooks(lambda t: packed.append(1) or t, lambda t: t):
        g = nd.func.grad(lambda v: (nd.sin(v) * v).sum())(nd.tensor(X0))
    np.testing.assert_allclose(_np(g), np.cos(X0) * X0 + np.sin(X0))


def test_nbytes_and_itemsize():
    t = nd.ones((3, 4), dtype="float32")
    assert (t.nbytes, t.itemsize) == (48, 4)


# ------------------------------------------------------------------ a node's own saved names
def _recorded(op_call):
    """Run ``op_call()`` and return its result and what ``dispatch.apply`` handed to
    ``graph.record`` for the last node it recorded: ``(op, args, outs, params)``."""
    seen = []
    real = dispatch.record

    def spy(op, args, outs, extra=(), params=None, needs=None):
        seen.append((op, tuple(args), tuple(outs), dict(params or {})))
        return real(op, args, outs, extra, *(() if params is None else (params,)))
    dispatch.record = spy
    try:
        result = op_call()
    finally:
        dispatch.record = real
    return result, (seen[-1] if seen else None)


DIFFERENTIABLE = [n for n in sorted(REGISTRY) if REGISTRY[n].differentiable]


@pytest.mark.cpu_only("every op on the CUDA backend: the registry matrix's device family")
@pytest.mark.parametrize("name, dtype", cases(DIFFERENTIABLE))
@settings(max_examples=3)
@given(data=st.data())
def test_a_nodes_saved_names_are_its_own_and_read_back_the_saved_values(name, dtype, data):
    """``dir(grad_fn)`` lists the ``_saved_<name>`` / ``_raw_saved_<name>`` of the values that
    node saved and no other op's (it listed ``_saved_L`` on a product, and reading it
    raised); each reads back the value saved: the input itself, the output's values, the
    parameter. What the node saved is what the op's declaration says (its save plan for the
    inputs that need a gradient), for the arguments ``apply`` recorded."""
    op = REGISTRY[name]
    sample = draw(data, op, dtype)
    assume(sample.pos)
    inputs = sample.inputs(requires_grad=True)
    outs, rec = _recorded(lambda: sample.call(inputs))
    if rec is None:  # (conj of a real tensor is the tensor)
        assert all(o.grad_fn is None or o is i for o in outs for i in inputs)
        return
    assert rec[0] is op, rec[0]  # (the last node recorded is the op's)
    _, args, node_outs, params = rec
    node = node_outs[0].grad_fn
    assert node.op is op
    needs = tuple(isinstance(a, nd.Tensor) and a.requires_grad for a in args)
    save_out, mask = op.save_plan(needs)
    if mask is not None and True not in mask:
        mask = (False,) * len(args)
    names = op.input_names(len(args))
    expected = {}
    for k, a in enumerate(args):
        if (mask is None or mask[k]) and a is not None:
            expected[names[k]] = a
    expected.update(params)
    own = {n for n in dir(node) if n.startswith("_saved_")}  # (every one a saved value)
    want = {f"_saved_{k}" for k in expected} | ({"_saved_out"} if save_out else set())
    assert own == want, (own, want)
    raw = {n for n in dir(node) if n.startswith("_raw_saved_")}
    assert raw == {f"_raw{n}" for n in want}
    for key, value in expected.items():
        got = getattr(node, f"_saved_{key}")
        if isinstance(value, nd.Tensor):
            assert got is value, key  # the input itself, version-checked
        elif isinstance(value, np.ndarray):
            np.testing.assert_array_equal(got, value)
        else:
            assert got is value or got == value, key
    if save_out:
        got = node._saved_out
        got = got if isinstance(got, tuple) else (got,)
        assert len(got) == len(node_outs)
        for g, o in zip(got, node_outs):
            np.testing.assert_array_equal(host(g), host(o))
            assert g.grad_fn is node
    # another op's names are not this node's: not listed, and reading them says so
    for other in sorted(ops_module._SAVED_PROPERTIES - own - raw)[:40]:
        with pytest.raises(AttributeError, match="saved no value named"):
            getattr(node, other)
