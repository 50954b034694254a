"""``ndgrad.special``: the differentiable functions of this namespace.

Each function is a registered primitive (or composite) declared in
``ndgrad/core/ops/`` with ``namespace="special"`` (Note [Namespaces] in
``ndgrad/core/ops/registry.py``), so the property suite checks its vjp, jvp, second
order and batching rule like every other op's.
"""

from __future__ import annotations

import warnings

from ..core import ops as _ops
from ..core.ops.reductions import normalize_axis
from ..core.ops.registry import ELEMENTWISE, Domain, defcomposite
from ..core.ops.special_shared import _INF, _NAN, _is_complex, _np, _stop

__name__ = "ndgrad.special"  # its public name (Note [Public module names] in scipy/__init__.py)

# ------------------------------------------------------------------------- composites
# SciPy's functions written with ``F`` from the primitives (registered: the property suites
# check them); declared before the namespace is filled from the registry below.
@defcomposite(namespace="special", kind=ELEMENTWISE, domain=Domain((-3.0, 3.0)))
def expit(F, x):
    """Logistic sigmoid ``1 / (1 + exp(-x))``, elementwise: the same function as
    :func:`ndgrad.sigmoid` (this calls it), under SciPy's name.

    ``d/dx expit(x) = expit(x) (1 - expit(x))``.

    Examples
    --------
    >>> import ndgrad
    >>> x = ndgrad.tensor([0.0, 2.0], requires_grad=True)
    >>> ndgrad.special.expit(x)
    tensor([0.5       , 0.88079708], grad_fn=<SigmoidBackward0>)
    >>> ndgrad.special.expit(x).sum().backward()
    >>> x.grad
    tensor([0.25      , 0.10499359])
    """
    return F.sigmoid(x)


# ------------------------------------------------------------------------- log-sum-exp family
def _axis_kwargs(d, ndim):
    return d.choice([None] + ([d.axis(ndim, none=False), d.axes(ndim)] if ndim else []))


def _sample_logsumexp(d):
    np = _np()
    shape = d.shape()
    a = d.array(shape, -3.0, 3.0)
    axis = _axis_kwargs(d, len(shape))
    kw = {"axis": axis, "keepdims": d.boolean(), "return_sign": d.boolean()}
    mode = d.choice(["none", "scalar", "positive", "signed"] if kw["return_sign"]
                    else ["none", "scalar", "positive"])
    if mode == "none":
        return (a,), kw
    if mode == "scalar":
        kw["b"] = float(d.array((), 0.2, 2.0)) * (-1.0 if kw["return_sign"] and d.boolean()
                                                  else 1.0)
        return (a,), kw
    k = d.integers(0, len(shape))  # b broadcasts against a (a suffix, some axes of size 1)
    bshape = tuple(1 if d.boolean() else s for s in shape[k:])
    b = d.array(bshape, 0.2, 2.0)
    if mode == "signed":
        b = np.where(d.bool_array(bshape), b, -b)
        terms = b * np.exp(a)
        total = np.sum(terms, axis=axis)
        scale = np.sum(np.abs(terms), axis=axis)
        if np.any(np.abs(total) < 0.1 * scale):  # keep the sum away from 0 (log|s| blows up)
            d.reject()
    kw["b"] = b
    return (a,), kw


def _exp_limit(dtype):
    # largest argument whose exp is finite, per floating width (float16/32/64)
    return {2: 11.0, 4: 88.0}.get(getattr(dtype, "itemsize", 8), 709.0)


