"""The ordered phases of a provisioning run, each implementation with its info. The one place.

Each entry is the phase itself, made with its name, label, band (out-of-band over Redfish,
in-band through the agent), whether it reboots the node, and its default time limit. The
manifest's `timeouts` may override a limit. A run's gates follow these phases; their phases come
from the app that registered them (provisioning.core.gates).
"""

from __future__ import annotations

from .. import gates
from .base import Band, Phase, PhaseInfo
from .drain import Drain
from .inband import InbandFirmware, OsInstall, SecureErase, WaitForAgent, WaitForHostOs
from .oob import BiosSettings, BootDisk, BootEphemeral, OobFirmware, PowerOn, Preflight

__all__ = [
    "PHASES",
    "PHASES_BY_NAME",
    "PHASE_NAMES",
    "OUT_OF_BAND_PHASE_NAMES",
    "WIPE_PRELUDE",
    "Band",
    "Phase",
    "PhaseInfo",
    "auditable_phases",
    "label_of",
    "phase_for",
]

OOB, IN = Band.OOB, Band.IN
PHASES: tuple[Phase, ...] = (
    Preflight(PhaseInfo("preflight", "Preflight: BMC, MACs, serial", OOB, False, 600)),
    PowerOn(PhaseInfo("power_on", "Power on (staggered)", OOB, False, 1200)),
    BootEphemeral(PhaseInfo("boot_ephemeral", "Boot the ephemeral environment", OOB, False, 600)),
    WaitForAgent(PhaseInfo("wait_for_agent", "Wait for agent check-in", IN, True, 1200)),
    OobFirmware(PhaseInfo("bmc_firmware", "BMC firmware", OOB, True, 2400)),
    OobFirmware(PhaseInfo("bios_firmware", "BIOS firmware", OOB, True, 2400)),
    OobFirmware(PhaseInfo("hgx_firmware", "HGX firmware", OOB, True, 3600)),
    BiosSettings(PhaseInfo("bios_settings", "BIOS settings", OOB, True, 1800)),
    InbandFirmware(PhaseInfo("nic_firmware", "NIC firmware", IN, True, 2400)),
    InbandFirmware(PhaseInfo("dpu_firmware", "DPU firmware", IN, True, 3600)),
    InbandFirmware(PhaseInfo("nvme_firmware", "NVMe firmware", IN, True, 2400)),
    SecureErase(PhaseInfo("secure_erase", "Secure erase of every drive", IN, False, 3600)),
    OsInstall(PhaseInfo("os_install", "OS install (sha256 + signature)", IN, False, 3600)),
    BootDisk(PhaseInfo("boot_disk", "Boot from disk", OOB, True, 900)),
    WaitForHostOs(PhaseInfo("wait_for_host_os", "Wait for the host OS", IN, False, 1800)),
)

# A tenant-release (wipe) run first drains the node from the tenant's scheduler; then it runs
# every phase above (secure_erase always erases in a wipe run) and the gates.
WIPE_PRELUDE: tuple[Phase, ...] = (
    Drain(PhaseInfo("drain", "Cordon and drain from the scheduler", OOB, False, 7200)),
)

PHASE_NAMES: tuple[str, ...] = tuple(p.name for p in PHASES)
# The phases that speak only to the BMC: no agent command comes in them.
OUT_OF_BAND_PHASE_NAMES: tuple[str, ...] = tuple(
    p.name for p in PHASES + WIPE_PRELUDE if p.band is Band.OOB
)
PHASES_BY_NAME: dict[str, Phase] = {p.name: p for p in PHASES + WIPE_PRELUDE}


def phase_for(name: str) -> Phase:
    """The implementation of a phase record's phase: a pipeline phase, or a registered gate's."""
    gate = gates.gate_of(name)
    if gate:
        return gates.planning().phase(gate)
    return PHASES_BY_NAME[name]


def label_of(name: str) -> str:
    """The readable name of a phase record's phase ("Gate: GPU health (DCGM)" for a gate)."""
    try:
        return phase_for(name).label
    except LookupError:
        # A phase no longer declared (a record from an older release): its name, readable.
        return name.replace("_", " ")


def auditable_phases() -> list[Phase]:
    """The phases whose observe/diff the drift audit runs, in pipeline order."""
    return [phase for phase in PHASES if phase.auditable]
