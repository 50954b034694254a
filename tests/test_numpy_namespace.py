"""ndgrad's namespaces against NumPy's: every function of ``numpy``, ``numpy.linalg`` and
``numpy.fft`` that computes on array values exists in ndgrad under its NumPy name, except the
deliberate exceptions below, each with its reason. At most 5 % of NumPy's numerical functions
may be exceptions.

Also NumPy's functions without a derivative (``ndgrad/numpy/without_derivative.py``) against
NumPy's own results.
"""

from __future__ import annotations

import numpy as np
import pytest

import ndgrad
from ndgrad.numpy import NOT_IN_NDGRAD
from ndgrad.numpy.without_derivative import FUNCTIONS
from support import host

# Not numerical: these do not compute on array values, so ndgrad has no reason to have them
# (the groups and reasons ndgrad.numpy's AttributeError gives: Note [NumPy's names in
# ndgrad.numpy]).
NOT_NUMERICAL = NOT_IN_NDGRAD

# Numerical functions ndgrad does not have (yet), each with its reason.
NUMERICAL_GAPS: dict[str, str] = {
}

# what the lists were last checked against; a newer NumPy may add names
CHECKED_NUMPY = (2, 4)


def _functions(module):
    """The public non-class callables of a module."""
    return {n for n in dir(module) if not n.startswith("_")
            and callable(getattr(module, n)) and not isinstance(getattr(module, n), type)}


def _excepted():
    names = set(NUMERICAL_GAPS)
    for group in NOT_NUMERICAL.values():
        names |= group
    return names


def _numpy_version():
    return tuple(int(p) for p in np.__version__.split(".")[:2])


@pytest.mark.parametrize("module", ["", "linalg", "fft"])
def test_ndgrad_has_numpys_functions(module):
    np_mod = getattr(np, module) if module else np
    nd_mod = getattr(ndgrad, module) if module else ndgrad
    missing = {n for n in _functions(np_mod) if not hasattr(nd_mod, n)}
    excepted = _excepted() if not module else {"test"}
    unexplained = sorted(missing - excepted)
    if unexplained and _numpy_version() > CHECKED_NUMPY:
        pytest.skip(f"NumPy {np.__version__} is newer than the lists; new names: {unexplained}")
    assert not unexplained, f"numpy{'.' + module if module else ''} functions ndgrad lacks " \
        f"and the exception lists do not explain: {unexplained}"


def test_exception_lists_are_honest():
    """Every exception is a NumPy function ndgrad really lacks (no stale entries), and the
    numerical gaps are at most 5 % of NumPy's numerical functions."""
    present = _functions(np)
    excepted = _excepted()
    assert not {n for n in excepted if hasattr(ndgrad, n) and n in present}, \
        "listed as missing but ndgrad has them"
    numerical = present - set().union(*NOT_NUMERICAL.values())
    assert len(NUMERICAL_GAPS) <= 0.05 * len(numerical), (len(NUMERICAL_GAPS), len(numerical))
    for reason in list(NOT_NUMERICAL) + list(NUMERICAL_GAPS.values()):
        assert len(reason) > 20


# -------------------------------------------------------- functions without a derivative
T = ndgrad.tensor
_I = np.array([[0, 3, 1], [2, 0, 5]])
_X = np.array([[0.0, 1.5, -2.0], [np.nan, 0.0, 3.0]])
_Y = np.array([1.0, -np.inf, 2.0, np.inf, 1.0 + 1e-12])

