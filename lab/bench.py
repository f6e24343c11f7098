"""The bring-up benchmark: a large lab deployment through the full pipeline and gates.

It measures what Greenlight claims: makespan against one node's uncontended time, first-pass
rate of healthy nodes, hardware faults caught and named, healthy nodes wrongly failed, the
orchestration's CPU per node, tasks per second, queries per phase, peak worker memory, and the
event-to-browser latency of a WebSocket client watching every rack.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import threading
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import psutil
from django.conf import settings
from django.contrib.auth.models import User
from django.db.models import Sum
from django.test import Client
from django.utils import timezone

from fleet.choices import NODE_STATE_COLORS, EventKind, NodeState
from fleet.models import Event, Rack
from fleet.roles import SITE_TECH
from provisioning.models import PhaseRecord, Run

from . import bench_calibration, processes
from .bench_yardstick import Yardstick, in_work_units
from .run import LabRun, LabRunConfig, healthy_ok


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def with_children(roots: list[psutil.Process]) -> list[psutil.Process]:
    """The processes and all their children: a gunicorn master's worker does the serving."""
    found = list(roots)
    for root in roots:
        try:
            found.extend(root.children(recursive=True))
        except psutil.Error:
            pass
    return found


def datastore_cpu() -> dict[str, float]:
    """CPU seconds this machine's PostgreSQL and Redis have used so far: the postmaster with its
    backends, live (their own times) and gone (the postmaster's children times, as each
    connection's backend exits when it closes), and every redis-server. Absent when not local."""
    used: dict[str, float] = {}
    for proc in psutil.process_iter(["name", "ppid"]):
        try:
            name = proc.info["name"]
            if name == "redis-server":
                times = proc.cpu_times()
                used["redis"] = used.get("redis", 0.0) + times.user + times.system
            elif name == "postgres" and psutil.Process(proc.info["ppid"]).name() != "postgres":
                times = proc.cpu_times()
                total = times.user + times.system + times.children_user + times.children_system
                for backend in proc.children():
                    backend_times = backend.cpu_times()
                    total += backend_times.user + backend_times.system
                used["postgres"] = used.get("postgres", 0.0) + total
        except psutil.Error:
            continue
    return used


