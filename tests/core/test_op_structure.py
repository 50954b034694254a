"""Every op's declared algebraic structure (Note [Op structure] in core/ops/registry.py) holds
in numbers: an op declared linear is linear in its floating inputs together, one declared
multilinear is linear in each of the inputs it names, the others held; and the declaration
helpers refuse what is not a structure."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from ndgrad.core.ops.registry import GENERAL, Algebra, Structure, linear
from registry_harness import ENTRIES, FLOAT, Sample, draw, entry, sin_with_rules
from support import random_like

pytestmark = pytest.mark.cpu_only("a declaration is device independent")


def _declared(algebra):
    """The registered ops (composites have no structure of their own: theirs is their
    primitives') declared ``algebra``, not only between kinks."""
    return [n for n in ENTRIES if getattr(entry(n), "structure", None) is not None
            and entry(n).structure.algebra is algebra and not entry(n).structure.piecewise]


def _close(a, b, what):
    for x, y in zip(a, b, strict=True):
        np.testing.assert_allclose(x, y, rtol=1e-9, atol=1e-9 * (1 + np.max(np.abs(y))),
                                   err_msg=what)


@pytest.mark.parametrize("name", _declared(Algebra.LINEAR))
@settings(max_examples=2, deadline=None)
@given(data=st.data())
def test_ops_declared_linear_are_affine_in_their_floating_inputs(name, data):
    """F(x + 2 y) - F(x) = 2 (F(x + y) - F(x)), every floating input moved together: linear
    up to what the inputs held fixed add (a Python number put by index_put, pad's
    constant_values), which is what the transforms read from the declaration (a zero second
    derivative, the jvp the op's own)."""
    sample = draw(data, entry(name), FLOAT)
    assume(sample.pos)  # (a sample with something floating to move)
    _check_affine(sample, f"{name} is declared linear")


def _check_affine(sample, what):
    rng = np.random.default_rng(0)
    x = sample.floats
    y = [random_like(rng, a) for a in x]
    with np.errstate(all="ignore"):
        f0 = sample.evaluate(x)
        f1 = sample.evaluate([a + b for a, b in zip(x, y)])
        f2 = sample.evaluate([a + 2 * b for a, b in zip(x, y)])
    _close([b - a for a, b in zip(f0, f2)], [2 * (b - a) for a, b in zip(f0, f1)], what)


def test_the_check_catches_an_op_wrongly_declared_linear():
    """sin declared linear fails the check."""
    op = sin_with_rules().defstructure(linear())
    with pytest.raises(AssertionError, match="declared linear"):
        _check_affine(Sample(op, (np.array([0.3, -1.1, 0.7]),), {}), "declared linear")


@pytest.mark.parametrize("name", _declared(Algebra.MULTILINEAR))
@settings(max_examples=2, deadline=None)
@given(data=st.data())
def test_ops_declared_multilinear_are_linear_in_each_input(name, data):
    """F(..., x_i + 2 y_i, ...) = F(..., x_i, ...) + 2 F(..., y_i, ...) for each input i the
    declaration names, the others held."""
    op = entry(name)
    sample = draw(data, op, FLOAT)
    assume(any(op.structure.concerns(p) for p in sample.pos))  # (an input to move)
    rng = np.random.default_rng(0)
    x = sample.floats
    for k, p in enumerate(sample.pos):
        if not op.structure.concerns(p):
            continue
        y = random_like(rng, x[k])

        def at(v, k=k):
            return sample.evaluate(x[:k] + [v] + x[k + 1:])
        with np.errstate(all="ignore"):
            lhs = at(x[k] + 2 * y)
            rhs = [a + 2 * b for a, b in zip(at(x[k]), at(y))]
        _close(lhs, rhs, f"{name} is declared multilinear, in its input {p}")


def test_a_declaration_that_is_not_a_structure_is_refused():
    op = sin_with_rules()
    with pytest.raises(TypeError, match=r"wrong_sin\.deftaylor: expected a rule function, "
                                        r"got 'linear'; declare linearity with "
                                        r"defstructure\(linear\(\)\)"):
        op.deftaylor("linear")
    with pytest.raises(TypeError, match=r"wrong_sin\.defstructure: expected a Structure"):
        op.defstructure("linear")
    with pytest.raises(TypeError, match="algebra must be an Algebra"):
        Structure("LINEAR")
    assert op.defstructure(linear()).structure.algebra is Algebra.LINEAR
    assert op.defstructure(GENERAL).taylor is None  # (no rule of its own, no structure's)
