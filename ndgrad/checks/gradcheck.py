"""gradcheck, gradgradcheck and adjointcheck: derivatives against independent references.

:func:`gradcheck` follows the contract of ``torch.autograd.gradcheck`` (names, defaults,
messages): the analytic Jacobian of every (output, input) pair, by reverse mode and, with
``check_forward_ad``, by forward mode, is compared with central finite differences over every
input element (``fast_mode``: random projections ``u^T J v`` instead). Beyond PyTorch:
``complex_step=True`` takes the numerical derivatives of a real-analytic function by the
complex step (exact to machine precision, no cancellation), and :func:`adjointcheck` checks
forward against reverse mode, ``<u, J v> == <J^H u, v>``, with no finite differences at all.

Note [Complex derivatives in the checks]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
Numerically, every input element ``x = a + ib`` is perturbed along its real and imaginary
parts, giving ``D0 = df/da`` and ``D1 = df/db`` (complex for complex outputs). Reverse mode
follows the project's convention (PyTorch's): for a real loss ``L`` the gradient of ``x`` is
``dL/da + i dL/db``, so a backward pass with cotangent ``v`` is checked against the gradient
of ``L = Re(sum(conj(v) * f))``: ``Re(conj(v) D0) + i Re(conj(v) D1)``; the cotangents are the
unit vectors, times ``1`` and ``1j`` for complex outputs. Forward mode with tangent ``1``
(``1j``) on ``x`` gives ``D0`` (``D1``) directly.

Note [Vectorized Jacobians in gradcheck]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
The analytic Jacobian is built with ONE batched backward pass per output
(``autograd.grad(..., is_grads_batched=True)``: the identity's rows as cotangents) and ONE
vmapped forward pass per input, not one pass per element. A function that vmap cannot batch
(data-dependent control flow, a custom Function without batching support) is checked with
the per-element loop instead; ``check_batched_grad`` / ``check_batched_forward_grad`` compare
the two and fail where they differ.
"""

from __future__ import annotations

import warnings

import numpy as np

from ..core.backend import backend_of, is_differentiable_dtype
from ..core.creation import tensor as _tensor
from ..core.creation import zeros_like
from ..core.grad_mode import enable_grad, no_grad
from ..core.tensor import Tensor
from ..functional.transforms import jvp
from ..functional.vmap import autograd_grad as _grad
from ..functional.vmap import vmap

__all__ = ["gradcheck", "gradgradcheck", "adjointcheck", "GradcheckError"]


class GradcheckError(RuntimeError):
    """Raised by :func:`gradcheck`, :func:`gradgradcheck` and :func:`adjointcheck` when a
    derivative is wrong."""


# ----------------------------------------------------------------------------- inputs
def _as_tuple(x):
    if isinstance(x, tuple):
        return x
    if isinstance(x, list):
        return tuple(x)
    return (x,)


def _is_checked(t):
    return isinstance(t, Tensor) and t.requires_grad and is_differentiable_dtype(t.dtype)


def _copy_inputs(obj, leaves):
    """``obj`` with every checked tensor replaced by a private contiguous leaf copy (the
    checks perturb those in place), appended to ``leaves``; nested lists/tuples kept."""
    if _is_checked(obj):
        t = _tensor(np.array(_np(obj), order="C", copy=True), dtype=obj.dtype,
                    device=obj.device, requires_grad=True)
        leaves.append(t)
        return t
    if isinstance(obj, (list, tuple)) and not isinstance(obj, Tensor):
        items = [_copy_inputs(o, leaves) for o in obj]
        return type(obj)(items) if type(obj) in (list, tuple) else type(obj)(*items)
    return obj


def _replace_leaf(obj, target, new):
    """``obj`` with the tensor ``target`` (by identity) replaced by ``new``."""
    if obj is target:
        return new
    if isinstance(obj, (list, tuple)) and not isinstance(obj, Tensor):
        items = [_replace_leaf(o, target, new) for o in obj]
        return type(obj)(items) if type(obj) in (list, tuple) else type(obj)(*items)
    return obj


def _outputs(func, inputs):
    """The floating/complex Tensor outputs of ``func(*inputs)`` (others are not checked)."""
    outs = func(*inputs)
    outs = outs if isinstance(outs, (tuple, list)) else (outs,)
    return [o for o in outs if isinstance(o, Tensor) and is_differentiable_dtype(o.dtype)]


