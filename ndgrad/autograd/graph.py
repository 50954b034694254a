"""``ndgrad.autograd.graph``: looking into and managing the backward graph, as
``torch.autograd.graph``: saved-tensor hooks (``saved_tensors_hooks``, ``save_on_cpu``,
``disable_saved_tensors_hooks``, ``allow_mutation_on_saved_tensors``), hooks over several
tensors (``register_multi_grad_hook``), ``increment_version``, pictures of the graph and
memory reports (``to_dot``, ``render``, ``memory_report``) and the graph's ``Node``.

A node's saved values are reachable by the names of its rule's parameters:
``y.grad_fn._saved_x`` (the input ``x``, checked for in-place changes and unpacked),
``y.grad_fn._saved_out`` (the output), ``y.grad_fn._saved_axis`` (a parameter);
``_raw_saved_<name>`` gives what the node keeps (a hook's packed value).
``grad_fn.metadata`` is a dict for the user's own notes.

Examples
--------
>>> import ndgrad
>>> x = ndgrad.tensor([1.0, 2.0], requires_grad=True)
>>> y = x * x
>>> isinstance(y.grad_fn, ndgrad.autograd.graph.Node)
True
>>> y.grad_fn._saved_y
tensor([1., 2.], requires_grad=True)
"""

from __future__ import annotations

import functools
import threading

import numpy as np

from ..core import inplace as _inplace
from ..core.engine import current_pass, queue_callback
from ..core.grad_mode import SAVED_HOOK_THREADS, STATE
from ..core.graph import Node
from ..core.hooks import RemovableHandle
from ..core.tensor import Tensor, _new
from ._pictures import DotGraph, MemoryReport, memory_report, render, to_dot

__all__ = ["Node", "saved_tensors_hooks", "save_on_cpu", "disable_saved_tensors_hooks",
           "allow_mutation_on_saved_tensors", "register_multi_grad_hook",
           "increment_version", "to_dot", "render", "memory_report", "DotGraph",
           "MemoryReport"]

_LOCK = threading.Lock()


class saved_tensors_hooks:  # noqa: N801 - PyTorch's name
    """Context manager under which every tensor saved for backward goes through
    ``pack_hook`` as it is saved, and through ``unpack_hook`` when backward needs it.

    ``pack_hook(tensor) -> anything`` runs with grad mode off, once per saved tensor (an op
    that saves one tensor twice calls it twice); the node keeps only what it returns.
    ``unpack_hook(packed) -> Tensor`` must give back a tensor with the same shape, dtype and
    values as the one ``pack_hook`` got; it runs during backward with the pass's grad mode.
    The unpacked tensor takes the saved tensor's place in the graph, so higher-order
    derivatives work. Hooks are per thread; nested contexts: the innermost applies. They
    apply to ops and custom Functions alike; values of ``ndgrad.func`` transforms are saved
    as usual. As in PyTorch, the hooks own the value: an in-place change of the original
    tensor after it was packed is not detected.

    Examples
    --------
    >>> import ndgrad
    >>> sizes = []
    >>> def pack(t):
    ...     sizes.append(t.nbytes)
    ...     return t
    >>> x = ndgrad.ones(4, requires_grad=True)
    >>> with ndgrad.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
    ...     y = ndgrad.tanh(x * x)
    >>> sizes  # x twice (for x * x), then tanh's output
    [32, 32, 32]
    >>> y.sum().backward()
    >>> x.grad
    tensor([0.83994868, 0.83994868, 0.83994868, 0.83994868])
    """

    def __init__(self, pack_hook, unpack_hook):
        if not callable(pack_hook) or not callable(unpack_hook):
            raise TypeError("saved_tensors_hooks(pack_hook, unpack_hook) takes two functions: "
                            "pack_hook(tensor) -> anything, unpack_hook(packed) -> Tensor")
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self):
        msg = STATE.saved_hooks_disabled
        if msg is not None:
            raise RuntimeError(msg)
        STATE.saved_hooks = STATE.saved_hooks + ((self.pack_hook, self.unpack_hook),)
        with _LOCK:
            SAVED_HOOK_THREADS[0] += 1
        return self

    def __exit__(self, *exc):
        hooks = STATE.saved_hooks
        STATE.saved_hooks = hooks[:-1]
        with _LOCK:
            SAVED_HOOK_THREADS[0] -= 1


