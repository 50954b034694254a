"""Composable function transforms (``torch.func`` / JAX style): ``grad``, ``grad_and_value``,
``vjp``, ``jvp``, ``linearize``, ``jacrev``, ``jacfwd``, ``hessian``; ``ndgrad.func``
re-exports them with ``vmap``.

Each takes a function and returns a function. Inputs and outputs may be pytrees (nested
tuples, lists and dicts) of tensors; ``argnums`` picks the positional arguments to
differentiate. They nest in any order and with ``vmap``: ``grad(grad(f))``,
``jacfwd(jacrev(f))``, ``vmap(grad(f))`` (per-example gradients), ``grad(vmap(f))``.

Note [Transforms and perturbations]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
Reverse-mode transforms (``grad``, ``vjp``, and ``jacrev`` through ``vjp``) run the function
at a grad level of their own (Note [Grad levels] in ``functional/grad_level.py``): its inputs
are values of that level, every op on them is recorded in the level's own graph, and the
gradient is one backward pass over that graph, whose formulas compute on the values one level
down. So a closure over an outer variable is never confused with the inner input
(d/dx [x * grad(lambda y: x * y)(3.0)] = 2x), the result is recorded outside exactly where
the levels outside record (an input that requires grad, an enclosing ``grad``, ``vmap`` or
``jvp``), and plain tensors with no graph come back otherwise, as ``torch.func`` returns them.
``vjp_fn`` records its pass when grad mode is on where it is called (``torch.func``'s rule):
``grad`` of a function that calls a ``vjp_fn`` made outside it differentiates through it.

Forward-mode transforms (``jvp``, ``jacfwd``) run in a fresh dual level
(``ndgrad.forward_ad``); levels are what keeps nested forward passes apart
(Note [Levels] in ``ndgrad/core/levels.py``).

The Jacobian transforms push all basis vectors through ONE batched pass: ``jacrev`` is
``vmap`` of the vjp function over the rows of an identity matrix, ``jacfwd`` is ``vmap`` of
``jvp`` over its columns.
"""

from __future__ import annotations

import functools

from .. import forward_ad as _fwAD
from ..core.backend import is_differentiable_dtype
from ..core.creation import ones_like, zeros_like
from ..core.dispatch import TENSOR_F
from ..core.backward import grad_impl as _grad_impl
from ..core.grad_mode import STATE
from ..core.tensor import Tensor
from . import grad_level
from .pytree import tree_flatten, tree_unflatten
from .vmap import _identity, vmap

__all__ = ["grad", "grad_and_value", "vjp", "jvp", "linearize", "jacrev", "jacfwd",
           "hessian"]


# ------------------------------------------------------------------------ helpers
def _normalize_argnums(argnums, nargs, who):
    if isinstance(argnums, bool) or not isinstance(argnums, (int, tuple)):
        raise TypeError(f"{who}: argnums must be an int or a tuple of ints, got "
                        f"{type(argnums).__name__}")
    nums = argnums if isinstance(argnums, tuple) else (argnums,)
    if not nums:
        raise ValueError(f"{who}: argnums must be non-empty")
    out = []
    for a in nums:
        if isinstance(a, bool) or not isinstance(a, int):
            raise TypeError(f"{who}: argnums must contain ints, got {a!r}")
        if not -nargs <= a < nargs:
            raise ValueError(f"{who}: got argnums={argnums}, but only {nargs} positional "
                             "inputs were passed")
        out.append(a % nargs)
    if len(set(out)) != len(out):
        raise ValueError(f"{who}: argnums must not repeat an argument, got {argnums}")
    return tuple(out)


def _check_leaves(leaves, who, what="input"):
    for k, x in enumerate(leaves):
        if not isinstance(x, Tensor):
            raise TypeError(f"{who}: expected every {what} being differentiated to be a Tensor "
                            f"(or a pytree of Tensors), got a {type(x).__name__} at leaf {k}")
        if not is_differentiable_dtype(x.dtype):
            raise RuntimeError(f"{who}: can only differentiate with respect to floating point "
                               f"or complex tensors, but {what} leaf {k} has dtype {x.dtype}")


