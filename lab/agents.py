"""The lab's in-band side: each lab node runs the real agent program on simulated hardware.

A boot from PXE starts the agent in the ephemeral environment; a boot from disk starts it in the
installed OS (or falls through to PXE when the disk holds no OS, as a real boot order does); a
power-off stops it. Each agent connects from its node's own loopback address (the artifact server
knows who is downloading) and pulls its commands from Greenlight exactly as a real one does.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import secrets
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

from agent import boot_args
from agent.hardware import Hardware, HardwareError, Log
from agent.runner import LIMITS, Agent
from provisioning.redfish.tls import default_context

from .inband import InbandState
from .node import UPDATE_SECONDS, LabNode
from .tool_outputs import (
    SimNode,
    dcgm_diag_json,
    fio_json,
    gpu_burn_text,
    kernel_log_xid,
    nccl_all_reduce,
    nvbandwidth_text,
    nvidia_smi_xml,
    reference_job_text,
    soak_samples,
)
from .tool_outputs.node import HGX_BUSES

if TYPE_CHECKING:
    from .hall import LabHall

logger = logging.getLogger(__name__)

SIGNING_KEY = "lab-signing-key-1"
ERASE_SECONDS = 20.0
INSTALL_SECONDS = 240.0
AGENT_GONE_SECONDS = 60.0
# A network boot's fetch of its iPXE script: tries, and lab seconds between them, but never
# under a real second: what it waits out (a control plane failing over) takes real seconds,
# however fast the lab's clock runs.
IPXE_ATTEMPTS = 10
IPXE_RETRY_S = 10.0
IPXE_RETRY_MIN_REAL_S = 1.0
GPU_RESET_SECONDS = 15.0
# Rack members with a BMC and no OS Greenlight installs (fleet's DEVICE_KINDS).
DEVICE_KINDS = ("switch_tray", "power_shelf")
MARGINAL_S = 1800


def agent_address(index: int) -> str:
    """The in-band (host) address of node `index`: 127.2.x.y, apart from the BMCs' 127.0.x.y."""
    return f"127.2.{index // 250}.{1 + index % 250}"


def in_band_faults(node: LabNode) -> list[dict[str, Any]]:
    """The node's hardware faults in the form the tool output generators read."""
    out = []
    for name, param in node.faults.active.items():
        if name == "gpu_xid79":
            # Marginal: healthy for the first half hour of sustained load, so DCGM and short
            # jobs pass and only the soak catches it.
            out.append(
                {"name": "marginal_gpu", "component": f"GPU {param or 3}", "after_s": MARGINAL_S}
            )
        elif name == "nic_slow":
            out.append({"name": "slow_nic", "component": "NIC 0", "ratio": float(param or 0.6)})
        elif name == "nvswitch_topology":
            out.append({"name": "nvswitch_topology", "component": f"GPU {param or 5}"})
        elif name == "gpu_row_remap":
            out.append({"name": "row_remap_event", "component": f"GPU {param or 2}"})
        elif name in ("nvme_errors", "ecc_uncorrectable", "thermal_throttle", "row_remap_event"):
            out.append({"name": name, "component": param})
    return out


def sim_node(node: LabNode, seed: int) -> SimNode:
    """The node as the acceptance tools' output generators see it."""
    fabric = [n for n in node.nics if n.get("kind") == "fabric"]
    return SimNode(
        node_id=node.serial,
        gpu_model=node.gpus[0]["model"] if node.gpus else "NVIDIA H100 80GB HBM3",
        gpu_serials=tuple(g["serial"] for g in node.gpus),
        gpu_bus_ids=tuple(f"0000:{HGX_BUSES[i % 8]}:00.0" for i in range(len(node.gpus))),
        nic_names=tuple(f"mlx5_{i}" for i in range(len(fabric))),
        drive_serials=tuple(d["serial"] for d in node.drives),
        seed=seed,
    )


