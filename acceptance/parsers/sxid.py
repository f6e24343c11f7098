"""NVSwitch SXid lines from the kernel log, each naming the switch and its PCI address.

    [   25.948274] nvidia-nvswitch1: SXid (PCI:0000:02:00.0): 22013, Non-fatal, Link 00 ...
    [   25.950244] nvidia-nvswitch1: SXid (PCI:0000:02:00.0): 22013, Severity 0 Engine ...
    2025-01-25T10:34:54,859532+00:00 nvidia-nvswitch1: SXid (PCI:0000:84:00.0): 12028, Data {...}

One event prints several lines (the verdict, then severity and data); the first line with
"Fatal" or "Non-fatal" says how bad it is. An SXid whose lines say neither counts as fatal:
it cannot be shown harmless.
"""

from __future__ import annotations

import re

from .base import Finding, ParseResult, Severity, blank_reason, failed
from .xid import KERNEL_LINE

TOOL = "sxid"
SXID_LINE = re.compile(
    r"nvidia-nvswitch(?P<switch>\d*): SXid \(PCI:(?P<bus>[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:"
    r"[0-9a-fA-F]{2}\.\d)\): (?P<code>\d+), (?P<rest>.*)$"
)


def parse(text: str) -> ParseResult:
    """Parse a kernel log into SXid events per NVSwitch, fatal ones as critical findings."""
    reason = blank_reason(text)
    if reason:
        return failed(TOOL, reason)
    events: dict[tuple[str, int], dict] = {}
    kernel_lines = 0
    for line in text.splitlines():
        if KERNEL_LINE.search(line) or "nvswitch" in line:
            kernel_lines += 1
        if "SXid (" not in line:
            continue
        m = SXID_LINE.search(line)
        if m is None:
            return failed(TOOL, f"unreadable SXid line (truncated?): {line.strip()[:120]}")
        key = (m.group("bus").lower(), int(m.group("code")))
        event = events.setdefault(
            key,
            {
                "switch": f"NVSwitch {m.group('switch')}" if m.group("switch") else "NVSwitch",
                "bus_id": key[0],
                "sxid": key[1],
                "fatal": None,
                "lines": 0,
                "detail": "",
            },
        )
        event["lines"] += 1
        rest = m.group("rest")
        if event["fatal"] is None and re.match(r"(Non-fatal|Fatal)\b", rest):
            event["fatal"] = rest.startswith("Fatal")
            event["detail"] = rest
    if kernel_lines == 0:
        return failed(TOOL, "no kernel log lines in the input")
    result = ParseResult(TOOL)
    result.metrics = {"events": list(events.values()), "lines": kernel_lines}
    for event in events.values():
        part = f"{event['switch']} (PCI {event['bus_id']})"
        fatal = event["fatal"] is not False
        word = (
            "fatal"
            if event["fatal"]
            else ("non-fatal" if event["fatal"] is False else "unclassified")
        )
        result.findings.append(
            Finding(
                part=part,
                kind="nvswitch",
                message=f"{part}: SXid {event['sxid']} ({word}) {event['detail']}".rstrip(),
                severity=Severity.CRITICAL if fatal else Severity.WARNING,
                code="sxid_fatal" if fatal else "sxid_nonfatal",
            )
        )
    return result