class save_on_cpu(saved_tensors_hooks):  # noqa: N801 - PyTorch's name
    """Saved-tensor hooks that keep tensors saved for backward in host memory: a GPU tensor
    is copied to the host when saved and back to its device when backward needs it (CPU
    tensors are kept as they are). ``pin_memory=True`` stages the copies in page-locked host
    memory, which copies back to the GPU faster.

    Examples
    --------
    >>> import ndgrad
    >>> x = ndgrad.ones(3, requires_grad=True)
    >>> with ndgrad.autograd.graph.save_on_cpu():
    ...     y = (x * x).sum()
    >>> y.backward()
    >>> x.grad
    tensor([2., 2., 2.])
    """

    def __init__(self, pin_memory=False):
        self.pin_memory = bool(pin_memory)
        super().__init__(self._pack, self._unpack)

    def _pack(self, t):
        if t.device.type == "cpu":
            return (None, t.detach())  # (no reference to an output's grad_fn: no cycle)
        host = t.backend.to_host(t._data, pinned=self.pin_memory)
        return (t.device, host)

    @staticmethod
    def _unpack(packed):
        device, value = packed
        if device is None:
            return value
        return _new(np.asarray(value), False).to(device)


class disable_saved_tensors_hooks:  # noqa: N801 - PyTorch's name
    """Context manager under which setting saved-tensor hooks raises a RuntimeError with
    ``error_message`` (for code whose saved values must not be moved or transformed).

    Examples
    --------
    >>> import ndgrad
    >>> from ndgrad.autograd.graph import disable_saved_tensors_hooks, saved_tensors_hooks
    >>> with disable_saved_tensors_hooks("no hooks in this solver"):
    ...     with saved_tensors_hooks(lambda t: t, lambda t: t):
    ...         pass
    Traceback (most recent call last):
        ...
    RuntimeError: no hooks in this solver
    """

    def __init__(self, error_message):
        self.error_message = str(error_message)

    def __enter__(self):
        self._prev = STATE.saved_hooks_disabled
        STATE.saved_hooks_disabled = self.error_message
        return self

    def __exit__(self, *exc):
        STATE.saved_hooks_disabled = self._prev

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapped(*args, **kwargs):
            with disable_saved_tensors_hooks(self.error_message):
                return fn(*args, **kwargs)
        return wrapped


def _memory_root(array):
    while getattr(array, "base", None) is not None:
        array = array.base
    return array


class allow_mutation_on_saved_tensors:  # noqa: N801 - PyTorch's name
    """Context manager under which a tensor saved for backward may be modified in place:
    the saved value is copied just before the first in-place change of its memory, and
    backward uses the copy. (Without it, backward raises: the value it needs is gone.)

    Only in-place operations through ndgrad are seen (``t.add_(1)``, ``t[i] = v``, ...): a
    custom Function's forward that writes into its input's array directly is not.

    Examples
    --------
    >>> import ndgrad
    >>> x = ndgrad.tensor([0.0, 1.0], requires_grad=True)
    >>> with ndgrad.autograd.graph.allow_mutation_on_saved_tensors():
    ...     a = x * 1.0
    ...     y = ndgrad.sin(a)      # saves a
    ...     _ = a.add_(1.0)        # a changes; sin's backward still sees the old a
    ...     y.sum().backward()
    >>> x.grad
    tensor([1.        , 0.54030231])
    """

    def __enter__(self):
        self._saved = {}  # id(memory root) -> [[tensor, copy or None], ...]
        self._hooks = saved_tensors_hooks(self._pack, self._unpack)
        self._hooks.__enter__()
        _inplace.BEFORE_WRITE.append(self._before_write)
        return self

    def __exit__(self, *exc):
        _inplace.BEFORE_WRITE.remove(self._before_write)
        self._hooks.__exit__(*exc)

    def _pack(self, t):
        entry = [t, None]
        self._saved.setdefault(id(_memory_root(t._data)), []).append(entry)
        return entry

    @staticmethod
    def _unpack(entry):
        t, copy = entry
        return t if copy is None else copy

    def _before_write(self, target):
        for entry in self._saved.get(id(_memory_root(target._data)), ()):
            if entry[1] is None:
                entry[1] = _new(entry[0]._data.copy(), False)


