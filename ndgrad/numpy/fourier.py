"""``numpy.fft``'s functions written from the n-dimensional transform primitives (declared in
the ``fft`` namespace): the 1-D transforms ``fft``, ``ifft``, ``rfft``, ``irfft``, ``hfft``,
``ihfft``, the 2-D ones ``fft2``, ``ifft2``, ``rfft2``, ``irfft2``, the shifts ``fftshift``,
``ifftshift``, and the plain creation functions ``fftfreq`` and ``rfftfreq`` (not
differentiable). The public module is ``ndgrad.fft`` (Note [The linalg and fft namespaces] in
ndgrad/scipy/linalg.py); this file is not named ``fft.py``: ``ndgrad.numpy.fft`` is that
module.
"""

from __future__ import annotations

import operator

from ..core.backend import as_dtype, backend_for_device, get_default_dtype
from ..core.ops.registry import LINALG, SHAPE, defcomposite
from ..core.tensor import finish
from ..core.ops.fft import (COMPLEX, FFT, REAL, _AXES_ALIAS, _AXIS_ALIAS, _DUAL, _as_ints, _axis,
                             _check_norm, _check_real, _one_axis, _plan, _sample_shift,
                             _sampler, _sampler_1d)


# ----------------------------------------------------------------------------- 1-D transforms
@defcomposite(kind=LINALG, namespace=FFT, domain=COMPLEX, sample=_sampler_1d(),
              kwarg_aliases=_AXIS_ALIAS)
def fft(F, a, n=None, axis=-1, norm=None):
    """One-dimensional discrete Fourier transform (NumPy's ``numpy.fft.fft``).

    ``out[k] = sum_j a[j] exp(-2 pi i j k / n)``, scaled by ``norm``. Differentiable in
    ``a``: the gradient of a linear map is its adjoint, here ``n * ifft(g)`` for the default
    norm (PyTorch's convention for complex gradients).

    Parameters
    ----------
    a : Tensor
        Real or complex input.
    n : int, optional
        Transform length: the input is cropped or zero-padded to it along ``axis`` (its
        gradient is cropped or padded back). Default: the input's length.
    axis : int
        The axis to transform (default the last). ``dim`` is accepted as PyTorch's spelling.
    norm : {"backward", "ortho", "forward"}, optional
        Scaling of this transform: ``"backward"`` (default, also None) none, ``"ortho"``
        ``1/sqrt(n)``, ``"forward"`` ``1/n``.

    Returns
    -------
    Tensor
        Complex, ``n`` long along ``axis``.

    Examples
    --------
    >>> import ndgrad
    >>> a = ndgrad.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    >>> X = ndgrad.fft.fft(a)
    >>> X
    tensor([10.+0.j, -2.+2.j, -2.+0.j, -2.-2.j], grad_fn=<FftFftnBackward0>)
    >>> X.abs().square().sum().backward()
    >>> a.grad                             # 2 n a
    tensor([ 8., 16., 24., 32.])
    >>> ndgrad.fft.fft(ndgrad.tensor([1.0, 2.0]), n=4)     # zero-padded
    tensor([ 3.+0.j,  1.-2.j, -1.+0.j,  1.+2.j])
    """
    s, axes = _one_axis("fft", a, n, axis)
    _check_norm("fft", norm)
    return F.fft.fftn(a, s=s, axes=axes, norm=norm)


@defcomposite(kind=LINALG, namespace=FFT, domain=COMPLEX, sample=_sampler_1d(),
              kwarg_aliases=_AXIS_ALIAS)
def ifft(F, a, n=None, axis=-1, norm=None):
    """One-dimensional inverse discrete Fourier transform (NumPy's ``numpy.fft.ifft``).

    ``out[j] = sum_k a[k] exp(2 pi i j k / n)``, scaled by ``1/n`` for the default norm;
    ``ifft(fft(a)) == a`` for the same ``norm``. Differentiable in ``a``.

    Parameters
    ----------
    a : Tensor
        Real or complex input.
    n : int, optional
        Transform length (crop or zero-pad along ``axis``). Default: the input's length.
    axis : int
        The axis to transform (default the last).
    norm : {"backward", "ortho", "forward"}, optional
        Scaling of this (inverse) transform: ``"backward"`` (default, also None) ``1/n``,
        ``"ortho"`` ``1/sqrt(n)``, ``"forward"`` none.

    Returns
    -------
    Tensor
        Complex, ``n`` long along ``axis``.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.fft.ifft(ndgrad.tensor([10.0, -2 + 2j, -2.0, -2 - 2j]))
    tensor([1.+0.j, 2.+0.j, 3.+0.j, 4.+0.j])
    """
    s, axes = _one_axis("ifft", a, n, axis)
    _check_norm("ifft", norm)
    return F.fft.ifftn(a, s=s, axes=axes, norm=norm)


