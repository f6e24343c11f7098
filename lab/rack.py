"""An NVL72 lab rack's behaviour across its members: the NVLink fabric forming on the switch
trays, the power shelves, and what every compute tray's tools see of the NVLink domain.

Each member is a LabNode behind its own BMC; what couples them lives here, attached to the
hall's nodes as boot and power-off hooks:

- A switch tray's fabric starts forming when its NVOS boots, and again when its BMC restarts
  into a new bundle, and reads Enabled (its BMC's Fabrics/NVLink_0) FABRIC_FORM_SECONDS later;
  it is gone while the tray is off, as during the AC cycle (PowerCycle) that runs a new bundle.
  (The lab's shortcut: a real tray installs CPLD and NVOS through NVOS; lab/bmc/
  member_flavours.py cites how.)
- A power shelf with the `trips_if_compute_early` fault trips (its output off, its chassis
  Critical) when a compute tray boots while any switch tray's fabric has not formed: the
  bring-up order the staged rules keep. The rack's bus bar stays fed by the other shelves, so
  no tray goes down and no single-node gate notices.
- Topology (the lab's, not NVIDIA's cable map): every GPU has two links to each switch tray,
  one to each of its two NVSwitch chips; chip c of switch tray s serves link 2s+c of every GPU,
  its port p the domain's GPU p (compute tray p // 4, GPU p % 4). A switch tray's
  `nvlink_port_down:P` is thus one named compute tray GPU link, inactive in its
  `nvidia-smi nvlink -s`; the switch tray's own fabric status stays OK.
- Every GPU registers in the rack's one cluster and clique, but a compute tray's
  `fabric_other_clique:G` GPU G, which registers healthy in the next clique.
- The IMEX domain's nodes_config.cfg lists every compute tray's host address but those with
  `imex_peer_missing`; every tray prints that same view (`nvidia-imex-ctl -N`).
- `dcgmi mndiag` run on one compute tray over the others' addresses reports every tray it was
  given by its host name, each GPU passing but a tray's `mndiag_gpu_fails:G` GPU G, which fails
  mnubergemm's cross-tray GEMM (its single-node gates pass: only the rack-wide gate sees it).
"""

from __future__ import annotations

import random
import uuid
from typing import TYPE_CHECKING

from .agents import agent_address
from .tool_outputs.mndiag import CUDA_ERROR, MnHost, mndiag_json
from .tool_outputs.rack_fabric import GpuFabric, host_addresses, imex_nodes, nvlink_status
from .tool_outputs.rack_fabric import with_fabric as smi_with_fabric

if TYPE_CHECKING:
    from .hall import LabHall
    from .node import LabNode

# Lab seconds from NVOS (re)starting to the tray's fabric formed: NVOS's boot and the fabric
# manager's sweep of its NVSwitches. Long enough that a compute tray powered on as soon as the
# switch trays' runs end boots before it (a real rack's bring-up takes minutes here too).
FABRIC_FORM_SECONDS = 1800.0
CHIPS_PER_SWITCH_TRAY = 2


