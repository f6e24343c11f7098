"""One stage of a rack run: its members started on the node engine, never more than the
stage's `max_parallel` at once, settled as their runs end, a failed one retried up to the
stage's `retries`, the whole bounded by its `time_limit`; once every member is done, its check
(`verify`) is asked for and the next stage waits until an observer says it holds.

`step` reads the stage's rows and moves each one only with a conditional UPDATE from the state
it read, recording every move in the audit: called twice on rows that did not change, the
second call moves nothing (the rack run's advance is idempotent, and resumable anywhere).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import transaction

from fleet.choices import NodeState, StageAction, StageVerify
from fleet.lifecycle import RUN_STARTABLE_STATES, TransitionError
from fleet.models import Manifest, Node
from fleet.rack_scale import member_label

from .. import clock
from ..choices import (
    ACTIVE_RUN_STATUSES,
    PhaseStatus,
    RackMemberStatus,
    RackStageStatus,
    RunKind,
    RunStatus,
)
from ..core.runs import RunError, start_run
from ..models import PhaseRecord, Run
from ..rack_models import RackRun, RackRunMember, RackRunStage
from .messages import say, send_power_cycle, send_verify

W, RUNNING, DONE, FAILED = (
    RackMemberStatus.WAITING,
    RackMemberStatus.RUNNING,
    RackMemberStatus.DONE,
    RackMemberStatus.FAILED,
)
# Node seconds a check's observation may stay unanswered, or a "does not hold" stand, before the
# check is asked for again (a lost message, a worker gone mid-look, a fabric still forming).
VERIFY_LOOK_S = 60
NAMED = 5  # members named in a reason before "and N more"


@dataclass(frozen=True)
class StageOutcome:
    """What one step of a stage came to: go on to the next stage, stop the rack run (the
    failure names the member or check), or wait (saying for what)."""

    next: bool = False
    failure: str = ""
    wait: str = ""


def title(stage: RackRunStage) -> str:
    """How the audit names a stage: "stage 2 (switch_tray, bring_up)"."""
    return f"stage {stage.index + 1} ({stage.kind}, {stage.action})"


def _named(items: list[str]) -> str:
    more = f" and {len(items) - NAMED} more" if len(items) > NAMED else ""
    return "; ".join(items[:NAMED]) + more


def _move(member: RackRunMember, from_status: str, **fields) -> bool:
    """Move a member from the status read, keeping the object in step; False if another worker moved it first."""
    updated = RackRunMember.objects.filter(pk=member.pk, status=from_status).update(**fields)
    if updated:
        for name, value in fields.items():
            setattr(member, name, value)
    return bool(updated)


def step(rack_run: RackRun, stage: RackRunStage, now: datetime) -> StageOutcome:
    """Take the stage as far as its rows allow now."""
    if stage.status == RackStageStatus.PENDING:
        _begin(rack_run, stage, now)
    members = list(stage.members.select_related("node", "run").order_by("order"))
    if stage.status == RackStageStatus.RUNNING:
        _settle(rack_run, stage, members, now)
        _retry(rack_run, stage, members)
        failure = _exhausted(stage, members) or _overdue(stage, members, now)
        if failure:
            return StageOutcome(failure=failure)
        _start(rack_run, stage, members, now)
        if not all(m.status == DONE for m in members):
            return StageOutcome(wait=_progress(stage, members))
        if stage.verify == StageVerify.NONE:
            return _done(rack_run, stage, now, "no check")
        _ask_verify(rack_run, stage, now)
    if stage.status == RackStageStatus.VERIFYING:
        if stage.verify_holds:
            return _done(rack_run, stage, now, stage.verify_reason or "it holds")
        failure = _overdue(stage, members, now)
        if failure:
            return StageOutcome(failure=failure)
        _reask_if_stale(rack_run, stage, now)
        seen = stage.verify_reason or "not observed yet (unknown)"
        return StageOutcome(wait=f"{title(stage)}: checking {stage.verify}: {seen}")
    if stage.status == RackStageStatus.DONE:
        return StageOutcome(next=True)
    return StageOutcome(failure=f"{title(stage)} is {stage.get_status_display().lower()}")


def _begin(rack_run: RackRun, stage: RackRunStage, now: datetime) -> None:
    deadline = now + timedelta(seconds=stage.time_limit_s)
    if RackRunStage.objects.filter(pk=stage.pk, status=RackStageStatus.PENDING).update(
        status=RackStageStatus.RUNNING, started_at=now, deadline=deadline
    ):
        stage.status, stage.started_at, stage.deadline = RackStageStatus.RUNNING, now, deadline
        say(
            rack_run,
            f"{title(stage)} started: {stage.members.count()} member(s), at most "
            f"{stage.max_parallel} at once, check {stage.verify}, {stage.retries} retries, "
            f"time limit {stage.time_limit_s} s",
            stage=stage.index,
            kind=stage.kind,
            max_parallel=stage.max_parallel,
        )


def _settle(rack_run: RackRun, stage: RackRunStage, members: list, now: datetime) -> None:
    """Bring-up members whose node run ended are done or failed (a power cycle's member is
    settled by its own task, power.py)."""
    if stage.action != StageAction.BRING_UP:
        return
    for member in members:
        run = member.run
        if member.status != RUNNING or (run is not None and run.status in ACTIVE_RUN_STATUSES):
            continue
        if run is not None and run.status == RunStatus.SUCCEEDED:
            status, reason = DONE, ""
        elif run is None:
            status, reason = FAILED, "its run is gone"
        else:
            reason = run.last_error or f"run {run.pk} {run.get_status_display().lower()}"
            status = FAILED
        if _move(member, RUNNING, status=status, reason=reason[:500], finished_at=now):
            what = "done" if status == DONE else f"failed: {reason}"
            say(
                rack_run,
                f"{title(stage)}: {member_label(member.node)} {what}",
                node=member.node,
                stage=stage.index,
                run=run.pk if run else None,
            )


def _retry(rack_run: RackRun, stage: RackRunStage, members: list) -> None:
    """A failed member with attempts left waits to start again."""
    for member in members:
        if member.status != FAILED or member.attempts > stage.retries:
            continue
        if _move(member, FAILED, status=W, cycle_sent_at=None, finished_at=None):
            say(
                rack_run,
                f"{title(stage)}: {member_label(member.node)} attempt {member.attempts} of "
                f"{stage.retries + 1} failed ({member.reason}); retrying",
                node=member.node,
                stage=stage.index,
                attempt=member.attempts,
            )


def _exhausted(stage: RackRunStage, members: list) -> str:
    failed = [m for m in members if m.status == FAILED]
    if not failed:
        return ""
    named = [
        f"{member_label(m.node)} failed {m.attempts} of {stage.retries + 1} attempt(s): "
        f"{m.reason or 'failed'}"
        for m in failed
    ]
    return f"{title(stage)}: {_named(named)}"


def _overdue(stage: RackRunStage, members: list, now: datetime) -> str:
    if stage.deadline is None or now < stage.deadline:
        return ""
    limit = f"{title(stage)} ran past its time limit of {stage.time_limit_s} s"
    if stage.status == RackStageStatus.VERIFYING:
        seen = stage.verify_reason or "not observed (unknown)"
        return f"{limit}: its check {stage.verify} did not hold: {seen}"
    still = [
        f"{member_label(m.node)} {m.status}" + (f" (run {m.run_id})" if m.run_id else "")
        for m in members
        if m.status != DONE
    ]
    return f"{limit}: {_named(still)}"


def _start(rack_run: RackRun, stage: RackRunStage, members: list, now: datetime) -> None:
    running = sum(1 for m in members if m.status == RUNNING)
    for member in members:
        if running >= stage.max_parallel:
            return
        if member.status != W:
            continue
        # Each start's audit says how many are in flight with it: the stage's parallelism as
        # the engine counted it (report.py reads the most).
        if stage.action == StageAction.POWER_CYCLE:
            started = _start_cycle(rack_run, stage, member, now, running + 1)
        else:
            started = _start_run(rack_run, stage, member, now, running + 1)
        running += 1 if started else 0


def _flashed(rack_run: RackRun, node_id: int) -> bool:
    """Whether a run of the node since the rack run started wrote any firmware."""
    return PhaseRecord.objects.filter(
        run__node_id=node_id,
        run__created_at__gte=rack_run.started_at,
        phase__endswith="_firmware",
        status=PhaseStatus.DONE,
    ).exists()


def _start_cycle(
    rack_run: RackRun, stage: RackRunStage, member, now: datetime, in_flight: int
) -> bool:
    if not _flashed(rack_run, member.node_id):
        # The cycle activates what the tray's runs staged: with nothing written it would only
        # interrupt the tray (a second pass over a rack at its manifest flashes nothing).
        why = "nothing was flashed in this rack run: no power cycle needed"
        if _move(member, W, status=DONE, reason=why, started_at=now, finished_at=now):
            say(
                rack_run,
                f"{title(stage)}: {member_label(member.node)}: {why}",
                node=member.node,
                stage=stage.index,
            )
        return False
    if not _move(
        member, W, status=RUNNING, attempts=member.attempts + 1, started_at=now, reason=""
    ):
        return False
    say(
        rack_run,
        f"{title(stage)}: {member_label(member.node)} power cycle asked for "
        f"(attempt {member.attempts} of {stage.retries + 1})",
        node=member.node,
        stage=stage.index,
        in_flight=in_flight,
    )
    send_power_cycle(rack_run, member.pk)
    return True


def _start_run(
    rack_run: RackRun, stage: RackRunStage, member, now: datetime, in_flight: int
) -> bool:
    """Start the member's node run, or settle why it cannot; True when a run started."""
    node = Node.objects.select_related("sku", "rack__site").get(pk=member.node_id)
    if node.state == NodeState.IN_SERVICE:
        # Serving tenants: a rack run re-checking a degraded rack leaves it as it is.
        if _move(member, W, status=DONE, reason="in service: left as it is", finished_at=now):
            say(
                rack_run,
                f"{title(stage)}: {member_label(node)} is in service; left as it is",
                node=node,
                stage=stage.index,
            )
        return False
    busy = Run.objects.filter(node=node, status__in=ACTIVE_RUN_STATUSES).first()
    if busy is not None:
        # Not the rack run's to stop: the member waits its turn until that run ends.
        why = f"waiting for run {busy.pk} to end"
        if member.reason != why:
            _move(member, W, reason=why)
        return False
    attempt = member.attempts + 1
    try:
        manifest = Manifest.current_for(node.sku)
        if manifest is None:
            raise RunError(f"SKU {node.sku.name} has no published manifest")
        if node.state not in RUN_STARTABLE_STATES:
            raise RunError(f"node {node.serial} is {node.get_state_display().lower()}")
        kind = RunKind.PROVISION if node.state == NodeState.ENROLLED else RunKind.REPROVISION
        with transaction.atomic():
            run = start_run(node, kind=kind, manifest=manifest)
            # Started by the system on the rack run's behalf; its author is named on the run.
            Run.objects.filter(pk=run.pk).update(started_by=rack_run.started_by)
            _move(
                member,
                W,
                status=RUNNING,
                run=run,
                attempts=attempt,
                started_at=now,
                reason="",
                finished_at=None,
            )
            member.run = run
            say(
                rack_run,
                f"{title(stage)}: {member_label(node)} {kind} run {run.pk} started "
                f"(attempt {attempt} of {stage.retries + 1})",
                node=node,
                stage=stage.index,
                run=run.pk,
                in_flight=in_flight,
            )
    except (RunError, TransitionError) as exc:
        if _move(
            member, W, status=FAILED, attempts=attempt, reason=str(exc)[:500], finished_at=now
        ):
            say(
                rack_run,
                f"{title(stage)}: {member_label(node)} could not start: {exc}",
                node=node,
                stage=stage.index,
            )
        return False
    return True