class ResourceSampler:
    """Samples the CPU time and memory of Greenlight's processes while the run goes."""

    def __init__(self, web, agent_api, workers):
        self.procs = {
            "web": [psutil.Process(web.pid)],
            "agent_api": [psutil.Process(agent_api.pid)],
            "workers": [psutil.Process(w.pid) for w in workers],
        }
        # The lab (BMCs, agents, artifacts) runs in this process: not orchestration, but it
        # shares the cores, so its cost is reported beside it.
        self.procs["lab"] = [psutil.Process()]
        self.peak_worker_rss = 0
        # Whether a size fits the machine: each role's peak, the peak of all at one moment, and
        # the least memory the machine had left.
        self.peak_rss_by_role: dict[str, int] = {}
        self.peak_total_rss = 0
        self.least_available = psutil.virtual_memory().available
        self.cpu: dict[int, float] = {}
        self.role: dict[int, str] = {}
        self.baseline: dict[int, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def start(self) -> None:
        self.datastores_at_start = datastore_cpu()
        self.sample()
        # The lab process did the calibration and the set-up before: count from here.
        self.baseline = {pid: cpu for pid, cpu in self.cpu.items() if self.role[pid] == "lab"}
        self._thread.start()

    def cpu_s(self, *roles: str) -> float:
        """CPU seconds used by processes of these roles since start()."""
        return sum(
            cpu - self.baseline.get(pid, 0.0)
            for pid, cpu in self.cpu.items()
            if self.role[pid] in roles
        )

    def _loop(self) -> None:
        while not self._stop.wait(1.0):
            self.sample()

    def sample(self) -> None:
        rss_by_role: dict[str, int] = {}
        for role, roots in self.procs.items():
            # The lab's children are Greenlight's own processes, sampled under their roles.
            for proc in roots if role == "lab" else with_children(roots):
                try:
                    times = proc.cpu_times()
                    self.cpu[proc.pid] = times.user + times.system
                    self.role[proc.pid] = role
                    rss = proc.memory_info().rss
                    rss_by_role[role] = rss_by_role.get(role, 0) + rss
                    if role == "workers":
                        self.peak_worker_rss = max(self.peak_worker_rss, rss)
                except psutil.Error:
                    pass
        for role, rss in rss_by_role.items():
            self.peak_rss_by_role[role] = max(self.peak_rss_by_role.get(role, 0), rss)
        self.peak_total_rss = max(self.peak_total_rss, sum(rss_by_role.values()))
        self.least_available = min(self.least_available, psutil.virtual_memory().available)

    def memory(self) -> dict[str, Any]:
        """Peak resident memory by role and of all at once, and the least the machine had left."""
        return {
            "peak_rss_mb_by_process": {
                role: round(rss / 2**20, 1) for role, rss in sorted(self.peak_rss_by_role.items())
            },
            "peak_total_rss_mb": round(self.peak_total_rss / 2**20, 1),
            "machine_available_min_mb": round(self.least_available / 2**20, 1),
            "machine_total_mb": round(psutil.virtual_memory().total / 2**20, 1),
        }

    def stop(self) -> None:
        self.sample()
        self._stop.set()
        self._thread.join(timeout=5)
        self.datastores_at_stop = datastore_cpu()

    def datastore_cpu_s(self) -> dict[str, float]:
        """CPU seconds PostgreSQL and Redis used between start() and stop()."""
        before = self.datastores_at_start
        return {k: v - before.get(k, 0.0) for k, v in self.datastores_at_stop.items()}


class LiveWatcher:
    """A WebSocket client subscribed to every rack (lab/live_watch.py, a process of its own)."""

    def __init__(self, web_url: str, rack_ids: list[int], out: Path):
        self.web_url = web_url
        self.rack_ids = rack_ids
        self.out = out
        self.received: list[tuple[float, dict]] = []
        self.disconnects = 0
        self.unreadable_lines = 0
        self.proc: subprocess.Popen | None = None
        from django.contrib.auth.models import Group

        user, _ = User.objects.get_or_create(username="bench-watcher")
        user.groups.add(Group.objects.get(name=SITE_TECH))
        client = Client(HTTP_HOST="127.0.0.1")
        client.force_login(user)
        self.cookie = client.cookies[settings.SESSION_COOKIE_NAME].value

    def start(self) -> None:
        self.out.parent.mkdir(parents=True, exist_ok=True)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "lab.live_watch", "--url", self.web_url,
             "--cookie", self.cookie, "--out", str(self.out), *map(str, self.rack_ids)],
            cwd=processes.ROOT, stdout=subprocess.PIPE, text=True, start_new_session=True,
        )  # fmt: skip
        assert self.proc.stdout is not None
        if self.proc.stdout.readline().strip() != "ready":
            processes.stop(self.proc)
            raise RuntimeError("the live watcher did not connect")
        self.connected_at = timezone.now()

    def stop_watching(self) -> None:
        if self.proc is not None:
            processes.stop(self.proc)
            self.proc = None

    def read(self) -> None:
        """What the watcher wrote; a line that is not JSON is counted and left out (one torn
        line once cost a whole 5,000-node run its results)."""
        records = []
        with self.out.open() as lines:
            for line in lines:
                try:
                    records.append(json.loads(line))
                except ValueError:
                    self.unreadable_lines += 1
        self.received = [(r["at"], r["batch"]) for r in records if "batch" in r]
        # Sockets the server closed during the run (the watcher reconnected each, as a page does).
        self.disconnects = sum(1 for r in records if "closed" in r)

    def latencies_ms(self) -> dict[str, list[float]]:
        """For each event, the time from its commit to the first batch that carried it, by kind."""
        # Events from before the watcher connected (enrollment) were never sent to it.
        rows = Event.objects.filter(
            node__rack_id__in=self.rack_ids, created_at__gte=self.connected_at
        ).values_list("pk", "node_id", "created_at", "kind")
        by_node: dict[int, list[tuple[int, float, str]]] = {}
        for pk, node_id, created, kind in sorted(rows):
            by_node.setdefault(node_id, []).append((pk, created.timestamp(), kind))
        out: dict[str, list[float]] = {}
        for received_at, batch in sorted(self.received, key=lambda r: r[0]):
            for key, change in (batch.get("nodes") or {}).items():
                queue = by_node.get(int(key), [])
                while queue and queue[0][0] <= change["seq"]:
                    _, at, kind = queue.pop(0)
                    out.setdefault(kind, []).append((received_at - at) * 1000)
        return out


