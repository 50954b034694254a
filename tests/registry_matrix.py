"""The registry matrix: every registered op and composite, in every dtype it takes, against
every check that applies to it, with its samples drawn and its references computed once.

Note [The registry matrix]
~~~~~~~~~~~~~~~~~~~~~~~~~~
The registry suites are one matrix, op x check. Its rows are the (op, dtype) pairs of
``REGISTRY`` and ``COMPOSITES`` (complex128 too where ``op.domain.complex``; never a hand
list); its columns are the check FAMILIES, each a test function parametrized by the rows it
applies to (``@family``):

=========================  ===================================  ==============================
family (module)            what it compares                     with what
=========================  ===================================  ==============================
forward (properties)       the values                           NumPy / SciPy
records_nothing (prop.)    a non-differentiable op's outputs    no grad, no tangent
vjp (properties)           every row of the Jacobian by vjps    the FD Jacobian
create_graph (prop.)       the vjp rules run on Tensors         the raw vjp, exactly
second_order (prop.)       every row of the Hessian of s        the FD Hessian of s
jvp (properties)           the raw jvp rule and dual numbers    the FD Jacobian
scatter, piecewise_...     view write-back, zero derivatives    inverses, finite differences
first_order, pullback,     the transforms of ndgrad.func, one   the FD Jacobian and Hessian,
second_order_compositions, at a time and composed two and       the loop over the batch
batched_compositions       three deep (compositions)
vmap, vmap_of_vjp,         vmap against the loop (batching)     the op per element
nested_vmap
taylor (test_taylor)       jet to order 4                       nested forward mode
taylor_special_points,     jet at special points / zeros        nested reverse mode
taylor_zero_inputs
device (test_op_matrix)    forward, vjp and jvp on the CUDA     the CPU's, to rounding
                           backend (emulated without a GPU)
python_inputs (python_...) lists of tensors, Python numbers     the stacked tensor, NumPy
compile (test_op_compile)  compile(f), of grad(s), of jvp(F)    eager ndgrad, to rounding
=========================  ===================================  ==============================

(``s(x) = sum_k re <w_k, F_k(x)>`` with fixed random weights ``w``; FD: central
differences, :class:`support.Linearization`.) Other registry sweeps stay outside the matrix,
each with its own samples: Dask (tests/test_dask.py), the rules at special points and
extreme scales (tests/test_rules_at_special_points.py), gradcheck's modes
(tests/checks/test_gradcheck.py), saved tensors (tests/core/test_saved_tensors.py).

Which families apply to an op is decided at collection, from its declaration (its kind,
``differentiable``, its ``notes`` exceptions, primitive or composite, ``view``, ...): a
check that cannot apply is not collected, and ``test_declared_exceptions`` prints the
declared exceptions. A collected case fails if it finds no sample to check (nothing passes by
checking nothing), and ``test_every_op_reaches_every_check_that_applies`` compares what was
collected with the registry.

The samples of an (op, dtype) (its :class:`Bank`) are drawn once per process by a
derandomized hypothesis run that records what ``registry_harness.draw`` returns (the
profile's ``derandomize``: the ``ci`` profile draws the same samples on every run;
``HYPOTHESIS_PROFILE=dev`` draws twice as many, at random): ``WIDE`` samples at the usual
sizes (at most 3 dimensions of at most 4 elements) and ``SMALL`` ones (at most 2 of at most
3), on which the costly references (full Hessians, per-element batches) are computed. Each
sample's references are computed once, on the CPU, when a check first asks (the FD Jacobian,
the FD Hessian of s, the loop over a batch ...), and every family reads them. First-order
derivatives are compared with finite differences once per sample (the vjp and jvp
families, every sample); the compositions compare with the same references. The costliest
families (second-order and batched compositions, Taylor mode) check the first ``COMPOSED``
(3) small samples, and the first-order compositions and the pullback four (two small, two
wide): as many examples as those suites drew before the matrix.

Every case of one (op, dtype) carries ``xdist_group`` (op-dtype), so pytest-xdist
(``--dist loadgroup``) runs them in one process, and tests/conftest.py orders them one after
another, so the bank is built once; a few banks are kept (:data:`KEEP`).
"""

from __future__ import annotations

import contextlib
import functools
import importlib
from collections import OrderedDict

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, reject, settings
from hypothesis import strategies as st
from hypothesis.errors import Unsatisfiable

import ndgrad
import ndgrad.forward_ad as fwAD
from ndgrad.core.ops import COMPOSITES, REGISTRY
from registry_harness import ENTRIES, Sample, checked_for, draw, dtypes, entry, tensor
from support import Linearization, fd_directional, host, random_like

