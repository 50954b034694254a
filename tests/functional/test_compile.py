"""``ndgrad.func.compile`` (Note [Compiled programs] in ndgrad/functional/compiler.py): a
function traced once per signature into a program of backend calls gives eager ndgrad's
values, composes with the transforms both ways, and refuses what it cannot trace."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import ndgrad as nd
from ndgrad.func import compile, grad, hessian, jacfwd, jacrev, jet, jvp, laplacian, vmap
from ndgrad.functional.compiler import CompileError
from support import close

pytestmark = pytest.mark.cpu_only("the programs run the backend of their inputs; the device "
                                  "family of the op matrix covers the backends")

RNG = np.random.default_rng(36)
X0 = RNG.normal(size=5)
XB = RNG.normal(size=(3, 5))


def _chain(x):
    y = x
    for _ in range(3):
        y = nd.tanh(y) * 1.01 + nd.sin(x)
    return (y ** 2).sum()


def _chain_grad_closed_form(x):
    """d/dx of _chain by hand (NumPy, forward then reverse)."""
    ys, zs = [x], []
    y = x
    for _ in range(3):
        z = np.tanh(y)
        zs.append(z)
        y = z * 1.01 + np.sin(x)
        ys.append(y)
    g = 2 * y
    total = np.zeros_like(x)
    for k in reversed(range(3)):
        total += g * np.cos(x)
        g = g * 1.01 * (1 - zs[k] ** 2)
    return total + g


def test_compiled_function_and_gradient_equal_eager_and_the_closed_form():
    x = nd.tensor(X0)
    cf = compile(_chain)
    cg = compile(grad(_chain))
    close(cf(x), _chain(x), atol=0, rtol=1e-15)
    close(cg(x), _chain_grad_closed_form(X0), atol=1e-13)
    close(cg(x), grad(_chain)(x), atol=0, rtol=4 * np.finfo(float).eps)
    # a second call runs the program: the same values, one trace
    close(cg(nd.tensor(2 * X0)), _chain_grad_closed_form(2 * X0), atol=1e-13)
    assert len(cg._cache) == 1


def test_a_derivative_rule_is_traced_not_frozen():
    """The gradient of sum(x * (x > 0)) is the mask at each call's x, not the traced one's."""
    relu_grad = compile(grad(lambda x: (x * (x > 0)).sum()))
    x = nd.tensor(X0)
    close(relu_grad(x), (X0 > 0).astype(float), atol=0)
    close(relu_grad(-x), (X0 < 0).astype(float), atol=0)


@pytest.mark.parametrize("transform", ["hessian", "jacfwd", "jacrev", "jvp", "vmap_grad"])
def test_compile_over_the_transforms(transform):
    x = nd.tensor(X0)
    v = nd.tensor(RNG.normal(size=5))
    funs = {
        "hessian": (hessian(_chain), (x,)),
        "jacfwd": (jacfwd(lambda x: nd.tanh(x) * x[::-1]), (x,)),
        "jacrev": (jacrev(lambda x: nd.exp(x).cumsum(0)), (x,)),
        "jvp": (lambda x, v: jvp(_chain, (x,), (v,)), (x, v)),
        "vmap_grad": (vmap(grad(_chain)), (nd.tensor(XB),)),
    }
    fun, args = funs[transform]
    eager = fun(*args)
    compiled = compile(fun)(*args)
    for a, b in zip(eager if isinstance(eager, tuple) else (eager,),
                    compiled if isinstance(compiled, tuple) else (compiled,)):
        close(b, a, atol=1e-13, rtol=1e-12)


def test_transforms_over_a_compiled_function_give_its_derivatives():
    """grad, vmap and hessian of a compiled function, and backward through its call, give
    the closed form's and eager's values (test_compile_program's transforms over a compiled
    function check that they run its programs)."""
    cf = compile(_chain)
    x = nd.tensor(X0)
    close(grad(cf)(x), _chain_grad_closed_form(X0), atol=1e-13)
    close(vmap(cf)(nd.tensor(XB)), [_chain(nd.tensor(r)).item() for r in XB], atol=1e-14)
    close(hessian(cf)(x), hessian(_chain)(x), atol=1e-13)
    w = nd.tensor(X0, requires_grad=True)
    cf(w).backward()
    close(w.grad, _chain_grad_closed_form(X0), atol=1e-13)


def test_imperative_step_with_backward_inside():
    """A step function that makes a tensor requiring grad, calls backward and returns the
    gradient compiles to the gradient's program."""
    def step(x):
        w = nd.ones(5, requires_grad=True)
        loss = (nd.tanh(w * x) ** 2).sum()
        loss.backward()
        return w.grad

    cstep = compile(step)
    for x in (X0, 3 * X0):
        t = np.tanh(x)
        close(cstep(nd.tensor(x)), 2 * t * (1 - t ** 2) * x, atol=1e-14)


