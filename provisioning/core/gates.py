"""The gates a run ends with, as whichever app declares them registers them here.

Provisioning runs phases; it does not know what a gate checks. The acceptance app registers its
gate planning in its AppConfig.ready(), so provisioning never imports it. Without a registration
a run has no gates (provisioning alone still brings a node to its manifest).

A gate in a run is a phase record whose phase is `step_name(gate)`; `gate_of` reads it back.
These two functions are the only place that naming lives.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fleet.models import Manifest

    from ..models import Run
    from .phases.base import Phase

_GATE_STEP = "gate:"


def step_name(gate: str) -> str:
    """The phase name of a gate's record in a run ("gate:fabric")."""
    return f"{_GATE_STEP}{gate}"


def gate_of(step: str) -> str:
    """The gate a phase record runs ("fabric" for "gate:fabric"); "" for a provisioning phase."""
    return step.removeprefix(_GATE_STEP) if step.startswith(_GATE_STEP) else ""


@dataclass(frozen=True)
class GatePlanning:
    """What provisioning asks of the app that owns the gates."""

    # The gates a run on this manifest ends with, in order.
    planned: Callable[[Manifest], list[str]]
    # The phase that runs a gate (by gate name).
    phase: Callable[[str], Phase]
    # The rule ("profile 1.2.0") that returns a finished tenant-release, suspect or burn-in
    # run's node to service without a person's click; "" if none does.
    returns_to_service: Callable[[Run], str]
    # Whether a suspect node on this manifest is reprovisioned, not only re-checked.
    suspect_reprovisions: Callable[[Manifest], bool]


def _no_gate(gate: str) -> Phase:
    raise LookupError(f"no gates are registered, so there is no gate {gate!r}")


NO_GATES = GatePlanning(
    planned=lambda manifest: [],
    phase=_no_gate,
    returns_to_service=lambda run: "",
    suspect_reprovisions=lambda manifest: False,
)
_registered: list[GatePlanning] = []


def register(planning: GatePlanning) -> None:
    """Make `planning` the source of gates (the owning app calls this once, when ready)."""
    _registered[:] = [planning]


def planning() -> GatePlanning:
    """The registered gate planning, or NO_GATES."""
    return _registered[0] if _registered else NO_GATES
