"""ndgrad.sparse.linalg: SciPy's iterative solvers with differentiable solutions.

References: ndgrad.linalg.solve (values, grad, jvp through the dense solve), closed forms
(A⁻¹, -u xᵀ) and ndgrad.checks.gradcheck.
"""

from __future__ import annotations

import numpy as np
import pytest

import ndgrad as nd
from ndgrad.checks import gradcheck
from ndgrad.func import grad, jacfwd, jacrev, jvp
from ndgrad.sparse.linalg import bicgstab, cg, gmres, minres
from support import close, host

RNG = np.random.default_rng(11)
N = 5
_M = RNG.normal(size=(N, N))
SPD = _M @ _M.T + N * np.eye(N)
NONSYM = _M + 4 * N * np.eye(N) / 2
SYM_INDEF = np.diag([3.0, -2.0, 4.0, -5.0, 1.5]) + 0.3 * (_M + _M.T)
B = RNG.normal(size=N)
TIGHT = dict(rtol=1e-13)


def _loss(solver, A, b):
    x, info = solver(A, b, **TIGHT)
    assert info == 0
    return (x * nd.arange(1.0, N + 1)).sum()


def _dense_loss(A, b):
    return (nd.linalg.solve(A, b) * nd.arange(1.0, N + 1)).sum()


@pytest.mark.parametrize("solver, matrix", [(cg, SPD), (gmres, NONSYM), (bicgstab, NONSYM),
                                            (minres, SYM_INDEF)],
                         ids=["cg", "gmres", "bicgstab", "minres"])
def test_values_and_gradients_match_the_dense_solve(solver, matrix):
    A, b = nd.tensor(matrix), nd.tensor(B)
    x, info = solver(A, b, rtol=1e-13)
    assert info == 0 and isinstance(x, nd.Tensor)
    close(x, np.linalg.solve(matrix, B), rtol=1e-9, atol=1e-11)
    gA, gb = grad(lambda A, b: _loss(solver, A, b), argnums=(0, 1))(A, b)
    eA, eb = grad(_dense_loss, argnums=(0, 1))(A, b)
    close(gb, eb, rtol=1e-8, atol=1e-10)
    close(gA, eA, rtol=1e-8, atol=1e-10)
    # .backward() on leaves, too
    At = nd.tensor(matrix, requires_grad=True)
    bt = nd.tensor(B, requires_grad=True)
    _loss(solver, At, bt).backward()
    close(At.grad, eA, rtol=1e-8, atol=1e-10)
    close(bt.grad, eb, rtol=1e-8, atol=1e-10)


def test_forward_mode_matches_reverse_and_the_dense_solve():
    A, b = nd.tensor(NONSYM), nd.tensor(B)
    dA, db = nd.tensor(RNG.normal(size=(N, N))), nd.tensor(RNG.normal(size=N))
    f = lambda A, b: gmres(A, b, rtol=1e-13)[0]  # noqa: E731
    _, t = jvp(f, (A, b), (dA, db))
    _, e = jvp(nd.linalg.solve, (A, b), (dA, db))
    close(t, e, rtol=1e-8, atol=1e-10)
    close(jacfwd(lambda b: f(A, b))(b), np.linalg.inv(NONSYM), rtol=1e-8, atol=1e-10)
    close(jacrev(lambda b: f(A, b))(b), np.linalg.inv(NONSYM), rtol=1e-8, atol=1e-10)


@pytest.mark.cpu_only("scipy.sparse matrices live in host memory")
def test_scipy_sparse_tridiagonal_gradient_in_b():
    import scipy.sparse as sp
    n = 30
    T = sp.diags([-np.ones(n - 1), 2.5 * np.ones(n), -np.ones(n - 1)], [-1, 0, 1],
                 format="csr")
    b = nd.tensor(np.linspace(0.0, 1.0, n), requires_grad=True)
    w = nd.tensor(np.cos(np.arange(n)))
    x, info = cg(T, b, rtol=1e-13)
    assert info == 0
    Td = T.toarray()
    close(x, np.linalg.solve(Td, host(b)), rtol=1e-9, atol=1e-11)
    (x * w).sum().backward()
    close(b.grad, np.linalg.solve(Td.T, host(w)), rtol=1e-9, atol=1e-11)
    # a LinearOperator, nonsymmetric (bicgstab's adjoint solve uses its rmatvec)
    import scipy.sparse.linalg as sla
    U = sp.csr_array(Td + np.diag(0.5 * np.ones(n - 1), 1))
    op = sla.aslinearoperator(U)
    g = grad(lambda b: (bicgstab(op, b, rtol=1e-13)[0] * w).sum())(b.detach())
    close(g, np.linalg.solve(U.toarray().T, host(w)), rtol=1e-8, atol=1e-10)


