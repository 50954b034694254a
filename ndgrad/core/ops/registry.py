"""The op registry: one declaration per primitive.

A primitive is declared once with :func:`defop`::

    @defop(kind=ELEMENTWISE, domain=Domain((-3, 3)))
    def tanh(B, x):
        '''Hyperbolic tangent, elementwise. (public docstring, with an example)'''
        return B.tanh(x)

    tanh.defvjp(lambda F, g, out, x: g * (1 - out * out))   # one rule per input
    tanh.defjvp_from_vjp()                                  # or defjvp / defjvp_linear

From this one declaration come the public function ``ndgrad.tanh``, the Tensor method
``Tensor.tanh``, the raw formula namespace entry ``F.tanh`` for each backend, the tests (the
property suite iterates over :data:`REGISTRY`) and, later, the batching rule (from ``kind``).

Rules
-----
``forward(B, *arrays, *extra, **params)`` computes on raw backend arrays.

``vjp`` rules, one per differentiable input (HIPS autograd's ``defvjp`` form, so only the
cotangents that are needed get computed): ``rule(F, g, out, *inputs, *extra, **params)``
returns the cotangent for that input. It may return it in the broadcast (output) shape: the
engine sums it back to the input's shape and casts it to the input's dtype, in one place
(Note [Broadcasting is undone by the engine]). Which of ``out`` and the inputs a rule reads is
found once, at declaration, from the rule's code, so a node saves only what its rules use
(Note [What a node saves]).

``jvp(F, tangents, out, *inputs, *extra, **params)`` returns the output tangent; ``tangents``
has None where an input carries no tangent.

Formulas are written against ``F``: array-API names and operators only, never numpy. ``F`` is
the backend's raw namespace for first-order backward and the ndgrad namespace when the formula
itself must be differentiated, so one formula serves every order.

Sampling (the property suite)
-----------------------------
Where an op's inputs are drawn from is part of its declaration. By default the suite draws
from ``domain`` according to ``kind`` (elementwise: ``nin`` mutually broadcastable shapes,
0-d included; reductions: a shape plus ``axis`` / ``keepdims``; scans: a shape plus an int
``axis``). Any other op gives ``sample=fn`` where ``fn(d)`` returns ``(args, kwargs)``:
``args[:nin]`` are the array inputs (NumPy arrays or Python scalars; the floating ones are
differentiated), ``args[nin:]`` extra positional parameters, ``kwargs`` the parameters. ``d``
is a drawer (``ndgrad.checks.strategies.Drawer``) with:

* ``d.dtype``: the floating dtype under test (float64, or complex128 when ``domain.complex``)
* ``d.shape(min_dims=0, max_dims=3, min_side=1, max_side=4)`` -> tuple
* ``d.shapes(n, min_dims=0, max_dims=3, min_side=1, max_side=4)`` -> n broadcastable shapes
* ``d.array(shape, low=-2.0, high=2.0, dtype=None)`` -> array (``d.dtype`` by default)
* ``d.int_array(shape, low, high)``, ``d.bool_array(shape)`` -> arrays (bounds inclusive)
* ``d.integers(low, high)`` (inclusive), ``d.choice(seq)``, ``d.boolean()``
* ``d.axis(ndim, none=True)`` -> int (maybe negative) or None; ``d.axes(ndim)`` -> tuple
* ``d.permutation(n)`` -> tuple
* ``d.reject()`` -> discard this draw (e.g. a sample too close to a kink)
* ``d.matrix(shape, cond=10.0)`` -> a well-conditioned ``(..., m, n)`` matrix (distinct
  singular values)
* ``d.spd_matrix(shape, low=0.5, high=3.0)`` -> symmetric (Hermitian) positive definite
* ``d.hermitian_matrix(shape, low=-2.0, high=2.0, gap=0.3)`` -> symmetric (Hermitian) with
  eigenvalues at least ``gap`` apart

Declared exceptions go in ``notes`` (``{"gradgrad": reason, "jvp": reason, "fd": reason}``);
the suite reads them as data and a test lists them with their reasons.

Complex numbers follow PyTorch's convention: the gradient is the conjugate Wirtinger
derivative, so a holomorphic ``f`` has ``vjp = g * conj(f'(x))`` and ``jvp = t * f'(x)``.
"""

from __future__ import annotations

import ast
import functools
import inspect
import warnings

from ..dispatch import VARIADIC, apply

__all__ = [
    "Op", "defop", "NAMESPACES",
    "defcomposite", "defalias", "Domain", "REGISTRY", "COMPOSITES", "ALIASES",
    "ELEMENTWISE", "REDUCTION", "SCAN", "LINALG", "SHAPE", "INDEXING", "COMPARISON",
    "VARIADIC", "Algebra", "Structure", "GENERAL", "linear", "multilinear", "elementwise",
    "piecewise_linear",
]

# Kinds: a default batching rule and the property suite's sampling follow from these.
ELEMENTWISE = "elementwise"  # broadcasting, same-shape output
REDUCTION = "reduction"      # reduces over `axis` with `keepdims`
SCAN = "scan"                # cumulative along `axis`
LINALG = "linalg"            # matrix ops batched over leading dimensions
SHAPE = "shape"              # reshapes / moves data without arithmetic
INDEXING = "indexing"        # selects or scatters by index
COMPARISON = "comparison"    # elementwise, non-differentiable, bool output


