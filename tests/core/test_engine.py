"""The reverse-mode engine: backward / grad semantics (issue "Reverse mode").

References are closed forms or NumPy computations written independently of ndgrad.
"""

from __future__ import annotations

import gc
import math
import weakref

import numpy as np
import pytest

import ndgrad as nd
from ndgrad.autograd import backward, grad
from support import close, val


XV = np.array([0.3, -1.2, 0.8])


# ---------------------------------------------------------------------------- implicit gradient
def test_implicit_gradient_for_a_scalar_output():
    x = nd.tensor(XV, requires_grad=True)
    nd.tanh(x).sum().backward()
    close(x.grad, 1 - np.tanh(XV) ** 2)


@pytest.mark.parametrize("shape", [(1,), (1, 1)])
def test_implicit_gradient_for_one_element_outputs(shape):
    x = nd.tensor(np.full(shape, 0.7), requires_grad=True)
    nd.exp(x).backward()
    close(x.grad, np.full(shape, np.exp(0.7)))


def test_implicit_gradient_is_refused_for_non_scalar_outputs():
    x = nd.tensor(XV, requires_grad=True)
    y = x * 2
    with pytest.raises(RuntimeError,
                       match=r"grad can be implicitly created only for scalar outputs.*"
                             r"shape \[3\]"):
        y.backward()
    with pytest.raises(RuntimeError, match="implicitly created only for scalar outputs"):
        grad(y, x)
    assert x.grad is None


def test_implicit_gradient_is_refused_for_complex_outputs():
    z = nd.tensor(1 + 2j, requires_grad=True)
    with pytest.raises(RuntimeError, match="only for real scalar outputs.*complex128"):
        (z * z).backward()


def test_explicit_gradient_gives_the_vector_jacobian_product():
    M = np.array([[1.0, 2.0, 0.5], [-1.0, 0.0, 3.0]])
    v = np.array([2.0, -3.0])
    x = nd.tensor(XV, requires_grad=True)
    y = nd.tensor(M) @ nd.exp(x)
    y.backward(nd.tensor(v))
    close(x.grad, (v @ M) * np.exp(XV))
    # a NumPy array is accepted as the gradient as well
    x2 = nd.tensor(XV, requires_grad=True)
    (nd.tensor(M) @ nd.exp(x2)).backward(v)
    close(x2.grad, (v @ M) * np.exp(XV))


# ------------------------------------------------------------------------ grad_outputs validation
def test_grad_outputs_shape_mismatch_names_the_index_and_both_shapes():
    x = nd.tensor(XV, requires_grad=True)
    y1 = x * 2
    y2 = (x * x).sum()
    with pytest.raises(RuntimeError,
                       match=r"Mismatch in shape: grad_output\[0\] has a shape of \[2\] and "
                             r"output\[0\] has a shape of \[3\]"):
        y1.backward(nd.ones(2))
    with pytest.raises(RuntimeError,
                       match=r"grad_output\[1\] has a shape of \[3\] and output\[1\] has a shape "
                             r"of \[\]"):
        grad([y1, y2], [x], grad_outputs=[nd.ones(3), nd.ones(3)])
    with pytest.raises(RuntimeError, match=r"grad_output\[1\].*\[1\].*output\[1\].*\[\]"):
        backward([y1, y2], [nd.ones(3), nd.ones(1)])


def test_grad_outputs_dtype_is_validated():
    x = nd.tensor(XV, requires_grad=True)
    y = x * 2
    with pytest.raises(RuntimeError,
                       match=r"Mismatch in dtype: grad_output\[0\] has a dtype of complex128 and "
                             r"output\[0\] has a dtype of float64"):
        y.backward(nd.tensor([1j, 1j, 1j]))
    with pytest.raises(RuntimeError, match=r"grad_output\[0\] has dtype int64.*floating point"):
        y.backward(nd.tensor([1, 1, 1]))


def test_grad_outputs_of_another_floating_dtype_are_cast():
    x = nd.tensor(XV, requires_grad=True)
    (g,) = grad(x * 2, x, grad_outputs=nd.ones(3, dtype=nd.float32))
    assert g.dtype == nd.float64
    close(g, np.full(3, 2.0))


def test_grad_outputs_count_must_match():
    x = nd.tensor(XV, requires_grad=True)
    y = x.sum()
    with pytest.raises(RuntimeError, match=r"grad\(\): got 2 gradients for 1 outputs"):
        grad(y, x, grad_outputs=[nd.tensor(1.0), nd.tensor(1.0)])
    with pytest.raises(RuntimeError, match="got 2 gradients for 1 tensors"):
        backward([y], [nd.tensor(1.0), nd.tensor(1.0)])


