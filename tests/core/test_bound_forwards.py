"""Forwards bound to a backend (Note [Forwards that hand their arguments on] in
core/ops/registry.py): an op whose forward only hands its arguments on to the backend runs
as the backend's own function, and gives what its forward gives, for every op."""

from __future__ import annotations

import functools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ndgrad
from ndgrad.checks.strategies import op_samples
from ndgrad.core.backend import NUMPY
from ndgrad.core.ops import REGISTRY
from ndgrad.core.ops.registry import _handed_on_to

pytestmark = pytest.mark.cpu_only("it binds the forwards to the NumPy backend")

ALL = sorted(REGISTRY)
# (an op bound with functools.partial runs its own forward: comparing it with itself could
# not fail, so the comparison below is for the ops bound to the backend's function)
HANDED_ON = [n for n in ALL if not isinstance(REGISTRY[n].bound[NUMPY], functools.partial)]


def _same(a, b):
    if isinstance(a, tuple):
        return len(a) == len(b) and all(_same(u, v) for u, v in zip(a, b))
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and \
        np.array_equal(a, b, equal_nan=a.dtype.kind in "fc")


@pytest.mark.parametrize("name", HANDED_ON)
@settings(max_examples=3)
@given(data=st.data())
def test_the_bound_forward_gives_what_the_forward_gives(name, data):
    op = REGISTRY[name]
    args, kwargs = data.draw(op_samples(op))
    bound = op.bound[NUMPY]
    try:
        want = op.forward(NUMPY, *args, **kwargs)
    except Exception as exc:  # (a draw the forward refuses: the bound one must refuse too)
        with pytest.raises(type(exc)):
            bound(*args, **kwargs)
        return
    assert _same(bound(*args, **kwargs), want), name


def test_forwards_that_hand_on_are_bound_to_the_backends_own_function():
    for name, ufunc in [("tanh", np.tanh), ("sin", np.sin), ("add", np.add),
                        ("multiply", np.multiply), ("square", np.square)]:
        assert REGISTRY[name].bound[NUMPY] is ufunc, name
        assert getattr(NUMPY.F, name) is ufunc, name
    # a forward that does more than hand on keeps its own code
    for name in ("sum", "conj"):
        f = REGISTRY[name].bound[NUMPY]
        assert isinstance(f, functools.partial) and f.func is REGISTRY[name].forward
    assert len(HANDED_ON) >= 40, HANDED_ON


def test_the_analysis_accepts_only_a_plain_hand_on():
    def tanh(B, x):
        """doc"""
        return B.tanh(x)

    def swapped(B, x, y):
        return B.subtract(y, x)

    def changed(B, x):
        return B.exp(x + 1)

    def keyword(B, x):
        return B.sum(x, axis=0)

    def default(B, x, axis=None):
        return B.sum(x, axis)

    def two_statements(B, x):
        y = x
        return B.exp(y)

    def other_object(B, x):
        return np.exp(x)

    assert _handed_on_to(tanh) == "tanh"
    for f in (swapped, changed, keyword, default, two_statements, other_object):
        assert _handed_on_to(f) is None, f.__name__
    assert _handed_on_to(lambda B, x: B.exp(x)) is None  # (lambdas: not analysed)


def test_a_raw_namespace_names_what_it_lacks():
    with pytest.raises(AttributeError, match="no function 'no_such_op'"):
        NUMPY.F.no_such_op  # noqa: B018


def test_a_bound_forward_serves_the_public_call_and_its_gradient():
    x0 = np.array([0.3, -1.2, 2.0])
    x = ndgrad.tensor(x0, requires_grad=True)
    y = ndgrad.tanh(x * 2.0 + 1.0)
    y.sum().backward()
    np.testing.assert_allclose(y.detach().numpy(), np.tanh(2 * x0 + 1), rtol=1e-15)
    np.testing.assert_allclose(x.grad.numpy(), 2 * (1 - np.tanh(2 * x0 + 1) ** 2), rtol=1e-14)
    # a call that does not fit the op still says so in the op's terms
    with pytest.raises(TypeError, match=r"ndgrad\.tanh"):
        ndgrad.tanh(x, 1, 2)


SPECIAL = [n for n in ALL if REGISTRY[n].special is not None]


@pytest.mark.parametrize("name", SPECIAL)
@settings(max_examples=5)
@given(data=st.data())
def test_a_special_case_gives_what_the_forward_gives(name, data):
    """Where an op declares that it is another op for some arguments (Note [Special cases of
    an op]), that op gives the forward's result bit for bit; the draws are the op's own,
    with each input in turn set to Python scalars the rule might single out."""
    op = REGISTRY[name]
    rule = op.special
    args, kwargs = data.draw(op_samples(op))
    if kwargs:
        return
    args = tuple(args)
    candidates = [args] + [args[:k] + (v,) + args[k + 1:] for k in range(len(args))
                           for v in (0, 1, 2, 2.0, 0.5, -1, 3)]
    applied = 0
    for cand in candidates:
        found = rule(*cand)
        if found is None:
            continue
        other, inputs = found
        assert _same(REGISTRY[other].forward(NUMPY, *inputs), op.forward(NUMPY, *cand)), name
        applied += 1
    assert applied, f"{name}: no draw met its special case"


