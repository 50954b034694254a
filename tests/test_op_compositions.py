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

The checks come in four families of the registry matrix (Note [The registry matrix] in
tests/registry_matrix.py: the tests below, one case per (op, dtype)), each run on the samples
of the op's bank with the references the bank computes once (the same FD Jacobian the vjp and
jvp families check first order against, the same FD Hessian as the second-order family); a
failure lists, per sample, every composition of the family that failed (not only the first),
with its error:

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
``notes["gradgrad"]`` / ``notes["fd"]``, are not collected for the families those exclude.
``first_order`` and ``pullback`` run on the bank's small samples and two of its wide ones,
``second_order`` and ``batched`` on its small samples (at most 2 dimensions of at most 3
elements: full Hessians and per-element references stay cheap); every (op, dtype,
composition) runs on every one of them, in every run of the derandomized profile.
tests/test_op_matrix.py shows the families fail on deliberately wrong rules.
"""

from __future__ import annotations

import numpy as np

import ndgrad
from ndgrad import func
from registry_matrix import differentiable_without, each, family, pair, tensor
from support import assert_close, fd_directional, host

FD = {"rtol": 1e-4, "atol": 1e-6}       # against first-order central differences
FD2 = {"rtol": 1e-3, "atol": 1e-5}      # against differences of a first-order derivative
EXACT = {"rtol": 1e-10, "atol": 1e-12}  # two ways to the same formula
_pair = pair


def _first_order_entries(bank):
    """Two of the bank's small samples and two wide ones (after the simplest, which the first
    small one repeats): four, as many examples as the first-order suites drew before the
    matrix (Note [The registry matrix])."""
    return bank.differentiable("small")[:2] + bank.differentiable("wide")[1:3]


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


@family("first_order", differentiable_without("vjp", "jvp", "fd"))
def test_first_order(bank):
    each(_first_order_entries(bank), FIRST_ORDER, f"{bank.name} ({bank.dtype}) first order")


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


@family("pullback", differentiable_without("vjp", "jvp", "gradgrad", "fd"))
def test_pullback(bank):
    """The pullback as a function of the cotangent."""
    each(_first_order_entries(bank), PULLBACK, f"{bank.name} ({bank.dtype}) pullback")


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


@family("second_order_compositions", differentiable_without("vjp", "jvp", "gradgrad", "fd"))
def test_second_order_compositions(bank):
    each(bank.differentiable("composed"), SECOND_ORDER,
         f"{bank.name} ({bank.dtype}) second-order compositions")


# ------------------------------------------------------------------- batched, three deep
# (on an entry's Batch, registry_matrix.Batch: BATCH elements x (1 + 0.03 b), their loop
# references an Entry each)
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


def _batched(check):
    """``check`` of an entry's batch."""
    def run(e):
        assert e.batch is not None, "an element of the batch leaves the op's domain"
        check(e.batch)
    run.__name__ = check.__name__
    return run


@family("batched_compositions", differentiable_without("vjp", "jvp", "gradgrad", "fd"))
def test_batched_compositions(bank):
    each([e for e in bank.differentiable("composed") if e.batch is not None],
         [_batched(c) for c in BATCHED], f"{bank.name} ({bank.dtype}) batched compositions")