def test_differentiating_something_that_does_not_require_grad_is_an_error():
    c = nd.tensor(XV)
    with pytest.raises(RuntimeError, match="element 0 of tensors does not require grad"):
        c.sum().backward()
    x = nd.tensor(XV, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"inputs\[0\]\) does not require grad"):
        grad((x * c).sum(), c)
    with nd.no_grad():
        y = (x * 2).sum()
    with pytest.raises(RuntimeError, match="does not require grad.*no_grad"):
        y.backward()


# ---------------------------------------------------------------------------- retain_graph
def test_second_backward_through_a_freed_graph_fails_with_the_hint():
    x = nd.tensor(XV, requires_grad=True)
    y = nd.exp(x).sum()
    y.backward()
    with pytest.raises(RuntimeError,
                       match="backward through the graph a second time.*retain_graph=True"):
        y.backward()
    close(x.grad, np.exp(XV))  # the failed call accumulated nothing


def test_second_grad_through_a_freed_graph_fails_with_the_hint():
    x = nd.tensor(XV, requires_grad=True)
    y = (x * nd.tanh(x)).sum()
    grad(y, x)
    with pytest.raises(RuntimeError, match="retain_graph=True"):
        grad(y, x)


def test_retain_graph_allows_a_second_backward():
    x = nd.tensor(XV, requires_grad=True)
    y = nd.exp(x).sum()
    y.backward(retain_graph=True)
    y.backward()
    close(x.grad, 2 * np.exp(XV))
    with pytest.raises(RuntimeError, match="retain_graph=True"):
        y.backward()


def test_retain_graph_defaults_to_create_graph():
    x = nd.tensor(XV, requires_grad=True)
    y = nd.exp(x).sum()
    (g1,) = grad(y, x, create_graph=True)  # retains the graph
    (g2,) = grad(y, x)
    close(g1, np.exp(XV))
    close(g2, np.exp(XV))
    with pytest.raises(RuntimeError, match="retain_graph=True"):
        grad(y, x)  # the previous call freed it
    z = nd.exp(x).sum()
    z.backward(create_graph=True, inputs=[x])
    z.backward(inputs=[x])  # still retained by the create_graph call
    close(x.grad, 2 * np.exp(XV))


def test_saved_arrays_are_released_after_backward():
    x = nd.tensor(XV, requires_grad=True)
    t = nd.tanh(x)  # TanhBackward saves this output array; only the graph holds it below
    ref = weakref.ref(t._data)  # the raw backend array
    y = nd.exp(t).sum()
    del t
    gc.collect()
    assert ref() is not None
    y.backward()
    gc.collect()
    assert ref() is None, "backward without retain_graph must free the saved arrays"


def test_saved_intermediate_inputs_are_released_after_backward():
    x = nd.tensor(XV, requires_grad=True)
    h = x * 2.0
    ref = weakref.ref(h._data)  # the raw backend array
    y = (h * h).sum()  # MultiplyBackward saves h
    del h
    gc.collect()
    assert ref() is not None
    y.backward()
    gc.collect()
    assert ref() is None
    close(x.grad, 8 * XV)


def test_saved_arrays_are_kept_with_retain_graph():
    x = nd.tensor(XV, requires_grad=True)
    t = nd.tanh(x)
    ref = weakref.ref(t._data)  # the raw backend array
    y = nd.exp(t).sum()
    del t
    y.backward(retain_graph=True)
    gc.collect()
    assert ref() is not None
    del y
    gc.collect()
    assert ref() is None  # and the graph itself goes with its last tensor


# ---------------------------------------------------------------------------- inputs=
def test_backward_inputs_restricts_accumulation_to_the_given_leaves():
    a = nd.tensor([1.0, 2.0], requires_grad=True)
    b = nd.tensor([3.0, -1.0], requires_grad=True)
    y = (a * b).sum()
    y.backward(inputs=[a], retain_graph=True)
    close(a.grad, [3.0, -1.0])
    assert b.grad is None
    y.backward(inputs=b)
    close(b.grad, [1.0, 2.0])
    close(a.grad, [3.0, -1.0])  # not accumulated again


