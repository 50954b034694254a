"""vmap over every registered op (and composite), driven by the registry: no hand lists.

For each entry hypothesis draws valid inputs from the op's declaration, makes a batch of
2 or 3 different elements of each array input (the batch dimension at a drawn position, or
the input left unbatched), and checks

* ``vmap(op)`` against the op run on each batch element and stacked (NumPy's ``stack`` of
  the loop's results: an independent reference, the batching rule is not involved);
* per-example vjps, ``vmap`` of ``autograd.grad`` through the op (its vjp rules, run
  batched on the logical graph), against the same loop;
* nested ``vmap(vmap(op))`` against the double loop.

An op may run through vmap's per-element loop only if it says why in ``notes["vmap"]``;
``test_fallback_ops_are_declared`` lists them (the goal is none).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import ndgrad
from ndgrad.checks.strategies import op_samples
from ndgrad.core.ops import COMPOSITES, REGISTRY
from ndgrad.core.ops.registry import VARIADIC
from ndgrad.functional.vmap import _FALLBACK_SEEN, fallback_ops, vmap
from support import on_device

ALL = sorted(REGISTRY) + sorted(COMPOSITES)


def _entry(name):
    return REGISTRY.get(name) or COMPOSITES[name]


def _nin(op, args):
    return len(args) if op.nin == VARIADIC else op.nin


def _call(op, arrays, extra, kwargs):
    kwargs = on_device(kwargs)
    if getattr(op, "pack", False):
        return op.public(list(arrays), *extra, **kwargs)
    return op.public(*arrays, *extra, **kwargs)


def _outs(r):
    return tuple(r) if isinstance(r, (tuple, list)) else (r,)


def _np(t):
    return t.detach().cpu().numpy() if isinstance(t, ndgrad.Tensor) else np.asarray(t)


def _element(a, b):
    """Batch element ``b`` of input ``a``: float inputs differ per element (a small,
    element-dependent scaling keeps them inside the op's domain), others repeat."""
    if isinstance(a, np.ndarray) and a.dtype.kind in "fc":
        return a * (1.0 + 0.03 * b)
    return a


def _draw_batch(data, op, args):
    """Per array input: None (unbatched) or the position of its batch dimension."""
    nin = _nin(op, args)
    dims = []
    for a in args[:nin]:
        if isinstance(a, np.ndarray) and data.draw(st.booleans(), label="batched"):
            dims.append(data.draw(st.integers(0, a.ndim), label="in_dim"))
        else:
            dims.append(None)
    if all(d is None for d in dims):
        k = next((i for i, a in enumerate(args[:nin]) if isinstance(a, np.ndarray)), None)
        if k is None:
            return None
        dims[k] = 0
    return dims


def _batched_inputs(args, dims, size):
    out = []
    for a, d in zip(args, dims):
        if d is None:
            out.append(ndgrad.tensor(a, dtype=a.dtype) if isinstance(a, np.ndarray) else a)
        else:
            stacked = np.stack([_element(a, b) for b in range(size)], axis=d)
            out.append(ndgrad.tensor(stacked, dtype=a.dtype))
    return out


def _loop_reference(op, args, dims, extra, kwargs, size):
    per = []
    for b in range(size):
        arrays = [ndgrad.tensor(_element(a, b), dtype=a.dtype) if d is not None
                  else (ndgrad.tensor(a, dtype=a.dtype) if isinstance(a, np.ndarray) else a)
                  for a, d in zip(args, dims)]
        per.append([_np(o) for o in _outs(_call(op, arrays, extra, kwargs))])
    return [np.stack([p[k] for p in per]) for k in range(len(per[0]))]


def _check_no_fallback(op, caught):
    """No op ran through vmap's per-element loop, unless this op declares why."""
    seen = sorted(_FALLBACK_SEEN)
    _FALLBACK_SEEN.clear()
    if seen and "vmap" not in (getattr(op, "notes", {}) or {}):
        pytest.fail(f"{op.name}: vmap fell back to a per-element loop for {seen}")


def _assert_close(got, expected, what):
    assert len(got) == len(expected), what
    for g, e in zip(got, expected):
        g = _np(g)
        assert g.shape == e.shape, f"{what}: shape {g.shape} != {e.shape}"
        np.testing.assert_allclose(g, e, rtol=1e-10, atol=1e-12, equal_nan=True, err_msg=what)


@pytest.mark.parametrize("name", ALL)
@given(data=st.data())
def test_vmap_matches_loop(name, data):
    op = _entry(name)
    for complex_ in ([False, True] if op.domain.complex else [False]):
        args, kwargs = data.draw(op_samples(op, complex=complex_))
        dims = _draw_batch(data, op, args)
        if dims is None:
            return
        size = data.draw(st.integers(2, 3), label="size")
        _check_vmap(op, args, kwargs, dims, size)


def _check_vmap(op, args, kwargs, dims, size):
    nin = _nin(op, args)
    expected = _loop_reference(op, args[:nin], dims, args[nin:], kwargs, size)
    inputs = _batched_inputs(args[:nin], dims, size)
    _FALLBACK_SEEN.clear()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = vmap(lambda *xs: _call(op, xs, args[nin:], kwargs), in_dims=tuple(dims))(
            *inputs)
    _check_no_fallback(op, caught)
    _assert_close(_outs(got), expected, f"vmap({op.name})")


@pytest.mark.parametrize("name", ALL)
@given(data=st.data())
def test_vmap_of_vjp_matches_loop(name, data):
    """Per-example vjps: the op's vjp rules run on batched cotangents and inputs (complex
    inputs and outputs included, with complex cotangents)."""
    op = _entry(name)
    if not op.differentiable:
        return
    complex_ = data.draw(st.booleans(), label="complex") if op.domain.complex else False
    args, kwargs = data.draw(op_samples(op, complex=complex_))
    nin = _nin(op, args)
    pos = [i for i, a in enumerate(args[:nin])
           if isinstance(a, np.ndarray) and a.dtype.kind in "fc"]
    if not pos:
        return
    dims = _draw_batch(data, op, args)
    size = 2
    extra = args[nin:]

    def vjp(*xs_and_g):
        xs, gs = list(xs_and_g[:nin]), xs_and_g[nin:]
        leaves = []
        for p in pos:
            xs[p] = xs[p].detach().requires_grad_()
            leaves.append(xs[p])
        outs = [o for o in _outs(_call(op, xs, extra, kwargs)) if o.dtype.kind in "fc"]
        return ndgrad.autograd.grad(outs, leaves, gs[:len(outs)], allow_unused=True,
                                    materialize_grads=True)

    # cotangents: drawn once per output (batched), from the unbatched outputs' shapes
    base_outs = [_np(o) for o in _outs(_call(
        op, [ndgrad.tensor(a, dtype=a.dtype) if isinstance(a, np.ndarray) else a
             for a in args[:nin]], extra, kwargs))]
    base_outs = [o for o in base_outs if o.dtype.kind in "fc"]
    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 31), label="seed"))
    gs = [rng.standard_normal((size,) + o.shape) + (
          1j * rng.standard_normal((size,) + o.shape) if o.dtype.kind == "c" else 0.0)
          for o in base_outs]
    expected = []
    for b in range(size):
        xs = [ndgrad.tensor(_element(a, b), dtype=a.dtype) if d is not None
              else (ndgrad.tensor(a, dtype=a.dtype) if isinstance(a, np.ndarray) else a)
              for a, d in zip(args[:nin], dims)]
        expected.append([_np(r) for r in vjp(*xs, *[ndgrad.tensor(g[b]) for g in gs])])
    expected = [np.stack([e[k] for e in expected]) for k in range(len(pos))]
    inputs = _batched_inputs(args[:nin], dims, size)
    _FALLBACK_SEEN.clear()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = vmap(vjp, in_dims=tuple(dims) + (0,) * len(gs))(
            *inputs, *[ndgrad.tensor(g) for g in gs])
    _check_no_fallback(op, caught)
    _assert_close(_outs(got), expected, f"vmap(vjp({name}))")


