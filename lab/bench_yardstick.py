"""The machine's speed during a benchmark: one fixed piece of Python work, timed again and again.

This machine is a virtual one whose speed moves with its neighbours': in two 150-node runs of one
commit, 40 minutes apart, the same iPXE script took 5.86 and 6.62 ms of CPU and the lab 0.622 and
0.690 s a node; in a run between them, of nearly the same code, 4.42 ms and 0.472 s. CPU a node
compares across runs only in units of what the machine could do meanwhile. The work is
fixed (JSON, dicts, sorting, string formatting and a regex over 300 rows, the kinds Greenlight's
looks are made of) and timed in thread CPU time, so waiting for the interpreter lock or a core
does not count; the hypervisor's steal is reported beside it.
"""

from __future__ import annotations

import json
import re
import statistics
import threading
import time
from typing import Any

import psutil

# Seconds between two timings: a few milliseconds of work each, nothing beside a run's CPU.
INTERVAL_S = 5.0
_WORD = re.compile(r"[A-Za-z]+")


def work() -> int:
    """The fixed work (about 6 ms of CPU on this machine, quiet)."""
    rows = [
        {
            "id": i,
            "serial": f"SN{i:06d}",
            "state": ("ready", "burn_in", "failed")[i % 3],
            "rack": i // 37,
            "versions": {"bmc": f"1.{i % 7}.{i % 11}"},
        }
        for i in range(300)
    ]
    text = json.dumps(rows)
    words = 0
    for _ in range(3):
        by_rack: dict[int, list[dict[str, Any]]] = {}
        for row in json.loads(text):
            by_rack.setdefault(row["rack"], []).append(row)
        for rack, members in sorted(by_rack.items()):
            members.sort(key=lambda r: (r["state"], r["serial"]))
            words += sum(len(_WORD.findall(f"{m['serial']} {m['state']} {rack}")) for m in members)
    return words


def time_work_ms() -> float:
    """The fixed work's CPU time in this thread, in milliseconds."""
    started = time.thread_time()
    work()
    return (time.thread_time() - started) * 1e3


class Yardstick:
    """Times the work every INTERVAL_S in a thread of its own, from start() to stop()."""

    def __init__(self, interval_s: float = INTERVAL_S) -> None:
        self.interval_s = interval_s
        self.samples_ms: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="yardstick", daemon=True)
        self._cpu_at_start: Any = None
        self._cpu_at_stop: Any = None

    def start(self) -> None:
        self._cpu_at_start = psutil.cpu_times()
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self._cpu_at_stop = psutil.cpu_times()

    def _loop(self) -> None:
        while True:
            self.samples_ms.append(time_work_ms())
            if self._stop.wait(self.interval_s):
                return

    def summary(self) -> dict[str, Any]:
        """The work's median, 10th and 90th percentile CPU ms, how often it was timed, and the
        share of the machine's CPU time the hypervisor stole meanwhile (None where not told)."""
        samples = sorted(self.samples_ms)
        return {
            "work_cpu_ms": round(statistics.median(samples), 3) if samples else None,
            "work_cpu_ms_p10_p90": [
                round(samples[len(samples) // 10], 3),
                round(samples[(len(samples) * 9) // 10], 3),
            ]
            if samples
            else None,
            "timings": len(samples),
            "steal_share": steal_share(self._cpu_at_start, self._cpu_at_stop),
        }


def steal_share(before: Any, after: Any) -> float | None:
    """The share of all CPU time between two psutil.cpu_times() that was stolen."""
    if before is None or after is None or not hasattr(before, "steal"):
        return None
    total = sum(after) - sum(before)
    return round((after.steal - before.steal) / total, 4) if total > 0 else None


def in_work_units(cpu_s: float, summary: dict[str, Any]) -> float | None:
    """`cpu_s` as a number of the work's timings: comparable across runs at different speeds."""
    ms = summary.get("work_cpu_ms")
    return round(cpu_s * 1e3 / ms, 1) if ms else None
