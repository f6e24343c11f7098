"""What happened to a node that needs a person, in one sentence, and the next step to take.

The node panel shows it above the buttons of provisioning.day2.moves, so a failed, quarantined, stuck
or refused node never leaves the person at a dead end.
"""

from __future__ import annotations

from dataclasses import dataclass

from fleet.choices import EventKind, NodeState
from fleet.models import Event, Node
from provisioning.choices import ACTIVE_RUN_STATUSES
from provisioning.models import Run


@dataclass(frozen=True)
class Situation:
    happened: str
    next_step: str


def _clause(text: str) -> str:
    """Text that ends a sentence of ours: its own final full stop dropped."""
    return text.strip().rstrip(".")


def _is_quarantine(event: Event) -> bool:
    return event.kind == EventKind.STATE_CHANGED and (event.data or {}).get("to") == "quarantined"


def quarantine_reason(node: Node, recent: list[Event]) -> str:
    """Why the node was last quarantined, as the move into quarantine recorded it; read from
    the recent events (newest first) the panel already holds, else looked up."""
    event = next((e for e in recent if _is_quarantine(e)), None)
    if event is None:
        event = (
            Event.objects.filter(
                node=node, kind=EventKind.STATE_CHANGED, data__to=NodeState.QUARANTINED
            )
            .order_by("-pk")
            .first()
        )
    return event.message if event else ""


def situation(
    node: Node, run: Run | None, gate_problems: list[str], recent: list[Event]
) -> Situation | None:
    """The node's situation when it needs a person; None when it does not. `recent`: the
    node's latest events, newest first."""
    state = node.state
    if state == NodeState.FAILED:
        what = (
            f"Run {run.pk} failed: {_clause(run.last_error)}."
            if run and run.last_error
            else "Failed."
        )
        return Situation(
            what,
            "Retry from the failed phase once its cause is fixed, skip that phase if it does not "
            "apply (fleet admin, with a reason), reprovision, or quarantine the node for repair.",
        )
    if state == NodeState.QUARANTINED:
        why = quarantine_reason(node, recent)
        return Situation(
            f"Quarantined: {_clause(why)}." if why else "Quarantined.",
            "Send it to break/fix when someone takes it for repair; once repaired, reprovision "
            "or revalidate it.",
        )
    if state == NodeState.BREAK_FIX:
        since = node.state_changed_at.strftime("%Y-%m-%d %H:%M %Z") if node.state_changed_at else ""
        return Situation(
            f"In break/fix{' since ' + since if since else ''}.",
            "Once repaired, reprovision it (every phase) or revalidate it (the gates only); "
            "decommission it if it cannot be repaired.",
        )
    if run is not None and run.status in ACTIVE_RUN_STATUSES and node.attention:
        return Situation(
            f"Run {run.pk} is waiting for a person: {_clause(node.attention)}.",
            "Do what it asks and the run goes on by itself, or abort the run.",
        )
    if state == NodeState.AWAITING_APPROVAL and gate_problems:
        return Situation(
            f"Not every gate passed: {'; '.join(gate_problems)}.",
            "Quarantine it for repair or revalidate it; a fleet admin may approve it anyway "
            "with a reason.",
        )
    if state == NodeState.ENROLLED:
        return Situation(
            "Enrolled; no run has started.", "Start a run to bring it to its manifest."
        )
    return None
