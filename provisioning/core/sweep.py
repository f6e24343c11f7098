"""The sweep: finds runs whose next look is overdue (a lost message) and sends it again.

A look that is overdue is not always lost: when the workers are busy its message is simply
waiting in the queue. Re-sending it then only lengthens the queue that made it late, and every
sweep would add a message per run: a backlog that feeds itself. So a look counts as lost only
when it is overdue by the grace *plus the queue's own lag*, measured on the sweep's message
(`queue_lag_s`), and a run once re-sent is not re-sent again within that margin.
"""

from __future__ import annotations

import time
from datetime import timedelta

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from ..choices import ACTIVE_RUN_STATUSES
from ..models import Run
from ..scheduling import send_step

# The header the sweep's message carries: when it was published (seconds since the epoch).
SENT_AT_HEADER = "greenlight_sent_at"


def sweep(queue_lag_s: float = 0.0) -> int:
    """Re-send the step of every active run whose look seems lost; return how many."""
    now = timezone.now()
    cutoff = now - timedelta(seconds=settings.GREENLIGHT_SWEEP_GRACE_S + max(queue_lag_s, 0.0))
    overdue = list(
        Run.objects.filter(status__in=ACTIVE_RUN_STATUSES, next_look_at__lt=cutoff)
        .filter(Q(resent_at__isnull=True) | Q(resent_at__lt=cutoff))
        .values_list("pk", "step")
    )
    if overdue:
        Run.objects.filter(pk__in=[pk for pk, _ in overdue]).update(resent_at=now)
    for run_id, step in overdue:
        # A duplicate is harmless: the step number lets only one task claim it.
        send_step(run_id, step)
    return len(overdue)


def stamp_sent_at(headers: dict) -> None:
    """Write the publishing time into a sweep message's headers (kept if already there)."""
    headers.setdefault(SENT_AT_HEADER, time.time())


def queue_lag_s(request) -> float:
    """How long a task's message waited between publishing and running (0 if not stamped).

    Celery puts a message's own headers among the request's fields; an eager call keeps them
    under `headers`.
    """
    sent_at = request.get(SENT_AT_HEADER) or (request.get("headers") or {}).get(SENT_AT_HEADER)
    return max(time.time() - float(sent_at), 0.0) if sent_at else 0.0
