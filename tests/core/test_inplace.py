"""In-place operations and views (issue "Custom Functions, in-place operations and views",
Note [In-place on views] in ndgrad/core/views.py).

Numbers come from closed forms (worked out by hand, and the same as PyTorch's) or from
finite differences (gradcheck / gradgradcheck).
"""

from __future__ import annotations

import inspect
import re

import numpy as np
import pytest

import ndgrad as nd
from ndgrad.autograd import Function
from ndgrad.autograd.graph import increment_version
from ndgrad.checks import gradcheck, gradgradcheck
from support import close, val


def x4():
    return nd.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)


# ------------------------------------------------------------------ version counters
def test_views_share_the_version_counter_and_in_place_ops_bump_it():
    y = nd.zeros(4)
    v = y[1:3]
    r = y.reshape(2, 2)
    assert v._vcounter is y._vcounter is r._vcounter
    v.add_(1.0)
    r[0, 0] = 5.0
    y.mul_(2.0)
    assert y._version == 3
    close(y, [10.0, 2.0, 2.0, 0.0])


def test_fill_zero_copy_bump_the_version_and_differentiate():
    x = x4()
    y = x * 1
    y[0:2].fill_(7.0)
    y[3:].zero_()
    z = nd.ones(4)
    z.copy_(y * x)
    close(z, [7.0, 14.0, 9.0, 0.0])
    assert z._version == 1 and y._version == 2
    z.sum().backward()
    # z = [7 x0, 7 x1, x2^2, 0]
    close(x.grad, [7.0, 7.0, 6.0, 0.0])
    with pytest.raises(RuntimeError, match="0-dimension"):
        y.fill_(nd.ones(2))


# ------------------------------------------------------------------ CopySlices
def test_in_place_on_a_slice_updates_the_base_history():
    x = x4()
    y = x * 1
    y[1:3].mul_(3)
    close(y, [1.0, 6.0, 9.0, 4.0])
    assert y.grad_fn is not None
    y.sum().backward()
    close(x.grad, [1.0, 3.0, 3.0, 1.0])


def test_setitem_of_a_computed_value():
    x = x4()
    y = x * 1
    y[0] = x[1] * 2
    (y * y).sum().backward()
    # y = [2 x1, x1, x2, x3]: d/dx1 (4 x1^2 + x1^2) = 10 x1
    close(x.grad, [0.0, 20.0, 6.0, 8.0])


def test_view_of_a_view():
    x = x4()
    y = x * 1
    y[1:][::2].add_(x[:2])
    close(y, [1.0, 3.0, 3.0, 6.0])
    (y * y).sum().backward()
    # y = [x0, x1 + x0, x2, x3 + x1]
    close(x.grad, [2 * 1 + 2 * 3, 2 * 3 + 2 * 6, 6.0, 12.0])


def test_setitem_with_integer_arrays_and_masks():
    x = x4()
    y = x * 1
    y[[0, 2]] = x[2:] * 10
    y[y > 35.0] = 0.0  # y = [30, 2, 40, 4] -> [30, 2, 0, 4]
    close(y, [30.0, 2.0, 0.0, 4.0])
    (y * y).sum().backward()
    # y = [10 x2, x1, 0, x3]
    close(x.grad, [0.0, 4.0, 600.0, 8.0])


def test_advanced_setitem_through_a_view():
    x = x4()
    y = x * 1
    v = y[1:]
    v[[0, 2]] = x[:2] ** 2
    v[v < 2.0] = 5.0  # v = [1, 3, 4] -> [5, 3, 4]
    close(y, [1.0, 5.0, 3.0, 4.0])
    (y * nd.tensor([1.0, 2.0, 3.0, 4.0])).sum().backward()
    # y = [x0, 5, x2, x1^2]
    close(x.grad, [1.0, 16.0, 3.0, 0.0])


def test_transpose_and_reshape_views_modified_in_place():
    a = nd.arange(6.0).reshape(2, 3).requires_grad_()
    y = a * 1
    y.T[0].mul_(5)  # column 0
    close(y, [[0.0, 1.0, 2.0], [15.0, 4.0, 5.0]])
    (y * y).sum().backward()
    close(a.grad, [[0.0, 2.0, 4.0], [150.0, 8.0, 10.0]])

    b = nd.arange(6.0).requires_grad_()
    z = b * 1
    z.reshape(2, 3)[1].exp_()
    close(z, np.r_[0.0, 1.0, 2.0, np.exp([3.0, 4.0, 5.0])])
    z.sum().backward()
    close(b.grad, np.r_[1.0, 1.0, 1.0, np.exp([3.0, 4.0, 5.0])])


