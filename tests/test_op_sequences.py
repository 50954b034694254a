"""A list holding tensors in place of an array, for every registered op and composite (Note
[Sequences of tensors] in ndgrad/core/namespace.py): no hand lists.

For each entry of the registry (tests/registry_harness.py) hypothesis draws a sample from the
op's declaration; one of its array inputs of at least one dimension (a floating one where
there is one; never one the op declares to take a sequence of arrays as such, as
``select``'s ``condlist``) is given as the Python list of its rows, and the op must give what
it gives on ``ndgrad.stack`` of those rows:

* the values (every output, integer ones too);
* under ``func.grad``, ``func.jvp`` and ``func.vmap``: the list is made inside the
  transformed function from the transform's own value, so the transform's values hide in a
  list (they once reached the op unseen: a zero tangent, an internal error, an
  AttributeError).
"""

from __future__ import annotations

import inspect

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, reject, settings
from hypothesis.errors import Unsatisfiable
from hypothesis import strategies as st

import ndgrad
from ndgrad import func
from registry_harness import assert_close, cases, draw, entry, outs, require, tensor
from support import close, host

FEW = settings(max_examples=3, phases=[Phase.explicit, Phase.reuse, Phase.generate],
               suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
EXACT = {"rtol": 1e-10, "atol": 1e-12}


def _input_names(op):
    fn = getattr(op, "fn", None) or op.forward
    return [p.name for p in list(inspect.signature(fn).parameters.values())[1:]
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL)]


def _usable(sample):
    """The array inputs that may be given as a list: of at least one dimension, not one the
    op takes as a sequence of arrays (``op.sequences``); the floating ones first."""
    names = _input_names(sample.op)
    as_such = getattr(sample.op, "sequences", ())
    usable = [k for k, a in enumerate(sample.arrays)
              if isinstance(a, np.ndarray) and a.ndim >= 1 and a.shape[0] > 0 and
              (k >= len(names) or names[k] not in as_such)]
    return [k for k in usable if k in sample.pos] + [k for k in usable if k not in sample.pos]


def _examples(op, dtype, check):
    """Run ``check(sample, p)`` on a few drawn samples of ``op`` that have an array input
    ``p`` to give as a list (draws without one are discarded; an op that never has one, its
    inputs being numbers, is skipped with the reason)."""
    @FEW
    @given(data=st.data())
    def run(data):
        sample = draw(data, op, dtype)
        usable = _usable(sample)
        if not usable:
            reject()
        check(sample, usable[0])
    try:
        run()
    except Unsatisfiable:
        pytest.skip(f"{op.qualname}: no drawn sample has an array input of one dimension or "
                    "more (its inputs are numbers, or sequences of arrays taken as such)")


def _rows(x):
    return [x[i] for i in range(x.shape[0])]


def _caller(sample, p):
    """``call(x, as_list)``: the op's outputs with input ``p`` set to ``x``, given as the
    list of its rows or as ``ndgrad.stack`` of them."""
    base = sample.inputs()

    def call(x, as_list):
        inputs = list(base)
        inputs[p] = _rows(x) if as_list else ndgrad.stack(_rows(x))
        return sample.call(inputs)
    return call


def _weighted(call, as_list):
    """The op as a real scalar function of input ``p``: its floating outputs paired with
    fixed weights (the same for both forms)."""
    def f(x):
        total = None
        rng = np.random.default_rng(3)
        for o in call(x, as_list):
            if o.dtype.kind not in "fc":
                continue
            w = tensor(np.asarray(rng.uniform(0.5, 1.5, tuple(o.shape)), dtype=o.dtype))
            t = ndgrad.sum(ndgrad.real(o * w))
            total = t if total is None else total + t
        return total
    return f


@pytest.mark.parametrize("name, dtype", cases())
def test_a_list_holding_tensors_is_read_as_their_stack(name, dtype):
    def check(sample, p):
        call = _caller(sample, p)
        x = tensor(sample.arrays[p])
        expected = host(list(call(x, False)))
        assert_close(call(x, True), expected, f"{name} on a list of tensors", **EXACT)
    _examples(entry(name), dtype, check)


@pytest.mark.parametrize("transform", ["grad", "jvp", "vmap"])
@pytest.mark.parametrize("name, dtype", cases())
def test_a_list_holding_a_transforms_values(name, dtype, transform):
    op = entry(name)
    if transform != "vmap":
        require(op, "vjp" if transform == "grad" else "jvp")

    def check(sample, p):
        call = _caller(sample, p)
        x = tensor(sample.arrays[p])
        if transform == "vmap":
            xs = ndgrad.stack([x, x * 1.01]) if x.dtype.kind in "fc" else ndgrad.stack([x, x])

            def batched(as_list):
                return lambda xb: call(xb, as_list)
            expected = outs(func.vmap(batched(False))(xs))
            got = outs(func.vmap(batched(True))(xs))
        else:
            if p not in sample.pos or _weighted(call, False)(x) is None:
                reject()  # (the input given as a list, or every output, is not floating)
            if transform == "grad":
                expected = func.grad(_weighted(call, False))(x)
                got = func.grad(_weighted(call, True))(x)
            else:
                t = tensor(np.asarray(np.random.default_rng(5).uniform(-1, 1, tuple(x.shape)),
                                      dtype=x.dtype))
                expected = func.jvp(_weighted(call, False), (x,), (t,))[1]
                got = func.jvp(_weighted(call, True), (x,), (t,))[1]
        assert_close(got, host(list(outs(expected))),
                     f"{transform} of {name} on a list of tensors", **EXACT)
    _examples(op, dtype, check)


# ---------------------------------------------------------------------- the reported cases
def test_sum_of_a_list_with_a_keyword_under_every_transform():
    """``sum([t, 3 t], axis=0)`` is 4 t: its derivative is 4 under jvp, grad and vmap."""
    def f(t):
        return ndgrad.sum([t, 3 * t], axis=0)
    one = ndgrad.tensor(1.0)
    close(func.jvp(f, (one,), (one,))[1], 4.0)
    close(func.grad(f)(one), 4.0)
    close(func.vmap(f)(ndgrad.tensor([1.0, 2.0])), [4.0, 8.0])
    close(func.vmap(func.grad(f))(ndgrad.tensor([1.0, 2.0])), [4.0, 4.0])


def test_a_sequence_of_elements_of_different_shapes_is_refused():
    x = ndgrad.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(ValueError, match=r"ndgrad\.sum: a sequence holding tensors is read as "
                                         r"an array.*element 1 has shape \(\), another \(2,\)"):
        ndgrad.sum([x, 3.0])
    with pytest.raises(ValueError, match=r"ndgrad\.exp: .*element 1 has shape \(3,\)"):
        ndgrad.exp([x, ndgrad.ones(3)])


@pytest.mark.cpu_only("NumPy arrays beside the tensors are host arrays")
def test_numbers_and_arrays_in_the_list_take_the_tensors_place():
    """Numbers and NumPy arrays beside the tensors are constants of the stacked array."""
    x = ndgrad.tensor([1.0, 2.0], requires_grad=True)
    y = ndgrad.sum([x, [10.0, 20.0], np.array([100.0, 200.0])], axis=0)
    close(y, [111.0, 222.0])
    (y * ndgrad.tensor([1.0, 3.0])).sum().backward()
    close(x.grad, [1.0, 3.0])
