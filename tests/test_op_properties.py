"""The registry-driven property suite: every registered op and composite, no hand lists.

For each entry of ``REGISTRY`` / ``COMPOSITES`` hypothesis draws valid inputs from the op's
own declaration (its ``sample`` or its ``domain`` and ``kind``) and checks

* forward against the NumPy/SciPy reference (``op.reference``, else the NumPy or
  scipy.special function of the same name);
* vjp against central finite differences (gradcheck), and the create_graph formulas (run with
  the ndgrad namespace) against the raw first-order ones;
* second order (gradgradcheck);
* jvp against a central finite difference along a random tangent.

Exceptions are declared in the op (``notes``), never listed here; ``test_declared_exceptions``
prints them with their reasons. ``test_suite_catches_wrong_rules`` proves the checks fail on
deliberately wrong derivatives.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.special
from hypothesis import given
from hypothesis import strategies as st

import ndgrad
from ndgrad.checks import GradcheckError, gradcheck, gradgradcheck
from ndgrad.checks.strategies import op_samples
from ndgrad.core.backend import NUMPY
from ndgrad.core.ops import COMPOSITES, REGISTRY
from ndgrad.core.ops.registry import VARIADIC, Domain, Op, defop
from support import on_device

ALL = sorted(REGISTRY) + sorted(COMPOSITES)


def _entry(name):
    return REGISTRY.get(name) or COMPOSITES[name]


def _nin(op, args):
    return len(args) if op.nin == VARIADIC else op.nin


def _dtypes(op):
    return [False, True] if op.domain.complex else [False]


def _call(op, args, kwargs):
    """Call the public function with array args converted to tensors (float ones require grad)."""
    nin = _nin(op, args)
    tensors = []
    for a in args[:nin]:
        if isinstance(a, np.ndarray):
            t = ndgrad.tensor(a, dtype=a.dtype,
                              requires_grad=op.differentiable and a.dtype.kind in "fc")
            tensors.append(t)
        else:
            tensors.append(a)
    return tensors, _public_call(op, tensors, args[nin:], kwargs)


def _public_call(op, tensors, extra, kwargs):
    kwargs = on_device(kwargs)
    if getattr(op, "pack", False):
        return op.public(tensors, *extra, **kwargs)
    return op.public(*tensors, *extra, **kwargs)


def _outs(r):
    return r if isinstance(r, (tuple, list)) else (r,)


def _reference(op):
    ref = getattr(op, "reference", None)
    if ref is not None:
        return ref
    if op.namespace == "special":
        return getattr(scipy.special, op.name, None)
    if op.namespace is not None:  # np.linalg.<name>, np.fft.<name>
        return getattr(getattr(np, op.namespace), op.name, None)
    return getattr(np, op.name, None) or getattr(scipy.special, op.name, None)


def _diff_positions(op, args):
    nin = _nin(op, args)
    return [i for i, a in enumerate(args[:nin])
            if isinstance(a, np.ndarray) and a.dtype.kind in "fc"]


def _checked_function(op, args, kwargs):
    """(func, tensor inputs) for gradcheck: the op as a function of its float arrays."""
    nin = _nin(op, args)
    pos = _diff_positions(op, args)

    def func(*diff):
        full = list(args[:nin])
        for p, t in zip(pos, diff):
            full[p] = t
        full = [ndgrad.tensor(a, dtype=a.dtype) if isinstance(a, np.ndarray) else a
                for a in full]
        return _outs(_public_call(op, full, args[nin:], kwargs))
    func.__name__ = op.name
    inputs = tuple(ndgrad.tensor(args[p], dtype=args[p].dtype, requires_grad=True) for p in pos)
    return func, inputs


def _skip_if_noted(op, key):
    notes = getattr(op, "notes", {}) or {}
    if key in notes:
        pytest.skip(f"{op.name}: {notes[key]}")


@pytest.mark.parametrize("name", ALL)
@given(data=st.data())
def test_forward_matches_reference(name, data):
    op = _entry(name)
    ref = _reference(op)
    if ref is None:
        pytest.skip(f"{name}: no NumPy/SciPy function of that name and no declared reference")
    _skip_if_noted(op, "reference")
    for complex_ in _dtypes(op):
        args, kwargs = data.draw(op_samples(op, complex=complex_))
        _, got = _call(op, args, kwargs)
        expected = ref(*args, **kwargs)
        got, expected = _outs(got), _outs(expected)
        assert len(got) == len(expected)
        for g, e in zip(got, expected):
            e = np.asarray(e)
            assert g.shape == e.shape, f"{name}: shape {g.shape} != {e.shape}"
            np.testing.assert_allclose(g.detach().cpu().numpy(), e, rtol=1e-10, atol=1e-12,
                                       err_msg=f"{name} forward")


@pytest.mark.parametrize("name", ALL)
@given(data=st.data())
def test_vjp_matches_finite_differences(name, data):
    op = _entry(name)
    for complex_ in _dtypes(op):
        args, kwargs = data.draw(op_samples(op, complex=complex_))
        if not op.differentiable:
            tensors, out = _call(op, args, kwargs)
            assert not any(o.requires_grad for o in _outs(out)), \
                f"{name} is declared non-differentiable but its output requires grad"
            return
        _skip_if_noted(op, "vjp")
        if not _diff_positions(op, args):
            continue
        func, inputs = _checked_function(op, args, kwargs)
        assert gradcheck(func, inputs, eps=1e-6, atol=1e-6, rtol=1e-4)


@pytest.mark.parametrize("name", ALL)
@given(data=st.data())
def test_create_graph_formulas_match_first_order(name, data):
    """The same vjp formula run on Tensors (F = ndgrad) and on raw arrays (F = backend)."""
    op = _entry(name)
    if not op.differentiable:
        return
    _skip_if_noted(op, "vjp")
    for complex_ in _dtypes(op):
        args, kwargs = data.draw(op_samples(op, complex=complex_))
        if not _diff_positions(op, args):
            continue
        func, inputs = _checked_function(op, args, kwargs)
        outs = [o for o in func(*inputs) if o.dtype.kind in "fc"]
        rng = np.random.default_rng(0)
        cots = [ndgrad.tensor(rng.standard_normal(o.shape).astype(o.dtype)) for o in outs]
        raw = ndgrad.autograd.grad(outs, inputs, cots, retain_graph=True, allow_unused=True)
        taped = ndgrad.autograd.grad(outs, inputs, cots, create_graph=True, allow_unused=True)
        for a, b in zip(raw, taped):
            assert (a is None) == (b is None)
            if a is not None:
                assert b.dtype == a.dtype
                np.testing.assert_allclose(b.detach().cpu().numpy(), a.cpu().numpy(),
                                           rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", ALL)
@given(data=st.data())
def test_second_order_matches_finite_differences(name, data):
    op = _entry(name)
    if not op.differentiable:
        return
    _skip_if_noted(op, "vjp")
    _skip_if_noted(op, "gradgrad")
    for complex_ in _dtypes(op):
        args, kwargs = data.draw(op_samples(op, complex=complex_))
        if not _diff_positions(op, args):
            continue
        func, inputs = _checked_function(op, args, kwargs)
        assert gradgradcheck(func, inputs, eps=1e-6, atol=1e-5, rtol=1e-3)


def _jvp_of(op, args, kwargs, tangents):
    """Run the op's jvp rule on raw arrays (the forward-mode machinery comes later)."""
    nin = _nin(op, args)
    if isinstance(op, Op):
        ins = list(args[:nin])
        out = op.forward(NUMPY, *ins, *args[nin:], **kwargs)
        if op.nout == 1:
            out = np.asarray(out)
        return op.jvp(NUMPY.F, tangents, out, *ins, *args[nin:], **kwargs)
    # composites: their jvp is the composition of primitive jvps; checked through gradcheck
    return None


