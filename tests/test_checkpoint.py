"""Checkpointing (ndgrad.utils.checkpoint, ndgrad.func.checkpoint): gradients equal to the
plain run's, and the memory kept for backward really drops."""

from __future__ import annotations

import functools
import gc
import tracemalloc

import numpy as np
import pytest

import ndgrad as nd
from ndgrad.autograd.graph import saved_tensors_hooks
from ndgrad.utils.checkpoint import checkpoint, checkpoint_sequential
from support import fd_gradient

X0 = np.array([0.3, -1.2, 2.0, 0.7])
W0 = np.array([[0.5, -0.2, 0.1, 0.3], [0.0, 0.4, -0.6, 0.2], [0.9, 0.1, 0.2, -0.3],
               [0.2, 0.2, 0.5, 0.1]])


def _np(t):
    return t.detach().cpu().numpy()


def _block(W):
    def f(v, scale=1.0):
        return nd.tanh(W @ nd.sin(v) * scale) * v
    return f


def _grads(run):
    x = nd.tensor(X0.copy(), requires_grad=True)
    W = nd.tensor(W0.copy(), requires_grad=True)
    run(x, W).sum().backward()
    return _np(x.grad), _np(W.grad)


@pytest.mark.parametrize("use_reentrant", [False, True])
def test_gradients_equal_the_plain_run(use_reentrant):
    plain = _grads(lambda x, W: _block(W)(_block(W)(x)))
    ckpt = _grads(lambda x, W: checkpoint(_block(W), checkpoint(_block(W), x,
                                                                use_reentrant=use_reentrant),
                                          use_reentrant=use_reentrant))
    for a, b in zip(plain, ckpt):
        np.testing.assert_allclose(b, a, rtol=1e-12, atol=1e-14)


def test_autograd_grad_with_inputs_keywords_and_tuple_outputs():
    x = nd.tensor(X0.copy(), requires_grad=True)
    W = nd.tensor(W0.copy(), requires_grad=True)

    def two(v, scale):
        h = _block(W)(v, scale=scale)
        return h, h * h

    a, b = checkpoint(two, x, scale=0.5)
    gx, gW = nd.autograd.grad((a + b).sum(), (x, W))
    a2, b2 = two(x, 0.5)
    rx, rW = nd.autograd.grad((a2 + b2).sum(), (x, W))
    np.testing.assert_allclose(_np(gx), _np(rx), rtol=1e-12)
    np.testing.assert_allclose(_np(gW), _np(rW), rtol=1e-12)
    (only_w,) = nd.autograd.grad(checkpoint(_block(W), x).sum(), W)
    np.testing.assert_allclose(_np(only_w), _grads(lambda x, W: _block(W)(x))[1], rtol=1e-12)


def test_double_backward_through_a_checkpoint():
    # d2/dx2 of sum(sin(x)^3) = 6 sin cos^2 - 3 sin^3
    x = nd.tensor(X0.copy(), requires_grad=True)
    y = checkpoint(lambda v: nd.sin(v) ** 3, x).sum()
    (g,) = nd.autograd.grad(y, x, create_graph=True)
    (h,) = nd.autograd.grad(g.sum(), x)
    s, c = np.sin(X0), np.cos(X0)
    np.testing.assert_allclose(_np(g), 3 * s ** 2 * c, rtol=1e-12)
    np.testing.assert_allclose(_np(h), 6 * s * c ** 2 - 3 * s ** 3, rtol=1e-12)


@pytest.mark.parametrize("preserve", [True, False])
def test_random_ops_are_replayed(preserve):
    def noisy(v):
        return nd.tanh(v * (1.0 + nd.randn(*v.shape)))

    def run(use_ckpt):
        nd.manual_seed(5)
        x = nd.tensor(X0.copy(), requires_grad=True)
        y = checkpoint(noisy, x, preserve_rng_state=preserve) if use_ckpt else noisy(x)
        y.sum().backward()
        return _np(x.grad)

    same = np.allclose(run(True), run(False), rtol=1e-12)
    assert same is preserve  # without the replay the recomputation draws other numbers


