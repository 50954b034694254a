"""NumPy's functions that have no derivative: indices (``argwhere``, ``unravel_index``,
``tril_indices`` ...), predicates and comparisons (``isclose``, ``array_equal``, ``isin``
...), set operations (``unique``, ``union1d`` ...), bins (``digitize``,
``histogram_bin_edges``), integer arithmetic (``gcd``, ``lcm``) and questions about shapes
and dtypes (``shape``, ``promote_types`` ...).

Each is ``ndgrad.<name>`` with NumPy's name and signature. It runs the array library's own
function (NumPy's, or CuPy's for tensors on a GPU) on the tensors' data, and arrays come back
as Tensors that never require grad, as PyTorch's ``argmax`` or ``isclose`` do: their results
are integers, booleans or selections whose derivative is zero or undefined. A tensor that
requires grad may be passed (its values are read); inside a transform, a grad level's value
is read one level down, and a vmap batch, which has no single value, is refused with a
message (``core.creation.constant_data``). The questions about a tensor's metadata (``shape``,
``ndim``, ``size``, ``iscomplexobj``, ``isrealobj``, ``isscalar``) read it without touching
the data, so they work under every transform.

NumPy's own functions on Tensors (``np.argwhere(t)``, through ``__array_function__``) run
these (:mod:`ndgrad.numpy.protocols`).

Examples
--------
>>> import ndgrad
>>> x = ndgrad.tensor([0.0, 2.0, 0.0, 3.0], requires_grad=True)
>>> ndgrad.argwhere(x)
tensor([[1],
        [3]])
>>> ndgrad.isclose(x, ndgrad.tensor([0.0, 2.0, 1.0, 3.0]))
tensor([ True,  True, False,  True])
"""

from __future__ import annotations

import inspect
import sys

import numpy as np

from ..core.backend import _BACKEND_BY_TYPE
from ..core.creation import constant_data
from ..core.tensor import Tensor

