"""Hypothesis strategies for property-testing differentiable code (optional dependency).

The centre is :class:`Drawer`, the object an op's ``sample`` function draws its inputs with
(see the "Sampling" section of :mod:`ndgrad.core.ops.registry`), and :func:`op_samples`, the
strategy that draws valid inputs for any registered op — what the project's own property
suite uses. Array values come from a NumPy generator seeded by a drawn integer: shapes and
parameters shrink, values stay fast to draw.

Requires ``hypothesis`` (``pip install "ndgrad[test]"``).
"""

from __future__ import annotations

import numpy as np

try:
    from hypothesis import reject as _reject
    from hypothesis import strategies as st
    from hypothesis.extra import numpy as hnp
except ImportError as exc:  # pragma: no cover - exercised only without hypothesis
    raise ImportError(
        "ndgrad.checks.strategies needs hypothesis: pip install hypothesis "
        '(or pip install "ndgrad[test]")'
    ) from exc

from ..core.ops.registry import (COMPARISON, ELEMENTWISE, REDUCTION, SCAN, VARIADIC)

__all__ = ["Drawer", "op_samples", "tensors", "arrays"]


class Drawer:
    """Draws shapes, arrays and parameters for an op's sample function."""

    def __init__(self, draw, dtype=np.float64, max_side=4, max_dims=3):
        self._draw = draw
        self.dtype = np.dtype(dtype)
        self._max_side = max_side
        self._max_dims = max_dims

    # -- shapes
    def shape(self, min_dims=0, max_dims=None, min_side=1, max_side=None):
        max_dims = self._max_dims if max_dims is None else max_dims
        max_side = self._max_side if max_side is None else max_side
        return self._draw(hnp.array_shapes(min_dims=min_dims, max_dims=max_dims,
                                           min_side=min_side, max_side=max_side))

    def shapes(self, n, min_dims=0, max_dims=None, min_side=1, max_side=None):
        max_dims = self._max_dims if max_dims is None else max_dims
        max_side = self._max_side if max_side is None else max_side
        r = self._draw(hnp.mutually_broadcastable_shapes(
            num_shapes=n, min_dims=min_dims, max_dims=max_dims, min_side=min_side,
            max_side=max_side))
        return list(r.input_shapes)

    # -- values
    def _rng(self):
        return np.random.default_rng(self._draw(st.integers(0, 2 ** 32 - 1)))

    def array(self, shape, low=-2.0, high=2.0, dtype=None):
        dtype = self.dtype if dtype is None else np.dtype(dtype)
        rng = self._rng()
        a = rng.uniform(low, high, size=shape)
        if dtype.kind == "c":
            a = a + 1j * rng.uniform(low, high, size=shape)
        return np.asarray(a, dtype=dtype)

    def int_array(self, shape, low, high):
        return self._rng().integers(low, high, size=shape, endpoint=True)

    def bool_array(self, shape):
        return self._rng().random(size=shape) < 0.5

    def integers(self, low, high):
        return self._draw(st.integers(low, high))

    def choice(self, seq):
        return self._draw(st.sampled_from(list(seq)))

    def boolean(self):
        return self._draw(st.booleans())

    def axis(self, ndim, none=True):
        options = list(range(-ndim, ndim)) if ndim else [0, -1]
        if none:
            options.append(None)
        return self.choice(options)

    def axes(self, ndim):
        if ndim == 0:
            return ()
        chosen = self._draw(st.lists(st.integers(0, ndim - 1), unique=True, max_size=ndim))
        return tuple(a - ndim if self.boolean() else a for a in chosen)

    def permutation(self, n):
        return tuple(self._draw(st.permutations(list(range(n)))))

    def reject(self):
        _reject()

    # -- matrices (for linear algebra: inputs where the derivative exists and is stable)
    def _unitary(self, rng, shape, n):
        a = rng.standard_normal(tuple(shape) + (n, n))
        if self.dtype.kind == "c":
            a = a + 1j * rng.standard_normal(tuple(shape) + (n, n))
        q, r = np.linalg.qr(a)
        d = np.diagonal(r, axis1=-2, axis2=-1)
        return q * (d / np.abs(d))[..., None, :]  # a Haar-distributed unitary

    def _spectrum(self, rng, shape, n, low, high, gap):
        # n values in [low, high], at least `gap` apart (sorted), per batch element
        span = high - low - gap * (n - 1)
        if span < 0:
            raise ValueError(f"cannot fit {n} values {gap} apart in [{low}, {high}]")
        u = np.sort(rng.uniform(0.0, span, size=tuple(shape) + (n,)), axis=-1)
        return low + u + gap * np.arange(n)

    def matrix(self, shape, cond=10.0, dtype=None):
        """A well-conditioned matrix of ``shape`` (``(..., m, n)``): singular values in
        ``[1, cond]`` scaled to about 1, at least 0.1 apart relative to that range."""
        dtype = self.dtype if dtype is None else np.dtype(dtype)
        *batch, m, n = shape
        rng = self._rng()
        k = min(m, n)
        s = self._spectrum(rng, batch, k, 1.0, cond, min(0.1 * (cond - 1.0) / max(k, 1), 1.0))
        u = self._unitary(rng, batch, m)[..., :k]
        v = self._unitary(rng, batch, n)[..., :k]
        a = (u * s[..., None, :]) @ np.conj(np.swapaxes(v, -1, -2))
        return np.asarray(a / np.sqrt(cond), dtype=dtype)

    def spd_matrix(self, shape, low=0.5, high=3.0, dtype=None):
        """A symmetric (Hermitian for complex) positive definite matrix of ``shape``
        ``(..., n, n)`` with eigenvalues in ``[low, high]``."""
        return self.hermitian_matrix(shape, low, high, gap=0.0, dtype=dtype)

    def hermitian_matrix(self, shape, low=-2.0, high=2.0, gap=0.3, dtype=None):
        """A symmetric (Hermitian) matrix whose eigenvalues lie in ``[low, high]`` at least
        ``gap`` apart (eigenvector derivatives grow as 1 / gap)."""
        dtype = self.dtype if dtype is None else np.dtype(dtype)
        *batch, n, n2 = shape
        if n != n2:
            raise ValueError(f"a square shape is needed, got {shape}")
        rng = self._rng()
        lam = self._spectrum(rng, batch, n, low, high, gap)
        q = self._unitary(rng, batch, n)
        a = (q * lam[..., None, :]) @ np.conj(np.swapaxes(q, -1, -2))
        a = (a + np.conj(np.swapaxes(a, -1, -2))) / 2
        return np.asarray(a, dtype=dtype)


