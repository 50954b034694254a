"""Every primitive, and the namespaces built from the registry.

Importing this package imports the op modules (each declares its primitives with
:func:`~ndgrad.core.ops.registry.defop`), then builds from :data:`REGISTRY`, one declaration
at a time with :func:`publish`, which then publishes every declaration made later (in
``ndgrad.numpy`` and ``ndgrad.scipy``) as it is made (Note [Publishing a declaration] in
registry.py):

* the public functions (``ndgrad.exp``, ``ndgrad.sum``, ...), exported from this module;
* the Tensor's operators and methods (``x + y``, ``x.exp()``, ``x[i]``, ``.backward()``) and
  in-place methods (``x.exp_()``), attached to the Tensor class: the top of core's layers;
* the formula namespaces ``F``: :data:`TENSOR_F` (ndgrad functions, used when formulas are
  differentiated) and ``Backend.F`` for each backend (raw arrays, first order).
"""

from __future__ import annotations

import functools
import inspect
import sys
import weakref

from .. import backend as _backend_mod
from .. import creation as _creation
from ..backend import _BACKEND_BY_TYPE, NUMPY, Backend, Unsupported
from ..devices import DeviceMismatchError
from ..dispatch import TENSOR_F, VARIADIC, Namespace, apply
from ..namespace import PY_SCALARS, holds_tensor, stack_nested
from ..graph import OpNode
from ..saved import FREED, FREED_MSG, SAVED_TYPES
from ..inplace import apply_inplace
from ..tensor import Tensor
from . import registry
from .registry import COMPOSITES, REGISTRY, Domain, defcomposite, defop

# The op modules: importing them fills the registry.
from . import elementwise, reductions, contractions, shape, indexing  # noqa: E402,F401  isort:skip
from . import solves, decompositions, fft  # noqa: E402,F401  isort:skip
from . import special_shared, special_error, special_gamma, special_bessel  # noqa: E402,F401  isort:skip
from . import special_entropy, special_hypergeometric  # noqa: E402,F401  isort:skip
from .methods import TensorMethods  # noqa: E402  isort:skip

__all__ = ["REGISTRY", "COMPOSITES", "NAMESPACED", "TENSOR_F", "Namespace", "raw_namespace",
           "defop", "defcomposite", "Domain", "apply", "apply_inplace"]


def _rename(kw, aliases):
    for old, new in aliases.items():
        if old in kw:
            if new in kw:
                raise TypeError(f"got both {old!r} and {new!r}; pass one of them")
            kw[new] = kw.pop(old)


def _kwonly_names(fn):
    return [p.name for p in inspect.signature(fn).parameters.values()
            if p.kind == p.KEYWORD_ONLY]


def _public_signature(fn, pack):
    params = list(inspect.signature(fn).parameters.values())[1:]  # drop B / F
    if pack:
        var = [p for p in params if p.kind == p.VAR_POSITIONAL]
        rest = [p for p in params if p.kind != p.VAR_POSITIONAL]
        name = var[0].name if var else "arrays"
        params = [inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD)] + [
            p.replace(kind=inspect.Parameter.POSITIONAL_OR_KEYWORD) if p.kind == p.KEYWORD_ONLY
            else p for p in rest]
    return inspect.Signature(params)


def _make_public(op, call):
    """The public function of ``op``; ``call(op, *args, **kw)`` runs it (apply, or raw)."""
    aliases = op.kwarg_aliases
    # An op whose optional inputs may be passed by keyword or left out (``clip(x, max=1.0)``)
    # gives ``normalize_args(*args, **kw) -> (args, kw)`` with every array input positional.
    norm = op.normalize_args
    if norm is not None:
        def fn(*args, **kw):
            args, kw = norm(*args, **kw)
            return call(op, *args, **kw)
    elif op.pack:
        def run(*arrays, **kw):
            if aliases and kw:
                _rename(kw, aliases)
            return call(op, *arrays, **kw)
        fn = _packed(run, _kwonly_names(op.forward), op.qualname, iterables=True)
    elif aliases:
        def fn(*args, **kw):
            if kw:
                _rename(kw, aliases)
            try:
                return call(op, *args, **kw)
            except TypeError as exc:
                return _argument_error(fn, args, kw, exc, op.nin)
    elif call is apply:
        fn = _PublicOp(apply, op)
        op.signature = _public_signature(op.forward, op.pack)
    else:
        def fn(*args, **kw):
            try:
                return call(op, *args, **kw)
            except TypeError as exc:
                return _argument_error(fn, args, kw, exc, op.nin)
    fn.__name__ = fn.__qualname__ = op.name
    fn.__doc__ = op.doc
    fn.__module__ = "ndgrad"
    fn.__signature__ = _public_signature(op.forward, op.pack)
    return fn


