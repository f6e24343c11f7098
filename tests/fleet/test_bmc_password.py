"""The BMC password: encrypted at rest, write-only in the admin, absent from logs and events."""

from __future__ import annotations

import json
import logging

import pytest
from django.db import connection
from django.urls import reverse

from fleet import fields as fleet_fields
from fleet.choices import EventKind, NodeState
from fleet.enrollment_csv import enroll_csv
from fleet.lifecycle import transition
from fleet.models import Event, Node
from tests import factories

pytestmark = pytest.mark.django_db

SECRET = "Tr0ub4dor-bmc-&3"


def raw_password_column(node: Node) -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT bmc_password FROM fleet_node WHERE id = %s", [node.pk])
        return cursor.fetchone()[0]


def all_event_text() -> str:
    return json.dumps(list(Event.objects.values("message", "data", "actor_label")), default=str)


def test_the_raw_column_holds_no_plaintext(rack, sku):
    node = factories.make_node(rack=rack, bmc_password=SECRET)
    raw = raw_password_column(node)
    assert raw.startswith("fernet:")
    assert SECRET not in raw
    assert Node.objects.get(pk=node.pk).bmc_password == SECRET


def test_a_node_is_decrypted_only_when_its_password_is_read(rack, sku, monkeypatch):
    # Most reads of a node (an agent's poll, a page or export of nodes) never use the password:
    # they must not pay a decrypt for it, nor a save of such a node encrypt it again.
    node = factories.make_node(rack=rack, bmc_password=SECRET)
    stored = raw_password_column(node)
    calls = []
    for name in ("decrypt", "encrypt"):
        real = getattr(fleet_fields, name)
        monkeypatch.setattr(
            fleet_fields, name, lambda text, real=real, name=name: calls.append(name) or real(text)
        )

    loaded = list(Node.objects.filter(pk=node.pk)) + [Node.objects.get(serial=node.serial)]
    assert SECRET not in repr(vars(loaded[0])) and stored not in repr(vars(loaded[0]))
    loaded[0].hostname = "renamed"
    loaded[0].save()
    assert calls == []
    assert raw_password_column(node) == stored  # written back as read

    assert loaded[1].bmc_password == SECRET
    assert loaded[1].bmc_password == SECRET  # decrypted once, then kept
    assert calls == ["decrypt"]
    loaded[1].bmc_password = "n3w-" + SECRET
    loaded[1].save()
    assert calls == ["decrypt", "encrypt"]
    assert Node.objects.get(pk=node.pk).bmc_password == "n3w-" + SECRET


def test_the_admin_pages_never_show_the_password(client, alice, rack, sku):
    node = factories.make_node(rack=rack, bmc_password=SECRET)
    client.force_login(alice)
    for url in [
        reverse("admin:fleet_node_changelist"),
        reverse("admin:fleet_node_change", args=[node.pk]),
        reverse("admin:fleet_node_history", args=[node.pk]),
        reverse("admin:fleet_event_changelist"),
        reverse("admin:fleet_node_add"),
    ]:
        response = client.get(url)
        assert response.status_code == 200, url
        assert SECRET not in response.content.decode(), url
        assert raw_password_column(node) not in response.content.decode(), url
    html = client.get(reverse("admin:fleet_node_change", args=[node.pk])).content.decode()
    assert '<input type="password" name="bmc_password"' in html
    assert "Leave blank to keep the stored password." in html


def _node_form(node: Node, **changes) -> dict:
    data = {
        "serial": node.serial,
        "hostname": node.hostname,
        "sku": node.sku_id,
        "rack": node.rack_id,
        "position": node.position,
        "bmc_address": node.bmc_address,
        "bmc_username": node.bmc_username,
        "bmc_password": "",
        "mac_addresses": json.dumps(node.mac_addresses),
        "bios_attributes": "{}",
        # Fields with a callable default carry their initial value in a hidden input.
        "initial-mac_addresses": json.dumps(node.mac_addresses),
        "initial-bios_attributes": "{}",
        "manifest": "",
        "attention": "",
        "tenant": "",
        "allocation_ref": "",
        "allocated_at_0": "",
        "allocated_at_1": "",
        "components-TOTAL_FORMS": "0",
        "components-INITIAL_FORMS": "0",
        "components-MIN_NUM_FORMS": "0",
        "components-MAX_NUM_FORMS": "1000",
    }
    data.update(changes)
    return data


