"""The gate planning acceptance registers with provisioning (provisioning.core.gates).

Provisioning asks through that registry, filled in by AcceptanceConfig.ready(), so it never
imports acceptance. The profile is resolved by AcceptanceProfile.for_manifest.
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING

from fleet.choices import NodeKind
from provisioning.choices import RunKind
from provisioning.core import gates as provisioning_gates
from provisioning.core.phases.base import Phase
from provisioning.day2.suspect import TAKE_OUT_KINDS

from . import runner
from .attestation_gate import AttestationGate
from .gates import ATTESTATION
from .models import AcceptanceProfile

if TYPE_CHECKING:
    from fleet.models import Manifest
    from provisioning.models import Run


def planned_gates(manifest: Manifest) -> list[str]:
    """The gates of the manifest's profile, in the profile's order."""
    profile = AcceptanceProfile.for_manifest(manifest.sku_id, manifest.spec)
    return [g["gate"] for g in profile.spec.get("gates", [])] if profile else []


def returns_to_service(run: Run) -> str:
    """The profile that returns a re-validated node to service without a click; "" if not.

    The SKU's published profile decides, not the version the run's manifest pins: that is the
    behaviour the tenant-release tests hold (tests/wipes/test_lab_release.py publishes a new
    profile with the policy and expects it to apply to runs already under way). A rack-scale
    member never returns alone: its rack is approved as one decision (rack_decisions).
    """
    if run.kind not in (RunKind.WIPE, *TAKE_OUT_KINDS) or run.node.kind != NodeKind.SERVER:
        return ""
    profile = AcceptanceProfile.current_for(run.node.sku)
    if profile and profile.spec.get("auto_return_to_service"):
        return f"profile {profile.version}"
    return ""


@cache
def gate_phase(name: str) -> Phase:
    """The phase that runs gate `name`: attestation's own (keys, challenge, quote), else the
    runner's one-command gate or soak."""
    return AttestationGate() if name == ATTESTATION.name else runner.gate_phase(name)


def suspect_reprovisions(manifest: Manifest) -> bool:
    """The manifest's profile says `suspect_action: reprovision` (else a suspect is re-checked)."""
    profile = AcceptanceProfile.for_manifest(manifest.sku_id, manifest.spec)
    return profile is not None and profile.spec.get("suspect_action") == "reprovision"


PLANNING = provisioning_gates.GatePlanning(
    planned=planned_gates,
    phase=gate_phase,
    returns_to_service=returns_to_service,
    suspect_reprovisions=suspect_reprovisions,
)


def register() -> None:
    """Make the acceptance gates the ones provisioning's runs end with."""
    provisioning_gates.register(PLANNING)
