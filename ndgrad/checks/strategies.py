"""Hypothesis strategies for property-testing differentiable code (optional dependency).

Use them to property-test your own functions and :class:`~ndgrad.autograd.Function`\\ s the
way ndgrad tests its own ops: draw inputs with a strategy, differentiate, and compare with an
independent reference (often :func:`ndgrad.checks.gradcheck`).

Tensors and arrays
    :func:`tensors`, :func:`arrays`: any shape (given, a strategy, or drawn), dtype (NumPy,
    ``ndgrad.float32``..., or a strategy of dtypes), values (a range, or a strategy of
    scalars) and ``requires_grad``; ``avoid=`` keeps values away from the kinks of non-smooth
    functions. :func:`broadcastable_shapes` and :func:`broadcastable_tensors` draw inputs for
    broadcasting functions.
Values away from kinks
    :func:`away_from_kinks`: a strategy of scalars at least ``margin`` from given points
    (``0`` for ``abs`` / ``relu``, ``"integers"`` for ``floor``, ...), for ``elements=``.
Matrices
    :func:`well_conditioned_matrices`, :func:`spd_matrices` (symmetric positive definite) and
    :func:`symmetric_matrices` (Hermitian for complex dtypes, eigenvalues well separated):
    inputs where linear-algebra derivatives exist and finite differences are accurate.
Registered ops
    :func:`op_samples` draws valid ``(args, kwargs)`` for any registered op or composite, by
    object or by name (:func:`registered_ops` lists the names); it is what the project's own
    property suite uses. :class:`Drawer` is the object an op's ``sample`` function draws its
    inputs with (see the "Sampling" section of :mod:`ndgrad.core.ops.registry`).

Array values are drawn from a NumPy generator seeded by a drawn integer unless a strategy of
elements is given: shapes, dtypes and parameters shrink (and the seed shrinks to 0), values
stay fast to draw. Defaults are small (at most 3 dimensions of at most 4 elements).

Requires ``hypothesis`` (``pip install "ndgrad[test]"``).
"""

from __future__ import annotations

import difflib
import math
import numbers

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

__all__ = [
    "tensors", "arrays", "broadcastable_shapes", "broadcastable_tensors",
    "away_from_kinks", "well_conditioned_matrices", "spd_matrices", "symmetric_matrices",
    "op_samples", "registered_ops", "Drawer",
]


class Drawer:
    """Draws shapes, arrays and parameters for an op's sample function.

    ``Drawer(draw, dtype)`` wraps hypothesis' ``draw`` (inside an ``@st.composite``); an op's
    ``sample(d)`` receives one from :func:`op_samples`. Its methods are listed in the
    "Sampling" section of :mod:`ndgrad.core.ops.registry`; the public strategies of this
    module are built on them.

    Examples
    --------
    >>> import numpy as np
    >>> from hypothesis import given, settings, strategies as st
    >>> from ndgrad.checks.strategies import Drawer
    >>> @st.composite
    ... def matrix_and_vector(draw):
    ...     d = Drawer(draw)
    ...     n = d.integers(1, 3)
    ...     return d.matrix((n, n)), d.array((n,))
    >>> @settings(max_examples=5)
    ... @given(matrix_and_vector())
    ... def test_shapes(pair):
    ...     a, b = pair
    ...     assert a.shape == (b.size, b.size)
    >>> test_shapes()
    """

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


def _resolve_op(op):
    """An op object from itself or its (qualified or alias) name."""
    if not isinstance(op, str):
        return op
    from ..core import ops as _ops  # noqa: F401  (importing it fills the registry)
    from ..core.ops.registry import ALIASES, COMPOSITES, REGISTRY
    name = ALIASES.get(op, op)
    entry = REGISTRY.get(name) or COMPOSITES.get(name)
    if entry is None:
        close = difflib.get_close_matches(op, registered_ops() + sorted(ALIASES), n=3)
        hint = f"; did you mean {', '.join(map(repr, close))}?" if close else ""
        raise ValueError(f"no registered op or composite named {op!r}{hint} "
                         "(registered_ops() lists the names)")
    return entry


def registered_ops(composites=True):
    """The qualified names of the registered ops (and composites), sorted.

    These are the names :func:`op_samples` accepts: ``"sin"``, ``"matmul"``, ``"fft.fftn"``,
    ``"linalg.solve"``... (aliases such as ``"arcsin"`` are accepted too, but not listed).

    Parameters
    ----------
    composites : bool, default True
        Include the composites (functions built from primitives, e.g. ``"transpose"``).

    Returns
    -------
    list of str

    Examples
    --------
    >>> from ndgrad.checks.strategies import registered_ops
    >>> "sin" in registered_ops() and "matmul" in registered_ops()
    True
    >>> "transpose" in registered_ops(composites=False)
    False
    """
    from ..core import ops as _ops  # noqa: F401  (importing it fills the registry)
    from ..core.ops.registry import COMPOSITES, REGISTRY
    names = set(REGISTRY)
    if composites:
        names |= set(COMPOSITES)
    return sorted(names)


