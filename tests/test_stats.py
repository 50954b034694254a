"""ndgrad.stats: SciPy's distributions written with ndgrad operations.

References: scipy.stats (values at interior points, the ends of the support, outside it and
at invalid parameters), closed-form scores, and finite differences (ndgrad.checks.gradcheck)
for the derivatives in x and in every shape, loc and scale parameter.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
import scipy.stats as ss

import ndgrad as nd
from ndgrad import stats
from ndgrad.checks import gradcheck, gradgradcheck
from ndgrad.func import grad, jacrev, vmap
from ndgrad.optimize import minimize
from support import close, fd_derivative, host

HOST = "composed of ndgrad ops whose device paths the op suites cover; values on the CPU"
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

# name: (shape parameters, points covering the support's ends and outside it)
CONTINUOUS = {
    "norm": ((), [-np.inf, -3.0, 0.2, 1.5, np.inf]),
    "t": ((2.5,), [-4.0, 0.0, 0.7, 3.0]),
    "cauchy": ((), [-5.0, 0.0, 0.3, 2.0]),
    "laplace": ((), [-3.0, -0.4, 0.0, 0.5, 4.0]),
    "logistic": ((), [-30.0, -1.0, 0.0, 2.5, 40.0]),
    "expon": ((), [-1.0, 0.0, 0.5, 3.0]),
    "gamma": ((2.5,), [-1.0, 0.0, 0.7, 4.0]),
    "beta": ((2.0, 3.5), [-0.1, 0.0, 0.3, 0.9, 1.0, 1.2]),
    "chi2": ((3.0,), [-1.0, 0.0, 0.8, 5.0]),
    "lognorm": ((0.6,), [-1.0, 0.0, 0.5, 1.0, 3.0]),
    "uniform": ((), [-0.5, 0.0, 0.25, 1.0, 1.5]),
    "vonmises": ((2.0,), [-4.0, -np.pi, 0.5, np.pi, 7.0]),
    "gennorm": ((1.5,), [-3.0, -0.5, 0.0, 0.8, 2.0]),
    "weibull_min": ((1.7,), [-1.0, 0.0, 0.5, 2.0]),
    "pareto": ((2.5,), [0.5, 1.0, 1.5, 4.0]),
    "truncnorm": ((-1.0, 2.0), [-1.5, -1.0, 0.3, 2.0, 2.5]),
}
DISCRETE = {
    "poisson": ((2.5,), [-1.0, 0.0, 1.0, 2.5, 3.0, 9.0]),
    "binom": ((5.0, 0.3), [-1.0, 0.0, 2.0, 2.5, 5.0, 6.0]),
    "nbinom": ((3.5, 0.4), [-1.0, 0.0, 2.0, 2.5, 7.0]),
    "geom": ((0.35,), [0.0, 1.0, 2.0, 2.5, 6.0]),
    "bernoulli": ((0.3,), [-1.0, 0.0, 0.5, 1.0, 2.0]),
}
Q = [0.0, 1e-3, 0.3, 0.5, 0.9, 1.0, 1.5]


def _implemented(name, method):
    """Whether ndgrad.stats.<name> has ``method`` (from its declaration: a ``_method`` of its
    own, or a public method other than the moments and the tail methods, which fall back on
    ``_cdf``/``_sf``), and has not declared it missing."""
    dist = getattr(stats, name)
    if method in dist.missing:
        return False
    if method in ("logcdf", "logsf", "std"):
        return _implemented(name, {"logcdf": "cdf", "logsf": "sf", "std": "var"}[method])
    if method in ("ppf", "isf") and isinstance(dist, stats.rv_discrete):
        return True
    private = {"pdf": "logpdf", "pmf": "logpmf"}.get(method, method)
    return hasattr(dist, "_" + private)


@pytest.mark.parametrize("name", sorted(CONTINUOUS))
def test_continuous_values_against_scipy(name):
    shapes, xs = CONTINUOUS[name]
    ours, ref = getattr(stats, name), getattr(ss, name)
    x = np.array(xs)
    kw = dict(loc=0.3, scale=1.7)
    xx = x * 1.7 + 0.3
    for method in ("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"):
        if _implemented(name, method):
            close(getattr(ours, method)(xx, *shapes, **kw),
                  getattr(ref, method)(xx, *shapes, **kw), rtol=1e-10, atol=1e-14)
    for method in ("ppf", "isf"):
        if _implemented(name, method):
            close(getattr(ours, method)(Q, *shapes, **kw), getattr(ref, method)(Q, *shapes, **kw),
                  rtol=1e-10, atol=1e-14)
    for method in ("mean", "var", "std", "entropy"):
        if _implemented(name, method):
            close(getattr(ours, method)(*shapes, **kw), getattr(ref, method)(*shapes, **kw),
                  rtol=1e-10)
    # invalid parameters give nan, like SciPy's
    assert np.isnan(host(ours.logpdf(xx, *shapes, loc=0.3, scale=-1.0))).all()
    assert np.isnan(host(ours.mean(*shapes, scale=0.0)))
    if shapes:
        bad = (3.0, 2.0) if name == "truncnorm" else (-1.0,) + shapes[1:]  # a > b; a < 0
        assert np.isnan(host(ours.logpdf(xx, *bad))).all()
        assert np.isnan(ref.logpdf(xx, *bad)).all()


@pytest.mark.parametrize("name", sorted(DISCRETE))
def test_discrete_values_against_scipy(name):
    shapes, ks = DISCRETE[name]
    ours, ref = getattr(stats, name), getattr(ss, name)
    k = np.array(ks) + 1.0
    for method in ("logpmf", "pmf", "cdf", "logcdf", "sf", "logsf"):
        if _implemented(name, method):
            close(getattr(ours, method)(k, *shapes, loc=1.0),
                  getattr(ref, method)(k, *shapes, loc=1.0), rtol=1e-10, atol=1e-14)
    for method in ("ppf", "isf"):
        close(getattr(ours, method)(Q, *shapes, loc=1.0),
              getattr(ref, method)(Q, *shapes, loc=1.0))
    for method in ("mean", "var", "std", "entropy"):
        if _implemented(name, method):
            close(getattr(ours, method)(*shapes, loc=1.0), getattr(ref, method)(*shapes, loc=1.0),
                  rtol=1e-12)
    bad = (-1.0,) if name == "poisson" else shapes[:-1] + (1.5,)  # p > 1, mu < 0
    assert np.isnan(host(ours.logpmf(k, *bad))).all()
    assert np.isnan(ref.logpmf(k, *bad)).all()


@pytest.mark.cpu_only(HOST)
def test_missing_special_functions_raise_naming_them():
    cases = [(stats.multivariate_normal.cdf, ([0.0, 0.0],), "multivariate normal integral")]
    for fn, args, name in cases:
        with pytest.raises(NotImplementedError, match=name):
            fn(*args)
    with pytest.raises(TypeError, match="shape parameter 'a'"):
        stats.gamma.logpdf(1.0)
    with pytest.raises(TypeError, match="unexpected parameter 'mu'"):
        stats.norm.logpdf(1.0, mu=2.0)


def _req(v):
    return nd.tensor(np.asarray(v, dtype=np.float64), requires_grad=True)


# name: (method, x points inside the support, shapes) for gradcheck in x, shapes, loc, scale
GRADS = [("norm", "logpdf", [-1.0, 0.3, 2.0], ()), ("norm", "logcdf", [-8.0, 0.3, 2.0], ()),
         ("norm", "isf", [0.1, 0.6], ()),
         ("t", "logpdf", [-1.0, 0.3, 2.0], (2.5,)), ("cauchy", "cdf", [-1.0, 0.5], ()),
         ("laplace", "logpdf", [-1.0, 2.0], ()), ("laplace", "logsf", [-1.0, 2.0], ()),
         ("logistic", "logpdf", [-1.0, 2.0], ()), ("logistic", "ppf", [0.2, 0.7], ()),
         ("expon", "logcdf", [0.5, 2.0], ()), ("gamma", "logpdf", [0.5, 2.0], (2.5,)),
         ("beta", "logpdf", [0.2, 0.7], (2.0, 3.5)), ("chi2", "logpdf", [0.5, 2.0], (3.0,)),
         ("lognorm", "logpdf", [0.5, 2.0], (0.6,)), ("lognorm", "sf", [0.5, 2.0], (0.6,)),
         ("uniform", "cdf", [0.4, 0.9], ()), ("vonmises", "logpdf", [-2.0, 0.5], (2.0,)),
         ("gennorm", "logpdf", [-1.0, 0.5], (1.5,)),
         ("weibull_min", "logpdf", [0.5, 2.0], (1.7,)), ("weibull_min", "isf", [0.2, 0.7], (1.7,)),
         ("pareto", "logpdf", [1.5, 3.0], (2.5,)), ("pareto", "cdf", [1.5, 3.0], (2.5,)),
         ("truncnorm", "logpdf", [-0.5, 1.0], (-1.0, 2.0)),
         ("truncnorm", "ppf", [0.2, 0.7], (-1.0, 2.0))]


@pytest.mark.cpu_only(HOST)
@pytest.mark.parametrize("name,method,xs,shapes", GRADS, ids=[f"{g[0]}-{g[1]}" for g in GRADS])
def test_continuous_gradients_in_x_shapes_loc_scale(name, method, xs, shapes):
    fn = getattr(getattr(stats, name), method)
    inputs = (_req(xs), *(_req(s) for s in shapes), _req(0.1), _req(1.3))
    if method in ("ppf", "isf"):  # q is not shifted: keep it in (0, 1)
        def f(q, *rest):
            return fn(q, *rest[:-2], loc=rest[-2], scale=rest[-1])
    else:
        def f(x, *rest):
            return fn(x, *rest[:-2], loc=rest[-2], scale=rest[-1])
    assert gradcheck(f, inputs)


@pytest.mark.cpu_only(HOST)
def test_gammainc_distributions_ppf_isf_and_shape_derivatives():
    # gamma, chi2 and gennorm: ppf / isf through special.gammaincinv / gammainccinv, against
    # SciPy; the cdf, sf, ppf and isf differentiable in the shape (first order) against
    # central differences of SciPy's
    q = np.array([1e-9, 0.01, 0.3, 0.5, 0.8, 0.999, 1 - 1e-9])
    x = np.array([0.3, 1.5, 4.0])
    for name, shape, pts in (("gamma", 2.5, x), ("gamma", 0.4, x), ("chi2", 3.0, x),
                             ("gennorm", 1.5, x - 2.0), ("gennorm", 0.7, x - 2.0)):
        ours, ref = getattr(stats, name), getattr(ss, name)
        for m in ("ppf", "isf"):
            close(getattr(ours, m)(q, shape, loc=0.2, scale=1.3),
                  getattr(ref, m)(q, shape, loc=0.2, scale=1.3), rtol=1e-12)
        for m, at in (("cdf", pts), ("sf", pts), ("ppf", q[1:-1]), ("isf", q[1:-1])):
            fo, fr = getattr(ours, m), getattr(ref, m)
            got = grad(lambda s, fo=fo, at=at: nd.sum(fo(at, s)))(nd.tensor(shape))
            want = fd_derivative(lambda s, fr=fr, at=at: fr(at, s), shape, eps=1e-5).sum()
            close(got, want, rtol=1e-6, atol=1e-9)
    # x, loc, scale and the shape together, reverse and forward mode
    assert gradcheck(lambda x, a, loc, s: stats.gamma.cdf(x, a, loc=loc, scale=s),
                     (_req([0.5, 2.0]), _req(2.5), _req(0.1), _req(1.3)), check_forward_ad=True)
    assert gradcheck(lambda q, df: stats.chi2.isf(q, df), (_req([0.2, 0.7]), _req(3.0)))
    assert gradcheck(lambda q, b: stats.gennorm.ppf(q, b), (_req([0.2, 0.7]), _req(1.5)))
    # at q = 1/2 exactly (the median 0): the slope 1 / pdf(0)
    close(grad(lambda q: stats.gennorm.ppf(q, 1.5))(nd.tensor(0.5)),
          1 / ss.gennorm.pdf(0.0, 1.5), rtol=1e-13)
    # a second derivative in the shape is not implemented, and says so
    g1 = grad(lambda a: stats.gamma.cdf(1.0, a))
    with pytest.raises(NotImplementedError, match="second derivative with respect to a"):
        grad(g1)(nd.tensor(2.0))


@pytest.mark.cpu_only(HOST)
@pytest.mark.parametrize("name", sorted(DISCRETE))
def test_discrete_gradients_in_parameters(name):
    shapes, ks = DISCRETE[name]
    k = np.array({"bernoulli": [0.0, 1.0], "geom": [1.0, 2.0, 4.0]}.get(name, [0.0, 1.0, 3.0]))
    ours = getattr(stats, name)
    fixed = shapes[:-1] if name == "binom" else ()  # binom's n is an integer count
    free = shapes[len(fixed):]
    assert gradcheck(lambda *p: ours.logpmf(k, *fixed, *p), tuple(_req(v) for v in free))
    if _implemented(name, "cdf"):
        assert gradcheck(lambda *p: ours.cdf(k, *fixed, *p), tuple(_req(v) for v in free))
    assert gradcheck(lambda *p: ours.mean(*fixed, *p) + ours.var(*fixed, *p),
                     tuple(_req(v) for v in free))


@pytest.mark.cpu_only(HOST)
def test_moments_and_entropies_are_differentiable():
    assert gradcheck(lambda df, s: stats.t.entropy(df, scale=s) + stats.t.var(df, scale=s),
                     (_req(3.5), _req(1.3)))
    assert gradcheck(lambda a, b: stats.beta.entropy(a, b) + stats.beta.std(a, b),
                     (_req(2.0), _req(3.5)))
    assert gradcheck(lambda a: stats.gamma.entropy(a) + stats.lognorm.entropy(a), (_req(1.7),))
    assert gradcheck(lambda c: stats.weibull_min.var(c) + stats.vonmises.entropy(c)
                     + stats.pareto.var(c + 1) + stats.gennorm.entropy(c), (_req(1.7),))
    assert gradcheck(lambda a, b: stats.truncnorm.var(a, b) + stats.truncnorm.entropy(a, b),
                     (_req(-1.0), _req(2.0)))


def test_dirichlet_against_scipy_and_finite_differences():
    alpha = np.array([2.0, 3.0, 1.5])
    x = np.array([[0.2, 0.5], [0.3, 0.1], [0.5, 0.4]])  # two points, components on axis 0
    close(stats.dirichlet.logpdf(x, alpha), ss.dirichlet.logpdf(x, alpha), rtol=1e-12)
    close(stats.dirichlet(alpha).pdf(x[:2, 0]), ss.dirichlet.pdf(x[:2, 0], alpha), rtol=1e-12)
    for method in ("mean", "var", "entropy"):
        close(getattr(stats.dirichlet, method)(alpha), getattr(ss.dirichlet, method)(alpha),
              rtol=1e-12)
    # x on the simplex: the free coordinates are the first K - 1
    assert gradcheck(lambda x2, a: stats.dirichlet.logpdf(x2, a), (_req(x[:2]), _req(alpha)))
    assert gradcheck(lambda a: stats.dirichlet.entropy(a) + stats.dirichlet.var(a).sum(),
                     (_req(alpha),))
    with pytest.raises(ValueError, match="simplex"):
        stats.dirichlet.logpdf([0.5, 0.6, 0.2], alpha)


def test_norm_scores_match_the_closed_form():
    x = nd.tensor([-1.0, 0.5, 2.0])
    loc, scale = nd.tensor(0.3, requires_grad=True), nd.tensor(1.5, requires_grad=True)
    stats.norm(loc, scale).logpdf(x).sum().backward()
    xn = np.array([-1.0, 0.5, 2.0])
    close(loc.grad, ((xn - 0.3) / 1.5 ** 2).sum())
    close(scale.grad, ((xn - 0.3) ** 2 / 1.5 ** 3 - 1 / 1.5).sum())
    # d/dx logpdf = -(x - loc)/scale^2, through func.grad
    close(grad(lambda x: stats.norm.logpdf(x, 0.3, 1.5).sum())(nd.tensor(xn)),
          -(xn - 0.3) / 1.5 ** 2)


@pytest.mark.cpu_only(HOST)
def test_gradients_outside_the_support_are_zero_not_nan():
    x = _req([-1.0, 0.5, 2.0])  # 2.0 is outside beta's support, -1.0 outside all
    a = _req(2.5)
    (stats.gamma.logpdf(x, a).exp().sum() + stats.beta.pdf(x, a, 2.0).sum()
     + stats.lognorm.pdf(x, a).sum() + stats.expon.cdf(x).sum()).backward()
    assert np.isfinite(host(x.grad)).all() and np.isfinite(host(a.grad))
    assert host(x.grad)[0] == 0.0
    close(host(x.grad)[1:], [ss.gamma.pdf(v, 2.5) * (1.5 / v - 1) for v in (0.5, 2.0)]
          + np.array([ss.beta.pdf(0.5, 2.5, 2.0) * (1.5 / 0.5 - 1 / 0.5), 0.0])
          + np.array([ss.lognorm.pdf(v, 2.5) * (-np.log(v) / 2.5 ** 2 - 1) / v for v in (0.5, 2.0)])
          + ss.expon.pdf([0.5, 2.0]), rtol=1e-10)
    p = _req(0.3)
    stats.binom.logpmf(nd.tensor([-1.0, 2.5, 1.0]), 3, p).exp().sum().backward()
    close(p.grad, ss.binom.pmf(1, 3, 0.3) * (1 / 0.3 - 2 / 0.7), rtol=1e-10)


def test_broadcasting_frozen_and_vmap_over_parameters():
    x = np.linspace(-1.0, 2.0, 3)[:, None]
    loc, scale = np.array([0.0, 0.5]), np.array([[1.0], [2.0], [0.5]])
    close(stats.t(3.0, loc, scale).logpdf(x), ss.t(3.0, loc, scale).logpdf(x), rtol=1e-12)
    assert tuple(stats.norm.logpdf(x, loc).shape) == (3, 2)
    # vmap over (df, scale) pairs against a Python loop
    dfs, scales = nd.tensor([1.5, 3.0, 8.0]), nd.tensor([0.5, 1.0, 2.0])
    xs = nd.tensor([-0.5, 0.4])

    def ll(df, s):
        return stats.t.logpdf(xs, df, scale=s).sum()
    close(vmap(ll)(dfs, scales), [ll(d, s) for d, s in zip(dfs, scales)], rtol=1e-12)
    g = vmap(grad(ll, argnums=(0, 1)))(dfs, scales)
    loop = [grad(ll, argnums=(0, 1))(d, s) for d, s in zip(dfs, scales)]
    close(g[0], [e[0] for e in loop])
    close(g[1], [e[1] for e in loop])


@pytest.mark.cpu_only(HOST)
def test_multivariate_normal_against_scipy_and_finite_differences():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 3))
    cov = a @ a.T + np.eye(3)
    mean = np.array([0.5, -1.0, 0.2])
    x = rng.standard_normal((4, 3))
    ref = ss.multivariate_normal(mean, cov)
    close(stats.multivariate_normal.logpdf(x, mean, cov), ref.logpdf(x), rtol=1e-12)
    close(stats.multivariate_normal(mean, cov).pdf(x[0]), ref.pdf(x[0]), rtol=1e-12)
    close(stats.multivariate_normal.entropy(mean, cov), ref.entropy(), rtol=1e-12)
    close(stats.multivariate_normal.logpdf([0.3, 1.0], 0.1, 2.0),
          ss.multivariate_normal.logpdf([0.3, 1.0], 0.1, 2.0), rtol=1e-12)  # d = 1

    def f(x, m, b):  # cov = b b' + I, symmetric positive definite for every b
        return stats.multivariate_normal.logpdf(x, m, b @ b.T + nd.eye(3))
    assert gradcheck(f, (_req(x[:2]), _req(mean), _req(a)))
    # the score in the mean is cov^-1 (x - mean)
    close(jacrev(lambda m: stats.multivariate_normal.logpdf(x[0], m, cov))(nd.tensor(mean)),
          np.linalg.solve(cov, x[0] - mean), rtol=1e-10)
    with pytest.raises(ValueError, match="cov must have shape"):
        stats.multivariate_normal.logpdf(x, mean, np.eye(2))


@pytest.mark.cpu_only(HOST)
def test_entropy_zscore_and_logsumexp():
    p, q = np.array([[0.2, 1.0], [0.5, 2.0], [0.3, 0.5]]), np.array([[0.3], [0.3], [0.4]])
    close(stats.entropy(p), ss.entropy(p))
    close(stats.entropy(p, q, base=2), ss.entropy(p, q, base=2))
    close(stats.entropy(p, axis=1), ss.entropy(p, axis=1))
    a = np.array([[1.0, 4.0], [2.0, 0.5], [7.0, 1.5]])
    close(stats.zscore(a), ss.zscore(a))
    close(stats.zscore(a, axis=1, ddof=1), ss.zscore(a, axis=1, ddof=1))
    close(stats.zscore(a, axis=None), ss.zscore(a, axis=None))
    assert stats.logsumexp is nd.special.logsumexp
    assert gradcheck(lambda p, q: stats.entropy(p, q), (_req(p), _req(q)))
    assert gradcheck(lambda a: stats.zscore(a, ddof=1), (_req(a),))


@pytest.mark.cpu_only(HOST)
def test_rvs_draw_with_numpys_generator():
    d = stats.gamma(2.0, scale=_req(3.0)).rvs(size=5, random_state=1)
    assert isinstance(d, nd.Tensor) and not d.requires_grad
    close(d, ss.gamma(2.0, scale=3.0).rvs(size=5, random_state=np.random.default_rng(1)))
    close(stats.poisson.rvs(2.0, size=3, random_state=2),
          ss.poisson.rvs(2.0, size=3, random_state=np.random.default_rng(2)))
    mvn = stats.multivariate_normal.rvs([0.0, 1.0], np.eye(2), size=4, random_state=3)
    close(mvn, np.random.default_rng(3).multivariate_normal([0.0, 1.0], np.eye(2), size=4))


@pytest.mark.cpu_only(HOST)
def test_gamma_maximum_likelihood_fit_matches_scipy():
    x = np.random.default_rng(0).gamma(3.0, 2.0, size=400)
    xt = nd.tensor(x)

    def nll(theta):  # log-parametrized: a = exp(theta[0]), scale = exp(theta[1])
        return -stats.gamma.logpdf(xt, nd.exp(theta[0]), scale=nd.exp(theta[1])).sum()
    res = minimize(nll, np.zeros(2), method="BFGS", tol=1e-12)
    a_ref, _, scale_ref = ss.gamma.fit(x, floc=0)
    close(nd.exp(res.x), [a_ref, scale_ref], rtol=1e-4)


@pytest.mark.cpu_only(HOST)
def test_second_order_and_forward_mode():
    from ndgrad.checks import gradgradcheck

    def f(x, df, s):
        return stats.t.logpdf(x, df, loc=0.2, scale=s)
    inputs = (_req([-0.5, 1.5]), _req(2.5), _req(1.3))
    assert gradgradcheck(f, inputs)
    assert gradcheck(lambda x, a: stats.gamma.logpdf(x, a, scale=2.0),
                     (_req([0.5, 3.0]), _req(1.7)), check_forward_ad=True)


def test_betainc_distribution_functions():
    # t, beta, binom and nbinom's cdf, sf, ppf and isf by special.betainc / betaincinv:
    # values against SciPy, derivatives in x, q and p (not in the shape parameters)
    x = np.array([-3.0, -0.7, 0.0, 0.4, 2.5])
    q = np.array([0.01, 0.3, 0.5, 0.8, 0.999])
    k = np.array([-1.0, 0.0, 2.0, 5.0, 9.0, 10.0, 12.0])
    for df in (1.5, 30.0):
        for m in ("cdf", "sf"):
            close(getattr(stats.t, m)(x, df), getattr(ss.t, m)(x, df), rtol=1e-12, atol=1e-15)
        for m in ("ppf", "isf"):
            close(getattr(stats.t, m)(q, df), getattr(ss.t, m)(q, df), rtol=1e-10)
    y = np.array([0.0, 0.1, 0.5, 0.9, 1.0])
    for m, pts in (("cdf", y), ("sf", y), ("ppf", q), ("isf", q)):
        close(getattr(stats.beta, m)(pts, 2.5, 0.7), getattr(ss.beta, m)(pts, 2.5, 0.7),
              rtol=1e-10, atol=1e-15)
    for m in ("cdf", "sf"):
        close(getattr(stats.binom, m)(k, 10, 0.3), getattr(ss.binom, m)(k, 10, 0.3),
              rtol=1e-12, atol=1e-15)
        close(getattr(stats.nbinom, m)(k, 3.5, 0.3), getattr(ss.nbinom, m)(k, 3.5, 0.3),
              rtol=1e-12, atol=1e-15)
    assert gradcheck(lambda v: stats.t.cdf(v, 3.0, loc=0.2, scale=1.5), (_req([-0.7, 0.4]),))
    assert gradcheck(lambda v: stats.t.ppf(v, 3.0), (_req([0.2, 0.8]),))
    assert gradcheck(lambda v: stats.beta.isf(v, 2.5, 0.7), (_req([0.2, 0.8]),))
    assert gradcheck(lambda p: stats.binom.cdf(3, 10, p), (_req([0.3, 0.6]),))
    assert gradcheck(lambda p: stats.nbinom.sf(3, 2.5, p), (_req([0.3, 0.6]),))
    close(grad(lambda v: stats.t.cdf(v, 3.0))(nd.tensor(0.7)), ss.t.pdf(0.7, 3.0),
          rtol=1e-12)
    # the shapes (first order, through special.betainc's derivatives in a and b)
    close(grad(lambda df: stats.t.cdf(0.7, df))(nd.tensor(3.0)),
          fd_derivative(lambda df: ss.t.cdf(0.7, df), 3.0, eps=1e-5), rtol=1e-7)
    close(grad(lambda df: stats.t.ppf(0.9, df))(nd.tensor(3.0)),
          fd_derivative(lambda df: ss.t.ppf(0.9, df), 3.0, eps=1e-5), rtol=1e-7)
    assert gradcheck(lambda a, b: stats.beta.cdf(0.3, a, b) + stats.beta.isf(0.2, a, b),
                     (_req(2.5), _req(0.7)))
    close(grad(lambda n: stats.nbinom.cdf(3, n, 0.3))(nd.tensor(3.5)),
          fd_derivative(lambda n: ss.nbinom.cdf(3, n, 0.3), 3.5, eps=1e-5), rtol=1e-7)


_TAILS = ("cdf", "logcdf", "sf", "logsf", "ppf", "isf")


def _distributions():
    """Every distribution object of ndgrad.stats's namespace that scipy.stats has too."""
    return [n for n in stats.__all__ if hasattr(ss, n) and not isinstance(getattr(stats, n), type)
            and (hasattr(getattr(stats, n), "logpdf") or hasattr(getattr(stats, n), "logpmf"))]


