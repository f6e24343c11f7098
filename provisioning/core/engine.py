"""The engine: takes one step of a run, hands the phase's outcome to the right handler.

A step is claimed by bumping `Run.step` with a conditional UPDATE, so a duplicated or stale task
(redelivered after a crash, or re-sent by the sweep) does nothing. A phase never sleeps: a Wait
becomes a task scheduled for later and the worker lets go.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from common import instrumentation
from common.prepared_reads import PreparedRead
from fleet.choices import EventKind, NodeState
from fleet.events import record as record_event
from fleet.models import Node

from .. import clock
from ..agents.redaction import redactor_for
from ..choices import PhaseStatus, RunStatus, Stage
from ..errors import classify
from ..models import PhaseRecord, Run
from ..outcomes import (
    OUTCOME_TYPES,
    Done,
    Failure,
    NeedsPerson,
    Outcome,
    Skipped,
    TransientFailure,
    Wait,
)
from ..scheduling import hand_over
from ..step_writes import claim_step, write_record, write_run
from .completion import complete_run
from .gates import gate_of
from .phases import PHASES_BY_NAME, Band, phase_for
from .phases.base import PhaseContext
from .run_end import fail, move_node

# Phases finished in one task before it hands over: keeps one worker fair across many nodes.
MAX_PHASES_PER_STEP = 6
# The fields a phase's start and end set on its record, and write.
STARTED_FIELDS = (
    "status", "attempts", "started_at", "finished_at", "stage", "stage_started_at", "error",
    "deadline_at",
)  # fmt: skip
FINISHED_FIELDS = ("status", "finished_at", "compared", "changes", "wait_reason", "log")
# Real seconds late a look must be to say Greenlight was away (its workers stopped or stalled),
# not that its queue was busy.
AWAY_S = 5.0

# The two reads of every step, compiled once (common/prepared_reads.py says why).
RUN_FOR_STEP = PreparedRead(
    lambda run_id, step: Run.objects.select_related("node", "node__rack", "manifest").filter(
        pk=run_id, step=step
    )[:1]
)
NEXT_RECORD = PreparedRead(
    lambda run_id: (
        PhaseRecord.objects.filter(run_id=run_id)
        .exclude(status__in=(PhaseStatus.DONE, PhaseStatus.SKIPPED))
        .select_related("command")
        .order_by("order")[:1]
    )
)


def advance(run_id: int, step: int, *, worker: str = "") -> None:
    """Take step `step` of run `run_id`, unless another worker already did. `worker` names
    the one taking it (its Celery node name): the run says who holds it."""
    now = timezone.now()
    lease = now + timedelta(seconds=settings.GREENLIGHT_STEP_LEASE_S)
    # Read before the claim: when the look was due, to excuse the lateness of this look.
    run = RUN_FOR_STEP.first(run_id, step)
    if run is None:
        return
    # Claimable: waiting for this look, or running under a lease that expired (its worker died).
    if not claim_step(run_id, step, now=now, lease=lease, worker=worker):
        return
    due, was_status, previous = run.next_look_at, run.status, run.held_by
    run.step, run.status, run.next_look_at, run.held_by = step + 1, RunStatus.RUNNING, lease, worker
    if due is not None:
        if was_status == RunStatus.RUNNING:
            record_takeover(run, previous, lapsed_at=due)
            # A lease that lapsed: its worker died when the lease began, not when it ended.
            due -= timedelta(seconds=settings.GREENLIGHT_STEP_LEASE_S)
        excuse_lateness(run, now - due)
    if run.started_at is None:
        run.started_at = now
        write_run(run, ("started_at",))
    for _ in range(MAX_PHASES_PER_STEP):
        record = next_record(run)
        if record is None:
            finish_run(run)
            return
        # The benchmark's count of a look's CPU and queries, by phase (nothing otherwise).
        with instrumentation.work(f"look:{record.phase}"):
            finished = take_one_look(run, record, command_fresh=True, claimed_at=now)
        if not finished:
            return
        renew_lease(run)
    hand_over(run, timezone.now(), claimed_at=now)


def renew_lease(run: Run) -> None:
    """The step's heartbeat: a step still going past half its lease extends it, so a slow BMC
    never lets a second worker take a run whose worker is alive. No write before that."""
    now = timezone.now()
    lease = timedelta(seconds=settings.GREENLIGHT_STEP_LEASE_S)
    if run.next_look_at is None or run.next_look_at - now > lease / 2:
        return
    run.next_look_at = now + lease
    Run.objects.filter(pk=run.pk, step=run.step, status=RunStatus.RUNNING).update(
        next_look_at=run.next_look_at
    )


def record_takeover(run: Run, previous: str, *, lapsed_at: datetime) -> None:
    """Say in the audit who took the run over from whom, and why."""
    taker = run.held_by or "a worker"
    loser = previous or "a worker that did not say its name"
    record_event(
        run.node,
        EventKind.RUN_TAKEN_OVER,
        actor_label=taker,
        message=(
            f"{taker} took the run over at {run.current_phase or 'its start'} from {loser}, "
            f"whose lease lapsed unrenewed at {lapsed_at:%Y-%m-%d %H:%M:%S} UTC (that worker "
            "died or lost the database); the phase reads the BMC again and applies only what "
            "is still missing"
        ),
        data={
            "run": run.pk,
            "from": previous,
            "to": run.held_by,
            "lapsed_at": lapsed_at.isoformat(),
        },
    )


def excuse_lateness(run: Run, late: timedelta) -> None:
    """Push the phase deadlines back by the time Greenlight itself was late to look.

    A phase limit measures the node, not the control plane: if every worker was down for an
    hour, the node must not be failed for a wait that nobody was there to end. Back from being
    away, a phase also gets a full real-time floor (GREENLIGHT_PHASE_MIN_REAL_S) from now: the
    agents, BMC sessions and queues Greenlight restarted with take real seconds to catch up,
    however little node time the phase had left when it stopped.
    """
    # Under a node second late is the ordinary delay of a queue, not worth a write on every
    # step; measured in node time, since in a fast lab a real second is minutes of a phase.
    if late <= clock.real_delta(1.0):
        return
    active = run.phases.filter(status__in=(PhaseStatus.RUNNING, PhaseStatus.WAITING))
    active.update(deadline_at=F("deadline_at") + late)
    if late >= timedelta(seconds=AWAY_S):
        floor = timezone.now() + timedelta(seconds=settings.GREENLIGHT_PHASE_MIN_REAL_S)
        active.filter(deadline_at__lt=floor).update(deadline_at=floor)


def next_record(run: Run) -> PhaseRecord | None:
    """The first phase of the run that is neither done nor skipped."""
    record = NEXT_RECORD.first(run.pk)
    if record is not None:
        record.run = run
    return record


def take_one_look(
    run: Run,
    record: PhaseRecord,
    *,
    command_fresh: bool = False,
    claimed_at: datetime | None = None,
) -> bool:
    """Run one look of a phase; True when it finished and the next phase may start now.

    `command_fresh`: the record's agent command was read in the same query as the record, at
    this look's start (next_record does), so the phase need not read it again. `claimed_at`:
    when this step claimed the run (a nudge after it means the look may have missed news).
    """
    if record.status in (PhaseStatus.PENDING, PhaseStatus.FAILED):
        start_phase(run, record)
    ctx = PhaseContext(
        run=run,
        node=run.node,
        record=record,
        manifest=run.manifest.spec,
        command_fresh=command_fresh,
        claimed_at=claimed_at,
    )
    try:
        outcome = phase_for(record.phase).execute(ctx)
    except Exception as exc:  # noqa: BLE001
        outcome = outcome_of_exception(exc, run.node)
    finally:
        ctx.close()
    if not isinstance(outcome, OUTCOME_TYPES):
        outcome = Failure(f"phase returned {type(outcome).__name__}, not an outcome")
    return handle_outcome(run, record, ctx, outcome)


def outcome_of_exception(exc: Exception, node: Node) -> Outcome:
    """Sort an error a phase let escape: hiccups are transient, the rest are failures. Its words
    are the BMC's or a library's, which may echo what was sent (a media URL with its key, a
    password): redacted before they become the phase error, events and the API's answers."""
    outcome = classify(exc)
    if isinstance(outcome, TransientFailure | Failure):
        return replace(outcome, reason=redactor_for(node)(outcome.reason))
    return outcome


