"""The NetBox push sync against a NetBox-shaped server held in memory (see fake_netbox.py)."""

from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command

from console.dcim.client import NetBoxClient, auth_header
from console.dcim.netbox import DEVICE_STATUS, sync
from fleet.choices import NodeState
from fleet.models import Component, Node

from .conftest import BMC_PASSWORD, set_state
from .fake_netbox import serve_fake_netbox

V1 = "0123456789abcdef0123456789abcdef01234567"
V2 = "nbt_testkey.testsecret"


@pytest.fixture
def netbox():
    with serve_fake_netbox() as fake:
        yield fake


def run_sync(fake, token=V2, **kw):
    with NetBoxClient(fake.url, token) as client:
        return sync(client, **kw)


def test_first_sync_creates_the_fleet(fleet, netbox):
    report = run_sync(netbox)
    assert report.errors == [], report.error_lines()
    (site,) = netbox.find("dcim/sites", name="hall-1")
    assert {r["name"] for r in netbox.find("dcim/racks")} == {"R01", "R02"}
    (dtype,) = netbox.find("dcim/device-types")
    assert dtype["model"] == "hgx-h100-8gpu" and dtype["manufacturer"]["name"] == "Generic"
    devices = {d["serial"]: d for d in netbox.find("dcim/devices")}
    assert set(devices) == {"SN-GOOD", "SN-BAD", "SN-NEW", "SN-SERVED"}
    bad = devices["SN-BAD"]
    assert bad["status"]["value"] == "failed"
    assert (
        bad["rack"]["name"] == "R01" and bad["position"] == 3.0 and bad["face"]["value"] == "front"
    )
    assert bad["site"]["id"] == site["id"] and bad["role"]["name"] == "GPU node"
    assert bad["custom_fields"] == {
        "greenlight_state": "quarantined",
        "greenlight_manifest_version": "1.0.0",
        "greenlight_last_verdict": "fail",
        "greenlight_board_firmware": "BMC 7.10.30.00",
    }
    assert devices["SN-SERVED"]["status"]["value"] == "active"
    assert devices["SN-NEW"]["status"]["value"] == "planned"
    assert devices["SN-NEW"]["custom_fields"]["greenlight_manifest_version"] is None

    (eth0,) = netbox.find("dcim/interfaces", device=bad["id"])
    # The factory numbers MACs in creation order, which depends on the tests run before.
    bad_mac = Node.objects.get(serial="SN-BAD").mac_addresses[0].upper()
    assert eth0["name"] == "eth0" and eth0["mac_address"].upper() == bad_mac
    items = {i["name"]: i for i in netbox.find("dcim/inventory-items", device=bad["id"])}
    assert set(items) == {"GPU 0", "GPU 1", "NIC 0", "DPU 0", "NVMe 0"}  # no BMC: not a part
    assert items["GPU 1"]["serial"] == "SN-BAD-GPU1"
    assert items["GPU 1"]["part_id"] == "PN-gpu"
    assert items["GPU 1"]["custom_fields"] == {"greenlight_firmware": "96.00.99.00.01"}
    assert BMC_PASSWORD not in str(netbox.changelog)


def test_second_sync_writes_nothing(fleet, netbox):
    run_sync(netbox)
    writes = len(netbox.changelog)
    report = run_sync(netbox)
    assert report.writes == 0 and report.errors == []
    assert len(netbox.changelog) == writes
    assert report.unchanged == 5 + 6 + 4 * (1 + 1 + 5)  # custom fields, parents, devices
    assert all(method == "GET" for method, _ in netbox.requests[-10:])


def test_a_change_patches_only_what_changed(fleet, netbox):
    run_sync(netbox)
    node = fleet["nodes"]["SN-GOOD"]
    set_state(node, NodeState.IN_SERVICE)
    Component.objects.filter(node=node, slot="GPU 0").update(firmware_version="96.00.AA.00.01")
    before = len(netbox.changelog)
    report = run_sync(netbox)
    assert [(c.action, c.kind, c.name) for c in report.changes] == [
        ("update", "device", "SN-GOOD"),
        ("update", "inventory item", "SN-GOOD GPU 0"),
    ]
    new = netbox.changelog[before:]
    assert new == [
        (
            "update",
            "dcim/devices",
            {"status": "active", "custom_fields": {"greenlight_state": "in_service"}},
        ),
        (
            "update",
            "dcim/inventory-items",
            {"custom_fields": {"greenlight_firmware": "96.00.AA.00.01"}},
        ),
    ]


