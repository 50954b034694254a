"""The autograd profiler: what each operation, backward node and user range costs.

This module owns ndgrad's profiling API, shaped as ``torch.autograd.profiler``:

* :class:`profile`, a context manager that records every primitive operation's forward call
  (named as the op: ``multiply``, ``tanh``, ``linalg.inv``), every backward node the engine
  runs (named as its ``grad_fn``: ``TanhBackward0``, ``AccumulateGrad``, a custom Function's
  ``MyFnBackward``) and every custom ``Function.apply`` call (under the Function's class
  name), with its thread, its start and end, and on request the shapes of its inputs, the
  bytes its outputs allocate, the user's source line, and on a GPU its device time;
* :class:`record_function`, a user range (context manager or decorator) around other events:
  ranges nest, and the events inside a range are its children;
* :class:`emit_nvtx`, which names every operation and node with an NVTX range for NVIDIA's
  Nsight tools;
* the results: :class:`EventList` (a list of :class:`FunctionEvent`, with ``table``,
  ``key_averages``, ``total_average``, ``export_chrome_trace`` and ``export_stacks``) and
  :class:`FunctionEventAvg`.

The profiler sees the work through one slot of the core, ``core.grad_mode.PROFILER`` (Note
[Profiling] there): while no profile or emit_nvtx block is open it is None and costs one list
read per operation; while one is open it holds this module's recorder. Only primitives are
recorded: a public function built of primitives (``mean``, ``var``, ...) shows as the
primitives it runs. First-order backward formulas run on raw arrays, so a backward node has
no children; with ``create_graph=True`` the operations a node runs are its children.

Examples
--------
>>> import ndgrad
>>> from ndgrad.autograd import profiler
>>> x = ndgrad.tensor([0.5, -1.0, 2.0], requires_grad=True)
>>> with profiler.profile() as prof:
...     with profiler.record_function("step"):
...         y = ndgrad.tanh(x * 2.0)
...     y.sum().backward()
>>> for e in prof.events():  # in the order they started
...     print(e.name, "in", e.cpu_parent.name if e.cpu_parent else "-")
step in -
multiply in step
tanh in step
sum in -
SumBackward0 in -
TanhBackward0 in -
MultiplyBackward0 in -
AccumulateGrad in -
>>> [c.name for c in prof.events()[0].cpu_children]
['multiply', 'tanh']
"""

from __future__ import annotations

import functools
import json
import os
import sys
import threading
import warnings
from time import perf_counter_ns

from ..core.backend import _BACKEND_BY_TYPE, NUMPY, backend_for_device
from ..core.dispatch import apply as _apply
from ..core.grad_mode import PROFILER, RUN_HERE
from ..core.tensor import Tensor

__all__ = ["profile", "record_function", "emit_nvtx", "EventList", "FunctionEvent",
           "FunctionEventAvg", "Interval"]


# ------------------------------------------------------------------ recording
class _Record:
    """One event while it is recorded (made into a FunctionEvent per profile on exit)."""

    __slots__ = ("name", "kind", "thread", "parent", "sessions", "start", "end", "shapes",
                 "stack", "cpu_mem", "dev_mem", "device", "nvtx", "args")


class _ThreadState(threading.local):
    """Per thread: the events open in it (innermost last), and whether the next ``apply`` is
    the recorder's own call (Note [Profiling] in core/grad_mode.py)."""

    def __init__(self):
        self.open = []
        self.inner = False


class _Recorder:
    """What ``core.grad_mode.PROFILER[0]`` holds while a profile or emit_nvtx is active.

    Called for every ``apply``, and through ``node``, ``function``, ``range_start`` and
    ``range_end`` by the engine, ``Function.apply`` and :class:`record_function`. The
    settings are the union of those of the active profiles, recomputed when one enters or
    exits."""

    def __init__(self):
        self.tls = _ThreadState()
        self.sessions = ()     # the active profiles
        self.shapes = False    # some active profile records shapes ...
        self.memory = False
        self.stack = False
        self.cuda = False
        self.nvtx = None       # the CUDA backend while an emit_nvtx block is open
        self.nvtx_shapes = False

    # -- the four kinds of event
    def __call__(self, op, args, params):
        """``apply(op, *args, **params)``, timed (Note [Profiling])."""
        tls = self.tls
        if tls.inner:  # the call below: dispatch runs the op
            tls.inner = False
            return RUN_HERE
        r = self._start(op.qualname, "op", args)
        out = None
        tls.inner = True
        try:
            out = _apply(op, *args, **params)
        finally:
            tls.inner = False
            self._end(r, out, args)
        return out

    def node(self, run, node, grads_out, pass_):
        """``run(node, grads_out, pass_)`` (the engine's general path), timed, unless the node
        has nothing to do in this pass."""
        needed = pass_.needed
        if (needed is not None and not needed.get(node, False)) or \
                all(g is None for g in grads_out):
            return run(node, grads_out, pass_)
        r = self._start(node.name(), "backward", grads_out)
        out = None
        try:
            out = run(node, grads_out, pass_)
        finally:
            self._end(r, out, grads_out)
        return out

    def function(self, cls, run, args, kwargs):
        """A custom Function's ``apply``: ``run(cls, args, kwargs)[0]``, timed."""
        r = self._start(cls.__name__, "function", args)
        out = None
        try:
            out = run(cls, args, kwargs)[0]
        finally:
            self._end(r, out, args)
        return out

    def range_start(self, name, args):
        r = self._start(name, "range", ())
        r.args = args
        return r

    def range_end(self, r):
        self._end(r, None, ())

    # -- one event
    def _start(self, name, kind, inputs):
        r = _Record()
        r.name = name
        r.kind = kind
        r.thread = threading.get_ident()
        opened = self.tls.open
        r.parent = opened[-1] if opened else None
        r.sessions = self.sessions
        r.shapes = _shapes(inputs) if self.shapes or self.nvtx_shapes else None
        r.stack = _user_stack() if self.stack else None
        r.cpu_mem = r.dev_mem = 0
        r.args = None
        nvtx = r.nvtx = self.nvtx
        if nvtx is not None:
            nvtx.range_push(name if not self.nvtx_shapes or kind == "range" else
                            f"{name}, sizes = {r.shapes}")
        r.device = None
        if self.cuda:
            B, data = _on_device(inputs)
            if B is not None:
                r.device = [B, B.device_of(data).index, B.record_event(), None]
        opened.append(r)
        r.start = perf_counter_ns()
        return r

    def _end(self, r, outs, inputs):
        r.end = perf_counter_ns()
        if r.device is not None:
            r.device[3] = r.device[0].record_event()
        if self.memory and outs is not None:
            r.cpu_mem, r.dev_mem = _allocated(outs, inputs)
        opened = self.tls.open
        if opened and opened[-1] is r:
            opened.pop()
        elif r in opened:  # (ranges closed out of order)
            opened.remove(r)
        if r.nvtx is not None:
            r.nvtx.range_pop()
        for s in r.sessions:
            if s._recording:
                s._raw.append(r)


