"""``ndgrad.special``: the differentiable functions of this namespace.

Each function is a registered primitive (or composite) declared in
``ndgrad/core/ops/`` with ``namespace="special"`` (Note [Namespaces] in
``ndgrad/core/ops/registry.py``), so the property suite checks its vjp, jvp, second
order and batching rule like every other op's.
"""

from __future__ import annotations

import warnings

from ..core import ops as _ops

__name__ = "ndgrad.special"  # its public name (Note [Public module names] in scipy/__init__.py)

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
