"""NumPy's small forms: ``ndgrad.r_`` / ``ndgrad.c_`` (ndgrad/numpy/index_tricks.py), einsum's
sublist form, ``diag`` of a vector: values against NumPy, derivatives by gradcheck."""

from __future__ import annotations

import numpy as np
import pytest

import ndgrad as nd
from ndgrad import func
from ndgrad.checks import gradcheck
from support import host, val

RNG = np.random.default_rng(11)


def T(a, grad=True):
    return nd.tensor(np.asarray(a, dtype=np.float64), requires_grad=grad)


def test_r_and_c_match_numpy():
    a, b = RNG.normal(size=3), RNG.normal(size=2)
    np.testing.assert_array_equal(val(nd.r_[T(a), 0:4:2, 7.0, T(b)]),
                                  np.r_[a, 0:4:2, 7.0, b])
    np.testing.assert_allclose(val(nd.r_[T(a), 0:1:5j]), np.r_[a, 0:1:5j])
    np.testing.assert_array_equal(val(nd.c_[T(a), T(a + 1)]), np.c_[a, a + 1])
    m = RNG.normal(size=(3, 2))
    np.testing.assert_array_equal(val(nd.c_[T(m), T(a)]), np.c_[m, a])
    assert nd.r_[T(a), 1].dtype == nd.float64
    with pytest.raises(NotImplementedError, match="string directives"):
        nd.r_["0,2", T(a)]


@pytest.mark.cpu_only("finite differences of concatenations: the device paths of concatenate "
                      "are checked by the registry suites")
def test_r_and_c_are_differentiable():
    a, b = T(RNG.normal(size=3)), T(RNG.normal(size=3))
    assert gradcheck(lambda a, b: nd.r_[a, 0:2, b] ** 2, (a, b))
    assert gradcheck(lambda a, b: nd.c_[a, b] ** 2, (a, b))


def test_einsum_sublist_form():
    a, b = RNG.normal(size=(2, 3)), RNG.normal(size=(3, 4))
    np.testing.assert_allclose(val(nd.einsum(T(a), [0, 1], T(b), [1, 2])),
                               np.einsum(a, [0, 1], b, [1, 2]), rtol=1e-13)
    np.testing.assert_allclose(val(nd.einsum(T(a), [0, 1], T(b), [1, 2], [2, 0])),
                               np.einsum(a, [0, 1], b, [1, 2], [2, 0]), rtol=1e-13)
    np.testing.assert_allclose(val(nd.einsum(T(a), [Ellipsis, 1], [Ellipsis])),
                               np.einsum(a, [Ellipsis, 1], [Ellipsis]), rtol=1e-13)
    assert gradcheck(lambda a, b: nd.einsum(a, [0, 1], b, [1, 2], [2, 0]), (T(a), T(b)))
    with pytest.raises(ValueError, match="sublist must be an integer"):
        nd.einsum(T(a), [0, "x"])


def test_diag_of_a_vector():
    v = RNG.normal(size=3)
    np.testing.assert_array_equal(val(nd.diag(T(v), k=1)), np.diag(v, k=1))
    assert gradcheck(lambda v: nd.diag(v, k=-1), (T(v),))


def test_reductions_and_norms_of_lists_of_tensors():
    # NumPy's array of the list, made differentiable (as jnp.array): sum([x, 2x, 3]) = 3x + 3
    x = nd.tensor(0.5, requires_grad=True)
    s = nd.sum([x, x * 2, 3.0])
    s.backward()
    assert float(s) == 4.5 and float(x.grad) == 3.0
    g = func.grad(lambda x: nd.linalg.norm([x, 4.0]))(nd.tensor(3.0))
    assert abs(float(g) - 0.6) < 1e-15                     # x / sqrt(x^2 + 16)
    assert float(func.grad(lambda x: nd.prod([x, x, 2.0]))(nd.tensor(3.0))) == 12.0
    np.testing.assert_allclose(host(nd.mean([[x, 1.0], [2.0, x]])), 1.0)
    np.testing.assert_allclose(host(nd.maximum([x, 2.0], 1.0)), [1.0, 2.0])
    assert float(nd.sum([1.0, 2.0])) == 3.0                # numbers only: as NumPy


def test_linspace_differentiable_in_its_endpoints():
    start = nd.tensor(0.0, requires_grad=True)
    y = nd.linspace(start, 1.0, 5)
    np.testing.assert_allclose(host(y), np.linspace(0.0, 1.0, 5))
    y.sum().backward()
    assert float(start.grad) == 2.5                        # sum of (1 - t_i)
    g = func.grad(lambda s: nd.linspace(0.0, s, 3).sum())(nd.tensor(2.0))
    assert float(g) == 1.5                                 # 0 + 1/2 + 1
    a = nd.linspace(nd.tensor([0.0, 1.0]), nd.tensor([1.0, 3.0]), 3, axis=1)
    np.testing.assert_allclose(host(a), np.linspace([0.0, 1.0], [1.0, 3.0], 3, axis=1))
    v, step = nd.linspace(0, 1, 4, retstep=True)
    np.testing.assert_allclose(host(v), np.linspace(0, 1, 4))
    assert step == np.linspace(0, 1, 4, retstep=True)[1]
    np.testing.assert_allclose(host(nd.linspace(0.0, 1.0, 4, endpoint=False)),
                               np.linspace(0.0, 1.0, 4, endpoint=False))
