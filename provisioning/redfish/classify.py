"""Place each FirmwareInventory entry: which component kind and part it is, and whether it runs.

Redfish's own structure comes first where the vendor table (naming.py) has no row: an entry's
RelatedItem links say what it belongs to (the node's manager, the HGX manager, the system's
BIOS, a Processor whose ProcessorType is GPU, a Drive and its protocol, a network adapter or PCIe
device and its model). An entry neither places stays unknown (kind None): nothing is guessed
into a component a firmware phase would then try to flash.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from fleet.choices import ComponentKind

from . import naming
from .models import FirmwareItem
from .topology import same_path
from .versions import normalize_version

Fetch = Callable[[str], dict[str, Any] | None]


@dataclass(frozen=True)
class Place:
    """Where an entry belongs: kind (None: no managed kind), part, and the related model."""

    kind: str | None
    part: str
    model: str = ""


UNKNOWN = Place(None, "unknown")
# Kinds a device resource (adapter, drive, processor) can settle better than a name.
DEVICE_KINDS = {ComponentKind.NIC, ComponentKind.DPU, ComponentKind.NVME, ComponentKind.GPU}


@dataclass
class Topology:
    """What the structure rules compare RelatedItem links with."""

    system_path: str
    node_managers: list[str]
    other_managers: list[str]  # an HGX tray's HMC and other controllers on the same BMC
    chassis_path: str = ""  # the node's chassis, whose NetworkAdapters a Dell FQDD names


def dell_adapter(entry_id: str, topo: Topology) -> str | None:
    """The NetworkAdapter a Dell entry's FQDD names, as a path: "..__NIC.Slot.5-1" is adapter
    NIC.Slot.5 of the system's chassis (iDRAC 9 links no RelatedItem; the FQDD is the link)."""
    found = re.search(r"__((?:NIC|InfiniBand)\.[A-Za-z]+\.\d+)-", entry_id)
    if not found or not topo.chassis_path:
        return None
    return f"{topo.chassis_path.rstrip('/')}/NetworkAdapters/{found.group(1)}"


def running_state(body: dict[str, Any]) -> tuple[bool, str]:
    """Whether an entry is the copy that runs, and its Status.State ("" when not given)."""
    entry_id, name = str(body.get("Id") or ""), str(body.get("Name") or "")
    state = str((body.get("Status") or {}).get("State") or "")
    if naming.not_running(entry_id, name) is not None:
        return False, state
    if state.lower() in naming.NOT_RUNNING_STATES or naming.oem_says_not_running(body):
        return False, state
    version = " ".join(str(body.get("Version") or "").split()).lower()
    return version not in naming.NO_VERSION, state


def device_place(resource: dict[str, Any]) -> Place | None:
    """A network adapter, PCIe device, Processor or Drive placed by what it says it is."""
    if resource.get("ProcessorType"):
        kind = str(resource["ProcessorType"]).upper()
        model = str(resource.get("Model") or "")
        if kind == "GPU":
            return Place(ComponentKind.GPU, "gpu", model)
        if kind == "CPU":
            return Place(ComponentKind.CPU, "cpu", model)
        return None
    if "Protocol" in resource or "MediaType" in resource:
        model = str(resource.get("Model") or "")
        if str(resource.get("Protocol") or "").lower() == "nvme":
            return Place(ComponentKind.NVME, "drive", model)
        return Place(None, "drive", model)
    text = " ".join(
        str(resource.get(f) or "") for f in ("Model", "Name", "PartNumber", "Id", "Description")
    )
    row = naming.device(text)
    if row is None:
        return None
    model = str(resource.get("Model") or resource.get("PartNumber") or resource.get("Name") or "")
    return Place(row.kind, row.part, model.strip())


# What a RelatedItem link (lower case) names: a device whose resource says what it is, or a
# storage controller.
DEVICE_LINK = re.compile(r"/(processors|drives|networkadapters|pciedevices)/[^/]+$")
STORAGE_LINK = re.compile(r"/(storage|simplestorage)/[^/]+(/storagecontrollers.*)?$")