@pytest.mark.parametrize("name", sorted(REGISTRY))
@given(data=st.data())
def test_jvp_matches_finite_differences(name, data):
    op = REGISTRY[name]
    if not op.differentiable:
        return
    _skip_if_noted(op, "jvp")
    assert op.jvp is not None, f"{name} declares no jvp rule (and no notes['jvp'] reason)"
    for complex_ in _dtypes(op):
        args, kwargs = data.draw(op_samples(op, complex=complex_))
        nin = _nin(op, args)
        pos = _diff_positions(op, args)
        if not pos:
            continue
        rng = np.random.default_rng(1)
        tangents = [None] * nin
        for p in pos:
            t = rng.standard_normal(np.shape(args[p]))
            if args[p].dtype.kind == "c":
                t = t + 1j * rng.standard_normal(np.shape(args[p]))
            tangents[p] = np.asarray(t, dtype=args[p].dtype)
        got = _jvp_of(op, args, kwargs, tuple(tangents))
        eps = 1e-6

        def at(s, args=args, kwargs=kwargs, pos=pos, nin=nin, tangents=tangents):
            moved = list(args)
            for p in pos:
                moved[p] = args[p] + s * tangents[p]
            return _outs(op.forward(NUMPY, *moved[:nin], *args[nin:], **kwargs))
        plus, minus = at(eps), at(-eps)
        expected = [(np.asarray(p) - np.asarray(m)) / (2 * eps) for p, m in zip(plus, minus)]
        got = _outs(got)
        assert len(got) == len(expected)
        for g, e in zip(got, expected):
            g = np.broadcast_to(np.asarray(g), e.shape)
            np.testing.assert_allclose(g, e, rtol=1e-4, atol=1e-6, err_msg=f"{name} jvp")


