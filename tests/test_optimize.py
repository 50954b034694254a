"""ndgrad.optimize: SciPy's solvers with ndgrad's derivatives, solutions differentiable in
``args`` by the implicit function theorem.

References: closed forms (the quadratic's minimiser, A^-1 b) and central finite differences
of re-solves at tight tolerance; ndgrad.checks.gradcheck on a minimiser.
"""

from __future__ import annotations

import numpy as np
import pytest

import ndgrad as nd
from ndgrad import optimize
from ndgrad.checks import gradcheck
from ndgrad.func import grad, hessian, jacfwd, jacrev, jvp, vmap
from support import close, fd_derivative, fd_jacobian, host, loop_messages

RNG = np.random.default_rng(7)
M = RNG.normal(size=(3, 3))
A_NP = M @ M.T + 3 * np.eye(3)
B_NP = RNG.normal(size=3)



MINIMIZE_LOOP = ("vmap: ndgrad.optimize.minimize runs once per batch element (a Python loop): "
                 "custom_root runs its solver on plain values (ndgrad.optimize's solvers are "
                 "SciPy's, on host arrays)")


def quadratic(x, b):
    A = nd.tensor(A_NP)
    return 0.5 * (x * (A @ x)).sum() - (b * x).sum()


@pytest.mark.parametrize("method", ["BFGS", "Newton-CG", "trust-ncg", "trust-exact",
                                    "L-BFGS-B"])
def test_minimize_quadratic_minimiser_and_its_derivative(method):
    b = nd.tensor(B_NP)
    res = optimize.minimize(quadratic, nd.zeros(3), args=(b,), method=method, tol=1e-12)
    assert res.success
    close(res.x, np.linalg.solve(A_NP, B_NP), rtol=1e-6, atol=1e-8)
    sol = lambda b: optimize.minimize(quadratic, nd.zeros(3), args=(b,),  # noqa: E731
                                      method=method, tol=1e-12).x
    close(jacrev(sol)(b), np.linalg.inv(A_NP), rtol=1e-8, atol=1e-10)
    close(jacfwd(sol)(b), np.linalg.inv(A_NP), rtol=1e-8, atol=1e-10)
    br = nd.tensor(B_NP, requires_grad=True)
    sol(br).sum().backward()
    close(br.grad, np.linalg.solve(A_NP, np.ones(3)), rtol=1e-8)


def _logistic_data():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(20, 3))
    y = (X @ np.array([1.0, -2.0, 0.5]) + 0.5 * rng.normal(size=20) > 0).astype(float)
    return X, y


def _logistic_loss(w, lam, X, y):
    z = X @ w
    return (nd.logaddexp(0.0, z) - y * z).mean() + 0.5 * lam * (w * w).sum()


def test_minimize_logistic_regression_derivative_in_the_l2_weight():
    X, y = _logistic_data()
    Xt, yt = nd.tensor(X), nd.tensor(y)

    def w_star(lam):
        return optimize.minimize(_logistic_loss, nd.zeros(3), args=(lam, Xt, yt),
                                 method="trust-ncg", options=dict(gtol=1e-12)).x
    lam = nd.tensor(0.1)
    d = jacrev(w_star)(lam)
    fd = fd_derivative(lambda v: host(w_star(nd.tensor(v))), 0.1, eps=1e-5)
    close(d, fd, rtol=1e-5, atol=1e-8)
    close(jvp(w_star, (lam,), (nd.tensor(1.0),))[1], fd, rtol=1e-5, atol=1e-8)


@pytest.mark.cpu_only("the solvers' device path (SciPy on host arrays, the results moved "
                      "back) runs in this module's other tests on every device")
def test_minimize_gradcheck():
    X, y = _logistic_data()
    Xt = nd.tensor(X)

    def f(lam, yy):
        return optimize.minimize(_logistic_loss, nd.zeros(3), args=(lam, Xt, yy),
                                 method="trust-ncg", options=dict(gtol=1e-12)).x
    assert gradcheck(f, (nd.tensor(0.3, requires_grad=True),
                         nd.tensor(y, requires_grad=True)), atol=1e-7, rtol=1e-6)


