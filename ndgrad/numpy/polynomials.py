"""NumPy's polynomial functions (coefficients highest power first), written from primitives:
``polyval``, ``poly``, ``polyfit``, ``polyder``, ``polyint``, ``polyadd``, ``polysub``,
``polymul``, ``polydiv``, ``roots``.

Note [Values that decide a shape]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
Some of NumPy's functions look at values to decide the shape or dtype of their result, and
so do these: ``roots`` drops leading and trailing zero coefficients and returns real roots as
a real array, ``poly`` returns real coefficients for conjugate-paired zeros, ``polymul``
drops leading zero coefficients, ``polydiv`` drops the remainder's leading coefficients of
magnitude at most 1e-8, ``bincount`` (ndgrad/numpy/statistics.py) sizes its result from
``max(x)``. Those values are read (they are constants: no gradient flows through the
decision). Inside ``vmap`` a batched value differs per batch element and cannot be read
(``is_batched``): each function then takes the branch that holds for generic input, as its
docstring says.
"""

from __future__ import annotations

import operator
import warnings

from ..core.backend import NUMPY, float64
from ..core.ops.batching import is_batched
from ..core.ops.contractions import _eye
from ..core.ops.reductions import inverse_scale_along
from ..core.ops.registry import LINALG, defcomposite, sample_numpy
from ._arraylike import _ANYC, _EPS, _arr, _atleast_1d, _check_1d, _floating, _tolist


# ------------------------------------------------------------------------- polynomials
def _sample_polyval(d):
    return (d.array((d.integers(1, 4),)), d.array(d.shape(max_dims=2))), {}


@defcomposite(kind=LINALG, nin=2, domain=_ANYC, sample=_sample_polyval)
def polyval(F, p, x):
    """The polynomial with coefficients ``p`` (highest degree first) at ``x``, by Horner's
    rule; differentiable in both.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.polyval(ndgrad.tensor([1.0, 0.0, -1.0]), ndgrad.tensor([2.0, 3.0]))  # x^2 - 1
    tensor([3., 8.])
    """
    if len(p.shape) != 1:
        raise ValueError("polyval: the coefficients must be 1-D")
    y = p[0] + x * 0
    for k in range(1, p.shape[0]):
        y = y * x + p[k]
    return y


# ---------------------------------------------------------------------------- polynomials
def _sample_poly(d):
    np = sample_numpy()
    if d.boolean():
        return (d.array((d.integers(1, 4),)),), {}
    n = d.integers(1, 3)
    a = d.array((n, n))
    lam = np.linalg.eigvals(a)
    if n > 1 and np.min(np.abs(lam[:, None] - lam[None, :]) + 9 * np.eye(n)) < 0.3:
        d.reject()  # eigenvalue derivatives need distinct eigenvalues
    return (a,), {}


def _conjugate_pairs(values):
    key = lambda c: (c.real, c.imag)  # noqa: E731  (NumPy's complex order)
    return sorted(values, key=key) == sorted((complex(v).conjugate() for v in values), key=key)


@defcomposite(kind=LINALG, domain=_ANYC, sample=_sample_poly, method=False)
def poly(F, seq_of_zeros):
    """The coefficients (highest degree first, leading 1) of the monic polynomial with the
    given zeros, or of the characteristic polynomial of a square matrix (from its
    eigenvalues), as NumPy's ``poly``.

    Real for real zeros, a real matrix, or zeros in complex conjugate pairs (Note [Values
    that decide a shape]: inside ``vmap`` complex zeros give complex coefficients). No zeros
    give ``1.0``. Differentiable; through a matrix's eigenvalues, where they are distinct.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.poly(ndgrad.tensor([1.0, 2.0]))
    tensor([ 1., -3.,  2.])
    >>> ndgrad.poly(ndgrad.tensor([[2.0, 1.0], [1.0, 2.0]]))  # eigenvalues 1 and 3
    tensor([ 1., -4.,  3.])
    """
    s = _atleast_1d(F, seq_of_zeros)
    sh = tuple(s.shape)
    matrix = len(sh) == 2 and sh[0] == sh[1] and sh[0] != 0
    if matrix:
        z = F.linalg.eigvals(s)
    elif len(sh) == 1:
        z = _floating(F, s)
    else:
        raise ValueError(f"poly: input must be 1d or non-empty square 2d array, got shape {sh}")
    if z.shape[0] == 0:
        return F.ones((), dtype=float64, like=s)
    zero = F.zeros((1,), dtype=z.dtype, like=z)
    a = F.concat([zero + 1, F.reshape(-z[0], (1,))], axis=0)
    for k in range(1, z.shape[0]):  # multiply by (x - z_k)
        a = F.concat([a, zero], axis=0) - z[k] * F.concat([zero, a], axis=0)
    if a.dtype.kind == "c":
        if matrix and s.dtype.kind != "c":
            a = F.real(a)
        elif not is_batched(z) and _conjugate_pairs(_tolist(z)):
            a = F.real(a)
    return a


