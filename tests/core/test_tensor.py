"""The Tensor contract: attributes, conversion, autograd state, operators, indexing,
augmented assignment and in-place safety (issue "The Tensor").

Every expected value comes from NumPy or a closed form computed independently of ndgrad.
"""

from __future__ import annotations

import operator

import numpy as np
import pytest

import ndgrad as nd
from support import close, val


def shares(a, b):
    """Whether Tensors ``a`` and ``b`` share storage, on any device."""
    return a.backend.shares_memory(a._data, b._data)


def with_ndarray(device, make):
    """``make()``, an operation between a tensor and a NumPy array. NumPy arrays count as cpu
    operands: on the CPU this is the result; on another device the operation is refused (and
    this is None)."""
    if device == "cpu":
        return make()
    with pytest.raises(RuntimeError, match=r"same device.*NumPy arrays count as cpu"):
        make()
    return None


# ---------------------------------------------------------------------------- attributes
def test_array_attributes_match_numpy(device):
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    t = nd.tensor(a)
    assert t.shape == (2, 3, 4)
    assert t.dtype == np.float32 and t.dtype == nd.float32
    assert t.ndim == 3 and t.dim() == 3
    assert t.size == 24 and t.numel() == 24
    assert len(t) == 2
    assert t.device == device and t.device == nd.device(device)  # the default device


def test_zero_dim_tensor_attributes():
    t = nd.tensor(2.5)
    assert t.shape == () and t.ndim == 0 and t.size == 1
    with pytest.raises(TypeError, match="0-d"):
        len(t)
    with pytest.raises(TypeError, match="0-d"):
        iter(t)


def test_T_reverses_all_dimensions():
    a = np.arange(24.0).reshape(2, 3, 4)
    t = nd.tensor(a)
    assert t.T.shape == (4, 3, 2)
    np.testing.assert_array_equal(val(t.T), a.T)


def test_mT_swaps_the_last_two_dimensions():
    a = np.arange(24.0).reshape(2, 3, 4)
    np.testing.assert_array_equal(val(nd.tensor(a).mT), np.swapaxes(a, -1, -2))


def test_T_and_mT_are_differentiable():
    a = np.arange(6.0).reshape(2, 3)
    w = np.array([[1.0, -2.0], [3.0, 0.5], [-1.0, 4.0]])
    x = nd.tensor(a, requires_grad=True)
    (x.T * nd.tensor(w)).sum().backward()
    close(x.grad, w.T)
    x.grad = None
    (x.mT * nd.tensor(w)).sum().backward()
    close(x.grad, w.T)


def test_iteration_yields_rows():
    a = np.arange(6.0).reshape(3, 2)
    rows = [val(r) for r in nd.tensor(a)]
    assert len(rows) == 3
    for r, ref in zip(rows, a):
        np.testing.assert_array_equal(r, ref)


def test_bool_of_multi_element_tensor_is_ambiguous():
    assert bool(nd.tensor([3.0])) is True
    assert bool(nd.tensor(0.0)) is False
    with pytest.raises(RuntimeError, match="ambiguous"):
        bool(nd.tensor([1.0, 2.0]))


def test_python_number_conversions():
    assert float(nd.tensor([2.5])) == 2.5
    assert int(nd.tensor(7)) == 7
    assert complex(nd.tensor(1 + 2j)) == 1 + 2j
    assert [10, 20, 30][nd.tensor(1)] == 20  # __index__
    with pytest.raises(TypeError, match="integer"):
        [1, 2][nd.tensor(1.0)]


def test_repr_shows_autograd_state(device):
    on = "" if device == "cpu" else f", device='{device}'"  # the CPU is not named
    x = nd.tensor([1.0, 2.0], requires_grad=True)
    assert repr(x) == f"tensor([1., 2.]{on}, requires_grad=True)"
    assert repr(x * 2) == f"tensor([2., 4.]{on}, grad_fn=<MultiplyBackward0>)"
    assert repr(nd.tensor([1.0], dtype=nd.float32)) == f"tensor([1.], dtype=float32{on})"


def test_tensor_constructor_builds_a_tensor():
    t = nd.Tensor([1.0, 2.0], requires_grad=True)
    assert isinstance(t, nd.Tensor)
    assert t.requires_grad and t.is_leaf
    np.testing.assert_array_equal(val(t), [1.0, 2.0])