# Note [Op structure]
# ~~~~~~~~~~~~~~~~~~~
# What an op is, algebraically, is declared once, as data on its declaration
# (``Op.structure``, a :class:`Structure`), and every transform that cares derives its
# behaviour from it: Taylor mode (functional/taylor.py) pushes a linear op's coefficients
# through its jvp and a multilinear op's by Leibniz's rule; the Forward Laplacian
# (functional/operators.py) passes a signed sum's batches through and pairs a multilinear op's
# inputs; Hessian sparsity (functional/sparsity.py) adds no pairs for a linear or piecewise
# linear op and only pairs across inputs for a multilinear one, whose Jacobian pattern it
# also finds from the declaration. The structures:
#
# * ``linear(coefficients=None, piecewise=False)``: linear in its array inputs (the shape
#   and indexing ops, ``defjvp_linear``); ``coefficients``, where the op is the broadcast sum
#   ``sum_i c_i x_i`` (``add`` (1, 1), ``subtract`` (1, -1)); ``piecewise``: linear only
#   along smooth paths, its Jacobian constant between kinks (``sort``, ``max``, ``where``);
# * ``multilinear(inputs=None, matrix_product=False)``: linear in each array input
#   separately (``multiply``, ``matmul``, ``einsum``, ``cross``); ``matrix_product``: NumPy's
#   matrix product (1-D operands promoted, batch dimensions broadcast), whose pairs are per
#   contracted index;
# * ``elementwise(inputs=None, piecewise=False)``: output element k a function of the
#   inputs' elements at k, with a derivative in ``inputs`` only (``copysign``: (0,));
#   ``piecewise``: piecewise linear, no second derivative off the kinks (``abs``,
#   ``maximum``, ``clip``); ``piecewise_linear()``: that alone (``abs``, whose complex
#   derivative is not elementwise in the transforms' sense);
# * piecewise constant (``defop(piecewise_constant=True)``, Note [Piecewise-constant ops]);
# * ``GENERAL``: none of these (the default).
#
# The declaration helpers set it (``defjvp_linear``: linear; ``defjvp_from_vjp``: elementwise,
# unless declared otherwise; ``piecewise_constant=True``), ``defstructure`` declares the rest.
# A transform reads only these fields: it never compares an op's name or parses a string. A
# transform's own rule table is the declaration too: an op with a Taylor rule of its own
# declares it (``deftaylor``), one with a sparsity rule its name (``defsparsity``).
# Note [Special cases of an op]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Some forwards take another op's path for some arguments, known from their types alone:
# ``pow(x, 2)`` of a real floating ``x`` is ``square(x)`` (NumPy's power loop squares 2.7x
# slower; both are ``x * x`` rounded once). The op declares it (``defspecial``), so a program
# compiled from the op (functional/compiler.py) records the other op, with that op's
# structure for the optimiser, and its values stay the forward's. The rule sees no values,
# only shapes, dtypes and Python scalars. The forward keeps its own test of the case (a
# call into the rule would slow the eager op), and a test holds the two together: for
# every op that declares a special case, on its drawn arguments and Python scalars in each
# position, where the rule names another op, that op gives the forward's result bit for
# bit (tests/core/test_bound_forwards.py; a rule that also took ``pow(x, 3)`` fails it).
#
# Note [Formulas on Python numbers]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A rule is one formula for both namespaces: raw arrays (``B.F``, first-order backward) and
# Tensors (``TENSOR_F``: ``create_graph``, the transforms' levels, compiled traces). Its
# inputs may be the Python numbers the op was called with (``x * 1.0001``), which beside an
# array keep NumPy's weak meaning (``g32 * 1.0001`` stays float32). ``conj``'s forward gives a
# Python number back unchanged, so ``g * F.conj(y)`` stays float32 in the raw namespace; the
# public ``ndgrad.conj(1.0001)`` is a 0-d float64 tensor (NumPy's ``np.conj`` a strong float64
# scalar), which made the Tensor formula compute in float64 and its result cast back: other
# bits than the raw rule's, and in a compiled float32 gradient two passes more per
# multiplication by a constant. The same holds for the zero tangent of a Python number in a
# linear op's jvp (``1 - x``): a Python zero, not ``zeros_like(1)``, a strong int64 array.
# An op whose formula must not be its public function declares
# the formula's (``defformula``): ``TENSOR_F.conj`` gives Python numbers back as the forward
# does. tests/core/test_bound_forwards.py holds each such formula to the raw namespace's
# function on Python numbers and to the public function on tensors.
#
# Note [Forwards that write into their first input]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A scatter's forward (``index_add``, ``index_put``) copies its first input and writes the
# values into the copy: eager code must not change the caller's array. A compiled program
# knows when that input is memory it made itself and reads no more (Note [Buffers of a
# program] in functional/program.py); there the copy is a wasted pass over the whole array.
# Such an op declares its forward without the copy (``definto``): ``into(B, x, *rest,
# **params)`` writes the op's result into ``x`` and returns ``x``, where ``x`` has the
# result's shape and dtype. The declaration also promises that the op's own forward returns
# new memory (never a view of an input), so a program may write into that result in turn.
# A test holds the two together for every op that declares one, on its drawn arguments:
# ``into`` on a copy of the first input gives the forward's result bit for bit, in that
# copy's memory, and the forward's result shares no memory with its inputs
# (tests/core/test_bound_forwards.py).
_NUMBERS = (bool, int, float, complex)  # (Note [Formulas on Python numbers])


class Algebra:
    """The algebraic kinds of :class:`Structure` (compared by identity)."""

    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"Algebra.{self.name}"


Algebra.GENERAL = Algebra("GENERAL")
Algebra.LINEAR = Algebra("LINEAR")
Algebra.MULTILINEAR = Algebra("MULTILINEAR")
Algebra.ELEMENTWISE = Algebra("ELEMENTWISE")
Algebra.PIECEWISE_CONSTANT = Algebra("PIECEWISE_CONSTANT")


class Structure:
    """An op's algebraic structure (Note [Op structure]): ``algebra`` (an :class:`Algebra`),
    ``inputs`` (the array inputs it concerns, None for all), ``coefficients`` (a linear
    op's per-input coefficients, where it is a signed sum), ``piecewise`` (linear only
    between kinks) and ``matrix_product`` (a multilinear op that is NumPy's matmul)."""

    __slots__ = ("algebra", "inputs", "coefficients", "piecewise", "matrix_product")

    def __init__(self, algebra, *, inputs=None, coefficients=None, piecewise=False,
                 matrix_product=False):
        if not isinstance(algebra, Algebra):
            raise TypeError(f"Structure: algebra must be an Algebra (Algebra.LINEAR, ...), "
                            f"got {algebra!r}")
        self.algebra = algebra
        self.inputs = None if inputs is None else frozenset(int(i) for i in inputs)
        self.coefficients = None if coefficients is None else tuple(coefficients)
        self.piecewise = bool(piecewise)
        self.matrix_product = bool(matrix_product)

    @property
    def linear(self):
        """Linear (or piecewise so, or piecewise constant) in its array inputs."""
        return self.algebra is Algebra.LINEAR or self.algebra is Algebra.PIECEWISE_CONSTANT

    @property
    def multilinear(self):
        return self.algebra is Algebra.MULTILINEAR

    @property
    def elementwise(self):
        return self.algebra is Algebra.ELEMENTWISE

    @property
    def curvature_free(self):
        """No second derivative anywhere off its kinks: linear, piecewise linear or piecewise
        constant (Hessian sparsity adds no pairs for it)."""
        return self.linear or self.piecewise

    def concerns(self, i):
        """Whether array input ``i`` is one of ``inputs``."""
        return self.inputs is None or i in self.inputs

    def __repr__(self):
        fields = [f"{k}={getattr(self, k)!r}" for k in ("inputs", "coefficients")
                  if getattr(self, k) is not None]
        fields += [k for k in ("piecewise", "matrix_product") if getattr(self, k)]
        return f"Structure({self.algebra.name.lower()}{''.join(', ' + f for f in fields)})"


