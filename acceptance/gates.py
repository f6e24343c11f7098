"""The acceptance gates, each declared once, in their default (cheapest first) order.

A gate is one row of GATES: its name and label, the tools the agent runs for it and the outputs
it is judged on, its thresholds with their defaults, its judge, and the tools whose manual output
a person may upload under it. Everything else reads it from here: the profile schema, the choices
of GateResult.gate, the runner, the uploads, and (by a test) the agent's own list of tools.
Adding a gate is adding a row.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from django.db import models

from fleet.models import Node

from . import judging
from .choices import Verdict
from .judging import Judge
from .parsers import sxid
from .parsers.base import Severity
from .partners import fabric_partners
from .verdicts import Evidence, GateVerdict, SkuFacts, conclude

if TYPE_CHECKING:
    from provisioning.core.phases.base import PhaseContext

# The tool invocations (agent run_tools specs) a gate sends for one node, given its thresholds.
Runs = Callable[["PhaseContext", dict[str, float]], list[dict[str, Any]]]


@dataclass(frozen=True)
class Threshold:
    """One threshold a profile may set for a gate: its default (None: unset) and meaning."""

    default: float | None
    meaning: str


@dataclass(frozen=True)
class Gate:
    """One acceptance gate, the one place it is written down."""

    name: str
    label: str
    # The outputs the gate is judged on, by tool command name.
    tools: tuple[str, ...]
    thresholds: dict[str, Threshold]
    judge: Judge
    # What the agent runs for it on a node (None: the gate runs as a soak, acceptance.soak_runner).
    runs: Runs | None
    # Tools the agent runs for it, where they differ from `tools` (a soak, the perftest fallback).
    agent_tools: tuple[str, ...] = ()
    # Tools whose manual output a person may upload; the result is filed under this gate.
    uploads: tuple[str, ...] = ()
    # Run with partner nodes of the rack (acceptance.partners).
    multi_node: bool = False
    # Runs for hours in chunks, its telemetry kept (acceptance.soak_runner), not one command.
    soak: bool = False
    defaults: dict[str, float] = field(init=False)

    def __post_init__(self) -> None:
        defaults = {k: t.default for k, t in self.thresholds.items() if t.default is not None}
        object.__setattr__(self, "defaults", defaults)

    def thresholds_with(self, profile: dict[str, float] | None) -> dict[str, float]:
        """The gate's defaults overlaid with the profile's thresholds."""
        return {**self.defaults, **(profile or {})}

    def judge_outputs(
        self,
        outputs: dict[str, str],
        thresholds: dict[str, float] | None,
        sku: SkuFacts,
        **facts: Any,
    ) -> GateVerdict:
        """Judge one node's outputs; `facts` are Evidence's inventory, manifest and serial."""
        used = self.thresholds_with(thresholds)
        return self.judge(self.tools, Evidence(outputs, used, sku, **facts))

    @property
    def run_tools(self) -> tuple[str, ...]:
        """Every tool the agent may be asked to run for this gate."""
        return self.agent_tools or self.tools


def fixed(*runs: dict[str, Any]) -> Runs:
    """Runs that do not depend on the node or the thresholds."""
    return lambda ctx, used: [dict(r) for r in runs]


def gpu_health_runs(ctx: PhaseContext, used: dict[str, float]) -> list[dict[str, Any]]:
    """dcgmi diag at the profile's level (its length grows with the level), then the GPU state."""
    level = int(used["dcgm_level"])
    return [
        {"tool": "dcgm", "level": level, "duration_s": {1: 60, 2: 180, 3: 1800}.get(level, 3600)},
        {"tool": "nvidia-smi", "duration_s": 5},
        {"tool": "xid", "phase": "gate", "duration_s": 1},
    ]


def fabric_runs(ctx: PhaseContext, used: dict[str, float]) -> list[dict[str, Any]]:
    """One run per rail (NCCL_IB_HCA=mlx5_k, the GPU on that rail) with each partner.

    A slow NIC is then named, not just "the fabric". A partner's rails run together (each has
    its own GPU and NIC); partners follow one another, so no two runs share a NIC. mpirun
    reaches both nodes by host name (the serial where none is recorded). A node without GPUs
    has no NCCL to run: its rails are measured by perftest's ib_write_bw.
    """
    partners = fabric_partners(ctx.node)
    names = dict(Node.objects.filter(serial__in=partners).values_list("serial", "hostname"))
    own = ctx.node.hostname or ctx.node.serial
    tool = "nccl" if ctx.node.sku.gpu_count else "perftest"
    return [
        {"tool": tool, "key": f"{tool}:{peer}:{rail}", "peer": peer, "rail": rail,
         "hosts": [own, names.get(peer) or peer],
         "together": f"{tool}:{peer}", "duration_s": 60}
        for peer in partners
        for rail in range(ctx.node.sku.nic_count)
    ]  # fmt: skip


