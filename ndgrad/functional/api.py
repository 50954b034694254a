"""The ``torch.autograd.functional`` contract: ``vjp``, ``jvp``, ``jacobian``, ``hessian``,
``hvp`` and ``vhp`` of a function of tensors.

This module owns the six functions and their argument handling: ``inputs`` and the
function's outputs are a Tensor or a tuple of Tensors, and every result follows their
structure (a Tensor where both sides are single tensors, tuples otherwise, tuples of tuples
for Jacobians and Hessians). Each function works on detached copies of the inputs (so the
caller's tensors keep their ``requires_grad`` and get no ``.grad``) and returns detached
results unless ``create_graph=True``, in which case the results are differentiable with
respect to the caller's inputs (and ``v``, when it requires grad).

How each one computes (Note [Functional strategies])
---------------------------------------------------
* ``vjp``: one reverse pass (:func:`ndgrad.autograd.grad` with ``v`` as the cotangent).
* ``jvp``: one forward-mode pass (:mod:`ndgrad.forward_ad`), not PyTorch's double-backward
  trick: the inputs are made dual with tangent ``v`` and the outputs' tangents are read.
* ``jacobian``: reverse mode, one backward per output element, or (``vectorize=True``) ONE
  ``grad(..., is_grads_batched=True)`` call with the standard basis as batched cotangents;
  forward mode (``strategy="forward-mode"``, needs ``vectorize=True``) pushes the standard
  basis of the inputs as tangents through one ``vmap``-ed dual forward pass.
* ``hessian``: the Jacobian (outer strategy chosen by ``outer_jacobian_strategy``) of the
  gradient, itself computed in reverse mode with ``create_graph=True``.
* ``hvp``: forward over reverse: the inputs are made dual with tangent ``v``, the gradient
  is taken in reverse mode with ``create_graph=True``, and its tangent is ``H v``.
* ``vhp``: reverse over reverse: the gradient with ``create_graph=True``, then a vjp of it
  with ``v``.

Only public ndgrad API is used (``functional`` builds on ``core``, never the other way:
Note [Layers] in docs/how_it_works.rst).

Examples
--------
>>> import ndgrad
>>> from ndgrad.functional import jacobian
>>> jacobian(lambda x: x ** 2, ndgrad.tensor([1.0, 2.0]))
tensor([[2., 0.],
        [0., 4.]])
"""

from __future__ import annotations

from .. import forward_ad as _fwAD
from ..core import creation as _creation
from ..core import ops as _ops
from ..core.grad_mode import enable_grad, is_grad_enabled, set_grad_enabled
from ..core.tensor import Tensor
from .vmap import autograd_grad as grad

__all__ = ["vjp", "jvp", "jacobian", "hessian", "hvp", "vhp"]

_STRATEGIES = ("forward-mode", "reverse-mode")


# ------------------------------------------------------------------------------ helpers
def _as_tuple(inp, arg_name, fn_name):
    """``(is_tuple, tuple_of_tensors)``; a TypeError that names the culprit otherwise."""
    is_tuple = isinstance(inp, tuple)
    items = inp if is_tuple else (inp,)
    for i, el in enumerate(items):
        if not isinstance(el, Tensor):
            where = f"entry {i} of the tuple" if is_tuple else "it"
            if arg_name == "outputs":
                raise TypeError(
                    f"{fn_name}: the user-provided function must return a Tensor or a tuple of "
                    f"Tensors, but {where} is a {type(el).__name__}. Return the result of "
                    "ndgrad operations on the inputs (not a Python number, list or array).")
            raise TypeError(
                f"{fn_name}: {arg_name} must be a Tensor or a tuple of Tensors, but {where} is a "
                f"{type(el).__name__}. Convert it with ndgrad.tensor(...) (and pass several "
                "tensors as a tuple, not a list).")
    return is_tuple, items


def _grad_preprocess(inputs, create_graph, need_graph):
    """Copies of ``inputs`` for the computation, so the caller's tensors stay untouched.

    With ``create_graph`` and an input that requires grad, the copy is a view of it (the
    result stays differentiable w.r.t. the caller's tensor); otherwise it is a detached
    tensor, made to require grad when ``need_graph``.
    """
    res = []
    for inp in inputs:
        if create_graph and inp.requires_grad:
            res.append(inp.reshape(inp.shape))
        else:
            res.append(inp.detach().requires_grad_(need_graph))
    return tuple(res)


def _grad_postprocess(res, create_graph):
    """Detach every tensor of the (nested) tuple ``res`` unless ``create_graph``."""
    if create_graph:
        return res
    if isinstance(res, Tensor):
        return res.detach()
    return tuple(_grad_postprocess(r, create_graph) for r in res)


