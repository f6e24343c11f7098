"""Kernel log lines carrying NVRM Xid events, classified per NVIDIA's XID catalog.

    [ 8123.456789] NVRM: Xid (PCI:0000:18:00): 79, pid=2417, name=python3, GPU has fallen off the bus.

The PCI bus id names the GPU; given a bus-id map (from nvidia-smi or the inventory) the finding
says "GPU 3" and its serial instead of the bus id.

Real logs come in every timestamp style (dmesg relative, `dmesg -T` ctime, `dmesg --time-format
iso`, syslog, journal short-iso, raw /dev/kmsg records), and the driver does not always give an
Xid number: "GPU at 0000:01:00.0 has fallen off the bus" and its three-line form in newer drivers
name the dead GPU in words, which is read as XID 79. Xid 45 lines that say "caused by previous
Xid 149" name the real fault even when the cause's own line scrolled out of the log.
"""

from __future__ import annotations

import re
from collections import Counter

from .base import Finding, ParseResult, Severity, blank_reason, failed

TOOL = "xid"
XID_LINE = re.compile(
    r"NVRM: Xid \((?:PCI:)?(?P<bus>[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2})(?:\.\d)?\): "
    r"(?P<xid>\d+),(?P<rest>.*)$"
)
DMESG_TIME = re.compile(r"^\s*\[\s*(\d+\.\d+)\]")
# The timestamp styles of kernel logs, by name; the first that matches a line is its style.
TIMESTAMPS = {
    "relative": re.compile(r"^\s*\[\s*(\d+\.\d+)\]"),
    "ctime": re.compile(r"^\s*\[(\w{3} \w{3}\s+\d+ \d\d:\d\d:\d\d \d{4})\]"),
    "iso": re.compile(
        r"^(?:\w+\s*:\w+\s*: )?(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[,.]?\d*[+-]\d\d:?\d\d)"
    ),
    "syslog": re.compile(r"^(\w{3}\s+\d+\s+\d\d:\d\d:\d\d)\s"),
    "kmsg": re.compile(r"^\d+,\d+,(\d+),[^;]*;"),
}
# A line is kernel log if it carries one of those timestamps, "kernel:" or the driver's prefix.
KERNEL_LINE = re.compile(
    r"^\s*\[\s*\d+\.\d+\]|^\s*\[\w{3} \w{3}|kernel:|^\w{3}\s+\d+\s+\d\d:\d\d:\d\d"
    r"|^(?:\w+\s*:\w+\s*: )?\d{4}-\d\d-\d\dT|^\d+,\d+,\d+,[^;]*;|^\s*\[\s*T\d+\]"
)
# The driver names a GPU it lost in words: "GPU at 0000:01:00.0 has fallen off the bus." on one
# line, or "The NVIDIA GPU 0000:b3:00.0" ... "fallen off the bus" over three lines (R570+).
GPU_NAMED = re.compile(
    r"NVRM: (?:The NVIDIA )?GPU (?:at )?(?:PCI:)?([0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2})"
)
FALLEN_OFF = re.compile(r"fallen off the bus", re.IGNORECASE)
CAUSED_BY = re.compile(r"caused by previous Xid (\d+)")

# NVIDIA's XID catalog: events that mean the hardware (GPU, HBM, NVLink, GSP, board) is at fault.
HARDWARE_XIDS = {
    48: "double bit ECC error",
    54: "auxiliary power not connected",
    56: "display engine error",
    57: "error programming video memory interface",
    61: "internal micro-controller breakpoint",
    62: "internal micro-controller halt",
    64: "ECC page retirement or row remapping recording failure",
    74: "NVLink error",
    79: "fallen off the bus",
    92: "high single-bit ECC error rate",
    95: "uncontained ECC error",
    119: "GSP RPC timeout",
    120: "GSP error",
    121: "C2C link error",
    122: "SPI PMU RPC read failure",
    123: "SPI PMU RPC write failure",
    124: "SPI PMU RPC erase failure",
    136: "link training failure",
    140: "unrecovered ECC error",
    143: "GPU initialization failure",
    144: "NVLink SAW error",
    145: "NVLink RLW error",
    146: "NVLink TLW error",
    147: "NVLink TREX error",
    148: "NVLink NVLPW_CTRL error",
    149: "NVLink NETIR error",
    150: "NVLink MSE error",
    151: "key rotation error",
    155: "NVLink SW defined error",
}
NVLINK_XIDS = range(144, 151)
# These ask for a GPU reset: one occurrence is cleared by the reset; a recurrence is a fault.
RESET_XIDS = {
    63: "ECC page retirement or row remapping event (reset to apply)",
    94: "contained ECC error (reset to clear)",
}
# Raised by the application or the driver on behalf of one process: not a hardware fault.
APPLICATION_XIDS = {
    8: "GPU stopped processing (application or driver)",
    13: "graphics engine exception",
    31: "GPU memory page fault",
    32: "invalid or corrupted push buffer stream",
    38: "driver firmware error",
    43: "GPU stopped processing",
    45: "preemptive cleanup, due to previous errors",
    68: "NVDEC0 exception",
    69: "graphics engine class error",
    109: "context switch timeout",
}


def classify(xid: int) -> str:
    """Return hardware, reset, application or unknown for an XID number."""
    if xid in HARDWARE_XIDS:
        return "hardware"
    if xid in RESET_XIDS:
        return "reset"
    if xid in APPLICATION_XIDS:
        return "application"
    return "unknown"


def describe(xid: int) -> str:
    """Return the catalog's short meaning of an XID."""
    for table in (HARDWARE_XIDS, RESET_XIDS, APPLICATION_XIDS):
        if xid in table:
            return table[xid]
    return "not in the XID catalog known to Greenlight"


