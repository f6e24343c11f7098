"""The node lifecycle: the one table of allowed transitions and the one function that moves a node.

Nothing else in Greenlight assigns `Node.state`. A transition is a conditional UPDATE (compare and
set on the current state), the Event is written in the same transaction, and it is published to
browsers once the transaction commits.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.db import transaction
from django.dispatch import Signal
from django.utils import timezone

from . import webhooks
from .choices import EventKind, NodeState
from .events import record
from .models import Node

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser

S = NodeState

# (from, to): why this move exists. Every allowed transition has its sentence; anything absent
# is forbidden. Decommissioning is allowed from every state and is added below the table.
TRANSITIONS: dict[tuple[str, str], str] = {
    (S.ENROLLED, S.PROVISIONING): "A run starts bringing a new node to its manifest.",
    (S.PROVISIONING, S.VALIDATING): "Every provisioning phase is done; the acceptance gates start.",
    (S.PROVISIONING, S.FAILED): "A provisioning phase failed beyond its retry budget.",
    (S.VALIDATING, S.AWAITING_APPROVAL): "Every gate has a verdict; a person decides.",
    (
        S.VALIDATING,
        S.QUARANTINED,
    ): "A gate found a hardware fault; the node must not enter service.",
    (S.VALIDATING, S.FAILED): "The gates could not be run (agent lost, run aborted).",
    (S.AWAITING_APPROVAL, S.IN_SERVICE): "A person approved the node into the pool.",
    (S.AWAITING_APPROVAL, S.QUARANTINED): "A person quarantined the node, with a reason.",
    (S.AWAITING_APPROVAL, S.PROVISIONING): "A new run re-checks the node before approval.",
    (
        S.IN_SERVICE,
        S.RELEASING,
    ): "A tenant released the node, or it was reported suspect; it is cordoned and drained.",
    (S.IN_SERVICE, S.QUARANTINED): "A person pulled a misbehaving node out of service.",
    (S.RELEASING, S.WIPING): "The node is drained; its drives are erased.",
    (S.RELEASING, S.FAILED): "The node could not be drained in time.",
    (
        S.RELEASING,
        S.PROVISIONING,
    ): "The suspect node is drained; it is re-checked (revalidated or reprovisioned), not erased.",
    (S.WIPING, S.PROVISIONING): "The drives are erased; the node is reimaged from its manifest.",
    (S.WIPING, S.QUARANTINED): "A drive refused the erase; the node never returns to the pool.",
    (S.WIPING, S.FAILED): "The wipe run stopped for a reason other than a drive.",
    (S.FAILED, S.PROVISIONING): "A new run tries again after a failure.",
    (S.FAILED, S.QUARANTINED): "A person quarantined a failed node for repair.",
    (S.QUARANTINED, S.BREAK_FIX): "The node went to repair.",
    (S.BREAK_FIX, S.PROVISIONING): "The repaired node is re-run; phases already done are skipped.",
}
for _state in S:
    if _state != S.DECOMMISSIONED:
        TRANSITIONS[(_state, S.DECOMMISSIONED)] = "The node leaves the fleet for good."

# Named groups of states, read by the UI, the API and the engine.
ACTIVE_STATES = frozenset({S.PROVISIONING, S.VALIDATING, S.RELEASING, S.WIPING})
NEEDS_ATTENTION_STATES = frozenset({S.FAILED, S.QUARANTINED, S.BREAK_FIX})
RUN_STARTABLE_STATES = frozenset({s for (s, t) in TRANSITIONS if t == S.PROVISIONING} - {S.WIPING})


# Sent inside a move's transaction, after its event, with node, from_state and to_state: the
# packages above fleet (provisioning ends agent sessions on it) follow a move without fleet
# importing them.
node_moved = Signal()


class TransitionError(Exception):
    """A transition that cannot happen."""


class TransitionNotAllowed(TransitionError):
    """The lifecycle table has no such move."""


class TransitionConflict(TransitionError):
    """Someone else moved the node first; the caller's view of its state is stale."""


@dataclass(frozen=True)
class TransitionResult:
    node_id: int
    from_state: str
    to_state: str
    event_id: int


def is_allowed(from_state: str, to_state: str) -> bool:
    """Say whether the lifecycle table allows this move."""
    return (from_state, to_state) in TRANSITIONS


def allowed_targets(from_state: str) -> list[str]:
    """List the states a node in `from_state` may move to."""
    return [t for (f, t) in TRANSITIONS if f == from_state]


def transition(
    node: Node,
    to_state: str,
    *,
    actor: AbstractBaseUser | None = None,
    actor_label: str = "",
    reason: str = "",
    data: dict[str, Any] | None = None,
    from_state: str | None = None,
) -> TransitionResult:
    """Move `node` to `to_state`, or raise.

    `from_state` defaults to the state the caller holds in `node.state`; the UPDATE only matches
    if the row is still there, so two concurrent moves cannot both win.
    """
    current = from_state or node.state
    if not is_allowed(current, to_state):
        raise TransitionNotAllowed(
            f"node {node.serial}: {NodeState(current).label} -> "
            f"{NodeState(to_state).label} is not an allowed transition"
        )
    now = timezone.now()
    with transaction.atomic():
        updated = Node.objects.filter(pk=node.pk, state=current).update(
            state=to_state, state_changed_at=now
        )
        if not updated:
            actual = Node.objects.filter(pk=node.pk).values_list("state", flat=True).first()
            raise TransitionConflict(
                f"node {node.serial} is {NodeState(actual).label if actual else 'gone'}, "
                f"not {NodeState(current).label}: someone else acted first"
            )
        node.state = to_state
        node.state_changed_at = now
        event = record(
            node,
            EventKind.STATE_CHANGED,
            actor=actor,
            actor_label=actor_label,
            message=reason or TRANSITIONS[(current, to_state)],
            data={"from": str(current), "to": str(to_state), **(data or {})},
        )
        # Webhook receivers hear of the move only once it commits (queued with on_commit).
        webhooks.state_changed(node, event)
        node_moved.send(Node, node=node, from_state=str(current), to_state=str(to_state))
    return TransitionResult(node.pk, str(current), str(to_state), event.pk)
