"""``ndgrad.stats``: SciPy's probability distributions (``scipy.stats``), differentiable.

This module owns the distribution objects (``norm``, ``multivariate_normal``, ``t``,
``cauchy``, ``laplace``, ``logistic``, ``expon``, ``gamma``, ``beta``, ``chi2``, ``lognorm``,
``uniform``, ``vonmises``, ``gennorm``, ``weibull_min``, ``pareto``, ``truncnorm``, ``poisson``,
``binom``, ``nbinom``, ``geom``, ``bernoulli``, ``dirichlet``) and the functions
``entropy``, ``zscore`` and ``logsumexp`` (re-exported from :mod:`ndgrad.special`).

Each distribution is written with ndgrad operations (no registered primitive), in log space
where SciPy is, so its methods are differentiable in every transform (reverse and forward
mode, ``vmap``, higher order) with respect to ``x`` and to every shape, ``loc`` and
``scale`` parameter, all of which may be Tensors and broadcast as in SciPy. Outside the
support a density is ``0`` (``logpdf`` is ``-inf``); invalid parameters (``scale <= 0``, a
shape out of range) give ``nan``, as SciPy's. Masked-out entries are computed at a safe
interior point, so they contribute zero (not ``nan``) to a gradient.

``rvs`` draws with SciPy's (NumPy ``Generator``) sampler on the host and returns a Tensor that
is *not* differentiable. A method SciPy has that ndgrad lacks is declared in the
distribution's ``missing`` (method: the reason), and raises NotImplementedError quoting it
(``tests/test_stats.py`` derives the list from both namespaces). The discrete distributions'
``ppf`` and ``isf`` are SciPy's, computed on the host: step functions of ``q`` and the
parameters, with derivative zero. ``vonmises``'s cdf is SciPy's series (Note [The von Mises
cdf]) and its ppf SciPy's value with the implicit derivative. The cdfs, sfs, ppfs and isfs
of ``gamma``, ``chi2``, ``gennorm``, ``t``, ``beta``, ``binom`` and ``nbinom`` go through
``gammainc``, ``betainc`` and their inverses, whose derivatives in the shape arguments are
first order only (numerically summed expansions): they are differentiable in their shapes
too, but a second derivative in a shape raises NotImplementedError (in ``x``, ``loc``,
``scale`` and ``p``: any order).
At a point ON the boundary of the support, the derivative is the formula's one-sided value
(possibly infinite, or ``nan`` for ``pdf = exp(logpdf)`` where ``logpdf = -inf``). SciPy is
imported by ``rvs`` and the host quantiles only, never by ``import ndgrad``.
"""

from __future__ import annotations

import math

import numpy as np

from ..core.creation import asarray, eye, zeros, zeros_like
from ..core.tensor import Tensor, host_array as _host
from ..core.ops import PUBLIC as _P, NAMESPACED as _NS

__name__ = "ndgrad.stats"  # its public name (Note [Public module names] in scipy/__init__.py)

_F = type("F", (), {})()  # attribute access to ndgrad's functions without importing ndgrad
for _k, _v in _P.items():
    setattr(_F, _k, _v)
_S = type("S", (), {})()
for _k, _v in _NS["special"].items():
    setattr(_S, _k, _v)
logsumexp = _S.logsumexp

__all__ = ["norm", "multivariate_normal", "t", "cauchy", "laplace", "logistic", "expon",
           "gamma", "beta", "chi2", "lognorm", "uniform", "poisson", "binom", "nbinom",
           "geom", "bernoulli", "dirichlet", "vonmises", "gennorm", "weibull_min", "pareto",
           "truncnorm", "entropy", "zscore", "logsumexp", "rv_continuous",
           "rv_discrete", "rv_frozen"]

_LOG2PI = math.log(2 * math.pi)
_EULER = 0.5772156649015329
_INF, _NAN = math.inf, math.nan


def _t(v):
    """``v`` as a floating Tensor (Tensors pass through, integer Tensors become float64)."""
    if isinstance(v, Tensor):
        return v if v.dtype.kind in "fc" else v.astype("float64")
    return asarray(np.asarray(v, dtype=np.float64))


def _w(cond, a, b):
    return _F.where(cond, a, b)


# ----------------------------------------------------------------------------- base classes

class _Dist:
    """What continuous and discrete distributions share: argument parsing, parameter
    validation and the moments."""

    name = ""
    shapes: tuple = ()
    safe: tuple = ()        # a valid value of each shape, used where the parameters are not
    inner = 0.0             # a point inside the standard support, used outside it
    missing: dict = {}      # method -> why it is not implemented (SciPy has it)
    has_scale = True

    def __call__(self, *args, **kwds):
        """The frozen distribution ``dist(*shapes, loc=0, scale=1)``."""
        self._parse(args, kwds)  # fail early on bad arguments
        return rv_frozen(self, args, kwds)

    def __repr__(self):
        return f"<ndgrad.stats.{self.name}>"

    def _parse(self, args, kwds):
        names = self.shapes + (("loc", "scale") if self.has_scale else ("loc",))
        if len(args) > len(names):
            raise TypeError(f"{self.name} takes at most {len(names)} parameters "
                            f"{names}, got {len(args)}")
        vals = dict(zip(names, args))
        for k, v in kwds.items():
            if k not in names:
                raise TypeError(f"{self.name} got an unexpected parameter {k!r}; its "
                                f"parameters are {names}")
            if k in vals:
                raise TypeError(f"{self.name} got parameter {k!r} twice")
            vals[k] = v
        for s in self.shapes:
            if s not in vals:
                raise TypeError(f"{self.name} needs its shape parameter {s!r}")
        shapes = [_t(vals[s]) for s in self.shapes]
        loc = _t(vals.get("loc", 0.0))
        scale = _t(vals.get("scale", 1.0))
        return shapes, loc, scale

    def _valid(self, shapes, scale):
        """(valid, shapes with safe values where not valid, scale likewise)."""
        valid = scale > 0
        if self.shapes:
            valid = valid & self._argcheck(*shapes)
        shapes = [_w(valid, s, v) for s, v in zip(shapes, self.safe)]
        return valid, shapes, _w(valid, scale, 1.0)

    def _argcheck(self, *shapes):
        raise NotImplementedError

    def _inner(self, *shapes):
        """A point inside the standard support, used in place of points outside it."""
        return self.inner

    def _need(self, method):
        fn = getattr(self, "_" + method, None)
        if fn is None:
            why = self.missing.get(method) or "it has no simple closed form"
            raise NotImplementedError(f"ndgrad.stats.{self.name}.{method} is not implemented: "
                                      f"{why}")
        return fn

    def _moment(self, method, args, kwds, combine):
        fn = self._need(method)
        shapes, loc, scale = self._parse(args, kwds)
        valid, shapes, scale = self._valid(shapes, scale)
        out = combine(_t(fn(*shapes)), loc, scale)
        return _w(valid, out, _NAN)

    def mean(self, *args, **kwds):
        """The mean, ``loc + scale * mean of the standard distribution``."""
        return self._moment("mean", args, kwds, lambda m, loc, s: m * s + loc)

    def var(self, *args, **kwds):
        """The variance, ``scale**2 * var of the standard distribution``."""
        return self._moment("var", args, kwds, lambda v, loc, s: v * s * s)

    def std(self, *args, **kwds):
        """The standard deviation, ``sqrt(var)``."""
        return _F.sqrt(self.var(*args, **kwds))

    def entropy(self, *args, **kwds):
        """The differential entropy (nats), ``h + log(scale)`` (discrete: ``h``)."""
        return self._moment("entropy", args, kwds,
                            lambda h, loc, s: h + _F.log(s) if self.has_scale else h)

    def rvs(self, *args, size=None, random_state=None, **kwds):
        """Random variates from SciPy's sampler with a NumPy ``Generator`` (``random_state``
        an int seed, a Generator, or None), as a Tensor that is NOT differentiable."""
        import scipy.stats as st

        shapes, loc, scale = self._parse(args, kwds)
        rng = (random_state if isinstance(random_state, (np.random.Generator,
                                                         np.random.RandomState))
               else np.random.default_rng(random_state))
        extra = {"scale": _host(scale)} if self.has_scale else {}
        draws = getattr(st, self.name).rvs(*[_host(s) for s in shapes], loc=_host(loc),
                                           size=size, random_state=rng, **extra)
        return asarray(np.asarray(draws, dtype=np.float64), device=loc.device)