# ------------------------------------------------------------------------------ the samples
SIZES = {"max_side": 4, "max_dims": 3}   # the wide samples
SMALL = {"max_side": 3, "max_dims": 2}   # the small ones (full Hessians, batches)
# samples per (op, dtype) in the ci profile (its max_examples is 25); the profile scales them
WIDE = {"primitive": 8, "composite": 5}
SMALL_N = {"primitive": 4, "composite": 3}
KEEP = 3  # banks kept per process (an (op, dtype)'s cases run one after another)
# the small samples the costliest families check (second-order and batched compositions,
# Taylor mode): 3, as many examples as those suites drew before the matrix
COMPOSED = 3


def _scaled(n):
    """``n`` (a count for the ci profile's 25 examples) for the loaded profile: dev (50)
    draws twice as many, quick (5) one."""
    return max(1, round(n * settings().max_examples / 25))


@contextlib.contextmanager
def on_cpu():
    """ndgrad's default device is the CPU inside (references are computed there, whatever
    device the check runs on)."""
    previous = ndgrad.get_default_device()
    ndgrad.set_default_device("cpu")
    try:
        yield
    finally:
        ndgrad.set_default_device(previous)


def draw_samples(op, dtype, n, sizes, need_floats):
    """``n`` samples of ``op`` drawn by one hypothesis run (derandomized in the ci profile),
    in the order hypothesis draws them (the first is the simplest). ``need_floats``: count
    only samples with a floating input (the others are kept too, after the count)."""
    got = []

    def build(data):
        sample = draw(data, op, dtype, **sizes)
        got.append(sample)
        if need_floats and not sample.pos:
            reject()  # (hypothesis draws another; this one is kept)
    build._hypothesis_internal_add_digest = f"{op.qualname}-{dtype}-{sizes}".encode()
    run = given(st.data())(settings(max_examples=n, phases=[Phase.generate], database=None,
                                    deadline=None, suppress_health_check=list(HealthCheck),
                                    print_blob=False)(build))
    with on_cpu():
        try:
            run()
        except Unsatisfiable:  # (fewer than n with a floating input: those drawn are kept)
            pass
    assert got, f"{op.qualname} ({dtype}): no sample could be drawn"
    return got


# ---------------------------------------------------------------------------- the references
def pair(ws, ys):
    """``sum_k re <w_k, y_k>`` (``w_k`` NumPy constants, ``y_k`` Tensors), a real scalar."""
    total = None
    for w, y in zip(ws, ys, strict=True):
        w = tensor(np.asarray(w, dtype=y.dtype))
        t = ndgrad.sum(ndgrad.conj(w) * y)
        t = ndgrad.real(t) if y.dtype.kind == "c" else t
        total = t if total is None else total + t
    return total


