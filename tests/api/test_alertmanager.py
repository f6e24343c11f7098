"""POST /api/v1/alertmanager/: Alertmanager's webhook JSON takes in suspect nodes."""

from __future__ import annotations

import json

import pytest
from rest_framework.test import APIClient

from console.api.alertmanager import MAX_BODY_BYTES
from fleet.choices import EventKind, NodeState
from fleet.models import Event, Node
from provisioning.choices import RunKind
from provisioning.models import Run
from tests.api.conftest import client_for

pytestmark = pytest.mark.django_db

URL = "/api/v1/alertmanager/"
TOKEN = "am-secret-token-1234"


@pytest.fixture(autouse=True)
def alertmanager_token(settings):
    settings.GREENLIGHT_ALERTMANAGER_TOKEN = TOKEN


@pytest.fixture
def sick(node, manifest, profile):
    # Set-up only: an in-service node with a hostname, as node_exporter's instance names it.
    Node.objects.filter(pk=node.pk).update(state=NodeState.IN_SERVICE, hostname="gpu-017")
    node.refresh_from_db()
    return node


def alertmanager(token: str = TOKEN) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    return client


def notification(*alerts: dict, status: str = "firing") -> dict:
    """A notification as Alertmanager sends it (webhook format version 4)."""
    return {
        "version": "4",
        "groupKey": '{}:{alertname="GpuXid"}',
        "truncatedAlerts": 0,
        "status": status,
        "receiver": "greenlight",
        "groupLabels": {"alertname": "GpuXid"},
        "commonLabels": {},
        "commonAnnotations": {},
        "externalURL": "http://alertmanager:9093",
        "alerts": list(alerts),
    }


def alert(status: str = "firing", **labels: str) -> dict:
    return {
        "status": status,
        "labels": {"alertname": "GpuXid", "severity": "critical", **labels},
        "annotations": {"summary": "XID 79 on GPU 3"},
        "startsAt": "2026-11-24T10:00:00Z",
        "endsAt": "0001-01-01T00:00:00Z",
        "generatorURL": "http://prometheus:9090/graph",
        "fingerprint": "c0ffee",
    }


def post(client: APIClient, body) -> object:
    return client.post(URL, body, format="json")


def test_a_firing_alert_naming_the_instance_starts_the_suspect_loop(sick):
    answer = post(alertmanager(), notification(alert(instance="gpu-017:9100")))

    assert answer.status_code == 200, answer.json()
    run = Run.objects.get(node=sick)
    assert run.kind == RunKind.SUSPECT
    assert answer.json()["alerts"] == [
        {
            "index": 0,
            "alertname": "GpuXid",
            "status": "firing",
            "node": sick.serial,
            "outcome": "started",
            "detail": f"suspect run {run.pk} started: cordon, drain, re-check",
            "run": run.pk,
        }
    ]
    sick.refresh_from_db()
    assert sick.state == NodeState.RELEASING
    moved = Event.objects.get(node=sick, kind=EventKind.STATE_CHANGED)
    assert moved.actor_label == "alertmanager"
    assert "reported suspect (alertmanager): GpuXid: XID 79 on GPU 3" in moved.message

    # Alertmanager repeats a firing alert until it resolves: one loop, not one per repeat.
    again = post(alertmanager(), notification(alert(serial=sick.serial)))
    assert again.json()["alerts"][0]["outcome"] == "already"
    assert Run.objects.filter(node=sick).count() == 1


def test_a_resolved_alert_is_noted_and_starts_nothing(sick):
    answer = post(alertmanager(), notification(alert("resolved", hostname="gpu-017")))

    assert answer.status_code == 200
    assert answer.json()["alerts"][0]["outcome"] == "noted"
    sick.refresh_from_db()
    assert sick.state == NodeState.IN_SERVICE
    assert not Run.objects.filter(node=sick).exists()
    noted = Event.objects.get(node=sick, kind=EventKind.UPDATED)
    assert noted.message == "alert resolved: GpuXid: XID 79 on GPU 3"


def test_an_alert_naming_no_known_node_changes_nothing_and_says_so(sick):
    answer = post(alertmanager(), notification(alert(instance="gpu-999:9100")))

    assert answer.status_code == 200
    (outcome,) = answer.json()["alerts"]
    assert (outcome["outcome"], outcome["node"]) == ("unknown-node", None)
    assert "gpu-999" in outcome["detail"]
    assert not Run.objects.exists()
    sick.refresh_from_db()
    assert sick.state == NodeState.IN_SERVICE


def test_a_firing_alert_on_a_node_not_in_service_is_recorded_not_acted_on(node, manifest):
    answer = post(alertmanager(), notification(alert(serial=node.serial)))

    (outcome,) = answer.json()["alerts"]
    assert outcome["outcome"] == "ignored" and "not in service" in outcome["detail"]
    assert not Run.objects.exists()
    assert Event.objects.filter(node=node, message__startswith="alert firing").exists()


@pytest.mark.parametrize(
    "body, says",
    [
        ("[1, 2", "not JSON"),
        ([], "JSON object"),
        ({"version": "3", "alerts": []}, "version"),
        ({"version": "4"}, "alerts must be a list"),
        ({"version": "4", "alerts": ["x"]}, "alerts[0] must be an object"),
        ({"version": "4", "alerts": [{"labels": {}}]}, "alerts[0].status"),
        ({"version": "4", "alerts": [{"status": "pending", "labels": {}}]}, "alerts[0].status"),
        ({"version": "4", "alerts": [{"status": "firing", "labels": {"a": 1}}]}, "labels"),
        ({"version": "4", "alerts": [{"status": "firing", "annotations": []}]}, "annotations"),
    ],
)
def test_a_malformed_body_is_a_400_saying_where(sick, body, says):
    raw = body if isinstance(body, str) else json.dumps(body)
    answer = alertmanager().post(URL, raw, content_type="application/json")

    assert answer.status_code == 400
    assert says in answer.json()["detail"]
    assert not Run.objects.exists()


def test_an_oversized_body_is_refused_before_it_is_read(sick):
    padding = "x" * (MAX_BODY_BYTES + 1)
    body = notification(alert(serial=sick.serial) | {"annotations": {"summary": padding}})
    answer = post(alertmanager(), body)

    assert answer.status_code == 413
    assert not Run.objects.exists()


def test_a_wrong_or_missing_credential_is_a_401(sick, settings):
    assert post(alertmanager("guess"), notification(alert(serial=sick.serial))).status_code == 401
    assert post(APIClient(), notification(alert(serial=sick.serial))).status_code == 401
    settings.GREENLIGHT_ALERTMANAGER_TOKEN = ""
    # No token configured: no bearer token is taken, not even an empty one.
    assert post(alertmanager(""), notification(alert(serial=sick.serial))).status_code == 401
    assert not Run.objects.exists()


def test_a_users_api_token_works_with_the_right_to_quarantine(sick, bob, dora):
    refused = post(client_for(dora), notification(alert(serial=sick.serial)))
    assert refused.status_code == 403
    assert not Run.objects.exists()

    answer = post(client_for(bob), notification(alert(serial=sick.serial)))
    assert answer.status_code == 200
    run = Run.objects.get(node=sick)
    assert run.started_by == bob
    assert Event.objects.get(node=sick, kind=EventKind.STATE_CHANGED).actor == bob