def _np(t):
    """``t`` (a tensor on any device, or a raw array) as a NumPy array: the checks compare on
    the host."""
    if isinstance(t, Tensor):
        return t.detach().cpu().numpy()
    return backend_of(t).to_numpy(t) if hasattr(t, "dtype") else np.asarray(t)


def _unit(x):
    return [1.0, 1j] if np.iscomplexobj(x) else [1.0]


def _random(rng, shape, like):
    """Standard normal values of ``shape``, complex when ``like`` (a Tensor) is."""
    v = rng.standard_normal(shape)
    return v + 1j * rng.standard_normal(shape) if like.dtype.kind == "c" else v


def _of_one_input(func, inputs, x):
    """``func``'s checked outputs as a function of the input ``x`` alone (the others fixed)."""
    def f(xi):
        return tuple(_outputs(func, _replace_leaf(inputs, x, xi)))
    return f


def _name(func):
    return getattr(func, "__name__", None) or type(func).__name__


def _fmt(a):
    with np.printoptions(precision=6, suppress=True, linewidth=100, threshold=200):
        return "\n" + np.array2string(np.asarray(a))


def _warn_precision(leaves, who):
    for n, t in enumerate(leaves):
        if t.dtype not in (np.float64, np.complex128):
            warnings.warn(
                f"{who}: input #{n} requires gradient and is not a double precision floating "
                f"point or complex tensor (it is {t.dtype}). This check will likely fail if all "
                "the inputs are not of double precision floating point or complex.",
                UserWarning, stacklevel=3)


# ------------------------------------------------------------------ numerical derivatives
def _numerical(func, inputs, leaves, outs0, eps, complex_step):
    """``D[j][i]``: array (out_numel_j, in_numel_i, parts) of d(output j)/d(real parts of
    input i): parts 0 (real) and, for complex inputs, 1 (imaginary); Note [Complex
    derivatives in the checks]."""
    D = [[None] * len(leaves) for _ in outs0]
    with no_grad():
        for i, x in enumerate(leaves):
            flat = x._data.reshape(-1)  # a view (the leaf is a private contiguous copy)
            units = _unit(flat)
            cols = [np.zeros((o.numel(), flat.size, len(units)),
                             dtype=np.result_type(_np(o).dtype, flat.dtype, np.float64))
                    for o in outs0]
            if complex_step:
                _complex_step_columns(func, inputs, x, cols, eps)
            else:
                for k in range(flat.size):
                    # a copy: on CuPy flat[k] is a 0-d view, which the perturbation below
                    # would change (a NumPy scalar is a copy)
                    orig = flat[k].copy()
                    for p, unit in enumerate(units):
                        flat[k] = orig + unit * eps
                        plus = [_np(o).copy() for o in _outputs(func, inputs)]
                        flat[k] = orig - unit * eps
                        minus = [_np(o).copy() for o in _outputs(func, inputs)]
                        flat[k] = orig
                        for j, (a, b) in enumerate(zip(plus, minus)):
                            cols[j][:, k, p] = ((a - b) / (2 * eps)).reshape(-1)
            for j in range(len(outs0)):
                D[j][i] = cols[j]
    return D


def _complex_step_columns(func, inputs, x, cols, h):
    # f(x + i h e_k) = f(x) + i h J e_k + O(h^2): the imaginary part / h is the column, with
    # no subtraction of nearby values (so h can be tiny and the result exact to rounding)
    base = _np(x)
    for k in range(base.size):
        z = base.astype(np.complex128).reshape(-1)
        z[k] += 1j * h
        xc = _tensor(z.reshape(base.shape), device=x.device)
        outs = _outputs(func, _replace_leaf(inputs, x, xc))
        for j, o in enumerate(outs):
            cols[j][:, k, 0] = np.imag(_np(o)).reshape(-1) / h


def _expected_rows(Dji, out_complex, in_complex):
    """The reverse-mode rows (cotangent units x input elements) that ``D[j][i]`` implies."""
    rows = []
    for k in range(Dji.shape[0]):
        for unit in ([1.0, 1j] if out_complex else [1.0]):
            re = np.real(np.conj(unit) * Dji[k, :, 0])
            rows.append(re + 1j * np.real(np.conj(unit) * Dji[k, :, 1]) if in_complex else re)
    return np.array(rows).reshape(len(rows), Dji.shape[1])


# ------------------------------------------------------------------- analytical: reverse
def _cotangent_basis(o):
    n = o.numel()
    eye = np.eye(n, dtype=_np(o).dtype)
    if np.iscomplexobj(eye):
        eye = np.stack([eye, 1j * eye], axis=1).reshape(2 * n, n)  # rows e_k, i e_k
    return eye.reshape((eye.shape[0],) + tuple(o.shape))


