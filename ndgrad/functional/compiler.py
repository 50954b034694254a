"""``ndgrad.func.compile``: a function traced once per signature into a straight-line program
of backend calls, then run as that program (Note [Compiled programs]).

Note [Compiled programs]
~~~~~~~~~~~~~~~~~~~~~~~~
The tracer is one more data level (Note [Data levels] in core/data_level.py): while the
function runs on its first call with a given signature, every tensor computed from the
arguments carries, as its data at the level, the :class:`Value` of the program that holds
it. The level follows every op and every dtype (``follows_every_op``), not only the
differentiable ones, and its rule (``propagate``) appends one :class:`Step` per op: the op,
its arguments (program values, or constants: Python values and the arrays of tensors that
carry no data) and its parameters. Derivatives are traced as any op: a transform inside the
function (``grad``, ``vjp``, ``jvp``, ``vmap``, ``jet``, ``.backward()``) runs its rules
through ``apply`` on tensors that carry the level's data (the engine keeps a rule on Tensors
when a value it reads carries a level's data: Note [Formulas on arrays or on Tensors] in
core/engine.py), so the rules' own operations become steps; a custom Function runs at the
level as its forward's operations, and its backward and jvp are traced where a transform
runs them. An op none of whose inputs carries data computes a constant, once, while
tracing (constant folding); a random draw becomes a step that draws again on each call
(``Interpreter.random``), from the generator eager code draws from. An in-place op is the
data levels' one protocol (Note [In-place at the data levels]): an out-of-place op whose
result becomes the target's value, a view's new value written up its chain of views.

Reading a traced tensor as a Python or NumPy value (``bool``, ``float``, ``item``, ``tolist``,
``numpy``, an index) raises: the value would be baked into the program, right only for the
values traced with. Writing in place into an argument, or into a tensor the function
captures, raises too: the program computes values, and the caller's tensor would not change.

The program is made into Python source with one line per step, each a call of the backend
function the op's forward hands its arguments to (``tanh(v3)``: Note [Forwards that hand
their arguments on] in core/ops/registry.py) or of the op's forward with the backend
(``sum(B, v3, axis=(0,))``), after dead steps are dropped and repeated steps merged
(:func:`optimize`). Running it costs one Python call per step and no Tensor: the
bookkeeping of eager ndgrad (a Tensor per value, a node per differentiable op, the checks
of dispatch) is paid once, at the trace.

The signature a program is kept under: the structure of the arguments, each tensor's shape,
dtype, device, and whether it requires grad, every other argument's value (a Python number
is static), grad mode, the default dtype, and the identity and version of each tensor the
function captures (in its closure or the globals it names); a tensor a step read as a
constant is checked again on each call (its version), so a captured tensor changed in
place means a new trace. A call whose argument requires grad (while grad mode is on)
records one node whose forward and backward are compiled programs (Note [Differentiating
a compiled function] in functional/compiled_function.py), and so does a call inside
``func.grad``, ``jvp`` and ``vmap`` levels (a vmap runs the batched program); inside other
transforms (``jet``, the Forward Laplacian) the call runs the function as it is, so its
result is transformable as eager code's.
"""

from __future__ import annotations

import functools
import importlib.util
import inspect
import os
import sys
import threading
import time
import weakref
from collections import OrderedDict
from itertools import count

import numpy as _np

from ..core import levels as _levels
from ..core.backend import (NUMPY, WEAK_FLOAT_DTYPES, _BACKEND_BY_TYPE, backend_of,
                            get_default_dtype)
from ..core.creation import asarray as _asarray
from ..core.creation import sample as _sample
from ..core.data_level import DataInfo, DataInterpreter, data_of
from ..core.dispatch import VARIADIC
from ..core.grad_mode import STATE
from ..core.inplace import BEFORE_WRITE
from ..core.ops.registry import COMPOSITES, REGISTRY
from ..core.refusing import refuse_hidden, restore
from ..core.tensor import Tensor, _wrap_raw, finish
from .compiled_function import call_at_levels
from .program import (LITERALS, Const, Program, Step, Value, build, optimize,
                      standalone_source)
from .pytree import tree_flatten, tree_unflatten

__all__ = ["compile", "Compiled", "CompileError"]

_PACKAGE = __file__.rsplit("/functional/", 1)[0] + "/"


def _scipy_package():
    """SciPy's package, found without importing it (ndgrad loads SciPy on first use)."""
    spec = importlib.util.find_spec("scipy")
    return type("_Found", (), {"__file__": spec.origin})() if spec else _np


class CompileError(RuntimeError):
    """What ``compile`` cannot trace: a traced value read as a Python value, an in-place
    write into an argument or a captured tensor, ..."""


def _user_line():
    """``file:line`` of the innermost frame outside the ndgrad package (the user's code); a
    frame of NumPy or SciPy that ndgrad called (a SciPy solver run on the values) is named
    with the user's line it was reached from."""
    f = sys._getframe(1)
    through = None
    while f is not None:
        file = f.f_code.co_filename
        if not file.startswith(_PACKAGE):
            if not file.startswith(_LIBRARIES):
                line = f"{file}:{f.f_lineno}"
                return line if through is None else f"{line} (through {through})"
            if through is None:
                through = f"{file.rsplit('site-packages/', 1)[-1]}:{f.f_lineno}"
        f = f.f_back
    return through or "?"


