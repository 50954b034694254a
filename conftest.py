"""pytest settings for the whole checkout (``tests/conftest.py`` has the test suite's own).

Dask is an optional extra (``ndgrad[dask]``, also in the ``test`` extra): without it, the
modules whose examples need it are not collected for doctests, and ``tests/test_dask.py``
skips itself with a reason."""
from __future__ import annotations

import importlib.util


def _installed(name):
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


collect_ignore = []
if not _installed("dask"):
    collect_ignore += ["ndgrad/core/backend_dask.py", "ndgrad/core/lazy.py"]
