"""Starting, advancing and ending rack runs: a rack-scale system brought up stage by stage.

A rack run is rows (provisioning.rack_models): its stages, copied in order from the manifest's
`rack_stages` (or the default, fleet.rack_stages), and one member row per member node and
stage. `advance_rack_run` is its only mover: it takes the current stage as far as its rows allow
(stages.py) and goes on to the next once that one is done and its check holds; after the last,
the rack is validating until the rack-wide gate's verdict (validation.py). It is advanced
when a member's run ends (follow_run_end, a run_end follower), when a check is observed or a
power cycle answered, and by the periodic sweep; each advance reads everything from the rows in
one transaction, so a crash anywhere loses nothing and the next advance resumes at the stage and
member it reached, re-flashing no member whose run was done.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from datetime import datetime
from typing import TYPE_CHECKING

from django.core.exceptions import PermissionDenied
from django.db import IntegrityError, transaction
from django.db.models import Subquery
from django.utils import timezone

from fleet import rack_lifecycle
from fleet.choices import RackState, StageAction
from fleet.lifecycle import TransitionError
from fleet.models import Manifest, Rack, RackSystem
from fleet.rack_stages import stages_of

from ..choices import OPEN_RACK_RUN_STATUSES, RackRunStatus, RackStageStatus
from ..core.run_end import How, RunEnding
from ..rack_models import RackRun, RackRunMember, RackRunStage
from . import stages, validation
from .messages import say, send_advance

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser

logger = logging.getLogger(__name__)

# Starting a rack run brings its members' node runs up: the right to start runs.
RACK_RUN_PERM = "fleet.start_run"
STAGE_RULES = ("kind", "action", "max_parallel", "verify", "retries", "time_limit_s")


class RackRunRefused(Exception):
    """The rack run cannot be started or changed now; the message says why."""


def _require(actor) -> None:
    if actor is not None and not actor.has_perm(RACK_RUN_PERM):
        raise PermissionDenied(f"you may not start or steer rack runs ({RACK_RUN_PERM})")


def _system_of(rack: Rack) -> RackSystem:
    system = RackSystem.objects.select_related("sku", "rack__site").filter(rack=rack).first()
    if system is None:
        raise RackRunRefused(f"rack {rack} is not a rack-scale system")
    return system


def _plan(system: RackSystem, manifest: Manifest) -> list[tuple[dict, list]]:
    """Each stage's rules with its member nodes, in order; refused if a declared member kind
    has no bring-up stage (its members would never come up)."""
    by_kind: dict[str, list] = defaultdict(list)
    for node in system.members():
        by_kind[node.kind].append(node)
    rules = stages_of(manifest.spec)
    brought_up = {r["kind"] for r in rules if r["action"] == StageAction.BRING_UP}
    unstaged = sorted({m.kind for m in system.sku.members.all()} - brought_up)
    if unstaged:
        raise RackRunRefused(
            f"{manifest} has no bring-up stage for {', '.join(unstaged)}: its members would "
            "never come up"
        )
    return [(rule, by_kind[rule["kind"]]) for rule in rules]


def start_rack_run(
    rack: Rack,
    *,
    actor: AbstractBaseUser | None = None,
    manifest: Manifest | None = None,
    now: datetime | None = None,
) -> RackRun:
    """Start bringing the rack-scale system up by its manifest's staged rules (its SKU's
    published manifest unless one is given); its first stage starts at once."""
    _require(actor)
    now = now or timezone.now()
    system = _system_of(rack)
    manifest = manifest or Manifest.current_for(system.sku)
    if manifest is None or manifest.sku_id != system.sku_id:
        raise RackRunRefused(f"{system.sku} has no published manifest for rack {rack}")
    if system.state not in rack_lifecycle.RACK_RUN_STARTABLE_STATES:
        raise RackRunRefused(f"rack {rack} is {system.get_state_display().lower()}")
    missing = system.missing_members()
    if missing:
        raise RackRunRefused(f"rack {rack} is not fully discovered: {'; '.join(missing)}")
    plan = _plan(system, manifest)
    user_id = actor.pk if actor is not None and actor.is_authenticated else None
    try:
        with transaction.atomic():
            rack_run = RackRun.objects.create(
                rack=rack, manifest=manifest, started_by_id=user_id, started_at=now
            )
            for index, (rule, nodes) in enumerate(plan):
                # The rules are copied: the run keeps them whatever the manifest's next version.
                stage = RackRunStage.objects.create(
                    rack_run=rack_run, index=index, **{k: rule[k] for k in STAGE_RULES}
                )
                RackRunMember.objects.bulk_create(
                    RackRunMember(stage=stage, node=node, order=i) for i, node in enumerate(nodes)
                )
            rack_lifecycle.transition(
                system, RackState.BRINGING_UP, actor=actor, reason=f"rack run {rack_run.pk} started"
            )
            shape = ", then ".join(
                f"{r['kind']} {r['action']} x{r['max_parallel']}" for r, _ in plan
            )
            say(rack_run, f"started to {manifest}: {shape}", manifest=manifest.version)
    except IntegrityError:
        # rack_run_one_open_per_rack: two rack runs would each start the same members.
        raise RackRunRefused(f"rack {rack} already has a rack run under way") from None
    except TransitionError as exc:
        raise RackRunRefused(str(exc)) from None
    return advance_rack_run(rack_run.pk, now=now)


def advance_rack_run(rack_run_id: int, now: datetime | None = None) -> RackRun:
    """Take the rack run as far as its rows allow: the current stage's members settled,
    retried and started, its check asked for, the next stage begun once it holds. Idempotent:
    on rows that did not change, a second call changes nothing."""
    now = now or timezone.now()
    with transaction.atomic():
        _lock_rack(rack_run_id)
        # The UPDATE is the lock: two workers advancing one rack run take turns, so neither
        # counts the members in flight before the other's starts are written.
        RackRun.objects.filter(pk=rack_run_id).update(advanced_at=timezone.now())
        rack_run = RackRun.objects.select_related(
            "rack__site", "rack__system", "manifest", "started_by"
        ).get(pk=rack_run_id)
        if rack_run.status not in OPEN_RACK_RUN_STATUSES:
            return rack_run
        system = rack_run.rack.system
        staged = rack_run.stage_index >= rack_run.stages.count()
        if not (
            system.state == RackState.BRINGING_UP
            or (staged and system.state == RackState.VALIDATING)
        ):
            # A member was replaced (the rack is discovering again), or a person moved it.
            why = f"the rack is {system.get_state_display().lower()}; start a new rack run"
            _end(rack_run, RackRunStatus.CANCELLED, why, now)
            return rack_run
        remaining = rack_run.stages.filter(index__gte=rack_run.stage_index).order_by("index")
        for stage in remaining:
            outcome = stages.step(rack_run, stage, now)
            if outcome.failure:
                _fail(rack_run, system, stage, outcome.failure, now)
                return rack_run
            if not outcome.next:
                _wait(rack_run, outcome.wait)
                return rack_run
            if RackRun.objects.filter(pk=rack_run.pk, stage_index=stage.index).update(
                stage_index=stage.index + 1
            ):
                rack_run.stage_index = stage.index + 1
        _validate(rack_run, system, now)
    return rack_run


def advance_open_rack_runs(now: datetime | None = None) -> int:
    """Advance every running rack run (the periodic sweep); return how many."""
    ids = list(
        RackRun.objects.filter(status__in=OPEN_RACK_RUN_STATUSES).values_list("pk", flat=True)
    )
    for rack_run_id in ids:
        try:
            advance_rack_run(rack_run_id, now=now)
        except Exception:
            # One rack run that cannot advance must hold up neither the others nor the sweep
            # that follows; its rows are as they were, and the next sweep tries again.
            logger.exception("rack run %s could not advance", rack_run_id)
    return len(ids)


def _lock_rack(rack_run_id: int) -> None:
    """Take the rack's row lock before any other row, as every rack decision does
    (acceptance.rack_decisions): an advance that started a member and then moved the rack would
    otherwise deadlock with a tray's quarantine, which holds the rack and waits for that
    member's row (PostgreSQL; SQLite serializes writers)."""
    rack = RackRun.objects.filter(pk=rack_run_id).values("rack_id")
    list(RackSystem.objects.select_for_update().filter(rack_id=Subquery(rack)).values("pk"))


