"""Every registered op and composite through ``ndgrad.func.compile`` (Note [Compiled programs]
in ndgrad/functional/compiler.py): a compiled program gives eager ndgrad's values.

One family of the registry matrix (Note [The registry matrix] in tests/registry_matrix.py),
``compile``, on the first samples of each (op, dtype)'s bank (the values on two small ones
and one wide one, :data:`SAMPLES`; the derivatives on the first small one:
:data:`DERIVATIVES`), each check on its own function of the sample's
array inputs (all of them arguments of the compiled function: floating and integer tensors
alike; Python numbers and the op's other parameters static):

``values``
    ``compile(f)`` with ``f(*arrays) = op(*arrays, *params)``: every output (integer, bool and
    non-array ones too) equals eager ``f``'s in type, dtype, shape and value;
``gradient`` (differentiable ops without ``notes["vjp"]``)
    ``compile(grad(s))`` with ``s(*arrays, *w) = sum_k re <w_k, F_k>`` (``F`` the floating
    outputs, the weights ``w`` arguments too) equals eager ``grad(s)``;
``tangent`` (differentiable ops without ``notes["jvp"]``)
    ``compile(f)`` with ``f(arrays, v) = jvp(F, floats, v)`` equals eager ``jvp``;
``hvp`` (differentiable ops without ``notes["vjp"]``, ``["jvp"]`` or ``["gradgrad"]``)
    ``compile(jvp(grad(s)))`` (forward over reverse: the rules' own rules traced) equals
    eager, on the sample and at other values;
``python_forms`` (the :data:`FULL` samples)
    the forms dispatch converts before a forward runs, next to traced tensors: the 0-d
    floating inputs as Python scalars and as NumPy scalars (static arguments), and an input
    of one dimension or more as the list of its rows, made inside the compiled function
    from the traced tensor (Note [Sequences of tensors]): ``compile(f)`` equals eager ``f``
    on the same form.

Each compiled function is called twice on the sample (the first call returns the trace's own
values; the second runs the program, the call that matters), then at other values of the
same shapes (the floating arrays times 1.03: the same program, which must not have kept a
value of the trace), then on the sample's arrays stacked twice (``[a, 1.03 a]``: another
shape, so a new trace, not the first program run on arrays it was not made for; two
programs in the cache; the :data:`FULL` samples, but for ``tangent`` and ``hvp``), each
compared with eager on the same arguments; where eager raises, the compiled function raises
the same error. The comparison is to rounding (:data:`ROUNDING`): the program calls the
backend functions eager ndgrad calls, in the same order, and its optimiser keeps every
value bit for bit, so only an op whose values depend on the memory layout of its inputs (a
reduction's pairwise summation on a view) may differ in the last bits.

A trace that an op refuses because its forward or a rule reads its traced input's values
(its result's shape depends on them: bincount without minlength) ends that check: the
CompileError must name the op (``by ndgrad.<op>``) and the line of ndgrad that reads; a
value read anywhere else fails. Defects of the program's code generation the family finds
are listed in :data:`PROGRAM_DEFECTS` (strict xfails).

tests/functional/test_compile.py shows that :func:`compiled_equals_eager` fails on a program
one of whose steps is rewritten wrong (a negation dropped).
"""

from __future__ import annotations

import numpy as np
import pytest

import ndgrad
from ndgrad import func
from registry_harness import Sample, checked_for, tensor
from ndgrad.functional.compiler import CompileError
from registry_matrix import each, family, on_cpu
from support import host, random_like
from test_op_python_inputs import _rows, _usable

# The stacked sample puts a new axis first: an op's axis parameter then names another axis,
# and cross's may become one of two elements, which NumPy 2 deprecates (and still computes);
# eager and compiled are compared on the same arrays all the same.
pytestmark = pytest.mark.filterwarnings(
    "ignore:Arrays of 2-dimensional vectors are deprecated:DeprecationWarning")

