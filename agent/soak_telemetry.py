"""The soak's telemetry: one nvidia-smi query per interval, read into per-GPU samples."""

from __future__ import annotations

import re
from typing import Any

from .inventory_sources import kernel_bus_id

SOAK_QUERY = "index,temperature.gpu,power.draw,clocks.sm,clocks_event_reasons.active,pci.bus_id"
# nvidia-smi's clocks_event_reasons.active bit mask, named as the parsers name them.
_REASON_BITS = {
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
}


# nvidia-smi's words for a GPU it can no longer reach, e.g. "Unable to determine the device
# handle for GPU1: 0000:34:00.0: Unknown Error" (older drivers: "for GPU0000:08:00.0: ...").
LOST_GPU = re.compile(
    r"Unable to determine the device handle for GPU\s*(?:(?P<index>\d+):\s*)?(?P<bus>[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.\d)"
)


def soak_sample(text: str, seen: dict[str, int] | None = None) -> list[dict[str, Any]]:
    """One telemetry sample of every GPU from the soak's nvidia-smi query.

    `seen` (bus id -> index) remembers the GPUs of earlier samples: one that nvidia-smi now
    cannot reach, or that is simply missing, is reported lost rather than dropped.
    """
    seen = {} if seen is None else seen
    gpus = []
    for line in text.splitlines():
        fields = [f.strip() for f in line.split(",")]
        if len(fields) != 6 or not fields[0].isdigit():
            continue  # a warning or an error line, not a GPU's row
        gpu, temp, power, clock, reasons, bus = fields
        bus_id = kernel_bus_id(bus)
        seen[bus_id] = int(gpu)
        gpus.append(
            {
                "gpu": int(gpu),
                "temp_c": int(float(temp)),
                "power_w": float(power),
                "sm_clock_mhz": int(float(clock)),
                "clocks_event_reasons": _reasons(int(reasons, 16)),
                "bus_id": bus_id,
            }
        )
    present = {g["bus_id"] for g in gpus}
    for bus_id, index in sorted(seen.items(), key=lambda item: item[1]):
        if bus_id not in present:
            gpus.append({"gpu": index, "lost": True, "bus_id": bus_id})
    for match in LOST_GPU.finditer(text):
        bus_id = kernel_bus_id(match.group("bus"))
        if bus_id not in seen and match.group("index"):
            gpus.append({"gpu": int(match.group("index")), "lost": True, "bus_id": bus_id})
    return gpus


def _reasons(mask: int) -> list[str]:
    return [name for bit, name in _REASON_BITS.items() if mask & bit]
