"""The straight-line programs ``ndgrad.func.compile`` makes (Note [Compiled programs] in
functional/compiler.py): their values, constants and steps, the optimiser, and the Python
source a program is run as.
"""

from __future__ import annotations

import builtins
import time
from itertools import count as itertools_count

import numpy as np

from ..core.backend import NUMPY
from ..core.creation import sample as _sample
from ..core.ops.registry import Algebra
from .standalone import CopiedSource

__all__ = ["Value", "Const", "Step", "Program", "optimize", "build", "standalone_source",
           "LITERALS"]

class Value:
    """A value of a program: its index, shape and dtype (known at the trace)."""

    __slots__ = ("index", "shape", "dtype")

    def __init__(self, index, shape, dtype):
        self.index = index
        self.shape = shape
        self.dtype = dtype

    def __repr__(self):
        return f"v{self.index}"


class Const:
    """A constant of a program: a Python value or a tensor's array, read from the constants
    table (``K[index]``) unless it prints as a literal."""

    __slots__ = ("index", "value")

    def __init__(self, index, value):
        self.index = index
        self.value = value


class Step:
    """One line of a program: ``outs = fn(*args, **params)`` (``with_backend``: the op's
    forward, called with the backend first). ``kind`` is "op", "random" or "cast"."""

    __slots__ = ("kind", "op", "fn", "name", "with_backend", "args", "params", "outs",
                 "scalar")

    def __init__(self, kind, op, fn, name, with_backend, args, params, outs):
        self.kind = kind
        self.op = op
        self.fn = fn
        self.name = name
        self.with_backend = with_backend
        self.args = args
        self.params = params
        self.outs = outs
        # a 0-d output: NumPy returns a scalar, which the program makes a 0-d array
        self.scalar = any(o.shape == () for o in outs)

    def key(self):
        """What makes two steps compute the same (for merging repeated steps), or None."""
        if self.kind == "random":
            return None
        try:
            parts = tuple(_token(a) for a in self.args)
            params = tuple(sorted((k, _token(v)) for k, v in self.params.items()))
            key = (self.kind, self.fn, self.with_backend, parts, params, len(self.outs))
            hash(key)
        except TypeError:
            return None
        return key


def _token(a):
    """What identifies an argument in a step's key: a value by index, a constant by
    identity, a Python value by type and repr (``1``, ``1.0`` and ``True`` are equal in
    Python, ``0.0`` and ``-0.0`` too, and give different results)."""
    if type(a) is Value:
        return ("v", a.index)
    if type(a) is Const:
        v = a.value
        if _index_like(v):  # (an index written twice: equal slices are the same index)
            return ("i", repr(v))
        if isinstance(v, np.ndarray) and v.size <= 64:  # (bytes and layout: the same array)
            return ("a", v.dtype.str, v.shape, v.strides, v.tobytes())
        return ("k", id(v))
    if _index_like(a):
        return ("i", repr(a))
    if type(a) in (tuple, list):  # (a parameter holding values: an index of tensors)
        return (type(a), tuple(_token(x) for x in a))
    hash(a)
    return ("p", type(a), repr(a))


def step_values(s):
    """The values step ``s`` reads: its arguments', and those inside its parameters (an
    index made of traced tensors)."""
    for a in s.args:
        if type(a) is Value:
            yield a
    for v in s.params.values():
        if type(v) is Value:
            yield v
        elif type(v) in (tuple, list):
            yield from _nested_values(v)


def _nested_values(v):
    for x in v:
        if type(x) is Value:
            yield x
        elif type(x) in (tuple, list):
            yield from _nested_values(x)


def _renamed(v, rename):
    """Parameter ``v`` with its values renamed."""
    if type(v) is Value:
        return rename.get(v.index, v)
    if type(v) in (tuple, list):
        return type(v)(_renamed(x, rename) for x in v)
    return v


def _index_like(v):
    if type(v) is tuple:
        return all(_index_like(x) for x in v)
    return type(v) in (slice, int, type(None)) or v is Ellipsis


class Program:
    """A traced program: its ``steps`` before and after optimisation (``traced``,
    ``steps``), its inputs and outputs, the generated ``source`` and the trace and build
    times in seconds."""

    def __init__(self, backend, inputs, outputs, out_spec, steps, consts):
        self.backend = backend
        self.inputs = inputs
        self.outputs = outputs
        self.out_spec = out_spec
        self.traced = list(steps)
        self.steps = steps
        self.consts = consts
        self.source = None
        self.run = None
        self.trace_time = 0.0
        self.build_time = 0.0
        # the function read a tensor that a derivative follows but the program cannot (Note
        # [Tensors a derivative follows through a constant] in functional/compiler.py)
        self.reads_live = False

    def __repr__(self):
        return (f"<Program: {len(self.traced)} steps traced, {len(self.steps)} after "
                f"optimisation; trace {self.trace_time * 1e3:.1f} ms, build "
                f"{self.build_time * 1e3:.1f} ms>")


def optimize(program, assume_finite=False):
    """Simplify the program (Note [Program rewrites]): merge steps that compute the same
    thing from the same values (common subexpressions), drop steps that give back one of
    their arguments (:func:`_same_as`), and drop the steps no output needs (dead code).
    Every rewrite keeps every value bit for bit (``assume_finite``: also those exact for
    finite values only)."""
    same = {}
    rename = {}
    made_by = {}
    steps = []
    program.steps = _live(program.steps, program.outputs)  # (dead steps read nothing)
    signless = set()  # values none of whose elements is -0.0 (Note [Program rewrites])
    uses = {}  # value index -> how many steps and outputs read it
    for s in program.steps:
        _count(uses, step_values(s), +1)
    for o in program.outputs:
        if type(o) is Value:
            uses[o.index] = uses.get(o.index, 0) + 1
    for s in program.steps:
        if rename:
            s.args = [rename.get(a.index, a) if type(a) is Value else a for a in s.args]
            if s.params:
                s.params = {k: _renamed(v, rename) for k, v in s.params.items()}
        k = s.key()
        if k is not None:
            first = same.get(k)
            if first is not None:
                _dropped(s, uses, zip(s.outs, first.outs), rename)
                continue
        if program.backend is NUMPY:
            s = _uniform_constants(s, program)
        given = _same_as(s, made_by, assume_finite)
        if given is not None:
            _dropped(s, uses, [(s.outs[0], given)], rename)
            continue
        moved = _onto_constant(s, made_by, uses, program)
        if moved is None:
            moved = _scaled_once(s, made_by, uses, program)
        if moved is None:
            moved = _accumulated(s, made_by, uses, signless)
            if moved is not None:
                signless.add(s.outs[0].index)  # (x + v_k is not -0.0 where x is not)
        if moved is not None:
            _count(uses, step_values(s), -1)
            _count(uses, step_values(moved), +1)
            s = moved
            k = s.key()
        if k is not None:
            same[k] = s
        for o in s.outs:
            made_by[o.index] = s
        if _scatters_onto_zeros(s):
            signless.add(s.outs[0].index)
        steps.append(s)
    program.outputs = [rename.get(o.index, o) if type(o) is Value else o
                       for o in program.outputs]
    if program.backend is NUMPY:
        steps = _fold_identities(steps, program, assume_finite)
    program.steps = _live(steps, program.outputs)
    return program


