"""The shapes judging works with: the SKU facts a verdict needs, the evidence, a gate's verdict."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from .choices import Verdict
from .parsers.base import Finding, Severity

if TYPE_CHECKING:
    from provisioning.agents.redaction import Redactor


@dataclass(frozen=True)
class SkuFacts:
    """What a healthy node of the SKU contains; a plain copy of fleet.Sku so judging needs no database."""

    gpu_count: int
    nic_count: int
    nic_line_rate_gbps: float
    nvlink_bandwidth_gbps: float
    drive_count: int

    @classmethod
    def of(cls, sku: Any) -> SkuFacts:
        """Copy the facts from a fleet.Sku (or anything with the same attributes)."""
        return cls(
            gpu_count=sku.gpu_count,
            nic_count=sku.nic_count,
            nic_line_rate_gbps=sku.nic_line_rate_gbps,
            nvlink_bandwidth_gbps=sku.nvlink_bandwidth_gbps,
            drive_count=sku.drive_count,
        )

    def fabric_gbytes(self, nics: int | None = None) -> float:
        """Line rate in GB/s of `nics` fabric NICs (all of them by default), the NCCL reference."""
        return (self.nic_count if nics is None else nics) * self.nic_line_rate_gbps / 8


@dataclass(frozen=True)
class Evidence:
    """What one gate on one node is judged on: its tools' outputs and the node's facts."""

    # Tool command name (or a tool's key, "nccl:<peer>:<rail>") -> its raw output.
    outputs: dict[str, str]
    # The gate's defaults overlaid with the profile's thresholds.
    thresholds: dict[str, float]
    sku: SkuFacts
    # Part names as findings write them ("GPU 3", "nvme3n1") -> serials.
    inventory: dict[str, str] = field(default_factory=dict)
    # The manifest the run brings the node to (attestation compares against it).
    manifest: dict[str, Any] = field(default_factory=dict)
    # The node's serial (a multi-node gate keeps only this node's verdict).
    serial: str = ""


@dataclass
class GateVerdict:
    """One gate's judgement: pass, fail or error, with the parts to blame."""

    verdict: Verdict
    metrics: dict[str, Any] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)
    thresholds_used: dict[str, float] = field(default_factory=dict)
    tool_versions: dict[str, str] = field(default_factory=dict)
    # Why the outputs could not be judged (verdict error).
    error: str | None = None
    # Parts to reset (XID 63/94 once) before acceptance; the gate is then run again.
    reset_required: list[str] = field(default_factory=list)
    # The soak sample at which a hardware fault stopped the soak early.
    stopped_at_sample: int | None = None

    def redacted(self, redact: Redactor) -> GateVerdict:
        """This verdict with `redact` applied to every word it took from the node's output."""
        return replace(
            self,
            metrics=redact.tree(self.metrics),
            findings=[
                replace(f, part=redact(f.part), message=redact(f.message)) for f in self.findings
            ],
            tool_versions=redact.tree(self.tool_versions),
            error=redact(self.error) if self.error else self.error,
        )

    def to_dict(self) -> dict[str, Any]:
        """Return the verdict as JSON-able data."""
        return {
            "verdict": str(self.verdict),
            "metrics": self.metrics,
            "findings": [f.to_dict() for f in self.findings],
            "thresholds_used": self.thresholds_used,
            "tool_versions": self.tool_versions,
            "error": self.error,
            "reset_required": self.reset_required,
            "stopped_at_sample": self.stopped_at_sample,
        }


def conclude(verdict: GateVerdict) -> GateVerdict:
    """Set the verdict from the findings: error stays error, any critical finding fails."""
    if verdict.error:
        verdict.verdict = Verdict.ERROR
    elif any(f.severity == Severity.CRITICAL for f in verdict.findings):
        verdict.verdict = Verdict.FAIL
    else:
        verdict.verdict = Verdict.PASS
    verdict.reset_required = sorted(
        {f.part for f in verdict.findings if f.severity == Severity.RESET_REQUIRED}
    )
    return verdict