# ---------------------------------------------------------------------------- autograd state
def test_leaf_and_non_leaf_state():
    x = nd.tensor([1.0, 2.0], requires_grad=True)
    c = nd.tensor([1.0, 2.0])
    assert x.is_leaf and x.grad_fn is None and x.requires_grad
    assert c.is_leaf and c.grad_fn is None and not c.requires_grad
    y = x * c
    assert not y.is_leaf and y.requires_grad
    assert y.grad_fn.name() == "MultiplyBackward0"
    z = c * c  # no input requires grad: not recorded
    assert z.is_leaf and z.grad_fn is None and not z.requires_grad


def test_grad_is_settable_to_a_tensor_and_to_none():
    x = nd.tensor([1.0, 2.0, 3.0], requires_grad=True)
    assert x.grad is None
    g = nd.tensor([0.5, -1.0, 2.0])
    x.grad = g
    assert x.grad is g
    # a following backward accumulates into the assigned gradient
    (x * x).sum().backward()
    close(x.grad, [0.5 + 2.0, -1.0 + 4.0, 2.0 + 6.0])
    x.grad = None
    assert x.grad is None
    (x * x).sum().backward()
    close(x.grad, [2.0, 4.0, 6.0])


def test_grad_setter_validates_type_shape_and_dtype():
    x = nd.tensor([1.0, 2.0, 3.0], requires_grad=True)
    with pytest.raises(TypeError, match="Tensor or None, got ndarray"):
        x.grad = np.ones(3)
    with pytest.raises(RuntimeError, match=r"shape \[2\].*shape \[3\]"):
        x.grad = nd.ones(2)
    with pytest.raises(RuntimeError, match="dtype float32.*dtype float64"):
        x.grad = nd.ones(3, dtype=nd.float32)
    assert x.grad is None  # rejected assignments leave it untouched


def test_grad_of_non_leaf_warns_and_is_none():
    x = nd.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    y.sum().backward()
    with pytest.warns(UserWarning, match="not a leaf.*retain_grad"):
        assert y.grad is None
    close(x.grad, [2.0, 2.0])


def test_data_is_a_detached_alias():
    x = nd.tensor([1.0, 2.0, 3.0], requires_grad=True)
    d = x.data
    assert isinstance(d, nd.Tensor)
    assert not d.requires_grad and d.is_leaf and d.grad_fn is None
    assert shares(d, x)
    # in-place changes through .data are allowed on a leaf and show in x
    d += 10.0
    np.testing.assert_array_equal(val(x), [11.0, 12.0, 13.0])
    assert x.requires_grad and x.is_leaf


def test_data_and_detach_in_place_changes_are_both_tracked():
    # Deliberately safer than PyTorch's .data: a saved value changed through .data is an
    # error, not a silently wrong gradient (the issue: .data shares the version counter).
    for alias in (lambda t: t.data, lambda t: t.detach()):
        x = nd.tensor([0.5, 1.0], requires_grad=True)
        y = x.exp()  # saves its output
        alias(y).add_(1.0)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.sum().backward()
    # parameter updates through .data after backward are fine
    p = nd.tensor([1.0, 2.0], requires_grad=True)
    (p * p).sum().backward()
    p.data -= 0.5 * p.grad
    close(p, [0.0, 0.0])


def test_data_setter_replaces_the_values():
    x = nd.tensor([1.0, 2.0], requires_grad=True)
    x.data = nd.tensor([5.0, 7.0])
    assert x.requires_grad and x.is_leaf
    (x * x).sum().backward()
    close(x.grad, [10.0, 14.0])
    with pytest.raises(TypeError, match="must be set to a Tensor"):
        x.data = [1.0, 2.0]


def test_detach_shares_storage_and_cuts_the_graph():
    x = nd.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3
    d = y.detach()
    assert not d.requires_grad and d.is_leaf and d.grad_fn is None
    assert shares(d, y)
    # the detached tensor contributes no gradient
    (y * d).sum().backward()
    close(x.grad, 3 * np.array([3.0, 6.0]))


def test_detach_in_place_makes_a_leaf():
    x = nd.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3
    assert y.detach_() is y
    assert y.is_leaf and not y.requires_grad and y.grad_fn is None
    np.testing.assert_array_equal(y.cpu().numpy(), [3.0, 6.0])


def test_requires_grad_():
    w = nd.zeros(3)
    assert w.requires_grad_() is w and w.requires_grad
    w.requires_grad_(False)
    assert not w.requires_grad
    w.requires_grad = True
    assert w.requires_grad
    y = w * 2
    y.requires_grad_(True)  # turning it on for a non-leaf is a no-op
    assert y.requires_grad and not y.is_leaf


