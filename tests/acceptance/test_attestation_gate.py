"""The attestation gate as a phase of a run: the EK bound on first use, a challenge per run.

The node is the real agent hardware layer over a software TPM (swtpm) that measured a recorded
boot; its commands are answered here, in-process, as the agent's poll loop would.
"""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

import pytest

from acceptance.attestation_gate import AttestationGate
from acceptance.gates import GateName
from acceptance.models import GateResult, TpmBinding
from agent.hardware import SystemHardware
from agent.tools import Completed, capture
from agent.tpm import EVENT_LOG
from fleet.models import Event, Node
from provisioning.choices import CommandStatus, PhaseStatus, RunStatus
from provisioning.core.phases.base import PhaseContext
from provisioning.core.runs import start_run
from provisioning.models import AgentCommand, AgentSession, PhaseRecord, Run
from provisioning.outcomes import Done, Failure, Wait
from tests.acceptance.test_tpm_quote import SAMPLES, golden_from, measure_boot
from tests.redfish.servers import mockup_answers, serve
from tests.redfish.static import CAPTURES
from tests.support.swtpm import software_tpm

pytestmark = pytest.mark.django_db
# DMTF's public rack-mount mockup: its BMC reports SPDM and TPM component integrity.
DMTF = CAPTURES / "dmtf-public-rackmount1"


def behind_bmc(node, folder: Path):
    """Point the node at a BMC serving `folder` on loopback (plain HTTP, with the reason)."""
    server = serve(mockup_answers(folder))
    url = server.__enter__()
    Node.objects.filter(pk=node.pk).update(
        bmc_address=url, bmc_plain_http_reason="a capture served on loopback by the test"
    )
    node.refresh_from_db()
    return server


@pytest.fixture
def node(node):
    """The node's BMC is DMTF's mockup, so the gate records its component integrity."""
    server = behind_bmc(node, DMTF)
    yield node
    server.__exit__(None, None, None)


async def node_tools(cmd: list[str], timeout: float = 120.0) -> Completed:
    """The node's tools: tpm2-tools for real; the rest of the machine is not there."""
    if cmd[0].startswith("tpm2_"):
        return await capture(cmd, timeout)
    return Completed(127, "", f"{cmd[0]}: command not found")


def hardware(root: Path, tcti: str | None, log: str | None) -> SystemHardware:
    sys_root = root / "sys"
    (sys_root / "class/net").mkdir(parents=True)
    (sys_root / "class/dmi/id").mkdir(parents=True)
    (sys_root / "class/dmi/id/product_serial").write_text("N-TPM\n")
    if log is not None:
        (sys_root / EVENT_LOG).parent.mkdir(parents=True)
        (sys_root / EVENT_LOG).write_bytes((SAMPLES / f"{log}.bin").read_bytes())
    (root / "dev").mkdir()
    return SystemHardware(
        capture=node_tools, sys_root=sys_root, dev_root=root / "dev", tpm_tcti=tcti
    )


def answer(ctx: PhaseContext, hw: SystemHardware, manifest: dict) -> dict:
    """Run the command the phase sent, as the agent would, and hand its result back."""
    command = ctx.record.command
    outputs = {}
    for spec in command.params["tools"]:
        _, out = asyncio.run(hw.run_tool(spec["tool"], spec, lambda line: None))
        report = json.loads(out)
        # What os_install's record would say on an installed node; not this test's concern.
        report.update(image_sha256=manifest["os_image"]["sha256"], signature_verified=True)
        outputs[spec["tool"]] = json.dumps(report)
    AgentCommand.objects.filter(pk=command.pk).update(
        status=CommandStatus.DONE, result={"outputs": outputs}
    )
    return command.params["tools"][0]


def gate_ctx(node, manifest: dict, boot: str = "b1", again: bool = False) -> PhaseContext:
    AgentSession.objects.create(node=node, boot_id=boot, environment="ephemeral", token_hash=boot)
    run = start_run(node, move_node=not again)
    record = run.phases.get(phase=f"gate:{GateName.ATTESTATION}")
    PhaseRecord.objects.filter(pk=record.pk).update(status=PhaseStatus.RUNNING)
    record.refresh_from_db()
    return PhaseContext(run=run, node=node, record=record, manifest=manifest)


def attest(ctx: PhaseContext, hw: SystemHardware, manifest: dict):
    gate = AttestationGate()
    assert isinstance(gate.execute(ctx), Wait) and ctx.record.stage == "keys"
    keys = answer(ctx, hw, manifest)
    assert keys["step"] == "keys"
    outcome = gate.execute(ctx)
    if ctx.record.stage != "quote":
        return outcome, None
    quote = answer(ctx, hw, manifest)
    return gate.execute(ctx), quote


@pytest.fixture
def golden_manifest(manifest):
    return {**manifest.spec, "attestation": golden_from("event-bootorder")}


