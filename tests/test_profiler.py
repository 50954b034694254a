"""ndgrad.autograd.profiler: what a profile records (names, counts, the tree, shapes, memory,
stacks, threads, device time), how it reports it (table, averages, Chrome trace, folded
stacks), emit_nvtx, and that nothing is recorded outside a profile. Each test runs on the CPU
and on the emulated CUDA device (Note [Devices in the test suite] in tests/conftest.py)."""

from __future__ import annotations

import inspect
import json
import os
import re
import threading
import warnings
from collections import Counter
from time import perf_counter_ns

import numpy as np
import pytest

import ndgrad as nd
from ndgrad.autograd import profiler
from ndgrad.core import backend as _backend
from ndgrad.core.grad_mode import PROFILER

import emulated_cupy
from support import host


def _graph_names(t):
    """The names of the nodes of ``t``'s backward graph, AccumulateGrad included: what a
    backward pass from ``t`` runs (found by walking the graph, not by the profiler)."""
    seen, stack, names = set(), [t.grad_fn], []
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        names.append(node.name())
        stack.extend(n for n, _ in node.next_functions)
    return Counter(names)


def _forward(events):
    return [e for e in events if e.kind in ("op", "function")]


def _backward(events):
    return [e for e in events if e.kind == "backward"]


def _emulated(device):
    """Whether this run is on the emulated CUDA device (its CuPy logs NVTX calls)."""
    B = _backend._CUDA["backend"]
    return device != "cpu" and B is not None and \
        B._cp.cuda.nvtx.RangePush is emulated_cupy._range_push


# ---------------------------------------------------------------- what is recorded
def test_names_and_counts_of_a_known_computation():
    x = nd.tensor([0.5, -1.0, 2.0], requires_grad=True)
    with profiler.profile() as prof:
        y = nd.tanh(x * 2.0 + 1.0)
        s = y.sum()
        expected_nodes = _graph_names(s)
        s.backward()
    events = prof.events()
    assert [e.name for e in _forward(events)] == ["multiply", "add", "tanh", "sum"]
    assert Counter(e.name for e in _backward(events)) == expected_nodes
    assert expected_nodes == Counter(["SumBackward0", "TanhBackward0", "AddBackward0",
                                      "MultiplyBackward0", "AccumulateGrad"])
    counts = {a.key: a.count for a in prof.key_averages()}
    assert counts == {name: 1 for name in ["multiply", "add", "tanh", "sum", "SumBackward0",
                                           "TanhBackward0", "AddBackward0",
                                           "MultiplyBackward0", "AccumulateGrad"]}
    assert [e.id for e in events] == list(range(1, len(events) + 1))
    starts = [e.time_range.start for e in events]
    assert starts == sorted(starts)
    # the backward pass ran in the order the engine runs nodes: after the forward
    assert min(e.time_range.start for e in _backward(events)) >= \
        max(e.time_range.end for e in _forward(events))
    np.testing.assert_allclose(host(x.grad), 2 * (1 - np.tanh(2 * host(x) + 1) ** 2))


def test_self_time_is_at_most_total_time_and_a_range_adds_up():
    x = nd.tensor(np.linspace(-1, 1, 2000), requires_grad=True)
    t0 = perf_counter_ns()
    with profiler.profile() as prof:
        with profiler.record_function("step"):
            y = nd.exp(nd.sin(x) * x)
            y.sum().backward()
    wall_us = (perf_counter_ns() - t0) / 1e3
    events = prof.events()
    for e in events:
        assert 0 <= e.self_cpu_time_total <= e.cpu_time_total + 1e-9, e
        for c in e.cpu_children:  # a child runs inside its parent, in its thread
            assert e.time_range.start <= c.time_range.start <= c.time_range.end \
                <= e.time_range.end
            assert c.thread == e.thread and c.cpu_parent is e
    (step,) = [e for e in events if e.name == "step"]
    assert step.is_user_annotation and step.cpu_parent is None
    assert {c.name for c in step.cpu_children} >= {"sin", "multiply", "exp", "sum"}
    assert len(step.cpu_children) == len(events) - 1  # everything ran inside it
    children = sum(c.cpu_time_total for c in step.cpu_children)
    assert step.cpu_time_total == pytest.approx(step.self_cpu_time_total + children)
    assert children < step.cpu_time_total <= wall_us
    assert prof.self_cpu_time_total == pytest.approx(step.cpu_time_total)
    total = prof.total_average()
    assert total.key == "Total" and total.count == len(events)
    assert total.self_cpu_time_total == pytest.approx(sum(e.self_cpu_time_total
                                                          for e in events))