_LIBRARIES = tuple(os.path.dirname(m.__file__) + os.sep for m in (_np, _scipy_package()))


_OPS_INIT = _PACKAGE + "core/ops/__init__.py"
_NOT_READERS = (_PACKAGE + "core/tensor.py", _PACKAGE + "functional/compiler.py",
                _PACKAGE + "functional/grad_level.py")


def _reader():
    """``(name, "file:line")``: the ndgrad op or composite whose forward or rule reads a
    traced value (the innermost one running), with the line that reads it; None when the
    user's code reads it."""
    f = sys._getframe(2)
    line = None
    while f is not None:
        file = f.f_code.co_filename
        if not file.startswith(_PACKAGE):
            return None
        if line is None and not file.startswith(_NOT_READERS):
            line = f"{file[len(_PACKAGE) - len('ndgrad/'):]}:{f.f_lineno}"
        loc = f.f_locals
        op = loc.get("op")
        name = getattr(op, "qualname", None) if op is not None else None
        if name is None and file == _OPS_INIT and f.f_code.co_name == "run":
            name = loc.get("name") if isinstance(loc.get("name"), str) else None
        if isinstance(name, str):
            return name, line
        f = f.f_back
    return None


def _hint(name):
    """What op or composite ``name`` says to do instead of compiling it, where its
    declaration says (``notes["compile"]``), else ""."""
    entry = REGISTRY.get(name) or COMPOSITES.get(name)
    note = entry.notes.get("compile") if entry is not None else None
    return f" ({note})" if note else ""


# ------------------------------------------------------------------------------ the tracer
class _TraceInfo(DataInfo):
    """A trace in progress: its steps, constants, the tensors made inside the function,
    and the constant tensors its steps read (checked again on each call)."""

    __slots__ = ("steps", "consts", "const_ids", "made", "guards", "values", "backend",
                 "inputs", "arguments", "captured", "unknown", "snapshots", "live")

    def __init__(self):
        super().__init__("compile")
        self.steps = []
        self.consts = []
        self.const_ids = {}
        self.made = {}  # id -> weakref: the tensors made inside the function (lifted)
        self.guards = {}  # id -> (weakref to a constant tensor a step read, its version)
        self.values = count()
        self.backend = None
        self.inputs = set()  # ids of the arguments' carriers' bases (the caller's tensors)
        self.arguments = []  # the caller's tensors
        self.captured = set()  # ids of the tensors the function captures (its closure, globals)
        # (weakrefs to) tensors written into that carry no value of the trace and were not
        # made by a creation function: made inside a transform (a vmap's identity basis), or
        # reached through an attribute; decided when the trace ends (Note [Writes into
        # tensors the trace did not make])
        self.unknown = []
        self.snapshots = {}  # id -> (weakref, version, the constant of its array then)
        self.live = False  # (Note [Tensors a derivative follows through a constant])

    def was_made(self, t):
        r = self.made.get(id(t))
        return r is not None and r() is t

    def note_made(self, t):
        self.made[id(t)] = weakref.ref(t)

    def value(self, t):
        return Value(next(self.values), tuple(t.shape), t.dtype)

    def const(self, value):
        c = self.const_ids.get(id(value))
        if c is not None and c.value is value:
            return c
        c = Const(len(self.consts), value)
        self.consts.append(value)
        self.const_ids[id(value)] = c
        return c