def _split_aux(out, has_aux, who):
    if not has_aux:
        return out, None
    if not (isinstance(out, tuple) and len(out) == 2):
        if isinstance(out, (tuple, list)):
            what = f"a {type(out).__name__} of {len(out)} entries"
        else:
            what = "a Tensor" if isinstance(out, Tensor) else f"a {type(out).__name__}"
        raise RuntimeError(f"{who}(f, ..., has_aux=True): f must return a pair (output, aux) "
                           f"as a tuple, got {what}")
    return out[0], out[1]


def _replace_args(args, argnums, new):
    args = list(args)
    for k, a in zip(argnums, new):
        args[k] = a
    return args


def _restrict(func, argnums, args, kwargs, who):
    """``func`` as a function of the ``argnums`` arguments only, and their values."""
    nums = _normalize_argnums(argnums, len(args), who)

    def f(*d):
        return func(*_replace_args(args, nums, d), **kwargs)
    return f, tuple(args[k] for k in nums)


# ------------------------------------------------------------------------ grad
def grad_and_value(func, argnums=0, has_aux=False, *, _who="grad_and_value"):
    """Like :func:`grad`, returning ``(gradient, value)`` (``(gradient, (value, aux))``
    with ``has_aux``).

    Examples
    --------
    >>> import ndgrad
    >>> from ndgrad.func import grad_and_value
    >>> g, v = grad_and_value(lambda x: (x ** 2).sum())(ndgrad.tensor([1.0, 2.0]))
    >>> g, v
    (tensor([2., 4.]), tensor(5.))
    """
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        who = _who
        nums = _normalize_argnums(argnums, len(args), who)
        diff = tuple(args[k] for k in nums)
        leaves, spec = tree_flatten(diff)
        _check_leaves(leaves, who)
        level = grad_level.enter()
        try:
            tracked = [grad_level.track(x, level) for x in leaves]
            out = func(*_replace_args(args, nums, tree_unflatten(spec, tracked)), **kwargs)
            out, aux = _split_aux(out, has_aux, who)
            if not isinstance(out, Tensor):
                raise RuntimeError(f"{who}(f)(*args): expected f(*args) to return a Tensor, "
                                   f"got a {type(out).__name__}")
            if out.numel() != 1 or out.ndim != 0:
                raise RuntimeError(
                    f"{who}(f)(*args): expected f(*args) to return a scalar Tensor, got one "
                    f"of shape {list(out.shape)}. Maybe you wanted to use the vjp or jacrev "
                    "APIs instead?")
            if out.dtype.kind == "c":
                raise RuntimeError(f"{who}(f)(*args): f returned a complex scalar; grad needs "
                                   "a real output (take .real or abs() of it)")
            grad_level.settle(out, level)  # (Note [Grad levels]: a stale view, while active)
        finally:
            grad_level.leave(level)
        grads = _pullback([out], [None], tracked, level)
        g = tree_unflatten(spec, list(grads))
        g = g[0] if isinstance(argnums, int) else g
        value = grad_level.lower(out, level)
        if has_aux:
            return g, (value, grad_level.lower_tree(aux, level))
        return g, value
    return wrapper


def _pullback(outs, cotangents, tracked, level):
    """The gradients of the level's ``outs`` (with ``cotangents``; None: ones) for the
    ``tracked`` inputs: one backward pass over the level's graph, recorded outside when grad
    mode is on here (Note [Transforms and perturbations])."""
    pairs = [(o, c) for o, c in zip(outs, cotangents)
             if isinstance(o, Tensor) and o._requires_grad and o._autograd_level() is level]
    if not pairs:
        return tuple(grad_level.lower(zeros_like(t), level) for t in tracked)
    # every node of the level's graph leads to a tracked leaf unless f made a leaf of its
    # own (Note [Passes that need every node] in core/engine.py)
    grads = _grad_impl([p[0] for p in pairs], tracked, [p[1] for p in pairs],
                       retain_graph=True, create_graph=STATE.grad_enabled,
                       allow_unused=True, materialize_grads=True,
                       all_needed=not level.info.extra_leaves)
    # an input the outputs do not depend on gets zeros made like it: a value of this level,
    # lowered as the computed gradients are
    return tuple(grad_level.lower(g, level) for g in grads)