@pytest.mark.cpu_only(HOST)
@pytest.mark.parametrize("name", _distributions())
def test_every_tail_function_scipy_has_is_there_or_declared_missing(name):
    # the list comes from both namespaces: a cdf/logcdf/sf/logsf/ppf/isf that SciPy's
    # distribution has must work in ndgrad's (SciPy's value at a point of the support), or
    # be declared in its `missing` with the reason, which the NotImplementedError quotes
    ours, ref = getattr(stats, name), getattr(ss, name)
    shapes = tuple(getattr(ours, "safe", ()))
    point = ([0.2] if not hasattr(ours, "safe") else
             [float(ref.ppf(0.3, *shapes)), float(ref.ppf(0.8, *shapes))])
    for method in _TAILS:
        if not callable(getattr(ref, method, None)):
            continue
        arg = [0.3, 0.8] if method in ("ppf", "isf") else point
        if method in getattr(ours, "missing", {}):
            why = ours.missing[method]
            assert len(why) > 20
            with pytest.raises(NotImplementedError, match=re.escape(why)):
                getattr(ours, method)(arg, *shapes)
            continue
        close(getattr(ours, method)(arg, *shapes), getattr(ref, method)(arg, *shapes),
              rtol=1e-10, atol=1e-14)


@pytest.mark.cpu_only(HOST)
def test_vonmises_cdf_sf_ppf_isf_against_scipy_and_finite_differences():
    x = np.array([-7.0, -4.0, -np.pi, -1.0, 0.0, 0.5, np.pi, 4.0, 7.0])
    for kappa in (0.01, 0.5, 2.0, 20.0, 49.9, 50.0, 300.0):  # both sides of SciPy's switch
        for m in ("cdf", "sf"):
            close(getattr(stats.vonmises, m)(x, kappa), getattr(ss.vonmises, m)(x, kappa),
                  rtol=1e-12, atol=1e-13)
    close(stats.vonmises.logcdf([-2.0, 1.0, 3.0], 2.0, loc=0.3),
          ss.vonmises.logcdf([-2.0, 1.0, 3.0], 2.0, loc=0.3), rtol=1e-10)
    close(stats.vonmises.logsf([-2.0, 1.0, 3.0], 2.0, scale=1.5),
          ss.vonmises.logsf([-2.0, 1.0, 3.0], 2.0, scale=1.5), rtol=1e-10)
    for m in ("ppf", "isf"):
        close(getattr(stats.vonmises, m)(Q, 2.0, loc=0.3, scale=1.7),
              getattr(ss.vonmises, m)(Q, 2.0, loc=0.3, scale=1.7), rtol=1e-10, atol=1e-12)
    # derivatives: the cdf in x is the density; in kappa, loc, scale, and the ppf's in q and
    # kappa, against central differences of SciPy's
    pts = nd.tensor([-2.0, 0.5, 4.0])
    close(grad(lambda v: stats.vonmises.cdf(v, 2.0).sum())(pts),
          ss.vonmises.pdf(host(pts), 2.0), rtol=1e-11)
    for kappa in (2.0, 60.0):
        close(jacrev(lambda k: stats.vonmises.cdf(pts, k))(nd.tensor(kappa)),
              fd_derivative(lambda k: ss.vonmises.cdf(host(pts), k), kappa, eps=1e-5),
              rtol=1e-6, atol=1e-9)
    q = nd.tensor([0.2, 0.7])
    close(jacrev(lambda k: stats.vonmises.ppf(q, k))(nd.tensor(2.0)),
          fd_derivative(lambda k: ss.vonmises.ppf(host(q), k), 2.0, eps=1e-5), rtol=1e-6)
    close(grad(lambda v: stats.vonmises.isf(v, 2.0).sum())(q),
          fd_derivative(lambda v: ss.vonmises.isf(v, 2.0), host(q), eps=1e-5), rtol=1e-6)
    assert gradcheck(lambda v, k, loc, s: stats.vonmises.cdf(v, k, loc=loc, scale=s),
                     (_req([-2.0, 0.5, 4.0]), _req(2.0), _req(0.1), _req(1.3)))
    assert gradcheck(lambda v, k, loc, s: stats.vonmises.ppf(v, k, loc=loc, scale=s),
                     (_req([0.2, 0.7]), _req(2.0), _req(0.1), _req(1.3)))
    # the ppf's rule calls the ppf again: second derivatives are implicit too
    assert gradgradcheck(lambda v, k: stats.vonmises.ppf(v, k), (_req([0.2, 0.7]), _req(2.0)))


