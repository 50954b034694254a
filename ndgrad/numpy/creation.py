"""NumPy's creation functions: those computed from their inputs, registered (``copy``,
``vander``, ``logspace``, ``geomspace``, ``kaiser``, ``meshgrid``, ``diag``, ``diagflat``),
and the plain ones of :data:`CREATION` (``array``, ``identity``, ``tri``, ``indices``,
``fromfunction``, ``linspace``, ``real_if_close`` and the windows ``bartlett``, ``blackman``,
``hamming``, ``hanning``), which make tensors from numbers and shapes.
"""

from __future__ import annotations

import math
import numbers
import numpy as np
import operator

from ..core.backend import _placed, as_dtype, get_default_dtype
from ..core.creation import (_numpy_layout, asarray, eye, from_tensor,
                             linspace as _creation_linspace, stacked)
from ..core.dispatch import TENSOR_F
from ..core.namespace import holds_tensor
from ..core.ops.contractions import _eye
from ..core.ops.registry import Domain, LINALG, SHAPE, VARIADIC, defcomposite, sample_numpy
from ..core.tensor import Tensor, as_data, finish
from ._arraylike import _ANYC, _arr, _dtype_of, _is_floating, _ones_linked


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


def _sample_diag(d):
    k = d.integers(-2, 2)
    if d.boolean():
        return (d.array((d.integers(1, 3),)),), {"k": k}
    return (d.array((d.integers(1, 4), d.integers(1, 4))),), {"k": k}


@defcomposite(kind=SHAPE, domain=_ANYC, sample=_sample_diag)
def diag(F, v, k=0):
    """NumPy's ``diag``: for a 1-D ``v``, the square matrix with ``v`` on diagonal ``k``;
    for a 2-D ``v``, its diagonal ``k``.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.diag(ndgrad.tensor([1.0, 2.0]), k=1)
    tensor([[0., 1., 0.],
            [0., 0., 2.],
            [0., 0., 0.]])
    """
    if len(v.shape) == 2:
        return F.diagonal(v, offset=k)
    if len(v.shape) != 1:
        raise ValueError(f"diag: input must be 1-D or 2-D, got {len(v.shape)}-D")
    n = v.shape[0] + abs(k)
    # row i of the result holds vpad[i] at column i + k (a 0/1 mask picks it out)
    pad = F.zeros((abs(k),), dtype=v.dtype, like=v)
    vpad = F.concat([v, pad] if k >= 0 else [pad, v], axis=0)
    return F.expand_dims(vpad, -1) * _eye(F, n, n, k, v)


# ------------------------------------------------------------------------------ creation
def _sample_copy(d):
    return (d.array(d.shape()),), ({"order": d.choice(["K", "C", "A"])} if d.boolean() else {})


@defcomposite(kind=SHAPE, domain=_ANYC, method=True, sample=_sample_copy)
def copy(F, a, order="K", subok=False):
    """A copy of ``a`` with its own storage; differentiable (the gradient flows back to
    ``a``), as :func:`clone`. ``order`` may be "K", "A" or "C" (a Tensor's layout is its
    own); ``subok`` makes no difference (the copy is a Tensor).

    Examples
    --------
    >>> import ndgrad
    >>> x = ndgrad.tensor([1.0, 2.0], requires_grad=True)
    >>> ndgrad.copy(x)
    tensor([1., 2.], grad_fn=<CloneBackward0>)
    """
    if order not in ("K", "A", "C"):
        raise ValueError(f"copy: order={order!r} is not supported (a Tensor's memory layout "
                         "is its own); use 'K', 'A' or 'C'")
    return F.clone(a)


def _sample_vander(d):
    x = d.array((d.integers(1, 4),))
    return (x,), {"N": d.choice([None, 0, 1, 2, 4]), "increasing": d.boolean()}


