"""Every lifecycle move a person may make on a node, declared once.

The panel draws a button for each move the person may make now, and the API offers each as a
POST verb; both read this table. A move checks its permission, acts through the run actions
(provisioning.core.runs) or the lifecycle (fleet.lifecycle), and leaves an event with its author.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from django.core.exceptions import PermissionDenied

from fleet.choices import NodeState
from fleet.lifecycle import TransitionError, transition
from fleet.models import Node

from ..choices import ACTIVE_RUN_STATUSES, PhaseStatus, RunKind, RunStatus
from ..core.runs import RunError, abort_run, retry_run, skip_phase, start_run
from ..models import Run
from .suspect import BURN_IN_PERM, SUSPECT_PERM, SuspectRefused, report_suspect, request_burn_in

# Nodes a new run may take without a reimage being forced on a tenant: none of these is in service.
RERUNNABLE = (NodeState.AWAITING_APPROVAL, NodeState.FAILED, NodeState.BREAK_FIX)


class MoveRefused(Exception):
    """The move cannot be made now; the message says why."""


def latest_run(node: Node) -> Run | None:
    """The node's newest run (the one its panel shows)."""
    return Run.objects.filter(node=node).order_by("-created_at", "-pk").first()


def is_active(run: Run | None) -> bool:
    return run is not None and run.status in ACTIVE_RUN_STATUSES


def stuck_phase(run: Run | None) -> str:
    """The phase a skip would skip: the failed one, else the one running or waiting."""
    if run is None:
        return ""
    record = (
        run.phases.filter(status__in=(PhaseStatus.FAILED, PhaseStatus.RUNNING, PhaseStatus.WAITING))
        .order_by("order")
        .first()
    )
    return record.phase if record else ""


@dataclass(frozen=True)
class Move:
    """One move: its verb, its button, who may make it, when, and what it does."""

    name: str
    label: str
    perm: str
    needs_reason: bool
    danger: bool
    # One sentence for the confirmation: what happens when the person goes ahead.
    effect: str
    # Whether the move fits the node now, given its latest run and that run's stuck phase.
    offered: Callable[[Node, Run | None, str], bool]
    act: Callable[[Node, Run | None, object, str, str], str]


def _start(kind: str) -> Callable[[Node, Run | None, object, str, str], str]:
    def act(node, run, actor, reason, phase):
        new = start_run(node, actor=actor, kind=kind)
        return f"{RunKind(kind).label.lower()} run {new.pk} started"

    return act


def _retry(node, run, actor, reason, phase):
    retry_run(run, actor=actor, reason=reason)
    return f"run {run.pk} resumes at the phase that failed"


def _abort(node, run, actor, reason, phase):
    abort_run(run, actor=actor, reason=reason)
    return f"run {run.pk} aborted"


def _skip(node, run, actor, reason, phase):
    phase = phase or stuck_phase(run)
    if not phase:
        raise MoveRefused(f"run {run.pk} has no failed or running phase to skip")
    skip_phase(run, phase, actor=actor, reason=reason)
    return f"{phase} skipped; run {run.pk} goes on"


def _break_fix(node, run, actor, reason, phase):
    transition(node, NodeState.BREAK_FIX, actor=actor, reason=reason, from_state=node.state)
    return "sent to break/fix"


def _suspect(node, run, actor, reason, phase):
    try:
        new = report_suspect(node, reason, actor=actor, source="person")
    except SuspectRefused as exc:
        raise MoveRefused(str(exc)) from None
    return f"suspect run {new.pk} started: cordon, drain, re-check, then re-admit or break/fix"


def _burn_in(node, run, actor, reason, phase):
    try:
        new = request_burn_in(node, actor, reason)
    except SuspectRefused as exc:
        raise MoveRefused(str(exc)) from None
    return f"burn-in run {new.pk} started: cordon, drain, the gates, then re-admit or break/fix"


def _decommission(node, run, actor, reason, phase):
    if node.tenant:
        raise MoveRefused(f"node {node.serial} is allocated to a tenant: release it first")
    transition(node, NodeState.DECOMMISSIONED, actor=actor, reason=reason, from_state=node.state)
    return "decommissioned"


