"""The attestation gate against a real software TPM: quote, nonce, PCR values, key binding, logs.

swtpm measures a "boot" by extending its PCRs with the digests of an event log recorded on a real
machine (tests/acceptance/samples/tpm, from tpm2-tools' own tests); the agent's TPM code answers
Greenlight's challenge through tpm2-tools, and Greenlight judges the answer with tpm2-tools.
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import hashlib
import json
from pathlib import Path

import pytest
import yaml

from acceptance.attestation import judge_attestation
from acceptance.tpm_quote import (
    Challenge,
    EvidenceRefused,
    make_challenge,
    measurements_seen,
    replay_event_log,
)
from agent import tpm as agent_tpm
from fleet.measured_boot import DEFAULT_MEASURED
from tests.support.swtpm import SoftwareTpm, software_tpm

SAMPLES = Path(__file__).parent / "samples" / "tpm"
PCRS = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]
# Strings as printed: a safe loader reads 0x… digests as numbers.
Loader = getattr(yaml, "CBaseLoader", yaml.BaseLoader)


def upstream(name: str) -> dict:
    """tpm2-tools' own recorded reading of a sample log (its expected output)."""
    return yaml.load((SAMPLES / f"{name}.bin.yaml").read_text(), Loader=Loader)


def measure_boot(tpm: SoftwareTpm, name: str, swap: dict[str, str] | None = None) -> None:
    """Extend the TPM's PCRs as the machine that recorded `name` did while it booted (with the
    sha256 digests in `swap` measured in place of the recorded ones)."""
    for event in upstream(name)["events"]:
        digests = {d["AlgorithmId"]: d["Digest"] for d in event.get("Digests") or []}
        if event["EventType"] != "EV_NO_ACTION" and "sha256" in digests:
            digest = (swap or {}).get(digests["sha256"], digests["sha256"])
            tpm.extend(int(event["PCRIndex"]), "sha256", digest)


def golden_from(name: str, measured=DEFAULT_MEASURED) -> dict:
    """Golden values as an admin records them from a reference node that booted `name`."""
    _, events, error = replay_event_log((SAMPLES / f"{name}.bin").read_bytes(), "sha256")
    assert error is None
    seen = measurements_seen(events, None)
    return {
        "bank": "sha256",
        "pcrs": PCRS,
        "measurements": {
            m: {"digests": sorted({e["digest"] for e in seen[m]})} for m in measured if seen[m]
        },
    }


class Node:
    """A node: a software TPM, the agent's TPM code, and the event log its kernel exposes."""

    def __init__(self, tpm: SoftwareTpm, root: Path, log: str | bytes | None):
        self.tpm = tpm
        self.sys_root = root / "sys"
        self.agent = agent_tpm.Tpm(tpm.tcti, root / "agent")
        if log is not None:
            path = self.sys_root / agent_tpm.EVENT_LOG
            path.parent.mkdir(parents=True)
            path.write_bytes(
                log if isinstance(log, bytes) else (SAMPLES / f"{log}.bin").read_bytes()
            )

    def answer(self, params: dict) -> dict:
        return asyncio.run(agent_tpm.evidence(params, self.agent, self.sys_root))

    def attest(self, golden: dict | None) -> tuple[dict, Challenge]:
        """The gate's two steps: keys, then the quote over Greenlight's challenge."""
        keys = self.answer({"step": "keys"})
        challenge, credential = make_challenge(keys, "sha256", PCRS)
        params = {"step": "quote", "nonce": challenge.nonce, "selection": challenge.selection,
                  "credential": credential}  # fmt: skip
        return self.answer(params), challenge


def judge(tpm_evidence: dict, challenge: Challenge | None, golden: dict | None, **thresholds):
    report = {"image_sha256": "", "signature_verified": True, "measurements": {},
              "tpm": tpm_evidence}  # fmt: skip
    manifest = {"attestation": golden} if golden else {}
    return judge_attestation(
        json.dumps(report), manifest, thresholds, challenge.to_dict() if challenge else None
    )


@pytest.fixture
def node(tmp_path):
    with software_tpm(tmp_path) as tpm:
        measure_boot(tpm, "event-bootorder")
        yield Node(tpm, tmp_path, "event-bootorder")


def test_a_node_that_booted_the_pinned_chain_attests(node):
    golden = golden_from("event-bootorder")
    evidence, challenge = node.attest(golden)
    verdict = judge(evidence, challenge, golden)
    assert verdict.verdict == "pass", [f.message for f in verdict.findings]
    assert verdict.findings == []
    tpm = verdict.metrics["tpm"]
    assert tpm["quote_verified"] is True
    # The quoted PCR 9 is the value upstream's replay of the same log printed.
    assert "0x" + tpm["pcrs"]["9"] == upstream("event-bootorder")["pcrs"]["sha256"]["9"].lower()
    kernel = tpm["measurements"]["kernel"]
    assert [e["description"] for e in kernel] == ["/boot/vmlinuz-5.4.0-45-generic"]