class _Tracer(DataInterpreter):
    """The compile level's rules (Note [Compiled programs])."""

    name = "compile"
    follows_every_op = True
    transforms_random = True
    keeps_data_detached = True
    values_unknown = True

    def propagate(self, lv, op, data, out, args, params):
        info = lv.info
        outs = (out,) if op.nout == 1 else tuple(out)
        nin = len(args) if op.nin == VARIADIC else op.nin
        weak = None
        refs = []
        for k, a in enumerate(args):
            d = data[k] if k < nin else None
            if d is not None:
                refs.append(d)
            elif isinstance(a, Tensor):
                refs.append(self._constant(info, a, op))
            elif type(a) is float and k < nin:
                if weak is None:
                    weak = _weak_float_dtype(args) if len(args) == op.nin == 2 else False
                refs.append(info.const(weak.type(a)) if weak else a)
            else:
                refs.append(a if type(a) in LITERALS else info.const(a))
        B = self._backend(info, outs)
        inputs_only = not params and len(args) == nin
        if op.special is not None and inputs_only:  # (Note [Special cases of an op] in
            found = op.special(*refs)               # core/ops/registry.py)
            if found is not None:
                op = REGISTRY[found[0]]
                refs = list(found[1])
        bound = op.bound[B] if inputs_only else None
        if bound is not None and not isinstance(bound, functools.partial):
            fn, name, with_backend = bound, getattr(bound, "__name__", op.name), False
        else:
            fn, name, with_backend = op.forward, op.name, True
        values = tuple(info.value(o) for o in outs)
        p = {k: self._parameter(info, lv, v, op) for k, v in params.items()}
        info.steps.append(Step("op", op, fn, _identifier(name), with_backend, refs, p, values))
        return list(values)

    def _parameter(self, info, lv, v, op):
        """A parameter of a step: a tensor in it (an index, alone or in a tuple) is a value
        of the program where it carries one, else a constant (its array)."""
        if isinstance(v, Tensor):
            d = data_of(v, lv)
            return d if d is not None else self._constant(info, v, op)
        if type(v) in (tuple, list):
            return type(v)(self._parameter(info, lv, x, op) for x in v)
        return v

    def _backend(self, info, outs):
        B = backend_of(outs[0]._data) if outs and isinstance(outs[0], Tensor) else None
        if info.backend is None:
            info.backend = B
        elif B is not None and B is not info.backend:
            raise CompileError(
                "ndgrad.func.compile: the function computes on two devices "
                f"({info.backend.name} and {B.name}); a compiled program runs on one. Move "
                "the tensors to one device (to_device) or do not compile this function")
        return info.backend

    def _constant(self, info, t, op):
        """A tensor without the level's data read by a step: its array, a constant; one made
        outside the function is checked again on each call (its version)."""
        if type(t) is not Tensor:
            raise CompileError(
                f"ndgrad.func.compile: {op.qualname} met a value of a transform entered "
                "outside the compiled function; call the compiled function inside the "
                "transform with its values as arguments instead")
        if STATE.grad_enabled and t._requires_grad or _carries_level_data(t):
            info.live = True  # (Note [Tensors a derivative follows through a constant])
        if not info.was_made(t) and id(t) not in info.guards:
            info.guards[id(t)] = (weakref.ref(t), t._counter().value, t._requires_grad)
        if id(t) in info.captured:
            return info.const(t._data)  # (the function cannot write into it: refused)
        # the array as it is now: the function may write into the tensor later in the trace
        # (below this level, where the write is made), which must not change this constant
        version = t._counter().value
        kept = info.snapshots.get(id(t))
        if kept is not None and kept[0]() is t and kept[1] == version:
            return kept[2]
        c = info.const(_snapshot(t._data))
        info.snapshots[id(t)] = (weakref.ref(t), version, c)
        return c

    def function_rule(self, lv, cls, ctx, args, kwargs, data, outs):  # pragma: no cover
        raise AssertionError("a Function runs at the compile level (follows_every_op)")

    def zeros(self, value):
        raise AssertionError("every op is followed: an in-place result carries a value")

    def fit(self, lv, out, value, who):
        """An in-place result of another dtype than its target: cast, as the write casts."""
        if value.dtype == out.dtype:
            return value
        info = lv.info
        cast = info.value(out)
        info.steps.append(Step("cast", None, _astype, "astype", False,
                               [value, info.const(out.dtype)], {}, (cast,)))
        return cast

    def write_inplace(self, lv, op, target, new, old, data):
        root = _root(target)
        info = lv.info
        # (a tensor sharing an argument's memory without being its view, through detach()
        # or .data, is the caller's memory too: eager code changes the argument)
        whose = _callers(info, root)
        if whose is not None:
            _refuse_write(f"the in-place operation {op.name}", whose)
        if data_of(root, lv) is None and not info.was_made(root):
            info.unknown.append(weakref.ref(root))  # (Note [Writes into tensors the trace
            #                                         did not make])
        other = _alias(lv, root)
        if other is not None:
            raise CompileError(
                f"ndgrad.func.compile: the in-place operation {op.name} at {_user_line()} "
                f"writes into a tensor (shape {list(target.shape)}) that shares its memory "
                f"with another value of the function (shape {list(other.shape)}) without "
                "being its view (made by detach(), .data, or an op that returned its input's "
                "memory): eager code changes both, a program changes the one written. "
                "clone() the tensor before writing into it")
        return super().write_inplace(lv, op, target, new, old, data)

    def lift(self, lv, t):
        lv.info.note_made(t)
        return t

    def random(self, kind, shape, dtype, device, requires_grad):
        lv = next(lv for lv in reversed(_levels.visible_levels()) if lv.interpreter is self)
        # (the draw carries the program's value, then the levels inside this one lift it:
        # lifted first, a func.grad level's wrapper would carry the value and the tensor it
        # computes with would not, so a gradient through the draw kept the traced numbers)
        t = finish(_sample(kind, shape, dtype, device), requires_grad, lift=False)
        info = lv.info
        v = info.value(t)
        info.steps.append(Step("random", None, _sample, "sample", False,
                               [kind, tuple(shape), info.const(t.dtype), info.const(device)],
                               {}, (v,)))
        self.store(t, lv, v)
        info.note_made(t)
        if not requires_grad:  # (as finish lifts)
            t = _levels.lift_created(t, inside=lv)
        return t

    def refuse_conversion(self, lv, t, what):
        reader = _reader()
        where = f" by ndgrad.{reader[0]} ({reader[1]})" if reader else ""
        raise CompileError(
            f"ndgrad.func.compile: a traced tensor (shape {list(t.shape)}) is read as "
            f"{what}{where} at {_user_line()}; its value is not known while the function is "
            "traced, and the program would keep the value of this first call. " + (
                "This ndgrad function reads its input's values (its result's shape or the "
                "formula it takes depends on them), so it cannot be compiled on traced "
                "values: call it outside the compiled function" + _hint(reader[0])
                if reader else
                "Pass the value as a static argument (static_argnums/static_argnames), "
                "compute with tensors (ndgrad.where instead of `if`), or run this function "
                "without compile"))