def start_phase(run: Run, record: PhaseRecord) -> None:
    """Mark a phase running, with its deadline, and say so: in one transaction, so a worker or
    a database lost between the two leaves no attempt that the event log never saw start."""
    ctx = PhaseContext(run=run, node=run.node, record=record, manifest=run.manifest.spec)
    now = timezone.now()
    record.status = PhaseStatus.RUNNING
    record.attempts += 1
    record.started_at = now
    record.finished_at = None
    record.stage = Stage.NONE
    record.stage_started_at = now
    record.error = ""
    record.deadline_at = now + clock.window(_limit(ctx))
    with transaction.atomic(savepoint=False):
        write_record(record, STARTED_FIELDS)
        run.current_phase = record.phase
        write_run(run, ("current_phase",))
        if gate_of(record.phase) and run.node.state == NodeState.PROVISIONING:
            move_node(run, NodeState.VALIDATING, "provisioning phases done; acceptance gates start")
        record_event(
            run.node,
            EventKind.PHASE_STARTED,
            actor_label="engine",
            message=f"{record.phase} started (attempt {record.attempts})",
            data={"run": run.pk, "phase": record.phase, "attempt": record.attempts},
        )


def handle_outcome(run: Run, record: PhaseRecord, ctx: PhaseContext, outcome: Outcome) -> bool:
    """Write what the outcome means; True when the next phase may start at once."""
    if isinstance(outcome, Done | Skipped):
        finish_phase(run, record, outcome)
        return True
    if isinstance(outcome, Wait):
        if timezone.now() > record.deadline_at:
            if nudged_during_look(run, ctx.claimed_at):
                # What the phase waits for may have just come (an agent checked in, a result
                # arrived) after this look read it: look again before the verdict.
                wait(run, record, ctx, outcome.reason, 0)
                return False
            limit = clock.limit_text(_limit(ctx))
            return handle_outcome(
                run, record, ctx, Failure(f"timed out after {limit}: {outcome.reason}")
            )
        wait(run, record, ctx, outcome.reason, outcome.seconds, safety_net=outcome.safety_net)
        return False
    if isinstance(outcome, TransientFailure):
        return transient_failure(run, record, ctx, outcome)
    if isinstance(outcome, NeedsPerson):
        needs_person(run, record, ctx, outcome)
        return False
    return phase_failure(run, record, ctx, outcome)


