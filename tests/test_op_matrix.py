"""The registry matrix as a whole (Note [The registry matrix] in tests/registry_matrix.py):
its device family, the comparison of what it collected with the registry, and the proof that
its families fail on deliberately wrong rules.

* ``device``: every op and composite, in every dtype, on the CUDA backend (a real GPU, or the
  emulated device of tests/emulated_cupy.py without one): its values, its gradient by reverse
  mode and its tangent by forward mode on the first DEVICE_SAMPLES samples of its bank,
  against the same computed on the CPU (to rounding). That runs every op's forward, vjp
  rules and jvp rule through the CUDA backend (the device code paths: the backend's array
  functions, the host round trips of the special-function kernels, device placement of
  constants and of results, the device checks of the dispatcher); ``--slow`` runs every
  family on the CUDA backend too.
* ``test_every_op_reaches_every_check_that_applies``: the (family, op, dtype) cases
  collected equal those the registry and each family's declaration imply, and every op is
  checked by some family.
* The mutation tests: a wrong vjp, a wrong jvp, a wrong second derivative, a wrong complex
  convention and a wrong batching rule each fail the families that should see them (and the
  right rules pass them), on an elementwise op and on registered ops of every kind; a wrong
  Taylor rule fails the taylor family (tests/test_taylor.py).
"""

from __future__ import annotations

import importlib

import numpy as np
import pytest

import ndgrad
import ndgrad.forward_ad as fwAD
from ndgrad.core.dispatch import apply
from ndgrad.core.ops import REGISTRY
from ndgrad.core.ops.registry import Domain, Op
from registry_harness import ENTRIES, dtypes, entry, sin_with_rules, tensor
from registry_matrix import (COLLECTED, FAMILIES, GPU, Bank, each, family, notes, on_cpu,
                             on_devices, pair)
from support import assert_close, host

DEVICE_SAMPLES = 2
ROUNDING = {"rtol": 1e-9, "atol": 1e-12}  # the same computation on two devices


# --------------------------------------------------------------------------- the device family
@family("device", devices=GPU)
def test_device(bank):
    """The op on the CUDA backend gives the CPU's values, and (differentiable ops) the CPU's
    gradient of ``re <w, F>`` by reverse mode and tangent by forward mode, to rounding."""
    def values(e):
        s = e.sample
        inputs = s.inputs()
        got = s.call(inputs)
        with on_cpu():
            expected = [host(o) for o in s.call(s.inputs())]
        # (NumPy inputs stay on the CPU; to_device, told its device, is not in this family:
        # registry_matrix.on_devices)
        if any(isinstance(a, ndgrad.Tensor) for a in inputs):
            for o in got:
                if isinstance(o, ndgrad.Tensor):
                    assert o.device.type == "cuda", f"an output on {o.device}"
        assert_close([host(o) for o in got], expected, f"{bank.name} on the device",
                     equal_nan=True, **ROUNDING)

    def gradient(e):
        if not _derivatives_on_the_device(bank.op, e, "vjp"):
            return
        leaves = [tensor(x, requires_grad=True) for x in e.x]
        y = pair(e.w, e.F(*leaves))
        got = ndgrad.autograd.grad(y, leaves, allow_unused=True, materialize_grads=True)
        assert all(g.device.type == "cuda" for g in got), "a gradient off the device"
        assert_close([host(g) for g in got], e.gradient(e.x, e.w),
                     f"{bank.name}'s gradient on the device", **ROUNDING)

    def tangent(e):
        if not _derivatives_on_the_device(bank.op, e, "jvp"):
            return
        with fwAD.dual_level():
            duals = [fwAD.make_dual(tensor(x), tensor(v)) for x, v in zip(e.x, e.v)]
            outs = e.F(*duals)
            got = [fwAD.unpack_dual(o).tangent for o in outs]
        got = [host(g) if g is not None else np.zeros(o.shape, o.dtype)
               for g, o in zip(got, outs)]
        assert_close(got, e.first_order_jvp(e.x, e.v), f"{bank.name}'s tangent on the device",
                     **ROUNDING)
    each(bank.entries[:DEVICE_SAMPLES], [values, gradient, tangent],
         f"{bank.name} ({bank.dtype}) on the device")


