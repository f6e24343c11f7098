"""nccl-tests `all_reduce_perf` text: the size table and the "# Avg bus bandwidth" line.

Judging uses the plateau (bus bandwidth at the largest message sizes); the Avg line averages in
8-byte messages and is kept only as a metric. nccl-tests 2.x dropped or added the "root" column
between releases, so rows are read by position from the right.
"""

from __future__ import annotations

import re

from .base import Finding, ParseResult, Severity, blank_reason, failed

TOOL = "nccl"
# How many of the largest sizes make the plateau.
PLATEAU_ROWS = 3
VERSION = re.compile(r"#\s*nccl-tests version\s+(\S+)(?:.*nccl-library=(\d+))?")
AVG = re.compile(r"#\s*Avg bus bandwidth\s*:\s*([\d.]+)")
OUT_OF_BOUNDS = re.compile(r"#\s*Out of bounds values\s*:\s*(\d+)\s*(\w+)")
HEADER = re.compile(r"#\s*nThread\s+(\d+)\s+nGpus\s+(\d+)")
RANK = re.compile(r"#\s*Rank\s+(\d+)\s+.*?on\s+(\S+)\s+device\s+(\d+)")


def parse(text: str) -> ParseResult:
    """Parse all_reduce_perf output into per-size rows, plateau and Avg bus bandwidth."""
    reason = blank_reason(text)
    if reason:
        return failed(TOOL, reason)
    rows: list[dict] = []
    avg = None
    oob = None
    version = None
    hosts: list[str] = []
    ranks = 0
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("#"):
            if m := VERSION.match(stripped):
                version = m.group(1)
            elif m := AVG.match(stripped):
                avg = float(m.group(1))
            elif m := OUT_OF_BOUNDS.match(stripped):
                oob = (int(m.group(1)), m.group(2))
            elif m := RANK.match(stripped):
                ranks += 1
                if m.group(2) not in hosts:
                    hosts.append(m.group(2))
            continue
        row = _row(stripped)
        if row is not None:
            rows.append(row)
    if not rows:
        return failed(TOOL, "no all_reduce_perf result rows in the output")
    if avg is None:
        return failed(TOOL, "truncated: no '# Avg bus bandwidth' line after the table")
    result = ParseResult(TOOL, version=version)
    plateau_rows = sorted(rows, key=lambda r: r["size_bytes"])[-PLATEAU_ROWS:]
    plateau = min(min(r["busbw_oop"], r["busbw_ip"]) for r in plateau_rows)
    wrong = sum(r["wrong"] for r in rows)
    result.metrics = {
        "rows": rows,
        "plateau_busbw_gbps": plateau,
        "plateau_sizes": [r["size_bytes"] for r in plateau_rows],
        "max_size_bytes": plateau_rows[-1]["size_bytes"],
        "avg_busbw_gbps": avg,
        "wrong": wrong,
        "ranks": ranks,
        "hosts": hosts,
    }
    if wrong or (oob and oob[0] > 0):
        result.findings.append(
            Finding(
                part="fabric",
                kind="nic",
                message=f"fabric: all_reduce returned {wrong or oob[0]} wrong values",
                severity=Severity.CRITICAL,
                code="nccl_wrong_values",
            )
        )
    return result


def _row(line: str) -> dict | None:
    """Read one table row: size count type redop [root] then 4 out-of-place and 4 in-place cells."""
    cells = line.split()
    if len(cells) not in (12, 13) or not (cells[0].isdigit() and cells[1].isdigit()):
        return None
    tail = cells[-8:]
    try:
        oop_time, oop_alg, oop_bus = (float(c) for c in tail[0:3])
        ip_time, ip_alg, ip_bus = (float(c) for c in tail[4:7])
    except ValueError:
        return None
    return {
        "size_bytes": int(cells[0]),
        "count": int(cells[1]),
        "type": cells[2],
        "redop": cells[3],
        "time_us_oop": oop_time,
        "algbw_oop": oop_alg,
        "busbw_oop": oop_bus,
        "time_us_ip": ip_time,
        "algbw_ip": ip_alg,
        "busbw_ip": ip_bus,
        "wrong": _wrong(tail[3]) + _wrong(tail[7]),
    }


def _wrong(cell: str) -> int:
    # "N/A" when the run was started with -c 0 (no validation).
    return int(cell) if cell.isdigit() else 0
