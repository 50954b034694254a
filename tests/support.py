"""Helpers the tests share: conversions and comparisons that work on every device (Note
[Devices in the test suite] in tests/conftest.py). Import them from here; no test file
defines its own."""

from __future__ import annotations

import numpy as np

import ndgrad as nd


def host(x):
    """``x`` (a Tensor on any device, an array, a number, or a tuple/list of them) as NumPy,
    for comparison with a NumPy reference."""
    if isinstance(x, nd.Tensor):
        return x.detach().cpu().numpy()
    if isinstance(x, (tuple, list)):
        return type(x)(host(e) for e in x)
    backend = nd.core.backend.backend_of(x) if hasattr(x, "dtype") else None
    if backend is not None and backend is not nd.core.backend.NUMPY:
        return backend.to_numpy(x)
    return np.asarray(x)


def val(t):
    """The values of the Tensor ``t`` as NumPy (detached, on the host); anything else than a
    Tensor fails the test (a function that should return a Tensor did not)."""
    assert isinstance(t, nd.Tensor), f"expected a Tensor, got {type(t).__name__}"
    return t.detach().cpu().numpy()


def close(actual, expected, **kw):
    """``np.testing.assert_allclose`` through the host, ``rtol=1e-12, atol=1e-12`` unless
    given: ``actual`` and ``expected`` may be Tensors on any device, arrays or numbers."""
    kw.setdefault("rtol", 1e-12)
    kw.setdefault("atol", 1e-12)
    np.testing.assert_allclose(host(actual), host(expected), **kw)


def on_device(kwargs):
    """An op sample's keyword arguments with its float/complex NumPy arrays (such as
    ``special.logsumexp``'s ``b``) made tensors on the default device, where that is not the
    CPU: a GPU op refuses host arrays, as CuPy does. Index arrays stay (they may be host)."""
    if nd.get_default_device() == "cpu":
        return kwargs
    return {k: nd.tensor(v, dtype=v.dtype)
            if isinstance(v, np.ndarray) and v.dtype.kind in "fc" else v
            for k, v in kwargs.items()}


def cube_function(vjp_scale=1.0, jvp_scale=1.0, second_order=True):
    """A custom Function for x**3 with its own backward and jvp, the rules scaled by
    ``vjp_scale``/``jvp_scale`` (1.0: right); ``second_order=False``: a backward whose own
    derivative is wrong (it treats x as a constant). For tests that must catch wrong rules."""
    class Cube(nd.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            ctx.save_for_forward(x)
            return x ** 3

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            xs = x if second_order else x.detach()
            return g * vjp_scale * 3 * xs ** 2

        @staticmethod
        def jvp(ctx, t):
            (x,) = ctx.saved_tensors
            return t * jvp_scale * 3 * x ** 2
    return Cube


Cube = cube_function()  # x^3 with right rules: the custom Function the transform tests share


def restart_module_generators(module, states):
    """Put every ``numpy.random.Generator`` a test module holds at module level (``RNG =
    np.random.default_rng(7)``) back to the state it had when the module was loaded, before
    each test (Note [Test data does not depend on test order] in tests/conftest.py).
    ``states`` remembers those states, per module and name, from the first call."""
    for name, g in vars(module).items():
        if isinstance(g, np.random.Generator):
            key = (module.__name__, name)
            state = states.get(key)
            if state is None:
                states[key] = g.bit_generator.state  # (a fresh dict, a copy)
            else:
                g.bit_generator.state = state


def loop_messages(seen):
    """The texts of vmap's loop warnings among the recorded warnings ``seen``."""
    return [str(w.message) for w in seen if "once per batch element" in str(w.message)]