def _wait(rack_run: RackRun, why: str) -> None:
    if rack_run.wait_reason != why[:300]:
        RackRun.objects.filter(pk=rack_run.pk).update(wait_reason=why[:300])
        rack_run.wait_reason = why[:300]


def _end(rack_run: RackRun, status: str, reason: str, now: datetime) -> bool:
    updated = RackRun.objects.filter(pk=rack_run.pk, status__in=OPEN_RACK_RUN_STATUSES).update(
        status=status, last_error=reason[:500], wait_reason="", finished_at=now
    )
    if updated:
        rack_run.status, rack_run.last_error, rack_run.finished_at = status, reason[:500], now
        rack_run.wait_reason = ""
        say(
            rack_run,
            f"{RackRunStatus(status).label.lower()}" + (f": {reason}" if reason else ""),
            status=status,
        )
    return bool(updated)


def _move_rack(system: RackSystem, to_state: str, reason: str, actor=None) -> None:
    try:
        rack_lifecycle.transition(system, to_state, actor=actor, reason=reason)
    except TransitionError:
        # Someone moved the rack first (a replaced member, a person): theirs is the newer word.
        logger.warning("rack %s stayed %s, not %s", system.rack_id, system.state, to_state)


def _fail(rack_run: RackRun, system: RackSystem, stage, failure: str, now: datetime) -> None:
    RackRunStage.objects.filter(
        pk=stage.pk, status__in=(RackStageStatus.RUNNING, RackStageStatus.VERIFYING)
    ).update(status=RackStageStatus.FAILED, finished_at=now)
    if _end(rack_run, RackRunStatus.FAILED, failure, now):
        _move_rack(system, RackState.DEGRADED, f"rack run {rack_run.pk} failed: {failure}"[:2000])