@defcomposite(namespace="special", sample=_sample_logsumexp, domain=Domain((-3.0, 3.0)))
def logsumexp(F, a, axis=None, b=None, keepdims=False, return_sign=False):
    """``log(sum(b * exp(a)))`` over ``axis``, computed stably, with SciPy's signature.

    Parameters
    ----------
    a : tensor
        Real input (differentiable).
    axis : int or tuple of ints, optional
        Axes to reduce; None (the default) reduces all.
    b : tensor or number, optional
        Weights of the exponentials, broadcasting with ``a``; may be negative (see
        ``return_sign``); differentiable. Entries where ``b == 0`` are left out of the sum,
        however large ``a`` is there.
    keepdims : bool
        Keep the reduced axes as length-1 dimensions.
    return_sign : bool
        Return ``(log|s|, sign(s))`` for the sum ``s`` instead of ``log(s)``, which is NaN
        where ``s < 0``. The sign is piecewise constant: its gradient is zero.

    Returns
    -------
    tensor, or (tensor, tensor) with ``return_sign``

    Notes
    -----
    Without ``b`` and ``return_sign`` this is :func:`ndgrad.logsumexp` (it calls it). With
    them, the largest ``a`` among the entries with ``b != 0`` is subtracted before
    exponentiating (as a constant); the gradients are ``d/da = sign(s) b exp(a - out)`` and
    ``d/db = sign(s) exp(a - out)``.

    Examples
    --------
    >>> import ndgrad
    >>> a = ndgrad.tensor([1000.0, 1000.0], requires_grad=True)
    >>> ndgrad.special.logsumexp(a, b=ndgrad.tensor([1.0, 3.0])).item()  # log(4) + 1000
    1001.3862943611199
    >>> out, sign = ndgrad.special.logsumexp(a, b=ndgrad.tensor([1.0, -3.0]), return_sign=True)
    >>> out.item(), sign.item()  # log|1 - 3| + 1000, sign(1 - 3)
    (1000.6931471805599, -1.0)
    >>> out.backward()
    >>> a.grad
    tensor([-0.5,  1.5])
    """
    if b is None:
        out = F.logsumexp(a, axis=axis, keepdims=keepdims)
        if not return_sign:
            return out
        # the sum of exponentials is positive, or 0 where out is -inf: sign(exp(min(out, 0)))
        # is that sign, never overflows, and is recorded like the other case's sign (zero
        # gradient), so both outputs belong to the graph
        return out, F.sign(F.exp(F.minimum(out, 0.0)))
    if _is_complex(a) or _is_complex(b):
        raise TypeError("special.logsumexp: complex a or b is not supported with b= or "
                        "return_sign=True; pass real tensors")
    masked = F.where(b == 0, -_INF, a)  # broadcast shape; b == 0 entries never set the shift
    nd = len(masked.shape)
    axes = normalize_axis(axis, nd)
    m = F.max(_stop(masked), axis=axes, keepdims=True)
    m = F.where(F.isfinite(m), m, 0.0)
    # a - m <= 0 where b != 0; the clamp only keeps exp finite where b == 0 (0 * inf)
    e = F.exp(F.minimum(a - m, _exp_limit(masked.dtype)))
    s = F.sum(F.multiply(b, e), axis=axes, keepdims=True)  # (b may be a NumPy array)
    zero = s == 0
    out = F.where(zero, -_INF, F.log(F.where(zero, 1.0, F.abs(s))) + m)
    sign = F.sign(s)
    if not return_sign:
        out = F.where(s < 0, _NAN, out)  # log of a negative sum (SciPy: NaN)
    if not keepdims:
        shape = tuple(n for k, n in enumerate(masked.shape) if k not in axes)
        out = F.reshape(out, shape)
        sign = F.reshape(sign, shape)
    return (out, sign) if return_sign else out


def _sample_softmax(d):
    shape = d.shape()
    return (d.array(shape, -3.0, 3.0),), {"axis": _axis_kwargs(d, len(shape))}


@defcomposite(namespace="special", sample=_sample_softmax, domain=Domain((-3.0, 3.0)))
def softmax(F, x, axis=None):
    """Softmax ``exp(x - logsumexp(x, axis))`` over ``axis``, with SciPy's signature.

    Parameters
    ----------
    x : tensor
    axis : int or tuple of ints, optional
        Axes to normalize over; None (SciPy's default) normalizes over all elements.

    Notes
    -----
    Written with :func:`ndgrad.logsumexp`, so it never overflows. Its Jacobian is
    ``diag(s) - s s^T`` (over the normalized axes): the vjp is ``s * (g - sum(g * s))``.

    Examples
    --------
    >>> import ndgrad
    >>> x = ndgrad.tensor([[1.0, 1.0], [0.0, 1000.0]])
    >>> ndgrad.special.softmax(x, axis=1)
    tensor([[0.5, 0.5],
            [0. , 1. ]])
    """
    return F.exp(x - F.logsumexp(x, axis=axis, keepdims=True))


