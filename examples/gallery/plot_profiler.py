"""
Where a training step's time and memory go
==========================================

:mod:`ndgrad.autograd.profiler` has the API of ``torch.autograd.profiler``: inside a
``profile`` block every operation's forward call and every node the backward pass runs is
recorded as an event, with its time and (with ``profile_memory=True``) the bytes its outputs
allocate. :func:`ndgrad.autograd.graph.memory_report` says how many bytes the graph keeps for
backward between the forward and the backward pass, by node type.

Here we profile a few training steps of a two-layer perceptron and draw, per operation, the
time of its forward calls beside the time of its backward nodes, and the memory the graph
keeps. Timings vary from run to run and machine to machine; the counts and bytes do not.
"""

from __future__ import annotations

import os
from collections import Counter, defaultdict

import matplotlib.pyplot as plt
import numpy as np

import ndgrad
from ndgrad.autograd import profiler
from ndgrad.autograd.graph import memory_report

small = bool(os.environ.get("NDGRAD_EXAMPLE_SMALL"))
batch, n_in, n_hidden, n_out = (32, 16, 64, 4) if small else (512, 64, 512, 10)
n_steps = 3 if small else 20

# %%
# The model: ``tanh(x W1^T + b1) W2^T + b2``, its mean squared error on a batch, and one
# step of gradient descent.
rng = np.random.default_rng(0)
W1 = ndgrad.tensor(rng.standard_normal((n_hidden, n_in)) / np.sqrt(n_in), requires_grad=True)
b1 = ndgrad.zeros(n_hidden, requires_grad=True)
W2 = ndgrad.tensor(rng.standard_normal((n_out, n_hidden)) / np.sqrt(n_hidden),
                   requires_grad=True)
b2 = ndgrad.zeros(n_out, requires_grad=True)
params = [W1, b1, W2, b2]
x = ndgrad.tensor(rng.standard_normal((batch, n_in)))
y = ndgrad.tensor(rng.standard_normal((batch, n_out)))
learning_rate = 0.05


def forward():
    h = ndgrad.tanh(x @ W1.T + b1)
    return ((h @ W2.T + b2 - y) ** 2).mean()


def update():
    with ndgrad.no_grad():
        for p in params:
            p -= learning_rate * p.grad
            p.grad = None


# %%
# A first step outside the profile warms NumPy and ndgrad's caches up. Inside the profile,
# ``record_function`` ranges mark the forward pass, the backward pass and the update (which
# runs under ``no_grad``: its operations are recorded as events, but no graph). Before the
# first backward, ``memory_report`` measures what the graph keeps for it (backward frees it).
loss = forward()
loss.backward()
update()

losses = []
with profiler.profile(profile_memory=True) as prof:
    for step in range(n_steps):
        with profiler.record_function("forward"):
            loss = forward()
        if step == 0:
            report = memory_report(loss)
        with profiler.record_function("backward"):
            loss.backward()
        with profiler.record_function("update"):
            update()
        losses.append(loss.item())
losses = np.array(losses)
print(f"loss over the {n_steps} profiled steps: {losses[0]:.4f} -> {losses[-1]:.4f}")
print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=12))

# %%
# The events, split by the range they ran in: the operations inside ``forward``, the backward
# nodes inside ``backward`` (the update's are left out). Per name: how many calls, their total
# self time (µs) and the bytes their outputs allocated.
forward_counts, backward_counts = Counter(), Counter()
forward_time_us, backward_time_us = defaultdict(float), defaultdict(float)
forward_memory = Counter()
for e in prof.events():
    parent = e.cpu_parent.name if e.cpu_parent is not None else None
    if parent == "forward":
        forward_counts[e.name] += 1
        forward_time_us[e.name] += e.self_cpu_time_total
        forward_memory[e.name] += e.cpu_memory_usage
    elif parent == "backward":
        backward_counts[e.name] += 1
        backward_time_us[e.name] += e.self_cpu_time_total
forward_counts, backward_counts = dict(forward_counts), dict(backward_counts)
forward_memory = dict(forward_memory)
print("forward calls: ", forward_counts)
print("backward nodes:", backward_counts)
print("bytes allocated by the forward operations:", forward_memory)

# %%
# The memory report: the bytes the graph of one step keeps for backward.
print(report)
report_total_bytes = report.total_bytes
report_by_type = dict(report.by_type)

# %%
# Each operation's forward time beside its backward node's (``MatmulBackward0`` is the
# backward of ``matmul``), per step, and the bytes the graph keeps, per node type. (The
# leaves' ``AccumulateGrad`` nodes, which hand the gradients to ``.grad``, have no forward
# call and are left out of the first plot.)
backward_of = {name: name.title().replace("_", "") + "Backward0" for name in forward_counts}
names = sorted(forward_counts, key=lambda n: -(forward_time_us[n]
                                               + backward_time_us.get(backward_of[n], 0.0)))
fwd = np.array([forward_time_us[n] for n in names]) / n_steps
bwd = np.array([backward_time_us.get(backward_of[n], 0.0) for n in names]) / n_steps

fig, (ax_time, ax_mem) = plt.subplots(1, 2, figsize=(11, 4.5))
rows = np.arange(len(names))
ax_time.barh(rows - 0.2, fwd, height=0.4, label="forward call")
ax_time.barh(rows + 0.2, bwd, height=0.4, label="backward node")
ax_time.set_yticks(rows, [f"{n} (x{forward_counts[n] // n_steps})" for n in names])
ax_time.invert_yaxis()
ax_time.set_xlabel("self CPU time per step (µs)")
ax_time.set_title(f"Time per operation, mean of {n_steps} steps")
ax_time.legend()

types = [t for t, (_, size) in report_by_type.items() if size > 0]
sizes = np.array([report_by_type[t][1] for t in types]) / 1024
ax_mem.barh(np.arange(len(types)), sizes, color="tab:green")
ax_mem.set_yticks(np.arange(len(types)), types)
ax_mem.invert_yaxis()
ax_mem.set_xlabel("KiB saved for backward")
ax_mem.set_title(f"Memory the graph keeps: {report_total_bytes / 1024:.1f} KiB in all")
fig.tight_layout()
plt.show()
