"""Derivative rules at special points (Note [Derivatives at special points] in
ndgrad/core/ops/elementwise.py).

The sweep: every differentiable elementwise op of the registry (registered or composite), each
floating input through exact zero, subnormals, the smallest normal, tiny values (whose squares
underflow), small ones, flat tails and huge values, with the other inputs at every such point
too; its first and second derivatives by nested reverse mode, nested forward mode and the
first-order vjp against central differences of the order below in rescaled coordinates
(steps relative to the point), which also tell a finite derivative from an infinite one, a
kink (a convention between the one-sided limits) and a jump (no derivative); where the
differences at a point near 0 are only noise (a function flat on the scale of the point), the
derivative at 0 with the same other inputs, give or take the point times the next derivative.
An op that cannot be right there declares ``notes["special_points"]`` with the reason (the
sweep then requires mismatches, so the declaration cannot go stale); an op whose value jumps
(a piecewise-constant part, or ``notes["jumps"]``) is not swept: differences straddle its
jumps at these points. The closed-form tests after it pin the reported cases, third
derivatives included.

Linear algebra (Note [Linear algebra at extreme scales] in ndgrad/core/ops/solves.py):
every differentiable op of the linear-algebra modules and of kind LINALG (corrcoef, cond,
the FFTs, the polynomials ...), and every elementwise op, at its sample scaled by powers of
two near 1e+-150, to the ends of the range and to where its value is 2^+-1000, against its
own derivatives at the sample times the power of the scale its measured homogeneity gives
(ops that are not homogeneous are skipped); then closed-form tests of the reported cases
(pinv, cholesky_solve, svd, vector_norm, lstsq, divide, reciprocal, corrcoef, cond, polydiv,
solve).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.special
from hypothesis import HealthCheck, Phase, assume, given, settings
from hypothesis import strategies as st

import ndgrad as nd
from ndgrad.core.ops.registry import ELEMENTWISE, LINALG, REDUCTION, SCAN
from ndgrad.func import jvp
from registry_harness import (ENTRIES, FLOAT, cases, draw, elementwise_function, entry,
                              paired, points_in_domain)

# (the points are where values and derivatives over- and underflow by design: NumPy's
# floating-point warnings there are the subject, and each result is checked)
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

TINY = float(np.finfo(np.float64).tiny)
SUB = 5e-324
EPS = float(np.finfo(np.float64).eps)
# the special points: zero, subnormals, the smallest normal, tiny values (squares underflow),
# small ones (where a rule's cancellation of 1/x^k terms shows), ordinary ones, flat tails and
# huge values
POINTS = (0.0, SUB, -SUB, TINY, -TINY, 1e-300, -1e-300, 1e-170, -1e-170, 1e-8, -1e-8, 0.5,
          1.0, -1.0, 2.0, 30.0, -30.0, 1e150, -1e150)
STEPS = (1e-4, 1e-3, 1e-2)  # relative to |x0|, absolute at 0
ORDER = 2  # first and second derivatives (third orders: the closed-form tests below)
NEAR_ZERO = 1e-6  # below: the derivative at 0 is a reference too (continuity)


def _np(t):
    return t.detach().cpu().numpy()


def _offsets(x0, others):
    """Per point, the 7 abscissae x0, x0 +- s for each step s, rescaled: s = h |x0|, and at
    0, h times the smallest nonzero magnitude of the other inputs there (at most 1), so no
    kink or jump of a partner's scale lies within the steps (``maximum(x, 5e-324)``)."""
    at_zero = np.ones_like(x0)
    for c in others:
        a = np.abs(c)
        at_zero = np.where((a > 0) & (a < at_zero), a, at_zero)
    scale = np.where(x0 == 0, at_zero, np.abs(x0))
    cols = [x0]
    for h in STEPS:
        cols += [x0 + h * scale, x0 - h * scale]
    return np.stack(cols, axis=-1)


def _reverse(f, xs, i, K):
    """``[D0, ..., DK]``: f and its derivatives in input ``i`` by nested reverse mode
    (elementwise: the gradient of the sum), and the first-order vjp (raw formulas)."""
    x = xs[i].detach().requires_grad_()
    args = list(xs)
    args[i] = x
    cur = f(*args)
    out = [_np(cur)]
    vjp1 = _np(nd.autograd.grad(cur.sum(), x, retain_graph=True)[0]) if cur.requires_grad \
        else np.zeros(out[0].shape)
    for _ in range(K):
        g = None
        if cur.requires_grad:
            (g,) = nd.autograd.grad(cur.sum(), x, create_graph=True, allow_unused=True)
        cur = nd.zeros_like(x) if g is None else g
        out.append(_np(cur))
    return out, vjp1


def _forward(f, xs, i, K):
    """``[D1, ..., DK]`` by nested forward mode (jvp of jvp)."""
    def along(g):
        def d(*a):
            a = list(a)
            return jvp(lambda t: g(*(a[:i] + [t] + a[i + 1:])), (a[i],),
                       (nd.ones_like(a[i]),))[1]
        return d
    out, g = [], f
    for _ in range(K):
        g = along(g)
        out.append(_np(g(*xs)))
    return out


def _diverges(r1, r2, r3, noise):
    """One-sided differences at steps s1 < s2 < s3 that grow without converging, well above
    their rounding noise: the derivative there is infinite, with their sign."""
    return (np.sign(r1) == np.sign(r2)) & (np.sign(r2) == np.sign(r3)) & \
        (np.abs(r1) > np.abs(r2)) & (np.abs(r2) > np.abs(r3)) & \
        (np.abs(r1) > 1.5 * np.abs(r3)) & (np.abs(r1 - r2) > 0.5 * np.abs(r2 - r3)) & \
        (np.abs(r1 - r3) > 1e3 * noise)


def _converges(a1, a2, a3, noise, order):
    """Differences at steps s1 < s2 < s3 (ratio 10) that converge as s^order does, or agree
    to their rounding noise: ``a1`` is a reference, known to the returned uncertainty."""
    d12, d23 = np.abs(a1 - a2), np.abs(a2 - a3)
    slack = 10 * noise + 1e-13 * np.abs(a1)
    ok = d12 <= 3 * 10.0 ** -order * d23 + slack
    return ok, d12 + noise


def _reference(x, D, size):
    """From ``D`` (the derivative of the order below at the 7 abscissae of each point,
    ``x``), whose rounding errors are about ``eps * size``, per point: (ref, unc, kind) with
    kind 0 no reference, 1 a value ``ref`` known to ``unc``, 2 infinite with the sign of
    ``ref``, 3 a kink (``ref``, ``unc`` the one-sided limits: a convention between them)."""
    n = x.shape[0]
    ref, unc, kind = np.zeros(n), np.full(n, np.inf), np.zeros(n, dtype=int)
    d0 = D[:, 0]
    s = [x[:, 1 + 2 * j] - x[:, 0] for j in range(3)]
    m = [x[:, 0] - x[:, 2 + 2 * j] for j in range(3)]
    with np.errstate(all="ignore"):
        R = [(D[:, 1 + 2 * j] - d0) / s[j] for j in range(3)]
        L = [(d0 - D[:, 2 + 2 * j]) / m[j] for j in range(3)]
        C = [(D[:, 1 + 2 * j] - D[:, 2 + 2 * j]) / (s[j] + m[j]) for j in range(3)]
        # rounding of the values, and the spacing of subnormals where they underflowed
        noise = (64 * EPS * size + 4 * SUB) / np.minimum(s[0], m[0])
        right = np.isfinite(R[0]) & np.isfinite(R[1]) & np.isfinite(R[2]) & (s[0] > 0)
        left = np.isfinite(L[0]) & np.isfinite(L[1]) & np.isfinite(L[2]) & (m[0] > 0)
        ok = np.isfinite(d0) & np.isfinite(noise)
        # infinite: every defined side grows without converging, with one sign (and is not a
        # jump: values that settle at a limit other than the point's, as 0 ** y at y = 0)
        settles_r = np.abs(D[:, 1] - D[:, 3]) <= 1e-2 * np.abs(D[:, 1] - d0)
        settles_l = np.abs(D[:, 2] - D[:, 4]) <= 1e-2 * np.abs(D[:, 2] - d0)
        dr = _diverges(*R, noise) & right & ~settles_r
        dl = _diverges(*L, noise) & left & ~settles_l
        jumped = ok & ((_diverges(*R, noise) & right & settles_r) |
                       (_diverges(*L, noise) & left & settles_l))
        inf = ok & (dr | dl) & ~(right & ~dr) & ~(left & ~dl) & \
            ~(dr & dl & (np.sign(R[0]) != np.sign(L[0])))
        ref = np.where(inf, np.where(dr, np.sign(R[0]), np.sign(L[0])), ref)
        unc = np.where(inf, np.maximum(np.where(dr, np.abs(R[0]), 0),
                                       np.where(dl, np.abs(L[0]), 0)), unc)
        kind = np.where(inf, 2, kind)
        # a jump of the order below (a kink of the function): no derivative there
        dr1, dr2 = D[:, 1] - d0, D[:, 3] - d0
        dl1, dl2 = D[:, 2] - d0, D[:, 4] - d0
        jump = ok & right & left & (np.abs(D[:, 1] - D[:, 2]) > 10 * (
            np.abs(D[:, 1] - D[:, 3]) + np.abs(D[:, 2] - D[:, 4])) + 1e3 * noise * s[0]) & \
            (np.abs(dr1) > 0.5 * np.abs(dr2)) & (np.abs(dl1) > 0.5 * np.abs(dl2))
        jump = jump | jumped
        inf = inf & ~jump
        kind = np.where(jump, 0, kind)
        both = ok & right & left & ~inf & ~jump
        c_ok, c_unc = _converges(*C, noise, 2)
        r_ok, r_unc = _converges(*R, noise, 1)
        l_ok, l_unc = _converges(*L, noise, 1)
        # a kink: each side converges, to different limits (central differences may not see
        # it: |x| has C = 0 at every step)
        kink = both & r_ok & l_ok & (np.abs(R[0] - L[0]) > 10 * (r_unc + l_unc))
        smooth = both & c_ok & ~kink
        ref = np.where(smooth, C[0], ref)
        unc = np.where(smooth, c_unc, unc)
        kind = np.where(smooth, 1, kind)
        ref = np.where(kink, np.minimum(R[0], L[0]), ref)
        unc = np.where(kink, np.maximum(R[0], L[0]), unc)
        kind = np.where(kink, 3, kind)
        # one side only (a domain end): one-sided, converging
        for side, other, S_ok, S_unc, S in ((right, left, r_ok, r_unc, R),
                                            (left, right, l_ok, l_unc, L)):
            one = ok & side & ~other & ~inf & S_ok
            ref = np.where(one, S[0], ref)
            unc = np.where(one, S_unc, unc)
            kind = np.where(one, 1, kind)
    with np.errstate(all="ignore"):
        change = np.abs(D[:, 5:] - d0[:, None])
        change = np.max(np.where(np.isfinite(change), change, 0), axis=1)
        visible = change > 1e3 * noise * s[0]
    kind = np.where((kind == 1) & ~np.isfinite(unc), 0, kind)
    return ref, unc, kind, visible


