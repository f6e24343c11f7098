"""A tenant-platform token names only its tenant's nodes: another tenant's node, or one with no
tenant, is "not found" exactly as a node that does not exist, so walking the ids learns nothing."""

from __future__ import annotations

import pytest

from fleet.choices import NodeState
from fleet.models import Node
from provisioning.models import WipeRequest
from tests.api.conftest import client_for

from .conftest import ALLOCATION, TENANT, allocated_node

URL = "/api/v1/wipe-requests/"


def post(user, nodes: list) -> tuple[int, dict]:
    body = {"tenant": TENANT, "allocation_ref": ALLOCATION, "nodes": nodes}
    response = client_for(user).post(URL, body, format="json")
    return response.status_code, response.json()


def test_another_tenants_node_is_not_found_like_a_missing_one(tina, rack, manifest):
    theirs = allocated_node(rack, tenant="globex", state=NodeState.QUARANTINED)
    unallocated = allocated_node(rack, tenant="")
    missing = max(Node.objects.values_list("pk", flat=True)) + 1

    answers = {ref: post(tina, [ref]) for ref in (theirs.pk, unallocated.pk, missing)}
    for ref, (status, body) in answers.items():
        assert status == 400
        assert body == {"nodes": {"0": [f"No node {ref}."]}}
    status, body = post(tina, [theirs.serial])
    assert (status, body) == (400, {"nodes": {"0": [f"No node {theirs.serial}."]}})
    text = str([answers, body])
    assert "globex" not in text and "Quarantined" not in text and "quarantined" not in text
    assert not WipeRequest.objects.exists()


def test_refusals_name_only_the_tenants_own_nodes(tina, rack, manifest):
    theirs = allocated_node(rack, tenant="globex")
    own_idle = allocated_node(rack, state=NodeState.AWAITING_APPROVAL)
    status, body = post(tina, [own_idle.pk, theirs.pk])
    assert status == 400
    assert body == {"nodes": {"1": [f"No node {theirs.pk}."]}}
    status, body = post(tina, [own_idle.pk])
    assert status == 409
    assert body["reasons"] == [f"node {own_idle.serial} is Awaiting approval, not in service"]


@pytest.mark.parametrize("ref", [2**40, 2**63, 2**70, -1, 0])
def test_an_id_out_of_range_is_not_found_not_a_server_error(tina, nodes, ref):
    assert post(tina, [ref]) == (400, {"nodes": {"0": [f"No node {ref}."]}})
