"""The property families of the registry matrix (Note [The registry matrix] in
tests/registry_matrix.py): every registered op and composite, no hand lists.

For each (op, dtype) of the registry (complex128 too where ``op.domain.complex``), on the
samples of its bank (drawn from the op's own declaration: its ``sample`` or its ``domain``
and ``kind``), the families below check

* ``forward``: the values against the NumPy/SciPy reference (the harness's ``REFERENCES``,
  else the NumPy or scipy.special function of the same name);
* ``records_nothing``: a non-differentiable op records nothing and carries no tangent;
* ``vjp``: every row of the Jacobian by reverse mode (gradcheck's analytic rows) against the
  finite-difference Jacobian, reentrant, zero for zero cotangents;
* ``create_graph``: the vjp formulas run on Tensors (create_graph) against the raw ones;
* ``second_order``: every row of the Hessian of ``s = sum re <w, F>`` by reverse over
  reverse against the finite differences of the first-order gradient, and the derivative of
  the vjp in its cotangent;
* ``jvp``: the raw jvp rule (primitives) and forward mode through dual numbers against the
  finite-difference Jacobian;
* ``scatter``: a view op's write-back inverts the view;
* ``piecewise_constant``: zero derivatives that require grad.

Exceptions are declared in the op (``notes``), never listed here: a family does not apply to
(is not collected for) an op that is not differentiable or declares an exception, and
``test_declared_exceptions`` prints them. tests/test_op_matrix.py proves every family fails
on deliberately wrong rules.
"""

from __future__ import annotations

import numpy as np
import pytest

import ndgrad
import ndgrad.forward_ad as fwAD
from ndgrad.core.backend import NUMPY
from ndgrad.core.ops import REGISTRY
from ndgrad.core.ops.registry import VARIADIC
from registry_harness import ENTRIES, entry, reference
from registry_matrix import (check_rows, differentiable_without, each, family, is_primitive, on_cpu,
                             pair, tensor)
from support import Linearization, assert_close, host, random_like

FD = {"rtol": 1e-4, "atol": 1e-6}       # against first-order central differences
FD2 = {"rtol": 1e-3, "atol": 1e-5}      # against differences of a first-order derivative
EXACT = {"rtol": 1e-12, "atol": 1e-12}  # two ways to the same formula


# ------------------------------------------------------------------------------ values
def _has_reference(name, op, dtype):
    return reference(op) is not None and "reference" not in op.notes


@family("forward", _has_reference)
def test_forward(bank):
    """The public function's values equal NumPy's / SciPy's on every sample."""
    ref = reference(bank.op)

    def check(e):
        s = e.sample
        got = s.call(s.inputs())
        with np.errstate(all="ignore"):
            expected = ref(*s.args, **s.kwargs)
        if not isinstance(expected, (tuple, list)):
            expected = (expected,)
        assert len(got) == len(expected), f"{len(got)} outputs, NumPy has {len(expected)}"
        assert_close(got, [np.asarray(x) for x in expected], f"{bank.name} forward",
                     rtol=1e-10, atol=1e-12)
    each(bank.entries, check, f"{bank.name} ({bank.dtype}) forward")


# ------------------------------------------------------------------------ not differentiable
@family("records_nothing", lambda name, op, dtype: not op.differentiable and
        "vjp" not in op.notes)
def test_records_nothing(bank):
    """An op declared non-differentiable gives outputs that do not require grad and carry no
    tangent, even from inputs that require grad and carry tangents (an op whose inputs are
    integers or bools declares notes['vjp'] and has no such inputs)."""
    def check(e):
        s = e.sample
        out = s.call(s.inputs(requires_grad=True))
        assert not any(o.requires_grad for o in out), \
            f"{bank.name} is declared non-differentiable but its output requires grad"
        with fwAD.dual_level():
            duals = [fwAD.make_dual(tensor(x), tensor(np.ones_like(x))) for x in s.floats]
            out = s.call(s.inputs(duals))
            assert all(fwAD.unpack_dual(o).tangent is None for o in out), \
                f"{bank.name} is declared non-differentiable but its output got a tangent"
    each([e for e in bank.entries if e.sample.pos], check,
         f"{bank.name} ({bank.dtype}) records nothing")


