"""Factories for the fleet's objects: each returns a saved object with sensible defaults."""

from __future__ import annotations

import itertools
from pathlib import Path

from django.contrib.auth.models import Group, User

from acceptance.models import AcceptanceProfile
from fleet.models import Manifest, Node, NvlinkDomain, Rack, RackSystem, Site, Sku, SkuMember

SAMPLES = Path(__file__).resolve().parents[1] / "acceptance" / "samples"
_seq = itertools.count(1)


def sample_manifest_yaml() -> str:
    return (SAMPLES / "hgx-h100-8gpu.manifest.yaml").read_text()


def sample_profile_yaml() -> str:
    return (SAMPLES / "hgx-h100-8gpu.profile.yaml").read_text()


def make_user(username: str, *roles: str, staff: bool = False, superuser: bool = False) -> User:
    user = User.objects.create_user(
        username, f"{username}@example.test", "pw-" + username, is_staff=staff or superuser
    )
    user.is_superuser = superuser
    user.save()
    for role in roles:
        user.groups.add(Group.objects.get(name=role))
    return user


def make_sku(name: str = "hgx-h100-8gpu", **kw) -> Sku:
    defaults = dict(
        gpu_count=8,
        gpu_model="H100-SXM5-80GB",
        nic_count=8,
        nic_line_rate_gbps=400,
        dpu_count=2,
        drive_count=8,
        nvlink_bandwidth_gbps=450,
    )
    defaults.update(kw)
    sku, _ = Sku.objects.get_or_create(name=name, defaults=defaults)
    return sku


def make_manifest(yaml_text: str | None = None, *, publish: bool = True) -> Manifest:
    make_sku()
    manifest = Manifest(yaml_text=yaml_text or sample_manifest_yaml())
    manifest.full_clean()
    manifest.save()
    if publish:
        manifest.publish()
    return manifest


def make_profile(*, publish: bool = True) -> AcceptanceProfile:
    make_sku()
    profile = AcceptanceProfile(yaml_text=sample_profile_yaml())
    profile.full_clean()
    profile.save()
    if publish:
        profile.publish()
    return profile


def make_rack(name: str = "R01", site: str = "hall-1", height_u: int = 42) -> Rack:
    site_obj, _ = Site.objects.get_or_create(name=site)
    rack, _ = Rack.objects.get_or_create(site=site_obj, name=name, defaults={"height_u": height_u})
    return rack


def make_node(serial: str | None = None, *, rack: Rack | None = None, position=None, **kw) -> Node:
    n = next(_seq)
    rack = rack or make_rack()
    node = Node.objects.create(
        serial=serial or f"SN{n:06d}",
        sku=kw.pop("sku", None) or make_sku(),
        rack=rack,
        position=position if position is not None else (n % rack.height_u) + 1,
        bmc_address=kw.pop("bmc_address", f"https://127.0.1.{n % 250 + 1}"),
        bmc_username=kw.pop("bmc_username", "root"),
        bmc_password=kw.pop("bmc_password", "s3cret-bmc-pass"),
        mac_addresses=kw.pop("mac_addresses", [f"02:00:00:00:{n // 256:02x}:{n % 256:02x}"]),
        **kw,
    )
    return node


# -- rack-scale systems (issue 34) ----------------------------------------------------------------

# A GB200 NVL72 rack: its members by kind (count, member SKU, Redfish match), and where they sit,
# bottom up: four shelves, eight compute trays, the nine switch trays, ten compute trays, four
# shelves (the NVL72 reference layout, 1U each).
NVL72_MEMBERS = {
    "power_shelf": (8, "gb200-power-shelf", "Chassis", "Model", r"^PWR-SHELF"),
    "switch_tray": (9, "gb200-nvlink-switch-tray", "Chassis", "Model", r"^P4978"),
    "compute_tray": (18, "gb200-compute-tray", "System", "Model", r"^GB200 NVL"),
}
NVL72_LAYOUT = (
    ["power_shelf"] * 4
    + ["compute_tray"] * 8
    + ["switch_tray"] * 9
    + ["compute_tray"] * 10
    + ["power_shelf"] * 4
)


def make_rack_sku(name: str = "gb200-nvl72", *, members=None) -> Sku:
    """A rack-scale SKU declaring its members, each member SKU with a published manifest."""
    rack_sku = make_sku(
        name,
        gpu_count=72,
        gpu_model="GB200",
        nic_count=0,
        nic_line_rate_gbps=0,
        dpu_count=0,
        drive_count=0,
    )
    for kind, (count, member_sku, resource, prop, pattern) in (members or NVL72_MEMBERS).items():
        gpus = 4 if kind == "compute_tray" else 0
        sku = make_sku(
            member_sku,
            gpu_count=gpus,
            gpu_model="B200" if gpus else "",
            nic_count=0,
            nic_line_rate_gbps=0,
            dpu_count=0,
            drive_count=0,
        )
        if not Manifest.current_for(sku):
            make_manifest(f'sku: {member_sku}\nversion: "1.0.0"\n')
        SkuMember.objects.get_or_create(
            sku=rack_sku,
            kind=kind,
            defaults=dict(
                count=count,
                member_sku=sku,
                redfish_resource=resource,
                match_property=prop,
                match_pattern=pattern,
            ),
        )
    return rack_sku


def make_nvl72_rack(name: str = "NVL01", *, site: str = "hall-1", stages_yaml: str = ""):
    """A fully enrolled NVL72 rack: its system (discovering), its 35 members placed per the
    layout, and the rack SKU's published manifest (`stages_yaml` its rack_stages, if given).
    Returns (system, {kind: [nodes by member number]})."""
    rack_sku = make_rack_sku()
    if not Manifest.current_for(rack_sku):
        make_manifest(f'sku: {rack_sku.name}\nversion: "1.0.0"\n{stages_yaml}')
    rack = make_rack(name, site=site, height_u=48)
    domain, _ = NvlinkDomain.objects.get_or_create(name=f"{name}-nvl72")
    system = RackSystem.objects.create(rack=rack, sku=rack_sku, domain=domain)
    members: dict[str, list[Node]] = {kind: [] for kind in NVL72_MEMBERS}
    member_skus = {m.kind: m.member_sku for m in rack_sku.members.all()}
    for position, kind in enumerate(NVL72_LAYOUT, start=1):
        index = len(members[kind]) + 1
        members[kind].append(
            make_node(
                f"{name}-{kind}-{index:02d}",
                rack=rack,
                position=position,
                sku=member_skus[kind],
                kind=kind,
                member_index=index,
            )
        )
    return system, members
