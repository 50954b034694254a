"""NumPy's own functions on ndgrad Tensors: NEP 13 (``__array_ufunc__``) and NEP 18
(``__array_function__``).

``np.sin(t)``, ``np.sum(t, axis=0)``, ``np.linalg.solve(A, t)``, ``scipy.special.expit(t)``
with a Tensor among the arguments run ndgrad's function of that name, so they return Tensors
that are recorded, differentiable and transformed like any ndgrad call: existing NumPy code
differentiates as written. This module owns the translation:

- **ufuncs** (``np.add``, ``np.exp``, SciPy's ``gammaln`` ...): ``__call__`` runs ndgrad's
  op for that ufunc (``ndgrad.special``'s for SciPy's), found by the ufunc object under any
  of its names (Note [NumPy's functions by identity]: ``scipy.special.digamma`` is the
  ufunc named ``psi``); ``reduce``, ``accumulate``, ``outer`` and ``at`` work for every ufunc
  ndgrad has, with NumPy's parameters (Note [Ufunc methods]). ``out=`` a Tensor is an
  in-place write (Note [out= is an in-place write]).
- **functions** (``np.sum``, ``np.concatenate``, ``np.linalg.norm`` ...): NumPy's
  signature is bound and translated to ndgrad's (``ddof`` is ``correction``, ``a_min`` is
  ``min`` ...). An argument ndgrad does not support is a TypeError that names it, unless it
  holds NumPy's default (``out=None``, ``where=True`` ...).
- **functions without a derivative** (``np.argsort``, ``np.unique``, ``np.isclose``,
  ``np.shape`` ...): run by the array library on the tensors' data; arrays come back as
  Tensors that do not require grad.
- anything else raises a TypeError naming the NumPy function and saying to call it on
  ``t.detach()``: nothing is computed without its derivative.

``np.asarray(t)`` is not a protocol call: it keeps ``Tensor.__array__``'s rule (refused
while ``t`` requires grad, as PyTorch does). ``install`` attaches the two protocol methods to
:class:`ndgrad.Tensor` when ``ndgrad`` is imported; the Tensor's other operators are
attached by ``ndgrad.core.ops.methods`` the same way.

Examples
--------
>>> import numpy as np
>>> import ndgrad
>>> def f(x):  # plain NumPy
...     return np.sum(np.sin(x) ** 2)
>>> ndgrad.func.grad(f)(ndgrad.tensor([0.0, 1.0]))  # 2 sin(x) cos(x)
tensor([0.        , 0.90929743])
"""

from __future__ import annotations

import inspect
import numbers
import sys

import numpy as np

from ..core.inplace import check_inplace
from ..core.tensor import Tensor
from .without_derivative import FUNCTIONS as _WITHOUT_DERIVATIVE
from .without_derivative import backend_of_args, on_data, unwrap, wrap_arrays

__all__ = ["install"]

_NO_VALUE = np._NoValue  # NumPy's "not given" default (initial=, where= of reductions)
_P = inspect.Parameter
_POSITIONAL = (_P.POSITIONAL_ONLY, _P.POSITIONAL_OR_KEYWORD)


def _nd():
    return sys.modules["ndgrad"]


def _detach_hint(qualname):
    """The error for a function without an ndgrad implementation; ``qualname`` is NumPy's
    (``"interp"``, ``"linalg.cond"``) or another library's, prefixed (``"scipy.special.dawsn"``)."""
    if not qualname.startswith("scipy."):
        qualname = f"numpy.{qualname}"
    return (f"{qualname} has no ndgrad implementation, so it cannot be differentiated; "
            f"call it on t.detach() (a Tensor that does not require grad) or t.numpy() to "
            "compute it without a derivative")


def _is_operand(x):
    """Values NumPy's protocols may hand to ndgrad: Tensors, NumPy arrays and scalars,
    Python numbers, and sequences of them (other array types get NotImplemented)."""
    return isinstance(x, (Tensor, np.ndarray, np.generic, numbers.Number, list, tuple,
                          str, slice, type(None), type(Ellipsis), np.dtype, type))


