"""vmap's contract: in_dims / out_dims, pytrees, batch-size checks, nesting, chunk_size,
randomness, in-place, the escape check, and the errors. Values are checked against NumPy
loops; the per-op batching rules are covered registry-wide by tests/test_op_batching.py."""

from __future__ import annotations

import numpy as np
import pytest

import ndgrad
from ndgrad.func import grad, jacrev, vmap
from support import close

RNG = np.random.default_rng(0)
X = RNG.standard_normal((4, 3))
Y = RNG.standard_normal((3, 4))


def t(a):
    return ndgrad.tensor(np.asarray(a))


def test_in_dims_positions_and_none():
    w = RNG.standard_normal(3)
    got = vmap(lambda x, w: (x * w).sum(), in_dims=(0, None))(t(X), t(w))
    np.testing.assert_allclose(got.cpu().numpy(), X @ w, rtol=1e-12)
    got = vmap(lambda y, w: (y * w).sum(), in_dims=(1, None))(t(Y), t(w))  # columns of Y
    np.testing.assert_allclose(got.cpu().numpy(), Y.T @ w, rtol=1e-12)
    got = vmap(lambda y: y.sum(), in_dims=-1)(t(Y))                      # negative in_dim
    np.testing.assert_allclose(got.cpu().numpy(), Y.sum(axis=0), rtol=1e-12)
    got = vmap(lambda x, s: x * s, in_dims=(0, None))(t(X), 2.0)         # a Python scalar
    np.testing.assert_allclose(got.cpu().numpy(), 2 * X, rtol=1e-12)


def test_out_dims_and_unbatched_outputs():
    got = vmap(lambda x: x * 2, out_dims=1)(t(X))
    np.testing.assert_allclose(got.cpu().numpy(), (2 * X).T, rtol=1e-12)
    # an output that does not depend on the batch is broadcast to it
    got = vmap(lambda x: (x.sum(), ndgrad.tensor(7.0)))(t(X))
    np.testing.assert_allclose(got[0].cpu().numpy(), X.sum(axis=1), rtol=1e-12)
    np.testing.assert_allclose(got[1].cpu().numpy(), np.full(4, 7.0))
    # out_dims=None returns an unbatched output as is
    c = ndgrad.tensor([1.0, 2.0])
    got = vmap(lambda x: (x.sum(), c), out_dims=(0, None))(t(X))
    assert got[1] is c
    with pytest.raises(ValueError, match="out_dims is None"):
        vmap(lambda x: x, out_dims=None)(t(X))


def test_pytrees_in_and_out():
    def f(d, pair):
        a, b = pair
        return {"s": (d["x"] * a).sum(), "l": [b + 1, d["x"]]}
    out = vmap(f, in_dims=({"x": 0}, (None, 1)))({"x": t(X)}, (t(np.ones(3)), t(Y)))
    np.testing.assert_allclose(out["s"].cpu().numpy(), X.sum(axis=1), rtol=1e-12)
    np.testing.assert_allclose(out["l"][0].cpu().numpy(), Y.T + 1, rtol=1e-12)
    np.testing.assert_allclose(out["l"][1].cpu().numpy(), X, rtol=1e-12)


def test_batch_size_and_in_dims_errors():
    with pytest.raises(ValueError, match="same size"):
        vmap(lambda a, b: a + b)(t(X), t(Y))
    with pytest.raises(ValueError, match="no input is mapped over"):
        vmap(lambda a: a, in_dims=None)(t(X))
    with pytest.raises(ValueError, match="in_dims for argument leaf 0 is 2"):
        vmap(lambda a: a, in_dims=2)(t(X))
    with pytest.raises(ValueError, match="0-d tensor"):
        vmap(lambda a: a)(ndgrad.tensor(1.0))
    with pytest.raises(ValueError, match="must match the structure"):
        vmap(lambda a, b: a, in_dims=(0,))(t(X), t(X))
    with pytest.raises(ValueError, match="only tensors can be mapped"):
        vmap(lambda a, b: a)(t(X), 3.0)
    with pytest.raises(ValueError, match="randomness"):
        vmap(lambda a: a, randomness="sometimes")
    with pytest.raises(ValueError, match="chunk_size"):
        vmap(lambda a: a, chunk_size=0)
    with pytest.raises(ValueError, match="must return tensors"):
        vmap(lambda a: 3)(t(X))


