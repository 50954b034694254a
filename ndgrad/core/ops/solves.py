"""The primitives of ``ndgrad.linalg`` that solve and apply matrix functions: solves
(``solve``, ``solve_triangular``, ``cholesky_solve``), inverses (``inv``, ``pinv``),
determinants (``det``, ``slogdet``), the Cholesky factorization (its inverse has a closed
form), ``matrix_rank`` and ``matrix_exp``. (``linalg.cross`` is in contractions.py,
``linalg.vector_norm`` in reductions.py.) The composites written from them (``norm``,
``matrix_norm``, ``lstsq``, ``multi_dot`` ...) are in ndgrad/numpy/linear_algebra.py.

Every function is batched over leading dimensions with NumPy's broadcasting, differentiable
in the arguments its docstring names, and declared with ``namespace="linalg"`` (Note
[Namespaces] in ``registry.py``): public as ``ndgrad.linalg.<name>``, called in formulas as
``F.linalg.<name>``. The eigen- and singular-value decompositions live in
``decompositions.py``.

Conventions
-----------
* ``x^H`` is the conjugate transpose; complex inputs follow PyTorch's convention (the
  gradient is the conjugate Wirtinger derivative), so a formula ``d f = tr(M dA)`` has the
  vjp ``g * M^H``.
* Backward formulas solve instead of inverting: ``a^-H g`` is ``solve(a^H, g)``; a
  triangular factor is applied with :func:`solve_triangular`. Each formula is written with
  ``F`` ops only, so it is itself differentiable (second order, forward over reverse).
* Errors a user can cause (non-square input, mismatched shapes, a singular or indefinite
  matrix, an unknown ``ord``) raise :class:`LinAlgError` (NumPy's, a ``ValueError``) or
  ``ValueError`` / ``TypeError`` with a message that says what to change.

Note [Functions of Hermitian matrices]
--------------------------------------
LAPACK's Cholesky (and ``pinv(hermitian=True)``) read one triangle of their input. A
gradient that is the derivative of "read the lower triangle" is lower triangular, which is
correct but not what users of PyTorch expect (a Hermitian gradient), and PyTorch's Hermitian
gradient is not the derivative of its own forward (finite differences of an upper entry are
zero). As JAX does, :func:`cholesky` and ``pinv(hermitian=True)`` therefore act on the
Hermitian part ``(a + a^H) / 2`` of their input: identical results for Hermitian input, and
the gradient is Hermitian *and* agrees with finite differences in every entry.

Note [Triangular inputs]
------------------------
:func:`solve_triangular` and :func:`cholesky_solve` read only the triangle of their matrix
argument (without its diagonal when ``unitriangular``). Their gradients with respect to that
argument are projected onto the same triangle, so entries the function ignores get zero
gradient (PyTorch projects for ``solve_triangular``; for ``cholesky_solve`` it does not, and
its gradient then differs in the ignored triangle).

Note [Linear algebra at extreme scales]
---------------------------------------
Most of these functions are homogeneous: ``f(s a) = s^k f(a)`` (``inv``, ``pinv``: k = -1;
norms, singular values: 1; singular vectors: 0), so their derivatives at ``s a`` are
``s^(k-1)`` (and ``s^(k-2)``) times those at ``a``, representable wherever that truth is. A
rule that forms an intermediate of a higher power of the scale than its result loses it:
``pinv``'s ``A (P (G^H P P^H))`` passed through ``|G| |P|^3``, which underflows at ``|A|`` of
1e150 (the gradient came out with the wrong sign) and overflows at 1e-150 (nan), where the
result, ``|G| |P|^2``, is 1e-300. The rules therefore

* order products so that each starts from the cotangent (tangent) and its scale moves
  monotonically to the result's: ``(G^H P) P^H``, the projector ``A P`` (of order one) applied
  to that, not ``A`` to ``P k`` (``pinv``; ``cholesky_solve``'s ``gb (x^H L)``, not
  ``(gb x^H) L``, whose ``|g| |L|^-6`` underflowed at 1e150: its gradient in ``L`` was 0);
* write quotients of squares as partial fractions of order ``1 / S`` (``svd``:
  ``S_j / (S_j^2 - S_i^2) = (1 / (S_j - S_i) + 1 / (S_j + S_i)) / 2``; the gaps of the
  squares were 0 at 2^-1016, the derivatives of the vectors silently wrong);
* compute ``p``-norms in units of a power of two near the largest (``p < 0``: smallest)
  modulus of each slice (``|x|^3`` underflowed at 1e-150: the norm was 0), with the weights
  ``(x / n) (|x| / n)^(p-2)``;
* compute in units of a power of two near the input where a composition cannot be ordered
  (``lstsq`` solves with ``a / c`` and ``b / d``, then scales ``x`` by ``d / c``:
  ``pinv(a) b``'s second derivative passes through ``|a|^-3``; ``polydiv`` divides ``u / d``
  by ``v / c``, its ``1 / v[0]`` differentiated twice passing through ``v[0]^-3``;
  ``corrcoef`` and ``cond``, scale invariant, take their inputs in such units), or where
  LAPACK's own result under- or overflows (``solve``, beyond ``max |a|`` or ``max |b|`` of
  2^+-500: NumPy's LU of a system at 2^-1021 was wrong in the first digit, at 2^1021 inf).

Scaling by a power of two is exact, and the power is a constant for every derivative. (A
second derivative at the very ends of the range cannot be kept in range this way: it
multiplies two tangents of the input's scale before the factor that brings the product
back.) tests/test_rules_at_special_points.py sweeps every differentiable op of the
linear-algebra modules and every op of kind ``LINALG`` (``corrcoef``, ``cond``, the FFTs,
the polynomials ...), and every elementwise op, wherever it is homogeneous, at its sample
scaled by 2^+-500 and to the smallest normal and largest finite magnitudes, against the
scaled derivatives at the sample. An op that cannot be right there declares
``notes["special_points"]`` with the reason, which the sweep reads (no linear-algebra op
does).
"""

from __future__ import annotations

import builtins
import math
from collections import namedtuple

from ..backend import NUMPY
from ..dispatch import apply
from .batching import is_batched, logical_ndim, values_unknown
from .contractions import _batch_pair, _cj, _eye
from .reductions import inverse_scale_along
from . import series
from .registry import (LINALG, Domain, defop, sample_numpy)

__all__ = ["LinAlgError", "SlogdetResult", "LstsqResult"]

# NumPy's LinAlgError (a ValueError): raised for singular or non-positive-definite input, as
# NumPy does, so `except np.linalg.LinAlgError` keeps working.
LinAlgError = NUMPY.linalg.LinAlgError

SlogdetResult = namedtuple("SlogdetResult", ["sign", "logabsdet"])
LstsqResult = namedtuple("LstsqResult", ["solution", "residuals", "rank", "singular_values"])

ANY = Domain((-2.0, 2.0), complex=True)
_bmax = builtins.max
_INF = math.inf


_np = sample_numpy  # samplers only, never a formula


# ----------------------------------------------------------------------------- helpers
def _mH(F, x):
    """Conjugate transpose of the last two axes."""
    t = F.matrix_transpose(x)
    return F.conj(t) if F.iscomplexobj(t) else t


def _herm(F, x):
    """The Hermitian part ``(x + x^H) / 2``."""
    return (x + _mH(F, x)) / 2


def _scalar_mat(F, c):
    """A batch of scalars ``c`` (shape ``s``) as shape ``s + (1, 1)``, to scale matrices."""
    return F.reshape(c, tuple(c.shape) + (1, 1))


def _identity(F, n, like):
    return _eye(F, n, n, 0, like)


