"""Phase implementations by name. The order lives in provisioning.phases.PHASES, not here."""

from __future__ import annotations

from . import PHASE_NAMES
from .base import Phase
from .inband import InbandFirmware, OsInstall, SecureErase, WaitForAgent, WaitForHostOs
from .oob import BiosSettings, BootDisk, BootEphemeral, OobFirmware, PowerOn, Preflight

_IMPLEMENTATIONS: dict[str, Phase] = {
    phase.name: phase
    for phase in (
        Preflight(),
        PowerOn(),
        BootEphemeral(),
        WaitForAgent(),
        OobFirmware("bmc"),
        OobFirmware("bios"),
        OobFirmware("hgx"),
        BiosSettings(),
        InbandFirmware("nic"),
        InbandFirmware("dpu"),
        InbandFirmware("nvme"),
        SecureErase(),
        OsInstall(),
        BootDisk(),
        WaitForHostOs(),
    )
}
assert tuple(_IMPLEMENTATIONS) == PHASE_NAMES, "every phase in PHASES has one implementation"


def phase_for(name: str) -> Phase:
    """The implementation of a phase (or of a gate, named "gate:<gate>")."""
    if name.startswith("gate:"):
        from acceptance.runner import gate_phase

        return gate_phase(name.removeprefix("gate:"))
    if name == "drain":
        from .drain import Drain

        return Drain()
    return _IMPLEMENTATIONS[name]


def auditable_phases() -> list[Phase]:
    """The phases whose observe/diff the drift audit runs, in pipeline order."""
    return [_IMPLEMENTATIONS[name] for name in PHASE_NAMES if _IMPLEMENTATIONS[name].auditable]