@defcomposite(kind=LINALG, domain=_ANYC, method=False, sample=_sample_vander)
def vander(F, x, N=None, increasing=False):
    """The Vandermonde matrix of the 1-D ``x``: columns ``x**(N-1), ..., x**0`` (``N``
    defaults to ``len(x)``; ascending powers with ``increasing``), built by cumulative
    products as NumPy's; differentiable in ``x``.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.vander(ndgrad.tensor([1.0, 2.0, 3.0]), 3)
    tensor([[1., 1., 1.],
            [4., 2., 1.],
            [9., 3., 1.]])
    """
    if len(x.shape) != 1:
        raise ValueError(f"vander: x must be a one-dimensional array or sequence, got shape "
                         f"{tuple(x.shape)}")
    n = x.shape[0]
    N = n if N is None else int(N)
    if N < 0:
        raise ValueError(f"vander: N must be non-negative, got {N}")
    if x.dtype.kind == "b":
        x = F.astype(x, "int64")  # (NumPy: the dtype promoted with int)
    col = F.expand_dims(x, -1)
    if N == 0:
        return col[:, :0]
    cols = [_ones_linked(F, col, (n, 1))]
    if N > 1:
        cols.append(F.broadcast_to(col, (n, N - 1)))
    v = F.cumulative_prod(F.concat(cols, axis=1), axis=1)
    return v if increasing else F.flip(v, axis=1)


def _num(num, who):
    try:
        num = int(num.__index__())
    except (AttributeError, TypeError):
        raise TypeError(f"{who}: num must be an integer, got {type(num).__name__}") from None
    if num < 0:
        raise ValueError(f"{who}: number of samples, {num}, must be non-negative")
    return num


def _first_tensor(*values):
    return next((v for v in values if isinstance(v, Tensor)), None)


