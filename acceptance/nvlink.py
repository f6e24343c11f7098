"""Judge nvbandwidth's GPU-to-GPU matrices against the SKU's NVLink spec and name the weak part.

A GPU whose links trained down is slow to every peer; an NVSwitch missing from the baseboard makes
every pair slow. So: all pairs low blames the switch fabric, a GPU low to all its peers is blamed
itself, and a low pair explained by neither is named as a pair.
"""

from __future__ import annotations

from .parsers.base import Finding, Severity
from .verdicts import GateVerdict, SkuFacts

GPU_TO_GPU = ("device_to_device_memcpy_read_ce", "device_to_device_memcpy_write_ce")


def judge_nvlink_matrices(
    metrics: dict, thresholds: dict, sku: SkuFacts, verdict: GateVerdict
) -> None:
    """Add findings for GPU pairs below min_fraction_of_spec of the SKU's NVLink bandwidth."""
    testcases = {k: v for k, v in metrics["testcases"].items() if k in GPU_TO_GPU}
    ran = {k: v for k, v in testcases.items() if v["status"] == "ok"}
    if not ran:
        verdict.error = "nvbandwidth ran no device_to_device testcase"
        return
    floor = thresholds["min_fraction_of_spec"] * sku.nvlink_bandwidth_gbps
    low: set[tuple[str, str]] = set()
    values: list[float] = []
    gpus: set[str] = set()
    for testcase in ran.values():
        for row, cells in testcase["matrix"].items():
            gpus.add(row)
            for col, value in cells.items():
                if row == col:
                    continue
                if value is not None:
                    values.append(value)
                if value is None or value < floor:
                    low.add(tuple(sorted((row, col))))
    verdict.metrics["nvlink"] = {
        "spec_gbps": sku.nvlink_bandwidth_gbps,
        "floor_gbps": round(floor, 2),
        "min_pair_gbps": min(values) if values else None,
        "min_fraction": round(min(values) / sku.nvlink_bandwidth_gbps, 4) if values else None,
        "low_pairs": sorted(f"{a}-{b}" for a, b in low),
    }
    if len(gpus) < sku.gpu_count:
        message = f"node: nvbandwidth sees {len(gpus)} of {sku.gpu_count} GPUs"
        verdict.findings.append(Finding("node", "gpu", message, Severity.CRITICAL, "gpu_missing"))
    verdict.findings.extend(_localise(low, sorted(gpus, key=int), floor, sku))


def _localise(
    low: set[tuple[str, str]], gpus: list[str], floor: float, sku: SkuFacts
) -> list[Finding]:
    if not low:
        return []
    all_pairs = {tuple(sorted((a, b))) for a in gpus for b in gpus if a != b}
    spec = f"{floor:.0f} GB/s ({floor / sku.nvlink_bandwidth_gbps:.0%} of spec)"
    if low >= all_pairs:
        message = f"NVSwitch fabric: every GPU pair below {spec}; check NVSwitch topology"
        return [Finding("NVSwitch fabric", "nvswitch", message, Severity.CRITICAL, "nvlink_low")]
    weak = [g for g in gpus if all(tuple(sorted((g, o))) in low for o in gpus if o != g)]
    findings = [
        Finding(
            f"GPU {g}",
            "nvlink",
            f"GPU {g}: NVLink bandwidth to every peer below {spec}",
            Severity.CRITICAL,
            "nvlink_low",
        )
        for g in weak
    ]
    for a, b in sorted(low):
        if a not in weak and b not in weak:
            message = f"GPU {a} <-> GPU {b}: NVLink bandwidth below {spec}"
            findings.append(Finding(f"GPU {a}", "nvlink", message, Severity.CRITICAL, "nvlink_low"))
    return findings
