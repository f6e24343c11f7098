"""Decisions on a rack-scale system (GB200/GB300 NVL72): a person approves or quarantines the
rack as one decision, its members listed, or quarantines one tray and the rack is degraded.

The rules live here, so the rack page and the API refuse the same things. A rack is approved
only when it awaits approval, its NVLink fabric verdict passed (acceptance.rack_status: unknown
is no pass), every declared member is enrolled and awaits approval, and every compute tray's
gates passed (a switch tray or power shelf has no gates: its out-of-band run ending is its
word). The rack moves by fleet.rack_lifecycle.transition and each member by the node lifecycle,
all in one transaction: either the whole rack enters service or nothing moves. Each member gets
its own Decision row (nothing enters service without one), and the rack's one decision is an
event listing every member.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.db.models import OuterRef, Subquery

from fleet import rack_lifecycle
from fleet.choices import EventKind, NodeKind, NodeState, RackState
from fleet.events import record
from fleet.lifecycle import TransitionConflict, TransitionError, is_allowed, transition
from fleet.models import Node, RackSystem
from fleet.rack_scale import member_label
from provisioning.core import run_end
from provisioning.models import Run

from .choices import DecisionKind
from .decisions import (
    APPROVE_PERM,
    QUARANTINE_PERM,
    DecisionConflict,
    DecisionRefused,
    passed_node_ids,
    quarantine,
)
from .models import Decision
from .rack_status import FabricStatus, fabric_status

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser

NAMED = 5  # members named in a refusal before "and N more"


@dataclass(frozen=True)
class RackDecision:
    """A decision on a whole rack: its kind, the members it moved, one Decision row each."""

    system: RackSystem
    kind: str
    decisions: list[Decision]
    event_id: int


def _named(labels: list[str]) -> str:
    more = f" and {len(labels) - NAMED} more" if len(labels) > NAMED else ""
    return ", ".join(labels[:NAMED]) + more


def _require(actor: Any, perm: str, what: str) -> None:
    # The node decisions' permissions: who may approve a node may approve a rack of them.
    if actor is None or not actor.is_authenticated or not actor.has_perm(perm):
        raise PermissionDenied(f"you are not allowed to {what}")


def _lock(system: RackSystem) -> str:
    """Take the rack's row lock and say its state. Every rack decision takes it before any
    member's row, so a rack approval and a tray's quarantine at the same moment queue on it
    instead of deadlocking on each other's rows (PostgreSQL; SQLite serializes writers)."""
    locked = RackSystem.objects.select_for_update().filter(pk=system.pk)
    return locked.values_list("state", flat=True).get()


def _fresh(system: RackSystem) -> RackSystem:
    return RackSystem.objects.select_related("rack__site", "sku", "domain").get(pk=system.pk)


def system_of(node: Node) -> RackSystem | None:
    """The rack-scale system a member node belongs to; None for a server or an unracked node."""
    if node.kind == NodeKind.SERVER or node.rack_id is None:
        return None
    return RackSystem.objects.select_related("rack__site").filter(rack_id=node.rack_id).first()


def _latest_runs(members: list[Node]) -> dict[int, int | None]:
    latest = Run.objects.filter(node=OuterRef("pk")).order_by("-created_at", "-pk").values("pk")[:1]
    rows = Node.objects.filter(pk__in=[m.pk for m in members]).annotate(run_id=Subquery(latest))
    return dict(rows.values_list("pk", "run_id"))


