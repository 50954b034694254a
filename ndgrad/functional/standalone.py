"""The code a standalone program copies out of ndgrad (Note [Standalone programs] in
functional/program.py): an op's forward and the helpers it calls, rewritten as code of
NumPy's, with the NumPy backend's values and the constants they read written out.
"""

from __future__ import annotations

import ast
import builtins
import functools
import inspect
import sys
import textwrap
import types

import numpy as np

from ..core.backend import NUMPY, _OnFirstUse

_MISSING = object()
_SCALARS = (bool, int, float, complex, str, bytes, type(None))


# Note [Copied helpers]
# ~~~~~~~~~~~~~~~~~~~~~
# A copied function (a forward, a helper it calls, a method of the NumPy backend's) reads,
# besides its locals and builtins, only what can be written into the module as the same
# object or an equal value, read when the module is made:
#   * the backend (the forward's first parameter, and a helper's or the backend method's
#     parameter that every call of it passes the backend to): bound to the ``numpy`` module.
#     ``B.<name>`` stays where it is NumPy's own object of that name, and where neither the
#     NumPy backend nor NumPy has one (it raises AttributeError on the same path); a flag
#     (``B.adds_in_place``) is written as its literal; a NumPy object under another name
#     (``B.array_type``) as ``numpy.<its name>``; a method of the NumPy backend's that is
#     plain Python (``B.assign``) is copied, its ``self`` the backend. ``getattr(B, "x")``
#     with a constant name is ``B.x``. The backend goes nowhere else (it is not a value:
#     passed to a function not copied, stored, returned, it raises).
#   * a global or closure variable: NumPy, or one of its objects (``numpy.<name>``); a plain
#     function of ndgrad's (copied the same way, each once); a literal (scalars, tuples and
#     frozensets of them, and a dict of them its module never changes in place: one
#     module-level constant); a module or function of Python's
#     standard library (imported).
# The backend's SciPy namespaces (``B.special``, ``B.scipy_linalg``: SciPy's modules,
# imported on first use) are those modules, imported by the program (``import
# scipy.special as special``): a program of SciPy's functions needs SciPy, as ndgrad does.
# ``isinstance(x, C)`` with ``C`` a class of ndgrad's is False: a standalone program's
# values are arrays and numbers, never ndgrad's objects (``_stop``'s ``x.detach() if
# isinstance(x, Tensor) else x`` is ``x``). Anything else (a class of ndgrad's read
# otherwise, a dict its module changes, a closure over one, the backend's own generator)
# raises a ValueError naming the op, the helper and the name. The names the module gives
# what it copies clash with no builtin, no reserved name and no local of any copied
# function.
class CopiedSource:
    """What a standalone module copies for its forwards: ``forward(op)`` adds an op's
    forward (and what it reads), ``finish(reserved)`` names everything, ``head()`` is the
    module's text above the program."""

    def __init__(self):
        self._copies = {}     # function -> _Copy (a backend method: its function)
        self._done = []       # the copies in the order they are finished (callees first)
        self._forwards = {}   # op -> _Copy
        self._constants = {}  # (id of the namespace, name) -> _Named
        self._imports = {}    # id of the module or function -> _Named
        self._numpy_names = None

    def forward(self, op):
        """The copy of ``op``'s forward (its ``name`` once :meth:`finish` has run)."""
        c = self._forwards.get(op)
        if c is None:
            where = _Where(f"the forward of {op.qualname}")
            node = _function_node(op.forward, where, forward=True)
            if not node.args.args:
                raise ValueError(f"standalone=True: {where} takes no backend")
            backend = frozenset({node.args.args[0].arg})
            c = self._forwards[op] = self._known(op.forward, backend, where) or self._copy(
                op.forward, node, backend, where, f"_{_safe(op.name)}_{len(self._forwards)}")
        return c

    def finish(self, reserved):
        """Give every copy, constant and import its module-level name."""
        taken = set(reserved) | set(dir(builtins)) | {"numpy"}
        for c in self._done:
            if "numpy" in c.locals:
                raise ValueError(f"standalone=True: {c.where} has a local named numpy")
            taken |= c.locals
        for named in [*self._imports.values(), *self._constants.values(),
                      *(c.named for c in self._done)]:
            named.give_name(taken)
        for c in self._done:
            c.node.name = c.named.name

    def head(self, program_constants):
        """The module's lines above the program: the imports, the lines
        ``program_constants``, the copied constants, helpers and forwards."""
        lines = ["import numpy", *(k.text for k in self._imports.values()), ""]
        if program_constants:
            lines += [*program_constants, ""]
        if self._constants:
            lines += [f"{k.name} = {k.text}" for k in self._constants.values()] + [""]
        forwards = {id(c) for c in self._forwards.values()}
        for c in sorted(self._done, key=lambda c: id(c) in forwards):
            lines += [ast.unparse(c.node), ""]
        return lines

    # -- what the copies read
    def _copy(self, fn, node, backend, where, base, drop_self=False):
        c = self._copies[fn] = _Copy(node, frozenset(backend), where, base)
        c.locals = _locals(node, where)
        if drop_self:  # (a backend method: ``self`` is the numpy module there)
            node.args.posonlyargs, node.args.args = \
                (node.args.posonlyargs[1:], node.args.args) if node.args.posonlyargs else \
                ([], node.args.args[1:])
        _Rewrite(self, fn, c, drop_self).visit(node)
        ast.fix_missing_locations(node)
        self._done.append(c)
        return c

    def _known(self, fn, backend, where):
        c = self._copies.get(fn)
        if c is not None and c.backend != backend:
            raise ValueError(f"standalone=True: {where} passes the backend to "
                             f"{fn.__name__} in another place than elsewhere")
        return c

    def helper(self, fn, backend, where):
        """The copy of helper ``fn`` (a plain function of ndgrad's) whose parameters in
        ``backend`` the backend is passed to."""
        c = self._known(fn, backend, where)
        if c is None:
            inner = where.through(f"{fn.__module__}.{fn.__name__}")
            node = _function_node(fn, inner)
            c = self._copy(fn, node, backend, inner, node.name)
        return c

    def method(self, bound, backend, where):
        """The copy of the NumPy backend's method ``bound`` (its ``self``: the backend)."""
        fn = bound.__func__
        backend = backend | {fn.__code__.co_varnames[0]}  # (self)
        c = self._known(fn, backend, where)
        if c is None:
            inner = where.through(f"the NumPy backend's {fn.__name__}")
            c = self._copy(fn, _function_node(fn, inner), backend, inner,
                           f"_backend_{fn.__name__}", drop_self=True)
        return c

    def constant(self, namespace, name, text):
        """The module-level constant of global or closure variable ``name``."""
        key = (id(namespace), name)
        k = self._constants.get(key)
        if k is None:
            k = self._constants[key] = _Named(name, text)
        return k

    def imports_scipy(self):
        """Whether the module imports one of SciPy's modules."""
        return any(getattr(k.value, "__name__", "").startswith("scipy.")
                   for k in self._imports.values())

    def stdlib(self, value):
        """The import of a module or function of Python's standard library (or one of
        SciPy's modules)."""
        k = self._imports.get(id(value))
        if k is None:
            k = self._imports[id(value)] = _Import(value)
        return k

    def numpy_name(self, value):
        """``value``'s name in NumPy (``numpy.<name>``, ``numpy.linalg.<name>``), or None."""
        n = getattr(value, "__name__", None)
        if isinstance(n, str) and getattr(np, n, None) is value:
            return f"numpy.{n}"
        if self._numpy_names is None:
            found = {id(np.linalg): "numpy.linalg", id(np.fft): "numpy.fft"}
            for prefix, module in (("numpy.fft", np.fft), ("numpy.linalg", np.linalg),
                                   ("numpy", np)):
                for k, v in vars(module).items():
                    if not k.startswith("_") and callable(v):
                        found[id(v)] = f"{prefix}.{k}"
            self._numpy_names = found
        return self._numpy_names.get(id(value))


