"""vmap over every registered op (and composite), driven by the registry: no hand lists.

Three families of the registry matrix (Note [The registry matrix] in
tests/registry_matrix.py): for each entry and each dtype it accepts (complex128 too where
``op.domain.complex``), on every sample of its bank (drawn from the op's declaration), a
batch of 2 or 3 different elements of each array input (the batch dimension at a random
position, or the input left unbatched; seeded by the sample) is checked:

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

import ndgrad
from ndgrad.core.ops import REGISTRY
from ndgrad.functional.vmap import _FALLBACK_SEEN, fallback_ops, vmap
from registry_harness import is_float_array, tensor
from registry_matrix import differentiable_without, each, family
from support import assert_close, host, random_like


def _element(a, b):
    """Batch element ``b`` of input ``a``: float inputs differ per element, others repeat.
    The scaling is small (1 % per element, at most 5 % for the nested test's six elements) so
    that every element stays inside the op's sample domain: at 3 % per element, ``acos``,
    ``asin`` and ``atanh`` inputs drawn near 0.9 left [-1, 1] and those elements were compared
    NaN to NaN."""
    if is_float_array(a):
        with np.errstate(invalid="ignore"):  # (inf * 1: a sample's infinite entry)
            return a * (1.0 + 0.01 * b)
    return a


def _layout(e):
    """The batch of an entry: per array input, None (unbatched) or the position of its batch
    dimension (at least one input is batched), and the batch size (2 or 3); random, seeded by
    the sample, or None where the sample has no array input."""
    rng = np.random.default_rng([e.index, e.kind == "small"])
    arrays = e.sample.arrays
    dims = [int(rng.integers(0, a.ndim + 1)) if isinstance(a, np.ndarray) and rng.random() < 0.5
            else None for a in arrays]
    if all(d is None for d in dims):
        k = next((i for i, a in enumerate(arrays) if isinstance(a, np.ndarray)), None)
        if k is None:
            return None
        dims[k] = 0
    return dims, int(rng.integers(2, 4))


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
    with warnings.catch_warnings():  # (a loop is seen through _FALLBACK_SEEN, not its notice)
        warnings.filterwarnings("ignore", message="vmap: .*runs once per batch element")
        got = vmap(fn, in_dims=in_dims)(*inputs)
    _check_no_fallback(op)
    return got


def _assert_matches_loop(got, expected, what):
    got = tuple(got) if isinstance(got, (tuple, list)) else (got,)
    assert_close(got, expected, what, rtol=1e-10, atol=1e-12, equal_nan=True)


def _with_arrays(bank, entries=None):
    return [e for e in (bank.entries if entries is None else entries) if _layout(e)]


@family("vmap")
def test_vmap(bank):
    """vmap of the op against the loop over the batch elements, on every sample."""
    def vmap_matches_loop(e):
        dims, size = _layout(e)
        _check_vmap(e.sample, dims, size)
    each(_with_arrays(bank), vmap_matches_loop, f"{bank.name} ({bank.dtype}) vmap")


def _check_vmap(sample, dims, size):
    expected = _stack_loop([host(list(sample.call(_element_inputs(sample, dims, b))))
                            for b in range(size)])
    got = _vmapped(lambda *xs: sample.call(list(xs)), tuple(dims),
                   *_batched_inputs(sample, dims, size), op=sample.op)
    _assert_matches_loop(got, expected, f"vmap({sample.op.qualname})")


@family("vmap_of_vjp", differentiable_without("vjp"))
def test_vmap_of_vjp(bank):
    """Per-example vjps: the op's vjp rules run on batched cotangents and inputs (complex
    inputs and outputs included, with complex cotangents), against the loop, on every sample
    with a floating input."""
    op, name = bank.op, bank.name

    def vmap_of_vjp_matches_loop(e):
        sample = e.sample
        dims, _ = _layout(e)
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

        # cotangents: one per output (batched), from the unbatched outputs' shapes
        base = [host(o) for o in sample.call(sample.inputs()) if o.dtype.kind in "fc"]
        rng = np.random.default_rng([e.index, 7])
        gs = [np.stack([random_like(rng, o) for _ in range(size)]) for o in base]
        expected = _stack_loop([host(list(vjp(*_element_inputs(sample, dims, b),
                                              *[tensor(g[b]) for g in gs])))
                                for b in range(size)])
        got = _vmapped(vjp, tuple(dims) + (0,) * len(gs),
                       *_batched_inputs(sample, dims, size), *[tensor(g) for g in gs], op=op)
        _assert_matches_loop(got, expected, f"vmap(vjp({name}))")
    each(_with_arrays(bank, [e for e in bank.entries if e.sample.pos]),
         vmap_of_vjp_matches_loop, f"{name} ({bank.dtype}) vmap of vjp")


@family("nested_vmap")
def test_nested_vmap(bank):
    """vmap(vmap(op)) over 2 x 3 elements of an array input against the double loop."""
    op, name = bank.op, bank.name

    def nested_vmap_matches_loop(e):
        sample = e.sample
        k = next(i for i, a in enumerate(sample.arrays) if isinstance(a, np.ndarray))
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
    each(_with_arrays(bank), nested_vmap_matches_loop, f"{name} ({bank.dtype}) nested vmap")


def test_fallback_ops_are_declared():
    """Every op vmap would loop over says why (notes["vmap"]); the goal is none."""
    undeclared = [n for n in fallback_ops() if "vmap" not in (REGISTRY[n].notes or {})]
    assert undeclared == [], f"ops without a batching rule or a declared reason: {undeclared}"
    for n in fallback_ops():
        print(f"vmap loops over {n}: {REGISTRY[n].notes['vmap']}")