def _trace_last(F, x):
    return F.trace(x, axis1=-2, axis2=-1)


def _shape(a):
    return tuple(getattr(a, "shape", ()))


def _check_matrix(name, a, arg="a"):
    if len(_shape(a)) < 2:
        raise LinAlgError(f"{name}: `{arg}` must be a matrix or a stack of matrices "
                          f"(..., m, n), got shape {_shape(a)}")


def _check_square(name, a, arg="a"):
    s = _shape(a)
    if len(s) < 2 or s[-1] != s[-2]:
        raise LinAlgError(f"{name}: `{arg}` must be a square matrix or a stack of square "
                          f"matrices (..., n, n), got shape {s}")


def _check_batch(name, sa, sb):
    """The batch dimensions (all but the last two) of two operands broadcast."""
    ba, bb = sa[:-2], sb[:-2]
    for x, y in zip(reversed(ba), reversed(bb)):
        if x != y and x != 1 and y != 1:
            raise ValueError(f"{name}: the batch dimensions {ba} and {bb} of the operands do "
                             "not broadcast")


def _singular(name, what, consequence):
    return LinAlgError(f"{name}: {what} is singular (its LU factorization met an exactly zero "
                       f"pivot); {consequence}")


def _vec_solve(F, a, v):
    """``a^-1 v`` for a stack of vectors ``v`` (..., n), whatever its number of dimensions."""
    return F.squeeze(F.linalg.solve(a, F.expand_dims(v, -1)), axis=-1)


def _matvec(F, a, v):
    return F.squeeze(F.matmul(a, F.expand_dims(v, -1)), axis=-1)


def _outer_last(F, u, v):
    """``u v^T`` for stacks of vectors: (..., n), (..., m) -> (..., n, m)."""
    return F.expand_dims(u, -1) * F.expand_dims(v, -2)


def _batch_unary(op, min_ndim=2):
    """The batching rule of an op on a stack of matrices: the op itself on the physical array
    (the batch dimension is one more leading dimension)."""
    name = op.qualname

    def rule(F, batched, a, *extra, **params):
        if a.ndim - 1 < min_ndim:
            raise LinAlgError(f"{name}: the input must be a matrix or a stack of matrices, got "
                              f"shape {tuple(a.shape[1:])}")
        return op.of(F)(a, *extra, **params)
    op.defbatch(rule)


# ----------------------------------------------------------------------------- samplers
def _batch_shape(d, max_dims=1):
    return tuple(d.shape(max_dims=max_dims, max_side=2))


def _sample_square(d):
    n = d.integers(1, 3)
    return (d.matrix(_batch_shape(d) + (n, n)),), {}


def _sample_solve(d):
    n = d.integers(1, 3)
    ba, bb = d.shapes(2, max_dims=2, max_side=2)
    a = d.matrix(tuple(ba) + (n, n))
    if d.boolean():
        return (a, d.array((n,))), {}
    return (a, d.array(tuple(bb) + (n, d.integers(1, 2)))), {}


# ----------------------------------------------------------------------------- solve
def _solve_vjp_b(F, g, out, a, b):
    # x = a^-1 b  =>  gb = a^-H g (a vector b: a stack of vector cotangents)
    if b.ndim == 1:
        return _vec_solve(F, _mH(F, a), g)
    return F.linalg.solve(_mH(F, a), g)


def _solve_vjp_a(F, g, out, a, b):
    # d x = -a^-1 da x  =>  ga = -gb x^H
    if b.ndim == 1:
        return -_outer_last(F, _vec_solve(F, _mH(F, a), g), _cj(F, out))
    return -F.matmul(F.linalg.solve(_mH(F, a), g), _mH(F, out))


def _solve_jvp(F, tangents, out, a, b):
    ta, tb = tangents
    vec = b.ndim == 1
    rhs = None
    if ta is not None:
        rhs = -(_matvec(F, ta, out) if vec else F.matmul(ta, out))
    if tb is not None:
        rhs = tb if rhs is None else rhs + tb
    return _vec_solve(F, a, rhs) if vec else F.linalg.solve(a, rhs)


@defop(kind=LINALG, nin=2, domain=ANY, sample=_sample_solve, namespace="linalg")
def solve(B, a, b):
    """Solve the linear system ``a @ x = b`` for ``x``.

    ``b`` is a vector when it is 1-D, and a matrix (or a stack of matrices) otherwise: the
    rule of NumPy 2 and the array API. So a stack of right-hand-side vectors is written
    ``b[..., None]`` (and the result's last axis removed), never inferred from shapes.

    Parameters
    ----------
    a : Tensor, shape (..., n, n)
        Square, non-singular coefficient matrices.
    b : Tensor, shape (n,) or (..., n, k)
        Right-hand sides; the batch dimensions of ``a`` and ``b`` broadcast.

    Returns
    -------
    x : Tensor, shape (..., n) or (..., n, k)

    Raises
    ------
    LinAlgError
        ``a`` is not square, or is singular (the LU factorization met an exactly zero
        pivot). For singular or rank-deficient systems use :func:`lstsq` or :func:`pinv`.

    Notes
    -----
    Differentiable in ``a`` and ``b``: ``gb = solve(a^H, g)`` and ``ga = -gb x^H``; no inverse
    is formed.

    Examples
    --------
    >>> import ndgrad
    >>> a = ndgrad.tensor([[3.0, 1.0], [1.0, 2.0]])
    >>> ndgrad.linalg.solve(a, ndgrad.tensor([9.0, 8.0]))
    tensor([2., 3.])
    >>> ndgrad.linalg.solve(a, ndgrad.ones(4, 2, 3)).shape
    (4, 2, 3)
    """
    _check_square("solve", a)
    n = a.shape[-1]
    if b.ndim == 0:
        raise ValueError("solve: `b` must be a vector (n,) or a stack of matrices (..., n, k), "
                         "got a 0-d array")
    if b.ndim == 1:
        if b.shape[0] != n:
            raise ValueError(f"solve: `a` has {n} rows but the vector `b` has {b.shape[0]} "
                             "entries; they must match")
    else:
        if b.shape[-2] != n:
            raise ValueError(f"solve: `a` has {n} rows but `b` (shape {b.shape}, a stack of "
                             f"matrices) has {b.shape[-2]}; for a stack of vectors pass "
                             "b[..., None]")
        _check_batch("solve", a.shape, b.shape)
    try:
        return _solve_in_range(B, a, b)
    except LinAlgError as exc:
        raise _singular("solve", "the matrix `a`", "the system has no unique solution: use "
                        "ndgrad.linalg.lstsq or pinv for singular systems") from exc


_SOLVE_RANGE = (2.0 ** -500, 2.0 ** 500)


def _within(B, x, axes):
    """Whether ``max |x|`` over ``axes`` lies within 2^+-500 for every slice (not looked at
    where the backend does not read values: False)."""
    if not B.reads_values:
        return False
    lo, hi = _SOLVE_RANGE
    if x.ndim <= 2:  # one matrix or vector: Python numbers (real: no |x| made)
        m = _bmax(float(x.max()), -float(x.min())) if x.dtype.kind == "f" else \
            float(B.abs(x).max())
        return lo < m < hi
    m = B.max(B.abs(x), axis=axes)
    return bool(B.all((m > lo) & (m < hi)))


