"""Positional arguments bind where NumPy's and SciPy's bind them.

``cov`` and ``corrcoef`` take NumPy's ``y``, weights and ``dtype`` (``corrcoef(x, y)`` took
``y`` as ``rowvar`` and returned a wrong result without a word). The sweep of Note
[Signatures are NumPy's] compares every public function with NumPy's or SciPy's of the same
name; the tests before it call each class of mismatch it found the way NumPy and SciPy are
called.
"""

from __future__ import annotations

import importlib
import inspect
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


# ------------------------------------------------- arguments that bound to another parameter
_RNG = np.random.default_rng(11)


def test_reductions_take_numpys_positional_arguments_or_refuse_them():
    """keepdims, ddof, descending are keyword-only where NumPy has another parameter at their
    position: sum(a, axis, dtype), sort(a, axis, kind), nanvar(a, axis, dtype), median(a,
    axis, out), quantile(a, q, axis, out) by position are TypeErrors (they took NumPy's dtype,
    kind or out as keepdims / descending / ddof: sort(x, -1, "quicksort") sorted in
    descending order and median(x, 0, out) kept the dimension, without a word)."""
    a = _RNG.normal(size=(3, 4))
    x = nd.tensor(a)
    refused = [lambda: nd.sum(x, 0, np.float64), lambda: x.sum(0, np.float64),
               lambda: nd.mean(x, 0, np.float64), lambda: nd.prod(x, 0, np.float64),
               lambda: nd.max(x, 0, None), lambda: nd.argmax(x, 0, None),
               lambda: nd.sort(x, -1, "quicksort"), lambda: nd.argsort(x, -1, "stable"),
               lambda: nd.nanvar(x, 0, np.float64), lambda: nd.nanstd(x, 0, np.float64),
               lambda: nd.nansum(x, 0, np.float64), lambda: nd.nanmean(x, 0, np.float64),
               lambda: nd.median(x, 0, np.empty(4)), lambda: nd.ptp(x, 0, np.empty(4)),
               lambda: nd.quantile(x, 0.5, 0, np.empty(4)),
               lambda: nd.percentile(x, 50, 0, np.empty(4)),
               lambda: nd.cumulative_sum(x, 1), lambda: nd.unstack(x, 1),
               lambda: nd.pad(x, 1, "constant", 5.0)]
    for call in refused:
        with pytest.raises(TypeError, match="positional argument"):
            call()
    # NumPy's keywords, and its positional prefix, bind as there
    close(nd.sum(x, 0, keepdims=True), a.sum(0, keepdims=True))
    close(nd.nanvar(x, 1, ddof=1, keepdims=True), np.nanvar(a, 1, ddof=1, keepdims=True))
    close(nd.quantile(x, 0.3, 1, keepdims=True), np.quantile(a, 0.3, 1, keepdims=True))
    close(nd.sort(a=x, axis=0), np.sort(a, axis=0))
    close(nd.take(a=x, indices=[2, 0], axis=1), np.take(a, [2, 0], axis=1))
    close(nd.pad(array=x, pad_width=1, constant_values=2.0), np.pad(a, 1, constant_values=2.0))
    close(nd.tile(A=x, reps=2), np.tile(a, 2))
    close(nd.tril(m=x, k=-1), np.tril(a, k=-1))
    close(nd.broadcast_to(array=x[0], shape=(2, 4)), np.broadcast_to(a[0], (2, 4)))


def test_reshape_takes_numpys_order():
    """reshape(a, shape, order) and order= read the elements as NumPy's (was a TypeError by
    position, and order= was refused); the gradient of the Fortran-order reshape is its
    inverse reshape."""
    a = _RNG.normal(size=(2, 3, 4))
    x = nd.tensor(a, requires_grad=True)
    close(nd.reshape(x, (4, 6), "F"), np.reshape(a, (4, 6), order="F"))
    close(nd.reshape(x, (3, 8), order="F"), np.reshape(a, (3, 8), order="F"))
    close(np.reshape(x, (6, 4), order="F"), np.reshape(a, (6, 4), order="F"))
    g = _RNG.normal(size=(4, 6))
    (nd.reshape(x, (4, 6), "F") * nd.tensor(g)).sum().backward()
    close(x.grad, np.reshape(g, (2, 3, 4), order="F"))
    with pytest.raises(ValueError, match="reshape: order must be 'C' or 'F'"):
        nd.reshape(x, (4, 6), "A")


