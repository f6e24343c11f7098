"""What the agents' API costs in queries per request (issue 32: at 741 nodes a check-in was
eleven queries, a result six), and that the reads it folded together answer as before."""

from __future__ import annotations

import json
import random

import pytest
from django.test import Client
from django.utils import timezone

from fleet import fields as fleet_fields
from fleet.choices import EventKind
from fleet.models import Event
from provisioning.agents import link as agent_link
from provisioning.agents.intervals import poll_interval
from provisioning.boot.credentials import (
    arm_for_boot,
    by_media_key,
    ephemeral_credential,
    mint_host_credential,
)
from provisioning.core.phases import PHASE_NAMES
from provisioning.models import AgentCommand, AgentSession, Run
from tests.support.scenes import booted_secret, make_run


@pytest.fixture(autouse=True)
def intervals(settings):
    settings.GREENLIGHT_AGENT_POLL_S = 2.0
    settings.GREENLIGHT_AGENT_IDLE_POLL_S = 30.0
    settings.GREENLIGHT_TIME_SCALE = 1.0


@pytest.fixture
def client():
    """Requests from an address of this test's own: refusals are counted per source and minute
    in the shared cache, and another test's must not hide this one's."""
    return Client(REMOTE_ADDR=f"127.{random.randrange(1, 255)}.{random.randrange(255)}.9")


def _checkin(client, node, secret, boot_id="b1", environment="ephemeral"):
    body = {
        "serial": node.serial,
        "macs": node.mac_addresses,
        "boot_id": boot_id,
        "environment": environment,
        "credential": secret,
        "inventory": {"cpus": 2},
    }
    return client.post("/agent/v1/checkin", json.dumps(body), content_type="application/json")


def _report(client, token, command_id, **fields):
    body = {"status": "done", "exit_code": 0, "output": "ok"} | fields
    return client.post(
        f"/agent/v1/commands/{command_id}/result",
        json.dumps(body),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )


@pytest.fixture
def checked_in(client, node):
    """A node whose agent checked in during its run, and a command of it that was sent."""
    run = make_run(node, phases_done=2)
    token = _checkin(client, node, booted_secret(run)).json()["token"]
    session = AgentSession.objects.get(node=node)
    command = agent_link.send(session, run, "secure_erase", "secure_erase", {})
    AgentCommand.objects.filter(pk=command.pk).update(status="sent")
    return run, session, token, command


def test_a_check_in_is_seven_queries(client, node, django_assert_num_queries):
    secret = booted_secret(make_run(node, phases_done=2))
    # Read the credential with the node's interval facts, spend it; the session, the older
    # sessions and commands, the event, the run's nudge (one write that returns what it wrote).
    # Two more are the test transaction's savepoint around the check-in's own.
    with django_assert_num_queries(7 + 2):
        answer = _checkin(client, node, secret)
    assert answer.status_code == 200


def test_a_result_is_three_queries_and_one_more_with_inventory(
    client, checked_in, django_assert_num_queries
):
    run, session, token, command = checked_in
    # The command with its session and the interval facts, the result, the run's nudge (one
    # write that returns what it wrote).
    with django_assert_num_queries(3):
        assert _report(client, token, command.pk).status_code == 200
    second = agent_link.send(session, run, "inventory", "inventory", {})
    with django_assert_num_queries(4):
        assert _report(client, token, second.pk, inventory={"cpus": 4}).status_code == 200
    session.refresh_from_db()
    assert session.inventory == {"cpus": 4}
    assert Run.objects.get(pk=run.pk).nudged_at is not None


def test_a_check_in_tells_the_interval_a_read_after_it_gives(client, node):
    run = make_run(node, phases_done=2)
    first = _checkin(client, node, booted_secret(run), boot_id="b1")
    older = AgentSession.objects.get(node=node)
    agent_link.send(older, run, "secure_erase", "secure_erase", {})
    AgentCommand.objects.update(status="sent")  # running when the node reboots: judged lost
    arm_for_boot(node.pk)
    second = _checkin(client, node, booted_secret(run), boot_id="b2")
    assert first.json()["poll_s"] == second.json()["poll_s"] == poll_interval(node.pk) == 2.0
    assert AgentCommand.objects.get().status == "lost"


def test_a_check_in_without_a_run_is_told_the_idle_interval(client, node):
    credential, secret = mint_host_credential(node, None)
    arm_for_boot(node.pk)
    answer = _checkin(client, node, secret, environment="host_os")
    assert answer.status_code == 200, answer.content
    assert answer.json()["poll_s"] == poll_interval(node.pk) == 30.0