SAMPLES = (2, 1)  # the small and wide samples checked per (op, dtype) (after the simplest wide)
ROUNDING = 1e-12  # rtol; atol is ROUNDING times the largest finite magnitude of the reference
STACK = 1.03      # the second copy of a floating input in the stacked (other shape) sample
# the samples every check calls on another shape too, and python_forms checks (the first
# small one, the first wide one checked); the values are checked on all three
FULL = {("small", 0), ("wide", 1)}
# the sample the derivative checks run on (the first small one: its other shape has one
# dimension more): the family's checks stay near 11 CPU-s (its banks, shared with the other
# families, 10 more)
DERIVATIVES = ("small", 0)


# ---------------------------------------------------------------------------- comparisons
def _leaves(tree):
    if isinstance(tree, (tuple, list)):
        return [x for t in tree for x in _leaves(t)]
    return [tree]


def same(got, expected, what):
    """``got`` (a compiled function's result) equals ``expected`` (eager's) in structure,
    type, dtype, shape and value (to :data:`ROUNDING`; NaN where eager has NaN)."""
    g_all, e_all = _leaves(got), _leaves(expected)
    assert len(g_all) == len(e_all), f"{what}: {len(g_all)} results, eager gives {len(e_all)}"
    for n, (g, e) in enumerate(zip(g_all, e_all)):
        where = f"{what}, result {n}" if len(e_all) > 1 else what
        if not isinstance(e, ndgrad.Tensor):
            assert type(g) is type(e) and (g == e or (g != g and e != e)), \
                f"{where}: {g!r} ({type(g).__name__}), eager gives {e!r} ({type(e).__name__})"
            continue
        assert isinstance(g, ndgrad.Tensor), \
            f"{where}: a {type(g).__name__}, eager gives a Tensor"
        gh, eh = host(g), host(e)
        assert gh.dtype == eh.dtype, f"{where}: dtype {gh.dtype}, eager gives {eh.dtype}"
        assert gh.shape == eh.shape, f"{where}: shape {gh.shape}, eager gives {eh.shape}"
        if eh.dtype.kind in "fc":
            finite = np.abs(eh[np.isfinite(eh)])
            atol = ROUNDING * (float(finite.max()) if finite.size else 0.0)
            np.testing.assert_allclose(gh, eh, rtol=ROUNDING, atol=atol, equal_nan=True,
                                       err_msg=where)
        else:
            np.testing.assert_array_equal(gh, eh, err_msg=where)


def _run(fn, args):
    """``(result, None)`` or ``(None, the exception)``."""
    try:
        return fn(*args), None
    except Exception as exc:  # noqa: BLE001 - compared with the compiled function's
        return None, exc


def compiled_equals_eager(fn, args, moved, other, what, compile=func.compile):
    """``compile(fn)`` on ``args`` twice (the trace, then the program), on ``moved`` (the
    same shapes, other values: the program again) and on ``other`` (another shape: a new
    trace) equals ``fn`` on each; where eager raises, compile raises the same error. A
    trace that ndgrad refuses because an op reads its traced input's values (a CompileError
    naming the op) ends the check."""
    cf = compile(fn)
    runs = (("", args, ("the trace", "the program")), (" at other values", moved,
            ("the program",)), (" on another shape", other, ("a new trace",)))
    for label, a, calls in runs:
        if a is None:
            continue
        expected, error = _run(fn, a)
        for call in calls:
            call = f"{what}{label}, {call}"
            if error is not None:
                with pytest.raises(type(error)):
                    cf(*a)
                continue
            got, raised = _run(cf, a)
            if isinstance(raised, CompileError) and call.endswith("trace") and \
                    " by ndgrad." in str(raised):
                return cf  # (the clear error of an op that reads values: Note above)
            assert raised is None, f"{call}: raised {type(raised).__name__}: {raised}"
            same(got, expected, call)
    if other is not None and error is None:  # (another shape eager takes: a 2nd program)
        assert len(cf._cache) == 2, \
            f"{what}: {len(cf._cache)} programs made, 2 expected (one per shape)"
    return cf


