"""Forward-mode AD: ndgrad.forward_ad (issue 4).

References are closed forms and PyTorch's documented ``torch.autograd.forward_ad``
contract; torch itself is never imported. Every registered op's forward mode through dual
numbers is checked against finite differences by the registry suite
(tests/test_op_properties.py, ``test_jvp_through_dual_numbers``).
"""

from __future__ import annotations

import numpy as np
import pytest

import ndgrad as nd
import ndgrad.forward_ad as fwAD
from ndgrad.autograd import Function, grad
from ndgrad.core import levels
from support import Cube, close


def tangent_levels(t):
    """The dual levels (their numbers) at which ``t`` carries a tangent."""
    data = t._meta.level_data if t._meta is not None else None
    return {lv.depth for lv in data} if data else set()


@pytest.fixture(autouse=True)
def _no_level_left():
    yield
    # every test leaves no level active (and the hot-path flag off)
    assert fwAD._DUALS.stack == [] and levels.VISIBLE[0] == 0 and not levels.STACK
    while fwAD._DUALS.stack:
        fwAD.exit_dual_level()


# --------------------------------------------------------------------------- API contract
def test_public_names():
    assert nd.forward_ad is fwAD
    assert "forward_ad" in nd.__all__
    for name in ["dual_level", "enter_dual_level", "exit_dual_level", "make_dual",
                 "unpack_dual", "UnpackedDualTensor"]:
        assert name in fwAD.__all__ and hasattr(fwAD, name)


def test_levels_nest_and_flag_counts_them():
    assert levels.VISIBLE[0] == 0
    a = fwAD.enter_dual_level()
    b = fwAD.enter_dual_level()
    assert (a, b) == (0, 1)
    assert levels.VISIBLE[0] and len(levels.visible_levels()) == 2
    fwAD.exit_dual_level(level=b)
    fwAD.exit_dual_level()
    assert levels.VISIBLE[0] == 0
    with fwAD.dual_level() as lv:
        assert lv == 0 and levels.VISIBLE[0] == 1
    assert levels.VISIBLE[0] == 0


def test_exit_errors():
    with pytest.raises(RuntimeError, match="no dual level is active"):
        fwAD.exit_dual_level()
    outer = fwAD.enter_dual_level()
    inner = fwAD.enter_dual_level()
    with pytest.raises(RuntimeError, match=f"innermost dual level, which is {inner}"):
        fwAD.exit_dual_level(level=outer)
    fwAD.exit_dual_level(level=inner)
    fwAD.exit_dual_level(level=outer)


def test_dual_level_exits_on_error():
    with pytest.raises(ValueError, match="boom"):
        with fwAD.dual_level():
            raise ValueError("boom")
    assert fwAD._DUALS.stack == []


def test_make_dual_and_unpack_dual():
    p = nd.tensor([1.0, 2.0])
    t = nd.tensor([0.5, -1.0])
    with fwAD.dual_level():
        d = fwAD.make_dual(p, t)
        assert d is not p
        assert fwAD.unpack_dual(p).tangent is None  # the input itself gets no tangent
        u = fwAD.unpack_dual(d)
        assert isinstance(u, fwAD.UnpackedDualTensor)
        primal, tangent = u
        assert u.primal is primal and u.tangent is tangent
        assert tangent is t
        close(primal, [1.0, 2.0])
        assert fwAD.unpack_dual(primal).tangent is None
        assert p.backend.shares_memory(primal._data, p._data)
        assert p.backend.shares_memory(d._data, p._data)
    # outside the level, the tangent is gone
    assert fwAD.unpack_dual(d).tangent is None
    assert tangent_levels(d) == set()


def test_unpack_dual_without_level_and_of_plain_tensor():
    x = nd.ones(2)
    p, t = fwAD.unpack_dual(x)
    assert p is x and t is None
    with fwAD.dual_level():
        p, t = fwAD.unpack_dual(x)
        assert p is x and t is None