def test_a_recomputation_that_differs_is_an_error():
    calls = []

    def changing(v):
        calls.append(1)
        return nd.sin(v[: len(calls) + 1]).sum()

    x = nd.tensor(X0.copy(), requires_grad=True)
    y = checkpoint(changing, x)
    with pytest.raises(RuntimeError, match="did not repeat its forward: saved tensor 0 has "
                                           r"shape \[3\].*shape \[2\]"):
        y.backward()
    calls.clear()
    y = checkpoint(lambda v: nd.sin(v) if not calls.append(1) and len(calls) == 1 else v * 2.0,
                   x, determinism_check="none")
    with pytest.raises(RuntimeError, match="it saved 0 tensors, the forward saved 1"):
        y.sum().backward()


def test_argument_errors():
    x = nd.tensor(X0.copy(), requires_grad=True)
    with pytest.raises(ValueError, match="determinism_check"):
        checkpoint(nd.sin, x, determinism_check="strict")
    with pytest.raises(TypeError, match="callable"):
        checkpoint(3, x)
    with pytest.raises(ValueError, match="positional arguments only"):
        checkpoint(_block(nd.tensor(W0)), x, use_reentrant=True, scale=2.0)
    with pytest.raises(ValueError, match="segments must be at least 1"):
        checkpoint_sequential([nd.sin], 0, x)


def test_checkpoint_sequential_gradients_equal_the_plain_chain():
    fs = [nd.sin, lambda v: v * 1.5, nd.tanh, nd.exp, lambda v: v ** 2, nd.cos, nd.sin]
    for segments in (1, 2, 3, 7):
        x = nd.tensor(X0.copy(), requires_grad=True)
        checkpoint_sequential(fs, segments, x).sum().backward()
        r = nd.tensor(X0.copy(), requires_grad=True)
        y = r
        for f in fs:
            y = f(y)
        y.sum().backward()
        np.testing.assert_allclose(_np(x.grad), _np(r.grad), rtol=1e-12)


def _chain_step(v):
    return nd.sin(v) * 1.01


@pytest.mark.cpu_only("tracemalloc sees host allocations")
def test_checkpoint_sequential_keeps_a_quarter_of_the_memory():
    n, steps = 100_000, 64
    x0 = np.linspace(-1.0, 1.0, n)
    fs = [_chain_step] * steps

    def forward(segments):
        """(bytes saved through saved-tensor hooks, bytes held after the forward, grad)"""
        saved = []

        def pack(t):
            saved.append(t.nbytes)
            return t
        x = nd.tensor(x0.copy(), requires_grad=True)
        gc.collect()
        tracemalloc.start()
        base = tracemalloc.get_traced_memory()[0]
        with saved_tensors_hooks(pack, lambda t: t):
            y = checkpoint_sequential(fs, segments, x) if segments else \
                _run_plain(fs, x)
        held = tracemalloc.get_traced_memory()[0] - base
        tracemalloc.stop()
        y.sum().backward()
        return sum(saved), held, _np(x.grad)

    saved_plain, held_plain, g_plain = forward(0)
    saved_ckpt, held_ckpt, g_ckpt = forward(8)
    assert saved_plain == steps * n * 8  # sin saves its input at every step
    assert saved_ckpt <= saved_plain / 4
    assert held_ckpt <= held_plain / 4
    np.testing.assert_allclose(g_ckpt, g_plain, rtol=1e-12)


def _run_plain(fs, x):
    for f in fs:
        x = f(x)
    return x


def test_func_checkpoint_composes_with_the_transforms():
    W = nd.tensor(W0.copy())

    def f(v):
        return (_block(W)(v) ** 2).sum()

    cf = nd.func.checkpoint(f)
    x = nd.tensor(X0.copy())
    t = nd.tensor([1.0, -0.5, 0.25, 2.0])
    pairs = [
        (nd.func.grad(cf)(x), nd.func.grad(f)(x)),
        (nd.func.jvp(cf, (x,), (t,))[1], nd.func.jvp(f, (x,), (t,))[1]),
        (nd.func.vjp(cf, x)[1](nd.tensor(1.0))[0], nd.func.vjp(f, x)[1](nd.tensor(1.0))[0]),
        (nd.func.vmap(cf)(nd.stack([x, t])), nd.func.vmap(f)(nd.stack([x, t]))),
        (nd.func.jacfwd(nd.func.grad(cf))(x), nd.func.jacfwd(nd.func.grad(f))(x)),
        (nd.func.vmap(nd.func.grad(cf))(nd.stack([x, t])),
         nd.func.vmap(nd.func.grad(f))(nd.stack([x, t]))),
    ]
    for got, want in pairs:
        np.testing.assert_allclose(_np(got), _np(want), rtol=1e-12)
    xr = nd.tensor(X0.copy(), requires_grad=True)
    cf(xr).backward()
    np.testing.assert_allclose(_np(xr.grad), _np(nd.func.grad(f)(x)), rtol=1e-12)


