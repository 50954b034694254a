"""Helpers the tests share: conversions and comparisons that work on every device (Note
[Devices in the test suite] in tests/conftest.py). Import them from here; no test file
defines its own."""

from __future__ import annotations

from pathlib import Path

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


def random_like(rng, a, dtype=None):
    """Standard normal values with the shape of ``a`` (complex ones for a complex dtype)."""
    shape = np.shape(a)
    dtype = np.dtype(dtype if dtype is not None else a.dtype)
    r = rng.standard_normal(shape)
    if dtype.kind == "c":
        r = r + 1j * rng.standard_normal(shape)
    return np.asarray(r, dtype=dtype)


# --------------------------------------------------------------------- finite differences
# Note [Complex derivatives from finite differences]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Complex numbers follow PyTorch's convention: for ``f`` with Jacobians ``D_re = df/d(re x)``
# and ``D_im = df/d(im x)`` (central differences), the jvp is ``D_re re(t) + D_im im(t)`` and
# the vjp of a cotangent ``c`` is ``re(sum(conj(c) D_re)) + 1j re(sum(conj(c) D_im))``: the
# gradient of the real pairing ``re <c, f(x)>`` with respect to ``re x`` plus ``1j`` times
# that with respect to ``im x``. :class:`Linearization` computes both from central
# differences along every real coordinate; every finite-difference reference of the tests
# comes from :func:`fd_directional`, :class:`Linearization` or the helpers below them.
EPS = 1e-6


def fd_directional(fun, xs, ts, eps=EPS):
    """Central difference of ``fun`` (NumPy arrays -> tuple of NumPy arrays) at ``xs`` along
    the tangents ``ts`` (None: that input held fixed)."""
    def at(s):
        return fun([x if t is None else x + s * t for x, t in zip(xs, ts)])
    plus, minus = at(eps), at(-eps)
    return tuple((np.asarray(p) - np.asarray(m)) / (2 * eps) for p, m in zip(plus, minus))


def _columns(cols, out_shape, in_shape, dtype):
    """Derivative columns (one per entry of the input) as an array ``out_shape + in_shape``."""
    arr = np.stack(cols, axis=-1) if cols else np.zeros(tuple(out_shape) + (0,), dtype)
    return arr.reshape(tuple(out_shape) + tuple(in_shape))


def _contract(d, t, leading=False):
    """``sum(d * t)`` over the trailing (``leading``: the leading) dimensions of ``d`` that
    ``t`` spans."""
    n = np.ndim(t)
    if leading:
        return np.tensordot(t, d, axes=n) if n else t * d
    return np.tensordot(d, t, axes=n) if n else d * t


