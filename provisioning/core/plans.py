"""What a run will do: the provisioning phases, then the gates of the node's acceptance profile."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..choices import RunKind
from . import gates
from .phases import PHASE_NAMES, WIPE_PRELUDE

if TYPE_CHECKING:
    from fleet.models import Manifest


def gate_names(manifest: Manifest) -> list[str]:
    """The gates a run on this manifest ends with, in order (as the gates' owner plans them)."""
    return gates.planning().planned(manifest)


# A re-validation checks the node as it stands: it reaches the installed OS and runs the gates.
REVALIDATE_PHASES = ("preflight", "power_on", "boot_disk", "wait_for_host_os")


def plan(manifest: Manifest, kind: str = RunKind.PROVISION) -> list[str]:
    """Every phase record a run of this kind and manifest gets, in order."""
    steps = [gates.step_name(name) for name in gate_names(manifest)]
    if kind == RunKind.REVALIDATE:
        return [*REVALIDATE_PHASES, *steps]
    if kind == RunKind.BURN_IN:
        return [p.name for p in WIPE_PRELUDE] + list(REVALIDATE_PHASES) + steps
    if kind == RunKind.SUSPECT:
        # Drained first; then the profile's `suspect_action` says how deep the re-check goes.
        reprovision = gates.planning().suspect_reprovisions(manifest)
        checks = PHASE_NAMES if reprovision else REVALIDATE_PHASES
        return [p.name for p in WIPE_PRELUDE] + list(checks) + steps
    # A tenant release and a rolling upgrade of an in-service node drain it first.
    prelude = [p.name for p in WIPE_PRELUDE] if kind in (RunKind.WIPE, RunKind.UPGRADE) else []
    return prelude + list(PHASE_NAMES) + steps
