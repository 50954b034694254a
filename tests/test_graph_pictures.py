"""Pictures of the backward graph and memory reports (ndgrad/autograd/_pictures.py):
``ndgrad.autograd.graph.to_dot``, ``render`` and ``memory_report``.

The DOT text is parsed here (box ids, labels, ``a -> b`` edges) and compared with the graph
walked independently through ``grad_fn.next_functions``; byte counts are compared with the
``nbytes`` of arrays of known shapes; Graphviz, where installed, checks that the text parses.
"""

from __future__ import annotations

import collections
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

import ndgrad
from ndgrad.autograd import _pictures
from ndgrad.autograd.graph import DotGraph, MemoryReport, memory_report, render, to_dot
from support import HANG_S, host

needs_dot = pytest.mark.skipif(shutil.which("dot") is None,
                               reason="Graphviz's `dot` program is not installed")

_BOX = re.compile(r'^\s*(\w+) \[label="((?:[^"\\]|\\.)*)"(.*)\];$', re.M)
_EDGE = re.compile(r'^\s*(\w+) -> (\w+)(?: \[label="((?:[^"\\]|\\.)*)".*\])?;$', re.M)


def parse(source):
    """``(boxes, edges)``: {id: (label lines, rest of the attributes)} and [(a, b, label)]."""
    boxes = {m[1]: (m[2].replace("\\n", "\n").split("\n"), m[3])
             for m in _BOX.finditer(source)}
    edges = [(m[1], m[2], m[3]) for m in _EDGE.finditer(source)]
    return boxes, edges


def walk(fn):
    """The nodes reachable from ``fn`` through ``next_functions`` (by identity), and the
    edges ``(input's node, node)`` with multiplicity."""
    nodes, edges, stack = {id(fn): fn}, [], [fn]
    while stack:
        node = stack.pop()
        for nxt, _ in node.next_functions:
            if nxt is None:
                continue
            edges.append((nxt, node))
            if id(nxt) not in nodes:
                nodes[id(nxt)] = nxt
                stack.append(nxt)
    return list(nodes.values()), edges


def nbytes(t):
    """The size of a tensor's data, read on the host."""
    return host(t).nbytes


def mlp():
    W = ndgrad.tensor(np.arange(12.0).reshape(3, 4) / 10, requires_grad=True)
    x = ndgrad.tensor(np.linspace(-1, 1, 4))
    b = ndgrad.tensor(np.zeros(3), requires_grad=True)
    h = ndgrad.tanh(W @ x + b)
    loss = (h ** 2).sum()
    return W, x, b, h, loss


def leaf_label(t, names):
    shape = f"{tuple(t.shape)} {t.dtype}"
    return [names[id(t)], shape] if id(t) in names else [shape]


# ------------------------------------------------------------------ to_dot
def test_dot_has_one_box_per_node_and_the_graph_edges():
    W, x, b, h, loss = mlp()
    dot = to_dot(loss, params={"W": W, "b": b})
    assert isinstance(dot, DotGraph) and str(dot) == dot.source
    boxes, edges = parse(dot.source)

    nodes, ref_edges = walk(loss.grad_fn)
    names = {id(W): "W", id(b): "b"}

    def label(node):
        if node.name() == "AccumulateGrad":
            return leaf_label(node.variable, names)
        return [node.name()]

    graph_boxes = {k: v[0] for k, v in boxes.items() if k.startswith("n")}
    assert len(graph_boxes) == len(nodes) == dot.node_count == 7
    assert sorted("\n".join(v) for v in graph_boxes.values()) == sorted(
        ["SumBackward0", "PowBackward0", "TanhBackward0", "AddBackward0", "MatmulBackward0",
         "W\n(3, 4) float64", "b\n(3,) float64"])
    assert sorted("\n".join(label(n)) for n in nodes) == sorted(
        "\n".join(v) for v in graph_boxes.values())
    # the edges, as (label of the input's node, label of the node), with multiplicity
    dot_edges = [(tuple(graph_boxes[a]), tuple(graph_boxes[c])) for a, c, _ in edges
                 if a.startswith("n") and c.startswith("n")]
    assert collections.Counter(dot_edges) == collections.Counter(
        (tuple(label(a)), tuple(label(c))) for a, c in ref_edges)
    assert dot.edge_count == len(ref_edges) == 6
    # the root: its own box, below its node
    assert boxes["out0"][0] == ["output", "() float64"]
    assert [(a, c) for a, c, _ in edges if c == "out0"] == \
        [(k, "out0") for k, v in graph_boxes.items() if v == ["SumBackward0"]]
    assert not any(k.startswith("s") for k in boxes)  # no saved values unless asked