# name -> (summary, example call, its printed result). The examples are the functions'
# doctests (``__test__``); tests/test_numpy_namespace.py compares every function with
# NumPy's on several inputs.
_TABLE = {
    # ------------------------------------------------------------ indices and selections
    "argwhere": ("The indices of the nonzero elements, one row per element.",
                 "ndgrad.argwhere(ndgrad.tensor([[0.0, 1.0], [2.0, 0.0]]))",
                 "tensor([[0, 1],\n        [1, 0]])"),
    "flatnonzero": ("The indices of the nonzero elements of the flattened tensor.",
                    "ndgrad.flatnonzero(ndgrad.tensor([[0.0, 1.0], [2.0, 0.0]]))",
                    "tensor([1, 2])"),
    "argpartition": ("Indices that partition the tensor around its ``kth`` element.",
                     "ndgrad.argpartition(ndgrad.tensor([3.0, 1.0, 2.0]), 0)[0]",
                     "tensor(1)"),
    "lexsort": ("Indices that sort by several keys, the last key first.",
                "ndgrad.lexsort((ndgrad.tensor([1, 0, 1]), ndgrad.tensor([2, 2, 1])))",
                "tensor([2, 1, 0])"),
    "nanargmax": ("The index of the largest value, ignoring NaNs.",
                  "ndgrad.nanargmax(ndgrad.tensor([1.0, float('nan'), 3.0]))",
                  "tensor(2)"),
    "nanargmin": ("The index of the smallest value, ignoring NaNs.",
                  "ndgrad.nanargmin(ndgrad.tensor([float('nan'), 2.0, 3.0]))",
                  "tensor(1)"),
    "digitize": ("The index of the bin each value falls in.",
                 "ndgrad.digitize(ndgrad.tensor([0.5, 1.5, 2.5]), ndgrad.tensor([1.0, 2.0]))",
                 "tensor([0, 1, 2])"),
    "histogram_bin_edges": ("The edges of the bins ``histogram`` would use.",
                            "ndgrad.histogram_bin_edges(ndgrad.tensor([0.0, 1.0, 2.0]), bins=2)",
                            "tensor([0., 1., 2.])"),
    "ravel_multi_index": ("Flat indices of multi-indices into a shape.",
                          "ndgrad.ravel_multi_index((ndgrad.tensor([1, 2]), "
                          "ndgrad.tensor([0, 1])), (3, 2))",
                          "tensor([2, 5])"),
    "unravel_index": ("Multi-indices of flat indices into a shape.",
                      "ndgrad.unravel_index(ndgrad.tensor([2, 5]), (3, 2))",
                      "(tensor([1, 2]), tensor([0, 1]))"),
    "tril_indices": ("The indices of the lower triangle of an ``(n, m)`` matrix.",
                     "ndgrad.tril_indices(2)", "(tensor([0, 1, 1]), tensor([0, 0, 1]))"),
    "tril_indices_from": ("The indices of the lower triangle of a matrix.",
                          "ndgrad.tril_indices_from(ndgrad.ones((2, 2)))",
                          "(tensor([0, 1, 1]), tensor([0, 0, 1]))"),
    "triu_indices": ("The indices of the upper triangle of an ``(n, m)`` matrix.",
                     "ndgrad.triu_indices(2)", "(tensor([0, 0, 1]), tensor([0, 1, 1]))"),
    "triu_indices_from": ("The indices of the upper triangle of a matrix.",
                          "ndgrad.triu_indices_from(ndgrad.ones((2, 2)))",
                          "(tensor([0, 0, 1]), tensor([0, 1, 1]))"),
    "diag_indices": ("The indices of the main diagonal of an ``n``-sided array.",
                     "ndgrad.diag_indices(2)", "(tensor([0, 1]), tensor([0, 1]))"),
    "diag_indices_from": ("The indices of the main diagonal of a square tensor.",
                          "ndgrad.diag_indices_from(ndgrad.ones((2, 2)))",
                          "(tensor([0, 1]), tensor([0, 1]))"),
    "mask_indices": ("The indices where ``mask_func`` keeps the entries of an ``n`` by ``n`` "
                     "array of ones.",
                     "ndgrad.mask_indices(2, ndgrad.triu)",
                     "(tensor([0, 0, 1]), tensor([0, 1, 1]))"),
    "ix_": ("Open meshes of indices from 1-D sequences, for cross-product indexing.",
            "[i.shape for i in ndgrad.ix_(ndgrad.tensor([0, 1]), ndgrad.tensor([2, 0, 1]))]",
            "[(2, 1), (1, 3)]"),
    # ------------------------------------------------------------ predicates and comparisons
    "isclose": ("Elementwise: whether two tensors are equal within a tolerance.",
                "ndgrad.isclose(ndgrad.tensor([1.0, 2.0]), ndgrad.tensor([1.0 + 1e-9, 2.1]))",
                "tensor([ True, False])"),
    "allclose": ("Whether two tensors are equal within a tolerance everywhere.",
                 "ndgrad.allclose(ndgrad.tensor([1.0, 2.0]), ndgrad.tensor([1.0, 2.0 + 1e-9]))",
                 "True"),
    "array_equal": ("Whether two tensors have the same shape and values.",
                    "ndgrad.array_equal(ndgrad.tensor([1.0, 2.0]), ndgrad.tensor([1.0, 2.0]))",
                    "True"),
    "array_equiv": ("Whether two tensors are equal after broadcasting.",
                    "ndgrad.array_equiv(ndgrad.tensor([1.0, 2.0]), "
                    "ndgrad.tensor([[1.0, 2.0], [1.0, 2.0]]))",
                    "True"),
    "isin": ("Elementwise: whether each value is among ``test_elements``.",
             "ndgrad.isin(ndgrad.tensor([1, 2, 3]), ndgrad.tensor([2, 3]))",
             "tensor([False,  True,  True])"),
    "isneginf": ("Elementwise: whether a value is negative infinity.",
                 "ndgrad.isneginf(ndgrad.tensor([-float('inf'), 0.0]))",
                 "tensor([ True, False])"),
    "isposinf": ("Elementwise: whether a value is positive infinity.",
                 "ndgrad.isposinf(ndgrad.tensor([float('inf'), 0.0]))",
                 "tensor([ True, False])"),
    "iscomplex": ("Elementwise: whether a value has a nonzero imaginary part.",
                  "ndgrad.iscomplex(ndgrad.tensor([1.0 + 0j, 1j]))",
                  "tensor([False,  True])"),
    "isreal": ("Elementwise: whether a value's imaginary part is zero.",
               "ndgrad.isreal(ndgrad.tensor([1.0 + 0j, 1j]))",
               "tensor([ True, False])"),
    # ------------------------------------------------------------ set operations
    "unique": ("The sorted unique values (and, on request, indices, inverse and counts).",
               "ndgrad.unique(ndgrad.tensor([3.0, 1.0, 3.0]), return_counts=True)",
               "(tensor([1., 3.]), tensor([1, 2]))"),
    "intersect1d": ("The sorted values in both tensors.",
                    "ndgrad.intersect1d(ndgrad.tensor([1, 2, 3]), ndgrad.tensor([3, 1, 5]))",
                    "tensor([1, 3])"),
    "union1d": ("The sorted values in either tensor.",
                "ndgrad.union1d(ndgrad.tensor([1, 2]), ndgrad.tensor([3, 1]))",
                "tensor([1, 2, 3])"),
    "setdiff1d": ("The sorted values of the first tensor not in the second.",
                  "ndgrad.setdiff1d(ndgrad.tensor([1, 2, 3]), ndgrad.tensor([2]))",
                  "tensor([1, 3])"),
    "setxor1d": ("The sorted values in exactly one of the tensors.",
                 "ndgrad.setxor1d(ndgrad.tensor([1, 2]), ndgrad.tensor([2, 3]))",
                 "tensor([1, 3])"),
    # ------------------------------------------------------------ integer arithmetic
    "gcd": ("Elementwise greatest common divisor of integers.",
            "ndgrad.gcd(ndgrad.tensor([12, 20]), ndgrad.tensor([18, 8]))", "tensor([6, 4])"),
    "lcm": ("Elementwise least common multiple of integers.",
            "ndgrad.lcm(ndgrad.tensor([4, 6]), ndgrad.tensor([6, 4]))", "tensor([12, 12])"),
    # ------------------------------------------------------------ shapes and dtypes
    "broadcast_shapes": ("The shape that shapes broadcast to.",
                         "ndgrad.broadcast_shapes((2, 1), (3,))", "(2, 3)"),
    "promote_types": ("The smallest dtype both dtypes can be cast to safely.",
                      "ndgrad.promote_types(ndgrad.float32, ndgrad.int64)",
                      "dtype('float64')"),
    "min_scalar_type": ("The smallest dtype that holds a value.",
                        "ndgrad.min_scalar_type(300)", "dtype('uint16')"),
    "common_type": ("The floating dtype common to the tensors.",
                    "ndgrad.common_type(ndgrad.tensor([1, 2]), ndgrad.tensor([1.0], "
                    "dtype=ndgrad.float32))",
                    "<class 'numpy.float64'>"),
    "mintypecode": ("The character of the smallest safe dtype among typecodes.",
                    "ndgrad.mintypecode(['d', 'f'])", "'d'"),
    "issubdtype": ("Whether a dtype is lower in NumPy's type hierarchy than another.",
                   "ndgrad.issubdtype(ndgrad.float32, ndgrad.float64)", "False"),
    "einsum_path": ("The order of contractions ``einsum`` would take (and its cost report).",
                    "ndgrad.einsum_path('ij,jk->ik', ndgrad.ones((2, 3)), "
                    "ndgrad.ones((3, 4)))[0]",
                    "['einsum_path', (0, 1)]"),
}