# ---------------------------------------------------------------- functions by identity
# Note [NumPy's functions by identity]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A NumPy or SciPy function reaching the protocols is recognised by the object itself, not
# by its ``__name__``: ``scipy.special.digamma`` is the ufunc named ``psi``, ``np.abs`` the
# one named ``absolute``, ``np.concat`` the function named ``concatenate``. The public names
# of NumPy, ``numpy.linalg``, ``numpy.fft`` and (once imported) ``scipy.special`` are walked
# once and grouped by the object they hold; ndgrad's function for an object is its function
# of the object's ``__name__``, else of any other name of the group (``digamma`` for
# ``psi``). tests/test_numpy_protocols.py walks both namespaces and calls every name whose
# object ndgrad has under some name on tensors.
_NAMESPACES = (("numpy", ""), ("numpy", "linalg"), ("numpy", "fft"), ("scipy.special", ""))
_BY_OBJECT = {}  # object -> (library, sub, name, ndgrad function or None)
_WALKED = set()


def _known(obj):
    """``(library, sub, name, ndgrad function or None)`` for a function or ufunc of NumPy
    (``sub``: "", "linalg" or "fft") or ``scipy.special``; None for another library's
    (Note [NumPy's functions by identity])."""
    try:
        found = _BY_OBJECT.get(obj)
    except TypeError:  # (an unhashable callable)
        return None
    if found is None and len(_WALKED) < len(_NAMESPACES):
        for library, sub in _NAMESPACES:
            if (library, sub) not in _WALKED:
                module = sys.modules.get(library)
                if module is not None:
                    _walk(library, sub, getattr(module, sub) if sub else module)
                    _WALKED.add((library, sub))
        found = _BY_OBJECT.get(obj)
    return found


def _walk(library, sub, module):
    nd = _nd()
    space = nd.special if library == "scipy.special" else (getattr(nd, sub) if sub else nd)
    groups = {}
    for name in dir(module):
        if name.startswith("_"):
            continue
        obj = getattr(module, name, None)
        if not callable(obj) or isinstance(obj, type):
            continue
        try:
            groups.setdefault(obj, []).append(name)
        except TypeError:
            continue
    for obj, names in groups.items():
        if obj in _BY_OBJECT:  # (a NumPy function also in scipy.special keeps NumPy's)
            continue
        own = getattr(obj, "__name__", None)
        first = own if own in names else names[0]
        fn = None
        for candidate in [first] + sorted(names):
            f = getattr(space, candidate, None)
            if callable(f) and not isinstance(f, type) and getattr(f, "__module__", "") \
                    .startswith("ndgrad"):
                fn = f
                break
        _BY_OBJECT[obj] = (library, sub, first, fn)


# ------------------------------------------------------------------------------ ufuncs
_REDUCE = {"add": "sum", "multiply": "prod", "maximum": "max", "minimum": "min",
           "logical_and": "all", "logical_or": "any"}
_ACCUMULATE = {"add": "cumulative_sum", "multiply": "cumulative_prod"}
# keyword values every ufunc call may pass that mean "as ndgrad does anyway"
_UFUNC_DEFAULTS = {"where": True, "casting": "same_kind", "order": "K", "subok": True}


def _ufunc_impl(ufunc):
    """``(library, name, ndgrad function or None)`` for a NumPy or SciPy ufunc (library
    None: another library's), found by identity (Note [NumPy's functions by identity])."""
    known = _known(ufunc)
    if known is None or known[1]:
        return None, ufunc.__name__, None
    return known[0], known[2], known[3]


