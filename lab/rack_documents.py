"""Putting a lab NVL72 rack into Greenlight as an operator would: the rack-scale SKU declaring its
members with its manifest and its profile of rack-wide gates (dcgmi mndiag), each member SKU with
its manifest (and, for a compute tray, its acceptance profile), the rack and its system, and every member enrolled from its own BMC (provisioning.intake.rack_members
reads which member it is from the Redfish resource the SKU names).

A lab rack may be smaller than an NVL72 (fewer shelves, switch trays or compute trays) where a
test's property allows: the SKU then declares those counts, and the layout keeps the NVL72's
order (shelves at the bottom and top, compute trays around the switch trays).
"""

from __future__ import annotations

from dataclasses import dataclass

from acceptance.models import AcceptanceProfile
from fleet.models import Manifest, Node, NvlinkDomain, Rack, RackSystem, Site, Sku, SkuMember
from provisioning.intake.rack_members import enroll_member

from .enrollment import publish
from .hall import LabHall
from .manifests import device_manifest_yaml, manifest_yaml, profile_yaml

# The lab flavour each member kind is built with (lab.bmc.member_flavours).
MEMBER_FLAVOUR = {
    "power_shelf": "power_shelf",
    "switch_tray": "nvl_switch",
    "compute_tray": "gb200_tray",
}
MEMBER_SKU = {
    "power_shelf": "lab-gb200-power-shelf",
    "switch_tray": "lab-gb200-nvlink-switch-tray",
    "compute_tray": "lab-gb200-compute-tray",
}
# Which Redfish resource and property identify each kind (the SKU's member rows).
MEMBER_MATCH = {
    "power_shelf": ("Chassis", "Model", r"^AHE50V660A33KWL$"),  # a Delta shelf (member_flavours)
    "switch_tray": ("Chassis", "Model", r"^N5\d{3}_LD$"),
    "compute_tray": ("System", "Model", r"^GB200 NVL$"),
}
# A compute tray's single-node gates in the lab: the GPUs, NVLink inside the tray, drives, the
# soak and the measured boot. The NCCL fabric gate (east-west, over the trays' ConnectX NICs)
# is left out: its pairing across nodes is not what an NVLink domain's bring-up is about.
COMPUTE_GATES = ("attestation", "gpu_health", "nvbandwidth", "storage", "burn_in")
# The rack-wide gates the rack-scale SKU's profile asks for beside the fabric verdict.
RACK_GATES = ("mndiag",)


@dataclass(frozen=True)
class RackShape:
    """How many of each member a lab rack holds (an NVL72 by default)."""

    name: str = "nvl72"
    shelves: int = 8
    switches: int = 9
    trays: int = 18

    def layout(self) -> list[str]:
        """Member kinds bottom up, as the NVL72 reference rack places them: half the shelves,
        eight eighteenths of the compute trays, the switch trays, the rest, the other shelves."""
        low_shelves, low_trays = self.shelves // 2, self.trays * 8 // 18
        return (
            ["power_shelf"] * low_shelves
            + ["compute_tray"] * low_trays
            + ["switch_tray"] * self.switches
            + ["compute_tray"] * (self.trays - low_trays)
            + ["power_shelf"] * (self.shelves - low_shelves)
        )

    def flavours(self) -> tuple[str, ...]:
        return tuple(MEMBER_FLAVOUR[kind] for kind in self.layout())

    def count(self, kind: str) -> int:
        return {"power_shelf": self.shelves, "switch_tray": self.switches}.get(kind, self.trays)


NVL72 = RackShape()
SHAPES = {"nvl72": NVL72}


