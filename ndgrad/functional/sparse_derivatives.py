"""Sparse Jacobians and Hessians by coloring: ``sparse_jacobian``, ``sparse_jacfwd``,
``sparse_jacrev``, ``sparse_hessian`` and ``coloring`` (``ndgrad.func``).

Note [Compressed derivatives]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
Columns of a Jacobian ``J`` (m x n) that share no nonzero row can be summed without losing an
entry: with the 0/1 seed matrix ``S`` (n x c) of a column coloring, ``J @ S`` holds every
entry of ``J`` (``J[i, j] = (J @ S)[i, color(j)]``), and it is ``c`` jvps, one per color, run
as one batched pass (``vmap`` over the seed columns). Reverse mode does the same with rows:
``Sᵀ J`` by ``c`` vjps. ``mode="auto"`` takes whichever needs fewer products. A symmetric
Hessian needs fewer colors still: a star coloring, with ``H @ S`` from ``c`` Hessian-vector
products (forward over reverse). The pattern comes from :func:`jacobian_sparsity`
(:func:`hessian_sparsity`) unless given; patterns and colorings live on the host (SciPy),
the products run where ``x`` is; the results are ``scipy.sparse.csr_array``.
"""

from __future__ import annotations

import numpy as np

from ..core.tensor import Tensor, host_array as _host
from .sparsity import hessian_sparsity, jacobian_sparsity
from .transforms import grad, jvp, vjp
from .vmap import vmap

__all__ = ["sparse_jacobian", "sparse_jacfwd", "sparse_jacrev", "sparse_hessian", "coloring"]

_MODES = ("auto", "forward", "reverse")


def coloring(pattern, kind="column", order="best"):
    """A coloring of a sparsity pattern (``scipy.sparse`` or dense booleans): ``kind`` is
    "column" (one jvp per color), "row" (one vjp per color) or "star" (a symmetric pattern:
    one Hessian-vector product per color); ``order`` "best" (several orderings, stopping at
    the first that reaches the lower bound of the densest row's nonzeros; Note [The best
    coloring] in functional/coloring.py), "natural", "largest_first", "smallest_last",
    "incidence_degree" or "dsatur". Never more colors than SciPy's ``group_columns``.

    Returns
    -------
    Coloring
        ``colors``, ``ncolors``, ``seed_matrix()``, ``groups()``, ``decompress(compressed,
        pattern)`` (Note [Compressed derivatives]).

    Examples
    --------
    >>> import numpy as np
    >>> from ndgrad.func import coloring
    >>> tridiagonal = np.abs(np.subtract.outer(np.arange(6), np.arange(6))) <= 1
    >>> c = coloring(tridiagonal)
    >>> c.ncolors, c.colors.tolist()
    (3, [1, 2, 0, 1, 2, 0])
    """
    from . import coloring as _coloring
    return _coloring.coloring(pattern, kind=kind, order=order)


def _order(how):
    if how == "greedy":
        return "best"
    return how


def _check(f, x, who):
    if not callable(f):
        raise TypeError(f"{who}: expected a function, got {type(f).__name__}")
    if not isinstance(x, Tensor):
        raise TypeError(f"{who}: x must be a Tensor, got {type(x).__name__}")
    if x.dtype.kind not in "f":
        raise TypeError(f"{who}: x must be a real floating-point Tensor, got dtype {x.dtype}")


def _pattern(sparsity, m, n, who):
    import scipy.sparse as sp
    P = sp.csr_array(sparsity, dtype=bool)
    if P.shape != (m, n):
        raise ValueError(f"{who}: the sparsity pattern has shape {P.shape}, but the Jacobian "
                         f"is {(m, n)} (f(x).size x x.size)")
    return P


def _seeds(col, shape, dtype, device):
    """The seed vectors of a coloring, ``(ncolors, *shape)``, on ``device``."""
    from ..core.creation import asarray
    S = col.seed_matrix(dtype=np.dtype(dtype)).T.reshape((col.ncolors,) + tuple(shape))
    return asarray(np.ascontiguousarray(S), device=device)


