"""Observed inventory: one Component row per physical part, equal to what was last observed.

Two observers see a node's parts. The BMC's FirmwareInventory lists the BMC, BIOS and HGX
baseboard, and on most machines the NICs, DPUs and drives too, without their serials. The agent
lists GPUs, NICs, DPUs and drives with serials. Each kind has one owner: the agent for a kind it
has reported, the BMC otherwise; so the BMC's serial-less view of a NIC never sits beside the
agent's. An observation is the whole truth about the kinds it owns: a part seen again is found by
serial (or by slot where it has none) and updated in place, a new part is added, a part no longer
seen is removed.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from django.db import transaction
from django.utils import timezone

from fleet.choices import ComponentKind, ComponentSource, EventKind
from fleet.events import record as record_event
from fleet.manifests import DEFAULT_PARTS
from fleet.models import Component, Node

from ..redfish import FirmwareItem

# In-band inventory keys, the component kind each lists, and how its slots are named.
INBAND_KINDS = {
    "gpus": ComponentKind.GPU,
    "nics": ComponentKind.NIC,
    "dpus": ComponentKind.DPU,
    "drives": ComponentKind.NVME,
}
SLOT_LABELS = {
    ComponentKind.GPU: "GPU",
    ComponentKind.NIC: "NIC",
    ComponentKind.DPU: "DPU",
    ComponentKind.NVME: "NVMe",
}
# The fields an observation sets; the part is the same part if kind and serial (or slot) agree.
PART_FIELDS = ("slot", "model", "serial", "part_number", "firmware_version", "updateable")


@dataclass(frozen=True)
class ObservedPart:
    """One part as an observer saw it."""

    kind: str
    slot: str
    source: str
    model: str = ""
    serial: str = ""
    part_number: str = ""
    firmware_version: str = ""
    updateable: bool = False

    def fields(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in PART_FIELDS}

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class InventoryChange:
    """What recording an observation changes: rows to add, to update (with fields), to remove."""

    add: list[Component] = field(default_factory=list)
    update: list[tuple[Component, dict[str, Any]]] = field(default_factory=list)
    remove: list[Component] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.add) + len(self.update) + len(self.remove)

    def describe(self) -> list[dict[str, Any]]:
        """Each difference between the stored rows and the observation, in words a person reads."""
        out = [{"part": _name(c), "stored": None, "observed": _state(c)} for c in self.add]
        for row, delta in self.update:
            stored = {k: getattr(row, k) for k in delta}
            out.append({"part": _name(row), "stored": stored, "observed": delta})
        out += [{"part": _name(c), "stored": _state(c), "observed": None} for c in self.remove]
        return out


def _name(row: Component) -> str:
    return f"{row.slot} ({row.serial})" if row.serial else row.slot


def _state(row: Component) -> dict[str, Any]:
    return {name: getattr(row, name) for name in PART_FIELDS}


def slot_name(kind: str, index: Any = None) -> str:
    """The one spelling of a slot: "GPU 3", "NVMe 0", "BMC"."""
    label = SLOT_LABELS.get(kind, str(kind).upper())
    return label if index is None or index == "" else f"{label} {index}"


def classify(item: FirmwareItem) -> str | None:
    """The component kind a firmware inventory entry belongs to, or None if unknown.

    The Redfish client places each entry (provisioning/redfish/classify.py); an entry it could
    not place stays unknown here too.
    """
    return item.kind


def firmware_by_kind(items: list[FirmwareItem]) -> dict[str, list[FirmwareItem]]:
    """FirmwareInventory members grouped by the component kind each one is."""
    out: dict[str, list[FirmwareItem]] = {}
    for item in items:
        kind = classify(item)
        if kind:
            out.setdefault(str(kind), []).append(item)
    return out


def parts_from_bmc(items: list[FirmwareItem]) -> list[ObservedPart]:
    """The parts a BMC's FirmwareInventory shows; in-band kinds are numbered as the agent does."""
    parts = []
    for kind, placed in firmware_by_kind(items).items():
        # One row per physical part: the running copy of the kind's own part. An HGX bundle's
        # GPUs, NVSwitches and ERoTs are entries of the tray, not rows beside the agent's GPUs,
        # and a backup or staging copy is no part at all.
        own = DEFAULT_PARTS.get(kind, (kind,))
        members = [i for i in placed if i.running and (i.part in own or i.part == "unknown")]
        numbered = kind in SLOT_LABELS or len(members) > 1
        for index, item in enumerate(members):
            parts.append(
                ObservedPart(
                    kind=kind,
                    slot=slot_name(kind, index if numbered else None)[:100],
                    source=ComponentSource.BMC,
                    model=item.name[:200],
                    firmware_version=item.version[:100],
                    updateable=item.updateable,
                )
            )
    return parts


