"""Filters, ordering and cursor pagination of the lists."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from fleet.choices import EventKind
from fleet.events import record
from fleet.models import Node
from tests import factories

from .conftest import client_for


def serials(client, url="/api/v1/nodes/", **params) -> list[str]:
    response = client.get(url, params)
    assert response.status_code == 200, response.content[:300]
    return [item["serial"] for item in response.json()["results"]]


@pytest.fixture
def reader(fleet, dora):
    return client_for(dora)


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"state": "quarantined"}, ["SN-BAD"]),
        ({"state": ["quarantined", "in_service"]}, ["SN-BAD", "SN-SERVED"]),
        ({"rack_name": "R02"}, ["SN-NEW", "SN-SERVED"]),
        ({"site_name": "hall-1"}, ["SN-BAD", "SN-GOOD", "SN-NEW", "SN-SERVED"]),
        ({"sku_name": "hgx-h100-8gpu", "state": "enrolled"}, ["SN-NEW"]),
        ({"manifest_version": "1.0.0"}, ["SN-BAD", "SN-GOOD", "SN-SERVED"]),
        ({"last_verdict": "fail"}, ["SN-BAD"]),
        ({"last_verdict": "pass"}, ["SN-GOOD"]),
        ({"q": "serv"}, ["SN-SERVED"]),
        ({"component_serial": "SN-NEW-GPU1"}, ["SN-NEW"]),
        ({"component_kind": "dpu"}, ["SN-BAD", "SN-GOOD", "SN-NEW", "SN-SERVED"]),
    ],
)
def test_node_filters(reader, params, expected):
    assert serials(reader, **params) == expected


def test_node_filters_by_ids(fleet, reader):
    r2 = fleet["racks"][1]
    assert serials(reader, rack=r2.pk) == ["SN-NEW", "SN-SERVED"]
    assert serials(
        reader, site=r2.site_id, sku=fleet["nodes"]["SN-NEW"].sku_id, state="enrolled"
    ) == ["SN-NEW"]


def test_changed_since_sees_state_changes_and_events(fleet, reader):
    long_ago = timezone.now() - timedelta(days=3)
    Node.objects.update(state_changed_at=long_ago)
    since = (timezone.now() - timedelta(hours=1)).isoformat()
    # The fixture recorded events for SN-GOOD and SN-BAD just now.
    assert serials(reader, changed_since=since) == ["SN-BAD", "SN-GOOD"]
    Node.objects.filter(serial="SN-NEW").update(state_changed_at=timezone.now())
    assert serials(reader, changed_since=since) == ["SN-BAD", "SN-GOOD", "SN-NEW"]
    assert serials(reader, changed_since=timezone.now().isoformat()) == []


def test_bad_filter_values_are_400_not_500(reader):
    for params in (
        {"state": "nonsense"},
        {"changed_since": "yesterday"},
        {"rack": "abc"},
        {"last_verdict": "maybe"},
    ):
        assert reader.get("/api/v1/nodes/", params).status_code == 400, params


def test_ordering(reader):
    assert serials(reader, ordering="-serial") == ["SN-SERVED", "SN-NEW", "SN-GOOD", "SN-BAD"]
    assert serials(reader, ordering="id") == ["SN-GOOD", "SN-BAD", "SN-NEW", "SN-SERVED"]


def test_cursor_pagination_walks_every_node_once(fleet, reader):
    for i in range(7):
        factories.make_node(f"SN-P{i:02d}", rack=fleet["racks"][1], position=20 + i)
    seen: list[str] = []
    url = "/api/v1/nodes/?page_size=3"
    pages = 0
    while url:
        page = reader.get(url).json()
        assert len(page["results"]) <= 3
        seen += [n["serial"] for n in page["results"]]
        url = page["next"]
        pages += 1
    assert pages == 4
    assert seen == sorted(Node.objects.values_list("serial", flat=True))
    assert "cursor=" in reader.get("/api/v1/nodes/?page_size=3").json()["next"]


def test_page_size_is_capped(reader):
    assert reader.get("/api/v1/nodes/", {"page_size": 100000}).status_code == 200


@pytest.mark.parametrize(
    ("url", "params", "count"),
    [
        ("/api/v1/runs/", {"status": "failed"}, 1),
        ("/api/v1/runs/", {"serial": "SN-GOOD"}, 1),
        ("/api/v1/runs/", {"manifest_version": "1.0.0"}, 2),
        ("/api/v1/gate-results/", {"verdict": "fail"}, 1),
        ("/api/v1/gate-results/", {"gate": "attestation"}, 2),
        ("/api/v1/gate-results/", {"serial": "SN-GOOD", "verdict": "pass"}, 2),
        ("/api/v1/decisions/", {"kind": "approve"}, 1),
        ("/api/v1/wipe-requests/", {"tenant": "acme"}, 1),
        ("/api/v1/wipe-requests/", {"tenant": "other"}, 0),
        ("/api/v1/wipe-certificates/", {"result": "passed"}, 1),
        ("/api/v1/events/", {"kind": ["phase_retry", "phase_failed"]}, 3),
        ("/api/v1/events/", {"serial": "SN-BAD"}, 2),
        ("/api/v1/manifests/", {"status": "published"}, 1),
        ("/api/v1/manifests/", {"status": "draft"}, 0),
        ("/api/v1/acceptance-profiles/", {"version": "1.0.0"}, 1),
        ("/api/v1/racks/", {"name": "R02"}, 1),
        ("/api/v1/sites/", {"name": "hall-1"}, 1),
        ("/api/v1/skus/", {"name": "hgx-h100-8gpu"}, 1),
    ],
)
def test_other_filters(reader, url, params, count):
    response = reader.get(url, params)
    assert response.status_code == 200
    assert len(response.json()["results"]) == count


def test_events_since_and_after_id(fleet, reader):
    node = fleet["nodes"]["SN-NEW"]
    first = record(node, EventKind.UPDATED, actor_label="t")
    second = record(node, EventKind.UPDATED, actor_label="t")
    ids = [e["id"] for e in reader.get("/api/v1/events/", {"after_id": first.pk}).json()["results"]]
    assert ids == [second.pk]
    future = (timezone.now() + timedelta(minutes=1)).isoformat()
    assert reader.get("/api/v1/events/", {"since": future}).json()["results"] == []
