"""The registry-driven property suite: every registered op and composite, no hand lists.

For each entry of ``REGISTRY`` / ``COMPOSITES`` and each dtype it accepts (complex128 too
where ``op.domain.complex``), hypothesis draws valid inputs from the op's own declaration
(its ``sample`` or its ``domain`` and ``kind``; tests/registry_harness.py) and checks

* forward against the NumPy/SciPy reference (the harness's ``REFERENCES``, else the NumPy or
  scipy.special function of the same name);
* vjp against central finite differences (gradcheck), and the create_graph formulas (run with
  the ndgrad namespace) against the raw first-order ones;
* second order (gradgradcheck);
* jvp against a central finite difference along a random tangent, through the raw rule and
  through public forward mode (``forward_ad.make_dual`` / ``unpack_dual``);
* that a non-differentiable op records nothing and carries no tangent.

Exceptions are declared in the op (``notes``), never listed here: a derivative check of an op
that is not differentiable or declares an exception is skipped with the reason, and
``test_declared_exceptions`` prints them. ``test_suite_catches_wrong_rules`` and
``test_suite_catches_wrong_complex_convention`` prove the checks fail on deliberately wrong
derivatives.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import ndgrad
import ndgrad.forward_ad as fwAD
from ndgrad.checks import GradcheckError, gradcheck, gradgradcheck
from ndgrad.core.backend import NUMPY
from ndgrad.core.ops import REGISTRY
from ndgrad.core.ops.registry import VARIADIC, Domain, Op
from registry_harness import (ENTRIES, Linearization, Sample, assert_close, cases, draw, entry,
                              fd_directional, random_like, reference, require, sin_with_rules)
from support import host


def _differentiable_sample(data, op, dtype):
    """A sample with at least one floating input (the others are constants)."""
    sample = draw(data, op, dtype)
    assume(sample.pos)
    return sample


# ------------------------------------------------------------------------------ values
@pytest.mark.parametrize("name, dtype", cases())
@given(data=st.data())
def test_forward_matches_reference(name, dtype, data):
    op = entry(name)
    ref = reference(op)
    if ref is None:
        pytest.skip(f"{name}: no NumPy/SciPy function of that name and no reference in "
                    "the harness's REFERENCES")
    if "reference" in (getattr(op, "notes", None) or {}):
        pytest.skip(f"{name}: notes['reference']: {op.notes['reference']}")
    sample = draw(data, op, dtype)
    got = sample.call(sample.inputs())
    expected = ref(*sample.args, **sample.kwargs)
    if not isinstance(expected, (tuple, list)):
        expected = (expected,)
    assert len(got) == len(expected), f"{name}: {len(got)} outputs, NumPy has {len(expected)}"
    assert_close(got, [np.asarray(e) for e in expected], f"{name} forward", rtol=1e-10,
                 atol=1e-12)


# ------------------------------------------------------------------------ not differentiable
NON_DIFFERENTIABLE = [n for n in ENTRIES if not entry(n).differentiable]


@pytest.mark.parametrize("name, dtype", cases(NON_DIFFERENTIABLE))
@given(data=st.data())
def test_non_differentiable_ops_record_nothing(name, dtype, data):
    """An op declared non-differentiable gives outputs that do not require grad and carry no
    tangent, even from inputs that require grad and carry tangents."""
    op = entry(name)
    sample = draw(data, op, dtype)
    out = sample.call(sample.inputs(requires_grad=True))
    assert not any(o.requires_grad for o in out), \
        f"{name} is declared non-differentiable but its output requires grad"
    with fwAD.dual_level():
        duals = [fwAD.make_dual(ndgrad.tensor(x, dtype=x.dtype),
                                ndgrad.tensor(np.ones_like(x), dtype=x.dtype))
                 for x in sample.floats]
        out = sample.call(sample.inputs(duals))
        assert all(fwAD.unpack_dual(o).tangent is None for o in out), \
            f"{name} is declared non-differentiable but its output got a tangent"


# ------------------------------------------------------------------------------ reverse
@pytest.mark.parametrize("name, dtype", cases())
@given(data=st.data())
def test_vjp_matches_finite_differences(name, dtype, data):
    op = entry(name)
    require(op, "vjp", "fd")
    sample = _differentiable_sample(data, op, dtype)
    assert gradcheck(sample.function(), sample.leaves(), eps=1e-6, atol=1e-6, rtol=1e-4)


@pytest.mark.parametrize("name, dtype", cases())
@given(data=st.data())
def test_create_graph_formulas_match_first_order(name, dtype, data):
    """The same vjp formula run on Tensors (F = ndgrad) and on raw arrays (F = backend)."""
    op = entry(name)
    require(op, "vjp")
    sample = _differentiable_sample(data, op, dtype)
    inputs = sample.leaves()
    outs = [o for o in sample.function()(*inputs) if o.dtype.kind in "fc"]
    rng = np.random.default_rng(0)
    cots = [ndgrad.tensor(random_like(rng, host(o)), dtype=o.dtype) for o in outs]
    raw = ndgrad.autograd.grad(outs, inputs, cots, retain_graph=True, allow_unused=True)
    taped = ndgrad.autograd.grad(outs, inputs, cots, create_graph=True, allow_unused=True)
    for a, b in zip(raw, taped, strict=True):
        assert (a is None) == (b is None), f"{name}: an input's gradient is None in one mode"
        if a is not None:
            assert b.dtype == a.dtype, f"{name}: {b.dtype} != {a.dtype}"
            assert_close(b, host(a), f"{name} create_graph vjp", rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name, dtype", cases())
@given(data=st.data())
def test_second_order_matches_finite_differences(name, dtype, data):
    op = entry(name)
    require(op, "vjp", "gradgrad", "fd")
    sample = _differentiable_sample(data, op, dtype)
    assert gradgradcheck(sample.function(), sample.leaves(), eps=1e-6, atol=1e-5, rtol=1e-3)


# ------------------------------------------------------------------------------ forward
def _tangents(sample, seed):
    rng = np.random.default_rng(seed)
    return [random_like(rng, x) for x in sample.floats]


def _fd_jvp(sample, tangents):
    return fd_directional(lambda xs: sample.evaluate(xs), sample.floats, tangents)


def _run_jvp_rule(op, sample, tangents):
    """The op's jvp rule on raw NumPy arrays."""
    full = [None] * sample.nin
    for p, t in zip(sample.pos, tangents):
        full[p] = t
    ins = list(sample.arrays)
    out = op.forward(NUMPY, *ins, *sample.extra, **sample.kwargs)
    if op.nout == 1:
        out = host(out)  # (to_device's forward leaves the host)
    got = op.jvp(NUMPY.F, tuple(full), out, *ins, *sample.extra, **sample.kwargs)
    return tuple(host(g) for g in (got if isinstance(got, (tuple, list)) else (got,)))


