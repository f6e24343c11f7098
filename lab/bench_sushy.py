"""sushy 5.14.0 against Greenlight's RedfishClient: one scripted sequence, measured per BMC.

The question it answers (issue 29): should Greenlight's Redfish resource layer sit on OpenStack's
sushy? Both libraries drive the same sequence (open, identity and power, boot override, BIOS,
firmware inventory, virtual CD, boot-once Pxe with its read-back, one staged BIOS attribute,
close) against the lab's dell, hpe, supermicro and dgx BMCs and sushy-tools' fake driver.

Requests are counted where they land (the lab node's `requests`, sushy-tools' access log), never
by the client measured, at each step boundary. Each library runs in a child process of its own
(lab/bench_sushy_sequences.py), so its CPU time is its own (the lab's BMCs serve from this
process) and its imports do not mix with the other's. Import time and memory are measured in
fresh interpreters. Lab-only: nothing in provisioning/ imports
sushy; production code never depends on it.
"""

from __future__ import annotations

import functools
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

import sushy

from .bench_sushy_sequences import STEPS, Target
from .hall import LabHall
from .sushy import Sushy, start_sushy

ROOT = Path(__file__).resolve().parents[1]
LIBRARIES = ("sushy", "greenlight")
LAB_FLAVOURS = ("dell", "hpe", "supermicro", "dgx")
# What each library imports to be used, measured in a fresh interpreter; "after Django" is the
# cost inside a Greenlight worker, which has Django and httpx loaded already.
IMPORTS = {"sushy": "sushy", "greenlight": "provisioning.redfish.client"}
WORKER_PRELOAD = ("django.db.models", "httpx")
# The fake driver's one system (the same shape tests/redfish/sushy.py serves the suite).
FAKE_SYSTEM = {
    "uuid": "5f0c1d1e-6a0b-4d55-9f1c-6d3b0e8a2c11",
    "name": "greenlight-bench",
    "power_state": "Off",
    "nics": [{"mac": "52:54:00:12:34:56", "ip": "172.22.0.100"}],
}
ACCESS_LINE = re.compile(r'"(GET|HEAD|POST|PATCH|PUT|DELETE) (\S+) HTTP/')


class Worker:
    """A child process running one library's sequence on demand."""

    def __init__(self, library: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "lab.bench_sushy_sequences", "worker", library],
            cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )  # fmt: skip

    def run(self, target: Target, count: Callable[[], int]) -> dict[str, Any]:
        """One sequence; `count` reads the BMC's request counter at each step boundary."""
        assert self.process.stdin and self.process.stdout
        self.process.stdin.write(json.dumps(asdict(target)) + "\n")
        self.process.stdin.flush()
        marks: list[tuple[str, int]] = []
        while True:
            line = self.process.stdout.readline()
            if not line:
                raise RuntimeError(f"the bench worker exited ({self.process.wait()})")
            said = json.loads(line)
            if "done" in said:
                break
            marks.append((said["step"], count()))
            self.process.stdin.write("go\n")
            self.process.stdin.flush()
        result = said["done"]
        ends = [at for _, at in marks[1:]] + [count()]
        result["step_requests"] = {
            name: end - at for (name, at), end in zip(marks, ends, strict=True)
        }
        result["requests"] = ends[-1] - marks[0][1] if marks else 0
        return result

    def close(self) -> None:
        if self.process.stdin:
            self.process.stdin.close()
        self.process.wait(timeout=30)


# -- import cost ---------------------------------------------------------------------------------

IMPORT_PROBE = """
import importlib, json, os, sys, time
def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
for name in sys.argv[2:]:
    importlib.import_module(name)
before, t, cpu = rss(), time.perf_counter(), time.process_time()
importlib.import_module(sys.argv[1])
wall, cpu = time.perf_counter() - t, time.process_time() - cpu
print(json.dumps({"s": wall, "cpu": cpu, "rss": rss() - before}))
"""


