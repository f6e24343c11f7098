"""nvbandwidth's text output: one matrix per testcase, each closed by a "SUM <testcase> <GB/s>" line."""

from __future__ import annotations

import re

from .base import ParseResult, blank_reason, failed

TOOL = "nvbandwidth"
VERSION = re.compile(r"^nvbandwidth Version:\s*(\S+)")
DRIVER = re.compile(r"^Driver Version:\s*(\S+)")
DEVICE = re.compile(r"^Device\s+(\d+):\s*(.+?)\s*\(([0-9a-fA-F:.]+)\)\s*$")
RUNNING = re.compile(r"^Running\s+(\S+?)\.?$")
SUM = re.compile(r"^SUM\s+(\S+)\s+([\d.]+)")
WAIVED = re.compile(r"^Waived", re.IGNORECASE)


def parse(text: str) -> ParseResult:
    """Parse nvbandwidth text into a matrix and SUM per testcase."""
    reason = blank_reason(text)
    if reason:
        return failed(TOOL, reason)
    result = ParseResult(TOOL)
    devices: dict[str, dict[str, str]] = {}
    testcases: dict[str, dict] = {}
    current: dict | None = None
    for raw in text.splitlines():
        line = raw.strip()
        if m := VERSION.match(line):
            result.version = m.group(1)
        elif m := DRIVER.match(line):
            result.driver_version = m.group(1)
        elif m := DEVICE.match(line):
            devices[m.group(1)] = {"name": m.group(2), "bus_id": m.group(3).lower()}
        elif m := RUNNING.match(line):
            current = {"description": "", "columns": [], "matrix": {}, "sum": None, "status": ""}
            testcases[m.group(1)] = current
        elif current is None:
            continue
        elif m := SUM.match(line):
            if m.group(1) in testcases:
                testcases[m.group(1)]["sum"] = float(m.group(2))
                testcases[m.group(1)]["status"] = "ok"
        elif WAIVED.match(line):
            current["status"] = "waived"
        elif "bandwidth (GB/s)" in line:
            current["description"] = line
        elif line and all(c.isdigit() for c in line.split()):
            current["columns"] = line.split()
        elif line and current["columns"] and line.split()[0].isdigit():
            if len(line.split()) != len(current["columns"]) + 1:
                current["cut"] = True
                continue
            _read_row(line.split(), current)
    if not testcases:
        return failed(TOOL, "no nvbandwidth testcase in the output")
    # Releases before v0.4 printed no SUM lines: a complete matrix is then all there is.
    sums = any(t["sum"] is not None for t in testcases.values())
    if not sums:
        for testcase in testcases.values():
            if testcase["matrix"] and not testcase["status"] and not testcase.get("cut"):
                testcase["status"] = "ok"
                testcase["sum"] = round(_matrix_sum(testcase["matrix"]), 2)
    unfinished = [name for name, t in testcases.items() if not t["status"]]
    if unfinished:
        missing = "has no SUM line" if sums else "has a cut or empty matrix"
        return failed(TOOL, f"truncated: testcase {unfinished[-1]} {missing}")
    result.metrics = {
        "layout": "sum" if sums else "no-sum",
        "devices": devices,
        "testcases": {name: _public(t) for name, t in testcases.items()},
    }
    return result


def _matrix_sum(matrix: dict[str, dict[str, float | None]]) -> float:
    return sum(v for row in matrix.values() for v in row.values() if v is not None)


def _read_row(cells: list[str], testcase: dict) -> None:
    row = cells[0]
    values: dict[str, float | None] = {}
    for column, cell in zip(testcase["columns"], cells[1:], strict=False):
        try:
            values[column] = float(cell)
        except ValueError:
            values[column] = None  # "N/A": the diagonal, or no path between the two
    testcase["matrix"][row] = values


def _public(testcase: dict) -> dict:
    return {
        "description": testcase["description"],
        "status": testcase["status"],
        "sum_gbps": testcase["sum"],
        # matrix[row][column] in GB/s; None for N/A.
        "matrix": testcase["matrix"],
    }
