"""PCIe Advanced Error Reporting lines from the kernel log, naming the device at fault.

    pcieport 0000:00:02.0: AER: Uncorrected (Non-Fatal) error received: 0000:01:00.0
    r8169 0000:01:00.0: AER: PCIe Bus Error: severity=Uncorrected (Non-Fatal), type=Transaction ...
    r8169 0000:01:00.0: AER:    [14] CmpltTO                (First)

The "error received" line comes from the root port and names the reporting device after the
colon; the "PCIe Bus Error" line is printed by the device itself, with its driver's name. A
corrected error is a warning (the link recovered); an uncorrected one, fatal or not, fails.

Kernels since 6.x say it the PCIe spec's way: "AER: Correctable error message received from
0000:00:03.1", "severity=Correctable", "Uncorrectable (Non-Fatal)". Both wordings are read alike.
"""

from __future__ import annotations

import re

from .base import Finding, ParseResult, Severity, blank_reason, failed
from .xid import KERNEL_LINE

TOOL = "aer"
BDF = r"[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.\d"
SEVERITY = r"Correct(?:ed|able)|Uncorrect(?:ed|able) \((?:Non-Fatal|Fatal)\)"
RECEIVED = re.compile(
    rf"AER: (?:Multiple )?(?P<sev>{SEVERITY}) error "
    rf"(?:message )?received(?: from)?(?: id=\S+)?:? ?(?P<dev>{BDF})?"
)
BUS_ERROR = re.compile(
    rf"(?P<driver>[\w-]+) (?P<dev>{BDF}): (?:AER: )?PCIe Bus Error: severity=(?P<sev>[^,]+), "
    r"type=(?P<type>[^,]+)"
)
# The start of an error record; a line that starts one but is not readable was cut.
ERROR_START = re.compile(r"AER: (?:Multiple |Uncorr|Correc)|PCIe Bus Err")
STATUS_BIT = re.compile(rf"(?P<dev>{BDF}): (?:AER: )?\s*\[\s*(?P<bit>\d+)\] (?P<name>\w+)")
# The part kind a driver's name implies.
DRIVER_KINDS = {"nvidia": "gpu", "mlx5_core": "nic", "nvme": "nvme", "nvidia-nvswitch": "nvswitch"}


def parse(text: str) -> ParseResult:
    """Parse a kernel log into AER errors per device."""
    reason = blank_reason(text)
    if reason:
        return failed(TOOL, reason)
    devices: dict[str, dict] = {}
    kernel_lines = 0
    for line in text.splitlines():
        if KERNEL_LINE.search(line) or re.search(rf"\b{BDF}: ", line):
            kernel_lines += 1
        if m := BUS_ERROR.search(line):
            device = _device(devices, m.group("dev"))
            device["driver"] = m.group("driver")
            device["severity"] = _worse(device["severity"], _severity(m.group("sev")))
            device["type"] = m.group("type").strip()
        elif m := RECEIVED.search(line):
            if m.group("dev"):
                device = _device(devices, m.group("dev"))
                device["severity"] = _worse(device["severity"], _severity(m.group("sev")))
        elif ERROR_START.search(line):
            return failed(TOOL, f"unreadable AER error line (truncated?): {line.strip()[:120]}")
        if m := STATUS_BIT.search(line):
            names = _device(devices, m.group("dev"))["errors"]
            if m.group("name") not in names:
                names.append(m.group("name"))
    if kernel_lines == 0:
        return failed(TOOL, "no kernel log lines in the input")
    # Boot logs mention AER without an error ("AER: enabled with IRQ 28"); only an error record
    # that names no device is unreadable.
    if not devices and re.search(r"error (?:message )?received|PCIe Bus Error", text):
        return failed(TOOL, "AER error lines present but none could be read (truncated?)")
    result = ParseResult(TOOL)
    result.metrics = {"devices": devices, "lines": kernel_lines}
    for bdf, device in sorted(devices.items()):
        if device["severity"] is None:
            continue
        part = f"PCIe {bdf}" + (f" ({device['driver']})" if device["driver"] else "")
        errors = ", ".join(device["errors"]) or "no status bits shown"
        corrected = device["severity"] == "corrected"
        result.findings.append(
            Finding(
                part=part,
                kind=DRIVER_KINDS.get(device["driver"], "pcie"),
                message=f"{part}: PCIe AER {device['severity']} error ({errors})",
                severity=Severity.WARNING if corrected else Severity.CRITICAL,
                code="aer_corrected" if corrected else "aer_uncorrected",
            )
        )
    return result


def _device(devices: dict[str, dict], bdf: str) -> dict:
    return devices.setdefault(
        bdf.lower(), {"driver": "", "severity": None, "type": "", "errors": []}
    )


def _severity(word: str) -> str:
    word = word.strip().lower()
    # "Corrected" (older kernels) or "Correctable" (6.x); never "Uncorrectable".
    if word.startswith("correct"):
        return "corrected"
    return "fatal" if "(fatal)" in word else "non-fatal"


RANK = {None: 0, "corrected": 1, "non-fatal": 2, "fatal": 3}


def _worse(a: str | None, b: str) -> str:
    return a if RANK[a] >= RANK[b] else b