def _tuple_postprocess(res, to_unpack):
    """Unwrap the single-element tuples that stand for a single Tensor argument.

    ``to_unpack`` is ``is_tuple`` (one level) or ``(is_outer_tuple, is_inner_tuple)``.
    """
    if isinstance(to_unpack, tuple):
        if not to_unpack[1]:
            res = tuple(el[0] for el in res)
        if not to_unpack[0]:
            res = res[0]
    elif not to_unpack:
        res = res[0]
    return res


def _validate_v(v, other, is_other_tuple, fn_name, side):
    """``v`` must have one tensor per entry of ``other`` (the ``side``: "input" or
    "output"), each of the same shape."""
    if len(v) != len(other):
        if is_other_tuple:
            raise RuntimeError(
                f"{fn_name}: v is a tuple of invalid length: it should have {len(other)} "
                f"entries (one per {side}) but got {len(v)}.")
        raise RuntimeError(
            f"{fn_name}: the {side} is a single Tensor, so v should be a single Tensor (or a "
            f"tuple of one), but got a tuple of {len(v)}.")
    for idx, (el_v, el_other) in enumerate(zip(v, other)):
        if el_v.shape != el_other.shape:
            where = f"entry {idx} in v" if is_other_tuple else "v"
            of = f"{side} {idx}" if is_other_tuple else f"the {side}"
            raise RuntimeError(
                f"{fn_name}: {where} has invalid shape: it should be {tuple(el_other.shape)} "
                f"(the shape of {of}) but got {tuple(el_v.shape)}; give v the shape of the "
                f"{side}.")


def _require_v_scalar(tensors, fn_name, side):
    """v may be omitted only when ``side`` is a single Tensor with one element."""
    if len(tensors) != 1 or tensors[0].numel() != 1:
        raise RuntimeError(
            f"{fn_name}: the vector v can only be None if the {side} is a single Tensor with a "
            "single element; pass v explicitly, with the same shape(s) as the "
            f"{side}.")


def _strict_msg(what):
    return (f"{what}. This is not allowed in strict mode (strict=True was passed); pass "
            "strict=False to get zeros for it instead.")


def _check_requires_grad(tensors, tensor_type, strict, fn_name):
    """In strict mode, every entry must be a tensor that depends on the inputs."""
    if not strict:
        return
    for i, t in enumerate(tensors):
        if t is not None and t.requires_grad:
            continue
        if tensor_type == "outputs":
            raise RuntimeError(_strict_msg(
                f"{fn_name}: output {i} of the user-provided function does not require "
                "gradients: it is independent of every input. The outputs must be computed "
                "in a differentiable manner from the inputs"))
        if tensor_type == "jacobian":
            raise RuntimeError(_strict_msg(
                f"{fn_name}: while computing the hessian, found that the jacobian of the "
                f"user-provided function with respect to input {i} is independent of the "
                "inputs (the function must be twice differentiable with a jacobian that "
                "depends on the inputs; a linear function violates this, for example)"))
        raise AssertionError(tensor_type)  # pragma: no cover (internal misuse)


def _autograd_grad(outputs, inputs, grad_outputs=None, create_graph=False, retain_graph=None,
                   is_grads_batched=False):
    """:func:`ndgrad.autograd.grad` over the outputs that require grad (None for inputs that
    none of them reaches; all None when no output requires grad)."""
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    new_outputs, new_grad_outputs = [], []
    for out, g in zip(outputs, grad_outputs):
        if out is not None and out.requires_grad:
            new_outputs.append(out)
            new_grad_outputs.append(g)
    if not new_outputs:
        return (None,) * len(inputs)
    return grad(tuple(new_outputs), inputs, tuple(new_grad_outputs), allow_unused=True,
                create_graph=create_graph, retain_graph=retain_graph,
                is_grads_batched=is_grads_batched)


def _fill_in_zeros(grads, refs, strict, create_graph, fn_name, independent):
    """Zeros (shaped as ``refs[i]``) for the None entries of ``grads``; strict-mode errors.

    ``independent(i)`` says, for entry ``i``, what is independent of what.
    """
    res = []
    for i, (g, ref) in enumerate(zip(grads, refs)):
        if g is None:
            if strict:
                raise RuntimeError(_strict_msg(f"{fn_name}: {independent(i)}"))
            g = _creation.zeros_like(ref.detach())
        elif strict and create_graph and not g.requires_grad:
            raise RuntimeError(
                f"{fn_name}: entry {i} of the result does not require grad: it does not depend "
                "on the inputs in a differentiable way (the derivative it is made of is "
                "constant: the jacobian of a linear function, the hessian of a quadratic "
                "one). This is not allowed in strict mode when create_graph=True; pass "
                "strict=False (or create_graph=False).")
        res.append(g)
    return tuple(res)


