"""``ndgrad.signal``: differentiable versions of :mod:`scipy.signal`'s convolutions, filters
and spectral functions, with SciPy's names, signatures and values.

* convolutions (N-D, differentiable in both inputs): ``convolve``, ``correlate``,
  ``fftconvolve``, ``oaconvolve``, ``convolve2d``, ``correlate2d``;
* IIR filters (differentiable in the coefficients, the signal and the initial state):
  ``lfilter``, ``sosfilt``, their steady states ``lfilter_zi``, ``sosfilt_zi``, and the
  zero-phase ``filtfilt``, ``sosfiltfilt`` (forwards and backwards: compositions of these);
* ``detrend``, ``stft``, ``istft``, ``welch``;
* windows (constants): :mod:`ndgrad.signal.windows` and ``get_window``.

Everything but the filters is written with ndgrad operations (pads, products, sums,
:mod:`ndgrad.fft`), so it is differentiable in every transform (reverse and forward mode,
any order, ``vmap``) without rules of its own; nothing here is registered.

Note [Direct convolution]
~~~~~~~~~~~~~~~~~~~~~~~~~
``method="direct"`` sums one shifted copy of the larger input per element of the smaller
(``out = sum_k v[k] * a[i - k]``: slices and products only), so its cost and its graph grow
with the smaller input's size; ``method="fft"`` pads both inputs to the full size and
multiplies their (real, for real inputs) FFTs. Both give SciPy's values up to rounding.
``method="auto"`` takes the FFT when the smaller input has more than
``_DIRECT_MAX`` elements (SciPy times the two instead).

Note [Derivative of lfilter]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~
With ``a[0] = 1`` (``lfilter`` divides by it first, with ndgrad operations) the filter is
``A y = B x + d``, where ``A`` and ``B`` are the lower-triangular Toeplitz matrices of ``a``
and ``b`` (truncated convolutions) and ``d`` is ``zi`` followed by zeros (SciPy's initial
state of the transposed direct form II enters the difference equation as this forcing).
Reverse mode: ``v = A⁻ᵀ ȳ`` is the filter ``1/A`` run backwards in time on ``ȳ``; then
``x̄ = Bᵀ v`` (``x̄[m] = sum_k b[k] v[m + k]``), ``z̄i = v[:K]``,
``b̄[k] = sum_n v[n] x[n - k]`` and ``ā[k] = -sum_n v[n] y[n - k]``. Forward mode:
``ẏ = A⁻¹(Ḃ x + B ẋ + ḋ - Ȧ y)``, three filters. The forward pass is SciPy's ``lfilter`` on
host values inside a :class:`~ndgrad.func.custom_vjp` whose rules call the same function
again, so the rules are differentiable too (second derivatives, ``jacfwd(jacrev(.))``).
The final state ``zf`` is a linear function of the last ``K`` samples of ``x`` and ``y`` (and
of ``zi`` when the signal is shorter than ``K``), computed with ndgrad operations.

Note [Gustafsson's filtfilt]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~
``filtfilt(method="gust")`` (Gustafsson 1996): filtering forwards then backwards from the
initial states ``x0`` (forward pass) and ``x1`` (backward pass) gives
``y_fb = y_fb⁰ + W [x0; x1]``, and backwards then forwards ``y_bf = y_bf⁰ + W' [x0; x1]``,
both linear in the states; the states are the least-squares solution of
``(W - W') [x0; x1] = y_bf⁰ - y_fb⁰``. ``W`` is built from the zero-input responses of the
unit states (``Obs``, an :func:`lfilter` with ``zi = e_0``, shifted per state) and their
filtered reversal (``S``), as in SciPy's ``_filtfilt_gust``; ``irlen`` keeps only its first
and last ``irlen`` rows. Everything is :func:`lfilter`, flips, concatenations and
:func:`ndgrad.linalg.lstsq`, so the result is differentiable in ``b``, ``a`` and ``x`` in
every transform.
"""

from __future__ import annotations

import math

import numpy as np

from ...numpy import array_api as _array_api
from .. import fft as _fft
from .. import linalg as _linalg
from ...core import backend as _backend
from ...core import creation as _creation
from ...core import ops as _ops
from ...core.tensor import Tensor, host_array as _host
from ...functional.custom import custom_vjp
from . import windows
from .windows import get_window

__name__ = "ndgrad.signal"  # its public name (Note [Public module names] in scipy/__init__.py)

__all__ = ["convolve", "correlate", "fftconvolve", "oaconvolve", "convolve2d", "correlate2d",
           "lfilter", "lfilter_zi", "filtfilt", "sosfilt", "sosfilt_zi",
           "sosfiltfilt", "detrend", "stft", "istft", "welch", "get_window", "windows"]

_MODES = ("full", "same", "valid")
_METHODS = ("auto", "direct", "fft")
_DIRECT_MAX = 64  # (Note [Direct convolution])


# ------------------------------------------------------------------------------- helpers
def _tensor(x, who, what):
    """``x`` as a floating or complex Tensor (integers and booleans become float64)."""
    t = x if isinstance(x, Tensor) else _creation.asarray(x)
    if t.dtype.kind not in "fc":
        t = t.astype(_backend.float64)
    return t


def _is_complex(t):
    return t.dtype.kind == "c"


def _check_mode(mode, who, method=None):
    if mode not in _MODES:
        raise ValueError(f"{who}: mode must be 'full', 'same' or 'valid', got {mode!r}")
    if method is not None and method not in _METHODS:
        raise ValueError(f"{who}: method must be 'auto', 'direct' or 'fft', got {method!r}")


def _swap_needed(who, s1, s2, axes):
    """SciPy's rule for mode 'valid': one input must be at least as large as the other along
    every convolved axis; the inputs are swapped when the second is the larger."""
    ok1 = all(s1[i] >= s2[i] for i in axes)
    ok2 = all(s2[i] >= s1[i] for i in axes)
    if not (ok1 or ok2):
        raise ValueError(f"{who}: for mode 'valid' one input must be at least as large as the "
                         f"other in every dimension, got shapes {tuple(s1)} and {tuple(s2)}")
    return not ok1


def _crop(full, in1_shape, in2_shape, mode, axes):
    """The ``mode`` part of a full convolution along ``axes`` (SciPy's centering)."""
    if mode == "full":
        return full
    idx = [slice(None)] * len(full.shape)
    for ax in axes:
        n, m = in1_shape[ax], in2_shape[ax]
        if mode == "same":
            start = (full.shape[ax] - n) // 2
            idx[ax] = slice(start, start + n)
        else:
            lo, hi = min(n, m), max(n, m)
            idx[ax] = slice(lo - 1, hi)
    return full[tuple(idx)]


def _shifted_sum(a, v, out_shape):
    """``out[i] = sum_k v[k] a[i + m - 1 - k]`` for ``i < out_shape``: the convolution of
    ``v`` with the part of ``a`` that the output needs (``a`` already padded or cropped)."""
    m = v.shape
    out = None
    for k in np.ndindex(*m):
        idx = tuple(slice(mi - 1 - ki, mi - 1 - ki + oi) for mi, ki, oi in zip(m, k, out_shape))
        term = a[idx] * v[k]
        out = term if out is None else out + term
    return out


def _direct_full(a, v):
    """Full N-D convolution, looping over the smaller input's elements."""
    if _size(v.shape) > _size(a.shape):
        a, v = v, a
    shape = tuple(n + m - 1 for n, m in zip(a.shape, v.shape))
    padded = _ops.pad(a, [(m - 1, m - 1) for m in v.shape])
    return _shifted_sum(padded, v, shape)


def _fft_full(a, v, axes):
    """Full convolution along ``axes`` by FFTs (the other axes broadcast)."""
    shape = [max(n, m) for n, m in zip(a.shape, v.shape)]
    for ax in axes:
        shape[ax] = a.shape[ax] + v.shape[ax] - 1
    s = [shape[ax] for ax in axes]
    if _is_complex(a) or _is_complex(v):
        return _fft.ifftn(_fft.fftn(a, s=s, axes=axes) * _fft.fftn(v, s=s, axes=axes),
                             s=s, axes=axes)
    return _fft.irfftn(_fft.rfftn(a, s=s, axes=axes) * _fft.rfftn(v, s=s, axes=axes),
                          s=s, axes=axes)


def _size(shape):
    return math.prod(shape)


def _same_ndim(in1, in2, who):
    if len(in1.shape) != len(in2.shape):
        raise ValueError(f"{who}: in1 and in2 should have the same dimensionality, got shapes "
                         f"{tuple(in1.shape)} and {tuple(in2.shape)}")


def _empty_result(in1, in2, who):
    if _size(in1.shape) == 0 or _size(in2.shape) == 0:
        raise ValueError(f"{who}: the inputs cannot be empty, got shapes {tuple(in1.shape)} "
                         f"and {tuple(in2.shape)}")


