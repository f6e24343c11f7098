"""The burn-in soak: telemetry samples through hours of load, stopped early by a hardware XID.

A sample is a dict: {"index", "t" (s since the soak began), "uptime_s" (the node's uptime, the
clock of dmesg timestamps), "gpus": [{"gpu", "temp_c", "power_w", "sm_clock_mhz",
"clocks_event_reasons": [...]} or {"gpu", "lost": True}]}.
"""

from __future__ import annotations

from typing import Any

from .choices import Verdict
from .parsers import xid
from .parsers.base import Finding, Severity
from .parsers.nvidia_smi import BAD_CLOCK_REASONS
from .verdicts import GateVerdict, conclude


def judge_soak(
    samples: list[dict[str, Any]],
    xid_text: str,
    used: dict[str, float],
    bus_ids: dict[str, dict] | None = None,
) -> GateVerdict:
    """Judge a soak so far; verdict fail with stopped_at_sample set means stop it now.

    An unfinished soak with no fault is an error ("incomplete"), never a pass.
    """
    verdict = GateVerdict(Verdict.ERROR, thresholds_used=used)
    if not samples:
        verdict.error = "no soak samples"
        return verdict
    parsed = xid.parse(xid_text, bus_ids=bus_ids)
    if parsed.error:
        verdict.error = f"xid: {parsed.error}"
        return verdict
    verdict.tool_versions["xid"] = ""
    serials = {v["index"]: str(v.get("serial") or "") for v in (bus_ids or {}).values()}
    stops = _telemetry_findings(samples, used, verdict, serials)
    stops += _xid_stops(parsed, samples, verdict)
    if stops:
        verdict.stopped_at_sample = min(stops)
    ran_s = samples[-1].get("t", 0)
    wanted_s = used["soak_hours"] * 3600
    verdict.metrics.update(
        {
            "samples": len(samples),
            "ran_s": ran_s,
            "wanted_s": wanted_s,
            "stopped_at_sample": verdict.stopped_at_sample,
            "max_temp_c": _max_temps(samples),
            "xid": parsed.metrics,
        }
    )
    conclude(verdict)
    if verdict.verdict == Verdict.PASS and ran_s < wanted_s:
        verdict.error = f"soak incomplete: {ran_s / 3600:.1f} of {used['soak_hours']:g} hours"
        verdict.verdict = Verdict.ERROR
    return verdict


def _telemetry_findings(
    samples: list[dict], used: dict, verdict: GateVerdict, serials: dict[int, str]
) -> list[int]:
    """Add one finding per GPU and problem (its first sample); return samples that stop the soak."""
    stops: list[int] = []
    seen: set[tuple[int, str]] = set()
    limit = used.get("max_gpu_temp_c")
    for position, sample in enumerate(samples):
        index = sample.get("index", position)
        when = f"at {sample.get('t', 0) / 3600:.1f} h"
        for gpu in sample.get("gpus", []):
            problems = []
            if gpu.get("lost"):
                problems.append(("lost", "stopped reporting (lost from the bus)"))
            temp = gpu.get("temp_c")
            if limit is not None and temp is not None and temp > limit:
                problems.append(("too_hot", f"{temp} C, above {limit:g} C"))
            for reason in gpu.get("clocks_event_reasons", []):
                if reason in BAD_CLOCK_REASONS:
                    problems.append(
                        ("throttle", f"clocks held down by {BAD_CLOCK_REASONS[reason]}")
                    )
            for code, text in problems:
                if code == "lost":
                    stops.append(index)
                if (gpu["gpu"], code) in seen:
                    continue
                seen.add((gpu["gpu"], code))
                part = f"GPU {gpu['gpu']}"
                message = f"{part}: {text} {when} into the soak"
                serial = serials.get(gpu["gpu"], "")
                finding = Finding(part, "gpu", message, Severity.CRITICAL, code, serial)
                verdict.findings.append(finding)
    return stops


def _xid_stops(parsed, samples: list[dict], verdict: GateVerdict) -> list[int]:
    """Add the XID findings; a hardware XID stops the soak at the first sample after it."""
    verdict.findings.extend(parsed.findings)
    stops = []
    last = samples[-1].get("index", len(samples) - 1)
    for event in parsed.metrics["events"]:
        if event["class"] not in ("hardware", "unknown"):
            continue
        stop = last
        if event["time_s"] is not None:
            later = [
                s.get("index", i)
                for i, s in enumerate(samples)
                if s.get("uptime_s") is not None and s["uptime_s"] >= event["time_s"]
            ]
            stop = later[0] if later else last
        stops.append(stop)
    return stops


def _max_temps(samples: list[dict]) -> dict[str, float]:
    hottest: dict[str, float] = {}
    for sample in samples:
        for gpu in sample.get("gpus", []):
            if gpu.get("temp_c") is not None:
                key = str(gpu["gpu"])
                hottest[key] = max(hottest.get(key, gpu["temp_c"]), gpu["temp_c"])
    return hottest
