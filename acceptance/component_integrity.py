"""The BMC's component-integrity evidence (SPDM, a TPM as the BMC reads it), kept beside the
node's quote: recorded on every attestation, and a part whose identity the BMC could not verify
is a finding that names it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from provisioning.redfish import RedfishClient, RedfishError
from provisioning.redfish.integrity import IntegrityReport

from .parsers.base import Finding


def part_of(report: IntegrityReport) -> str:
    """The measured part, by its Redfish name ("AC-RoT0" of .../TrustedComponents/AC-RoT0)."""
    return report.target.rstrip("/").rsplit("/", 1)[-1] or report.id


def component_evidence(
    bmc: Callable[[], RedfishClient],
) -> tuple[dict[str, Any], list[Finding]]:
    """What the BMC's ComponentIntegrity says, as recorded evidence, and its findings.

    `bmc` opens the node's BMC client. A BMC without the resource records an empty list; one that
    fails to answer records why (the quote is judged without it: this evidence adds to the
    node's own, it does not replace it).
    """
    try:
        reports = bmc().component_integrity()
    except RedfishError as exc:
        return {"reports": [], "error": str(exc)}, []
    findings = [
        Finding(
            part_of(r),
            "node",
            f"{part_of(r)}: the BMC could not verify its {r.protocol} identity "
            f"(ComponentIntegrity {r.id}: {r.verification})",
            code="component_identity",
        )
        for r in reports
        if r.enabled and r.verification_failed
    ]
    return {"reports": [r.as_dict() for r in reports]}, findings
