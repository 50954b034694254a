"""ndgrad.core: the Tensor, the op registry, dispatch and the reverse-mode engine."""
