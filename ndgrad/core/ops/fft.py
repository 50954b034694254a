"""Discrete Fourier transforms: ``ndgrad.fft`` (NumPy's ``numpy.fft`` with gradients).

Four primitives carry every transform: ``fftn`` and ``ifftn`` (complex to complex),
``rfftn`` (real to half spectrum) and ``irfftn`` (half spectrum to real). The one- and
two-dimensional functions (``fft``, ``rfft2``, ...) and the Hermitian ones (``hfft``,
``ihfft``) are composites of them, and ``fftshift`` / ``ifftshift`` are composites of
``roll``; ``fftfreq`` and ``rfftfreq`` are plain (non-differentiable) creation functions.

Note [Adjoints of the DFT]
~~~~~~~~~~~~~~~~~~~~~~~~~~
Every transform is linear, so its vjp is the adjoint (conjugate transpose) applied to the
cotangent, which is the conjugate-Wirtinger gradient PyTorch returns. With ``W`` the DFT
matrix, ``W^H = conj(W)``: the adjoint of a forward transform is an inverse transform and the
other way round, *unnormalised* where the original was normalised. That is the same inverse
transform with the normalisation mode swapped: ``"backward"`` (scale 1 forward, ``1/n``
inverse) <-> ``"forward"`` (``1/n`` forward, 1 inverse), ``"ortho"`` (``1/sqrt(n)`` both ways)
is its own dual.

``n`` / ``s`` first crop or zero-pad the input along each transformed axis (a selection
``P``), whose adjoint pads the cropped part back with zeros or crops the padding away: the
cotangent is resized to the input's length last (:func:`_resize`).

The real transforms add one step each. ``rfftn`` keeps the first ``n//2 + 1`` bins of the
complex transform of a real input; the gradient of a real input is the real part of the
adjoint applied to the cotangent padded with zeros to ``n`` bins. That real part is exactly an
``irfftn`` of the cotangent with the bins that have a conjugate mirror (all but DC and, for
even ``n``, Nyquist) halved, because ``irfftn`` counts each of them twice. ``irfftn`` reads
a half spectrum as a Hermitian one: a mirrored bin enters its output twice (``2 Re(a_k w)``)
and the imaginary parts of DC and Nyquist not at all, so its vjp is an ``rfftn`` of the
cotangent (real DC and Nyquist) with the mirrored bins doubled. Both are real-linear, so their
jvp is the transform of the tangent, like the complex ones'.
"""

from __future__ import annotations

import operator

from ..backend import as_dtype, backend_for_device, get_default_dtype
from ..tensor import finish
from .registry import LINALG, SHAPE, Domain, defcomposite, defop

__all__ = ["fftfreq", "rfftfreq"]

FFT = "fft"  # the namespace: ndgrad.fft.<name>, F.fft.<name> in formulas
COMPLEX = Domain((-2.0, 2.0), complex=True)
REAL = Domain((-2.0, 2.0))

_NORMS = ("backward", "ortho", "forward")
# the adjoint of a transform with norm `k` is the opposite transform with norm _DUAL[k]
_DUAL = {None: "forward", "backward": "forward", "ortho": "ortho", "forward": "backward"}


# ----------------------------------------------------------------------------- arguments
def _check_norm(name, norm):
    if norm is None or (isinstance(norm, str) and norm in _NORMS):
        return norm
    raise ValueError(f'{name}: norm={norm!r} is not a normalization mode; use "backward" '
                     f'(the default, also norm=None), "ortho" or "forward"')


def _as_ints(name, what, v):
    """``v`` (an int or a sequence of ints) as a tuple of ints."""
    if isinstance(v, bool):
        raise TypeError(f"{name}: {what} must be an int or a sequence of ints, got {v!r}")
    try:
        return (operator.index(v),)
    except TypeError:
        pass
    try:
        return tuple(operator.index(e) for e in v)
    except TypeError:
        raise TypeError(f"{name}: {what} must be an int or a sequence of ints, "
                        f"got {v!r}") from None


def _axis(name, a, ndim):
    if not -ndim <= a < ndim:
        raise ValueError(f"{name}: axis {a} is out of bounds for an input of dimension {ndim}")
    return a % ndim


