"""`nvidia-smi -q` text: the same facts as `-q -x`, read from the indented "Key : Value" report.

    GPU 00000000:19:00.0
        Product Name                          : NVIDIA H100 80GB HBM3
        Remapped Rows
            Pending                           : No

Each GPU block ends with its "Processes" entry; a report with fewer complete blocks than its
"Attached GPUs" line was cut short and is an error.
"""

from __future__ import annotations

import re

from .base import ParseResult, blank_reason, failed, to_float

TOOL = "nvidia-smi"
BANNER = "==============NVSMI LOG=============="
GPU_HEADER = re.compile(r"^GPU ([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.\d)\s*$")
ENTRY = re.compile(r"^(?P<indent> *)(?P<key>[^:]+?)\s*(?::\s*(?P<value>.*))?$")
# Text names of clock event reasons, mapped to the XML names the judge knows.
REASONS = {
    "SW Power Cap": "sw_power_cap",
    "HW Slowdown": "hw_slowdown",
    "HW Thermal Slowdown": "hw_thermal_slowdown",
    "HW Power Brake Slowdown": "hw_power_brake_slowdown",
    "SW Thermal Slowdown": "sw_thermal_slowdown",
}


def looks_like_report(text: str) -> bool:
    """True when the text is the plain-text `nvidia-smi -q` report."""
    return BANNER in text[:2000]


def parse(text: str) -> ParseResult:
    """Parse the `nvidia-smi -q` text report into per-GPU health (the XML parser's shape)."""
    reason = blank_reason(text)
    if reason:
        return failed(TOOL, reason)
    if not looks_like_report(text):
        return failed(TOOL, "not nvidia-smi -q output: no NVSMI LOG banner")
    top: dict[str, str] = {}
    blocks: list[tuple[str, dict]] = []
    stack: list[tuple[int, dict]] = []
    for line in text.splitlines():
        if not line.strip() or BANNER in line:
            continue
        if m := GPU_HEADER.match(line):
            tree: dict = {}
            blocks.append((m.group(1), tree))
            stack = [(0, tree)]
            continue
        m = ENTRY.match(line)
        if m is None:
            continue
        indent, key, value = len(m.group("indent")), m.group("key").strip(), m.group("value")
        if not blocks:
            if value is not None:
                top[key] = value.strip()
            continue
        while len(stack) > 1 and stack[-1][0] >= indent:
            stack.pop()
        parent = stack[-1][1]
        if value is None or value.strip() == "":
            child: dict = {}
            parent[key] = child
            stack.append((indent, child))
        else:
            parent[key] = value.strip()
    attached = int(to_float(top.get("Attached GPUs")) or 0)
    if not blocks:
        return failed(TOOL, "no GPU section in the nvidia-smi -q report")
    complete = [b for b in blocks if "Processes" in b[1]]
    if len(complete) < max(attached, len(blocks)):
        return failed(
            TOOL, f"truncated: {len(complete)} complete GPU sections of {attached or len(blocks)}"
        )
    # Findings are added by nvidia_smi (which imports this module), the same for XML and text.
    result = ParseResult(
        TOOL, version=top.get("Driver Version"), driver_version=top.get("Driver Version")
    )
    result.metrics = {
        "cuda_version": top.get("CUDA Version"),
        "attached_gpus": attached or len(blocks),
        "gpus": [_gpu(bus, tree, position) for position, (bus, tree) in enumerate(blocks)],
    }
    return result


def _gpu(bus: str, tree: dict, position: int) -> dict:
    minor = to_float(_get(tree, "Minor Number"))
    remap = tree.get("Remapped Rows") if isinstance(tree.get("Remapped Rows"), dict) else {}
    reasons = tree.get("Clocks Event Reasons") or tree.get("Clocks Throttle Reasons") or {}
    temperature = tree.get("Temperature") or {}
    power = tree.get("GPU Power Readings") or tree.get("Power Readings") or {}
    ecc = tree.get("ECC Errors") or {}
    return {
        "index": int(minor) if minor is not None else position,
        "bus_id": bus.lower(),
        "serial": _get(tree, "Serial Number"),
        "uuid": _get(tree, "GPU UUID"),
        "product": _get(tree, "Product Name"),
        "ecc_volatile_uncorrectable": _uncorrectable(ecc.get("Volatile")),
        "ecc_aggregate_uncorrectable": _uncorrectable(ecc.get("Aggregate")),
        "remapped_rows_uncorrectable": int(to_float(_get(remap, "Uncorrectable Error")) or 0),
        "remapped_rows_pending": (_get(remap, "Pending") or "").lower() == "yes",
        "remapped_rows_failure": (_get(remap, "Remapping Failure Occurred") or "").lower() == "yes",
        "clock_reasons_active": [
            REASONS[k] for k, v in reasons.items() if k in REASONS and v == "Active"
        ]
        if isinstance(reasons, dict)
        else [],
        "temp_c": to_float(_get(temperature, "GPU Current Temp")),
        "memory_temp_c": to_float(_get(temperature, "Memory Current Temp")),
        "power_w": to_float(
            _get(power, "Power Draw")
            or _get(power, "Average Power Draw")
            or _get(power, "Instantaneous Power Draw")
        ),
        "power_limit_w": to_float(_get(power, "Current Power Limit") or _get(power, "Power Limit")),
    }


def _get(tree: object, key: str) -> str | None:
    if not isinstance(tree, dict):
        return None
    value = tree.get(key)
    if not isinstance(value, str) or value in {"", "N/A", "[N/A]"}:
        return None
    return value


def _uncorrectable(section: object) -> int:
    """Sum every counter whose name says uncorrectable or double bit (the per-generation names)."""
    if not isinstance(section, dict):
        return 0
    total = 0
    for key, value in section.items():
        if isinstance(value, dict):
            if "double bit" in key.lower():
                total += int(to_float(_get(value, "Total")) or 0)
            continue
        if "uncorrectable" in key.lower():
            total += int(to_float(value if value != "N/A" else None) or 0)
    return total