def parse(text: str, bus_ids: dict[str, dict] | None = None) -> ParseResult:
    """Parse a kernel log into XID events and findings.

    bus_ids maps a PCI bus id ("0000:18:00", any case, with or without ".0") to
    {"index": 3, "serial": "..."}.
    """
    reason = blank_reason(text)
    if reason:
        return failed(TOOL, reason)
    lookup = {_bus_key(k): v for k, v in (bus_ids or {}).items()}
    events: list[dict] = []
    kernel_lines = 0
    named_bus = None
    for line in text.splitlines():
        if KERNEL_LINE.search(line) or "NVRM" in line:
            kernel_lines += 1
        if "NVRM: Xid" not in line:
            if m := GPU_NAMED.search(line):
                named_bus = m.group(1)
            if FALLEN_OFF.search(line) and named_bus:
                events.append(_worded_event(named_bus, line, lookup))
                named_bus = None
            continue
        m = XID_LINE.search(line)
        if m is None:
            return failed(TOOL, f"unreadable Xid line (truncated?): {line.strip()[:120]}")
        event = _event(m, line, lookup)
        if cause := CAUSED_BY.search(event["detail"]):
            events.append(_cause_event(event, int(cause.group(1))))
        events.append(event)
    if kernel_lines == 0:
        return failed(TOOL, "no kernel log lines in the input")
    result = ParseResult(TOOL)
    result.findings = _findings(events)
    result.metrics = {
        "events": events,
        "hardware_xids": sorted({e["xid"] for e in events if e["class"] == "hardware"}),
        "reset_required_parts": sorted(
            {f.part for f in result.findings if f.severity == Severity.RESET_REQUIRED}
        ),
        "lines": kernel_lines,
    }
    return result


def _event(m: re.Match, line: str, lookup: dict[str, dict]) -> dict:
    return _make_event(int(m.group("xid")), m.group("bus"), line, m.group("rest").strip(), lookup)


def _worded_event(bus: str, line: str, lookup: dict[str, dict]) -> dict:
    """A GPU the driver says fell off the bus, with no Xid number: the same fault as XID 79."""
    return _make_event(79, bus, line, "fallen off the bus (reported in words, no Xid)", lookup)


def _cause_event(effect: dict, xid: int) -> dict:
    """The Xid that another Xid names as its cause; its own line may be gone from the log."""
    cause = dict(effect)
    cause.update(
        xid=xid, **{"class": classify(xid)}, detail=f"named as the cause of XID {effect['xid']}"
    )
    return cause


def _make_event(xid: int, bus: str, line: str, detail: str, lookup: dict[str, dict]) -> dict:
    bus = _short_bus(bus)
    gpu = lookup.get(_bus_key(bus), {})
    stamp = DMESG_TIME.match(line)
    style, when = timestamp(line)
    return {
        "xid": xid,
        "class": classify(xid),
        "bus_id": bus,
        "part": f"GPU {gpu['index']}" if "index" in gpu else f"GPU at PCI {bus}",
        "serial": str(gpu.get("serial") or ""),
        "time_s": float(stamp.group(1)) if stamp else None,
        "time_style": style,
        "time": when,
        "detail": detail,
    }


def timestamp(line: str) -> tuple[str, str]:
    """The style of a kernel log line's timestamp and the timestamp as written ("none", "")."""
    for style, pattern in TIMESTAMPS.items():
        if m := pattern.match(line):
            return style, m.group(1)
    return "none", ""


def _short_bus(bus: str) -> str:
    """'0000:01:00.0' and '0000:01:00' name the same GPU; keep the driver's Xid form."""
    return bus.lower().split(".")[0]


def _findings(events: list[dict]) -> list[Finding]:
    findings: list[Finding] = []
    reset_counts: Counter[tuple[str, int]] = Counter()
    reported: set[tuple[str, int]] = set()
    for event in events:
        key = (event["part"], event["xid"])
        kind = event["class"]
        if kind == "reset":
            reset_counts[key] += 1
            continue
        if key in reported or kind == "application":
            continue
        reported.add(key)
        what = describe(event["xid"])
        # NVLink Xids 144-150 carry the driver's own verdict; a "Nonfatal" one is a warning.
        nonfatal = event["xid"] in NVLINK_XIDS and "Nonfatal" in event["detail"]
        severity = Severity.WARNING if nonfatal else Severity.CRITICAL
        findings.append(_finding(event, f"XID {event['xid']} ({what})", severity, f"xid_{kind}"))
    for event in events:
        key = (event["part"], event["xid"])
        if event["class"] != "reset" or key in reported:
            continue
        reported.add(key)
        count = reset_counts[key]
        what = describe(event["xid"])
        if count > 1:
            message = f"XID {event['xid']} ({what}) recurred {count} times"
            findings.append(_finding(event, message, Severity.CRITICAL, "xid_reset_recurred"))
        else:
            message = f"XID {event['xid']} ({what}); reset the GPU before acceptance"
            findings.append(_finding(event, message, Severity.RESET_REQUIRED, "xid_reset"))
    return findings


def _finding(event: dict, message: str, severity: Severity, code: str) -> Finding:
    return Finding(
        part=event["part"],
        kind="gpu",
        message=f"{event['part']}: {message}",
        severity=severity,
        code=code,
        part_serial=event["serial"],
    )


def _bus_key(bus: str) -> str:
    """Normalise '00000000:18:00.0', '0000:18:00' and '18:00.0' to '18:00'."""
    parts = bus.lower().split(".")[0].split(":")
    return ":".join(parts[-2:])
