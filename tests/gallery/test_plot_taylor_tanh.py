"""examples/gallery/plot_taylor_tanh.py: its six derivatives of tanh against the closed forms
written out here (in t = tanh x) and the first two against central differences."""

from __future__ import annotations

import numpy as np
import pytest

from support import run_example

pytestmark = pytest.mark.cpu_only("the gallery runs on the default device")


def test_the_derivatives_of_tanh_match_their_closed_forms():
    g = run_example("plot_taylor_tanh")
    x, taylor = g["x"], g["taylor"]
    t = np.tanh(x)
    s = 1 - t ** 2
    expected = [t, s, -2 * t * s, s * (6 * t ** 2 - 2), s * (16 * t - 24 * t ** 3),
                s * (16 - 120 * t ** 2 + 120 * t ** 4),
                s * (-272 * t + 960 * t ** 3 - 720 * t ** 5)]
    assert taylor.shape == (7, x.size)
    np.testing.assert_allclose(taylor, np.stack(expected), rtol=1e-12, atol=1e-12)
    h = 1e-5
    np.testing.assert_allclose(taylor[1], (np.tanh(x + h) - np.tanh(x - h)) / (2 * h),
                               rtol=1e-8, atol=1e-9)
    np.testing.assert_allclose(taylor[2], (np.tanh(x + h) - 2 * t + np.tanh(x - h)) / h ** 2,
                               rtol=1e-4, atol=1e-5)
    assert np.max(g["max_error"]) < 1e-12
