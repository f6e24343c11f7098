"""The firmware-wave benchmark (issue 36): a newer BMC image rolled out over N lab nodes spread
over sites, in waves, under a per-site cap, through Greenlight's real rollout (the wave gate of
provisioning/day2/waves.py) and real runs whose Redfish firmware acts reach the lab's BMCs.

The nodes are NVLink switch trays (lab flavour nvl_switch): their plan is the firmware wave
itself (preflight, power_on, bmc_firmware), where a server's upgrade is a whole reprovision
(ephemeral boot, OS, gates) that the bring-up benchmark (lab/bench.py) already measures and that
would take this machine hours at 741 nodes. The fleet starts in service: powered, on the
published manifest, its BMCs on that manifest's image; the benchmark publishes the next.

It reports the makespan, each wave, the most nodes in flight per site against the cap (and the
most BMC updates running at once), the most mutating acts any one BMC answered at once (the lab
BMCs count them: it must be 1) and nodes an hour.
"""

from __future__ import annotations

import os
import platform
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import psutil
import yaml
from django.contrib.auth.models import Group, User
from django.db import connection

from fleet.choices import NodeKind
from fleet.models import Manifest, Node, Rack, Site, Sku
from fleet.roles import SITE_TECH
from provisioning.choices import OPEN_ROLLOUT_STATES, RolloutNodeStatus, RolloutState
from provisioning.core.plans import plan
from provisioning.day2.rollouts import start_rollout
from provisioning.day2.waves import WavePolicy
from provisioning.intake.bulk import enroll_targets, read_targets
from provisioning.models import PhaseRecord, Rollout

from . import bench_firmware_accounting as count
from . import processes
from .artifacts import artifact_sha256
from .bench import percentile
from .enrollment import publish
from .hall import LabHall
from .manifests import TARGET_FIRMWARE, device_manifest_yaml
from .site import LabSite

FLAVOUR = "nvl_switch"
SKU_NAME = "lab-nvlink-switch-tray-fleet"
NEW_BMC = "88.0002.1200"
NODES_PER_RACK = 32
# The switch trays run no agent: the agents' URL is never called.
NO_AGENT_API = "http://127.0.0.1:9"


@dataclass
class FirmwareBenchConfig:
    nodes: int = 741
    sites: int = 3
    site_cap: int = 16
    rack_cap: int = 0
    concurrency: int = 48
    canary: int = 5
    wave_growth: int = 2
    failure_threshold_pct: int = 10
    speed: float = 40.0
    workers: int = 2
    worker_threads: int = 16
    enroll_concurrency: int = 16
    seed: int = 0
    timeout_s: float = 3600.0


def run_firmware_bench(config: FirmwareBenchConfig, log_dir: Path | None = None) -> dict:
    """Set the fleet up, roll the newer BMC image out over it, and return the measurements."""
    with tempfile.TemporaryDirectory(prefix="greenlight-fw-") as scratch:
        return _run(config, Path(log_dir or scratch))


def _run(config: FirmwareBenchConfig, log_dir: Path) -> dict:
    load_before = os.getloadavg()
    started = time.perf_counter()
    hall = LabHall(config.nodes, flavours=(FLAVOUR,), speed=config.speed, seed=config.seed)
    old_bmc = TARGET_FIRMWARE[FLAVOUR]["bmc"]
    for node in hall.nodes:
        node.firmware["bmc"], node.power = old_bmc, "On"  # in service, on the published image
    site = LabSite(hall, NO_AGENT_API)
    site.start()
    try:
        hall_s = time.perf_counter() - started
        v1 = _publish_v1(site.artifact_url)
        started = time.perf_counter()
        node_ids = _enroll(hall, v1, config)
        enroll_s = time.perf_counter() - started
        v2 = _publish_newer_bmc(v1)
        with _greenlight(config, log_dir) as workers:
            cpu = _CpuMeter(workers)
            rollout, wall_s = _roll_out(v2, config)
            result = _measure(rollout, hall, config, wall_s, node_ids)
            result["cpu_s_per_node"] = cpu.per_node(len(node_ids))
    finally:
        site.stop()
    result["set_up_s"] = {"hall": round(hall_s, 1), "enroll": round(enroll_s, 1)}
    result["machine"] = {
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "database": connection.vendor,
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
    }
    return result