class _PublicOp(functools.partial):
    """The public function of an op whose call needs no argument handling: ``apply`` with
    the op bound, called at C level (a Python wrapper costs 115 ns more per call: 5% of a
    recorded tanh's forward on 16 values); ``apply`` says what does not fit the op's
    public signature."""

    def __repr__(self):
        return f"<function {self.__module__}.{self.__name__}>"

    def __reduce__(self):  # pickled by name, as a function is
        return self.__name__


def doctests(functions):
    """``{name: docstring}`` of the functions among ``functions`` that doctest does not
    find by itself (a :class:`_PublicOp` is not a Python function): a namespace module's
    ``__test__``, so ``--doctest-modules`` runs their examples."""
    return {name: fn.__doc__ for name, fn in functions.items()
            if isinstance(fn, _PublicOp) and fn.__doc__}


def _argument_error(fn, args, kw, exc, nin=-1):
    """Re-raise ``exc``, a TypeError from calling ``fn``; when the call does not fit ``fn``'s
    public signature, say so in its terms (the forward's own message would count its hidden
    backend argument). Array inputs given by name (of the op's ``nin``), NumPy's
    ``sum(a=x)``, are run again by position, as apply takes them."""
    try:
        bound = fn.__signature__.bind(*args, **kw)
    except TypeError as bad:
        name = f"{fn.__module__}.{fn.__name__}"
        raise TypeError(f"{name}{fn.__signature__}: {bad}") from None
    if len(args) < nin and len(bound.args) > len(args):
        return fn(*bound.args, **bound.kwargs)
    raise exc


def _make_composite_public(c, F):
    aliases = c.kwarg_aliases
    fn_ = c.fn
    name = c.qualname

    arrays = _array_inputs(c)

    def run(*args, **kw):
        if aliases and kw:
            _rename(kw, aliases)
        if arrays is not None:
            args, kw = _sequences_stacked(arrays, name, args, kw)
        try:
            return fn_(F, *args, **kw)
        except DeviceMismatchError as exc:  # raised by an op inside: name this function
            raise DeviceMismatchError(name, *exc.devices) from None
        except Unsupported as exc:  # (the same; the op inside named as the one it needs)
            if exc.op == name:
                raise
            raise exc.for_op(name) from None
    fn = _packed(run, _kwonly_names(fn_), name) if c.pack else run
    fn.__name__ = fn.__qualname__ = c.name
    fn.__doc__ = c.__doc__
    fn.__module__ = "ndgrad"
    fn.__signature__ = _public_signature(c.fn, c.pack)
    return fn


def _array_inputs(c):
    """``(names, variadic)`` for composite ``c``: the names of its positional parameters
    that are array inputs (None where one takes a sequence of arrays as such, named in
    ``c.sequences``), and whether every further positional argument is an array input too
    (``atleast_1d(*arys)``, a packing composite's arrays); None when it has no array input
    (Note [Sequences of tensors] in core/namespace.py)."""
    params = list(inspect.signature(c.fn).parameters.values())[1:]
    positional = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY,
                                                       p.POSITIONAL_OR_KEYWORD)]
    variadic = c.pack or c.nin == VARIADIC
    names = tuple(None if n in c.sequences else n
                  for n in (positional if variadic else positional[:c.nin]))
    if not variadic and not any(names):
        return None
    return names, variadic


