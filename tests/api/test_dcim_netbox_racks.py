"""Rack-scale systems in the NetBox sync (issue 34), against the NetBox-shaped server held in
memory (fake_netbox.py, which follows NetBox 4.x's virtual chassis rules): the rack is a virtual
chassis with its NVLink domain, state and fabric verdict; each member is a member device at a
stable position; a second sync writes nothing; a decision and a replaced tray are carried."""

from __future__ import annotations

import pytest

from acceptance import rack_decisions
from console.dcim.client import NetBoxClient
from console.dcim.netbox import sync
from console.inventory import inventory_nodes
from fleet.choices import NodeKind
from fleet.rack_lifecycle import replace_member
from tests import factories
from tests.support import rack_scenes

from .fake_netbox import serve_fake_netbox

V2 = "nbt_testkey.testsecret"
pytestmark = pytest.mark.django_db


@pytest.fixture
def netbox():
    with serve_fake_netbox() as fake:
        yield fake


def run_sync(fake, rack):
    with NetBoxClient(fake.url, V2) as client:
        return sync(client, nodes=inventory_nodes().filter(rack=rack))


def members_of(fake, chassis_id: int) -> dict[str, dict]:
    return {
        d["serial"]: d for d in fake.find("dcim/devices") if d.get("virtual_chassis") is not None
        and d["virtual_chassis"]["id"] == chassis_id
    }  # fmt: skip


def test_the_rack_is_a_virtual_chassis_of_its_members(netbox):
    system, members = rack_scenes.awaiting_nvl72()
    report = run_sync(netbox, system.rack)
    assert report.errors == [], report.error_lines()

    (chassis,) = netbox.find("dcim/virtual-chassis")
    assert (chassis["name"], chassis["domain"]) == ("hall-1/NVL01", "NVL01-nvl72")
    assert chassis["custom_fields"] == {
        "greenlight_rack_state": "awaiting_approval",
        "greenlight_fabric_verdict": "pass",
        "greenlight_nvlink_domain": "NVL01-nvl72",
    }
    devices = members_of(netbox, chassis["id"])
    assert len(devices) == 35
    # Bring-up order: shelves 1-8, switch trays 9-17, compute trays 18-35, each by its number.
    first = {"power_shelf": 0, "switch_tray": 8, "compute_tray": 17}
    roles = {"power_shelf": "Power shelf", "switch_tray": "NVLink switch tray"}
    for kind, nodes in members.items():
        for node in nodes:
            device = devices[node.serial]
            assert device["vc_position"] == first[kind] + node.member_index
            assert device["role"]["name"] == roles.get(kind, "GPU node")
            assert device["position"] == float(node.position)
    assert sorted(d["vc_position"] for d in devices.values()) == list(range(1, 36))

    writes = len(netbox.changelog)
    again = run_sync(netbox, system.rack)
    assert again.writes == 0 and again.errors == [], [c.line() for c in again.changes]
    assert len(netbox.changelog) == writes


def test_an_approval_and_a_replaced_tray_are_carried(netbox, bob):
    system, members = rack_scenes.awaiting_nvl72()
    run_sync(netbox, system.rack)
    rack_decisions.approve_rack(system, bob)
    old = members["compute_tray"][5]
    old.refresh_from_db()
    new = factories.make_node(
        "NVL01-compute_tray-06b", rack=None, position=None, sku=old.sku, kind=old.kind
    )
    replace_member(old, new, actor=bob, reason="tray 6 swapped")
    report = run_sync(netbox, system.rack)
    assert report.errors == [], report.error_lines()

    (chassis,) = netbox.find("dcim/virtual-chassis")
    assert chassis["custom_fields"]["greenlight_rack_state"] == "discovering"
    devices = members_of(netbox, chassis["id"])
    assert new.serial in devices and old.serial not in devices
    assert devices[new.serial]["vc_position"] == 17 + 6
    (gone,) = netbox.find("dcim/devices", serial=old.serial)
    assert gone["virtual_chassis"] is None and gone["status"]["value"] == "decommissioning"
    tray = devices[members["compute_tray"][0].serial]
    assert tray["status"]["value"] == "active"
    assert tray["custom_fields"]["greenlight_state"] == "in_service"


def test_a_fleet_without_rack_scale_systems_gets_no_chassis(netbox, manifest):
    rack = factories.make_rack("R09")
    factories.make_node("SN-PLAIN", rack=rack, position=1)
    assert run_sync(netbox, rack).errors == []
    assert netbox.find("dcim/virtual-chassis") == []
    assert not [c for c in netbox.find("extras/custom-fields") if "rack" in c["name"]]
    assert {r["name"] for r in netbox.find("dcim/device-roles")} == {"GPU node"}


def test_member_device_types_are_created_at_their_declared_height(netbox):
    system, _ = rack_scenes.awaiting_nvl72()
    system.sku.members.filter(kind=NodeKind.POWER_SHELF).update(height_u=2)
    run_sync(netbox, system.rack)
    heights = {t["model"]: t["u_height"] for t in netbox.find("dcim/device-types")}
    assert heights["gb200-power-shelf"] == 2 and heights["gb200-compute-tray"] == 1