class Entry:
    """One sample of a bank and its references, each computed on the CPU when first asked.

    ``x``: the floating inputs; ``outs``: the floating outputs (NumPy); ``w``, ``c``, ``dc``
    (output-shaped) and ``v``, ``u`` (input-shaped): fixed random weights, cotangents and
    tangents (seeded by the sample's index)."""

    def __init__(self, sample, index, kind):
        self.sample = sample
        self.index = index
        self.kind = kind  # "wide" or "small"
        self.x = [np.asarray(x) for x in sample.floats]
        self.n = len(self.x)
        self.argnums = tuple(range(self.n))
        self.F = sample.function(floating_outputs=True)

    def __repr__(self):
        return f"{self.kind} sample {self.index}: {self.sample!r}"

    @functools.cached_property
    def outs(self):
        """The floating outputs at x (NumPy), or None where the op raises there."""
        with on_cpu(), np.errstate(all="ignore"):
            try:
                return self.sample.evaluate(self.x)
            except Exception:  # noqa: BLE001 - a sample the op refuses: no derivatives
                return None

    @functools.cached_property
    def differentiable(self):
        """Whether derivatives are checked on this sample: a floating input and output, and
        finite outputs."""
        return bool(self.sample.pos) and bool(self.outs) and \
            all(np.all(np.isfinite(o)) for o in self.outs)

    @functools.cached_property
    def _rng_draws(self):
        rng = np.random.default_rng(self.index)
        outs = self.outs or ()
        return ([random_like(rng, o) for o in outs], [random_like(rng, o) for o in outs],
                [random_like(rng, o) for o in outs], [random_like(rng, x) for x in self.x],
                [random_like(rng, x) for x in self.x])

    w = property(lambda self: self._rng_draws[0])   # weights of s
    c = property(lambda self: self._rng_draws[1])   # a cotangent
    dc = property(lambda self: self._rng_draws[2])  # a tangent of the cotangent
    v = property(lambda self: self._rng_draws[3])   # input tangents
    u = property(lambda self: self._rng_draws[4])

    # the functions under test
    def s(self, *xs):
        return pair(self.w, self.F(*xs))

    def xs(self):
        """The floating inputs as Tensors on the default device."""
        return [tensor(x) for x in self.x]

    @functools.cached_property
    def lin(self):
        """The first-order derivative of F at x by central differences (the reference of
        every first-order check)."""
        with on_cpu():
            return Linearization(self.sample.evaluate, self.x)

    def gradient(self, xs, ws):
        """The gradient of ``re <ws, F>`` at the arrays ``xs`` by first-order reverse mode on
        the CPU (no create_graph; checked against finite differences by the vjp family)."""
        with on_cpu():
            leaves = [tensor(np.asarray(x), requires_grad=True) for x in xs]
            with ndgrad.enable_grad():
                y = pair(ws, self.F(*leaves))
                g = ndgrad.autograd.grad(y, leaves, allow_unused=True, materialize_grads=True)
            return tuple(host(t) for t in g)

    @functools.cached_property
    def hessian(self):
        """The derivative of the gradient of s at x: central differences of the first-order
        gradient."""
        return Linearization(lambda xs: self.gradient(xs, self.w), self.x)

    def hvp(self, ws, v):
        """The derivative of the gradient of ``re <ws, F>`` along ``v`` (central
        differences)."""
        key = (id(ws), id(v))
        cache = self.__dict__.setdefault("_hvp", {})
        if key not in cache:
            cache[key] = (ws, v, fd_directional(lambda xs: self.gradient(xs, ws), self.x, v))
        return cache[key][2]

    def first_order_jvp(self, xs, v):
        """F's tangent at the arrays ``xs`` along ``v`` by one level of forward_ad, on the
        CPU."""
        with on_cpu(), fwAD.dual_level():
            duals = [fwAD.make_dual(tensor(np.asarray(x)), tensor(t)) for x, t in zip(xs, v)]
            outs = self.F(*duals)
            return tuple(host(fwAD.unpack_dual(o).tangent) if fwAD.unpack_dual(o).tangent
                         is not None else np.zeros(o.shape, o.dtype) for o in outs)

    @functools.cached_property
    def batch(self):
        """The batch of the batched compositions (:class:`Batch`), or None where an element
        leaves the op's domain."""
        b = Batch(self)
        return b if b.ok else None

    def at(self, floats):
        """An Entry of the same sample at other floating inputs (same weights)."""
        other = Entry.__new__(Entry)
        other.__dict__.update({k: v for k, v in self.__dict__.items()
                               if k in ("sample", "index", "kind", "n", "argnums", "F",
                                        "_rng_draws")})
        other.x = [np.asarray(f) for f in floats]
        return other


BATCH = 2


class Batch:
    """``BATCH`` elements of an entry's floating inputs (``x * (1 + 0.03 b)``; the other
    inputs are shared) with per-element tangents and cotangents, and per-element references
    (an Entry each)."""

    def __init__(self, entry):
        self.case = entry
        self.sample = entry.sample
        self.elements, per_element = [], []
        self.ok = True
        with on_cpu(), np.errstate(all="ignore"):
            for b in range(BATCH):
                floats = [x * (1.0 + 0.03 * b) for x in entry.x]
                outs = entry.sample.evaluate(floats)
                if not all(np.all(np.isfinite(o)) for o in outs):
                    self.ok = False
                    return
                self.elements.append(floats)
                per_element.append(list(outs))
        self.outs = self.stacked(per_element)  # the outputs, by the loop
        rng = np.random.default_rng(1)
        self.v = [np.stack([random_like(rng, x) for _ in range(BATCH)]) for x in entry.x]
        self.c = [np.stack([random_like(rng, o) for _ in range(BATCH)]) for o in entry.outs]
        self.a = rng.standard_normal(BATCH)
        self.cases = [entry] + [entry.at(floats) for floats in self.elements[1:]]

    def xs(self):
        return [tensor(np.stack([e[i] for e in self.elements])) for i in range(self.case.n)]

    def stacked(self, per):
        """Stack per-element results (lists of arrays, nested alike) on a new first axis."""
        if isinstance(per[0], (list, tuple)):
            return [self.stacked([p[k] for p in per]) for k in range(len(per[0]))]
        return np.stack(per)


