"""The names of ``torch.autograd`` in ``ndgrad.autograd``: gradcheck, gradgradcheck, the
functional, forward_ad, gradcheck, grad_mode and anomaly_mode modules (the same objects as
ndgrad's own), NestedIOFunction, InplaceFunction, set_multithreading_enabled,
enforce_grad_layout_policy and variable.

References are closed forms, NumPy, finite differences (gradcheck / gradgradcheck) and
PyTorch's documented behaviour; torch itself is never imported.
"""

from __future__ import annotations

import collections
import gc
import importlib
import threading
import weakref

import numpy as np
import pytest

import ndgrad as nd
import ndgrad.autograd as autograd
from ndgrad.autograd import InplaceFunction, NestedIOFunction
from ndgrad.checks import gradcheck, gradgradcheck
from ndgrad.core.saved import FREED_MSG
from support import close, val

RNG = np.random.default_rng(20240611)


# -- names that live elsewhere in ndgrad are the same objects here --------------------------

# torch.autograd's submodule -> (ndgrad's module holding the objects, torch's names there)
SUBMODULES = {
    "functional": ("ndgrad.functional", ["vjp", "jvp", "jacobian", "hessian", "hvp", "vhp"]),
    "forward_ad": ("ndgrad.forward_ad", ["UnpackedDualTensor", "enter_dual_level",
                                         "exit_dual_level", "make_dual", "unpack_dual",
                                         "dual_level"]),
    "gradcheck": ("ndgrad.checks", ["gradcheck", "gradgradcheck", "GradcheckError"]),
    "grad_mode": ("ndgrad", ["no_grad", "enable_grad", "set_grad_enabled", "inference_mode"]),
    "anomaly_mode": ("ndgrad.autograd", ["detect_anomaly", "set_detect_anomaly"]),
}


@pytest.mark.parametrize("sub", sorted(SUBMODULES))
def test_submodule_holds_the_same_objects(sub):
    home, names = SUBMODULES[sub]
    mod = importlib.import_module(f"ndgrad.autograd.{sub}")
    assert set(names) <= set(mod.__all__)
    for name in mod.__all__:
        assert hasattr(mod, name), name
    src = importlib.import_module(home)
    for name in names:
        assert getattr(mod, name) is getattr(src, name), name


def test_attributes_are_the_same_objects_as_ndgrads():
    assert autograd.gradcheck is nd.checks.gradcheck
    assert autograd.gradgradcheck is nd.checks.gradgradcheck
    assert autograd.functional.jacobian is nd.functional.jacobian
    assert autograd.forward_ad.make_dual is nd.forward_ad.make_dual
    assert autograd.function.NestedIOFunction is NestedIOFunction
    assert autograd.function.InplaceFunction is InplaceFunction
    # as in PyTorch: the attribute is the function, the module is importable by name
    import ndgrad.autograd.gradcheck  # noqa: F401
    assert callable(autograd.gradcheck) and autograd.gradcheck is nd.checks.gradcheck
    from ndgrad.autograd.gradcheck import GradcheckError
    assert GradcheckError is nd.checks.GradcheckError


def test_every_public_name_of_ndgrad_autograd_resolves():
    for name in autograd.__all__:
        assert hasattr(autograd, name), name
    # torch.autograd.__all__ (PyTorch 2.13), every name of which ndgrad.autograd has
    torch_all = ["Variable", "Function", "backward", "grad_mode", "NestedIOFunction",
                 "detect_anomaly", "enable_grad", "grad", "gradcheck", "gradgradcheck",
                 "inference_mode", "no_grad", "set_detect_anomaly", "set_grad_enabled",
                 "set_multithreading_enabled", "enforce_grad_layout_policy", "variable"]
    assert [n for n in torch_all if n not in autograd.__all__] == []


def test_functional_jacobian_through_the_autograd_path():
    from ndgrad.autograd.functional import hessian, jacobian
    xv = RNG.standard_normal(3)
    J = jacobian(lambda x: nd.sin(x) * x[0], nd.tensor(xv))
    expected = np.diag(np.cos(xv) * xv[0])
    expected[:, 0] += np.sin(xv)
    close(J, expected)
    H = hessian(lambda x: (x ** 3).sum(), nd.tensor(xv))
    close(H, np.diag(6 * xv))


