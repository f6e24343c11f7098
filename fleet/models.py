"""The fleet's domain: sites, racks, SKUs, nodes, observed components, manifests and events."""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models, transaction
from django.utils import timezone

from . import windows
from .choices import (
    DOCUMENT_STATUS_COLORS,
    NODE_STATE_COLORS,
    NODE_STATE_ICONS,
    ComponentKind,
    ComponentSource,
    DocumentStatus,
    EventKind,
    NodeKind,
    NodeState,
)
from .documents import DocumentInvalid, next_version, replace_version
from .fields import EncryptedTextField
from .manifests import parse_manifest

# Rack-scale systems' models live beside these; importing them here registers them with Django.
from .rack_scale import NvlinkDomain, RackSystem, SkuMember  # noqa: F401


class Site(models.Model):
    """A data center hall: a place with racks."""

    name = models.CharField(max_length=100, unique=True)
    description = models.TextField(blank=True)
    time_zone = models.CharField(
        max_length=64,
        default="UTC",
        help_text="IANA time zone its maintenance windows are in, e.g. Europe/Berlin",
    )
    own_workers = models.BooleanField(
        default=False,
        help_text="The site's BMC and boot work (Redfish, boot media, iPXE, the agents' "
        "downloads) goes to its own queue, served only by workers started with --site NAME in "
        "its hall; its runs wait while none is alive",
    )
    node_plane_url = models.URLField(
        blank=True,
        help_text="The site's own node plane (greenlight.node_wsgi in its hall): where its BMCs "
        "fetch boot media and its agents report. Empty: GREENLIGHT_BOOT_MEDIA_URL and "
        "GREENLIGHT_AGENT_URL",
    )

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        try:
            windows.zone(self.time_zone)
        except windows.BadWindow as exc:
            raise ValidationError({"time_zone": str(exc)}) from None


class SiteWorker(models.Model):
    """A Celery worker serving one site's queue (started with --site), as its heartbeat says."""

    site = models.ForeignKey(Site, on_delete=models.CASCADE, related_name="workers")
    name = models.CharField(max_length=200, help_text="the worker's Celery node name")
    started_at = models.DateTimeField()
    seen_at = models.DateTimeField()
    stopped_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["site", "name"], name="one_row_per_worker")]

    def __str__(self) -> str:
        return f"{self.name} ({self.site})"


class MaintenanceWindow(models.Model):
    """When the site lets Greenlight take nodes out (rollouts wait outside it): local time
    from `start` to `end` (past midnight when end is earlier) on `days`."""

    site = models.ForeignKey(Site, on_delete=models.CASCADE, related_name="windows")
    days = models.CharField(
        max_length=40, default="daily", help_text="mon..sun, ranges (mon-fri) or daily"
    )
    start = models.TimeField()
    end = models.TimeField()

    class Meta:
        ordering = ["site", "start"]

    def __str__(self) -> str:
        return f"{self.site}: {self.days} {self.start:%H:%M}-{self.end:%H:%M}"

    def clean(self) -> None:
        try:
            windows.parse_days(self.days)
        except windows.BadWindow as exc:
            raise ValidationError({"days": str(exc)}) from None
        if self.start == self.end:
            raise ValidationError({"end": "a window must have a length: end equals start"})

    def as_window(self) -> windows.Window:
        return windows.Window(windows.parse_days(self.days), self.start, self.end)


class Rack(models.Model):
    """A rack in a site, with U positions numbered from the bottom (1) up to its height."""

    site = models.ForeignKey(Site, on_delete=models.PROTECT, related_name="racks")
    name = models.CharField(max_length=100)
    height_u = models.PositiveSmallIntegerField(default=42)

    class Meta:
        ordering = ["site__name", "name"]
        constraints = [
            models.UniqueConstraint(fields=["site", "name"], name="rack_unique_name_per_site"),
        ]

    def __str__(self) -> str:
        return f"{self.site.name}/{self.name}"

    def group_name(self) -> str:
        """The channel-layer group browsers watching this rack join."""
        return f"rack-{self.pk}"