# Questions answered from a tensor's metadata: no data is read, so they work under every
# transform (a vmap batch answers for one example, as NumPy would inside the loop).
_METADATA = {
    "shape": ("The shape of a tensor (or of anything ``numpy.shape`` accepts).",
              "ndgrad.shape(ndgrad.ones((2, 3)))", "(2, 3)"),
    "ndim": ("The number of dimensions of a tensor.", "ndgrad.ndim(ndgrad.ones((2, 3)))", "2"),
    "size": ("The number of elements of a tensor, or along ``axis``.",
             "ndgrad.size(ndgrad.ones((2, 3)), 1)", "3"),
    "iscomplexobj": ("Whether a tensor's dtype is complex.",
                     "ndgrad.iscomplexobj(ndgrad.tensor([1j]))", "True"),
    "isrealobj": ("Whether a tensor's dtype is not complex.",
                  "ndgrad.isrealobj(ndgrad.tensor([1.0]))", "True"),
    "isscalar": ("Whether an object is a scalar: a Tensor never is (as NumPy's 0-d arrays).",
                 "ndgrad.isscalar(ndgrad.tensor(1.0)), ndgrad.isscalar(1.0)", "(False, True)"),
    "iterable": ("Whether an object can be iterated: a 0-d tensor cannot.",
                 "ndgrad.iterable(ndgrad.tensor(1.0)), ndgrad.iterable(ndgrad.ones(2))",
                 "(False, True)"),
}

