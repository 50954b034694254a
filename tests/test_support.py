"""The test suite's own machinery: test data does not depend on the order tests run in (Note
[Test data does not depend on test order] in tests/conftest.py)."""

from __future__ import annotations

import types

import numpy as np
import pytest

from support import restart_module_generators

pytestmark = pytest.mark.cpu_only("about the test suite's data, not a device")

RNG = np.random.default_rng(5)
FIRST = np.random.default_rng(5).random(3)  # what RNG gives first: the reference


def test_restart_puts_a_module_generator_back_to_its_loaded_state():
    module = types.ModuleType("fake_test_module")
    module.RNG = np.random.default_rng(11)
    module.RNG.random(2)  # a draw at import, as module-level constants make
    after_import = np.random.default_rng(11)
    after_import.random(2)
    expected = after_import.random(4)
    states = {}
    restart_module_generators(module, states)  # the first call remembers
    first = module.RNG.random(4)
    restart_module_generators(module, states)  # later calls restore
    second = module.RNG.random(4)
    np.testing.assert_array_equal(first, expected)
    np.testing.assert_array_equal(second, expected)


# Two tests that each draw from this module's RNG: whichever runs second would see other
# values if the generator were not restarted before it.
def test_a_test_sees_the_seeds_first_values():
    np.testing.assert_array_equal(RNG.random(3), FIRST)


def test_so_does_the_next_one():
    np.testing.assert_array_equal(RNG.random(3), FIRST)