def grad(func, argnums=0, has_aux=False):
    """The gradient of a function with a real scalar output.

    Parameters
    ----------
    func : callable
        Returns a real scalar Tensor (with ``has_aux``: a pair ``(scalar, aux)``).
    argnums : int or tuple of ints
        Which positional arguments to differentiate (each a Tensor or a pytree of Tensors).
    has_aux : bool
        ``func`` returns ``(output, aux)``; the gradient function returns
        ``(gradient, aux)``.

    Returns
    -------
    callable
        Returns the gradient with the structure of the chosen argument (a tuple of them for
        a tuple ``argnums``).

    Examples
    --------
    >>> import ndgrad
    >>> from ndgrad.func import grad
    >>> f = lambda x: ndgrad.sin(x).sum()
    >>> grad(f)(ndgrad.tensor([0.0, 1.0]))              # cos(x)
    tensor([1.        , 0.54030231])
    >>> grad(grad(lambda x: x ** 3))(ndgrad.tensor(2.0))  # 6x
    tensor(12.)
    """
    gv = grad_and_value(func, argnums, has_aux, _who="grad")

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        g, value = gv(*args, **kwargs)
        return (g, value[1]) if has_aux else g
    return wrapper


# ------------------------------------------------------------------------ vjp
def vjp(func, *primals, has_aux=False):
    """The output of ``func(*primals)`` and its vector-Jacobian product function.

    Parameters
    ----------
    func : callable
        Takes the primals and returns a Tensor or a pytree of Tensors (with ``has_aux``: a
        pair ``(output, aux)``).
    *primals : Tensors or pytrees of Tensors
    has_aux : bool

    Returns
    -------
    (output, vjp_fn) or (output, vjp_fn, aux)
        ``vjp_fn(cotangents)`` takes cotangents with the output's structure and returns a
        tuple with one entry per primal: ``cotangents^T @ J``. It can be called many times
        (and under ``vmap``).

    Examples
    --------
    >>> import ndgrad
    >>> from ndgrad.func import vjp
    >>> out, vjp_fn = vjp(lambda x: x ** 2, ndgrad.tensor([1.0, 3.0]))
    >>> vjp_fn(ndgrad.tensor([1.0, 10.0]))
    (tensor([ 2., 60.]),)
    """
    who = "vjp"
    leaves, spec = tree_flatten(primals)
    _check_leaves(leaves, who, "primal")
    level = grad_level.enter()
    try:
        tracked = [grad_level.track(x, level) for x in leaves]
        out = func(*tree_unflatten(spec, tracked))
        out, aux = _split_aux(out, has_aux, who)
        grad_level.settle(out, level)  # (Note [Grad levels]: a stale view, while active)
    finally:
        grad_level.leave(level)
    oleaves, ospec = tree_flatten(out)
    for k, o in enumerate(oleaves):
        if not isinstance(o, Tensor):
            raise RuntimeError(f"{who}(f, *primals): f must return Tensors (or a pytree of "
                               f"them); output leaf {k} is a {type(o).__name__}")

    def vjp_fn(cotangents):
        cleaves, cspec = tree_flatten(cotangents)
        if cspec != ospec:
            if len(oleaves) == 1 and len(cleaves) == 1:
                pass  # a tensor for a one-tensor output, however it is wrapped
            else:
                raise RuntimeError(
                    f"vjp_fn: expected cotangents with the structure of the output "
                    f"({ospec!r}), got {cspec!r}")
        for k, (c, o) in enumerate(zip(cleaves, oleaves)):
            if not isinstance(c, Tensor):
                raise RuntimeError(f"vjp_fn: cotangent leaf {k} is a {type(c).__name__}, "
                                   "not a Tensor")
            if tuple(c.shape) != tuple(o.shape):
                raise RuntimeError(
                    f"vjp_fn: cotangent leaf {k} has shape {list(c.shape)}, but the output "
                    f"has shape {list(o.shape)}; they must match")
        grads = _pullback(oleaves, cleaves, tracked, level)
        return tuple(tree_unflatten(spec, list(grads)))

    out = tree_unflatten(ospec, [grad_level.lower(o, level) for o in oleaves])
    if has_aux:
        return out, vjp_fn, grad_level.lower_tree(aux, level)
    return out, vjp_fn


