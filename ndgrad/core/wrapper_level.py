"""The base of the wrapper levels' values: transform levels (``func.grad``/``vjp``, ``vmap``)
whose values are a Tensor subclass around the value one level down (Note [Levels] in
core/levels.py).

Note [Wrapper levels]
~~~~~~~~~~~~~~~~~~~~~
Transform levels come in two patterns (Note [Data levels] in core/data_level.py for the
other). A *wrapper* level gives each of its values an instance of a subclass of
:class:`WrapperTensor`: it holds the value one level down (``_value``) and names its level
(``_level``); ``dispatch.apply`` finds the level through ``_level`` (a plain Tensor's is
None), and the level's interpreter unwraps, runs the op one level down and wraps again. What
every wrapper shares lives here, once:

* the metadata, forwarded from the wrapped value: ``dtype``, ``device``, ``backend`` from
  ``_carrier`` (the value whose dtype and device this one has: the ``_value`` slot by
  default; a class may make ``_value`` a property of its own, as vmap does), and
  ``shape``, ``ndim``, ``size`` (``dim``, ``numel``, ``len``, iteration, ``is_complex``,
  ``is_floating_point`` are the Tensor's, which read these);
* what the graph and the engine ask of a value (core/tensor.py): its version counter is the
  wrapped value's (an in-place change happens one level down), a node saving it as an output
  keeps the wrapped value and rebuilds a wrapper of the same class around it, a stand-in for
  the in-place protocol is a wrapper around the value (or a copy of it, ``_copy_value``) with
  this one's history, and two values may share memory when they are of one class and level
  and their wrapped values (``_memory``) do.

A wrapper level's interpreter subclasses :class:`WrapperInterpreter`, which owns the one
skeleton a custom Function follows at a wrapper level (``process_function``): a Function the
level runs at the level itself (``runs_at_level``: vmap's with ``generate_vmap_rule``, as
its forward's operations) runs there; any other runs one level down, once per lowering of
its inputs (``function_inputs``: func.grad's unwrapped values, or vmap's one slice per batch
element, each with the needs the levels below must meet), under the level's
``function_mode`` (func.grad's: the grad modes of the levels outside); its outputs are
gathered into values of the level (``function_outputs``: wrapped, or stacked), and the level
makes the ctx the levels outside see (``function_ctx``: func.grad's records a node of the
Function's class at the level; vmap's runs its rules per element). ``process`` and
``process_inplace`` are each level's own (an op's batching rule, an op recorded at the
level).

A wrapper level's class supplies ``_wrap(value, level)`` (a fresh value of the level) and
what differs: vmap's logical ``shape`` (one batch element's) and its ``_carrier`` (a scaled
identity batch has no physical value until it is read, Note [Identity batches] in
functional/vmap.py), and the conversions a value refuses or allows (a grad level's value
converts to NumPy as its value does; a batched one cannot, it holds one value per element).
"""

from __future__ import annotations

from contextlib import nullcontext

from .function import _run as run_at_level, apply_function
from .levels import Interpreter, below
from .tensor import ShapeMetadata, Tensor

__all__ = ["WrapperTensor", "WrapperInterpreter"]


class WrapperInterpreter(Interpreter):
    """The skeleton a wrapper level's custom Functions follow (Note [Wrapper levels]); a
    subclass supplies ``process``, ``process_inplace``, ``function_inputs``,
    ``function_outputs`` and ``function_ctx`` (and ``runs_at_level``, ``function_mode``)."""

    def runs_at_level(self, level, cls, args, kwargs):
        """Whether Function ``cls`` runs at ``level`` itself, as its forward's operations."""
        return False

    def function_mode(self, level):
        """A context for the Function's runs one level down (by default none)."""
        return nullcontext()

    def function_inputs(self, level, cls, args, kwargs, needs):  # pragma: no cover
        """The runs one level down: a list of ``(args, kwargs, needs)``."""
        raise NotImplementedError

    def function_outputs(self, level, outs):  # pragma: no cover - interface
        """The runs' outputs (a list, one per run) as the level's values."""
        raise NotImplementedError

    def function_ctx(self, level, cls, args, result, ctxs, needs):  # pragma: no cover
        """The ctx the levels outside see, from the runs' ``ctxs``."""
        raise NotImplementedError

    def process_function(self, level, cls, args, kwargs, needs):
        if self.runs_at_level(level, cls, args, kwargs):
            return run_at_level(cls, args, kwargs, needs)
        runs = self.function_inputs(level, cls, args, kwargs, needs)
        outs, ctxs = [], []
        with below(level), self.function_mode(level):
            for args_below, kwargs_below, needs_below in runs:
                out, ctx = apply_function(cls, args_below, kwargs_below, needs_below)
                outs.append(out)
                ctxs.append(ctx)
        result = self.function_outputs(level, outs)
        return result, self.function_ctx(level, cls, args, result, ctxs, needs)


class WrapperTensor(ShapeMetadata, Tensor):
    """A value of a wrapper level: the value one level down (``_value``) and its level
    (``_level``), with the Tensor's metadata forwarded from it (Note [Wrapper levels])."""

    __slots__ = ("_value", "_level")

    @staticmethod
    def _wrap(value, level):  # pragma: no cover - each wrapper class supplies its own
        raise NotImplementedError

    # -- the metadata, forwarded once (from ``_carrier``: the ``_value`` slot itself, set
    # below, so that reading a grad level's dtype costs no extra call on its hot path)
    @property
    def shape(self):
        return self._carrier.shape

    @property
    def dtype(self):
        return self._carrier.dtype

    @property
    def device(self):
        return self._carrier.device

    @property
    def backend(self):
        return self._carrier.backend

    # (``ndim`` and ``size`` from ``shape``: ShapeMetadata, before Tensor in the MRO)

    # -- what the graph and the engine call (core/tensor.py)
    def _counter(self):
        return self._value._counter()  # in-place changes happen one level down

    def _saved_content(self):
        return self._value

    @classmethod
    def _from_saved(cls, content, level):
        return cls._wrap(content, level)

    def _memory(self):
        """The wrapped value whose memory views share (None: it has none yet)."""
        return self._value

    def _shares_memory(self, other):
        if type(other) is not type(self) or other._level is not self._level:
            return False
        mine, theirs = self._memory(), other._memory()
        return mine is not None and theirs is not None and mine._shares_memory(theirs)

    def _copy_value(self):
        """A copy of the wrapped value, made where the level's in-place protocol needs it."""
        raise NotImplementedError  # pragma: no cover - each wrapper class supplies its own

    def _stand_in(self, copy):
        s = self._wrap(self._copy_value() if copy else self._value, self._level)
        s._requires_grad = self._requires_grad
        s._grad_fn = self._grad_fn
        s._output_nr = self._output_nr
        return s


WrapperTensor._carrier = WrapperTensor._value  # (a class may define its own: vmap's)