def _validate(rack_run: RackRun, system: RackSystem, now: datetime) -> None:
    """Every stage is done: the rack is validating until the rack-wide gate's verdict, then
    awaits approval, or is degraded with what the verdict names."""
    if system.state == RackState.BRINGING_UP:
        why = f"rack run {rack_run.pk}: every stage done; the rack-wide gate starts"
        _move_rack(system, RackState.VALIDATING, why)
        if system.state != RackState.VALIDATING:
            return  # someone moved the rack first: the next advance ends this rack run
    look = validation.rack_gate().look(rack_run, now)
    if look.passed is None:
        _wait(rack_run, f"rack-wide gate: {look.reason}")
        return
    if look.passed:
        if _end(rack_run, RackRunStatus.SUCCEEDED, "", now):
            why = f"rack run {rack_run.pk}: the rack-wide gate passed: {look.reason}"
            _move_rack(system, RackState.AWAITING_APPROVAL, why[:2000])
        return
    failure = f"the rack-wide gate failed: {look.reason}"
    if _end(rack_run, RackRunStatus.FAILED, failure, now):
        _move_rack(system, RackState.DEGRADED, f"rack run {rack_run.pk}: {failure}"[:2000])


def cancel_rack_run(
    rack_run: RackRun, *, actor: AbstractBaseUser, reason: str = "", now: datetime | None = None
) -> RackRun:
    """Stop the rack run: no member starts again. Member runs in flight are not aborted."""
    _require(actor)
    now = now or timezone.now()
    why = reason.strip() or f"cancelled by {actor.get_username()}"
    with transaction.atomic():
        _lock_rack(rack_run.pk)
        rack_run = RackRun.objects.select_related("rack__system", "started_by").get(pk=rack_run.pk)
        if not _end(rack_run, RackRunStatus.CANCELLED, why, now):
            raise RackRunRefused(f"rack run {rack_run.pk} has already ended")
        system = rack_run.rack.system
        if system.state in (RackState.BRINGING_UP, RackState.VALIDATING):
            _move_rack(system, RackState.DEGRADED, f"rack run {rack_run.pk}: {why}", actor=actor)
    return rack_run


def follow_run_end(ending: RunEnding) -> None:
    """run_end's follower: a member's run ended; its rack run settles it and goes on. A message
    lost here costs only time: the periodic sweep advances every open rack run."""
    if ending.run is None or ending.how not in (How.SUCCEEDED, How.FAILED, How.ABORTED):
        return
    waiting = RackRunMember.objects.filter(
        run_id=ending.run.pk,
        status=stages.RUNNING,
        stage__rack_run__status__in=OPEN_RACK_RUN_STATUSES,
    )
    for rack_run_id in set(waiting.values_list("stage__rack_run_id", flat=True)):
        send_advance(rack_run_id)
