"""Elementwise primitives: unary and binary math, comparisons and predicates, ``where``,
``clip``.

Binary ops broadcast; their vjp rules return cotangents in the broadcast shape and the engine
sums them back (Note [Broadcasting is undone by the engine]). Complex-capable ops follow the
conjugate Wirtinger convention: ``vjp = g * conj(f'(x))``.
"""

from __future__ import annotations

from .registry import COMPARISON, ELEMENTWISE, Domain, defop

# Domains (where the property suite samples); the `valid` predicates keep draws away from
# kinks and poles, where finite differences are meaningless.
REALS = Domain((-2.0, 2.0), complex=True)
REALS_ONLY = Domain((-2.0, 2.0))
POSITIVE = Domain((0.2, 3.0))


def _away_from_zero(x, *rest):
    import numpy as np  # test-time predicate on sampled NumPy arrays, not a formula
    return bool(np.all(np.abs(x) > 1e-2))


# ------------------------------------------------------------------------- arithmetic
@defop(kind=ELEMENTWISE, nin=2, domain=REALS, method=False, inplace_method="add_")
def add(B, x, y):
    """Elementwise ``x + y``, broadcasting.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.add(ndgrad.tensor([1.0, 2.0]), 1.5)
    tensor([2.5, 3.5])
    """
    return B.add(x, y)


add.defvjp(lambda F, g, out, x, y: g,
           lambda F, g, out, x, y: g)
add.defjvp_linear()


@defop(kind=ELEMENTWISE, nin=2, domain=REALS, method=False, inplace_method="sub_")
def subtract(B, x, y):
    """Elementwise ``x - y``, broadcasting.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.subtract(ndgrad.tensor([1.0, 2.0]), 1.0)
    tensor([0., 1.])
    """
    return B.subtract(x, y)


subtract.defvjp(lambda F, g, out, x, y: g,
                lambda F, g, out, x, y: -g)
subtract.defjvp_linear()


@defop(kind=ELEMENTWISE, nin=2, domain=REALS, method=False, inplace_method="mul_")
def multiply(B, x, y):
    """Elementwise ``x * y``, broadcasting.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.multiply(ndgrad.tensor([1.0, 2.0]), ndgrad.tensor([3.0, 4.0]))
    tensor([3., 8.])
    """
    return B.multiply(x, y)


multiply.defvjp(lambda F, g, out, x, y: g * F.conj(y),
                lambda F, g, out, x, y: g * F.conj(x))
multiply.defjvp_each(lambda F, t, out, x, y: t * y,
                     lambda F, t, out, x, y: x * t)


@defop(kind=ELEMENTWISE, nin=2, domain=Domain((-2.0, 2.0), (0.5, 2.0), complex=True),
       method=False, inplace_method="div_")
def divide(B, x, y):
    """Elementwise ``x / y`` (true division), broadcasting.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.divide(ndgrad.tensor([1.0, 3.0]), 2.0)
    tensor([0.5, 1.5])
    """
    return B.divide(x, y)


# d(x/y)/dy = -x/y^2 = -out/y
divide.defvjp(lambda F, g, out, x, y: g / F.conj(y),
              lambda F, g, out, x, y: -g * F.conj(out / y))
divide.defjvp_each(lambda F, t, out, x, y: t / y,
                   lambda F, t, out, x, y: -t * out / y)


@defop(kind=ELEMENTWISE, domain=REALS, method=False, inplace_method="neg_")
def negative(B, x):
    """Elementwise ``-x``.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.negative(ndgrad.tensor([1.0, -2.0]))
    tensor([-1.,  2.])
    """
    return B.negative(x)


negative.defvjp(lambda F, g, out, x: -g)
negative.defjvp_linear()


# ------------------------------------------------------------------------- exp / log / trig
@defop(kind=ELEMENTWISE, domain=REALS, inplace_method="exp_")
def exp(B, x):
    """Elementwise exponential.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.exp(ndgrad.tensor([0.0, 1.0]))
    tensor([1.        , 2.71828183])
    """
    return B.exp(x)


exp.defvjp(lambda F, g, out, x: g * F.conj(out))
exp.defjvp_from_vjp()


@defop(kind=ELEMENTWISE, domain=POSITIVE, inplace_method="log_")
def log(B, x):
    """Natural logarithm, elementwise.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.log(ndgrad.tensor([1.0]))
    tensor([0.])
    """
    return B.log(x)


log.defvjp(lambda F, g, out, x: g / F.conj(x))
log.defjvp_from_vjp()


@defop(kind=ELEMENTWISE, domain=REALS, inplace_method="tanh_")
def tanh(B, x):
    """Hyperbolic tangent, elementwise.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.tanh(ndgrad.tensor([0.0]))
    tensor([0.])
    """
    return B.tanh(x)


# d tanh = 1 - tanh^2, reusing the saved output
tanh.defvjp(lambda F, g, out, x: g * F.conj(1 - out * out))
tanh.defjvp_from_vjp()


# ------------------------------------------------------------------------- comparisons
def _comparison(name, np_name, doc_example):
    def forward(B, x, y):
        return getattr(B, np_name)(x, y)
    forward.__name__ = name
    forward.__doc__ = (f"Elementwise ``{doc_example}`` (a bool tensor that never requires "
                       "grad).\n\n    Examples\n    --------\n    >>> import ndgrad\n"
                       f"    >>> ndgrad.{name}(ndgrad.tensor([1.0, 2.0]), 1.0)\n"
                       "    tensor(" + _EXAMPLES[name] + ")\n    ")
    return defop(kind=COMPARISON, nin=2, differentiable=False, method=False,
                 domain=REALS_ONLY, notes={"vjp": "comparisons are not differentiable"})(forward)


_EXAMPLES = {
    "equal": "[ True, False]", "not_equal": "[False,  True]", "less": "[False, False]",
    "less_equal": "[ True, False]", "greater": "[False,  True]",
    "greater_equal": "[ True,  True]",
}
equal = _comparison("equal", "equal", "x == y")
not_equal = _comparison("not_equal", "not_equal", "x != y")
less = _comparison("less", "less", "x < y")
less_equal = _comparison("less_equal", "less_equal", "x <= y")
greater = _comparison("greater", "greater", "x > y")
greater_equal = _comparison("greater_equal", "greater_equal", "x >= y")


# ------------------------------------------------------------------------- complex parts
@defop(kind=ELEMENTWISE, domain=REALS)
def conj(B, x):
    """Complex conjugate, elementwise (returns a real input unchanged).

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.conj(ndgrad.tensor([1 + 2j]))
    tensor([1.-2.j])
    """
    dt = getattr(x, "dtype", None)
    if dt is None:  # a Python scalar
        return x.conjugate() if isinstance(x, complex) else x
    return B.conj(x) if dt.kind == "c" else x


conj.defvjp(lambda F, g, out, x: F.conj(g))
conj.defjvp_linear()


def _conj_public(x):
    from ..dispatch import apply
    from ..tensor import Tensor
    if isinstance(x, Tensor) and x.dtype.kind != "c":
        return x  # as PyTorch: conj of a real tensor is the tensor itself
    return apply(conj, x)


_conj_public.__doc__ = conj.__doc__
conj.custom_public = _conj_public