_RECORDER = _Recorder()
_ACTIVE = []  # open profiles and emit_nvtx blocks, in the order they were entered
_LOCK = threading.Lock()


def _activate(who):
    with _LOCK:
        _ACTIVE.append(who)
        _configure()


def _deactivate(who):
    with _LOCK:
        if who in _ACTIVE:
            _ACTIVE.remove(who)
        _configure()


def _configure():
    """The recorder's settings from the open blocks, and the slot filled or emptied."""
    rec = _RECORDER
    sessions = tuple(a for a in _ACTIVE if isinstance(a, profile))
    nvtx = [a for a in _ACTIVE if isinstance(a, emit_nvtx)]
    rec.shapes = any(s.record_shapes for s in sessions)
    rec.memory = any(s.profile_memory for s in sessions)
    rec.stack = any(s.with_stack for s in sessions)
    rec.cuda = any(s.use_cuda for s in sessions)
    rec.nvtx = nvtx[0]._nvtx if nvtx else None
    rec.nvtx_shapes = any(n.record_shapes for n in nvtx)
    rec.sessions = sessions
    PROFILER[0] = rec if _ACTIVE else None


def _shapes(values):
    """Input shapes as PyTorch lists them: a list per input, [] for a non-array."""
    out = []
    for v in values:
        shape = getattr(v, "shape", None) if isinstance(v, Tensor) or \
            type(v) in _BACKEND_BY_TYPE else None
        out.append(list(shape) if shape is not None else [])
    return out


def _on_device(values):
    """``(backend, array)`` of the first input on a device with a clock, or ``(None, None)``."""
    for v in values:
        d = v._data if isinstance(v, Tensor) else v
        B = _BACKEND_BY_TYPE.get(type(d))
        if B is not None and B is not NUMPY:
            return B, d
    return None, None


def _arrays(values):
    """The raw arrays among ``values`` (Tensors, arrays, tuples of them, None)."""
    if values is None:
        return []
    if isinstance(values, Tensor) or type(values) in _BACKEND_BY_TYPE:
        values = (values,)
    out = []
    for v in values:
        if isinstance(v, Tensor):
            v = v._data
        if type(v) in _BACKEND_BY_TYPE:
            out.append(v)
    return out


def _allocated(outs, inputs):
    """``(cpu bytes, device bytes)`` of the output arrays that are new memory: neither views
    of an input nor repeated."""
    ins = _arrays(inputs)
    cpu = dev = 0
    seen = []
    for a in _arrays(outs):
        if any(a is b for b in seen):
            continue
        seen.append(a)
        B = _BACKEND_BY_TYPE[type(a)]
        if any(type(b) is type(a) and B.may_share_memory(a, b) for b in ins):
            continue
        if B is NUMPY:
            cpu += a.nbytes
        else:
            dev += a.nbytes
    return cpu, dev


_PKG_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_FILES = {}  # filename -> its short form, or None inside ndgrad


def _short_file(filename):
    short = _FILES.get(filename, 0)
    if short == 0:
        path = os.path.abspath(filename)
        if path.startswith(_PKG_DIR):
            short = None
        else:
            short = path
            for p in sys.path:
                p = os.path.abspath(p or os.curdir) + os.sep
                if path.startswith(p) and len(path) - len(p) < len(short):
                    short = path[len(p):]
        _FILES[filename] = short
    return short


