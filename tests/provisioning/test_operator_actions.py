"""Operator actions on runs: each permission-checked, each an event with its author."""

from __future__ import annotations

import pytest
from django.core.exceptions import PermissionDenied

from fleet.choices import EventKind, NodeState
from fleet.models import Event, Node
from provisioning.choices import PhaseStatus, RunStatus
from provisioning.core.runs import RunError, abort_run, retry_run, skip_phase, start_run
from provisioning.models import PhaseRecord, Run


@pytest.fixture
def run(node, bob, django_capture_on_commit_callbacks):
    # The first step's task is sent on commit; the tests look at rows, not at a worker.
    with django_capture_on_commit_callbacks(execute=False):
        return start_run(node, actor=bob)


def _fail(run: Run, phase: str = "bios_firmware") -> None:
    PhaseRecord.objects.filter(run=run, phase=phase).update(status=PhaseStatus.FAILED, error="x")
    Run.objects.filter(pk=run.pk).update(status=RunStatus.FAILED, last_error=f"{phase}: x")
    Node.objects.filter(pk=run.node_id).update(state=NodeState.FAILED)
    run.refresh_from_db()


def test_starting_a_run_moves_the_node_and_plans_every_phase(run, node, bob):
    node.refresh_from_db()
    assert node.state == NodeState.PROVISIONING
    assert run.phases.count() >= 15 and run.started_by == bob
    assert Event.objects.filter(node=node, kind=EventKind.RUN_STARTED, actor=bob).exists()


def test_one_active_run_per_node_is_enforced_by_the_database(run, node, bob):
    node.refresh_from_db()
    with pytest.raises(RunError):
        start_run(node, actor=bob)
    Node.objects.filter(pk=node.pk).update(state=NodeState.FAILED)
    node.refresh_from_db()
    with pytest.raises(RunError, match="already has an active run"):
        start_run(node, actor=bob)
    assert Run.objects.filter(node=node).count() == 1


def test_charlie_may_not_start_retry_or_abort(node, charlie, run):
    with pytest.raises(PermissionDenied):
        start_run(node, actor=charlie)
    with pytest.raises(PermissionDenied):
        abort_run(run, actor=charlie, reason="no")
    _fail(run)
    with pytest.raises(PermissionDenied):
        retry_run(run, actor=charlie)


def test_retry_resumes_a_failed_run_at_its_failed_phase(
    run, bob, django_capture_on_commit_callbacks
):
    _fail(run)
    with django_capture_on_commit_callbacks(execute=False):
        retry_run(run, actor=bob, reason="replaced the cable")
    run.refresh_from_db()
    assert run.status == RunStatus.QUEUED and run.failure_used == 0
    assert run.phases.get(phase="bios_firmware").status == PhaseStatus.PENDING
    assert Node.objects.get(pk=run.node_id).state == NodeState.PROVISIONING
    assert Event.objects.filter(kind=EventKind.RUN_ACTION, actor=bob, data__action="retry").exists()


def test_skipping_a_phase_needs_a_fleet_admin_and_a_reason(
    run, bob, alice, django_capture_on_commit_callbacks
):
    with pytest.raises(PermissionDenied):
        skip_phase(run, "hgx_firmware", actor=bob, reason="vendor says so")
    with pytest.raises(RunError, match="needs a reason"):
        skip_phase(run, "hgx_firmware", actor=alice, reason=" ")
    _fail(run, "hgx_firmware")
    with django_capture_on_commit_callbacks(execute=False):
        skip_phase(run, "hgx_firmware", actor=alice, reason="known-good baseboard, RMA pending")
    record = run.phases.get(phase="hgx_firmware")
    assert record.status == PhaseStatus.SKIPPED and "alice" in record.log
    run.refresh_from_db()
    assert run.status == RunStatus.QUEUED
    event = Event.objects.get(kind=EventKind.RUN_ACTION, data__action="skip")
    assert event.actor == alice and "RMA pending" in event.message


def test_abort_stops_the_run_and_marks_the_node_failed(run, bob, node):
    abort_run(run, actor=bob, reason="wrong rack")
    run.refresh_from_db()
    node.refresh_from_db()
    assert run.status == RunStatus.ABORTED and node.state == NodeState.FAILED
    with pytest.raises(RunError, match="not active"):
        abort_run(run, actor=bob, reason="again")
