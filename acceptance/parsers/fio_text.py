"""fio's default (normal) text output, read into the JSON parser's metrics shape.

    seq_write: (groupid=0, jobs=4): err= 0: pid=171654: Thu Sep  5 03:42:27 2024
      write: IOPS=65.5k, BW=512MiB/s (537MB/s)(150GiB/300001msec); 0 zone resets
    ...
    Run status group 0 (all jobs):
    Disk stats (read/write):
      nvme1n1: ios=47/19657613, ...

The "Run status group" summary closes a run: text without it was cut short and is an error.
"""

from __future__ import annotations

import re

from .base import ParseResult, blank_reason, failed, strip_launcher

TOOL = "fio"
JOB = re.compile(r"^(?P<name>\S+): \(groupid=(?P<group>\d+), jobs=\d+\): err=\s*(?P<err>\d+)")
DIRECTION = re.compile(
    r"^\s+(?P<dir>read|write)\s*: IOPS=(?P<iops>[\d.]+)(?P<k>[kM]?), "
    r"BW=(?P<bw>[\d.]+)(?P<unit>[KMG]i?B|B)/s"
)
LAT = re.compile(r"^\s+lat \((?P<unit>[nu]sec|msec)\): .*?avg=\s*(?P<avg>[\d.]+)")
DISK = re.compile(r"^\s+(?P<disk>[\w!-]+): ios=")
VERSION = re.compile(r"^fio-(\S+)")
UNIT_BYTES = {"B": 1, "KiB": 1024, "MiB": 1024**2, "GiB": 1024**3, "KB": 1000, "MB": 1e6, "GB": 1e9}
SCALE = {"": 1, "k": 1e3, "M": 1e6}
TO_US = {"nsec": 1e-3, "usec": 1.0, "msec": 1e3}


def looks_like_text(text: str) -> bool:
    """True when the text carries fio's per-job text header."""
    return any(JOB.match(strip_launcher(line)) for line in text.splitlines()[:400])


def parse(text: str) -> ParseResult | tuple[list[dict], list[str], str | None]:
    """Read fio text output into (jobs, disks, version), or a failed result saying why not."""
    reason = blank_reason(text)
    if reason:
        return failed(TOOL, reason)
    jobs: list[dict] = []
    disks: list[str] = []
    version = None
    summary = False
    in_disk_stats = False
    current: dict | None = None
    side: str | None = None
    for raw in text.splitlines():
        line = strip_launcher(raw)
        if m := VERSION.match(line):
            version = m.group(1)
        elif m := JOB.match(line):
            current = {
                "name": m.group("name"),
                "error": int(m.group("err")),
                "read_mbps": 0.0,
                "write_mbps": 0.0,
                "read_iops": 0.0,
                "write_iops": 0.0,
                "read_lat_mean_us": None,
                "write_lat_mean_us": None,
            }
            jobs.append(current)
        elif (m := DIRECTION.match(line)) and current is not None:
            side = m.group("dir")
            current[f"{side}_mbps"] = round(
                float(m.group("bw")) * UNIT_BYTES[m.group("unit")] / 1e6, 1
            )
            current[f"{side}_iops"] = float(m.group("iops")) * SCALE[m.group("k")]
        elif (m := LAT.match(line)) and current is not None and side:
            current[f"{side}_lat_mean_us"] = round(
                float(m.group("avg")) * TO_US[m.group("unit")], 1
            )
        elif line.startswith("Run status group"):
            summary = False
        elif re.match(r"^\s+(READ|WRITE|TRIM): ", line):
            # A group's summary line always ends with the run time ("run=...msec").
            summary = line.rstrip().endswith("msec")
        elif line.startswith("Disk stats"):
            in_disk_stats = True
        elif in_disk_stats and (m := DISK.match(line)):
            disks.append(m.group("disk"))
            if not re.search(r"util=[\d.]+%\s*$", line):
                return failed(TOOL, f"truncated disk stats line: {line.strip()[:80]}")
    if not jobs:
        return failed(TOOL, "not fio output: no job result header")
    if not summary:
        return failed(TOOL, "truncated: no 'Run status group' summary after the jobs")
    return jobs, disks, version