def _user_stack():
    """The Python stack outside ndgrad, innermost frame first: ``file(line): function``."""
    out = []
    f = sys._getframe(2)
    while f is not None:
        code = f.f_code
        short = _short_file(code.co_filename)
        if short is not None:
            out.append(f"{short}({f.f_lineno}): {code.co_name}")
        f = f.f_back
    return out


# ------------------------------------------------------------------ the context managers
class profile:
    """Record what operations, backward nodes and user ranges cost (a context manager).

    Inside the ``with`` block every primitive operation's forward call, every backward node
    and every custom ``Function.apply`` call, in any thread, is an event, as is each
    :class:`record_function` range; :meth:`events` lists them once the block has ended.

    Parameters
    ----------
    enabled : bool
        False: the block records nothing (``events()`` is empty).
    use_cuda : bool
        Also time each operation and node on tensors of a CUDA device with CUDA events
        (``device_time_total``; the table's CUDA columns). Adds nothing for CPU tensors.
    record_shapes : bool
        Record the shapes of each event's inputs (``input_shapes``).
    profile_memory : bool
        Record the bytes each event's outputs allocate (``cpu_memory_usage``, and
        ``device_memory_usage`` for device arrays): outputs that are views of an input
        allocate nothing. Frees are not tracked.
    with_stack : bool
        Record the Python stack outside ndgrad of each event (``stack``, innermost frame
        first), for :meth:`export_stacks` and ``key_averages(group_by_stack_n=...)``.

    Examples
    --------
    >>> import ndgrad
    >>> from ndgrad.autograd import profiler
    >>> x = ndgrad.ones((2, 3), requires_grad=True)
    >>> with profiler.profile(record_shapes=True, profile_memory=True) as prof:
    ...     y = (x @ x.T).sum()
    >>> [(e.name, e.input_shapes, e.cpu_memory_usage) for e in prof.events()]
    [('permute_dims', [[2, 3], []], 0), ('matmul', [[2, 3], [3, 2]], 32), ('sum', [[2, 2]], 8)]
    >>> print(prof.key_averages().table(sort_by="count"))  # doctest: +SKIP
    """

    def __init__(self, enabled=True, *, use_cuda=False, record_shapes=False,
                 profile_memory=False, with_stack=False):
        self.enabled = bool(enabled)
        self.use_cuda = bool(use_cuda)
        self.record_shapes = bool(record_shapes)
        self.profile_memory = bool(profile_memory)
        self.with_stack = bool(with_stack)
        self.function_events = None
        self._raw = []
        self._recording = False
        self._entered = False
        self._t0 = 0

    def __enter__(self):
        if not self.enabled:
            self.function_events = self._list([])
            return self
        if self._entered:
            raise RuntimeError("this profile was already used; make a new profile() for "
                               "another run")
        self._entered = True
        self._t0 = perf_counter_ns()
        self._recording = True
        _activate(self)
        return self

    def __exit__(self, *exc):
        if not self.enabled:
            return False
        self._recording = False
        _deactivate(self)
        self.function_events = self._build()
        self._raw = []
        return False

    # -- results
    def events(self):
        """The events, an :class:`EventList` in the order they started."""
        if self.function_events is None:
            raise RuntimeError("the profiler has not finished: read its results after the "
                               "`with profile() as prof:` block")
        return self.function_events

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0):
        """The events grouped by name (and input shapes, and the innermost
        ``group_by_stack_n`` frames of their stacks): see :meth:`EventList.key_averages`."""
        return self.events().key_averages(group_by_input_shapes=group_by_input_shape,
                                          group_by_stack_n=group_by_stack_n)

    def total_average(self):
        """All events added up into one :class:`FunctionEventAvg` named ``Total``."""
        return self.events().total_average()

    def table(self, sort_by=None, row_limit=100, max_src_column_width=75,
              max_name_column_width=55, max_shapes_column_width=80, header=None,
              top_level_events_only=False):
        """The events (not averaged) as a table: see :meth:`EventList.table`."""
        return self.events().table(
            sort_by=sort_by, row_limit=row_limit, max_src_column_width=max_src_column_width,
            max_name_column_width=max_name_column_width,
            max_shapes_column_width=max_shapes_column_width, header=header,
            top_level_events_only=top_level_events_only)

    def export_chrome_trace(self, path):
        """Write the events as a Chrome trace: see :meth:`EventList.export_chrome_trace`."""
        return self.events().export_chrome_trace(path)

    def export_stacks(self, path, metric="self_cpu_time_total"):
        """Write the stacks in flamegraph's folded format: see
        :meth:`EventList.export_stacks`."""
        return self.events().export_stacks(path, metric)

    @property
    def self_cpu_time_total(self):
        """The sum of the events' self CPU times (µs): the time the events cover."""
        return self.events().self_cpu_time_total

    def __str__(self):
        return self.table()

    def _list(self, events):
        return EventList(events, use_device=False, profile_memory=self.profile_memory,
                         with_stack=self.with_stack, with_shapes=self.record_shapes)

    def _build(self):
        """The FunctionEvents of this profile's records, with their tree (per profile: an
        event whose parent began before this profile is one of its roots)."""
        raws = sorted(self._raw, key=lambda r: (r.start, -r.end))
        t0 = self._t0
        events = []
        mine = {}
        for k, r in enumerate(raws):
            e = FunctionEvent(
                id=k + 1, name=r.name, thread=r.thread,
                start_us=(r.start - t0) / 1e3, end_us=(r.end - t0) / 1e3,
                input_shapes=r.shapes if self.record_shapes and r.shapes is not None else [],
                stack=r.stack if self.with_stack and r.stack is not None else [],
                is_user_annotation=r.kind == "range", kind=r.kind, args=r.args)
            if self.profile_memory:
                e.cpu_memory_usage, e.device_memory_usage = r.cpu_mem, r.dev_mem
            if self.use_cuda and r.device is not None:
                B, index, ev0, ev1 = r.device
                e.device_time_total = B.elapsed_ms(ev0, ev1) * 1e3
                e.device_index = index
                e._device_events = (B, ev0)
            mine[id(r)] = e
            events.append(e)
        for r, e in zip(raws, events):
            p = r.parent
            while p is not None and id(p) not in mine:
                p = p.parent
            if p is not None:
                parent = mine[id(p)]
                e.cpu_parent = parent
                parent.cpu_children.append(e)
        for e in reversed(events):  # children first: a range adds up what it contains
            if e.kind == "range" and e.cpu_children:
                e.cpu_memory_usage = sum(c.cpu_memory_usage for c in e.cpu_children)
                e.device_memory_usage = sum(c.device_memory_usage for c in e.cpu_children)
            if e.device_index is None and e.cpu_children:
                timed = [c for c in e.cpu_children if c.device_index is not None]
                if timed:
                    e.device_time_total = sum(c.device_time_total for c in timed)
                    e.device_index = timed[0].device_index
        _place_on_device(events)
        out = self._list(events)
        out._use_device = any(e.device_index is not None for e in events)
        return out