@pytest.mark.parametrize("read", [
    lambda y: bool(y.sum() > 0), lambda y: float(y.sum()), lambda y: y.sum().item(),
    lambda y: y.tolist(), lambda y: y.numpy(), lambda y: np.asarray(y), lambda y: [0, 1][y[0]]])
def test_reading_a_traced_value_raises_naming_the_line(read):
    def f(x):
        y = nd.tanh(x)
        read(y.astype(nd.int64) if read.__code__.co_consts[-1:] == (1,) else y)
        return y

    with pytest.raises(CompileError, match=r"read as .*test_compile\.py:\d+.*static_argnums"):
        compile(f)(nd.tensor(X0))


def test_static_arguments_are_part_of_the_signature():
    def f(x, n, scale=1.0):
        for _ in range(n):
            x = nd.sin(x) * scale
        return x

    cf = compile(f, static_argnums=1, static_argnames="scale")
    x = nd.tensor(X0)
    close(cf(x, 2, scale=0.5), np.sin(np.sin(X0) * 0.5) * 0.5, atol=1e-15)
    close(cf(x, 1, scale=0.5), np.sin(X0) * 0.5, atol=1e-15)
    assert len(cf._cache) == 2
    with pytest.raises(TypeError, match="must be hashable"):
        cf(x, [1], scale=0.5)


def test_a_captured_tensor_changed_in_place_means_a_new_trace():
    w = nd.tensor(X0)
    cf = compile(lambda x: x * w)
    x = nd.ones(5)
    close(cf(x), X0, atol=0)
    with nd.no_grad():
        w.mul_(2)
    close(cf(x), 2 * X0, atol=0)   # (never the stale constant)


def test_a_captured_tensor_rebound_means_a_new_trace():
    global _W
    _W = nd.tensor(X0)
    cf = compile(lambda x: x * _W)
    close(cf(nd.ones(5)), X0, atol=0)
    _W = nd.tensor(3 * X0)
    close(cf(nd.ones(5)), 3 * X0, atol=0)


def test_in_place_and_views_inside_give_eager_values():
    def f(x):
        y = x * 2
        w = y[1:4]              # a view, changed in place: y follows
        w.mul_(nd.cos(x[:3]))
        z = nd.zeros(5)
        z[::2] = nd.exp(x[::2])  # a tensor made inside, written in place
        y += z
        return y, w

    x = nd.tensor(X0)
    for a, b in zip(compile(f)(x), f(x)):
        close(a, b, atol=0)
    cg = compile(grad(lambda x: f(x)[0].sum()))
    close(cg(x), grad(lambda x: f(x)[0].sum())(x), atol=0)


@pytest.mark.parametrize("what, f", [
    ("an argument", lambda x: x.mul_(2)),
    ("a tensor the compiled function captures", lambda x: _CAPTURED.add_(x))])
def test_writing_into_an_argument_or_a_capture_raises(what, f):
    with pytest.raises(CompileError, match=f"writes into {what}"):
        compile(f)(nd.tensor(X0))


_CAPTURED = nd.zeros(5)


def test_random_draws_are_eagers_draws_and_fresh_on_each_call():
    def f(x):
        return x + nd.randn(5)

    cf = compile(f)
    x = nd.zeros(5)
    nd.manual_seed(7)
    eager = [f(x).numpy().copy() for _ in range(3)]
    nd.manual_seed(7)
    compiled = [cf(x).numpy().copy() for _ in range(3)]   # (the first traces: one draw)
    for a, b in zip(compiled, eager):
        close(a, b, atol=0)
    assert not np.allclose(compiled[1], compiled[2])


