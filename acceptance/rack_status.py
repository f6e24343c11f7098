"""The NVLink fabric status of a rack-scale system, as the rack view, the API, the NetBox sync
and the rack decision read it: one function, so none of them can say "passed" where another
says "unknown".

The status is the rack-wide verdict (acceptance.rack_models.RackVerdict) of the rack's latest
rack run: passed or failed (its findings name the tray, GPU, link or shelf). No rack run, a rack
run without a verdict, a verdict still collecting, or one with only unknowns (an "error": trays
that never reported) is "unknown", never a pass (NVIDIA's infra controller once reported a
fabric "synced" after it lost contact with the NVLink manager).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime

from django.db import models

from fleet.models import RackSystem
from provisioning.rack_models import RackRun

from .choices import Verdict
from .rack_models import RackVerdict


class FabricWord(models.TextChoices):
    """What is known of a rack's NVLink fabric."""

    PASS = "pass", "Passed"
    FAIL = "fail", "Failed"
    # Nothing judged (no rack run, no verdict yet, only unknowns): never read as a pass.
    UNKNOWN = "unknown", "Unknown"


FABRIC_COLORS = {FabricWord.PASS: "green", FabricWord.FAIL: "red", FabricWord.UNKNOWN: "gray"}
FABRIC_ICONS = {FabricWord.PASS: "✓", FabricWord.FAIL: "✗", FabricWord.UNKNOWN: "?"}
# The verdict's word: an error has only unknowns (nothing failed, nothing seen whole).
WORD_OF = {Verdict.PASS: FabricWord.PASS, Verdict.FAIL: FabricWord.FAIL}
NO_RUN = "no rack run has judged the rack"


@dataclass(frozen=True)
class FabricStatus:
    """The fabric's word, the verdict's line, which rack run judged it (None: none did), when,
    and each finding's words (the tray, GPU, link or shelf named)."""

    word: str
    summary: str
    rack_run_id: int | None = None
    observed_at: datetime | None = None
    findings: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return self.word == FabricWord.PASS

    @property
    def label(self) -> str:
        return FabricWord(self.word).label

    @property
    def color(self) -> str:
        return FABRIC_COLORS[FabricWord(self.word)]

    @property
    def icon(self) -> str:
        return FABRIC_ICONS[FabricWord(self.word)]


def _status(rack_run_id: int | None, verdict: RackVerdict | None) -> FabricStatus:
    if rack_run_id is None:
        return FabricStatus(FabricWord.UNKNOWN, NO_RUN)
    if verdict is None:
        why = f"rack run {rack_run_id} has no rack-wide verdict (yet)"
        return FabricStatus(FabricWord.UNKNOWN, why, rack_run_id)
    if verdict.verdict == Verdict.RUNNING:
        why = (
            f"rack run {rack_run_id}: the rack-wide verdict is still collecting the trays' reports"
        )
        return FabricStatus(FabricWord.UNKNOWN, why, rack_run_id)
    word = WORD_OF.get(Verdict(verdict.verdict), FabricWord.UNKNOWN)
    findings = [str(f.get("message", "")) for f in verdict.findings or [] if f.get("message")]
    summary = verdict.summary or f"rack-wide verdict {verdict.get_verdict_display().lower()}"
    return FabricStatus(word, summary, rack_run_id, verdict.judged_at, findings)


def fabric_statuses(systems: Iterable[RackSystem]) -> dict[int, FabricStatus]:
    """Each system's fabric status, by system id, in two queries whatever their number."""
    by_rack = {system.rack_id: system.pk for system in systems}
    latest: dict[int, int] = {}
    runs = RackRun.objects.filter(rack_id__in=by_rack).order_by("rack_id", "-started_at", "-pk")
    for rack_id, run_id in runs.values_list("rack_id", "pk"):
        latest.setdefault(rack_id, run_id)
    verdicts = {
        v.rack_run_id: v
        for v in RackVerdict.objects.filter(rack_run_id__in=latest.values()).defer("metrics")
    }
    statuses = {}
    for rack_id, system_id in by_rack.items():
        latest_id = latest.get(rack_id)
        verdict = verdicts.get(latest_id) if latest_id is not None else None
        statuses[system_id] = _status(latest_id, verdict)
    return statuses


def fabric_status(system: RackSystem) -> FabricStatus:
    """The system's fabric status now."""
    return fabric_statuses([system])[system.pk]
