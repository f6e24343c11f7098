"""The board and the node lists at 5,000 nodes (issue 32, "live view at size").

The fleet overview, a site, a rack (with a node's panel open) and the rack's snapshot answer in
the same number of queries at 50 nodes and at 5,000, pinned in tests/query_counts.json; the node
lists (the API's and the admin's) answer one page of a 5,000-node fleet in the queries they
answer a 50-node one. The fleet is lab.synthetic_fleet's, written with bulk_create: two sites,
racks of 42U, nodes in every lifecycle state with their runs, gates and events.
"""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from fleet.choices import NodeState
from fleet.lifecycle import ACTIVE_STATES
from fleet.models import Node
from lab.synthetic_fleet import Fleet, build_fleet
from tests.api.conftest import client_for
from tests.support.query_counts import assert_pinned, count_queries

SMALL, LARGE = 50, 5000
# Its 8 nodes at 50 (the fleet's last), full at 5,000: the rack grows with the fleet.
RACK = 1
# The older SKU's published manifest: a third of that SKU's nodes are still on the one before.
PUBLISHED = ("hgx-h100-8gpu", "1.1.0")


def board_pages(fleet: Fleet) -> dict[str, str]:
    rack = fleet.racks[RACK]
    node = Node.objects.filter(rack=rack).order_by("position").first()
    assert node is not None
    return {
        "scale:console:overview": reverse("console:overview"),
        "scale:console:site": reverse("console:site", args=[fleet.sites[0].pk]),
        "scale:console:rack": reverse("console:rack", args=[rack.pk]),
        "scale:console:rack?node": f"{reverse('console:rack', args=[rack.pk])}?node={node.pk}",
        "scale:console:rack-snapshot": reverse("console:rack-snapshot", args=[rack.pk]),
        "scale:console:rack-snapshot?since": f"{reverse('console:rack-snapshot', args=[rack.pk])}"
        "?since=1",
    }


def measure(fleet: Fleet, clients: dict) -> dict[str, int]:
    """Queries per page; the node lists must answer one full page."""
    counts = {}
    for name, url in board_pages(fleet).items():
        counts[name] = count_queries(lambda url=url: _ok(clients["bob"].get(url)))
    counts["scale:api:node-list"] = count_queries(
        lambda: _ok(clients["dora"].get(reverse("api:node-list")))
    )
    behind = reverse("api:manifest-behind", args=[fleet.manifests[PUBLISHED].pk])
    counts["scale:api:manifest-behind"] = count_queries(lambda: _ok(clients["dora"].get(behind)))
    counts["scale:admin:fleet_node_changelist"] = count_queries(
        lambda: _ok(clients["alice"].get(reverse("admin:fleet_node_changelist")))
    )
    return counts


def _ok(response):
    assert response.status_code == 200, response.content[:300]
    return response


@pytest.mark.django_db
def test_board_and_node_lists_answer_in_the_same_queries_at_5000_nodes(client, alice, bob, dora):
    fleet = build_fleet(SMALL, parts_per_kind=1)
    rack_states = set(Node.objects.filter(rack=fleet.racks[RACK]).values_list("state", flat=True))
    # The small rack already shows every kind of slot, so no query is left for the large one.
    assert rack_states & ACTIVE_STATES and NodeState.AWAITING_APPROVAL in rack_states
    clients = {"bob": client, "dora": client_for(dora), "alice": _logged_in(alice)}
    client.force_login(bob)
    client.get(reverse("console:overview"))  # warm the session and permission caches alike
    small = measure(fleet, clients)

    fleet = build_fleet(LARGE - SMALL, first=SMALL, parts_per_kind=1)
    assert Node.objects.count() == LARGE and len(fleet.racks) == 120
    assert Node.objects.filter(rack=fleet.racks[RACK]).count() == 42
    large = measure(fleet, clients)

    assert small == large, "a page's query count grows with the fleet"
    assert_pinned(large)
    assert_one_page(fleet, clients)


def assert_one_page(fleet: Fleet, clients: dict) -> None:
    """The node lists answer a page of the fleet, not the fleet."""
    behind = reverse("api:manifest-behind", args=[fleet.manifests[PUBLISHED].pk])
    body = clients["dora"].get(behind).json()
    assert body["count"] > 1000 and len(body["nodes"]) == 200 and body["next"]
    body = clients["dora"].get(reverse("api:node-list")).json()
    assert len(body["results"]) == 50 and body["next"]
    bigger = clients["dora"].get(reverse("api:node-list"), {"page_size": 200}).json()
    assert len(bigger["results"]) == 200 and bigger["next"]
    listed = clients["alice"].get(reverse("admin:fleet_node_changelist")).context["cl"]
    assert (listed.result_count, len(listed.result_list)) == (LARGE, 100)


def _logged_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client