def _agrees(got, ref, unc, kind, visible):
    """Per point: whether ``got`` agrees with the reference (True where there is none).
    Against a finite value: within its uncertainty if finite; never nan; infinite only where
    the differences cannot see it (the order below does not visibly change over the steps,
    as a function dominated by a constant, nor is the value known to 1e-3)."""
    with np.errstate(all="ignore"):
        tol = 10 * unc + 1e-6 * np.abs(ref)
        finite = np.isfinite(got) & ((got == ref) | (np.abs(got - ref) <= tol))
        hidden = np.isinf(got) & ~visible & ~(unc <= 1e-3 * np.abs(ref))
        value = finite | hidden
        # (or a finite one far steeper than every difference: a derivative of 1e150, as
        # x ** 1e150's at 1, looks infinite to differences at these steps)
        infinite = (np.sign(got) == ref) & (np.isinf(got) | (np.abs(got) >= 1e3 * unc))
        between = (got >= ref - 1e-6 * np.abs(ref)) & (got <= unc + 1e-6 * np.abs(unc))
    return np.where(kind == 1, value, np.where(kind == 2, infinite,
                                               np.where(kind == 3, between, True)))


def _columns(sample):
    """The points of each floating input: every combination of the special points for one
    or two inputs; for more, each input through them with the others at the sample's."""
    nf = len(sample.pos)
    if nf <= 2:
        grid = np.meshgrid(*([np.array(POINTS)] * nf), indexing="ij")
        return [g.reshape(-1) for g in grid]
    base = [float(np.asarray(a).reshape(-1)[0]) for a in sample.floats]
    rows = [base[:i] + [p] + base[i + 1:] for i in range(nf) for p in POINTS]
    return [np.array(c) for c in zip(*rows)]


def _jumps(sample):
    """Whether the op's value goes through a piecewise-constant op (``rint``, ``modf``: the
    graph of a call holds a node of a ``piecewise_constant`` op) or one that declares
    ``notes["jumps"]`` (``remainder``): its derivative holds between jumps, and at these points
    (``modf(1e150)``, ``fmod(x, 5e-324)``) jumps lie within any difference step."""
    if "jumps" in (getattr(sample.op, "notes", None) or {}):
        return True
    f = sample.function()
    seen, todo = set(), [o.grad_fn for o in f(*sample.leaves()) if o.grad_fn is not None]
    while todo:
        node = todo.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        op = getattr(node, "op", None)
        if getattr(op, "piecewise_constant", False) or \
                "jumps" in (getattr(op, "notes", None) or {}):
            return True
        todo.extend(n for n, _ in getattr(node, "next_functions", ()))
    return False


def _sweep(name, sample):
    """The mismatches of the op's derivatives against the references, as lines."""
    f = elementwise_function(name, sample)
    cols = points_in_domain(f, _columns(sample))
    bad = []
    n = len(cols)
    for i in range(n):
        X = _offsets(cols[i], [c for j, c in enumerate(cols) if j != i])  # (points, 7)
        xs = [nd.tensor(X.reshape(-1) if j == i else np.repeat(c, 7)) for j, c in
              enumerate(cols)]
        with nd.no_grad():
            if f(*xs).dtype.kind != "f":
                return []  # (a complex or integer output: no real special points)
        with np.errstate(all="ignore"):
            try:  # (one order more: the slope the continuity reference allows for)
                D, vjp1 = _reverse(f, xs, i, ORDER + 1)
            except ValueError:
                continue
            center = [nd.tensor(c) for c in cols]
            fwd = _forward(f, center, i, ORDER)
            checked = np.isfinite(D[0].reshape(-1, 7)[:, 0]) & ~_lattice(f, cols, i)
        D = [d.reshape(-1, 7) for d in D]
        length = np.where(X[:, :1] == 0, 1.0, np.abs(X[:, :1]))
        for k in range(1, ORDER + 1):
            # D[k-1]'s rounding errors: of the size of the terms it is made of, the orders
            # below in its units
            size = np.zeros(len(X))
            for j in range(k):
                with np.errstate(all="ignore"):
                    a = np.abs(D[j]) / length ** (k - 1 - j)
                size = np.maximum(size, np.max(np.where(np.isfinite(a), a, 0), axis=1))
            ref, unc, kind, visible = _reference(X, D[k - 1], size)
            if k >= 2:  # continuity: near 0, the derivative at 0 (with the same partners)
                ref, unc, kind = _continuity(cols, i, X, D[k], D[k + 1], ref, unc, kind)
            got = {"nested reverse": D[k][:, 0]}
            if k == 1:
                got["vjp"] = vjp1.reshape(-1, 7)[:, 0]
            got["nested forward"] = fwd[k - 1]
            for how, g in got.items():
                ok = _agrees(g, ref, unc, kind, visible) | ~checked
                for e in np.flatnonzero(~ok):
                    at = ", ".join(repr(float(c[e])) for c in cols)
                    what = {1: f"{ref[e]!r} +- {unc[e]:.3g}", 2: f"{ref[e]:+}inf",
                            3: f"in [{ref[e]!r}, {unc[e]!r}]"}[int(kind[e])]
                    bad.append(f"{name}({at}) in input {i}: order {k} by {how} is {g[e]!r}, "
                               f"expected {what}")
    return bad


def _lattice(f, cols, i):
    """Per point: where the moving input is so large that every float there is an integer
    (``|x| >= 2**53``) and the op is not a number at a non-integer of that sign with the same
    other inputs, 2.5 (``pow(-0.5, y)``: real at integer ``y`` only), its derivative in that
    input does not exist (nan, as PyTorch gives), though differences along the integers see
    one. (A probe near 2**53 would be better, but SciPy's hyp1f1 does not return there.)"""
    x0 = cols[i]
    big = np.abs(x0) >= 2.0 ** 53
    if not big.any():
        return big
    probe = [np.where(big, np.sign(x0) * 2.5, x0) if j == i else c
             for j, c in enumerate(cols)]
    with nd.no_grad():
        return big & np.isnan(_np(f(*(nd.tensor(c) for c in probe))))


def _continuity(cols, i, X, Dk, Dk1, ref, unc, kind):
    """Where the finite differences at a point near 0 are noise (a function flat on the
    scale of the point), the derivative ``Dk`` at 0 with the same other inputs, give or take
    the point times the next derivative ``Dk1`` there: a smooth function's derivative is
    continuous. Only from a 0 where the differences show the function smooth and the
    derivative there agrees with them."""
    x0 = cols[i]
    key = {}
    for e in range(len(x0)):
        others = tuple(float(c[e]) for j, c in enumerate(cols) if j != i)
        if x0[e] == 0:
            key[others] = e
    base_ref, base_unc, base_kind = ref, unc, kind
    ref, unc, kind = ref.copy(), unc.copy(), kind.copy()
    for e in range(len(x0)):
        if x0[e] == 0 or abs(x0[e]) > NEAR_ZERO:
            continue
        if kind[e] == 1 and unc[e] <= 1e-3 * abs(ref[e]):
            continue  # the finite differences are a reference
        others = tuple(float(c[e]) for j, c in enumerate(cols) if j != i)
        z = key.get(others)
        if z is None or base_kind[z] != 1 or not (
                abs(Dk[z, 0] - base_ref[z]) <= 10 * base_unc[z] + 1e-6 * abs(base_ref[z])):
            continue
        d0 = Dk[z, 0]
        if not (np.isfinite(d0) and np.all(np.isfinite(Dk[z])) and
                np.all(np.isfinite(Dk1[z]))):
            continue
        slope = np.max(np.abs(Dk1[z]))
        near = Dk[z, 1:]
        ref[e] = d0
        unc[e] = (1e-6 * max(abs(d0), np.max(np.abs(near))) + 2 * abs(x0[e]) * slope) / 10
        kind[e] = 1
    return ref, unc, kind


# piecewise-constant ops have zero derivatives by declaration (Note [Piecewise-constant
# ops]); at 1e150, where every float is an integer, differences see the identity
ELEMENTWISE_OPS = [n for n in ENTRIES if entry(n).kind == ELEMENTWISE and entry(n).differentiable
                   and not getattr(entry(n), "piecewise_constant", False)]


def _check(name, bad):
    """No mismatch, or, for an op that declares ``notes["special_points"]`` (why its rules
    cannot be right there), some: a declaration that no longer fails is stale."""
    reason = (getattr(entry(name), "notes", None) or {}).get("special_points")
    if reason is None:
        assert not bad, f"{len(bad)} mismatches:\n" + "\n".join(bad[:20])
    else:
        assert bad, f"{name} declares notes['special_points'] ({reason}) but has no mismatch"


@pytest.mark.cpu_only("the special points are device independent")
@pytest.mark.parametrize("name", ELEMENTWISE_OPS)
@settings(max_examples=1, deadline=None)
@given(data=st.data())
def test_elementwise_derivatives_at_special_points(name, data):
    """Every differentiable elementwise op (registered or composite), each floating input
    through the special points with the others at every special point too: its first,
    second and third derivatives by nested reverse mode, its first and second by nested
    forward mode and its first by the first-order vjp agree with finite differences of the
    order below (Note [Derivatives at special points])."""
    op = entry(name)
    sample = draw(data, op, FLOAT, max_side=1, max_dims=1)
    if not sample.pos:
        pytest.skip(f"{name}: this sample has no floating input")
    if _jumps(sample):
        pytest.skip(f"{name}: its value jumps (a piecewise-constant part, or notes['jumps']); "
                    "differences straddle the jumps at these points")
    _check(name, _sweep(name, sample))


# ------------------------------------------------------------------ the reported cases
def _nested(f, x0, K, *others):
    """``[f'(x0), ..., f^(K)(x0)]`` in the first argument, by nested reverse mode and by
    nested forward mode (``(reverse, forward)``, NumPy arrays)."""
    x = nd.tensor(np.asarray(x0, dtype=float), requires_grad=True)
    rest = [nd.tensor(np.asarray(o, dtype=float)) for o in others]
    cur, rev = f(x, *rest), []
    for _ in range(K):
        (cur,) = nd.autograd.grad(cur.sum(), x, create_graph=True)
        rev.append(_np(cur))

    def d(g):
        return lambda t: jvp(lambda u: g(u), (t,), (nd.ones_like(t),))[1]
    g, fwd = (lambda t: f(t, *rest)), []
    for _ in range(K):
        g = d(g)
        fwd.append(_np(g(nd.tensor(np.asarray(x0, dtype=float)))))
    return rev, fwd