def _live(steps, outputs):
    """The steps an output needs, and the random draws (dead-code elimination)."""
    live = {o.index for o in outputs if type(o) is Value}
    kept = []
    for s in reversed(steps):
        if s.kind == "random" or any(o.index in live for o in s.outs):
            kept.append(s)
            for a in step_values(s):
                live.add(a.index)
    kept.reverse()
    return kept


def _count(uses, args, by):
    for a in args:
        if type(a) is Value:
            uses[a.index] = uses.get(a.index, 0) + by


def _dropped(s, uses, pairs, rename):
    """Step ``s`` dropped, each of its outputs read as the value paired with it: the reads
    of its arguments go, its outputs' readers read the pairs (``uses`` stays exact)."""
    _count(uses, step_values(s), -1)
    for out, given in pairs:
        rename[out.index] = given
        uses[given.index] = uses.get(given.index, 0) + uses.get(out.index, 0)


# Note [Program rewrites]
# ~~~~~~~~~~~~~~~~~~~~~~~
# A step is dropped for one of its arguments when it gives that argument back, bit for bit.
# Which ops can is derived from their declaration (Note [Op structure] in
# core/ops/registry.py), never from their names, and confirmed by running the op's forward
# once on probe values of the step's dtype (a negative number, both zeros, both infinities,
# NaN: ``_PROBES``), whose results must be the probe bit for bit (the sign of zero included):
#
# * an elementwise multilinear op of two inputs with a constant of ones (``x * 1``);
# * an elementwise signed sum (linear with coefficients) with a constant of zeros (``x - 0``,
#   ``x + (-0.0)``: ``x + 0.0`` turns -0.0 into 0.0, so the probe refuses it);
# * an elementwise linear op of one input applied to its own result (``-(-x)``, conj of
#   conj), where the probe shows it is an involution;
# * a view or shape op that keeps the shape and dtype and gives back random probe values
#   unchanged (a reshape to the same shape, ``x[:]``, an astype to the same dtype).
#
# And an elementwise linear op of one input applied to a product with a constant, the
# product read by it alone, moves onto the constant, computed once when the program is
# built (``-(c * x)`` is ``(-c) * x`` bit for bit): one pass less (``_onto_constant``). A
# sum of a value with no -0.0 in it and a scatter of values onto zeros (a getitem's
# cotangent, ``index_add(0, v)``) is the scatter of those values into the value, where the
# op adds each value once (``_accumulated``): an array and a pass less. A product of a
# real constant ``a`` with ``|a| >= 1`` and a product of a power of two ``2^k`` (k >= 0) with
# ``x``, read by it alone, is one product, ``(a 2^k) * x`` (``_scaled_once``): ``2^k x`` is
# exact, and so is ``a 2^k``; where ``2^k x`` overflows, ``|a| >= 1`` makes ``(a 2^k) x``
# overflow too; zeros keep their signs; a pass less (the gradient of ``100 * u ** 2`` scales
# by 2, then by 100). A constant array whose elements are all one value, bit for bit, in an
# elementwise step whose other inputs give the output its shape, is that value, a 0-d
# array of its dtype (a Python number where one gives the same dtype): the gradient of a
# sum broadcasts ones, folded into such arrays (``_uniform_constants``); the step then reads
# one array less.
#
# The output must have the argument's shape and dtype (``x * ones`` that broadcasts makes a
# new shape). A complex ``x * 1`` gives NaN where x has an infinite part (``inf * 0`` in
# the product), so it is dropped only with ``assume_finite``.
_PROBES = (2.5, -1.75, 0.0, -0.0, float("inf"), float("-inf"), float("nan"))
_PROBED = {}  # (op, dtype, what, constant) -> whether the step gives its argument back


def _onto_constant(s, made_by, uses, program):
    with np.errstate(all="ignore"):  # (the probes hold inf and NaN)
        return _moved_onto_constant(s, made_by, uses, program)


def _moved_onto_constant(s, made_by, uses, program):
    """``g(c * x)`` as ``g(c) * x`` (g computed once, when the program is built), where g is
    a one-input elementwise linear op, the product an elementwise multilinear step with a
    constant ``c`` read by g alone, and the probe shows the two equal bit for bit (a
    negation: -(c * x) is (-c) * x exactly); else None (Note [Program rewrites])."""
    op = s.op
    if s.kind != "op" or op is None or op.kind != "elementwise" or s.params or \
            op.structure.algebra is not Algebra.LINEAR or len(s.args) != 1 or \
            type(s.args[0]) is not Value or len(s.outs) != 1:
        return None
    x = s.args[0]
    m = made_by.get(x.index)
    if m is None or m.op is None or m.kind != "op" or m.params or len(m.args) != 2 or \
            m.op.kind != "elementwise" or m.op.structure.algebra is not Algebra.MULTILINEAR \
            or uses.get(x.index) != 1 or x.shape != s.outs[0].shape or \
            x.dtype != s.outs[0].dtype:
        return None
    k = 0 if type(m.args[1]) is Value else 1
    c, v = m.args[k], m.args[1 - k]
    if type(v) is not Value or type(c) is Value:
        return None
    B = program.backend
    value = _value_of(c)
    # (the constant's values, probed on the host; the fold is made on the program's backend:
    # a host array in a device program would be refused there)
    cv = B.to_numpy(value) if type(value) is B.array_type else np.asarray(value)
    values = np.unique(cv.ravel())
    probe = _probe_values(x.dtype)
    if probe is None or values.size > 64 or cv.dtype.kind not in "biufc":
        return None
    try:
        for u in values:
            u = np.asarray(u, dtype=cv.dtype)
            pair = (u, probe) if k == 0 else (probe, u)
            moved = (op.forward(NUMPY, u), probe) if k == 0 else (probe, op.forward(NUMPY, u))
            if not _bitwise_equal(op.forward(NUMPY, m.op.forward(NUMPY, *pair)),
                                  m.op.forward(NUMPY, *moved)):
                return None
        folded = op.forward(B, value) if type(value) is B.array_type else \
            op.forward(NUMPY, cv)
    except Exception:  # (a probe the forwards refuse: no rewrite)
        return None
    if type(value) in LITERALS and np.ndim(folded) == 0:  # (a Python number stays one)
        folded = type(value)(folded.item())
    program.consts.append(folded)
    const = Const(len(program.consts) - 1, folded)
    args = [const, v] if k == 0 else [v, const]
    return Step("op", m.op, m.fn, m.name, m.with_backend, args, {}, s.outs)