def test_creation_functions_refuse_numpys_order_instead_of_taking_it_as_the_device():
    """asarray(a, dtype, order), full(shape, value, dtype, order), zeros_like(a, dtype, order,
    subok): NumPy's order and subok are not taken for device and requires_grad (a TypeError;
    subok=True made the result require grad); NumPy's names a, N, M bind."""
    a = _RNG.normal(size=(2, 3))
    for call in [lambda: nd.asarray(a, None, "C"), lambda: nd.full((2,), 1.0, None, "C"),
                 lambda: nd.zeros_like(a, None, "K"), lambda: nd.ones_like(a, None, "K"),
                 lambda: nd.empty_like(a, None, "K"),
                 lambda: nd.full_like(a, 1.0, None, "K"),
                 lambda: nd.zeros_like(a, None, None, True)]:
        with pytest.raises(TypeError, match="positional argument"):
            call()
    close(nd.asarray(a=a, dtype=np.float32), np.asarray(a, np.float32))
    close(nd.full_like(a=a, fill_value=3.0), np.full_like(a, 3.0))
    close(nd.ones_like(a=a, dtype=np.float32), np.ones_like(a, np.float32))
    close(nd.eye(N=2, M=3, k=1), np.eye(N=2, M=3, k=1))
    with pytest.raises(TypeError, match="pass dtype and device by keyword"):
        nd.zeros((2, 3), np.float32)  # (NumPy's dtype by position: never read as a size)


def test_numpys_parameter_names_bind():
    """NumPy's names of the first arguments (a, val, b, A, rcond) are accepted by keyword
    (they were x, y, rtol)."""
    a = _RNG.normal(size=(3, 3))
    b = _RNG.normal(size=(3, 2))
    z = a + 1j * _RNG.normal(size=(3, 3))
    x = nd.tensor(a)
    close(nd.round(a=x, decimals=1), np.round(a, decimals=1))
    close(nd.around(a=x, decimals=2), np.around(a, decimals=2))
    close(nd.real(val=nd.tensor(z)), np.real(z))
    close(nd.imag(val=nd.tensor(z)), np.imag(z))
    close(nd.clip(a=x, a_min=-0.5, a_max=0.5), np.clip(a, a_min=-0.5, a_max=0.5))
    close(nd.clip(x, -0.5, max=0.25), np.clip(a, -0.5, 0.25))
    with pytest.raises(TypeError, match="clip: the lower bound was given twice"):
        nd.clip(x, -0.5, min=-0.25)
    close(nd.tensordot(a=x, b=nd.tensor(b), axes=1), np.tensordot(a, b, axes=1))
    close(nd.outer(a=x[0], b=nd.tensor(b[:, 0])), np.outer(a[0], b[:, 0]))
    close(nd.trace(a=x, offset=1), np.trace(a, offset=1))
    close(nd.diagonal(a=x, offset=-1), np.diagonal(a, offset=-1))
    close(nd.diff(a=x, n=2, axis=0), np.diff(a, n=2, axis=0))
    close(nd.flip(m=x, axis=0), np.flip(a, axis=0))
    close(nd.fft.fft(a=x, n=4, axis=0), np.fft.fft(a, n=4, axis=0))
    close(nd.fft.irfft2(a=nd.tensor(z), s=(3, 4)), np.fft.irfft2(z, s=(3, 4)))
    close(nd.linalg.matrix_rank(A=x), np.linalg.matrix_rank(a))
    # pinv's second positional argument is NumPy's rcond, a cut-off relative to the largest
    # singular value; rcond= by name too
    u, _, vh = np.linalg.svd(a)
    m = u @ np.diag([1.0, 0.3, 1e-3]) @ vh
    close(nd.linalg.pinv(nd.tensor(m), 1e-2), np.linalg.pinv(m, 1e-2))
    close(nd.linalg.pinv(nd.tensor(m), rcond=1e-2), np.linalg.pinv(m, rcond=1e-2))
    close(nd.linalg.pinv(nd.tensor(m)), np.linalg.pinv(m))
    # array inputs by name under a transform carry their tangent (moved to their position
    # before the interpreter sees them, where a tensor among the parameters is a constant)
    v = _RNG.normal(size=3)
    _, t = nd.func.jvp(lambda u: nd.tensordot(a=u, b=u, axes=1), (x[0],), (nd.tensor(v),))
    close(t, 2 * a[0] @ v)
    close(nd.func.vmap(lambda u: nd.sum(a=u * u))(x), (a * a).sum(1))
    # vecdot's third positional argument is NumPy's out: axis is keyword-only
    with pytest.raises(TypeError, match="positional argument"):
        nd.vecdot(x, x, np.empty(3))
    close(nd.vecdot(x, x, axis=0), np.vecdot(a, a, axis=0))


