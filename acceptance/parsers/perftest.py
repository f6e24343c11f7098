"""perftest bandwidth output (`ib_write_bw`, `ib_read_bw`, `ib_send_bw`): one row per message size.

     #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]
     65536      664644           6938.21            6938.04             0.111009

Units are MB/sec by default and Gb/sec with --report_gbits; both are read and the average is
also given in Gb/s (perftest's MB is 2^20 bytes) so a gate can weigh it against a NIC's line rate.
A server and a client of a loopback run both print the table; the rows are the same.
"""

from __future__ import annotations

import re

from .base import ParseResult, blank_reason, failed, strip_launcher

TOOL = "perftest"
TITLE = re.compile(r"^\s*(?P<test>[\w ]+?) BW Test\s*$")
DEVICE = re.compile(r"Device\s*:\s*(\S+)")
LINK = re.compile(r"Link type\s*:\s*(\S+)")
HEADER = re.compile(r"#bytes\s+#iterations\s+BW peak\[(?P<unit>[MG]i?b?B?/sec)\]", re.IGNORECASE)
ROW = re.compile(r"^\s*(\d+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s*$")
MB = 2**20


def parse(text: str) -> ParseResult:
    """Parse perftest bandwidth output into rows and the average at the largest size."""
    reason = blank_reason(text)
    if reason:
        return failed(TOOL, reason)
    test = device = link = unit = None
    rows: dict[int, dict] = {}
    header_seen = False
    last_cut = None
    closed = False
    for raw in text.splitlines():
        line = strip_launcher(raw)
        if (m := TITLE.match(line)) and test is None:
            test = m.group("test").strip()
        if (m := DEVICE.search(line)) and device is None:
            device = m.group(1)
        if (m := LINK.search(line)) and link is None:
            link = m.group(1)
        if m := HEADER.search(line):
            header_seen, unit = True, m.group("unit")
            continue
        if not header_seen:
            continue
        if m := ROW.match(line):
            size = int(m.group(1))
            rows[size] = {
                "size_bytes": size,
                "iterations": int(m.group(2)),
                "bw_peak": float(m.group(3)),
                "bw_average": float(m.group(4)),
                "msg_rate_mpps": float(m.group(5)),
            }
            last_cut, closed = None, False
        elif re.match(r"^\s*\d+\s+\d+", line):
            last_cut = line.strip()
        elif rows and re.match(r"^\s*-{20,}\s*$", line):
            closed = True
    if test is None or not header_seen:
        return failed(TOOL, "not perftest bandwidth output: no 'BW Test' banner and result header")
    if last_cut is not None:
        return failed(TOOL, f"truncated result row: {last_cut[:80]}")
    if not rows:
        return failed(TOOL, "truncated: no result rows after the header")
    if not closed:
        return failed(TOOL, "truncated: no closing rule after the result rows")
    largest = rows[max(rows)]
    gbits = "gb" in unit.lower()
    average = largest["bw_average"] if gbits else largest["bw_average"] * MB * 8 / 1e9
    result = ParseResult(TOOL)
    result.metrics = {
        "test": test,
        "device": device,
        "link_type": link,
        "unit": unit,
        "rows": [rows[s] for s in sorted(rows)],
        "max_size_bytes": largest["size_bytes"],
        "avg_gbps_at_max_size": round(average, 2),
    }
    return result
