"""Fault injection: a catalog of named faults, and the faults active on one node.

Faults are deterministic by seed: whether the next request to a BMC gets a 503 is drawn from
a random.Random seeded per node, so a test run with the same seed sees the same sequence.
"""

from __future__ import annotations

import random
from dataclasses import dataclass


@dataclass(frozen=True)
class FaultSpec:
    """One kind of fault.

    kind: "transient" goes away if retried or waited out; "hardware" stays until a person acts
    (replace a part, fix a credential, buy a licence). param: what the optional value after
    the colon means, with its default.
    """

    name: str
    kind: str
    component: str
    description: str
    param: str = ""
    default: str = ""


CATALOG: dict[str, FaultSpec] = {
    spec.name: spec
    for spec in (
        FaultSpec("bmc_503", "transient", "bmc", "BMC answers 503 at a rate", "rate", "0.3"),
        FaultSpec(
            "bmc_timeout", "transient", "bmc", "BMC holds answers past timeouts", "rate", "0.2"
        ),
        FaultSpec("bmc_unreachable", "hardware", "bmc", "BMC drops every connection"),
        FaultSpec("wrong_credentials", "hardware", "bmc", "BMC refuses the inventory password"),
        FaultSpec(
            "firmware_update_fails",
            "hardware",
            "firmware",
            "an update of this component ends in Exception and leaves the old version",
            "component",
            "bios",
        ),
        FaultSpec(
            "update_answer_held",
            "transient",
            "bmc",
            "the BMC starts the next update of this component but holds its answer past any"
            " client's timeout (the sender is caught between accepted and recorded); once",
            "component",
            "bios",
        ),
        FaultSpec("slow_reset", "transient", "system", "resets take longer", "factor", "20"),
        FaultSpec(
            "slow_reset_once",
            "transient",
            "system",
            "the next reset takes longer (memory retraining after a firmware change)",
            "factor",
            "3",
        ),
        FaultSpec(
            "power_on_ignored",
            "transient",
            "bmc",
            "the first power-on is answered 204 and ignored (seen on some iDRAC firmware)",
        ),
        FaultSpec(
            "licence_missing",
            "hardware",
            "bmc",
            "BIOS settings and firmware update answer 403 (Supermicro without SFT-DCMS)",
        ),
        FaultSpec(
            "idrac_before_6",
            "hardware",
            "bmc",
            "iDRAC firmware before 6.0: a Cd boot override boots the physical drive, not the"
            " virtual medium (Ironic's redfish-virtual-media Dell note); OEM VCD-DVD still works",
        ),
        # In-band faults, read by the agent simulation; the BMCs ignore them.
        FaultSpec(
            "gpu_xid79", "hardware", "gpu", "a GPU falls off the bus under load", "index", "3"
        ),
        FaultSpec("nic_slow", "hardware", "nic", "a NIC runs below line rate", "ratio", "0.6"),
        FaultSpec("nvswitch_topology", "hardware", "nvswitch", "NVSwitch topology mismatch"),
        FaultSpec(
            "erase_refused",
            "hardware",
            "nvme",
            "the erase tool exits non-zero on a drive (every drive when no serial is given)",
            "serial",
        ),
        FaultSpec(
            "erase_ineffective",
            "hardware",
            "nvme",
            "the erase tool says success but the drive's blocks read back unchanged",
            "serial",
        ),
        FaultSpec(
            "erase_unsupported",
            "hardware",
            "nvme",
            "the drives advertise no sanitize crypto erase (format crypto erase remains)",
        ),
        FaultSpec(
            "gpu_row_remap",
            "transient",
            "gpu",
            "a GPU logs XID 63 once (row remap pending): a GPU reset applies it",
            "index",
            "2",
        ),
        FaultSpec("agent_vanishes", "transient", "agent", "the agent stops checking in once"),
        # Rack faults of an NVL72 (lab.rack): none is seen by a member's single-node gates.
        FaultSpec(
            "nvlink_port_down",
            "hardware",
            "nvlink",
            "a switch tray's NVLink port is down: one compute tray GPU's link reads inactive",
            "port",
            "5",
        ),
        FaultSpec(
            "fabric_other_clique",
            "hardware",
            "gpu",
            "a compute tray's GPU registers healthy with the fabric, in another clique",
            "index",
            "2",
        ),
        FaultSpec(
            "mndiag_gpu_fails",
            "hardware",
            "gpu",
            "a compute tray's GPU fails dcgmi mndiag's cross-tray GEMM (an illegal memory access"
            " under multi-node load); its single-node gates pass",
            "index",
            "1",
        ),
        FaultSpec(
            "imex_peer_missing",
            "hardware",
            "imex",
            "the compute tray is left out of the IMEX domain's nodes_config.cfg",
        ),
        FaultSpec(
            "trips_if_compute_early",
            "hardware",
            "power_shelf",
            "the power shelf trips when a compute tray boots before every switch tray's"
            " NVLink fabric formed",
        ),
        FaultSpec("download_blip", "transient", "network", "a download drops mid-way once"),
    )
}


def parse_fault(text: str) -> tuple[str, str]:
    """ "name" or "name:param" -> (name, param), param defaulting from the catalog."""
    name, _, param = text.strip().partition(":")
    if name not in CATALOG:
        raise ValueError(f"unknown fault {name!r}; known: {', '.join(sorted(CATALOG))}")
    return name, param or CATALOG[name].default


class NodeFaults:
    """The faults active on one node, with the node's own seeded random source."""

    def __init__(self, seed: int | str, active: dict[str, str] | None = None) -> None:
        self._rng = random.Random(f"faults:{seed}")
        self.active: dict[str, str] = dict(active or {})

    def set(self, text: str) -> None:
        """Turn a fault on ("name" or "name:param")."""
        name, param = parse_fault(text)
        self.active[name] = param

    def clear(self, name: str | None = None) -> None:
        """Turn one fault off, or all of them."""
        if name is None:
            self.active.clear()
        else:
            self.active.pop(name, None)

    def has(self, name: str) -> bool:
        return name in self.active

    def param(self, name: str) -> str:
        return self.active.get(name, "")

    def roll(self, name: str) -> bool:
        """Whether a rate fault strikes this time (deterministic sequence per seed)."""
        if name not in self.active:
            return False
        return self._rng.random() < float(self.active[name] or CATALOG[name].default)

    def consume(self, name: str) -> bool:
        """Whether a one-shot fault strikes; it is then cleared."""
        return self.active.pop(name, None) is not None