def test_dot_edges_of_a_graph_with_repeated_names_and_inputs():
    """x * x has two edges to the same leaf; two AddBackward0 nodes are two boxes."""
    x = ndgrad.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x + x) + ndgrad.sin(x)
    boxes, edges = parse(to_dot(y).source)
    nodes, ref_edges = walk(y.grad_fn)
    assert sum(k.startswith("n") for k in boxes) == len(nodes) == 5
    assert [lines for k, (lines, _) in boxes.items() if k.startswith("n")].count(
        ["AddBackward0"]) == 2
    leaf = next(k for k, (lines, _) in boxes.items() if lines == ["(2,) float64"])
    mul = next(k for k, (lines, _) in boxes.items() if lines == ["MultiplyBackward0"])
    assert [(a, c) for a, c, _ in edges].count((leaf, mul)) == 2
    assert len([e for e in edges if e[1].startswith("n")]) == len(ref_edges) == 7


def test_unnamed_leaves_show_shape_and_dtype_and_roots_can_be_several_or_a_leaf():
    a = ndgrad.ones((2, 5), dtype=ndgrad.float32, requires_grad=True)
    c = ndgrad.ones(5, dtype=ndgrad.float32, requires_grad=True)
    s = ndgrad.sin(a)
    out = (s * c).sum(axis=0)
    boxes, edges = parse(to_dot([out, s, c], params={"c": c}).source)
    assert ["(2, 5) float32"] in [v[0] for v in boxes.values()]
    assert ["c", "(5,) float32"] in [v[0] for v in boxes.values()]
    roots = {k: v[0] for k, v in boxes.items() if k.startswith("out")}
    assert roots == {"out0": ["output", "(5,) float32"], "out1": ["output", "(2, 5) float32"],
                     "out2": ["c", "(5,) float32"]}
    ids = {k: v[0][0] for k, v in boxes.items()}
    into = {c_: ids[a_] for a_, c_, _ in edges if c_.startswith("out")}
    assert into == {"out0": "SumBackward0", "out1": "SinBackward0", "out2": "c"}
    # a leaf alone
    boxes, edges = parse(to_dot(a).source)
    assert [v[0] for v in boxes.values()] == [["(2, 5) float32"], ["output", "(2, 5) float32"]]
    assert [(a_, c_) for a_, c_, _ in edges] == [("n0", "out0")]


def test_show_saved_lists_each_saved_array_once_with_its_shape_and_bytes():
    W, x, b, h, loss = mlp()
    plain = to_dot(loss).source
    source = to_dot(loss, params={"W": W}, show_saved=True).source
    boxes, edges = parse(source)
    saved = {k: v[0] for k, v in boxes.items() if k.startswith("s")}
    # tanh saves its output (3 floats), pow saves it as its x (the same array: one box),
    # matmul saves x (4 floats) for W's gradient
    assert sorted(saved.values()) == sorted(
        [["(3,) float64", f"{nbytes(h)} bytes"],
         ["(4,) float64", f"{nbytes(x)} bytes"]])
    assert nbytes(h) == 24 and nbytes(x) == 32
    ids = {k: v[0][0] for k, v in boxes.items()}
    links = sorted((saved[a][0], ids[c], label) for a, c, label in edges if a.startswith("s"))
    assert links == [("(3,) float64", "PowBackward0", "x"),
                     ("(3,) float64", "TanhBackward0", "out"),
                     ("(4,) float64", "MatmulBackward0", "y")]
    # a saved scalar is written in its node's box
    pow_box = next(v[0] for v in boxes.values() if v[0][0] == "PowBackward0")
    assert pow_box == ["PowBackward0", "y = 2"]
    assert "y = 2" not in plain and "bytes" not in plain

    # after backward without retain_graph: freed, nothing left to show
    loss.backward()
    boxes, _ = parse(to_dot(loss, show_saved=True).source)
    assert not any(k.startswith("s") for k in boxes)
    freed = sorted(v[0][0] for v in boxes.values() if "saved values freed" in v[0])
    assert freed == ["MatmulBackward0", "PowBackward0", "TanhBackward0"]