def _array_ufunc(self, ufunc, method, *inputs, **kwargs):
    """NEP 13: a NumPy or SciPy ufunc with a Tensor among its operands (module docstring)."""
    library, short, fn = _ufunc_impl(ufunc)
    if library is None or not all(_is_operand(x) for x in inputs):
        return NotImplemented
    name = short if library == "numpy" else f"{library}.{short}"
    out = kwargs.pop("out", None)
    dtype = kwargs.pop("dtype", None)
    if out is not None and method != "at":
        inputs = _unaliased(inputs, out, f"numpy.{name}")
    params = {}  # a generalized ufunc's own parameters ndgrad's function takes (vecdot's axis)
    for key, value in list(kwargs.items()):
        if key in _UFUNC_DEFAULTS and _same(value, _UFUNC_DEFAULTS[key]):
            del kwargs[key]
        elif (method == "reduce" and key in ("axis", "keepdims", "initial", "where")) or \
                (method == "accumulate" and key == "axis"):
            continue
        elif method == "__call__" and fn is not None and key in _parameters(fn):
            params[key] = kwargs.pop(key)
        else:
            _unsupported(name, key, value)
    if fn is None:
        if _constants(inputs, {}):  # nothing to differentiate: the ufunc itself, on the data
            B = backend_of_args(inputs, {})
            if B is not None and B.name != "numpy":  # the device library's ufunc (or a host run)
                ufunc = getattr(B.special if library == "scipy.special" else B, short)
            return _write_out(wrap_arrays(getattr(ufunc, method)(
                *unwrap(inputs, f"numpy.{name}"), **({"dtype": dtype} if dtype else {}), **kwargs)),
                out, name)
        raise TypeError(_detach_hint(name))
    nd = _nd()
    if dtype is not None and method != "at":
        inputs = tuple(nd.astype(nd.asarray(x), dtype) for x in inputs)
    if method == "__call__":
        result = fn(*inputs, **params)
    elif method == "reduce":
        result = _ufunc_reduce(ufunc, fn, name, *inputs, **kwargs)
    elif method == "accumulate":
        result = _ufunc_accumulate(ufunc, fn, name, *inputs, **kwargs)
    elif method == "outer":
        if ufunc.nin != 2:  # (NumPy's own refusal)
            raise ValueError(f"numpy.{name}.outer: outer product only supported for binary "
                             "functions")
        a, b = (nd.asarray(x) for x in inputs)
        result = fn(nd.reshape(a, tuple(a.shape) + (1,) * b.ndim), b)
    elif method == "at":
        return _ufunc_at(ufunc, fn, name, *inputs)
    else:
        raise TypeError(f"numpy.{name}.{method} is not supported by ndgrad (calls, reduce, "
                        "accumulate, outer and at are); call it on t.detach() for no "
                        "derivative")
    return _write_out(result, out, name)


def _parameters(fn):
    sig = getattr(fn, "__signature__", None)
    try:
        return (sig or inspect.signature(fn)).parameters
    except (TypeError, ValueError):
        return {}


def _unsupported(name, key, value):
    raise TypeError(f"numpy.{name}: ndgrad does not support {key}={_short(value)}; call it "
                    "without it, or on t.detach() (a Tensor that does not require grad) to "
                    "compute it without a derivative")


# Note [Ufunc methods]
# ~~~~~~~~~~~~~~~~~~~~
# ``reduce``, ``accumulate``, ``outer`` and ``at`` work for every ufunc ndgrad has, with
# NumPy's parameters (``reduce``: axis, including None and tuples, keepdims, initial, where;
# ``accumulate``: axis; both dtype and out), computed with the ufunc's own ndgrad function,
# so they are differentiable and transformed like it:
#
# - NumPy first runs the same method on an array of zeros of the input's shape and dtype (a
#   broadcast view, no memory): an invalid call (a non-reorderable ufunc over two axes,
#   ``where`` without ``initial`` for a ufunc with no identity, an empty reduction with no
#   identity) gets NumPy's own error, and the result gets NumPy's dtype.
# - ``reduce`` and ``accumulate`` are a left fold along the axis (the reduced axes moved to
#   the front and flattened), as NumPy computes them: ``subtract.reduce([a, b, c])`` is
#   ``(a - b) - c``; with ``where``, an element outside the mask leaves the running value
#   as it is, which starts at ``initial`` (or the ufunc's identity). add, multiply, maximum,
#   minimum, logical_and/or and logaddexp reduce (add and multiply accumulate) through
#   ndgrad's reductions instead, in one op.
# - ``at`` is unbuffered: repeated indices apply one after the other, in rounds where every
#   index is distinct (index_put of the function of the current values), then written into
#   the target in place (``copy_``). ``add.at`` and ``subtract.at`` are ``index_add``.
_FOLDED = {"logaddexp": "logsumexp"}


def _numpy_probe(ufunc, method, name, x, *args, **kwargs):
    """NumPy's own ``ufunc.method`` on zeros shaped as ``x`` (its errors, its result's
    dtype and shape), see Note [Ufunc methods]."""
    zeros = np.broadcast_to(np.zeros((), dtype=x.dtype), tuple(x.shape))
    if isinstance(kwargs.get("where"), Tensor):
        kwargs["where"] = kwargs["where"].detach().cpu().numpy()
    if isinstance(kwargs.get("initial"), Tensor):
        kwargs["initial"] = kwargs["initial"].detach().cpu().item()
    try:
        with np.errstate(all="ignore"):
            return np.asarray(getattr(ufunc, method)(zeros, *args, **kwargs))
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"numpy.{name}.{method}: {exc}") from None


