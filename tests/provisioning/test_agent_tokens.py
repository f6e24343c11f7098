"""An agent speaks only for its own node and its own boot: anything else is 403 and an event."""

from __future__ import annotations

import json

import pytest

from fleet.choices import EventKind
from fleet.models import Event
from provisioning.agent_sessions import CheckIn, check_in
from provisioning.models import AgentCommand
from tests.factories import make_node


def _checkin(client, node, boot_id="boot-1", macs=None):
    body = {
        "serial": node.serial,
        "macs": macs or node.mac_addresses,
        "boot_id": boot_id,
        "environment": "ephemeral",
        "agent_url": "http://127.0.0.1:9",
    }
    return client.post("/agent/v1/checkin", json.dumps(body), content_type="application/json")


def _report(client, token, command_id):
    return client.post(
        f"/agent/v1/commands/{command_id}/result",
        json.dumps({"status": "done", "exit_code": 0, "result": {}, "output": ""}),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )


@pytest.fixture
def two_nodes(db, rack, manifest):
    return make_node(rack=rack), make_node(rack=rack)


def test_a_checked_in_agent_reports_on_its_own_command(client, two_nodes):
    alpha, _ = two_nodes
    answer = _checkin(client, alpha)
    assert answer.status_code == 200
    token = answer.json()["token"]
    session = alpha.agent_sessions.get()
    command = AgentCommand.objects.create(
        node=alpha, session=session, kind="inventory", status="sent"
    )
    assert _report(client, token, command.pk).status_code == 200
    command.refresh_from_db()
    assert command.status == "done"
    assert session.token_hash != token and token not in json.dumps(session.__dict__, default=str)


def test_a_token_of_another_node_is_refused_and_recorded(client, two_nodes):
    alpha, beta = two_nodes
    alpha_token = _checkin(client, alpha).json()["token"]
    _checkin(client, beta)
    beta_command = AgentCommand.objects.create(
        node=beta, session=beta.agent_sessions.get(), kind="inventory", status="sent"
    )
    answer = _report(client, alpha_token, beta_command.pk)
    assert answer.status_code == 403
    assert alpha.serial in answer.json()["error"] and beta.serial in answer.json()["error"]
    beta_command.refresh_from_db()
    assert beta_command.status == "sent"
    refused = Event.objects.get(kind=EventKind.AGENT_REFUSED, node=beta)
    assert alpha.serial in refused.message


def test_a_token_of_an_old_boot_is_refused_and_recorded(client, two_nodes):
    alpha, _ = two_nodes
    old_token = _checkin(client, alpha, boot_id="boot-1").json()["token"]
    old_session = alpha.agent_sessions.get()
    command = AgentCommand.objects.create(
        node=alpha, session=old_session, kind="inventory", status="sent"
    )
    assert _checkin(client, alpha, boot_id="boot-2").status_code == 200
    answer = _report(client, old_token, command.pk)
    assert answer.status_code == 403
    assert "old boot" in answer.json()["error"]
    assert Event.objects.filter(kind=EventKind.AGENT_REFUSED, node=alpha).exists()
    command.refresh_from_db()
    assert command.status == "lost"  # the reboot lost it; the old boot cannot claim it


def test_a_second_checkin_for_the_same_boot_is_refused(client, two_nodes):
    alpha, _ = two_nodes
    assert _checkin(client, alpha, boot_id="boot-1").status_code == 200
    again = _checkin(client, alpha, boot_id="boot-1")
    assert again.status_code == 403
    assert "already checked in" in again.json()["error"]


def test_checkin_with_unknown_serial_or_foreign_macs_is_refused(client, two_nodes):
    alpha, _ = two_nodes
    assert _checkin(client, alpha, macs=["02:de:ad:be:ef:00"]).status_code == 403
    body = {"serial": "NOPE", "macs": [], "boot_id": "b", "agent_url": "http://127.0.0.1:9"}
    answer = client.post("/agent/v1/checkin", json.dumps(body), content_type="application/json")
    assert answer.status_code == 403
    assert Event.objects.filter(kind=EventKind.AGENT_REFUSED).count() == 2


def test_requests_without_a_token_or_with_garbage_are_refused(client, two_nodes):
    alpha, _ = two_nodes
    _checkin(client, alpha)
    command = AgentCommand.objects.create(
        node=alpha, session=alpha.agent_sessions.get(), kind="inventory", status="sent"
    )
    assert _report(client, "", command.pk).status_code == 403
    assert _report(client, "not-a-token", command.pk).status_code == 403
    bad = client.post("/agent/v1/checkin", "{not json", content_type="application/json")
    assert bad.status_code == 400


def test_tokens_are_derived_per_node_and_boot(two_nodes):
    alpha, beta = two_nodes
    claim = CheckIn(alpha.serial, alpha.mac_addresses, "boot-x", "ephemeral", "http://x")
    _, token_a = check_in(claim)
    claim_b = CheckIn(beta.serial, beta.mac_addresses, "boot-x", "ephemeral", "http://x")
    _, token_b = check_in(claim_b)
    assert token_a != token_b