def test_forward_ad_through_the_autograd_path():
    from ndgrad.autograd.forward_ad import dual_level, make_dual, unpack_dual
    xv, tv = RNG.standard_normal(4), RNG.standard_normal(4)
    with dual_level():
        y = nd.exp(make_dual(nd.tensor(xv), nd.tensor(tv)))
        primal, tangent = unpack_dual(y)
    close(primal, np.exp(xv))
    close(tangent, np.exp(xv) * tv)


def test_gradcheck_through_the_autograd_path_passes_and_fails():
    x = nd.tensor(RNG.standard_normal(3), requires_grad=True)
    assert autograd.gradcheck(lambda t: nd.tanh(t) * t, (x,))
    assert autograd.gradgradcheck(lambda t: nd.tanh(t) * t, (x,))

    class WrongGrad(autograd.Function):
        @staticmethod
        def forward(ctx, t):
            return t * t

        @staticmethod
        def backward(ctx, g):
            return g  # should be 2 t g

    with pytest.raises(nd.checks.GradcheckError, match="Jacobian mismatch"):
        autograd.gradcheck(WrongGrad.apply, (x,))


# -- set_multithreading_enabled, enforce_grad_layout_policy, variable ----------------------

def test_set_multithreading_enabled_is_a_per_thread_setting():
    xv = RNG.standard_normal(3)
    assert autograd.is_multithreading_enabled()
    with autograd.set_multithreading_enabled(False):
        assert not autograd.is_multithreading_enabled()
        seen = []
        t = threading.Thread(target=lambda: seen.append(autograd.is_multithreading_enabled()))
        t.start()
        t.join()
        assert seen == [True]  # thread-local, as PyTorch's
        x = nd.tensor(xv, requires_grad=True)
        (nd.sin(x) ** 2).sum().backward()  # same gradient either way: 2 sin cos
        close(x.grad, 2 * np.sin(xv) * np.cos(xv))
    assert autograd.is_multithreading_enabled()
    autograd.set_multithreading_enabled(False)  # called: at once
    try:
        assert not autograd.is_multithreading_enabled()
    finally:
        autograd.set_multithreading_enabled(True)
    with pytest.raises(TypeError, match=r"set_multithreading_enabled\(mode\) takes a bool, "
                                        "got int"):
        autograd.set_multithreading_enabled(1)


@pytest.mark.parametrize("enable", [True, False])
def test_enforce_grad_layout_policy_keeps_the_parameter_layout(enable):
    data = np.asfortranarray(RNG.standard_normal((3, 4)))
    p = nd.tensor(data, requires_grad=True)
    with autograd.enforce_grad_layout_policy(enable):
        (p * p).sum().backward()
    close(p.grad, 2 * data)
    assert p.grad._data.strides == p._data.strides  # the parameter's layout (Fortran)
    assert p._data.flags.f_contiguous
    with pytest.raises(TypeError, match="enforce_grad_layout_policy"):
        autograd.enforce_grad_layout_policy("no")


def test_variable_raises_as_pytorchs():
    with pytest.raises(RuntimeError, match=r"variable\(\.\.\.\) is deprecated: use "
                                           r"ndgrad\.tensor\(\.\.\.\)"):
        autograd.variable([1.0])


# -- NestedIOFunction ------------------------------------------------------------------------

class Mix(NestedIOFunction):
    """Inputs x, (y, z), {"w": w, "k": k}; outputs ({"a": x y, "b": [w sin z, x]}, z^2)."""

    def forward_extended(self, x, pair, opts):
        y, z = pair
        self.save_for_backward([x, (y, None)], {"z": z, "w": opts["w"]})
        self.k = opts["k"]
        self.seen_needs = self.needs_input_grad
        return {"a": x * y * self.k, "b": [nd.sin(z) * opts["w"], x]}, z ** 2

    def backward_extended(self, g_ab, g_z2):
        [x, (y, nothing)], d = self.saved_tensors
        assert nothing is None
        z, w = d["z"], d["w"]
        ga, (gb0, gb1) = g_ab["a"], g_ab["b"]
        return (ga * y * self.k + gb1,
                (ga * x * self.k, gb0 * w * nd.cos(z) + 2 * z * g_z2),
                {"w": (gb0 * nd.sin(z)).sum(), "k": None})