def test_a_replayed_quote_fails(node):
    golden = golden_from("event-bootorder")
    old, first = node.attest(golden)
    _, second = node.attest(golden)  # the next attestation: a new nonce, a new credential
    replayed = judge(old, second, golden)
    assert replayed.verdict == "fail"
    # The answer to the old challenge cannot open the new one, and its quote is not over the new
    # nonce: both are named, whichever the check meets first.
    assert replayed.findings[0].code in {"ak_not_bound", "nonce", "ak_changed"}
    stale_nonce = dataclasses.replace(first, nonce="00" * 20)
    verdict = judge(old, stale_nonce, golden)
    assert verdict.verdict == "fail"
    assert [f.code for f in verdict.findings] == ["nonce"]
    assert "replayed or stale quote" in verdict.findings[0].message


def test_tampered_pcr_values_fail(node):
    golden = golden_from("event-bootorder")
    evidence, challenge = node.attest(golden)
    pcrs = bytearray(base64.b64decode(evidence["quote"]["pcrs"]))
    # PCR 4 (the bootloader's) as the TPM measured it, changed in the file the node hands over.
    bootloader = bytes.fromhex(upstream("event-bootorder")["pcrs"]["sha256"]["4"][2:])
    at = pcrs.index(bootloader)
    pcrs[at] ^= 0x01
    evidence["quote"]["pcrs"] = base64.b64encode(bytes(pcrs)).decode()
    verdict = judge(evidence, challenge, golden)
    assert verdict.verdict == "fail"
    assert [f.code for f in verdict.findings] == ["quote_signature"]


def test_a_quote_over_fewer_pcrs_than_asked_fails(node):
    golden = golden_from("event-bootorder")
    keys = node.answer({"step": "keys"})
    challenge, credential = make_challenge(keys, "sha256", PCRS)
    evidence = node.answer({"step": "quote", "nonce": challenge.nonce, "selection": "sha256:0,4",
                            "credential": credential})  # fmt: skip
    verdict = judge(evidence, challenge, golden)
    assert verdict.verdict == "fail"
    assert [f.code for f in verdict.findings] == ["quote_selection"]


def test_an_ak_from_another_tpm_is_not_bound_to_the_node_ek(node, tmp_path):
    golden = golden_from("event-bootorder")
    pinned = node.answer({"step": "keys"})
    with software_tpm(tmp_path / "other") as other_tpm:
        measure_boot(other_tpm, "event-bootorder")
        other = Node(other_tpm, tmp_path / "other", "event-bootorder")
        foreign = other.answer({"step": "keys"})
        # The node shows its pinned EK but an AK living in another TPM.
        keys = {**foreign, "ek_public": pinned["ek_public"]}
        challenge, credential = make_challenge(keys, "sha256", PCRS)
        params = {"step": "quote", "nonce": challenge.nonce, "selection": challenge.selection,
                  "credential": credential}  # fmt: skip
        refused = other.answer(params)
        assert "tpm2_activatecredential" in refused["error"]
        # The other TPM's quote itself is genuine; the secret it would need is not to be had.
        quote = asyncio.run(other.agent.quote(challenge.nonce, challenge.selection))
    evidence = {**refused, **keys, "error": None, "step": "quote", "quote": quote,
                "activated_secret": "00" * 32, "event_log": {}}  # fmt: skip
    verdict = judge(evidence, challenge, golden)
    assert verdict.verdict == "fail"
    assert [f.code for f in verdict.findings] == ["ak_not_bound"]
    assert "not bound to the node's EK" in verdict.findings[0].message


def test_a_key_that_is_no_attestation_key_is_not_challenged(node):
    keys = node.answer({"step": "keys"})
    # The EK is a TPM key, but a decryption key: it cannot sign a quote.
    with pytest.raises(EvidenceRefused, match="restricted TPM signing key"):
        make_challenge({**keys, "ak_public": keys["ek_public"]}, "sha256", PCRS)
    with pytest.raises(EvidenceRefused, match="not the name"):
        make_challenge({**keys, "ak_name": "000b" + "00" * 32}, "sha256", PCRS)


def test_another_boot_chain_names_the_pcr_and_the_measurement(tmp_path):
    with software_tpm(tmp_path) as tpm:
        measure_boot(tpm, "event-moklisttrusted")
        node = Node(tpm, tmp_path, "event-moklisttrusted")
        golden = golden_from("event-bootorder")
        evidence, challenge = node.attest(golden)
    verdict = judge(evidence, challenge, golden)
    assert verdict.verdict == "fail"
    assert {f.code for f in verdict.findings} == {"measurement_mismatch"}
    messages = [f.message for f in verdict.findings]
    assert any(m.startswith("PCR 4: bootloader measurement ") for m in messages)
    kernel = next(m for m in messages if m.startswith("PCR 9: kernel measurement"))
    assert "vmlinuz-5.14.0-130.el9.x86_64" in kernel and "not in the golden set" in kernel
    assert {f.part for f in verdict.findings} >= {"PCR 4", "PCR 9", "PCR 0", "PCR 7"}


