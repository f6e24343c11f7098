"""Starting runs and the operator's actions on them: retry, skip a phase, abort.

Each action checks the actor's permission, changes rows with conditional updates and records an
event with its author. Ending a run (abort) and reopening one (retry, skip) are run_end's moves,
which tell the day-2 modules that follow them.
"""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.db import IntegrityError, transaction
from django.utils import timezone

from fleet.choices import EventKind, NodeState
from fleet.events import record as record_event
from fleet.lifecycle import RUN_STARTABLE_STATES, TransitionError, transition
from fleet.models import Manifest, Node

from ..admission import start_or_hold
from ..choices import ACTIVE_RUN_STATUSES, PhaseStatus, RunKind, RunStatus, Stage
from ..models import PhaseRecord, Run
from ..scheduling import kick_off
from .plans import plan
from .run_end import RunError, abort, reopen

__all__ = ["RunError", "abort_run", "retry_run", "skip_phase", "start_run", "start_runs"]


def _require(actor, perm: str) -> None:
    if actor is not None and not actor.has_perm(perm):
        raise PermissionDenied(f"{actor.get_username()} may not do this ({perm})")


def start_run(
    node: Node,
    *,
    actor=None,
    kind: str = RunKind.PROVISION,
    manifest: Manifest | None = None,
    move_node: bool = True,
    when_the_workers_keep_up: bool = False,
) -> Run:
    """Start a run bringing `node` to its SKU's published manifest. With
    `when_the_workers_keep_up` (a deployment's many runs) it may wait queued until the workers
    have room (admission.py)."""
    _require(actor, "fleet.start_run")
    manifest = manifest or Manifest.current_for(node.sku)
    if manifest is None:
        raise RunError(f"SKU {node.sku.name} has no published manifest")
    if move_node and node.state not in RUN_STARTABLE_STATES:
        raise RunError(f"node {node.serial} is {node.get_state_display()}; a run cannot start")
    try:
        with transaction.atomic():
            if move_node:
                transition(node, NodeState.PROVISIONING, actor=actor, reason=f"{kind} run started")
            run = Run.objects.create(
                node=node,
                kind=kind,
                manifest=manifest,
                started_by=actor if actor is not None and actor.is_authenticated else None,
                transient_budget=settings.GREENLIGHT_TRANSIENT_BUDGET,
                failure_budget=settings.GREENLIGHT_FAILURE_BUDGET,
            )
            PhaseRecord.objects.bulk_create(
                PhaseRecord(run=run, phase=name, order=index)
                for index, name in enumerate(plan(manifest, kind, node.kind))
            )
            record_event(
                node,
                EventKind.RUN_STARTED,
                actor=actor,
                actor_label="" if actor else "system",
                message=f"{kind} run to {manifest.sku.name} {manifest.version}",
                data={"run": run.pk, "manifest": manifest.version},
            )
            if when_the_workers_keep_up:
                start_or_hold(run)
            else:
                kick_off(run)
    except IntegrityError:
        raise RunError(f"node {node.serial} already has an active run") from None
    except TransitionError as exc:
        raise RunError(str(exc)) from None
    return run


def start_runs(nodes, *, actor=None) -> tuple[dict[int, Run], dict[int, str]]:
    """Start provisioning runs on many nodes at once (a rack, a deployment).

    Each node commits on its own, so its first step and its events go out as it starts: in one
    transaction for 741 nodes, the first node's events waited for the last node's commit. One
    that cannot start (no manifest, already running) is reported by id with the reason and the
    others start. Runs past what the workers keep up with wait queued, and the sweep starts them
    as the queue shortens (admission.py).
    """
    _require(actor, "fleet.start_run")
    runs: dict[int, Run] = {}
    refused: dict[int, str] = {}
    manifests: dict[int, Manifest | None] = {}
    for node in nodes:
        if node.sku_id not in manifests:
            manifests[node.sku_id] = Manifest.current_for(node.sku)
        try:
            runs[node.pk] = start_run(
                node, actor=actor, manifest=manifests[node.sku_id], when_the_workers_keep_up=True
            )
        except RunError as exc:
            refused[node.pk] = str(exc)
    return runs, refused


def retry_run(run: Run, *, actor, reason: str = "") -> Run:
    """Resume a failed run at the phase that failed, with fresh retry budgets."""
    _require(actor, "fleet.start_run")
    if run.status != RunStatus.FAILED:
        raise RunError(f"run {run.pk} is {run.get_status_display()}; only a failed run is retried")
    reopen(run, actor=actor, why=f"retry: {reason}".strip(": "))
    return run


def skip_phase(run: Run, phase: str, *, actor, reason: str) -> Run:
    """Mark a phase skipped by a person (a fleet admin, with a reason); the run goes on."""
    _require(actor, "fleet.skip_phase")
    if not reason.strip():
        raise RunError("skipping a phase needs a reason")
    record = run.phases.filter(phase=phase).first()
    if record is None:
        raise RunError(f"run {run.pk} has no phase {phase}")
    if record.status in (PhaseStatus.DONE, PhaseStatus.SKIPPED):
        raise RunError(f"{phase} is already {record.get_status_display()}")
    if run.status not in (*ACTIVE_RUN_STATUSES, RunStatus.FAILED):
        raise RunError(f"run {run.pk} is {run.get_status_display()}")
    with transaction.atomic():
        PhaseRecord.objects.filter(pk=record.pk).update(
            status=PhaseStatus.SKIPPED,
            finished_at=timezone.now(),
            log=f"skipped by {actor.get_username()}: {reason}",
            stage=Stage.NONE,
        )
        record_event(
            run.node,
            EventKind.RUN_ACTION,
            actor=actor,
            message=f"skipped {phase}: {reason}",
            data={"run": run.pk, "action": "skip", "phase": phase},
        )
        if run.status == RunStatus.FAILED:
            reopen(run, actor=actor, why=f"continue after skipping {phase}")
    return run


def abort_run(run: Run, *, actor, reason: str) -> Run:
    """Stop an active run; the node is marked failed so a person looks at it.

    `actor` may be None for an abort the system makes (run_end.abort).
    """
    _require(actor, "fleet.start_run")
    return abort(run, actor=actor, reason=reason)