def _solve_in_range(B, a, b):
    """NumPy's solve; where ``max |a|`` of a matrix or ``max |b|`` lies beyond 2^+-500, of ``a / c``
    and ``b / d`` for powers of two ``c``, ``d`` near them, the solution scaled by ``d / c`` (always
    where the backend does not read values). LAPACK's LU (getrf/getrs) is exact under scaling by
    powers of two but for under- and overflow: at ``|a|`` of 2^-1021 its solution was wrong in the
    first digit (complex; real: 64 of 300 random 3 x 3 systems), at 2^1021 inf, and a right-hand
    side near 2^1021 overflowed in the substitutions (the gradient in b of a system at 2^-1021).
    Note [Linear algebra at extreme scales]. The look at ``max |a|`` and ``max |b|`` costs 15 us of
    a 100 x 100 solve's 100 (b 100 x 3; forward and backward, three solves, 390 -> 430 us)."""
    if not a.size or not b.size or _within(B, a, (-2, -1)) and \
            _within(B, b, -1 if b.ndim == 1 else (-2, -1)):
        return B.linalg.solve(a, b)
    inv = inverse_scale_along(B, a, (-2, -1))  # (..., 1, 1)
    inv_b = inverse_scale_along(B, b, -1 if b.ndim == 1 else (-2, -1))
    x = B.linalg.solve(a * inv, b * inv_b)
    if b.ndim > 1:
        return x * (inv / inv_b)
    return x * (inv[..., 0] / inv_b)  # (a vector b: (n,) or, for a stack, (..., n))


solve.defvjp(_solve_vjp_a, _solve_vjp_b, saves=(("out", "a", "b.shape"), ("a", "b.shape")))
solve.defjvp(_solve_jvp)
solve.deftaylor(series.RULES["linalg.solve"])


def _solve_batch(F, batched, a, b):
    ba, bb = batched
    if logical_ndim(a, ba) < 2:
        raise LinAlgError("solve: `a` must be a square matrix or a stack of them")
    vec = logical_ndim(b, bb) == 1
    if vec:  # one level down b is a vector: as an (n, 1) matrix per batch element
        b = F.expand_dims(b, -1)
    a2, b2 = _batch_pair(F, batched, a, b)
    x = F.linalg.solve(a2, b2)
    return F.squeeze(x, axis=-1) if vec else x


solve.defbatch(_solve_batch)


# ----------------------------------------------------------------------------- inv
@defop(kind=LINALG, domain=ANY, sample=_sample_square, namespace="linalg")
def inv(B, a):
    """The inverse of a square matrix (or of each matrix of a stack).

    Parameters
    ----------
    a : Tensor, shape (..., n, n)
        Non-singular.

    Raises
    ------
    LinAlgError
        ``a`` is not square or is singular. To solve ``a @ x = b`` prefer :func:`solve`,
        which is faster and more accurate than ``inv(a) @ b``.

    Notes
    -----
    Differentiable: ``ga = -inv(a)^H g inv(a)^H``.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.linalg.inv(ndgrad.tensor([[2.0, 0.0], [0.0, 4.0]]))
    tensor([[0.5 , 0.  ],
            [0.  , 0.25]])
    """
    _check_square("inv", a)
    try:
        return B.linalg.inv(a)
    except LinAlgError as exc:
        raise _singular("inv", "the matrix", "it has no inverse (ndgrad.linalg.pinv gives the "
                        "pseudo-inverse)") from exc


# d inv = -inv da inv
inv.defvjp(lambda F, g, out, a: -F.matmul(_mH(F, out), F.matmul(g, _mH(F, out))))
inv.defjvp(lambda F, tangents, out, a: -F.matmul(out, F.matmul(tangents[0], out)))
inv.deftaylor(series.RULES["linalg.inv"])
_batch_unary(inv)


# ----------------------------------------------------------------------------- det
def _adjugate_t_svd(F, a):
    """The cofactor matrix ``adj(a)^T`` from the SVD ``a = U diag(s) V^H``:
    ``adj(a) = det(U) det(V^H) V diag(p) U^H`` with ``p_i = prod_{j != i} s_j``, which is
    defined (and continuous) at singular ``a`` too."""
    u, s, vh = F.linalg.svd(a, full_matrices=False)
    n = s.shape[-1]
    off = F.equal(_identity(F, n, s), 0)  # True off the diagonal
    others = F.prod(F.where(off, F.expand_dims(s, -2), F.ones_like(F.expand_dims(s, -2))),
                    axis=-1)
    phase = F.linalg.det(u) * F.linalg.det(vh)
    adj = F.matmul(_mH(F, vh) * F.expand_dims(others, -2), _mH(F, u))
    return _scalar_mat(F, phase) * F.matrix_transpose(adj)


def _cofactor(F, a, det):
    """``C = det(a) a^-T``, the matrix of ``d det(a) = sum(C * da)``: one solve against
    ``det * I``; where some ``det`` is exactly 0 (a singular matrix, where the solve fails)
    the SVD formula of :func:`_adjugate_t_svd` instead. Inside vmap, where the values cannot
    be read, the solve is used (a singular batch element then raises LinAlgError). In a
    compiled function's trace, where they are not known yet, one step computes this on the
    arrays when the program runs (``linalg._det_cofactor``: Note [A choice made when the
    program runs])."""
    if is_batched(det):
        return _cofactor_by_solve(F, a, det)
    if values_unknown(det) or values_unknown(a):
        return F.linalg._det_cofactor(a, det)
    if bool(F.any(F.equal(det, 0))):
        return _adjugate_t_svd(F, a)
    return _cofactor_by_solve(F, a, det)


def _cofactor_by_solve(F, a, det):
    n = a.shape[-1]
    return F.linalg.solve(F.matrix_transpose(a),
                          _scalar_mat(F, det) * _identity(F, n, a))


# Note [A choice made when the program runs]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# det's rules take one of two formulas by the values: the cofactor matrix by a solve, or, at
# a singular matrix (where the solve fails), by the SVD. A compiled function's trace does not
# know the values (functional/compiler.py), and a program is straight-line code; so the
# choice is an op of its own, ``linalg._det_cofactor(a, det)``, whose forward is that choice
# on the arrays (``_cofactor`` in the backend's raw namespace): eager's formulas, bit for bit,
# taken per call. Its rules differentiate the solve ``a^T C = det I`` as eager does (``a^T dC
# = d det I - da^T C``): a derivative of det's derivative (``compile(hessian(det))``) at a
# singular matrix raises LinAlgError when the program runs, where eager differentiates the
# SVD formula.
# Eager code never records the op (it reads the values); vmap takes the solve.
def _sample_det_cofactor(d):
    (a,), _ = _sample_square(d)
    import numpy as np  # a test-time sampler, not a formula
    return (a, np.asarray(np.linalg.det(a), dtype=a.dtype)), {}


@defop(kind=LINALG, nin=2, domain=ANY, sample=_sample_det_cofactor, namespace="linalg")
def _det_cofactor(B, a, det):
    """The cofactor matrix ``det * a^-T`` of a square ``a`` (or of each matrix of a stack)
    given its determinant ``det``: the adjugate's transpose from the SVD where a ``det`` is 0
    (Note [A choice made when the program runs])."""
    if tuple(a.shape[:-2]) != tuple(det.shape):  # (a batch of one given as the other's)
        a, _ = B.broadcast_arrays(a, det[..., None, None])
        det, _ = B.broadcast_arrays(det, a[..., 0, 0])
    return _cofactor(B.F, a, det)


def _det_cofactor_jvp(F, tangents, out, a, det):
    # C solves a^T C = det I, so a^T dC = d det I - da^T C (as eager differentiates the solve)
    ta, td = tangents
    rhs = None
    if td is not None:
        rhs = _scalar_mat(F, td) * _identity(F, a.shape[-1], a)
    if ta is not None:
        t = -F.matmul(F.matrix_transpose(ta), out)
        rhs = t if rhs is None else rhs + t
    return F.linalg.solve(F.matrix_transpose(a), rhs)