def test_the_cache_is_bounded_and_can_be_cleared():
    """At most cache_size programs are kept (least recently made first out); a call whose
    program was dropped, by the bound or clear_cache, traces again (the short key of a call
    leads to the entry only while the cache holds it)."""
    traces = []

    def f(x):
        traces.append(x.shape)
        return nd.exp(x)

    cf = compile(f, cache_size=2)
    for n in (2, 3, 4):
        close(cf(nd.ones(n)), np.full(n, np.e), atol=0)
        close(cf(nd.ones(n)), np.full(n, np.e), atol=0)
    assert len(cf._cache) == 2 and len(traces) == 3
    close(cf(nd.ones(2)), np.full(2, np.e), atol=0)   # (dropped: traced again)
    assert len(traces) == 4
    close(cf(nd.ones(4)), np.full(4, np.e), atol=0)   # (kept)
    assert len(traces) == 4
    cf.clear_cache()
    assert len(cf._cache) == 0
    close(cf(nd.ones(4)), np.full(4, np.e), atol=0)
    assert len(traces) == 5
    with pytest.raises(ValueError, match="cache_size must be a positive int"):
        compile(lambda x: x, cache_size=0)


def test_two_threads_call_one_compiled_function():
    cg = compile(grad(_chain))
    cg(nd.tensor(X0))
    inputs = [RNG.normal(size=5) for _ in range(16)]
    results = [None] * len(inputs)

    def work(k):
        results[k] = cg(nd.tensor(inputs[k])).numpy()

    threads = [threading.Thread(target=work, args=(k,)) for k in range(len(inputs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for x, r in zip(inputs, results):
        close(r, _chain_grad_closed_form(x), atol=1e-13)


def test_the_source_is_one_backend_call_per_line():
    cg = compile(grad(lambda x: nd.tanh(x).sum()))
    src = cg.source(nd.tensor(X0))
    assert src.startswith("def program(v0):\n")
    assert "tanh(v0)" in src and "return (" in src
    program = cg.program(nd.tensor(X0))
    assert len(program.steps) <= len(program.traced) and program.trace_time > 0
    # the source runs: the program's own function gives the gradient
    out = program.run(X0)[0]
    close(out, 1 - np.tanh(X0) ** 2, atol=1e-15)


# ------------------------------------------------------------- signatures, refusals, values
def test_static_values_equal_in_python_get_programs_of_their_own():
    """0.0 and -0.0 (equal in Python) are two signatures: the program made with one would
    give the other's sign of zero wrong; a slice (unhashable before Python 3.12) is a static
    value like any other."""
    x = nd.tensor([-1.0, 2.0])
    scale = compile(lambda x, c: x * c)
    for c in (0.0, -0.0, 0.0):
        got, expected = scale(x, c).numpy(), (x * c).numpy()
        assert np.array_equal(np.signbit(got), np.signbit(expected)), (c, got, expected)
    first = compile(lambda x, c: x * c[0])
    assert first(x, (1,)).dtype == (x * 1).dtype
    close(first(x, (-0.0,)), x * -0.0, atol=0)
    assert np.array_equal(np.signbit(first(x, (-0.0,)).numpy()), np.signbit((x * -0.0).numpy()))
    take = compile(lambda x, s: nd.insert(x, s, 7.0))
    for s in (slice(0, 1), slice(0, 1), slice(1, 2)):
        close(take(x, s), nd.insert(x, s, 7.0), atol=0)
    assert len(take._cache) == 2


def test_an_op_that_reads_its_traced_values_is_named():
    """A function that reads its input's values (choose checks its indices, with
    mode="raise") refuses the trace naming the op and the line of ndgrad that reads; the
    user's own read says what to do."""
    x = nd.tensor(X0)
    with pytest.raises(CompileError, match=r"by ndgrad\.choose \(ndgrad/numpy/"
                                           r"[a-z_]+\.py:\d+\) at .*test_compile\.py:\d+.*"
                                           r"cannot be compiled on traced values"):
        compile(lambda i, c: nd.choose(i, [c, 2 * c]))(nd.tensor([0, 1, 1, 0, 1]), x)
    # (what the op's declaration says to do instead; and that does compile)
    with pytest.raises(CompileError, match=r"with mode='wrap' or 'clip' choose compiles"):
        compile(lambda i, c: nd.choose(i, [c, 2 * c]))(nd.tensor([0, 1, 1, 0, 1]), x)
    i = nd.tensor([0, 1, 3, 0, -1])
    wrap = compile(lambda i, c: nd.choose(i, [c, 2 * c], mode="wrap"))
    for _ in range(2):
        close(wrap(i, x), nd.choose(i, [x, 2 * x], mode="wrap"), atol=0)
    with pytest.raises(CompileError, match=r"read as .*\) at .*test_compile\.py:\d+.*"
                                           r"static_argnums") as info:
        compile(lambda x: float(x.sum()))(x)
    assert "by ndgrad." not in str(info.value)


_SINGULAR = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]])  # (rank 2)