def _sample_polyfit(d):
    deg = d.integers(1, 2)  # (degree 0 is constant in x, tests/test_signal.py)
    npts = deg + d.integers(1, 3)
    x = sample_numpy().cumsum(d.array((npts,), 0.4, 1.0, dtype="float64")) - 1.5
    yshape = (npts,) if d.boolean() else (npts, d.integers(1, 2))
    kw = {"w": d.array((npts,), 0.5, 2.0, dtype="float64")} if d.boolean() else {}
    return (x, d.array(yshape), deg), kw


@defcomposite(kind=LINALG, nin=2, domain=_ANYC, sample=_sample_polyfit, method=False)
def polyfit(F, x, y, deg, rcond=None, full=False, w=None, cov=False):
    """The least-squares fit of a polynomial of degree ``deg`` to the points ``(x, y)``:
    coefficients highest degree first (one column per column of a 2-D ``y``), with weights
    ``w`` multiplying the residuals, as NumPy's ``polyfit``.

    Differentiable in ``x``, ``y`` and ``w`` where the Vandermonde matrix has full rank
    (:func:`ndgrad.linalg.lstsq` on NumPy's column-scaled Vandermonde matrix). Only NumPy's
    default ``full=False`` and ``cov=False`` are supported.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.polyfit(ndgrad.tensor([0.0, 1.0, 2.0, 3.0]), ndgrad.tensor([1.0, 3.0, 5.0, 7.0]), 1)
    tensor([2., 1.])
    """
    if full:
        raise ValueError("polyfit: full=True (residuals, rank, singular values, rcond) is "
                         "not supported; ndgrad.linalg.lstsq on ndgrad.vander(x, deg + 1) "
                         "gives them")
    if cov is not False:
        raise ValueError(f"polyfit: cov={cov!r} is not supported (only cov=False)")
    order = int(deg) + 1
    x, y = _floating(F, _arr(F, x)), _floating(F, _arr(F, y))
    if deg < 0:
        raise ValueError("polyfit: expected deg >= 0")
    if len(x.shape) != 1:
        raise TypeError("polyfit: expected 1D vector for x")
    if x.shape[0] == 0:
        raise TypeError("polyfit: expected non-empty vector for x")
    if len(y.shape) not in (1, 2):
        raise TypeError("polyfit: expected 1D or 2D array for y")
    if x.shape[0] != y.shape[0]:
        raise TypeError("polyfit: expected x and y to have same length")
    if rcond is None:
        rcond = x.shape[0] * _EPS.get(x.dtype.char, 2.0 ** -52)
    powers = [F.ones_like(x)]
    for _ in range(order - 1):  # x, x*x, x*x*x ... (NumPy's vander multiplies, too)
        powers.append(x if len(powers) == 1 else powers[-1] * x)
    lhs, rhs = F.stack(powers[::-1], axis=1), y
    if w is not None:
        w = _floating(F, _arr(F, w))
        if len(w.shape) != 1:
            raise TypeError("polyfit: expected a 1-d array for weights")
        if w.shape[0] != y.shape[0]:
            raise TypeError("polyfit: expected w and y to have the same length")
        lhs = lhs * F.expand_dims(w, 1)
        rhs = rhs * (F.expand_dims(w, 1) if len(rhs.shape) == 2 else w)
    scale = F.sqrt(F.sum(lhs * lhs, axis=0))
    c, _, rank, _ = F.linalg.lstsq(lhs / scale, rhs, rcond)
    if not is_batched(rank) and int(rank) != order:
        warnings.warn("Polyfit may be poorly conditioned", NUMPY.exceptions.RankWarning,
                      stacklevel=3)
    return c / (scale if len(c.shape) == 1 else F.expand_dims(scale, 1))