class _Where:
    """Where a copy is, for the errors: the op's forward and the helpers on the way."""

    def __init__(self, label, path=()):
        self.label, self.path = label, path

    def through(self, name):
        return _Where(self.label, self.path + (name,))

    def __str__(self):
        return self.label if not self.path else \
            f"{self.label} (through {', '.join(self.path)})"


class _Named:
    """A module-level name of the standalone module (``base`` unless taken): ``text`` is
    its value's source; the Name nodes in ``refs`` are given it."""

    def __init__(self, base, text=""):
        self.base = base
        self.text = text
        self.name = None
        self.refs = []

    def ref(self, like):
        n = ast.copy_location(ast.Name(id=self.base, ctx=ast.Load()), like)
        self.refs.append(n)
        return n

    def give_name(self, taken):
        n, k = self.base, 1
        while n in taken:
            k += 1
            n = f"{self.base}_{k}"
        taken.add(n)
        self.name = n
        for r in self.refs:
            r.id = n


class _Import(_Named):
    """``import module`` (as its own name where it can be) or ``from module import f``."""

    def __init__(self, value):
        self.value = value
        super().__init__(value.__name__.rpartition(".")[2])

    def give_name(self, taken):
        super().give_name(taken)
        v = self.value
        if isinstance(v, types.ModuleType):
            self.text = f"import {v.__name__}" + \
                ("" if self.name == v.__name__ else f" as {self.name}")
        else:
            self.text = f"from {v.__module__} import {v.__name__}" + \
                ("" if self.name == v.__name__ else f" as {self.name}")