def storage_runs(ctx: PhaseContext, used: dict[str, float]) -> list[dict[str, Any]]:
    """fio reads, then writes, for the profile's fio_runtime_s each; the wait allows for both."""
    runtime_s, iodepth = int(used["fio_runtime_s"]), int(used["fio_iodepth"])
    return [
        {"tool": "fio", "runtime_s": runtime_s, "iodepth": iodepth, "duration_s": 2 * runtime_s}
    ]


def reference_job_runs(ctx: PhaseContext, used: dict[str, float]) -> list[dict[str, Any]]:
    """The training job at the profile's peak and steps, then the kernel log."""
    return [
        {
            "tool": "reference-job",
            "peak_tflops": used["peak_tflops"],
            "steps": int(used["steps"]),
            "size": "standard",
            "duration_s": 300,
        },
        {"tool": "xid", "phase": "gate", "duration_s": 1},
    ]


ATTESTATION = Gate(
    "attestation",
    "Attestation",
    tools=("attestation",),
    thresholds={
        "require_signature": Threshold(1, "the booted image's signature must verify (1 = yes)"),
        # No default: unset means "required where the manifest pins golden measurements".
        "require_tpm": Threshold(
            None,
            "a node must attest with a TPM quote (1 = yes, 0 = a node without one passes with a "
            "'not attested' finding); unset: yes where the manifest pins golden measurements",
        ),
    },
    judge=judging.attestation,
    runs=fixed({"tool": "attestation", "duration_s": 5}),
)
GPU_HEALTH = Gate(
    "gpu_health",
    "GPU health (DCGM)",
    tools=("dcgm", "nvidia-smi", "xid"),
    thresholds={
        "dcgm_level": Threshold(3, "dcgmi diag run level (1-4)"),
        "max_uncorrectable_ecc": Threshold(0, "uncorrectable ECC errors allowed per GPU"),
        "max_pending_row_remaps": Threshold(0, "pending row remaps allowed per GPU"),
    },
    judge=judging.from_parsed(judging.check_gpu_health),
    runs=gpu_health_runs,
    uploads=("dcgm", "nvidia-smi", "xid", "aer"),
)


def judge_nvswitch(tools: tuple[str, ...], evidence: Evidence) -> GateVerdict:
    """SXids in the kernel log: a fatal one fails its NVSwitch; a non-fatal one if not allowed."""
    verdict = GateVerdict(Verdict.ERROR, thresholds_used=evidence.thresholds)
    text = evidence.outputs.get("xid")
    if text is None:
        verdict.error = "no xid output"
        return verdict
    scan = sxid.parse(text)
    if scan.error:
        verdict.error = f"sxid: {scan.error}"
        return verdict
    verdict.metrics["sxid"] = scan.metrics
    lenient = evidence.thresholds.get("allow_nonfatal")
    for finding in scan.findings:
        if finding.code == "sxid_nonfatal" and not lenient:
            finding = replace(finding, severity=Severity.CRITICAL)
        verdict.findings.append(finding)
    return conclude(verdict)