def _det_cofactor_pullback(F, g, a):
    """The cotangent of the right-hand side ``det I - da^T C`` of the solve ``a^T C = det
    I`` at cotangent ``g`` of C: ``solve((a^T)^H, g)``, ``(a^T)^H`` being ``conj(a)``."""
    return F.linalg.solve(_cj(F, a), g)


_det_cofactor.defvjp(
    lambda F, g, out, a, det: -F.matmul(_cj(F, out), F.matrix_transpose(
        _det_cofactor_pullback(F, g, a))),
    lambda F, g, out, a, det: _trace_last(F, _det_cofactor_pullback(F, g, a)))
_det_cofactor.defjvp(_det_cofactor_jvp)
_det_cofactor.defbatch(lambda F, batched, a, det: _det_cofactor.of(F)(a, det))


@defop(kind=LINALG, domain=ANY, sample=_sample_square, namespace="linalg")
def det(B, a):
    """The determinant of a square matrix (or of each matrix of a stack).

    Parameters
    ----------
    a : Tensor, shape (..., n, n)

    Returns
    -------
    Tensor, shape (...)

    Notes
    -----
    Differentiable: ``ga = g * conj(det(a)) * a^-H``, computed with one solve (no inverse).
    At a singular matrix, where ``det(a) == 0``, the gradient is still defined (``det`` is a
    polynomial): it is ``g * conj(C)`` with ``C = adj(a)^T`` the cofactor matrix, computed
    from the SVD (the formula PyTorch uses for singular input), finite and exact (zero when
    the rank is below ``n - 1``). Inside ``vmap`` the solve is
    always used, so a singular matrix there raises :class:`LinAlgError`. In a compiled
    function the choice is made when the program runs (``compile(grad(det))`` is exact at
    singular matrices too); its second derivative there takes the solve. For products of
    many factors or ill-scaled matrices, where ``det`` over- or underflows, use
    :func:`slogdet`.

    Examples
    --------
    >>> import ndgrad
    >>> a = ndgrad.tensor([[2.0, 1.0], [1.0, 3.0]], requires_grad=True)
    >>> d = ndgrad.linalg.det(a)
    >>> d
    tensor(5., grad_fn=<LinalgDetBackward0>)
    >>> d.backward()
    >>> a.grad
    tensor([[ 3., -1.],
            [-1.,  2.]])
    """
    _check_square("det", a)
    return B.linalg.det(a)


det.defvjp(lambda F, g, out, a: _scalar_mat(F, g) * _cj(F, _cofactor(F, a, out)))
det.defjvp(lambda F, tangents, out, a: F.sum(_cofactor(F, a, out) * tangents[0],
                                             axis=(-2, -1)))
_batch_unary(det)


# ----------------------------------------------------------------------------- slogdet
def _inv_h(F, a, coef):
    """``coef * a^-H`` for a batch of scalars ``coef``, by one solve."""
    n = a.shape[-1]
    return F.linalg.solve(_mH(F, a), _scalar_mat(F, coef) * _identity(F, n, a))


def _slogdet_vjp(F, g, out, a):
    gs, gl = g
    sign = out[0]
    if F.iscomplexobj(sign):
        # with t = tr(a^-1 da): d logabsdet = Re t and d sign = i sign Im t; both pull back
        # through a^-H, with the coefficient gl - i Im(conj(gs) sign)
        coef = gl - F.imag(_cj(F, gs) * sign) * 1j  # (array first: stays an array)
    else:
        coef = gl  # the sign is locally constant
    return _inv_h(F, a, coef)


def _slogdet_jvp(F, tangents, out, a):
    sign = out[0]
    t = _trace_last(F, F.linalg.solve(a, tangents[0]))  # d log det = tr(a^-1 da)
    if F.iscomplexobj(sign):
        return sign * (F.imag(t) * 1j), F.real(t)
    return F.zeros_like(sign), t


@defop(kind=LINALG, nout=2, domain=ANY, sample=_sample_square, namespace="linalg")
def slogdet(B, a):
    """Sign and natural logarithm of the absolute value of the determinant.

    ``det(a) == sign * exp(logabsdet)``, computed without forming ``det(a)``, so it neither
    over- nor underflows for large or ill-scaled matrices.

    Parameters
    ----------
    a : Tensor, shape (..., n, n)

    Returns
    -------
    SlogdetResult
        A named tuple ``(sign, logabsdet)`` of shape ``(...)`` each: for real ``a`` the sign
        is -1, 0 or 1; for complex ``a`` it is the complex number ``det / |det|`` of modulus
        1. At a singular matrix ``sign`` is 0 and ``logabsdet`` is ``-inf``.

    Notes
    -----
    ``logabsdet`` is differentiable: its gradient is ``g * a^-H`` (one solve; ``det`` itself
    is never formed, so the gradient of an ill-scaled matrix such as ``1e-200 * a`` is
    exact). A real sign is piecewise constant, its gradient is zero; a complex sign
    ``det / |det|`` has a derivative, included as PyTorch does. Neither is defined at a
    singular matrix (the solve raises :class:`LinAlgError`).

    Examples
    --------
    >>> import ndgrad
    >>> sign, logabsdet = ndgrad.linalg.slogdet(ndgrad.tensor([[0.0, 2.0], [3.0, 0.0]]))
    >>> sign
    tensor(-1.)
    >>> ndgrad.exp(logabsdet)
    tensor(6.)
    """
    _check_square("slogdet", a)
    sign, logabsdet = B.linalg.slogdet(a)
    return SlogdetResult(sign, logabsdet)


slogdet.defvjp(_slogdet_vjp)
slogdet.defjvp(_slogdet_jvp)
_batch_unary(slogdet)


def _slogdet_public(a):
    return SlogdetResult(*apply(slogdet, a))


slogdet.defpublic(_slogdet_public)


# ----------------------------------------------------------------------------- cholesky
def _sample_cholesky(d):
    n = d.integers(1, 3)
    kw = {"upper": d.boolean()} if d.boolean() else {}
    return (d.spd_matrix(_batch_shape(d) + (n, n)),), kw


def _cholesky_vjp(F, g, out, a, upper=False):
    low = _mH(F, out) if upper else out
    gl = _mH(F, g) if upper else g
    # a = L L^H, dL = L Phi(L^-1 da L^-H) with Phi = strict lower triangle + half diagonal.
    # Its adjoint (over Hermitian da): ga = L^-H P L^-1, P the Hermitian matrix with
    # P = M / 2 below the diagonal and Re(diag M) / 2 on it, M = L^H gL.
    m = F.matmul(_mH(F, low), gl)
    strict = F.tril(m, k=-1)
    n = m.shape[-1]
    p = (strict + _mH(F, strict) + F.real(m) * _identity(F, n, F.real(m))) / 2
    w = F.linalg.solve_triangular(_mH(F, low), p, upper=True)              # L^-H P
    ga = F.linalg.solve_triangular(low, w, upper=False, left=False)       # (L^-H P) L^-1
    return _herm(F, ga)


def _cholesky_jvp(F, tangents, out, a, upper=False):
    low = _mH(F, out) if upper else out
    da = _herm(F, tangents[0])
    y = F.linalg.solve_triangular(low, da, upper=False)                   # L^-1 da
    x = F.linalg.solve_triangular(_mH(F, low), y, upper=True, left=False)  # L^-1 da L^-H
    n = x.shape[-1]
    phi = F.tril(x, k=-1) + F.real(x) * _identity(F, n, F.real(x)) / 2
    dl = F.matmul(low, phi)
    return _mH(F, dl) if upper else dl


