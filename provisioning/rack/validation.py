"""The rack-wide gate of a rack run: once every stage is done, the rack is validating until the
gate gives its verdict, then it awaits a person's approval, or it is degraded with the tray, GPU
or link the verdict names.

Provisioning does not know what the gate checks (the NVLink domain's fabric, the power shelves):
the acceptance app registers it when ready, as it registers a node's gates (core.gates), so this
package never imports it. Without a registration the rack goes straight to awaiting approval.

A gate's `look` runs inside the rack run's advance (its transaction, its lock): it may write its
own rows and queue work (agent commands, a task after commit), never wait on a BMC or an agent.
Called again on rows that did not change, it changes nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..rack_models import RackRun


@dataclass(frozen=True)
class RackGateLook:
    """One look at the rack-wide gate: passed True or False with why (the failure naming the
    tray, GPU or link), or None while it still waits (`reason` says for what)."""

    passed: bool | None
    reason: str


@dataclass(frozen=True)
class RackGate:
    """What a rack run asks of the app that owns the rack-wide gate."""

    look: Callable[[RackRun, datetime], RackGateLook]


NO_GATE = RackGate(look=lambda rack_run, now: RackGateLook(True, "no rack-wide gate is registered"))
_registered: list[RackGate] = []


def register(gate: RackGate) -> None:
    """Make `gate` the rack-wide gate (the owning app calls this once, when ready)."""
    _registered[:] = [gate]


def rack_gate() -> RackGate:
    """The registered rack-wide gate, or NO_GATE."""
    return _registered[0] if _registered else NO_GATE
