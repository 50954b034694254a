"""PyTorch's spellings beside NumPy's: ``dim=``/``keepdim=`` keywords, the Tensor methods
``unsqueeze view flatten expand narrow t mm permute``, and ``randn_like``/``rand_like``;
values against NumPy, gradients against closed forms, and PyTorch's errors."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import ndgrad as nd
from ndgrad.core.ops import COMPOSITES, REGISTRY
from support import close, val

A = np.arange(24.0).reshape(2, 3, 4)


def test_dim_is_axis_wherever_a_function_takes_an_axis():
    x = nd.tensor(A)
    close(nd.concat([x, x], dim=1), np.concatenate([A, A], axis=1))
    close(nd.cat([x, x], dim=-1), np.concatenate([A, A], axis=-1))
    close(nd.stack([x, x], dim=1), np.stack([A, A], axis=1))
    close(nd.sum(x, dim=2, keepdim=True), A.sum(axis=2, keepdims=True))
    close(nd.flip(x, dim=0), np.flip(A, axis=0))
    close(x.sum(dim=0), A.sum(axis=0))
    with pytest.raises(TypeError, match="got both 'dim' and 'axis'"):
        nd.concat([x, x], dim=0, axis=1)
    # every registered function with an axis takes dim (the registry, not a hand list)
    for entry in list(REGISTRY.values()) + list(COMPOSITES.values()):
        fn = getattr(entry, "fn", None) or entry.forward

        if "axis" in inspect.signature(fn).parameters:
            assert (entry.kwarg_aliases or {}).get("dim") == "axis", entry.qualname


def test_unsqueeze_flatten_permute_t_values_and_gradients():
    x = nd.tensor(A, requires_grad=True)
    close(x.unsqueeze(1), np.expand_dims(A, 1))
    close(x.unsqueeze(-1), A[..., None])
    close(x.flatten(), A.ravel())
    close(x.flatten(1), A.reshape(2, 12))
    close(x.flatten(0, 1), A.reshape(6, 4))
    close(nd.tensor(3.0).flatten(), [3.0])
    close(x.permute(2, 0, 1), A.transpose(2, 0, 1))
    close(x.permute((1, 0, 2)), A.transpose(1, 0, 2))
    m = nd.tensor(A[0], requires_grad=True)
    close(m.t(), A[0].T)
    close(nd.tensor([1.0, 2.0]).t(), [1.0, 2.0])
    w = np.arange(4.0).reshape(1, 4, 1) + 1
    (g,) = nd.autograd.grad((x.permute(0, 2, 1).flatten(1).unsqueeze(0) ** 2).sum(), x)
    close(g, 2 * A)
    (g,) = nd.autograd.grad((x * nd.tensor(w).permute(0, 2, 1)).sum(), x)
    close(g, np.broadcast_to(w.transpose(0, 2, 1), A.shape))


def test_view_never_copies():
    x = nd.tensor(np.arange(6.0), requires_grad=True)
    v = x.view(2, 3)
    close(v, np.arange(6.0).reshape(2, 3))
    close(x.view((3, -1)), np.arange(6.0).reshape(3, 2))
    (g,) = nd.autograd.grad((v * nd.tensor([[1.0], [2.0]])).sum(), x)
    close(g, [1, 1, 1, 2, 2, 2])
    with pytest.raises(RuntimeError, match=r"use \.reshape"):
        v.t().view(6)
    with pytest.raises(TypeError, match="integer sizes"):
        x.view(2.0, 3)


def test_expand_and_narrow():
    c = np.array([[1.0], [2.0], [3.0]])
    x = nd.tensor(c, requires_grad=True)
    e = x.expand(2, -1, 4)
    close(e, np.broadcast_to(c, (2, 3, 4)))
    (g,) = nd.autograd.grad(e.sum(), x)
    close(g, np.full((3, 1), 8.0))
    with pytest.raises(RuntimeError, match="must be greater or equal"):
        x.expand(4)
    with pytest.raises(RuntimeError, match="-1 is not allowed"):
        x.expand(-1, 3, 1)
    y = nd.tensor(A, requires_grad=True)
    n = y.narrow(2, 1, 2)
    close(n, A[:, :, 1:3])
    close(y.narrow(-1, -2, 2), A[..., 2:4])
    (g,) = nd.autograd.grad(n.sum(), y)
    expected = np.zeros_like(A)
    expected[:, :, 1:3] = 1
    close(g, expected)
    with pytest.raises(IndexError, match="exceeds dimension size"):
        y.narrow(0, 1, 2)
    with pytest.raises(IndexError, match="dimension out of range"):
        y.narrow(3, 0, 1)


def test_t_and_mm_refuse_what_pytorch_refuses():
    a = nd.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    b = nd.tensor([[0.5], [-1.0]])
    close(a.mm(b), np.array([[1.0, 2.0], [3.0, 4.0]]) @ np.array([[0.5], [-1.0]]))
    (g,) = nd.autograd.grad(a.mm(b).sum(), a)
    close(g, [[0.5, -1.0], [0.5, -1.0]])
    with pytest.raises(RuntimeError, match="mat2 must be a matrix"):
        a.mm(nd.ones(2))
    with pytest.raises(RuntimeError, match=r"t\(\) expects a tensor with <= 2 dimensions"):
        nd.ones((2, 2, 2)).t()


def test_randn_like_and_rand_like():
    x = nd.zeros((200, 50), dtype=nd.float32)
    r = nd.randn_like(x)
    assert r.shape == (200, 50) and r.dtype == np.float32 and r.device == x.device
    rv = val(r)
    assert abs(rv.mean()) < 0.05 and abs(rv.std() - 1) < 0.05
    u = val(nd.rand_like(x, dtype=nd.float64))
    assert u.dtype == np.float64 and u.min() >= 0 and u.max() < 1 and abs(u.mean() - 0.5) < 0.02
    assert nd.randn_like(x, requires_grad=True).requires_grad
