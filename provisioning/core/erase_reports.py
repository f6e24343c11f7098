"""What an erase phase reports, for whoever certifies erases (the day-2 wing's wipes).

The erase phase belongs to the run core and knows nothing of tenants or certificates: it reports
the drives it erased, and each certifier registered at ready() may judge the report (a tenant's
wipe run gets its certificate, which can fail a drive the agent passed: an inventoried drive it
never reported). The phase fails on what the agent said or on what a certifier found.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..models import Run


@dataclass(frozen=True)
class EraseReport:
    """One erase: its run, the agent's report per drive, and whether the agent says it passed."""

    run: Run
    drives: list[dict[str, Any]]
    passed: bool


# A certifier returns the drives it judges failed (empty: nothing to say, or all passed).
Certifier = Callable[[EraseReport], list[dict[str, Any]]]
_CERTIFIERS: list[Certifier] = []


def register(*certifiers: Certifier) -> None:
    """Add certifiers (once each), told of every erase in this order."""
    for certifier in certifiers:
        if certifier not in _CERTIFIERS:
            _CERTIFIERS.append(certifier)


def unregister(certifier: Certifier) -> None:
    if certifier in _CERTIFIERS:
        _CERTIFIERS.remove(certifier)


def certify(report: EraseReport) -> list[dict[str, Any]]:
    """Tell every certifier of the erase; the drives they judged failed, in their order."""
    failed: list[dict[str, Any]] = []
    for certifier in _CERTIFIERS:
        failed.extend(certifier(report))
    return failed
