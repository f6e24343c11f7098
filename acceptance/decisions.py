"""Decisions: a person approves a node into service or quarantines it, with who, when and why.

The one place the rules live, so the pages and the API refuse the same things: permissions are
checked here, the gates are read here, and the move itself is `fleet.lifecycle.transition`, whose
compare-and-set makes two people clicking at the same moment settle on exactly one outcome.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.db.models import Count, OuterRef, Q, Subquery

from fleet.choices import EventKind, NodeKind, NodeState
from fleet.events import record
from fleet.lifecycle import TransitionConflict, TransitionNotAllowed, transition
from fleet.models import Node, Rack
from fleet.rack_scale import kind_word
from provisioning.core import run_end
from provisioning.models import Run

from .choices import DecisionKind, Verdict
from .models import Decision, GateResult

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser

APPROVE_PERM = "fleet.approve_node"
QUARANTINE_PERM = "fleet.quarantine_node"
OVERRIDE_PERM = "fleet.override_approval"


class DecisionRefused(Exception):
    """The decision cannot be made; the message says why, in words a site tech can act on."""


class DecisionConflict(DecisionRefused):
    """Someone else moved the node first (another decision, or the pipeline).

    `state` is where the node is now; `winner` the person's decision that put it there, if one did.
    """

    def __init__(self, message: str, *, state: str, winner: Decision | None) -> None:
        super().__init__(message)
        self.state = state
        self.winner = winner


# The state each decision leaves the node in: a decision is the winner only if the node is there.
DECIDED_STATE = {
    DecisionKind.APPROVE: NodeState.IN_SERVICE,
    DecisionKind.QUARANTINE: NodeState.QUARANTINED,
}
DECIDED_VERB = {DecisionKind.APPROVE: "approved", DecisionKind.QUARANTINE: "quarantined"}


def lost_race(node: Node, message: str) -> DecisionConflict:
    """The refusal for a decision that came second: where the node is, and who moved it there."""
    state = Node.objects.filter(pk=node.pk).values_list("state", flat=True).first() or node.state
    winner = (
        Decision.objects.filter(node=node).select_related("actor").order_by("-created_at", "-pk")
    ).first()
    if winner is not None and DECIDED_STATE[DecisionKind(winner.kind)] != state:
        winner = None  # the node moved on since (the pipeline, or a later decision of another kind)
    if winner is not None:
        message += (
            f"; {winner.actor.get_username()} {DECIDED_VERB[DecisionKind(winner.kind)]} it first"
        )
    return DecisionConflict(message, state=state, winner=winner)


def latest_run(node: Node) -> Run | None:
    """The node's most recent run: the one whose gates a decision is about."""
    return Run.objects.filter(node=node).order_by("-created_at", "-pk").first()


def gate_problems(run: Run | None) -> list[str]:
    """Say what keeps the run's gates from being all passed; empty when every gate passed."""
    if run is None:
        return ["the node has no run, so no gate has passed"]
    results = list(GateResult.objects.filter(run=run).order_by("started_at", "pk"))
    if not results:
        return [f"run {run.pk} has no gate results"]
    return [
        f"{r.get_gate_display()}: {r.get_verdict_display().lower()}"
        for r in results
        if r.verdict != Verdict.PASS
    ]


def passed_node_ids(nodes) -> set[int]:
    """Ids of the given nodes whose latest run has gate results, all of them passed (2 queries)."""
    latest = Run.objects.filter(node=OuterRef("pk")).order_by("-created_at", "-pk").values("pk")[:1]
    run_of = dict(nodes.annotate(latest_run_id=Subquery(latest)).values_list("pk", "latest_run_id"))
    verdicts = (
        GateResult.objects.filter(run_id__in=[r for r in run_of.values() if r])
        .values("run_id")
        .annotate(total=Count("pk"), bad=Count("pk", filter=~Q(verdict=Verdict.PASS)))
    )
    passed_runs = {v["run_id"] for v in verdicts if v["total"] and not v["bad"]}
    return {node_id for node_id, run_id in run_of.items() if run_id in passed_runs}


def _require(actor: AbstractBaseUser, perm: str, what: str) -> None:
    if actor is None or not actor.is_authenticated or not actor.has_perm(perm):
        raise PermissionDenied(f"you are not allowed to {what}")