def _default_sample(op, d):
    """Samplers that follow from an op's kind (Note: see registry "Sampling")."""
    dom = op.domain
    kind = op.kind
    if kind in (ELEMENTWISE, COMPARISON) and op.nin != VARIADIC:
        shapes = d.shapes(op.nin)
        args = tuple(d.array(s, *dom.range(i)) for i, s in enumerate(shapes))
        return args, {}
    if kind == REDUCTION and op.nin == 1:
        shape = d.shape()
        x = d.array(shape, *dom.range(0))
        kw = {"axis": d.choice([None] + ([d.axis(len(shape), none=False), d.axes(len(shape))]
                                         if shape else [])),
              "keepdims": d.boolean()}
        return (x,), kw
    if kind == SCAN and op.nin == 1:
        shape = d.shape(min_dims=1)
        x = d.array(shape, *dom.range(0))
        return (x,), {"axis": d.axis(len(shape), none=False)}
    raise NotImplementedError(
        f"op {op.name!r} (kind {kind!r}) declares no sampler: add `sample=` to its defop "
        "(see the Sampling section of ndgrad.core.ops.registry)")


@st.composite
def op_samples(draw, op, complex=False):
    """Strategy: ``(args, kwargs)`` of valid inputs for registered op (or composite) ``op``.

    Draws complex128 inputs when ``complex`` is True (for ops whose domain allows it).
    """
    d = Drawer(draw, np.complex128 if complex else np.float64)
    if op.sample is not None:
        args, kwargs = op.sample(d)
    else:
        args, kwargs = _default_sample(op, d)
    valid = op.domain.valid
    if valid is not None:
        arrays = [a for a in args[:_nin(op, args)]]
        if not np.all(valid(*arrays, **kwargs) if _accepts_kwargs(valid) else valid(*arrays)):
            _reject()
    return tuple(args), dict(kwargs)


def _nin(op, args):
    return len(args) if op.nin == VARIADIC else op.nin


def _accepts_kwargs(fn):
    import inspect
    try:
        return any(p.kind == p.VAR_KEYWORD for p in inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):  # pragma: no cover
        return False


def arrays(shape=None, dtype=np.float64, low=-2.0, high=2.0):
    """Strategy for NumPy arrays of ``shape`` (drawn when None) with values in [low, high]."""
    @st.composite
    def _arrays(draw):
        d = Drawer(draw, dtype)
        s = d.shape() if shape is None else shape
        return d.array(s, low, high)
    return _arrays()


def tensors(shape=None, dtype=np.float64, low=-2.0, high=2.0, requires_grad=False):
    """Strategy for ndgrad tensors (values uniform in [low, high]).

    Examples
    --------
    >>> import numpy as np
    >>> from hypothesis import given, settings
    >>> import ndgrad
    >>> from ndgrad.checks.strategies import tensors
    >>> @settings(max_examples=5)
    ... @given(tensors(shape=(3,), requires_grad=True))
    ... def test_square_grad(x):
    ...     (g,) = ndgrad.autograd.grad((x * x).sum(), x)
    ...     np.testing.assert_allclose(g.numpy(), 2 * x.detach().numpy())
    >>> test_square_grad()
    """
    from ..core.creation import tensor
    return arrays(shape, dtype, low, high).map(
        lambda a: tensor(a, requires_grad=requires_grad))