# ------------------------------------------------------------------------------ reverse
@family("vjp", differentiable_without("vjp", "fd"))
def test_vjp(bank):
    """Every row of the Jacobian by reverse mode against the finite-difference Jacobian of
    the sample (its first-order reference, computed once), on every sample."""
    def check(e):
        check_rows(e.F, list(e.sample.leaves()), e.lin, f"{bank.name} vjp", **FD)
    each(bank.differentiable(), check, f"{bank.name} ({bank.dtype}) vjp")


@family("create_graph", differentiable_without("vjp"))
def test_create_graph(bank):
    """The same vjp formula run on Tensors (F = ndgrad, create_graph) and on raw arrays
    (F = backend) gives the same gradients, in the same dtypes."""
    def check(e):
        inputs = e.sample.leaves()
        outs = e.F(*inputs)
        cots = [tensor(c) for c in e.c]
        raw = ndgrad.autograd.grad(outs, inputs, cots, retain_graph=True, allow_unused=True)
        taped = ndgrad.autograd.grad(outs, inputs, cots, create_graph=True, allow_unused=True)
        for a, b in zip(raw, taped, strict=True):
            assert (a is None) == (b is None), "an input's gradient is None in one mode"
            if a is not None:
                assert b.dtype == a.dtype, f"{b.dtype} != {a.dtype}"
                assert_close(b, host(a), f"{bank.name} create_graph vjp", **EXACT)
    each(bank.differentiable(), check, f"{bank.name} ({bank.dtype}) create_graph")


def gradient_of_s(e):
    """``x -> grad s(x)`` with create_graph (the gradient as a function to differentiate)."""
    def g(*xs):
        return ndgrad.autograd.grad(e.s(*xs), xs, create_graph=True, allow_unused=True,
                                    materialize_grads=True)
    g.__name__ = f"grad of s of {e.sample.op.name}"
    return g


@family("second_order", differentiable_without("vjp", "gradgrad", "fd"))
def test_second_order(bank):
    """Every row of the Hessian of ``s`` by reverse over reverse against the finite
    differences of the first-order gradient (the bank's Hessian, computed once), and the
    derivative of the vjp in its cotangent (``grad`` of ``<u, J^T c>`` in ``c``, through the
    create_graph formulas) against ``J u``, on the small samples."""
    def check(e):
        check_rows(gradient_of_s(e), list(e.sample.leaves()), e.hessian,
                   f"{bank.name} second order (reverse over reverse)", **FD2)
        xs = e.sample.leaves()
        cs = [tensor(c, requires_grad=True) for c in e.c]
        outs = e.F(*xs)
        gx = ndgrad.autograd.grad(outs, xs, cs, create_graph=True, allow_unused=True,
                                  materialize_grads=True)
        y = pair(e.u, gx)
        got = ndgrad.autograd.grad(y, cs, allow_unused=True, materialize_grads=True) \
            if y.requires_grad else [np.zeros_like(c) for c in e.c]  # (a constant vjp)
        assert_close(got, e.lin.jvp(e.u), f"{bank.name} d/dc <u, vjp(c)>", **FD)
    each(bank.differentiable("small"), check, f"{bank.name} ({bank.dtype}) second order")


# ------------------------------------------------------------------------------ forward
def _run_jvp_rule(op, sample, tangents):
    """The op's jvp rule on raw NumPy arrays: the tangents of every output."""
    full = [None] * sample.nin
    for p, t in zip(sample.pos, tangents):
        full[p] = t
    ins = list(sample.arrays)
    out = op.forward(NUMPY, *ins, *sample.extra, **sample.kwargs)
    if op.nout == 1:
        out = host(out)  # (to_device's forward leaves the host)
    got = op.jvp(NUMPY.F, tuple(full), out, *ins, *sample.extra, **sample.kwargs)
    return tuple(None if g is None else host(g)
                 for g in (got if isinstance(got, (tuple, list)) else (got,)))