def op_samples(op, complex=False, *, max_side=4, max_dims=3):
    """Strategy: ``(args, kwargs)`` of valid inputs for a registered op or composite.

    The inputs come from the op's own declaration (its ``sample`` function, else its
    ``domain`` and ``kind``), and draws its ``domain.valid`` rejects are discarded. This is
    what the project's property suite draws; use it to test code built on an op, or a
    re-implementation of one, against ndgrad's.

    Parameters
    ----------
    op : str or op
        The op: a qualified name (``"sin"``, ``"linalg.solve"``, ``"fft.fftn"``; an alias such
        as ``"arcsin"`` also works; :func:`registered_ops` lists them) or an entry of
        ``ndgrad.core.ops.REGISTRY`` / ``COMPOSITES``.
    complex : bool, default False
        Draw complex128 inputs instead of float64 (for ops whose ``domain.complex`` is True).
    max_side, max_dims : int
        The largest side and number of dimensions of the shapes the op's sampler draws
        without bounds of its own (``Drawer.shape()`` / ``Drawer.shapes()``): smaller inputs
        for costly checks such as full Hessians. Bounds a sampler states itself are kept.

    Returns
    -------
    SearchStrategy of (tuple, dict)
        ``args[:nin]`` are the array inputs (NumPy arrays or Python scalars), ``args[nin:]``
        extra positional parameters, ``kwargs`` the keyword parameters.

    Raises
    ------
    ValueError
        For an unknown op name (with the closest registered names).

    Examples
    --------
    >>> import numpy as np
    >>> from hypothesis import given, settings
    >>> import ndgrad
    >>> from ndgrad.checks.strategies import op_samples
    >>> @settings(max_examples=5)
    ... @given(op_samples("log"))
    ... def test_exp_inverts_log(sample):
    ...     (x,), kwargs = sample
    ...     assert np.all(x > 0)
    ...     y = ndgrad.exp(ndgrad.log(ndgrad.tensor(x), **kwargs))
    ...     np.testing.assert_allclose(y.numpy(), x)
    >>> test_exp_inverts_log()
    """
    return _op_samples(_resolve_op(op), bool(complex), int(max_side), int(max_dims))


@st.composite
def _op_samples(draw, op, complex=False, max_side=4, max_dims=3):
    d = Drawer(draw, np.complex128 if complex else np.float64, max_side=max_side,
               max_dims=max_dims)
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


# ---------------------------------------------------------------------------- helpers

def _is_strategy(x):
    return isinstance(x, st.SearchStrategy)


def _as_dtype(dtype):
    try:
        return np.dtype(dtype)
    except TypeError as exc:
        raise TypeError("dtype must be a NumPy dtype, an ndgrad dtype (ndgrad.float32, ...) or "
                        f"a hypothesis strategy of dtypes, got {dtype!r}") from exc


def _check_grad_dtype(dtype, requires_grad):
    if requires_grad and dtype.kind not in "fc":
        raise ValueError(f"requires_grad=True needs a floating point or complex dtype, got "
                         f"{dtype}: only such tensors can require gradients")


def _check_range(low, high):
    low, high = float(low), float(high)
    if not (math.isfinite(low) and math.isfinite(high)) or low > high:
        raise ValueError(f"need finite low <= high, got low={low}, high={high}")
    return low, high


def _draw_dtype(draw, dtype):
    return _as_dtype(draw(dtype)) if _is_strategy(dtype) else dtype


def _check_shape(shape, what="shape"):
    if isinstance(shape, numbers.Integral):
        shape = (int(shape),)
    try:
        shape = tuple(int(n) for n in shape)
    except TypeError as exc:
        raise TypeError(f"{what} must be a tuple of ints, a hypothesis strategy of shapes or "
                        f"None, got {shape!r}") from exc
    if any(n < 0 for n in shape):
        raise ValueError(f"{what} has a negative size: {shape}")
    return shape


def _to_tensor(a, requires_grad, device):
    from ..core.creation import tensor
    return tensor(a, dtype=a.dtype, device=device, requires_grad=requires_grad)


def _float_width(dtype):
    size = dtype.itemsize // (2 if dtype.kind == "c" else 1)
    return {2: 16, 4: 32}.get(size, 64)