GENERAL = Structure(Algebra.GENERAL)
_PIECEWISE_CONSTANT = Structure(Algebra.PIECEWISE_CONSTANT)


def linear(*, coefficients=None, piecewise=False):
    """An op linear in its array inputs (Note [Op structure])."""
    return Structure(Algebra.LINEAR, coefficients=coefficients, piecewise=piecewise)


def multilinear(*, inputs=None, matrix_product=False):
    """An op linear in each of its array inputs ``inputs`` separately (Note [Op
    structure])."""
    return Structure(Algebra.MULTILINEAR, inputs=inputs, matrix_product=matrix_product)


def elementwise(*, inputs=None, piecewise=False):
    """An elementwise op with a derivative in ``inputs`` (Note [Op structure])."""
    return Structure(Algebra.ELEMENTWISE, inputs=inputs, piecewise=piecewise)


def piecewise_linear():
    """An op with no other structure the transforms use that is piecewise linear: no second
    derivative off its kinks (``abs`` of a real input; Note [Op structure])."""
    return Structure(Algebra.GENERAL, piecewise=True)


REGISTRY: dict[str, Op] = {}
COMPOSITES: dict[str, Composite] = {}
# Extra public names of one declaration (``sub`` -> ``subtract``): alias -> canonical name.
ALIASES: dict[str, str] = {}

# Note [Publishing a declaration]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A declaration (defop, defcomposite, defalias) becomes public functions, formula-namespace
# entries, Tensor methods and OpNode properties by one function, ``publish`` in
# core/ops/__init__.py. That package runs it over every declaration of core/ops once they are
# all imported, then installs it here as the hook ``ON_DECLARE``: a declaration made later,
# in a module above core (ndgrad/numpy/, ndgrad/scipy/), is published the moment it is made,
# the same way. (This module cannot import the publishing code: it sits below it.) An op's
# public function depends on ``defpublic`` and ``defargs`` too, which come after ``defop``:
# they publish the op again once it has been published.
ON_DECLARE: list = []


def _declared(entry):
    for hook in ON_DECLARE:
        hook(entry)


class Domain:
    """Where the property suite draws an op's inputs (data, read by the tests).

    Parameters
    ----------
    *ranges : (low, high) per array input
        Uniform ranges for real inputs; one range is reused for every input.
    valid : callable(*arrays) -> bool array or bool, optional
        Which draws are usable (e.g. away from a kink); invalid draws are rejected.
    complex : bool
        Also draw complex128 inputs (real and imaginary parts from the ranges).
    """

    def __init__(self, *ranges, valid=None, complex=False, integer_inputs=()):
        self.ranges = ranges or ((-2.0, 2.0),)
        self.valid = valid
        self.complex = complex
        self.integer_inputs = integer_inputs

    def range(self, i):
        return self.ranges[i] if i < len(self.ranges) else self.ranges[-1]


# Note [What a rule reads]
# ~~~~~~~~~~~~~~~~~~~~~~~~
# Which of ``out`` and the inputs each vjp rule reads is found from the rule's source: its
# syntax tree (``ast``), located through the code object's file and first line (and, for
# several lambdas on one line, the column of its first instruction). A parameter read only
# as ``x.shape`` / ``x.ndim`` / ``x.dtype`` / ``x.size`` is metadata-only (the node gives the
# rule a stand-in, Note [What a node saves]); a name an inner function reads counts as read.
# A rule whose source cannot be found reads everything (always correct, never lean), and the
# op says so once, with a warning asking it to declare ``saves=``: nothing is saved in excess
# silently (tests/core/test_saves.py checks that every registered op's rules are read). An op
# may instead declare ``saves=`` (the parameter names its rules read); a test checks the
# declarations against the analysis, and every op's save plan against its rules run with
# what is not saved made poisonous. The analysis runs once per op, when a node first asks.
META_ATTRS = frozenset({"shape", "ndim", "dtype", "size"})
_TREES = {}  # file -> {first line: [function and lambda nodes]} (parsed once)


def _nodes_at(filename, line):
    index = _TREES.get(filename)
    if index is None:
        index = _TREES[filename] = {}
        try:
            with open(filename, encoding="utf-8") as f:
                tree = ast.parse(f.read(), filename)
        except (OSError, SyntaxError, ValueError):
            return []
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                first = min([node.lineno] + [d.lineno for d in getattr(node,
                                                                       "decorator_list", ())])
                index.setdefault(first, []).append(node)
    return index.get(line, [])


def _arg_names(args):
    names = [a.arg for a in args.posonlyargs + args.args]
    if args.vararg:
        names.append(args.vararg.arg)
    names += [a.arg for a in args.kwonlyargs]
    if args.kwarg:
        names.append(args.kwarg.arg)
    return names


def _rule_source(fn):
    """The syntax tree of function ``fn`` (a def or a lambda), or None."""
    code = getattr(fn, "__code__", None)
    if code is None:
        return None
    n = code.co_argcount + code.co_kwonlyargcount + bool(code.co_flags & inspect.CO_VARARGS) \
        + bool(code.co_flags & inspect.CO_VARKEYWORDS)
    want = sorted(code.co_varnames[:n])
    found = [node for node in _nodes_at(code.co_filename, code.co_firstlineno)
             if sorted(_arg_names(node.args)) == want and
             (isinstance(node, ast.Lambda) or node.name == code.co_name)]
    if len(found) > 1 and hasattr(code, "co_positions"):
        # several lambdas on one line: the one whose body holds the first instruction
        col = next((p[2] for p in list(code.co_positions())[1:] if p[2] is not None), None)
        found = [node for node in found if isinstance(node, ast.Lambda) and col is not None
                 and node.body.col_offset <= col < (node.body.end_col_offset or 1 << 30)]
    return found[0] if len(found) == 1 else None


def _reads(fn):
    """(names read as values, names read only for their metadata) by ``fn``, or None when
    its source cannot be analysed (Note [What a rule reads])."""
    node = _rule_source(fn)
    if node is None:
        return None
    params = set(_arg_names(node.args))
    full, meta = set(), set()

    def visit(n, shadowed):
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) and n is not node:
            for d in getattr(n, "decorator_list", ()):
                visit(d, shadowed)
            for d in n.args.defaults + [d for d in n.args.kw_defaults if d is not None]:
                visit(d, shadowed)
            inner = shadowed | set(_arg_names(n.args))
            for child in (n.body if isinstance(n.body, list) else [n.body]):
                visit(child, inner)
            return
        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and \
                n.attr in META_ATTRS and isinstance(n.ctx, ast.Load):
            if n.value.id in params and n.value.id not in shadowed:
                meta.add(n.value.id)
            return
        if isinstance(n, ast.Name) and n.id in params and n.id not in shadowed:
            full.add(n.id)  # (an assignment to a parameter counts too: conservative)
            return
        for child in ast.iter_child_nodes(n):
            visit(child, shadowed)

    for child in (node.body if isinstance(node.body, list) else [node.body]):
        visit(child, set())
    for d in node.args.defaults + [d for d in node.args.kw_defaults if d is not None]:
        visit(d, set())
    return full, meta - full


