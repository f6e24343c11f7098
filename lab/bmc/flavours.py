"""Vendor flavours of the lab's BMCs: ids, link style, BIOS settings flow and update methods.

Ids and shapes follow the real captures in tests/redfish/captures (Dell iDRAC 9 6.00, HPE iLO 5,
Supermicro X13 on an HGX H100 board, NVIDIA DGX H100) and the vendors' published Redfish guides:
the inventory entries no phase manages (backup, golden and staging copies, the HGX tray's GPUs,
NVSwitches and ERoTs, the BIOS's Intel ME, driver packs) are listed as the captures list them, so
a firmware phase that mistook one for its own component would drift forever against the lab.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .member_flavours import member_flavours

# What the lab's generic BMC offers as BootSourceOverrideTarget.
GENERIC_BOOT_TARGETS = ("None", "Pxe", "Hdd", "Cd", "Usb", "BiosSetup", "UefiHttp")
# Boot.BootSourceOverrideTarget@Redfish.AllowableValues as each capture lists them.
DELL_BOOT_TARGETS = ("None", "Pxe", "Floppy", "Cd", "Hdd", "BiosSetup", "Utilities",
                     "UefiTarget", "SDCard", "UefiHttp")  # dell-idrac9-r750  # fmt: skip
HPE_BOOT_TARGETS = ("None", "Cd", "Hdd", "Usb", "SDCard", "Utilities", "Diags", "BiosSetup",
                    "Pxe", "UefiShell", "UefiHttp", "UefiTarget")  # hpe-ilo5-apollo6500-*  # fmt: skip
SUPERMICRO_BOOT_TARGETS = ("None", "Pxe", "Floppy", "Cd", "Usb", "Hdd", "BiosSetup", "UsbCd",
                           "UefiBootNext", "UefiHttp")  # supermicro-hgx-sys821ge  # fmt: skip
DGX_BOOT_TARGETS = ("None", "Pxe", "Floppy", "Cd", "Usb", "Hdd", "BiosSetup", "Utilities",
                    "Diags", "UefiShell", "UefiTarget", "SDCard", "UefiHttp", "RemoteDrive",
                    "UefiBootNext")  # nvidia-dgx-h100 Systems/DGX/SD  # fmt: skip
GB200_BOOT_TARGETS = ("None", "Pxe", "Hdd", "Cd", "Diags", "BiosSetup",
                      "Usb")  # nvidia-gb200 Systems/System_0 (no UefiHttp)  # fmt: skip
LENOVO_BOOT_TARGETS = ("None", "Pxe", "Cd", "Usb", "Hdd", "BiosSetup", "Diags",
                       "UefiTarget")  # lenovo-xcc-sr670v2  # fmt: skip
AMI_BOOT_TARGETS = ("None", "Pxe", "Floppy", "Cd", "Usb", "Hdd", "BiosSetup", "Utilities",
                    "UefiShell", "UefiTarget", "SDCard", "UefiHttp", "RemoteDrive",
                    "UefiBootNext")  # ami-megarac-gigabyte  # fmt: skip
# OpenBMC's virtual media (NVIDIA's BMCs) mounts only these (bmcweb redfish-core/lib/
# virtual_media.hpp: "https" and "smb" for the proxy-less InsertMedia).
OPENBMC_MEDIA_SCHEMES = ("https", "smb")


@dataclass(frozen=True)
class Flavour:
    """How one vendor's BMC lays out and behaves."""

    name: str
    manufacturer: str
    model: str
    manager_model: str
    system_id: str
    manager_id: str
    chassis_id: str
    serial_prefix: str
    bios_settings: str  # last path segment of the pending-settings object
    trailing_slash: bool  # iLO links end in "/"
    lower_bios_links: bool  # iLO links to BIOS in lower case ("/redfish/v1/systems/1/bios/")
    bios_job: bool  # iDRAC: BIOS applies at reset only through a configuration job
    etag_required: bool  # iLO: PATCH of the settings object needs If-Match
    simple_update: bool
    multipart_path: str  # "" when multipart push is not offered
    licence_gated: bool  # Supermicro: BIOS settings and updates need the OOB licence
    firmware_names: dict[str, str]
    # ProtocolFeaturesSupported.ExpandQuery as the service root states it; None: no $expand.
    expand_query: dict[str, object] | None = None
    # Inventory ids of bmc/bios/hgx where the vendor does not spell them as firmware_id() does.
    inventory_ids: dict[str, str] = field(default_factory=dict)
    # How the inventory writes the BIOS version ("{v}" is the version the system reports).
    bios_inventory_version: str = "{v}"
    # Entries no phase manages, listed as the vendor lists them: (id, name, version) and
    # optionally what their RelatedItem links to ("manager" or "bios"), as the vendor links them.
    extra_firmware: tuple[tuple[str, ...], ...] = ()
    # Whether the BMC lists NIC, DPU and drive firmware (NVIDIA's DGX BMC does not).
    lists_device_firmware: bool = True
    # An HGX baseboard served as a second ComputerSystem behind its own manager (the HMC).
    baseboard: bool = False
    # -- boot, virtual media, BIOS and ETag writes (issue 29): what the vendor refuses. The
    # defaults are the lab's lenient generic BMC; each flavour cites where its values come from.
    boot_targets: tuple[str, ...] = GENERIC_BOOT_TARGETS
    # BootSourceOverrideEnabled@Redfish.AllowableValues where the capture lists them.
    boot_enabled_values: tuple[str, ...] = ()
    # Last path segment of the system's own settings object ("SD", "Settings"): when set, Boot
    # is PATCHed there and read back there; a PATCH of Boot on the system itself is refused.
    system_settings: str = ""
    boot_values_on_system: bool = True  # DGX lists AllowableValues on its settings object only
    media_owner: str = "manager"  # where the VirtualMedia collection hangs: system or manager
    media_id: str = "CD"
    media_types: tuple[str, ...] = ("CD", "DVD")  # () as AMI MegaRAC serves its CD1
    media_insert_action: bool = True  # False: no InsertMedia, the medium is PATCHed in
    media_required: tuple[str, ...] = ()  # InsertMedia parameters the BMC demands
    media_refused: tuple[str, ...] = ()  # InsertMedia parameters the BMC refuses
    media_schemes: tuple[str, ...] = ()  # URL schemes it mounts (empty: any)
    media_mount_seconds: float = 0.0  # lab seconds before Inserted reads true
    media_boot_targets: tuple[str, ...] = ("Cd",)  # overrides that boot the virtual medium
    scp_import: bool = False  # Dell OEM ImportSystemConfiguration (one-time boot to VCD-DVD)
    post_seconds: float = 0.0  # lab seconds after power-on in which Boot cannot be PATCHed
    if_match_always: bool = False  # every PATCH needs If-Match: 428 without one
    weak_etag_refused: bool = False  # If-Match with a W/ ETag answers 412
    http_boot_attribute: str = ""  # the BIOS attribute that takes the UEFI HTTP boot URI
    update_required: tuple[str, ...] = ()  # SimpleUpdate parameters the BMC demands
    # -- firmware completion and activation (issue 29) ----------------------------------------
    # How an accepted update reports progress: "task" (the lab's generic Task that answers 202
    # while running), "openbmc" (a task monitor: 202, 204 once, then 404; tasks forgotten when
    # the BMC resets), "dell_job" (iDRAC JID_ jobs), "hpe_flash" (no task: Oem.Hpe.State).
    update_progress: str = "task"
    # When a new BMC image runs: "now", "manager_reset", "aux_power", "power_cycle" (its AC).
    bmc_activation: str = "now"
    # When any other new image runs: "host_reset", "aux_power" or "power_cycle".
    host_activation: str = "host_reset"
    # A rack-scale member's kind ("compute_tray", "switch_tray", "power_shelf"; issue 34), or ""
    # for a server: member_flavours.py declares them.
    member: str = ""

    def link(self, path: str) -> str:
        """A link as this BMC spells it."""
        if self.lower_bios_links and "/bios" in path.lower():
            path = path.lower()
        if self.trailing_slash and not path.endswith("/"):
            path += "/"
        return path


