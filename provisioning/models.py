"""Runs, their phase records, the in-band agent's sessions and commands, and tenant wipes."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone

from fleet.models import Manifest, Node

from .choices import (
    ACTIVE_RUN_STATUSES,
    CERTIFICATE_RESULT_COLORS,
    OPEN_ROLLOUT_STATES,
    PHASE_STATUS_COLORS,
    ROLLOUT_NODE_STATUS_COLORS,
    ROLLOUT_STATE_COLORS,
    RUN_STATUS_COLORS,
    WIPE_STATUS_COLORS,
    AgentEnvironment,
    CertificateResult,
    CommandStatus,
    PhaseStatus,
    RolloutNodeStatus,
    RolloutState,
    RunKind,
    RunStatus,
    Stage,
    WipeStatus,
)

# Rack runs' models live beside these; importing them here registers them with Django.
from .rack_models import RackRun, RackRunMember, RackRunStage  # noqa: F401


class Run(models.Model):
    """One attempt to bring one node to its manifest, with its progress in typed columns."""

    node = models.ForeignKey(Node, on_delete=models.PROTECT, related_name="runs")
    kind = models.CharField(max_length=20, choices=RunKind.choices, default=RunKind.PROVISION)
    status = models.CharField(max_length=20, choices=RunStatus.choices, default=RunStatus.QUEUED)
    manifest = models.ForeignKey(Manifest, on_delete=models.PROTECT, related_name="runs")
    current_phase = models.CharField(max_length=40, blank=True)
    # Bumped by every engine step (compare-and-set): a duplicate or stale task sees a different
    # value and does nothing, so a re-delivered message never applies a phase twice.
    step = models.PositiveIntegerField(default=0)
    next_look_at = models.DateTimeField(null=True, blank=True, db_index=True)
    # Set when something the run waits for happened while a step was running (an agent checked
    # in, a command finished): the step then schedules its next look at once.
    nudged_at = models.DateTimeField(null=True, blank=True)
    # When the sweep last re-sent this run's look: it waits a whole margin before another.
    resent_at = models.DateTimeField(null=True, blank=True)
    # When this look's message was sent: at the hand-over, or by the sweep once the look came
    # within GREENLIGHT_MAX_COUNTDOWN_S. Null while a look further ahead is only this row.
    dispatched_at = models.DateTimeField(null=True, blank=True)
    # The look is a safety net: what the run waits for nudges it when it comes (outcomes.Wait).
    # Its message is sent only once the look is due within a sweep's interval.
    safety_net = models.BooleanField(default=False)
    # The worker (Celery node name) holding the run's current step, or the last one that did:
    # a worker that takes over a lapsed lease says whose it was.
    held_by = models.CharField(max_length=200, blank=True)
    wait_reason = models.CharField(max_length=300, blank=True)
    last_error = models.TextField(blank=True)
    transient_budget = models.PositiveSmallIntegerField(default=0)
    failure_budget = models.PositiveSmallIntegerField(default=0)
    transient_used = models.PositiveSmallIntegerField(default=0)
    failure_used = models.PositiveSmallIntegerField(default=0)
    started_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["node"],
                condition=models.Q(status__in=ACTIVE_RUN_STATUSES),
                name="run_one_active_per_node",
            ),
        ]
        permissions = [
            # The tenant platform's one run: a burn-in of a node before it hands the node out.
            ("request_burn_in", "Can ask for a pre-allocation burn-in of an unallocated node"),
        ]

    def __str__(self) -> str:
        return f"run {self.pk} ({self.kind}) of {self.node_id}"

    @property
    def is_active(self) -> bool:
        return self.status in ACTIVE_RUN_STATUSES

    def get_status_color(self) -> str:
        return RUN_STATUS_COLORS[RunStatus(self.status)]


class PhaseRecord(models.Model):
    """One phase of one run: written before it applies anything, updated as it goes."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="phases")
    phase = models.CharField(max_length=40)
    order = models.PositiveSmallIntegerField()
    status = models.CharField(
        max_length=20, choices=PhaseStatus.choices, default=PhaseStatus.PENDING
    )
    attempts = models.PositiveSmallIntegerField(default=0)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    deadline_at = models.DateTimeField(null=True, blank=True)
    wait_reason = models.CharField(max_length=300, blank=True)
    # Where the phase is inside itself (observe, applying, rebooting, verifying...): a typed
    # column, so a resumed phase knows what it already did without trusting a JSON bag.
    stage = models.CharField(max_length=30, blank=True, choices=Stage.choices)
    bmc_task = models.CharField(max_length=300, blank=True, help_text="BMC task monitor URI")
    command = models.ForeignKey(
        "AgentCommand", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    boot_id_before = models.CharField(
        max_length=64, blank=True, help_text="Agent boot id before the reboot this phase caused"
    )
    stage_started_at = models.DateTimeField(null=True, blank=True)
    compared = models.JSONField(default=dict, blank=True, help_text="What observe/diff saw")
    # What the phase keeps between its looks (core/phase_state's types): a push's task, a
    # soak's progress, a GPU reset. Apart from `compared`, which only shows what was seen.
    resume = models.JSONField(
        default=dict, blank=True, help_text="The phase's state between looks, to resume from"
    )
    changes = models.JSONField(
        default=list, blank=True, help_text="[{component, from, to}] applied by this phase"
    )
    log = models.TextField(blank=True)
    error = models.TextField(blank=True)

    class Meta:
        ordering = ["run", "order"]
        constraints = [
            models.UniqueConstraint(fields=["run", "phase"], name="phase_unique_per_run"),
        ]

    def __str__(self) -> str:
        return f"{self.phase} of run {self.run_id}: {self.status}"

    def get_status_color(self) -> str:
        return PHASE_STATUS_COLORS[PhaseStatus(self.status)]

    @property
    def duration_s(self) -> float | None:
        if self.started_at and self.finished_at:
            return (self.finished_at - self.started_at).total_seconds()
        return None


class BootCredential(models.Model):
    """What earns an agent its token: a secret only the boot medium Greenlight made carries.

    An ephemeral credential belongs to one run (every boot of that run's ephemeral medium uses
    it) and dies with the run; a host-OS credential is what os_install wrote into the install
    record on the node's boot disk, valid until the next install replaces it. The secret itself
    is derived from the server's key and this row's nonce, never stored.
    """

    node = models.ForeignKey(Node, on_delete=models.CASCADE, related_name="boot_credentials")
    run = models.ForeignKey(
        "Run", on_delete=models.CASCADE, related_name="boot_credentials", null=True, blank=True
    )
    environment = models.CharField(max_length=20, choices=AgentEnvironment.choices)
    secret_hash = models.CharField(max_length=64, unique=True)
    nonce = models.CharField(max_length=64)
    # Names the per-node boot medium in URLs (the ISO a BMC fetches): unguessable, not the secret.
    media_key = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(default=timezone.now)
    # Redemptions left: one per boot Greenlight ordered that this credential serves, taken by
    # that boot's check-in (see boot.credentials.redeem).
    boots_armed = models.PositiveSmallIntegerField(default=0)
    used_at = models.DateTimeField(null=True, blank=True)
    # The boot that redeemed it last: the same boot asking again is a lost answer, not a thief.
    redeemed_boot = models.CharField(max_length=64, blank=True, default="")
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.environment} credential of {self.node_id}"