# Note [Forwards that hand their arguments on]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Most forwards only hand their arguments on to the backend, ``def tanh(B, x): return
# B.tanh(x)``. ``op.bound[B]`` is then ``B.tanh`` itself, so ``dispatch.apply`` (calls with
# exactly the op's array inputs and no parameters) and the raw formula namespaces call NumPy's
# ufunc with no Python frame of ours between. Measured by switching every op between its
# partial-bound forward and this in one process, interleaved on one core: 2-3 % of W1 (the
# peer benchmark's tanh chain on 16 values) and of N1 (its nested 6th derivative). Under the
# 5 % a shortcut must pay, it is kept as it is no shortcut: a look-up the call made anyway
# replaces a Python frame, for every op and every raw formula. A forward counts as handing on
# when its syntax tree (Note [What a rule reads]) is one ``return B.<name>(<its parameters, in
# order>)`` with no defaults, keywords or starred parameters; anything else is bound with
# ``functools.partial``. The analysis runs once per op, on first use; a test checks for every
# op that the bound forward gives what ``op.forward(B, ...)`` gives
# (tests/core/test_bound_forwards.py).
def _handed_on_to(forward):
    """The name of the backend function ``forward`` hands its arguments on to unchanged, or
    None (Note [Forwards that hand their arguments on])."""
    node = _rule_source(forward)
    if not isinstance(node, ast.FunctionDef):
        return None
    a = node.args
    if a.posonlyargs or a.vararg or a.kwonlyargs or a.kwarg or a.defaults or not a.args:
        return None
    body = node.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        body = body[1:]  # the docstring
    if len(body) != 1 or not isinstance(body[0], ast.Return):
        return None
    call = body[0].value
    names = [p.arg for p in a.args]
    if not (isinstance(call, ast.Call) and not call.keywords and
            isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Name) and
            call.func.value.id == names[0]):
        return None
    if [arg.id if isinstance(arg, ast.Name) else None for arg in call.args] != names[1:]:
        return None
    return call.func.attr


class _BoundForwards(dict):
    """``op.bound[B]``: the op's forward bound to backend ``B`` (``Op.bind``), made on first
    use."""

    __slots__ = ("op",)

    def __init__(self, op):
        super().__init__()
        self.op = op

    def __missing__(self, B):
        f = self[B] = self.op.bind(B)
        return f


class _RuleUse:
    """Which saved values one vjp rule reads: ``out``, and masks over the inputs of those it
    reads as values and those it reads only for their metadata."""

    __slots__ = ("out", "inputs", "meta_inputs", "all_inputs", "unread")

    def __init__(self, fn, nin, first, saves=None):
        """``first``: the index of the rule's first input parameter (after F, g or i, out)."""
        self.unread = False  # (no source to read, no declaration: Note [What a rule reads])
        params = list(inspect.signature(fn).parameters.values())
        positional = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY,
                                                           p.POSITIONAL_OR_KEYWORD)]
        var = [p.name for p in params if p.kind == p.VAR_POSITIONAL]
        if saves is not None:  # declared: "x" read as a value, "x.shape" for metadata only
            used = {n for n in saves if "." not in n}
            meta = {n.partition(".")[0] for n in saves if "." in n} - used
        else:
            r = _reads(fn)
            if r is None:  # no source: read everything (Note [What a rule reads])
                used, meta = set(positional) | set(var), set()
                self.unread = True
            else:
                used, meta = r
        self.out = len(positional) > first - 1 and positional[first - 1] in used
        in_names = positional[first:]
        if nin == VARIADIC or var:
            # any input may be read through *arrays: all, unless none is read at all
            self.all_inputs = bool(used & (set(var) | set(in_names)))
            self.inputs = None if self.all_inputs else (False,) * max(nin, 0)
            self.meta_inputs = None if self.all_inputs else (False,) * max(nin, 0)
        else:
            self.all_inputs = False
            in_names = in_names[:nin]
            pad = (True,) * (nin - len(in_names))
            self.inputs = tuple((n in used) for n in in_names) + pad
            self.meta_inputs = tuple((n in meta) for n in in_names) + (False,) * len(pad)


_UNSET = object()


def _any_complex(F, values):
    """Whether one of ``values`` is complex (a helper, not a generator in a jvp rule: that
    would make ``F`` a cell of the rule, made on every call)."""
    for x in values:
        if F.iscomplexobj(x):
            return True
    return False


