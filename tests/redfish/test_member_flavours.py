"""How a GB200 NVL72 rack's switch tray and power shelf BMCs take writes in the lab, as the public
sources cited in lab/bmc/member_flavours.py describe them (issue 34): a Delta shelf's PMC takes
its image at /redfish/v1/UpdateService/update, under Managers/PMC_0, runs it at its reboot until
its HttpPushUriApplyTime is PATCHed Immediate, and lists its other PMC partition and six PSUs; a
switch tray's BMC lists its CPLD as CPLD_0 and runs a new image only after its PowerCycle."""

from __future__ import annotations

import pytest
import requests

from lab.bmc.member_flavours import POWER_SHELF_MODEL, POWER_SHELF_PUSH_URI
from lab.hall import LabHall
from provisioning.redfish import errors

from .conftest import lab_client

BOOT = 40.0
COMPUTE_PUSH_URI = "/redfish/v1/UpdateService/update-multipart"


@pytest.fixture
def members():
    with LabHall(2, flavours=("power_shelf", "nvl_switch"), speed=0, seed=5) as running:
        yield running


def _push(bmc, path: str, filename: str) -> requests.Response:
    """A multipart push of `filename` to `path`, as open-nvfwupd sends a shelf's image."""
    return requests.post(
        bmc.http_url + path,
        files={"UpdateFile": (filename, b"\0" * 64, "application/octet-stream")},
        auth=(bmc.node.username, bmc.node.password),
        timeout=5,
    )


def _apply_time(client) -> dict:
    return client.get("/redfish/v1/UpdateService")["HttpPushUriOptions"]["HttpPushUriApplyTime"]


def _set_apply_time(client, value: str) -> None:
    body = {"HttpPushUriOptions": {"HttpPushUriApplyTime": {"ApplyTime": value}}}
    client.patch("/redfish/v1/UpdateService", body)


def test_a_power_shelf_takes_its_image_at_update_and_not_at_update_multipart(members):
    shelf = members.bmc_of_flavour("power_shelf")
    with lab_client(shelf) as client:
        service = client.get("/redfish/v1/UpdateService")
        assert service["MultipartHttpPushUri"] == POWER_SHELF_PUSH_URI
        _set_apply_time(client, "Immediate")  # as NVIDIA's tools do before every push
    # The compute tray's push URI is not the shelf's: nothing is there.
    assert _push(shelf, COMPUTE_PUSH_URI, "bmc-3.2.5.bin").status_code == 404
    assert shelf.node.firmware["bmc"] != "3.2.5"
    accepted = _push(shelf, POWER_SHELF_PUSH_URI, "bmc-3.2.5.bin")
    assert accepted.status_code == 202, accepted.text
    members.advance(600)
    # ApplyTime Immediate: the new image runs.
    assert shelf.node.firmware["bmc"] == "3.2.5"


def test_a_power_shelf_holds_a_pushed_image_for_its_reboot_until_patched_immediate(members):
    shelf = members.bmc_of_flavour("power_shelf")
    with lab_client(shelf) as client:
        # OnReset at start (SHELF): the image runs at the PMC's next reboot.
        assert _apply_time(client) == {
            "ApplyTime": "OnReset",
            "ApplyTime@Redfish.AllowableValues": ["Immediate", "OnReset"],
        }
        before = shelf.node.firmware["bmc"]
        assert _push(shelf, POWER_SHELF_PUSH_URI, "bmc-3.2.5.bin").status_code == 202
        members.advance(600)
        assert shelf.node.firmware["bmc"] == before
        client.transport.request(
            "POST", "/redfish/v1/Managers/PMC_0/Actions/Manager.Reset",
            json={"ResetType": "GracefulRestart"},
        )  # fmt: skip
    assert shelf.node.firmware["bmc"] == "3.2.5"
    with lab_client(shelf) as client:
        _set_apply_time(client, "Immediate")
        assert _apply_time(client)["ApplyTime"] == "Immediate"
    assert _push(shelf, POWER_SHELF_PUSH_URI, "bmc-3.2.6.bin").status_code == 202
    members.advance(600)
    assert shelf.node.firmware["bmc"] == "3.2.6"


