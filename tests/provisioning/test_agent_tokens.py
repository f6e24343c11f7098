"""An agent earns a session only with its boot credential, speaks only for its own node and boot,
and pulls its commands: anything else is a 4xx, and refusals are bounded events."""

from __future__ import annotations

import json
import random
import socket

import pytest
from django.test import Client

from fleet.choices import EventKind
from fleet.models import Event
from provisioning.agents import link as agent_link
from provisioning.agents.sessions import CheckIn, check_in
from provisioning.boot.credentials import (
    arm_for_boot,
    ephemeral_credential,
    mint_host_credential,
    secret_of,
)
from provisioning.choices import RunStatus
from provisioning.models import AgentCommand, AgentSession
from tests.factories import make_node
from tests.support.scenes import booted_secret, make_run


def _checkin(client, node, credential, boot_id="boot-1", macs=None, environment="ephemeral"):
    body = {
        "serial": node.serial,
        "macs": node.mac_addresses if macs is None else macs,
        "boot_id": boot_id,
        "environment": environment,
        "credential": credential,
    }
    return client.post("/agent/v1/checkin", json.dumps(body), content_type="application/json")


def _post(client, path, token, body):
    return client.post(
        path,
        json.dumps(body),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )


def _report(client, token, command_id, **fields):
    body = {"status": "done", "exit_code": 0, "result": {}, "output": ""} | fields
    return _post(client, f"/agent/v1/commands/{command_id}/result", token, body)


@pytest.fixture
def client():
    """Each test's requests come from an address of its own: refusals are counted per source
    and minute in the shared cache, and another test's refusals must not hide this one's."""
    return Client(
        REMOTE_ADDR=f"127.{random.randrange(1, 255)}.{random.randrange(255)}.{random.randrange(1, 255)}"
    )


@pytest.fixture
def two_nodes(db, rack, manifest):
    alpha, beta = make_node(rack=rack), make_node(rack=rack)
    return alpha, beta


def _secret(node) -> str:
    """The credential the node's boot medium carries (its run's ephemeral one)."""
    return booted_secret(make_run(node, phases_done=2))


def test_an_agent_with_its_boot_credential_gets_a_session_and_pulls_its_command(client, two_nodes):
    alpha, _ = two_nodes
    answer = _checkin(client, alpha, _secret(alpha))
    assert answer.status_code == 200
    token = answer.json()["token"]
    session = alpha.agent_sessions.get()
    command = agent_link.send(session, None, "wait_for_agent", "inventory", {})
    polled = _post(client, "/agent/v1/poll", token, {"known": []})
    assert polled.status_code == 200
    assert [c["id"] for c in polled.json()["commands"]] == [command.pk]
    command.refresh_from_db()
    assert command.status == "sent"
    # A poll that lists the command as known does not get it again; one that lost it does.
    assert _post(client, "/agent/v1/poll", token, {"known": [command.pk]}).json()["commands"] == []
    assert len(_post(client, "/agent/v1/poll", token, {"known": []}).json()["commands"]) == 1
    assert (
        _report(client, token, command.pk, inventory={"drives": [{"serial": "D1"}]}).status_code
        == 200
    )
    command.refresh_from_db()
    session.refresh_from_db()
    assert command.status == "done"
    assert session.inventory == {"drives": [{"serial": "D1"}]}
    assert session.token_hash != token and token not in json.dumps(session.__dict__, default=str)


def test_serial_and_macs_alone_get_no_session_and_revoke_no_live_one(client, two_nodes):
    alpha, _ = two_nodes
    live_token = _checkin(client, alpha, _secret(alpha), boot_id="real").json()["token"]
    for credential in ("", "guessed", secret_of(mint_host_credential(alpha, None)[0])):
        answer = _checkin(client, alpha, credential, boot_id="attacker")
        assert answer.status_code == 403
        assert "credential" in answer.json()["error"]
    live = AgentSession.objects.get(node=alpha, boot_id="real")
    assert live.revoked_at is None
    assert not AgentSession.objects.filter(boot_id="attacker").exists()
    assert _post(client, "/agent/v1/poll", live_token, {"known": []}).status_code == 200


def test_a_credential_dies_with_its_run(client, two_nodes):
    alpha, _ = two_nodes
    run = make_run(alpha, phases_done=2)
    secret = secret_of(ephemeral_credential(run))
    run.status = RunStatus.SUCCEEDED
    run.save(update_fields=["status"])
    assert _checkin(client, alpha, secret).status_code == 403


