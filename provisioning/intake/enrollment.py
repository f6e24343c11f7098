"""Enrollment by discovery: read a BMC over Redfish, then create or update its Node and parts.

Also the explicit re-pin of a BMC certificate. Both are plain functions: the `enroll` command,
an admin form and tests call them directly.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from django.core.exceptions import ValidationError
from django.db import transaction

from fleet import events
from fleet.choices import EventKind
from fleet.models import Node, Rack, Sku

from ..core.inventory import classify, record_oob
from ..redfish import FirmwareItem, RedfishClient, hardware, topology
from ..redfish.errors import CertificateMismatch, RedfishError
from ..redfish.links import system_address
from ..redfish.tls import fetch_fingerprint, normalize_fingerprint
from .sku_match import Seen, differences, seen_from

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser


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
    sku_differences: list[str] = field(default_factory=list)


@dataclass
class Observation:
    """What enrollment read from the BMC."""

    serial: str
    model: str
    manufacturer: str
    macs: list[str]
    firmware: list[FirmwareItem]
    unsupported: dict[str, str]
    hardware: Seen | None = None


def observe(client: RedfishClient) -> Observation:
    """Read identity, MACs, firmware and hardware; features the BMC lacks are noted, not fatal."""
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
    seen = None
    try:
        parts = hardware.observe(client, firmware)
        seen = seen_from(parts["gpus"], parts["adapters"], parts["drives"])
        if seen.notes:
            unsupported["hardware"] = "; ".join(seen.notes)
    except RedfishError as exc:
        unsupported["hardware"] = str(exc)
    serial = info.serial
    if not serial and info.uuid:
        # No serial anywhere (sushy-tools' fake driver): the system UUID is the only stable id.
        serial = f"uuid-{info.uuid}"
        unsupported["serial"] = "the BMC reports no serial number; the system UUID stands in"
    if not serial:
        raise EnrollmentError("the BMC reports neither a serial number nor a system UUID")
    return Observation(serial, info.model, info.manufacturer, macs, firmware, unsupported, seen)


def _distinct_serial(client: RedfishClient, seen: Observation) -> Observation:
    """A node's serial on a BMC whose nodes share one (HPE Cray EX235n: both nodes of a blade
    report the blade's serial): the serial and the system id, so each node stays its own."""
    mine = client.system_path()
    others = [
        str(body.get("SerialNumber") or "").strip()
        for path, body in client.systems()
        if path != mine and topology.is_host(body)
    ]
    if seen.serial not in others:
        return seen
    system_id = mine.rstrip("/").rsplit("/", 1)[-1]
    seen.unsupported["serial"] = (
        f"the BMC's nodes share serial {seen.serial}; this one is {seen.serial}:{system_id}"
    )
    seen.serial = f"{seen.serial}:{system_id}"
    return seen


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
    plain_http_reason: str = "",
    force: bool = False,
    reason: str = "",
) -> EnrollmentResult:
    """Discover a node through its BMC and create or update it, its parts and its pinned cert.

    An https BMC's certificate is pinned now (the one presented, or `fingerprint` if the
    operator gives it and it matches). A node already pinned to another certificate is refused:
    re-pinning is an explicit act (repin_bmc_certificate). Hardware that does not match the SKU
    (GPU count and model, fabric NICs, DPUs, drives) is refused with what differs, unless
    `force` is given with a `reason`, which an event records.
    """
    if force and not reason.strip():
        raise EnrollmentError("forcing past a SKU mismatch needs a reason (--reason)")
    rack_obj = rack if isinstance(rack, Rack) or rack is None else resolve_rack(rack)
    sku_obj = resolve_sku(sku)
    if position is not None and rack_obj is None:
        raise EnrollmentError("a position needs a rack")
    plain_http_reason = plain_http_reason.strip()
    if bmc_url.lower().startswith("http://") and not plain_http_reason:
        raise EnrollmentError(
            f"{bmc_url} is plain HTTP, which would send the BMC password unencrypted: use "
            "https, or give the reason this BMC must be reached over plain HTTP"
        )
    pin = ""
    if bmc_url.startswith("https://"):
        pin = fetch_fingerprint(bmc_url, timeout=timeout)
        if fingerprint and normalize_fingerprint(fingerprint) != pin:
            raise CertificateMismatch(
                bmc_url,
                f"the BMC presented {pin}, not the expected {normalize_fingerprint(fingerprint)}",
            )
    with RedfishClient(
        bmc_url,
        username,
        password,
        fingerprint=pin or None,
        timeout=timeout,
        allow_plain_http=bool(plain_http_reason),
    ) as client:
        hosts = client.host_paths()
        if len(hosts) > 1 and client.system_id is None:
            # One node per ComputerSystem (HPE Cray EX235n: two nodes, one BMC); each has its
            # own serial and rack position, so each is enrolled on its own.
            ids = [path.rstrip("/").rsplit("/", 1)[-1] for path in hosts]
            addresses = ", ".join(system_address(bmc_url, i) for i in ids)
            raise EnrollmentError(
                f"this BMC serves {len(ids)} nodes ({', '.join(ids)}): enroll each by the "
                f"address of its system: {addresses}"
            )
        seen = observe(client)
        if len(hosts) > 1:
            seen = _distinct_serial(client, seen)
    existing = Node.objects.filter(serial=seen.serial).first()
    if existing and existing.bmc_cert_fingerprint and pin and existing.bmc_cert_fingerprint != pin:
        raise CertificateMismatch(
            bmc_url,
            f"node {existing.serial} is pinned to {existing.bmc_cert_fingerprint} but the BMC "
            f"presented {pin}; re-pin it explicitly if the BMC's certificate really changed",
        )
    if existing is None and sku_obj is None:
        raise EnrollmentError(f"node {seen.serial} is new: give its SKU (--sku)")
    sku_for_check = sku_obj or existing.sku
    mismatch = differences(sku_for_check, seen.hardware) if seen.hardware else []
    if mismatch and not force:
        raise EnrollmentError(
            f"the BMC at {bmc_url} does not match SKU {sku_for_check.name}: "
            + "; ".join(mismatch)
            + " (enroll with --force --reason if this is intended)"
        )
    result = _save(
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
        plain_http_reason if bmc_url.lower().startswith("http://") else "",
    )
    if mismatch:
        events.record(
            result.node,
            EventKind.ATTENTION,
            actor=actor,
            actor_label=actor_label or ("" if actor else "enroll"),
            message=f"Enrolled as {sku_for_check.name} despite: {'; '.join(mismatch)}",
            data={"sku": sku_for_check.name, "differences": mismatch, "reason": reason},
        )
    result.sku_differences = mismatch
    return result


def _save(
    existing, seen, bmc_url, username, password, pin, sku, rack, position, actor, label, plain
):
    node = existing or Node(serial=seen.serial)
    wanted: dict[str, Any] = {
        "bmc_address": bmc_url,
        "bmc_username": username,
        "bmc_plain_http_reason": plain,
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
        count, unclassified = _record_parts(node, seen)
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
        if "bmc_plain_http_reason" in changed:
            events.record_plain_http_mark(node, **who)
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


def _record_parts(node: Node, seen: Observation) -> tuple[int, list[str]]:
    """Record the parts the BMC lists; the number listed and the names no kind matched."""
    unclassified = [item.name for item in seen.firmware if classify(item) is None]
    if "firmware_inventory" in seen.unsupported:
        # Nothing was read, which is not "no parts": the stored inventory stays as it was.
        return 0, unclassified
    record_oob(node, seen.firmware)
    return len(seen.firmware) - len(unclassified), unclassified


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