class rv_continuous(_Dist):
    """A continuous distribution: subclasses define the standard (``loc=0, scale=1``)
    ``_logpdf`` and, where they have closed forms, ``_cdf``, ``_logcdf``, ``_sf``, ``_logsf``,
    ``_ppf``, ``_isf``, ``_mean``, ``_var``, ``_entropy``, and ``_support``."""

    def _support(self, *shapes):
        return -_INF, _INF

    def _prepare(self, x, args, kwds):
        shapes, loc, scale = self._parse(args, kwds)
        valid, shapes, scale = self._valid(shapes, scale)
        y = (_t(x) - loc) / scale
        lo, hi = self._support(*shapes)
        return valid, shapes, scale, y, lo, hi

    @staticmethod
    def _finish(out, valid, y):
        return _w(valid & ~_F.isnan(y), out, _NAN)

    def logpdf(self, x, *args, **kwds):
        """The log of the probability density at ``x``: ``-inf`` outside the support."""
        valid, shapes, scale, y, lo, hi = self._prepare(x, args, kwds)
        inside = (y >= lo) & (y <= hi)
        ys = _w(inside, y, self._inner(*shapes))
        out = _w(inside, self._logpdf(ys, *shapes) - _F.log(scale), -_INF)
        return self._finish(out, valid, y)

    def pdf(self, x, *args, **kwds):
        """The probability density at ``x``, ``exp(logpdf)``."""
        return _F.exp(self.logpdf(x, *args, **kwds))

    def _tails(self, method, x, args, kwds, below, above):
        fn = self._need(method)
        valid, shapes, scale, y, lo, hi = self._prepare(x, args, kwds)
        lower, upper = y <= lo, y >= hi
        ys = _w(lower | upper, self._inner(*shapes), y)
        out = _w(lower, below, _w(upper, above, fn(ys, *shapes)))
        return self._finish(out, valid, y)

    def cdf(self, x, *args, **kwds):
        """The cumulative distribution function ``P(X <= x)``."""
        return self._tails("cdf", x, args, kwds, 0.0, 1.0)

    def logcdf(self, x, *args, **kwds):
        """The log of the cdf."""
        return self._tails("logcdf", x, args, kwds, -_INF, 0.0)

    def sf(self, x, *args, **kwds):
        """The survival function ``1 - cdf``, accurate in the right tail."""
        return self._tails("sf", x, args, kwds, 1.0, 0.0)

    def logsf(self, x, *args, **kwds):
        """The log of the survival function."""
        return self._tails("logsf", x, args, kwds, 0.0, -_INF)

    def _quantile(self, method, q, args, kwds, at0, at1):
        fn = self._need(method)
        shapes, loc, scale = self._parse(args, kwds)
        valid, shapes, scale = self._valid(shapes, scale)
        q = _t(q)
        lo, hi = self._support(*shapes)
        ends = {"lo": lo, "hi": hi}
        inner = (q > 0) & (q < 1)
        qs = _w(inner, q, 0.5)
        out = _w(inner, fn(qs, *shapes),
                 _w(q == 0, ends[at0], _w(q == 1, ends[at1], _NAN)))
        return _w(valid, out * scale + loc, _NAN)

    def ppf(self, q, *args, **kwds):
        """The percent point function (inverse of ``cdf``) at ``q`` in ``[0, 1]``."""
        return self._quantile("ppf", q, args, kwds, "lo", "hi")

    def isf(self, q, *args, **kwds):
        """The inverse survival function (inverse of ``sf``)."""
        return self._quantile("isf", q, args, kwds, "hi", "lo")

    # defaults from one another, where a subclass gives only some
    def _logcdf(self, y, *s):
        return _F.log(self._need("cdf")(y, *s))

    def _logsf(self, y, *s):
        return _F.log(self._need("sf")(y, *s))


class rv_discrete(_Dist):
    """A discrete distribution on the integers of its support (shifted by ``loc``):
    subclasses define ``_logpmf`` and, where they have closed forms, ``_cdf``, ``_sf``,
    ``_mean``, ``_var``, ``_entropy``, and ``_support``."""

    has_scale = False

    def _support(self, *shapes):
        return 0.0, _INF

    def _prepare(self, k, args, kwds):
        shapes, loc, scale = self._parse(args, kwds)
        valid, shapes, _ = self._valid(shapes, asarray(1.0))
        y = _t(k) - loc
        lo, hi = self._support(*shapes)
        return valid, shapes, y, lo, hi

    def logpmf(self, k, *args, **kwds):
        """The log of the probability mass at ``k``: ``-inf`` off the support's integers."""
        valid, shapes, y, lo, hi = self._prepare(k, args, kwds)
        inside = (y >= lo) & (y <= hi) & (y == _F.floor(y))
        ys = _w(inside, y, self._inner(*shapes))
        out = _w(inside, self._logpmf(ys, *shapes), -_INF)
        return rv_continuous._finish(out, valid, y)

    def pmf(self, k, *args, **kwds):
        """The probability mass at ``k``, ``exp(logpmf)``."""
        return _F.exp(self.logpmf(k, *args, **kwds))

    def _tails(self, method, k, args, kwds, below, above):
        fn = self._need(method)
        valid, shapes, y, lo, hi = self._prepare(k, args, kwds)
        y = _F.floor(y)
        lower, upper = y < lo, y >= hi
        ys = _w(lower | upper, self._inner(*shapes), y)
        out = _w(lower, below, _w(upper, above, fn(ys, *shapes)))
        return rv_continuous._finish(out, valid, y)

    def cdf(self, k, *args, **kwds):
        """The cumulative distribution function ``P(X <= k)``."""
        return self._tails("cdf", k, args, kwds, 0.0, 1.0)

    def logcdf(self, k, *args, **kwds):
        """The log of the cdf."""
        return _F.log(self.cdf(k, *args, **kwds))

    def sf(self, k, *args, **kwds):
        """The survival function ``P(X > k)``."""
        return self._tails("sf", k, args, kwds, 1.0, 0.0)

    def logsf(self, k, *args, **kwds):
        """The log of the survival function."""
        return _F.log(self.sf(k, *args, **kwds))

    def _sf(self, y, *s):
        return 1 - self._need("cdf")(y, *s)

    def _step_quantile(self, method, q, args, kwds):
        shapes, loc, _ = self._parse(args, kwds)
        q = _t(q)
        return _host_quantile(self.name, method)(q, *shapes, loc)

    def ppf(self, q, *args, **kwds):
        """The percent point function: the smallest integer ``k`` with ``cdf(k) >= q``
        (SciPy's, computed on the host: a step function of ``q`` and the parameters, so its
        derivative is zero)."""
        return self._step_quantile("ppf", q, args, kwds)

    def isf(self, q, *args, **kwds):
        """The inverse survival function: the smallest integer ``k`` with ``sf(k) <= q``
        (SciPy's, computed on the host; its derivative is zero)."""
        return self._step_quantile("isf", q, args, kwds)


class rv_frozen:
    """A distribution with its parameters fixed: ``norm(loc, scale).logpdf(x)`` is
    ``norm.logpdf(x, loc, scale)``."""

    def __init__(self, dist, args, kwds):
        self.dist, self.args, self.kwds = dist, tuple(args), dict(kwds)

    def __repr__(self):
        return f"<frozen ndgrad.stats.{self.dist.name}{self.args}>"

    def __getattr__(self, method):
        if method.startswith("_") or method in ("dist", "args", "kwds"):
            raise AttributeError(method)
        fn = getattr(self.dist, method)
        if method in ("mean", "var", "std", "entropy"):
            return lambda: fn(*self.args, **self.kwds)
        if method == "rvs":
            return lambda size=None, random_state=None: fn(*self.args, size=size,
                                                           random_state=random_state,
                                                           **self.kwds)
        return lambda x: fn(x, *self.args, **self.kwds)


def _like(value, like):
    """A host result as a fresh float64 Tensor on ``like``'s device (a custom_jvp's host
    function may make one: Note [Functions under transforms] in core/function.py)."""
    return asarray(np.asarray(value, dtype=np.float64), device=like.device)


def _vonmises_ppf_value(q, kappa):
    import scipy.stats as st
    return _like(st.vonmises.ppf(_host(q), _host(kappa)), q)


def _vonmises_ppf_rule(primals, tangents):
    """Note [The von Mises cdf]: dx = (dq - dF/dkappa dkappa) / pdf(x)."""
    from ..functional.transforms import jvp
    q, kappa = primals
    dq, dkappa = tangents
    x = _vonmises_ppf(q, kappa)
    _, dF = jvp(lambda k: vonmises._cdf(x, k), (kappa,), (dkappa,))
    return x, (dq - dF) / _F.exp(vonmises._logpdf(x, kappa))


