"""``ndgrad.func``: composable transforms in the style of ``torch.func`` and JAX.

``grad``, ``grad_and_value``, ``vjp``, ``jvp``, ``linearize``, ``jacrev``, ``jacfwd``,
``hessian`` (``ndgrad/functional/transforms.py``) and ``vmap``
(``ndgrad/functional/vmap.py``). They nest in any order.

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

from .functional.pytree import tree_flatten, tree_map, tree_unflatten
from .functional.transforms import (grad, grad_and_value, hessian, jacfwd, jacrev, jvp,
                                    linearize, vjp)
from .functional.vmap import vmap

__all__ = ["grad", "grad_and_value", "vjp", "jvp", "linearize", "jacrev", "jacfwd", "hessian",
           "vmap", "tree_flatten", "tree_unflatten", "tree_map"]
