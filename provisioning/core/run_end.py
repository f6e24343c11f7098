"""The run core's one exit: the only place a run ends (succeeded, failed, aborted) or reopens, and
where a node enters or leaves service.

Each move writes its rows and events in one transaction, then tells the followers, in the order
they were registered. The day-2 modules (wipe requests, suspect runs, agent sessions, the
scheduler, rollouts) register theirs in ProvisioningConfig.ready(), so the run core never imports
them: a new day-2 workflow is one more follower, not an edit to the engine, the run actions or
completion. A follower is a plain function of a RunEnding; it decides from the ending whether it
cares.

Followers run inside the move's transaction: what they write commits or rolls back with the
move, and what must wait for the commit (a task, a scheduler call) they defer with
transaction.on_commit. Two moves tell them before the move's last event, keeping the order the
node's timeline has always shown: a reopened run before its "retry" event, a node the profile
returns to service before its run's "succeeded". A person's decision (acceptance.decisions) writes its own
rows in its own transaction; `entered_service` and `left_service` tell the followers once it
committed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

from django.db import IntegrityError, transaction
from django.utils import timezone

from fleet.choices import EventKind, NodeState
from fleet.events import record as record_event
from fleet.lifecycle import TransitionError, transition
from fleet.models import Node

from ..choices import ACTIVE_RUN_STATUSES, PhaseStatus, RunStatus, Stage
from ..models import PhaseRecord, Run
from ..scheduling import kick_off

logger = logging.getLogger(__name__)


class RunError(Exception):
    """A run action that cannot be done; the message says why."""


class How(StrEnum):
    """How a run ended, or how its node moved in or out of service."""

    SUCCEEDED = "succeeded"
    FAILED = "failed"
    ABORTED = "aborted"
    REOPENED = "reopened"
    ENTERED_SERVICE = "entered_service"
    LEFT_SERVICE = "left_service"


@dataclass(frozen=True)
class RunEnding:
    """What a follower is told: which node, how, through which run, why and by whom."""

    how: How
    node: Node
    # The run that ended or reopened, or whose end returned the node to service by the profile's
    # rule; None when a person's decision moved the node.
    run: Run | None = None
    # Why, in the run's or the node's own words (a failed run's last_error, a quarantine's reason).
    reason: str = ""
    # Who made the move, as records name them: a username, "engine", "system", or the policy that
    # returned the node ("policy: profile 1.2.0 auto_return_to_service").
    actor: str = ""


Follower = Callable[[RunEnding], None]
_followers: list[Follower] = []


def register(*followers: Follower) -> None:
    """Add followers, told of every move in the order registered (the day-2 apps, when ready)."""
    for follower in followers:
        if follower not in _followers:
            _followers.append(follower)


def unregister(follower: Follower) -> None:
    """Stop telling `follower` (a test's own, once it is done)."""
    if follower in _followers:
        _followers.remove(follower)


def followers() -> tuple[Follower, ...]:
    """The registered followers, in the order they are told."""
    return tuple(_followers)


def _tell(ending: RunEnding) -> None:
    for follower in followers():
        follower(ending)


def _username(actor) -> str:
    return actor.get_username() if actor is not None else "system"


# -- a run ends ----------------------------------------------------------------------------------


def fail(
    run: Run, record: PhaseRecord, reason: str, *, component: str = "", quarantine: bool = False
) -> None:
    """End the run as failed in `record`'s phase and move the node where a person will see it:
    quarantined when the phase blames the hardware, failed otherwise."""
    now = timezone.now()
    last_error = f"{record.phase}: {reason}"
    with transaction.atomic():
        record.status = PhaseStatus.FAILED
        record.error = reason
        record.finished_at = now
        record.save(update_fields=["status", "error", "finished_at"])
        Run.objects.filter(pk=run.pk).update(
            status=RunStatus.FAILED,
            finished_at=now,
            last_error=last_error,
            wait_reason="",
            next_look_at=None,
        )
        record_event(
            run.node,
            EventKind.PHASE_FAILED,
            actor_label="engine",
            message=f"{record.phase} failed: {reason}",
            data={"run": run.pk, "phase": record.phase, "component": component},
        )
        target = NodeState.QUARANTINED if quarantine else NodeState.FAILED
        move_node(
            run,
            target,
            f"{record.phase} failed: {reason}",
            data={"phase": record.phase, "component": component, "run": run.pk},
        )
        record_event(
            run.node,
            EventKind.RUN_FINISHED,
            actor_label="engine",
            message=f"run failed in {record.phase}: {reason}",
            data={"run": run.pk, "status": RunStatus.FAILED, "component": component},
        )
        _tell(RunEnding(How.FAILED, run.node, run, last_error, "engine"))


def abort(run: Run, *, actor, reason: str) -> Run:
    """Stop an active run; the node is marked failed so a person looks at it.

    `actor` is the person, or None for an abort the system made. Raises RunError when the run
    is no longer active.
    """
    last_error = f"aborted: {reason}"
    with transaction.atomic():
        stopped = Run.objects.filter(pk=run.pk, status__in=ACTIVE_RUN_STATUSES).update(
            status=RunStatus.ABORTED, finished_at=timezone.now(), last_error=last_error
        )
        if not stopped:
            raise RunError(f"run {run.pk} is not active")
        node = Node.objects.get(pk=run.node_id)
        # Releasing too: a run aborted while it drains would leave the node there for good.
        active = (NodeState.RELEASING, NodeState.PROVISIONING, NodeState.VALIDATING)
        if node.state in (*active, NodeState.WIPING):
            transition(node, NodeState.FAILED, actor=actor, reason=f"run aborted: {reason}")
        record_event(
            node,
            EventKind.RUN_ACTION,
            actor=actor,
            message=f"aborted run {run.pk}: {reason}",
            data={"run": run.pk, "action": "abort"},
        )
        _tell(RunEnding(How.ABORTED, node, run, last_error, _username(actor)))
    return run


def succeed(run: Run, return_rule: Callable[[Run], str]) -> None:
    """End a run whose every phase and gate is done: the node records the manifest it now
    matches and awaits a person's approval, or goes back into service when `return_rule(run)`
    names the rule that returns it without a click. A run no longer running is left alone."""
    with transaction.atomic():
        finished = Run.objects.filter(pk=run.pk, status=RunStatus.RUNNING).update(
            status=RunStatus.SUCCEEDED,
            finished_at=timezone.now(),
            next_look_at=None,
            current_phase="",
            wait_reason="",
        )
        if not finished:
            return
        Node.objects.filter(pk=run.node_id).update(manifest=run.manifest, attention="")
        node = Node.objects.get(pk=run.node_id)
        if node.state == NodeState.PROVISIONING:
            transition(node, NodeState.VALIDATING, actor_label="engine", reason="no gates to run")
        if node.state == NodeState.VALIDATING:
            transition(
                node,
                NodeState.AWAITING_APPROVAL,
                actor_label="engine",
                reason="every phase and gate passed",
            )
            rule = return_rule(run)
            if rule:
                _return_to_service(run, node, rule)
        record_event(
            node,
            EventKind.RUN_FINISHED,
            actor_label="engine",
            message=f"run {run.pk} succeeded",
            data={"run": run.pk, "status": RunStatus.SUCCEEDED},
        )
        _tell(RunEnding(How.SUCCEEDED, node, run, actor="engine"))


def _return_to_service(run: Run, node: Node, rule: str) -> None:
    """The profile's rule returns the node of a finished run to service, no click needed."""
    reason = f"{rule} returns re-validated nodes to service"
    transition(node, NodeState.IN_SERVICE, actor_label="policy", reason=reason)
    policy = f"policy: {rule} auto_return_to_service"
    _tell(RunEnding(How.ENTERED_SERVICE, node, run, reason, policy))


# -- a run reopens -------------------------------------------------------------------------------


def reopen(run: Run, *, actor, why: str) -> None:
    """Queue a failed run again from its failed phase, with fresh budgets; RunError if it cannot.

    Skip calls it inside its own transaction, after writing its row: the reopen joins that
    transaction without a savepoint, so a refusal rolls back the caller's rows too.
    """
    with transaction.atomic(savepoint=False):
        node = Node.objects.get(pk=run.node_id)
        target = NodeState.PROVISIONING
        if node.state != target:
            try:
                transition(node, target, actor=actor, reason=why)
            except TransitionError as exc:
                raise RunError(str(exc)) from None
        PhaseRecord.objects.filter(run=run, status=PhaseStatus.FAILED).update(
            status=PhaseStatus.PENDING, stage=Stage.NONE, error=""
        )
        try:
            reopened = Run.objects.filter(pk=run.pk, status=RunStatus.FAILED).update(
                status=RunStatus.QUEUED,
                finished_at=None,
                transient_used=0,
                failure_used=0,
                last_error="",
            )
        except IntegrityError:
            raise RunError(f"node {node.serial} already has another active run") from None
        if not reopened:
            raise RunError(f"run {run.pk} changed meanwhile; reload it")
        run.refresh_from_db()
        _tell(RunEnding(How.REOPENED, node, run, why, _username(actor)))
        record_event(
            node,
            EventKind.RUN_ACTION,
            actor=actor,
            message=why,
            data={"run": run.pk, "action": "retry"},
        )
        kick_off(run)


# -- a node enters or leaves service by a person's decision --------------------------------------


def entered_service(node: Node, *, actor: str, reason: str = "") -> None:
    """A person's approval moved the node into service (committed with the decision)."""
    _tell(RunEnding(How.ENTERED_SERVICE, node, reason=reason, actor=actor))


def left_service(node: Node, *, actor: str, reason: str) -> None:
    """A person's quarantine took an in-service node out (committed with the decision)."""
    _tell(RunEnding(How.LEFT_SERVICE, node, reason=reason, actor=actor))


# -- the engine's moves of a run's node ----------------------------------------------------------


def move_node(run: Run, to_state: str, reason: str, data: dict | None = None) -> None:
    """Move the run's node as the engine; a move the lifecycle refuses is logged, not raised."""
    node = Node.objects.get(pk=run.node_id)
    try:
        transition(node, to_state, actor_label="engine", reason=reason, data=data)
    except TransitionError:
        logger.warning("run %s: node %s not moved to %s", run.pk, node.serial, to_state)
    run.node.state = node.state