class Linearization:
    """The derivative of ``fun`` (NumPy arrays -> tuple of NumPy arrays) at ``xs`` from
    central differences along every real coordinate: ``D[k][i] = (re, im)``, the derivatives
    of output ``k`` along the real and (complex inputs) imaginary parts of input ``i``, each
    of shape ``out_k.shape + x_i.shape``. From them come the references of every first-order
    transform, with PyTorch's complex convention (Note [Complex derivatives from finite
    differences] above)."""

    def __init__(self, fun, xs, eps=EPS):
        self.xs = [np.asarray(x) for x in xs]
        self.outs = tuple(np.asarray(o) for o in fun(self.xs))
        self.D = [[None] * len(self.xs) for _ in self.outs]
        for i, x in enumerate(self.xs):
            units = [1.0, 1j] if x.dtype.kind == "c" else [1.0]
            per_unit = []
            for unit in units:
                cols = [[] for _ in self.outs]  # per output, one column per entry of x
                for j in range(x.size):
                    e = np.zeros(x.shape, dtype=x.dtype)
                    e.flat[j] = unit
                    ts = [None] * len(self.xs)
                    ts[i] = e
                    for k, d in enumerate(fd_directional(fun, self.xs, ts, eps)):
                        cols[k].append(d)
                per_unit.append([_columns(c, o.shape, x.shape, o.dtype)
                                 for c, o in zip(cols, self.outs)])
            for k in range(len(self.outs)):
                self.D[k][i] = (per_unit[0][k], per_unit[1][k] if len(units) == 2 else None)

    def jvp(self, ts):
        """The output tangents for input tangents ``ts`` (None: zero)."""
        res = []
        for Dk, o in zip(self.D, self.outs):
            r = np.zeros(o.shape, dtype=o.dtype)
            for (dre, dim), t in zip(Dk, ts):
                if t is None:
                    continue
                r = r + _contract(dre, np.real(t))
                if dim is not None:
                    r = r + _contract(dim, np.imag(t))
            res.append(r)
        return tuple(res)

    def vjp(self, cs):
        """The input cotangents for output cotangents ``cs`` (None: zero)."""
        res = []
        for i, x in enumerate(self.xs):
            r = np.zeros(x.shape, dtype=x.dtype)
            for Dk, c in zip(self.D, cs):
                if c is None:
                    continue
                dre, dim = Dk[i]
                cc = np.conj(np.asarray(c))
                r = r + np.real(_contract(dre, cc, leading=True))
                if dim is not None:
                    r = r + 1j * np.real(_contract(dim, cc, leading=True))
            res.append(r)
        return res

    def jacfwd(self):
        """``[k][i]``: the Jacobian ``jacfwd`` gives, columns pushed forward along the real
        unit vectors of each input."""
        return [[dre for dre, _ in Dk] for Dk in self.D]

    def jacrev(self):
        """``[k][i]``: the Jacobian ``jacrev`` gives, rows pulled back from the real unit
        vectors of each output (``vjp(e_k)``)."""
        return [[np.real(dre) if dim is None else np.real(dre) + 1j * np.real(dim)
                 for dre, dim in Dk] for Dk in self.D]


def _floating(x):
    """``x`` as a NumPy array of at least float64 (a complex one stays complex)."""
    x = np.asarray(x)
    return x.astype(np.result_type(x.dtype, np.float64), copy=False)


def fd_derivative(f, x, t=1.0, eps=EPS, points=3):
    """The derivative of ``f`` (a NumPy function of one array or number) at ``x`` along ``t``
    by a central difference: ``points=3``, ``(f(x + eps t) - f(x - eps t)) / (2 eps)`` (error
    O(eps^2)), or ``points=5``, the five-point stencil (O(eps^4)). With ``t = 1`` and an
    elementwise ``f``, the elementwise derivative; ``eps`` may then be an array of steps, one
    per entry."""
    x = _floating(x)

    def at(s):
        return np.asarray(f(x + s * t))
    if points == 3:
        return (at(eps) - at(-eps)) / (2 * eps)
    if points == 5:
        return (8 * (at(eps) - at(-eps)) - (at(2 * eps) - at(-2 * eps))) / (12 * eps)
    raise ValueError(f"fd_derivative: points is 3 or 5, not {points!r}")


def _unit_vectors(x, unit=1.0):
    """The unit vectors of ``x``'s entries, each of ``x``'s shape (``unit`` at one entry)."""
    for j in range(x.size):
        e = np.zeros(x.shape, dtype=x.dtype)
        e.flat[j] = unit
        yield e


def fd_jacobian(f, x, eps=EPS):
    """The Jacobian of ``f`` (a NumPy function of one real array) at ``x`` by central
    differences, of shape ``f(x).shape + x.shape`` and ``f``'s dtype (a complex ``f`` of a
    real ``x``: its derivatives along the real axes). Several or complex inputs:
    :class:`Linearization`; a real scalar ``f`` of a complex ``x``: :func:`fd_gradient`."""
    x = _floating(x)
    if x.dtype.kind == "c":
        raise TypeError("fd_jacobian: x is complex; use Linearization or fd_gradient")
    cols = [fd_derivative(f, x, e, eps) for e in _unit_vectors(x)]
    if not cols:  # an empty x: f's shape from f itself
        return np.zeros(np.shape(f(x)) + x.shape)
    return np.stack(cols, axis=-1).reshape(cols[0].shape + x.shape)


