"""Query counts of the board's pages, pinned in tests/query_counts.json so an N+1 fails CI.

Each page is measured at two sizes of fleet; both must equal the pinned count (see
tests/support/query_counts.py; test_scale.py measures the same pages at 5,000 nodes).
"""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from fleet.choices import NodeState
from tests import factories
from tests.support import scenes
from tests.support.query_counts import assert_pinned

MIX = {
    NodeState.IN_SERVICE: 2,
    NodeState.AWAITING_APPROVAL: 2,
    NodeState.PROVISIONING: 2,
    NodeState.QUARANTINED: 1,
    NodeState.FAILED: 1,
    NodeState.ENROLLED: 1,
}


def pages(rack, node) -> dict[str, tuple[str, dict]]:
    return {
        "console:overview": (reverse("console:overview"), {}),
        "console:site": (reverse("console:site", args=[rack.site_id]), {}),
        "console:rack": (reverse("console:rack", args=[rack.pk]), {}),
        "console:rack?node": (reverse("console:rack", args=[rack.pk]), {"node": node.pk}),
        "console:rack-snapshot": (reverse("console:rack-snapshot", args=[rack.pk]), {}),
        "console:node-panel": (reverse("console:node-panel", args=[node.pk]), {}),
    }


def measure(client, rack, node) -> dict[str, int]:
    counts = {}
    for name, (url, params) in pages(rack, node).items():
        with CaptureQueriesContext(connection) as ctx:
            response = client.get(url, params)
        assert response.status_code == 200, name
        counts[name] = len(ctx.captured_queries)
    return counts


@pytest.mark.django_db
def test_board_query_counts_are_pinned_and_do_not_grow_with_the_fleet(client, bob, manifest):
    rack = factories.make_rack("R01")
    nodes = scenes.build_rack(rack, MIX)
    quarantined = nodes[6]
    client.force_login(bob)
    client.get(reverse("console:overview"))  # warm the session and permission caches alike
    small = measure(client, rack, quarantined)

    for name in ("R02", "R03"):
        scenes.build_rack(factories.make_rack(name), {s: n * 2 for s, n in MIX.items()})
    scenes.build_rack(rack, {NodeState.PROVISIONING: 4, NodeState.AWAITING_APPROVAL: 3}, start=20)
    large = measure(client, rack, quarantined)

    assert small == large, "a page's query count grows with the number of racks or nodes"
    assert_pinned(small)