# ----------------------------------------------------------------------- the signature sweep
# Note [Signatures are NumPy's]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Every public function of ndgrad's namespaces that has a NumPy or SciPy function of the same
# name (found by walking both namespaces) takes its positional arguments where NumPy's and
# SciPy's take them: each parameter ndgrad accepts by position is the peer's parameter at that
# position, of the same name (a name is not compared where either side takes it by position
# only). ndgrad may take fewer by position (a prefix), the rest keyword-only or absent: a call
# passing them by position is then a TypeError, never an argument bound to another parameter.
# It may take more by position only where the peer has that parameter, keyword-only (NumPy's
# concatenate(arrays, axis, out, *, dtype): ndgrad's 4th positional is dtype): a call the peer
# accepts still binds as there. Every name ndgrad accepts by keyword is one the peer has
# (PyTorch's spellings, ``dim`` for ``axis``, are aliases outside the signature), except the
# creation keywords every ndgrad constructor has, keyword-only (_NDGRAD_KEYWORDS:
# ``requires_grad``, ``device``, ``dtype``). A function that deviates for a stated reason
# declares it on itself: ``notes={"signature": reason}`` on an op or composite, a
# ``signature_notes = reason`` attribute on a plain function, the reason naming each
# parameter it covers as ``name`` (``*name`` for a variadic one); the sweep reads those, and a
# declaration that covers no deviation any more is reported too. The names matter because
# they bind: an op's array inputs given by name (``round(a=x)``) are moved to their positions
# before the op runs, under every transform too (core/namespace.py, inputs_by_position).
_PEERS = [("ndgrad", ("numpy",)), ("ndgrad.linalg", ("numpy.linalg", "scipy.linalg")),
          ("ndgrad.fft", ("numpy.fft", "scipy.fft")), ("ndgrad.special", ("scipy.special",)),
          ("ndgrad.signal", ("scipy.signal",)), ("ndgrad.stats", ("scipy.stats",)),
          ("ndgrad.optimize", ("scipy.optimize",)), ("ndgrad.integrate", ("scipy.integrate",)),
          ("ndgrad.interpolate", ("scipy.interpolate",)),
          ("ndgrad.ndimage", ("scipy.ndimage",)),
          ("ndgrad.sparse.linalg", ("scipy.sparse.linalg",))]
_P = inspect.Parameter
_BY_POSITION = (_P.POSITIONAL_ONLY, _P.POSITIONAL_OR_KEYWORD)
_BY_KEYWORD = (_P.POSITIONAL_OR_KEYWORD, _P.KEYWORD_ONLY)
_NDGRAD_KEYWORDS = ("requires_grad", "device", "dtype")  # keyword-only everywhere they are


def _signature(fn):
    try:
        return inspect.signature(fn)
    except (TypeError, ValueError):
        return None


def _public_functions(module):
    """``{name: function}``: the module's public functions that are ndgrad's own (not a
    class, not another library's object re-exported)."""
    names = getattr(module, "__all__", None) or [n for n in dir(module) if n[0] != "_"]
    found = {}
    for name in names:
        fn = getattr(module, name, None)
        if callable(fn) and not isinstance(fn, type) and \
                str(getattr(fn, "__module__", "")).startswith("ndgrad"):
            found[name] = fn
    return found


def _declarations():
    """``{id(public function): reason}`` from the registry's notes["signature"] (Note
    [Signatures are NumPy's]); plain functions carry theirs as ``signature_notes``."""
    from ndgrad.core.ops.registry import COMPOSITES, REGISTRY
    declared = {}
    for obj in list(REGISTRY.values()) + list(COMPOSITES.values()):
        reason = (obj.notes or {}).get("signature")
        if reason and obj.public is not None:
            declared[id(obj.public)] = reason
    return declared