def _fd_jvp_raw(op, sample, tangents):
    """Central difference of the op's forward on raw NumPy arrays (every output)."""
    def forward(floats):
        full = list(sample.arrays)
        for p, x in zip(sample.pos, floats):
            full[p] = x
        r = op.forward(NUMPY, *full, *sample.extra, **sample.kwargs)
        return tuple(host(e) for e in (r if isinstance(r, (tuple, list)) else (r,)))
    return fd_directional(forward, sample.floats, tangents)


@pytest.mark.parametrize("name, dtype", cases(sorted(REGISTRY)))
@given(data=st.data())
def test_jvp_rule_matches_finite_differences(name, dtype, data):
    """The declared jvp rule, run on raw arrays (composites have no rule of their own: their
    forward mode is checked through dual numbers below)."""
    op = REGISTRY[name]
    require(op, "jvp", "fd")
    assert op.jvp is not None, f"{name} declares no jvp rule (and no notes['jvp'] reason)"
    sample = _differentiable_sample(data, op, dtype)
    tangents = _tangents(sample, 1)
    got = _run_jvp_rule(op, sample, tangents)
    expected = _fd_jvp_raw(op, sample, tangents)
    assert len(got) == len(expected), f"{name}: {len(got)} tangents for {len(expected)} outputs"
    for g, e in zip(got, expected):
        g = np.broadcast_to(np.asarray(g), e.shape)
        np.testing.assert_allclose(g, e, rtol=1e-4, atol=1e-6, err_msg=f"{name} jvp rule")


