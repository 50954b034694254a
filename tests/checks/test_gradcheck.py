"""The checks checked, both ways: right derivatives pass (registry-wide, fast mode with
forward AD, and the option set), wrong ones fail (a wrong vjp, a wrong jvp, a wrong second
derivative, a nondeterministic backward, a wrong complex derivative, a backward that is not
zero for zero output grads, a wrong batching rule), with the message content asserted."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import ndgrad as nd
from ndgrad.autograd import Function
from ndgrad.checks import GradcheckError, adjointcheck, gradcheck, gradgradcheck
from ndgrad.core.ops import REGISTRY
from registry_harness import ENTRIES, cases, differentiable, draw, entry
from support import cube_function

RNG = np.random.default_rng(7)


def T(a, **kw):
    return nd.tensor(np.asarray(a), requires_grad=True, **kw)


X = RNG.uniform(0.5, 1.5, size=(3,))


# ----------------------------------------------------------------------------- passing
def test_right_rules_pass_every_check():
    Cube = cube_function()
    assert gradcheck(Cube.apply, (T(X),), check_forward_ad=True, check_batched_grad=True,
                     check_batched_forward_grad=True, check_grad_dtypes=True)
    assert gradcheck(Cube.apply, (T(X),), check_forward_ad=True, fast_mode=True)
    assert gradgradcheck(Cube.apply, (T(X),), check_fwd_over_rev=True)
    assert adjointcheck(Cube.apply, (T(X),))


@pytest.mark.cpu_only("every op on the CUDA backend: the registry matrix's device family")
@pytest.mark.parametrize("name, dtype", cases(differentiable(ENTRIES, "vjp", "jvp", "fd")))
@settings(max_examples=3)
@given(data=st.data())
def test_fast_mode_with_forward_ad_passes_every_registered_op(name, dtype, data):
    """Registry-wide: fast mode (reverse and forward mode) passes right derivatives."""
    op = entry(name)
    sample = draw(data, op, dtype)
    assume(sample.pos)
    assert gradcheck(sample.function(), sample.leaves(), fast_mode=True, check_forward_ad=True,
                     atol=1e-5, rtol=1e-3)


def test_nested_inputs_and_non_tensor_values():
    a, b = RNG.normal(size=(4, 3)), RNG.normal(size=(3, 2))

    def f(pair, scale, flag):
        x, y = pair
        out = nd.tanh(x @ y) * scale
        return (out, out.sum(axis=0)) if flag else out
    assert gradcheck(f, ([T(a), T(b)], 2.5, True), check_forward_ad=True)
    # an input that does not require grad is passed through, not checked
    frozen = nd.tensor(b)
    assert gradcheck(f, ((T(a), frozen), 2.5, False))


def test_complex_inputs_and_outputs_follow_the_wirtinger_convention():
    z = T(RNG.normal(size=3) + 1j * RNG.normal(size=3))
    for fn in (lambda z: nd.exp(z) * nd.conj(z),          # complex -> complex, non-holomorphic
               lambda z: (nd.abs(z) ** 2).sum(),          # complex -> real
               lambda z: nd.real(z) * nd.imag(z)):
        assert gradcheck(fn, (z,), check_forward_ad=True)
        assert gradcheck(fn, (z,), check_forward_ad=True, fast_mode=True)
    x = T(X)
    assert gradcheck(lambda x: nd.exp(1j * x), (x,), check_forward_ad=True)  # real -> complex


def test_complex_step_is_exact():
    """Complex-step derivatives agree with the analytic ones to rounding: a derivative wrong
    by a relative 1e-7, invisible to central differences at the default tolerances, fails."""
    x = T(X)
    assert gradcheck(lambda x: nd.tanh(x) * nd.exp(x), (x,), complex_step=True, eps=1e-20,
                     atol=1e-13, rtol=1e-12)
    slightly_wrong = cube_function(vjp_scale=1 + 1e-7)
    assert gradcheck(slightly_wrong.apply, (T(X),))  # hidden in finite-difference noise
    with pytest.raises(GradcheckError, match="Jacobian mismatch"):
        gradcheck(lambda x: slightly_wrong.apply(x), (T(X),), complex_step=True, eps=1e-20,
                  atol=1e-13, rtol=1e-12)


def test_adjointcheck_needs_no_finite_differences():
    a = T(RNG.normal(size=(3, 3)))
    assert adjointcheck(lambda a: nd.tanh(a @ a).sum(axis=0), (a,), atol=1e-12, rtol=1e-10)
    z = T(RNG.normal(size=3) + 1j * RNG.normal(size=3))
    assert adjointcheck(lambda z: nd.exp(z) * nd.conj(z), (z,))


# ----------------------------------------------------------------------------- failing
def test_a_wrong_vjp_fails_with_the_jacobians_in_the_message():
    Bad = cube_function(vjp_scale=1.1)
    with pytest.raises(GradcheckError) as info:
        gradcheck(Bad.apply, (T(X),))
    msg = str(info.value)
    assert "Jacobian mismatch for output 0 with respect to input 0" in msg
    assert "reverse mode" in msg and "numerical:" in msg and "analytical:" in msg
    assert "The worst entry is at (row" in msg and "atol=1e-05, rtol=0.001" in msg
    # the reported matrices are the Jacobians: diag(3x^2) and 1.1 times it
    worst = int(np.argmax(X))
    assert f"row {worst}, column {worst}" in msg
    assert f"{3 * X[worst] ** 2:.6g}" in msg and f"{3.3 * X[worst] ** 2:.6g}" in msg
    assert gradcheck(Bad.apply, (T(X),), raise_exception=False) is False
    with pytest.raises(GradcheckError, match="fast mode"):
        gradcheck(Bad.apply, (T(X),), fast_mode=True)


def test_a_wrong_jvp_fails_only_the_forward_checks():
    Bad = cube_function(jvp_scale=0.9)
    assert gradcheck(Bad.apply, (T(X),))  # reverse mode is right
    with pytest.raises(GradcheckError, match=r"\(forward mode\)"):
        gradcheck(Bad.apply, (T(X),), check_forward_ad=True)
    with pytest.raises(GradcheckError, match="forward mode, fast mode"):
        gradcheck(Bad.apply, (T(X),), check_forward_ad=True, fast_mode=True)
    with pytest.raises(GradcheckError, match="Forward and reverse mode disagree"):
        adjointcheck(Bad.apply, (T(X),))
    assert gradcheck(Bad.apply, (T(X),), check_forward_ad=True, check_backward_ad=False,
                     raise_exception=False) is False


def test_a_wrong_second_derivative_fails_gradgradcheck_only():
    Bad = cube_function(second_order=False)
    assert gradcheck(Bad.apply, (T(X),))
    with pytest.raises(GradcheckError, match="of vjp of"):
        gradgradcheck(Bad.apply, (T(X),))


def test_a_nondeterministic_backward_is_caught_by_nondet_tol():
    noise = np.random.default_rng(1)

    class Noisy(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * g * x + float(noise.normal()) * 1e-9  # right up to 1e-9

    # (its noise is not zero for a zero grad either: that check is off here)
    with pytest.raises(GradcheckError, match="Backward is not reentrant") as info:
        gradcheck(Noisy.apply, (T(X),), check_undefined_grad=False)
    assert "tolerance for nondeterminism was 0.0" in str(info.value)
    assert gradcheck(Noisy.apply, (T(X),), nondet_tol=1e-6, check_undefined_grad=False)


def test_a_wrong_complex_derivative_fails():
    class SquareNoConj(Function):
        @staticmethod
        def forward(ctx, z):
            ctx.save_for_backward(z)
            return z * z

        @staticmethod
        def backward(ctx, g):
            (z,) = ctx.saved_tensors
            return g * 2 * z  # the convention wants g * conj(2 z)

    z = T(RNG.normal(size=2) + 1j * RNG.normal(size=2))
    with pytest.raises(GradcheckError, match="Jacobian mismatch") as info:
        gradcheck(SquareNoConj.apply, (z,))
    assert "imaginary unit" in str(info.value)
    assert gradcheck(lambda z: z * z, (z,))


def test_a_backward_that_is_not_zero_for_zero_grads_fails_check_undefined_grad():
    class Biased(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2 + 0.0 * g + (g == g) * 0 + _BIAS[0]
    _BIAS = [0.0]
    assert gradcheck(Biased.apply, (T(X),))
    _BIAS[0] = 1e-3  # hidden by the tolerances below, but not zero for a zero grad
    assert gradcheck(Biased.apply, (T(X),), check_undefined_grad=False, atol=1e-2)
    with pytest.raises(GradcheckError, match="handle undefined output grads"):
        gradcheck(Biased.apply, (T(X),), atol=1e-2)


def test_a_wrong_batching_rule_fails_check_batched_grad(monkeypatch):
    """The vmapped vjps go through the ops' batching rules; a wrong rule for multiply (used
    by sin's vjp, g * cos(x)) makes them differ from the looped ones."""
    op = REGISTRY["multiply"]

    def wrong(F, batched, x, y):
        return F.multiply(x, y) * 1.5
    monkeypatch.setattr(op, "batch_rule", wrong)
    with pytest.raises(GradcheckError, match="Batched grad mismatch"):
        gradcheck(lambda x: nd.sin(x), (T(X),), check_batched_grad=True)
    monkeypatch.undo()
    assert gradcheck(lambda x: nd.sin(x), (T(X),), check_batched_grad=True)