def _place_on_device(events):
    """Each device-timed event's start on the device's clock (µs, as the host's): the first
    such event of a device starts with its host event, the others at their distance from it
    in device time (for the Chrome trace)."""
    first = {}
    for e in events:
        d = e._device_events
        if d is None:
            continue
        B, ev0 = d
        ref = first.get(e.device_index)
        if ref is None:
            first[e.device_index] = (e.time_range.start, ev0)
            e.device_start_us = e.time_range.start
            continue
        try:
            e.device_start_us = ref[0] + B.elapsed_ms(ref[1], ev0) * 1e3
        except Exception:  # noqa: BLE001 - events the device cannot compare: host time
            e.device_start_us = e.time_range.start
    for e in events:
        e._device_events = None
        if e.device_start_us is None and e.device_index is not None:
            e.device_start_us = e.time_range.start


class record_function:
    """A user range in the profile: a context manager, or a decorator that makes each call
    of the function a range.

    The events that start and end inside the range are its children, so its self time is
    what it spends outside them. With no profile open it records nothing.

    Parameters
    ----------
    name : str
        The range's name in the profile.
    args : str, optional
        A note shown with the range in the Chrome trace (its ``args``).

    Examples
    --------
    >>> import ndgrad
    >>> from ndgrad.autograd import profiler
    >>> @profiler.record_function("loss")
    ... def loss(x):
    ...     return (x * x).sum()
    >>> x = ndgrad.tensor([1.0, 2.0])
    >>> with profiler.profile() as prof:
    ...     with profiler.record_function("forward"):
    ...         value = loss(x)
    >>> forward = prof.events()[0]
    >>> forward.name, [c.name for c in forward.cpu_children]
    ('forward', ['loss'])
    >>> [c.name for c in forward.cpu_children[0].cpu_children]
    ['multiply', 'sum']
    """

    def __init__(self, name, args=None):
        if not isinstance(name, str):
            raise TypeError(
                f"record_function(name) takes the range's name, a str (got "
                f"{type(name).__name__}); as a decorator write @record_function(\"name\")")
        if args is not None and not isinstance(args, str):
            raise TypeError(f"record_function(args=...) takes a str (got {type(args).__name__})")
        self.name = name
        self.args = args
        self._open = []

    def __enter__(self):
        rec = PROFILER[0]
        self._open.append(rec.range_start(self.name, self.args) if rec is not None else None)
        return self

    def __exit__(self, *exc):
        r = self._open.pop() if self._open else None
        if r is not None:
            _RECORDER.range_end(r)
        return False

    def __call__(self, fn):
        name, args = self.name, self.args

        @functools.wraps(fn)
        def wrapper(*a, **k):
            with record_function(name, args):
                return fn(*a, **k)
        return wrapper