# ----------------------------------------------------------------------- the functions
def _changed(a, how):
    """An array input (NumPy arrays, NumPy scalars, lists of them) changed by ``how``; other
    inputs as they are."""
    if isinstance(a, (list, tuple)):
        return type(a)(_changed(x, how) for x in a)
    if isinstance(a, np.ndarray):
        return how(a)
    if isinstance(a, np.generic):  # (a NumPy scalar: one again where its shape is kept)
        r = how(np.asarray(a))
        return r[()] if r.ndim == 0 else r
    return a


def _other_shape(a):
    """``a`` stacked twice on a new first axis, the second copy scaled by :data:`STACK` if it
    is floating: another shape."""
    return np.stack([a, _other_values(a)])


def _other_values(a):
    if a.dtype.kind not in "fc":
        return a
    with np.errstate(all="ignore"):  # (inf and NaN samples stay what they are)
        return np.asarray(a * STACK, dtype=a.dtype)


def _tensors(arrays):
    return [tensor(a) if isinstance(a, np.ndarray) else a for a in arrays]


def _stacked(e):
    """The array inputs of the entry's sample (as :meth:`Sample.inputs` gives them) changed
    to another shape (:func:`_other_shape`): a new trace; None (no such call) but on the
    first small and the first checked wide sample (:data:`FULL`)."""
    if not isinstance(e, Sample):
        if (e.kind, e.index) not in FULL:
            return None
        e = e.sample
    return _tensors([_changed(a, _other_shape) for a in e.arrays])


def _moved(sample):
    """The sample's array inputs with the floating ones scaled by :data:`STACK`: the same
    shapes, other values (the first program runs on them)."""
    return _tensors([_changed(a, _other_values) for a in sample.arrays])


def _weighted(ws, ys):
    """``sum_k re <w_k, y_k>`` of Tensors."""
    total = None
    for w, y in zip(ws, ys, strict=True):
        t = ndgrad.sum(ndgrad.conj(w) * y)
        t = ndgrad.real(t) if y.dtype.kind == "c" else t
        total = t if total is None else total + t
    return total


def _floating(outs):
    return [o for o in outs if isinstance(o, ndgrad.Tensor) and o.dtype.kind in "fc"]


def _eager_floating_outputs(sample, arrays):
    try:
        with ndgrad.no_grad():
            return [host(o) for o in _floating(sample.call(list(arrays)))]
    except Exception:  # noqa: BLE001 - the compiled function must raise too
        return None


def values(e):
    s = e.sample
    compiled_equals_eager(lambda *arrays: s.call(list(arrays)), s.inputs(), _moved(s),
                          _stacked(e), f"compile(f) of {s!r}")


def gradient(e):
    s = e.sample
    nin = len(s.arrays)

    def scalar(*a):
        return _weighted(a[nin:], _floating(s.call(list(a[:nin]))))
    g = func.grad(scalar, argnums=tuple(s.pos))
    rng = np.random.default_rng(e.index)

    def args(arrays):
        outs = _eager_floating_outputs(s, arrays)
        ws = [tensor(random_like(rng, o)) for o in outs] if outs is not None else []
        return list(arrays) + ws
    other = _stacked(e)
    compiled_equals_eager(g, args(s.inputs()), args(_moved(s)), other and args(other),
                          f"compile(grad(s)) of {s!r}")


def tangent(e):
    s = e.sample
    rng = np.random.default_rng(e.index)

    def f(arrays, tangents):
        def F(*floats):
            full = list(arrays)
            for p, x in zip(s.pos, floats, strict=True):
                full[p] = x
            return tuple(_floating(s.call(full)))
        return func.jvp(F, tuple(arrays[p] for p in s.pos), tuple(tangents))

    def args(arrays):
        return [list(arrays), [tensor(random_like(rng, host(arrays[p]))) for p in s.pos]]
    compiled_equals_eager(f, args(s.inputs()), args(_moved(s)), None,
                          f"compile(jvp(F)) of {s!r}")