@pytest.mark.parametrize("make", [
    lambda y: y.mT, lambda y: nd.moveaxis(y, 0, 1), lambda y: nd.flip(y, axis=1),
    lambda y: nd.expand_dims(y, 0)[0], lambda y: nd.squeeze(nd.expand_dims(y, 0), axis=0),
    lambda y: nd.split(y, [1], axis=1)[1], lambda y: nd.unstack(y, axis=1)[2],
    lambda y: y[:, ::-2],
])
def test_every_view_kind_writes_back(make):
    def f(a, b):
        y = a * 1
        v = make(y)
        v.mul_(b[: v.shape[-1]] if v.ndim else b[0])
        v.add_(1.0)
        return y * a
    a = nd.tensor(np.linspace(-1, 1, 6).reshape(2, 3), requires_grad=True)
    b = nd.tensor([0.3, -0.7, 1.1], requires_grad=True)
    assert gradcheck(f, (a, b))
    assert gradgradcheck(f, (a, b))


def test_gradcheck_and_second_order_through_copy_slices():
    def f(x, w):
        y = x * x
        y[1:3] *= w  # augmented assignment on a view
        y[0] = (x[3] * w[0]).sin()
        y.reshape(2, 2)[:, 1].exp_()  # saves its output: the base's memory
        return y.sum() + (y * y).sum()
    x = nd.tensor([0.3, -0.5, 0.8, 1.2], requires_grad=True)
    w = nd.tensor([0.7, -1.3], requires_grad=True)
    assert gradcheck(f, (x, w))
    assert gradgradcheck(f, (x, w))


def test_base_that_required_no_grad_gets_history_and_so_do_its_views():
    x = x4()
    y = nd.zeros(4)
    v = y[:2]
    assert not v.requires_grad
    y[1:3].copy_(x[:2] * 3)
    close(y, [0.0, 3.0, 6.0, 0.0])
    assert y.requires_grad and v.requires_grad  # v's history is derived from y's
    (v * v).sum().backward()
    # v = [0, 3 x0]
    close(x.grad, [18.0, 0.0, 0.0, 0.0])


def test_later_read_of_the_base_and_other_views_see_the_new_history():
    x = x4()
    y = x * 1
    w = y[2:]  # another view, taken before
    v = y[:2]
    v.mul_(x[2:])
    close(y, [3.0, 8.0, 3.0, 4.0])
    assert v.grad_fn is not None
    (y.sum() + 10 * w.sum() + v.sum()).backward()
    # y = [x0 x2, x1 x3, x2, x3]; w = [x2, x3]; v = y[:2]
    close(x.grad, [2 * 3.0, 2 * 4.0, 2 * 1.0 + 11.0, 2 * 2.0 + 11.0])


def test_stale_view_history_is_regenerated_in_every_reader():
    x = x4()
    y = x * 1
    v = y[1:3]
    y.mul_(x)  # y = x^2, v's history is stale
    assert v.grad_fn is not None
    v.backward(nd.ones(2), retain_graph=True)
    close(x.grad, [0.0, 4.0, 6.0, 0.0])
    x.grad = None
    v2 = y[1:3]
    y.add_(1.0)
    (v2 * x[:2]).sum().backward()  # x0 (x1^2 + 1) + x1 (x2^2 + 1)
    close(x.grad, [5.0, 2 * 2.0 * 1.0 + 10.0, 2 * 3.0 * 2.0, 0.0])


def test_saved_view_modified_through_the_base_is_detected():
    x = x4()
    y = x * 1
    v = y[0:2]
    s = (v * v).sum()  # saves v
    y.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        s.backward()


def test_in_place_on_a_view_that_saves_its_output():
    x = x4()
    y = x * 1
    y[0:2].exp_()  # the exp node saves its output: the base's memory
    y.sum().backward(retain_graph=True)
    close(x.grad, [np.e, np.exp(2.0), 1.0, 1.0])
    y[3] = 0.0  # changes that memory: the saved output is now stale
    with pytest.raises(RuntimeError, match="modified by an inplace operation.*output 0"):
        y.sum().backward()