def test_show_saved_names_a_saved_leaf_and_sizes_large_arrays():
    a = ndgrad.ones((64, 32), requires_grad=True)
    c = ndgrad.ones((64, 32), requires_grad=True)
    boxes, edges = parse(to_dot(a * c, params={"a": a, "c": c}, show_saved=True).source)
    saved = sorted(v[0] for k, v in boxes.items() if k.startswith("s"))
    assert saved == [["a", "(64, 32) float64", "16384 bytes (16.0 KiB)"],
                     ["c", "(64, 32) float64", "16384 bytes (16.0 KiB)"]]
    assert nbytes(a) == 16384


def test_saved_tuples_are_named_by_position_and_outputs_of_one_node_share_it():
    x = ndgrad.ones((4, 3), requires_grad=True)
    idx = np.array([0, 2])
    a, b = ndgrad.split(x[idx, 1:], 2)
    boxes, edges = parse(to_dot([a, b], show_saved=True).source)
    ids = {k: v[0] for k, v in boxes.items()}
    split = next(k for k, v in ids.items() if v == ["SplitBackward0"])
    assert sorted((c, k) for k, c, _ in edges if c.startswith("out")) == \
        [("out0", split), ("out1", split)]
    # getitem keeps its index (an array and a slice): the array is drawn as index[0]
    (index,) = [(ids[a_], label) for a_, c_, label in edges if a_.startswith("s")]
    assert index == (["(2,) int64", f"{idx.nbytes} bytes"], "index[0]")
    # several saved outputs: out[0], out[1]
    w, v = ndgrad.linalg.eigh(x.T @ x)
    boxes, edges = parse(to_dot([w, v], show_saved=True).source)
    ids = {k: v_[0] for k, v_ in boxes.items()}
    eigh = next(k for k, v_ in ids.items() if v_[0] == "LinalgEighBackward0")
    assert sorted((label, ids[a_][0]) for a_, c_, label in edges
                  if c_ == eigh and a_.startswith("s")) == \
        [("out[0]", "(3,) float64"), ("out[1]", "(3, 3) float64")]
    assert memory_report([w, v]).by_type["LinalgEighBackward0"] == (1, 3 * 8 + 9 * 8)


def test_show_attrs_shows_non_array_parameters():
    x = ndgrad.ones((3, 4), requires_grad=True)
    y = ndgrad.mean(x, axis=1, keepdims=True).sum() + x.T.sum()
    plain, _ = parse(to_dot(y).source)
    boxes, _ = parse(to_dot(y, show_attrs=True).source)
    labels = {v[0][0]: v[0][1:] for v in boxes.values()}
    assert labels["MeanBackward0"] == ["axis = 1", "keepdims = True"]
    assert labels["PermuteDimsBackward0"] == ["axes = (1, 0)"]
    assert all(len(v[0]) == 1 for k, v in plain.items() if k.startswith("n")
               and v[0][0] != "(3, 4) float64")