def test_nested_checkpoints_and_backward_inputs():
    W = nd.tensor(W0.copy(), requires_grad=True)
    inner = _block(W)

    def outer(v):
        return checkpoint(inner, nd.exp(v) * 0.5) * v

    x = nd.tensor(X0.copy(), requires_grad=True)
    checkpoint(outer, x).sum().backward(inputs=[W])
    assert x.grad is None  # only W was asked for
    r = nd.tensor(X0.copy(), requires_grad=True)
    Wr = nd.tensor(W0.copy(), requires_grad=True)
    (_block(Wr)(nd.exp(r) * 0.5) * r).sum().backward()
    np.testing.assert_allclose(_np(W.grad), _np(Wr.grad), rtol=1e-12)
    (gx,) = nd.autograd.grad(checkpoint(outer, x).sum(), x, create_graph=True)
    (hx,) = nd.autograd.grad(gx.sum(), x)
    (gr,) = nd.autograd.grad((_block(Wr)(nd.exp(r) * 0.5) * r).sum(), r, create_graph=True)
    (hr,) = nd.autograd.grad(gr.sum(), r)
    np.testing.assert_allclose(_np(gx), _np(r.grad), rtol=1e-12)
    np.testing.assert_allclose(_np(hx), _np(hr), rtol=1e-12)


