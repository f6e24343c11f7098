"""Fault mixes for lab racks: which nodes get which faults, deterministic by seed.

"standard" is shaped like a real large deployment: about 1.5% of nodes (never fewer than one of
each kind) with a real hardware fault, and transient trouble on many of the others. "demo" is the
demo rack's: exactly one node with one hardware fault, so a newcomer sees a gate fail a node and
name the part, and every other node healthy.
"""

from __future__ import annotations

import math
import random

from provisioning.core.phases import label_of

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

# The layer that catches each hardware fault: the cheapest that explains it.
CAUGHT_BY = {
    "gpu_xid79": "gate:burn_in",  # marginal: passes DCGM, fails only under sustained load
    "nic_slow": "gate:fabric",
    "nvswitch_topology": "gate:nvbandwidth",
    "firmware_update_fails": "nvme_firmware",
    "bmc_unreachable": "preflight",
}
# What the demo rack's seeded fault looks like to a person, by fault name.
IN_WORDS = {
    "gpu_xid79": "{component} falls off the bus (XID 79) after half an hour of sustained load",
    "nic_slow": "{component} runs at {param} of line rate",
    "nvswitch_topology": "{component} is missing from the NVSwitch topology",
}

# The demo rack's one seeded fault: a marginal GPU, the fault a newcomer most needs to see caught
# (it passes DCGM and short jobs; only the burn-in soak finds it, and names the GPU). On the node
# at this index (the sixth, U6), or the rack's last node if the rack is smaller.
DEMO_FAULT = "gpu_xid79:3"
DEMO_FAULT_INDEX = 5
MIXES = ("none", "standard", "demo")


def demo_plan(nodes: int) -> dict[int, list[str]]:
    """The demo rack's faults: exactly one node, with one hardware fault."""
    if nodes < 1:
        raise ValueError(f"a demo rack needs at least one node, not {nodes}")
    return {min(DEMO_FAULT_INDEX, nodes - 1): [DEMO_FAULT]}


def fault_options(plan: dict[int, list[str]]) -> list[str]:
    """The plan as `manage.py lab serve` options (`--fault INDEX=name[:param]` each)."""
    return [
        arg
        for index in sorted(plan)
        for spec in plan[index]
        for arg in ("--fault", f"{index}={spec}")
    ]


def announce(serial: str, position: int, spec: str) -> str:
    """One line saying which node carries a seeded hardware fault and what should catch it."""
    name, _, param = spec.partition(":")
    truth = describe(spec)
    words = IN_WORDS.get(name, CATALOG[name].description).format(
        component=truth["component"], param=param
    )
    catcher = label_of(CAUGHT_BY[name]) if name in CAUGHT_BY else "a gate"
    return (
        f"node {serial} (U{position}) carries a seeded fault: {words}; "
        f"{catcher!r} should fail it and name {truth['component']}"
    )


def plan_faults(nodes: int, mix: str, seed: int) -> dict[int, list[str]]:
    """Node index -> fault specs for a rack of `nodes` under a mix of MIXES."""
    if mix == "none" or nodes == 0:
        return {}
    if mix == "demo":
        return demo_plan(nodes)
    if mix != "standard":
        raise ValueError(f"unknown fault mix {mix!r}; known: {', '.join(MIXES)}")
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