def _plan(name, shape, s, axes, norm, real=None):
    """Validate the arguments of an n-dimensional transform.

    Returns ``(s, axes)`` in full: ``axes`` non-negative and distinct, ``s`` one positive
    transform length per axis (NumPy's rules: ``axes=None`` means every axis, or the last
    ``len(s)`` when ``s`` is given; an ``s`` entry of -1 keeps the input's length). ``real``
    is ``"c2r"`` for ``irfftn``, whose last length defaults to ``2 * (m - 1)``, and ``"r2c"``
    for ``rfftn``; those need at least one axis.
    """
    _check_norm(name, norm)
    ndim = len(shape)
    if s is not None:
        s = _as_ints(name, "s", s)
    if axes is None:
        if s is None:
            axes = tuple(range(ndim))
        else:
            if len(s) > ndim:
                raise ValueError(f"{name}: s={s} has {len(s)} lengths but the input has only "
                                 f"{ndim} dimensions")
            axes = tuple(range(ndim - len(s), ndim))
    else:
        axes = tuple(_axis(name, a, ndim) for a in _as_ints(name, "axes", axes))
        if len(set(axes)) != len(axes):
            raise ValueError(f"{name}: axes={axes} repeats an axis; each axis may be "
                             "transformed once (apply the transform again to repeat it)")
    if real is not None and not axes:
        raise ValueError(f"{name}: needs at least one axis to transform")
    if s is None:
        s = [shape[a] for a in axes]
        if real == "c2r":
            s[-1] = 2 * (shape[axes[-1]] - 1)
            if s[-1] < 1:
                raise ValueError(
                    f"{name}: the output length along axis {axes[-1]}, 2 * (m - 1) for m = "
                    f"{shape[axes[-1]]} input bins, is {s[-1]}; give the output length "
                    "(n or s) explicitly, or at least 2 bins")
    else:
        if len(s) != len(axes):
            raise ValueError(f"{name}: s={s} and axes={axes} must have the same length "
                             "(one transform length per axis)")
        s = [shape[a] if n == -1 else n for n, a in zip(s, axes)]
    for n, a in zip(s, axes):
        if n < 1:
            raise ValueError(f"{name}: invalid transform length {n} along axis {a}; a length "
                             "must be a positive int (or -1 for the input's length)")
    return tuple(s), axes


def _one_axis(name, x, n, axis):
    """``(s, axes)`` of a 1-D transform for the n-dimensional primitive (validating ``n``)."""
    if n is not None:
        if isinstance(n, bool) or not hasattr(n, "__index__"):
            raise TypeError(f"{name}: n must be an int or None, got {n!r}")
        n = operator.index(n)
        if n < 1:
            raise ValueError(f"{name}: n={n} is not a valid number of data points; n must be "
                             "a positive int (or None for the input's length)")
    ndim = len(x.shape)
    if ndim == 0:
        raise ValueError(f"{name}: the input is 0-d; a transform needs at least one dimension")
    if isinstance(axis, bool) or not hasattr(axis, "__index__"):
        raise TypeError(f"{name}: axis must be an int, got {axis!r}")
    _axis(name, operator.index(axis), ndim)
    return (None if n is None else (n,)), (axis,)


def _check_real(name, x, instead):
    if x.dtype.kind == "c":
        raise TypeError(f"{name}: expects a real input, got {x.dtype}; use "
                        f"ndgrad.fft.{instead} for complex input")


# ----------------------------------------------------------------------------- formula helpers
def _resize(F, a, axes, sizes):
    """``a`` cropped or zero-padded (at the end) to ``sizes`` along ``axes``: the adjoint of
    the cropping / padding that ``n`` / ``s`` apply (Note [Adjoints of the DFT])."""
    ndim = len(a.shape)
    idx = [slice(None)] * ndim
    widths = [(0, 0)] * ndim
    crop = grow = False
    for ax, n in zip(axes, sizes):
        cur = a.shape[ax]
        if cur > n:
            idx[ax] = slice(0, n)
            crop = True
        elif cur < n:
            widths[ax] = (0, n - cur)
            grow = True
    if crop:
        a = a[tuple(idx)]
    if grow:
        a = F.pad(a, tuple(widths))
    return a


