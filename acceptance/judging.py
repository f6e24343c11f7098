"""The checks gates are judged by: parsed tool outputs weighed against thresholds and the SKU.

Pure: no database. Parsers read; a check weighs what they read and names the failing part. A
parser error makes the gate an error, never a pass. Which gate uses which check is declared in
acceptance.gates, the one place a gate is written down.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from .attestation import judge_attestation
from .choices import Verdict
from .fabric import PairResult, judge_fabric
from .nvlink import judge_nvlink_matrices
from .parsers import PARSERS, ParseResult, aer, sxid, xid
from .parsers.base import Finding, Severity
from .verdicts import Evidence, GateVerdict, SkuFacts, conclude

# Parser findings whose weight a threshold decides; the gate judge re-derives them from metrics.
THRESHOLD_CODES = {"ecc_uncorrectable", "row_remap_pending"}

# A check weighs parsed outputs (tool -> ParseResult) against thresholds, adding findings.
Check = Callable[[dict[str, ParseResult], dict[str, float], SkuFacts, GateVerdict], Any]
# A judge turns a gate's evidence into its verdict; `tools` are the outputs the gate reads.
Judge = Callable[[tuple[str, ...], Evidence], GateVerdict]


def from_parsed(check: Check) -> Judge:
    """A judge that parses each of the gate's tools' outputs, then applies `check`."""

    def judge(tools: tuple[str, ...], evidence: Evidence) -> GateVerdict:
        verdict = GateVerdict(Verdict.ERROR, thresholds_used=evidence.thresholds)
        outputs = _parse_all(tools, evidence.outputs, verdict)
        if verdict.error:
            return verdict
        check(outputs, evidence.thresholds, evidence.sku, verdict)
        verdict.findings = _with_serials(verdict.findings, evidence.inventory)
        return conclude(verdict)

    return judge


def attestation(tools: tuple[str, ...], evidence: Evidence) -> GateVerdict:
    """The measured-boot report against the manifest (acceptance.attestation)."""
    return judge_attestation(
        evidence.outputs.get("attestation", ""), evidence.manifest, evidence.thresholds
    )


def fabric(tools: tuple[str, ...], evidence: Evidence) -> GateVerdict:
    """One run per rail and partner ("nccl:<peer>:<rail>"), or one all_reduce output alone.

    Per pair, only this node's verdict is kept: it is in every pair here, so it is blamed only
    if all of them were slow; each partner is judged by its own gate, with its own partners.
    A single output (a person's upload, a lab sample) is weighed against the line rate alone.
    """
    pairs = []
    for key, text in evidence.outputs.items():
        tool, _, rest = key.partition(":")
        if rest:
            peer, _, rail = rest.partition(":")
            pairs.append(PairResult(evidence.serial, peer, text, rail=f"NIC {rail}", tool=tool))
    if not pairs:
        return from_parsed(check_fabric)(tools, evidence)
    mine = judge_fabric(pairs, evidence.sku, evidence.thresholds).get(evidence.serial)
    return mine or GateVerdict(Verdict.ERROR, error="no fabric result for this node")


def _parse_all(tools: tuple[str, ...], outputs: dict[str, str], verdict: GateVerdict) -> dict:
    parsed: dict[str, ParseResult] = {}
    # nvidia-smi first: its bus ids let the xid parser say "GPU 3" instead of a PCI address.
    for tool in sorted(tools, key=lambda t: t != "nvidia-smi"):
        text = outputs.get(tool)
        if text is None:
            verdict.error = f"no {tool} output"
            return parsed
        if tool == "xid":
            result = xid.parse(text, bus_ids=_bus_map(parsed.get("nvidia-smi")))
        else:
            result = PARSERS[tool](text)
        if result.error:
            verdict.error = f"{tool}: {result.error}"
            return parsed
        parsed[tool] = result
        verdict.metrics[tool] = result.metrics
        verdict.tool_versions[tool] = result.version or ""
        if result.driver_version:
            verdict.tool_versions["driver"] = result.driver_version
        verdict.findings.extend(f for f in result.findings if f.code not in THRESHOLD_CODES)
        if tool == "xid":
            _read_kernel_log_for_switches_and_links(text, verdict)
    return parsed


def _read_kernel_log_for_switches_and_links(text: str, verdict: GateVerdict) -> None:
    """The kernel log that carries Xids also names failing NVSwitches (SXid) and PCIe links (AER)."""
    for parser, key in ((sxid, "nvswitch_events"), (aer, "pcie_aer")):
        result = parser.parse(text)
        if result.error is None:
            verdict.metrics["xid"][key] = result.metrics["events" if parser is sxid else "devices"]
            verdict.findings.extend(result.findings)
        elif "truncated" in result.error:
            verdict.error = f"{result.tool}: {result.error}"


def _bus_map(smi: ParseResult | None) -> dict[str, dict]:
    if smi is None:
        return {}
    return {g["bus_id"]: {"index": g["index"], "serial": g["serial"]} for g in smi.metrics["gpus"]}


def _with_serials(findings: list[Finding], inventory: dict[str, str]) -> list[Finding]:
    return [
        replace(f, part_serial=inventory[f.part])
        if not f.part_serial and f.part in inventory
        else f
        for f in findings
    ]


def _fail(
    verdict: GateVerdict, part: str, kind: str, message: str, code: str, serial: str | None = ""
) -> None:
    finding = Finding(part, kind, f"{part}: {message}", Severity.CRITICAL, code, serial or "")
    verdict.findings.append(finding)


def check_gpu_health(parsed: dict, used: dict, sku: SkuFacts, verdict: GateVerdict) -> None:
    level = parsed["dcgm"].metrics["level_inferred"]
    if level < used.get("dcgm_level", 1):
        verdict.error = f"dcgmi ran at level {level}; the profile asks for {used['dcgm_level']:g}"
        return
    _judge_memory_health(parsed["nvidia-smi"], used, verdict)
    _check_gpu_count(len(parsed["nvidia-smi"].metrics["gpus"]), sku, verdict, "nvidia-smi")


def _judge_memory_health(smi: ParseResult, used: dict, verdict: GateVerdict) -> None:
    max_ecc = used.get("max_uncorrectable_ecc", 0)
    max_pending = used.get("max_pending_row_remaps", 0)
    for gpu in smi.metrics["gpus"]:
        part = f"GPU {gpu['index']}"
        ecc = max(gpu["ecc_volatile_uncorrectable"], gpu["ecc_aggregate_uncorrectable"])
        if ecc > max_ecc:
            message = f"{ecc} uncorrectable ECC errors (allowed {max_ecc:g})"
            _fail(verdict, part, "gpu", message, "ecc_uncorrectable", gpu["serial"])
        pending = 1 if gpu["remapped_rows_pending"] else 0
        if pending > max_pending:
            message = "row remap pending (reset the GPU to apply it)"
            _fail(verdict, part, "gpu", message, "row_remap_pending", gpu["serial"])


def _check_gpu_count(seen: int, sku: SkuFacts, verdict: GateVerdict, tool: str) -> None:
    if seen < sku.gpu_count:
        _fail(verdict, "node", "gpu", f"{tool} sees {seen} of {sku.gpu_count} GPUs", "gpu_missing")


def check_nvbandwidth(parsed: dict, used: dict, sku: SkuFacts, verdict: GateVerdict) -> None:
    if not sku.nvlink_bandwidth_gbps:
        verdict.error = "the SKU states no NVLink bandwidth to compare with"
        return
    judge_nvlink_matrices(parsed["nvbandwidth"].metrics, used, sku, verdict)


def check_fabric(parsed: dict, used: dict, sku: SkuFacts, verdict: GateVerdict) -> None:
    metrics = parsed["nccl"].metrics
    reference = sku.fabric_gbytes()
    fraction = metrics["plateau_busbw_gbps"] / reference
    verdict.metrics["reference_gbps"] = reference
    verdict.metrics["plateau_fraction"] = round(fraction, 4)
    if fraction < used["min_busbw_fraction"]:
        message = (
            f"busbw {fraction:.0%} of line rate ({metrics['plateau_busbw_gbps']:.1f} of "
            f"{reference:.0f} GB/s at the largest messages)"
        )
        _fail(verdict, "fabric", "nic", message, "nccl_slow")


def check_storage(parsed: dict, used: dict, sku: SkuFacts, verdict: GateVerdict) -> None:
    jobs = parsed["fio"].metrics["jobs"]
    sla = {"read": used.get("min_read_mbps", 0), "write": used.get("min_write_mbps", 0)}
    measured = {"read": False, "write": False}
    for job in jobs:
        direction = {"read": "read", "randread": "read", "write": "write", "randwrite": "write"}
        side = direction.get(str(job["rw"]))
        if side is None:
            continue
        measured[side] = True
        mbps = job[f"{side}_mbps"]
        if mbps < sla[side]:
            message = f"{side} {mbps:.0f} MB/s, below the SLA of {sla[side]:g} MB/s"
            _fail(verdict, job["device"], "nvme", message, f"fio_{side}_slow")
    for side, done in measured.items():
        if sla[side] and not done:
            verdict.error = f"fio ran no {side} job; the SLA sets a {side} throughput"
    drives = len(parsed["fio"].metrics["devices"])
    if drives < sku.drive_count:
        _fail(
            verdict,
            "node",
            "nvme",
            f"fio tested {drives} of {sku.drive_count} drives",
            "drive_missing",
        )


def _judge_gpu_burn(parsed: dict, used: dict, sku: SkuFacts, verdict: GateVerdict) -> None:
    burn = parsed["gpu-burn"].metrics
    if burn["duration_s"] is not None and burn["duration_s"] < used.get("duration_s", 0):
        verdict.error = (
            f"gpu-burn ran {burn['duration_s']} s; the profile asks for {used['duration_s']:g} s"
        )
        return
    _check_gpu_count(burn["gpus_tested"], sku, verdict, "gpu-burn")


def check_reference_job(parsed: dict, used: dict, sku: SkuFacts, verdict: GateVerdict) -> None:
    """Every device trained at no less than the profile's MFU, against the profile's peak."""
    job = parsed["reference-job"].metrics
    peak = used.get("peak_tflops")
    given = {d["peak_tflops"] for d in job["devices"].values() if d["peak_tflops"] is not None}
    if peak is not None and given != {float(peak)}:
        verdict.error = (
            f"the reference job was given a peak of {sorted(given)} TFLOP/s; "
            f"the profile says {peak:g}"
        )
        return
    floor = used.get("min_mfu", 0)
    for name, device in sorted(job["devices"].items()):
        if device["mfu"] is None or device["mfu"] >= floor:
            continue
        part = f"GPU {name.split(':', 1)[1]}" if name.startswith("cuda:") else "node"
        message = (
            f"MFU {device['mfu']:.1%} below the profile's {floor:.0%} "
            f"({device['achieved_tflops']:.3g} of {device['peak_tflops']:g} TFLOP/s)"
        )
        _fail(verdict, part, "gpu" if part != "node" else "node", message, "mfu_low")
    _check_gpu_count(len(job["gpus"]), sku, verdict, "the reference job")


def check_burn_in(parsed: dict, used: dict, sku: SkuFacts, verdict: GateVerdict) -> None:
    _judge_gpu_burn(parsed, {}, sku, verdict)
    _judge_memory_health(parsed["nvidia-smi"], {}, verdict)
    limit = used.get("max_gpu_temp_c")
    for gpu in parsed["nvidia-smi"].metrics["gpus"]:
        if limit is not None and gpu["temp_c"] is not None and gpu["temp_c"] > limit:
            message = f"{gpu['temp_c']:.0f} C under load, above {limit:g} C"
            _fail(verdict, f"GPU {gpu['index']}", "gpu", message, "too_hot", gpu["serial"])
