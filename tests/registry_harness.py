"""The registry harness: what the registry-driven suites share.

Every registered op and composite (``ndgrad.core.ops.REGISTRY`` / ``COMPOSITES``; never a
hand list) is checked by the suites that import this module:

* ``tests/test_op_properties.py``: values against NumPy/SciPy, vjp against finite
  differences, create_graph formulas against first-order ones, second order, jvp (the raw
  rule and public forward mode) against finite differences, declared exceptions, views;
* ``tests/test_op_batching.py``: vmap, vmap of vjp and nested vmap against loops;
* ``tests/test_op_compositions.py``: the transforms one at a time and composed, two and
  three deep, against finite differences and loops;
* ``tests/checks/test_gradcheck.py``: gradcheck's fast mode with forward AD on every op.

This module draws an op's sample for a dtype (:func:`draw`, a :class:`Sample`), calls the
public function with tensors on the current device (:meth:`Sample.call`), knows the
differentiable positions and the op as a function of its floating inputs
(:meth:`Sample.function`), computes the references (:data:`REFERENCES` and
:func:`reference` for values; :class:`Linearization`, central differences along every real
coordinate, for derivatives) and compares (:func:`assert_close`); the finite-difference and
comparison helpers live in tests/support.py and are re-exported here. Declared exceptions are
read from the op (``notes``) by :func:`require`, which skips with the reason.

Complex numbers follow PyTorch's convention (the registry's docstring; Note [Complex
derivatives from finite differences] in tests/support.py).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.linalg
import scipy.special

import ndgrad
from ndgrad.checks.strategies import op_samples
from ndgrad.core.ops import COMPOSITES, REGISTRY
from ndgrad.core.dispatch import apply
from ndgrad.core.ops.registry import VARIADIC, Domain, Op
from support import (EPS, Linearization, assert_close, fd_directional, host,  # noqa: F401
                     leaves, on_device, random_like)

ENTRIES = sorted(REGISTRY) + sorted(COMPOSITES)
FLOAT, COMPLEX = "float64", "complex128"


def entry(name):
    """The registered op or composite of that qualified name."""
    return REGISTRY.get(name) or COMPOSITES[name]


def dtypes(op):
    """The dtypes the suites draw an op's floating inputs in: complex128 too wherever the op
    accepts complex numbers (``op.domain.complex``)."""
    return [FLOAT, COMPLEX] if op.domain.complex else [FLOAT]


def cases(names=ENTRIES):
    """pytest parameters ``(name, dtype)``: every op of ``names`` in every dtype it takes,
    with ids such as ``sin-complex128``."""
    return [pytest.param(n, dt, id=f"{n}-{dt}") for n in names for dt in dtypes(entry(n))]


def elementwise_function(name, sample):
    """An elementwise op's sample as a function of its floating inputs alone (a Tensor each,
    the first output returned), the other array inputs held at their first element, so that
    each floating input can be a column of points."""
    op = entry(name)
    arrays = [a.reshape(-1)[0] if i not in sample.pos and isinstance(a, np.ndarray) and a.size
              else a for i, a in enumerate(sample.arrays)]
    fixed = Sample(op, tuple(arrays) + sample.extra, sample.kwargs)

    def f(*xs):
        return fixed.call(fixed.inputs(xs))[0]
    return f


def points_in_domain(f, cols):
    """The columns of points (one per floating input of ``f``) where ``f`` takes them: all of
    them, or, for an op that checks its domain (a ValueError), the points it accepts."""
    with ndgrad.no_grad():
        try:
            f(*(ndgrad.tensor(c) for c in cols))
            return cols
        except ValueError:
            keep = []
            for j in range(len(cols[0])):
                try:
                    f(*(ndgrad.tensor(c[j:j + 1]) for c in cols))
                    keep.append(j)
                except ValueError:
                    pass
            return [c[keep] for c in cols]


def paired(outs, w):
    """``sum re(w * out)`` over the outputs whose weight is not None (Tensors): a real
    scalar of the outputs."""
    total = None
    for o, wi in zip(outs, w):
        if wi is not None:
            term = ndgrad.sum(ndgrad.real(o * wi))
            total = term if total is None else total + term
    return total


def checked_for(op, *without):
    """Whether derivative checks apply to ``op``: it is differentiable and declares none of
    the exceptions ``without`` (``"vjp"``, ``"jvp"``, ``"gradgrad"``, ``"fd"``)."""
    return bool(op.differentiable) and \
        not set(getattr(op, "notes", None) or {}) & set(without)


def differentiable(names=ENTRIES, *without):
    """The ops of ``names`` that derivative checks apply to (:func:`checked_for`): a
    derivative sweep's parametrization, decided at collection (Note [The registry
    matrix])."""
    return [n for n in names if checked_for(entry(n), *without)]


def require(op, *notes):
    """Skip, with the reason, a derivative check of an op that is not differentiable or that
    declares one of the exceptions ``notes`` (``"vjp"``, ``"jvp"``, ``"gradgrad"``, ``"fd"``)."""
    if not op.differentiable:
        pytest.skip(f"{op.qualname}: not differentiable (declared differentiable=False)")
    declared = getattr(op, "notes", None) or {}
    for key in notes:
        if key in declared:
            pytest.skip(f"{op.qualname}: notes[{key!r}]: {declared[key]}")


# ------------------------------------------------------------------------------ samples
def is_float_array(a):
    return isinstance(a, np.ndarray) and a.dtype.kind in "fc"


def tensor(a, requires_grad=False):
    """A NumPy array as a Tensor on the default device, keeping its dtype."""
    return ndgrad.tensor(a, dtype=a.dtype, requires_grad=requires_grad)


def outs(r):
    """An op's result as a tuple of outputs."""
    return tuple(r) if isinstance(r, (tuple, list)) else (r,)


