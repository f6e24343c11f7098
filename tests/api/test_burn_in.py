"""POST /api/v1/nodes/{id}/burn-in/: a tenant platform burns a node in before handing it out;
and how a take-out run (burn-in or suspect) ends: re-admitted, or sent to break/fix."""

from __future__ import annotations

import pytest

from acceptance.models import AcceptanceProfile
from fleet.choices import EventKind, NodeState
from fleet.models import Event, Node
from fleet.roles import TENANT_PLATFORM
from provisioning.choices import PhaseStatus, RunKind, RunStatus
from provisioning.core.completion import complete_run
from provisioning.core.engine import fail_run
from provisioning.core.plans import REVALIDATE_PHASES
from provisioning.day2.suspect import report_suspect
from provisioning.models import PhaseRecord, Run
from tests import factories
from tests.api.conftest import client_for

pytestmark = pytest.mark.django_db


@pytest.fixture
def tina(db):
    return factories.make_user("tina", TENANT_PLATFORM)


def _put(node: Node, state: str, **fields) -> Node:
    # Set-up only: put the node where the test needs it without walking the lifecycle.
    Node.objects.filter(pk=node.pk).update(state=state, **fields)
    node.refresh_from_db()
    return node


def _post(user, node_id: int, body=None):
    return client_for(user).post(f"/api/v1/nodes/{node_id}/burn-in/", body or {}, format="json")


def test_a_tenant_platform_burns_in_an_unallocated_node_before_handing_it_out(node, tina, profile):
    _put(node, NodeState.IN_SERVICE)
    answer = _post(tina, node.pk, {"reason": "for acme-9"})

    assert answer.status_code == 200, answer.json()
    run = Run.objects.get(node=node)
    assert (run.kind, run.started_by) == (RunKind.BURN_IN, tina)
    assert answer.json()["state"] == NodeState.RELEASING
    phases = list(run.phases.order_by("order").values_list("phase", flat=True))
    gates = [p for p in phases if p.startswith("gate:")]
    assert phases == ["drain", *REVALIDATE_PHASES, *gates] and gates
    moved = Event.objects.get(node=node, kind=EventKind.STATE_CHANGED)
    assert moved.message == "pre-allocation burn-in asked by tina: for acme-9"


def test_a_node_allocated_to_a_tenant_or_not_in_service_is_refused(node, bob, manifest):
    # Fleet staff, who see every node, are told why.
    _put(node, NodeState.IN_SERVICE, tenant="globex")
    held = _post(bob, node.pk)
    assert held.status_code == 409
    # Whose node it is stays unsaid.
    assert "allocated to a tenant" in held.json()["detail"]
    assert "globex" not in held.json()["detail"]
    _put(node, NodeState.FAILED, tenant="")
    assert _post(bob, node.pk).status_code == 409
    assert not Run.objects.exists()


def test_walking_ids_a_tenant_platform_learns_nothing_of_nodes_it_may_not_burn_in(
    node, tina, manifest
):
    # Another tenant's node, and an unallocated one out of service, answer as no node at all.
    missing = _post(tina, 999999)
    assert missing.status_code == 404
    _put(node, NodeState.IN_SERVICE, tenant="globex")
    held = _post(tina, node.pk)
    _put(node, NodeState.FAILED, tenant="")
    failed = _post(tina, node.pk)
    for answer in (held, failed):
        assert (answer.status_code, answer.json()) == (404, missing.json())
        assert node.serial not in answer.content.decode()
    # Nor do the verbs it may not make, which look the node up first.
    _put(node, NodeState.IN_SERVICE, tenant="globex")
    verb = client_for(tina).post(f"/api/v1/nodes/{node.pk}/abort/", {}, format="json")
    assert (verb.status_code, verb.json()) == (404, missing.json())
    assert not Run.objects.exists()


def test_who_may_ask_for_a_burn_in(node, bob, dora, charlie, manifest):
    _put(node, NodeState.IN_SERVICE)
    assert _post(dora, node.pk).status_code == 403
    assert _post(charlie, node.pk).status_code == 403
    assert _post(None, node.pk).status_code == 401
    assert _post(bob, 999999).status_code == 404
    assert not Run.objects.exists()
    assert _post(bob, node.pk).status_code == 200


def _passed(run: Run) -> None:
    # Set-up: every phase and gate of the run done, the node at its gates.
    PhaseRecord.objects.filter(run=run).update(status=PhaseStatus.DONE)
    Run.objects.filter(pk=run.pk).update(status=RunStatus.RUNNING)
    _put(run.node, NodeState.VALIDATING)


def test_a_passed_take_out_run_is_readmitted_and_resumed_when_the_profile_says_so(
    node, bob, profile, settings, eager_celery, django_capture_on_commit_callbacks
):
    settings.GREENLIGHT_SCHEDULER = "lab"
    _put(node, NodeState.IN_SERVICE)
    run = report_suspect(node, "ECC errors", actor=bob)
    _passed(run)
    with django_capture_on_commit_callbacks(execute=True):
        complete_run(run)
    node.refresh_from_db()
    # Without the profile's word, a person approves it back.
    assert node.state == NodeState.AWAITING_APPROVAL

    spec = {**profile.spec, "auto_return_to_service": True}
    AcceptanceProfile.objects.filter(pk=profile.pk).update(spec=spec)
    _put(node, NodeState.IN_SERVICE)
    run = report_suspect(node, "ECC errors again", actor=bob)
    _passed(run)
    with django_capture_on_commit_callbacks(execute=True):
        complete_run(run)
    node.refresh_from_db()
    assert node.state == NodeState.IN_SERVICE
    assert Event.objects.filter(
        node=node, kind=EventKind.UPDATED, message__startswith="resumed as"
    ).exists()


def test_a_take_out_run_whose_gate_found_a_fault_sends_the_node_to_break_fix(
    node, bob, tina, profile
):
    _put(node, NodeState.IN_SERVICE)
    assert _post(tina, node.pk).status_code == 200
    run = Run.objects.get(node=node)
    _put(node, NodeState.VALIDATING)
    record = run.phases.filter(phase__startswith="gate:").first()

    fail_run(run, record, "GPU 3: XID 79", component="GPU 3", quarantine=True)

    node.refresh_from_db()
    assert node.state == NodeState.BREAK_FIX
    moves = Event.objects.filter(node=node, kind=EventKind.STATE_CHANGED).order_by("pk")
    assert [m.data["to"] for m in moves][-2:] == [NodeState.QUARANTINED, NodeState.BREAK_FIX]
    assert "Pre-allocation burn-in failed" in moves.last().message

    # A failure that does not blame the hardware leaves the node failed, for a person to retry.
    _put(node, NodeState.IN_SERVICE)
    other = report_suspect(node, "flaky", actor=bob)
    _put(node, NodeState.PROVISIONING)
    fail_run(other, other.phases.get(phase="preflight"), "BMC unreachable")
    node.refresh_from_db()
    assert node.state == NodeState.FAILED
