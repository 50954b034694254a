"""Correctness checks for derivatives: :func:`gradcheck`, :func:`gradgradcheck`,
:func:`adjointcheck`, and (with hypothesis installed) the strategies in
:mod:`ndgrad.checks.strategies`."""
from __future__ import annotations

from .gradcheck import GradcheckError, adjointcheck, gradcheck, gradgradcheck

__all__ = ["gradcheck", "gradgradcheck", "adjointcheck", "GradcheckError"]