def _ufunc_reduce(ufunc, fn, name, x, axis=0, keepdims=False, initial=_NO_VALUE,
                  where=True):
    """``ufunc.reduce`` (Note [Ufunc methods])."""
    nd = _nd()
    x = nd.asarray(x)
    kw = {"axis": axis, "keepdims": keepdims}
    if initial is not _NO_VALUE:
        kw["initial"] = initial
    if not _same(where, True):
        kw["where"] = where
    like = _numpy_probe(ufunc, "reduce", name, x, **kw)
    axes = tuple(range(x.ndim)) if axis is None else tuple(
        a % max(x.ndim, 1) for a in (axis if isinstance(axis, tuple) else (axis,)))
    n = 1
    for a in axes:
        n *= x.shape[a]
    target = _REDUCE.get(ufunc.__name__) or _FOLDED.get(ufunc.__name__)
    if target is not None and "where" not in kw and n:
        result = getattr(nd, target)(x, axis=axes, keepdims=keepdims)
        if initial is not _NO_VALUE and initial is not None:
            result = fn(result, initial)
    else:
        if "where" in kw and initial is _NO_VALUE:
            initial = ufunc.identity  # (NumPy's probe refused a ufunc without one)
        mask = nd.broadcast_to(nd.asarray(where, device=x.device), tuple(x.shape)) \
            if "where" in kw else None
        result = _fold(nd, fn, x, axes, initial, mask)
        if keepdims:
            result = nd.reshape(result, like.shape)
    if result.dtype != like.dtype:
        result = nd.astype(result, like.dtype)
    return result


def _to_front(nd, x, axes):
    """``x`` with ``axes`` moved to the front and flattened into one: ``(n, *rest)``."""
    rest = tuple(k for k in range(x.ndim) if k not in axes)
    n = 1
    for a in axes:
        n *= x.shape[a]
    moved = nd.permute_dims(x, tuple(axes) + rest) if axes + rest != tuple(range(x.ndim)) \
        else x
    return nd.reshape(moved, (n,) + tuple(x.shape[k] for k in rest))


def _fold(nd, fn, x, axes, initial, mask):
    """The left fold of ``fn`` over ``axes`` of ``x``, from ``initial`` (else the first
    element); where ``mask`` is False an element is skipped."""
    xs = _to_front(nd, x, axes)
    ms = _to_front(nd, mask, axes) if mask is not None else None
    rest = tuple(xs.shape[1:])
    if initial is _NO_VALUE or initial is None:
        acc, start = xs[0], 1
    else:
        acc, start = nd.full(rest, initial, dtype=x.dtype, device=x.device), 0
    for k in range(start, xs.shape[0]):
        step = fn(acc, xs[k])
        acc = step if ms is None else nd.where(ms[k], step, acc)
    return acc


def _ufunc_accumulate(ufunc, fn, name, x, axis=0):
    """``ufunc.accumulate`` (Note [Ufunc methods])."""
    nd = _nd()
    x = nd.asarray(x)
    like = _numpy_probe(ufunc, "accumulate", name, x, axis=axis)
    target = _ACCUMULATE.get(ufunc.__name__)
    if target is not None:
        result = getattr(nd, target)(x, axis=axis)
    elif x.shape[axis] == 0:
        result = nd.clone(x)
    else:
        xs = nd.moveaxis(x, axis, 0)
        partial = [xs[0]]
        for k in range(1, xs.shape[0]):
            partial.append(fn(partial[-1], xs[k]))
        result = nd.moveaxis(nd.stack(partial), 0, axis)
    if result.dtype != like.dtype:
        result = nd.astype(result, like.dtype)
    return result


