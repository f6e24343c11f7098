"""Rack-scale systems (GB200/GB300 NVL72) in NetBox: each system is a virtual chassis, its
members the chassis' member devices.

NetBox's virtual chassis is "a set of devices which share a common control plane", with a name,
a domain and each member's position: an NVL72's trays and shelves share one NVLink domain and
are brought up, judged and approved as one. The chassis is named after the rack
("hall-1/NVL01"), its `domain` is the NVLink domain's name (NetBox keeps 30 characters; the whole
name is in the custom field), and its custom fields carry the rack's lifecycle state and its
fabric verdict ("unknown" without an observation, acceptance.rack_status). A member's
`vc_position` is stable across replacements: its kind's place in bring-up order (shelves, then
switch trays, then compute trays, per the SKU's declared counts) plus its member number. Switch
trays and power shelves get a device role of their own; compute trays are GPU nodes.

Nothing here runs for a fleet without rack-scale systems: its custom fields and roles are only
ensured when a synced rack is one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.utils.text import slugify

from acceptance.rack_status import fabric_statuses
from fleet.choices import MEMBER_KINDS, NodeKind
from fleet.models import Node, RackSystem, SkuMember

if TYPE_CHECKING:
    from .netbox import NetBoxSync

CHASSIS_CUSTOM_FIELDS = {
    "greenlight_rack_state": "Greenlight rack-scale system state",
    "greenlight_fabric_verdict": "Greenlight NVLink fabric verdict",
    "greenlight_nvlink_domain": "NVLink domain (Greenlight)",
}
# The roles of members that are no GPU node; colours from the console's palette.
MEMBER_ROLES = {
    NodeKind.SWITCH_TRAY: ("NVLink switch tray", "0072b2"),
    NodeKind.POWER_SHELF: ("Power shelf", "e69f00"),
}
DOMAIN_MAX = 30  # NetBox's VirtualChassis.domain


def member_heights(sku_ids) -> dict[int, int]:
    """The height in U each member SKU is declared with (a device type's height on creation)."""
    rows = SkuMember.objects.filter(member_sku_id__in=list(sku_ids))
    return dict(rows.values_list("member_sku_id", "height_u"))


def positions_of(system: RackSystem) -> dict[str, int]:
    """Each member kind's first vc_position minus one, from the SKU's declared counts."""
    declared = {m.kind: m.count for m in system.sku.members.all()}
    offsets: dict[str, int] = {}
    start = 0
    for kind in MEMBER_KINDS:
        offsets[kind] = start
        start += declared.get(kind, 0)
    return offsets


class RackSystems:
    """The rack-scale part of one sync: the chassis of the synced racks, and each member's
    chassis fields for its device."""

    def __init__(self, sync: NetBoxSync) -> None:
        self.sync = sync
        self.chassis: dict[int, Any] = {}  # rack id -> virtual chassis (or Pending)
        self.offsets: dict[int, dict[str, int]] = {}
        self.roles: dict[str, Any] = {}

    def prepare(self, rack_ids) -> None:
        """Ensure a chassis for every rack-scale system among the synced racks."""
        systems = list(
            RackSystem.objects.filter(rack_id__in=list(rack_ids))
            .select_related("rack__site", "domain", "sku")
            .prefetch_related("sku__members")
        )
        if not systems:
            return
        self.ensure_custom_fields()
        for kind, (name, color) in MEMBER_ROLES.items():
            self.roles[kind] = self.sync.ensure(
                "device role",
                "dcim/device-roles",
                name,
                {"name": name},
                {"name": name, "slug": slugify(name)},
                {"color": color},
            )
        fabric = fabric_statuses(systems)
        for system in systems:
            self.offsets[system.rack_id] = positions_of(system)
            self.chassis[system.rack_id] = self.ensure_chassis(system, fabric[system.pk].word)

    def ensure_custom_fields(self) -> None:
        for name, label in CHASSIS_CUSTOM_FIELDS.items():
            made = self.sync.ensure(
                "custom field",
                "extras/custom-fields",
                name,
                {"name": name},
                {"name": name, "object_types": ["dcim.virtualchassis"]},
                {"label": label, "type": "text", "description": "Written by Greenlight"},
            )
            if made is not None:
                self.sync.custom_fields.add(name)

    def ensure_chassis(self, system: RackSystem, fabric: str) -> Any:
        rack = system.rack
        label = f"{rack.site.name}/{rack.name}"
        domain = system.domain.name if system.domain is not None else ""
        custom = {
            "greenlight_rack_state": system.state,
            "greenlight_fabric_verdict": fabric,
            "greenlight_nvlink_domain": domain or None,
        }
        desired = {
            "name": label,
            "domain": domain[:DOMAIN_MAX],
            "custom_fields": {k: v for k, v in custom.items() if k in self.sync.custom_fields},
        }
        return self.sync.ensure(
            "virtual chassis", "dcim/virtual-chassis", label, {"name": label}, desired
        )

    def device_fields(self, node: Node, role: Any) -> dict[str, Any]:
        """A device's chassis fields and role: a member joins its rack's chassis at its place;
        a node that left its slot (a replaced tray, numberless) leaves the chassis."""
        if node.rack_id is None or node.kind not in MEMBER_KINDS:
            return {}
        chassis = self.chassis.get(node.rack_id)
        if chassis is None:
            return {}
        fields: dict[str, Any] = {"role": self.sync._ref(self.roles.get(node.kind) or role)}
        if node.member_index is None:
            return {**fields, "virtual_chassis": None, "vc_position": None}
        position = self.offsets[node.rack_id][node.kind] + node.member_index
        return {**fields, "virtual_chassis": self.sync._ref(chassis), "vc_position": position}
