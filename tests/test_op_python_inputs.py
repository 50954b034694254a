"""Python objects in place of arrays, for every registered op and composite: no hand lists.

One family of the registry matrix (Note [The registry matrix] in tests/registry_matrix.py),
``python_inputs``, on the samples of each (op, dtype)'s bank:

* Python scalars (Note [Python scalars as inputs] in ndgrad/core/namespace.py): a sample's
  0-d array inputs are given as Python scalars of one type (``int``, ``float`` and ``bool``
  for the real samples, ``complex`` for the complex ones), and the op must give NumPy's (or
  SciPy's) value on the same scalars, NaN and infinities included, in NumPy's dtype (NEP 50:
  Python scalars alone are int64, float64, complex128 or bool; beside an array they are
  weak), or raise a TypeError or ValueError that names the function. An op whose integer or
  bool inputs follow a dtype rule of its own declares it in ``notes["integer inputs"]`` with
  the reason; its dtype is then checked against the op on the 0-d tensor.
* a list holding tensors in place of an array (Note [Sequences of tensors] in
  ndgrad/core/namespace.py): one array input of at least one dimension (a floating one where
  there is one; never one the op declares to take a sequence of arrays as such, as
  ``select``'s ``condlist``) is given as the Python list of its rows, and the op must give
  what it gives on ``ndgrad.stack`` of those rows: the values (every output, integer ones
  too), and under ``func.grad``, ``func.jvp`` and ``func.vmap``, where the list is made
  inside the transformed function from the transform's own value, so the transform's values
  hide in a list (they once reached the op unseen: a zero tangent, an internal error, an
  AttributeError).

Every sample has an array input, 0-d or not, so every (op, dtype) has something to check;
a case that checks nothing fails.
"""

from __future__ import annotations

import inspect
import warnings

import numpy as np
import pytest

import ndgrad
from ndgrad import func
from registry_harness import outs, public_call, reference, tensor
from registry_matrix import each, failed_checks, family
from support import assert_close, close, host

EXACT = {"rtol": 1e-10, "atol": 1e-12}
SCALARS = {"float64": (float, int, bool), "complex128": (complex,)}
SAMPLES = 3  # the samples each form is checked on (the first ones of the bank that have one)


# ---------------------------------------------------------------------------- Python scalars
def _scalar(a, kind):
    """The drawn 0-d array ``a`` as a Python scalar of type ``kind``."""
    v = a.item()
    if kind is complex:
        return complex(v)
    r = float(np.real(v))
    if kind is float:
        return r
    if not np.isfinite(r):
        return None  # (NaN and infinities have no int or bool)
    return int(round(r)) if kind is int else round(r) != 0


def _quietly(fn, *args, **kwargs):
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


def _zero_d(sample):
    return [k for k, a in enumerate(sample.arrays) if isinstance(a, np.ndarray) and a.ndim == 0]


def _check_scalars(op, sample, kind):
    """The op on the sample with its 0-d inputs as Python scalars of type ``kind``, against
    NumPy; returns whether anything was compared (False where NumPy refuses the scalars or
    they have no value of that type)."""
    args = list(sample.args)
    for k in _zero_d(sample):
        args[k] = _scalar(sample.arrays[k], kind)
        if args[k] is None:
            return False
    scalars = args[:sample.nin]
    every = all(type(a) in (bool, int, float, complex) for a in scalars)
    try:  # NumPy on the same scalars (alone, NEP 50 makes them these 0-d arrays)
        ref_args = [np.asarray(a) if every else a for a in scalars] + args[sample.nin:]
        expected = outs(_quietly(reference(op), *ref_args, **sample.kwargs))
    except Exception:  # noqa: BLE001 - NumPy refuses these scalars: nothing to compare with
        return False
    inputs = [tensor(a) if isinstance(a, np.ndarray) else a for a in scalars]
    try:
        got = outs(_quietly(public_call, op, inputs, args[sample.nin:], sample.kwargs))
    except (TypeError, ValueError) as exc:
        assert op.name in str(exc), f"{op.qualname}{tuple(scalars)}: the error does not " \
                                    f"name the function: {exc!r}"
        return True
    assert len(got) == len(expected), f"{op.qualname}: {len(got)} outputs, NumPy has " \
                                      f"{len(expected)}"
    declared = (getattr(op, "notes", None) or {}).get("integer inputs") \
        if kind in (int, bool) else None
    for n, (g, e) in enumerate(zip(got, expected)):
        e = np.asarray(e)
        what = f"{op.qualname}{tuple(scalars)}, output {n}"
        assert isinstance(g, ndgrad.Tensor), f"{what}: not a Tensor ({type(g).__name__})"
        if declared:  # the op's own rule: what it gives on the 0-d tensors of the scalars
            like = outs(_quietly(public_call, op, [ndgrad.asarray(a) for a in scalars]
                                 if every else inputs, args[sample.nin:], sample.kwargs))[n]
            assert g.dtype == like.dtype, f"{what}: dtype {g.dtype}, on 0-d tensors {like.dtype}"
            np.testing.assert_array_equal(host(g), host(like), err_msg=what)
        else:
            assert g.dtype == e.dtype, f"{what}: dtype {g.dtype}, NumPy's {e.dtype}"
            np.testing.assert_allclose(host(g), e, rtol=1e-10, atol=1e-12, equal_nan=True,
                                       err_msg=what)
    return True