def _carries_level_data(t):
    """Whether tensor ``t`` carries data of a live transform level (a dual level's
    tangent, ...)."""
    m = t._meta
    return m is not None and bool(m.level_data) and any(lv.alive for lv in m.level_data)


# Note [Tensors a derivative follows through a constant]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A program's inputs are the function's arguments; a tensor it reads any other way (its
# closure, a global, an attribute) is a constant of the program. A constant that a
# derivative follows would silently lose its derivative: one that requires grad (grad mode
# on) in the plain graph, or a value of a transform level outside the call (a dual level's
# tangent, a func.grad or vmap level's wrapper: ``jvp(lambda y: compile(lambda x: x * y)(x0))``
# gave the tangent 0). So a trace that reads such a constant marks its program
# (``Program.reads_live``) and the call runs as eager code, which follows it: every call of
# that signature (the guards keep each constant's ``requires_grad`` too: set later, the
# program is traced again). A trace made below the levels of its call (the node of a
# compiled function, a batched program: Note [Differentiating a compiled function] in
# functional/compiled_function.py) hides those levels: there a value of a hidden wrapper
# level raises where an op unwraps it, and the hidden data levels refuse the values the
# function did not receive (Note [Data levels below a Function] in core/refusing.py), so
# an op on a captured tangent's tensor raises even where its result is folded into a
# constant; the call then runs as eager code.
def _root(t):
    while t._meta is not None and t._meta.base is not None:
        t = t._meta.base
    return t


# Note [Writes into tensors the trace did not make]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# An in-place write becomes an op of the program whose result the target holds from then on
# (Note [In-place at the data levels]); the target itself is not written when the program
# runs. That is right for a tensor of the function's own (a value of the trace, or one a
# creation function made) and wrong for the caller's: an argument, or a tensor the function
# captures, which eager code changes (refused). A transform inside the function makes
# tensors of its own with no creation function (a vmap's identity basis, made when a
# Jacobian's tangents are written in place): such a tensor is unreachable once the trace
# ends, while a tensor the function reached through an attribute (``self.w``) outlives it.
# So a write into a tensor that is neither is allowed while tracing and decided when the
# trace ends: if the tensor is still alive (and not one of the function's outputs), the
# function changed a tensor of its caller's, and compile refuses it.
def _plain_write(lv, t):
    """Before a plain in-place write (core/inplace.py's BEFORE_WRITE) while ``lv`` traces:
    a tensor that carries no value of the trace and was not made inside is written without
    the level seeing it (no traced value is involved): noted, decided when the trace ends."""
    if not lv.alive or lv not in _levels.active_levels():
        return  # (another thread's write, or this trace's level is gone)
    info = lv.info
    root = _root(t)
    if data_of(root, lv) is not None or info.was_made(root):
        return  # (the function's own: a value of the trace, or one it made)
    whose = _callers(info, root)
    if whose is not None:
        _refuse_write("an in-place operation", whose)
    info.unknown.append(weakref.ref(root))


def _callers(info, root):
    """What the caller's tensor ``root`` is to the function (an argument, or one it
    captures), or None: then the function may write into it."""
    if id(root) in info.inputs or any(root._shares_memory(a) for a in info.arguments):
        return "an argument of the compiled function"
    if id(root) in info.captured:
        return "a tensor the compiled function captures"
    return None


def _refuse_write(what, whose):
    raise CompileError(
        f"ndgrad.func.compile: {what} at {_user_line()} writes into {whose}; a compiled "
        "function computes values and cannot change its caller's tensors. Return the new "
        "value instead (or clone() the tensor first)")


def _check_unknown_writes(info, out_leaves):
    outs = [o for o in out_leaves if isinstance(o, Tensor)]
    for ref in info.unknown:
        t = ref()
        if t is not None and not any(t is o or t._shares_memory(o) for o in outs):
            raise CompileError(
                f"ndgrad.func.compile: the function writes in place into a tensor (shape "
                f"{list(t.shape)}) that it neither made nor received as an argument, and "
                "that outlives the call (a tensor reached through an attribute or a "
                "container?); a compiled function computes values and cannot change its "
                "caller's tensors. Pass it as an argument and return the new value")


def _alias(lv, root):
    """A live value of the trace whose memory ``root`` (a base) shares without the two being
    linked as base and view (the in-place protocol follows a write into the views of its
    base only), or None."""
    for ref in lv.info.holders:
        t = ref()
        if t is None or t is root or type(t) is not Tensor:
            continue
        r = _root(t)
        if r is not root and root._shares_memory(r):
            return t
    return None


def _snapshot(d):
    """A copy of array ``d`` with its memory layout (a transposed operand takes another BLAS
    path, which rounds differently)."""
    try:
        return d.copy(order="K")
    except TypeError:  # (an array library whose copy takes no order: Dask's)
        return d.copy()


