"""The gate planning acceptance registers with provisioning (provisioning.gates).

Provisioning asks through that registry, filled in by AcceptanceConfig.ready(), so it never
imports acceptance. The profile is resolved by AcceptanceProfile.for_manifest.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from provisioning import gates as provisioning_gates
from provisioning.choices import RunKind

from .models import AcceptanceProfile
from .runner import gate_phase

if TYPE_CHECKING:
    from fleet.models import Manifest
    from provisioning.models import Run


def planned_gates(manifest: Manifest) -> list[str]:
    """The gates of the manifest's profile, in the profile's order."""
    profile = AcceptanceProfile.for_manifest(manifest.sku_id, manifest.spec)
    return [g["gate"] for g in profile.spec.get("gates", [])] if profile else []


def returns_to_service(run: Run) -> str:
    """The profile that returns a re-validated node to service without a click; "" if not."""
    if run.kind != RunKind.WIPE:
        return ""
    profile = AcceptanceProfile.for_manifest(run.node.sku_id, run.manifest.spec)
    if profile and profile.spec.get("auto_return_to_service"):
        return f"profile {profile.version}"
    return ""


PLANNING = provisioning_gates.GatePlanning(
    planned=planned_gates, phase=gate_phase, returns_to_service=returns_to_service
)


def register() -> None:
    """Make the acceptance gates the ones provisioning's runs end with."""
    provisioning_gates.register(PLANNING)