def _host_step_value(name, method):
    def value(q, *params):
        import scipy.stats as st
        *shapes, loc = params
        out = getattr(getattr(st, name), method)(_host(q), *[_host(p) for p in shapes],
                                                 loc=_host(loc))
        return _like(out, q)
    return value


def _zero_rule(fn):
    def rule(primals, tangents):
        out = fn(*primals)
        zero = zeros_like(out)   # (not 0 * out: nan where the quantile is infinite)
        for t in tangents:          # (zero, but linear in the tangents, as a rule must be)
            zero = zero + 0.0 * t
        return out, zero
    return rule


_HOST_RULES = {}


def _host_quantile(name, method):
    """SciPy's ``scipy.stats.<name>.<method>`` of a discrete distribution, computed on the
    host (``q, *shapes, loc`` Tensors): a step function of its arguments, whose derivative
    is zero (forward, reverse, every order); under ``vmap`` it runs once per element."""
    key = (name, method)
    if key not in _HOST_RULES:
        from ..functional.custom import custom_jvp
        fn = custom_jvp(_host_step_value(name, method), vmap_method="sequential", _public=dict(
            name=f"ndgrad.stats.{name}.{method}",
            vmap=f"SciPy's {name}.{method} runs on the host (as documented)"))
        fn.defjvp(_zero_rule(fn))
        _HOST_RULES[key] = fn
    return _HOST_RULES[key]


def _vonmises_ppf(q, kappa):
    if "vonmises" not in _HOST_RULES:
        from ..functional.custom import custom_jvp
        fn = custom_jvp(_vonmises_ppf_value, vmap_method="sequential", _public=dict(
            name="ndgrad.stats.vonmises.ppf/isf",
            vmap="SciPy's vonmises.ppf runs on the host (as documented)"))
        fn.defjvp(_vonmises_ppf_rule)
        _HOST_RULES["vonmises"] = fn
    return _HOST_RULES["vonmises"](q, kappa)


# ----------------------------------------------------------------------- continuous families

class norm_gen(rv_continuous):
    """The normal distribution, ``scipy.stats.norm``: ``pdf(y) = exp(-y**2/2) / sqrt(2 pi)``
    with ``y = (x - loc) / scale``.

    Examples
    --------
    >>> import ndgrad
    >>> from ndgrad import stats
    >>> loc = ndgrad.tensor(0.5, requires_grad=True)
    >>> stats.norm.logpdf(2.0, loc=loc, scale=2.0).backward()
    >>> loc.grad  # (x - loc) / scale**2
    tensor(0.375)
    >>> stats.norm(0.0, 1.0).cdf(1.0)
    tensor(0.84134475)
    """

    name = "norm"

    def _logpdf(self, y):
        return -0.5 * y * y - 0.5 * _LOG2PI

    def _cdf(self, y):
        return _S.ndtr(y)

    def _logcdf(self, y):
        return _S.log_ndtr(y)

    def _sf(self, y):
        return _S.ndtr(-y)

    def _logsf(self, y):
        return _S.log_ndtr(-y)

    def _ppf(self, q):
        return _S.ndtri(q)

    def _isf(self, q):
        return -_S.ndtri(q)

    def _mean(self):
        return 0.0

    def _var(self):
        return 1.0

    def _entropy(self):
        return 0.5 * (_LOG2PI + 1)


class t_gen(rv_continuous):
    """Student's t distribution, ``scipy.stats.t(df)``. The cdf, sf, ppf and isf (by
    ``special.betainc``/``betaincinv``) are differentiable in ``x`` (``q``), ``loc``,
    ``scale`` and ``df`` (in ``df`` to first order only: a second derivative raises
    NotImplementedError).

    Examples
    --------
    >>> from ndgrad import stats
    >>> stats.t.logpdf(0.5, 3.0)
    tensor(-1.16097426)
    """

    name, shapes, safe = "t", ("df",), (1.0,)

    def _argcheck(self, df):
        return df > 0

    def _cdf(self, y, df):
        # P(T <= y) = I_x(df/2, 1/2) / 2 for y <= 0, x = df / (df + y^2); symmetric
        half = 0.5 * _S.betainc(df / 2, 0.5, df / (df + y * y))
        return _w(y > 0, 1 - half, half)

    def _sf(self, y, df):
        return self._cdf(-y, df)

    def _ppf(self, q, df):
        tail = _w(q < 0.5, q, 1 - q)                 # (the smaller tail, in (0, 1/2])
        x = _S.betaincinv(df / 2, 0.5, 2 * tail)
        y = _F.sqrt(df * (1 - x) / x)
        return _w(q < 0.5, -y, y)

    def _isf(self, q, df):
        return -self._ppf(q, df)

    def _logpdf(self, y, df):
        return (_S.gammaln((df + 1) / 2) - _S.gammaln(df / 2) - 0.5 * _F.log(df * math.pi)
                - (df + 1) / 2 * _F.log1p(y * y / df))

    def _mean(self, df):
        return _w(df > 1, 0.0, _NAN)

    def _var(self, df):
        dfs = _w(df > 2, df, 3.0)
        return _w(df > 2, dfs / (dfs - 2), _w(df > 1, _INF, _NAN))

    def _entropy(self, df):
        # (df+1)/2 (psi((df+1)/2) - psi(df/2)) + log(sqrt(df) B(df/2, 1/2))
        h = df / 2
        return ((df + 1) / 2 * (_S.digamma(h + 0.5) - _S.digamma(h))
                + 0.5 * _F.log(df) + _S.betaln(h, 0.5))


class cauchy_gen(rv_continuous):
    """The Cauchy distribution, ``scipy.stats.cauchy``: ``pdf(y) = 1 / (pi (1 + y**2))``.

    Examples
    --------
    >>> from ndgrad import stats
    >>> stats.cauchy.cdf(1.0)
    tensor(0.75)
    """

    name = "cauchy"

    def _logpdf(self, y):
        return -math.log(math.pi) - _F.log1p(y * y)

    def _cdf(self, y):
        return 0.5 + _F.arctan(y) / math.pi

    def _sf(self, y):
        return 0.5 - _F.arctan(y) / math.pi

    def _ppf(self, q):
        return _F.tan(math.pi * (q - 0.5))

    def _isf(self, q):
        return _F.tan(math.pi * (0.5 - q))

    def _mean(self):
        return _NAN

    def _var(self):
        return _NAN

    def _entropy(self):
        return math.log(4 * math.pi)


class laplace_gen(rv_continuous):
    """The Laplace distribution, ``scipy.stats.laplace``: ``pdf(y) = exp(-|y|) / 2``.

    Examples
    --------
    >>> from ndgrad import stats
    >>> stats.laplace.logpdf(-1.0)
    tensor(-1.69314718)
    """

    name = "laplace"

    def _logpdf(self, y):
        return -_F.abs(y) - math.log(2)

    def _cdf(self, y):
        e = 0.5 * _F.exp(-_F.abs(y))
        return _w(y < 0, e, 1 - e)

    def _sf(self, y):
        return self._cdf(-y)

    def _logcdf(self, y):
        return _w(y < 0, -_F.abs(y) - math.log(2), _F.log1p(-0.5 * _F.exp(-_F.abs(y))))

    def _logsf(self, y):
        return self._logcdf(-y)

    def _ppf(self, q):
        return _w(q < 0.5, _F.log(2 * q), -_F.log(2 - 2 * q))

    def _isf(self, q):
        return -self._ppf(q)

    def _mean(self):
        return 0.0

    def _var(self):
        return 2.0

    def _entropy(self):
        return math.log(2) + 1


class logistic_gen(rv_continuous):
    """The logistic distribution, ``scipy.stats.logistic``: ``cdf(y) = expit(y)``.

    Examples
    --------
    >>> from ndgrad import stats
    >>> stats.logistic.cdf(0.0)
    tensor(0.5)
    """

    name = "logistic"

    def _logpdf(self, y):
        a = _F.abs(y)
        return -a - 2 * _F.log1p(_F.exp(-a))

    def _cdf(self, y):
        return _S.expit(y)

    def _logcdf(self, y):
        return _S.log_expit(y)

    def _sf(self, y):
        return _S.expit(-y)

    def _logsf(self, y):
        return _S.log_expit(-y)

    def _ppf(self, q):
        return _S.logit(q)

    def _isf(self, q):
        return -_S.logit(q)

    def _mean(self):
        return 0.0

    def _var(self):
        return math.pi ** 2 / 3

    def _entropy(self):
        return 2.0


