"""``ndgrad.interpolate``: SciPy's interpolators (``scipy.interpolate``) written with ndgrad
operations, so the interpolated values are differentiable in the query points, in the data
values and in the sample positions (knots, grid points), in every transform (``grad``,
``jvp``, ``vmap``, ...).

What it owns: :class:`interp1d` (``kind`` "linear", "nearest", "cubic"), :class:`PPoly`
(piecewise polynomials, what SciPy's splines evaluate through), :class:`CubicSpline`,
:func:`make_interp_spline` (``k`` 1 and 3, returned as a :class:`PPoly`),
:class:`RegularGridInterpolator` and :func:`interpn` ("linear", "nearest", "cubic").

Note [Interpolation derivatives]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
The segment that holds a query point is found on detached values (``searchsorted``): it is a
constant index, so no derivative goes through the choice of segment, and on a segment the
interpolant is a polynomial in the query point, the data and the knots. A cubic spline's
knot slopes ``s`` solve ``A(x) s = B(x) y``, a tridiagonal (cyclic for "periodic") system,
solved here as a dense ``n x n`` system with :func:`ndgrad.linalg.solve`: ``O(n^3)`` time and
``O(n^2)`` memory, fine up to a few thousand knots, and ``ds/dy = A^-1 B``,
``ds/dx = -A^-1 (dA/dx s - dB/dx y)`` follow by differentiating the solve. Nearest-neighbour
interpolation is piecewise constant: differentiable in the data only (zero in the query points
and the sample positions). At a knot the one-sided derivative of the segment that holds the
point is taken (SciPy's segment: the one to the right, except at the last knot).

SciPy is not needed: ``import ndgrad.interpolate`` does not load it.
"""

from __future__ import annotations

import itertools

import numpy as np

from ..core.backend import float64, is_differentiable_dtype
from ..core.creation import arange as _arange, asarray
from ..core.tensor import Tensor
from ..core.ops import PUBLIC as _PUBLIC
from . import linalg as _linalg
from ..numpy.array_api import searchsorted as _searchsorted

__name__ = "ndgrad.interpolate"  # its public name (Note [Public module names] in scipy/__init__.py)

F = type("F", (), {k: staticmethod(v) for k, v in _PUBLIC.items()})


def _search(a, v, side="left"):
    """``searchsorted(a, v, side)`` on detached values; inside ``vmap`` (a batched ``a`` or
    ``v`` has no single value) by counting ``a < v`` (``<=`` for "right"), ``O(len(a) len(v))``.
    """
    try:
        return _searchsorted(a, v, side=side)
    except TypeError:
        less = (a[None, :] <= v[:, None]) if side == "right" else (a[None, :] < v[:, None])
        return F.sum(less.astype("int64"), axis=-1)


def _truth(cond):
    """``bool(cond)``, or None where the value is not known (a batched tensor inside vmap)."""
    try:
        return bool(cond)
    except (RuntimeError, TypeError):
        return None

__all__ = ["interp1d", "PPoly", "CubicSpline", "make_interp_spline",
           "RegularGridInterpolator", "interpn"]


def _float(a, device=None):
    """``a`` as a floating Tensor (integers become float64), on ``device`` if given."""
    t = asarray(a) if device is None or isinstance(a, Tensor) else asarray(a, device=device)
    if not is_differentiable_dtype(t.dtype):
        t = t.astype(float64)
    return t


def _const(a, like):
    """The NumPy array ``a`` as a constant Tensor of ``like``'s dtype, on its device."""
    return asarray(np.asarray(a, dtype=like.dtype), device=like.device)


def _interval(x, xq, side="right"):
    """Segment index ``i`` with ``x[i] <= xq < x[i+1]`` (clipped to ``0 .. len(x)-2``); a
    constant (computed on detached values)."""
    i = _search(x.detach(), xq.detach(), side=side) - 1
    return F.clip(i, 0, x.shape[0] - 2)


