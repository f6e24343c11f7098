"""`nvidia-smi -q -x` XML (and, through nvidia_smi_text, the `-q` text report): per GPU identity, ECC counters, remapped rows, clock event reasons,
temperatures and power.

Driver R535 renamed clocks_throttle_reasons to clocks_event_reasons (and every child element);
both are read. ECC counters changed shape too (single_bit/double_bit totals before Hopper,
sram_*/dram_* after), so any counter under ecc_errors whose name says "uncorrectable" or
"double_bit" counts.

Each finding names the GPU by index, bus id and serial. Retired pages pending (pre-Ampere) and
row remapping pending fail the GPU. A PCIe link narrower or slower than its maximum fails the
GPU only under load: an idle GPU drops its link to Gen1 to save power, so an idle generation
says nothing about the link's training. NVIDIA documents that an unused GPU may narrow its link
too, and an idle report cannot tell that from a slot wired or trained narrow: an idle link
narrower than its maximum is a warning naming the GPU (read it again under load), neither
silence nor a failure.

Each GPU's NVLink fabric facts are kept (parsers.fabric_state): a registration that completed
with a failure status, or bad fabric health, fails the GPU; a registration still in progress is
a warning. One clique across a rack is acceptance.rack_fabric's rule, not one node's.
"""

from __future__ import annotations

from xml.etree.ElementTree import Element, ParseError

from defusedxml import DefusedXmlException
from defusedxml.ElementTree import fromstring

from . import fabric_state, nvidia_smi_text
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
# Fabric states of a GPU the fabric manager has not (yet) registered.
NOT_REGISTERED = {"in progress", "not started"}


def parse(text: str) -> ParseResult:
    """Parse `nvidia-smi -q -x` into per-GPU health and findings for throttling and remap failure."""
    reason = blank_reason(text)
    if reason:
        return failed(TOOL, reason)
    if nvidia_smi_text.looks_like_report(text):
        result = nvidia_smi_text.parse(text)
        for facts in result.metrics.get("gpus", []):
            result.findings.extend(_findings(facts))
        # An elided paste can fail a node on the faults it shows, never pass it.
        incomplete = result.metrics.get("incomplete")
        if incomplete and not any(f.severity == Severity.CRITICAL for f in result.findings):
            return failed(TOOL, f"incomplete: {incomplete}")
        return result
    if not text.lstrip().startswith("<"):
        # A grep of the report (its Fabric lines, say) names no GPU: nothing to judge it by.
        return failed(TOOL, "not nvidia-smi -q output: no NVSMI LOG banner or GPU section")
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
        "retired_pages_sbe": int(
            to_float(_text(gpu, "retired_pages/multiple_single_bit_retirement/retired_count")) or 0
        ),
        "retired_pages_dbe": int(
            to_float(_text(gpu, "retired_pages/double_bit_retirement/retired_count")) or 0
        ),
        "retired_pages_pending": _yes(_text(gpu, "retired_pages/pending_blacklist"))
        or _yes(_text(gpu, "retired_pages/pending_retirement")),
        "pcie_gen_max": _link(gpu, "pcie_gen/max_link_gen"),
        "pcie_gen_current": _link(gpu, "pcie_gen/current_link_gen"),
        "pcie_width_max": _link(gpu, "link_widths/max_link_width"),
        "pcie_width_current": _link(gpu, "link_widths/current_link_width"),
        "performance_state": _text(gpu, "performance_state"),
        "utilization_gpu_percent": to_float(_text(gpu, "utilization/gpu_util")),
        "fabric": fabric_state.from_xml(gpu),
    }


def _link(gpu: Element, path: str) -> int | None:
    value = to_float((_text(gpu, f"pci/pci_gpu_link_info/{path}") or "").rstrip("x") or None)
    return int(value) if value is not None else None


def _under_load(gpu: dict) -> bool:
    """The GPU is working: P0 or any utilization (an idle GPU sits in P8 at 0 %)."""
    return gpu.get("performance_state") == "P0" or (gpu.get("utilization_gpu_percent") or 0) > 0


def _findings(gpu: dict) -> list[Finding]:
    part = f"GPU {gpu['index']}"
    named = f"{part} ({gpu['bus_id']})" if gpu["bus_id"] else part

    def finding(message: str, code: str, severity: Severity = Severity.CRITICAL) -> Finding:
        return Finding(part, "gpu", f"{named}: {message}", severity, code, gpu["serial"])

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
    if gpu.get("retired_pages_pending"):
        out.append(
            finding(
                f"retired pages pending ({gpu['retired_pages_sbe']} single bit, "
                f"{gpu['retired_pages_dbe']} double bit retired; reset the GPU to retire them)",
                "retired_pages_pending",
            )
        )
    out.extend(_link_findings(gpu, finding))
    out.extend(_fabric_findings(gpu, finding))
    for reason in gpu["clock_reasons_active"]:
        if reason in BAD_CLOCK_REASONS:
            out.append(finding(f"clocks held down by {BAD_CLOCK_REASONS[reason]}", "throttle"))
    return out


def _link_findings(gpu: dict, finding) -> list[Finding]:
    out: list[Finding] = []
    width, width_max = gpu.get("pcie_width_current"), gpu.get("pcie_width_max")
    narrow = bool(width and width_max and width < width_max)
    if not _under_load(gpu):
        if narrow:
            state = gpu.get("performance_state")
            idle = f"while idle ({state})" if state else "while idle"
            message = f"PCIe link at x{width} of x{width_max} {idle}; read it under load"
            out.append(finding(message, "pcie_width_idle", Severity.WARNING))
        return out
    if narrow:
        out.append(finding(f"PCIe link trained at x{width} of x{width_max}", "pcie_width_degraded"))
    gen, gen_max = gpu.get("pcie_gen_current"), gpu.get("pcie_gen_max")
    if gen and gen_max and gen < gen_max:
        out.append(
            finding(f"PCIe link at Gen{gen} of Gen{gen_max} under load", "pcie_gen_degraded")
        )
    return out


def _fabric_findings(gpu: dict, finding) -> list[Finding]:
    """What one node can see of its NVLink fabric; the rack-wide rules are acceptance.rack_fabric."""
    fabric = gpu.get("fabric")
    if not fabric:
        return []
    out = [finding(fault, "fabric_unhealthy") for fault in fabric_state.faults(fabric)]
    state = (fabric.get("state") or "").lower()
    if state in NOT_REGISTERED:
        # The fabric manager may still be at work on a node just booted: a rack gate requires
        # Completed, a single node is told to look again.
        message = f"NVLink fabric registration {fabric['state']} (not completed)"
        out.append(finding(message, "fabric_not_ready", Severity.WARNING))
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
