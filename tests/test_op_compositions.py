"""Every registered op under every transform of ``ndgrad.func``, one at a time and composed
two and three deep, against independent references.

Suites that check one transform at a time let wrong values through where transforms meet
(a forward pass over a backward pass, a gradient through a vjp function made outside it, a
batching rule under a derivative). Here each registered op or composite (the registry, no
hand list; tests/registry_harness.py), in each dtype it takes (complex128 too where
``op.domain.complex``), is made a function of its floating inputs

    F(*xs) = (its floating outputs),    s(*xs) = sum_k re <w_k, F_k(*xs)>

(``w`` fixed random weights, ``<a, b> = sum(conj(a) b)``), and every composition below is
compared with a reference that does not use the transforms:

* first-order transforms against a :class:`~registry_harness.Linearization` of ``F``:
  central differences along every real coordinate of the inputs;
* second derivatives against central differences of the gradient of ``s`` (or of ``re <c,
  F>``) computed by the plain first-order machinery (``autograd.grad`` without
  ``create_graph``, which the first-order suites check against finite differences), and
  forward-over-forward against central differences of a first-order ``forward_ad`` jvp;
* batched transforms against the loop over the batch elements of those references.

The checks come in four families (the tests below), each run on the same drawn sample with
its references computed once; a failure lists every composition of the family that failed
(not only the first), with its error:

``first_order``
    ``grad(s)``, ``vjp(F)``, ``jvp(F)``, ``linearize(F)``, ``jacrev(F)``, ``jacfwd(F)``
    (``vmap(F)`` alone is tests/test_op_batching.py's).
``pullback``
    ``vjp_fn`` of ``_, vjp_fn = vjp(F, *xs)`` as a function of its cotangent (it is linear):
    ``jvp(vjp_fn)`` equals ``vjp_fn`` of the tangent and the transposed Jacobian applied to
    it; ``vjp(vjp_fn)`` and ``grad(<u, vjp_fn>)`` (reverse mode through a vjp_fn made
    outside) give the Jacobian applied to ``u``; ``jacfwd(vjp_fn)`` and ``jacrev(vjp_fn)``
    are the transposed Jacobians; forward over reverse in ``(x, c)``:
    ``jvp((x, c) -> vjp(F, x)[1](c), (x, c), (0, dc))`` is ``J^T dc`` and with ``(v, dc)``
    adds the second-order term.
``second_order``
    ``jacfwd(jacrev(s))``, ``jacrev(jacrev(s))``, ``hessian(s)``, ``jvp(grad(s))`` (forward
    over reverse hvp), ``grad(<grad(s), v>)`` (reverse over reverse), ``grad(<w, jvp(F)>)``
    (reverse over forward), ``jvp(jvp(F))`` (forward over forward),
    ``grad(<u, vjp(F, x)[1](c)>)``.
``batched``
    ``vmap(grad(s))``, ``vmap(jvp(F))``, ``vmap(vjp(F))``, ``grad(vmap(s))``,
    ``vmap(jacrev(F))``, ``vmap(jacfwd(F))``, and three deep: ``vmap(jacfwd(jacrev(s)))``
    (batched Hessians), ``vmap(jvp(grad(s)))``, ``jvp(vmap(grad(s)))``,
    ``grad(vmap(grad(s)))``, ``vmap(jvp(vjp_fn))``.

Non-differentiable ops, and ops declaring ``notes["vjp"]`` / ``notes["jvp"]`` /
``notes["gradgrad"]`` / ``notes["fd"]``, are skipped with the reason. Examples are few (the
first one hypothesis generates is the simplest sample, the others are random) and the deeper
families draw small samples, which keeps the CPU cost bounded; every (op, dtype,
composition) runs in every example, so in every run of the derandomized profile.
``test_composition_checks_catch_wrong_rules`` shows the families fail on deliberately wrong
rules.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, reject, settings
from hypothesis import strategies as st

import ndgrad
import ndgrad.forward_ad as fwAD
from ndgrad import func
from ndgrad.core.ops import COMPOSITES
from registry_harness import (Linearization, assert_close, cases, draw, entry, fd_directional,
                              random_like, require, tensor)
from support import host

# First-order families draw the op's usual samples; the deeper ones shapes of at most 2
# dimensions of at most 3 elements (samplers with bounds of their own, such as the
# linear-algebra ones, keep them), so that full Hessians and per-element references stay
# cheap. Shrinking is off: a failing composition is reported with its first example.
SIZES = {"max_side": 4, "max_dims": 3}
SMALL = {"max_side": 3, "max_dims": 2}
FEW = settings(max_examples=4, phases=[Phase.explicit, Phase.reuse, Phase.generate],
               suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
FEWER = settings(FEW, max_examples=3)



@pytest.fixture(autouse=True)
def _composites_compose_on_the_cpu(request):
    """A composite's compositions run on the CPU only, not on the emulated GPU: on a device
    it runs its primitives, whose compositions this suite checks there; its own property
    tests (values, vjp, second order, vmap) still run on every device. (Half of the
    emulated device's cost, kept out of CI's budget.)"""
    callspec = getattr(request.node, "callspec", None)
    if callspec is not None and callspec.params.get("device") == "emulated" and \
            callspec.params.get("name") in COMPOSITES:
        pytest.skip("a composite's compositions run on the CPU (its primitives' are checked "
                    "on this device)")


FD = {"rtol": 1e-4, "atol": 1e-6}       # against first-order central differences
FD2 = {"rtol": 1e-3, "atol": 1e-5}      # against differences of a first-order derivative
EXACT = {"rtol": 1e-10, "atol": 1e-12}  # two ways to the same formula
BATCH = 2


# ------------------------------------------------------------------------------- setting up
def _need(condition):
    """Discard this hypothesis example unless ``condition`` (a sample without a floating
    input or output, or one whose batch elements leave the op's domain)."""
    if not condition:
        reject()


def _pair(ws, ys):
    """``sum_k re <w_k, y_k>`` (``w_k`` NumPy constants, ``y_k`` Tensors), a real scalar."""
    total = None
    for w, y in zip(ws, ys, strict=True):
        w = tensor(np.asarray(w, dtype=y.dtype))
        t = ndgrad.sum(ndgrad.conj(w) * y)
        t = ndgrad.real(t) if y.dtype.kind == "c" else t
        total = t if total is None else total + t
    return total


class Case:
    """One drawn sample of an op, as functions of its floating inputs, with fixed random
    weights, cotangents and tangents, and lazily computed references."""

    def __init__(self, sample, seed=0):
        self.sample = sample
        self.x = [np.asarray(x) for x in sample.floats]
        self.n = len(self.x)
        self.outs = sample.evaluate(self.x)
        _need(self.outs)  # at least one floating output
        _need(all(np.all(np.isfinite(o)) for o in self.outs))
        rng = np.random.default_rng(seed)
        self.w = [random_like(rng, o) for o in self.outs]    # weights of s
        self.c = [random_like(rng, o) for o in self.outs]    # a cotangent
        self.dc = [random_like(rng, o) for o in self.outs]   # a tangent of the cotangent
        self.v = [random_like(rng, x) for x in self.x]       # input tangents
        self.u = [random_like(rng, x) for x in self.x]
        self.argnums = tuple(range(self.n))
        self.F = sample.function(floating_outputs=True)

    # the functions under test
    def s(self, *xs):
        return _pair(self.w, self.F(*xs))

    def xs(self):
        return [tensor(x) for x in self.x]

    # references
    @functools.cached_property
    def lin(self):
        """The first-order derivative of F at x, by central differences."""
        return Linearization(self.sample.evaluate, self.x)

    def gradient(self, xs, ws):
        """The gradient of ``re <ws, F>`` at the arrays ``xs`` by first-order reverse mode
        (no create_graph), as NumPy arrays."""
        leaves = [tensor(np.asarray(x), requires_grad=True) for x in xs]
        with ndgrad.enable_grad():
            y = _pair(ws, self.F(*leaves))
            g = ndgrad.autograd.grad(y, leaves, allow_unused=True, materialize_grads=True)
        return tuple(host(t) for t in g)

    @functools.cached_property
    def hessian(self):
        """The derivative of the gradient of s at x: central differences of the first-order
        gradient."""
        return Linearization(lambda xs: self.gradient(xs, self.w), self.x)

    def hvp(self, ws, v):
        """The derivative of the gradient of ``re <ws, F>`` along ``v``."""
        return fd_directional(lambda xs: self.gradient(xs, ws), self.x, v)

    def first_order_jvp(self, xs, v):
        """F's tangent at the arrays ``xs`` along ``v`` by one level of forward_ad."""
        with fwAD.dual_level():
            duals = [fwAD.make_dual(tensor(np.asarray(x)), tensor(t)) for x, t in zip(xs, v)]
            outs = self.F(*duals)
            return tuple(host(fwAD.unpack_dual(o).tangent) if fwAD.unpack_dual(o).tangent
                         is not None else np.zeros(o.shape, o.dtype) for o in outs)


def _draw_case(data, name, dtype, *notes, sizes=SIZES):
    op = entry(name)
    require(op, *notes)
    sample = draw(data, op, dtype, **sizes)
    _need(sample.pos)
    return Case(sample)


def _run(checks, case, what):
    """Run every check; fail with the list of those that failed and why."""
    failures = []
    for check in checks:
        try:
            check(case)
        except AssertionError as e:
            failures.append(f"{check.__name__}: {str(e).strip()}")
        except Exception as e:  # noqa: BLE001 (an error is a failure of that composition)
            failures.append(f"{check.__name__}: raised {type(e).__name__}: {e}")
    if failures:
        pytest.fail(f"{what}: {len(failures)} of {len(checks)} compositions failed on "
                    f"{case.sample!r}\n\n" + "\n\n".join(failures), pytrace=False)


def _transposed(jac, left_ndim):
    """A Jacobian block ``out.shape + in.shape`` as ``in.shape + out.shape``."""
    jac = np.asarray(jac)
    return np.moveaxis(jac, tuple(range(left_ndim)), tuple(range(jac.ndim - left_ndim,
                                                                  jac.ndim)))


# ----------------------------------------------------------------------- one at a time
def grad(case):
    got = func.grad(case.s, argnums=case.argnums)(*case.xs())
    assert_close(got, case.lin.vjp(case.w), "grad(s)", **FD)


def vjp(case):
    out, vjp_fn = func.vjp(case.F, *case.xs())
    assert_close(out, case.outs, "vjp(F) output", **EXACT)
    got = vjp_fn(tuple(tensor(c) for c in case.c))
    assert_close(got, case.lin.vjp(case.c), "vjp(F)(c)", **FD)


def jvp(case):
    out, tangent = func.jvp(case.F, tuple(case.xs()), tuple(tensor(v) for v in case.v))
    assert_close(out, case.outs, "jvp(F) output", **EXACT)
    assert_close(tangent, case.lin.jvp(case.v), "jvp(F)", **FD)


def linearize(case):
    out, jvp_fn = func.linearize(case.F, *case.xs())
    assert_close(out, case.outs, "linearize(F) output", **EXACT)
    assert_close(jvp_fn(*[tensor(v) for v in case.v]), case.lin.jvp(case.v),
                 "linearize(F)[1](v)", **FD)


def jacrev(case):
    got = func.jacrev(case.F, argnums=case.argnums)(*case.xs())
    assert_close(got, case.lin.jacrev(), "jacrev(F)", **FD)


def jacfwd(case):
    got = func.jacfwd(case.F, argnums=case.argnums)(*case.xs())
    assert_close(got, case.lin.jacfwd(), "jacfwd(F)", **FD)


FIRST_ORDER = [grad, vjp, jvp, linearize, jacrev, jacfwd]


@pytest.mark.parametrize("name, dtype", cases())
@FEW
@given(data=st.data())
def test_first_order_transforms(name, dtype, data):
    case = _draw_case(data, name, dtype, "vjp", "jvp", "fd")
    _run(FIRST_ORDER, case, f"{name} ({dtype})")


# ------------------------------------------------------------------ the pullback of F
def _vjp_fn(case):
    return func.vjp(case.F, *case.xs())[1]


def jvp_of_vjp_fn(case):
    """``c -> vjp_fn(c)`` is linear: its jvp along ``dc`` is ``vjp_fn(dc)``."""
    vjp_fn = _vjp_fn(case)
    _, got = func.jvp(lambda *cs: vjp_fn(cs), tuple(tensor(c) for c in case.c),
                      tuple(tensor(d) for d in case.dc))
    assert_close(got, case.lin.vjp(case.dc), "jvp(vjp_fn)(c; dc) vs J^T dc", **FD)
    assert_close(got, host(list(vjp_fn(tuple(tensor(d) for d in case.dc)))),
                 "jvp(vjp_fn)(c; dc) vs vjp_fn(dc)", **EXACT)


def vjp_of_vjp_fn(case):
    """The vjp of ``c -> vjp_fn(c)[i]`` with cotangent ``u_i`` is ``J_i u_i``."""
    vjp_fn = _vjp_fn(case)
    for i in range(case.n):
        _, pullback = func.vjp(lambda *cs, i=i: vjp_fn(cs)[i], *[tensor(c) for c in case.c])
        only = [None] * case.n
        only[i] = case.u[i]
        assert_close(pullback(tensor(case.u[i])), case.lin.jvp(only),
                     f"vjp(c -> vjp_fn(c)[{i}])(u) vs J u", **FD)


def grad_of_vjp_fn(case):
    """Reverse mode through a vjp_fn made outside: ``grad(c -> <u, vjp_fn(c)>) = J u``."""
    vjp_fn = _vjp_fn(case)
    got = func.grad(lambda *cs: _pair(case.u, vjp_fn(cs)), argnums=tuple(range(len(case.c))))(
        *[tensor(c) for c in case.c])
    assert_close(got, case.lin.jvp(case.u), "grad(c -> <u, vjp_fn(c)>) vs J u", **FD)


def jacfwd_of_vjp_fn(case):
    vjp_fn = _vjp_fn(case)
    got = func.jacfwd(lambda *cs: vjp_fn(cs), argnums=tuple(range(len(case.c))))(
        *[tensor(c) for c in case.c])
    ref = case.lin.jacrev()  # [k][i]: out_k.shape + x_i.shape
    expected = [[_transposed(ref[k][i], case.outs[k].ndim) for k in range(len(case.c))]
                for i in range(case.n)]
    assert_close(got, expected, "jacfwd(vjp_fn) vs jacrev(F) transposed", **FD)


def jacrev_of_vjp_fn(case):
    vjp_fn = _vjp_fn(case)
    got = func.jacrev(lambda *cs: vjp_fn(cs), argnums=tuple(range(len(case.c))))(
        *[tensor(c) for c in case.c])
    ref = case.lin.jacfwd()
    expected = [[_transposed(ref[k][i], case.outs[k].ndim) for k in range(len(case.c))]
                for i in range(case.n)]
    assert_close(got, expected, "jacrev(vjp_fn) vs jacfwd(F) transposed", **FD)


def _vjp_in_x_and_c(case):
    n = case.n

    def g(*args):
        return func.vjp(case.F, *args[:n])[1](args[n:])
    return g


def jvp_over_vjp_cotangent(case):
    """The issue's form: ``jvp((x, c) -> vjp(F, x)[1](c), (x, c), (0, dc))`` is ``J^T dc``."""
    zeros = tuple(tensor(np.zeros_like(x)) for x in case.x)
    _, got = func.jvp(_vjp_in_x_and_c(case), tuple(case.xs()) + tuple(tensor(c) for c in case.c),
                      zeros + tuple(tensor(d) for d in case.dc))
    assert_close(got, case.lin.vjp(case.dc), "jvp(vjp(F, x)[1](c); 0, dc) vs J^T dc", **FD)


def jvp_over_vjp(case):
    """With ``(v, dc)``: ``J^T dc`` plus the derivative of ``J(x)^T c`` along ``v``."""
    _, got = func.jvp(_vjp_in_x_and_c(case), tuple(case.xs()) + tuple(tensor(c) for c in case.c),
                      tuple(tensor(v) for v in case.v) + tuple(tensor(d) for d in case.dc))
    expected = [a + b for a, b in zip(case.lin.vjp(case.dc), case.hvp(case.c, case.v))]
    assert_close(got, expected, "jvp(vjp(F, x)[1](c); v, dc)", **FD2)


PULLBACK = [jvp_of_vjp_fn, vjp_of_vjp_fn, grad_of_vjp_fn, jacfwd_of_vjp_fn, jacrev_of_vjp_fn,
            jvp_over_vjp_cotangent, jvp_over_vjp]


@pytest.mark.parametrize("name, dtype", cases())
@FEW
@given(data=st.data())
def test_pullback_as_a_function_of_the_cotangent(name, dtype, data):
    case = _draw_case(data, name, dtype, "vjp", "jvp", "gradgrad", "fd")
    _run(PULLBACK, case, f"{name} ({dtype})")


# ------------------------------------------------------------------------- two deep
def jacfwd_of_jacrev(case):
    got = func.jacfwd(func.jacrev(case.s, argnums=case.argnums), argnums=case.argnums)(
        *case.xs())
    assert_close(got, case.hessian.jacfwd(), "jacfwd(jacrev(s))", **FD2)


def jacrev_of_jacrev(case):
    got = func.jacrev(func.jacrev(case.s, argnums=case.argnums), argnums=case.argnums)(
        *case.xs())
    assert_close(got, case.hessian.jacrev(), "jacrev(jacrev(s))", **FD2)


def hessian(case):
    got = func.hessian(case.s, argnums=case.argnums)(*case.xs())
    assert_close(got, case.hessian.jacfwd(), "hessian(s)", **FD2)


def jvp_of_grad(case):
    _, got = func.jvp(func.grad(case.s, argnums=case.argnums), tuple(case.xs()),
                      tuple(tensor(v) for v in case.v))
    assert_close(got, case.hessian.jvp(case.v), "jvp(grad(s)) (hvp)", **FD2)


def grad_of_grad(case):
    def gv(*xs):
        return _pair(case.v, func.grad(case.s, argnums=case.argnums)(*xs))
    got = func.grad(gv, argnums=case.argnums)(*case.xs())
    assert_close(got, case.hessian.vjp(case.v), "grad(<v, grad(s)>)", **FD2)


def grad_of_jvp(case):
    def wjv(*xs):
        return _pair(case.w, func.jvp(case.F, xs, tuple(tensor(v) for v in case.v))[1])
    got = func.grad(wjv, argnums=case.argnums)(*case.xs())
    assert_close(got, case.hessian.jvp(case.v), "grad(<w, jvp(F)(x; v)>)", **FD2)


def jvp_of_jvp(case):
    def jv(*xs):
        return func.jvp(case.F, xs, tuple(tensor(v) for v in case.v))[1]
    _, got = func.jvp(jv, tuple(case.xs()), tuple(tensor(u) for u in case.u))
    expected = fd_directional(lambda xs: case.first_order_jvp(xs, case.v), case.x, case.u)
    assert_close(got, expected, "jvp(jvp(F)(x; v))(u)", **FD2)


def grad_of_vjp(case):
    def uvc(*xs):
        return _pair(case.u, func.vjp(case.F, *xs)[1](tuple(tensor(c) for c in case.c)))
    got = func.grad(uvc, argnums=case.argnums)(*case.xs())
    assert_close(got, case.hvp(case.c, case.u), "grad(<u, vjp(F, x)[1](c)>)", **FD2)


SECOND_ORDER = [jacfwd_of_jacrev, jacrev_of_jacrev, hessian, jvp_of_grad, grad_of_grad,
                grad_of_jvp, jvp_of_jvp, grad_of_vjp]


@pytest.mark.parametrize("name, dtype", cases())
@FEWER
@given(data=st.data())
def test_second_order_compositions(name, dtype, data):
    case = _draw_case(data, name, dtype, "vjp", "jvp", "gradgrad", "fd", sizes=SMALL)
    _run(SECOND_ORDER, case, f"{name} ({dtype})")


# ------------------------------------------------------------------- batched, three deep
class Batch:
    """``BATCH`` elements of a case's floating inputs (``x * (1 + 0.03 b)``; the other
    inputs are shared) with per-element tangents and cotangents, and per-element references
    (a Case each)."""

    def __init__(self, case):
        self.case = case
        self.sample = sample = case.sample
        self.elements = []
        per_element = []
        for b in range(BATCH):
            floats = [x * (1.0 + 0.03 * b) for x in case.x]
            outs = sample.evaluate(floats)
            _need(all(np.all(np.isfinite(o)) for o in outs))
            self.elements.append(floats)
            per_element.append(list(outs))
        self.outs = self.stacked(per_element)  # the outputs, by the loop
        rng = np.random.default_rng(1)
        self.v = [np.stack([random_like(rng, x) for _ in range(BATCH)]) for x in case.x]
        self.c = [np.stack([random_like(rng, o) for _ in range(BATCH)]) for o in case.outs]
        self.a = rng.standard_normal(BATCH)
        self.cases = []
        for floats in self.elements:
            sub = Case.__new__(Case)
            sub.__dict__.update({k: v for k, v in case.__dict__.items()
                                 if k not in ("lin", "hessian")})
            sub.x = floats
            self.cases.append(sub)

    def xs(self):
        return [tensor(np.stack([e[i] for e in self.elements])) for i in range(self.case.n)]

    def stacked(self, per):
        """Stack per-element results (lists of arrays, nested alike) on a new first axis."""
        if isinstance(per[0], (list, tuple)):
            return [self.stacked([p[k] for p in per]) for k in range(len(per[0]))]
        return np.stack(per)


def _batched(data, name, dtype):
    case = _draw_case(data, name, dtype, "vjp", "jvp", "gradgrad", "fd", sizes=SMALL)
    return Batch(case)


def vmap_of_grad(batch):
    case = batch.case
    got = func.vmap(func.grad(case.s, argnums=case.argnums))(*batch.xs())
    expected = batch.stacked([c.lin.vjp(case.w) for c in batch.cases])
    assert_close(got, expected, "vmap(grad(s))", **FD)


def vmap_of_jvp(batch):
    case, n = batch.case, batch.case.n

    def jv(*args):
        return func.jvp(case.F, args[:n], args[n:])
    out, got = func.vmap(jv)(*batch.xs(), *[tensor(v) for v in batch.v])
    assert_close(out, batch.outs, "vmap(jvp(F)) output", **EXACT)
    expected = batch.stacked([c.lin.jvp([v[b] for v in batch.v])
                              for b, c in enumerate(batch.cases)])
    assert_close(got, expected, "vmap(jvp(F))", **FD)


def vmap_of_vjp(batch):
    case, n = batch.case, batch.case.n

    def vj(*args):
        out, vjp_fn = func.vjp(case.F, *args[:n])
        return out, vjp_fn(args[n:])
    out, got = func.vmap(vj)(*batch.xs(), *[tensor(c) for c in batch.c])
    assert_close(out, batch.outs, "vmap(vjp(F)) output", **EXACT)
    expected = batch.stacked([c.lin.vjp([cc[b] for cc in batch.c])
                              for b, c in enumerate(batch.cases)])
    assert_close(got, expected, "vmap(vjp(F))", **FD)


def grad_of_vmap(batch):
    case = batch.case

    def total(*xs):
        return ndgrad.sum(func.vmap(case.s)(*xs) * tensor(batch.a))
    got = func.grad(total, argnums=case.argnums)(*batch.xs())
    expected = batch.stacked([[batch.a[b] * g for g in c.lin.vjp(case.w)]
                              for b, c in enumerate(batch.cases)])
    assert_close(got, expected, "grad(vmap(s))", **FD)


def vmap_of_jacrev(batch):
    case = batch.case
    got = func.vmap(func.jacrev(case.F, argnums=case.argnums))(*batch.xs())
    assert_close(got, batch.stacked([c.lin.jacrev() for c in batch.cases]), "vmap(jacrev(F))",
                 **FD)


def vmap_of_jacfwd(batch):
    case = batch.case
    got = func.vmap(func.jacfwd(case.F, argnums=case.argnums))(*batch.xs())
    assert_close(got, batch.stacked([c.lin.jacfwd() for c in batch.cases]), "vmap(jacfwd(F))",
                 **FD)


def vmap_of_jacfwd_of_jacrev(batch):
    case = batch.case
    hess = func.jacfwd(func.jacrev(case.s, argnums=case.argnums), argnums=case.argnums)
    got = func.vmap(hess)(*batch.xs())
    assert_close(got, batch.stacked([c.hessian.jacfwd() for c in batch.cases]),
                 "vmap(jacfwd(jacrev(s)))", **FD2)


def vmap_of_jvp_of_grad(batch):
    case, n = batch.case, batch.case.n

    def hvp(*args):
        return func.jvp(func.grad(case.s, argnums=case.argnums), args[:n], args[n:])[1]
    got = func.vmap(hvp)(*batch.xs(), *[tensor(v) for v in batch.v])
    expected = batch.stacked([c.hvp(case.w, [v[b] for v in batch.v])
                              for b, c in enumerate(batch.cases)])
    assert_close(got, expected, "vmap(jvp(grad(s)))", **FD2)


def jvp_of_vmap_of_grad(batch):
    case = batch.case
    _, got = func.jvp(func.vmap(func.grad(case.s, argnums=case.argnums)), tuple(batch.xs()),
                      tuple(tensor(v) for v in batch.v))
    expected = batch.stacked([c.hvp(case.w, [v[b] for v in batch.v])
                              for b, c in enumerate(batch.cases)])
    assert_close(got, expected, "jvp(vmap(grad(s)))", **FD2)


def grad_of_vmap_of_grad(batch):
    case = batch.case

    def total(*xs):
        return _pair(batch.v, func.vmap(func.grad(case.s, argnums=case.argnums))(*xs))
    got = func.grad(total, argnums=case.argnums)(*batch.xs())
    expected = batch.stacked([c.hvp(case.w, [v[b] for v in batch.v])
                              for b, c in enumerate(batch.cases)])
    assert_close(got, expected, "grad(<v, vmap(grad(s))>)", **FD2)


def vmap_of_jvp_of_vjp_fn(batch):
    case, n = batch.case, batch.case.n
    c0 = tuple(tensor(c) for c in case.c)

    def per_element(*args):
        vjp_fn = func.vjp(case.F, *args[:n])[1]
        return func.jvp(lambda *cs: vjp_fn(cs), c0, args[n:])[1]
    got = func.vmap(per_element)(*batch.xs(), *[tensor(c) for c in batch.c])
    expected = batch.stacked([c.lin.vjp([cc[b] for cc in batch.c])
                              for b, c in enumerate(batch.cases)])
    assert_close(got, expected, "vmap(jvp(vjp_fn))", **FD)


BATCHED = [vmap_of_grad, vmap_of_jvp, vmap_of_vjp, grad_of_vmap, vmap_of_jacrev, vmap_of_jacfwd,
           vmap_of_jacfwd_of_jacrev, vmap_of_jvp_of_grad, jvp_of_vmap_of_grad,
           grad_of_vmap_of_grad, vmap_of_jvp_of_vjp_fn]


@pytest.mark.parametrize("name, dtype", cases())
@FEWER
@given(data=st.data())
def test_batched_compositions(name, dtype, data):
    batch = _batched(data, name, dtype)
    _run(BATCHED, batch, f"{name} ({dtype})")


# ------------------------------------------------------------------- the checks fail
def _sin(vjp=None, jvp=None, batch=lambda F, batched, x: F.sin(x)):
    """The copy of sin with replaceable rules, as a Sample at fixed inputs."""
    from registry_harness import Sample, sin_with_rules
    return Sample(sin_with_rules(vjp, jvp, batch), (np.array([0.3, -1.1, 0.7]),), {})


def test_composition_checks_catch_wrong_rules():
    """Right rules pass the families that today's transforms get right; a second derivative
    that is wrong only through its rule's own derivative fails the second-order family but
    not the first-order one; a wrong jvp fails exactly the forward-mode first-order checks;
    a wrong batching rule fails the batched family."""
    right = Case(_sin())
    _run(FIRST_ORDER, right, "right sin")
    _run(SECOND_ORDER, right, "right sin")
    _run(BATCHED, Batch(right), "right sin")

    detached = Case(_sin(vjp=lambda F, g, out, x: g * F.cos(
        x.detach() if hasattr(x, "detach") else x)))
    _run(FIRST_ORDER, detached, "sin with a constant derivative")
    with pytest.raises(pytest.fail.Exception) as info:
        _run(SECOND_ORDER, detached, "sin with a constant derivative")
    assert all(f"{c.__name__}:" in str(info.value) for c in
               (jacrev_of_jacrev, grad_of_grad, grad_of_vjp))

    wrong_jvp = Case(_sin(jvp=lambda F, tangents, out, x: tangents[0] * F.sin(x)))
    with pytest.raises(pytest.fail.Exception) as info:
        _run(FIRST_ORDER, wrong_jvp, "sin with a wrong jvp")
    message = str(info.value)
    assert "3 of 6 compositions failed" in message
    assert all(f"\n{c.__name__}: " in message for c in (jvp, linearize, jacfwd))

    wrong_batch = Batch(Case(_sin(batch=lambda F, batched, x: F.sin(x) * 1.5)))
    with pytest.raises(pytest.fail.Exception) as info:
        _run(BATCHED, wrong_batch, "sin with a wrong batching rule")
    assert all(f"{c.__name__}:" in str(info.value) for c in
               (vmap_of_jvp, vmap_of_vjp, grad_of_vmap))
