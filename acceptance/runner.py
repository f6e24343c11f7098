"""Gates as phases of a run: send the gate's tools to the agent, judge, keep the result.

The gate list and its order live in acceptance.gates and the node's profile; this module only
turns one gate into agent commands and a GateResult. A failed gate names the part and fails the
run, which quarantines the node.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from django.utils import timezone

from agent import protocol
from fleet.choices import EventKind, NodeState
from fleet.events import record as record_event
from fleet.models import Component, Node
from provisioning.choices import CommandStatus
from provisioning.models import AgentCommand
from provisioning.outcomes import Done, Failure, Outcome, Skipped, Wait
from provisioning.phases.base import Phase, PhaseContext
from provisioning.phases.inband import command_outcome, send_command

from .attestation import judge_attestation
from .choices import GateName, Verdict
from .fabric import FabricPartners, PairResult, choose_partners, judge_fabric
from .judging import judge_gate, thresholds_for
from .models import AcceptanceProfile, GateResult
from .soak_runner import SoakGate
from .verdicts import GateVerdict, SkuFacts


def profile_thresholds(ctx: PhaseContext, gate: str) -> dict[str, float]:
    """The thresholds the node's profile sets for a gate."""
    if "profile_gates" not in ctx.memo:
        version = ctx.manifest.get("acceptance_profile")
        profiles = AcceptanceProfile.objects.filter(sku_id=ctx.node.sku_id)
        profile = (profiles.filter(version=version).first() if version else None) or (
            AcceptanceProfile.current_for(ctx.node.sku)
        )
        ctx.memo["profile_gates"] = profile.spec.get("gates", []) if profile else []
    for entry in ctx.memo["profile_gates"]:
        if entry["gate"] == gate:
            return dict(entry.get("thresholds") or {})
    return {}


def part_serials(node: Node) -> dict[str, str]:
    """Part names as findings write them ("GPU 3", "nvme3n1", "NIC 0") -> serials."""
    out: dict[str, str] = {}
    for slot, serial in Component.objects.filter(node=node).values_list("slot", "serial"):
        out[slot] = serial
        if slot.startswith("NVMe "):
            out[f"nvme{slot.removeprefix('NVMe ')}n1"] = serial
    return out


# States of a healthy node going through the pipeline beside this one: it runs NCCL with them.
# A failed, quarantined or broken node is no partner: a slow pair would blame a good node.
PIPELINE_STATES = (NodeState.PROVISIONING, NodeState.VALIDATING, NodeState.AWAITING_APPROVAL)


def partner_choice(node: Node) -> FabricPartners:
    """Whom this node runs NCCL with, from healthy nodes of its rack and SKU.

    Nodes in the pipeline pair by the rack's plan; when they give fewer than two partners (a
    lone node re-validated after a tenant release), in-service nodes no tenant holds are
    borrowed. A tenant's node is never borrowed: its jobs and data are the tenant's.
    """
    if node.rack_id is None:
        return FabricPartners((), ())
    rack = Node.objects.filter(rack_id=node.rack_id, sku_id=node.sku_id).exclude(pk=node.pk)
    peers = rack.filter(state__in=PIPELINE_STATES).values_list("serial", flat=True)
    spare = rack.filter(state=NodeState.IN_SERVICE, tenant="").values_list("serial", flat=True)
    return choose_partners(node.serial, list(peers), list(spare))


def fabric_partners(node: Node) -> list[str]:
    """The serials this node runs NCCL with (see partner_choice)."""
    return partner_choice(node).all


def lend(ctx: PhaseContext, partners: FabricPartners) -> None:
    """Say on each borrowed in-service node that it is lent to this node's fabric gate."""
    gate_s = 60 * ctx.node.sku.nic_count
    for borrowed in Node.objects.filter(serial__in=partners.borrowed):
        record_event(
            borrowed,
            EventKind.FABRIC_PARTNER,
            actor_label="engine",
            message=f"lent to {ctx.node.serial} as NCCL partner for its fabric gate "
            f"(about {gate_s} s, one run per rail)",
            data={"run": ctx.run.pk, "node": ctx.node.serial},
        )


