"""The VM tier's BMCs: sushy-tools' emulator with its libvirt driver, one per VM."""

from __future__ import annotations

from pathlib import Path

from lab.sushy import Sushy, start_sushy

from .domain import OVMF_CODE, OVMF_VARS
from .libvirt_host import URI


def start_vm_bmc(workdir: Path, allowed: list[str], timeout: float = 60.0) -> Sushy:
    """A BMC serving only the `allowed` domain UUIDs; returned once it answers."""
    driver = {
        "SUSHY_EMULATOR_LIBVIRT_URI": URI,
        "SUSHY_EMULATOR_ALLOWED_INSTANCES": allowed,
        # The "vmedia" profile: systems, managers, NICs, power, boot override and VirtualMedia,
        # as a minimal BMC offers. The "full" one adds a chassis whose template serial
        # (437XR1138R2) is the same for every system, so every VM would enroll as one node.
        "SUSHY_EMULATOR_FEATURE_SET": "vmedia",
        # The domains' own firmware, so the emulator reads their boot mode back as UEFI.
        "SUSHY_EMULATOR_BOOT_LOADER_MAP": {
            "UEFI": {"x86_64": OVMF_CODE},
            "Legacy": {"x86_64": None},
        },
        "SUSHY_EMULATOR_SECURE_BOOT_DISABLED_NVRAM": OVMF_VARS,
    }
    return start_sushy(workdir, driver, timeout=timeout)
