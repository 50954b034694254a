"""Custom Functions: ndgrad.autograd.Function, ctx, once_differentiable (issue 3, "Custom
Function").

References are closed forms, finite differences (gradcheck / gradgradcheck) and PyTorch's
documented behaviour (torch.autograd.Function); torch itself is never imported.
"""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

import ndgrad as nd
from ndgrad.autograd import Function, grad, once_differentiable
from ndgrad.checks import gradcheck, gradgradcheck
from ndgrad.core.saved import FREED_MSG
from support import close, val


def shares(a, b):
    """Whether Tensors ``a`` and ``b`` share storage, on any device."""
    return a.backend.shares_memory(a._data, b._data)


XV = np.array([0.3, -1.2, 0.8])


class Exp(Function):
    """exp, saving its output; backward written with ndgrad ops (so it is differentiable)."""

    @staticmethod
    def forward(ctx, x):
        y = nd.exp(x)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g * y


class MulSin(Function):
    """f(x, y) = x * y + sin(x), saving its inputs."""

    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        return x * y + nd.sin(x)

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        return g * (y + nd.cos(x)), g * x


class Square(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2 * g * x


def returning(*grads_fn):
    """A Function y = 2x (x, plus extra inputs) whose backward returns ``grads_fn(g)``."""

    class Bad(Function):
        @staticmethod
        def forward(ctx, x, *rest):
            return x * 2.0

        @staticmethod
        def backward(ctx, g):
            return grads_fn[0](g)
    return Bad


# ---------------------------------------------------------------------------- basics
def test_exp_function_values_and_gradient():
    x = nd.tensor(XV, requires_grad=True)
    y = Exp.apply(x)
    close(y, np.exp(XV))
    assert y.requires_grad and not y.is_leaf
    assert y.grad_fn.name() == "ExpBackward"
    assert type(y.grad_fn).__name__ == "ExpBackward"
    assert repr(y).endswith("grad_fn=<ExpBackward>)")
    assert y.grad_fn.next_functions == ((x.grad_fn or _acc(x), 0),)
    y.sum().backward()
    close(x.grad, np.exp(XV))


def _acc(x):
    from ndgrad.core.graph import leaf_accumulator
    return leaf_accumulator(x)


def test_ctx_is_the_grad_fn_and_keeps_attributes():
    seen = {}

    class Scale(Function):
        @staticmethod
        def forward(ctx, x, k):
            ctx.k = k
            seen["ctx"] = ctx
            return x * k

        @staticmethod
        def backward(ctx, g):
            return g * ctx.k, None

    x = nd.tensor(XV, requires_grad=True)
    y = Scale.apply(x, 3.5)
    assert y.grad_fn is seen["ctx"]
    assert y.grad_fn.k == 3.5
    y.sum().backward()
    close(x.grad, np.full(3, 3.5))


def test_function_composes_with_ops_and_matches_closed_form():
    x = nd.tensor(XV, requires_grad=True)
    y = nd.tensor([2.0, -1.0, 0.5], requires_grad=True)
    out = (MulSin.apply(x * 2.0, y) ** 2).sum()
    out.backward()
    u = 2 * XV
    f = u * y.detach().cpu().numpy() + np.sin(u)
    close(x.grad, 2 * f * (y.detach().cpu().numpy() + np.cos(u)) * 2)
    close(y.grad, 2 * f * u)


def test_gradcheck_and_gradgradcheck_through_functions():
    x = nd.tensor(XV, requires_grad=True)
    y = nd.tensor([2.0, -1.0, 0.5], requires_grad=True)
    assert gradcheck(MulSin.apply, (x, y))
    assert gradgradcheck(MulSin.apply, (x, y))
    assert gradcheck(Exp.apply, (x,))
    assert gradgradcheck(Exp.apply, (x,))


def test_double_and_triple_backward_through_a_saved_output():
    # Exp's backward reads its saved *output*: d/dx (g * y) must go back through Exp itself.
    x = nd.tensor(XV, requires_grad=True)
    (d1,) = grad(Exp.apply(x).sum(), x, create_graph=True)
    (d2,) = grad(d1.sum(), x, create_graph=True)
    (d3,) = grad(d2.sum(), x)
    for d in (d1, d2, d3):
        close(d, np.exp(XV))


def test_double_backward_closed_form_for_two_inputs():
    x = nd.tensor(XV, requires_grad=True)
    y = nd.tensor([2.0, -1.0, 0.5], requires_grad=True)
    gx, gy = grad(MulSin.apply(x, y).sum(), (x, y), create_graph=True)
    hxx, hxy = grad(gx.sum(), (x, y))
    close(hxx, -np.sin(XV))          # d/dx (y + cos x)
    close(hxy, np.ones(3))           # d/dy (y + cos x)
    (hyx,) = grad(gy.sum(), x)
    close(hyx, np.ones(3))           # d/dx x


def test_grad_mode_is_off_in_forward_and_follows_create_graph_in_backward():
    modes = {}

    class Probe(Function):
        @staticmethod
        def forward(ctx, x):
            modes["forward"] = nd.is_grad_enabled()
            inner = x * 2.0
            modes["inner_requires_grad"] = inner.requires_grad
            return inner

        @staticmethod
        def backward(ctx, g):
            modes.setdefault("backward", []).append(nd.is_grad_enabled())
            return g * 2.0

    x = nd.tensor(XV, requires_grad=True)
    Probe.apply(x).sum().backward()
    grad(Probe.apply(x).sum(), x, create_graph=True)
    assert modes == {"forward": False, "inner_requires_grad": False, "backward": [False, True]}


def test_inputs_that_do_not_require_grad_give_a_plain_result():
    x = nd.tensor(XV)
    y = Exp.apply(x)
    assert not y.requires_grad and y.grad_fn is None
    close(y, np.exp(XV))
    with nd.no_grad():
        z = Exp.apply(nd.tensor(XV, requires_grad=True))
    assert not z.requires_grad and z.grad_fn is None


def test_non_tensor_arguments_and_keywords():
    class Affine(Function):
        @staticmethod
        def forward(ctx, x, a, b=0.0, *, scale=1.0):
            ctx.a, ctx.scale = a, scale
            ctx.n_inputs = len(ctx.needs_input_grad)
            return (x * a + b) * scale

        @staticmethod
        def backward(ctx, g):
            return (g * ctx.a * ctx.scale,) + (None,) * (ctx.n_inputs - 1)

    x = nd.tensor(XV, requires_grad=True)
    y = Affine.apply(x, 3.0, b=1.0, scale=2.0)   # b becomes a positional input
    assert y.grad_fn.n_inputs == 3
    close(y, (XV * 3 + 1) * 2)
    y.sum().backward()
    close(x.grad, np.full(3, 6.0))
    # a keyword naming a later parameter fills the skipped ones with their defaults
    x.grad = None
    y = Affine.apply(x, a=4.0)
    assert y.grad_fn.n_inputs == 2
    y.sum().backward()
    close(x.grad, np.full(3, 4.0))


def test_needs_input_grad():
    seen = []

    class Probe(Function):
        @staticmethod
        def forward(ctx, a, b, k):
            seen.append(ctx.needs_input_grad)
            return a * b * k

        @staticmethod
        def backward(ctx, g):
            return g, g, None

    a = nd.tensor(XV, requires_grad=True)
    b = nd.tensor(XV)
    Probe.apply(a, b, 2.0)
    Probe.apply(b, a, 2.0)
    Probe.apply(b, b, 2.0)
    with nd.no_grad():  # reports the inputs' requires_grad, as PyTorch does
        Probe.apply(a, b, 2.0)
    assert seen == [(True, False, False), (False, True, False), (False, False, False),
                    (True, False, False)]


def test_next_functions_cover_tensor_inputs_only():
    a = nd.tensor(XV, requires_grad=True)
    b = nd.tensor(XV)
    y = returning(lambda g: (g, None, None))
    out = y.apply(a * 1.0, b, 5)
    nf = out.grad_fn.next_functions
    assert len(nf) == 2
    assert nf[0][0].name() == "MultiplyBackward0" and nf[1] == (None, 0)


# ---------------------------------------------------------------------------- outputs
def test_several_outputs_with_a_non_tensor_one():
    received = []

    class Split(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2.0, "label", x * 3.0

        @staticmethod
        def backward(ctx, g1, g2, g3):
            received.append((g1, g2, g3))
            return g1 * 2.0 + g3 * 3.0

    x = nd.tensor(XV, requires_grad=True)
    a, label, c = Split.apply(x)
    assert label == "label"
    assert (a.output_nr, c.output_nr) == (0, 2)
    assert a.grad_fn is c.grad_fn
    a.sum().backward()               # c gets no gradient: materialized as zeros
    g1, g2, g3 = received[0]
    close(g1, np.ones(3))
    assert g2 is None
    close(g3, np.zeros(3))
    close(x.grad, np.full(3, 2.0))
    x.grad = None
    (a * 1.0 + c * 10.0).sum().backward()
    close(x.grad, np.full(3, 32.0))


def test_set_materialize_grads_false_passes_none():
    received = []

    class Two(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            return x * 2.0, x * 3.0

        @staticmethod
        def backward(ctx, g1, g2):
            received.append((g1, g2))
            out = None
            if g1 is not None:
                out = g1 * 2.0
            if g2 is not None:
                out = g2 * 3.0 if out is None else out + g2 * 3.0
            return out

    x = nd.tensor(XV, requires_grad=True)
    a, b = Two.apply(x)
    assert a.grad_fn.materialize_grads is False
    b.sum().backward()
    assert received[0][0] is None
    close(received[0][1], np.ones(3))
    close(x.grad, np.full(3, 3.0))


def test_mark_non_differentiable():
    received = []

    class MaxWithMask(Function):
        @staticmethod
        def forward(ctx, x):
            m = nd.max(x)
            mask = (x == m).astype(x.dtype)
            idx = nd.argmax(x)
            ctx.mark_non_differentiable(mask)
            ctx.save_for_backward(mask)
            return m, mask, idx

        @staticmethod
        def backward(ctx, g_m, g_mask, g_idx):
            received.append((g_m, g_mask, g_idx))
            (mask,) = ctx.saved_tensors
            return g_m * mask

    x = nd.tensor(XV, requires_grad=True)
    m, mask, idx = MaxWithMask.apply(x)
    assert m.requires_grad and m.grad_fn.name() == "MaxWithMaskBackward"
    assert not mask.requires_grad and mask.grad_fn is None
    assert not idx.requires_grad and idx.grad_fn is None   # integer outputs: never differentiable
    assert int(idx.item()) == 2
    m.backward()
    close(x.grad, [0.0, 0.0, 1.0])
    _, g_mask, g_idx = received[0]
    close(g_mask, np.zeros(3))       # materialized zeros, as in PyTorch
    close(g_idx, np.zeros(()))


def test_input_returned_as_is_is_a_new_tensor_sharing_data():
    class Identity(Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 5.0

    x = nd.tensor(XV, requires_grad=True)
    y = Identity.apply(x)
    assert y is not x
    assert y.grad_fn.name() == "IdentityBackward" and x.is_leaf
    assert shares(y, x)
    assert y._vcounter is x._vcounter   # one version counter, as for a view
    y.sum().backward()
    close(x.grad, np.full(3, 5.0))


def test_a_function_used_twice_in_one_graph():
    x = nd.tensor(XV, requires_grad=True)
    s = Square.apply(x)
    out = (s + Square.apply(s)).sum()      # x^2 + x^4
    out.backward()
    close(x.grad, 2 * XV + 4 * XV ** 3)
    assert s.grad_fn is not None


def test_function_output_hooks_and_retain_grad():
    x = nd.tensor(XV, requires_grad=True)
    y = Exp.apply(x)
    y.retain_grad()
    y.register_hook(lambda g: g * 2.0)
    calls = []
    y.grad_fn.register_hook(lambda gi, go: calls.append((val(gi[0]).copy(), val(go[0]).copy())))
    y.sum().backward()
    close(y.grad, np.full(3, 2.0))
    close(x.grad, 2.0 * np.exp(XV))
    np.testing.assert_allclose(calls[0][0], 2.0 * np.exp(XV))
    np.testing.assert_allclose(calls[0][1], np.full(3, 2.0))


# ---------------------------------------------------------------------------- mark_dirty
class DoubleInPlace(Function):
    @staticmethod
    def forward(ctx, x):
        x.mul_(2.0)
        ctx.mark_dirty(x)
        return x

    @staticmethod
    def backward(ctx, g):
        return g * 2.0


def test_mark_dirty_rebases_history_and_bumps_the_version():
    x = nd.tensor(XV, requires_grad=True)
    a = x * 3.0
    v0 = a._version
    b = DoubleInPlace.apply(a)
    assert b is a                                   # keeps its identity
    assert a.grad_fn.name() == "DoubleInPlaceBackward"
    assert a._version == v0 + 2               # mul_ and mark_dirty, as in PyTorch
    close(a, 6 * XV)
    (a * a).sum().backward()                        # (6x)^2
    close(x.grad, 72 * XV)


def test_mark_dirty_with_saved_dirty_tensor():
    class AddOneInPlace(Function):
        @staticmethod
        def forward(ctx, x, y):
            x.add_(y)
            ctx.mark_dirty(x)
            ctx.save_for_backward(x, y)
            return x

        @staticmethod
        def backward(ctx, g):
            x, y = ctx.saved_tensors
            assert x.grad_fn is ctx   # the saved dirty input is this Function's output now
            return g * y, g * x

    x = nd.tensor(XV, requires_grad=True)
    y = nd.tensor([1.0, 2.0, 3.0], requires_grad=True)
    a = x * 1.0
    out = AddOneInPlace.apply(a, y)
    out.sum().backward()
    # the toy rule says d/da = y, d/dy = a (after the update): check it routes correctly
    close(x.grad, [1.0, 2.0, 3.0])
    close(y.grad, XV + [1.0, 2.0, 3.0])


def test_mark_dirty_on_a_leaf_that_requires_grad_is_an_error():
    x = nd.tensor(XV, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"DoubleInPlace: a leaf tensor that requires grad "
                                           r"\(shape \[3\]\) was modified in place"):
        DoubleInPlace.apply(x)


def test_mark_dirty_on_a_leaf_is_allowed_under_no_grad():
    x = nd.tensor(XV, requires_grad=True)
    with nd.no_grad():
        y = DoubleInPlace.apply(x)
    assert y is x and x.is_leaf and x.requires_grad
    close(x, 2 * XV)


def test_dirty_input_must_be_returned():
    class Forgets(Function):
        @staticmethod
        def forward(ctx, x):
            x.mul_(2.0)
            ctx.mark_dirty(x)
            return x * 1.0

        @staticmethod
        def backward(ctx, g):
            return g

    a = nd.tensor(XV, requires_grad=True) * 1.0
    with pytest.raises(RuntimeError, match="an input marked dirty .* must be returned"):
        Forgets.apply(a)


# ---------------------------------------------------------------------------- saved tensors
def test_saved_input_modified_in_place_is_detected():
    x = nd.tensor(XV, requires_grad=True)
    a = x * 1.0
    y = Square.apply(a)
    a.mul_(2.0)
    with pytest.raises(RuntimeError, match=re.escape(
            "one of the variables needed for gradient computation has been modified by an "
            "inplace operation: [float64 array of shape [3]], which is saved tensor 0 (input 0) "
            "saved by SquareBackward, is at version 1; expected version 0 instead.")):
        y.sum().backward()


def test_saved_output_modified_in_place_is_detected():
    x = nd.tensor(XV, requires_grad=True)
    y = Exp.apply(x)
    with nd.no_grad():
        y.add_(1.0)
    with pytest.raises(RuntimeError, match=re.escape(
            "which is saved tensor 0 (output 0) saved by ExpBackward, is at version 1; "
            "expected version 0 instead.")):
        y.sum().backward()


def test_backward_twice_frees_the_saved_tensors():
    x = nd.tensor(XV, requires_grad=True)
    y = Square.apply(x).sum()
    y.backward(retain_graph=True)
    y.backward()
    close(x.grad, 4 * XV)
    with pytest.raises(RuntimeError, match=re.escape(FREED_MSG)):
        y.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        _ = y.grad_fn.next_functions[0][0].saved_tensors


def test_saved_tensors_after_forward_are_the_saved_values():
    x = nd.tensor(XV, requires_grad=True)
    a = x * 1.0
    y = MulSin.apply(a, x)
    sa, sx = y.grad_fn.saved_tensors
    assert sa is a and sx is x
    e = Exp.apply(x)
    (se,) = e.grad_fn.saved_tensors     # a saved output: rebuilt around the same data
    assert se.grad_fn is e.grad_fn and shares(se, e)


def test_save_for_backward_rejects_non_tensors():
    class Bad(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x, 3.0)
            return x * 1.0

        @staticmethod
        def backward(ctx, g):
            return g

    with pytest.raises(TypeError, match="save_for_backward can only take tensors .* argument 1 "
                                        "is of type float"):
        Bad.apply(nd.tensor(XV, requires_grad=True))


def test_inference_tensors_cannot_be_saved():
    with nd.inference_mode():
        c = nd.tensor(XV)

    x = nd.tensor(XV, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"Inference tensors cannot be saved for backward "
                                           r"\(MulSin\)"):
        MulSin.apply(x, c)


# ---------------------------------------------------------------------------- wrong gradients
def test_wrong_number_of_gradients():
    Bad = returning(lambda g: g)
    x = nd.tensor(XV, requires_grad=True)
    with pytest.raises(RuntimeError, match=re.escape(
            "function BadBackward returned an incorrect number of gradients (expected 2, "
            "got 1)")):
        Bad.apply(x, 2.0).sum().backward()
    Bad3 = returning(lambda g: (g, None, g))
    with pytest.raises(RuntimeError, match=re.escape("(expected 2, got 3)")):
        Bad3.apply(x, 2.0).sum().backward()


def test_extra_trailing_nones_are_dropped():
    Ok = returning(lambda g: (g * 2.0, None, None, None))
    x = nd.tensor(XV, requires_grad=True)
    Ok.apply(x, 2.0).sum().backward()
    close(x.grad, np.full(3, 2.0))


def test_wrong_shape_gradient():
    Bad = returning(lambda g: nd.ones(4))
    x = nd.tensor(XV, requires_grad=True)
    with pytest.raises(RuntimeError, match=re.escape(
            "Function BadBackward returned an invalid gradient at index 0 - got [4] but "
            "expected shape compatible with [3]")):
        Bad.apply(x).sum().backward()


def test_wrong_shape_names_the_input_index():
    class Bad(Function):
        @staticmethod
        def forward(ctx, k, x, y):      # input 2 (y) is the second tensor: index 2, not 1
            return x * k + y

        @staticmethod
        def backward(ctx, g):
            return None, g, nd.ones(2)

    x = nd.tensor(XV, requires_grad=True)
    y = nd.tensor(XV, requires_grad=True)
    with pytest.raises(RuntimeError, match=re.escape(
            "Function BadBackward returned an invalid gradient at index 2 - got [2] but "
            "expected shape compatible with [3]")):
        Bad.apply(2.0, x, y).sum().backward()


def test_broadcastable_gradient_is_summed_to_the_input_shape():
    Ok = returning(lambda g: nd.ones((4, 3)) * g)
    x = nd.tensor(XV, requires_grad=True)
    Ok.apply(x).sum().backward()
    close(x.grad, np.full(3, 4.0))


@pytest.mark.parametrize("dtype", ["int64", "bool"])
def test_integer_or_bool_gradient_is_an_error(dtype):
    Bad = returning(lambda g: nd.ones(3).astype(dtype))
    x = nd.tensor(XV, requires_grad=True)
    with pytest.raises(RuntimeError, match=re.escape(
            "Function BadBackward returned an invalid gradient at index 0 - expected a "
            f"gradient of dtype float64 (or another floating dtype) for an input of dtype "
            f"float64, but got dtype {dtype}")):
        Bad.apply(x).sum().backward()


def test_complex_gradient_for_a_real_input_is_an_error():
    Bad = returning(lambda g: g * (1 + 1j))
    x = nd.tensor(XV, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"invalid gradient at index 0 - .* but got dtype "
                                           r"complex128"):
        Bad.apply(x).sum().backward()


def test_other_floating_dtype_is_cast_to_the_input_dtype():
    Ok = returning(lambda g: (g * 3.0).astype("float32"))
    x = nd.tensor(XV, requires_grad=True)
    Ok.apply(x).sum().backward()
    assert x.grad.dtype == nd.float64
    close(x.grad, np.full(3, 3.0))


def test_gradient_for_a_non_tensor_input_is_an_error():
    Bad = returning(lambda g: (g, g))
    x = nd.tensor(XV, requires_grad=True)
    with pytest.raises(RuntimeError, match=re.escape(
            "function BadBackward returned a gradient different than None at index 1, but "
            "the corresponding forward input is not a Tensor (it is a float)")):
        Bad.apply(x, 2.0).sum().backward()


def test_gradient_for_a_tensor_input_without_requires_grad_is_ignored():
    # PyTorch's contract: "If an input is not a Tensor or is a Tensor not requiring grads,
    # you can just pass None" -- a value there is dropped, not an error.
    Ok = returning(lambda g: (g * 2.0, g * 7.0))
    x = nd.tensor(XV, requires_grad=True)
    c = nd.tensor(XV)
    Ok.apply(x, c).sum().backward()
    close(x.grad, np.full(3, 2.0))
    assert c.grad is None


def test_non_tensor_gradient_is_an_error():
    Bad = returning(lambda g: 3.0)
    x = nd.tensor(XV, requires_grad=True)
    with pytest.raises(RuntimeError, match=re.escape(
            "function BadBackward returned a float as the gradient at index 0; expected a "
            "Tensor or None")):
        Bad.apply(x).sum().backward()


# ---------------------------------------------------------------------------- setup_context
class MulConst(Function):
    @staticmethod
    def forward(x, k=2.0):
        return x * k

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, k = inputs
        ctx.k = k
        ctx.save_for_backward(x)
        ctx.seen = (len(inputs), nd.is_grad_enabled())

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * ctx.k, None


def test_setup_context_form():
    x = nd.tensor(XV, requires_grad=True)
    y = MulConst.apply(x)                 # the default k=2.0 is bound, as in PyTorch
    assert y.grad_fn.seen == (2, False)
    assert y.grad_fn.saved_tensors[0] is x
    y.sum().backward()
    close(x.grad, np.full(3, 2.0))
    x.grad = None
    MulConst.apply(x, k=5.0).sum().backward()
    close(x.grad, np.full(3, 5.0))
    assert gradgradcheck(lambda t: MulConst.apply(t, 3.0) ** 2, (x,))


def test_vjp_is_an_alias_of_backward():
    class Cube(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 3

        @staticmethod
        def vjp(ctx, g):
            (x,) = ctx.saved_tensors
            return 3 * x ** 2 * g

    x = nd.tensor(XV, requires_grad=True)
    Cube.apply(x).sum().backward()
    close(x.grad, 3 * XV ** 2)


def test_missing_backward_and_instance_call_are_errors():
    class NoBackward(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1.0

    x = nd.tensor(XV, requires_grad=True)
    with pytest.raises(NotImplementedError, match="implement either the backward or vjp"):
        NoBackward.apply(x).sum().backward()
    with pytest.raises(RuntimeError, match=r"call it through NoBackward.apply\(\.\.\.\)"):
        NoBackward()(x)


def test_function_module_alias():
    from ndgrad.autograd.function import Function as F2
    from ndgrad.autograd.function import once_differentiable as od
    assert F2 is Function and od is once_differentiable


# ---------------------------------------------------------------------------- once_differentiable
class OnceCube(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 3

    @staticmethod
    @once_differentiable
    def backward(ctx, g):
        ctx.grad_mode_in_backward = nd.is_grad_enabled()
        (x,) = ctx.saved_tensors
        return 3 * x ** 2 * g


def test_once_differentiable_first_order_is_correct():
    x = nd.tensor(XV, requires_grad=True)
    y = OnceCube.apply(x)
    y.sum().backward()
    close(x.grad, 3 * XV ** 2)
    assert y.grad_fn.grad_mode_in_backward is False


def test_once_differentiable_refuses_a_second_derivative():
    x = nd.tensor(XV, requires_grad=True)
    y = OnceCube.apply(x)
    (g,) = grad(y.sum(), x, create_graph=True)
    close(g, 3 * XV ** 2)
    assert y.grad_fn.grad_mode_in_backward is False   # backward itself ran without recording
    assert g.grad_fn.name() == "DelayedError"
    msg = re.escape("trying to differentiate twice a function that was marked with "
                    "@once_differentiable (OnceCubeBackward)")
    with pytest.raises(RuntimeError, match=msg):
        grad(g.sum(), x)
    (g,) = grad(OnceCube.apply(x).sum(), x, create_graph=True)
    with pytest.raises(RuntimeError, match=msg):
        g.sum().backward()


def _once_product(n):
    """A once_differentiable Function of ``n`` inputs: their elementwise product, whose
    derivative in ``x_k`` is the product of the others."""
    class OnceProduct(Function):
        @staticmethod
        def forward(ctx, *xs):
            ctx.save_for_backward(*xs)
            out = xs[0]
            for x in xs[1:]:
                out = out * x
            return out

        @staticmethod
        @once_differentiable
        def backward(ctx, g):
            xs = ctx.saved_tensors
            grads = []
            for k in range(len(xs)):
                p = g
                for j, x in enumerate(xs):
                    if j != k:
                        p = p * x
                grads.append(p)
            return tuple(grads)
    return OnceProduct


_ONCE_MSG = re.escape("trying to differentiate twice a function that was marked with "
                      "@once_differentiable (OnceProductBackward)")


@pytest.mark.parametrize("n", [1, 2, 3])
def test_once_differentiable_of_several_inputs_refuses_a_second_derivative(n):
    """gradgradcheck with two inputs failed with AttributeError ('DelayedError' object has no
    attribute 'out_meta'): the DelayedError node was made by hand, without what the recorder
    gives every node of several outputs."""
    rng = np.random.default_rng(7)
    values = [rng.uniform(0.5, 1.5, 3) for _ in range(n)]
    fn = _once_product(n)
    xs = [nd.tensor(v, requires_grad=True) for v in values]
    assert gradcheck(fn.apply, xs)  # first order against finite differences
    with pytest.raises(RuntimeError, match=_ONCE_MSG):
        gradgradcheck(fn.apply, xs)
    grads = grad(fn.apply(*xs).sum(), xs, create_graph=True)
    for k, g in enumerate(grads):  # d/dx_k prod = prod of the others
        close(g, np.prod([v for j, v in enumerate(values) if j != k], axis=0))
        assert g.grad_fn.name() == "DelayedError"
        assert g.grad_fn.nout == n
    assert grads[0].grad_fn.out_meta == tuple(((3,), np.dtype("float64")) for _ in range(n))
    with pytest.raises(RuntimeError, match=_ONCE_MSG):  # one output's gradient only
        grad(grads[0].sum(), xs)
    with pytest.raises(RuntimeError, match=_ONCE_MSG):
        grad(sum(g.sum() for g in grads), xs)


def test_once_differentiable_keeps_the_wrapped_function_metadata():
    assert OnceCube.backward.__name__ == "backward"
    assert OnceCube.backward._once_differentiable is True


def test_mark_dirty_of_a_non_input_warns():
    class Odd(Function):
        @staticmethod
        def forward(ctx, x):
            y = x * 2.0
            ctx.mark_dirty(y)
            return y

        @staticmethod
        def backward(ctx, g):
            return g * 2.0

    x = nd.tensor(XV, requires_grad=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        y = Odd.apply(x)
    assert any("only input tensors should be given to ctx.mark_dirty()" in str(w.message)
               for w in caught)
    y.sum().backward()
    close(x.grad, np.full(3, 2.0))


# ------------------------------------------------------------------------ no level's inputs
class HostExp(Function):
    """exp computed on the host: ``forward`` makes a fresh tensor (not an op on its input)."""

    @staticmethod
    def forward(ctx, x):
        y = nd.tensor(np.exp(x.detach().cpu().numpy()))
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g * y


def test_a_function_of_captured_tensors_inside_func_grad_runs_below_the_level():
    # Note [Functions under transforms]: no input is the level's, so the forward runs below
    # it and its fresh output is a plain tensor with the Function's node (before, it was a
    # value of the level carrying that node: the dependence of grad(f)(x) on w was lost and
    # the level's pass ran the Function's backward)
    from ndgrad.func import grad as func_grad, jacrev
    W = 0.7
    w = nd.tensor(W, requires_grad=True)
    x = nd.tensor([1.0, 2.0])

    def f(v):
        e = HostExp.apply(w)
        assert type(e) is nd.Tensor and e.requires_grad and type(e.grad_fn).__name__ == \
            "HostExpBackward"
        return nd.sum(e * v ** 2)

    g = func_grad(f)(x)
    close(g, 2 * np.exp(W) * val(x))
    (dw,) = grad(nd.sum(g), w)          # d/dw sum(2 e^w x) = 2 e^w sum(x)
    close(dw, 2 * np.exp(W) * 3.0)
    J = jacrev(lambda v: HostExp.apply(w) * v ** 2)(x)
    close(J, np.diag(2 * np.exp(W) * val(x)))
    (dw,) = grad(nd.sum(J), w)
    close(dw, 2 * np.exp(W) * 3.0)
    assert w.grad is None   # nothing reached w's .grad from the level's passes


# ------------------------------------------------- a transform's value read by closure
# Note [A level's values below it] (core/levels.py): a Function runs one level below a
# transform, so a value of that level its forward reads from a closure cannot be followed
# there. That was "internal error ... please report"; it is a user error naming the
# Function, raised at the operation that met the value (its traceback shows the line).
def _square_times(read_captured, setup=False, vmap_rule=False):
    """``c * x**2`` as a Function of ``c`` and ``x``: with ``read_captured``, ``x`` is read
    from ``holder`` (set by the caller inside the transform) instead of the inputs; with
    ``vmap_rule``, the class sets generate_vmap_rule."""
    holder = {}

    def forward_of(c, x):
        if read_captured:
            x = holder["x"]  # the transform's value, by closure
        return c * x * x

    if setup:
        class SquareTimes(Function):
            @staticmethod
            def forward(c, x):
                return c * x * x

            @staticmethod
            def setup_context(ctx, inputs, output):
                c, x = inputs
                if read_captured:
                    ctx.scale = holder["x"] * 1.0  # reads the closure's value
                ctx.save_for_backward(c, x)
                ctx.save_for_forward(c, x)

            @staticmethod
            def backward(ctx, g):
                c, x = ctx.saved_tensors
                return g * x * x, 2.0 * g * c * x

            @staticmethod
            def jvp(ctx, tc, tx):
                c, x = ctx.saved_tensors
                return _square_times_jvp(c, x, tc, tx)
    else:
        class SquareTimes(Function):
            @staticmethod
            def forward(ctx, c, x):
                ctx.save_for_backward(c, x)
                ctx.save_for_forward(c, x)
                return forward_of(c, x)

            @staticmethod
            def backward(ctx, g):
                c, x = ctx.saved_tensors
                return g * x * x, 2.0 * g * c * x

            @staticmethod
            def jvp(ctx, tc, tx):
                c, x = ctx.saved_tensors
                return _square_times_jvp(c, x, tc, tx)
    SquareTimes.generate_vmap_rule = vmap_rule
    return SquareTimes, holder


def _square_times_jvp(c, x, tc, tx):
    """d(c x^2) = dc x^2 + 2 c x dx (None: no tangent)."""
    out = 0.0
    if tc is not None:
        out = out + tc * x * x
    if tx is not None:
        out = out + 2.0 * c * x * tx
    return out


@pytest.mark.filterwarnings("ignore:vmap. the custom Function")  # (its loop: by design)
@pytest.mark.parametrize("setup", [False, True])
@pytest.mark.parametrize("transform", ["grad", "vmap", "jacrev", "vmap(grad)"])
def test_a_function_reading_a_transform_value_by_closure_is_a_user_error(transform, setup):
    import traceback
    from ndgrad import func
    fn, holder = _square_times(True, setup)
    where = "setup_context" if setup else "forward"

    def g(x):
        holder["x"] = x
        return fn.apply(nd.tensor(2.0), x * 1.0).sum()

    run = {"grad": func.grad(g), "vmap": func.vmap(g), "jacrev": func.jacrev(g),
           "vmap(grad)": func.vmap(func.grad(g))}[transform]
    kind = "vmap" if transform == "vmap" else "grad"
    with pytest.raises(RuntimeError, match=(
            rf"^SquareTimes\.{where} used a tensor of the transform level <{kind} level \d> "
            r"\(a value inside a function given to ndgrad\.func\.grad.*\) that it did not "
            r"receive as an input\..*its derivative or its batch would be lost\. Instead, pass "
            r"the tensor to SquareTimes\.apply as an input")) as info:
        run(nd.tensor(XV.copy()))
    assert "report" not in str(info.value) and "internal" not in str(info.value)
    if setup:
        assert "setup_context then finds it among its inputs" in str(info.value)
    # raised at the operation that met the value: the traceback holds the user's line
    frames = [f.name for f in traceback.extract_tb(info.value.__traceback__)]
    assert ("setup_context" if setup else "forward_of") in frames


@pytest.mark.filterwarnings("ignore:vmap. the custom Function")  # (its loop: by design)
@pytest.mark.parametrize("setup", [False, True])
def test_the_same_function_given_the_tensor_as_an_input_has_the_closed_form(setup):
    from ndgrad import func
    fn, _ = _square_times(False, setup)
    c = 2.0

    def g(x):
        return fn.apply(nd.tensor(c), x).sum()    # sum(c x^2): gradient 2 c x, Hessian 2 c I

    close(func.grad(g)(nd.tensor(XV.copy())), 2 * c * XV)
    close(func.vmap(func.grad(g))(nd.tensor(np.stack([XV, -XV]))), 2 * c * np.stack([XV, -XV]))
    close(func.jacrev(func.grad(g))(nd.tensor(XV.copy())), 2 * c * np.eye(3))
    close(func.vmap(lambda x: fn.apply(nd.tensor(c), x))(nd.tensor(XV.copy())), c * XV ** 2)


# Note [Data levels below a Function] (core/refusing.py): the forward-mode levels keep
# their data on plain tensors, which the hot path does not look at while the level is
# hidden, so a forward reading such a value by closure dropped its tangent (silently wrong);
# it is the same error now. Each forward-mode transform and data level, with the closed
# form of sum(c x^2), c = 2, for the Function given x as an input.
def _forward_transforms():
    import ndgrad.forward_ad as fwAD
    from ndgrad import func
    ones, zeros = nd.ones(3), nd.zeros(3)

    def dual_level(g, x):
        with fwAD.dual_level():
            return fwAD.unpack_dual(g(fwAD.make_dual(x, ones))).tangent

    c, x, n = 2.0, XV, 3
    # name: (run(scalar g, vector g, x), its closed form, the level the error names)
    return {
        "jvp": (lambda s, v, x: func.jvp(s, (x,), (ones,))[1], 2 * c * x.sum(), "dual"),
        "dual_level": (lambda s, v, x: dual_level(s, x), 2 * c * x.sum(), "dual"),
        "jacfwd": (lambda s, v, x: func.jacfwd(v)(x), np.diag(2 * c * x), "dual"),
        "hessian": (lambda s, v, x: func.hessian(s)(x), 2 * c * np.eye(n), "grad"),
        "jvp(grad)": (lambda s, v, x: func.jvp(func.grad(s), (x,), (ones,))[1],
                      2 * c * np.ones(n), "grad"),
        "vmap(jvp)": (lambda s, v, x: func.vmap(lambda r: func.jvp(s, (r,), (ones,))[1])(
            nd.stack([x, -x])), 2 * c * np.array([x.sum(), -x.sum()]), "dual"),
        "jacfwd(jacfwd)": (lambda s, v, x: func.jacfwd(func.jacfwd(s))(x), 2 * c * np.eye(n),
                           "dual"),
        "jet": (lambda s, v, x: func.jet(s, (x,), ([ones, zeros],))[1][1], 2 * c * n, "jet"),
        "derivatives": (lambda s, v, x: func.derivatives(s, x, 2)[2], 2 * c * n, "jet"),
        "hessian_diag": (lambda s, v, x: func.hessian_diag(s)(x), 2 * c * np.ones(n), "jet"),
        "laplacian": (lambda s, v, x: func.laplacian(s)(x), 2 * c * n, "laplacian"),
        "laplacian(hessian)": (lambda s, v, x: func.laplacian(s, method="hessian")(x),
                               2 * c * n, "grad"),
        "divergence": (lambda s, v, x: func.divergence(v)(x), 2 * c * x.sum(), "dual"),
        "jacobian_sparsity": (lambda s, v, x: func.jacobian_sparsity(v, x).toarray(),
                              np.ones((n, n), bool), "sparsity"),
    }


FORWARD_TRANSFORMS = list(_forward_transforms())


@pytest.mark.filterwarnings("ignore:vmap. the custom Function")  # (its loop: by design)
@pytest.mark.filterwarnings("ignore:jacobian_sparsity. the custom Function")
@pytest.mark.parametrize("setup", [False, True])
@pytest.mark.parametrize("transform", FORWARD_TRANSFORMS)
def test_a_function_reading_a_forward_mode_value_by_closure_is_a_user_error(transform, setup):
    import traceback
    fn, holder = _square_times(True, setup)
    where = "setup_context" if setup else "forward"
    run, _, kind = _forward_transforms()[transform]

    def g(x):
        holder["x"] = x
        return fn.apply(nd.tensor(2.0), x * 1.0)

    with pytest.raises(RuntimeError, match=(
            rf"^SquareTimes\.{where} used a tensor of the transform level <{kind} level \d> "
            r"\(a value inside a function given to ndgrad\.func\.grad, jvp, .*\) that it did "
            r"not receive as an input\..*Instead, pass the tensor to SquareTimes\.apply as an "
            r"input")) as info:
        run(lambda x: g(x).sum(), g, nd.tensor(XV.copy()))
    frames = [f.name for f in traceback.extract_tb(info.value.__traceback__)]
    assert ("setup_context" if setup else "forward_of") in frames


@pytest.mark.filterwarnings("ignore:vmap. the custom Function")  # (its loop: by design)
@pytest.mark.filterwarnings("ignore:jacobian_sparsity. the custom Function")
@pytest.mark.parametrize("transform", [t for t in FORWARD_TRANSFORMS
                                       if _forward_transforms()[t][2] != "grad"])
def test_a_function_returning_a_forward_mode_value_it_read_by_closure_is_a_user_error(
        transform):
    # returned as is, the captured value meets no operation inside forward: the level then
    # gave it the Function's tangent, replacing its own (jvp of x + F(x) with F returning x
    # and jvp 0 was 0, not 2)
    run, _, kind = _forward_transforms()[transform]
    holder = {}

    class Returns(Function):
        @staticmethod
        def forward(ctx, c):
            return holder["x"]

        @staticmethod
        def jvp(ctx, tc):
            return tc * 0.0

    def g(x):
        holder["x"] = x
        return Returns.apply(x * 1.0) + x

    with pytest.raises(RuntimeError, match=(
            rf"^Returns\.forward used a tensor of the transform level <{kind} level \d> .*"
            r"Instead, pass the tensor to Returns\.apply as an input")):
        run(lambda x: g(x).sum(), g, nd.tensor(XV.copy()))


@pytest.mark.filterwarnings("ignore:vmap. the custom Function")  # (its loop: by design)
@pytest.mark.filterwarnings("ignore:jacobian_sparsity. the custom Function")
@pytest.mark.parametrize("setup", [False, True])
@pytest.mark.parametrize("transform", FORWARD_TRANSFORMS)
def test_a_function_given_the_tensor_as_an_input_has_the_closed_form_in_forward_mode(
        transform, setup):
    # (hessian_diag is vmap of a jet, a second derivative of the Function inside vmap: it
    # needs the batched rule)
    fn, _ = _square_times(False, setup, vmap_rule=transform == "hessian_diag")
    run, expected, _ = _forward_transforms()[transform]

    def g(x):
        return fn.apply(nd.tensor(2.0), x)

    got = run(lambda x: g(x).sum(), g, nd.tensor(XV.copy()))
    if np.asarray(expected).dtype == bool:
        assert (np.asarray(got) == expected).all()
    else:
        close(got, expected)


def test_the_reported_jvp_of_a_function_reading_its_argument_by_closure():
    # F(c) = c * x with x read by closure, g(x) = F.apply(x * 1) = x^2: its jvp at 3 was 3
    # (the captured x's tangent dropped), not 6
    from ndgrad import func

    def g(x):
        class F(Function):
            @staticmethod
            def forward(ctx, c):
                return c * x

            @staticmethod
            def backward(ctx, ct):
                return ct * x

            @staticmethod
            def jvp(ctx, t):
                return t * x
        return F.apply(x * 1)

    with pytest.raises(RuntimeError, match=r"^F\.forward used a tensor of the transform level "
                                           r"<dual level 0>"):
        func.jvp(g, (nd.tensor(3.0),), (nd.tensor(1.0),))

    class Square(Function):  # x passed as an input: d(x^2) = 2 x dx
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_forward(x)
            return x * x

        @staticmethod
        def jvp(ctx, t):
            (x,) = ctx.saved_tensors
            return 2.0 * x * t

    close(func.jvp(lambda x: Square.apply(x * 1), (nd.tensor(3.0),), (nd.tensor(1.0),))[1],
          6.0)


@pytest.mark.filterwarnings("ignore:vmap. the custom Function")  # (its loop: by design)
def test_a_forward_may_read_views_of_its_inputs_and_what_an_outer_function_received():
    # what the Function received, a view of it, and (inside a Function's forward) a Function
    # reading the outer one's input by closure, are its own values: no error, and the
    # derivative is the closed form. f(x) = sum(x[1:] * x[:-1]) + sum(x^3)
    from ndgrad import func

    class Inner(Function):  # x^3, its own input; reads the outer's input only for its value
        @staticmethod
        def forward(ctx, u):
            ctx.save_for_forward(u)
            return u * OUTER["x"] * OUTER["x"]

        @staticmethod
        def jvp(ctx, t):
            (u,) = ctx.saved_tensors
            return 3.0 * u * u * t

    OUTER = {}

    class Outer(Function):
        @staticmethod
        def forward(ctx, x):
            OUTER["x"] = x
            ctx.save_for_forward(x)
            head, tail = x[:-1], x[1:]      # views of the input
            return (tail * head).sum() + Inner.apply(x).sum()

        @staticmethod
        def jvp(ctx, t):
            (x,) = ctx.saved_tensors
            return (t[1:] * x[:-1] + x[1:] * t[:-1]).sum() + (3.0 * x * x * t).sum()

    x = XV.copy()
    grad_f = 3 * x ** 2 + np.concatenate([x[1:], [0.0]]) + np.concatenate([[0.0], x[:-1]])
    for transform in ("jvp", "jacfwd", "jet"):
        if transform == "jvp":
            got = func.jvp(Outer.apply, (nd.tensor(x),), (nd.ones(3),))[1]
            close(got, grad_f.sum())
        elif transform == "jacfwd":
            close(func.jacfwd(Outer.apply)(nd.tensor(x)), grad_f)
        else:
            got = func.jet(Outer.apply, (nd.tensor(x),), ([nd.ones(3)],))[1][0]
            close(got, grad_f.sum())


def test_a_custom_vjp_function_reading_a_transform_value_names_itself():
    # one of ndgrad's Functions names what the user called (its vmap_loop), not its class
    from ndgrad import func

    def g(x):
        @func.custom_vjp
        def scaled(c):
            return c * x   # x by closure

        scaled.defvjp(lambda c: (c * x, None), lambda res, ct: (ct * 2.0,))
        return scaled(x * 1.0).sum()

    with pytest.raises(RuntimeError, match=(
            r"^the custom_vjp function scaled used a tensor of the transform level <grad "
            r"level 0> .*Instead, pass the tensor to it as an argument\.$")):
        func.grad(g)(nd.tensor(XV.copy()))


@pytest.mark.filterwarnings("ignore:vmap. the custom Function")  # (its loop: by design)
def test_a_rule_run_per_element_reading_a_transform_value_names_the_function():
    # vmap runs a Function's backward once per batch element, one level down
    # (vmap._per_element): the message named no Function there, only the kinds of code
    from ndgrad import func

    def g(x):
        class Doubled(Function):
            @staticmethod
            def forward(ctx, c):
                return c * 2.0

            @staticmethod
            def backward(ctx, ct):
                return ct * x   # x by closure

        return Doubled.apply(x)

    with pytest.raises(RuntimeError, match=(
            r"^Doubled\.backward used a tensor of the transform level <vmap level 0> .*Instead, "
            r"pass the tensor to Doubled\.apply as an input, and save it for backward with "
            r"ctx\.save_for_backward")):
        func.vmap(func.grad(g))(nd.tensor(XV.copy()))


# ---------------------------------------------------------------------------- one recorder
# Note [One recorder] in core/graph.py: a Function's node gets its stamps (sequence number,
# anomaly mode's trace, output count) from graph.record_node, as once_differentiable's does.
def _stamping_sites():
    """``file:line`` of every assignment to a node's ``seq`` and every call asking anomaly
    mode for a trace, in the package."""
    import ast
    from pathlib import Path
    root = Path(nd.__file__).parent
    found = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            targets = node.targets if isinstance(node, ast.Assign) else ()
            stamps = any(isinstance(t, ast.Attribute) and t.attr == "seq" for t in targets)
            traces = isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                node.func.attr == "forward_trace"
            if stamps or traces:
                found.append(f"{path.relative_to(root).as_posix()}:{node.lineno}")
    return found


def test_only_the_recorder_numbers_nodes_and_asks_for_traces():
    sites = _stamping_sites()
    assert sites and all(s.startswith("core/graph.py:") for s in sites), sites


class _HookedExp(Exp):
    """Exp whose forward also registers a post hook on its own node (its ctx)."""

    calls = []

    @staticmethod
    def forward(ctx, x):
        ctx.register_hook(lambda gin, gout: _HookedExp.calls.append(val(gin[0]).copy()))
        return Exp.forward(ctx, x)


@pytest.mark.parametrize("anomaly", [False, True])
def test_a_function_node_gets_the_recorders_stamps_and_keeps_its_hooks(anomaly):
    # the hook registered in forward ran also in anomaly mode, where the recorder's trace was
    # given to the node (it replaced the node's hooks before, and the hook never ran)
    _HookedExp.calls.clear()
    x = nd.tensor(XV, requires_grad=True)
    with nd.autograd.set_detect_anomaly(anomaly):
        a = x * 2.0
        y = _HookedExp.apply(a)
        z = y.sin()
    node = y.grad_fn
    assert a.grad_fn.seq < node.seq < z.grad_fn.seq
    assert node.nout == 1
    assert (node.trace is not None) == anomaly
    assert (z.grad_fn.trace is not None) == anomaly
    z.sum().backward()
    g = np.cos(np.exp(2 * XV)) * np.exp(2 * XV)  # the gradient reaching the node's input
    assert len(_HookedExp.calls) == 1
    close(_HookedExp.calls[0], g)
    close(x.grad, 2 * g)


@pytest.mark.parametrize("anomaly", [False, True])
def test_a_function_node_at_a_grad_level_gets_the_recorders_stamps(anomaly):
    from ndgrad import func
    seen = {}

    def f(x):
        a = x * 2.0
        y = Exp.apply(a)
        z = y.sin()
        seen.update(a=a.grad_fn.seq, node=y.grad_fn, z=z.grad_fn.seq)
        return z.sum()

    with nd.autograd.set_detect_anomaly(anomaly):
        g = func.grad(f)(nd.tensor(XV))
    node = seen["node"]
    assert type(node).__name__ == "ExpBackward" and node.nout == 1
    assert seen["a"] < node.seq < seen["z"]
    assert (node.trace is not None) == anomaly
    close(g, 2 * np.cos(np.exp(2 * XV)) * np.exp(2 * XV))


def test_grad_of_a_jvp_through_a_functions_jvp_rule():
    """Reverse over forward through a custom Function: grad of jvp(Cube) in x is the
    derivative of its jvp rule 3 x^2 t, 6 x t. The rule reads the saved input as the grad
    level's value, so its computation is recorded there (the gradient was zero: the rule
    read the value one level down)."""
    from support import Cube
    x0, t0 = np.array([1.0, -2.0, 0.5]), np.array([1.0, 0.5, -3.0])
    x, t = nd.tensor(x0), nd.tensor(t0)
    g = nd.func.grad(lambda x: nd.func.jvp(Cube.apply, (x,), (t,))[1].sum())(x)
    close(g, 6 * x0 * t0, atol=1e-14)
    # and forward over reverse, for the same Function, as before
    h = nd.func.jvp(nd.func.grad(lambda x: Cube.apply(x).sum()), (x,), (t,))[1]
    close(h, 6 * x0 * t0, atol=1e-14)

    class Exp(nd.autograd.Function):  # (a jvp rule that reads the saved output)
        @staticmethod
        def forward(ctx, x):
            y = nd.exp(x)
            ctx.save_for_backward(y)
            ctx.save_for_forward(y)
            return y

        @staticmethod
        def backward(ctx, g):
            return g * ctx.saved_tensors[0]

        @staticmethod
        def jvp(ctx, t):
            return ctx.saved_tensors[0] * t

    g = nd.func.grad(lambda x: nd.func.jvp(Exp.apply, (x,), (t,))[1].sum())(x)
    close(g, np.exp(x0) * t0, atol=1e-14)
