"""examples/gallery/plot_property_testing.py: the right Function passes every drawn example of
both checks, the typo is caught by gradcheck at an example where the closed-form gradient
(NumPy's sigmoid) and the typo's formula differ, gradgradcheck fails only where x == y (the
typo's kink), and both Functions' gradients against their closed forms."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import expit

from support import run_example

pytestmark = pytest.mark.cpu_only("the gallery runs on the default device")


def _typo(d):
    """The typo's weight, written out in NumPy: right for d >= 0, exp(d) / (1 + exp(-d))
    below."""
    return np.where(d >= 0, expit(d), np.exp(d) / (1 + np.exp(-d)))


@pytest.fixture(scope="module")
def example():
    return run_example("plot_property_testing")


def test_the_right_function_passes_and_the_typo_is_caught(example):
    g = example
    outcomes, verdicts, failures = g["outcomes"], g["verdicts"], g["failures"]
    for check in ("gradcheck", "gradgradcheck"):
        runs = outcomes[("LogAddExp", check)]
        assert len(runs) == g["MAX_EXAMPLES"] and all(runs)
        assert verdicts[("LogAddExp", check)] == "passed"
        assert ("LogAddExp", check) not in failures
    assert verdicts[("LogAddExpTypo", "gradcheck")] == "caught"
    assert not all(outcomes[("LogAddExpTypo", "gradcheck")])
    # the fixed input, x > y, passes both: only the drawn ones tell them apart
    assert g["fixed"] == {"right": True, "typo": True}
    for x, y in failures[("LogAddExpTypo", "gradcheck")]:
        d = np.subtract(x, y)            # broadcast as the Function broadcasts
        assert np.any(d < 0)
        assert np.max(np.abs(_typo(d) - expit(d))) > 1e-2
    # the shrunk example is two numbers
    assert all(np.ndim(a) == 0 for a in failures[("LogAddExpTypo", "gradcheck")][-1])
    # gradgradcheck fails, if at all, only at the typo's kink, x == y
    for x, y in failures.get(("LogAddExpTypo", "gradgradcheck"), []):
        assert np.any(np.subtract(x, y) == 0)


def test_the_gradients_match_the_closed_forms(example):
    g = example
    d = g["d_grid"]
    np.testing.assert_allclose(g["grad_right"], expit(d), rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(g["grad_typo"], _typo(d), rtol=1e-13, atol=1e-15)
    # the typo is right for x >= y and wrong below, by at most about 0.17
    np.testing.assert_array_equal(g["grad_typo"][d >= 0], g["grad_right"][d >= 0])
    assert np.all(np.abs(g["grad_typo"] - g["grad_right"])[(d < -0.05) & (d > -3)] > 1e-3)
    # central differences of NumPy's logaddexp in x
    h = 1e-6
    fd = (np.logaddexp(d + h, 0.0) - np.logaddexp(d - h, 0.0)) / (2 * h)
    np.testing.assert_allclose(g["grad_right"], fd, rtol=1e-8, atol=1e-9)