def _sequences_stacked(arrays, name, args, kw):
    """``(args, kw)`` with the array inputs that are lists or tuples holding tensors stacked
    and the NumPy (CuPy) arrays made tensors (``arrays`` from :func:`_array_inputs`), and a
    first array input that is a Python scalar made a 0-d tensor when no array input is an
    array (Note [Python scalars as inputs] in core/namespace.py): a composite computes on
    tensors, and returns them."""
    names, variadic = arrays
    out = None
    arrayless = True
    for k, a in enumerate(args):
        if k < len(names) and names[k] is None:
            continue
        if k >= len(names) and not variadic:
            break
        if type(a) in (list, tuple) and holds_tensor(a):
            if out is None:
                out = list(args)
            out[k] = stack_nested(a, name)
        elif type(a) in _BACKEND_BY_TYPE:
            if out is None:
                out = list(args)
            out[k] = _creation.asarray(a)
        if type(a) not in PY_SCALARS and a is not None and not callable(a):
            arrayless = False
    for key, a in kw.items():
        if key in names and type(a) in (list, tuple) and holds_tensor(a):
            kw[key] = stack_nested(a, name)
        if key in names and type(a) not in PY_SCALARS and a is not None:
            arrayless = False
    if arrayless and args and names and names[0] is not None and type(args[0]) in PY_SCALARS:
        out = list(args) if out is None else out
        out[0] = _creation.asarray(args[0])
    return (args if out is None else tuple(out)), kw


def _packed(run, names, name, iterables=False):
    """The public form of a packing op or composite (``concat(arrays, axis)``):
    ``fn(arrays, *params, **kw)`` is ``run(*arrays, **kw)``, its keyword-only parameters
    ``names`` also given by position. ``arrays`` is a list, a tuple or a Tensor (the
    sequence of its rows, as in NumPy); any iterable with ``iterables`` (the primitives
    ``concat`` and ``stack`` always took generators)."""
    def fn(arrays, *args, **kw):
        if args:
            kw.update(zip(names, args))
        if type(arrays) not in (list, tuple):
            if not (iterables or isinstance(arrays, Tensor) and arrays.ndim > 0):
                raise TypeError(f"{name} takes a sequence of arrays (a list or a tuple); got "
                                f"{type(arrays).__name__}")
            arrays = tuple(arrays)
        return run(*arrays, **kw)
    return fn


# ------------------------------------------------------------------ the Tensor namespace
PUBLIC = {}
# The public functions of namespaced ops (Note [Namespaces]): namespace -> {name: function}.
NAMESPACED = {ns: {} for ns in registry.NAMESPACES}
for _ns in registry.NAMESPACES:
    setattr(TENSOR_F, _ns, Namespace(f"ndgrad.{_ns}"))


def _publish(obj, fn):
    obj.public = fn
    if obj.namespace is None:
        PUBLIC[obj.name] = fn
    else:
        fn.__module__ = f"ndgrad.{obj.namespace}"
        NAMESPACED[obj.namespace][obj.name] = fn


def expose_saved_names(ops):
    """Give OpNode the properties ``_saved_<name>`` and ``_raw_saved_<name>`` for the input
    and parameter names of ``ops``, and ``out`` (called once the registry is built): a saved
    value by the name of its rule's parameter, as PyTorch's ``grad_fn._saved_self`` (an
    input version-checked and unpacked, the output rebuilt); the raw one is what the node
    keeps. (Properties, not ``__getattr__``: a class with ``__getattr__`` pays on every
    attribute read, and the engine reads a node's attributes on its hot path.)"""
    names = {"out"}
    for op in ops:
        names.update(op.input_names(16 if op.nin < 0 else op.nin))
        names.update(p.name for p in list(inspect.signature(op.forward).parameters.values())[1:]
                     if p.kind is not p.VAR_POSITIONAL and p.kind is not p.VAR_KEYWORD)
    for name in sorted(names):
        _expose(name)


_SAVED_PROPERTIES = set()  # the names of the properties expose_saved_names attached


def _expose(name):
    if f"_saved_{name}" not in _SAVED_PROPERTIES:
        setattr(OpNode, f"_saved_{name}", property(
            lambda node, key=name: _saved_by_name(node, key, False)))
        setattr(OpNode, f"_raw_saved_{name}", property(
            lambda node, key=name: _saved_by_name(node, key, True)))
        _SAVED_PROPERTIES.update((f"_saved_{name}", f"_raw_saved_{name}"))