def test_nested_record_functions_make_the_tree():
    @profiler.record_function("layer")
    def layer(t):
        return nd.tanh(t @ t)

    x = nd.ones((3, 3))
    with profiler.profile() as prof:
        with profiler.record_function("model"):
            h = layer(x)
            with profiler.record_function("head"):
                h = h.sum()
            h = layer(x)
    tree = {}

    def walk(e, depth):
        tree.setdefault(depth, []).append(e.name)
        for c in e.cpu_children:
            walk(c, depth + 1)
    roots = [e for e in prof.events() if e.cpu_parent is None]
    assert [r.name for r in roots] == ["model"]
    walk(roots[0], 0)
    assert tree == {0: ["model"], 1: ["layer", "head", "layer"],
                    2: ["matmul", "tanh", "sum", "matmul", "tanh"]}
    assert layer.__name__ == "layer"  # the decorator keeps the function's identity
    with pytest.raises(TypeError, match=r'@record_function\("name"\)'):
        profiler.record_function(layer)


def test_record_shapes_and_grouping_by_input_shape():
    a, b = nd.ones((2, 3)), nd.ones((3, 4))
    with profiler.profile(record_shapes=True) as prof:
        m = a @ b
        c = nd.ones((5,)) @ nd.ones((5,))
    (mm1, mm2) = [e for e in prof.events() if e.name == "matmul"]
    assert mm1.input_shapes == [list(a.shape), list(b.shape)] == [[2, 3], [3, 4]]
    assert mm2.input_shapes == [[5], [5]]
    assert list(m.shape) == [2, 4] and c.shape == ()
    by_name = prof.key_averages()
    assert [(e.key, e.count) for e in by_name if e.key == "matmul"] == [("matmul", 2)]
    by_shape = [e for e in prof.key_averages(group_by_input_shape=True) if e.key == "matmul"]
    assert [(e.input_shapes, e.count) for e in by_shape] == [([[2, 3], [3, 4]], 1),
                                                            ([[5], [5]], 1)]
    assert "Input Shapes" in prof.key_averages(group_by_input_shape=True).table()
    with profiler.profile() as plain:
        a @ b
    assert plain.events()[0].input_shapes == []
    with pytest.raises(ValueError, match="record_shapes=True"):
        plain.key_averages(group_by_input_shape=True)


def test_profile_memory_counts_the_bytes_of_new_outputs(device):
    a = nd.tensor(np.arange(12.0).reshape(3, 4))
    b = nd.tensor(np.ones((4, 5), dtype=np.float32))
    with profiler.profile(profile_memory=True) as prof:
        m = a @ b                    # a new (3, 5) float64 array
        v = m.reshape(15)            # a view: allocates nothing
        q, r = nd.linalg.qr(a)       # two new arrays
    mem = {e.name: (e.cpu_memory_usage, e.device_memory_usage) for e in prof.events()}
    nbytes = {"matmul": host(m).nbytes, "reshape": 0,
              "linalg.qr": host(q).nbytes + host(r).nbytes}
    assert nbytes["matmul"] == 3 * 5 * 8
    for name, n in nbytes.items():
        assert mem[name] == ((n, 0) if device == "cpu" else (0, n)), name
    assert v.shape == (15,)
    with profiler.profile() as off:
        a @ b
    assert off.events()[0].cpu_memory_usage == 0  # not asked for
    table = prof.key_averages().table()
    assert "CPU Mem" in table and "Self CPU Mem" in table
    assert "CPU Mem" not in off.key_averages().table()