class emit_nvtx:
    """Name every operation and backward node with an NVTX range, for NVIDIA's Nsight tools
    (``nsys profile python script.py``).

    Inside the block each operation's forward call, backward node, custom Function call
    and :class:`record_function` range pushes a range named as in :class:`profile` through
    CuPy's ``cupy.cuda.nvtx``; nothing is recorded by ndgrad itself. Where CuPy or a GPU is
    missing (or CuPy was built without NVTX) it warns once, on entering, and does nothing.

    Parameters
    ----------
    enabled : bool
        False: the block does nothing.
    record_shapes : bool
        Append the input shapes to each range's name (``"matmul, sizes = [[2, 3], [3, 2]]"``).

    Examples
    --------
    In ``train.py``, run as ``nsys profile -o step python train.py`` on a GPU machine (what
    it shows depends on the machine, so this example is not run):

    >>> import ndgrad
    >>> from ndgrad.autograd import profiler
    >>> x = ndgrad.ones(1000, device="cuda", requires_grad=True)  # doctest: +SKIP
    >>> with profiler.emit_nvtx():  # doctest: +SKIP
    ...     ndgrad.tanh(x * 2.0).sum().backward()
    """

    def __init__(self, enabled=True, record_shapes=False):
        self.enabled = bool(enabled)
        self.record_shapes = bool(record_shapes)
        self._nvtx = None
        self._on = False

    def __enter__(self):
        if not self.enabled:
            return self
        if self._on:
            raise RuntimeError("this emit_nvtx block is already open")
        nvtx, why = _nvtx_backend()
        if nvtx is None:
            warnings.warn(
                f"emit_nvtx() does nothing here: {why} NVTX ranges name GPU work for NVIDIA's "
                "Nsight tools; to time code on the CPU, use ndgrad.autograd.profiler.profile().",
                UserWarning, stacklevel=2)
            return self
        self._nvtx = nvtx
        self._on = True
        _activate(self)
        return self

    def __exit__(self, *exc):
        if self._on:
            self._on = False
            _deactivate(self)
        return False


def _nvtx_backend():
    """``(the CUDA backend, None)``, or ``(None, why it cannot emit NVTX ranges)``."""
    try:
        B = backend_for_device("cuda")
    except RuntimeError as exc:  # (it says why, and how to install CuPy)
        return None, str(exc)
    if not B.has_nvtx():
        return None, "this CuPy was built without NVTX (cupy.cuda.nvtx.available is False)."
    return B, None


# ------------------------------------------------------------------ the results
class Interval:
    """A time range in µs since the profile began."""

    __slots__ = ("start", "end")

    def __init__(self, start, end):
        self.start = start
        self.end = end

    def elapsed_us(self):
        """``end - start``, in µs."""
        return self.end - self.start

    def __repr__(self):
        return f"Interval(start={self.start:.3f}, end={self.end:.3f})"


class _Totals:
    """What events and averages share: the derived times, aliases and a one-line repr."""

    @property
    def cpu_time(self):
        """Average CPU time per call (µs)."""
        return self.cpu_time_total / self.count if self.count else 0.0

    @property
    def device_time(self):
        """Average device time per call (µs)."""
        return self.device_time_total / self.count if self.count else 0.0

    # PyTorch's older names for the device fields
    cuda_time = property(lambda self: self.device_time)
    cuda_time_total = property(lambda self: self.device_time_total)
    self_cuda_time_total = property(lambda self: self.self_device_time_total)
    cuda_memory_usage = property(lambda self: self.device_memory_usage)
    self_cuda_memory_usage = property(lambda self: self.self_device_memory_usage)

    def __repr__(self):
        return (f"<{type(self).__name__} {self.key} count={self.count} "
                f"self_cpu_time={_fmt_time(self.self_cpu_time_total)} "
                f"cpu_time={_fmt_time(self.cpu_time_total)} "
                f"self_cuda_time={_fmt_time(self.self_device_time_total)} "
                f"cuda_time={_fmt_time(self.device_time_total)} "
                f"input_shapes={self.input_shapes} cpu_memory_usage={self.cpu_memory_usage} "
                f"cuda_memory_usage={self.device_memory_usage}>")


class FunctionEvent(_Totals):
    """One recorded event: an operation's forward call, a backward node, a custom Function
    call or a :class:`record_function` range.

    Attributes
    ----------
    id, name, thread : int, str, int
        Its number in the profile (from 1, in start order), its name, and the
        ``threading.get_ident()`` of the thread it ran in.
    kind : str
        ``"op"`` (an operation's forward call), ``"backward"`` (a node), ``"function"`` (a
        custom Function's ``apply``) or ``"range"`` (a :class:`record_function`, also
        ``is_user_annotation``).
    time_range : Interval
        Start and end, in µs since the profile began.
    cpu_time_total, self_cpu_time_total : float
        Its duration (µs), and that duration less its children's.
    cpu_parent, cpu_children : FunctionEvent or None, list
        The event it ran inside (in the same thread), and the events run inside it
        (``children`` is the same list).
    input_shapes, stack : list
        With ``record_shapes``: a shape (list) per input, [] for a non-array. With
        ``with_stack``: ``"file(line): function"`` frames outside ndgrad, innermost first.
    cpu_memory_usage, device_memory_usage : int
        With ``profile_memory``: bytes its outputs allocated (a range: its children's);
        ``self_...`` less its children's.
    device_time_total, self_device_time_total : float
        With ``use_cuda``, on a device: device time (µs) between CUDA events recorded
        before and after it (a range: its children's), and that less its children's.
    """

    def __init__(self, id, name, thread, start_us, end_us, input_shapes=None, stack=None,
                 is_user_annotation=False, kind="op", args=None):
        self.id = id
        self.name = name
        self.thread = thread
        self.time_range = Interval(start_us, end_us)
        self.input_shapes = input_shapes if input_shapes is not None else []
        self.stack = stack if stack is not None else []
        self.is_user_annotation = is_user_annotation
        self.kind = kind
        self.args = args
        self.cpu_parent = None
        self.cpu_children = []
        self.cpu_memory_usage = 0
        self.device_memory_usage = 0
        self.device_time_total = 0.0
        self.device_index = None
        self.device_start_us = None
        self._device_events = None
        self.count = 1

    key = property(lambda self: self.name)
    children = property(lambda self: self.cpu_children)

    @property
    def cpu_time_total(self):
        return self.time_range.elapsed_us()

    @property
    def self_cpu_time_total(self):
        return self.cpu_time_total - sum(c.cpu_time_total for c in self.cpu_children)

    @property
    def self_device_time_total(self):
        return self.device_time_total - sum(c.device_time_total for c in self.cpu_children)

    @property
    def self_cpu_memory_usage(self):
        return self.cpu_memory_usage - sum(c.cpu_memory_usage for c in self.cpu_children)

    @property
    def self_device_memory_usage(self):
        return self.device_memory_usage - sum(c.device_memory_usage for c in self.cpu_children)