def nudged_during_look(run: Run, claimed_at: datetime | None) -> bool:
    """Whether the run was nudged (a check-in, a command's result) since this step claimed it."""
    return claimed_at is not None and (
        Run.objects.filter(pk=run.pk, nudged_at__gte=claimed_at).exists()
    )


def finish_phase(run: Run, record: PhaseRecord, outcome: Done | Skipped) -> None:
    """Mark a phase done or skipped and say so, in one transaction (as start_phase)."""
    skipped = isinstance(outcome, Skipped)
    record.status = PhaseStatus.SKIPPED if skipped else PhaseStatus.DONE
    record.finished_at = timezone.now()
    record.compared = outcome.compared
    record.changes = [] if skipped else outcome.changes
    record.wait_reason = ""
    if outcome.log:
        record.log = (record.log + "\n" + outcome.log).strip()
    kind = EventKind.PHASE_SKIPPED if skipped else EventKind.PHASE_DONE
    what = "no delta" if skipped else f"{len(record.changes)} change(s)"
    with transaction.atomic(savepoint=False):
        # What the phase set on its record during the look it saved itself (set_stage, its own
        # saves): the end writes what the end sets.
        write_record(record, FINISHED_FIELDS)
        record_event(
            run.node,
            kind,
            actor_label="engine",
            message=f"{record.phase} {'skipped' if skipped else 'done'}: {what}",
            data={"run": run.pk, "phase": record.phase, "changes": record.changes},
        )


def wait(
    run: Run,
    record: PhaseRecord,
    ctx: PhaseContext,
    reason: str,
    seconds: float,
    *,
    safety_net: bool = False,
) -> None:
    """Record what the phase waits for and schedule the next look; the worker lets go.
    `safety_net`: news that nudges the run ends the wait (outcomes.Wait)."""
    # The phase's limit, named as such: "of 109 h" beside a soak's "of 72 h" read as a second,
    # contradictory soak length. The time spent so far is not written here: a look may not come
    # for as long as a command runs (the sweep sets its net again), so the panel counts it.
    text = f"{reason}; phase limit {clock.minutes_text(_limit(ctx))}"
    was_waiting = record.status == PhaseStatus.WAITING
    first_time = not was_waiting or not record.wait_reason.startswith(reason)
    # A look that waits as the last one did (powering on, a job at the same percent) has
    # nothing to write to its record: the run's hand-over below is its only write.
    if not (was_waiting and record.wait_reason == text[:300]):
        record.status = PhaseStatus.WAITING
        record.wait_reason = text[:300]
        # With its event or not at all: a later look that reads this reason says nothing new.
        with transaction.atomic(savepoint=False):
            write_record(record, ("status", "wait_reason"))
            if first_time:
                record_event(
                    run.node,
                    EventKind.PHASE_WAITING,
                    actor_label="engine",
                    message=f"{record.phase}: {reason}",
                    data={"run": run.pk, "phase": record.phase},
                )
    due = timezone.now() + clock.real_delta(seconds)
    hand_over(run, due, wait_reason=text[:300], claimed_at=ctx.claimed_at, safety_net=safety_net)


