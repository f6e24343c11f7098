"""What a run will do: the provisioning phases, then the gates of the node's acceptance profile."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .choices import RunKind
from .phases import PHASE_NAMES, WIPE_PRELUDE

if TYPE_CHECKING:
    from fleet.models import Manifest


def profile_spec(manifest: Manifest) -> dict:
    """The spec of the profile the manifest names (or the SKU's published one); {} if none."""
    from acceptance.models import AcceptanceProfile

    version = manifest.spec.get("acceptance_profile")
    profiles = AcceptanceProfile.objects.filter(sku=manifest.sku)
    profile = profiles.filter(version=version).first() if version else None
    profile = profile or AcceptanceProfile.current_for(manifest.sku)
    return profile.spec if profile is not None else {}


def gate_names(manifest: Manifest) -> list[str]:
    """The gates of the profile the manifest names (or the SKU's published one), in order."""
    return [g["gate"] for g in profile_spec(manifest).get("gates", [])]


# A re-validation checks the node as it stands: it reaches the installed OS and runs the gates.
REVALIDATE_PHASES = ("preflight", "power_on", "boot_disk", "wait_for_host_os")


def plan(manifest: Manifest, kind: str = RunKind.PROVISION) -> list[str]:
    """Every phase record a run of this kind and manifest gets, in order."""
    gates = [f"gate:{name}" for name in gate_names(manifest)]
    if kind == RunKind.REVALIDATE:
        return [*REVALIDATE_PHASES, *gates]
    if kind == RunKind.BURN_IN:
        return [p.name for p in WIPE_PRELUDE] + list(REVALIDATE_PHASES) + gates
    if kind == RunKind.SUSPECT:
        # Drained first; then the profile's `suspect_action` says how deep the re-check goes.
        reprovision = profile_spec(manifest).get("suspect_action") == "reprovision"
        checks = PHASE_NAMES if reprovision else REVALIDATE_PHASES
        return [p.name for p in WIPE_PRELUDE] + list(checks) + gates
    prelude = [p.name for p in WIPE_PRELUDE] if kind == RunKind.WIPE else []
    return prelude + list(PHASE_NAMES) + gates