class expon_gen(rv_continuous):
    """The exponential distribution, ``scipy.stats.expon``: ``pdf(y) = exp(-y)``, ``y >= 0``.

    Examples
    --------
    >>> from ndgrad import stats
    >>> stats.expon.sf(2.0, scale=2.0)
    tensor(0.36787944)
    """

    name, inner = "expon", 1.0

    def _support(self):
        return 0.0, _INF

    def _logpdf(self, y):
        return -y

    def _cdf(self, y):
        return -_F.expm1(-y)

    def _logcdf(self, y):
        return _F.log(-_F.expm1(-y))

    def _sf(self, y):
        return _F.exp(-y)

    def _logsf(self, y):
        return -y

    def _ppf(self, q):
        return -_F.log1p(-q)

    def _isf(self, q):
        return -_F.log(q)

    def _mean(self):
        return 1.0

    def _var(self):
        return 1.0

    def _entropy(self):
        return 1.0


class gamma_gen(rv_continuous):
    """The gamma distribution, ``scipy.stats.gamma(a)``: ``pdf(y) = y**(a-1) exp(-y) /
    Gamma(a)``. The cdf, sf, ppf and isf (``special.gammainc``/``gammaincc`` and their
    inverses) are differentiable in ``x`` (``q``), ``loc``, ``scale`` and, to first order,
    ``a``.

    Examples
    --------
    >>> from ndgrad import stats
    >>> stats.gamma.logpdf(1.5, 2.0)
    tensor(-1.09453489)
    """

    name, shapes, safe, inner = "gamma", ("a",), (1.0,), 1.0

    def _argcheck(self, a):
        return a > 0

    def _support(self, a):
        return 0.0, _INF

    def _logpdf(self, y, a):
        return _S.xlogy(a - 1, y) - y - _S.gammaln(a)

    def _cdf(self, y, a):
        return _S.gammainc(a, y)

    def _sf(self, y, a):
        return _S.gammaincc(a, y)

    def _ppf(self, q, a):
        return _S._gammaincinv(a, q)

    def _isf(self, q, a):
        return _S._gammaincinv(a, q, upper=True)

    def _mean(self, a):
        return a

    def _var(self, a):
        return a

    def _entropy(self, a):
        return a + _S.gammaln(a) + (1 - a) * _S.digamma(a)


class beta_gen(rv_continuous):
    """The beta distribution, ``scipy.stats.beta(a, b)`` on ``[0, 1]``. The cdf, sf, ppf and
    isf (by ``special.betainc``/``betaincinv``) are differentiable in ``x`` (``q``), ``loc``,
    ``scale`` and, to first order, ``a`` and ``b``.

    Examples
    --------
    >>> from ndgrad import stats
    >>> stats.beta.pdf(0.25, 2.0, 3.0)
    tensor(1.6875)
    """

    name, shapes, safe, inner = "beta", ("a", "b"), (1.0, 1.0), 0.5

    def _cdf(self, y, a, b):
        return _S.betainc(a, b, y)

    def _sf(self, y, a, b):
        return _S.betainc(b, a, 1 - y)

    def _ppf(self, q, a, b):
        return _S.betaincinv(a, b, q)

    def _isf(self, q, a, b):
        return 1 - _S.betaincinv(b, a, q)

    def _argcheck(self, a, b):
        return (a > 0) & (b > 0)

    def _support(self, a, b):
        return 0.0, 1.0

    def _logpdf(self, y, a, b):
        return _S.xlog1py(b - 1, -y) + _S.xlogy(a - 1, y) - _S.betaln(a, b)

    def _mean(self, a, b):
        return a / (a + b)

    def _var(self, a, b):
        s = a + b
        return a * b / (s * s * (s + 1))

    def _entropy(self, a, b):
        return (_S.betaln(a, b) - (a - 1) * _S.digamma(a) - (b - 1) * _S.digamma(b)
                + (a + b - 2) * _S.digamma(a + b))


class chi2_gen(rv_continuous):
    """The chi-squared distribution, ``scipy.stats.chi2(df)``: a gamma with ``a = df/2``,
    ``scale = 2``. The cdf, sf, ppf and isf are differentiable in ``df`` to first order (as
    gamma's in ``a``).

    Examples
    --------
    >>> from ndgrad import stats
    >>> stats.chi2.cdf(2.0, 2.0)
    tensor(0.63212056)
    """

    name, shapes, safe, inner = "chi2", ("df",), (1.0,), 1.0

    def _argcheck(self, df):
        return df > 0

    def _support(self, df):
        return 0.0, _INF

    def _logpdf(self, y, df):
        h = df / 2
        return _S.xlogy(h - 1, y) - y / 2 - _S.gammaln(h) - h * math.log(2)

    def _cdf(self, y, df):
        return _S.gammainc(df / 2, y / 2)

    def _sf(self, y, df):
        return _S.gammaincc(df / 2, y / 2)

    def _ppf(self, q, df):
        return 2 * _S._gammaincinv(df / 2, q)

    def _isf(self, q, df):
        return 2 * _S._gammaincinv(df / 2, q, upper=True)

    def _mean(self, df):
        return df

    def _var(self, df):
        return 2 * df

    def _entropy(self, df):
        h = df / 2
        return h + math.log(2) + _S.gammaln(h) + (1 - h) * _S.digamma(h)


class lognorm_gen(rv_continuous):
    """The log-normal distribution, ``scipy.stats.lognorm(s)``: ``log(y)`` is normal with
    standard deviation ``s``.

    Examples
    --------
    >>> from ndgrad import stats
    >>> stats.lognorm.cdf(1.0, 0.5)
    tensor(0.5)
    """

    name, shapes, safe, inner = "lognorm", ("s",), (1.0,), 1.0

    def _argcheck(self, s):
        return s > 0

    def _support(self, s):
        return 0.0, _INF

    def _logpdf(self, y, s):
        pos = y > 0
        ys = _w(pos, y, 1.0)  # the density is 0 at y = 0
        ly = _F.log(ys)
        return _w(pos, -ly * ly / (2 * s * s) - ly - _F.log(s) - 0.5 * _LOG2PI, -_INF)

    def _cdf(self, y, s):
        return _S.ndtr(_F.log(y) / s)

    def _logcdf(self, y, s):
        return _S.log_ndtr(_F.log(y) / s)

    def _sf(self, y, s):
        return _S.ndtr(-_F.log(y) / s)

    def _logsf(self, y, s):
        return _S.log_ndtr(-_F.log(y) / s)

    def _ppf(self, q, s):
        return _F.exp(s * _S.ndtri(q))

    def _isf(self, q, s):
        return _F.exp(-s * _S.ndtri(q))

    def _mean(self, s):
        return _F.exp(s * s / 2)

    def _var(self, s):
        e = _F.exp(s * s)
        return e * (e - 1)

    def _entropy(self, s):
        return 0.5 * (1 + _LOG2PI) + _F.log(s)


class uniform_gen(rv_continuous):
    """The uniform distribution on ``[loc, loc + scale]``, ``scipy.stats.uniform``.

    Examples
    --------
    >>> from ndgrad import stats
    >>> stats.uniform.cdf(1.5, loc=1.0, scale=2.0)
    tensor(0.25)
    """

    name, inner = "uniform", 0.5

    def _support(self):
        return 0.0, 1.0

    def _logpdf(self, y):
        return 0.0 * y

    def _cdf(self, y):
        return y

    def _sf(self, y):
        return 1 - y

    def _ppf(self, q):
        return q

    def _isf(self, q):
        return 1 - q

    def _mean(self):
        return 0.5

    def _var(self):
        return 1 / 12

    def _entropy(self):
        return 0.0