def _standard_basis(tensors, numels):
    """The standard basis of the concatenated (flattened) ``tensors``, split per tensor.

    Entry ``j`` has shape ``(sum(numels),) + tensors[j].shape``: row ``r`` is the basis
    vector ``e_r`` restricted to tensor ``j`` (zero unless ``r`` falls in ``j``'s block),
    with ``tensors[j]``'s dtype and device.
    """
    total = sum(numels)
    if len(tensors) == 1 and len(tensors[0].shape) == 1:
        # the (cached, read-only) identity that vmap knows as one (Note [Identity batches])
        from .vmap import _identity
        t = tensors[0]
        return (_identity(total, t.dtype, t.device),)
    res, offset = [], 0
    for t, n in zip(tensors, numels):
        kw = {"dtype": t.dtype, "device": t.device}
        blocks = [_creation.zeros((offset, n), **kw), _creation.eye(n, **kw),
                  _creation.zeros((total - offset - n, n), **kw)]
        res.append(_ops.concat(blocks, axis=0).reshape((total,) + tuple(t.shape)))
        offset += n
    return tuple(res)


def _split_points(numels):
    points, acc = [], 0
    for n in numels[:-1]:
        acc += n
        points.append(acc)
    return points


# ------------------------------------------------------------------------------ vjp / jvp
def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """The vector-Jacobian product ``v^T J`` of ``func`` at ``inputs`` (reverse mode).

    Parameters
    ----------
    func : callable
        Takes the inputs as positional Tensors; returns a Tensor or a tuple of Tensors.
    inputs : Tensor or tuple of Tensors
        Where to differentiate. They are not modified (computations use detached copies).
    v : Tensor or tuple of Tensors, optional
        The cotangent, shaped as the output(s) of ``func``. It may be omitted only when
        ``func`` returns a single Tensor with one element (then it is 1).
    create_graph : bool
        Make the results differentiable (w.r.t. ``inputs`` and ``v``); by default they are
        detached.
    strict : bool
        Raise when an input is independent of every output instead of returning zeros
        for it (and, with ``create_graph``, when a result is not differentiable).

    Returns
    -------
    func_output : Tensor or tuple of Tensors
        ``func(*inputs)``.
    vjp : Tensor or tuple of Tensors
        ``v^T J``, shaped as the inputs.

    Raises
    ------
    RuntimeError
        ``v`` missing for a non-scalar output, or of the wrong number or shapes of
        tensors; a strict-mode violation.
    TypeError
        ``inputs``, ``v`` or the output of ``func`` is not a Tensor or tuple of Tensors.

    Examples
    --------
    >>> import ndgrad
    >>> from ndgrad.functional import vjp
    >>> x = ndgrad.tensor([1.0, 2.0, 3.0])
    >>> out, g = vjp(lambda x: x ** 2, x, ndgrad.tensor([1.0, 0.0, 1.0]))
    >>> out, g
    (tensor([1., 4., 9.]), tensor([2., 0., 6.]))
    """
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "vjp")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _as_tuple(outputs, "outputs", "vjp")
        _check_requires_grad(outputs, "outputs", strict, "vjp")
        if v is not None:
            _, v = _as_tuple(v, "v", "vjp")
            v = _grad_preprocess(v, create_graph=create_graph, need_graph=False)
            _validate_v(v, outputs, is_outputs_tuple, "vjp", "output")
        else:
            _require_v_scalar(outputs, "vjp", "output of the user-provided function")
    with set_grad_enabled(create_graph or is_grad_enabled()):
        grad_res = _autograd_grad(outputs, inputs, v, create_graph=create_graph)
        result = _fill_in_zeros(
            grad_res, inputs, strict, create_graph, "vjp",
            lambda i: f"the output of the user-provided function is independent of input {i}")
    outputs = _grad_postprocess(outputs, create_graph)
    result = _grad_postprocess(result, create_graph)
    return (_tuple_postprocess(outputs, is_outputs_tuple),
            _tuple_postprocess(result, is_inputs_tuple))


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """The Jacobian-vector product ``J v`` of ``func`` at ``inputs`` (forward mode).

    Computed in one dual forward pass (:mod:`ndgrad.forward_ad`): the inputs carry ``v`` as
    their tangent and the outputs' tangents are the result. No backward pass is run (except,
    with ``strict=True``, one to find inputs that no output depends on).

    Parameters
    ----------
    func : callable
        Takes the inputs as positional Tensors; returns a Tensor or a tuple of Tensors.
    inputs : Tensor or tuple of Tensors
        Where to differentiate. They are not modified.
    v : Tensor or tuple of Tensors, optional
        The tangent, shaped as the input(s). It may be omitted only when ``inputs`` is a
        single Tensor with one element (then it is 1).
    create_graph : bool
        Make the results differentiable (w.r.t. ``inputs`` and ``v``); by default they are
        detached.
    strict : bool
        Raise when an input is independent of every output, or an output of every input,
        instead of using zeros (and, with ``create_graph``, when a result is not
        differentiable).

    Returns
    -------
    func_output : Tensor or tuple of Tensors
        ``func(*inputs)``.
    jvp : Tensor or tuple of Tensors
        ``J v``, shaped as the outputs.

    Raises
    ------
    RuntimeError
        ``v`` missing for a non-scalar input, or of the wrong number or shapes of tensors;
        a strict-mode violation.
    TypeError
        ``inputs``, ``v`` or the output of ``func`` is not a Tensor or tuple of Tensors.

    Examples
    --------
    >>> import ndgrad
    >>> from ndgrad.functional import jvp
    >>> x = ndgrad.tensor([1.0, 2.0, 3.0])
    >>> out, t = jvp(lambda x: x ** 2, x, ndgrad.tensor([1.0, 0.0, 1.0]))
    >>> out, t
    (tensor([1., 4., 9.]), tensor([2., 0., 6.]))
    """
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jvp")
        # Forward mode needs no graph; it is built only to return a differentiable result
        # (create_graph) or to detect independent inputs and outputs (strict).
        inputs = _grad_preprocess(inputs, create_graph=create_graph,
                                  need_graph=create_graph or strict)
        if v is not None:
            _, v = _as_tuple(v, "v", "jvp")
            v = _grad_preprocess(v, create_graph=create_graph, need_graph=False)
            _validate_v(v, inputs, is_inputs_tuple, "jvp", "input")
        else:
            _require_v_scalar(inputs, "jvp", "input to the user-provided function")
            v = (_creation.ones_like(inputs[0].detach()),)
        with _fwAD.dual_level():
            duals = tuple(_fwAD.make_dual(p, t) for p, t in zip(inputs, v))
            outputs = func(*duals)
            is_outputs_tuple, outputs = _as_tuple(outputs, "outputs", "jvp")
            unpacked = [_fwAD.unpack_dual(o) for o in outputs]
        outputs = tuple(u.primal for u in unpacked)
        tangents = tuple(u.tangent for u in unpacked)
        _check_requires_grad(outputs, "outputs", strict, "jvp")
        if strict:
            # Which inputs reach no output: the graph answers (a backward of zeros).
            reached = _autograd_grad(outputs, inputs,
                                     tuple(_creation.zeros_like(o.detach()) for o in outputs),
                                     retain_graph=True)
            _fill_in_zeros(reached, inputs, True, False, "jvp",
                           lambda i: "the output of the user-provided function is independent "
                                     f"of input {i}")
        result = _fill_in_zeros(
            tangents, outputs, strict, create_graph, "jvp",
            lambda i: f"output {i} of the user-provided function does not depend on the inputs")
    outputs = _grad_postprocess(outputs, create_graph)
    result = _grad_postprocess(result, create_graph)
    return (_tuple_postprocess(outputs, is_outputs_tuple),
            _tuple_postprocess(result, is_outputs_tuple))