@pytest.mark.cpu_only(HOST)
def test_discrete_ppf_isf_are_scipys_steps_with_zero_derivative(loop_warnings):
    q, mu = _req([0.3, 0.9]), _req(2.5)
    stats.poisson.ppf(q, mu).sum().backward()
    close(q.grad, [0.0, 0.0])
    close(mu.grad, 0.0)
    close(jacrev(lambda p: stats.binom.isf(nd.tensor([0.3, 0.9]), 5.0, p))(nd.tensor(0.3)),
          [0.0, 0.0])
    # under vmap SciPy runs once per element, and vmap's warning names the public method
    mus = nd.tensor([0.5, 2.5, 7.0])
    for name, scipys, dist in (("poisson.ppf", "poisson.ppf", ss.poisson),
                               ("vonmises.ppf/isf", "vonmises.ppf", ss.vonmises)):
        with pytest.warns(UserWarning, match=f"vmap: ndgrad.stats.{name} runs once") as seen:
            got = vmap(lambda m, d=dist.name: getattr(stats, d).ppf(nd.tensor(0.7), m))(mus)
        close(got, dist.ppf(0.7, host(mus)), rtol=1e-10)
        assert [str(w.message) for w in seen if "once per" in str(w.message)] == [
            f"vmap: ndgrad.stats.{name} runs once per batch element (a Python loop): SciPy's "
            f"{scipys} runs on the host (as documented)"]