def test_pow_of_two_is_square_in_a_compiled_program():
    """pow(x, 2) of a real floating x is recorded as square (its special case) and gives
    x * x bit for bit; an integer or complex x keeps pow."""
    x = np.random.default_rng(5).normal(size=7) * 1e3
    f = ndgrad.func.compile(lambda t: t ** 2)
    out = f(ndgrad.tensor(x))
    assert np.array_equal(f(ndgrad.tensor(x)).numpy(), x * x) and np.array_equal(out, x * x)
    assert np.array_equal(np.power(x, 2.0), x * x)   # (NumPy's own power: the same bits)
    assert "square(v0)" in f.source(ndgrad.tensor(x))
    for other in (np.arange(3), np.array([1 + 2j])):
        assert "pow(" in f.source(ndgrad.tensor(other))
        assert np.array_equal(f(ndgrad.tensor(other)).numpy(), other ** 2)


INTO = [n for n in ALL if REGISTRY[n].into is not None]


def test_scatters_declare_a_forward_into_their_first_input():
    assert {"index_add", "index_put"} <= set(INTO)


@pytest.mark.parametrize("name", INTO)
@settings(max_examples=8)
@given(data=st.data())
def test_a_forward_into_the_first_input_gives_what_the_forward_gives(name, data):
    """Where an op declares a forward that writes into its first input (Note [Forwards that
    write into their first input]), that forward, on a copy of the first input of the
    result's dtype, gives the forward's result bit for bit in the copy's memory; and the
    op's own forward returns memory none of its inputs shares."""
    op = REGISTRY[name]
    args, kwargs = data.draw(op_samples(op))
    want = op.forward(NUMPY, *args, **kwargs)
    assert not any(np.shares_memory(want, a) for a in args if isinstance(a, np.ndarray)), name
    base = np.array(args[0], dtype=want.dtype, copy=True)
    got = op.into(NUMPY, base, *args[1:], **kwargs)
    assert got is base and _same(got, want), name


FORMULA = [n for n in ALL if REGISTRY[n].formula is not None]


def test_conj_declares_its_formula():
    assert "conj" in FORMULA


@pytest.mark.parametrize("name", FORMULA)
@settings(max_examples=5)
@given(data=st.data())
def test_a_formula_is_the_raw_function_on_numbers_and_the_public_one_on_tensors(name, data):
    """Where an op's function in TENSOR_F is not its public one (Note [Formulas on Python
    numbers]), on Python numbers it gives what the raw namespace's function gives, of the
    same type (a weak number beside arrays), and on tensors what the public function
    gives."""
    op = REGISTRY[name]
    raw = getattr(NUMPY.F, name)
    for v in (2.5, -0.0, 3, True, 1.5 - 2j):
        got, want = op.formula(v), raw(v)
        assert type(got) is type(want) and got == want and \
            np.signbit(np.real(got)) == np.signbit(np.real(want)), (name, v)
    args, kwargs = data.draw(op_samples(op))
    tensors = [ndgrad.tensor(a) if isinstance(a, np.ndarray) else a for a in args]
    assert _same(op.formula(*tensors, **kwargs).numpy(), op.public(*tensors, **kwargs).numpy())


def test_a_float32_rule_with_a_python_constant_stays_float32():
    """``g * F.conj(1.0001)`` in a Tensor-mode rule (create_graph, a compiled trace) computes
    in float32 as the raw rule does, bit for bit; the public conj of a number is a tensor."""
    x0 = np.random.default_rng(0).normal(size=5).astype(np.float32)
    x = ndgrad.tensor(x0, requires_grad=True)
    y = ndgrad.tanh(x * 1.0001).sum()
    raw, = ndgrad.autograd.grad(y, x, retain_graph=True)
    graph, = ndgrad.autograd.grad(y, x, create_graph=True)
    assert raw.dtype == graph.dtype == np.float32
    assert np.array_equal(raw.numpy(), graph.detach().numpy())
    g = ndgrad.func.compile(ndgrad.func.grad(lambda t: ndgrad.tanh(t * 1.0001).sum()))
    src = g.source(ndgrad.tensor(x0))
    assert "astype" not in src and "1.0001" in src
    assert np.array_equal(g(ndgrad.tensor(x0)).numpy(), raw.numpy())
    assert isinstance(ndgrad.conj(2.0), ndgrad.Tensor)
