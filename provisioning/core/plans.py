"""What a run will do: the provisioning phases, then the gates of the node's acceptance profile."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fleet.choices import NodeKind

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

# A rack member with a BMC and firmware but no OS (NVOS and CPLD ride in its BMC's update
# bundle): its run is out-of-band only, and the rack-wide verdict, not a gate of its own,
# judges it. A power shelf is never powered on as a host.
DEVICE_PLANS: dict[str, tuple[str, ...]] = {
    NodeKind.SWITCH_TRAY: ("preflight", "power_on", "bmc_firmware"),
    NodeKind.POWER_SHELF: ("preflight", "bmc_firmware"),
}


def plan(
    manifest: Manifest, kind: str = RunKind.PROVISION, node_kind: str = NodeKind.SERVER
) -> list[str]:
    """Every phase record a run of this kind and manifest gets, in order, on a node of
    `node_kind` (a switch tray or power shelf has no OS: its plan is out-of-band only)."""
    if node_kind in DEVICE_PLANS:
        return list(DEVICE_PLANS[node_kind])
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
