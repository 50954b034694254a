"""The compiled program's optimiser (ndgrad/functional/program.py): its rewrites (Note
[Program rewrites]), identity folding (Note [Identity folding]) and buffers (Note [Buffers
of a program]) keep eager ndgrad's values bit for bit, inf, NaN and the sign of zero
included; ``assume_finite`` folds more."""

from __future__ import annotations

import ast
import builtins
import io
import sys
import tokenize

import numpy as np
import pytest

import ndgrad as nd
from ndgrad.checks.strategies import Drawer, _accepts_kwargs, _default_sample
from ndgrad.core.ops import REGISTRY
from ndgrad.func import (compile, derivatives, grad, hessian, hessian_diag, jacfwd, jacrev,
                         jet, jvp, laplacian, vmap)
from ndgrad.functional import program as P
from ndgrad.functional.compiler import CompileError
from registry_harness import Sample, dtypes
from support import close

pytestmark = pytest.mark.cpu_only("identity folding and buffers are NumPy programs'")

RNG = np.random.default_rng(361)
N = 6
A0 = RNG.normal(size=(N, N))
A0 = (A0 + A0.T) / 2
X0 = RNG.normal(size=N)


def _bits_equal(a, b):
    """Equal values, NaN where NaN, and the same sign of every zero."""
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape and a.dtype == b.dtype
    if a.dtype.kind == "c":
        _bits_equal(a.real, b.real)
        _bits_equal(a.imag, b.imag)
        return
    np.testing.assert_array_equal(a, b)
    assert (np.signbit(a) == np.signbit(b))[~np.isnan(a)].all()


def _quartic(A):
    A = nd.tensor(A)

    def f(v):
        return (v ** 4).sum() / 4 + 0.5 * (v @ A @ v) + nd.sin(v).sum()
    return f


def _run_twice(compiled, *args):
    compiled(*args)               # (the trace's own values)
    return compiled(*args)        # the program's


@pytest.mark.parametrize("x", [X0, np.where(np.arange(N) == 2, np.inf, X0),
                               np.where(np.arange(N) == 4, np.nan, X0), -np.abs(X0)],
                         ids=["finite", "inf", "nan", "negative"])
@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")
def test_a_folded_hessian_is_eagers_bit_for_bit(x):
    """Identity folding keeps every value: a column poisoned by an infinite or NaN element
    (0 * inf) is NaN off the diagonal, as eager's."""
    f = _quartic(A0)
    h = compile(hessian(f))
    program = h.program(nd.tensor(x))
    assert any(s.name == "materialize" for s in program.steps)  # (it folded)
    assert not any(s.op is not None and s.op.name == "multiply" and
                   len(s.outs[0].shape) == 2 for s in program.steps)  # (no n^2 product)
    _bits_equal(_run_twice(h, nd.tensor(x)), hessian(f)(nd.tensor(x)))
    if np.isfinite(x).all():  # (and the closed form, to rounding)
        close(h(nd.tensor(x)), A0 + np.diag(3 * x ** 2 - np.sin(x)), atol=1e-14)


def test_a_fold_whose_zero_signs_could_show_is_refused():
    """A constant with -0.0 entries: ``0 * v + (-0.0)`` keeps the sign of the product, so the
    fold is refused by default (same bits as eager) and made with assume_finite (same values,
    up to the sign of those zeros)."""
    A = A0.copy()
    A[0, 1] = A[1, 0] = -0.0
    f = _quartic(A)
    x = nd.tensor(-np.abs(X0))
    exact = compile(hessian(f))
    _bits_equal(_run_twice(exact, x), hessian(f)(x))
    finite = compile(hessian(f), assume_finite=True)
    close(_run_twice(finite, x), hessian(f)(x), atol=0, rtol=0)
    assert any(s.name == "materialize" for s in finite.program(x).steps)


@pytest.mark.parametrize("make, batched", [
    (lambda f: jacfwd(grad(f)), False), (lambda f: jacrev(grad(f)), False),
    (lambda f: vmap(hessian(f)), True)], ids=["jacfwd(grad)", "jacrev(grad)", "vmap(hessian)"])
def test_folding_under_other_jacobians(make, batched):
    """Other Jacobians of a gradient fold their identity basis too: by default bit for bit
    with eager, with assume_finite equal in value (finite inputs)."""
    f = _quartic(A0)
    x = nd.tensor(np.stack([X0, -X0]) if batched else X0)
    g = make(f)
    _bits_equal(_run_twice(compile(g), x), g(x))
    close(_run_twice(compile(g, assume_finite=True), x), g(x), atol=0, rtol=0)


@pytest.mark.parametrize("c, dropped", [
    (1.0, True), (0.0, False), (-0.0, True)], ids=["times-one", "plus-zero", "plus-minus-zero"])
def test_identities_are_dropped_only_where_exact(c, dropped):
    """x * 1 and x + (-0.0) give x back bit for bit, and are dropped; x + 0.0 turns -0.0
    into 0.0, and is kept (the probe of Note [Program rewrites])."""
    one = nd.tensor(np.full(N, c))
    fun = (lambda x: x * one) if c == 1.0 else (lambda x: x + one)
    cf = compile(fun)
    x = nd.tensor(np.array([-0.0, 0.0, np.inf, -np.inf, np.nan, -1.5]))
    program = cf.program(x)
    assert (len(program.steps) == 0) == dropped, program.source
    _bits_equal(_run_twice(cf, x), fun(x))