# ------------------------------------------------------------------------ jvp
def _check_tangents(primals, tangents, who):
    if not isinstance(primals, (tuple, list)):
        raise RuntimeError(f"{who}: expected primals to be a tuple, e.g. (x,), got "
                           f"{type(primals).__name__}")
    if not isinstance(tangents, (tuple, list)):
        raise RuntimeError(f"{who}: expected tangents to be a tuple, e.g. (v,), got "
                           f"{type(tangents).__name__}")
    pleaves, pspec = tree_flatten(tuple(primals))
    tleaves, tspec = tree_flatten(tuple(tangents))
    if pspec != tspec:
        raise RuntimeError(f"{who}: expected primals and tangents to have the same structure, "
                           f"got {pspec!r} and {tspec!r}")
    _check_leaves(pleaves, who, "primal")
    for k, (p, t) in enumerate(zip(pleaves, tleaves)):
        if not isinstance(t, Tensor):
            raise RuntimeError(f"{who}: tangent leaf {k} is a {type(t).__name__}, not a Tensor")
        if tuple(t.shape) != tuple(p.shape):
            raise RuntimeError(f"{who}: tangent leaf {k} has shape {list(t.shape)} but its "
                               f"primal has shape {list(p.shape)}; they must match")
    return pleaves, tleaves, pspec


def jvp(func, primals, tangents, *, has_aux=False):
    """The output of ``func(*primals)`` and its Jacobian-vector product with ``tangents``,
    by forward mode (one pass, no backward).

    Parameters
    ----------
    func : callable
    primals : tuple
        The inputs (Tensors or pytrees of Tensors).
    tangents : tuple
        The directions, with the structure and shapes of ``primals``.
    has_aux : bool

    Returns
    -------
    (output, jvp_out) or (output, jvp_out, aux)

    Examples
    --------
    >>> import ndgrad
    >>> from ndgrad.func import jvp
    >>> x = ndgrad.tensor([0.0, 1.0])
    >>> jvp(ndgrad.exp, (x,), (ndgrad.ones(2),))
    (tensor([1.        , 2.71828183]), tensor([1.        , 2.71828183]))
    """
    who = "jvp"
    pleaves, tleaves, pspec = _check_tangents(primals, tangents, who)
    with _fwAD.dual_level() as level:
        # (the tangents stay the caller's: an in-place change of an input writes a copy,
        # Note [Tangents of views] in forward_ad; jacfwd's are vmap's cached identity)
        duals = [_fwAD.lend(_fwAD.make_dual(p, t.astype(p.dtype) if t.dtype != p.dtype
                                            else t, level=level), level)
                 for p, t in zip(pleaves, tleaves)]
        out = func(*tree_unflatten(pspec, duals))
        out, aux = _split_aux(out, has_aux, who)
        oleaves, ospec = tree_flatten(out)
        primal_out = []
        tangent_out = []
        for k, o in enumerate(oleaves):
            if not isinstance(o, Tensor):
                raise RuntimeError(f"{who}(f, primals, tangents): f must return Tensors (or a "
                                   f"pytree of them); output leaf {k} is a {type(o).__name__}")
            p, t = _fwAD.unpack_dual(o, level=level)
            primal_out.append(p)
            tangent_out.append(t if t is not None else zeros_like(p))
    res = (tree_unflatten(ospec, primal_out), tree_unflatten(ospec, tangent_out))
    return res + (aux,) if has_aux else res


