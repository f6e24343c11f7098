"""When a run will likely end, from how long each phase took on this fleet's recent runs.

The median of the latest finished records of each phase, so one stuck run does not skew it; no
estimate for a phase this fleet has never finished (the ETA then says it is a lower bound).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from statistics import median

from django.utils import timezone

from ..choices import PhaseStatus
from ..models import PhaseRecord, Run
from .progress import Progress

# Recent records read for the estimate: enough for a median, bounded for a large fleet.
SAMPLE = 2000


@dataclass(frozen=True)
class Eta:
    """Seconds likely left, and whether some phase had no history to go by."""

    seconds: float
    partial: bool

    @property
    def words(self) -> str:
        minutes = round(self.seconds / 60)
        text = f"{minutes // 60} h {minutes % 60:02d} min" if minutes >= 60 else f"{minutes} min"
        return f"{'at least ' if self.partial else 'about '}{text} left"


def typical_seconds(phases: list[str]) -> dict[str, float]:
    """The median wall-clock seconds of each phase's recent finished records (one query)."""
    rows = (
        PhaseRecord.objects.filter(
            phase__in=phases,
            status=PhaseStatus.DONE,
            started_at__isnull=False,
            finished_at__isnull=False,
        )
        .order_by("-pk")
        .values_list("phase", "started_at", "finished_at")[:SAMPLE]
    )
    seen: dict[str, list[float]] = {}
    for phase, started, finished in rows:
        seen.setdefault(phase, []).append((finished - started).total_seconds())
    return {phase: median(values) for phase, values in seen.items()}


def run_eta(run: Run, records: list[PhaseRecord], current: Progress | None) -> Eta | None:
    """The likely time left of an active run; None when nothing is known to go by."""
    left = [r for r in records if r.status not in (PhaseStatus.DONE, PhaseStatus.SKIPPED)]
    if not left:
        return None
    typical = typical_seconds([r.phase for r in left])
    if not typical:
        return None
    now = timezone.now()
    total, partial = 0.0, False
    for record in left:
        usual = typical.get(record.phase)
        if usual is None:
            partial = True
            continue
        if record.status in (PhaseStatus.RUNNING, PhaseStatus.WAITING, PhaseStatus.FAILED):
            # The phase under way: what its own progress says is left, else the usual remainder.
            if current is not None:
                usual *= 1 - current.fraction
            elif record.started_at:
                usual = max(usual - (now - record.started_at) / timedelta(seconds=1), 0.0)
        total += usual
    return Eta(total, partial)