def test_requires_grad_off_on_a_non_leaf_is_an_error():
    y = nd.tensor([1.0], requires_grad=True) * 2
    with pytest.raises(RuntimeError, match="only change requires_grad flags of leaf.*detach"):
        y.requires_grad_(False)
    with pytest.raises(RuntimeError, match="leaf"):
        y.requires_grad = False
    assert y.requires_grad


@pytest.mark.parametrize("data", [[1, 2], [True, False]])
def test_requires_grad_needs_a_floating_or_complex_dtype(data):
    t = nd.tensor(data)
    with pytest.raises(RuntimeError, match="only Tensors of floating point and complex dtype"):
        t.requires_grad_()
    assert not t.requires_grad
    nd.tensor([1 + 1j]).requires_grad_()  # complex is fine


# ---------------------------------------------------------------------------- conversion
@pytest.mark.cpu_only("memory sharing with a NumPy array")
def test_numpy_shares_memory():
    a = np.array([1.0, 2.0])
    t = nd.asarray(a)
    assert np.shares_memory(t.cpu().numpy(), a)


def test_numpy_raises_while_requires_grad():
    x = nd.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match=r"requires grad.*detach\(\)\.numpy\(\)"):
        x.cpu().numpy()
    with pytest.raises(RuntimeError, match="requires grad"):
        (x * 2).cpu().numpy()
    np.testing.assert_array_equal(x.detach().cpu().numpy(), [1.0, 2.0])
    with nd.no_grad():
        np.testing.assert_array_equal((x * 2).cpu().numpy(), [2.0, 4.0])


@pytest.mark.cpu_only("the __array__ protocol: GPU tensors refuse it (use .cpu() first)")
def test_array_protocol():
    t = nd.tensor([1.0, 2.0, 3.0])
    a = np.asarray(t)
    assert type(a) is np.ndarray
    assert np.shares_memory(a, t.cpu().numpy())
    np.testing.assert_array_equal(a, [1.0, 2.0, 3.0])
    a32 = np.asarray(t, dtype=np.float32)
    assert a32.dtype == np.float32
    c = np.array(t, copy=True)
    assert not np.shares_memory(c, t.cpu().numpy())
    np.testing.assert_array_equal(np.exp(np.asarray(t)), np.exp([1.0, 2.0, 3.0]))


@pytest.mark.cpu_only("the __array__ protocol: GPU tensors refuse it (use .cpu() first)")
def test_array_protocol_refuses_a_tensor_that_requires_grad():
    x = nd.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match=r"requires grad.*np\.asarray\(tensor\.detach\(\)\)"):
        np.asarray(x)
    np.testing.assert_array_equal(np.asarray(x.detach()), [1.0, 2.0])


def test_item():
    assert nd.tensor([[2.5]]).item() == 2.5
    assert isinstance(nd.tensor(3).item(), int)
    assert nd.tensor(1.5, requires_grad=True).item() == 1.5  # item works while requiring grad
    with pytest.raises(RuntimeError, match="3 elements cannot be converted to Scalar"):
        nd.tensor([1.0, 2.0, 3.0]).item()


def test_tolist():
    assert nd.tensor([[1, 2], [3, 4]]).tolist() == [[1, 2], [3, 4]]
    assert nd.tensor([0.5, 1.5], requires_grad=True).tolist() == [0.5, 1.5]
    assert nd.tensor(2.0).tolist() == 2.0


def test_clone_is_a_differentiable_copy():
    x = nd.tensor([1.0, 2.0, 3.0], requires_grad=True)
    c = x.clone()
    assert not shares(c, x)
    assert c.grad_fn is not None and not c.is_leaf
    np.testing.assert_array_equal(val(c), val(x))
    (c * nd.tensor([1.0, -2.0, 4.0])).sum().backward()
    close(x.grad, [1.0, -2.0, 4.0])
    # the clone of a tensor that doesn't require grad is a plain independent copy
    p = nd.tensor([1.0, 2.0])
    q = p.clone()
    q += 1.0
    np.testing.assert_array_equal(p.cpu().numpy(), [1.0, 2.0])


def test_astype_is_differentiable_between_floating_dtypes():
    x = nd.tensor([1.5, -2.25], requires_grad=True)
    y = x.astype(nd.float32)
    assert y.dtype == nd.float32 and y.requires_grad
    (y * y).sum().backward()
    assert x.grad.dtype == nd.float64  # the gradient has its parameter's dtype
    close(x.grad, [3.0, -4.5])
    assert x.astype("float32").dtype == np.float32