def test_with_stack_records_the_users_line():
    x = nd.tensor([1.0, 2.0])
    with profiler.profile(with_stack=True) as prof:
        line = inspect.currentframe().f_lineno + 1
        y = nd.tanh(x)
    (e,) = prof.events()
    assert e.stack[0].endswith(f"({line}): test_with_stack_records_the_users_line")
    assert "test_profiler.py" in e.stack[0]
    assert not any("ndgrad" + os.sep in frame for frame in e.stack)  # ndgrad's frames left out
    assert y.shape == (2,)
    grouped = prof.key_averages(group_by_stack_n=1)
    assert grouped[0].stack == e.stack[:1]
    assert "Source Location" in grouped.table()


def test_ops_in_another_thread_carry_its_id():
    x = nd.tensor([1.0, 2.0])
    seen = {}

    def work():
        seen["id"] = threading.get_ident()
        nd.exp(x)

    with profiler.profile() as prof:
        nd.sin(x)
        t = threading.Thread(target=work)
        t.start()
        t.join()
    threads = {e.name: e.thread for e in prof.events()}
    assert threads == {"sin": threading.get_ident(), "exp": seen["id"]}
    assert seen["id"] != threading.get_ident()


def test_disabled_and_finished_profiles_record_nothing():
    x = nd.tensor([1.0, 2.0], requires_grad=True)
    assert PROFILER[0] is None
    with profiler.profile(enabled=False) as prof:
        assert PROFILER[0] is None  # nothing observes the hot path
        (x * 2.0).sum().backward()
    assert len(prof.events()) == 0 and prof.key_averages() == []
    with profiler.profile() as prof:
        with pytest.raises(RuntimeError, match="after the `with profile"):
            prof.events()
        nd.sin(x)
    assert PROFILER[0] is None
    nd.cos(x)
    assert [e.name for e in prof.events()] == ["sin"]
    with pytest.raises(ValueError, match="boom"):
        with profiler.profile() as prof:
            raise ValueError("boom")
    assert PROFILER[0] is None and len(prof.events()) == 0
    with pytest.raises(RuntimeError, match="already used"):
        with prof:
            pass


def test_nested_profiles_each_see_their_own_span():
    x = nd.tensor([1.0, 2.0])
    with profiler.profile() as outer:
        nd.sin(x)
        with profiler.profile(record_shapes=True) as inner:
            nd.cos(x)
        nd.tan(x)
    assert [e.name for e in outer.events()] == ["sin", "cos", "tan"]
    assert [e.name for e in inner.events()] == ["cos"]
    assert outer.events()[1].input_shapes == [] and inner.events()[0].input_shapes == [[2]]