def alone(ctx: PhaseContext, thresholds: dict[str, float]) -> Outcome:
    """A node with no healthy partner in its rack: the profile's rule decides."""
    rack = ctx.node.rack.name if ctx.node.rack_id else "no rack"
    why = (
        f"no healthy partner node in {rack}: no other {ctx.node.sku.name} node there is being "
        "brought up, or in service and held by no tenant"
    )
    if thresholds.get("lone_node_skips"):
        return Skipped({"reason": f"{why}; the profile lets a lone node skip the fabric gate"})
    verdict = GateVerdict(Verdict.ERROR, error=why)
    store(ctx, GateName.FABRIC, {}, verdict)
    return outcome_of(GateName.FABRIC, verdict)


def tools_for(gate: str, ctx: PhaseContext, thresholds: dict[str, float]) -> list[dict[str, Any]]:
    """The tool invocations a gate needs on this node."""
    if gate == GateName.ATTESTATION:
        return [{"tool": "attestation", "duration_s": 5}]
    if gate == GateName.GPU_HEALTH:
        level = int(thresholds.get("dcgm_level", 3))
        return [
            {
                "tool": "dcgm",
                "level": level,
                "duration_s": {1: 60, 2: 180, 3: 1800}.get(level, 3600),
            },
            {"tool": "nvidia-smi", "duration_s": 5},
            {"tool": "xid", "phase": "gate", "duration_s": 1},
        ]
    if gate == GateName.NVBANDWIDTH:
        return [{"tool": "nvbandwidth", "duration_s": 300}]
    if gate == GateName.FABRIC:
        # One run per rail (NCCL_IB_HCA=mlx5_k, the GPU on that rail) with each partner: a slow
        # NIC is then named, not just "the fabric". A partner's rails run together (each has
        # its own GPU and NIC); partners follow one another, so no two runs share a NIC.
        # mpirun reaches both nodes by host name (the serial where none is recorded). A node
        # without GPUs has no NCCL to run: its rails are measured by perftest's ib_write_bw.
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
    if gate == GateName.STORAGE:
        runtime_s = int(thresholds_for(gate, thresholds)["fio_runtime_s"])
        return [{"tool": "fio", "runtime_s": runtime_s, "duration_s": 2 * runtime_s}]
    if gate == GateName.REFERENCE_JOB:
        used = thresholds_for(gate, thresholds)
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
    raise ValueError(f"gate {gate} has no tools")


def judge(gate: str, ctx: PhaseContext, outputs: dict[str, str], thresholds: dict) -> GateVerdict:
    """Judge a gate's raw outputs for this node."""
    sku = SkuFacts.of(ctx.node.sku)
    if gate == GateName.ATTESTATION:
        return judge_attestation(outputs.get("attestation", ""), ctx.manifest, thresholds)
    if gate == GateName.FABRIC:
        pairs = []
        for key, text in outputs.items():
            tool, peer, rail = key.split(":")
            pairs.append(PairResult(ctx.node.serial, peer, text, rail=f"NIC {rail}", tool=tool))
        # Only this node's verdict: it is in every pair here, so it is blamed only if all of
        # them were slow; each partner is judged by its own gate, with its own partners.
        mine = judge_fabric(pairs, sku, thresholds).get(ctx.node.serial)
        return mine or GateVerdict(Verdict.ERROR, error="no fabric result for this node")
    return judge_gate(gate, outputs, thresholds, sku, inventory=part_serials(ctx.node))


def store(ctx: PhaseContext, gate: str, outputs: dict, verdict: GateVerdict) -> GateResult:
    """Keep the gate's result: raw output, metrics, thresholds, verdict, findings."""
    result, _ = GateResult.objects.update_or_create(
        run=ctx.run,
        gate=gate,
        defaults={
            "node": ctx.node,
            "verdict": verdict.verdict,
            "raw_output": outputs,
            "metrics": {**verdict.metrics, **({"error": verdict.error} if verdict.error else {})},
            "thresholds": verdict.thresholds_used,
            "findings": [f.to_dict() for f in verdict.findings],
            "tool_versions": verdict.tool_versions,
            "started_at": ctx.record.started_at or timezone.now(),
            "finished_at": timezone.now(),
        },
    )
    return result