def _ufunc_at(ufunc, fn, name, a, indices, b=None):
    """``ufunc.at(t, indices, b)``: the unbuffered indexed update, in place: repeated
    indices apply one after the other (Note [Ufunc methods])."""
    nd = _nd()
    if not isinstance(a, Tensor):
        raise TypeError(f"numpy.{name}.at: the target must be an ndgrad Tensor when the values "
                        f"are, got a {type(a).__name__}")
    if (b is None) != (ufunc.nin == 1):
        raise TypeError(f"numpy.{name}.at takes {'no' if ufunc.nin == 1 else 'a'} second "
                        "operand b")
    short = ufunc.__name__
    if short in ("add", "subtract"):
        values = b if short == "add" else nd.negative(nd.asarray(b))
        a.copy_(nd.index_add(a, values, index=indices))
        return
    # the flat positions the index selects, in NumPy's order, and each one's occurrence
    positions = np.arange(int(a.size)).reshape(tuple(a.shape))[_host_index(indices)]
    flat = positions.reshape(-1)
    order = np.argsort(flat, kind="stable")
    first = np.searchsorted(flat[order], flat[order], side="left")
    rank = np.empty_like(flat)
    rank[order] = np.arange(flat.size) - first
    cur = nd.reshape(a, (-1,))
    values = None if b is None else nd.reshape(
        nd.broadcast_to(nd.asarray(b, device=a.device), positions.shape), (-1,))
    for r in range(int(rank.max()) + 1 if flat.size else 0):
        sel = np.nonzero(rank == r)[0]
        at = flat[sel]
        old = cur[at]
        new = fn(old) if values is None else fn(old, values[sel])
        cur = nd.index_put(cur, nd.astype(new, cur.dtype) if new.dtype != cur.dtype else new,
                           index=at)
    a.copy_(nd.reshape(cur, tuple(a.shape)))


def _host_index(index):
    """An index with its Tensors as host arrays (positions are computed on the host)."""
    if isinstance(index, Tensor):
        return index.detach().cpu().numpy()
    if isinstance(index, tuple):
        return tuple(_host_index(i) for i in index)
    if isinstance(index, list):
        return np.asarray([_host_index(i) for i in index])
    return index


# Note [out= is an in-place write]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# ``out=`` a Tensor writes the result into it in place (``copy_``: the in-place protocol,
# so its version is bumped and its history continues from the result, as
# ``torch.sin(x, out=y)``). When ``out`` is also an input (``np.sin(y, out=y)``, or shares
# its memory: a view of it), that input is read through ``clone`` first: the result's node
# saves the clone, not the memory the write changes, so ``np.sin(y, out=y)`` is ``y.sin_()``
# (gradients included) instead of a node whose saved input the write invalidates (backward
# then failed with a version error). The clone is an op, so this holds under every
# transform. A leaf that requires grad (or a view of one) is refused before anything runs,
# with the in-place protocol's message, naming the NumPy function.
def _unaliased(inputs, out, what):
    """``inputs`` with each Tensor that is (or shares memory with) a Tensor of ``out``
    read through a clone; an ``out`` that may not be written is refused (Note [out= is an
    in-place write])."""
    outs = [o for o in (out if isinstance(out, tuple) else (out,)) if isinstance(o, Tensor)]
    if not outs:
        return inputs
    for o in outs:
        if type(o) is Tensor:
            check_inplace(o, f"{what} with out=")
    nd = _nd()
    result = []
    for x in inputs:
        if isinstance(x, Tensor) and any(_shares_memory(x, o) for o in outs):
            x = nd.clone(x)
        result.append(x)
    return tuple(result)


def _shares_memory(x, o):
    if x is o:
        return True
    if type(x) is not Tensor or type(o) is not Tensor:
        return False
    return x._counter() is o._counter()  # (views share their base's version counter)


def _write_out(result, out, name):
    """``out=``: None, or a Tensor (one per output) written in place with ``copy_``."""
    if out is None:
        return result
    outs = out if isinstance(out, tuple) else (out,)
    results = result if isinstance(result, tuple) else (result,)
    if len(outs) != len(results):
        raise TypeError(f"numpy.{name}: out= has {len(outs)} entries for {len(results)} "
                        "outputs")
    for o, r in zip(outs, results):
        if o is None:
            continue
        if not isinstance(o, Tensor):
            raise TypeError(
                f"numpy.{name}: out= must be an ndgrad Tensor when the inputs are Tensors (a "
                f"{type(o).__name__} cannot hold the result's derivative); drop out= and use "
                "the returned Tensor, or pass a Tensor")
        o.copy_(r)
    return out if isinstance(out, tuple) and len(out) > 1 else outs[0]


def _same(value, default):
    if value is default:
        return True
    try:
        return bool(value == default) and type(value) is type(default)
    except Exception:  # noqa: BLE001 - an array compared with a default: not the default
        return False


# --------------------------------------------------------------------------- functions
# NumPy parameter name -> ndgrad parameter name, where they differ
_RENAMES = {"ddof": "correction", "a_min": "min", "a_max": "max", "newshape": "shape"}
# NumPy parameters that may be given with these values (ndgrad does the same without them)
_HARMLESS = {"out": None, "where": True, "initial": _NO_VALUE, "order": ("C", "K", "A", None),
             "casting": ("same_kind", "safe"), "kind": None, "subok": True, "copy": None,
             "optimize": (False, True, "greedy", "optimal"), "like": None, "mean": None,
             "dtype": None}


