"""The one table of vendor naming conventions for FirmwareInventory entries.

Redfish links most entries to what they belong to (RelatedItem) and says whether they run
(Status.State); this table covers what it leaves open: ids that name a sub-component, copies
that are not running (backup, staging, pending, golden, previous), and parts no managed phase
updates. Each row names the firmware or capture it was seen on (tests/redfish/captures/); a row
of a device no capture here holds (a power shelf's PMC) names the public listing it comes from
and carries the ids that listing shows (`listed`).

A row matches the entry's Id (or its Name when the Id is opaque) with a regular expression,
case-insensitive. The first matching row wins; an entry no row matches is left to the
structure (classify.py), and one the structure cannot place either stays unknown.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property

from fleet.choices import ComponentKind
from fleet.manifests import FIRMWARE_PARTS

# Sub-components ("parts") an entry can be: one list, the manifest's (fleet/manifests.py). The
# kind is the component a firmware phase manages (or None: nothing updates it out of band); the
# part says which piece of it.
PARTS = FIRMWARE_PARTS


class Patterned:
    """A row with a `pattern`, matched without regard to case: compiled once, since every
    firmware look places each inventory entry against the rows (re.search looked each pattern
    up in re's cache first)."""

    pattern: str

    @cached_property
    def regex(self) -> re.Pattern[str]:
        return re.compile(self.pattern, re.IGNORECASE)


@dataclass(frozen=True)
class Row(Patterned):
    """One naming convention: entries whose id (or name) matches are this kind and part."""

    pattern: str
    kind: str | None
    part: str
    seen_on: str
    field: str = "Id"  # "Id" or "Name"
    running: bool = True  # False: a copy that is not what runs (backup, staging...)
    # True: the entry is NVIDIA networking firmware whose major version names the device
    # (NVIDIA_FAMILIES), where nothing else says ConnectX or BlueField.
    by_family: bool = False
    # The ids a public listing shows, for a row no capture kept here can match (a power shelf).
    listed: tuple[str, ...] = ()

    def matches(self, entry_id: str, name: str) -> bool:
        return self.regex.search(entry_id if self.field == "Id" else name) is not None


K = ComponentKind
DELL = "Dell iDRAC 9 6.00.30.00, PowerEdge R750 (dell-idrac9-r750)"
SMC = "Supermicro X13 BMC 11.01.01, SYS-821GE-TNHR (supermicro-hgx-sys821ge)"
LENOVO = "Lenovo XCC TGBT42S 2.83, ThinkSystem SR670 V2 (lenovo-xcc-sr670v2)"
HPE = "HPE iLO 5 2.70/2.72, XL675d Gen10 Plus and DL385 Gen10 Plus v2 (hpe-ilo5-*)"
DGX = "NVIDIA DGX H100, HMC HGX-22.10-1-rc57 (nvidia-dgx-h100)"
HGX = "NVIDIA HGX HMC on DGX H100, GH200-24.05-2 and GB200Nvl-24.12-8 (nvidia-*)"
GRACE = "NVIDIA GH200-24.05-2 and GB200Nvl-24.12-8 (nvidia-gh200, nvidia-gb200)"
BF3 = "NVIDIA BlueField-3 BMC BF-24.10-10 (nvidia-bluefield3-bmc)"
CRAY = "HPE Cray EX235n nC 1.6.19 (hpe-cray-ex235n)"
AMI = "AMI MegaRAC 12.84.13, GIGABYTE H262-Z63 (ami-megarac-gigabyte)"
# No capture of a power shelf is kept: NVIDIA's nvfwupd guide lists a Delta shelf's firmware
# (docs.nvidia.com/multi-node-nvlink-systems/nvfupd-guide/examples/powershelf.html, "Example 1:
# Delta PowerShelf", model AHE50V660A33KWL, PMC 3.2.4): FW_ERoT_BMC_0, FW_PMC_alt,
# FW_PMC_primary, FW_PSU_1..6; after its "Delta PMC Update" FW_PMC_primary reads the new 3.2.3
# and FW_PMC_alt keeps 3.2.4. NVIDIA's DGX GB200 firmware update guide (docs.nvidia.com/dgx/
# dgxgb200-fw-update-guide/pwshelf-fw-update.html) names the two the PMC's "Primary and Backup
# partitions" (Managers/PMC_0 Oem.deltaenergysystems.FlashSelector). Neither NVIDIA/open-nvfwupd
# @bacc440e6c03c19d2bf358f6a0f0e062ae5bbd50 nor NVIDIA/bare-metal-manager-core
# @7778162cf43764001b131a939fdea586d04b4eeb spells these ids (git grep of both snapshots).
DELTA_PMC = "Delta power shelf PMC 3.2.4, AHE50V660A33KWL (nvfwupd guide, PowerShelf examples)"

ROWS: tuple[Row, ...] = (
    # Copies that are not running, whatever they belong to.
    Row(r"^(Previous|Available)-", None, "unknown", DELL, running=False),
    Row(r"^(Backup|Staging|Golden)_", None, "unknown", SMC, running=False),
    Row(r"-(Pending|Backup)$", None, "unknown", LENOVO, running=False),
    Row(r"^Redundant System ROM$", None, "unknown", HPE, field="Name", running=False),
    Row(r"^golden_image_", None, "unknown", BF3, running=False),
    Row(r"^Recovery$", None, "unknown", CRAY, running=False),
    # The PMC's backup partition: nvfwupd's update leaves it at the old version.
    Row(r"^FW_PMC_alt$", None, "unknown", DELTA_PMC, running=False, listed=("FW_PMC_alt",)),
    # The HGX tray behind its own management controller (HMC): every HGX_ id is a part of it.
    Row(r"^HGX_FW_BMC_\d+$", K.HGX, "hmc", HGX),
    Row(r"^HGX_FW_ERoT_", K.HGX, "erot", HGX),
    Row(r"^HGX_FW_GPU_", K.HGX, "gpu", HGX),
    Row(r"^HGX_FW_NVSwitch_", K.HGX, "nvswitch", HGX),
    Row(r"^HGX_FW_FPGA_", K.HGX, "fpga", HGX),
    Row(r"^HGX_FW_PCIeRetimer_", K.HGX, "retimer", HGX),
    Row(r"^HGX_FW_PCIeSwitch_", K.HGX, "pcie_switch", HGX),
    Row(r"^HGX_FW_CPLD_", K.HGX, "cpld", GRACE),
    Row(r"^HGX_FW_CPU_", K.HGX, "cpu", GRACE),
    Row(r"^HGX_InfoROM_", None, "inforom", HGX),
    Row(r"^HGX_PCIeSwitchConfig_", None, "pcie_switch", GRACE),
    # The host side of NVIDIA platforms.
    Row(r"^HostBMC_\d+$", K.BMC, "bmc", DGX),
    Row(r"^HostBIOS_\d+$", K.BIOS, "bios", DGX),
    Row(r"^(FW_)?E[Rr]o[Tt]_", None, "erot", "DGX H100 EROT_BMC_0/EROT_BIOS_0; GH200, GB200"),
    Row(r"^FW_BMC_\d+$", K.BMC, "bmc", GRACE),
    # A power shelf's PMC is its management controller: the image the shelf's bmc target sets
    # (fleet's power shelf plan updates "bmc" alone).
    Row(r"^FW_PMC_primary$", K.BMC, "bmc", DELTA_PMC, listed=("FW_PMC_primary",)),
    Row(r"^(FW_)?CPLD", None, "cpld", "DGX H100 CPLDMB_0; GH200/GB200 FW_CPLD_0"),
    Row(r"^PCIeRetimer_|^PCIeSwitch_", None, "pcie_switch", DGX),
    Row(r"^PSU_\d+$", K.PSU, "psu", DGX),
    Row(r"^UEFI$", K.BIOS, "bios", f"{GRACE}; {LENOVO}"),
    Row(
        r"^CX7_\d+$|^NIC_\d+$",
        K.NIC,
        "nic",
        "NVIDIA GB200Nvl-24.12-8 (nvidia-gb200)",
        by_family=True,
    ),
    # BlueField's own BMC: the DPU's NIC firmware is what a DPU target sets.
    Row(r"^BMC_Firmware$", K.BMC, "bmc", BF3),
    Row(r"^Bluefield_FW_ERoT$", None, "erot", BF3),
    Row(r"^DPU_NIC$", K.DPU, "dpu", BF3),
    Row(r"^DPU_", K.DPU, "dpu_software", BF3),
    # Dell iDRAC: "<state>-<component code>-<version>__<FQDD>"; the FQDD says what it is.
    Row(r"__iDRAC\.Embedded", K.BMC, "bmc", DELL),
    Row(r"__BIOS\.Setup", K.BIOS, "bios", DELL),
    Row(r"__ServiceModule\.", None, "service_module", DELL),
    Row(r"__DriverPack\.", None, "driver_pack", DELL),
    Row(r"__Diagnostics\.", None, "diagnostics", DELL),
    Row(r"__USC\.", None, "lifecycle", DELL),
    Row(r"__CPLD\.", None, "cpld", DELL),
    Row(r"__TPM\.", None, "tpm", DELL),
    Row(r"__PSU\.", K.PSU, "psu", DELL),
    Row(r"__RAID\.Backplane", None, "backplane", DELL),
    Row(r"__(NIC|InfiniBand)\.", K.NIC, "nic", DELL),
    Row(r"__Disk\.", K.NVME, "drive", DELL),
    # Supermicro X13: plain ids; the BIOS's Intel ME and capsule drivers link to the BIOS too.
    Row(r"^BIOS_ME$", None, "me", SMC),
    Row(r"^Capsule_", None, "capsule", SMC),
    Row(r"CPLD", None, "cpld", SMC),
    Row(r"^NVMeController\d+$", None, "storage_controller", SMC),
    Row(r"^PowerSupply\d+$", K.PSU, "psu", SMC),
    # Lenovo XCC: "BMC-Primary" is the running XCC; LXPM is its provisioning manager.
    Row(r"^BMC-Primary$", K.BMC, "bmc", LENOVO),
    Row(r"^LXPM", None, "provisioning", LENOVO),
    Row(r"^PSU\d+$", K.PSU, "psu", LENOVO),
    # HPE iLO 5: numeric ids, so the name carries the meaning.
    Row(r"^iLO \d$", K.BMC, "bmc", HPE, field="Name"),
    Row(r"^System ROM$", K.BIOS, "bios", HPE, field="Name"),
    Row(r"^Intelligent Platform Abstraction Data$", None, "platform_data", HPE, field="Name"),
    Row(r"^Intelligent Provisioning$", None, "provisioning", HPE, field="Name"),
    Row(r"Programmable Logic Device$", None, "cpld", HPE, field="Name"),
    Row(r"^Power Supply Firmware$", K.PSU, "psu", HPE, field="Name"),
    Row(r"^Power Management Controller", None, "cpld", HPE, field="Name"),
    Row(r"^Embedded Video Controller$", None, "video", HPE, field="Name"),
    Row(r"^TPM Firmware$", None, "tpm", HPE, field="Name"),
    Row(r"Smart Array|Smart Storage", None, "storage_controller", HPE, field="Name"),
    Row(r"^NVIDIA HGX .*GPU", K.HGX, "baseboard", HPE, field="Name"),
    Row(r"^NVIDIA NV ?Switch", K.HGX, "nvswitch", HPE, field="Name"),
    Row(r"^NVIDIA [AH]\d+", K.GPU, "gpu", HPE, field="Name"),
    Row(r"^NVMe Drive$", K.NVME, "drive", HPE, field="Name"),
    Row(r"BlueField", K.DPU, "dpu", HPE, field="Name"),
    Row(r"ConnectX|Ethernet|InfiniBand|\bNIC$|Eth Adptr", K.NIC, "nic", HPE, field="Name"),
    Row(r"\bBP$", None, "backplane", HPE, field="Name"),
    Row(r"^Chassis Firmware$", None, "cpld", HPE, field="Name"),
    # HPE Cray EX235n: two nodes behind one BMC, ids "Node<n>.<part>".
    Row(r"^Node\d+\.BIOS$", K.BIOS, "bios", CRAY),
    Row(r"^Node\d+\.Acc\d+\.VBIOS$", K.GPU, "gpu", CRAY),
    Row(r"^Node\d+\.HPCNet\d+$", K.NIC, "nic", CRAY),
    Row(r"^Node\d+\.AccFPGA\d+$|^FPGA\d+$", None, "fpga", CRAY),
    Row(r"^Node\d+\.ManagementEthernet$", None, "nic", CRAY),
    Row(r"^Bootloader$", None, "bmc", CRAY),
    # Plain "BIOS" and "BMC" ids: AMI MegaRAC, Supermicro, Cray; "MB_CPLD" on AMI.
    Row(r"^BIOS$", K.BIOS, "bios", f"{AMI}; {SMC}"),
    Row(r"^BMC$", K.BMC, "bmc", f"{AMI}; {SMC}; {CRAY}"),
)


# Words BMCs put where a version belongs when there is none: such an entry runs nothing.
NO_VERSION = {"", "n/a", "na", "not present", "version not available", "undefined", "-*", "none"}
# Status.State values of a copy that is not the one running.
NOT_RUNNING_STATES = {"disabled", "standbyspare", "standbyoffline", "absent"}


# NVIDIA (Mellanox) networking firmware: the major version is the device family, the same on
# every board of it (GB200's NIC_0 at 32.41.1300 is one of its two BlueField-3 DPUs; CX7_0 at
# 28.42.1234 its ConnectX-7).
NVIDIA_FAMILIES = {
    "20": (K.NIC, "nic", "ConnectX-6"),
    "22": (K.NIC, "nic", "ConnectX-6 Dx"),
    "28": (K.NIC, "nic", "ConnectX-7"),
    "24": (K.DPU, "dpu", "BlueField-2"),
    "32": (K.DPU, "dpu", "BlueField-3"),
}


def nvidia_family(version: str) -> tuple[str, str, str] | None:
    """(kind, part, model) of NVIDIA networking firmware by its major version, or None."""
    major = version.strip().split(".", 1)[0]
    return NVIDIA_FAMILIES.get(major)


@dataclass(frozen=True)
class OemHint:
    """A vendor's Oem property that says whether an entry runs: `path` into the entry's Oem
    object, and the values (lower case) it has when it does run."""

    path: tuple[str, ...]
    running_values: frozenset[str]
    seen_on: str


OEM_HINTS: tuple[OemHint, ...] = (
    # "Installed" for what runs; "AvailableForInstallation" for Current-/Previous- copies.
    OemHint(("Dell", "DellSoftwareInventory", "Status"), frozenset({"installed"}), DELL),
    # "Active" for what runs (seen on the GPU entries).
    OemHint(("Lenovo", "FirmwareStatus"), frozenset({"active"}), LENOVO),
)


def oem_says_not_running(body: dict) -> bool:
    """Whether a vendor's Oem property on an entry says it is not the copy that runs."""
    for hint in OEM_HINTS:
        value: object = body.get("Oem") or {}
        for key in hint.path:
            value = value.get(key) if isinstance(value, dict) else None
        if isinstance(value, str) and value.lower() not in hint.running_values:
            return True
    return False


def not_running(entry_id: str, name: str) -> Row | None:
    """The row that says this entry is a copy that does not run (backup, staging...), if any."""
    return next((row for row in ROWS if not row.running and row.matches(entry_id, name)), None)


def match(entry_id: str, name: str) -> Row | None:
    """The first row that places an entry (kind and part), or None."""
    return next((row for row in ROWS if row.running and row.matches(entry_id, name)), None)


@dataclass(frozen=True)
class DeviceRow(Patterned):
    """A device model convention: a PCIe device or network adapter whose model text matches."""

    pattern: str
    kind: str | None
    part: str
    seen_on: str


# Matched against a device's Model, Name, PartNumber and Id joined: BlueField before ConnectX
# (a BlueField is a ConnectX with Arm cores), NVSwitch before GPUs (both are NVIDIA).
DEVICE_ROWS: tuple[DeviceRow, ...] = (
    DeviceRow(r"bluefield|\bMBF\w+|900-9D3", K.DPU, "dpu", f"{SMC}; {LENOVO}; GB200; HPE DL385"),
    DeviceRow(r"nvswitch", K.HGX, "nvswitch", DGX),
    DeviceRow(
        r"(^|\s)GPU\d+\b|nvidia.*\b[AHBL]\d{2,3}\b|\b[AHBL]\d{2,3}\s+\d+GB|GH200|GB200",
        K.GPU,
        "gpu",
        f"{SMC} (GPU1 'H100 80GB HBM3'); {LENOVO} ('NVIDIA L40'); {DGX}",
    ),
    DeviceRow(
        r"connectx|\bMCX\w+|\bMT2\d{4}|ethernet|network|\bNIC\b|infiniband|\bCX\d",
        K.NIC,
        "nic",
        f"{DELL}; {SMC}; {HPE}; GB200 IO board CX7",
    ),
    DeviceRow(r"nvme", K.NVME, "drive", f"{DELL}; {SMC}"),
)


def device(text: str) -> DeviceRow | None:
    """The first device row that matches a device's model text, or None."""
    return next((row for row in DEVICE_ROWS if row.regex.search(text)), None)