def test_chunk_size_gives_the_same_result():
    f = lambda x: ndgrad.tanh(x).sum() * x  # noqa: E731
    full = vmap(f)(t(X))
    for chunk in (1, 3, 4, 10):
        np.testing.assert_allclose(vmap(f, chunk_size=chunk)(t(X)).cpu().numpy(),
                                   full.cpu().numpy(), rtol=1e-12)
    expected = np.tanh(X).sum(axis=1, keepdims=True) * X
    np.testing.assert_allclose(full.cpu().numpy(), expected, rtol=1e-12)


def test_nested_vmap_is_an_outer_product_of_batches():
    a = RNG.standard_normal((2, 3))
    b = RNG.standard_normal((5, 3))
    got = vmap(vmap(lambda u, v: (u * v).sum(), in_dims=(None, 0)), in_dims=(0, None))(
        t(a), t(b))
    np.testing.assert_allclose(got.cpu().numpy(), a @ b.T, rtol=1e-12)


def test_randomness():
    with pytest.raises(RuntimeError, match="randomness='error'"):
        vmap(lambda x: x + ndgrad.randn(3))(t(X))
    ndgrad.manual_seed(0)
    same = vmap(lambda x: ndgrad.randn(3) + 0 * x, randomness="same")(t(X))
    assert np.allclose(same.cpu().numpy(), same.cpu().numpy()[0])          # one draw for the batch
    diff = vmap(lambda x: ndgrad.rand(3) + 0 * x, randomness="different")(t(X))
    assert diff.shape == (4, 3)
    assert not np.allclose(diff.cpu().numpy(), diff.cpu().numpy()[0])      # a draw per element
    assert ((diff.cpu().numpy() >= 0) & (diff.cpu().numpy() < 1)).all()


def test_inplace_on_a_batched_tensor():
    def f(x):
        y = x * 1.0
        y.add_(1.0)
        y *= x
        return y
    np.testing.assert_allclose(vmap(f)(t(X)).cpu().numpy(), (X + 1) * X, rtol=1e-12)
    # and with a gradient at the vmap level (the history is rebased)
    g = vmap(grad(lambda x: f(x).sum()))(t(X))
    np.testing.assert_allclose(g.cpu().numpy(), 2 * X + 1, rtol=1e-12)


def test_inplace_into_an_unbatched_tensor_is_an_error():
    buf = ndgrad.zeros(3)

    def f(x):
        buf.add_(x)
        return x
    with pytest.raises(RuntimeError, match="not batched"):
        vmap(f)(t(X))


def test_data_dependent_control_flow_is_an_error():
    def f(x):
        if x.sum() > 0:
            return x
        return -x
    with pytest.raises(RuntimeError, match="differs per batch element"):
        vmap(f)(t(X))
    with pytest.raises(RuntimeError, match="item"):
        vmap(lambda x: x.sum().item())(t(X))


def test_escaped_batched_tensor_is_an_error():
    kept = []

    def f(x):
        kept.append(x * 2)
        return x
    vmap(f)(t(X))
    with pytest.raises(RuntimeError, match="escaped"):
        ndgrad.exp(kept[0])


def test_logical_shape_inside_and_physical_outside():
    shapes = []

    def f(x):
        shapes.append((x.shape, x.ndim, len(x), x.numel()))
        return x
    vmap(f, in_dims=1)(t(Y))
    assert shapes == [((3,), 1, 3, 3)]