def _scale_mirrored(F, g, axis, n, factor):
    """``g`` (a half spectrum of ``n`` points along ``axis``) with the bins that have a
    conjugate mirror, ``1 .. (n - 1) // 2``, multiplied by ``factor``."""
    m = (n - 1) // 2
    if m == 0:
        return g
    ndim = len(g.shape)
    idx = [slice(None)] * ndim
    idx[axis] = slice(1, m + 1)
    widths = [(0, 0)] * ndim
    widths[axis] = (1, g.shape[axis] - 1 - m)
    return g + (factor - 1) * F.pad(g[tuple(idx)], tuple(widths))


def _batch_rule(op):
    """vmap: the transform of the physical array, its axes shifted past the batch dimension."""
    name = op.name
    real = {"rfftn": "r2c", "irfftn": "c2r"}.get(name)

    def rule(F, batched, x, s=None, axes=None, norm=None):
        # one input: x is batched, its batch dimension first
        s, axes = _plan(name, tuple(x.shape[1:]), s, axes, norm, real=real)
        return op.of(F)(x, s=s, axes=tuple(a + 1 for a in axes), norm=norm)
    return rule


# ----------------------------------------------------------------------------- samplers
def _draw_norm(d, kw):
    norm = d.choice(["omit", None, "backward", "ortho", "forward"])
    if norm != "omit":
        kw["norm"] = norm


def _draw_shape(d, min_dims=1, max_dims=3):
    """Up to 3 dimensions; sides up to 5 (3-d shapes up to 3 a side, to keep the finite
    difference checks small)."""
    nd = d.integers(min_dims, max_dims)
    side = {1: 5, 2: 5, 3: 3}[nd]
    return [d.integers(1, side) for _ in range(nd)]


def _draw_length(d, length, keep=True):
    """A transform length smaller than, equal to or larger than ``length`` (or -1: keep)."""
    if keep and d.integers(0, 4) == 0:
        return -1
    return d.integers(max(1, length - 2), length + 2)


def _sampler(real=None, two=False):
    """Sampler for the n-dimensional (``two``: two-dimensional) transforms. ``real``:
    "r2c" draws real input, "c2r" keeps the default output length valid."""
    def sample(d):
        shape = _draw_shape(d, min_dims=2 if two else 1)
        nd = len(shape)
        kw = {}
        if two:
            axes = None
            if d.boolean():
                p = d.permutation(nd)
                axes = (p[0] - nd if d.boolean() else p[0], p[1])
                kw["axes"] = axes
            ax = [a % nd for a in (axes or (-2, -1))]
        else:
            # s only with explicit axes: NumPy 2 deprecates s without axes
            mode = d.choice(["all", "axes", "axes and s"])
            if mode == "all":
                ax = list(range(nd))
            else:
                axes = d.axes(nd)
                if real is not None and not axes:
                    axes = (d.axis(nd, none=False),)
                kw["axes"] = tuple(axes)
                ax = [a % nd for a in axes]
        if d.boolean() if two else mode == "axes and s":
            last = len(ax) - 1  # irfftn's last s is the output length: up to 2 m + 2
            kw["s"] = tuple(_draw_length(d, 2 * shape[a] if real == "c2r" and k == last
                                         else shape[a]) for k, a in enumerate(ax))
        elif real == "c2r" and shape[ax[-1]] < 2:
            shape[ax[-1]] = 2  # the default output length 2 * (m - 1) needs m >= 2
        _draw_norm(d, kw)
        x = d.array(tuple(shape), dtype="float64" if real == "r2c" else None)
        return (x,), kw
    return sample


def _sampler_1d(real=None):
    def sample(d):
        shape = _draw_shape(d)
        nd = len(shape)
        kw = {}
        axis = -1
        if d.boolean():
            axis = d.axis(nd, none=False)
            kw["axis"] = axis
        if d.boolean():
            length = shape[axis] * (2 if real == "c2r" else 1)
            kw["n"] = _draw_length(d, length, keep=False)
        elif real == "c2r" and shape[axis] < 2:
            shape[axis] = 2
        _draw_norm(d, kw)
        x = d.array(tuple(shape), dtype="float64" if real == "r2c" else None)
        return (x,), kw
    return sample


