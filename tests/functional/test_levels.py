"""Every transform is a level (Note [Levels] in core/levels.py, Note [Grad levels] in
functional/grad_level.py): the behaviours of torch.func that need ``grad``/``vjp`` to be a
level of their own, each against a closed form."""

from __future__ import annotations

import importlib
import sys
import threading

import numpy as np
import pytest

import ndgrad as nd
import ndgrad.forward_ad as fwAD
from ndgrad import func
from ndgrad.core import levels
from support import close, host

X0 = np.array([0.3, -1.2, 0.7])
Y0 = np.array([1.0, 2.0, -0.5])
A = np.random.default_rng(0).normal(size=(3, 3))


def T(a, **kw):
    return nd.tensor(a, **kw)


@pytest.fixture(autouse=True)
def _no_level_left():
    yield
    assert levels.STACK == [] and levels.VISIBLE[0] == 0


def test_grad_through_a_vjp_fn_made_outside_it():
    """d/dy [vjp_fn(y) . 1] = cos(x0): the pullback's pass is recorded where grad mode is on
    (a silently wrong 0 when it is not)."""
    _, vjp_fn = func.vjp(nd.sin, T(X0))
    close(func.grad(lambda y: vjp_fn(y)[0].sum())(T(Y0)), np.cos(X0))
    # and twice nested: the pullback of the pullback, through two levels
    h = func.grad(lambda y: func.grad(lambda z: (vjp_fn(z)[0] * z).sum())(y).sum())(T(Y0))
    close(h, 2 * np.cos(X0))


@pytest.mark.parametrize("transform", ["grad", "vjp", "jacrev", "grad(vmap)", "jacrev(grad)"])
def test_transforms_inside_inference_mode_on_tensors_made_outside(transform):
    x = T(X0)
    f = lambda t: (nd.sin(t) * t).sum()  # noqa: E731
    df = np.sin(X0) + X0 * np.cos(X0)
    d2f = np.diag(2 * np.cos(X0) - X0 * np.sin(X0))
    with nd.inference_mode():
        if transform == "grad":
            close(func.grad(f)(x), df)
        elif transform == "vjp":
            out, vjp_fn = func.vjp(nd.sin, x)
            close(out, np.sin(X0))
            close(vjp_fn(T(Y0))[0], Y0 * np.cos(X0))
        elif transform == "jacrev":
            close(func.jacrev(nd.sin)(x), np.diag(np.cos(X0)))
        elif transform == "grad(vmap)":
            close(func.grad(lambda t: func.vmap(nd.sin)(t).sum())(x), np.cos(X0))
        else:
            close(func.jacrev(func.grad(f))(x), d2f)


def test_a_jacobian_inside_inference_mode_leaves_later_ones_outside_it_unaffected():
    """vmap's cached identity (the basis of jacrev/jacfwd) made first inside inference_mode
    must not be an inference tensor: later Jacobians of the same size outside it save it."""
    importlib.import_module("ndgrad.functional.vmap")._IDENTITIES.clear()  # (made here first)
    x = T(X0)
    f = lambda t: (nd.sin(t) * t).sum()  # noqa: E731
    with nd.inference_mode():
        close(func.jacrev(nd.sin)(x), np.diag(np.cos(X0)))
    # differentiating through a Jacobian saves the identity basis for backward
    close(func.jacrev(func.jacfwd(f))(x), np.diag(2 * np.cos(X0) - X0 * np.sin(X0)))
    # sum_ij J_ij t_j = sum_i cos(t_i) t_i
    close(func.grad(lambda t: (func.jacrev(nd.sin)(t) * t).sum())(x),
          np.cos(X0) - X0 * np.sin(X0))


def test_vjp_fn_under_no_grad_gives_a_result_without_graph():
    x = T(X0, requires_grad=True)
    _, vjp_fn = func.vjp(nd.sin, x)
    with nd.no_grad():
        (r,) = vjp_fn(T(Y0))
    assert not r.requires_grad and r.grad_fn is None
    close(r, Y0 * np.cos(X0))


def test_vjp_under_no_grad_whose_vjp_fn_runs_outside_is_differentiable():
    x = T(X0, requires_grad=True)
    with nd.no_grad():
        out, vjp_fn = func.vjp(nd.sin, x)
    assert not out.requires_grad
    (r,) = vjp_fn(T(Y0))
    assert r.requires_grad
    (d,) = nd.autograd.grad(r.sum(), x)
    close(d, -Y0 * np.sin(X0))  # d/dx [y . cos(x)]