def view_outputs(op, x, extra=(), kwargs=None):
    """The positions of ``op``'s outputs on the NumPy array ``x`` that are views of it (share
    its memory): where an in-place change of ``x`` or of that output must reach the other."""
    from ndgrad.core.backend import NUMPY
    r = outs(op.forward(NUMPY, x, *extra, **(kwargs or {})))
    return [k for k, o in enumerate(r) if np.may_share_memory(o, x)]


def public_call(op, inputs, extra=(), kwargs=None):
    """Call the public function of ``op``: the array inputs (one sequence for a packing op
    such as ``concat``), the extra positional parameters, and the keyword parameters with
    their floating arrays on the default device (:func:`support.on_device`)."""
    kwargs = on_device(kwargs or {})
    if getattr(op, "pack", False):
        return op.public(list(inputs), *extra, **kwargs)
    return op.public(*inputs, *extra, **kwargs)


class Sample:
    """One drawn input of an op: ``args`` (array inputs then extra positional parameters) and
    ``kwargs``, as the op's sampler returns them (NumPy arrays on the host)."""

    def __init__(self, op, args, kwargs):
        self.op = op
        self.args = tuple(args)
        self.kwargs = dict(kwargs)
        self.nin = len(self.args) if op.nin == VARIADIC else op.nin
        self.arrays = self.args[:self.nin]
        self.extra = self.args[self.nin:]
        # the differentiable positions: the floating arrays (numbers are constants)
        self.pos = [i for i, a in enumerate(self.arrays) if is_float_array(a)]

    def __repr__(self):
        return f"Sample({self.op.qualname}, args={self.args!r}, kwargs={self.kwargs!r})"

    @property
    def floats(self):
        """The floating inputs (NumPy arrays), in order."""
        return [self.arrays[p] for p in self.pos]

    def inputs(self, floats=None, requires_grad=False):
        """The array inputs as the public function takes them: Tensors on the default
        device (numbers stay numbers); the floating ones replaced by ``floats`` (Tensors or
        arrays) where given, else made to require grad if ``requires_grad``."""
        full = [tensor(a) if isinstance(a, np.ndarray) else a for a in self.arrays]
        if floats is None:
            floats = [tensor(self.arrays[p], requires_grad=requires_grad) for p in self.pos]
        for p, x in zip(self.pos, floats, strict=True):
            full[p] = x if isinstance(x, ndgrad.Tensor) else tensor(np.asarray(x))
        return full

    def call(self, inputs):
        """The public function on ``inputs`` (all array inputs), as a tuple of outputs."""
        return outs(public_call(self.op, inputs, self.extra, self.kwargs))

    def function(self, floating_outputs=False):
        """The op as a function of its floating inputs (Tensors, in order), returning the
        tuple of its outputs (only the floating ones if ``floating_outputs``)."""
        def f(*floats):
            r = self.call(self.inputs(floats))
            return tuple(o for o in r if o.dtype.kind in "fc") if floating_outputs else r
        f.__name__ = self.op.name
        return f

    def leaves(self):
        """Fresh Tensors of the floating inputs that require grad."""
        return tuple(tensor(a, requires_grad=True) for a in self.floats)

    def evaluate(self, floats):
        """The floating outputs at the floating inputs ``floats`` (NumPy arrays) as NumPy,
        without recording anything: what finite differences evaluate."""
        with ndgrad.no_grad():
            return tuple(host(o) for o in self.function(floating_outputs=True)(*floats))


