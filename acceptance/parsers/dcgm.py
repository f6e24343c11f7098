"""`dcgmi diag -r N -j` JSON (and, through dcgm_text, the plain-text table), in DCGM 3.x ("DCGM GPU Diagnostic") and 4.x ("DCGM Diagnostic") layouts.

3.x nests everything under "DCGM GPU Diagnostic" and names GPUs with "gpu_id"/"gpu_ids"; 4.x keeps
only test_categories under "DCGM Diagnostic", puts metadata and entity_groups (with serials) at the
root, names GPUs with entity_group/entity_id and adds a per-test test_summary.
"""

from __future__ import annotations

import re
from typing import Any

from . import dcgm_text
from .base import Finding, ParseResult, Severity, blank_reason, failed, load_json_object

TOOL = "dcgm"
GPU_IN_TEXT = re.compile(r"\bGPU (\d+)\b")
PASSED = {"pass"}
# Recognised and not a failure; anything else (including "Not Run" or a new word) is not a pass.
NEUTRAL = {"skip", "skipped", "warn", "warning"}

# Tests that only a given run level runs; the highest one present tells the level that ran.
LEVEL_TESTS = {
    4: {"memtest", "pulse_test", "eud", "eud_test", "cpu_eud", "nvbandwidth"},
    3: {"targeted_stress", "targeted_power", "memory_bandwidth", "diagnostic", "sm_stress"},
    2: {"pcie", "gpu_memory", "memory"},
}


def parse(text: str) -> ParseResult:
    """Parse `dcgmi diag -j` output of either layout."""
    reason = blank_reason(text)
    if reason:
        return failed(TOOL, reason)
    if "{" not in text and dcgm_text.looks_like_table(text):
        return dcgm_text.parse(text)
    data, reason = load_json_object(text)
    if data is None:
        return failed(TOOL, reason or "unreadable")
    if data.get("DCGM Diagnostic") == "DCGM Multi-Node Diagnostic":
        return failed(TOOL, "dcgmi mndiag output (the rack's multi-node run), not dcgmi diag")
    if "DCGM Diagnostic" in data:
        return _read(data, data["DCGM Diagnostic"], layout="4.x")
    if "DCGM GPU Diagnostic" in data:
        return _read(data, data["DCGM GPU Diagnostic"], layout="3.x")
    return failed(TOOL, "not dcgmi diag JSON: no 'DCGM Diagnostic' or 'DCGM GPU Diagnostic' key")


def _read(root: dict, body: Any, layout: str) -> ParseResult:
    if not isinstance(body, dict):
        return failed(TOOL, "diagnostic body is not an object")
    meta = root.get("metadata") if isinstance(root.get("metadata"), dict) else {}
    version = meta.get("version") or body.get("version") or root.get("version")
    driver = (
        meta.get("Driver Version Detected")
        or body.get("Driver Version Detected")
        or root.get("Driver Version Detected")
    )
    runtime_error = body.get("runtime_error") or root.get("runtime_error")
    if runtime_error:
        return ParseResult(TOOL, version, driver, error=f"dcgmi could not run: {runtime_error}")
    categories = body.get("test_categories")
    if not isinstance(categories, list) or not categories:
        return ParseResult(TOOL, version, driver, error="no test results in the output")
    serials = _serials(root, body)
    result = ParseResult(TOOL, version=version, driver_version=driver)
    tests: dict[str, dict[str, Any]] = {}
    gpus: set[int] = set()
    for category in categories:
        if not isinstance(category, dict):
            continue
        for test in category.get("tests") or []:
            if isinstance(test, dict):
                tests[_key(test.get("name"))] = _read_test(test, serials, result, gpus)
    if not tests:
        return ParseResult(TOOL, version, driver, error="no test results in the output")
    result.metrics = {
        "layout": layout,
        "level_inferred": _level(tests),
        "gpus": sorted(gpus),
        "tests": tests,
        "failed_tests": sorted(name for name, t in tests.items() if t["status"] == "fail"),
    }
    return result