@pytest.mark.parametrize("transform", ["grad", "vjp", "jacrev"])
def test_writing_into_a_captured_tensor_is_an_error(transform):
    captured = nd.zeros(3)

    def f(t):
        captured.copy_(t)
        return (captured * 2).sum()

    with pytest.raises(RuntimeError, match=r"captured from outside .*shape \[3\], dtype "
                                           r"float64"):
        if transform == "grad":
            func.grad(f)(T(X0))
        elif transform == "vjp":
            func.vjp(f, T(X0))
        else:
            func.jacrev(f)(T(X0))
    close(captured, np.zeros(3))  # untouched


def test_writing_into_an_input_or_a_tensor_made_inside_is_fine():
    def f(t):
        buf = nd.zeros(3)
        buf.copy_(t * t)       # made inside: a value of the level from now on
        t2 = t * 1.0
        t2.mul_(t)             # the input's own value
        return (buf + t2).sum()
    close(func.grad(f)(T(X0)), 4 * X0)


@pytest.mark.parametrize("transform", ["grad", "vjp"])
@pytest.mark.parametrize("returned", ["list", "tensor", "triple"])
def test_has_aux_requires_a_tuple(transform, returned):
    value = {"list": lambda t: [t.sum(), t], "tensor": lambda t: t.sum(),
             "triple": lambda t: (t.sum(), t, t)}[returned]
    with pytest.raises(RuntimeError, match=r"must return a pair \(output, aux\) as a tuple"):
        if transform == "grad":
            func.grad(value, has_aux=True)(T(X0))
        else:
            func.vjp(value, T(X0), has_aux=True)
    g, aux = func.grad(lambda t: (t.sum(), [t]), has_aux=True)(T(X0))
    close(g, np.ones(3))
    close(aux[0], X0)


def test_forward_over_reverse_carries_the_cotangents_tangent():
    """g(x, c) = vjp(sin, x)(c) = c cos(x): d/dc g . 1 = cos(x) (a silently wrong 0 when the
    pullback drops the cotangent's tangent)."""
    g = lambda x, c: func.vjp(nd.sin, x)[1](c)[0]  # noqa: E731
    _, t = func.jvp(g, (T(X0), T(Y0)), (nd.zeros(3), nd.ones(3)))
    close(t, np.cos(X0))
    _, t = func.jvp(g, (T(X0), T(Y0)), (nd.ones(3), nd.zeros(3)))
    close(t, -Y0 * np.sin(X0))


def test_a_dual_grad_output_carries_its_tangent_through_autograd_grad():
    x = T(X0, requires_grad=True)
    y = nd.sin(x) * x
    with fwAD.dual_level():
        c = fwAD.make_dual(T(Y0), nd.ones(3))
        (gx,) = nd.autograd.grad(y, x, grad_outputs=c)
        primal, tangent = fwAD.unpack_dual(gx)
    close(primal, Y0 * (np.cos(X0) * X0 + np.sin(X0)))
    close(tangent, np.cos(X0) * X0 + np.sin(X0))


def test_reverse_over_reverse_with_respect_to_the_cotangent():
    """The pullback of x -> A x is c -> A^T c; its own pullback is u -> A u (tensordot's vjp
    rule differentiated in its cotangent)."""
    _, f_vjp = func.vjp(lambda x: nd.tensordot(T(A), x, axes=1), T(X0))
    out, h = func.vjp(lambda c: f_vjp(c)[0], T(Y0))
    close(out, A.T @ Y0)
    close(h(T(np.array([1.0, -2.0, 0.5])))[0], A @ np.array([1.0, -2.0, 0.5]))
    close(func.jacrev(lambda c: f_vjp(c)[0])(T(Y0)), A.T)


def test_grad_results_are_values_one_level_down():
    g = func.grad(lambda t: (t ** 3).sum())(T(X0))
    assert type(g) is nd.Tensor and g.grad_fn is None and not g.requires_grad
    inner = []

    def f(t):
        inner.append(t)
        return (t ** 2).sum()
    func.grad(f)(T(X0))
    (t,) = inner
    assert type(t) is not nd.Tensor and t.requires_grad  # a value of the (exited) level
    close(t * 2.0, 2 * X0)  # used later, it is the value it wraps