@defop(kind=LINALG, domain=ANY, sample=_sample_cholesky, namespace="linalg")
def cholesky(B, a, upper=False):
    """Cholesky factor of a Hermitian (symmetric) positive-definite matrix.

    ``a = L @ L^H`` with ``L`` lower triangular with a positive real diagonal
    (``upper=False``), or ``a = U^H @ U`` with ``U = L^H`` upper triangular (``upper=True``).

    Parameters
    ----------
    a : Tensor, shape (..., n, n)
        Hermitian positive definite. Only its Hermitian part ``(a + a^H) / 2`` is used
        (identical for Hermitian ``a``).
    upper : bool
        Return the upper-triangular factor ``U`` instead of ``L``.

    Raises
    ------
    LinAlgError
        ``a`` is not square, or its Hermitian part is not positive definite.

    Notes
    -----
    Differentiable: the gradient is the standard one (Murray, 2016) computed with two
    triangular solves. It is Hermitian, as PyTorch's, and, because the function acts on
    the Hermitian part of ``a`` (as JAX's ``symmetrize_input=True``), it is the exact
    derivative for every entry, agreeing with finite differences.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.linalg.cholesky(ndgrad.tensor([[4.0, 2.0], [2.0, 5.0]]))
    tensor([[2., 0.],
            [1., 2.]])
    >>> ndgrad.linalg.cholesky(ndgrad.tensor([[4.0, 2.0], [2.0, 5.0]]), upper=True)
    tensor([[2., 1.],
            [0., 2.]])
    """
    _check_square("cholesky", a)
    h = (a + B.conj(B.swapaxes(a, -1, -2))) / 2 if a.dtype.kind == "c" else \
        (a + B.swapaxes(a, -1, -2)) / 2
    try:
        return B.linalg.cholesky(h, upper=upper)
    except LinAlgError as exc:
        raise LinAlgError("cholesky: the matrix is not positive definite (its Hermitian part "
                          "has an eigenvalue <= 0); check that it is symmetric/Hermitian, or "
                          "add a small multiple of the identity") from exc


cholesky.defvjp(_cholesky_vjp)
cholesky.defjvp(_cholesky_jvp)
_batch_unary(cholesky)


# ----------------------------------------------------------------------------- solve_triangular
def _triangle(F, x, upper, unitriangular):
    """The entries of a triangular operand that are read (Note [Triangular inputs])."""
    if upper:
        return F.triu(x, k=1 if unitriangular else 0)
    return F.tril(x, k=-1 if unitriangular else 0)


# Note [Small triangular solves]
# ------------------------------
# SciPy's solve_triangular costs ~0.2 ms a call in Python overhead (its batching layer loops
# over the stack in Python), 20x NumPy's LU solve of a 3 x 3 system. Small triangular systems
# (n < _TRSM_MIN, every batch size) are therefore solved by NumPy's batched LU solve of the
# triangle (the ignored entries masked out): backward stable as well, and O(n^3) is no cost
# at that size. Larger ones go to SciPy (LAPACK's O(n^2 k) trtrs).
_TRSM_MIN = 48


def _tri_solve(B, name, a, b, upper, unit, trans=0):
    """``t^-1 b`` (``trans=1``: ``t^-T b``, ``2``: ``t^-H b``) with ``t`` the triangle of ``a``
    that is read (unit diagonal when ``unit``), batched over leading dimensions."""
    n = a.shape[-1]
    if not unit and n and not B.all(B.diagonal(a, axis1=-2, axis2=-1) != 0):
        raise LinAlgError(f"{name}: the triangular matrix is singular (a zero on its "
                          "diagonal)")
    if n >= _TRSM_MIN:
        return B.scipy_linalg.solve_triangular(a, b, trans=trans, lower=not upper,
                                               unit_diagonal=unit, check_finite=False)
    t = B.triu(a) if upper else B.tril(a)
    if unit:
        t = B.where(B.eye(n, dtype=bool), B.ones((), dtype=t.dtype), t)
    if trans:
        t = B.swapaxes(t, -1, -2)
        if trans == 2 and t.dtype.kind == "c":
            t = B.conj(t)
    return B.linalg.solve(t, b)


def _st_vjp_b(F, g, out, a, b, *, upper, left=True, unitriangular=False):
    # left: x = a^-1 b, gb = a^-H g; right: x = b a^-1, gb = g a^-H
    return F.linalg.solve_triangular(_mH(F, a), g, upper=not upper, left=left,
                                     unitriangular=unitriangular)


def _st_vjp_a(F, g, out, a, b, *, upper, left=True, unitriangular=False):
    gb = _st_vjp_b(F, g, out, a, b, upper=upper, left=left, unitriangular=unitriangular)
    ga = -F.matmul(gb, _mH(F, out)) if left else -F.matmul(_mH(F, out), gb)
    return _triangle(F, ga, upper, unitriangular)


def _st_jvp(F, tangents, out, a, b, *, upper, left=True, unitriangular=False):
    ta, tb = tangents
    rhs = None
    if ta is not None:
        ta = _triangle(F, ta, upper, unitriangular)
        rhs = -(F.matmul(ta, out) if left else F.matmul(out, ta))
    if tb is not None:
        rhs = tb if rhs is None else rhs + tb
    return F.linalg.solve_triangular(a, rhs, upper=upper, left=left,
                                     unitriangular=unitriangular)


def _triangular_sample_matrix(d, shape, upper):
    """A triangular matrix with diagonal entries of modulus in [1, 2] (well conditioned) and
    junk in the other triangle, which the function must ignore."""
    np = _np()
    m = d.array(shape, -0.5, 0.5)
    n = shape[-1]
    diag = d.array(tuple(shape[:-1]), 1.0, 2.0, dtype=np.float64)
    signs = np.where(d.bool_array(tuple(shape[:-1])), 1.0, -1.0)
    t = np.triu(m, 1) if upper else np.tril(m, -1)
    junk = np.tril(m, -1) if upper else np.triu(m, 1)
    eye = np.eye(n, dtype=bool)
    return np.where(eye, (diag * signs)[..., None, :], t + 3.0 * junk).astype(m.dtype)


def _sample_solve_triangular(d):
    n, k = d.integers(1, 3), d.integers(1, 2)
    upper, left, unit = d.boolean(), d.boolean(), d.boolean()
    ba, bb = d.shapes(2, max_dims=2, max_side=2)
    a = _triangular_sample_matrix(d, tuple(ba) + (n, n), upper)
    b = d.array(tuple(bb) + ((n, k) if left else (k, n)))
    kw = {"upper": upper}
    if not left or d.boolean():
        kw["left"] = left
    if unit or d.boolean():
        kw["unitriangular"] = unit
    return (a, b), kw


@defop(kind=LINALG, nin=2, domain=ANY, sample=_sample_solve_triangular, namespace="linalg",
       notes={"signature": (
           "PyTorch's torch.linalg.solve_triangular keywords, ``upper`` (required), ``left`` "
           "and ``unitriangular``: a and b bind as SciPy's, SciPy's trans, lower, "
           "unit_diagonal are not taken (by position or name: a TypeError)")})
