"""Scheduling looks at a run: one Celery task per step, sent once the row is committed.

A run's step is claimed by the task that carries its number (engine.advance). While a step runs,
the run is RUNNING under a lease (`next_look_at`); a look requested meanwhile is remembered in
`nudged_at` and honoured when the step hands over, so two steps of one run never overlap.

Long waits are rows, not messages: no task is sent with a countdown over
GREENLIGHT_MAX_COUNTDOWN_S. Redis hands a message still unacknowledged after its visibility
timeout to another worker, and a message with a countdown is held unacknowledged until it is due:
a look hours ahead would be redelivered every ten minutes (Celery #5935, #2599, #5306). A look due
further ahead is only its row (`next_look_at`, `dispatched_at` null) until the sweep sends it
(core/sweep.py, `dispatch_due`).

A look that is only a safety net (`Run.safety_net`: the run waits for news that nudges it, an
agent's check-in or a command's result) is sent later still: once it comes due within one sweep
interval. Sent at the hand-over, it reached a worker after the news had been handled and found
its step taken: a third of all step messages in a lab run (84 of 264, four nodes).
"""

from __future__ import annotations

from datetime import datetime

from celery import current_app
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from .choices import RunStatus
from .models import Run
from .site_work import queue_for_run
from .step_writes import hand_over_step, nudge_steps

# The task that takes one step (provisioning.tasks.advance_run), sent by its name: the task calls
# the engine and the engine sends the next step, so importing the task here would be a cycle.
ADVANCE_RUN_TASK = "provisioning.tasks.advance_run"


def send_step(run_id: int, step: int, countdown: float = 0.0) -> None:
    """Send the task for `step` of a run once the current transaction commits.

    Raises ValueError for a countdown over GREENLIGHT_MAX_COUNTDOWN_S: such a look is a row.
    """
    if countdown > settings.GREENLIGHT_MAX_COUNTDOWN_S:
        raise ValueError(
            f"a countdown of {countdown:.0f} s is over GREENLIGHT_MAX_COUNTDOWN_S "
            f"({settings.GREENLIGHT_MAX_COUNTDOWN_S:g} s): leave the look to the sweep"
        )

    def send() -> None:
        # A site with its own workers gets its runs' steps on its own queue (site_work).
        queue = queue_for_run(run_id)
        routing = {"queue": queue} if queue else {}
        current_app.send_task(
            ADVANCE_RUN_TASK, (run_id, step), countdown=countdown or None, **routing
        )

    # on_commit: the worker that picks the task up must see what this step wrote. Robust: a
    # send the broker refuses (its master dying, a failover) is logged, not raised; the row is
    # written, and the sweep sends a look that is overdue, as it does a message Redis lost.
    # Raised, it failed whatever had just committed: a check-in's answer, a result's.
    transaction.on_commit(send, robust=True)


def hand_over(
    run: Run,
    due: datetime,
    wait_reason: str | None = None,
    *,
    claimed_at: datetime | None = None,
    now: datetime | None = None,
    safety_net: bool = False,
) -> None:
    """End the current step: the run waits until `due` (or now, if it was nudged meanwhile).

    `wait_reason`, when given, is written with it (what the run is waiting for); `claimed_at`
    is when the step claimed the run (without it, a nudge during the step is not looked for).
    `safety_net`: the look is only for news that never came (outcomes.Wait).

    `next_look_at` is written first: if the message is lost (Redis flushed, worker killed), the
    sweep finds the run overdue and sends it again. A look due within GREENLIGHT_MAX_COUNTDOWN_S
    (a safety net: within GREENLIGHT_SWEEP_SECONDS) is sent now with its countdown; one further
    ahead is left to the sweep (`dispatch_due`).
    """
    now = now or timezone.now()
    countdown = max((due - now).total_seconds(), 0.0)
    send_now = countdown <= dispatch_span(safety_net)
    # Only the step that holds the run hands it over; a nudge that came while it ran (it is
    # newer than the claim) makes the next look due at once.
    if hand_over_step(
        run.pk,
        run.step,
        due=due,
        dispatched_at=now if send_now else None,
        safety_net=safety_net,
        wait_reason=wait_reason,
        unless_nudged_since=claimed_at,
    ):
        if send_now:
            send_step(run.pk, run.step, countdown)
    elif hand_over_step(
        run.pk, run.step, due=now, dispatched_at=now, safety_net=False, wait_reason=wait_reason
    ):
        send_step(run.pk, run.step)


def dispatch_span(safety_net: bool) -> float:
    """Wall seconds ahead of its due time a look's message is sent: the longest countdown, or
    for a safety net one sweep interval (the sweep sends it before it is due)."""
    if safety_net:
        return settings.GREENLIGHT_SWEEP_SECONDS
    return settings.GREENLIGHT_MAX_COUNTDOWN_S


def nudge(run_id: int) -> None:
    """Ask for a look at a run now: at once if it waits, after the current step if it runs."""
    _send_nudged(nudge_steps(now=timezone.now(), run_id=run_id))


def nudge_runs_of_node(node_id: int) -> None:
    """nudge for the node's active runs, in one statement whatever their number."""
    _send_nudged(nudge_steps(now=timezone.now(), node_id=node_id))


def _send_nudged(nudged: list[tuple[int, int, str]]) -> None:
    # A run RUNNING when the nudge was written is looked at again when its step hands it over
    # (hand_over_step sees the nudge); one waiting or started is sent its step here. A run held
    # for room (admission.py: queued without a look) is not: the sweep starts it in its turn.
    queued = [run_id for run_id, _, status in nudged if status == RunStatus.QUEUED]
    held = (
        set(
            Run.objects.filter(pk__in=queued, next_look_at__isnull=True).values_list(
                "pk", flat=True
            )
        )
        if queued
        else set()
    )
    for run_id, step, status in nudged:
        if status in (RunStatus.QUEUED, RunStatus.WAITING) and run_id not in held:
            send_step(run_id, step)


def kick_off(run: Run) -> None:
    """Send the first step of a new run."""
    Run.objects.filter(pk=run.pk).update(next_look_at=timezone.now())
    send_step(run.pk, run.step)