def hgx_parts(gpu: str, nvswitch: str, erot: str) -> tuple[tuple[str, str, str], ...]:
    """The HGX H100 tray's own entries as its HMC lists them: GPUs, NVSwitches, ERoTs."""
    out = [(f"HGX_FW_GPU_SXM_{i}", "Software Inventory", gpu) for i in range(1, 9)]
    out += [(f"HGX_FW_NVSwitch_{i}", "Software Inventory", nvswitch) for i in range(4)]
    out += [(f"HGX_FW_ERoT_GPU_SXM_{i}", "Software Inventory", erot) for i in range(1, 9)]
    out += [("HGX_FW_ERoT_BMC_0", "Software Inventory", erot)]
    out += [(f"HGX_InfoROM_GPU_SXM_{i}", "Software Inventory", "G520.0200.00.05") for i in (1, 2)]
    return tuple(out)


FLAVOURS: dict[str, Flavour] = {
    "dell": Flavour(
        name="dell",
        manufacturer="Dell Inc.",
        model="PowerEdge XE9680",
        manager_model="iDRAC 9",
        system_id="System.Embedded.1",
        manager_id="iDRAC.Embedded.1",
        chassis_id="System.Embedded.1",
        serial_prefix="GLD",
        bios_settings="Settings",
        trailing_slash=False,
        lower_bios_links=False,
        bios_job=True,
        etag_required=False,
        simple_update=True,
        multipart_path="/redfish/v1/UpdateService/MultipartUpload",
        licence_gated=False,
        firmware_names={
            "bmc": "Integrated Dell Remote Access Controller",
            "bios": "BIOS",
            "hgx": "HGX_FW_BMC_0",
            "nic": "Mellanox ConnectX-7",
            "dpu": "NVIDIA BlueField-3",
            "nvme": "Dell Ent NVMe PM1733a",
        },
        extra_firmware=(
            # As iDRAC 9 6.00.30.00 lists them on a PowerEdge R750 (dell-idrac9-r750).
            (
                "Installed-104684-4.0.1__ServiceModule.Embedded.1",
                "Dell EMC iDRAC Service Module Embedded Package v4.0.1, A00",
                "4.0.1",
            ),
            (
                "Installed-18981-21.03.10__DriverPack.Embedded.1:LC.Embedded.1",
                "Dell OS Driver Pack, 21.03.10, A00",
                "21.03.10",
            ),
            (
                "Installed-25806-4301A56__Diagnostics.Embedded.1:LC.Embedded.1",
                "Dell 64 Bit uEFI Diagnostics, version 4301, 4301A56, 4301.57",
                "4301A56",
            ),
            ("Installed-27763-1.0.5__CPLD.Embedded.1", "System CPLD", "1.0.5"),
            ("Installed-108076-00.2A.2B__PSU.Slot.1", "Power Supply.Slot.1", "00.2A.2B"),
            *hgx_parts("96.00.89.00.01", "96.10.4A.00.01", "00.02.0150.0000_n00"),
        ),  # fmt: skip
        # As iDRAC 9 states it (and the DMTF public rack mockup).
        expand_query={
            "ExpandAll": True,
            "Levels": True,
            "Links": True,
            "MaxLevels": 6,
            "NoLinks": True,
        },  # fmt: skip
        # Systems/System.Embedded.1 Boot AllowableValues and VirtualMedia/1 (CD, DVD, USBStick)
        # under the system, as iDRAC 9 6.00 serves them (dell-idrac9-r750).
        boot_targets=DELL_BOOT_TARGETS,
        media_owner="system",
        media_id="1",
        media_types=("CD", "DVD", "USBStick"),
        # iDRAC 6.x boots the virtual CD on "Cd"; before 6.0 "Cd" boots the physical drive (the
        # "idrac_before_6" fault) and only the OEM one-time boot to VCD-DVD works (Ironic's
        # redfish-virtual-media Dell note; sushy oem/dell/resources/manager/manager.py
        # set_virtual_boot_device).
        scp_import=True,
        # No Boot.HttpBootUri on iDRAC: the URI is the BIOS attribute HttpDev1Uri (libredfish
        # "Dell set_boot_override via HttpDev1Uri BIOS attribute"; Dell BIOS attribute registry).
        http_boot_attribute="HttpDev1Uri",
        # Updates are jobs (JID_...); BIOS and NIC packages wait Scheduled for the host's reboot
        # (sushy tests/oem/dell/unit/json_samples/task.json, job.json; Ironic redfish
        # firmware.py _handle_bios_task_starting).
        update_progress="dell_job",
    ),
    "hpe": Flavour(
        name="hpe",
        manufacturer="HPE",
        model="ProLiant XL675d Gen10 Plus",
        manager_model="iLO 5",
        system_id="1",
        manager_id="1",
        chassis_id="1",
        serial_prefix="MXQ",
        bios_settings="settings",
        trailing_slash=True,
        lower_bios_links=True,
        bios_job=False,
        etag_required=True,
        simple_update=True,
        multipart_path="",
        licence_gated=False,
        firmware_names={
            "bmc": "iLO 5",
            "bios": "System ROM",
            "hgx": "NVIDIA HGX A100 8 GPU 40",
            "nic": "HPE InfiniBand HDR/Ethernet 200Gb",
            "dpu": "NVIDIA BlueField-2",
            "nvme": "NVMe Drive",
        },
        # As the iLO 5 capture states it (tests/redfish/captures/hpe-ilo5-*).
        expand_query={
            "ExpandAll": False,
            "Levels": True,
            "Links": False,
            "MaxLevels": 1,
            "NoLinks": True,
        },  # fmt: skip
        # Boot AllowableValues of Systems/1, and the CD as Managers/1/VirtualMedia/2
        # (hpe-ilo5-apollo6500-xl675d-a100).
        boot_targets=HPE_BOOT_TARGETS,
        media_id="2",
        # iLO answers a Boot PATCH during POST with iLO.2.x.UnableToModifyDuringSystemPOST;
        # Ironic retries it (ironic/drivers/modules/redfish/management.py).
        post_seconds=10.0,
        # iLO refuses a weak ETag in If-Match; it serves strong ones when the request does not
        # ask for gzip (sushy connector.py's weak-to-strong ETag retry on 412).
        weak_etag_refused=True,
        # iLO 6 has no Boot.HttpBootUri: the URI is the BIOS attribute UrlBootFile (HPE UEFI
        # HTTP boot user guide, "UrlBootFile").
        http_boot_attribute="UrlBootFile",
        # SimpleUpdate answers 200 with no task; the flash reports UpdateService.Oem.Hpe.State
        # and FlashProgressPercent (HPE iLO 5/6 RESTful API reference, UpdateService).
        update_progress="hpe_flash",
    ),
    "supermicro": Flavour(
        name="supermicro",
        manufacturer="Supermicro",
        model="SYS-821GE-TNHR",
        manager_model="BMC X13",
        system_id="1",
        manager_id="1",
        chassis_id="1",
        serial_prefix="S5",
        bios_settings="SD",
        trailing_slash=False,
        lower_bios_links=False,
        bios_job=False,
        etag_required=False,
        simple_update=False,
        multipart_path="/redfish/v1/UpdateService/upload",
        licence_gated=True,
        firmware_names={
            "bmc": "BMC",
            "bios": "BIOS",
            "hgx": "Software Inventory",
            "nic": "ConnectX-7 NIC",
            "dpu": "BlueField-3 DPU",
            "nvme": "NVMe SSD",
        },
        # X13 writes the BIOS version with its date in the inventory, bare on the system.
        bios_inventory_version="BIOS Date: 08/04/2023 Ver {v}",
        extra_firmware=(
            # As the X13 BMC 11.01.01 lists them on a SYS-821GE-TNHR (supermicro-hgx-sys821ge).
            ("BIOS_ME", "BIOS ME", "6.0.5.46", "bios"),
            ("Capsule_BIOS", "Capsule BIOS", "1.0", "bios"),
            ("Golden_BMC", "BMC Golden", "01.00.26", "manager"),
            ("Golden_BIOS", "BIOS Golden", "BIOS Date: 05/04/2023 Ver 1.3", "bios"),
            ("Staging_BMC", "BMC Staging", "11.01.01", "manager"),
            ("Staging_BIOS", "BIOS Staging", "BIOS Date: 08/04/2023 Ver 1.4", "bios"),
            ("CPLD_Motherboard", "CPLD Motherboard", "F5.11.CB"),
            ("PowerSupply1", "Power supply 1", "1.3"),
            *hgx_parts("96.00.61.00.01", "96.10.35.00.01", "00.02.0134.0000_n00"),
        ),
        # Systems/1 lists UsbCd; the CD is Managers/1/VirtualMedia/VirtualMedia1
        # (supermicro-hgx-sys821ge).
        boot_targets=SUPERMICRO_BOOT_TARGETS,
        media_id="VirtualMedia1",
        media_types=("CD", "DVD", "Floppy", "USBStick"),
        # X11/X12 answer 400 to InsertMedia carrying Inserted or WriteProtected (sushy
        # resources/manager/virtual_media.py, the retry without them).
        media_refused=("Inserted", "WriteProtected"),
        # The virtual medium is a USB CD: "Cd" boots the empty physical drive.
        media_boot_targets=("UsbCd",),
    ),
    "dgx": Flavour(
        name="dgx",
        manufacturer="NVIDIA",
        model="DGXH100",
        manager_model="DGX H100 BMC",
        system_id="DGX",
        manager_id="BMC",
        chassis_id="DGX",
        serial_prefix="1662",
        bios_settings="SD",
        trailing_slash=False,
        lower_bios_links=False,
        bios_job=False,
        etag_required=False,
        simple_update=True,
        multipart_path="/redfish/v1/UpdateService/upload",
        licence_gated=False,
        firmware_names={
            "bmc": "HostBMC_0",
            "bios": "HostBIOS_0",
            "hgx": "HGX_FW_BMC_0",
            "nic": "NIC",
            "dpu": "DPU",
            "nvme": "NVMe",
        },
        # As the DGX H100 BMC states it (nvidia-dgx-h100).
        expand_query={
            "ExpandAll": True,
            "Levels": True,
            "Links": True,
            "MaxLevels": 5,
            "NoLinks": True,
        },  # fmt: skip
        inventory_ids={"bmc": "HostBMC_0", "bios": "HostBIOS_0"},
        extra_firmware=(
            ("EROT_BMC_0", "EROT_BMC_0", "00.04.0026.0000_n00"),
            ("EROT_BIOS_0", "EROT_BIOS_0", "00.04.0026.0000_n00"),
            ("CPLDMB_0", "CPLDMB_0", "0.2.1.8"),
            ("HGX_FW_FPGA_0", "HGX_FW_FPGA_0", "2.37"),
            ("HGX_FW_PCIeRetimer_0", "HGX_FW_PCIeRetimer_0", "2.7.20"),
            ("PSU_0", "PSU_0", "0204.0201.0202"),
            *hgx_parts("96.00.89.00.01", "96.10.4A.00.01", "00.02.0150.0000_n00"),
        ),
        lists_device_firmware=False,
        baseboard=True,
        # OpenBMC task monitors (bmcweb redfish-core/lib/task.hpp).
        update_progress="openbmc",
        # Boot is taken on the system's settings object Systems/DGX/SD and listed there only
        # (nvidia-dgx-h100 Systems/DGX and Systems/DGX/SD).
        boot_targets=DGX_BOOT_TARGETS,
        boot_enabled_values=("Disabled", "Once", "Continuous"),
        system_settings="SD",
        # Managers/BMC/VirtualMedia/CD1, which demands UserName and Password (sushy
        # tests/unit/json_samples/credentials_required_error.json, recorded on a DGX BMC).
        media_id="CD1",
        media_required=("UserName", "Password"),
        media_schemes=OPENBMC_MEDIA_SCHEMES,
        media_mount_seconds=2.0,
        # UpdateService/SimpleUpdateActionInfo: TransferProtocol Required (nvidia-dgx-h100).
        update_required=("TransferProtocol",),
        boot_values_on_system=False,
    ),
    "lenovo": Flavour(
        name="lenovo",
        manufacturer="Lenovo",
        model="ThinkSystem SR670 V2",
        manager_model="Lenovo XClarity Controller",
        system_id="1",
        manager_id="1",
        chassis_id="1",
        serial_prefix="J10",
        bios_settings="Pending",  # Systems/1/Bios/Pending (lenovo-xcc-sr670v2)
        trailing_slash=False,
        lower_bios_links=False,
        bios_job=False,
        etag_required=True,
        simple_update=True,
        multipart_path="/mfwupdate",
        licence_gated=False,
        firmware_names={
            "bmc": "Firmware:BMC",
            "bios": "Firmware:UEFI",
            "hgx": "HGX_FW_BMC_0",
            "nic": "Firmware:NIC",
            "dpu": "Firmware:DPU",
            "nvme": "Firmware:Disk",
        },
        inventory_ids={"bmc": "BMC-Primary", "bios": "UEFI"},
        # As XCC states it (lenovo-xcc-sr670v2).
        expand_query={
            "ExpandAll": True,
            "Levels": True,
            "Links": True,
            "MaxLevels": 2,
            "NoLinks": True,
        },  # fmt: skip
        boot_targets=LENOVO_BOOT_TARGETS,
        boot_enabled_values=("Once", "Disabled"),
        # Systems/1/VirtualMedia/EXT1..: no InsertMedia action, the medium is PATCHed in
        # (lenovo-xcc-sr670v2; Lenovo XCC Redfish guide, "Mount media").
        media_owner="system",
        media_id="EXT1",
        media_types=("CD", "DVD", "Floppy", "USBStick"),
        media_insert_action=False,
        # XCC answers 428 to a PATCH without If-Match (ansible/ansible issue 56050) and 412 to
        # a weak ETag (its ETags are strong, '"550d1002cb7724e9e48"' in the capture).
        if_match_always=True,
        # A new XCC image runs after Manager.Reset (Lenovo XCC Redfish guide, firmware update).
        bmc_activation="manager_reset",
        weak_etag_refused=True,
    ),
    "ami": Flavour(
        name="ami",
        manufacturer="GIGABYTE",
        model="H262-Z63-00",
        manager_model="AMI MegaRAC",
        system_id="Self",
        manager_id="Self",
        chassis_id="Self",
        serial_prefix="GJG",
        bios_settings="SD",
        trailing_slash=False,
        lower_bios_links=False,
        bios_job=False,
        etag_required=False,
        simple_update=True,
        multipart_path="",
        licence_gated=False,
        firmware_names={
            "bmc": "BMC",
            "bios": "BIOS",
            "hgx": "HGX_FW_BMC_0",
            "nic": "NIC",
            "dpu": "DPU",
            "nvme": "NVMe",
        },
        # As the MegaRAC states it (ami-megarac-gigabyte).
        expand_query={
            "ExpandAll": True,
            "Levels": True,
            "Links": True,
            "MaxLevels": 5,
            "NoLinks": True,
        },  # fmt: skip
        boot_targets=AMI_BOOT_TARGETS,
        boot_enabled_values=("Disabled", "Once", "Continuous"),
        # Managers/Self/VirtualMedia/CD1 with no MediaTypes (ami-megarac-gigabyte), which
        # demands TransferProtocolType (sushy tests/unit/json_samples/
        # transfer_proto_required_error.json, recorded on Managers/Self/VirtualMedia/CD1).
        media_id="CD1",
        media_types=(),
        media_required=("TransferProtocolType",),
        weak_etag_refused=True,
        # UpdateService/SimpleUpdateActionInfo: TransferProtocol Required (ami-megarac-gigabyte).
        update_required=("TransferProtocol",),
    ),
    "gb200": Flavour(
        name="gb200",
        manufacturer="NVIDIA",
        model="GB200 NVL",
        manager_model="GB200 NVL BMC",
        # Systems/System_0, Managers/BMC_0 and Chassis/BMC_0, which the host's Links.Chassis
        # names and which offers the aux power cycle (nvidia-gb200).
        system_id="System_0",
        manager_id="BMC_0",
        chassis_id="BMC_0",
        serial_prefix="1583",
        bios_settings="Settings",  # Systems/System_0/Bios/Settings
        trailing_slash=False,
        lower_bios_links=False,
        bios_job=False,
        etag_required=False,
        # No SimpleUpdate action: MultipartHttpPushUri only (nvidia-gb200 UpdateService).
        simple_update=False,
        multipart_path="/redfish/v1/UpdateService/update-multipart",
        licence_gated=False,
        firmware_names={
            "bmc": "Software Inventory",
            "bios": "UEFI",
            "hgx": "Software Inventory",
            "nic": "NIC",
            "dpu": "DPU",
            "nvme": "NVMe",
        },
        expand_query={
            "ExpandAll": True,
            "Levels": True,
            "Links": True,
            "MaxLevels": 6,
            "NoLinks": True,
        },  # fmt: skip
        inventory_ids={"bmc": "FW_BMC_0", "bios": "UEFI"},
        extra_firmware=(
            # As the GB200 NVL BMC lists them (nvidia-gb200 UpdateService/FirmwareInventory).
            ("FW_ERoT_BMC_0", "Software Inventory", "01.03.0262.0000_n04"),
            ("FW_CPLD_0", "Software Inventory", "0.1A"),
            ("HGX_FW_CPU_0", "Software Inventory", "02.03.13"),
            ("HGX_FW_CPU_1", "Software Inventory", "02.03.13"),
            ("HGX_FW_ERoT_CPU_0", "Software Inventory", "01.03.0262.0000_n04"),
            ("HGX_FW_FPGA_0", "Software Inventory", "1.40"),
        ),
        lists_device_firmware=False,
        boot_targets=GB200_BOOT_TARGETS,
        boot_enabled_values=("Once", "Continuous", "Disabled"),
        system_settings="Settings",
        # Managers/BMC_0/VirtualMedia/USB1 (CD, USBStick; nvidia-gb200); bmcweb mounts https://
        # or smb:// only, and asynchronously: Inserted reads false for a moment.
        media_id="USB1",
        media_types=("CD", "USBStick"),
        media_schemes=OPENBMC_MEDIA_SCHEMES,
        media_mount_seconds=2.0,
        # OpenBMC task monitors (bmcweb redfish-core/lib/task.hpp); every new image, the BMC's
        # too, stays pending (the old version reported) until Chassis/BMC_0's
        # NvidiaChassis.AuxPowerReset (NVIDIA GB200 NVL Redfish guide, firmware activation).
        update_progress="openbmc",
        bmc_activation="aux_power",
        host_activation="aux_power",
    ),
}
# The members of a GB200 NVL72 rack: variations of the GB200 NVL BMC (member_flavours.py).
FLAVOURS.update(member_flavours(FLAVOURS["gb200"]))