def import_cost(module: str, preload: tuple[str, ...], runs: int) -> dict[str, float]:
    """Median import time (wall, and CPU, which a busy machine disturbs less) and resident-memory
    growth of `module` in fresh interpreters."""
    seen = []
    for _ in range(runs):
        out = subprocess.run(
            [sys.executable, "-c", IMPORT_PROBE, module, *preload],
            cwd=ROOT, capture_output=True, text=True, check=True,
        )  # fmt: skip
        seen.append(json.loads(out.stdout))
    return {
        "import_s": round(statistics.median(s["s"] for s in seen), 4),
        "import_cpu_s": round(statistics.median(s["cpu"] for s in seen), 4),
        "rss_growth_kib": statistics.median(s["rss"] for s in seen) // 1024,
    }


# -- the runs ------------------------------------------------------------------------------------


def access_log_requests(log: Path) -> list[str]:
    """Every request sushy-tools logged, as "METHOD path"."""
    text = log.read_text(errors="replace") if log.exists() else ""
    return [f"{m[1]} {m[2]}" for m in ACCESS_LINE.finditer(text)]


def settled_log(log: Path) -> list[str]:
    """The access log once the emulator has written its last line (it logs after answering)."""
    last = access_log_requests(log)
    for _ in range(50):
        time.sleep(0.02)
        now = access_log_requests(log)
        if len(now) == len(last):
            return now
        last = now
    return last


def lab_round(worker: Worker, workdir: Path) -> dict[str, dict[str, Any]]:
    """One run of the sequence on each flavour, in a fresh hall: every run starts from the
    same BMC state (no boot override set, no BIOS job pending)."""
    out = {}
    with LabHall(len(LAB_FLAVOURS), flavours=LAB_FLAVOURS, speed=0) as hall:
        for bmc in hall.bmcs:
            ca_file = workdir / f"{bmc.flavour}.pem"
            ca_file.write_bytes(bmc.cert_pem)
            target = Target(
                f"lab-{bmc.flavour}", bmc.https_url, bmc.node.username, bmc.node.password,
                str(ca_file), bmc.cert_fingerprint,
            )  # fmt: skip
            requests_now = functools.partial(getattr, bmc.node, "requests")
            out[target.name] = worker.run(target, requests_now)
    return out


def emulator_round(worker: Worker, emulator: Sushy, ca_file: Path, log: Path) -> dict[str, Any]:
    """One run against sushy-tools, its requests read from its access log."""
    target = Target(
        "sushy-tools-fake", emulator.url, emulator.username, emulator.password, str(ca_file),
        emulator.fingerprint,
    )  # fmt: skip
    before = len(settled_log(log))
    result = worker.run(target, lambda: len(settled_log(log)))
    result["request_lines"] = settled_log(log)[before:]
    return result


def start_emulator(workdir: Path) -> Sushy:
    """sushy-tools with its fake driver serving one powered-off system."""
    driver = {"SUSHY_EMULATOR_FAKE_DRIVER": True, "SUSHY_EMULATOR_FAKE_SYSTEMS": [FAKE_SYSTEM]}
    return start_sushy(workdir, driver)