def queries_logged(directory: Path) -> int:
    return sum(json.loads(p.read_text())["queries"] for p in directory.glob("*.json"))


def gc_logged(directory: Path, nodes: int) -> dict[str, dict[str, float]]:
    """Per process role (web servers, workers): the garbage collector's seconds per node and
    passes, full ones apart."""
    totals: dict[str, dict[str, float]] = {}
    for path in directory.glob("*.json"):
        counted = json.loads(path.read_text()).get("gc")
        if counted:
            into = totals.setdefault(path.stem.split("-")[0], {})
            for key, value in counted.items():
                into[key] = into.get(key, 0) + value
    return {
        role: {
            "s_per_node": round(entry["seconds"] / max(nodes, 1), 4),
            "collections": entry["collections"],
            "full": entry["full"],
        }
        for role, entry in sorted(totals.items())
    }


def endpoints_logged(
    directory: Path, nodes: int, kind: str = "endpoints"
) -> dict[str, dict[str, float]]:
    """Per web endpoint, over every server process: requests per node, queries per request,
    CPU milliseconds per request and CPU seconds per node; costliest first. With `kind` "work",
    the same per worker task name and per engine look ("look:<phase>", a request being a look)."""
    totals: dict[str, dict[str, float]] = {}
    for path in directory.glob("*.json"):
        for name, entry in (json.loads(path.read_text()).get(kind) or {}).items():
            into = totals.setdefault(name, {"requests": 0, "queries": 0, "cpu_s": 0.0})
            for key in into:
                into[key] += entry.get(key, 0)
    out = {}
    for name, entry in sorted(totals.items(), key=lambda item: -item[1]["cpu_s"]):
        requests = max(entry["requests"], 1)
        out[name] = {
            "requests_per_node": round(entry["requests"] / max(nodes, 1), 1),
            "queries_per_request": round(entry["queries"] / requests, 2),
            "cpu_ms_per_request": round(entry["cpu_s"] * 1000 / requests, 2),
            "cpu_s_per_node": round(entry["cpu_s"] / max(nodes, 1), 4),
        }
    return out


def state_series(
    nodes: int, changes: list[tuple[float, str, str]]
) -> dict[str, list[tuple[float, int]]]:
    """Nodes per state over time from (time, from state, to state); every node starts enrolled."""
    counts: dict[str, int] = {NodeState.ENROLLED: nodes}
    series: dict[str, list[tuple[float, int]]] = {
        s: [(0.0, counts.get(s, 0))] for s in NodeState.values
    }
    for t, from_state, to_state in changes:
        for state, delta in ((from_state, -1), (to_state, 1)):
            if state in series:
                counts[state] = counts.get(state, 0) + delta
                series[state].append((t, counts[state]))
    return series