def test_grad_of_vmap_and_vmap_of_grad_agree_with_closed_forms():
    # sum over the batch of f(x_b) = sum(x_b**3): d/dX = 3X**2, per example too
    f = lambda x: (x ** 3).sum()  # noqa: E731
    x0 = t(X).requires_grad_()
    out = vmap(f)(x0).sum()
    (gx,) = ndgrad.autograd.grad(out, x0)
    np.testing.assert_allclose(gx.cpu().numpy(), 3 * X ** 2, rtol=1e-12)
    np.testing.assert_allclose(vmap(grad(f))(t(X)).cpu().numpy(), 3 * X ** 2, rtol=1e-12)


def test_is_grads_batched_is_one_vmapped_backward():
    w = RNG.standard_normal((3, 3))
    x = t(X[0]).requires_grad_()
    y = ndgrad.tanh(t(w) @ x)
    (jac,) = ndgrad.autograd.grad(y, x, ndgrad.eye(3), is_grads_batched=True)
    yy = np.tanh(w @ X[0])
    np.testing.assert_allclose(jac.cpu().numpy(), (1 - yy ** 2)[:, None] * w, rtol=1e-12)
    with pytest.raises(RuntimeError, match="same leading batch dimension"):
        ndgrad.autograd.grad(y, x, ndgrad.tensor(1.0), is_grads_batched=True)


def test_identity_batches_stay_exact_through_structured_ops():
    """Note [Identity batches]: a batch vmap knows to be the identity keeps that structure
    through scalings and matrix products; every result equals the dense computation."""
    from ndgrad.functional.vmap import _identity
    n = 5
    A = RNG.standard_normal((3, n))
    B = RNG.standard_normal((n, 4))
    s = RNG.standard_normal(n)
    ident = _identity(n, ndgrad.float64, ndgrad.get_default_device())

    def f(e):
        u = -(e * t(s)) / 2.0            # still a scaled identity
        u = u.astype(ndgrad.float64).reshape((n,))
        w = u * t(s[:1])                 # a length-1 factor broadcasts: still one
        return (t(A) @ u, u @ t(B), u + 1.0, ndgrad.exp(u),   # products; dense ops after
                t(s) @ u, w @ t(s), w.sum(), u.sum(axis=0, keepdims=True),
                u.sum(dtype=ndgrad.float32))
    got = vmap(f)(ident)
    D = np.diag(-s / 2.0)                # row b of the batch: -s_b / 2 e_b
    W = D * s[0]
    expected = (D @ A.T, D @ B, D + 1.0, np.exp(D), D @ s, W @ s, W.sum(axis=1),
                D.sum(axis=1, keepdims=True), D.sum(axis=1, dtype=np.float32))
    assert got[-1].dtype == ndgrad.float32
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g.cpu().numpy(), e, rtol=1e-13, atol=1e-15)
    if ident.device == "cpu":  # (CuPy arrays cannot be made read-only)
        with pytest.raises(ValueError, match="read-only"):
            ident.numpy()[0, 0] = 2.0         # the cached identity cannot be corrupted


def test_identity_batch_is_not_made_dense_by_an_op_with_an_identity_rule():
    """Note [Identity batches]: ops whose identity rules apply keep their results scaled
    identities: none is made dense (n x n)."""
    from ndgrad.functional.vmap import _identity
    n = 6
    s = RNG.standard_normal(n)
    ident = _identity(n, ndgrad.float64, ndgrad.get_default_device())
    dense = []

    def f(e):
        u = e * t(s)
        v = -u
        dense.append((u._phys is not None, v._phys is not None))
        return v
    got = vmap(f)(ident)
    np.testing.assert_allclose(got.cpu().numpy(), -np.diag(s), rtol=1e-15)
    assert dense == [(False, False)]


