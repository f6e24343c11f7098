"""Make the lab nodes of a hall: identities, parts and firmware, deterministic by seed."""

from __future__ import annotations

import random
import secrets
import uuid
from dataclasses import dataclass

from .bmc.flavours import FLAVOURS
from .faults import NodeFaults
from .node import LabNode

BASE_FIRMWARE = {
    "dell": {"bmc": "7.00.00.00", "bios": "2.19.1"},
    "hpe": {"bmc": "2.70", "bios": "A47 v2.58"},
    "supermicro": {"bmc": "01.02.10", "bios": "2.1"},
    "dgx": {"bmc": "23.11.21", "bios": "01.01.03"},
    "gb200": {"bmc": "GB200Nvl-24.09-3", "bios": "buildbrain-gcid-36710122"},
    "lenovo": {"bmc": "2.83", "bios": "1.51"},
    "ami": {"bmc": "12.84.13", "bios": "C27"},
    # The rack members of a GB200 NVL72 (bmc: the BMC's bundle, NVOS and CPLD riding in it).
    "gb200_tray": {"bmc": "GB200Nvl-24.09-3", "bios": "buildbrain-gcid-36710122"},
    "nvl_switch": {"bmc": "88.0002.0900", "bios": "0ACTV016"},
    "power_shelf": {"bmc": "01.02.03", "bios": "0"},
}
COMMON_FIRMWARE = {
    "hgx": "96.00.6D.00.01",
    "nic": "28.39.1002",
    "dpu": "24.40.1000",
    "nvme": "GDC7302Q",
}
BIOS_DEFAULTS = {
    "BootMode": "Uefi",
    "SriovGlobalEnable": "Disabled",
    "ProcVirtualization": "Disabled",
    "LogicalProc": "Enabled",
    "WorkloadProfile": "NotConfigured",
    "PcieAspm": "Enabled",
}
GPU_COUNT, FABRIC_NIC_COUNT, DPU_COUNT, DRIVE_COUNT = 8, 8, 2, 8
HGX_GPU = "NVIDIA H100 80GB HBM3"


@dataclass(frozen=True)
class Shape:
    """What a lab node holds: its GPUs (model and count), fabric NICs, DPUs and drives."""

    gpu_model: str = HGX_GPU
    gpus: int = GPU_COUNT
    fabric_nics: int = FABRIC_NIC_COUNT
    dpus: int = DPU_COUNT
    drives: int = DRIVE_COUNT


# Every flavour builds an HGX H100 node but these: a GB200 NVL compute tray as the capture has it
# (nvidia-gb200: HGX_GPU_0-3, two IO boards of two ConnectX-7 each, two BlueField-3, eight E1.S
# drives), and the devices of the rack (an NVLink switch tray, a power shelf), which hold none.
SHAPES = {
    "gb200_tray": Shape(gpu_model="NVIDIA GB200", gpus=4, fabric_nics=4, dpus=2, drives=8),
    "nvl_switch": Shape(gpus=0, fabric_nics=0, dpus=0, drives=0),
    "power_shelf": Shape(gpus=0, fabric_nics=0, dpus=0, drives=0),
}


def http_boot_attribute(name: str) -> dict[str, str]:
    """The BIOS attribute holding the HTTP boot URI, empty, where the vendor has one."""
    return {name: ""} if name else {}


def _mac(rng: random.Random) -> str:
    # 02: a locally administered unicast address, never a real vendor's.
    return "02:" + ":".join(f"{rng.randrange(256):02x}" for _ in range(5))


def build_node(index: int, flavour_name: str, seed: int, address: str) -> LabNode:
    """One lab node: same seed and index give the same serials, MACs and faults' dice."""
    flavour = FLAVOURS[flavour_name]
    shape = SHAPES.get(flavour.name, Shape())
    rng = random.Random(f"node:{seed}:{index}")
    serial = f"{flavour.serial_prefix}{seed % 1000:03d}{index:04d}{rng.randrange(36**2):03X}"
    nics = [
        {"name": f"Onboard LOM {i + 1}", "mac": _mac(rng), "kind": "boot", "serial": ""}
        for i in range(2)
    ]
    nics += [
        {
            "name": f"Fabric NIC {i}",
            "mac": _mac(rng),
            "kind": "fabric",
            "serial": f"MT{rng.randrange(10**10):010d}",
        }
        for i in range(shape.fabric_nics)
    ]
    return LabNode(
        index=index,
        serial=serial,
        flavour=flavour.name,
        kind=flavour.member or "server",
        manufacturer=flavour.manufacturer,
        model=flavour.model,
        uuid=str(uuid.UUID(int=rng.getrandbits(128), version=4)),
        bmc_address=address,
        username="root" if flavour.name != "hpe" else "Administrator",
        # Random per node and never derived from the seed: lab credentials are secrets too.
        # Never starting with "-", which a command line would read as an option.
        password="p" + secrets.token_urlsafe(12),
        faults=NodeFaults(f"{seed}:{index}"),
        firmware={**COMMON_FIRMWARE, **BASE_FIRMWARE[flavour.name]},
        # Dell and HPE take the UEFI HTTP boot URI as a BIOS attribute (HttpDev1Uri, UrlBootFile).
        bios_current={**BIOS_DEFAULTS, **http_boot_attribute(flavour.http_boot_attribute)},
        media_boot_targets=flavour.media_boot_targets,
        forgets_tasks_on_bmc_reset=flavour.update_progress == "openbmc",
        nics=nics,
        gpus=[
            {
                "index": str(i),
                "model": shape.gpu_model,
                "serial": f"165{rng.randrange(10**10):010d}",
            }
            for i in range(shape.gpus)
        ],
        drives=[
            {"index": str(i), "model": "NVMe 3.84TB", "serial": f"S6{rng.randrange(36**8):08X}"}
            for i in range(shape.drives)
        ],
        dpus=[
            {"index": str(i), "model": "BlueField-3", "serial": f"MT{rng.randrange(10**10):010d}"}
            for i in range(shape.dpus)
        ],
    )
