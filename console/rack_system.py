"""The rack view of a rack-scale system (GB200/GB300 NVL72): its members drawn at their
declared heights with their kind and number, switch trays and power shelves included; its
lifecycle state; its NVLink domain with the fabric status (acceptance.rack_status: "unknown"
without an observation); and whether a person may approve it now, and if not, why.

The page and the snapshot endpoint both read these, so a first paint and a live update say the
same thing. A rack that is no rack-scale system costs nothing here (its `system` is joined with
the rack in the view's one query).
"""

from __future__ import annotations

from dataclasses import dataclass

from acceptance.rack_decisions import approval_problems
from acceptance.rack_status import FabricStatus, fabric_status
from fleet.choices import DEVICE_KINDS, MEMBER_KINDS, NodeKind, NodeState, RackState
from fleet.models import Node, Rack, RackSystem

from .board import Slot

PLURALS = {
    NodeKind.POWER_SHELF: "Power shelves",
    NodeKind.SWITCH_TRAY: "NVLink switch trays",
    NodeKind.COMPUTE_TRAY: "Compute trays",
}


@dataclass(frozen=True)
class KindCount:
    """One declared member kind: how many the SKU declares, are enrolled, and are in service."""

    kind: str
    label: str  # plural: "Power shelves"
    declared: int
    enrolled: int
    in_service: int


@dataclass
class SystemView:
    """What the rack page says of its rack-scale system."""

    system: RackSystem
    fabric: FabricStatus
    kinds: list[KindCount]
    members: int
    # Why it cannot be approved now; empty when it can (only read while it awaits approval).
    problems: list[str]

    @property
    def approvable(self) -> bool:
        return self.system.state == RackState.AWAITING_APPROVAL and not self.problems


def system_of(rack: Rack) -> RackSystem | None:
    """The rack's system, from the `system` joined in the rack's query (no query of its own)."""
    try:
        return rack.system
    except RackSystem.DoesNotExist:
        return None


def place_members(system: RackSystem, slots: list[Slot]) -> None:
    """Give each member's slot its declared height and its name among its kind (one query)."""
    heights = dict(system.sku.members.values_list("kind", "height_u"))
    for slot in slots:
        node = slot.node
        if node.kind in heights:
            slot.height_u = heights[node.kind] or 1
            slot.member = f"{node.get_kind_display()} {node.member_index or '?'}"
        if node.kind in DEVICE_KINDS:
            # A switch tray or shelf has no gates of its own (the rack-wide verdict judges it):
            # "gates not all passed" would be no fact about it.
            slot.ready = None


def _members(slots: list[Slot]) -> list[Node]:
    nodes = [s.node for s in slots]
    live = [n for n in nodes if n.kind in MEMBER_KINDS and n.state != NodeState.DECOMMISSIONED]
    order = {kind: i for i, kind in enumerate(MEMBER_KINDS)}
    return sorted(live, key=lambda n: (order[NodeKind(n.kind)], n.member_index or 0))


def system_view(system: RackSystem, slots: list[Slot]) -> SystemView:
    """The system as the page shows it, from the rack's slots (every node of the rack)."""
    members = _members(slots)
    declared = {m.kind: m.count for m in system.sku.members.all()}
    kinds = [
        KindCount(
            kind,
            PLURALS[NodeKind(kind)],
            declared.get(kind, 0),
            sum(1 for m in members if m.kind == kind),
            sum(1 for m in members if m.kind == kind and m.state == NodeState.IN_SERVICE),
        )
        for kind in MEMBER_KINDS
        if kind in declared
    ]
    fabric = fabric_status(system)
    problems: list[str] = []
    if system.state == RackState.AWAITING_APPROVAL:
        problems = approval_problems(system, members, fabric=fabric)
    return SystemView(system, fabric, kinds, len(members), problems)
