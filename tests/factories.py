"""Factories for the fleet's objects: each returns a saved object with sensible defaults."""

from __future__ import annotations

import itertools
from pathlib import Path

from django.contrib.auth.models import Group, User

from acceptance.models import AcceptanceProfile
from fleet.models import Manifest, Node, Rack, Site, Sku

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