def approval_problems(
    system: RackSystem, members: list[Node], fabric: FabricStatus | None = None
) -> list[str]:
    """What keeps the rack from being approved now, in words a site tech can act on; empty
    when it may be. The rack's own state is checked by the caller (a lost race is a 409)."""
    problems = []
    fabric = fabric or fabric_status(system)
    if not fabric.passed:
        problems.append(f"its NVLink fabric verdict is {fabric.label.lower()}: {fabric.summary}")
    missing = system.missing_members()
    if missing:
        problems.append("not every member is enrolled: " + "; ".join(missing))
    waiting = [m for m in members if m.state == NodeState.AWAITING_APPROVAL]
    others = [
        f"{member_label(m)} is {m.get_state_display().lower()}" for m in members if m not in waiting
    ]
    if others:
        problems.append(f"{len(others)} member(s) not awaiting approval: {_named(others)}")
    trays = [m for m in waiting if m.kind == NodeKind.COMPUTE_TRAY]
    passed = passed_node_ids(Node.objects.filter(pk__in=[t.pk for t in trays])) if trays else set()
    unpassed = [member_label(t) for t in trays if t.pk not in passed]
    if unpassed:
        problems.append(
            f"{len(unpassed)} compute tray(s) without every gate passed: {_named(unpassed)}"
        )
    return problems


def _conflict(system: RackSystem, message: str) -> DecisionConflict:
    state = RackSystem.objects.filter(pk=system.pk).values_list("state", flat=True).first()
    return DecisionConflict(message, state=state or system.state, winner=None)


def _decide_member(
    node: Node, actor, kind: str, to_state: str, reason: str, run_id: int | None, rack_event: str
) -> Decision:
    # The node's compare-and-set: a member someone else moved meanwhile (the pipeline, another
    # person's quarantine) fails the whole rack decision, which then changes nothing.
    transition(
        node,
        to_state,
        actor=actor,
        reason=reason or f"{DecisionKind(kind).label} of its rack",
        data={"decision": kind, "rack_decision": rack_event},
    )
    decision = Decision.objects.create(
        node=node, run_id=run_id, kind=kind, actor=actor, reason=reason
    )
    record(
        node,
        EventKind.DECISION,
        actor=actor,
        message=f"{DecisionKind(kind).label} (the rack as one decision)"
        + (f": {reason}" if reason else ""),
        data={"decision_id": decision.pk, "kind": kind, "override": False, "rack": node.rack_id},
    )
    return decision


def _rack_event(system: RackSystem, actor, kind: str, reason: str, moved, decisions) -> int:
    listed = [
        {"serial": n.serial, "kind": n.kind, "member_index": n.member_index, "decision_id": d.pk}
        for n, d in zip(moved, decisions, strict=True)
    ]
    words = (
        f"{DecisionKind(kind).label} rack {system.rack.name} as one decision, {len(moved)} members"
    )
    event = record(
        None,
        EventKind.DECISION,
        rack=system.rack,
        actor=actor,
        message=words + (f": {reason}" if reason else ""),
        data={"kind": kind, "rack_system": system.pk, "members": listed},
    )
    return event.pk


def approve_rack(system: RackSystem, actor: AbstractBaseUser, reason: str = "") -> RackDecision:
    """Admit the whole rack into service as one decision: the rack and every member, at once."""
    _require(actor, APPROVE_PERM, "approve racks")
    reason = reason.strip()
    system = _fresh(system)
    rack = system.rack
    if system.state != RackState.AWAITING_APPROVAL:
        raise _conflict(
            system,
            f"rack {rack.name} is {system.get_state_display().lower()}, not awaiting approval",
        )
    members = list(system.members())
    problems = approval_problems(system, members)
    if problems:
        raise DecisionRefused(f"rack {rack.name} cannot be approved: " + "; ".join(problems))
    runs = _latest_runs(members)
    try:
        with transaction.atomic():
            _lock(system)
            rack_lifecycle.transition(
                system,
                RackState.IN_SERVICE,
                actor=actor,
                reason=reason or "approved as one decision",
                from_state=RackState.AWAITING_APPROVAL,
                data={"decision": DecisionKind.APPROVE, "members": [m.serial for m in members]},
            )
            made = [
                _decide_member(
                    m,
                    actor,
                    DecisionKind.APPROVE,
                    NodeState.IN_SERVICE,
                    reason,
                    runs.get(m.pk),
                    "approve",
                )
                for m in members
            ]
            event_id = _rack_event(system, actor, DecisionKind.APPROVE, reason, members, made)
    except TransitionConflict as exc:
        raise _conflict(system, f"rack {rack.name} not approved: {exc}") from None
    # After the commit, as for a node's approval: a wiped tray's certificate names who let it
    # in, and the scheduler places work on it again.
    for member in members:
        run_end.entered_service(member, actor=actor.get_username(), reason=reason)
    return RackDecision(system, DecisionKind.APPROVE, made, event_id)


