"""NumPy's array-manipulation functions (ndgrad/numpy/joining.py, splitting.py, shaping.py,
selecting.py) beyond what the registry suites draw: keyword variants and edge cases against
NumPy, gradients at trimmed zeros, ties and overwritten entries against closed forms and finite
differences, nested ``block``, per-example conditions under ``vmap``, the error messages, the
in-place writers (``place``, ``put``, ``putmask``, ``fill_diagonal``, ``put_along_axis``), and
NumPy's own functions reaching these through ``__array_function__``."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ndgrad as nd
from ndgrad.checks import gradcheck
from ndgrad.numpy.selecting import fill_diagonal, place, put, put_along_axis, putmask
from support import close, host, val

RNG = np.random.default_rng(11)


def t(a, requires_grad=False):
    a = np.asarray(a)
    return nd.tensor(a, dtype=a.dtype, requires_grad=requires_grad)


def r(*shape):
    return RNG.standard_normal(shape)


def grad_of(f, *xs, weights=None):
    """The gradients of ``sum(w * f(*xs))`` (random fixed ``w``) and ``w``."""
    leaves = [t(x, requires_grad=True) for x in xs]
    out = f(*leaves)
    w = RNG.standard_normal(tuple(out.shape)) if weights is None else weights
    (out * t(w)).sum().backward()
    return [val(x.grad) for x in leaves], w


# ------------------------------------------------------------------------------ joining
def test_concatenate_keywords_and_errors():
    a, b = r(2, 3), r(1, 3)
    close(nd.concatenate([t(a), t(b)]), np.concatenate([a, b]))
    close(nd.concatenate((t(a), t(b)), axis=None), np.concatenate([a, b], axis=None))
    got = nd.concatenate([t(a), t(b)], dtype=nd.float32)
    assert got.dtype == np.float32
    close(got, np.concatenate([a, b], dtype=np.float32), rtol=1e-6)
    with pytest.raises(TypeError, match="concatenate: cannot cast .* rule 'no'"):
        nd.concatenate([t(a), t(b.astype(np.float32))], casting="no")
    with pytest.raises(TypeError, match="rule 'same_kind'"):  # NumPy's default rule
        nd.concatenate([t(a), t(b)], dtype=nd.int64)
    close(nd.concatenate([t(a), t(b)], dtype=nd.int64, casting="unsafe"),
          np.concatenate([a, b], dtype=np.int64, casting="unsafe"))
    with pytest.raises(ValueError, match="concatenate: casting must be one of"):
        nd.concatenate([t(a)], casting="sometimes")
    with pytest.raises(TypeError, match="concatenate: out= is not supported"):
        nd.concatenate([t(a)], out=nd.zeros((2, 3)))
    with pytest.raises(ValueError, match="concatenate: need at least one array"):
        nd.concatenate([])
    with pytest.raises(ValueError, match="concatenate: zero-dimensional"):
        nd.concatenate([t(1.0), t(2.0)])
    with pytest.raises(ValueError, match="concatenate: .* along dimension 1, array 0 has "
                                         "size 3 and array 1 has size 2"):
        nd.concatenate([t(a), t(r(1, 2))])
    with pytest.raises(ValueError, match="same number of dimensions"):
        nd.concatenate([t(a), t(r(3))])


@pytest.mark.parametrize("name", ["vstack", "row_stack", "hstack", "dstack", "column_stack"])
def test_stacks_match_numpy_with_mixed_dimensions(name):
    cases = {
        "vstack": [r(3), r(2, 3), r(1, 3)],
        "row_stack": [r(2), r(2)],
        "hstack": [r(2), np.float64(1.5), r(3)],
        "dstack": [r(2, 2), r(2, 2, 3)],
        "column_stack": [r(3), r(3, 2), r(3)],
    }
    arrays = cases[name]
    ref = np.vstack if name == "row_stack" else getattr(np, name)
    close(getattr(nd, name)([t(a) for a in arrays]), ref(arrays))
    # each input's gradient is its block of the output's cotangent
    grads, w = grad_of(lambda *xs: getattr(nd, name)(list(xs)), *arrays)
    pieces = ref([np.zeros_like(a) + 10 * k for k, a in enumerate(arrays)])
    for k, (g, a) in enumerate(zip(grads, arrays)):
        close(g, w[pieces == 10 * k].reshape(np.shape(a)))
    assert nd.row_stack is nd.vstack


def test_stack_errors_name_the_function():
    with pytest.raises(ValueError, match="vstack: need at least one array"):
        nd.vstack([])
    with pytest.raises(ValueError, match="hstack: all the input array dimensions"):
        nd.hstack([t(r(2, 2)), t(r(3, 2))])
    with pytest.raises(TypeError, match="vstack takes a sequence"):
        nd.vstack(x for x in [t(r(2))])


def test_block_nested_values_and_gradients():
    A, B, C, D = r(2, 2), r(2, 1), r(1, 2), r(1, 1)
    close(nd.block([[t(A), t(B)], [t(C), t(D)]]), np.block([[A, B], [C, D]]))
    # leaves of fewer dimensions get leading ones; numbers are blocks too
    row = np.array([[1.0, 2.0]])
    close(nd.block([[t(row), 3.0]]), np.block([[row, 3.0]]))
    u, z = r(3), np.arange(2.0)
    close(nd.block([t(u), t(z)]), np.block([u, z]))
    x = r(3)
    close(nd.block([[[t(x)]]]), np.block([[[x]]]))  # depth 3 > ndim 1
    single = t(x)
    copy = nd.block(single)
    close(copy, x)
    assert copy is not single
    assert gradcheck(lambda a, b, c, d: nd.block([[a, b], [c, d]]),
                     tuple(t(v, requires_grad=True) for v in (A, B, C, D)))


def test_block_errors():
    a = t(r(2))
    with pytest.raises(TypeError, match=r"block: arrays\[1\] is a tuple"):
        nd.block([a, (a, a)])
    with pytest.raises(ValueError, match=r"block: list depths are mismatched.*arrays\[1\]"):
        nd.block([[a], a])
    with pytest.raises(ValueError, match=r"block: list at arrays\[0\] cannot be empty"):
        nd.block([[], [a]])


def test_atleast_returns_one_tensor_or_a_tuple():
    x0, x1, x2 = r(), r(3), r(2, 3)
    for name in ("atleast_1d", "atleast_2d", "atleast_3d"):
        f, ref = getattr(nd, name), getattr(np, name)
        one = f(t(x1))
        assert isinstance(one, nd.Tensor)
        close(one, ref(x1))
        several = f(t(x0), t(x1), t(x2))
        assert isinstance(several, tuple) and len(several) == 3
        for got, exp in zip(several, ref(x0, x1, x2)):
            close(got, exp)
        assert f() == ref() == ()


@pytest.mark.parametrize("name, args", [
    ("hstack", ([1.0, [2.0, 3.0]],)), ("vstack", ([[1.0, 2.0], (3.0, 4.0)],)),
    ("block", ([[1.0, 2.0], [3.0, 4.0]],)), ("atleast_2d", (1.5,)), ("ravel", ([[1.0, 2.0]],)),
    ("insert", ([1.0, 2.0], 1, 5.0)), ("delete", ([1.0, 2.0, 3.0], [0, 2])),
    ("choose", ([0, 1], [[1.0, 2.0], [3.0, 4.0]])), ("trim_zeros", ([0.0, 1.0, 0.0],)),
    ("resize", ([1.0, 2.0], 3)), ("rot90", ([[1.0, 2.0]], 0)), ("partition", ([3.0, 1.0], 0)),
])
def test_numbers_and_lists_become_tensors(name, args):
    """Python numbers and lists are read as NumPy reads them (on the default device), and
    the result is a Tensor also where nothing moves."""
    got = getattr(nd, name)(*args)
    assert isinstance(got, nd.Tensor), name
    close(got, getattr(np, name)(*args))


# ------------------------------------------------------------------------------ dimensions
def test_ravel_orders():
    x = r(2, 3, 2)
    close(nd.ravel(t(x)), np.ravel(x))
    close(t(x).ravel(order="F"), np.ravel(x, order="F"))
    with pytest.raises(ValueError, match="ravel: order='K' reads the elements in memory"):
        nd.ravel(t(x), order="K")
    with pytest.raises(ValueError, match="ravel: order must be one of"):
        nd.ravel(t(x), order="X")


def test_rollaxis_every_axis_and_start():
    x = r(2, 3, 4)
    for axis in range(-3, 3):
        for start in range(-3, 4):
            close(nd.rollaxis(t(x), axis, start), np.rollaxis(x, axis, start))
    with pytest.raises(ValueError, match="rollaxis: 'start' arg requires -3 <= start < 4, but "
                                         "5 was passed in"):
        nd.rollaxis(t(x), 0, 5)
    with pytest.raises(ValueError, match="rollaxis: axis 3 is out of bounds"):
        nd.rollaxis(t(x), 3)


def test_rot90_every_k_and_plane():
    x = r(2, 3, 4)
    for k in range(-2, 6):
        for axes in [(0, 1), (1, 0), (2, 0), (-1, 1)]:
            close(nd.rot90(t(x), k, axes), np.rot90(x, k, axes))
    with pytest.raises(ValueError, match="rot90: len"):
        nd.rot90(t(x), axes=(0, 1, 2))
    with pytest.raises(ValueError, match="rot90: axes must be different"):
        nd.rot90(t(x), axes=(0, -3))
    with pytest.raises(ValueError, match="rot90: axes=.* out of range"):
        nd.rot90(t(x), axes=(0, 4))


# ------------------------------------------------------------------------------ splitting
def test_splits_match_numpy():
    x = r(5, 4, 2)
    for sections in (1, 2, 3, 5, 7):  # 7 > 5: empty parts at the end
        got, exp = nd.array_split(t(x), sections), np.array_split(x, sections)
        assert isinstance(got, list) and len(got) == len(exp)
        for g, e in zip(got, exp):
            close(g, e)
    for g, e in zip(nd.array_split(t(x), [1, 3, 3], axis=1), np.array_split(x, [1, 3, 3], axis=1)):
        close(g, e)
    for sections in (np.int64(2), t(np.array(2))):  # a 0-d array is a number of sections
        assert len(nd.array_split(t(x), sections)) == 2
    assert len(nd.array_split(t(x), t(np.array([2])))) == 2  # (a 1-D one holds cut points)
    for name, arg in [("hsplit", 2), ("vsplit", [2]), ("dsplit", 2), ("hsplit", [1, 3])]:
        for g, e in zip(getattr(nd, name)(t(x), arg), getattr(np, name)(x, arg)):
            close(g, e)
    u = r(4)
    close(nd.hsplit(t(u), 2)[1], np.hsplit(u, 2)[1])
    with pytest.raises(ValueError, match="vsplit: array split does not result in an equal "
                                         "division"):
        nd.vsplit(t(x), 2)
    with pytest.raises(ValueError, match="array_split: number sections must be larger than 0"):
        nd.array_split(t(x), 0)
    with pytest.raises(ValueError, match="hsplit only works on arrays of 1 or more"):
        nd.hsplit(t(1.0), 1)
    with pytest.raises(ValueError, match="dsplit only works on arrays of 3 or more"):
        nd.dsplit(t(r(2, 2)), 1)


def test_array_split_gradient_goes_to_each_part():
    leaf = t(r(5), requires_grad=True)
    a, b, c = nd.array_split(leaf, 3)
    (a.sum() + 3 * c.sum()).backward()
    close(leaf.grad, [1.0, 1.0, 0.0, 0.0, 3.0])


# ------------------------------------------------------------------------------ editing
def test_append_matches_numpy():
    a, v = r(2, 3), r(1, 3)
    close(nd.append(t(a), t(v)), np.append(a, v))
    close(nd.append(t(a), t(v), axis=0), np.append(a, v, axis=0))
    with pytest.raises(ValueError, match="append: all the input array dimensions"):
        nd.append(t(a), t(v), axis=1)


INSERTS = [  # (arr shape, obj, values, axis)
    ((5,), 2, [7.0, 8.0], None),
    ((5,), -1, 9.0, None),
    ((5,), 5, [1.0], None),
    ((2, 3), 1, [5.0, 6.0], 1),
    ((2, 3), [1], [[5.0], [6.0]], 1),
    ((2, 3), [1], [5.0, 6.0, 7.0], 1),  # a[:, [1]] = (3,): NumPy's other broadcast
    ((2, 3), 0, [[1.0, 2.0, 3.0]], 0),
    ((2, 3), [2, 2, 0], [1.0, 2.0, 3.0], None),
    ((2, 3), [0, -1, 3], [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], 1),
    ((6,), slice(1, 5, 2), [10.0, 20.0], None),
    ((4,), np.array([True, False, True, False]), [10.0, 20.0], None),
    ((3, 2), [], np.zeros((0, 2)), 0),
]


@pytest.mark.parametrize("shape, obj, values, axis", INSERTS)
def test_insert_matches_numpy_and_differentiates(shape, obj, values, axis):
    a, v = r(*shape), np.asarray(values, dtype=np.float64)
    expected = np.insert(a, obj, v, axis=axis)
    close(nd.insert(t(a), obj, t(v), axis=axis), expected)
    # every old element and every inserted value reaches the output: the gradient of the
    # old ones is the cotangent where they land; a value's sums over where it was broadcast
    (ga, gv), w = grad_of(lambda x, y: nd.insert(x, obj, y, axis=axis), a, v)
    marked = np.insert(np.arange(a.size, dtype=np.float64).reshape(a.shape) + 1, obj,
                       np.zeros_like(v), axis=axis)
    close(ga.reshape(-1), np.bincount(marked.reshape(-1).astype(int), weights=w.reshape(-1),
                                      minlength=a.size + 1)[1:])
    close(gv.sum(), w[marked == 0].sum())


def test_insert_numpy_list_obj_and_errors():
    a = r(4)
    close(nd.insert(t(a), np.array([1, 3]), t([5.0, 6.0])), np.insert(a, [1, 3], [5.0, 6.0]))
    close(nd.insert(t(a), t(np.array([1])), 2.0), np.insert(a, [1], 2.0))
    with pytest.raises(IndexError, match="insert: index 6 is out of bounds for axis 0 with "
                                         "size 4"):
        nd.insert(t(a), 6, 1.0)
    with pytest.raises(ValueError, match="insert: index array argument obj to insert must be "
                                         "one dimensional"):
        nd.insert(t(a), [[1]], 1.0)
    with pytest.raises(TypeError, match="insert: obj must hold integers or bools"):
        nd.insert(t(a), 1.5, 1.0)
    with pytest.raises(ValueError, match="insert: values of shape"):
        nd.insert(t(r(2, 3)), [0, 1], t(r(3)), axis=1)


DELETES = [
    ((5,), 2, None), ((5,), -1, None), ((5,), [0, 0, 3], None), ((5,), [], None),
    ((2, 3), 1, 1), ((2, 3), [True, False, True], 1), ((3, 2), slice(None, None, 2), 0),
    ((2, 3), slice(4, 1, -1), None), ((4, 2), np.array([1, 2]), 0),
]


@pytest.mark.parametrize("shape, obj, axis", DELETES)
def test_delete_matches_numpy(shape, obj, axis):
    a = r(*shape)
    out = nd.delete(t(a), obj, axis=axis)
    close(out, np.delete(a, obj, axis=axis))
    (ga,), w = grad_of(lambda x: nd.delete(x, obj, axis=axis), a)
    close(ga, _scatter_back(a, obj, axis, w))


def _scatter_back(a, obj, axis, w):
    """The cotangent ``w`` of ``delete(a, obj, axis)`` put back where its entries came from."""
    ids = np.arange(a.size).reshape(a.shape)
    kept = np.delete(ids, obj, axis=axis).reshape(-1)
    g = np.zeros(a.size)
    g[kept] = w.reshape(-1)
    return g.reshape(a.shape)


def test_delete_returns_a_copy_and_errors():
    x = t(r(4))
    y = nd.delete(x, [2, 3])  # one run: still a copy (NumPy's delete returns a new array)
    y[0] = 100.0
    assert float(x[0]) != 100.0
    with pytest.raises(IndexError, match="delete: index 4 is out of bounds for axis 0 with "
                                         "size 4"):
        nd.delete(x, 4)
    with pytest.raises(ValueError, match="delete: boolean array argument obj to delete must "
                                         "be one dimensional and match the axis length of 4"):
        nd.delete(x, [True, False])


def test_resize_matches_numpy_and_counts_copies():
    a = r(2, 2)
    for shape in [(3, 3), 7, (2,), (0,), (1, 0, 2)]:
        close(nd.resize(t(a), shape), np.resize(a, shape))
    close(nd.resize(t(np.zeros((0,))), (2, 2)), np.resize(np.zeros((0,)), (2, 2)))
    (g,), _ = grad_of(lambda x: nd.resize(x, (3, 3)), a, weights=np.ones((3, 3)))
    close(g, [[3.0, 2.0], [2.0, 2.0]])  # 9 = 4 + 4 + 1 copies
    empty = t(np.zeros((0,)), requires_grad=True)
    out = nd.resize(empty, 3)
    assert out.requires_grad  # (still on empty's graph)
    with pytest.raises(ValueError, match="resize: all elements of `new_shape` must be "
                                         "non-negative"):
        nd.resize(t(a), (-1, 2))


def test_trim_zeros_matches_numpy_and_zero_gradient_where_trimmed():
    x = np.array([[0.0, 0.0, 0.0, 0.0], [0.0, 1.5, 0.0, 0.0], [0.0, 2.0, -1.0, 0.0]])
    for trim in ("fb", "f", "b", "BF"):
        for axis in (None, 0, 1, -1, (0, 1)):
            close(nd.trim_zeros(t(x), trim, axis), np.trim_zeros(x, trim, axis))
    v = np.array([0.0, 0.0, 3.0, 0.0, 4.0, 0.0])
    close(nd.trim_zeros(t(v)), np.trim_zeros(v))
    close(nd.trim_zeros(t(np.zeros(3))), np.trim_zeros(np.zeros(3)))
    (g,), w = grad_of(nd.trim_zeros, v)
    close(g, np.array([0.0, 0.0, w[0], w[1], w[2], 0.0]))
    (g,), w = grad_of(lambda a: nd.trim_zeros(a, "f", 1), x)
    expected = np.zeros_like(x)
    expected[:, 1:] = w
    close(g, expected)
    # forward mode: the tangent is trimmed where the values are
    import ndgrad.forward_ad as fwAD
    with fwAD.dual_level():
        tangent = r(6)
        out = nd.trim_zeros(fwAD.make_dual(t(v), t(tangent)))
        close(fwAD.unpack_dual(out).tangent, tangent[2:5])
    with pytest.raises(ValueError, match="trim_zeros: unexpected character"):
        nd.trim_zeros(t(v), "fx")


def test_trim_zeros_under_vmap_and_its_gradient():
    x = np.array([[0.0, 1.0, 2.0, 0.0], [0.0, 3.0, 4.0, 0.0]])
    with warnings.catch_warnings():  # (vmap says once that it loops over trim_zeros)
        warnings.simplefilter("ignore", UserWarning)
        close(nd.func.vmap(nd.trim_zeros)(t(x)), x[:, 1:3])
        g = nd.func.vmap(nd.func.grad(lambda v: (nd.trim_zeros(v) ** 2).sum()))(t(x))
        close(g, 2 * x)
        # per-example starts, one length: the rules gather from per-example positions
        y = np.array([[0.0, 1.0, 2.0, 0.0], [3.0, 4.0, 0.0, 0.0]])
        g = nd.func.vmap(nd.func.grad(lambda v: (nd.trim_zeros(v) ** 2).sum()))(t(y))
        close(g, 2 * y)
        with pytest.raises(ValueError, match="same shape"):  # trimmed lengths that differ
            nd.func.vmap(nd.trim_zeros)(t(np.array([[0.0, 1.0, 2.0], [1.0, 1.0, 2.0]])))


def test_diagflat_matches_numpy():
    v = r(2, 2)
    for k in (-2, 0, 1):
        close(nd.diagflat(t(v), k), np.diagflat(v, k))


# ------------------------------------------------------------------------------ selecting
def test_compress_and_extract_condition_forms():
    a = r(3, 4)
    for cond, axis in [([False, True, True], 0), ([True, False], 1), ([1, 0, 1, 1], None),
                       (np.array([True, False, True, False, True]), None)]:
        close(nd.compress(cond, t(a), axis=axis), np.compress(cond, a, axis=axis))
        close(nd.compress(t(np.asarray(cond)), t(a), axis=axis),
              np.compress(cond, a, axis=axis))
    cond = a > 0
    close(nd.extract(t(cond), t(a)), np.extract(cond, a))
    close(nd.extract(cond.tolist(), t(a)), np.extract(cond, a))
    close(nd.extract(t(np.where(cond, 2, 0)), t(a)), np.extract(np.where(cond, 2, 0), a))
    (g,), w = grad_of(lambda x: nd.compress([True, False, True], x, axis=0), a)
    close(g, np.stack([w[0], np.zeros(4), w[1]]))
    with pytest.raises(IndexError, match="compress: index 3 is out of bounds"):
        nd.compress([False, False, False, True], t(a), axis=0)
    with pytest.raises(IndexError, match="compress: the condition selects an index past"):
        nd.compress(t(np.array([False, False, False, True])), t(a), axis=0)
    with pytest.raises(ValueError, match="compress: condition must be a 1-d array"):
        nd.compress(t(np.ones((2, 2), dtype=bool)), t(a))
    with pytest.raises(TypeError, match="compress: out= is not supported"):
        nd.compress([True], t(a), out=t(a))


def test_compress_with_per_example_conditions_under_vmap():
    a, cond = r(2, 4), np.array([[True, False, True, False], [False, True, True, False]])
    got = nd.func.vmap(lambda c, x: nd.compress(c, x))(t(cond), t(a))
    close(got, np.stack([np.compress(c, x) for c, x in zip(cond, a)]))


def test_choose_modes_and_gradient():
    c = r(3, 4)
    idx = np.array([[0, 2, 1, 2], [1, 1, 0, 0]])  # (2, 4), broadcast against the (4,) rows
    for mode, a in [("raise", idx), ("wrap", idx - 3), ("clip", idx * 2 - 1)]:
        close(nd.choose(t(a), [t(row) for row in c], mode=mode),
              np.choose(a, list(c), mode=mode))
        close(nd.choose(t(a), t(c), mode=mode), np.choose(a, c, mode=mode))
    close(t(idx[0]).choose(t(c)), np.choose(idx[0], c))  # the Tensor method
    (g,), w = grad_of(lambda x: nd.choose(t(idx), x), c)
    expected = np.zeros((3, 2, 4))
    for i in range(2):
        for j in range(4):
            expected[idx[i, j], i, j] = w[i, j]
    close(g, expected.sum(axis=1))  # each choice row was broadcast over the 2 index rows
    with pytest.raises(ValueError, match="choose: invalid entry in choice array"):
        nd.choose(t(np.array([0, 3])), [t(r(2))] * 3)
    with pytest.raises(ValueError, match="choose: invalid entry in choice array"):
        nd.choose(t(np.array([-1, 0])), [t(r(2))] * 3)
    with pytest.raises(TypeError, match="choose: the indices must be integers"):
        nd.choose(t(np.array([0.0])), [t(r(1))])
    with pytest.raises(ValueError, match="choose: mode must be"):
        nd.choose(t(np.array([0])), [t(r(1))], mode="bounce")


def test_select_first_true_wins_and_default_is_differentiable():
    x = np.array([-2.0, 0.5, 3.0, 1.5])
    conds = [x < 0, x > 1, x > 2]
    got = nd.select([t(c) for c in conds], [t(-x), t(10 * x), t(x + 100)], default=t(x * 0.5))
    close(got, np.select(conds, [-x, 10 * x, x + 100], default=x * 0.5))
    close(nd.select([t(c) for c in conds], [1.0, t(x), 2.0]),
          np.select(conds, [1.0, x, 2.0]))
    (gc, gd), w = grad_of(lambda a, d: nd.select([t(c) for c in conds], [a, a, a], d), x,
                          np.zeros(4))
    close(gc, w * (conds[0] | conds[1] | conds[2]))
    close(gd, w * ~(conds[0] | conds[1] | conds[2]))
    with pytest.raises(TypeError, match="select: invalid entry 1 in condlist: should be "
                                        "boolean"):
        nd.select([t(conds[0]), t(x)], [t(x), t(x)])
    with pytest.raises(ValueError, match="select: list of cases must be same length"):
        nd.select([t(conds[0])], [t(x), t(x)])
    with pytest.raises(ValueError, match="select: select with an empty condition list"):
        nd.select([], [])


def test_piecewise_matches_numpy_and_differentiates_the_pieces():
    x = np.array([-2.0, -0.5, 0.5, 1.0, 3.0])
    conds = [x < 0, (x > 0) & (x < 2)]

    def square_plus(v, c, scale=1.0):
        return v * v * scale + c

    funcs = [square_plus, 7.0, lambda v, c, scale=1.0: -v * scale]  # with "otherwise"
    got = nd.piecewise(t(x), [t(c) for c in conds], funcs, 1.0, scale=2.0)
    close(got, np.piecewise(x, conds, funcs, 1.0, scale=2.0))
    (g,), w = grad_of(lambda v: nd.piecewise(v, conds, funcs, 1.0, scale=2.0), x)
    close(g, w * np.select(conds + [np.ones(5, bool)], [4 * x, 0 * x, -2 * np.ones(5)]))
    # a single condition, overlapping conditions (the later wins), a 0-d x, int x
    close(nd.piecewise(t(x), t(x > 0), [lambda v: v + 1]), np.piecewise(x, x > 0,
                                                                       [lambda v: v + 1]))
    over = [x > -1, x > 0]
    close(nd.piecewise(t(x), over, [1.0, 2.0]), np.piecewise(x, over, [1.0, 2.0]))
    close(nd.piecewise(t(np.float64(2.0)), [True, False], [lambda v: v * 3, 0.0]),
          np.piecewise(np.float64(2.0), [True, False], [lambda v: v * 3, 0.0]))
    xi = np.arange(-2, 3)
    got = nd.piecewise(t(xi), [xi < 0], [lambda v: v * 1.5, 0.5])
    assert got.dtype == np.int64
    close(got, np.piecewise(xi, [xi < 0], [lambda v: v * 1.5, 0.5]))
    # the result is on x's graph even where no function is applied (zero gradient)
    leaf = t(x, requires_grad=True)
    out = nd.piecewise(leaf, [np.zeros(5, bool)], [lambda v: v])
    out.sum().backward()
    close(leaf.grad, np.zeros(5))
    with pytest.raises(ValueError, match="piecewise: with 2 condition"):
        nd.piecewise(t(x), conds, [1.0])


def test_partition_contract_and_gradient_follow_the_elements():
    x = RNG.permutation(12).astype(np.float64).reshape(3, 4)
    for kth, axis in [(1, -1), ([0, 3], 1), (-1, 0), (5, None)]:
        got = host(nd.partition(t(x), kth, axis=axis))
        ref = np.partition(x, kth, axis=axis)
        ks = np.atleast_1d(kth)
        ax = -1 if axis is None else axis
        flat_got = got if axis is not None else got.reshape(-1)
        flat_ref = ref if axis is not None else ref.reshape(-1)
        for k in ks:  # same k-th values; smaller before, larger after; same multisets
            close(np.take(flat_got, k, axis=ax), np.take(flat_ref, k, axis=ax))
        close(np.sort(flat_got, axis=ax), np.sort(flat_ref, axis=ax))
        k = int(ks[0]) % flat_got.shape[ax]
        kv = np.take(flat_got, [k], axis=ax)
        assert np.all(np.take(flat_got, np.arange(k), axis=ax) <= kv)
        assert np.all(np.take(flat_got, np.arange(k + 1, flat_got.shape[ax]), axis=ax) >= kv)
    v = np.array([3.0, 1.0, 2.0, 5.0])
    leaf = t(v, requires_grad=True)
    nd.partition(leaf, 2)[2].backward()  # the third smallest is v[0]
    close(leaf.grad, [1.0, 0.0, 0.0, 0.0])
    ties = t(np.array([1.0, 1.0, 0.0]), requires_grad=True)
    nd.partition(ties, 1)[1].backward()  # at a tie, as sort: the first of the equal elements
    close(ties.grad, [1.0, 0.0, 0.0])
    with pytest.raises(ValueError, match=r"partition: kth\(=4\) out of bounds \(4\)"):
        nd.partition(t(v), 4)
    with pytest.raises(ValueError, match="partition: kind must be 'introselect'"):
        nd.partition(t(v), 1, kind="quick")


# ------------------------------------------------------------------------------ apply
def test_apply_along_axis_matches_numpy_for_every_result_shape():
    x = r(2, 3, 4)
    funcs = [lambda v: (v * v).sum(), lambda v: v[::-1] * 2.0, lambda v: v[:, None] * v,
             lambda v, c, d=1.0: v[:2] * c + d]
    for f in funcs:
        extra = (3.0,) if f is funcs[-1] else ()
        for axis in range(-3, 3):
            close(nd.apply_along_axis(f, axis, t(x), *extra),
                  np.apply_along_axis(f, axis, x, *extra))
    close(nd.apply_along_axis(funcs[-1], 1, t(x), 3.0, d=-1.0),
          np.apply_along_axis(funcs[-1], 1, x, 3.0, d=-1.0))
    assert gradcheck(lambda a: nd.apply_along_axis(funcs[2], 1, a),
                     (t(r(2, 3), requires_grad=True),))
    with pytest.raises(ValueError, match="apply_along_axis: cannot apply_along_axis when any "
                                         "iteration dimensions are 0"):
        nd.apply_along_axis(funcs[0], 1, t(np.zeros((0, 3))))
    with pytest.raises(ValueError, match="apply_along_axis: func1d returned shape"):
        nd.apply_along_axis(lambda v: v[:1] if float(v[0]) > 0 else v[:2], 1,
                            t(np.array([[1.0, 2.0], [-1.0, 2.0]])))


def test_apply_over_axes_matches_numpy():
    x = r(2, 3, 4)
    for axes in (0, [0, 2], (-1, 0), [1, 2, 0]):
        close(nd.apply_over_axes(nd.sum, t(x), axes), np.apply_over_axes(np.sum, x, axes))
    close(nd.apply_over_axes(lambda a, ax: nd.max(a, axis=ax, keepdims=True), t(x), [1]),
          np.apply_over_axes(lambda a, ax: np.max(a, axis=ax, keepdims=True), x, [1]))
    with pytest.raises(ValueError, match="apply_over_axes: function is not returning"):
        nd.apply_over_axes(lambda a, ax: nd.sum(a), t(x), [0])


# ------------------------------------------------------------------------------ in place
def test_place_put_putmask_fill_diagonal_match_numpy():
    cases = [
        (place, np.place, (r(2, 3),), lambda a: (a > 0, [10.0, 20.0])),
        (put, np.put, (r(2, 3),), lambda a: ([0, 5, -1, 0], [1.0, 2.0, 3.0])),
        (put, np.put, (r(5),), lambda a: ([-7, 9], [1.0, 2.0], "clip")),
        (put, np.put, (r(5),), lambda a: ([-7, 9], [1.0, 2.0], "wrap")),
        (putmask, np.putmask, (r(2, 3),), lambda a: (a > 0, [10.0, 20.0, 30.0, 40.0])),
        (fill_diagonal, np.fill_diagonal, (r(5, 3),), lambda a: ([1.0, 2.0],)),
        (fill_diagonal, np.fill_diagonal, (r(5, 3),), lambda a: (7.0, True)),
        (fill_diagonal, np.fill_diagonal, (r(3, 3, 3),), lambda a: ([1.0, 2.0, 3.0, 4.0],)),
    ]
    for ours, theirs, (a,), args in cases:
        ref = a.copy()
        assert theirs(ref, *args(a)) is None
        x = t(a)
        assert ours(x, *args(a)) is None
        close(x, ref)


def test_put_along_axis_matches_numpy():
    a = r(3, 4)
    idx = np.argsort(a, axis=1)[:, :2]
    for axis, indices, values in [(1, idx, 0.0), (0, np.array([[2, 0, 1, 1]]), r(1, 4)),
                                  (None, np.array([0, 11, -1]), np.array([1.0, 2.0, 3.0]))]:
        ref = a.copy()
        np.put_along_axis(ref, indices, values, axis)
        x = t(a)
        put_along_axis(x, t(indices), t(np.asarray(values)), axis)
        close(x, ref)
    with pytest.raises(ValueError, match="put_along_axis: `indices` and `arr` must have the "
                                         "same number of dimensions"):
        put_along_axis(t(a), t(np.array([0])), 1.0, 1)
    with pytest.raises(IndexError, match="put_along_axis: index 4 is out of bounds for axis 1"):
        put_along_axis(t(a), t(np.array([[4]])), 1.0, 1)


def test_in_place_writes_are_recorded_and_checked():
    base = r(2, 3)
    v = t(np.array([5.0, 6.0]), requires_grad=True)
    w0 = t(base, requires_grad=True)
    a = w0 * 1.0  # a non-leaf: written in place
    version = a._counter().value
    put(a, [1, 4], v)
    assert a._counter().value > version  # (the version counter, as any in-place write)
    weights = r(2, 3)
    (a * t(weights)).sum().backward()
    close(v.grad, weights.reshape(-1)[[1, 4]])
    expected = weights.copy()
    expected.reshape(-1)[[1, 4]] = 0.0  # overwritten: no gradient to the old values
    close(w0.grad, expected)
    # repeated positions keep the last value: the earlier one gets no gradient
    v2 = t(np.array([1.0, 2.0]), requires_grad=True)
    b = t(np.zeros(3))
    put(b, [0, 0], v2)
    close(b, [2.0, 0.0, 0.0])
    b.sum().backward()
    close(v2.grad, [0.0, 1.0])
    # a leaf that requires grad refuses, as any in-place write
    with pytest.raises(RuntimeError, match="leaf"):
        fill_diagonal(t(r(2, 2), requires_grad=True), 1.0)
    # a value saved for backward, changed in place: backward refuses
    c = t(r(3), requires_grad=True) * 1.0
    y = (c * c).sum()
    putmask(c, t(np.array([True, False, False])), 0.0)
    with pytest.raises(RuntimeError):
        y.backward()


def test_in_place_errors():
    with pytest.raises(TypeError, match="place: the array written to must be an ndgrad "
                                        "Tensor"):
        place(np.zeros(3), [True, False, True], [1.0])
    with pytest.raises(ValueError, match="place: mask and data must be the same size"):
        place(t(np.zeros(3)), [True], [1.0])
    with pytest.raises(ValueError, match="place: cannot insert from an empty array"):
        place(t(np.zeros(3)), [True, False, True], [])
    with pytest.raises(IndexError, match="put: index 3 is out of bounds for size 3"):
        put(t(np.zeros(3)), [3], [1.0])
    with pytest.raises(ValueError, match="putmask: mask and data must be the same size"):
        putmask(t(np.zeros(3)), [True], [1.0])
    with pytest.raises(ValueError, match="fill_diagonal: array must be at least 2-d"):
        fill_diagonal(t(np.zeros(3)), 1.0)
    with pytest.raises(ValueError, match="fill_diagonal: all dimensions of input must be of "
                                         "equal length"):
        fill_diagonal(t(np.zeros((2, 2, 3))), 1.0)


# ------------------------------------------------------------------------------ NumPy's own
@pytest.mark.parametrize("name, call", [
    ("vstack", lambda a, b: np.vstack([a, b])),
    ("hstack", lambda a, b: np.hstack([a, b])),
    ("dstack", lambda a, b: np.dstack([a, b])),
    ("column_stack", lambda a, b: np.column_stack([a, b])),
    ("concatenate", lambda a, b: np.concatenate([a, b], axis=None)),
    ("block", lambda a, b: np.block([[a], [b]])),
    ("atleast_3d", lambda a, b: np.atleast_3d(a)),
    ("array_split", lambda a, b: np.array_split(a, 3)[1]),
    ("append", lambda a, b: np.append(a, b)),
    ("insert", lambda a, b: np.insert(a, [1, 1], b[:2])),
    ("delete", lambda a, b: np.delete(a, [0, 2])),
    ("resize", lambda a, b: np.resize(a, (2, 4))),
    ("ravel", lambda a, b: np.ravel(a)),
    ("rot90", lambda a, b: np.rot90(np.stack([a, b]))),
    ("rollaxis", lambda a, b: np.rollaxis(np.stack([a, b]), 1)),
    ("diagflat", lambda a, b: np.diagflat(a)),
    ("compress", lambda a, b: np.compress([True, False, True], a)),
    ("extract", lambda a, b: np.extract(b > 0, a)),
    ("choose", lambda a, b: np.choose([1, 0, 1], [a, b])),
    ("select", lambda a, b: np.select([b > 0], [a], 0.5)),
    ("piecewise", lambda a, b: np.piecewise(a, [a > 0], [lambda v: v * 2, 1.0])),
    ("partition", lambda a, b: np.partition(a, 1)),
    ("trim_zeros", lambda a, b: np.trim_zeros(a)),
    ("apply_along_axis", lambda a, b: np.apply_along_axis(lambda v: v * 2, 0, a)),
    ("apply_over_axes", lambda a, b: np.apply_over_axes(np.sum, np.stack([a, b]), [0, 1])),
])
def test_numpy_functions_on_tensors_run_these(name, call):
    a, b = np.array([1.5, -2.0, 3.0]), np.array([0.5, 1.0, -1.0])
    ta = t(a, requires_grad=True)
    got = call(ta, t(b))
    assert isinstance(got, nd.Tensor) and got.grad_fn is not None, name
    close(got, call(a, b))
    got.sum().backward()
    assert ta.grad is not None
