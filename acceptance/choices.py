"""Choices of the acceptance app, each with its colour."""

from django.db import models


class GateName(models.TextChoices):
    """The acceptance gates. Their order and tools live in acceptance.gates.GATES."""

    ATTESTATION = "attestation", "Attestation"
    GPU_HEALTH = "gpu_health", "GPU health (DCGM)"
    NVBANDWIDTH = "nvbandwidth", "Intra-node bandwidth (nvbandwidth)"
    FABRIC = "fabric", "Fabric (NCCL all_reduce)"
    STORAGE = "storage", "Storage (fio)"
    REFERENCE_JOB = "reference_job", "End-to-end reference job"
    BURN_IN = "burn_in", "Burn-in soak"


class Verdict(models.TextChoices):
    PASS = "pass", "Pass"
    FAIL = "fail", "Fail"
    ERROR = "error", "Error"
    # A long gate (the soak) has a result row while it runs, so its telemetry can be charted.
    RUNNING = "running", "Running"


VERDICT_COLORS = {
    Verdict.PASS: "green",
    Verdict.FAIL: "red",
    Verdict.ERROR: "orange",
    Verdict.RUNNING: "blue",
}
VERDICT_ICONS = {Verdict.PASS: "✓", Verdict.FAIL: "✗", Verdict.ERROR: "!", Verdict.RUNNING: "…"}


class DecisionKind(models.TextChoices):
    APPROVE = "approve", "Approve"
    QUARANTINE = "quarantine", "Quarantine"