def test_backward_inputs_with_a_non_leaf_populates_its_grad():
    x = nd.tensor([1.0, 2.0], requires_grad=True)
    h = x * 3
    y = (h * h).sum()
    y.backward(inputs=[h])
    close(h.grad, 2 * 3 * np.array([1.0, 2.0]))
    assert x.grad is None


def test_backward_inputs_must_be_non_empty_and_require_grad():
    x = nd.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    with pytest.raises(RuntimeError, match="'inputs' argument to backward\\(\\) cannot be empty"):
        y.backward(inputs=[])
    with pytest.raises(RuntimeError, match="does not require grad"):
        y.backward(inputs=[nd.ones(2)])


def test_autograd_backward_with_several_roots_sums_their_contributions():
    x = nd.tensor(XV, requires_grad=True)
    y1 = nd.exp(x)
    y2 = (x * x).sum()
    v = np.array([1.0, -2.0, 0.5])
    backward([y1, y2], [nd.tensor(v), None])
    close(x.grad, v * np.exp(XV) + 2 * XV)


# ---------------------------------------------------------------------------- grad()
def test_grad_returns_without_accumulating():
    x = nd.tensor(XV, requires_grad=True)
    result = grad(nd.exp(x).sum(), x)
    assert isinstance(result, tuple) and len(result) == 1
    close(result[0], np.exp(XV))
    assert x.grad is None
    assert not result[0].requires_grad


def test_grad_with_respect_to_non_leaf_tensors():
    x = nd.tensor(XV, requires_grad=True)
    h = nd.tanh(x)
    y = (h * h * h).sum()
    gh, gx = grad(y, [h, x])
    close(gh, 3 * np.tanh(XV) ** 2)
    close(gx, 3 * np.tanh(XV) ** 2 * (1 - np.tanh(XV) ** 2))
    assert x.grad is None


def test_grad_of_several_outputs_with_grad_outputs():
    a = nd.tensor([1.0, 2.0], requires_grad=True)
    b = nd.tensor([0.5, -1.0], requires_grad=True)
    y1 = a * b
    y2 = nd.exp(a)
    ga, gb = grad([y1, y2], [a, b], grad_outputs=[nd.tensor([1.0, 1.0]), nd.tensor([2.0, 0.0])])
    close(ga, [0.5 + 2 * np.exp(1.0), -1.0])
    close(gb, [1.0, 2.0])


def test_unused_inputs_are_an_error_unless_allowed():
    x = nd.tensor(XV, requires_grad=True)
    z = nd.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    with pytest.raises(RuntimeError,
                       match=r"inputs\[1\]\) appears to not have been used in the graph.*"
                             "allow_unused=True"):
        grad(y, [x, z], retain_graph=True)
    gx, gz = grad(y, [x, z], allow_unused=True, retain_graph=True)
    close(gx, 2 * XV)
    assert gz is None
    gx, gz = grad(y, [x, z], materialize_grads=True)
    close(gx, 2 * XV)
    assert isinstance(gz, nd.Tensor) and gz.shape == (2,) and gz.dtype == nd.float64
    np.testing.assert_array_equal(val(gz), [0.0, 0.0])


def test_materialize_grads_contradicting_allow_unused_is_an_error():
    x = nd.tensor(XV, requires_grad=True)
    with pytest.raises(ValueError, match="allow_unused to be True or not passed"):
        grad(x.sum(), x, allow_unused=False, materialize_grads=True)


def test_grad_of_an_unrelated_leaf_in_the_same_graph_is_unused():
    x = nd.tensor(XV, requires_grad=True)
    w = nd.tensor(XV, requires_grad=True)
    _ = x * w  # w is in a graph, but not in y's
    y = (x * 2).sum()
    with pytest.raises(RuntimeError, match="appears to not have been used"):
        grad(y, w)


# ---------------------------------------------------------------------------- accumulation
def test_leaves_accumulate_across_backward_calls_in_place():
    x = nd.tensor(XV, requires_grad=True)
    nd.exp(x).sum().backward()
    g = x.grad
    storage = g._data  # the raw backend array
    (x * x).sum().backward()
    assert x.grad is g, ".grad keeps its identity when create_graph=False"
    assert x.grad._data is storage or x.grad.backend.shares_memory(x.grad._data, storage)
    close(x.grad, np.exp(XV) + 2 * XV)
    assert not x.grad.requires_grad


