"""``backward()`` and ``grad()``: the entry points of the backward engine (argument checks,
the roots' cotangents, the results), as ``torch.autograd.backward`` / ``grad``.
"""

from __future__ import annotations

import numpy as np

from .backend import backend_of, is_differentiable_dtype
from .dispatch import TENSOR_F
from .engine import run_backward
from .tensor import Tensor, _fresh, _wrap_raw, is_live

_NDARRAY = np.ndarray

__all__ = ["backward", "grad", "make_grads", "check_inputs", "tensor_backward"]


def _as_tuple(x):
    if isinstance(x, Tensor):
        return (x,)
    if x is None:
        return ()
    return tuple(x)


def _roots_and_grads(fname, what, roots, grads):
    """Validate the roots of a backward pass; return one gradient (or None) per root."""
    if grads is None:
        grads = (None,) * len(roots)
    elif isinstance(grads, Tensor) or not isinstance(grads, (tuple, list)):
        grads = (grads,)
    grads = tuple(grads)
    if len(grads) != len(roots):
        raise RuntimeError(f"{fname}(): got {len(grads)} gradients for {len(roots)} {what}; pass "
                           f"one gradient (or None) per entry of {what}")
    for i, t in enumerate(roots):
        if not isinstance(t, Tensor):
            raise TypeError(f"{fname}(): {what}[{i}] is a {type(t).__name__}, not a Tensor")
        if t._meta is not None:
            _fresh(t)  # a view whose base changed in place: its history, regenerated
        if not t._requires_grad:
            raise RuntimeError(
                f"element {i} of tensors does not require grad and does not have a grad_fn. "
                "Make sure an input of the computation has requires_grad=True and that it did "
                "not run under ndgrad.no_grad()."
            )
    return grads


def make_grads(outputs, grad_outputs, is_grads_batched=False):
    """Validate or create the root cotangents: raw arrays, or Tensors where they must stay
    Tensors (they require grad, or are a transform's values)."""
    result = []
    for i, (out, g) in enumerate(zip(outputs, grad_outputs)):
        if type(g) is Tensor and type(out) is Tensor and g._meta is None and \
                not g._requires_grad and \
                type(g._data) is _NDARRAY and type(out._data) is _NDARRAY and \
                g._data.shape == out._data.shape and g._data.dtype == out._data.dtype and \
                not is_grads_batched:
            result.append(g._data)  # the common case: a plain host array that fits
            continue
        if g is None:
            if not out._requires_grad:
                result.append(None)
                continue
            if out.size != 1:
                raise RuntimeError(
                    f"grad can be implicitly created only for scalar outputs; output {i} has "
                    f"shape {list(out.shape)}. Pass grad_outputs (or backward's gradient) with "
                    "the output's shape, e.g. ndgrad.ones_like(output)."
                )
            if out.dtype.kind == "c":
                raise RuntimeError(
                    f"grad can be implicitly created only for real scalar outputs; output {i} "
                    f"has dtype {out.dtype}. Pass grad_outputs explicitly."
                )
            B = out.backend
            with B.on(out.device):
                result.append(B.ones(tuple(out.shape), dtype=out.dtype))
            continue
        if not isinstance(g, Tensor):
            g = out.backend.asarray(g)
        gshape = tuple(g.shape)[1:] if is_grads_batched else tuple(g.shape)
        gdev = g.device if isinstance(g, Tensor) else backend_of(g).device_of(g)
        if gdev != out.device and gdev == "cpu" and out.backend.takes_host_arrays:
            g = out.backend.asarray(g._data if isinstance(g, Tensor) else g)  # (a constant)
        elif gdev != out.device:
            raise RuntimeError(
                f"grad_output[{i}] is on {gdev}, but output[{i}] is on {out.device}; "
                "gradients must be on the output's device (use .to(output.device))")
        expected = tuple(out.shape)
        if gshape != expected:
            raise RuntimeError(
                f"Mismatch in shape: grad_output[{i}] has a shape of {list(gshape)} and "
                f"output[{i}] has a shape of {list(expected)}."
                + (" (with is_grads_batched=True the first dimension is the batch)"
                   if is_grads_batched else "")
            )
        if (g.dtype.kind == "c") != (out.dtype.kind == "c"):
            raise RuntimeError(
                f"For complex tensors, both grad_output and output are required to have the same "
                f"dtype. Mismatch in dtype: grad_output[{i}] has a dtype of {g.dtype} and "
                f"output[{i}] has a dtype of {out.dtype}."
            )
        if not is_differentiable_dtype(g.dtype):
            raise RuntimeError(f"grad_output[{i}] has dtype {g.dtype}; gradients must be "
                               "floating point or complex")
        if g.dtype != out.dtype:
            g = g.astype(out.dtype)
        if type(g) is Tensor and not is_live(g, True):
            g = g._data
        result.append(g)
    return result


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False,
             grad_variables=None, inputs=None):
    """Accumulate gradients of ``tensors`` into the ``.grad`` of graph leaves.

    Parameters
    ----------
    tensors : Tensor or sequence of Tensors
        The roots; each must require grad.
    grad_tensors : Tensor, array or sequence, optional
        Cotangents of the roots (the "vector" of the vector-Jacobian product); may be omitted
        only for scalar roots.
    retain_graph : bool, optional
        Keep the graph's saved values for another backward (defaults to ``create_graph``).
    create_graph : bool
        Record the backward pass itself so that higher-order derivatives can be taken.
    inputs : Tensor or sequence of Tensors, optional
        Accumulate only into these tensors' ``.grad`` (leaves or not).

    Examples
    --------
    >>> import ndgrad
    >>> x = ndgrad.tensor([1.0, 2.0], requires_grad=True)
    >>> ndgrad.autograd.backward((x * x).sum())
    >>> x.grad
    tensor([2., 4.])
    """
    if grad_variables is not None:
        grad_tensors = grad_variables
    tensors = _as_tuple(tensors)
    if not tensors:
        raise RuntimeError("backward() received no tensors to differentiate")
    grad_tensors = _roots_and_grads("backward", "tensors", tensors, grad_tensors)
    if inputs is not None:
        inputs = _as_tuple(inputs)
        if not inputs:
            raise RuntimeError("'inputs' argument to backward() cannot be empty.")
        for t in inputs:
            if not t._requires_grad:
                raise RuntimeError("One of the differentiated Tensors (inputs=) does not "
                                   "require grad")
    if retain_graph is None:
        retain_graph = create_graph
    grads = make_grads(tensors, grad_tensors)
    run_backward(tensors, grads, retain_graph, create_graph, inputs, accumulate=True)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         only_inputs=True, allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """Return the gradients of ``outputs`` with respect to ``inputs`` (no accumulation).

    Parameters
    ----------
    outputs : Tensor or sequence of Tensors
    inputs : Tensor or sequence of Tensors
        Leaves or intermediate tensors that ``outputs`` depend on.
    grad_outputs : sequence, optional
        Cotangents for ``outputs`` (None is allowed for scalar outputs).
    retain_graph : bool, optional
        Defaults to ``create_graph``.
    create_graph : bool
        Make the returned gradients differentiable (for higher-order derivatives).
    allow_unused : bool, optional
        Return None for inputs the outputs do not depend on instead of raising.
    is_grads_batched : bool
        Treat the first dimension of each grad_output as a batch (vectorized through vmap;
        ``ndgrad.autograd.grad`` handles it).
    materialize_grads : bool
        Return zeros instead of None for unused inputs.

    Returns
    -------
    tuple of Tensor (or None)

    Examples
    --------
    >>> import ndgrad
    >>> x = ndgrad.tensor(2.0, requires_grad=True)
    >>> (dx,) = ndgrad.autograd.grad(x ** 3, x, create_graph=True)
    >>> dx
    tensor(12., grad_fn=<MultiplyBackward0>)
    >>> ndgrad.autograd.grad(dx, x)
    (tensor(12.),)
    """
    return grad_impl(outputs, inputs, grad_outputs, retain_graph, create_graph,
                     allow_unused, is_grads_batched, materialize_grads)