# name -> argument tuples (NumPy arrays become Tensors for ndgrad, stay arrays for NumPy)
CASES = {
    "argwhere": [(_X,), (_I,)],
    "flatnonzero": [(_X,), (_I,)],
    "argpartition": [(_I[0], 1), (_Y[[0, 2, 4]], 0)],
    "lexsort": [((_I[0], _I[1]),)],
    "nanargmax": [(_X,), (_X, 1)],
    "nanargmin": [(_X,), (_X, 0)],
    "digitize": [(_Y, np.array([0.0, 1.0, 1.5])), (_Y, np.array([0.0, 1.0]), True)],
    "histogram_bin_edges": [(_Y[[0, 2, 4]], 3), (_I, "auto")],
    "ravel_multi_index": [((np.array([1, 0]), np.array([2, 1])), (2, 3))],
    "unravel_index": [(np.array([5, 1]), (2, 3)), (4, (3, 2))],
    "tril_indices": [(3,), (3, 1, 4)],
    "tril_indices_from": [(_X,), (_X, -1)],
    "triu_indices": [(3,), (2, 0, 3)],
    "triu_indices_from": [(_X,), (_X, 1)],
    "diag_indices": [(3,), (2, 3)],
    "diag_indices_from": [(np.ones((3, 3)),)],
    "mask_indices": [(3, np.triu), (3, np.tril, -1)],
    "ix_": [(np.array([0, 1]), np.array([2, 0]))],
    "isclose": [(_Y, _Y[::-1]), (_Y, 1.0)],
    "allclose": [(_Y, _Y), (_Y[[0, 2]], np.array([1.0, 2.0 + 1e-3]))],
    "array_equal": [(_I, _I.copy()), (_X, _X, True), (_I, _I[:1])],
    "array_equiv": [(_I[0], np.stack([_I[0], _I[0]])), (_I, _I[::-1])],
    "isin": [(_I, np.array([0, 5])), (_I, np.array([0, 5]), True, True)],
    "isneginf": [(_Y,)],
    "isposinf": [(_Y,)],
    "iscomplex": [(np.array([1.0 + 0j, 1j, 2.0]),), (_Y,)],
    "isreal": [(np.array([1.0 + 0j, 1j, 2.0]),), (_Y,)],
    "unique": [(_I,), (_Y[[0, 2, 4, 0]], True, True, True)],
    "intersect1d": [(_I, np.array([3, 5, 7])), (_I[0], _I[1], False, True)],
    "union1d": [(_I[0], _I[1])],
    "setdiff1d": [(_I, np.array([0, 5]))],
    "setxor1d": [(_I[0], _I[1])],
    "gcd": [(_I, np.array([6, 4, 10]))],
    "lcm": [(_I, np.array([6, 4, 10]))],
    "broadcast_shapes": [((2, 1), (3,)), ((1,), (4, 1), ())],
    "promote_types": [(np.float32, np.int64), (np.int8, np.uint8)],
    "min_scalar_type": [(300,), (-1.5,)],
    "common_type": [(_I.astype(np.float32),), (_X, _I.astype(np.float32))],
    "mintypecode": [(["d", "f"],), ("if",)],
    "issubdtype": [(np.float32, np.floating), (np.int8, np.floating)],
    "einsum_path": [("ij,jk->ik", np.ones((2, 3)), np.ones((3, 4)))],
    "shape": [(_X,), (3.0,)],
    "ndim": [(_X,), (3.0,)],
    "size": [(_X,), (_X, 1)],
    "iscomplexobj": [(_X,), (np.array([1j]),)],
    "isrealobj": [(_X,), (np.array([1j]),)],
    "isscalar": [(_X[0, 0:1],), (3.0,)],
    "iterable": [(_X,), (3.0,)],
}


def _to_nd(v):
    if isinstance(v, np.ndarray):
        return T(v, dtype=v.dtype)
    if type(v) in (list, tuple):
        return type(v)(_to_nd(u) for u in v)
    return v


def _same(got, want):
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            _same(g, w)
    elif isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want)
        for g, w in zip(got, want):
            _same(g, w)
    elif isinstance(want, (np.ndarray, np.generic)):
        assert isinstance(got, ndgrad.Tensor) and not got.requires_grad
        g = host(got)
        assert g.dtype == want.dtype and g.shape == np.shape(want)
        np.testing.assert_array_equal(g, want)
    else:
        assert type(got) is type(want) and (got == want or got != got and want != want), \
            (got, want)


def test_every_function_has_cases():
    assert sorted(CASES) == sorted(FUNCTIONS)


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_numpy(name):
    fn, np_fn = getattr(ndgrad, name), getattr(np, name)
    for args in CASES[name]:
        _same(fn(*_to_nd(args)), np_fn(*args))
        if any(isinstance(a, np.ndarray) for a in args):  # NumPy's own call dispatches here
            _same(np_fn(*_to_nd(args)), np_fn(*args))


def test_values_of_tensors_that_require_grad_and_of_a_grad_level():
    x = T([0.0, 2.0, 0.0, 3.0], requires_grad=True)
    got = ndgrad.argwhere(x)
    assert not got.requires_grad and host(got).tolist() == [[1], [3]]

    seen = []

    def f(v):  # argwhere inside grad reads the value one level down
        seen.append(host(ndgrad.flatnonzero(v)).tolist())
        return (v ** 2).sum()
    g = ndgrad.func.grad(f)(x.detach())
    assert seen == [[1, 3]] and host(g).tolist() == [0.0, 4.0, 0.0, 6.0]


def test_under_vmap_metadata_works_and_values_are_refused():
    xs = T(np.arange(6.0).reshape(2, 3))
    shapes = []

    def f(v):
        shapes.append((ndgrad.shape(v), ndgrad.ndim(v), ndgrad.size(v)))
        return v * 2
    ndgrad.func.vmap(f)(xs)
    assert shapes == [((3,), 1, 3)]
    with pytest.raises(TypeError, match="ndgrad.argwhere: its result has no derivative"):
        ndgrad.func.vmap(ndgrad.argwhere)(xs)
