"""Test-suite configuration: hypothesis profiles and devices.

Hypothesis profiles
-------------------
One profile is loaded for the whole session. The default run (``python -m pytest``, the
README's command, and ``.ci/run``, whether or not ``CI`` is set) is DERANDOMIZED: every run
draws the same examples, so a green main stays green and a red run is reproducible, not a
dice roll. Random exploration is opt-in.

``ci`` (the default)
    25 examples, ``derandomize=True``, no example database (a derandomized run needs no
    replay), no deadline. The timing-based ``too_slow`` health check is off: a shared
    two-core machine must not fail a build by being slow.
``dev`` (opt-in: ``HYPOTHESIS_PROFILE=dev``)
    Random exploration: 50 examples, fresh random draws every run, with hypothesis' example
    database (a failure found locally is replayed first next time). Use it to look for new
    failures; reproduce one with ``--hypothesis-seed=N`` (and ``-p no:cacheprovider``), then
    add the case as an explicit test.
``quick`` (opt-in: ``HYPOTHESIS_PROFILE=quick``)
    Five examples, no shrinking: for triaging many failures at once.

No profile has a deadline: gradient checks run finite differences whose time varies with the
op and the drawn shape, and a deadline would only make the suite flaky. Tests that need other
settings use ``@settings(...)``, which overrides the loaded profile per test (the composition
suite, tests/test_op_compositions.py, runs fewer examples than the profile's).
"""

from __future__ import annotations

import os
import re

from hypothesis import HealthCheck, Phase, settings

