"""ndgrad.signal (SciPy's scipy.signal): values against SciPy for every mode, method and
boundary; derivatives against finite differences with respect to every differentiable
argument (both convolution inputs; lfilter's b, a, x and zi, reverse and forward mode, and
second order); vmap against a loop. (tests/test_signal.py is NumPy's signal functions.)"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.signal as ss

import ndgrad
from ndgrad import signal
from ndgrad.checks import gradcheck, gradgradcheck
from ndgrad.func import jacfwd, jacrev, vmap
from support import close, fd_hessian, fd_jacobian, host

T = ndgrad.tensor


def _rng(seed=0):
    return np.random.default_rng(seed)


def _req(*arrays):
    return tuple(T(a, requires_grad=True) for a in arrays)


# ------------------------------------------------------------------------------- convolutions
_SHAPES = [((7,), (3,)), ((3,), (6,)), ((4,), (4,)), ((5, 6), (2, 3)), ((2, 3), (4, 5)),
           ((4, 3, 5), (2, 3, 2))]


def test_convolve_and_correlate_match_scipy_for_every_mode_and_method():
    rng = _rng(1)
    for s1, s2 in _SHAPES:
        for cplx in (False, True):
            a, v = rng.normal(size=s1), rng.normal(size=s2)
            if cplx:
                a = a + 1j * rng.normal(size=s1)
                v = v + 1j * rng.normal(size=s2)
            for mode in ("full", "same", "valid"):
                valid_ok = all(x >= y for x, y in zip(s1, s2)) or all(
                    x <= y for x, y in zip(s1, s2))
                if mode == "valid" and not valid_ok:
                    continue
                for method in ("direct", "fft", "auto"):
                    for ours, theirs in ((signal.convolve, ss.convolve),
                                         (signal.correlate, ss.correlate)):
                        close(ours(T(a), T(v), mode, method), theirs(a, v, mode, method),
                              atol=1e-12)


def test_convolve_large_input_takes_fft_under_auto_and_agrees():
    rng = _rng(2)
    a, v = rng.normal(size=300), rng.normal(size=100)
    close(signal.convolve(T(a), T(v)), ss.convolve(a, v), atol=1e-11)
    close(signal.correlate(T(a), T(v), "same"), ss.correlate(a, v, "same"), atol=1e-11)


def test_fftconvolve_axes_and_oaconvolve_match_scipy():
    rng = _rng(3)
    a, v = rng.normal(size=(3, 8, 2)), rng.normal(size=(1, 3, 2))
    for mode in ("full", "same", "valid"):
        for axes in (None, 1, (0, 1), [-2]):
            ax = axes
            close(signal.fftconvolve(T(a), T(v), mode, ax), ss.fftconvolve(a, v, mode, ax),
                  atol=1e-12)
            close(signal.oaconvolve(T(a), T(v), mode, ax), ss.oaconvolve(a, v, mode, ax),
                  atol=1e-12)
    with pytest.raises(ValueError, match="every dimension"):
        signal.fftconvolve(T(np.ones((2, 3))), T(np.ones((3, 2))), "valid")


@pytest.mark.parametrize("boundary", ["fill", "wrap", "symm"])
def test_convolve2d_and_correlate2d_match_scipy(boundary):
    rng = _rng(4)
    for s1, s2 in (((5, 6), (2, 3)), ((4, 4), (3, 3)), ((2, 3), (3, 4))):
        a, v = rng.normal(size=s1), rng.normal(size=s2)
        for mode in ("full", "same", "valid"):
            for fill in (0, 1.5):
                for ours, theirs in ((signal.convolve2d, ss.convolve2d),
                                     (signal.correlate2d, ss.correlate2d)):
                    close(ours(T(a), T(v), mode, boundary, fill),
                          theirs(a, v, mode, boundary, fill), atol=1e-12)
    a = rng.normal(size=(4, 5)) + 1j * rng.normal(size=(4, 5))
    v = rng.normal(size=(2, 2)) + 1j * rng.normal(size=(2, 2))
    close(signal.correlate2d(T(a), T(v), "same", boundary),
          ss.correlate2d(a, v, "same", boundary), atol=1e-12)


@pytest.mark.cpu_only("finite differences: the values are checked on every device")
def test_convolution_gradients_in_both_inputs():
    rng = _rng(5)
    a, v = _req(rng.normal(size=(4, 3)), rng.normal(size=(2, 2)))
    for method in ("direct", "fft"):
        for mode in ("full", "same", "valid"):
            gradcheck(lambda a, v, mode=mode, method=method:
                      signal.convolve(a, v, mode, method), (a, v))
        gradcheck(lambda a, v, method=method: signal.correlate(a, v, "same", method), (a, v))
    (w,) = _req(rng.normal(size=(1, 2)))
    gradcheck(lambda a, w: signal.fftconvolve(a, w, "same", axes=1), (a, w))
    for boundary in ("fill", "wrap", "symm"):
        gradcheck(lambda a, v, bd=boundary: signal.convolve2d(a, v, "same", bd), (a, v))
        gradcheck(lambda a, v, bd=boundary: signal.correlate2d(a, v, "full", bd, 2.0), (a, v))
    # the vjp of a convolution is a correlation: forward mode agrees too
    gradcheck(lambda a, v: signal.convolve(a, v, "full", "direct"), (a, v),
              check_forward_ad=True, check_backward_ad=False)
    c, w = _req(rng.normal(size=5) + 1j * rng.normal(size=5), rng.normal(size=3) + 0j)
    gradcheck(lambda c, w: signal.correlate(c, w, "same", "fft"), (c, w))


def test_vmap_of_convolve_matches_a_loop():
    rng = _rng(6)
    xs, k = rng.normal(size=(4, 9)), rng.normal(size=3)
    for method in ("direct", "fft"):
        got = vmap(lambda x, method=method: signal.convolve(x, T(k), "same", method))(T(xs))
        close(got, np.stack([ss.convolve(x, k, "same") for x in xs]), atol=1e-12)
    # batched kernel and signal together
    ks = rng.normal(size=(4, 3))
    got = vmap(lambda x, k: signal.correlate(x, k, "valid"))(T(xs), T(ks))
    close(got, np.stack([ss.correlate(x, k, "valid") for x, k in zip(xs, ks)]), atol=1e-12)


def test_convolution_errors_name_the_problem():
    with pytest.raises(ValueError, match="mode"):
        signal.convolve(T([1.0]), T([1.0]), mode="middle")
    with pytest.raises(ValueError, match="method"):
        signal.convolve(T([1.0]), T([1.0]), method="slow")
    with pytest.raises(ValueError, match="correlate: method must be"):
        signal.correlate(T(1.0), T(2.0), method="slow")  # (checked before the 0-d shortcut)
    with pytest.raises(ValueError, match="dimensionality"):
        signal.convolve(T([1.0]), T([[1.0]]))
    with pytest.raises(ValueError, match="at least as large"):
        signal.convolve(T(np.ones((2, 3))), T(np.ones((3, 2))), "valid")
    with pytest.raises(ValueError, match="2-D"):
        signal.convolve2d(T([1.0]), T([1.0]))
    with pytest.raises(ValueError, match="boundary"):
        signal.convolve2d(T(np.ones((2, 2))), T(np.ones((2, 2))), boundary="mirror")


# ------------------------------------------------------------------------------- lfilter
_FILTERS = [([0.5, 0.2], [1.0, -0.6, 0.2]),       # len(a) > len(b)
            ([0.3, 0.1, -0.2, 0.05], [2.0, 0.4]),  # len(b) > len(a), a[0] != 1
            ([0.7], [1.0]),                       # K = 0
            ([0.2, 0.3, 0.1], [1.0])]             # FIR


def test_lfilter_matches_scipy_with_and_without_state():
    rng = _rng(7)
    for b, a in _FILTERS:
        k = max(len(a), len(b)) - 1
        for shape, axis in (((9,), -1), ((3, 8), 1), ((6, 2), 0), ((2,), 0)):
            x = rng.normal(size=shape)
            close(signal.lfilter(T(b), T(a), T(x), axis), ss.lfilter(b, a, x, axis))
            zshape = list(shape)
            zshape[axis] = k
            zi = rng.normal(size=zshape)
            y, zf = signal.lfilter(b, a, T(x), axis, T(zi))
            ey, ezf = ss.lfilter(b, a, x, axis, zi)
            close(y, ey)
            close(zf, ezf)


@pytest.mark.cpu_only("finite differences: the values are checked on every device")
def test_lfilter_derivatives_in_b_a_x_and_zi():
    rng = _rng(8)
    for b, a in _FILTERS[:2]:
        k = max(len(a), len(b)) - 1
        for n in (6, 2):  # also shorter than the state (zf then carries zi)
            bb, aa, x, zi = _req(np.array(b), np.array(a), rng.normal(size=(2, n)),
                                 rng.normal(size=(2, k)))
            gradcheck(lambda b, a, x, zi: signal.lfilter(b, a, x, -1, zi), (bb, aa, x, zi),
                      check_forward_ad=True)
        gradcheck(lambda b, a, x: signal.lfilter(b, a, x, 0), (bb, aa, x.detach().T.clone()
                                                               .requires_grad_()),
                  check_forward_ad=True)
    bb, aa, x, zi = _req(np.array([0.5, 0.2]), np.array([1.0, -0.6, 0.2]),
                         rng.normal(size=5), rng.normal(size=2))
    gradgradcheck(lambda b, a, x, zi: signal.lfilter(b, a, x, -1, zi)[0], (bb, aa, x, zi))


@pytest.mark.cpu_only("SciPy runs on the host; the values are checked on every device")
def test_lfilter_under_vmap_and_jacrev():
    rng = _rng(9)
    b, a = np.array([0.3, 0.1, -0.2]), np.array([1.5, 0.4])
    xs = rng.normal(size=(3, 7))
    got = vmap(lambda x: signal.lfilter(T(b), T(a), x))(T(xs))
    close(got, np.stack([ss.lfilter(b, a, x) for x in xs]))
    # batched coefficients: one filter per batch element
    as_ = np.array([[1.0, 0.3], [2.0, -0.5], [1.2, 0.1]])
    got = vmap(lambda a, x: signal.lfilter(T(b), a, x))(T(as_), T(xs))
    close(got, np.stack([ss.lfilter(b, a, x) for a, x in zip(as_, xs)]))
    # the Jacobian in a by reverse mode against central differences of SciPy
    x = xs[0]
    jac = jacrev(lambda a: signal.lfilter(T(b), a, T(x)))(T(a))
    fd = fd_jacobian(lambda a_: ss.lfilter(b, a_, x), a)
    close(jac, fd, rtol=1e-7, atol=1e-8)


@pytest.mark.cpu_only("finite differences: the values are checked on every device")
def test_sosfilt_values_and_derivatives():
    rng = _rng(10)
    sos = ss.butter(4, 0.2, output="sos")
    x = rng.normal(size=(2, 12))
    close(signal.sosfilt(T(sos), T(x)), ss.sosfilt(sos, x), rtol=1e-10, atol=1e-12)
    zi = rng.normal(size=(2, 2, 2))
    y, zf = signal.sosfilt(T(sos), T(x), -1, T(zi))
    ey, ezf = ss.sosfilt(sos, x, -1, zi)
    close(y, ey, rtol=1e-10, atol=1e-12)
    close(zf, ezf, rtol=1e-10, atol=1e-12)
    s, xx, z = _req(sos, x[:, :5], zi)
    gradcheck(lambda s, x, z: signal.sosfilt(s, x, -1, z), (s, xx, z))


def test_lfilter_errors_name_the_problem():
    x = T(np.ones(4))
    with pytest.raises(ValueError, match="zi must have shape"):
        signal.lfilter(T([1.0, 2.0, 3.0]), T([1.0]), x, -1, T(np.zeros(3)))
    with pytest.raises(ValueError, match="1-D"):
        signal.lfilter(T([[1.0]]), T([1.0]), x)
    with pytest.raises(TypeError, match="complex"):
        signal.lfilter(T([1.0]), T([1.0, 0.5]), T(np.ones(3) + 1j))


# ------------------------------------------------------------------------------- spectral
def test_detrend_matches_scipy():
    rng = _rng(11)
    x = rng.normal(size=(3, 10))
    for kw in ({}, {"type": "constant"}, {"bp": [4]}, {"bp": [3, 7], "axis": 1},
               {"axis": 0}):
        close(signal.detrend(T(x), **kw), ss.detrend(x, **kw))


def test_stft_and_welch_match_scipy():
    rng = _rng(12)
    x = rng.normal(size=(2, 40))
    for kw in ({"nperseg": 16}, {"nperseg": 10, "noverlap": 3, "nfft": 12},
               {"nperseg": 8, "boundary": "even", "padded": False},
               {"nperseg": 8, "boundary": "odd", "window": "hamming"},
               {"nperseg": 8, "boundary": None, "detrend": "linear", "scaling": "psd",
                "fs": 3.0}):
        f, t, z = signal.stft(T(x), **kw)
        ef, et, ez = ss.stft(x, **kw)
        close(f, ef)
        close(t, et)
        close(z, ez, atol=1e-12)
    f, t, z = signal.stft(T(x.T), nperseg=8, axis=0)
    close(z, ss.stft(x.T, nperseg=8, axis=0)[2], atol=1e-12)
    for kw in ({"nperseg": 16}, {"nperseg": 8, "noverlap": 2, "nfft": 11},
               {"nperseg": 9, "detrend": "linear", "scaling": "spectrum", "fs": 2.0},
               {"window": "hann", "nperseg": 12, "detrend": False}):
        f, p = signal.welch(T(x), **kw)
        ef, ep = ss.welch(x, **kw)
        close(f, ef)
        close(p, ep, atol=1e-12)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        close(signal.welch(T(x))[1], ss.welch(x)[1], atol=1e-12)  # nperseg 256 > 40


@pytest.mark.cpu_only("finite differences: the values are checked on every device")
def test_detrend_stft_welch_gradients():
    rng = _rng(13)
    (x,) = _req(rng.normal(size=(2, 12)))
    gradcheck(lambda x: signal.detrend(x, bp=[5]), (x,))
    gradcheck(lambda x: signal.stft(x, nperseg=6, boundary="odd")[2], (x,))
    gradcheck(lambda x: signal.welch(x, nperseg=6, detrend="linear")[1], (x,))


def test_windows_are_scipys():
    for name, args in (("hann", (7,)), ("hamming", (6, False)), ("blackman", (5,)),
                       ("kaiser", (8, 4.0)), ("tukey", (9, 0.3)), ("dpss", (10, 2.0))):
        close(getattr(signal.windows, name)(*args), getattr(ss.windows, name)(*args))
    close(signal.get_window(("kaiser", 3.0), 9), ss.get_window(("kaiser", 3.0), 9))
    close(signal.get_window("hann", 8, fftbins=False), ss.get_window("hann", 8, False))
    assert host(signal.windows.hann(4)).dtype == np.float64


# ------------------------------------------------------------------------------- istft
def test_istft_matches_scipy_and_inverts_stft():
    rng = _rng(14)
    x = rng.normal(size=(2, 40))
    for kw in ({"nperseg": 16}, {"nperseg": 10, "noverlap": 3, "nfft": 12},
               {"nperseg": 8, "noverlap": 6, "window": "hamming"},
               {"nperseg": 9, "noverlap": 2, "scaling": "psd", "fs": 3.0}, {"nperseg": 7}):
        z = ss.stft(x, **kw)[2]
        t, y = signal.istft(T(z), **kw)
        et, ey = ss.istft(z, **kw)
        close(t, et)
        close(y, ey, atol=1e-13)
        # the round trip through ndgrad's stft gives the signal back
        close(signal.istft(signal.stft(T(x), **kw)[2], **kw)[1][..., :40], x, atol=1e-13)
    z = rng.normal(size=(3, 9, 6)) + 1j * rng.normal(size=(3, 9, 6))
    for kw in ({"time_axis": 0, "freq_axis": 1}, {"time_axis": 1, "freq_axis": -1},
               {"input_onesided": False, "boundary": False}, {"freq_axis": 0},
               {"window": ss.get_window("hann", 16), "noverlap": 12}):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # NOLA fails on some of these
            t, y = signal.istft(T(z), **kw)
            et, ey = ss.istft(z, **kw)
        close(t, et)
        close(y, ey, atol=1e-13)
    with pytest.warns(UserWarning, match="NOLA"):
        signal.istft(T(z[0]), window=np.r_[np.zeros(8), np.ones(8)], noverlap=0)
    with pytest.raises(ValueError, match="noverlap"):
        signal.istft(T(z[0]), noverlap=16)
    with pytest.raises(ValueError, match="differ"):
        signal.istft(T(z), time_axis=1, freq_axis=-2)
    with pytest.raises(ValueError, match="length of nperseg"):
        signal.istft(T(z[0]), window=np.ones(5))


@pytest.mark.cpu_only("finite differences: the values are checked on every device")
def test_istft_gradient_in_zxx_and_vmap():
    rng = _rng(15)
    (z,) = _req(rng.normal(size=(2, 5, 4)) + 1j * rng.normal(size=(2, 5, 4)))
    gradcheck(lambda z: signal.istft(z, noverlap=5)[1], (z,))
    gradcheck(lambda z: signal.istft(z, window="hamming", input_onesided=False, nperseg=5,
                                     noverlap=2, boundary=False)[1], (z,),
              check_forward_ad=True)
    zs = rng.normal(size=(3, 9, 6)) + 1j * rng.normal(size=(3, 9, 6))
    got = vmap(lambda z: signal.istft(z, nperseg=16, noverlap=10)[1])(T(zs))
    close(got, np.stack([ss.istft(z, nperseg=16, noverlap=10)[1] for z in zs]), atol=1e-13)


# ------------------------------------------------------------------------------- filtfilt
def test_filtfilt_and_steady_states_match_scipy():
    rng = _rng(16)
    x = rng.normal(size=(3, 30))
    b, a = [1.0, 2.0], [0.0, 2.0, 0.5]  # leading zeros of a are dropped
    close(signal.lfilter_zi(T(b), T(a)), ss.lfilter_zi(b, a[1:]))  # (SciPy 1.18 refuses a[0] = 0)
    for b, a in _FILTERS[:2] + [_FILTERS[3]]:
        close(signal.lfilter_zi(T(b), T(a)), ss.lfilter_zi(b, a))
        for kw in ({}, {"padtype": "even"}, {"padtype": "constant", "padlen": 5},
                   {"padtype": None}, {"padlen": 0}, {"axis": 0, "padlen": 2}):
            close(signal.filtfilt(T(b), T(a), T(x), **kw), ss.filtfilt(b, a, x, **kw),
                  atol=1e-13)
    sos = ss.butter(4, 0.2, output="sos")
    close(signal.sosfilt_zi(T(sos)), ss.sosfilt_zi(sos))
    for kw in ({}, {"padtype": "even"}, {"padtype": None}, {"axis": 0, "padlen": 2}):
        close(signal.sosfiltfilt(T(sos), T(x), **kw), ss.sosfiltfilt(sos, x, **kw),
              rtol=1e-10, atol=1e-13)
    with pytest.raises(ValueError, match="padlen"):
        signal.filtfilt(T([1.0, 0.5]), T([1.0, 0.2]), T(np.ones(6)))
    with pytest.raises(ValueError, match="padtype"):
        signal.filtfilt(T([1.0]), T([1.0, 0.2]), T(x), padtype="wrap")
    with pytest.raises(ValueError, match="method"):
        signal.filtfilt(T([1.0]), T([1.0, 0.2]), T(x), method="gustafsson")
    with pytest.raises(ValueError, match="irlen"):
        signal.filtfilt(T([1.0]), T([1.0, 0.2]), T(x), method="gust", irlen=0)
    with pytest.raises(ValueError, match="nonzero"):
        signal.lfilter_zi(T([1.0]), T([0.0, 0.0]))


@pytest.mark.cpu_only("finite differences: the values are checked on every device")
def test_filtfilt_derivatives_in_b_a_x_and_vmap():
    rng = _rng(17)
    b, a = _req(np.array([0.5, 0.2]), np.array([1.2, -0.6, 0.2]))
    gradcheck(signal.lfilter_zi, (b, a))
    (x,) = _req(rng.normal(size=(2, 11)))
    gradcheck(lambda b, a, x: signal.filtfilt(b, a, x), (b, a, x))
    gradcheck(lambda b, a, x: signal.filtfilt(b, a, x, 0, "even", 1), (b, a, x))
    (s,) = _req(ss.butter(2, 0.3, output="sos"))
    gradcheck(lambda s: signal.sosfilt_zi(s), (s,))
    gradcheck(lambda s, x: signal.sosfiltfilt(s, x, padlen=4), (s, x))
    xs = rng.normal(size=(3, 20))
    bb, aa = np.array([0.3, 0.1, -0.2]), np.array([1.5, 0.4])
    got = vmap(lambda x: signal.filtfilt(T(bb), T(aa), x))(T(xs))
    close(got, np.stack([ss.filtfilt(bb, aa, x) for x in xs]), atol=1e-13)


def test_filtfilt_gust_matches_scipy():
    rng = _rng(18)
    ellip = ss.ellip(4, 0.01, 120, 0.125)
    for b, a in _FILTERS + [ellip]:
        for shape, axis, irlen in (((40,), -1, None), ((3, 30), 1, None), ((50, 2), 0, 10),
                                   ((40,), -1, 25), ((3,), 0, None)):
            x = rng.normal(size=shape)
            close(signal.filtfilt(T(b), T(a), T(x), axis=axis, method="gust", irlen=irlen),
                  ss.filtfilt(b, a, x, axis=axis, method="gust", irlen=irlen), atol=1e-12)


@pytest.mark.cpu_only("finite differences: the values are checked on every device")
def test_filtfilt_gust_derivatives_in_b_a_x_and_compositions():
    rng = _rng(19)
    b, a = _req(np.array([0.5, 0.2]), np.array([1.2, -0.6, 0.2]))
    (x,) = _req(rng.normal(size=(2, 12)))
    gradcheck(lambda b, a, x: signal.filtfilt(b, a, x, method="gust"), (b, a, x),
              check_forward_ad=True)
    gradcheck(lambda b, a, x: signal.filtfilt(b, a, x, axis=1, method="gust", irlen=4),
              (b, a, x))
    bb, aa = np.array([0.3, 0.1, -0.2]), np.array([1.5, 0.4])
    xs = rng.normal(size=(3, 20))
    got = vmap(lambda x: signal.filtfilt(T(bb), T(aa), x, method="gust"))(T(xs))
    close(got, np.stack([ss.filtfilt(bb, aa, x, method="gust") for x in xs]), atol=1e-12)

    def f(a):
        return signal.filtfilt(T(bb), a, T(xs[0]), method="gust")
    close(jacrev(f)(T(aa)), jacfwd(f)(T(aa)))
    fd = fd_jacobian(lambda a_: ss.filtfilt(bb, a_, xs[0], method="gust"), aa)
    close(jacrev(f)(T(aa)), fd, rtol=1e-6, atol=1e-8)


def test_a_zero_leading_denominator_coefficient_is_refused_as_scipy_does():
    """``a[0] == 0`` is a ValueError naming the function (SciPy 1.17's lfilter and filtfilt
    raise "filter coefficient a[0] == 0 not supported"; its sosfilt wants sos[:, 3] == 1),
    also for one batch element under vmap, and never an inf or nan output; a nonzero a[0]
    still gives SciPy's values."""
    x = np.linspace(-1.0, 1.0, 20)
    with pytest.raises(ValueError, match="a\\[0\\] == 0 not supported"):
        ss.lfilter([1.0], [0.0, 1.0], x)  # (the behaviour matched)
    for b, a in (([1.0], [0.0, 1.0]), ([1.0, 2.0], [0.0]), ([1.0], [0.0]), ([0.5], [0.0, 0.0])):
        with pytest.raises(ValueError, match="ndgrad.signal.lfilter: filter coefficient "
                                             "a\\[0\\] == 0 not supported"):
            signal.lfilter(T(b), T(a), T(x))
    with pytest.raises(ValueError, match="ndgrad.signal.lfilter: filter coefficient a\\[0\\]"):
        signal.lfilter(T([1.0]), T([0.0, 0.5]), T(x), -1, T([0.0]))
    for method in ("pad", "gust"):
        with pytest.raises(ValueError, match="a\\[0\\] == 0 not supported"):
            ss.filtfilt([1.0, 0.5], [0.0, 1.0], x, method=method)
        with pytest.raises(ValueError, match="ndgrad.signal.filtfilt: filter coefficient "
                                             "a\\[0\\] == 0"):
            signal.filtfilt(T([1.0, 0.5]), T([0.0, 1.0]), T(x), method=method)
    sos = np.array([[1.0, 0.2, 0.0, 1.0, -0.5, 0.0], [1.0, 0.0, 0.0, 0.0, 1.0, 0.0]])
    with pytest.raises(ValueError, match="sos\\[:, 3\\] should be all ones"):
        ss.sosfiltfilt(sos, x)
    for fn in (signal.sosfilt, signal.sosfiltfilt):
        with pytest.raises(ValueError, match=f"ndgrad.signal.{fn.__name__}: filter "
                                             "coefficient sos\\[1, 3\\] == 0 not supported"):
            fn(T(sos), T(x))
    # one batch element's a[0] == 0 under vmap: refused there too (not a row of inf)
    as_ = T([[1.0, -0.5], [0.0, 1.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # (NumPy's division by zero)
        with pytest.raises(ValueError, match="ndgrad.signal.lfilter: .*a / a\\[0\\] = "
                                             "\\[1.0, inf\\], is not finite: filter "
                                             "coefficient a\\[0\\] == 0 not supported"):
            vmap(lambda a: signal.lfilter(T([1.0]), a, T(x)))(as_)
    good = T([[1.0, -0.5], [2.0, 1.0]])
    got = vmap(lambda a: signal.lfilter(T([1.0]), a, T(x)))(good)
    close(got, np.stack([ss.lfilter([1.0], a, x) for a in host(good)]))


def test_a_batch_element_with_a_zero_leading_coefficient_is_refused_under_vmap(loop_warnings):
    """Under vmap over the coefficients, where no host rule reads a (lfilter with one
    coefficient each, lfilter_zi, filtfilt's gain, sosfilt_zi), a batch element with a[0] ==
    0 is refused as the call without vmap refuses it, naming the function and the element's
    coefficients (Note [Coefficients checked under vmap]; it was a row of inf or nan); the
    other batches give SciPy's values per element."""
    x = np.linspace(-1.0, 1.0, 12)
    element = "in a batch element of vmap, whose coefficients are "
    with pytest.warns(UserWarning, match="vmap: ndgrad.signal.lfilter's check of its "
                                         "coefficients runs once per batch element"):
        with pytest.raises(ValueError, match="ndgrad.signal.lfilter: filter coefficient "
                                             f"a\\[0\\] == 0 not supported.*{element}"
                                             "\\[0.0\\]"):
            vmap(lambda a: signal.lfilter(T([1.0]), a, T(x)))(T([[2.0], [0.0]]))
    with pytest.raises(ValueError, match=f"ndgrad.signal.lfilter: .*{element}\\[0.0\\]"):
        vmap(lambda b, a: signal.lfilter(b, a, T(x)))(T([[1.0], [3.0]]), T([[2.0], [0.0]]))
    bs, as_ = np.array([[1.0], [3.0]]), np.array([[2.0], [-4.0]])
    close(vmap(lambda b, a: signal.lfilter(b, a, T(x)))(T(bs), T(as_)),
          np.stack([ss.lfilter(b, a, x) for b, a in zip(bs, as_)]))
    # lfilter_zi: without vmap, a's leading zeros are dropped (SciPy's values) and an a of
    # zeros is refused; under vmap neither can be done for one element
    close(signal.lfilter_zi(T([1.0, 0.5]), T([0.0, 1.0])), ss.lfilter_zi([1.0, 0.5],
                                                                          [0.0, 1.0]))
    with pytest.raises(ValueError, match="ndgrad.signal.lfilter_zi: a\\[0\\] == 0 "
                                         f"{element}\\[0.0, 1.0\\]: without vmap the "
                                         "leading zeros of a are dropped"):
        vmap(lambda a: signal.lfilter_zi(T([1.0, 0.5]), a))(T([[1.0, -0.5], [0.0, 1.0]]))
    with pytest.raises(ValueError, match="ndgrad.signal.lfilter_zi: there must be at least "
                                         f"one nonzero `a` coefficient; {element}"
                                         "\\[0.0, 0.0\\]"):
        vmap(lambda a: signal.lfilter_zi(T([1.0, 0.5]), a))(T([[1.0, -0.5], [0.0, 0.0]]))
    good = np.array([[1.0, -0.5], [2.0, 0.3]])
    close(vmap(lambda a: signal.lfilter_zi(T([1.0, 0.5]), a))(T(good)),
          np.stack([ss.lfilter_zi([1.0, 0.5], a) for a in good]))
    # filtfilt names itself (its gain (b[0] / a[0]) ** 2 with one coefficient each, and the
    # steady state it takes from lfilter_zi)
    for method, b, bad in (("gust", [1.0], [[2.0], [0.0]]), ("pad", [1.0], [[2.0], [0.0]]),
                           ("pad", [1.0, 0.3], [[1.0, -0.5], [0.0, 0.3]])):
        with pytest.raises(ValueError, match="ndgrad.signal.filtfilt: filter coefficient "
                                             f"a\\[0\\] == 0 not supported.*{element}"):
            vmap(lambda a, b=b, m=method: signal.filtfilt(T(b), a, T(x), method=m,
                                                          padlen=3))(T(bad))
    close(vmap(lambda a: signal.filtfilt(T([1.0]), a, T(x), method="gust"))(T([[2.0], [-4.0]])),
          np.stack([ss.filtfilt([1.0], a, x, method="gust") for a in ([2.0], [-4.0])]))
    # second-order sections: sosfilt and sosfilt_zi name themselves and the section
    soss = np.array([[[1.0, 0.2, 0.0, 1.0, -0.5, 0.0]], [[1.0, 0.2, 0.0, 0.0, -0.5, 0.0]]])
    with pytest.raises(ValueError, match="ndgrad.signal.sosfilt: filter coefficient "
                                         f"sos\\[0, 3\\] == 0 not supported.*{element}"):
        vmap(lambda s: signal.sosfilt(s, T(x)))(T(soss))
    with pytest.raises(ValueError, match="ndgrad.signal.sosfilt_zi: sos\\[0, 3\\] == 0 "
                                         f"{element}"):
        vmap(signal.sosfilt_zi)(T(soss))
    soss[1, 0, 3] = 2.0
    close(vmap(signal.sosfilt_zi)(T(soss)), np.stack([ss.sosfilt_zi(s / s[0, 3])
                                                       for s in soss]))


@pytest.mark.cpu_only("finite differences: the values are checked on every device")
def test_hessian_through_lfilter_by_jacrev_of_grad_names_lfilter(loop_warnings):
    """jacrev(grad(loss)) runs lfilter's rules under vmap, once per batch element (as
    documented): the warning names ndgrad.signal.lfilter and asks for no report, and the
    Hessian in the denominator is central second differences of SciPy's lfilter."""
    from ndgrad.func import grad, hessian

    x = _rng(20).normal(size=12)
    b, a0 = np.array([0.5, 0.2]), np.array([1.0, -0.4, 0.1])

    def loss(a):
        return (signal.lfilter(T(b), a, T(x)) ** 2).sum()
    with pytest.warns(UserWarning, match="vmap: ndgrad.signal.lfilter runs once per batch "
                                         "element \\(a Python loop\\): SciPy's lfilter runs "
                                         "on host arrays \\(as documented\\)") as seen:
        H = jacrev(grad(loss))(T(a0))
    assert not [w for w in seen if "report" in str(w.message) or "_Custom" in str(w.message)]

    def loss_np(a):
        return (ss.lfilter(b, a, x) ** 2).sum()
    fd = fd_hessian(loss_np, a0, h=1e-4)
    close(H, fd, rtol=1e-6, atol=1e-5)
    close(hessian(loss)(T(a0)), H, rtol=1e-10)


@pytest.mark.cpu_only("SciPy runs on the host; the values are checked on every device")
def test_filtfilt_and_sosfiltfilt_under_vmap_over_the_coefficients():
    """A batch of denominators (sections) under vmap: filtfilt's steady state no longer reads
    one value of a (it failed: numpy() of a batched tensor); sosfiltfilt's default padlen
    depends on each sos's zeros, so it asks for padlen; the values are SciPy's per row."""
    x = _rng(21).normal(size=20)
    as_ = np.array([[1.0, -0.5], [2.0, 0.3]])
    got = vmap(lambda a: signal.filtfilt(T([1.0, 0.3]), a, T(x)))(T(as_))
    close(got, np.stack([ss.filtfilt([1.0, 0.3], a, x) for a in as_]), atol=1e-13)
    soss = np.array([[[1.0, 0.2, 0.0, 1.0, -0.5, 0.1]], [[1.0, 0.1, 0.0, 1.0, -0.3, 0.05]]])
    got = vmap(lambda s: signal.sosfiltfilt(s, T(x), padlen=4))(T(soss))
    close(got, np.stack([ss.sosfiltfilt(s, x, padlen=4) for s in soss]), atol=1e-13)
    with pytest.raises(ValueError, match="sosfiltfilt: under vmap with a batch of sos, pass "
                                         "padlen"):
        vmap(lambda s: signal.sosfiltfilt(s, T(x)))(T(soss))