# ------------------------------------------------------------------------------- convolutions
def convolve(in1, in2, mode="full", method="auto"):
    """Convolve two N-dimensional tensors (``scipy.signal.convolve``); differentiable in both.

    Parameters
    ----------
    in1, in2 : Tensor or array_like
        Inputs with the same number of dimensions (integer inputs are computed in float64).
    mode : {"full", "valid", "same"}
        The full discrete convolution, only the part that does not rely on zero padding
        (one input must then be at least as large as the other in every dimension), or the
        part centered with the size of ``in1``.
    method : {"auto", "direct", "fft"}
        Sums of shifted copies, or FFTs (Note [Direct convolution]); the values agree up to
        rounding.

    Returns
    -------
    Tensor
        The convolution: along each axis ``n1 + n2 - 1`` long (``"full"``),
        ``max(n1, n2) - min(n1, n2) + 1`` (``"valid"``), or as ``in1`` (``"same"``).

    Examples
    --------
    >>> import ndgrad
    >>> from ndgrad import signal
    >>> signal.convolve(ndgrad.tensor([1.0, 2.0, 3.0]), ndgrad.tensor([0.0, 1.0, 0.5]))
    tensor([0. , 1. , 2.5, 4. , 1.5])
    >>> signal.convolve(ndgrad.tensor([1.0, 2.0, 3.0]), ndgrad.tensor([0.0, 1.0, 0.5]),
    ...                 mode="same", method="fft")
    tensor([1. , 2.5, 4. ])
    """
    in1, in2 = _tensor(in1, "convolve", "in1"), _tensor(in2, "convolve", "in2")
    _check_mode(mode, "convolve", method)
    if len(in1.shape) == 0 and len(in2.shape) == 0:
        return in1 * in2
    _same_ndim(in1, in2, "convolve")
    _empty_result(in1, in2, "convolve")
    axes = list(range(len(in1.shape)))
    s1, s2 = tuple(in1.shape), tuple(in2.shape)
    if mode == "valid" and _swap_needed("convolve", s1, s2, axes):
        in1, in2 = in2, in1
        s1, s2 = s2, s1
    if method == "auto":
        method = "fft" if min(_size(s1), _size(s2)) > _DIRECT_MAX else "direct"
    if method == "fft":
        return _crop(_fft_full(in1, in2, axes), s1, s2, mode, axes)
    if mode == "valid":
        return _shifted_sum(in1, in2, tuple(n - m + 1 for n, m in zip(s1, s2)))
    if mode == "same" and _size(s2) <= _size(s1):  # pad in1 only as far as the output needs
        starts = [(m - 1) // 2 for m in s2]
        padded = _ops.pad(in1, [(m - 1 - st, st) for m, st in zip(s2, starts)])
        return _shifted_sum(padded, in2, s1)
    return _crop(_direct_full(in1, in2), s1, s2, mode, axes)


def _reverse_conj(x):
    x = _ops.flip(x)
    return _ops.conj(x) if _is_complex(x) else x


def correlate(in1, in2, mode="full", method="auto"):
    """Cross-correlate two N-dimensional tensors (``scipy.signal.correlate``):
    ``z[k] = sum_l in1[l] conj(in2[l - k])``, the convolution of ``in1`` with ``in2``
    reversed and conjugated; differentiable in both.

    Parameters
    ----------
    in1, in2 : Tensor or array_like
        Inputs with the same number of dimensions.
    mode : {"full", "valid", "same"}
        As in :func:`convolve`.
    method : {"auto", "direct", "fft"}
        As in :func:`convolve`.

    Returns
    -------
    Tensor
        The cross-correlation, shaped as :func:`convolve`'s result.

    Examples
    --------
    >>> import ndgrad
    >>> from ndgrad import signal
    >>> signal.correlate(ndgrad.tensor([1.0, 2.0, 3.0]), ndgrad.tensor([0.0, 1.0, 0.5]))
    tensor([0.5, 2. , 3.5, 3. , 0. ])
    """
    in1, in2 = _tensor(in1, "correlate", "in1"), _tensor(in2, "correlate", "in2")
    _check_mode(mode, "correlate", method)
    if len(in1.shape) == 0 and len(in2.shape) == 0:
        return in1 * (_ops.conj(in2) if _is_complex(in2) else in2)
    _same_ndim(in1, in2, "correlate")
    return convolve(in1, _reverse_conj(in2), mode, method)


def _fft_axes(in1, in2, axes, who):
    nd = len(in1.shape)
    if axes is None:
        return list(range(nd))
    axes = [axes] if isinstance(axes, int) else list(axes)
    out = []
    for ax in axes:
        if not -nd <= ax < nd:
            raise ValueError(f"{who}: axis {ax} is out of range for {nd}-D inputs")
        out.append(ax % nd)
    if len(set(out)) != len(out):
        raise ValueError(f"{who}: axes must be unique, got {axes}")
    for ax in range(nd):
        if ax not in out and in1.shape[ax] != in2.shape[ax] and 1 not in (in1.shape[ax],
                                                                          in2.shape[ax]):
            raise ValueError(f"{who}: in1 and in2 must have equal sizes (or size 1) along the "
                             f"axes that are not convolved, got shapes {tuple(in1.shape)} and "
                             f"{tuple(in2.shape)} at axis {ax}")
    return sorted(out)


def fftconvolve(in1, in2, mode="full", axes=None):
    """Convolve two N-dimensional tensors by FFTs (``scipy.signal.fftconvolve``), along
    ``axes`` (default: all; the other axes broadcast); differentiable in both.

    Parameters
    ----------
    in1, in2 : Tensor or array_like
        Inputs with the same number of dimensions.
    mode : {"full", "valid", "same"}
        As in :func:`convolve`, along ``axes``.
    axes : int or sequence of int, optional
        The axes to convolve over.

    Returns
    -------
    Tensor
        The convolution, shaped along ``axes`` as :func:`convolve`'s result (the other
        axes broadcast).

    Examples
    --------
    >>> import ndgrad
    >>> from ndgrad import signal
    >>> x = ndgrad.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    >>> signal.fftconvolve(x, ndgrad.tensor([[1.0, -1.0]]), axes=1)
    tensor([[ 1.,  1.,  1., -3.],
            [ 4.,  1.,  1., -6.]])
    """
    in1, in2 = _tensor(in1, "fftconvolve", "in1"), _tensor(in2, "fftconvolve", "in2")
    _check_mode(mode, "fftconvolve")
    if len(in1.shape) == 0 and len(in2.shape) == 0:
        return in1 * in2
    _same_ndim(in1, in2, "fftconvolve")
    _empty_result(in1, in2, "fftconvolve")
    axes = _fft_axes(in1, in2, axes, "fftconvolve")
    s1, s2 = tuple(in1.shape), tuple(in2.shape)
    if mode == "valid" and _swap_needed("fftconvolve", s1, s2, axes):
        in1, in2, s1, s2 = in2, in1, s2, s1
    return _crop(_fft_full(in1, in2, axes), s1, s2, mode, axes)


def oaconvolve(in1, in2, mode="full", axes=None):
    """Convolve two N-dimensional tensors (``scipy.signal.oaconvolve``'s signature and values).

    Computed by :func:`fftconvolve` (one FFT of the full size, not SciPy's overlap-add
    blocks): the values are the same up to rounding, only the cost differs for a long
    signal and a short kernel.

    Examples
    --------
    >>> import ndgrad
    >>> from ndgrad import signal
    >>> signal.oaconvolve(ndgrad.tensor([1.0, 2.0, 3.0, 4.0]), ndgrad.tensor([1.0, 1.0]),
    ...                   mode="valid")
    tensor([3., 5., 7.])
    """
    return fftconvolve(in1, in2, mode, axes)


_BOUNDARIES = {"fill": "constant", "pad": "constant", "wrap": "wrap", "circular": "wrap",
               "symm": "symmetric", "symmetric": "symmetric"}


def _conv2d(in1, in2, mode, boundary, fillvalue, who, corr=False):
    in1, in2 = _tensor(in1, who, "in1"), _tensor(in2, who, "in2")
    if len(in1.shape) != 2 or len(in2.shape) != 2:
        raise ValueError(f"{who}: inputs must both be 2-D arrays, got shapes "
                         f"{tuple(in1.shape)} and {tuple(in2.shape)}")
    _check_mode(mode, who)
    if boundary not in _BOUNDARIES:
        raise ValueError(f"{who}: boundary must be 'fill', 'wrap' or 'symm', got {boundary!r}")
    if np.ndim(fillvalue) != 0:
        raise ValueError(f"{who}: fillvalue must be a scalar, got shape {np.shape(fillvalue)}")
    _empty_result(in1, in2, who)
    s1, s2 = tuple(in1.shape), tuple(in2.shape)
    swapped = mode == "valid" and _swap_needed(who, s1, s2, (0, 1))
    if swapped:
        in1, in2, s1, s2 = in2, in1, s2, s1
    if mode == "valid":
        return _shifted_sum(in1, in2, (s1[0] - s2[0] + 1, s1[1] - s2[1] + 1)), swapped
    if mode == "full":
        widths = [(m - 1, m - 1) for m in s2]
        shape = tuple(n + m - 1 for n, m in zip(s1, s2))
    else:
        # SciPy centers 'same' at (m - 1) // 2 of the full output, and a correlation (the
        # convolution with the reversed kernel) at m // 2
        starts = [m // 2 if corr else (m - 1) // 2 for m in s2]
        widths = [(m - 1 - st, st) for m, st in zip(s2, starts)]
        shape = s1
    pmode = _BOUNDARIES[boundary]
    if pmode == "constant":
        fill = complex(fillvalue) if isinstance(fillvalue, complex) else fillvalue
        if fill != 0:  # SciPy: the fill value is converted to the result's type
            fill = fill if _is_complex(in1) else (fill.real if isinstance(fill, complex)
                                                 else fill)
            padded = _ops.pad(in1, widths, mode="constant", constant_values=fill)
        else:
            padded = _ops.pad(in1, widths)
    else:
        for (lo, hi), n in zip(widths, s1):
            if max(lo, hi) > n:
                raise ValueError(f"{who}: boundary {boundary!r} needs in1 at least as large "
                                 f"as in2 minus one in every dimension, got shapes {s1} and {s2}")
        padded = _ops.pad(in1, widths, mode=pmode)
    return _shifted_sum(padded, in2, shape), swapped


def convolve2d(in1, in2, mode="full", boundary="fill", fillvalue=0):
    """Convolve two 2-D tensors (``scipy.signal.convolve2d``), with the boundary condition
    ``boundary`` for ``in1``; differentiable in both.

    Parameters
    ----------
    in1, in2 : Tensor or array_like
        2-D inputs.
    mode : {"full", "valid", "same"}
        As in :func:`convolve`.
    boundary : {"fill", "wrap", "symm"}
        Pad ``in1`` with ``fillvalue``, periodically, or by reflection (repeating the edge).
    fillvalue : scalar
        The pad value of ``boundary="fill"`` (a constant: not differentiated).

    Returns
    -------
    Tensor
        The 2-D convolution, shaped as :func:`convolve`'s result.

    Examples
    --------
    >>> import ndgrad
    >>> from ndgrad import signal
    >>> image = ndgrad.tensor([[1.0, 2.0], [3.0, 4.0]])
    >>> signal.convolve2d(image, ndgrad.tensor([[1.0, 1.0]]), mode="same", boundary="wrap")
    tensor([[3., 3.],
            [7., 7.]])
    """
    return _conv2d(in1, in2, mode, boundary, fillvalue, "convolve2d")[0]


def correlate2d(in1, in2, mode="full", boundary="fill", fillvalue=0):
    """Cross-correlate two 2-D tensors (``scipy.signal.correlate2d``); differentiable in both.

    The convolution of ``in1`` with ``in2`` reversed along both axes and conjugated, with
    :func:`convolve2d`'s ``mode``, ``boundary`` and ``fillvalue``.

    Examples
    --------
    >>> import ndgrad
    >>> from ndgrad import signal
    >>> image = ndgrad.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    >>> signal.correlate2d(image, ndgrad.tensor([[1.0, -1.0]]), mode="valid")
    tensor([[-1., -1.],
            [-1., -1.]])
    """
    t1, t2 = _tensor(in1, "correlate2d", "in1"), _tensor(in2, "correlate2d", "in2")
    if len(t1.shape) != 2 or len(t2.shape) != 2:
        raise ValueError(f"correlate2d: inputs must both be 2-D arrays, got shapes "
                         f"{tuple(t1.shape)} and {tuple(t2.shape)}")
    _check_mode(mode, "correlate2d")
    if mode == "valid" and _swap_needed("correlate2d", t1.shape, t2.shape, (0, 1)):
        # SciPy: correlate in2 with in1 (conjugated), reversed
        out = _conv2d(t2, _reverse_conj(t1), mode, boundary, fillvalue, "correlate2d")[0]
        return _ops.flip(out)
    return _conv2d(t1, _reverse_conj(t2), mode, boundary, fillvalue, "correlate2d", True)[0]


# ------------------------------------------------------------------------------- filters
def _iir_value(b, a, x, zi):
    from scipy.signal import lfilter as scipy_lfilter
    ah = _host(a)
    if not np.isfinite(ah).all():
        # (a[0] == 0 makes a / a[0] inf or nan; lfilter refuses it before normalizing when it
        # can read a[0], and here when it could not: a batch of coefficients under vmap)
        raise ValueError(f"ndgrad.signal.lfilter: the denominator divided by its leading "
                         f"coefficient, a / a[0] = {ah.tolist()}, is not finite: filter "
                         "coefficient a[0] == 0 not supported (as in SciPy), nor an inf or "
                         "nan coefficient")
    y, _ = scipy_lfilter(_host(b), ah, _host(x), axis=-1, zi=_host(zi))
    return _creation.asarray(np.asarray(y, dtype=x.dtype), device=x.device)


def _iir_fun(b, a, x, zi):
    """``y`` with ``A y = B x + d`` (``a[0] = 1``, ``x`` filtered along its last axis, ``zi``
    of shape ``x.shape[:-1] + (K,)``): Note [Derivative of lfilter]."""
    return _iir_value(b, a, x, zi)


_iir = custom_vjp(_iir_fun, vmap_method="sequential", _public=dict(
    name="ndgrad.signal.lfilter",
    vmap="SciPy's lfilter runs on host arrays (as documented)"))


def _lag_sum(u, w, k):
    """``sum_n u[..., n] w[..., n - k]`` over every axis (0 when ``k`` reaches past the end)."""
    n = u.shape[-1]
    if k >= n:
        return _creation.zeros((), dtype=u.dtype, device=u.device)
    return _ops.sum(u[..., k:] * w[..., :n - k])


def _iir_fwd(b, a, x, zi):
    y = _iir(b, a, x, zi)
    return y, (b, a, x, y)


def _iir_bwd(res, g):
    b, a, x, y = res
    n, k = x.shape[-1], b.shape[0] - 1
    e0 = _ops.concatenate([_creation.ones(1, dtype=a.dtype, device=a.device),
                          _creation.zeros(k, dtype=a.dtype, device=a.device)])
    rest = tuple(g.shape[:-1])
    v = _ops.flip(_iir(e0, a, _ops.flip(g, axis=-1), _creation.zeros(rest + (k,), dtype=g.dtype,
                                                                device=g.device)), axis=-1)
    xbar = None
    for j in range(min(k + 1, n)):  # x̄[m] = sum_j b[j] v[m + j]
        term = b[j] * (_ops.pad(v[..., j:], [(0, 0)] * len(rest) + [(0, j)]) if j else v)
        xbar = term if xbar is None else xbar + term
    zibar = v[..., :k] if n >= k else _ops.pad(v, [(0, 0)] * len(rest) + [(0, k - n)])
    bbar = _ops.stack([_lag_sum(v, x, j) for j in range(k + 1)])
    abar = -_ops.stack([_lag_sum(v, y, j) for j in range(k + 1)])
    return bbar, abar, xbar, zibar


def _iir_jvp(primals, tangents):
    b, a, x, zi = primals
    db, da, dx, dzi = tangents
    y = _iir(b, a, x, zi)
    zero = _creation.zeros_like(zi)
    dy = _iir(b, a, dx, dzi) + _iir(db, a, x, zero) - _iir(da, a, y, zero)
    return y, dy


_iir.defvjp(_iir_fwd, _iir_bwd)
_iir.defjvp(_iir_jvp)


def _final_state(b, a, x, y, zi, k):
    """``zf[i] = sum_{j=i+1}^{K} (b[j] x[N+i-j] - a[j] y[N+i-j]) + zi[i + N]`` (terms with a
    negative time index, or ``i + N >= K``, left out): the state after the last sample."""
    n = x.shape[-1]
    lead = [(0, 0)] * (len(x.shape) - 1)
    if n < k:  # the last K samples, zeros before the start
        x = _ops.pad(x, lead + [(k - n, 0)])
        y = _ops.pad(y, lead + [(k - n, 0)])
    xl, yl = x[..., x.shape[-1] - k:], y[..., y.shape[-1] - k:]
    i, j = np.meshgrid(np.arange(k), np.arange(k), indexing="ij")
    idx = np.where(j >= i, k + i - j, 0)  # M[i, j] = c[K + i - j] for j >= i
    mask = _creation.asarray((j >= i).astype(np.float64), dtype=b.dtype, device=b.device)
    mb, ma = b[idx] * mask, a[idx] * mask
    zf = _ops.matmul(xl, _ops.matrix_transpose(mb)) - _ops.matmul(yl, _ops.matrix_transpose(ma))
    if n < k:
        zf = zf + _ops.pad(zi[..., n:], lead + [(0, n)])
    return zf


_A0_ZERO = ("filter coefficient a[0] == 0 not supported (as in SciPy): the leading "
            "coefficient of the denominator must be nonzero")


def _leading_values(c):
    """The host values of ``c`` (coefficients), or None for a vmap batch, which has no single
    value (the host rule checks each element then)."""
    try:
        return _host(c)
    except RuntimeError:
        return None


# Note [Coefficients checked under vmap]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A batch of coefficients under vmap has no single value to read, so the checks that read
# them (a[0] == 0 for lfilter and filtfilt, sos[:, 3] == 0 for sosfilt and sosfiltfilt,
# lfilter_zi's leading zeros) run on each batch element instead, through a function that vmap
# runs once per element on the coefficients detached (nothing is differentiated through it),
# and refuse what the call without vmap refuses, naming the function and the element's
# coefficients. Without them an element with a[0] == 0 made a row of inf or nan (b / a[0])
# where no host rule looked (lfilter with one coefficient each, lfilter_zi's solve, filtfilt's
# gain), and the error came from lfilter's host rule, naming it, elsewhere.
_ELEMENT_CHECKS = {}


def _check_each_element(c, who, check):
    """``check(values, who)`` on each batch element's ``c`` under vmap (Note [Coefficients
    checked under vmap])."""
    fn = _ELEMENT_CHECKS.get((who, check))
    if fn is None:
        def checked(c):
            check(_host(c), who)
            return c
        fn = custom_vjp(checked, vmap_method="sequential", _public=dict(
            name=f"ndgrad.signal.{who}'s check of its coefficients",
            vmap="it reads each batch element's coefficients on the host, to refuse there "
                 "what the call without vmap refuses"))
        fn.defvjp(lambda c: (checked(c), None), lambda res, g: (g,))
        _ELEMENT_CHECKS[(who, check)] = fn
    fn(c.detach())


def _element(values):
    return f"in a batch element of vmap, whose coefficients are {values.tolist()}"


def _a0_of_element(ah, who):
    if ah[0] == 0:
        raise ValueError(f"ndgrad.signal.{who}: {_A0_ZERO}; {_element(ah)}")


def _check_a0(a, who, each=True):
    """SciPy's refusal of ``a[0] == 0`` (``ndgrad.signal.lfilter`` would divide by it); for a
    vmap batch, per element unless ``each`` is False (a host rule refuses it then)."""
    lead = _leading_values(a[0])
    if lead is None:
        if each:
            _check_each_element(a, who, _a0_of_element)
    elif lead == 0:
        raise ValueError(f"ndgrad.signal.{who}: {_A0_ZERO}")


def _sections_refusal(lead, who, where=""):
    if (lead == 0).any():
        s = int(np.flatnonzero(lead == 0)[0])
        raise ValueError(f"ndgrad.signal.{who}: filter coefficient sos[{s}, 3] == 0 not "
                         f"supported: it is section {s}'s a[0], which the section is divided "
                         f"by (SciPy requires sos[:, 3] to be all ones){where}")


def _sections_of_element(sh, who):
    _sections_refusal(sh[:, 3], who, f"; {_element(sh)}")


def _check_sections(sos, who):
    """Each section's ``a0`` (``sos[s, 3]``) must be nonzero: it is divided by."""
    lead = _leading_values(sos[:, 3])
    if lead is None:
        _check_each_element(sos, who, _sections_of_element)
    else:
        _sections_refusal(lead, who)


def _real_float(t, who, what):
    if _is_complex(t):
        raise TypeError(f"{who}: complex {what} is not supported (only real filters and "
                        "signals); filter the real and imaginary parts separately")
    return t


def lfilter(b, a, x, axis=-1, zi=None):
    """Filter ``x`` along ``axis`` with the IIR filter ``b(z) / a(z)``
    (``scipy.signal.lfilter``):
    ``a[0] y[n] = sum_k b[k] x[n - k] - sum_{k>=1} a[k] y[n - k]``.

    Differentiable in ``b``, ``a``, ``x`` and ``zi``, exactly, in reverse and forward mode
    and to any order (Note [Derivative of lfilter]: SciPy filters on the host; the derivatives
    are filters again). Real inputs only. Under :func:`~ndgrad.func.vmap` SciPy runs once per
    batch element.

    Parameters
    ----------
    b, a : Tensor or array_like
        1-D numerator and denominator coefficients; ``a[0]`` must be nonzero.
    x : Tensor or array_like
        The signal (N-D).
    axis : int
        The axis of ``x`` to filter along.
    zi : Tensor or array_like, optional
        Initial state (SciPy's transposed direct form II), of ``x``'s shape with
        ``max(len(a), len(b)) - 1`` along ``axis``.

    Returns
    -------
    y : Tensor
        The output, of ``x``'s shape.
    zf : Tensor
        The final state (only when ``zi`` is given), differentiable too.

    Examples
    --------
    >>> import ndgrad
    >>> from ndgrad import signal
    >>> from ndgrad.func import grad
    >>> x = ndgrad.tensor([1.0, 0.0, 0.0, 0.0])
    >>> signal.lfilter([1.0], [1.0, -0.5], x)  # impulse response 0.5**n
    tensor([1.   , 0.5  , 0.25 , 0.125])
    >>> grad(lambda a: signal.lfilter([1.0], a, x).sum())(ndgrad.tensor([1.0, -0.5]))
    tensor([-3.25, -2.75])
    """
    b = _real_float(_tensor(b, "lfilter", "b"), "lfilter", "b")
    a = _real_float(_tensor(a, "lfilter", "a"), "lfilter", "a")
    x = _real_float(_tensor(x, "lfilter", "x"), "lfilter", "x")
    if len(b.shape) != 1 or len(a.shape) != 1 or b.shape[0] == 0 or a.shape[0] == 0:
        raise ValueError(f"lfilter: b and a must be non-empty 1-D arrays, got shapes "
                         f"{tuple(b.shape)} and {tuple(a.shape)}")
    nd = len(x.shape)
    if nd == 0:
        raise ValueError("lfilter: x must have at least one dimension")
    if not -nd <= axis < nd:
        raise ValueError(f"lfilter: axis {axis} is out of range for a {nd}-D signal")
    k = max(a.shape[0], b.shape[0]) - 1
    _check_a0(a, "lfilter", each=k == 0)  # (k > 0: the host rule checks each element)
    dtype = _array_api.result_type(b, a, x) if zi is None else _array_api.result_type(
        b, a, x, _tensor(zi, "lfilter", "zi"))
    b, a, x = b.astype(dtype), a.astype(dtype), x.astype(dtype)
    if k + 1 > b.shape[0]:
        b = _ops.concatenate([b, _creation.zeros(k + 1 - b.shape[0], dtype=dtype, device=b.device)])
    if k + 1 > a.shape[0]:
        a = _ops.concatenate([a, _creation.zeros(k + 1 - a.shape[0], dtype=dtype, device=a.device)])
    # normalized: a[0] becomes the constant 1 (Note [Derivative of lfilter])
    b = b / a[0]
    a = _ops.concatenate([_creation.ones(1, dtype=dtype, device=a.device), a[1:] / a[0]])
    xm = _ops.moveaxis(x, axis, -1)
    shape_z = tuple(xm.shape[:-1]) + (k,)
    if zi is None:
        zim = _creation.zeros(shape_z, dtype=dtype, device=x.device)
    else:
        zi = _real_float(_tensor(zi, "lfilter", "zi"), "lfilter", "zi").astype(dtype)
        if len(zi.shape) != nd:
            raise ValueError(f"lfilter: zi must have {nd} dimensions (x's shape with {k} "
                             f"along axis {axis}), got shape {tuple(zi.shape)}")
        zim = _ops.moveaxis(zi, axis, -1)
        if tuple(zim.shape) != shape_z:
            try:
                zim = _ops.broadcast_to(zim, shape_z)
            except ValueError:
                expected = list(x.shape)
                expected[axis] = k
                raise ValueError(f"lfilter: zi must have shape {tuple(expected)} (x's shape "
                                 f"with max(len(a), len(b)) - 1 = {k} along axis {axis}), "
                                 f"got {tuple(zi.shape)}") from None
    if k == 0:
        y = b[0] * xm
    else:
        y = _iir(b, a, xm, zim)
    y_out = _ops.moveaxis(y, -1, axis)
    if zi is None:
        return y_out
    zf = zim if k == 0 else _final_state(b, a, xm, y, zim, k)
    return y_out, _ops.moveaxis(zf, -1, axis)


def sosfilt(sos, x, axis=-1, zi=None):
    """Filter ``x`` with a cascade of second-order sections (``scipy.signal.sosfilt``).

    Each row of ``sos`` is ``[b0, b1, b2, a0, a1, a2]``; the sections are :func:`lfilter`
    one after the other, so the output is differentiable in ``sos``, ``x`` and ``zi``.
    SciPy requires ``a0 == 1``; here each section is divided by its ``a0`` (nonzero), so the
    derivative in ``a0`` is that of the normalized filter.

    Parameters
    ----------
    sos : Tensor or array_like
        Shape ``(n_sections, 6)``.
    x : Tensor or array_like
        The signal.
    axis : int
        The axis of ``x`` to filter along.
    zi : Tensor or array_like, optional
        Initial states, shape ``(n_sections, ..., 2, ...)``: ``x``'s shape with 2 along
        ``axis``, for each section.

    Returns
    -------
    y : Tensor
    zf : Tensor
        The final states (only when ``zi`` is given).

    Examples
    --------
    >>> import ndgrad
    >>> from ndgrad import signal
    >>> sos = ndgrad.tensor([[1.0, 0.0, 0.0, 1.0, -0.5, 0.0]])
    >>> signal.sosfilt(sos, ndgrad.tensor([1.0, 0.0, 0.0]))
    tensor([1.  , 0.5 , 0.25])
    """
    sos = _real_float(_tensor(sos, "sosfilt", "sos"), "sosfilt", "sos")
    if len(sos.shape) != 2 or sos.shape[1] != 6 or sos.shape[0] == 0:
        raise ValueError(f"sosfilt: sos must have shape (n_sections, 6), got "
                         f"{tuple(sos.shape)}")
    _check_sections(sos, "sosfilt")
    return _sosfilt(sos, x, axis, zi)


def _sosfilt(sos, x, axis, zi):
    """:func:`sosfilt` of a checked ``sos``."""
    x = _tensor(x, "sosfilt", "x")
    nsec = sos.shape[0]
    if zi is not None:
        zi = _tensor(zi, "sosfilt", "zi")
        if len(zi.shape) < 1 or zi.shape[0] != nsec:
            raise ValueError(f"sosfilt: zi must have shape (n_sections={nsec}, ...) with x's "
                             f"shape and 2 along axis, got {tuple(zi.shape)}")
    zfs = []
    for s in range(nsec):
        if zi is None:
            x = lfilter(sos[s, :3], sos[s, 3:], x, axis)
        else:
            x, zf = lfilter(sos[s, :3], sos[s, 3:], x, axis, zi[s])
            zfs.append(zf)
    return x if zi is None else (x, _ops.stack(zfs))


def _zi_a_of_element(ah, who):
    if len(ah) == 0 or not ah.any():
        raise ValueError(f"ndgrad.signal.{who}: there must be at least one nonzero `a` "
                         f"coefficient; {_element(ah)}")
    if ah[0] == 0:
        raise ValueError(f"ndgrad.signal.{who}: a[0] == 0 {_element(ah)}: without vmap the "
                         "leading zeros of a are dropped, as in SciPy (a shorter denominator, "
                         "and a shorter state where a is the longer), which vmap cannot do "
                         "for one element. Drop them before vmap")


def _zi_sections_of_element(sh, who):
    for s, a in enumerate(sh[:, 3:]):
        if not a.any():
            raise ValueError(f"ndgrad.signal.{who}: there must be at least one nonzero `a` "
                             f"coefficient in section {s}; {_element(sh)}")
        if a[0] == 0:
            raise ValueError(f"ndgrad.signal.{who}: sos[{s}, 3] == 0 {_element(sh)}: without "
                             "vmap the leading zeros of the section's a are dropped, as in "
                             "SciPy's lfilter_zi, which vmap cannot do for one element")


def lfilter_zi(b, a):
    """The initial state of :func:`lfilter` for the steady state of the step response
    (``scipy.signal.lfilter_zi``): ``zi = (I - Cᵀ)⁻¹ (b[1:] - a[1:] b[0])`` with ``C`` the
    companion matrix of ``a`` (after dividing by ``a[0]``). Differentiable in ``b`` and ``a``
    (a small linear solve, :func:`ndgrad.linalg.solve`).

    Parameters
    ----------
    b, a : Tensor or array_like
        1-D numerator and denominator coefficients (leading zeros of ``a`` are dropped, as
        in SciPy).

    Returns
    -------
    zi : Tensor
        Shape ``(max(len(a), len(b)) - 1,)`` (empty for a filter without state, where SciPy
        raises).

    Examples
    --------
    >>> import ndgrad
    >>> from ndgrad import signal
    >>> zi = signal.lfilter_zi([1.0, 0.5], [1.0, -0.5])
    >>> zi
    tensor([2.])
    >>> y, zf = signal.lfilter([1.0, 0.5], [1.0, -0.5], ndgrad.ones(3), zi=zi)
    >>> y  # a unit step starts in its steady state (the gain at DC is 3)
    tensor([3., 3., 3.])
    """
    return _lfilter_zi(b, a, "lfilter_zi")


def _lfilter_zi(b, a, who):
    """:func:`lfilter_zi`; ``who``: the public function whose batched ``a`` is checked per
    element (None: the caller has checked it; Note [Coefficients checked under vmap])."""
    b = _real_float(_tensor(b, "lfilter_zi", "b"), "lfilter_zi", "b")
    a = _real_float(_tensor(a, "lfilter_zi", "a"), "lfilter_zi", "a")
    if len(b.shape) == 0:
        b = b.reshape(1)
    if len(a.shape) == 0:
        a = a.reshape(1)
    if len(b.shape) != 1 or len(a.shape) != 1:
        raise ValueError(f"lfilter_zi: b and a must be 1-D, got shapes {tuple(b.shape)} and "
                         f"{tuple(a.shape)}")
    ah = _leading_values(a)  # (None for a vmap batch: Note [Coefficients checked under vmap])
    lead = 0
    if ah is None:
        if who is not None:
            _check_each_element(a, who, _zi_a_of_element)
    else:
        while lead < len(ah) - 1 and ah[lead] == 0.0:
            lead += 1
        if len(ah) == 0 or ah[lead] == 0.0:
            raise ValueError("lfilter_zi: there must be at least one nonzero `a` coefficient")
    a = a[lead:]
    dtype = _array_api.result_type(b, a)
    b, a = b.astype(dtype) / a[0], a.astype(dtype) / a[0]
    n = max(a.shape[0], b.shape[0])
    if a.shape[0] < n:
        a = _ops.concatenate([a, _creation.zeros(n - a.shape[0], dtype=dtype, device=a.device)])
    if b.shape[0] < n:
        b = _ops.concatenate([b, _creation.zeros(n - b.shape[0], dtype=dtype, device=b.device)])
    if n == 1:
        return _creation.zeros(0, dtype=dtype, device=b.device)
    # I - Cᵀ: the identity minus ones above the diagonal, plus a[1:] in the first column
    e0 = np.zeros(n - 1)
    e0[0] = 1.0
    fixed = _creation.asarray(np.eye(n - 1) - np.eye(n - 1, k=1), device=a.device).astype(dtype)
    m = fixed + a[1:, None] * _creation.asarray(e0, device=a.device).astype(dtype)
    return _linalg.solve(m, b[1:] - a[1:] * b[0])


def _pad_ext(x, edge, padtype):
    """SciPy's ``odd_ext``/``even_ext``/``const_ext`` of ``edge`` samples at both ends of the
    last axis."""
    widths = [(0, 0)] * (len(x.shape) - 1) + [(edge, edge)]
    if padtype == "even":
        return _ops.pad(x, widths, mode="reflect")
    if padtype == "constant":
        return _ops.pad(x, widths, mode="edge")
    return 2 * _ops.pad(x, widths, mode="edge") - _ops.pad(x, widths, mode="reflect")


def _validate_pad(padtype, padlen, n, ntaps, who):
    if padtype not in ("even", "odd", "constant", None):
        raise ValueError(f"{who}: padtype must be 'even', 'odd', 'constant' or None, got "
                         f"{padtype!r}")
    edge = 0 if padtype is None else (3 * ntaps if padlen is None else int(padlen))
    if n <= edge:
        raise ValueError(f"{who}: the length of x along axis ({n}) must be greater than "
                         f"padlen, which is {edge}; pass a smaller padlen or padtype=None")
    return edge


def _forward_backward(run, zi, xm, edge, padtype):
    """SciPy's filtfilt "pad" method on the last axis of ``xm``: extend, filter forwards from
    the steady state ``zi * x[0]``, backwards from ``zi * y[-1]``, crop. ``run(x, zi)``
    filters along the last axis and returns ``(y, zf)``."""
    ext = _pad_ext(xm, edge, padtype) if edge > 0 else xm
    y, _ = run(ext, zi * ext[..., :1])
    y, _ = run(_ops.flip(y, axis=-1), zi * y[..., -1:])
    y = _ops.flip(y, axis=-1)
    return y[..., edge:y.shape[-1] - edge] if edge > 0 else y


def _filter_axis(x, axis, who):
    x = _real_float(_tensor(x, who, "x"), who, "x")
    nd = len(x.shape)
    if nd == 0:
        raise ValueError(f"{who}: x must have at least one dimension")
    if not -nd <= axis < nd:
        raise ValueError(f"{who}: axis {axis} is out of range for a {nd}-D signal")
    return x, axis % nd


def filtfilt(b, a, x, axis=-1, padtype="odd", padlen=None, method="pad", irlen=None):
    """Zero-phase filtering: :func:`lfilter` forwards and then backwards
    (``scipy.signal.filtfilt``); differentiable in ``b``, ``a`` and ``x``.

    With ``method="pad"`` the signal is extended by ``padlen`` samples at both ends (default
    ``3 * max(len(a), len(b))``) with ``padtype``, and each pass starts from the steady state
    :func:`lfilter_zi` scaled by the first sample it filters, as in SciPy. With
    ``method="gust"`` there is no extension: Gustafsson's initial states (Note [Gustafsson's
    filtfilt]) make filtering forwards-then-backwards and backwards-then-forwards agree.

    Parameters
    ----------
    b, a : Tensor or array_like
        1-D coefficients.
    x : Tensor or array_like
        The signal (real).
    axis : int
    padtype : {"odd", "even", "constant", None}
        The extension (point symmetry, mirror symmetry, the edge value), or none
        (``method="pad"`` only).
    padlen : int, optional
        Samples added at each end; must be less than the signal's length (``method="pad"``
        only).
    method : {"pad", "gust"}
        Padding, or Gustafsson's method.
    irlen : int, optional
        ``method="gust"``: the length of the filter's non-negligible impulse response; when
        the signal is longer than ``2 * irlen`` only ``irlen`` samples at each end enter the
        fit of the initial states. None (default): all of them.

    Returns
    -------
    Tensor
        The filtered signal, shaped as ``x``.

    Examples
    --------
    >>> import ndgrad
    >>> from ndgrad import signal
    >>> y = signal.filtfilt([0.5, 0.5], [1.0], ndgrad.tensor([0.0, 1.0, 2.0, 3.0, 4.0, 5.0,
    ...                                                        6.0, 7.0]), padlen=3)
    >>> y  # a linear ramp goes through a zero-phase average unchanged
    tensor([0., 1., 2., 3., 4., 5., 6., 7.])
    >>> signal.filtfilt([0.5], [1.0, -0.5], ndgrad.ones(5), method="gust")  # DC gain 1
    tensor([1., 1., 1., 1., 1.])
    """
    if method not in ("pad", "gust"):
        raise ValueError(f"filtfilt: method must be 'pad' or 'gust', got {method!r}")
    x, axis = _filter_axis(x, axis, "filtfilt")
    b = _real_float(_tensor(b, "filtfilt", "b"), "filtfilt", "b")
    a = _real_float(_tensor(a, "filtfilt", "a"), "filtfilt", "a")
    if len(b.shape) != 1 or len(a.shape) != 1:
        raise ValueError(f"filtfilt: b and a must be 1-D, got shapes {tuple(b.shape)} and "
                         f"{tuple(a.shape)}")
    if a.shape[0]:
        _check_a0(a, "filtfilt")
    if method == "gust":
        if irlen is not None and (isinstance(irlen, bool) or int(irlen) != irlen
                                  or irlen < 1):
            raise ValueError(f"filtfilt: irlen must be a positive integer or None, got "
                             f"{irlen!r}")
        y = _filtfilt_gust(b, a, _ops.moveaxis(x, axis, -1), irlen)
        return _ops.moveaxis(y, -1, axis)
    edge = _validate_pad(padtype, padlen, x.shape[axis], max(a.shape[0], b.shape[0]),
                         "filtfilt")
    zi = _lfilter_zi(b, a, None)
    xm = _ops.moveaxis(x, axis, -1)
    y = _forward_backward(lambda s, z: lfilter(b, a, s, -1, z), zi, xm, edge, padtype)
    return _ops.moveaxis(y, -1, axis)


def _filtfilt_gust(b, a, x, irlen):
    """Gustafsson's forward-backward filter along the last axis of ``x`` (Note [Gustafsson's
    filtfilt]), SciPy's ``_filtfilt_gust`` written with :func:`lfilter` and
    :func:`ndgrad.linalg.lstsq`."""
    order = max(a.shape[0], b.shape[0]) - 1
    dtype = _array_api.result_type(b, a, x)
    b, a, x = b.astype(dtype), a.astype(dtype), x.astype(dtype)
    if order == 0:  # a scalar gain, twice
        return (b[0] / a[0]) ** 2 * x
    n = x.shape[-1]
    m = n if irlen is None or n <= 2 * irlen else int(irlen)
    # Obs[:, k]: the output from the initial state e_k (zero input), the impulse response of
    # the state e_0 delayed by k
    e0 = _creation.asarray(np.eye(1, order), dtype=dtype, device=x.device)[0]
    obs0, _ = lfilter(b, a, _creation.zeros(m, dtype=dtype, device=x.device), zi=e0)
    obs = _ops.stack([obs0] + [_ops.pad(obs0[:m - k], [(k, 0)]) if k < m
                              else _creation.zeros(m, dtype=dtype, device=x.device)
                              for k in range(1, order)], axis=1)
    obsr = _ops.flip(obs, axis=0)
    s = lfilter(b, a, obsr, axis=0)
    sr = _ops.flip(s, axis=0)
    if m == n:
        M = _ops.concatenate([sr - obs, obsr - s], axis=1)
        W = _ops.concatenate([sr, obsr], axis=1)
    else:  # only the first and the last m samples (section IV of Gustafsson's paper)
        zero = _creation.zeros((m, order), dtype=dtype, device=x.device)
        M = _ops.concatenate([_ops.concatenate([sr - obs, zero], axis=1),
                             _ops.concatenate([zero, obsr - s], axis=1)], axis=0)
        W = _ops.concatenate([_ops.concatenate([sr, zero], axis=1),
                             _ops.concatenate([zero, obsr], axis=1)], axis=0)
    y_fb = _ops.flip(lfilter(b, a, _ops.flip(lfilter(b, a, x), axis=-1)), axis=-1)
    y_bf = lfilter(b, a, _ops.flip(lfilter(b, a, _ops.flip(x, axis=-1)), axis=-1))
    delta = y_bf - y_fb
    if m < n:
        delta = _ops.concatenate([delta[..., :m], delta[..., n - m:]], axis=-1)
    lead = tuple(delta.shape[:-1])
    rhs = _ops.matrix_transpose(delta.reshape(-1, delta.shape[-1]))  # (rows, batch)
    ic = _linalg.lstsq(M, rhs).solution  # the initial states [x0; x_{N-1}] (2 order, batch)
    wic = _ops.matmul(W, ic)  # the change of y_fb they make (Gustafsson's equation 7)
    wic = _ops.matrix_transpose(wic).reshape(lead + (wic.shape[0],))
    if m == n:
        return y_fb + wic
    pad = [(0, 0)] * len(lead)
    return (y_fb + _ops.pad(wic[..., :m], pad + [(0, n - m)])
            + _ops.pad(wic[..., m:], pad + [(n - m, 0)]))


def _check_sos(sos, who):
    sos = _real_float(_tensor(sos, who, "sos"), who, "sos")
    if len(sos.shape) != 2 or sos.shape[1] != 6 or sos.shape[0] == 0:
        raise ValueError(f"{who}: sos must have shape (n_sections, 6), got {tuple(sos.shape)}")
    return sos


def sosfilt_zi(sos):
    """The initial states of :func:`sosfilt` for the steady state of the step response
    (``scipy.signal.sosfilt_zi``): each section's :func:`lfilter_zi` scaled by the DC gain of
    the sections before it. Differentiable in ``sos``.

    Returns
    -------
    zi : Tensor
        Shape ``(n_sections, 2)``.

    Examples
    --------
    >>> import ndgrad
    >>> from ndgrad import signal
    >>> signal.sosfilt_zi(ndgrad.tensor([[1.0, 0.5, 0.0, 1.0, -0.5, 0.0]]))
    tensor([[2., 0.]])
    """
    return _sosfilt_zi(_check_sos(sos, "sosfilt_zi"), "sosfilt_zi")


def _sosfilt_zi(sos, who):
    """:func:`sosfilt_zi`; ``who`` as for :func:`_lfilter_zi`."""
    if who is not None and _leading_values(sos[:, 3]) is None:
        _check_each_element(sos, who, _zi_sections_of_element)
    rows, scale = [], None
    for s in range(sos.shape[0]):
        b, a = sos[s, :3], sos[s, 3:]
        z = _lfilter_zi(b, a, None)
        rows.append(z if scale is None else scale * z)
        gain = _ops.sum(b) / _ops.sum(a)  # the section's gain at z = 1
        scale = gain if scale is None else scale * gain
    return _ops.stack(rows)


def sosfiltfilt(sos, x, axis=-1, padtype="odd", padlen=None):
    """Zero-phase filtering with second-order sections (``scipy.signal.sosfiltfilt``):
    :func:`sosfilt` forwards and backwards from the steady states :func:`sosfilt_zi`, with
    :func:`filtfilt`'s extension (default ``padlen``: ``3 * (2 * n_sections + 1)``, less the
    trailing zero coefficients, as SciPy); differentiable in ``sos`` and ``x``.

    Examples
    --------
    >>> import ndgrad
    >>> from ndgrad import signal
    >>> sos = ndgrad.tensor([[0.5, 0.5, 0.0, 1.0, 0.0, 0.0]])
    >>> signal.sosfiltfilt(sos, ndgrad.tensor([0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]),
    ...                    padlen=3)
    tensor([0., 1., 2., 3., 4., 5., 6., 7.])
    """
    sos = _check_sos(sos, "sosfiltfilt")
    _check_sections(sos, "sosfiltfilt")
    x, axis = _filter_axis(x, axis, "sosfiltfilt")
    sh = _leading_values(sos)
    if sh is None and padlen is None and padtype is not None:
        raise ValueError("sosfiltfilt: under vmap with a batch of sos, pass padlen: SciPy's "
                         "default depends on each sos's zero coefficients")
    ntaps = 0 if sh is None else 2 * sos.shape[0] + 1 - min(int((sh[:, 2] == 0).sum()),
                                                            int((sh[:, 5] == 0).sum()))
    edge = _validate_pad(padtype, padlen, x.shape[axis], ntaps, "sosfiltfilt")
    zi = _sosfilt_zi(sos, None)  # (n_sections, 2): each section's state broadcasts over x
    xm = _ops.moveaxis(x, axis, -1)
    zi = zi.reshape((sos.shape[0],) + (1,) * (len(xm.shape) - 1) + (2,))
    y = _forward_backward(lambda s, z: _sosfilt(sos, s, -1, z), zi, xm, edge, padtype)
    return _ops.moveaxis(y, -1, axis)


# ------------------------------------------------------------------------------- spectral
def detrend(data, axis=-1, type="linear", bp=0, overwrite_data=False):
    """Remove a constant or a (piecewise) linear least-squares fit along ``axis``
    (``scipy.signal.detrend``); differentiable in ``data`` (a linear projection).

    Parameters
    ----------
    data : Tensor or array_like
    axis : int
    type : {"linear", "constant"}
        Subtract the least-squares line of each piece between the breakpoints ``bp``, or the
        mean.
    bp : int or sequence of int
        Breakpoints of the linear fit (indices along ``axis``).
    overwrite_data : bool
        Accepted for SciPy's signature; a tensor is never overwritten.

    Examples
    --------
    >>> import ndgrad
    >>> from ndgrad import signal
    >>> signal.detrend(ndgrad.tensor([1.0, 3.0, 5.0, 7.5]))
    tensor([ 0.1 , -0.05, -0.2 ,  0.15])
    """
    data = _tensor(data, "detrend", "data")
    if type in ("constant", "c"):
        return data - _ops.mean(data, axis=axis, keepdims=True)
    if type not in ("linear", "l"):
        raise ValueError(f"detrend: type must be 'linear' or 'constant', got {type!r}")
    nd = len(data.shape)
    if not -nd <= axis < nd:
        raise ValueError(f"detrend: axis {axis} is out of range for {nd}-D data")
    n = data.shape[axis]
    bp = np.sort(np.unique(np.concatenate(np.atleast_1d(0, np.asarray(bp), n)))).astype(int)
    if np.any(bp > n) or np.any(bp < 0):
        raise ValueError(f"detrend: breakpoints must be in [0, {n}] (the length of data along "
                         f"axis {axis}), got {bp.tolist()}")
    d = _ops.moveaxis(data, axis, -1)
    pieces = []
    for lo, hi in zip(bp[:-1], bp[1:]):
        seg = d[..., lo:hi]
        t = np.arange(hi - lo, dtype=np.float64)
        t = t - t.mean()
        tt = float((t * t).sum())
        mean = _ops.mean(seg, axis=-1, keepdims=True)
        fit = mean
        if tt > 0:  # the least-squares line: mean + slope (t - mean t)
            tc = _creation.asarray(t, device=seg.device).astype(seg.dtype)
            slope = _ops.sum(seg * tc, axis=-1, keepdims=True) / tt
            fit = mean + slope * tc
        pieces.append(seg - fit)
    return _ops.moveaxis(_ops.concatenate(pieces, axis=-1), -1, axis)


def _window(window, nperseg, n, who, default_nperseg):
    """SciPy's ``_triage_segments``: the window values and ``nperseg``."""
    import warnings
    if isinstance(window, (str, tuple)):
        if nperseg is None:
            nperseg = default_nperseg
        if nperseg > n:
            warnings.warn(f"nperseg = {nperseg:d} is greater than input length  = {n:d}, "
                          f"using nperseg = {n:d}", stacklevel=3)
            nperseg = n
        from scipy.signal import get_window as scipy_get_window
        win = np.asarray(scipy_get_window(window, nperseg))
    else:
        win = _host(window) if isinstance(window, Tensor) else np.asarray(window)
        if win.ndim != 1:
            raise ValueError(f"{who}: window must be 1-D, got shape {win.shape}")
        if n < win.shape[-1]:
            raise ValueError(f"{who}: window is longer than the input signal")
        if nperseg is not None and nperseg != win.shape[0]:
            raise ValueError(f"{who}: value specified for nperseg is different from length "
                             "of window")
        nperseg = win.shape[0]
    if int(nperseg) < 1:
        raise ValueError(f"{who}: nperseg must be a positive integer, got {nperseg}")
    return win, int(nperseg)


def _segment_ffts(x, win, nperseg, noverlap, nfft, detrend_type, onesided):
    """The windowed FFT of every segment: ``(..., n_segments, n_freqs)``."""
    step = nperseg - noverlap
    nseg = (x.shape[-1] - nperseg) // step + 1
    idx = np.arange(nseg)[:, None] * step + np.arange(nperseg)[None, :]
    seg = _ops.take(x, _creation.asarray(idx, device=x.device), axis=-1)
    if detrend_type:
        seg = detrend(seg, axis=-1, type=detrend_type)
    w = _creation.asarray(win, device=x.device).astype(
        _backend.float64 if x.dtype.kind == "c" or x.dtype == _backend.float64 else x.dtype)
    seg = seg * w
    return _fft.rfft(seg, n=nfft) if onesided else _fft.fft(seg, n=nfft)


def _overlap_args(nperseg, noverlap, nfft, who):
    if nfft is None:
        nfft = nperseg
    elif nfft < nperseg:
        raise ValueError(f"{who}: nfft must be greater than or equal to nperseg")
    noverlap = nperseg // 2 if noverlap is None else int(noverlap)
    if noverlap >= nperseg:
        raise ValueError(f"{who}: noverlap must be less than nperseg")
    return int(nfft), noverlap


def stft(x, fs=1.0, window="hann_periodic", nperseg=256, noverlap=None, nfft=None,
         detrend=False, return_onesided=True, boundary="zeros", padded=True, axis=-1,
         scaling="spectrum"):
    """Short-time Fourier transform (``scipy.signal.stft``, SciPy's defaults); the spectrum
    ``Zxx`` is differentiable in ``x``.

    Framing (slices), the window (a constant), :func:`ndgrad.fft.rfft` (``fft`` for complex
    ``x`` or ``return_onesided=False``) and SciPy's scaling.

    Parameters
    ----------
    x : Tensor or array_like
        The signal, sampled along ``axis``.
    fs : float
        Its sampling frequency.
    window : str, tuple or array_like
        A window SciPy's ``get_window`` names (of length ``nperseg``), or its values (a
        constant, not differentiated; their length is ``nperseg``).
    nperseg, noverlap, nfft : int
        Samples per segment, shared by consecutive segments (default ``nperseg // 2``),
        and of each segment's FFT (default ``nperseg``).
    detrend : False, "constant" or "linear"
        Detrend each segment first (a callable is not supported).
    return_onesided : bool
    boundary : {"zeros", "even", "odd", "constant", None}
        Extend the signal by ``nperseg // 2`` samples at both ends first.
    padded : bool
        Zero-pad the end to a whole number of segments.
    axis : int
    scaling : {"spectrum", "psd"}

    Returns
    -------
    f : ndarray
        The frequencies (NumPy, constants).
    t : ndarray
        The segment times (NumPy).
    Zxx : Tensor
        ``(..., len(f), len(t))``, the segment axis last.

    Examples
    --------
    >>> import ndgrad
    >>> from ndgrad import signal
    >>> f, t, Z = signal.stft(ndgrad.ones(8), nperseg=4)
    >>> Z.shape  # 3 frequencies, 5 segments
    (3, 5)
    """
    if scaling not in ("spectrum", "psd"):
        raise ValueError(f"stft: scaling must be 'spectrum' or 'psd', got {scaling!r}")
    if boundary not in ("zeros", "even", "odd", "constant", None):
        raise ValueError(f"stft: boundary must be 'zeros', 'even', 'odd', 'constant' or None, "
                         f"got {boundary!r}")
    if callable(detrend):
        raise TypeError("stft: a callable detrend is not supported; pass 'constant', 'linear' "
                        "or False")
    x = _tensor(x, "stft", "x")
    xm = _ops.moveaxis(x, axis, -1)
    win, nperseg = _window(window, nperseg, xm.shape[-1], "stft", 256)
    nfft, noverlap = _overlap_args(nperseg, noverlap, nfft, "stft")
    lead = [(0, 0)] * (len(xm.shape) - 1)
    if boundary is not None:
        ext = [(nperseg // 2, nperseg // 2)]
        if boundary == "zeros":
            xm = _ops.pad(xm, lead + ext)
        elif boundary == "even":
            xm = _ops.pad(xm, lead + ext, mode="reflect")
        elif boundary == "constant":
            xm = _ops.pad(xm, lead + ext, mode="edge")
        else:  # odd: 2 x[0] - x[k], point symmetry about the ends
            xm = 2 * _ops.pad(xm, lead + ext, mode="edge") - _ops.pad(xm, lead + ext,
                                                                   mode="reflect")
    if padded:
        step = nperseg - noverlap
        nadd = (-(xm.shape[-1] - nperseg) % step) % nperseg
        xm = _ops.pad(xm, lead + [(0, nadd)])
    onesided = return_onesided and not _is_complex(x)
    if return_onesided and _is_complex(x):
        import warnings
        warnings.warn("Input data is complex, switching to return_onesided=False",
                      stacklevel=2)
    z = _segment_ffts(xm, win, nperseg, noverlap, nfft, detrend, onesided)
    scale = 1.0 / win.sum() if scaling == "spectrum" else 1.0 / np.sqrt(fs * (win * win).sum())
    z = z * scale
    freqs = np.fft.rfftfreq(nfft, 1 / fs) if onesided else np.fft.fftfreq(nfft, 1 / fs)
    time = np.arange(nperseg / 2, xm.shape[-1] - nperseg / 2 + 1, nperseg - noverlap) / fs
    if boundary is not None:
        time -= (nperseg / 2) / fs
    # (..., segments, freqs): the frequencies go where the samples were, segments last
    z = _ops.moveaxis(z, -1, axis if axis >= 0 else axis - 1)
    return freqs, time, z


def _overlap_add(seg, nstep, length):
    """``out[i * nstep + j] += seg[..., i, j]``, cropped to ``length``: segments ``m`` apart
    (``m = ceil(nperseg / nstep)``) do not overlap, so each residue class ``g`` of segments is
    zero-padded to ``m * nstep`` samples, laid end to end by a reshape and shifted by
    ``g * nstep`` (``m`` pads and sums in all, a linear map: differentiable)."""
    nseg, nperseg = seg.shape[-2], seg.shape[-1]
    m = -(-nperseg // nstep)
    span = m * nstep
    lead = [(0, 0)] * (len(seg.shape) - 2)
    parts = []
    for g in range(min(m, nseg)):
        s = seg[..., g::m, :]
        c = s.shape[-2]
        s = _ops.pad(s, lead + [(0, 0), (0, span - nperseg)])
        parts.append((g * nstep, s.reshape(tuple(s.shape[:-2]) + (c * span,))))
    total = max([length] + [off + p.shape[-1] for off, p in parts])
    out = None
    for off, p in parts:
        p = _ops.pad(p, lead + [(off, total - off - p.shape[-1])])
        out = p if out is None else out + p
    return out[..., :length]


def istft(Zxx, fs=1.0, window="hann_periodic", nperseg=None, noverlap=None, nfft=None,
          input_onesided=True, boundary=True, time_axis=-1, freq_axis=-2, scaling="spectrum"):
    """Inverse short-time Fourier transform (``scipy.signal.istft``, SciPy's defaults): the
    inverse of :func:`stft`; the signal is differentiable in ``Zxx``.

    The inverse FFT of every segment (:func:`ndgrad.fft.irfft`, or ``ifft`` for a two-sided
    ``Zxx``), SciPy's scaling, the window again, overlap-add, and division by the
    overlap-added squared window (a constant) where it is above ``1e-10``. SciPy warns when
    the window fails the NOLA condition (some sample gets no weight); so does this function.

    Parameters
    ----------
    Zxx : Tensor or array_like
        The STFT, at least 2-D (real input is taken as complex).
    fs : float
    window : str, tuple or array_like
        The window of the forward transform (an array must have ``nperseg`` samples).
    nperseg : int, optional
        Samples per segment; default ``2 * (n_freqs - 1)`` (one-sided) or ``n_freqs``.
    noverlap : int, optional
        Default ``nperseg // 2``.
    nfft : int, optional
        The FFT length (at least ``nperseg``).
    input_onesided : bool
        ``Zxx`` holds the nonnegative frequencies of a real signal (``irfft``); otherwise all
        frequencies (``ifft``, a complex signal).
    boundary : bool
        Remove the ``nperseg // 2`` samples :func:`stft` added at each end.
    time_axis, freq_axis : int
        The segment and frequency axes of ``Zxx`` (different).
    scaling : {"spectrum", "psd"}

    Returns
    -------
    t : ndarray
        The sample times (NumPy; SciPy's ``arange(x.shape[0]) / fs``).
    x : Tensor
        The signal, along the axis where ``time_axis`` was.

    Examples
    --------
    >>> import ndgrad
    >>> from ndgrad import signal
    >>> x = ndgrad.tensor([1.0, 2.0, 0.0, -1.0, 3.0, 1.0, 0.5, 2.0])
    >>> f, t, Z = signal.stft(x, nperseg=4)
    >>> signal.istft(Z, nperseg=4)[1]
    tensor([ 1. ,  2. ,  0. , -1. ,  3. ,  1. ,  0.5,  2. ])
    """
    import warnings
    if scaling not in ("spectrum", "psd"):
        raise ValueError(f"istft: scaling must be 'spectrum' or 'psd', got {scaling!r}")
    z = _tensor(Zxx, "istft", "Zxx")
    if not _is_complex(z):
        z = z.astype(_backend.complex64 if z.dtype == _backend.float32 else _backend.complex128)
    nd = len(z.shape)
    if nd < 2:
        raise ValueError(f"istft: Zxx must be at least 2-D (frequencies and segments), got "
                         f"shape {tuple(z.shape)}")
    freq_axis, time_axis = int(freq_axis), int(time_axis)
    for name, ax in (("freq_axis", freq_axis), ("time_axis", time_axis)):
        if not -nd <= ax < nd:
            raise ValueError(f"istft: {name} {ax} is out of range for {nd}-D Zxx")
    fa, ta = freq_axis % nd, time_axis % nd
    if fa == ta:
        raise ValueError("istft: time_axis and freq_axis must differ, got "
                         f"{time_axis} and {freq_axis}")
    nseg, nfreq = z.shape[ta], z.shape[fa]
    n_default = 2 * (nfreq - 1) if input_onesided else nfreq
    nperseg = n_default if nperseg is None else int(nperseg)
    if nperseg < 1:
        raise ValueError(f"istft: nperseg must be a positive integer, got {nperseg} (from "
                         f"{nfreq} frequencies); pass nperseg")
    if nfft is None:
        nfft = nperseg if input_onesided and nperseg == n_default + 1 else n_default
    elif nfft < nperseg:
        raise ValueError(f"istft: nfft must be at least nperseg, got {nfft} < {nperseg}")
    nfft = int(nfft)
    noverlap = nperseg // 2 if noverlap is None else int(noverlap)
    if noverlap >= nperseg:
        raise ValueError(f"istft: noverlap must be less than nperseg, got {noverlap} >= "
                         f"{nperseg}")
    nstep = nperseg - noverlap
    if isinstance(window, (str, tuple)):
        from scipy.signal import get_window as scipy_get_window
        win = np.asarray(scipy_get_window(window, nperseg))
    else:
        win = _host(window) if isinstance(window, Tensor) else np.asarray(window)
        if win.ndim != 1:
            raise ValueError(f"istft: window must be 1-D, got shape {win.shape}")
        if win.shape[0] != nperseg:
            raise ValueError(f"istft: window must have length of nperseg = {nperseg}, got "
                             f"{win.shape[0]}")
    # (..., freqs, segments) -> (..., segments, samples)
    z = _ops.moveaxis(z, (fa, ta), (-1, -2))
    seg = _fft.irfft(z, n=nfft) if input_onesided else _fft.ifft(z, n=nfft)
    seg = seg[..., :nperseg]
    scale = win.sum() if scaling == "spectrum" else np.sqrt(fs * (win * win).sum())
    rdtype = _backend.float32 if z.dtype == _backend.complex64 else _backend.float64
    w = _creation.asarray(win * scale, device=z.device).astype(rdtype)
    length = nperseg + (nseg - 1) * nstep
    x = _overlap_add(seg * w, nstep, length)
    norm = np.zeros(length)
    for i in range(nseg):
        norm[i * nstep:i * nstep + nperseg] += win * win
    if boundary:
        x = x[..., nperseg // 2:-(nperseg // 2)]
        norm = norm[nperseg // 2:-(nperseg // 2)]
    if np.sum(norm > 1e-10) != len(norm):
        warnings.warn("NOLA condition failed, STFT may not be invertible."
                      + (" Possibly due to missing boundary" if not boundary else ""),
                      stacklevel=2)
    x = x / _creation.asarray(np.where(norm > 1e-10, norm, 1.0), device=z.device).astype(rdtype)
    if len(x.shape) > 1 and ta != nd - 1:  # SciPy: the samples go where the segments were
        x = _ops.moveaxis(x, -1, ta - 1 if fa < ta else ta)
    time = np.arange(x.shape[0]) / float(fs)
    return time, x


def welch(x, fs=1.0, window="hann_periodic", nperseg=None, noverlap=None, nfft=None,
          detrend="constant", return_onesided=True, scaling="density", axis=-1,
          average="mean"):
    """Power spectral density by Welch's method (``scipy.signal.welch``, SciPy's defaults);
    ``Pxx`` is differentiable in ``x``.

    The mean over segments of the windowed, detrended periodograms (``|rfft|²`` with SciPy's
    scaling, one-sided values doubled), built from :func:`stft`'s framing.

    Parameters
    ----------
    x : Tensor or array_like
    fs : float
    window : str, tuple or array_like
    nperseg, noverlap, nfft : int
    detrend : "constant", "linear" or False
    return_onesided : bool
    scaling : {"density", "spectrum"}
    axis : int
    average : {"mean"}
        Only the mean (SciPy's ``"median"`` is not implemented).

    Returns
    -------
    f : ndarray
        The frequencies (NumPy, constants).
    Pxx : Tensor

    Examples
    --------
    >>> import ndgrad
    >>> from ndgrad import signal
    >>> f, p = signal.welch(ndgrad.tensor([1.0, -1.0] * 8), nperseg=4)
    >>> p
    tensor([0.        , 1.33333333, 2.66666667])
    """
    if scaling not in ("density", "spectrum"):
        raise ValueError(f"welch: scaling must be 'density' or 'spectrum', got {scaling!r}")
    if average != "mean":
        raise NotImplementedError(f"welch: average={average!r} is not implemented; use "
                                  "'mean'")
    if callable(detrend):
        raise TypeError("welch: a callable detrend is not supported; pass 'constant', "
                        "'linear' or False")
    x = _tensor(x, "welch", "x")
    xm = _ops.moveaxis(x, axis, -1)
    n = xm.shape[-1]
    if n == 0:
        raise ValueError("welch: x is empty along axis")
    win, nperseg = _window(window, nperseg, n, "welch", 256)
    nfft, noverlap = _overlap_args(nperseg, noverlap, nfft, "welch")
    onesided = return_onesided and not _is_complex(x)
    z = _segment_ffts(xm, win, nperseg, noverlap, nfft, detrend, onesided)
    p = _ops.real(z * _ops.conj(z)) if _is_complex(z) else z * z
    scale = 1.0 / (fs * (win * win).sum()) if scaling == "density" else 1.0 / win.sum() ** 2
    p = _ops.mean(p, axis=-2) * scale
    if onesided:  # every frequency but 0 (and Nyquist) stands for two
        double = np.full(p.shape[-1], 2.0)
        double[0] = 1.0
        if nfft % 2 == 0:
            double[-1] = 1.0
        p = p * _creation.asarray(double, device=p.device).astype(p.dtype)
    freqs = np.fft.rfftfreq(nfft, 1 / fs) if onesided else np.fft.fftfreq(nfft, 1 / fs)
    return freqs, _ops.moveaxis(p, -1, axis)
