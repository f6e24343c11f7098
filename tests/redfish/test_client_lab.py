"""The Redfish client over real HTTP(S) against every flavour of the lab's BMCs."""

from __future__ import annotations

import io
from collections import Counter

import pytest

from provisioning.redfish import PowerAction, PowerState, TaskState, update_tracking
from provisioning.redfish.errors import ActionNotSupported
from provisioning.redfish.update_tracking import Progress
from provisioning.redfish.versions import same_version

from .conftest import lab_client

FLAVOURS = {"dell": 0, "hpe": 1, "supermicro": 2}
SYSTEM_IDS = {"dell": "System.Embedded.1", "hpe": "1", "supermicro": "1"}
BOOT = 60  # lab seconds: enough for any reset of the lab to finish


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_identity_is_found_by_following_links(hall, flavour):
    bmc = hall.bmc(FLAVOURS[flavour])
    with lab_client(bmc) as client:
        info = client.system_info()
        assert client.auth_mode == "session"
        assert len(bmc.node.sessions) == 1
    assert info.id == SYSTEM_IDS[flavour]
    assert info.serial == bmc.node.serial
    assert info.manufacturer == bmc.node.manufacturer
    assert info.power_state is PowerState.OFF
    # Logged out on close: iDRACs run out of session slots otherwise.
    assert bmc.node.sessions == {}


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_basic_auth_fallback_when_sessions_are_not_used(hall, flavour):
    bmc = hall.bmc(FLAVOURS[flavour])
    with lab_client(bmc, use_sessions=False) as client:
        assert client.system_info().serial == bmc.node.serial
        assert client.auth_mode == "basic"
    assert bmc.node.sessions == {}


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_power_on_is_staged_then_read_back(hall, flavour):
    bmc = hall.bmc(FLAVOURS[flavour])
    boots = []
    bmc.node.on_boot.append(lambda node, target: boots.append(target))
    with lab_client(bmc) as client:
        staged = client.reset(PowerAction.ON)
        assert staged.action == "reset:On" and staged.status == 204
        assert client.power_state() is PowerState.POWERING_ON  # accepted is not done
        hall.advance(BOOT)
        assert client.power_state() is PowerState.ON
        client.reset(PowerAction.OFF)
        hall.advance(BOOT)
        assert client.power_state() is PowerState.OFF
    assert boots == ["Hdd"]


def test_reset_type_is_chosen_from_the_allowed_values(hall):
    with lab_client(hall.bmc(0)) as client:
        assert "ForceRestart" in client.allowed_reset_types()
        client.reset(PowerAction.ON)
        hall.advance(BOOT)
        assert client.reset(PowerAction.RESTART).action == "reset:ForceRestart"
        assert client.reset(PowerAction.GRACEFUL_OFF).action == "reset:GracefulShutdown"


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_boot_once_pxe_is_consumed_by_the_next_boot(hall, flavour):
    bmc = hall.bmc(FLAVOURS[flavour])
    targets = []
    bmc.node.on_boot.append(lambda node, target: targets.append(target))
    with lab_client(bmc) as client:
        client.set_boot_override("Pxe", once=True, uefi=True)
        boot = client.boot_override()
        assert (boot.target, boot.enabled, boot.mode) == ("Pxe", "Once", "UEFI")
        client.reset(PowerAction.ON)
        hall.advance(BOOT)
        assert client.boot_override().enabled == "Disabled"
        client.set_boot_override("Hdd", once=False)
        assert client.boot_override().enabled == "Continuous"
        client.reset(PowerAction.RESTART)
        hall.advance(BOOT)
    assert targets == ["Pxe", "Hdd"]


def test_boot_target_the_bmc_does_not_allow_is_refused_by_name(hall):
    with lab_client(hall.bmc(0)) as client:
        with pytest.raises(ActionNotSupported, match="'RemoteDrive' is not among the allowed"):
            client.set_boot_override("RemoteDrive")


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_bios_change_is_pending_until_a_reset_applies_it(hall, flavour):
    bmc = hall.bmc(FLAVOURS[flavour])
    with lab_client(bmc) as client:
        client.reset(PowerAction.ON)
        hall.advance(BOOT)
        staged = client.set_bios_attributes({"SriovGlobalEnable": "Enabled"})
        assert client.bios_pending() == {"SriovGlobalEnable": "Enabled"}
        # Staged, not applied: only /Bios proves a change.
        assert client.bios_attributes()["SriovGlobalEnable"] == "Disabled"
        if flavour == "dell":
            # iDRAC: a configuration job, polled like any task, finishes at the reset.
            assert staged.task_monitor and "JID_" in staged.task_monitor
            assert client.task_status(staged.task_monitor).state is TaskState.RUNNING
        client.reset(PowerAction.RESTART)
        hall.advance(BOOT)
        assert client.bios_attributes()["SriovGlobalEnable"] == "Enabled"
        assert client.bios_pending() == {}
        if flavour == "dell":
            assert client.task_status(staged.task_monitor).state is TaskState.COMPLETED


