"""The rack-wide gate's rows (issue 34): one verdict per rack run, and one report per compute
tray, each naming the agent command that collects the tray's view of the NVLink domain.

Everything the gate knows is here, so an advance that dies anywhere leaves rows the next one
reads on from (acceptance.rack_gate). Named as "fleet.Node" and "provisioning.X" strings because
acceptance.models imports this module to register its models.
"""

from __future__ import annotations

from django.db import models
from django.utils import timezone

from .choices import VERDICT_COLORS, Verdict


class RackVerdict(models.Model):
    """The rack-wide verdict of one rack run: the NVLink domain's fabric, the power shelves and,
    where the rack's profile asks for it, dcgmi mndiag over the compute trays.

    RUNNING while the trays' reports and the shelves' answers are collected; then pass, fail
    (its findings name the tray, GPU, link or shelf) or error (only unknowns: a missing
    observation is never a pass).
    """

    rack_run = models.OneToOneField(
        "provisioning.RackRun", on_delete=models.CASCADE, related_name="verdict"
    )
    verdict = models.CharField(max_length=10, choices=Verdict.choices, default=Verdict.RUNNING)
    summary = models.CharField(max_length=500, blank=True, help_text="The verdict in a line")
    findings = models.JSONField(
        default=list, help_text="[{part, part_serial, kind, message, severity, code}]"
    )
    metrics = models.JSONField(default=dict)
    # What each power shelf's BMC said: [{node, serial, member_index, power_state, health,
    # error}]; None until a worker of the rack's site read them.
    shelves = models.JSONField(null=True, blank=True)
    shelves_asked_at = models.DateTimeField(null=True, blank=True)
    # `dcgmi mndiag` over every compute tray, run by one of them (the head), when the rack's
    # profile asks for it (acceptance.rack_mndiag): its command and how often it was sent.
    mndiag_command = models.ForeignKey(
        "provisioning.AgentCommand",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
    )
    mndiag_attempts = models.PositiveSmallIntegerField(default=0, help_text="mndiag commands sent")
    # Read from the profile once, when the gate starts: a profile edited while the gate runs
    # does not change what this verdict waits for.
    mndiag_required = models.BooleanField(
        default=False, help_text="whether the rack's profile asked for dcgmi mndiag"
    )
    started_at = models.DateTimeField(default=timezone.now)
    # Past it, the trays that did not report are judged as they are: unknown, never a pass.
    deadline = models.DateTimeField()
    judged_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-started_at"]

    def __str__(self) -> str:
        return f"rack-wide verdict of rack run {self.rack_run_id}: {self.verdict}"

    def get_verdict_color(self) -> str:
        return VERDICT_COLORS[Verdict(self.verdict)]


class RackTrayReport(models.Model):
    """One compute tray's part of a rack verdict: the command that collects its reports."""

    verdict = models.ForeignKey(RackVerdict, on_delete=models.CASCADE, related_name="trays")
    node = models.ForeignKey("fleet.Node", on_delete=models.PROTECT, related_name="+")
    command = models.ForeignKey(
        "provisioning.AgentCommand",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
    )
    attempts = models.PositiveSmallIntegerField(default=0, help_text="Commands sent")
    asked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["verdict", "node"]
        constraints = [
            models.UniqueConstraint(fields=["verdict", "node"], name="rack_tray_report_once"),
        ]

    def __str__(self) -> str:
        return f"tray {self.node_id} of {self.verdict}"
