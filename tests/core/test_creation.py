"""Creation functions, dtypes, the default dtype, NumPy 2 promotion, devices and seeding
(issue "The Tensor": Creation and dtypes)."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

import ndgrad as nd
from support import val


@pytest.fixture
def default_dtype():
    """Restore the default dtype after a test that changes it."""
    before = nd.get_default_dtype()
    yield
    nd.set_default_dtype(before)


# ---------------------------------------------------------------------------- tensor()
@pytest.mark.parametrize("data,dtype", [
    (1.5, np.float64), ([1.0, 2.0], np.float64), ([1, 2.5], np.float64), ([1, 2], np.int64),
    (3, np.int64), ([True, False], np.bool_), ([1j, 2.0], np.complex128),
    ([[1.0], [2.0]], np.float64),
])
def test_tensor_infers_dtypes_from_python_data(data, dtype):
    t = nd.tensor(data)
    assert t.dtype == dtype
    np.testing.assert_array_equal(t.cpu().numpy(), np.asarray(data))


def test_tensor_keeps_the_dtype_of_numpy_input():
    for dt in (np.float32, np.float16, np.int32, np.uint8, np.complex64):
        a = np.arange(3).astype(dt)
        assert nd.tensor(a).dtype == dt


@pytest.mark.parametrize("spec", [nd.float32, np.float32, "float32", np.dtype("float32")])
def test_dtype_argument_accepts_every_spelling(spec):
    t = nd.tensor([1, 2], dtype=spec)
    assert t.dtype == nd.float32
    np.testing.assert_array_equal(t.cpu().numpy(), np.array([1, 2], dtype=np.float32))


def test_tensor_copies_its_input():
    a = np.array([1.0, 2.0])
    t = nd.tensor(a)
    a[0] = 100.0
    np.testing.assert_array_equal(t.cpu().numpy(), [1.0, 2.0])


def test_tensor_of_tensors():
    t = nd.tensor([nd.tensor([1.0, 2.0]), nd.tensor([3.0, 4.0])])
    np.testing.assert_array_equal(t.cpu().numpy(), [[1.0, 2.0], [3.0, 4.0]])
    src = nd.tensor([1.0, 2.0], requires_grad=True)
    with pytest.warns(UserWarning, match=r"ndgrad.tensor\(data\) makes a new leaf"):
        c = nd.tensor(src)
    assert c.is_leaf and not c.requires_grad
    assert not src.backend.shares_memory(c._data, src._data)


def test_tensor_of_tensors_with_history_warns_and_copies_their_values():
    # Note [tensor() makes a leaf]: a leaf, as torch.tensor; the lost derivative is said
    a = nd.tensor(1.5, requires_grad=True)
    b = nd.tensor(-2.0, requires_grad=True)
    with pytest.warns(UserWarning, match=r"1 tensor\(s\) that require grad.*ndgrad.asarray"):
        t = nd.tensor([[a.detach(), 3.0], [b, 4.0]])
    np.testing.assert_array_equal(t.cpu().numpy(), [[1.5, 3.0], [-2.0, 4.0]])
    assert t.is_leaf and not t.requires_grad
    # a transform's value: read one level down, with the same warning
    for transform in (lambda f, x: nd.func.grad(f)(x),
                      lambda f, x: nd.func.jvp(f, (x,), (nd.ones_like(x),))[1]):
        with pytest.warns(UserWarning, match="carry a transform's value"):
            out = transform(lambda x: nd.sum(nd.tensor([x[0], x[1]]) * x), nd.tensor([1.0, 2.0]))
        # the copy is a constant c = x: d/dx sum(c x) = c, its jvp along ones is sum(c)
        expected = [1.0, 2.0] if out.ndim else 3.0
        np.testing.assert_allclose(val(out), expected)
    # plain values, or detached ones, say nothing
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        nd.tensor([nd.tensor(1.0), a.detach()])
    # a vmap batch has no single value to copy: refused with the function named
    with pytest.raises(TypeError, match="ndgrad.tensor"):
        nd.func.vmap(lambda x: nd.tensor([x, x]))(nd.tensor([1.0, 2.0]))


def test_tensor_requires_grad_makes_a_leaf():
    x = nd.tensor([1.0, 2.0], requires_grad=True)
    assert x.requires_grad and x.is_leaf and x.grad is None
    (x * x).sum().backward()
    np.testing.assert_array_equal(x.grad.cpu().numpy(), [2.0, 4.0])


@pytest.mark.parametrize("data", [[1, 2], [True], 3])
def test_integer_and_bool_tensors_cannot_require_grad(data):
    with pytest.raises(RuntimeError,
                       match="only Tensors of floating point and complex dtype can require "
                             "gradients"):
        nd.tensor(data, requires_grad=True)


def test_complex_tensors_can_require_grad():
    z = nd.tensor([1 + 2j], requires_grad=True)
    assert z.requires_grad and z.dtype == nd.complex128


def test_tensor_rejects_non_numeric_data():
    with pytest.raises(TypeError, match="numeric"):
        nd.tensor([object()])


# ---------------------------------------------------------------------------- asarray()
@pytest.mark.cpu_only("asarray without a copy shares memory with a NumPy array only on the CPU")
def test_asarray_shares_memory_with_numpy_arrays():
    a = np.arange(4.0)
    t = nd.asarray(a)
    a[0] = -1.0
    assert t.cpu().numpy()[0] == -1.0
    c = nd.asarray(a, copy=True)
    assert not np.shares_memory(c.cpu().numpy(), a)


def test_asarray_returns_a_tensor_unchanged():
    t = nd.tensor([1.0, 2.0])
    assert nd.asarray(t) is t
    f = nd.asarray(t, dtype=nd.float32)
    assert f is not t and f.dtype == nd.float32
    np.testing.assert_array_equal(f.cpu().numpy(), [1.0, 2.0])


def test_asarray_keeps_the_memory_layout():
    a = np.asfortranarray(np.arange(6.0).reshape(2, 3))
    t = nd.asarray(a, requires_grad=True)
    assert t.requires_grad and t.is_leaf
    assert t.detach().cpu().numpy().flags.f_contiguous


def test_asarray_of_a_tensor_converts_it_in_its_graph():
    """A dtype change or a copy of a tensor is differentiable (``astype``, ``clone``)."""
    x = nd.tensor([1.0, 2.0], requires_grad=True)
    f = nd.asarray(x, dtype=nd.float32)
    c = nd.asarray(x, copy=True)
    assert f.dtype == nd.float32 and c is not x and c._data is not x._data
    (gf,) = nd.autograd.grad((f * 3).sum(), x)
    (gc,) = nd.autograd.grad((c * c).sum(), x)
    assert gf.dtype == nd.float64
    np.testing.assert_allclose(val(gf), [3.0, 3.0])
    np.testing.assert_allclose(val(gc), [2.0, 4.0])


def test_asarray_stacks_a_list_holding_tensors():
    t = nd.tensor(2.0, requires_grad=True)
    y = nd.asarray([t, 3 * t, 1.0])
    np.testing.assert_allclose(val(y), [2.0, 6.0, 1.0])
    (y * nd.tensor([1.0, 1.0, 5.0])).sum().backward()
    np.testing.assert_allclose(val(t.grad), 4.0)
    f = nd.func.grad(lambda s: (nd.asarray([[s, s * s], [1.0, 2.0]]) ** 2).sum())
    np.testing.assert_allclose(val(f(nd.tensor(1.5))), 2 * 1.5 + 4 * 1.5 ** 3)  # d(s^2 + s^4)


# ---------------------------------------------------------------------------- filled tensors
def test_zeros_ones_empty_take_the_shape_as_the_array_api_writes_it():
    """``zeros(shape, *, dtype, device)``: an int, a tuple, or ``shape=`` by keyword."""
    for fn in (nd.zeros, nd.ones, nd.empty):
        assert fn(shape=(2, 3)).shape == (2, 3)
        assert fn(shape=3).shape == (3,)
        assert fn(np.int64(2)).shape == (2,)
        assert fn(shape=()).shape == ()
        name = fn.__name__
        with pytest.raises(TypeError, match=rf"ndgrad\.{name}: the shape was given by position "
                                            "and as shape="):
            fn(2, shape=3)
        with pytest.raises(TypeError, match=rf"ndgrad\.{name}: the shape must be ints.*got "
                                            r"\(\(2, 3\), dtype\('float32'\)\) \(pass dtype"):
            fn((2, 3), nd.float32)
        with pytest.raises(TypeError, match=rf"ndgrad\.{name}: the shape must be ints"):
            fn(2.5)
    np.testing.assert_array_equal(val(nd.ones(shape=(2,), dtype=nd.int32)),
                                  np.ones(2, np.int32))


def test_full_is_differentiable_in_its_fill_value():
    """``full(shape, v)`` is ``v`` broadcast (JAX, HIPS autograd): the gradient is the
    cotangent summed over the broadcast dimensions."""
    rng = np.random.default_rng(4)
    cot = rng.standard_normal((2, 3))
    v = nd.tensor(0.5, requires_grad=True)
    y = nd.full((2, 3), v)
    np.testing.assert_array_equal(val(y), np.full((2, 3), 0.5))
    (y * nd.tensor(cot)).sum().backward()
    np.testing.assert_allclose(val(v.grad), cot.sum(), rtol=1e-13)
    row = nd.tensor([1.0, 2.0, 3.0], requires_grad=True)  # an array fill value, as NumPy's
    (g,) = nd.autograd.grad((nd.full((2, 3), row, dtype=nd.float32) * nd.tensor(cot)).sum(), row)
    np.testing.assert_allclose(val(g), cot.sum(axis=0), atol=1e-6)
    assert g.dtype == nd.float64
    like = nd.zeros((2, 3), dtype=nd.float32)
    w = nd.full_like(like, v)
    assert w.dtype == nd.float32 and w.shape == (2, 3)
    (g,) = nd.autograd.grad((w * nd.tensor(cot, dtype=nd.float32)).sum(), v)
    np.testing.assert_allclose(val(g), cot.sum(), atol=1e-6)
    # under the transforms
    s = nd.tensor(1.5)
    np.testing.assert_allclose(val(nd.func.grad(lambda s: (nd.full((2, 3), s) ** 2).sum())(s)),
                               6 * 2 * 1.5)
    np.testing.assert_allclose(val(nd.func.jvp(lambda s: nd.full_like(like, s), (s,),
                                               (nd.tensor(2.0),))[1]), np.full((2, 3), 2.0))
    np.testing.assert_allclose(val(nd.func.vmap(lambda s: nd.full((2,), s))(nd.tensor([1.0, 4.0]))),
                               [[1.0, 1.0], [4.0, 4.0]])
    with pytest.raises(ValueError, match=r"ndgrad\.full: the fill value of shape \(3,\) does "
                                         r"not broadcast to the shape \(2,\)"):
        nd.full((2,), row)
    leaf = nd.full((2,), nd.tensor(1.0), requires_grad=True)
    assert leaf.requires_grad and leaf.is_leaf



@pytest.mark.parametrize("fn,ref", [(nd.zeros, np.zeros), (nd.ones, np.ones)])
def test_zeros_and_ones(fn, ref):
    for shape_args in [(2, 3), ((2, 3),), ([2, 3],), ((),)]:
        t = fn(*shape_args)
        expected = ref(shape_args[0] if len(shape_args) == 1 else shape_args)
        assert t.dtype == nd.float64
        assert t.shape == expected.shape
        np.testing.assert_array_equal(t.cpu().numpy(), expected)
    t = fn(3, dtype=nd.int32)
    assert t.dtype == nd.int32
    np.testing.assert_array_equal(t.cpu().numpy(), ref(3, dtype=np.int32))


def test_empty_has_shape_and_dtype():
    t = nd.empty(2, 4, dtype=nd.float32)
    assert t.shape == (2, 4) and t.dtype == nd.float32
    assert nd.empty((3,)).dtype == nd.float64


def test_full():
    t = nd.full((2, 2), 7.5)
    assert t.dtype == nd.float64
    np.testing.assert_array_equal(t.cpu().numpy(), np.full((2, 2), 7.5))
    i = nd.full(3, 7)
    assert i.dtype == nd.int64 and i.shape == (3,)
    np.testing.assert_array_equal(nd.full((2,), 1, dtype=nd.float32).cpu().numpy(),
                                  np.ones(2, np.float32))


@pytest.mark.parametrize("name", ["zeros_like", "ones_like", "empty_like", "full_like"])
def test_like_functions(name):
    fn = getattr(nd, name)
    extra = (3.5,) if name == "full_like" else ()
    ref = {"zeros_like": 0.0, "ones_like": 1.0, "full_like": 3.5, "empty_like": None}[name]
    src = nd.tensor(np.arange(6, dtype=np.float32).reshape(2, 3), requires_grad=True)
    for x in (src, src.detach().cpu().numpy()):
        t = fn(x, *extra)
        assert t.shape == (2, 3) and t.dtype == nd.float32
        assert not t.requires_grad and t.is_leaf  # never inherits requires_grad
        if ref is not None:
            np.testing.assert_array_equal(t.cpu().numpy(), np.full((2, 3), ref, np.float32))
    t = fn(src, *extra, dtype=nd.float64, requires_grad=True)
    assert t.dtype == nd.float64 and t.requires_grad and t.is_leaf


def test_arange_linspace_eye_match_numpy():
    np.testing.assert_array_equal(nd.arange(5).cpu().numpy(), np.arange(5))
    assert nd.arange(5).dtype == nd.int64
    np.testing.assert_array_equal(nd.arange(1, 7, 2).cpu().numpy(), np.arange(1, 7, 2))
    # a step with only a stop (the array API's arange(stop, step=k)): [0, stop) by k, not
    # the step dropped (once 1e9 values for arange(1e9, step=1e8))
    np.testing.assert_array_equal(nd.arange(10, step=3).cpu().numpy(), [0, 3, 6, 9])
    np.testing.assert_array_equal(nd.arange(1e9, step=2.5e8).cpu().numpy(),
                                  [0.0, 2.5e8, 5e8, 7.5e8])
    a = nd.arange(0.0, 1.0, 0.25)
    assert a.dtype == nd.float64
    np.testing.assert_array_equal(a.cpu().numpy(), np.arange(0.0, 1.0, 0.25))
    assert nd.arange(3, dtype=nd.float32).dtype == nd.float32
    np.testing.assert_allclose(nd.linspace(-1, 2, 7).cpu().numpy(), np.linspace(-1, 2, 7))
    assert nd.linspace(0, 1, 3).dtype == nd.float64
    np.testing.assert_allclose(nd.linspace(0, 1, 4, endpoint=False).cpu().numpy(),
                               np.linspace(0, 1, 4, endpoint=False))
    np.testing.assert_array_equal(nd.eye(3).cpu().numpy(), np.eye(3))
    np.testing.assert_array_equal(nd.eye(2, 4, k=1).cpu().numpy(), np.eye(2, 4, k=1))
    assert nd.eye(2, dtype=nd.int8).dtype == nd.int8


@pytest.mark.parametrize("indexing", ["xy", "ij"])
def test_meshgrid_matches_numpy(indexing):
    a, b, c = np.array([1.0, 2.0, 3.0]), np.array([-1.0, 0.5]), np.array([4.0, 5.0, 6.0, 7.0])
    got = nd.meshgrid(nd.tensor(a), nd.tensor(b), nd.tensor(c), indexing=indexing)
    ref = np.meshgrid(a, b, c, indexing=indexing)
    assert len(got) == 3
    for g, r in zip(got, ref):
        assert g.shape == r.shape
        np.testing.assert_array_equal(val(g), r)


def test_meshgrid_is_differentiable():
    x = nd.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = nd.tensor([-1.0, 0.5], requires_grad=True)
    X, Y = nd.meshgrid(x, y)  # 'xy': shapes (2, 3)
    (X * Y).sum().backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), np.full(3, -0.5))  # sum over y
    np.testing.assert_allclose(y.grad.cpu().numpy(), np.full(2, 6.0))   # sum over x


@pytest.mark.parametrize("make", [
    lambda **kw: nd.tensor([1.0, 2.0], **kw), lambda **kw: nd.asarray(np.ones(2), **kw),
    lambda **kw: nd.zeros(2, **kw), lambda **kw: nd.ones(2, **kw), lambda **kw: nd.empty(2, **kw),
    lambda **kw: nd.full((2,), 3.0, **kw), lambda **kw: nd.zeros_like(nd.ones(2), **kw),
    lambda **kw: nd.ones_like(nd.ones(2), **kw), lambda **kw: nd.empty_like(nd.ones(2), **kw),
    lambda **kw: nd.full_like(nd.ones(2), 2.0, **kw), lambda **kw: nd.arange(0.0, 2.0, **kw),
    lambda **kw: nd.linspace(0, 1, 2, **kw), lambda **kw: nd.eye(2, **kw),
    lambda **kw: nd.randn(2, **kw), lambda **kw: nd.rand(2, **kw),
], ids=["tensor", "asarray", "zeros", "ones", "empty", "full", "zeros_like", "ones_like",
        "empty_like", "full_like", "arange", "linspace", "eye", "randn", "rand"])
def test_every_creation_function_takes_dtype_device_and_requires_grad(make):
    t = make(dtype=nd.float32, device="cpu", requires_grad=True)
    assert t.dtype == nd.float32
    assert t.device == "cpu"
    assert t.requires_grad and t.is_leaf and t.grad_fn is None
    t2 = make(device=nd.device("cpu"))
    assert t2.device == nd.device("cpu") and not t2.requires_grad


def test_integer_creation_with_requires_grad_is_an_error():
    with pytest.raises(RuntimeError, match="floating point and complex"):
        nd.arange(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="floating point and complex"):
        nd.zeros(2, dtype=nd.int64, requires_grad=True)


# ---------------------------------------------------------------------------- default dtype
def test_default_dtype_is_float64():
    assert nd.get_default_dtype() == nd.float64
    assert nd.tensor(1.5).dtype == nd.float64
    assert nd.zeros(1).dtype == nd.float64


def test_set_default_dtype_changes_python_floats_and_float_creation(default_dtype):
    nd.set_default_dtype(nd.float32)
    assert nd.get_default_dtype() == nd.float32
    assert nd.tensor(1.5).dtype == nd.float32
    assert nd.tensor([1, 2.5]).dtype == nd.float32
    assert nd.tensor([1j]).dtype == nd.complex64
    for t in (nd.zeros(2), nd.ones(2), nd.empty(2), nd.full((2,), 1.5), nd.eye(2),
              nd.arange(0.0, 1.0, 0.5), nd.linspace(0, 1, 3), nd.randn(2), nd.rand(2)):
        assert t.dtype == nd.float32
    # integers and NumPy arrays keep their own dtypes
    assert nd.tensor([1, 2]).dtype == nd.int64
    assert nd.full((2,), 3).dtype == nd.int64
    assert nd.tensor(np.array([1.5])).dtype == nd.float64
    assert nd.tensor([1.5], dtype=nd.float64).dtype == nd.float64


def test_set_default_dtype_is_restored_by_the_fixture_pattern(default_dtype):
    nd.set_default_dtype("float16")
    assert nd.tensor([0.5]).dtype == nd.float16


def test_set_default_dtype_rejects_non_floating_dtypes():
    with pytest.raises(TypeError, match="floating dtype.*int64"):
        nd.set_default_dtype(nd.int64)
    assert nd.get_default_dtype() == nd.float64


# ---------------------------------------------------------------------------- dtypes
def test_dtypes_compare_equal_with_tensor_dtype_and_numpy():
    pairs = [(nd.float16, np.float16), (nd.float32, np.float32), (nd.float64, np.float64),
             (nd.complex64, np.complex64), (nd.complex128, np.complex128), (nd.int8, np.int8),
             (nd.int16, np.int16), (nd.int32, np.int32), (nd.int64, np.int64),
             (nd.uint8, np.uint8), (nd.bool, np.bool_), (nd.bool_, np.bool_)]
    for ndt, npt in pairs:
        assert ndt == npt
        assert nd.zeros(2, dtype=ndt).dtype == ndt
        assert nd.zeros(2, dtype=ndt).dtype == npt
    assert nd.tensor([1.0]).dtype != nd.float32


def test_an_unknown_dtype_is_a_clear_error():
    with pytest.raises(TypeError, match="is not a dtype"):
        nd.zeros(2, dtype=object())


# ---------------------------------------------------------------------------- promotion
@pytest.mark.parametrize("make,expected", [
    (lambda: nd.tensor([1.0], dtype=nd.float32) * 2.0, np.float32),  # Python float is weak
    (lambda: 2.0 * nd.tensor([1.0], dtype=nd.float32), np.float32),
    (lambda: nd.tensor([1.0], dtype=nd.float16) + 1.0, np.float16),
    (lambda: nd.tensor([1, 2]) * 1.5, np.float64),
    (lambda: nd.tensor([1, 2], dtype=nd.int32) + 1, np.int32),
    (lambda: nd.tensor([1.0], dtype=nd.float32) + nd.tensor([1.0]), np.float64),
    (lambda: nd.tensor([1.0], dtype=nd.float32) + np.float64(1.0), np.float64),  # NEP 50
    pytest.param(lambda: nd.tensor([1.0], dtype=nd.float32) + np.ones(1), np.float64,
                 marks=pytest.mark.cpu_only("a NumPy array operand is a cpu operand")),
    (lambda: nd.tensor([1.0], dtype=nd.float32) * 1j, np.complex64),
    (lambda: nd.tensor([1, 2]) / 2, np.float64),
    (lambda: nd.tensor([1, 2], dtype=nd.int8) + nd.tensor([1.0], dtype=nd.float16), np.float16),
], ids=["f32*float", "float*f32", "f16+float", "int*float", "i32+int", "f32+f64",
        "f32+np.float64", "f32+f64 array", "f32*complex", "int/int", "i8+f16"])
def test_promotion_follows_numpy_2(make, expected):
    assert make().dtype == expected


def test_float32_gradients_stay_float32():
    x = nd.tensor([1.0, 2.0], dtype=nd.float32, requires_grad=True)
    y = (x * 2.0 + 1.0) * x
    assert y.dtype == nd.float32
    y.sum().backward()
    assert x.grad.dtype == nd.float32
    np.testing.assert_allclose(x.grad.cpu().numpy(), np.array([5.0, 9.0], np.float32))


# ---------------------------------------------------------------------------- random numbers
def test_manual_seed_makes_sampling_reproducible():
    nd.manual_seed(1234)
    a, b = nd.randn(4, 3), nd.rand(5)
    nd.manual_seed(1234)
    c, d = nd.randn(4, 3), nd.rand(5)
    np.testing.assert_array_equal(a.cpu().numpy(), c.cpu().numpy())
    np.testing.assert_array_equal(b.cpu().numpy(), d.cpu().numpy())
    nd.manual_seed(4321)
    assert not np.array_equal(nd.randn(4, 3).cpu().numpy(), a.cpu().numpy())


def test_random_shapes_dtypes_and_ranges():
    nd.manual_seed(0)
    r = nd.rand(1000)
    assert r.shape == (1000,) and r.dtype == nd.float64
    assert float(r.cpu().numpy().min()) >= 0.0 and float(r.cpu().numpy().max()) < 1.0
    n = nd.randn(2, 5000, dtype=nd.float32)
    assert n.shape == (2, 5000) and n.dtype == nd.float32
    # standard normal: mean 0 and variance 1 within generous sampling error
    assert abs(float(n.cpu().numpy().mean())) < 0.05
    assert abs(float(n.cpu().numpy().var()) - 1.0) < 0.05
    z = nd.randn(3, dtype=nd.complex128)
    assert z.dtype == nd.complex128 and np.all(z.cpu().numpy().imag != 0)


# ---------------------------------------------------------------------------- devices
def test_device_objects():
    assert nd.device("cpu") == "cpu"
    assert str(nd.device("cpu")) == "cpu"
    assert nd.device("cuda:1") == "cuda:1" and nd.device("cuda") == "cuda:0"
    assert nd.device("cpu") != "cuda"
    with pytest.raises(ValueError, match="unknown device type 'tpu'"):
        nd.device("tpu")
    with pytest.raises(ValueError, match="invalid device string"):
        nd.device("cuda:x")


@pytest.mark.cpu_only("about machines without CuPy; other devices have a CUDA backend")
@pytest.mark.skipif(importlib.util.find_spec("cupy") is not None,
                    reason="CuPy is installed: the CUDA device may be available")
@pytest.mark.parametrize("make", [
    lambda: nd.zeros(2, device="cuda"), lambda: nd.tensor([1.0], device="cuda:0"),
    lambda: nd.randn(2, device=nd.device("cuda")),
], ids=["zeros", "tensor", "randn"])
def test_cuda_device_without_cupy_names_the_extra(make):
    with pytest.raises(RuntimeError, match=r"needs CuPy.*ndgrad\[cuda12\]"):
        make()


def test_asarray_copy_false_refuses_a_conversion_with_a_clear_message():
    for data in (nd.tensor([1.0, 2.0]), np.ones(2)):
        with pytest.raises(ValueError, match=r"asarray\(copy=False\): converting float64 to "
                                             r"float32 needs a copy; pass copy=None"):
            nd.asarray(data, dtype=nd.float32, copy=False)
    t = nd.tensor([1.0, 2.0])
    assert nd.asarray(t, dtype=nd.float64, copy=False)._data is t._data  # nothing to convert