# ------------------------------------------------------------------------------ jacobian
def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False,
             strategy="reverse-mode"):
    """The Jacobian of ``func`` at ``inputs``.

    Parameters
    ----------
    func : callable
        Takes the inputs as positional Tensors; returns a Tensor or a tuple of Tensors.
    inputs : Tensor or tuple of Tensors
        Where to differentiate. They are not modified.
    create_graph : bool
        Make the Jacobian differentiable (w.r.t. ``inputs``); by default it is detached.
        Not supported with ``strategy="forward-mode"``.
    strict : bool
        Raise when an output is independent of an input instead of returning zeros for
        that block (and, with ``create_graph``, when a block is not differentiable). Not
        supported with ``vectorize=True`` or ``strategy="forward-mode"``.
    vectorize : bool
        Reverse mode: compute every row in ONE :func:`ndgrad.autograd.grad` call with
        ``is_grads_batched=True`` (instead of one backward per output element). Forward
        mode: push every column through one vmap-ed dual forward pass (required).
    strategy : {"reverse-mode", "forward-mode"}
        Reverse mode costs one backward per output element, forward mode one forward per
        input element: prefer forward mode for functions with more outputs than inputs.

    Returns
    -------
    Tensor, tuple of Tensors, or tuple of tuples of Tensors
        ``J[i][j]`` (d output ``i`` / d input ``j``) has shape
        ``outputs[i].shape + inputs[j].shape``. The ``i`` level is dropped when ``func``
        returns a single Tensor, the ``j`` level when ``inputs`` is a single Tensor.

    Raises
    ------
    ValueError
        An unknown ``strategy``.
    NotImplementedError
        ``strategy="forward-mode"`` with ``create_graph=True`` or ``vectorize=False``.
    RuntimeError
        ``strict=True`` with ``vectorize=True`` or ``strategy="forward-mode"``; a
        strict-mode violation.
    TypeError
        ``inputs`` or the output of ``func`` is not a Tensor or tuple of Tensors.

    Examples
    --------
    >>> import ndgrad
    >>> from ndgrad.functional import jacobian
    >>> x, y = ndgrad.tensor([1.0, 2.0]), ndgrad.tensor(3.0)
    >>> jx, jy = jacobian(lambda x, y: x * y, (x, y))
    >>> jx
    tensor([[3., 0.],
            [0., 3.]])
    >>> jy
    tensor([1., 2.])
    """
    if strategy not in _STRATEGIES:
        raise ValueError(
            f'jacobian: expected strategy to be either "forward-mode" or "reverse-mode", but '
            f"got {strategy!r}. Hint: if your function has more outputs than inputs, "
            '"forward-mode" tends to be faster; otherwise prefer "reverse-mode".')
    if strategy == "forward-mode":
        if create_graph:
            raise NotImplementedError(
                'jacobian: create_graph=True and strategy="forward-mode" are not supported '
                'together (yet). Either set create_graph=False or strategy="reverse-mode".')
        return _jacfwd(func, inputs, strict, vectorize)

    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _as_tuple(outputs, "outputs", "jacobian")
        _check_requires_grad(outputs, "outputs", strict, "jacobian")
        if vectorize:
            if strict:
                raise RuntimeError(
                    "jacobian: strict=True and vectorize=True are not supported together. "
                    "Either set strict=False or vectorize=False.")
            jac = _jacrev_vectorized(outputs, inputs, create_graph)
        else:
            jac = _jacrev_loop(outputs, inputs, create_graph, strict)
        jac = _grad_postprocess(jac, create_graph)
        return _tuple_postprocess(jac, (is_outputs_tuple, is_inputs_tuple))