@defcomposite(kind=LINALG, namespace=FFT, domain=REAL, sample=_sampler_1d(real="r2c"),
              kwarg_aliases=_AXIS_ALIAS)
def rfft(F, a, n=None, axis=-1, norm=None):
    """Discrete Fourier transform of a real input, non-negative frequencies only
    (NumPy's ``numpy.fft.rfft``).

    The ``n // 2 + 1`` bins returned determine the others (``X[n - k] = conj(X[k])``).
    Differentiable in ``a``; the gradient is real and counts each bin that has a mirror
    (all but the zero frequency and, for even ``n``, the Nyquist one) once, as PyTorch does.

    Parameters
    ----------
    a : Tensor
        Real input (a complex one raises TypeError: use :func:`ndgrad.fft.fft`).
    n : int, optional
        Transform length (crop or zero-pad along ``axis``). Default: the input's length.
    axis : int
        The axis to transform (default the last).
    norm : {"backward", "ortho", "forward"}, optional
        As for :func:`ndgrad.fft.fft`.

    Returns
    -------
    Tensor
        Complex, ``n // 2 + 1`` long along ``axis``.

    Examples
    --------
    >>> import ndgrad
    >>> a = ndgrad.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    >>> X = ndgrad.fft.rfft(a)
    >>> X
    tensor([10.+0.j, -2.+2.j, -2.+0.j], grad_fn=<FftRfftnBackward0>)
    >>> X.real.sum().backward()
    >>> a.grad                      # Re(X0 + X1 + X2) = 3 x0 + x2
    tensor([3., 0., 1., 0.])
    """
    s, axes = _one_axis("rfft", a, n, axis)
    _check_norm("rfft", norm)
    _check_real("rfft", a, "fft")
    return F.fft.rfftn(a, s=s, axes=axes, norm=norm)


@defcomposite(kind=LINALG, namespace=FFT, domain=COMPLEX, sample=_sampler_1d(real="c2r"),
              kwarg_aliases=_AXIS_ALIAS)
def irfft(F, a, n=None, axis=-1, norm=None):
    """Inverse of :func:`ndgrad.fft.rfft`: a real signal of length ``n`` from its
    non-negative frequencies (NumPy's ``numpy.fft.irfft``).

    The input is read as half of a Hermitian spectrum: the imaginary parts of the zero (and,
    for even ``n``, Nyquist) bins are ignored (their gradient is zero). Differentiable in
    ``a``.

    Parameters
    ----------
    a : Tensor
        Complex (or real) half spectrum.
    n : int, optional
        Output length; the input is cropped or zero-padded to ``n // 2 + 1`` bins. Default
        ``2 * (m - 1)`` for ``m`` input bins: give ``n`` to get an odd length back.
    axis : int
        The axis to transform (default the last).
    norm : {"backward", "ortho", "forward"}, optional
        As for :func:`ndgrad.fft.ifft`.

    Returns
    -------
    Tensor
        Real, ``n`` long along ``axis``.

    Examples
    --------
    >>> import ndgrad
    >>> X = ndgrad.fft.rfft(ndgrad.tensor([1.0, 2.0, 3.0, 4.0, 5.0]))
    >>> ndgrad.fft.irfft(X, n=5)
    tensor([1., 2., 3., 4., 5.])
    """
    s, axes = _one_axis("irfft", a, n, axis)
    _check_norm("irfft", norm)
    if n is None and a.shape[axis] < 2:
        raise ValueError(f"irfft: the default output length 2 * (m - 1) is 0 for m = "
                         f"{a.shape[axis]} input bin; give n")
    return F.fft.irfftn(a, s=s, axes=axes, norm=norm)


@defcomposite(kind=LINALG, namespace=FFT, domain=COMPLEX, sample=_sampler_1d(real="c2r"),
              kwarg_aliases=_AXIS_ALIAS)
