"""The burn-in soak as a phase: hours of load in chunks, telemetry kept, stopped early on a fault.

Each chunk is one agent command (load plus sampling); while it runs the worker lets go. The
samples go to SoakSample rows for the chart, and the soak so far is judged after every chunk, so
a hardware XID stops it at the chunk where it appeared rather than hours later.
"""

from __future__ import annotations

import json
import math
from typing import Any

from agent import protocol
from fleet.models import Component
from provisioning.agents.redaction import redactor_for, relayed_by
from provisioning.choices import Stage
from provisioning.core.phase_state import SoakState
from provisioning.core.phases.base import Phase, PhaseContext
from provisioning.core.phases.inband import command_outcome, send_command
from provisioning.models import AgentCommand
from provisioning.outcomes import Done, Failure, Outcome

from .choices import Verdict
from .gates import Gate
from .models import GateResult, SoakSample
from .run_facts import gate_info, profile_thresholds
from .soak import judge_soak

CHUNKS = 6


def bus_ids(node, samples: list[dict[str, Any]]) -> dict[str, dict]:
    """PCI bus id -> {index, serial} of the node's GPUs, as the node itself reported them.

    Each soak sample carries every GPU's bus id (read by nvidia-smi on the node); the serial is
    the inventoried GPU of that index. The XID lines then name "GPU 3" and its serial.
    """
    serials = {
        slot.split()[-1]: serial
        for slot, serial in Component.objects.filter(node=node, kind="gpu").values_list(
            "slot", "serial"
        )
    }
    out: dict[str, dict] = {}
    for sample in samples:
        for gpu in sample.get("gpus", []):
            if gpu.get("bus_id"):
                index = int(gpu["gpu"])
                out[gpu["bus_id"]] = {"index": index, "serial": serials.get(str(index), "")}
    return out


class SoakGate(Phase):
    """A soak gate (the burn-in): load in chunks, telemetry kept, judged after every chunk."""

    def __init__(self, gate: Gate):
        super().__init__(gate_info(gate))
        self.gate = gate

    def thresholds(self, ctx: PhaseContext) -> dict[str, float]:
        return self.gate.thresholds_with(profile_thresholds(ctx, self.gate.name))

    def time_limit(self, ctx: PhaseContext) -> float:
        """The soak's own length, half again for the load to start and samples to land."""
        return self.thresholds(ctx)["soak_hours"] * 3600 * 1.5 + 3600

    def execute(self, ctx: PhaseContext) -> Outcome:
        used = self.thresholds(ctx)
        interval = max(int(used.get("sample_interval_s", 600)), 1)
        # Whole sampling intervals, so the last sample falls at (or past) the soak's end.
        total_s = math.ceil(used["soak_hours"] * 3600 / interval) * interval
        chunk_s = max(interval, total_s // CHUNKS // interval * interval)
        state = SoakState.of(ctx.record.resume)
        done_s = state.soaked_s
        if ctx.record.stage == Stage.NONE:
            self.result(ctx, used)  # the soak shows as running from its first chunk
            return self.next_chunk(ctx, done_s, min(chunk_s, total_s - done_s), interval, total_s)
        command = command_outcome(ctx)
        if not isinstance(command, AgentCommand):
            return command
        result = self.result(ctx, used)
        outputs = (command.result or {}).get("outputs") or {}
        end_s = done_s if state.chunk_end_s is None else state.chunk_end_s
        self.keep_samples(result, outputs.get("soak", "[]"))
        raw = dict(result.raw_output or {})
        raw["xid"] = outputs.get("xid", "")
        samples = [
            {"index": i, "t": s.lab_t_s, "gpus": s.gpus}
            for i, s in enumerate(result.samples.order_by("lab_t_s"))
        ]
        # The kernel log judged redacted: an unreadable line the verdict quotes, and the phase
        # error and events that repeat it, never carry the node's secrets (runner.py, likewise).
        xid = redactor_for(ctx.node, relayed_by(command))(raw["xid"] or "")
        verdict = judge_soak(samples, xid, used, bus_ids=bus_ids(ctx.node, samples))
        finished = verdict.verdict == Verdict.FAIL or end_s >= total_s
        GateResult.objects.filter(pk=result.pk).update(
            verdict=verdict.verdict if finished else Verdict.RUNNING,
            raw_output=raw,
            metrics={
                **verdict.metrics,
                **({"error": verdict.error} if finished and verdict.error else {}),
            },
            findings=[f.to_dict() for f in verdict.findings],
            tool_versions=verdict.tool_versions,
        )
        if verdict.verdict == Verdict.FAIL:
            parts = ", ".join(dict.fromkeys(f.part for f in verdict.findings)) or "node"
            first = verdict.findings[0].message if verdict.findings else "failed"
            return Failure(
                f"{self.gate.name} stopped early: {first}",
                component=parts,
                permanent=True,
                quarantine=True,
            )
        if end_s >= total_s:
            if verdict.verdict == Verdict.PASS:
                soaked = SoakState(soaked_s=end_s, wanted_s=total_s).as_json()
                return Done(compared={"verdict": "pass", **soaked})
            return Failure(f"{self.gate.name}: cannot judge: {verdict.error}", component="node")
        # The next chunk goes in this look: a look of its own cost each chunk one more step,
        # waiting event and queued message.
        return self.next_chunk(ctx, end_s, min(chunk_s, total_s - end_s), interval, total_s)

    def result(self, ctx: PhaseContext, used: dict[str, float]) -> GateResult:
        """The soak's result row of this run (created running by the first chunk)."""
        result, _ = GateResult.objects.get_or_create(
            run=ctx.run,
            gate=self.gate.name,
            defaults={"node": ctx.node, "verdict": Verdict.RUNNING, "thresholds": used},
        )
        return result

    def next_chunk(
        self, ctx: PhaseContext, start_s: int, length_s: int, interval: int, total_s: int
    ) -> Outcome:
        resume = SoakState(start_s, start_s + length_s, total_s).as_json()
        tools = [
            {
                "tool": "soak",
                "start_s": start_s,
                "duration_s": length_s,
                "interval_s": interval,
            },
            {"tool": "xid", "phase": "soak", "soak_s": start_s + length_s, "duration_s": 1},
        ]
        return send_command(ctx, protocol.RUN_TOOLS, {"tools": tools}, Stage.SOAKING, resume)

    @staticmethod
    def keep_samples(result: GateResult, text: str) -> None:
        """Store new samples (a resumed chunk may repeat some; each t is kept once)."""
        try:
            samples: list[dict[str, Any]] = json.loads(text or "[]")
        except json.JSONDecodeError:
            samples = []
        seen = set(result.samples.values_list("lab_t_s", flat=True))
        SoakSample.objects.bulk_create(
            SoakSample(
                gate_result=result,
                lab_t_s=sample["t"],
                gpus=sample.get("gpus", []),
                gpu_temps_c=[g.get("temp_c") for g in sample.get("gpus", [])],
                gpu_power_w=[g.get("power_w") for g in sample.get("gpus", [])],
            )
            for sample in samples
            if sample.get("t") not in seen
        )
