"""Greenlight's own reference job output (`agent.reference_job`), format version 1.

    greenlight-reference-job 1
    model size=small layers=2 ... flops_per_step=94371840.0
    device name=cuda:0 kind=cuda dtype=bfloat16 peak_tflops=989.0 label=NVIDIA_H100
    step device=cuda:0 n=1 loss=5.37
    result device=cuda:0 steps=20 seconds=0.4 flops=... achieved_tflops=412.3 mfu=0.417 ...
    error device=cuda:3 message=CUDA_error:_an_illegal_memory_access_was_encountered
    end devices=8 results=7 errors=1

A device passes the parser only with evidence that it trained: a result with every step it was
asked for, a finite loss that fell, and achieved FLOP/s that agree with the FLOPs and the time.
Whether its MFU is enough is the gate's question (the profile's minimum).
"""

from __future__ import annotations

import math
import re

from .base import Finding, ParseResult, Severity, blank_reason, failed

TOOL = "reference-job"
HEADER = re.compile(r"^greenlight-reference-job (\d+)\s*$")
SUPPORTED = {1}
RECORD = re.compile(r"^(model|device|step|result|error|end)\b(.*)$")
FIELD = re.compile(r"(\w+)=(\S*)")


def parse(text: str) -> ParseResult:
    """Parse the reference job's records into per-device results and findings."""
    reason = blank_reason(text)
    if reason:
        return failed(TOOL, reason)
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    header = next((HEADER.match(line) for line in lines if HEADER.match(line)), None)
    if header is None:
        return failed(TOOL, "not reference job output: no 'greenlight-reference-job' header")
    if int(header.group(1)) not in SUPPORTED:
        return failed(TOOL, f"reference job output format {header.group(1)} is not understood")
    model: dict = {}
    devices: dict[str, dict] = {}
    end: dict | None = None
    for line in lines:
        m = RECORD.match(line)
        if m is None:
            continue
        kind, fields = m.group(1), _fields(m.group(2))
        if kind == "model":
            model = fields
        elif kind == "device":
            devices[fields.get("name", "?")] = {**fields, "steps_seen": 0, "state": "running"}
        elif kind == "step" and fields.get("device") in devices:
            devices[fields["device"]]["steps_seen"] += 1
        elif kind == "result" and fields.get("device") in devices:
            devices[fields["device"]].update(fields, state="result")
        elif kind == "error":
            devices.setdefault(fields.get("device", "?"), {"name": fields.get("device", "?")})
            devices[fields.get("device", "?")].update(
                state="error", message=line.split("message=", 1)[-1].replace("_", " ")
            )
        elif kind == "end":
            end = fields
    if not model or not devices:
        return failed(TOOL, "truncated: no model or device record")
    unfinished = [name for name, d in devices.items() if d.get("state") == "running"]
    if end is None or unfinished:
        where = f" (device {unfinished[0]} has no result)" if unfinished else ""
        return failed(TOOL, f"truncated: no 'end' record{where}")
    result = ParseResult(TOOL, version=str(header.group(1)))
    per_device = {}
    for name, device in devices.items():
        entry, problem = _device(name, device, model)
        per_device[name] = entry
        if problem:
            result.findings.append(_finding(name, problem))
    ran = [d for d in per_device.values() if d.get("mfu") is not None]
    result.metrics = {
        "size": model.get("size"),
        "model": model,
        "devices": per_device,
        "min_mfu": min((d["mfu"] for d in ran), default=None),
        "gpus": sorted(n for n, d in per_device.items() if d["kind"] == "cuda"),
    }
    return result


def _device(name: str, device: dict, model: dict) -> tuple[dict, str]:
    """One device's facts, and what is wrong with its run ("" when it trained)."""
    entry = {
        "kind": device.get("kind", "cuda" if name.startswith("cuda") else "cpu"),
        "dtype": device.get("dtype"),
        "label": device.get("label"),
        "peak_tflops": _float(device.get("peak_tflops")),
        "achieved_tflops": None,
        "mfu": None,
    }
    if device.get("state") == "error":
        return entry, f"reference job failed: {device.get('message', 'no message')}"
    steps = int(_float(device.get("steps")) or 0)
    loss_first, loss_last = _float(device.get("loss_first")), _float(device.get("loss_last"))
    seconds, flops = _float(device.get("seconds")), _float(device.get("flops"))
    achieved, mfu = _float(device.get("achieved_tflops")), _float(device.get("mfu"))
    entry.update(steps=steps, seconds=seconds, achieved_tflops=achieved, mfu=mfu,
                 loss_first=loss_first, loss_last=loss_last)  # fmt: skip
    numbers = (loss_first, loss_last, seconds, flops, achieved, mfu)
    if any(v is None or not math.isfinite(v) for v in numbers):
        return entry, "reference job gave a non-finite loss or timing (diverged or garbled)"
    if steps < 1 or device["steps_seen"] != steps:
        return entry, f"reference job reported {device['steps_seen']} of {steps} steps"
    if flops != _float(model.get("flops_per_step", 0)) * steps or seconds <= 0:
        return entry, "reference job FLOP count does not match its model"
    if not loss_last < loss_first:
        return entry, f"reference job did not train (loss {loss_first} -> {loss_last})"
    return entry, ""


def _finding(name: str, problem: str) -> Finding:
    part = f"GPU {name.split(':', 1)[1]}" if name.startswith("cuda:") else "node"
    return Finding(
        part=part,
        kind="gpu" if part != "node" else "node",
        message=f"{part}: {problem}",
        severity=Severity.CRITICAL,
        code="reference_job_failed",
    )


def _fields(rest: str) -> dict[str, str]:
    return dict(FIELD.findall(rest))


def _float(value: object) -> float | None:
    try:
        return float(str(value))
    except ValueError:
        return None
