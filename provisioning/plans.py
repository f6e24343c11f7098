"""What a run will do: the provisioning phases, then the gates of the node's acceptance profile."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .choices import RunKind
from .phases import PHASE_NAMES, WIPE_PRELUDE

if TYPE_CHECKING:
    from fleet.models import Manifest


def gate_names(manifest: Manifest) -> list[str]:
    """The gates of the profile the manifest names (or the SKU's published one), in order."""
    from acceptance.models import AcceptanceProfile

    version = manifest.spec.get("acceptance_profile")
    profiles = AcceptanceProfile.objects.filter(sku=manifest.sku)
    profile = profiles.filter(version=version).first() if version else None
    profile = profile or AcceptanceProfile.current_for(manifest.sku)
    if profile is None:
        return []
    return [g["gate"] for g in profile.spec.get("gates", [])]


# A re-validation checks the node as it stands: it reaches the installed OS and runs the gates.
REVALIDATE_PHASES = ("preflight", "power_on", "boot_disk", "wait_for_host_os")


def plan(manifest: Manifest, kind: str = RunKind.PROVISION) -> list[str]:
    """Every phase record a run of this kind and manifest gets, in order."""
    gates = [f"gate:{name}" for name in gate_names(manifest)]
    if kind == RunKind.REVALIDATE:
        return [*REVALIDATE_PHASES, *gates]
    prelude = [p.name for p in WIPE_PRELUDE] if kind == RunKind.WIPE else []
    return prelude + list(PHASE_NAMES) + gates
