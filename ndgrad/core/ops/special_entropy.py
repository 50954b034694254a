"""The logistic and entropy functions of ``ndgrad.special`` (primitives): ``logit``,
``log_expit``, ``xlogy``, ``xlog1py``, ``entr``, ``rel_entr``, ``kl_div``. (``expit`` is a
composite of ``sigmoid``: ndgrad/scipy/special.py.)
"""

from __future__ import annotations

from .registry import Domain, ELEMENTWISE, defop
from .special_shared import _real_only


# ------------------------------------------------------------------------- logistic
@defop(kind=ELEMENTWISE, namespace="special", domain=Domain((0.05, 0.85)))
def logit(B, x):
    """Logit ``log(x / (1 - x))``, the inverse of :func:`expit`, on ``(0, 1)``.

    ``d/dx logit(x) = 1 / (x (1 - x))``. Real inputs only.

    Examples
    --------
    >>> import ndgrad
    >>> x = ndgrad.tensor([0.5, 0.75], requires_grad=True)
    >>> ndgrad.special.logit(x)
    tensor([0.        , 1.09861229], grad_fn=<SpecialLogitBackward0>)
    >>> ndgrad.special.logit(x).sum().backward()
    >>> x.grad
    tensor([4.        , 5.33333333])
    """
    _real_only("logit", x)
    return B.special.logit(x)


logit.defvjp(lambda F, g, out, x: g / (x * (1 - x)))
logit.defjvp_from_vjp()


@defop(kind=ELEMENTWISE, namespace="special", domain=Domain((-4.0, 4.0)))
def log_expit(B, x):
    """``log(expit(x))``, accurate for large ``|x|`` (``-log1p(exp(-x))``).

    ``d/dx log_expit(x) = 1 - expit(x) = expit(-x)``. Real inputs only.

    Examples
    --------
    >>> import ndgrad
    >>> x = ndgrad.tensor([-100.0, 0.0], requires_grad=True)
    >>> ndgrad.special.log_expit(x)
    tensor([-100.        ,   -0.69314718], grad_fn=<SpecialLogExpitBackward0>)
    >>> ndgrad.special.log_expit(x).sum().backward()
    >>> x.grad
    tensor([1. , 0.5])
    """
    _real_only("log_expit", x)
    return B.special.log_expit(x)


log_expit.defvjp(lambda F, g, out, x: g * F.sigmoid(-x))
log_expit.defjvp_from_vjp()


# ------------------------------------------------------------------------- x log y
def _kept_ratio(F, x, y, keep):
    """``x / y`` where ``keep``, else 0, with no ``0 / 0`` formed where it is not kept (its
    derivative would be nan even where ``where`` discards it)."""
    return F.where(keep, x / F.where(keep, y, 1.0), 0.0)


def _ratio(F, x, y):
    """``x / y``, and 0 at ``x = y = 0`` (not ``0 / 0``)."""
    return _kept_ratio(F, x, y, F.logical_or(x != 0, y != 0))


@defop(kind=ELEMENTWISE, nin=2, namespace="special", domain=Domain((-2.0, 2.0), (0.2, 3.0)))
def xlogy(B, x, y):
    """``x * log(y)``, with ``0`` where ``x == 0`` (even where ``y == 0``), broadcasting.

    Gradients (as PyTorch's ``xlogy``): ``log(y)`` for ``x`` (the function is ``x log(y)``
    for every ``x`` when ``y > 0``, so also at ``x = 0``), except ``0`` where ``x == 0`` and
    ``y <= 0`` (there ``x log(y)`` is not defined around the point; 0 is the derivative along
    the line ``x = 0``, where the function is 0, not ``log(0) = -inf``), and ``x / y`` for
    ``y``. Real inputs only here.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.special.xlogy(ndgrad.tensor([0.0, 2.0]), ndgrad.tensor([0.0, 3.0]))
    tensor([0.        , 2.19722458])
    >>> x = ndgrad.tensor([0.0, 2.0], requires_grad=True)
    >>> y = ndgrad.tensor([2.0, 3.0], requires_grad=True)
    >>> ndgrad.special.xlogy(x, y).sum().backward()
    >>> x.grad, y.grad
    (tensor([0.69314718, 1.09861229]), tensor([0.        , 0.66666667]))
    >>> x = ndgrad.tensor(0.0, requires_grad=True)
    >>> ndgrad.special.xlogy(x, 0.0).backward()
    >>> x.grad  # not log(0) = -inf
    tensor(0.)
    """
    _real_only("xlogy", x, y)
    return B.special.xlogy(x, y)


# d/dx = log(y), and 0 where x == 0 and y <= 0: PyTorch's rule (derivatives.yaml, Note
# [Gradient formula for xlogy at x = 0, y <= 0]), written xlogy(keep, y) (xlogy(0, y) = 0
# for every y, without a warning)
# and d/dy = x / y, 0 where x == 0 and y <= 0 too (the function is 0 along y there; x / y
# was 0 / 0 = nan at y = 0), consistent with the x rule's derivative in y
xlogy.defvjp(lambda F, g, out, x, y:
             g * F.special.xlogy(F.logical_or(x != 0, y > 0), y),
             lambda F, g, out, x, y: g * _kept_ratio(F, x, y, F.logical_or(x != 0, y > 0)))
xlogy.defjvp_from_vjp()