class _Plan:
    """A pattern and its colorings, computed once (``sparse_jacfwd``/``sparse_jacrev``)."""

    def __init__(self, pattern, mode, how):
        from . import coloring as _coloring
        self.pattern = pattern
        order = _order(how) if isinstance(how, str) else None
        self.forward = self.reverse = None
        if mode in ("auto", "forward"):
            self.forward = how if not isinstance(how, str) and how.kind == "column" else \
                _coloring.column_coloring(pattern, order=order)
        if mode in ("auto", "reverse"):
            self.reverse = how if not isinstance(how, str) and how.kind == "row" else \
                _coloring.row_coloring(pattern, order=order)
        if mode == "auto":
            use_rev = self.reverse.ncolors < self.forward.ncolors
            self.mode = "reverse" if use_rev else "forward"
        else:
            self.mode = mode
        self.coloring = self.forward if self.mode == "forward" else self.reverse
        self.recover = self.coloring.recovery(pattern)  # (the index work, once)
        self.seeds = {}

    def seed(self, shape, dtype, device):
        """The seed vectors ``(ncolors, *shape)`` on ``device`` (cached)."""
        key = (tuple(shape), str(dtype), str(device))
        if key not in self.seeds:
            self.seeds[key] = _seeds(self.coloring, shape, dtype, device)
        return self.seeds[key]

    def __call__(self, f, x, args):
        m, n = self.pattern.shape
        col = self.coloring
        if col.ncolors == 0:
            import scipy.sparse as sp
            return sp.csr_array((m, n), dtype=np.dtype(x.dtype))
        if self.mode == "forward":
            def column(v):
                return jvp(lambda x: f(x, *args), (x,), (v,))[1].reshape(-1)
            seeds = self.seed(x.shape, x.dtype, x.device)
            compressed = _host(vmap(column)(seeds)).reshape(col.ncolors, m).T
        else:
            y, pullback = vjp(lambda x: f(x, *args), x)
            if y.numel() != m:
                raise ValueError(f"the function's output has {y.numel()} elements, but the "
                                 f"sparsity pattern has {m} rows")
            cot = self.seed(y.shape, y.dtype, y.device)
            compressed = _host(vmap(lambda c: pullback(c)[0].reshape(-1))(cot))
        return self.recover(compressed)


def _mode(mode, who):
    if mode not in _MODES:
        raise ValueError(f"{who}: mode must be one of {_MODES}, got {mode!r}")


def sparse_jacobian(f, x, *args, sparsity=None, coloring="greedy", mode="auto"):
    """The Jacobian of ``f`` at ``x`` as a ``scipy.sparse.csr_array``, from one batched pass
    of as many jvps (vjps) as a coloring of its pattern has colors (Note [Compressed
    derivatives]).

    Parameters
    ----------
    f : callable
        ``f(x, *args) -> Tensor`` written with ndgrad operations (any output shape: the rows
        are its elements in C order).
    x : Tensor
        A real floating-point tensor (any shape: the columns are its elements in C order).
    *args
        Constants passed to ``f``.
    sparsity : scipy.sparse matrix or array_like of bool, optional
        The pattern, ``(f(x).size, x.size)``; by default :func:`jacobian_sparsity` finds it.
    coloring : str or Coloring
        "greedy" (the best of the greedy orders), an order name (see :func:`coloring`), or a
        precomputed column (row) coloring of the pattern.
    mode : {"auto", "forward", "reverse"}
        Column coloring with jvps, row coloring with vjps, or the one with fewer colors.

    Returns
    -------
    scipy.sparse.csr_array
        Shape ``(f(x).size, x.size)``, exact (no finite differences), the pattern's entries.
        Computed on host arrays: not differentiable further.

    Examples
    --------
    >>> import numpy as np
    >>> import ndgrad
    >>> from ndgrad.func import sparse_jacobian
    >>> def residual(u):
    ...     p = ndgrad.pad(u, 1)
    ...     return p[2:] - 2 * u + p[:-2] + ndgrad.exp(u)
    >>> J = sparse_jacobian(residual, ndgrad.zeros(5))
    >>> J.toarray()
    array([[-1.,  1.,  0.,  0.,  0.],
           [ 1., -1.,  1.,  0.,  0.],
           [ 0.,  1., -1.,  1.,  0.],
           [ 0.,  0.,  1., -1.,  1.],
           [ 0.,  0.,  0.,  1., -1.]])
    """
    who = "sparse_jacobian"
    _check(f, x, who)
    _mode(mode, who)
    if sparsity is None:
        P = jacobian_sparsity(f, x, *args)
    else:
        with _no_record():
            m = f(x, *args).numel()
        P = _pattern(sparsity, m, x.numel(), who)
    return _Plan(P, mode, coloring)(f, x, args)


def _no_record():
    from ..core.grad_mode import no_grad
    return no_grad()