def parts_from_agent(inventory: dict[str, Any]) -> list[ObservedPart]:
    """The parts an agent's inventory lists, with their serials."""
    parts = []
    for key, kind in INBAND_KINDS.items():
        for index, part in enumerate(inventory.get(key) or []):
            parts.append(
                ObservedPart(
                    kind=kind,
                    slot=slot_name(kind, part.get("index", index))[:100],
                    source=ComponentSource.AGENT,
                    model=str(part.get("model", ""))[:200],
                    serial=str(part.get("serial", ""))[:100],
                    part_number=str(part.get("part_number", part.get("psid", "")))[:100],
                    firmware_version=str(part.get("firmware", ""))[:100],
                    updateable=kind != ComponentKind.GPU,
                )
            )
    return parts


def agent_kinds(inventory: dict[str, Any]) -> set[str]:
    """The kinds an agent's inventory speaks for (an empty list says "none", a missing key
    says nothing)."""
    return {kind for key, kind in INBAND_KINDS.items() if key in inventory}


def bmc_kinds(rows: Iterable[Component], agent_owned: Iterable[str] = ()) -> set[str]:
    """The kinds a BMC observation speaks for: every kind the agent has not reported."""
    taken = set(agent_owned) | {r.kind for r in rows if r.source == ComponentSource.AGENT}
    return {str(kind) for kind in ComponentKind.values} - taken


def plan(rows: list[Component], parts: list[ObservedPart], kinds: set[str]) -> InventoryChange:
    """The change that makes the stored rows of `kinds` equal to the observed parts of them."""
    change = InventoryChange()
    mine = [r for r in rows if r.kind in kinds]
    by_serial = {(r.kind, r.serial): r for r in mine if r.serial}
    by_slot = {(r.kind, r.slot): r for r in mine}
    matched: set[int] = set()
    seen_slots: set[tuple[str, str]] = set()
    for part in parts:
        if part.kind not in kinds or (part.kind, part.slot) in seen_slots:
            continue  # a slot reported twice in one observation is one part: the first
        seen_slots.add((part.kind, part.slot))
        row = by_serial.get((part.kind, part.serial)) if part.serial else None
        if row is None:
            row = by_slot.get((part.kind, part.slot))
            # The same slot with another serial is another part: the old one was taken out.
            if row is not None and part.serial and row.serial and row.serial != part.serial:
                row = None
        if row is None or row.pk in matched:
            change.add.append(Component(kind=part.kind, **part.fields(), source=part.source))
            continue
        matched.add(row.pk)
        delta = {k: v for k, v in part.fields().items() if getattr(row, k) != v}
        if part.source != row.source:
            delta["source"] = part.source
        if "slot" in delta:
            # A part that moved slot is written anew: an in-place slot swap between two rows
            # would trip the unique slot constraint halfway through the UPDATE.
            change.remove.append(row)
            change.add.append(Component(kind=part.kind, **part.fields(), source=part.source))
        elif delta:
            change.update.append((row, delta))
    change.remove += [r for r in mine if r.pk not in matched]
    return change