@defop(kind=ELEMENTWISE, nin=2, namespace="special", domain=Domain((-2.0, 2.0), (-0.5, 2.0)))
def xlog1py(B, x, y):
    """``x * log1p(y)``, with ``0`` where ``x == 0`` (even where ``y == -1``), broadcasting.

    Gradients (as PyTorch's ``xlog1py``): ``log1p(y)`` for ``x`` (also at ``x = 0``), except
    ``0`` where ``x == 0`` and ``y <= -1`` (not ``log1p(-1) = -inf``), and ``x / (1 + y)`` for
    ``y``. Real inputs only here.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.special.xlog1py(ndgrad.tensor([0.0, 2.0]), ndgrad.tensor([-1.0, 1e-20]))
    tensor([0.e+00, 2.e-20])
    >>> x = ndgrad.tensor([0.0, 2.0], requires_grad=True)
    >>> y = ndgrad.tensor([1.0, 1e-20], requires_grad=True)
    >>> ndgrad.special.xlog1py(x, y).sum().backward()
    >>> x.grad, y.grad
    (tensor([6.93147181e-01, 1.00000000e-20]), tensor([0., 2.]))
    >>> x = ndgrad.tensor(0.0, requires_grad=True)
    >>> ndgrad.special.xlog1py(x, -1.0).backward()
    >>> x.grad  # not log1p(-1) = -inf
    tensor(0.)
    """
    _real_only("xlog1py", x, y)
    return B.special.xlog1py(x, y)


# d/dx = log1p(y), and 0 where x == 0 and y <= -1 (PyTorch's rule, as xlogy's)
xlog1py.defvjp(lambda F, g, out, x, y:
               g * F.special.xlog1py(F.logical_or(x != 0, y > -1), y),
               lambda F, g, out, x, y: g * _kept_ratio(F, x, 1 + y, F.logical_or(x != 0, y > -1)))
xlog1py.defjvp_from_vjp()


# ------------------------------------------------------------------------- entropies
@defop(kind=ELEMENTWISE, namespace="special", domain=Domain((0.1, 3.0)))
def entr(B, x):
    """Elementwise entropy term ``-x log(x)`` for ``x > 0``, ``0`` at 0, ``-inf`` below.

    ``d/dx entr(x) = -(log(x) + 1)`` (``+inf`` at 0, as PyTorch's ``entr``). Real inputs
    only.

    Examples
    --------
    >>> import ndgrad
    >>> x = ndgrad.tensor([0.5, 2.0], requires_grad=True)
    >>> ndgrad.special.entr(x)
    tensor([ 0.34657359, -1.38629436], grad_fn=<SpecialEntrBackward0>)
    >>> ndgrad.special.entr(x).sum().backward()
    >>> x.grad
    tensor([-0.30685282, -1.69314718])
    """
    _real_only("entr", x)
    return B.special.entr(x)


entr.defvjp(lambda F, g, out, x: -g * (F.log(x) + 1))
entr.defjvp_from_vjp()


@defop(kind=ELEMENTWISE, nin=2, namespace="special", domain=Domain((0.1, 3.0)))
def rel_entr(B, x, y):
    """Relative entropy term ``x log(x / y)`` (``0`` for ``x = 0, y >= 0``; ``inf`` outside
    the domain), elementwise, broadcasting.

    Gradients for ``x, y > 0``: ``log(x / y) + 1`` and ``-x / y``. Real inputs only.

    Examples
    --------
    >>> import ndgrad
    >>> x = ndgrad.tensor([0.5, 1.0], requires_grad=True)
    >>> ndgrad.special.rel_entr(x, 0.25)
    tensor([0.34657359, 1.38629436], grad_fn=<SpecialRelEntrBackward0>)
    >>> ndgrad.special.rel_entr(x, 0.25).sum().backward()
    >>> x.grad
    tensor([1.69314718, 2.38629436])
    """
    _real_only("rel_entr", x, y)
    return B.special.rel_entr(x, y)


# log x - log y, not log(x / y): x / y underflows (-inf at x = 1e-300, y = 1e150) and its
# derivatives go through x / y^2 (Note [Derivatives at special points] in elementwise.py);
# x / y is 0 at x = y = 0 (the function is 0, or y, along y there)
rel_entr.defvjp(lambda F, g, out, x, y: g * (F.log(x) - F.log(y) + 1),
                lambda F, g, out, x, y: -g * _ratio(F, x, y))
rel_entr.defjvp_from_vjp()


@defop(kind=ELEMENTWISE, nin=2, namespace="special", domain=Domain((0.1, 3.0)))
def kl_div(B, x, y):
    """Kullback-Leibler divergence term ``x log(x / y) - x + y`` (``y`` for ``x = 0``;
    ``inf`` outside the domain), elementwise, broadcasting.

    Gradients for ``x, y > 0``: ``log(x / y)`` and ``1 - x / y``. Real inputs only.

    Examples
    --------
    >>> import ndgrad
    >>> y = ndgrad.tensor([0.5, 1.0], requires_grad=True)
    >>> ndgrad.special.kl_div(1.0, y)
    tensor([0.19314718, 0.        ], grad_fn=<SpecialKlDivBackward0>)
    >>> ndgrad.special.kl_div(1.0, y).sum().backward()
    >>> y.grad
    tensor([-1.,  0.])
    """
    _real_only("kl_div", x, y)
    return B.special.kl_div(x, y)


kl_div.defvjp(lambda F, g, out, x, y: g * (F.log(x) - F.log(y)),
              lambda F, g, out, x, y: g * (1 - _ratio(F, x, y)))
kl_div.defjvp_from_vjp()
