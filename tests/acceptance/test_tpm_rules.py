"""Each measured-boot rule over recorded event logs, without a TPM: replay, golden set, no TPM."""

from __future__ import annotations

import asyncio
import base64
import gzip
import hashlib
import json
import os
from pathlib import Path

import pytest
import yaml

from acceptance.attestation import judge_attestation, tpm_required
from acceptance.tpm_quote import (
    Challenge,
    EvidenceRefused,
    LogEvent,
    TpmToolsMissing,
    check_evidence,
    golden_findings,
    measurements_seen,
    replay_event_log,
    replay_findings,
    require_tools,
    secure_boot_state,
    unpack_log,
)
from agent import tpm as agent_tpm
from tests.support.swtpm import require_tpm_tools

SAMPLES = Path(__file__).parent / "samples" / "tpm"
Loader = getattr(yaml, "CBaseLoader", yaml.BaseLoader)
EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()


def log(name: str) -> bytes:
    return (SAMPLES / f"{name}.bin").read_bytes()


@pytest.fixture(autouse=True)
def tools():
    require_tpm_tools()


@pytest.mark.parametrize(
    "name",
    ["event-bootorder", "event-gce-ubuntu-2104-log", "event-moklisttrusted", "event-arch-linux"],
)
def test_the_replay_matches_upstreams_recorded_replay(name):
    expected = yaml.load((SAMPLES / f"{name}.bin.yaml").read_text(), Loader=Loader)["pcrs"]
    pcrs, events, error = replay_event_log(log(name), "sha256")
    assert error is None and events
    assert pcrs == {int(p): v.lower()[2:] for p, v in expected["sha256"].items()}


def test_a_log_without_the_bank_or_not_a_log_cannot_be_judged():
    _, _, error = replay_event_log(log("event-uefi-sha1-log"), "sha256")
    assert error == "the event log has no sha256 measurements"
    _, _, error = replay_event_log(b"not an event log", "sha256")
    assert error.startswith("the event log does not parse")


def test_measurements_are_found_where_grub_and_shim_put_them():
    _, events, _ = replay_event_log(log("event-bootorder"), "sha256")
    seen = measurements_seen(events, None)
    assert [e["description"] for e in seen["kernel"]] == ["/boot/vmlinuz-5.4.0-45-generic"]
    assert [e["description"] for e in seen["initramfs"]] == ["/boot/initrd.img-5.4.0-45-generic"]
    assert [e["pcr"] for e in seen["bootloader"]] == [4, 4]  # shim, then GRUB
    assert seen["kernel_cmdline"][0]["description"].startswith("kernel_cmdline: ")
    assert all(e["pcr"] == 7 for e in seen["secure_boot"]) and seen["secure_boot"]
    assert seen["firmware"] and all(e["type"] != "EV_NO_ACTION" for e in seen["firmware"])


def test_a_measurement_of_ones_own_is_selected_by_its_pcr_and_pattern():
    _, events, _ = replay_event_log(log("event-gce-ubuntu-2104-log"), "sha256")
    golden = {"measurements": {"mok": {"pcr": 14, "event_types": ["EV_IPL"], "match": "^MokList"}}}
    seen = measurements_seen(events, golden)
    assert [e["description"] for e in seen["mok"]] == ["MokList", "MokListX"]


EVENT = LogEvent(9, "EV_IPL", "ab" * 32, "/boot/vmlinuz-6.1")


def test_golden_rules_name_the_pcr_and_measurement():
    seen = {"kernel": [{"pcr": 9, "digest": "ab" * 32, "description": "/boot/vmlinuz-6.1"}],
            "initramfs": []}  # fmt: skip
    golden = {
        "measurements": {
            "kernel": {"digests": ["cd" * 32]},
            "initramfs": {"digests": ["ef" * 32]},
        }
    }
    found = golden_findings(seen, golden, set())
    assert [f.message for f in found] == [
        "PCR 9: no initramfs measurement in the event log",
        "PCR 9: kernel measurement abababab… (/boot/vmlinuz-6.1) not in the golden set",
    ]
    assert all(f.part == "PCR 9" and f.severity == "critical" for f in found)
    pinned = {"measurements": {"kernel": {"digests": ["ab" * 32], "count": 2}}}
    assert [f.code for f in golden_findings(seen, pinned, set())] == ["measurement_count"]
    # A PCR whose log did not replay is failed already, and not read.
    assert golden_findings(seen, golden, {9}) == []


def test_a_quoted_pcr_the_log_does_not_reach_fails():
    found = replay_findings({0: "11" * 32, 9: "00" * 32}, {0: "22" * 32}, 64)
    # PCR 9 has no event: its reset value, zeros, is what the quote shows, so it replays.
    assert [f.part for f in found] == ["PCR 0"]
    assert "the log is not the boot the TPM measured" in found[0].message