def fd_gradient(f, x, eps=EPS):
    """The gradient of the real scalar NumPy function ``f`` at the real or complex array
    ``x`` by central differences, in PyTorch's convention (``d/d re + 1j d/d im``; Note
    [Complex derivatives from finite differences])."""
    x = _floating(x)
    g = np.zeros(x.shape, dtype=x.dtype)
    for unit in (1.0, 1j) if x.dtype.kind == "c" else (1.0,):
        for j, e in enumerate(_unit_vectors(x, unit)):
            g.flat[j] += unit * fd_derivative(f, x, e, eps)
    return g


def fd_hessian(f, x, h=1e-4):
    """The Hessian of the real scalar NumPy function ``f`` of a real vector ``x`` by central
    second differences ``(f(x + h e_i + h e_j) - f(x + h e_i - h e_j) - f(x - h e_i + h e_j)
    + f(x - h e_i - h e_j)) / (4 h^2)`` (error O(h^2))."""
    x = np.asarray(x, dtype=np.float64)
    n = x.size
    H = np.zeros((n, n))
    E = np.eye(n).reshape((n,) + x.shape) * h
    for i in range(n):
        for j in range(n):
            H[i, j] = (f(x + E[i] + E[j]) - f(x + E[i] - E[j]) - f(x - E[i] + E[j])
                       + f(x - E[i] - E[j])) / (4 * h * h)
    return H


# ---------------------------------------------------------------------------- comparisons
def leaves(tree):
    """The arrays/Tensors of a nested tuple/list, in order."""
    if isinstance(tree, (tuple, list)):
        return [x for t in tree for x in leaves(t)]
    return [tree]


def assert_close(got, expected, what, rtol=1e-4, atol=1e-6, equal_nan=False):
    """``got`` (Tensors, nested) equals ``expected`` (arrays, nested the same way) in
    structure, shape and value; ``what`` names the check in the failure message."""
    got, expected = leaves(got), leaves(expected)
    assert len(got) == len(expected), \
        f"{what}: {len(got)} results, the reference has {len(expected)}"
    for n, (g, e) in enumerate(zip(got, expected)):
        g, e = host(g), np.asarray(e)
        where = f"{what}, result {n}" if len(got) > 1 else what
        assert g.shape == e.shape, f"{where}: shape {g.shape} != reference shape {e.shape}"
        np.testing.assert_allclose(g, e, rtol=rtol, atol=atol, equal_nan=equal_nan,
                                   err_msg=where)


# ------------------------------------------------------------------------------ waiting
# Note [No test depends on the machine's speed]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A test waits for a subprocess, a thread, an event or a cluster as long as it takes: a slow or
# busy machine must not fail a correct build (the Sphinx build once missed a 600 s timeout on
# CI). Where a wait needs a bound at all (so that a hang ends the run with a message instead of
# blocking it forever), the bound is HANG_S, an hour, far beyond any honest run; no test
# asserts a duration, or a time against a budget. Times measured by the code under test are
# compared only with each other or with an interval that encloses them.
HANG_S = 3600


# ------------------------------------------------------------------------------ the gallery
GALLERY = Path(__file__).resolve().parents[1] / "examples" / "gallery"


def run_example(name):
    """Run ``examples/gallery/<name>.py`` as ``python`` would, at the small sizes
    (``NDGRAD_EXAMPLE_SMALL=1``) and with Matplotlib drawing off screen, and return its
    module globals, whose numbers the gallery's tests check (tests/gallery/)."""
    import os
    import runpy

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    previous = os.environ.get("NDGRAD_EXAMPLE_SMALL")
    os.environ["NDGRAD_EXAMPLE_SMALL"] = "1"
    try:
        return runpy.run_path(str(GALLERY / f"{name}.py"), run_name="__main__")
    finally:
        plt.close("all")
        if previous is None:
            del os.environ["NDGRAD_EXAMPLE_SMALL"]
        else:
            os.environ["NDGRAD_EXAMPLE_SMALL"] = previous
