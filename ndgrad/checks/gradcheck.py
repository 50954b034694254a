"""gradcheck and gradgradcheck: analytic derivatives against central finite differences.

Complex numbers follow the project's convention (PyTorch's): for a real loss ``L`` the
gradient of a complex input ``z = a + ib`` is ``dL/da + i dL/db``. A backward pass with
cotangent ``v`` for output ``w`` is therefore checked against the finite-difference gradient
of ``L = Re(sum(conj(v) * w))``, perturbing real and imaginary parts separately.

The full option set of ``torch.autograd.gradcheck`` arrives in a later issue; this signature
is the start of it, so nothing will be renamed.
"""

from __future__ import annotations

import warnings

import numpy as np

from ..core.creation import tensor as _tensor
from ..core.engine import grad as _grad
from ..core.grad_mode import enable_grad, no_grad
from ..core.tensor import Tensor

__all__ = ["gradcheck", "gradgradcheck", "GradcheckError"]


class GradcheckError(RuntimeError):
    """Raised by :func:`gradcheck` / :func:`gradgradcheck` when a derivative is wrong."""


def _as_tuple(x):
    if isinstance(x, tuple):
        return x
    if isinstance(x, list):
        return tuple(x)
    return (x,)


def _diff_inputs(inputs):
    return [i for i, t in enumerate(inputs)
            if isinstance(t, Tensor) and t.requires_grad and t.dtype.kind in "fc"]


def _outputs(func, inputs):
    outs = _as_tuple(func(*inputs))
    return [o for o in outs if isinstance(o, Tensor) and o.dtype.kind in "fc"]


def _np(t):
    return np.asarray(t.detach().numpy() if isinstance(t, Tensor) else t)


def _numerical_jacobian(func, inputs, idx, eps):
    """d(outputs)/d(real parameter) for each real parameter of each differentiated input.

    Returns, per input, a list of (complex-or-real) arrays of shape (n_params, out_size)
    per output, where n_params counts real and imaginary parts separately for complex input.
    """
    result = []
    with no_grad():
        outs0 = _outputs(func, inputs)
        for i in idx:
            x = inputs[i]
            data = x._data
            flat = data.reshape(-1)  # a view: perturb in place, restore after
            if flat.size and not np.shares_memory(flat, data):
                raise RuntimeError("gradcheck needs contiguous inputs")
            parts = [1.0] if data.dtype.kind != "c" else [1.0, 1j]
            cols = [[] for _ in outs0]
            for k in range(flat.size):
                orig = flat[k]
                for unit in parts:
                    flat[k] = orig + unit * eps
                    plus = [_np(o).copy() for o in _outputs(func, inputs)]
                    flat[k] = orig - unit * eps
                    minus = [_np(o).copy() for o in _outputs(func, inputs)]
                    flat[k] = orig
                    for c, (p, m) in enumerate(zip(plus, minus)):
                        cols[c].append(((p - m) / (2 * eps)).reshape(-1))
            result.append([np.array(c).reshape(len(c), -1) if c else
                           np.zeros((0, outs0[j].size)) for j, c in enumerate(cols)])
    return outs0, result


def _analytical_rows(func, inputs, idx, outs_meta):
    """Backward passes with unit cotangents: rows of the (conjugate) Jacobian."""
    rows = []  # per output j: list over cotangent units of per-input gradient arrays
    for j, (size, shape, is_complex, dtype) in enumerate(outs_meta):
        units = [1.0, 1j] if is_complex else [1.0]
        per_out = []
        for k in range(size):
            for unit in units:
                with enable_grad():
                    outs = _outputs(func, inputs)
                    if not outs[j].requires_grad:
                        # an output that does not depend on the inputs (e.g. the constant
                        # derivative of floor): its analytical Jacobian is zero
                        per_out.append([None] * len(idx))
                        continue
                    v = np.zeros(size, dtype=dtype)
                    v[k] = unit
                    gs = _grad(outs[j], [inputs[i] for i in idx],
                               grad_outputs=_tensor(v.reshape(shape), dtype=dtype),
                               allow_unused=True)
                per_out.append([None if g is None else _np(g).reshape(-1) for g in gs])
        rows.append(per_out)
    return rows


def _compare(func_name, idx, inputs, outs, numerical, analytical, atol, rtol):
    """Return None when they agree, else the error message for the worst pair."""
    for j, o in enumerate(outs):
        o_complex = o.dtype.kind == "c"
        units = [1.0, 1j] if o_complex else [1.0]
        for n, i in enumerate(idx):
            x = inputs[i]
            x_complex = x.dtype.kind == "c"
            d_params = numerical[n][j]  # (n_params, out_size)
            size = x._data.size
            num = np.zeros((o.size * len(units), size), dtype=complex if x_complex else float)
            ana = np.zeros_like(num)
            r = 0
            for k in range(o.size):
                for unit in units:
                    # FD gradient of L = Re(conj(v) . w) with v = unit * e_k
                    lk = np.real(np.conj(unit) * d_params[:, k])
                    num[r] = lk[0::2] + 1j * lk[1::2] if x_complex else lk
                    g = analytical[j][r][n]
                    if g is not None:
                        ana[r] = g
                    r += 1
            if not np.allclose(ana, num, atol=atol, rtol=rtol, equal_nan=False):
                err = np.abs(ana - num) - rtol * np.abs(num)
                worst = np.unravel_index(np.nanargmax(np.where(np.isnan(err), np.inf, err)),
                                         err.shape)
                return (
                    f"Jacobian mismatch for output {j} with respect to input {i} of "
                    f"{func_name},\nnumerical:{_fmt(num)}\nanalytical:{_fmt(ana)}\n"
                    f"worst entry at (row {worst[0]}, column {worst[1]}): numerical "
                    f"{num[worst]!r}, analytical {ana[worst]!r} (atol={atol}, rtol={rtol}).\n"
                    "Rows are output elements (real then imaginary unit for complex outputs), "
                    "columns input elements."
                )
    return None