class Op:
    """A registered primitive (see the module docstring for the declaration form). Every
    fact about the op is a field here, set by its declaration."""

    __slots__ = (
        "name", "namespace", "qualname", "forward", "kind", "nin", "nout", "domain",
        "differentiable", "piecewise_constant", "view", "sample", "method", "pack",
        "inplace_method",
        "kwarg_aliases", "notes", "doc", "node_name",
        # reverse mode (Note [What a node saves])
        "vjp_rules", "vjp_each", "saves", "_uses", "_meta_standins", "_save_cache",
        # forward mode, vmap, views
        "jvp", "batch_rule", "batch_params", "default_batch", "identity_batch", "scatter",
        "view_replay",
        # algebraic structure (Note [Op structure]); a Taylor rule of its own (ndgrad.func.jet;
        # Note [Taylor rules] in functional/taylor.py)
        "structure", "_taylor",
        # sparsity detection (Note [Sparsity propagation] in functional/sparsity.py)
        "sparsity",
        # the public function: a hand-written one, or how to normalise the call's arguments
        "public", "public_fn", "normalize_args", "signature", "_input_names",
        # the forward bound to each backend (Note [Forwards that hand their arguments on])
        "bound", "_target",
        # where the op is another op for some arguments (Note [Special cases of an op])
        "special",
        # the forward that writes into its first input (Note [Forwards that write into
        # their first input])
        "into",
        # the op's function in TENSOR_F where it is not the public one (Note [Formulas on
        # Python numbers])
        "formula",
    )

    def __init__(self, name, forward, *, kind, nin, nout, domain, differentiable, view,
                 sample, method, pack, inplace_method, kwarg_aliases, notes, namespace=None):
        self.name = name
        self.namespace = namespace  # "linalg", "fft", "special" or None (Note [Namespaces])
        self.qualname = f"{namespace}.{name}" if namespace else name
        self.forward = forward
        self.kind = kind
        self.nin = nin
        self.nout = nout
        self.domain = domain
        self.differentiable = differentiable
        self.piecewise_constant = False  # (Note [Piecewise-constant ops])
        self.view = view
        self.sample = sample
        self.method = method
        self.pack = pack
        self.inplace_method = inplace_method
        self.kwarg_aliases = kwarg_aliases
        # Declared exceptions, as data the tests read: {"jvp": reason, "vmap": reason, ...}
        self.notes = dict(notes or {})
        self.doc = forward.__doc__
        self.node_name = "".join(p.capitalize() for p in self.qualname.replace(".", "_")
                                 .split("_")) + "Backward0"
        self.vjp_rules = None      # tuple, one rule (or None) per input
        self.vjp_each = None       # variadic form: rule(F, i, g, out, *inputs, **params)
        self.saves = None          # declared names the rules read (else: the analysis)
        self._uses = None          # what each rule reads (analysed on first need)
        self._meta_standins = False
        self._save_cache = {}      # save plans by "which inputs need grad"
        self.jvp = None
        self.structure = GENERAL   # (Note [Op structure])
        # a Taylor rule of its own, rule(F, series, out, *inputs, **params), or None (the
        # structure's, else nested jvps of the op)
        self._taylor = None
        # how output elements depend on input elements, for sparsity detection: None (from
        # the structure, else the kind's default) or a rule name of functional/sparsity.py
        # ("zero", "elementwise", "moves", "reduction", "scan", "dense", "where",
        # "extremum", "clip", "sort", "remainder", "imag")
        self.sparsity = None
        self.batch_rule = None     # vmap (core/ops/batching.py); kinds give defaults
        self.batch_params = False
        self.default_batch = _UNSET  # the rule the kind gives, made on first need
        self.identity_batch = None  # vmap's rule for identity batches (Note [Identity batches])
        self.special = None  # (Note [Special cases of an op])
        self.into = None  # (Note [Forwards that write into their first input])
        self.formula = None  # (Note [Formulas on Python numbers])
        self.scatter = None        # view ops: writes a new view value back into the parent
        self.view_replay = None    # view ops whose output k views another op's view of input k
        self.public = None
        self.public_fn = None
        self.normalize_args = None
        self.signature = None      # the public signature, where the public call is apply's
        self._input_names = {}     # input_names(n), memoised
        self.bound = _BoundForwards(self)  # bound[B]: the forward on backend B's arrays
        self._target = _UNSET      # the backend function the forward hands on to (or None)

    def __repr__(self):
        return f"<ndgrad op {self.qualname}>"

    def apply(self, *args, **params):
        """Run this op on ``args`` through ``dispatch.apply`` (for the layers below dispatch
        that apply an op they were handed: a view's history regenerated, core/views.py)."""
        return apply(self, *args, **params)

    def bind(self, B):
        """This op's forward on backend ``B``'s arrays, called with the forward's arguments
        after the backend: ``B``'s own function when the forward only hands them on to it
        (Note [Forwards that hand their arguments on]); cached in ``self.bound``."""
        target = self._target
        if target is _UNSET:
            target = self._target = _handed_on_to(self.forward)
        f = getattr(B, target, None) if target is not None else None
        return f if callable(f) else functools.partial(self.forward, B)

    def input_names(self, n):
        """The names of this op's ``n`` array inputs: its forward's parameters after the
        backend (``x``, ``y``), or ``arrays_0``, ``arrays_1``, ... for a variadic op; what
        ``grad_fn._saved_<name>`` and graph pictures call them."""
        names = self._input_names.get(n)
        if names is None:
            names = []
            for p in list(inspect.signature(self.forward).parameters.values())[1:]:
                if p.kind is p.VAR_POSITIONAL:
                    names.extend(f"{p.name}_{k}" for k in range(n - len(names)))
                    break
                if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
                    names.append(p.name)
            names = self._input_names[n] = tuple(
                (names + [f"input_{k}" for k in range(len(names), n)])[:n])
        return names

    def of(self, F):
        """This op's function in formula namespace ``F`` (``F.linalg.solve`` for a namespaced
        op): what generic rules call to apply the op again."""
        return _lookup(F, self.namespace, self.name)

    # -- the public function
    def defpublic(self, fn):
        """A hand-written public function (argument handling the generic one cannot do, e.g.
        ``reshape(x, 2, 3)``); it calls the op through ``dispatch.apply``."""
        fn.__name__ = fn.__qualname__ = self.name
        fn.__doc__ = self.doc
        fn.__module__ = f"ndgrad.{self.namespace}" if self.namespace else "ndgrad"
        self.public_fn = fn
        if self.public is not None:  # (declared above core: published already)
            _declared(self)
        return fn

    def defargs(self, fn):
        """``fn(*args, **kw) -> (args, kw)``: the public call's arguments with every array
        input positional (an op whose optional inputs may be passed by keyword or left out,
        e.g. ``clip(x, max=1.0)``)."""
        self.normalize_args = fn
        if self.public is not None:  # (declared above core: published already)
            _declared(self)
        return fn

    # -- vjp
    def defvjp(self, *rules, saves=None):
        """One vjp rule per input (None for a non-differentiable input). ``saves``: for each
        rule, the saved values it reads (``"out"``, input names; ``"x.shape"`` for one read
        only for its metadata), when declared rather than found from its source (Note [What
        a rule reads]); a test checks that they agree."""
        if self.nin != VARIADIC and len(rules) != self.nin:
            raise TypeError(f"{self.name}: defvjp expects {self.nin} rules, got {len(rules)}")
        if saves is not None and len(saves) != len(rules):
            raise TypeError(f"{self.name}: saves= names what each rule reads: {len(rules)} "
                            f"entries, got {len(saves)}")
        self._no_rules_of_its_own("defvjp")
        self.vjp_rules = rules
        self.saves = saves
        self._uses = None
        self._save_cache.clear()
        return self

    def defvjp_each(self, rule, saves=None):
        """Variadic form: ``rule(F, i, g, out, *inputs, **params)`` for input ``i``;
        ``saves``: the parameter names it reads, when declared."""
        self._no_rules_of_its_own("defvjp_each")
        self.vjp_each = rule
        self.saves = saves
        self._uses = None
        self._save_cache.clear()
        return self

    def _no_rules_of_its_own(self, what):
        if self.piecewise_constant:
            raise TypeError(
                f"{self.qualname} is declared piecewise_constant: its derivative rules are "
                f"zero and come from that declaration (Note [Piecewise-constant ops]); {what} "
                "cannot give it others")

    def vjp_rule(self, i):
        if self.vjp_each is not None:
            each = self.vjp_each
            return lambda F, g, out, *a, **k: each(F, i, g, out, *a, **k)
        return self.vjp_rules[i] if self.vjp_rules is not None else None

    @property
    def rule_uses(self):
        """What each vjp rule reads (a tuple, one per input; one _RuleUse for the variadic
        form), analysed on first need (Note [What a rule reads])."""
        uses = self._uses
        if uses is None:
            if self.vjp_each is not None:
                uses = _RuleUse(self.vjp_each, self.nin, 4, self.saves)
            else:
                rules = self.vjp_rules or ()
                saves = self.saves or (None,) * len(rules)
                uses = tuple(None if r is None else _RuleUse(r, self.nin, 3, d)
                             for r, d in zip(rules, saves))
            self._meta_standins = isinstance(uses, tuple) and any(
                u is not None and u.meta_inputs is not None and any(u.meta_inputs)
                for u in uses)
            self._uses = uses
            if any(u is not None and u.unread for u in
                   (uses if isinstance(uses, tuple) else (uses,))):
                warnings.warn(
                    f"ndgrad: the vjp rules of {self.qualname} have no source ndgrad can read "
                    "(defined interactively, or not a def or lambda), so its nodes save every "
                    "input: correct, but not lean. Declare what the rules read: "
                    f"{self.name}.defvjp(..., saves=[...]) (Note [What a rule reads])",
                    UserWarning, stacklevel=2)
        return uses

    @property
    def meta_standins(self):
        """Whether some rule reads an input only for its metadata (stand-ins needed)."""
        if self._uses is None:
            self.rule_uses  # noqa: B018  (analyses the rules)
        return self._meta_standins

    def save_plan(self, needs):
        """(save_out, save mask over inputs (None: all)) for the inputs that need grad.

        An input a rule reads only for its metadata is not saved when it needs grad: the
        engine hands the rule a stand-in built from the Node's edges (Note [What a node
        saves]). Memoised per ``needs``.
        """
        r = self._save_cache.get(needs)
        if r is not None:
            return r
        uses = self.rule_uses
        save_out = False
        if self.vjp_each is not None:
            # None: save every input; a rule that reads none of them saves none
            r = (uses.out, None if uses.all_inputs else (False,) * len(needs))
        else:
            mask = [False] * len(needs)
            all_inputs = False
            for i, need in enumerate(needs):
                if not need:
                    continue
                u = uses[i] if i < len(uses) else None
                if u is None:
                    continue
                save_out = save_out or u.out
                if u.all_inputs:
                    all_inputs = True
                    continue
                for j, used in enumerate(u.inputs):
                    if used or (u.meta_inputs[j] and not needs[j]):
                        mask[j] = True
            r = (save_out, None if all_inputs else tuple(mask))
        self._save_cache[needs] = r
        return r

    # -- views (Note [In-place on views] in core/views.py)
    def defscatter(self, rule):
        """How a new value of this view op's output goes back into its input (``view=True``).

        ``rule(F, parent, child, *extra, **params)`` (multi-output ops:
        ``rule(F, k, parent, child, *extra, **params)`` for output ``k``) returns ``parent``
        with the region the view shows replaced by ``child``, written with ``F`` so that it is
        recorded (and differentiable to any order): ``getitem``'s is
        ``F.index_put(parent, child, index=index)``, ``reshape``'s
        ``F.reshape(child, parent.shape)``. In-place operations on a view use it to carry the
        change into the base's history (PyTorch's CopySlices). The rule may read ``parent``
        only for its shape, dtype or ndim: the parent's memory is overwritten right after.
        """
        if not self.view:
            raise TypeError(f"{self.name}: defscatter is for view ops (view=True)")
        self.scatter = rule
        return self

    # -- vmap
    def defbatch(self, rule, *, params=False):
        """The batching rule ``rule(F, batched, *args, **params)`` (``core/ops/batching.py``
        says what it gets and returns). ``params=True``: it also handles parameters that are
        batched tensors (e.g. ``getitem``'s index); it then gets ``_level``, the vmap level,
        to recognise them."""
        self.batch_rule = rule
        self.batch_params = params
        return self

    def defidentity(self, rule):
        """vmap's shortcut for an identity batch among the inputs (Note [Identity batches]
        in functional/vmap.py): ``rule(F, i, s, args, batched, params)``, where input ``i``
        is the identity batch whose element ``b`` is ``s[b] * e_b``, returns
        ``("identity", new_s)`` (the result is one too), ``("value", batched_value)`` (the
        result, batch first, computed cheaply) or None (no shortcut: the batching rule runs
        on the dense identity)."""
        self.identity_batch = rule
        return rule

    # -- special cases (Note [Special cases of an op])
    def defspecial(self, rule):
        """Where the op is another op: ``rule(*inputs, **params)`` gives ``(name, inputs)``
        (the registered op ``name`` on those inputs computes this op's result bit for bit:
        the forward takes it) or None. It sees only what is known without values: an
        array's ``shape`` and ``dtype``, and Python scalars (Note [Special cases of an
        op])."""
        if not callable(rule):
            raise TypeError(f"{self.qualname}.defspecial: expected a rule function, got "
                            f"{rule!r}")
        self.special = rule
        return self

    def defformula(self, fn):
        """The op's function in the formula namespace over Tensors (``TENSOR_F``), where it
        must differ from the public one (Note [Formulas on Python numbers])."""
        if not callable(fn):
            raise TypeError(f"{self.qualname}.defformula: expected a function, got {fn!r}")
        self.formula = fn
        if self.public is not None:  # (published already: the namespace takes it now)
            _declared(self)
        return fn

    def definto(self, forward):
        """The forward without its copy: ``forward(B, x, *rest, **params)`` writes this op's
        result into ``x`` (of the result's shape and dtype) and returns it; and this op's own
        forward returns new memory (Note [Forwards that write into their first input])."""
        if not callable(forward):
            raise TypeError(f"{self.qualname}.definto: expected a forward function, got "
                            f"{forward!r}")
        self.into = forward
        return self

    # -- structure and Taylor mode
    def defstructure(self, structure):
        """The op's algebraic structure (Note [Op structure]): ``linear(...)``,
        ``multilinear(...)``, ``elementwise(...)`` or ``GENERAL``."""
        if not isinstance(structure, Structure):
            raise TypeError(f"{self.qualname}.defstructure: expected a Structure "
                            "(registry.linear(), multilinear(), elementwise()), got "
                            f"{structure!r}")
        self.structure = structure
        return self

    @property
    def taylor(self):
        """The op's Taylor rule (Note [Taylor rules] in functional/taylor.py): its own rule
        function, else its structure where that gives one (linear, multilinear,
        elementwise, piecewise constant), else None (nested jvps of the op)."""
        if self._taylor is not None:
            return self._taylor
        return None if self.structure is GENERAL or \
            self.structure.algebra is Algebra.GENERAL else self.structure

    @taylor.setter
    def taylor(self, rule):
        if isinstance(rule, Structure):
            self.structure, self._taylor = rule, None
        else:
            self._taylor = rule

    def deftaylor(self, rule):
        """A Taylor rule of the op's own (Note [Taylor rules] in
        ndgrad/functional/taylor.py): ``rule(F, series, out, *inputs, **params)`` returning
        the output's derivative coefficients ``[y1, ..., yK]`` from ``series`` (per input,
        its ``[x1, ..., xK]`` or None), or None to use the structure's. An op linear or
        multilinear in its inputs declares that instead (``defstructure``)."""
        if rule is not None and not callable(rule):
            raise TypeError(f"{self.qualname}.deftaylor: expected a rule function, got "
                            f"{rule!r}; declare linearity with defstructure(linear()) or "
                            "defstructure(multilinear()) (Note [Op structure])")
        self._taylor = rule
        return self

    def defsparsity(self, rule):
        """How the op's output elements depend on its input elements, for
        ``ndgrad.func.jacobian_sparsity`` (Note [Sparsity propagation] in
        functional/sparsity.py): a rule name there; the op's ``kind`` gives the default."""
        self.sparsity = rule
        return self

    # -- jvp
    def defjvp(self, rule):
        """Joint rule ``rule(F, tangents, out, *inputs, **params)`` -> output tangent."""
        self._no_rules_of_its_own("defjvp")
        self.jvp = rule
        return self

    def defjvp_each(self, *rules):
        """One rule per input, ``rule(F, t, out, *inputs, **params)``; contributions add."""
        def jvp(F, tangents, out, *inputs, **params):
            total = None
            for rule, t in zip(rules, tangents):
                if t is None or rule is None:
                    continue
                c = rule(F, t, out, *inputs, **params)
                total = c if total is None else total + c
            return total
        self.jvp = jvp
        return self

    def defjvp_linear(self):
        """The op is linear in its differentiable inputs: its jvp is the op on the tangents."""
        op = self

        def jvp(F, tangents, out, *inputs, **params):
            # `inputs` also holds the extra positional parameters, after the arrays
            n = len(tangents)
            ts = []  # (a loop: a comprehension would make F a cell, made on every call)
            for t, x in zip(tangents, inputs[:n]):
                if t is None:  # (a Python number's zero is one: Note [Formulas on Python
                    t = type(x)(0) if type(x) in _NUMBERS else F.zeros_like(x)  # numbers])
                ts.append(t)
            extra = inputs[n:]
            return op.of(F)(*ts, *extra, **params) if not op.pack else \
                op.of(F)(ts, *extra, **params)
        self.jvp = jvp
        if not self.structure.linear:
            self.structure = linear()
        return self

    def defjvp_from_vjp(self):
        """Elementwise ops: ``jvp_i(t) = conj(vjp_i(conj(t)))`` (exact for holomorphic and real
        functions; a non-holomorphic op such as ``abs`` must declare its own jvp)."""
        op = self

        def jvp(F, tangents, out, *inputs, **params):
            total = None
            for i, t in enumerate(tangents):
                if t is None:
                    continue
                rule = op.vjp_rules[i]
                if rule is None:
                    continue
                if F.iscomplexobj(t) or _any_complex(F, inputs):
                    c = F.conj(rule(F, F.conj(t), out, *inputs, **params))
                else:
                    c = rule(F, t, out, *inputs, **params)
                total = c if total is None else total + c
            return total
        self.jvp = jvp
        if self.structure is GENERAL:
            self.structure = elementwise()
        return self