def test_double_negation_is_dropped():
    cf = compile(lambda x: -(-nd.tanh(x)))  # noqa: B002  (the double negation itself)
    x = nd.tensor(X0)
    assert [s.name for s in cf.program(x).steps] == ["tanh"]
    _bits_equal(_run_twice(cf, x), np.tanh(X0))


def test_buffers_never_reuse_what_the_caller_receives_or_passes():
    """The program writes only into memory it made: the caller's argument is unchanged and
    two results of one call do not share memory."""
    def f(x):
        a = nd.exp(x)
        b = nd.sin(a)
        c = nd.cos(b) * 2
        return a, c

    cf = compile(f)
    x = nd.tensor(X0.copy())
    a1, c1 = _run_twice(cf, x)
    assert "out=" in cf.source(x)
    _bits_equal(x, X0)
    assert not np.shares_memory(a1.numpy(), c1.numpy())
    a2, c2 = cf(x)
    assert not np.shares_memory(a1.numpy(), a2.numpy())  # (each call its own)
    _bits_equal(a1, np.exp(X0))
    _bits_equal(c1, np.cos(np.sin(np.exp(X0))) * 2)


def test_a_wrong_rewrite_is_caught(monkeypatch):
    """Mutation: a rewrite that drops a negation (treats every one-input linear elementwise
    op as the identity) changes the compiled gradient, and the comparison with eager fails."""
    real = P._same_as

    def wrong(s, made_by, assume_finite):
        op = s.op
        if op is not None and op.kind == "elementwise" and op.nin == 1 and \
                op.structure.algebra is P.Algebra.LINEAR and type(s.args[0]) is P.Value:
            return s.args[0]
        return real(s, made_by, assume_finite)

    monkeypatch.setattr(P, "_same_as", wrong)
    g = compile(grad(lambda x: (nd.exp(-x) * x).sum()))
    expected = np.exp(-X0) * (1 - X0)
    with pytest.raises(AssertionError):
        close(_run_twice(g, nd.tensor(X0)), expected, atol=1e-12)
    monkeypatch.setattr(P, "_same_as", real)  # (and the right rewrites pass)
    close(_run_twice(compile(grad(lambda x: (nd.exp(-x) * x).sum())), nd.tensor(X0)),
          expected, atol=1e-12)


def test_backward_through_a_compiled_function_runs_compiled_programs():
    """compile(f)(w).backward() records one node whose backward is the compiled pullback;
    the gradient and, with create_graph, the second derivative equal eager's."""
    def f(x):
        return (nd.tanh(x) ** 2).sum() * x.sum()

    cf = compile(f)
    w = nd.tensor(X0, requires_grad=True)
    y = cf(w)
    assert type(y.grad_fn).__name__ == "_CompiledCallBackward"
    y.backward()
    w_eager = nd.tensor(X0, requires_grad=True)
    f(w_eager).backward()
    close(w.grad, w_eager.grad, atol=0, rtol=1e-15)
    assert list(cf.__dict__["_pullbacks"][1]._cache)  # (the pullback's program was made)
    for x in (w, w_eager):
        x.grad = None
    g, = nd.autograd.grad(cf(w), w, create_graph=True)
    h, = nd.autograd.grad(g.sum(), w)
    g_eager, = nd.autograd.grad(f(w_eager), w_eager, create_graph=True)
    close(h, nd.autograd.grad(g_eager.sum(), w_eager)[0], atol=1e-13)


def test_random_draws_under_vmap_are_steps_of_the_program():
    """vmap's per-element draws are made by the levels outside it, so a compiled vmap draws
    afresh on each call, eager's numbers from the same generator state (they were baked
    into the program as constants)."""
    f = vmap(lambda x: x + nd.randn(3), randomness="different")
    cf = compile(f)
    X = nd.zeros((2, 3))
    nd.manual_seed(3)
    eager = [f(X).numpy().copy() for _ in range(3)]
    nd.manual_seed(3)
    compiled = [cf(X).numpy().copy() for _ in range(3)]
    for a, b in zip(compiled, eager):
        _bits_equal(a, b)
    assert any(s.kind == "random" for s in cf.program(X).steps)


def test_a_negation_moves_onto_its_constant():
    """-(c * x) is (-c) * x bit for bit (but for NaN's sign): one step fewer, the constant
    negated once when the program is built."""
    c = nd.tensor(np.array([3.0, -2.0, 0.0, 1.5, -0.0, 2.0]))
    fun = lambda x: -(c * nd.tanh(x))  # noqa: E731
    cf = compile(fun)
    x = nd.tensor(np.array([0.5, -1.0, np.inf, -0.0, np.nan, 2.0]))
    assert [s.name for s in cf.program(x).steps] == ["tanh", "multiply"]
    _bits_equal(_run_twice(cf, x), fun(x))


def _rosenbrock(x):
    return (100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2).sum()