def _reverse_rows(func, inputs, leaves, batched):
    """Per output j, per input i: the analytic rows (cotangent units x input elements), by
    one batched backward per output (``batched``) or one backward per unit cotangent; None
    for an output that does not require grad (its Jacobian is zero)."""
    with enable_grad():
        outs = _outputs(func, inputs)
    rows = []
    for o in outs:
        if not o.requires_grad:
            rows.append(None)
            continue
        basis = _cotangent_basis(o)
        if batched:
            gs = _grad(o, leaves, grad_outputs=_tensor(basis, dtype=o.dtype, device=o.device),
                       retain_graph=True, allow_unused=True, is_grads_batched=True)
            per_in = [None if g is None else _np(g).reshape(basis.shape[0], -1) for g in gs]
            dtypes = [None if g is None else g.dtype for g in gs]
        else:
            per_in = [[] for _ in leaves]
            dtypes = [None] * len(leaves)
            for v in basis:
                gs = _grad(o, leaves, grad_outputs=_tensor(v, dtype=o.dtype, device=o.device),
                           retain_graph=True, allow_unused=True)
                for n, g in enumerate(gs):
                    per_in[n].append(None if g is None else _np(g).reshape(-1))
                    if g is not None:
                        dtypes[n] = g.dtype
            per_in = [None if all(r is None for r in rs) else
                      np.array([np.zeros(x.numel(), dtype=x.dtype) if r is None else r
                                for r in rs]).reshape(len(rs), -1)
                      for rs, x in zip(per_in, leaves)]
        rows.append((per_in, dtypes))
    return outs, rows