class Composite:
    """A function written with ``F`` from primitives (no rules of its own), registered so the
    property suite covers it: ``fn(F, *inputs, **params)``."""

    def __init__(self, name, fn, *, nin, domain, sample, method, kwarg_aliases, kind,
                 namespace=None, pack=False, notes=None, sequences=()):
        self.name = name
        self.namespace = namespace
        self.qualname = f"{namespace}.{name}" if namespace else name
        self.fn = fn
        self.nin = nin
        self.domain = domain
        self.sample = sample
        self.method = method
        self.kwarg_aliases = kwarg_aliases
        self.kind = kind
        self.pack = pack
        self.notes = notes or {}
        # inputs that take a sequence of arrays as such, not one array (Note [Sequences of
        # tensors] in core/namespace.py): a list there is not stacked
        self.sequences = frozenset(sequences)
        self.public = None
        self.differentiable = True

    def __repr__(self):
        return f"<ndgrad composite {self.qualname}>"

    def of(self, F):
        return _lookup(F, self.namespace, self.name)


def defop(name=None, *, kind, nin=1, nout=1, domain=None, differentiable=True, view=False,
          sample=None, method=None, pack=False, inplace_method=None, kwarg_aliases=None,
          notes=None, namespace=None, piecewise_constant=False):
    """Declare a primitive from its forward function (see the module docstring).

    Parameters
    ----------
    kind : str
        ELEMENTWISE, REDUCTION, SCAN, LINALG, SHAPE, INDEXING or COMPARISON.
    nin : int
        Number of array inputs (``VARIADIC`` for any number, e.g. ``broadcast_arrays``).
    nout : int
        Number of outputs (``VARIADIC`` when it depends on the parameters, e.g. ``split``).
    domain : Domain
        Where the property suite draws inputs (default: reals in [-2, 2]).
    differentiable : bool
        False for ops whose output never requires grad (comparisons, argmax).
    piecewise_constant : bool
        The output is constant between jumps (``floor``, ``round``): it requires grad when an
        input does, and every derivative is zero, from this flag (Note [Piecewise-constant
        ops]); the op declares no rules of its own.
    view : bool
        The output may share memory with the first input (shares its version counter). A view
        op also declares how to write a view's value back into its input (``defscatter``), or
        says in ``notes={"scatter": reason}`` why it cannot be written to.
    sample : callable(draw) -> (args, kwargs), optional
        Custom sampler for the property suite (parameters such as axes, shapes, indices).
    method : bool or str
        Also a Tensor method (under this name if a str).
    pack : bool
        The public function takes the array inputs as one sequence (``concat(arrays)``).
    inplace_method : str, optional
        Name of the in-place Tensor method (``"exp_"``); for elementwise ops.
    kwarg_aliases : dict, optional
        Extra keyword spellings accepted by the public function (``{"dim": "axis"}``).
    notes : dict, optional
        Declared exceptions with reasons, e.g. ``{"gradgrad": "derivative is a step"}``.
    namespace : {"linalg", "fft", "special"}, optional
        The op is public as ``ndgrad.<namespace>.<name>`` (not at the top level, and no Tensor
        method unless ``method`` names one); formulas call it as ``F.<namespace>.<name>``
        (Note [Namespaces]).
    """
    def deco(forward):
        opname = name or forward.__name__
        op = Op(opname, forward, kind=kind, nin=nin, nout=nout, domain=domain or Domain(),
                differentiable=differentiable, view=view, sample=sample,
                method=(namespace is None) if method is None else method,
                pack=pack, inplace_method=inplace_method,
                kwarg_aliases=kwarg_aliases or _torch_spellings(forward, kind),
                notes=notes, namespace=_check_namespace(namespace))
        if op.qualname in REGISTRY or op.qualname in COMPOSITES:
            raise ValueError(f"op {op.qualname!r} is already registered")
        if piecewise_constant:
            _piecewise_constant(op)
        REGISTRY[op.qualname] = op
        _declared(op)
        return op
    return deco


