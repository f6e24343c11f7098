"""The wipe requests page (fleet admins, CSRF) and the certificate's printable page and JSON."""

from __future__ import annotations

import json

import pytest
from django.test import Client
from django.urls import reverse

from fleet.choices import NodeState
from fleet.lifecycle import transition
from provisioning.day2.wipes.certificates import erase_finished
from provisioning.day2.wipes.requests import request_wipe
from provisioning.models import WipeRequest
from tests.api.conftest import client_for

from .conftest import ALLOCATION, TENANT, allocated_node, drive_report

WIPES = reverse("provisioning:wipes")


def _form(nodes, **kw) -> dict:
    return {"tenant": TENANT, "allocation_ref": ALLOCATION, "nodes": "\n".join(nodes)} | kw


def test_alice_files_a_wipe_from_the_page(client, alice, nodes):
    client.force_login(alice)
    assert client.get(WIPES).status_code == 200

    asked = client.post(WIPES, _form([f"{nodes[0].serial},", nodes[1].serial]))

    # First the confirmation, naming the nodes and the tenant; nothing is filed yet.
    page = asked.content.decode()
    assert asked.status_code == 200 and not WipeRequest.objects.exists()
    assert f"Erase 2 nodes of tenant {TENANT}?" in page and ALLOCATION in page
    assert nodes[0].serial in page and nodes[1].serial in page
    assert {n.state for n in nodes} == {NodeState.IN_SERVICE}
    response = client.post(WIPES, _form([nodes[0].serial, nodes[1].serial], confirm="1"))
    assert response.status_code == 302 and response.url == WIPES
    wipe = WipeRequest.objects.get()
    assert (wipe.tenant, wipe.requested_by, wipe.nodes.count()) == (TENANT, alice, 2)
    page = client.get(WIPES).content.decode()
    assert f"Filed wipe request {wipe.pk}" in page and nodes[0].serial in page


def test_a_refusal_is_shown_with_its_reason_and_nothing_is_filed(client, alice, rack, manifest):
    theirs = allocated_node(rack, tenant="globex")
    client.force_login(alice)
    response = client.post(WIPES, _form([theirs.serial]))
    assert response.status_code == 400
    assert f"node {theirs.serial} is allocated to another tenant" in response.content.decode()
    assert not WipeRequest.objects.exists()


def test_an_unknown_serial_is_named(client, alice, nodes):
    client.force_login(alice)
    response = client.post(WIPES, _form(["SN-NOPE"]))
    assert response.status_code == 400 and "No node SN-NOPE." in response.content.decode()


def test_the_form_needs_its_csrf_token(alice, nodes):
    client = Client(enforce_csrf_checks=True)
    client.force_login(alice)
    assert client.post(WIPES, _form([nodes[0].serial])).status_code == 403
    assert not WipeRequest.objects.exists()


@pytest.mark.parametrize("who", ["bob", "dora", "charlie"])
def test_only_people_who_may_file_wipes_see_the_page(client, request, nodes, who):
    client.force_login(request.getfixturevalue(who))
    assert client.get(WIPES).status_code == 403
    assert client.post(WIPES, _form([nodes[0].serial])).status_code == 403
    assert not WipeRequest.objects.exists()


def test_anonymous_people_are_sent_to_log_in(client):
    assert client.get(WIPES).status_code == 302


@pytest.fixture
def certificate(alice, nodes):
    request_wipe(nodes, TENANT, ALLOCATION, alice)
    node = nodes[0]
    node.refresh_from_db()
    transition(node, NodeState.WIPING, actor_label="test")
    run = node.runs.get()
    failed = drive_report(node, 1, result="failed", exit_code=5, verification="nvme exited 5")
    return erase_finished(run, [drive_report(node, 0), failed], passed=False)


def test_the_certificate_prints(client, dora, certificate):
    client.force_login(dora)
    response = client.get(reverse("provisioning:certificate", args=[certificate.pk]))
    assert response.status_code == 200
    html = response.content.decode()
    assert "@media print" in html
    for text in [
        certificate.node.serial,
        f"{certificate.node.serial}-D1",
        "NIST SP 800-88 Rev. 1",
        "nvme exited 5",
        "FAILED",
        "alice",
        ALLOCATION,
        "This certificate covers the erase of the drives listed, and only that.",
        f"is stated on wipe request {certificate.wipe_request_id}",
    ]:
        assert text in html, text


def test_the_requests_page_names_the_node_that_failed_and_why(client, alice, certificate):
    client.force_login(alice)
    html = client.get(WIPES).content.decode()
    node = certificate.node
    assert f"{node.serial}: erase failed on {node.serial}-D1 (certificate {certificate.pk})" in html
    assert f"{node.serial}: erase failed</span>" in html
    body = client_for(alice).get(f"/api/v1/wipe-requests/{certificate.wipe_request_id}/").json()
    assert body["status"]["value"] == "failed"
    assert body["failed_node"]["serial"] == node.serial
    assert body["failure_reason"].startswith(f"erase failed on {node.serial}-D1")


def test_the_certificate_downloads_as_json(client, dora, certificate):
    client.force_login(dora)
    response = client.get(reverse("provisioning:certificate-json", args=[certificate.pk]))
    assert response.status_code == 200
    assert response["Content-Disposition"].startswith("attachment;")
    document = json.loads(response.content)
    assert (document["certificate"], document["result"]) == (certificate.pk, "failed")
    assert [d["result"] for d in document["drives"]] == ["passed", "failed"]


def test_the_api_certificate_states_every_field(dora, certificate):
    body = client_for(dora).get(f"/api/v1/wipe-certificates/{certificate.pk}/").json()
    assert body["node"]["serial"] == certificate.node.serial
    assert (body["tenant"], body["allocation_ref"]) == (TENANT, ALLOCATION)
    assert body["standard"] == "NIST SP 800-88 Rev. 1: Purge by cryptographic erase"
    assert body["scope"].startswith("This certificate covers the erase of the drives listed, and")
    assert body["requested_by"] == "alice" and body["approved_by"] == ""
    assert body["started_at"] and body["finished_at"]
    assert {"model", "serial", "method", "tool", "result", "verification"} <= set(body["drives"][0])


def test_charlie_reads_no_certificate(client, charlie, certificate):
    client.force_login(charlie)
    assert client.get(reverse("provisioning:certificate", args=[certificate.pk])).status_code == 403
    url = reverse("provisioning:certificate-json", args=[certificate.pk])
    assert client.get(url).status_code == 403


def test_the_wipes_admin_lists_requests_and_certificates_read_only(admin_client):
    # Registered by the day-2 wing (provisioning/day2/wipes/admin.py), through provisioning's admin.
    for model in ("wiperequest", "wipecertificate"):
        assert admin_client.get(f"/admin/provisioning/{model}/").status_code == 200
        assert admin_client.get(f"/admin/provisioning/{model}/add/").status_code == 403