def draw(data, op, dtype=FLOAT, **sizes):
    """Draw a :class:`Sample` of ``op`` with floating inputs of ``dtype`` (hypothesis'
    ``st.data()``); ``sizes`` (``max_side``, ``max_dims``) bound the shapes."""
    args, kwargs = data.draw(op_samples(op, complex=dtype == COMPLEX, **sizes),
                             label=f"{op.qualname} sample")
    return Sample(op, args, kwargs)


# --------------------------------------------------------------------------- references
def _transpose(x, axes=None, *more):
    return np.transpose(x, (axes,) + more if more else axes)


def _index_add(x, values, index):
    out = np.array(x, copy=True, dtype=np.result_type(x, values))
    np.add.at(out, index, values)
    return out


def _index_put(x, values, index):
    out = np.array(x, copy=True, dtype=np.result_type(x, values))
    out[index] = values
    return out


def _sort(x, axis=-1, descending=False, stable=True):
    out = np.sort(x, axis=axis, kind="stable")
    return np.flip(out, axis=-1 if axis is None else axis) if descending else out


def _argsort(x, axis=-1, descending=False, stable=True):
    if axis is None:
        x, axis = x.ravel(), -1
    if descending:  # stable descending: larger first, ties in index order
        return np.argsort(-x, axis=axis, kind="stable")
    return np.argsort(x, axis=axis, kind="stable")


def _logsumexp(x, axis=None, keepdims=False):
    return np.log(np.sum(np.exp(x), axis=axis, keepdims=keepdims))


def _special_logsumexp(a, axis=None, b=None, keepdims=False, return_sign=False):
    """SciPy's logsumexp, except that a 0-d ``a`` with ``keepdims=True`` keeps its shape
    ``()`` (SciPy returns shape ``(1,)`` there; NumPy's reductions and ndgrad.logsumexp give
    ``()``)."""
    r = scipy.special.logsumexp(a, axis=axis, b=b, keepdims=keepdims, return_sign=return_sign)
    if keepdims and np.ndim(a) == 0 and np.ndim(b) == 0:
        r = tuple(np.reshape(v, ()) for v in r) if return_sign else np.reshape(r, ())
    return r


def _fix_gauge(v, vh=None):
    """The documented eigenvector/singular vector gauge: each column of ``v`` scaled by the
    unit phase (sign) that makes its entry of largest magnitude real and positive; the rows of
    ``vh`` by the conjugates."""
    if v.shape[-1] == 0 or v.shape[-2] == 0:
        return v, vh
    piv = np.take_along_axis(v, np.argmax(np.abs(v), axis=-2)[..., None, :], axis=-2)
    phase = np.conj(piv) / np.abs(piv) if v.dtype.kind == "c" else np.where(piv < 0, -1.0, 1.0)
    v = v * phase
    if vh is not None:
        vh = vh * np.conj(np.swapaxes(phase, -1, -2))
    return v, vh


def _as_complex(x):
    return x.astype(np.result_type(x.dtype, np.complex64))


def _eigh(a, UPLO="L"):
    lam, v = np.linalg.eigh(a, UPLO=UPLO)
    return lam, _fix_gauge(v)[0]


def _eig(a):
    lam, v = np.linalg.eig(a)
    return _as_complex(lam), _fix_gauge(_as_complex(v))[0]


def _svd(a, full_matrices=False):
    u, s, vh = np.linalg.svd(a, full_matrices=full_matrices)
    k = s.shape[-1]
    u1, vh1 = _fix_gauge(u[..., :k], vh[..., :k, :])
    return (np.concatenate([u1, u[..., k:]], axis=-1), s,
            np.concatenate([vh1, vh[..., k:, :]], axis=-2))