def hfft(F, a, n=None, axis=-1, norm=None):
    """Transform of a signal with Hermitian symmetry, given by its first half: a real
    spectrum (NumPy's ``numpy.fft.hfft``).

    ``hfft(a, n) == irfft(conj(a), n, norm=dual)``, where the dual of ``"backward"`` is
    ``"forward"``: by default no scaling. Not complex-linear (it conjugates): the gradient
    follows PyTorch's convention for real-valued functions of complex inputs. Differentiable
    in ``a``.

    Parameters
    ----------
    a : Tensor
        Complex (or real) first half of a Hermitian signal.
    n : int, optional
        Output length. Default ``2 * (m - 1)`` for ``m`` input points.
    axis : int
        The axis to transform (default the last).
    norm : {"backward", "ortho", "forward"}, optional
        Scaling of this transform: ``"backward"`` (default, also None) none, ``"ortho"``
        ``1/sqrt(n)``, ``"forward"`` ``1/n``.

    Returns
    -------
    Tensor
        Real, ``n`` long along ``axis``.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.fft.hfft(ndgrad.tensor([1.0, 2j, 3.0]))
    tensor([ 4.,  2.,  4., -6.])
    """
    s, axes = _one_axis("hfft", a, n, axis)
    _check_norm("hfft", norm)
    if n is None and a.shape[axis] < 2:
        raise ValueError(f"hfft: the default output length 2 * (m - 1) is 0 for m = "
                         f"{a.shape[axis]} input point; give n")
    return F.fft.irfftn(F.conj(a), s=s, axes=axes, norm=_DUAL[norm])


@defcomposite(kind=LINALG, namespace=FFT, domain=REAL, sample=_sampler_1d(real="r2c"),
              kwarg_aliases=_AXIS_ALIAS)
def ihfft(F, a, n=None, axis=-1, norm=None):
    """Inverse of :func:`ndgrad.fft.hfft`: the first half of the Hermitian signal whose
    transform is the real ``a`` (NumPy's ``numpy.fft.ihfft``).

    ``ihfft(a, n) == conj(rfft(a, n, norm=dual))``: by default scaled by ``1/n``.
    Differentiable in ``a``; the gradient is real.

    Parameters
    ----------
    a : Tensor
        Real input (a complex one raises TypeError).
    n : int, optional
        Transform length (crop or zero-pad along ``axis``). Default: the input's length.
    axis : int
        The axis to transform (default the last).
    norm : {"backward", "ortho", "forward"}, optional
        Scaling of this (inverse) transform: ``"backward"`` (default, also None) ``1/n``,
        ``"ortho"`` ``1/sqrt(n)``, ``"forward"`` none.

    Returns
    -------
    Tensor
        Complex, ``n // 2 + 1`` long along ``axis``.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.fft.ihfft(ndgrad.tensor([4.0, 2.0, 4.0, -6.0]))   # undoes hfft's example
    tensor([1.-0.j, 0.+2.j, 3.-0.j])
    """
    s, axes = _one_axis("ihfft", a, n, axis)
    _check_norm("ihfft", norm)
    _check_real("ihfft", a, "ifft")
    return F.conj(F.fft.rfftn(a, s=s, axes=axes, norm=_DUAL[norm]))


# ----------------------------------------------------------------------------- 2-D transforms
def _doc2(name, nd_name):
    return f"""Two-dimensional :func:`ndgrad.fft.{nd_name}` over ``axes`` (NumPy's
    ``numpy.fft.{name}``).

    Parameters
    ----------
    a : Tensor
        Input of at least two dimensions.
    s : sequence of ints, optional
        Transform lengths along ``axes``, as for :func:`ndgrad.fft.{nd_name}`.
    axes : sequence of ints
        The axes to transform (default the last two; any distinct axes are accepted, as
        for :func:`ndgrad.fft.{nd_name}`).
    norm : {{"backward", "ortho", "forward"}}, optional
        As for :func:`ndgrad.fft.{nd_name}`.

    Returns
    -------
    Tensor
        As for :func:`ndgrad.fft.{nd_name}`.
    """


_EXAMPLES2 = {
    "fft2": """
    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.fft.fft2(ndgrad.tensor([[1.0, 2.0], [3.0, 4.0]]))
    tensor([[10.+0.j, -2.+0.j],
            [-4.+0.j,  0.+0.j]])
    """,
    "ifft2": """
    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.fft.ifft2(ndgrad.tensor([[4.0, 0.0], [0.0, 0.0]]))
    tensor([[1.+0.j, 1.+0.j],
            [1.+0.j, 1.+0.j]])
    """,
    "rfft2": """
    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.fft.rfft2(ndgrad.ones(2, 4))
    tensor([[8.+0.j, 0.+0.j, 0.+0.j],
            [0.+0.j, 0.+0.j, 0.+0.j]])
    """,
    "irfft2": """
    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.fft.irfft2(ndgrad.fft.rfft2(ndgrad.ones(2, 4)))
    tensor([[1., 1., 1., 1.],
            [1., 1., 1., 1.]])
    """,
}