def test_a_check_in_sets_the_liveness_deadline_from_the_interval_before_it(client, node):
    run = make_run(node, phases_done=PHASE_NAMES.index("wait_for_agent"))  # an in-band phase
    before = timezone.now()
    _checkin(client, node, booted_secret(run))
    # No boot of the node checked in before: the settled interval (10 s), four polls of it.
    deadline = AgentSession.objects.get().expected_by - before
    assert 40 <= deadline.total_seconds() < 41


def test_a_result_tells_the_interval_a_read_after_it_gives(client, checked_in):
    run, session, token, command = checked_in
    answer = _report(client, token, command.pk)
    assert answer.json()["poll_s"] == poll_interval(run.node_id) == 2.0
    # Another command of the node still runs: the agent waits for it (its result wakes it).
    running = agent_link.send(session, run, "burn_in", "burn_in", {})
    AgentCommand.objects.filter(pk=running.pk).update(status="sent")
    third = agent_link.send(session, run, "inventory", "inventory", {})
    answer = _report(client, token, third.pk)
    assert answer.json()["poll_s"] == poll_interval(run.node_id) == 30.0
    # The run ended meanwhile: idle.
    Run.objects.filter(pk=run.pk).update(status="succeeded")
    answer = _report(client, token, running.pk)
    assert answer.json()["poll_s"] == poll_interval(run.node_id) == 30.0


def test_reports_out_of_order_are_refused_as_before(client, checked_in, node):
    run, session, token, command = checked_in
    unknown = _report(client, token, command.pk + 100)
    assert unknown.status_code == 403 and "unknown command" in unknown.json()["error"]
    # An id past any database integer is an unknown command too, not a server error.
    for past in (2**63, 10**30):
        answer = _report(client, token, past)
        assert answer.status_code == 403 and "unknown command" in answer.json()["error"]
    # A command of an older boot of the same node: the new boot's token may not close it.
    AgentSession.objects.filter(pk=session.pk).update(boot_id="old")
    older = AgentSession.objects.create(
        node=node, boot_id="b0", environment="ephemeral", token_hash="0" * 64
    )
    AgentCommand.objects.filter(pk=command.pk).update(session=older)
    other_boot = _report(client, token, command.pk)
    assert other_boot.status_code == 403 and "another boot" in other_boot.json()["error"]
    assert AgentCommand.objects.get(pk=command.pk).status == "sent"
    AgentSession.objects.filter(pk=session.pk).update(revoked_at=timezone.now())
    AgentCommand.objects.filter(pk=command.pk).update(session=session)
    assert _report(client, token, command.pk).status_code == 401
    assert AgentCommand.objects.get(pk=command.pk).status == "sent"
    # Recorded (one event for a source's refusals of a minute: fleet.refusals).
    assert Event.objects.filter(kind=EventKind.AGENT_REFUSED, node=node).exists()


def test_serving_booting_firmware_and_agents_decrypts_no_bmc_password(client, node, monkeypatch):
    """Nothing a boot or an agent asks for needs the node's BMC password: their reads leave it
    out, so no request pays to decrypt it."""
    run = make_run(node, phases_done=2)
    secret = booted_secret(run)
    assert node.bmc_password  # there is one to decrypt
    decrypted = []
    real = fleet_fields.decrypt
    monkeypatch.setattr(fleet_fields, "decrypt", lambda text: decrypted.append(1) or real(text))

    script = client.get("/boot/v1/ipxe", {"mac": node.mac_addresses[0]})
    assert script.status_code == 200 and secret in script.content.decode()
    token = _checkin(client, node, secret).json()["token"]
    session = AgentSession.objects.get(node=node)
    command = agent_link.send(session, run, "secure_erase", "secure_erase", {})
    poll = client.post(
        "/agent/v1/poll", json.dumps({"known": []}), content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )  # fmt: skip
    assert [c["id"] for c in poll.json()["commands"]] == [command.pk]
    log = client.post(
        f"/agent/v1/commands/{command.pk}/log", json.dumps({"text": "erasing\n"}),
        content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}",
    )  # fmt: skip
    assert log.status_code == 200
    assert _report(client, token, command.pk).status_code == 200
    # The per-node ISO's read (a boot by virtual media) too.
    assert by_media_key(ephemeral_credential(run).media_key).node.serial == node.serial
    assert decrypted == []
