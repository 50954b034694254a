"""
Newton's method on the 2-D Bratu problem with a colored sparse Jacobian
=======================================================================

The Bratu problem, ``-Δu = λ e^u`` on the unit square with ``u = 0`` on the boundary, is a
classic test of nonlinear solvers (combustion, the Gelfand problem). With the 5-point
finite-difference Laplacian on an ``n x n`` grid of interior points the residual couples
each unknown to its four neighbours only, so its ``n² x n²`` Jacobian has at most 5
nonzeros per row.

:func:`ndgrad.func.jacobian_sparsity` finds that pattern from the residual's code,
:func:`ndgrad.func.coloring` groups the columns that share no row, and
:func:`ndgrad.func.sparse_jacfwd` computes the exact Jacobian with one batched
forward-mode pass of as many Jacobian-vector products as there are colors (5, whatever
``n`` is) instead of ``n²``. Newton's method then solves with SciPy's sparse LU.
"""

from __future__ import annotations

import os

import matplotlib.pyplot as plt
import numpy as np
import scipy.sparse.linalg as spla

import ndgrad
from ndgrad.func import coloring, jacobian_sparsity, sparse_jacfwd

n = 12 if os.environ.get("NDGRAD_EXAMPLE_SMALL") else 64
lam = 6.0  # below the fold (about 6.81), where the lower branch of solutions exists
h = 1.0 / (n + 1)


def residual(u):
    """F(u) = -Δ_h u - λ e^u at the interior points (u flattened, C order)."""
    U = u.reshape(n, n)
    P = ndgrad.pad(U, 1)  # the zero boundary values
    lap = (P[2:, 1:-1] + P[:-2, 1:-1] + P[1:-1, 2:] + P[1:-1, :-2] - 4 * U) / h ** 2
    return (-lap - lam * ndgrad.exp(U)).reshape(-1)


# %%
# The pattern and its coloring
# ----------------------------
# The pattern comes from one run of the residual, without derivatives. The fewest colors a
# column coloring can have is the largest number of nonzeros in one row: columns that meet
# in a row must differ. The 5-point stencil reaches that bound.
u0 = ndgrad.zeros(n * n)
pattern = jacobian_sparsity(residual, u0)
col = coloring(pattern)
colors = np.asarray(col.colors)
ncolors = col.ncolors
lower_bound = int(np.diff(pattern.indptr).max())
print(f"grid {n} x {n}: Jacobian {pattern.shape[0]} x {pattern.shape[1]}, "
      f"{pattern.nnz} nonzeros")
print(f"colors: {ncolors}, lower bound (largest row count): {lower_bound}")

# %%
# Newton's method
# ---------------
# ``sparse_jacfwd`` colors the pattern once and returns a function giving the exact Jacobian
# as a ``scipy.sparse.csr_array`` at each iterate.
jac = sparse_jacfwd(residual, pattern)
u = np.zeros(n * n)
residual_norms = []
for it in range(20):
    F = residual(ndgrad.tensor(u)).numpy()
    residual_norms.append(np.linalg.norm(F, np.inf))
    print(f"Newton step {it}: max |F(u)| = {residual_norms[-1]:.3e}")
    if residual_norms[-1] < 1e-10:
        break
    J = jac(ndgrad.tensor(u))
    u = u - spla.spsolve(J.tocsc(), F)
residual_norms = np.array(residual_norms)
J = jac(ndgrad.tensor(u)).toarray()  # the Jacobian at the solution, for the test
solution = u.reshape(n, n)
print(f"max u = {solution.max():.6f}")

# %%
# The figures: the pattern colored by column group, and the solution
# ------------------------------------------------------------------
# Each nonzero of the pattern is drawn in the color of its column's group: the columns of one
# color never share a row, so one Jacobian-vector product with their summed unit vectors
# recovers all of them.
rows, cols = pattern.nonzero()
fig, (ax0, ax1, ax2) = plt.subplots(1, 3, figsize=(13, 4.2))
ax0.scatter(cols, rows, c=colors[cols], cmap="tab10", vmin=0, vmax=9, s=4 if n < 20 else 0.3,
            marker="s")
ax0.set_xlim(-0.5, n * n - 0.5)
ax0.set_ylim(n * n - 0.5, -0.5)
ax0.set_aspect("equal")
ax0.set_title(f"Jacobian pattern, {ncolors} colors (lower bound {lower_bound})")
ax1.semilogy(residual_norms, "o-")
ax1.set_xlabel("Newton iteration")
ax1.set_ylabel("max |F(u)|")
ax1.set_title("Newton residuals")
im = ax2.imshow(solution, origin="lower", extent=(h, 1 - h, h, 1 - h), cmap="viridis")
fig.colorbar(im, ax=ax2)
ax2.set_title(f"u, λ = {lam}")
fig.tight_layout()
plt.show()
