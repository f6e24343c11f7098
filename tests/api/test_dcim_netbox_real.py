"""The NetBox sync against a real NetBox, when NETBOX_URL and NETBOX_TOKEN name one.

See docs/operators-guide.md, "DCIM sync (NetBox)", for running NetBox 4.7 on this machine. The
test pushes a small fleet under a site name unique to the run, then checks that a second sync
writes nothing, by the report and by NetBox's own change log.
"""

from __future__ import annotations

import os
import uuid

import httpx
import pytest

from console.dcim.client import NetBoxClient, auth_header
from console.dcim.netbox import sync
from console.inventory import inventory_nodes
from tests import factories

from .conftest import add_components

URL = os.environ.get("NETBOX_URL", "")
TOKEN = os.environ.get("NETBOX_TOKEN", "")
pytestmark = [
    pytest.mark.peer,
    pytest.mark.skipif(not (URL and TOKEN), reason="NETBOX_URL and NETBOX_TOKEN not set"),
]


def change_count() -> int:
    response = httpx.get(
        f"{URL.rstrip('/')}/api/core/object-changes/",
        params={"limit": 1},
        headers={"Authorization": auth_header(TOKEN), "Accept": "application/json"},
        timeout=30,
    )
    response.raise_for_status()
    return response.json()["count"]


def test_sync_against_real_netbox_is_idempotent(db, manifest):
    run = uuid.uuid4().hex[:8]
    rack = factories.make_rack("R01", site=f"gl-test-{run}")
    for position in (1, 2):
        node = factories.make_node(f"GL{run}{position}", rack=rack, position=position)
        add_components(node)
    nodes = inventory_nodes().filter(rack=rack)
    with NetBoxClient(URL, TOKEN) as client:
        first = sync(client, nodes=nodes)
        assert first.errors == [], first.error_lines()
        assert first.writes > 0
        before = change_count()
        second = sync(client, nodes=nodes)
    assert second.errors == [] and second.writes == 0, [c.line() for c in second.changes]
    assert change_count() == before
