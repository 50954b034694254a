"""The formula namespace over Tensors, ``TENSOR_F``, and what the layers below the ops build
with it: a Python sequence holding tensors read as one array (Note [Sequences of tensors]).

``TENSOR_F`` is ndgrad's public functions as a namespace (filled by ``ndgrad.core.ops`` from
the op registry): formulas run on it are recorded and transformed, and a lower layer that
must run an op (``creation``'s ``asarray`` stacking a list, ``dispatch`` stacking an op's
array input) calls it through it, never importing the ops layer.
"""

from __future__ import annotations

from .backend import NUMPY
from .tensor import Tensor, _default_float

__all__ = ["Namespace", "TENSOR_F", "VARIADIC", "SEQUENCES", "holds_tensor", "stack_nested",
           "sequences_stacked", "inputs_by_position", "PY_SCALARS", "scalar_array",
           "scalars_as_arrays"]

VARIADIC = -1  # an op's `nin` when it takes any number of array inputs


class Namespace:
    """A formula namespace ``F``: attribute access to functions (filled by
    ``ndgrad.core.ops`` from the op registry)."""

    def __init__(self, name):
        self._name = name

    def __repr__(self):
        return f"<formula namespace {self._name}>"


# The formula namespace over Tensors: ndgrad's public functions, so that formulas run on it
# are recorded and transformed. The raw namespaces (first order, on arrays) are `B.F`.
TENSOR_F = Namespace("ndgrad")


# Note [Sequences of tensors]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~
# An array input given as a (nested) list or tuple holding tensors, ``ndgrad.sum([x, 2 * x])``,
# is NumPy's array of it made differentiable (as JAX's ``jnp.array``): the elements stacked by
# ndgrad's ``stack`` (numbers and arrays lifted to the tensors' device and dtype; elements of
# different shapes are a ValueError, as NumPy's inhomogeneous array is). A sequence of plain
# numbers goes to the forward as NumPy would take it. ``dispatch.apply`` stacks it before
# anything else sees it: before a transform level's interpreter (whose values may hide in the
# list), and for every array input of a variadic op (``concat``'s and ``einsum``'s operands,
# one by one). The public functions that read their arguments themselves call
# ``stack_nested`` too: composites (all their array inputs, except those a composite declares
# to take a sequence of arrays as such, ``select``'s ``condlist``), ``ndgrad.array``,
# ``asarray``, ``full`` and ``full_like``. tests/test_op_sequences.py checks every op of the
# registry against the same op on the stacked tensor, under grad, jvp and vmap too.
SEQUENCES = (list, tuple)


def holds_tensor(seq):
    """Whether the list or tuple ``seq`` holds a Tensor, at any depth."""
    for e in seq:
        if isinstance(e, Tensor) or (type(e) in SEQUENCES and holds_tensor(e)):
            return True
    return False


def stack_nested(seq, who):
    """The tensor NumPy's ``array(seq)`` would be, differentiable in the tensors in ``seq``
    (Note [Sequences of tensors]); ``who`` names the public function in an error."""
    items = []
    like = None
    for e in seq:
        if type(e) in SEQUENCES and holds_tensor(e):
            e = stack_nested(e, who)
        if like is None and isinstance(e, Tensor):
            like = e
        items.append(e)
    shape = tuple(like.shape)
    for k, e in enumerate(items):
        s = tuple(e.shape) if isinstance(e, Tensor) else NUMPY.shape(e)
        if s != shape:
            raise ValueError(
                f"ndgrad.{who}: a sequence holding tensors is read as an array, and its "
                f"elements must have one shape: element {k} has shape {s}, another {shape}; "
                "make the elements the same shape (or pass them to ndgrad.concat)")
        if not isinstance(e, Tensor):
            items[k] = TENSOR_F.zeros_like(like) + e
    return TENSOR_F.stack(items)


def sequences_stacked(args, op):
    """``args`` with each array input of ``op`` (its first ``nin``; all of a variadic op's)
    that is a sequence holding tensors stacked, or None when none is (Note [Sequences of
    tensors])."""
    nin = op.nin
    out = None
    for k, a in enumerate(args if nin == VARIADIC else args[:nin]):
        if type(a) in SEQUENCES and holds_tensor(a):
            if out is None:
                out = list(args)
            out[k] = stack_nested(a, op.qualname)
    return out


def inputs_by_position(op, args, params):
    """``(args, params)`` with the array inputs of ``op`` given by name, NumPy's
    ``round(a=x)``, moved to their positions (``dispatch.apply``'s fast paths and the
    transforms' interpreters take every array input by position; a tensor left among the
    parameters would be a constant to them); None when none was (Note [Signatures are
    NumPy's] in tests/test_signatures.py)."""
    import inspect
    if not 0 <= len(args) < op.nin:
        return None
    try:
        bound = inspect.signature(op.forward).bind(None, *args, **params)
    except TypeError:
        return None
    moved = bound.args[1:]
    return (moved, bound.kwargs) if len(moved) > len(args) else None


# Note [Python scalars as inputs]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# When every array input of an op is a Python scalar (``ndgrad.angle(0.5)``,
# ``ndgrad.add(1, 2)``), those of the highest kind among them (bool < int < float <
# complex) become the 0-d arrays NEP 50 makes of them when no array fixes the dtype: bool,
# int64, and ndgrad's default floating (complex) dtype for a float (complex); the others
# stay Python scalars, weak beside them (``add(0.5, 2)`` is a float of the default dtype).
# So a forward or a composite sees an array, as it does everywhere else (a forward reading
# ``x.dtype`` crashed on a float), and the result is NumPy's value and dtype, with ndgrad's
# default dtype for Python floats. A Python scalar beside an array or tensor keeps NumPy's
# weak-scalar meaning (``x32 * 2.0`` stays float32) and reaches the forward as it is.
# ``dispatch.apply`` converts them for the ops; a composite's public function makes its first
# array input a 0-d tensor when it is a Python scalar and no array input is an array (its
# other inputs may be counts, as ``histogram``'s ``bins``). tests/test_op_scalars.py calls
# every op of the registry with Python bools, ints, floats and complexes.
PY_SCALARS = (bool, int, float, complex)


def scalar_array(v):
    """The 0-d NumPy array of Python scalar ``v`` (Note [Python scalars as inputs])."""
    return _default_float(NUMPY.asarray(v))


_KINDS = {bool: 0, int: 1, float: 2, complex: 3}


def scalars_as_arrays(values):
    """``values`` (an op's array inputs) with the Python scalars of the highest kind as 0-d
    arrays when every one is a Python scalar, else None (Note [Python scalars as inputs])."""
    top = -1
    for v in values:
        k = _KINDS.get(type(v))
        if k is None:
            return None
        if k > top:
            top = k
    out = []
    for v in values:
        out.append(scalar_array(v) if _KINDS[type(v)] == top else v)
    return out
