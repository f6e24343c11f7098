"""Measured boot for real: VMs with and without a TPM 2.0 (swtpm, run by libvirt) through the
real pipeline to the attestation gate, under a profile that requires a TPM.

OVMF measures the boot into the VM's TPM; the installed OS's GRUB measures what it loads
(`insmod tpm`); the agent proves its AK is bound to the TPM's EK (credential activation) and
quotes the PCRs over Greenlight's nonce; Greenlight verifies the quote with tpm2-tools.

- glvm-01 (TPM): its quote verifies; with no golden values pinned yet the gate cannot judge and
  says to record them from a reference node.
- glvm-02 (no TPM): the gate fails it, saying the profile requires a TPM.

Not yet here (issue 23): the golden values recorded from glvm-01 (its UEFI event log must replay
to the quoted PCRs first), a changed initramfs failing on PCR 9, a replayed quote.
"""

from __future__ import annotations

import pytest

from acceptance.gates import GateName
from acceptance.models import GateResult
from fleet.choices import NodeState
from fleet.models import Node
from lab.vm.run import VmLabConfig, VmLabRun
from tests.vm.test_vm_tier import IMAGE_DIR, _report, _require_tier, _why

GATE = GateName.ATTESTATION


def _result(node: Node) -> GateResult:
    return GateResult.objects.filter(node=node, gate=GATE).latest("pk")


@pytest.mark.vm
@pytest.mark.timeout(1800)
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_vm_with_a_tpm_is_quoted_and_one_without_fails_where_a_tpm_is_required(tmp_path):
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

        # A TPM in the VM: the AK bound to its EK, the quote over this run's nonce verified.
        reference = _result(with_tpm)
        tpm = reference.metrics.get("tpm") or {}
        print("glvm-01 attestation:", reference.verdict, reference.metrics, reference.findings)
        assert tpm.get("quote_verified"), (reference.metrics, reference.findings)
        assert reference.verdict == "error", _why(summary["glvm-01"])
        assert "pins no measured-boot golden values" in reference.metrics["error"]

        # No TPM, and the profile requires one: the gate fails, saying so.
        without_tpm.refresh_from_db()
        assert without_tpm.state == NodeState.QUARANTINED, _why(summary["glvm-02"])
        refused = _result(without_tpm)
        assert refused.verdict == "fail", refused.findings
        assert [f["code"] for f in refused.findings] == ["not_attested"], refused.findings
        assert "the profile requires a TPM" in refused.findings[0]["message"]

    assert not lab.tier.nodes and not lab.children  # torn down