def test_make_dual_errors():
    p = nd.ones(3)
    with pytest.raises(RuntimeError, match="no dual level is active"):
        fwAD.make_dual(p, nd.ones(3))
    with fwAD.dual_level():
        with pytest.raises(RuntimeError, match=r"tangent has shape \[2\] but the primal has "
                                               r"shape \[3\]"):
            fwAD.make_dual(p, nd.ones(2))
        with pytest.raises(ValueError, match="primal to be floating point or complex, but got "
                                             "int64"):
            fwAD.make_dual(nd.tensor([1, 2, 3]), nd.ones(3))
        with pytest.raises(ValueError, match="tangent to be floating point or complex, but "
                                             "got int64"):
            fwAD.make_dual(p, nd.tensor([1, 2, 3]))
        with pytest.raises(ValueError, match="complex tangent"):
            fwAD.make_dual(p, nd.ones(3, dtype=nd.complex128))
        with pytest.raises(TypeError, match="primal to be a Tensor, got ndarray"):
            fwAD.make_dual(np.ones(3), nd.ones(3))
        with pytest.raises(TypeError, match="tangent to be a Tensor, got list"):
            fwAD.make_dual(p, [1.0, 1.0, 1.0])
        with pytest.raises(RuntimeError, match="level 5 is not an active dual level"):
            fwAD.make_dual(p, nd.ones(3), level=5)
        with pytest.raises(TypeError, match="unpack_dual: expected a Tensor"):
            fwAD.unpack_dual(np.ones(3))


def test_make_dual_casts_tangent_of_same_kind():
    with fwAD.dual_level():
        d = fwAD.make_dual(nd.ones(2), nd.ones(2, dtype=nd.float32))
        assert fwAD.unpack_dual(d).tangent.dtype == nd.float64
        z = fwAD.make_dual(nd.ones(2, dtype=nd.complex128), nd.ones(2))
        assert fwAD.unpack_dual(z).tangent.dtype == nd.complex128


def test_exit_drops_tangents_from_every_tensor():
    with fwAD.dual_level() as outer:
        x = fwAD.make_dual(nd.tensor([1.0, 2.0]), nd.ones(2))
        with fwAD.dual_level() as inner:
            y = fwAD.make_dual(x, nd.full((2,), 2.0))
            z = y * y
            assert tangent_levels(z) == {outer, inner}
        assert tangent_levels(z) == {outer}
        assert tangent_levels(y) == {outer}
        assert fwAD.unpack_dual(z, level=inner).tangent is None
        close(fwAD.unpack_dual(z).tangent, 2 * np.array([1.0, 2.0]))
    assert not tangent_levels(z) and not tangent_levels(x)


def test_no_graph_without_requires_grad():
    with fwAD.dual_level():
        x = fwAD.make_dual(nd.tensor([1.0, 2.0]), nd.ones(2))
        y = nd.exp(x) * x
        assert y.grad_fn is None and not y.requires_grad
        t = fwAD.unpack_dual(y).tangent
        assert t.grad_fn is None and not t.requires_grad


def test_ops_without_tangents_are_untouched_under_a_level():
    with fwAD.dual_level():
        y = nd.exp(nd.ones(2))
        assert y._meta is None  # no tangent dict allocated on the plain path


def test_gradient_flows_through_make_dual_to_the_primal():
    xp = nd.tensor([1.0, 2.0], requires_grad=True)
    with fwAD.dual_level():
        x = fwAD.make_dual(xp, nd.ones(2))
        (x * x).sum().backward()
    close(xp.grad, [2.0, 4.0])