@pytest.mark.parametrize("name", ALL)
@given(data=st.data())
def test_nested_vmap_matches_loop(name, data):
    op = _entry(name)
    args, kwargs = data.draw(op_samples(op))
    nin = _nin(op, args)
    k = next((i for i, a in enumerate(args[:nin]) if isinstance(a, np.ndarray)), None)
    if k is None:
        return
    a = args[k]
    outer, inner = 2, 3
    # x[i, j] = element (i, j) of input k; the other inputs are shared
    elems = [[_element(a, i * inner + j) for j in range(inner)] for i in range(outer)]
    stacked = ndgrad.tensor(np.array(elems), dtype=a.dtype)

    def f(x):
        arrays = [ndgrad.tensor(v, dtype=v.dtype) if isinstance(v, np.ndarray) else v
                  for v in args[:nin]]
        arrays[k] = x
        return _call(op, arrays, args[nin:], kwargs)

    _FALLBACK_SEEN.clear()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = vmap(vmap(f))(stacked)
    _check_no_fallback(op, caught)
    expected = [[[_np(o) for o in _outs(f(ndgrad.tensor(e, dtype=a.dtype)))] for e in row]
                for row in elems]
    nout = len(expected[0][0])
    expected = [np.stack([np.stack([e[m] for e in row]) for row in expected])
                for m in range(nout)]
    _assert_close(_outs(got), expected, f"vmap(vmap({name}))")


def test_fallback_ops_are_declared():
    """Every op vmap would loop over says why (notes["vmap"]); the goal is none."""
    undeclared = [n for n in fallback_ops() if "vmap" not in (REGISTRY[n].notes or {})]
    assert undeclared == [], f"ops without a batching rule or a declared reason: {undeclared}"
    for n in fallback_ops():
        print(f"vmap loops over {n}: {REGISTRY[n].notes['vmap']}")


def test_suite_catches_a_wrong_batching_rule():
    """A rule that forgets to shift the axis past the batch dimension is caught."""
    op = REGISTRY["sum"]
    saved = op.batch_rule
    op.defbatch(lambda F, batched, x, axis=None, keepdims=False, **kw:
                F.sum(x, axis=axis, keepdims=keepdims, **kw))  # wrong: axis not shifted
    try:
        x = np.arange(12.0).reshape(3, 4)
        with pytest.raises(AssertionError, match="vmap"):
            _check_vmap(op, (x,), {"axis": 0}, [0], 2)
    finally:
        op.batch_rule = saved
    _check_vmap(op, (x,), {"axis": 0}, [0], 2)  # and the real rule passes
