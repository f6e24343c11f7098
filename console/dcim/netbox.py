"""Push Greenlight's inventory to NetBox: sites, racks, device types, devices, MACs, parts.

Each object is looked up first (by serial, then by name), created if missing and patched only
in the fields that differ, so a second run against an unchanged fleet writes nothing (NetBox's
change log stays as it was). `dry_run` does the look-ups and reports what it would write.
A NetBox error on one object is recorded against that object and the sync goes on; objects
that hang off a failed one (a rack's devices, a device's interfaces) are skipped and counted.

What NetBox cannot say precisely (validating versus provisioning) goes into custom fields:
greenlight_state, greenlight_manifest_version, greenlight_last_verdict and
greenlight_board_firmware (the running version of each part not pushed as an item: BMC, BIOS, HGX
baseboard...) on devices, and greenlight_firmware on inventory items. They are created if missing.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db.models import QuerySet
from django.utils.text import slugify

from fleet.choices import ComponentKind, NodeState
from fleet.models import Node, Rack, Site, Sku

from ..inventory import inventory_nodes
from .client import NetBoxClient, NetBoxError
from .netbox_racks import RackSystems, member_heights

S = NodeState

# Greenlight state -> NetBox device status. NetBox's statuses are coarse; the exact state is in
# the greenlight_state custom field.
DEVICE_STATUS: dict[str, str] = {
    S.ENROLLED: "planned",  # racked and known, not yet touched
    S.PROVISIONING: "staged",  # being brought to its manifest
    S.VALIDATING: "staged",  # acceptance gates running
    S.AWAITING_APPROVAL: "staged",  # ready, waiting for a person
    S.IN_SERVICE: "active",  # in the scheduler's pool
    S.FAILED: "failed",  # a run failed beyond its budget
    S.QUARANTINED: "failed",  # a hardware fault was found; it must not serve
    S.BREAK_FIX: "offline",  # out for repair
    # A tenant release is a day-2 reimage, not a removal: the node is on its way back to
    # service, so it is "staged" like a provisioning node, not "decommissioning".
    S.RELEASING: "staged",
    S.WIPING: "staged",
    S.DECOMMISSIONED: "decommissioning",  # left the fleet; DCIM removes it from the rack
}

# Components pushed as inventory items.
INVENTORY_KINDS = (ComponentKind.GPU, ComponentKind.NIC, ComponentKind.DPU, ComponentKind.NVME)

DEVICE_CUSTOM_FIELDS = {
    "greenlight_state": "Greenlight lifecycle state",
    "greenlight_manifest_version": "Greenlight manifest version",
    "greenlight_last_verdict": "Greenlight last acceptance verdict",
    "greenlight_board_firmware": "Board firmware (Greenlight)",
}
ITEM_CUSTOM_FIELDS = {"greenlight_firmware": "Firmware version (Greenlight)"}
ROLE_NAME = "GPU node"
ROLE_COLOR = "4caf50"
BATCH = 50  # devices looked up per request (repeated ?serial= parameters)


class Pending:
    """Stands for an object a dry run would create: it has no NetBox id yet."""

    def __init__(self, label: str):
        self.label = label

    def __repr__(self) -> str:
        return f"<new {self.label}>"


@dataclass
class Change:
    """One write (or would-be write, or refusal) against one NetBox object."""

    action: str  # create, update, error, skip
    kind: str  # NetBox object kind, e.g. "device"
    name: str
    fields: dict[str, Any] = field(default_factory=dict)  # create: values; update: (old, new)
    error: str = ""

    def line(self) -> str:
        if self.action == "create":
            values = ", ".join(f"{k}={v!r}" for k, v in self.fields.items())
            return f"+ create {self.kind} {self.name}: {values}"
        if self.action == "update":
            values = ", ".join(f"{k}: {old!r} -> {new!r}" for k, (old, new) in self.fields.items())
            return f"~ update {self.kind} {self.name}: {values}"
        if self.action == "skip":
            return f"- skip {self.kind} {self.name}: {self.error}"
        return f"! error {self.kind} {self.name}: {self.error}"


@dataclass
class SyncReport:
    """What a sync did (or, dry, would do), object by object."""

    dry_run: bool = False
    changes: list[Change] = field(default_factory=list)
    unchanged: int = 0

    def count(self, action: str) -> int:
        return sum(1 for c in self.changes if c.action == action)

    @property
    def writes(self) -> int:
        return self.count("create") + self.count("update")

    @property
    def errors(self) -> list[Change]:
        return [c for c in self.changes if c.action == "error"]

    def error_lines(self) -> list[str]:
        return [c.line() for c in self.errors]

    def summary(self) -> str:
        verb = "would create" if self.dry_run else "created"
        return (
            f"{verb} {self.count('create')}, "
            f"{'would update' if self.dry_run else 'updated'} {self.count('update')}, "
            f"unchanged {self.unchanged}, skipped {self.count('skip')}, "
            f"errors {self.count('error')}"
        )


def _plain(value: Any) -> Any:
    """NetBox's representation reduced to what Greenlight writes: ids, choice values."""
    if isinstance(value, dict):
        if "id" in value:
            return value["id"]
        if "value" in value:
            return value["value"]
    return value