MOVES: tuple[Move, ...] = (
    Move(
        name="start", label="Start run", perm="fleet.start_run",
        needs_reason=False, danger=False,
        effect="Brings the node to its SKU's published manifest, then runs the acceptance gates.",
        offered=lambda node, run, stuck: node.state == NodeState.ENROLLED and not is_active(run),
        act=_start(RunKind.PROVISION),
    ),
    Move(
        name="retry", label="Retry from the failed phase", perm="fleet.start_run",
        needs_reason=False, danger=False,
        effect="Resumes the failed run at the phase that failed, with fresh retry budgets.",
        offered=lambda node, run, stuck: (
            node.state == NodeState.FAILED and run is not None and run.status == RunStatus.FAILED
        ),
        act=_retry,
    ),
    Move(
        name="abort", label="Abort run", perm="fleet.start_run",
        needs_reason=True, danger=True,
        effect="Stops the run where it is; the node is marked failed for a person to look at.",
        offered=lambda node, run, stuck: is_active(run),
        act=_abort,
    ),
    Move(
        name="skip", label="Skip phase", perm="fleet.skip_phase",
        needs_reason=True, danger=True,
        effect="Marks the phase skipped by you, with your reason, and the run goes on after it.",
        offered=lambda node, run, stuck: bool(stuck) and (
            is_active(run) or (run.status == RunStatus.FAILED and node.state == NodeState.FAILED)
        ),
        act=_skip,
    ),
    Move(
        name="break-fix", label="Send to break/fix", perm="fleet.quarantine_node",
        needs_reason=True, danger=False,
        effect="Releases the node from quarantine to repair; once repaired, reprovision or "
        "revalidate it.",
        offered=lambda node, run, stuck: node.state == NodeState.QUARANTINED,
        act=_break_fix,
    ),
    Move(
        name="reprovision", label="Reprovision", perm="fleet.start_run",
        needs_reason=False, danger=False,
        effect="Runs every phase again against the published manifest (phases already right "
        "are skipped), then the gates.",
        offered=lambda node, run, stuck: node.state in RERUNNABLE and not is_active(run),
        act=_start(RunKind.REPROVISION),
    ),
    Move(
        name="revalidate", label="Revalidate", perm="fleet.start_run",
        needs_reason=False, danger=False,
        effect="Boots the installed OS and runs the acceptance gates again, without firmware, "
        "erase or reimage.",
        offered=lambda node, run, stuck: node.state in RERUNNABLE and not is_active(run),
        act=_start(RunKind.REVALIDATE),
    ),
    Move(
        name="suspect", label="Report suspect", perm=SUSPECT_PERM,
        needs_reason=True, danger=True,
        effect="Cordons and drains the node from its scheduler, re-checks it (the gates, or a "
        "reprovision if its profile says so), then re-admits it or sends it to break/fix.",
        offered=lambda node, run, stuck: node.state == NodeState.IN_SERVICE and not is_active(run),
        act=_suspect,
    ),
    Move(
        name="burn-in", label="Pre-allocation burn-in", perm=BURN_IN_PERM,
        needs_reason=False, danger=False,
        effect="Cordons and drains the unallocated node, runs the acceptance gates (the burn-in "
        "soak among them) on its installed OS, then re-admits it or sends it to break/fix.",
        # Offered to any in-service node: one allocated to a tenant is refused saying so.
        offered=lambda node, run, stuck: node.state == NodeState.IN_SERVICE and not is_active(run),
        act=_burn_in,
    ),
    Move(
        name="decommission", label="Decommission", perm="fleet.change_node",
        needs_reason=True, danger=True,
        effect="Takes the node out of the fleet for good; its history stays.",
        offered=lambda node, run, stuck: (
            node.state != NodeState.DECOMMISSIONED and not is_active(run)
        ),
        act=_decommission,
    ),
)  # fmt: skip
MOVES_BY_NAME: dict[str, Move] = {m.name: m for m in MOVES}


def fitting(node: Node, run: Run | None, stuck: str) -> list[Move]:
    """The moves the node allows now, in the table's order (whoever may make them)."""
    return [m for m in MOVES if m.offered(node, run, stuck)]


def perform(name: str, node: Node, actor, *, reason: str = "", phase: str = "") -> str:
    """Make move `name` on the node; a sentence saying what was done. Raises MoveRefused with
    the reason when it cannot be made now, PermissionDenied when the actor may not."""
    move = MOVES_BY_NAME.get(name)
    if move is None:
        raise MoveRefused(f"no move {name!r}; expected one of {', '.join(MOVES_BY_NAME)}")
    if actor is None or not actor.is_authenticated or not actor.has_perm(move.perm):
        raise PermissionDenied(f"you may not {move.label.lower()} ({move.perm})")
    run = latest_run(node)
    if not move.offered(node, run, stuck_phase(run)):
        where = f"; run {run.pk} is {run.get_status_display().lower()}" if run else ""
        raise MoveRefused(
            f"{move.label} is not possible now: node {node.serial} is "
            f"{node.get_state_display().lower()}{where}"
        )
    reason = reason.strip()
    if move.needs_reason and not reason:
        raise MoveRefused(f"{move.label} needs a reason")
    try:
        return move.act(node, run, actor, reason, phase.strip())
    except (RunError, TransitionError) as exc:
        raise MoveRefused(str(exc)) from None