# Note [Piecewise-constant ops]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# An op whose output is constant between jumps (floor, ceil, trunc, round, floor_divide,
# special.gammasgn) is declared ``piecewise_constant=True``, and everything about its
# derivative follows from that flag, here, for all of them alike, as PyTorch treats floor,
# ceil, round, trunc and sign: the output requires grad when an input does (so
# ``autograd.grad`` through it gives zeros, not an error, and it composes with what follows),
# every input's cotangent and the output's tangent are zero (derivatives away from the jumps;
# at a jump there is none, and zero is what PyTorch returns), the Taylor coefficients are
# zero (each is the jvp's), and no output element depends on an input element for
# sparsity detection (its structure, Note [Op structure]). The rules read nothing, so a node
# saves nothing. Such an op declares no rule of its own (defvjp and defjvp refuse), so none
# can disagree with the others; the property suite checks each against finite differences
# away from the jumps, under vmap and in a Hessian (tests/test_op_properties.py). (``sign``
# is piecewise constant for real inputs only; its complex derivative is not zero, so it
# declares its own rules.)
def _piecewise_constant(op):
    op.piecewise_constant = True
    if op.nin == VARIADIC:
        op.vjp_each = _zero_cotangent_each
    else:
        op.vjp_rules = (_zero_cotangent,) * op.nin
    op.jvp = _zero_tangent
    op.structure = _PIECEWISE_CONSTANT


