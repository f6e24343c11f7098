"""Gates as phases of a run: send the gate's tools to the agent, judge, keep the result.

The gates live in acceptance.gates and their order in the node's profile; this module only
turns one gate's row into an agent command and a GateResult. A failed gate names the part and fails the
run, which quarantines the node.
"""

from __future__ import annotations

from functools import cache

from django.utils import timezone

from agent import protocol
from provisioning.agents.redaction import output_tail, redactor_for, relayed_by
from provisioning.choices import CommandStatus, Stage
from provisioning.core.phase_state import GpuResets
from provisioning.core.phases.base import Phase, PhaseContext
from provisioning.core.phases.inband import command_outcome, send_command
from provisioning.models import AgentCommand
from provisioning.outcomes import Done, Failure, Outcome, Skipped, Wait

from .choices import Verdict
from .gates import GATES_BY_NAME, Gate
from .models import GateResult
from .partners import lend, partner_choice
from .run_facts import gate_info, part_serials, profile_thresholds
from .soak_runner import SoakGate
from .verdicts import GateVerdict, SkuFacts


def alone(ctx: PhaseContext, gate: Gate, used: dict[str, float]) -> Outcome:
    """A node with no healthy partner in its rack: the profile's rule decides."""
    rack = ctx.node.rack.name if ctx.node.rack_id else "no rack"
    why = (
        f"no healthy partner node in {rack}: no other {ctx.node.sku.name} node there is being "
        "brought up, or in service and held by no tenant"
    )
    if used.get("lone_node_skips"):
        return Skipped({"reason": f"{why}; the profile lets a lone node skip the {gate.name} gate"})
    verdict = GateVerdict(Verdict.ERROR, error=why)
    store(ctx, gate.name, {}, verdict)
    return outcome_of(gate.name, verdict)


def judge(gate: Gate, ctx: PhaseContext, outputs: dict[str, str], thresholds: dict) -> GateVerdict:
    """Judge a gate's raw outputs for this node."""
    return gate.judge_outputs(
        outputs,
        thresholds,
        SkuFacts.of(ctx.node.sku),
        inventory=part_serials(ctx.node),
        manifest=ctx.manifest,
        serial=ctx.node.serial,
    )


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
    """One acceptance gate run in-band on the node: its tools in one agent command, judged."""

    def __init__(self, gate: Gate):
        super().__init__(gate_info(gate))
        self.gate = gate

    def execute(self, ctx: PhaseContext) -> Outcome:
        gate = self.gate
        if ctx.record.stage == Stage.NONE:
            return self.send_tools(ctx, profile_thresholds(ctx, gate.name))
        # Most looks find the tools still running: the profile is read only once they are done.
        command = command_outcome(ctx)
        if not isinstance(command, AgentCommand):
            return command
        thresholds = profile_thresholds(ctx, gate.name)
        if ctx.record.stage == Stage.RESETTING:
            if command.status == CommandStatus.FAILED:
                parts = ", ".join(GpuResets.of(ctx.record.resume).parts) or "GPU"
                return Failure(
                    f"{gate.name}: the GPU reset failed: {output_tail(command, 300)}",
                    component=parts,
                    permanent=True,
                    quarantine=True,
                )
            return self.send_tools(ctx, thresholds)
        outputs = (command.result or {}).get("outputs") or {}
        # Judged on the output redacted, so whatever the verdict quotes of it (a parser's error,
        # a finding's line, cut or whole) carries none of the node's secrets into the result's
        # metrics, the phase error, the run's last error or the events and webhooks that repeat
        # them. The output itself is kept as sent, and redacted where it is read.
        redact = redactor_for(ctx.node, relayed_by(command))
        verdict = judge(gate, ctx, redact.tree(outputs), thresholds)
        already = list(GpuResets.of(ctx.record.resume).parts)
        if verdict.verdict == Verdict.PASS:
            to_reset = [p for p in verdict.reset_required if p not in already and gpu_index(p) >= 0]
            if to_reset:
                return self.reset_gpus(ctx, already + to_reset, to_reset)
        store(ctx, gate.name, outputs, verdict)
        outcome = outcome_of(gate.name, verdict)
        if already and isinstance(outcome, Done):
            # The XID was seen once, the GPU reset, the gate run again without a recurrence.
            outcome.compared["reset_and_cleared"] = already
        return outcome

    def send_tools(self, ctx: PhaseContext, thresholds: dict[str, float]) -> Outcome:
        """Send the gate's tool runs; a multi-node gate first needs partners in its rack."""
        used = self.gate.thresholds_with(thresholds)
        partners = partner_choice(ctx.node) if self.gate.multi_node else None
        if partners is not None and not partners.all:
            return alone(ctx, self.gate, used)
        assert self.gate.runs is not None, "a gate without runs is a soak (SoakGate)"
        tools = self.gate.runs(ctx, used)
        outcome = send_command(ctx, protocol.RUN_TOOLS, {"tools": tools}, Stage.RUNNING)
        if partners is not None and isinstance(outcome, Wait):
            lend(ctx, partners)  # said once the runs are on their way, not per retry
        return outcome

    def reset_gpus(self, ctx: PhaseContext, reset: list[str], now: list[str]) -> Outcome:
        """XID 63/94 once: reset those GPUs (applies the row remap) and run the gate again.

        A recurrence after the reset is a fault the XID parser calls critical, so the rerun
        fails the part; the same single XID in the kernel log is then the one already cleared.
        """
        ctx.record.resume = GpuResets(tuple(reset)).into(ctx.record.resume)
        ctx.save_fields("resume")
        return send_command(
            ctx, protocol.RESET_GPUS, {"gpus": [gpu_index(p) for p in now]}, Stage.RESETTING
        )


def gpu_index(part: str) -> int:
    """3 for "GPU 3"; -1 for a part that is not a GPU (it cannot be reset this way)."""
    name, _, index = part.partition(" ")
    return int(index) if name == "GPU" and index.isdigit() else -1


@cache
def gate_phase(name: str) -> Phase:
    """The phase that runs gate `name` (provisioning looks gates up here, through its registry)."""
    gate = GATES_BY_NAME[name]
    return SoakGate(gate) if gate.soak else GatePhase(gate)
