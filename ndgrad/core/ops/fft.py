"""Discrete Fourier transforms: the primitives of ``ndgrad.fft`` (NumPy's ``numpy.fft``
with gradients).

Four primitives carry every transform: ``fftn`` and ``ifftn`` (complex to complex),
``rfftn`` (real to half spectrum) and ``irfftn`` (half spectrum to real). The one- and
two-dimensional functions (``fft``, ``rfft2``, ...), the Hermitian ones (``hfft``,
``ihfft``) and ``fftshift`` / ``ifftshift`` are composites of them and of ``roll``, in
ndgrad/numpy/fourier.py, with the plain creation functions ``fftfreq`` and ``rfftfreq``.

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

from .registry import LINALG, Domain, defop

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