def _documented2(nd_name):
    """The docstring of a 2-D transform, from the n-dimensional one's (set before the
    declaration: a composite is published, with its docstring, as it is declared)."""
    def deco(fn):
        fn.__doc__ = _doc2(fn.__name__, nd_name) + _EXAMPLES2[fn.__name__]
        return fn
    return deco


@defcomposite(kind=LINALG, namespace=FFT, domain=COMPLEX, sample=_sampler(two=True),
              kwarg_aliases=_AXES_ALIAS)
@_documented2("fftn")
def fft2(F, a, s=None, axes=(-2, -1), norm=None):
    _plan("fft2", a.shape, s, axes, norm)  # errors in the caller's words
    return F.fft.fftn(a, s=s, axes=axes, norm=norm)


@defcomposite(kind=LINALG, namespace=FFT, domain=COMPLEX, sample=_sampler(two=True),
              kwarg_aliases=_AXES_ALIAS)
@_documented2("ifftn")
def ifft2(F, a, s=None, axes=(-2, -1), norm=None):
    _plan("ifft2", a.shape, s, axes, norm)
    return F.fft.ifftn(a, s=s, axes=axes, norm=norm)


@defcomposite(kind=LINALG, namespace=FFT, domain=REAL, sample=_sampler(real="r2c", two=True),
              kwarg_aliases=_AXES_ALIAS)
@_documented2("rfftn")
def rfft2(F, a, s=None, axes=(-2, -1), norm=None):
    _check_real("rfft2", a, "fft2")
    _plan("rfft2", a.shape, s, axes, norm, real="r2c")
    return F.fft.rfftn(a, s=s, axes=axes, norm=norm)


@defcomposite(kind=LINALG, namespace=FFT, domain=COMPLEX, sample=_sampler(real="c2r", two=True),
              kwarg_aliases=_AXES_ALIAS)
@_documented2("irfftn")
def irfft2(F, a, s=None, axes=(-2, -1), norm=None):
    _plan("irfft2", a.shape, s, axes, norm, real="c2r")
    return F.fft.irfftn(a, s=s, axes=axes, norm=norm)