def _astype(x, dtype):
    return x.astype(dtype)


def _identifier(name):
    n = "".join(c if c.isalnum() or c == "_" else "_" for c in name)
    return n if n and not n[0].isdigit() else f"op_{n}"


def _weak_float_dtype(arrays):
    """The dtype a Python float takes beside the other of two inputs ``arrays``, or False:
    dispatch's rule, a bfloat16 tensor's; only on its path for an op of two inputs and no
    other positional argument (``apply``'s fast path: an op of three inputs, ``clip`` or
    ``where``, hands the float on as it is, and NumPy promotes it)."""
    for a in arrays:
        if type(a) is Tensor and WEAK_FLOAT_DTYPES and a._data.dtype in WEAK_FLOAT_DTYPES:
            return a._data.dtype
    return False


_TRACER = _Tracer()


# ------------------------------------------------------------------------------ the API
class _Entry:
    __slots__ = ("program", "run", "guards", "wrap", "cached")

    def __init__(self, program, guards):
        self.program = program
        self.run = program.run
        self.guards = guards
        self.cached = True  # (False once the cache drops it: Note [Calling a compiled function])
        spec = program.out_spec
        if spec.kind == "leaf" and type(program.outputs[0]) is Value:
            self.wrap = _one
        elif spec.kind == "tuple" and all(c.kind == "leaf" for c in spec.children) and \
                all(type(o) is Value for o in program.outputs):
            self.wrap = _several
        else:
            self.wrap = functools.partial(_tree, spec)

    def current(self):
        """Whether every tensor the program read as a constant is alive and unchanged: one
        that died was rebound (``model.w = model.w - lr * g``), and a captured tensor's
        identity in the signature may now be a new tensor's (CPython reuses the ids of
        freed objects: a loop rebinding a captured global ran a program of two iterations
        before, with its constant)."""
        for ref, version, requires_grad in self.guards:
            t = ref()
            if t is None or t._counter().value != version or \
                    t._requires_grad is not requires_grad:
                return False
        return True


def _one(outs):
    return _wrap_raw(outs[0])


def _several(outs):
    return tuple(map(_wrap_raw, outs))


def _tree(spec, outs):
    return tree_unflatten(spec, [_wrap_raw(o) if isinstance(o, _ARRAYS) else o for o in outs])


def _capture_sources(fun, depth=3):
    """Where ``fun`` may read a tensor it captures: ``[(mapping or cell, name)]`` for its
    closure's cells and the globals its code names, and those of the functions found there
    (a transform's wrapper holds the user's function in its closure), ``depth`` deep."""
    found = []
    seen = set()

    def visit(f, d):
        if id(f) in seen or d < 0:
            return
        seen.add(id(f))
        code = getattr(f, "__code__", None)
        if code is None:
            inner = getattr(f, "func", None) or getattr(f, "__wrapped__", None)
            if inner is not None:
                visit(inner, d - 1)
            return
        for cell in f.__closure__ or ():
            if not _filled(cell):
                continue
            if _may_hold_tensors(cell.cell_contents):
                found.append((cell, None))
            elif callable(cell.cell_contents):
                visit(cell.cell_contents, d - 1)
        if f.__module__ and f.__module__.startswith("ndgrad."):
            return  # (ndgrad's own globals hold no tensor of the user's)
        g = f.__globals__
        for n in code.co_names:
            if n in g:
                if _may_hold_tensors(g[n]):
                    found.append((g, n))
                elif inspect.isfunction(g[n]):
                    visit(g[n], d - 1)
    visit(fun, depth)
    return found


def _may_hold_tensors(v):
    """A tensor, a container that may hold one, or None (a name bound later): what a source
    is watched for. A name bound to a function, a module or a number is not watched, and
    rebinding it to a tensor is not seen; ndgrad's own modules are not read."""
    return v is None or isinstance(v, (Tensor, list, tuple, dict))


def _captured(sources):
    """``((id, version, requires_grad), ...)`` of the tensors the sources hold now (one level into
    lists, tuples and dicts)."""
    found = []
    for where, name in sources:
        if name is None:
            try:
                v = where.cell_contents
            except ValueError:
                continue
        else:
            v = where.get(name)
        if type(v) is Tensor:
            found.append((id(v), v._counter().value, v._requires_grad))
        elif type(v) in (list, tuple):
            found += [(id(x), x._counter().value, x._requires_grad) for x in v
                      if type(x) is Tensor]
        elif type(v) is dict:
            found += [(id(x), x._counter().value, x._requires_grad) for x in v.values()
                      if type(x) is Tensor]
    return tuple(found)


def _frozen(x):
    """A static value as it enters the signature: equal only for values a program may be
    shared by. A float or complex by its repr (``0.0`` and ``-0.0`` are equal in Python, and
    a program made with one gives the other's sign of zero wrong; NaN equals itself); a
    slice by its parts (unhashable before Python 3.12); a tuple's items with their types
    (``(1,)``, ``(1.0,)`` and ``(True,)`` are equal in Python)."""
    t = type(x)
    if t is float or t is complex:
        return (t, repr(x))
    if t is slice:
        return (slice, _frozen(x.start), _frozen(x.stop), _frozen(x.step))
    if t is tuple:
        return tuple((type(v), _frozen(v)) for v in x)
    return x


