"""Rack runs: a rack-scale system brought up stage by stage, its members' node runs under them.

Everything a rack run knows is in these rows (the stage it reached, each stage's rules copied
from the manifest, each member's attempts and its latest run), so a worker that dies anywhere
leaves a run the next advance resumes at the stage and member it reached (provisioning.rack).
The run is named as "Run" (this app's model) because provisioning.models imports this module.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone

from fleet.choices import MEMBER_KINDS, StageAction, StageVerify
from fleet.models import Manifest, Node, Rack

from .choices import (
    OPEN_RACK_RUN_STATUSES,
    RACK_MEMBER_STATUS_COLORS,
    RACK_RUN_STATUS_COLORS,
    RACK_STAGE_STATUS_COLORS,
    RackMemberStatus,
    RackRunStatus,
    RackStageStatus,
)

MEMBER_KIND_CHOICES = [(str(k), k.label) for k in MEMBER_KINDS]


class RackRun(models.Model):
    """One attempt to bring a rack-scale system up by its manifest's staged rules."""

    rack = models.ForeignKey(Rack, on_delete=models.PROTECT, related_name="rack_runs")
    manifest = models.ForeignKey(
        Manifest,
        on_delete=models.PROTECT,
        related_name="rack_runs",
        help_text="The rack-scale SKU's manifest: its rack_stages are the run's rules",
    )
    status = models.CharField(
        max_length=20, choices=RackRunStatus.choices, default=RackRunStatus.RUNNING
    )
    stage_index = models.PositiveSmallIntegerField(default=0, help_text="The stage it is at")
    wait_reason = models.CharField(max_length=300, blank=True, help_text="What it waits for now")
    last_error = models.CharField(max_length=500, blank=True, help_text="Why it stopped")
    started_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    started_at = models.DateTimeField(default=timezone.now)
    # Written first by every advance: that UPDATE is the lock two advancing workers queue on.
    advanced_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-started_at", "-pk"]
        constraints = [
            # Two open rack runs of one rack would each start its members.
            models.UniqueConstraint(
                fields=["rack"],
                condition=models.Q(status__in=OPEN_RACK_RUN_STATUSES),
                name="rack_run_one_open_per_rack",
            ),
        ]

    def __str__(self) -> str:
        return f"rack run {self.pk} of {self.rack}"

    def get_status_color(self) -> str:
        return RACK_RUN_STATUS_COLORS[RackRunStatus(self.status)]


class RackRunStage(models.Model):
    """One stage of a rack run, with its rules (from the manifest) and its progress."""

    rack_run = models.ForeignKey(RackRun, on_delete=models.CASCADE, related_name="stages")
    index = models.PositiveSmallIntegerField()
    kind = models.CharField(max_length=20, choices=MEMBER_KIND_CHOICES)
    action = models.CharField(max_length=20, choices=StageAction.choices)
    max_parallel = models.PositiveSmallIntegerField()
    verify = models.CharField(max_length=20, choices=StageVerify.choices)
    retries = models.PositiveSmallIntegerField()
    time_limit_s = models.PositiveIntegerField()
    status = models.CharField(
        max_length=20, choices=RackStageStatus.choices, default=RackStageStatus.PENDING
    )
    started_at = models.DateTimeField(null=True, blank=True)
    deadline = models.DateTimeField(null=True, blank=True)
    # The check (verify): asked for once every member settled; an observer records its answer.
    verify_requested_at = models.DateTimeField(null=True, blank=True)
    verify_holds = models.BooleanField(
        null=True, blank=True, help_text="None: not observed yet (unknown, never 'holds')"
    )
    verify_reason = models.CharField(max_length=500, blank=True)
    verified_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["rack_run", "index"]
        constraints = [
            models.UniqueConstraint(fields=["rack_run", "index"], name="rack_stage_once"),
            models.CheckConstraint(
                condition=models.Q(max_parallel__gte=1), name="rack_stage_parallel_positive"
            ),
        ]

    def __str__(self) -> str:
        return f"stage {self.index + 1} ({self.kind}, {self.action}) of rack run {self.rack_run_id}"

    def get_status_color(self) -> str:
        return RACK_STAGE_STATUS_COLORS[RackStageStatus(self.status)]


class RackRunMember(models.Model):
    """One member of one stage: waiting, in flight (its node run), done, or failed."""

    stage = models.ForeignKey(RackRunStage, on_delete=models.CASCADE, related_name="members")
    node = models.ForeignKey(Node, on_delete=models.PROTECT, related_name="+")
    order = models.PositiveSmallIntegerField()
    status = models.CharField(
        max_length=20, choices=RackMemberStatus.choices, default=RackMemberStatus.WAITING
    )
    # The member's latest node run (bring-up stages); earlier attempts' runs are in the audit.
    run = models.ForeignKey(
        "Run", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    attempts = models.PositiveSmallIntegerField(default=0, help_text="Attempts started")
    # A power-cycle stage: when the reset was claimed. Set once, so a lost or repeated message
    # never cycles the tray twice.
    cycle_sent_at = models.DateTimeField(null=True, blank=True)
    reason = models.CharField(max_length=500, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["stage", "order"]
        constraints = [
            models.UniqueConstraint(fields=["stage", "node"], name="rack_member_once_per_stage"),
        ]

    def __str__(self) -> str:
        return f"{self.node_id} in {self.stage}: {self.status}"

    def get_status_color(self) -> str:
        return RACK_MEMBER_STATUS_COLORS[RackMemberStatus(self.status)]