def _jacrev_loop(outputs, inputs, create_graph, strict):
    """One backward per output element (as PyTorch's ``vectorize=False``)."""
    jacobian = []
    for i, out in enumerate(outputs):
        rows = [[] for _ in inputs]
        # (a single-element output is differentiated as it is: no flattening, no stacking)
        flat = out.reshape(-1) if out.numel() != 1 else (out,)
        for k in range(out.numel()):
            vj = _autograd_grad((flat[k],), inputs, retain_graph=True,
                                create_graph=create_graph)
            for j, (row, g, inp) in enumerate(zip(rows, vj, inputs)):
                if g is None:
                    if strict:
                        raise RuntimeError(_strict_msg(
                            f"jacobian: output {i} of the user-provided function is "
                            f"independent of input {j}"))
                    g = _creation.zeros_like(inp.detach())
                elif strict and create_graph and not g.requires_grad:
                    raise RuntimeError(
                        f"jacobian: the jacobian of output {i} of the user-provided function "
                        f"with respect to input {j} does not depend on the inputs in a "
                        "differentiable way (it does not require grad). This is not allowed "
                        "in strict mode when create_graph=True; pass strict=False (or "
                        "create_graph=False).")
                row.append(g)
        blocks = []
        for row, inp in zip(rows, inputs):
            shape = tuple(out.shape) + tuple(inp.shape)
            if len(row) == 1:
                g = row[0]
                blocks.append(g if tuple(g.shape) == shape else g.reshape(shape))
            elif row:
                blocks.append(_ops.stack(row, axis=0).reshape(shape))
            else:  # an output with no element
                blocks.append(_creation.zeros(shape, dtype=inp.dtype, device=inp.device))
        jacobian.append(tuple(blocks))
    return tuple(jacobian)