@pytest.mark.parametrize("a0", [RNG.normal(size=(3, 3)), _SINGULAR,
                                np.stack([RNG.normal(size=(3, 3)), _SINGULAR])],
                         ids=["regular", "singular", "a stack of both"])
def test_the_derivatives_of_det_choose_their_formula_when_the_program_runs(a0):
    """det's rules take the cofactor matrix by a solve, or by the SVD at a singular matrix:
    in a program that choice is one step, made on each call's values (Note [A choice made
    when the program runs] in core/ops/solves.py). compile(grad(det)) and the compiled jvp
    give eager's bits at regular and singular matrices alike, one program for both."""
    a = nd.tensor(a0)
    v = nd.tensor(RNG.normal(size=a0.shape))
    g = compile(grad(lambda m: nd.linalg.det(m).sum()))
    t = compile(lambda m, w: jvp(nd.linalg.det, (m,), (w,))[1])
    assert "_det_cofactor(" in g.source(nd.tensor(RNG.normal(size=a0.shape)))
    for _ in range(2):
        close(g(a), grad(lambda m: nd.linalg.det(m).sum())(a), atol=0, rtol=0)
        close(t(a, v), jvp(nd.linalg.det, (a,), (v,))[1], atol=0, rtol=0)


def test_the_hessian_of_det_compiles_and_a_singular_matrix_raises():
    """det's second derivative in a program differentiates its cofactor step by a solve:
    eager's Hessian to rounding at a regular matrix, and LinAlgError at a singular one (eager
    differentiates the SVD formula there), never a wrong value."""
    h = compile(hessian(nd.linalg.det))
    a = nd.tensor(RNG.normal(size=(3, 3)))
    close(h(a), hessian(nd.linalg.det)(a), atol=1e-13)
    close(h(a), hessian(nd.linalg.det)(a), atol=1e-13)
    with pytest.raises(np.linalg.LinAlgError, match="singular"):
        h(nd.tensor(_SINGULAR))


def test_a_detached_traced_value_is_not_a_constant():
    """detach cuts the graph, not the computation: polymul trims leading zeros through a
    detached copy of its input (a value read: refused), and ``x.detach() * 2`` is a step."""
    with pytest.raises(CompileError, match=r"by ndgrad\.polymul"):
        compile(lambda a: nd.polymul(a, a))(nd.tensor([1.0, 2.0, 3.0]))
    f = compile(lambda x: x.detach() * 2)
    for x in (X0, 3 * X0):
        close(f(nd.tensor(x)), 2 * x, atol=0)


# ------------------------------------------------------------- compositions (issue 36)
def _poly(x):
    return (nd.sin(x) * x ** 3 + nd.exp(-x * x)).sum()


def _vec(x):
    return nd.tanh(x) * x.cumsum(0) + nd.cos(x[::-1])


def _fd_grad(f, x, h=1e-6):
    e = np.eye(x.size)
    return np.array([(f(nd.tensor(x + h * e[i])).item() - f(nd.tensor(x - h * e[i])).item())
                     / (2 * h) for i in range(x.size)])


