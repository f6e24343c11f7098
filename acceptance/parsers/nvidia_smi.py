"""`nvidia-smi -q -x` XML (and, through nvidia_smi_text, the `-q` text report): per GPU identity, ECC counters, remapped rows, clock event reasons,
temperatures and power.

Driver R535 renamed clocks_throttle_reasons to clocks_event_reasons (and every child element);
both are read. ECC counters changed shape too (single_bit/double_bit totals before Hopper,
sram_*/dram_* after), so any counter under ecc_errors whose name says "uncorrectable" or
"double_bit" counts.
"""

from __future__ import annotations

from xml.etree.ElementTree import Element, ParseError

from defusedxml import DefusedXmlException
from defusedxml.ElementTree import fromstring

from . import nvidia_smi_text
from .base import Finding, ParseResult, Severity, blank_reason, failed, to_float

TOOL = "nvidia-smi"
# Clock event reasons that mean the hardware protected itself. SwPowerCap (sw_power_cap) at full
# load is the GPU holding its power limit, which is normal; these are not.
BAD_CLOCK_REASONS = {
    "hw_slowdown": "HW slowdown",
    "hw_thermal_slowdown": "HW thermal slowdown",
    "hw_power_brake_slowdown": "HW power brake slowdown",
    "sw_thermal_slowdown": "SW thermal slowdown",
}


def parse(text: str) -> ParseResult:
    """Parse `nvidia-smi -q -x` into per-GPU health and findings for throttling and remap failure."""
    reason = blank_reason(text)
    if reason:
        return failed(TOOL, reason)
    if nvidia_smi_text.looks_like_report(text):
        result = nvidia_smi_text.parse(text)
        for facts in result.metrics.get("gpus", []):
            result.findings.extend(_findings(facts))
        return result
    try:
        root = fromstring(text.strip().encode())
    except (ParseError, DefusedXmlException) as exc:
        return failed(TOOL, f"not readable XML (truncated or garbage): {exc}")
    if root.tag != "nvidia_smi_log":
        return failed(TOOL, f"not nvidia-smi -q -x output: root element <{root.tag}>")
    gpus = root.findall("gpu")
    if not gpus:
        return failed(TOOL, "no <gpu> element in nvidia-smi output")
    result = ParseResult(
        TOOL,
        version=_text(root, "driver_version"),
        driver_version=_text(root, "driver_version"),
    )
    per_gpu = []
    for position, gpu in enumerate(gpus):
        facts = _gpu(gpu, position)
        per_gpu.append(facts)
        result.findings.extend(_findings(facts))
    result.metrics = {
        "cuda_version": _text(root, "cuda_version"),
        "attached_gpus": int(to_float(_text(root, "attached_gpus")) or len(gpus)),
        "gpus": per_gpu,
    }
    return result


def _gpu(gpu: Element, position: int) -> dict:
    index = to_float(_text(gpu, "minor_number"))
    reasons = gpu.find("clocks_event_reasons")
    if reasons is None:
        reasons = gpu.find("clocks_throttle_reasons")
    power = gpu.find("gpu_power_readings")
    if power is None:
        power = gpu.find("power_readings")
    return {
        "index": int(index) if index is not None else position,
        "bus_id": (gpu.get("id") or _text(gpu, "pci/pci_bus_id") or "").lower(),
        "serial": _text(gpu, "serial"),
        "uuid": _text(gpu, "uuid"),
        "product": _text(gpu, "product_name"),
        "ecc_volatile_uncorrectable": _uncorrectable(gpu.find("ecc_errors/volatile")),
        "ecc_aggregate_uncorrectable": _uncorrectable(gpu.find("ecc_errors/aggregate")),
        "remapped_rows_uncorrectable": int(
            to_float(_text(gpu, "remapped_rows/remapped_row_unc")) or 0
        ),
        "remapped_rows_pending": _yes(_text(gpu, "remapped_rows/remapped_row_pending")),
        "remapped_rows_failure": _yes(_text(gpu, "remapped_rows/remapped_row_failure")),
        "clock_reasons_active": _active_reasons(reasons),
        "temp_c": to_float(_text(gpu, "temperature/gpu_temp")),
        "memory_temp_c": to_float(_text(gpu, "temperature/memory_temp")),
        "power_w": to_float(
            _text(power, "power_draw") or _text(power, "instant_power_draw")
            if power is not None
            else None
        ),
        "power_limit_w": to_float(
            _text(power, "current_power_limit") if power is not None else None
        ),
    }


def _findings(gpu: dict) -> list[Finding]:
    part = f"GPU {gpu['index']}"

    def finding(message: str, code: str) -> Finding:
        return Finding(part, "gpu", f"{part}: {message}", Severity.CRITICAL, code, gpu["serial"])

    out = []
    if gpu["ecc_volatile_uncorrectable"] or gpu["ecc_aggregate_uncorrectable"]:
        out.append(
            finding(
                f"{gpu['ecc_volatile_uncorrectable']} volatile / "
                f"{gpu['ecc_aggregate_uncorrectable']} aggregate uncorrectable ECC errors",
                "ecc_uncorrectable",
            )
        )
    if gpu["remapped_rows_pending"]:
        out.append(finding("row remap pending (reset the GPU to apply it)", "row_remap_pending"))
    if gpu["remapped_rows_failure"]:
        out.append(finding("row remapping failed (no spare rows left)", "row_remap_failure"))
    for reason in gpu["clock_reasons_active"]:
        if reason in BAD_CLOCK_REASONS:
            out.append(finding(f"clocks held down by {BAD_CLOCK_REASONS[reason]}", "throttle"))
    return out


def _active_reasons(reasons: Element | None) -> list[str]:
    if reasons is None:
        return []
    active = []
    for child in reasons:
        if (child.text or "").strip() == "Active":
            name = child.tag.removeprefix("clocks_event_reason_")
            active.append(name.removeprefix("clocks_throttle_reason_"))
    return active


def _uncorrectable(section: Element | None) -> int:
    if section is None:
        return 0
    total = 0
    for element in section.iter():
        tag = element.tag
        counts = "uncorrectable" in tag or (
            tag == "total" and _parent_is_double_bit(section, element)
        )
        if counts:
            total += int(to_float(element.text) or 0)
    return total


def _parent_is_double_bit(section: Element, element: Element) -> bool:
    double_bit = section.find("double_bit")
    return double_bit is not None and element in list(double_bit)


def _text(element: Element | None, path: str) -> str | None:
    if element is None:
        return None
    found = element.find(path)
    if found is None or found.text is None:
        return None
    value = found.text.strip()
    return None if value in {"", "N/A", "[N/A]"} else value


def _yes(value: str | None) -> bool:
    return (value or "").strip().lower() == "yes"