def _uniform_constants(s, program):
    """Step ``s`` with each constant array whose elements are all one value, bit for bit, as
    that value, where ``s`` is elementwise and its other inputs give the output its shape
    (Note [Program rewrites]); else ``s`` itself."""
    op = s.op
    if s.kind != "op" or op is None or op.kind != "elementwise" or s.params or \
            len(s.outs) != 1 or not any(type(a) is Const for a in s.args):
        return s
    o = s.outs[0]
    args = list(s.args)
    for k, a in enumerate(args):
        if type(a) is not Const or type(a.value) is not np.ndarray or a.value.size < 2 or \
                a.value.dtype.kind not in "biufc":
            continue
        others = [x for j, x in enumerate(args) if j != k]
        try:
            shape = np.broadcast_shapes(*[x.shape if type(x) is Value else
                                          np.shape(_value_of(x)) for x in others])
        except ValueError:
            continue
        v = a.value
        flat = np.ascontiguousarray(v).reshape(-1)
        rows = flat.view(np.uint8).reshape(flat.size, flat.itemsize)
        if shape != o.shape or not (rows == rows[0]).all():
            continue
        first = flat[:1].reshape(())
        weak = v.dtype == o.dtype and v.dtype in _WEAK and any(type(x) is Value for x in others) \
            and all(x.dtype == o.dtype for x in others if type(x) is Value) and \
            all(type(x) is Value or type(x) in LITERALS for x in others)
        value = first.item() if weak and _literal(first.item()) is not None else first.copy()
        program.consts.append(value)
        args[k] = Const(len(program.consts) - 1, value)
    if all(x is y for x, y in zip(args, s.args)):
        return s
    return Step("op", op, s.fn, s.name, s.with_backend, args, {}, s.outs)


# (the dtypes a Python number of the same kind gives, next to arrays of that dtype)
_WEAK = (np.dtype(np.float64), np.dtype(np.complex128), np.dtype(np.int64), np.dtype(bool))


def _scalar_of(a, dtype):
    """The real number a constant argument is, where it is one number of a real floating
    ``dtype`` that keeps the step's dtype (a Python number, or a 0-d array of ``dtype``):
    ``(value, python)``; else None."""
    v = _value_of(a)
    if type(v) in (int, float) and type(v) is not bool:
        return float(v), True
    if isinstance(v, (np.ndarray, np.generic)) and np.ndim(v) == 0 and v.dtype == dtype:
        return float(v), False
    return None


def _scaled_once(s, made_by, uses, program):
    """``a * (2^k * x)`` as ``(a 2^k) * x`` where exact (Note [Program rewrites]), else
    None."""
    op = s.op
    o = s.outs[0] if len(s.outs) == 1 else None
    if o is None or s.kind != "op" or op is None or op.kind != "elementwise" or s.params or \
            op.structure.algebra is not Algebra.MULTILINEAR or len(s.args) != 2 or \
            o.dtype.kind != "f" or not _is_product(op, o.dtype):
        return None
    for j in (0, 1):
        y = s.args[1 - j]
        a = _scalar_of(s.args[j], o.dtype)
        m = made_by.get(y.index) if type(y) is Value else None
        if a is None or m is None or m.op is not op or m.params or uses.get(y.index) != 1 or \
                len(m.args) != 2 or y.dtype != o.dtype or y.shape != o.shape:
            continue
        for i in (0, 1):
            x = m.args[1 - i]
            b = _scalar_of(m.args[i], o.dtype)
            if b is None or type(x) is not Value or x.dtype != o.dtype or x.shape != o.shape:
                continue
            mantissa, exponent = np.frexp(b[0])
            if mantissa != 0.5 or exponent < 1 or not abs(a[0]) >= 1:
                continue
            with np.errstate(all="ignore"):
                c = np.multiply(np.asarray(a[0], o.dtype), np.asarray(b[0], o.dtype))
            if not np.isfinite(c) or float(c) / b[0] != a[0]:
                continue
            value = float(c) if a[1] and b[1] else c
            if type(value) is not float:
                program.consts.append(value)
                value = Const(len(program.consts) - 1, value)
            return Step("op", op, s.fn, s.name, s.with_backend, [value, x], {}, s.outs)
    return None


_PRODUCTS = {}


def _is_product(op, dtype):
    """Whether an elementwise multilinear op of two inputs is the product ``x * y`` (its
    forward on probe pairs)."""
    ok = _PRODUCTS.get((op, dtype))
    if ok is None:
        try:
            with np.errstate(all="ignore"):
                x = np.asarray([3.0, -0.5, -0.0, 2.0], dtype)
                y = np.asarray([2.0, 4.0, 1.0, float("inf")], dtype)
                ok = _bitwise_equal(op.forward(NUMPY, x, y), x * y)
        except Exception:  # noqa: BLE001 - a probe the forward refuses: no rewrite
            ok = False
        _PRODUCTS[(op, dtype)] = ok
    return ok


def _zeros_const(c, o):
    """Whether ``c`` is a constant array of +0.0 of ``o``'s shape and dtype."""
    if type(c) is not Const or not isinstance(c.value, np.ndarray):
        return False
    v = c.value
    return v.shape == o.shape and v.dtype == o.dtype and v.dtype.kind in "fc" and \
        not np.any(v) and not np.any(np.signbit(np.real(v)))


def _scatter_op(op):
    """A linear op of two inputs that is not elementwise: the candidates for ``x`` plus a
    scatter of ``values`` (index_add's shape), confirmed per step by ``_adds_into``."""
    return op is not None and op.kind != "elementwise" and op.nin == 2 and \
        op.structure.algebra is Algebra.LINEAR


def _scatters_onto_zeros(s):
    return s.kind == "op" and _scatter_op(s.op) and len(s.outs) == 1 and \
        len(s.args) == 2 and _zeros_const(s.args[0], s.outs[0])


_ADDS_INTO = {}