def test_identity_batch_follows_writes_through_its_views():
    """Note [Identity batches]: a write through a view of an identity batch (its physical
    value's version moves on) ends its knowledge, and a same-shape reshape of one shares
    its memory. Before, ``y * s`` still scaled the old identity and a write through the
    reshape reached a copy: the rows below came out diag(s) and the identity."""
    from ndgrad.functional.vmap import _identity
    n = 4
    s = RNG.standard_normal(n)
    ident = _identity(n, ndgrad.float64, ndgrad.get_default_device())

    def through_slice(e):
        y = e * 1.0                      # a scaled identity
        y[1:].mul_(2.0)                  # through a view: diag(1, 2, 2, 2)
        return y * t(s)

    def through_reshape(e):
        y = e * 1.0
        y.reshape((n,)).mul_(3.0)        # a view that keeps the identity: 3 I
        return (y * t(s), y.reshape((n,)) * 1.0)

    scale = np.array([1.0, 2.0, 2.0, 2.0])
    np.testing.assert_allclose(vmap(through_slice)(ident).cpu().numpy(), np.diag(scale * s),
                               rtol=1e-15)
    a, b = vmap(through_reshape)(ident)
    np.testing.assert_allclose(a.cpu().numpy(), np.diag(3.0 * s), rtol=1e-15)
    np.testing.assert_allclose(b.cpu().numpy(), 3.0 * np.eye(n), rtol=1e-15)
    # the cached identity itself is untouched
    np.testing.assert_allclose(ident.cpu().numpy(), np.eye(n), rtol=0)


def test_views_of_batched_values_are_linked():
    """Note [Views of batched values]: a view of a batched value made while nothing in it
    carried a data level's data is linked, so a write through it reaches its base under
    vmap of the data levels (the Laplacian was 0, not 36), and an in-place change of a view
    of a batched value that takes part in a gradient inside the vmap is followed (it raised
    NotImplementedError)."""
    from ndgrad.func import hessian_diag, jet, laplacian

    def h(x):
        y = ndgrad.zeros_like(x)
        w = y[:2]
        w += 3 * x[:2]
        return (y ** 2).sum()            # 9 x0^2 + 9 x1^2

    xs = t(X)                            # 4 points in R^3
    close(vmap(laplacian(h))(xs), np.full(4, 36.0), rtol=1e-12)
    close(vmap(laplacian(h, method="hessian"))(xs), np.full(4, 36.0), rtol=1e-12)
    close(vmap(hessian_diag(h))(xs), np.tile([18.0, 18.0, 0.0], (4, 1)), rtol=1e-12)
    ones, zeros = ndgrad.ones(3), ndgrad.zeros(3)
    close(vmap(lambda x: jet(h, (x,), ([ones, zeros],))[1][1])(xs), np.full(4, 36.0),
          rtol=1e-12)

    def per_row(x):
        x = x.clone().requires_grad_()   # autograd on batched values, inside the vmap
        y = x * 1.0
        w = y[1:]
        w.mul_(x[:2])                    # y = [x0, x0 x1, x1 x2]
        (g,) = ndgrad.autograd.grad((y ** 2).sum(), x)
        return g

    x0, x1, x2 = X.T
    expected = np.stack([2 * x0 + 2 * x0 * x1 ** 2, 2 * x0 ** 2 * x1 + 2 * x1 * x2 ** 2,
                         2 * x1 ** 2 * x2], axis=1)
    close(vmap(per_row)(xs), expected, rtol=1e-12)


def test_kind_rules_take_positional_parameters():
    """sum(x, 0) is sum(x, axis=0) under vmap too (kind-derived reduction and scan rules;
    keepdims and a scan's axis are keyword-only, as NumPy's)."""
    a = RNG.standard_normal((3, 2, 4))
    x = ndgrad.tensor(a)
    np.testing.assert_allclose(vmap(lambda t: ndgrad.sum(t, 0))(x).cpu().numpy(), a.sum(axis=1))
    np.testing.assert_allclose(vmap(lambda t: ndgrad.sum(t, -1, keepdims=True))(x).cpu().numpy(),
                               a.sum(axis=2, keepdims=True))
    np.testing.assert_allclose(vmap(lambda t: ndgrad.cumulative_sum(t, axis=1))(x).cpu().numpy(),
                               np.cumsum(a, axis=2))


