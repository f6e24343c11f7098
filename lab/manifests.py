"""Golden manifests and acceptance profiles for lab racks, pointing at the lab's artifact server."""

from __future__ import annotations

from urllib.parse import quote

import yaml

from .artifacts import artifact_sha256
from .build import BASE_FIRMWARE, COMMON_FIRMWARE

# What a lab node is brought to: one step past what it leaves the factory with.
TARGET_FIRMWARE = {
    "dell": {"bmc": "7.10.30.00", "bios": "2.20.1"},
    "hpe": {"bmc": "2.78", "bios": "A47 v2.62"},
    "supermicro": {"bmc": "01.03.04", "bios": "2.2"},
    "dgx": {"bmc": "24.09.17", "bios": "01.02.01"},
    "gb200": {"bmc": "GB200Nvl-24.12-8", "bios": "buildbrain-gcid-38635631"},
    "lenovo": {"bmc": "2.91", "bios": "1.60"},
    "ami": {"bmc": "12.85.01", "bios": "C28"},
    "gb200_tray": {"bmc": "GB200Nvl-24.12-8", "bios": "buildbrain-gcid-38635631"},
    "nvl_switch": {"bmc": "88.0002.1139", "bios": "0ACTV016"},
    "power_shelf": {"bmc": "01.02.07", "bios": "0"},
}
TARGET_COMMON = {
    "hgx": "96.00.9F.00.01",
    "nic": "28.43.1014",
    "dpu": "24.43.1014",
    "nvme": "GDC7402Q",
}
BIOS_TARGET = {"SriovGlobalEnable": "Enabled", "ProcVirtualization": "Enabled", "BootMode": "Uefi"}
OS_IMAGE = "os-ubuntu-24.04-gpu.img"
# The lab's nodes boot the ephemeral environment by PXE: their firmware fetches the node's iPXE
# script from Greenlight, which names these.
EPHEMERAL_KERNEL = "ephemeral-vmlinuz"
EPHEMERAL_INITRD = "ephemeral-initrd.img"


def lab_sku_name(flavour: str) -> str:
    return f"lab-hgx-{flavour}"


def manifest_yaml(
    flavour: str,
    artifact_url: str,
    version: str = "1.0.0",
    profile_version: str = "1.0.0",
    sku: str = "",
) -> str:
    """A golden manifest for a lab rack of one vendor flavour (its SKU: `sku`, else the lab's)."""
    targets = {**TARGET_COMMON, **TARGET_FIRMWARE[flavour]}
    assert set(targets) == set(COMMON_FIRMWARE) | set(BASE_FIRMWARE[flavour])
    firmware = {}
    for component, target in targets.items():
        name = f"{component}-{target}.bin"
        firmware[component] = {
            "version": target,
            # iLO versions have spaces ("A47 v2.62"): the name is a path segment, quoted.
            "url": f"{artifact_url}/artifacts/{quote(name)}",
            "sha256": artifact_sha256(name),
        }
    document = {
        "sku": sku or lab_sku_name(flavour),
        "version": version,
        "description": f"Lab HGX node, {flavour}-like BMC",
        "firmware": firmware,
        "bios_settings": BIOS_TARGET,
        "boot_order": ["Pxe", "Hdd"],
        "os_image": {
            "url": f"{artifact_url}/artifacts/{OS_IMAGE}",
            "sha256": artifact_sha256(OS_IMAGE),
            "signature": "lab-signing-key-1:ubuntu-24.04-gpu",
        },
        "ephemeral": {
            "boot": "pxe",
            "kernel": _artifact(artifact_url, EPHEMERAL_KERNEL),
            "initrd": _artifact(artifact_url, EPHEMERAL_INITRD),
        },
        "acceptance_profile": profile_version,
    }
    return yaml.safe_dump(document, sort_keys=False)


def _artifact(artifact_url: str, name: str) -> dict[str, str]:
    return {"url": f"{artifact_url}/artifacts/{name}", "sha256": artifact_sha256(name)}


def profile_yaml(
    flavour: str,
    *,
    soak_hours: float = 72,
    version: str = "1.0.0",
    sku: str = "",
    gates: tuple[str, ...] = (),
) -> str:
    """The acceptance profile of a lab SKU: every gate (or those named in `gates`), the lab
    runs the soak by its clock."""
    document = {
        "sku": sku or lab_sku_name(flavour),
        "version": version,
        "gates": [
            {"gate": "attestation", "thresholds": {"require_signature": 1}},
            {"gate": "gpu_health", "thresholds": {"dcgm_level": 3}},
            {"gate": "nvbandwidth", "thresholds": {"min_fraction_of_spec": 0.85}},
            {"gate": "fabric", "thresholds": {"min_busbw_fraction": 0.92}},
            {"gate": "storage", "thresholds": {"min_read_mbps": 6000, "min_write_mbps": 3000}},
            {"gate": "burn_in", "thresholds": {"soak_hours": soak_hours, "max_gpu_temp_c": 87}},
        ],
    }
    if gates:
        document["gates"] = [g for g in document["gates"] if g["gate"] in gates]
    return yaml.safe_dump(document, sort_keys=False)


def device_manifest_yaml(flavour: str, sku: str, artifact_url: str, version: str = "1.0.0") -> str:
    """A rack device's manifest (switch tray, power shelf): its BMC's bundle only, which
    carries NVOS and CPLD on a switch tray; nothing to install."""
    target = TARGET_FIRMWARE[flavour]["bmc"]
    name = f"bmc-{target}.bin"
    bundle = {
        "version": target,
        "url": f"{artifact_url}/artifacts/{quote(name)}",
        "sha256": artifact_sha256(name),
    }
    document = {
        "sku": sku,
        "version": version,
        "description": f"Lab rack member, {flavour} BMC",
        "firmware": {"bmc": bundle},
    }
    return yaml.safe_dump(document, sort_keys=False)
