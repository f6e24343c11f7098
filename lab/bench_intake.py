"""The intake benchmark: a hall of N lab BMCs handed over as a targets file and enrolled through
`provisioning.intake.bulk` at a given concurrency, as `manage.py enroll_bmcs` does.

The hall runs in its own process (`manage.py lab serve`), so the BMCs' CPU is measured apart
from Greenlight's and does not share its interpreter lock. Reports nodes a minute, CPU per node
of Greenlight, the lab and the datastores, and the slowest enrollments.
"""

from __future__ import annotations

import csv
import io
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil
from django.conf import settings
from django.db import connection

from fleet.models import Rack, Site
from provisioning.intake.bulk import enroll_targets, read_targets

from .bench import datastore_cpu, percentile
from .enrollment import lab_sku
from .hall import read_inventory

# Nodes per lab rack: 32 x 1U plus switches fits a 42U rack, and 5,000 nodes make 157 racks.
NODES_PER_RACK = 32
HALL_START_TIMEOUT_S = 600.0


def targets_csv(inventory: dict[str, Any], site: str, rack_prefix: str) -> str:
    """The targets file an operator would be handed for the hall (passwords included)."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(
        ["bmc_address", "bmc_username", "bmc_password", "sku", "rack", "position", "fingerprint"]
    )
    for node in inventory["nodes"]:
        index = node["index"]
        writer.writerow(
            [
                node["bmc_url"],
                node["username"],
                node["password"],
                lab_sku(node["flavour"]).name,
                f"{site}/{rack_name(rack_prefix, index)}",
                index % NODES_PER_RACK + 1,
                node["cert_fingerprint"],
            ]
        )
    return out.getvalue()


def rack_name(prefix: str, index: int) -> str:
    return f"{prefix}-{index // NODES_PER_RACK + 1:03d}"


def start_hall(nodes: int, seed: int, inventory: Path) -> subprocess.Popen:
    """`manage.py lab serve` in its own process; returns once its inventory is written."""
    inventory.unlink(missing_ok=True)
    command = [sys.executable, "manage.py", "lab", "serve", "--nodes", str(nodes)]
    command += ["--seed", str(seed), "--inventory", str(inventory)]
    hall = subprocess.Popen(
        command,
        cwd=settings.BASE_DIR,
        env={**os.environ, "GREENLIGHT_LAB_MODE": "1"},
        stdout=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + HALL_START_TIMEOUT_S
    while not inventory.exists():
        if hall.poll() is not None:
            raise RuntimeError(f"the lab hall exited with {hall.returncode} before serving")
        if time.monotonic() > deadline:
            hall.terminate()
            raise RuntimeError(f"the lab hall did not serve {nodes} BMCs in time")
        time.sleep(0.5)
    return hall


def run_intake_bench(
    nodes: int, *, concurrency: int, seed: int = 0, site: str = "intake"
) -> dict[str, Any]:
    """Start a hall of `nodes` BMCs, enroll it all, and return the measurements."""
    with tempfile.TemporaryDirectory(prefix="greenlight-intake-") as scratch:
        inventory_path = Path(scratch) / "inventory.json"
        started = time.perf_counter()
        hall = start_hall(nodes, seed, inventory_path)
        hall_start_s = time.perf_counter() - started
        try:
            inventory = read_inventory(inventory_path)
            site_obj, _ = Site.objects.get_or_create(name=site)
            for index in range(0, nodes, NODES_PER_RACK):
                Rack.objects.get_or_create(
                    site=site_obj, name=rack_name("rack", index), defaults={"height_u": 42}
                )
            targets, errors = read_targets(targets_csv(inventory, site, "rack"))
            if errors:
                raise RuntimeError(f"the lab's targets file was refused: {errors[0]}")
            lab = psutil.Process(hall.pid)
            lab_before = _cpu(lab)
            own = psutil.Process()
            own_before = _cpu(own)
            stores_before = datastore_cpu()
            report = enroll_targets(targets, concurrency=concurrency, actor_label="bench_intake")
            own_used = _cpu(own) - own_before
            lab_used = _cpu(lab) - lab_before
            stores = {k: v - stores_before.get(k, 0.0) for k, v in datastore_cpu().items()}
        finally:
            hall.terminate()
            hall.wait(timeout=60)
    seconds = [o.seconds for o in report.outcomes]
    enrolled = max(len(report.enrolled), 1)
    return {
        "nodes": nodes,
        "seed": seed,
        "concurrency": concurrency,
        "most_in_flight": report.most_in_flight,
        "enrolled": len(report.enrolled),
        "failed": len(report.failed),
        "failures": [f"line {o.line}: {o.bmc_address}: {o.error}" for o in report.failed[:20]],
        "elapsed_s": round(report.elapsed_s, 2),
        "nodes_per_minute": round(report.nodes_per_minute, 1),
        "seconds_per_bmc": {
            "p50": _round(percentile(seconds, 0.5)),
            "p99": _round(percentile(seconds, 0.99)),
            "max": _round(max(seconds, default=None)),
        },
        "cpu_s_per_node": {
            "greenlight": round(own_used / enrolled, 4),
            "lab_bmcs": round(lab_used / enrolled, 4),
            **{name: round(used / enrolled, 4) for name, used in sorted(stores.items())},
        },
        "hall_start_s": round(hall_start_s, 1),
        "database": connection.vendor,
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
    }


def _cpu(process: psutil.Process) -> float:
    times = process.cpu_times()
    return times.user + times.system


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 3)