def test_a_power_shelf_refuses_an_apply_time_outside_its_allowable_values(members):
    shelf = members.bmc_of_flavour("power_shelf")
    with lab_client(shelf) as client:
        with pytest.raises(errors.RequestRejected) as refused:
            _set_apply_time(client, "AtMaintenanceWindowStart")
        assert refused.value.has_message("PropertyValueNotInList")
        with pytest.raises(errors.RequestRejected) as refused:
            client.patch("/redfish/v1/UpdateService", {"ServiceEnabled": False})
        assert refused.value.has_message("PropertyNotWritable")
        assert _apply_time(client)["ApplyTime"] == "OnReset"


def test_a_switch_tray_runs_a_written_image_only_after_its_ac_power_cycle(members):
    switch = members.bmc_of_flavour("nvl_switch")
    with lab_client(switch) as client:
        assert "PowerCycle" in client.allowed_reset_types()
        before = switch.node.firmware["bmc"]
        assert _push(switch, COMPUTE_PUSH_URI, "bmc-88.0002.1139.bin").status_code == 202
        members.advance(600)
        # Written, still pending: a BMC restart alone does not run it (NVFW: AC cycle).
        assert switch.node.firmware["bmc"] == before
        client.transport.request(
            "POST", "/redfish/v1/Managers/BMC_0/Actions/Manager.Reset",
            json={"ResetType": "GracefulRestart"},
        )  # fmt: skip
        assert switch.node.firmware["bmc"] == before
        client.transport.request(
            "POST", "/redfish/v1/Systems/System_0/Actions/ComputerSystem.Reset",
            json={"ResetType": "PowerCycle"},
        )  # fmt: skip
    assert switch.node.firmware["bmc"] == "88.0002.1139"
    members.advance(BOOT)
    assert switch.node.power == "On"  # an AC cycle brings the tray back


def test_the_servers_and_the_compute_tray_serve_no_apply_time_and_no_power_cycle():
    with LabHall(2, flavours=("gb200_tray", "gb200"), speed=0, seed=5) as hall:
        for bmc in hall.bmcs:
            with lab_client(bmc) as client:
                assert "HttpPushUriOptions" not in client.get("/redfish/v1/UpdateService")
                assert "PowerCycle" not in client.allowed_reset_types()


def test_a_power_shelf_is_a_delta_pmc_listing_its_other_partition_and_six_psus(members):
    shelf = members.bmc_of_flavour("power_shelf")
    with lab_client(shelf) as client:
        managers = client.get("/redfish/v1/Managers")["Members"]
        assert [m["@odata.id"] for m in managers] == ["/redfish/v1/Managers/PMC_0"]
        assert client.chassis()["Model"] == POWER_SHELF_MODEL
        entries = {e.id: e for e in client.firmware_entries()}
        (bmc,) = [i for i in client.firmware_inventory() if i.kind == "bmc"]
    ids = set(entries)
    assert {"FW_PMC_primary", "FW_PMC_alt", "FW_ERoT_BMC_0"} <= ids and "FW_BMC_0" not in ids
    assert {f"FW_PSU_{n}" for n in range(1, 7)} <= ids and "FW_PSU_0" not in ids
    # The PMC's running image, under a real Delta shelf's id, is the one Greenlight manages;
    # its backup partition runs nothing.
    assert bmc.id == "FW_PMC_primary" and bmc.version == shelf.node.firmware["bmc"]
    assert not entries["FW_PMC_alt"].running


def test_a_switch_tray_lists_its_cpld_as_cpld_0_which_no_phase_manages(members):
    switch = members.bmc_of_flavour("nvl_switch")
    with lab_client(switch) as client:
        entries = {e.id: e for e in client.firmware_entries()}
        managed = {i.kind for i in client.firmware_inventory()}
    assert "CPLD_0" in entries and "FW_CPLD_0" not in entries
    assert entries["CPLD_0"].version == "CPLD000370_REV0500"
    assert "cpld" not in managed
