"""Composite functions: written with ``F`` from primitives, so they need no rules of their
own; registered (``defcomposite``) so the property suite checks them like primitives.
"""

from __future__ import annotations

from .elementwise import _apart
from .registry import ELEMENTWISE, SHAPE, VARIADIC, Domain, defalias, defcomposite


def _meshgrid_sample(d):
    n = d.integers(1, 3)
    xs = tuple(d.array((d.integers(1, 3),)) for _ in range(n))
    return xs, {"indexing": d.choice(["xy", "ij"])}


@defcomposite(nin=VARIADIC, sample=_meshgrid_sample, method=False, kind=SHAPE)
def meshgrid(F, *xi, indexing="xy"):
    """Coordinate grids from 1-D tensors (NumPy semantics; differentiable).

    Parameters
    ----------
    *xi : 1-D tensors
    indexing : {"xy", "ij"}
        Cartesian ("xy", NumPy's default) or matrix ("ij") indexing.

    Examples
    --------
    >>> import ndgrad
    >>> gx, gy = ndgrad.meshgrid(ndgrad.tensor([1.0, 2.0, 3.0]), ndgrad.tensor([4.0, 5.0]))
    >>> gx.shape, gy.shape
    ((2, 3), (2, 3))
    >>> gy
    tensor([[4., 4., 4.],
            [5., 5., 5.]])
    """
    if indexing not in ("xy", "ij"):
        raise ValueError(f"meshgrid: indexing must be 'xy' or 'ij', got {indexing!r}")
    n = len(xi)
    for k, x in enumerate(xi):
        if len(x.shape) != 1:
            raise ValueError(f"meshgrid expects 1-D inputs; input {k} has shape {tuple(x.shape)}")
    sizes = [x.shape[0] for x in xi]
    if indexing == "xy" and n >= 2:
        sizes[0], sizes[1] = sizes[1], sizes[0]
    out = []
    for k, x in enumerate(xi):
        axis = k
        if indexing == "xy" and n >= 2 and k < 2:
            axis = 1 - k
        shape = [1] * n
        shape[axis] = x.shape[0]
        out.append(F.broadcast_to(F.reshape(x, tuple(shape)), tuple(sizes)))
    return tuple(out)


# ------------------------------------------------------------- NumPy's elementwise extras
# NumPy's names for functions of primitives (np.deg2rad, np.logaddexp2, ...); NumPy code
# calling them on Tensors runs these (ndgrad/numpy_protocols.py).
_LN2 = 0.6931471805599453
_DEG = 0.017453292519943295  # pi / 180


def float_operand(F, x):
    """``x`` in the floating dtype NumPy's floating-point ufunc loops compute it in: itself
    when floating or complex (or not an array), else the smallest float that holds its
    values, as ``numpy.promote_types(dtype, float16)``: bool and 8-bit integers float16,
    16-bit float32, wider float64 (``np.deg2rad(True)`` is float16, ``np.rint(1)`` float64)."""
    dt = getattr(x, "dtype", None)
    if dt is None or dt.kind in "fc":
        return x
    return F.astype(x, "float16" if dt.itemsize == 1 else "float32" if dt.itemsize == 2
                    else "float64")


@defcomposite(kind=ELEMENTWISE, domain=Domain((-4.0, 4.0)))
def deg2rad(F, x):
    """Degrees to radians, elementwise. Alias: ``radians``.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.deg2rad(ndgrad.tensor([180.0]))
    tensor([3.14159265])
    """
    return float_operand(F, x) * _DEG


@defcomposite(kind=ELEMENTWISE, domain=Domain((-4.0, 4.0)))
def rad2deg(F, x):
    """Radians to degrees, elementwise. Alias: ``degrees``.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.rad2deg(ndgrad.tensor([3.141592653589793]))
    tensor([180.])
    """
    return float_operand(F, x) * (1.0 / _DEG)


defalias("radians", "deg2rad")
defalias("degrees", "rad2deg")


@defcomposite(kind=ELEMENTWISE, nin=2, domain=Domain((-3.0, 3.0)))
def logaddexp2(F, x, y):
    """``log2(2**x + 2**y)``, elementwise, computed stably.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.logaddexp2(ndgrad.tensor([1.0]), ndgrad.tensor([1.0]))
    tensor([2.])
    """
    x, y = float_operand(F, x), float_operand(F, y)
    return F.logaddexp(x * _LN2, y * _LN2) * (1.0 / _LN2)