def test_secure_boot_state_is_read_from_pcr_7():
    _, events, _ = replay_event_log(log("event-gce-ubuntu-2104-log"), "sha256")
    assert secure_boot_state(events) == "disabled"
    assert secure_boot_state([EVENT]) == "unknown"


def report(tpm: dict | None) -> str:
    body = {"image_sha256": "", "signature_verified": True, "measurements": {}}
    return json.dumps(body | ({"tpm": tpm} if tpm is not None else {}))


GOLDEN = {"bank": "sha256", "pcrs": [9], "measurements": {"kernel": {"digests": ["ab" * 32]}}}


def test_a_node_without_a_tpm_is_judged_by_the_profile_rule(tmp_path):
    answer = asyncio.run(agent_tpm.evidence({"step": "keys"}, None))
    assert answer == {"present": False, "reason": answer["reason"]}
    assert agent_tpm.find_tcti(tmp_path) is None
    # Required by the profile: a failure that says so.
    strict = judge_attestation(report(answer), {}, {"require_tpm": 1})
    assert strict.verdict == "fail"
    assert strict.findings[0].message.startswith("not attested: no TPM")
    assert "the profile requires a TPM" in strict.findings[0].message
    # Not required: a pass that records it, never a silent one.
    relaxed = judge_attestation(report(answer), {}, {"require_tpm": 0})
    assert relaxed.verdict == "pass"
    assert [(f.code, f.severity) for f in relaxed.findings] == [("not_attested", "warning")]
    # Unset: a manifest that pins golden values requires the TPM.
    assert judge_attestation(report(answer), {"attestation": GOLDEN}, {}).verdict == "fail"
    assert judge_attestation(report(None), {"attestation": GOLDEN}, {}).verdict == "fail"


def test_the_rule_reads_the_profile_first():
    assert tpm_required({"attestation": GOLDEN}, {"require_tpm": 0}) is False
    assert tpm_required({}, {"require_tpm": 1}) is True
    assert tpm_required({"attestation": GOLDEN}, {}) is True
    assert tpm_required({}, {}) is False


def test_the_tpm_device_is_found_resource_manager_first(tmp_path):
    (tmp_path / "tpm0").touch()
    assert agent_tpm.find_tcti(tmp_path) == f"device:{tmp_path / 'tpm0'}"
    (tmp_path / "tpmrm0").touch()
    assert agent_tpm.find_tcti(tmp_path) == f"device:{tmp_path / 'tpmrm0'}"


def test_without_tpm2_tools_the_judge_says_so_and_never_passes(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(TpmToolsMissing, match=r"\.ci/run installs it"):
        require_tools()
    evidence = {"present": True, "step": "quote", "ek_public": "", "ak_public": ""}
    # The EK matches (both empty), so the judge goes on to the AK: tpm2_print is needed.
    challenge = {"nonce": "ab", "bank": "sha256", "pcrs": [9], "ek_sha256": EMPTY_SHA256,
                 "ak_name": "", "secret_sha256": ""}  # fmt: skip
    verdict = judge_attestation(report(evidence), {"attestation": GOLDEN}, {}, challenge)
    assert verdict.verdict == "error"
    assert "tpm2_print" in verdict.error and ".ci/run" in verdict.error


def test_a_log_too_big_for_one_result_is_said_missing(tmp_path, monkeypatch):
    path = tmp_path / "log.bin"
    path.write_bytes(os.urandom(4096))
    monkeypatch.setattr(agent_tpm, "MAX_LOG_BYTES", 1024)
    assert "over what one result carries" in agent_tpm.read_log(path)["missing"]
    assert "does not exist" in agent_tpm.read_log(tmp_path / "none")["missing"]


def test_a_log_that_unpacks_past_any_real_log_is_refused():
    bomb = gzip.compress(b"\0" * (17 * 1024 * 1024))
    with pytest.raises(EvidenceRefused, match="unpacks to more than"):
        unpack_log({"gzip_b64": base64.b64encode(bomb).decode()})
    with pytest.raises(EvidenceRefused, match="not gzip data"):
        unpack_log({"gzip_b64": base64.b64encode(b"plain").decode()})
    assert unpack_log({"missing": "no log"}) is None


def test_evidence_of_the_wrong_shape_is_a_finding_not_a_crash():
    challenge = Challenge("ab", "sha256", [9], EMPTY_SHA256, "", "")
    for broken in ({"ek_public": "%%%"}, {"ek_public": "", "ak_public": "AAAA"}):
        findings, metrics = check_evidence(broken, challenge, None)
        assert [f.code for f in findings] == ["evidence"] and not metrics["quote_verified"]