def _assert_orders(f, x0, expected, *others, rtol=1e-12, atol=0.0):
    rev, fwd = _nested(f, x0, len(expected), *others)
    for k, e in enumerate(expected):
        for how, got in (("nested reverse", rev[k]), ("nested forward", fwd[k])):
            np.testing.assert_allclose(got, e, rtol=rtol, atol=atol,
                                       err_msg=f"order {k + 1} by {how}")


@pytest.mark.cpu_only("closed forms at special points")
def test_kl_div_and_rel_entr_at_tiny_and_huge_points():
    """kl_div and rel_entr in x: log x - log y, 1/x, -1/x^2, exactly at x or y tiny or huge
    (log(x / y) gave -inf at x = 1e-300, y = 1e150, +inf at 1e150 and 1e-170, and -0.0
    for the third derivative -4 at x = 0.5, y = 1e-170); in y: 1 - x/y, x/y^2, -2x/y^3; the
    mixed -1/y."""
    x = np.array([1e-300, 0.5, 1e150, 1e-170, 2.0])
    y = np.array([1e150, 1e-170, 1e-170, 1e-170, 1e-300])
    logs = np.log(x) - np.log(y)
    with np.errstate(over="ignore"):
        for f, shift in ((nd.special.kl_div, 0.0), (nd.special.rel_entr, 1.0)):
            _assert_orders(f, x, [logs + shift, 1 / x, -1 / x ** 2], y)
    # in y, and the mixed derivative (through the x rule, and through the y rule)
    xs, ys = np.array([0.5, 1e-170, 3.0]), np.array([1e-170, 1e-170, 1e150])
    _assert_orders(lambda b, a: nd.special.kl_div(a, b), ys, [1 - xs / ys, xs / ys / ys],
                   xs)
    a = nd.tensor(xs, requires_grad=True)
    b = nd.tensor(ys, requires_grad=True)
    (ga,) = nd.autograd.grad(nd.special.kl_div(a, b).sum(), a, create_graph=True)
    (gb,) = nd.autograd.grad(nd.special.kl_div(a, b).sum(), b, create_graph=True)
    np.testing.assert_allclose(_np(nd.autograd.grad(ga.sum(), b)[0]), -1 / ys, rtol=1e-14)
    np.testing.assert_allclose(_np(nd.autograd.grad(gb.sum(), a)[0]), -1 / ys, rtol=1e-14)
    # at x = y = 0 the function is y (kl_div) or 0 (rel_entr) along y: d/dy is 1 or 0
    z = nd.tensor([0.0], requires_grad=True)
    for f, expected in ((nd.special.kl_div, 1.0), (nd.special.rel_entr, 0.0)):
        (g,) = nd.autograd.grad(f(nd.tensor([0.0]), z).sum(), z)
        assert _np(g).tolist() == [expected]


@pytest.mark.cpu_only("closed forms at special points")
def test_xlogy_and_xlog1py_at_x_zero():
    """At x = 0 the function is 0 along y: d/dy is 0 where y <= 0 (y <= -1 for xlog1py),
    also at y = 0 (x / y was 0 / 0 = nan there), and d2/dxdy is 1/y where y > 0 (the y rule
    agrees with the x rule's derivative in y)."""
    for f, y0, shift in ((nd.special.xlogy, [0.0, -1.0, 2.0], 0.0),
                         (nd.special.xlog1py, [-1.0, -2.0, 1.0], 1.0)):
        x = nd.tensor([0.0, 0.0, 0.0], requires_grad=True)
        y = nd.tensor(y0, requires_grad=True)
        (gy,) = nd.autograd.grad(f(x, y).sum(), y, create_graph=True)
        assert _np(gy).tolist() == [0.0, 0.0, 0.0]
        (gyx,) = nd.autograd.grad(gy.sum(), x)
        np.testing.assert_allclose(_np(gyx), [0.0, 0.0, 1 / (y0[2] + shift)], rtol=1e-15)


@pytest.mark.cpu_only("closed forms at special points")
def test_copysign_hypot_atan2_at_tiny_points():
    """copysign's derivatives past the first are 0 at 1e-170 (nan before: out / x
    differentiates to 1/x^2 terms); hypot's and atan2's rules are computed in units of a
    power of two near their inputs: hypot(x, 0) = |x| has zero second and third derivatives
    at 1e-170 (nan), hypot(x, c)'' = c^2 / h^3, atan2's first derivative x / (x^2 + y^2) at
    x = y = 2.2e-308 is 1 / (4.45e-308) (2.2e-308 before: x^2 + y^2 underflowed)."""
    x = np.array([1e-170, -1e-170, 1e-300, 3.0])
    _assert_orders(nd.copysign, x, [np.sign(x) * -1.0, 0 * x, 0 * x], -2.0)
    rev, _ = _nested(nd.hypot, x, 3, 0.0)
    np.testing.assert_array_equal(rev[0], np.sign(x))
    np.testing.assert_array_equal(rev[1], 0 * x)
    np.testing.assert_array_equal(rev[2][[0, 1, 3]], [0.0, 0.0, 0.0])
    c, t = 1e-170, np.array([0.0, 1e-170, 1e-300, 5e-324])
    h = np.hypot(t, c)
    _assert_orders(nd.hypot, t, [t / h, (c / h) ** 2 / h], c, rtol=1e-14)
    rev, _ = _nested(nd.hypot, t[2:], 3, c)
    hh = h[2:]
    np.testing.assert_allclose(rev[2], -3 * (c / hh) ** 2 * (t[2:] / hh) / hh / hh, rtol=1e-14)
    tiny = np.finfo(float).tiny
    y, xx = np.array([tiny, 1e-170, 1e-300]), np.array([tiny, 2e-170, 0.0])
    r2 = (xx / y) ** 2 + 1  # (x^2 + y^2) / y^2, without underflow
    _assert_orders(lambda a, b: nd.atan2(a, b), y, [xx / y / y / r2], xx, rtol=1e-14)
    _assert_orders(lambda b, a: nd.atan2(a, b), xx, [-y / y / y / r2], y, rtol=1e-14)


@pytest.mark.cpu_only("closed forms at special points")
def test_logaddexp_asinh_pow_at_huge_points():
    """logaddexp(x, x) has gradient 1/2 in each input also at 1e150, where out = x + log 2
    rounds to x (exp(x - out) gave 1); asinh'' = -x / (1 + x^2)^(3/2) is -1e-300 at 1e150
    (0 before); pow's x ** (y - 1) keeps its parity for |y| >= 2**53 (y - 1 rounds to the even
    y: pow(-1, 1e150)' was +1e150, not -1e150), in Taylor mode too."""
    for f in (nd.logaddexp, nd.logaddexp2):
        a = nd.tensor([1e150, -1e150, 1e300], requires_grad=True)
        b = nd.tensor([1e150, -1e150, 1e300], requires_grad=True)
        ga, gb = nd.autograd.grad(f(a, b).sum(), (a, b))
        assert _np(ga).tolist() == _np(gb).tolist() == [0.5, 0.5, 0.5]
    _assert_orders(nd.asinh, np.array([1e150, -1e150]), [[1e-150, 1e-150], [-1e-300, 1e-300]],
                   rtol=1e-15)
    from ndgrad.func import derivatives
    for y in (1e150, -1e150, 2.0 ** 53, 2.0 ** 60):
        for exponent in (y, nd.tensor(y)):
            x = nd.tensor([-1.0, 1.0], requires_grad=True)
            (g,) = nd.autograd.grad(nd.pow(x, exponent).sum(), x)
            assert _np(g).tolist() == [-y, y]
            # Taylor mode too (pow(x, 1e150) raised OverflowError: a polynomial of degree
            # 1e150, its falling factorial a Python int)
            with np.errstate(over="ignore"):
                d = derivatives(lambda t, e=exponent: nd.pow(t, e), nd.tensor(-1.0), 2)
            assert [float(c) for c in d] == [1.0, -y, y * (y - 1)]


@pytest.mark.cpu_only("closed forms at special points")
def test_bessel_functions_near_zero_and_far_out():
    """i0, i1, j0, j1, i0e, i1e at 0 and at tiny x: their first three derivatives from the
    series (i1 = x/2 + x^3/16, j1 = x/2 - x^3/16, i0e = 1 - |x| + 3x^2/4 - 5|x|^3/12, i1e =
    x/2 - x|x|/2 + 5x^3/16) where the rules of the form i0 - i1/x gave noise of 1e154 at
    1e-170, nan at 5e-324; against SciPy's ivp/jvp at ordinary points; and the asymptotic
    derivatives of i0e, i1e and erfcx at 1e7 and 1e150, where the exact forms cancel to 0."""
    S = nd.special
    x = np.array([0.0, 5e-324, 1e-300, 1e-170, -1e-170])
    a, s = np.abs(x), np.sign(x)
    _assert_orders(S.i0, x, [x / 2, 0.5 + 0 * x, 3 * x / 8], atol=1e-300)
    _assert_orders(S.i1, x, [0.5 + 0 * x, 3 * x / 8, 0.375 + 0 * x], atol=1e-300)
    _assert_orders(S.j0, x, [-x / 2, -0.5 + 0 * x, 3 * x / 8], atol=1e-300)
    _assert_orders(S.j1, x, [0.5 + 0 * x, -3 * x / 8, -0.375 + 0 * x], atol=1e-300)
    t = x[1:]  # (the kink of e^-|x| at 0: one-sided limits at the tiny points)
    _assert_orders(S.i0e, t, [-s[1:], 1.5 + 0 * t, -2.5 * s[1:]], atol=1e-300)
    _assert_orders(S.i1e, t, [0.5 - a[1:], -s[1:], 1.875 + 0 * t], atol=1e-300)
    u = np.array([0.3, -2.0, 7.5])
    for n in (1, 2, 3):
        rev, fwd = _nested(S.i1, u, n)
        np.testing.assert_allclose(rev[-1], scipy.special.ivp(1, u, n), rtol=1e-12)
        rev, fwd = _nested(S.j1, u, n)
        np.testing.assert_allclose(fwd[-1], scipy.special.jvp(1, u, n), rtol=1e-12)
    big = np.array([1e7, 1e150, -1e150])
    ab = np.abs(big)
    lead = 1 / np.sqrt(2 * np.pi * ab)  # i0e ~ i1e ~ (2 pi x)^(-1/2)
    _assert_orders(S.i0e, big, [-np.sign(big) * lead * (0.5 / ab + 3 / 16 / ab ** 2
                                                         + 45 / 256 / ab ** 3)], rtol=1e-14)
    _assert_orders(S.i1e, big, [lead * (-0.5 / ab + 9 / 16 / ab ** 2 + 75 / 256 / ab ** 3)],
                   rtol=1e-14)
    _assert_orders(S.erfcx, big[:2], [-1 / np.sqrt(np.pi) / big[:2] ** 2], rtol=1e-13)