settings.register_profile(
    "ci",
    max_examples=25,
    deadline=None,
    derandomize=True,
    database=None,  # derandomized runs need no replay database
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", max_examples=50, deadline=None)
# `HYPOTHESIS_PROFILE=quick`: a few examples and no shrinking, to triage many failures fast.
settings.register_profile("quick", max_examples=5, deadline=None, derandomize=True,
                          database=None, phases=[Phase.explicit, Phase.generate],
                          suppress_health_check=[HealthCheck.too_slow])

# derandomized unless asked otherwise (see the module docstring)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or "ci")


# ------------------------------------------------------------------------------ devices
# Note [Devices in the test suite]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A test runs once per device it is collected for, through the autouse fixture `device`,
# which makes that device ndgrad's default for the test (`ndgrad.set_default_device`):
# tensors the test makes without a device land there, so the same test body exercises that
# backend. Which devices is decided AT COLLECTION, from the test's markers; a device that
# cannot run is not collected (no skipped cases), and the terminal summary says in one line
# per device what was left out and why.
#
# * ``cpu``: always.
# * ``cuda``: a real GPU through CuPy, collected only where CuPy sees one.
# * ``emulated``: the CUDA backend (ndgrad.core.backend.CupyBackend) over the NumPy-backed CuPy
#   stand-in of tests/emulated_cupy.py, so every CUDA code path of ndgrad runs on machines
#   without a GPU, CI included. Collected where no real GPU is (a GPU runs the cuda cases
#   instead) unless `NDGRAD_TEST_EMULATED=0`. Its hypothesis tests draw at most
#   EMULATED_EXAMPLES examples (the paths are what it checks; the CPU run covers the values).
#
# The markers (a test function, class or module, through `pytestmark`):
#
# * none, or ``@pytest.mark.every_device``: cpu and the CUDA backend (cuda or emulated, as
#   above). The default, so that a test whose body reaches device code keeps covering it.
# * ``@pytest.mark.cpu_only(reason)``: cpu only, for tests about the CPU backend (NumPy
#   memory sharing, the ml_dtypes dtypes, ...) or whose device paths another test covers.
# * ``@pytest.mark.gpu_only(reason)``: the CUDA backend only (cuda or emulated), for tests
#   about it (without one, the test is not collected).
# * a test that parametrizes ``device`` itself (``indirect=True``, with DEVICES' names)
#   chooses its devices (the registry matrix, tests/test_op_matrix.py, does: its device
#   check runs every op on the CUDA backend once, ``--slow`` every check).
#
# Tests compare results with NumPy references through `tests.support.host`
# (`t.cpu().numpy()`), which works on every device.
import sys as _sys  # noqa: E402

import pytest  # noqa: E402

import ndgrad as _nd  # noqa: E402
from ndgrad.core import backend as _backend  # noqa: E402
from ndgrad.core.ops import COMPOSITES as _COMPOSITES  # noqa: E402

_sys.path.insert(0, os.path.dirname(__file__))
import emulated_cupy as _emulated_cupy  # noqa: E402
from support import restart_module_generators  # noqa: E402


def pytest_addoption(parser):
    parser.addoption("--slow", action="store_true", default=False,
                     help="ndgrad: the deeper run before a release: the registry matrix's "
                          "every check on the CUDA backend (emulated without a GPU), not only "
                          "its device check (Note [Devices in the test suite])")


def pytest_configure(config):
    import registry_matrix  # (Note [The registry matrix]: its families read these)
    registry_matrix.SLOW = bool(config.getoption("--slow", default=False))
    registry_matrix.GPU = gpu_devices()
    config.addinivalue_line("markers", "matrix(family, op, dtype, device): a case of the "
                                       "registry matrix (tests/registry_matrix.py)")
    config.addinivalue_line("markers", "cpu_only(reason): the test runs on the CPU only "
                                       "(Note [Devices in the test suite])")
    config.addinivalue_line("markers", "every_device: the test runs on the CPU and on the CUDA "
                                       "backend, real or emulated (the default)")
    config.addinivalue_line("markers", "gpu_only(reason): the test runs on the CUDA backend "
                                       "only, real or emulated")


_REAL_CUDA = _backend.cuda_device_count() > 0
_EMULATED_OFF = os.environ.get("NDGRAD_TEST_EMULATED") == "0"
_EMULATED = {}


def gpu_devices():
    """The names of the devices the CUDA backend runs on in this session, as tests collect
    them: ``["cuda"]`` with a real GPU, ``["emulated"]`` without one, ``[]`` without one and
    with ``NDGRAD_TEST_EMULATED=0``."""
    if _REAL_CUDA:
        return ["cuda"]
    return [] if _EMULATED_OFF else ["emulated"]


def not_collected():
    """(device, why) for each device this session leaves out at collection."""
    if _REAL_CUDA:
        return [("emulated", "a real GPU runs the cuda cases")]
    out = [("cuda", "no CUDA device: CuPy is not installed or sees no GPU")]
    if _EMULATED_OFF:
        out.append(("emulated", "NDGRAD_TEST_EMULATED=0"))
    return out


def _emulated_backend():
    B = _EMULATED.get("B")
    if B is None:
        real = _backend._CUDA["backend"]
        B = _EMULATED["B"] = _backend.install_cuda_backend(*_emulated_cupy.make_modules())
        _backend._CUDA["backend"] = real
    return B


EMULATED_EXAMPLES = 5
# Note [Examples for composites]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# A registered composite (defcomposite) has no derivative rules of its own: its derivatives
# are its primitives', which the registry suites check with the profile's examples. What its
# own checks guard is the wiring (which primitives, which constants, which branches), and a
# few examples cover that; so the registry suites draw at most COMPOSITE_EXAMPLES for a
# composite. This keeps the suite within CI's budget as NumPy's namespace grows.
COMPOSITE_EXAMPLES = 10


def _parametrizes_device(metafunc):
    for m in metafunc.definition.iter_markers("parametrize"):
        names = m.args[0] if m.args else m.kwargs.get("argnames", ())
        if isinstance(names, str):
            names = [n.strip() for n in names.split(",")]
        if "device" in names:
            return True
    return False


def pytest_generate_tests(metafunc):
    if "device" not in metafunc.fixturenames or _parametrizes_device(metafunc):
        return
    cpu_only = metafunc.definition.get_closest_marker("cpu_only") is not None
    gpu_only = metafunc.definition.get_closest_marker("gpu_only") is not None
    if cpu_only and gpu_only:
        raise pytest.UsageError(f"{metafunc.definition.nodeid}: marked both cpu_only and "
                                "gpu_only")
    params = ([] if gpu_only else ["cpu"]) + ([] if cpu_only else gpu_devices())
    metafunc.parametrize("device", params, indirect=True)


@pytest.fixture(autouse=True)
def device(request):
    """The device this test runs on, made ndgrad's default device for it (Note [Devices in
    the test suite]); yields "cpu" or "cuda:0"."""
    name = getattr(request, "param", "cpu")
    if name == "cpu":
        restore = _fewer_examples(request.function,
                                  COMPOSITE_EXAMPLES if _tests_a_composite(request) else None)
        yield "cpu"
        restore()
        return
    saved = _backend._CUDA["backend"]
    if name == "emulated":
        _backend._CUDA["backend"] = _emulated_backend()
    restore = _fewer_examples(request.function,
                              EMULATED_EXAMPLES if name == "emulated" else None)
    _nd.set_default_device("cuda:0")
    try:
        yield "cuda:0"
    finally:
        _nd.set_default_device("cpu")
        _backend._CUDA["backend"] = saved
        restore()


# Note [Test data does not depend on test order]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Test modules draw their data from a module-level generator (``RNG =
# np.random.default_rng(7)``). pytest-xdist hands tests to workers in no fixed order, so
# without this a test's data would depend on which tests of its module ran before it in the
# same worker, and a result within a tolerance on one run could fall outside it on the next
# (a logsumexp value near zero did: 2.0e-14 against rtol 1e-14). Before every test, each such
# generator is put back to its state when the module was loaded (module-level draws happen
# at import, the same way in every worker), so a test sees the same data on every run.
_GENERATOR_STATES = {}


@pytest.fixture(autouse=True)
def _test_data_from_the_seed(request):
    if request.module is not None:
        restart_module_generators(request.module, _GENERATOR_STATES)


@pytest.fixture
def loop_warnings(monkeypatch):
    """vmap warns once per name and process that it loops over a function (a Python loop per
    batch element): the set of names already warned is empty for the test that asks for this,
    so that it can assert the warnings it expects (``support.loop_messages``)."""
    import sys
    monkeypatch.setattr(sys.modules["ndgrad.functional.vmap"], "_WARNED", set())


def _tests_a_composite(request):
    """Whether this is a registry-suite case of a composite (Note [Examples for composites])."""
    callspec = getattr(request.node, "callspec", None)
    name = callspec.params.get("name") if callspec is not None else None
    return isinstance(name, str) and name in _COMPOSITES


def _fewer_examples(fn, cap):
    """Cap a hypothesis test's examples at ``cap`` (None: no cap) for this run; returns the
    undo, which puts the test's own settings back. Hypothesis fixes a test's settings when
    it is decorated, so this swaps its (internal) settings attribute; where that attribute
    is missing, the test keeps its settings.

    The undo runs for every test, capped or not: a test decorated with ``@settings`` gets
    its attribute replaced by a child settings object on each run (hypothesis 6.170), so
    across the many parametrized cases of one test the chain of parents would grow until
    reading a setting overflows the recursion limit."""
    current = getattr(fn, "_hypothesis_internal_use_settings", None)

    def undo():
        if current is not None:
            fn._hypothesis_internal_use_settings = current
    if current is not None and cap is not None and current.max_examples > cap:
        fn._hypothesis_internal_use_settings = settings(current, max_examples=cap)
    return undo


# the devices left out, for the terminal summary: the number of collected cases of the CUDA
# backend (the emulated device's, or the real GPU's), from this process's collection or, under
# pytest-xdist, from the first worker's
_COLLECTED = {}
_GPU_CASE = re.compile(r"[\[-](emulated|cuda)[\]-]")


def _device_of(item):
    """The device parameter of a collected case (None where the test has none)."""
    callspec = getattr(item, "callspec", None)
    return callspec.params.get("device") if callspec is not None else None


def _count_gpu_cases(ids):
    return sum(1 for i in ids if _GPU_CASE.search(i))


# Note [The registry matrix] (tests/registry_matrix.py): what the matrix collected
# (registry_matrix.COLLECTED), for test_every_op_reaches_every_check_that_applies (before -k
# or --deselect: what the session COULD run), and its cases in (op, dtype) order, each one's
# after another, so that a process builds each bank once (pytest-xdist's loadgroup keeps a
# group's cases in this order)


@pytest.fixture
def bank(request):
    """The bank of the (op, dtype) of a registry-matrix case (its ``request.param``)."""
    import registry_matrix
    return registry_matrix.bank(*request.param)


@pytest.hookimpl(wrapper=True)
def pytest_collection_modifyitems(session, config, items):
    _matrix_cases(config, items)
    result = yield  # (-k, -m, --deselect)
    _devices_collected(config, items)
    return result


def _matrix_cases(config, items):
    import registry_matrix
    collected = config.stash.setdefault(registry_matrix.COLLECTED,
                                        {"cases": set(), "modules": set()})
    first, matrix = None, []
    for k, item in enumerate(items):
        collected["modules"].add(item.path.name)
        mark = item.get_closest_marker("matrix")
        if mark is not None:
            collected["cases"].add(tuple(mark.args))
            first = k if first is None else first
            matrix.append(item)
    if matrix:
        order = {}
        for item in matrix:  # (op, dtype) in the order of first appearance
            order.setdefault(item.get_closest_marker("matrix").args[1:3], len(order))
        matrix.sort(key=lambda item: order[item.get_closest_marker("matrix").args[1:3]])
        rest = [item for item in items if item.get_closest_marker("matrix") is None]
        items[:] = rest[:first] + matrix + rest[first:]


def _devices_collected(config, items):
    # a case marked through pytest.param(..., marks=cpu_only(...)) or gpu_only: its test's
    # device parametrization (pytest_generate_tests) cannot see the mark, so its other
    # devices' cases are left out here
    wrong = [item for item in items if _device_of(item) is not None and (
        (_device_of(item) != "cpu" and item.get_closest_marker("cpu_only") is not None) or
        (_device_of(item) == "cpu" and item.get_closest_marker("gpu_only") is not None))]
    if wrong:
        gone = {id(item) for item in wrong}
        items[:] = [item for item in items if id(item) not in gone]
        config.hook.pytest_deselected(items=wrong)
    if not gpu_devices():  # (a gpu_only test without a device: its empty parametrization)
        gone = [item for item in items if item.get_closest_marker("gpu_only") is not None]
        if gone:
            items[:] = [item for item in items if item.get_closest_marker("gpu_only") is None]
            config.hook.pytest_deselected(items=gone)
    _COLLECTED.setdefault("gpu cases", _count_gpu_cases(item.nodeid for item in items))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node, ids):
    _COLLECTED.setdefault("gpu cases", _count_gpu_cases(ids))


def pytest_terminal_summary(terminalreporter):
    """The devices not collected, one line each; then the skips, one line per reason (with a
    count) instead of one per skipped test."""
    n = _COLLECTED.get("gpu cases")
    if n is not None:
        terminalreporter.section("devices not collected")
        ran = gpu_devices()
        for name, why in not_collected():
            instead = f"; {n} cases run on the {ran[0]} device" if ran else ""
            terminalreporter.write_line(f"{name}: not collected ({why}){instead}")
    reasons = {}
    for rep in terminalreporter.stats.get("skipped", []):
        reason = rep.longrepr[2] if isinstance(rep.longrepr, tuple) else str(rep.longrepr)
        reason = reason.removeprefix("Skipped: ")
        reasons[reason] = reasons.get(reason, 0) + 1
    if reasons:
        terminalreporter.section("skipped, by reason")
        for reason, n in sorted(reasons.items(), key=lambda kv: -kv[1]):
            terminalreporter.write_line(f"{n:6d}  {reason}")