@contextmanager
def _greenlight(config: FirmwareBenchConfig, log_dir: Path) -> Iterator[list]:
    """Greenlight's workers and beat, as a lab run starts them; yields the workers."""
    env = processes.child_env(
        GREENLIGHT_TIME_SCALE=config.speed,
        GREENLIGHT_STEP_LEASE_S=30,
        GREENLIGHT_SWEEP_GRACE_S=5,
        GREENLIGHT_SWEEP_SECONDS=2,
        GREENLIGHT_BEAT_LEASE_S=6,
    )
    log_dir.mkdir(parents=True, exist_ok=True)
    with ExitStack() as stack:
        workers = []
        for i in range(config.workers):
            log = stack.enter_context(open(log_dir / f"worker{i}.log", "ab"))
            worker = processes.start_worker(
                env, concurrency=config.worker_threads, name=f"fw{i}", log=log
            )
            stack.callback(processes.stop, worker)
            workers.append(worker)
        log = stack.enter_context(open(log_dir / "beat.log", "ab"))
        stack.callback(processes.stop, processes.start_beat(env, log_dir / "beat-schedule", log))
        yield workers


def _publish_v1(artifact_url: str) -> Manifest:
    sku = _sku()
    return publish(
        Manifest, sku, lambda v: device_manifest_yaml(FLAVOUR, sku.name, artifact_url, version=v)
    )


def _sku() -> Sku:
    sku, _ = Sku.objects.get_or_create(
        name=SKU_NAME,
        defaults={"description": "Lab NVLink switch tray (firmware benchmark)", "gpu_count": 0,
                  "nic_count": 0, "nic_line_rate_gbps": 0, "dpu_count": 0, "drive_count": 0},
    )  # fmt: skip
    return sku


def _publish_newer_bmc(manifest: Manifest) -> Manifest:
    """The SKU's next manifest: the same, with a newer BMC image."""
    draft = manifest.clone_as_draft()
    spec = yaml.safe_load(draft.yaml_text)
    bmc = spec["firmware"]["bmc"]
    name = f"bmc-{NEW_BMC}.bin"
    bmc.update(version=NEW_BMC, url=bmc["url"].rsplit("/", 1)[0] + f"/{name}")
    bmc["sha256"] = artifact_sha256(name)
    draft.yaml_text = yaml.safe_dump(spec, sort_keys=False)
    draft.full_clean()
    draft.save()
    draft.publish()
    return draft


