"""Rack-scale systems (GB200/GB300 NVL72): a SKU's declared members, NVLink domains, and the
rack that is one such system, with a lifecycle of its own (fleet.rack_lifecycle moves it).

A member (compute tray, NVLink switch tray, power shelf) is a Node of its own `kind` in the
rack, enrolled from its own BMC, with its own inventory, manifest and node lifecycle. Related
models are named as "fleet.X" because fleet.models imports this module to register them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from django.core.exceptions import ValidationError
from django.db import models
from django.utils import timezone

from .choices import (
    MEMBER_KINDS,
    RACK_STATE_COLORS,
    RACK_STATE_ICONS,
    NodeKind,
    NodeState,
    RackState,
    RedfishResource,
)

if TYPE_CHECKING:
    from .models import Node

MEMBER_KIND_CHOICES = [(str(k), k.label) for k in MEMBER_KINDS]


class SkuMember(models.Model):
    """One kind of member a rack-scale SKU declares: how many, what each is enrolled as, and
    which Redfish resource's property identifies it (never a DMI product name, which varies
    by vendor and firmware)."""

    sku = models.ForeignKey("Sku", on_delete=models.CASCADE, related_name="members")
    kind = models.CharField(max_length=20, choices=MEMBER_KIND_CHOICES)
    count = models.PositiveSmallIntegerField(help_text="Members of this kind in one system")
    member_sku = models.ForeignKey(
        "Sku",
        on_delete=models.PROTECT,
        related_name="+",
        help_text="The SKU each member node is enrolled with (its manifest is the member's own)",
    )
    height_u = models.PositiveSmallIntegerField(default=1, help_text="Rack units one member takes")
    redfish_resource = models.CharField(
        max_length=20, choices=RedfishResource.choices, default=RedfishResource.CHASSIS
    )
    match_property = models.CharField(
        max_length=60, default="Model", help_text="e.g. Model, ChassisType, PartNumber"
    )
    match_pattern = models.CharField(
        max_length=200, help_text="Regular expression the property must match (search)"
    )

    class Meta:
        ordering = ["sku", "kind"]
        constraints = [
            models.UniqueConstraint(fields=["sku", "kind"], name="sku_member_one_row_per_kind"),
        ]

    def __str__(self) -> str:
        return f"{self.sku} {self.count}x {self.get_kind_display()}"

    def clean(self) -> None:
        try:
            re.compile(self.match_pattern)
        except re.error as exc:
            raise ValidationError({"match_pattern": f"not a regular expression: {exc}"}) from None
        if self.member_sku_id is not None and self.member_sku_id == self.sku_id:
            raise ValidationError({"member_sku": "a member cannot be the rack-scale SKU itself"})
        if self.count < 1:
            raise ValidationError({"count": "a declared member kind needs at least one member"})

    def matches(self, resource: str, properties: Mapping[str, Any]) -> bool:
        """Whether a Redfish resource read at enrollment is a member of this kind."""
        if resource != self.redfish_resource:
            return False
        value = properties.get(self.match_property)
        return isinstance(value, str) and re.search(self.match_pattern, value) is not None


def member_kind_for(
    sku_members: list[SkuMember], resource: str, properties: Mapping[str, Any]
) -> str | None:
    """The member kind a resource read from a BMC identifies, or None if none declares it."""
    found = [m.kind for m in sku_members if m.matches(resource, properties)]
    return found[0] if len(found) == 1 else None


class NvlinkDomain(models.Model):
    """One NVLink domain: the GPUs that share one NVLink fabric. One NVL72 rack, or two NVL36
    racks cabled as one; its racks point at it."""

    name = models.CharField(max_length=100, unique=True)
    description = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["name"]
        verbose_name = "NVLink domain"

    def __str__(self) -> str:
        return self.name


class RackSystem(models.Model):
    """A rack that is one rack-scale system of a SKU with declared members, in one NVLink
    domain, with its own lifecycle state (moved only by fleet.rack_lifecycle.transition)."""

    rack = models.OneToOneField("Rack", on_delete=models.CASCADE, related_name="system")
    sku = models.ForeignKey(
        "Sku",
        on_delete=models.PROTECT,
        related_name="rack_systems",
        help_text="The rack-scale SKU (it declares the members)",
    )
    domain = models.ForeignKey(
        NvlinkDomain,
        on_delete=models.PROTECT,
        related_name="systems",
        null=True,
        blank=True,
        help_text="The NVLink domain this rack's GPUs belong to",
    )
    state = models.CharField(
        max_length=20, choices=RackState.choices, default=RackState.DISCOVERING, editable=False
    )
    state_changed_at = models.DateTimeField(default=timezone.now, editable=False)
    attention = models.CharField(
        max_length=300, blank=True, help_text="What a person must do for this rack, if anything"
    )

    class Meta:
        ordering = ["rack"]
        verbose_name = "rack-scale system"

    def __str__(self) -> str:
        return f"{self.rack} ({self.sku})"

    def clean(self) -> None:
        if self.sku_id is not None and not self.sku.members.exists():
            raise ValidationError(
                {"sku": f"{self.sku} declares no members: it is not a rack-scale SKU"}
            )

    def get_state_color(self) -> str:
        return RACK_STATE_COLORS[RackState(self.state)]

    def get_state_icon(self) -> str:
        return RACK_STATE_ICONS[RackState(self.state)]

    def members(self) -> models.QuerySet:
        """The rack's member nodes (decommissioned ones excepted), in bring-up order."""
        return (
            self.rack.nodes.filter(kind__in=MEMBER_KINDS)
            .exclude(state=NodeState.DECOMMISSIONED)
            .order_by("kind", "member_index")
        )

    def missing_members(self) -> list[str]:
        """What discovery still lacks, one line per member kind ("2 of 9 NVLink switch trays
        enrolled"); empty when every declared member is enrolled."""
        have: dict[str, int] = {}
        for kind in self.members().values_list("kind", flat=True):
            have[kind] = have.get(kind, 0) + 1
        missing = []
        for declared in self.sku.members.all():
            found = have.get(declared.kind, 0)
            if found != declared.count:
                missing.append(f"{found} of {declared.count} {plural(declared.kind)} enrolled")
        return missing


def kind_word(kind: str) -> str:
    """A node kind's label as in a sentence: "compute tray", "NVLink switch tray"."""
    label = str(NodeKind(kind).label)
    return label if label[:2].isupper() else label[0].lower() + label[1:]


def plural(kind: str) -> str:
    """A member kind in the plural, as in a sentence: "NVLink switch trays", "power shelves"."""
    word = kind_word(kind)
    return word[:-1] + "ves" if word.endswith("f") else word + "s"


def member_label(node: Node) -> str:
    """How a message names a member: "NVLink switch tray 4 (SN0004)"."""
    return f"{kind_word(node.kind)} {node.member_index or '?'} ({node.serial})"