def test_double_backward_and_custom_functions():
    x = nd.tensor([0.5, 1.5], requires_grad=True)
    with profiler.profile() as prof:
        y = (x ** 3).sum()
        first = _graph_names(y)
        (g,) = nd.autograd.grad(y, x, create_graph=True)
        second = _graph_names(g.sum())
        g.sum().backward()
    events = prof.events()
    # both passes' nodes, each once (the first pass captures x's gradient at its AccumulateGrad)
    assert Counter(e.name for e in _backward(events)) == first + second
    pow_nodes = [e for e in events if e.name == "PowBackward0"]
    assert len(pow_nodes) == 2
    # with create_graph the first pass's formula ops are its node's children; the second
    # pass runs on arrays
    assert pow_nodes[0].cpu_children and not pow_nodes[1].cpu_children
    assert all(c.kind == "op" for c in pow_nodes[0].cpu_children)
    np.testing.assert_allclose(host(x.grad), 6 * host(x))

    class Cube(nd.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            ctx.save_for_backward(t)
            return t * t * t

        @staticmethod
        def backward(ctx, grad):
            (t,) = ctx.saved_tensors
            return grad * 3 * t * t

    z = nd.tensor([2.0], requires_grad=True)
    with profiler.profile() as prof:
        Cube.apply(z).sum().backward()
    names = [e.name for e in prof.events()]
    (fn,) = [e for e in prof.events() if e.name == "Cube"]
    assert [c.name for c in fn.cpu_children] == ["multiply", "multiply"]
    assert "CubeBackward" in names and names.index("CubeBackward") > names.index("Cube")
    (node,) = [e for e in prof.events() if e.name == "CubeBackward"]
    assert [c.name for c in node.cpu_children] == ["multiply"] * 3
    np.testing.assert_allclose(host(z.grad), [12.0])


# ---------------------------------------------------------------- reports
def _rows(table):
    """The cells of a table's header and rows (between its rules)."""
    lines = table.splitlines()
    rules = [i for i, line in enumerate(lines) if set(line.strip()) == {"-", " "}]
    header = re.split(r"\s{2,}", lines[rules[0] + 1].strip())
    rows = [re.split(r"\s{2,}", line.strip()) for line in lines[rules[1] + 1:rules[2]]]
    return header, rows


def _us(text):
    scale = {"us": 1.0, "ms": 1e3, "s": 1e6}
    number, unit = re.fullmatch(r"(-?[\d.]+)(us|ms|s)", text).groups()
    return float(number) * scale[unit]


def test_the_table():
    x = nd.tensor(np.linspace(0, 1, 500), requires_grad=True)
    with profiler.profile() as prof:
        for _ in range(3):
            y = nd.exp(x) * x
        y.sum().backward()
    averages = prof.key_averages()
    header, rows = _rows(averages.table(sort_by="self_cpu_time_total", row_limit=100))
    assert header == ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total",
                      "CPU time avg", "# of Calls"]
    names = [r[0] for r in rows]
    assert sorted(names) == sorted({e.name for e in prof.events()})  # a row per name
    self_times = [_us(r[2]) for r in rows]
    assert self_times == sorted(self_times, reverse=True)
    expected = sorted(averages, key=lambda a: a.self_cpu_time_total, reverse=True)
    assert names == [a.key for a in expected]
    calls = {r[0]: int(r[-1]) for r in rows}
    assert calls["exp"] == 3 and calls["multiply"] == 3 and calls["sum"] == 1
    _, limited = _rows(averages.table(sort_by="count", row_limit=2))
    assert len(limited) == 2 and {r[0] for r in limited} == {"exp", "multiply"}
    percents = [float(r[1].rstrip("%")) for r in rows]
    assert sum(percents) == pytest.approx(100.0, abs=0.1)
    footer = averages.table().splitlines()[-1]
    assert footer.startswith("Self CPU time total: ")
    assert _us(footer.split(": ")[1]) == pytest.approx(prof.self_cpu_time_total, rel=1e-3)
    assert str(prof) == prof.table()
    with pytest.raises(ValueError, match="self_cpu_time_total"):
        averages.table(sort_by="fastest")


def test_chrome_trace(tmp_path):
    x = nd.tensor([1.0, 2.0], requires_grad=True)
    with profiler.profile(record_shapes=True) as prof:
        with profiler.record_function("fwd", args="batch 0"):
            y = (x * x).sum()
        y.backward()
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    trace = json.loads(path.read_text())
    complete = [t for t in trace["traceEvents"] if t["ph"] == "X" and t["cat"] != "device"]
    events = prof.events()
    assert len(complete) == len(events)
    for t, e in zip(complete, events):
        assert {"name", "ph", "ts", "dur", "pid", "tid", "args"} <= set(t)
        assert t["name"] == e.name and t["pid"] == os.getpid()
        assert t["tid"] == threading.get_ident() == e.thread
        assert t["ts"] == pytest.approx(e.time_range.start, abs=1e-3)
        assert t["dur"] == pytest.approx(e.cpu_time_total, abs=1e-3)
    assert complete[0]["cat"] == "user_annotation" and complete[0]["args"]["args"] == "batch 0"
    assert complete[1]["args"]["Input Dims"] == [[2], [2]]
    with pytest.raises(TypeError, match="prof.events"):
        prof.key_averages().export_chrome_trace(str(path))