def _member_sku(kind: str) -> Sku:
    gpus = 4 if kind == "compute_tray" else 0
    sku, _ = Sku.objects.get_or_create(
        name=MEMBER_SKU[kind],
        defaults={
            "description": f"Lab GB200 NVL72 {kind.replace('_', ' ')}",
            "gpu_count": gpus,
            "gpu_model": "NVIDIA GB200" if gpus else "",
            "nic_count": 4 if gpus else 0,
            "nic_line_rate_gbps": 400 if gpus else 0,
            "dpu_count": 2 if gpus else 0,
            "drive_count": 8 if gpus else 0,
            # What the lab's nvbandwidth generator reports per GPU pair (lab.tool_outputs).
            "nvlink_bandwidth_gbps": 450 if gpus else 0,
        },
    )
    return sku


def publish_rack_documents(
    shape: RackShape, artifact_url: str, *, soak_hours: float, stages_yaml: str = ""
) -> Sku:
    """The rack-scale SKU with its members declared and every document published."""
    rack_sku, _ = Sku.objects.get_or_create(
        name=f"lab-gb200-{shape.name}",
        defaults={"description": f"Lab GB200 rack ({shape.name})", "gpu_count": 4 * shape.trays,
                  "gpu_model": "NVIDIA GB200", "nic_count": 0, "nic_line_rate_gbps": 0,
                  "dpu_count": 0, "drive_count": 0},
    )  # fmt: skip
    for kind in MEMBER_FLAVOUR:
        sku, flavour = _member_sku(kind), MEMBER_FLAVOUR[kind]
        resource, prop, pattern = MEMBER_MATCH[kind]
        SkuMember.objects.update_or_create(
            sku=rack_sku,
            kind=kind,
            defaults={"count": shape.count(kind), "member_sku": sku, "redfish_resource": resource,
                      "match_property": prop, "match_pattern": pattern},
        )  # fmt: skip
        if kind != "compute_tray":
            publish(Manifest, sku, lambda v, f=flavour, s=sku: device_manifest_yaml(
                f, s.name, artifact_url, version=v))  # fmt: skip
            continue
        profile = publish(AcceptanceProfile, sku, lambda v, f=flavour, s=sku: profile_yaml(
            f, soak_hours=soak_hours, version=v, sku=s.name, gates=COMPUTE_GATES))  # fmt: skip
        publish(Manifest, sku, lambda v, f=flavour, s=sku, p=profile: manifest_yaml(
            f, artifact_url, version=v, profile_version=p.version, sku=s.name))  # fmt: skip
    publish(Manifest, rack_sku,
            lambda v: f'sku: {rack_sku.name}\nversion: "{v}"\n{stages_yaml}')  # fmt: skip
    publish(AcceptanceProfile, rack_sku, lambda v: (
        f'sku: {rack_sku.name}\nversion: "{v}"\nrack_gates: [{", ".join(RACK_GATES)}]\n'))  # fmt: skip
    return rack_sku


def enroll_rack(hall: LabHall, rack_sku: Sku, *, site: str, rack: str) -> RackSystem:
    """The rack and its system, every member of the hall enrolled from its BMC in layout order
    (position i + 1, numbered within its kind)."""
    site_obj, _ = Site.objects.get_or_create(name=site)
    rack_obj, _ = Rack.objects.get_or_create(site=site_obj, name=rack, defaults={"height_u": 48})
    domain, _ = NvlinkDomain.objects.get_or_create(name=f"{rack}-domain")
    system, _ = RackSystem.objects.get_or_create(
        rack=rack_obj, defaults={"sku": rack_sku, "domain": domain}
    )
    numbers: dict[str, int] = {}
    for position, bmc in enumerate(hall.bmcs, start=1):
        numbers[bmc.node.kind] = numbers.get(bmc.node.kind, 0) + 1
        enroll_member(
            system,
            bmc.https_url,
            bmc.node.username,
            bmc.node.password,
            position=position,
            member_index=numbers[bmc.node.kind],
            fingerprint=bmc.cert_fingerprint,
            actor_label="lab",
        )
    return system


def member_nodes(system: RackSystem) -> list[Node]:
    """The rack's members in position order."""
    return list(system.members().order_by("position"))