def _check_knots(x, name="x"):
    if x.ndim != 1:
        raise ValueError(f"`{name}` must be 1-dimensional, got shape {x.shape}.")
    if x.shape[0] < 2:
        raise ValueError(f"`{name}` must contain at least 2 elements.")
    if _truth(F.all(x.detach()[1:] > x.detach()[:-1])) is False:
        raise ValueError(f"`{name}` must be strictly increasing sequence.")


def _place(out, nq, axis):
    """Move the ``nq`` query axes (first in ``out``) to position ``axis`` (SciPy's layout:
    ``y.shape[:axis] + x_new.shape + y.shape[axis+1:]``)."""
    if axis == 0 or nq == 0:
        return out
    src = list(range(nq))
    return F.moveaxis(out, src, [axis + k for k in src])


# ------------------------------------------------------------------------------ PPoly


class PPoly:
    """Piecewise polynomial in the power basis, SciPy's ``scipy.interpolate.PPoly``.

    On ``x[i] <= t < x[i+1]`` the value is ``sum_m c[m, i] (t - x[i])**(k - m)``.

    Parameters
    ----------
    c : array_like, shape (k + 1, m, ...)
        Coefficients, highest degree first (differentiable).
    x : array_like, shape (m + 1,)
        Breakpoints, strictly increasing (differentiable).
    extrapolate : bool or "periodic", optional
        Outside ``[x[0], x[-1]]``: continue the end polynomials (True, the default), NaN
        (False), or wrap around with period ``x[-1] - x[0]`` ("periodic").
    axis : int, optional
        Where the query axes go in the output (SciPy's ``axis``).

    Examples
    --------
    >>> import ndgrad
    >>> from ndgrad.interpolate import PPoly
    >>> p = PPoly(ndgrad.tensor([[1.0, 2.0], [0.0, 1.0]]), ndgrad.tensor([0.0, 1.0, 2.0]))
    >>> p(ndgrad.tensor([0.5, 1.5]))
    tensor([0.5, 2. ])
    """

    def __init__(self, c, x, extrapolate=None, axis=0):
        self.x = _float(x)
        self.c = _float(c, self.x.device)
        _check_knots(self.x)
        if self.c.ndim < 2 or self.c.shape[1] != self.x.shape[0] - 1:
            raise ValueError(f"`c` must have shape (k + 1, {self.x.shape[0] - 1}, ...) for "
                             f"{self.x.shape[0]} breakpoints, got {self.c.shape}.")
        self.extrapolate = True if extrapolate is None else extrapolate
        ndim = self.c.ndim - 2
        if not -ndim - 1 <= axis <= ndim:
            raise ValueError(f"axis={axis} is out of range for coefficients of shape "
                             f"{self.c.shape}.")
        self.axis = axis % (ndim + 1)

    def __call__(self, x, nu=0, extrapolate=None):
        """The ``nu``-th derivative at ``x`` (differentiable in ``x``, ``c`` and the
        breakpoints); output shape ``c.shape[2:]`` with ``x.shape`` inserted at ``axis``."""
        if nu < 0:
            raise NotImplementedError("PPoly: antiderivatives (nu < 0) are not implemented.")
        if nu > 0:
            return self.derivative(nu)(x, extrapolate=extrapolate)
        extrapolate = self.extrapolate if extrapolate is None else extrapolate
        xq = _float(x, self.x.device)
        shape = xq.shape
        xf = xq.reshape(-1)
        bp = self.x
        if extrapolate == "periodic":
            xf = bp[0] + F.remainder(xf - bp[0], bp[-1] - bp[0])
        i = _interval(bp, xf)
        rest = self.c.shape[2:]
        t = (xf - bp[i]).reshape((xf.shape[0],) + (1,) * len(rest))
        ci = F.take(self.c, i, axis=1)  # (k + 1, p, *rest)
        out = ci[0]
        for m in range(1, self.c.shape[0]):  # Horner
            out = out * t + ci[m]
        if extrapolate is False:
            outside = ((xf < bp[0]) | (xf > bp[-1])).reshape(t.shape)
            out = F.where(outside, _const(np.nan, out), out)
        return _place(out.reshape(tuple(shape) + tuple(rest)), len(shape), self.axis)

    def derivative(self, nu=1):
        """The ``nu``-th derivative, a :class:`PPoly` of degree ``k - nu`` (zero when
        ``nu > k``)."""
        if nu < 0:
            raise NotImplementedError("PPoly: antiderivatives (nu < 0) are not implemented.")
        c = self.c
        for _ in range(nu):
            k = c.shape[0] - 1
            if k == 0:
                c = c * 0.0
                break
            c = c[:-1] * _const(np.arange(k, 0, -1.0), c).reshape((k,) + (1,) * (c.ndim - 1))
        return PPoly._make(c, self.x, self.extrapolate, self.axis)

    @classmethod
    def _make(cls, c, x, extrapolate, axis):
        p = object.__new__(PPoly)
        p.c, p.x, p.extrapolate, p.axis = c, x, extrapolate, axis
        return p