def _tridiag_matvec(d):
    def matvec(v):
        up = nd.concatenate([v[1:], nd.zeros(1)])
        down = nd.concatenate([nd.zeros(1), v[:-1]])
        return d * v - 0.5 * up - 0.7 * down
    return matvec


def _tridiag_dense(d):
    n = d.shape[0]
    return nd.diag(d) - 0.5 * nd.tensor(np.eye(n, k=1)) - 0.7 * nd.tensor(np.eye(n, k=-1))


def test_matvec_closure_gradient_in_its_parameter():
    d = nd.tensor(np.linspace(2.0, 4.0, N))
    b = nd.tensor(B)
    solve = lambda d, b: gmres(_tridiag_matvec(d), b, rtol=1e-13)[0]  # noqa: E731
    dense = lambda d, b: nd.linalg.solve(_tridiag_dense(d), b)  # noqa: E731
    close(solve(d, b), dense(d, b), rtol=1e-9, atol=1e-11)
    w = nd.arange(1.0, N + 1)
    g = grad(lambda d, b: (solve(d, b) * w).sum(), argnums=(0, 1))(d, b)
    e = grad(lambda d, b: (dense(d, b) * w).sum(), argnums=(0, 1))(d, b)
    close(g[0], e[0], rtol=1e-8, atol=1e-10)
    close(g[1], e[1], rtol=1e-8, atol=1e-10)
    dl = nd.tensor(RNG.normal(size=N))
    close(jvp(lambda d: solve(d, b), (d,), (dl,))[1],
          jvp(lambda d: dense(d, b), (d,), (dl,))[1], rtol=1e-8, atol=1e-10)
    dt = nd.tensor(host(d), requires_grad=True)
    (solve(dt, b) * w).sum().backward()
    close(dt.grad, e[0], rtol=1e-8, atol=1e-10)


@pytest.mark.cpu_only("finite differences of many solves: the values, once")
@pytest.mark.parametrize("solver, matrix", [(cg, SPD), (gmres, NONSYM), (bicgstab, NONSYM),
                                            (minres, SYM_INDEF)],
                         ids=["cg", "gmres", "bicgstab", "minres"])
def test_gradcheck_and_gradgradcheck(solver, matrix):
    from ndgrad.checks import gradgradcheck
    A = nd.tensor(matrix, requires_grad=True)
    b = nd.tensor(B, requires_grad=True)
    f = lambda A, b: solver(A, b, rtol=1e-14)[0]  # noqa: E731
    assert gradcheck(f, (A, b), atol=1e-7, rtol=1e-6)
    assert gradgradcheck(f, (A, b), atol=1e-6, rtol=1e-5)


def test_second_derivative_through_the_adjoint_solve():
    b = nd.tensor(B)
    A = nd.tensor(SPD)
    h = jacfwd(grad(lambda A: _loss(cg, A, b)))(A)
    e = jacfwd(grad(lambda A: _dense_loss(A, b)))(A)
    close(h, e, rtol=1e-7, atol=1e-9)


def test_unconverged_solution_refuses_to_differentiate():
    n = 40
    hard = np.diag(np.logspace(0, 6, n)) + np.diag(np.ones(n - 1), 1)
    A = nd.tensor(hard, requires_grad=True)
    b = nd.tensor(np.ones(n), requires_grad=True)
    x, info = gmres(A, b, maxiter=1, restart=2)
    assert info > 0
    with pytest.raises(RuntimeError, match="did not converge.*info=" + str(info)):
        x.sum().backward()
    with pytest.raises(RuntimeError, match="did not converge"):
        jvp(lambda b: gmres(A.detach(), b, maxiter=1, restart=2)[0], (b.detach(),),
            (nd.ones(n),))


def test_plain_call_and_argument_checks():
    x, info = cg(SPD, B, rtol=1e-12)          # NumPy in, Tensor out
    assert info == 0 and isinstance(x, nd.Tensor) and not x.requires_grad
    close(x, np.linalg.solve(SPD, B), rtol=1e-8)
    x2, _ = cg(nd.tensor(SPD), nd.tensor(B[:, None]), rtol=1e-12)    # (n, 1) right-hand side
    assert x2.shape == (N,)
    with pytest.raises(ValueError, match="A must be"):
        cg(nd.tensor(SPD[:3]), nd.tensor(B))
