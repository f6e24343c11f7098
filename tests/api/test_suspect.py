"""POST /api/v1/nodes/{id}/suspect/: an in-service node reported suspect starts the day-2 loop."""

from __future__ import annotations

import pytest

from acceptance.models import AcceptanceProfile
from fleet.choices import EventKind, NodeState
from fleet.models import Event, Node
from fleet.roles import TENANT_PLATFORM
from provisioning.choices import RunKind
from provisioning.core.plans import REVALIDATE_PHASES
from provisioning.models import Run
from tests import factories
from tests.api.conftest import client_for

pytestmark = pytest.mark.django_db


def _in_service(node: Node) -> Node:
    # Set-up only: put the node in service without walking the lifecycle.
    Node.objects.filter(pk=node.pk).update(state=NodeState.IN_SERVICE)
    node.refresh_from_db()
    return node


def _post(user, node_id: int, body):
    return client_for(user).post(f"/api/v1/nodes/{node_id}/suspect/", body, format="json")


def test_a_suspect_report_cordons_drains_and_revalidates_without_a_reimage(node, bob, profile):
    _in_service(node)
    answer = _post(bob, node.pk, {"reason": "DCGM health check: XID 79 on GPU 3"})

    assert answer.status_code == 202, answer.json()
    run = Run.objects.get(node=node)
    assert answer.json()["state"] == NodeState.RELEASING
    assert answer.json()["detail"].startswith(f"suspect run {run.pk} started")
    assert (run.kind, run.started_by) == (RunKind.SUSPECT, bob)
    phases = list(run.phases.order_by("order").values_list("phase", flat=True))
    # Drained first, then the installed OS is re-checked: no firmware, no erase, no reimage.
    assert phases[: 1 + len(REVALIDATE_PHASES)] == ["drain", *REVALIDATE_PHASES]
    assert all(p.startswith("gate:") for p in phases[1 + len(REVALIDATE_PHASES) :])
    moved = Event.objects.get(node=node, kind=EventKind.STATE_CHANGED)
    assert moved.actor == bob
    assert "reported suspect (person): DCGM health check: XID 79 on GPU 3" in moved.message


def test_a_profile_may_ask_for_a_full_reprovision_of_a_suspect_node(node, bob, profile):
    spec = {**profile.spec, "suspect_action": "reprovision"}
    AcceptanceProfile.objects.filter(pk=profile.pk).update(spec=spec)
    _in_service(node)

    assert _post(bob, node.pk, {"reason": "fabric errors"}).status_code == 202
    phases = set(Run.objects.get(node=node).phases.values_list("phase", flat=True))
    assert {"drain", "bmc_firmware", "os_install", "boot_disk"} <= phases


@pytest.mark.parametrize(
    "body, field",
    [({}, "reason"), ({"reason": ""}, "reason"), ({"reason": "x" * 2001}, "reason")],
)
def test_a_report_without_a_usable_reason_is_a_400_naming_the_field(node, bob, body, field):
    _in_service(node)
    answer = _post(bob, node.pk, body)
    assert answer.status_code == 400
    assert field in answer.json()
    node.refresh_from_db()
    assert node.state == NodeState.IN_SERVICE and not Run.objects.filter(node=node).exists()


def test_a_body_that_is_not_json_is_a_400(node, bob):
    _in_service(node)
    answer = client_for(bob).post(
        f"/api/v1/nodes/{node.pk}/suspect/", "{reason", content_type="application/json"
    )
    assert answer.status_code == 400


@pytest.mark.parametrize("who", ["dora", "charlie", "tina"])
def test_only_those_who_may_quarantine_may_report_a_node_suspect(node, dora, charlie, who):
    users = {"dora": dora, "charlie": charlie, "tina": factories.make_user("tina", TENANT_PLATFORM)}
    _in_service(node)
    answer = _post(users[who], node.pk, {"reason": "looks sick"})
    assert answer.status_code == 403
    assert "fleet.quarantine_node" in answer.json()["detail"]
    node.refresh_from_db()
    assert node.state == NodeState.IN_SERVICE and not Run.objects.filter(node=node).exists()


def test_anonymous_is_refused_with_401(node):
    _in_service(node)
    assert _post(None, node.pk, {"reason": "x"}).status_code == 401


def test_an_unknown_node_is_a_404(bob, manifest):
    assert _post(bob, 999999, {"reason": "who?"}).status_code == 404


def test_a_node_not_in_service_is_refused_with_why(node, bob, manifest):
    answer = _post(bob, node.pk, {"reason": "looks sick"})
    assert answer.status_code == 409
    assert "not possible now" in answer.json()["detail"]
    _in_service(node)
    assert _post(bob, node.pk, {"reason": "looks sick"}).status_code == 202
    # A second report while the loop runs: the node is no longer in service.
    again = _post(bob, node.pk, {"reason": "still sick"})
    assert again.status_code == 409
    assert Run.objects.filter(node=node).count() == 1