class AgentSession(models.Model):
    """One boot of a node's agent: the token it was issued speaks for this node and boot only."""

    node = models.ForeignKey(Node, on_delete=models.CASCADE, related_name="agent_sessions")
    boot_id = models.CharField(max_length=64)
    environment = models.CharField(max_length=20, choices=AgentEnvironment.choices)
    credential = models.ForeignKey(
        BootCredential, on_delete=models.SET_NULL, null=True, blank=True, related_name="sessions"
    )
    token_hash = models.CharField(max_length=64, unique=True)
    # The token is derived (HMAC of the server's key, node, boot and this nonce), so it is never
    # stored: Greenlight keeps only its hash to check it.
    nonce = models.CharField(max_length=64, default="")
    # What the agent last reported of the node (at check-in, and with every result of a command
    # that can change it): the in-band phases observe the node through this.
    inventory = models.JSONField(default=dict, blank=True)
    inventory_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    # Both written every few polls, not each (sessions.seen): within two polls of the truth.
    last_seen_at = models.DateTimeField(default=timezone.now)
    # Each poll tells the agent when to ask again; an agent not heard from by this time is gone.
    expected_by = models.DateTimeField(default=timezone.now)
    revoked_at = models.DateTimeField(null=True, blank=True)
    # Not stored: the interval a check-in told its agent (sessions.check_in), worked out before
    # its commit so that the answer needs no read after it.
    poll_s: float = 0.0

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(fields=["node", "boot_id"], name="agent_session_unique_boot"),
        ]

    def __str__(self) -> str:
        return f"{self.node_id} boot {self.boot_id}"


