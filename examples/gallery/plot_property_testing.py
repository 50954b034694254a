"""
Property-based testing of a custom Function
===========================================

A custom :class:`ndgrad.autograd.Function` carries a hand-written derivative, and a
hand-written derivative can be wrong in ways a test at one or two chosen inputs misses: in
one branch, for one sign, for one broadcasting pattern. :mod:`ndgrad.checks.strategies` draws
inputs with `hypothesis <https://hypothesis.readthedocs.io>`_ (shapes, broadcasting, values)
and :func:`ndgrad.checks.gradcheck` compares each drawn case with finite differences; when a
case fails, hypothesis shrinks it to a small one and reports it.

The Function here is ``logaddexp(x, y) = log(exp(x) + exp(y))``, written stably, whose
gradient is ``sigmoid(x - y)`` for ``x`` and ``sigmoid(y - x)`` for ``y``. A second version
"stabilizes" the sigmoid by hand, with one sign wrong in its ``x < y`` branch: right half of
the time.
"""

from __future__ import annotations

import os

import matplotlib.pyplot as plt
import numpy as np
from hypothesis import HealthCheck, given, settings

import ndgrad
from ndgrad.autograd import Function
from ndgrad.checks import gradcheck, gradgradcheck
from ndgrad.checks.strategies import broadcastable_tensors

SMALL = bool(os.environ.get("NDGRAD_EXAMPLE_SMALL"))
MAX_EXAMPLES = 8 if SMALL else 100

# %%
# Two Functions with the same forward. The backward passes are written with ndgrad
# operations, so they can be differentiated again (``gradgradcheck``). Broadcasting needs no
# code: the gradient of an input that was broadcast is summed back to its shape.


class LogAddExp(Function):
    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        return ndgrad.maximum(x, y) + ndgrad.log1p(ndgrad.exp(-ndgrad.abs(x - y)))

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        w = ndgrad.sigmoid(x - y)
        return g * w, g * (1 - w)


class LogAddExpTypo(LogAddExp):
    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        d = x - y
        # sigmoid(d), "stable" on both sides: exp(d) / (1 + exp(d)) for d < 0, but with a
        # sign typo in that branch
        w = ndgrad.where(d >= 0, 1 / (1 + ndgrad.exp(-d)), ndgrad.exp(d) / (1 + ndgrad.exp(-d)))
        return g * w, g * (1 - w)


# %%
# A fixed-input test, the kind one writes first, passes for both: here ``x > y``.
x_fixed = ndgrad.tensor([1.0, 2.0], requires_grad=True)
y_fixed = ndgrad.tensor(0.5, requires_grad=True)
fixed = {name: gradcheck(fn.apply, (x_fixed, y_fixed), raise_exception=False)
         for name, fn in [("right", LogAddExp), ("typo", LogAddExpTypo)]}
print("gradcheck at one fixed input:", fixed)

# %%
# The property tests: for every pair of broadcastable tensors hypothesis draws (shapes of up
# to 3 dimensions, values in [-2, 2]), gradcheck (first derivatives) and gradgradcheck
# (second derivatives) must pass. Each check's outcome is recorded; a failure is re-raised so
# that hypothesis shrinks it. ``derandomize=True`` makes the run reproducible.
hypothesis_settings = settings(max_examples=MAX_EXAMPLES, derandomize=True, database=None,
                               deadline=None, report_multiple_bugs=False,
                               suppress_health_check=[HealthCheck.too_slow])
CHECKS = {"gradcheck": gradcheck, "gradgradcheck": gradgradcheck}
outcomes = {}   # (function, check) -> list of True/False, one per example run
failures = {}   # (function, check) -> the failing examples, the last one the smallest


def property_test(fn, check_name):
    record = outcomes.setdefault((fn.__name__, check_name), [])

    @hypothesis_settings
    @given(broadcastable_tensors(2, requires_grad=True))
    def test(xy):
        ok = CHECKS[check_name](fn.apply, xy, raise_exception=False)
        record.append(bool(ok))
        if not ok:
            failures.setdefault((fn.__name__, check_name), []).append(
                tuple(t.detach().numpy() for t in xy))
        assert ok, f"{check_name} failed"

    try:
        test()
        return "passed"
    except AssertionError:
        return "caught"


verdicts = {}
for fn in (LogAddExp, LogAddExpTypo):
    for check_name in CHECKS:
        verdicts[(fn.__name__, check_name)] = verdict = property_test(fn, check_name)
        runs = outcomes[(fn.__name__, check_name)]
        print(f"{fn.__name__:>14} {check_name:>13}: {verdict}, {sum(runs)} of {len(runs)} "
              "examples passed")

x_fail, y_fail = failures[("LogAddExpTypo", "gradcheck")][-1]
print("gradcheck's smallest failing example, as hypothesis shrank it:")
print("  x =", np.array2string(x_fail, precision=4), " y =", np.array2string(y_fail, precision=4))
for x_kink, y_kink in failures.get(("LogAddExpTypo", "gradgradcheck"), [])[-1:]:
    print("gradgradcheck's smallest failing example:")
    print("  x =", np.array2string(x_kink, precision=4), " y =",
          np.array2string(y_kink, precision=4))

# %%
# gradcheck catches the typo wherever some ``x < y``, and hypothesis shrinks the case to two
# numbers. gradgradcheck passes everywhere else: it differentiates the backward pass *as
# written* and compares with finite differences of that same backward pass, which agree
# however wrong it is. What it does catch is the kink the typo put at ``x == y`` (hypothesis
# draws equal inputs early): the two branches of the hand-written sigmoid meet there with
# different slopes, so the backward pass is not differentiable there. A second-derivative check
# does not replace the first-derivative one.
#
# Where the typo lives: the gradient in ``x`` along ``d = x - y`` (``y = 0``), against the
# closed form ``sigmoid(d)``.
d_grid = np.linspace(-3.0, 3.0, 61 if SMALL else 301)
grads = {}
for fn in (LogAddExp, LogAddExpTypo):
    x = ndgrad.tensor(d_grid, requires_grad=True)
    fn.apply(x, ndgrad.tensor(0.0)).sum().backward()
    grads[fn.__name__] = x.grad.numpy()
grad_right, grad_typo = grads["LogAddExp"], grads["LogAddExpTypo"]
print(f"largest error of the typo's gradient: {np.abs(grad_typo - grad_right).max():.3f} "
      f"(at d = {d_grid[np.argmax(np.abs(grad_typo - grad_right))]:.2f})")

# %%
# The examples each check passed, and the two gradients.
fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(10, 4))
labels, passed, failed = [], [], []
for (name, check_name), runs in outcomes.items():
    labels.append(f"{name}\n{check_name}")
    passed.append(sum(runs))
    failed.append(len(runs) - sum(runs))
pos = np.arange(len(labels))
ax0.bar(pos, passed, color="tab:green", label="passed")
ax0.bar(pos, failed, bottom=passed, color="tab:red", label="failed")
ax0.set_xticks(pos, labels, fontsize="small")
ax0.set_ylabel("examples run (drawn and shrunk)")
ax0.set_title("Property tests: outcome per example")
ax0.legend(fontsize="small")
ax1.plot(d_grid, grad_right, label="LogAddExp: sigmoid(d)")
ax1.plot(d_grid, grad_typo, "--", label="LogAddExpTypo")
ax1.set_xlabel("d = x - y")
ax1.set_ylabel("d logaddexp / dx")
ax1.set_title("The typo: wrong only where x < y")
ax1.legend(fontsize="small")
fig.tight_layout()
plt.show()
