"""The array API standard's namespace facilities (ndgrad/numpy/array_api.py), against NumPy's
answers and the standard's tables."""

from __future__ import annotations

import numpy as np
import pytest

import ndgrad as nd
from support import close, val


def test_the_namespace_and_its_version():
    x = nd.ones(3)
    assert x.__array_namespace__() is nd
    assert x.__array_namespace__(api_version="2023.12") is nd
    assert nd.__array_api_version__ == "2024.12"
    with pytest.raises(ValueError, match="api_version='2099.01'"):
        x.__array_namespace__(api_version="2099.01")
    # a function written against the standard runs on ndgrad, differentiably
    def standard_softplus_sum(a):
        xp = a.__array_namespace__()
        return xp.sum(xp.log(1 + xp.exp(a)))
    t = nd.tensor([0.0, 1.0], requires_grad=True)
    (g,) = nd.autograd.grad(standard_softplus_sum(t), t)
    close(g, 1 / (1 + np.exp(-np.array([0.0, 1.0]))))


def test_inspection():
    info = nd.__array_namespace_info__()
    assert info.capabilities()["boolean indexing"] is True
    assert info.default_device() == nd.get_default_device()
    assert nd.device("cpu") in info.devices()
    d = info.default_dtypes()
    assert d["real floating"] == nd.get_default_dtype() and d["indexing"] == np.int64
    assert set(info.dtypes(kind="unsigned integer")) == {"uint8", "uint16", "uint32", "uint64"}
    assert set(info.dtypes(kind="complex floating")) == {"complex64", "complex128"}
    assert len(info.dtypes()) == 13


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_finfo_and_iinfo(dtype):
    f = nd.finfo(getattr(nd, dtype))
    ref = np.finfo(dtype)
    assert (f.bits, f.eps, f.max, f.min, f.smallest_normal) == \
        (ref.bits, ref.eps, ref.max, ref.min, ref.smallest_normal)
    assert nd.finfo(nd.ones(1, dtype=getattr(nd, dtype))).bits == ref.bits
    assert nd.iinfo(nd.uint16).max == 65535 and nd.iinfo(nd.int8).min == -128


def test_isdtype_result_type_can_cast():
    assert nd.isdtype(nd.float32, "real floating")
    assert not nd.isdtype(nd.complex64, "real floating")
    assert nd.isdtype(nd.uint8, ("unsigned integer", "bool"))
    assert nd.isdtype(nd.int16, "numeric") and not nd.isdtype(nd.bool_, "numeric")
    x32 = nd.ones(2, dtype=nd.float32)
    assert nd.result_type(x32, nd.float64) == np.float64
    assert nd.result_type(x32, 1.0) == np.float32  # a Python scalar does not widen
    assert nd.result_type(nd.int8, nd.uint8) == np.int16
    assert nd.result_type(nd.ones(1, dtype=nd.int32), 1j) == np.complex128
    with pytest.raises(ValueError):
        nd.result_type()
    assert nd.can_cast(nd.int8, nd.int16) and not nd.can_cast(nd.int16, nd.int8)
    assert nd.can_cast(x32, nd.complex64) and not nd.can_cast(nd.float64, nd.float32)


def test_unique_family_searchsorted_nonzero():
    xv = np.array([[3.0, 1.0], [3.0, 2.0]])
    x = nd.tensor(xv, requires_grad=True)
    ref = np.unique_all(xv)
    r = nd.unique_all(x)
    close(r.values, ref.values)
    close(r.indices, ref.indices)
    close(r.inverse_indices, ref.inverse_indices)
    close(r.counts, ref.counts)
    assert not r.values.requires_grad
    assert r.inverse_indices.shape == (2, 2)
    close(nd.unique_counts(x).counts, [1, 1, 2])
    close(nd.unique_inverse(x).inverse_indices, [[2, 0], [2, 1]])
    close(nd.unique_values(x), [1.0, 2.0, 3.0])
    s = nd.tensor([1.0, 2.0, 2.0, 3.0])
    close(nd.searchsorted(s, nd.tensor([2.0, 0.0, 4.0])), [1, 0, 4])
    close(nd.searchsorted(s, nd.tensor([2.0]), side="right"), [3])
    with pytest.raises(ValueError, match="side"):
        nd.searchsorted(s, s, side="middle")
    rows, cols = nd.nonzero(x > 2.5)
    close(rows, [0, 1])
    close(cols, [0, 0])
    assert rows.dtype == np.int64
    with pytest.raises(ValueError, match="0-d"):
        nd.nonzero(nd.tensor(1.0))
    with pytest.raises(TypeError, match="transform's value"):
        nd.func.vmap(nd.unique_values)(nd.ones((2, 3)))


