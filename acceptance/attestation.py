"""The attestation gate: the booted image and the firmware measurements against the manifest."""

from __future__ import annotations

import json
from typing import Any

from .choices import Verdict
from .parsers.base import Finding
from .verdicts import GateVerdict


def judge_attestation(report_text: str, manifest: dict[str, Any], used: dict) -> GateVerdict:
    """Judge the agent's measured-boot report; any mismatch names the component.

    `used` is the gate's thresholds with their defaults (acceptance.gates.ATTESTATION).
    """
    verdict = GateVerdict(Verdict.ERROR, thresholds_used=used)
    try:
        report = json.loads(report_text or "")
    except json.JSONDecodeError:
        verdict.error = "attestation report is not JSON"
        return verdict
    if not isinstance(report, dict) or "measurements" not in report:
        verdict.error = "attestation report has no measurements"
        return verdict
    image = manifest.get("os_image") or {}
    findings = []
    if image and report.get("image_sha256") != image.get("sha256"):
        findings.append(
            Finding(
                "os_image",
                "node",
                f"booted image {str(report.get('image_sha256'))[:12] or 'unknown'} is not the "
                f"manifest's {image['sha256'][:12]}",
                code="image_mismatch",
            )
        )
    if used.get("require_signature") and not report.get("signature_verified"):
        findings.append(
            Finding("os_image", "node", "the booted image's signature did not verify", code="sig")
        )
    measured = report.get("measurements") or {}
    for component, target in sorted((manifest.get("firmware") or {}).items()):
        if component in measured and measured[component] != target["version"]:
            findings.append(
                Finding(
                    component,
                    component,
                    f"{component} firmware measured {measured[component]}, manifest says "
                    f"{target['version']}",
                    code="measurement_mismatch",
                )
            )
    verdict.findings = findings
    verdict.metrics = {"measurements": measured, "image_sha256": report.get("image_sha256")}
    verdict.verdict = Verdict.FAIL if findings else Verdict.PASS
    return verdict