def related_place(link: str, topo: Topology, fetch: Fetch) -> Place | None:
    """What one RelatedItem link says an entry belongs to, or None."""
    path = link.split("#", 1)[0]
    lowered = path.rstrip("/").lower()
    if any(same_path(path, m) for m in topo.node_managers):
        return Place(ComponentKind.BMC, "bmc")
    if any(same_path(path, m) for m in topo.other_managers):
        return Place(ComponentKind.HGX, "hmc")
    if same_path(path, topo.system_path) or same_path(path, topo.system_path + "/Bios"):
        return Place(ComponentKind.BIOS, "bios")
    if lowered.endswith("/power") or "/powersupplies" in lowered:
        return Place(ComponentKind.PSU, "psu")
    if DEVICE_LINK.search(lowered):
        resource = fetch(path)
        return device_place(resource) if resource else None
    if STORAGE_LINK.search(lowered):
        return Place(None, "storage_controller")
    return None


def place(body: dict[str, Any], topo: Topology, fetch: Fetch) -> Place:
    """An entry's place: the vendor table's row, else its RelatedItem links, else unknown."""
    entry_id, name = str(body.get("Id") or ""), str(body.get("Name") or "")
    row = naming.match(entry_id, name)
    related = [
        item["@odata.id"]
        for item in body.get("RelatedItem") or []
        if isinstance(item, dict) and item.get("@odata.id")
    ]
    if row is not None:
        if row.kind in DEVICE_KINDS:
            # A name says "NIC" for a BlueField too (Dell's NIC.Slot FQDD): the device the
            # entry links to says which it is, and its model.
            adapter = dell_adapter(entry_id, topo)
            links = related + ([adapter] if adapter else [])
            found = next((p for p in (related_place(r, topo, fetch) for r in links) if p), None)
            if found is not None and found.kind in DEVICE_KINDS:
                return found
        family = naming.nvidia_family(str(body.get("Version") or "")) if row.by_family else None
        if family is not None:
            return Place(*family)
        return Place(row.kind, row.part)
    for link in related:
        found = related_place(link, topo, fetch)
        if found is not None:
            return found
    return UNKNOWN


def entry(member: str, body: dict[str, Any], topo: Topology, fetch: Fetch) -> FirmwareItem:
    """One FirmwareInventory member as a placed FirmwareItem."""
    running, state = running_state(body)
    where = place(body, topo, fetch)
    return FirmwareItem(
        id=str(body.get("Id") or ""),
        odata_id=member,
        name=str(body.get("Name") or body.get("Id") or ""),
        version=str(body.get("Version") or "").strip(),
        updateable=bool(body.get("Updateable", False)),
        kind=str(where.kind) if where.kind else None,
        part=where.part,
        model=where.model,
        running=running,
        state=state,
        related=tuple(
            str(link["@odata.id"])
            for link in body.get("RelatedItem") or []
            if isinstance(link, dict) and link.get("@odata.id")
        ),
    )


def drop_twins(items: list[FirmwareItem]) -> list[FirmwareItem]:
    """Mark Dell's "Current-" entries that repeat an "Installed-" one as not running, where the
    iDRAC gives no Oem status to say so.

    Dell iDRAC 9 6.x lists some components twice, "Current-<code>-<version>__<FQDD>" beside
    "Installed-<code>-<version>__<FQDD>" (seen on 6.00.30.00, PowerEdge R750): one component,
    counted once.
    """
    installed = {i.id.removeprefix("Installed-") for i in items if i.id.startswith("Installed-")}
    return [
        replace(i, running=False)
        if i.id.startswith("Current-") and i.id.removeprefix("Current-") in installed
        else i
        for i in items
    ]


def comparable(item: FirmwareItem) -> str:
    """The entry's version in the form its kind compares in."""
    return normalize_version(item.kind, item.version)
