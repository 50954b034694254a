"""The straight-line programs ``ndgrad.func.compile`` makes (Note [Compiled programs] in
functional/compiler.py): their values, constants and steps, the optimiser, and the Python
source a program is run as.
"""

from __future__ import annotations

import builtins
import time

from ..core.creation import sample as _sample

__all__ = ["Value", "Const", "Step", "Program", "optimize", "build", "LITERALS"]

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
            parts = tuple(("v", a.index) if type(a) is Value else
                          ("k", id(a.value)) if type(a) is Const else ("p", a)
                          for a in self.args)
            params = tuple(sorted((k, ("k", id(v.value)) if type(v) is Const else v)
                                  for k, v in self.params.items()))
            key = (self.kind, self.fn, self.with_backend, parts, params, len(self.outs))
            hash(key)
        except TypeError:
            return None
        return key


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

    def __repr__(self):
        return (f"<Program: {len(self.traced)} steps traced, {len(self.steps)} after "
                f"optimisation; trace {self.trace_time * 1e3:.1f} ms, build "
                f"{self.build_time * 1e3:.1f} ms>")


def optimize(program):
    """Drop the steps no output needs and merge steps that compute the same thing from the
    same values (dead-code and common-subexpression elimination); both keep every value
    bit for bit."""
    same = {}
    rename = {}
    steps = []
    for s in program.steps:
        if rename:
            s.args = [rename.get(a.index, a) if type(a) is Value else a for a in s.args]
        k = s.key()
        if k is not None:
            first = same.get(k)
            if first is not None:
                for a, b in zip(s.outs, first.outs):
                    rename[a.index] = b
                continue
            same[k] = s
        steps.append(s)
    program.outputs = [rename.get(o.index, o) if type(o) is Value else o
                       for o in program.outputs]
    live = {o.index for o in program.outputs if type(o) is Value}
    kept = []
    for s in reversed(steps):
        if s.kind == "random" or any(o.index in live for o in s.outs):
            kept.append(s)
            for a in s.args:
                if type(a) is Value:
                    live.add(a.index)
    kept.reverse()
    program.steps = kept
    return program


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

    ins = ", ".join(f"v{v.index}" for v in program.inputs)
    lines.append(f"def program({ins}):")
    for s in program.steps:
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
            args += [f"{k}={ref(v) if type(v) is Const else _param(v, program)}"
                     for k, v in s.params.items()]
            call = f"{fn}({', '.join(args)})"
        if s.scalar and len(s.outs) == 1:
            call = f"asarray({call})"
        lines.append(f"    {outs} = {call}")
        if s.scalar and len(s.outs) > 1:
            lines += [f"    v{o.index} = asarray(v{o.index})" for o in s.outs]
    # (a constant array returned is copied: the caller may change it, the program keeps it)
    rets = [f"K[{o.index}].copy()" if type(o) is Const and _literal(o.value) is None and
            hasattr(o.value, "copy") else ref(o) for o in program.outputs]
    lines.append(f"    return ({', '.join(rets)}{',' if len(rets) == 1 else ''})")
    source = "\n".join(lines) + "\n"
    namespace = dict(glob)
    exec(builtins.compile(source, "<ndgrad compiled program>", "exec"), namespace)  # noqa: S102
    program.source = source
    program.globals = glob
    program.run = namespace["program"]
    program.build_time = time.perf_counter() - start
    return program


def _param(v, program):
    lit = _literal(v)
    if lit is not None:
        return lit
    program.consts.append(v)
    return f"K[{len(program.consts) - 1}]"
