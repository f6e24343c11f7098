"""nccl-tests text (`all_reduce_perf` and the other collectives): the size table and the Avg line.

Judging uses the plateau (bus bandwidth at the largest message sizes); the Avg line averages in
8-byte messages and is kept only as a metric. Real output comes in several shapes, all read here:
- each line may carry a launcher's prefix (`mpirun --tag-output`, `srun --label`, SkyPilot, a
  harness logger), and a pasted copy may be quoted ("> ") with rows elided ("...", "[...]");
- older releases print no "#" before the banner and header lines;
- the row has 11 to 13 cells: collectives without a reduction op (all_gather, alltoall) or
  without a root (all_reduce) leave those columns out, and some releases leave them blank.
  Rows are therefore read by position from the right: eight out-of-place and in-place cells.

The plateau is read from the largest message sizes the table actually holds, so a paste that
elides rows is judged on what it shows; a table with no non-empty size has no plateau and is an
error, never a bandwidth of 0.
"""

from __future__ import annotations

import re

from .base import (
    Finding,
    ParseResult,
    Severity,
    blank_reason,
    failed,
    is_elision,
    pasted_lines,
)

TOOL = "nccl"
# How many of the largest sizes make the plateau.
PLATEAU_ROWS = 3
VERSION = re.compile(r"^#?\s*nccl-tests version\s+(\S+)")
COLLECTIVE = re.compile(r"^#?\s*Collective test starting:\s*(\S+)")
AVG = re.compile(r"^#?\s*Avg bus bandwidth\s*:\s*([\d.]+)")
OUT_OF_BOUNDS = re.compile(r"^#?\s*Out of bounds values\s*:\s*(\d+)\s*(\w+)")
RANK = re.compile(r"^#?\s*Rank\s+(\d+)\s+.*?on\s+(\S+)\s+device\s+(\d+)")
REDUCTION_OPS = {"sum", "prod", "min", "max", "avg", "none", "premulsum"}


def parse(text: str) -> ParseResult:
    """Parse nccl-tests output into per-size rows, plateau and Avg bus bandwidth."""
    reason = blank_reason(text)
    if reason:
        return failed(TOOL, reason)
    rows: list[dict] = []
    avg = oob = version = collective = None
    ranks: set[int] = set()
    hosts: list[str] = []
    elisions = 0
    for raw in pasted_lines(text):
        line = raw.strip()
        if is_elision(line):
            elisions += 1
        elif m := VERSION.match(line):
            version = m.group(1)
        elif m := COLLECTIVE.match(line):
            collective = m.group(1)
        elif m := AVG.match(line):
            avg = float(m.group(1))
        elif m := OUT_OF_BOUNDS.match(line):
            oob = (int(m.group(1)), m.group(2))
        elif m := RANK.match(line):
            ranks.add(int(m.group(1)))
            if m.group(2) not in hosts:
                hosts.append(m.group(2))
        elif not line.startswith("#") and (row := _row(line)) is not None:
            rows.append(row)
    if not rows:
        elided = f" (the paste elides {elisions} part(s) of it)" if elisions else ""
        return failed(TOOL, f"no nccl-tests result rows in the output{elided}")
    if avg is None:
        return failed(TOOL, "truncated: no 'Avg bus bandwidth' line after the table")
    # A zero-byte message moves nothing (its bus bandwidth is 0 by definition): never a plateau.
    sized = [r for r in rows if r["size_bytes"] > 0]
    if not sized:
        return failed(TOOL, "no plateau: the table has no row with a non-empty message size")
    result = ParseResult(TOOL, version=version)
    plateau_rows = sorted(sized, key=lambda r: r["size_bytes"])[-PLATEAU_ROWS:]
    plateau = min(min(r["busbw_oop"], r["busbw_ip"]) for r in plateau_rows)
    wrong = sum(r["wrong"] for r in rows)
    result.metrics = {
        "collective": collective,
        "rows": rows,
        "plateau_busbw_gbps": plateau,
        "plateau_sizes": [r["size_bytes"] for r in plateau_rows],
        "max_size_bytes": plateau_rows[-1]["size_bytes"],
        "avg_busbw_gbps": avg,
        "wrong": wrong,
        "ranks": len(ranks),
        "hosts": hosts,
        "elided_lines": elisions,
    }
    if wrong or (oob and oob[0] > 0):
        result.findings.append(
            Finding(
                part="fabric",
                kind="nic",
                message=f"fabric: the collective returned {wrong or oob[0]} wrong values",
                severity=Severity.CRITICAL,
                code="nccl_wrong_values",
            )
        )
    return result


def _row(line: str) -> dict | None:
    """Read one row: size count type [redop] [root], then 4 out-of-place and 4 in-place cells."""
    cells = line.split()
    if not 11 <= len(cells) <= 13 or not (cells[0].isdigit() and cells[1].isdigit()):
        return None
    tail = cells[-8:]
    try:
        oop_time, oop_alg, oop_bus = (float(c) for c in tail[0:3])
        ip_time, ip_alg, ip_bus = (float(c) for c in tail[4:7])
    except ValueError:
        return None
    middle = cells[3:-8]
    redop = next((c for c in middle if c in REDUCTION_OPS), "")
    return {
        "size_bytes": int(cells[0]),
        "count": int(cells[1]),
        "type": cells[2],
        "redop": redop,
        "time_us_oop": oop_time,
        "algbw_oop": oop_alg,
        "busbw_oop": oop_bus,
        "time_us_ip": ip_time,
        "algbw_ip": ip_alg,
        "busbw_ip": ip_bus,
        "wrong": _wrong(tail[3]) + _wrong(tail[7]),
    }


def _wrong(cell: str) -> int:
    # "N/A" when the run was started with -c 0 (no validation); older releases print an error
    # magnitude such as "0e+00" instead of a count, and any non-zero one means wrong values.
    if cell.isdigit():
        return int(cell)
    try:
        return 1 if float(cell) > 0 else 0
    except ValueError:
        return 0