class AgentCommand(models.Model):
    """A command for a node's agent, bound to the boot it was issued for."""

    node = models.ForeignKey(Node, on_delete=models.CASCADE, related_name="agent_commands")
    run = models.ForeignKey(
        Run, on_delete=models.CASCADE, related_name="agent_commands", null=True, blank=True
    )
    phase = models.CharField(max_length=40, blank=True)
    session = models.ForeignKey(
        AgentSession, on_delete=models.CASCADE, related_name="commands", null=True, blank=True
    )
    kind = models.CharField(max_length=40)
    params = models.JSONField(default=dict, blank=True)
    status = models.CharField(
        max_length=20, choices=CommandStatus.choices, default=CommandStatus.QUEUED
    )
    result = models.JSONField(default=dict, blank=True)
    output = models.TextField(blank=True)
    exit_code = models.IntegerField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    sent_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["created_at"]
        indexes = [models.Index(fields=["session", "status"], name="agentcmd_session_status")]

    def __str__(self) -> str:
        return f"{self.kind} for {self.node_id}: {self.status}"


class WipeRequest(models.Model):
    """A tenant release: which nodes, for whom, requested by whom."""

    tenant = models.CharField(max_length=100)
    allocation_ref = models.CharField(max_length=100)
    nodes = models.ManyToManyField(Node, related_name="wipe_requests")
    status = models.CharField(
        max_length=20, choices=WipeStatus.choices, default=WipeStatus.REQUESTED
    )
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    # Set with status "failed": the first node (by serial) that did not come back, and why.
    failed_node = models.ForeignKey(
        Node, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    failure_reason = models.CharField(max_length=500, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "allocation_ref"], name="wipe_unique_allocation"
            ),
        ]

    def __str__(self) -> str:
        return f"wipe {self.tenant}/{self.allocation_ref}"

    def get_status_color(self) -> str:
        return WIPE_STATUS_COLORS[WipeStatus(self.status)]


class WipeCertificate(models.Model):
    """Proof that a node's drives were purged (NIST SP 800-88). Immutable once written."""

    wipe_request = models.ForeignKey(
        WipeRequest, on_delete=models.PROTECT, related_name="certificates"
    )
    node = models.ForeignKey(Node, on_delete=models.PROTECT, related_name="wipe_certificates")
    run = models.ForeignKey(Run, on_delete=models.PROTECT, related_name="+", null=True)
    result = models.CharField(max_length=10, choices=CertificateResult.choices)
    drives = models.JSONField(
        default=list,
        help_text="[{model, serial, method, tool, result, verification, started_at, finished_at}]",
    )
    # What the wipe run brought back to the manifest before the erase (a tenant may have
    # flashed firmware or changed BIOS settings): [{component, from, to, phase}].
    firmware_restored = models.JSONField(default=list, blank=True)
    requested_by = models.CharField(max_length=150)
    approved_by = models.CharField(max_length=150, blank=True)
    started_at = models.DateTimeField()
    finished_at = models.DateTimeField()
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["wipe_request", "node"], name="wipe_certificate_one_per_node"
            ),
        ]

    def __str__(self) -> str:
        return f"wipe certificate {self.node_id}: {self.result}"

    def save(self, *args, **kwargs) -> None:
        if self.pk is not None:
            raise TypeError("wipe certificates are immutable")
        super().save(*args, **kwargs)

    def get_result_color(self) -> str:
        return CERTIFICATE_RESULT_COLORS[CertificateResult(self.result)]