def test_gradients_from_several_paths_are_summed():
    x = nd.tensor(XV, requires_grad=True)
    a = nd.exp(x)
    y = (a * x + a + nd.tanh(x) * 2.0).sum()  # diamond: a feeds two ops
    y.backward()
    close(x.grad, np.exp(XV) * XV + np.exp(XV) + np.exp(XV) + 2 * (1 - np.tanh(XV) ** 2))


def test_same_tensor_twice_in_one_op():
    x = nd.tensor(XV, requires_grad=True)
    (x * x).sum().backward()
    close(x.grad, 2 * XV)


def test_broadcasting_is_undone_in_the_gradient():
    a = np.array([[1.0], [2.0], [3.0]])  # (3, 1)
    b = np.array([0.5, -1.0, 2.0, 4.0])  # (4,)
    x = nd.tensor(a, requires_grad=True)
    y = nd.tensor(b, requires_grad=True)
    s = nd.tensor(2.0, requires_grad=True)  # 0-d
    ((x * y) * s).sum().backward()
    assert x.grad.shape == (3, 1) and y.grad.shape == (4,) and s.grad.shape == ()
    close(x.grad, np.full((3, 1), b.sum() * 2.0))
    close(y.grad, np.full(4, a.sum() * 2.0))
    close(s.grad, (a * b).sum())


def test_gradient_has_the_parameters_dtype():
    x = nd.tensor([1.0, 2.0], dtype=nd.float32, requires_grad=True)
    y = (x * nd.tensor([3.0, 4.0])).sum()  # promoted to float64
    assert y.dtype == nd.float64
    y.backward()
    assert x.grad.dtype == nd.float32
    close(x.grad, np.array([3.0, 4.0], np.float32))


def test_fortran_ordered_parameter_gets_a_fortran_ordered_grad():
    a = np.asfortranarray(np.arange(6.0).reshape(2, 3))
    p = nd.asarray(a, requires_grad=True)
    (p * p).sum().backward()
    assert p.grad.cpu().numpy().flags.f_contiguous
    close(p.grad, 2 * a)
    (p * 3.0).sum().backward()  # accumulation keeps the layout
    assert p.grad.cpu().numpy().flags.f_contiguous
    close(p.grad, 2 * a + 3.0)
    c = nd.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
    (c * c).sum().backward()
    assert c.grad.cpu().numpy().flags.c_contiguous


def test_create_graph_replaces_grad_by_grad_plus_new_and_is_differentiable():
    x = nd.tensor(2.0, requires_grad=True)
    (x * x * x).backward(create_graph=True)
    g1 = x.grad
    assert g1.requires_grad and g1.grad_fn is not None
    close(g1, 12.0)
    (g2,) = grad(g1, x, retain_graph=True)  # d/dx 3x^2 = 6x
    close(g2, 12.0)
    (x * x).backward(create_graph=True)
    assert x.grad is not g1
    close(x.grad, 12.0 + 4.0)
    close(g1, 12.0)  # the previous gradient object is not modified
    (g3,) = grad(x.grad, x)  # d/dx (3x^2 + 2x) = 6x + 2
    close(g3, 14.0)


def test_create_graph_with_a_plain_existing_grad_is_out_of_place():
    x = nd.tensor([1.0, 2.0], requires_grad=True)
    (x * x).sum().backward()
    old = x.grad
    (x * x * x).sum().backward(create_graph=True)
    assert x.grad is not old
    close(old, [2.0, 4.0])
    close(x.grad, [2.0 + 3.0, 4.0 + 12.0])
    assert x.grad.requires_grad


def test_complex_gradient_is_the_conjugate_wirtinger_convention():
    zv = np.array([1.0 + 2.0j, -0.5 + 0.25j])
    z = nd.tensor(zv, requires_grad=True)
    (z * z.conj()).real.sum().backward()  # |z|^2: gradient 2z (PyTorch's convention)
    assert z.grad.dtype == nd.complex128
    close(z.grad, 2 * zv)
    w = nd.tensor(zv, requires_grad=True)
    (nd.exp(w) * nd.tensor([1.0, 1.0j])).real.sum().backward()  # g * conj(exp(w))
    close(w.grad, np.array([1.0, -1.0j]) * np.conj(np.exp(zv)))


def test_real_input_gets_a_real_gradient_from_a_complex_computation():
    x = nd.tensor([0.5, -1.0], requires_grad=True)
    y = (x * nd.tensor([1.0 + 1.0j, 2.0 - 1.0j])).imag.sum()  # d/dx = imag of the factor
    y.backward()
    assert x.grad.dtype == nd.float64
    close(x.grad, [1.0, -1.0])