def _zero_cotangent(F, g, out, *inputs, **params):
    return F.zeros_like(g)  # (reads neither the inputs nor out: the node saves nothing)


def _zero_cotangent_each(F, i, g, out, *inputs, **params):
    return F.zeros_like(g)


def _zero_tangent(F, tangents, out, *inputs, **params):
    return F.zeros_like(out)


# Note [Namespaces]
# ~~~~~~~~~~~~~~~~~
# Ops of ndgrad.linalg, ndgrad.fft and ndgrad.special are declared like every other op, with
# ``namespace=``. Their registry key is the qualified name ("linalg.solve"), so two
# namespaces may both have a ``norm`` or a ``logsumexp``; the public function lives in its
# namespace module (ndgrad/scipy/linalg.py ...) and in the formula namespaces as ``F.linalg.solve``
# (a sub-namespace of F): generic code applies an op again with ``op.of(F)``, never
# ``getattr(F, op.name)``.
NAMESPACES = ("linalg", "fft", "special")


def sample_numpy():
    """NumPy, for op samplers and test references only: formulas never use it (they get
    ``F``), and op modules do not import it at module level."""
    import numpy
    return numpy


def _check_namespace(namespace):
    if namespace is not None and namespace not in NAMESPACES:
        raise ValueError(f"unknown op namespace {namespace!r}; one of {NAMESPACES}")
    return namespace


def _lookup(F, namespace, name):
    return getattr(getattr(F, namespace) if namespace else F, name)


def _torch_spellings(fn, kind):
    """PyTorch's keyword names accepted beside NumPy's: ``dim=`` for ``axis=`` wherever a
    function takes an axis (no NumPy function has a ``dim``), ``keepdim=`` for ``keepdims=``
    in reductions and scans."""
    params = inspect.signature(fn).parameters
    aliases = {}
    if "axis" in params:
        aliases["dim"] = "axis"
    if "keepdims" in params and kind in (REDUCTION, SCAN):
        aliases["keepdim"] = "keepdims"
    return aliases or None


def defcomposite(name=None, *, nin=1, domain=None, sample=None, method=None,
                 kwarg_aliases=None, kind=None, namespace=None, pack=False, notes=None,
                 sequences=()):
    """Register a function written with ``F`` from primitives (see :class:`Composite`);
    ``namespace`` and ``pack`` (the public function takes the arrays as one sequence,
    ``vstack(tup)``; the composite is written ``fn(F, *arrays, ...)``) and ``notes`` (declared
    exceptions of the property suite, with reasons) as for :func:`defop`. An array input
    given as a list holding tensors is stacked into one tensor, as NumPy reads an array-like
    (Note [Sequences of tensors] in core/namespace.py), except the inputs named in
    ``sequences``, which take a sequence of arrays as such (``select``'s ``condlist``)."""
    def deco(fn):
        cname = name or fn.__name__
        c = Composite(cname, fn, nin=nin, domain=domain or Domain(), sample=sample,
                      method=(namespace is None) if method is None else method, kind=kind,
                      kwarg_aliases=kwarg_aliases or _torch_spellings(fn, kind),
                      namespace=_check_namespace(namespace), pack=pack, notes=notes,
                      sequences=sequences)
        if c.qualname in COMPOSITES or c.qualname in REGISTRY:
            raise ValueError(f"{c.qualname!r} is already registered")
        c.__doc__ = fn.__doc__
        COMPOSITES[c.qualname] = c
        _declared(c)
        return c
    return deco


def defalias(alias, target):
    """Make ``alias`` another public name (and Tensor method, where ``target`` has one) of the
    op or composite ``target``: ``defalias("sub", "subtract")``. One declaration, two names;
    the formula namespaces ``F`` keep only the canonical name."""
    if alias in REGISTRY or alias in COMPOSITES or alias in ALIASES:
        raise ValueError(f"{alias!r} is already registered")
    ALIASES[alias] = target
    _declared(alias)
    return alias