def test_grad_sees_an_outer_levels_values_as_constants():
    """d/dx [x * grad(lambda y: x * y)(3.0)] = d/dx x^2 = 2x: no perturbation confusion."""
    f = lambda x: x * func.grad(lambda y: x * y)(T(3.0))  # noqa: E731
    close(func.grad(f)(T(1.5)), 3.0)
    # vector x: f(x) = x * sum(x), so J = sum(x) I + x 1^T
    g = lambda x: x * func.grad(lambda y: (x * y).sum())(T(3.0))  # noqa: E731
    close(func.jacfwd(g)(T(X0)), X0.sum() * np.eye(3) + X0[:, None])
    close(func.jacrev(g)(T(X0)), X0.sum() * np.eye(3) + X0[:, None])


# ------------------------------------------------------------------ levels per thread
# Note [Levels per thread] in core/levels.py: each thread has its own stack of levels, so
# transforms run in several threads at once; each result is checked against its closed form.
def _tanh_d(x, k):
    """The k-th derivative of tanh at x (k = 0..3)."""
    t = np.tanh(x)
    return [t, 1 - t * t, -2 * t * (1 - t * t), (1 - t * t) * (6 * t * t - 2)][k]


def _duals_nested(x, v):
    with fwAD.dual_level():
        y = nd.tanh(fwAD.make_dual(T(x), T(v)))
        with fwAD.dual_level():  # nested in this thread's own outer level
            inner = fwAD.unpack_dual(nd.exp(fwAD.make_dual(T(x), T(v)))).tangent
        return np.stack([host(fwAD.unpack_dual(y).tangent), host(inner)])


_tanh_sum = lambda x: nd.tanh(x).sum()  # noqa: E731
THREAD_CASES = {
    "grad": (lambda x, v: func.grad(_tanh_sum)(T(x)), lambda x, v: _tanh_d(x, 1)),
    "vjp": (lambda x, v: func.vjp(nd.tanh, T(x))[1](T(v))[0], lambda x, v: v * _tanh_d(x, 1)),
    "jvp": (lambda x, v: func.jvp(nd.tanh, (T(x),), (T(v),))[1],
            lambda x, v: v * _tanh_d(x, 1)),
    "jacrev": (lambda x, v: func.jacrev(nd.tanh)(T(x)), lambda x, v: np.diag(_tanh_d(x, 1))),
    "jacfwd": (lambda x, v: func.jacfwd(nd.tanh)(T(x)), lambda x, v: np.diag(_tanh_d(x, 1))),
    "hessian": (lambda x, v: func.hessian(_tanh_sum)(T(x)),
                lambda x, v: np.diag(_tanh_d(x, 2))),
    "vmap(grad)": (lambda x, v: func.vmap(func.grad(_tanh_sum))(T(np.stack([x, v]))),
                   lambda x, v: np.stack([_tanh_d(x, 1), _tanh_d(v, 1)])),
    "jet": (lambda x, v: nd.stack(func.jet(nd.tanh, (T(x),), ([T(v), T(0 * v), T(0 * v)],))[1]),
            lambda x, v: np.stack([v * _tanh_d(x, 1), v * v * _tanh_d(x, 2),
                                   v ** 3 * _tanh_d(x, 3)])),
    "derivatives": (lambda x, v: nd.stack(func.derivatives(nd.tanh, T(x), 3)),
                    lambda x, v: np.stack([_tanh_d(x, k) for k in range(4)])),
    "laplacian": (lambda x, v: func.laplacian(_tanh_sum)(T(x)),
                  lambda x, v: _tanh_d(x, 2).sum()),
    "dual levels": (_duals_nested, lambda x, v: np.stack([v * _tanh_d(x, 1), v * np.exp(x)])),
}


def _in_threads(work, n_threads=4):
    """Run ``work(k, barrier)`` in ``n_threads`` threads at once, switching between them as
    often as the interpreter allows; return what each raised (None when nothing)."""
    barrier = threading.Barrier(n_threads)
    raised = [None] * n_threads

    def run(k):
        try:
            work(k, barrier)
        except BaseException as exc:  # reported by the caller
            raised[k] = exc
    threads = [threading.Thread(target=run, args=(k,)) for k in range(n_threads)]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(interval)
    return raised