# ------------------------------------------------------------------------------ splines


def _bc_pair(bc_type):
    if isinstance(bc_type, str):
        if bc_type not in ("not-a-knot", "natural", "clamped", "periodic"):
            raise ValueError(f"bc_type={bc_type!r} is not allowed: use 'not-a-knot', "
                             "'natural', 'clamped', 'periodic' or a pair of (order, value).")
        return bc_type, bc_type
    try:
        left, right = bc_type
    except (TypeError, ValueError):
        raise ValueError("bc_type must be a string or a pair (left, right) of strings or "
                         f"(order, value) tuples, got {bc_type!r}.") from None
    out = []
    for bc in (left, right):
        if isinstance(bc, str):
            if bc in ("periodic",) and left != right:
                raise ValueError("'periodic' bc_type must be used at both ends.")
            out.append(_bc_pair(bc)[0])
        else:
            order, value = bc
            if order not in (1, 2):
                raise ValueError(f"The derivative order in bc_type must be 1 or 2, got "
                                 f"{order}.")
            out.append((order, value))
    return tuple(out)


def _end_rows(bc, dx, slope, at_start, like):
    """(diagonal, off-diagonal, right-hand side) of the first or last row of the slope
    system; ``None`` for not-a-knot (handled by the caller)."""
    if bc == "natural":
        bc = (2, 0.0)
    elif bc == "clamped":
        bc = (1, 0.0)
    order, value = bc
    v = _float(value, like.device)
    one = _const(1.0, like)
    if order == 1:
        return one, 0.0 * one, F.broadcast_to(v, slope.shape[1:]) + 0.0 * slope[0]
    # second derivative v: 2 s0 + s1 = 3 slope0 - v dx0 / 2 (start); mirrored at the end
    if at_start:
        return 2.0 * one, one, 3.0 * slope[0] - 0.5 * v * dx[0]
    return 2.0 * one, one, 3.0 * slope[-1] + 0.5 * v * dx[-1]


