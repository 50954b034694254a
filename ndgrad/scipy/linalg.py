"""``ndgrad.linalg``: NumPy's and SciPy's linear algebra, differentiable.

Note [The linalg and fft namespaces]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
``ndgrad.linalg`` is one module, as it always was: ``numpy.linalg``'s functions and
``scipy.linalg``'s side by side, also reached as ``ndgrad.numpy.linalg`` and
``ndgrad.scipy.linalg`` (the same object). It is assembled here, at the top of the mirrors, in
layer order: the primitives declared in ``ndgrad/core/ops/`` with ``namespace="linalg"``
(Note [Namespaces] in core/ops/registry.py), the composites ``ndgrad/numpy/linear_algebra.py``
declares in that namespace (both published into ``NAMESPACED["linalg"]``), and scipy.linalg's
plain functions below. This file is its home; its public name is ``ndgrad.linalg`` (Note
[Public module names] in ndgrad/scipy/__init__.py). ``ndgrad.fft`` is assembled the same way
in ndgrad/scipy/fft.py (NumPy's and SciPy's FFTs are the same functions). The NumPy side keeps
its composites in ``linear_algebra.py`` and ``fourier.py``, not ``linalg.py`` and ``fft.py``:
``ndgrad.numpy.linalg`` is this module.

The array API's ``linalg`` extension also lists functions whose semantics are those of the
top-level ones (``matmul``, ``matrix_transpose``, ``outer``, ``tensordot``, ``vecdot``):
they are the same functions, re-exported here. (``linalg.diagonal`` and ``linalg.trace``
differ from the top-level ones, which take NumPy's ``axis1=0, axis2=1``: they are
registered in this namespace of their own.) :class:`LinAlgError` is NumPy's, raised for
singular or non-positive-definite input.

The functions of ``scipy.linalg`` are written with ndgrad's differentiable operations
(plain functions, not registered ops): every transform (backward, forward mode, ``vmap``,
higher orders) differentiates them through the operations they call.

* Matrix equations (``solve_sylvester``, ``solve_continuous_lyapunov``,
  ``solve_discrete_lyapunov``) are solved in Kronecker (vectorised) form with
  :func:`ndgrad.linalg.solve`: an ``(n m, n m)`` system, fine for ``n, m`` up to about 30
  (SciPy uses Bartels-Stewart; the values agree to rounding).
* Banded solvers assemble the dense matrix from the band storage (a gather) and solve it.
* ``cho_factor`` / ``cho_solve`` use :func:`ndgrad.linalg.cholesky`; ``lu_factor`` takes the
  row pivots from SciPy (piecewise constant) and factors the permuted matrix with an
  unpivoted Doolittle elimination written in ndgrad operations, so ``lu`` is differentiable
  in the matrix to any order; ``lu_solve`` uses triangular solves.
* ``sqrtm`` is the Denman-Beavers iteration (of a rotated matrix for eigenvalues on the
  negative real axis, Note [sqrtm on the negative real axis]), ``logm`` inverse scaling and
  squaring (square roots by Denman-Beavers, then the series of ``2 atanh``);
  ``expm_frechet`` the block formula ``expm([[A, E], [0, A]]) = [[expm(A), L(A, E)],
  [0, expm(A)]]``.
* ``funm`` is ``V f(Λ) V^-1`` from :func:`ndgrad.linalg.eig` (Note [funm]).
* ``schur`` is SciPy's, on the host, for its values only (not differentiable: it refuses
  inputs that require grad and transforms' values).
* ``polar`` through :func:`ndgrad.linalg.svd`; ``toeplitz``, ``circulant`` and
  ``block_diag`` gather or pad their entries; ``eigh_tridiagonal`` is
  :func:`ndgrad.linalg.eigh` of the assembled matrix.

SciPy is imported only inside ``lu_factor`` (for the pivots) and ``schur``.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from ..core import backend as _backend
from ..core import creation as _creation
from ..core import grad_mode as _grad_mode
from ..core import ops as _ops
from ..core.ops.decompositions import EighResult, EigResult, QRResult, SVDResult
from ..core.ops.solves import LinAlgError, LstsqResult, SlogdetResult
from ..core.tensor import Tensor
from ..numpy import array_api as _array_api

__name__ = "ndgrad.linalg"  # its public name (Note [Public module names] in scipy/__init__.py)

# ndgrad.linalg's registered functions (primitives and NumPy's composites), from the registry
_linalg = SimpleNamespace(**_ops.NAMESPACED["linalg"])

_SCIPY = ["solve_sylvester", "solve_continuous_lyapunov", "solve_discrete_lyapunov",
           "solve_banded", "solveh_banded", "cho_factor", "cho_solve", "lu_factor", "lu_solve",
           "sqrtm", "logm", "expm_frechet", "funm", "schur", "polar", "toeplitz", "circulant",
           "block_diag", "eigh_tridiagonal"]


def _as(x):
    return x if isinstance(x, Tensor) else _creation.asarray(x)


def _float(x):
    x = _as(x)
    if x.dtype.kind not in "fc":
        x = x.astype(_backend.float64)
    return x


def _square(name, a, what="a"):
    if a.ndim != 2 or a.shape[0] != a.shape[1]:
        raise ValueError(f"linalg.{name}: {what} must be a square 2-D matrix, got shape "
                         f"{tuple(a.shape)}")


def _eye(n, like):
    return _creation.eye(n, dtype=like.dtype, device=like.device)


def _mH(a):
    return _ops.conj(a.T) if a.dtype.kind == "c" else a.T


# ------------------------------------------------------------------------- matrix equations
def solve_sylvester(a, b, q):
    """Solve the Sylvester equation ``A X + X B = Q`` for ``X``, as ``scipy.linalg``.

    Differentiable in ``a``, ``b`` and ``q``. Solved as the ``(n m, n m)`` linear system
    ``(A kron I + I kron B^T) vec(X) = vec(Q)`` (row-major ``vec``) with
    :func:`ndgrad.linalg.solve`: meant for ``n, m`` up to about 30.

    Parameters
    ----------
    a : (n, n) tensor
    b : (m, m) tensor
    q : (n, m) tensor

    Examples
    --------
    >>> import ndgrad
    >>> a = ndgrad.tensor([[2.0, 1.0], [0.0, 3.0]])
    >>> b = ndgrad.tensor([[1.0]])
    >>> ndgrad.linalg.solve_sylvester(a, b, ndgrad.tensor([[3.0], [4.0]]))
    tensor([[0.66666667],
            [1.        ]])
    """
    a, b, q = _float(a), _float(b), _float(q)
    _square("solve_sylvester", a)
    _square("solve_sylvester", b, "b")
    n, m = a.shape[0], b.shape[0]
    if tuple(q.shape) != (n, m):
        raise ValueError(f"linalg.solve_sylvester: q must have shape (a.shape[0], "
                         f"b.shape[0]) = {(n, m)}, got {tuple(q.shape)}")
    k = _ops.kron(a, _eye(m, a)) + _ops.kron(_eye(n, b), b.T)
    return _linalg.solve(k, q.reshape(n * m)).reshape(n, m)


def solve_continuous_lyapunov(a, q):
    """Solve the continuous Lyapunov equation ``A X + X A^H = Q``, as ``scipy.linalg``.

    :func:`solve_sylvester` with ``B = A^H``; differentiable in ``a`` and ``q``.

    Examples
    --------
    >>> import ndgrad
    >>> a = ndgrad.tensor([[-2.0, 1.0], [0.0, -1.0]])
    >>> x = ndgrad.linalg.solve_continuous_lyapunov(a, -ndgrad.eye(2))
    >>> ndgrad.round(a @ x + x @ a.T, 12)
    tensor([[-1.,  0.],
            [ 0., -1.]])
    """
    a = _float(a)
    return solve_sylvester(a, _mH(a), q)


def solve_discrete_lyapunov(a, q, method=None):
    """Solve the discrete Lyapunov equation ``A X A^H - X + Q = 0``, as ``scipy.linalg``.

    Differentiable in ``a`` and ``q``. Solved directly as ``(A kron conj(A) - I) vec(X) =
    -vec(Q)`` (SciPy's ``method='direct'``; ``method`` is accepted for compatibility, the
    values agree with ``'bilinear'`` to rounding), for ``n`` up to about 30.

    Examples
    --------
    >>> import ndgrad
    >>> a = ndgrad.tensor([[0.5, 0.1], [0.0, 0.2]])
    >>> x = ndgrad.linalg.solve_discrete_lyapunov(a, ndgrad.eye(2))
    >>> a @ x @ a.T - x
    tensor([[-1.,  0.],
            [ 0., -1.]])
    """
    if method not in (None, "direct", "bilinear"):
        raise ValueError(f"linalg.solve_discrete_lyapunov: method must be None, 'direct' or "
                         f"'bilinear', got {method!r}")
    a, q = _float(a), _float(q)
    _square("solve_discrete_lyapunov", a)
    n = a.shape[0]
    if tuple(q.shape) != (n, n):
        raise ValueError(f"linalg.solve_discrete_lyapunov: q must have a's shape {(n, n)}, "
                         f"got {tuple(q.shape)}")
    ac = _ops.conj(a) if a.dtype.kind == "c" else a
    k = _ops.kron(a, ac) - _eye(n * n, a)
    return _linalg.solve(k, -q.reshape(n * n)).reshape(n, n)


# ------------------------------------------------------------------------- banded systems
def _solve_dense(name, a, b):
    n = a.shape[0]
    if b.shape[0] != n:
        raise ValueError(f"linalg.{name}: b must have {n} rows (the matrix's order), got "
                         f"shape {tuple(b.shape)}")
    return _linalg.solve(a, b) if b.ndim > 1 else _linalg.solve(a, b[:, None])[:, 0]


def _banded_dense(ab, lower_rows, upper_rows):
    """The dense ``(n, n)`` matrix of band storage ``ab[u + i - j, j] = a[i, j]`` (a gather;
    entries outside the band are a zero appended to ``ab``)."""
    rows, n = ab.shape
    i, j = np.indices((n, n))
    r = upper_rows + i - j
    inside = (r >= 0) & (r < rows) & (i - j <= lower_rows) & (j - i <= upper_rows)
    idx = np.where(inside, r * n + j, rows * n)
    flat = _ops.concatenate([ab.reshape(rows * n), _creation.zeros(1, dtype=ab.dtype,
                                                          device=ab.device)])
    return flat[idx]


def solve_banded(l_and_u, ab, b):
    """Solve ``a x = b`` for a banded ``a`` in SciPy's band storage
    (``ab[u + i - j, j] = a[i, j]``), as ``scipy.linalg.solve_banded``.

    Differentiable in ``ab`` and ``b``. The dense matrix is assembled and solved with
    :func:`ndgrad.linalg.solve` (``O(n^3)``, not a banded LU): for moderate ``n``.

    Parameters
    ----------
    l_and_u : (int, int)
        Numbers of nonzero lower and upper diagonals.
    ab : (l + u + 1, n) tensor
    b : (n,) or (n, k) tensor

    Examples
    --------
    >>> import ndgrad
    >>> ab = ndgrad.tensor([[0.0, 1.0, 1.0], [4.0, 4.0, 4.0], [1.0, 1.0, 0.0]])
    >>> ndgrad.linalg.solve_banded((1, 1), ab, ndgrad.tensor([5.0, 6.0, 5.0]))
    tensor([1., 1., 1.])
    """
    lo, up = (int(v) for v in l_and_u)
    ab, b = _float(ab), _float(b)
    if ab.ndim != 2 or ab.shape[0] != lo + up + 1 or lo < 0 or up < 0:
        raise ValueError(f"linalg.solve_banded: ab must have shape (l + u + 1, n) = "
                         f"({lo + up + 1}, n) for (l, u) = {(lo, up)}, got {tuple(ab.shape)}")
    return _solve_dense("solve_banded", _banded_dense(ab, lo, up), b)


def solveh_banded(ab, b, overwrite_ab=False, overwrite_b=False, lower=False,
                  check_finite=True):
    """Solve ``a x = b`` for a Hermitian positive definite banded ``a``, as
    ``scipy.linalg.solveh_banded`` (upper form ``ab[u + i - j, j] = a[i, j]`` for ``i <= j``;
    with ``lower=True``, ``ab[i - j, j] = a[i, j]`` for ``i >= j``).

    Differentiable in ``ab`` and ``b``: the dense matrix is assembled, factored with
    :func:`ndgrad.linalg.cholesky` (``LinAlgError`` if it is not positive definite, as in
    SciPy) and solved. ``overwrite_*`` and ``check_finite`` are accepted and ignored.

    Examples
    --------
    >>> import ndgrad
    >>> ab = ndgrad.tensor([[0.0, -1.0, -1.0], [4.0, 4.0, 4.0]])  # upper form, u = 1
    >>> ndgrad.linalg.solveh_banded(ab, ndgrad.tensor([3.0, 2.0, 3.0]))
    tensor([1., 1., 1.])
    """
    ab, b = _float(ab), _float(b)
    if ab.ndim != 2:
        raise ValueError(f"linalg.solveh_banded: ab must be 2-D (u + 1, n), got shape "
                         f"{tuple(ab.shape)}")
    u = ab.shape[0] - 1
    half = _banded_dense(ab, u, 0) if lower else _banded_dense(ab, 0, u)
    off = _ops.tril(half, -1) if lower else _ops.triu(half, 1)
    full = half + _mH(off)
    c = _linalg.cholesky(full)
    bb = b if b.ndim > 1 else b[:, None]
    x = _linalg.cholesky_solve(bb, c)
    return x if b.ndim > 1 else x[:, 0]


# ------------------------------------------------------------------------- factorizations
def cho_factor(a, lower=False, overwrite_a=False, check_finite=True):
    """Cholesky factorization for :func:`cho_solve`, as ``scipy.linalg.cho_factor``.

    Returns ``(c, lower)``: ``c`` the lower factor ``L`` (``a = L L^H``) if ``lower`` else
    the upper ``U = L^H``. Unlike SciPy, the other triangle of ``c`` is zero (SciPy leaves
    the input's entries there). Differentiable in ``a`` (through
    :func:`ndgrad.linalg.cholesky`).

    Examples
    --------
    >>> import ndgrad
    >>> a = ndgrad.tensor([[4.0, 2.0], [2.0, 3.0]])
    >>> c, low = ndgrad.linalg.cho_factor(a)
    >>> c
    tensor([[2.        , 1.        ],
            [0.        , 1.41421356]])
    >>> ndgrad.linalg.cho_solve((c, low), ndgrad.tensor([6.0, 5.0]))
    tensor([1., 1.])
    """
    a = _float(a)
    _square("cho_factor", a)
    low = _linalg.cholesky(a)
    return (low if lower else _mH(low)), bool(lower)


def cho_solve(c_and_lower, b, overwrite_b=False, check_finite=True):
    """Solve ``a x = b`` given ``(c, lower)`` from :func:`cho_factor`, as
    ``scipy.linalg.cho_solve``. Differentiable in ``c`` (so in ``a``) and ``b``.

    Examples
    --------
    >>> import ndgrad
    >>> cf = ndgrad.linalg.cho_factor(ndgrad.tensor([[4.0, 2.0], [2.0, 3.0]]), lower=True)
    >>> ndgrad.linalg.cho_solve(cf, ndgrad.tensor([6.0, 5.0]))
    tensor([1., 1.])
    """
    c, lower = c_and_lower
    c, b = _float(c), _float(b)
    _square("cho_solve", c, "c")
    low = _ops.tril(c) if lower else _mH(_ops.triu(c))
    bb = b if b.ndim > 1 else b[:, None]
    if bb.shape[0] != c.shape[0]:
        raise ValueError(f"linalg.cho_solve: b must have {c.shape[0]} rows, got shape "
                         f"{tuple(b.shape)}")
    x = _linalg.cholesky_solve(bb, low)
    return x if b.ndim > 1 else x[:, 0]


def _perm_from_piv(piv):
    perm = np.arange(len(piv))
    for i, p in enumerate(piv):
        perm[i], perm[p] = perm[p], perm[i]
    return perm


def lu_factor(a, overwrite_a=False, check_finite=True):
    """Pivoted LU factorization for :func:`lu_solve`, as ``scipy.linalg.lu_factor``.

    Returns ``(lu, piv)``: ``lu`` holds ``U`` in its upper triangle and the unit lower ``L``
    below the diagonal, ``piv`` LAPACK's row interchanges (row ``i`` was swapped with row
    ``piv[i]``), with ``P A = L U``. The pivots come from SciPy (they are piecewise constant
    in ``a``); ``lu`` is then computed from the permuted matrix by Doolittle elimination in
    ndgrad operations, so it is differentiable in ``a`` (to any order). ``O(n)`` recorded
    steps: for small and moderate ``n``. Square matrices only.

    Examples
    --------
    >>> import ndgrad
    >>> a = ndgrad.tensor([[1.0, 2.0], [3.0, 4.0]])
    >>> lu, piv = ndgrad.linalg.lu_factor(a)
    >>> lu
    tensor([[3.        , 4.        ],
            [0.33333333, 0.66666667]])
    >>> piv
    array([1, 1], dtype=int32)
    >>> ndgrad.linalg.lu_solve((lu, piv), ndgrad.tensor([3.0, 7.0]))
    tensor([1., 1.])
    """
    import scipy.linalg
    a = _float(a)
    _square("lu_factor", a)
    n = a.shape[0]
    host = a.detach().cpu().numpy()
    piv = scipy.linalg.lu_factor(host, check_finite=check_finite)[1]
    work = a[_perm_from_piv(piv)]
    rows = []
    cols = []
    for _ in range(n):
        pivot_row = work[0]
        col = work[1:, 0] / pivot_row[0]
        rows.append(pivot_row)
        cols.append(col)
        work = work[1:, 1:] - col[:, None] * pivot_row[None, 1:]
    out = []
    for i in range(n):
        lower = [cols[j][i - j - 1:i - j] for j in range(i)]
        out.append(_ops.concatenate(lower + [rows[i]]) if lower else rows[i])
    return _ops.stack(out), piv


def lu_solve(lu_and_piv, b, trans=0, overwrite_b=False, check_finite=True):
    """Solve ``a x = b`` (``trans=0``), ``a^T x = b`` (1) or ``a^H x = b`` (2) given
    ``(lu, piv)`` from :func:`lu_factor`, as ``scipy.linalg.lu_solve``.

    Differentiable in ``lu`` (so in ``a``) and ``b``.

    Examples
    --------
    >>> import ndgrad
    >>> f = ndgrad.linalg.lu_factor(ndgrad.tensor([[1.0, 2.0], [3.0, 4.0]]))
    >>> ndgrad.linalg.lu_solve(f, ndgrad.tensor([4.0, 6.0]), trans=1)  # a^T x = b
    tensor([1., 1.])
    """
    lu, piv = lu_and_piv
    lu, b = _float(lu), _float(b)
    _square("lu_solve", lu, "lu")
    if trans not in (0, 1, 2):
        raise ValueError(f"linalg.lu_solve: trans must be 0, 1 or 2, got {trans!r}")
    n = lu.shape[0]
    bb = b if b.ndim > 1 else b[:, None]
    if bb.shape[0] != n:
        raise ValueError(f"linalg.lu_solve: b must have {n} rows, got shape {tuple(b.shape)}")
    perm = _perm_from_piv(np.asarray(piv))
    low = _ops.tril(lu, -1) + _eye(n, lu)
    up = _ops.triu(lu)
    if trans == 0:
        y = _linalg.solve_triangular(low, bb[perm], upper=False, unitriangular=True)
        x = _linalg.solve_triangular(up, y, upper=True)
    else:
        if trans == 2 and lu.dtype.kind == "c":
            low, up = _ops.conj(low), _ops.conj(up)
        z = _linalg.solve_triangular(up.T, bb, upper=False)
        w = _linalg.solve_triangular(low.T, z, upper=True, unitriangular=True)
        x = w[np.argsort(perm)]
    return x if b.ndim > 1 else x[:, 0]


# ------------------------------------------------------------------------- matrix functions
def _denman_beavers(name, a, tol=1e-14, maxiter=60):
    """``(sqrt(a), inv(sqrt(a)))`` by the Denman-Beavers iteration; the stop is decided on
    the values, then two more steps so that the derivative iterates converge too."""
    y, z = a, _eye(a.shape[0], a)
    scale = max(float(_linalg.norm(a.detach())), 1e-300)
    extra = None
    for _ in range(maxiter):
        y_next = 0.5 * (y + _linalg.inv(z))
        z = 0.5 * (z + _linalg.inv(y))
        step = float(_linalg.norm((y_next - y).detach())) / scale
        y = y_next
        if extra is not None:
            extra -= 1
            if extra == 0:
                return y, z
        elif step < tol:
            extra = 2
    if extra is None:
        raise np.linalg.LinAlgError(
            f"linalg.{name}: the Denman-Beavers iteration did not converge (the matrix may "
            "have eigenvalues on the closed negative real axis, where the principal square "
            "root is not defined)")
    return y, z


# Note [sqrtm on the negative real axis]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# SciPy's sqrtm returns the principal root, complex (complex128 for float64, complex64 for
# float32) when a real A has an eigenvalue on the negative real axis (a 1 x 1 block of its real
# Schur form; LAPACK's eigenvalues of a real matrix are then exactly real). Denman-Beavers
# converges only for eigenvalues off the closed negative real axis (on a real negative
# eigenvalue its iterates stay real). So when some eigenvalue lies on that axis (real and
# negative, imaginary part exactly 0), the root is taken of a rotated matrix:
#
#     sqrtm(A) = exp(i phi / 2) sqrtm(exp(-i phi) A),   0 < phi < pi,
#
# which holds for the principal branches as long as every eigenvalue's argument minus phi
# stays in (-pi, pi): arguments lie in (-pi, pi], the axis is at pi, so phi must stay below
# pi + (the smallest argument); phi is half that bound (at most pi / 2), which puts the
# rotated spectrum as far from the cut on both sides as the bound allows. phi is a constant
# chosen from A's value, and the identity holds for every matrix near A, so the derivative
# of the composite (through the complex Denman-Beavers iteration) is sqrtm's own.
def _branch_rotation(a):
    """The angle ``phi`` of Note [sqrtm on the negative real axis], or None when no
    eigenvalue of ``a`` lies on the negative real axis."""
    w = np.linalg.eigvals(np.asarray(a.detach().cpu().numpy()))
    on_axis = (w.imag == 0) & (w.real < 0)
    if not on_axis.any():
        return None
    bound = np.pi + float(np.min(np.angle(w[~on_axis]), initial=np.pi))
    return min(0.5 * bound, 0.5 * np.pi)


def sqrtm(A, disp=True, blocksize=64):
    """Principal matrix square root ``X`` with ``X @ X = A``, as ``scipy.linalg.sqrtm``.

    Denman-Beavers iteration in ndgrad operations: differentiable in ``A`` (the iterates'
    derivatives converge with them; checked with gradcheck). As SciPy's, a real ``A`` gives
    a real result unless it has an eigenvalue on the negative real axis: then the result is
    the complex principal root (complex128 for float64, complex64 for float32), still
    differentiable in ``A`` (Note [sqrtm on the negative real axis]). A singular ``A`` with
    no square root raises ``LinAlgError``. ``disp`` and ``blocksize`` are accepted for
    compatibility and ignored (SciPy deprecates them).

    Examples
    --------
    >>> import ndgrad
    >>> x = ndgrad.linalg.sqrtm(ndgrad.tensor([[4.0, 1.0], [0.0, 9.0]]))
    >>> x
    tensor([[2. , 0.2],
            [0. , 3. ]])
    >>> r = ndgrad.linalg.sqrtm(ndgrad.tensor([[-4.0, 1.0], [0.0, 9.0]]))  # -4: complex
    >>> r.dtype
    dtype('complex128')
    >>> bool(abs(r[0, 0] - 2j) < 1e-15 and abs(r[1, 1] - 3) < 1e-15)
    True
    """
    a = _float(A)
    _square("sqrtm", a, "A")
    phi = _branch_rotation(a)
    if phi is None:
        return _denman_beavers("sqrtm", a)[0]
    single = a.dtype in (_backend.float32, _backend.complex64)
    ac = a.astype(_backend.complex64 if single else _backend.complex128)
    root = _denman_beavers("sqrtm", ac * complex(np.exp(-1j * phi)))[0]
    return root * complex(np.exp(0.5j * phi))


def logm(A, disp=True):
    """Principal matrix logarithm, as ``scipy.linalg.logm``.

    Inverse scaling and squaring in ndgrad operations: square roots (Denman-Beavers) until
    ``A^(1/2^k)`` is near ``I``, then ``log(A) = 2^k * 2 atanh(Z)``,
    ``Z = (B - I)(B + I)^-1``, summed as its series. Differentiable in ``A``. ``A`` must
    have no eigenvalues on the closed negative real axis; a real ``A`` gives a real result.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.linalg.logm(ndgrad.tensor([[1.0, 1.0], [0.0, 1.0]]))
    tensor([[0., 1.],
            [0., 0.]])
    """
    a = _float(A)
    _square("logm", a, "A")
    n = a.shape[0]
    eye = _eye(n, a)
    k = 0
    while float(_linalg.norm((a - eye).detach())) > 0.25:
        if k == 60:
            raise np.linalg.LinAlgError("linalg.logm: the square roots did not approach the "
                                        "identity")
        a = _denman_beavers("logm", a)[0]
        k += 1
    z = _linalg.solve((a + eye).T, (a - eye).T).T  # (B - I)(B + I)^-1 (they commute)
    z2 = z @ z
    term, total = z, z
    for j in range(1, 15):  # |Z| < 0.125: the 15th term is below 1e-29
        term = term @ z2
        total = total + term / (2 * j + 1)
    return (2.0 ** (k + 1)) * total


def expm_frechet(A, E, method=None, compute_expm=True, check_finite=True):
    """Fréchet derivative of the matrix exponential at ``A`` in direction ``E``, as
    ``scipy.linalg.expm_frechet``: ``(expm(A), L(A, E))``, or ``L(A, E)`` when
    ``compute_expm=False``.

    ``L(A, E)`` is the jvp of :func:`ndgrad.linalg.matrix_exp` at ``A`` with tangent ``E``;
    it is computed by the block formula ``expm([[A, E], [0, A]]) = [[expm(A), L],
    [0, expm(A)]]``, differentiable in ``A`` and ``E``.

    Examples
    --------
    >>> import ndgrad
    >>> a = ndgrad.tensor([[0.0, 0.0], [0.0, 0.0]])
    >>> e = ndgrad.tensor([[1.0, 2.0], [3.0, 4.0]])
    >>> ndgrad.linalg.expm_frechet(a, e, compute_expm=False)  # L(0, E) = E
    tensor([[1., 2.],
            [3., 4.]])
    """
    a, e = _float(A), _float(E)
    _square("expm_frechet", a, "A")
    if tuple(e.shape) != tuple(a.shape):
        raise ValueError(f"linalg.expm_frechet: E must have A's shape {tuple(a.shape)}, got "
                         f"{tuple(e.shape)}")
    n = a.shape[0]
    zero = _creation.zeros(n, n, dtype=a.dtype, device=a.device)
    big = _ops.concatenate([_ops.concatenate([a, e], axis=1), _ops.concatenate([zero, a], axis=1)])
    m = _linalg.matrix_exp(big)
    frechet = m[:n, n:]
    return (m[:n, :n], frechet) if compute_expm else frechet


# Note [funm]
# ~~~~~~~~~~~
# SciPy's funm is Schur-Parlett: the Schur form T = Z^H A Z, f on its diagonal, and the
# Parlett recurrence for the rest, which divides by differences of eigenvalues. Its derivative
# could be had from the block identity f([[A, E], [0, A]]) = [[f(A), L(A, E)], [0, f(A)]]
# (Mathias 1996; expm_frechet uses it), but the block matrix has every eigenvalue twice:
# Parlett's recurrence divides by zero there (SciPy skips the division and returns a wrong
# block) and the block matrix is defective, so neither Schur-Parlett nor an eigendecomposition
# gives L accurately from it. funm is therefore the composite
#
#     A = V diag(w) V^-1  (ndgrad.linalg.eig),   F = V diag(func(w)) V^-1
#
# with func applied to the (complex) eigenvalues as ndgrad operations. Differentiating it
# through eig's rules gives V^-1 dF V = (V^-1 dA V) * D, D[i, j] = (f(w_i) - f(w_j)) /
# (w_i - w_j) and D[i, i] = f'(w_i): the Daleckii-Krein form of the Fréchet derivative L(A, dA),
# exact for a diagonalizable A with distinct eigenvalues, and, being made of ndgrad operations,
# differentiable again (every order, every transform). Accuracy: the value's relative error is
# about eps * cond(V) (errest reports it), so it matches Schur-Parlett for normal matrices
# (cond(V) = 1) and for well-separated eigenvalues; at nearly repeated eigenvalues of a
# non-normal matrix both methods lose accuracy, and at exactly repeated ones the derivative
# divides by zero (the value of a normal A, e.g. the identity, is still exact).
def funm(A, func, disp=True):
    """Matrix function ``f(A)`` of a scalar function ``func``, as ``scipy.linalg.funm``.

    ``func`` gets the eigenvalues of ``A`` as a 1-D complex tensor and must return the
    values of ``f`` at them (the same shape); written with NumPy's or ndgrad's functions
    (``np.exp``, ``np.sqrt``, arithmetic ...) it computes on ndgrad tensors. The result is
    ``V diag(func(w)) V^-1`` with ``A = V diag(w) V^-1`` from :func:`ndgrad.linalg.eig`
    (SciPy uses the Schur-Parlett method; the values agree to about ``eps * cond(V)``).

    Differentiable in ``A`` to every order and under every transform: the derivative is the
    Fréchet derivative of the matrix function (Daleckii-Krein), for diagonalizable ``A``
    with distinct eigenvalues; it is not defined (it divides by zero) at repeated ones.
    Accurate for normal matrices (Hermitian, unitary ...) and for well-separated eigenvalues;
    near a defective matrix (nearly repeated eigenvalues of a non-normal ``A``) the result
    is inaccurate, which ``errest`` reports (Note [funm] in the source).

    As in SciPy, a real ``A`` gives a real result when the imaginary part is negligible
    (below ``1e6 * eps``). Inside :func:`ndgrad.func.vmap`, where a batch has no single
    value to decide on, the result is complex (its imaginary part is never dropped); take
    ``.real`` where ``f(A)`` is known to be real (``exp``, ``sin``, polynomials, ``sqrt``
    of positive definite matrices).

    Parameters
    ----------
    A : (n, n) tensor
        Real or complex square matrix.
    func : callable
        Evaluates ``f`` elementwise on a 1-D tensor of eigenvalues.
    disp : bool, optional
        If True (default), print a message when the estimated error is large (over
        ``1000 * eps``), as SciPy does (not inside ``vmap``, which has no single value),
        and return ``F`` alone; if False return ``(F, errest)``.

    Returns
    -------
    F : (n, n) tensor
    errest : float
        (with ``disp=False``) Estimate of the relative error, ``min(1, eps * cond(V))`` in
        the 2-norm (``inf`` if ``F`` is not finite); inside ``vmap`` a tensor, one per batch
        element.

    Examples
    --------
    >>> import numpy as np, ndgrad
    >>> a = ndgrad.tensor([[1.0, 2.0], [0.0, 3.0]], requires_grad=True)
    >>> f = ndgrad.linalg.funm(a, lambda w: w ** 2 + 1)  # a @ a + I
    >>> f
    tensor([[ 2.,  8.],
            [ 0., 10.]], grad_fn=<RealBackward0>)
    >>> f.sum().backward()
    >>> a.grad  # d sum(a @ a) / da = J a^T + a^T J (J: ones)
    tensor([[4., 4.],
            [8., 8.]])
    >>> ndgrad.linalg.funm(ndgrad.tensor([[4.0, 0.0], [0.0, 9.0]]), np.sqrt, disp=False)
    (tensor([[2., 0.],
            [0., 3.]]), 2.220446049250313e-16)
    """
    a = _float(A)
    _square("funm", a, "A")
    if not callable(func):
        raise TypeError(f"linalg.funm: func must be a callable applied to the eigenvalues, "
                        f"got {type(func).__name__}")
    n = a.shape[0]
    w, v = _linalg.eig(a)
    fw = func(w)
    if not isinstance(fw, Tensor):
        fw = _creation.asarray(fw, device=w.device)
    if tuple(fw.shape) != (n,):
        raise ValueError(f"linalg.funm: func must return one value per eigenvalue (shape "
                         f"{(n,)}), got shape {tuple(fw.shape)}")
    if fw.dtype != w.dtype:
        fw = fw.astype(w.dtype)
    f = _linalg.solve(v.T, (v * fw).T).T  # V diag(f(w)) V^-1
    eps = float(np.finfo(f.dtype).eps)
    with _grad_mode.no_grad():
        vd = v.detach()
        err = _ops.clip(eps * _linalg.cond(vd), eps, 1.0)
        finite = _ops.all(_ops.isfinite(f.detach()))
        err = _ops.where(finite, err, _creation.asarray(np.inf, device=err.device))
        imag = _ops.max(_ops.abs(_ops.imag(f.detach()))) if a.dtype.kind != "c" else None
    try:  # inside vmap a batch has no single value: no message, errest a tensor
        err_value = float(err)
        real = imag is not None and float(imag) <= 1e6 * eps
    except RuntimeError:  # (a real A whose f(A) may be complex in some batch element: the
        err_value = None  # complex result, never a real part that drops an imaginary one)
        real = False
    if real:
        f = _ops.real(f)
    if err_value is None:
        return f if disp else (f, err)
    if disp:
        if err_value > 1000 * eps:
            print("funm result may be inaccurate, approximate err =", err_value)
        return f
    return f, err_value


def _traced(x):
    """Whether ``x`` requires grad or is a transform's value (a grad level's or vmap's
    tensor, or one carrying a forward-mode tangent)."""
    from ..core.tensor import Tensor, innermost_level
    if not isinstance(x, Tensor):
        return False
    return type(x) is not Tensor or x.requires_grad or innermost_level((x,)) is not None


def schur(a, output="real", lwork=None, overwrite_a=False, sort=None, check_finite=True):
    """Schur decomposition ``a = Z T Z^H``, as ``scipy.linalg.schur``: values only.

    Computed by SciPy on the host (for a tensor on a GPU too; the results come back to its
    device). Returns ``(T, Z)``, or ``(T, Z, sdim)`` with ``sort`` (SciPy's ``'lhp'``,
    ``'rhp'``, ``'iuc'``, ``'ouc'`` or a callable, which gets NumPy values). ``output='real'``
    gives the real Schur form (2 x 2 blocks for complex pairs) of a real ``a``,
    ``'complex'`` the triangular one.

    Not differentiable: the Schur vectors are not unique (a unitary diagonal freedom, and
    any ordering of the eigenvalues), so ndgrad does not define a gradient. An ``a`` that
    requires grad, or a transform's value (``grad``, ``jvp``, ``vmap`` ...), raises
    ``NotImplementedError``: use :func:`ndgrad.linalg.eig` / :func:`~ndgrad.linalg.eigvals`
    (differentiable) for the eigenvalues, :func:`funm` for matrix functions, or
    ``a.detach()`` for the values alone.

    Examples
    --------
    >>> import ndgrad
    >>> t, z = ndgrad.linalg.schur(ndgrad.tensor([[1.0, 2.0], [0.0, 3.0]]))
    >>> t
    tensor([[1., 2.],
            [0., 3.]])
    >>> z
    tensor([[1., 0.],
            [0., 1.]])
    """
    import scipy.linalg
    if _traced(a):
        raise NotImplementedError(
            "linalg.schur gives values only: it is not differentiable and does not run "
            "inside transforms (grad, jacrev, jvp, vmap ...). For derivatives use "
            "ndgrad.linalg.eig or eigvals (eigenvalues, eigenvectors) or ndgrad.linalg.funm "
            "(matrix functions); for the values alone pass a.detach() (outside a transform; "
            "loop over a vmap batch)")
    x = _as(a)
    device = x.device
    host = np.asarray(x.cpu().numpy())
    if host.ndim != 2 or host.shape[0] != host.shape[1]:
        raise ValueError(f"linalg.schur: a must be a square 2-D matrix, got shape "
                         f"{host.shape}")
    res = scipy.linalg.schur(host, output=output, lwork=lwork, overwrite_a=False, sort=sort,
                             check_finite=check_finite)
    out = tuple(_creation.asarray(r, device=device) for r in res[:2])
    return out + (int(res[2]),) if sort is not None else out


def polar(a, side="right"):
    """Polar decomposition, as ``scipy.linalg.polar``: ``a = u p`` (``side='right'``) or
    ``a = p u`` (``'left'``), ``u`` with orthonormal columns (rows), ``p`` Hermitian positive
    semidefinite. Through :func:`ndgrad.linalg.svd` ``a = W S V^H``: ``u = W V^H``,
    ``p = V S V^H`` (right) or ``W S W^H`` (left); differentiable in ``a`` where its singular
    values are distinct.

    Examples
    --------
    >>> import ndgrad
    >>> u, p = ndgrad.linalg.polar(ndgrad.tensor([[2.0, 0.0], [0.0, -3.0]]))
    >>> u
    tensor([[ 1.,  0.],
            [ 0., -1.]])
    >>> p
    tensor([[2., 0.],
            [0., 3.]])
    """
    if side not in ("right", "left"):
        raise ValueError(f"linalg.polar: side must be 'right' or 'left', got {side!r}")
    a = _float(a)
    if a.ndim != 2:
        raise ValueError(f"linalg.polar: a must be a 2-D matrix, got shape {tuple(a.shape)}")
    w, s, vh = _linalg.svd(a, full_matrices=False)
    u = w @ vh
    p = (_mH(vh) * s) @ vh if side == "right" else (w * s) @ _mH(w)
    return u, p


# ------------------------------------------------------------------------- special matrices
def _vector(name, x):
    x = _as(x)
    return x.reshape(-1) if x.ndim != 1 else x


def toeplitz(c, r=None):
    """Toeplitz matrix with first column ``c`` and first row ``r`` (``r[0]`` is ignored;
    ``r=None`` gives ``conj(c)``, a Hermitian matrix), as ``scipy.linalg.toeplitz``.
    Differentiable in the entries of ``c`` and ``r`` (a gather).

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.linalg.toeplitz(ndgrad.tensor([1.0, 2.0, 3.0]), ndgrad.tensor([1.0, 4.0]))
    tensor([[1., 4.],
            [2., 1.],
            [3., 2.]])
    """
    c = _vector("toeplitz", c)
    r = (_ops.conj(c) if c.dtype.kind == "c" else c) if r is None else _vector("toeplitz", r)
    m, n = c.shape[0], r.shape[0]
    vals = _ops.concatenate([_ops.flip(c), r[1:]])
    i, j = np.indices((m, n))
    return vals[m - 1 - i + j]


def circulant(c):
    """Circulant matrix with first column ``c`` (``C[i, j] = c[(i - j) % n]``), as
    ``scipy.linalg.circulant``. Differentiable in the entries of ``c``.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.linalg.circulant(ndgrad.tensor([1.0, 2.0, 3.0]))
    tensor([[1., 3., 2.],
            [2., 1., 3.],
            [3., 2., 1.]])
    """
    c = _vector("circulant", c)
    n = c.shape[0]
    i, j = np.indices((n, n))
    return c[(i - j) % n]


def block_diag(*arrs):
    """Block diagonal matrix of the given arrays, as ``scipy.linalg.block_diag`` (a 1-D array
    of length ``n`` is a ``(1, n)`` block, a scalar a ``(1, 1)`` block). Differentiable in
    the entries of every block.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.linalg.block_diag(ndgrad.tensor([[1.0, 2.0]]), ndgrad.tensor(3.0))
    tensor([[1., 2., 0.],
            [0., 0., 3.]])
    """
    if not arrs:
        return _creation.zeros(1, 0)
    blocks = []
    for k, x in enumerate(arrs):
        x = _as(x)
        if x.ndim > 2:
            raise ValueError(f"linalg.block_diag: arguments must have at most 2 dimensions; "
                             f"argument {k} has shape {tuple(x.shape)}")
        blocks.append(x.reshape(1, -1) if x.ndim < 2 else x)
    dtype = _array_api.result_type(*blocks)
    blocks = [b.astype(dtype) for b in blocks]
    total = sum(b.shape[1] for b in blocks)
    rows, left = [], 0
    for b in blocks:
        rows.append(_ops.pad(b, ((0, 0), (left, total - left - b.shape[1]))))
        left += b.shape[1]
    return _ops.concatenate(rows)


def eigh_tridiagonal(d, e, eigvals_only=False, select="a", select_range=None,
                     check_finite=True, tol=0.0, lapack_driver="auto"):
    """Eigenvalues (and eigenvectors) of the real symmetric tridiagonal matrix with diagonal
    ``d`` and off-diagonal ``e``, as ``scipy.linalg.eigh_tridiagonal``.

    :func:`ndgrad.linalg.eigh` of the assembled matrix: differentiable in ``d`` and ``e``
    (eigenvectors where the eigenvalues are distinct; their signs may differ from SciPy's).
    Only ``select='a'`` (all eigenvalues) is supported.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.linalg.eigh_tridiagonal(ndgrad.tensor([2.0, 2.0]), ndgrad.tensor([1.0]),
    ...                                eigvals_only=True)
    tensor([1., 3.])
    """
    if select != "a":
        raise NotImplementedError("linalg.eigh_tridiagonal: only select='a' is supported; "
                                  "select the eigenvalues from the result instead")
    d, e = _float(d), _float(e)
    if d.ndim != 1 or e.ndim != 1 or e.shape[0] != d.shape[0] - 1:
        raise ValueError(f"linalg.eigh_tridiagonal: d must be 1-D of length n and e of "
                         f"length n - 1; got shapes {tuple(d.shape)} and {tuple(e.shape)}")
    a = _ops.diag(d) + _ops.diag(e, k=1) + _ops.diag(e, k=-1)
    if eigvals_only:
        return _linalg.eigvalsh(a)
    w, v = _linalg.eigh(a)
    return w, v


# ------------------------------------------------------------------ the assembled namespace
globals().update(_ops.NAMESPACED["linalg"])
__test__ = _ops.doctests(_ops.NAMESPACED["linalg"])  # their examples, for --doctest-modules

# array-API linalg names with the top-level semantics: the same functions
_SHARED = ("matmul", "matrix_transpose", "outer", "tensordot", "vecdot")
globals().update({_name: _ops.PUBLIC[_name] for _name in _SHARED})

__all__ = sorted({_n for _n in _ops.NAMESPACED["linalg"] if not _n.startswith("_")} |
                set(_SHARED) | set(_SCIPY)) + [
    "LinAlgError", "EighResult", "EigResult", "QRResult", "SVDResult", "LstsqResult",
    "SlogdetResult"]