def _jacrev_vectorized(outputs, inputs, create_graph):
    """All rows at once: ONE ``grad(..., is_grads_batched=True)`` call whose batched
    cotangents are the standard basis of the (flattened, concatenated) outputs."""
    numels = tuple(o.numel() for o in outputs)
    total = sum(numels)
    if total == 0 or not any(o.requires_grad for o in outputs):
        rows = (None,) * len(inputs)
    else:
        basis = _standard_basis(outputs, numels)
        rows = _autograd_grad(outputs, inputs, basis, create_graph=create_graph,
                              is_grads_batched=True)
    rows = tuple(
        _creation.zeros((total,) + tuple(inp.shape), dtype=inp.dtype, device=inp.device)
        if r is None else r for r, inp in zip(rows, inputs))
    # rows[j][r] = d (flat outputs)[r] / d inputs[j]; split r per output.
    per_input = []
    for r, inp in zip(rows, inputs):
        chunks = _ops.split(r, _split_points(numels), axis=0) if len(numels) > 1 else (r,)
        per_input.append([c.reshape(tuple(o.shape) + tuple(inp.shape))
                          for c, o in zip(chunks, outputs)])
    return tuple(tuple(per_input[j][i] for j in range(len(inputs)))
                 for i in range(len(outputs)))


def _jacfwd(func, inputs, strict, vectorize, primals_require_grad=False):
    """The forward-mode Jacobian: the standard basis of the inputs, as batched tangents,
    through ONE vmap-ed dual forward pass.

    ``primals_require_grad``: make the primals require grad (hessian's forward-over-reverse,
    where the function itself runs a reverse pass).
    """
    if strict:
        raise RuntimeError(
            'jacobian: strict=True and strategy="forward-mode" are not supported together '
            '(yet). Either set strict=False or strategy="reverse-mode".')
    if not vectorize:
        raise NotImplementedError(
            'jacobian: strategy="forward-mode" (and hessian\'s outer_jacobian_strategy='
            '"forward-mode") is only implemented for vectorize=True; pass vectorize=True.')
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
    inputs = tuple(i.detach().requires_grad_(primals_require_grad) for i in inputs)
    numels = tuple(i.numel() for i in inputs)
    info = {}

    def push(*tangents):
        with _fwAD.dual_level():
            duals = tuple(_fwAD.make_dual(p, t) for p, t in zip(inputs, tangents))
            out = func(*duals)
            is_out_tuple, outs = _as_tuple(out, "outputs", "jacobian")
            info["is_tuple"] = is_out_tuple
            info["shapes"] = tuple(tuple(o.shape) for o in outs)
            res = []
            for o in outs:
                primal, tangent = _fwAD.unpack_dual(o)
                res.append(_creation.zeros_like(primal.detach()) if tangent is None else tangent)
        return tuple(res)

    if sum(numels) == 0:  # no column: no vmap over an empty batch, one plain call for shapes
        with enable_grad():
            is_out_tuple, outs = _as_tuple(func(*inputs), "outputs", "jacobian")
        jac = tuple(tuple(_creation.zeros(tuple(o.shape) + tuple(i.shape), dtype=o.dtype,
                                    device=o.device) for i in inputs) for o in outs)
        return _tuple_postprocess(jac, (is_out_tuple, is_inputs_tuple))

    from .vmap import vmap  # lazily: vmap builds on the whole package

    with enable_grad():
        cols = vmap(push)(*_standard_basis(inputs, numels))
    shapes = info["shapes"]
    jac = []
    for col, shape in zip(cols, shapes):
        # col[c] = d outputs[i] / d (flat inputs)[c]: split c per input, move it last.
        chunks = _ops.split(col, _split_points(numels), axis=0) if len(numels) > 1 else (col,)
        jac.append(tuple(
            _ops.moveaxis(c, 0, -1).reshape(shape + tuple(inp.shape)).detach()
            for c, inp in zip(chunks, inputs)))
    return _tuple_postprocess(tuple(jac), (info["is_tuple"], is_inputs_tuple))