def outcome_of(gate: str, verdict: GateVerdict) -> Outcome:
    """A passed gate is done; a failed one fails the run naming the part; an error too."""
    summary = {"verdict": str(verdict.verdict), "findings": len(verdict.findings)}
    if verdict.verdict == Verdict.PASS:
        return Done(compared=summary)
    if verdict.verdict == Verdict.FAIL:
        parts = ", ".join(dict.fromkeys(f.part for f in verdict.findings)) or "node"
        first = verdict.findings[0].message if verdict.findings else "failed"
        return Failure(f"{gate}: {first}", component=parts, permanent=True, quarantine=True)
    return Failure(f"{gate}: cannot judge: {verdict.error}", component="node")


class GatePhase(Phase):
    """One acceptance gate run in-band on the node."""

    def __init__(self, gate: str):
        self.gate = gate
        self.name = f"gate:{gate}"

    def execute(self, ctx: PhaseContext) -> Outcome:
        if ctx.record.stage == "":
            return self.send_tools(ctx, profile_thresholds(ctx, self.gate))
        # Most looks find the tools still running: the profile is read only once they are done.
        command = command_outcome(ctx)
        if not isinstance(command, AgentCommand):
            return command
        thresholds = profile_thresholds(ctx, self.gate)
        if ctx.record.stage == "resetting":
            if command.status == CommandStatus.FAILED:
                parts = ", ".join(ctx.record.compared.get("gpus_reset") or []) or "GPU"
                return Failure(
                    f"{self.gate}: the GPU reset failed: {command.output[-300:]}",
                    component=parts,
                    permanent=True,
                    quarantine=True,
                )
            return self.send_tools(ctx, thresholds)
        outputs = (command.result or {}).get("outputs") or {}
        verdict = judge(self.gate, ctx, outputs, thresholds)
        already = list(ctx.record.compared.get("gpus_reset") or [])
        if verdict.verdict == Verdict.PASS:
            to_reset = [p for p in verdict.reset_required if p not in already and gpu_index(p) >= 0]
            if to_reset:
                return self.reset_gpus(ctx, already + to_reset, to_reset)
        store(ctx, self.gate, outputs, verdict)
        outcome = outcome_of(self.gate, verdict)
        if already and isinstance(outcome, Done):
            # The XID was seen once, the GPU reset, the gate run again without a recurrence.
            outcome.compared["reset_and_cleared"] = already
        return outcome

    def send_tools(self, ctx: PhaseContext, thresholds: dict[str, float]) -> Outcome:
        partners = partner_choice(ctx.node) if self.gate == GateName.FABRIC else None
        if partners is not None and not partners.all:
            return alone(ctx, thresholds)
        tools = tools_for(self.gate, ctx, thresholds)
        outcome = send_command(ctx, protocol.RUN_TOOLS, {"tools": tools}, "running")
        if partners is not None and isinstance(outcome, Wait):
            lend(ctx, partners)  # said once the runs are on their way, not per retry
        return outcome

    def reset_gpus(self, ctx: PhaseContext, reset: list[str], now: list[str]) -> Outcome:
        """XID 63/94 once: reset those GPUs (applies the row remap) and run the gate again.

        A recurrence after the reset is a fault the XID parser calls critical, so the rerun
        fails the part; the same single XID in the kernel log is then the one already cleared.
        """
        ctx.record.compared = {**ctx.record.compared, "gpus_reset": reset}
        ctx.record.save(update_fields=["compared"])
        return send_command(
            ctx, protocol.RESET_GPUS, {"gpus": [gpu_index(p) for p in now]}, "resetting"
        )


def gpu_index(part: str) -> int:
    """3 for "GPU 3"; -1 for a part that is not a GPU (it cannot be reset this way)."""
    name, _, index = part.partition(" ")
    return int(index) if name == "GPU" and index.isdigit() else -1


@cache
def gate_phase(gate: str) -> Phase:
    """The phase that runs `gate` (the engine looks gates up here by name)."""
    if gate == GateName.BURN_IN:
        return SoakGate()
    return GatePhase(gate)
