"""Vendor workarounds. Each one names the vendor and firmware it was seen on, and why it exists.

The client stays standard Redfish; a quirk is consulted only at the point where a vendor departs
from the standard, so removing one is a one-line change.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# The BMC families whose writes differ. "ami" is AMI MegaRAC, which the DGX H100's BMC is too
# (its service root says Vendor AMI); "nvidia" is NVIDIA's OpenBMC (GB200, GH200, BlueField).
# A stock OpenBMC names no vendor: it is "generic", and what it needs it declares.
VENDORS = ("dell", "hpe", "lenovo", "supermicro", "nvidia", "ami", "generic")


@dataclass(frozen=True)
class QuirkRow:
    """One vendor departure Greenlight follows: what it does there, and where that was learnt.

    What a BMC declares itself (ActionInfo, @Redfish.Settings, AllowableValues) is followed
    without a row; a row is for what no payload says.
    """

    vendor: str
    operation: str
    rule: str
    source: str


def vendor_of(root: dict[str, Any], manufacturer: str = "") -> str:
    """The BMC family, from the service root's Vendor and Oem, else the system's manufacturer."""
    declared = str(root.get("Vendor") or "").strip().lower()
    oem = {str(k).lower() for k in (root.get("Oem") or {})}
    maker = manufacturer.strip().lower()
    if declared.startswith("dell") or "dell" in oem or maker.startswith("dell"):
        return "dell"
    if declared.startswith("hpe") or "hpe" in oem or maker in ("hpe", "hp"):
        return "hpe"
    if declared.startswith("lenovo") or "lenovo" in oem or maker.startswith("lenovo"):
        return "lenovo"
    if "supermicro" in oem or declared.startswith("supermicro") or maker.startswith("supermicro"):
        return "supermicro"
    if declared.startswith("ami") or "ami" in oem:
        return "ami"
    if declared.startswith("nvidia") or maker.startswith("nvidia"):
        return "nvidia"
    if "mellanox" in maker:
        return "nvidia"
    return "generic"


def is_dell(manufacturer: str) -> bool:
    """Whether the system reports a Dell manufacturer (iDRAC)."""
    return manufacturer.strip().lower().startswith("dell")


def bios_apply_time(manufacturer: str, settings_annotation: dict[str, Any]) -> dict[str, Any]:
    """Extra body fields for a BIOS settings PATCH so the change is applied at the next reset.

    Dell iDRAC 9 (firmware 4.x to 7.x): a PATCH to Bios/Settings only stages values; nothing is
    applied at reset unless a configuration job exists. Asking for ApplyTime OnReset makes the
    iDRAC create that job itself (answered 202 with the job as task monitor). Other BMCs that
    advertise OnReset in SupportedApplyTimes get the same request, which is standard Redfish.
    """
    supported = settings_annotation.get("SupportedApplyTimes") or []
    if is_dell(manufacturer) or "OnReset" in supported:
        return {"@Redfish.SettingsApplyTime": {"ApplyTime": "OnReset"}}
    return {}


# Supermicro X11/X12 (Redfish 1.8-1.11): BIOS configuration and firmware update need the
# SFT-DCMS-SINGLE ("OOB") licence; without it the BMC answers 403 with one of these words.
LICENCE_WORDS = ("licen", "sft-dcms", "oob license")


def is_licence_refusal(message: str) -> bool:
    """Whether a 403 message says a licence is missing (a configuration error, not retried)."""
    lowered = message.lower()
    return any(word in lowered for word in LICENCE_WORDS)


def virtual_cd_by_id(media: dict[str, Any]) -> bool:
    """Whether a VirtualMedia member with no MediaTypes is a CD by its Id.

    AMI MegaRAC (Gigabyte G-series, VirtualMedia 1.3.1; redfish-mockups/ami-megarac-gigabyte)
    lists "CD1" with no MediaTypes at all; the Id is the only thing that says CD.
    """
    if media.get("MediaTypes"):
        return False
    return str(media.get("Id") or "").upper().startswith(("CD", "DVD"))


def image_read_back_is_name(read_back: str, wanted: str) -> bool:
    """Whether a VirtualMedia Image read back as a bare file name names the wanted URL.

    AMI MegaRAC keeps "ImageName" beside "Image" and some firmware reports only the name in
    Image once the medium is mounted; the name is what can be compared then.
    """
    name = wanted.rstrip("/").rsplit("/", 1)[-1].split("?", 1)[0]
    return read_back.rstrip("/").rsplit("/", 1)[-1] == name


# What a boot override asked for "Once" may read back as. sushy-tools 2.2 (libvirt and fake
# drivers) store it as "Continuous": libvirt has no one-shot boot device. Greenlight sets the
# override again before every reboot it wants, so a lasting one does no harm there.
ONCE_READS_BACK = ("Once", "Continuous")


# The one vendor quirk table: every departure from what the BMC declares, with its source. The
# per-vendor table in docs/redfish.md is this list; tests/redfish/test_quirk_table.py keeps them equal.
QUIRK_TABLE: list[QuirkRow] = [
    QuirkRow(
        "dell",
        "SimpleUpdate",
        "no Targets: the iDRAC picks the component from the package",
        "Dell iDRAC Redfish API guide (SimpleUpdate: Targets not supported); "
        "sushy/resources/updateservice/updateservice.py sends none unless asked",
    ),
    QuirkRow(
        "dell",
        "multipart push",
        'UpdateParameters {"Targets": [], "@Redfish.OperationApplyTime": "Immediate", "Oem": {}}',
        "NVIDIA/libredfish src/dell.rs UpdateParameters ('the BMC expects a {} in its JSON')",
    ),
    QuirkRow(
        "dell",
        "boot override",
        "BootSourceOverrideMode only when it is not already UEFI: each Mode write queues a BIOS "
        "job that collides with a pending BIOS-settings job (LC068)",
        "sushy/tests/oem/dell/unit/json_samples/error_pending_job.json; Ironic "
        "drivers/modules/drac/management.py",
    ),
    QuirkRow(
        "dell",
        "virtual-media boot",
        "one-time boot to VCD-DVD by the OEM ImportSystemConfiguration action, not a Cd override "
        "(before iDRAC 6.0 Cd boots the physical drive; iDRAC 10 refuses Cd)",
        "sushy/oem/dell/resources/manager/manager.py set_virtual_boot_device",
    ),
    QuirkRow(
        "dell",
        "UEFI HTTP boot",
        "the URI is BIOS attribute HttpDev1Uri (with HttpDev1EnDis Enabled); there is no "
        "Boot.HttpBootUri",
        "Dell iDRAC BIOS attribute registry (HttpDev1Uri); Ironic redfish-https boot notes",
    ),
    QuirkRow(
        "hpe",
        "boot override",
        "400 UnableToModifyDuringSystemPOST right after power-on is waited out and retried",
        "Ironic drivers/modules/redfish/management.py (retries boot-device PATCH during POST)",
    ),
    QuirkRow(
        "hpe",
        "UEFI HTTP boot",
        "the URI is BIOS attribute UrlBootFile (iLO 6 has no Boot.HttpBootUri)",
        "HPE iLO 6 / Gen11 UEFI configuration guide (UrlBootFile); Ironic ilo boot",
    ),
    QuirkRow(
        "hpe",
        "ETag",
        "strong ETags only in If-Match: responses are asked for without gzip (Accept-Encoding: "
        "identity); a 412 is retried with the strong form, then without If-Match",
        "sushy/resources/base.py (weak ETag retry) and sushy/resources/system/system.py "
        "set_system_boot_options",
    ),
    QuirkRow(
        "lenovo",
        "virtual media",
        "no InsertMedia action: the medium is PATCHed (Image, Inserted) with If-Match; a 428 "
        "is answered by reading the ETag and sending it",
        "capture lenovo-xcc-sr670v2 (VirtualMedia without Actions); sushy "
        "resources/manager/virtual_media.py (PATCH fallback)",
    ),
    QuirkRow(
        "lenovo",
        "SimpleUpdate",
        "Targets only where declared allowed (XCC allows only FirmwareInventory/BMC-Backup): "
        "otherwise none",
        "capture lenovo-xcc-sr670v2 UpdateService (Targets@Redfish.AllowableValues)",
    ),
    QuirkRow(
        "supermicro",
        "multipart push",
        "Targets Managers/1 (BMC) or Systems/1/Bios (BIOS) with Oem.Supermicro preserve flags "
        "(PreserveCfg/Sdr/Ssl, PreserveME/NVRAM/SMBIOS), or BMC settings and NVRAM are lost",
        "NVIDIA/libredfish src/supermicro.rs UpdateParameters",
    ),
    QuirkRow(
        "supermicro",
        "virtual-media boot",
        "boot target UsbCd where the BMC lists it (Cd is the physical drive)",
        "sushy/resources/system/system.py (UsbCd for virtual media); capture "
        "supermicro-hgx-sys821ge AllowableValues",
    ),
    QuirkRow(
        "supermicro",
        "InsertMedia",
        "no Inserted/WriteProtected unless the InsertMediaActionInfo lists them (X11/X12 "
        "refuse them); a refusal naming them is retried without",
        "sushy/resources/manager/virtual_media.py insert_media retries",
    ),
    QuirkRow(
        "ami",
        "InsertMedia",
        "TransferProtocolType (from the URI scheme) and dummy UserName/Password: AMI MegaRAC, the "
        "DGX H100 BMC among them, refuse the insert without them",
        "sushy/tests/unit/json_samples/transfer_proto_required_error*.json, "
        "credentials_required_error.json; sushy virtual_media.py",
    ),
    QuirkRow(
        "nvidia",
        "multipart push",
        'UpdateParameters {"Targets": [], "ForceUpdate": true}: the bundle names its components',
        "NVIDIA/libredfish src/nvidia_gbx00.rs UpdateParameters",
    ),
    QuirkRow(
        "nvidia",
        "InsertMedia",
        "only https:// or smb:// images, mounted asynchronously: Inserted is read back until it "
        "shows or the look budget is spent",
        "OpenBMC bmcweb redfish-core/lib/virtual_media.hpp (parseTransferProtocol)",
    ),
]

# Firmware completion and activation (update_tracking.py, activation.py).
QUIRK_TABLE += [
    QuirkRow(
        "hpe",
        "firmware completion",
        "SimpleUpdate answers 200 with no task: follow UpdateService.Oem.Hpe.State and "
        "FlashProgressPercent; never reset the host before State reads Complete",
        "HPE iLO 5/6 RESTful API reference (UpdateService Oem.Hpe State); Ironic "
        "drivers/modules/redfish/firmware.py (iLO completes the BIOS task before a reboot)",
    ),
    QuirkRow(
        "dell",
        "firmware completion",
        "the monitor is a job (JID_); a Scheduled job (BIOS, NIC packages) waits for a host "
        "reset: reset while it is pending, then follow it to Completed; a monitor gone (404) "
        "after that is read from the inventory",
        "sushy/tests/oem/dell/unit/json_samples/task.json (TaskState Starting, JobState "
        "Scheduled); Ironic drivers/modules/redfish/firmware.py _handle_bios_task_starting, "
        "_handle_bios_task_monitor_disappeared",
    ),
    QuirkRow(
        "dell",
        "firmware staging",
        'clear the job queue first: POST DellJobService.DeleteJobQueue {"JobID": "JID_CLEARALL"}, '
        "so a leftover job cannot refuse the new one (LC068, RAC0679)",
        "sushy/oem/dell/resources/manager/job_service.py delete_jobs; sushy "
        "tests/oem/dell/unit/json_samples/error_pending_job.json, error_running_job.json",
    ),
    QuirkRow(
        "generic",
        "firmware completion",
        "an OpenBMC task monitor answers 202 while running, 204 once, then 404, and is forgotten "
        "when the BMC resets: a vanished monitor means read the inventory, never a failure",
        "openbmc/bmcweb redfish-core/lib/task.hpp (task monitor handler, in-memory tasks)",
    ),
    QuirkRow(
        "nvidia",
        "firmware activation",
        'POST Chassis/BMC_0 Actions/Oem/NvidiaChassis.AuxPowerReset {"ResetType": '
        '"AuxPowerCycleForce"} where it is offered: until then the old version runs',
        "NVIDIA GB200 NVL Redfish guide (firmware activation); capture nvidia-gb200 "
        "Chassis/BMC_0 Actions.Oem",
    ),
    QuirkRow(
        "nvidia",
        "firmware activation",
        'POST ComputerSystem.Reset {"ResetType": "PowerCycle"} (the tray\'s AC cycle) on an '
        "NVLink switch tray, a BMC whose Chassis lists MGX_NVSwitch_0 (or a node enrolled as "
        "a switch tray): until then its new BMC and BIOS images wait",
        "NVIDIA/open-nvfwupd@bacc440e FactoryMode/TrayFlowFunctions/"
        "switch_factory_flow_functions.py (PowerCycle); NVIDIA/bare-metal-manager-core@7778162c "
        "crates/site-explorer/src/redfish.rs is_switch (MGX_NVSwitch_0)",
    ),
    QuirkRow(
        "lenovo",
        "firmware activation",
        "a new XCC image runs after Manager.Reset GracefulRestart",
        "Lenovo XCC Redfish REST API guide (firmware update: reset the XCC to activate); "
        "capture lenovo-xcc-sr670v2 Managers/1 Manager.Reset",
    ),
    QuirkRow(
        "generic",
        "firmware activation",
        "a server's new BMC image runs once the BMC has restarted itself: no host reset; the "
        "BMC's version is read until it moves (unreachable meanwhile is the restart), and only "
        "a version that has not moved in 15 minutes gets a host reset",
        "Ironic drivers/modules/redfish/firmware.py _setup_bmc_update_monitoring, "
        "_handle_bmc_update_completion ('BMC updates do not reboot immediately')",
    ),
]