def test_astype_to_integer_does_not_require_grad():
    x = nd.tensor([1.7, -2.2], requires_grad=True)
    i = x.astype(nd.int64)
    assert i.dtype == nd.int64 and not i.requires_grad and i.grad_fn is None
    np.testing.assert_array_equal(i.cpu().numpy(), np.array([1.7, -2.2]).astype(np.int64))


# ---------------------------------------------------------------------------- op methods
def test_op_methods_match_numpy():
    a = np.arange(12.0).reshape(3, 4) / 7.0
    t = nd.tensor(a)
    np.testing.assert_allclose(val(t.sum(axis=1)), a.sum(axis=1))
    np.testing.assert_allclose(val(t.exp()), np.exp(a))
    np.testing.assert_array_equal(val(t.reshape(4, 3)), a.reshape(4, 3))
    np.testing.assert_array_equal(val(t.reshape((2, 6))), a.reshape(2, 6))
    np.testing.assert_allclose(val(t.mean(axis=0)), a.mean(axis=0))


def test_reductions_accept_pytorch_spellings():
    a = np.arange(12.0).reshape(3, 4)
    t = nd.tensor(a)
    r = t.sum(dim=1, keepdim=True)
    assert r.shape == (3, 1)
    np.testing.assert_array_equal(val(r), a.sum(axis=1, keepdims=True))
    np.testing.assert_array_equal(val(nd.sum(t, dim=0)), a.sum(axis=0))
    with pytest.raises(TypeError, match="both 'dim' and 'axis'|both 'axis' and 'dim'"):
        t.sum(axis=0, dim=0)


# ---------------------------------------------------------------------------- operators
A = np.array([[1.5, -2.0, 3.0], [0.5, 4.0, -1.0]])
B = np.array([2.0, -0.5, 1.25])

ARITH = [
    (operator.add, "+"), (operator.sub, "-"), (operator.mul, "*"), (operator.truediv, "/"),
    (operator.floordiv, "//"), (operator.mod, "%"),
]


@pytest.mark.parametrize("fn,sym", ARITH)
def test_arithmetic_operators_with_every_operand_kind(fn, sym, device):
    expected = fn(A, B)
    cases = {
        "tensor-tensor": fn(nd.tensor(A), nd.tensor(B)),
        "tensor-ndarray": with_ndarray(device, lambda: fn(nd.tensor(A), B)),
        "ndarray-tensor": with_ndarray(device, lambda: fn(A, nd.tensor(B))),
    }
    for name, r in cases.items():
        if r is None:  # refused off the CPU
            continue
        assert isinstance(r, nd.Tensor), f"{name}: {sym} returned {type(r).__name__}"
        close(r, expected, err_msg=name)
    for name, r in {"tensor-scalar": fn(nd.tensor(A), 2.5),
                    "scalar-tensor": fn(2.5, nd.tensor(A))}.items():
        assert isinstance(r, nd.Tensor), name
    close(fn(nd.tensor(A), 2.5), fn(A, 2.5))
    close(fn(2.5, nd.tensor(A)), fn(2.5, A))


def test_power_operator_with_every_operand_kind(device):
    P = np.abs(A) + 0.5
    expected = P**B
    for name, r in {"tensor-tensor": nd.tensor(P) ** nd.tensor(B),
                    "tensor-ndarray": with_ndarray(device, lambda: nd.tensor(P) ** B),
                    "ndarray-tensor": with_ndarray(device, lambda: P ** nd.tensor(B))}.items():
        if r is None:  # refused off the CPU
            continue
        assert isinstance(r, nd.Tensor), name
        close(r, expected, err_msg=name)
    close(nd.tensor(P) ** 1.5, P**1.5)
    close(1.5 ** nd.tensor(B), 1.5**B)


@pytest.mark.cpu_only("NumPy arrays as operands (they count as cpu tensors)")
def test_ndarray_on_the_left_returns_a_tensor_that_records():
    x = nd.tensor(B, requires_grad=True)
    y = A + x
    assert isinstance(y, nd.Tensor) and y.requires_grad
    close(y, A + B)
    y.sum().backward()
    close(x.grad, np.full(3, 2.0))  # broadcast over A's 2 rows