def _slopes(x, y, bc):
    """Knot slopes of the cubic spline through ``(x, y)``, y of shape (n, m)."""
    n = x.shape[0]
    dx = x[1:] - x[:-1]
    slope = (y[1:] - y[:-1]) / dx[:, None]
    if bc[0] == "periodic":
        # cyclic system on s[0 .. n-2] (s[n-1] = s[0]); row i: dx[i] s[i-1]
        # + 2 (dx[i-1] + dx[i]) s[i] + dx[i-1] s[i+1] = 3 (dx[i] slope[i-1] + dx[i-1] slope[i])
        N = n - 1
        if N < 2:
            return F.concatenate([slope, slope], axis=0)
        prev = F.roll(dx, 1)  # dx[i-1], cyclic
        main = 2.0 * (prev + dx)
        rhs = 3.0 * (dx[:, None] * F.roll(slope, 1, axis=0) + prev[:, None] * slope)
        up = _const(np.roll(np.eye(N), 1, axis=1), x)
        low = _const(np.roll(np.eye(N), -1, axis=1), x)
        A = main[:, None] * _const(np.eye(N), x) + prev[:, None] * up + dx[:, None] * low
        s = _linalg.solve(A, rhs)
        return F.concatenate([s, s[:1]], axis=0)
    if n == 2 or (n == 3 and bc == ("not-a-knot", "not-a-knot")):
        if n == 2:
            return F.concatenate([slope, slope], axis=0)
        # the parabola through three points (SciPy's special case)
        A = F.stack([F.stack([_const(1.0, x), _const(1.0, x), _const(0.0, x)]),
                     F.stack([dx[1], 2.0 * (dx[0] + dx[1]), dx[0]]),
                     F.stack([_const(0.0, x), _const(1.0, x), _const(1.0, x)])])
        b = F.stack([2.0 * slope[0], 3.0 * (dx[0] * slope[1] + dx[1] * slope[0]),
                     2.0 * slope[1]])
        return _linalg.solve(A, b)
    # interior rows i = 1 .. n-2: dx[i] s[i-1] + 2 (dx[i-1] + dx[i]) s[i] + dx[i-1] s[i+1]
    if bc[0] == "not-a-knot":
        d = x[2] - x[0]
        m0, u0 = dx[1], d
        r0 = ((dx[0] + 2.0 * d) * dx[1] * slope[0] + dx[0] ** 2 * slope[1]) / d
    else:
        m0, u0, r0 = _end_rows(bc[0], dx, slope, True, x)
    if bc[1] == "not-a-knot":
        d = x[-1] - x[-3]
        m1, l1 = dx[-2], d
        r1 = (dx[-1] ** 2 * slope[-2] + (2.0 * d + dx[-1]) * dx[-2] * slope[-1]) / d
    else:
        m1, l1, r1 = _end_rows(bc[1], dx, slope, False, x)
    rows_main = F.concatenate([m0.reshape(1), 2.0 * (dx[:-1] + dx[1:]), m1.reshape(1)])
    rows_up = F.concatenate([u0.reshape(1), dx[:-1], _const([0.0], x)])
    rows_low = F.concatenate([_const([0.0], x), dx[1:], l1.reshape(1)])
    rhs = F.concatenate([r0[None], 3.0 * (dx[1:, None] * slope[:-1] + dx[:-1, None] * slope[1:]),
                         r1[None]], axis=0)
    A = (rows_main[:, None] * _const(np.eye(n), x) + rows_up[:, None] * _const(np.eye(n, k=1), x)
         + rows_low[:, None] * _const(np.eye(n, k=-1), x))
    return _linalg.solve(A, rhs)


class CubicSpline(PPoly):
    """Cubic spline interpolation, SciPy's ``scipy.interpolate.CubicSpline``, differentiable
    in ``x``, ``y`` and the query points (and boundary derivative values in ``bc_type``).

    The knot slopes come from a dense linear solve (Note [Interpolation derivatives]):
    ``O(n^3)`` in the number of knots, meant for up to a few thousand knots.

    Parameters
    ----------
    x : array_like, shape (n,)
        Knots, strictly increasing.
    y : array_like
        Values, ``y.shape[axis] == n``.
    axis : int, optional
        The axis of ``y`` along which it varies with ``x``.
    bc_type : str or 2-tuple, optional
        "not-a-knot" (default), "natural", "clamped", "periodic" (needs
        ``y[0] == y[-1]`` along ``axis``), or a pair ``(left, right)`` of those or of
        ``(order, value)`` with ``order`` 1 or 2.
    extrapolate : bool or "periodic", optional
        Default True ("periodic" for periodic splines).

    Examples
    --------
    >>> import ndgrad
    >>> from ndgrad.interpolate import CubicSpline
    >>> y = ndgrad.tensor([0.0, 1.0, 0.0, 1.0], requires_grad=True)
    >>> cs = CubicSpline(ndgrad.tensor([0.0, 1.0, 2.0, 3.0]), y, bc_type="natural")
    >>> cs(ndgrad.tensor(1.5)).backward()
    >>> y.grad  # the spline's weights of y at 1.5
    tensor([-0.075,  0.575,  0.575, -0.075])
    """

    def __init__(self, x, y, axis=0, bc_type="not-a-knot", extrapolate=None):
        x = _float(x)
        y = _float(y, x.device)
        _check_knots(x)
        if y.ndim == 0:
            raise ValueError("`y` must have at least one dimension.")
        axis = axis % y.ndim
        n = x.shape[0]
        if y.shape[axis] != n:
            raise ValueError(f"The length of `y` along `axis`={axis} ({y.shape[axis]}) "
                             f"doesn't match the length of `x` ({n}).")
        bc = _bc_pair(bc_type)
        y0 = F.moveaxis(y, axis, 0)
        rest = y0.shape[1:]
        y2 = y0.reshape(n, -1)
        if bc[0] == "periodic":
            a, b = y2.detach()[0], y2.detach()[-1]
            if _truth(F.all(F.abs(a - b) <= 1e-15 + 1e-15 * F.abs(b))) is False:
                raise ValueError(f"The first and last `y` point along axis {axis} must be "
                                 "identical (within machine precision) when "
                                 "bc_type='periodic'.")
            if extrapolate is None:
                extrapolate = "periodic"
        if any(b == "not-a-knot" for b in bc) and n < 3 and bc != ("not-a-knot",) * 2:
            raise ValueError("not-a-knot at one end needs at least 3 points.")
        s = _slopes(x, y2, bc)
        dx = (x[1:] - x[:-1])[:, None]
        slope = (y2[1:] - y2[:-1]) / dx
        c0 = (s[:-1] + s[1:] - 2.0 * slope) / dx ** 2
        c1 = (3.0 * slope - 2.0 * s[:-1] - s[1:]) / dx
        c = F.stack([c0, c1, s[:-1], y2[:-1]]).reshape((4, n - 1) + tuple(rest))
        super().__init__(c, x, extrapolate=extrapolate, axis=axis)