def _fmt(a):
    with np.printoptions(precision=6, suppress=True, linewidth=100, threshold=200):
        return "\n" + np.array2string(a)


def gradcheck(func, inputs, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True):
    """Check ``func``'s reverse-mode derivatives against central finite differences.

    Every floating or complex Tensor in ``inputs`` that requires grad is differentiated;
    other inputs are passed through unchanged. Use float64 inputs: in lower precision the
    finite differences are unreliable (a warning says so).

    Parameters
    ----------
    func : callable
        Takes ``*inputs``, returns a Tensor or a tuple of Tensors.
    inputs : Tensor or tuple
    eps : float
        Finite-difference step.
    atol, rtol : float
        Tolerances of the comparison.
    raise_exception : bool
        Raise :class:`GradcheckError` on failure (else return False).

    Returns
    -------
    bool
        True when every derivative agrees.

    Examples
    --------
    >>> import ndgrad
    >>> from ndgrad.checks import gradcheck
    >>> x = ndgrad.tensor([0.3, -1.2], requires_grad=True)
    >>> gradcheck(lambda x: ndgrad.tanh(x) * x, (x,))
    True
    """
    inputs = _as_tuple(inputs)
    idx = _diff_inputs(inputs)
    if not idx:
        raise ValueError("gradcheck expects at least one input tensor that requires grad "
                         "(floating point or complex); none was given")
    for i in idx:
        if inputs[i].dtype not in (np.float64, np.complex128):
            warnings.warn(
                f"Input #{i} requires gradient and is not a double precision floating point or "
                "complex. This check will likely fail if all the inputs are not of double "
                "precision floating point or complex.", UserWarning, stacklevel=2)
    # Perturbation happens in place on the inputs' data: work on private copies.
    work = tuple(_tensor(np.array(_np(t), order="C"), dtype=t.dtype, requires_grad=True)
                 if n in idx else t for n, t in enumerate(inputs))
    outs, numerical = _numerical_jacobian(func, work, idx, eps)
    meta = [(o.size, o.shape, o.dtype.kind == "c", o.dtype) for o in outs]
    analytical = _analytical_rows(func, work, idx, meta)
    name = getattr(func, "__name__", repr(func))
    msg = _compare(name, idx, work, outs, numerical, analytical, atol, rtol)
    if msg is None:
        return True
    if raise_exception:
        raise GradcheckError(msg)
    return False


def gradgradcheck(func, inputs, grad_outputs=None, eps=1e-6, atol=1e-5, rtol=1e-3,
                  raise_exception=True):
    """Check second derivatives: gradcheck of the vector-Jacobian product of ``func``.

    The checked function maps ``(inputs, grad_outputs)`` to the gradients of ``func``'s
    outputs (with ``create_graph=True``); ``grad_outputs`` are random when not given.

    Examples
    --------
    >>> import ndgrad
    >>> from ndgrad.checks import gradgradcheck
    >>> x = ndgrad.tensor([0.3, -1.2], requires_grad=True)
    >>> gradgradcheck(lambda x: ndgrad.exp(x) * x, (x,))
    True
    """
    inputs = _as_tuple(inputs)
    idx = _diff_inputs(inputs)
    if not idx:
        raise ValueError("gradgradcheck expects at least one input tensor that requires grad")
    with no_grad():
        outs = _outputs(func, inputs)
    if grad_outputs is None:
        rng = np.random.default_rng(0)
        grad_outputs = []
        for o in outs:
            v = rng.standard_normal(o.shape)
            if o.dtype.kind == "c":
                v = v + 1j * rng.standard_normal(o.shape)
            grad_outputs.append(_tensor(v, dtype=o.dtype, requires_grad=True))
    grad_outputs = tuple(_tensor(_np(g), dtype=_np(g).dtype, requires_grad=True)
                         for g in _as_tuple(grad_outputs))
    if len(grad_outputs) != len(outs):
        raise ValueError(f"gradgradcheck: got {len(grad_outputs)} grad_outputs for "
                         f"{len(outs)} differentiable outputs")
    n = len(inputs)

    def vjp_of_func(*args):
        ins, gos = args[:n], args[n:]
        with enable_grad():
            o = _outputs(func, ins)
            diff = [ins[i] for i in idx]
            gs = _grad(o, diff, grad_outputs=list(gos), create_graph=True, allow_unused=True)
        return tuple(g for g in gs if g is not None)

    vjp_of_func.__name__ = f"vjp of {getattr(func, '__name__', 'func')}"
    return gradcheck(vjp_of_func, tuple(inputs) + grad_outputs, eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception)
