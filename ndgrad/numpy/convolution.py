"""NumPy's one-dimensional ``convolve`` and ``correlate``, written from primitives.
"""

from __future__ import annotations

from ..core.ops.registry import LINALG, defcomposite
from ._arraylike import _ANYC, _arr, _check_1d, _conj


def _sample_convolve(d):
    return (d.array((d.integers(1, 5),)), d.array((d.integers(1, 4),))), {
        "mode": d.choice(["full", "same", "valid"])}


@defcomposite(kind=LINALG, nin=2, domain=_ANYC, sample=_sample_convolve)
def convolve(F, a, v, mode="full"):
    """Discrete linear convolution of two 1-D tensors (NumPy's modes "full", "same",
    "valid"); differentiable in both.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.convolve(ndgrad.tensor([1.0, 2.0, 3.0]), ndgrad.tensor([0.0, 1.0, 0.5]))
    tensor([0. , 1. , 2.5, 4. , 1.5])
    """
    if len(a.shape) != 1 or len(v.shape) != 1:
        raise ValueError("convolve: both inputs must be 1-D")
    if mode not in ("full", "same", "valid"):
        raise ValueError(f"convolve: mode must be 'full', 'same' or 'valid', got {mode!r}")
    if a.shape[0] < v.shape[0]:
        a, v = v, a
    n, m = a.shape[0], v.shape[0]
    out = None
    for j in range(m):  # v[j] times a shifted by j
        parts = [a]
        if j:
            parts.insert(0, F.zeros((j,), dtype=a.dtype, like=a))
        if m - 1 - j:
            parts.append(F.zeros((m - 1 - j,), dtype=a.dtype, like=a))
        term = v[j] * (F.concat(parts, axis=0) if len(parts) > 1 else a)
        out = term if out is None else out + term
    if mode == "full":
        return out
    if mode == "same":
        start = (m - 1) // 2
        return out[start:start + n]
    return out[m - 1:n]


def _sample_correlate(d):
    return (d.array((d.integers(1, 5),)), d.array((d.integers(1, 5),))), {
        "mode": d.choice(["full", "same", "valid"])}


@defcomposite(kind=LINALG, nin=2, domain=_ANYC, sample=_sample_correlate, method=False)
def correlate(F, a, v, mode="valid"):
    """Cross-correlation of two 1-D tensors, ``c[k] = sum_n a[n + k] conj(v[n])``, with
    NumPy's modes "valid" (the default), "same" and "full" (and NumPy's windows when ``v`` is
    the longer); differentiable in both.

    Examples
    --------
    >>> import ndgrad
    >>> ndgrad.correlate(ndgrad.tensor([1.0, 2.0, 3.0]), ndgrad.tensor([0.0, 1.0, 0.5]))
    tensor([3.5])
    >>> ndgrad.correlate(ndgrad.tensor([1.0, 2.0, 3.0]), ndgrad.tensor([0.0, 1.0, 0.5]), "full")
    tensor([0.5, 2. , 3.5, 3. , 0. ])
    """
    a, v = _arr(F, a), _arr(F, v)
    _check_1d("correlate", "both inputs", a, v)
    if a.shape[0] == 0 or v.shape[0] == 0:
        raise ValueError(f"correlate: {'a' if a.shape[0] == 0 else 'v'} cannot be empty")
    if mode not in ("full", "same", "valid"):
        raise ValueError(f"correlate: mode must be 'valid', 'same' or 'full', got {mode!r}")
    n, m = a.shape[0], v.shape[0]
    full = F.convolve(a, F.flip(_conj(F, v), axis=0), mode="full")
    if mode == "full":
        return full
    if mode == "valid":
        return full[min(n, m) - 1:max(n, m)]
    start = (m - 1) // 2 if n >= m else n - 1 - (n - 1) // 2
    return full[start:start + max(n, m)]
