"""examples/gallery/plot_profiler.py: how many calls of each operation and backward node its
trace records, against the operations its model runs (counted here) and a walk of the
model's backward graph; the bytes its forward operations allocate and the memory report's
bytes, against the nbytes of the arrays computed here; its losses against the same training
done by hand in NumPy. Never its timings."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from support import run_example

pytestmark = pytest.mark.cpu_only("the gallery runs on the default device")


@pytest.fixture(scope="module")
def example():
    return run_example("plot_profiler")


def _node_names(root):
    names = Counter()
    seen = {id(root)}
    stack = [root]
    while stack:
        node = stack.pop()
        names[node.name()] += 1
        for nxt, _ in node.next_functions:
            if nxt is not None and id(nxt) not in seen:
                seen.add(id(nxt))
                stack.append(nxt)
    return names


def test_the_trace_counts_each_operation_the_model_runs(example):
    g = example
    steps = g["n_steps"]
    # tanh(x @ W1.T + b1) @ W2.T + b2 - y, squared, mean: per step
    per_step = {"permute_dims": 2, "matmul": 2, "add": 2, "tanh": 1, "subtract": 1, "pow": 1,
                "mean": 1}
    assert g["forward_counts"] == {k: steps * v for k, v in per_step.items()}
    # one run of each node of the step's graph, and AccumulateGrad for each of the 4 leaves
    names = _node_names(g["forward"]().grad_fn)
    assert names["AccumulateGrad"] == 4 and sum(names.values()) == 14
    assert g["backward_counts"] == {k: steps * v for k, v in names.items()}


def test_the_forward_operations_allocate_their_outputs_nbytes(example):
    g = example
    steps, B, H, n_o = g["n_steps"], g["batch"], g["n_hidden"], g["n_out"]
    f8 = np.dtype(np.float64).itemsize
    hidden, out = np.empty((B, H)).nbytes, np.empty((B, n_o)).nbytes
    assert hidden == B * H * f8
    expected = {"permute_dims": 0,  # a view
                "matmul": steps * (hidden + out), "add": steps * (hidden + out),
                "tanh": steps * hidden, "subtract": steps * out, "pow": steps * out,
                "mean": steps * f8}
    assert g["forward_memory"] == expected


def test_the_memory_report_counts_the_saved_arrays(example):
    g = example
    x = g["x"].numpy()
    W1, W2 = g["W1"].detach().numpy(), g["W2"].detach().numpy()
    b1, b2, y = g["b1"].detach().numpy(), g["b2"].detach().numpy(), g["y"].numpy()
    h = np.tanh(x @ W1.T + b1)            # saved by tanh (its output) and the second matmul
    diff = h @ W2.T + b2 - y              # saved by pow
    # the first matmul saves x (for W1's gradient; x needs none), the second h and W2.T
    assert g["report_total_bytes"] == x.nbytes + h.nbytes + W2.T.nbytes + diff.nbytes
    by_type = g["report_by_type"]
    assert by_type["TanhBackward0"] == (1, h.nbytes)
    assert by_type["MatmulBackward0"] == (2, x.nbytes + W2.nbytes)
    assert by_type["PowBackward0"] == (1, diff.nbytes)
    assert sum(size for _, size in by_type.values()) == g["report_total_bytes"]
    assert sum(n for n, _ in by_type.values()) == 14


def test_the_losses_are_those_of_the_same_training_in_numpy(example):
    g = example
    B, n_in, H, n_o = g["batch"], g["n_in"], g["n_hidden"], g["n_out"]
    rng = np.random.default_rng(0)
    W1 = rng.standard_normal((H, n_in)) / np.sqrt(n_in)
    b1 = np.zeros(H)
    W2 = rng.standard_normal((n_o, H)) / np.sqrt(H)
    b2 = np.zeros(n_o)
    x = rng.standard_normal((B, n_in))
    y = rng.standard_normal((B, n_o))
    lr = g["learning_rate"]
    losses = []
    for _ in range(1 + g["n_steps"]):     # the warm-up step, then the profiled ones
        h = np.tanh(x @ W1.T + b1)
        d = h @ W2.T + b2 - y
        losses.append(np.mean(d ** 2))
        dd = 2 * d / d.size
        dW2, db2 = dd.T @ h, dd.sum(0)
        dz = (dd @ W2) * (1 - h ** 2)
        dW1, db1 = dz.T @ x, dz.sum(0)
        W1, b1, W2, b2 = W1 - lr * dW1, b1 - lr * db1, W2 - lr * dW2, b2 - lr * db2
    np.testing.assert_allclose(g["losses"], losses[1:], rtol=1e-12)
    np.testing.assert_allclose(g["W1"].detach().numpy(), W1, rtol=1e-10, atol=1e-13)