def mix_flat(x, y, z, w):
    out, z2 = Mix.apply(x, (y, z), {"w": w, "k": 3.0})
    return out["a"], out["b"][0], out["b"][1], z2


def _mix_inputs():
    return [nd.tensor(RNG.standard_normal(3), requires_grad=True) for _ in range(3)] + \
        [nd.tensor(1.5, requires_grad=True)]


def test_nested_io_values_and_structure():
    x, y, z, w = _mix_inputs()
    fn = Mix()
    out = fn(x, [y, z], {"w": w, "k": 3.0})
    assert type(out) is tuple and len(out) == 2
    d, z2 = out
    assert type(d) is dict and list(d) == ["a", "b"] and type(d["b"]) is list
    close(d["a"], val(x) * val(y) * 3.0)
    close(d["b"][0], np.sin(val(z)) * 1.5)
    close(d["b"][1], val(x))
    close(z2, val(z) ** 2)
    assert d["a"].grad_fn is z2.grad_fn and type(z2.grad_fn).__name__ == "MixBackward"
    assert d["b"][1] is not x and d["b"][1].grad_fn is z2.grad_fn  # an input returned
    assert fn.k == 3.0 and fn.seen_needs == (True, True, True, True)
    assert fn.needs_input_grad == (True, True, True, True)


def test_nested_io_gradients_match_finite_differences():
    assert gradcheck(mix_flat, tuple(_mix_inputs()))


def test_nested_io_second_order_matches_finite_differences():
    assert gradgradcheck(mix_flat, tuple(_mix_inputs()))


class Cube(NestedIOFunction):
    def forward_extended(self, d):
        self.save_for_backward(d)
        return {"y": d["x"] ** 3}

    def backward_extended(self, g):
        (d,) = self.saved_tensors
        return {"x": 3 * d["x"] ** 2 * g["y"]}


def test_nested_io_third_derivative_closed_form():
    xv = RNG.standard_normal(3)
    x = nd.tensor(xv, requires_grad=True)
    y = Cube.apply({"x": x})["y"].sum()
    (g1,) = autograd.grad(y, x, create_graph=True)
    (g2,) = autograd.grad(g1.sum(), x, create_graph=True)
    (g3,) = autograd.grad(g2.sum(), x)
    close(g1, 3 * xv ** 2)
    close(g2, 6 * xv)
    close(g3, np.full(3, 6.0))


class ExpPair(NestedIOFunction):
    """exp of two inputs, saving its outputs nested in a dict (read back rebuilt, with this
    node as their grad_fn, so the second derivative goes through the Function)."""

    def forward_extended(self, xs):
        ys = [nd.exp(x) for x in xs]
        self.save_for_backward({"ys": ys})
        return tuple(ys)

    def backward_extended(self, g0, g1):
        ys = self.saved_tensors[0]["ys"]
        return [g0 * ys[0], g1 * ys[1]]


def test_saved_outputs_nested_second_order():
    av, bv = RNG.standard_normal(2), RNG.standard_normal(1)
    a, b = nd.tensor(av, requires_grad=True), nd.tensor(bv, requires_grad=True)
    y0, y1 = ExpPair.apply([a, b])
    (ga,) = autograd.grad((y0 * y0).sum() + y1.sum(), a, create_graph=True)
    close(ga, 2 * np.exp(2 * av))
    (gga,) = autograd.grad(ga.sum(), a)
    close(gga, 4 * np.exp(2 * av))
    assert gradgradcheck(lambda u, v: ExpPair.apply([u, v]), (a, b))


Point = collections.namedtuple("Point", "p q")


class Swap(NestedIOFunction):
    """A namedtuple in, a namedtuple out (one argument each way), a non-tensor leaf passed."""

    def forward_extended(self, pt, label):
        self.label = label
        return Point(pt.q * 2.0, pt.p), label

    def backward_extended(self, g_pt, g_label):
        assert g_label is None and isinstance(g_pt, Point)
        return Point(g_pt.q, g_pt.p * 2.0), None