NVSWITCH = Gate(
    "nvswitch",
    "NVSwitch health (SXid scan)",
    tools=("xid",),
    thresholds={
        "allow_nonfatal": Threshold(1, "a non-fatal SXid: 1 = a warning, 0 = fails its NVSwitch"),
    },
    judge=judge_nvswitch,
    runs=fixed({"tool": "xid", "phase": "gate", "duration_s": 1}),
    uploads=("sxid",),
)
NVBANDWIDTH = Gate(
    "nvbandwidth",
    "Intra-node bandwidth (nvbandwidth)",
    tools=("nvbandwidth",),
    thresholds={
        "min_fraction_of_spec": Threshold(
            0.85, "measured GPU-to-GPU bandwidth over the SKU's NVLink spec"
        ),
    },
    judge=judging.from_parsed(judging.check_nvbandwidth),
    runs=fixed({"tool": "nvbandwidth", "duration_s": 300}),
    # nvidia-smi / dcgmi NVLink reports: parsers.nvlink fails the GPU and link that is down,
    # trained slower or retrained (its rule lives with the parser, as for every upload).
    uploads=("nvbandwidth", "nvlink"),
)
FABRIC = Gate(
    "fabric",
    "Fabric (NCCL all_reduce)",
    tools=("nccl",),
    thresholds={
        "min_busbw_fraction": Threshold(
            0.92, "plateau all_reduce bus bandwidth over the SKU's line rate"
        ),
        "min_rail_fraction": Threshold(
            0.9, "ib_write_bw average at the largest message over one NIC's rate"
        ),
        "lone_node_skips": Threshold(
            None,
            "a node with no healthy partner in its rack: 1 = skip the gate, "
            "0 = stop the run for a person",
        ),
    },
    judge=judging.fabric,
    runs=fabric_runs,
    agent_tools=("nccl", "perftest"),
    uploads=("nccl", "perftest"),
    multi_node=True,
)
STORAGE = Gate(
    "storage",
    "Storage (fio)",
    tools=("fio",),
    thresholds={
        "min_read_mbps": Threshold(6000, "sequential read throughput SLA, MB/s"),
        "min_write_mbps": Threshold(3000, "sequential write throughput SLA, MB/s"),
        "fio_runtime_s": Threshold(60, "seconds fio reads, then writes, each drive"),
        "fio_iodepth": Threshold(32, "I/Os fio keeps in flight per job"),
    },
    judge=judging.from_parsed(judging.check_storage),
    runs=storage_runs,
    uploads=("fio",),
)
REFERENCE_JOB = Gate(
    "reference_job",
    "End-to-end reference job",
    tools=("reference-job",),
    thresholds={
        "min_mfu": Threshold(0.3, "lowest model FLOPs utilisation allowed on any GPU (0-1)"),
        # H100 SXM: 989 TFLOP/s dense bf16; the "standard" model reaches well above 30% on a
        # healthy one.
        "peak_tflops": Threshold(
            989, "the SKU's dense bf16 peak per GPU, TFLOP/s (the MFU's denominator)"
        ),
        "steps": Threshold(20, "training steps the reference job times on each GPU"),
    },
    judge=judging.from_parsed(judging.check_reference_job),
    runs=reference_job_runs,
    agent_tools=("reference-job", "xid"),
    uploads=("reference-job", "gpu-burn"),
)
BURN_IN = Gate(
    "burn_in",
    "Burn-in soak",
    tools=("gpu-burn", "nvidia-smi", "xid"),
    thresholds={
        "soak_hours": Threshold(72, "length of the soak, hours"),
        "max_gpu_temp_c": Threshold(87, "highest GPU temperature allowed, Celsius"),
        "sample_interval_s": Threshold(600, "telemetry sampling interval, seconds"),
    },
    judge=judging.from_parsed(judging.check_burn_in),
    runs=None,
    agent_tools=("soak", "xid", "gpu-burn", "nvidia-smi"),
    soak=True,
)

GATES: tuple[Gate, ...] = (
    ATTESTATION,
    GPU_HEALTH,
    NVSWITCH,
    NVBANDWIDTH,
    FABRIC,
    STORAGE,
    REFERENCE_JOB,
    BURN_IN,
)

GATES_BY_NAME: dict[str, Gate] = {g.name: g for g in GATES}

# The gates as choices (GateName.FABRIC == "fabric", with its label), derived from the rows.
GateName = models.TextChoices(  # type: ignore[misc, call-overload]
    "GateName", [(g.name.upper(), (g.name, g.label)) for g in GATES]
)

# The gate a manual upload of a tool's output is filed under.
GATE_OF_TOOL: dict[str, str] = {tool: g.name for g in GATES for tool in g.uploads}


def gate_choices() -> list[tuple[str, str]]:
    """The choices of a gate field; a callable, so a new gate needs no migration."""
    return [(g.name, g.label) for g in GATES]


def thresholds_for(gate_name: str, thresholds: dict[str, float] | None) -> dict[str, float]:
    """The defaults of the gate overlaid with the profile's thresholds."""
    gate = GATES_BY_NAME.get(str(gate_name))
    return gate.thresholds_with(thresholds) if gate else dict(thresholds or {})


def judge_gate(
    gate_name: str,
    outputs: dict[str, str],
    thresholds: dict[str, float] | None,
    sku: SkuFacts,
    inventory: dict[str, str] | None = None,
    **facts: Any,
) -> GateVerdict:
    """Judge one gate on one node.

    outputs maps a tool command name (as in the gate's row) to its raw output; inventory maps
    part names ("GPU 3", "nvme3n1") to serials so findings carry them.
    """
    gate = GATES_BY_NAME.get(str(gate_name))
    if gate is None:
        verdict = GateVerdict(Verdict.ERROR, thresholds_used=dict(thresholds or {}))
        verdict.error = f"unknown gate {gate_name!r}"
        return verdict
    return gate.judge_outputs(outputs, thresholds, sku, inventory=inventory or {}, **facts)
