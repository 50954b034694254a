"""examples/gallery/plot_backward_graph.py: the graph it draws against a depth-first walk of
``loss.grad_fn.next_functions`` done here, its node names against the operations the model
runs, its DOT text against the same walk, and its loss against NumPy's."""

from __future__ import annotations

import re
from collections import Counter

import numpy as np
import pytest

from support import run_example

pytestmark = pytest.mark.cpu_only("the gallery runs on the default device")


def _walk(root):
    """Every node reachable from ``root`` (depth first, a stack) and every (input node,
    consumer node) edge, by identity."""
    seen = {id(root): root}
    edges = set()
    stack = [root]
    while stack:
        node = stack.pop()
        for nxt, _ in node.next_functions:
            if nxt is None:
                continue
            edges.add((id(nxt), id(node)))
            if id(nxt) not in seen:
                seen[id(nxt)] = nxt
                stack.append(nxt)
    return seen, edges


def test_the_drawn_graph_is_the_graph_of_next_functions():
    g = run_example("plot_backward_graph")
    nodes, edges, loss = g["nodes"], g["edges"], g["loss"]
    seen, walked_edges = _walk(loss.grad_fn)
    assert len(nodes) == len(seen) == 14
    assert {id(n) for n in nodes} == set(seen)
    drawn_edges = [(id(nodes[i]), id(nodes[j])) for i, j in edges]
    assert len(drawn_edges) == len(set(drawn_edges)) == len(walked_edges) == 13
    assert set(drawn_edges) == walked_edges
    # every node has a place on the picture, and every arrow points down the layers
    assert sorted(g["position"]) == list(range(len(nodes)))
    layers = g["layers"]
    assert all(layers[i] > layers[j] for i, j in edges)


def test_the_node_names_are_the_operations_the_model_runs():
    g = run_example("plot_backward_graph")
    # h = tanh(x @ W1.T + b1); prediction = h @ W2.T + b2; ((prediction - y) ** 2).mean()
    expected = Counter({"MeanBackward0": 1, "PowBackward0": 1, "SubtractBackward0": 1,
                        "AddBackward0": 2, "MatmulBackward0": 2, "PermuteDimsBackward0": 2,
                        "TanhBackward0": 1, "AccumulateGrad": 4})
    assert Counter(g["node_names"]) == expected
    assert g["node_names"][0] == "MeanBackward0"
    seen, _ = _walk(g["loss"].grad_fn)
    assert Counter(n.name() for n in seen.values()) == expected
    # the leaves' boxes are named by the tensors
    leaf_labels = sorted(label.split("\n")[0] for label, name in
                         zip(g["labels"], g["node_names"]) if name == "AccumulateGrad")
    assert leaf_labels == ["W1", "W2", "b1", "b2"]


def test_the_dot_text_has_the_same_nodes_and_edges():
    g = run_example("plot_backward_graph")
    source = g["dot_source"]
    boxes = re.findall(r'^\s*n(\d+) \[label="([^"\\]*)', source, flags=re.M)
    arrows = re.findall(r"^\s*n(\d+) -> n(\d+);", source, flags=re.M)
    assert len(boxes) == len(g["nodes"])
    assert sorted((int(i), int(j)) for i, j in arrows) == sorted(g["edges"])
    names = g["node_names"]
    for i, label in boxes:
        if names[int(i)] != "AccumulateGrad":
            assert label == names[int(i)]


def test_the_loss_is_numpys():
    g = run_example("plot_backward_graph")
    W1, b1, W2, b2, x, y = (g[k].detach().numpy() for k in ("W1", "b1", "W2", "b2", "x", "y"))
    expected = np.mean((np.tanh(x @ W1.T + b1) @ W2.T + b2 - y) ** 2)
    np.testing.assert_allclose(g["loss_value"], expected, rtol=1e-13)