class _Copy:
    """A copied function: its ``node`` (rewritten in place), the names of its parameters
    the backend is passed to, its locals and its module-level name."""

    def __init__(self, node, backend, where, base):
        self.node = node
        self.backend = backend
        self.where = where
        self.locals = set()
        self.named = _Named(base)

    @property
    def name(self):
        return self.named.name


class _Rewrite(ast.NodeTransformer):
    """Rewrite one copied function in place (Note [Copied helpers])."""

    def __init__(self, source, fn, copy, is_method):
        self.source = source
        self.fn = fn
        self.where = copy.where
        self.backend = copy.backend
        self.locals = copy.locals
        self.is_method = is_method  # (its backend, ``self``, is no parameter: numpy)
        self.cells = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))

    def fail(self, what):
        raise ValueError(f"standalone=True: {self.where} uses {what}")

    def lookup(self, name):
        """``(namespace, value)`` of the free variable ``name`` (a closure's cell or the
        module's globals), or ``(None, _MISSING)``."""
        cell = self.cells.get(name)
        if cell is not None:
            try:
                return cell, cell.cell_contents
            except ValueError:
                return None, _MISSING
        g = self.fn.__globals__
        return (g, g[name]) if name in g else (None, _MISSING)

    def _numpy(self, like):
        return ast.copy_location(ast.Name(id="numpy", ctx=ast.Load()), like)

    def _is_backend(self, node):
        return isinstance(node, ast.Name) and (node.id in self.backend or (
            node.id not in self.locals and self.lookup(node.id)[1] is NUMPY))

    def _as_numpy(self, name):
        """Whether the backend named ``name`` is written ``numpy`` (a backend method's
        ``self``, ndgrad's ``NUMPY``), not a parameter the program passes numpy to."""
        return self.is_method and name in self.backend or name not in self.backend

    # -- names
    def visit_Name(self, node):
        if self._is_backend(node):
            if isinstance(node.ctx, ast.Load) and self._as_numpy(node.id):
                return self._numpy(node)
            self.fail(f"its backend {node.id} as a value (only {node.id}.<name> and the "
                      "copied helpers read it)")
        if not isinstance(node.ctx, ast.Load) or node.id in self.locals:
            return node
        namespace, value = self.lookup(node.id)
        if value is _MISSING:
            if hasattr(builtins, node.id):
                return node
            self.fail(f"{node.id}, which it cannot find")
        return self.value(node.id, namespace, value, node)

    def value(self, name, namespace, value, node):
        """The expression the global or closure variable ``name`` (``value``) becomes."""
        if value is np:
            return self._numpy(node)
        text = _literal_source(value)
        if text is not None:
            if namespace is self.fn.__globals__ and name in _rebound(self.fn.__module__):
                self.fail(f"{name}, a variable its module rebinds (global {name})")
            changed = _mutated(self.fn.__module__) if namespace is self.fn.__globals__ \
                else None
            if type(value) is dict and (changed is None or name in changed):
                self.fail(f"{name}, a dict its module may change")
            return self.source.constant(namespace, name, text).ref(node)
        numpy_name = self.source.numpy_name(value)
        if numpy_name is not None:
            return _expression(numpy_name, node)
        if _is_ndgrad_function(value):
            return self.source.helper(value, frozenset(), self.where).named.ref(node)
        if _is_stdlib(value):
            return self.source.stdlib(value).ref(node)
        self.fail(f"{name} ({_kind(value)}), which cannot be written out")

    def visit_AnnAssign(self, node):  # (the annotation goes: it is not evaluated there)
        if node.value is None:
            return None
        return ast.copy_location(ast.Assign(targets=[self.visit(node.target)],
                                            value=self.visit(node.value)), node)

    # -- branches the NumPy backend never takes (their tests known: its flags, NumPy's objects)
    def visit_If(self, node):
        node.test = self.visit(node.test)
        known = self._truth(node.test)
        if known is None:
            node.test = self._without_constants(node.test)
            node.body = self._statements(node.body) or [ast.Pass()]
            node.orelse = self._statements(node.orelse)
            return node
        return self._statements(node.body if known else node.orelse)

    def visit_IfExp(self, node):
        node.test = self.visit(node.test)
        known = self._truth(node.test)
        if known is None:
            node.body, node.orelse = self.visit(node.body), self.visit(node.orelse)
            return node
        return self.visit(node.body if known else node.orelse)

    def generic_visit(self, node):
        # (NodeTransformer's, each node visited once, but statements go through _statements)
        for field, old in ast.iter_fields(node):
            if isinstance(old, list) and old and isinstance(old[0], ast.stmt):
                new = self._statements(old)
                setattr(node, field, (new or [ast.Pass()]) if field == "body" else new)
            elif isinstance(old, list):
                new = []
                for v in old:
                    if not isinstance(v, ast.AST):
                        new.append(v)  # (None: a keyword-only argument without default)
                        continue
                    v = self.visit(v)
                    new += v if isinstance(v, list) else [] if v is None else [v]
                old[:] = new
            elif isinstance(old, ast.AST):
                setattr(node, field, self.visit(old))
        return node

    def _statements(self, body):
        """A block's statements rewritten, without those after one that leaves it (a
        branch taken for good may end it)."""
        out = []
        for s in body:
            r = self.visit(s)
            out += r if isinstance(r, list) else [] if r is None else [r]
            if out and isinstance(out[-1], (ast.Return, ast.Raise, ast.Continue, ast.Break)):
                break
        return out

    def _object(self, node):
        """The NumPy object a path ``numpy.a.b`` (or ``B.a.b``) names, or _MISSING."""
        if isinstance(node, ast.Name):
            return np if node.id == "numpy" or node.id in self.backend else _MISSING
        if isinstance(node, ast.Attribute):
            owner = self._object(node.value)
            return _MISSING if owner is _MISSING else getattr(owner, node.attr, _MISSING)
        return _MISSING

    def _truth(self, node):
        """The truth of a test known without running it (a constant, ``x is y`` of two
        NumPy paths, ``not``, ``and`` / ``or`` of such), or None."""
        if isinstance(node, ast.Constant):
            return bool(node.value)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            t = self._truth(node.operand)
            return None if t is None else not t
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and \
                isinstance(node.ops[0], (ast.Is, ast.IsNot)):
            a, b = self._object(node.left), self._object(node.comparators[0])
            if a is _MISSING or b is _MISSING:
                return None
            return (a is b) == isinstance(node.ops[0], ast.Is)
        if isinstance(node, ast.BoolOp):
            truths = [self._truth(v) for v in node.values]
            if None not in truths:
                return all(truths) if isinstance(node.op, ast.And) else any(truths)
            first = truths[0]  # (what the test decides before it evaluates anything)
            if first is not None and first != isinstance(node.op, ast.And):
                return first
        return None

    def _without_constants(self, test):
        """An if's test without the operands of an ``and`` (``or``) that are known true
        (false) and change nothing of its truth."""
        if isinstance(test, ast.BoolOp):
            neutral = isinstance(test.op, ast.And)
            kept = [v for v in test.values if self._truth(v) is not neutral]
            if kept and len(kept) < len(test.values):
                test.values = kept
                return kept[0] if len(kept) == 1 else test
        return test

    # -- the backend
    def visit_Attribute(self, node):
        if self._is_backend(node.value):
            if not isinstance(node.ctx, ast.Load):
                self.fail(f"{node.value.id}.{node.attr} as a target")
            return self.backend_attribute(node.value.id, node.attr, node)
        return self.generic_visit(node)

    def backend_attribute(self, b, attr, node, backend=frozenset()):
        """The expression ``B.<attr>`` becomes (Note [Copied helpers])."""
        mine = getattr(NUMPY, attr, _MISSING)
        theirs = getattr(np, attr, _MISSING)
        if mine is theirs:  # (NumPy's own, or neither has it: AttributeError there too)
            owner = self._numpy(node) if self._as_numpy(b) else \
                ast.copy_location(ast.Name(id=b, ctx=ast.Load()), node)
            return ast.copy_location(ast.Attribute(value=owner, attr=attr, ctx=ast.Load()),
                                     node)
        if mine is _MISSING:
            self.fail(f"{b}.{attr}, which the NumPy backend lacks and NumPy has")
        scipy_module = _scipy_module(mine)
        if scipy_module is not None:  # (B.special: SciPy's, imported by the module)
            return self.source.stdlib(scipy_module).ref(node)
        if type(mine) in _SCALARS:
            return _expression(_literal_source(mine), node)
        if _is_backend_method(mine):
            return self.source.method(mine, backend, self.where).named.ref(node)
        numpy_name = self.source.numpy_name(mine)
        if numpy_name is not None:
            return _expression(numpy_name, node)
        self.fail(f"{b}.{attr} ({_kind(mine)}), the NumPy backend's, not NumPy's")

    def _ndgrad_classes(self, node):
        """Whether ``node`` names one of ndgrad's classes, or a tuple of them."""
        if isinstance(node, ast.Tuple):
            return bool(node.elts) and all(self._ndgrad_classes(e) for e in node.elts)
        if not isinstance(node, ast.Name) or node.id in self.locals:
            return False
        v = self.lookup(node.id)[1]
        return isinstance(v, type) and (v.__module__ or "").split(".")[0] == "ndgrad"

    def _constant_string(self, node):
        if isinstance(node, ast.Constant) and type(node.value) is str:
            return node.value
        if isinstance(node, ast.Name) and node.id not in self.locals:
            value = self.lookup(node.id)[1]
            if type(value) is str:
                return value
        return None

    def visit_Call(self, node):
        f = node.func
        if isinstance(f, ast.Name) and f.id == "isinstance" and f.id not in self.locals and \
                self.lookup(f.id)[1] is _MISSING and len(node.args) == 2 and \
                not node.keywords and self._ndgrad_classes(node.args[1]):
            # (a standalone program's values are arrays and numbers, never ndgrad's objects)
            return ast.copy_location(ast.Constant(False), node)
        if isinstance(f, ast.Name) and f.id == "getattr" and f.id not in self.locals and \
                self.lookup(f.id)[1] is _MISSING and len(node.args) in (2, 3) and \
                not node.keywords and self._is_backend(node.args[0]):
            attr = self._constant_string(node.args[1])  # getattr(B, "name"[, default])
            if attr is not None:
                if len(node.args) == 3 and not hasattr(NUMPY, attr) and not hasattr(np, attr):
                    return self.visit(node.args[2])
                return self.backend_attribute(node.args[0].id, attr, node)
        positions = [i for i, a in enumerate(node.args) if self._is_backend(a)]
        keywords = {k.arg for k in node.keywords if self._is_backend(k.value)}
        if not positions and not keywords:
            return self.generic_visit(node)
        # the backend passed on: to a helper or a backend method, copied with it
        target, skip = None, 0
        if isinstance(f, ast.Name) and f.id not in self.locals and \
                _is_ndgrad_function(self.lookup(f.id)[1]):
            target = self.lookup(f.id)[1]
        elif isinstance(f, ast.Attribute) and self._is_backend(f.value) and \
                _is_backend_method(getattr(NUMPY, f.attr, None)):
            target, skip = getattr(NUMPY, f.attr).__func__, 1
        if target is None:
            self.fail(f"its backend as an argument of {ast.unparse(f)}, which is not copied")
        params = list(inspect.signature(target).parameters.values())
        for i in positions:
            p = params[i + skip] if i + skip < len(params) else None
            if p is None or p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
                self.fail(f"its backend as an argument of {ast.unparse(f)} that it cannot "
                          "follow")
            keywords.add(p.name)
        if skip:
            copy = self.source.method(getattr(NUMPY, f.attr), frozenset(keywords), self.where)
        else:
            copy = self.source.helper(target, frozenset(keywords), self.where)
        node.func = copy.named.ref(f)
        node.args = [self._backend_argument(a) for a in node.args]
        for k in node.keywords:
            k.value = self._backend_argument(k.value)
        return node

    def _backend_argument(self, a):
        if not self._is_backend(a):
            return self.visit(a)
        return self._numpy(a) if self._as_numpy(a.id) else a


