"""``ndgrad.autograd.anomaly_mode``: ``torch.autograd.anomaly_mode``'s names, the very
objects ``ndgrad.autograd`` exports (see :class:`~ndgrad.autograd.detect_anomaly`).

Examples
--------
>>> import ndgrad
>>> from ndgrad.autograd.anomaly_mode import set_detect_anomaly
>>> with set_detect_anomaly(True):
...     ndgrad.autograd.is_anomaly_enabled()
True
"""

from __future__ import annotations

from ..core.anomaly import detect_anomaly, set_detect_anomaly

__all__ = ["detect_anomaly", "set_detect_anomaly"]
