"""The boot plane under attack: one redemption per boot Greenlight ordered (issue 30).

An attacker on the management network reads a node's MACs from any DCIM token and sees a boot
credential once (on the wire, in a log). Neither earns a session: the iPXE script carries the
credential only while the boot Greenlight ordered awaits it, and a second redemption stops the
run for a person instead of trusting either boot.
"""

from __future__ import annotations

import json
import random

import pytest
from django.test import Client
from django.utils import timezone

from agent import boot_args
from fleet import refusals
from fleet.choices import EventKind, NodeState
from fleet.models import Event
from provisioning.boot import ipxe_guard
from provisioning.boot.credentials import (
    MAX_BOOTS_ARMED,
    arm_for_boot,
    ephemeral_credential,
    mint_host_credential,
)
from provisioning.choices import RunStatus
from provisioning.models import AgentSession, BootCredential
from tests.factories import make_node
from tests.support.scenes import booted_secret, make_run, walk

pytestmark = pytest.mark.django_db


def _client() -> Client:
    """A source of its own: misses and refusals are counted per source and minute."""
    a, b, c = random.randrange(1, 255), random.randrange(255), random.randrange(1, 255)
    return Client(REMOTE_ADDR=f"10.{a}.{b}.{c}")


def _checkin(client, node, secret, boot_id, environment="ephemeral"):
    body = {
        "serial": node.serial,
        "macs": node.mac_addresses,
        "boot_id": boot_id,
        "environment": environment,
        "credential": secret,
    }
    return client.post("/agent/v1/checkin", json.dumps(body), content_type="application/json")


def _poll(client, token):
    return client.post(
        "/agent/v1/poll",
        json.dumps({"known": []}),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )


def _ipxe(client, mac):
    return client.get("/boot/v1/ipxe", {"mac": mac})


@pytest.fixture
def provisioning_node(rack, manifest):
    node = make_node(rack=rack)
    walk(node, NodeState.PROVISIONING)
    return node


def test_a_mac_earns_no_script_once_the_ordered_boot_checked_in(provisioning_node):
    node, real, attacker = provisioning_node, _client(), _client()
    run = make_run(node, phases_done=2)
    ephemeral_credential(run)
    mac = node.mac_addresses[0]
    # Before Greenlight orders a boot, the MAC earns nothing.
    assert _ipxe(attacker, mac).status_code == 404
    arm_for_boot(node.pk)
    script = _ipxe(real, mac)
    assert script.status_code == 200
    secret = boot_args.parse(script.text.replace("\n", " ")).credential
    assert _checkin(real, node, secret, "real-boot").status_code == 200

    answer = _ipxe(attacker, mac)
    assert answer.status_code == 404
    assert secret not in answer.text and answer.text == _ipxe(attacker, "02:00:00:00:00:01").text


def test_a_replayed_credential_stops_the_run_and_trusts_neither_boot(provisioning_node):
    node, real, attacker = provisioning_node, _client(), _client()
    run = make_run(node, phases_done=2)
    secret = booted_secret(run)
    real_token = _checkin(real, node, secret, "real-boot").json()["token"]

    answer = _checkin(attacker, node, secret, "attacker-boot")

    assert answer.status_code == 403
    assert "someone else redeemed" in answer.json()["error"]
    assert not AgentSession.objects.filter(boot_id="attacker-boot").exists()
    assert _poll(real, real_token).status_code == 401
    run.refresh_from_db()
    node.refresh_from_db()
    assert run.status == RunStatus.ABORTED
    assert node.state == NodeState.FAILED
    address = attacker.defaults["REMOTE_ADDR"]
    assert address in node.attention and "someone else redeemed" in node.attention
    refused = Event.objects.filter(node=node, kind=EventKind.AGENT_REFUSED)
    assert refused.get(message__startswith="someone else redeemed").data["remote"] == address
    # The credential is dead: its medium serves nothing and a new run mints another.
    assert BootCredential.objects.get(run=run).revoked_at is not None
    assert _ipxe(attacker, node.mac_addresses[0]).status_code == 404


def test_the_same_boot_asking_again_is_refused_without_stopping_the_run(provisioning_node):
    # The answer to a check-in was lost and the agent retries: not someone else.
    node, real = provisioning_node, _client()
    run = make_run(node, phases_done=2)
    secret = booted_secret(run)
    token = _checkin(real, node, secret, "real-boot").json()["token"]

    again = _checkin(real, node, secret, "real-boot")

    assert again.status_code == 403 and "already checked in" in again.json()["error"]
    run.refresh_from_db()
    assert run.status != RunStatus.ABORTED
    assert _poll(real, token).status_code == 200