def _same(old: Any, new: Any) -> bool:
    if isinstance(new, Pending):
        return False
    if new in (None, "") and old in (None, ""):
        return True
    if isinstance(new, int | float) and not isinstance(new, bool) and old is not None:
        try:
            return float(old) == float(new)
        except (TypeError, ValueError):
            return False
    if isinstance(new, list) and isinstance(old, list):
        return sorted(map(str, old)) == sorted(map(str, new))
    return old == new


def differences(existing: dict, desired: dict) -> dict[str, tuple[Any, Any]]:
    """Fields of `desired` whose value differs in `existing` (custom fields one by one)."""
    diff: dict[str, tuple[Any, Any]] = {}
    for key, new in desired.items():
        if key == "custom_fields":
            current = existing.get("custom_fields") or {}
            for cf, value in new.items():
                if not _same(_plain(current.get(cf)), value):
                    diff[f"custom_fields.{cf}"] = (current.get(cf), value)
            continue
        old = _plain(existing.get(key))
        if key == "mac_address" and isinstance(old, str):
            old = old.upper()
        if not _same(old, new):
            diff[key] = (old, new)
    return diff


def _patch_body(diff: dict[str, tuple[Any, Any]]) -> dict[str, Any]:
    body: dict[str, Any] = {}
    for key, (_, new) in diff.items():
        if key.startswith("custom_fields."):
            body.setdefault("custom_fields", {})[key.split(".", 1)[1]] = new
        else:
            body[key] = new
    return body