# ------------------------------------------------------------------ leaves
def test_in_place_on_a_view_of_a_leaf_that_requires_grad_is_refused():
    x = x4()
    with pytest.raises(RuntimeError, match="view of a leaf tensor that requires grad"):
        x[0:2].mul_(2)
    with pytest.raises(RuntimeError, match="view of a leaf tensor that requires grad"):
        x.reshape(2, 2)[0] = 1.0
    close(x, [1.0, 2.0, 3.0, 4.0])


def test_no_grad_parameter_updates_through_views():
    w = x4()
    (w * w).sum().backward()
    with nd.no_grad():
        w[1:3] -= 0.5 * w.grad[1:3]
        w.reshape(2, 2)[0, 0] = 0.0
    close(w, [0.0, 0.0, 0.0, 4.0])
    # `w[1:3] -= d` is two in-place ops: isub on the view, then w[1:3] = view
    assert w.is_leaf and w.requires_grad and w._version == 3


# ------------------------------------------------------------------ inference mode
def test_inference_tensors_track_no_versions_and_are_not_saved():
    with nd.inference_mode():
        i = nd.ones(3)
        v = i[:2]
        i.add_(1.0)
        v.mul_(2.0)
        assert i._vcounter is None and v._vcounter is None
    close(i, [4.0, 4.0, 2.0])
    with pytest.raises(RuntimeError, match="Inplace update to inference tensor outside"):
        i.add_(1.0)
    w = nd.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="Inference tensors cannot be saved for backward"):
        w * i
    (w * i.clone()).sum().backward()  # a clone made outside inference mode is normal
    close(w.grad, [4.0, 4.0, 2.0])


# ------------------------------------------------------------------ custom Functions
class _ScaleInPlace(nd.autograd.Function):
    @staticmethod
    def forward(ctx, t):
        t._data *= 3.0
        ctx.mark_dirty(t)
        return t

    @staticmethod
    def backward(ctx, g):
        return g * 3.0


def test_mark_dirty_on_a_view_updates_the_base_history():
    x = x4()
    y = x * 1
    out = _ScaleInPlace.apply(y[1:3])
    close(y, [1.0, 6.0, 9.0, 4.0])
    assert out.grad_fn is not None
    (y * y).sum().backward()
    # y = [x0, 3 x1, 3 x2, x3]
    close(x.grad, [2.0, 36.0, 54.0, 8.0])
    with pytest.raises(RuntimeError, match="view of a leaf tensor that requires grad"):
        _ScaleInPlace.apply(x4()[1:3])


def test_a_view_made_under_no_grad_cannot_be_modified_in_place_with_grad_on():
    # PyTorch forbids it as ambiguous; both inside or both outside no_grad is fine
    x = nd.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 1
    with nd.no_grad():
        v = y[0:2]
    with pytest.raises(RuntimeError, match="created in no_grad mode"):
        v.mul_(2.0)
    with nd.no_grad():
        w = y[0:2]
        w.mul_(2.0)
    np.testing.assert_allclose(y.detach().cpu().numpy(), [2.0, 4.0, 3.0])


def test_a_rule_that_reads_no_input_saves_none_so_later_in_place_changes_are_fine():
    # broadcast_arrays' and stack's gradients need only g: their inputs may change afterwards
    a = nd.tensor([1.0, 2.0], requires_grad=True)
    b = nd.tensor([[3.0], [4.0]], requires_grad=True)
    u, v = a * 1, b * 1
    x, y = nd.broadcast_arrays(u, v)
    s = nd.stack([u, u]).sum() + (x * 2 + y * 3).sum()
    u += 10.0  # modify an input in place after it was used: nothing saved it
    s.backward()
    np.testing.assert_allclose(a.grad.cpu().numpy(), [2.0 + 2 * 2.0, 2.0 + 2 * 2.0])
    np.testing.assert_allclose(b.grad.cpu().numpy(), [[3.0 * 2], [3.0 * 2]])