@pytest.mark.cpu_only("closed forms at special points")
def test_removable_singularities_of_ellipk_ellipe_spence_and_others():
    """ellipk and ellipe at m = 0 and tiny m (K = pi/2 (1 + m/4 + 9m^2/64 + 25m^3/256),
    E = pi/2 (1 - m/4 - 3m^2/64 - 5m^3/256): the second derivative at 0 was 0 from a where
    taking the first derivative's limit, nan at 5e-324, 7.9e299 at 1e-300), spence at z = 1
    (log z / (1 - z) = -1 + w/2 - ...: the second derivative 1/2 was 0), expn(4, x)'' = E_2(0)
    = 1 at x = 0 (nan: the unused E_0 branch's 1/x), log_ndtr'' = -1 far left (nan),
    owens_t's a-derivative's tangent at h = a = 1e150 (nan), and betainc's second derivative
    in x at x = 0 (the density's derivative, 0 for a > 2; nan from exp(xlogy(a - 1, x)))."""
    S, h = nd.special, np.pi / 2
    m = np.array([0.0, 5e-324, 1e-300, 1e-170, -1e-170])
    _assert_orders(S.ellipk, m, [h / 4 + 0 * m, h * 9 / 32 + 0 * m, h * 75 / 128 + 0 * m],
                   rtol=1e-14)
    _assert_orders(S.ellipe, m, [-h / 4 + 0 * m, -h * 3 / 32 + 0 * m, -h * 15 / 128 + 0 * m],
                   rtol=1e-14)
    z = np.array([1.0, 1 + 1e-12])
    _assert_orders(S.spence, z, [-1.0 + 0 * z, 0.5 + 0 * z, -2 / 3 + 0 * z], rtol=1e-11)
    _assert_orders(lambda t: S.expn(4, t), np.array([0.0, 1e-300]), [[-0.5, -0.5], [1.0, 1.0]])
    _assert_orders(S.log_ndtr, np.array([-1e150, -1e10]), [[1e150, 1e10], [-1.0, -1.0]],
                   rtol=1e-14)
    _, fwd = _nested(lambda a, t: S.owens_t(t, a), np.array([1e150, -1e150]), 2, 1e150)
    assert fwd[1].tolist() == [0.0, 0.0]
    for a in (2.5, 3.0):
        (_, d2), _ = _nested(lambda t, a=a: S.betainc(a, 1.5, t), np.array([0.0, 1.0]), 2)
        # d/dx of x^(a-1) (1-x)^(1/2) / B: 0 at x = 0, -inf at x = 1
        assert d2.tolist() == [0.0, -np.inf], (a, d2)


# ------------------------------------------------------------------ the other ops


def _along(f, xs, vs, w, ts):
    """``[D0, ..., D_ORDER]`` of ``phi(t) = <w, f(x + t v)>`` at each of ``ts`` by nested
    reverse mode, and ``D1`` at ``t = 0`` by the first-order vjp."""
    out = np.full((ORDER + 1, len(ts)), np.nan)
    vjp1 = np.nan
    for j, t in enumerate(ts):
        leaves = [nd.tensor(x + t * v).requires_grad_() for x, v in zip(xs, vs)]
        cur = paired(f(*leaves), w)
        out[0, j] = float(cur)
        if t == 0:
            gs = nd.autograd.grad(cur, leaves, retain_graph=True, allow_unused=True)
            vjp1 = sum(float(nd.sum(nd.real(g * nd.tensor(v)))) for g, v in zip(gs, vs)
                       if g is not None)
        for k in range(1, ORDER + 1):
            total = None
            if cur.requires_grad:
                gs = nd.autograd.grad(cur, leaves, create_graph=True, allow_unused=True)
                for g, v in zip(gs, vs):
                    if g is not None:
                        term = nd.sum(nd.real(g * nd.tensor(v)))
                        total = term if total is None else total + term
            cur = nd.zeros_like(cur) if total is None else total
            out[k, j] = float(cur)
    return out, vjp1


def _forward_along(f, xs, vs, w):
    """``[D1, ..., D_ORDER]`` of ``phi`` at ``t = 0`` by nested forward mode."""
    def phi(t):
        return paired(f(*(nd.tensor(x) + t * nd.tensor(v) for x, v in zip(xs, vs))), w)

    def d(g):
        return lambda t: jvp(g, (t,), (nd.ones_like(t),))[1]
    out, g = [], phi
    for _ in range(ORDER):
        g = d(g)
        out.append(float(g(nd.tensor(0.0))))
    return out