def test_a_blank_password_on_edit_keeps_the_stored_one(client, alice, rack, sku):
    node = factories.make_node(rack=rack, bmc_password=SECRET)
    client.force_login(alice)
    url = reverse("admin:fleet_node_change", args=[node.pk])
    response = client.post(url, _node_form(node, hostname="gpu-renamed"))
    assert response.status_code == 302, response.content.decode()[:2000]
    node.refresh_from_db()
    assert node.hostname == "gpu-renamed" and node.bmc_password == SECRET
    event = Event.objects.get(node=node, kind=EventKind.UPDATED)
    assert event.actor == alice and event.data == {"fields": ["hostname"]}


def test_a_new_password_is_stored_encrypted_and_named_not_shown(client, alice, rack, sku, caplog):
    node = factories.make_node(rack=rack, bmc_password="old-password")
    client.force_login(alice)
    caplog.set_level(logging.DEBUG)
    url = reverse("admin:fleet_node_change", args=[node.pk])
    response = client.post(url, _node_form(node, bmc_password=SECRET))
    assert response.status_code == 302
    node.refresh_from_db()
    assert node.bmc_password == SECRET
    assert SECRET not in raw_password_column(node)
    event = Event.objects.get(node=node, kind=EventKind.UPDATED)
    assert event.data == {"fields": ["bmc_password"]}
    assert SECRET not in all_event_text()
    assert SECRET not in caplog.text
    history = client.get(reverse("admin:fleet_node_history", args=[node.pk])).content.decode()
    assert SECRET not in history


def test_adding_a_node_in_the_admin_requires_a_password_and_records_enrollment(
    client, alice, rack, sku
):
    client.force_login(alice)
    node = Node(
        serial="SNADMIN1",
        sku=sku,
        rack=rack,
        position=12,
        bmc_address="https://10.9.9.9",
        bmc_username="root",
        mac_addresses=["02:00:00:09:09:09"],
    )
    form = _node_form(node)
    response = client.post(reverse("admin:fleet_node_add"), form)
    assert response.status_code == 200
    assert not Node.objects.filter(serial="SNADMIN1").exists()
    form["bmc_password"] = SECRET
    response = client.post(reverse("admin:fleet_node_add"), form)
    assert response.status_code == 302
    created = Node.objects.get(serial="SNADMIN1")
    assert created.bmc_password == SECRET and created.state == NodeState.ENROLLED
    assert Event.objects.get(node=created).kind == EventKind.ENROLLED
    assert SECRET not in response.content.decode()


def test_a_refused_form_does_not_send_the_password_back(client, alice, rack, sku):
    node = factories.make_node(rack=rack, bmc_password="kept")
    client.force_login(alice)
    url = reverse("admin:fleet_node_change", args=[node.pk])
    response = client.post(url, _node_form(node, bmc_password=SECRET, position="99"))
    assert response.status_code == 200
    assert "outside the rack" in response.content.decode()
    assert SECRET not in response.content.decode()


def test_no_log_or_event_carries_the_password(rack, sku, caplog):
    caplog.set_level(logging.DEBUG)
    text = (
        "serial,sku,site,rack,position,bmc_address,bmc_username,bmc_password,macs\n"
        f"SNS001,hgx-h100-8gpu,hall-1,R01,3,https://10.0.0.1,root,{SECRET},02:00:00:00:0a:01\n"
        f"SNS002,nope,hall-1,R01,4,https://10.0.0.2,root,{SECRET},02:00:00:00:0a:02\n"
    )
    refused = enroll_csv(text)
    assert not refused.ok and SECRET not in repr(refused)
    report = enroll_csv(text.replace(",nope,", ",hgx-h100-8gpu,"))
    assert report.ok, report.errors
    node = Node.objects.get(serial="SNS001")
    transition(node, NodeState.PROVISIONING, reason="test")
    transition(node, NodeState.FAILED)
    assert Event.objects.count() == 4
    assert SECRET not in all_event_text()
    assert SECRET not in caplog.text
    assert "enrollment from CSV" in caplog.text