def increment_version(tensor):
    """Bump the version counter of ``tensor`` (or of each tensor of a sequence), as an
    in-place change does: for code that changes a tensor's memory behind ndgrad's back
    (through ``.numpy()``), so that backward refuses values it saved before; its error then
    names the line of this call.

    Examples
    --------
    >>> import ndgrad
    >>> x = ndgrad.tensor([1.0], requires_grad=True)
    >>> y = x.exp()
    >>> ndgrad.autograd.graph.increment_version(y)
    >>> y._version
    1
    """
    for t in (tensor,) if isinstance(tensor, Tensor) else tensor:
        if not isinstance(t, Tensor):
            raise TypeError(f"increment_version takes tensors, got {type(t).__name__}")
        t._counter().value += 1
        _inplace.note_where(t._counter(), 1)  # (Note [Where a tensor was modified in place])


def register_multi_grad_hook(tensors, fn, *, mode="all"):
    """Call ``fn`` with the gradients of several tensors in one backward pass.

    ``mode="all"``: ``fn(grads)`` runs once per backward pass that reaches one of
    ``tensors``, after the pass has computed all their gradients; ``grads`` has one entry per
    tensor, None for those the pass did not reach. ``mode="any"``: ``fn(grad)`` runs once per
    pass, with the first of their gradients to be computed. The gradients are not changed.
    Returns a handle whose ``remove()`` unregisters the hook.

    Examples
    --------
    >>> import ndgrad
    >>> a = ndgrad.tensor([1.0], requires_grad=True)
    >>> b = ndgrad.tensor([2.0], requires_grad=True)
    >>> seen = []
    >>> h = ndgrad.autograd.graph.register_multi_grad_hook((a, b), seen.append)
    >>> (a * b).sum().backward()
    >>> seen
    [(tensor([2.]), tensor([1.]))]
    """
    if mode not in ("all", "any"):
        raise ValueError(f"register_multi_grad_hook: mode must be 'all' or 'any', got {mode!r}")
    tensors = tuple(tensors)
    for t in tensors:
        if not isinstance(t, Tensor):
            raise TypeError(f"register_multi_grad_hook takes tensors, got {type(t).__name__}")
    runs = {}  # id(backward pass) -> the gradients so far (mode all) or True (mode any)

    def make_hook(k):
        def hook(grad):
            p = current_pass()
            key = id(p)
            if mode == "any":
                if key not in runs:
                    runs[key] = True
                    queue_callback(lambda: runs.pop(key, None))
                    fn(grad)
                return None
            grads = runs.get(key)
            if grads is None:
                grads = runs[key] = [None] * len(tensors)

                def finish():
                    fn(tuple(runs.pop(key)))
                queue_callback(finish)
            grads[k] = grad
            return None
        return hook

    handles = [t.register_hook(make_hook(k)) for k, t in enumerate(tensors)]
    return _MultiHandle(handles)


class _MultiHandle(RemovableHandle):
    """The handle of a multi-tensor hook: removes the hook from every tensor."""

    def __init__(self, handles):
        self._handles = handles

    def remove(self):
        for h in self._handles:
            h.remove()
