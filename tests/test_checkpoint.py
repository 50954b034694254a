"""Checkpointing (ndgrad.utils.checkpoint, ndgrad.func.checkpoint): gradients equal to the
plain run's, and the memory kept for backward really drops."""

from __future__ import annotations

import gc
import tracemalloc

import numpy as np
import pytest

import ndgrad as nd
from ndgrad.autograd.graph import saved_tensors_hooks
from ndgrad.utils.checkpoint import checkpoint, checkpoint_sequential

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
            inside.set()
            release.wait(60)
            return (nd.sin(z) ** 2).sum()
        other["grad"] = _np(nd.func.grad(g)(nd.tensor(0.3)))

    worker = threading.Thread(target=in_other_thread)
    worker.start()
    try:
        assert inside.wait(60)
        ckpt_bytes, g = kept(lambda x: checkpoint(f, x))
    finally:
        release.set()
        worker.join(60)
    # only the checkpoint's input is kept (to run it again), not what its ops save
    assert ckpt_bytes == X.nbytes < plain_bytes
    h = 1e-6
    fd = np.array([(_np(f(nd.tensor(X + h * e)).sum()) - _np(f(nd.tensor(X - h * e)).sum()))
                   / (2 * h) for e in np.eye(n)])
    np.testing.assert_allclose(g, fd, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(other["grad"], np.sin(0.6), rtol=1e-12)  # d sin^2 = sin 2z