def _node_dir(node):
    """``dir(grad_fn)``: the node's attributes, with the ``_saved_<name>`` and
    ``_raw_saved_<name>`` properties of the values this node keeps only (OpNode has those of
    every op's names; PyTorch's nodes, one class per op, list their own)."""
    own = set()
    for key, _ in node._items_saved():
        _expose(key)  # (a variadic op's 17th input, ...)
        own.update((f"_saved_{key}", f"_raw_saved_{key}"))
    names = []
    for name in object.__dir__(node):
        if name in own or name not in _SAVED_PROPERTIES:
            names.append(name)
    return sorted(names)


OpNode.__dir__ = _node_dir


def _saved_by_name(node, key, raw):
    """``node._saved_<key>``: the output rebuilt, an input version-checked and unpacked, or a
    parameter; ``raw``: what the node keeps (``_raw_saved_<key>``)."""
    items = dict(node._items_saved())
    if key not in items:
        if node.saved is FREED or node.saved_out is FREED:
            raise RuntimeError(FREED_MSG)
        known = ", ".join(f"_saved_{k}" for k in items) or "none"
        raise AttributeError(f"{node.name()} saved no value named {key!r} (it has: {known})")
    if raw:
        return items[key]
    if key == "out":
        return node._checked_out().rebuild(node)
    saved = node.saved
    names = node.op.input_names(len(saved)) if saved is not None and saved is not FREED else ()
    if key in names:
        v = saved[names.index(key)]
        return v.unpack(node, f"input {key}") if type(v) in SAVED_TYPES else v
    return node.params[key]


# ------------------------------------------------------------------ raw namespaces
def _raw_call(B):
    def call(op, *args, **kw):
        return op.forward(B, *args, **kw)
    return call


class _RawNamespace(Namespace):
    """A raw formula namespace: an op's function is its forward bound to the backend
    (``op.bound[B]``), looked up on first use and kept as an attribute."""

    def __init__(self, name, B):
        super().__init__(name)
        self._backend = B
        self._unbound = {}  # name -> op (each set as an attribute on first look-up)

    def __getattr__(self, name):  # (only for names not yet set)
        op = self.__dict__.get("_unbound", {}).get(name)
        if op is None:
            raise AttributeError(f"{self!r} has no function {name!r}")
        f = op.bound[self._backend]
        setattr(self, name, f)
        return f


_RAW_NAMESPACES = weakref.WeakSet()  # those raw_namespace made: publish adds to each


def raw_namespace(B: Backend):
    """The first-order formula namespace of backend ``B``: ops run their forward directly."""
    ns = _RawNamespace(B.name, B)
    for sub in registry.NAMESPACES:
        setattr(ns, sub, _RawNamespace(f"{B.name}.{sub}", B))
    for obj in _published:
        _publish_raw(ns, obj)
    for name, fn in _creation.raw_helpers(B).items():
        setattr(ns, name, fn)
    _RAW_NAMESPACES.add(ns)
    return ns


def _publish_raw(ns, obj):
    """Enter op or composite ``obj`` in the raw namespace ``ns``."""
    home = getattr(ns, obj.namespace) if obj.namespace else ns
    if isinstance(obj, registry.Composite):
        f = _make_composite_public(obj, ns) if obj.pack else functools.partial(obj.fn, ns)
        setattr(home, obj.name, f)
    elif obj.pack:
        setattr(home, obj.name, _make_public(obj, _raw_call(ns._backend)))
    else:  # bound on first use (Note [Forwards that hand their arguments on])
        home._unbound[obj.name] = obj


# ------------------------------------------------------------------ Tensor methods
def _make_method(f, name):
    def method(self, *args, **kw):
        return f(self, *args, **kw)
    method.__name__ = name
    method.__qualname__ = f"Tensor.{name}"
    method.__module__ = "ndgrad"
    method.__doc__ = f.__doc__
    return method


def _make_inplace_method(op, name):
    aliases = op.kwarg_aliases
    norm = op.normalize_args

    def method(self, *args, **kw):
        if aliases and kw:
            _rename(kw, aliases)
        if norm is not None:
            args, kw = norm(self, *args, **kw)
            args = args[1:]
        return apply_inplace(op, self, *args, **kw)
    # its code named as the method too (tracebacks, and Note [Where a tensor was modified
    # in place] in core/inplace.py, say `mul_`, not `method`)
    method.__code__ = method.__code__.replace(co_name=name, **(
        {"co_qualname": f"Tensor.{name}"} if sys.version_info >= (3, 11) else {}))
    method.__name__ = name
    method.__qualname__ = f"Tensor.{name}"
    method.__module__ = "ndgrad"
    method.__doc__ = f"In-place version of :func:`ndgrad.{op.name}`: ``x.{name}(...)`` " \
                     f"sets ``x`` to ``{op.name}(x, ...)`` and returns ``x``."
    return method