@pytest.mark.parametrize("name, dtype", cases())
@given(data=st.data())
def test_jvp_through_dual_numbers(name, dtype, data):
    """Forward mode through the public API (make_dual on the float inputs, unpack_dual on
    the outputs) equals a central finite difference along the tangent; non-floating outputs
    get no tangent."""
    op = entry(name)
    require(op, "jvp", "fd")
    sample = _differentiable_sample(data, op, dtype)
    tangents = _tangents(sample, 2)
    with fwAD.dual_level():
        duals = [fwAD.make_dual(ndgrad.tensor(x, dtype=x.dtype), ndgrad.tensor(t, dtype=x.dtype))
                 for x, t in zip(sample.floats, tangents)]
        outs = sample.call(sample.inputs(duals))
        got = [fwAD.unpack_dual(o).tangent for o in outs]
    floating = [(o, g) for o, g in zip(outs, got) if o.dtype.kind in "fc"]
    for o, g in zip(outs, got):
        if o.dtype.kind not in "fc":
            assert g is None, f"{name}: a non-differentiable output got a tangent"
        else:
            assert g is not None, f"{name}: no tangent on the output"
            assert g.shape == o.shape and g.dtype == o.dtype, \
                f"{name}: tangent {g.dtype}{list(g.shape)} for output {o.dtype}{list(o.shape)}"
    assert_close([g for _, g in floating], _fd_jvp(sample, tangents),
                 f"{name} jvp through dual numbers")


# ------------------------------------------------------------------------ declared exceptions
def test_declared_exceptions():
    """Every declared exception has a reason; print them (pytest -s shows the list)."""
    lines = []
    for name in ENTRIES:
        notes = getattr(entry(name), "notes", {}) or {}
        for key, reason in sorted(notes.items()):
            assert isinstance(reason, str) and len(reason) > 10, (name, key)
            lines.append(f"{name:24s} {key:10s} {reason}")
    print("\n".join(lines))
    # every op that is differentiable has a vjp and a jvp, or says why not
    for name, op in REGISTRY.items():
        if op.differentiable:
            assert op.vjp_rules is not None or op.vjp_each is not None or "vjp" in op.notes, name
            assert op.jvp is not None or "jvp" in op.notes, name


# ----------------------------------------------------------------------------- the suite fails
def test_suite_catches_wrong_rules():
    x = np.array([0.3, -1.1, 0.7])
    right = sin_with_rules()
    sample = Sample(right, (x,), {})
    assert gradcheck(sample.function(), sample.leaves())
    assert gradgradcheck(sample.function(), sample.leaves())

    # a wrong first derivative (sin' = -cos instead of cos)
    bad = Sample(sin_with_rules(vjp=lambda F, g, out, x: -g * F.cos(x)), (x,), {})
    with pytest.raises(GradcheckError, match="Jacobian mismatch"):
        gradcheck(bad.function(), bad.leaves())
    assert gradcheck(bad.function(), bad.leaves(), raise_exception=False) is False

    # right first derivative, wrong second: cos written through a non-differentiable path
    const = Sample(sin_with_rules(vjp=lambda F, g, out, x: g * F.cos(
        x.detach() if hasattr(x, "detach") else x)), (x,), {})
    assert gradcheck(const.function(), const.leaves())
    with pytest.raises(GradcheckError):
        gradgradcheck(const.function(), const.leaves())

    # a wrong jvp fails the jvp checks' comparisons (the raw rule and dual numbers)
    badj = sin_with_rules(jvp=lambda F, tangents, out, x: tangents[0] * F.sin(x))
    sample = Sample(badj, (x,), {})
    t = [np.ones_like(x)]
    expected = _fd_jvp_raw(badj, sample, t)
    with pytest.raises(AssertionError):
        np.testing.assert_allclose(_run_jvp_rule(badj, sample, t)[0], expected[0], rtol=1e-4,
                                   atol=1e-6)
    np.testing.assert_allclose(_run_jvp_rule(right, Sample(right, (x,), {}), t)[0],
                               expected[0], rtol=1e-6)
    with fwAD.dual_level():
        d = fwAD.make_dual(ndgrad.tensor(x), ndgrad.tensor(t[0]))
        tangent = fwAD.unpack_dual(sample.call(sample.inputs([d]))[0]).tangent
    with pytest.raises(AssertionError, match="jvp"):
        assert_close(tangent, expected[0], "jvp through dual numbers")