# ------------------------------------------------------------------------------ hessian
def _check_single_output(outputs, is_outputs_tuple, fn_name):
    if is_outputs_tuple:
        raise RuntimeError(
            f"{fn_name}: the function given to {fn_name} should return a single Tensor, but "
            f"it returned a tuple of {len(outputs)}; return one scalar Tensor (e.g. a sum).")
    if outputs[0].numel() != 1:
        raise RuntimeError(
            f"{fn_name}: the Tensor returned by the function given to {fn_name} should "
            f"contain a single element, but it has shape {tuple(outputs[0].shape)}; reduce "
            "it to a scalar (e.g. with .sum()).")


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False,
            outer_jacobian_strategy="reverse-mode"):
    """The Hessian of the scalar function ``func`` at ``inputs``.

    Computed as the Jacobian of the gradient: the gradient in reverse mode (with
    ``create_graph=True``), its Jacobian with ``outer_jacobian_strategy``.

    Parameters
    ----------
    func : callable
        Takes the inputs as positional Tensors; returns a single Tensor with one element.
    inputs : Tensor or tuple of Tensors
        Where to differentiate. They are not modified.
    create_graph : bool
        Make the Hessian differentiable (w.r.t. ``inputs``); by default it is detached.
    strict : bool
        Raise when the output, a gradient block or a Hessian block is independent of an
        input instead of returning zeros for it.
    vectorize : bool
        Compute the outer Jacobian in one batched pass (see :func:`jacobian`).
    outer_jacobian_strategy : {"reverse-mode", "forward-mode"}
        The strategy of the outer Jacobian; ``"forward-mode"`` (forward over reverse) needs
        ``vectorize=True`` and ``create_graph=False``.

    Returns
    -------
    Tensor, or tuple of tuples of Tensors
        ``H[i][j]`` has shape ``inputs[i].shape + inputs[j].shape``; a single Tensor when
        ``inputs`` is a single Tensor.

    Raises
    ------
    RuntimeError
        ``func`` does not return a single Tensor with one element; the option
        combinations :func:`jacobian` rejects; a strict-mode violation.
    ValueError
        An unknown ``outer_jacobian_strategy``.

    Examples
    --------
    >>> import ndgrad
    >>> from ndgrad.functional import hessian
    >>> hessian(lambda x: (x ** 3).sum(), ndgrad.tensor([1.0, 2.0]))
    tensor([[ 6.,  0.],
            [ 0., 12.]])
    """
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "hessian")
    if outer_jacobian_strategy not in _STRATEGIES:
        raise ValueError(
            'hessian: expected outer_jacobian_strategy to be either "forward-mode" or '
            f'"reverse-mode", but got {outer_jacobian_strategy!r}.')

    def ensure_single_output_function(*inp):
        out = func(*inp)
        is_out_tuple, t_out = _as_tuple(out, "outputs", "hessian")
        _check_requires_grad(t_out, "outputs", strict, "hessian")
        _check_single_output(t_out, is_out_tuple, "hessian")
        return out.reshape(())

    def jac_func(*inp):
        jac = jacobian(ensure_single_output_function, inp, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict, "hessian")
        return jac

    if outer_jacobian_strategy == "forward-mode":
        if create_graph:
            raise NotImplementedError(
                'hessian: create_graph=True and outer_jacobian_strategy="forward-mode" are not '
                'supported together (yet). Either set create_graph=False or '
                'outer_jacobian_strategy="reverse-mode".')
        res = _jacfwd(jac_func, inputs, strict, vectorize, primals_require_grad=True)
    else:
        res = jacobian(jac_func, inputs, create_graph=create_graph, strict=strict,
                       vectorize=vectorize, strategy=outer_jacobian_strategy)
    return _tuple_postprocess(res, (is_inputs_tuple, is_inputs_tuple))


