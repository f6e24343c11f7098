"""The drift audit: the engine's observe and diff, stopping there. It never writes to a node.

For every auditable phase (firmware, BIOS settings, the OS image, identity) it reads the node's
current state over Redfish and from the agent's read-only inventory, and reports each component
as matched or drifted against the node's manifest. It also sets what the BMC and the agent show
of the node's parts beside the stored inventory, part by part.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.utils import timezone

from fleet.choices import EventKind
from fleet.events import record as record_event
from fleet.models import Manifest, Node

from ..agents.link import live_session
from ..errors import classify
from ..models import PhaseRecord, Run
from ..redfish.bmc import bmc_session
from .inventory import InventoryChange, ObservedPart, compare
from .phases import auditable_phases
from .phases.base import PhaseContext


@dataclass
class AuditReport:
    node: str
    manifest: str
    components: list[dict[str, Any]] = field(default_factory=list)
    unreadable: dict[str, str] = field(default_factory=dict)
    # The parts observed now, and how the stored inventory differs from them (empty: agrees).
    inventory: list[dict[str, Any]] = field(default_factory=list)
    inventory_drift: list[dict[str, Any]] = field(default_factory=list)

    @property
    def drifted(self) -> list[dict[str, Any]]:
        return [c for c in self.components if not c["matched"]]

    def as_dict(self) -> dict[str, Any]:
        return {
            "node": self.node,
            "manifest": self.manifest,
            "matched": len(self.components) - len(self.drifted),
            "drifted": len(self.drifted),
            "components": self.components,
            "unreadable": self.unreadable,
            "inventory": self.inventory,
            "inventory_drift": self.inventory_drift,
        }


def audit_node(node: Node, *, actor=None, manifest: Manifest | None = None) -> AuditReport:
    """Report, per component, matched or drifted against the manifest; write nothing to the node."""
    manifest = manifest or node.manifest or Manifest.current_for(node.sku)
    if manifest is None:
        raise ValueError(f"node {node.serial}: no manifest to audit against")
    report = AuditReport(node=node.serial, manifest=f"{manifest.sku.name} {manifest.version}")
    # An unsaved run and record: phases read their manifest and node from them, nothing is stored.
    run = Run(node=node, manifest=manifest, created_at=timezone.now())
    for phase in auditable_phases():
        record = PhaseRecord(run=run, phase=phase.name, order=0)
        ctx = PhaseContext(run=run, node=node, record=record, manifest=manifest.spec)
        try:
            drifts = phase.diff(ctx, phase.observe(ctx))
        except Exception as exc:  # noqa: BLE001
            report.unreadable[phase.name] = classify(exc).reason
            continue
        finally:
            ctx.close()
        for drift in drifts:
            report.components.append({"phase": phase.name, **drift.as_dict()})
    try:
        parts, change = observe_inventory(node)
        report.inventory = [p.as_dict() for p in parts]
        report.inventory_drift = change.describe()
    except Exception as exc:  # noqa: BLE001
        report.unreadable["inventory"] = classify(exc).reason
    record_event(
        node,
        EventKind.AUDIT,
        actor=actor,
        actor_label="" if actor else "audit",
        message=f"drift audit: {len(report.drifted)} drifted of {len(report.components)}"
        + inventory_words(report),
        data={
            "drifted": report.drifted,
            "unreadable": report.unreadable,
            "inventory_drift": report.inventory_drift,
        },
    )
    return report


def inventory_words(report: AuditReport) -> str:
    """How the stored inventory compares with what was observed, as a clause of a sentence."""
    if "inventory" in report.unreadable:
        return "; inventory not read"
    if not report.inventory_drift:
        return f"; stored inventory matches the {len(report.inventory)} parts observed"
    return (
        f"; stored inventory differs from the observation on {len(report.inventory_drift)} part(s)"
    )


def observe_inventory(node: Node) -> tuple[list[ObservedPart], InventoryChange]:
    """The parts the BMC and the live agent show now, and how the stored inventory differs."""
    session = live_session(node)
    agent_inventory = session.inventory if session is not None and session.inventory else None
    with bmc_session(node) as bmc:
        items = bmc.firmware_inventory()
    return compare(node, items, agent_inventory)