def _adds_into(s):
    """Whether scatter step ``s`` adds its values into its first input, each element at most
    once: ``L(P, V) == P + L(0, V)`` bit for bit on random P and V, and ``L(0, 1)`` at most
    1 everywhere (no repeated index)."""
    o = s.outs[0]
    v = s.args[1]
    if type(v) is not Value or o.dtype.kind not in "fc":
        return False
    params = {k: _value_of(x) for k, x in s.params.items()}
    if any(True for _ in step_values(s)) and any(
            type(x) is Value for x in params.values()):
        return False
    try:
        key = (s.op, o.shape, o.dtype, v.shape, repr(params))
    except Exception:  # noqa: BLE001 - an unprintable parameter: probe each time
        key = None
    ok = _ADDS_INTO.get(key) if key is not None else None
    if ok is None:
        r = np.random.default_rng(0)
        P = r.normal(size=o.shape).astype(o.dtype)
        V = r.normal(size=v.shape).astype(v.dtype) + 3
        zero = np.zeros(o.shape, o.dtype)
        try:
            with np.errstate(all="ignore"):
                ok = _bitwise_equal(s.op.forward(NUMPY, P, V, **params),
                                    P + s.op.forward(NUMPY, zero, V, **params)) and \
                    bool(np.all(np.real(s.op.forward(NUMPY, zero, np.ones(v.shape, v.dtype),
                                                     **params)) <= 1))
        except Exception:  # noqa: BLE001 - a probe the forward refuses: no rewrite
            ok = False
        if key is not None:
            _ADDS_INTO[key] = ok
    return ok


def _accumulated(s, made_by, uses, signless):
    """``x + L(0, v)`` as ``L(x, v)``: a sum of a value none of whose elements is -0.0 and a
    scatter of ``v`` onto zeros read by this sum alone, where L adds into its first input
    (:func:`_adds_into`): bit for bit, as ``x + (0 + v_k)`` is ``x + v_k`` when x is not -0.0,
    and the sum is not -0.0 either; one array less, and its pass (Note [Program rewrites])."""
    op = s.op
    if s.kind != "op" or op is None or op.kind != "elementwise" or s.params or \
            op.structure.algebra is not Algebra.LINEAR or \
            op.structure.coefficients != (1, 1) or len(s.args) != 2 or len(s.outs) != 1:
        return None
    o = s.outs[0]
    for x, y in ((s.args[0], s.args[1]), (s.args[1], s.args[0])):
        if type(x) is not Value or type(y) is not Value or x.index not in signless or \
                x.shape != o.shape or x.dtype != o.dtype or uses.get(y.index) != 1:
            continue
        m = made_by.get(y.index)
        if m is None or not _scatters_onto_zeros(m) or not _adds_into(m):
            continue
        return Step("op", m.op, m.fn, m.name, m.with_backend, [x, m.args[1]],
                    dict(m.params), (o,))
    return None


def _value_of(a):
    return a.value if type(a) is Const else a


def _bitwise_equal(x, y):
    """The same bits, but for NaN's sign and payload (NaN where NaN is what is kept)."""
    x, y = np.asarray(x), np.asarray(y)
    if x.shape != y.shape or x.dtype != y.dtype:
        return False
    if x.dtype.kind in "fc":
        nx, ny = np.isnan(x), np.isnan(y)
        if not np.array_equal(nx, ny):
            return False
        x, y = x[~nx], y[~ny]
    return x.tobytes() == y.tobytes()


def _probe_values(dtype):
    if dtype.kind == "c":
        base = [complex(a, b) for a in _PROBES for b in (1.5, -0.0)]
    elif dtype.kind == "f":
        base = list(_PROBES)
    else:
        return None
    return np.asarray(base, dtype=dtype)


def _same_as(s, made_by, assume_finite):
    """The argument step ``s`` gives back unchanged, or None (Note [Program rewrites])."""
    with np.errstate(all="ignore"):  # (the probes hold inf and NaN)
        return _same_as_probed(s, made_by, assume_finite)


def _same_as_probed(s, made_by, assume_finite):
    op = s.op
    if s.kind != "op" or op is None or op.nout != 1 or len(s.outs) != 1:
        return None
    out = s.outs[0]
    st = op.structure
    algebra = st.algebra
    nin = len(s.args) if op.nin < 0 else op.nin
    arrays = s.args[:nin]
    values = [a for a in arrays if type(a) is Value]
    if not values or s.params and op.kind == "elementwise":
        return None
    x = values[0]
    if x.shape != out.shape or x.dtype != out.dtype:
        return None
    try:
        if op.kind == "elementwise" and nin == 2 and len(values) == 1 and \
                algebra in (Algebra.MULTILINEAR, Algebra.LINEAR):
            other = arrays[1] if arrays[0] is x else arrays[0]
            c = _value_of(other)
            cv = np.asarray(c)
            if cv.size == 0 or cv.dtype.kind not in "biufc":
                return None
            flat = np.unique(cv.ravel())
            if flat.size != 1:
                return None
            unit = flat[0]
            if algebra is Algebra.MULTILINEAR:
                if unit != 1 or (out.dtype.kind == "c" and not assume_finite):
                    return None
            elif st.coefficients is None or unit != 0:
                return None
            key = (op, out.dtype, "binary", arrays[0] is x, unit.item(),
                   bool(np.signbit(np.real(unit))), cv.dtype)
            ok = _PROBED.get(key)
            if ok is None:
                probe = _probe_values(out.dtype)
                args = (probe, cv.ravel()[:1].reshape(())) if arrays[0] is x else \
                    (cv.ravel()[:1].reshape(()), probe)
                ok = _PROBED[key] = probe is not None and _bitwise_equal(
                    op.forward(NUMPY, *args), probe)
            return x if ok else None
        if op.kind == "elementwise" and nin == 1 and algebra is Algebra.LINEAR and not s.params:
            inner = made_by.get(x.index)
            if inner is None or inner.op is not op or inner.params or \
                    type(inner.args[0]) is not Value:
                return None
            w = inner.args[0]
            if w.shape != out.shape or w.dtype != out.dtype:
                return None
            key = (op, out.dtype, "involution")
            ok = _PROBED.get(key)
            if ok is None:
                probe = _probe_values(out.dtype)
                ok = _PROBED[key] = probe is not None and _bitwise_equal(
                    op.forward(NUMPY, op.forward(NUMPY, probe)), probe)
            return w if ok else None
        if (op.view or op.kind == "shape") and algebra is Algebra.LINEAR and len(values) == 1 and \
                arrays[0] is x:
            if x.dtype.kind not in "biufc":
                return None
            n = 1
            for d in x.shape:
                n *= d
            probe = (np.arange(1, n + 1) * 1.25).astype(x.dtype).reshape(x.shape)
            got = op.forward(NUMPY, probe, *[_value_of(a) for a in s.args[nin:]],
                             **{k: _value_of(v) for k, v in s.params.items()})
            return x if _bitwise_equal(got, probe) else None
    except Exception:  # (a probe the forward refuses: no rewrite)
        return None
    return None