def solve_triangular(B, a, b, *, upper, left=True, unitriangular=False):
    """Solve a triangular system: ``a @ x = b`` (``left=True``) or ``x @ a = b``.

    PyTorch's ``torch.linalg.solve_triangular`` signature, batched. Large systems go to
    LAPACK's triangular solve (SciPy's ``solve_triangular``), small ones to a batched LU
    solve of the triangle, which is much faster at that size.

    Parameters
    ----------
    a : Tensor, shape (..., n, n)
        Triangular; only the triangle named by ``upper`` is read (and not its diagonal when
        ``unitriangular``), the other entries are ignored.
    b : Tensor, shape (..., n, k) (``left=True``) or (..., k, n) (``left=False``)
        Right-hand sides, a matrix or a stack of matrices (for a vector use
        ``b[..., None]``); the batch dimensions broadcast with ``a``'s.
    upper : bool, keyword-only, required
        ``a`` is upper (True) or lower (False) triangular.
    left : bool
        Solve ``a @ x = b`` (True) or ``x @ a = b`` (False).
    unitriangular : bool
        Take the diagonal of ``a`` to be all ones (it is not read).

    Raises
    ------
    LinAlgError
        ``a`` is not square, or has a zero on its diagonal.

    Notes
    -----
    Differentiable in ``a`` and ``b``. The gradient with respect to ``a`` is zero outside the
    triangle that is read (Note [Triangular inputs]), as in PyTorch.

    Examples
    --------
    >>> import ndgrad
    >>> a = ndgrad.tensor([[2.0, 0.0], [1.0, 1.0]])
    >>> ndgrad.linalg.solve_triangular(a, ndgrad.tensor([[4.0], [3.0]]), upper=False)
    tensor([[2.],
            [1.]])
    >>> ndgrad.linalg.solve_triangular(a, ndgrad.tensor([[4.0, 2.0]]), upper=False, left=False)
    tensor([[1., 2.]])
    """
    _check_square("solve_triangular", a)
    n = a.shape[-1]
    if b.ndim < 2:
        raise ValueError(f"solve_triangular: `b` must be a matrix or a stack of matrices, got "
                         f"shape {b.shape}; for a vector pass b[..., None] (or use left=False "
                         "with b[..., None, :])")
    if b.shape[-2 if left else -1] != n:
        side = "rows" if left else "columns"
        raise ValueError(f"solve_triangular: `a` is {n} x {n} but `b` (shape {b.shape}) has "
                         f"{b.shape[-2 if left else -1]} {side}; with left={left} they must "
                         "match")
    _check_batch("solve_triangular", a.shape, b.shape)
    if left:
        return _tri_solve(B, "solve_triangular", a, b, upper, unitriangular)
    # x a = b  <=>  a^T x^T = b^T
    xt = _tri_solve(B, "solve_triangular", a, B.swapaxes(b, -1, -2), upper, unitriangular,
                    trans=1)
    return B.swapaxes(xt, -1, -2)


solve_triangular.defvjp(_st_vjp_a, _st_vjp_b)
solve_triangular.defjvp(_st_jvp)


def _st_batch(F, batched, a, b, **params):
    a2, b2 = _batch_pair(F, batched, a, b)
    return F.linalg.solve_triangular(a2, b2, **params)


solve_triangular.defbatch(_st_batch)


# ----------------------------------------------------------------------------- cholesky_solve
def _sample_cholesky_solve(d):
    np = _np()
    n, k = d.integers(1, 3), d.integers(1, 2)
    bb, bl = d.shapes(2, max_dims=2, max_side=2)
    upper = d.boolean()
    low = np.linalg.cholesky(d.spd_matrix(tuple(bl) + (n, n)))
    junk = np.triu(d.array(tuple(bl) + (n, n)), 1)  # ignored entries
    fac = np.conj(np.swapaxes(low, -1, -2)) + np.swapaxes(junk, -1, -2) if upper else \
        low + junk
    kw = {"upper": upper} if upper or d.boolean() else {}
    return (d.array(tuple(bb) + (n, k)), fac), kw


def _cs_vjp_b(F, g, out, b, L, upper=False):
    return F.linalg.cholesky_solve(g, L, upper=upper)


def _cs_vjp_l(F, g, out, b, L, upper=False):
    # a = L L^H, ga = -gb x^H with gb = a^-H g = a^-1 g (a Hermitian): <ga, dL L^H + L dL^H> =
    # <(ga + ga^H) L, dL>, projected on L's triangle. In a well-scaled order (Note [Linear
    # algebra at extreme scales]): x^H L and gb^H L first (gb x^H, of |g| |L|^-6 against the
    # result's |g| |L|^-5, underflowed at |L| = 1e150: the gradient was 0)
    gb = F.linalg.cholesky_solve(g, L, upper=upper)
    xh, gbh = _mH(F, out), _mH(F, gb)
    if upper:  # a = U^H U: gU = -triu(U (ga + ga^H)) = -triu((U gb) x^H + (U x) gb^H)
        u = F.triu(L)
        return -F.triu(F.matmul(F.matmul(u, gb), xh) + F.matmul(F.matmul(u, out), gbh))
    lo = F.tril(L)  # gL = -tril(gb (x^H L) + x (gb^H L))
    return -F.tril(F.matmul(gb, F.matmul(xh, lo)) + F.matmul(out, F.matmul(gbh, lo)))


def _cs_jvp(F, tangents, out, b, L, upper=False):
    # d x = a^-1 (db - da x), da = dL L^H + L dL^H (upper: dU^H U + U^H dU), applied to x
    # factor by factor (L^H x first: well-scaled, as _cs_vjp_l)
    tb, tl = tangents
    rhs = tb
    if tl is not None:
        if upper:
            u, du = F.triu(L), F.triu(tl)
            t = F.matmul(_mH(F, du), F.matmul(u, out)) + F.matmul(_mH(F, u), F.matmul(du, out))
        else:
            lo, dl = F.tril(L), F.tril(tl)
            t = F.matmul(dl, F.matmul(_mH(F, lo), out)) + F.matmul(lo, F.matmul(_mH(F, dl), out))
        rhs = -t if rhs is None else rhs - t
    return F.linalg.cholesky_solve(rhs, L, upper=upper)


@defop(kind=LINALG, nin=2, domain=ANY, sample=_sample_cholesky_solve, namespace="linalg")
def cholesky_solve(B, b, L, upper=False):
    """Solve ``a @ x = b`` given the Cholesky factor of ``a``.

    PyTorch's ``torch.cholesky_solve`` argument order: the right-hand side ``b`` comes
    first, the factor second. With ``upper=False``, ``a = L @ L^H``; with ``upper=True``,
    ``a = U^H @ U`` (``L`` then holds ``U``). Two triangular solves.

    Parameters
    ----------
    b : Tensor, shape (..., n, k)
        Right-hand sides, a matrix or a stack of matrices (for a vector use ``b[..., None]``).
    L : Tensor, shape (..., n, n)
        The triangular factor, as :func:`cholesky` returns it; only its lower (``upper``:
        upper) triangle is read. Batch dimensions broadcast with ``b``'s.
    upper : bool
        ``L`` is the upper factor ``U``.

    Notes
    -----
    Differentiable in ``b`` and ``L``; the gradient with respect to ``L`` is zero outside the
    triangle that is read (Note [Triangular inputs]; PyTorch's is not projected).

    Examples
    --------
    >>> import ndgrad
    >>> L = ndgrad.linalg.cholesky(ndgrad.tensor([[4.0, 2.0], [2.0, 5.0]]))
    >>> ndgrad.linalg.cholesky_solve(ndgrad.tensor([[6.0], [7.0]]), L)
    tensor([[1.],
            [1.]])
    """
    if L.ndim < 2 or L.shape[-1] != L.shape[-2]:
        raise LinAlgError(f"cholesky_solve: the factor `L` must be a square matrix or a stack "
                          f"of them (..., n, n), got shape {L.shape}; note the argument order "
                          "is cholesky_solve(b, L), the right-hand side first (PyTorch's)")
    n = L.shape[-1]
    if b.ndim < 2:
        raise ValueError(f"cholesky_solve: `b` must be a matrix or a stack of matrices "
                         f"(..., n, k), got shape {b.shape}; for a vector pass b[..., None]. "
                         "Note the argument order: cholesky_solve(b, L)")
    if b.shape[-2] != n:
        raise ValueError(f"cholesky_solve: `L` is {n} x {n} but `b` (shape {b.shape}) has "
                         f"{b.shape[-2]} rows; they must match (the argument order is "
                         "cholesky_solve(b, L))")
    _check_batch("cholesky_solve", b.shape, L.shape)
    # lower: L y = b, L^H x = y; upper: U^H y = b, U x = y (trans=2: conjugate transpose)
    y = _tri_solve(B, "cholesky_solve", L, b, upper, False, trans=2 if upper else 0)
    return _tri_solve(B, "cholesky_solve", L, y, upper, False, trans=0 if upper else 2)