# Note [The von Mises cdf]
# ~~~~~~~~~~~~~~~~~~~~~~~~
# SciPy's vonmises lives on the whole line with a periodic density; its cdf is the integral
# from -pi, continued by whole turns: cdf(x + 2 pi k) = cdf(x) + k (so it runs past [0, 1]
# outside [-pi, pi], as SciPy's does). On [-pi, pi] it is the Fourier series
#
#     F(x) = 1/2 + x / (2 pi) + (1 / pi) sum_{n >= 1} (I_n(kappa) / I_0(kappa)) sin(n x) / n,
#
# whose Bessel ratios come from the backward recurrence r_n = kappa / (2 n + kappa r_{n+1})
# (r_n = I_n / I_{n-1}; started at 0 beyond the last term), summed from the last term down.
# SciPy sums 1 + 28 + kappa/2 - 100/(kappa + 5) terms for kappa < 50 ("12 decimal digits");
# written with ndgrad operations it is one fixed number of terms for every entry, 54, the
# most SciPy uses below 50 (more terms only add digits). From kappa = 50 SciPy switches to
# the normal approximation ndtr(sqrt(2/pi) / i0e(kappa) sin(x/2)); so does this, so the
# values are SciPy's. Both are ndgrad operations, so the cdf is differentiable in x (its
# derivative is the series' term-by-term derivative, the density to the series' accuracy),
# kappa, loc and scale, to every order. The ppf has no closed form: its value is SciPy's
# (root finding on the host) and its derivative the implicit one, dx = (dq - dF/dkappa
# dkappa) / pdf(x), a rule that calls the ppf again, so higher orders follow.
_VM_TERMS, _VM_NORMAL = 54, 50.0


class vonmises_gen(rv_continuous):
    """The von Mises distribution, ``scipy.stats.vonmises(kappa)``: the periodic density
    ``exp(kappa cos y) / (2 pi I0(kappa))`` on the whole line, written with
    ``special.i0e`` (``log I0(kappa) = log i0e(kappa) + kappa``). The cdf and sf are SciPy's
    series (its normal approximation from ``kappa = 50``), continued by whole turns outside
    ``[-pi, pi]`` as SciPy's; the ppf and isf are SciPy's values with implicit derivatives
    (Note [The von Mises cdf]); all are differentiable in ``x`` (``q``), ``kappa``, ``loc``
    and ``scale``. The variance needs a numerical integral (not implemented).

    Examples
    --------
    >>> from ndgrad import stats
    >>> stats.vonmises.logpdf(0.5, 2.0)
    tensor(-0.90670548)
    >>> stats.vonmises.cdf(1.0, 2.0)
    tensor(0.88957774)
    """

    name, shapes, safe = "vonmises", ("kappa",), (1.0,)
    missing = {"var": "it needs a numerical integral of x**2 against the density",
               "std": "it needs a numerical integral of x**2 against the density"}

    def _argcheck(self, kappa):
        return kappa > 0

    def _logpdf(self, y, kappa):
        return kappa * (_F.cos(y) - 1) - _F.log(2 * math.pi * _S.i0e(kappa))

    def _cdf(self, y, kappa):
        turns = _F.round(y / (2 * math.pi))
        x = y - turns * (2 * math.pi)
        small = kappa < _VM_NORMAL
        ks = _w(small, kappa, 1.0)
        ratio = 0.0 * ks
        total = 0.0 * x
        for n in range(_VM_TERMS - 1, 0, -1):
            ratio = ks / (2 * n + ks * ratio)
            total = ratio * (_F.sin(n * x) / n + total)
        series = _F.clip(0.5 + x / (2 * math.pi) + total / math.pi, 0.0, 1.0)
        kl = _w(small, _VM_NORMAL, kappa)
        normal = _S.ndtr(math.sqrt(2 / math.pi) / _S.i0e(kl) * _F.sin(x / 2))
        return _w(small, series, normal) + turns

    def _sf(self, y, kappa):
        return 1 - self._cdf(y, kappa)

    def _ppf(self, q, kappa):
        return _vonmises_ppf(q, kappa)

    def _isf(self, q, kappa):
        return -_vonmises_ppf(q, kappa)     # (the density is even)

    def _mean(self, kappa):
        return 0.0 * kappa

    def _entropy(self, kappa):
        return (-kappa * _S.i1e(kappa) / _S.i0e(kappa) + _F.log(2 * math.pi * _S.i0e(kappa))
                + kappa)


class gennorm_gen(rv_continuous):
    """The generalized normal distribution, ``scipy.stats.gennorm(beta)``: ``pdf(y) = beta
    exp(-|y|**beta) / (2 Gamma(1/beta))``. The cdf, sf, ppf and isf are differentiable in
    ``x`` (``q``), ``loc``, ``scale`` and, to first order, ``beta`` (through ``gammainc``'s
    first argument).

    Examples
    --------
    >>> from ndgrad import stats
    >>> stats.gennorm.logpdf(0.5, 1.5)
    tensor(-0.94438574)
    """

    name, shapes, safe = "gennorm", ("beta",), (2.0,)

    def _argcheck(self, beta):
        return beta > 0

    def _logpdf(self, y, beta):
        return _F.log(0.5 * beta) - _S.gammaln(1 / beta) - _F.abs(y) ** beta

    def _cdf(self, y, beta):
        return 0.5 + 0.5 * _F.sign(y) * _S.gammainc(1 / beta, _F.abs(y) ** beta)

    def _sf(self, y, beta):
        return self._cdf(-y, beta)

    def _ppf(self, q, beta):
        # SciPy's: the smaller tail through gammainccinv (no cancellation near q = 0 or 1)
        # q = 0.5 gives 0, there written as (q - 1/2) / pdf(0) so that its derivative in q is
        # right too (the formula's is 0 * inf); a safe argument keeps the other branch finite
        c = _F.sign(q - 0.5)
        mid = c == 0
        y = _w(mid, 0.5, (1 + c) - 2 * c * q)
        at_mid = (q - 0.5) * 2 * _F.exp(_S.gammaln(1 / beta)) / beta
        return _w(mid, at_mid, c * _S._gammaincinv(1 / beta, y, upper=True) ** (1 / beta))

    def _isf(self, q, beta):
        return -self._ppf(q, beta)

    def _mean(self, beta):
        return 0.0 * beta

    def _var(self, beta):
        return _F.exp(_S.gammaln(3 / beta) - _S.gammaln(1 / beta))

    def _entropy(self, beta):
        return 1 / beta - _F.log(0.5 * beta) + _S.gammaln(1 / beta)


class weibull_min_gen(rv_continuous):
    """The Weibull minimum distribution, ``scipy.stats.weibull_min(c)``: ``cdf(y) = 1 -
    exp(-y**c)``, ``y >= 0``.

    Examples
    --------
    >>> from ndgrad import stats
    >>> stats.weibull_min.sf(1.0, 2.0)
    tensor(0.36787944)
    """

    name, shapes, safe, inner = "weibull_min", ("c",), (1.0,), 1.0

    def _argcheck(self, c):
        return c > 0

    def _support(self, c):
        return 0.0, _INF

    def _logpdf(self, y, c):
        return _F.log(c) + _S.xlogy(c - 1, y) - y ** c

    def _cdf(self, y, c):
        return -_F.expm1(-(y ** c))

    def _logcdf(self, y, c):
        return _F.log(-_F.expm1(-(y ** c)))

    def _sf(self, y, c):
        return _F.exp(-(y ** c))

    def _logsf(self, y, c):
        return -(y ** c)

    def _ppf(self, q, c):
        return (-_F.log1p(-q)) ** (1 / c)

    def _isf(self, q, c):
        return (-_F.log(q)) ** (1 / c)

    def _mean(self, c):
        return _F.exp(_S.gammaln(1 + 1 / c))

    def _var(self, c):
        return _F.exp(_S.gammaln(1 + 2 / c)) - _F.exp(2 * _S.gammaln(1 + 1 / c))

    def _entropy(self, c):
        return _EULER * (1 - 1 / c) - _F.log(c) + 1


class pareto_gen(rv_continuous):
    """The Pareto distribution, ``scipy.stats.pareto(b)``: ``pdf(y) = b / y**(b+1)``,
    ``y >= 1``.

    Examples
    --------
    >>> from ndgrad import stats
    >>> stats.pareto.cdf(2.0, 3.0)
    tensor(0.875)
    """

    name, shapes, safe, inner = "pareto", ("b",), (1.0,), 2.0

    def _argcheck(self, b):
        return b > 0

    def _support(self, b):
        return 1.0, _INF

    def _logpdf(self, y, b):
        return _F.log(b) - (b + 1) * _F.log(y)

    def _cdf(self, y, b):
        return -_F.expm1(-b * _F.log(y))

    def _sf(self, y, b):
        return _F.exp(-b * _F.log(y))

    def _logsf(self, y, b):
        return -b * _F.log(y)

    def _ppf(self, q, b):
        return _F.exp(-_F.log1p(-q) / b)

    def _isf(self, q, b):
        return _F.exp(-_F.log(q) / b)

    def _mean(self, b):
        bs = _w(b > 1, b, 2.0)
        return _w(b > 1, bs / (bs - 1), _INF)

    def _var(self, b):
        bs = _w(b > 2, b, 3.0)
        return _w(b > 2, bs / ((bs - 1) ** 2 * (bs - 2)), _INF)

    def _entropy(self, b):
        return 1 + 1 / b - _F.log(b)