# (name, the composition, a reference built from eager transforms, an FD reference or None)
COMPOSED = {
    "compile(grad)": (lambda: compile(grad(_poly)), lambda: grad(_poly),
                      lambda x: _fd_grad(_poly, x)),
    "grad(compile)": (lambda: grad(compile(_poly)), lambda: grad(_poly),
                      lambda x: _fd_grad(_poly, x)),
    "compile(jacrev)": (lambda: compile(jacrev(_vec)), lambda: jacrev(_vec), None),
    "jacrev(compile)": (lambda: jacrev(compile(_vec)), lambda: jacrev(_vec), None),
    "compile(jacfwd)": (lambda: compile(jacfwd(_vec)), lambda: jacfwd(_vec), None),
    "jacfwd(compile)": (lambda: jacfwd(compile(_vec)), lambda: jacfwd(_vec), None),
    "compile(hessian)": (lambda: compile(hessian(_poly)), lambda: hessian(_poly),
                         lambda x: np.array([_fd_grad(lambda y, i=i: grad(_poly)(y)[i], x)
                                             for i in range(x.size)])),
    "hessian(compile)": (lambda: hessian(compile(_poly)), lambda: hessian(_poly), None),
    "compile(vmap(grad))": (lambda: compile(vmap(grad(_poly))), lambda: vmap(grad(_poly)),
                            None),
    "vmap(compile(grad))": (lambda: vmap(compile(grad(_poly))), lambda: vmap(grad(_poly)),
                            None),
    "compile(jvp)": (lambda: compile(lambda x: jvp(_vec, (x,), (nd.ones_like(x),))[1]),
                     lambda: (lambda x: jvp(_vec, (x,), (nd.ones_like(x),))[1]),
                     lambda x: _fd_jvp(x)),
    "jvp(compile)": (lambda: (lambda x: jvp(compile(_vec), (x,), (nd.ones_like(x),))[1]),
                     lambda: (lambda x: jvp(_vec, (x,), (nd.ones_like(x),))[1]),
                     lambda x: _fd_jvp(x)),
    "compile(jet)": (lambda: compile(lambda x: jet(_poly, (x,), ([nd.ones_like(x),
                                                                  nd.zeros_like(x)],))[1][1]),
                     lambda: (lambda x: jet(_poly, (x,), ([nd.ones_like(x),
                                                           nd.zeros_like(x)],))[1][1]),
                     lambda x: _fd_grad(lambda y: grad(_poly)(y).sum(), x).sum()),
    "compile(laplacian)": (lambda: compile(laplacian(_poly)), lambda: laplacian(_poly),
                           lambda x: sum(_fd_grad(lambda y, i=i: grad(_poly)(y)[i], x)[i]
                                         for i in range(x.size))),
    # two deep
    "compile(grad(grad))": (lambda: compile(grad(lambda x: grad(_poly)(x).sum())),
                            lambda: grad(lambda x: grad(_poly)(x).sum()), None),
    "grad(compile(grad))": (lambda: grad(lambda x: compile(grad(_poly))(x).sum()),
                            lambda: grad(lambda x: grad(_poly)(x).sum()), None),
    "compile(jacfwd(jacrev))": (lambda: compile(jacfwd(jacrev(_poly))),
                                lambda: jacfwd(jacrev(_poly)), None),
    "compile(compile(grad))": (lambda: compile(lambda x: compile(grad(_poly))(x) * 2),
                               lambda: (lambda x: grad(_poly)(x) * 2),
                               lambda x: 2 * _fd_grad(_poly, x)),
    "compile(vmap(jvp(grad)))": (
        lambda: compile(vmap(lambda x: jvp(grad(_poly), (x,), (nd.ones_like(x),))[1])),
        lambda: vmap(lambda x: jvp(grad(_poly), (x,), (nd.ones_like(x),))[1]), None),
}


def _fd_jvp(x, h=1e-6):
    return (_vec(nd.tensor(x + h)).numpy() - _vec(nd.tensor(x - h)).numpy()) / (2 * h)