LITERALS = (bool, int, float, complex, str, type(None))


def _literal(v):
    """``repr(v)`` when it evaluates back to ``v`` (Python literals, tuples of them)."""
    if type(v) in LITERALS:
        r = repr(v)
        return None if r in ("nan", "inf", "-inf") or "nan" in r or "inf" in r else r
    if type(v) is tuple:
        parts = [_literal(x) for x in v]
        if None in parts:
            return None
        return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"
    if v is Ellipsis:
        return "..."
    return None


def build(program):
    """Generate the program's source and compile it: ``program.run(*input arrays)`` returns
    the output arrays."""
    start = time.perf_counter()
    B = program.backend
    names = {}  # callable -> name in the program's globals
    glob = {"K": program.consts, "B": B, "asarray": B.asarray, "sample": _sample}
    lines = []

    def fname(fn, base):
        n = names.get(fn)
        if n is None:
            n = base
            k = 1
            while n in glob or n in ("K", "B"):
                k += 1
                n = f"{base}_{k}"
            names[fn] = n
            glob[n] = fn
        return n

    def ref(a):
        if type(a) is Value:
            return f"v{a.index}"
        if type(a) is Const:
            lit = _literal(a.value)
            return lit if lit is not None else f"K[{a.index}]"
        lit = _literal(a)
        return lit if lit is not None else _param(a, program)

    def pref(v):
        """A parameter: values inside it by name (an index of traced tensors)."""
        if type(v) in (tuple, list) and any(True for _ in _nested_values(v)):
            inner = ", ".join(pref(x) for x in v)
            return f"({inner},)" if type(v) is tuple else f"[{inner}]"
        if type(v) is Value or type(v) is Const:
            return ref(v)
        return ref(v) if _literal(v) is not None else _param(v, program)

    fusion = B.elementwise_fusion()
    groups = _fusion_groups(program, fusion[1]) if fusion is not None else {}
    # (a lazy backend's arrays are graphs, not memory: Note [Buffers of a program]; a
    # fused kernel's values inside it have none: Note [Fused kernels])
    buffers = {} if getattr(B, "deferred_gradients", False) or fusion is not None else \
        _buffers(program)
    kernels = []
    for start, (stop, ins, outs) in groups.items():
        name = f"fused_{len(kernels) + 1}"
        params = [f"k{v[2:-1]}" if v.startswith("K[") else v for v in ins]
        body = [f"def {name}({', '.join(params)}):"]
        for s in program.steps[start:stop]:
            fn = fname(s.fn, s.name)
            args = [f"k{a.index}" if type(a) is Const and _literal(a.value) is None else ref(a)
                    for a in s.args]
            body.append(f"    v{s.outs[0].index} = {fn}({', '.join(args)})")
        body.append(f"    return ({', '.join(f'v{v}' for v in outs)},)")
        kernels.append((name, "\n".join(body) + "\n"))
    ins = ", ".join(f"v{v.index}" for v in program.inputs)
    lines.append(f"def program({ins}):")
    k = 0
    skip = 0
    for i, s in enumerate(program.steps):
        if i < skip:
            continue
        group = groups.get(i)
        if group is not None:
            stop, g_ins, g_outs = group
            k += 1
            lines.append(f"    {', '.join(f'v{v}' for v in g_outs)}, = fused_{k}("
                         f"{', '.join(g_ins)})")
            skip = stop
            continue
        outs = ", ".join(f"v{o.index}" for o in s.outs) + ("," if len(s.outs) == 1 and
                                                          s.op is not None and s.op.nout != 1
                                                          else "")
        if s.kind == "random":
            call = f"sample({', '.join(ref(a) for a in s.args)})"
        else:
            fn = fname(s.fn, s.name)
            args = [ref(a) for a in s.args]
            if s.with_backend:
                args.insert(0, "B")
            args += [f"{k}={pref(v)}" for k, v in s.params.items()]
            if i in buffers and _writes_into_first(s):  # (Note [Buffers of a program])
                fn = fname(s.op.into, f"{s.name}_into")
                o = s.outs[0]
                args[1] = f"v{buffers[i]}" if buffers[i] != INTO_ZEROS else \
                    f"B.zeros({o.shape!r}, dtype={_param(o.dtype, program)})"
            elif i in buffers:
                args.append(f"out=v{buffers[i]}")
            call = f"{fn}({', '.join(args)})"
        single = s.op is None or s.op.nout == 1  # (else the call returns a tuple)
        if s.scalar and single and i not in buffers:
            call = f"asarray({call})"
        lines.append(f"    {outs} = {call}")
        if s.scalar and not single:
            lines += [f"    v{o.index} = asarray(v{o.index})" for o in s.outs]
    # (a constant array returned is copied: the caller may change it, the program keeps it)
    rets = [f"K[{o.index}].copy()" if type(o) is Const and _literal(o.value) is None and
            hasattr(o.value, "copy") else ref(o) for o in program.outputs]
    lines.append(f"    return ({', '.join(rets)}{',' if len(rets) == 1 else ''})")
    source = "\n".join(lines) + "\n"
    namespace = dict(glob)
    for name, text in kernels:  # (Note [Fused kernels])
        exec(builtins.compile(text, f"<ndgrad fused kernel {name}>", "exec"),  # noqa: S102
             namespace)
        namespace[name] = glob[name] = _Fused(fusion[0](namespace[name], f"ndgrad_{name}"),
                                              namespace[name])
    exec(builtins.compile(source, "<ndgrad compiled program>", "exec"), namespace)  # noqa: S102
    source = "".join(text + "\n" for _, text in kernels) + source
    program.source = source
    program.globals = glob
    program.run = namespace["program"]
    program.build_time = time.perf_counter() - start
    return program