def _filled(cell):
    try:
        cell.cell_contents  # noqa: B018
    except ValueError:
        return False
    return True


def _placed_as(d):
    """A non-NumPy array's part of a fast key: its type, shape, dtype and device."""
    return (type(d), d.shape, d.dtype, str(getattr(d, "device", None)))


_NDARRAY = NUMPY.array_type


# Note [Calling a compiled function]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A call with positional tensors only (none requiring grad) and no transform level visible
# looks its program up by a short key first: grad mode, the default dtype, each array's
# shape and dtype (type and device beyond NumPy), and the captured tensors' identities and
# versions (read from the closure cells and globals found once, those that hold a tensor, a
# container or None, outside ndgrad's own modules: ``_capture_sources``). A
# program is entered under that key when it is traced from such a call, beside the full
# signature; anything else (keyword arguments, static arguments, pytrees, NumPy arrays, a
# miss) takes the full signature's path. The short key leads to the cache's entry itself,
# which says whether the cache still holds it (``cached``: an entry the LRU bound or
# ``clear_cache`` dropped is traced again). Then the program runs on the arrays and its
# outputs are wrapped. About 2 us per call more than the program itself, against 12 us
# through the full signature (pytree flattening and hashing its structure dominate); it
# was 9 us for a Hessian while every global of ndgrad's transforms was watched. Between
# two calls of a memory-bound program (a 128 x 128 Hessian) the same Python costs about
# twice that: its objects are no longer in the processor's caches.
class Compiled:
    """A compiled function (:func:`compile`): call it as the function; ``source(*args)``,
    ``program(*args)`` and ``clear_cache()``."""

    def __init__(self, fun, static_argnums, static_argnames, assume_finite, cache_size):
        self.fun = fun
        self.static_argnums = static_argnums
        self.static_argnames = static_argnames
        self.assume_finite = assume_finite
        self.cache_size = cache_size
        self._cache = OrderedDict()
        self._fast = {}  # (Note [Calling a compiled function]) fast key -> cache entry
        self._lock = threading.Lock()
        self._sources = _capture_sources(fun)
        functools.update_wrapper(self, fun)

    def clear_cache(self):
        """Forget every program made so far (the next calls trace again)."""
        with self._lock:
            for entry in self._cache.values():
                entry.cached = False
            self._cache.clear()
            self._fast.clear()

    def _split(self, args, kwargs):
        """``(key, dynamic tensors, rebuild)`` for a call: the signature, the tensors the
        program takes, and a function putting traced values in their places."""
        static = []
        dyn_args = []
        for k, a in enumerate(args):
            if k in self.static_argnums or k - len(args) in self.static_argnums:
                static.append((k, _frozen(a)))
                dyn_args.append(None)
            else:
                dyn_args.append(a)
        dyn_kwargs = {}
        for name, v in kwargs.items():
            if name in self.static_argnames:
                static.append((name, _frozen(v)))
            else:
                dyn_kwargs[name] = v
        leaves, spec = tree_flatten((dyn_args, dyn_kwargs))
        sig = []
        tensors = []
        for x in leaves:
            if isinstance(x, Tensor):
                sig.append((x.shape, x.dtype, str(x.device), x._requires_grad))
                tensors.append(x)
            elif type(x) in _BACKEND_BY_TYPE:
                t = _asarray(x)
                sig.append((t.shape, t.dtype, str(t.device), False))
                tensors.append(t)
            else:
                sig.append(("static", type(x), _frozen(x)))
        captured = _captured(self._sources)
        key = (spec, tuple(sig), tuple(static), STATE.grad_enabled, get_default_dtype(),
               captured)
        try:
            hash(key)
        except TypeError:
            raise TypeError(
                f"ndgrad.func.compile({getattr(self.fun, '__name__', 'fun')}): an argument "
                "that is not a tensor must be hashable (it is part of the signature a "
                "program is kept under); pass arrays as tensors and mark other arguments "
                "static with static_argnums/static_argnames") from None
        return key, leaves, spec, tensors

    def _eager(self, args, kwargs):
        if _levels.VISIBLE[0]:
            return True  # (inside a transform: its values are the function's to process)
        if STATE.grad_enabled:
            for x in tree_flatten((list(args), kwargs))[0]:
                if isinstance(x, Tensor) and x._requires_grad:
                    return True
        return False

    def __call__(self, *args, **kwargs):
        if not kwargs and not _levels.VISIBLE[0]:  # (Note [Calling a compiled function])
            fast = [STATE.grad_enabled, get_default_dtype()]
            datas = []
            for a in args:
                if type(a) is not Tensor or a._requires_grad:
                    break
                d = a._data
                fast.append((d.shape, d.dtype) if type(d) is _NDARRAY else _placed_as(d))
                datas.append(d)
            else:
                if self._sources:
                    fast.append(_captured(self._sources))
                entry = self._fast.get(tuple(fast))
                if entry is not None and entry.cached and (not entry.guards or
                                                           entry.current()):
                    return entry.wrap(entry.run(*datas))
        if self._eager(args, kwargs):
            if not kwargs:  # (arguments that require grad, or values of transforms)
                out = call_at_levels(self, args)
                if out is not None:
                    return out
            return self.fun(*args, **kwargs)
        key, leaves, spec, tensors = self._split(args, kwargs)
        entry = self._cache.get(key)
        if entry is None or not entry.current():
            # (the trace's own results: it ran the function once, random draws included)
            return self._trace(key, args, kwargs, leaves, spec, tensors)[1]
        if entry.program.reads_live:  # (Note [Tensors a derivative follows through a
            return self.fun(*args, **kwargs)  # constant])
        try:
            self._cache.move_to_end(key)
        except KeyError:  # (another thread dropped it meanwhile)
            pass
        return entry.wrap(entry.program.run(*[t._data for t in tensors]))

    def _trace(self, key, args, kwargs, leaves, spec, tensors):
        start = time.perf_counter()
        info = _TraceInfo()
        lv = _TRACER.enter(info)
        watch = functools.partial(_plain_write, lv)  # (Note [Writes into tensors the trace
        BEFORE_WRITE.append(watch)                    # did not make])
        try:
            inputs = []
            traced = []
            for x in leaves:
                if isinstance(x, Tensor) or type(x) in _BACKEND_BY_TYPE:
                    t = x if isinstance(x, Tensor) else _asarray(x)
                    v = info.value(t)
                    inputs.append(v)
                    info.inputs.add(id(t))
                    info.arguments.append(t)
                    traced.append(_TRACER.carrier(lv, t, v))
                else:
                    traced.append(x)
            dyn_args, dyn_kwargs = tree_unflatten(spec, traced)
            call_args = [a if d is None and k in range(len(args)) and (
                k in self.static_argnums or k - len(args) in self.static_argnums) else d
                for k, (a, d) in enumerate(zip(args, dyn_args))]
            call_kwargs = dict(dyn_kwargs)
            call_kwargs.update({n: kwargs[n] for n in kwargs if n in self.static_argnames})
            generator = NUMPY.generator()
            info.captured = {c[0] for c in _captured(self._sources)}
            # (levels this call is traced below refuse what the function reads of theirs:
            # Note [Tensors a derivative follows through a constant])
            shown = refuse_hidden((), {})
            try:
                result = self.fun(*call_args, **call_kwargs)
            finally:
                restore(shown)
            if getattr(NUMPY._rng, "gen", None) is not generator:
                raise CompileError(
                    "ndgrad.func.compile: the function seeds ndgrad's random generator "
                    "(manual_seed) or sets its state while it is traced; a program draws from "
                    "the generator as it is when called and would not seed it again (its "
                    "draws, and those after it, would differ from eager code's). Seed before "
                    "calling the compiled function")
            out_leaves, out_spec = tree_flatten(result)
            outputs = []
            for o in out_leaves:
                if isinstance(o, Tensor):
                    if type(o) is not Tensor:
                        raise CompileError(
                            "ndgrad.func.compile: the function returned a value of a "
                            "transform entered inside it; return plain tensors")
                    d = data_of(o, lv)
                    outputs.append(d if d is not None else _TRACER._constant(info, o, None))
                else:
                    outputs.append(info.const(o))
        finally:
            BEFORE_WRITE.remove(watch)
            _TRACER.leave(lv)
        _check_unknown_writes(info, out_leaves)
        B = info.backend or (backend_of(tensors[0]._data) if tensors else _BACKEND_BY_TYPE[
            type(_asarray(0.0)._data)])
        program = Program(B, inputs, outputs, out_spec, info.steps, info.consts)
        program.trace_time = time.perf_counter() - start
        program.reads_live = info.live
        build(optimize(program, self.assume_finite))
        guards = tuple(g for g in info.guards.values() if g[0]() is not None)
        entry = _Entry(program, guards)
        fast = None
        if not kwargs and not self.static_argnums and not info.live and \
                all(type(a) is Tensor for a in args):
            fast = tuple([STATE.grad_enabled, get_default_dtype()] + [
                (a._data.shape, a._data.dtype) if type(a._data) is _NDARRAY else
                _placed_as(a._data) for a in args] + (
                    [_captured(self._sources)] if self._sources else []))
        with self._lock:
            old = self._cache.get(key)
            if old is not None:
                old.cached = False
            self._cache[key] = entry
            if fast is not None:
                if len(self._fast) > 4 * self.cache_size:
                    self._fast.clear()  # (entries the cache dropped)
                self._fast[fast] = entry
            while len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)[1].cached = False
        return entry, result

    def program(self, *args, **kwargs):
        """The :class:`Program` for these arguments' signature (traced if need be; a trace
        made here leaves the random generators as they were, as though it drew nothing)."""
        key, leaves, spec, tensors = self._split(args, kwargs)
        entry = self._cache.get(key)
        if entry is None or not entry.current():
            states = _rng_states()
            try:
                entry = self._trace(key, args, kwargs, leaves, spec, tensors)[0]
            finally:
                for B, state in states:
                    B.set_rng_state(state)
        return entry.program

    def source(self, *args, standalone=False, **kwargs):
        """The generated Python source of the program for these arguments' signature; with
        ``standalone=True``, a module that needs NumPy only (and SciPy where it calls SciPy's
        functions; Note [Standalone programs] in functional/program.py)."""
        p = self.program(*args, **kwargs)
        return standalone_source(p, getattr(self.fun, "__name__", "program")
                                 .replace("<lambda>", "program")) if standalone else p.source