class Rollout(models.Model):
    """A rolling upgrade: bring the nodes behind a published manifest to it, a few at a time.

    Progress lives in its rows (one RolloutNode per node), never in memory: `advance` reads them,
    so a rollout survives a crash and resumes where it stood.
    """

    manifest = models.ForeignKey(Manifest, on_delete=models.PROTECT, related_name="rollouts")
    concurrency = models.PositiveSmallIntegerField(help_text="Most nodes in flight at once")
    # Waves (day2/waves.py): none of these set is one wave of every node, as before them.
    canary = models.PositiveSmallIntegerField(
        default=0, help_text="Nodes in the first wave; 0: no waves"
    )
    wave_growth = models.PositiveSmallIntegerField(
        default=2, help_text="Each wave is this many times the one before"
    )
    failure_threshold_pct = models.PositiveSmallIntegerField(
        default=100, help_text="Pause when a finished wave failed more than this share of nodes"
    )
    site_cap = models.PositiveSmallIntegerField(
        default=0, help_text="Most nodes of one site in flight at once; 0: no cap"
    )
    rack_cap = models.PositiveSmallIntegerField(
        default=0, help_text="Most nodes of one rack in flight at once; 0: no cap"
    )
    # Waves a person let the rollout go past after it paused on one (resume).
    waves_cleared = models.PositiveSmallIntegerField(default=0)
    # A roll back: this rollout returns some of that one's nodes to the manifest before it.
    rollback_of = models.ForeignKey(
        "self", on_delete=models.SET_NULL, null=True, blank=True, related_name="rollbacks"
    )
    state = models.CharField(
        max_length=20, choices=RolloutState.choices, default=RolloutState.RUNNING
    )
    reason = models.CharField(max_length=300, blank=True, help_text="Why it was paused or ended")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    # Written first by every advance: that UPDATE is the lock two advancing workers queue on.
    advanced_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(concurrency__gte=1), name="rollout_concurrency_positive"
            ),
            # Two open rollouts of one manifest would each start the same nodes.
            models.UniqueConstraint(
                fields=["manifest"],
                condition=models.Q(state__in=OPEN_ROLLOUT_STATES),
                name="rollout_one_open_per_manifest",
            ),
        ]

    def __str__(self) -> str:
        return f"rollout {self.pk} to {self.manifest.sku.name} {self.manifest.version}"

    def get_state_color(self) -> str:
        return ROLLOUT_STATE_COLORS[RolloutState(self.state)]


class RolloutNode(models.Model):
    """One node of a rollout: waiting, its run under way, done, or failed with the reason."""

    rollout = models.ForeignKey(Rollout, on_delete=models.CASCADE, related_name="entries")
    node = models.ForeignKey(Node, on_delete=models.PROTECT, related_name="+")
    order = models.PositiveIntegerField()
    wave = models.PositiveSmallIntegerField(default=0)
    status = models.CharField(
        max_length=20, choices=RolloutNodeStatus.choices, default=RolloutNodeStatus.WAITING
    )
    run = models.ForeignKey(Run, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    # Taken out of service for its upgrade: it stays in flight (it counts against the
    # concurrency) until it is back in service, not merely until its run ends.
    took_out = models.BooleanField(default=False)
    reason = models.CharField(max_length=500, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["rollout", "order"]
        constraints = [
            models.UniqueConstraint(fields=["rollout", "node"], name="rollout_node_once"),
        ]

    def __str__(self) -> str:
        return f"{self.node_id} in rollout {self.rollout_id}: {self.status}"

    def get_status_color(self) -> str:
        return ROLLOUT_NODE_STATUS_COLORS[RolloutNodeStatus(self.status)]
