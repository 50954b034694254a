"""What a node saves (Note [What a rule reads] in core/ops/registry.py, Note [What a node
saves] in core/graph.py), for every op of the registry: the analysis of each vjp rule's
source finds what it reads, declared ``saves=`` agree with it, and each rule runs on exactly
what its op's save plan keeps (what is not saved is poisoned: touching it fails the test)."""

from __future__ import annotations

import inspect
import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ndgrad.checks.strategies import op_samples
from ndgrad.core.backend import NUMPY
from ndgrad.core.dispatch import VARIADIC
from ndgrad.core.saved import InputMeta
from ndgrad.core.ops import REGISTRY
from ndgrad.core.ops.registry import Domain, Op, _reads

pytestmark = pytest.mark.cpu_only("it runs the rules on raw NumPy arrays")

WITH_RULES = sorted(n for n, op in REGISTRY.items()
                    if op.differentiable and (op.vjp_rules is not None or op.vjp_each is not None))


def _rules(op):
    return [op.vjp_each] if op.vjp_each is not None else [r for r in op.vjp_rules if r]


def test_every_rule_is_analysed_from_its_source():
    assert len(WITH_RULES) > 100
    for name in WITH_RULES:
        for rule in _rules(REGISTRY[name]):
            assert _reads(rule) is not None, (name, rule)


def _saved_names(op, rule):
    """The analysis as a declaration: the saved values ``rule`` reads ("x.shape": metadata)."""
    full, meta = _reads(rule)
    names = list(inspect.signature(rule).parameters)
    first = 4 if op.vjp_each is not None else 3
    values = {names[first - 1]} | set(names[first:first + (op.nin if op.nin != VARIADIC
                                                             else 0)])
    return {n for n in full if n in values} | {f"{n}.shape" for n in meta if n in values}


def test_declared_saves_agree_with_the_analysis():
    declared = [n for n in WITH_RULES if REGISTRY[n].saves is not None]
    assert {"linalg.eigh", "linalg.svd", "linalg.qr", "linalg.solve", "matmul"} <= \
        set(declared)
    for name in declared:
        op = REGISTRY[name]
        saves = [op.saves] if op.vjp_each is not None else op.saves
        for rule, d in zip(_rules(op), saves):
            got = {n if "." not in n else n.partition(".")[0] + ".shape" for n in d}
            assert got == _saved_names(op, rule), name


def test_the_analysis_finds_values_metadata_inner_functions_and_lambdas_on_one_line():
    def rule(F, g, out, x, y, z):
        def inner():
            return z
        return g * y.shape[0] + x.ndim + inner()
    assert _reads(rule) == ({"g", "z"}, {"x", "y"})
    first, second = (lambda F, g, out, x: g * x), (lambda F, g, out, x: g * out)
    assert _reads(first) == ({"g", "x"}, set())
    assert _reads(second) == ({"g", "out"}, set())


class _Touched(Exception):
    pass


class _Poison:
    """What a node does not save: any use raises."""

    def __getattr__(self, name):
        raise _Touched(name)

    def _touch(self, *args, **kwargs):
        raise _Touched("operation")

    __array__ = __array_function__ = __len__ = __iter__ = __getitem__ = __bool__ = _touch
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = _touch
    __rtruediv__ = __pow__ = __rpow__ = __neg__ = __matmul__ = __rmatmul__ = _touch
    __float__ = __int__ = __complex__ = __index__ = __abs__ = __eq__ = __lt__ = _touch

    def __array_ufunc__(self, *args, **kwargs):
        raise _Touched("ufunc")