# ------------------------------------------------------------------------ lists of tensors
def _input_names(op):
    fn = getattr(op, "fn", None) or op.forward
    return [p.name for p in list(inspect.signature(fn).parameters.values())[1:]
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL)]


def _usable(sample):
    """The array inputs that may be given as a list: of at least one dimension, not one the
    op takes as a sequence of arrays (``op.sequences``); the floating ones first."""
    names = _input_names(sample.op)
    as_such = getattr(sample.op, "sequences", ())
    usable = [k for k, a in enumerate(sample.arrays)
              if isinstance(a, np.ndarray) and a.ndim >= 1 and a.shape[0] > 0 and
              (k >= len(names) or names[k] not in as_such)]
    return [k for k in usable if k in sample.pos] + [k for k in usable if k not in sample.pos]


def _rows(x):
    return [x[i] for i in range(x.shape[0])]


def _caller(sample, p):
    """``call(x, as_list)``: the op's outputs with input ``p`` set to ``x``, given as the
    list of its rows or as ``ndgrad.stack`` of them."""
    base = sample.inputs()

    def call(x, as_list):
        inputs = list(base)
        inputs[p] = _rows(x) if as_list else ndgrad.stack(_rows(x))
        return sample.call(inputs)
    return call


def _weighted(call, as_list):
    """The op as a real scalar function of input ``p``: its floating outputs paired with
    fixed weights (the same for both forms)."""
    def f(x):
        total = None
        rng = np.random.default_rng(3)
        for o in call(x, as_list):
            if o.dtype.kind not in "fc":
                continue
            w = tensor(np.asarray(rng.uniform(0.5, 1.5, tuple(o.shape)), dtype=o.dtype))
            t = ndgrad.sum(ndgrad.real(o * w))
            total = t if total is None else total + t
        return total
    return f


def _list_checks(sample, p, transforms):
    """The checks of input ``p`` given as a list: its value, and under each of
    ``transforms`` that applies to the sample."""
    call = _caller(sample, p)
    x = tensor(sample.arrays[p])

    def list_of_tensors(_):
        expected = host(list(call(x, False)))
        assert_close(call(x, True), expected, "on a list of tensors", **EXACT)

    def under(transform):
        def check(_):
            if transform == "vmap":
                xs = ndgrad.stack([x, x * 1.01]) if x.dtype.kind in "fc" else \
                    ndgrad.stack([x, x])

                def batched(as_list):
                    return lambda xb: call(xb, as_list)
                expected = outs(func.vmap(batched(False))(xs))
                got = outs(func.vmap(batched(True))(xs))
            elif transform == "grad":
                expected = func.grad(_weighted(call, False))(x)
                got = func.grad(_weighted(call, True))(x)
            else:
                t = tensor(np.asarray(np.random.default_rng(5).uniform(-1, 1, tuple(x.shape)),
                                      dtype=x.dtype))
                expected = func.jvp(_weighted(call, False), (x,), (t,))[1]
                got = func.jvp(_weighted(call, True), (x,), (t,))[1]
            assert_close(got, host(list(outs(expected))),
                         f"{transform} on a list of tensors", **EXACT)
        check.__name__ = f"list_of_tensors_under_{transform}"
        return check

    checks = [list_of_tensors, under("vmap")]
    differentiable = p in sample.pos and _weighted(call, False)(x) is not None
    checks += [under(t) for t in transforms if differentiable]
    return checks


# ------------------------------------------------------------------------------- the family
def _takes_an_array(name, op, dtype):
    """Whether some input of the op is an array (not one it declares to take as a sequence
    of arrays, as ``select``'s ``condlist`` and ``choicelist``): a 0-d one or one to give as
    a list."""
    nin = op.nin if op.nin >= 0 else 1
    return any(n not in getattr(op, "sequences", ()) for n in _input_names(op)[:nin])