def _reusable(f, sparsity, coloring, mode, who):
    if not callable(f):
        raise TypeError(f"{who}: expected a function, got {type(f).__name__}")
    if sparsity is None:
        raise TypeError(f"{who}: pass the Jacobian's sparsity pattern (e.g. from "
                        "ndgrad.func.jacobian_sparsity); sparse_jacobian finds it per call")
    import scipy.sparse as sp
    plan = _Plan(sp.csr_array(sparsity, dtype=bool), mode, coloring)

    def jac(x, *args):
        _check(f, x, who)
        m, n = plan.pattern.shape
        if x.numel() != n:
            raise ValueError(f"{who}: x has {x.numel()} elements, but the pattern has {n} "
                             "columns")
        return plan(f, x, args)
    jac.coloring = plan.coloring
    jac.ncolors = plan.coloring.ncolors
    jac.sparsity = plan.pattern
    jac.__name__ = f"{who}({getattr(f, '__name__', 'f')})"
    return jac


def sparse_jacfwd(f, sparsity, *, coloring="greedy"):
    """A function ``x -> J(x)`` (``scipy.sparse.csr_array``) with the column coloring of
    ``sparsity`` computed once: one batched pass of ``ncolors`` jvps per call. The function
    has ``coloring``, ``ncolors`` and ``sparsity`` attributes.

    Examples
    --------
    >>> import ndgrad
    >>> from ndgrad.func import jacobian_sparsity, sparse_jacfwd
    >>> f = lambda u: u[1:] * u[:-1]
    >>> jac = sparse_jacfwd(f, jacobian_sparsity(f, ndgrad.ones(4)))
    >>> jac.ncolors
    2
    >>> jac(ndgrad.tensor([1.0, 2.0, 3.0, 4.0])).toarray()
    array([[2., 1., 0., 0.],
           [0., 3., 2., 0.],
           [0., 0., 4., 3.]])
    """
    return _reusable(f, sparsity, coloring, "forward", "sparse_jacfwd")


def sparse_jacrev(f, sparsity, *, coloring="greedy"):
    """As :func:`sparse_jacfwd` with a row coloring and ``ncolors`` vjps per call (fewer
    products for patterns with dense columns, such as an arrowhead's)."""
    return _reusable(f, sparsity, coloring, "reverse", "sparse_jacrev")


def sparse_hessian(f, x, *args, sparsity=None, coloring="greedy"):
    """The Hessian of a scalar ``f`` at ``x`` as a ``scipy.sparse.csr_array``, from a star
    coloring of its pattern and one batched pass of ``ncolors`` Hessian-vector products
    (forward over reverse; Note [Compressed derivatives]).

    Parameters
    ----------
    f : callable
        ``f(x, *args) -> 0-d Tensor``.
    x : Tensor
    *args
        Constants.
    sparsity : scipy.sparse matrix or array_like of bool, optional
        The symmetric pattern ``(x.size, x.size)``; by default :func:`hessian_sparsity`.
    coloring : str or Coloring
        "greedy", an order name, or a precomputed star coloring.

    Examples
    --------
    >>> import ndgrad
    >>> from ndgrad.func import sparse_hessian
    >>> energy = lambda u: ((u[1:] - u[:-1]) ** 2).sum() + (u ** 4).sum() / 12
    >>> sparse_hessian(energy, ndgrad.ones(4)).toarray()
    array([[ 3., -2.,  0.,  0.],
           [-2.,  5., -2.,  0.],
           [ 0., -2.,  5., -2.],
           [ 0.,  0., -2.,  3.]])
    """
    who = "sparse_hessian"
    _check(f, x, who)
    n = x.numel()
    if sparsity is None:
        P = hessian_sparsity(f, x, *args)
    else:
        P = _pattern(sparsity, n, n, who)
    import scipy.sparse as sp
    if not isinstance(coloring, str):
        col = coloring
    else:
        from . import coloring as _coloring
        col = _coloring.star_coloring(P, order=_order(coloring))
    if col.ncolors == 0:
        return sp.csr_array((n, n), dtype=np.dtype(x.dtype))
    seeds = _seeds(col, x.shape, x.dtype, x.device)
    g = grad(lambda x: f(x, *args))

    def hvp(v):
        return jvp(g, (x,), (v,))[1].reshape(-1)
    compressed = _host(vmap(hvp)(seeds)).reshape(col.ncolors, n).T
    return col.decompress(compressed, P)
