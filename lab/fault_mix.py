"""Fault mixes for lab racks: which nodes get which faults, deterministic by seed.

"standard" is shaped like a real large deployment: about 1.5% of nodes (never fewer than one of
each kind) with a real hardware fault, and transient trouble on many of the others.
"""

from __future__ import annotations

import math
import random

from .faults import CATALOG

# Hardware faults injected after enrollment (a BMC that cannot be reached cannot be enrolled).
HARDWARE_MIX = (
    "gpu_xid79:3",
    "nic_slow:0.6",
    "firmware_update_fails:nvme",
    "nvswitch_topology:5",
    "bmc_unreachable",
)
TRANSIENT_MIX = (
    "bmc_503:0.2",
    "bmc_timeout:0.05",
    "download_blip",
    # Transient: one reset of the node is slow. A node whose every reset is slow (slow_reset)
    # is not a passing fault but a slower machine, and would only measure that machine.
    "slow_reset_once:3",
    "agent_vanishes",
    "power_on_ignored",
)

# The part each hardware fault breaks, as a verdict should name it.
FAULT_COMPONENT = {
    "gpu_xid79": lambda p: f"GPU {p or 3}",
    "nic_slow": lambda p: "NIC 0",
    "firmware_update_fails": lambda p: p or "bios",
    "nvswitch_topology": lambda p: f"GPU {p or 5}",
    "bmc_unreachable": lambda p: "bmc",
    "wrong_credentials": lambda p: "bmc",
}


def plan_faults(nodes: int, mix: str, seed: int) -> dict[int, list[str]]:
    """Node index -> fault specs for a rack of `nodes` under mix "none" or "standard"."""
    if mix == "none" or nodes == 0:
        return {}
    if mix != "standard":
        raise ValueError(f"unknown fault mix {mix!r}; known: none, standard")
    rng = random.Random(f"fault-mix:{seed}:{nodes}")
    order = list(range(nodes))
    rng.shuffle(order)
    hardware_count = min(nodes, max(len(HARDWARE_MIX), math.ceil(nodes * 0.015)))
    if nodes < 2 * len(HARDWARE_MIX):
        hardware_count = min(hardware_count, nodes // 2)
    plan: dict[int, list[str]] = {}
    for i, index in enumerate(order[:hardware_count]):
        plan[index] = [HARDWARE_MIX[i % len(HARDWARE_MIX)]]
    for index in order[hardware_count:]:
        if rng.random() < 0.5:
            plan[index] = rng.sample(TRANSIENT_MIX, k=rng.choice((1, 2)))
    return plan


def describe(spec: str) -> dict[str, str]:
    """The lab's truth about one injected fault: name, kind, component."""
    name, _, param = spec.partition(":")
    catalog = CATALOG[name]
    component = FAULT_COMPONENT.get(name, lambda p: catalog.component)(param)
    return {"name": name, "kind": catalog.kind, "component": component}


def is_hardware(spec: str) -> bool:
    return CATALOG[spec.partition(":")[0]].kind == "hardware"