@defcomposite(kind=ELEMENTWISE, domain=Domain((-2.0, 2.0)))
def fabs(F, x):
    """Absolute value of a real tensor, elementwise (NumPy's ``fabs``; ``abs`` also takes
    complex input).

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.fabs(ndgrad.tensor([-1.5, 2.0]))
    tensor([1.5, 2. ])
    """
    if x.dtype.kind == "c":
        raise TypeError("fabs: complex input is not supported (use abs)")
    return F.abs(float_operand(F, x))  # (NumPy's fabs has floating loops only)


@defcomposite(kind=ELEMENTWISE, nin=2, domain=Domain((0.5, 2.0), (-2.0, 2.0), complex=True))
def float_power(F, x, y):
    """``x ** y`` computed in double precision (float64, or complex128 for complex input),
    whatever the inputs' dtypes.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.float_power(ndgrad.tensor([2.0], dtype=ndgrad.float32), 3).dtype
    dtype('float64')
    """
    complex_ = any(getattr(v, "dtype", None) is not None and v.dtype.kind == "c" or
                   isinstance(v, complex) for v in (x, y))
    wide = "complex128" if complex_ else "float64"
    x = F.astype(x, wide) if hasattr(x, "dtype") else x
    y = F.astype(y, wide) if hasattr(y, "dtype") else y
    return F.pow(x, y)


# (drawn apart, as maximum's: at a tie the derivative is a kink)
@defcomposite(kind=ELEMENTWISE, nin=2, domain=Domain((-2.0, 2.0), valid=_apart))
def fmax(F, x, y):
    """Elementwise maximum that ignores NaN: where one of ``x``, ``y`` is NaN the other is
    returned (``maximum`` propagates NaN).

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.fmax(ndgrad.tensor([1.0, float("nan")]), ndgrad.tensor([float("nan"), 2.0]))
    tensor([1., 2.])
    """
    return F.where(F.isnan(y), x, F.where(F.isnan(x), y, F.maximum(x, y)))


@defcomposite(kind=ELEMENTWISE, nin=2, domain=Domain((-2.0, 2.0), valid=_apart))
def fmin(F, x, y):
    """Elementwise minimum that ignores NaN (see :func:`fmax`).

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.fmin(ndgrad.tensor([1.0, float("nan")]), ndgrad.tensor([float("nan"), 2.0]))
    tensor([1., 2.])
    """
    return F.where(F.isnan(y), x, F.where(F.isnan(x), y, F.minimum(x, y)))


def _diff_sample(d):
    shape = d.shape(min_dims=1, max_dims=3, min_side=2)
    axis = d.integers(-len(shape), len(shape) - 1)
    kwargs = {"axis": axis, "n": d.integers(0, 2)}
    if d.boolean():
        side = list(shape)
        side[axis] = 1
        kwargs[d.choice(["prepend", "append"])] = d.array(tuple(side))
    return (d.array(shape),), kwargs


@defcomposite(kind=SHAPE, domain=Domain((-2.0, 2.0), complex=True), sample=_diff_sample)
def diff(F, a, *, axis=-1, n=1, prepend=None, append=None):
    """The ``n``-th forward difference along ``axis``: ``a[1:] - a[:-1]``, ``n`` times
    (NumPy's ``diff``; the array API's signature). ``prepend``/``append`` (tensors that
    match ``a`` off ``axis``, or numbers) are joined to ``a`` first; all are differentiable.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.diff(ndgrad.tensor([1.0, 4.0, 9.0, 16.0]))
    tensor([3., 5., 7.])
    >>> ndgrad.diff(ndgrad.tensor([1.0, 4.0, 9.0, 16.0]), n=2)
    tensor([2., 2.])
    """
    if n < 0:
        raise ValueError(f"diff: order n must be non-negative, got {n}")
    ndim = len(a.shape)
    if ndim == 0:
        raise ValueError("diff requires input that is at least one dimensional")
    axis = axis + ndim if axis < 0 else axis
    if not 0 <= axis < ndim:
        raise ValueError(f"diff: axis {axis} is out of bounds for a {ndim}-D tensor")
    if n == 0:
        return a  # (as NumPy: prepend and append are not joined either)
    side = list(a.shape)
    side[axis] = 1

    def joined(v):  # a number or 0-d tensor spreads over a's shape off the axis
        if hasattr(v, "shape") and len(v.shape) > 0:
            return v
        if hasattr(v, "shape"):
            return F.broadcast_to(v, tuple(side))
        return F.zeros(tuple(side), dtype=a.dtype, like=a) + v

    parts = [joined(v) if v is not a else v for v in (prepend, a, append) if v is not None]
    if len(parts) > 1:
        a = F.concat(parts, axis=axis)
    for _ in range(n):
        length = a.shape[axis]
        hi = (slice(None),) * axis + (slice(1, length),)
        lo = (slice(None),) * axis + (slice(0, length - 1),)
        a = a[hi] - a[lo]
    return a