def _float_bounds(low, high, width):
    """[low, high] shrunk inwards to values exactly representable at ``width`` bits."""
    if width == 64:
        return low, high
    ftype = {16: np.float16, 32: np.float32}[width]
    lo, hi = ftype(low), ftype(high)
    if float(lo) < low:
        lo = np.nextafter(lo, ftype(np.inf))
    if float(hi) > high:
        hi = np.nextafter(hi, ftype(-np.inf))
    return float(lo), float(hi)


class _Kinks:
    """Points that drawn values keep ``margin`` away from: a finite set, or every integer
    (``"integers"``) or every half-integer (``"half-integers"``)."""

    def __init__(self, points, margin):
        margin = float(margin)
        if not (math.isfinite(margin) and margin > 0):
            raise ValueError(f"margin must be a positive number, got {margin}")
        self.margin = margin
        self.offset = None
        self.points = None
        if isinstance(points, str):
            key = points.lower().replace("_", "-")
            if key not in ("integers", "half-integers"):
                raise ValueError(f"points must be numbers, 'integers' or 'half-integers', got "
                                 f"{points!r}")
            if margin >= 0.5:
                raise ValueError(f"kinks at all {key} are 1 apart: margin must be < 0.5, got "
                                 f"{margin}")
            self.offset = 0.0 if key == "integers" else 0.5
            return
        p = np.asarray(points, dtype=np.float64).ravel()
        if p.dtype.kind != "f" or not np.all(np.isfinite(p)):
            raise ValueError(f"kink points must be finite real numbers, got {points!r}")
        p = np.unique(p)
        if p.size > 1 and np.min(np.diff(p)) <= 2 * margin:
            raise ValueError(f"kink points closer than 2 * margin = {2 * margin} leave no room "
                             f"between them: {points!r}")
        self.points = p

    def _nearest(self, x):
        if self.offset is not None:
            return np.floor(x - self.offset + 0.5) + self.offset
        p = self.points
        i = np.searchsorted(p, x)
        lo = p[np.clip(i - 1, 0, p.size - 1)]
        hi = p[np.clip(i, 0, p.size - 1)]
        return np.where(np.abs(x - lo) <= np.abs(x - hi), lo, hi)

    def _push_real(self, x, dtype, low, high):
        if self.points is not None and self.points.size == 0:
            return x
        with np.errstate(invalid="ignore"):
            k = self._nearest(x)
            dist = x - k
            # a little over margin, so that rounding to `dtype` keeps the distance >= margin
            m = self.margin + 4 * np.finfo(dtype).eps * np.maximum(1.0, np.abs(k))
            near = np.abs(dist) < m
        if not np.any(near):
            return x
        s = np.where(dist < 0, -1.0, 1.0)
        y, other = k + s * m, k - s * m
        out = (y > high) | (y < low)
        stuck = near & out & ((other > high) | (other < low))
        if np.any(stuck):
            raise ValueError(f"no value in [{low}, {high}] is at least {self.margin} from the "
                             f"kink at {float(np.asarray(k)[stuck].flat[0])}")
        return np.where(near, np.where(out, other, y), x)

    def push(self, x, dtype, low=-np.inf, high=np.inf):
        """``x`` (array or scalar) with each real component at least ``margin`` from the
        kinks: values closer are moved to ``kink +- margin`` (the side they were on, unless
        that leaves [low, high])."""
        x = np.asarray(x)
        if x.dtype.kind == "c":
            real = self._push_real(x.real.astype(np.float64), dtype, low, high)
            imag = self._push_real(x.imag.astype(np.float64), dtype, low, high)
            return real + 1j * imag
        return self._push_real(x.astype(np.float64), dtype, low, high)

    def push_scalar(self, v, dtype, low=-np.inf, high=np.inf):
        return dtype.type(self.push(v, dtype, low, high)).item()