def _configurations(floats, rng):
    """(label, inputs, directions): every floating input scaled together by 1e-170, 1e-300
    and 1e150, each alone by 1e-170 for several inputs, each input with a zero entry (two for
    a larger one), and with every other entry scaled by 1e-170: products, scans and norms at
    tiny, huge and zero factors."""
    dirs = [rng.standard_normal(a.shape) + (1j * rng.standard_normal(a.shape)
                                            if a.dtype.kind == "c" else 0) for a in floats]
    dirs = [np.asarray(d, dtype=a.dtype) for d, a in zip(dirs, floats)]
    for s in (1e-170, 1e-300, 1e150):
        yield f"all inputs times {s:g}", [a * s for a in floats], [d * s for d in dirs]
    if len(floats) > 1:
        for i in range(len(floats)):
            xs = [a * 1e-170 if j == i else a for j, a in enumerate(floats)]
            vs = [d * 1e-170 if j == i else d for j, d in enumerate(dirs)]
            yield f"input {i} times 1e-170", xs, vs
    for i, a in enumerate(floats):
        if a.size:
            z = a.copy().reshape(-1)
            z[:: max(1, z.size // 2)] = 0
            yield f"zeros in input {i}", [z.reshape(a.shape) if j == i else b
                                          for j, b in enumerate(floats)], dirs
        if a.size > 1:  # tiny and ordinary entries side by side
            m = np.ones(a.size)
            m[::2] = 1e-170
            m = m.reshape(a.shape)
            yield f"every other entry of input {i} times 1e-170", \
                [a * m if j == i else b for j, b in enumerate(floats)], \
                [d * m if j == i else d for j, d in enumerate(dirs)]


def _sweep_along(name, sample):
    """The mismatches of the op's directional derivatives against the references."""
    f = sample.function()
    rng = np.random.default_rng(0)
    floats = [np.asarray(a) for a in sample.floats]
    with nd.no_grad():
        outs = f(*(nd.tensor(a) for a in floats))
    w = [nd.tensor(rng.standard_normal(tuple(o.shape))) if o.dtype.kind in "fc" else None
         for o in outs]
    ts = np.array([0.0] + [s * h for h in STEPS for s in (1, -1)])
    X = ts[None, :]
    bad = []
    for label, xs, vs in _configurations(floats, rng):
        with np.errstate(all="ignore"):
            try:
                D, vjp1 = _along(f, xs, vs, w, ts)
                fwd = _forward_along(f, xs, vs, w)
            except (np.linalg.LinAlgError, ValueError):
                continue  # (not defined there: a singular matrix, a domain check)
        if not np.isfinite(D[0, 0]):
            continue
        for k in range(1, ORDER + 1):
            size = np.zeros(1)
            for j in range(k):
                a = np.abs(D[j])
                size = np.maximum(size, np.max(np.where(np.isfinite(a), a, 0)))
            ref, unc, kind, visible = _reference(X, D[k - 1][None, :], size)
            got = {"nested reverse": D[k, 0], "nested forward": fwd[k - 1]}
            if k == 1:
                got["vjp"] = vjp1
            for how, g in got.items():
                if not _agrees(np.array([g]), ref, unc, kind, visible)[0]:
                    what = {1: f"{ref[0]!r} +- {unc[0]:.3g}", 2: f"{ref[0]:+}inf",
                            3: f"in [{ref[0]!r}, {unc[0]!r}]", 0: "?"}[int(kind[0])]
                    bad.append(f"{name}, {label}: order {k} by {how} is {g!r}, expected {what}")
    return bad


def _linear(name):
    op = entry(name)
    return op.kind in ("shape", "indexing") or getattr(op, "taylor", None) == "linear"


# reductions and scans (products, moments, norms, extrema, log-sum-exp; registered or
# composite) that are not linear; linear algebra has its own sweep below (homogeneity gives
# its references without finite differences of factorizations)
OTHER_OPS = [n for n in ENTRIES if entry(n).kind in (REDUCTION, SCAN) and
             entry(n).differentiable and not _linear(n)]


@pytest.mark.cpu_only("the special points are device independent")
@pytest.mark.parametrize("name", OTHER_OPS)
@settings(max_examples=1, deadline=None)
@given(data=st.data())
def test_reductions_and_scans_along_scaled_and_zero_inputs(name, data):
    """Every differentiable reduction and scan that is not linear (products, moments, norms,
    extrema, log-sum-exp; registered or composite) with its floating inputs scaled by 1e-170,
    1e-300 and 1e150 (together and one at a time) and with zero entries: the first and
    second derivatives of <w, f(x + t v)> along a direction of the same scale, by nested
    reverse and forward mode and the first-order vjp, against finite differences in t of the
    order below (Note [Derivatives at special points])."""
    op = entry(name)
    # (a first draw is often a single element: up to ten, the first with three or more in
    # every floating input, where tiny and ordinary factors meet)
    for _ in range(10):
        sample = draw(data, op, FLOAT, max_side=3, max_dims=2)
        if sample.pos and min(np.size(a) for a in sample.floats) >= 3:
            break
    if not sample.pos:
        pytest.skip(f"{name}: this sample has no floating input")
    _check(name, _sweep_along(name, sample))


def _product_derivatives(x):
    """The Jacobian and Hessian of ``cumprod(x)`` (1-D) from products over index subsets:
    ``d out_k / d x_i = prod_{j <= k, j != i} x_j``, ``d2 out_k / d x_i d x_l`` likewise without
    ``i`` and ``l`` (0 for ``i = l``: each factor appears once). Products of the factors
    themselves, in index order: exact where they do not under- or overflow."""
    n = len(x)
    J, H = np.zeros((n, n)), np.zeros((n, n, n))
    for k in range(n):
        for i in range(k + 1):
            J[k, i] = np.prod([x[j] for j in range(k + 1) if j != i])
            for m in range(k + 1):
                if m != i:
                    H[k, i, m] = np.prod([x[j] for j in range(k + 1) if j not in (i, m)])
    return J, H


@pytest.mark.cpu_only("closed forms at special points")
@pytest.mark.parametrize("x", [[1e-170, 2e-170, 3.0, 0.5], [5e-324, 2.0, 3.0, 4.0],
                               [0.0, 2.0, 1e-170, 3.0], [2.0, 0.0, 0.0, 3.0],
                               [1e-170, 1e150, 2.0, 1e-300], [1.5, -2.0, 0.5, 3.0]])
def test_products_at_tiny_and_zero_factors(x):
    """cumulative_prod (and cumprod, nancumprod, prod, nanprod on it) at tiny, subnormal,
    huge and zero factors: Jacobians by jacrev and jacfwd, Hessians by reverse over reverse
    and forward over forward, and the first two Taylor coefficients along a direction, all
    against products of the factors over index subsets (Note [Products with zeros]). out / x
    lost each derivative whose product underflowed (d prod([1e-170, 2e-170, 3]) / d x_0 =
    6e-170 came out 0, the second derivative 3 in x_0, x_1 came out 0, nan in forward mode,
    inf at 5e-324)."""
    from ndgrad.func import derivatives, hessian, jacfwd, jacrev
    x = np.array(x)
    J, H = _product_derivatives(x)
    t = nd.tensor(x)
    with np.errstate(all="ignore"):
        for name, f in (("cumulative_prod", nd.cumulative_prod), ("cumprod", nd.cumprod),
                        ("nancumprod", nd.nancumprod)):
            for how, jac in (("jacrev", jacrev), ("jacfwd", jacfwd)):
                np.testing.assert_allclose(_np(jac(f)(t)), J, rtol=1e-14, atol=0,
                                           err_msg=f"{name} by {how}")
            for how, hes in (("reverse", jacrev(jacrev(f))), ("forward", jacfwd(jacfwd(f)))):
                np.testing.assert_allclose(_np(hes(t)), H, rtol=1e-14, atol=0,
                                           err_msg=f"{name}'s Hessian by {how}")
        for name, f in (("prod", nd.prod), ("nanprod", nd.nanprod)):
            np.testing.assert_allclose(_np(jacrev(f)(t)), J[-1], rtol=1e-14, atol=0,
                                       err_msg=name)
            np.testing.assert_allclose(_np(hessian(f)(t)), H[-1], rtol=1e-14, atol=0,
                                       err_msg=name)
        v = np.array([0.5, -1.0, 2.0, 1.5])
        _, d1, d2 = derivatives(nd.cumulative_prod, t, 2, nd.tensor(v))
        np.testing.assert_allclose(_np(d1), J @ v, rtol=1e-14, atol=0)
        np.testing.assert_allclose(_np(d2), np.einsum("kim,i,m->k", H, v, v), rtol=1e-14,
                                   atol=0)


@pytest.mark.cpu_only("closed forms at special points")
def test_std_at_tiny_and_huge_spreads():
    """std (and nanstd) of [1, 2, 3] s for s = 1e-170, 1e-300, 1e150, 1: s sqrt(2/3) (NumPy's
    std underflows to 0 at 1e-170 and overflows to inf at 1e200), its gradient (x - mean) /
    (N std), independent of s, by reverse and forward mode, and its Hessian (I - 1/N - u u')
    / (N std) with u = (x - mean) / (sqrt(N) std), scaling as 1/s (0, nan or inf before)."""
    from ndgrad.func import hessian, jacfwd, jacrev
    base = np.array([1.0, 2.0, 3.0])
    for s in (1e-170, 1e-300, 1e150, 1e200, 1.0):
        x = base * s
        std = np.sqrt(2 / 3) * s
        dev = (base - 2.0) / np.sqrt(2 / 3) / 3
        u = (base - 2.0) / np.sqrt(2.0)
        hess = (np.eye(3) - 1 / 3 - np.outer(u, u)) / (3 * np.sqrt(2 / 3)) / s
        for f in (nd.std, nd.nanstd):
            np.testing.assert_allclose(_np(f(nd.tensor(x))), std, rtol=1e-15)
            for jac in (jacrev, jacfwd):
                np.testing.assert_allclose(_np(jac(f)(nd.tensor(x))), dev, rtol=1e-14,
                                           atol=1e-16)
            np.testing.assert_allclose(_np(hessian(f)(nd.tensor(x))), hess, rtol=1e-13,
                                       atol=1e-15 / s)
    # a constant slice: the gradient is 0 (the derivative is infinite), as PyTorch's std
    for f in (nd.std, nd.nanstd):
        assert _np(jacrev(f)(nd.tensor([2e-170, 2e-170, 2e-170]))).tolist() == [0.0] * 3


# ------------------------------------------------------------------ linear algebra
# Linear algebra at extreme scales (Note [Linear algebra at extreme scales] in
# ndgrad/core/ops/solves.py): most of these functions are homogeneous, f(s x) =
# s^k f(x) in some of their inputs (det: k = n, inv and pinv -1, solve -1 in a and 1 in b,
# norms and eigenvalues 1, eigenvectors 0, cholesky 1/2), so their derivatives at s x are
# s^(k-1) (first order) and s^(k-2) (second) times those at x: a reference at extreme scales
# from the op's own derivatives at ordinary ones (which the property suite checks against
# finite differences). The scales are powers of two (multiplying by one is exact), and each
# compared quantity is one whose truth is a normal number.
LINALG_MODULES = ("ndgrad.core.ops.solves", "ndgrad.core.ops.decompositions",
                  "ndgrad.core.ops.contractions", "ndgrad.numpy.linear_algebra")
# the ops of those modules, every op of ndgrad.linalg (linalg.vector_norm is in
# core/ops/reductions.py) and every op the registry declares of kind LINALG wherever it is
# written (corrcoef, cov, kron in numpy/statistics.py and products.py; cond, tensorsolve,
# the polynomials in numpy/linear_algebra.py and polynomials.py; the FFTs): the sweep
# measures which are homogeneous
LINALG_OPS = [n for n in ENTRIES if entry(n).differentiable and
              (entry(n).kind == LINALG or getattr(entry(n), "namespace", None) == "linalg" or
               getattr(getattr(entry(n), "fn", None) or entry(n).forward, "__module__", None)
               in LINALG_MODULES)]
SCALE = 500  # s = 2^+-500, about 1e+-150
# log2 of a compared quantity's largest entry: a normal number, with 2^3 to spare below the
# largest for a value (its sums), 2^23 for a derivative (a rule's intermediates a few times its
# result: lstsq's residuals' jvp of 1e307 meets da / c of 2^1021 times entries of order one)
LOW, HIGH_VALUE, HIGH = -1022, 1020, 1000
RTOL = 1e-7  # normwise: the scaled computation rounds as the unscaled one, but for LAPACK's
# own rescaling of inputs beyond about 1e+-146 (eps times a condition number)


def _mx(a):
    a = np.abs(np.asarray(a))
    return float(a.max()) if a.size else 0.0


def _times_pow2(r, p):
    """``r * 2**p``, exactly for an integer ``p`` wherever the result is a normal number
    (``p`` may be a half-integer: cholesky's k = 1/2, rounded once)."""
    r = np.asarray(r)
    q = math.floor(p)
    f = 2.0 ** (p - q)
    with np.errstate(all="ignore"):
        if r.dtype.kind == "c":
            return np.ldexp(r.real * f, q) + 1j * np.ldexp(r.imag * f, q)
        return np.ldexp(r * f, q)


def _homogeneity(f, floats, S, o):
    """The degree ``k`` (a multiple of 1/2) with ``f(m x_S) = m^k f(x_S)`` for output ``o``
    at m = 1/2, 2 and 4, the inputs in ``S`` scaled, or None: not homogeneous there (a
    logarithm, an exponential, a count), or an output that is 0, not finite or not floating."""
    ys = {}
    with nd.no_grad(), np.errstate(all="ignore"):
        for m in (1.0, 2.0, 4.0, 0.5):
            ys[m] = _np(f(*(nd.tensor(a * m if j in S else a) for j, a in enumerate(floats)))[o])
    y1 = ys[1.0]
    if y1.dtype.kind not in "fc" or not all(np.all(np.isfinite(y)) for y in ys.values()) or \
            _mx(y1) == 0 or not _mx(ys[2.0]) > 0:
        return None
    k = round(2 * math.log2(_mx(ys[2.0]) / _mx(y1))) / 2
    if abs(k) > 8 or any(not _mx(y - m ** k * y1) <= 1e-9 * m ** k * _mx(y1)
                         for m, y in ys.items()):
        return None
    return k


def _unit_random(rng, shape, dtype):
    """Magnitudes in [1/2, 2] with random signs (phases): scaled by a power of two they stay
    normal numbers exactly."""
    r = rng.uniform(0.5, 2.0, shape)
    if np.dtype(dtype).kind == "c":
        return r * np.exp(1j * rng.uniform(-np.pi, np.pi, shape))
    return r * rng.choice([-1.0, 1.0], shape)


def _derivatives(f, xs, S, o, w, v, second):
    """Of output ``o`` at ``xs``: the vjp of ``w`` in every input ("vjp", first order,
    raw formulas), the jvp along ``v`` on the inputs ``S``, and (``second``) the Hessian of
    ``<w, f>`` in ``S`` along ``v`` by reverse over reverse ("hvp") and the second
    directional derivative by forward over forward ("fwdfwd")."""
    res = {}
    leaves = [nd.tensor(x).requires_grad_() for x in xs]
    phi = nd.sum(nd.real(f(*leaves)[o] * nd.tensor(w)))
    gs = nd.autograd.grad(phi, leaves, create_graph=second, allow_unused=True)
    res["vjp"] = [None if g is None else _np(g) for g in gs]

    def g(*moving):
        args = [nd.tensor(x) for x in xs]
        for j, t in zip(S, moving):
            args[j] = t
        return f(*args)[o]
    prim = tuple(nd.tensor(xs[j]) for j in S)
    tan = tuple(nd.tensor(v[j]) for j in S)
    res["jvp"] = _np(jvp(g, prim, tan)[1])
    if second:
        total = None
        for j in S:
            if gs[j] is not None:
                t = nd.sum(nd.real(gs[j] * nd.conj(nd.tensor(v[j]))))
                total = t if total is None else total + t
        res["hvp"] = [None] * len(xs)
        if total is not None and total.requires_grad:
            hs = nd.autograd.grad(total, [leaves[j] for j in S], allow_unused=True)
            for j, h in zip(S, hs):
                res["hvp"][j] = None if h is None else _np(h)
        res["fwdfwd"] = _np(jvp(lambda *m: jvp(g, m, tan)[1], prim, tan)[1])
    return res


def _reordering(ys, yr):
    """Indices ``idx`` with ``ys`` = ``yr`` taken at ``idx`` along the last axis (to RTOL), or
    None: the scaled value is the reference up to an order of its entries (eig's eigenvalues
    and eigenvectors: LAPACK's order is unspecified, and its rescaling of inputs beyond
    1e+-146 may change it)."""
    if ys.shape != yr.shape or not ys.ndim or not ys.size:
        return None
    d = np.abs(ys[..., :, None] - yr[..., None, :])
    idx = np.argmin(d, axis=-1)
    if not np.all(np.sort(idx, axis=-1) == np.arange(ys.shape[-1])):
        return None
    if not _mx(ys - np.take_along_axis(yr, idx, -1)) <= RTOL * _mx(yr):
        return None
    return idx


def _sweep_scaled(name, sample, second_order=True):
    """The mismatches of the op's derivatives at its sample scaled by extreme powers of two
    against the scaled derivatives at the sample, as lines; and what was compared."""
    f = sample.function()
    floats = [np.asarray(a) for a in sample.floats]
    n = len(floats)
    rng = np.random.default_rng(0)
    with nd.no_grad():
        outs = [_np(y) for y in f(*(nd.tensor(a) for a in floats))]
    bad, compared = [], 0
    # each floating input alone, and all together (solve(a, b) is homogeneous of degree 0 in
    # both, cov(x, y) only together)
    for S in [[i] for i in range(n)] + ([list(range(n))] if n > 1 else []):
        for o, y0 in enumerate(outs):
            k = _homogeneity(f, floats, S, o)
            if k is None:
                continue
            w = _unit_random(rng, y0.shape, y0.dtype)
            v = [_unit_random(rng, a.shape, a.dtype) for a in floats]
            with np.errstate(all="ignore"):
                ref0 = _derivatives(f, floats, S, o, w, v, second_order)
            a = np.concatenate([np.abs(floats[j]).ravel() for j in S])
            # 2^+-500; where s^k, s^(k-1) or s^(k-2) would leave the range there, the largest
            # scale that keeps them in it (det of a 3 x 3: 2^+-333); and the sample with its
            # smallest nonzero modulus at the smallest normal number and with its largest at
            # 2^1020 (first order only: a second derivative there multiplies two tangents of
            # that scale before the factor that brings it back, in any composition)
            e0 = min(SCALE, int(1000 // max(abs(k), abs(k - 1), abs(k - 2))))
            scales = [(e, second_order) for e in sorted({SCALE, -SCALE, e0, -e0})]
            lo, hi = (-1022 - math.floor(math.log2(a[a > 0].min())),
                      1020 - math.ceil(math.log2(a.max())))
            scales += [(lo, False), (hi, False)]
            # (first order) where the value is 2^+-1000 and the natural cotangent its inverse
            # (or the inputs at the end of the range): a rule that squares the value meets
            # 2^+-2000 there (reciprocal's g out^2)
            if k:
                scales += [(max(lo, min(hi, int(e // abs(k)))), False) for e in (1000, -1000)]
            size = math.log2(_mx(y0))
            for e, second in scales:
                if not LOW <= size + k * e <= HIGH_VALUE:
                    continue  # the value itself is not a normal number there
                xs = [x * 2.0 ** e if j in S else x for j, x in enumerate(floats)]
                with nd.no_grad(), np.errstate(all="ignore"):
                    ys = _np(f(*(nd.tensor(x) for x in xs))[o])
                if ys.shape != y0.shape:
                    continue  # a value decides the shape, against an absolute threshold, as
                    # NumPy's (polydiv's remainder drops leading entries up to 1e-8): no claim
                yr = _times_pow2(y0, k * e)
                idx = None
                if not _mx(ys - yr) <= RTOL * _mx(yr):
                    idx = _reordering(ys, yr)
                    if idx is None:
                        bad.append(f"{name}, inputs {S} times 2^{e}: the value (output {o}) is "
                                   f"{ys.ravel()[:4]}, expected {yr.ravel()[:4]} (= 2^{k * e} "
                                   "times the value at the sample)")
                        continue
                for how, lc, lt in (("raw", 0, 0), ("natural", -k * e, e)):
                    # raw: a cotangent and tangent of order one; natural: scaled as the value
                    # (<w, f> of order one) and as the input. (A cotangent beyond 2^1000, the
                    # inverse of a tiny value, overflows when it meets factors of order one
                    # before the tiny one, in a composition of any order: multi_dot)
                    if not (-1021 <= lc <= 1000 and -1021 <= lt <= 1022):
                        continue
                    wc = _times_pow2(w, lc)
                    vt = [_times_pow2(b, lt) if j in S else b for j, b in enumerate(v)]
                    with np.errstate(all="ignore"):
                        got = _derivatives(f, xs, S, o, wc, vt, second)
                    ref = ref0
                    if idx is not None:  # the reference of the reordered output
                        wr = np.zeros_like(w)
                        np.put_along_axis(wr, idx, w, -1)
                        with np.errstate(all="ignore"):
                            ref = _derivatives(f, floats, S, o, wr, v, second)
                        for key in ("jvp", "fwdfwd"):
                            if key in ref:
                                ref[key] = np.take_along_axis(ref[key], idx, -1)
                    # quantity, got, reference, its power of two, order, input
                    checks = [(f"vjp in input {j}", got["vjp"][j], ref["vjp"][j],
                               lc + (k - (j in S)) * e, 1, j) for j in range(n)]
                    checks.append(("jvp", got["jvp"], ref["jvp"], lt + (k - 1) * e, 1, None))
                    if second:
                        checks += [(f"hvp in input {j}", got["hvp"][j], ref["hvp"][j],
                                    lc + lt + (k - 2) * e, 2, j) for j in S]
                        checks.append(("fwdfwd", got["fwdfwd"], ref["fwdfwd"],
                                       2 * lt + (k - 2) * e, 2, None))
                    for what, g, r, p, order, j in checks:
                        if g is None and r is None:
                            continue
                        g = np.zeros_like(r) if g is None else g
                        r = np.zeros_like(g) if r is None else r
                        # rounding noise of a reference that is 0 in truth: of the size of
                        # the terms, |f| |w| |v|^(order - 1) / |x|^order at the sample
                        xn = max(_mx(floats[i]) for i in S)
                        noise = 1e-9 * _mx(y0) * (_mx(w) if j is not None else 1.0) * \
                            _mx(v[S[0]]) ** (order - (j is not None)) / xn ** order
                        big = max(_mx(r), noise)
                        if not LOW <= math.log2(big) + p <= HIGH:
                            continue  # the truth is not a normal number: no claim
                        R = _times_pow2(r, p)
                        compared += 1
                        with np.errstate(all="ignore"):
                            err = _mx(g - R)
                        if not err <= RTOL * _mx(R) + _mx(_times_pow2(noise, p)):
                            bad.append(
                                f"{name}, inputs {S} times 2^{e}, {how}: {what} (output {o}, "
                                f"degree {k}) is {np.ravel(g)[:3]}, expected {np.ravel(R)[:3]}"
                                f" (max error {err:.3g} of {_mx(R):.3g})")
    return bad, compared


@pytest.mark.cpu_only("the special points are device independent")
@pytest.mark.parametrize("name, dtype", cases(LINALG_OPS))
@settings(max_examples=1, deadline=None, suppress_health_check=[HealthCheck.filter_too_much],
          phases=[Phase.explicit, Phase.generate])  # (no shrinking: the sample is printed)
@given(data=st.data())
def test_linear_algebra_at_extreme_scales(name, dtype, data):
    """Every differentiable op of the linear-algebra modules (solves, decompositions,
    linalg) and every op of kind LINALG (registered or composite), its sample scaled by
    2^+-500 (about 1e+-150), by the largest power of two that keeps s^k, s^(k-1) and s^(k-2)
    in range, to the smallest normal and largest finite magnitudes, and (first order) where
    the value is 2^+-1000: wherever the op is homogeneous (the degree k
    measured from the op at 1/2, 2 and 4 times the sample, each floating input alone and all
    together; skipped where it is not: a logarithm, an exponential, a count), its value, its
    vjp and jvp with a cotangent and tangent of order one and of the value's and input's
    scale, and its second derivatives (reverse over reverse, forward over forward) at the
    first two scales, against s^k, s^(k-1), s^(k-2) times those at the sample, wherever that
    truth is a normal number (Note [Linear algebra at extreme scales])."""
    op = entry(name)
    sample = draw(data, op, dtype, max_side=3, max_dims=2)
    # (at least 2 x 2 matrices and 2-vectors: a first draw is often 1 x 1, where nothing
    # cancels)
    assume(sample.pos and all(min(np.shape(a)[-2:], default=0) >= 2 for a in sample.floats))
    bad, compared = _sweep_scaled(name, sample)
    if not compared:
        pytest.skip(f"{name}: not homogeneous in its floating inputs at this sample (no "
                    "power of two relates f(2 x) to f(x)): no reference at extreme scales")
    _check(name, bad)


@pytest.mark.cpu_only("the special points are device independent")
@pytest.mark.parametrize("name, dtype", cases(ELEMENTWISE_OPS))
@settings(max_examples=1, deadline=None, suppress_health_check=[HealthCheck.filter_too_much],
          phases=[Phase.explicit, Phase.generate])
@given(data=st.data())
def test_homogeneous_elementwise_ops_at_extreme_scales(name, dtype, data):
    """The linear-algebra sweep for every differentiable elementwise op (registered or
    composite) that is homogeneous in some of its inputs (measured as there: multiply,
    divide, reciprocal, sqrt, hypot, atan2 ...; the others are skipped), on 2 to 9 elements:
    what the special points do not reach, a cotangent of the value's inverse scale and a
    tangent of the input's (divide's gradient in y, formed as g (out / y), was 0 for g =
    2^1018 at y = 2^1018, where it is -3.6e-307)."""
    op = entry(name)
    sample = draw(data, op, dtype, max_side=3, max_dims=2)
    assume(sample.pos and all(np.size(a) >= 2 for a in sample.floats))
    bad, compared = _sweep_scaled(name, sample)
    if not compared:
        pytest.skip(f"{name}: not homogeneous in its floating inputs at this sample (no "
                    "power of two relates f(2 x) to f(x)): no reference at extreme scales")
    _check(name, bad)


def _pinv_formulas(A, G, V):
    """The Golub-Pereyra derivatives of ``P = pinv(A)`` in NumPy (real, constant rank): the
    vjp of ``G`` and the jvp along ``V``."""
    P = np.linalg.pinv(A)
    m, n = A.shape
    Em, En = np.eye(m) - A @ P, np.eye(n) - P @ A
    vjp_ = -P.T @ G @ P.T + Em @ G.T @ P @ P.T + P.T @ P @ G.T @ En
    jvp_ = -P @ V @ P + P @ P.T @ V.T @ Em + En @ V.T @ P.T @ P
    return vjp_, jvp_


@pytest.mark.cpu_only("closed forms at extreme scales")
@pytest.mark.parametrize("shape", ["tall", "wide", "rank 2 of 3", "hermitian"])
def test_pinv_derivatives_at_extreme_scales(shape):
    """pinv's vjp and jvp at a matrix scaled by s = 1e150, 1e-150 (cotangent and tangent of
    order one: s^-2 times those at the matrix) and 1e-170 (scaled as the value and the input:
    1 / s times): the NumPy formulas at the matrix, scaled. The gradient had the wrong sign at
    1e150 (A (P k) with P k of |G| |P|^3 underflowed) and was nan at 1e-150 and 1e-170 (Note
    [Linear algebra at extreme scales])."""
    rng = np.random.default_rng(3)
    A = {"tall": rng.standard_normal((3, 2)), "wide": rng.standard_normal((2, 3)),
         "rank 2 of 3": rng.standard_normal((3, 2)) @ rng.standard_normal((2, 3)),
         "hermitian": np.diag([2.0, -1.5, 0.75]) + 0.1}[shape]
    kw = {"hermitian": True} if shape == "hermitian" else {}
    G = rng.standard_normal(A.T.shape)
    V = rng.standard_normal(A.shape)
    if kw:  # (the Hermitian part is what is pseudo-inverted: symmetric gradient, tangent)
        V = (V + V.T) / 2
    vjp_ref, jvp_ref = _pinv_formulas(A, G, V)
    if kw:
        vjp_ref = (vjp_ref + vjp_ref.T) / 2
    for s, c in ((1e150, 1.0), (1e-150, 1.0), (1e-170, 1e-170)):
        a = nd.tensor(A * s, requires_grad=True)
        (nd.sum(nd.linalg.pinv(a, **kw) * nd.tensor(G * c))).backward()
        np.testing.assert_allclose(_np(a.grad), vjp_ref * c / s / s, rtol=1e-9, atol=0,
                                   err_msg=f"vjp at {s:g}")
        _, t = jvp(lambda x: nd.linalg.pinv(x, **kw), (nd.tensor(A * s),),
                   (nd.tensor(V * c),))
        np.testing.assert_allclose(_np(t), jvp_ref * c / s / s, rtol=1e-9, atol=0,
                                   err_msg=f"jvp at {s:g}")


@pytest.mark.cpu_only("closed forms at extreme scales")
@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_solve_derivatives_at_extreme_scales(upper):
    """cholesky_solve(b, L) with b and L scaled by s = 1e150 and 1e-150 (x = (L L^T)^-1 b is
    then x / s): its gradients in b and L and its jvp in L, s^-2 times the NumPy formulas at
    the unscaled inputs (gL = -tril((gb x^T + x gb^T) L), gb = a^-1 W). The gradient in L was
    0 at 1e150 (gb x^T of |W| |L|^-6 underflowed) and nan at 1e-150."""
    rng = np.random.default_rng(4)
    M = rng.standard_normal((3, 3))
    a = M @ M.T + 3 * np.eye(3)
    low = np.linalg.cholesky(a)
    fac = low.T if upper else low
    b, W, dL = (rng.standard_normal((3, 2)), rng.standard_normal((3, 2)),
                rng.standard_normal((3, 3)))
    x = np.linalg.solve(a, b)
    gb = np.linalg.solve(a, W)
    sym = gb @ x.T + x @ gb.T
    gL = -np.triu(fac @ sym) if upper else -np.tril(sym @ fac)
    d = np.triu(dL) if upper else np.tril(dL)
    da = d.T @ fac + fac.T @ d if upper else d @ fac.T + fac @ d.T
    dx = -np.linalg.solve(a, da @ x)
    for s in (1e150, 1e-150):
        bt = nd.tensor(b * s, requires_grad=True)
        Lt = nd.tensor(fac * s, requires_grad=True)
        nd.sum(nd.linalg.cholesky_solve(bt, Lt, upper=upper) * nd.tensor(W)).backward()
        np.testing.assert_allclose(_np(Lt.grad), gL / s ** 2, rtol=1e-10, atol=0,
                                   err_msg=f"gradient in L at {s:g}")
        np.testing.assert_allclose(_np(bt.grad), gb / s ** 2, rtol=1e-10, atol=0,
                                   err_msg=f"gradient in b at {s:g}")
        bs = nd.tensor(b * s)
        _, t = jvp(lambda f, bs=bs: nd.linalg.cholesky_solve(bs, f, upper=upper),
                   (nd.tensor(fac * s),), (nd.tensor(dL),))
        np.testing.assert_allclose(_np(t), dx / s ** 2, rtol=1e-10, atol=0,
                                   err_msg=f"jvp in L at {s:g}")


def _svd_fixed(a):
    """NumPy's reduced SVD in ndgrad's gauge (the largest entry of each column of U
    positive)."""
    from registry_harness import _svd
    return _svd(a)


@pytest.mark.cpu_only("closed forms at extreme scales")
def test_svd_derivatives_at_extreme_scales():
    """svd's jvp at a matrix scaled to 2^-1016 and 2^1019 along a tangent of its scale (the
    singular vectors' derivatives: central differences of NumPy's SVD at the unscaled
    matrix; S^2 underflowed to equal gaps there, silently wrong, and overflowed to nan), its
    second directional derivative at 2^-500 (2^1000 times second differences; nan before:
    1 / (S_j^2 - S_i^2) differentiated through S^-3), and svdvals' Hessian of <w, S> along
    a direction at 2^-1013 (differences of U diag(w) Vh; 0 before)."""
    rng = np.random.default_rng(5)
    A = rng.standard_normal((4, 3))
    V = rng.standard_normal((4, 3))
    h = 1e-5
    plus, minus, mid = _svd_fixed(A + h * V), _svd_fixed(A - h * V), _svd_fixed(A)
    first = [(p - m) / (2 * h) for p, m in zip(plus, minus)]
    h2 = 1e-4
    p2, m2 = _svd_fixed(A + h2 * V), _svd_fixed(A - h2 * V)
    second = [(p - 2 * c + m) / h2 ** 2 for p, c, m in zip(p2, mid, m2)]
    for e in (-1016, 1019):
        s = 2.0 ** e
        _, (dU, dS, dVh) = jvp(lambda x: tuple(nd.linalg.svd(x)), (nd.tensor(A * s),),
                               (nd.tensor(V * s),))
        for got, ref, what in ((dU, first[0], "U"), (dS, first[1] * s, "S"),
                               (dVh, first[2], "Vh")):
            np.testing.assert_allclose(_np(got), ref, rtol=1e-6, atol=1e-8 * _mx(ref),
                                       err_msg=f"d{what} at 2^{e}")
    s = 2.0 ** -500

    def u_along(t):
        return nd.linalg.svd(nd.tensor(A * s) + t * nd.tensor(V))[0]
    d2 = jvp(lambda t: jvp(u_along, (t,), (nd.tensor(1.0),))[1], (nd.tensor(0.0),),
             (nd.tensor(1.0),))[1]
    np.testing.assert_allclose(_np(d2) * s ** 2, second[0], rtol=1e-4, atol=1e-6)
    # svdvals: the gradient of <w, S> is U diag(w) Vh; its derivative along V, by differences
    w = np.array([0.5, -1.0, 2.0])

    def grad_at(x):
        U, _, Vh = _svd_fixed(x)
        return (U * w) @ Vh
    hvp_ref = (grad_at(A + h * V) - grad_at(A - h * V)) / (2 * h)
    s = 2.0 ** -1013
    x = nd.tensor(A * s, requires_grad=True)
    (g,) = nd.autograd.grad(nd.sum(nd.linalg.svdvals(x) * nd.tensor(w)), x, create_graph=True)
    (hv,) = nd.autograd.grad(nd.sum(g * nd.tensor(V)), x)
    np.testing.assert_allclose(_np(hv) * s, hvp_ref, rtol=1e-6, atol=1e-8 * _mx(hvp_ref))


@pytest.mark.cpu_only("closed forms at extreme scales")
@pytest.mark.parametrize("ord", [3, 0.5, -1.5, 2])
def test_vector_norm_at_tiny_and_huge_values(ord):
    """vector_norm's value s n(x), gradient (x / n) (|x| / n)^(p-2) (independent of s) and
    Hessian (p - 1) (diag((|x| / n)^(p-2)) - w w^T) / n (1 / s times) at x s for s = 1e-150,
    1e150, 2^-1020 and 2^1015: |x|^p under- or overflowed (the norm was 0 or inf, its
    gradient nan or 0), and the Frobenius norm of a matrix of 2^-1021."""
    x = np.array([3.0, -4.0, 12.0, 0.5])
    n = np.sum(np.abs(x) ** ord) ** (1 / ord)
    r = np.abs(x) / n
    wv = np.sign(x) * r ** (ord - 1)
    H = (ord - 1) * (np.diag(r ** (ord - 2)) - np.outer(wv, wv)) / n
    from ndgrad.func import hessian, jacrev
    for s in (1e-150, 1e150, 2.0 ** -1020, 2.0 ** 1015):
        t = nd.tensor(x * s)
        f = lambda v: nd.linalg.vector_norm(v, ord=ord)  # noqa: E731
        np.testing.assert_allclose(_np(f(t)), n * s, rtol=1e-13, err_msg=f"value at {s:g}")
        np.testing.assert_allclose(_np(jacrev(f)(t)), wv, rtol=1e-12, atol=0,
                                   err_msg=f"gradient at {s:g}")
        if 1e-300 < s < 1e300:  # (the Hessian, 1 / s, is a normal number)
            np.testing.assert_allclose(_np(hessian(f)(t)) * s, H, rtol=1e-12, atol=1e-15,
                                       err_msg=f"Hessian at {s:g}")
    m = np.array([[0.5, 1.25], [-0.75, 1.0]]) * 2.0 ** -1021
    fro = nd.tensor(m, requires_grad=True)
    nd.linalg.norm(fro).backward()
    np.testing.assert_allclose(_np(nd.linalg.norm(nd.tensor(m))),
                               np.linalg.norm(m * 2.0 ** 1021) * 2.0 ** -1021, rtol=1e-15)
    np.testing.assert_allclose(_np(fro.grad), m / np.linalg.norm(m * 2.0 ** 1021)
                               * 2.0 ** 1021, rtol=1e-14)


@pytest.mark.cpu_only("closed forms at extreme scales")
def test_lstsq_derivatives_at_huge_scales():
    """lstsq's solution and residuals with a and b scaled by 2^500 (solution of degree 0,
    residuals of degree 2): the second directional derivative along a tangent of order one is
    2^-1000 (residuals: 1) times second differences of NumPy's lstsq at the unscaled inputs
    (pinv(a) b's second derivative passed through |a|^-3: nan); and the solution's jvp with a
    wide a and b at 2^1018 along tangents of their scale, central differences (pinv(a) db
    overflowed: inf)."""
    rng = np.random.default_rng(6)
    A, b = rng.standard_normal((4, 2)), rng.standard_normal(4)
    V, u = rng.standard_normal((4, 2)), rng.standard_normal(4)
    h = 1e-4

    def at(t, A=A, b=b, V=V, u=u):
        x, res, _, _ = np.linalg.lstsq(A + t * V, b + t * u, rcond=None)
        return x, res
    ref = [(p - 2 * c + m) / h ** 2 for p, c, m in zip(at(h), at(0.0), at(-h))]
    s = 2.0 ** 500
    for o, scale in ((0, s ** -2), (1, 1.0)):
        def along(t, o=o):
            return nd.linalg.lstsq(nd.tensor(A * s) + t * nd.tensor(V),
                                   nd.tensor(b * s) + t * nd.tensor(u))[o]
        d2 = jvp(lambda t: jvp(along, (t,), (nd.tensor(1.0),))[1], (nd.tensor(0.0),),
                 (nd.tensor(1.0),))[1]
        np.testing.assert_allclose(_np(d2), ref[o] * scale, rtol=1e-5,
                                   atol=1e-7 * _mx(ref[o]) * scale, err_msg=f"output {o}")
    # (a solution of 40, so pinv(a) b at a and b of 2^1018 is 40 times 2^1018 in units of a)
    W, w = np.array([[1.0, 0.5, 0.25], [1.0, 0.625, 0.25]]), np.array([3.0, -2.0])
    Vw, uw = np.array([[0.5, -1.0, 2.0], [1.5, 0.75, -0.5]]), np.array([1.0, 0.5])
    ref = (at(1e-6, W, w, Vw, uw)[0] - at(-1e-6, W, w, Vw, uw)[0]) / 2e-6
    s = 2.0 ** 1018
    _, d1 = jvp(lambda a, c: nd.linalg.lstsq(a, c)[0], (nd.tensor(W * s), nd.tensor(w * s)),
                (nd.tensor(Vw * s), nd.tensor(uw * s)))
    np.testing.assert_allclose(_np(d1), ref, rtol=1e-7, atol=0)


@pytest.mark.cpu_only("closed forms at extreme scales")
def test_divide_and_reciprocal_with_cotangents_of_inverse_scale():
    """x / y's gradient in y, -g x / y^2, with a cotangent of the value's inverse scale:
    -2^-1018 at x = 1, y = g = 2^1018 (it was 0: out / y underflowed), its Hessian-vector
    product in y (2 g x v / y^3) at y of 2^+-500 with g and v of y's scale (inf, and half the
    truth, before); reciprocal's gradient and jvp at 2^+-600 with g and t of 2^+-600 (g out^2
    under- and overflowed)."""
    x, m = np.array([1.0, -3.0]), np.array([1.0, -1.5])
    for e in (1018, -1018):
        y = nd.tensor(m * 2.0 ** e, requires_grad=True)
        (gy,) = nd.autograd.grad(nd.tensor(x) / y, y, nd.tensor(np.full(2, 2.0 ** e)))
        np.testing.assert_allclose(_np(gy), np.ldexp(-x / m ** 2, -e), rtol=1e-15)
    v = np.array([0.5, 2.0])
    for e in (500, -500):
        y = nd.tensor(m * 2.0 ** e, requires_grad=True)
        (gy,) = nd.autograd.grad(nd.tensor(x) / y, y, nd.tensor(np.full(2, 2.0 ** e)),
                                 create_graph=True)
        (hv,) = nd.autograd.grad(nd.sum(gy * nd.tensor(v * 2.0 ** e)), y)
        np.testing.assert_allclose(_np(hv), np.ldexp(2 * x * v / m ** 3, -e), rtol=1e-15)
    for e in (600, -600):
        t = nd.tensor(m * 2.0 ** e, requires_grad=True)
        (g,) = nd.autograd.grad(nd.reciprocal(t), t, nd.tensor(np.full(2, 2.0 ** e)))
        np.testing.assert_allclose(_np(g), np.ldexp(-1 / m ** 2, -e), rtol=1e-15)
        _, d = jvp(nd.reciprocal, (nd.tensor(m * 2.0 ** e),), (nd.tensor(v * 2.0 ** e),))
        np.testing.assert_allclose(_np(d), np.ldexp(-v / m ** 2, -e), rtol=1e-15)


@pytest.mark.cpu_only("closed forms at extreme scales")
def test_corrcoef_and_cond_at_extreme_scales():
    """corrcoef of variables at 2^1019 and 2^-1021 (together, and one of each) is NumPy's at
    the unscaled data (it was nan: cov's squares over- and underflowed), and its Hessian
    along a direction of order one with the data at 2^+-500 (reverse over reverse) is
    2^-+1000 times second differences of NumPy's corrcoef (nan and wrong); cond's ('fro',
    and the 2-norm's) second directional derivative at 2^500 is 2^-1000 times second
    differences of NumPy's cond (for 'fro' it was 1/70 of that), its jvp at 2^1019 2^-1019
    times central differences (1/8 for 'fro')."""
    rng = np.random.default_rng(7)
    X, V = rng.standard_normal((2, 5)), rng.standard_normal((2, 5))
    ref = np.corrcoef(X)
    for s in ([2.0 ** 1019] * 2, [2.0 ** -1021] * 2, [2.0 ** 1019, 2.0 ** -1021]):
        Xs = X * np.array(s)[:, None]
        np.testing.assert_allclose(_np(nd.corrcoef(nd.tensor(Xs))), ref, rtol=1e-13)
        np.testing.assert_allclose(_np(nd.corrcoef(nd.tensor(Xs.T), rowvar=False)), ref,
                                   rtol=1e-13)
    h = 1e-4

    def second(f, A, D, h=h):
        return (f(A + h * D) - 2 * f(A) + f(A - h * D)) / h ** 2

    def d2(f, A, D):
        return _np(jvp(lambda a: jvp(f, (a,), (nd.tensor(D),))[1], (nd.tensor(A),),
                       (nd.tensor(D),))[1])
    W = rng.standard_normal((2, 2))
    ref = second(lambda a: np.sum(W * np.corrcoef(a)), X, V)
    for e in (500, -500):  # <v, H v> of <W, corrcoef>, by reverse over reverse
        x = nd.tensor(X * 2.0 ** e, requires_grad=True)
        (g,) = nd.autograd.grad(nd.sum(nd.tensor(W) * nd.corrcoef(x)), x, create_graph=True)
        (hv,) = nd.autograd.grad(nd.sum(g * nd.tensor(V)), x)
        np.testing.assert_allclose(np.sum(_np(hv) * V) * 2.0 ** (2 * e), ref, rtol=1e-5)
    A, D = rng.standard_normal((3, 3)), rng.standard_normal((3, 3))
    for p in ("fro", None):
        def cond(a, p=p):
            return nd.linalg.cond(a, p)
        ref = second(lambda a, p=p: np.linalg.cond(a, p), A, D)
        np.testing.assert_allclose(d2(cond, A * 2.0 ** 500, D) * 2.0 ** 1000, ref, rtol=1e-5,
                                   err_msg=f"p={p}")
        ref = (np.linalg.cond(A + 1e-6 * D, p) - np.linalg.cond(A - 1e-6 * D, p)) / 2e-6
        _, d1 = jvp(cond, (nd.tensor(A * 2.0 ** 1019),), (nd.tensor(D),))
        np.testing.assert_allclose(_np(d1) * 2.0 ** 1019, ref, rtol=1e-7, err_msg=f"p={p}")


@pytest.mark.cpu_only("closed forms at extreme scales")
def test_polydiv_derivatives_at_extreme_scales():
    """polydiv in units of powers of two near max |u| and max |v|: with u and v at 2^500 the
    second directional derivatives of the quotient and the remainder along a tangent of v of
    order one are 2^-1000 and 2^-500 times second differences of NumPy's polydiv at the
    unscaled coefficients (they were 40-75 % of that: 1 / v[0] twice differentiated passes
    through v[0]^-3), the quotient's jvp at 2^1019 is 2^-1019 times central differences, and
    at 2^1000 the remainder's gradient in v (of degree 0) is that at the unscaled u, v (it
    was inf)."""
    rng = np.random.default_rng(11)
    u, v, t = rng.standard_normal(5), rng.standard_normal(3), rng.standard_normal(3)
    h = 1e-4

    def np_part(k, vv):
        return np.polydiv(u, vv)[k]

    for k, power in ((0, 2), (1, 1)):  # quotient: s^-2, remainder: s^-1
        ref = (np_part(k, v + h * t) - 2 * np_part(k, v) + np_part(k, v - h * t)) / h ** 2

        def part(vv, k=k):
            return nd.polydiv(nd.tensor(u * 2.0 ** 500), vv)[k]

        d2 = jvp(lambda vv, part=part: jvp(part, (vv,), (nd.tensor(t),))[1],
                 (nd.tensor(v * 2.0 ** 500),), (nd.tensor(t),))[1]
        np.testing.assert_allclose(_np(d2) * 2.0 ** (500 * power), ref, rtol=1e-5, atol=1e-9)
    ref = (np_part(0, v + 1e-6 * t) - np_part(0, v - 1e-6 * t)) / 2e-6
    _, d1 = jvp(lambda vv: nd.polydiv(nd.tensor(u * 2.0 ** 1019), vv)[0],
                (nd.tensor(v * 2.0 ** 1019),), (nd.tensor(t),))
    np.testing.assert_allclose(_np(d1) * 2.0 ** 1019, ref, rtol=1e-7)
    g = rng.standard_normal(2)
    ref = [np.sum(g * (np_part(1, v + 1e-6 * e) - np_part(1, v - 1e-6 * e))) / 2e-6
           for e in np.eye(3)]
    vt = nd.tensor(v * 2.0 ** 1000, requires_grad=True)
    (gv,) = nd.autograd.grad(nd.sum(nd.tensor(g) * nd.polydiv(nd.tensor(u * 2.0 ** 1000),
                                                              vt)[1]), vt)
    np.testing.assert_allclose(_np(gv), ref, rtol=1e-7)


@pytest.mark.cpu_only("closed forms at extreme scales")
def test_solve_at_the_ends_of_the_range():
    """linalg.solve(s a, s b) is solve(a, b): with every entry of a random 3 x 3 system
    between 2^-1022 and 2^-1020 (complex and real), and at 2^1021, the solution is NumPy's of
    the unscaled system (NumPy's own solve there was wrong in the first digit, or inf), and
    at 2^-1021 the gradient in b (solve(a^H, g), of scale 2^1021) is 2^1021 times NumPy's
    at the unscaled system."""
    rng = np.random.default_rng(3)
    for dtype in ("complex128", "float64"):
        for _ in range(100):
            a, b = (rng.uniform(1.0, 2.0, size=s) * rng.choice([-1.0, 1.0], size=s)
                    for s in ((3, 3), (3, 2)))
            if dtype == "complex128":
                a = a * np.exp(1j * rng.uniform(-3.1, 3.1, size=(3, 3)))
                b = b * np.exp(1j * rng.uniform(-3.1, 3.1, size=(3, 2)))
            x = np.linalg.solve(a, b)
            err = np.linalg.cond(a) * 1e-14
            for e in (-1021, 1021):
                got = _np(nd.linalg.solve(nd.tensor(a * 2.0 ** e), nd.tensor(b * 2.0 ** e)))
                np.testing.assert_allclose(got, x, rtol=err, atol=err * np.abs(x).max(),
                                           err_msg=f"{dtype} at 2^{e}")
        g = rng.standard_normal((3, 2))
        bt = nd.tensor(b * 2.0 ** -1021, requires_grad=True)
        (gb,) = nd.autograd.grad(nd.real(nd.sum(nd.tensor(g) * nd.linalg.solve(
            nd.tensor(a * 2.0 ** -1021), bt))), bt)
        ref = np.linalg.solve(a.conj().T, g)
        np.testing.assert_allclose(_np(gb) * 2.0 ** -1021, ref, rtol=err)