def _sample_shift(d):
    shape = _draw_shape(d, min_dims=1)
    nd = len(shape)
    kw = {}
    choice = d.choice(["omit", "none", "int", "tuple"])
    if choice == "none":
        kw["axes"] = None
    elif choice == "int":
        kw["axes"] = d.axis(nd, none=False)
    elif choice == "tuple":
        kw["axes"] = d.axes(nd) or (0,)
    return (d.array(tuple(shape)),), kw


# ----------------------------------------------------------------------------- fftn / ifftn
_AXES_ALIAS = {"dim": "axes"}
_AXIS_ALIAS = {"dim": "axis"}


@defop(kind=LINALG, namespace=FFT, domain=COMPLEX, sample=_sampler(), kwarg_aliases=_AXES_ALIAS)
def fftn(B, a, s=None, axes=None, norm=None):
    """N-dimensional discrete Fourier transform (NumPy's ``numpy.fft.fftn``).

    Differentiable in ``a`` (the transform is linear: the gradient is the adjoint, an
    inverse transform with the dual normalization).

    Parameters
    ----------
    a : Tensor
        Real or complex input.
    s : sequence of ints, optional
        Transform length along each axis of ``axes``: the input is cropped or zero-padded to
        it (-1 keeps the input's length). Default: the input's shape along ``axes``.
    axes : sequence of ints, optional
        The axes to transform (distinct). Default: all, or the last ``len(s)`` when ``s``
        is given. ``dim`` is accepted as PyTorch's spelling.
    norm : {"backward", "ortho", "forward"}, optional
        Scaling of this transform: ``"backward"`` (default, also None) none, ``"ortho"``
        ``1/sqrt(n)``, ``"forward"`` ``1/n``, with ``n`` the product of the lengths.

    Returns
    -------
    Tensor
        Complex; the shape of ``a`` with ``s`` along ``axes``.

    Examples
    --------
    >>> import ndgrad
    >>> a = ndgrad.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    >>> ndgrad.fft.fftn(a)
    tensor([[10.+0.j, -2.+0.j],
            [-4.+0.j,  0.+0.j]], grad_fn=<FftFftnBackward0>)
    >>> ndgrad.fft.fftn(a, norm="ortho").abs().square().sum().backward()
    >>> a.grad                       # Parseval: the sum of |X|^2 equals the sum of |a|^2
    tensor([[2., 4.],
            [6., 8.]])
    """
    s, axes = _plan("fftn", a.shape, s, axes, norm)
    if not axes:  # nothing to transform (NumPy would return ``a`` itself): a complex copy
        return B.astype(a, B.result_type(a.dtype, B.complex64))
    return B.fft.fftn(a, s=s, axes=axes, norm=norm)


@defop(kind=LINALG, namespace=FFT, domain=COMPLEX, sample=_sampler(), kwarg_aliases=_AXES_ALIAS)
def ifftn(B, a, s=None, axes=None, norm=None):
    """N-dimensional inverse discrete Fourier transform (NumPy's ``numpy.fft.ifftn``).

    Differentiable in ``a``. ``ifftn(fftn(a)) == a`` for the same ``norm``.

    Parameters
    ----------
    a : Tensor
        Real or complex input.
    s : sequence of ints, optional
        Transform length along each axis of ``axes`` (crop or zero-pad; -1 keeps the
        input's length). Default: the input's shape along ``axes``.
    axes : sequence of ints, optional
        The axes to transform (distinct). Default: all, or the last ``len(s)``.
    norm : {"backward", "ortho", "forward"}, optional
        Scaling of this (inverse) transform: ``"backward"`` (default, also None) ``1/n``,
        ``"ortho"`` ``1/sqrt(n)``, ``"forward"`` none.

    Returns
    -------
    Tensor
        Complex; the shape of ``a`` with ``s`` along ``axes``.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.fft.ifftn(ndgrad.tensor([[4.0, 0.0], [0.0, 0.0]]))
    tensor([[1.+0.j, 1.+0.j],
            [1.+0.j, 1.+0.j]])
    """
    s, axes = _plan("ifftn", a.shape, s, axes, norm)
    if not axes:  # nothing to transform (NumPy would return ``a`` itself): a complex copy
        return B.astype(a, B.result_type(a.dtype, B.complex64))
    return B.fft.ifftn(a, s=s, axes=axes, norm=norm)