@pytest.mark.parametrize("name", list(COMPOSED))
def test_compile_composed_with_the_transforms(name):
    """compile under and over grad, jacrev, jacfwd, hessian, vmap and jvp, and two deep:
    the values of the eager composition (to rounding) on the traced arguments, again (the
    program), at other values of the same shape and at another shape (a new trace), and
    finite differences where given."""
    make, reference, fd = COMPOSED[name]
    fun, ref = make(), reference()
    batched = "vmap" in name
    for x in (XB if batched else X0, 1.3 * (XB if batched else X0), XB.T if batched else
              XB[0, :3], XB if batched else X0):
        got, expected = fun(nd.tensor(x)), ref(nd.tensor(x))
        close(got, expected, rtol=1e-12, atol=1e-12 * max(1.0, np.abs(expected.numpy()).max()))
        if fd is not None:
            close(got, fd(x), rtol=1e-6, atol=1e-6)


# ------------------------------------------------------------------ a wrong rewrite is caught
def test_a_program_with_a_dropped_negation_fails_the_comparison(monkeypatch):
    """The registry family's comparison (tests/test_op_compile.py) fails on a program whose
    optimiser drops a negation (rewrites ``negative(x)`` to ``x``), and passes without it."""
    import ndgrad.functional.compiler as compiler
    from registry_harness import Sample, entry
    from test_op_compile import _moved, _stacked, compiled_equals_eager

    # (the family's gradient check: grad of <w, cos(x)> in x, the weights w arguments too,
    # so the rule's -w sin(x) is a negation step of the program)
    w = RNG.normal(size=5)
    sample = Sample(entry("multiply"), (X0, w), {})
    fn = grad(lambda x, w: (w * nd.cos(x)).sum())
    args = ([nd.tensor(X0), nd.tensor(w)], _moved(sample), _stacked(sample))
    compiled_equals_eager(fn, *args, "cos'")  # (right: passes)
    optimize = compiler.optimize

    def dropping_negations(program, *args):
        for s in program.steps:
            if s.op is not None and s.op.name == "negative":
                s.fn, s.name, s.with_backend = (lambda x: x), "dropped", False
        return optimize(program, *args)
    monkeypatch.setattr(compiler, "optimize", dropping_negations)
    with pytest.raises(AssertionError, match="cos', the program"):
        compiled_equals_eager(fn, *args, "cos'")


@pytest.mark.parametrize("f", [lambda x: x * 0.1, lambda x: 0.1 - x,
                               lambda x: nd.clip(x, 0.1, 1.3),
                               lambda x: nd.where(x > 0, x, 0.1)],
                         ids=["times", "minus", "clip", "where"])
def test_python_floats_beside_bfloat16_as_dispatch_takes_them(f):
    """A Python float beside a bfloat16 tensor: the program gives eager's dtype and bits.
    Dispatch makes it a bfloat16 only on its path for two inputs (``x * 0.1``); an op of
    three inputs hands it on and NumPy promotes (clip to float32, where to float64): the
    tracer made it a bfloat16 there too."""
    if getattr(nd, "bfloat16", None) is None:
        pytest.skip("no bfloat16 (ml_dtypes)")
    x = nd.tensor([0.3, 1.7, -2.2], dtype=nd.bfloat16)
    cf = compile(f)
    for _ in range(2):
        got, expected = cf(x), f(x)
        assert got.dtype == expected.dtype
        assert got.numpy().tobytes() == expected.numpy().tobytes(), (got, expected)


@pytest.mark.parametrize("transform", ["grad", "jvp"])
def test_a_random_draw_inside_a_transform_is_a_step_of_its_derivative(transform):
    """A draw made inside grad (or jvp) in a compiled function: the derivative reads the
    program's draw, not the trace's numbers (under grad it did not: the draw's value was put
    on func.grad's wrapper, and the tensor the rule reads was a constant of the program)."""
    x = nd.tensor(X0)
    f = (grad(lambda x: (nd.sin(x) * nd.randn(5)).sum()) if transform == "grad" else
         (lambda x: jvp(lambda y: nd.sin(y) * nd.rand(5), (x,), (nd.ones_like(x),))[1]))
    cf = compile(f)
    for seed in (7, 8, 9):
        nd.manual_seed(seed)
        expected = f(x)
        nd.manual_seed(seed)
        close(cf(x), expected, atol=0, rtol=0)


