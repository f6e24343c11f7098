"""Choices of the acceptance app, each with its colour. The gates are in acceptance.gates."""

from django.db import models


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
