"""Vendor flavours of the lab's BMCs: ids, link style, BIOS settings flow and update methods.

Ids and shapes follow ../shared/redfish-mockups (the HPE iLO 5 capture) and the vendors'
published Redfish guides (Dell iDRAC 9, Supermicro X12).
"""

from __future__ import annotations

from dataclasses import dataclass


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

    def link(self, path: str) -> str:
        """A link as this BMC spells it."""
        if self.lower_bios_links and "/bios" in path.lower():
            path = path.lower()
        if self.trailing_slash and not path.endswith("/"):
            path += "/"
        return path


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
            "hgx": "HGX H100 8-GPU Baseboard",
            "nic": "Mellanox ConnectX-7",
            "dpu": "NVIDIA BlueField-3",
            "nvme": "Dell Ent NVMe PM1733a",
        },
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
            "hgx": "HGX A100 8-GPU Baseboard",
            "nic": "HPE InfiniBand HDR/Ethernet 200Gb",
            "dpu": "NVIDIA BlueField-2",
            "nvme": "NVMe Drive",
        },
        # As the iLO 5 capture in shared/redfish-mockups states it.
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
            "hgx": "GPU Baseboard",
            "nic": "ConnectX-7 NIC",
            "dpu": "BlueField-3 DPU",
            "nvme": "NVMe SSD",
        },
    ),
}