def state_plot(path: Path, speed: float, start: float, node_ids: list[int]) -> None:
    """Nodes per state over lab time, from the state-change events: the deployment going green."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = (
        # Only the deployment's nodes: the calibration rack's events share the database.
        Event.objects.filter(kind=EventKind.STATE_CHANGED, node_id__in=node_ids)
        .order_by("pk")
        .values_list("created_at", "data")
    )
    series = state_series(
        len(node_ids),
        [
            (max(0.0, (created.timestamp() - start) * speed / 3600), d.get("from"), d.get("to"))
            for created, d in rows
        ],
    )
    colours = {"green": "#2e9d4a", "blue": "#2f6fd6", "indigo": "#5b4fd1", "amber": "#d99a00",
               "red": "#d23c3c", "purple": "#8d3fc4", "gray": "#8a8f98", "orange": "#e07b1a",
               "teal": "#16948f", "black": "#222"}  # fmt: skip
    fig, ax = plt.subplots(figsize=(9, 4.5), dpi=100)
    for state, points in series.items():
        if max(c for _, c in points) == 0:
            continue
        xs, ys = zip(*points, strict=True)
        ax.step(xs, ys, where="post", label=NodeState(state).label,
                color=colours.get(NODE_STATE_COLORS[NodeState(state)], "#444"))  # fmt: skip
    ax.set_xlabel("lab time (hours)")
    ax.set_ylabel("nodes")
    ax.set_title("Nodes per state: the deployment going green")
    ax.legend(loc="center right", fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)


def calibrate(config: LabRunConfig, log_dir: Path) -> float:
    """One node's uncontended lab time: the median of a small healthy rack.

    Five nodes, because from five up the fabric gate gives every node four partners, as in the
    deployment's racks: a pair would give each node one partner and a shorter fabric gate.
    """
    # Another seed: the calibration nodes must not share serials with the deployment's nodes.
    single = LabRunConfig(**{**asdict(config), "nodes": 5, "faults": "none", "racks": 1,
                             "workers": 1, "rack": "CAL-R01", "site": "calibration",
                             "seed": config.seed + 500})  # fmt: skip
    with LabRun(single, log_dir=log_dir / "calibration") as lab:
        result = lab.run_pass()
    return bench_calibration.single_node_lab_s(result, config.timeout_s)


def run_bench(
    config: LabRunConfig, log_dir: Path, plot: Path, calibration: Path, *, reuse: bool = False
) -> dict[str, Any]:
    """Run the benchmark and return its numbers (the JSON the command writes).

    The calibration rack runs first and its result is stored at `calibration` with the commit;
    `reuse` takes the stored one instead, if it is of this commit, speed and soak
    (CalibrationRefused otherwise, before anything runs).
    """
    # The commit whose processes are measured: read before any starts (the tree may move on while
    # a long run goes, and the numbers are of what was running).
    commit = bench_calibration.current_commit()
    queries_dir = log_dir / "queries"
    config.extra_env = {**config.extra_env, "GREENLIGHT_QUERY_LOG_DIR": str(queries_dir)}
    if reuse:
        measured = bench_calibration.load(calibration, config)
    else:
        measured = bench_calibration.save(calibration, config, calibrate(config, log_dir), commit)
    single_node_lab_s = measured.single_node_lab_s
    for stale in queries_dir.glob("*.json"):
        stale.unlink()
    with LabRun(config, log_dir=log_dir) as lab:
        racks = list(
            Rack.objects.filter(nodes__in=lab.nodes).distinct().values_list("pk", flat=True)
        )
        watcher = LiveWatcher(lab.env_url, racks, log_dir / "live-batches.jsonl")
        watcher.start()
        try:
            sampler = ResourceSampler(lab.web, lab.agent_api, lab.workers)
            sampler.start()
            yardstick = Yardstick()
            yardstick.start()
            started = time.time()
            runs = lab.start_pass()
            finished = lab.wait(runs)
            wall_s = time.time() - started
            sampler.stop()
            yardstick.stop()
            time.sleep(1.0)  # the last coalescing window
        finally:
            # Its process leads a session of its own: a run stopped by a signal left it writing
            # into the next run's file (session 31).
            watcher.stop_watching()
        watcher.read()
        nodes = lab.summary(runs)
        run_ids = [r.pk for r in runs.values()]
        steps = Run.objects.filter(pk__in=run_ids).aggregate(total=Sum("step"))["total"] or 0
        phases = PhaseRecord.objects.filter(run_id__in=run_ids).exclude(status="pending").count()
        first = Run.objects.filter(pk__in=run_ids).order_by("created_at").first()
        last_end = max((r.finished_at for r in Run.objects.filter(pk__in=run_ids) if r.finished_at),
                       default=None)  # fmt: skip
        makespan_lab_s = (
            (last_end - first.created_at).total_seconds() * config.speed if last_end else None
        )
        by_kind = watcher.latencies_ms()
        latencies = [ms for values in by_kind.values() for ms in values]
        state_plot(plot, config.speed, first.created_at.timestamp(), [n.pk for n in lab.nodes])
    healthy = [n for n in nodes if not n["hardware_fault"]]
    faulty = [n for n in nodes if n["hardware_fault"]]
    reached = sum(1 for n in nodes if n["final_state"] == NodeState.AWAITING_APPROVAL)
    cpu_s = sampler.cpu_s("web", "agent_api", "workers")
    datastores = sampler.datastore_cpu_s()
    speed = yardstick.summary()
    return {
        "nodes": len(nodes),
        "racks": config.racks,
        "finished": finished,
        "healthy_first_pass_rate": round(
            sum(healthy_ok(n) for n in healthy) / max(len(healthy), 1), 4
        ),
        "faults_injected": len(faulty),
        "faults_caught": sum(1 for n in faulty if _caught(n)),
        "healthy_failed": sum(1 for n in healthy if not healthy_ok(n)),
        "makespan_lab_s": round(makespan_lab_s, 1) if makespan_lab_s else None,
        "single_node_lab_s": single_node_lab_s,
        "commit": commit,
        "calibration": {"commit": measured.commit, "reused": reuse},
        "makespan_ratio": round(makespan_lab_s / single_node_lab_s, 3) if makespan_lab_s else None,
        "wall_s": round(wall_s, 1),
        "cpu_s_per_node": round(cpu_s / max(len(nodes), 1), 3),
        "lab_cpu_s_per_node": round(sampler.cpu_s("lab") / max(len(nodes), 1), 3),
        # Where the orchestration's CPU goes: the browsers' server, the agents', the workers.
        "cpu_s_per_node_by_process": {
            role: round(sampler.cpu_s(role) / max(len(nodes), 1), 3)
            for role in ("web", "agent_api", "workers", "lab")
        },
        # A site pays for the database's and the broker's cores too (local ones only).
        "datastore_cpu_s_per_node": {
            name: round(used / max(len(nodes), 1), 3) for name, used in sorted(datastores.items())
        },
        "cpu_s_per_node_with_datastores": round(
            (cpu_s + sum(datastores.values())) / max(len(nodes), 1), 3
        ),
        # What the machine could do meanwhile (lab/bench_yardstick.py), and the CPU a node in
        # units of it: the figure that compares across runs on a machine whose speed moves.
        "machine_speed": speed,
        "cpu_work_units_per_node": in_work_units(cpu_s / max(len(nodes), 1), speed),
        # Each endpoint of both web servers: where the agents' API's CPU goes.
        "endpoints": endpoints_logged(queries_dir, len(nodes)),
        # Each worker task, and each phase's looks: where the workers' CPU goes.
        "worker_work": endpoints_logged(queries_dir, len(nodes), kind="work"),
        # The garbage collector's share of it, by role.
        "gc": gc_logged(queries_dir, len(nodes)),
        # Nodes brought to awaiting_approval per hour of the makespan: what a size delivers.
        "throughput": throughput(reached, makespan_lab_s, config.speed),
        "tasks_per_s": round(steps / wall_s, 1),
        "queries_per_phase": round(queries_logged(queries_dir) / max(phases, 1), 1),
        "worker_peak_rss_mb": round(sampler.peak_worker_rss / 2**20, 1),
        "memory": sampler.memory(),
        "event_latency_ms": {
            "p50": _round(percentile(latencies, 0.5)),
            "p99": _round(percentile(latencies, 0.99)),
            "events": len(latencies),
            "disconnects": watcher.disconnects,
            "unreadable_lines": watcher.unreadable_lines,
            "p99_by_kind": {k: _round(percentile(v, 0.99)) for k, v in sorted(by_kind.items())},
        },
        "speed": config.speed,
        "workers": config.workers,
        "seed": config.seed,
        "soak_hours": config.soak_hours,
        "database": settings.DATABASES["default"]["ENGINE"].rsplit(".", 1)[-1],
        "machine": {
            "cpus": os.cpu_count(),
            "memory_gb": round(psutil.virtual_memory().total / 2**30, 1),
            "platform": platform.platform(),
            "python": platform.python_version(),
        },
        "failed_nodes": [
            {
                k: n[k]
                for k in ("serial", "injected_faults", "final_state", "failed_component", "reason")
            }
            for n in nodes
            if n["final_state"] not in (NodeState.AWAITING_APPROVAL, NodeState.VALIDATING)
        ],
    }


def throughput(reached: int, makespan_lab_s: float | None, speed: float) -> dict[str, Any]:
    """Nodes that reached awaiting_approval, per lab hour and per real hour of the makespan."""
    if not makespan_lab_s:
        return {"nodes_to_awaiting_approval": reached, "per_lab_hour": None, "per_real_hour": None}
    hours = makespan_lab_s / 3600
    return {
        "nodes_to_awaiting_approval": reached,
        "per_lab_hour": round(reached / hours, 1),
        "per_real_hour": round(reached / (hours / speed), 1),
    }


def _round(value: float | None) -> float | None:
    return round(value, 1) if value is not None else None


def _caught(node: dict[str, Any]) -> bool:
    truth = {f["component"].lower() for f in node["injected_faults"] if f["kind"] == "hardware"}
    named = node["failed_component"].lower()
    return (
        bool(named)
        and node["final_state"] in ("failed", "quarantined")
        and any(part in named or named in part for part in truth)
    )