class FunctionEventAvg(_Totals):
    """Events of one key added up (``key_averages``, ``total_average``): ``count`` calls,
    the sums of their times and memory (``cpu_time_total``, ``self_cpu_time_total``, ...),
    and per-call averages ``cpu_time`` and ``device_time``."""

    def __init__(self, key="", input_shapes=None, stack=None):
        self.key = key
        self.count = 0
        self.input_shapes = input_shapes if input_shapes is not None else []
        self.stack = stack if stack is not None else []
        self.cpu_time_total = self.self_cpu_time_total = 0.0
        self.device_time_total = self.self_device_time_total = 0.0
        self.cpu_memory_usage = self.self_cpu_memory_usage = 0
        self.device_memory_usage = self.self_device_memory_usage = 0
        self.is_user_annotation = False
        self.cpu_parent = None
        self._top_level = False

    def add(self, other):
        """Add an event (or an average) to this one; returns self."""
        if self.count == 0:
            self.is_user_annotation = other.is_user_annotation
        self.count += other.count
        self.cpu_time_total += other.cpu_time_total
        self.self_cpu_time_total += other.self_cpu_time_total
        self.device_time_total += other.device_time_total
        self.self_device_time_total += other.self_device_time_total
        self.cpu_memory_usage += other.cpu_memory_usage
        self.self_cpu_memory_usage += other.self_cpu_memory_usage
        self.device_memory_usage += other.device_memory_usage
        self.self_device_memory_usage += other.self_device_memory_usage
        if other.cpu_parent is None:
            self._top_level = True
        return self

    def __iadd__(self, other):
        return self.add(other)


_SORT_KEYS = ("cpu_time", "cpu_time_total", "self_cpu_time_total", "device_time",
              "device_time_total", "self_device_time_total", "cuda_time", "cuda_time_total",
              "self_cuda_time_total", "cpu_memory_usage", "self_cpu_memory_usage",
              "device_memory_usage", "self_device_memory_usage", "cuda_memory_usage",
              "self_cuda_memory_usage", "count")
_STACK_METRICS = ("self_cpu_time_total", "self_device_time_total", "self_cuda_time_total")


