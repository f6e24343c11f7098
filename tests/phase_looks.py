"""One look of a run's phase, as the engine takes it, for tests that drive a phase by hand."""

from __future__ import annotations

from django.utils import timezone

from provisioning.choices import PhaseStatus
from provisioning.core.phases import phase_for
from provisioning.core.phases.base import PhaseContext
from provisioning.models import PhaseRecord, Run
from provisioning.outcomes import Outcome


def look(run: Run, phase: str) -> tuple[Outcome, PhaseRecord]:
    """Take one look at `phase` of `run` (started first, as the engine's start_phase does when
    it is pending): its outcome, and the record as the look left it."""
    record = run.phases.get(phase=phase)
    if record.status == PhaseStatus.PENDING:
        record.status, record.started_at = PhaseStatus.RUNNING, timezone.now()
        record.save(update_fields=["status", "started_at"])
    ctx = PhaseContext(run=run, node=run.node, record=record, manifest=run.manifest.spec)
    try:
        return phase_for(phase).execute(ctx), record
    finally:
        ctx.close()


def mark_done(record: PhaseRecord) -> None:
    """Record a phase as done, as the engine does after a Done."""
    PhaseRecord.objects.filter(pk=record.pk).update(status=PhaseStatus.DONE)