def hvp(e):
    """``compile(jvp(grad(s)))``: forward over reverse, a second-order program (its rules'
    rules traced)."""
    s = e.sample
    nin = len(s.arrays)
    rng = np.random.default_rng(e.index)

    def scalar(*a):
        return _weighted(a[nin:], _floating(s.call(list(a[:nin]))))

    def f(arrays, ws, tangents):
        def g(*floats):
            full = list(arrays)
            for p, x in zip(s.pos, floats, strict=True):
                full[p] = x
            return func.grad(scalar, argnums=tuple(s.pos))(*full, *ws)
        return func.jvp(g, tuple(arrays[p] for p in s.pos), tuple(tangents))

    def args(arrays):
        outs = _eager_floating_outputs(s, arrays)
        ws = [tensor(random_like(rng, o)) for o in outs] if outs is not None else []
        return [list(arrays), ws, [tensor(random_like(rng, host(arrays[p]))) for p in s.pos]]
    compiled_equals_eager(f, args(s.inputs()), args(_moved(s)), None,
                          f"compile(jvp(grad(s))) of {s!r}")


def python_forms(e):
    s = e.sample
    if (e.kind, e.index) not in FULL:
        return
    arrays = [k for k, a in enumerate(s.arrays) if isinstance(a, np.ndarray)]
    zero_d = [k for k in arrays if s.arrays[k].ndim == 0 and s.arrays[k].dtype.kind in "fc"]
    if zero_d and len(zero_d) < len(arrays):  # (a traced tensor beside the scalars)
        for form, make in (("Python", lambda a: a.item()), ("NumPy", lambda a: a[()])):
            def inputs(how, make=make):
                return _tensors([make(how(a)) if k in zero_d else _changed(a, how)
                                 for k, a in enumerate(s.arrays)])
            compiled_equals_eager(lambda *a: s.call(list(a)), inputs(lambda a: a),
                                  inputs(_other_values), None,
                                  f"compile(f) of {s!r} with {form} scalars")
    rows = _usable(s)
    if rows:
        p = rows[0]
        compiled_equals_eager(
            lambda *a: s.call([_rows(x) if k == p else x for k, x in enumerate(a)]),
            s.inputs(), _moved(s), None, f"compile(f) of {s!r} with input {p} as a list")


def _entries(bank):
    small, wide = SAMPLES
    return bank.small[:small] + bank.wide[1:1 + wide]


# Defects of the program's code generation and optimiser (ndgrad/functional/program.py)
# the family finds, reported there; strict: the case fails once the defect is fixed, and its
# line goes. (op, dtype or None for all) -> the defect
PROGRAM_DEFECTS = {}


@family("compile", devices=["cpu"])
def test_compile(bank, request):
    op = bank.op
    defect = PROGRAM_DEFECTS.get((bank.name, None)) or PROGRAM_DEFECTS.get((bank.name,
                                                                            bank.dtype))
    if defect:
        request.applymarker(pytest.mark.xfail(strict=True, reason=defect))
    checks = [values, python_forms]
    if checked_for(op, "vjp"):
        checks.append(_only_differentiable(gradient))
    if checked_for(op, "jvp"):
        checks.append(_only_differentiable(tangent))
    if checked_for(op, "vjp", "jvp", "gradgrad"):
        checks.append(_only_differentiable(hvp))
    with on_cpu():
        each(_entries(bank), checks, f"{bank.name} ({bank.dtype}) compiled")


def _only_differentiable(check):
    def run(e):
        if e.differentiable and (e.kind, e.index) == DERIVATIVES:
            check(e)
    run.__name__ = check.__name__
    return run