def test_declared_exceptions():
    """Every declared exception has a reason; print them (pytest -s shows the list)."""
    lines = []
    for name in ALL:
        notes = getattr(_entry(name), "notes", {}) or {}
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
def _wrong_op(vjp=None, jvp=None):
    """An unregistered copy of sin with replaceable rules."""
    op = Op("wrong_sin", lambda B, x: B.sin(x), kind="elementwise", nin=1, nout=1,
            domain=Domain((-2.0, 2.0)), differentiable=True, view=False, sample=None,
            method=False, pack=False, inplace_method=None, kwarg_aliases=None, notes=None)
    op.defvjp(vjp or (lambda F, g, out, x: g * F.cos(x)))
    if jvp is None:
        op.defjvp_from_vjp()
    else:
        op.defjvp(jvp)
    from ndgrad.core.dispatch import apply
    op.public = lambda x: apply(op, x)
    return op


def test_suite_catches_wrong_rules():
    x = np.array([0.3, -1.1, 0.7])
    right = _wrong_op()
    func, inputs = _checked_function(right, (x,), {})
    assert gradcheck(func, inputs) and gradgradcheck(func, inputs)

    # a wrong first derivative (sin' = -cos instead of cos)
    bad = _wrong_op(vjp=lambda F, g, out, x: -g * F.cos(x))
    func, inputs = _checked_function(bad, (x,), {})
    with pytest.raises(GradcheckError, match="Jacobian mismatch"):
        gradcheck(func, inputs)
    assert gradcheck(func, inputs, raise_exception=False) is False

    # right first derivative, wrong second: cos written through a non-differentiable path
    const = _wrong_op(vjp=lambda F, g, out, x: g * F.cos(x.detach() if hasattr(x, "detach")
                                                            else x))
    func, inputs = _checked_function(const, (x,), {})
    assert gradcheck(func, inputs)
    with pytest.raises(GradcheckError):
        gradgradcheck(func, inputs)

    # a wrong jvp is caught by the jvp check's comparison
    badj = _wrong_op(jvp=lambda F, tangents, out, x: tangents[0] * F.sin(x))
    t = np.ones_like(x)
    got = badj.jvp(NUMPY.F, (t,), np.sin(x), x)
    fd = (np.sin(x + 1e-6 * t) - np.sin(x - 1e-6 * t)) / 2e-6
    assert not np.allclose(got, fd, rtol=1e-4, atol=1e-6)
    good = right.jvp(NUMPY.F, (t,), np.sin(x), x)
    np.testing.assert_allclose(good, fd, rtol=1e-6)


def test_suite_catches_wrong_complex_convention():
    """A vjp missing the conjugate (wrong Wirtinger convention) fails on complex inputs."""
    z = np.array([0.3 + 0.4j, -1.1 + 0.2j])
    bad = _wrong_op(vjp=lambda F, g, out, x: g * F.cos(x))  # should be g * conj(cos(x))
    func, inputs = _checked_function(bad, (z,), {})
    with pytest.raises(GradcheckError):
        gradcheck(func, inputs)
    good = _wrong_op(vjp=lambda F, g, out, x: g * F.conj(F.cos(x)))
    func, inputs = _checked_function(good, (z,), {})
    assert gradcheck(func, inputs)


def test_registry_is_populated_from_declarations():
    """The suite's op list is the registry: every public op function is an entry."""
    import ndgrad.core.ops as ops
    for name in ALL:
        entry = _entry(name)
        if entry.namespace is None:  # ndgrad.<name>
            assert getattr(ndgrad, name) is ops.PUBLIC[name]
        else:  # ndgrad.<namespace>.<name> (Note [Namespaces])
            ns = getattr(ndgrad, entry.namespace)
            assert getattr(ns, entry.name) is ops.NAMESPACED[entry.namespace][entry.name]
            assert not hasattr(ndgrad, name)


_ = defop  # the declaration API the suite relies on


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


@pytest.mark.parametrize("name", [n for n in VIEWS if REGISTRY[n].scatter is not None])
@given(data=st.data())
def test_scatter_inverts_the_view(name, data):
    """scatter(p, view(p)) == p and view(scatter(p, c)) == c, where the output is a view."""
    op = REGISTRY[name]
    for complex_ in _dtypes(op):
        args, kwargs = data.draw(op_samples(op, complex=complex_))
        x = args[0]
        if not isinstance(x, np.ndarray):
            continue
        outs = _outs(op.forward(NUMPY, x, *args[1:], **kwargs))
        for k, out in enumerate(outs):
            if not np.may_share_memory(out, x):
                continue  # a copy, not a view: nothing to write back
            rng = np.random.default_rng(k)
            c = rng.standard_normal(np.shape(out)).astype(x.dtype)

            def scatter(parent, child, k=k, args=args, kwargs=kwargs):
                lead = (k,) if op.nout != 1 else ()
                return np.asarray(op.scatter(NUMPY.F, *lead, parent, child, *args[1:],
                                             **kwargs))
            np.testing.assert_array_equal(scatter(x, np.array(out)), x, err_msg=name)
            written = scatter(x, c)
            assert written.shape == x.shape, name
            again = _outs(op.forward(NUMPY, written, *args[1:], **kwargs))[k]
            np.testing.assert_array_equal(again, c, err_msg=name)