def _zeta_derivative(x, q=None, n=1):
    """Independent of the Euler-Maclaurin forward: 2000 terms summed directly, the tail
    integral through SciPy's incomplete gamma function, the trapezoid end corrections
    f(K) / 2 - f'(K) / 12 (relative error below 1e-13 for x >= 1.5)."""
    if n == 0:
        return scipy.special.zeta(x) if q is None else scipy.special.zeta(x, q)
    x = np.asarray(x, dtype=np.float64)
    q = np.asarray(1.0 if q is None else q, dtype=np.float64)
    K = 2000
    k = np.arange(K, dtype=np.float64).reshape((K,) + (1,) * max(x.ndim, q.ndim))
    direct = np.sum(np.log(k + q) ** n * (k + q) ** -x, axis=0)
    kq = K + q
    L = np.log(kq)
    y = x - 1
    tail = scipy.special.gammaincc(n + 1, y * L) * math.factorial(n) / y ** (n + 1)
    f = L ** n * kq ** -x
    df = (n * L ** (n - 1) - x * L ** n) * kq ** (-x - 1)
    return (-1) ** n * (direct + tail + f / 2 - df / 12)


def _shape_derivative(f, a, *args, h=1e-3):
    """``d/da f(a, *args)`` by the five-point central difference of SciPy's ``f``: error
    about ``h^4 f^(5) / 30 + 1.5 eps / h``, a few 1e-13 for the incomplete gamma and beta
    functions (values in [0, 1]) at the shapes the samplers draw (>= 0.5)."""
    a = np.asarray(a, dtype=np.float64)
    return (8 * (f(a + h, *args) - f(a - h, *args)) - (f(a + 2 * h, *args)
                                                       - f(a - 2 * h, *args))) / (12 * h)


def _betainc_d(a, b, x, wrt=0):
    if wrt == 0:
        return _shape_derivative(scipy.special.betainc, a, b, x)
    return _shape_derivative(lambda b_, a_, x_: scipy.special.betainc(a_, b_, x_), b, a, x)


def _solve_triangular(a, b, *, upper, left=True, unitriangular=False):
    if left:
        return scipy.linalg.solve_triangular(a, b, lower=not upper, unit_diagonal=unitriangular)
    xt = scipy.linalg.solve_triangular(a, np.swapaxes(b, -1, -2), trans=1, lower=not upper,
                                       unit_diagonal=unitriangular)
    return np.swapaxes(xt, -1, -2)


def _cholesky_solve(b, L, upper=False):
    t = np.triu(L) if upper else np.tril(L)
    a = np.conj(np.swapaxes(t, -1, -2)) @ t if upper else t @ np.conj(np.swapaxes(t, -1, -2))
    return np.linalg.solve(a, b)


def _lstsq(a, b, rcond=None):
    vec = b.ndim == 1
    bm = b[..., None] if vec else b
    batch = np.broadcast_shapes(a.shape[:-2], bm.shape[:-2])
    a = np.broadcast_to(a, batch + a.shape[-2:])
    bm = np.broadcast_to(bm, batch + bm.shape[-2:])
    parts = [np.linalg.lstsq(a[i], bm[i], rcond=rcond) for i in np.ndindex(*batch)]
    x = np.stack([p[0] for p in parts]).reshape(batch + parts[0][0].shape)
    if vec:
        x = x[..., 0]
    res = np.stack([p[1] for p in parts]).reshape(batch + parts[0][1].shape)
    rank = np.array([p[2] for p in parts]).reshape(batch)
    sv = np.stack([p[3] for p in parts]).reshape(batch + parts[0][3].shape)
    return x, res, rank, sv