def _real_float(*values):
    """The real floating dtype NumPy's ``linspace`` computes ``values`` in: the widest
    floating one among them (integers count as float64), else the default dtype (Python
    numbers)."""
    size = 0
    for v in values:
        dt = _dtype_of(v)
        if dt is not None:
            size = max(size, 8 if dt.kind in "iub" else
                       dt.itemsize // 2 if dt.kind == "c" else dt.itemsize)
    return {2: "float16", 4: "float32", 8: "float64"}[size] if size else \
        str(get_default_dtype())


def _as_operand(F, v, like):
    """A number as a 0-d tensor (the default floating dtype, complex128 for a complex
    number) on ``like``'s device; a tensor as it is."""
    if _dtype_of(v) is not None:
        return v
    if not isinstance(v, numbers.Number):
        raise TypeError(f"expected a number or a tensor, got {type(v).__name__} (convert "
                        "sequences with ndgrad.asarray)")
    dt = "complex128" if isinstance(v, complex) else str(get_default_dtype())
    return F.zeros((), dtype=dt, like=like) + v


def _ndim(v):
    return len(v.shape) if _dtype_of(v) is not None else 0


def _pad_dims(F, v, nd):
    """``v`` with leading length-1 axes up to ``nd`` dimensions (NumPy's ``ndmin``)."""
    k = _ndim(v)
    return F.reshape(v, (1,) * (nd - k) + tuple(v.shape)) if k < nd else v


def _linspace(F, start, stop, num, endpoint, like):
    """NumPy's ``linspace`` along a new first axis, with F's operations: differentiable in
    ``start`` and ``stop`` (``stop`` itself is the last value with ``endpoint``)."""
    shape = tuple(F.broadcast_arrays(start, stop)[0].shape)
    div = num - 1 if endpoint else num
    t = F.astype(F.arange(num, like=like), _real_float(start, stop))
    t = F.reshape(t, (num,) + (1,) * len(shape))
    delta = stop - start
    y = t * (delta / div if div > 0 else delta) + start  # (div <= 0: t is 0, y is start)
    if endpoint and num > 1:
        end = F.expand_dims(stop + F.zeros_like(y[0]), 0)
        y = F.concat([y[:-1], end], axis=0)
    return y


def _sample_logspace(d):
    sa, sb = d.shapes(2, max_dims=2, max_side=3)
    kwargs = {"endpoint": d.boolean(), "base": d.choice([10.0, 2.0]),
              "axis": d.choice([0, -1])}
    return (d.array(sa, -1.0, 1.0), d.array(sb, -1.0, 1.0), d.choice([1, 2, 4])), kwargs


@defcomposite(nin=2, domain=Domain((-1.0, 1.0), complex=True), method=False,
              sample=_sample_logspace)
def logspace(F, start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0):
    """``num`` values ``base ** y`` for ``y`` evenly spaced from ``start`` to ``stop``
    (excluding ``stop`` unless ``endpoint``), along a new ``axis``; ``start``, ``stop`` and
    ``base`` broadcast.

    Numbers or tensors: tensor ``start``, ``stop`` and ``base`` are differentiable (as in
    JAX); the result goes on their device (numbers: the default device, default dtype).

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.logspace(0.0, 3.0, num=4)
    tensor([   1.,   10.,  100., 1000.])
    >>> start = ndgrad.tensor(0.0, requires_grad=True)
    >>> ndgrad.logspace(start, 1.0, num=2, base=2.0).sum().backward()
    >>> start.grad  # d/dstart (2**start) at 0: log(2)
    tensor(0.69314718)
    """
    num = _num(num, "logspace")
    like = _first_tensor(start, stop, base)
    start, stop = _as_operand(F, start, like), _as_operand(F, stop, like)
    nd = max(_ndim(start), _ndim(stop), _ndim(base))
    y = _linspace(F, _pad_dims(F, start, nd), _pad_dims(F, stop, nd), num, endpoint, like)
    if axis != 0:
        y = F.moveaxis(y, 0, axis)
    if _dtype_of(base) is not None:
        base = F.expand_dims(_pad_dims(F, base, nd), axis)
    out = F.pow(base, y)
    return out if dtype is None else F.astype(out, as_dtype(dtype))


def _any_zero(F, v):
    try:
        return bool(F.any(v == 0))
    except RuntimeError:  # a vmap batch has no single value to check (zero then gives NaN)
        return False


def _sample_geomspace(d):
    sa, sb = d.shapes(2, max_dims=2, max_side=3)
    sign = d.choice([1.0, -1.0])  # (same signs: off the logarithm's branch cut)
    kwargs = {"endpoint": d.boolean(), "axis": d.choice([0, -1])}
    np = sample_numpy()
    # (num >= 2: with num=1 the result is start alone, and nested grads of an unused input
    # trip a transform bug; tests/test_numeric.py covers num=1)
    return (np.asarray(sign * d.array(sa, 0.5, 3.0)), np.asarray(sign * d.array(sb, 0.5, 3.0)),
            d.choice([2, 3, 4])), kwargs


@defcomposite(nin=2, domain=Domain((0.5, 3.0), complex=True), method=False,
              sample=_sample_geomspace)
def geomspace(F, start, stop, num=50, endpoint=True, dtype=None, axis=0):
    """``num`` values in geometric progression from ``start`` to ``stop`` (exactly those at
    the ends), along a new ``axis``; negative (both) and complex values as NumPy's: the
    progression of ``start / sign(start)`` to ``stop / sign(start)``, times ``sign(start)``.

    Numbers or tensors: tensor ``start`` and ``stop`` are differentiable (as in JAX).

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.geomspace(1.0, 1000.0, num=4)
    tensor([   1.,   10.,  100., 1000.])
    >>> ndgrad.geomspace(-1.0, -16.0, num=5)
    tensor([ -1.,  -2.,  -4.,  -8., -16.])
    """
    num = _num(num, "geomspace")
    like = _first_tensor(start, stop)
    start, stop = _as_operand(F, start, like), _as_operand(F, stop, like)
    if _any_zero(F, start) or _any_zero(F, stop):
        raise ValueError("geomspace: a geometric sequence cannot include zero")
    real = _real_float(start, stop)
    complex_ = start.dtype.kind == "c" or stop.dtype.kind == "c"
    dt = {"float16": "complex64", "float32": "complex64"}.get(real, "complex128") \
        if complex_ else real
    start, stop = F.astype(start, dt), F.astype(stop, dt)  # (both complex, or both real)
    sign = F.sign(start)
    start, stop = start / sign, stop / sign
    y = F.pow(10.0, _linspace(F, F.log10(start), F.log10(stop), num, endpoint, like))
    if num > 0:  # the ends exactly
        parts = [F.expand_dims(start + F.zeros_like(y[0]), 0)]
        if num > 1:
            parts.append(y[1:-1] if endpoint else y[1:])
            if endpoint:
                parts.append(F.expand_dims(stop + F.zeros_like(y[0]), 0))
        y = F.concat(parts, axis=0) if len(parts) > 1 else parts[0]
    y = y * sign
    if axis != 0:
        y = F.moveaxis(y, 0, axis)
    if dtype is None:
        return y
    dtype = as_dtype(dtype)
    return F.astype(F.floor(y) if dtype.kind in "iu" else y, dtype)


def _sample_kaiser(d):
    return (d.integers(1, 5), d.array((), 0.0, 8.0)), {}


@defcomposite(nin=2, domain=Domain((0.0, 8.0)), method=False, sample=_sample_kaiser)
def kaiser(F, M, beta):
    """The Kaiser window of ``M`` points with shape parameter ``beta``:
    ``i0(beta * sqrt(1 - ((n - alpha) / alpha)**2)) / i0(beta)``, ``alpha = (M - 1) / 2``.

    ``beta`` may be a 0-d tensor: the window is differentiable in it (as JAX's), and goes
    on its device (a number: the default device, float64).

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.kaiser(4, 5.0)
    tensor([0.03671089, 0.7753221 , 0.7753221 , 0.03671089])
    """
    if M != int(M):
        raise ValueError(f"kaiser: M must be an integer, got {M!r}")
    M = int(M)
    if isinstance(beta, numbers.Number):
        beta = F.zeros((), dtype="float64") + float(beta)
    if len(beta.shape) != 0:
        raise ValueError(f"kaiser: beta must be a number or a 0-d tensor, got shape "
                         f"{tuple(beta.shape)}")
    if not _is_floating(beta):
        beta = F.astype(beta, "float64")
    if M <= 1:  # (NumPy: an empty window, or [1.])
        return _ones_linked(F, beta, (max(M, 0),))
    n = F.astype(F.arange(M, like=beta), beta.dtype)
    alpha = (M - 1) / 2.0
    r = F.sqrt(1.0 - ((n - alpha) / alpha) ** 2.0)
    return F.special.i0(beta * r) / F.special.i0(beta)


# ------------------------------------------------------------------ plain functions
# Functions that take no tensor to differentiate (or decide on the data): not registered.
def real_if_close(a, tol=100):
    """``real(a)`` if every imaginary part of the complex ``a`` is within ``tol`` machine
    epsilons of zero (``tol`` itself when it is below 1), else ``a`` (a real ``a`` as it
    is). Differentiable either way.

    The result's dtype depends on the values, so it cannot run under ``vmap``.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.real_if_close(ndgrad.tensor([2.1 + 4e-14j, 5.2 + 3e-15j]), tol=1000)
    tensor([2.1, 5.2])
    >>> ndgrad.real_if_close(ndgrad.tensor([2.1 + 4e-13j]))
    tensor([2.1+4.e-13j])
    """
    nd = TENSOR_F  # (the public functions, filled in once the registry is built)
    if not isinstance(a, Tensor):
        a = asarray(a)
    if a.dtype.kind != "c":
        return a
    if tol > 1:
        tol = tol * {8: 1.1920928955078125e-07, 16: 2.220446049250313e-16}.get(
            a.dtype.itemsize, 2.220446049250313e-16)
    if bool(nd.all(nd.abs(nd.imag(a)) < tol)):
        return nd.real(a)
    return a


def _layout(who, order, like, device):
    """NumPy's ``order`` (a Tensor's layout is its own) and ``like`` (a Tensor: the device
    it is on, unless ``device`` is given)."""
    if isinstance(like, Tensor):
        return like.device if device is None else device
    _numpy_layout(who, order, like)
    return device


def _float_or(dtype):
    """NumPy's ``float`` default is ndgrad's default floating dtype."""
    return get_default_dtype() if dtype is None or dtype is float else as_dtype(dtype)


def array(object, dtype=None, *, copy=True, order="K", subok=False,  # noqa: A002
          ndmin=0, like=None, device=None, requires_grad=False):
    """NumPy's ``array``: a tensor from ``object`` (nested sequences, scalars, arrays,
    tensors), with at least ``ndmin`` dimensions.

    A Tensor stays in its graph: the copy (``copy=True``, the default), the cast to
    ``dtype`` and the move to ``device`` are differentiable, as :func:`copy` and
    :func:`astype`; ``copy=None`` copies only when needed, ``copy=False`` never (a
    ValueError when a copy is needed). A (nested) list or tuple holding tensors is stacked
    differentiably, as JAX's ``jnp.array`` does: numbers in it take the tensors' dtype and
    device, and the result is a new tensor (so ``copy=False`` is a ValueError, as NumPy's
    for a list). Other data becomes a new leaf, as :func:`tensor`. ``device`` and
    ``requires_grad`` are ndgrad's additions; ``order`` may be "K", "A" or "C" and ``like``
    a Tensor (the result goes on its device).

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.array([1, 2], ndmin=2)
    tensor([[1, 2]])
    >>> x = ndgrad.tensor([1.0, 2.0], requires_grad=True)
    >>> ndgrad.array(x, dtype=ndgrad.float32)
    tensor([1., 2.], dtype=float32, grad_fn=<AstypeBackward0>)
    >>> a, b = ndgrad.tensor(3.0, requires_grad=True), ndgrad.tensor(4.0, requires_grad=True)
    >>> m = ndgrad.array([[a, 1.0], [2.0, b]])
    >>> m
    tensor([[3., 1.],
            [2., 4.]], grad_fn=<StackBackward0>)
    >>> ndgrad.linalg.det(m).backward()
    >>> a.grad, b.grad  # d det / da = b, d det / db = a
    (tensor(4.), tensor(3.))
    """
    device = _layout("array", order, like, device)
    ndmin = int(ndmin)
    if type(object) in (list, tuple) and holds_tensor(object):
        return from_tensor(stacked(object, copy, "array"), dtype, device, None, requires_grad,
                           "array", ndmin)
    if isinstance(object, Tensor):
        return from_tensor(object, dtype, device, copy, requires_grad, "array", ndmin)
    data = as_data(object, dtype, device, copy=copy)
    if data.ndim < ndmin:
        data = data.reshape((1,) * (ndmin - data.ndim) + data.shape)
    return finish(data, requires_grad)


def identity(n, dtype=None, *, like=None, device=None, requires_grad=False):
    """The ``n x n`` identity matrix (the default floating dtype unless ``dtype``).

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.identity(2)
    tensor([[1., 0.],
            [0., 1.]])
    """
    device = _layout("identity", None, like, device)
    return eye(int(n), dtype=dtype, device=device, requires_grad=requires_grad)


def tri(N, M=None, k=0, dtype=float, *, like=None, device=None, requires_grad=False):
    """``N x M`` (``M`` defaults to ``N``) with ones at and below diagonal ``k`` and zeros
    elsewhere (``float``: the default floating dtype).

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.tri(2, 3, k=1)
    tensor([[1., 1., 0.],
            [1., 1., 1.]])
    """
    device = _layout("tri", None, like, device)
    B, device = _placed(device)
    with B.on(device):
        return finish(B.tri(N, M, k, dtype=_float_or(dtype)), requires_grad)


def indices(dimensions, dtype=int, sparse=False, *, device=None, requires_grad=False):
    """The index grids of a shape: ``out[k][i0, i1, ...] = ik``, stacked into one tensor
    of shape ``(len(dimensions), *dimensions)``, or with ``sparse`` a tuple of broadcastable
    tensors (each of length ``dimensions[k]`` along axis ``k``). No derivative (indices).

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.indices((2, 3))[1]
    tensor([[0, 1, 2],
            [0, 1, 2]])
    """
    dims = tuple(int(n) for n in dimensions)
    B, device = _placed(device)
    d = _float_or(dtype) if dtype is float else as_dtype(dtype)
    with B.on(device):
        grids = [B.arange(n, dtype=d).reshape((1,) * k + (n,) + (1,) * (len(dims) - k - 1))
                 for k, n in enumerate(dims)]
        if sparse:
            return tuple(finish(g, requires_grad) for g in grids)
        out = B.stack([B.broadcast_to(g, dims) for g in grids]) if dims else \
            B.zeros((0,), dtype=d)
    return finish(out, requires_grad)


def fromfunction(function, shape, *, dtype=float, like=None, **kwargs):
    """``function(*grids, **kwargs)`` on the index grids of ``shape`` (:func:`indices` in
    ``dtype``, the default floating dtype for ``float``); its result is returned as it is.
    ``like`` may be a Tensor: the grids go on its device.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.fromfunction(lambda i, j: i + 10 * j, (2, 2))
    tensor([[ 0., 10.],
            [ 1., 11.]])
    """
    device = _layout("fromfunction", None, like, None)
    return function(*indices(shape, dtype=dtype, device=device), **kwargs)


def _window(who, M, dtype, device, requires_grad, formula):
    if M != int(M):
        raise ValueError(f"{who}: M must be an integer, got {M!r}")
    M = int(M)
    B, device = _placed(device)
    d = _float_or(dtype)
    with B.on(device):
        if M < 1:
            w = B.zeros((0,), dtype=d)
        elif M == 1:
            w = B.ones((1,), dtype=d)
        else:  # NumPy's formulas, in float64
            n = B.arange(1 - M, M, 2, dtype="float64")
            w = formula(B, n, float(M)).astype(d)
    return finish(w, requires_grad)


def bartlett(M, *, dtype=None, device=None, requires_grad=False):
    """The Bartlett (triangular) window of ``M`` points, ending in zeros.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.bartlett(5)
    tensor([0. , 0.5, 1. , 0.5, 0. ])
    """
    return _window("bartlett", M, dtype, device, requires_grad, lambda B, n, M: B.where(
        n <= 0, 1 + n / (M - 1), 1 - n / (M - 1)))


def blackman(M, *, dtype=None, device=None, requires_grad=False):
    """The Blackman window of ``M`` points.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.blackman(3)
    tensor([-1.38777878e-17,  1.00000000e+00, -1.38777878e-17])
    """
    return _window("blackman", M, dtype, device, requires_grad, lambda B, n, M: (
        0.42 + 0.5 * B.cos(math.pi * n / (M - 1)) + 0.08 * B.cos(2.0 * math.pi * n / (M - 1))))


def hamming(M, *, dtype=None, device=None, requires_grad=False):
    """The Hamming window of ``M`` points.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.hamming(3)
    tensor([0.08, 1.  , 0.08])
    """
    return _window("hamming", M, dtype, device, requires_grad,
                   lambda B, n, M: 0.54 + 0.46 * B.cos(math.pi * n / (M - 1)))


def hanning(M, *, dtype=None, device=None, requires_grad=False):
    """The Hann window of ``M`` points.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.hanning(3)
    tensor([0., 1., 0.])
    """
    return _window("hanning", M, dtype, device, requires_grad,
                   lambda B, n, M: 0.5 + 0.5 * B.cos(math.pi * n / (M - 1)))


def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0, *,
             device=None, requires_grad=False):
    """``num`` evenly spaced values from ``start`` to ``stop`` (NumPy's ``linspace``),
    excluding ``stop`` unless ``endpoint``, along a new ``axis`` when ``start`` and ``stop``
    are arrays (they broadcast).

    Numbers give a new leaf (``device``, ``requires_grad``); tensor ``start`` and ``stop``
    are differentiable (as in JAX), the result on their device. With ``retstep``, also the
    spacing.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.linspace(0, 1, 5)
    tensor([0.  , 0.25, 0.5 , 0.75, 1.  ])
    >>> stop = ndgrad.tensor(2.0, requires_grad=True)
    >>> ndgrad.linspace(0.0, stop, 3).sum().backward()   # d/dstop (0 + stop/2 + stop)
    >>> stop.grad
    tensor(1.5)
    """
    num = _num(num, "linspace")
    if _first_tensor(start, stop) is None and np.ndim(start) == 0 and np.ndim(stop) == 0:
        out = _creation_linspace(start, stop, num, endpoint=endpoint, dtype=dtype,
                                 device=device, requires_grad=requires_grad)
        if not retstep:
            return out
        div = num - 1 if endpoint else num
        return out, (stop - start) / div if div > 0 else float("nan")
    F = TENSOR_F
    like = _first_tensor(start, stop)
    start = start if isinstance(start, Tensor) or isinstance(start, numbers.Number) else \
        asarray(start, device=device)
    stop = stop if isinstance(stop, Tensor) or isinstance(stop, numbers.Number) else \
        asarray(stop, device=device)
    like = like if like is not None else _first_tensor(start, stop)
    start, stop = _as_operand(F, start, like), _as_operand(F, stop, like)
    nd = max(_ndim(start), _ndim(stop))
    y = _linspace(F, _pad_dims(F, start, nd), _pad_dims(F, stop, nd), num, endpoint, like)
    if axis != 0:
        y = F.moveaxis(y, 0, axis)
    if dtype is not None:
        y = F.astype(y, as_dtype(dtype))
    if not retstep:
        return y
    div = num - 1 if endpoint else num
    return y, ((stop - start) / div if div > 0 else (stop - start) * float("nan"))


# The plain functions, for the package to export: name -> function.
CREATION = {f.__name__: f for f in (real_if_close, array, identity, tri, indices, linspace,
                                     fromfunction, bartlett, blackman, hamming, hanning)}


def _sample_diagflat(d):
    return (d.array(d.shape(min_dims=1, max_dims=2, max_side=2)),), {"k": d.integers(-2, 2)}


@defcomposite(kind=SHAPE, domain=_ANYC, method=False, sample=_sample_diagflat)
def diagflat(F, v, k=0):
    """The square matrix with the flattened ``v`` on diagonal ``k`` (zeros elsewhere).

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.diagflat(ndgrad.tensor([[1.0, 2.0]]), k=-1)
    tensor([[0., 0., 0.],
            [1., 0., 0.],
            [0., 2., 0.]])
    """
    return F.diag(F.reshape(_arr(F, v), (-1,)), operator.index(k))