# ----------------------------------------------------------------------------- helpers
def _function_node(fn, where, forward=False):
    """The ``def`` of plain function ``fn``, its docstring dropped (and a forward's
    decorators: the op is what they make of it; a helper may have none)."""
    if not isinstance(fn, types.FunctionType):
        raise ValueError(f"standalone=True: {where} is {_kind(fn)}, not a plain function")
    try:
        node = ast.parse(textwrap.dedent(inspect.getsource(fn))).body[0]
    except (OSError, TypeError, SyntaxError, IndexError):
        node = None
    if not isinstance(node, ast.FunctionDef) or node.name != fn.__code__.co_name:
        raise ValueError(f"standalone=True: {where} has no source to copy")
    if node.decorator_list and not forward:
        raise ValueError(f"standalone=True: {where} is decorated")
    node.decorator_list = []
    for n in ast.walk(node):  # (annotations are not copied: no names of ndgrad's)
        if isinstance(n, ast.arg):
            n.annotation = None
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
            n.returns = None
    if node.body and isinstance(node.body[0], ast.Expr) and \
            isinstance(node.body[0].value, ast.Constant):
        node.body = node.body[1:] or [ast.Pass()]
    return node


def _locals(node, where):
    """Every name ``node`` binds anywhere inside (parameters, assignments, nested defs)."""
    found = set()
    for n in ast.walk(node):
        if isinstance(n, (ast.Global, ast.Nonlocal, ast.Import, ast.ImportFrom,
                          ast.ClassDef)):
            kind = {"ImportFrom": "import", "ClassDef": "class"}.get(
                type(n).__name__, type(n).__name__.lower())
            raise ValueError(f"standalone=True: {where} contains a {kind} statement")
        if isinstance(n, ast.arg):
            found.add(n.arg)
        elif isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load):
            found.add(n.id)
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n is not node:
            found.add(n.name)
        elif isinstance(n, ast.ExceptHandler) and n.name:
            found.add(n.name)
    return found