class _ArraySpec:
    """The validated options shared by :func:`tensors`, :func:`arrays` and friends."""

    def __init__(self, shape, dtype, elements, low, high, min_dims, max_dims, max_side,
                 avoid, margin, requires_grad=False):
        if shape is not None and not _is_strategy(shape):
            shape = _check_shape(shape)
        self.shape = shape
        if not _is_strategy(dtype):
            dtype = _as_dtype(dtype)
            _check_grad_dtype(dtype, requires_grad)
            if avoid is not None and dtype.kind not in "fc":
                raise ValueError(f"avoid= needs a floating point or complex dtype, got {dtype}")
        self.dtype = dtype
        if elements is None:
            self.elements = None
        elif _is_strategy(elements):
            self.elements = elements
        elif (isinstance(elements, (tuple, list)) and len(elements) == 2
              and all(isinstance(v, numbers.Real) for v in elements)):
            self.elements = None
            low, high = elements
        else:
            raise TypeError("elements must be None, a (low, high) tuple or a hypothesis strategy "
                            f"of scalars, got {elements!r} (pass low= and high= by keyword)")
        self.low, self.high = _check_range(low, high)
        if not 0 <= min_dims <= max_dims:
            raise ValueError(f"need 0 <= min_dims <= max_dims, got {min_dims}, {max_dims}")
        if max_side < 1:
            raise ValueError(f"max_side must be >= 1, got {max_side}")
        self.min_dims, self.max_dims, self.max_side = int(min_dims), int(max_dims), int(max_side)
        self.kinks = None if avoid is None else _Kinks(avoid, margin)
        self.requires_grad = requires_grad

    def draw_dtype(self, draw, requires_grad=None):
        dtype = _draw_dtype(draw, self.dtype)
        _check_grad_dtype(dtype, self.requires_grad if requires_grad is None else requires_grad)
        if self.kinks is not None and dtype.kind not in "fc":
            raise ValueError(f"avoid= needs a floating point or complex dtype, got {dtype}")
        return dtype

    def draw_shape(self, draw):
        if self.shape is None:
            return draw(hnp.array_shapes(min_dims=self.min_dims, max_dims=self.max_dims,
                                         min_side=1, max_side=self.max_side))
        if _is_strategy(self.shape):
            return _check_shape(draw(self.shape), "a drawn shape")
        return self.shape

    def draw_array(self, draw, shape, dtype):
        if self.elements is not None:
            el = self.elements
            if self.kinks is not None:
                kinks = self.kinks
                el = el.map(lambda v: kinks.push_scalar(v, dtype))
            return draw(hnp.arrays(dtype, shape, elements=el))
        d = Drawer(draw, dtype)
        if dtype.kind == "b":
            return d.bool_array(shape)
        if dtype.kind in "iu":
            info = np.iinfo(dtype)
            lo, hi = max(math.ceil(self.low), info.min), min(math.floor(self.high), info.max)
            if lo > hi:
                raise ValueError(f"no {dtype} values in [{self.low}, {self.high}]")
            return d.int_array(shape, lo, hi).astype(dtype)
        if dtype.kind not in "fc":
            raise TypeError(f"cannot draw values of dtype {dtype} without elements=")
        a = d.array(shape, self.low, self.high,
                    dtype=np.complex128 if dtype.kind == "c" else np.float64)
        if self.kinks is not None:
            a = self.kinks.push(a, dtype, self.low, self.high)
        return np.asarray(a).astype(dtype)


@st.composite
def _spec_arrays(draw, spec):
    dtype = spec.draw_dtype(draw)
    return spec.draw_array(draw, spec.draw_shape(draw), dtype)


# ------------------------------------------------------------------- tensors and arrays

def tensors(shape=None, dtype=np.float64, elements=None, requires_grad=False, *, low=-2.0,
            high=2.0, min_dims=0, max_dims=3, max_side=4, avoid=None, margin=1e-3,
            device=None):
    """Strategy for ndgrad tensors.

    Parameters
    ----------
    shape : tuple of int, int, hypothesis strategy of shapes, or None
        The shape; None draws one with ``min_dims`` to ``max_dims`` dimensions of 1 to
        ``max_side`` elements (0-d included by default).
    dtype : dtype or strategy of dtypes, default float64
        A NumPy dtype, an ndgrad dtype (``ndgrad.float32``, ...), a dtype name, or a strategy
        drawing one (``st.sampled_from([np.float32, np.float64])``).
    elements : None, (low, high), or hypothesis strategy of scalars
        The values. None (default): uniform in ``[low, high]`` (real and imaginary parts both
        for complex dtypes; integers in the range for integer dtypes; random for bool). A
        ``(low, high)`` tuple: the same, in that range. A strategy of scalars (e.g.
        ``st.floats(-1, 1)`` or :func:`away_from_kinks`): each element drawn from it by
        ``hypothesis.extra.numpy.arrays`` (values then shrink individually).
    requires_grad : bool, default False
        Make the tensors leaves that require gradients (floating point or complex dtypes only).
    low, high : float, keyword-only
        The range when ``elements`` is None (default ``[-2, 2]``).
    min_dims, max_dims, max_side : int, keyword-only
        Bounds of a drawn shape (defaults 0, 3, 4).
    avoid : sequence of float, "integers" or "half-integers", optional, keyword-only
        Kink points: every real component is kept at least ``margin`` away from them (values
        closer are moved to ``point +- margin``). E.g. ``[0.0]`` for ``abs`` or ``relu``,
        ``"integers"`` for ``floor`` / ``ceil`` / ``trunc``, ``"half-integers"`` for
        ``round``. Floating point and complex dtypes only.
    margin : float, default 1e-3, keyword-only
        The distance kept from ``avoid``. Keep it above the finite-difference step of the
        check you run (gradcheck's ``eps`` is 1e-6).
    device : str, optional, keyword-only
        Device of the tensors (default: the default device).

    Returns
    -------
    SearchStrategy of Tensor

    Raises
    ------
    ValueError
        ``requires_grad=True`` with a non-floating dtype; ``avoid`` with one; an empty range.
    TypeError
        A bad ``dtype``, ``shape`` or ``elements``.

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

    Values away from the kink of ``abs`` at 0, in float32:

    >>> @settings(max_examples=5)
    ... @given(tensors(dtype=ndgrad.float32, avoid=[0.0], margin=1e-2, requires_grad=True))
    ... def test_abs_grad_is_sign(x):
    ...     (g,) = ndgrad.autograd.grad(ndgrad.abs(x).sum(), x)
    ...     assert g.dtype == ndgrad.float32
    ...     np.testing.assert_array_equal(g.numpy(), np.sign(x.detach().numpy()))
    >>> test_abs_grad_is_sign()
    """
    spec = _ArraySpec(shape, dtype, elements, low, high, min_dims, max_dims, max_side, avoid,
                      margin, requires_grad)
    return _spec_arrays(spec).map(lambda a: _to_tensor(a, requires_grad, device))