# ------------------------------------------------------------------ under a transform
def test_inplace_on_a_batched_value_is_recorded_for_the_graph_outside_the_vmap():
    # The vmap level records nothing for these values (none requires grad inside it), but
    # the plain graph outside differentiates their physical computation (Note [In-place
    # operations]): sin_ must be recorded there, with the old value kept for its rule.
    def f(x):
        y = x.clone()
        y0 = y[:2]            # a view taken before the in-place change of its base
        y.sin_()
        y[1:].mul_(x[1:])     # in-place on a view, then the base is read
        return y0 + y[1:]
    X = np.array([[0.3, -1.1, 0.7], [1.2, 0.4, -0.5]])
    x = nd.tensor(X, requires_grad=True)
    w = np.array([[0.5, -2.0], [1.5, 0.25]])
    (nd.func.vmap(f)(x) * nd.tensor(w)).sum().backward()
    # y = [sin x0, sin(x1) x1, sin(x2) x2]; out = [y0 + y1, y1 + y2]
    d1 = np.cos(X[:, 1]) * X[:, 1] + np.sin(X[:, 1])
    d2 = np.cos(X[:, 2]) * X[:, 2] + np.sin(X[:, 2])
    ref = np.stack([w[:, 0] * np.cos(X[:, 0]), (w[:, 0] + w[:, 1]) * d1, w[:, 1] * d2], 1)
    close(x.grad, ref)


# ------------------------------------------------------------------ where a saved value changed
# Note [Where a tensor was modified in place]: the stale-value error names the line of the
# test that made the change (found with inspect), without anomaly mode.
def _here():
    """The caller's previous line and its function (qualified, where Python says it)."""
    code = inspect.currentframe().f_back.f_code
    return inspect.currentframe().f_back.f_lineno - 1, getattr(code, "co_qualname",
                                                                code.co_name)


def _modified_at(line, function, what):
    return re.escape(f"instead. The tensor was modified in place at {__file__}:{line} in "
                     f"{function} by {what}")


def test_the_error_names_the_line_of_an_in_place_method():
    x = x4()
    y = (x * 1.0).exp()  # exp saves its output
    y.mul_(2.0)
    line, function = _here()
    assert not nd.autograd.is_anomaly_enabled()
    with pytest.raises(RuntimeError, match=_modified_at(line, function, "mul_") +
                       r"\. Hint: the operation that saved it is the one named; make that "
                       "operation out-of-place"):
        y.sum().backward()
    # what the message says is right: the gradient without the change
    x.grad = None
    y = (x * 1.0).exp()
    y.sum().backward()
    close(x.grad, np.exp([1.0, 2.0, 3.0, 4.0]))


def test_the_error_names_the_line_of_an_item_assignment():
    x = x4()
    y = (x * 1.0).exp()
    y[1] = 0.0
    line, function = _here()
    with pytest.raises(RuntimeError, match=_modified_at(line, function,
                                                        "x[...] = value (__setitem__)")):
        y.sum().backward()


def test_the_error_names_the_line_of_an_in_place_change_of_a_view():
    x = x4()
    y = (x * 1.0).exp()
    v = y[1:].reshape(3, 1)  # a view of a view: one version counter
    v.add_(1.0)
    line, function = _here()
    with pytest.raises(RuntimeError, match=_modified_at(line, function, "add_")):
        y.sum().backward()


def test_the_error_names_the_line_of_a_numpy_out_argument():
    x = x4()
    y = (x * 1.0).exp()
    np.multiply(y, 2.0, out=y)
    line, function = _here()
    assert y._version == 1
    with pytest.raises(RuntimeError, match=_modified_at(
            line, function, "the out= argument of a NumPy function")):
        y.sum().backward()


def test_the_error_names_the_line_in_a_custom_functions_backward():
    class Clobber(Function):
        @staticmethod
        def forward(ctx, y):
            ctx.save_for_backward(y)
            return y * 2.0

        @staticmethod
        def backward(ctx, g):
            (y,) = ctx.saved_tensors
            y.mul_(0.0)  # runs before exp's node, which saved y as its output
            ctx.where = _here()
            return g * 2.0

    x = x4()
    z = Clobber.apply((x * 1.0).exp())
    with pytest.raises(RuntimeError, match="ExpBackward0") as caught:
        z.sum().backward()
    line, function = z.grad_fn.where
    assert function.endswith("backward")
    assert re.search(_modified_at(line, function, "mul_"), str(caught.value))


