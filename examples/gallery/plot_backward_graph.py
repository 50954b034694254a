"""
The backward graph of a two-layer network, drawn
================================================

Every operation on tensors that require grad records a node of the *backward graph*: the
node that ``loss.backward()`` will run to send the gradient on to the operation's inputs.
``loss.grad_fn`` is the last of them, and each node's ``next_functions`` are the nodes its
inputs came from, as in PyTorch. Seeing that graph tells you what ``backward()`` will do and
what it keeps alive.

:func:`ndgrad.autograd.graph.to_dot` gives the graph as Graphviz DOT text (drawn by
Graphviz's ``dot`` program where it is installed). Here we draw the same graph with
Matplotlib alone, from ``grad_fn.next_functions``, laid out in layers, so nothing beyond
Matplotlib is needed; and we print the DOT text.
"""

from __future__ import annotations

import os

import matplotlib.pyplot as plt
import numpy as np

import ndgrad
from ndgrad.autograd.graph import to_dot

small = bool(os.environ.get("NDGRAD_EXAMPLE_SMALL"))
batch, n_in, n_hidden, n_out = (8, 4, 6, 2) if small else (64, 20, 32, 3)

# %%
# A two-layer perceptron and its mean squared error on a batch. Only the weights and biases
# require grad; the data ``x`` and targets ``y`` are constants.
rng = np.random.default_rng(0)
W1 = ndgrad.tensor(rng.standard_normal((n_hidden, n_in)) / np.sqrt(n_in), requires_grad=True)
b1 = ndgrad.zeros(n_hidden, requires_grad=True)
W2 = ndgrad.tensor(rng.standard_normal((n_out, n_hidden)) / np.sqrt(n_hidden),
                   requires_grad=True)
b2 = ndgrad.zeros(n_out, requires_grad=True)
x = ndgrad.tensor(rng.standard_normal((batch, n_in)))
y = ndgrad.tensor(rng.standard_normal((batch, n_out)))

h = ndgrad.tanh(x @ W1.T + b1)
prediction = h @ W2.T + b2
loss = ((prediction - y) ** 2).mean()
loss_value = float(loss.item())
print(f"loss = {loss_value:.6f}")

# %%
# Walk the graph from ``loss.grad_fn`` along ``next_functions``, breadth first, each node
# once. An entry of ``next_functions`` is ``(node, input_number)``, or ``(None, 0)`` for an
# input that needs no gradient (``x`` and ``y`` here). The edge ``(i, j)`` says that node
# ``i`` produced an input of node ``j``: the forward direction, as ``to_dot`` draws it.
nodes = [loss.grad_fn]
index = {id(loss.grad_fn): 0}
edges = []
k = 0
while k < len(nodes):
    for nxt, _ in nodes[k].next_functions:
        if nxt is None:
            continue
        if id(nxt) not in index:
            index[id(nxt)] = len(nodes)
            nodes.append(nxt)
        edges.append((index[id(nxt)], k))
    k += 1
node_names = [n.name() for n in nodes]

leaf_names = {id(W1): "W1", id(b1): "b1", id(W2): "W2", id(b2): "b2"}
labels = []
for n in nodes:
    variable = getattr(n, "variable", None)  # an AccumulateGrad node's leaf
    if variable is not None and id(variable) in leaf_names:
        labels.append(f"{leaf_names[id(variable)]}\n{n.name()}")
    else:
        labels.append(n.name())
print(f"{len(nodes)} nodes, {len(edges)} edges")
for i, j in edges:
    print(f"  {labels[i]!r:32} -> {labels[j]!r}")

# %%
# The same graph as DOT text: paste it into any Graphviz viewer, or call ``.render()`` on
# it where Graphviz is installed. Its boxes ``n0``, ``n1``, ... are the nodes in the same
# breadth-first order.
dot = to_dot(loss, params={"W1": W1, "b1": b1, "W2": W2, "b2": b2})
dot_source = dot.source
print(dot_source)

# %%
# A layered layout: each node's layer is its longest distance from the loss, so every
# arrow points down the page, towards the loss at the bottom; nodes of a layer are spread
# evenly across it.
layer = [0] * len(nodes)
changed = True
while changed:  # (longest path in a DAG: relax the edges until nothing changes)
    changed = False
    for i, j in edges:
        if layer[i] < layer[j] + 1:
            layer[i] = layer[j] + 1
            changed = True
depth = max(layer)
position = {}
for lv in range(depth + 1):
    members = [i for i in range(len(nodes)) if layer[i] == lv]
    for rank, i in enumerate(members):
        position[i] = ((rank + 1) / (len(members) + 1), lv)
layers = np.array(layer)

fig, ax = plt.subplots(figsize=(8, 7))
for i, j in edges:
    ax.annotate("", xy=position[j], xytext=position[i],
                arrowprops=dict(arrowstyle="-|>", color="0.4", shrinkA=14, shrinkB=14))
for i, (px, py) in position.items():
    leaf = node_names[i] == "AccumulateGrad"
    root = i == 0
    color = "#cfe2f3" if leaf else "#d9ead3" if root else "white"
    ax.text(px, py, labels[i], ha="center", va="center", fontsize=9,
            bbox=dict(boxstyle="round", facecolor=color, edgecolor="0.3"))
ax.set_xlim(0, 1)
ax.set_ylim(-0.6, depth + 0.6)
ax.axis("off")
ax.set_title("Backward graph of ((tanh(x W1^T + b1) W2^T + b2 - y)^2).mean()\n"
             "leaves' AccumulateGrad (blue), the loss's grad_fn (green) at the bottom")
fig.tight_layout()
plt.show()