def _xphi(v):
    """``v * phi(v)``, 0 at infinite ``v``."""
    fin = _F.isfinite(v)
    vs = _w(fin, v, 0.0)
    return _w(fin, vs * _F.exp(-0.5 * vs * vs - 0.5 * _LOG2PI), 0.0)


class truncnorm_gen(rv_continuous):
    """The truncated normal distribution, ``scipy.stats.truncnorm(a, b)``: the standard
    normal restricted to ``[a, b]`` (standardized bounds, as SciPy's). Differentiable in
    ``x``, ``a``, ``b``, ``loc`` and ``scale``; the normalizer ``ndtr(b) - ndtr(a)`` is
    computed directly, so bounds far in one tail lose accuracy (SciPy works in log space
    there).

    Examples
    --------
    >>> from ndgrad import stats
    >>> stats.truncnorm.pdf(0.5, -1.0, 2.0)
    tensor(0.43008508)
    """

    name, shapes, safe = "truncnorm", ("a", "b"), (-1.0, 1.0)

    def _argcheck(self, a, b):
        return a < b

    def _support(self, a, b):
        return a, b

    def _inner(self, a, b):
        return _w(a > 0, a, _w(b < 0, b, 0.0))

    def _z(self, a, b):
        return _S.ndtr(b) - _S.ndtr(a)

    def _logpdf(self, y, a, b):
        return -0.5 * y * y - 0.5 * _LOG2PI - _F.log(self._z(a, b))

    def _cdf(self, y, a, b):
        return (_S.ndtr(y) - _S.ndtr(a)) / self._z(a, b)

    def _sf(self, y, a, b):
        return (_S.ndtr(b) - _S.ndtr(y)) / self._z(a, b)

    def _ppf(self, q, a, b):
        return _S.ndtri(_S.ndtr(a) + q * self._z(a, b))

    def _isf(self, q, a, b):
        return _S.ndtri(_S.ndtr(b) - q * self._z(a, b))

    def _mean(self, a, b):
        return (self._phi(a) - self._phi(b)) / self._z(a, b)

    @staticmethod
    def _phi(v):
        return _F.exp(-0.5 * v * v - 0.5 * _LOG2PI)

    def _var(self, a, b):
        m = self._mean(a, b)
        return 1 + (_xphi(a) - _xphi(b)) / self._z(a, b) - m * m

    def _entropy(self, a, b):
        z = self._z(a, b)
        return 0.5 * (_LOG2PI + 1) + _F.log(z) + 0.5 * (_xphi(a) - _xphi(b)) / z


# ------------------------------------------------------------------------- discrete families

class poisson_gen(rv_discrete):
    """The Poisson distribution, ``scipy.stats.poisson(mu)``: ``pmf(k) = mu**k exp(-mu) /
    k!``; the cdf is ``gammaincc(k + 1, mu)``, differentiable in ``mu``.

    Examples
    --------
    >>> from ndgrad import stats
    >>> stats.poisson.pmf(2, 1.5)
    tensor(0.25102143)
    """

    name, shapes, safe = "poisson", ("mu",), (1.0,)

    def _argcheck(self, mu):
        return mu >= 0

    def _logpmf(self, k, mu):
        return _S.xlogy(k, mu) - _S.gammaln(k + 1) - mu

    def _cdf(self, k, mu):
        return _S.gammaincc(k + 1, mu)

    def _sf(self, k, mu):
        return _S.gammainc(k + 1, mu)

    def _mean(self, mu):
        return mu

    def _var(self, mu):
        return mu


def _is_int(v):
    return v == _F.floor(v)


class binom_gen(rv_discrete):
    """The binomial distribution, ``scipy.stats.binom(n, p)``: differentiable in ``p`` (``n``
    is an integer count). The cdf and sf (``special.betainc``) are differentiable in ``p``.

    Examples
    --------
    >>> from ndgrad import stats
    >>> stats.binom.pmf(1, 3, 0.5)
    tensor(0.375)
    """

    name, shapes, safe = "binom", ("n", "p"), (1.0, 0.5)

    def _cdf(self, k, n, p):
        # P(X <= k) = I_{1-p}(n - k, k + 1) for 0 <= k < n (the support's end: 1)
        ks = _w(k < n, k, n - 1)
        return _w(k < n, _S.betainc(_w(k < n, n - ks, 1.0), ks + 1, 1 - p), 1.0)

    def _sf(self, k, n, p):
        ks = _w(k < n, k, n - 1)
        return _w(k < n, _S.betainc(ks + 1, _w(k < n, n - ks, 1.0), p), 0.0)

    def _argcheck(self, n, p):
        return (n >= 0) & _is_int(n) & (p >= 0) & (p <= 1)

    def _support(self, n, p):
        return 0.0, n

    def _logpmf(self, k, n, p):
        return (_S.gammaln(n + 1) - _S.gammaln(k + 1) - _S.gammaln(n - k + 1)
                + _S.xlogy(k, p) + _S.xlog1py(n - k, -p))

    def _mean(self, n, p):
        return n * p

    def _var(self, n, p):
        return n * p * (1 - p)


class nbinom_gen(rv_discrete):
    """The negative binomial distribution, ``scipy.stats.nbinom(n, p)`` (failures before the
    ``n``-th success): differentiable in ``n`` and ``p``; the cdf and sf
    (``special.betainc``) in ``p`` and, to first order, ``n``.

    Examples
    --------
    >>> from ndgrad import stats
    >>> stats.nbinom.pmf(2, 3.0, 0.5)
    tensor(0.1875)
    """

    name, shapes, safe = "nbinom", ("n", "p"), (1.0, 0.5)

    def _cdf(self, k, n, p):
        return _S.betainc(n, k + 1, p)               # P(X <= k) = I_p(n, k + 1)

    def _sf(self, k, n, p):
        return _S.betainc(k + 1, n, 1 - p)

    def _argcheck(self, n, p):
        return (n > 0) & (p > 0) & (p <= 1)

    def _logpmf(self, k, n, p):
        return (_S.gammaln(n + k) - _S.gammaln(k + 1) - _S.gammaln(n) + n * _F.log(p)
                + _S.xlog1py(k, -p))

    def _mean(self, n, p):
        return n * (1 - p) / p

    def _var(self, n, p):
        return n * (1 - p) / (p * p)


class geom_gen(rv_discrete):
    """The geometric distribution, ``scipy.stats.geom(p)`` on ``1, 2, ...``: ``pmf(k) =
    (1-p)**(k-1) p``.

    Examples
    --------
    >>> from ndgrad import stats
    >>> stats.geom.cdf(2, 0.5)
    tensor(0.75)
    """

    name, shapes, safe, inner = "geom", ("p",), (0.5,), 1.0

    def _argcheck(self, p):
        return (p > 0) & (p <= 1)

    def _support(self, p):
        return 1.0, _INF

    def _logpmf(self, k, p):
        return _S.xlog1py(k - 1, -p) + _F.log(p)

    def _cdf(self, k, p):
        return -_F.expm1(k * _F.log1p(-p))

    def _sf(self, k, p):
        return _F.exp(k * _F.log1p(-p))

    def _mean(self, p):
        return 1 / p

    def _var(self, p):
        return (1 - p) / (p * p)


class bernoulli_gen(rv_discrete):
    """The Bernoulli distribution, ``scipy.stats.bernoulli(p)`` on ``{0, 1}``.

    Examples
    --------
    >>> from ndgrad import stats
    >>> stats.bernoulli.pmf([0, 1], 0.25)
    tensor([0.75, 0.25])
    """

    name, shapes, safe = "bernoulli", ("p",), (0.5,)

    def _argcheck(self, p):
        return (p >= 0) & (p <= 1)

    def _support(self, p):
        return 0.0, 1.0

    def _logpmf(self, k, p):
        return _S.xlogy(k, p) + _S.xlog1py(1 - k, -p)

    def _cdf(self, k, p):
        return 1 - p + 0.0 * k

    def _mean(self, p):
        return p

    def _var(self, p):
        return p * (1 - p)

    def _entropy(self, p):
        return -_S.xlogy(p, p) - _S.xlog1py(1 - p, -p)


norm, t, cauchy, laplace, logistic = norm_gen(), t_gen(), cauchy_gen(), laplace_gen(), \
    logistic_gen()