def test_namedtuples_and_non_tensor_leaves():
    pv, qv = RNG.standard_normal(2), RNG.standard_normal(2)
    p, q = nd.tensor(pv, requires_grad=True), nd.tensor(qv, requires_grad=True)
    out, label = Swap.apply(Point(p, q), "tag")
    assert type(out) is Point and label == "tag"
    close(out.p, 2 * qv)
    close(out.q, pv)
    (out.p * out.q).sum().backward()
    close(p.grad, 2 * qv)
    close(q.grad, 2 * pv)
    assert gradcheck(lambda a, b: tuple(Swap.apply(Point(a, b), 0)[0]),
                     (nd.tensor(pv, requires_grad=True), nd.tensor(qv, requires_grad=True)))


class DoubleFirst(NestedIOFunction):
    """Doubles xs[0] in place (marked dirty, nested), also returns a mask (non-diff)."""

    def forward_extended(self, xs):
        a, b = xs
        a.mul_(2.0)
        self.mark_dirty(xs=[a])
        mask = a > 0
        self.mark_non_differentiable({"m": [mask]})
        return [a, b * 3.0], mask

    def backward_extended(self, gs, g_mask):
        self.g_mask = g_mask
        return [gs[0] * 2.0, gs[1] * 3.0]


def test_nested_mark_dirty_and_mark_non_differentiable():
    xv = RNG.standard_normal(3)
    x = nd.tensor(xv, requires_grad=True)
    a, b = x * 1.0, x * 1.0
    v = a._version
    fn = DoubleFirst()
    (ra, rb), mask = fn([a, b])
    assert ra is a and type(a.grad_fn).__name__ == "DoubleFirstBackward"
    assert a._version == v + 2  # the in-place op, then mark_dirty (PyTorch: 0 -> 2 too)
    close(a, 2 * xv)
    close(rb, 3 * xv)
    assert not mask.requires_grad and mask.grad_fn is None
    np.testing.assert_array_equal(val(mask), 2 * xv > 0)
    (ra * ra + rb).sum().backward()  # d/dx (4 x^2 + 3 x)
    close(x.grad, 8 * xv + 3)
    np.testing.assert_array_equal(val(fn.g_mask), np.zeros(3))  # materialized


def test_nested_mark_dirty_of_a_leaf_that_requires_grad_is_an_error():
    x = nd.tensor(RNG.standard_normal(3), requires_grad=True)
    with pytest.raises(RuntimeError, match="DoubleFirst: a leaf tensor that requires grad"):
        DoubleFirst.apply([x, x * 1.0])


class OneUsed(NestedIOFunction):
    def forward_extended(self, x):
        self.set_materialize_grads(False)
        return [x * 2.0, x * 5.0]

    def backward_extended(self, gs):
        self.got = gs
        return gs[0] * 2.0


def test_set_materialize_grads_false_passes_none_in_the_nesting():
    xv = RNG.standard_normal(2)
    x = nd.tensor(xv, requires_grad=True)
    fn = OneUsed()
    y0, _ = fn(x)
    y0.sum().backward()
    assert type(fn.got) is list and fn.got[1] is None
    close(x.grad, np.full(2, 2.0))


def test_saved_tensor_modified_in_place_is_detected():
    x = nd.tensor(RNG.standard_normal(3), requires_grad=True)
    h = x * 1.0
    y = Cube.apply({"x": h})["y"]
    h.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_saved_tensors_freed_after_backward():
    x = nd.tensor(RNG.standard_normal(3), requires_grad=True)
    y = Cube.apply({"x": x})["y"].sum()
    y.backward(retain_graph=True)
    y.backward()  # retained once: accumulates
    close(x.grad, 6 * val(x) ** 2)
    with pytest.raises(RuntimeError, match=FREED_MSG[:40]):
        y.backward()


def test_no_reference_cycle_outlives_a_call():
    x = nd.tensor(RNG.standard_normal(3), requires_grad=True)
    gc.disable()
    try:
        y = Cube.apply({"x": x})["y"]
        node = weakref.ref(y.grad_fn)
        del y
        assert node() is None  # freed by reference counting alone
    finally:
        gc.enable()