def _derivatives_on_the_device(op, e, rule):
    """Whether the device family checks ``rule``'s derivatives on this sample: a
    differentiable op with the rule, and a sample with derivatives."""
    return bool(op.differentiable) and e.differentiable and rule not in notes(op)


# ------------------------------------------------------------------- coverage of the registry
FAMILY_MODULES = ("test_op_properties", "test_op_compositions", "test_op_batching",
                  "test_taylor", "test_op_python_inputs", "test_op_matrix", "test_op_compile")


@pytest.mark.cpu_only("the rules and the collection are device independent")
def test_every_op_reaches_every_check_that_applies(request):
    """What the matrix collected (before -k and --deselect) is what the registry and the
    families' declarations imply: for every family, exactly the (op, dtype) rows it applies
    to, on its devices; and every op and composite of the registry, in every dtype, reaches
    at least one family that checks its values or its derivatives."""
    collected = request.config.stash[COLLECTED]
    missing_modules = [m for m in FAMILY_MODULES if f"{m}.py" not in collected["modules"]]
    if missing_modules:
        pytest.skip(f"the session did not collect {missing_modules} (run the whole suite)")
    problems = coverage_problems(collected["cases"])
    assert not problems, "\n".join(problems)


@pytest.mark.cpu_only("the collection is device independent")
def test_the_coverage_comparison_sees_a_missing_case(request):
    """One vjp case and every case of one op left out of what was collected: the
    comparison names both."""
    collected = request.config.stash[COLLECTED]
    if not any(c[0] == "vjp" for c in collected["cases"]):
        pytest.skip("the session did not collect the registry suites (run the whole suite)")
    cases = {c for c in collected["cases"] if c[:3] != ("vjp", "sin", "float64")
             and c[1] != "cumulative_sum"}
    problems = "\n".join(coverage_problems(cases))
    assert "('vjp', 'sin', 'float64', 'cpu')" in problems, problems
    assert "cumulative_sum (float64) reaches no family" in problems, problems


def coverage_problems(cases):
    """What the collected ``cases`` ((family, op, dtype, device)) lack or hold beyond what
    the registry and the families' declarations imply."""
    for m in FAMILY_MODULES:
        importlib.import_module(m)
    problems, reached = [], {}
    for name, fn in FAMILIES.items():
        devices = fn.devices
        expected = {(name, op_name, dt, dev) for op_name in ENTRIES
                    for dt in dtypes(entry(op_name)) if fn.applies(op_name, entry(op_name), dt)
                    for dev in on_devices(entry(op_name), devices)}
        got = {c for c in cases if c[0] == name and c[3] in devices}
        if expected - got:
            problems.append(f"{name}: not collected for {sorted(expected - got)[:5]}")
        if got - expected:
            problems.append(f"{name}: collected beyond its rows {sorted(got - expected)[:5]}")
        for _, op_name, dt, _ in got:
            reached.setdefault((op_name, dt), set()).add(name)
    checks_values = {"forward", "records_nothing", "vjp", "jvp", "python_inputs"}
    for op_name in ENTRIES:
        op = entry(op_name)
        for dt in dtypes(op):
            families = reached.get((op_name, dt), set())
            if not families & checks_values:
                problems.append(f"{op_name} ({dt}) reaches no family that checks its values "
                                f"or derivatives (only {sorted(families)})")
            if op.differentiable and not notes(op) & {"vjp", "fd"} and "vjp" not in families:
                problems.append(f"{op_name} ({dt}) is differentiable and declares no "
                                "exception, but the vjp family does not reach it")
    return problems