def test_host_quantiles_make_fresh_tensors_differentiated_by_their_rules(device):
    # the host ppf/isf make a fresh tensor on q's device (no `0 * q + value` workaround:
    # Note [Functions under transforms] keeps a host custom_jvp whose rule calls it again
    # from recursing); the derivative of vonmises.ppf in q is 1 / pdf(ppf), of isf
    # -1 / pdf(isf), under .backward(), func.grad and jacrev, on every device
    from ndgrad.autograd import profiler
    from ndgrad.func import jvp
    qs, kappa = np.array([0.2, 0.45, 0.85]), 2.0
    for m, sign in (("ppf", 1.0), ("isf", -1.0)):
        y = getattr(ss.vonmises, m)(qs, kappa)
        d1 = sign / ss.vonmises.pdf(y, kappa)
        q, f = _req(qs), getattr(stats.vonmises, m)
        out = f(q, kappa)
        assert out.device == q.device and out.dtype == nd.float64
        close(out, y, rtol=1e-10)
        out.sum().backward()
        close(q.grad, d1, rtol=1e-9)
        close(grad(lambda v, f=f: f(v, kappa).sum())(nd.tensor(qs)), d1, rtol=1e-9)
        close(jacrev(lambda v, f=f: f(v, kappa))(nd.tensor(qs)), np.diag(d1), rtol=1e-9,
              atol=1e-12)
    # a discrete quantile is SciPy's step on the host and nothing else: no arithmetic on q is
    # recorded (the workaround added a multiply and an add); its derivative is zero also
    # where the quantile is infinite (q = 1: 0 * inf gave nan in forward mode)
    q = _req([0.3, 0.9, 1.0])
    with profiler.profile() as prof:
        k = stats.poisson.ppf(q, 2.5)
    assert [e.name for e in prof.function_events if e.name != "to_device"] == \
        ["_CustomJVPFunction"]      # (to_device: the copies to the host, on a GPU)
    assert k.device == q.device and k.dtype == nd.float64
    close(k, ss.poisson.ppf([0.3, 0.9, 1.0], 2.5))
    close(jvp(lambda v: stats.poisson.ppf(v, 2.5), (q.detach(),), (nd.ones(3),))[1],
          np.zeros(3))
    close(jacrev(lambda v: stats.binom.isf(v, 5.0, 0.3))(q.detach()), np.zeros((3, 3)))


