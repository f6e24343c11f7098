"""The node's GPUs, drives, NICs and DPUs, read from Redfish's structure (redfish_probe, enroll).

GPUs are Processors whose ProcessorType is GPU, on the host and on any HGX baseboard the same
BMC serves; where a BMC has none it lists them as PCIe devices (Supermicro X13) or only in its
firmware inventory (HPE iLO 5). NICs and DPUs are the network adapters of the node's chassis
tree; drives are the Drives of its Storage.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from fleet.choices import ComponentKind

from . import classify, errors, topology

if TYPE_CHECKING:
    from .client import RedfishClient

# ConnectX-class adapters carry the fabric (Mellanox/NVIDIA); a SKU's nic_count counts only
# these, not the Broadcom or Intel LAN-on-motherboard ports a server also has.
FABRIC = re.compile(r"mellanox|nvidia|mlnx|connectx|\bMCX|\bMT2\d{4}|\bCX\d", re.IGNORECASE)


def _text(body: dict[str, Any], field: str) -> str:
    return " ".join(str(body.get(field) or "").split())


def _members(client: RedfishClient, resource: dict[str, Any], name: str) -> list[dict[str, Any]]:
    """The bodies of a linked collection's members; [] when the resource has no such link or
    the BMC cannot serve it."""
    link = resource.get(name)
    if not isinstance(link, dict) or not link.get("@odata.id"):
        return []
    try:
        return [body for _, body in client.expanded_members(link["@odata.id"])]
    except errors.RedfishError:
        return []


def gpu_systems(client: RedfishClient) -> list[dict[str, Any]]:
    """The node's system and the baseboards beside it (systems that are no host)."""
    node = client.system_path()
    return [
        body
        for path, body in client.systems()
        if topology.same_path(path, node) or not topology.is_host(body)
    ]


def gpus(client: RedfishClient) -> list[dict[str, str]]:
    """Each GPU: id, model, serial and firmware ("" where the BMC does not say)."""
    found: dict[str, dict[str, str]] = {}
    for system in gpu_systems(client):
        for body in _members(client, system, "Processors"):
            if str(body.get("ProcessorType") or "").upper() != "GPU":
                continue
            gpu = {
                "id": _text(body, "Id"),
                "model": _text(body, "Model"),
                "serial": _text(body, "SerialNumber"),
                "firmware": _text(body, "FirmwareVersion"),
            }
            found.setdefault(gpu["serial"] or f"{system.get('Id')}/{gpu['id']}", gpu)
    if found:
        return list(found.values())
    for chassis in node_chassis(client):
        for body in _members(client, chassis, "PCIeDevices"):
            place = classify.device_place(body)
            if place and place.kind == ComponentKind.GPU:
                gpu = {
                    "id": _text(body, "Id"),
                    "model": _text(body, "Model") or _text(body, "Name"),
                    "serial": _text(body, "SerialNumber"),
                    "firmware": _text(body, "FirmwareVersion"),
                }
                found.setdefault(gpu["serial"] or gpu["id"], gpu)
    return list(found.values())


def with_firmware(found: list[dict[str, str]], items: list) -> list[dict[str, str]]:
    """GPUs whose BMC gives no FirmwareVersion on the device take it from the inventory entry
    that links to them (Supermicro X13: entry GPU1 relates to PCIeDevices/GPU1; Lenovo XCC:
    GPU1 to Processors/GPU1)."""
    by_device = {
        link.rstrip("/").rsplit("/", 1)[-1].lower(): item.version
        for item in items
        if item.running and item.kind == ComponentKind.GPU
        for link in item.related
    }
    return [
        {**gpu, "firmware": gpu["firmware"] or by_device.get(gpu["id"].lower(), "")}
        for gpu in found
    ]


def gpus_from_inventory(items: list) -> list[dict[str, str]]:
    """GPUs a BMC lists only as firmware entries (HPE iLO 5 on the XL675d)."""
    return [
        {"id": item.id, "model": item.name, "serial": "", "firmware": item.version}
        for item in items
        if item.running and item.kind == ComponentKind.GPU
    ]


def node_chassis(client: RedfishClient) -> list[dict[str, Any]]:
    """The chassis the node's system links to and every chassis they contain, read once."""
    system = client.system()
    queue = topology.links(system, "Chassis")
    seen: dict[str, dict[str, Any]] = {}
    while queue:
        path = queue.pop(0)
        key = path.rstrip("/").lower()
        if key in seen:
            continue
        try:
            body = client.get(path)
        except errors.RedfishError:
            continue
        seen[key] = body
        queue += topology.links(body, "Contains")
    return list(seen.values())


def all_chassis(client: RedfishClient) -> list[dict[str, Any]]:
    if "Chassis" not in client.root():
        return []
    return _members(client, client.root(), "Chassis")


def adapters(client: RedfishClient) -> list[dict[str, str]]:
    """Each network adapter of the node's chassis tree (else of every chassis, on a BMC whose
    system links to a chassis without them): id, kind (nic or dpu), model, part number, serial,
    and whether it is a fabric NIC."""
    out = []
    for source in (node_chassis, all_chassis):
        for chassis in source(client):
            for body in _members(client, chassis, "NetworkAdapters"):
                place = classify.device_place(body)
                kind = ComponentKind.DPU if place and place.kind == ComponentKind.DPU else "nic"
                words = " ".join(
                    _text(body, f) for f in ("Manufacturer", "Model", "PartNumber", "Name")
                )
                out.append(
                    {
                        "id": _text(body, "Id"),
                        "kind": str(kind),
                        "model": _text(body, "Model") or _text(body, "Name"),
                        "part_number": _text(body, "PartNumber"),
                        "serial": _text(body, "SerialNumber"),
                        "fabric": kind == "nic" and bool(FABRIC.search(words)),
                    }
                )
        if out:
            break
    return out


def drives(client: RedfishClient) -> list[dict[str, str]]:
    """Each drive of the node's Storage: id, model, serial, protocol, firmware."""
    found: dict[str, dict[str, str]] = {}
    system = client.system()
    for storage in _members(client, system, "Storage"):
        for link in storage.get("Drives") or []:
            if not isinstance(link, dict) or not link.get("@odata.id"):
                continue
            try:
                body = client.get(link["@odata.id"])
            except errors.RedfishError:
                continue
            drive = {
                "id": _text(body, "Id"),
                "model": _text(body, "Model"),
                "serial": _text(body, "SerialNumber"),
                "protocol": _text(body, "Protocol"),
                "firmware": _text(body, "Revision"),
            }
            found.setdefault(link["@odata.id"].rstrip("/").lower(), drive)
    return list(found.values())


def observe(client: RedfishClient, firmware: list | None = None) -> dict[str, list | None]:
    """GPUs, network adapters and drives, each None when the BMC offers no way to see them
    (no Processors, no NetworkAdapters, no Storage): unknown is not zero."""
    systems = gpu_systems(client)
    found_gpus = gpus(client) or gpus_from_inventory(firmware or [])
    offers_gpus = bool(found_gpus) or any(s.get("Processors") for s in systems)
    chassis = node_chassis(client) + all_chassis(client)
    found_adapters = adapters(client)
    offers_adapters = bool(found_adapters) or any(c.get("NetworkAdapters") for c in chassis)
    offers_drives = bool(client.system().get("Storage"))
    return {
        "gpus": found_gpus if offers_gpus else None,
        "adapters": found_adapters if offers_adapters else None,
        "drives": drives(client) if offers_drives else None,
    }
