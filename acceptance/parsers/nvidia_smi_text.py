"""`nvidia-smi -q` text: the same facts as `-q -x`, read from the indented "Key : Value" report.

    GPU 00000000:19:00.0
        Product Name                          : NVIDIA H100 80GB HBM3
        Remapped Rows
            Pending                           : No

Each GPU block of a full report ends with its "Processes" entry. A filtered report
(`-q -d PAGE_RETIREMENT`, `ECC`, `ROW_REMAPPER`, `PCIE`, ...) prints only the asked sections and
no "Processes": there every GPU block must hold the sections the first one holds. A report with
fewer GPU blocks than its "Attached GPUs" line, or a block short of its sections, is incomplete.

Pastes are read too: quote markers ("> ") are taken off, a trimmed banner is accepted when the
"Attached GPUs"/"Driver Version" lines and GPU headers remain, and elision lines ("[...]") are
counted. An incomplete report is an error naming what is missing, except that an elided paste
whose GPUs already show a fault may fail the node (nvidia_smi decides): it can never pass one.
"""

from __future__ import annotations

import re

from . import fabric_state
from .base import ParseResult, blank_reason, failed, is_elision, pasted_lines, to_float

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


TOP_KEY = re.compile(r"^(?:Attached GPUs|Driver Version)\s*:", re.MULTILINE)
# Sections whose presence says the GPU block is a full report, not a `-d` filtered one.
FULL_REPORT_KEYS = {"Product Name", "Processes"}


def looks_like_report(text: str) -> bool:
    """True when the text is the plain-text `nvidia-smi -q` report (or a paste of one)."""
    if BANNER in text[:2000]:
        return True
    lines = pasted_lines(text[:20000])
    return any(GPU_HEADER.match(line.strip()) for line in lines) and bool(
        TOP_KEY.search("\n".join(line.strip() for line in lines))
    )


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
    elisions = 0
    for line in pasted_lines(text):
        if not line.strip() or BANNER in line:
            continue
        if is_elision(line):
            elisions += 1
            continue
        if m := GPU_HEADER.match(line.strip()):
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
    # Findings are added by nvidia_smi (which imports this module), the same for XML and text.
    result = ParseResult(
        TOOL, version=top.get("Driver Version"), driver_version=top.get("Driver Version")
    )
    full = any(FULL_REPORT_KEYS & set(tree) for _, tree in blocks)
    result.metrics = {
        "cuda_version": top.get("CUDA Version"),
        "attached_gpus": attached or len(blocks),
        "filtered": None if full else sorted(blocks[0][1]),
        "elided_lines": elisions,
        "gpus": [_gpu(bus, tree, position) for position, (bus, tree) in enumerate(blocks)],
    }
    missing = _missing(blocks, attached, full)
    if missing:
        if not elisions:
            return failed(TOOL, f"truncated: {missing}")
        result.metrics["incomplete"] = f"the paste elides {elisions} part(s): {missing}"
    return result


def _missing(blocks: list[tuple[str, dict]], attached: int, full: bool) -> str:
    """Say what the report lacks: whole GPU blocks, or sections of a block; "" when complete."""
    if full:
        cut = [bus for bus, tree in blocks if "Processes" not in tree]
        complete = len(blocks) - len(cut)
        if complete < max(attached, len(blocks)):
            return f"{complete} complete GPU sections of {attached or len(blocks)}" + (
                f" (GPU {', '.join(cut)} without its Processes section)" if cut else ""
            )
        return ""
    expected = _paths(blocks[0][1])
    for bus, tree in blocks:
        lacking = expected - _paths(tree)
        if lacking:
            return f"GPU {bus} lacks {', '.join(sorted(lacking))}"
    if len(blocks) < attached:
        return f"{len(blocks)} GPU sections of {attached}"
    return ""


def _paths(tree: dict, prefix: str = "") -> set[str]:
    paths = set()
    for key, value in tree.items():
        path = f"{prefix}{key}"
        paths.add(path)
        if isinstance(value, dict):
            paths |= _paths(value, f"{path}/")
    return paths


def _gpu(bus: str, tree: dict, position: int) -> dict:
    minor = to_float(_get(tree, "Minor Number"))
    remap = tree.get("Remapped Rows") if isinstance(tree.get("Remapped Rows"), dict) else {}
    reasons = tree.get("Clocks Event Reasons") or tree.get("Clocks Throttle Reasons") or {}
    temperature = tree.get("Temperature") or {}
    power = tree.get("GPU Power Readings") or tree.get("Power Readings") or {}
    ecc = tree.get("ECC Errors") or {}
    retired = tree.get("Retired Pages") if isinstance(tree.get("Retired Pages"), dict) else {}
    # Every driver prints it inside the PCI section (535 to 580 alike): read at the GPU's top
    # level only, a -q report never said how its links trained.
    found_pci = tree.get("PCI")
    pci: dict = found_pci if isinstance(found_pci, dict) else {}
    found = pci.get("GPU Link Info") or tree.get("GPU Link Info")
    link: dict = found if isinstance(found, dict) else {}
    gen = link.get("PCIe Generation") or {}
    width = link.get("Link Width") or {}
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
        "retired_pages_sbe": int(to_float(_get(retired, "Single Bit ECC")) or 0),
        "retired_pages_dbe": int(to_float(_get(retired, "Double Bit ECC")) or 0),
        # Renamed across drivers: "Pending Page Blacklist", then "Pending Page Retirement".
        "retired_pages_pending": any(
            (_get(retired, key) or "").lower() == "yes"
            for key in ("Pending Page Blacklist", "Pending Page Retirement", "Pending")
        ),
        "pcie_gen_max": _int(_get(gen, "Max")),
        "pcie_gen_current": _int(_get(gen, "Current")),
        "pcie_width_max": _int(_get(width, "Max")),
        "pcie_width_current": _int(_get(width, "Current")),
        "performance_state": _get(tree, "Performance State"),
        # "Gpu" until the 570 drivers, "GPU" in 580's.
        "utilization_gpu_percent": to_float(
            _get(tree.get("Utilization"), "Gpu") or _get(tree.get("Utilization"), "GPU")
        ),
        "fabric": fabric_state.from_text(tree),
    }


def _int(value: str | None) -> int | None:
    """Read '16x', '4', 'N/A' (None)."""
    number = to_float((value or "").rstrip("x")) if value else None
    return int(number) if number is not None else None


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