@pytest.mark.cpu_only("NumPy arrays exchange host memory through DLPack")
def test_from_dlpack_shares_memory():
    a = np.arange(4.0)
    t = nd.from_dlpack(a)
    assert isinstance(t, nd.Tensor) and not t.requires_grad
    a[0] = 7.0
    assert val(t)[0] == 7.0
    u = nd.from_dlpack(nd.tensor([1.0, 2.0], requires_grad=True))
    assert not u.requires_grad


def test_dlpack_of_a_batched_tensor_says_there_is_no_single_array():
    # it was a bare AttributeError: __dlpack__
    def f(x):
        with pytest.raises(RuntimeError, match=(
                r"^vmap: export through DLPack \(__dlpack__, np\.from_dlpack, \.\.\.\) of a "
                r"batched tensor is not supported inside vmap: the value differs per batch "
                r"element")):
            np.from_dlpack(x)
        with pytest.raises(RuntimeError, match=r"^vmap: export through DLPack"):
            x.__dlpack__()
        return x * 2.0
    X = np.random.default_rng(0).standard_normal((2, 3))
    close(nd.func.vmap(f)(nd.tensor(X)), 2.0 * X)


@pytest.mark.cpu_only("NumPy imports host memory through DLPack")
def test_dlpack_of_a_value_inside_func_grad_is_its_value():
    # a func.grad value exports its value one level down, as numpy() reads it (it raised
    # AttributeError: 'NoneType' object has no attribute '__dlpack__'); one that requires
    # grad at the level is refused as a plain one is
    X = np.random.default_rng(1).standard_normal(3)
    seen = {}

    def f(x):
        with pytest.raises(RuntimeError, match="Can't export a Tensor that requires grad"):
            np.from_dlpack(x)
        seen["value"] = np.from_dlpack(x.detach()).copy()
        seen["device"] = x.__dlpack_device__()
        return (x ** 2).sum()
    close(nd.func.grad(f)(nd.tensor(X)), 2.0 * X)
    np.testing.assert_array_equal(seen["value"], X)
    assert seen["device"] == np.zeros(1).__dlpack_device__()


def test_constants_and_to_device():
    assert nd.e == np.e and nd.pi == np.pi and nd.inf == np.inf and np.isnan(nd.nan)
    assert nd.newaxis is None
    x = nd.tensor([1.0, 2.0], requires_grad=True)
    y = x.to_device(x.device)
    (g,) = nd.autograd.grad((y * y).sum(), x)
    close(g, [2.0, 4.0])
    with pytest.raises(ValueError, match="streams"):
        x.to_device("cpu", stream=1)


def test_bitwise_operators_keep_integer_dtypes():
    a = nd.tensor([12, 10], dtype=nd.uint8)
    b = nd.tensor([10, 6], dtype=nd.uint8)
    an, bn = np.array([12, 10], np.uint8), np.array([10, 6], np.uint8)
    for got, want in [(a & b, an & bn), (a | b, an | bn), (a ^ b, an ^ bn), (~a, ~an),
                      (a << 2, an << 2), (a >> 1, an >> 1), (3 & a, 3 & an)]:
        assert got.dtype == want.dtype == np.uint8
        close(got, want)
    t, f = nd.tensor([True, False]), nd.tensor([True, True])
    close(t & f, [True, False])
    close(~t, [False, True])
    with pytest.raises(TypeError, match="integer and bool"):
        ~nd.ones(2)
    close(nd.bitwise_left_shift(nd.tensor([1, 3]), nd.tensor([3, 1])), [8, 6])