# The rules read only x.shape: a node saves no input (Note [What a node saves]).
def _fftn_vjp(F, g, out, x, s=None, axes=None, norm=None):
    # x_bar = P^H W^H g: an unnormalised-where-normalised inverse (Note [Adjoints of the DFT])
    shape = x.shape
    s, axes = _plan("fftn", shape, s, axes, norm)
    return _resize(F, F.fft.ifftn(g, axes=axes, norm=_DUAL[norm]), axes,
                   [shape[a] for a in axes])


def _ifftn_vjp(F, g, out, x, s=None, axes=None, norm=None):
    shape = x.shape
    s, axes = _plan("ifftn", shape, s, axes, norm)
    return _resize(F, F.fft.fftn(g, axes=axes, norm=_DUAL[norm]), axes,
                   [shape[a] for a in axes])


fftn.defvjp(_fftn_vjp)
fftn.defjvp_linear()
ifftn.defvjp(_ifftn_vjp)
ifftn.defjvp_linear()


# ----------------------------------------------------------------------------- rfftn / irfftn
@defop(kind=LINALG, namespace=FFT, domain=REAL, sample=_sampler(real="r2c"),
       kwarg_aliases=_AXES_ALIAS)
def rfftn(B, a, s=None, axes=None, norm=None):
    """N-dimensional discrete Fourier transform of a real input (``numpy.fft.rfftn``).

    The last axis of ``axes`` keeps only the ``n // 2 + 1`` non-negative frequencies (the
    others are their complex conjugates); the other axes are transformed in full.
    Differentiable in ``a``; the gradient is real.

    Parameters
    ----------
    a : Tensor
        Real input (a complex one raises TypeError: use :func:`ndgrad.fft.fftn`).
    s : sequence of ints, optional
        Transform length along each axis of ``axes`` (crop or zero-pad the input; -1 keeps
        the input's length). Default: the input's shape along ``axes``.
    axes : sequence of ints, optional
        The axes to transform (distinct, at least one). Default: all, or the last
        ``len(s)``.
    norm : {"backward", "ortho", "forward"}, optional
        As for :func:`ndgrad.fft.fftn`.

    Returns
    -------
    Tensor
        Complex; ``s[-1] // 2 + 1`` long along ``axes[-1]``.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.fft.rfftn(ndgrad.tensor([[1.0, 2.0, 3.0, 4.0], [0.0, 0.0, 0.0, 0.0]]))
    tensor([[10.+0.j, -2.+2.j, -2.+0.j],
            [10.+0.j, -2.+2.j, -2.+0.j]])
    """
    _check_real("rfftn", a, "fftn")
    s, axes = _plan("rfftn", a.shape, s, axes, norm, real="r2c")
    return B.fft.rfftn(a, s=s, axes=axes, norm=norm)


@defop(kind=LINALG, namespace=FFT, domain=COMPLEX, sample=_sampler(real="c2r"),
       kwarg_aliases=_AXES_ALIAS)
def irfftn(B, a, s=None, axes=None, norm=None):
    """Inverse of :func:`ndgrad.fft.rfftn`: a real signal from its half spectrum
    (``numpy.fft.irfftn``).

    The last axis of ``axes`` holds the non-negative frequencies of a Hermitian-symmetric
    spectrum; the imaginary parts of its zero (and, for an even length, Nyquist) bins do not
    enter the result, and their gradient is zero. Differentiable in ``a``.

    Parameters
    ----------
    a : Tensor
        Complex (or real) half spectrum.
    s : sequence of ints, optional
        Output length along each axis of ``axes``; along ``axes[-1]`` the input is cropped or
        zero-padded to ``s[-1] // 2 + 1`` bins. -1 keeps the input's length. Default: the
        input's shape, except ``2 * (m - 1)`` along ``axes[-1]`` for ``m`` input bins (give
        ``s`` for an odd length).
    axes : sequence of ints, optional
        The axes to transform (distinct, at least one). Default: all, or the last
        ``len(s)``.
    norm : {"backward", "ortho", "forward"}, optional
        As for :func:`ndgrad.fft.ifftn`.

    Returns
    -------
    Tensor
        Real, of the shape of ``a`` with ``s`` along ``axes``.

    Examples
    --------
    >>> import ndgrad
    >>> X = ndgrad.fft.rfftn(ndgrad.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]))
    >>> X.shape
    (2, 2)
    >>> ndgrad.fft.irfftn(X, s=(2, 3))    # an odd last length must be given
    tensor([[1., 2., 3.],
            [4., 5., 6.]])
    """
    s, axes = _plan("irfftn", a.shape, s, axes, norm, real="c2r")
    return B.fft.irfftn(a, s=s, axes=axes, norm=norm)