def _hvp(x, v):
    return jvp(grad(_rosenbrock), (x,), (v,))[1]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_scatters_write_into_memory_the_program_made(dtype):
    """A scatter whose base the program made and reads no more writes into it (index_add's
    forward without its copy: Note [Buffers of a program]); one onto a constant of zeros
    writes into fresh zeros. The Hessian-vector product of Rosenbrock's function has three
    such scatters; its values are eager's bit for bit, in float32 too (a negated Python
    constant stays a Python number: it was a strong int64 that made the result float64;
    Note [Formulas on Python numbers])."""
    x = nd.tensor(RNG.normal(size=9).astype(dtype))
    v = nd.tensor(RNG.normal(size=9).astype(dtype))
    h = compile(_hvp)
    source = h.source(x, v)
    assert source.count("index_add_into(") == 3 and "index_add(" not in source
    assert "B.zeros((9,)" in source
    # (the zero tangent of 1 in 1 - x is a Python 0: no float64 step and cast back in float32)
    assert "astype" not in source and "subtract(0, " in source
    got = _run_twice(h, x, v)
    assert got.dtype == dtype
    _bits_equal(got, _hvp(x, v))
    _bits_equal(h(x * 1.5, v), _hvp(x * 1.5, v))


def test_a_scatter_does_not_write_into_what_is_read_later_or_passed():
    """A scatter's base that a later step or the caller reads, or the caller's own array,
    keeps its values: the scatter copies it."""
    def f(x):
        y = nd.exp(x)
        z = nd.index_add(y, x[:2] * 3, index=slice(0, 2))  # (y read again below)
        w = nd.index_add(x, 1.0, index=[0, 0])             # (x: the caller's)
        return y * 2, z, w

    cf = compile(f)
    x0 = X0.copy()
    source = cf.source(nd.tensor(x0))
    assert "index_add_into(" not in source and source.count("index_add(") == 2
    for got, want in zip(_run_twice(cf, nd.tensor(x0)), f(nd.tensor(X0))):
        _bits_equal(got, want)
    _bits_equal(x0, X0)


def test_a_scatter_into_a_dying_base_is_eagers_where_values_view_it():
    """The values a scatter adds may view its base (``y[1:]`` into ``y``): the base is then
    read by the same step, so the scatter copies it."""
    def f(x):
        y = nd.exp(x)
        return nd.index_add(y, y[:-1], index=slice(1, None))

    cf = compile(f)
    assert "index_add_into(" not in cf.source(nd.tensor(X0))
    _bits_equal(_run_twice(cf, nd.tensor(X0)), f(nd.tensor(X0)))


@pytest.mark.parametrize("a, folded", [(100.0, True), (-1.0, True), (0.5, False),
                                       (0.0, False)])
@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning",
                            "ignore:invalid value encountered:RuntimeWarning")
def test_two_products_are_one_only_where_exact(a, folded):
    """``a * (2 * y)`` is ``(2a) * y`` for ``|a| >= 1``: where ``2 y`` overflows, so does
    ``2a y``. With ``|a| < 1`` it is not (``0.5 * (2 e^709.7)`` is inf, ``1.0 e^709.7`` is
    not; ``0 * inf`` is NaN): the two products stay. Subnormal and zero y included."""
    fun = lambda x: a * (2 * nd.exp(x))  # noqa: E731
    cf = compile(fun)
    x = nd.tensor(np.array([709.7, -709.7, 0.75, -np.inf, np.inf, np.nan, -745.0, 3.0]))
    names = [s.name for s in cf.program(x).steps]
    assert names.count("multiply") == (1 if folded else 2), names
    _bits_equal(_run_twice(cf, x), fun(x))


def test_uniform_constant_arrays_are_scalars():
    """The gradient of a sum broadcasts ones; folded with a constant factor they make arrays
    of one value. In an elementwise step whose other input gives the shape, such an array is
    that value, a number: the program keeps no array of the input's size. One that gives
    the output its shape stays an array."""
    n = 50
    g = compile(grad(lambda x: (3.0 * nd.sin(x)).sum()))
    x = nd.tensor(RNG.normal(size=n))
    read = [a.value for s in g.program(x).steps for a in s.args if type(a) is P.Const]
    assert read and all(np.size(c) == 1 for c in read)
    _bits_equal(_run_twice(g, x), grad(lambda x: (3.0 * nd.sin(x)).sum())(x))
    fun = lambda x: x + nd.full((3, 4), 2.0) * 3  # noqa: E731
    cf = compile(fun)
    x = nd.tensor(RNG.normal(size=4))
    _bits_equal(_run_twice(cf, x), fun(x))
    assert any(np.shape(a.value) == (3, 4) for s in cf.program(x).steps for a in s.args
               if type(a) is P.Const)


def _code_mentions_ndgrad(src):
    """Whether ndgrad is named in ``src`` outside its strings (the docstring, and the error
    messages of the copied forwards, which are eager ndgrad's)."""
    strings = {tokenize.STRING, getattr(tokenize, "FSTRING_MIDDLE", tokenize.STRING)}
    return any("ndgrad" in t.string and t.type not in strings
               for t in tokenize.generate_tokens(io.StringIO(src).readline))


def _run_standalone(tmp_path, src, name, *arrays):
    """The standalone module ``src`` run in a fresh interpreter that cannot import ndgrad
    (``python -I``): the outputs of its function ``name`` on ``arrays``."""
    import subprocess
    import sys

    assert not _code_mentions_ndgrad(src)
    (tmp_path / "prog.py").write_text(
        src + "\nimport sys\nassert 'ndgrad' not in sys.modules\n"
        f"outs = {name}(*[numpy.load(f) for f in sys.argv[2:]])\n"
        "numpy.savez(sys.argv[1], *outs)\n")
    files = []
    for k, a in enumerate(arrays):
        np.save(tmp_path / f"in{k}.npy", a)
        files.append(str(tmp_path / f"in{k}.npy"))
    subprocess.run([sys.executable, "-I", str(tmp_path / "prog.py"), str(tmp_path / "out.npz"),
                    *files], check=True, cwd=tmp_path, timeout=60)
    with np.load(tmp_path / "out.npz") as z:
        return [z[f"arr_{k}"] for k in range(len(z.files))]