cholesky_solve.defvjp(_cs_vjp_b, _cs_vjp_l)
cholesky_solve.defjvp(_cs_jvp)


def _cs_batch(F, batched, b, L, upper=False):
    b2, l2 = _batch_pair(F, batched, b, L)
    return F.linalg.cholesky_solve(b2, l2, upper=upper)


cholesky_solve.defbatch(_cs_batch)


# ----------------------------------------------------------------------------- pinv
def _sample_pinv(d):
    np = _np()
    batch = _batch_shape(d, max_dims=1)
    if d.boolean():
        n = d.integers(1, 3)
        a = d.spd_matrix(batch + (n, n), 0.5, 2.5)
        a = a if d.boolean() else -a
        return (a,), {"hermitian": True}
    m, n = d.integers(1, 3), d.integers(1, 3)
    a = d.matrix(batch + (m, n))
    kw = {"rtol": float(d.choice([1e-12, 1e-8]))} if d.boolean() else {}
    return (np.asarray(a),), kw


def _pinv_vjp(F, g, out, a, rtol=None, hermitian=False):
    # d P = -P dA P + P P^H dA^H (I - A P) + (I - P A) dA^H P^H P (constant rank; Golub and
    # Pereyra); its adjoint, with G the cotangent of P:
    # gA = -P^H G P^H + (I - A P) G^H P P^H + P^H P G^H (I - P A)
    # in a well-scaled order (Note [Linear algebra at extreme scales]): every product starts
    # from G, so its scale goes from |G| |P| to |G| |P|^2, the result's, and the projectors
    # I - A P, I - P A (of order one) are applied as (A P) k and q (P A), not A (P k), whose
    # P k (|G| |P|^3) underflows at |A| = 1e150 (the sign of the result was wrong) and
    # overflows at 1e-150 (nan)
    p = out
    if hermitian:  # P is the pseudo-inverse of the Hermitian part: A in the formula is that
        a = _herm(F, a)  # (a, not its Hermitian part, would give wrong second derivatives)
    ph = _mH(F, p)
    z = F.matmul(ph, g)                      # P^H G, (m, m)
    w = F.matmul(g, ph)                      # G P^H, (n, n)
    k = F.matmul(_mH(F, z), ph)              # G^H P P^H, (m, n)
    q = F.matmul(ph, _mH(F, w))              # P^H P G^H, (m, n)
    ga = (-F.matmul(z, ph) + k - F.matmul(F.matmul(a, p), k)
          + q - F.matmul(q, F.matmul(p, a)))
    return _herm(F, ga) if hermitian else ga


def _pinv_jvp(F, tangents, out, a, rtol=None, hermitian=False):
    # the well-scaled order of _pinv_vjp: products start from dA (P dA P^H and P^H dA^H P
    # from dA P and P dA), A is applied to them, never to P P^H or P^H P
    p = out
    da = _herm(F, tangents[0]) if hermitian else tangents[0]
    if hermitian:  # the Hermitian part is what is pseudo-inverted (see _pinv_vjp)
        a = _herm(F, a)
    dap = F.matmul(da, p)                    # dA P, (m, m)
    pda = F.matmul(p, da)                    # P dA, (n, n)
    t1 = -F.matmul(p, dap)
    t2 = F.matmul(p, _mH(F, dap))            # P P^H dA^H
    t2 = t2 - F.matmul(F.matmul(t2, a), p)
    t3 = F.matmul(_mH(F, pda), p)            # dA^H P^H P
    t3 = t3 - F.matmul(p, F.matmul(a, t3))
    return t1 + t2 + t3


# (Note [Signatures are NumPy's] in tests/test_signatures.py)
_PINV_SIGNATURE = (
    "``rtol`` at NumPy's position of rcond, with its meaning (a cut-off relative to the "
    "largest singular value; NumPy 2 takes either name, rcond= is accepted here too), but the "
    "array API's default max(m, n) eps, not NumPy's 1e-15")


@defop(kind=LINALG, domain=ANY, sample=_sample_pinv, namespace="linalg",
       kwarg_aliases={"rcond": "rtol"}, notes={"signature": _PINV_SIGNATURE})
def pinv(B, a, rtol=None, hermitian=False):
    """Moore-Penrose pseudo-inverse, from the singular value decomposition.

    Parameters
    ----------
    a : Tensor, shape (..., m, n)
    rtol : float, optional
        Singular values at or below ``rtol * largest singular value`` are treated as zero.
        Default ``max(m, n) * eps`` of the dtype (the array API's default). NumPy's name
        ``rcond`` is accepted too (by position, as here, or as ``rcond=``).
    hermitian : bool
        ``a`` is Hermitian (real symmetric): the faster eigendecomposition is used. Its
        Hermitian part ``(a + a^H) / 2`` is then what is pseudo-inverted (Note [Functions
        of Hermitian matrices] in the source).

    Returns
    -------
    Tensor, shape (..., n, m)

    Notes
    -----
    Differentiable where the rank of ``a`` is locally constant (full-rank inputs, and
    rank-deficient ones perturbed along directions that keep the rank): the standard
    formula of Golub and Pereyra. Where the rank changes the pseudo-inverse is
    discontinuous and the gradient is meaningless; one that crosses the ``rtol`` cut-off
    is not differentiable either.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.linalg.pinv(ndgrad.tensor([[1.0, 0.0], [0.0, 2.0], [0.0, 0.0]]))
    tensor([[1. , 0. , 0. ],
            [0. , 0.5, 0. ]])
    """
    _check_matrix("pinv", a)
    if hermitian:
        _check_square("pinv", a)
        a = (a + B.conj(B.swapaxes(a, -1, -2))) / 2
    return B.linalg.pinv(a, rtol=rtol, hermitian=hermitian)


pinv.defvjp(_pinv_vjp)
pinv.defjvp(_pinv_jvp)
_batch_unary(pinv)


# ----------------------------------------------------------------------------- matrix_rank
def _sample_matrix_rank(d):
    np = _np()
    batch = _batch_shape(d, max_dims=1)
    m, n = d.integers(1, 4), d.integers(1, 4)
    if d.boolean():  # Hermitian, maybe rank deficient
        r = d.integers(0, m)
        u = d.matrix(batch + (m, r)) if r else np.zeros(batch + (m, 0), d.dtype)
        a = u @ np.conj(np.swapaxes(u, -1, -2))
        return (a,), {"hermitian": True}
    r = d.integers(0, min(m, n))
    a = d.matrix(batch + (m, r)) @ d.matrix(batch + (r, n)) if r else \
        np.zeros(batch + (m, n), d.dtype)
    kw = d.choice([{}, {"rtol": 1e-10}, {"tol": 1e-8}])
    return (a,), kw


@defop(kind=LINALG, domain=ANY, differentiable=False, sample=_sample_matrix_rank,
       namespace="linalg")