def _raw_is_public(op, sample):
    """Whether the public function runs the op on the sample's own parameters: its raw
    forward gives the public function's outputs (linalg.qr's mode='r' runs mode='reduced'
    and returns R: its rules never see mode='r')."""
    with on_cpu(), np.errstate(all="ignore"):
        raw = op.forward(NUMPY, *sample.args, **sample.kwargs)
        raw = tuple(raw) if isinstance(raw, (tuple, list)) else (raw,)
        public = sample.call(sample.inputs())
    return len(raw) == len(public) and all(np.shape(r) == tuple(p.shape)
                                           for r, p in zip(raw, public))


def check_jvp_rule(op, e, v):
    """The raw rule along ``v`` against the finite-difference Jacobian (floating outputs;
    a non-floating output's tangent is None or zero)."""
    with on_cpu():
        got = _run_jvp_rule(op, e.sample, v)
        outs = e.sample.call(e.sample.inputs())
    assert len(got) == len(outs), f"{len(got)} tangents for {len(outs)} outputs"
    expected = iter(e.lin.jvp(v))
    for k, (o, g) in enumerate(zip(outs, got)):
        if o.dtype.kind not in "fc":
            assert g is None or not np.any(g), f"output {k} ({o.dtype}) got a tangent {g}"
            continue
        want = next(expected)
        assert g is not None, f"no tangent for output {k}"
        np.testing.assert_allclose(np.broadcast_to(np.asarray(g), want.shape), want,
                                   err_msg=f"{op.qualname} jvp rule, output {k}", **FD)


def check_dual_numbers(e, v, what):
    """Forward mode through the public API (make_dual on the floating inputs, unpack_dual
    on the outputs) along ``v`` against the finite-difference Jacobian; non-floating outputs
    get no tangent."""
    s = e.sample
    with fwAD.dual_level():
        duals = [fwAD.make_dual(tensor(x), tensor(t)) for x, t in zip(s.floats, v)]
        outs = s.call(s.inputs(duals))
        got = [fwAD.unpack_dual(o).tangent for o in outs]
    floating = []
    for o, g in zip(outs, got):
        if o.dtype.kind not in "fc":
            assert g is None, "a non-differentiable output got a tangent"
        else:
            assert g is not None, "no tangent on the output"
            assert g.shape == o.shape and g.dtype == o.dtype, \
                f"tangent {g.dtype}{list(g.shape)} for output {o.dtype}{list(o.shape)}"
            floating.append(g)
    assert_close(floating, e.lin.jvp(v), what, **FD)


@family("jvp", differentiable_without("jvp", "fd"))
def test_jvp(bank):
    """Forward mode against the finite-difference Jacobian, on every sample, along random
    tangents: the op's declared jvp rule run on raw arrays (a primitive's; a composite has
    none of its own) and forward mode through dual numbers."""
    op = bank.op
    entries = bank.differentiable()
    raw = [e for e in entries if _raw_is_public(op, e.sample)] if is_primitive(bank.name) \
        else []
    if is_primitive(bank.name):
        assert op.jvp is not None, f"{bank.name} declares no jvp rule (and no notes['jvp'])"
        assert raw, f"{bank.name}: no sample on which the public function runs the op on its " \
                    "own parameters, to check the raw rule on"

    def jvp_rule(e):
        if e in raw:
            check_jvp_rule(op, e, e.v)

    def dual_numbers(e):
        check_dual_numbers(e, e.u, f"{bank.name} jvp through dual numbers")
    each(entries, [jvp_rule, dual_numbers], f"{bank.name} ({bank.dtype}) jvp")


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


@family("scatter", lambda name, op, dtype: is_primitive(name) and op.view and
        op.scatter is not None)