_ARRAYS = tuple(_BACKEND_BY_TYPE)


def _rng_states():
    """``[(backend, its generator's state)]`` for the backends whose state can be kept."""
    states = []
    for B in set(_BACKEND_BY_TYPE.values()):
        try:
            states.append((B, B.rng_state()))
        except RuntimeError:  # (a generator that cannot be copied: not kept)
            pass
    return states


def compile(fun=None, *, static_argnums=(), static_argnames=(), assume_finite=False,  # noqa: A001
            cache_size=64):
    """Compile ``fun``: trace it once per signature into a program of backend calls.

    The first call with a given signature runs ``fun`` and records what it computes, its
    derivative rules included (``compile(grad(f))``, ``compile(hessian(f))``, a step that
    calls ``.backward()``); later calls with that signature run the recorded program, with no
    Tensor or graph in between (Note [Compiled programs]; ``docs/compile.rst``). Usable as a
    decorator, with or without arguments.

    Parameters
    ----------
    fun : callable
        Takes tensors (and tuples, lists and dicts of them, and other values) and returns
        tensors (or such a structure of them).
    static_argnums : int or tuple of ints
        Positional arguments whose values, not only their types, decide the program (a
        number of steps, a flag); they must be hashable. Other non-tensor arguments (Python
        numbers, strings) are part of the signature too.
    static_argnames : str or tuple of str
        The same for keyword arguments.
    assume_finite : bool
        Also allow rewrites that are exact for finite values only: identity folding where
        the sign of a zero off the diagonal could differ, and without its checks of
        infinite and NaN elements (Note [Identity folding]). Default False: the program's
        values are eager ndgrad's.
    cache_size : int
        How many programs to keep, the least recently used dropped first (default 64).

    Returns
    -------
    Compiled
        Call it as ``fun``. ``.source(*args)`` is the program's Python source for those
        arguments' signature (``standalone=True``: a module that needs NumPy only, and SciPy
        where it calls SciPy's functions),
        ``.program(*args)`` the program itself (its steps before and after optimisation,
        the trace and build times), ``.clear_cache()`` forgets every program.

    Raises
    ------
    CompileError
        While tracing, a traced value read as a Python or NumPy value (``bool``, ``float``,
        ``item``, ``numpy``, an index), an in-place write into an argument or a captured
        tensor, seeding the random generator, or an op whose result depends on values it
        cannot read (each message names the line and what to do).
    TypeError
        ``fun`` not callable, or an argument of the signature that is not hashable.
    ValueError
        A bad ``cache_size``, ``static_argnums`` or ``static_argnames``.

    Examples
    --------
    >>> import ndgrad
    >>> from ndgrad.func import compile, grad
    >>> g = compile(grad(lambda x: (ndgrad.tanh(x) ** 2).sum()))
    >>> x = ndgrad.tensor([0.5, 1.0])
    >>> bool(ndgrad.allclose(g(x), grad(lambda x: (ndgrad.tanh(x) ** 2).sum())(x)))
    True
    >>> @compile(static_argnums=1)
    ... def power(x, n):
    ...     for _ in range(n - 1):
    ...         x = x * x
    ...     return x
    >>> power(ndgrad.tensor([2.0, 3.0]), 3)
    tensor([16., 81.])
    """
    if isinstance(static_argnums, int):
        static_argnums = (static_argnums,)
    if isinstance(static_argnames, str):
        static_argnames = (static_argnames,)
    if not isinstance(cache_size, int) or isinstance(cache_size, bool) or cache_size < 1:
        raise ValueError(f"ndgrad.func.compile: cache_size must be a positive int, got "
                         f"{cache_size!r}")
    try:
        static_argnums = tuple(static_argnums)
        static_argnames = tuple(static_argnames)
    except TypeError:
        raise ValueError("ndgrad.func.compile: static_argnums must be an int or a tuple of "
                         "ints, static_argnames a str or a tuple of str") from None
    if not all(isinstance(k, int) and not isinstance(k, bool) for k in static_argnums) or \
            not all(isinstance(k, str) for k in static_argnames):
        raise ValueError(f"ndgrad.func.compile: static_argnums must be ints and "
                         f"static_argnames strs, got {static_argnums!r} and "
                         f"{static_argnames!r}")

    def make(f):
        if not callable(f):
            raise TypeError(f"ndgrad.func.compile: expected a function, got "
                            f"{type(f).__name__}")
        if isinstance(f, Compiled):
            return f
        return Compiled(f, tuple(static_argnums), tuple(static_argnames), bool(assume_finite),
                        cache_size)
    return make if fun is None else make(fun)