def _covers(reason, name):
    """Whether a declared ``reason`` names parameter ``name`` (as ``name`` or ``*name``)."""
    return bool(reason) and (f"``{name}``" in reason or f"``*{name}``" in reason)


def _mismatches(fn, peer):
    """What of ``fn``'s signature binds differently from ``peer``'s (Note [Signatures are
    NumPy's]): ``[(parameter, what)]``; None where the peer's signature says nothing."""
    s, t = _signature(fn), _signature(peer)
    tp = list(t.parameters.values())
    if all(p.kind in (_P.VAR_POSITIONAL, _P.VAR_KEYWORD) for p in tp):
        return None  # (a peer without a readable signature: scipy.special's multi-ufuncs)
    found = []
    sp = list(s.parameters.values())
    s_pos = [p for p in sp if p.kind in _BY_POSITION]
    t_pos = [p for p in tp if p.kind in _BY_POSITION]
    t_var = any(p.kind is _P.VAR_POSITIONAL for p in tp)
    t_names = {p.name for p in tp if p.kind in _BY_KEYWORD}
    t_varkw = any(p.kind is _P.VAR_KEYWORD for p in tp)
    t_kwonly = {p.name for p in tp if p.kind is _P.KEYWORD_ONLY}
    for i, p in enumerate(s_pos):
        if i >= len(t_pos):
            if not t_var and p.name not in t_kwonly:
                found.append((p.name, f"taken by position {i}, where the peer takes "
                                      f"{len(t_pos)} positional arguments"))
        elif p.name != t_pos[i].name and _P.POSITIONAL_ONLY not in (p.kind, t_pos[i].kind):
            found.append((p.name, f"at position {i}, where the peer has "
                                  f"{t_pos[i].name!r}"))
    matched = {p.name for p in s_pos[:len(t_pos)]}  # (compared by position above)
    for p in sp:
        if p.kind is _P.VAR_POSITIONAL and not t_var:
            found.append((p.name, "takes any number of positional arguments (*" + p.name +
                          "), the peer does not"))
        elif p.kind in _BY_KEYWORD and p.name not in t_names and not t_varkw and \
                p.name not in matched and not any(q[0] == p.name for q in found) and \
                not (p.kind is _P.KEYWORD_ONLY and p.name in _NDGRAD_KEYWORDS):
            found.append((p.name, "a keyword the peer does not have"))
    return found


def _sweep():
    """(mismatches, stale declarations, number of functions compared)."""
    declared_by_id = _declarations()
    mismatches, covered, compared = [], {}, 0
    for space, peers in _PEERS:
        module = importlib.import_module(space)
        for name, fn in sorted(_public_functions(module).items()):
            peer_module = next((importlib.import_module(p) for p in peers
                                if callable(getattr(importlib.import_module(p), name, None))),
                               None)
            peer = getattr(peer_module, name, None) if peer_module else None
            if peer is None or isinstance(peer, type) or _signature(fn) is None or \
                    _signature(peer) is None:
                continue
            reason = declared_by_id.get(id(fn)) or getattr(fn, "signature_notes", None)
            found = _mismatches(fn, peer)
            if found is None:
                continue
            compared += 1
            entry = covered.setdefault(id(fn), [f"{space}.{name}", reason, False])
            for pname, what in found:
                if _covers(reason, pname):
                    entry[2] = True
                else:
                    mismatches.append(f"{space}.{name}{_signature(fn)}: {pname!r} {what}; "
                                      f"{peer_module.__name__}.{name}{_signature(peer)}")
    stale = [f"{key} declares a signature deviation ({reason!r}) that its parameters no "
             "longer have" for key, reason, used in covered.values() if reason and not used]
    return mismatches, stale, compared


@pytest.mark.cpu_only("signatures are device independent")
def test_positional_arguments_bind_where_numpys_and_scipys_do():
    """The sweep of Note [Signatures are NumPy's] over ndgrad, linalg, fft, special, signal,
    stats, optimize, integrate, interpolate, ndimage and sparse.linalg against NumPy's and
    SciPy's functions of the same names: no mismatch that is not declared, and no declaration
    that no longer deviates."""
    mismatches, stale, compared = _sweep()
    assert compared > 300, compared  # (the walk found the namespaces' functions)
    assert not mismatches, f"{len(mismatches)} signatures bind differently from their peers':" \
        "\n" + "\n".join(mismatches)
    assert not stale, "\n".join(stale)