class LabHardware(Hardware):
    """A lab node's hardware as the agent sees it."""

    def __init__(self, hall: LabHall, node: LabNode, state: InbandState):
        self.hall = hall
        self.node = node
        self.state = state

    async def _take(self, lab_seconds: float) -> None:
        """Let lab time pass (a flash, an erase) without blocking the hall's loop."""
        await asyncio.sleep(self.hall.clock.real_seconds(lab_seconds))

    async def identity(self) -> dict[str, Any]:
        return {"serial": self.node.serial, "macs": self.node.macs}

    async def inventory(self) -> dict[str, Any]:
        fw = self.node.firmware
        fabric = [n for n in self.node.nics if n.get("kind") == "fabric"]
        return {
            "gpus": [
                {"index": g["index"], "serial": g["serial"], "model": g["model"]}
                for g in self.node.gpus
            ],
            "nics": [
                {
                    "index": str(i),
                    "name": f"NIC {i}",
                    "model": "ConnectX-7 400G",
                    "serial": n["serial"],
                    "mac": n["mac"],
                    "firmware": fw["nic"],
                    "psid": "MT_0000000838",
                }
                for i, n in enumerate(fabric)
            ],
            "dpus": [
                {
                    "index": d["index"],
                    "name": f"DPU {d['index']}",
                    "model": d["model"],
                    "serial": d["serial"],
                    "firmware": fw["dpu"],
                }
                for d in self.node.dpus
            ],  # fmt: skip
            "drives": [
                {
                    "index": d["index"],
                    "name": f"nvme{d['index']}n1",
                    "model": d["model"],
                    "serial": d["serial"],
                    "firmware": fw["nvme"],
                    "sanitize_crypto": not self.node.faults.has("erase_unsupported"),
                    "format_crypto": True,
                }
                for d in self.node.drives
            ],
            "os_image": {"sha256": self.state.os_image_sha256},
        }

    async def flash(self, kind: str, device: dict, image: Path, version: str, log: Log) -> dict:
        count = len({"nic": self.node.nics, "dpu": self.node.dpus, "nvme": self.node.drives}[kind])
        await self._take(UPDATE_SECONDS[kind] / max(count, 1))
        if self.node.faults.has("firmware_update_fails") and (
            self.node.faults.param("firmware_update_fails") == kind
        ):
            log(f"{device['name']}: status 0x4106: firmware activation failed")
            raise HardwareError(f"{device['name']}: firmware activation failed (status 0x4106)")
        log(f"{device['name']}: flashed {version}, active after reset")
        self.state.flashes[kind] = self.state.flashes.get(kind, 0) + 1
        # Every device of a kind shares one version in the lab; it runs after the next boot.
        self.node.firmware_staged[kind] = version
        return {"needs_reset": True, "needs_power_cycle": False}

    async def erase(self, drive: dict, method: str, log: Log) -> dict:
        await self._take(ERASE_SECONDS)
        faults = self.node.faults
        if faults.has("erase_refused") and faults.param("erase_refused") in ("", drive["serial"]):
            return {"tool": "nvme", "exit_code": 5, "output": "NVMe status: Access Denied (0x4286)"}
        if not (
            faults.has("erase_ineffective")
            and faults.param("erase_ineffective") in ("", drive["serial"])
        ):
            self.state.drive_data[drive["serial"]] = f"erased:{secrets.token_hex(8)}"
            if drive.get("index") == "0":
                self.state.os_image_sha256 = ""  # the boot drive held the OS
        self.state.erase_count += 1
        tool = "sedutil-cli" if method == "opal_psid_revert" else "nvme"
        return {"tool": tool, "exit_code": 0, "output": f"{method}: success"}

    async def sample_blocks(self, drive: dict) -> str:
        return self.state.digest(drive["serial"])

    async def write_image(self, image: Path, log: Log) -> None:
        await self._take(INSTALL_SECONDS)
        self.state.os_image_sha256 = hashlib.sha256(image.read_bytes()).hexdigest()
        for serial in self.state.drive_data:
            self.state.drive_data[serial] = f"os:{self.state.os_image_sha256[:12]}"
        log("image written to nvme0n1")

    def set_boot_disk(self, disk: str) -> None:
        pass  # a lab node has one boot drive (nvme0n1): the OS goes there whatever is named

    async def record_install(self, record: dict[str, Any]) -> None:
        # The lab's disk keeps the record as a real one would beside the image.
        self.state.os_image_sha256 = record["image_sha256"]
        self.state.install_record = dict(record)

    async def verify_signature(self, image: Path, signature: str) -> bool:
        return signature.startswith(SIGNING_KEY + ":") and not self.node.faults.has("bad_signature")

    async def run_tool(self, tool: str, params: dict, log: Log) -> tuple[int, str]:
        sim = sim_node(self.node, self.hall.seed)
        faults = in_band_faults(self.node)
        await self._take(float(params.get("duration_s", 60)))
        if tool == "dcgm":
            return 0, dcgm_diag_json(sim, int(params.get("level", 3)), faults)
        rack = self.hall.rack
        if tool == "nvidia-smi":
            xml = nvidia_smi_xml(sim, faults, under_load=bool(params.get("under_load")))
            # A GB200 tray's GPUs report their NVLink fabric too (lab.rack).
            return 0, rack.smi(self.node, xml) if rack and self.node in rack.trays else xml
        if rack is not None and tool in rack.TOOLS and self.node in rack.trays:
            uuids = [sim.gpu_uuid(i) for i in range(sim.gpu_count)]
            return 0, rack.tool_output(tool, self.node, uuids, params)
        if tool == "xid":
            phase = params.get("phase", "gate")
            return 0, kernel_log_xid(sim, faults, phase=phase, soak_s=int(params.get("soak_s", 0)))
        if tool == "nvbandwidth":
            return 0, nvbandwidth_text(sim, faults)
        if tool == "fio":
            return 0, fio_json(sim, faults)
        if tool == "reference-job":
            return 0, reference_job_text(
                sim, faults, float(params["peak_tflops"]), int(params.get("steps", 20))
            )
        if tool == "gpu-burn":
            return 0, gpu_burn_text(sim, faults, duration_s=int(params.get("duration_s", 600)))
        if tool == "nccl":
            peer = self.hall.node(params["peer"])
            pair = (sim, sim_node(peer, self.hall.seed))
            faults_by_node = {self.node.serial: faults, peer.serial: in_band_faults(peer)}
            rail = params.get("rail")
            return 0, nccl_all_reduce(
                pair, faults_by_node, rail=None if rail is None else int(rail)
            )
        if tool == "soak":
            start = int(params.get("start_s", 0))
            end = start + int(params.get("duration_s", 3600))
            samples = soak_samples(
                sim, faults, duration_s=end, interval_s=int(params.get("interval_s", 600))
            )
            return 0, json.dumps([x for x in samples if start <= x["t"] <= end])
        if tool == "attestation":
            return 0, json.dumps(self.attestation_report())
        return 127, f"{tool}: command not found"

    async def reset_gpu(self, index: int, log: Log) -> None:
        await self._take(GPU_RESET_SECONDS)
        self.state.gpu_resets[index] = self.state.gpu_resets.get(index, 0) + 1

    def attestation_report(self) -> dict[str, Any]:
        """What the lab node's measured boot reports: its image and its firmware."""
        fw = self.node.firmware
        return {
            "image_sha256": self.state.os_image_sha256,
            "signature_verified": not self.node.faults.has("bad_signature"),
            "measurements": {
                kind: fw[kind] for kind in ("bmc", "bios", "hgx", "nic", "dpu", "nvme")
            },
        }