def test_export_stacks(tmp_path):
    x = nd.tensor(np.linspace(0, 1, 200_000))
    with profiler.profile(with_stack=True) as prof:
        y = nd.exp(nd.sin(x))
    path = tmp_path / "stacks.txt"
    prof.export_stacks(str(path))
    lines = path.read_text().splitlines()
    assert lines
    for line in lines:
        frames, value = line.rsplit(" ", 1)
        assert int(value) >= 1 and frames.split(";")[-1] in ("sin", "exp")
    (sin_line,) = [line for line in lines if line.rsplit(" ", 1)[0].endswith(";sin")]
    assert sin_line.split(";")[-2].endswith("): test_export_stacks")
    (sin,) = [e for e in prof.events() if e.name == "sin"]
    assert int(sin_line.rsplit(" ", 1)[1]) == int(sin.self_cpu_time_total)
    assert y.shape == x.shape
    with profiler.profile() as plain:
        nd.sin(x)
    with pytest.raises(RuntimeError, match="with_stack=True"):
        plain.export_stacks(str(path))
    with pytest.raises(ValueError, match="self_cpu_time_total"):
        prof.export_stacks(str(path), metric="cpu_memory_usage")


# ---------------------------------------------------------------- devices
def test_use_cuda_times_device_work(device):
    x = nd.tensor(np.linspace(-1, 1, 64), requires_grad=True)
    t0 = perf_counter_ns()
    with profiler.profile(use_cuda=True) as prof:
        with profiler.record_function("step"):
            nd.tanh(x * 2.0).sum().backward()
    wall_us = (perf_counter_ns() - t0) / 1e3
    events = prof.events()
    table = prof.key_averages().table(sort_by="self_cuda_time_total")
    header, _ = _rows(table)
    if device == "cpu":  # nothing runs on a device: use_cuda adds nothing
        assert all(e.device_time_total == 0 and e.device_index is None for e in events)
        assert "Self CUDA" not in header
        return
    timed = [e for e in events if not e.is_user_annotation]
    assert timed and all(0 < e.device_time_total <= wall_us for e in timed)
    assert all(e.device_index == 0 for e in events)
    (step,) = [e for e in events if e.name == "step"]
    assert step.device_time_total == pytest.approx(sum(c.device_time_total
                                                       for c in step.cpu_children))
    assert step.self_device_time_total == pytest.approx(0.0, abs=1e-9)
    assert header[6:10] == ["Self CUDA", "Self CUDA %", "CUDA total", "CUDA time avg"]
    assert table.splitlines()[-1].startswith("Self CUDA time total: ")
    assert prof.key_averages()[1].cuda_time_total == prof.key_averages()[1].device_time_total


def test_emit_nvtx_on_the_device_pushes_balanced_ranges(device):
    if not _emulated(device):
        pytest.skip("the emulated CUDA device logs NVTX calls")
    x = nd.tensor([0.5, 1.0], requires_grad=True)

    def step():
        with profiler.record_function("step"):
            nd.exp(x * x).sum().backward()

    with profiler.profile() as prof:
        step()
    emulated_cupy.NVTX_LOG.clear()
    with profiler.emit_nvtx():
        assert PROFILER[0] is not None
        step()
    assert PROFILER[0] is None
    log = list(emulated_cupy.NVTX_LOG)
    emulated_cupy.NVTX_LOG.clear()
    depth = 0
    for kind, _ in log:
        depth += 1 if kind == "push" else -1
        assert depth >= 0
    assert depth == 0
    assert [m for kind, m in log if kind == "push"] == [e.name for e in prof.events()]
    with profiler.emit_nvtx(record_shapes=True):
        x @ x
    assert emulated_cupy.NVTX_LOG == [("push", "matmul, sizes = [[2], [2]]"), ("pop", None)]
    emulated_cupy.NVTX_LOG.clear()


@pytest.mark.cpu_only("it is about machines without a GPU")
def test_emit_nvtx_without_a_gpu_warns_once_and_does_nothing():
    if _backend.cuda_device_count() > 0:
        pytest.skip("this machine has a GPU")
    x = nd.tensor([1.0, 2.0], requires_grad=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with profiler.emit_nvtx():
            assert PROFILER[0] is None  # nothing observes the hot path
            (x * 2.0).sum().backward()
            nd.sin(x)
    assert len(caught) == 1 and caught[0].category is UserWarning
    message = str(caught[0].message)
    assert "CuPy" in message and "pip install" in message and "profile()" in message
    assert caught[0].filename == __file__  # it points at the user's `with` line
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with profiler.emit_nvtx(enabled=False):
            nd.sin(x)