# --------------------------------------------------------------------------- op rules
@pytest.mark.parametrize("correction", [0, 1])
@pytest.mark.parametrize("axis", [None, 1])
def test_var_and_std_of_complex_input(axis, correction):
    """var and std of complex z are real; their tangent is 2 re(sum(conj(z - mean) dz)) /
    (N - correction) (and that over 2 std), not the real part of sum((z - mean) dz)."""
    rng = np.random.default_rng(5)
    z0 = rng.normal(size=(2, 3)) + 1j * rng.normal(size=(2, 3))
    dz = rng.normal(size=(2, 3)) + 1j * rng.normal(size=(2, 3))
    n = z0.size if axis is None else z0.shape[axis]
    dev = z0 - z0.mean(axis=axis, keepdims=True)
    dvar = 2 * np.real(np.sum(np.conj(dev) * dz, axis=axis)) / (n - correction)
    std = np.std(z0, axis=axis, ddof=correction)
    eps = 1e-6
    for f, ref, closed in ((nd.var, np.var, dvar), (nd.std, np.std, dvar / (2 * std))):
        with fwAD.dual_level():
            out = f(fwAD.make_dual(nd.tensor(z0), nd.tensor(dz)), axis=axis,
                    correction=correction)
            tangent = fwAD.unpack_dual(out).tangent
        assert out.dtype == nd.float64 and tangent.dtype == nd.float64
        fd = (ref(z0 + eps * dz, axis=axis, ddof=correction)
              - ref(z0 - eps * dz, axis=axis, ddof=correction)) / (2 * eps)
        close(tangent, fd, rtol=1e-7, atol=1e-9)
        close(tangent, closed)
    # the registry suites draw complex inputs for them
    from ndgrad.core.ops import REGISTRY
    assert REGISTRY["var"].domain.complex and REGISTRY["std"].domain.complex


# --------------------------------------------------------------------------- nesting
def test_no_perturbation_confusion():
    # d/dx [ x * d/dy (x + y) ] = 1, not 2
    with fwAD.dual_level():
        x = fwAD.make_dual(nd.tensor(2.0), nd.tensor(1.0))
        with fwAD.dual_level():
            y = fwAD.make_dual(nd.tensor(3.0), nd.tensor(1.0))
            inner = fwAD.unpack_dual(x + y).tangent
        close(inner, 1.0)
        close(fwAD.unpack_dual(x * inner).tangent, 1.0)


def test_no_perturbation_confusion_same_variable_both_levels():
    # d/dx [ x * d/dy (x * y) ] at y = 3 = d/dx [x * x] = 2x
    with fwAD.dual_level():
        x = fwAD.make_dual(nd.tensor(2.0), nd.tensor(1.0))
        with fwAD.dual_level():
            y = fwAD.make_dual(nd.tensor(3.0), nd.tensor(1.0))
            inner = fwAD.unpack_dual(x * y).tangent
        close(fwAD.unpack_dual(x * inner).tangent, 4.0)


@pytest.mark.parametrize("f, d1, d2", [
    (nd.sin, np.cos, lambda x: -np.sin(x)),
    (nd.exp, np.exp, np.exp),
    (lambda x: x ** 3, lambda x: 3 * x ** 2, lambda x: 6 * x),
    (nd.tanh, lambda x: 1 - np.tanh(x) ** 2,
     lambda x: -2 * np.tanh(x) * (1 - np.tanh(x) ** 2)),
    (lambda x: nd.log(x) * x, lambda x: np.log(x) + 1, lambda x: 1 / x),
])
def test_forward_over_forward_second_derivative(f, d1, d2):
    x0 = np.array([0.3, 0.8, 1.7])
    with fwAD.dual_level():
        x = fwAD.make_dual(nd.tensor(x0), nd.ones(3))
        with fwAD.dual_level():
            xx = fwAD.make_dual(x, nd.ones(3))
            first = fwAD.unpack_dual(f(xx)).tangent
        close(first, d1(x0), rtol=1e-12)
        close(fwAD.unpack_dual(first).tangent, d2(x0), rtol=1e-12)


def test_forward_over_forward_mixed_partial():
    # f(a, b) = a^2 b: d2f/da db = 2a
    with fwAD.dual_level():
        a = fwAD.make_dual(nd.tensor(1.5), nd.tensor(1.0))
        with fwAD.dual_level():
            b = fwAD.make_dual(nd.tensor(-2.0), nd.tensor(1.0))
            dfdb = fwAD.unpack_dual(a * a * b).tangent
        close(fwAD.unpack_dual(dfdb).tangent, 3.0)


