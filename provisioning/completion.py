"""Ending a run whose every phase and gate is done: the node goes to a person for approval, or
back into service (and its scheduler) when the profile returns re-checked nodes without a click."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from fleet.choices import EventKind, NodeState
from fleet.events import record as record_event
from fleet.lifecycle import transition
from fleet.models import Node

from . import gates
from .choices import RunKind, RunStatus
from .models import Run
from .rollout_nudge import run_settled
from .scheduler_sync import admitted
from .session_ends import end_run_sessions
from .suspect import TAKE_OUT_KINDS
from .wipes import returned_to_service


def complete_run(run: Run) -> None:
    """Record the manifest the node now matches and move it to awaiting approval."""
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
            _return_without_a_click(run, node)
        record_event(
            node,
            EventKind.RUN_FINISHED,
            actor_label="engine",
            message=f"run {run.pk} succeeded",
            data={"run": run.pk, "status": RunStatus.SUCCEEDED},
        )
        end_run_sessions(run)
        # A rollout waiting on this run counts the node done and starts its next one.
        run_settled(run.pk)


def _return_without_a_click(run: Run, node: Node) -> None:
    """Tenant-release, suspect-node and burn-in runs may return passed nodes to service if the
    gates' owner allows it; the scheduler then places work on the node again."""
    if run.kind not in (RunKind.WIPE, *TAKE_OUT_KINDS):
        return
    rule = gates.planning().returns_to_service(run)
    if rule:
        transition(
            node,
            NodeState.IN_SERVICE,
            actor_label="policy",
            reason=f"{rule} returns re-validated nodes to service",
        )
        admitted(node)
        if run.kind != RunKind.WIPE:
            return
        returned_to_service(node, f"policy: {rule} auto_return_to_service")
