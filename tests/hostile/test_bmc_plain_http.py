"""http:// BMC addresses: refused everywhere a node gets one, unless an admin gives a reason,
which is recorded as an event; the Redfish client then talks plain HTTP to that node only."""

from __future__ import annotations

import json

import pytest
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command
from django.urls import reverse

from fleet.choices import EventKind
from fleet.enrollment_csv import enroll_csv
from fleet.models import Event, Node
from lab.hall import LabHall
from provisioning.intake.enrollment import EnrollmentError, enroll_node
from provisioning.redfish.bmc import client_for
from tests import factories
from tests.fleet.test_bmc_password import _node_form
from tests.fleet.test_enrollment_csv import HEADER

REASON = "Supermicro X11 BMC 1.73 has no TLS; on the isolated OOB VLAN 12"


def test_a_node_with_a_plain_http_bmc_needs_a_reason(rack, sku):
    node = factories.make_node(rack=rack, bmc_address="http://10.0.0.9")
    with pytest.raises(ValidationError) as caught:
        node.full_clean()
    assert "Plain http:// would send the BMC password unencrypted" in str(
        caught.value.message_dict["bmc_address"]
    )
    node.bmc_plain_http_reason = REASON
    node.full_clean()


def test_the_client_refuses_a_plain_http_node_without_the_mark(rack, sku):
    node = factories.make_node(rack=rack, bmc_address="http://127.0.0.1:9")
    with pytest.raises(ValueError, match="plain HTTP"):
        client_for(node)
    node.bmc_plain_http_reason = REASON
    assert client_for(node).transport.plain_http


def test_an_admin_marks_a_bmc_plain_http_with_a_reason_and_an_event(client, alice, rack, sku):
    node = factories.make_node(rack=rack)
    client.force_login(alice)
    url = reverse("admin:fleet_node_change", args=[node.pk])

    refused = client.post(url, _node_form(node, bmc_address="http://10.0.0.9"))
    assert refused.status_code == 200
    assert "Plain http:// would send the BMC password unencrypted" in refused.content.decode()
    node.refresh_from_db()
    assert node.bmc_address.startswith("https://")

    marked = client.post(
        url, _node_form(node, bmc_address="http://10.0.0.9", bmc_plain_http_reason=REASON)
    )
    assert marked.status_code == 302, marked.content.decode()[:2000]
    node.refresh_from_db()
    assert node.bmc_address == "http://10.0.0.9" and node.bmc_plain_http_reason == REASON
    event = Event.objects.get(node=node, data__bmc_plain_http=True)
    assert event.actor == alice and event.kind == EventKind.UPDATED
    assert event.message.endswith(REASON)


def test_a_csv_row_with_a_plain_http_bmc_is_refused_by_line(rack, sku, bob):
    text = (
        f"{HEADER}\nSNH001,hgx-h100-8gpu,hall-1,R01,1,http://10.0.0.1,root,pw,02:00:00:00:01:01,\n"
    )
    report = enroll_csv(text, actor=bob, source="rack.csv")
    assert not report.ok
    assert any(
        e.line == 2 and e.field == "bmc_address" and "Plain http://" in e.message
        for e in report.errors
    ), report.errors
    assert not Node.objects.exists()


def test_enrollment_over_plain_http_needs_a_reason_and_records_it(sku, bob):
    with LabHall(1, flavours=("supermicro",), speed=0, seed=3) as hall:
        bmc = hall.bmc(0)
        user, password = bmc.node.username, bmc.node.password
        before = bmc.node.requests
        with pytest.raises(EnrollmentError, match="plain HTTP"):
            enroll_node(bmc.http_url, user, password, sku=sku, actor=bob)
        assert bmc.node.requests == before  # refused before the password went anywhere
        result = enroll_node(
            bmc.http_url, user, password, sku=sku, actor=bob, plain_http_reason=REASON
        )
    node = result.node
    assert node.bmc_address == bmc.http_url and node.bmc_plain_http_reason == REASON
    event = Event.objects.get(node=node, data__bmc_plain_http=True)
    assert event.actor == bob and REASON in event.message


def test_the_admin_enroll_form_takes_the_plain_http_reason(client, alice, sku):
    client.force_login(alice)
    url = reverse("admin:fleet_node_enroll")
    with LabHall(1, flavours=("dell",), speed=0, seed=5) as hall:
        bmc = hall.bmc(0)
        data = {
            "bmc": bmc.http_url,
            "username": bmc.node.username,
            "password": bmc.node.password,
            "sku": sku.pk,
        }
        refused = client.post(url, data)
        assert refused.status_code == 200
        assert "is plain HTTP, which would send the BMC password unencrypted" in (
            refused.content.decode()
        )
        enrolled = client.post(url, {**data, "plain_http_reason": REASON})
    assert enrolled.status_code == 302, enrolled.content.decode()[:2000]
    node = Node.objects.get(serial=bmc.node.serial)
    assert node.bmc_plain_http_reason == REASON
    assert Event.objects.filter(node=node, data__bmc_plain_http=True, actor=alice).exists()


def test_the_probe_command_refuses_plain_http_unless_asked(capsys):
    with LabHall(1, flavours=("hpe",), speed=0, seed=9) as hall:
        bmc = hall.bmc(0)
        login = ["--username", bmc.node.username, "--password", bmc.node.password]
        with pytest.raises(CommandError, match="plain HTTP"):
            call_command("redfish_probe", bmc.http_url, *login)
        call_command("redfish_probe", bmc.http_url, *login, "--plain-http")
    assert json.loads(capsys.readouterr().out)["serial"] == bmc.node.serial