def test_forward_over_reverse_hvp():
    x0 = np.array([0.5, -1.0, 2.0])
    v = np.array([1.0, 0.5, -2.0])
    xp = nd.tensor(x0, requires_grad=True)
    with fwAD.dual_level():
        x = fwAD.make_dual(xp, nd.tensor(v))
        f = (nd.sin(x) * x[[1, 2, 0]]).sum() + (x ** 3).sum()
        (g,) = grad(f, x, create_graph=True)
        hv = fwAD.unpack_dual(g).tangent
    # closed form: H of sum_i sin(x_i) x_{p(i)} with p = [1, 2, 0], plus diag(6x)
    n = 3
    H = np.diag(6 * x0 - np.sin(x0) * x0[[1, 2, 0]])
    for i, j in enumerate([1, 2, 0]):
        H[i, j] += np.cos(x0[i])
        H[j, i] += np.cos(x0[i])
    assert H.shape == (n, n)
    close(hv, H @ v, rtol=1e-12)


def test_reverse_over_forward():
    x0 = np.array([1.0, 2.0])
    xp = nd.tensor(x0, requires_grad=True)
    with fwAD.dual_level():
        x = fwAD.make_dual(xp, nd.ones(2))
        t = fwAD.unpack_dual(nd.exp(x) * x).tangent  # (1 + x) e^x
        assert t.requires_grad
        t.sum().backward()
    close(xp.grad, np.exp(x0) * (2 + x0), rtol=1e-12)


def test_reverse_through_the_tangent_input():
    v = nd.tensor([1.0, 2.0], requires_grad=True)
    with fwAD.dual_level():
        x = fwAD.make_dual(nd.tensor([0.5, 1.5]), v)
        t = fwAD.unpack_dual(nd.sin(x)).tangent
        (g,) = grad(t.sum(), v)
    close(g, np.cos([0.5, 1.5]), rtol=1e-12)


# --------------------------------------------------------------------------- views, in-place
def test_view_tangent_is_a_view_of_the_base_tangent():
    with fwAD.dual_level():
        x = fwAD.make_dual(nd.arange(6.0).reshape(2, 3), nd.ones((2, 3)))
        v = x[0]
        tv = fwAD.unpack_dual(v).tangent
        tx = fwAD.unpack_dual(x).tangent
        assert tx.backend.shares_memory(tv._data, tx._data)


def test_inplace_updates_tangent():
    with fwAD.dual_level():
        x = fwAD.make_dual(nd.tensor([1.0, 2.0]), nd.tensor([1.0, 1.0]))
        y = x * 1.0
        ty_before = fwAD.unpack_dual(y).tangent
        y *= y  # y^2: tangent 2 y t
        close(y, [1.0, 4.0])
        close(fwAD.unpack_dual(y).tangent, [2.0, 4.0])
        assert fwAD.unpack_dual(y).tangent is ty_before  # updated in its memory
        y.exp_()
        close(fwAD.unpack_dual(y).tangent, np.exp([1.0, 4.0]) * [2.0, 4.0])


def test_inplace_on_view_updates_base_tangent():
    with fwAD.dual_level():
        b = fwAD.make_dual(nd.tensor([1.0, 2.0, 3.0]), nd.tensor([1.0, 1.0, 1.0]))
        b = b * 1.0
        v = b[1:]
        v *= 3.0
        close(b, [1.0, 6.0, 9.0])
        close(fwAD.unpack_dual(b).tangent, [1.0, 3.0, 3.0])
        close(fwAD.unpack_dual(v).tangent, [3.0, 3.0])


def test_setitem_propagates_tangents():
    with fwAD.dual_level():
        base = nd.zeros(4)  # no tangent yet
        val_ = fwAD.make_dual(nd.tensor([5.0, 6.0]), nd.tensor([1.0, 2.0]))
        base[1:3] = val_
        close(fwAD.unpack_dual(base).tangent, [0.0, 1.0, 2.0, 0.0])
        x = fwAD.make_dual(nd.tensor([1.0, 2.0, 3.0]), nd.tensor([1.0, 1.0, 1.0])) * 1.0
        x[0] = 7.0  # a constant: its tangent is zero there
        close(fwAD.unpack_dual(x).tangent, [0.0, 1.0, 1.0])