def _run_rules_on_the_plan(op, args, kwargs):
    nin = len(args) if op.nin == VARIADIC else op.nin
    arrays, extra = list(args[:nin]), list(args[nin:])
    diff = [i for i, a in enumerate(arrays) if isinstance(a, np.ndarray) and
            a.dtype.kind in "fc"]
    if not diff:
        return 0
    out = op.forward(NUMPY, *arrays, *extra, **kwargs)
    outs = out if op.nout != 1 else (out,)
    outs = [np.asarray(o) for o in outs]
    g = [np.ones_like(o) for o in outs]
    g = g[0] if op.nout == 1 else g
    checked = 0
    for k in range(1, len(diff) + 1):
        for chosen in itertools.combinations(diff, k):
            needs = tuple(i in chosen for i in range(nin))
            save_out, mask = op.save_plan(needs)
            ins = []
            for i, a in enumerate(arrays):
                if mask is None or mask[i]:
                    ins.append(a)
                elif needs[i] and op.meta_standins:
                    ins.append(InputMeta(np.shape(a), np.asarray(a).dtype))
                else:
                    ins.append(_Poison())
            o = (outs[0] if op.nout == 1 else tuple(outs)) if save_out else _Poison()
            for i in chosen:
                rule = op.vjp_rule(i)
                try:
                    rule(NUMPY.F, g, o, *ins, *extra, **kwargs)
                except _Touched as exc:
                    pytest.fail(f"{op.qualname}: the vjp rule of input {i} read an unsaved "
                                f"value ({exc}) with needs={needs}: saved out={save_out}, "
                                f"inputs={mask}")
                except NotImplementedError:
                    pass  # a declared missing derivative (it reads nothing)
                checked += 1
    return checked


@pytest.mark.parametrize("name", WITH_RULES)
@settings(max_examples=3)
@given(data=st.data())
def test_rules_read_only_what_the_node_saves(name, data):
    op = REGISTRY[name]
    args, kwargs = data.draw(op_samples(op))
    _run_rules_on_the_plan(op, args, kwargs)


def test_the_poison_check_catches_a_rule_that_reads_an_unsaved_value():
    op = Op("leaky", lambda B, x, y: x * y, kind="elementwise", nin=2, nout=1,
            domain=Domain(), differentiable=True, view=False, sample=None, method=False,
            pack=False, inplace_method=None, kwarg_aliases=None, notes=None)
    # declared to read only y, but reads x too: a node would save too little
    op.defvjp(lambda F, g, out, x, y: g * y + 0 * x, lambda F, g, out, x, y: g * x,
              saves=(("y",), ("x",)))
    x, y = np.array([1.0, 2.0]), np.array([3.0, 4.0])
    with pytest.raises(pytest.fail.Exception, match="read an unsaved value"):
        _run_rules_on_the_plan(op, (x, y), {})
    op.defvjp(lambda F, g, out, x, y: g * y + 0 * x, lambda F, g, out, x, y: g * x)
    assert _run_rules_on_the_plan(op, (x, y), {}) == 4


def test_an_op_has_only_declared_fields():
    """Every fact about an op is a declared field (slots): no attribute set from outside."""
    op = REGISTRY["sin"]
    assert not hasattr(op, "__dict__")
    with pytest.raises(AttributeError):
        op.undeclared = 1


def test_a_rule_without_readable_source_saves_everything_and_says_so():
    """A vjp rule whose source ndgrad cannot read (made by eval, typed at a prompt): its nodes
    save every input, which is right, and the op warns once, naming itself and asking for
    ``saves=`` (it saved everything silently before); declaring ``saves=`` silences it."""
    import warnings

    import ndgrad
    from ndgrad.core.dispatch import apply
    from registry_harness import sin_with_rules
    unread = eval("lambda F, g, out, x: g * F.conj(F.cos(x))")  # noqa: S307
    op = sin_with_rules(vjp=unread)
    x = ndgrad.tensor([0.3, -1.1, 0.7], requires_grad=True)
    with pytest.warns(UserWarning, match=r"the vjp rules of wrong_sin have no source ndgrad "
                                         r"can read .* wrong_sin\.defvjp\(\.\.\., saves="):
        apply(op, x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.cos([0.3, -1.1, 0.7]), rtol=1e-15)
    declared = sin_with_rules()
    declared.defvjp(unread, saves=["x"])
    y = ndgrad.tensor([0.5], requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        apply(declared, y).sum().backward()
    np.testing.assert_allclose(y.grad.numpy(), np.cos([0.5]), rtol=1e-15)
