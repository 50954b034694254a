"""Publishing a declaration (Note [Publishing a declaration] in core/ops/registry.py): one
function publishes every op, composite and alias, those of core/ops when that package is
imported and those declared later, above core, the moment they are declared."""

from __future__ import annotations

import subprocess
import sys

import pytest

from ndgrad.core import ops
from ndgrad.core.backend import NUMPY
from ndgrad.core.ops import registry

pytestmark = pytest.mark.cpu_only("it reads the registry, not a device")


def test_every_declaration_is_published_by_the_hook_installed_in_the_registry():
    assert registry.ON_DECLARE == [ops.publish]
    for obj in list(ops.REGISTRY.values()) + list(ops.COMPOSITES.values()):
        assert obj.public is not None, obj
        home = ops.NAMESPACED[obj.namespace] if obj.namespace else ops.PUBLIC
        assert home[obj.name] is obj.public
        # (an op's own formula where it declares one: Note [Formulas on Python numbers])
        assert obj.of(ops.TENSOR_F) is (getattr(obj, "formula", None) or obj.public)
        ns = getattr(NUMPY.F, obj.namespace) if obj.namespace else NUMPY.F
        assert hasattr(ns, obj.name), obj
    for alias, target in registry.ALIASES.items():
        assert ops.PUBLIC[alias] is ops.PUBLIC[target]


# (in a fresh interpreter: the suite's registry stays as the package declares it)
LATER = r"""
import numpy as np
import ndgrad
from ndgrad.core import ops
from ndgrad.core.backend import NUMPY
from ndgrad.core.ops.registry import ELEMENTWISE, defalias, defcomposite, defop

@defcomposite(kind=ELEMENTWISE, method=True)
def cube_plus_one(F, x):
    "x**3 + 1."
    return F.multiply(F.multiply(x, x), x) + 1

defalias("cube1", "cube_plus_one")

@defop(kind=ELEMENTWISE, method=True, inplace_method="twice_")
def twice(B, x):
    "2 x."
    return B.multiply(x, 2.0)

twice.defvjp(lambda F, g, out, x: F.multiply(g, 2.0))
twice.defjvp(lambda F, t, out, x: F.multiply(t, 2.0))

@twice.defpublic
def _twice(x, scale_first=False):
    from ndgrad.core.dispatch import apply
    return apply(twice, x)

x = ndgrad.tensor([1.0, 2.0], requires_grad=True)
assert ops.PUBLIC["cube_plus_one"] is ops.TENSOR_F.cube_plus_one is ops.PUBLIC["cube1"]
y = ops.PUBLIC["cube1"](x).sum() + x.cube_plus_one().sum() + x.cube1().sum()
y.backward()
assert np.allclose(x.grad.numpy(), 9 * np.array([1.0, 4.0])), x.grad
assert np.allclose(NUMPY.F.cube_plus_one(np.array([2.0])), [9.0])
assert ops.PUBLIC["twice"] is _twice and ops.TENSOR_F.twice is _twice
import inspect
assert "scale_first" in str(inspect.signature(ops.PUBLIC["twice"]))
x.grad = None
x.twice().sum().backward()
assert np.allclose(x.grad.numpy(), [2.0, 2.0])
assert np.allclose(NUMPY.F.twice(np.array([3.0])), [6.0])
z = ndgrad.tensor([1.0, 2.0]).twice_()
assert np.allclose(z.numpy(), [2.0, 4.0])
print("ok")
"""


def test_a_declaration_made_above_core_is_published_as_it_is_made():
    out = subprocess.run([sys.executable, "-c", LATER], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_an_op_named_as_an_alias_is_refused():
    with pytest.raises(ValueError, match="alias"):
        ops.publish(registry.COMPOSITES.get("sub") or _fake("sub"))


def _fake(name):
    class Fake:
        namespace = None
        public = None
    fake = Fake()
    fake.name = fake.qualname = name
    return fake