def test_setitem_on_view_without_tangent_gives_base_a_tangent():
    with fwAD.dual_level():
        base = nd.zeros((2, 2))
        row = base[1]
        row[0] = fwAD.make_dual(nd.tensor(2.0), nd.tensor(4.0))
        close(fwAD.unpack_dual(base).tangent, [[0.0, 0.0], [4.0, 0.0]])
        close(fwAD.unpack_dual(row).tangent, [4.0, 0.0])


def test_an_inplace_change_that_the_old_tangent_cannot_hold():
    """Note [Tangents of views]: under vmap with an unbatched tangent, the tangent of
    ``y = v * 1.0`` is unbatched and an in-place change through a view of y makes a batched
    one: y's tangent is replaced by one that holds it, and every view of y follows (vmap
    refused the write before, or the change reached only the view's tangent)."""
    from ndgrad.func import jvp, vmap
    xs = np.array([[0.4, -1.3, 0.8, 2.0], [1.1, 0.5, -0.7, 0.3]])
    e = np.array([0.3, 1.0, -2.0, 0.5])

    def f(v):
        y = v * 1.0
        u = y[:2]                       # a view taken before the change
        w = y[1:]
        w.mul_(v[1:])                   # y = [v0, v1^2, v2^2, v3^2]
        return nd.concatenate([y * 2.0, u * 1.0, w[:1] * 1.0])

    got = vmap(lambda v: jvp(f, (v,), (nd.tensor(e),))[1])(nd.tensor(xs))
    dy = np.concatenate([e[:1] + 0 * xs[:, :1], 2 * xs[:, 1:] * e[1:]], axis=1)
    expected = np.concatenate([2 * dy, dy[:, :2], dy[:, 1:2]], axis=1)
    np.testing.assert_allclose(got.cpu().numpy(), expected, rtol=1e-12)


def test_func_jvp_leaves_the_callers_tangent_and_make_dual_shares_it():
    """func.jvp's tangents stay the caller's: an in-place change of an input writes a copy
    (jacfwd passes vmap's cached identity there, Note [Tangents of views]); a tangent given
    to make_dual is shared, and written, as PyTorch's."""
    from ndgrad.func import jvp

    def f(v):
        v.mul_(3.0)
        return v * 1.0
    t = nd.tensor([1.0, 2.0])
    _, tangent = jvp(f, (nd.tensor([1.0, 2.0]),), (t,))
    np.testing.assert_allclose(tangent.cpu().numpy(), [3.0, 6.0])
    np.testing.assert_allclose(t.cpu().numpy(), [1.0, 2.0])
    t = nd.tensor([1.0, 2.0])
    with fwAD.dual_level():
        d = fwAD.make_dual(nd.tensor([1.0, 2.0]), t)
        d.mul_(3.0)
        np.testing.assert_allclose(fwAD.unpack_dual(d).tangent.cpu().numpy(), [3.0, 6.0])
    np.testing.assert_allclose(t.cpu().numpy(), [3.0, 6.0])


def test_inplace_with_reverse_mode_history():
    xp = nd.tensor([1.0, 2.0], requires_grad=True)
    with fwAD.dual_level():
        x = fwAD.make_dual(xp, nd.ones(2))
        y = x * 2.0
        y.mul_(x)  # 2 x^2
        close(fwAD.unpack_dual(y).tangent, [4.0, 8.0])
        y.sum().backward()
    close(xp.grad, [4.0, 8.0])


# --------------------------------------------------------------------------- custom Function
def test_custom_function_jvp():
    with fwAD.dual_level():
        x = fwAD.make_dual(nd.tensor([1.0, 2.0]), nd.tensor([1.0, 0.5]))
        y = Cube.apply(x)
        close(y, [1.0, 8.0])
        close(fwAD.unpack_dual(y).tangent, [3.0, 6.0])


def test_custom_function_jvp_nested_levels():
    with fwAD.dual_level():
        x = fwAD.make_dual(nd.tensor(2.0), nd.tensor(1.0))
        with fwAD.dual_level():
            xx = fwAD.make_dual(x, nd.tensor(1.0))
            d1 = fwAD.unpack_dual(Cube.apply(xx)).tangent
        close(d1, 12.0)
        close(fwAD.unpack_dual(d1).tangent, 12.0)