def test_gradients_of_arithmetic_operators_against_closed_forms():
    xv = np.array([0.5, -1.5, 2.0])
    yv = np.array([1.25, 0.75, -3.0])
    x = nd.tensor(xv, requires_grad=True)
    y = nd.tensor(yv, requires_grad=True)
    (x / y + 2.0 / x - (3.0 - y) * x).sum().backward()
    close(x.grad, 1 / yv - 2.0 / xv**2 - (3.0 - yv))
    close(y.grad, -xv / yv**2 + xv)


def test_unary_operators():
    xv = np.array([-1.5, 0.0, 2.0])
    x = nd.tensor(xv)
    close(-x, -xv)
    close(+x, xv)
    close(abs(x), np.abs(xv))


def test_abs_gradient_is_the_sign():
    xv = np.array([-1.5, 0.25, 2.0])
    x = nd.tensor(xv, requires_grad=True)
    (abs(x) * nd.tensor([1.0, 2.0, 3.0])).sum().backward()
    close(x.grad, np.sign(xv) * [1.0, 2.0, 3.0])
    x2 = nd.tensor(xv, requires_grad=True)
    (-x2).sum().backward()
    close(x2.grad, [-1.0, -1.0, -1.0])


def test_floor_division_and_remainder_follow_numpy():
    a = np.array([7.0, -7.0, 7.5, -0.5])
    b = np.array([2.0, 2.0, -2.0, 3.0])
    close(nd.tensor(a) // nd.tensor(b), a // b)
    close(nd.tensor(a) % nd.tensor(b), a % b)
    close(nd.tensor(a) // 2, a // 2)
    close(7 // nd.tensor(b), 7 // b)
    close(nd.tensor(a) % 3, a % 3)
    close(7 % nd.tensor(b), 7 % b)
    ia = np.array([7, -7, 9])
    r = nd.tensor(ia) // 2
    assert r.dtype == nd.int64
    np.testing.assert_array_equal(r.cpu().numpy(), ia // 2)
    np.testing.assert_array_equal((nd.tensor(ia) % 4).cpu().numpy(), ia % 4)


def test_remainder_gradient():
    a = np.array([7.5, -2.5, 4.25])
    b = np.array([2.0, 2.0, -3.0])
    x = nd.tensor(a, requires_grad=True)
    y = nd.tensor(b, requires_grad=True)
    (x % y).sum().backward()
    close(x.grad, np.ones(3))
    close(y.grad, -np.floor(a / b))


def test_power_operator_and_its_gradients():
    xv = np.array([0.5, 1.5, 2.0])
    yv = np.array([2.0, -1.0, 0.5])
    close(nd.tensor(xv) ** 2, xv**2)
    close(2.0 ** nd.tensor(yv), 2.0**yv)
    close(nd.tensor(xv) ** nd.tensor(yv), xv**yv)
    x = nd.tensor(xv, requires_grad=True)
    y = nd.tensor(yv, requires_grad=True)
    (x**y).sum().backward()
    close(x.grad, yv * xv ** (yv - 1))
    close(y.grad, xv**yv * np.log(xv))
    z = nd.tensor(yv, requires_grad=True)
    (3.0**z).sum().backward()
    close(z.grad, 3.0**yv * np.log(3.0))


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex128, np.int64, np.int8,
                                   np.bool_])
@pytest.mark.parametrize("exponent", [2, 2.0])
def test_a_square_is_numpys_power_exactly(dtype, exponent):
    # pow's forward squares a real floating base with ``square`` (NumPy's power loop is
    # slower): the same values and dtype as numpy.power; other bases keep numpy.power's
    a = (np.random.default_rng(3).standard_normal(50) * 7).astype(dtype)
    a[:3] = [0, 1, 2]
    if a.dtype.kind == "f":
        a[3:6] = [-0.0, np.inf, np.nan]
    got = val(nd.pow(nd.tensor(a), exponent))
    want = np.power(a, exponent)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("k", [0, 1, 2, 3])
def test_integer_powers_through_nested_transforms(k):
    # x**k for the exponents pow's vjp treats specially (0, 1, 2), against the closed form
    # k x**(k-1), k (k-1) x**(k-2) and k (k-1) (k-2) x**(k-3), by reverse over reverse,
    # forward over reverse and three deep
    xv = np.array([0.5, -1.5, 2.0, 0.0])
    x = nd.tensor(xv)

    def f(t):
        return (t**k).sum()

    d1 = [k * xv ** (k - 1) if k else np.zeros(4), k * (k - 1) * xv ** (k - 2) if k > 1
          else np.zeros(4), k * (k - 1) * (k - 2) * xv ** (k - 3) if k > 2 else np.zeros(4)]
    close(nd.func.grad(f)(x), d1[0])
    close(nd.func.jvp(nd.func.grad(f), (x,), (nd.ones(4),))[1], d1[1])
    close(np.diag(val(nd.func.jacrev(nd.func.grad(f))(x))), d1[1])
    gg = nd.func.grad(lambda t: nd.func.grad(f)(t).sum())
    close(nd.func.jvp(gg, (x,), (nd.ones(4),))[1], d1[2])
    close(nd.func.vmap(nd.func.grad(lambda t: (t**k)))(x), d1[0])


def test_matmul_operator_with_tensors_and_arrays(device):
    M = np.array([[1.0, 2.0, -1.0], [0.5, -3.0, 2.0]])
    v = np.array([1.5, -0.5, 2.0])
    u = np.array([2.0, -1.0])
    close(nd.tensor(M) @ nd.tensor(v), M @ v)
    for r, ref in [(with_ndarray(device, lambda: M @ nd.tensor(v)), M @ v),
                   (with_ndarray(device, lambda: nd.tensor(u) @ M), u @ M),
                   (with_ndarray(device, lambda: u @ nd.tensor(M)), u @ M)]:
        if r is None:  # refused off the CPU
            continue
        assert isinstance(r, nd.Tensor)
        close(r, ref)
    x = nd.tensor(v, requires_grad=True)
    W = nd.tensor(M, requires_grad=True)
    (W @ x).sum().backward()
    close(x.grad, M.sum(axis=0))
    close(W.grad, np.outer(np.ones(2), v))


COMPARISONS = [operator.eq, operator.ne, operator.lt, operator.le, operator.gt, operator.ge]


@pytest.mark.parametrize("fn", COMPARISONS, ids=lambda f: f.__name__)
def test_comparisons_return_bool_tensors_that_never_require_grad(fn, device):
    a = np.array([1.0, 2.0, 3.0])
    b = np.array([2.0, 2.0, 1.0])
    x = nd.tensor(a, requires_grad=True)
    for r, ref in [(fn(x, nd.tensor(b)), fn(a, b)),
                   (with_ndarray(device, lambda: fn(x, b)), fn(a, b)),
                   (with_ndarray(device, lambda: fn(b, x)), fn(b, a)),
                   (fn(x, 2.0), fn(a, 2.0)),
                   (fn(2.0, x), fn(2.0, a))]:
        if r is None:  # refused off the CPU
            continue
        assert isinstance(r, nd.Tensor)
        assert r.dtype == nd.bool
        assert not r.requires_grad and r.grad_fn is None
        np.testing.assert_array_equal(r.cpu().numpy(), ref)


# ---------------------------------------------------------------------------- indexing
@pytest.mark.parametrize("index", [
    1, -1, slice(1, None), (slice(None), 0), (Ellipsis, 1), (None, 0), (1, slice(None, None, -1)),
    np.array([2, 0, 0]), (np.array([0, 1]), np.array([2, 3])), np.array([True, False, True]),
], ids=repr)
def test_getitem_matches_numpy(index):
    a = np.arange(12.0).reshape(3, 4)
    np.testing.assert_array_equal(val(nd.tensor(a)[index]), a[index])


def test_getitem_accepts_lists_and_tensors_as_indices():
    a = np.arange(12.0).reshape(3, 4)
    t = nd.tensor(a)
    np.testing.assert_array_equal(val(t[[2, 0]]), a[[2, 0]])
    np.testing.assert_array_equal(val(t[nd.tensor([1, 1])]), a[[1, 1]])
    np.testing.assert_array_equal(val(t[nd.tensor(a[:, 0] > 3)]), a[a[:, 0] > 3])


def test_getitem_gradient_accumulates_repeated_indices():
    x = nd.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    w = np.array([1.0, 10.0, 100.0, 1000.0])
    (x[[0, 0, 2, 0]] * nd.tensor(w)).sum().backward()
    close(x.grad, [1.0 + 10.0 + 1000.0, 0.0, 100.0, 0.0])
    x.grad = None
    (x[1:3] * 5.0).sum().backward()
    close(x.grad, [0.0, 5.0, 5.0, 0.0])


def test_setitem_on_a_plain_tensor(device):
    a = np.arange(6.0).reshape(2, 3)
    t = nd.tensor(a)
    t[0, 1] = 10.0
    row = np.array([7.0, 8.0, 9.0])
    if with_ndarray(device, lambda: t.__setitem__(1, row)) is None:  # refused off the CPU
        t[1] = nd.tensor(row)
    t[:, 2] = nd.tensor([-1.0, -2.0])
    ref = a.copy()
    ref[0, 1] = 10.0
    ref[1] = [7.0, 8.0, 9.0]
    ref[:, 2] = [-1.0, -2.0]
    np.testing.assert_array_equal(t.cpu().numpy(), ref)


def test_setitem_in_a_differentiable_computation():
    x = nd.tensor([1.0, 2.0, 3.0], requires_grad=True)
    v = nd.tensor(4.0, requires_grad=True)
    a = x * 2
    a[1] = v * v  # overwrites a[1]: x[1] gets no gradient, v gets d(v^2)
    assert a.requires_grad and not a.is_leaf
    close(a, [2.0, 16.0, 6.0])
    (a * nd.tensor([1.0, 10.0, 100.0])).sum().backward()
    close(x.grad, [2.0, 0.0, 200.0])
    close(v.grad, 10.0 * 2 * 4.0)


def test_setitem_with_a_value_that_requires_grad_makes_the_target_require_grad():
    a = nd.zeros(3)
    w = nd.tensor([1.5, -2.0], requires_grad=True)
    a[[0, 2]] = w * 3
    assert a.requires_grad
    (a * a).sum().backward()
    close(w.grad, 2 * 9 * np.array([1.5, -2.0]))


def test_setitem_on_a_leaf_that_requires_grad_is_an_error_under_grad_mode():
    x = nd.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf tensor that requires grad.*in-place operation"):
        x[0] = 5.0
    np.testing.assert_array_equal(val(x), [1.0, 2.0])
    with nd.no_grad():
        x[0] = 5.0
    np.testing.assert_array_equal(val(x), [5.0, 2.0])
    assert x.is_leaf and x.requires_grad


# ---------------------------------------------------------------------------- augmented assignment
AUG = [
    ("+=", operator.iadd, operator.add), ("-=", operator.isub, operator.sub),
    ("*=", operator.imul, operator.mul), ("/=", operator.itruediv, operator.truediv),
    ("//=", operator.ifloordiv, operator.floordiv), ("%=", operator.imod, operator.mod),
    ("**=", operator.ipow, operator.pow),
]


@pytest.mark.parametrize("sym,ifn,fn", AUG, ids=[a[0] for a in AUG])
def test_augmented_assignment_is_in_place(sym, ifn, fn, device):
    a = np.array([1.5, 2.0, 3.5])
    for other in (2.0, np.array([0.5, 3.0, 1.5]), nd.tensor([0.5, 3.0, 1.5])):
        t = nd.tensor(a)
        storage = t._data  # the raw backend array
        if isinstance(other, np.ndarray) and device != "cpu":  # NumPy arrays count as cpu
            with pytest.raises(RuntimeError, match=r"same device.*NumPy arrays count as cpu"):
                ifn(t, other)
            continue
        r = ifn(t, other)
        assert r is t, f"{sym} must return the same tensor"
        assert t._data is storage or t.backend.shares_memory(t._data, storage)
        ref = fn(a, other.cpu().numpy() if isinstance(other, nd.Tensor) else other)
        np.testing.assert_allclose(t.cpu().numpy(), ref)


def test_in_place_matmul():
    M = np.array([[1.0, 2.0], [3.0, 4.0]])
    t = nd.tensor(np.eye(2) * 2.0)
    t @= nd.tensor(M)
    np.testing.assert_allclose(t.cpu().numpy(), 2.0 * M)


def test_augmented_assignment_on_a_non_leaf_is_differentiable():
    xv = np.array([1.5, -2.0, 0.5])
    x = nd.tensor(xv, requires_grad=True)
    a = x * 2
    before = a
    a *= x  # a = 2 x^2
    a += 1.0
    assert a is before
    close(a, 2 * xv**2 + 1)
    a.sum().backward()
    close(x.grad, 4 * xv)


def test_augmented_assignment_on_a_leaf_requiring_grad():
    p = nd.tensor([1.0, 2.0, 3.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf tensor that requires grad.*in-place.*no_grad"):
        p += 1.0
    np.testing.assert_array_equal(val(p), [1.0, 2.0, 3.0])
    (p * p).sum().backward()
    grad = p.grad
    with nd.no_grad():
        p -= 0.1 * p.grad  # the usual parameter update
    close(p, [1.0 - 0.2, 2.0 - 0.4, 3.0 - 0.6])
    assert p.is_leaf and p.requires_grad and p.grad_fn is None
    assert p.grad is grad


def test_augmented_assignment_cannot_change_dtype_kind_or_shape():
    t = nd.tensor([1, 2])
    with pytest.raises(RuntimeError, match="float64 can't be cast.*int64"):
        t += 1.5
    np.testing.assert_array_equal(t.cpu().numpy(), [1, 2])
    u = nd.tensor([1.0, 2.0, 3.0])
    with pytest.raises(RuntimeError, match=r"output with shape \[3\].*broadcast shape \[2, 3\]"):
        u += nd.ones((2, 3))


# ---------------------------------------------------------------------------- in-place safety
def test_modifying_a_saved_input_in_place_is_detected():
    x = nd.tensor([1.0, 2.0], requires_grad=True)
    a = x * 1.0
    y = (a * a).sum()  # multiply saves a
    a += 1.0
    with pytest.raises(RuntimeError,
                       match="modified by an inplace operation.*MultiplyBackward0.*"
                             "version 1; expected version 0"):
        y.backward()


def test_modifying_a_saved_output_in_place_is_detected():
    x = nd.tensor([0.5, 1.0], requires_grad=True)
    t = x.tanh()  # tanh saves its output
    y = t * 3.0  # saves nothing of t
    t.mul_(2.0)
    with pytest.raises(RuntimeError,
                       match="modified by an inplace operation.*output 0 saved by "
                             "TanhBackward0, is at version 1; expected version 0"):
        y.sum().backward()


def test_modifying_a_saved_constant_in_place_is_detected():
    x = nd.tensor([1.0, 2.0], requires_grad=True)
    w = nd.tensor([3.0, 4.0])  # doesn't require grad, but is saved for x's gradient
    y = (x * w).sum()
    w += 1.0
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()


def test_views_share_the_version_counter_of_their_base():
    x = nd.tensor([1.0, 2.0, 3.0], requires_grad=True)
    a = x * 1.0
    v = a[:2]
    y = (v * v).sum()  # saves the view
    a[2] = 0.0  # changes the base, hence the view's version
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()


def test_in_place_on_a_tensor_whose_shape_only_was_used_is_fine():
    # sum's gradient needs only its input's shape, so changing the input later is harmless
    # (as in PyTorch, whose SumBackward saves the sizes, not the tensor)
    x = nd.tensor([1.0, 2.0], requires_grad=True)
    a = x * 2.0
    s = a.sum()
    a += 1.0
    s.backward()
    close(x.grad, [2.0, 2.0])


def test_in_place_on_an_unsaved_tensor_is_fine():
    x = nd.tensor([1.0, 2.0], requires_grad=True)
    a = x * 3.0  # multiply by a scalar saves nothing of x
    y = a + 1.0
    a += 5.0  # a's history is rebased; y was computed before and still differentiates
    y.sum().backward()
    close(x.grad, [3.0, 3.0])


# --------------------------------------------------------- views (Note [In-place on views])
def test_in_place_through_a_view_reaches_the_base_history():
    # CopySlices: the base's history sees the change (more in tests/core/test_inplace.py)
    a = nd.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = a * 1
    y[0:2].mul_(10)
    y.sum().backward()
    close(a.grad, [10.0, 10.0, 1.0])


def test_a_view_with_a_stale_history_is_regenerated():
    a = nd.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = a * 1
    z = y[0:2]
    y.mul_(2)
    z.sum().backward()  # z's history is rebuilt from y's: it includes the multiply
    close(a.grad, [2.0, 2.0, 0.0])


def test_in_place_through_a_view_under_no_grad_updates_the_base():
    w = nd.ones(3, requires_grad=True)
    with nd.no_grad():
        w[0:2].mul_(3.0)
    close(w, [3.0, 3.0, 1.0])


def test_a_call_that_does_not_fit_an_op_says_so_in_its_public_terms():
    x = nd.tensor([1.0, 2.0])
    with pytest.raises(TypeError, match=r"ndgrad\.exp\(x\): too many positional arguments"):
        nd.exp(x, 3)
    with pytest.raises(TypeError, match=r"ndgrad\.sum\(a, axis=None, \*, keepdims=False, "
                                        r"dtype=None\): got an unexpected keyword argument"):
        nd.sum(x, axes=0)
    with pytest.raises(TypeError, match=r"ndgrad\.linalg\.vector_norm\(x, \*, ord=2"):
        nd.linalg.vector_norm(x, 2)
    np.testing.assert_allclose(nd.sum(x, 0).cpu().numpy(), 3.0)  # a fitting call is unaffected