# ----------------------------------------------------------------------------- shifts
def _shifts(name, x, axes, sign):
    ndim = len(x.shape)
    if axes is None:
        axes = tuple(range(ndim))
    else:
        axes = tuple(_axis(name, a, ndim) for a in _as_ints(name, "axes", axes))
    return tuple(sign * (x.shape[a] // 2) for a in axes), axes


@defcomposite(kind=SHAPE, namespace=FFT, domain=COMPLEX, sample=_sample_shift,
              kwarg_aliases=_AXES_ALIAS)
def fftshift(F, x, axes=None):
    """Move the zero-frequency bin to the centre (NumPy's ``numpy.fft.fftshift``).

    A cyclic shift by ``n // 2`` along each axis of ``axes``: a permutation, differentiable
    (its gradient is the inverse shift, :func:`ndgrad.fft.ifftshift` of the cotangent).

    Parameters
    ----------
    x : Tensor
    axes : int or sequence of ints, optional
        The axes to shift. Default: all.

    Returns
    -------
    Tensor
        Same shape as ``x``.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.fft.fftshift(ndgrad.fft.fftfreq(5))
    tensor([-0.4, -0.2,  0. ,  0.2,  0.4])
    """
    shift, axes = _shifts("fftshift", x, axes, 1)
    if not axes:  # nothing to shift (a 0-d input, or axes=())
        return F.positive(x)
    return F.roll(x, shift, axis=axes)


@defcomposite(kind=SHAPE, namespace=FFT, domain=COMPLEX, sample=_sample_shift,
              kwarg_aliases=_AXES_ALIAS)
def ifftshift(F, x, axes=None):
    """Inverse of :func:`ndgrad.fft.fftshift` (NumPy's ``numpy.fft.ifftshift``): a cyclic
    shift by ``-(n // 2)`` along each axis of ``axes``; differentiable.

    The two differ for odd lengths; ``ifftshift(fftshift(x)) == x`` always.

    Parameters
    ----------
    x : Tensor
    axes : int or sequence of ints, optional
        The axes to shift. Default: all.

    Returns
    -------
    Tensor
        Same shape as ``x``.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.fft.ifftshift(ndgrad.tensor([-2.0, -1.0, 0.0, 1.0, 2.0]))
    tensor([ 0.,  1.,  2., -2., -1.])
    """
    shift, axes = _shifts("ifftshift", x, axes, -1)
    if not axes:
        return F.positive(x)
    return F.roll(x, shift, axis=axes)


# ----------------------------------------------------------------------------- frequencies
def _freq_args(name, n, d, dtype):
    if isinstance(n, bool) or not hasattr(n, "__index__"):
        raise TypeError(f"{name}: n must be an int (the number of samples), got {n!r}")
    n = operator.index(n)
    if n < 0:
        raise ValueError(f"{name}: n={n} is negative; n is the number of samples")
    try:
        d = float(d)
    except (TypeError, ValueError):
        raise TypeError(f"{name}: d must be a real number (the sample spacing), "
                        f"got {d!r}") from None
    if d == 0.0:
        raise ValueError(f"{name}: d=0 is not a sample spacing; give a nonzero d")
    dt = as_dtype(dtype)
    if dt is None:
        dt = get_default_dtype()
    elif dt.kind not in "fc":
        raise TypeError(f"{name}: dtype {dt} is not a floating or complex dtype; "
                        "frequencies are fractional")
    return n, d, dt


def _freq_tensor(k, n, d, dt, requires_grad):
    val = 1.0 / (n * d) if n else 0.0  # as NumPy: integer bins times 1 / (n d)
    return finish((k * val).astype(dt), requires_grad)


def fftfreq(n, d=1.0, *, dtype=None, device=None, requires_grad=False):
    """The sample frequencies of :func:`ndgrad.fft.fft` (NumPy's ``numpy.fft.fftfreq``).

    ``[0, 1, ..., (n - 1) // 2, -(n // 2), ..., -1] / (d * n)``, in cycles per unit of the
    sample spacing ``d``. Not differentiable (a creation function).

    Parameters
    ----------
    n : int
        Number of samples (the transform length).
    d : float
        Sample spacing (default 1.0).
    dtype : dtype, optional
        A floating (or complex) dtype. Default: the default dtype
        (:func:`ndgrad.get_default_dtype`, float64 unless changed), as PyTorch does.
    device : str or Device, optional
        Where to create the tensor (default: the CPU).
    requires_grad : bool
        Make the result a leaf that requires grad (its values do not depend on any input).

    Returns
    -------
    Tensor
        1-D, ``n`` long.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.fft.fftfreq(5)
    tensor([ 0. ,  0.2,  0.4, -0.4, -0.2])
    >>> ndgrad.fft.fftfreq(4, d=0.5)
    tensor([ 0. ,  0.5, -1. , -0.5])
    """
    n, d, dt = _freq_args("fftfreq", n, d, dtype)
    B = backend_for_device(device)
    k = B.concatenate([B.arange(0, (n - 1) // 2 + 1), B.arange(-(n // 2), 0)])
    return _freq_tensor(k, n, d, dt, requires_grad)


def rfftfreq(n, d=1.0, *, dtype=None, device=None, requires_grad=False):
    """The sample frequencies of :func:`ndgrad.fft.rfft` (NumPy's ``numpy.fft.rfftfreq``).

    ``[0, 1, ..., n // 2] / (d * n)``: the non-negative frequencies. Not differentiable
    (a creation function).

    Parameters
    ----------
    n : int
        Number of samples (the transform length, not the number of bins).
    d : float
        Sample spacing (default 1.0).
    dtype : dtype, optional
        A floating (or complex) dtype. Default: the default dtype, as PyTorch does.
    device : str or Device, optional
        Where to create the tensor (default: the CPU).
    requires_grad : bool
        Make the result a leaf that requires grad.

    Returns
    -------
    Tensor
        1-D, ``n // 2 + 1`` long.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.fft.rfftfreq(5)
    tensor([0. , 0.2, 0.4])
    >>> ndgrad.fft.rfftfreq(4, d=0.5)
    tensor([0. , 0.5, 1. ])
    """
    n, d, dt = _freq_args("rfftfreq", n, d, dtype)
    B = backend_for_device(device)
    return _freq_tensor(B.arange(0, n // 2 + 1), n, d, dt, requires_grad)


for _f in (fftfreq, rfftfreq):
    _f.__module__ = "ndgrad.fft"
del _f