# Forward references of the ops whose NumPy/SciPy function of the same name is missing or
# differs in signature or convention. Every other op is compared with np.<name>,
# np.<namespace>.<name> or scipy.special.<name> (:func:`reference`).
REFERENCES = {
    "transpose": _transpose,
    "concat": lambda *arrays, axis=0: np.concat(arrays, axis=axis),
    "stack": lambda *arrays, axis=0: np.stack(arrays, axis=axis),
    "clone": np.copy,
    "astype": lambda x, dtype: x.astype(dtype),
    "to_device": lambda x, device, source=None: x.copy(),
    "logsumexp": _logsumexp,
    "getitem": lambda x, index: x[index],
    "index_add": _index_add,
    "index_put": _index_put,
    "sort": _sort,
    "argsort": _argsort,
    "sigmoid": lambda x: 1 / (1 + np.exp(-np.asarray(x))),
    "einsum": lambda *operands, subscripts: np.einsum(subscripts, *operands),
    "linalg.eigh": _eigh,
    "linalg.eig": _eig,
    "linalg.eigvals": lambda a: _as_complex(np.linalg.eig(a)[0]),
    "linalg.svd": _svd,
    "linalg.logdet": lambda a: np.log(np.linalg.det(a)),
    "linalg.solve_triangular": _solve_triangular,
    "linalg.cholesky_solve": _cholesky_solve,
    "linalg.matrix_exp": scipy.linalg.expm,
    "linalg.multi_dot": lambda *arrays: np.linalg.multi_dot(arrays),
    "linalg.lstsq": _lstsq,
    "special.zeta_derivative": _zeta_derivative,
    "special.sinc": np.sinc,  # SciPy has no special.sinc
    # ndgrad/core/ops/special_gamma.py: shape derivatives (SciPy has none) and the inverses
    "special._gammainc_da": lambda a, x: _shape_derivative(scipy.special.gammainc, a, x),
    "special._betainc_d": _betainc_d,
    "special._gammaincinv": lambda a, y, upper=False: (
        scipy.special.gammainccinv if upper else scipy.special.gammaincinv)(a, y),
    "special.logsumexp": _special_logsumexp,
    # real input, real output (SciPy's is always complex)
    "special.lambertw": lambda z, k=0, tol=1e-8: np.where(
        scipy.special.lambertw(z, k, tol).imag == 0, scipy.special.lambertw(z, k, tol).real,
        np.nan) if not np.iscomplexobj(z) else scipy.special.lambertw(z, k, tol),
    # ndgrad/numpy/joining.py, selecting.py
    # (packing functions take their arrays as one sequence; the sample spreads them)
    "concatenate": lambda *arrays, **kw: np.concatenate(arrays, **kw),
    "vstack": lambda *tup, **kw: np.vstack(tup, **kw),
    "hstack": lambda *tup, **kw: np.hstack(tup, **kw),
    "dstack": lambda *tup: np.dstack(tup),
    "column_stack": lambda *tup: np.column_stack(tup),
    # NumPy's order inside the two parts is unspecified; ndgrad's partition sorts fully (a
    # valid partition; tests/test_stacking.py checks it against np.partition's contract)
    "partition": lambda a, kth, axis=-1, **kw: np.sort(a, axis=axis),
}


def reference(op):
    """The NumPy/SciPy function ``op``'s forward is compared with, or None: the entry of
    :data:`REFERENCES`, else the function of the same name (``scipy.special.<name>`` for
    ``special``, ``np.<namespace>.<name>`` for ``linalg``/``fft``, ``np.<name>`` or
    ``scipy.special.<name>`` at the top level)."""
    if op.qualname in REFERENCES:
        return REFERENCES[op.qualname]
    if op.namespace == "special":
        return getattr(scipy.special, op.name, None)
    if op.namespace is not None:
        return getattr(getattr(np, op.namespace), op.name, None)
    return getattr(np, op.name, None) or getattr(scipy.special, op.name, None)


def sin_with_rules(vjp=None, jvp=None, batch=None):
    """An unregistered copy of ``sin`` whose rules can be replaced (by wrong ones, to show
    that a suite catches them)."""
    op = Op("wrong_sin", lambda B, x: B.sin(x), kind="elementwise", nin=1, nout=1,
            domain=Domain((-2.0, 2.0), complex=True), differentiable=True, view=False,
            sample=None, method=False, pack=False, inplace_method=None, kwarg_aliases=None,
            notes=None)
    op.defvjp(vjp or (lambda F, g, out, x: g * F.conj(F.cos(x))))
    if jvp is None:
        op.defjvp_from_vjp()
    else:
        op.defjvp(jvp)
    if batch is not None:
        op.defbatch(batch)
    op.public = lambda x: apply(op, x)
    return op