# ------------------------------------------------------------------------------------ banks
class Bank:
    """The samples of one (op, dtype) with their references (:class:`Entry`): ``wide`` and
    ``small`` ones (Note [The registry matrix])."""

    def __init__(self, op, dtype, wide=None, small=None):
        self.op, self.dtype = op, dtype
        self.name = op.qualname
        kind = "composite" if op.qualname in COMPOSITES and \
            COMPOSITES[op.qualname] is op else "primitive"
        need = bool(op.differentiable)
        if wide is None:
            wide = draw_samples(op, dtype, _scaled(WIDE[kind]), SIZES, need)
        if small is None:
            small = draw_samples(op, dtype, _scaled(SMALL_N[kind]), SMALL, need)
        self.wide = [Entry(s, i, "wide") for i, s in enumerate(wide)]
        self.small = [Entry(s, i, "small") for i, s in enumerate(small)]

    @classmethod
    def of(cls, op, *args, dtype="float64", kwargs=None, small=True):
        """A bank of one fixed sample (``args``, ``kwargs``) of ``op``, wide and (if
        ``small``) small: for the tests that run a family on an op with wrong rules."""
        sample = Sample(op, args, kwargs or {})
        return cls(op, dtype, wide=[sample], small=[sample] if small else [])

    @property
    def entries(self):
        return self.wide + self.small

    def differentiable(self, which="all"):
        """The entries derivatives are checked on (a floating input and output, finite
        outputs): ``"all"``, ``"wide"``, ``"small"`` or ``"composed"`` (the first
        :data:`COMPOSED` small ones)."""
        pool = {"all": self.entries, "wide": self.wide, "small": self.small,
                "composed": self.small}[which]
        found = [e for e in pool if e.differentiable]
        return found[:COMPOSED] if which == "composed" else found


_BANKS = OrderedDict()


def bank(name, dtype):
    """The bank of ``(name, dtype)``, drawn on first use; the last :data:`KEEP` are kept."""
    key = (name, dtype)
    b = _BANKS.get(key)
    if b is None:
        b = _BANKS[key] = Bank(entry(name), dtype)
        while len(_BANKS) > KEEP:
            _BANKS.popitem(last=False)
    else:
        _BANKS.move_to_end(key)
    return b


# ---------------------------------------------------------------------------------- running
def each(entries, checks, what, least=1):
    """Run every check (a callable, or a list of them) on every entry; fail naming each
    sample that failed and, per sample, each check that failed and why (all are run; an
    error is a failure of that check). Fewer than ``least`` entries fail too: a family
    that checks nothing fails."""
    checks = list(checks) if isinstance(checks, (list, tuple)) else [checks]
    assert len(entries) >= least, \
        f"{what}: {len(entries)} samples to check, at least {least} needed (the bank's " \
        "samples have no floating input or output, or non-finite outputs)"
    failures = []
    for e in entries:
        failed = failed_checks(checks, e)
        if failed:
            head = f"on the {e!r}" + (f"\n{len(failed)} of {len(checks)} checks failed"
                                      if len(checks) > 1 else "")
            failures.append(head + "\n\n" + "\n\n".join(failed))
    if failures:
        shown = failures[:SHOWN]
        if len(failures) > SHOWN:
            shown.append(f"(and {len(failures) - SHOWN} more samples)")
        pytest.fail(f"{what}: {len(failures)} of {len(entries)} samples failed\n\n"
                    + "\n\n".join(shown), pytrace=False)


SHOWN = 3  # failed samples shown in full


def failed_checks(checks, subject):
    """Run every check on ``subject``: the failures, each ``"name: why"`` (the name only
    where there are several checks)."""
    failed = []
    for check in checks:
        name = f"{check.__name__}: " if len(checks) > 1 else ""
        try:
            check(subject)
        except AssertionError as exc:
            failed.append(f"{name}{str(exc).strip()}")
        except Exception as exc:  # noqa: BLE001
            failed.append(f"{name}raised {type(exc).__name__}: {exc}")
    return failed


# --------------------------------------------------------------------------------- families
def notes(op):
    return set(getattr(op, "notes", None) or {})


def is_primitive(name):
    return name in REGISTRY


def differentiable_without(*keys):
    """The family applies to differentiable ops that declare none of the exceptions
    ``keys`` (``"vjp"``, ``"jvp"``, ``"gradgrad"``, ``"fd"``)."""
    def applies(name, op, dtype):
        return checked_for(op, *keys)
    applies.keys = keys
    return applies


def every_op(name, op, dtype):
    return True


FAMILIES = {}  # name -> the family's test function (in the order they are declared)