expon, gamma, beta, chi2 = expon_gen(), gamma_gen(), beta_gen(), chi2_gen()
lognorm, uniform = lognorm_gen(), uniform_gen()
vonmises, gennorm, weibull_min, pareto, truncnorm = vonmises_gen(), gennorm_gen(), \
    weibull_min_gen(), pareto_gen(), truncnorm_gen()
poisson, binom, nbinom, geom, bernoulli = poisson_gen(), binom_gen(), nbinom_gen(), \
    geom_gen(), bernoulli_gen()


# ------------------------------------------------------------------------ multivariate normal

class multivariate_normal_gen:
    """The multivariate normal distribution, ``scipy.stats.multivariate_normal(mean, cov)``:
    ``logpdf`` and ``pdf`` differentiable in ``x``, ``mean`` and ``cov`` (through
    :func:`ndgrad.linalg.cholesky` and :func:`ndgrad.linalg.solve_triangular`); ``entropy``
    in ``cov``. ``x`` has shape ``(..., d)`` (for ``d = 1`` also ``(...)``); the result has
    ``x``'s leading shape, squeezed as SciPy's. ``cov`` must be positive definite, or, with
    ``allow_singular=True``, positive semidefinite: then, as SciPy's, the density lives on
    ``mean + range(cov)`` (``logpdf = -inf`` off it, by SciPy's support test) and uses the
    pseudo-determinant and the pseudo-inverse, with SciPy's rank cut (eigenvalues at most
    ``1e6 eps max|eig|``); it is differentiable to every order in ``x``, ``mean`` and ``cov``
    along covariances of the same rank (Note [Singular multivariate normal]). ``cdf`` and
    ``logcdf`` need a multivariate normal integral and raise NotImplementedError.

    Examples
    --------
    >>> import ndgrad
    >>> from ndgrad import stats
    >>> cov = ndgrad.tensor([[2.0, 0.5], [0.5, 1.0]])
    >>> stats.multivariate_normal.logpdf([0.5, -1.0], mean=[0.0, 0.0], cov=cov)
    tensor(-2.90339925)
    >>> singular = ndgrad.tensor([[1.0, 1.0], [1.0, 1.0]])   # rank 1: the line x0 = x1
    >>> stats.multivariate_normal.logpdf([[0.5, 0.5], [0.5, 0.6]], cov=singular,
    ...                                  allow_singular=True)
    tensor([-1.39051212,        -inf])
    """

    def __call__(self, mean=None, cov=1, allow_singular=False):
        return rv_frozen(self, (), dict(mean=mean, cov=cov, allow_singular=allow_singular))

    def __repr__(self):
        return "<ndgrad.stats.multivariate_normal>"

    name = "multivariate_normal"

    @staticmethod
    def _params(mean, cov, allow_singular):
        cov = _t(cov)
        if mean is None:
            dim = 1 if cov.ndim == 0 else cov.shape[-1]
            mean = zeros(dim, dtype=cov.dtype, device=cov.device)
        mean = _t(mean)
        if mean.ndim == 0:
            mean = _F.reshape(mean, (1,))
        if mean.ndim != 1:
            raise ValueError(f"multivariate_normal: mean must be a vector, got shape "
                             f"{tuple(mean.shape)}")
        dim = mean.shape[0]
        if cov.ndim == 0:
            cov = cov * eye(dim, dtype=cov.dtype, device=cov.device)
        elif cov.ndim == 1:
            cov = _F.diag(cov)
        if tuple(cov.shape) != (dim, dim):
            raise ValueError(f"multivariate_normal: cov must have shape ({dim}, {dim}) to "
                             f"match mean, got {tuple(cov.shape)}")
        return mean, cov, dim

    # Note [Singular multivariate normal]
    # ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
    # SciPy reads a covariance through eigh: eigenvalues at most cut = 1e6 eps max|s|
    # (1e3 for float32) are zero, one below -cut is an error (not semidefinite); the rank r
    # counts the others; logpdf = -(r log 2pi + log pdet + dev' C^+ dev) / 2 on the support,
    # -inf where |V' dev| >= 1e3 cut (V: the null eigenvectors; SciPy's test, in its units).
    # The eigenvectors of a singular C are not differentiable (its zero eigenvalues repeat),
    # so the range is taken from the host eigh only as a constant Q (d x r) and carried
    # differentiably: near C, range(C Q) = range(C) for every C of rank r, so with W the
    # orthonormal factor of qr(C Q) (differentiable: C Q has full column rank) and
    # C_r = W' C W (r x r, positive definite),
    #
    #     pdet(C) = det(C_r),   C^+ = W C_r^-1 W',
    #
    # exact for every C of rank r near the given one (W differs from an eigenbasis by a
    # rotation, which neither changes). So the derivatives in cov are those of SciPy's
    # function along covariances of the same rank (cov = B B' moving B, say), to every order;
    # a direction that raises the rank leaves the support, where no derivative exists. A full
    # rank cov takes the Cholesky path, as without allow_singular.
    @staticmethod
    def _psd(cov, who):
        """SciPy's reading of ``cov`` (Note [Singular multivariate normal]): the range and
        null bases (host arrays) and the cut."""
        c = _host(cov.detach())
        s, u = np.linalg.eigh(c)
        scale = float(np.max(np.abs(s), initial=0.0))
        cut = (1e3 if s.dtype == np.float32 else 1e6) * np.finfo(s.dtype).eps * scale
        if s.size and s.min() < -cut:
            raise ValueError(f"ndgrad.stats.multivariate_normal.{who}: cov must be symmetric "
                             f"positive semidefinite (its smallest eigenvalue is "
                             f"{s.min():.3g})")
        keep = s > cut
        return u[:, keep], u[:, ~keep], cut

    @staticmethod
    def _range_factor(cov, basis):
        """(W, L): W an orthonormal basis of ``cov``'s range (differentiable), L the Cholesky
        factor of W' cov W."""
        from . import linalg

        q = asarray(basis.astype(_host(cov.detach()).dtype), device=cov.device)
        w = linalg.qr(cov @ q).Q
        c_r = _F.transpose(w) @ cov @ w
        return w, linalg.cholesky(0.5 * (c_r + _F.transpose(c_r)))

    def _factor(self, cov, dim, allow_singular, who):
        """(W or None, Cholesky factor, rank, null basis or None)."""
        from . import linalg

        if allow_singular:
            basis, null, cut = self._psd(cov, who)
            if basis.shape[1] < dim:
                if basis.shape[1] == 0:
                    return None, None, 0, (null, cut)
                w, chol = self._range_factor(cov, basis)
                return w, chol, basis.shape[1], (null, cut)
        try:
            chol = linalg.cholesky(cov)
        except np.linalg.LinAlgError as e:
            raise np.linalg.LinAlgError(
                f"ndgrad.stats.multivariate_normal.{who}: cov must be symmetric positive "
                "definite when allow_singular is False (as SciPy's); pass allow_singular=True "
                f"for a singular (semidefinite) covariance. ({e})") from None
        return None, chol, dim, None

    def logpdf(self, x, mean=None, cov=1, allow_singular=False):
        """The log density at ``x`` (shape ``(..., d)``)."""
        from . import linalg

        mean, cov, dim = self._params(mean, cov, allow_singular)
        x = _t(x)
        if x.ndim == 0:
            x = _F.reshape(x, (1,))
        if dim == 1 and x.shape[-1] != 1:
            x = _F.reshape(x, tuple(x.shape) + (1,))
        if x.shape[-1] != dim:
            raise ValueError(f"multivariate_normal: x's last axis must have length {dim} "
                             f"(the dimension of mean), got shape {tuple(x.shape)}")
        lead = tuple(x.shape[:-1])
        diff = _F.reshape(x - mean, (-1, dim))
        w, chol, rank, null = self._factor(cov, dim, allow_singular, "logpdf")
        # log N = -|L^-1 (x - mean)|^2 / 2 - sum log diag L - r log(2 pi) / 2
        if chol is None:  # (rank 0: only the mean itself, and SciPy's test never holds)
            out = 0.0 * _F.sum(diff, axis=1)
        else:
            proj = _F.transpose(diff) if w is None else _F.transpose(w) @ _F.transpose(diff)
            z = linalg.solve_triangular(chol, proj, upper=False)
            out = (-0.5 * _F.sum(z * z, axis=0) - _F.sum(_F.log(_F.diagonal(chol)))
                   - 0.5 * rank * _LOG2PI)
        if null is not None:
            basis, cut = null
            resid = np.linalg.norm(_host(diff.detach()) @ basis, axis=-1)
            out = _w(asarray(resid < 1e3 * cut, device=out.device), out, -_INF)
        out = _F.reshape(out, lead)
        return _F.squeeze(out) if out.ndim and 1 in out.shape else out

    def pdf(self, x, mean=None, cov=1, allow_singular=False):
        """The density at ``x``, ``exp(logpdf)``."""
        return _F.exp(self.logpdf(x, mean, cov, allow_singular))

    _integral = ("it needs a multivariate normal integral (SciPy's qmvn), which ndgrad does "
                 "not have")
    missing = {"cdf": _integral, "logcdf": _integral}

    def cdf(self, x, mean=None, cov=1, allow_singular=False):
        """Not implemented: needs the multivariate normal integral (SciPy's ``qmvn``)."""
        raise NotImplementedError("ndgrad.stats.multivariate_normal.cdf is not implemented: "
                                  + self.missing["cdf"])

    def logcdf(self, x, mean=None, cov=1, allow_singular=False):
        """Not implemented: needs the multivariate normal integral (SciPy's ``qmvn``)."""
        raise NotImplementedError("ndgrad.stats.multivariate_normal.logcdf is not "
                                  "implemented: " + self.missing["logcdf"])

    def entropy(self, mean=None, cov=1, allow_singular=False):
        """The differential entropy ``(r log(2 pi e) + log pdet cov) / 2`` (``r`` the rank:
        SciPy's entropy allows a singular ``cov`` whatever ``allow_singular`` says)."""
        mean, cov, dim = self._params(mean, cov, allow_singular)
        _, chol, rank, _ = self._factor(cov, dim, True, "entropy")
        logdet = 0.0 if chol is None else 2 * _F.sum(_F.log(_F.diagonal(chol)))
        return 0.5 * (rank * (_LOG2PI + 1) + logdet) + 0.0 * _F.sum(cov)

    def rvs(self, mean=None, cov=1, size=1, random_state=None, allow_singular=False):
        """Draws with NumPy's ``Generator.multivariate_normal``, as a Tensor that is NOT
        differentiable (squeezed as SciPy's)."""
        mean, cov, dim = self._params(mean, cov, allow_singular)
        rng = (random_state if isinstance(random_state, np.random.Generator)
               else np.random.default_rng(random_state))
        draws = rng.multivariate_normal(_host(mean), _host(cov), size=size)
        return asarray(np.squeeze(draws), device=mean.device)