def make_interp_spline(x, y, k=3, t=None, bc_type=None, axis=0, check_finite=True):
    """The interpolating spline of degree ``k`` through ``(x, y)``, SciPy's
    ``scipy.interpolate.make_interp_spline`` for ``k`` 1 and 3 with the default knots.

    SciPy returns a ``BSpline``; this returns the same function as a :class:`PPoly`
    (evaluate it, differentiate it with ``derivative()`` or ``nu=``), differentiable in ``x``,
    ``y`` and the query points. ``k=3`` with ``bc_type=None`` is the not-a-knot spline
    (:class:`CubicSpline`'s default); "natural", "clamped", "periodic" and (order, value)
    pairs are passed to :class:`CubicSpline`.

    Examples
    --------
    >>> import ndgrad
    >>> from ndgrad.interpolate import make_interp_spline
    >>> spl = make_interp_spline(ndgrad.arange(5.0), ndgrad.arange(5.0) ** 3)
    >>> spl(ndgrad.tensor(2.5))  # a cubic is reproduced exactly
    tensor(15.625)
    """
    if t is not None:
        raise NotImplementedError("make_interp_spline: custom knots `t` are not supported; "
                                  "leave t=None (SciPy's default knots).")
    if k == 1:
        x = _float(x)
        y = _float(y, x.device)
        _check_knots(x)
        axis = axis % y.ndim
        y0 = F.moveaxis(y, axis, 0)
        dx = (x[1:] - x[:-1]).reshape((-1,) + (1,) * (y0.ndim - 1))
        c = F.stack([(y0[1:] - y0[:-1]) / dx, y0[:-1]])
        return PPoly(c, x, extrapolate=True, axis=axis)
    if k == 3:
        return CubicSpline(x, y, axis=axis,
                           bc_type="not-a-knot" if bc_type is None else bc_type)
    raise NotImplementedError(f"make_interp_spline: k={k} is not supported; use k=1 or k=3.")


# ------------------------------------------------------------------------------ interp1d


