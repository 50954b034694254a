"""Helpers the tests share: conversions that work on every device (Note [Devices in the test
suite] in tests/conftest.py)."""

from __future__ import annotations

import numpy as np

import ndgrad as nd


def host(x):
    """``x`` (a Tensor on any device, an array, a number, or a tuple/list of them) as NumPy,
    for comparison with a NumPy reference."""
    if isinstance(x, nd.Tensor):
        return x.detach().cpu().numpy()
    if isinstance(x, (tuple, list)):
        return type(x)(host(e) for e in x)
    backend = nd.core.backend.backend_of(x) if hasattr(x, "dtype") else None
    if backend is not None and backend is not nd.core.backend.NUMPY:
        return backend.to_numpy(x)
    return np.asarray(x)


def on_device(kwargs):
    """An op sample's keyword arguments with its float/complex NumPy arrays (such as
    ``special.logsumexp``'s ``b``) made tensors on the default device, where that is not the
    CPU: a GPU op refuses host arrays, as CuPy does. Index arrays stay (they may be host)."""
    if nd.get_default_device() == "cpu":
        return kwargs
    return {k: nd.tensor(v, dtype=v.dtype)
            if isinstance(v, np.ndarray) and v.dtype.kind in "fc" else v
            for k, v in kwargs.items()}


def close(a, b, **kw):
    """Assert ``a`` (a Tensor on any device, an array or a number) is close to the NumPy
    reference ``b``."""
    np.testing.assert_allclose(host(a), b, **kw)
