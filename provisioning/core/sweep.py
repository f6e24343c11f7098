"""The sweep: finds runs whose next look is overdue (a lost message) and sends it again.

A look that is overdue is not always lost: when the workers are busy its message is simply
waiting in the queue. Re-sending it then only lengthens the queue that made it late, and every
sweep would add a message per run: a backlog that feeds itself. So a look counts as lost only
when it is overdue by the grace *plus the queue's own lag*, measured on the sweep's message
(`queue_lag_s`), and a run once re-sent is not re-sent again within that margin.

The sweep also sends the looks that were only rows (scheduling.py: a look due further ahead than
GREENLIGHT_MAX_COUNTDOWN_S is not sent at the hand-over): every waiting run whose look falls
within that span and was not sent yet is sent now, with the countdown to its due time, and marked
(`dispatched_at`) so the next sweep leaves it alone. A sweep at least as often as that span (the
settings hold GREENLIGHT_SWEEP_SECONDS to it) sends every look before it is due. A look that is
only a safety net (`Run.safety_net`) is sent once it falls within one sweep interval.

Most safety nets wait for a command's result, and the agent pushes that result, which nudges the
run. While the agent still runs the command and still polls, a look at the run finds nothing new
and sets the same net again: six steps a node in the GPU health gate's 30-minute DCGM diagnostic
alone, and one for every five minutes of every other long command (a soak's). The sweep sets such a
net again itself, for all of them in one statement (`renew_command_nets`); a run is looked at
once its agent stops polling (the look then finds the command lost, as before), once its session
is revoked, or once the next net would fall past its phase's deadline (the look then enforces it).
"""

from __future__ import annotations

import time
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Exists, OuterRef, Q
from django.utils import timezone

from .. import clock
from ..agents import link as agent_link
from ..choices import ACTIVE_RUN_STATUSES, PhaseStatus, RunStatus
from ..models import PhaseRecord, Run
from ..scheduling import dispatch_span, send_step
from .phases.inband import COMMAND_LOOK_S

# The header the sweep's message carries: when it was published (seconds since the epoch).
SENT_AT_HEADER = "greenlight_sent_at"


def sweep(queue_lag_s: float = 0.0, *, now: datetime | None = None) -> int:
    """Re-send the step of every active run whose look seems lost; return how many."""
    now = now or timezone.now()
    cutoff = now - timedelta(seconds=settings.GREENLIGHT_SWEEP_GRACE_S + max(queue_lag_s, 0.0))
    overdue = list(
        Run.objects.filter(status__in=ACTIVE_RUN_STATUSES, next_look_at__lt=cutoff)
        .filter(Q(resent_at__isnull=True) | Q(resent_at__lt=cutoff))
        .values_list("pk", "step")
    )
    if overdue:
        Run.objects.filter(pk__in=[pk for pk, _ in overdue]).update(
            resent_at=now, dispatched_at=now
        )
    for run_id, step in overdue:
        # A duplicate is harmless: the step number lets only one task claim it.
        send_step(run_id, step)
    return len(overdue)


def dispatch_due(*, now: datetime | None = None) -> int:
    """Send the look of every waiting run that comes due within the longest countdown and was
    only a row until now; return how many."""
    now = now or timezone.now()
    horizon = now + timedelta(seconds=dispatch_span(safety_net=False))
    # A safety net is sent once due before the next sweep: the news it waits for usually comes
    # first, and nudges the run with a message of its own.
    net_horizon = now + timedelta(seconds=dispatch_span(safety_net=True))
    renew_command_nets(now=now)
    waiting = Run.objects.filter(status=RunStatus.WAITING)
    coming_due = Q(safety_net=False, next_look_at__lte=horizon) | Q(next_look_at__lte=net_horizon)
    # Marked first, then read back by the mark. The conditional UPDATE is the claim: of two sweeps
    # at once (a backlog of sweep messages) only one marks a run. A run handed over again in
    # between (a new step, a new look) carries another mark or none, and is not sent with a step
    # it no longer has.
    if not waiting.filter(coming_due, dispatched_at__isnull=True).update(dispatched_at=now):
        return 0
    due = list(waiting.filter(dispatched_at=now).values_list("pk", "step", "next_look_at"))
    for run_id, step, look_at in due:
        send_step(run_id, step, max(((look_at or now) - now).total_seconds(), 0.0))
    return len(due)


def renew_command_nets(*, now: datetime | None = None) -> int:
    """Set again, COMMAND_LOOK_S node seconds on, the safety net of every waiting run that comes
    due before the next sweep and waits for a command its agent still runs and still polls for,
    unless the net would then fall past the phase's deadline; return how many."""
    now = now or timezone.now()
    renewed_to = now + clock.real_delta(COMMAND_LOOK_S)
    # The run's phase under way, waiting for a command that a look would find still awaited.
    command_under_way = PhaseRecord.objects.filter(
        agent_link.awaited(now, through="command__"),
        run_id=OuterRef("pk"),
        phase=OuterRef("current_phase"),
        status=PhaseStatus.WAITING,
        deadline_at__gt=renewed_to,
    )
    net_horizon = now + timedelta(seconds=dispatch_span(safety_net=True))
    # One conditional UPDATE: a run nudged meanwhile (its result came) was sent its step by
    # the nudge, which the step's number lets claim whatever next_look_at says.
    return (
        Run.objects.filter(
            status=RunStatus.WAITING,
            safety_net=True,
            dispatched_at__isnull=True,
            next_look_at__lte=net_horizon,
        )
        .filter(Exists(command_under_way))
        .update(next_look_at=renewed_to)
    )


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