def _coefficients(F, p, who):
    p = _arr(F, p)
    if len(p.shape) != 1:
        raise ValueError(f"{who}: the coefficients must be 1-D, got shape {tuple(p.shape)}")
    return p


@defcomposite(kind=LINALG, domain=_ANYC, method=False,
              sample=lambda d: ((d.array((d.integers(1, 4),)),), {"m": d.choice([0, 1, 2])}))
def polyder(F, p, m=1):
    """The coefficients of the ``m``-th derivative of the polynomial ``p`` (highest degree
    first); empty once ``m`` exceeds the degree.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.polyder(ndgrad.tensor([1.0, 1.0, 1.0, 1.0]), 2)  # x^3 + x^2 + x + 1
    tensor([6., 2.])
    """
    m = operator.index(m)
    if m < 0:
        raise ValueError("polyder: order of derivative must be positive (see polyint)")
    p = _coefficients(F, p, "polyder")
    for _ in range(m):
        n = p.shape[0] - 1
        p = p[:0] if n <= 0 else p[:-1] * (n - F.arange(n, like=p))  # times n, n-1, ..., 1
    return p


def _sample_polyint(d):
    m = d.choice([0, 1, 2])
    k = d.choice([None, 1.5, [0.5, -1.0]])
    if isinstance(k, list) and m < 2:
        k = None
    return (d.array((d.integers(1, 4),)),), {"m": m, "k": k}


@defcomposite(kind=LINALG, domain=_ANYC, sample=_sample_polyint, method=False)
def polyint(F, p, m=1, k=None):
    """The coefficients of the ``m``-th antiderivative of the polynomial ``p`` (highest
    degree first), the integration constants ``k`` (a number for all, or one per
    integration; zero by default) added in order.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.polyint(ndgrad.tensor([3.0, 2.0, 1.0]), k=5.0)  # 3x^2 + 2x + 1
    tensor([1., 1., 1., 5.])
    """
    m = operator.index(m)
    if m < 0:
        raise ValueError("polyint: order of integral must be positive (see polyder)")
    if k is None:
        ks = [0.0] * m
    else:
        kk = F.reshape(_arr(F, k), (-1,))
        if kk.shape[0] == 1 and m > 1:
            ks = [kk[0]] * m
        elif kk.shape[0] < m:
            raise ValueError("polyint: k must be a scalar or a rank-1 array of length 1 or >m.")
        else:
            ks = [kk[i] for i in range(m)]
    p = _coefficients(F, p, "polyint")
    for i in range(m):
        n = p.shape[0]
        div = p / (n - F.arange(n, like=p))  # divided by n, n-1, ..., 1
        p = F.concat([div, F.zeros((1,), dtype=div.dtype, like=div) + ks[i]], axis=0)
    return p


def _sample_two_polys(d):
    return (d.array((d.integers(1, 4),)), d.array((d.integers(1, 4),))), {}


def _padded(F, a1, a2, who):
    a1, a2 = _atleast_1d(F, a1), _atleast_1d(F, a2)
    _check_1d(who, "the coefficients", a1, a2)
    diff = a2.shape[0] - a1.shape[0]
    if diff > 0:
        a1 = F.concat([F.zeros((diff,), dtype=a1.dtype, like=a1), a1], axis=0)
    elif diff < 0:
        a2 = F.concat([F.zeros((-diff,), dtype=a2.dtype, like=a2), a2], axis=0)
    return a1, a2