def test_a_run_mints_one_ephemeral_credential_and_reads_it_back_without_a_lock(
    two_nodes, django_assert_num_queries
):
    alpha, _ = two_nodes
    run = make_run(alpha, phases_done=2)
    first = ephemeral_credential(run)
    # Each later boot path of the run (one after every firmware update) reads the same one:
    # one plain read, no row lock, no transaction.
    with django_assert_num_queries(1) as queries:
        assert ephemeral_credential(run).pk == first.pk
    assert "FOR UPDATE" not in queries.captured_queries[0]["sql"]
    first.revoked_at = first.created_at
    first.save(update_fields=["revoked_at"])
    again = ephemeral_credential(run)
    assert again.pk != first.pk and again.revoked_at is None


def test_the_installed_os_checks_in_with_the_host_credential_only(client, two_nodes):
    alpha, _ = two_nodes
    _, host_secret = mint_host_credential(alpha, None)
    arm_for_boot(alpha.pk)
    assert _checkin(client, alpha, host_secret, environment="host_os").status_code == 200
    # The same secret is no ephemeral credential, and a newer install revokes it.
    assert _checkin(client, alpha, host_secret, boot_id="b2").status_code == 403
    mint_host_credential(alpha, None)
    assert (
        _checkin(client, alpha, host_secret, boot_id="b3", environment="host_os").status_code == 403
    )


def test_a_credential_of_another_node_is_refused(client, two_nodes):
    alpha, beta = two_nodes
    answer = _checkin(client, beta, _secret(alpha))
    assert answer.status_code == 403
    assert beta.serial in answer.json()["error"]
    assert not AgentSession.objects.exists()


def test_greenlight_never_contacts_an_address_the_caller_declared(client, two_nodes):
    """The old protocol called the agent_url a check-in declared; now nothing is ever called."""
    alpha, _ = two_nodes
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    listener.settimeout(0.5)
    port = listener.getsockname()[1]
    body = {
        "serial": alpha.serial,
        "macs": alpha.mac_addresses,
        "boot_id": "b",
        "environment": "ephemeral",
        "credential": _secret(alpha),
        "agent_url": f"http://127.0.0.1:{port}",
    }
    answer = client.post("/agent/v1/checkin", json.dumps(body), content_type="application/json")
    token = answer.json()["token"]
    session = alpha.agent_sessions.get()
    command = agent_link.send(session, None, "wait_for_agent", "inventory", {})
    agent_link.refresh(command)
    agent_link.is_alive(alpha)
    _post(client, "/agent/v1/poll", token, {"known": []})
    with pytest.raises(TimeoutError):
        listener.accept()
    listener.close()


def test_a_token_of_another_node_is_refused_and_recorded(client, two_nodes):
    alpha, beta = two_nodes
    alpha_token = _checkin(client, alpha, _secret(alpha)).json()["token"]
    _checkin(client, beta, _secret(beta))
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
    secret = _secret(alpha)
    old_token = _checkin(client, alpha, secret, boot_id="boot-1").json()["token"]
    old_session = alpha.agent_sessions.get()
    command = AgentCommand.objects.create(
        node=alpha, session=old_session, kind="inventory", status="sent"
    )
    arm_for_boot(alpha.pk)  # Greenlight reboots the node
    assert _checkin(client, alpha, secret, boot_id="boot-2").status_code == 200
    answer = _report(client, old_token, command.pk)
    assert answer.status_code == 401
    assert "old boot" in answer.json()["error"]
    assert _post(client, "/agent/v1/poll", old_token, {"known": []}).status_code == 401
    command.refresh_from_db()
    assert command.status == "lost"  # the reboot lost it; the old boot cannot claim it


def test_a_second_checkin_for_the_same_boot_is_refused(client, two_nodes):
    alpha, _ = two_nodes
    secret = _secret(alpha)
    assert _checkin(client, alpha, secret, boot_id="boot-1").status_code == 200
    again = _checkin(client, alpha, secret, boot_id="boot-1")
    assert again.status_code == 403
    assert "already checked in" in again.json()["error"]


def test_foreign_macs_are_refused(client, two_nodes):
    alpha, _ = two_nodes
    assert _checkin(client, alpha, _secret(alpha), macs=["02:de:ad:be:ef:00"]).status_code == 403


def test_a_flood_of_refusals_is_one_bounded_event(client, two_nodes):
    huge = "S" * 2_000_000
    for _ in range(50):
        body = {"serial": huge[:200], "macs": [], "boot_id": "b", "credential": "nope"}
        client.post("/agent/v1/checkin", json.dumps(body), content_type="application/json")
    events = Event.objects.filter(kind=EventKind.AGENT_REFUSED)
    assert events.count() == 1
    long_serial = {"serial": huge, "macs": [], "boot_id": "b", "credential": "nope"}
    answer = client.post(
        "/agent/v1/checkin", json.dumps(long_serial), content_type="application/json"
    )
    assert answer.status_code == 400
    assert all(len(e.message) < 400 for e in Event.objects.all())


