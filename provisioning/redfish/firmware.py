"""Firmware: inventory and updates by SimpleUpdate or multipart push (update_tracking.py follows
them)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import classify, errors, topology
from .models import FirmwareItem
from .topology import same_path

if TYPE_CHECKING:
    from .client import RedfishClient


def update_service(client: RedfishClient) -> tuple[str, dict[str, Any]]:
    """The UpdateService path and body."""
    path = client.link(client.root(), "UpdateService", url="/redfish/v1/")
    return path, client.get(path)


def entries(client: RedfishClient) -> list[FirmwareItem]:
    """Every FirmwareInventory member, placed (kind, part, model) and marked running or not."""
    path, service = update_service(client)
    if "FirmwareInventory" not in service:
        raise errors.ActionNotSupported(
            client.transport.absolute(path), "this BMC offers no firmware inventory"
        )
    collection = client.link(service, "FirmwareInventory", url=path)
    manager = client.manager_path()
    topo = classify.Topology(
        system_path=client.system_path(),
        node_managers=[manager],
        other_managers=[p for p, _ in client.managers() if not same_path(p, manager)],
        chassis_path=client.chassis_path() or "",
    )
    read = client.related_cache

    def fetch(link: str) -> dict[str, Any] | None:
        # Several entries link the same device (Lenovo: three per adapter): read it once.
        if link not in read:
            try:
                read[link] = client.get(link)
            except errors.RedfishError:
                read[link] = None
        return read[link]

    others = [
        str(body.get("Id") or "")
        for path, body in client.systems()
        if not same_path(path, topo.system_path) and topology.is_host(body)
    ]
    items = [
        classify.entry(member, body, topo, fetch)
        for member, body in client.expanded_members(collection)
        if not _of_another_node(str(body.get("Id") or ""), others)
    ]
    return classify.drop_twins(items)


def _of_another_node(entry_id: str, others: list[str]) -> bool:
    """Whether an entry belongs to another node of a multi-node BMC: HPE Cray EX235n names each
    node's entries "<system id>.<part>" (Node0.BIOS, Node1.BIOS) in one inventory."""
    return any(other and entry_id.startswith(f"{other}.") for other in others)


def inventory(client: RedfishClient) -> list[FirmwareItem]:
    """The firmware that runs now, per component: backup, staging, pending, golden and previous
    copies are left out (firmware.entries has them)."""
    return [item for item in entries(client) if item.running]