def _generic(np_func, nd_func, qualname):
    """An implementation that binds NumPy's signature of ``np_func`` and calls ``nd_func``
    with the arguments ndgrad knows (by name, ``_RENAMES`` applied; NumPy's first parameter
    is ndgrad's first); any other argument must hold its harmless default."""
    try:
        np_sig = inspect.signature(np_func)
    except (TypeError, ValueError):
        np_sig = None
    nd_sig = getattr(nd_func, "__signature__", None) or inspect.signature(nd_func)
    nd_params = list(nd_sig.parameters.values())
    nd_names = {p.name for p in nd_params}
    rename = dict(_RENAMES)
    if np_sig is not None:  # positional parameters named differently correspond by position
        np_pos = [p for p in np_sig.parameters.values() if p.kind in _POSITIONAL]
        nd_pos = [p for p in nd_params if p.kind in _POSITIONAL]
        for p, q in zip(np_pos, nd_pos):
            if p.name not in nd_names and q.name not in np_sig.parameters:
                rename.setdefault(p.name, q.name)
        np_var = [p for p in np_sig.parameters.values() if p.kind is _P.VAR_POSITIONAL]
        nd_var = [p for p in nd_params if p.kind is _P.VAR_POSITIONAL]
        if np_var and nd_var:
            rename[np_var[0].name] = nd_var[0].name
        np_varkw = [p for p in np_sig.parameters.values() if p.kind is _P.VAR_KEYWORD]
        nd_varkw = [p for p in nd_params if p.kind is _P.VAR_KEYWORD]
        if np_varkw and nd_varkw:  # (np.piecewise(..., **kw) passes kw on to its functions)
            rename[np_varkw[0].name] = nd_varkw[0].name

    def impl(*args, **kwargs):
        if np_sig is None:
            out = kwargs.pop("out", None)
            return _write_out(nd_func(*args, **kwargs), out, qualname)
        try:
            bound = np_sig.bind(*args, **kwargs)
        except TypeError as exc:
            raise TypeError(f"numpy.{qualname}(): {exc}") from None
        given = {}
        out = None
        for pname, value in bound.arguments.items():
            target = pname if pname in nd_names else rename.get(pname, pname)
            if pname == "out":
                out = value
            elif target in nd_names:
                given[target] = _list_on_device(value, bound.arguments) \
                    if _numeric_list(value) else value
            elif not _harmless(pname, value, np_sig.parameters[pname]):
                _unsupported(qualname, pname, value)
        return _write_out(_call(nd_func, nd_params, given), out, qualname)

    return impl


def _numeric_list(value):
    """A (nested) list of numbers: NumPy reads it as an array, and so does ndgrad here (a
    tuple stays a tuple: axes and shapes are tuples)."""
    if type(value) is not list or not value:
        return False
    return all(_numeric_list(v) if type(v) is list else
               isinstance(v, numbers.Number) and not isinstance(v, bool) for v in value)


def _list_on_device(value, arguments):
    """A list of numbers as a Tensor on the device of the call's Tensors."""
    device = next((v.device for v in arguments.values() if isinstance(v, Tensor)), None)
    return _nd().asarray(value, device=device)


def _harmless(pname, value, param):
    if value is param.default:
        return True
    allowed = _HARMLESS.get(pname, _NO_VALUE)
    if allowed is _NO_VALUE:
        return False
    if isinstance(allowed, tuple):
        return any(_same(value, a) for a in allowed)
    return _same(value, allowed)


def _short(value):
    text = repr(value)
    return text if len(text) < 60 else text[:57] + "..."


def _call(nd_func, nd_params, given):
    """Call ``nd_func`` with ``given`` (its parameter names): positional where its
    signature takes them positionally, a skipped one filled with its default."""
    args = []
    kwargs = {}
    pending = []  # defaults of skipped positional parameters, used if a later one is given
    for p in nd_params:
        if p.kind in (_P.POSITIONAL_ONLY, _P.POSITIONAL_OR_KEYWORD):
            if p.name in given:
                args.extend(pending)
                pending = []
                args.append(given.pop(p.name))
            elif p.default is not _P.empty:
                pending.append(p.default)
            else:
                break
        elif p.kind is _P.VAR_POSITIONAL:
            if p.name in given:
                value = given.pop(p.name)
                args.extend(value if isinstance(value, (tuple, list)) else (value,))
        elif p.kind is _P.KEYWORD_ONLY and p.name in given:
            kwargs[p.name] = given.pop(p.name)
        elif p.kind is _P.VAR_KEYWORD and p.name in given:
            kwargs.update(given.pop(p.name))
    kwargs.update(given)
    return nd_func(*args, **kwargs)