def arrays(shape=None, dtype=np.float64, elements=None, *, low=-2.0, high=2.0, min_dims=0,
           max_dims=3, max_side=4, avoid=None, margin=1e-3):
    """Strategy for NumPy arrays: :func:`tensors` without ``requires_grad`` and ``device``.

    Same options and defaults as :func:`tensors` (``shape``, ``dtype``, ``elements``,
    ``low`` / ``high``, ``min_dims`` / ``max_dims`` / ``max_side``, ``avoid`` / ``margin``).

    Examples
    --------
    >>> import numpy as np
    >>> from hypothesis import given, settings
    >>> from ndgrad.checks.strategies import arrays
    >>> @settings(max_examples=5)
    ... @given(arrays(shape=(2, 3), elements=(0.5, 1.0)))
    ... def test_in_range(a):
    ...     assert a.shape == (2, 3) and a.dtype == np.float64
    ...     assert np.all((0.5 <= a) & (a <= 1.0))
    >>> test_in_range()
    """
    spec = _ArraySpec(shape, dtype, elements, low, high, min_dims, max_dims, max_side, avoid,
                      margin)
    return _spec_arrays(spec)


def broadcastable_shapes(n=2, min_dims=0, max_dims=3, min_side=1, max_side=4):
    """Strategy for a tuple of ``n`` mutually broadcastable shapes.

    Each shape has ``min_dims`` to ``max_dims`` dimensions of ``min_side`` to ``max_side``
    elements (or 1, where it broadcasts); ``np.broadcast_shapes(*shapes)`` succeeds.

    Examples
    --------
    >>> import numpy as np
    >>> from hypothesis import given, settings
    >>> from ndgrad.checks.strategies import broadcastable_shapes
    >>> @settings(max_examples=5)
    ... @given(broadcastable_shapes(3))
    ... def test_broadcasts(shapes):
    ...     assert len(shapes) == 3
    ...     np.broadcast_shapes(*shapes)
    >>> test_broadcasts()
    """
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    return hnp.mutually_broadcastable_shapes(
        num_shapes=n, min_dims=min_dims, max_dims=max_dims, min_side=min_side,
        max_side=max_side).map(lambda r: tuple(r.input_shapes))