# ---------------------------------------------------------------------------- higher order
def _nth_derivatives(f, x0, n):
    """[f'(x0), f''(x0), ..., f^(n)(x0)] by repeated grad(create_graph=True)."""
    x = nd.tensor(x0, requires_grad=True)
    y = f(x)
    out = []
    for k in range(n):
        (y,) = grad(y.sum(), x, create_graph=k < n - 1)
        out.append(val(y).copy())
    return out


X0 = np.array([0.7, -0.4, 1.3])


def test_derivatives_of_x_to_the_fifth_up_to_fifth_order():
    ref = [5 * X0**4, 20 * X0**3, 60 * X0**2, 120 * X0, np.full(3, 120.0)]
    for got, want in zip(_nth_derivatives(lambda x: x * x * x * x * x, X0, 5), ref):
        np.testing.assert_allclose(got, want, rtol=1e-12)
    for got, want in zip(_nth_derivatives(lambda x: x**5, X0, 4), ref):
        np.testing.assert_allclose(got, want, rtol=1e-12)


def test_derivatives_of_exp_up_to_fourth_order():
    for got in _nth_derivatives(nd.exp, X0, 4):
        np.testing.assert_allclose(got, np.exp(X0), rtol=1e-12)


def test_derivatives_of_log_up_to_fourth_order():
    x0 = np.array([0.5, 1.5, 3.0])
    ref = [(-1) ** (n - 1) * math.factorial(n - 1) / x0**n for n in range(1, 5)]
    for got, want in zip(_nth_derivatives(nd.log, x0, 4), ref):
        np.testing.assert_allclose(got, want, rtol=1e-12)


def test_derivatives_of_tanh_up_to_fourth_order():
    t = np.tanh(X0)
    s = 1 - t**2
    ref = [s, -2 * t * s, (6 * t**2 - 2) * s, s * (16 * t - 24 * t**3)]
    for got, want in zip(_nth_derivatives(nd.tanh, X0, 4), ref):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)


def test_derivatives_of_sin_up_to_fourth_order():
    ref = [np.cos(X0), -np.sin(X0), -np.cos(X0), np.sin(X0)]
    for got, want in zip(_nth_derivatives(nd.sin, X0, 4), ref):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)


def test_mixed_partial_derivatives():
    x = nd.tensor(1.5, requires_grad=True)
    y = nd.tensor(-0.5, requires_grad=True)
    f = x * x * y * y * y  # x^2 y^3
    gx, gy = grad(f, [x, y], create_graph=True)
    close(gx, 2 * 1.5 * (-0.5) ** 3)
    close(gy, 3 * 1.5**2 * (-0.5) ** 2)
    gxy, = grad(gx, y, retain_graph=True)  # 6 x y^2
    gxx, = grad(gx, x)  # 2 y^3
    close(gxy, 6 * 1.5 * 0.25)
    close(gxx, 2 * (-0.5) ** 3)


def test_hessian_vector_product_by_double_backward():
    A = np.array([[2.0, 1.0, 0.0], [1.0, 3.0, -1.0], [0.0, -1.0, 4.0]])
    v = np.array([1.0, -2.0, 0.5])
    x = nd.tensor(XV, requires_grad=True)
    f = (x * (nd.tensor(A) @ x)).sum() * 0.5 + nd.exp(x).sum()  # Hessian A + diag(exp x)
    (g,) = grad(f, x, create_graph=True)
    close(g, A @ XV + np.exp(XV))
    (hv,) = grad(g, x, grad_outputs=nd.tensor(v))
    close(hv, A @ v + np.exp(XV) * v)


def test_backward_create_graph_then_backward_of_the_grad():
    x = nd.tensor(X0, requires_grad=True)
    nd.exp(x * x).sum().backward(create_graph=True)  # grad 2x e^{x^2}
    g = x.grad
    close(g, 2 * X0 * np.exp(X0**2))
    x.grad = None
    g.sum().backward()  # d/dx 2x e^{x^2} = (2 + 4x^2) e^{x^2}
    close(x.grad, (2 + 4 * X0**2) * np.exp(X0**2))


# ---------------------------------------------------------------------------- introspection
def test_grad_fn_names():
    x = nd.tensor(XV, requires_grad=True)
    assert (x * 2).grad_fn.name() == "MultiplyBackward0"
    assert (x + 1).grad_fn.name() == "AddBackward0"
    assert nd.tanh(x).grad_fn.name() == "TanhBackward0"
    assert nd.exp(x).grad_fn.name() == "ExpBackward0"
    assert x.sum().grad_fn.name() == "SumBackward0"
    assert x[0].grad_fn.name() == "GetitemBackward0"