class LabAgents:
    """Starts and stops each lab node's agent as the node boots and powers off."""

    def __init__(self, hall: LabHall, greenlight_url: str):
        self.hall = hall
        self.greenlight_url = greenlight_url
        self.states: dict[str, InbandState] = {n.serial: InbandState.fresh(n) for n in hall.nodes}
        self.agents: dict[str, Agent] = {}
        self.checkins: dict[str, int] = {}
        # Each node's power cycles, counted on the lab's loop: a boot whose agent is still
        # fetching its iPXE script when the node goes down is dead, as on a real node. Left to
        # finish, it started an agent beside the next boot's, and the two redeemed one
        # credential (a database failover's 500s held the fetch open for seconds).
        self.cycles: dict[str, int] = {}
        for node in hall.nodes:
            if node.kind in DEVICE_KINDS:
                continue  # a switch tray's NVOS and a shelf's controller run no agent
            node.on_boot.append(self._on_boot)
            node.on_power_off.append(self._on_power_off)

    def _loop(self) -> asyncio.AbstractEventLoop:
        loop = self.hall._loop
        if loop is None:
            raise RuntimeError("the lab hall is not running")
        return loop

    def _on_boot(self, node: LabNode, target: str) -> None:
        state = self.states[node.serial]
        environment = "host_os" if target == "Hdd" and state.os_image_sha256 else "ephemeral"

        def begin() -> None:
            cycle = self._next_cycle(node)
            asyncio.ensure_future(self._start(node, environment, cycle))

        self._loop().call_soon_threadsafe(begin)

    def _on_power_off(self, node: LabNode) -> None:
        def end() -> None:
            self._next_cycle(node)
            asyncio.ensure_future(self._stop(node))

        self._loop().call_soon_threadsafe(end)

    def _next_cycle(self, node: LabNode) -> int:
        self.cycles[node.serial] = self.cycles.get(node.serial, 0) + 1
        return self.cycles[node.serial]

    async def _credential(self, node: LabNode, environment: str, http: httpx.AsyncClient) -> str:
        """What the boot hands the agent: the iPXE script's credential for a network boot (as
        a real node's firmware fetches it by MAC), the install record's for the installed OS."""
        if environment == "host_os":
            return str(self.states[node.serial].install_record.get("host_credential", ""))
        # Firmware retries a network boot whose server did not answer (iPXE's own retries, then
        # the boot order again): hundreds of nodes powering on together can time a fetch out.
        # A 4xx is an answer: Greenlight armed no boot for this MAC (a power-on with nothing
        # to boot), and the node starts no agent (_start).
        for attempt in range(1, IPXE_ATTEMPTS + 1):
            try:
                answer = await http.get(
                    f"{self.greenlight_url}/boot/v1/ipxe", params={"mac": node.macs[0]}
                )
            except httpx.HTTPError as exc:
                why = f"{type(exc).__name__}: {exc}"
            else:
                if answer.status_code == 200:
                    return boot_args.parse(answer.text.replace("\n", " ")).credential
                if answer.status_code < 500:
                    return ""
                why = f"HTTP {answer.status_code}"
            if attempt < IPXE_ATTEMPTS:
                retry_s = max(self.hall.clock.real_seconds(IPXE_RETRY_S), IPXE_RETRY_MIN_REAL_S)
                await asyncio.sleep(retry_s)
        logger.warning("%s: no iPXE script after %d tries (%s)", node.serial, IPXE_ATTEMPTS, why)
        return ""

    async def _start(self, node: LabNode, environment: str, cycle: int) -> None:
        await self._stop(node)
        address = agent_address(node.index)
        # Bound to the node's own address, so the artifact server knows who is downloading.
        http = httpx.AsyncClient(
            timeout=30.0,
            # One SSL context for every boot of every node: loading the CA bundle per client was
            # the lab's largest CPU cost in a large run.
            transport=httpx.AsyncHTTPTransport(
                local_address=address, verify=default_context(), limits=LIMITS
            ),
        )
        credential = await self._credential(node, environment, http)
        if self.cycles.get(node.serial) != cycle:
            await http.aclose()  # the node went down (or booted again) while this boot fetched
            return
        if environment == "ephemeral" and not credential:
            # No script for this MAC (not armed, or the boot plane never answered): a real
            # node's firmware has no image to boot and nothing checks in. Started anyway, every
            # node's power-on boot checked in with nothing and was refused, one ERROR line a
            # node in a benchmark's log (739 of them at 741 nodes).
            await http.aclose()
            return
        agent = Agent(
            LabHardware(self.hall, node, self.states[node.serial]),
            self.greenlight_url,
            environment=environment,
            credential=credential,
            checkin_retry_s=max(self.hall.clock.real_seconds(5.0), 0.05),
            http=http,
        )
        self.agents[node.serial] = agent
        await agent.start()
        self.checkins[node.serial] = self.checkins.get(node.serial, 0) + 1
        if node.faults.consume("agent_vanishes"):
            asyncio.ensure_future(self._vanish(node, agent))

    async def _vanish(self, node: LabNode, agent: Agent) -> None:
        """The agent process dies and is restarted by its supervisor, same boot, same token."""
        await asyncio.sleep(self.hall.clock.real_seconds(30.0))
        if self.agents.get(node.serial) is not agent:
            return
        agent.pause_polling()
        await asyncio.sleep(self.hall.clock.real_seconds(AGENT_GONE_SECONDS))
        if self.agents.get(node.serial) is agent:  # the node may have rebooted meanwhile
            agent.resume_polling()

    async def _shut_down(self, node: LabNode) -> None:
        self._next_cycle(node)  # a boot still fetching its script starts nothing now
        await self._stop(node)

    async def _stop(self, node: LabNode) -> None:
        agent = self.agents.pop(node.serial, None)
        if agent is not None:
            await agent.stop()
            await agent.http.aclose()

    def stop_all(self) -> None:
        """Stop every agent (the hall is shutting down)."""
        loop = self.hall._loop
        if loop is None:
            return
        futures = [
            asyncio.run_coroutine_threadsafe(self._shut_down(node), loop)
            for node in self.hall.nodes
        ]
        for future in futures:
            try:
                future.result(timeout=10)
            except Exception:  # noqa: BLE001
                logger.warning("a lab agent did not stop cleanly", exc_info=True)