@defcomposite(kind=LINALG, nin=2, domain=_ANYC, sample=_sample_two_polys, method=False)
def polyadd(F, a1, a2):
    """The sum of two polynomials (coefficients highest degree first; the shorter padded
    with leading zeros).

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.polyadd(ndgrad.tensor([1.0, 2.0]), ndgrad.tensor([9.0, 5.0, 4.0]))
    tensor([9., 6., 6.])
    """
    a1, a2 = _padded(F, a1, a2, "polyadd")
    return a1 + a2


@defcomposite(kind=LINALG, nin=2, domain=_ANYC, sample=_sample_two_polys, method=False)
def polysub(F, a1, a2):
    """The difference ``a1 - a2`` of two polynomials (coefficients highest degree first).

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.polysub(ndgrad.tensor([2.0, 10.0, -2.0]), ndgrad.tensor([3.0, 10.0, -4.0]))
    tensor([-1.,  0.,  2.])
    """
    a1, a2 = _padded(F, a1, a2, "polysub")
    return a1 - a2


def _trim_leading(F, a):
    """``a`` without its leading exact zeros (``[0]`` of them all), as ``numpy.poly1d``
    (Note [Values that decide a shape]: not inside vmap)."""
    if is_batched(a):
        return a
    values = _tolist(a)
    first = next((i for i, v in enumerate(values) if v != 0), len(values) - 1)
    return a[first:] if first else a


@defcomposite(kind=LINALG, nin=2, domain=_ANYC, sample=_sample_two_polys, method=False)
def polymul(F, a1, a2):
    """The product of two polynomials (coefficients highest degree first): their
    convolution, after dropping leading zero coefficients as NumPy does (not inside ``vmap``:
    Note [Values that decide a shape]).

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.polymul(ndgrad.tensor([1.0, 2.0, 3.0]), ndgrad.tensor([9.0, 5.0, 1.0]))
    tensor([ 9., 23., 38., 17.,  3.])
    """
    a1, a2 = _atleast_1d(F, a1), _atleast_1d(F, a2)
    _check_1d("polymul", "the coefficients", a1, a2)
    if a1.shape[0] == 0 or a2.shape[0] == 0:
        raise ValueError("polymul: empty coefficient arrays")
    return F.convolve(_trim_leading(F, a1), _trim_leading(F, a2))


def _sample_polydiv(d):
    np = sample_numpy()
    v = d.array((d.integers(1, 3),))
    v[0] = np.where(np.abs(v[0]) < 0.5, v[0] + 1.0, v[0])
    # len(u) >= len(v): a shorter u has the constant quotient [0] (tests/test_signal.py)
    u = d.array((d.integers(len(v), 4),))
    r = np.polydiv(u, v)[1]
    if len(v) > 1 and (len(r) < len(v) - 1 or abs(r[0]) < 0.1):
        u[len(u) - len(v) + 1] += 0.5  # the remainder's leading coefficient away from 0
    return (u, v), {}


@defcomposite(kind=LINALG, nin=2, domain=_ANYC, sample=_sample_polydiv, method=False)
def polydiv(F, u, v):
    """The quotient and remainder of the polynomial division ``u / v`` (coefficients highest
    degree first), as NumPy's ``polydiv``: the remainder without its leading coefficients
    of magnitude at most 1e-8 (inside ``vmap``, without the ``len(u) - len(v) + 1`` leading
    ones, which are zero up to rounding: Note [Values that decide a shape]).

    Examples
    --------
    >>> import ndgrad
    >>> q, r = ndgrad.polydiv(ndgrad.tensor([3.0, 5.0, 2.0]), ndgrad.tensor([2.0, 1.0]))
    >>> q
    tensor([1.5 , 1.75])
    >>> r
    tensor([0.25])
    """
    u, v = _floating(F, _atleast_1d(F, u)), _floating(F, _atleast_1d(F, v))
    _check_1d("polydiv", "the coefficients", u, v)
    m, n = u.shape[0] - 1, v.shape[0] - 1
    if v.dtype.kind == "c" and u.dtype.kind != "c":
        u = F.astype(u, v.dtype)
    # in units of powers of two c near max |v| and d near max |u| (exact, constants for every
    # derivative): u / d = q' (v / c) + r', so q = q' d / c and r = r' d (Note [Linear algebra
    # at extreme scales] in solves.py: the quotient's 1 / v[0] differentiates twice
    # through v[0]^-3; with v at 2^500 the second derivatives were 40-75 % of the truth, and
    # with u and v at 2^1000 the remainder's gradient in v was inf)
    inv_u, inv_v = inverse_scale_along(F, u, 0), inverse_scale_along(F, v, 0)
    vn = v * inv_v
    scale = 1.0 / vn[0]
    r, q = u * inv_u, []
    for k in range(m - n + 1):
        d = scale * r[k]
        q.append(d)
        r = F.concat([r[:k], r[k:k + n + 1] - d * vn, r[k + n + 1:]], axis=0)
    q = F.stack(q, axis=0) * (inv_v / inv_u) if q else F.zeros((1,), dtype=r.dtype, like=r)
    r = r / inv_u
    if is_batched(r):
        return q, r[min(max(m - n + 1, 0), m):]
    magnitudes = _tolist(F.abs(r))
    first = 0
    while first < m and magnitudes[first] <= 1e-8:  # NumPy's allclose(r[0], 0)
        first += 1
    return q, r[first:]


