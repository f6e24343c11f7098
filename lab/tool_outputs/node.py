"""A simulated node's hardware as the tools see it, and the faults injected into it."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

Fault = dict[str, Any]

# The hardware faults the generators understand, with what each one does to the tools.
FAULT_NAMES = {
    "marginal_gpu": "passes DCGM and short gpu-burn; XID 79 and FAULTY only under sustained load",
    "slow_nic": "NCCL busbw ~60% of line rate in every pair (or rail) that uses this NIC",
    "nvme_errors": "fio job on the drive fails with EIO at a fraction of the SLA",
    "nvswitch_topology": "nvbandwidth shows low GPU-to-GPU bandwidth for a GPU or a whole switch",
    "ecc_uncorrectable": "uncorrectable ECC and a pending row remap; DCGM's row-remap check fails",
    "thermal_throttle": "HW thermal slowdown, high temperature and low reference-job MFU under load",
    "row_remap_event": "XID 63 on a GPU (count=1: reset required; count>1: recurrence)",
}


@dataclass(frozen=True)
class SimNode:
    """What the tools on one simulated node can see."""

    node_id: str
    gpu_serials: tuple[str, ...]
    gpu_bus_ids: tuple[str, ...]  # "0000:18:00.0"
    nic_names: tuple[str, ...]  # "mlx5_0"
    drive_serials: tuple[str, ...]
    gpu_model: str = "NVIDIA H100 80GB HBM3"
    nic_line_rate_gbps: int = 400
    nvlink_bandwidth_gbps: int = 450
    driver_version: str = "550.90.07"
    seed: int = 0

    @property
    def gpu_count(self) -> int:
        return len(self.gpu_serials)

    def rng(self, tool: str) -> random.Random:
        """A random source fixed by the node, its seed and the tool, so output is repeatable."""
        return random.Random(f"{self.seed}:{self.node_id}:{tool}")

    def gpu_uuid(self, index: int) -> str:
        """A stable GPU UUID in NVIDIA's format."""
        h = random.Random(f"uuid:{self.gpu_serials[index]}").getrandbits(128)
        s = f"{h:032x}"
        return f"GPU-{s[:8]}-{s[8:12]}-{s[12:16]}-{s[16:20]}-{s[20:]}"

    def inventory(self) -> dict[str, str]:
        """Part name -> serial, the names findings use ("GPU 3", "nvme3n1", "NIC 0")."""
        parts = {f"GPU {i}": s for i, s in enumerate(self.gpu_serials)}
        parts.update({f"nvme{i}n1": s for i, s in enumerate(self.drive_serials)})
        parts.update({f"NIC {i}": name for i, name in enumerate(self.nic_names)})
        return parts

    def bus_map(self) -> dict[str, dict[str, Any]]:
        """PCI bus id -> GPU index and serial, as the xid parser takes it."""
        return {
            bus: {"index": i, "serial": self.gpu_serials[i]}
            for i, bus in enumerate(self.gpu_bus_ids)
        }


# The bus ids of an HGX H100 baseboard's eight GPUs (Supermicro/Dell layouts use these).
HGX_BUSES = ("18", "2a", "3a", "5d", "9a", "ab", "ba", "db")


def make_node(
    node_id: str,
    seed: int = 0,
    gpu_count: int = 8,
    nic_count: int = 8,
    drive_count: int = 8,
    **facts: Any,
) -> SimNode:
    """Build a node with deterministic serials from its id and seed."""
    rng = random.Random(f"{seed}:{node_id}:serials")
    buses = [HGX_BUSES[i] if i < len(HGX_BUSES) else f"{0xC0 + i:02x}" for i in range(gpu_count)]
    return SimNode(
        node_id=node_id,
        gpu_serials=tuple(f"1652{rng.randrange(10**9):09d}" for _ in range(gpu_count)),
        gpu_bus_ids=tuple(f"0000:{bus}:00.0" for bus in buses),
        nic_names=tuple(f"mlx5_{i}" for i in range(nic_count)),
        drive_serials=tuple(f"S6CKNA0W{rng.randrange(10**6):06d}" for _ in range(drive_count)),
        seed=seed,
        **facts,
    )


# lab.faults' catalog names for the same in-band faults, with the key that holds the part.
ALIASES = {"gpu_xid79": ("marginal_gpu", "GPU"), "nic_slow": ("slow_nic", "NIC")}


def faults_named(faults: Fault | list[Fault] | None, name: str) -> list[Fault]:
    """The injected faults with this name (faults may be one dict, a list, or None)."""
    if faults is None:
        return []
    items = [faults] if isinstance(faults, dict) else list(faults)
    return [f for f in map(_canonical, items) if f.get("name") == name]


def _canonical(fault: Fault) -> Fault:
    """Read lab.faults' form ({"name": "gpu_xid79", "index": "3"}) as {"component": "GPU 3"}."""
    alias = ALIASES.get(str(fault.get("name")))
    if alias is None:
        return fault
    name, prefix = alias
    component = fault.get("component") or f"{prefix} {fault.get('index', 0)}"
    return {**fault, "name": name, "component": component}


def component_index(fault: Fault, prefix: str, default: int = 0) -> int:
    """The index in a component like "GPU 3", "NIC 0", "NVMe 2" or "nvme2n1"."""
    component = str(fault.get("component", "")).strip()
    digits = "".join(ch if ch.isdigit() else " " for ch in component).split()
    if not component.lower().startswith(prefix.lower()) or not digits:
        return default
    return int(digits[0])


def faulty_gpus(faults: Fault | list[Fault] | None, name: str) -> set[int]:
    """GPU indexes hit by faults of this name."""
    return {component_index(f, "GPU") for f in faults_named(faults, name)}