class Sku(models.Model):
    """A hardware profile: what a healthy node of this kind contains."""

    name = models.SlugField(max_length=100, unique=True)
    description = models.CharField(max_length=200, blank=True)
    gpu_count = models.PositiveSmallIntegerField()
    gpu_model = models.CharField(max_length=100, blank=True)
    nic_count = models.PositiveSmallIntegerField(help_text="Fabric NICs")
    nic_line_rate_gbps = models.PositiveIntegerField(help_text="Line rate of one fabric NIC")
    dpu_count = models.PositiveSmallIntegerField(default=0)
    drive_count = models.PositiveSmallIntegerField()
    nvlink_bandwidth_gbps = models.PositiveIntegerField(
        default=0, help_text="Spec unidirectional NVLink bandwidth per GPU, GB/s"
    )

    class Meta:
        ordering = ["name"]
        verbose_name = "SKU"

    def __str__(self) -> str:
        return self.name


PLAIN_HTTP_REFUSED = (
    "Plain http:// would send the BMC password unencrypted: use https://, or give the reason "
    "this BMC must be reached over plain HTTP (BMC plain-HTTP reason)."
)


class Node(models.Model):
    """A physical server: where it sits, how to reach its BMC, and where it is in its life."""

    serial = models.CharField(max_length=100, unique=True)
    hostname = models.CharField(max_length=100, blank=True)
    sku = models.ForeignKey(Sku, on_delete=models.PROTECT, related_name="nodes")
    rack = models.ForeignKey(
        Rack, on_delete=models.PROTECT, related_name="nodes", null=True, blank=True
    )
    position = models.PositiveSmallIntegerField(null=True, blank=True, help_text="Lowest U")
    kind = models.CharField(
        max_length=20,
        choices=NodeKind.choices,
        default=NodeKind.SERVER,
        help_text="A server, or a member of its rack's rack-scale system",
    )
    member_index = models.PositiveSmallIntegerField(
        null=True, blank=True, help_text="A member's number among its kind in the rack, from 1"
    )
    bmc_address = models.CharField(max_length=200, help_text="https://host[:port] of the BMC")
    bmc_username = models.CharField(max_length=100)
    bmc_password = EncryptedTextField(blank=True)
    bmc_cert_fingerprint = models.CharField(
        max_length=100, blank=True, help_text="SHA-256 of the BMC's pinned certificate"
    )
    bmc_plain_http_reason = models.CharField(
        "BMC plain-HTTP reason",
        max_length=300,
        blank=True,
        help_text="Why this BMC may be reached over plain http:// (its password then crosses the "
        "network unencrypted). Empty: https only.",
    )
    mac_addresses = models.JSONField(default=list, blank=True)
    bios_attributes = models.JSONField(default=dict, blank=True, help_text="Last observed")
    state = models.CharField(
        max_length=20, choices=NodeState.choices, default=NodeState.ENROLLED, editable=False
    )
    state_changed_at = models.DateTimeField(default=timezone.now, editable=False)
    manifest = models.ForeignKey(
        "Manifest",
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="nodes",
        help_text="The manifest version the node was last provisioned to",
    )
    tenant = models.CharField(max_length=100, blank=True)
    allocation_ref = models.CharField(max_length=100, blank=True)
    allocated_at = models.DateTimeField(null=True, blank=True)
    last_erased_at = models.DateTimeField(
        null=True, blank=True, help_text="When every drive was last crypto-erased"
    )
    attention = models.CharField(
        max_length=300, blank=True, help_text="What a person must do for this node, if anything"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["rack", "position", "serial"]
        constraints = [
            models.UniqueConstraint(fields=["rack", "position"], name="node_unique_rack_position"),
            models.UniqueConstraint(
                fields=["rack", "kind", "member_index"], name="node_unique_member_slot"
            ),
        ]
        permissions = [
            ("start_run", "Can start, retry and abort runs"),
            ("skip_phase", "Can skip a phase of a run"),
            ("approve_node", "Can approve a node into service"),
            ("quarantine_node", "Can quarantine a node"),
            ("override_approval", "Can approve a node whose gates did not all pass"),
        ]

    def __str__(self) -> str:
        return self.serial

    def clean(self) -> None:
        if self.position is not None and self.rack_id is not None:
            if not 1 <= self.position <= self.rack.height_u:
                raise ValidationError(
                    {"position": f"U{self.position} is outside the rack's 1-{self.rack.height_u}"}
                )
        if self.position is not None and self.rack_id is None:
            raise ValidationError({"rack": "A position needs a rack."})
        if self.kind != NodeKind.SERVER and self.rack_id is None:
            raise ValidationError({"rack": f"A {self.get_kind_display().lower()} needs a rack."})
        if self.member_index is not None and self.kind == NodeKind.SERVER:
            raise ValidationError({"member_index": "Only a rack member has a member number."})
        if self.bmc_is_plain_http() and not self.bmc_plain_http_reason.strip():
            raise ValidationError({"bmc_address": PLAIN_HTTP_REFUSED})

    def bmc_is_plain_http(self) -> bool:
        """True if the BMC address is http://: allowed only with a reason an admin gave."""
        return self.bmc_address.strip().lower().startswith("http://")

    def bmc_allows_plain_http(self) -> bool:
        """True if an admin marked this BMC as plain HTTP, with a reason."""
        return bool(self.bmc_plain_http_reason.strip())

    def get_state_color(self) -> str:
        return NODE_STATE_COLORS[NodeState(self.state)]

    def get_state_icon(self) -> str:
        return NODE_STATE_ICONS[NodeState(self.state)]


class Component(models.Model):
    """One observed part of a node: what it is, where it sits, its serial and firmware."""

    node = models.ForeignKey(Node, on_delete=models.CASCADE, related_name="components")
    kind = models.CharField(max_length=20, choices=ComponentKind.choices)
    slot = models.CharField(max_length=100, help_text="Position or id, e.g. GPU 3, NIC 0")
    model = models.CharField(max_length=200, blank=True)
    serial = models.CharField(max_length=100, blank=True)
    part_number = models.CharField(max_length=100, blank=True)
    firmware_version = models.CharField(max_length=100, blank=True)
    updateable = models.BooleanField(default=False)
    source = models.CharField(
        max_length=10,
        choices=ComponentSource.choices,
        default=ComponentSource.BMC,
        help_text="Who last observed the part: its kind belongs to the agent once it reported it",
    )
    observed_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["node", "kind", "slot"]
        constraints = [
            models.UniqueConstraint(
                fields=["node", "kind", "slot"], name="component_unique_slot_per_node"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.node.serial} {self.get_kind_display()} {self.slot}"


class VersionedDocument(models.Model):
    """A YAML document versioned per SKU: drafts are edited, published versions are frozen.

    Subclasses name the parser that turns `yaml_text` into `spec` (see `parse_yaml`).
    """

    version = models.CharField(max_length=40)
    status = models.CharField(
        max_length=20,
        choices=DocumentStatus.choices,
        default=DocumentStatus.DRAFT,
        editable=False,
    )
    yaml_text = models.TextField("YAML")
    spec = models.JSONField(default=dict, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    published_at = models.DateTimeField(null=True, blank=True, editable=False)

    class Meta:
        abstract = True

    def __str__(self) -> str:
        return f"{self.sku} {self.version} ({self.status})"

    def save(self, *args, **kwargs) -> None:
        if self.pk and self.status != DocumentStatus.DRAFT:
            stored = type(self).objects.filter(pk=self.pk).values_list("yaml_text", flat=True)
            if stored and stored[0] != self.yaml_text:
                raise ValidationError(f"{self} is {self.status} and cannot be edited")
        super().save(*args, **kwargs)

    # Each concrete document names its schema: a function from YAML text to a ParsedDocument.
    parse_yaml = staticmethod(parse_manifest)

    def get_status_color(self) -> str:
        return DOCUMENT_STATUS_COLORS[DocumentStatus(self.status)]

    def clean_fields(self, exclude=None) -> None:
        # sku and version are derived from the YAML by clean(), which runs after this: checking
        # them here would report "cannot be blank" instead of the YAML's own errors.
        super().clean_fields(exclude={*(exclude or ()), "sku", "version"})

    def clean(self) -> None:
        if self.pk and self.status != DocumentStatus.DRAFT:
            stored = type(self).objects.filter(pk=self.pk).values_list("yaml_text", flat=True)
            if stored and stored[0] != self.yaml_text:
                raise ValidationError(
                    {"yaml_text": f"{self} is {self.status}: clone it as a new draft to change it."}
                )
        try:
            parsed = self.parse_yaml(self.yaml_text)
        except DocumentInvalid as exc:
            raise ValidationError({"yaml_text": exc.messages()}) from None
        try:
            self.sku = Sku.objects.get(name=parsed.sku)
        except Sku.DoesNotExist:
            raise ValidationError(
                {"yaml_text": f"line 1: sku: unknown SKU {parsed.sku!r}"}
            ) from None
        self.version = parsed.version
        self.spec = parsed.spec
        clash = type(self).objects.filter(sku=self.sku, version=self.version).exclude(pk=self.pk)
        if clash.exists():
            raise ValidationError(
                {"yaml_text": f"version: {self.sku.name} {self.version} already exists"}
            )

    def publish(self, *, actor=None) -> None:
        """Publish this draft; the SKU's previously published version is retired."""
        if self.status != DocumentStatus.DRAFT:
            raise ValidationError(f"{self} is {self.status}; only a draft can be published")
        model = type(self)
        with transaction.atomic():
            model.objects.filter(sku=self.sku, status=DocumentStatus.PUBLISHED).update(
                status=DocumentStatus.RETIRED
            )
            updated = model.objects.filter(pk=self.pk, status=DocumentStatus.DRAFT).update(
                status=DocumentStatus.PUBLISHED, published_at=timezone.now()
            )
            if not updated:
                raise ValidationError(f"{self} was changed by someone else; reload it")
        self.refresh_from_db()

    def clone_as_draft(self, *, actor=None):
        """Create a new draft from this version, with the next patch version number."""
        model = type(self)
        taken = set(model.objects.filter(sku=self.sku).values_list("version", flat=True))
        version = next_version(self.version)
        while version in taken:
            version = next_version(version)
        clone = model(
            sku=self.sku,
            version=version,
            yaml_text=replace_version(self.yaml_text, version),
            spec={**self.spec, "version": version},
            created_by=actor,
        )
        clone.full_clean()
        clone.save()
        return clone

    def previous_version(self):
        """The version of the same SKU created just before this one, if any."""
        return (
            type(self)
            .objects.filter(sku=self.sku, created_at__lt=self.created_at)
            .order_by("-created_at")
            .first()
        )


class Manifest(VersionedDocument):
    """A golden manifest: the desired state of every node of one SKU."""

    sku = models.ForeignKey(Sku, on_delete=models.PROTECT, related_name="manifests")

    class Meta:
        ordering = ["sku__name", "-created_at"]
        constraints = [
            models.UniqueConstraint(fields=["sku", "version"], name="manifest_unique_version"),
            models.UniqueConstraint(
                fields=["sku"],
                condition=models.Q(status=DocumentStatus.PUBLISHED),
                name="manifest_one_published_per_sku",
            ),
        ]

    parse_yaml = staticmethod(parse_manifest)

    @classmethod
    def current_for(cls, sku: Sku) -> Manifest | None:
        """The published manifest of a SKU."""
        return cls.objects.filter(sku=sku, status=DocumentStatus.PUBLISHED).first()


class EventQuerySet(models.QuerySet):
    def update(self, **kwargs):
        raise TypeError("events are append-only")

    def delete(self):
        raise TypeError("events are append-only")


class Event(models.Model):
    """One thing that happened to a node (or the fleet). Append-only: never updated or deleted."""

    node = models.ForeignKey(
        Node, on_delete=models.PROTECT, related_name="events", null=True, blank=True
    )
    rack = models.ForeignKey(
        Rack, on_delete=models.SET_NULL, related_name="+", null=True, blank=True
    )
    kind = models.CharField(max_length=30, choices=EventKind.choices)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    actor_label = models.CharField(max_length=100, blank=True, help_text="Who, when not a user")
    message = models.TextField(blank=True)
    data = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)

    objects = EventQuerySet.as_manager()

    class Meta:
        ordering = ["-id"]
        indexes = [models.Index(fields=["node", "-id"], name="event_node_recent")]

    def __str__(self) -> str:
        return f"{self.created_at:%Y-%m-%d %H:%M:%S} {self.kind} {self.node or ''}"

    def save(self, *args, **kwargs) -> None:
        if self.pk is not None:
            raise TypeError("events are append-only")
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise TypeError("events are append-only")

    def author(self) -> str:
        return self.actor.get_username() if self.actor_id else (self.actor_label or "system")