# Note [Identity folding]
# ~~~~~~~~~~~~~~~~~~~~~~~
# Jacobians and Hessians are computed against an identity basis (vmap of a vjp or a jvp
# over the rows of ``eye(n)``), so their programs multiply the identity by a vector, ``I *
# v`` (n^2 products for n values), and add such products and constant matrices. Such a
# value is kept as a constant matrix ``C`` (off the diagonal) and a vector ``d`` (the
# diagonal), made at run time by n-element steps only:
#
# * ``I * v`` (an elementwise multilinear step of two inputs whose constant is ``eye(n)``,
#   ``v`` a vector, column or row of n values of the output's dtype): C = 0, d = v;
# * a sum with coefficients (1, 1) of such a value and a constant matrix K: C + K, computed
#   once, when the program is built, and d + diag(K), a step;
# * a sum of two such values: C1 + C2 (built) and d1 + d2 (a step);
# * a sum of such a value and a dense value Y of the program: Y + C then its diagonal set
#   to diag(Y) + d (one pass over Y: ``add_structured``);
# * any other use (and an output) makes the matrix: C with its diagonal set to d
#   (``materialize``), where it is first needed.
#
# Each element is computed as eager ndgrad computes it, in the same order: the diagonal by
# the same n-element additions, and off the diagonal ``0 * v_j + K_ij``, which is K_ij
# whatever the sign of that zero, unless K_ij is -0.0: such a fold is made only where the
# sign cannot show (C already made, or K without -0.0) and is refused otherwise (the
# original steps stay). ``0 * v_j`` is NaN where v_j is infinite or NaN: the steps that make
# a matrix set the row or column of such an element to NaN off the diagonal (a check of n
# values per call, and a write only when one is not finite). So the program's values are
# eager's; ``assume_finite`` also folds where the sign of a zero could differ, and skips
# the checks. NumPy programs only.
def _materialize(c, d, dtype, *bad):
    n = d.size
    out = np.array(c, dtype=dtype) if c is not None else np.zeros((n, n), dtype)
    _poison(out, bad)
    out.flat[::n + 1] = d.ravel()
    return out


def _add_structured(y, c, d, *bad, out=None):
    diagonal = y.flat[::y.shape[0] + 1] + d.ravel()  # (eager's order: y_ii + d_i)
    if c is None:
        out = y.copy() if out is None else _into(out, y)
    else:
        out = np.add(y, c, out=out)
    _poison(out, bad)
    out.flat[::out.shape[0] + 1] = diagonal
    return out


def _poison(out, bad):
    """NaN in the rows or columns of ``out`` whose ``0 * v`` factor is not finite
    (``bad``: pairs of a vector and the axis it runs along)."""
    for k in range(0, len(bad), 2):
        v, axis = bad[k], bad[k + 1]
        finite = np.isfinite(v.ravel())
        if not finite.all():
            if axis == 1:
                out[:, ~finite] = np.nan
            else:
                out[~finite, :] = np.nan


def _into(out, y):
    out[...] = y
    return out


_add_structured.takes_out = True


def _is_identity(c, n):
    c = np.asarray(c)
    return c.shape == (n, n) and c.dtype.kind in "biuf" and np.array_equal(c, np.eye(n))


def _has_negative_zero(k):
    return k.dtype.kind in "fc" and bool(np.any((k == 0) & np.signbit(np.real(k))))


def _fold_identities(steps, program, assume_finite):
    """Identity folding (Note [Identity folding])."""
    consts = program.consts

    def const(v):
        consts.append(v)
        return Const(len(consts) - 1, v)

    struct = {}  # value index -> (C or None, d: a Value of n elements, bad, its step)
    out_steps = []
    made = set()
    fresh = itertools_count(1 + max([o.index for st in steps for o in st.outs] +
                                    [v.index for v in program.inputs] + [0]))

    def materialize(x):
        if x.index in made:
            return
        made.add(x.index)
        c, d, bad, step = struct[x.index]
        if c is None and not assume_finite:
            out_steps.append(step)  # (I * v itself: its zeros' signs are eager's)
            return
        out_steps.append(Step("op", None, _materialize, "materialize", False,
                              [const(c), d, const(x.dtype), *bad], {}, (x,)))

    for s in steps:
        op = s.op
        if s.kind == "op" and op is not None and op.kind == "elementwise" and not s.params \
                and len(s.args) == 2 and len(s.outs) == 1 and len(s.outs[0].shape) == 2 and \
                s.outs[0].shape[0] == s.outs[0].shape[1]:
            o = s.outs[0]
            n = o.shape[0]
            a, b = s.args
            algebra = op.structure.algebra
            if algebra is Algebra.MULTILINEAR:
                c, v = (a, b) if type(b) is Value else (b, a)
                if type(v) is Value and type(c) is not Value and v.dtype == o.dtype and \
                        v.shape in ((n,), (n, 1), (1, n)) and _is_identity(_value_of(c), n):
                    bad = () if assume_finite else (v, 0 if v.shape == (n, 1) else 1)
                    struct[o.index] = (None, v, bad, s)
                    continue
            elif algebra is Algebra.LINEAR and op.structure.coefficients == (1, 1):
                sa = type(a) is Value and a.index in struct and a.index not in made
                sb = type(b) is Value and b.index in struct and b.index not in made
                if sa or sb:
                    x, y = (a, b) if sa else (b, a)
                    cx, dx, badx, _ = struct[x.index]
                    if sa and sb:
                        cy, dy, bady, _ = struct[y.index]
                        if assume_finite or cx is not None or cy is not None and \
                                not _has_negative_zero(cy):
                            c = cx if cy is None else cy if cx is None else cx + cy
                            d = Value(next(fresh), (n,), o.dtype)
                            out_steps.append(Step("op", None, np.add, "add", False,
                                                  [dx, dy], {}, (d,)))
                            struct[o.index] = (c, d, badx + bady, None)
                            continue
                    elif type(y) is not Value and isinstance(_value_of(y), np.ndarray) and \
                            _value_of(y).shape == o.shape and _value_of(y).dtype == o.dtype:
                        k = _value_of(y)
                        if assume_finite or cx is not None or not _has_negative_zero(k):
                            c = k.copy() if cx is None else cx + k
                            d = Value(next(fresh), (n,), o.dtype)
                            out_steps.append(Step(
                                "op", None, np.add, "add", False,
                                [dx, const(np.ascontiguousarray(k.diagonal()))], {}, (d,)))
                            struct[o.index] = (c, d, badx, None)
                            continue
                    elif type(y) is Value and y.shape == o.shape and y.dtype == o.dtype and \
                            (assume_finite or cx is not None):
                        if y.index in struct:
                            materialize(y)
                        out_steps.append(Step("op", None, _add_structured, "add_structured",
                                              False, [y, const(cx), dx, *badx], {}, (o,)))
                        continue
        for arg in s.args:
            if type(arg) is Value and arg.index in struct:
                materialize(arg)
        out_steps.append(s)
    for o in program.outputs:
        if type(o) is Value and o.index in struct:
            materialize(o)
    return out_steps