def quarantine_rack(system: RackSystem, actor: AbstractBaseUser, reason: str) -> RackDecision:
    """Pull the whole rack out (of approval or service) for repair, saying why: every member
    not already quarantined is, and the rack is degraded."""
    _require(actor, QUARANTINE_PERM, "quarantine racks")
    reason = (reason or "").strip()
    if not reason:
        raise DecisionRefused("a quarantine needs a reason")
    system = _fresh(system)
    rack = system.rack
    members = [m for m in system.members() if m.state != NodeState.QUARANTINED]
    stuck = [
        f"{member_label(m)} is {m.get_state_display().lower()}"
        for m in members
        if not is_allowed(m.state, NodeState.QUARANTINED)
    ]
    if stuck:
        raise DecisionRefused(
            f"rack {rack.name} cannot be quarantined now: {_named(stuck)} (cancel its rack run or "
            "wait for the members to settle)"
        )
    degrade = system.state != RackState.DEGRADED
    if degrade and not rack_lifecycle.is_allowed(system.state, RackState.DEGRADED):
        raise DecisionRefused(
            f"rack {rack.name} is {system.get_state_display().lower()}: it cannot be degraded"
        )
    in_service = [m for m in members if m.state == NodeState.IN_SERVICE]
    runs = _latest_runs(members)
    try:
        with transaction.atomic():
            if _lock(system) != system.state:
                raise TransitionConflict(f"rack {rack.name} changed meanwhile; reload it")
            if degrade:
                rack_lifecycle.transition(
                    system,
                    RackState.DEGRADED,
                    actor=actor,
                    reason=f"quarantined as one decision: {reason}",
                    data={
                        "decision": DecisionKind.QUARANTINE,
                        "members": [m.serial for m in members],
                    },
                )
            made = [
                _decide_member(
                    m,
                    actor,
                    DecisionKind.QUARANTINE,
                    NodeState.QUARANTINED,
                    reason,
                    runs.get(m.pk),
                    "quarantine",
                )
                for m in members
            ]
            event_id = _rack_event(system, actor, DecisionKind.QUARANTINE, reason, members, made)
    except TransitionConflict as exc:
        raise _conflict(system, f"rack {rack.name} not quarantined: {exc}") from None
    for member in in_service:
        # No new work may land on a tray a person pulled out of service.
        run_end.left_service(member, actor=actor.get_username(), reason=reason)
    return RackDecision(system, DecisionKind.QUARANTINE, made, event_id)


def quarantine_member(node: Node, actor: AbstractBaseUser, reason: str) -> Decision:
    """Quarantine one member (a tray, a shelf) with the node's own decision; its rack, no longer
    whole, is degraded in the same transaction, the event naming the member."""
    system = system_of(node)
    if system is None:
        return quarantine(node, actor, reason)
    with transaction.atomic():
        system.state = _lock(system)
        decision = quarantine(node, actor, reason)
        if system.state != RackState.DEGRADED and rack_lifecycle.is_allowed(
            system.state, RackState.DEGRADED
        ):
            try:
                with transaction.atomic():
                    rack_lifecycle.transition(
                        system,
                        RackState.DEGRADED,
                        actor=actor,
                        reason=f"{member_label(node)} quarantined: {decision.reason}",
                        data={
                            "decision": DecisionKind.QUARANTINE,
                            "decision_id": decision.pk,
                            "member": node.serial,
                            "kind": node.kind,
                            "member_index": node.member_index,
                        },
                    )
            except TransitionError:
                # Someone moved the rack first (a rack run, another person): the tray's
                # quarantine stands, and the rack is where they put it.
                pass
    return decision
