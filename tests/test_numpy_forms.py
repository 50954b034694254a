"""NumPy's small forms: ``ndgrad.r_`` / ``ndgrad.c_`` (ndgrad/_index_tricks.py), einsum's
sublist form, ``diag`` of a vector: values against NumPy, derivatives by gradcheck."""

from __future__ import annotations

import numpy as np
import pytest

import ndgrad as nd
from ndgrad.checks import gradcheck
from support import val

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