def test_without_grad_nothing_is_recorded():
    xv = RNG.standard_normal(2)
    x = nd.tensor(xv, requires_grad=True)
    with nd.no_grad():
        y = Cube.apply({"x": x})["y"]
    assert not y.requires_grad
    close(y, xv ** 3)


# errors

class Plain(NestedIOFunction):
    def forward_extended(self, xs):
        return [x * 2.0 for x in xs]

    def backward_extended(self, gs):
        return self.reply(gs)


def _plain_backward(reply, n=2):
    Plain.reply = staticmethod(reply)
    xs = [nd.tensor(RNG.standard_normal(2), requires_grad=True) for _ in range(n)]
    outs = Plain.apply(xs)
    sum(o.sum() for o in outs).backward()
    return xs


def test_backward_extended_structure_mismatch_names_where():
    with pytest.raises(RuntimeError, match=r"Plain.backward_extended returned a list of "
                                           r"length 1 for input 0, which is a list of 2"):
        _plain_backward(lambda gs: [gs[0]])
    with pytest.raises(RuntimeError, match=r"returned a Tensor for input 0, which is a list"):
        _plain_backward(lambda gs: gs[0])
    with pytest.raises(RuntimeError, match=r"returned a list for input 0\[0\], which is a "
                                           "Tensor"):
        _plain_backward(lambda gs: (gs, gs[0]))

    class Two(NestedIOFunction):
        def forward_extended(self, a, b):
            return a * b

        def backward_extended(self, g):
            return g, g, g

    x = nd.tensor([1.0], requires_grad=True)
    with pytest.raises(RuntimeError, match=r"Two.backward_extended returned 3 gradients for "
                                           "2 inputs"):
        Two.apply(x, x * 2.0).backward()


def test_backward_extended_may_return_none_for_a_subtree():
    xs = _plain_backward(lambda gs: [gs[0] * 2.0, None])
    close(xs[0].grad, np.full(2, 2.0))
    assert xs[1].grad is None
    xs = _plain_backward(lambda gs: (None,))
    assert xs[0].grad is None and xs[1].grad is None


class Keyed(NestedIOFunction):
    def forward_extended(self, d):
        return d["x"] * d["s"]

    def backward_extended(self, g):
        return self.reply(g)


def _keyed_backward(reply):
    Keyed.reply = staticmethod(reply)
    x = nd.tensor(RNG.standard_normal(2), requires_grad=True)
    Keyed.apply({"x": x, "s": 2.0}).sum().backward()
    return x


def test_dict_gradients_errors_and_left_out_keys():
    x = _keyed_backward(lambda g: {"x": g * 2.0})  # "s" left out: None
    close(x.grad, np.full(2, 2.0))
    with pytest.raises(RuntimeError, match=r"gradient for input 0\['s'\], which is not a "
                                           "Tensor"):
        _keyed_backward(lambda g: {"x": g, "s": g})
    with pytest.raises(RuntimeError, match=r"gradients for the keys \['t'\] of input 0, "
                                           r"which has only the keys \['x', 's'\]"):
        _keyed_backward(lambda g: {"x": g, "t": g})
    with pytest.raises(RuntimeError, match=r"returned a tuple for input 0, which is a dict"):
        _keyed_backward(lambda g: ((g, None),))


def test_wrong_gradient_shape_is_caught_with_the_tensor_index():
    with pytest.raises(RuntimeError, match=r"PlainBackward.*index 1"):
        _plain_backward(lambda gs: [gs[0], nd.ones(5)])


def test_an_instance_runs_once():
    x = nd.tensor(RNG.standard_normal(2), requires_grad=True)
    fn = Cube()
    fn({"x": x})
    with pytest.raises(RuntimeError, match=r"this Cube instance has already run: .* call "
                                           r"Cube\(\)\(\.\.\.\) or Cube\.apply"):
        fn({"x": x})


def test_static_forward_or_backward_in_a_subclass_is_an_error():
    with pytest.raises(TypeError, match="Bad is a NestedIOFunction: write forward_extended"):
        class Bad(NestedIOFunction):
            @staticmethod
            def forward(ctx, x):
                return x


