"""Observed inventory: mapping what a BMC or an agent reports onto Component rows."""

from __future__ import annotations

from typing import Any

from django.utils import timezone

from fleet.choices import ComponentKind
from fleet.models import Component, Node

from .enrollment import classify
from .redfish import FirmwareItem

# In-band inventory keys and the component kind each lists.
INBAND_KINDS = {
    "gpus": ComponentKind.GPU,
    "nics": ComponentKind.NIC,
    "dpus": ComponentKind.DPU,
    "drives": ComponentKind.NVME,
}


def firmware_by_kind(items: list[FirmwareItem]) -> dict[str, list[FirmwareItem]]:
    """FirmwareInventory members grouped by the component kind each one is."""
    out: dict[str, list[FirmwareItem]] = {}
    for item in items:
        kind = classify(item)
        if kind:
            out.setdefault(str(kind), []).append(item)
    return out


def _upsert(node: Node, rows: list[tuple[str, str, dict[str, Any]]]) -> int:
    """Create or update components (kind, slot, fields); the number changed (no write if none).

    One read of the node's components for the lot: a node has dozens, and this runs on every
    firmware phase's verify.
    """
    existing = {(c.kind, c.slot): c for c in Component.objects.filter(node=node)}
    new: dict[tuple[str, str], Component] = {}
    updated: dict[tuple[str, str], Component] = {}
    changed_fields: set[str] = set()
    now = timezone.now()
    for kind, slot, fields in rows:
        current = existing.get((kind, slot))
        if current is None:
            # Keyed by slot: a slot reported twice in one inventory is written once, the last.
            new[(kind, slot)] = Component(node=node, kind=kind, slot=slot, **fields)
            continue
        delta = {k: v for k, v in fields.items() if getattr(current, k) != v}
        if delta:
            for k, v in delta.items():
                setattr(current, k, v)
            current.observed_at = now
            changed_fields.update(delta)
            updated[(kind, slot)] = current
    # One INSERT for every new part and one UPDATE for every changed one: a node's first
    # in-band inventory is 26 parts, and a NIC firmware update changes eight.
    if new:
        Component.objects.bulk_create(new.values())
    if updated:
        fields = sorted(changed_fields | {"observed_at"})
        Component.objects.bulk_update(updated.values(), fields)
    return len(new) + len(updated)


def record_oob(node: Node, items: list[FirmwareItem]) -> int:
    """Record BMC, BIOS and HGX firmware as the BMC reports it; returns rows changed."""
    rows = []
    for kind, members in firmware_by_kind(items).items():
        for index, item in enumerate(members):
            slot = kind.upper() if len(members) == 1 else f"{kind.upper()} {index}"
            fields = {"model": item.name, "firmware_version": item.version,
                      "updateable": item.updateable}  # fmt: skip
            rows.append((kind, slot, fields))
    return _upsert(node, rows)


def record_inband(node: Node, inventory: dict[str, Any]) -> int:
    """Record GPUs, NICs, DPUs and drives as the agent reports them; returns rows changed."""
    rows = []
    for key, kind in INBAND_KINDS.items():
        label = {"gpus": "GPU", "nics": "NIC", "dpus": "DPU", "drives": "NVMe"}[key]
        for index, part in enumerate(inventory.get(key) or []):
            fields = {
                "model": str(part.get("model", "")),
                "serial": str(part.get("serial", "")),
                "part_number": str(part.get("part_number", part.get("psid", ""))),
                "firmware_version": str(part.get("firmware", "")),
                "updateable": kind != ComponentKind.GPU,
            }
            rows.append((kind, f"{label} {part.get('index', index)}", fields))
    return _upsert(node, rows)
