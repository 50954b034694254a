"""``ndgrad.func``: composable transforms in the style of ``torch.func`` and JAX.

``grad``, ``grad_and_value``, ``vjp``, ``jvp``, ``linearize``, ``jacrev``, ``jacfwd``,
``hessian`` (``ndgrad/functional/transforms.py``), ``vmap``
(``ndgrad/functional/vmap.py``), Taylor mode's ``jet`` and ``derivatives``
(``ndgrad/functional/taylor.py``) and the differential operators ``laplacian``,
``divergence``, ``hessian_diag``, ``hessian_trace_estimate`` and ``biharmonic``
(``ndgrad/functional/operators.py``). They nest in any order. Custom derivative rules
``custom_vjp``, ``custom_jvp`` and implicit differentiation ``custom_root``,
``custom_fixed_point`` (``ndgrad/functional/custom.py``) compose with all of them.

Examples
--------
>>> import ndgrad
>>> from ndgrad.func import grad, vmap
>>> xs = ndgrad.tensor([[1.0, 2.0], [3.0, 4.0]])
>>> vmap(grad(lambda x: (x ** 2).sum()))(xs)        # per-example gradients
tensor([[2., 4.],
        [6., 8.]])
"""

from __future__ import annotations

from .functional.compiler import compile  # noqa: A004  (ndgrad.func.compile, as jax.jit)
from .functional.custom import custom_fixed_point, custom_jvp, custom_root, custom_vjp
from .functional.pytree import tree_flatten, tree_map, tree_unflatten
from .functional.transforms import (grad, grad_and_value, hessian, jacfwd, jacrev, jvp,
                                    linearize, vjp)
from .functional.operators import (biharmonic, divergence, hessian_diag,
                                   hessian_trace_estimate, laplacian)
from .functional.sparse_derivatives import (coloring, sparse_hessian, sparse_jacfwd,
                                            sparse_jacobian, sparse_jacrev)
from .functional.sparsity import hessian_sparsity, jacobian_sparsity
from .functional.taylor import derivatives, jet
from .functional.vmap import vmap
from .utils.checkpoint import checkpointed as _checkpointed

__all__ = ["grad", "grad_and_value", "vjp", "jvp", "linearize", "jacrev", "jacfwd", "hessian",
           "vmap", "checkpoint", "jet", "derivatives", "laplacian", "divergence",
           "hessian_diag", "hessian_trace_estimate", "biharmonic", "tree_flatten",
           "tree_unflatten", "tree_map", "custom_vjp", "custom_jvp", "custom_root",
           "custom_fixed_point", "jacobian_sparsity", "hessian_sparsity", "sparse_jacobian",
           "sparse_jacfwd", "sparse_jacrev", "sparse_hessian", "coloring", "compile"]


def checkpoint(fun, *, preserve_rng_state=True, determinism_check="default"):
    """``fun`` made to checkpoint itself (JAX's ``jax.checkpoint``, or ``remat``): called
    with tensors that require grad, it keeps none of the values its operations save for
    backward, and backward runs it again to get them
    (:func:`ndgrad.utils.checkpoint.checkpoint`).

    It composes with ``grad``, ``vjp``, ``jvp`` and ``vmap``, which give the same values as
    without it; inside those transforms the values of the transform are saved as usual,
    so the memory saving applies to ``.backward()`` and ``autograd.grad``.

    Examples
    --------
    >>> import ndgrad
    >>> f = ndgrad.func.checkpoint(lambda v: ndgrad.sin(v).sum())
    >>> x = ndgrad.tensor([0.0, 1.0], requires_grad=True)
    >>> f(x).backward()
    >>> x.grad
    tensor([1.        , 0.54030231])
    >>> ndgrad.func.grad(f)(ndgrad.tensor([0.0, 1.0]))
    tensor([1.        , 0.54030231])
    """
    return _checkpointed(fun, preserve_rng_state=preserve_rng_state,
                         determinism_check=determinism_check)
