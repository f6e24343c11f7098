"""Rollouts over the API: started on a published manifest by whoever may reprovision, with a
concurrency limit checked; read with their nodes; paused, resumed and cancelled."""

from __future__ import annotations

import pytest

from fleet.choices import NodeState
from fleet.models import Node
from provisioning.models import Rollout
from tests import factories
from tests.support.scenes import walk

from .conftest import client_for

pytestmark = pytest.mark.django_db
S = NodeState


@pytest.fixture
def published(manifest, profile):
    """Three failed nodes on 1.0.0; 1.0.1 published."""
    nodes = [walk(factories.make_node(), S.FAILED) for _ in range(3)]
    Node.objects.filter(pk__in=[n.pk for n in nodes]).update(manifest=manifest)
    new = manifest.clone_as_draft()
    new.publish()
    return new


def start(user, manifest, body) -> tuple[int, dict]:
    response = client_for(user).post(
        f"/api/v1/manifests/{manifest.pk}/rollouts/", body, format="json"
    )
    return response.status_code, response.json()


def test_a_site_tech_starts_a_rollout_and_reads_its_nodes(bob, published):
    code, body = start(bob, published, {"concurrency": 1})
    assert code == 201, body
    assert body["concurrency"] == 1 and body["state"] == {"value": "running", "label": "Running"}
    assert [n["status"]["value"] for n in body["nodes"]] == ["running", "waiting", "waiting"]
    assert body["nodes"][0]["run"]["id"] is not None
    read = client_for(bob).get(f"/api/v1/rollouts/{body['id']}/")
    assert read.status_code == 200 and len(read.json()["nodes"]) == 3


def test_the_default_concurrency_is_two(bob, published):
    code, body = start(bob, published, {})
    assert code == 201 and body["concurrency"] == 2


@pytest.mark.parametrize("who", ["dora", "charlie"])
def test_who_may_not_reprovision_may_not_start_one(cast, who, published):
    code, body = start(cast[who], published, {"concurrency": 1})
    assert code == 403, body
    assert not Rollout.objects.exists()


def test_anonymous_is_asked_to_authenticate(published):
    code, _ = start(None, published, {"concurrency": 1})
    assert code == 401


@pytest.mark.parametrize("value", [0, -1, 51, "two", 1.5, None, True, [2]])
def test_a_bad_concurrency_is_a_clear_400(bob, published, value):
    code, body = start(bob, published, {"concurrency": value})
    assert code == 400
    assert body == {
        "concurrency": [f"concurrency must be a whole number from 1 to 50, not {value!r}"]
    }
    assert not Rollout.objects.exists()


def test_a_retired_manifest_is_refused(bob, published, manifest):
    code, body = start(bob, manifest, {"concurrency": 1})
    assert code == 400
    assert "only the published manifest is rolled out" in body["detail"]


def test_pause_resume_cancel(bob, dora, published):
    _, body = start(bob, published, {"concurrency": 1})
    url = f"/api/v1/rollouts/{body['id']}"
    client = client_for(bob)
    paused = client.post(f"{url}/pause/", {"reason": "change freeze"}, format="json")
    assert paused.status_code == 200
    assert (paused.json()["state"]["value"], paused.json()["reason"]) == ("paused", "change freeze")
    assert client.post(f"{url}/pause/", {}, format="json").status_code == 409
    assert client_for(dora).post(f"{url}/resume/", {}, format="json").status_code == 403
    assert client.post(f"{url}/resume/", {}, format="json").json()["state"]["value"] == "running"
    cancelled = client.post(f"{url}/cancel/", {}, format="json")
    assert cancelled.json()["state"]["value"] == "cancelled"
    assert cancelled.json()["reason"] == "cancelled by bob"
    assert client_for(dora).get(f"{url}/").status_code == 200


def test_the_nodes_a_draft_would_put_behind_are_read_before_publishing(dora, manifest, profile):
    rack = factories.make_rack("R03")
    nodes = [walk(factories.make_node(rack=rack, position=u), S.IN_SERVICE) for u in (2, 1)]
    Node.objects.filter(pk__in=[n.pk for n in nodes]).update(manifest=manifest)
    factories.make_node(rack=rack, position=3)  # never provisioned: put behind nothing
    draft = manifest.clone_as_draft()
    response = client_for(dora).get(f"/api/v1/manifests/{draft.pk}/behind/")
    assert response.status_code == 200
    body = response.json()
    assert body["count"] == 2
    assert [(n["serial"], n["rack"], n["position"]) for n in body["nodes"]] == [
        (nodes[1].serial, "R03", 1),
        (nodes[0].serial, "R03", 2),
    ]
    assert body["nodes"][0]["state"] == {"value": "in_service", "label": "In service"}
    assert client_for(None).get(f"/api/v1/manifests/{draft.pk}/behind/").status_code == 401
