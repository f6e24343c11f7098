"""The ordered phases of a provisioning run. The one place the phase list lives.

Each entry names the phase, its band (out-of-band over Redfish, in-band through the agent),
whether it reboots the node, and its default time limit. The manifest's `timeouts` may override a
limit. Implementations are looked up by name in provisioning.phases.registry.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Band(StrEnum):
    OOB = "oob"
    IN = "in"


@dataclass(frozen=True)
class PhaseInfo:
    name: str
    label: str
    band: Band
    reboots: bool
    time_limit_s: int


PHASES: tuple[PhaseInfo, ...] = (
    PhaseInfo("preflight", "Preflight: BMC, MACs, serial", Band.OOB, False, 600),
    PhaseInfo("power_on", "Power on (staggered)", Band.OOB, False, 1200),
    PhaseInfo("boot_ephemeral", "Boot the ephemeral environment", Band.OOB, False, 600),
    PhaseInfo("wait_for_agent", "Wait for agent check-in", Band.IN, True, 1200),
    PhaseInfo("bmc_firmware", "BMC firmware", Band.OOB, True, 2400),
    PhaseInfo("bios_firmware", "BIOS firmware", Band.OOB, True, 2400),
    PhaseInfo("hgx_firmware", "HGX firmware", Band.OOB, True, 3600),
    PhaseInfo("bios_settings", "BIOS settings", Band.OOB, True, 1800),
    PhaseInfo("nic_firmware", "NIC firmware", Band.IN, True, 2400),
    PhaseInfo("dpu_firmware", "DPU firmware", Band.IN, True, 3600),
    PhaseInfo("nvme_firmware", "NVMe firmware", Band.IN, True, 2400),
    PhaseInfo("secure_erase", "Secure erase of every drive", Band.IN, False, 3600),
    PhaseInfo("os_install", "OS install (sha256 + signature)", Band.IN, False, 3600),
    PhaseInfo("boot_disk", "Boot from disk", Band.OOB, True, 900),
    PhaseInfo("wait_for_host_os", "Wait for the host OS", Band.IN, False, 1800),
)

# A tenant-release (wipe) run first drains the node from the tenant's scheduler; then it runs
# every phase above (secure_erase always erases in a wipe run) and the gates.
WIPE_PRELUDE: tuple[PhaseInfo, ...] = (
    PhaseInfo("drain", "Cordon and drain from the scheduler", Band.OOB, False, 7200),
)

PHASE_NAMES: tuple[str, ...] = tuple(p.name for p in PHASES)
PHASES_BY_NAME: dict[str, PhaseInfo] = {p.name: p for p in PHASES + WIPE_PRELUDE}