# Note [Buffers of a program]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A step that calls a ufunc (a forward handed on to the backend's ufunc, with no parameters:
# Note [Forwards that hand their arguments on] in core/ops/registry.py) writes its result
# into the memory of a value no later step reads (``out=``), when one has its shape and
# dtype: first an argument read for the last time by this very step (a ufunc may write over
# an input of the output's shape: it reads each element before it writes it; not a complex
# one, whose product NumPy rounds differently in place, by an ulp: ``a *= c`` for one
# element), else one freed earlier. Only memory the program made itself is reused: a ufunc's
# result or a random draw; never an input (the caller's), a constant, or memory a returned
# value may share (the caller keeps what it receives). Any other step's result may be a view
# of its arguments (a reshape, basic indexing, a forward that returns its input), so it
# keeps the memory of the values it was computed from alive for as long as it is read; but
# for an op whose forward copies its first input and writes into the copy (a scatter,
# ``index_add``: Note [Forwards that write into their first input] in core/ops/registry.py),
# whose result is memory the program made. Such a step whose first input is memory the
# program made and reads for the last time there writes into it (the op's ``into``
# forward: no copy, one pass over the array less); one whose first input is a constant of
# zeros writes into fresh zeros (no read of the constant). Each call allocates its own
# buffers, so a compiled function is reentrant. A lazy backend's arrays (Dask's: a backend
# with ``deferred_gradients``) are graphs, not memory: none is reused.
def _writes_into_first(s):
    """A step whose op's forward copies its first input and writes into the copy, and
    declares the forward without the copy (Note [Buffers of a program])."""
    return s.kind == "op" and s.with_backend and s.op is not None and \
        s.op.into is not None and s.fn is s.op.forward and len(s.outs) == 1


INTO_ZEROS = -1  # (a step that writes into fresh zeros: ``_buffers``)


def _is_ufunc(fn):
    """A ufunc, or one of the program's own functions that takes ``out=`` as one does."""
    return getattr(fn, "takes_out", False) or (
        hasattr(fn, "nout") and hasattr(fn, "reduce") and hasattr(fn, "types"))


# Note [Fused kernels]
# ~~~~~~~~~~~~~~~~~~~~
# On a backend that fuses elementwise functions into one kernel (``elementwise_fusion``:
# CuPy's ``cupy.fuse`` over its ufuncs), each run of two or more consecutive steps that
# call a fusable function (a ufunc, with no parameter, one output that is no 0-d scalar)
# becomes one function of the program, ``fused_k``, made one kernel: it takes the values
# the run reads from before it, and returns those of its values that a later step or the
# caller reads; the others never reach memory. Its body is the steps' own lines, so
# ``compiled.source`` shows what each kernel computes. A run of elementwise ops on the GPU
# is bound by memory traffic and launches, which this removes (one read of each input and
# one write of each result per chain). Such a program reuses no buffers (``out=``): the
# device's memory pool gives fresh memory cheaply, and a fused value has no memory to
# reuse. A kernel that the backend fails to build or run on its first call (a function
# its fusion does not support) runs as its steps from then on (``_Fused``), so fusion
# never changes what a program can compute; its values are the steps' to rounding (a
# fused kernel may contract a multiply and an add into one rounding).
class _Fused:
    """A fused kernel (Note [Fused kernels]), or its steps where the kernel fails."""

    __slots__ = ("kernel", "steps")

    def __init__(self, kernel, steps):
        self.kernel = kernel
        self.steps = steps

    def __call__(self, *args):
        try:
            return self.kernel(*args)
        except Exception:  # noqa: BLE001 - the backend's fusion refused this kernel
            if self.kernel is self.steps:
                raise
            self.kernel = self.steps
            return self.steps(*args)


def _fusion_groups(program, fusable):
    """``{first step: (stop, inputs, output value indices)}``: the runs of two or more
    consecutive fusable steps (Note [Fused kernels]); the inputs are the names the program
    gives them (``v3``, a constant array's ``K[1]``)."""
    steps = program.steps

    def ok(s):
        return s.kind == "op" and not s.with_backend and not s.params and \
            len(s.outs) == 1 and not s.scalar and s.op is not None and s.op.nout == 1 and \
            fusable(s.fn)

    last_read = {}  # value index -> the last step reading it (len(steps): the caller)
    for i, s in enumerate(steps):
        for a in step_values(s):
            last_read[a.index] = i
    for o in program.outputs:
        if type(o) is Value:
            last_read[o.index] = len(steps)
    groups = {}
    i = 0
    while i < len(steps):
        if not ok(steps[i]):
            i += 1
            continue
        stop = i
        while stop < len(steps) and ok(steps[stop]):
            stop += 1
        if stop - i >= 2:
            made, ins, outs = set(), [], []
            for s in steps[i:stop]:
                for a in s.args:
                    if type(a) is Value and a.index not in made and f"v{a.index}" not in ins:
                        ins.append(f"v{a.index}")
                    elif type(a) is Const and _literal(a.value) is None and \
                            f"K[{a.index}]" not in ins:
                        ins.append(f"K[{a.index}]")  # (a kernel reads arrays as arguments)
                made.add(s.outs[0].index)
            outs = [s.outs[0].index for s in steps[i:stop]
                    if last_read.get(s.outs[0].index, -1) >= stop]
            if outs:
                groups[i] = (stop, ins, outs)
        i = stop
    return groups


def _buffers(program):
    """``{step index: value index}``: the steps that write into a dead value's memory
    (Note [Buffers of a program])."""
    steps = program.steps
    values = {}
    owned = {}  # value index -> the program-made memories it may share (value indices)
    fresh = set()
    for s in steps:
        for o in s.outs:
            values[o.index] = o
        if s.kind == "random" or (s.kind == "op" and not s.with_backend and _is_ufunc(s.fn)
                                  and len(s.outs) == 1) or _writes_into_first(s):
            o = s.outs[0]
            owned[o.index] = {o.index}
            fresh.add(o.index)
        else:
            shared = set()
            for a in step_values(s):
                shared |= owned.get(a.index, set())
            for o in s.outs:
                owned[o.index] = shared
    dies = {}  # memory (value index) -> the last step reading a value that shares it
    for i, s in enumerate(steps):
        for a in step_values(s):
            for m in owned.get(a.index, ()):
                dies[m] = i
    for o in program.outputs:
        if type(o) is Value:
            for m in owned.get(o.index, ()):
                fresh.discard(m)  # (the caller receives it)
    released = sorted((d, m) for m, d in dies.items() if m in fresh)
    taken = set()
    free = {}  # (shape, dtype) -> memories no later step reads
    chosen = {}
    r = 0
    for i, s in enumerate(steps):
        while r < len(released) and released[r][0] < i:
            m = released[r][1]
            r += 1
            if m not in taken:
                free.setdefault((values[m].shape, values[m].dtype), []).append(m)
        if _writes_into_first(s):
            o, a = s.outs[0], s.args[0]
            if type(a) is Value and a.index in fresh and dies.get(a.index) == i and \
                    a.index not in taken and a.shape == o.shape and a.dtype == o.dtype and \
                    not any(b is not a and a.index in owned.get(b.index, ())
                            for b in step_values(s)):
                taken.add(a.index)
                chosen[i] = a.index
            elif _zeros_const(a, o):
                chosen[i] = INTO_ZEROS
            continue
        if not (s.kind == "op" and not s.with_backend and not s.params and
                _is_ufunc(s.fn) and len(s.outs) == 1):
            continue
        o = s.outs[0]
        pick = None
        for a in s.args:
            if o.dtype.kind == "c":
                break  # (NumPy's complex loops round otherwise when out= is an input)
            if type(a) is Value and a.index in fresh and dies.get(a.index) == i and \
                    a.index not in taken and a.shape == o.shape and a.dtype == o.dtype and \
                    not any(type(b) is Value and b is not a and a.index in
                            owned.get(b.index, ()) for b in s.args):
                pick = a.index
                break
        if pick is None:
            pool = free.get((o.shape, o.dtype))
            if pool:
                pick = pool.pop()
        if pick is not None:
            taken.add(pick)
            chosen[i] = pick
    return chosen