class NetBoxSync:
    """One sync run against one NetBox. Use `sync()`; it returns the report."""

    def __init__(self, client: NetBoxClient, *, dry_run: bool = False, manufacturer: str = ""):
        self.client = client
        self.dry_run = dry_run
        self.manufacturer_name = manufacturer or settings.GREENLIGHT_NETBOX_MANUFACTURER
        self.report = SyncReport(dry_run=dry_run)
        self.custom_fields: set[str] = set()
        self.rack_systems = RackSystems(self)
        self.heights: dict[int, int] = {}  # a rack member SKU's declared height in U

    # --- one object ------------------------------------------------------------------------

    def upsert(
        self,
        kind: str,
        endpoint: str,
        name: str,
        existing: dict | None,
        desired: dict,
        on_create: dict | None = None,
    ) -> dict | Pending | None:
        """Create or patch one object; return it, a Pending (dry run), or None on error.

        `on_create` fields are set only when the object is created (NetBox owners may change
        them later, e.g. a device type's height, and the sync leaves that alone).
        """
        try:
            if existing is None:
                body = {**desired, **(on_create or {})}
                self.report.changes.append(Change("create", kind, name, body))
                if self.dry_run:
                    return Pending(f"{kind} {name}")
                return self.client.create(endpoint, body)
            diff = differences(existing, desired)
            if not diff:
                self.report.unchanged += 1
                return existing
            self.report.changes.append(Change("update", kind, name, diff))
            if self.dry_run:
                return existing
            return self.client.update(endpoint, existing["id"], _patch_body(diff))
        except NetBoxError as exc:
            # Recorded against this object, in place of the create/update it attempted.
            self.report.changes[-1] = Change("error", kind, name, error=str(exc))
            return None

    def lookup(self, kind: str, endpoint: str, label: str, filters: dict) -> dict | None | bool:
        """The first object matching, None if there is none, False if the look-up failed."""
        try:
            found = self.client.list(endpoint, **filters)
        except NetBoxError as exc:
            self.report.changes.append(Change("error", kind, label, error=str(exc)))
            return False
        return found[0] if found else None

    def ensure(self, kind, endpoint, label, filters: dict, desired: dict, on_create=None):
        """Look the object up by `filters`, then create or patch it."""
        existing = self.lookup(kind, endpoint, label, filters)
        if existing is False:
            return None
        return self.upsert(kind, endpoint, label, existing, desired, on_create)

    def skip(self, kind: str, name: str, why: str) -> None:
        self.report.changes.append(Change("skip", kind, name, error=why))

    # --- the fleet -------------------------------------------------------------------------

    def sync(self, nodes: QuerySet[Node] | None = None) -> SyncReport:
        nodes = inventory_nodes() if nodes is None else nodes
        self.ensure_custom_fields()
        manufacturer = self.ensure(
            "manufacturer",
            "dcim/manufacturers",
            self.manufacturer_name,
            {"name": self.manufacturer_name},
            {"name": self.manufacturer_name, "slug": slugify(self.manufacturer_name)},
        )
        role = self.ensure(
            "device role",
            "dcim/device-roles",
            ROLE_NAME,
            {"name": ROLE_NAME},
            {"name": ROLE_NAME, "slug": slugify(ROLE_NAME)},
            {"color": ROLE_COLOR},
        )
        sku_ids = nodes.values_list("sku_id", flat=True).distinct()
        self.heights = member_heights(sku_ids)
        device_types = {
            sku.pk: self.ensure_device_type(sku, manufacturer)
            for sku in Sku.objects.filter(pk__in=sku_ids)
        }
        rack_ids = nodes.exclude(rack=None).values_list("rack_id", flat=True).distinct()
        sites: dict[int, Any] = {}
        racks: dict[int, Any] = {}
        for rack in Rack.objects.filter(pk__in=rack_ids).select_related("site"):
            if rack.site_id not in sites:
                sites[rack.site_id] = self.ensure_site(rack.site)
            racks[rack.pk] = self.ensure_rack(rack, sites[rack.site_id])
        # A rack-scale system's chassis, before its members' devices name it.
        self.rack_systems.prepare(r for r, nb_rack in racks.items() if nb_rack is not None)

        batch: list[Node] = []
        for node in nodes.order_by("pk").iterator(chunk_size=500):
            if node.rack_id is None:
                self.skip("device", node.serial, "not in a rack: NetBox needs a site")
                continue
            parents = {
                "device type": device_types.get(node.sku_id),
                "device role": role,
                "rack": racks.get(node.rack_id),
            }
            missing = [k for k, v in parents.items() if v is None]
            if missing:
                self.skip("device", node.serial, f"its {', '.join(missing)} failed to sync")
                continue
            batch.append(node)
            if len(batch) >= BATCH:
                self.sync_devices(batch, device_types, role, racks, sites)
                batch = []
        if batch:
            self.sync_devices(batch, device_types, role, racks, sites)
        return self.report

    def ensure_custom_fields(self) -> None:
        wanted = [("dcim.device", DEVICE_CUSTOM_FIELDS), ("dcim.inventoryitem", ITEM_CUSTOM_FIELDS)]
        for object_type, fields in wanted:
            for name, label in fields.items():
                obj = self.ensure(
                    "custom field",
                    "extras/custom-fields",
                    name,
                    {"name": name},
                    {"name": name, "object_types": [object_type]},
                    {"label": label, "type": "text", "description": "Written by Greenlight"},
                )
                if obj is not None:
                    self.custom_fields.add(name)

    def ensure_device_type(self, sku: Sku, manufacturer) -> Any:
        if manufacturer is None:
            self.skip("device type", sku.name, "its manufacturer failed to sync")
            return None
        desired = {"manufacturer": manufacturer, "model": sku.name, "slug": slugify(sku.name)}
        # A server SKU carries no height (1U is a placeholder an owner may correct in NetBox);
        # a rack member's SKU has the height its rack-scale SKU declares.
        on_create = {"u_height": self.heights.get(sku.pk, 1), "comments": sku.description}
        if isinstance(manufacturer, Pending):
            return self.upsert(
                "device type", "dcim/device-types", sku.name, None, desired, on_create
            )
        desired["manufacturer"] = manufacturer["id"]
        return self.ensure(
            "device type",
            "dcim/device-types",
            sku.name,
            {"manufacturer_id": manufacturer["id"], "model": sku.name},
            desired,
            on_create,
        )

    def ensure_site(self, site: Site) -> Any:
        return self.ensure(
            "site",
            "dcim/sites",
            site.name,
            {"name": site.name},
            {"name": site.name, "slug": slugify(site.name)},
            {"status": "active"},
        )

    def ensure_rack(self, rack: Rack, site) -> Any:
        label = f"{rack.site.name}/{rack.name}"
        if site is None:
            self.skip("rack", label, "its site failed to sync")
            return None
        desired = {"site": site, "name": rack.name, "u_height": rack.height_u}
        if isinstance(site, Pending):
            return self.upsert("rack", "dcim/racks", label, None, desired, {"status": "active"})
        desired["site"] = site["id"]
        return self.ensure(
            "rack",
            "dcim/racks",
            label,
            {"site_id": site["id"], "name": rack.name},
            desired,
            {"status": "active"},
        )

    # --- devices, a batch at a time --------------------------------------------------------

    def _ref(self, obj: Any) -> Any:
        return obj if isinstance(obj, Pending) else obj["id"]

    def device_desired(self, node: Node, device_type, role, rack, site) -> dict:
        name = node.hostname or node.serial
        custom = {
            "greenlight_state": node.state,
            "greenlight_manifest_version": node.manifest.version if node.manifest_id else None,
            "greenlight_last_verdict": getattr(node, "last_verdict", None),
            "greenlight_board_firmware": board_firmware(node),
        }
        return {
            "name": name,
            "device_type": self._ref(device_type),
            "role": self._ref(role),
            "site": self._ref(site),
            "rack": self._ref(rack),
            "position": node.position,
            "face": "front" if node.position is not None else None,
            "serial": node.serial,
            "status": DEVICE_STATUS[NodeState(node.state)],
            "custom_fields": {k: v for k, v in custom.items() if k in self.custom_fields},
            **self.rack_systems.device_fields(node, role),
        }

    def find_devices(self, nodes: list[Node]) -> dict[int, dict | None] | None:
        """Existing devices for these nodes, matched by serial, else by name (None: failed)."""
        by_node: dict[int, dict | None] = {}
        try:
            found = self.client.list("dcim/devices", serial=[n.serial for n in nodes])
            by_serial = {d.get("serial"): d for d in found}
            unmatched = [n for n in nodes if n.serial not in by_serial]
            by_name: dict[str, dict] = {}
            if unmatched:
                names = [n.hostname or n.serial for n in unmatched]
                for d in self.client.list("dcim/devices", name=names):
                    # Matching by name must not steal another machine's record.
                    if not d.get("serial"):
                        by_name[d.get("name")] = d
        except NetBoxError as exc:
            for n in nodes:
                self.report.changes.append(Change("error", "device", n.serial, error=str(exc)))
            return None
        for n in nodes:
            by_node[n.pk] = by_serial.get(n.serial) or by_name.get(n.hostname or n.serial)
        return by_node

    def sync_devices(self, nodes: list[Node], device_types, role, racks, sites) -> None:
        existing = self.find_devices(nodes)
        if existing is None:
            return
        devices: dict[int, Any] = {}
        for node in nodes:
            rack = racks[node.rack_id]
            site = sites[node.rack.site_id]
            desired = self.device_desired(node, device_types[node.sku_id], role, rack, site)
            device = self.upsert("device", "dcim/devices", node.serial, existing[node.pk], desired)
            if device is not None:
                devices[node.pk] = device
        known = [d["id"] for d in devices.values() if not isinstance(d, Pending)]
        interfaces = self.children("interface", "dcim/interfaces", known)
        items = self.children("inventory item", "dcim/inventory-items", known)
        if interfaces is None or items is None:
            return
        for node in nodes:
            device = devices.get(node.pk)
            if device is None:
                continue
            device_id = None if isinstance(device, Pending) else device["id"]
            self.sync_interfaces(node, device, interfaces.get(device_id, {}))
            self.sync_items(node, device, items.get(device_id, {}))

    def children(self, kind: str, endpoint: str, device_ids: list[int]):
        """{device id: {name: object}} of one child kind, in one request per batch."""
        grouped: dict[int, dict[str, dict]] = defaultdict(dict)
        if not device_ids:
            return grouped
        try:
            for obj in self.client.list(endpoint, device_id=device_ids):
                grouped[_plain(obj["device"])][obj["name"]] = obj
        except NetBoxError as exc:
            self.report.changes.append(
                Change("error", kind, f"of {len(device_ids)} devices", error=str(exc))
            )
            return None
        return grouped

    def sync_interfaces(self, node: Node, device, existing: dict[str, dict]) -> None:
        for index, mac in enumerate(_macs(node.mac_addresses)):
            name = f"eth{index}"
            desired = {
                "device": self._ref(device),
                "name": name,
                "type": "other",
                "mac_address": mac,
            }
            self.upsert(
                "interface", "dcim/interfaces", f"{node.serial} {name}", existing.get(name), desired
            )

    def sync_items(self, node: Node, device, existing: dict[str, dict]) -> None:
        for component in node.components.all():
            if component.kind not in INVENTORY_KINDS:
                continue
            desired = {
                "device": self._ref(device),
                "name": component.slot,
                "serial": component.serial,
                "part_id": component.part_number,
                "description": component.model,
            }
            if "greenlight_firmware" in self.custom_fields:
                desired["custom_fields"] = {"greenlight_firmware": component.firmware_version}
            self.upsert(
                "inventory item",
                "dcim/inventory-items",
                f"{node.serial} {component.slot}",
                existing.get(component.slot),
                desired,
                {"discovered": True},
            )


def board_firmware(node: Node) -> str | None:
    """The running version of each part of a node that is no inventory item ("BMC 7.10.30.00;
    BIOS 2.3.5"), from its prefetched components; None when it has none."""
    parts = [
        f"{c.slot} {c.firmware_version}"
        for c in node.components.all()
        if c.kind not in INVENTORY_KINDS and c.firmware_version
    ]
    return "; ".join(parts) or None


def _macs(values: Iterable[Any]) -> list[str]:
    return [str(v).strip().upper() for v in values or [] if str(v).strip()]


def sync(
    client: NetBoxClient,
    *,
    dry_run: bool = False,
    nodes: QuerySet[Node] | None = None,
    manufacturer: str = "",
) -> SyncReport:
    """Push the fleet (or `nodes`) to NetBox; return what was (or would be) written."""
    return NetBoxSync(client, dry_run=dry_run, manufacturer=manufacturer).sync(nodes)