def _literal_source(v):
    """Source that evaluates to a value equal to ``v`` (a literal: scalars, tuples,
    frozensets and dicts of them), or None."""
    t = type(v)
    if t is float:
        finite = v == v and v not in (float("inf"), float("-inf"))
        return repr(v) if finite else f"float({repr(v)!r})"
    if t is complex:
        return f"complex({_literal_source(v.real)}, {_literal_source(v.imag)})"
    if t in _SCALARS:
        return repr(v)
    if v is Ellipsis:
        return "..."
    if t is dict:  # (a table of literals; one its module changes is refused by the caller)
        parts = [(_literal_source(k), _literal_source(x)) for k, x in v.items()]
        if any(a is None or b is None for a, b in parts):
            return None
        return "{" + ", ".join(f"{a}: {b}" for a, b in parts) + "}"
    if t is tuple or t is frozenset:
        parts = [_literal_source(x) for x in v]
        if None in parts:
            return None
        if t is tuple:
            return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"
        return "frozenset({" + ", ".join(sorted(parts)) + "})" if parts else "frozenset()"
    return None


_MUTATORS = frozenset({"update", "setdefault", "pop", "popitem", "clear", "__setitem__",
                       "__delitem__"})


@functools.cache
def _mutated(module):
    """The globals of ``module`` that its code may change in place (an item assigned or
    deleted, a mutating method called): tables that are state, not constants; None where
    its source cannot be read."""
    tree = _module_tree(module)
    if tree is None:
        return None
    found = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Subscript) and isinstance(n.value, ast.Name) and \
                isinstance(n.ctx, (ast.Store, ast.Del)):
            found.add(n.value.id)
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and \
                isinstance(n.func.value, ast.Name) and n.func.attr in _MUTATORS:
            found.add(n.func.value.id)
    return frozenset(found)