def broadcastable_tensors(n=2, dtype=np.float64, elements=None, requires_grad=False, *,
                          low=-2.0, high=2.0, min_dims=0, max_dims=3, max_side=4, avoid=None,
                          margin=1e-3, device=None):
    """Strategy for a tuple of ``n`` tensors of mutually broadcastable shapes.

    The shapes come from :func:`broadcastable_shapes`; the values as in :func:`tensors` (a
    strategy of dtypes is drawn once: all ``n`` tensors share the dtype). ``requires_grad``
    is one bool for all, or a sequence of ``n``.

    Examples
    --------
    >>> import numpy as np
    >>> from hypothesis import given, settings
    >>> import ndgrad
    >>> from ndgrad.checks.strategies import broadcastable_tensors
    >>> @settings(max_examples=5)
    ... @given(broadcastable_tensors(2, requires_grad=True))
    ... def test_add_grads_have_input_shapes(xy):
    ...     x, y = xy
    ...     gx, gy = ndgrad.autograd.grad((x + y).sum(), (x, y))
    ...     assert gx.shape == x.shape and gy.shape == y.shape
    >>> test_add_grads_have_input_shapes()
    """
    if isinstance(requires_grad, (bool, np.bool_)):
        grads = (bool(requires_grad),) * n
    else:
        grads = tuple(bool(r) for r in requires_grad)
        if len(grads) != n:
            raise ValueError(f"requires_grad has {len(grads)} entries for {n} tensors")
    spec = _ArraySpec(None, dtype, elements, low, high, min_dims, max_dims, max_side, avoid,
                      margin, any(grads))
    shapes = broadcastable_shapes(n, min_dims, max_dims, 1, max_side)

    @st.composite
    def _draw(draw):
        dtype = spec.draw_dtype(draw)
        return tuple(_to_tensor(spec.draw_array(draw, s, dtype), g, device)
                     for s, g in zip(draw(shapes), grads))
    return _draw()


def away_from_kinks(points, margin=1e-3, *, low=-2.0, high=2.0, elements=None,
                    dtype=np.float64):
    """Strategy for scalars at least ``margin`` away from the kink ``points``.

    Use it as ``elements=`` of :func:`tensors` / :func:`arrays` where a function is not
    differentiable (or finite differences are wrong) near some points; ``tensors(...,
    avoid=points, margin=...)`` is the same for the default uniform values. Values closer
    than ``margin`` are moved to ``point +- margin`` rather than filtered out, so no draw is
    wasted and shrinking stays smooth (a shrunk ``0.0`` becomes ``margin`` for
    ``points=[0.0]``).

    Parameters
    ----------
    points : sequence of float, "integers" or "half-integers"
        The kinks: e.g. ``[0.0]`` for ``abs`` / ``relu``, ``[-1.0, 1.0]`` for ``clip(x, -1,
        1)``, ``"integers"`` for ``floor`` / ``ceil``, ``"half-integers"`` for ``round``.
        Finite points must be more than ``2 * margin`` apart.
    margin : float, default 1e-3
        The smallest distance kept from every point.
    low, high : float, keyword-only
        The range of the values when ``elements`` is None (default ``[-2, 2]``; they stay in
        it).
    elements : hypothesis strategy of scalars, optional, keyword-only
        Values to move away from the kinks (default: floats in ``[low, high]``).
    dtype : dtype, default float64, keyword-only
        The values are exactly representable in it (as ``hnp.arrays`` requires); complex
        dtypes give complex values with both parts away from the kinks.

    Examples
    --------
    >>> import numpy as np
    >>> from hypothesis import given, settings
    >>> import ndgrad
    >>> from ndgrad.checks import gradcheck
    >>> from ndgrad.checks.strategies import away_from_kinks, tensors
    >>> @settings(max_examples=5, deadline=None)
    ... @given(tensors(shape=(3,), elements=away_from_kinks("integers", 1e-2, low=-3, high=3),
    ...                requires_grad=True))
    ... def test_x_minus_floor(x):
    ...     assert np.all(np.abs(x.detach().numpy() - np.round(x.detach().numpy())) >= 1e-2)
    ...     assert gradcheck(lambda t: t - ndgrad.floor(t), (x,))
    >>> test_x_minus_floor()
    """
    kinks = _Kinks(points, margin)
    dtype = _as_dtype(dtype)
    if dtype.kind not in "fc":
        raise ValueError(f"away_from_kinks needs a floating point or complex dtype, got {dtype}")
    if elements is None:
        low, high = _check_range(low, high)
        width = _float_width(dtype)
        lo, hi = _float_bounds(low, high, width)
        part = st.floats(lo, hi, width=width)
        elements = st.builds(complex, part, part) if dtype.kind == "c" else part
    elif not _is_strategy(elements):
        raise TypeError(f"elements must be a hypothesis strategy of scalars, got {elements!r}")
    else:
        low, high = -np.inf, np.inf
    return elements.map(lambda v: kinks.push_scalar(v, dtype, low, high))


# ----------------------------------------------------------------------------- matrices

def _check_inexact(dtype, who):
    if dtype.kind not in "fc":
        raise ValueError(f"{who} needs a floating point or complex dtype, got {dtype}")


def _draw_size(draw, n, max_side):
    if n is None:
        return draw(st.integers(1, max_side))
    n = draw(n) if _is_strategy(n) else n
    if not isinstance(n, numbers.Integral) or n < 1:
        raise ValueError(f"the matrix size must be a positive int, got {n!r}")
    return int(n)


