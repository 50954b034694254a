"""vmap over every registered op (and composite), driven by the registry: no hand lists.

For each entry and each dtype it accepts (complex128 too where ``op.domain.complex``)
hypothesis draws valid inputs from the op's declaration (tests/registry_harness.py), makes a
batch of 2 or 3 different elements of each array input (the batch dimension at a drawn
position, or the input left unbatched), and checks

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
from hypothesis import assume, given
from hypothesis import strategies as st

import ndgrad
from ndgrad.core.ops import REGISTRY
from ndgrad.functional.vmap import _FALLBACK_SEEN, fallback_ops, vmap
from registry_harness import (Sample, assert_close, cases, draw, entry, is_float_array,
                              random_like, require, tensor)
from support import host


def _element(a, b):
    """Batch element ``b`` of input ``a``: float inputs differ per element, others repeat.
    The scaling is small (1 % per element, at most 5 % for the nested test's six elements) so
    that every element stays inside the op's sample domain: at 3 % per element, ``acos``,
    ``asin`` and ``atanh`` inputs drawn near 0.9 left [-1, 1] and those elements were compared
    NaN to NaN."""
    if is_float_array(a):
        return a * (1.0 + 0.01 * b)
    return a


def _draw_batch(data, sample):
    """Per array input: None (unbatched) or the position of its batch dimension; at least
    one input is batched."""
    dims = []
    for a in sample.arrays:
        if isinstance(a, np.ndarray) and data.draw(st.booleans(), label="batched"):
            dims.append(data.draw(st.integers(0, a.ndim), label="in_dim"))
        else:
            dims.append(None)
    if all(d is None for d in dims):
        k = next((i for i, a in enumerate(sample.arrays) if isinstance(a, np.ndarray)), None)
        assume(k is not None)
        dims[k] = 0
    return dims


def _batched_inputs(sample, dims, size):
    out = []
    for a, d in zip(sample.arrays, dims):
        if d is None:
            out.append(tensor(a) if isinstance(a, np.ndarray) else a)
        else:
            out.append(tensor(np.stack([_element(a, b) for b in range(size)], axis=d)))
    return out


def _element_inputs(sample, dims, b):
    """The array inputs of batch element ``b`` as Tensors (numbers stay)."""
    return [tensor(_element(a, b)) if d is not None else
            (tensor(a) if isinstance(a, np.ndarray) else a)
            for a, d in zip(sample.arrays, dims)]


def _stack_loop(per):
    """Stack per-element results (lists of NumPy arrays) along a new first axis."""
    return [np.stack([p[k] for p in per]) for k in range(len(per[0]))]


def _check_no_fallback(op):
    """No op ran through vmap's per-element loop, unless this op declares why."""
    seen = sorted(_FALLBACK_SEEN)
    _FALLBACK_SEEN.clear()
    if seen and "vmap" not in (getattr(op, "notes", {}) or {}):
        pytest.fail(f"{op.qualname}: vmap fell back to a per-element loop for {seen}")


def _vmapped(fn, in_dims, *inputs, op):
    _FALLBACK_SEEN.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        got = vmap(fn, in_dims=in_dims)(*inputs)
    _check_no_fallback(op)
    return got


def _assert_matches_loop(got, expected, what):
    got = tuple(got) if isinstance(got, (tuple, list)) else (got,)
    assert_close(got, expected, what, rtol=1e-10, atol=1e-12, equal_nan=True)


@pytest.mark.parametrize("name, dtype", cases())
@given(data=st.data())
def test_vmap_matches_loop(name, dtype, data):
    op = entry(name)
    sample = draw(data, op, dtype)
    dims = _draw_batch(data, sample)
    size = data.draw(st.integers(2, 3), label="size")
    _check_vmap(sample, dims, size)


def _check_vmap(sample, dims, size):
    expected = _stack_loop([host(list(sample.call(_element_inputs(sample, dims, b))))
                            for b in range(size)])
    got = _vmapped(lambda *xs: sample.call(list(xs)), tuple(dims),
                   *_batched_inputs(sample, dims, size), op=sample.op)
    _assert_matches_loop(got, expected, f"vmap({sample.op.qualname})")


@pytest.mark.parametrize("name, dtype", cases())
@given(data=st.data())
def test_vmap_of_vjp_matches_loop(name, dtype, data):
    """Per-example vjps: the op's vjp rules run on batched cotangents and inputs (complex
    inputs and outputs included, with complex cotangents)."""
    op = entry(name)
    require(op, "vjp")
    sample = draw(data, op, dtype)
    assume(sample.pos)
    dims = _draw_batch(data, sample)
    size = 2
    nin = sample.nin

    def vjp(*xs_and_g):
        xs, gs = list(xs_and_g[:nin]), xs_and_g[nin:]
        leaves = []
        for p in sample.pos:
            xs[p] = xs[p].detach().requires_grad_()
            leaves.append(xs[p])
        outs = [o for o in sample.call(xs) if o.dtype.kind in "fc"]
        return ndgrad.autograd.grad(outs, leaves, gs[:len(outs)], allow_unused=True,
                                    materialize_grads=True)

    # cotangents: drawn once per output (batched), from the unbatched outputs' shapes
    base = [host(o) for o in sample.call(sample.inputs()) if o.dtype.kind in "fc"]
    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 31), label="seed"))
    gs = [np.stack([random_like(rng, o) for _ in range(size)]) for o in base]
    expected = _stack_loop([host(list(vjp(*_element_inputs(sample, dims, b),
                                          *[ndgrad.tensor(g[b]) for g in gs])))
                            for b in range(size)])
    got = _vmapped(vjp, tuple(dims) + (0,) * len(gs), *_batched_inputs(sample, dims, size),
                   *[ndgrad.tensor(g) for g in gs], op=op)
    _assert_matches_loop(got, expected, f"vmap(vjp({name}))")


@pytest.mark.parametrize("name, dtype", cases())
@given(data=st.data())
def test_nested_vmap_matches_loop(name, dtype, data):
    op = entry(name)
    sample = draw(data, op, dtype)
    k = next((i for i, a in enumerate(sample.arrays) if isinstance(a, np.ndarray)), None)
    assume(k is not None)
    a = sample.arrays[k]
    outer, inner = 2, 3
    # x[i, j] = element (i, j) of input k; the other inputs are shared
    elems = [[_element(a, i * inner + j) for j in range(inner)] for i in range(outer)]

    def f(x):
        arrays = sample.inputs()
        arrays[k] = x
        return sample.call(arrays)

    got = _vmapped(vmap(f), 0, tensor(np.array(elems)), op=op)
    expected = [_stack_loop([host(list(f(tensor(e)))) for e in row]) for row in elems]
    expected = [np.stack([row[m] for row in expected]) for m in range(len(expected[0]))]
    _assert_matches_loop(got, expected, f"vmap(vmap({name}))")


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
    sample = Sample(op, (np.arange(12.0).reshape(3, 4),), {"axis": 0})
    try:
        with pytest.raises(AssertionError, match="vmap"):
            _check_vmap(sample, [0], 2)
    finally:
        op.batch_rule = saved
    _check_vmap(sample, [0], 2)  # and the real rule passes
