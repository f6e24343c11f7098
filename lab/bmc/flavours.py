"""Vendor flavours of the lab's BMCs: ids, link style, BIOS settings flow and update methods.

Ids and shapes follow the real captures in tests/redfish/captures (Dell iDRAC 9 6.00, HPE iLO 5,
Supermicro X13 on an HGX H100 board, NVIDIA DGX H100) and the vendors' published Redfish guides:
the inventory entries no phase manages (backup, golden and staging copies, the HGX tray's GPUs,
NVSwitches and ERoTs, the BIOS's Intel ME, driver packs) are listed as the captures list them, so
a firmware phase that mistook one for its own component would drift forever against the lab.
"""

from __future__ import annotations

from dataclasses import dataclass, field


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
    ),
}