def test_next_functions_structure():
    x = nd.tensor(XV, requires_grad=True)
    c = nd.tensor(XV)
    m = x * c
    nf = m.grad_fn.next_functions
    assert len(nf) == 2
    acc, nr = nf[0]
    assert acc.name() == "AccumulateGrad" and nr == 0
    assert acc.variable is x
    assert nf[1] == (None, 0)  # a constant has no node
    assert acc.next_functions == ()
    y = nd.exp(m).sum()
    (exp_node, _), = y.grad_fn.next_functions
    assert exp_node.name() == "ExpBackward0"
    assert exp_node.next_functions[0][0] is m.grad_fn
    # every use of a leaf shares one AccumulateGrad node
    z = x * 3.0
    assert z.grad_fn.next_functions[0][0] is acc
    assert z.grad_fn.next_functions[1] == (None, 0)  # a Python scalar


def test_next_functions_follow_the_output_number():
    x = nd.tensor(XV, requires_grad=True)
    h = x * 2.0
    y = h + h
    assert y.grad_fn.next_functions == ((h.grad_fn, 0), (h.grad_fn, 0))


# ---------------------------------------------------------------------------- multi-output nodes
def test_multi_output_node_with_every_output_used():
    a = np.arange(6.0).reshape(2, 3)
    x = nd.tensor(a, requires_grad=True)
    r0, r1 = nd.unstack(x)
    assert r0.grad_fn is r1.grad_fn
    assert r0.output_nr == 0 and r1.output_nr == 1
    (nd.exp(r0) + r1 * r1).sum().backward()
    close(x.grad, np.stack([np.exp(a[0]), 2 * a[1]]))


def test_multi_output_node_with_an_unused_output():
    x = nd.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
    r0, r1 = nd.unstack(x)
    (r1 * 3.0).sum().backward()  # no gradient reaches r0: it counts as zeros
    close(x.grad, [[0.0, 0.0, 0.0], [3.0, 3.0, 3.0]])


def test_hooks_and_retain_grad_on_one_output_of_a_multi_output_node():
    x = nd.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
    r0, r1 = nd.unstack(x)
    r1.retain_grad()
    r0.register_hook(lambda g: g * 10.0)
    (r0 + r1 * 2.0).sum().backward()
    close(r1.grad, np.full(3, 2.0))
    close(x.grad, [[10.0, 10.0, 10.0], [2.0, 2.0, 2.0]])
    y = r0 + r1
    assert y.grad_fn.next_functions == ((r0.grad_fn, 0), (r0.grad_fn, 1))


# ---------------------------------------------------------------------------- deep graphs
@pytest.mark.cpu_only("the engine's walk is device independent (test_deep_double_backward "
                     "runs a deep graph on every device)")
def test_a_chain_of_100000_ops_differentiates_iteratively():
    n = 100_000
    c = 1.00001
    x = nd.tensor([0.5, -0.25], requires_grad=True)
    y = x
    for _ in range(n):
        y = y * c
    y.sum().backward()
    close(x.grad, np.full(2, c**n), rtol=1e-9)
    # dropping the graph does not recurse either
    del y
    gc.collect()


@pytest.mark.cpu_only("the engine's walk is device independent (test_deep_double_backward "
                     "runs a deep graph on every device)")
def test_a_deep_chain_of_nonlinear_ops_matches_a_numpy_reference():
    n = 20_000
    x = nd.tensor([0.3, -0.2], requires_grad=True)
    y = x
    for _ in range(n):
        y = nd.tanh(y * 1.0001 + 0.5)
    y.sum().backward()
    # reference: forward and reverse in NumPy, by hand
    v = np.array([0.3, -0.2])
    outs = []
    for _ in range(n):
        v = np.tanh(v * 1.0001 + 0.5)
        outs.append(v)
    g = np.ones(2)
    for o in reversed(outs):
        g = g * (1 - o * o) * 1.0001
    close(x.grad, g, rtol=1e-9)