def test_a_standalone_program_runs_without_ndgrad(tmp_path):
    """source(standalone=True) is a module that imports NumPy only (run in a fresh
    interpreter that cannot import ndgrad) and gives the compiled gradient's values."""
    def loss(x):
        y = x
        for _ in range(3):
            y = nd.tanh(y * 1.0001 + 0.5)
        return (y ** 2).sum() + (x @ nd.tensor(A0) @ x) / 2

    g = compile(grad(loss))
    x = nd.tensor(X0)
    out = _run_standalone(tmp_path, g.source(x, standalone=True), "loss", X0)
    close(out[0], grad(loss)(x), atol=0, rtol=0)


def _rosenbrock(x):
    return (100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2).sum()


def test_a_standalone_hessian_vector_product_of_slices(tmp_path):
    """The Hessian-vector product of the Rosenbrock function (slices: getitem; their
    derivatives: index_add) stands alone, the helpers of ndgrad's its forwards call copied
    in, and gives the compiled program's values bit for bit."""
    hvp = compile(lambda x, v: jvp(grad(_rosenbrock), (x,), (v,))[1])
    x, v = np.linspace(-1.2, 1.5, N), RNG.normal(size=N)
    src = hvp.source(nd.tensor(x), nd.tensor(v), standalone=True)
    assert "def _getitem_" in src and "def _index_add_" in src
    defs = [line.split("(")[0] for line in src.splitlines() if line.startswith("def ")]
    assert defs[-1] == "def program" and defs.index("def is_basic") < \
        min(k for k, d in enumerate(defs) if d.startswith("def _getitem_"))  # helpers first
    out = _run_standalone(tmp_path, src, "program", x, v)
    _run_twice(hvp, nd.tensor(x), nd.tensor(v))
    program = hvp.program(nd.tensor(x), nd.tensor(v))
    _bits_equal(out[0], program.run(x.copy(), v.copy())[0])
    close(out[0], jvp(grad(_rosenbrock), (nd.tensor(x),), (nd.tensor(v),))[1], atol=0, rtol=0)


def test_a_program_that_cannot_stand_alone_says_which_step():
    e = compile(lambda a: nd.linalg.slogdet(a)[1] + 1.0)
    with pytest.raises(ValueError, match=r"standalone=True: the forward of linalg\.slogdet "
                       r"uses SlogdetResult \(the class"):
        e.source(nd.tensor(A0), standalone=True)
    r = compile(lambda x: x + nd.randn(N))
    with pytest.raises(ValueError, match="draws random numbers"):
        r.source(nd.tensor(X0), standalone=True)


def test_a_standalone_program_of_scipys_functions_imports_scipy():
    """A forward of SciPy's functions (``B.special``) calls SciPy's module, imported by the
    standalone program, which says it needs SciPy; its values are the compiled program's."""
    g = compile(grad(lambda x: (nd.special.erf(x) * nd.sigmoid(x)).sum()))
    x = nd.tensor(X0)
    src = g.source(x, standalone=True)
    assert "import scipy.special as special" in src and "needs NumPy and SciPy" in src
    namespace = {}
    exec(builtins.compile(src, "<standalone>", "exec"), namespace)  # noqa: S102
    _bits_equal(namespace["program"](X0.copy())[0], _run_twice(g, x))
    assert "needs NumPy only" in compile(grad(lambda x: nd.tanh(x).sum())).source(
        x, standalone=True)


class _Rejected(Exception):
    pass


class _SeededDrawer(Drawer):
    """An op sampler's Drawer on one seeded NumPy generator, without a hypothesis run (one
    run per op costs more than the whole check): equal shapes where broadcastable ones are
    asked for, small sides."""

    def __init__(self, seed, dtype):
        super().__init__(None, dtype, max_side=3, max_dims=2)
        self._gen = np.random.default_rng(seed)

    def shape(self, min_dims=0, max_dims=None, min_side=1, max_side=None):
        max_dims = self._max_dims if max_dims is None else max_dims
        max_side = self._max_side if max_side is None else max_side
        ndim = self.integers(min_dims, max(min_dims, max_dims))
        return tuple(self.integers(min_side, max(min_side, max_side)) for _ in range(ndim))

    def shapes(self, n, min_dims=0, max_dims=None, min_side=1, max_side=None):
        return [self.shape(min_dims, max_dims, min_side, max_side)] * n

    def _rng(self):
        return np.random.default_rng(self.integers(0, 2 ** 32 - 1))

    def integers(self, low, high):
        return int(self._gen.integers(low, high, endpoint=True))

    def choice(self, seq):
        seq = list(seq)
        return seq[self.integers(0, len(seq) - 1)]

    def boolean(self):
        return bool(self.integers(0, 1))

    def axes(self, ndim):
        chosen = [a for a in range(ndim) if self.boolean()]
        return tuple(a - ndim if self.boolean() else a for a in chosen)

    def permutation(self, n):
        return tuple(int(i) for i in self._gen.permutation(n))

    def reject(self):
        raise _Rejected