def test_a_node_attests_and_its_ek_is_bound_on_first_use(node, profile, golden_manifest, tmp_path):
    with software_tpm(tmp_path) as tpm:
        measure_boot(tpm, "event-bootorder")
        hw = hardware(tmp_path / "node", tpm.tcti, "event-bootorder")
        ctx = gate_ctx(node, golden_manifest)
        outcome, quote = attest(ctx, hw, golden_manifest)
    assert isinstance(outcome, Done), outcome
    challenge = ctx.record.resume["challenge"]
    assert quote["nonce"] == challenge["nonce"] and quote["selection"].startswith("sha256:0,")
    binding = TpmBinding.objects.get(node=node)
    assert binding.ek_sha256 == challenge["ek_sha256"]
    assert Event.objects.filter(node=node, message__startswith="TPM bound at first").exists()
    result = GateResult.objects.get(node=node, gate=GateName.ATTESTATION)
    assert result.verdict == "pass" and result.metrics["tpm"]["quote_verified"]
    # Beside the quote: what the BMC measured of the parts over SPDM, and its view of the TPM.
    reports = {r["id"]: r for r in result.raw_output["component_integrity"]["reports"]}
    assert sorted(reports) == ["SS-SPDM-0", "SS-SPDM-1", "TPM-0", "USB-Integrity"]
    spdm = reports["SS-SPDM-0"]
    assert spdm["protocol"] == "SPDM" and spdm["target"].endswith("/AC-RoT0")
    assert [(m["index"], m["kind"]) for m in spdm["measurements"]][:2] == [
        (1, ""),
        (3, "ImmutableROM"),
    ]
    assert reports["TPM-0"]["verification"] == "Success"
    assert {m["index"] for m in reports["TPM-0"]["measurements"]} == {1, 3}


def test_another_tpm_in_a_bound_node_fails(node, profile, golden_manifest, tmp_path):
    TpmBinding.objects.create(node=node, ek_sha256="ab" * 32, ek_public="")
    with software_tpm(tmp_path) as tpm:
        measure_boot(tpm, "event-bootorder")
        hw = hardware(tmp_path / "node", tpm.tcti, "event-bootorder")
        ctx = gate_ctx(node, golden_manifest)
        outcome, quote = attest(ctx, hw, golden_manifest)
    assert quote is None  # no challenge is sent to a TPM that is not the node's
    assert isinstance(outcome, Failure) and outcome.quarantine
    assert "not the EK abababababab… bound at its first attestation" in outcome.reason


def test_a_node_without_a_tpm_fails_where_the_manifest_pins_golden_values(
    node, profile, golden_manifest, tmp_path
):
    hw = hardware(tmp_path / "node", None, "event-bootorder")
    ctx = gate_ctx(node, golden_manifest)
    outcome, quote = attest(ctx, hw, golden_manifest)
    assert quote is None
    assert isinstance(outcome, Failure) and outcome.quarantine
    assert "not attested: no TPM" in outcome.reason
    assert not TpmBinding.objects.exists()


def test_an_answer_to_an_earlier_challenge_is_a_replay(node, profile, golden_manifest, tmp_path):
    with software_tpm(tmp_path) as tpm:
        measure_boot(tpm, "event-bootorder")
        hw = hardware(tmp_path / "node", tpm.tcti, "event-bootorder")
        first = gate_ctx(node, golden_manifest)
        assert isinstance(attest(first, hw, golden_manifest)[0], Done)
        old = AgentCommand.objects.get(pk=first.record.command.pk).result
        # Set-up only: end the first run so the node may start another (one active run each).
        Run.objects.filter(pk=first.run.pk).update(status=RunStatus.SUCCEEDED)
        # The next run challenges again; the node hands back the first run's answer.
        second = gate_ctx(node, golden_manifest, boot="b2", again=True)
        gate = AttestationGate()
        gate.execute(second)
        answer(second, hw, golden_manifest)
        gate.execute(second)
        assert second.record.stage == "quote"
        AgentCommand.objects.filter(pk=second.record.command.pk).update(
            status=CommandStatus.DONE, result=old
        )
        outcome = gate.execute(second)
    assert isinstance(outcome, Failure)
    assert "attestation:" in outcome.reason
    result = GateResult.objects.get(run=second.run, gate=GateName.ATTESTATION)
    assert result.verdict == "fail"
    assert result.findings[0]["code"] in {"ak_changed", "ak_not_bound", "nonce"}


def test_a_part_whose_identity_the_bmc_could_not_verify_fails_the_gate_by_name(
    node, profile, golden_manifest, tmp_path
):
    # A BMC's failed SPDM/TPM identity check cannot be caused here: DMTF's mockup, that one
    # field changed, stands for it.
    folder = tmp_path / "bmc"
    shutil.copytree(DMTF, folder)
    tpm_report = folder / "ComponentIntegrity" / "TPM-0" / "index.json"
    body = json.loads(tpm_report.read_text())
    body["TPM"]["IdentityAuthentication"]["VerificationStatus"] = "Failed"
    tpm_report.write_text(json.dumps(body))
    server = behind_bmc(node, folder)
    try:
        with software_tpm(tmp_path) as tpm:
            measure_boot(tpm, "event-bootorder")
            hw = hardware(tmp_path / "node", tpm.tcti, "event-bootorder")
            ctx = gate_ctx(node, golden_manifest)
            outcome, _ = attest(ctx, hw, golden_manifest)
    finally:
        server.__exit__(None, None, None)
    assert isinstance(outcome, Failure)
    assert "TPM: the BMC could not verify its TPM identity (ComponentIntegrity TPM-0" in (
        outcome.reason
    )
    assert outcome.component == "TPM"
    result = GateResult.objects.get(node=node, gate=GateName.ATTESTATION)
    assert result.verdict == "fail"
    assert [f["code"] for f in result.findings] == ["component_identity"]