class interp1d:  # noqa: N801  (SciPy's name)
    """Interpolate a 1-D function, SciPy's ``scipy.interpolate.interp1d``.

    ``kind``: "linear" (differentiable in ``x``, ``y`` and the query points), "nearest"
    (differentiable in ``y`` only: piecewise constant), "cubic" (the not-a-knot cubic
    spline, as SciPy's ``make_interp_spline(x, y, k=3)``; differentiable in all three).

    Parameters
    ----------
    x : array_like, shape (n,)
    y : array_like, ``y.shape[axis] == n``
    kind : {"linear", "nearest", "cubic"}
    axis : int
    copy : bool
        Ignored (kept for SciPy's signature).
    bounds_error : bool or None
        Raise ValueError for query points outside ``[x.min(), x.max()]``. None (default):
        True unless ``fill_value="extrapolate"``.
    fill_value : float, (below, above) or "extrapolate"
        Value outside the range (NaN by default); "extrapolate" continues the end segments.
    assume_sorted : bool
        If False, ``x`` is sorted first (with ``y``).

    Examples
    --------
    >>> import ndgrad
    >>> from ndgrad.interpolate import interp1d
    >>> y = ndgrad.tensor([0.0, 2.0, 4.0], requires_grad=True)
    >>> f = interp1d(ndgrad.tensor([0.0, 1.0, 2.0]), y)
    >>> f(ndgrad.tensor([0.25, 1.5])).detach()
    tensor([0.5, 3. ])
    """

    def __init__(self, x, y, kind="linear", axis=-1, copy=True, bounds_error=None,
                 fill_value=np.nan, assume_sorted=False):
        if kind not in ("linear", "nearest", "cubic", "slinear"):
            raise NotImplementedError(f"interp1d: kind={kind!r} is not supported; use "
                                      "'linear', 'nearest' or 'cubic'.")
        x = _float(x)
        y = _float(y, x.device)
        if x.ndim != 1:
            raise ValueError(f"the x array must have exactly one dimension, got shape "
                             f"{x.shape}.")
        if y.ndim == 0:
            raise ValueError("the y array must have at least one dimension.")
        self.axis = axis % y.ndim
        if y.shape[self.axis] != x.shape[0]:
            raise ValueError(f"x and y arrays must be equal in length along interpolation "
                             f"axis: {x.shape[0]} != {y.shape[self.axis]}.")
        if not assume_sorted:
            order = F.argsort(x.detach())
            x = F.take(x, order)
            y = F.take(y, order, axis=self.axis)
        self.x, self.y, self.kind = x, y, "linear" if kind == "slinear" else kind
        self._y0 = F.moveaxis(y, self.axis, 0)
        if isinstance(fill_value, str):
            if fill_value != "extrapolate":
                raise ValueError(f"fill_value must be a number, a pair or 'extrapolate', "
                                 f"got {fill_value!r}.")
            if bounds_error:
                raise ValueError("Cannot extrapolate and raise at the same time.")
            bounds_error = False
        elif bounds_error is None:
            bounds_error = True
        self.bounds_error = bool(bounds_error)
        self.fill_value = fill_value
        if self.kind == "cubic":
            if x.shape[0] < 4:
                raise ValueError("interp1d: kind='cubic' needs at least 4 points.")
            self._spline = CubicSpline(x, self._y0, axis=0)
        elif x.shape[0] < (2 if self.kind == "linear" else 1):
            raise ValueError("interp1d: at least 2 points are needed for kind='linear'.")

    def __call__(self, x):
        """The interpolated values; shape ``y.shape[:axis] + x.shape + y.shape[axis+1:]``."""
        xq = _float(x, self.x.device)
        shape = tuple(xq.shape)
        xf = xq.reshape(-1)
        xs, y0 = self.x, self._y0
        rest = tuple(y0.shape[1:])
        col = (xf.shape[0],) + (1,) * len(rest)
        if self.kind == "linear":
            i = F.clip(_search(xs.detach(), xf.detach()), 1, xs.shape[0] - 1)
            lo, hi = i - 1, i
            ylo, yhi = F.take(y0, lo, axis=0), F.take(y0, hi, axis=0)
            slope = (yhi - ylo) / (xs[hi] - xs[lo]).reshape(col)
            out = slope * (xf - xs[lo]).reshape(col) + ylo
        elif self.kind == "nearest":
            bds = 0.5 * (xs[1:] + xs[:-1]).detach()
            i = F.clip(_search(bds, xf.detach(), side="left"), 0, xs.shape[0] - 1)
            out = F.take(y0, i, axis=0)
        else:
            out = self._spline(xf)
        below = (xf < xs[0]).reshape(col)
        above = (xf > xs[-1]).reshape(col)
        fv = self.fill_value
        if self.bounds_error:
            b, a = _truth(F.any(below)), _truth(F.any(above))
            if b is None or a is None:  # inside vmap: cannot raise; fill_value there instead
                fv = np.nan if isinstance(fv, str) else fv
            elif b or a:
                raise ValueError(f"A value in x_new is {'below' if b else 'above'} the "
                                 f"interpolation range's {'minimum' if b else 'maximum'} "
                                 "value; pass bounds_error=False with a fill_value, or "
                                 "fill_value='extrapolate'.")
        if not isinstance(fv, str) and (not self.bounds_error or b is None or a is None):
            lo_v, hi_v = (fv if isinstance(fv, tuple) and len(fv) == 2 else (fv, fv))
            out = F.where(below, _const(lo_v, out), out)
            out = F.where(above, _const(hi_v, out), out)
        return _place(out.reshape(shape + rest), len(shape), self.axis)