def test_seeding_inside_a_compiled_function_raises():
    """manual_seed inside the function ran once, at the trace: the program's second call
    drew on from the first's state, and the draws after it differed from eager code's."""
    def f(x):
        nd.manual_seed(1)
        return x + nd.randn(5)

    with pytest.raises(CompileError, match="manual_seed"):
        compile(f)(nd.tensor(X0))
    g = compile(lambda x: x + nd.randn(5))  # (seeding outside is the way)
    nd.manual_seed(1)
    expected = nd.tensor(X0) + nd.randn(5)
    nd.manual_seed(1)
    close(g(nd.tensor(X0)), expected, atol=0)
    nd.manual_seed(1)
    close(g(nd.tensor(X0)), expected, atol=0)


_W = nd.tensor(X0)


def test_a_rebound_capture_is_never_a_stale_constant():
    """A captured tensor rebound (a global in a loop, an object's attribute) or changed in
    place and returned: each call gives eager's values. (CPython reuses a freed tensor's id,
    which the signature holds for a captured global: the loop ran the program of two
    iterations before, with its constant; a rebound attribute kept the first tensor's
    values; a captured tensor returned as it is was not checked for changes.)"""
    global _W
    x = nd.tensor(X0)
    f = compile(lambda x: x * _W)
    saved = _W
    try:
        for _ in range(12):
            close(f(x), x * _W, atol=0)
            _W = _W + 1.0
    finally:
        _W = saved

    class Model:
        pass
    m = Model()
    m.w = nd.tensor(X0)
    g = compile(lambda x: x * m.w)
    for _ in range(3):
        close(g(x), x * m.w, atol=0)
        m.w = m.w * 2.0

    w = nd.tensor(X0)
    h = compile(lambda x: (x * 2, w))
    h(x)
    w.add_(1.0)
    close(h(x)[1], X0 + 1.0, atol=0)


@pytest.mark.parametrize("alias", ["detach", "data"])
def test_writing_into_an_arguments_memory_through_an_alias_raises(alias):
    """``x.detach()`` and ``x.data`` share the argument's memory: eager code changes the
    caller's tensor through them. The program did not (its second call left the argument
    as it was, and ``x.data.mul_(3); return x + 0`` returned the traced values)."""
    def f(x):
        y = x.detach() if alias == "detach" else x.data
        y.mul_(3.0)
        return x + 0

    x = nd.tensor(X0)
    with pytest.raises(CompileError, match="writes into an argument"):
        compile(f)(x)
    close(x, X0, atol=0)  # (refused before the write)
    y = nd.tensor(X0) * 1  # (an alias of a value made inside is the function's to change)
    close(compile(lambda x: (x * 2).detach().add_(1.0))(y), 2 * X0 + 1, atol=0)


def test_writing_into_an_alias_of_a_value_made_inside_raises():
    """``y.detach()`` shares y's memory without being its view: eager code's write into it
    changes y too, the program's changed the alias alone (``y = x * 2; y.detach().add_(1);
    return y`` returned 2x from the second call on)."""
    def f(x):
        y = x * 2
        y.detach().add_(1.0)
        return y

    with pytest.raises(CompileError, match="shares its memory with another value"):
        compile(f)(nd.tensor(X0))

    def g(x):  # (a write into a view of it is followed: the protocol of the data levels)
        y = x * 2
        y[1:3].add_(1.0)
        return y
    cg = compile(g)
    for _ in range(2):
        close(cg(nd.tensor(X0)), g(nd.tensor(X0)), atol=0)


def test_a_rule_that_picks_a_branch_by_values_takes_the_exact_one():
    """prod's rules divide by a factor only where the values allow it (Note [Products with
    zeros]); traced values are unknown (Interpreter.values_unknown), so the program takes the
    exact leave-one-out formulas, right at zeros too (the trace was refused)."""
    g = compile(grad(lambda x: nd.prod(x) + nd.cumprod(x, axis=0).sum()))
    for x in (np.array([1.5, 0.0, 2.0, -3.0]), np.array([0.5, -1.0, 2.0, 4.0])):
        eager = grad(lambda x: nd.prod(x) + nd.cumprod(x, axis=0).sum())(nd.tensor(x))
        g(nd.tensor(x))
        close(g(nd.tensor(x)), eager, atol=1e-14, rtol=1e-14)