# NumPy functions whose ndgrad counterpart has another name or signature


def _moments(name):
    def impl(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True,
             mean=None, correction=_NO_VALUE):
        nd = _nd()
        _only_defaults(name, where=(where, True), mean=(mean, None))
        if correction is not _NO_VALUE and ddof != 0:
            raise ValueError(f"numpy.{name}: ddof and correction can't be provided "
                             "simultaneously")
        a = nd.asarray(a) if dtype is None else nd.astype(nd.asarray(a), dtype)
        c = ddof if correction is _NO_VALUE else correction
        return _write_out(getattr(nd, name)(a, axis=axis, correction=c, keepdims=keepdims),
                          out, name)
    return impl


def _masked_reduction(name, target, neutral):
    """sum / prod / mean with NumPy's ``initial=`` and ``where=``."""
    def impl(a, axis=None, dtype=None, out=None, keepdims=False, initial=_NO_VALUE,
             where=True):
        nd = _nd()
        a = nd.asarray(a)
        if dtype is not None:
            a = nd.astype(a, dtype)
        if not _same(where, True):
            mask = nd.asarray(where)
            if target == "mean":
                count = nd.sum(nd.astype(nd.broadcast_to(mask, a.shape), a.dtype), axis=axis,
                               keepdims=keepdims)
                total = nd.sum(nd.where(mask, a, 0), axis=axis, keepdims=keepdims)
                return _write_out(total / count, out, name)
            a = nd.where(mask, a, neutral)
        result = getattr(nd, target)(a, axis=axis, keepdims=keepdims)
        if initial is not _NO_VALUE:
            if target == "mean":
                raise TypeError("numpy.mean has no initial= argument")
            result = result + initial if target == "sum" else result * initial
        return _write_out(result, out, name)
    return impl


def _extremum(name, target, combine):
    def impl(a, axis=None, out=None, keepdims=False, initial=_NO_VALUE, where=True):
        nd = _nd()
        a = nd.asarray(a)
        if not _same(where, True):
            if initial is _NO_VALUE:
                raise ValueError(f"numpy.{name}: reduction operation has no identity, so "
                                 "where= needs initial=")
            a = nd.where(nd.asarray(where), a, initial)
        result = getattr(nd, target)(a, axis=axis, keepdims=keepdims)
        if initial is not _NO_VALUE:
            result = getattr(nd, combine)(result, initial)
        return _write_out(result, out, name)
    return impl


def _sorting(name, target):
    def impl(a, axis=-1, kind=None, order=None, *, stable=None):
        nd = _nd()
        _only_defaults(name, order=(order, None))
        a = nd.asarray(a)
        if axis is None:
            a, axis = nd.reshape(a, (-1,)), -1
        return getattr(nd, target)(a, axis=axis)
    return impl


def _clip(a, a_min=_NO_VALUE, a_max=_NO_VALUE, out=None, *, min=_NO_VALUE, max=_NO_VALUE,
          **kwargs):
    _only_defaults("clip", **{k: (v, _HARMLESS.get(k)) for k, v in kwargs.items()})
    lo = a_min if min is _NO_VALUE else min
    hi = a_max if max is _NO_VALUE else max
    lo = None if lo is _NO_VALUE else lo
    hi = None if hi is _NO_VALUE else hi
    return _write_out(_nd().clip(a, lo, hi), out, "clip")


def _where(condition, x=_NO_VALUE, y=_NO_VALUE):
    nd = _nd()
    if x is _NO_VALUE and y is _NO_VALUE:
        return on_data(np.nonzero, "nonzero")(condition)
    if x is _NO_VALUE or y is _NO_VALUE:
        raise ValueError("numpy.where: either both or neither of x and y should be given")
    return nd.where(condition, x, y)