def test_checkpoint_saves_memory_while_another_thread_is_inside_a_transform():
    # Levels are per thread (Note [Levels per thread]): a func.grad running in another thread
    # must not turn this thread's checkpoint into a plain call that keeps every saved value
    import threading
    from ndgrad.autograd.graph import memory_report
    rng = np.random.default_rng(7)
    n = 8
    X = rng.normal(size=n)
    Wt = nd.tensor(rng.normal(size=(n, n)))
    f = _block(Wt)

    def kept(run):
        """(bytes the graph keeps for backward, gradient of sum(run(x)))"""
        x = nd.tensor(X.copy(), requires_grad=True)
        loss = run(x).sum()
        total = memory_report(loss).total_bytes
        loss.backward()
        return total, _np(x.grad)

    plain_bytes, _ = kept(f)
    inside, release = threading.Event(), threading.Event()
    other = {}

    def in_other_thread():
        def g(z):
            other["inside"] = True
            inside.set()
            release.wait()  # (set by the main thread, also when it fails)
            return (nd.sin(z) ** 2).sum()
        try:
            other["grad"] = _np(nd.func.grad(g)(nd.tensor(0.3)))
        finally:
            inside.set()  # (a failure before g must not leave the main thread waiting)

    worker = threading.Thread(target=in_other_thread)
    worker.start()
    try:
        # no deadline: Note [No test depends on the machine's speed] in tests/support.py
        inside.wait()
        assert other.get("inside"), "the other thread failed before it was inside its transform"
        ckpt_bytes, g = kept(lambda x: checkpoint(f, x))
    finally:
        release.set()
        worker.join()
    # only the checkpoint's input is kept (to run it again), not what its ops save
    assert ckpt_bytes == X.nbytes < plain_bytes
    fd = fd_gradient(lambda z: _np(f(nd.tensor(z)).sum()), X)
    np.testing.assert_allclose(g, fd, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(other["grad"], np.sin(0.6), rtol=1e-12)  # d sin^2 = sin 2z


# -------------------------------------------------------------- checkpoints under transforms
# Note [Checkpoints under transforms]: both forms are the plain call inside a transform. The
# reentrant form was a custom Function whose backward reran the function on leaves copying
# the bottom tensors' requires_grad, which under func.grad is False: a zero gradient, silently
# (and forward-mode transforms asked it for a jvp rule).
XS = np.array([0.3, -1.2, 0.7])
YS = np.array([0.5, 2.0, -0.4])
TS = np.array([1.0, -0.5, 2.0])
CS = np.array([0.9, 0.1, -1.3])


def _t(a):
    return nd.tensor(np.array(a, dtype=float))


def _body(v):
    return nd.sin(v) * v


def _twice(k, v):
    return 2 * k(v)


def _checkpointed_cases(reentrant):
    """name -> (elementwise function of x made with checkpoint, its closed-form derivatives
    of orders 0..3 as functions of the NumPy x)."""
    def ck(fn, *a):
        return checkpoint(fn, *a, use_reentrant=reentrant)

    y, c = _t(YS), _t(CS)
    w = nd.tensor(YS.copy(), requires_grad=True)  # captured, requires grad
    h = (lambda v: v * np.sin(v), lambda v: v * np.cos(v) + np.sin(v),
         lambda v: 2 * np.cos(v) - v * np.sin(v), lambda v: -v * np.cos(v) - 3 * np.sin(v))
    return {
        "one input": (lambda x: ck(_body, x), h),
        "two inputs": (lambda x: ck(lambda a, b: nd.sin(a) * b + a * a, x, y),
                       (lambda v: np.sin(v) * YS + v * v, lambda v: np.cos(v) * YS + 2 * v,
                        lambda v: 2 - np.sin(v) * YS, lambda v: -np.cos(v) * YS)),
        "captured tensor that requires grad": (
            lambda x: ck(lambda a: nd.sin(a) * w, x),
            (lambda v: np.sin(v) * YS, lambda v: np.cos(v) * YS, lambda v: -np.sin(v) * YS,
             lambda v: -np.cos(v) * YS)),
        "the transform's value captured": (
            lambda x: ck(lambda a: nd.sin(a) * x * x, c),
            (lambda v: np.sin(CS) * v * v, lambda v: 2 * np.sin(CS) * v,
             lambda v: 2 * np.sin(CS) + 0 * v, lambda v: 0 * v)),
        "nested": (lambda x: ck(lambda a: ck(_body, a) * 2.0, x),
                   tuple(functools.partial(_twice, k) for k in h)),
    }


def _under_every_transform(fn, derivs):
    """(transform, run, closed form) for every transform of ndgrad.func and forward_ad."""
    H0, H1, H2, H3 = derivs
    X, T, XY = XS, TS, np.stack([XS, YS])

    def loss(x):
        return fn(x).sum()

    def dual():
        with nd.forward_ad.dual_level():
            d = nd.forward_ad.make_dual(_t(X), _t(T))
            return nd.forward_ad.unpack_dual(fn(d)).tangent

    f = nd.func
    return [
        ("grad", lambda: f.grad(loss)(_t(X)), H1(X)),
        ("vjp", lambda: f.vjp(fn, _t(X))[1](_t(T))[0], H1(X) * T),
        ("jvp", lambda: f.jvp(fn, (_t(X),), (_t(T),))[1], H1(X) * T),
        ("jacrev", lambda: f.jacrev(fn)(_t(X)), np.diag(H1(X))),
        ("jacfwd", lambda: f.jacfwd(fn)(_t(X)), np.diag(H1(X))),
        ("hessian", lambda: f.hessian(loss)(_t(X)), np.diag(H2(X))),
        ("vmap", lambda: f.vmap(fn)(_t(XY)), np.stack([H0(X), H0(YS)])),
        ("vmap(grad)", lambda: f.vmap(f.grad(loss))(_t(XY)), np.stack([H1(X), H1(YS)])),
        ("grad(grad)", lambda: f.grad(lambda x: f.grad(loss)(x).sum())(_t(X)), H2(X)),
        ("derivatives", lambda: nd.stack(f.derivatives(fn, _t(X), 3)),
         np.stack([H0(X), H1(X), H2(X), H3(X)])),
        ("jet", lambda: f.jet(fn, (_t(X),), ((_t(T), _t(0 * T)),))[1][1], H2(X) * T * T),
        ("laplacian", lambda: f.laplacian(loss)(_t(X)), H2(X).sum()),
        ("laplacian hessian", lambda: f.laplacian(loss, method="hessian")(_t(X)), H2(X).sum()),
        ("forward_ad dual level", dual, H1(X) * T),
    ]


@pytest.mark.parametrize("case", ["one input", "two inputs", "captured tensor that requires grad",
                                  "the transform's value captured", "nested"])
@pytest.mark.parametrize("use_reentrant", [False, True])
def test_checkpoint_under_every_transform_against_closed_forms(use_reentrant, case):
    fn, derivs = _checkpointed_cases(use_reentrant)[case]
    wrong = []
    for name, run, want in _under_every_transform(fn, derivs):
        try:
            got = _np(run())
        except Exception as e:  # collected, so that one run names every transform that fails
            wrong.append(f"{name}: {type(e).__name__}: {e}")
            continue
        if not np.allclose(got, want, rtol=1e-10, atol=1e-12):
            wrong.append(f"{name}: got {got.tolist()}, expected {np.asarray(want).tolist()}")
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("use_reentrant", [False, True])
def test_a_transform_of_a_checkpoint_under_an_outer_backward(use_reentrant):
    # func.grad inside a recorded computation: the gradient's dependence on a captured leaf
    # w reaches w.grad. d/dx sum(sin(x) w) = cos(x) w, so d/dw sum(cos(x) w) = cos(x)
    w = nd.tensor(YS.copy(), requires_grad=True)
    g = nd.func.grad(lambda x: checkpoint(lambda a: nd.sin(a) * w, x,
                                          use_reentrant=use_reentrant).sum())(_t(XS))
    np.testing.assert_allclose(_np(g), np.cos(XS) * YS, rtol=1e-12)
    g.sum().backward()
    np.testing.assert_allclose(_np(w.grad), np.cos(XS), rtol=1e-12)


def test_a_reentrant_checkpoint_of_inputs_without_grad_follows_captured_tensors():
    # none of the inputs requires grad: PyTorch's reentrant form gives the captured w no
    # gradient (with a warning); here it runs as the non-reentrant form, memory saving kept
    from ndgrad.autograd.graph import memory_report
    rng = np.random.default_rng(3)
    c0, w0 = rng.normal(size=8), rng.normal(size=8)
    w = nd.tensor(w0.copy(), requires_grad=True)
    c = nd.tensor(c0.copy())

    def f(a):
        return nd.tanh(nd.sin(a) * w) * w

    y = checkpoint(f, c, use_reentrant=True)
    assert y.requires_grad
    loss = y.sum() + w.sum()
    assert memory_report(loss).total_bytes == c0.nbytes  # the input, kept to run f again
    loss.backward()
    s = np.sin(c0)
    th = np.tanh(s * w0)
    np.testing.assert_allclose(_np(w.grad), (1 - th ** 2) * s * w0 + th + 1, rtol=1e-12)


def test_a_backward_pass_inside_a_checkpointed_function():
    # Note [A backward inside a checkpoint]: f computes a gradient itself (it raised an
    # internal AssertionError 'a recomputed value was unpacked'). f(v) = d/dv sum(sin(v^2))
    # = 2 v cos(v^2); d/dv sum f = 2 cos(v^2) - 4 v^2 sin(v^2); d2 = -12 v sin(v^2) - 8 v^3 cos(v^2)
    from ndgrad.autograd.graph import memory_report

    def f(v):
        (g,) = nd.autograd.grad(nd.sin(v * v).sum(), v, create_graph=True)
        return g

    X = XS
    first = 2 * np.cos(X ** 2) - 4 * X ** 2 * np.sin(X ** 2)
    x = nd.tensor(X.copy(), requires_grad=True)
    y = checkpoint(f, x)
    np.testing.assert_allclose(_np(y), 2 * X * np.cos(X ** 2), rtol=1e-12)
    assert memory_report(y.sum()).total_bytes == X.nbytes < memory_report(f(x).sum()).total_bytes
    (g,) = nd.autograd.grad(y.sum(), x, create_graph=True)
    (h,) = nd.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(_np(g), first, rtol=1e-12)
    np.testing.assert_allclose(_np(h), -12 * X * np.sin(X ** 2) - 8 * X ** 3 * np.cos(X ** 2),
                               rtol=1e-12)
    x2 = nd.tensor(X.copy(), requires_grad=True)
    checkpoint(lambda v: checkpoint(f, v) * 2.0, x2).sum().backward()  # nested
    np.testing.assert_allclose(_np(x2.grad), 2 * first, rtol=1e-12)