def test_suite_catches_wrong_complex_convention():
    """A vjp missing the conjugate (wrong Wirtinger convention) fails on complex inputs, and
    so does a non-holomorphic op whose jvp is derived from its vjp."""
    z = np.array([0.3 + 0.4j, -1.1 + 0.2j])
    bad = Sample(sin_with_rules(vjp=lambda F, g, out, x: g * F.cos(x)), (z,), {})
    with pytest.raises(GradcheckError):
        gradcheck(bad.function(), bad.leaves())
    good = Sample(sin_with_rules(), (z,), {})
    assert gradcheck(good.function(), good.leaves())
    # |z|^2 is not holomorphic: a jvp that treats it as such (t * 2z) is wrong
    abs2 = Op("wrong_abs2", lambda B, x: B.real(x * B.conj(x)), kind="elementwise", nin=1,
              nout=1, domain=Domain(complex=True), differentiable=True, view=False,
              sample=None, method=False, pack=False, inplace_method=None,
              kwarg_aliases=None, notes=None)
    abs2.defvjp(lambda F, g, out, x: 2 * g * x)
    abs2.defjvp(lambda F, tangents, out, x: F.real(2 * tangents[0] * x))
    t = [np.array([1.0 + 2.0j, -0.5 + 1.0j])]
    expected = _fd_jvp_raw(abs2, Sample(abs2, (z,), {}), t)
    assert not np.allclose(_run_jvp_rule(abs2, Sample(abs2, (z,), {}), t)[0], expected[0])


def test_registry_is_populated_from_declarations():
    """The suite's op list is the registry: every public op function is an entry."""
    import ndgrad.core.ops as ops
    for name in ENTRIES:
        e = entry(name)
        if e.namespace is None:  # ndgrad.<name>
            assert getattr(ndgrad, name) is ops.PUBLIC[name]
        else:  # ndgrad.<namespace>.<name> (Note [Namespaces])
            ns = getattr(ndgrad, e.namespace)
            assert getattr(ns, e.name) is ops.NAMESPACED[e.namespace][e.name]
            assert not hasattr(ndgrad, name)


# ----------------------------------------------------------------------------- views
VIEWS = sorted(name for name, op in REGISTRY.items() if op.view)


def test_every_view_op_declares_how_to_write_back():
    """A view op declares a scatter rule (in-place on its views reaches the base: PyTorch's
    CopySlices) or says why its views cannot be written; one that writes back saves nothing
    (its node must not hold the base, which the write changes)."""
    assert VIEWS
    for name in VIEWS:
        op = REGISTRY[name]
        assert op.scatter is not None or "scatter" in op.notes, name
        if op.scatter is not None:
            nin = 1 if op.nin == VARIADIC else op.nin
            save_out, mask = op.save_plan((True,) * nin)
            assert not save_out and mask is not None and True not in mask, name


@pytest.mark.parametrize("name, dtype",
                         cases([n for n in VIEWS if REGISTRY[n].scatter is not None]))
@given(data=st.data())
def test_scatter_inverts_the_view(name, dtype, data):
    """scatter(p, view(p)) == p and view(scatter(p, c)) == c, where the output is a view."""
    op = REGISTRY[name]
    sample = draw(data, op, dtype)
    x = sample.args[0]
    assume(isinstance(x, np.ndarray))
    rest = sample.args[1:]
    outs = op.forward(NUMPY, x, *rest, **sample.kwargs)
    outs = tuple(outs) if isinstance(outs, (tuple, list)) else (outs,)
    for k, out in enumerate(outs):
        if not np.may_share_memory(out, x):
            continue  # a copy, not a view: nothing to write back
        c = random_like(np.random.default_rng(k), np.asarray(out))

        def scatter(parent, child, k=k):
            lead = (k,) if op.nout != 1 else ()
            return np.asarray(op.scatter(NUMPY.F, *lead, parent, child, *rest, **sample.kwargs))
        np.testing.assert_array_equal(scatter(x, np.array(out)), x, err_msg=name)
        written = scatter(x, c)
        assert written.shape == x.shape, name
        again = op.forward(NUMPY, written, *rest, **sample.kwargs)
        again = again[k] if isinstance(again, (tuple, list)) else again
        np.testing.assert_array_equal(again, c, err_msg=name)


