"""Test-suite configuration: hypothesis profiles.

Two profiles are registered, and one is loaded for the whole session:

``ci``
    Selected when the environment variable ``CI`` is set (CI runs ``.ci/run`` with
    ``CI=true``). Fewer examples, no deadline, and ``derandomize=True``: each run draws the same
    examples, so a CI result is reproducible and a red run is not a dice roll. The timing-based
    ``too_slow`` health check is off: a shared two-core machine must not fail a build by being
    slow.
``dev``
    Everywhere else. More examples and random draws (with hypothesis' example database, so a
    failure found locally is replayed first next time). No deadline either: gradient checks run
    finite differences whose time varies with the op and the drawn shape, and a deadline would
    only make the suite flaky.

``HYPOTHESIS_PROFILE=<name>`` overrides the choice, e.g. ``HYPOTHESIS_PROFILE=ci pytest`` to
reproduce a CI run locally. Tests that need other settings use ``@settings(...)``, which
overrides the loaded profile per test.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

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

_default = "ci" if os.environ.get("CI") else "dev"
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or _default)