def test_grad_of_indexing_by_a_batched_index_under_vmap():
    """``x[i]`` with ``i`` a vmap batch, differentiated inside the vmap: the index is a
    parameter of the node, and the backward runs the rule on Tensors for it (it once handed
    the batch to NumPy's ``add.at``)."""
    xv = np.arange(12.0).reshape(2, 2, 3)
    iv, jv = np.array([[0, 1], [1, 1]]), np.array([[2, 0], [1, 1]])
    g = vmap(grad(lambda x, i, j: (x[i, j] ** 2).sum()))(t(xv), t(iv), t(jv))
    want = np.zeros_like(xv)
    for b in range(2):
        np.add.at(want[b], (iv[b], jv[b]), 2 * xv[b][iv[b], jv[b]])
    close(g, want)
    J = vmap(jacrev(lambda x, i: x[i] * 2))(t(xv[:, 0]), t(iv))
    close(J, np.stack([2 * np.eye(3)[iv[b]] for b in range(2)]))


def test_the_loop_warning_gives_an_ops_declared_reason(loop_warnings):
    """An op that declares why it has no batching rule (``notes["vmap"]``) says so when vmap
    loops over it, and does not ask for a report; the loop's values are the per-row ones."""
    x = np.array([[0.0, 1.0, 2.0, 0.0], [0.0, 3.0, 4.0, 0.0]])
    with pytest.warns(UserWarning, match="trim_zeros runs once per batch element") as seen:
        got = vmap(ndgrad.trim_zeros)(t(x))
    assert "report" not in str(seen[0].message)
    close(got, np.stack([np.trim_zeros(r) for r in x]))


def _function_classes():
    """Every custom Function class ndgrad defines (autograd.Function's subclasses, recursively),
    less the bases it offers users to subclass and vmap's own per-element ctx."""
    import ndgrad.integrate  # noqa: F401  (the modules that define them, loaded)
    import ndgrad.sparse.linalg  # noqa: F401
    import ndgrad.utils.checkpoint  # noqa: F401
    from ndgrad.autograd import Function
    from ndgrad.autograd.legacy import InplaceFunction, NestedIOFunction
    from ndgrad.functional.vmap import _PerElement
    found, todo = set(), [Function]
    while todo:
        for c in todo.pop().__subclasses__():
            if c not in found:
                found.add(c)
                todo.append(c)
    return sorted((c for c in found if c.__module__.startswith("ndgrad.")
                   and c not in (InplaceFunction, NestedIOFunction, _PerElement)),
                  key=lambda c: c.__qualname__)