def collect(runs: int, with_emulator: bool = True) -> dict[str, dict[str, list[dict[str, Any]]]]:
    """Every run's raw result by target and library; the libraries alternate run by run."""
    raw: dict[str, dict[str, list[dict[str, Any]]]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-sushy-") as tmp:
        workdir = Path(tmp)
        emulator = start_emulator(workdir / "emulator") if with_emulator else None
        workers = {library: Worker(library) for library in LIBRARIES}
        try:
            for _ in range(runs):
                for library, worker in workers.items():
                    found = lab_round(worker, workdir)
                    if emulator is not None:
                        found["sushy-tools-fake"] = emulator_round(
                            worker, emulator, workdir / "emulator" / "cert.pem",
                            workdir / "emulator" / "sushy.log",
                        )  # fmt: skip
                    for name, result in found.items():
                        raw.setdefault(name, {}).setdefault(library, []).append(result)
        finally:
            for worker in workers.values():
                worker.close()
            if emulator is not None:
                emulator.stop()
    return raw


def summarise(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Medians over the runs, per sequence and per step, with the last run's outcomes."""

    def median(values: list[float], scale: float = 1.0) -> float:
        return round(statistics.median(values) * scale, 1)

    summary: dict[str, Any] = {
        "requests_median": median([r["requests"] for r in runs]),
        "requests_each_run": [r["requests"] for r in runs],
        "wall_ms_median": median([r["wall_s"] for r in runs], 1000),
        "cpu_ms_median": median([r["cpu_s"] for r in runs], 1000),
        "steps": {
            name: {
                "outcome": outcome,
                "requests": median([r["step_requests"].get(name, 0) for r in runs]),
                "wall_ms": median([r["step_wall_s"].get(name, 0.0) for r in runs], 1000),
                "cpu_ms": median([r["step_cpu_s"].get(name, 0.0) for r in runs], 1000),
            }
            for name, outcome in runs[-1]["steps"].items()
        },
    }
    if "request_lines" in runs[-1]:
        summary["request_lines_last_run"] = runs[-1]["request_lines"]
    return summary


def lab_totals(targets: dict[str, dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Per library, the medians summed over the four lab BMCs."""
    lab = [by for name, by in targets.items() if name.startswith("lab-")]
    return {
        library: {
            key: round(sum(by[library][key] for by in lab), 1)
            for key in ("requests_median", "wall_ms_median", "cpu_ms_median")
        }
        for library in LIBRARIES
    }


def bench(runs: int = 5, with_emulator: bool = True) -> dict[str, Any]:
    """The whole measurement, ready to print and to write as JSON."""
    raw = collect(runs, with_emulator)
    targets = {
        name: {library: summarise(found) for library, found in by_library.items()}
        for name, by_library in raw.items()
    }
    worker_rss = {
        library: max(r["rss_growth_kib"] for by in raw.values() for r in by[library])
        for library in LIBRARIES
    }
    imports = {
        library: {
            "cold": import_cost(module, (), runs),
            "in_a_django_worker": import_cost(module, WORKER_PRELOAD, runs),
            "sequence_rss_growth_kib": worker_rss[library],
        }
        for library, module in IMPORTS.items()
    }
    return {
        "what": "issue 29: the same Redfish sequence through sushy and through RedfishClient",
        "sequence": list(STEPS),
        "runs": runs,
        "measured_at": time.strftime("%Y-%m-%d %H:%M:%S"),
        "source": source_tree(),
        "python": platform.python_version(),
        "sushy_version": sushy.__version__,
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
        "targets": targets,
        "lab_totals": lab_totals(targets),
        "imports": imports,
    }


def source_tree() -> str:
    """The commit measured, and whether the working tree differed from it."""
    head = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    changed = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=no"],
        cwd=ROOT, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip
    return f"{head or 'unknown'}{' with uncommitted changes' if changed else ''}"


def _ms(cost: dict[str, float]) -> str:
    return f"{cost['import_s'] * 1000:.0f} ({cost['import_cpu_s'] * 1000:.0f})"


def table(result: dict[str, Any]) -> str:
    """The per-BMC table, one row per target and library, then the import costs."""
    rows = [
        f"{'BMC':<18} {'library':<11} {'requests':>8} {'wall ms':>8} {'CPU ms':>8}  steps not ok",
    ]
    for name, by_library in result["targets"].items():
        for library, s in by_library.items():
            not_ok = [k for k, v in s["steps"].items() if not v["outcome"].startswith("ok")]
            rows.append(
                f"{name:<18} {library:<11} {s['requests_median']:>8} "
                f"{s['wall_ms_median']:>8} {s['cpu_ms_median']:>8}  {', '.join(not_ok) or '-'}"
            )
    for library, total in result["lab_totals"].items():
        rows.append(
            f"{'lab, 4 BMCs':<18} {library:<11} {total['requests_median']:>8} "
            f"{total['wall_ms_median']:>8} {total['cpu_ms_median']:>8}"
        )
    rows.append("")
    rows.append(f"{'library':<11} {'import ms (CPU) cold':>20} {'RSS KiB':>8} "
                f"{'in a worker':>16} {'RSS KiB':>8} {'RSS KiB runs':>13}")  # fmt: skip
    for library, cost in result["imports"].items():
        cold, warm = cost["cold"], cost["in_a_django_worker"]
        rows.append(
            f"{library:<11} {_ms(cold):>20} {cold['rss_growth_kib']:>8} "
            f"{_ms(warm):>16} {warm['rss_growth_kib']:>8} {cost['sequence_rss_growth_kib']:>13}"
        )
    return "\n".join(rows)