def test_count_nonzero_signbit_nextafter():
    x = nd.tensor([[0.0, -1.0], [2.0, 0.0]])
    close(nd.count_nonzero(x), 2)
    close(nd.count_nonzero(x, axis=0, keepdims=True), [[1, 1]])
    close(nd.signbit(nd.tensor([-0.0, 0.0, -2.0])), [True, False, True])
    n = nd.nextafter(nd.tensor([1.0]), nd.tensor([2.0]))
    close(n, np.nextafter(1.0, 2.0))
    assert val(n)[0] > 1.0


def test_functions_without_a_derivative_read_a_grad_levels_value():
    # inside func.grad the count is a constant: d/dt sum(t * count) = count
    g = nd.func.grad(lambda t: (t * nd.count_nonzero(t > 0)).sum())(nd.tensor([1.0, -2.0, 3.0]))
    close(g, [2.0, 2.0, 2.0])
    close(nd.func.grad(lambda t: t[np.argmax(t)] * 3)(nd.tensor([1.0, 5.0])), [0.0, 3.0])


# ------------------------------------------------------------------ the standard's signatures
def test_astype_takes_the_standards_copy_and_device():
    """``astype(x, dtype, /, *, copy=True, device=None)`` (2023.12): a new array unless
    ``copy=False`` and the dtype already matches; differentiable either way."""
    x = nd.tensor([1.5, -2.0], requires_grad=True)
    same = nd.astype(x, nd.float64)
    assert same is not x and same._data is not x._data  # copy=True: always a new array
    assert nd.astype(x, nd.float64, copy=False) is x
    assert x.astype("float64", copy=False) is x
    f = nd.astype(x, nd.float32, copy=False, device=x.device)  # a cast copies anyway
    assert f.dtype == nd.float32 and f.device == x.device
    (g,) = nd.autograd.grad((f * f).sum() + (same * 3).sum(), x)
    close(g, 2 * np.array([1.5, -2.0]) + 3, rtol=1e-6)
    with pytest.raises(TypeError, match="unexpected keyword"):
        nd.astype(x, nd.float32, casting="unsafe")


def test_reshape_takes_the_standards_copy():
    """``reshape(x, /, shape, *, copy=None)``: True never returns a view, False never
    copies (a ValueError when it would have to), None copies only when needed."""
    x = nd.arange(6.0)
    view = nd.reshape(x, (2, 3), copy=False)
    copied = nd.reshape(x, shape=(2, 3), copy=True)
    x.detach()[0] = 10.0  # (written through x's memory)
    assert val(view)[0, 0] == 10.0 and val(copied)[0, 0] == 0.0
    t = nd.arange(6.0).reshape(2, 3).T  # not contiguous: (6,) needs a copy
    with pytest.raises(ValueError, match=r"ndgrad\.reshape\(copy=False\): a tensor of shape "
                                         r"\(3, 2\).*cannot be viewed with shape \(6,\)"):
        nd.reshape(t, (6,), copy=False)
    close(nd.reshape(t, (6,)), np.arange(6.0).reshape(2, 3).T.reshape(6))
    w = nd.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    (g,) = nd.autograd.grad((nd.reshape(w, (2, 2), copy=True) * nd.tensor([[1.0, 2.0],
                                                                             [3.0, 4.0]])).sum(),
                            w)
    close(g, [1.0, 2.0, 3.0, 4.0])


@pytest.mark.cpu_only("NumPy imports host memory through DLPack")
def test_dlpack_takes_the_standards_keywords():
    """``__dlpack__(*, stream=None, max_version=None, dl_device=None, copy=None)``."""
    x = nd.tensor([1.0, 2.0, 3.0])
    assert list(__import__("inspect").signature(nd.Tensor.__dlpack__).parameters) == \
        ["self", "stream", "max_version", "dl_device", "copy"]
    shared = np.from_dlpack(x)
    copied = np.from_dlpack(x, copy=True)
    x.detach()[0] = 7.0
    assert shared[0] == 7.0 and copied[0] == 1.0
    assert np.from_dlpack(x, device="cpu")[1] == 2.0  # (NumPy passes dl_device)
    assert type(x.__dlpack__(max_version=(1, 0), dl_device=x.__dlpack_device__(),
                             copy=False)).__name__ == "PyCapsule"
    with pytest.raises(TypeError):
        x.__dlpack__(None)  # keyword-only, as the standard writes it
    with pytest.raises(RuntimeError, match="requires grad"):
        nd.tensor([1.0], requires_grad=True).__dlpack__(copy=True)