@pytest.mark.parametrize(
    "body",
    [
        {"macs": 5},
        {"macs": [1, 2]},
        {"serial": ["x"]},
        {"boot_id": None},
    ],
)
def test_malformed_check_ins_are_400(client, two_nodes, body):
    alpha, _ = two_nodes
    full = {"serial": alpha.serial, "macs": [], "boot_id": "b", "credential": "x"} | body
    answer = client.post("/agent/v1/checkin", json.dumps(full), content_type="application/json")
    assert answer.status_code == 400
    assert answer.json()["error"]


def test_deeply_nested_json_is_400(client, two_nodes):
    nested = "[" * 100_000 + "]" * 100_000
    answer = client.post("/agent/v1/checkin", nested, content_type="application/json")
    assert answer.status_code == 400


@pytest.mark.parametrize(
    "fields, word",
    [
        ({"exit_code": "abc"}, "exit_code"),
        ({"exit_code": 2**40}, "exit_code"),
        ({"exit_code": True}, "exit_code"),
        ({"status": "maybe"}, "status"),
        ({"result": []}, "result"),
        ({"output": 5}, "output"),
        ({"inventory": "lots"}, "inventory"),
    ],
)
def test_results_are_validated_before_anything_is_stored(client, two_nodes, fields, word):
    alpha, _ = two_nodes
    token = _checkin(client, alpha, _secret(alpha)).json()["token"]
    command = AgentCommand.objects.create(
        node=alpha, session=alpha.agent_sessions.get(), kind="inventory", status="sent"
    )
    answer = _report(client, token, command.pk, **fields)
    assert answer.status_code == 400
    assert word in answer.json()["error"]
    command.refresh_from_db()
    assert command.status == "sent"


def test_a_finished_command_is_closed_to_further_writes(client, two_nodes):
    alpha, _ = two_nodes
    token = _checkin(client, alpha, _secret(alpha)).json()["token"]
    command = AgentCommand.objects.create(
        node=alpha, session=alpha.agent_sessions.get(), kind="inventory", status="sent"
    )
    log_path = f"/agent/v1/commands/{command.pk}/log"
    assert _post(client, log_path, token, {"text": "line 1\n"}).status_code == 200
    assert _report(client, token, command.pk, output="final").status_code == 200
    assert _post(client, log_path, token, {"text": "forged\n"}).status_code == 409
    assert _report(client, token, command.pk, status="failed").status_code == 409
    command.refresh_from_db()
    assert command.status == "done" and command.output == "final"


def test_requests_without_a_token_or_with_garbage_are_refused(client, two_nodes):
    alpha, _ = two_nodes
    _checkin(client, alpha, _secret(alpha))
    command = AgentCommand.objects.create(
        node=alpha, session=alpha.agent_sessions.get(), kind="inventory", status="sent"
    )
    assert _report(client, "", command.pk).status_code == 401
    assert _report(client, "not-a-token", command.pk).status_code == 401
    bad = client.post("/agent/v1/checkin", "{not json", content_type="application/json")
    assert bad.status_code == 400


def test_tokens_are_derived_per_node_and_boot(two_nodes):
    alpha, beta = two_nodes
    claim = CheckIn(alpha.serial, alpha.mac_addresses, "boot-x", "ephemeral", _secret(alpha))
    _, token_a = check_in(claim)
    claim_b = CheckIn(beta.serial, beta.mac_addresses, "boot-x", "ephemeral", _secret(beta))
    _, token_b = check_in(claim_b)
    assert token_a != token_b


def test_outside_the_lab_the_agent_api_answers_only_over_tls(client, settings, two_nodes):
    alpha, _ = two_nodes
    settings.GREENLIGHT_AGENT_REQUIRE_TLS = True
    secret = _secret(alpha)
    plain = _checkin(client, alpha, secret)
    assert plain.status_code == 403 and "TLS" in plain.json()["error"]
    assert not AgentSession.objects.exists()
    body = {
        "serial": alpha.serial,
        "macs": alpha.mac_addresses,
        "boot_id": "b",
        "credential": secret,
    }
    over_tls = client.post(
        "/agent/v1/checkin", json.dumps(body), content_type="application/json", secure=True
    )
    assert over_tls.status_code == 200
    token = over_tls.json()["token"]
    assert _post(client, "/agent/v1/poll", token, {"known": []}).status_code == 403