@pytest.mark.cpu_only(HOST)
def test_multivariate_normal_allow_singular_as_scipy_with_derivatives():
    rng = np.random.default_rng(4)
    b = rng.normal(size=(4, 2))                   # cov = b b': rank 2 in 4 dimensions
    cov, mean = b @ b.T, rng.normal(size=4)
    x = mean + (b @ rng.normal(size=(2, 5))).T    # on the support mean + range(cov)
    x[2] += 0.1 * rng.normal(size=4)              # off it: -inf
    ref = ss.multivariate_normal(mean, cov, allow_singular=True)
    got = stats.multivariate_normal.logpdf(x, mean, cov, allow_singular=True)
    assert np.isneginf(host(got)[2]) and np.isneginf(ref.logpdf(x)[2])
    close(got, ref.logpdf(x), rtol=1e-10)
    close(stats.multivariate_normal(mean, cov, allow_singular=True).pdf(x), ref.pdf(x),
          rtol=1e-10)
    close(stats.multivariate_normal.entropy(mean, cov), ref.entropy(), rtol=1e-10)
    close(stats.multivariate_normal.logpdf(0.0, cov=0.0, allow_singular=True),
          ss.multivariate_normal.logpdf(np.array([0.0]), cov=np.zeros((1, 1)),
                                        allow_singular=True))
    with pytest.raises(ValueError, match=r"multivariate_normal\.logpdf: cov must be symmetric "
                       r"positive semidefinite"):
        stats.multivariate_normal.logpdf(x, mean, -cov, allow_singular=True)
    with pytest.raises(np.linalg.LinAlgError, match=r"multivariate_normal\.logpdf: cov must be "
                       r"symmetric positive definite when allow_singular is False.*"
                       r"allow_singular=True"):
        stats.multivariate_normal.logpdf(x, mean, cov)
    # the score in x is -cov^+ (x - mean) (the pseudo-inverse; in the range of cov)
    close(grad(lambda v: stats.multivariate_normal.logpdf(v, mean, cov, allow_singular=True))(
        nd.tensor(x[0])), -np.linalg.pinv(cov) @ (x[0] - mean), rtol=1e-9, atol=1e-12)
    # along covariances of the same rank, cov = B B' with the point kept on the support
    # (x = mean + B c), against central differences of SciPy's: first and second order
    c = rng.normal(size=2)

    def ours(bb, m):
        return stats.multivariate_normal.logpdf(m + bb @ nd.tensor(c), m, bb @ bb.T,
                                                allow_singular=True)

    def scipys(bb, m):
        return ss.multivariate_normal.logpdf(m + bb @ c, m, bb @ bb.T, allow_singular=True)
    h = 1e-6
    fd = np.zeros_like(b)
    for idx in np.ndindex(b.shape):
        e = np.zeros_like(b)
        e[idx] = h
        fd[idx] = (scipys(b + e, mean) - scipys(b - e, mean)) / (2 * h)
    close(grad(ours)(nd.tensor(b), nd.tensor(mean)), fd, rtol=1e-6, atol=1e-8)
    e, h2 = rng.normal(size=b.shape), 1e-4
    second = (scipys(b + h2 * e, mean) - 2 * scipys(b, mean) + scipys(b - h2 * e, mean)) / h2 ** 2
    _, d2 = nd.func.jvp(lambda bb: nd.func.jvp(lambda u: ours(u, nd.tensor(mean)), (bb,),
                                               (nd.tensor(e),))[1], (nd.tensor(b),),
                        (nd.tensor(e),))
    close(d2, second, rtol=1e-5)
    assert gradcheck(lambda bb, m: ours(bb, m), (_req(b), _req(mean)))
