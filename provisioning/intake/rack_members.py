"""Enrolling a rack-scale system's member from its own BMC (issue 34): the Redfish resource its
SKU declares says which kind of member it is (compute tray, NVLink switch tray, power shelf), and
it is enrolled like a node, with that kind's member SKU, in the rack's slot.

The kind is read from the property the SKU's member row names (Model, ChassisType, PartNumber of
a Chassis, ComputerSystem or Manager), never from a DMI product name: NVIDIA's infra controller
rejected good trays that way. A BMC no member row matches, or more than one, is refused.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.db import transaction

from fleet.choices import RedfishResource
from fleet.models import Node, RackSystem
from fleet.rack_scale import member_kind_for

from ..redfish import RedfishClient
from ..redfish.tls import fetch_fingerprint, normalize_fingerprint
from .enrollment import EnrollmentError, EnrollmentResult, enroll_node

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser


def _read(client: RedfishClient, resource: str) -> dict[str, Any]:
    if resource == RedfishResource.CHASSIS:
        return client.chassis() or {}
    if resource == RedfishResource.MANAGER:
        return client.get(client.manager_path())
    return client.system()


def identify(system: RackSystem, client: RedfishClient) -> str:
    """The member kind this BMC is in the system's SKU; EnrollmentError if none or several."""
    declared = list(system.sku.members.all())
    read = {d.redfish_resource: _read(client, d.redfish_resource) for d in declared}
    for resource, body in read.items():
        kind = member_kind_for(declared, resource, body)
        if kind:
            return kind
    seen = ", ".join(f"{r} Model {b.get('Model')!r}" for r, b in read.items())
    raise EnrollmentError(f"no member of {system.sku} matches this BMC ({seen})")


def enroll_member(
    system: RackSystem,
    bmc_url: str,
    username: str,
    password: str,
    *,
    position: int,
    member_index: int | None = None,
    fingerprint: str | None = None,
    actor: AbstractBaseUser | None = None,
    actor_label: str = "",
    timeout: float = 10.0,
) -> EnrollmentResult:
    """Identify the member behind the BMC, then enroll it with its kind's member SKU in the
    rack at `position`, numbered `member_index` (the next free number of its kind if None)."""
    pin = fetch_fingerprint(bmc_url, timeout=timeout) if bmc_url.startswith("https://") else ""
    if fingerprint and pin and normalize_fingerprint(fingerprint) != pin:
        raise EnrollmentError(
            f"{bmc_url} presented {pin}, not {normalize_fingerprint(fingerprint)}"
        )
    with RedfishClient(bmc_url, username, password, fingerprint=pin or None, timeout=timeout) as c:
        kind = identify(system, c)
    declared = system.sku.members.get(kind=kind)
    result = enroll_node(
        bmc_url,
        username,
        password,
        sku=declared.member_sku,
        rack=system.rack,
        position=position,
        fingerprint=pin or fingerprint,
        actor=actor,
        actor_label=actor_label,
        timeout=timeout,
    )
    node = result.node
    with transaction.atomic():
        if member_index is None:
            taken = Node.objects.filter(rack=system.rack, kind=kind).exclude(pk=node.pk)
            numbers = set(taken.values_list("member_index", flat=True))
            member_index = next(n for n in range(1, declared.count + 2) if n not in numbers)
        Node.objects.filter(pk=node.pk).update(kind=kind, member_index=member_index)
    node.refresh_from_db()
    return result