@defcomposite(namespace="special", sample=_sample_softmax, domain=Domain((-3.0, 3.0)))
def log_softmax(F, x, axis=None):
    """``x - logsumexp(x, axis)``: the logarithm of :func:`softmax`, accurate where the
    softmax underflows.

    Parameters
    ----------
    x : tensor
    axis : int or tuple of ints, optional
        Axes to normalize over; None (SciPy's default) normalizes over all elements.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.special.log_softmax(ndgrad.tensor([0.0, 1000.0]))
    tensor([-1000.,     0.])
    """
    return x - F.logsumexp(x, axis=axis, keepdims=True)


# ------------------------------------------------------------------------- the namespace
globals().update(_ops.NAMESPACED["special"])
__test__ = _ops.doctests(_ops.NAMESPACED["special"])  # their examples, for --doctest-modules

# (names with a leading underscore are helpers of the rules, such as _gammainc_da)
__all__ = sorted(n for n in _ops.NAMESPACED["special"] if not n.startswith("_"))


# ----------------------------------------------------------------------------------------
# Functions written with the ones above (plain functions, not registered): differentiable in
# every transform through the functions they call.

_PUBLIC = _ops.PUBLIC

jn = jv  # noqa: F821  (SciPy's jn is its jv: the same function)


def yn(n, x):
    """Bessel function of the second kind of integer order ``n``, ``Y_n(x)``: :func:`yv` of
    the order truncated toward zero, as SciPy's ``yn`` (a separate function from its ``yv``:
    a non-integer order is truncated, with SciPy's RuntimeWarning). Differentiable in ``x``.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.special.yn(1, ndgrad.tensor([4.0]))
    tensor([0.39792571])
    """
    trunc = _PUBLIC["trunc"](n)
    if not bool(_PUBLIC["all"](trunc == n)):
        warnings.warn("floating point number truncated to an integer", RuntimeWarning,
                      stacklevel=2)
    return yv(trunc, x)  # noqa: F821



def iv(v, z):
    """Modified Bessel function of the first kind of real order ``v``, ``I_v(z)``.

    ``ive(v, z) * exp(|z|)`` (real ``z``): differentiable in ``z``
    (``I_v' = (I_(v-1) + I_(v+1)) / 2``), not in the order ``v``.

    Examples
    --------
    >>> import ndgrad
    >>> z = ndgrad.tensor([1.0, 2.0], requires_grad=True)
    >>> ndgrad.special.iv(0, z)
    tensor([1.26606588, 2.2795853 ], grad_fn=<MultiplyBackward0>)
    >>> ndgrad.special.iv(0, z).sum().backward()
    >>> z.grad  # I_1
    tensor([0.5651591 , 1.59063685])
    """
    return ive(v, z) * _PUBLIC["exp"](_PUBLIC["abs"](z))  # noqa: F821


def kv(v, z):
    """Modified Bessel function of the second kind of real order ``v``, ``K_v(z)``
    (``z > 0``).

    ``kve(v, z) * exp(-z)``: differentiable in ``z`` (``K_v' = -(K_(v-1) + K_(v+1)) / 2``),
    not in the order ``v``.

    Examples
    --------
    >>> import ndgrad
    >>> z = ndgrad.tensor([1.0, 2.0], requires_grad=True)
    >>> ndgrad.special.kv(0, z)
    tensor([0.42102444, 0.11389387], grad_fn=<MultiplyBackward0>)
    >>> ndgrad.special.kv(0, z).sum().backward()
    >>> z.grad  # -K_1
    tensor([-0.60190723, -0.13986588])
    """
    return kve(v, z) * _PUBLIC["exp"](-z)  # noqa: F821


