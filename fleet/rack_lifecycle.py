"""The rack lifecycle of a rack-scale system: the one table of allowed transitions and the one
function that moves a rack, in the style of the node lifecycle (fleet.lifecycle).

Nothing else assigns `RackSystem.state`. A move is a conditional UPDATE on the current state,
its Event (naming the rack) is written in the same transaction and published once it commits.
Each member keeps its own node lifecycle; this one says where the rack as a whole stands.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.db import transaction
from django.utils import timezone

from .choices import EventKind, NodeState, RackState
from .events import record
from .lifecycle import TransitionConflict, TransitionError, TransitionNotAllowed
from .lifecycle import transition as move_node
from .models import Node
from .rack_scale import RackSystem, kind_word

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser

R = RackState

# (from, to): why this move exists. Anything absent is forbidden. Going back to discovering on
# a member's replacement is allowed from every other state and is added below the table.
TRANSITIONS: dict[tuple[str, str], str] = {
    (R.DISCOVERING, R.BRINGING_UP): "Every declared member is enrolled; a rack run starts.",
    (R.BRINGING_UP, R.VALIDATING): "Every stage of the rack run is done; rack-wide gates start.",
    (R.BRINGING_UP, R.DEGRADED): "A stage failed past its retries or time limit.",
    (R.VALIDATING, R.AWAITING_APPROVAL): "The rack-wide verdict is in; a person decides.",
    (R.VALIDATING, R.DEGRADED): "The rack-wide gate named a tray, GPU or link at fault.",
    (R.AWAITING_APPROVAL, R.IN_SERVICE): "A person approved the rack, members listed, at once.",
    (R.AWAITING_APPROVAL, R.DEGRADED): "A person quarantined a tray; the rack is not whole.",
    (R.AWAITING_APPROVAL, R.BRINGING_UP): "A new rack run re-checks the rack before approval.",
    (R.IN_SERVICE, R.DEGRADED): "A member left service (a tray quarantined, a link down).",
    (R.DEGRADED, R.BRINGING_UP): "A new rack run brings the rack's members up again.",
    (R.DEGRADED, R.VALIDATING): "The repaired members are re-checked rack-wide.",
}
for _state in R:
    if _state != R.DISCOVERING:
        TRANSITIONS[(_state, R.DISCOVERING)] = (
            "A member was replaced: the rack is discovered again before it runs."
        )

# Racks a rack run may start from (discovering only once every member is enrolled).
RACK_RUN_STARTABLE_STATES = frozenset({s for (s, t) in TRANSITIONS if t == R.BRINGING_UP})


class RackTransitionNotAllowed(TransitionNotAllowed):
    """The rack lifecycle table has no such move."""


@dataclass(frozen=True)
class RackTransitionResult:
    system_id: int
    from_state: str
    to_state: str
    event_id: int


def is_allowed(from_state: str, to_state: str) -> bool:
    """Say whether the rack lifecycle table allows this move."""
    return (from_state, to_state) in TRANSITIONS


def transition(
    system: RackSystem,
    to_state: str,
    *,
    actor: AbstractBaseUser | None = None,
    actor_label: str = "",
    reason: str = "",
    data: dict[str, Any] | None = None,
    from_state: str | None = None,
) -> RackTransitionResult:
    """Move the rack-scale system to `to_state`, or raise (not allowed, or someone moved first)."""
    current = from_state or system.state
    rack = system.rack
    if not is_allowed(current, to_state):
        raise RackTransitionNotAllowed(
            f"rack {rack}: {RackState(current).label} -> {RackState(to_state).label} "
            "is not an allowed transition"
        )
    now = timezone.now()
    with transaction.atomic():
        updated = RackSystem.objects.filter(pk=system.pk, state=current).update(
            state=to_state, state_changed_at=now
        )
        if not updated:
            actual = RackSystem.objects.filter(pk=system.pk).values_list("state", flat=True)
            label = RackState(actual[0]).label if actual else "gone"
            raise TransitionConflict(
                f"rack {rack} is {label}, not {RackState(current).label}: someone else acted first"
            )
        system.state, system.state_changed_at = to_state, now
        event = record(
            None,
            EventKind.RACK_STATE_CHANGED,
            rack=rack,
            actor=actor,
            actor_label=actor_label,
            message=reason or TRANSITIONS[(current, to_state)],
            data={"from": str(current), "to": str(to_state), **(data or {})},
        )
    return RackTransitionResult(system.pk, str(current), str(to_state), event.pk)


class MemberReplaceRefused(TransitionError):
    """The replacement cannot be made; the message says why."""


def replace_member(
    old: Node, new: Node, *, actor: AbstractBaseUser | None = None, reason: str = ""
) -> RackSystem:
    """Put `new` (enrolled from its own BMC, no slot yet) in `old`'s slot of its rack: the old
    member is decommissioned and the rack goes back to discovering, naming both."""
    if old.rack_id is None:
        raise MemberReplaceRefused(f"{old.serial} sits in no rack: there is no slot to fill")
    system = RackSystem.objects.select_related("rack__site").get(rack_id=old.rack_id)
    if old.kind != new.kind:
        raise MemberReplaceRefused(
            f"{new.serial} is a {kind_word(new.kind)}, not a {kind_word(old.kind)} like {old.serial}"
        )
    why = (
        reason
        or f"{old.get_kind_display()} {old.member_index} replaced: {old.serial} -> {new.serial}"
    )
    slot = {"rack_id": old.rack_id, "position": old.position, "member_index": old.member_index}
    with transaction.atomic():
        # The slot is unique per rack: the old member leaves it before the new one takes it.
        Node.objects.filter(pk=old.pk).update(position=None, member_index=None)
        move_node(old, NodeState.DECOMMISSIONED, actor=actor, reason=why)
        Node.objects.filter(pk=new.pk).update(**slot)
        new.refresh_from_db()
        if system.state != R.DISCOVERING:
            transition(
                system,
                R.DISCOVERING,
                actor=actor,
                reason=why,
                data={"replaced": old.serial, "by": new.serial, "kind": old.kind},
            )
    return system