def test_the_last_of_several_changes_is_named_and_increment_version_names_its_call():
    x = x4()
    y = (x * 1.0).exp()
    y.add_(1.0)
    y += 1.0
    line, function = _here()
    with pytest.raises(RuntimeError, match=_modified_at(line, function, "+= (__iadd__)") +
                       ", the last of 2 in-place changes since it was saved\\. Hint"):
        y.sum().backward()
    y = (x * 1.0).exp()
    y.add_(1.0)
    increment_version(y)  # changed behind ndgrad's back: the call is where
    line, function = _here()
    with pytest.raises(RuntimeError, match=_modified_at(line, function, "increment_version") +
                       ", the last of 2 in-place changes since it was saved\\. Hint: the "
                       "operation that saved it is the one named; make that operation "
                       "out-of-place"):
        y.sum().backward()
    y = (x * 1.0).exp()
    increment_version([x * 1.0, y])  # a sequence of tensors: each noted
    line, function = _here()
    with pytest.raises(RuntimeError, match=_modified_at(line, function, "increment_version") +
                       "\\. Hint"):
        y.sum().backward()
    # what the message says is right: the gradient without the change
    x.grad = None
    (x * 1.0).exp().sum().backward()
    close(x.grad, np.exp([1.0, 2.0, 3.0, 4.0]))


class _DoubleInPlace(Function):
    """Doubles its input in place (its memory written behind ndgrad's back, through the
    array: the only version bump is ctx.mark_dirty's)."""

    @staticmethod
    def forward(ctx, y):
        y._data *= 2.0
        ctx.mark_dirty(y)
        return y

    @staticmethod
    def backward(ctx, g):
        return g * 2.0


def test_the_error_names_the_line_of_a_functions_apply_that_marks_dirty():
    x = x4()
    y = x * 1.0
    z = y * y  # saves y
    _DoubleInPlace.apply(y)
    line, function = _here()
    assert y._version == 1
    with pytest.raises(RuntimeError, match="saved by MultiplyBackward0.*" + _modified_at(
            line, function, "mark_dirty") + "\\. Hint"):
        z.sum().backward()
    # inside a transformed function: the line of the apply in it
    where = []

    def f(v):
        w = v * 1.0
        out = (w * w).sum()
        _DoubleInPlace.apply(w)
        where.append(_here())
        return out
    with pytest.raises(RuntimeError, match="saved by MultiplyBackward0") as caught:
        nd.func.grad(f)(nd.tensor([1.0, 2.0]))
    assert re.search(_modified_at(*where[0], "mark_dirty"), str(caught.value))
    # without the stale read: the Function's own derivative, d sum(2 y) / dx = 2
    x.grad = None
    _DoubleInPlace.apply(x * 1.0).sum().backward()
    close(x.grad, np.full(4, 2.0))


def test_the_error_names_the_line_inside_a_transformed_function():
    where = []

    def f(x):
        y = nd.exp(x * 1.0)  # exp saves its output at the grad level
        y.mul_(2.0)
        where.append(_here())
        return y.sum()
    with pytest.raises(RuntimeError, match="saved by ExpBackward0") as caught:
        nd.func.grad(f)(nd.tensor([1.0, 2.0]))
    assert re.search(_modified_at(*where[0], "mul_"), str(caught.value))


@pytest.mark.parametrize("where", ["plain", "grad", "jvp", "vmap", "hessian"])
def test_an_inplace_change_of_a_broadcast_view_is_refused_naming_the_op(where):
    # a broadcast view's elements share memory: NumPy's bare 'assignment destination is
    # read-only' became an error naming the in-place op, raised before anything changed
    x = nd.tensor([1.0, 2.0, 3.0])
    change = {
        "plain": lambda: nd.broadcast_to(x, (2, 3)).add_(1.0),
        "grad": lambda: nd.func.grad(
            lambda v: nd.sum(nd.broadcast_to(v * 1, (2, 3)).add_(1.0)))(x),
        "jvp": lambda: nd.func.jvp(
            lambda v: nd.broadcast_to(v * 1, (2, 3)).add_(1.0), (x,), (x,)),
        "vmap": lambda: nd.func.vmap(
            lambda r: nd.broadcast_to(r * 1, (2, 3)).add_(1.0))(nd.ones((2, 3))),
        "hessian": lambda: nd.func.hessian(
            lambda v: nd.sum(nd.broadcast_to(v * 1, (2, 3)).add_(1.0)))(x),
    }[where]
    with pytest.raises(RuntimeError, match=r"^add: the in-place target's memory is read-only"):
        change()
    np.testing.assert_array_equal(val(x), [1.0, 2.0, 3.0])
    y = x * 1.0
    b = nd.broadcast_to(y, (2, 3))
    with pytest.raises(RuntimeError, match="read-only.*clone"):
        b.mul_(2.0)
    assert y._version == 0  # nothing was written, no version made
    np.testing.assert_array_equal(val(b.clone().mul_(2.0)), np.broadcast_to([2.0, 4.0, 6.0],
                                                                             (2, 3)))