def family(name, applies=every_op, devices=None):
    """Make ``fn(bank)`` the test of the family ``name``: parametrized by the (op, dtype)
    rows ``applies(name, op, dtype)`` accepts, on the CPU (and, with ``--slow``, on the
    CUDA backend), each case in its (op, dtype)'s xdist group; ``devices``: the family's own
    devices (the device family: :data:`GPU`)."""
    def decorate(fn):
        on = devices if devices is not None else ["cpu"] + (GPU if SLOW else [])
        params = []
        for op_name in ENTRIES:
            op = entry(op_name)
            for dt in dtypes(op):
                if not applies(op_name, op, dt):
                    continue
                # (an op whose samples name a device, to_device, declares notes["devices"]:
                # its samples are drawn on the CPU, so they run there only)
                for dev in on_devices(op, on):
                    params.append(pytest.param(
                        (op_name, dt), dev,
                        id=f"{op_name}-{dt}" + ("" if dev == "cpu" else f"-{dev}"),
                        marks=[pytest.mark.xdist_group(f"{op_name}-{dt}"),
                               pytest.mark.matrix(name, op_name, dt, dev)]))
        fn = pytest.mark.parametrize("bank, device", params, indirect=True)(fn)
        fn.family = name
        fn.devices = on
        fn.applies = applies
        FAMILIES[name] = fn
        return fn
    return decorate


# what the session collected of the matrix (tests/conftest.py, at collection): {"cases":
# {(family, op, dtype, device)}, "modules": {file names}}, for
# test_every_op_reaches_every_check_that_applies
COLLECTED = pytest.StashKey[dict]()

def on_devices(op, devices):
    """The devices of a family's ``devices`` that ``op``'s cases run on: all of them, or the
    CPU alone for an op that declares notes["devices"] (its samples name a device)."""
    return [d for d in devices if d == "cpu"] if "devices" in notes(op) else list(devices)


# set by tests/conftest.py (pytest_configure), before the test modules are collected
SLOW = False  # --slow: every family on the CUDA backend too
GPU = []      # the CUDA backend's devices this session ("cuda" or "emulated", or none)


# ------------------------------------------------------------------- Jacobians, as gradcheck
def gradcheck_D(lin):
    """A :class:`support.Linearization`'s derivatives in gradcheck's layout: ``D[j][i]`` of
    shape (output j's size, input i's size, parts), part 1 the imaginary direction."""
    D = []
    for Dk, o in zip(lin.D, lin.outs):
        row = []
        for (re, im), x in zip(Dk, lin.xs):
            parts = [re] if im is None else [re, im]
            row.append(np.stack([np.reshape(p, (o.size, x.size)) for p in parts], axis=-1))
        D.append(row)
    return D


def check_rows(fn, leaves, lin, what, atol, rtol):
    """gradcheck's analytic Jacobian rows of ``fn`` at the Tensors ``leaves`` (one batched
    backward per output, the loop where vmap cannot batch: ``ndgrad.checks.gradcheck``'s own
    ``_reverse_rows``) against the rows the finite differences ``lin`` imply, with gradcheck's
    message (both Jacobians, the worst entry); then backward again, which must give the same
    rows exactly (gradcheck's reentrancy check), and zero cotangents, which must give zero
    gradients (its undefined-grad check)."""
    gc = importlib.import_module("ndgrad.checks.gradcheck")
    inputs = tuple(leaves)
    (outs, rows), _ = gc._try_batched(lambda b: gc._reverse_rows(fn, inputs, leaves, b),
                                      lambda: gc._reverse_rows(fn, inputs, leaves, False))
    assert len(outs) == len(lin.outs), \
        f"{what}: {len(outs)} floating outputs, the finite differences have {len(lin.outs)}"
    D = gradcheck_D(lin)
    for j, o in enumerate(outs):
        for i, x in enumerate(leaves):
            expected = gc._expected_rows(D[j][i], o.dtype.kind == "c", x.dtype.kind == "c")
            r = rows[j]
            got = r[0][i] if r is not None and r[0][i] is not None else np.zeros_like(expected)
            if r is not None and r[1][i] is not None:
                assert r[1][i] == x.dtype, \
                    f"{what}: input {i} is {x.dtype}, its gradient {r[1][i]}"
            try:
                gc._compare(expected, got, atol, rtol, what, j, i, fn, gc._ROWS)
            except gc.GradcheckError as e:
                raise AssertionError(str(e)) from None
    (_, again), _ = gc._try_batched(lambda b: gc._reverse_rows(fn, inputs, leaves, b),
                                    lambda: gc._reverse_rows(fn, inputs, leaves, False))
    try:
        gc._check_reentrant(rows, again, 0.0, fn)
        gc._check_undefined_grad(fn, inputs, leaves)
    except gc.GradcheckError as e:
        raise AssertionError(str(e)) from None