def test_dry_run_reports_and_writes_nothing(fleet, netbox):
    report = run_sync(netbox, dry_run=True)
    assert netbox.changelog == []
    assert report.errors == []
    creates = [(c.kind, c.name) for c in report.changes if c.action == "create"]
    assert ("device", "SN-GOOD") in creates and ("rack", "hall-1/R01") in creates
    assert ("inventory item", "SN-GOOD GPU 1") in creates
    assert "would create" in report.summary()


def test_an_error_on_one_object_does_not_stop_the_rest(fleet, netbox):
    netbox.fail_serials = {"SN-BAD"}
    report = run_sync(netbox)
    (error,) = report.errors
    assert error.kind == "device" and error.name == "SN-BAD"
    assert "HTTP 400" in error.error and "Injected failure" in error.error
    assert {d["serial"] for d in netbox.find("dcim/devices")} == {"SN-GOOD", "SN-NEW", "SN-SERVED"}
    # The others got their parts; the failed device's parts were not attempted.
    assert len(netbox.find("dcim/inventory-items")) == 3 * 5
    netbox.fail_serials = set()
    report = run_sync(netbox)
    assert [(c.action, c.name) for c in report.changes if c.kind == "device"] == [
        ("create", "SN-BAD")
    ]


def test_matches_an_existing_device_by_name_and_adopts_it(fleet, netbox):
    run_sync(netbox)
    # Someone created a device by hand, without a serial, named like a node.
    node = Node.objects.get(serial="SN-NEW")
    (device,) = netbox.find("dcim/devices", serial="SN-NEW")
    netbox.objects["dcim/devices"][device["id"]]["serial"] = ""
    report = run_sync(netbox)
    assert [(c.action, c.kind, c.name) for c in report.changes] == [
        ("update", "device", node.serial)
    ]
    assert len(netbox.find("dcim/devices")) == 4


@pytest.mark.parametrize("token", [V1, V2])
def test_both_token_formats(fleet, netbox, token):
    assert run_sync(netbox, token=token).errors == []


def test_token_header_formats():
    assert auth_header(V2) == f"Bearer {V2}"
    assert auth_header(V1) == f"Token {V1}"


def test_refused_token_is_reported_not_raised(fleet, netbox):
    report = run_sync(netbox, token="wrong")
    assert report.errors and "HTTP 403" in report.errors[0].error
    assert netbox.changelog == []


def test_unreachable_netbox_is_reported(fleet):
    with NetBoxClient("http://127.0.0.1:9", V2, timeout=2) as client:
        report = sync(client)
    assert report.errors and "no answer" in report.errors[0].error


def test_command_dry_run_prints_changes(fleet, netbox):
    out = io.StringIO()
    call_command("dcim_sync", "netbox", "--url", netbox.url, "--token", V1, "--dry-run", stdout=out)
    text = out.getvalue()
    assert "+ create device SN-GOOD" in text
    assert "dry run: would create" in text
    assert netbox.changelog == []


def test_command_applies_then_reports_nothing_to_do(fleet, netbox):
    call_command("dcim_sync", "netbox", "--url", netbox.url, "--token", V2, stdout=io.StringIO())
    out = io.StringIO()
    call_command("dcim_sync", "netbox", "--url", netbox.url, "--token", V2, stdout=out)
    assert "created 0, updated 0" in out.getvalue()


def test_command_fails_loudly_on_errors(fleet, netbox):
    netbox.fail_serials = {"SN-GOOD"}
    out = io.StringIO()
    with pytest.raises(CommandError, match="1 object"):
        call_command("dcim_sync", "netbox", "--url", netbox.url, "--token", V2, stdout=out)
    assert "! error device SN-GOOD" in out.getvalue()


def test_every_state_has_a_netbox_status():
    assert set(DEVICE_STATUS) == set(NodeState.values)
    assert set(DEVICE_STATUS.values()) <= {
        "offline",
        "active",
        "planned",
        "staged",
        "failed",
        "inventory",
        "decommissioning",
    }


def test_task_syncs_when_configured(fleet, netbox, settings):
    from console.tasks import netbox_sync

    settings.GREENLIGHT_NETBOX_URL = netbox.url
    settings.GREENLIGHT_NETBOX_TOKEN = V2
    netbox_sync()
    assert len(netbox.find("dcim/devices")) == 4