def linearize(func, *primals):
    """``func(*primals)`` and a function computing its Jacobian-vector products at
    ``primals``.

    ``jvp_fn(*tangents)`` returns the JVP along ``tangents`` (one per primal). It evaluates
    ``func`` again in forward mode on each call (ndgrad does not trace a graph to replay; a
    difference from ``torch.func.linearize``, with the same results).

    Examples
    --------
    >>> import ndgrad
    >>> from ndgrad.func import linearize
    >>> out, jvp_fn = linearize(lambda x: x ** 3, ndgrad.tensor(2.0))
    >>> out, jvp_fn(ndgrad.tensor(1.0))
    (tensor(8.), tensor(12.))
    """
    leaves, spec = tree_flatten(primals)
    _check_leaves(leaves, "linearize", "primal")
    frozen = tuple(primals)
    out = func(*frozen)

    def jvp_fn(*tangents):
        if len(tangents) != len(frozen):
            raise RuntimeError(f"linearize: jvp_fn expects {len(frozen)} tangent(s), one per "
                               f"primal; got {len(tangents)}")
        return jvp(func, frozen, tangents)[1]
    return out, jvp_fn


# ------------------------------------------------------------------------ Jacobians
def _numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n


def _basis(like):
    """Rows of the identity over the concatenation of the tensors ``like``, split per
    tensor: ``[(N, *shape_k)]`` with N the total size, each in its tensor's dtype (a real
    output's cotangents are real, a complex one's complex)."""
    shapes = [tuple(t.shape) for t in like]
    total = sum(_numel(s) for s in shapes)
    dtypes = {t.dtype for t in like}
    dtype = like[0].dtype if len(dtypes) == 1 else next(
        (d for d in dtypes if d.kind == "c"), like[0].dtype)
    identity = _identity(total, dtype, like[0].device)
    if len(shapes) == 1 and len(shapes[0]) == 1:  # vmap can exploit it (Note [Identity batches])
        return [identity]
    parts = []
    start = 0
    for s, t in zip(shapes, like):
        n = _numel(s)
        part = TENSOR_F.reshape(identity[:, start:start + n], (total,) + s)
        if t.dtype != dtype:  # (a real input's rows of a complex identity: their real part)
            if dtype.kind == "c" and t.dtype.kind != "c":
                part = TENSOR_F.real(part)
            part = TENSOR_F.astype(part, t.dtype)
        parts.append(part)
        start += n
    return parts


def jacrev(func, argnums=0, *, has_aux=False, chunk_size=None):
    """The Jacobian of ``func`` by reverse mode: ``vmap`` of its vjp over the rows of the
    identity (one batched backward pass).

    Parameters
    ----------
    func : callable
        Returns a Tensor or a pytree of Tensors (with ``has_aux``: ``(output, aux)``).
    argnums : int or tuple of ints
    has_aux : bool
    chunk_size : int, optional
        Push at most this many basis vectors per batched pass (less memory).

    Returns
    -------
    callable
        Returns the Jacobian: for an output ``o`` and an input ``x``, a tensor of shape
        ``o.shape + x.shape``; nested as the outputs (outer) and the ``argnums`` (inner).

    Examples
    --------
    >>> import ndgrad
    >>> from ndgrad.func import jacrev
    >>> jacrev(lambda x: x ** 2)(ndgrad.tensor([1.0, 2.0]))
    tensor([[2., 0.],
            [0., 4.]])
    """
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        who = "jacrev"
        f, diff = _restrict(func, argnums, args, kwargs, who)
        res = vjp(f, *diff, has_aux=has_aux)
        out, vjp_fn = res[0], res[1]
        oleaves, ospec = tree_flatten(out)
        ileaves, ispec = tree_flatten(diff)
        if not oleaves:
            raise RuntimeError(f"{who}: f returned no tensors")
        ref = oleaves[0]
        if len(oleaves) == 1 and ref.numel() == 1:
            # one output element: its Jacobian is its gradient, one plain vjp (no vmap level,
            # which would cost more than the vjp under an enclosing transform, e.g. hessian)
            cleaves = tree_flatten(vjp_fn(tree_unflatten(ospec, [ones_like(ref)])))[0]
            oshape = tuple(ref.shape)
            per_in = [c if not oshape else TENSOR_F.reshape(c, oshape + tuple(x.shape))
                      for c, x in zip(cleaves, ileaves)]
            j = tree_unflatten(ispec, per_in)
            result = tree_unflatten(ospec, [j[0] if isinstance(argnums, int) else j])
            return (result, res[2]) if has_aux else result
        basis = _basis(oleaves)

        def pull(*rows):
            return vjp_fn(tree_unflatten(ospec, list(rows)))
        cols = vmap(pull, chunk_size=chunk_size)(*basis)  # per input: (N_out, *in_shape)
        cleaves = tree_flatten(cols)[0]
        jac = []
        start = 0
        for o in oleaves:
            n = o.numel()
            per_in = [TENSOR_F.reshape(c[start:start + n], tuple(o.shape) + tuple(x.shape))
                      for c, x in zip(cleaves, ileaves)]
            start += n
            j = tree_unflatten(ispec, per_in)
            jac.append(j[0] if isinstance(argnums, int) else j)
        result = tree_unflatten(ospec, jac)
        return (result, res[2]) if has_aux else result
    return wrapper


