"""The API of rack-scale systems (issue 34): a rack with its members (kind, slot, position,
height, node, state), its NVLink domain and fabric status ("unknown" without an observation),
the rack's decisions as POST actions, who may make them, and queries that do not grow with the
number of racks."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from fleet.choices import NodeState, RackState
from fleet.models import RackSystem, SkuMember
from tests.support import rack_scenes

from .conftest import client_for

pytestmark = pytest.mark.django_db
URL = "/api/v1/rack-systems/"


def test_a_rack_system_carries_its_members_domain_and_fabric_verdict(dora):
    system, members = rack_scenes.awaiting_nvl72()
    SkuMember.objects.filter(sku=system.sku, kind="power_shelf").update(height_u=2)
    response = client_for(dora).get(URL)
    assert response.status_code == 200
    (body,) = response.json()["results"]
    assert body["rack"]["name"] == "NVL01" and body["sku"]["name"] == "gb200-nvl72"
    assert body["state"] == {"value": "awaiting_approval", "label": "Awaiting approval"}
    assert body["domain"]["name"] == "NVL01-nvl72"
    assert body["fabric"]["verdict"] == {"value": "pass", "label": "Passed"}
    assert body["fabric"]["summary"].startswith("72 GPUs of 18 compute trays in one clique")
    assert body["fabric"]["rack_run"] and body["fabric"]["findings"] == []
    assert len(body["members"]) == 35
    tray = members["compute_tray"][4]
    row = next(m for m in body["members"] if m["node"]["id"] == tray.pk)
    assert row == {
        "kind": {"value": "compute_tray", "label": "Compute tray"},
        "slot": 5,
        "position": tray.position,
        "height_u": 1,
        "node": {
            "id": tray.pk,
            "url": f"http://testserver/api/v1/nodes/{tray.pk}/",
            "display": tray.serial,
            "serial": tray.serial,
        },
        "state": {"value": "awaiting_approval", "label": "Awaiting approval"},
    }
    shelves = [m for m in body["members"] if m["kind"]["value"] == "power_shelf"]
    assert len(shelves) == 8 and {m["height_u"] for m in shelves} == {2}
    assert sorted(m["slot"] for m in shelves) == list(range(1, 9))
    # A node says what it is too.
    node = client_for(dora).get(f"/api/v1/nodes/{tray.pk}/").json()
    assert node["kind"]["value"] == "compute_tray" and node["member_index"] == 5

    domains = client_for(dora).get("/api/v1/nvlink-domains/").json()["results"]
    assert [(d["name"], [s["rack"]["name"] for s in d["systems"]]) for d in domains] == [
        ("NVL01-nvl72", ["NVL01"])
    ]


def test_an_unobserved_fabric_is_unknown_never_passed(dora):
    system, _ = rack_scenes.awaiting_nvl72(fabric="running")
    body = client_for(dora).get(f"{URL}{system.pk}/").json()
    assert body["fabric"]["verdict"]["value"] == "unknown"
    assert body["fabric"]["observed_at"] is None


def test_the_list_reads_in_the_same_queries_for_one_rack_or_three(dora):
    rack_scenes.awaiting_nvl72("NVL01")
    client = client_for(dora)
    with CaptureQueriesContext(connection) as one:
        assert len(client.get(URL).json()["results"]) == 1
    rack_scenes.awaiting_nvl72("NVL02", fabric="fail")
    rack_scenes.awaiting_nvl72("NVL03", runs=False)
    with CaptureQueriesContext(connection) as three:
        results = client.get(URL).json()["results"]
    assert [r["fabric"]["verdict"]["value"] for r in results] == ["pass", "fail", "unknown"]
    assert len(three) == len(one), [q["sql"][:120] for q in three.captured_queries]


def test_a_site_tech_approves_the_rack_in_one_post(bob, dora):
    system, _ = rack_scenes.awaiting_nvl72()
    assert client_for(dora).post(f"{URL}{system.pk}/approve/").status_code == 403
    response = client_for(bob).post(f"{URL}{system.pk}/approve/", {"reason": "ok"}, format="json")
    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["state"] == RackState.IN_SERVICE and len(body["members"]) == 35
    assert set(system.rack.nodes.values_list("state", flat=True)) == {NodeState.IN_SERVICE}
    again = client_for(bob).post(f"{URL}{system.pk}/approve/")
    assert again.status_code == 409 and again.json()["state"] == RackState.IN_SERVICE


def test_a_rack_whose_fabric_failed_is_refused_with_the_reason(bob):
    system, _ = rack_scenes.awaiting_nvl72(fabric="fail")
    response = client_for(bob).post(f"{URL}{system.pk}/approve/")
    assert response.status_code == 400
    assert "NVLink fabric verdict is failed" in response.json()["detail"]
    assert "tray c04" in response.json()["detail"] and "GPU 2" in response.json()["detail"]
    assert RackSystem.objects.get(pk=system.pk).state == RackState.AWAITING_APPROVAL


def test_quarantining_the_rack_needs_a_reason(bob):
    system, _ = rack_scenes.awaiting_nvl72()
    assert client_for(bob).post(f"{URL}{system.pk}/quarantine/").status_code == 400
    response = client_for(bob).post(
        f"{URL}{system.pk}/quarantine/", {"reason": "coolant leak"}, format="json"
    )
    assert response.status_code == 200 and response.json()["state"] == RackState.DEGRADED
    assert set(system.rack.nodes.values_list("state", flat=True)) == {NodeState.QUARANTINED}
