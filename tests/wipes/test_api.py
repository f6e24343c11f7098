"""POST /api/v1/wipe-requests/: the tenant platform's token files a release; refusals say why."""

from __future__ import annotations

import pytest

from fleet.choices import NodeState
from fleet.roles import TENANT_PLATFORM
from provisioning.models import Run, WipeRequest
from tests import factories
from tests.api.conftest import client_for

from .conftest import ALLOCATION, TENANT, allocated_node

URL = "/api/v1/wipe-requests/"


def _body(nodes, **kw):
    return {"tenant": TENANT, "allocation_ref": ALLOCATION, "nodes": nodes} | kw


def test_the_tenant_platform_token_files_a_wipe_by_serial_and_id(tina, nodes):
    response = client_for(tina).post(URL, _body([nodes[0].serial, nodes[1].pk]), format="json")

    assert response.status_code == 201, response.content
    body = response.json()
    assert body["tenant"] == TENANT and body["allocation_ref"] == ALLOCATION
    assert body["status"]["value"] == "in_progress"
    assert body["requested_by"]["username"] == "tina"
    assert sorted(n["serial"] for n in body["nodes"]) == sorted(n.serial for n in nodes)
    wipe = WipeRequest.objects.get()
    assert wipe.pk == body["id"] and wipe.requested_by == tina
    assert {n.state for n in wipe.nodes.all()} == {NodeState.RELEASING}


def test_the_same_post_again_answers_200_with_the_same_request(tina, nodes):
    client = client_for(tina)
    first = client.post(URL, _body([n.serial for n in nodes]), format="json")
    again = client.post(URL, _body([n.pk for n in nodes]), format="json")
    assert (first.status_code, again.status_code) == (201, 200)
    assert again.json()["id"] == first.json()["id"]
    assert Run.objects.count() == 2


def test_a_refusal_is_409_with_each_reason(alice, rack, manifest):
    # A fleet admin sees the fleet: the reasons name each node (a tenant token's do not).
    theirs = allocated_node(rack, tenant="globex")
    idle = allocated_node(rack, state=NodeState.AWAITING_APPROVAL)

    response = client_for(alice).post(URL, _body([theirs.serial, idle.serial]), format="json")

    assert response.status_code == 409
    assert response.json()["reasons"] == [
        f"node {theirs.serial} is allocated to another tenant, not {TENANT}",
        f"node {idle.serial} is Awaiting approval, not in service",
    ]
    assert not WipeRequest.objects.exists()


@pytest.mark.parametrize(
    "nodes_field, message",
    [([], "empty"), (["SN-NOPE"], "No node SN-NOPE."), ([True], "Expected a node id")],
)
def test_malformed_requests_are_400(tina, nodes, nodes_field, message):
    response = client_for(tina).post(URL, _body(nodes_field), format="json")
    assert response.status_code == 400
    assert message.lower() in str(response.json()).lower()


@pytest.mark.parametrize("who, status", [("bob", 403), ("dora", 403), ("charlie", 403)])
def test_only_fleet_admins_and_the_tenant_platform_may_post(request, nodes, who, status):
    user = request.getfixturevalue(who)
    response = client_for(user).post(URL, _body([n.pk for n in nodes]), format="json")
    assert response.status_code == status
    assert client_for(None).post(URL, _body([nodes[0].pk]), format="json").status_code == 401
    assert not WipeRequest.objects.exists()


def test_a_fleet_admin_files_through_the_api_too(alice, nodes):
    response = client_for(alice).post(URL, _body([n.pk for n in nodes]), format="json")
    assert response.status_code == 201


def test_the_tenant_platform_reads_wipes_but_no_nodes(tina, nodes):
    client = client_for(tina)
    client.post(URL, _body([n.pk for n in nodes]), format="json")
    assert client.get(URL).status_code == 200
    assert client.get("/api/v1/wipe-certificates/").status_code == 200
    assert client.get("/api/v1/nodes/").status_code == 403


def test_a_tenant_platform_token_sees_only_the_wipes_it_filed(tina, alice, nodes, rack):
    other = factories.make_user("otto", TENANT_PLATFORM)
    theirs = allocated_node(rack, tenant="other-tenant", allocation="alloc-other")
    mine = client_for(tina).post(URL, _body([n.pk for n in nodes]), format="json").json()
    filed = client_for(other).post(
        URL,
        {"tenant": "other-tenant", "allocation_ref": "alloc-other", "nodes": [theirs.pk]},
        format="json",
    )
    assert filed.status_code == 201
    listed = client_for(tina).get(URL).json()["results"]
    assert [w["id"] for w in listed] == [mine["id"]]
    assert client_for(tina).get(f"{URL}{filed.json()['id']}/").status_code == 404
    # The same release again from another token: refused, not shown.
    again = client_for(other).post(URL, _body([n.pk for n in nodes]), format="json")
    assert again.status_code == 409 and "another caller" in again.json()["detail"]
    # A fleet admin sees every tenant's releases.
    assert len(client_for(alice).get(URL).json()["results"]) == 2
