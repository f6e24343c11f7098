"""The attestation gate: the booted image and the firmware measurements against the manifest.

The measured boot is judged from the node's TPM (acceptance.tpm_quote): a quote over the PCRs the
manifest's `attestation` section names, with the nonce Greenlight sent, its event log replayed and
compared with the golden values. A node without a TPM is judged by the profile's `require_tpm`
(unset: required when the manifest pins golden values): a failure, or a recorded "not attested"
warning, never a silent pass.
"""

from __future__ import annotations

import json
from typing import Any

from .choices import Verdict
from .parsers.base import Finding, Severity
from .tpm_quote import Challenge, TpmToolsMissing, check_evidence, not_attested
from .verdicts import GateVerdict


def tpm_required(manifest: dict[str, Any], thresholds: dict | None) -> bool:
    """The profile's rule; where it says nothing, a manifest with golden values requires a TPM."""
    if thresholds and "require_tpm" in thresholds:
        return bool(thresholds["require_tpm"])
    return bool(manifest.get("attestation"))


def judge_attestation(
    report_text: str,
    manifest: dict[str, Any],
    used: dict,
    challenge: dict[str, Any] | None = None,
) -> GateVerdict:
    """Judge the agent's measured-boot report; any mismatch names the component.

    `used` is the gate's thresholds with their defaults (acceptance.gates.ATTESTATION).
    challenge: what Greenlight sent for the quote (tpm_quote.Challenge.to_dict()); without one
    there is no fresh quote to judge and the node is not attested.
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
    verdict.metrics = {"measurements": measured, "image_sha256": report.get("image_sha256")}
    required = tpm_required(manifest, used)
    verdict.metrics["tpm_required"] = required
    try:
        error = judge_tpm(report.get("tpm"), manifest, required, challenge, findings, verdict)
    except TpmToolsMissing as exc:
        error = str(exc)
    verdict.findings = findings
    if error:
        verdict.error = error
        return verdict
    critical = any(f.severity == Severity.CRITICAL for f in findings)
    verdict.verdict = Verdict.FAIL if critical else Verdict.PASS
    return verdict


def judge_tpm(
    tpm: Any,
    manifest: dict[str, Any],
    required: bool,
    challenge: dict[str, Any] | None,
    findings: list[Finding],
    verdict: GateVerdict,
) -> str | None:
    """Add the TPM's findings and metrics; return why it cannot be judged, if so."""
    golden = manifest.get("attestation")
    if not isinstance(tpm, dict) or not tpm.get("present"):
        why = tpm.get("reason") if isinstance(tpm, dict) else None
        findings.append(not_attested(why or "the agent sent no TPM evidence", required))
        return None
    if tpm.get("error"):
        return f"the node's TPM did not answer: {tpm['error']}"
    if challenge is None or tpm.get("step") != "quote":
        findings.append(not_attested("Greenlight sent no nonce, so there is no quote", required))
        return None
    found, metrics = check_evidence(tpm, Challenge.from_dict(challenge), golden)
    findings.extend(found)
    verdict.metrics["tpm"] = metrics
    if metrics.get("quote_verified") and not golden:
        if required:
            return (
                "the manifest pins no measured-boot golden values: record them from a reference "
                "node (Manifests > Record golden measurements)"
            )
        findings.append(
            Finding(
                "TPM",
                "node",
                "measured boot not compared: the manifest pins no golden values",
                Severity.WARNING,
                code="no_golden",
            )  # fmt: skip
        )
    return None