def test_functions_vmap_cannot_batch_are_checked_by_the_loop():
    class NumpyCos(Function):  # a backward that reads raw arrays: vmap cannot batch it
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return nd.sin(x)

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return nd.tensor(np.cos(x.detach().cpu().numpy()) * g.detach().cpu().numpy())

    assert gradcheck(NumpyCos.apply, (T(X),))
    with pytest.raises(GradcheckError, match="While computing batched gradients"):
        gradcheck(NumpyCos.apply, (T(X),), check_batched_grad=True)


# ------------------------------------------------------------------------ input errors
def test_lower_precision_warns():
    with pytest.warns(UserWarning, match="not a double precision"):
        assert gradcheck(lambda x: x * 2, (T(X, dtype=nd.float32),), eps=1e-3, atol=1e-2)


def test_argument_errors():
    with pytest.raises(ValueError, match="at least one input tensor that requires grad"):
        gradcheck(lambda x: x * 2, (nd.tensor(X),))
    with pytest.raises(ValueError, match="complex_step=True needs real inputs"):
        gradcheck(lambda z: z * 2, (T(X + 1j),), complex_step=True)
    with pytest.raises(ValueError, match="nothing to check"):
        gradcheck(lambda x: x * 2, (T(X),), check_backward_ad=False)
    with pytest.raises(ValueError, match="needs check_forward_ad=True"):
        gradcheck(lambda x: x * 2, (T(X),), check_batched_forward_grad=True)
    with pytest.raises(ValueError, match=r"grad_outputs\[0\] has shape \[2\]"):
        gradgradcheck(lambda x: x * x, (T(X),), grad_outputs=(nd.ones(2),))
    with pytest.raises(ValueError, match="got 2 grad_outputs for 1"):
        gradgradcheck(lambda x: x * x, (T(X),), grad_outputs=(nd.ones(3), nd.ones(3)))


def test_gradgradcheck_options():
    a = T(RNG.normal(size=(2, 3)))
    f = lambda a: nd.tanh(a) * a  # noqa: E731
    assert gradgradcheck(f, (a,), gen_non_contig_grad_outputs=True, check_fwd_over_rev=True,
                         check_batched_grad=True)
    g = nd.tensor(RNG.normal(size=(2, 3)))
    assert gradgradcheck(f, (a,), grad_outputs=(g,), fast_mode=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # double precision: no warning
        assert gradgradcheck(f, (a,), check_rev_over_rev=False, check_fwd_over_rev=True)