class EventList(list):
    """A list of :class:`FunctionEvent` (or of :class:`FunctionEventAvg`) that prints as a
    table (``str(events)`` is :meth:`table`)."""

    def __init__(self, events=(), *, use_device=False, profile_memory=False,
                 with_stack=False, with_shapes=False):
        super().__init__(events)
        self._use_device = use_device
        self._profile_memory = profile_memory
        self._with_stack = with_stack
        self._with_shapes = with_shapes
        self._stack_n = 0

    def _like(self, events, **changes):
        out = EventList(events, use_device=self._use_device,
                        profile_memory=self._profile_memory, with_stack=self._with_stack,
                        with_shapes=changes.get("with_shapes", self._with_shapes))
        out._stack_n = changes.get("stack_n", 0)
        return out

    @property
    def self_cpu_time_total(self):
        """The sum of the self CPU times (µs)."""
        return sum(e.self_cpu_time_total for e in self)

    def key_averages(self, group_by_input_shapes=False, group_by_stack_n=0):
        """One :class:`FunctionEventAvg` per event name, in the order names first appear.

        Parameters
        ----------
        group_by_input_shapes : bool
            Also tell apart calls with different input shapes (needs ``record_shapes``).
        group_by_stack_n : int
            Also tell apart calls from different places: the innermost ``n`` frames of
            their stacks (needs ``with_stack``).

        Examples
        --------
        >>> import ndgrad
        >>> from ndgrad.autograd import profiler
        >>> with profiler.profile(record_shapes=True) as prof:
        ...     a = ndgrad.ones(3) * 2.0
        ...     b = ndgrad.ones((2, 2)) * 3.0
        ...     c = a * a
        >>> [(e.key, e.count) for e in prof.key_averages()]
        [('multiply', 3)]
        >>> [(e.key, e.input_shapes, e.count)
        ...  for e in prof.key_averages(group_by_input_shape=True)]
        [('multiply', [[3], []], 1), ('multiply', [[2, 2], []], 1), ('multiply', [[3], [3]], 1)]
        """
        if group_by_input_shapes and not self._with_shapes:
            raise ValueError("key_averages(group_by_input_shape=True) needs the input shapes: "
                             "profile with profile(record_shapes=True)")
        if not isinstance(group_by_stack_n, int) or group_by_stack_n < 0:
            raise ValueError(f"group_by_stack_n must be an int >= 0, got {group_by_stack_n!r}")
        if group_by_stack_n and not self._with_stack:
            raise ValueError("key_averages(group_by_stack_n=...) needs the call stacks: "
                             "profile with profile(with_stack=True)")
        groups = {}
        for e in self:
            key = (e.key, str(e.input_shapes) if group_by_input_shapes else None,
                   tuple(e.stack[:group_by_stack_n]))
            avg = groups.get(key)
            if avg is None:
                avg = groups[key] = FunctionEventAvg(
                    e.key, e.input_shapes if group_by_input_shapes else None,
                    e.stack[:group_by_stack_n] if group_by_stack_n else None)
            avg.add(e)
        return self._like(groups.values(), with_shapes=bool(group_by_input_shapes),
                          stack_n=group_by_stack_n)

    def total_average(self):
        """All events added up, as one :class:`FunctionEventAvg` with key ``Total``."""
        total = FunctionEventAvg("Total")
        for e in self:
            total.add(e)
        return total

    def table(self, sort_by=None, row_limit=100, max_src_column_width=75,
              max_name_column_width=55, max_shapes_column_width=80, header=None,
              top_level_events_only=False):
        """The events as a text table, with PyTorch's columns.

        Name, Self CPU %, Self CPU, CPU total %, CPU total, CPU time avg; then Self CUDA,
        Self CUDA %, CUDA total, CUDA time avg when device time was recorded; CPU Mem and
        Self CPU Mem (and CUDA Mem, Self CUDA Mem) with ``profile_memory``; # of Calls;
        Input Shapes when grouped by input shape (or for the events of a ``record_shapes``
        profile); Source Location when grouped by stack. Percentages are of the sum of the
        self times of all the rows; the last line gives that sum.

        Parameters
        ----------
        sort_by : str, optional
            An attribute to sort by, largest first: ``"self_cpu_time_total"``,
            ``"cpu_time_total"``, ``"cpu_time"``, ``"count"``, ``"cpu_memory_usage"``,
            ``"self_device_time_total"`` (or ``"self_cuda_time_total"``), ... None keeps the
            list's order.
        row_limit : int
            At most this many rows (-1 or None: all).
        top_level_events_only : bool
            Only events with no parent (for averages: keys with a call that had none).
        """
        if sort_by is not None and sort_by not in _SORT_KEYS:
            raise ValueError(f"table(sort_by={sort_by!r}): not a column to sort by; use one of "
                             + ", ".join(_SORT_KEYS))
        return _table(self, sort_by, row_limit, max_src_column_width, max_name_column_width,
                      max_shapes_column_width, header, top_level_events_only)

    def __str__(self):
        return self.table()

    def export_chrome_trace(self, path):
        """Write the events as Chrome trace event JSON, for ``chrome://tracing`` and
        https://ui.perfetto.dev: one complete event (``"ph": "X"``) per event, with
        ``name``, ``cat``, ``ts`` and ``dur`` (µs), ``pid``, ``tid`` (the thread) and
        ``args`` (input shapes, memory, stack where recorded); events timed on a device
        appear a second time, with their device time, on a track named after the device
        (``cat`` ``"device"``).
        """
        pid = os.getpid()
        trace = [{"name": "process_name", "ph": "M", "pid": pid, "tid": 0,
                  "args": {"name": "ndgrad (CPU)"}}]
        devices = set()
        for e in self:
            if not isinstance(e, FunctionEvent):
                raise TypeError("export_chrome_trace() writes events, not averages: call it "
                                "on prof.events() or the profile")
            args = {}
            if e.input_shapes:
                args["Input Dims"] = e.input_shapes
            if self._profile_memory:
                args["CPU Mem"] = e.cpu_memory_usage
                if e.device_memory_usage:
                    args["Device Mem"] = e.device_memory_usage
            if e.stack:
                args["Call stack"] = ";".join(e.stack)
            if e.args is not None:
                args["args"] = e.args
            trace.append({"name": e.name, "ph": "X", "cat": _CATEGORY[e.kind],
                          "ts": round(e.time_range.start, 3),
                          "dur": round(e.cpu_time_total, 3), "pid": pid, "tid": e.thread,
                          "args": args})
            if e.device_index is not None and e.kind != "range":
                devices.add(e.device_index)
                trace.append({"name": e.name, "ph": "X", "cat": "device",
                              "ts": round(e.device_start_us, 3),
                              "dur": round(e.device_time_total, 3), "pid": pid,
                              "tid": _DEVICE_TRACK + e.device_index,
                              "args": {"correlation": e.id}})
        for d in sorted(devices):  # a track per device, named
            trace.append({"name": "thread_name", "ph": "M", "pid": pid,
                          "tid": _DEVICE_TRACK + d, "args": {"name": f"CUDA device {d}"}})
        with open(path, "w") as f:
            json.dump({"traceEvents": trace, "displayTimeUnit": "ms"}, f)

    def export_stacks(self, path, metric="self_cpu_time_total"):
        """Write the events' stacks in the folded format of flamegraph.pl and speedscope:
        one line ``outer;...;inner;name value`` per event whose ``metric`` (µs, an integer)
        is at least 1.

        Needs a profile made with ``with_stack=True``.
        """
        if metric not in _STACK_METRICS:
            raise ValueError(f"export_stacks(metric={metric!r}): use one of "
                             + ", ".join(_STACK_METRICS))
        if not self._with_stack:
            raise RuntimeError("export_stacks() needs the call stacks: profile with "
                               "profile(with_stack=True)")
        with open(path, "w") as f:
            for e in self:
                value = int(getattr(e, metric))
                if e.stack and value > 0:
                    frames = [_folded(s) for s in reversed(e.stack)] + [_folded(e.name)]
                    f.write(";".join(frames) + f" {value}\n")


