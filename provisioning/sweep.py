"""The sweep: finds runs whose next look is overdue (a lost message) and sends it again."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from .choices import ACTIVE_RUN_STATUSES
from .models import Run
from .scheduling import send_step


def sweep() -> int:
    """Re-send the step of every active run overdue by more than the grace; return how many."""
    cutoff = timezone.now() - timedelta(seconds=settings.GREENLIGHT_SWEEP_GRACE_S)
    overdue = Run.objects.filter(status__in=ACTIVE_RUN_STATUSES, next_look_at__lt=cutoff)
    count = 0
    for run_id, step in overdue.values_list("pk", "step"):
        # A duplicate is harmless: the step number lets only one task claim it.
        send_step(run_id, step)
        count += 1
    return count