def exp1(x):
    """Exponential integral ``E_1(x) = integral_x^inf e^-t / t dt`` for real ``x > 0``
    (``expn(1, x)``; ``NaN`` for ``x < 0``, as SciPy's real ``exp1``).

    ``d/dx E_1(x) = -e^-x / x``.

    Examples
    --------
    >>> import ndgrad
    >>> x = ndgrad.tensor([0.5, 2.0], requires_grad=True)
    >>> ndgrad.special.exp1(x)
    tensor([0.55977359, 0.04890051], grad_fn=<SpecialExpnBackward0>)
    >>> ndgrad.special.exp1(x).sum().backward()
    >>> x.grad
    tensor([-1.21306132, -0.06766764])
    """
    return expn(1, x)  # noqa: F821


def rgamma(x):
    """Reciprocal of the gamma function, ``1 / gamma(x)`` (0 at the poles 0, -1, -2, ...).

    ``d/dx (1 / gamma(x)) = -digamma(x) / gamma(x)``, through :func:`gamma`.

    Examples
    --------
    >>> import ndgrad
    >>> x = ndgrad.tensor([1.0, 3.0], requires_grad=True)
    >>> ndgrad.special.rgamma(x)
    tensor([1. , 0.5], grad_fn=<DivideBackward0>)
    >>> ndgrad.special.rgamma(x).sum().backward()
    >>> x.grad
    tensor([ 0.57721566, -0.46139217])
    """
    return 1.0 / gamma(x)  # noqa: F821


def gammaincinv(a, y):
    """Inverse of :func:`gammainc` in ``x``: the ``x >= 0`` with ``gammainc(a, x) = y``.

    Differentiable in ``y`` (to any order): ``dx/dy = 1 / (x^(a-1) e^-x / gamma(a))``; and in
    the shape ``a`` to first order, by the implicit function theorem:
    ``dx/da = -(dP/da)(a, x) / (x^(a-1) e^-x / gamma(a))`` (``dP/da`` summed numerically, as
    for :func:`gammainc`; a second derivative in ``a`` raises ``NotImplementedError``).

    Examples
    --------
    >>> import ndgrad
    >>> y = ndgrad.tensor([0.25, 0.5], requires_grad=True)
    >>> ndgrad.special.gammaincinv(1.0, y)  # -log(1 - y)
    tensor([0.28768207, 0.69314718], grad_fn=<SpecialGammaincinvBackward0>)
    >>> ndgrad.special.gammaincinv(1.0, y).sum().backward()
    >>> y.grad  # 1 / (1 - y)
    tensor([1.33333333, 2.        ])
    """
    return _gammaincinv(a, y)  # noqa: F821


def gammainccinv(a, y):
    """Inverse of :func:`gammaincc` in ``x``: the ``x >= 0`` with ``gammaincc(a, x) = y``
    (SciPy's, accurate for small ``y``, unlike ``gammaincinv(a, 1 - y)``).

    Differentiable in ``y`` (to any order): ``dx/dy = -1 / (x^(a-1) e^-x / gamma(a))``, and in
    ``a`` to first order (``dx/da = -(dP/da)(a, x) / (x^(a-1) e^-x / gamma(a))``, as for
    :func:`gammaincinv`).

    Examples
    --------
    >>> import ndgrad
    >>> a = ndgrad.tensor(1.0, requires_grad=True)
    >>> ndgrad.special.gammainccinv(a, 0.5)  # log 2
    tensor(0.69314718, grad_fn=<SpecialGammaincinvBackward0>)
    >>> ndgrad.special.gammainccinv(a, 0.5).backward()
    >>> a.grad
    tensor(0.96804483)
    """
    return _gammaincinv(a, y, upper=True)  # noqa: F821


__all__ = sorted(set(__all__) | {"jn", "yn", "iv", "kv", "exp1", "rgamma", "gammaincinv",
                                 "gammainccinv"})