multivariate_normal = multivariate_normal_gen()


# ------------------------------------------------------------------------------- dirichlet

class dirichlet_gen:
    """The Dirichlet distribution, ``scipy.stats.dirichlet(alpha)``: ``logpdf`` and ``pdf``
    differentiable in ``x`` and ``alpha``; ``mean``, ``var`` and ``entropy`` in ``alpha``.
    As in SciPy, the components run along ``x``'s FIRST axis (``x.shape[0] == len(alpha)``,
    or ``len(alpha) - 1`` with the last component ``1 - sum``), and each point must lie on
    the simplex.

    Examples
    --------
    >>> from ndgrad import stats
    >>> stats.dirichlet.logpdf([0.2, 0.8], [2.0, 3.0])
    tensor(0.42918163)
    """

    name = "dirichlet"

    def __call__(self, alpha):
        return rv_frozen(self, (alpha,), {})

    def __repr__(self):
        return "<ndgrad.stats.dirichlet>"

    @staticmethod
    def _alpha(alpha):
        alpha = _t(alpha)
        if alpha.ndim != 1 or bool(_host(alpha <= 0).any()):
            raise ValueError("dirichlet: alpha must be a vector of positive numbers, got "
                             f"{_host(alpha)}")
        return alpha

    def logpdf(self, x, alpha):
        """The log density at ``x`` (components along axis 0)."""
        alpha = self._alpha(alpha)
        x = _t(x)
        k = alpha.shape[0]
        if x.ndim == 0 or x.shape[0] not in (k, k - 1):
            raise ValueError(f"dirichlet: x's first axis must have length {k} or {k - 1} "
                             f"(len(alpha)), got shape {tuple(x.shape)}")
        if x.shape[0] == k - 1:
            x = _F.concatenate([x, 1 - _F.sum(x, axis=0, keepdims=True)], axis=0)
        xh = _host(x)
        if (xh < 0).any() or (xh > 1).any() or not np.allclose(xh.sum(0), 1.0):
            raise ValueError("dirichlet: each point x must lie on the simplex (components "
                             "in [0, 1] summing to 1 along axis 0)")
        a = _F.reshape(alpha, (k,) + (1,) * (x.ndim - 1))
        return (_F.sum(_S.xlogy(a - 1, x), axis=0) + _S.gammaln(_F.sum(alpha))
                - _F.sum(_S.gammaln(alpha)))

    def pdf(self, x, alpha):
        """The density at ``x``, ``exp(logpdf)``."""
        return _F.exp(self.logpdf(x, alpha))

    def mean(self, alpha):
        """``alpha / sum(alpha)``."""
        alpha = self._alpha(alpha)
        return alpha / _F.sum(alpha)

    def var(self, alpha):
        """``alpha (a0 - alpha) / (a0**2 (a0 + 1))`` with ``a0 = sum(alpha)``."""
        alpha = self._alpha(alpha)
        a0 = _F.sum(alpha)
        return alpha * (a0 - alpha) / (a0 * a0 * (a0 + 1))

    def entropy(self, alpha):
        """``log B(alpha) + (a0 - K) psi(a0) - sum (alpha_j - 1) psi(alpha_j)``."""
        alpha = self._alpha(alpha)
        a0, k = _F.sum(alpha), alpha.shape[0]
        logb = _F.sum(_S.gammaln(alpha)) - _S.gammaln(a0)
        return logb + (a0 - k) * _S.digamma(a0) - _F.sum((alpha - 1) * _S.digamma(alpha))

    def rvs(self, alpha, size=1, random_state=None):
        """Draws with NumPy's ``Generator.dirichlet``, as a Tensor that is NOT
        differentiable."""
        alpha = self._alpha(alpha)
        rng = (random_state if isinstance(random_state, np.random.Generator)
               else np.random.default_rng(random_state))
        return asarray(rng.dirichlet(_host(alpha), size=size), device=alpha.device)


dirichlet = dirichlet_gen()


# ------------------------------------------------------------------------------- functions

def entropy(pk, qk=None, base=None, axis=0):
    """The Shannon entropy of ``pk``, or the Kullback-Leibler divergence of ``pk`` from
    ``qk`` (``scipy.stats.entropy``): ``pk`` and ``qk`` are normalized along ``axis`` first.

    Differentiable in ``pk`` and ``qk``.

    Parameters
    ----------
    pk, qk : Tensor or array_like
        (Unnormalized) probabilities; ``qk`` broadcast against ``pk``.
    base : float, optional
        The logarithm's base (default ``e``).
    axis : int
        The axis to sum over.

    Examples
    --------
    >>> from ndgrad import stats
    >>> stats.entropy([0.5, 0.5], base=2)
    tensor(1.)
    >>> stats.entropy([1.0, 3.0], [1.0, 1.0])
    tensor(0.13081204)
    """
    pk = _t(pk)
    pk = pk / _F.sum(pk, axis=axis, keepdims=True)
    if qk is None:
        vec = _S.entr(pk)
    else:
        qk = _t(qk)
        if np.broadcast_shapes(tuple(pk.shape), tuple(qk.shape)) != tuple(pk.shape):
            raise ValueError(f"entropy: qk (shape {tuple(qk.shape)}) must broadcast to pk's "
                             f"shape {tuple(pk.shape)}")
        qk = qk / _F.sum(qk, axis=axis, keepdims=True)
        vec = _S.rel_entr(pk, qk)
    s = _F.sum(vec, axis=axis)
    return s / math.log(base) if base is not None else s


def zscore(a, axis=0, ddof=0):
    """``(a - mean) / std`` along ``axis`` (``scipy.stats.zscore``, no ``nan_policy``),
    differentiable in ``a``. ``axis=None`` standardizes the flattened array.

    Examples
    --------
    >>> from ndgrad import stats
    >>> stats.zscore([1.0, 2.0, 3.0])
    tensor([-1.22474487,  0.        ,  1.22474487])
    """
    a = _t(a)
    if axis is None:
        return (a - _F.mean(a)) / _F.std(a, ddof=ddof)
    return ((a - _F.mean(a, axis=axis, keepdims=True))
            / _F.std(a, axis=axis, ddof=ddof, keepdims=True))