# --------------------------------------------------------------------------- wrong rules
X = np.array([0.3, -1.1, 0.7])
Z = np.array([0.3 + 0.4j, -1.1 + 0.2j])


def _family(name):
    for m in FAMILY_MODULES[:-1]:
        importlib.import_module(m)
    return FAMILIES[name]


def _fails(name, bank, *messages):
    """The family ``name`` fails on ``bank``, naming ``messages``."""
    with pytest.raises(pytest.fail.Exception) as info:
        _family(name)(bank)
    for m in messages:
        assert m in str(info.value), str(info.value)


def _sin(vjp=None, jvp=None, batch=lambda F, batched, x: F.sin(x)):
    """The unregistered copy of sin with replaceable rules (registry_harness), with a batching
    rule of its own (the kind's default looks the op up by name)."""
    return sin_with_rules(vjp, jvp, batch)


def _detached(F, x):
    return x.detach() if hasattr(x, "detach") else x


@pytest.mark.cpu_only("the rules and the collection are device independent")
def test_right_rules_pass_every_family():
    """The copy of sin with its right rules passes every family the wrong ones fail below
    (so what fails there is the wrong rule)."""
    for data in (X, Z):
        right = Bank.of(_sin(), data)
        for name in ("vjp", "create_graph", "second_order", "jvp", "first_order", "pullback",
                     "second_order_compositions", "batched_compositions", "vmap",
                     "vmap_of_vjp", "nested_vmap"):
            _family(name)(right)


@pytest.mark.cpu_only("the rules and the collection are device independent")
def test_a_wrong_vjp_fails_the_reverse_families():
    bad = Bank.of(_sin(vjp=lambda F, g, out, x: -g * F.conj(F.cos(x))), X)
    _fails("vjp", bad, "Jacobian mismatch")
    _fails("first_order", bad, "grad:", "vjp:", "jacrev:")


@pytest.mark.cpu_only("the rules and the collection are device independent")
def test_a_wrong_jvp_fails_the_forward_families_only():
    bad = Bank.of(_sin(jvp=lambda F, tangents, out, x: tangents[0] * F.sin(x)), X)
    _fails("jvp", bad, "jvp")
    _fails("first_order", bad, "3 of 6", "jvp:", "linearize:", "jacfwd:")
    _family("vjp")(bad)  # (the reverse families do not see it)


@pytest.mark.cpu_only("the rules and the collection are device independent")
def test_a_wrong_second_derivative_fails_the_second_order_families_only():
    """A vjp right in value but constant in x (its input detached): first order passes,
    the Hessian does not."""
    bad = Bank.of(_sin(vjp=lambda F, g, out, x: g * F.conj(F.cos(_detached(F, x)))),
                  X)
    _family("vjp")(bad)
    _family("first_order")(bad)
    _fails("second_order", bad)
    _fails("second_order_compositions", bad, "jacrev_of_jacrev:", "grad_of_grad:")


@pytest.mark.cpu_only("the rules and the collection are device independent")
def test_a_wrong_complex_convention_fails_on_complex_inputs():
    """A vjp without the conjugate (the wrong Wirtinger convention) passes on real inputs
    and fails on complex ones."""
    op = _sin(vjp=lambda F, g, out, x: g * F.cos(x))
    _family("vjp")(Bank.of(op, X))
    _fails("vjp", Bank.of(op, Z), "Jacobian mismatch")


