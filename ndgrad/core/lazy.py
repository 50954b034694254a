"""Computing lazy (Dask-backed) tensors: :func:`compute`, :func:`persist`, and the
``Tensor.compute`` / ``Tensor.persist`` methods (Note [The Dask backend] in
core/backend_dask.py).

A Dask-backed tensor holds a graph; nothing runs until it is computed. ``t.compute()`` and
``ndgrad.compute(*tensors)`` give NumPy-backed tensors (one ``dask.compute`` for all of them,
so a loss and its gradient share their intermediates), differentiable: the gradient of a
computed tensor goes back, lazily, to the Dask-backed one. ``persist`` keeps a tensor's
chunks computed in memory (the cluster's, under ``dask.distributed``).

This module is the Dask backend's light face: the package imports it, and it imports no
Dask. It registers the backend's finder (Note [Backend plug-ins] in core/backend.py), which
imports core/backend_dask.py, and with it Dask, only for an array whose type Dask's modules
define (Dask is imported already) or for ``device="dask"``.
"""

from __future__ import annotations

import importlib

from .backend import _BACKEND_BY_TYPE, NUMPY, register_plugin
from .dispatch import TENSOR_F
from .function import Function
from .tensor import Tensor, _new

__all__ = ["compute", "persist", "is_lazy"]


def _find_dask(array_type):
    """The Dask backend for ``dask.array.Array`` (None for another type: a type of another
    library, or Dask's dataframes), or for the device (``array_type`` None: a RuntimeError
    saying how to install Dask when it is missing)."""
    if array_type is not None and (array_type.__module__.partition(".")[0] != "dask" or
                                   array_type.__name__ != "Array"):
        return None
    try:
        # (by name: Dask is imported only here, on first use; the module registers itself)
        module = importlib.import_module("ndgrad.core.backend_dask")
    except ImportError as exc:
        raise RuntimeError(f"device 'dask' needs Dask ({exc}): "
                           '`pip install "ndgrad[dask]"`') from None
    B = module.DASK
    return B if array_type is None or array_type is B.array_type else None


register_plugin("dask", _find_dask)


def is_lazy(t):
    """Whether tensor (or array) ``t`` is a lazy graph (Dask-backed)."""
    d = t._data if isinstance(t, Tensor) else t
    B = _BACKEND_BY_TYPE.get(type(d))
    return B is not None and not B.reads_values


class _Computed(Function):
    """A Dask-backed tensor's computed value (given), differentiable: the gradient goes back
    to the Dask device (lazily)."""

    @staticmethod
    def vmap_loop(*args):  # (how vmap's loop warning names it)
        return "ndgrad.compute", "a computed Dask value is one array per batch element"

    @staticmethod
    def forward(ctx, x, value):
        return _new(value, False)

    @staticmethod
    def backward(ctx, g):
        return TENSOR_F.to_device(g, "dask"), None


def _computed(t, value):
    if t.requires_grad:
        return _Computed.apply(t, value)
    return _new(value, False)


def compute(*tensors, **kwargs):
    """Compute Dask-backed tensors in one ``dask.compute``: NumPy-backed tensors, in order.

    Intermediates the tensors share (a loss and its gradient) are computed once. Other
    tensors pass through unchanged. The results are differentiable: the gradient of one goes
    back, lazily, to its Dask-backed tensor. ``kwargs`` go to ``dask.compute`` (e.g.
    ``scheduler="threads"``).

    Returns
    -------
    tuple of Tensor

    Examples
    --------
    >>> import ndgrad, dask.array as da
    >>> x = ndgrad.asarray(da.arange(4.0, chunks=2))
    >>> total, squares = ndgrad.compute(x.sum(), x * x)
    >>> total, squares.device
    (tensor(6.), device('cpu'))
    """
    lazy = [k for k, t in enumerate(tensors) if is_lazy(t)]
    if not lazy:
        return tuple(tensors)
    B = _BACKEND_BY_TYPE[type(tensors[lazy[0]]._data)]
    values = B.compute(*[tensors[k]._data for k in lazy], **kwargs)
    out = list(tensors)
    for k, v in zip(lazy, values):
        out[k] = _computed(tensors[k], NUMPY.asarray(v))
    return tuple(out)


def persist(*tensors, **kwargs):
    """Keep Dask-backed tensors' chunks computed in memory (``dask.persist``; on a cluster,
    in the workers' memory), in place: each tensor keeps its identity and its history, and
    its graph becomes the persisted chunks. Returns the tensors.

    Examples
    --------
    >>> import ndgrad, dask.array as da
    >>> x = ndgrad.asarray(da.ones((4, 2), chunks=(2, 2)))
    >>> ndgrad.persist(x)[0] is x
    True
    """
    lazy = [t for t in tensors if is_lazy(t)]
    if lazy:
        B = _BACKEND_BY_TYPE[type(lazy[0]._data)]
        values = B.persist(*[t._data for t in lazy], **kwargs)
        for t, v in zip(lazy, values):
            t._data = v  # the same value: no version bump (Note [The Dask backend])
    return tensors


# ------------------------------------------------------------------ Tensor methods
def _compute_method(self, **kwargs):
    """This Dask-backed tensor computed (``dask.compute``): a NumPy-backed tensor,
    differentiable (its gradient goes back lazily). Other tensors: ``self``. See
    :func:`ndgrad.compute` to compute several in one pass.

    Examples
    --------
    >>> import ndgrad, dask.array as da
    >>> x = ndgrad.asarray(da.arange(4.0, chunks=2))
    >>> (2 * x).compute()
    tensor([0., 2., 4., 6.])
    """
    return compute(self, **kwargs)[0]


def _persist_method(self, **kwargs):
    """Keep this Dask-backed tensor's chunks computed in memory (``dask.persist``), in
    place; returns ``self`` (:func:`ndgrad.persist`)."""
    return persist(self, **kwargs)[0]


_compute_method.__name__ = _compute_method.__qualname__ = "compute"
_persist_method.__name__ = _persist_method.__qualname__ = "persist"
Tensor.compute = _compute_method
Tensor.persist = _persist_method