def _read_test(test: dict, serials: dict[int, str], out: ParseResult, gpus: set[int]) -> dict:
    name = str(test.get("name") or "unnamed test")
    statuses: list[str] = []
    failed_gpus: list[int] = []
    for entry in test.get("results") or []:
        if not isinstance(entry, dict):
            continue
        status = str(entry.get("status", "")).strip().lower()
        statuses.append(status)
        ids = _gpu_ids(entry)
        gpus.update(ids)
        if status in PASSED or status in NEUTRAL:
            continue
        detail = _first_warning(entry) or f"status {entry.get('status')!r}"
        ids = _blamed(entry, ids)
        failed_gpus.extend(ids)
        for gpu in ids or [None]:
            out.findings.append(_finding(name, gpu, detail, serials))
    summary = test.get("test_summary")
    if isinstance(summary, dict) and "status" in summary:
        overall = str(summary["status"]).strip().lower()
        if overall not in PASSED | NEUTRAL and not failed_gpus:
            detail = _first_warning(summary) or f"status {summary['status']!r}"
            out.findings.append(_finding(name, None, detail, serials))
            statuses.append(overall)
    if not statuses:
        statuses = ["missing"]
        out.findings.append(_finding(name, None, "no result recorded", serials))
    bad = [s for s in statuses if s not in PASSED | NEUTRAL]
    status = "fail" if bad else ("pass" if any(s in PASSED for s in statuses) else "skip")
    return {"status": status, "failed_gpus": sorted(set(failed_gpus))}


def _finding(test: str, gpu: int | None, detail: str, serials: dict[int, str]) -> Finding:
    part = f"GPU {gpu}" if gpu is not None else "node"
    return Finding(
        part=part,
        kind="gpu" if gpu is not None else "node",
        message=f"{part}: DCGM {test} failed: {detail}",
        severity=Severity.CRITICAL,
        code="dcgm_test_failed",
        part_serial=serials.get(gpu, "") if gpu is not None else "",
    )


def _gpu_ids(entry: dict) -> list[int]:
    if "entity_id" in entry:
        if str(entry.get("entity_group", "GPU")).upper() != "GPU":
            return []
        return _ints(entry["entity_id"])
    return _ints(entry.get("gpu_id", entry.get("gpu_ids", "")))


def _ints(value: Any) -> list[int]:
    out = []
    for piece in str(value).split(","):
        piece = piece.strip()
        if piece.isdigit():
            out.append(int(piece))
    return out


def _blamed(entry: dict, ids: list[int]) -> list[int]:
    """Narrow a whole-node result (3.x software tests list every GPU) to the GPUs its warnings name."""
    if len(ids) < 2:
        return ids
    named = {int(n) for n in GPU_IN_TEXT.findall(" ".join(_warnings(entry)))}
    return sorted(named & set(ids)) or ids


def _warnings(entry: dict) -> list[str]:
    out = []
    for warning in entry.get("warnings") or []:
        if isinstance(warning, dict) and warning.get("warning"):
            out.append(str(warning["warning"]))
        elif isinstance(warning, str) and warning:
            out.append(warning)
    return out


def _first_warning(entry: dict) -> str:
    found = _warnings(entry)
    return found[0] if found else ""


def _serials(root: dict, body: dict) -> dict[int, str]:
    serials: dict[int, str] = {}
    for group in root.get("entity_groups") or []:
        if not isinstance(group, dict) or str(group.get("entity_group", "")).upper() != "GPU":
            continue
        for entity in group.get("entities") or []:
            serial = str(entity.get("serial_num", "")) if isinstance(entity, dict) else ""
            if serial and "NOT_SUPPORTED" not in serial and str(entity.get("entity_id")).isdigit():
                serials[int(entity["entity_id"])] = serial
    legacy = body.get("GPU Device Serials") or root.get("GPU Device Serials") or {}
    if isinstance(legacy, dict):
        for gpu, serial in legacy.items():
            if str(gpu).isdigit():
                serials.setdefault(int(gpu), str(serial))
    return serials


def _key(name: Any) -> str:
    return str(name or "unnamed").strip().lower().replace(" ", "_").replace("-", "_")


def _level(tests: dict[str, dict]) -> int:
    for level in (4, 3, 2):
        if LEVEL_TESTS[level] & set(tests):
            return level
    return 1
