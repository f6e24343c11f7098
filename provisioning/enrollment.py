"""Enrollment by discovery: read a BMC over Redfish, then create or update its Node and parts.

Also the explicit re-pin of a BMC certificate. Both are plain functions: the `enroll` command,
an admin form and tests call them directly.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from fleet import events
from fleet.choices import ComponentKind, EventKind
from fleet.models import Component, Node, Rack, Sku

from .redfish import FirmwareItem, RedfishClient
from .redfish.errors import CertificateMismatch, RedfishError
from .redfish.tls import fetch_fingerprint, normalize_fingerprint

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser

# Firmware inventory names to component kinds, checked in order: the first keyword found wins,
# so "BlueField" is a DPU before its letters "uefi" make it a BIOS or "network" a NIC, and an
# HGX baseboard is not a GPU.
KIND_KEYWORDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (ComponentKind.DPU, ("bluefield", "dpu")),
    (ComponentKind.BMC, ("idrac", "ilo", "bmc", "remote access", "xcc", "manager")),
    (ComponentKind.BIOS, ("bios", "system rom", "uefi")),
    (ComponentKind.HGX, ("hgx", "baseboard")),
    (ComponentKind.NVME, ("nvme", "ssd", "drive")),
    (ComponentKind.NIC, ("nic", "connectx", "ethernet", "network", "infiniband", "adapter")),
    (ComponentKind.GPU, ("gpu", "a100", "h100")),
    (ComponentKind.PSU, ("power supply", "psu")),
    (ComponentKind.CPU, ("cpu", "processor")),
)


class EnrollmentError(Exception):
    """Enrollment cannot proceed; the message says what a person must do."""


@dataclass
class EnrollmentResult:
    """What enrollment did: the node, whether it is new, and what changed."""

    node: Node
    created: bool
    changed: list[str] = field(default_factory=list)
    components: int = 0
    unclassified: list[str] = field(default_factory=list)
    unsupported: dict[str, str] = field(default_factory=dict)


def classify(item: FirmwareItem) -> str | None:
    """The component kind a firmware inventory entry belongs to, or None if unknown."""
    text = f"{item.name} {item.id}".lower()
    for kind, words in KIND_KEYWORDS:
        if any(word in text for word in words):
            return kind
    return None


@dataclass
class Observation:
    """What enrollment read from the BMC."""

    serial: str
    model: str
    manufacturer: str
    macs: list[str]
    firmware: list[FirmwareItem]
    unsupported: dict[str, str]


def observe(client: RedfishClient) -> Observation:
    """Read identity, MACs and firmware; features the BMC lacks are noted, not fatal."""
    info = client.system_info()
    unsupported: dict[str, str] = {}
    macs: list[str] = []
    firmware: list[FirmwareItem] = []
    try:
        macs = client.mac_addresses()
    except RedfishError as exc:
        unsupported["macs"] = str(exc)
    try:
        firmware = client.firmware_inventory()
    except RedfishError as exc:
        unsupported["firmware_inventory"] = str(exc)
    serial = info.serial
    if not serial and info.uuid:
        # No serial anywhere (sushy-tools' fake driver): the system UUID is the only stable id.
        serial = f"uuid-{info.uuid}"
        unsupported["serial"] = "the BMC reports no serial number; the system UUID stands in"
    if not serial:
        raise EnrollmentError("the BMC reports neither a serial number nor a system UUID")
    return Observation(serial, info.model, info.manufacturer, macs, firmware, unsupported)


def resolve_rack(name: str | None) -> Rack | None:
    """A rack by "SITE/RACK" or by a rack name that is unique across sites."""
    if not name:
        return None
    site, _, rack = name.rpartition("/")
    racks = Rack.objects.filter(name=rack, **({"site__name": site} if site else {}))
    found = list(racks[:2])
    if len(found) != 1:
        raise EnrollmentError(
            f"rack {name!r} " + ("is ambiguous: use SITE/RACK" if found else "does not exist")
        )
    return found[0]


def resolve_sku(name: str | Sku | None) -> Sku | None:
    if name is None or isinstance(name, Sku):
        return name
    try:
        return Sku.objects.get(name=name)
    except Sku.DoesNotExist:
        raise EnrollmentError(f"SKU {name!r} does not exist") from None


def enroll_node(
    bmc_url: str,
    username: str,
    password: str,
    *,
    sku: str | Sku | None = None,
    rack: str | Rack | None = None,
    position: int | None = None,
    fingerprint: str | None = None,
    actor: AbstractBaseUser | None = None,
    actor_label: str = "",
    timeout: float = 10.0,
) -> EnrollmentResult:
    """Discover a node through its BMC and create or update it, its parts and its pinned cert.

    An https BMC's certificate is pinned now (the one presented, or `fingerprint` if the
    operator gives it and it matches). A node already pinned to another certificate is refused:
    re-pinning is an explicit act (repin_bmc_certificate).
    """
    rack_obj = rack if isinstance(rack, Rack) or rack is None else resolve_rack(rack)
    sku_obj = resolve_sku(sku)
    if position is not None and rack_obj is None:
        raise EnrollmentError("a position needs a rack")
    pin = ""
    if bmc_url.startswith("https://"):
        pin = fetch_fingerprint(bmc_url, timeout=timeout)
        if fingerprint and normalize_fingerprint(fingerprint) != pin:
            raise CertificateMismatch(
                bmc_url,
                f"the BMC presented {pin}, not the expected {normalize_fingerprint(fingerprint)}",
            )
    with RedfishClient(
        bmc_url, username, password, fingerprint=pin or None, timeout=timeout
    ) as client:
        seen = observe(client)
    existing = Node.objects.filter(serial=seen.serial).first()
    if existing and existing.bmc_cert_fingerprint and pin and existing.bmc_cert_fingerprint != pin:
        raise CertificateMismatch(
            bmc_url,
            f"node {existing.serial} is pinned to {existing.bmc_cert_fingerprint} but the BMC "
            f"presented {pin}; re-pin it explicitly if the BMC's certificate really changed",
        )
    if existing is None and sku_obj is None:
        raise EnrollmentError(f"node {seen.serial} is new: give its SKU (--sku)")
    return _save(
        existing,
        seen,
        bmc_url,
        username,
        password,
        pin,
        sku_obj,
        rack_obj,
        position,
        actor,
        actor_label,
    )


def _save(existing, seen, bmc_url, username, password, pin, sku, rack, position, actor, label):
    node = existing or Node(serial=seen.serial)
    wanted: dict[str, Any] = {
        "bmc_address": bmc_url,
        "bmc_username": username,
        "mac_addresses": seen.macs,
    }
    if sku is not None:
        wanted["sku"] = sku
    if rack is not None:
        wanted["rack"] = rack
    if position is not None:
        wanted["position"] = position
    changed = [name for name, value in wanted.items() if getattr(node, name, None) != value]
    if existing is None or existing.bmc_password != password:
        changed.append("bmc_password")  # named, never shown
    for name, value in wanted.items():
        setattr(node, name, value)
    node.bmc_password = password
    newly_pinned = bool(pin) and node.bmc_cert_fingerprint != pin
    node.bmc_cert_fingerprint = pin or node.bmc_cert_fingerprint
    try:
        node.full_clean()
    except ValidationError as exc:
        raise EnrollmentError(
            "; ".join(f"{k}: {' '.join(v)}" for k, v in exc.message_dict.items())
        ) from None
    who = {"actor": actor, "actor_label": label or ("" if actor else "enroll")}
    with transaction.atomic():
        node.save()
        count, unclassified = save_firmware_components(node, seen.firmware)
        data = {
            "bmc_address": bmc_url,
            "model": seen.model,
            "manufacturer": seen.manufacturer,
            "macs": seen.macs,
            "components": count,
            "changed": sorted(set(changed)),
            "unsupported": seen.unsupported,
        }
        if existing is None:
            events.record(
                node, EventKind.ENROLLED, message=f"Enrolled from {bmc_url}", data=data, **who
            )
        elif changed:
            events.record(
                node, EventKind.UPDATED, message=f"Re-read from {bmc_url}", data=data, **who
            )
        if newly_pinned:
            events.record(
                node,
                EventKind.BMC_CERT_PINNED,
                message="BMC certificate pinned at enrollment",
                data={"fingerprint": pin, "previous": ""},
                **who,
            )
    return EnrollmentResult(
        node=node,
        created=existing is None,
        changed=sorted(set(changed)),
        components=count,
        unclassified=unclassified,
        unsupported=seen.unsupported,
    )


def save_firmware_components(node: Node, firmware: list[FirmwareItem]) -> tuple[int, list[str]]:
    """Create or update one Component per classified firmware entry; slots are entry names."""
    seen_slots: dict[tuple[str, str], int] = {}
    unclassified = []
    now = timezone.now()
    for item in firmware:
        kind = classify(item)
        if kind is None:
            unclassified.append(item.name)
            continue
        slot = item.name or item.id
        seen_slots[(kind, slot)] = seen_slots.get((kind, slot), 0) + 1
        if seen_slots[(kind, slot)] > 1:
            slot = f"{slot} #{seen_slots[(kind, slot)]}"
        Component.objects.update_or_create(
            node=node,
            kind=kind,
            slot=slot[:100],
            defaults={
                "model": item.name[:200],
                "firmware_version": item.version[:100],
                "updateable": item.updateable,
                "observed_at": now,
            },
        )
    return sum(seen_slots.values()), unclassified


def repin_bmc_certificate(
    node: Node,
    actor: AbstractBaseUser | None = None,
    *,
    fingerprint: str | None = None,
    actor_label: str = "",
    timeout: float = 10.0,
) -> str:
    """Pin the certificate the BMC presents now (or the given fingerprint); record who did it.

    This is the only way a pinned certificate changes after enrollment (a replaced BMC board,
    a regenerated certificate): an explicit admin act that leaves an event.
    """
    new = (
        normalize_fingerprint(fingerprint)
        if fingerprint
        else fetch_fingerprint(node.bmc_address, timeout=timeout)
    )
    previous = node.bmc_cert_fingerprint
    with transaction.atomic():
        Node.objects.filter(pk=node.pk).update(bmc_cert_fingerprint=new)
        node.bmc_cert_fingerprint = new
        events.record(
            node,
            EventKind.BMC_CERT_PINNED,
            actor=actor,
            actor_label=actor_label or ("" if actor else "system"),
            message="BMC certificate re-pinned" if previous else "BMC certificate pinned",
            data={"fingerprint": new, "previous": previous},
        )
    return new