def _second_order_setup(func, inputs, v, create_graph, strict, fn_name):
    """Shared by hvp and vhp: checked inputs, v and outputs."""
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", fn_name)
    inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
    if v is not None:
        _, v = _as_tuple(v, "v", fn_name)
        v = _grad_preprocess(v, create_graph=create_graph, need_graph=False)
        _validate_v(v, inputs, is_inputs_tuple, fn_name, "input")
    else:
        _require_v_scalar(inputs, fn_name, "input to the user-provided function")
        v = (_creation.ones_like(inputs[0].detach()),)
    return is_inputs_tuple, inputs, v


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """The Hessian-vector product ``H v`` of the scalar function ``func`` at ``inputs``.

    Forward over reverse: the inputs carry ``v`` as a forward-mode tangent while the
    gradient is computed in reverse mode (``create_graph=True``); the gradient's tangent is
    ``H v``. For a twice continuously differentiable function ``H`` is symmetric, so this
    equals :func:`vhp`.

    Parameters
    ----------
    func : callable
        Takes the inputs as positional Tensors; returns a single Tensor with one element.
    inputs : Tensor or tuple of Tensors
        Where to differentiate. They are not modified.
    v : Tensor or tuple of Tensors, optional
        The vector, shaped as the input(s); optional when ``inputs`` is a single Tensor with
        one element (then it is 1).
    create_graph : bool
        Make the results differentiable; by default they are detached.
    strict : bool
        Raise when the output, a gradient entry or a Hessian-vector entry is independent of
        the inputs instead of using zeros.

    Returns
    -------
    func_output : Tensor
        ``func(*inputs)``.
    hvp : Tensor or tuple of Tensors
        ``H v``, shaped as the inputs.

    Raises
    ------
    RuntimeError
        ``func`` does not return a single Tensor with one element; a bad ``v``; a
        strict-mode violation.

    Examples
    --------
    >>> import ndgrad
    >>> from ndgrad.functional import hvp
    >>> x = ndgrad.tensor([1.0, 2.0])
    >>> hvp(lambda x: (x ** 3).sum(), x, ndgrad.tensor([1.0, 1.0]))
    (tensor(9.), tensor([ 6., 12.]))
    """
    with enable_grad():
        is_inputs_tuple, inputs, v = _second_order_setup(func, inputs, v, create_graph, strict,
                                                         "hvp")
        with _fwAD.dual_level():
            duals = tuple(_fwAD.make_dual(p, t) for p, t in zip(inputs, v))
            outputs = func(*duals)
            is_outputs_tuple, outputs = _as_tuple(outputs, "outputs", "hvp")
            _check_requires_grad(outputs, "outputs", strict, "hvp")
            _check_single_output(outputs, is_outputs_tuple, "hvp")
            # The gradient w.r.t. the primals: the backward carries the tangents.
            jac = _autograd_grad(outputs, inputs, create_graph=True)
            _check_requires_grad(jac, "jacobian", strict, "hvp")
            tangents = tuple(None if g is None else _fwAD.unpack_dual(g).tangent for g in jac)
            outputs = tuple(_fwAD.unpack_dual(o).primal for o in outputs)
    with set_grad_enabled(create_graph or is_grad_enabled()):
        result = _fill_in_zeros(
            tangents, inputs, strict, create_graph, "hvp",
            lambda i: f"the hessian of the user-provided function with respect to input {i} "
                      "is independent of the inputs")
    outputs = _grad_postprocess(outputs, create_graph)
    result = _grad_postprocess(result, create_graph)
    return (_tuple_postprocess(outputs, is_outputs_tuple),
            _tuple_postprocess(result, is_inputs_tuple))


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """The vector-Hessian product ``v^T H`` of the scalar function ``func`` at ``inputs``.

    Reverse over reverse: the gradient with ``create_graph=True``, then its vjp with ``v``.

    Parameters
    ----------
    func : callable
        Takes the inputs as positional Tensors; returns a single Tensor with one element.
    inputs : Tensor or tuple of Tensors
        Where to differentiate. They are not modified.
    v : Tensor or tuple of Tensors, optional
        The vector, shaped as the input(s); optional when ``inputs`` is a single Tensor with
        one element (then it is 1).
    create_graph : bool
        Make the results differentiable; by default they are detached.
    strict : bool
        Raise when the output, a gradient entry or a vector-Hessian entry is independent of
        the inputs instead of using zeros.

    Returns
    -------
    func_output : Tensor
        ``func(*inputs)``.
    vhp : Tensor or tuple of Tensors
        ``v^T H``, shaped as the inputs.

    Raises
    ------
    RuntimeError
        ``func`` does not return a single Tensor with one element; a bad ``v``; a
        strict-mode violation.

    Examples
    --------
    >>> import ndgrad
    >>> from ndgrad.functional import vhp
    >>> x = ndgrad.tensor([1.0, 2.0])
    >>> vhp(lambda x: (x ** 3).sum(), x, ndgrad.tensor([1.0, 1.0]))
    (tensor(9.), tensor([ 6., 12.]))
    """
    with enable_grad():
        is_inputs_tuple, inputs, v = _second_order_setup(func, inputs, v, create_graph, strict,
                                                         "vhp")
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _as_tuple(outputs, "outputs", "vhp")
        _check_requires_grad(outputs, "outputs", strict, "vhp")
        _check_single_output(outputs, is_outputs_tuple, "vhp")
        jac = _autograd_grad(outputs, inputs, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict, "vhp")
    with set_grad_enabled(create_graph or is_grad_enabled()):
        grad_res = _autograd_grad(jac, inputs, v, create_graph=create_graph)
        result = _fill_in_zeros(
            grad_res, inputs, strict, create_graph, "vhp",
            lambda i: f"the hessian of the user-provided function with respect to input {i} "
                      "is independent of the inputs")
    outputs = _grad_postprocess(outputs, create_graph)
    result = _grad_postprocess(result, create_graph)
    return (_tuple_postprocess(outputs, is_outputs_tuple),
            _tuple_postprocess(result, is_inputs_tuple))