class LabRackFabric:
    """The couplings of one rack-scale hall's members (see the module's docstring)."""

    # The tools only a rack's compute tray answers (`tool_output`).
    TOOLS = ("imex", "nvlink", "host-addresses", "hostname", "mndiag")

    def __init__(self, hall: LabHall, name: str) -> None:
        self.hall = hall
        self.name = name
        self.shelves = [n for n in hall.nodes if n.kind == "power_shelf"]
        self.switches = [n for n in hall.nodes if n.kind == "switch_tray"]
        self.trays = [n for n in hall.nodes if n.kind == "compute_tray"]
        rng = random.Random(f"nvlink-domain:{hall.seed}:{name}")
        self.cluster_uuid = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        self.clique_id = rng.randrange(1, 32000)
        for switch in self.switches:
            switch.on_boot.append(self._switch_booted)
            switch.on_bmc_restart.append(self._switch_restarted)
            switch.on_power_off.append(self._switch_off)
        for tray in self.trays:
            tray.on_boot.append(self._tray_booted)
        hall.rack = self

    # -- couplings --------------------------------------------------------------------------

    def _switch_booted(self, node: LabNode, target: str) -> None:
        node.fabric_state = "Starting"

        def formed() -> None:
            if node.power == "On" and node.fabric_state == "Starting":
                node.fabric_state = "Enabled"

        node.schedule(self.hall.clock.now(), FABRIC_FORM_SECONDS, formed)

    def _switch_restarted(self, node: LabNode) -> None:
        if node.power == "On":
            self._switch_booted(node, "")

    def _switch_off(self, node: LabNode) -> None:
        node.fabric_state = ""

    def fabric_formed(self) -> bool:
        """Whether every switch tray's fabric reads Enabled."""
        return all(switch.fabric_state == "Enabled" for switch in self.switches)

    def _tray_booted(self, node: LabNode, target: str) -> None:
        if self.fabric_formed():
            return
        for shelf in self.shelves:
            if shelf.faults.has("trips_if_compute_early"):
                shelf.tripped = True

    # -- the topology -------------------------------------------------------------------------

    @property
    def links_per_gpu(self) -> int:
        return CHIPS_PER_SWITCH_TRAY * len(self.switches)

    @property
    def gpus_in_domain(self) -> int:
        return sum(len(tray.gpus) for tray in self.trays)

    def port_link(self, switch: int, port: int) -> tuple[int, int, int]:
        """(compute tray, GPU, link), 0-based, that switch tray `switch`'s port `port` serves."""
        chip, gpu = divmod(port, self.gpus_in_domain)
        tray, index = divmod(gpu, len(self.trays[0].gpus))
        return tray, index, CHIPS_PER_SWITCH_TRAY * switch + chip

    def down_links(self, tray: LabNode) -> set[tuple[int, int]]:
        """(GPU, link) of this compute tray that a switch tray's down port leaves inactive."""
        number = self.trays.index(tray)
        down = set()
        for switch_index, switch in enumerate(self.switches):
            if switch.faults.has("nvlink_port_down"):
                found = self.port_link(switch_index, int(switch.faults.param("nvlink_port_down")))
                if found[0] == number:
                    down.add(found[1:])
        return down

    def gpu_fabrics(self, tray: LabNode) -> list[GpuFabric]:
        """Each GPU's fabric facts: registered once every switch tray's fabric formed."""
        formed = self.fabric_formed()
        other = tray.faults.param("fabric_other_clique") if tray.faults.has(
            "fabric_other_clique") else None  # fmt: skip
        out = []
        for index in range(len(tray.gpus)):
            clique = self.clique_id + (1 if other is not None and str(index) == other else 0)
            if formed:
                out.append(GpuFabric("Completed", "Success", clique, self.cluster_uuid))
            else:
                out.append(GpuFabric("In Progress", "N/A", None, ""))
        return out

    def imex_addresses(self) -> list[str]:
        """The compute trays' addresses as nodes_config.cfg lists them."""
        return [
            agent_address(tray.index)
            for tray in self.trays
            if not tray.faults.has("imex_peer_missing")
        ]

    # -- the tools ------------------------------------------------------------------------

    def smi(self, tray: LabNode, xml: str) -> str:
        """A compute tray's `nvidia-smi -q -x` with its GPUs' Fabric elements."""
        return smi_with_fabric(xml, self.gpu_fabrics(tray))

    def hostname(self, tray: LabNode) -> str:
        """The compute tray's host name (what `hostname` prints and mndiag names it by)."""
        return f"{self.name}-tray{self.trays.index(tray) + 1:02d}".lower()

    def mndiag(self, hosts: list[str]) -> str:
        """`dcgmi mndiag --json` over the trays at `hosts`. Given addresses, DCGM finds no node
        info under the host names mnubergemm prints: versions "unknown", as its runner writes."""
        ran = []
        for tray in self.trays:
            if agent_address(tray.index) not in hosts:
                continue
            failing = tray.faults.param("mndiag_gpu_fails") if tray.faults.has(
                "mndiag_gpu_fails") else None  # fmt: skip
            errors = {int(failing): (CUDA_ERROR,)} if failing is not None else {}
            ran.append(MnHost(self.hostname(tray), len(tray.gpus), "unknown", "See nvidia-smi",
                              errors))  # fmt: skip
        return mndiag_json(ran)

    def tool_output(
        self, tool: str, tray: LabNode, gpu_uuids: list[str], params: dict | None = None
    ) -> str:
        """What `tool` (one of TOOLS) prints on this compute tray."""
        if tool == "hostname":
            return self.hostname(tray) + "\n"
        if tool == "mndiag":
            return self.mndiag([str(h) for h in (params or {}).get("hosts") or []])
        if tool == "imex":
            return imex_nodes(self.imex_addresses())
        if tool == "nvlink":
            gpus = [(g["model"], gpu_uuids[i]) for i, g in enumerate(tray.gpus)]
            return nvlink_status(gpus, self.links_per_gpu, self.down_links(tray))
        if tool == "host-addresses":
            return host_addresses([agent_address(tray.index)])
        raise ValueError(f"not a rack tool: {tool}")