@pytest.mark.cpu_only("the rules are device independent")
def test_a_jvp_that_takes_a_non_holomorphic_op_for_holomorphic_is_caught():
    """|z|^2 is not holomorphic: a jvp of t 2z (as if it were) fails the jvp family on
    complex inputs; t conj(z) + z conj(t) passes."""
    def abs2(jvp):
        op = Op("abs2", lambda B, x: B.real(x * B.conj(x)), kind="elementwise", nin=1, nout=1,
                domain=Domain(complex=True), differentiable=True, view=False, sample=None,
                method=False, pack=False, inplace_method=None, kwarg_aliases=None, notes=None)
        op.defvjp(lambda F, g, out, x: 2 * g * x)
        op.defjvp(jvp)
        op.defbatch(lambda F, batched, x: F.real(x * F.conj(x)))
        op.public = lambda x: apply(op, x)
        return op
    _family("jvp")(Bank.of(abs2(lambda F, tangents, out, x: F.real(
        tangents[0] * F.conj(x) + x * F.conj(tangents[0]))), Z))
    _fails("jvp", Bank.of(abs2(lambda F, tangents, out, x: F.real(2 * tangents[0] * x)), Z),
           "jvp")


@pytest.mark.cpu_only("the rules and the collection are device independent")
def test_a_wrong_batching_rule_fails_the_batching_families():
    bad = Bank.of(_sin(batch=lambda F, batched, x: F.sin(x) * 1.5), X)
    _fails("vmap", bad, "vmap")
    _fails("batched_compositions", bad, "vmap_of_jvp:", "vmap_of_vjp:", "grad_of_vmap:")


@pytest.mark.cpu_only("the rules and the collection are device independent")
def test_a_batching_rule_that_forgets_the_batch_axis_is_caught(monkeypatch):
    """A reduction's rule that does not shift its axis past the batch dimension."""
    op = REGISTRY["sum"]
    sample = ((np.arange(12.0).reshape(3, 4),), {"axis": 0})
    _family("vmap")(Bank.of(op, *sample[0], kwargs=sample[1]))
    monkeypatch.setattr(op, "batch_rule", lambda F, batched, x, axis=None, keepdims=False,
                        **kw: F.sum(x, axis=axis, keepdims=keepdims, **kw))
    _fails("vmap", Bank.of(op, *sample[0], kwargs=sample[1]), "vmap")


def _one_op_of_each_kind():
    """Per kind, the first differentiable registered op (by name) with one vjp rule per input
    and a jvp rule, that declares no exception: the ops the per-kind mutations change."""
    chosen = {}
    for name in sorted(REGISTRY):
        op = REGISTRY[name]
        if op.kind in chosen or not op.differentiable or notes(op) & {"vjp", "jvp", "fd"} \
                or op.vjp_each is not None or not op.vjp_rules or op.jvp is None:
            continue
        chosen[op.kind] = name
    return sorted(chosen.values())


def _scaled_rule(rule, factor):
    if rule is None:
        return None

    def wrong(*args, **params):
        return rule(*args, **params) * factor
    return wrong


@pytest.mark.cpu_only("the rules are device independent")
@pytest.mark.parametrize("name", _one_op_of_each_kind())
def test_wrong_rules_of_an_op_of_every_kind_are_caught(name, monkeypatch):
    """An op of every kind (elementwise, reduction, scan, shape, indexing, linear algebra,
    comparison where differentiable): its bank passes the vjp and jvp families with its own
    rules, and fails the vjp family with its vjp rules scaled by 1.5 and the jvp family with
    its jvp rule scaled by 1.5."""
    op = REGISTRY[name]
    b = Bank(op, "float64")
    _family("vjp")(b)
    _family("jvp")(b)
    with monkeypatch.context() as m:
        # (and what the op caches from its rules' analysis, all put back after: Note [What a
        # rule reads])
        standins = op.meta_standins  # (the right rules' analysis, before they change)
        m.setattr(op, "_meta_standins", standins)
        m.setattr(op, "vjp_rules", tuple(_scaled_rule(r, 1.5) for r in op.vjp_rules))
        m.setattr(op, "_uses", None)
        m.setattr(op, "_save_cache", {})
        _fails("vjp", Bank(op, "float64"), "Jacobian mismatch")
    with monkeypatch.context() as m:
        m.setattr(op, "jvp", _scaled_rule(op.jvp, 1.5))
        _fails("jvp", Bank(op, "float64"), "jvp")