# (on the CPU only, --slow too: Python numbers make host arrays, and a list of tensors is
# stacked by the device-independent path, namespace.sequences_stacked, then runs as the
# stacked tensor does, which the device family checks on the CUDA backend)
@family("python_inputs", _takes_an_array, devices=["cpu"])
def test_python_inputs(bank, device):
    """Python scalars for the 0-d inputs (against NumPy, where the op has a reference; on the
    CPU: they make host arrays) and lists of tensors for an input of one dimension or more
    (against ndgrad.stack of them, plain and under vmap, and under grad and jvp where the op
    declares them), each on the first :data:`SAMPLES` samples of the bank that have such an
    input."""
    op = bank.op
    transforms = [] if not op.differentiable else \
        [t for t, note in (("grad", "vjp"), ("jvp", "jvp")) if note not in op.notes]
    scalar_samples = [e for e in bank.entries if _zero_d(e.sample)][:SAMPLES] \
        if reference(op) is not None and device == "cpu" else []
    list_samples = [e for e in bank.entries if _usable(e.sample)][:SAMPLES]
    checked = []

    def python_inputs(e):
        failed = []
        if e in scalar_samples:
            for kind in SCALARS[bank.dtype]:
                try:
                    if _check_scalars(op, e.sample, kind):
                        checked.append(e)
                except AssertionError as exc:
                    failed.append(f"Python {kind.__name__}s: {exc}")
                except Exception as exc:  # noqa: BLE001
                    failed.append(f"Python {kind.__name__}s: raised {type(exc).__name__}: "
                                  f"{exc}")
        if e in list_samples:
            p = _usable(e.sample)[0]
            failed += [f"input {p} as a list: {f}" for f in
                       failed_checks(_list_checks(e.sample, p, transforms), None)]
            checked.append(e)
        assert not failed, "\n\n".join(failed)

    with np.errstate(invalid="ignore"):  # (a complex infinity's parts, as NumPy's)
        each([e for e in bank.entries if e in scalar_samples or e in list_samples],
             python_inputs, f"{bank.name} ({bank.dtype}) python inputs")
    assert checked, f"{bank.name} ({bank.dtype}): NumPy refuses every sample's scalars and " \
                    "no sample has an input to give as a list"


# ---------------------------------------------------------------------- the reported cases
def test_sum_of_a_list_with_a_keyword_under_every_transform():
    """``sum([t, 3 t], axis=0)`` is 4 t: its derivative is 4 under jvp, grad and vmap."""
    def f(t):
        return ndgrad.sum([t, 3 * t], axis=0)
    one = ndgrad.tensor(1.0)
    close(func.jvp(f, (one,), (one,))[1], 4.0)
    close(func.grad(f)(one), 4.0)
    close(func.vmap(f)(ndgrad.tensor([1.0, 2.0])), [4.0, 8.0])
    close(func.vmap(func.grad(f))(ndgrad.tensor([1.0, 2.0])), [4.0, 4.0])


def test_a_sequence_of_elements_of_different_shapes_is_refused():
    x = ndgrad.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(ValueError, match=r"ndgrad\.sum: a sequence holding tensors is read as "
                                         r"an array.*element 1 has shape \(\), another \(2,\)"):
        ndgrad.sum([x, 3.0])
    with pytest.raises(ValueError, match=r"ndgrad\.exp: .*element 1 has shape \(3,\)"):
        ndgrad.exp([x, ndgrad.ones(3)])


@pytest.mark.cpu_only("NumPy arrays beside the tensors are host arrays")
def test_numbers_and_arrays_in_the_list_take_the_tensors_place():
    """Numbers and NumPy arrays beside the tensors are constants of the stacked array."""
    x = ndgrad.tensor([1.0, 2.0], requires_grad=True)
    y = ndgrad.sum([x, [10.0, 20.0], np.array([100.0, 200.0])], axis=0)
    close(y, [111.0, 222.0])
    (y * ndgrad.tensor([1.0, 3.0])).sum().backward()
    close(x.grad, [1.0, 3.0])


def test_angle_of_a_python_float():
    """The reported case: ``angle(0.5)`` crashed ('float' object has no attribute 'astype')."""
    for z, want in ((0.5, 0.0), (-2.0, np.pi), (1j, np.pi / 2), (-1, np.pi), (True, 0.0)):
        got = ndgrad.angle(z)
        assert got.dtype == np.angle(z).dtype
        np.testing.assert_allclose(host(got), want, rtol=1e-15)
    np.testing.assert_allclose(host(ndgrad.angle(1j, deg=True)), 90.0, rtol=1e-15)


def test_python_floats_alone_take_the_default_dtype():
    """Alone, a Python float is ndgrad's default floating dtype (NumPy's float64 by
    default); beside a tensor it is weak."""
    previous = ndgrad.get_default_dtype()
    try:
        ndgrad.set_default_dtype(ndgrad.float32)
        assert ndgrad.sin(0.5).dtype == np.float32
        assert ndgrad.add(0.5, 2).dtype == np.float32
        assert ndgrad.add(1, 2).dtype == np.int64
        np.testing.assert_allclose(host(ndgrad.sin(0.5)), np.sin(np.float32(0.5)))
    finally:
        ndgrad.set_default_dtype(previous)
    assert ndgrad.sin(0.5).dtype == np.float64
    x32 = ndgrad.tensor([1.0], dtype=ndgrad.float32)
    assert ndgrad.add(x32, 0.5).dtype == np.float32