def _one_sample(op, dtype):
    """A small sample of ``op`` (with a floating input where it is differentiable)."""
    for seed in range(50):
        d = _SeededDrawer(seed, dtype)
        try:
            args, kwargs = op.sample(d) if op.sample is not None else _default_sample(op, d)
        except _Rejected:
            continue
        s = Sample(op, args, kwargs)
        valid = op.domain.valid
        if valid is not None and not np.all(valid(*s.arrays, **kwargs) if
                                            _accepts_kwargs(valid) else valid(*s.arrays)):
            continue
        if s.pos or not op.differentiable:
            return s
    return None


def _standalone_equals_compiled(cf, args, what):
    """``cf``'s program for ``args`` as a standalone module (exec'd in a namespace without
    ndgrad) gives the program's values bit for bit; True, or False where the module cannot
    be made (a ValueError naming a step of the program), or None where the function is not
    compiled (it reads traced values: a CompileError, the compile tests' concern)."""
    try:
        program = cf.program(*args)
    except CompileError:
        return None
    arrays = [t._data for t in cf._split(args, {})[3]]
    try:
        src = cf.source(*args, standalone=True)
    except ValueError as e:
        named = {st.op.qualname for st in program.steps if st.op is not None}
        assert str(e).startswith("standalone=True: ") and any(
            f"the forward of {n} " in str(e) or f"step {n} " in str(e) for n in named) or \
            "draws random numbers" in str(e), f"{what}: {e}"
        return False
    assert not _code_mentions_ndgrad(src), what
    imported = {a.name.split(".")[0] for n in ast.parse(src).body
                if isinstance(n, (ast.Import, ast.ImportFrom))
                for a in (n.names if isinstance(n, ast.Import) else [ast.alias(n.module)])}
    assert imported <= {"numpy", "scipy"} | sys.stdlib_module_names, f"{what}: imports {imported}"
    namespace = {"__name__": "standalone"}
    exec(builtins.compile(src, "<standalone>", "exec"), namespace)  # noqa: S102
    name = [n.name for n in ast.parse(src).body if isinstance(n, ast.FunctionDef)][-1]
    got = namespace[name](*[a.copy() for a in arrays])
    expected = [np.array(o, copy=True) if isinstance(o, np.ndarray) else o
                for o in program.run(*[a.copy() for a in arrays])]
    assert len(got) == len(expected), what
    for g, e in zip(got, expected):
        assert type(g) is type(e), f"{what}: {type(g).__name__}, compiled {type(e).__name__}"
        _bits_equal(g, e)
    return True


def test_every_op_standalone_or_refused():
    """Every registered primitive, one small sample per dtype: ``compile(f)`` (f the op) and
    ``compile(grad(sum f))`` either stand alone, with the compiled program's values bit for
    bit, or are refused with a ValueError naming the step. Getitem, index_add and index_put
    (the helpers of indexing) stand alone."""
    covered = set()
    for name in sorted(REGISTRY):
        op = REGISTRY[name]
        for dtype in dtypes(op):
            s = _one_sample(op, dtype)
            if s is None:
                continue
            args = s.inputs()
            what = f"compile(f) of {s!r}"
            if _standalone_equals_compiled(compile(lambda *a, s=s: s.call(list(a))), args,
                                           what):
                covered.add(name)
            if not (op.differentiable and s.pos):
                continue

            def total(*a, s=s):
                outs = [o for o in s.call(list(a))
                        if isinstance(o, nd.Tensor) and o.dtype.kind in "fc"]
                return sum(nd.sum(nd.real(o) if o.dtype.kind == "c" else o) for o in outs)
            _standalone_equals_compiled(compile(grad(total, argnums=tuple(s.pos))), args,
                                        f"compile(grad(sum f)) of {s!r}")
    assert {"getitem", "index_add", "index_put", "take", "sort", "std", "linalg.solve",
            "linalg.vector_norm", "linalg.matrix_exp", "special.erf", "sigmoid"} <= covered