def test_every_transform_runs_in_several_threads_at_once():
    wrong = []

    def work(k, barrier):
        rng = np.random.default_rng([20240611, k])
        barrier.wait()  # (all threads start their transforms together)
        for i in range(50):
            for name, (run, closed_form) in THREAD_CASES.items():
                x, v = rng.normal(size=3), rng.normal(size=3)
                got, ref = host(run(x, v)), closed_form(x, v)
                if got.shape != ref.shape or not np.allclose(got, ref, rtol=1e-12, atol=1e-12):
                    wrong.append((k, i, name, got, ref))
        assert levels.active_levels() == [] and nd.is_grad_enabled()
    raised = _in_threads(work)
    assert raised == [None] * 4, raised
    assert wrong == []


def test_a_failure_inside_a_transform_leaves_no_state_behind_in_its_thread():
    def fails_inside(x):
        y = nd.sin(x)
        if y.shape:  # (always) a failure deep inside nested transforms
            raise ValueError("boom inside")
        return y

    def leaves_a_dual_level_open(x):
        fwAD.enter_dual_level()  # never exited: the grad level around it exits it
        return nd.sin(x).sum()

    wrong = []

    def work(k, barrier):
        rng = np.random.default_rng([7, k])
        barrier.wait()
        for i in range(30):
            x = rng.normal(size=3)
            with pytest.raises(ValueError, match="boom inside"):
                func.vmap(func.grad(lambda t: func.jet(fails_inside, (t,), ([t],))[0].sum()))(
                    T(np.stack([x, x])))
            with pytest.raises(ValueError, match="boom inside"):
                with nd.no_grad(), fwAD.dual_level():
                    func.jacfwd(fails_inside)(T(x))
            with pytest.raises(RuntimeError, match="dual level 1>, entered inside it, is still "
                                                   "active.*both are exited now"):
                func.grad(leaves_a_dual_level_open)(T(x))
            # nothing is left: this thread's next transforms and modes are as before
            if levels.active_levels() or fwAD._duals().stack or not nd.is_grad_enabled():
                wrong.append((k, i, levels.active_levels(), fwAD._duals().stack))
            got = func.vmap(func.grad(_tanh_sum))(T(np.stack([x, -x])))
            if not np.allclose(host(got), np.stack([_tanh_d(x, 1), _tanh_d(-x, 1)]),
                               rtol=1e-12, atol=1e-12):
                wrong.append((k, i, got))
            with fwAD.dual_level() as lv:
                t = fwAD.unpack_dual(nd.exp(fwAD.make_dual(T(x), T(x)))).tangent
                if lv != 0 or not np.allclose(host(t), x * np.exp(x), rtol=1e-12):
                    wrong.append((k, i, lv, t))
    raised = _in_threads(work)
    assert raised == [None] * 4, raised
    assert wrong == []


def test_a_level_belongs_to_the_thread_that_entered_it():
    out = {}

    def other_thread(x):
        for what, fn in [("op", lambda: nd.exp(x)), ("exit", fwAD.exit_dual_level),
                         ("unpack", lambda: fwAD.unpack_dual(x).tangent),
                         ("pop", lambda: levels.pop(outer))]:
            try:
                out[what] = fn()
            except RuntimeError as exc:
                out[what] = exc
    with fwAD.dual_level():
        x = fwAD.make_dual(T(X0), T(Y0))
        (outer,) = levels.active_levels()
        t = threading.Thread(target=other_thread, args=(x,))
        t.start()
        t.join()
        # this thread's level is untouched, and its tangent still right
        close(fwAD.unpack_dual(nd.exp(x)).tangent, Y0 * np.exp(X0))
    with pytest.raises(RuntimeError, match=r"a value of <dual level 0>, a transform level "
                                           r"entered in another thread, was used"):
        raise out["op"]
    with pytest.raises(RuntimeError, match="no dual level is active in this thread"):
        raise out["exit"]
    assert out["unpack"] is None  # no dual level in that thread: no tangent there
    with pytest.raises(RuntimeError, match=r"cannot exit <dual level 0>: it was entered in "
                                           "another thread"):
        raise out["pop"]