def grad_impl(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
              allow_unused=None, is_grads_batched=False, materialize_grads=False,
              all_needed=False):
    """:func:`grad`, for the transforms: ``all_needed`` says that every node of the graph
    leads to one of ``inputs`` (Note [Passes that need every node] in core/engine.py)."""
    if is_grads_batched:
        raise RuntimeError("is_grads_batched=True is handled by ndgrad.autograd.grad (through "
                           "vmap); call that one")
    if materialize_grads and allow_unused is False:
        raise ValueError("Expected allow_unused to be True or not passed when "
                         "materialize_grads=True, but got: allow_unused=False.")
    if allow_unused is None:
        allow_unused = materialize_grads
    outputs = _as_tuple(outputs)
    inputs = check_inputs(inputs)
    grad_outputs = _roots_and_grads("grad", "outputs", outputs, grad_outputs)
    if retain_graph is None:
        retain_graph = create_graph
    grads = make_grads(outputs, grad_outputs)
    result = run_backward(outputs, grads, retain_graph, create_graph, inputs,
                          accumulate=False, all_needed=all_needed)
    out = []
    for i, (t, g) in enumerate(zip(inputs, result)):
        if g is None:
            if not allow_unused:
                raise RuntimeError(
                    f"One of the differentiated Tensors (inputs[{i}]) appears to not have been "
                    "used in the graph. Set allow_unused=True if this is the desired behavior.")
            if materialize_grads:
                g = TENSOR_F.zeros_like(t)
        elif not isinstance(g, Tensor):
            g = _wrap_raw(g)
        out.append(g)
    return tuple(out)


def check_inputs(inputs):
    """``grad``'s inputs as a tuple of Tensors that require grad."""
    inputs = _as_tuple(inputs)
    if not inputs:
        raise RuntimeError("grad requires at least one input")
    for i, t in enumerate(inputs):
        if not isinstance(t, Tensor):
            raise TypeError(f"grad(): inputs[{i}] is a {type(t).__name__}, not a Tensor")
        if not t._requires_grad:
            raise RuntimeError(f"One of the differentiated Tensors (inputs[{i}]) does not require "
                               "grad")
    return inputs


def tensor_backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
    """Accumulate the gradient of this tensor into the leaves' ``.grad``.

    See :func:`ndgrad.autograd.backward`.

    Examples
    --------
    >>> import ndgrad
    >>> x = ndgrad.tensor(3.0, requires_grad=True)
    >>> (x ** 3).backward()
    >>> x.grad
    tensor(27.)
    """
    backward((self,), None if gradient is None else (gradient,), retain_graph, create_graph,
             inputs=inputs)