def apply(node: Node, change: InventoryChange) -> None:
    """Write a planned change: one DELETE, one INSERT, and one UPDATE per distinct change."""
    now = timezone.now()
    updates = _alike(change.update)
    statements = bool(change.add) + bool(change.remove) + len(updates)
    # Removal and insertion are one step: a reader never sees a node with a slot both empty
    # and refilled, and a failed insert leaves the removed rows in place.
    atomic = transaction.atomic() if statements > 1 else contextlib.nullcontext()
    with atomic:
        if change.remove:
            Component.objects.filter(pk__in=[r.pk for r in change.remove]).delete()
        if change.add:
            for row in change.add:
                row.node, row.observed_at = node, now
            Component.objects.bulk_create(change.add)
        for fields, pks in updates.items():
            Component.objects.filter(pk__in=pks).update(**dict(fields), observed_at=now)
        for row, delta in change.update:
            for name, value in delta.items():
                setattr(row, name, value)
            row.observed_at = now


def _alike(updates: list[tuple[Component, dict[str, Any]]]) -> dict[tuple, list[int]]:
    """The rows to update grouped by their change: a flash moves every NIC to one version, one
    plain UPDATE. bulk_update's CASE per field and row was 8% of a worker's CPU in the 150-node
    benchmark (its SQL built anew each time, for the same few rows)."""
    groups: dict[tuple, list[int]] = {}
    for row, delta in updates:
        groups.setdefault(tuple(sorted(delta.items())), []).append(row.pk)
    return groups


def record_oob(node: Node, items: list[FirmwareItem]) -> InventoryChange:
    """Record the parts the BMC reports, for the kinds the agent has not reported."""
    rows = list(Component.objects.filter(node=node))
    change = plan(rows, parts_from_bmc(items), bmc_kinds(rows))
    apply(node, change)
    return change


def record_inband(node: Node, inventory: dict[str, Any]) -> InventoryChange:
    """Record GPUs, NICs, DPUs and drives as the agent reports them."""
    rows = list(Component.objects.filter(node=node))
    change = plan(rows, parts_from_agent(inventory), agent_kinds(inventory))
    apply(node, change)
    say_swapped(node, rows, change)
    return change


def say_swapped(node: Node, rows: list[Component], change: InventoryChange) -> None:
    """An event when parts the agent saw before are gone, or new ones sit where they were: a
    swapped drive or GPU is part of the node's history, not a silent row change."""
    seen = {r.kind for r in rows if r.source == ComponentSource.AGENT}
    gone = [r for r in change.remove if r.source == ComponentSource.AGENT]
    new = [c for c in change.add if c.kind in seen and c.serial]
    moved = {c.serial for c in new} & {r.serial for r in gone}
    gone = [r for r in gone if r.serial not in moved]
    new = [c for c in new if c.serial not in moved]
    if not gone and not new:
        return
    words = [f"{_name(r)} gone" for r in gone] + [f"{_name(c)} new" for c in new]
    record_event(
        node,
        EventKind.UPDATED,
        actor_label="agent",
        message=f"parts changed: {', '.join(words)}",
        data={
            "gone": [_state(r) for r in gone],
            "new": [_state(c) for c in new],
        },
    )


def compare(
    node: Node, items: list[FirmwareItem], inventory: dict[str, Any] | None
) -> tuple[list[ObservedPart], InventoryChange]:
    """What the BMC and the agent show now (each for the kinds it owns), and what recording it
    would change in the stored inventory: nothing, when the two agree. Writes nothing.

    `inventory` is None when no agent is there to ask; the kinds it owns are then not judged.
    """
    rows = list(Component.objects.filter(node=node))
    inband = agent_kinds(inventory) if inventory is not None else set()
    from_bmc = bmc_kinds(rows, inband)
    agent_parts = parts_from_agent(inventory or {})
    bmc_parts = [p for p in parts_from_bmc(items) if p.kind in from_bmc]
    change = plan(rows, agent_parts, inband)
    bmc_change = plan(rows, bmc_parts, from_bmc)
    change.add += bmc_change.add
    change.update += bmc_change.update
    change.remove += bmc_change.remove
    return agent_parts + bmc_parts, change