class Scale(ndgrad.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        ctx.factor = 3
        return a * b * 3

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        return g * b * ctx.factor, g * a * ctx.factor


def test_custom_function_nodes_show_saved_tensors_and_ctx_attributes():
    a = ndgrad.ones((4, 5), requires_grad=True)
    b = ndgrad.ones(5, requires_grad=True)
    y = Scale.apply(a, b).sum()
    boxes, edges = parse(to_dot(y, show_saved=True, show_attrs=True).source)
    ids = {k: v[0] for k, v in boxes.items()}
    fn = next(k for k, v in ids.items() if v[0] == "ScaleBackward")
    assert ids[fn] == ["ScaleBackward", "factor = 3"]
    saved = sorted((ids[s][0], label) for s, c, label in edges if c == fn and s[0] == "s")
    assert saved == [("(4, 5) float64", "saved_0"), ("(5,) float64", "saved_1")]
    assert sorted(ids[s][1] for s, c, _ in edges if c == fn and s[0] == "s") == \
        [f"{nbytes(a)} bytes", f"{nbytes(b)} bytes"]


@needs_dot
@pytest.mark.cpu_only("Graphviz reads the text; the device does not matter")
def test_graphviz_parses_the_dot_source():
    W, x, b, h, loss = mlp()
    dot = to_dot([loss, h], params={"W": W, "b": b}, show_saved=True, show_attrs=True)
    proc = subprocess.run(["dot", "-Tsvg"], input=dot.source.encode(), capture_output=True,
                          timeout=HANG_S)  # (only a hang: tests/support.py)
    assert proc.returncode == 0, proc.stderr.decode()
    assert proc.stderr == b""  # not even a warning
    svg = proc.stdout.decode()
    assert "<svg" in svg
    for name in ("SumBackward0", "PowBackward0", "TanhBackward0", "AddBackward0",
                 "MatmulBackward0", "24 bytes", "y = 2"):
        assert name in svg, name
    assert dot._repr_svg_().startswith(svg[:svg.index("<svg")])
    assert "TanhBackward0" in dot._repr_svg_()


# ------------------------------------------------------------------ render
_MAGIC = {"svg": b"<svg", "png": b"\x89PNG\r\n\x1a\n", "pdf": b"%PDF"}


@needs_dot
@pytest.mark.cpu_only("Graphviz draws the text; the device does not matter")
@pytest.mark.parametrize("fmt", ["svg", "png", "pdf"])
def test_render_writes_a_file_of_the_format(tmp_path, fmt):
    x = ndgrad.tensor([1.0, 2.0], requires_grad=True)
    y = ndgrad.tanh(x).sum()
    path = render(y, tmp_path / "graph", format=fmt, params={"x": x})
    assert path == str(tmp_path / f"graph.{fmt}")
    data = (tmp_path / f"graph.{fmt}").read_bytes()
    if fmt == "svg":
        assert _MAGIC["svg"] in data[:400] and b"TanhBackward0" in data
    else:
        assert data.startswith(_MAGIC[fmt])
    # a path that already ends with the format is kept; the method does the same
    again = to_dot(y).render(str(tmp_path / f"again.{fmt}"), format=fmt)
    assert again == str(tmp_path / f"again.{fmt}")
    assert (tmp_path / f"again.{fmt}").read_bytes()[:4] == data[:4]


@pytest.mark.cpu_only("about finding a program, not a device")
def test_render_without_graphviz_says_how_to_install_it(tmp_path, monkeypatch):
    y = ndgrad.tanh(ndgrad.tensor([1.0], requires_grad=True))
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty folder: no `dot` on the PATH
    assert shutil.which("dot") is None
    with pytest.raises(RuntimeError) as info:
        render(y, tmp_path / "graph.svg")
    msg = str(info.value)
    for part in ("`dot`", "Graphviz", "apt install graphviz", "brew install graphviz",
                 "conda install graphviz"):
        assert part in msg
    assert list(tmp_path.iterdir()) == []
    dot = to_dot(y)
    assert dot._repr_svg_() is None  # a notebook then shows the text
    assert "TanhBackward0" in dot.source  # the text needs no Graphviz
    # shutil.which itself replaced, with a PATH that has a dot
    monkeypatch.undo()
    monkeypatch.setattr(_pictures.shutil, "which", lambda name: None)
    with pytest.raises(RuntimeError, match="apt install graphviz"):
        dot.pipe("png")


@pytest.mark.cpu_only("about arguments, not a device")
def test_render_rejects_an_unknown_format(tmp_path):
    y = ndgrad.tanh(ndgrad.tensor([1.0], requires_grad=True))
    for bad in ("jpg", "SVG", None):
        with pytest.raises(ValueError) as info:
            render(y, tmp_path / "graph", format=bad)
        assert all(f"'{f}'" in str(info.value) for f in ("svg", "png", "pdf"))
        assert repr(bad) in str(info.value)
    with pytest.raises(ValueError, match="'svg', 'png', 'pdf'"):
        to_dot(y).render(tmp_path / "g", format="gif")
    assert list(tmp_path.iterdir()) == []


# ------------------------------------------------------------------ memory_report
def test_memory_report_counts_the_distinct_saved_arrays():
    W, x, b, h, loss = mlp()
    report = memory_report(loss)
    assert isinstance(report, MemoryReport)
    # tanh's output (3 float64; pow saves the same array) and matmul's x (4 float64)
    assert report.total_bytes == 3 * 8 + 4 * 8
    assert report.array_count == 2
    assert report.node_count == 7
    assert report.freed_count == 0
    assert report.by_type == {"MatmulBackward0": (1, 32), "TanhBackward0": (1, 24),
                              "SumBackward0": (1, 0), "PowBackward0": (1, 0),
                              "AddBackward0": (1, 0), "AccumulateGrad": (2, 0)}
    assert sum(size for _, size in report.by_type.values()) == report.total_bytes
    assert sum(n for n, _ in report.by_type.values()) == report.node_count
    assert report.nodes[:2] == [("MatmulBackward0", 32), ("TanhBackward0", 24)]
    text = str(report)
    assert text.startswith("Saved for backward: 56 bytes in 2 arrays, 7 nodes")
    assert re.search(r"^MatmulBackward0\s+1\s+32$", text, re.M)
    assert re.search(r"^total\s+7\s+56$", text, re.M)
    assert re.search(r"^\s+1\. MatmulBackward0\s+32$", text, re.M)
    assert "56 bytes" in repr(report)


def test_memory_report_by_type_and_top_nodes():
    xs = [ndgrad.ones(n, requires_grad=True) for n in (10, 1000, 100, 1000)]
    loss = sum(ndgrad.tanh(x).sum() for x in xs)
    report = memory_report(loss, top=3)
    sizes = [10 * 8, 1000 * 8, 100 * 8, 1000 * 8]  # each tanh saves its output
    assert report.total_bytes == sum(sizes)
    assert report.by_type["TanhBackward0"] == (4, sum(sizes))
    assert report.nodes == [("TanhBackward0", 8000), ("TanhBackward0", 8000),
                            ("TanhBackward0", 800)]
    assert [size for _, size in memory_report(loss, top=None).nodes][:4] == \
        sorted(sizes, reverse=True)
    assert len(memory_report(loss, top=None).nodes) == report.node_count
    assert memory_report(loss, top=0).nodes == []
    assert list(report.by_type)[0] == "TanhBackward0"  # the largest type first
    text = str(report)
    assert "top 3 nodes" in text
    assert [int(m) for m in re.findall(r"^\s+\d\. TanhBackward0\s+(\d+)$", text, re.M)] == \
        [8000, 8000, 800]


def test_a_tensor_saved_by_two_nodes_counts_once_and_saved_leaves_count():
    a = ndgrad.ones((10, 10), requires_grad=True)
    c = ndgrad.ones((10, 10), requires_grad=True)
    d = ndgrad.ones((10, 10), requires_grad=True)
    # a is saved by both products (and twice by a * a), c and d once each
    y = (a * c + a * d + a * a).sum()
    report = memory_report(y)
    assert report.total_bytes == 3 * nbytes(a) == 2400
    assert report.array_count == 3
    assert report.by_type["MultiplyBackward0"] == (3, 2400)
    # the leaves' own data is not counted: a product with a scalar saves nothing of x
    x = ndgrad.ones(1000, requires_grad=True)
    assert memory_report((x * 2.0).sum()).total_bytes == 0
    assert memory_report(x).total_bytes == 0
    # a tensor and its detach() are the same bytes
    e = ndgrad.ones(50, requires_grad=True)
    assert memory_report(e * e.detach()).total_bytes == nbytes(e)


def test_memory_report_after_backward_is_zero():
    W, x, b, h, loss = mlp()
    loss.backward(retain_graph=True)
    assert memory_report(loss).total_bytes == 56  # retained
    loss.backward()
    report = memory_report(loss)
    assert report.total_bytes == 0 and report.array_count == 0
    assert report.freed_count == 3  # tanh, pow, matmul had saved something
    assert report.node_count == 7
    assert "freed by a backward without retain_graph=True" in str(report)
    assert all(size == 0 for _, size in report.by_type.values())


def test_memory_report_counts_custom_function_saves():
    a = ndgrad.ones((4, 5), requires_grad=True)
    b = ndgrad.ones(5, requires_grad=True)
    y = Scale.apply(a, b)
    report = memory_report(y)
    assert report.total_bytes == nbytes(a) + nbytes(b) == 200
    assert report.by_type["ScaleBackward"] == (1, 200)
    y.sum().backward()
    assert memory_report(y).total_bytes == 0


def test_memory_report_counts_index_arrays_of_parameters():
    x = ndgrad.ones((5, 4), requires_grad=True)
    idx = np.array([0, 2, 2])
    report = memory_report(x[idx])
    assert report.total_bytes == idx.nbytes
    assert report.by_type["GetitemBackward0"] == (1, idx.nbytes)


@pytest.mark.cpu_only("about the depth of the walk, not a device")
def test_a_chain_five_times_deeper_than_the_recursion_limit():
    # a walk that recursed would raise RecursionError; no time is asserted (Note [No test
    # depends on the machine's speed] in tests/support.py)
    n = 5 * sys.getrecursionlimit()
    x = ndgrad.tensor([0.5], requires_grad=True)
    y = x
    for _ in range(n):
        y = ndgrad.sin(y)
    dot = to_dot(y, show_saved=True, show_attrs=True)
    report = memory_report(y)
    assert dot.node_count == n + 1 and dot.edge_count == n
    boxes, edges = parse(dot.source)
    assert sum(k.startswith("n") for k in boxes) == n + 1
    assert sum(k.startswith("s") for k in boxes) == n  # each sin saves its input
    assert report.total_bytes == n * 8
    assert report.by_type == {"SinBackward0": (n, 8 * n), "AccumulateGrad": (1, 0)}


# ------------------------------------------------------------------ errors
def test_a_tensor_without_graph_is_an_error():
    t = ndgrad.ones(3)
    for fn in (to_dot, memory_report):
        with pytest.raises(ValueError) as info:
            fn(t)
        assert "has no graph" in str(info.value)
        assert "requires_grad=False" in str(info.value)
    with ndgrad.no_grad():
        u = ndgrad.tanh(ndgrad.ones(3, requires_grad=True))
    with pytest.raises(ValueError, match=r"roots\[1\] .*has no graph"):
        to_dot([ndgrad.tanh(ndgrad.ones(3, requires_grad=True)), u])
    with pytest.raises(ValueError, match="empty"):
        memory_report([])


def test_a_root_that_is_not_a_tensor_is_an_error():
    with pytest.raises(TypeError, match="Tensor.*got a ndarray"):
        to_dot(np.ones(3))
    with pytest.raises(TypeError, match=r"roots\[0\] is a float, not a Tensor"):
        memory_report([1.0])
    y = ndgrad.tanh(ndgrad.ones(3, requires_grad=True))
    with pytest.raises(TypeError, match=r"params\['w'\] is a ndarray"):
        to_dot(y, params={"w": np.ones(3)})
    with pytest.raises(TypeError, match="top must be an int"):
        memory_report(y, top=2.5)


@pytest.mark.parametrize("use_reentrant", [False, True])
def test_memory_report_counts_what_a_checkpoint_keeps_to_run_again(use_reentrant):
    """A checkpoint keeps its inputs to recompute its function in backward (Note [How
    checkpointing recomputes]); the report counted 0 bytes for them (the nodes inside keep
    only handles) while they were held."""
    from ndgrad.utils.checkpoint import checkpoint
    rng = np.random.default_rng(3)
    x = ndgrad.tensor(rng.standard_normal(1000), requires_grad=True)
    w = ndgrad.tensor(rng.standard_normal((40, 25)), requires_grad=True)
    h = x * 2.0          # saves nothing of x (the 2.0 only)
    v = w.reshape(1000)  # a view of w: a reshape saves nothing

    def f(a, b):
        return ndgrad.tanh(ndgrad.sin(a) * b)

    loss = checkpoint(f, h, v, use_reentrant=use_reentrant).sum()
    report = memory_report(loss, top=None)
    # what the graph keeps: the two inputs, to run f again (h's and w's bytes)
    assert report.total_bytes == nbytes(h) + nbytes(w) == 1000 * 8 * 2
    assert report.array_count == 2
    # and counted once, on one node, however many nodes inside hold a handle of them
    assert sorted(size for _, size in report.nodes if size)[-1] == 16000
    loss.backward()
    assert memory_report(loss).total_bytes == 0  # freed with the graph
    np.testing.assert_allclose(host(x.grad), 2 * np.cos(2 * host(x)) * host(v) /
                               np.cosh(np.sin(2 * host(x)) * host(v)) ** 2)


def test_memory_report_counts_a_nested_checkpoints_inputs_once():
    from ndgrad.utils.checkpoint import checkpoint
    x = ndgrad.ones(500, requires_grad=True)
    h = x * 3.0
    inner = []

    def outer(a):
        b = ndgrad.exp(a) * 1.0  # an intermediate, the inner checkpoint's input
        inner.append(b)
        return checkpoint(lambda c: ndgrad.sin(c) * 2.0, b)

    loss = checkpoint(outer, h).sum()
    report = memory_report(loss)
    assert report.total_bytes == nbytes(h) + nbytes(inner[0]) == 2 * 500 * 8
    assert report.array_count == 2
