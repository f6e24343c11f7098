"""The site overview names a rack-scale system's own state beside its members' counts (issue 34):
an NVL72 rack is brought up, judged and approved as one, so "validating" or "degraded" says
what the 35 members' state badges cannot. In the same two queries, whatever the fleet."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from console import board
from fleet.choices import RackState
from fleet.models import RackSystem
from tests import factories

pytestmark = pytest.mark.django_db


def _row(html: str, rack_id: int) -> str:
    found = re.search(rf'<tr class="rack-row" id="rack-row-{rack_id}".*?</tr>', html, re.S)
    assert found, f"no overview row for rack {rack_id}"
    return found.group(0)


def test_a_rack_scale_row_carries_the_systems_state_and_a_server_rack_none(client, bob):
    system, _ = factories.make_nvl72_rack()
    servers = factories.make_rack("R-SERVERS", site="hall-1")
    factories.make_node(rack=servers)
    RackSystem.objects.filter(pk=system.pk).update(state=RackState.DEGRADED)

    client.force_login(bob)
    html = client.get(reverse("console:overview")).content.decode()

    row = _row(html, system.rack_id)
    assert 'data-rack-state="degraded"' in row and "Degraded</span>" in row
    assert "c-orange" in row  # the rack lifecycle's colour for degraded
    assert "data-rack-state" not in _row(html, servers.pk)

    # The live refresh renders the same body: the state moves with the rack.
    RackSystem.objects.filter(pk=system.pk).update(state=RackState.IN_SERVICE)
    snapshot = client.get(reverse("console:overview-snapshot")).json()
    assert 'data-rack-state="in_service"' in _row(snapshot["html"], system.rack_id)


def test_the_systems_state_costs_the_overview_no_query(django_assert_num_queries):
    for name in ("NVL01", "NVL02", "NVL03"):
        factories.make_nvl72_rack(name)
    with django_assert_num_queries(2):
        rows = [row for block in board.overview().sites for row in block.rows]
        states = [row.system.state for row in rows if row.system is not None]
    assert states == [RackState.DISCOVERING] * 3
