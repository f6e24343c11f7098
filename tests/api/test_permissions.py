"""Who may read and write what: the cast against every endpoint."""

from __future__ import annotations

import pytest

from tests import factories

from .conftest import client_for

LIST_ENDPOINTS = [
    "/api/v1/sites/",
    "/api/v1/racks/",
    "/api/v1/skus/",
    "/api/v1/nodes/",
    "/api/v1/nodes/export.csv",
    "/api/v1/manifests/",
    "/api/v1/acceptance-profiles/",
    "/api/v1/runs/",
    "/api/v1/gate-results/",
    "/api/v1/decisions/",
    "/api/v1/wipe-requests/",
    "/api/v1/wipe-certificates/",
    "/api/v1/events/",
    "/api/v1/rollouts/",
]
READ_STATUS = {"alice": 200, "bob": 200, "dora": 200, "charlie": 403, "anonymous": 401}


@pytest.mark.parametrize("who", list(READ_STATUS))
def test_reads_follow_view_permissions(fleet, cast, who):
    client = client_for(cast[who])
    for url in LIST_ENDPOINTS:
        response = client.get(url)
        assert response.status_code == READ_STATUS[who], (url, response.status_code)


@pytest.mark.parametrize("who", list(READ_STATUS))
def test_api_root_lists_every_route(fleet, cast, who):
    response = client_for(cast[who]).get("/api/v1/")
    # The root lists routes and no data: any signed-in user may see it.
    assert response.status_code == (401 if who == "anonymous" else 200)
    if who != "anonymous":
        assert "wipe-certificates" in response.json()


WRITE_STATUS = {"alice": 201, "bob": 403, "dora": 403, "charlie": 403, "anonymous": 401}


@pytest.mark.parametrize("who", list(WRITE_STATUS))
def test_only_fleet_admins_create_inventory(db, cast, who):
    response = client_for(cast[who]).post("/api/v1/sites/", {"name": f"hall-{who}"}, format="json")
    assert response.status_code == WRITE_STATUS[who]


@pytest.mark.parametrize("who", list(WRITE_STATUS))
def test_only_fleet_admins_create_manifests(db, cast, who):
    factories.make_sku()
    yaml_text = factories.sample_manifest_yaml()
    response = client_for(cast[who]).post(
        "/api/v1/manifests/", {"yaml_text": yaml_text}, format="json"
    )
    assert response.status_code == WRITE_STATUS[who]


@pytest.mark.parametrize("who", ["bob", "dora", "charlie"])
def test_non_admins_cannot_publish(fleet, cast, who):
    draft = fleet["manifest"].clone_as_draft()
    response = client_for(cast[who]).post(f"/api/v1/manifests/{draft.pk}/publish/")
    assert response.status_code == 403
    draft.refresh_from_db()
    assert draft.status == "draft"


@pytest.mark.parametrize(
    "url",
    [
        "/api/v1/nodes/{node}/",
        "/api/v1/runs/{run}/",
        "/api/v1/gate-results/",
        "/api/v1/events/",
        "/api/v1/decisions/",
    ],
)
def test_read_only_endpoints_refuse_writes_even_for_admins(fleet, alice, url):
    node = fleet["nodes"]["SN-GOOD"]
    url = url.format(node=node.pk, run=fleet["runs"]["SN-GOOD"].pk)
    client = client_for(alice)
    assert client.post(url, {}, format="json").status_code == 405
    assert client.patch(url, {"state": "in_service"}, format="json").status_code == 405
    assert client.delete(url).status_code == 405
    node.refresh_from_db()
    assert node.state == "awaiting_approval"


def test_session_login_works_for_the_browsable_api(fleet, dora, client):
    client.force_login(dora)
    response = client.get("/api/v1/nodes/", HTTP_ACCEPT="text/html")
    assert response.status_code == 200
    assert b"SN-GOOD" in response.content


def test_delete_is_not_offered(fleet, alice):
    site = fleet["racks"][0].site
    assert client_for(alice).delete(f"/api/v1/sites/{site.pk}/").status_code == 405