def _param(v, program):
    lit = _literal(v)
    if lit is not None:
        return lit
    program.consts.append(v)
    return f"K[{len(program.consts) - 1}]"


# Note [Standalone programs]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~
# ``compiled.source(*args, standalone=True)`` is the program as a Python module that needs
# NumPy only (and Python's standard library): a step whose op hands its arguments to a NumPy
# function calls ``numpy.<name>``; a step that calls an op's forward carries the forward's
# own source (its docstring and decorators dropped), with ``B`` bound to the ``numpy``
# module, and the source of what it reads of ndgrad's: its helpers, the NumPy backend's
# methods that are plain Python, the literal constants they read, each once, the backend's
# flags written as their values and the branches the NumPy backend never takes left out
# (Note [Copied helpers] in functional/standalone.py). The module runs the code eager
# ndgrad runs: its values are the compiled program's, bit for bit. The program's constants
# are written out exactly (their bytes). A program that cannot be made so (a random draw,
# which runs on ndgrad's generator; identity folding's own steps; a forward that reads a
# class of ndgrad's; the CuPy or Dask backend) raises a ValueError naming the step and
# what it uses. A forward of SciPy's functions (the special functions, triangular solves)
# imports SciPy's module: such a program needs NumPy and SciPy, as ndgrad does.
def standalone_source(program, name="program"):
    """The program as a module that imports NumPy (and SciPy where its forwards call
    SciPy's functions) only (Note [Standalone programs])."""
    if program.backend is not NUMPY:
        raise ValueError("standalone=True: only a NumPy program can be made standalone")
    consts = []

    def const(v):
        lit = _literal(v)
        if lit is not None:
            return lit
        if isinstance(v, np.ndarray) or isinstance(v, np.generic):
            a = np.asarray(v)
            # (the memory layout kept: a transposed operand takes another BLAS path)
            fortran = a.ndim > 1 and a.flags.f_contiguous and not a.flags.c_contiguous
            data = (a.T if fortran else a).tobytes()
            shape = a.shape[::-1] if fortran else a.shape
            consts.append(f"numpy.frombuffer(bytes.fromhex('{data.hex()}'), "
                          f"dtype={str(a.dtype)!r}).reshape({shape!r})"
                          + ("[()]" if isinstance(v, np.generic) else
                             ".copy().T" if fortran else ".copy()"))
            return f"_K[{len(consts) - 1}]"
        if isinstance(v, np.dtype):
            return f"numpy.dtype({str(v)!r})"
        if isinstance(v, slice):
            return f"slice({const(v.start)}, {const(v.stop)}, {const(v.step)})"
        if type(v) is tuple:
            return "(" + "".join(const(x) + ", " for x in v) + ")"
        if type(v) is list:  # (a new list on each call)
            return "[" + ", ".join(const(x) for x in v) + "]"
        raise ValueError(f"standalone=True: a constant of type {type(v).__name__} "
                         "cannot be written out")

    def ref(a):
        if type(a) is Value:
            return f"v{a.index}"
        if type(a) in (tuple, list) and any(True for _ in _nested_values(a)):
            inner = ", ".join(ref(x) for x in a)
            return f"({inner},)" if type(a) is tuple else f"[{inner}]"
        return const(_value_of(a))

    copied = CopiedSource()
    calls = []  # (step, the copy of its forward or None, its call after the callee)
    for s in program.steps:
        where = s.op.qualname if s.op is not None else s.name
        if s.kind == "random":
            raise ValueError(f"standalone=True: the program draws random numbers (step "
                             f"{s.outs[0]!r}), on ndgrad's generator")
        if s.op is None or s.kind != "op":
            raise ValueError(f"standalone=True: the step {where} is ndgrad's own (identity "
                             "folding: compile without assume_finite, or it folded an "
                             "identity of a Hessian)")
        args = [ref(a) for a in s.args]
        kw = [f"{k}={ref(v)}" for k, v in s.params.items()]
        if s.with_backend:
            forward, call = copied.forward(s.op), f"(numpy, {', '.join(args + kw)})"
        else:
            n = getattr(s.fn, "__name__", None)
            if n is None or getattr(np, n, None) is not s.fn:
                raise ValueError(f"standalone=True: the step {where} calls {s.fn!r}, which "
                                 "is not one of NumPy's functions")
            forward, call = None, f"numpy.{n}({', '.join(args + kw)})"
        calls.append((s, forward, call))
    copied.finish({name, "_K"})
    lines = []
    for s, forward, call in calls:
        call = call if forward is None else forward.name + call
        single = s.op.nout == 1
        outs = ", ".join(f"v{o.index}" for o in s.outs) + ("" if single else ",")
        made = f"numpy.asarray({call})" if s.scalar and single else call
        lines.append(f"    {outs} = {made}")
        if s.scalar and not single:
            lines += [f"    v{o.index} = numpy.asarray(v{o.index})" for o in s.outs]
    rets = [ref(o) + (".copy()" if type(o) is Const and isinstance(o.value, np.ndarray)
                      else "") for o in program.outputs]
    needs = "NumPy and SciPy" if copied.imports_scipy() else "NumPy only"
    body = [f"def {name}({', '.join(f'v{v.index}' for v in program.inputs)}):",
            f'    """Generated by ndgrad.func.compile; needs {needs}."""'] + lines + [
        f"    return ({', '.join(rets)}{',' if len(rets) == 1 else ''})"]
    head = copied.head(["_K = [", *[f"    {c}," for c in consts], "]"] if consts else [])
    return "\n".join(head + [""] + body) + "\n"