def placement(index: int, nodes: int, sites: int) -> tuple[str, str, int]:
    """(site, rack, position) of node `index`: the sites take equal blocks, racks of 32."""
    per_site = -(-nodes // sites)
    site, within = divmod(index, per_site)
    rack, slot = divmod(within, NODES_PER_RACK)
    return f"fw-site-{site + 1}", f"fw-{site + 1}-r{rack + 1:02d}", slot + 1


def _enroll(hall: LabHall, v1: Manifest, config: FirmwareBenchConfig) -> list[int]:
    """Enroll every BMC through the bulk intake, as enroll_bmcs does; then mark the nodes
    switch trays on v1, as enroll_member and a finished run would."""
    rows = ["bmc_address,bmc_username,bmc_password,sku,rack,position,fingerprint"]
    for index, bmc in enumerate(hall.bmcs):
        site_name, rack_name, position = placement(index, config.nodes, config.sites)
        site, _ = Site.objects.get_or_create(name=site_name)
        Rack.objects.get_or_create(site=site, name=rack_name, defaults={"height_u": 42})
        rows.append(
            f"{bmc.https_url},{bmc.node.username},{bmc.node.password},{SKU_NAME},"
            f"{site_name}/{rack_name},{position},{bmc.cert_fingerprint}"
        )
    targets, errors = read_targets("\n".join(rows) + "\n")
    if errors:
        raise RuntimeError(f"the lab's targets file was refused: {errors[0]}")
    report = enroll_targets(targets, concurrency=config.enroll_concurrency, actor_label="bench")
    if report.failed:
        first = report.failed[0]
        raise RuntimeError(f"{len(report.failed)} BMCs not enrolled; first: {first.error}")
    nodes = Node.objects.filter(serial__in=[outcome.serial for outcome in report.enrolled])
    nodes.update(kind=NodeKind.SWITCH_TRAY, manifest=v1)
    return list(nodes.values_list("pk", flat=True))


def _roll_out(manifest: Manifest, config: FirmwareBenchConfig) -> tuple[Rollout, float]:
    """Start the rollout and wait until it ends or pauses; (its row, wall seconds)."""
    user, _ = User.objects.get_or_create(username="bench-firmware")
    user.groups.add(Group.objects.get(name=SITE_TECH))
    policy = WavePolicy(
        canary=config.canary,
        wave_growth=config.wave_growth,
        failure_threshold_pct=config.failure_threshold_pct,
        site_cap=config.site_cap,
        rack_cap=config.rack_cap,
    )
    started = time.perf_counter()
    rollout = start_rollout(manifest, actor=user, concurrency=config.concurrency, policy=policy)
    deadline = started + config.timeout_s
    while time.perf_counter() < deadline:
        rollout.refresh_from_db()
        if rollout.state not in OPEN_ROLLOUT_STATES or rollout.state == RolloutState.PAUSED:
            break
        time.sleep(0.5)
    return rollout, time.perf_counter() - started


def _measure(rollout, hall, config, wall_s, node_ids) -> dict[str, Any]:
    entries = list(rollout.entries.select_related("node__rack__site"))
    site_of = {e.run_id: e.node.rack.site.name for e in entries if e.run_id}
    in_flight = [
        count.Span(e.node.rack.site.name, e.started_at, e.finished_at)
        for e in entries
        if e.started_at and e.finished_at
    ]
    updates = [
        count.Span(site_of[r.run_id], r.started_at, r.finished_at)
        for r in PhaseRecord.objects.filter(run_id__in=site_of, phase="bmc_firmware")
        if r.started_at and r.finished_at
    ]
    by_site = count.peaks_by_group(in_flight)
    node_lab_s = [(s.end - s.start).total_seconds() * config.speed for s in in_flight]
    done = sum(1 for e in entries if e.status == RolloutNodeStatus.DONE)
    failed = [e for e in entries if e.status == RolloutNodeStatus.FAILED]
    makespan_lab_s = wall_s * config.speed
    rows = [
        count.Row(e.wave, e.node.rack.site.name, e.status, e.started_at, e.finished_at)
        for e in entries
    ]
    waves = count.waves(rows, config.speed, config.site_cap, config.concurrency)
    median = _round(percentile(node_lab_s, 0.5))
    fastest = _round(min(node_lab_s, default=None))
    return {
        "config": asdict(config),
        "node_kind": NodeKind.SWITCH_TRAY.value,
        "plan": plan(rollout.manifest, node_kind=NodeKind.SWITCH_TRAY),
        "bmc_from": TARGET_FIRMWARE[FLAVOUR]["bmc"],
        "bmc_to": NEW_BMC,
        "state": rollout.state,
        "reason": rollout.reason,
        "finished": rollout.state == RolloutState.FINISHED,
        "done": done,
        "failed": len(failed),
        "failures": sorted({e.reason for e in failed})[:10],
        "makespan_wall_s": round(wall_s, 1),
        "makespan_lab_s": round(makespan_lab_s, 1),
        "nodes_per_hour_lab": round(done / (makespan_lab_s / 3600), 1) if wall_s else None,
        "nodes_per_hour_wall": round(done / (wall_s / 3600), 1) if wall_s else None,
        "node_lab_s": {
            "p50": median,
            "p95": _round(percentile(node_lab_s, 0.95)),
            "max": _round(max(node_lab_s, default=None)),
        },
        "waves": waves,
        # The least the waves and caps allow: each wave's fewest node-times at the fastest
        # node's pace. What the makespan has above it is the control plane's and the machine's.
        "makespan_bound_lab_s": round(sum(w["rounds"] for w in waves) * (fastest or 0.0), 1),
        "in_flight_peak": {"all_sites": count.peak(in_flight), "by_site": by_site},
        "site_cap": config.site_cap,
        "caps_honoured": count.caps_honoured(by_site, config.site_cap)
        and count.peak(in_flight) <= config.concurrency,
        "bmc_updates_peak": {
            "all_sites": count.peak(updates),
            "by_site": count.peaks_by_group(updates),
        },
        "bmc_acts": {
            "max_concurrent_per_bmc": max(n.most_acts_in_flight for n in hall.nodes),
            "bmcs_flashed": sum(1 for n in hall.nodes if "bmc" in n.flashes),
            "bmcs_on_new_image": sum(1 for n in hall.nodes if n.firmware["bmc"] == NEW_BMC),
        },
        "enrolled": len(node_ids),
    }


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 1)


class _CpuMeter:
    """CPU seconds the workers and this process (the lab's BMCs) use from now. Not the
    datastores': on a shared machine their processes serve others too."""

    def __init__(self, workers) -> None:
        self.workers = [psutil.Process(w.pid) for w in workers]
        self.own = psutil.Process()
        self.before = self._read()

    def _read(self) -> dict[str, float]:
        def cpu(procs) -> float:
            total = 0.0
            for proc in procs:
                try:
                    for one in [proc, *proc.children(recursive=True)]:
                        times = one.cpu_times()
                        total += times.user + times.system
                except psutil.Error:
                    continue
            return total

        return {"greenlight_workers": cpu(self.workers), "lab": cpu([self.own])}

    def per_node(self, nodes: int) -> dict[str, float]:
        after = self._read()
        return {
            name: round((after[name] - self.before.get(name, 0.0)) / max(nodes, 1), 4)
            for name in sorted(after)
        }