# --------------------------------------------------------------------- piecewise constant
PIECEWISE_CONSTANT = sorted(name for name, op in REGISTRY.items() if op.piecewise_constant)


def test_piecewise_constant_ops_take_their_rules_from_the_declaration():
    """One flag, one rule (Note [Piecewise-constant ops] in core/ops/registry.py): among the
    ops declared piecewise constant are those PyTorch treats so (floor, ceil, round, trunc)
    and special.gammasgn, whose output did not require grad; none may declare rules."""
    assert {"floor", "ceil", "trunc", "round", "floor_divide",
            "special.gammasgn"} <= set(PIECEWISE_CONSTANT)
    for name in PIECEWISE_CONSTANT:
        op = REGISTRY[name]
        assert op.differentiable, name
        with pytest.raises(TypeError, match=f"{name} is declared piecewise_constant"):
            op.defvjp(*(lambda F, g, out, *a, **k: g,) * op.nin)
        with pytest.raises(TypeError, match="defjvp cannot give it others"):
            op.defjvp(lambda F, tangents, out, *a, **k: tangents[0])
        assert not op.save_plan((True,) * op.nin)[0], name  # its rules read nothing


@pytest.mark.parametrize("name", PIECEWISE_CONSTANT)
@settings(max_examples=5)
@given(data=st.data())
def test_piecewise_constant_ops_have_zero_derivatives_that_require_grad(name, data):
    """Away from the jumps (the op's domain), finite differences see a constant: the
    output requires grad when an input does (as PyTorch's floor and sign), its gradient, its
    jvp, its Hessian and its gradient under vmap equal the finite differences, zero."""
    op = REGISTRY[name]
    sample = _differentiable_sample(data, op, "float64")
    xs = sample.leaves()
    outs = sample.call(sample.inputs(xs))
    assert all(o.requires_grad and o.grad_fn.name() == op.node_name for o in outs), name
    lin = Linearization(sample.evaluate, sample.floats)
    rng = np.random.default_rng(0)
    cots = [random_like(rng, host(o)) for o in outs]
    grads = ndgrad.autograd.grad(outs, xs, [ndgrad.tensor(c) for c in cots])
    assert_close(grads, lin.vjp(cots), f"{name} vjp", rtol=0, atol=0)
    ts = [random_like(rng, x) for x in sample.floats]
    _, tangents = ndgrad.func.jvp(sample.function(), tuple(ndgrad.tensor(x) for x in
                                                            sample.floats),
                                  tuple(ndgrad.tensor(t) for t in ts))
    assert_close(tangents, lin.jvp(ts), f"{name} jvp", rtol=0, atol=0)

    def total(*floats):
        return sum(o.sum() for o in sample.function()(*floats))
    argnums = tuple(range(len(xs)))
    floats = tuple(ndgrad.tensor(x) for x in sample.floats)
    hess = ndgrad.func.hessian(total, argnums=argnums)(*floats)
    # the reference: central differences of the finite-difference gradient (a step inside
    # the distance the domain keeps from the jumps)
    outer = Linearization(lambda fs: tuple(np.real(g) for g in Linearization(
        lambda v: (np.sum([np.sum(o) for o in sample.evaluate(v)]),), fs).vjp([1.0])),
        sample.floats, eps=1e-5)
    for i in argnums:
        for j in argnums:
            assert_close(hess[i][j], outer.jacfwd()[i][j], f"{name} hessian[{i}][{j}]",
                         rtol=0, atol=0)
    # vmap of the gradient over two points, the second shifted inside the same step
    points = [sample.floats, [x + 1e-5 for x in sample.floats]]
    batch = tuple(ndgrad.tensor(np.stack(column)) for column in zip(*points))
    per = ndgrad.func.vmap(ndgrad.func.grad(total, argnums=argnums))(*batch)
    ones = [np.ones_like(host(o)) for o in outs]
    reference = [Linearization(sample.evaluate, p).vjp(ones) for p in points]
    for i in argnums:
        assert_close(per[i], np.stack([r[i] for r in reference]), f"{name} vmap(grad)[{i}]",
                     rtol=0, atol=0)