def test_a_changed_initramfs_fails_naming_pcr_9_and_the_initramfs(tmp_path):
    # The same machine, its initramfs one byte different: GRUB measures (and logs) another digest.
    recorded = next(
        e
        for e in upstream("event-bootorder")["events"]
        if e["PCRIndex"] == "9" and "initrd" in str(e.get("Event"))
    )
    old = next(d["Digest"] for d in recorded["Digests"] if d["AlgorithmId"] == "sha256")
    new = hashlib.sha256(b"an initramfs with one byte changed").hexdigest()
    log = (SAMPLES / "event-bootorder.bin").read_bytes()
    assert log.count(bytes.fromhex(old)) == 1
    with software_tpm(tmp_path) as tpm:
        measure_boot(tpm, "event-bootorder", swap={old: new})
        node = Node(tpm, tmp_path, log.replace(bytes.fromhex(old), bytes.fromhex(new)))
        golden = golden_from("event-bootorder")
        evidence, challenge = node.attest(golden)
    verdict = judge(evidence, challenge, golden)
    assert verdict.verdict == "fail"
    assert [(f.part, f.message) for f in verdict.findings] == [
        (
            "PCR 9",
            f"PCR 9: initramfs measurement {new[:8]}… (/boot/initrd.img-5.4.0-45-generic) not in "
            "the golden set",
        )
    ]


def test_a_missing_measurement_fails(tmp_path):
    # The GCE node booted without an initramfs; the golden set has one.
    with software_tpm(tmp_path) as tpm:
        measure_boot(tpm, "event-gce-ubuntu-2104-log")
        node = Node(tpm, tmp_path, "event-gce-ubuntu-2104-log")
        golden = golden_from("event-gce-ubuntu-2104-log")
        golden["measurements"]["initramfs"] = golden_from("event-bootorder")["measurements"][
            "initramfs"
        ]
        evidence, challenge = node.attest(golden)
    verdict = judge(evidence, challenge, golden)
    assert verdict.verdict == "fail"
    assert [f.message for f in verdict.findings] == [
        "PCR 9: no initramfs measurement in the event log"
    ]
    assert verdict.metrics["tpm"]["secure_boot"] == "disabled"


def test_an_event_log_that_is_not_the_measured_boot_fails(tmp_path):
    # The TPM measured one boot; the node hands over the log of another.
    with software_tpm(tmp_path) as tpm:
        measure_boot(tpm, "event-bootorder")
        node = Node(tpm, tmp_path, "event-moklisttrusted")
        golden = golden_from("event-moklisttrusted")
        evidence, challenge = node.attest(golden)
    verdict = judge(evidence, challenge, golden)
    assert verdict.verdict == "fail"
    replay = [f for f in verdict.findings if f.code == "replay_mismatch"]
    assert replay and all("the log is not the boot the TPM measured" in f.message for f in replay)
    # A PCR whose log does not replay is not read for measurements: the replay says it all.
    assert {f.code for f in verdict.findings} <= {"replay_mismatch", "measurement_mismatch"}
    failed = {f.part for f in replay}
    assert not any(f.part in failed for f in verdict.findings if f.code != "replay_mismatch")


def test_no_event_log_fails(tmp_path):
    with software_tpm(tmp_path) as tpm:
        node = Node(tpm, tmp_path, None)
        golden = golden_from("event-bootorder")
        evidence, challenge = node.attest(golden)
    assert "does not exist" in evidence["event_log"]["missing"]
    verdict = judge(evidence, challenge, golden)
    assert verdict.verdict == "fail"
    assert [f.code for f in verdict.findings] == ["event_log_missing"]


def test_a_quote_without_golden_values_passes_only_where_no_tpm_is_required(node):
    evidence, challenge = node.attest(None)
    relaxed = judge(evidence, challenge, None)
    assert relaxed.verdict == "pass"
    assert [(f.code, f.severity) for f in relaxed.findings] == [("no_golden", "warning")]
    strict = judge(evidence, challenge, None, require_tpm=1)
    assert strict.verdict == "error" and "record them from a reference node" in strict.error


def test_a_keys_step_alone_is_not_an_attestation(node):
    keys = node.answer({"step": "keys"})
    assert set(keys) == {"present", "step", "ek_public", "ak_public", "ak_name"}
    golden = golden_from("event-bootorder")
    verdict = judge(keys, None, golden)
    assert verdict.verdict == "fail"
    assert "not attested: Greenlight sent no nonce" in verdict.findings[0].message


def test_the_quote_step_without_the_keys_step_is_an_error(tmp_path):
    with software_tpm(tmp_path) as tpm:
        node = Node(tpm, tmp_path, "event-bootorder")
        answer = node.answer({"step": "quote", "nonce": "ab", "selection": "sha256:0",
                              "credential": base64.b64encode(b"x").decode()})  # fmt: skip
    assert "run the keys step first" in answer["error"]
    verdict = judge(answer, None, None)
    assert verdict.verdict == "error" and "TPM did not answer" in verdict.error
