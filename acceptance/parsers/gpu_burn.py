"""gpu-burn's text output. It exits 0 even when a GPU is faulty, so only its output is judged.

The closing "Tested N GPUs:" block ("GPU 3: FAULTY") is authoritative; the progress lines give
Gflop/s, error counts and temperatures per GPU. An "OK" counts only with progress showing that GPU
did work: gpu-burn prints OK for GPUs whose test never started.
"""

from __future__ import annotations

import re

from .base import Finding, ParseResult, Severity, blank_reason, failed

TOOL = "gpu-burn"
BURNING = re.compile(r"Burning for (\d+) seconds")
UUID = re.compile(r"^GPU (\d+): (.+?) \(UUID: (GPU-[0-9a-fA-F-]+)\)")
TESTED = re.compile(r"^Tested (\d+) GPUs:")
VERDICT = re.compile(r"^GPU (\d+): (\w+)")
PROGRESS = re.compile(r"([\d.]+)%\s+proc'd:(.*?)errors:(.*?)temps:(.*?)(?=[\d.]+%\s+proc'd:|$)")
PROC = re.compile(r"(\d+) \(([\d.]+) Gflop/s\)")
ERRS = re.compile(r"(\d+)\s*(\(DIED!\)|\(WARNING!\))?")
TEMP = re.compile(r"(\d+|--) C")


def parse(text: str) -> ParseResult:
    """Parse gpu-burn output into per-GPU verdicts, throughput, errors and temperatures."""
    reason = blank_reason(text)
    if reason:
        return failed(TOOL, reason)
    lines = [line.strip() for line in text.replace("\r", "\n").splitlines()]
    gpus: dict[int, dict] = {}
    tested: int | None = None
    verdicts: dict[int, str] = {}
    progress = None
    duration = None
    for line in lines:
        if m := BURNING.search(line):
            duration = int(m.group(1))
        elif m := UUID.match(line):
            gpus[int(m.group(1))] = {"name": m.group(2), "uuid": m.group(3)}
        elif m := TESTED.match(line):
            tested = int(m.group(1))
        elif tested is not None and (m := VERDICT.match(line)):
            verdicts[int(m.group(1))] = m.group(2)
        for m in PROGRESS.finditer(line):
            progress = m
    aborted = any("No clients are alive" in line for line in lines)
    if tested is None and not aborted:
        return failed(TOOL, "truncated: no 'Tested N GPUs' summary at the end of the run")
    if tested is not None and len(verdicts) < tested:
        return failed(TOOL, f"truncated: {len(verdicts)} of {tested} GPU verdicts present")
    result = ParseResult(TOOL)
    per_gpu = _last_progress(progress)
    if verdicts and all(word == "OK" for word in verdicts.values()):
        idle = [k for k in verdicts if per_gpu.get(k, {}).get("iterations", 0) <= 0]
        if idle:
            # gpu-burn says OK for a GPU it never loaded (a test that failed to start, a run
            # killed before its first report): with no work done there is nothing to pass.
            return failed(TOOL, f"no evidence of work: GPU {idle[0]} reports OK with no iterations")
    result.metrics = {
        "duration_s": duration,
        "gpus_tested": tested if tested is not None else len(gpus),
        "verdicts": {str(k): v for k, v in sorted(verdicts.items())},
        "gpus": {
            str(k): {**gpus.get(k, {}), **per_gpu.get(k, {})} for k in _indexes(gpus, per_gpu)
        },
        "aborted": aborted,
    }
    for index, word in sorted(verdicts.items()):
        if word != "OK":
            result.findings.append(_faulty(index, f"gpu-burn reports {word}", per_gpu))
    if aborted and not verdicts:
        for index, stats in sorted(per_gpu.items()):
            if stats.get("died"):
                result.findings.append(_faulty(index, "gpu-burn worker died", per_gpu))
        if not result.findings:
            result.findings.append(
                Finding(
                    "node", "node", "node: gpu-burn aborted, no GPU alive", code="gpu_burn_died"
                )
            )
    return result


def _faulty(index: int, why: str, per_gpu: dict[int, dict]) -> Finding:
    errors = per_gpu.get(index, {}).get("errors")
    detail = f" ({errors} computation errors)" if errors else ""
    return Finding(
        part=f"GPU {index}",
        kind="gpu",
        message=f"GPU {index}: {why}{detail}",
        severity=Severity.CRITICAL,
        code="gpu_burn_faulty",
    )


def _last_progress(match: re.Match | None) -> dict[int, dict]:
    if match is None:
        return {}
    procs = PROC.findall(match.group(2))
    errors = [e for e in ERRS.findall(match.group(3)) if e[0]]
    temps = TEMP.findall(match.group(4))
    out: dict[int, dict] = {}
    for index, (count, gflops) in enumerate(procs):
        stats: dict = {"iterations": int(count), "gflops": float(gflops)}
        if index < len(errors):
            stats["errors"] = int(errors[index][0])
            stats["died"] = errors[index][1] == "(DIED!)"
        if index < len(temps) and temps[index] != "--":
            stats["temp_c"] = int(temps[index])
        out[index] = stats
    return out


def _indexes(*maps: dict) -> list[int]:
    return sorted({k for m in maps for k in m})