def transient_failure(
    run: Run, record: PhaseRecord, ctx: PhaseContext, outcome: TransientFailure
) -> bool:
    """Spend one unit of the transient budget and look again soon; fail when it is spent."""
    if spend(run, "transient"):
        fail_run(
            run,
            record,
            f"gave up after {run.transient_budget} transient errors; last: {outcome.reason}",
            component=outcome.component or _reached_through(record.phase),
        )
        return False
    retry_event(
        run,
        record,
        f"{record.phase}: transient error, retrying: {outcome.reason}",
        budget="transient",
        error_kind=outcome.kind,
    )
    backoff = min(10.0 * run.transient_used, 120.0)
    wait(run, record, ctx, f"retrying after a transient error ({outcome.reason})", backoff)
    return False


def phase_failure(run: Run, record: PhaseRecord, ctx: PhaseContext, outcome: Failure) -> bool:
    """Spend one unit of the failure budget and redo the phase from observe; fail when spent."""
    if spend(run, "failure") or outcome.permanent:
        fail_run(
            run, record, outcome.reason, component=outcome.component, quarantine=outcome.quarantine
        )
        return False
    record.status = PhaseStatus.FAILED
    record.error = outcome.reason
    record.finished_at = timezone.now()
    with transaction.atomic(savepoint=False):
        write_record(record, ("status", "error", "finished_at"))
        retry_event(
            run,
            record,
            f"{record.phase} failed, retrying from observe: {outcome.reason}",
            budget="failure",
            component=outcome.component,
        )
    hand_over(run, timezone.now() + clock.real_delta(30), claimed_at=ctx.claimed_at)
    return False


def spend(run: Run, budget: str) -> bool:
    """Spend one unit of the run's "transient" or "failure" budget; True when it is overspent."""
    used, allowed = f"{budget}_used", f"{budget}_budget"
    Run.objects.filter(pk=run.pk).update(**{used: F(used) + 1})
    run.refresh_from_db(fields=[used, allowed])
    return getattr(run, used) > getattr(run, allowed)


def retry_event(run: Run, record: PhaseRecord, message: str, *, budget: str, **data: str) -> None:
    """Say that a phase is retried, and on which budget, with how much of it used."""
    record_event(
        run.node,
        EventKind.PHASE_RETRY,
        actor_label="engine",
        message=message,
        data={"run": run.pk, "phase": record.phase, **data, "budget": budget,
              "used": getattr(run, f"{budget}_used")},
    )  # fmt: skip


def needs_person(run: Run, record: PhaseRecord, ctx: PhaseContext, outcome: NeedsPerson) -> None:
    """Show the node's task for a site tech and look again later."""
    updated = Node.objects.filter(pk=run.node_id).exclude(attention=outcome.reason)
    if updated.update(attention=outcome.reason):
        record_event(
            run.node,
            EventKind.ATTENTION,
            actor_label="engine",
            message=outcome.reason,
            data={"run": run.pk, "phase": record.phase},
        )
    wait(run, record, ctx, f"waiting for a person: {outcome.reason}", outcome.recheck_seconds)


def fail_run(
    run: Run, record: PhaseRecord, reason: str, *, component: str = "", quarantine: bool = False
) -> None:
    """End the run as failed and move the node to where a person will see it (run_end.fail)."""
    fail(run, record, reason, component=component, quarantine=quarantine)


def finish_run(run: Run) -> None:
    """Every phase is done or skipped: record the manifest and hand the node to a person."""
    complete_run(run)


def _limit(ctx: PhaseContext) -> float:
    """The limit, in node seconds, of the phase the context's record runs."""
    return ctx.time_limit(phase_for(ctx.record.phase))


def _reached_through(phase: str) -> str:
    """The part a phase talks to: when it cannot be reached, that part is what is named."""
    info = PHASES_BY_NAME.get(phase)
    return "bmc" if info is not None and info.band == Band.OOB else "agent"