def _progress(stage: RackRunStage, members: list) -> str:
    count = {s: sum(1 for m in members if m.status == s) for s in (W, RUNNING, DONE)}
    return (
        f"{title(stage)}: {count[RUNNING]} in flight (at most {stage.max_parallel}), "
        f"{count[W]} waiting, {count[DONE]} of {len(members)} done"
    )


def _ask_verify(rack_run: RackRun, stage: RackRunStage, now: datetime) -> None:
    if RackRunStage.objects.filter(pk=stage.pk, status=RackStageStatus.RUNNING).update(
        status=RackStageStatus.VERIFYING,
        verify_requested_at=now,
        verify_holds=None,
        verify_reason="",
        verified_at=None,
    ):
        stage.status, stage.verify_requested_at = RackStageStatus.VERIFYING, now
        stage.verify_holds, stage.verify_reason = None, ""
        say(
            rack_run,
            f"{title(stage)}: every member settled; checking {stage.verify}",
            stage=stage.index,
            verify=stage.verify,
        )
        send_verify(rack_run, stage.pk)


def _reask_if_stale(rack_run: RackRun, stage: RackRunStage, now: datetime) -> None:
    asked = stage.verify_requested_at
    if asked is not None and now - asked < clock.real_delta(VERIFY_LOOK_S):
        return
    if RackRunStage.objects.filter(
        pk=stage.pk, status=RackStageStatus.VERIFYING, verify_requested_at=asked
    ).update(verify_requested_at=now):
        stage.verify_requested_at = now
        send_verify(rack_run, stage.pk)


def _done(rack_run: RackRun, stage: RackRunStage, now: datetime, why: str) -> StageOutcome:
    if RackRunStage.objects.filter(
        pk=stage.pk, status__in=(RackStageStatus.RUNNING, RackStageStatus.VERIFYING)
    ).update(status=RackStageStatus.DONE, finished_at=now):
        stage.status = RackStageStatus.DONE
        say(rack_run, f"{title(stage)} done; check {stage.verify}: {why}", stage=stage.index)
    return StageOutcome(next=True)