def _einsum(subscripts, *operands, out=None, dtype=None, order="K", casting="safe",
            optimize=False):
    nd = _nd()
    if not isinstance(subscripts, str):
        raise TypeError("numpy.einsum on ndgrad Tensors takes the subscripts string first "
                        "(the sublist form is not supported)")
    if dtype is not None:
        operands = tuple(nd.astype(nd.asarray(o), dtype) for o in operands)
    return _write_out(nd.einsum(subscripts, *operands), out, "einsum")


def _reshape(a, shape=None, order="C", *, newshape=None, copy=None):
    if order not in ("C", "F"):  # ('A' and 'K' follow the memory layout)
        _unsupported("reshape", "order", order)
    shape = newshape if shape is None else shape
    return _nd().reshape(a, shape, order=order, copy=copy)


def _transpose(a, axes=None):
    return _nd().transpose(a, axes)


def _only_defaults(name, **given):
    for key, (value, default) in given.items():
        if not _same(value, default):
            _unsupported(name, key, value)


_ADAPTERS = {
    "std": _moments("std"),
    "var": _moments("var"), "sum": _masked_reduction("sum", "sum", 0),
    "prod": _masked_reduction("prod", "prod", 1), "mean": _masked_reduction("mean", "mean", 0),
    "max": _extremum("max", "max", "maximum"), "amax": _extremum("amax", "max", "maximum"),
    "min": _extremum("min", "min", "minimum"), "amin": _extremum("amin", "min", "minimum"),
    "sort": _sorting("sort", "sort"), "argsort": _sorting("argsort", "argsort"),
    "clip": _clip, "where": _where, "einsum": _einsum, "reshape": _reshape,

    "transpose": _transpose,
}

# NumPy functions with no derivative: computed on the data, arrays returned as Tensors
# NumPy functions without a derivative that ndgrad has no function of its own for (printing):
# run on the data. The others (argwhere, isclose, unique ...) are ndgrad's own
# (ndgrad/numpy/without_derivative.py), reached by name like every other function.
_NO_DERIVATIVE = {"array_repr", "array_str", "array2string"}


_IMPLS = {}


def _function_impl(func):
    impl = _IMPLS.get(func)
    if impl is None:
        impl = _IMPLS[func] = _find_function_impl(func)
    return impl


def _find_function_impl(func):
    known = _known(func)  # (Note [NumPy's functions by identity])
    if known is None or known[0] != "numpy":  # another library's, dispatching on us
        return None
    _, sub, name, nd_func = known
    qualname = f"{sub}.{name}" if sub else name
    if not sub and name in _ADAPTERS:
        return _ADAPTERS[name]
    if not sub and name in _WITHOUT_DERIVATIVE:  # NumPy's own signature already
        return _WITHOUT_DERIVATIVE[name]
    if nd_func is not None and name not in ("asarray", "array"):
        return _generic(func, nd_func, qualname)
    if name in _NO_DERIVATIVE:
        return on_data(func, qualname)

    fallback = on_data(func, qualname)

    def missing(*args, **kwargs):
        if _constants(args, kwargs):  # nothing to differentiate: NumPy's own, on the data
            return fallback(*args, **kwargs)
        raise TypeError(_detach_hint(qualname))
    return missing


def _constants(args, kwargs):
    """Whether every Tensor among the arguments is a plain constant: it does not require
    grad and carries no transform's data (a tangent, a batch, a grad level's history)."""
    for v in list(args) + list(kwargs.values()):
        if isinstance(v, Tensor):
            if type(v) is not Tensor or v._requires_grad or (
                    v._meta is not None and v._meta.level_data):
                return False
        elif type(v) in (list, tuple) and not _constants(v, {}):
            return False
    return True


def _array_function(self, func, types, args, kwargs):
    """NEP 18: a NumPy function with a Tensor among its arguments (module docstring)."""
    for t in types:
        if not (issubclass(t, Tensor) or issubclass(t, np.ndarray)):
            return NotImplemented
    impl = _function_impl(func)
    if impl is None:
        return NotImplemented
    out = kwargs.get("out")
    if out is not None:  # (Note [out= is an in-place write])
        what = f"numpy.{getattr(func, '__name__', 'function')}"
        args = _unaliased(args, out, what)
        kwargs = dict(zip(kwargs, _unaliased(tuple(kwargs.values()), out, what)))
        kwargs["out"] = out
    return impl(*args, **kwargs)


def install(tensor_cls=Tensor):
    """Attach ``__array_ufunc__`` and ``__array_function__`` to the Tensor class."""
    tensor_cls.__array_ufunc__ = _array_ufunc
    tensor_cls.__array_function__ = _array_function
