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


def _upsert(node: Node, kind: str, slot: str, fields: dict[str, Any]) -> bool:
    """Create or update one component; True when anything changed (no write otherwise)."""
    current = Component.objects.filter(node=node, kind=kind, slot=slot).first()
    if current is None:
        Component.objects.create(node=node, kind=kind, slot=slot, **fields)
        return True
    changed = {k: v for k, v in fields.items() if getattr(current, k) != v}
    if changed:
        Component.objects.filter(pk=current.pk).update(observed_at=timezone.now(), **changed)
    return bool(changed)


def record_oob(node: Node, items: list[FirmwareItem]) -> int:
    """Record BMC, BIOS and HGX firmware as the BMC reports it; returns rows changed."""
    changed = 0
    for kind, members in firmware_by_kind(items).items():
        for index, item in enumerate(members):
            slot = kind.upper() if len(members) == 1 else f"{kind.upper()} {index}"
            changed += _upsert(
                node,
                kind,
                slot,
                {
                    "model": item.name,
                    "firmware_version": item.version,
                    "updateable": item.updateable,
                },
            )
    return changed


def record_inband(node: Node, inventory: dict[str, Any]) -> int:
    """Record GPUs, NICs, DPUs and drives as the agent reports them; returns rows changed."""
    changed = 0
    for key, kind in INBAND_KINDS.items():
        for index, part in enumerate(inventory.get(key) or []):
            label = {"gpus": "GPU", "nics": "NIC", "dpus": "DPU", "drives": "NVMe"}[key]
            slot = f"{label} {part.get('index', index)}"
            changed += _upsert(
                node,
                kind,
                slot,
                {
                    "model": str(part.get("model", "")),
                    "serial": str(part.get("serial", "")),
                    "part_number": str(part.get("part_number", part.get("psid", ""))),
                    "firmware_version": str(part.get("firmware", "")),
                    "updateable": kind != ComponentKind.GPU,
                },
            )
    return changed
