"""Measured boot for real: VMs with and without a TPM 2.0 (swtpm, run by libvirt) through the
real pipeline to the attestation gate, under a profile that requires a TPM.

OVMF measures the boot into the VM's TPM; the installed OS's GRUB measures what it loads
(`insmod tpm`) and enters the kernel by its EFI stub, which hands the kernel the firmware's event
log; the agent proves its AK is bound to the TPM's EK (credential activation) and quotes the
PCRs over Greenlight's nonce; Greenlight verifies the quote with tpm2-tools, replays the log to
the quoted PCRs and compares what matters with the manifest's golden values.

- Pass 1: glvm-01 (TPM) is quoted and its log replays; with no golden values pinned yet the gate
  cannot judge and says to record them. glvm-02 (no TPM) fails: the profile requires a TPM.
- The golden values are recorded from glvm-01's result and published with the manifest.
- Pass 2: glvm-01, booting the published image, attests and passes.
- Pass 3: glvm-01 installs an image whose initramfs differs by one byte (one letter of the
  agent's source): the gate fails naming PCR 9's initramfs measurement.
- Pass 2's good quote sent again to answer pass 3's challenge fails: a replayed quote.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from acceptance.attestation import judge_attestation
from acceptance.choices import Verdict
from acceptance.gates import GateName
from acceptance.golden import pin_golden, plan_golden
from acceptance.models import GateResult
from bootimage.build import AGENT
from fleet.choices import NodeState
from fleet.models import Node
from lab.vm.run import VmLabConfig, VmLabRun
from provisioning.core.gates import step_name
from provisioning.models import PhaseRecord
from tests.vm.test_vm_tier import IMAGE_DIR, _report, _require_tier, _why

GATE = GateName.ATTESTATION


def _result(node: Node) -> GateResult:
    return GateResult.objects.filter(node=node, gate=GATE).latest("pk")


def tampered_agent(tmp_path: Path) -> Path:
    """The agent's tree with one letter of its package docstring in the other case."""
    copy = tmp_path / "agent-tampered"
    shutil.copytree(AGENT, copy, ignore=shutil.ignore_patterns("__pycache__"))
    source = copy / "__init__.py"
    text = source.read_bytes()
    at = text.index(b"Greenlight agent")
    source.write_bytes(text[:at] + text[at : at + 1].lower() + text[at + 1 :])
    return copy


@pytest.mark.vm
@pytest.mark.timeout(3000)
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_tpm_vm_attests_against_golden_values_and_a_changed_initramfs_or_replay_fails(
    tmp_path,
):
    _require_tier()
    config = VmLabConfig(
        nodes=2,
        workdir=tmp_path,
        image_dir=IMAGE_DIR,
        timeout_s=900,
        tpm=(True, False),
        profile="attestation",
    )
    with VmLabRun(config) as lab:
        first = lab.run_pass()
        _report("pass 1", first)
        assert first["finished"], [_why(n) for n in first["nodes"]]
        summary = {n["vm"]: n for n in first["nodes"]}
        with_tpm, without_tpm = lab.nodes

        # A TPM in the VM: the AK bound to its EK, the quote over this run's nonce verified,
        # the UEFI event log replayed to every quoted PCR.
        reference = _result(with_tpm)
        tpm = reference.metrics.get("tpm") or {}
        print("pass 1 glvm-01:", reference.verdict, reference.metrics, reference.findings)
        assert tpm.get("quote_verified"), (reference.metrics, reference.findings)
        assert tpm.get("log_replays"), reference.findings
        assert reference.verdict == Verdict.ERROR, _why(summary["glvm-01"])
        assert "pins no measured-boot golden values" in reference.metrics["error"]

        # No TPM, and the profile requires one: the gate fails, saying so.
        without_tpm.refresh_from_db()
        assert without_tpm.state == NodeState.QUARANTINED, _why(summary["glvm-02"])
        refused = _result(without_tpm)
        assert refused.verdict == Verdict.FAIL, refused.findings
        assert [f["code"] for f in refused.findings] == ["not_attested"], refused.findings
        assert "the profile requires a TPM" in refused.findings[0]["message"]

        # A fleet admin records the golden values from glvm-01 and publishes them.
        plan = plan_golden(reference)
        print("golden:", plan.section_yaml)
        assert {"kernel", "initramfs"} <= set(plan.section["measurements"]), plan.section
        pin_golden(plan, actor=None).publish()

        # Pass 2: the published image, judged against them (glvm-02 stays quarantined).
        second = lab.run_pass()
        _report("pass 2", second)
        assert second["finished"], [_why(n) for n in second["nodes"]]
        passed = _result(with_tpm)
        print("pass 2 glvm-01:", passed.verdict, passed.metrics, passed.findings)
        assert passed.verdict == Verdict.PASS, passed.findings
        with_tpm.refresh_from_db()
        assert with_tpm.state == NodeState.AWAITING_APPROVAL

        # Pass 3: an image one byte of initramfs apart, signed and published as a new version.
        variant = lab.build_variant("tampered", tampered_agent(tmp_path))
        lab.publish_os_image("os-tampered.img", variant.path("os.img"))
        third = lab.run_pass()
        _report("pass 3", third)
        assert third["finished"], [_why(n) for n in third["nodes"]]
        failed = _result(with_tpm)
        messages = [f["message"] for f in failed.findings]
        print("pass 3 glvm-01:", failed.verdict, failed.metrics, messages)
        assert failed.verdict == Verdict.FAIL, messages
        assert any(m.startswith("PCR 9: initramfs measurement ") for m in messages), messages
        assert not any(m.startswith("PCR 9: kernel measurement") for m in messages), messages
        with_tpm.refresh_from_db()
        assert with_tpm.state == NodeState.QUARANTINED

        # Pass 2's good quote, replayed to answer pass 3's challenge, is refused.
        gate = PhaseRecord.objects.get(run=failed.run, phase=step_name(GATE))
        replayed = judge_attestation(
            passed.raw_output["attestation"],
            failed.run.manifest.spec,
            passed.thresholds,
            gate.resume["challenge"],
        )
        codes = {f.code for f in replayed.findings}
        assert replayed.verdict == Verdict.FAIL and codes & {"nonce", "ak_changed"}, codes

    assert not lab.tier.nodes and not lab.children  # torn down