def jacfwd(func, argnums=0, *, has_aux=False, randomness="error"):
    """The Jacobian of ``func`` by forward mode: ``vmap`` of :func:`jvp` over the columns of
    the identity (one batched forward pass).

    Parameters
    ----------
    func : callable
    argnums : int or tuple of ints
    has_aux : bool
    randomness : {"error", "different", "same"}
        Passed to ``vmap`` (random ops inside ``func``).

    Returns
    -------
    callable
        Returns the Jacobian with the structure of :func:`jacrev`'s.

    Examples
    --------
    >>> import ndgrad
    >>> from ndgrad.func import jacfwd
    >>> jacfwd(lambda x: ndgrad.stack([x[0] * x[1], x[0]]))(ndgrad.tensor([2.0, 3.0]))
    tensor([[3., 2.],
            [1., 0.]])
    """
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        who = "jacfwd"
        f, diff = _restrict(func, argnums, args, kwargs, who)
        ileaves, ispec = tree_flatten(diff)
        _check_leaves(ileaves, who)
        basis = _basis(ileaves)

        def push(*cols):
            tangents = tree_unflatten(ispec, list(cols))
            r = jvp(f, diff, tangents, has_aux=has_aux)
            return (r[1], r[2]) if has_aux else r[1]
        out_dims = (0, None) if has_aux else 0
        res = vmap(push, out_dims=out_dims, randomness=randomness)(*basis)
        tans, aux = (res[0], res[1]) if has_aux else (res, None)
        tleaves, tspec = tree_flatten(tans)  # per output: (N_in, *out_shape)
        jac = []
        for t in tleaves:
            oshape = tuple(t.shape[1:])
            per_in = []
            start = 0
            for x in ileaves:
                n = x.numel()
                block = t[start:start + n]                      # (n, *out_shape)
                block = TENSOR_F.moveaxis(block, 0, -1)          # (*out_shape, n)
                per_in.append(TENSOR_F.reshape(block, oshape + tuple(x.shape)))
                start += n
            j = tree_unflatten(ispec, per_in)
            jac.append(j[0] if isinstance(argnums, int) else j)
        result = tree_unflatten(tspec, jac)
        return (result, aux) if has_aux else result
    return wrapper


def hessian(func, argnums=0):
    """The Hessian of a scalar function: ``jacfwd(jacrev(func))`` (forward over reverse).

    Examples
    --------
    >>> import ndgrad
    >>> from ndgrad.func import hessian
    >>> hessian(lambda x: (x ** 3).sum())(ndgrad.tensor([1.0, 2.0]))   # diag(6x)
    tensor([[ 6.,  0.],
            [ 0., 12.]])
    """
    return jacfwd(jacrev(func, argnums), argnums)