def _rfftn_vjp(F, g, out, x, s=None, axes=None, norm=None):
    # x_bar = Re(P^H W^H pad_n(g)) = P^H irfftn(g with the mirrored bins halved)
    shape = x.shape
    s, axes = _plan("rfftn", shape, s, axes, norm, real="r2c")
    h = _scale_mirrored(F, g, axes[-1], s[-1], 0.5)
    return _resize(F, F.fft.irfftn(h, s=s, axes=axes, norm=_DUAL[norm]), axes,
                   [shape[a] for a in axes])


def _irfftn_vjp(F, g, out, x, s=None, axes=None, norm=None):
    # y = sum over the Hermitian extension: mirrored bins count twice, Im(DC, Nyquist) never
    shape = x.shape
    s, axes = _plan("irfftn", shape, s, axes, norm, real="c2r")
    gx = _scale_mirrored(F, F.fft.rfftn(g, axes=axes, norm=_DUAL[norm]), axes[-1], s[-1], 2.0)
    return _resize(F, gx, axes, [shape[a] for a in axes])


rfftn.defvjp(_rfftn_vjp)
rfftn.defjvp_linear()
irfftn.defvjp(_irfftn_vjp)
irfftn.defjvp_linear()  # real-linear (not complex-linear): still the transform of the tangent

for _op in (fftn, ifftn, rfftn, irfftn):
    _op.defbatch(_batch_rule(_op))
del _op


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


@defcomposite(kind=LINALG, namespace=FFT, domain=COMPLEX, sample=_sampler(two=True),
              kwarg_aliases=_AXES_ALIAS)
def fft2(F, a, s=None, axes=(-2, -1), norm=None):
    _plan("fft2", a.shape, s, axes, norm)  # errors in the caller's words
    return F.fft.fftn(a, s=s, axes=axes, norm=norm)


@defcomposite(kind=LINALG, namespace=FFT, domain=COMPLEX, sample=_sampler(two=True),
              kwarg_aliases=_AXES_ALIAS)
def ifft2(F, a, s=None, axes=(-2, -1), norm=None):
    _plan("ifft2", a.shape, s, axes, norm)
    return F.fft.ifftn(a, s=s, axes=axes, norm=norm)


@defcomposite(kind=LINALG, namespace=FFT, domain=REAL, sample=_sampler(real="r2c", two=True),
              kwarg_aliases=_AXES_ALIAS)
def rfft2(F, a, s=None, axes=(-2, -1), norm=None):
    _check_real("rfft2", a, "fft2")
    _plan("rfft2", a.shape, s, axes, norm, real="r2c")
    return F.fft.rfftn(a, s=s, axes=axes, norm=norm)


@defcomposite(kind=LINALG, namespace=FFT, domain=COMPLEX, sample=_sampler(real="c2r", two=True),
              kwarg_aliases=_AXES_ALIAS)
def irfft2(F, a, s=None, axes=(-2, -1), norm=None):
    _plan("irfft2", a.shape, s, axes, norm, real="c2r")
    return F.fft.irfftn(a, s=s, axes=axes, norm=norm)


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
for _c, _nd in ((fft2, "fftn"), (ifft2, "ifftn"), (rfft2, "rfftn"), (irfft2, "irfftn")):
    _c.__doc__ = _doc2(_c.name, _nd) + _EXAMPLES2[_c.name]
del _c, _nd


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