@functools.cache
def _rebound(module):
    """The globals of ``module`` that a function of it rebinds (``global name``): state,
    not constants."""
    tree = _module_tree(module)
    return frozenset() if tree is None else frozenset(
        name for n in ast.walk(tree) if isinstance(n, ast.Global) for name in n.names)


@functools.cache
def _module_tree(module):
    """The syntax tree of ``module``'s source, or None where it cannot be read."""
    try:
        return ast.parse(inspect.getsource(sys.modules[module]))
    except (KeyError, OSError, TypeError, SyntaxError):
        return None


def _expression(text, like):
    return ast.copy_location(ast.parse(text, mode="eval").body, like)


def _is_ndgrad_function(v):
    return isinstance(v, types.FunctionType) and \
        (getattr(v, "__module__", None) or "").split(".")[0] == "ndgrad"


def _is_backend_method(v):
    return isinstance(v, types.MethodType) and v.__self__ is NUMPY and \
        _is_ndgrad_function(v.__func__)


def _scipy_module(v):
    """The SciPy module the NumPy backend's lazily imported namespace ``v`` stands for
    (``B.special``: ``scipy.special``), or None."""
    if type(v) is not _OnFirstUse or not v._name.startswith("scipy."):
        return None
    return v._imported()


def _is_stdlib(v):
    if isinstance(v, types.ModuleType):
        return v.__name__.split(".")[0] in sys.stdlib_module_names
    module, name = getattr(v, "__module__", None), getattr(v, "__name__", None)
    return isinstance(module, str) and isinstance(name, str) and \
        module.split(".")[0] in sys.stdlib_module_names and \
        getattr(sys.modules.get(module), name, None) is v


def _kind(v):
    if isinstance(v, type):
        return f"the class {v.__module__}.{v.__qualname__}"
    if isinstance(v, types.FunctionType):
        return f"the function {v.__module__}.{v.__qualname__}"
    if type(v).__repr__ is not object.__repr__ and len(repr(v)) <= 60:
        return repr(v)  # (SciPy's modules, imported on first use, say so)
    return f"a {type(v).__name__}"


def _safe(name):
    return "".join(c if c.isalnum() else "_" for c in name)
