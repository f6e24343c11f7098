"""Acceptance: profiles per SKU, gate results with their findings, soak telemetry, decisions."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models
from django.utils import timezone

from common.prepared_reads import PreparedRead
from fleet.choices import DocumentStatus
from fleet.models import Sku, VersionedDocument

from .choices import VERDICT_COLORS, DecisionKind, Verdict
from .gates import gate_choices
from .profiles import parse_profile
from .rack_models import RackTrayReport, RackVerdict  # noqa: F401


class AcceptanceProfile(VersionedDocument):
    """The ordered gates a node of one SKU must pass, with each gate's thresholds."""

    sku = models.ForeignKey(Sku, on_delete=models.PROTECT, related_name="acceptance_profiles")

    parse_yaml = staticmethod(parse_profile)

    class Meta:
        ordering = ["sku__name", "-created_at"]
        constraints = [
            models.UniqueConstraint(fields=["sku", "version"], name="profile_unique_version"),
            models.UniqueConstraint(
                fields=["sku"],
                condition=models.Q(status=DocumentStatus.PUBLISHED),
                name="profile_one_published_per_sku",
            ),
        ]

    @classmethod
    def current_for(cls, sku: Sku) -> AcceptanceProfile | None:
        """The published profile of a SKU."""
        return cls.objects.filter(sku=sku, status=DocumentStatus.PUBLISHED).first()

    @classmethod
    def for_manifest(cls, sku_id: int, manifest_spec: dict[str, Any]) -> AcceptanceProfile | None:
        """The profile a run on a manifest follows: the version it pins, else the published one.

        The one place a run's profile is resolved (planning, thresholds, the return to service).
        By the SKU's id: a gate's look has the node, not its SKU, and must not load it.
        """
        if sku_id is None:
            return None
        version = manifest_spec.get("acceptance_profile")
        pinned = PINNED_PROFILE.first(sku_id, str(version)) if version else None
        return pinned or PUBLISHED_PROFILE.first(sku_id)


# A profile's reads, compiled once a thread: every gate reads its node's profile for its
# thresholds when its tools are sent and again when they are done (a soak on every look), and
# building and compiling the queryset (ordered by its SKU's name, a join) cost more than the
# database did. A SKU has one published profile and one of each version: no order is needed.
PINNED_PROFILE = PreparedRead(
    lambda sku_id, version: AcceptanceProfile.objects.filter(
        sku_id=sku_id, version=version
    ).order_by()[:1]
)
PUBLISHED_PROFILE = PreparedRead(
    lambda sku_id: AcceptanceProfile.objects.filter(
        sku_id=sku_id, status=DocumentStatus.PUBLISHED
    ).order_by()[:1]
)


class GateResult(models.Model):
    """One gate on one node in one run: raw output, metrics, thresholds, verdict and findings.

    A result without a run is a person's upload of a manual tool run: it informs, it never
    counts toward approving the node.
    """

    run = models.ForeignKey(
        "provisioning.Run",
        on_delete=models.CASCADE,
        related_name="gate_results",
        null=True,
        blank=True,
    )
    uploaded_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    node = models.ForeignKey("fleet.Node", on_delete=models.CASCADE, related_name="gate_results")
    gate = models.CharField(max_length=30, choices=gate_choices)
    verdict = models.CharField(max_length=10, choices=Verdict.choices)
    raw_output = models.JSONField(default=dict, help_text="{tool: the tool's output as text}")
    metrics = models.JSONField(default=dict)
    thresholds = models.JSONField(default=dict)
    findings = models.JSONField(default=list, help_text="[{part, part_serial, kind, message}]")
    tool_versions = models.JSONField(default=dict)
    started_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["run", "started_at"]
        constraints = [
            models.UniqueConstraint(fields=["run", "gate"], name="gate_result_one_per_run"),
        ]

    def __str__(self) -> str:
        return f"{self.gate} on {self.node_id}: {self.verdict}"

    def get_verdict_color(self) -> str:
        return VERDICT_COLORS[Verdict(self.verdict)]


class SoakSample(models.Model):
    """One telemetry sample of a burn-in soak, for the UI's chart."""

    gate_result = models.ForeignKey(GateResult, on_delete=models.CASCADE, related_name="samples")
    lab_t_s = models.FloatField(help_text="Seconds since the soak started (node's clock)")
    gpu_temps_c = models.JSONField(default=list)
    gpu_power_w = models.JSONField(default=list)
    gpus = models.JSONField(
        default=list, help_text="Per GPU: temp_c, power_w, sm_clock_mhz, clocks_event_reasons, lost"
    )
    busbw_gbps = models.FloatField(null=True, blank=True)

    class Meta:
        ordering = ["gate_result", "lab_t_s"]

    def __str__(self) -> str:
        return f"sample t={self.lab_t_s}"


class Decision(models.Model):
    """A person's approve or quarantine of a node, with who, when and why."""

    node = models.ForeignKey("fleet.Node", on_delete=models.PROTECT, related_name="decisions")
    run = models.ForeignKey(
        "provisioning.Run", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    kind = models.CharField(max_length=20, choices=DecisionKind.choices)
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    reason = models.TextField(blank=True)
    override = models.BooleanField(
        default=False, help_text="Approved although not every gate passed (fleet admin only)"
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.kind} {self.node_id} by {self.actor_id}"


class TpmBinding(models.Model):
    """A node's TPM, bound by its endorsement key at the node's first attestation.

    Trust on first use: the first EK a node shows is recorded, and every later attestation must
    come from the same TPM. A board swap is a fleet admin's decision: delete the binding (the
    admin keeps who and when in the event log) and the next attestation binds the new TPM.
    """

    node = models.OneToOneField("fleet.Node", on_delete=models.CASCADE, related_name="tpm_binding")
    ek_sha256 = models.CharField(
        "EK SHA-256", max_length=64, help_text="SHA-256 of the EK's public area (TPM2B_PUBLIC)"
    )
    ek_public = models.TextField("EK public", help_text="TPM2B_PUBLIC, base64")
    run = models.ForeignKey(
        "provisioning.Run", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    bound_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["node"]

    def __str__(self) -> str:
        return f"{self.node_id}: EK {self.ek_sha256[:12]}"