def test_hpe_settings_patch_carries_the_etag_it_demands(hall):
    bmc = hall.bmc(FLAVOURS["hpe"])
    with lab_client(bmc) as client:
        path = client.transport.absolute("/redfish/v1/systems/1/bios/settings/")
        from provisioning.redfish.errors import PreconditionFailed

        with pytest.raises(PreconditionFailed, match="412"):
            client.transport.request("PATCH", path, json={"Attributes": {"PcieAspm": "Disabled"}})
        client.set_bios_attributes({"PcieAspm": "Disabled"})
        assert client.bios_pending() == {"PcieAspm": "Disabled"}


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_macs_and_firmware_inventory(hall, flavour):
    bmc = hall.bmc(FLAVOURS[flavour])
    with lab_client(bmc) as client:
        assert client.mac_addresses() == bmc.node.macs
        inventory = client.firmware_inventory()
        manager = client.manager_info()
    bios = [item for item in inventory if item.kind == "bios"]
    # Supermicro X13 writes "BIOS Date: 08/04/2023 Ver 2.1" for the system's "2.1".
    assert [same_version("bios", i.version, bmc.node.firmware["bios"]) for i in bios] == [True]
    assert manager["firmware_version"] == bmc.node.firmware["bmc"]
    assert all(item.updateable and item.running for item in inventory)
    parts = ("bmc", "bios", "hmc", "baseboard", "nic", "dpu", "drive")
    main = Counter(item.kind for item in inventory if item.part in parts)
    # bmc, bios, the HGX tray's HMC; NICs, DPUs, drives: each once, whatever else is listed.
    assert main == {"bmc": 1, "bios": 1, "hgx": 1, "nic": 8, "dpu": 2, "nvme": 8}


@pytest.mark.parametrize(
    ("flavour", "how"),
    [
        ("dell", "uri"),
        ("dell", "push"),
        ("hpe", "uri"),
        ("supermicro", "push"),
        ("supermicro", "push-file"),
    ],  # fmt: skip
)
def test_firmware_update_takes_effect_at_the_reset_it_needs(hall, flavour, how):
    bmc = hall.bmc(FLAVOURS[flavour])
    with lab_client(bmc) as client:
        client.reset(PowerAction.ON)
        hall.advance(BOOT)
        if how == "uri":
            staged = client.update_firmware(image_uri="http://files.test/fw/bios-9.9.9.bin")
            assert staged.action == "firmware:simple_update"
        else:
            # An image streamed from a file, as Greenlight pushes a downloaded bundle, or bytes.
            image = io.BytesIO(b"\x00" * 1024) if how == "push-file" else b"\x00" * 1024
            staged = client.update_firmware(image=image, filename="bios-9.9.9.bin")
            assert staged.action == "firmware:multipart_push"
        # iLO answers with no task: its flash state is followed (update_tracking).
        receipt = update_tracking.receipt_for(client, staged.task_monitor)
        assert update_tracking.look(client, receipt).progress is Progress.RUNNING
        hall.advance(200)
        # Written is not done: the old BIOS runs until the host resets; iDRAC's job waits
        # Scheduled for that reset.
        written = Progress.NEEDS_HOST_RESET if flavour == "dell" else Progress.DONE
        assert update_tracking.look(client, receipt).progress is written
        assert client.system_info().bios_version != "9.9.9"
        client.reset(PowerAction.RESTART)
        hall.advance(BOOT)
        assert client.system_info().bios_version == "9.9.9"
        assert update_tracking.look(client, receipt).progress is Progress.DONE
        (bios,) = [item for item in client.firmware_inventory() if item.kind == "bios"]
        assert same_version("bios", bios.version, "9.9.9")


def test_bmc_update_applies_when_the_bmc_restarts_itself_and_dell_lists_the_rollback(hall):
    bmc = hall.bmc(FLAVOURS["dell"])
    with lab_client(bmc) as client:
        staged = client.update_firmware(image_uri="http://files.test/bmc-7.10.30.00.exe")
        hall.advance(300)
        assert client.task_status(staged.task_monitor).state is TaskState.COMPLETED
        versions = [item.version for item in client.firmware_inventory() if "Remote" in item.name]
    # The "Previous-" rollback entry is dropped: only what runs is reported.
    assert versions == ["7.10.30.00"]


def test_update_method_the_bmc_lacks_is_named(hall):
    with lab_client(hall.bmc(FLAVOURS["hpe"])) as client:
        with pytest.raises(ActionNotSupported, match="offers SimpleUpdate"):
            client.update_firmware(image=b"x", filename="bios-1.bin")
    with lab_client(hall.bmc(FLAVOURS["supermicro"])) as client:
        with pytest.raises(ActionNotSupported, match="offers multipart push"):
            client.update_firmware(image_uri="http://files.test/bios-1.bin")


@pytest.mark.parametrize(("flavour", "expands"), [("dell", True), ("hpe", True),
                                                  ("supermicro", False)])  # fmt: skip
def test_firmware_inventory_is_one_request_where_the_bmc_offers_expand(hall, flavour, expands):
    bmc = hall.bmc(FLAVOURS[flavour])
    with lab_client(bmc) as client:
        client.firmware_inventory()  # reads the UpdateService link and the linked parts
        before = bmc.node.requests
        expanded = client.firmware_inventory()
        spent = bmc.node.requests - before
        listed = len(client.firmware_entries())
        # UpdateService, then the collection: expanded in one answer, or member by member. The
        # adapters and drives entries link to were read once, by the first inventory.
        assert spent == 1 + (1 if expands else 1 + listed)
    with lab_client(bmc) as client:
        client.root().pop("ProtocolFeaturesSupported", None)  # read it member by member
        assert client.firmware_inventory() == expanded