def _set_method(name, fn):
    if not hasattr(Tensor, name):  # (the first declaration of a name keeps it)
        setattr(Tensor, name, _make_method(fn, name))


def _publish_alias(alias):
    """An alias (``sub`` for ``subtract``) is a public name (and method) only: formulas use
    the canonical names. Published with its target, whichever of the two comes first."""
    target = registry.ALIASES[alias]
    if alias in PUBLIC:
        raise ValueError(f"alias {alias!r} (of {target!r}) is also a registered op")
    obj = REGISTRY.get(target) or COMPOSITES.get(target)
    if obj is None or obj.public is None:  # (published with its target)
        return
    PUBLIC[alias] = obj.public
    if obj.method:
        _set_method(alias, obj.public)


_published = []  # the ops and composites published, in order


def publish(obj):
    """Publish the declaration ``obj`` (an Op, a Composite, or an alias's name): its public
    function, its entries in the formula namespaces (TENSOR_F and every raw one), its Tensor
    method and in-place methods, its OpNode ``_saved_<name>`` properties (Note [Publishing a
    declaration] in registry.py)."""
    if isinstance(obj, str):
        return _publish_alias(obj)
    if obj.namespace is None and obj.name in registry.ALIASES:
        raise ValueError(f"{obj.name!r} is an alias (of {registry.ALIASES[obj.name]!r}) and "
                         "a registered op")
    again = obj.public is not None  # (defpublic or defargs after defop, above core)
    if isinstance(obj, registry.Composite):
        _publish(obj, _make_composite_public(obj, TENSOR_F))
    else:
        _publish(obj, obj.public_fn or _make_public(obj, apply))
        expose_saved_names([obj])  # grad_fn._saved_x, ...
    setattr(getattr(TENSOR_F, obj.namespace) if obj.namespace else TENSOR_F, obj.name,
            getattr(obj, "formula", None) or obj.public)  # (Note [Formulas on Python numbers])
    for ns in _RAW_NAMESPACES:
        _publish_raw(ns, obj)
    if not again:
        _published.append(obj)
    if obj.method:
        mname = obj.method if isinstance(obj.method, str) else obj.name
        if again:
            delattr(Tensor, mname)
        _set_method(mname, obj.public)
    ipm = getattr(obj, "inplace_method", None)
    if ipm:
        for n in ([ipm] if isinstance(ipm, str) else ipm):
            setattr(Tensor, n, _make_inplace_method(obj, n))
    for alias, target in registry.ALIASES.items():
        if target == obj.qualname:
            if again:
                PUBLIC.pop(alias, None)
            _publish_alias(alias)


# The hand-written members first (operators, conversions, backward, hooks:
# core/ops/methods.py); generated methods do not replace them.
for _name, _member in vars(TensorMethods).items():
    if not _name.startswith("__") or _name not in ("__module__", "__qualname__", "__doc__",
                                                    "__dict__", "__weakref__"):
        setattr(Tensor, _name, _member)
# Formula helpers that are not ops (creation, predicates) come from core.creation; the ops'
# functions replace those of the same name.
for _name in _creation.FORMULA_HELPERS:
    setattr(TENSOR_F, _name, getattr(_creation, _name))
for _name, _f in _creation.FORMULA_EXTRA.items():
    setattr(TENSOR_F, _name, _f)
NUMPY.F = raw_namespace(NUMPY)
for _obj in list(REGISTRY.values()) + list(COMPOSITES.values()):
    publish(_obj)
# Declarations made from now on (modules above core) are published as they are made.
registry.ON_DECLARE.append(publish)
# backends made later (CUDA, on first use) get theirs when they are registered
_backend_mod._ON_REGISTER.append(lambda B: setattr(B, "F", raw_namespace(B)))


def __getattr__(name):
    try:
        return PUBLIC[name]
    except KeyError:
        raise AttributeError(f"module 'ndgrad.core.ops' has no attribute {name!r}") from None
