"""Positional arguments bind where NumPy's and SciPy's bind them.

``cov`` and ``corrcoef`` take NumPy's ``y``, weights and ``dtype`` (``corrcoef(x, y)`` took
``y`` as ``rowvar`` and returned a wrong result without a word).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ndgrad as nd
from ndgrad.checks import gradcheck, gradgradcheck
from support import close


# ----------------------------------------------------------------------- cov and corrcoef
def _cov_cases():
    """(m, y, rowvar, keywords) for cov: every form NumPy reads (1-D, 2-D, one row, rows or
    columns, y of each form), with bias, ddof, integer and observation weights."""
    rng = np.random.default_rng(7)
    cases = []
    for mshape, yshape, rowvar in [((3, 6), None, True), ((6, 3), None, False),
                                   ((6,), (6,), True), ((6,), (6,), False),
                                   ((2, 6), (6,), True), ((6, 2), (6,), False),
                                   ((6, 2), (6, 3), False), ((1, 6), (1, 6), True),
                                   ((2, 6), (3, 6), True)]:
        n = 6
        for kw in ({}, {"bias": True}, {"ddof": 0}, {"ddof": 2},
                   {"fweights": rng.integers(1, 4, size=n)},
                   {"aweights": rng.uniform(0.2, 2.0, size=n)},
                   {"fweights": rng.integers(0, 4, size=n),
                    "aweights": rng.uniform(0.2, 2.0, size=n), "ddof": 1},
                   {"aweights": rng.uniform(0.2, 2.0, size=n), "ddof": 0}):
            m = rng.normal(size=mshape)
            y = None if yshape is None else rng.normal(size=yshape)
            cases.append((m, y, rowvar, kw))
    return cases


def test_cov_takes_numpys_y_weights_and_dtype_by_position_and_name():
    """cov(m, y, rowvar, bias, ddof, fweights, aweights, *, dtype): NumPy's values for every
    form, each argument passed where NumPy takes it (y was taken as rowvar, rowvar as bias,
    bias as ddof), complex data conjugated as NumPy does."""
    for m, y, rowvar, kw in _cov_cases():
        ref = np.cov(m, y, rowvar, kw.get("bias", False), kw.get("ddof"), kw.get("fweights"),
                     kw.get("aweights"))
        ty = None if y is None else nd.tensor(y)
        got = nd.cov(nd.tensor(m), ty, rowvar, kw.get("bias", False), kw.get("ddof"),
                     *(None if kw.get(k) is None else nd.tensor(kw[k])
                       for k in ("fweights", "aweights")))
        close(got, ref)
        close(nd.cov(nd.tensor(m), y=ty, rowvar=rowvar,
                     **{k: nd.tensor(v) if isinstance(v, np.ndarray) else v
                        for k, v in kw.items()}), ref)
    z = np.random.default_rng(1).normal(size=(2, 5)) * (1 + 1j)
    z = z + 1j * np.random.default_rng(2).normal(size=(2, 5))
    w = np.array([1.0, 2.0, 0.5, 1.0, 3.0])
    close(nd.cov(nd.tensor(z), nd.tensor(z[0].real), aweights=nd.tensor(w)),
          np.cov(z, z[0].real, aweights=w))
    got = nd.cov(nd.tensor(z.real), dtype=nd.float32)
    assert got.dtype == nd.float32
    close(got, np.cov(z.real, dtype=np.float32), rtol=1e-6)


def test_corrcoef_takes_numpys_y_and_dtype():
    """corrcoef(x, y, rowvar, *, dtype): y's variables stacked after x's (it was taken as
    rowvar: corrcoef(x, y) returned x's coefficients alone)."""
    rng = np.random.default_rng(3)
    for xshape, yshape, rowvar in [((6,), (6,), True), ((2, 6), (6,), True),
                                   ((6, 2), (6, 3), False), ((2, 6), (3, 6), True)]:
        x, y = rng.normal(size=xshape), rng.normal(size=yshape)
        close(nd.corrcoef(nd.tensor(x), nd.tensor(y), rowvar), np.corrcoef(x, y, rowvar))
        close(nd.corrcoef(nd.tensor(x), y=nd.tensor(y), rowvar=rowvar),
              np.corrcoef(x, y, rowvar))
    x = rng.normal(size=(3, 5))
    got = nd.corrcoef(nd.tensor(x), dtype=nd.float32)
    assert got.dtype == nd.float32
    close(got, np.corrcoef(x, dtype=np.float32), rtol=1e-5)


def test_cov_and_corrcoef_are_differentiable_in_y_and_aweights():
    """Gradients and second derivatives in m, y and aweights against finite differences
    (ndgrad.checks), real and complex m; jvp too."""
    rng = np.random.default_rng(5)
    m = nd.tensor(rng.normal(size=(2, 5)), requires_grad=True)
    y = nd.tensor(rng.normal(size=5), requires_grad=True)
    a = nd.tensor(rng.uniform(0.5, 2.0, size=5), requires_grad=True)
    f = nd.tensor([1, 2, 1, 3, 1])
    zc = nd.tensor(rng.normal(size=(2, 5)) + 1j * rng.normal(size=(2, 5)), requires_grad=True)
    for fn, inputs in [
            (lambda m, y, a: nd.cov(m, y, aweights=a), (m, y, a)),
            (lambda m, y, a: nd.cov(m, y, True, False, 2, f, a), (m, y, a)),
            (lambda m, y, a: nd.cov(m, y, ddof=0, fweights=f, aweights=a), (m, y, a)),
            (lambda m, y: nd.corrcoef(m, y), (m, y)),
            (lambda z, a: nd.cov(z, aweights=a), (zc, a))]:
        assert gradcheck(fn, inputs, check_forward_ad=True)
        assert gradgradcheck(fn, inputs)


def test_numpys_cov_and_corrcoef_with_y_run_on_tensors():
    """np.cov(t, t2, aweights=...) and np.corrcoef(t, t2) through NumPy's protocol: NumPy's
    values, differentiable (they were refused: ndgrad's functions had no y)."""
    rng = np.random.default_rng(6)
    x, y, w = rng.normal(size=(2, 5)), rng.normal(size=5), rng.uniform(0.5, 2.0, size=5)
    close(np.cov(nd.tensor(x), nd.tensor(y), aweights=nd.tensor(w)), np.cov(x, y, aweights=w))
    close(np.corrcoef(nd.tensor(x), nd.tensor(y)), np.corrcoef(x, y))
    t = nd.tensor(y, requires_grad=True)
    (g,) = nd.autograd.grad(np.cov(nd.tensor(x), t)[2, 2], t)
    close(g, 2 * (y - y.mean()) / 4)  # d var(y) / dy = 2 (y - mean) / (N - 1)


def test_cov_refuses_what_numpy_refuses_naming_cov():
    x = nd.tensor(np.arange(12.0).reshape(2, 6))
    for kw, error, text in [
            ({"fweights": nd.tensor([1.5, 1, 1, 1, 1, 1])}, TypeError, "fweights must be integer"),
            ({"fweights": nd.tensor([-1, 1, 1, 1, 1, 1])}, ValueError, "fweights cannot be "),
            ({"aweights": nd.tensor([-1.0, 1, 1, 1, 1, 1])}, ValueError, "aweights cannot be"),
            ({"aweights": nd.ones((6, 1))}, RuntimeError, "cannot handle multidimensional"),
            ({"fweights": nd.tensor([1, 1])}, RuntimeError, "incompatible numbers of samples"),
            ({"ddof": 1.5}, ValueError, "ddof must be integer")]:
        with pytest.raises(error, match=f"cov: {text}"):
            nd.cov(x, **kw)
    with pytest.raises(ValueError, match="cov: m has more than 2 dimensions"):
        nd.cov(nd.ones((2, 2, 2)))
    with pytest.raises(ValueError, match="corrcoef: y has more than 2 dimensions"):
        nd.corrcoef(x, nd.ones((2, 2, 2)))
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        got = nd.cov(nd.tensor([1.0, 2.0, 4.0]), ddof=3)
    assert any("degrees of freedom" in str(w.message) for w in seen)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        close(got, np.cov([1.0, 2.0, 4.0], ddof=3))