def test_custom_function_two_inputs_and_outputs():
    class MulAdd(Function):
        @staticmethod
        def forward(ctx, a, b, k):
            ctx.save_for_forward(a, b)
            ctx.k = k
            return a * b, a + k * b

        @staticmethod
        def backward(ctx, g1, g2):
            raise AssertionError("not used")

        @staticmethod
        def jvp(ctx, ta, tb, tk):
            a, b = ctx.saved_tensors
            assert tk is None
            assert tb is None
            return ta * b, ta

    with fwAD.dual_level():
        a = fwAD.make_dual(nd.tensor(2.0), nd.tensor(1.0))
        p, s = MulAdd.apply(a, nd.tensor(5.0), 3.0)
        close(fwAD.unpack_dual(p).tangent, 5.0)
        close(fwAD.unpack_dual(s).tangent, 1.0)


def test_custom_function_without_jvp_raises():
    class NoJvp(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    with fwAD.dual_level():
        # no tangent among the inputs: fine
        close(NoJvp.apply(nd.ones(1)), [2.0])
        x = fwAD.make_dual(nd.ones(1), nd.ones(1))
        with pytest.raises(NotImplementedError, match="must override the jvp static method"):
            NoJvp.apply(x)
    close(NoJvp.apply(nd.ones(1)), [2.0])


def test_custom_function_jvp_wrong_count():
    class Bad(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def jvp(ctx, t):
            return t, t

    with fwAD.dual_level():
        x = fwAD.make_dual(nd.ones(1), nd.ones(1))
        with pytest.raises(RuntimeError, match=r"Bad.jvp returned 2 tangent\(s\), but forward "
                                               r"returned 1 output"):
            Bad.apply(x)


def _square_reading_in_jvp():
    """x^2 as a Function whose jvp reads x from ``holder`` (the transform's value, by
    closure) instead of what save_for_forward saved."""
    holder = {}

    class Sq(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            ctx.save_for_forward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2.0 * g * x

        @staticmethod
        def jvp(ctx, t):
            return 2.0 * t * holder["x"]   # x by closure
    return Sq, holder


@pytest.mark.parametrize("transform", ["hessian", "jacfwd(jacrev)", "jvp(grad)"])
def test_a_jvp_reading_a_transform_value_by_closure_names_the_function(transform):
    # forward mode runs the jvp one level down (forward_ad's _jvp_of), where the grad
    # level's value read by closure is refused: the message named no Function there
    from ndgrad import func
    Sq, holder = _square_reading_in_jvp()

    def g(x):
        holder["x"] = x
        return Sq.apply(x).sum()

    run = {"hessian": func.hessian(g), "jacfwd(jacrev)": func.jacfwd(func.jacrev(g)),
           "jvp(grad)": lambda x: func.jvp(func.grad(g), (x,), (nd.ones(3),))[1]}[transform]
    with pytest.raises(RuntimeError, match=(
            r"^Sq\.jvp used a tensor of the transform level <grad level \d> .*Instead, pass "
            r"the tensor to Sq\.apply as an input, and save it for jvp with "
            r"ctx\.save_for_forward")):
        run(nd.tensor([0.3, -1.2, 0.8]))


def test_a_view_made_before_its_base_got_a_tangent_sees_it():
    with fwAD.dual_level():
        base = nd.zeros(4)
        v = base[1:3]  # made while base has no tangent
        base.copy_(fwAD.make_dual(nd.tensor([1.0, 2.0, 3.0, 4.0]),
                                  nd.tensor([10.0, 20.0, 30.0, 40.0])))
        y = v * v  # d(v^2) = 2 v dv
        primal, tangent = fwAD.unpack_dual(y)
        np.testing.assert_allclose(primal.cpu().numpy(), [4.0, 9.0])
        np.testing.assert_allclose(tangent.cpu().numpy(), [2 * 2.0 * 20.0, 2 * 3.0 * 30.0])
        # from now on the view's tangent is a view of the base's
        np.testing.assert_allclose(fwAD.unpack_dual(v).tangent.cpu().numpy(), [20.0, 30.0])