def _sample_roots(d):
    np = sample_numpy()
    if d.dtype.kind == "c":
        p = d.array((d.integers(2, 4),))
        p[0] = np.where(np.abs(p[0]) < 0.5, p[0] + 1.0, p[0])
    else:
        # real coefficients with a complex pair among the roots: the result is complex
        # outside vmap too (real roots give a real result there, not inside vmap: Note
        # [Values that decide a shape]; tests/test_signal.py checks both)
        pair = d.array((), -1.0, 1.0) + 1j * d.array((), 0.3, 1.5)
        extra = list(d.array((d.integers(0, 1),), -2.0, 2.0))
        p = d.choice([1.0, -2.0]) * np.real(np.poly([pair, np.conj(pair)] + extra))
    r = np.roots(p)
    if np.min(np.abs(r[:, None] - r[None, :]) + 9 * np.eye(len(r))) < 0.3:
        d.reject()  # root derivatives need distinct roots
    return (p,), {}


@defcomposite(kind=LINALG, domain=_ANYC, sample=_sample_roots, method=False)
def roots(F, p):
    """The roots of the polynomial with coefficients ``p`` (highest degree first): the
    eigenvalues of its companion matrix, as NumPy's ``roots``.

    Leading zero coefficients are dropped and trailing ones give roots at 0; the result is
    real when ``p`` is real and every root is (complex otherwise). Inside ``vmap`` the
    coefficients cannot be read (Note [Values that decide a shape]): the first and last are
    taken to be nonzero and the roots are complex.

    Differentiable in ``p`` where the roots are distinct (through
    :func:`ndgrad.linalg.eigvals`).

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.roots(ndgrad.tensor([1.0, -3.0, 2.0]))
    tensor([2., 1.])
    >>> ndgrad.roots(ndgrad.tensor([1.0, -2.0, 5.0]))
    tensor([1.+2.j, 1.-2.j])
    """
    p = _atleast_1d(F, p)
    if len(p.shape) != 1:
        raise ValueError(f"roots: input must be a rank-1 array, got shape {tuple(p.shape)}")
    p = _floating(F, p)
    trailing = 0
    if not is_batched(p):
        nonzero = [i for i, v in enumerate(_tolist(p)) if v != 0]
        if not nonzero:
            return F.zeros((0,), dtype=float64, like=p)
        trailing = p.shape[0] - nonzero[-1] - 1
        p = p[nonzero[0]:nonzero[-1] + 1]
    n = p.shape[0]
    if n > 1:
        top = F.reshape(-p[1:] / p[0], (1, n - 1))
        companion = F.concat([top, _eye(F, n - 2, n - 1, 0, top)], axis=0) if n > 2 else top
        r = F.linalg.eigvals(companion)
        if p.dtype.kind != "c" and not is_batched(r) and \
                not any(v.imag for v in _tolist(r)):
            r = F.real(r)
    else:
        r = F.zeros((0,), dtype=float64, like=p)
    if trailing:
        r = F.concat([r, F.zeros((trailing,), dtype=r.dtype, like=r)], axis=0)
    return r