def _draw_batch(draw, batch_shape):
    if _is_strategy(batch_shape):
        return _check_shape(draw(batch_shape), "a drawn batch_shape")
    return batch_shape


def _matrix_dtype(dtype, requires_grad, who):
    if not _is_strategy(dtype):
        dtype = _as_dtype(dtype)
        _check_inexact(dtype, who)
        _check_grad_dtype(dtype, requires_grad)
    return dtype


def _draw_matrix_dtype(draw, dtype, who):
    dtype = _draw_dtype(draw, dtype)
    _check_inexact(dtype, who)
    return dtype


def well_conditioned_matrices(shape=None, cond=10.0, dtype=np.float64, requires_grad=False, *,
                              square=None, max_side=4, max_batch_dims=1, device=None):
    """Strategy for matrices (or batches) with condition number at most ``cond``.

    The singular values are spread over ``[1, cond] / sqrt(cond)`` (so the matrix has norm
    about 1) and kept apart, with random (Haar) singular vectors: inputs where ``inv``,
    ``solve``, ``svd`` and friends have stable derivatives.

    Parameters
    ----------
    shape : tuple ``(..., m, n)``, strategy of shapes, or None
        None draws ``0`` to ``max_batch_dims`` batch dimensions and ``m``, ``n`` of 1 to
        ``max_side`` (``m == n`` unless ``square=False``).
    cond : float, default 10.0
        Upper bound of the 2-norm condition number (``>= 1``).
    dtype : dtype or strategy of dtypes, default float64
        Floating point or complex.
    requires_grad : bool, default False
    square : bool, optional, keyword-only
        Draw square matrices (default True when ``shape`` is None); True with a given
        non-square shape is an error.
    max_side, max_batch_dims : int, keyword-only
        Bounds of a drawn shape.
    device : str, optional, keyword-only

    Examples
    --------
    >>> import numpy as np
    >>> from hypothesis import given, settings
    >>> import ndgrad
    >>> from ndgrad.checks.strategies import well_conditioned_matrices
    >>> @settings(max_examples=5)
    ... @given(well_conditioned_matrices(cond=5.0))
    ... def test_inverse(a):
    ...     a = a.numpy()
    ...     assert np.all(np.linalg.cond(a) <= 5.0 + 1e-9)
    ...     eye = np.broadcast_to(np.eye(a.shape[-1]), a.shape)
    ...     np.testing.assert_allclose(a @ np.linalg.inv(a), eye, atol=1e-12)
    >>> test_inverse()
    """
    who = "well_conditioned_matrices"
    cond = float(cond)
    if not (math.isfinite(cond) and cond >= 1.0):
        raise ValueError(f"cond must be a finite number >= 1, got {cond}")
    if shape is not None and not _is_strategy(shape):
        shape = _check_shape(shape)
        if len(shape) < 2:
            raise ValueError(f"a matrix shape (..., m, n) is needed, got {shape}")
        if square and shape[-1] != shape[-2]:
            raise ValueError(f"square=True with the non-square shape {shape}")
    dtype = _matrix_dtype(dtype, requires_grad, who)

    @st.composite
    def _draw(draw):
        dt = _draw_matrix_dtype(draw, dtype, who)
        if shape is None:
            batch = draw(hnp.array_shapes(min_dims=0, max_dims=max_batch_dims, min_side=1,
                                          max_side=max_side))
            m = draw(st.integers(1, max_side))
            n = m if square in (None, True) else draw(st.integers(1, max_side))
            s = tuple(batch) + (m, n)
        elif _is_strategy(shape):
            s = _check_shape(draw(shape), "a drawn shape")
            if len(s) < 2 or (square and s[-1] != s[-2]):
                raise ValueError(f"{who}: the shape strategy drew {s}, not a "
                                 f"{'square ' if square else ''}matrix shape")
        else:
            s = shape
        return _to_tensor(Drawer(draw, dt).matrix(s, cond), requires_grad, device)
    return _draw()


