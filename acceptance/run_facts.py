"""What a gate's phase reads of its run: the profile's thresholds, the node's part serials."""

from __future__ import annotations

from fleet.models import Component, Node
from provisioning.core.gates import step_name
from provisioning.core.phases.base import Band, PhaseContext, PhaseInfo

from .gates import Gate
from .models import AcceptanceProfile

# A gate's own limit: the profile's thresholds set its length (dcgm level, soak hours), so the
# phase list's default is only a backstop; the manifest's `timeouts` may set one per gate.
GATE_TIME_LIMIT_S = 86400


def profile_thresholds(ctx: PhaseContext, gate: str) -> dict[str, float]:
    """The thresholds the node's profile sets for a gate."""
    if "profile_gates" not in ctx.memo:
        profile = AcceptanceProfile.for_manifest(ctx.node.sku_id, ctx.manifest)
        ctx.memo["profile_gates"] = profile.spec.get("gates", []) if profile else []
    for entry in ctx.memo["profile_gates"]:
        if entry["gate"] == gate:
            return dict(entry.get("thresholds") or {})
    return {}


def part_serials(node: Node) -> dict[str, str]:
    """Part names as findings write them ("GPU 3", "nvme3n1", "NIC 0") -> serials."""
    out: dict[str, str] = {}
    for slot, serial in Component.objects.filter(node=node).values_list("slot", "serial"):
        out[slot] = serial
        if slot.startswith("NVMe "):
            out[f"nvme{slot.removeprefix('NVMe ')}n1"] = serial
    return out


def gate_info(gate: Gate) -> PhaseInfo:
    """The phase info of a gate's record in a run: "gate:<name>", labelled "Gate: <label>"."""
    return PhaseInfo(step_name(gate.name), f"Gate: {gate.label}", Band.IN, False, GATE_TIME_LIMIT_S)