__all__ = sorted(_TABLE) + sorted(_METADATA)


def _nd():
    return sys.modules["ndgrad"]


def backend_of_args(args, kwargs):
    """The backend of the first Tensor among the arguments (lists and tuples searched), or
    None."""
    for v in list(args) + list(kwargs.values()):
        if isinstance(v, Tensor):
            return v.backend
        if type(v) in (list, tuple):
            B = backend_of_args(v, {})
            if B is not None:
                return B
    return None


def unwrap(x, who):
    """``x`` with every Tensor (also inside lists, tuples, dicts) replaced by its data."""
    if isinstance(x, Tensor):
        return constant_data(x, who)[0]
    if type(x) in (list, tuple):
        return type(x)(unwrap(v, who) for v in x)
    if type(x) is dict:
        return {k: unwrap(v, who) for k, v in x.items()}
    return x


def wrap_arrays(result):
    """``result`` with every array or NumPy scalar (also inside tuples, named tuples, lists)
    as a Tensor; Python numbers and bools stay as they are."""
    if isinstance(result, tuple):
        wrapped = [wrap_arrays(r) for r in result]
        return type(result)(*wrapped) if hasattr(result, "_fields") else tuple(wrapped)
    if isinstance(result, list):
        return [wrap_arrays(r) for r in result]
    if type(result) in _BACKEND_BY_TYPE or isinstance(result, np.generic):
        return _nd().asarray(result)  # NumPy's scalars too: a 0-d Tensor, as ndgrad.argmax
    return result


def on_data(np_func, qualname):
    """``np_func`` (NumPy's ``qualname``, e.g. ``"argwhere"`` or ``"linalg.matrix_rank"``)
    run on the data of the Tensors among its arguments, by the tensors' array library;
    arrays come back as Tensors that do not require grad."""
    module, _, name = qualname.rpartition(".")
    who = f"ndgrad.{qualname}"

    def impl(*args, **kwargs):
        B = backend_of_args(args, kwargs)
        fn = np_func
        if B is not None and B.name != "numpy":
            fn = getattr(getattr(B, module) if module else B, name)
        return wrap_arrays(fn(*unwrap(args, who), **unwrap(kwargs, who)))
    return impl


# a Tensor's answer to each metadata question, from its shape and dtype alone
_FROM_METADATA = {
    "shape": lambda a: tuple(a.shape),
    "ndim": lambda a: a.ndim,
    "size": lambda a, axis=None: a.size if axis is None else a.shape[axis],
    "iscomplexobj": lambda a: a.dtype.kind == "c",
    "isrealobj": lambda a: a.dtype.kind != "c",
    "isscalar": lambda a: False,  # (as NumPy's 0-d arrays)
    "iterable": lambda a: a.ndim > 0,
}


def _metadata(name):
    np_func, answer = getattr(np, name), _FROM_METADATA[name]

    def impl(*args, **kwargs):
        if args and isinstance(args[0], Tensor):
            return answer(*args, **kwargs)
        return np_func(*args, **kwargs)
    return impl


def _document(fn, name, summary, call, result):
    try:
        fn.__signature__ = inspect.signature(getattr(np, name))
    except (TypeError, ValueError):
        pass
    fn.__name__ = fn.__qualname__ = name
    fn.__module__ = "ndgrad"
    fn.__doc__ = (f"{summary} No derivative.\n\n"
                  f"NumPy's ``numpy.{name}``, with its signature, run on the tensors' data; "
                  "arrays come back as Tensors that do not require grad (see NumPy's "
                  "documentation for the parameters).\n\n"
                  f"Examples\n--------\n>>> import ndgrad\n>>> {call}\n{result}\n")
    return fn


FUNCTIONS = {}
for _name, (_summary, _call, _result) in _TABLE.items():
    FUNCTIONS[_name] = _document(on_data(getattr(np, _name), _name), _name, _summary, _call,
                                 _result)
for _name, (_summary, _call, _result) in _METADATA.items():
    FUNCTIONS[_name] = _document(_metadata(_name), _name, _summary, _call, _result)

# their examples, for --doctest-modules (generated functions are not found by doctest)
__test__ = {name: fn.__doc__ for name, fn in FUNCTIONS.items()}