def test_deep_double_backward():
    n = 2000
    x = nd.tensor(0.1, requires_grad=True)
    y = x
    for _ in range(n):
        y = y * 1.001 + x * x * 0.0001
    (g,) = grad(y, x, create_graph=True)
    (h,) = grad(g, x)
    # y_n = a y_{n-1} + b x^2 with y_0 = x: y_n = a^n x + b x^2 (a^n - 1)/(a - 1)
    a, b = 1.001, 0.0001
    s = (a**n - 1) / (a - 1)
    close(g, a**n + 2 * b * 0.1 * s, rtol=1e-9)
    close(h, 2 * b * s, rtol=1e-9)


# ----------------------------------------------------------------------- grad mode during backward
def test_backward_runs_with_grad_mode_off_unless_create_graph():
    seen = []
    x = nd.tensor(XV, requires_grad=True)
    x.register_hook(lambda g: seen.append(nd.is_grad_enabled()))
    nd.exp(x).sum().backward()
    nd.exp(x).sum().backward(create_graph=True)
    assert seen == [False, True]
    assert nd.is_grad_enabled()


def test_backward_inside_no_grad_still_computes_gradients():
    x = nd.tensor(XV, requires_grad=True)
    y = nd.exp(x).sum()
    with nd.no_grad():
        y.backward()
        assert not nd.is_grad_enabled()
    close(x.grad, np.exp(XV))


def test_grad_mode_is_restored_when_backward_fails():
    x = nd.tensor(XV, requires_grad=True)
    y = nd.exp(x).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="retain_graph"):
        y.backward(create_graph=False)
    assert nd.is_grad_enabled()
    with nd.no_grad():
        with pytest.raises(RuntimeError, match="retain_graph"):
            y.backward(create_graph=True)
        assert not nd.is_grad_enabled()


# ----------------------------------------------------------------------------- is_grads_batched
def test_is_grads_batched_gives_the_jacobian_rows():
    x = nd.tensor([1.0, 2.0, 3.0], requires_grad=True)
    A = np.array([[1.0, 2.0, 0.5], [0.0, -1.0, 4.0]])
    y = nd.tanh(nd.matmul(nd.tensor(A), x))
    (jac,) = nd.autograd.grad(y, x, nd.tensor(np.eye(2)), is_grads_batched=True)
    # d tanh(Ax) / dx = diag(1 - tanh^2(Ax)) A
    expected = (1 - np.tanh(A @ np.array([1.0, 2.0, 3.0])) ** 2)[:, None] * A
    np.testing.assert_allclose(jac.cpu().numpy(), expected, rtol=1e-12)


def test_is_grads_batched_checks_the_batch_dimension():
    x = nd.tensor([1.0, 2.0], requires_grad=True)
    y = x * x
    with pytest.raises(RuntimeError, match="Mismatch in shape"):
        nd.autograd.grad(y, x, nd.ones(3, 5), is_grads_batched=True)


# ------------------------------------------------ Note [Keeping fresh gradients]
def test_leaves_sharing_a_passed_through_gradient_get_separate_grads():
    x = nd.tensor([1.0, 2.0], requires_grad=True)
    y = nd.tensor([3.0, 4.0], requires_grad=True)
    (x + y).sum().backward()
    x.grad._data[0] = 100.0  # in-place edit of one leaf's .grad (its raw array) ...
    close(y.grad, [1.0, 1.0])  # ... does not reach the other's
    assert not x.grad.backend.shares_memory(x.grad._data, y.grad._data)


def test_grad_never_aliases_the_callers_gradient_array():
    x = nd.tensor([1.0, 2.0], requires_grad=True)
    g = nd.asarray(np.array([5.0, 7.0]))  # on the CPU, g's memory is the NumPy array's
    (x + 0.0).backward(g)
    assert not x.grad.backend.shares_memory(x.grad._data, g._data)
    (x + 0.0).backward(g)  # accumulates in place into .grad ...
    np.testing.assert_array_equal(val(g), [5.0, 7.0])  # ... never into the caller's array
    close(x.grad, [10.0, 14.0])


def test_a_kept_rule_result_is_not_shared_with_a_second_leaf():
    W = nd.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
    v = nd.tensor([1.0, -1.0, 2.0], requires_grad=True)
    y = nd.matmul(W, v).sum()
    y.backward()
    close(W.grad, np.ones((2, 1)) * np.array([1.0, -1.0, 2.0]))
    close(v.grad, np.arange(6.0).reshape(2, 3).sum(0))
    W.grad.cpu().numpy()[...] = 0.0
    close(v.grad, [3.0, 5.0, 7.0])


