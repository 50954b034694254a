"""The public hypothesis strategies (ndgrad.checks.strategies), checked against NumPy.

Every property is asserted on the drawn values with an independent reference
(``np.linalg.eigvalsh``, ``np.linalg.cond``, ``np.broadcast_shapes``...), not with the
strategy's own construction.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import ndgrad
from ndgrad.checks import gradcheck
from ndgrad.checks.strategies import (Drawer, arrays, away_from_kinks, broadcastable_shapes,
                                      broadcastable_tensors, op_samples, registered_ops,
                                      spd_matrices, symmetric_matrices, tensors,
                                      well_conditioned_matrices)
from ndgrad.core.ops import COMPOSITES, REGISTRY
from support import val

FEW = settings(max_examples=10, deadline=None)


# ------------------------------------------------------------------------------ tensors

@FEW
@given(tensors(shape=(2, 3), dtype=np.float32, requires_grad=True))
def test_tensors_fixed_shape_dtype_grad(x):
    assert isinstance(x, ndgrad.Tensor)
    assert x.shape == (2, 3)
    assert x.dtype == np.float32 and x.dtype == ndgrad.float32
    assert x.requires_grad and x.is_leaf
    a = val(x)
    assert np.all((-2.0 <= a) & (a <= 2.0))


@FEW
@given(tensors())
def test_tensors_defaults_are_small_float64(x):
    assert x.dtype == np.float64
    assert not x.requires_grad
    assert x.ndim <= 3 and all(1 <= n <= 4 for n in x.shape)


@FEW
@given(tensors(shape=hnp.array_shapes(min_dims=2, max_dims=2, max_side=3),
               dtype=st.sampled_from([np.float32, np.complex128]), elements=(0.5, 1.5)))
def test_tensors_shape_and_dtype_strategies_and_range(x):
    assert x.ndim == 2 and max(x.shape) <= 3
    assert x.dtype in (np.float32, np.complex128)
    a = val(x)
    parts = [a.real, a.imag] if a.dtype.kind == "c" else [a]
    for p in parts:
        assert np.all((0.5 <= p) & (p <= 1.5))


@FEW
@given(tensors(shape=(4,), dtype=np.complex128, low=1.0, high=2.0, requires_grad=True))
def test_tensors_complex_both_parts_in_range(z):
    assert z.dtype == np.complex128 and z.requires_grad
    a = val(z)
    assert np.all((1.0 <= a.real) & (a.real <= 2.0))
    assert np.all((1.0 <= a.imag) & (a.imag <= 2.0))


@FEW
@given(tensors(shape=(5,), elements=st.floats(-1, 1, width=32), dtype=ndgrad.float32))
def test_tensors_elements_strategy(x):
    a = val(x)
    assert x.dtype == np.float32 and a.shape == (5,)
    assert np.all((-1 <= a) & (a <= 1))


@FEW
@given(tensors(min_dims=1, max_dims=2, max_side=2, dtype=np.int64, low=-3, high=3),
       tensors(shape=(3,), dtype=np.bool_))
def test_tensors_integer_and_bool(i, b):
    assert i.dtype == np.int64 and 1 <= i.ndim <= 2 and max(i.shape) <= 2
    assert np.all((-3 <= val(i)) & (val(i) <= 3))
    assert b.dtype == np.bool_ and b.shape == (3,)


@FEW
@given(arrays(shape=(3, 1), dtype=np.float32, elements=(-0.5, 0.25)))
def test_arrays_are_numpy(a):
    assert type(a) is np.ndarray
    assert a.shape == (3, 1) and a.dtype == np.float32
    assert np.all((-0.5 <= a) & (a <= 0.25))


def test_tensors_bad_arguments():
    with pytest.raises(ValueError, match="requires_grad=True needs a floating point"):
        tensors(dtype=np.int64, requires_grad=True)
    with pytest.raises(ValueError, match="requires_grad=True needs a floating point"):
        broadcastable_tensors(dtype=np.int32, requires_grad=(False, True))
    with pytest.raises(TypeError, match="elements must be None, a \\(low, high\\) tuple"):
        tensors((3,), np.float64, -1.0)  # the old positional low
    with pytest.raises(ValueError, match="low <= high"):
        tensors(low=1.0, high=0.0)
    with pytest.raises(TypeError, match="dtype must be"):
        tensors(dtype=object())
    with pytest.raises(ValueError, match="avoid= needs a floating point"):
        arrays(dtype=np.int64, avoid=[0.0])


def test_requires_grad_with_a_drawn_int_dtype_fails_clearly():
    @settings(max_examples=3, database=None)
    @given(tensors(dtype=st.just(np.int16), requires_grad=True))
    def draw(x):
        pass

    with pytest.raises(ValueError, match="requires_grad=True needs a floating point"):
        draw()


# --------------------------------------------------------------------------- broadcasting

@FEW
@given(broadcastable_shapes(3, min_dims=1, max_dims=2, max_side=3))
def test_broadcastable_shapes(shapes):
    assert len(shapes) == 3
    for s in shapes:
        assert 1 <= len(s) <= 2 and all(1 <= n <= 3 for n in s)
    np.broadcast_shapes(*shapes)  # raises if they do not broadcast


@FEW
@given(broadcastable_tensors(3, dtype=st.sampled_from([np.float32, np.float64]),
                             requires_grad=(True, False, True)))
def test_broadcastable_tensors(xs):
    x, y, z = xs
    np.broadcast_shapes(x.shape, y.shape, z.shape)
    assert x.dtype == y.dtype == z.dtype
    assert [t.requires_grad for t in xs] == [True, False, True]
    assert (x * y + z).shape == np.broadcast_shapes(x.shape, y.shape, z.shape)


# ------------------------------------------------------------------------------- kinks

@FEW
@given(tensors(shape=(50,), avoid=[0.0, 1.0], margin=0.05, low=-1.0, high=1.0))
def test_tensors_avoid_points(x):
    a = val(x)
    assert np.all((-1.0 <= a) & (a <= 1.0))  # the range holds (1.0 itself is a kink)
    assert np.min(np.abs(a)) >= 0.05 and np.min(np.abs(a - 1.0)) >= 0.05


@FEW
@given(tensors(shape=(50,), avoid="integers", margin=0.1, low=-3, high=3),
       tensors(shape=(50,), avoid="half-integers", margin=0.1, low=-3, high=3))
def test_tensors_avoid_integers_and_half_integers(x, y):
    a, b = val(x), val(y)
    assert np.min(np.abs(a - np.round(a))) >= 0.1
    assert np.min(np.abs((b - 0.5) - np.round(b - 0.5))) >= 0.1


@FEW
@given(tensors(shape=(20,), dtype=np.complex128, avoid=[0.0], margin=0.2))
def test_tensors_avoid_complex_parts(z):
    a = val(z)
    assert np.min(np.abs(a.real)) >= 0.2 and np.min(np.abs(a.imag)) >= 0.2


@FEW
@given(st.lists(away_from_kinks([0.0, 2.0], margin=1e-2, low=-1, high=3), min_size=1),
       arrays(shape=(10,), dtype=np.float32,
              elements=away_from_kinks([0.0], 1e-3, dtype=np.float32)))
def test_away_from_kinks(values, a):
    v = np.array(values)
    assert np.all((-1 <= v) & (v <= 3))
    assert np.min(np.abs(v)) >= 1e-2 and np.min(np.abs(v - 2.0)) >= 1e-2
    assert a.dtype == np.float32 and np.min(np.abs(a.astype(np.float64))) >= 1e-3


def test_away_from_kinks_moves_the_kink_itself():
    @settings(max_examples=5, database=None)
    @given(away_from_kinks([0.0], 0.25, elements=st.just(0.0)),
           away_from_kinks([1.0], 0.25, elements=st.just(0.9)),
           away_from_kinks([1.0], 0.25, low=0.0, high=1.0, elements=None))
    def check(zero, below, in_range):
        assert zero >= 0.25  # exactly on the kink: moved up
        assert 0.75 - 1e-12 <= below <= 0.75  # stays on its side
        assert 0 <= in_range <= 0.75  # and inside [low, high]

    check()


def test_away_from_kinks_bad_arguments():
    with pytest.raises(ValueError, match="margin must be a positive"):
        away_from_kinks([0.0], margin=0.0)
    with pytest.raises(ValueError, match="closer than 2 \\* margin"):
        away_from_kinks([0.0, 0.01], margin=0.01)
    with pytest.raises(ValueError, match="margin must be < 0.5"):
        away_from_kinks("integers", margin=0.5)
    with pytest.raises(ValueError, match="'integers' or 'half-integers'"):
        away_from_kinks("evens")
    with pytest.raises(ValueError, match="floating point or complex dtype"):
        away_from_kinks([0.0], dtype=np.int64)


# ----------------------------------------------------------------------------- matrices

@FEW
@given(well_conditioned_matrices(cond=4.0, dtype=st.sampled_from([np.float64, np.complex128])))
def test_well_conditioned_matrices(a):
    m = val(a)
    assert m.ndim in (2, 3) and m.shape[-1] == m.shape[-2]
    assert np.all(np.linalg.cond(m) <= 4.0 * (1 + 1e-9))


@FEW
@given(well_conditioned_matrices(shape=(2, 4, 3), cond=20.0, requires_grad=True),
       well_conditioned_matrices(square=False, max_side=3))
def test_well_conditioned_rectangular(a, b):
    assert a.shape == (2, 4, 3) and a.requires_grad
    assert np.all(np.linalg.cond(val(a)) <= 20.0 * (1 + 1e-9))
    assert np.all(np.linalg.cond(val(b)) <= 10.0 * (1 + 1e-9))


@FEW
@given(spd_matrices(batch_shape=(2,), low=0.5, high=3.0),
       spd_matrices(n=3, dtype=np.complex128, low=1.0, high=1.5, requires_grad=True))
def test_spd_matrices(a, b):
    for t, low, high in ((a, 0.5, 3.0), (b, 1.0, 1.5)):
        m = val(t)
        assert m.shape[-1] == m.shape[-2]
        np.testing.assert_allclose(m, np.conj(np.swapaxes(m, -1, -2)), atol=1e-14)
        w = np.linalg.eigvalsh(m)
        assert np.all(w > 0)
        assert np.all((low - 1e-9 <= w) & (w <= high + 1e-9))
    assert a.shape[0] == 2 and b.shape == (3, 3) and b.requires_grad
    assert b.dtype == np.complex128


@FEW
@given(symmetric_matrices(eigen_gap=0.4, batch_shape=hnp.array_shapes(min_dims=0, max_dims=1,
                                                                      max_side=2)),
       symmetric_matrices(n=4, eigen_gap=1.0, low=-2.0, high=2.0, dtype=np.complex128))
def test_symmetric_matrices(a, b):
    for t, gap in ((a, 0.4), (b, 1.0)):
        m = val(t)
        np.testing.assert_allclose(m, np.conj(np.swapaxes(m, -1, -2)), atol=1e-14)
        w = np.linalg.eigvalsh(m)
        assert np.all(np.diff(w, axis=-1) >= gap - 1e-9)
        assert np.all((-2.0 - 1e-9 <= w) & (w <= 2.0 + 1e-9))
    assert b.shape == (4, 4)


def test_matrix_bad_arguments():
    with pytest.raises(ValueError, match="cond must be"):
        well_conditioned_matrices(cond=0.5)
    with pytest.raises(ValueError, match="square=True with the non-square"):
        well_conditioned_matrices(shape=(2, 3), square=True)
    with pytest.raises(ValueError, match="matrix shape"):
        well_conditioned_matrices(shape=(3,))
    with pytest.raises(ValueError, match="low > 0"):
        spd_matrices(low=0.0)
    with pytest.raises(ValueError, match="do not fit"):
        symmetric_matrices(n=5, eigen_gap=1.5)
    with pytest.raises(ValueError, match="floating point or complex"):
        spd_matrices(dtype=np.int64)


# -------------------------------------------------------------------------- op samples

def test_registered_ops_lists_registry_and_composites():
    names = registered_ops()
    assert names == sorted(set(REGISTRY) | set(COMPOSITES))
    assert registered_ops(composites=False) == sorted(REGISTRY)
    assert "sin" in names and "matmul" in names


@FEW
@given(op_samples("log"), op_samples("sqrt", complex=True))
def test_op_samples_by_name_are_valid(log_sample, sqrt_sample):
    (x,), _ = log_sample
    assert np.all(x > 0)
    np.testing.assert_allclose(val(ndgrad.log(ndgrad.tensor(x))), np.log(x))
    (z,), _ = sqrt_sample
    assert np.asarray(z).dtype == np.complex128


@FEW
@given(op_samples("matmul"), op_samples("sum"), op_samples("arcsin"))
def test_op_samples_by_name_run(mm, red, alias):
    (a, b), kw = mm
    np.testing.assert_allclose(val(ndgrad.matmul(ndgrad.tensor(a), ndgrad.tensor(b), **kw)),
                               np.matmul(a, b, **kw))
    (x,), kw = red
    np.testing.assert_allclose(val(ndgrad.sum(ndgrad.tensor(x), **kw)), np.sum(x, **kw))
    (y,), _ = alias  # the alias resolves to asin: inputs inside (-1, 1)
    assert np.all(np.abs(y) < 1)


@FEW
@given(st.data())
def test_op_samples_name_and_object_agree(data):
    for name in ("sin", "floor", "transpose"):
        op = REGISTRY.get(name) or COMPOSITES[name]
        args, kwargs = data.draw(op_samples(name))
        assert isinstance(args, tuple) and isinstance(kwargs, dict)
        args2, kwargs2 = data.draw(op_samples(op))
        assert isinstance(args2, tuple) and isinstance(kwargs2, dict)
        _public(op, args2, kwargs2)  # the drawn inputs are accepted by the op
    (f,), _ = data.draw(op_samples("floor"))
    assert np.all(np.abs(f - np.round(f)) > 1e-3)  # floor's valid draws avoid its jumps


def _public(op, args, kwargs):
    nin = len(args) if op.nin < 0 else op.nin
    ins = [ndgrad.tensor(a) if isinstance(a, np.ndarray) else a for a in args[:nin]]
    if getattr(op, "pack", False):
        return op.public(ins, *args[nin:], **kwargs)
    return op.public(*ins, *args[nin:], **kwargs)


def test_op_samples_unknown_name():
    with pytest.raises(ValueError, match="no registered op or composite named 'sinn'"
                                         ".*did you mean 'sin'"):
        op_samples("sinn")
    with pytest.raises(ValueError, match="registered_ops"):
        op_samples("no_such_op_at_all")


# ----------------------------------------------------------------- a user's own property

def softplus(x):
    return ndgrad.log1p(ndgrad.exp(x))


class Cube(ndgrad.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 3 * x * x * g


@FEW
@given(tensors(requires_grad=True), broadcastable_tensors(2, requires_grad=True))
def test_user_function_gradcheck(x, yz):
    assert gradcheck(softplus, (x,))
    y, z = yz
    assert gradcheck(lambda a, b: softplus(a) * b, (y, z))


@FEW
@given(tensors(shape=(3,), avoid=[0.0], margin=1e-2, requires_grad=True),
       spd_matrices(n=3, requires_grad=True))
def test_user_function_with_kinks_and_matrices(x, a):
    assert gradcheck(lambda t: ndgrad.abs(t) * Cube.apply(t), (x,))
    v = ndgrad.tensor(val(x))
    assert gradcheck(lambda m: ndgrad.sqrt(v @ (m @ v)), (a,))  # SPD: v^T A v > 0


def test_drawer_methods_still_work():
    @settings(max_examples=5, database=None)
    @given(st.data())
    def check(data):
        @st.composite
        def sample(draw):
            d = Drawer(draw)
            s = d.shape(min_dims=1)
            return (d.array(s), d.int_array(s, 0, 2), d.bool_array(s), d.axis(len(s)),
                    d.axes(len(s)), d.permutation(len(s)), d.shapes(2),
                    d.matrix((3, 2)), d.spd_matrix((2, 2)), d.hermitian_matrix((3, 3)))

        a, i, b, ax, axes, perm, shapes, m, spd, h = data.draw(sample())
        assert a.shape == i.shape == b.shape and b.dtype == np.bool_
        assert sorted(perm) == list(range(a.ndim))
        np.broadcast_shapes(*shapes)
        assert m.shape == (3, 2) and np.linalg.cond(m) <= 10.0 * (1 + 1e-9)
        assert np.all(np.linalg.eigvalsh(spd) >= 0.5 - 1e-9)
        assert np.all(np.diff(np.linalg.eigvalsh(h)) >= 0.3 - 1e-9)

    check()
