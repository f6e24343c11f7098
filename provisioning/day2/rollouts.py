"""Rolling upgrades: bring the nodes behind a published manifest to it, `concurrency` at a time.

A rollout is rows (provisioning.models.Rollout, one RolloutNode per node), and `advance_rollout`
is its only mover: it settles the nodes whose runs ended, then starts waiting nodes until
`concurrency` are in flight. An idle node (failed, in break/fix, awaiting approval) gets a
reprovision run; an in-service node goes through the suspect loop's path (suspect.py): cordoned
and drained from its scheduler, reprovisioned, re-validated, re-admitted. A node that fails is
named with its reason and stops nothing else.

It is advanced when one of its runs ends (follow_run_end, a run_end follower) and by the periodic
sweep (which also sees a node that was upgraded out of service come back: it counts against
the concurrency until it is in service again, so at most `concurrency` nodes are ever out of the
pool); each advance reads everything from the rows in one transaction, so a crash mid-advance
loses nothing and the next advance picks up where the rows stand.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from celery import current_app
from django.core.exceptions import PermissionDenied
from django.db import IntegrityError, transaction
from django.utils import timezone

from fleet.choices import DocumentStatus, EventKind, NodeState
from fleet.events import record as record_event
from fleet.lifecycle import TransitionError
from fleet.models import Manifest, Node

from .. import clock
from ..choices import (
    ACTIVE_RUN_STATUSES,
    OPEN_ROLLOUT_STATES,
    RolloutNodeStatus,
    RolloutState,
    RunKind,
    RunStatus,
)
from ..core.run_end import How, RunEnding
from ..core.runs import RunError, start_run
from ..models import Rollout, RolloutNode, Run
from . import waves
from .behind import behind_nodes, manifest_id_of
from .suspect import SuspectRefused, upgrade_in_service
from .waves import WavePolicy

if TYPE_CHECKING:
    from django.contrib.auth.models import AnonymousUser, User

    # Whoever a request carries; refused unless signed in with the right to reprovision.
    Actor = User | AnonymousUser

logger = logging.getLogger(__name__)

# Starting a rollout reprovisions nodes: the right to reprovision one.
ROLLOUT_PERM = "fleet.start_run"
DEFAULT_CONCURRENCY = 2
MAX_CONCURRENCY = 50
# Nodes that take a reprovision run as they are: none of them is in service.
IDLE_STATES = (
    NodeState.ENROLLED,
    NodeState.FAILED,
    NodeState.BREAK_FIX,
    NodeState.AWAITING_APPROVAL,
)
W, RUNNING, DONE, FAILED = (
    RolloutNodeStatus.WAITING,
    RolloutNodeStatus.RUNNING,
    RolloutNodeStatus.DONE,
    RolloutNodeStatus.FAILED,
)


class RolloutRefused(Exception):
    """The rollout cannot be started or changed now; the message says why."""


class BadConcurrency(RolloutRefused):
    """The concurrency limit given is not a whole number in range."""


def _require(actor) -> None:
    if actor is None or not actor.is_authenticated or not actor.has_perm(ROLLOUT_PERM):
        raise PermissionDenied(f"you may not start or steer rollouts ({ROLLOUT_PERM})")


def parse_concurrency(value: Any) -> int:
    """A concurrency limit from a form or a request body; RolloutRefused saying what is wanted."""
    text = str(value).strip() if value is not None else ""
    if isinstance(value, bool) or not text.isdigit() or not 1 <= int(text) <= MAX_CONCURRENCY:
        raise BadConcurrency(
            f"concurrency must be a whole number from 1 to {MAX_CONCURRENCY}, not {value!r}"
        )
    return int(text)


def start_rollout(
    manifest: Manifest,
    *,
    actor: Actor,
    concurrency: Any = DEFAULT_CONCURRENCY,
    policy: WavePolicy | None = None,
    now=None,
    rollback_of: Rollout | None = None,
    nodes: list[Node] | None = None,
) -> Rollout:
    """Start bringing every node behind `manifest` (its SKU's published one) to it, in the
    waves, windows and caps `policy` sets (waves.py; none: one wave, as many as concurrency).
    A roll back (rollout_report.roll_back) brings `nodes` of `rollback_of` to the manifest
    published before that one's."""
    _require(actor)
    limit = parse_concurrency(concurrency)
    policy = policy or WavePolicy()
    if manifest.status != DocumentStatus.PUBLISHED and rollback_of is None:
        raise RolloutRefused(
            f"{manifest.sku.name} {manifest.version} is {manifest.status}: only the published "
            "manifest is rolled out"
        )
    nodes = waves.spread_over_sites(list(behind_nodes(manifest)) if nodes is None else nodes)
    if not nodes:
        raise RolloutRefused(f"no node is behind {manifest.sku.name} {manifest.version}")
    try:
        with transaction.atomic():
            rollout = Rollout.objects.create(
                manifest=manifest,
                concurrency=limit,
                created_by=actor if actor.is_authenticated else None,
                rollback_of=rollback_of,
                **vars(policy),
            )
            RolloutNode.objects.bulk_create(
                RolloutNode(rollout=rollout, node=node, order=i, wave=policy.wave_of(i))
                for i, node in enumerate(nodes)
            )
    except IntegrityError:
        # rollout_one_open_per_manifest: two rollouts would start each node twice.
        open_one = Rollout.objects.filter(manifest=manifest, state__in=OPEN_ROLLOUT_STATES).first()
        which = f"rollout {open_one.pk}" if open_one else "another rollout"
        raise RolloutRefused(f"{which} is already bringing nodes to {manifest}") from None
    return advance_rollout(rollout.pk, now=now)


def advance_rollout(rollout_id: int, now=None) -> Rollout:
    """Settle the rollout's ended runs, pause it if a settled wave failed too many nodes, and
    start its current wave's waiting nodes up to its concurrency, windows and caps (windows read
    at `now`, by default the wall clock: the sweep calls this, so a shut window's nodes start
    at the first sweep after the next one opens)."""
    with transaction.atomic():
        # The UPDATE is the lock: two workers advancing one rollout take turns, so neither
        # counts the nodes in flight before the other's starts are written.
        Rollout.objects.filter(pk=rollout_id).update(advanced_at=timezone.now())
        rollout = Rollout.objects.select_related("manifest__sku", "created_by").get(pk=rollout_id)
        if rollout.state not in OPEN_ROLLOUT_STATES:
            return rollout
        _settle_running(rollout)
        if rollout.manifest.status != DocumentStatus.PUBLISHED and rollout.rollback_of_id is None:
            _end(
                rollout,
                RolloutState.CANCELLED,
                f"{rollout.manifest.version} is no longer published",
            )
            return rollout
        entries = list(rollout.entries.select_related("node__rack__site").order_by("order"))
        if rollout.state == RolloutState.RUNNING:
            why = waves.tripped(rollout, entries)
            if why:
                Rollout.objects.filter(pk=rollout.pk).update(state=RolloutState.PAUSED, reason=why)
                rollout.refresh_from_db()
                return rollout
            # A window that shut stops new starts only: nodes it let in go on to the end.
            _start_waiting(rollout, entries, now or clock.wall_now())
            # Only a running rollout finishes: a paused one keeps its reason (the failed wave a
            # person must see) until that person resumes or cancels it, settled or not.
            if not rollout.entries.filter(status__in=(W, RUNNING)).exists():
                _end(rollout, RolloutState.FINISHED, "")
    return rollout


def advance_open_rollouts() -> int:
    """Advance every running or paused rollout (the periodic sweep); return how many."""
    ids = list(Rollout.objects.filter(state__in=OPEN_ROLLOUT_STATES).values_list("pk", flat=True))
    for rollout_id in ids:
        try:
            advance_rollout(rollout_id)
        except Exception:
            # One rollout that cannot advance must hold up neither the others nor the sweep of
            # lost runs that follows; its rows are as they were, and the next sweep tries again.
            logger.exception("rollout %s could not advance", rollout_id)
    return len(ids)


def _settle_running(rollout: Rollout) -> None:
    """Nodes whose run ended are done (it succeeded) or failed (with its last error). A node
    taken out of service is done only once it is back: until then it is still out of the pool."""
    now = timezone.now()
    running = rollout.entries.filter(status=RUNNING).select_related("run", "node")
    for entry in running:
        run = entry.run
        if run is not None and run.status in ACTIVE_RUN_STATUSES:
            continue
        status, reason = _outcome(entry)
        if status == RUNNING:
            RolloutNode.objects.filter(pk=entry.pk).update(reason=reason)
            continue
        RolloutNode.objects.filter(pk=entry.pk, status=RUNNING).update(
            status=status, reason=reason[:500], finished_at=now
        )


def _outcome(entry: RolloutNode) -> tuple[str, str]:
    """Where an entry whose run ended stands: (status, reason)."""
    run, node = entry.run, entry.node
    if run is None:
        return FAILED, "its run is gone"
    if run.status != RunStatus.SUCCEEDED:
        return FAILED, run.last_error or f"run {run.pk} {run.get_status_display().lower()}"
    if not entry.took_out or node.state == NodeState.IN_SERVICE:
        return DONE, ""
    if node.state == NodeState.AWAITING_APPROVAL:
        return RUNNING, "upgraded; awaiting approval back into service"
    return FAILED, f"upgraded, then {node.get_state_display().lower()}"


def _start_waiting(rollout: Rollout, entries: list[RolloutNode], now) -> None:
    free = rollout.concurrency - sum(1 for e in entries if e.status == RUNNING)
    wave = waves.current_wave(entries)
    if free <= 0 or wave is None:
        return
    gate = waves.Gate.of(rollout, entries, now)
    for entry in entries:
        if free <= 0:
            return
        if entry.status != W or entry.wave != wave:
            continue
        waits = gate.refusal(entry)
        if waits:
            if entry.reason != waits:
                RolloutNode.objects.filter(pk=entry.pk).update(reason=waits[:500])
            continue
        if _start_one(rollout, entry):
            gate.count(entry)
            free -= 1


def _start_one(rollout: Rollout, entry: RolloutNode) -> bool:
    """Start the entry's node, or settle why it cannot start; True when a run started."""
    node = Node.objects.get(pk=entry.node_id)
    # A node rolled back after a failed update may still be recorded on the older manifest
    # while its firmware is not: a roll back reprovisions it whatever the record says.
    if rollout.rollback_of_id is None and manifest_id_of(node) == rollout.manifest_id:
        _settle(entry, DONE, f"already on {rollout.manifest.version}")
        return False
    busy = Run.objects.filter(node=node, status__in=ACTIVE_RUN_STATUSES).first()
    if busy is not None:
        # Not ours to stop: the node waits its turn again once that run ends.
        RolloutNode.objects.filter(pk=entry.pk).update(reason=f"waiting for run {busy.pk} to end")
        return False
    try:
        with transaction.atomic():
            run = _start_run(rollout, node)
            RolloutNode.objects.filter(pk=entry.pk, status=W).update(
                status=RUNNING,
                run=run,
                took_out=run.kind == RunKind.UPGRADE,
                reason="",
                started_at=timezone.now(),
            )
            record_event(
                node,
                EventKind.RUN_ACTION,
                actor=rollout.created_by,
                message=f"rollout {rollout.pk} to {rollout.manifest.version}: "
                f"{run.get_kind_display().lower()} run {run.pk} started",
                data={"rollout": rollout.pk, "run": run.pk, "action": "rollout"},
            )
    except (RunError, SuspectRefused, TransitionError, RolloutRefused) as exc:
        _settle(entry, FAILED, str(exc))
        return False
    return True


def _start_run(rollout: Rollout, node: Node) -> Run:
    manifest = rollout.manifest
    if node.state == NodeState.IN_SERVICE:
        why = f"rollout {rollout.pk} to {manifest.version}"
        return upgrade_in_service(node, manifest, actor=rollout.created_by, why=why)
    if node.state not in IDLE_STATES:
        hint = "; send it to break/fix first" if node.state == NodeState.QUARANTINED else ""
        raise RolloutRefused(f"node {node.serial} is {node.get_state_display().lower()}{hint}")
    run = start_run(node, kind=RunKind.REPROVISION, manifest=manifest)
    # Started by the system on the rollout's behalf; its author is named on the run.
    Run.objects.filter(pk=run.pk).update(started_by=rollout.created_by)
    return run


def _settle(entry: RolloutNode, status: str, reason: str) -> None:
    RolloutNode.objects.filter(pk=entry.pk).update(
        status=status, reason=reason[:500], finished_at=timezone.now()
    )


def _end(rollout: Rollout, state: str, reason: str) -> None:
    Rollout.objects.filter(pk=rollout.pk, state__in=OPEN_ROLLOUT_STATES).update(
        state=state, reason=reason, finished_at=timezone.now()
    )
    rollout.refresh_from_db()


# -- a person steers it --------------------------------------------------------------------------


def pause_rollout(rollout: Rollout, *, actor: Actor, reason: str = "") -> Rollout:
    """Start no new node; runs in flight go on and are settled as they end."""
    _require(actor)
    why = reason.strip() or f"paused by {actor.get_username()}"
    if not Rollout.objects.filter(pk=rollout.pk, state=RolloutState.RUNNING).update(
        state=RolloutState.PAUSED, reason=why[:300]
    ):
        raise RolloutRefused(f"rollout {rollout.pk} is not running")
    rollout.refresh_from_db()
    return rollout


def resume_rollout(rollout: Rollout, *, actor: Actor) -> Rollout:
    """Go on starting nodes where the paused rollout stood."""
    _require(actor)
    # Resuming accepts every wave settled so far, failures included: it does not pause again
    # on a wave a person has seen.
    cleared = waves.settled_waves(list(rollout.entries.all()))
    if not Rollout.objects.filter(pk=rollout.pk, state=RolloutState.PAUSED).update(
        state=RolloutState.RUNNING, reason="", waves_cleared=cleared
    ):
        raise RolloutRefused(f"rollout {rollout.pk} is not paused")
    return advance_rollout(rollout.pk)


def cancel_rollout(rollout: Rollout, *, actor: Actor, reason: str = "") -> Rollout:
    """End the rollout: no new node starts. Runs in flight are not aborted; they finish."""
    _require(actor)
    why = reason.strip() or f"cancelled by {actor.get_username()}"
    if not Rollout.objects.filter(pk=rollout.pk, state__in=OPEN_ROLLOUT_STATES).update(
        state=RolloutState.CANCELLED, reason=why[:300], finished_at=timezone.now()
    ):
        raise RolloutRefused(f"rollout {rollout.pk} has already ended")
    rollout.refresh_from_db()
    return rollout


# -- what its page shows ---------------------------------------------------------------------------


@dataclass
class RolloutProgress:
    """A rollout's nodes by status: N of M done, in flight, failed with reasons."""

    rollout: Rollout
    entries: list[RolloutNode]

    def _count(self, status: str) -> int:
        return sum(1 for e in self.entries if e.status == status)

    @property
    def total(self) -> int:
        return len(self.entries)

    @property
    def done(self) -> int:
        return self._count(DONE)

    @property
    def running(self) -> int:
        return self._count(RUNNING)

    @property
    def waiting(self) -> int:
        return self._count(W)

    @property
    def failed(self) -> list[RolloutNode]:
        return [e for e in self.entries if e.status == FAILED]

    @property
    def is_open(self) -> bool:
        return self.rollout.state in OPEN_ROLLOUT_STATES


def progress(rollout: Rollout) -> RolloutProgress:
    """The rollout with every node, its rack and its run, in rollout order (one query)."""
    entries = list(rollout.entries.select_related("node__rack", "run").order_by("order"))
    return RolloutProgress(rollout, entries)


# provisioning.tasks.advance_rollout, sent by name: tasks imports this module, not the reverse.
ADVANCE_ROLLOUT_TASK = "provisioning.tasks.advance_rollout"


def send_advance(rollout_id: int) -> None:
    """Ask a worker to advance the rollout once the current transaction commits."""
    transaction.on_commit(lambda: current_app.send_task(ADVANCE_ROLLOUT_TASK, (rollout_id,)))


def follow_run_end(ending: RunEnding) -> None:
    """run_end's follower: any end of a run settles it for its rollout. A message lost here
    costs only time: the periodic sweep advances every open rollout."""
    if ending.run is not None and ending.how in (How.SUCCEEDED, How.FAILED, How.ABORTED):
        run_settled(ending.run.pk)


def run_settled(run_id: int) -> None:
    """A run ended: the rollout that waits on it (if any) starts its next node."""
    waiting = RolloutNode.objects.filter(run_id=run_id, status=RolloutNodeStatus.RUNNING)
    for rollout_id in waiting.values_list("rollout_id", flat=True):
        send_advance(rollout_id)