def test_grad_runs_only_the_rules_of_requested_inputs():
    """autograd.grad(..., inputs) runs no vjp rule whose result leads to no requested input:
    jv has no derivative in its order v, yet d/dx works with v requiring grad
    ((J_{v-1}(x) - J_{v+1}(x)) / 2); asking for v raises its clear error."""
    import scipy.special as sp
    v_np, x_np = np.array([1.5, 2.0]), np.array([0.5, 1.0])
    v = nd.tensor(v_np, requires_grad=True)
    x = nd.tensor(x_np, requires_grad=True)
    (gx,) = nd.autograd.grad(nd.special.jv(v, x).sum(), x)
    expected = 0.5 * (sp.jv(v_np - 1, x_np) - sp.jv(v_np + 1, x_np))
    np.testing.assert_allclose(gx.cpu().numpy(), expected, rtol=1e-12)
    with pytest.raises(NotImplementedError, match="with respect to v is not implemented"):
        nd.special.jv(v, x).sum().backward()


# The functions every op or node goes through make no cells (Note [No cells on the hot path]
# in core/engine.py).
def _hot_path_functions():
    import importlib

    from ndgrad.core import dispatch, engine, graph, saved
    from ndgrad.forward_ad import _DualInterpreter
    from ndgrad.functional import grad_level, pytree
    from ndgrad.core.ops import batching, reductions
    from ndgrad.core.ops.registry import REGISTRY
    vmap = importlib.import_module("ndgrad.functional.vmap")  # (the package exports vmap())
    return [dispatch.apply, dispatch._result, graph.record, graph.OpNode.backward,
            graph._read_raw, graph._raw, graph.OpNode._unpack,
            saved.SavedOutput.rebuild, graph.fit_gradient,
            engine._run, engine._general_node, engine.BackwardPass.read,
            engine._needed_nodes,
            grad_level._GradInterpreter.process, grad_level._lower_value, pytree._flatten,
            vmap._apply_batched, vmap._batched_value, _DualInterpreter.process,
            batching._elementwise(REGISTRY["add"]),  # (vmap's rule of every elementwise op)
            batching.shift_axes, reductions._kept_shape,
            REGISTRY["add"].jvp, REGISTRY["tanh"].jvp]  # (jvp rules from defjvp_linear and
    #                                                     defjvp_from_vjp)


@pytest.mark.cpu_only("it reads code objects, not a device")
@pytest.mark.parametrize("fn", _hot_path_functions(), ids=lambda f: f.__qualname__)
def test_hot_path_functions_make_no_cells(fn):
    assert fn.__code__.co_cellvars == (), (
        f"{fn.__qualname__} has cell variables {fn.__code__.co_cellvars}: a comprehension "
        "reads its locals; write it as a loop or move it to a helper (Note [No cells on the "
        "hot path] in tests/core/test_engine.py)")


@pytest.mark.cpu_only("it reads code objects, not a device")
def test_cell_check_sees_a_capturing_comprehension():
    def capturing(xs, k):
        return list(x * k for x in xs)  # reads k: k becomes a cell (a generator: from Python
        #                                  3.12 a list comprehension is inlined, makes none)

    def looping(xs, k):
        out = []
        for x in xs:
            out.append(x * k)
        return out

    assert capturing.__code__.co_cellvars == ("k",)
    assert looping.__code__.co_cellvars == ()
    assert capturing([1, 2], 3) == looping([1, 2], 3) == [3, 6]


def test_hot_path_copies_build_what_their_originals_build():
    # Note [Small shortcuts on the hot path]: record's inlined edge_to and plain_output are
    # copies of edge_to and of SavedOutput's constructor; they must not drift apart
    from ndgrad.core import graph, saved

    leaf = nd.tensor(XV, requires_grad=True)
    mid = leaf * 2.0
    for t in (leaf, mid):
        edge = nd.tanh(t).grad_fn.edges[0]
        assert edge == graph.edge_to(t)
        assert edge[0] is (t.grad_fn if t.grad_fn is not None else graph.leaf_accumulator(t))
    y = nd.tanh(mid)
    kept = y.grad_fn.saved_out  # (the copy: a plain output, no transform level)
    made = saved.SavedOutput((y,), True)
    for name in saved.SavedOutput.__slots__:
        a, b = getattr(kept, name), getattr(made, name)
        assert a is b or a == b, name
    assert kept.content is y._data and kept.counter is y._vcounter
    close(y.grad_fn._saved_out, np.tanh(2 * XV))
