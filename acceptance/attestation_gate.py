"""The attestation gate as a phase: the node's keys, Greenlight's challenge, the quote, the verdict.

Two agent commands. The first (keys) brings the node's EK and a fresh AK: the EK is bound to the
node at its first attestation (TpmBinding, trust on first use) and must match it every time
after; the AK gets a credential sealed to that EK and a fresh nonce. The second (quote) brings
the opened credential, the quote and the event logs, judged by acceptance.attestation. The
challenge is kept on the phase record, on the server side, so a quote answering an older
challenge is a replay.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from agent import protocol
from fleet.choices import EventKind
from fleet.events import record as record_event
from fleet.measured_boot import DEFAULT_PCRS
from provisioning.agents.redaction import output_tail, redactor_for, relayed_by
from provisioning.choices import CommandStatus, Stage
from provisioning.core.phases.base import Phase, PhaseContext
from provisioning.core.phases.inband import command_outcome, send_command
from provisioning.models import AgentCommand
from provisioning.outcomes import Failure, Outcome

from .attestation import judge_attestation
from .choices import Verdict
from .component_integrity import component_evidence
from .gates import ATTESTATION
from .models import TpmBinding
from .parsers.base import Finding
from .run_facts import gate_info, profile_thresholds
from .runner import outcome_of, store
from .tpm_quote import EvidenceRefused, TpmToolsMissing, ek_fingerprint, make_challenge
from .verdicts import GateVerdict

GATE = ATTESTATION.name
TOOL_S = 60


def selection_for(manifest: dict[str, Any]) -> tuple[str, list[int]]:
    """The PCR bank and PCRs to quote: the manifest's, else the boot chain's defaults."""
    golden = manifest.get("attestation") or {}
    return golden.get("bank") or "sha256", list(golden.get("pcrs") or DEFAULT_PCRS)


def bind_ek(ctx: PhaseContext, tpm: dict[str, Any]) -> Finding | None:
    """Bind the node's EK at its first attestation; after that, a different EK is a finding."""
    shown = ek_fingerprint(tpm.get("ek_public") or "")
    binding, created = TpmBinding.objects.get_or_create(
        node=ctx.node,
        defaults={"ek_sha256": shown, "ek_public": tpm.get("ek_public") or "", "run": ctx.run},
    )
    if created:
        record_event(
            ctx.node,
            EventKind.UPDATED,
            actor_label="engine",
            message=f"TPM bound at first attestation: EK {shown[:16]}…",
            data={"ek_sha256": shown, "run": ctx.run.pk},
        )
        return None
    if binding.ek_sha256 == shown:
        return None
    return Finding(
        "TPM",
        "node",
        f"the node shows EK {shown[:12]}…, not the EK {binding.ek_sha256[:12]}… bound at its "
        f"first attestation ({binding.bound_at:%Y-%m-%d}): another TPM, or another node",
        code="ek_mismatch",
    )


class AttestationGate(Phase):
    """The attestation gate: keys, challenge, quote, judged against the manifest."""

    def __init__(self) -> None:
        super().__init__(gate_info(ATTESTATION))

    def execute(self, ctx: PhaseContext) -> Outcome:
        if ctx.record.stage == Stage.NONE:
            return self.send(ctx, {"step": "keys"}, Stage.TPM_KEYS)
        command = command_outcome(ctx)
        if not isinstance(command, AgentCommand):
            return command
        if command.status == CommandStatus.FAILED:
            return Failure(f"{GATE}: the agent's attestation failed: {output_tail(command, 300)}")
        outputs = (command.result or {}).get("outputs") or {}
        thresholds = ATTESTATION.thresholds_with(profile_thresholds(ctx, GATE))
        if ctx.record.stage == Stage.TPM_KEYS:
            return self.challenge(ctx, outputs, thresholds)
        challenge = (ctx.record.resume or {}).get("challenge")
        verdict = judge_attestation(
            outputs.get("attestation", ""), ctx.manifest, thresholds, challenge
        )
        return self.conclude(ctx, outputs, verdict)

    def send(self, ctx: PhaseContext, step: dict[str, Any], stage: Stage) -> Outcome:
        tool = {"tool": "attestation", "duration_s": TOOL_S, **step}
        return send_command(ctx, protocol.RUN_TOOLS, {"tools": [tool]}, stage)

    def challenge(self, ctx: PhaseContext, outputs: dict, thresholds: dict) -> Outcome:
        """Bind or check the EK, then send the quote step its nonce and credential."""
        try:
            tpm = json.loads(outputs.get("attestation") or "{}").get("tpm")
        except (json.JSONDecodeError, AttributeError):
            tpm = None
        if not isinstance(tpm, dict) or not tpm.get("present") or tpm.get("error"):
            # No TPM, or it failed: the judge applies the profile's rule to what was said.
            verdict = judge_attestation(outputs.get("attestation", ""), ctx.manifest, thresholds)
            return self.conclude(ctx, outputs, verdict)
        try:
            mismatch = bind_ek(ctx, tpm)
            if mismatch is not None:
                return self.refuse(ctx, outputs, thresholds, mismatch)
            bank, pcrs = selection_for(ctx.manifest)
            challenge, credential = make_challenge(tpm, bank, pcrs)
        except EvidenceRefused as exc:
            finding = Finding("TPM", "node", str(exc), code="evidence")
            return self.refuse(ctx, outputs, thresholds, finding)
        except TpmToolsMissing as exc:
            verdict = GateVerdict(Verdict.ERROR, error=str(exc))
            return self.conclude(ctx, outputs, verdict)
        ctx.record.resume = {**(ctx.record.resume or {}), "challenge": challenge.to_dict()}
        ctx.save_fields("resume")
        step = {"step": "quote", "nonce": challenge.nonce, "selection": challenge.selection,
                "credential": credential}  # fmt: skip
        return self.send(ctx, step, Stage.TPM_QUOTE)

    def refuse(self, ctx: PhaseContext, outputs: dict, thresholds: dict, why: Finding) -> Outcome:
        verdict = GateVerdict(Verdict.FAIL, findings=[why], thresholds_used=thresholds)
        return self.conclude(ctx, outputs, verdict)

    def conclude(self, ctx: PhaseContext, outputs: dict, verdict: GateVerdict) -> Outcome:
        evidence, findings = component_evidence(ctx.bmc)
        outputs = {**outputs, "component_integrity": evidence}
        if findings and verdict.verdict != Verdict.ERROR:
            verdict = replace(verdict, verdict=Verdict.FAIL, findings=verdict.findings + findings)
        # The evidence is judged as the node sent it (its digests cover the very bytes); what the
        # verdict quotes of it is redacted before it is kept or repeated (see runner.py).
        command = ctx.record.command
        verdict = verdict.redacted(
            redactor_for(ctx.node, relayed_by(command) if command is not None else None)
        )
        store(ctx, GATE, outputs, verdict)
        return outcome_of(GATE, verdict)