def test_minimize_result_is_scipys():
    import scipy.optimize as so
    res = optimize.minimize(quadratic, np.zeros(3), args=(nd.tensor(B_NP),))
    assert isinstance(res, so.OptimizeResult)
    assert isinstance(res.x, nd.Tensor) and res.x.shape == (3,)
    assert res.nit > 0 and res.jac.shape == (3,)


def test_minimize_unconverged_refuses_to_differentiate():
    b = nd.tensor(B_NP, requires_grad=True)
    res = optimize.minimize(quadratic, nd.zeros(3), args=(b,), method="BFGS",
                            options=dict(maxiter=1))
    assert not res.success
    with pytest.raises(RuntimeError, match=r"^ndgrad\.optimize\.minimize: cannot "
                       r"differentiate.*SciPy's message: Maximum number of iterations.*"
                       r"largest residual is"):
        res.x.sum().backward()


def _precision_loss_problem():
    """A smooth 3-parameter logistic loss (mean over 50 points), whose minimizer Newton's
    method finds to rounding level."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 3))
    y = (X @ np.array([1.0, -2.0, 0.5]) + 0.5 * rng.normal(size=50) > 0).astype(float)
    return X, y


def _mean_logistic(w, X, y):
    z = X @ w
    return (nd.logaddexp(0.0, z) - y * z).mean()


def _newton_logistic(X, y):
    """The logistic loss's minimizer by Newton's method in NumPy (closed-form gradient and
    Hessian), to rounding level: the reference for finite differences of re-solves."""
    from scipy.special import expit
    w = np.zeros(X.shape[1])
    for _ in range(40):
        p = expit(X @ w)
        g = X.T @ (p - y) / len(y)
        w = w - np.linalg.solve((X.T * (p * (1 - p))) @ X / len(y), g)
    return w


PRECISION_LOSS = "Desired error not necessarily achieved due to precision loss."
FLAGGED_BUT_EXACT = (r"ndgrad\.optimize\.minimize: SciPy's minimize reported a failure "
                     r"\(SciPy's message: Desired error not necessarily achieved due to "
                     r"precision loss\.\); but the solution satisfies grad_x fun\(x, \*args\) "
                     r"= 0 to rounding level \(largest residual .*\): differentiating it")


def _newton_flagging_precision_loss(fun, x0, args=(), jac=None, **unused):
    """A minimizer in SciPy's protocol for a custom method (``minimize(method=callable)``):
    Newton's method, the Hessian by central differences of ``jac``, to rounding level, then
    the failure SciPy's BFGS reports where its line search can no longer resolve the
    decrease. The flag is set by construction and the point is at rounding level whatever
    the last bits of the gradient: the case Note [Differentiating a flagged solution]
    differentiates."""
    import scipy.optimize as so
    x = np.array(x0, dtype=float)
    for _ in range(12):
        H = fd_jacobian(jac, x)
        x = x - np.linalg.solve((H + H.T) / 2, jac(x))
    return so.OptimizeResult(x=x, fun=fun(x), jac=jac(x), nit=12, success=False, status=2,
                             message=PRECISION_LOSS)


def _check_flagged_solution_derivatives(sol, X, y):
    """jacrev and jacfwd of ``sol(y)`` (each warning that SciPy flagged the solution and
    that it is exact to rounding level) against central differences of Newton re-solves."""
    fd = fd_jacobian(lambda z: _newton_logistic(X, z), y)
    with pytest.warns(RuntimeWarning, match=FLAGGED_BUT_EXACT):
        J = jacrev(sol)(nd.tensor(y))
    close(J, fd, rtol=1e-6, atol=1e-7)
    with pytest.warns(RuntimeWarning, match=FLAGGED_BUT_EXACT):
        close(jacfwd(sol)(nd.tensor(y)), fd, rtol=1e-6, atol=1e-7)


def test_minimize_flagged_precision_loss_is_differentiated_with_a_warning():
    # a solution SciPy flags (BFGS's precision loss) at a point where grad f = 0 to rounding
    # level is differentiated, with a warning quoting SciPy's message: made deterministic by
    # a custom method that flags a Newton solution (a real BFGS run's flag and last steps
    # depend on the last bits of the gradient)
    X, y = _precision_loss_problem()
    Xt = nd.tensor(X)

    def sol(y):
        return optimize.minimize(_mean_logistic, nd.zeros(3), args=(Xt, y),
                                 method=_newton_flagging_precision_loss).x
    res = optimize.minimize(_mean_logistic, nd.zeros(3), args=(Xt, nd.tensor(y)),
                            method=_newton_flagging_precision_loss)
    assert not res.success and res.message == PRECISION_LOSS
    close(res.x, _newton_logistic(X, y), rtol=1e-12, atol=1e-14)
    _check_flagged_solution_derivatives(sol, X, y)


def test_minimize_bfgs_precision_loss_with_gtol_zero_is_differentiated_with_a_warning():
    # a real BFGS run: with gtol=0 its only success would be a gradient of exactly zero, so
    # it stops where its line search loses precision, at rounding level (SciPy's own BFGS
    # with the exact gradient too; perturbing the gradient and the value by up to 64 ulps
    # leaves the flag and a Newton step under 5e-10 of |x|, 30x below the threshold)
    import scipy.optimize as so
    from scipy.special import expit
    X, y = _precision_loss_problem()
    ref = so.minimize(lambda w: (np.logaddexp(0, X @ w) - y * (X @ w)).mean(), np.zeros(3),
                      jac=lambda w: X.T @ (expit(X @ w) - y) / 50, method="BFGS",
                      options=dict(gtol=0.0))
    assert not ref.success and ref.message == PRECISION_LOSS
    Xt = nd.tensor(X)

    def sol(y):
        return optimize.minimize(_mean_logistic, nd.zeros(3), args=(Xt, y), method="BFGS",
                                 options=dict(gtol=0.0)).x
    res = optimize.minimize(_mean_logistic, nd.zeros(3), args=(Xt, nd.tensor(y)),
                            method="BFGS", options=dict(gtol=0.0))
    assert not res.success and res.message == PRECISION_LOSS
    close(res.x, _newton_logistic(X, y), rtol=1e-8)
    _check_flagged_solution_derivatives(sol, X, y)


def test_minimize_truly_failed_solve_is_refused_with_scipys_message():
    X, y = _precision_loss_problem()
    yt = nd.tensor(y, requires_grad=True)
    res = optimize.minimize(_mean_logistic, nd.zeros(3), args=(nd.tensor(X), yt),
                            method="BFGS", options=dict(maxiter=2))
    assert not res.success
    with pytest.raises(RuntimeError, match=r"ndgrad\.optimize\.minimize: cannot differentiate"
                       r".*SciPy's message: Maximum number of iterations has been exceeded.*"
                       r"does not satisfy grad_x fun\(x, \*args\) = 0.*largest residual is "
                       r"\d\.\d\de-\d\d and the Newton step"):
        res.x.sum().backward()
    with pytest.raises(RuntimeError, match="Maximum number of iterations"):
        jvp(lambda y: optimize.minimize(_mean_logistic, nd.zeros(3), args=(nd.tensor(X), y),
                                        method="BFGS", options=dict(maxiter=2)).x,
            (nd.tensor(y),), (nd.ones(50),))


def _scipy_system(x, a):
    return np.array([x[0] ** 3 + x[1] - a[0], np.sin(x[0]) + x[1] ** 2 - a[1]])


def test_root_flagged_but_exact_is_differentiated_with_a_warning():
    # MINPACK's lm with tol=1e-30 reports "xtol is too small" at a root where fun is 0
    a = nd.tensor([2.0, 1.5], requires_grad=True)
    res = optimize.root(_system, nd.tensor([1.0, 1.0]), args=(a,), method="lm", tol=1e-30)
    assert not res.success
    with pytest.warns(RuntimeWarning, match=r"ndgrad\.optimize\.root: .*xtol.*too small.*"
                      r"fun\(x, \*args\) = 0 to rounding level"):
        res.x.sum().backward()
    x = host(res.x)
    J = np.array([[3 * x[0] ** 2, 1.0], [np.cos(x[0]), 2 * x[1]]])  # dx/da = J^-1
    close(a.grad, np.linalg.solve(J.T, np.ones(2)), rtol=1e-10)


@pytest.mark.cpu_only("the solvers' device path (SciPy on host arrays, the results moved "
                      "back) runs in this module's other tests on every device")
@pytest.mark.parametrize("nfev, accepted", [(6, False), (7, True)])
def test_least_squares_flagged_solution_judged_by_its_gradient(nfev, accepted):
    # max_nfev stops SciPy (status 0, a failure) before its tolerances are met; at 7
    # evaluations J^T r is ~5e-10 (the Newton step 4e-10 of |x|: differentiated, and right),
    # at 6 it is ~2e-8 (the step 2e-8 of |x|: refused)
    y = nd.tensor(_Y, requires_grad=True)
    res = optimize.least_squares(_decay, [1.0, 1.0, 0.0], args=(y,), xtol=1e-15,
                                 ftol=1e-15, gtol=1e-15, max_nfev=nfev)
    assert res.status == 0 and not res.success
    if not accepted:
        with pytest.raises(RuntimeError, match=r"ndgrad\.optimize\.least_squares: cannot "
                           r"differentiate.*maximum number of function evaluations.*J\^T r"):
            res.x.sum().backward()
        return
    with pytest.warns(RuntimeWarning, match="least_squares.*to rounding level"):
        res.x.sum().backward()
    fd = fd_jacobian(lambda z: _refit(nd.tensor(z), "linear"), _Y)
    close(y.grad, fd.sum(0), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("who", ["minimize", "root", "root_scalar", "least_squares"])
def test_failed_solves_name_the_public_function(who):
    a = nd.tensor(2.0, requires_grad=True)
    if who == "minimize":
        res = optimize.minimize(lambda x, a: ((x - a) ** 4).sum() + (x * x).sum(),
                                nd.zeros(2), args=(a,), options=dict(maxiter=1))
        x = res.x
    elif who == "root":
        x = optimize.root(lambda x, a: x * x + a, nd.ones(1), args=(a,)).x
    elif who == "root_scalar":
        x = optimize.root_scalar(lambda x, a: x * x + a, x0=1.0, args=(a,), maxiter=3).root
    else:
        x = optimize.least_squares(lambda x, a: nd.exp(x) - a, [5.0], args=(a,),
                                   max_nfev=1).x
    with pytest.raises(RuntimeError, match=rf"^ndgrad\.optimize\.{who}: cannot differentiate "
                       rf"the solution: SciPy's {who} reported a failure"):
        x.sum().backward()


def test_minimize_active_bounds_are_not_implemented():
    b = nd.tensor(B_NP)
    x = np.linalg.solve(A_NP, B_NP)
    inactive = [(v - 1, v + 1) for v in x]
    close(grad(lambda b: optimize.minimize(quadratic, nd.zeros(3), args=(b,), tol=1e-12,
                                           bounds=inactive).x.sum())(b),
          np.linalg.solve(A_NP, np.ones(3)), rtol=1e-7)
    active = [(x[0] + 0.5, None), (None, None), (None, None)]
    res = optimize.minimize(quadratic, nd.zeros(3) + x[0] + 1, args=(b,), bounds=active)
    close(res.x[0], x[0] + 0.5)
    with pytest.raises(NotImplementedError, match=r"^ndgrad\.optimize\.minimize: the bounds "
                       r"are active"):
        grad(lambda b: optimize.minimize(quadratic, nd.zeros(3) + x[0] + 1, args=(b,),
                                         bounds=active).x.sum())(b)


def _system(x, a):
    return nd.stack([x[0] ** 3 + x[1] - a[0], nd.sin(x[0]) + x[1] ** 2 - a[1]])


def test_root_two_dimensional_system():
    a = nd.tensor([2.0, 1.5])
    x0 = nd.tensor([1.0, 1.0])
    sol = lambda a: optimize.root(_system, x0, args=(a,), tol=1e-13).x  # noqa: E731
    x = sol(a)
    close(_system(x, a), np.zeros(2), atol=1e-10)
    fd = fd_jacobian(lambda z: host(sol(nd.tensor(z))), host(a))
    close(jacrev(sol)(a), fd, rtol=1e-6, atol=1e-8)
    close(jacfwd(sol)(a), fd, rtol=1e-6, atol=1e-8)


def test_root_scalar_and_fixed_point():
    f = lambda x, a: x ** 3 - a  # noqa: E731
    for kw in (dict(bracket=(0.0, 5.0)), dict(x0=1.0), dict(x0=1.0, method="halley")):
        sol = lambda a, kw=kw: optimize.root_scalar(f, args=(a,), xtol=1e-14,  # noqa: E731
                                                    **kw).root
        close(sol(nd.tensor(8.0)), 2.0)
        close(grad(sol)(nd.tensor(8.0)), 1 / 12)
    T = lambda x, th: nd.cos(th * x)  # noqa: E731
    th = nd.tensor(0.8)
    x = optimize.fixed_point(T, nd.tensor([0.5]), args=(th,), xtol=1e-14)
    s = np.sin(0.8 * host(x))
    close(jacrev(lambda t: optimize.fixed_point(T, nd.tensor([0.5]), args=(t,),
                                                xtol=1e-14))(th),
          -host(x) * s / (1 + 0.8 * s), rtol=1e-9)


def test_root_unconverged_refuses_to_differentiate():
    f = lambda x, a: x ** 2 + a  # noqa: E731  (no real root)
    a = nd.tensor([1.0], requires_grad=True)
    res = optimize.root(f, nd.tensor([1.0]), args=(a,))
    assert not res.success
    with pytest.raises(RuntimeError, match=r"ndgrad\.optimize\.root: cannot "
                       r"differentiate.*SciPy's message.*largest residual is"):
        res.x.sum().backward()


_T = np.linspace(0.0, 3.0, 12)
_Y = 2.5 * np.exp(-1.3 * _T) + 0.3 + 0.05 * np.random.default_rng(5).normal(size=12)


def _decay(p, y):
    return p[0] * nd.exp(-p[1] * nd.tensor(_T)) + p[2] - y


def _fit(y, **kw):
    return optimize.least_squares(_decay, [1.0, 1.0, 0.0], args=(y,), xtol=1e-15,
                                  ftol=1e-15, gtol=1e-15, **kw).x


def _refit(y, loss):
    """A re-solve polished by Newton steps on the cost (SciPy stops at |grad| ~ 1e-11,
    too loose for finite differences): the finite-difference reference."""
    rho = {"linear": lambda z: z, "soft_l1": lambda z: 2 * (nd.sqrt(1 + z) - 1)}[loss]

    def cost(p):
        return 0.5 * 0.01 * rho((_decay(p, y) / 0.1) ** 2).sum()
    p = _fit(y, loss=loss, f_scale=0.1).detach()
    for _ in range(3):
        p = p - nd.linalg.solve(hessian(cost)(p), grad(cost)(p))
    return host(p)


@pytest.mark.cpu_only("the solvers' device path (SciPy on host arrays, the results moved "
                      "back) runs in this module's other tests on every device")
@pytest.mark.parametrize("loss", ["linear", "soft_l1"])
def test_least_squares_curve_fit_derivative_in_the_data(loss):
    y = nd.tensor(_Y)
    res = optimize.least_squares(_decay, [1.0, 1.0, 0.0], args=(y,), xtol=1e-15,
                                 ftol=1e-15, gtol=1e-15, loss=loss, f_scale=0.1)
    assert res.success and isinstance(res.x, nd.Tensor)
    sol = lambda y: _fit(y, loss=loss, f_scale=0.1)  # noqa: E731
    J = jacrev(sol)(y)
    fd = fd_jacobian(lambda z: _refit(nd.tensor(z), loss), host(y))
    close(J, fd, rtol=1e-7, atol=1e-9)
    v = nd.tensor(np.random.default_rng(1).normal(size=12))
    close(jvp(sol, (y,), (v,))[1], fd @ host(v), rtol=1e-7, atol=1e-9)


def test_least_squares_active_bounds_and_failure_refuse_to_differentiate():
    y = nd.tensor(_Y, requires_grad=True)
    res = optimize.least_squares(_decay, [1.0, 1.0, 0.0], args=(y,),
                                 bounds=([0.0, 0.0, 0.0], [2.0, 10.0, 10.0]))
    assert res.active_mask[0] != 0
    with pytest.raises(NotImplementedError, match="bounds are active"):
        res.x.sum().backward()
    res = optimize.least_squares(_decay, [1.0, 1.0, 0.0], args=(y,), max_nfev=1)
    assert not res.success
    with pytest.raises(RuntimeError, match="SciPy's message: " + res.message[:20]):
        res.x.sum().backward()


def test_minimize_under_vmap_in_both_orders(loop_warnings):
    # one solve per batch element (SciPy cannot batch), each differentiated at its own
    # solution: d x*(b) / d b = A^-1 for the quadratic, so grad of sum(x*) is A^-1 1; vmap
    # warns (once) that it loops, naming minimize
    bs = nd.tensor(RNG.normal(size=(3, 3)))

    def total(b):
        return optimize.minimize(quadratic, nd.zeros(3), args=(b,), tol=1e-12).x.sum()
    expected = np.tile(np.linalg.solve(A_NP, np.ones(3)), (3, 1))
    with pytest.warns(UserWarning, match="vmap: ndgrad.optimize.minimize runs once") as seen:
        close(vmap(grad(total))(bs), expected, rtol=1e-8)
        close(grad(lambda b: vmap(total)(b).sum())(bs), expected, rtol=1e-8)
        xs = vmap(lambda b: optimize.minimize(quadratic, nd.zeros(3), args=(b,),
                                              tol=1e-12).x)(bs)
    close(xs, np.linalg.solve(A_NP, host(bs).T).T, rtol=1e-7, atol=1e-9)
    assert loop_messages(seen) == [MINIMIZE_LOOP]


@pytest.mark.cpu_only("finite differences of many SciPy solves: the values, once")
@pytest.mark.parametrize("which", ["root", "root_scalar", "fixed_point", "least_squares",
                                   "custom_root", "custom_fixed_point"])
def test_gradcheck_of_every_solver(which):
    # first derivatives against central differences of re-solves at tight tolerance, and
    # second derivatives (gradgradcheck) where the implicit rule is itself differentiable
    from ndgrad.checks import gradgradcheck
    from ndgrad.func import custom_fixed_point, custom_root
    T = lambda x, th: nd.cos(th * x)  # noqa: E731
    cube = lambda x, a: x ** 3 - a  # noqa: E731

    def by_bisection(x0, a):
        lo, hi = 0.0, float(a.detach().item()) + 1.0
        for _ in range(200):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if mid ** 3 < float(a.detach().item()) else (lo, mid)
        return nd.tensor([(lo + hi) / 2])

    def by_iteration(x0, th):
        x = x0.detach()
        for _ in range(300):
            x = T(x, th.detach())
        return x
    funcs = {
        "root": (lambda a: optimize.root(_system, nd.tensor([1.0, 1.0]), args=(a,),
                                         tol=1e-12).x, [2.0, 1.5]),
        "root_scalar": (lambda a: optimize.root_scalar(cube, args=(a,), x0=1.0,
                                                       xtol=1e-15).root, 8.0),
        "fixed_point": (lambda th: optimize.fixed_point(T, nd.tensor([0.5]), args=(th,),
                                                        xtol=1e-15), 0.8),
        "least_squares": (_fit, _Y.tolist()),
        "custom_root": (lambda a: custom_root(cube, solve="dense")(by_bisection)(
            nd.tensor([1.0]), a), [8.0]),
        "custom_fixed_point": (lambda th: custom_fixed_point(T)(by_iteration)(
            nd.tensor([0.5]), th), [0.8]),
    }
    f, x0 = funcs[which]
    x = nd.tensor(x0, requires_grad=True)
    # (least squares: SciPy stops at |grad| ~ 1e-11, so a larger step keeps the differences
    # of re-solves above that noise)
    eps, atol = (1e-4, 2e-5) if which == "least_squares" else (1e-6, 1e-6)
    assert gradcheck(f, (x,), eps=eps, atol=atol, rtol=1e-5)
    if which in ("root", "custom_root", "custom_fixed_point"):
        assert gradgradcheck(f, (x,), eps=1e-5, atol=1e-5, rtol=1e-4)


@pytest.mark.cpu_only("NumPy arrays as args, as SciPy takes them: host values")
def test_args_that_are_not_a_tuple_follow_scipy():
    import scipy.optimize as so
    # minimize, root, root_scalar: anything but a tuple is ONE argument
    f_np = lambda x, a: ((x - a) ** 2).sum() + (x ** 4).sum()  # noqa: E731
    f_nd = lambda x, a: ((x - a) ** 2).sum() + (x ** 4).sum()  # noqa: E731
    for a in (0.5, np.array([1.0, 2.0])):
        ref = so.minimize(f_np, np.zeros(2), args=a, method="BFGS", tol=1e-12).x
        close(optimize.minimize(f_nd, nd.zeros(2), args=a, method="BFGS", tol=1e-12).x, ref,
              rtol=1e-7, atol=1e-9)
    # a Tensor as args is one argument, and the solution is differentiable in it:
    # x + 2x^3 = a per entry, so dx/da = 1 / (1 + 6 x^2)
    a = nd.tensor([1.0, 2.0])
    d = grad(lambda a: optimize.minimize(lambda x, a: 0.5 * ((x - a) ** 2).sum()
                                         + 0.5 * (x ** 4).sum(), nd.zeros(2), args=a,
                                         method="BFGS", tol=1e-12).x.sum())(a)
    x = so.minimize(lambda x: 0.5 * ((x - [1.0, 2.0]) ** 2).sum() + 0.5 * (x ** 4).sum(),
                    np.zeros(2), method="BFGS", tol=1e-12).x
    close(d, 1 / (1 + 6 * x ** 2), rtol=1e-7)
    ref = so.root(lambda x, a: x ** 2 - a, [1.0], args=4.0).x
    close(optimize.root(lambda x, a: x ** 2 - a, nd.tensor([1.0]), args=4.0).x, ref)
    ref = so.root_scalar(lambda x, a: x ** 3 - a[0], args=[8.0], bracket=(0, 5), xtol=1e-14)
    close(optimize.root_scalar(lambda x, a: x ** 3 - a[0], args=[8.0], bracket=(0.0, 5.0),
                               xtol=1e-14).root, ref.root)
    close(grad(lambda a: optimize.root_scalar(lambda x, a: x ** 3 - a, args=a, x0=1.0,
                                              xtol=1e-14).root)(nd.tensor(8.0)), 1 / 12)
    # least_squares and fixed_point unpack args as SciPy's fun(x, *args) does: an array's
    # entries are the arguments, a number is refused
    ls = lambda x, a, b: x - a - b  # noqa: E731
    ref = so.least_squares(ls, [1.0], args=np.array([0.5, 1.0])).x
    close(optimize.least_squares(ls, [1.0], args=np.array([0.5, 1.0])).x, ref)
    with pytest.raises(TypeError, match=r"ndgrad\.optimize\.least_squares: args must be a "
                       r"tuple.*calls fun\(x, \*args\).*got float"):
        optimize.least_squares(lambda x, a: x - a, [1.0], args=0.5)
    T = lambda x, a: np.cos(a * x)  # noqa: E731
    ref = so.fixed_point(T, 0.5, args=np.array([0.8]), xtol=1e-14)
    close(optimize.fixed_point(lambda x, a: nd.cos(a * x), nd.tensor(0.5),
                               args=np.array([0.8]), xtol=1e-14), ref)
    with pytest.raises(TypeError, match=r"ndgrad\.optimize\.fixed_point: args must be a tuple"):
        optimize.fixed_point(lambda x, a: nd.cos(a * x), nd.tensor(0.5), args=0.8)


def test_minimize_needs_a_scalar_objective():
    import scipy.optimize as so
    with pytest.raises(ValueError, match=r"^ndgrad\.optimize\.minimize: fun must return a "
                       r"scalar.*shape \(2,\)\. minimize needs a scalar objective.*"
                       r"least_squares"):
        optimize.minimize(lambda x: x * x, nd.tensor([1.0, 2.0]))
    # a one-entry array is a scalar, as for SciPy
    f = lambda x: ((x - 1.5) ** 2).sum(keepdims=True)  # noqa: E731
    close(optimize.minimize(f, nd.tensor([0.0, 0.0])).x,
          so.minimize(f, np.zeros(2)).x, rtol=1e-6)


def _once_square():
    from ndgrad.autograd.function import once_differentiable

    class Square(nd.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        @once_differentiable
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * x * g
    return Square


def test_a_missing_second_derivative_says_why_it_is_needed():
    Square = _once_square()
    y = nd.tensor([1.0, 4.0, 9.0], requires_grad=True)
    res = optimize.least_squares(lambda p, y: Square.apply(p) - y, [2.0, 1.0, 2.0], args=(y,),
                                 xtol=1e-15, ftol=1e-15, gtol=1e-15)
    close(res.x, [1.0, 2.0, 3.0], rtol=1e-10)             # solving needs J only
    with pytest.raises(RuntimeError, match=r"^ndgrad\.optimize\.least_squares: the derivative "
                       r"of the solution comes from grad_x C.*J\^T r = 0.*needs the derivative "
                       r"of the residuals' Jacobian J, so it needs fun's second derivative.*"
                       r"once_differentiable"):
        res.x.sum().backward()
    # an op whose second derivative is not implemented (betainc in its shape argument)
    t = nd.tensor([0.2, 0.5], requires_grad=True)
    res = optimize.least_squares(lambda p, t: nd.special.betainc(p, nd.tensor([2.0, 3.0]), 0.3)
                                 - t, [1.0, 1.0], args=(t,))
    with pytest.raises(NotImplementedError, match=r"^ndgrad\.optimize\.least_squares: .*second "
                       r"derivative.*special\.betainc: the second derivative"):
        res.x.sum().backward()
    b = nd.tensor(1.5, requires_grad=True)
    res = optimize.minimize(lambda x, b: (Square.apply(x - b)).sum(), nd.zeros(2), args=(b,),
                            method="BFGS")
    close(res.x, [1.5, 1.5], rtol=1e-6)
    with pytest.raises(RuntimeError, match=r"^ndgrad\.optimize\.minimize: the derivative of the "
                       r"minimizer comes from grad_x fun.*fun's Hessian.*once_differentiable"):
        res.x.sum().backward()


def test_positional_arguments_bind_as_scipys():
    """minimize(fun, x0, args, method, jac, hess, hessp, bounds, constraints, tol, callback,
    options) and root(fun, x0, args, method, jac, tol, ...) take SciPy's parameters at SciPy's
    positions (bounds was taken as callback, tol as hess; root's tol as callback); jac, hess
    and hessp other than None are TypeErrors naming the function (ndgrad differentiates fun);
    least_squares takes nothing by position after f_scale (SciPy's diff_step is there)."""
    import scipy.optimize as so
    box = [(0.0, 1.0), (0.0, 2.0)]
    ref = so.minimize(lambda x: ((x - 3.0) ** 2).sum(), np.zeros(2), (), "L-BFGS-B", None,
                      None, None, box)
    res = optimize.minimize(lambda x: ((x - 3.0) ** 2).sum(), nd.zeros(2), (), "L-BFGS-B",
                            None, None, None, box)
    close(res.x, ref.x, atol=1e-8)
    close(res.x, [1.0, 2.0], atol=1e-8)
    res = optimize.minimize(lambda x, c: ((x - c) ** 2).sum(), nd.zeros(2), (nd.tensor(0.5),),
                            "BFGS", None, None, None, None, (), 1e-12)
    close(res.x, [0.5, 0.5], atol=1e-10)
    with pytest.raises(TypeError, match=r"^ndgrad\.optimize\.minimize: jac=.*differentiat"):
        optimize.minimize(lambda x: (x ** 2).sum(), nd.ones(2), (), "BFGS", lambda x: 2 * x)
    with pytest.raises(TypeError, match=r"^ndgrad\.optimize\.minimize: hessp=True"):
        optimize.minimize(lambda x: (x ** 2).sum(), nd.ones(2), method="Newton-CG", hessp=True)
    root_ref = so.root(lambda x: x ** 3 - 2.0, np.ones(1), (), "hybr", None, 1e-14)
    sol = optimize.root(lambda x: x ** 3 - 2.0, nd.ones(1), (), "hybr", None, 1e-14)
    close(sol.x, root_ref.x, rtol=1e-14)
    close(sol.x, [2.0 ** (1 / 3)], rtol=1e-13)
    with pytest.raises(TypeError, match=r"^ndgrad\.optimize\.root: jac=.*differentiat"):
        optimize.root(lambda x: x ** 3 - 2.0, nd.ones(1), (), "hybr", lambda x: 3 * x ** 2)
    with pytest.raises(TypeError, match="positional argument"):
        optimize.least_squares(lambda x: x - 1.0, nd.zeros(1), "ndgrad", (-np.inf, np.inf),
                               "trf", 1e-8, 1e-8, 1e-8, 1.0, "linear", 1.0, 1e-3)
    fit = optimize.least_squares(lambda x, c: x - c, nd.zeros(1), max_nfev=50,
                                 args=(nd.tensor([2.0]),))
    close(fit.x, [2.0], atol=1e-8)