def _decide(
    node: Node,
    actor: AbstractBaseUser,
    kind: str,
    to_state: str,
    from_state: str,
    reason: str,
    run: Run | None,
    override: bool = False,
) -> Decision:
    try:
        with transaction.atomic():
            # The conditional UPDATE inside transition() is the lock: whoever commits second finds
            # the row no longer in `from_state` and gets TransitionConflict, never a second move.
            transition(
                node,
                to_state,
                actor=actor,
                reason=reason,
                from_state=from_state,
                data={"decision": kind, "override": override},
            )
            decision = Decision.objects.create(
                node=node, run=run, kind=kind, actor=actor, reason=reason, override=override
            )
            record(
                node,
                EventKind.DECISION,
                actor=actor,
                message=f"{DecisionKind(kind).label}: {reason}"
                if reason
                else DecisionKind(kind).label,
                data={"decision_id": decision.pk, "kind": kind, "override": override},
            )
    except TransitionConflict as exc:
        raise lost_race(node, str(exc)) from None
    except TransitionNotAllowed as exc:
        raise DecisionRefused(str(exc)) from None
    return decision


def approve(
    node: Node, actor: AbstractBaseUser, reason: str = "", override: bool = False
) -> Decision:
    """Admit an awaiting node into service; refused unless every gate of its latest run passed.

    A user with fleet.override_approval may approve anyway with `override=True` and a written
    reason; the decision records that it was an override.
    """
    _require(actor, APPROVE_PERM, "approve nodes")
    reason = reason.strip()
    if node.kind != NodeKind.SERVER:
        # A tray passes its own gates while its NVLink domain may be broken: the rack-wide
        # verdict decides, and the rack is approved as one (acceptance.rack_decisions).
        raise DecisionRefused(
            f"{node.serial} is a {kind_word(node.kind)}: approve its rack as one decision"
        )
    if node.state != NodeState.AWAITING_APPROVAL:
        raise lost_race(
            node, f"node {node.serial} is {NodeState(node.state).label}, not awaiting approval"
        )
    run = latest_run(node)
    problems = gate_problems(run)
    if problems:
        if not override:
            raise DecisionRefused(
                f"node {node.serial} cannot be approved: not every gate passed ("
                + "; ".join(problems)
                + ")"
            )
        _require(actor, OVERRIDE_PERM, "approve a node whose gates did not all pass")
        if not reason:
            raise DecisionRefused("an override needs a written reason")
    decision = _decide(
        node,
        actor,
        DecisionKind.APPROVE,
        NodeState.IN_SERVICE,
        NodeState.AWAITING_APPROVAL,
        reason,
        run,
        override=bool(problems),
    )
    # Its followers: a wiped node's certificate names who let it into the pool; the scheduler
    # places work on it again.
    run_end.entered_service(node, actor=actor.get_username(), reason=reason)
    return decision


def quarantine(node: Node, actor: AbstractBaseUser, reason: str) -> Decision:
    """Pull a node out (of approval, of service, of a failed run) for repair, saying why."""
    _require(actor, QUARANTINE_PERM, "quarantine nodes")
    reason = (reason or "").strip()
    if not reason:
        raise DecisionRefused("a quarantine needs a reason")
    if node.state == NodeState.QUARANTINED:
        # Two people quarantining at once: the second is a lost race, like any other (409).
        raise lost_race(node, f"node {node.serial} is already quarantined")
    # The caller's view of the state is the compare-and-set's expected value: a quarantine clicked
    # on an awaiting node that was approved a moment ago loses, instead of pulling it from service.
    was_in_service = node.state == NodeState.IN_SERVICE
    decision = _decide(
        node,
        actor,
        DecisionKind.QUARANTINE,
        NodeState.QUARANTINED,
        node.state,
        reason,
        latest_run(node),
    )
    if was_in_service:
        # No new work may land on a node a person pulled out of service (the scheduler follows).
        run_end.left_service(node, actor=actor.get_username(), reason=reason)
    return decision


def approvable_nodes(rack: Rack):
    """Nodes of the rack awaiting approval whose latest run passed every gate."""
    waiting = Node.objects.filter(rack=rack, state=NodeState.AWAITING_APPROVAL)
    return waiting.filter(pk__in=passed_node_ids(waiting)).order_by("position", "serial")


def approve_all_passed(rack: Rack, actor: AbstractBaseUser) -> list[Decision]:
    """Approve every passed node of the rack: one click, one decision per node.

    A node someone else moved in the meantime is left alone; the others still go through.
    """
    _require(actor, APPROVE_PERM, "approve nodes")
    decisions = []
    for node in approvable_nodes(rack):
        try:
            decisions.append(approve(node, actor, reason=f"bulk approval of rack {rack.name}"))
        except DecisionRefused:
            continue
    return decisions
