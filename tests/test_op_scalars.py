"""Python scalars as inputs, for every registered op and composite (Note [Python scalars as
inputs] in ndgrad/core/namespace.py): no hand lists.

For each entry of the registry (tests/registry_harness.py) hypothesis draws a sample from the
op's declaration; its 0-d array inputs are given as Python scalars of one type (``int``,
``float`` and ``bool`` for the real samples, ``complex`` for the complex ones), and the op
must give NumPy's (or SciPy's) value on the same scalars, NaN and infinities included, in
NumPy's dtype (NEP 50: Python scalars alone are int64, float64, complex128 or bool; beside an
array they are weak), or raise a TypeError or ValueError that names the function. An op whose
integer or bool inputs follow a dtype rule of its own declares it in ``notes["integer
inputs"]`` with the reason; its dtype is then checked against the op on the 0-d tensor.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, reject, settings
from hypothesis import strategies as st
from hypothesis.errors import Unsatisfiable

import ndgrad
from registry_harness import cases, draw, entry, outs, public_call, reference, tensor
from support import host

FEW = settings(max_examples=4, phases=[Phase.explicit, Phase.reuse, Phase.generate],
               suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
SCALARS = {"float64": (float, int, bool), "complex128": (complex,)}


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


def _check(op, sample, kind):
    zs = [k for k, a in enumerate(sample.arrays) if isinstance(a, np.ndarray) and a.ndim == 0]
    if not zs:
        reject()
    args = list(sample.args)
    for k in zs:
        args[k] = _scalar(sample.arrays[k], kind)
        if args[k] is None:
            return
    scalars = args[:sample.nin]
    every = all(type(a) in (bool, int, float, complex) for a in scalars)
    try:  # NumPy on the same scalars (alone, NEP 50 makes them these 0-d arrays)
        ref_args = [np.asarray(a) if every else a for a in scalars] + args[sample.nin:]
        expected = outs(_quietly(reference(op), *ref_args, **sample.kwargs))
    except Exception:  # noqa: BLE001 - NumPy refuses these scalars: nothing to compare with
        return
    inputs = [tensor(a) if isinstance(a, np.ndarray) else a for a in scalars]
    try:
        got = outs(_quietly(public_call, op, inputs, args[sample.nin:], sample.kwargs))
    except (TypeError, ValueError) as exc:
        assert op.name in str(exc), f"{op.qualname}{tuple(scalars)}: the error does not " \
                                    f"name the function: {exc!r}"
        return
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


@pytest.mark.cpu_only("Python scalars make host arrays; the device paths of every op are the "
                      "property suites'")
@pytest.mark.parametrize("name, dtype", cases())
def test_python_scalars_give_numpys_value_and_dtype(name, dtype):
    op = entry(name)
    if reference(op) is None:
        pytest.skip(f"{name}: no NumPy/SciPy function of that name and no reference in the "
                    "harness's REFERENCES")
    draws = {"without a 0-d input": 0, "checked": 0}

    @FEW
    @given(data=st.data())
    def run(data):
        sample = draw(data, op, dtype)
        if not any(isinstance(a, np.ndarray) and a.ndim == 0 for a in sample.arrays):
            draws["without a 0-d input"] += 1
            if draws["without a 0-d input"] >= 8 and not draws["checked"]:
                pytest.skip(f"{name}: 8 drawn samples have no 0-d array input (the op's "
                            "declared inputs admit no scalar)")
            reject()
        for kind in SCALARS[dtype]:
            _check(op, sample, kind)
        draws["checked"] += 1
    try:
        run()
    except Unsatisfiable:
        pytest.skip(f"{name}: NumPy refuses every drawn sample's scalars")


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