def test_a_reboot_greenlight_orders_rearms_the_credential_once(provisioning_node):
    node, real = provisioning_node, _client()
    run = make_run(node, phases_done=2)
    secret = booted_secret(run)
    first = _checkin(real, node, secret, "boot-1").json()["token"]

    arm_for_boot(node.pk, ["ephemeral"])
    second = _checkin(real, node, secret, "boot-2")

    assert second.status_code == 200
    assert _poll(real, first).status_code == 401  # the older boot's token ended
    assert _poll(real, second.json()["token"]).status_code == 200
    run.refresh_from_db()
    assert run.status != RunStatus.ABORTED


def test_two_reboots_greenlight_ordered_are_two_redemptions_and_no_more(provisioning_node):
    # A reset repeated while the first boot was slow boots the node twice: both are Greenlight's.
    node, real, other = provisioning_node, _client(), _client()
    run = make_run(node, phases_done=2)
    secret = booted_secret(run)
    arm_for_boot(node.pk, ["ephemeral"])

    assert _checkin(real, node, secret, "slow-boot").status_code == 200
    assert _checkin(real, node, secret, "second-boot").status_code == 200
    third = _checkin(other, node, secret, "third-boot")

    assert third.status_code == 403 and "someone else redeemed" in third.json()["error"]


def test_resets_that_never_happened_stockpile_no_redemptions(provisioning_node):
    node = provisioning_node
    run = make_run(node, phases_done=2)
    booted_secret(run)
    for _ in range(10):
        arm_for_boot(node.pk)
    credential = BootCredential.objects.get(run=run)
    assert credential.boots_armed == MAX_BOOTS_ARMED


def test_a_credential_never_armed_is_refused_and_contests_nothing(provisioning_node):
    node, attacker = provisioning_node, _client()
    run = make_run(node, phases_done=2)
    _, host_secret = mint_host_credential(node, run)

    answer = _checkin(attacker, node, host_secret, "early", environment="host_os")

    assert answer.status_code == 403 and "no boot of the node ordered" in answer.json()["error"]
    run.refresh_from_db()
    node.refresh_from_db()
    assert run.status != RunStatus.ABORTED and not node.attention


def test_a_host_os_reboot_with_no_run_is_refused_not_contested(rack, manifest):
    # In service, the tenant owns the power button: its reboot is no theft, and no session.
    node = make_node(rack=rack)
    walk(node, NodeState.IN_SERVICE)
    _, host_secret = mint_host_credential(node, None)
    arm_for_boot(node.pk)
    client = _client()
    assert _checkin(client, node, host_secret, "os-1", environment="host_os").status_code == 200

    answer = _checkin(client, node, host_secret, "os-2", environment="host_os")

    assert answer.status_code == 403
    node.refresh_from_db()
    assert not node.attention
    assert BootCredential.objects.get(node=node).revoked_at is None


def test_ipxe_misses_are_recorded_counted_and_throttled_per_source(provisioning_node, monkeypatch):
    # One minute throughout: a scan that straddled a minute's end would start a new window.
    frozen = timezone.now()
    monkeypatch.setattr(ipxe_guard.timezone, "now", lambda: frozen)
    monkeypatch.setattr(refusals.timezone, "now", lambda: frozen)
    monkeypatch.setattr(ipxe_guard, "MISSES_PER_WINDOW", 5)
    scanner, bystander = _client(), _client()
    before = ipxe_guard.totals()
    for n in range(ipxe_guard.MISSES_PER_WINDOW):
        assert _ipxe(scanner, f"02:00:00:00:{n // 256:02x}:{n % 256:02x}").status_code == 404

    throttled = _ipxe(scanner, provisioning_node.mac_addresses[0])

    assert throttled.status_code == 429 and throttled["Retry-After"]
    assert _ipxe(bystander, "02:00:00:00:ff:ff").status_code == 404
    after = ipxe_guard.totals()
    assert after["misses"] - before["misses"] == ipxe_guard.MISSES_PER_WINDOW + 1
    assert after["throttled"] - before["throttled"] == 1
    # A scan leaves a trace, bounded: one event per source and minute, not one per guess.
    address = scanner.defaults["REMOTE_ADDR"]
    traces = Event.objects.filter(kind=EventKind.BOOT_REFUSED, data__remote=address)
    assert traces.count() == 1
    metrics = Client().get("/metrics").content.decode()
    assert f"greenlight_ipxe_misses_total {float(after['misses'])}" in metrics
    assert f"greenlight_ipxe_throttled_total {float(after['throttled'])}" in metrics