def matrix_rank(B, A, tol=None, hermitian=False, *, rtol=None):
    """Numerical rank: the number of singular values above a tolerance.

    Not differentiable (an integer). NumPy's signature and defaults.

    Parameters
    ----------
    A : Tensor, shape (..., m, n)
        A matrix or a stack of matrices (1-D input is refused, unlike NumPy's legacy rule).
    tol : float, optional
        Absolute threshold: singular values at or below it count as zero.
    hermitian : bool
        ``A`` is Hermitian: its eigenvalues' moduli are used (faster).
    rtol : float, optional, keyword-only
        Relative threshold (times the largest singular value); default
        ``max(m, n) * eps``. Give ``tol`` or ``rtol``, not both.

    Returns
    -------
    Tensor of int64, shape (...)

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.linalg.matrix_rank(ndgrad.tensor([[1.0, 2.0], [2.0, 4.0]]))
    tensor(1)
    """
    _check_matrix("matrix_rank", A)
    if tol is not None and rtol is not None:
        raise ValueError("matrix_rank: give `tol` (absolute) or `rtol` (relative), not both")
    return B.asarray(B.linalg.matrix_rank(A, tol=tol, hermitian=hermitian, rtol=rtol),
                     dtype=B.int64)


_batch_unary(matrix_rank)


# ----------------------------------------------------------------------------- matrix_exp
def _sample_matrix_exp(d):
    n = d.integers(1, 3)
    return (d.array(_batch_shape(d, max_dims=1) + (n, n), -1.0, 1.0),), {}


def _expm_block(F, a, e):
    """The Frechet derivative ``L(a, e)`` of the matrix exponential at ``a`` along ``e``: the
    upper-right block of ``expm([[a, e], [0, a]])`` (Mathias' block-triangular identity),
    itself differentiable through :func:`matrix_exp`."""
    a, e = F.broadcast_arrays(a, e)
    n = a.shape[-1]
    top = F.concat([a, e], axis=-1)
    bottom = F.concat([F.zeros_like(a), a], axis=-1)
    big = F.linalg.matrix_exp(F.concat([top, bottom], axis=-2))
    return big[..., :n, n:]


# Note [Matrix exponential forward]
# ---------------------------------
# The forward is ``scipy.linalg.expm`` (``B.scipy_linalg.expm``, batched over leading
# dimensions) where the backend has it. For a backend without it, ``_expm`` computes the same
# with backend operations only: scaling and squaring with a diagonal Pade approximant of
# degree 3, 5, 7, 9 or 13 (Higham, SIAM J. Matrix Anal. Appl. 26, 2005: the algorithm of
# MATLAB's expm and, refined, of SciPy's). The degree follows the largest 1-norm of the stack;
# the number of squarings is chosen per matrix. Tests check both against each other and the
# property suite checks the op against scipy.linalg.expm. (SciPy's expm is 4x faster on small
# matrices on an idle machine, but it runs its kernel through a threaded BLAS and can take
# milliseconds when the cores are busy.)
_PADE = {
    3: (120.0, 60.0, 12.0, 1.0),
    5: (30240.0, 15120.0, 3360.0, 420.0, 30.0, 1.0),
    7: (17297280.0, 8648640.0, 1995840.0, 277200.0, 25200.0, 1512.0, 56.0, 1.0),
    9: (17643225600.0, 8821612800.0, 2075673600.0, 302702400.0, 30270240.0, 2162160.0,
        110880.0, 3960.0, 90.0, 1.0),
    13: (64764752532480000.0, 32382376266240000.0, 7771770303897600.0, 1187353796428800.0,
         129060195264000.0, 10559470521600.0, 670442572800.0, 33522128640.0, 1323241920.0,
         40840800.0, 960960.0, 16380.0, 182.0, 1.0),
}
# the largest 1-norm for which the degree-m approximant is accurate to double precision
_THETA = ((3, 1.495585217958292e-2), (5, 2.539398330063230e-1), (7, 9.504178996162932e-1),
          (9, 2.097847961257068e0), (13, 5.371920351148152e0))


def _pade_uv(B, a, m, eye):
    """``U`` (odd part) and ``V`` (even part) of the degree-``m`` Pade approximant."""
    b = _PADE[m]
    a2 = B.matmul(a, a)
    if m < 13:
        powers = [eye, a2]
        for _ in range(2, (m + 1) // 2):
            powers.append(B.matmul(powers[-1], a2))
        u = B.matmul(a, sum(b[2 * j + 1] * p for j, p in enumerate(powers)))
        v = sum(b[2 * j] * p for j, p in enumerate(powers))
        return u, v
    a4 = B.matmul(a2, a2)
    a6 = B.matmul(a4, a2)
    u = B.matmul(a, B.matmul(a6, b[13] * a6 + b[11] * a4 + b[9] * a2)
                 + b[7] * a6 + b[5] * a4 + b[3] * a2 + b[1] * eye)
    v = B.matmul(a6, b[12] * a6 + b[10] * a4 + b[8] * a2) + b[6] * a6 + b[4] * a4 + \
        b[2] * a2 + b[0] * eye
    return u, v


def _expm(B, a):
    n = a.shape[-1]
    if n == 0:
        return a.copy()
    if a.dtype.kind not in "fc":
        a = a.astype(B.float64)
    norms = B.max(B.sum(B.abs(a), axis=-2), axis=-1)  # 1-norm of each matrix
    if not B.all(B.isfinite(norms)):
        return B.full_like(a, B.nan)
    top = float(B.max(norms)) if norms.size else 0.0
    eye = B.eye(n, dtype=a.dtype)
    for m, theta in _THETA[:-1]:
        if top <= theta:
            u, v = _pade_uv(B, a, m, eye)
            return B.linalg.solve(v - u, v + u)
    theta = _THETA[-1][1]
    s = B.maximum(B.ceil(B.log2(B.maximum(norms, theta) / theta)), 0).astype(B.int64)
    a = a / (2.0 ** s).astype(a.real.dtype)[..., None, None]
    u, v = _pade_uv(B, a, 13, eye)
    x = B.linalg.solve(v - u, v + u)
    for k in range(int(B.max(s))):  # square each matrix s times
        sq = B.matmul(x, x)
        x = sq if s.ndim == 0 else B.where((s > k)[..., None, None], sq, x)
    return x


@defop(kind=LINALG, domain=ANY, sample=_sample_matrix_exp, namespace="linalg")
def matrix_exp(B, a):
    """Matrix exponential ``sum_k a^k / k!``, batched: ``scipy.linalg.expm`` (scaling and
    squaring with a Pade approximant).

    Parameters
    ----------
    a : Tensor, shape (..., n, n)

    Notes
    -----
    Differentiable: the vjp is the Frechet derivative at ``a^H`` applied to the cotangent,
    ``ga = L(a^H, g)``, computed as the upper-right block of
    ``matrix_exp([[a^H, g], [0, a^H]])``; the jvp is ``L(a, t)`` the same way. Both are
    matrix exponentials again, so derivatives of any order work.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.linalg.matrix_exp(ndgrad.tensor([[0.0, 1.0], [0.0, 0.0]]))
    tensor([[1., 1.],
            [0., 1.]])
    """
    _check_square("matrix_exp", a)
    expm = getattr(getattr(B, "scipy_linalg", None), "expm", None)
    if expm is None or a.size == 0:
        return _expm(B, a)  # (Note [Matrix exponential forward])
    return expm(a)


matrix_exp.defvjp(lambda F, g, out, a: _expm_block(F, _mH(F, a), g))
matrix_exp.defjvp(lambda F, tangents, out, a: _expm_block(F, a, tangents[0]))
_batch_unary(matrix_exp)