def _try_batched(compute, looped):
    """``compute(True)`` (vectorized), or the loop where vmap cannot batch the function
    (Note [Vectorized Jacobians in gradcheck])."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # vmap's loop-fallback warnings
            return compute(True), None
    except Exception as exc:  # noqa: BLE001 - the loop below raises the real error, if any
        return looped(), exc


# ------------------------------------------------------------------- analytical: forward
def _primal(x):
    # a fresh leaf that requires grad, as the checked input does: the function may itself
    # differentiate it (gradgradcheck's forward over reverse)
    return x.detach().requires_grad_(True)


def _forward_cols(func, inputs, leaves, outs0, batched):
    """Per output j, per input i: (output elements x (input element, unit)) by forward mode:
    one vmapped jvp per input over the unit tangents, or one jvp per unit tangent."""

    result = [[None] * len(leaves) for _ in outs0]
    for i, x in enumerate(leaves):
        primal = _primal(x)
        units = _unit(_np(x))
        n = x.numel()
        basis = np.zeros((n, len(units), n), dtype=_np(x).dtype)
        for p, unit in enumerate(units):
            basis[:, p, :] = unit * np.eye(n)
        basis = basis.reshape((n * len(units),) + tuple(x.shape))

        f = _of_one_input(func, inputs, x)

        def push(t, _f=f, _p=primal):
            return jvp(_f, (_p,), (t,))[1]

        if batched:
            tans = vmap(push)(_tensor(basis, dtype=x.dtype, device=x.device))
            tans = [_np(t).reshape(basis.shape[0], -1).T for t in tans]
        else:
            per = [push(_tensor(t, dtype=x.dtype, device=x.device)) for t in basis]
            tans = [np.array([_np(p[j]).reshape(-1) for p in per]).T
                    for j in range(len(outs0))]
        for j, t in enumerate(tans):
            result[j][i] = t
    return result


# ------------------------------------------------------------------------- comparisons
def _compare(num, ana, atol, rtol, what, j, i, func, layout):
    if num.shape != ana.shape or not np.allclose(ana, num, atol=atol, rtol=rtol):
        if num.shape != ana.shape:
            raise GradcheckError(
                f"{what} for output {j} with respect to input {i} of {_name(func)} has shape "
                f"{ana.shape}, expected {num.shape}")
        err = np.abs(ana - num) - rtol * np.abs(num)
        err = np.where(np.isnan(err), np.inf, err)
        worst = np.unravel_index(np.argmax(err), err.shape)
        raise GradcheckError(
            f"Jacobian mismatch for output {j} with respect to input {i} of {_name(func)} "
            f"({what}),\nnumerical:{_fmt(num)}\nanalytical:{_fmt(ana)}\n"
            f"The worst entry is at (row {worst[0]}, column {worst[1]}): numerical "
            f"{num[worst]:.6g}, analytical {ana[worst]:.6g}, |difference| "
            f"{abs(ana[worst] - num[worst]):.3e} > atol + rtol * |numerical| with atol={atol}, "
            f"rtol={rtol}.\n{layout}")


_ROWS = ("Rows are output elements (for complex outputs: the real unit, then the imaginary "
         "unit, per element), columns input elements.")
_COLS = ("Rows are output elements, columns input elements (for complex inputs: the real "
         "direction, then the imaginary direction, per element).")


def _full_check(func, inputs, leaves, opts):
    eps, atol, rtol = opts["eps"], opts["atol"], opts["rtol"]
    with enable_grad():
        outs0 = _outputs(func, inputs)
    with no_grad():
        outs0 = [o.detach() for o in outs0]
    D = _numerical(func, inputs, leaves, outs0, eps, opts["complex_step"])
    if opts["check_backward_ad"]:
        (_, rows), err = _try_batched(lambda b: _reverse_rows(func, inputs, leaves, b),
                                      lambda: _reverse_rows(func, inputs, leaves, False))
        if opts["check_batched_grad"]:
            if err is not None:
                raise GradcheckError(
                    f"While computing batched gradients (check_batched_grad=True) of "
                    f"{_name(func)}, got: {type(err).__name__}: {err}\nvmap could not batch the "
                    "backward pass; pass check_batched_grad=False to skip this check.")
            _, looped = _reverse_rows(func, inputs, leaves, False)
            _compare_batched(rows, looped, atol, rtol, func, "vjp")
        for j, o in enumerate(outs0):
            for i, x in enumerate(leaves):
                expected = _expected_rows(D[j][i], o.dtype.kind == "c", x.dtype.kind == "c")
                r = rows[j]
                got = r[0][i] if r is not None and r[0][i] is not None else \
                    np.zeros_like(expected)
                if opts["check_grad_dtypes"] and r is not None and r[1][i] is not None and \
                        r[1][i] != x.dtype:
                    raise GradcheckError(
                        f"Gradient has dtype mismatch: input {i} of {_name(func)} has dtype "
                        f"{x.dtype} but its gradient (from output {j}) has dtype {r[1][i]}")
                _compare(expected, got, atol, rtol, "reverse mode", j, i, func, _ROWS)
        # backward runs twice, always (as PyTorch's): nondet_tol bounds the difference
        _, again = _reverse_rows(func, inputs, leaves, err is None)
        _check_reentrant(rows, again, opts["nondet_tol"], func)
        if opts["check_undefined_grad"]:
            _check_undefined_grad(func, inputs, leaves)
    if opts["check_forward_ad"]:
        res, err = _try_batched(lambda b: _forward_cols(func, inputs, leaves, outs0, b),
                                lambda: _forward_cols(func, inputs, leaves, outs0, False))
        if opts["check_batched_forward_grad"]:
            if err is not None:
                raise GradcheckError(
                    f"While computing batched forward gradients (check_batched_forward_grad="
                    f"True) of {_name(func)}, got: {type(err).__name__}: {err}")
            looped = _forward_cols(func, inputs, leaves, outs0, False)
            for j in range(len(outs0)):
                for i in range(len(leaves)):
                    if not np.allclose(res[j][i], looped[j][i], atol=atol, rtol=rtol):
                        raise GradcheckError(
                            f"Batched forward grad mismatch for output {j} with respect to "
                            f"input {i} of {_name(func)}: the vmapped jvp{_fmt(res[j][i])}\n"
                            f"differs from the looped one{_fmt(looped[j][i])}")
        for j in range(len(outs0)):
            for i in range(len(leaves)):
                # forward mode gives the columns of D directly: (input element, unit) pairs
                _compare(D[j][i].reshape(D[j][i].shape[0], -1), res[j][i], atol, rtol,
                         "forward mode", j, i, func, _COLS)


def _compare_batched(rows, looped, atol, rtol, func, what):
    for j, (a, b) in enumerate(zip(rows, looped)):
        if a is None or b is None:
            continue
        for i, (ra, rb) in enumerate(zip(a[0], b[0])):
            if ra is None or rb is None:
                if (ra is None) != (rb is None) and np.any((ra if rb is None else rb) != 0):
                    raise GradcheckError(
                        f"Batched grad mismatch for output {j} with respect to input {i} of "
                        f"{_name(func)}: one of the batched and looped {what}s is undefined and "
                        "the other is not zero")
                continue
            if not np.allclose(ra, rb, atol=atol, rtol=rtol):
                raise GradcheckError(
                    f"Batched grad mismatch for output {j} with respect to input {i} of "
                    f"{_name(func)}: the vmapped {what}s{_fmt(ra)}\ndiffer from the looped "
                    f"ones{_fmt(rb)}\n(check_batched_grad=True)")


def _check_reentrant(a, b, tol, func):
    for j, (ra, rb) in enumerate(zip(a, b)):
        if ra is None or rb is None:
            continue
        for i, (x, y) in enumerate(zip(ra[0], rb[0])):
            if x is None or y is None:
                continue
            diff = np.max(np.abs(x - y)) if x.size else 0.0
            if diff > tol:
                raise GradcheckError(
                    f"Backward is not reentrant, i.e., running backward with the same input "
                    f"and grad_output multiple times gives different values, although the "
                    f"analytical gradient matches the numerical gradient (output {j}, input "
                    f"{i} of {_name(func)}: max difference {diff:.3e}). The tolerance for "
                    f"nondeterminism was {tol}; raise nondet_tol if the nondeterminism is "
                    "expected.")


def _check_undefined_grad(func, inputs, leaves):
    # zero (undefined) output gradients must give zero (or no) input gradients: a backward
    # that adds something of its own does not
    with enable_grad():
        outs = [o for o in _outputs(func, inputs) if o.requires_grad]
        if not outs:
            return
        gs = _grad(outs, leaves, grad_outputs=[zeros_like(o) for o in outs],
                   allow_unused=True)
    for i, g in enumerate(gs):
        if g is not None and np.any(_np(g) != 0):
            raise GradcheckError(
                f"Expected backward function to handle undefined output grads: with zero "
                f"(undefined) gradients for every output of {_name(func)}, the gradient of "
                f"input {i} is not zero:{_fmt(_np(g))}\nA backward must return zero (or None) "
                "for inputs when its output gradients are zero or None.")


# -------------------------------------------------------------------------- fast mode
def _fast_check(func, inputs, leaves, opts):
    eps, atol, rtol = opts["eps"], opts["atol"], opts["rtol"]
    rng = np.random.default_rng(0)
    with enable_grad():
        outs = _outputs(func, inputs)
    us = []
    for o in outs:
        u = _random(rng, o.shape, o)
        us.append(u / max(np.linalg.norm(u), 1e-300))
    for i, x in enumerate(leaves):
        v = _random(rng, x.shape, x)
        v = v / max(np.linalg.norm(v), 1e-300)
        # numerical J v: one central difference along v
        base = _np(x).copy()
        with no_grad():
            if opts["complex_step"]:
                xc = _tensor(base.astype(np.complex128) + 1j * eps * v, device=x.device)
                jv = [np.imag(_np(o)) / eps for o in _outputs(func, _replace_leaf(inputs, x, xc))]
            else:
                x._data[...] = x.backend.asarray(base + eps * v)
                plus = [_np(o).copy() for o in _outputs(func, inputs)]
                x._data[...] = x.backend.asarray(base - eps * v)
                minus = [_np(o).copy() for o in _outputs(func, inputs)]
                x._data[...] = x.backend.asarray(base)
                jv = [(a - b) / (2 * eps) for a, b in zip(plus, minus)]
        for j, (o, u) in enumerate(zip(outs, us)):
            num = np.vdot(u, jv[j])  # <u, J v>
            if opts["check_backward_ad"]:
                # Re <u, J v> = Re <J^H u, v>; the cotangent i u gives Im <u, J v>
                ana = 0j
                if o.requires_grad:
                    for unit in _unit(u):
                        (g,) = _grad(o, [x], grad_outputs=_tensor(unit * u, dtype=o.dtype,
                                                                  device=o.device),
                                     retain_graph=True, allow_unused=True)
                        val = 0.0 if g is None else np.real(np.vdot(_np(g), v))
                        ana += val if unit == 1.0 else 1j * val
                _compare_scalar(num if np.iscomplexobj(u) else np.real(num), ana, atol, rtol,
                                "reverse mode", j, i, func)
            if opts["check_forward_ad"]:

                tans = jvp(_of_one_input(func, inputs, x), (_primal(x),),
                           (_tensor(v, dtype=x.dtype, device=x.device),))[1]
                _compare_scalar(num, np.vdot(u, _np(tans[j])), atol, rtol, "forward mode",
                                j, i, func)


def _compare_scalar(num, ana, atol, rtol, what, j, i, func):
    if not abs(ana - num) <= atol + rtol * abs(num):
        raise GradcheckError(
            f"Jacobian mismatch for output {j} with respect to input {i} of {_name(func)} "
            f"({what}, fast mode): the projection u^H J v of the Jacobian on random unit "
            f"vectors u (output) and v (input) is\nnumerical:  {num:.6g}\nanalytical: {ana:.6g}\n"
            f"|difference| {abs(ana - num):.3e} > atol + rtol * |numerical| with atol={atol}, "
            f"rtol={rtol}. Run with fast_mode=False to see the full Jacobians.")


# ---------------------------------------------------------------------------- public
def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True,
              nondet_tol=0.0, check_undefined_grad=True, check_grad_dtypes=False,
              check_batched_grad=False, check_batched_forward_grad=False,
              check_forward_ad=False, check_backward_ad=True, fast_mode=False,
              complex_step=False):
    """Check the derivatives of ``func`` against finite differences (``torch.autograd.gradcheck``).

    Every floating or complex Tensor in ``inputs`` (nested lists and tuples are searched)
    that requires grad is checked; other values are passed through unchanged. For each
    (output, input) pair the analytic Jacobian, by reverse mode (and forward mode with
    ``check_forward_ad``), must match central finite differences with step ``eps`` within
    ``|analytical - numerical| <= atol + rtol * |numerical|``. Complex inputs and outputs follow
    the conjugate Wirtinger convention (Note [Complex derivatives in the checks]). Use double
    precision: in lower precision the differences are unreliable (a warning says so).

    Parameters
    ----------
    func : callable
        Takes ``*inputs``, returns a Tensor or a sequence of Tensors (non-floating outputs
        and non-Tensors are ignored).
    inputs : Tensor or tuple
    eps : float
        Finite-difference step (with ``complex_step``: the imaginary step; 1e-20 is typical).
    atol, rtol : float
        Tolerances.
    raise_exception : bool
        Raise :class:`GradcheckError` on failure (else return False).
    nondet_tol : float
        Run the backward pass twice; results may differ by at most this much.
    check_undefined_grad : bool
        Zero (undefined) output gradients must give zero input gradients.
    check_grad_dtypes : bool
        Gradients must have their inputs' dtypes.
    check_batched_grad : bool
        The vectorized (vmapped) vjps must equal the per-element ones.
    check_batched_forward_grad : bool
        The same for jvps (with ``check_forward_ad``).
    check_forward_ad : bool
        Also check the forward-mode Jacobian.
    check_backward_ad : bool
        Check the reverse-mode Jacobian (False: forward mode only).
    fast_mode : bool
        Compare projections ``u^H J v`` on random unit vectors instead of whole Jacobians:
        two evaluations and one backward per (output, input) pair.
    complex_step : bool
        Numerical derivatives by the complex step ``Im f(x + i h e_k) / h`` (needs real inputs
        and a real-analytic function that accepts complex inputs): exact to rounding, so
        ``atol``/``rtol`` can be tight.

    Returns
    -------
    bool
        True when every check passes.

    Raises
    ------
    GradcheckError
        With ``raise_exception``: the failing pair, the numerical and analytical Jacobians
        (or projections), the worst entry with its index, and the tolerances.

    Examples
    --------
    >>> import ndgrad
    >>> from ndgrad.checks import gradcheck
    >>> x = ndgrad.tensor([0.3, -1.2], requires_grad=True)
    >>> gradcheck(lambda x: ndgrad.tanh(x) * x, (x,), check_forward_ad=True)
    True
    >>> gradcheck(lambda x: ndgrad.sin(x.detach()) + x, (x,), raise_exception=False)
    False
    """
    opts = dict(eps=eps, atol=atol, rtol=rtol, nondet_tol=nondet_tol,
                check_undefined_grad=check_undefined_grad, check_grad_dtypes=check_grad_dtypes,
                check_batched_grad=check_batched_grad,
                check_batched_forward_grad=check_batched_forward_grad,
                check_forward_ad=check_forward_ad, check_backward_ad=check_backward_ad,
                complex_step=complex_step)
    if not (check_forward_ad or check_backward_ad):
        raise ValueError("gradcheck: check_forward_ad and check_backward_ad are both False; "
                         "nothing to check")
    if check_batched_forward_grad and not check_forward_ad:
        raise ValueError("gradcheck: check_batched_forward_grad=True needs "
                         "check_forward_ad=True")
    leaves = []
    work = _copy_inputs(_as_tuple(inputs), leaves)
    if not leaves:
        raise ValueError("gradcheck expects at least one input tensor that requires grad "
                         "(floating point or complex); none was given. Pass tensors made with "
                         "requires_grad=True.")
    if complex_step and any(x.dtype.kind == "c" for x in leaves):
        raise ValueError("gradcheck: complex_step=True needs real inputs (the complex step "
                         "perturbs the imaginary part); use the default central differences "
                         "for complex inputs")
    _warn_precision(leaves, "gradcheck")
    try:
        (_fast_check if fast_mode else _full_check)(func, work, leaves, opts)
    except GradcheckError:
        if raise_exception:
            raise
        return False
    return True


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3,
                  gen_non_contig_grad_outputs=False, raise_exception=True, nondet_tol=0.0,
                  check_undefined_grad=True, check_grad_dtypes=False, check_batched_grad=False,
                  check_fwd_over_rev=False, check_rev_over_rev=True, fast_mode=False,
                  complex_step=False):
    """Check second derivatives: :func:`gradcheck` of the vector-Jacobian product of ``func``.

    The checked function maps ``(inputs, grad_outputs)`` to the gradients of ``func``'s
    outputs with respect to the inputs (``create_graph=True``), so both the derivative of the
    backward formulas in the inputs and their linearity in ``grad_outputs`` are checked.

    Parameters
    ----------
    func, inputs
        As for :func:`gradcheck`.
    grad_outputs : Tensor or tuple, optional
        Cotangents of the outputs; random (fixed seed) when not given.
    gen_non_contig_grad_outputs : bool
        Make the random ``grad_outputs`` non-contiguous (strided views).
    check_rev_over_rev : bool
        Check the vjp's derivative by reverse mode (reverse over reverse).
    check_fwd_over_rev : bool
        Also check it by forward mode (forward over reverse).
    eps, atol, rtol, raise_exception, nondet_tol, check_undefined_grad, check_grad_dtypes, \