def spd_matrices(n=None, batch_shape=(), low=0.5, high=3.0, dtype=np.float64,
                 requires_grad=False, *, max_side=4, device=None):
    """Strategy for symmetric (Hermitian, for complex dtypes) positive definite matrices.

    Eigenvalues lie in ``[low, high]`` (``0 < low``), eigenvectors are random (Haar): inputs
    for ``cholesky``, ``eigh``, ``solve`` with SPD systems, ...

    Parameters
    ----------
    n : int, strategy of ints, or None
        The matrix size (None: 1 to ``max_side``).
    batch_shape : tuple or strategy of shapes, default ()
        Leading batch dimensions: the result has shape ``batch_shape + (n, n)``.
    low, high : float
        Bounds of the eigenvalues.
    dtype : dtype or strategy of dtypes, default float64
    requires_grad : bool, default False
    max_side : int, keyword-only
    device : str, optional, keyword-only

    Examples
    --------
    >>> import numpy as np
    >>> from hypothesis import given, settings
    >>> from ndgrad.checks.strategies import spd_matrices
    >>> @settings(max_examples=5)
    ... @given(spd_matrices(batch_shape=(2,), low=1.0, high=2.0))
    ... def test_cholesky_exists(a):
    ...     a = a.numpy()
    ...     assert a.shape[0] == 2
    ...     w = np.linalg.eigvalsh(a)
    ...     assert np.all((w > 1.0 - 1e-9) & (w < 2.0 + 1e-9))
    ...     np.linalg.cholesky(a)
    >>> test_cholesky_exists()
    """
    low, high = _check_range(low, high)
    if not low > 0:
        raise ValueError(f"positive definite matrices need low > 0, got low={low}")
    return _hermitian_matrices("spd_matrices", n, 0.0, batch_shape, low, high, dtype,
                               requires_grad, max_side, device)


def symmetric_matrices(n=None, eigen_gap=0.3, batch_shape=(), low=-2.0, high=2.0,
                       dtype=np.float64, requires_grad=False, *, max_side=4, device=None):
    """Strategy for symmetric (Hermitian, for complex dtypes) matrices with separated
    eigenvalues.

    Eigenvalues lie in ``[low, high]``, at least ``eigen_gap`` apart (the derivatives of
    eigenvectors grow as ``1 / gap``): inputs for ``eigh``, ``eigvalsh``, matrix functions.

    Parameters
    ----------
    n : int, strategy of ints, or None
        The matrix size (None: 1 to ``max_side``, at most as many as fit ``eigen_gap`` apart
        in ``[low, high]``).
    eigen_gap : float, default 0.3
        Smallest distance between two eigenvalues (of one matrix).
    batch_shape : tuple or strategy of shapes, default ()
    low, high : float
        Bounds of the eigenvalues.
    dtype : dtype or strategy of dtypes, default float64
    requires_grad : bool, default False
    max_side : int, keyword-only
    device : str, optional, keyword-only

    Examples
    --------
    >>> import numpy as np
    >>> from hypothesis import given, settings
    >>> from ndgrad.checks.strategies import symmetric_matrices
    >>> @settings(max_examples=5)
    ... @given(symmetric_matrices(eigen_gap=0.5, dtype=np.complex128))
    ... def test_hermitian(a):
    ...     a = a.numpy()
    ...     np.testing.assert_allclose(a, a.conj().T)
    ...     assert np.all(np.diff(np.linalg.eigvalsh(a)) >= 0.5 - 1e-9)
    >>> test_hermitian()
    """
    return _hermitian_matrices("symmetric_matrices", n, eigen_gap, batch_shape, low, high,
                               dtype, requires_grad, max_side, device)


def _hermitian_matrices(who, n, eigen_gap, batch_shape, low, high, dtype, requires_grad,
                        max_side, device):
    """Hermitian matrices with eigenvalues in [low, high] at least ``eigen_gap`` apart (the
    strategy behind :func:`spd_matrices` and :func:`symmetric_matrices`)."""
    low, high = _check_range(low, high)
    eigen_gap = float(eigen_gap)
    if not (math.isfinite(eigen_gap) and eigen_gap >= 0):
        raise ValueError(f"eigen_gap must be a number >= 0, got {eigen_gap}")

    def fits(k):
        return high - low - eigen_gap * (k - 1) >= 0

    if n is None:
        n_max = max_side
        while n_max > 1 and not fits(n_max):
            n_max -= 1
        sizes = st.integers(1, n_max)
    elif _is_strategy(n):
        sizes = n
    else:
        if not isinstance(n, numbers.Integral) or n < 1:
            raise ValueError(f"n must be a positive int, got {n!r}")
        if not fits(n):
            raise ValueError(f"{n} eigenvalues {eigen_gap} apart do not fit in [{low}, {high}]")
        sizes = n
    if not _is_strategy(batch_shape):
        batch_shape = _check_shape(batch_shape, "batch_shape")
    dtype = _matrix_dtype(dtype, requires_grad, who)

    @st.composite
    def _draw(draw):
        dt = _draw_matrix_dtype(draw, dtype, who)
        size = _draw_size(draw, sizes, max_side)
        s = tuple(_draw_batch(draw, batch_shape)) + (size, size)
        a = Drawer(draw, dt).hermitian_matrix(s, low, high, gap=eigen_gap)
        return _to_tensor(a, requires_grad, device)
    return _draw()
