"""ndgrad.fft: identities, closed forms and error messages.

The registry-driven suites (tests/test_op_properties.py, tests/test_op_batching.py,
tests/forward_ad) check every transform's forward against NumPy and its vjp, jvp, second order
and batching rule on drawn inputs. Here: round trips, values against ``numpy.fft`` on
hand-picked arguments, gradients against closed forms (Parseval, the DFT matrix) and against
central finite differences written out, and the messages of bad arguments.
"""

from __future__ import annotations

import numpy as np
import pytest

import ndgrad
from ndgrad.func import hessian, jacfwd, jacrev, vmap
from support import fd_gradient, val

NORMS = [None, "backward", "ortho", "forward"]
rng = np.random.default_rng(20260107)


def _real(*shape):
    return rng.standard_normal(shape)


def _complex(*shape):
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


def _grad(f, x):
    """Gradient of the real scalar ``f(x)`` at the array ``x``."""
    t = ndgrad.tensor(x, requires_grad=True)
    f(t).backward()
    return t.grad.cpu().numpy()


# ----------------------------------------------------------------------------- round trips
@pytest.mark.parametrize("norm", NORMS)
def test_ifft_inverts_fft(norm):
    x = _complex(3, 5)
    for axis in (0, 1, -1):
        y = ndgrad.fft.ifft(ndgrad.fft.fft(ndgrad.tensor(x), axis=axis, norm=norm), axis=axis,
                            norm=norm)
        np.testing.assert_allclose(val(y), x, rtol=1e-12, atol=1e-12)
    y = ndgrad.fft.ifftn(ndgrad.fft.fftn(ndgrad.tensor(x), norm=norm), norm=norm)
    np.testing.assert_allclose(val(y), x, rtol=1e-12, atol=1e-12)
    y = ndgrad.fft.ifft2(ndgrad.fft.fft2(ndgrad.tensor(x), norm=norm), norm=norm)
    np.testing.assert_allclose(val(y), x, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("n", [1, 2, 5, 6, 7, 8])
def test_irfft_inverts_rfft_for_even_and_odd_n(norm, n):
    x = _real(2, n)
    X = ndgrad.fft.rfft(ndgrad.tensor(x), norm=norm)
    assert X.shape == (2, n // 2 + 1)
    np.testing.assert_allclose(val(ndgrad.fft.irfft(X, n=n, norm=norm)), x, atol=1e-12)
    x3 = _real(3, 4, n)
    X3 = ndgrad.fft.rfftn(ndgrad.tensor(x3), norm=norm)
    back = ndgrad.fft.irfftn(X3, s=(3, 4, n), norm=norm)
    np.testing.assert_allclose(val(back), x3, atol=1e-12)
    back2 = ndgrad.fft.irfft2(ndgrad.fft.rfft2(ndgrad.tensor(x3), norm=norm), s=(4, n),
                              norm=norm)
    np.testing.assert_allclose(val(back2), x3, atol=1e-12)


@pytest.mark.parametrize("norm", NORMS)
def test_ihfft_inverts_hfft(norm):
    for n in (4, 5):
        x = _real(n)
        z = ndgrad.fft.ihfft(ndgrad.tensor(x), norm=norm)
        np.testing.assert_allclose(val(ndgrad.fft.hfft(z, n=n, norm=norm)), x, atol=1e-12)


def test_fftshift_and_ifftshift_invert_each_other():
    for shape in [(5,), (4,), (3, 4), (2, 5, 3)]:
        x = ndgrad.tensor(_real(*shape))
        for axes in (None, 0, (0,), (-1, 0)[: len(shape)]):
            a = ndgrad.fft.ifftshift(ndgrad.fft.fftshift(x, axes=axes), axes=axes)
            b = ndgrad.fft.fftshift(ndgrad.fft.ifftshift(x, axes=axes), axes=axes)
            np.testing.assert_array_equal(val(a), val(x))
            np.testing.assert_array_equal(val(b), val(x))
            np.testing.assert_array_equal(val(ndgrad.fft.fftshift(x, axes=axes)),
                                          np.fft.fftshift(val(x), axes=axes))
            np.testing.assert_array_equal(val(ndgrad.fft.ifftshift(x, axes=axes)),
                                          np.fft.ifftshift(val(x), axes=axes))
    # odd lengths: the two shifts differ
    x = ndgrad.tensor([0.0, 1.0, 2.0, 3.0, 4.0])
    np.testing.assert_array_equal(val(ndgrad.fft.fftshift(x)), [3.0, 4.0, 0.0, 1.0, 2.0])
    np.testing.assert_array_equal(val(ndgrad.fft.ifftshift(x)), [2.0, 3.0, 4.0, 0.0, 1.0])


# ----------------------------------------------------------------------------- values
CASES = [
    ("fft", (3, 6), {}), ("fft", (3, 6), {"n": 4, "axis": 0, "norm": "ortho"}),
    ("fft", (5,), {"n": 9, "norm": "forward"}),
    ("ifft", (4, 5), {"n": 3, "norm": "backward"}), ("ifft", (7,), {"n": 10}),
    ("rfft", (2, 7), {}), ("rfft", (2, 7), {"n": 4, "axis": 1, "norm": "ortho"}),
    ("rfft", (6, 3), {"n": 11, "axis": 0}),
    ("irfft", (2, 4), {}), ("irfft", (2, 4), {"n": 7, "norm": "forward"}),
    ("irfft", (5, 3), {"n": 2, "axis": 0}),
    ("hfft", (3, 4), {}), ("hfft", (3, 4), {"n": 5, "norm": "ortho"}),
    ("ihfft", (3, 6), {}), ("ihfft", (3, 5), {"n": 8, "norm": "forward"}),
    ("fft2", (2, 3, 4), {}), ("fft2", (2, 3, 4), {"s": (5, 2), "axes": (0, 2)}),
    ("ifft2", (3, 4), {"s": (2, 6), "norm": "ortho"}),
    ("rfft2", (3, 5), {}), ("rfft2", (2, 3, 5), {"s": (4, 3), "axes": (2, 0)}),
    ("irfft2", (3, 4), {}), ("irfft2", (3, 4), {"s": (2, 7), "norm": "forward"}),
    ("fftn", (2, 3, 4), {}), ("fftn", (2, 3, 4), {"s": (3, -1), "axes": (0, 2)}),
    ("fftn", (2, 3, 4), {"axes": (-1, 0), "norm": "forward"}),
    ("ifftn", (2, 3, 4), {"s": (1, 5, 2), "axes": (0, 1, 2)}),
    ("rfftn", (2, 3, 4), {}), ("rfftn", (3, 4), {"s": (5, 2), "axes": (1, 0)}),
    ("irfftn", (2, 3, 4), {}), ("irfftn", (3, 4), {"s": (5, 3), "axes": (1, 0)}),
    ("irfftn", (3, 4), {"s": (-1, -1), "axes": (0, 1), "norm": "ortho"}),
]


@pytest.mark.parametrize("name, shape, kw", CASES)
def test_values_match_numpy(name, shape, kw):
    x = _real(*shape) if name in ("rfft", "ihfft", "rfft2", "rfftn") else _complex(*shape)
    got = getattr(ndgrad.fft, name)(ndgrad.tensor(x), **kw)
    expected = getattr(np.fft, name)(x, **kw)
    assert got.shape == expected.shape and got.dtype == expected.dtype
    np.testing.assert_allclose(val(got), expected, rtol=1e-12, atol=1e-12)


def test_real_input_to_complex_transforms_and_dtypes():
    x = _real(6).astype(np.float32)
    y = ndgrad.fft.fft(ndgrad.tensor(x))
    assert y.dtype == ndgrad.complex64
    np.testing.assert_allclose(val(y), np.fft.fft(x), rtol=1e-5)
    t = ndgrad.tensor(x, requires_grad=True)
    ndgrad.fft.rfft(t).abs().sum().backward()
    assert t.grad.dtype == ndgrad.float32
    assert ndgrad.fft.irfft(ndgrad.fft.rfft(ndgrad.tensor(x))).dtype == ndgrad.float32
    # integers transform (as NumPy), and do not require grad
    i = ndgrad.fft.fft(ndgrad.tensor([1, 2, 3, 4]))
    np.testing.assert_allclose(val(i), [10, -2 + 2j, -2, -2 - 2j])
    assert not i.requires_grad


def test_empty_axes_is_a_complex_copy():
    x = ndgrad.tensor([1.0, 2.0], requires_grad=True)
    y = ndgrad.fft.fftn(x, axes=())
    assert y.dtype == ndgrad.complex128
    np.testing.assert_array_equal(val(y), [1.0, 2.0])
    y.real.sum().backward()
    np.testing.assert_array_equal(x.grad.cpu().numpy(), [1.0, 1.0])


def test_pytorch_dim_spelling():
    x = _complex(3, 4)
    np.testing.assert_allclose(val(ndgrad.fft.fft(ndgrad.tensor(x), dim=0)),
                               np.fft.fft(x, axis=0), atol=1e-12)
    np.testing.assert_allclose(val(ndgrad.fft.fftn(ndgrad.tensor(x), dim=(1,))),
                               np.fft.fftn(x, axes=(1,)), atol=1e-12)
    np.testing.assert_allclose(val(ndgrad.fft.fftshift(ndgrad.tensor(x), dim=1)),
                               np.fft.fftshift(x, axes=1))


def test_fftfreq_and_rfftfreq_match_numpy():
    for n in (1, 2, 5, 8):
        for d in (1.0, 0.1, 2.5):
            np.testing.assert_array_equal(ndgrad.fft.fftfreq(n, d).cpu().numpy(),
                                          np.fft.fftfreq(n, d))
            np.testing.assert_array_equal(ndgrad.fft.rfftfreq(n, d=d).cpu().numpy(),
                                          np.fft.rfftfreq(n, d))
    f = ndgrad.fft.fftfreq(4, dtype=ndgrad.float32)
    assert f.dtype == ndgrad.float32 and not f.requires_grad
    np.testing.assert_array_equal(f.cpu().numpy(), [0.0, 0.25, -0.5, -0.25])
    assert ndgrad.fft.fftfreq(0).shape == (0,)
    assert ndgrad.fft.rfftfreq(3, requires_grad=True).requires_grad
    # the default dtype, as PyTorch
    ndgrad.set_default_dtype(ndgrad.float32)
    try:
        assert ndgrad.fft.rfftfreq(4).dtype == ndgrad.float32
    finally:
        ndgrad.set_default_dtype(ndgrad.float64)
    assert ndgrad.fft.rfftfreq(4).dtype == ndgrad.float64


# ----------------------------------------------------------------------------- gradients
@pytest.mark.parametrize("norm, p", [(None, 1), ("backward", 1), ("ortho", 0),
                                     ("forward", -1)])
def test_gradient_of_energy_is_parseval(norm, p):
    # sum |fft(x)|^2 = N^p sum |x|^2: N for "backward", Parseval for "ortho", 1/N "forward";
    # so its gradient is 2 N^p x (PyTorch's convention for complex x as well)
    for x in (_real(6), _complex(6), _real(3, 4), _complex(2, 3)):
        N = x.size
        got = _grad(lambda t, norm=norm: ndgrad.fft.fftn(t, norm=norm).abs().square().sum(), x)
        np.testing.assert_allclose(got, 2 * float(N) ** p * x, rtol=1e-12, atol=1e-12)
    # the inverse transform scales the other way round
    x = _complex(5)
    got = _grad(lambda t: ndgrad.fft.ifft(t, norm=norm).abs().square().sum(), x)
    np.testing.assert_allclose(got, 2 * 5.0 ** -p * x, rtol=1e-12)


def test_gradient_when_n_pads_or_crops():
    x = _real(5)
    # padding to M: sum |fft(x, M)|^2 = M sum |x|^2
    got = _grad(lambda t: ndgrad.fft.fft(t, n=8).abs().square().sum(), x)
    np.testing.assert_allclose(got, 2 * 8 * x, rtol=1e-12)
    # cropping to 3: only the kept samples matter
    got = _grad(lambda t: ndgrad.fft.fft(t, n=3).abs().square().sum(), x)
    np.testing.assert_allclose(got, 2 * 3 * np.concatenate([x[:3], [0.0, 0.0]]), atol=1e-12)
    got = _grad(lambda t: ndgrad.fft.fftn(t, s=(2, 6), axes=(0, 1), norm="ortho").abs()
                .square().sum(), _real(3, 4))
    assert got.shape == (3, 4)
    np.testing.assert_allclose(got[2], 0.0)


def test_gradient_of_a_linear_functional_is_the_conjugate_transform():
    # L = Re(sum c * fft(z)) = Re(c^T W z), W symmetric: PyTorch's gradient is conj(W c)
    c = _complex(7)
    for z in (_complex(7), _real(7)):
        got = _grad(lambda t: ndgrad.real((ndgrad.tensor(c) * ndgrad.fft.fft(t)).sum()), z)
        expected = np.conj(np.fft.fft(c))
        np.testing.assert_allclose(got, expected.real if z.dtype.kind == "f" else expected,
                                   rtol=1e-12)


def test_jacobian_is_the_dft_matrix():
    n = 5
    W = np.exp(-2j * np.pi * np.outer(np.arange(n), np.arange(n)) / n)
    z = ndgrad.tensor(_complex(n))
    np.testing.assert_allclose(val(jacfwd(ndgrad.fft.fft)(z)), W, atol=1e-12)
    np.testing.assert_allclose(val(jacfwd(lambda t: ndgrad.fft.ifft(t, norm="forward"))(z)),
                               np.conj(W), atol=1e-12)
    x = ndgrad.tensor(_real(n))
    # the real Jacobian of rfft: the first n // 2 + 1 rows of W
    J = jacrev(lambda t: ndgrad.real(ndgrad.fft.rfft(t)))(x)
    np.testing.assert_allclose(val(J), W[: n // 2 + 1].real, atol=1e-12)
    J = jacrev(lambda t: ndgrad.imag(ndgrad.fft.rfft(t)))(x)
    np.testing.assert_allclose(val(J), W[: n // 2 + 1].imag, atol=1e-12)


def test_hessian_of_energy():
    x = ndgrad.tensor(_real(4))
    H = hessian(lambda t: ndgrad.fft.rfft(t, norm="ortho").abs().square().sum())(x)
    # sum_{k < 3} |X_k|^2 = x^T Re(W_h^H W_h) x, W_h the first 3 rows of the unitary DFT
    Wh = np.exp(-2j * np.pi * np.outer(np.arange(3), np.arange(4)) / 4) / 2
    np.testing.assert_allclose(val(H), 2 * (Wh.conj().T @ Wh).real, atol=1e-12)


@pytest.mark.parametrize("n", [4, 5, 6, 7, None])
@pytest.mark.parametrize("norm", NORMS)
def test_rfft_gradient_matches_finite_differences(n, norm):
    x = _real(2, 6)
    c = _complex(2, (n or 6) // 2 + 1)

    def loss_np(a):
        return np.sum(np.real(np.conj(c) * np.fft.rfft(a, n=n, norm=norm)) +
                      np.abs(np.fft.rfft(a, n=n, norm=norm)) ** 2)

    def loss(t):
        X = ndgrad.fft.rfft(t, n=n, norm=norm)
        return (ndgrad.real(ndgrad.conj(ndgrad.tensor(c)) * X) + X.abs().square()).sum()

    np.testing.assert_allclose(_grad(loss, x), fd_gradient(loss_np, x), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("n", [3, 4, 5, 8])
@pytest.mark.parametrize("name", ["irfft", "hfft"])
def test_half_spectrum_inputs_gradient_matches_finite_differences(name, n):
    z = _complex(2, 3)
    w = _real(2, n)
    fwd_np, fwd = getattr(np.fft, name), getattr(ndgrad.fft, name)

    def loss_np(a):
        y = fwd_np(a, n=n)
        return np.sum(w * y + y ** 2)

    def loss(t):
        y = fwd(t, n=n)
        return (ndgrad.tensor(w) * y + y * y).sum()

    got = _grad(loss, z)
    np.testing.assert_allclose(got, fd_gradient(loss_np, z), rtol=1e-6, atol=1e-7)
    if name == "irfft":  # the imaginary part of the zero bin (and even n's Nyquist) is unused
        assert np.all(got[:, 0].imag == 0)


def test_shift_gradients_are_the_inverse_shift():
    w = _real(3, 5)
    for axes in (None, 1, (0,), (1, 0)):
        got = _grad(lambda t, axes=axes: (ndgrad.tensor(w) * ndgrad.fft.fftshift(t, axes=axes))
                    .sum(), _real(3, 5))
        np.testing.assert_array_equal(got, np.fft.ifftshift(w, axes=axes))
        got = _grad(lambda t, axes=axes: (ndgrad.tensor(w) * ndgrad.fft.ifftshift(t, axes=axes))
                    .sum(), _real(3, 5))
        np.testing.assert_array_equal(got, np.fft.fftshift(w, axes=axes))


def test_vmap_and_per_example_gradients():
    xs = _real(4, 3, 6)
    got = vmap(lambda x: ndgrad.fft.rfftn(x, axes=(0, 1), norm="ortho"))(ndgrad.tensor(xs))
    np.testing.assert_allclose(val(got), np.fft.rfftn(xs, axes=(1, 2), norm="ortho"),
                               atol=1e-12)
    got = vmap(lambda x: ndgrad.fft.fftn(x))(ndgrad.tensor(xs))  # axes=None: the element's
    np.testing.assert_allclose(val(got), np.fft.fftn(xs, axes=(1, 2)), atol=1e-12)
    grads = vmap(ndgrad.func.grad(lambda x: ndgrad.fft.fft(x).abs().square().sum()))(
        ndgrad.tensor(xs))
    np.testing.assert_allclose(val(grads), 2 * 6 * xs, rtol=1e-12)


def test_backward_saves_no_input():
    # the vjp rules read only the input's shape: changing it in place is fine
    x = ndgrad.tensor(_real(4), requires_grad=True)
    h = x * 1.0
    y = ndgrad.fft.rfft(h)
    h.mul_(2.0)
    ndgrad.real(y).sum().backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), [3.0, 0.0, 1.0, 0.0], atol=1e-12)


# ----------------------------------------------------------------------------- errors
def test_bad_norm():
    x = ndgrad.ones(4)
    msg = r'fft: norm=\'bad\' is not a normalization mode; use "backward" \(the default'
    with pytest.raises(ValueError, match=msg):
        ndgrad.fft.fft(x, norm="bad")
    for name in ("ifft", "rfft", "irfft", "hfft", "ihfft", "fftn", "rfftn", "irfftn"):
        with pytest.raises(ValueError, match=f"^{name}: norm='Ortho' is not"):
            getattr(ndgrad.fft, name)(x, norm="Ortho")
    with pytest.raises(ValueError, match="fft2: norm=1 is not a normalization mode"):
        ndgrad.fft.fft2(ndgrad.ones(2, 2), norm=1)


def test_bad_n_and_s():
    x = ndgrad.ones(4)
    with pytest.raises(ValueError, match=r"fft: n=0 is not a valid number of data points; "
                                         r"n must be a positive int"):
        ndgrad.fft.fft(x, n=0)
    with pytest.raises(ValueError, match="rfft: n=-1 is not a valid number"):
        ndgrad.fft.rfft(x, n=-1)
    with pytest.raises(TypeError, match="ifft: n must be an int or None, got 2.5"):
        ndgrad.fft.ifft(x, n=2.5)
    with pytest.raises(ValueError, match=r"irfft: the default output length 2 \* \(m - 1\) "
                                         r"is 0 for m = 1 input bin; give n"):
        ndgrad.fft.irfft(ndgrad.ones(1))
    with pytest.raises(ValueError, match=r"irfftn: the output length along axis 1, "
                                         r"2 \* \(m - 1\) for m = 1 input bins, is 0"):
        ndgrad.fft.irfftn(ndgrad.ones(3, 1))
    m = ndgrad.ones(2, 3)
    with pytest.raises(ValueError, match=r"fftn: s=\(2, 3, 4\) has 3 lengths but the input "
                                         r"has only 2 dimensions"):
        ndgrad.fft.fftn(m, s=(2, 3, 4))
    with pytest.raises(ValueError, match=r"fftn: s=\(2,\) and axes=\(0, 1\) must have the "
                                         r"same length"):
        ndgrad.fft.fftn(m, s=(2,), axes=(0, 1))
    with pytest.raises(ValueError, match="ifftn: invalid transform length 0 along axis 0"):
        ndgrad.fft.ifftn(m, s=(0, 2), axes=(0, 1))
    with pytest.raises(TypeError, match="fftn: s must be an int or a sequence of ints"):
        ndgrad.fft.fftn(m, s=(2.0, 3.0), axes=(0, 1))


def test_bad_axes_and_inputs():
    m = ndgrad.ones(2, 3)
    with pytest.raises(ValueError, match="fft: axis 2 is out of bounds for an input of "
                                         "dimension 2"):
        ndgrad.fft.fft(m, axis=2)
    with pytest.raises(TypeError, match="fft: axis must be an int, got 1.5"):
        ndgrad.fft.fft(m, axis=1.5)
    with pytest.raises(ValueError, match="fft: the input is 0-d"):
        ndgrad.fft.fft(ndgrad.tensor(1.0))
    with pytest.raises(ValueError, match=r"fftn: axes=\(0, 0\) repeats an axis"):
        ndgrad.fft.fftn(m, axes=(0, -2))
    with pytest.raises(ValueError, match="fft2: axis -3 is out of bounds"):
        ndgrad.fft.fft2(m, axes=(-3, 0))
    with pytest.raises(ValueError, match="rfftn: needs at least one axis to transform"):
        ndgrad.fft.rfftn(m, axes=())
    with pytest.raises(TypeError, match="rfft: expects a real input, got complex128; use "
                                        "ndgrad.fft.fft for complex input"):
        ndgrad.fft.rfft(ndgrad.ones(3, dtype=ndgrad.complex128))
    with pytest.raises(TypeError, match="ihfft: expects a real input"):
        ndgrad.fft.ihfft(ndgrad.ones(3, dtype=ndgrad.complex128))
    with pytest.raises(TypeError, match="rfftn: expects a real input"):
        ndgrad.fft.rfftn(ndgrad.ones(3, dtype=ndgrad.complex128))
    with pytest.raises(ValueError, match="ifftshift: axis 2 is out of bounds"):
        ndgrad.fft.ifftshift(m, axes=2)


def test_bad_frequency_arguments():
    with pytest.raises(ValueError, match="fftfreq: n=-1 is negative"):
        ndgrad.fft.fftfreq(-1)
    with pytest.raises(TypeError, match=r"rfftfreq: n must be an int \(the number of "
                                        r"samples\), got 3.0"):
        ndgrad.fft.rfftfreq(3.0)
    with pytest.raises(ValueError, match="fftfreq: d=0 is not a sample spacing"):
        ndgrad.fft.fftfreq(3, d=0)
    with pytest.raises(TypeError, match="fftfreq: d must be a real number"):
        ndgrad.fft.fftfreq(3, d="x")
    with pytest.raises(TypeError, match="rfftfreq: dtype int64 is not a floating or complex "
                                        "dtype"):
        ndgrad.fft.rfftfreq(3, dtype=ndgrad.int64)


def test_namespace():
    names = {"fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "rfft2",
             "irfft2", "fftn", "ifftn", "rfftn", "irfftn", "fftshift", "ifftshift", "fftfreq",
             "rfftfreq"}
    assert set(ndgrad.fft.__all__) == names
    for name in names:
        f = getattr(ndgrad.fft, name)
        assert f.__module__ == "ndgrad.fft" and "Examples" in f.__doc__
        assert not hasattr(ndgrad, name) or name == "fft"  # not at the top level
    assert ndgrad.fft.fft.__name__ == "fft"
