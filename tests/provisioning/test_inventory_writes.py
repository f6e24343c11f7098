"""Recording an observed inventory: one row per part, kept equal to the last observation, in a few
statements."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from fleet.choices import ComponentSource, EventKind
from fleet.models import Component, Event
from provisioning.core.inventory import compare, record_inband, record_oob
from provisioning.redfish import FirmwareItem
from tests.factories import make_node

pytestmark = pytest.mark.django_db


def _inventory(nic_firmware: str = "28.39.1002", drives: int = 8) -> dict:
    return {
        "gpus": [{"index": i, "model": "H100", "serial": f"G{i}", "firmware": "96.00.5E"}
                 for i in range(8)],
        "nics": [{"index": i, "model": "CX7", "serial": f"N{i}", "firmware": nic_firmware}
                 for i in range(8)],
        "drives": [{"index": i, "model": "PM1743", "serial": f"D{i}", "firmware": "GDC7302Q"}
                   for i in range(drives)],
    }  # fmt: skip


def _bmc_firmware(nic_firmware: str = "28.39.1002") -> list[FirmwareItem]:
    """An iDRAC-like FirmwareInventory: the BMC, BIOS, and the NICs without their serials."""
    items = [
        FirmwareItem("Installed-25227", "/fw/1", "Integrated Dell Remote Access Controller",
                     "7.00.00", True, kind="bmc", part="bmc"),
        FirmwareItem("Installed-159", "/fw/2", "BIOS", "2.19.1", True, kind="bios", part="bios"),
    ]  # fmt: skip
    items += [
        FirmwareItem(
            f"Installed-NIC.{i}",
            f"/fw/n{i}",
            f"Mellanox ConnectX-7 {i}",
            nic_firmware,
            True,
            kind="nic",
            part="nic",
        )
        for i in range(8)
    ]
    return items


def _rows(node) -> list[tuple]:
    return sorted(
        Component.objects.filter(node=node).values_list(
            "kind", "slot", "serial", "firmware_version", "source"
        )
    )


def test_a_first_inventory_and_a_firmware_change_take_a_few_statements(
    manifest, django_assert_max_num_queries
):
    node = make_node()
    with django_assert_max_num_queries(2):  # read the node's parts, insert the new ones
        assert len(record_inband(node, _inventory())) == 24
    nics = Component.objects.filter(node=node, kind="nic")
    assert sorted(nics.values_list("slot", "firmware_version"))[0] == ("NIC 0", "28.39.1002")
    before = set(nics.values_list("pk", flat=True))
    with django_assert_max_num_queries(3):  # read, and one UPDATE for the eight NICs
        assert len(record_inband(node, _inventory("28.41.1000"))) == 8
    assert set(nics.values_list("firmware_version", flat=True)) == {"28.41.1000"}
    assert set(nics.values_list("pk", flat=True)) == before, "updated in place, not re-created"
    assert Component.objects.filter(node=node).count() == 24
    with django_assert_max_num_queries(1):  # nothing changed: no write at all
        assert len(record_inband(node, _inventory("28.41.1000"))) == 0


def test_the_agent_takes_over_the_parts_the_bmc_listed_without_serials(manifest):
    node = make_node()
    record_oob(node, _bmc_firmware())  # enrollment: the BMC's view of the NICs
    assert [r for r in _rows(node) if r[0] == "nic"][0] == (
        "nic", "NIC 0", "", "28.39.1002", ComponentSource.BMC
    )  # fmt: skip
    bmc_nic = Component.objects.get(node=node, slot="NIC 3")
    record_inband(node, _inventory())
    # The same NIC, now with its serial, in the row the BMC made; no second row beside it.
    adopted = Component.objects.get(node=node, slot="NIC 3")
    assert (adopted.pk, adopted.serial, adopted.source) == (bmc_nic.pk, "N3", "agent")
    assert Component.objects.filter(node=node).count() == 2 + 24
    assert not Event.objects.filter(node=node).exists(), "a first look by the agent swaps nothing"
    # The BMC's later reads no longer speak for the NICs, even when they lag behind the agent.
    record_inband(node, _inventory("28.43.1014"))
    assert len(record_oob(node, _bmc_firmware("28.39.1002"))) == 0
    assert set(
        Component.objects.filter(node=node, kind="nic").values_list("firmware_version", flat=True)
    ) == {"28.43.1014"}
    assert Component.objects.filter(node=node).count() == 26


def test_a_part_gone_is_removed_and_a_swapped_part_is_a_new_row(manifest):
    node = make_node()
    record_inband(node, _inventory())
    old = Component.objects.get(node=node, slot="NVMe 2")
    swapped = _inventory(drives=6)
    swapped["drives"][2]["serial"] = "D2-RMA"
    change = record_inband(node, swapped)
    assert [c.slot for c in change.remove] == ["NVMe 2", "NVMe 6", "NVMe 7"]
    drives = Component.objects.filter(node=node, kind="nvme")
    assert sorted(drives.values_list("slot", "serial")) == [
        ("NVMe 0", "D0"), ("NVMe 1", "D1"), ("NVMe 2", "D2-RMA"), ("NVMe 3", "D3"),
        ("NVMe 4", "D4"), ("NVMe 5", "D5"),
    ]  # fmt: skip
    assert not drives.filter(pk=old.pk).exists()
    said = Event.objects.get(node=node, kind=EventKind.UPDATED)
    assert said.message == (
        "parts changed: NVMe 2 (D2) gone, NVMe 6 (D6) gone, NVMe 7 (D7) gone, NVMe 2 (D2-RMA) new"
    )


def test_a_part_that_moved_slot_keeps_one_row(manifest):
    node = make_node()
    record_inband(node, _inventory())
    moved = _inventory()
    # Two drives traded bays: their serials say which is which.
    moved["drives"][0]["serial"], moved["drives"][1]["serial"] = "D1", "D0"
    record_inband(node, moved)
    drives = Component.objects.filter(node=node, kind="nvme")
    assert drives.count() == 8
    assert sorted(drives.values_list("slot", "serial"))[:2] == [("NVMe 0", "D1"), ("NVMe 1", "D0")]
    assert not Event.objects.filter(node=node).exists(), "a part that moved is neither gone nor new"


def test_a_bmc_that_no_longer_lists_a_part_loses_its_row(manifest):
    node = make_node()
    items = _bmc_firmware()
    record_oob(node, items)
    record_oob(node, items[:1] + items[2:])  # the BIOS entry is gone
    assert not Component.objects.filter(node=node, kind="bios").exists()


def test_compare_reports_every_difference_and_writes_nothing(manifest):
    node = make_node()
    record_oob(node, _bmc_firmware())
    record_inband(node, _inventory())
    parts, change = compare(node, _bmc_firmware(), _inventory())
    assert len(change) == 0
    assert sorted((p.kind, p.slot, p.serial, p.firmware_version, p.source) for p in parts) == (
        _rows(node)
    )
    parts, change = compare(node, _bmc_firmware(), _inventory("28.43.1014", drives=7))
    assert {d["part"] for d in change.describe()} == {f"NIC {i} (N{i})" for i in range(8)} | {
        "NVMe 7 (D7)"
    }
    nic = next(d for d in change.describe() if d["part"] == "NIC 0 (N0)")
    assert nic["stored"] == {"firmware_version": "28.39.1002"}
    assert nic["observed"] == {"firmware_version": "28.43.1014"}
    assert Component.objects.filter(node=node, kind="nvme").count() == 8
    # No agent to ask: the kinds it owns are not judged, the BMC's still are.
    _parts, change = compare(node, _bmc_firmware()[1:], None)
    assert [d["part"] for d in change.describe()] == ["BMC"]


def test_parts_with_one_change_share_a_plain_update_and_each_change_is_written(manifest):
    node = make_node()
    record_inband(node, _inventory())
    changed = _inventory("28.41.1000")
    changed["drives"][3]["firmware"] = "GDC7402Q"
    changed["drives"][5].update(firmware="GDC7402Q", model="PM1743a")
    with CaptureQueriesContext(connection) as queries:
        assert len(record_inband(node, changed)) == 10
    updates = [q["sql"] for q in queries if q["sql"].startswith("UPDATE")]
    # The eight NICs, drive 3 and drive 5 make three distinct changes: three plain UPDATEs, no
    # CASE per row and field (bulk_update's, which cost a worker 8% of its CPU).
    assert len(updates) == 3
    assert not any("CASE" in sql for sql in updates)
    drives = dict(
        Component.objects.filter(node=node, kind="nvme").values_list("slot", "firmware_version")
    )
    assert (drives["NVMe 3"], drives["NVMe 5"], drives["NVMe 4"]) == (
        "GDC7402Q", "GDC7402Q", "GDC7302Q"
    )  # fmt: skip
    assert Component.objects.get(node=node, slot="NVMe 5").model == "PM1743a"
    assert Component.objects.get(node=node, slot="NVMe 3").model == "PM1743"
    assert set(
        Component.objects.filter(node=node, kind="nic").values_list("firmware_version", flat=True)
    ) == {"28.41.1000"}
