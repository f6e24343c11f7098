"""Recording an observed inventory writes each part right in a few statements, not one per part."""

from __future__ import annotations

import pytest

from fleet.models import Component
from provisioning.inventory import record_inband
from tests.factories import make_node


def _inventory(nic_firmware: str = "28.39.1002") -> dict:
    return {
        "gpus": [{"index": i, "model": "H100", "serial": f"G{i}", "firmware": "96.00.5E"}
                 for i in range(8)],
        "nics": [{"index": i, "model": "CX7", "serial": f"N{i}", "firmware": nic_firmware}
                 for i in range(8)],
        "drives": [{"index": i, "model": "PM1743", "serial": f"D{i}", "firmware": "GDC7302Q"}
                   for i in range(8)],
    }  # fmt: skip


@pytest.mark.django_db
def test_a_first_inventory_and_a_firmware_change_take_a_few_statements(
    manifest, django_assert_max_num_queries
):
    node = make_node()
    with django_assert_max_num_queries(2):  # read the node's parts, insert the new ones
        assert record_inband(node, _inventory()) == 24
    nics = Component.objects.filter(node=node, kind="nic")
    assert sorted(nics.values_list("slot", "firmware_version"))[0] == ("NIC 0", "28.39.1002")
    with django_assert_max_num_queries(3):  # read, and one UPDATE for the eight NICs
        assert record_inband(node, _inventory("28.41.1000")) == 8
    assert set(nics.values_list("firmware_version", flat=True)) == {"28.41.1000"}
    assert Component.objects.filter(node=node).count() == 24
    with django_assert_max_num_queries(1):  # nothing changed: no write at all
        assert record_inband(node, _inventory("28.41.1000")) == 0