check_batched_grad, fast_mode, complex_step
        As for :func:`gradcheck`.

    Returns
    -------
    bool
        True when every check passes; as :func:`gradcheck`, a failed check raises
        ``GradcheckError``, or gives False with ``raise_exception=False``.

    Examples
    --------
    >>> import ndgrad
    >>> from ndgrad.checks import gradgradcheck
    >>> x = ndgrad.tensor([0.3, -1.2], requires_grad=True)
    >>> gradgradcheck(lambda x: ndgrad.exp(x) * x, (x,), check_fwd_over_rev=True)
    True
    """
    inputs = _as_tuple(inputs)
    leaves = []
    _copy_inputs(inputs, leaves)
    if not leaves:
        raise ValueError("gradgradcheck expects at least one input tensor that requires grad "
                         "(floating point or complex); none was given")
    with enable_grad():
        outs = [o for o in _outputs(func, inputs)]
    if grad_outputs is None:
        rng = np.random.default_rng(0)
        grad_outputs = []
        for o in outs:
            shape = tuple(o.shape)
            wide = shape[:-1] + (2 * shape[-1],) if gen_non_contig_grad_outputs and shape \
                else shape
            t = _tensor(_random(rng, wide, o), dtype=o.dtype, device=o.device)
            if gen_non_contig_grad_outputs and shape:
                t = t[..., ::2]  # a strided view
            grad_outputs.append(t.detach().requires_grad_(True))
    else:
        grad_outputs = [g.detach().requires_grad_(True) if isinstance(g, Tensor)
                        else _tensor(g, requires_grad=True) for g in _as_tuple(grad_outputs)]
    grad_outputs = tuple(grad_outputs)
    if len(grad_outputs) != len(outs):
        raise ValueError(f"gradgradcheck: got {len(grad_outputs)} grad_outputs for "
                         f"{len(outs)} differentiable outputs of the function")
    for n, (g, o) in enumerate(zip(grad_outputs, outs)):
        if tuple(g.shape) != tuple(o.shape):
            raise ValueError(f"gradgradcheck: grad_outputs[{n}] has shape {list(g.shape)} but "
                             f"output {n} has shape {list(o.shape)}")
    n = len(inputs)
    mask = []
    _tensor_mask(inputs, mask)

    def vjp_of_func(*args):
        ins, gos = args[:n], args[n:]
        diff = []
        _collect(ins, iter(mask), diff)  # the checked inputs, by position
        with enable_grad():
            o = _outputs(func, ins)
            pairs = [(x, g) for x, g in zip(o, gos) if x.requires_grad]
            if not pairs:
                return ()
            gs = _grad([x for x, _ in pairs], diff, grad_outputs=[g for _, g in pairs],
                       create_graph=True, allow_unused=True)
        return tuple(g for g in gs if g is not None)

    vjp_of_func.__name__ = f"vjp of {_name(func)}"
    return gradcheck(vjp_of_func, tuple(inputs) + grad_outputs, eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception, nondet_tol=nondet_tol,
                     check_undefined_grad=check_undefined_grad,
                     check_grad_dtypes=check_grad_dtypes, check_batched_grad=check_batched_grad,
                     check_forward_ad=check_fwd_over_rev, check_backward_ad=check_rev_over_rev,
                     fast_mode=fast_mode, complex_step=complex_step)


def _tensor_mask(obj, mask):
    """Per Tensor in ``obj`` (depth first): whether it is a checked input."""
    if isinstance(obj, Tensor):
        mask.append(_is_checked(obj))
    elif isinstance(obj, (list, tuple)):
        for o in obj:
            _tensor_mask(o, mask)


def _collect(obj, mask, out):
    if isinstance(obj, Tensor):
        if next(mask, False):
            out.append(obj)
    elif isinstance(obj, (list, tuple)):
        for o in obj:
            _collect(o, mask, out)


def adjointcheck(func, inputs, *, atol=1e-10, rtol=1e-7, n_probes=2, seed=0,
                 raise_exception=True):
    """Check forward mode against reverse mode with no finite differences:
    ``<u, J v> == <J^H u, v>`` for random ``u``, ``v``.

    A jvp (forward mode) and a vjp (reverse mode) of a correct function are adjoint linear
    maps, so the two inner products agree to rounding: a mistake in either rule shows up
    with tolerances far tighter than a finite-difference check allows, and at no cost in
    function evaluations. (It cannot catch the same mistake made in both rules: use
    :func:`gradcheck` for that.)

    Parameters
    ----------
    func, inputs
        As for :func:`gradcheck`.
    atol, rtol : float
        Tolerances of the comparison (relative to ``|u| |J| |v|``-sized values).
    n_probes : int
        Number of random (u, v) pairs per (output, input).
    seed : int
        Seed of the random probes.
    raise_exception : bool
        Raise ``GradcheckError`` on a mismatch (else return False).

    Returns
    -------
    bool
        True when the two inner products agree for every probe.

    Examples
    --------
    >>> import ndgrad
    >>> from ndgrad.checks import adjointcheck
    >>> x = ndgrad.tensor([[0.3, -1.2], [0.5, 2.0]], requires_grad=True)
    >>> adjointcheck(lambda x: ndgrad.tanh(x @ x).sum(axis=0), (x,))
    True
    """

    leaves = []
    work = _copy_inputs(_as_tuple(inputs), leaves)
    if not leaves:
        raise ValueError("adjointcheck expects at least one input tensor that requires grad")
    rng = np.random.default_rng(seed)
    try:
        with enable_grad():
            outs = _outputs(func, work)
        for i, x in enumerate(leaves):
            f = _of_one_input(func, work, x)
            for _ in range(n_probes):
                v = _random(rng, x.shape, x)
                tans = jvp(f, (_primal(x),), (_tensor(v, dtype=x.dtype, device=x.device),))[1]
                for j, o in enumerate(outs):
                    u = _random(rng, o.shape, o)
                    fwd = np.real(np.vdot(u, _np(tans[j])))  # Re <u, J v>
                    if o.requires_grad:
                        (g,) = _grad(o, [x], grad_outputs=_tensor(u, dtype=o.dtype,
                                                                  device=o.device),
                                     retain_graph=True, allow_unused=True)
                        rev = 0.0 if g is None else np.real(np.vdot(_np(g), v))
                    else:
                        rev = 0.0
                    scale = np.linalg.norm(u) * np.linalg.norm(v) * \
                        max(np.linalg.norm(_np(tans[j])) / max(np.linalg.norm(v), 1e-300), 1.0)
                    if not abs(fwd - rev) <= atol * scale + rtol * abs(fwd):
                        raise GradcheckError(
                            f"Forward and reverse mode disagree for output {j} with respect to "
                            f"input {i} of {_name(func)}: Re <u, J v> by forward mode is "
                            f"{fwd:.10g} but Re <J^H u, v> by reverse mode is {rev:.10g} "
                            f"(|difference| {abs(fwd - rev):.3e}; atol={atol}, rtol={rtol}). "
                            "One of the jvp and vjp rules (or both) is wrong: gradcheck with "
                            "check_forward_ad=True tells which.")
    except GradcheckError:
        if raise_exception:
            raise
        return False
    return True