# ------------------------------------------------------------------------------ grids


class RegularGridInterpolator:
    """Interpolation on a rectilinear grid in any dimension, SciPy's
    ``scipy.interpolate.RegularGridInterpolator`` for ``method`` "linear" and "nearest".

    "linear" is differentiable in ``values``, in the query points ``xi`` and in the grid
    coordinates ``points``; "nearest" in ``values`` only. ``method="slinear"`` is accepted as
    "linear" (the same function). "cubic" is the tensor product of not-a-knot cubic splines
    (SciPy's, at least 4 points per dimension), differentiable in ``values``, ``xi`` and
    ``points``; "quintic" and "pchip" are not implemented and raise NotImplementedError.

    Parameters
    ----------
    points : tuple of array_like
        The grid coordinates in each of the ``d`` dimensions, strictly monotonic.
    values : array_like, shape ``(n_1, ..., n_d, ...)``
    method : {"linear", "nearest", "slinear", "cubic"}
    bounds_error : bool
        Raise ValueError for query points outside the grid (default True).
    fill_value : float or None
        Value outside the grid (NaN by default); None extrapolates.

    Examples
    --------
    >>> import ndgrad
    >>> from ndgrad.interpolate import RegularGridInterpolator
    >>> g = (ndgrad.tensor([0.0, 1.0]), ndgrad.tensor([0.0, 1.0, 2.0]))
    >>> v = ndgrad.tensor([[0.0, 1.0, 2.0], [10.0, 11.0, 12.0]])
    >>> RegularGridInterpolator(g, v)(ndgrad.tensor([[0.5, 1.5]]))
    tensor([6.5])
    """

    _METHODS = ("linear", "nearest", "slinear", "cubic")

    def __init__(self, points, values, method="linear", bounds_error=True,
                 fill_value=np.nan):
        self._check_method(method)
        values = _float(values)
        grid = [_float(p, values.device) for p in points]
        if len(grid) > values.ndim:
            raise ValueError(f"There are {len(grid)} point arrays, but values has "
                             f"{values.ndim} dimensions.")
        for d, g in enumerate(grid):
            if g.ndim != 1:
                raise ValueError(f"The points in dimension {d} must be 1-dimensional.")
            if g.shape[0] != values.shape[d]:
                raise ValueError(f"There are {g.shape[0]} points and {values.shape[d]} values "
                                 f"in dimension {d}.")
            gd = g.detach()
            if g.shape[0] > 1 and _truth(F.all(gd[1:] < gd[:-1])):  # descending: flip
                grid[d] = F.flip(g)
                values = F.flip(values, axis=d)
            elif _truth(F.all(gd[1:] > gd[:-1])) is False:
                raise ValueError(f"The points in dimension {d} must be strictly ascending or "
                                 "descending.")
        self.grid, self.values = tuple(grid), values
        self.method, self.bounds_error, self.fill_value = method, bounds_error, fill_value

    def _check_method(self, method):
        if method not in self._METHODS:
            raise NotImplementedError(f"RegularGridInterpolator: method={method!r} is not "
                                      "supported; use 'linear', 'nearest' or 'cubic'.")

    def __call__(self, xi, method=None):
        """Values at ``xi`` (shape ``(..., d)``, or a tuple of ``d`` arrays that broadcast);
        output shape ``xi.shape[:-1] + values.shape[d:]``."""
        method = self.method if method is None else method
        self._check_method(method)
        D = len(self.grid)
        dev = self.values.device
        if isinstance(xi, (tuple, list)) and len(xi) == D and not np.isscalar(xi[0]):
            xi = F.stack(F.broadcast_arrays(*[_float(a, dev) for a in xi]), axis=-1)
        xi = _float(xi, dev)
        if xi.shape[-1] != D:
            raise ValueError(f"The requested sample points xi have dimension {xi.shape[-1]} "
                             f"but this RegularGridInterpolator has dimension {D}.")
        shape = tuple(xi.shape[:-1])
        pts = xi.reshape(-1, D)
        rest = tuple(self.values.shape[D:])
        col = (pts.shape[0],) + (1,) * len(rest)
        idx, w, outside = [], [], None
        for d, g in enumerate(self.grid):
            if g.shape[0] < 2:
                raise ValueError(f"There are {g.shape[0]} points in dimension {d}, but "
                                 f"method {method} requires at least 2 points per dimension.")
            if method == "cubic" and g.shape[0] < 4:
                raise ValueError(f"There are {g.shape[0]} points in dimension {d}, but "
                                 "method cubic requires at least 4 points per dimension.")
            c = pts[:, d]
            i = _interval(g, c)
            w.append((c - g[i]) / (g[i + 1] - g[i]))
            idx.append(i)
            out_d = (c < g[0]) | (c > g[-1])
            if self.bounds_error and _truth(F.any(out_d)):
                raise ValueError(f"One of the requested xi is out of bounds in dimension {d}.")
            outside = out_d if outside is None else outside | out_d
        if method == "nearest":
            near = tuple(F.where(wd.detach() <= 0.5, i, i + 1) for i, wd in zip(idx, w))
            out = self.values[near]
        elif method == "cubic":
            # tensor product of not-a-knot cubic splines, one dimension at a time: after
            # dimension d the array is (points, n_{d+1}, ..., rest), each point's own spline
            # in the next dimension evaluated at its own coordinate
            out = CubicSpline(self.grid[0], self.values, axis=0)(pts[:, 0])
            rows = _arange(pts.shape[0], device=dev)
            for d in range(1, D):
                cs = CubicSpline(self.grid[d], out, axis=1)
                ci = cs.c[:, idx[d], rows]  # (4, points, ...)
                td = (pts[:, d] - self.grid[d][idx[d]]).reshape((pts.shape[0],)
                                                                + (1,) * (ci.ndim - 2))
                out = ((ci[0] * td + ci[1]) * td + ci[2]) * td + ci[3]
        else:
            out = None
            for corner in itertools.product((0, 1), repeat=D):
                weight = None
                for b, wd in zip(corner, w):
                    f = wd if b else 1.0 - wd
                    weight = f if weight is None else weight * f
                term = weight.reshape(col) * self.values[tuple(i + b for i, b in
                                                              zip(idx, corner))]
                out = term if out is None else out + term
        if self.fill_value is not None:
            out = F.where(outside.reshape(col), _const(self.fill_value, out), out)
        return out.reshape(shape + rest)


def interpn(points, values, xi, method="linear", bounds_error=True, fill_value=np.nan):
    """Interpolation on a regular grid, SciPy's ``scipy.interpolate.interpn``: a
    :class:`RegularGridInterpolator` evaluated at ``xi`` (same methods and derivatives).

    Examples
    --------
    >>> import ndgrad
    >>> from ndgrad.interpolate import interpn
    >>> x = ndgrad.tensor([0.0, 1.0, 2.0])
    >>> interpn((x,), x ** 2, ndgrad.tensor([[0.5], [1.5]]))
    tensor([0.5, 2.5])
    """
    return RegularGridInterpolator(points, values, method=method, bounds_error=bounds_error,
                                   fill_value=fill_value)(xi)