@pytest.mark.filterwarnings("ignore:vmap. the custom Function")  # (its loop: by design)
@pytest.mark.parametrize("rule", ["backward", "jvp"])
def test_a_rule_run_per_element_reading_a_batched_value_names_the_function(rule):
    # vmap runs a Function's backward and jvp once per batch element, one level down
    # (_per_element), where a batched value read by closure is refused: the message named
    # no Function there. vmap(grad(g)) runs the backward so, vmap(jvp(g)) the jvp.
    from ndgrad.autograd import Function
    from ndgrad.func import jvp
    holder = {}

    class Sq(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            ctx.save_for_forward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            return 2.0 * g * holder["x"]   # x by closure

        @staticmethod
        def jvp(ctx, tx):
            return 2.0 * tx * holder["x"]  # x by closure

    def g(x):
        holder["x"] = x
        return Sq.apply(x).sum()

    run = vmap(grad(g)) if rule == "backward" else \
        vmap(lambda x: jvp(g, (x,), (ndgrad.ones(3),))[1])
    give = "save it for backward with ctx.save_for_backward" if rule == "backward" else \
        "save it for jvp with ctx.save_for_forward"
    with pytest.raises(RuntimeError, match=(
            rf"^Sq\.{rule} used a tensor of the transform level <vmap level 0> .*Instead, "
            rf"pass the tensor to Sq\.apply as an input, and {give}")):
        run(t(RNG.standard_normal((2, 3))))


def test_every_function_ndgrad_defines_names_what_vmap_loops_over():
    """A Function class of ndgrad's that vmap may run once per batch element names the public
    function and why (``vmap_loop``; Note [Functions under vmap]): the warning must not name a
    private class (``_CustomVJPFunction``) or ask for a report."""
    classes = _function_classes()
    assert len(classes) >= 8
    unnamed = [c.__qualname__ for c in classes if getattr(c, "vmap_loop", None) is None]
    assert not unnamed, f"Function classes without vmap_loop: {unnamed}"


def test_the_loop_warning_of_a_function_names_what_the_user_called(loop_warnings):
    """The warnings of ndgrad's functions built on custom Functions name the public function
    (``ndgrad.signal.lfilter``, ``ndgrad.integrate.solve_ivp`` ...), a user's custom_vjp
    declared sequential and a user's Function name themselves and say why; none asks for a
    report; the values are the per-element ones."""
    import functools
    import warnings

    import scipy.signal as ss
    from ndgrad import integrate, optimize, signal
    from ndgrad.func import custom_vjp
    from ndgrad.sparse import linalg as splinalg
    from support import Cube

    x = RNG.standard_normal(6)
    A = ndgrad.tensor(np.diag([3.0, 4.0, 5.0]))
    ks = np.array([0.5, 0.8])

    @functools.partial(custom_vjp, vmap_method="sequential")
    def twice(v):
        return 2.0 * v
    twice.defvjp(lambda v: (2.0 * v, None), lambda _, g: (2.0 * g,))
    cases = [
        ("ndgrad.signal.lfilter", lambda k: signal.lfilter(t([1.0]), ndgrad.stack(
            [ndgrad.tensor(1.0), -k]), t(x)).sum(),
         [ss.lfilter([1.0], [1.0, -k], x).sum() for k in ks]),
        ("ndgrad.integrate.solve_ivp", lambda k: integrate.solve_ivp(
            lambda s, y, k: -k * y, (0.0, 1.0), t([1.0]), t_eval=[1.0], args=(k,),
            rtol=1e-10, atol=1e-12).y.sum(), np.exp(-ks)),
        ("ndgrad.integrate.odeint", lambda k: integrate.odeint(
            lambda y, s, k: -k * y, t([1.0]), [0.0, 1.0], args=(k,), rtol=1e-10,
            atol=1e-12)[-1, 0], np.exp(-ks)),
        ("ndgrad.integrate.quad", lambda k: integrate.quad(lambda s, k: k * s, 0.0, 1.0,
                                                           args=(k,))[0], ks / 2),
        ("ndgrad.sparse.linalg.cg", lambda k: splinalg.cg(A, k * t([3.0, 4.0, 5.0]),
                                                          rtol=1e-12)[0].sum(), 3 * ks),
        ("ndgrad.optimize.minimize", lambda k: optimize.minimize(
            lambda z, k: ((z - k) ** 2).sum(), ndgrad.zeros(2), args=(k,)).x.sum(), 2 * ks),
        ("the custom_vjp function twice", lambda k: twice(k), 2 * ks),
        ("the custom Function Cube", lambda k: Cube.apply(k), ks ** 3),
    ]
    for name, f, want in cases:
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            got = vmap(f)(t(ks))
        close(got, want, rtol=1e-7, atol=1e-12)
        loops = [str(w.message) for w in seen if "once per batch element" in str(w.message)]
        assert len(loops) == 1 and loops[0].startswith(f"vmap: {name} runs once per batch "
                                                        "element (a Python loop): "), loops
        assert "report" not in loops[0] and "CustomVJPFunction" not in loops[0]
    assert "generate_vmap_rule = True" in loops[0]   # (the user's Function: what to set)
