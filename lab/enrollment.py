"""Putting a lab rack into Greenlight the way an operator would: SKU, documents, enrollment.

The lab acts as an operator here (it writes Greenlight's database through its own functions and
discovers nodes over Redfish); Greenlight's apps never import the lab.
"""

from __future__ import annotations

from acceptance.models import AcceptanceProfile
from fleet.choices import DocumentStatus
from fleet.models import Manifest, Node, Rack, Site, Sku
from provisioning.intake.enrollment import enroll_node

from .hall import LabHall
from .manifests import lab_sku_name, manifest_yaml, profile_yaml


def lab_sku(flavour: str) -> Sku:
    sku, _ = Sku.objects.get_or_create(
        name=lab_sku_name(flavour),
        defaults={
            "description": f"Lab HGX node ({flavour}-like BMC)",
            "gpu_count": 8,
            "gpu_model": "NVIDIA H100 80GB HBM3",
            "nic_count": 8,
            "nic_line_rate_gbps": 400,
            "dpu_count": 2,
            "drive_count": 8,
            "nvlink_bandwidth_gbps": 450,
        },
    )
    return sku


def publish(model, sku: Sku, text_for_version) -> object:
    """Publish the document unless the SKU's published one already says exactly this."""
    current = model.objects.filter(sku=sku, status=DocumentStatus.PUBLISHED).first()
    if current is not None and current.yaml_text == text_for_version(current.version):
        return current
    taken = set(model.objects.filter(sku=sku).values_list("version", flat=True))
    major = 1
    while f"{major}.0.0" in taken:
        major += 1
    document = model(yaml_text=text_for_version(f"{major}.0.0"))
    document.full_clean()
    document.save()
    document.publish()
    return document


def publish_lab_documents(flavour: str, artifact_url: str, *, soak_hours: float) -> Manifest:
    """The lab SKU's manifest and acceptance profile, published; returns the manifest."""
    sku = lab_sku(flavour)
    profile = publish(
        AcceptanceProfile, sku, lambda v: profile_yaml(flavour, soak_hours=soak_hours, version=v)
    )
    return publish(
        Manifest,
        sku,
        lambda v: manifest_yaml(flavour, artifact_url, version=v, profile_version=profile.version),
    )


def enroll_hall(hall: LabHall, *, site: str, rack: str, racks: int = 1) -> list[Node]:
    """Enroll every node of the hall, spread evenly over `racks` racks named `rack`-1, -2...

    Each node is discovered over Redfish through its BMC, as an operator's enrollment does.
    """
    site_obj, _ = Site.objects.get_or_create(name=site)
    per_rack = -(-len(hall.bmcs) // max(racks, 1))
    rack_objs = []
    for number in range(max(racks, 1)):
        name = rack if racks == 1 else f"{rack}-{number + 1:02d}"
        rack_obj, _ = Rack.objects.get_or_create(
            site=site_obj, name=name, defaults={"height_u": max(42, per_rack + 2)}
        )
        rack_objs.append(rack_obj)
    nodes = []
    for index, bmc in enumerate(hall.bmcs):
        result = enroll_node(
            bmc.https_url,
            bmc.node.username,
            bmc.node.password,
            sku=lab_sku(bmc.flavour),
            rack=rack_objs[index // per_rack],
            position=index % per_rack + 1,
            fingerprint=bmc.cert_fingerprint,
            actor_label="lab",
        )
        nodes.append(result.node)
    return nodes