def test_a_table_its_module_changes_is_no_constant(tmp_path, monkeypatch):
    """A dict of literals a standalone module copies must be one its module never changes in
    place (a cache is state): ``_mutated`` finds items assigned or deleted and mutating
    methods called, not reads."""
    from ndgrad.functional import standalone
    (tmp_path / "tables_mod.py").write_text(
        "TABLE = {1: 2.0}\nCACHE = {}\nMEMO = {}\nGONE = {1: 1}\n"
        "def f(k):\n    CACHE[k] = TABLE[k]\n    MEMO.setdefault(k, 1)\n    del GONE[k]\n"
        "    return TABLE.get(k)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import tables_mod  # noqa: F401
    assert standalone._mutated("tables_mod") == {"CACHE", "MEMO", "GONE"}
    assert standalone._mutated("no_such_module_here") is None


def test_a_complex_product_is_not_written_over_its_input():
    """NumPy rounds a complex product written over one of its inputs differently (by an ulp,
    for one element): the program gives such a step fresh memory, and eager's bits."""
    f = lambda x, c: (x + 0.0) * c  # noqa: E731  (x + 0.0: a product of the program's own)
    b = 0.54784675 - 0.92085314j
    x, c = nd.tensor(np.array([1 / b])), nd.tensor(np.array([b]))
    cf = compile(f)
    _bits_equal(_run_twice(cf, x, c), f(x, c))


def test_an_index_written_twice_is_one_step():
    """Two equal slices are one index: x[1:] read twice is one step (common subexpressions
    compare an index by its value, an array constant by its bytes and layout)."""
    cf = compile(lambda x: nd.sin(x[1:]) * x[1:])
    x = nd.tensor(X0)
    assert [s.name for s in cf.program(x).steps].count("getitem") == 1
    _bits_equal(_run_twice(cf, x), np.sin(X0[1:]) * X0[1:])


_LATER = None


def test_a_global_bound_after_compile_is_watched():
    """A global the function reads that is None when compile is called and a tensor later,
    then rebound, gives a new trace each time (never a stale constant); ndgrad's own
    modules' globals are not watched (a Hessian's call costs about 2 us over its program)."""
    global _LATER
    cg = compile(grad(lambda x: (x * _LATER).sum() ** 2))
    _LATER = nd.tensor(X0)
    x = nd.tensor(np.ones(N))
    close(_run_twice(cg, x), 2 * (X0.sum()) * X0, atol=1e-13)
    _LATER = nd.tensor(2 * X0)
    close(cg(x), 2 * (2 * X0.sum()) * 2 * X0, atol=1e-13)
    assert all(not (n is not None and w.get("__name__", "").startswith("ndgrad."))
               for w, n in cg._sources)


@pytest.mark.parametrize("kwargs, match", [
    ({"static_argnums": "x"}, "static_argnums must be ints"),
    ({"static_argnums": (1.5,)}, "static_argnums must be ints"),
    ({"static_argnames": (1,)}, "static_argnums must be ints and static_argnames strs"),
    ({"cache_size": True}, "cache_size must be a positive int")])
def test_bad_compile_arguments_are_named(kwargs, match):
    with pytest.raises(ValueError, match=f"ndgrad.func.compile: {match}"):
        compile(lambda x: x, **kwargs)


def test_grad_of_a_compiled_function_runs_its_compiled_pullback():
    """grad(compile(f)) records the compiled call as one node at the grad level, whose
    backward is the compiled pullback (made once, then called); nested grads differentiate
    it again; under vmap it runs as f. All equal eager's."""
    def f(x):
        return (nd.tanh(x) ** 2).sum() * x.sum()

    cf = compile(f)
    x = nd.tensor(X0)
    close(grad(cf)(x), grad(f)(x), atol=0, rtol=1e-15)
    pullback = cf.__dict__["_pullbacks"][1]
    assert list(pullback._cache)                        # (its program was made)
    close(grad(cf)(nd.tensor(2 * X0)), grad(f)(nd.tensor(2 * X0)), atol=0, rtol=1e-15)
    close(grad(lambda x: grad(cf)(x).sum())(x), grad(lambda x: grad(f)(x).sum())(x),
          atol=1e-13)
    close(vmap(grad(cf))(nd.tensor(np.stack([X0, -X0]))),
          vmap(grad(f))(nd.tensor(np.stack([X0, -X0]))), atol=1e-14)


def test_a_solver_that_reads_values_names_the_users_line():
    """ndgrad.optimize runs SciPy's solver on the values: under compile that is a read of a
    traced value, refused naming the user's line (this file) and the SciPy line it went
    through, not SciPy's line as if it were the user's."""
    def fit(a):
        return nd.optimize.minimize(lambda x, a: ((x - a) ** 2).sum(), nd.zeros(3),
                                    args=(a,)).x

    with pytest.raises(CompileError, match=r"at .*test_compile_program\.py:\d+ \(through "
                                        r"scipy/optimize/"):
        compile(fit)(nd.tensor([1.0, 2.0, 3.0]))


def _inplace_inside(x):
    y = x * 1.0
    y += nd.sin(x)
    w = y[1:4]
    w.mul_(nd.cos(x[:3]))
    return (y * y).sum()


@pytest.mark.parametrize("make", [hessian, lambda f: jacfwd(grad(f)),
                                  lambda f: jacfwd(lambda x: grad(f)(x) * x)],
                         ids=["hessian", "jacfwd(grad)", "jacfwd(grad * x)"])
def test_in_place_writes_under_forward_jacobians(make):
    """Under jacfwd, an in-place write updates the tangent held by vmap's identity basis, a
    tensor the transform made itself: allowed (it was refused as a capture), and the
    constants read before the write keep their values (they changed with it: a wrong
    Hessian). Note [Writes into tensors the trace did not make]."""
    g = make(_inplace_inside)
    cg = compile(g)
    for x in (X0, 1.7 * X0):
        close(_run_twice(cg, nd.tensor(x)), g(nd.tensor(x)), atol=1e-12, rtol=1e-12)


class _Model:
    def __init__(self):
        self.w = nd.tensor(X0)

    def step(self, x):
        self.w.mul_(0.5)          # the caller's tensor, reached through an attribute
        return (self.w * x).sum()


def test_a_write_into_a_tensor_reached_through_an_attribute_raises():
    m = _Model()
    with pytest.raises(CompileError, match="neither made nor received as an argument"):
        compile(m.step)(nd.ones(N))


def test_an_index_computed_from_traced_values_is_a_value_of_the_program():
    """An index tensor computed inside (argsort), used as an op's parameter directly or in a
    rule (sort's pullback under jacrev, where vmap batches it), is a value of the program,
    not its array at the trace (the second input, with another order, got the first's)."""
    take = compile(lambda x: x[nd.argsort(x)] * 2)
    def f(x):
        return (nd.sort(nd.sin(x), axis=0)[::-1] ** 2).sum()
    h = compile(jacrev(grad(f)))
    for x in (X0, X0[::-1] * 1.1):
        close(_run_twice(take, nd.tensor(x)), np.sort(x) * 2, atol=0)
        close(_run_twice(h, nd.tensor(x)), jacrev(grad(f))(nd.tensor(x)), atol=1e-13)


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")
def test_scatters_onto_zeros_are_accumulated_bit_for_bit():
    """The cotangents of x[1:], x[:-1] and x[2:] are scatters onto zeros summed: the program
    scatters each into the sum so far (no zeros made, no sum pass) and keeps eager's bits,
    -0.0, inf and NaN included."""
    f = lambda x: ((x[1:] * x[:-1]).sum() + (nd.sin(x[2:]) * x[:-2]).sum())  # noqa: E731
    g = compile(grad(f))
    x = nd.tensor(np.array([-0.0, 1.5, -0.0, np.inf, -2.0, 0.0]))
    program = g.program(x)
    adds = [s for s in program.steps if s.op is not None and s.op.name == "add"]
    scatters = [s for s in program.steps if s.op is not None and s.op.name == "index_add"]
    assert not adds and scatters and any(type(s.args[0]) is P.Value for s in scatters)
    _bits_equal(_run_twice(g, x), grad(f)(x))
    _bits_equal(g(nd.tensor(X0)), grad(f)(nd.tensor(X0)))


def test_jvp_of_a_compiled_function_runs_its_compiled_pushforward():
    """Under forward mode only (func.jvp, a dual level), and under func.grad around it, a
    compiled function's call is one node whose jvp is the compiled pushforward of f; the
    tangents, and the gradient of a tangent, equal eager's."""
    def f(x, y):
        return nd.sin(x) * y, (x * y).sum()

    cf = compile(f)
    x, y, v = nd.tensor(X0), nd.tensor(X0[::-1].copy()), nd.tensor(np.arange(N) * 1.0)
    for got, want in zip(jvp(cf, (x, y), (v, v))[1], jvp(f, (x, y), (v, v))[1]):
        close(got, want, atol=0, rtol=1e-15)
    assert list(cf.__dict__["_pushforwards"][2]._cache)   # (its program was made)
    tangent = lambda g: lambda x: jvp(lambda x: g(x, y)[1], (x,), (v,))[1]  # noqa: E731
    close(grad(tangent(cf))(x), grad(tangent(f))(x), atol=1e-13)


def test_jacrev_of_grad_of_a_compiled_function():
    """jacrev(grad(compile(f))): the compiled pullback is traced below every level (a vmap's
    cotangents outside; the tensors the pullback makes were lifted to the outer levels and
    refused as their values), and the Hessian equals eager's."""
    def f(x):
        y = x * 1.0
        w = y[1:4]
        w.mul_(nd.cos(x[:3]))
        return (y * y).sum()

    cf = compile(f)
    for x in (X0, 1.4 * X0):
        close(jacrev(grad(cf))(nd.tensor(x)), jacrev(grad(f))(nd.tensor(x)), atol=1e-12)


# ------------------------------------- transforms over a compiled function run its programs
def _sin_x(x):
    """x -> sin(x) * x, elementwise (its Jacobian is diagonal: cos(x) x + sin(x))."""
    _sin_x.calls += 1
    return nd.sin(x) * x


def _dsin_x(x):
    return np.cos(x) * x + np.sin(x)


def _d2sin_x(x):
    return 2 * np.cos(x) - np.sin(x) * x


def _d3sin_x(x):
    return -3 * np.sin(x) - np.cos(x) * x


def _second_coefficient(c):
    return lambda x: jet(c, (x,), ([nd.ones_like(x), nd.zeros_like(x)],))[1][1]


XS = RNG.normal(size=(3, N))
T0 = RNG.normal(size=N)
_sum = lambda f: lambda x: f(x).sum()  # noqa: E731

# (name, the transform over a compiled function, its argument, the closed form)
OVER_COMPILED = [
    ("vmap", lambda c: vmap(_sum(c)), XS, lambda x: (np.sin(x) * x).sum(1)),
    ("vmap in_dims=1", lambda c: vmap(_sum(c), in_dims=1), XS.T, lambda x: (np.sin(x) * x)
     .sum(0)),
    ("vmap of an unbatched argument", lambda c: lambda x: vmap(lambda a, b: c(a) * c(b),
                                                               in_dims=(0, None))(x, x[0]),
     XS, lambda x: np.sin(x) * x * np.sin(x[0]) * x[0]),
    ("vmap(vmap)", lambda c: vmap(vmap(c)), XS, lambda x: np.sin(x) * x),
    ("vmap(grad)", lambda c: vmap(grad(_sum(c))), XS, _dsin_x),
    ("grad(vmap)", lambda c: grad(lambda x: vmap(_sum(c))(x).sum()), XS, _dsin_x),
    ("jacrev", lambda c: jacrev(c), X0, lambda x: np.diag(_dsin_x(x))),
    ("jacfwd", lambda c: jacfwd(c), X0, lambda x: np.diag(_dsin_x(x))),
    ("hessian", lambda c: hessian(_sum(c)), X0, lambda x: np.diag(_d2sin_x(x))),
    ("vmap(hessian)", lambda c: vmap(hessian(_sum(c))), XS,
     lambda x: np.stack([np.diag(_d2sin_x(r)) for r in x])),
    ("vmap(jvp)", lambda c: vmap(lambda x: jvp(c, (x,), (nd.tensor(T0),))[1]), XS,
     lambda x: _dsin_x(x) * T0),
    ("jacfwd(grad)", lambda c: jacfwd(grad(_sum(c))), X0, lambda x: np.diag(_d2sin_x(x))),
    ("jet", _second_coefficient, X0, _d2sin_x),
    ("derivatives", lambda c: lambda x: derivatives(c, x, 3)[3], X0, _d3sin_x),
    ("grad(jet)", lambda c: grad(lambda x: _second_coefficient(c)(x).sum()), X0, _d3sin_x),
    ("vmap(jet)", lambda c: vmap(_second_coefficient(c)), XS, _d2sin_x),
    ("laplacian", lambda c: laplacian(_sum(c)), X0, lambda x: _d2sin_x(x).sum()),
    ("vmap(laplacian)", lambda c: vmap(laplacian(_sum(c))), XS,
     lambda x: _d2sin_x(x).sum(1)),
    ("hessian_diag", lambda c: hessian_diag(_sum(c)), X0, _d2sin_x),
]


@pytest.mark.parametrize("name, transform, x, closed_form", OVER_COMPILED,
                         ids=[c[0] for c in OVER_COMPILED])
def test_transforms_over_a_compiled_function_run_its_programs(name, transform, x,
                                                              closed_form):
    """vmap, jacrev, jacfwd, hessian, jet, the Forward Laplacian and their compositions
    over ``compile(f)``: the closed form's values, and from the second call on f's Python
    body never runs (a batched program under vmap, the compiled pullback and pushforward
    under the derivatives, f's program through a level of the same kind under a jet or a
    Laplacian: Note [Differentiating a compiled function])."""
    fun = transform(compile(_sin_x))
    _sin_x.calls = 0
    close(fun(nd.tensor(x)), closed_form(x), atol=1e-13)
    assert _sin_x.calls > 0                       # (traced)
    _sin_x.calls = 0
    close(fun(nd.tensor(1.5 * x)), closed_form(1.5 * x), atol=1e-13)
    assert _sin_x.calls == 0                      # (its programs ran)


def test_vmap_of_a_compiled_function_draws_as_eager_code_does():
    """A batched program draws what eager vmap draws (one draw of the batch's shape, for
    randomness="different"), fresh on each call; under a vmap that is not the argument's,
    whose elements eager code draws for too, the function runs as eager code."""
    def f(x):
        return x * nd.randn(N)

    xs = nd.tensor(XS)
    batched = vmap(f, randomness="different")
    nd.manual_seed(3)
    eager = [batched(xs).numpy().copy() for _ in range(3)]
    compiled = vmap(compile(f), randomness="different")
    nd.manual_seed(3)
    got = [compiled(xs).numpy().copy() for _ in range(3)]
    for a, b in zip(got, eager):
        close(a, b, atol=0)
    assert not np.allclose(got[1], got[2])
    outer = vmap(lambda x: vmap(compile(f), randomness="different")(xs) * x,
                 randomness="different")
    nd.manual_seed(4)
    a = outer(nd.tensor(T0)).numpy()
    nd.manual_seed(4)
    b = vmap(lambda x: batched(xs) * x, randomness="different")(nd.tensor(T0)).numpy()
    close(a, b, atol=0)


# ------------------------ a tensor a derivative follows, read as a constant, is followed
def test_a_captured_value_of_a_transform_is_differentiated():
    """A compiled function that reads, from its closure, a value of a transform outside the
    call (a dual level's, a func.grad level's, a vmap's), directly or through a constant it
    folds, runs as eager code: the derivative through it is kept (Note [Tensors a
    derivative follows through a constant]; the tangent was x, not 2x)."""
    x0, t = nd.tensor(X0), nd.tensor(T0)
    close(jvp(lambda x: compile(lambda z: z * x)(x), (x0,), (t,))[1], 2 * X0 * T0,
          atol=1e-15)
    close(jvp(lambda x: compile(lambda z: z * (x * 2.0))(x), (x0,), (t,))[1],
          4 * X0 * T0, atol=1e-15)
    close(grad(lambda x: compile(lambda z: (z * x).sum())(x))(x0), 2 * X0, atol=1e-15)
    close(vmap(lambda x: compile(lambda z: (z * x).sum())(x))(nd.tensor(XS)),
          (XS * XS).sum(1), atol=1e-14)
    close(jacfwd(lambda x: compile(lambda z: nd.sin(z) * x)(x))(x0),
          np.diag(np.cos(X0) * X0 + np.sin(X0)), atol=1e-15)


def test_a_captured_tensor_that_requires_grad_gets_its_gradient():
    """A captured tensor that requires grad (a closure's, an attribute's) gets its gradient
    on every call, also when it is made to require grad after the first trace; an
    argument's gradient through a captured function of it is complete (it was w's part
    only)."""
    x0 = nd.tensor(X0)
    w = nd.tensor(T0)
    cf = compile(lambda z: (z * w).sum())
    close(cf(x0), (X0 * T0).sum(), atol=1e-14)
    w.requires_grad_()
    for _ in range(2):
        w.grad = None
        cf(x0).backward()
        close(w.grad, X0, atol=0)

    class Model:
        pass

    m = Model()
    m.w = nd.tensor(T0)
    cm = compile(lambda z: (nd.sin(z) * m.w).sum())
    cm(x0)
    cm(x0)
    m.w.requires_grad_()
    cm(x0).backward()
    close(m.w.grad, np.sin(X0), atol=1e-15)
    x = nd.tensor(X0, requires_grad=True)

    def loss():
        y = x * 3.0
        return compile(lambda z: (z * y).sum())(x)

    for _ in range(2):
        x.grad = None
        loss().backward()
        close(x.grad, 6 * X0, atol=1e-14)
