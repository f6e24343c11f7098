"""The attestation gate: the booted image and firmware measurements against the manifest."""

from __future__ import annotations

import json

from acceptance.attestation import judge_attestation
from acceptance.gates import ATTESTATION

MANIFEST = {
    "os_image": {"sha256": "a" * 64, "url": "http://x/os.img", "signature": "k:v"},
    "firmware": {"nic": {"version": "28.43.1014"}, "bios": {"version": "2.20.1"}},
}


def _report(**overrides) -> str:
    report = {
        "image_sha256": "a" * 64,
        "signature_verified": True,
        "measurements": {"nic": "28.43.1014", "bios": "2.20.1"},
    }
    report.update(overrides)
    return json.dumps(report)


def test_a_matching_report_passes():
    assert judge_attestation(_report(), MANIFEST, ATTESTATION.defaults).verdict == "pass"


def test_a_firmware_measurement_mismatch_names_the_component():
    verdict = judge_attestation(
        _report(measurements={"nic": "28.39.1002"}), MANIFEST, ATTESTATION.defaults
    )
    assert verdict.verdict == "fail"
    # Beside it, the warning that this TPM-less report is not attested (the manifest pins no
    # golden values, so the profile's rule does not require a TPM).
    assert [(f.part, f.severity) for f in verdict.findings] == [
        ("nic", "critical"),
        ("TPM", "warning"),
    ]
    assert "28.39.1002" in verdict.findings[0].message


def test_a_foreign_image_or_a_bad_signature_fails():
    assert (
        judge_attestation(_report(image_sha256="b" * 64), MANIFEST, ATTESTATION.defaults).verdict
        == "fail"
    )
    unsigned = judge_attestation(_report(signature_verified=False), MANIFEST, ATTESTATION.defaults)
    assert unsigned.verdict == "fail" and unsigned.findings[0].part == "os_image"


def test_garbage_is_an_error_never_a_pass():
    for text in ("", "not json", json.dumps({"no": "measurements"})):
        assert judge_attestation(text, MANIFEST, ATTESTATION.defaults).verdict == "error"