_DEVICE_TRACK = 1 << 31  # the Chrome trace's tid of device d's track: this + d
_CATEGORY = {"op": "cpu_op", "backward": "backward", "function": "cpu_op",
             "range": "user_annotation"}


def _folded(text):
    return text.replace(";", ",").replace("\n", " ")


# ------------------------------------------------------------------ the table
def _fmt_time(us):
    if abs(us) >= 1e6:
        return f"{us / 1e6:.3f}s"
    if abs(us) >= 1e3:
        return f"{us / 1e3:.3f}ms"
    return f"{us:.3f}us"


def _fmt_memory(n):
    for unit, size in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if abs(n) >= size:
            return f"{n / size:.2f} {unit}"
    return f"{n} B"


def _percent(part, whole):
    return f"{100.0 * part / whole:.2f}%" if whole else "0.00%"


def _clip(text, width):
    return text if len(text) <= width else text[:width - 3] + "..."


def _table(events, sort_by, row_limit, max_src, max_name, max_shapes, header, top_only):
    rows = list(events)
    total_self = sum(e.self_cpu_time_total for e in rows)
    total_self_dev = sum(e.self_device_time_total for e in rows)
    device = events._use_device
    memory = events._profile_memory
    device_memory = memory and device
    shapes = events._with_shapes
    stack_n = events._stack_n
    if top_only:
        rows = [e for e in rows if (e._top_level if isinstance(e, FunctionEventAvg)
                                    else e.cpu_parent is None)]
    if sort_by is not None:
        rows.sort(key=lambda e: getattr(e, sort_by), reverse=True)
    if row_limit is not None and row_limit >= 0:
        rows = rows[:row_limit]

    name_width = min(max([len(e.key) for e in events] + [4]) + 4, max_name)
    columns = [("Name", name_width, lambda e: _clip(e.key, name_width)),
               ("Self CPU %", 12, lambda e: _percent(e.self_cpu_time_total, total_self)),
               ("Self CPU", 12, lambda e: _fmt_time(e.self_cpu_time_total)),
               ("CPU total %", 12, lambda e: _percent(e.cpu_time_total, total_self)),
               ("CPU total", 12, lambda e: _fmt_time(e.cpu_time_total)),
               ("CPU time avg", 12, lambda e: _fmt_time(e.cpu_time))]
    if device:
        columns += [("Self CUDA", 12, lambda e: _fmt_time(e.self_device_time_total)),
                    ("Self CUDA %", 12,
                     lambda e: _percent(e.self_device_time_total, total_self_dev)),
                    ("CUDA total", 12, lambda e: _fmt_time(e.device_time_total)),
                    ("CUDA time avg", 12, lambda e: _fmt_time(e.device_time))]
    if memory:
        columns += [("CPU Mem", 12, lambda e: _fmt_memory(e.cpu_memory_usage)),
                    ("Self CPU Mem", 12, lambda e: _fmt_memory(e.self_cpu_memory_usage))]
    if device_memory:
        columns += [("CUDA Mem", 12, lambda e: _fmt_memory(e.device_memory_usage)),
                    ("Self CUDA Mem", 13,
                     lambda e: _fmt_memory(e.self_device_memory_usage))]
    columns.append(("# of Calls", 12, lambda e: str(e.count)))
    if shapes:
        shapes_width = min(max([len(str(e.input_shapes)) for e in events] + [12]) + 4,
                           max_shapes)
        columns.append(("Input Shapes", shapes_width,
                        lambda e: _clip(str(e.input_shapes), shapes_width)))
    if stack_n:
        src_width = min(max([len(s) for e in events for s in e.stack] + [15]) + 4, max_src)
        columns.append(("Source Location", src_width,
                        lambda e: _clip(e.stack[0], src_width) if e.stack else ""))

    def line(cells):
        return "".join(c.rjust(w) + "  " for c, (_, w, _) in zip(cells, columns))

    rule = "".join("-" * w + "  " for _, w, _ in columns)
    out = []
    if header is not None:
        out += ["=" * len(rule), header]
    if top_only:
        out.append("This report only shows top-level events.")
    out += [rule, line([h for h, _, _ in columns]), rule]
    for e in rows:
        out.append(line([f(e) for _, _, f in columns]))
        for frame in e.stack[1:stack_n]:  # the rest of the stack, one frame a line
            out.append(line([""] * (len(columns) - 1) + [_clip(frame, columns[-1][1])]))
    out.append(rule)
    out.append(f"Self CPU time total: {_fmt_time(total_self)}")
    if device:
        out.append(f"Self CUDA time total: {_fmt_time(total_self_dev)}")
    return "\n".join(out) + "\n"
