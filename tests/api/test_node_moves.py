"""Every lifecycle move a person may make, as an API verb: who may, when, and what it leaves."""

from __future__ import annotations

import pytest

from fleet.choices import EventKind, NodeState
from fleet.models import Event, Node
from provisioning.choices import PhaseStatus, RunKind, RunStatus
from provisioning.core.plans import REVALIDATE_PHASES
from provisioning.core.runs import start_run
from provisioning.models import PhaseRecord, Run
from tests.api.conftest import client_for

pytestmark = pytest.mark.django_db


def _put(node: Node, state: str, **fields) -> Node:
    # Set-up only: put the node where the test needs it without walking the lifecycle.
    Node.objects.filter(pk=node.pk).update(state=state, **fields)
    node.refresh_from_db()
    return node


def _post(user, node: Node, verb: str, **body):
    return client_for(user).post(f"/api/v1/nodes/{node.pk}/{verb}/", body, format="json")


def _failed_run(node: Node, phase: str = "bios_firmware") -> Run:
    run = start_run(node)
    PhaseRecord.objects.filter(run=run, phase=phase).update(status=PhaseStatus.FAILED, error="x")
    Run.objects.filter(pk=run.pk).update(status=RunStatus.FAILED, last_error=f"{phase}: x")
    _put(node, NodeState.FAILED)
    run.refresh_from_db()
    return run


def test_quarantine_to_break_fix_needs_a_reason_then_revalidate_runs_only_the_gates(
    node, bob, charlie, profile
):
    _put(node, NodeState.QUARANTINED)
    assert _post(charlie, node, "break-fix", reason="x").status_code == 403
    refused = _post(bob, node, "break-fix")
    assert refused.status_code == 409 and "needs a reason" in refused.json()["detail"]
    answer = _post(bob, node, "break-fix", reason="GPU 3 reseated by Sam")
    assert (answer.status_code, answer.json()["state"]) == (200, NodeState.BREAK_FIX)
    moved = Event.objects.filter(node=node, kind=EventKind.STATE_CHANGED).last()
    assert (moved.actor, moved.message) == (bob, "GPU 3 reseated by Sam")

    answer = _post(bob, node, "revalidate")
    assert answer.status_code == 200, answer.json()
    run = Run.objects.get(node=node)
    assert run.kind == RunKind.REVALIDATE
    phases = list(run.phases.order_by("order").values_list("phase", flat=True))
    assert phases[:4] == list(REVALIDATE_PHASES)
    assert phases[4:] and all(p.startswith("gate:") for p in phases[4:])
    assert answer.json()["state"] == NodeState.PROVISIONING


def test_retry_resumes_a_failed_run_and_abort_stops_it(node, bob, manifest):
    run = _failed_run(node)
    answer = _post(bob, node, "retry", reason="BIOS image re-uploaded")
    assert (answer.status_code, answer.json()["state"]) == (200, NodeState.PROVISIONING)
    run.refresh_from_db()
    assert run.status == RunStatus.QUEUED
    assert run.phases.get(phase="bios_firmware").status == PhaseStatus.PENDING
    assert _post(bob, node, "abort").status_code == 409  # no reason
    answer = _post(bob, node, "abort", reason="pulled for a rack move")
    assert (answer.status_code, answer.json()["state"]) == (200, NodeState.FAILED)
    run.refresh_from_db()
    assert (run.status, run.last_error) == (RunStatus.ABORTED, "aborted: pulled for a rack move")


def test_skipping_a_phase_is_a_fleet_admins_move_with_a_reason(node, alice, bob, manifest):
    run = _failed_run(node, "hgx_firmware")
    assert _post(bob, node, "skip-phase", reason="x").status_code == 403
    answer = _post(alice, node, "skip-phase", reason="no HGX on this bench unit")
    assert answer.status_code == 200, answer.json()
    assert answer.json()["detail"] == f"hgx_firmware skipped; run {run.pk} goes on"
    record = run.phases.get(phase="hgx_firmware")
    assert record.status == PhaseStatus.SKIPPED
    assert "no HGX on this bench unit" in record.log


def test_reprovision_starts_a_full_run_and_is_refused_in_service(node, bob, manifest):
    _put(node, NodeState.IN_SERVICE)
    refused = _post(bob, node, "reprovision")
    assert refused.status_code == 409
    assert refused.json()["detail"] == (
        f"Reprovision is not possible now: node {node.serial} is in service"
    )
    _put(node, NodeState.AWAITING_APPROVAL)
    assert _post(bob, node, "reprovision").status_code == 200
    run = Run.objects.get(node=node)
    assert run.kind == RunKind.REPROVISION and run.phases.filter(phase="os_install").exists()


def test_decommission_is_a_fleet_admins_move_and_spares_a_tenants_node(node, alice, bob, manifest):
    _put(node, NodeState.FAILED, tenant="acme")
    assert _post(bob, node, "decommission", reason="x").status_code == 403
    assert _post(alice, node, "decommission").status_code == 409
    held = _post(alice, node, "decommission", reason="end of life")
    assert held.status_code == 409 and "release it first" in held.json()["detail"]
    _put(node, NodeState.FAILED, tenant="")
    answer = _post(alice, node, "decommission", reason="end of life")
    assert (answer.status_code, answer.json()["state"]) == (200, NodeState.DECOMMISSIONED)
    assert _post(alice, node, "decommission", reason="again").status_code == 409