def test_ctx_methods_outside_a_call_and_non_tensors_saved_are_errors():
    fn = Cube()
    with pytest.raises(RuntimeError, match=r"Cube.saved_tensors is only available while "
                                           "forward_extended or backward_extended runs"):
        _ = fn.saved_tensors

    class SavesInt(NestedIOFunction):
        def forward_extended(self, x):
            self.save_for_backward([x, 3])
            return x * 1.0

    with pytest.raises(TypeError, match=r"SavesInt.save_for_backward takes tensors \(or "
                                        r"None\).*argument\[0\]\[1\] is of type int"):
        SavesInt.apply(nd.tensor([1.0], requires_grad=True))


def test_apply_keywords_missing_methods_and_empty_outputs_are_errors():
    x = nd.tensor([1.0], requires_grad=True)
    with pytest.raises(TypeError, match=r"Cube.apply\(\) got keyword arguments \['d'\]"):
        Cube.apply(d={"x": x})

    class NoBackward(NestedIOFunction):
        def forward_extended(self, x):
            return x * 2.0

    y = NoBackward.apply(x)
    close(y, [2.0])
    with pytest.raises(NotImplementedError, match="NoBackward: a NestedIOFunction must "
                                                  "implement backward_extended"):
        y.backward()

    class Empty(NestedIOFunction):
        def forward_extended(self, x):
            return []

    with pytest.raises(RuntimeError, match=r"Empty.forward_extended returned \[\], which "
                                           "holds no value"):
        Empty.apply(x)


def test_under_a_transform_it_refuses_clearly():
    x = nd.tensor(RNG.standard_normal(3))
    with pytest.raises(RuntimeError, match="Cube is a NestedIOFunction, which does not run "
                                           "under the ndgrad.func transforms"):
        nd.func.vmap(lambda t: Cube.apply({"x": t})["y"])(x)
    with pytest.raises(RuntimeError, match="does not run under the ndgrad.func transforms"):
        with autograd.forward_ad.dual_level():
            Cube.apply({"x": autograd.forward_ad.make_dual(x, nd.ones(3))})


# -- InplaceFunction ---------------------------------------------------------------------------

class Scale(InplaceFunction):
    """y = 3 x, in place when asked (the flag kept on ctx)."""

    @staticmethod
    def forward(ctx, x, inplace=False):
        ctx.inplace = inplace
        if not inplace:
            return x * 3.0
        ctx.mark_dirty(x)
        return x.mul_(3.0)

    @staticmethod
    def backward(ctx, g):
        return g * 3.0, None


def test_inplace_function_keeps_the_flag_on_the_instance():
    assert Scale().inplace is False
    assert Scale(inplace=True).inplace is True
    assert Scale(True).inplace is True
    assert isinstance(Scale(), autograd.Function)
    with pytest.raises(RuntimeError, match=r"call it through Scale.apply\(\.\.\.\).*ctx."
                                           "inplace = inplace"):
        Scale(inplace=True)(nd.tensor([1.0]))


def test_inplace_function_in_place_values_gradients_and_version():
    xv = RNG.standard_normal(3)
    x = nd.tensor(xv, requires_grad=True)
    a = x * 2.0
    saved_by_mul = a * a  # saves a at its current version
    v = a._version
    b = Scale.apply(a, True)
    assert b is a and b.grad_fn.inplace is True
    assert type(a.grad_fn).__name__ == "ScaleBackward"
    assert a._version == v + 2  # the in-place op, then mark_dirty (PyTorch: 0 -> 2 too)
    close(a, 6 * xv)
    (b ** 2).sum().backward()  # d/dx (6 x)^2
    close(x.grad, 72 * xv)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        saved_by_mul.sum().backward()


def test_inplace_function_out_of_place_path_and_gradcheck():
    xv = RNG.standard_normal(3)
    a = nd.tensor(xv, requires_grad=True)
    y = Scale.apply(a, False)
    assert y is not a and y.grad_fn.inplace is False
    close(a, xv)
    close(y, 3 * xv)
    assert gradcheck(lambda t: Scale.apply(t, False), (a,))
    assert gradcheck(lambda t: Scale.apply(t * 1.0, True), (a,))
    assert gradgradcheck(lambda t: Scale.apply(t * t, True), (a,))