def test_scatter(bank):
    """scatter(p, view(p)) == p and view(scatter(p, c)) == c, where an output is a view (on
    every sample whose first input is an array)."""
    op = bank.op

    def check(e):
        x, rest = e.sample.args[0], e.sample.args[1:]
        kwargs = e.sample.kwargs
        outs = op.forward(NUMPY, x, *rest, **kwargs)
        outs = tuple(outs) if isinstance(outs, (tuple, list)) else (outs,)
        for k, out in enumerate(outs):
            if not np.may_share_memory(out, x):
                continue  # a copy, not a view: nothing to write back
            c = random_like(np.random.default_rng(k), np.asarray(out))

            def scatter(parent, child, k=k):
                lead = (k,) if op.nout != 1 else ()
                return np.asarray(op.scatter(NUMPY.F, *lead, parent, child, *rest, **kwargs))
            np.testing.assert_array_equal(scatter(x, np.array(out)), x, err_msg=f"output {k}")
            written = scatter(x, c)
            assert written.shape == x.shape, f"output {k}: {written.shape} != {x.shape}"
            again = op.forward(NUMPY, written, *rest, **kwargs)
            again = again[k] if isinstance(again, (tuple, list)) else again
            np.testing.assert_array_equal(again, c, err_msg=f"output {k}")
    each([e for e in bank.entries if isinstance(e.sample.args[0], np.ndarray)], check,
         f"{bank.name} ({bank.dtype}) scatter")


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


@family("piecewise_constant", lambda name, op, dtype: is_primitive(name) and
        op.piecewise_constant and dtype == "float64")
def test_piecewise_constant(bank):
    """Away from the jumps (the op's domain), finite differences see a constant: the
    output requires grad when an input does (as PyTorch's floor and sign), its gradient, its
    jvp, its Hessian and its gradient under vmap equal the finite differences, zero (on the
    small samples and the simplest wide one)."""
    op = bank.op

    def check(e):
        sample = e.sample
        xs = sample.leaves()
        outs = sample.call(sample.inputs(xs))
        assert all(o.requires_grad and o.grad_fn.name() == op.node_name for o in outs)
        lin = e.lin
        rng = np.random.default_rng(0)
        cots = [random_like(rng, host(o)) for o in outs]
        grads = ndgrad.autograd.grad(outs, xs, [tensor(c) for c in cots])
        assert_close(grads, lin.vjp(cots), "vjp", rtol=0, atol=0)
        ts = [random_like(rng, x) for x in sample.floats]
        _, tangents = ndgrad.func.jvp(sample.function(), tuple(e.xs()),
                                      tuple(tensor(t) for t in ts))
        assert_close(tangents, lin.jvp(ts), "jvp", rtol=0, atol=0)

        def total(*floats):
            return sum(o.sum() for o in sample.function()(*floats))
        argnums = tuple(range(len(xs)))
        hess = ndgrad.func.hessian(total, argnums=argnums)(*e.xs())
        # the reference: central differences of the finite-difference gradient (a step
        # inside the distance the domain keeps from the jumps)
        with on_cpu():
            outer = Linearization(lambda fs: tuple(np.real(g) for g in Linearization(
                lambda v: (np.sum([np.sum(o) for o in sample.evaluate(v)]),), fs).vjp([1.0])),
                sample.floats, eps=1e-5)
        for i in argnums:
            for j in argnums:
                assert_close(hess[i][j], outer.jacfwd()[i][j], f"hessian[{i}][{j}]",
                             rtol=0, atol=0)
        # vmap of the gradient over two points, the second shifted inside the same step
        points = [sample.floats, [x + 1e-5 for x in sample.floats]]
        batch = tuple(tensor(np.stack(column)) for column in zip(*points))
        per = ndgrad.func.vmap(ndgrad.func.grad(total, argnums=argnums))(*batch)
        ones = [np.ones_like(host(o)) for o in outs]
        with on_cpu():
            reference_ = [Linearization(sample.evaluate, p).vjp(ones) for p in points]
        for i in argnums:
            assert_close(per[i], np.stack([r[i] for r in reference_]), f"vmap(grad)[{i}]",
                         rtol=0, atol=0)
    each(bank.differentiable("small") + bank.differentiable("wide")[:1], check,
         f"{bank.name} piecewise constant")
