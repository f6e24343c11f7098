"""The bring-up benchmark: a large lab deployment through the full pipeline and gates.

It measures what Greenlight claims: makespan against one node's uncontended time, first-pass
rate of healthy nodes, hardware faults caught and named, healthy nodes wrongly failed, the
orchestration's CPU per node, tasks per second, queries per phase, peak worker memory, and the
event-to-browser latency of a WebSocket client watching every rack.
"""

from __future__ import annotations

import asyncio
import json
import os
import platform
import statistics
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

from fleet.choices import EventKind, NodeState
from fleet.models import Event, Rack
from fleet.roles import SITE_TECH
from provisioning.models import PhaseRecord, Run

from .run import LabRun, LabRunConfig, healthy_ok


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


class ResourceSampler:
    """Samples the CPU time and memory of Greenlight's processes while the run goes."""

    def __init__(self, web, workers):
        self.procs = {"web": [psutil.Process(web.pid)]}
        self.procs["workers"] = [psutil.Process(w.pid) for w in workers]
        self.peak_worker_rss = 0
        self.cpu: dict[int, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.wait(1.0):
            self.sample()

    def sample(self) -> None:
        for role, procs in self.procs.items():
            for proc in procs:
                try:
                    times = proc.cpu_times()
                    self.cpu[proc.pid] = times.user + times.system
                    if role == "workers":
                        rss = proc.memory_info().rss
                        self.peak_worker_rss = max(self.peak_worker_rss, rss)
                except psutil.Error:
                    pass

    def stop(self) -> None:
        self.sample()
        self._stop.set()
        self._thread.join(timeout=5)


class LiveWatcher:
    """A WebSocket client subscribed to every rack, noting when each batch arrives."""

    def __init__(self, web_url: str, rack_ids: list[int]):
        self.web_url = web_url
        self.rack_ids = rack_ids
        self.received: list[tuple[float, dict]] = []
        self._stop: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread = threading.Thread(target=self._run, daemon=True)
        user, _ = User.objects.get_or_create(username="bench-watcher")
        from django.contrib.auth.models import Group

        user.groups.add(Group.objects.get(name=SITE_TECH))
        client = Client(HTTP_HOST="127.0.0.1")
        client.force_login(user)
        self.cookie = client.cookies[settings.SESSION_COOKIE_NAME].value
        self._ready = threading.Event()

    def start(self) -> None:
        self._thread.start()
        self._ready.wait(30)

    def _run(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._loop.run_until_complete(self._watch_all())

    async def _watch_all(self) -> None:
        import aiohttp

        self._stop = asyncio.Event()
        port = self.web_url.rsplit(":", 1)[1]
        headers = {"Origin": f"http://127.0.0.1:{port}", "Cookie": f"sessionid={self.cookie}"}
        base = self.web_url.replace("http://", "ws://")
        async with aiohttp.ClientSession() as http:
            sockets = [
                await http.ws_connect(f"{base}/ws/rack/{rack_id}/", headers=headers)
                for rack_id in self.rack_ids
            ]
            self._ready.set()
            readers = [asyncio.ensure_future(self._read(ws)) for ws in sockets]
            await self._stop.wait()
            for ws in sockets:
                await ws.close()
            await asyncio.gather(*readers, return_exceptions=True)

    async def _read(self, ws) -> None:
        async for msg in ws:
            if msg.type.name == "TEXT":
                self.received.append((time.time(), json.loads(msg.data)))

    def stop(self) -> None:
        if self._loop and self._stop:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(timeout=10)

    def latencies_ms(self) -> list[float]:
        """For each event, the time from its commit to the first batch that carried it."""
        rows = Event.objects.filter(node__rack_id__in=self.rack_ids).values_list(
            "pk", "node_id", "created_at"
        )
        events = {pk: (node_id, created.timestamp()) for pk, node_id, created in rows}
        by_node: dict[int, list[tuple[int, float]]] = {}
        for pk, (node_id, at) in sorted(events.items()):
            by_node.setdefault(node_id, []).append((pk, at))
        out = []
        for received_at, batch in sorted(self.received, key=lambda r: r[0]):
            for key, change in (batch.get("nodes") or {}).items():
                queue = by_node.get(int(key), [])
                while queue and queue[0][0] <= change["seq"]:
                    out.append((received_at - queue.pop(0)[1]) * 1000)
        return out


def queries_logged(directory: Path) -> int:
    return sum(json.loads(p.read_text())["queries"] for p in directory.glob("*.json"))


def state_plot(path: Path, speed: float, start: float, node_ids: list[int]) -> None:
    """Nodes per state over lab time, from the state-change events: the deployment going green."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from fleet.choices import NODE_STATE_COLORS

    counts: dict[str, int] = {NodeState.ENROLLED: len(node_ids)}
    series: dict[str, list[tuple[float, int]]] = {
        s: [(0.0, counts.get(s, 0))] for s in NodeState.values
    }
    for created, data in (
        Event.objects.filter(kind=EventKind.STATE_CHANGED)
        .order_by("pk")
        .values_list("created_at", "data")
    ):
        t = max(0.0, (created.timestamp() - start) * speed / 3600)
        for state, delta in ((data.get("from"), -1), (data.get("to"), 1)):
            if state in series:
                counts[state] = counts.get(state, 0) + delta
                series[state].append((t, counts[state]))
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
    """One node's uncontended lab time: a healthy pair (the fabric gate needs a partner)."""
    # Another seed: the calibration pair must not share serials with the deployment's nodes.
    single = LabRunConfig(**{**asdict(config), "nodes": 2, "faults": "none", "racks": 1,
                             "workers": 1, "rack": "CAL-R01", "site": "calibration",
                             "seed": config.seed + 500})  # fmt: skip
    with LabRun(single, log_dir=log_dir / "calibration") as lab:
        result = lab.run_pass()
    return statistics.median(n["lab_seconds"] for n in result["nodes"])


def run_bench(config: LabRunConfig, log_dir: Path, plot: Path) -> dict[str, Any]:
    """Run the benchmark and return its numbers (the JSON the command writes)."""
    queries_dir = log_dir / "queries"
    config.extra_env = {**config.extra_env, "GREENLIGHT_QUERY_LOG_DIR": str(queries_dir)}
    single_node_lab_s = calibrate(config, log_dir)
    for stale in queries_dir.glob("*.json"):
        stale.unlink()
    with LabRun(config, log_dir=log_dir) as lab:
        racks = list(
            Rack.objects.filter(nodes__in=lab.nodes).distinct().values_list("pk", flat=True)
        )
        watcher = LiveWatcher(lab.env_url, racks)
        watcher.start()
        sampler = ResourceSampler(lab.web, lab.workers)
        sampler.start()
        started = time.time()
        runs = lab.start_pass()
        finished = lab.wait(runs)
        wall_s = time.time() - started
        sampler.stop()
        time.sleep(1.0)  # the last coalescing window
        watcher.stop()
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
        latencies = watcher.latencies_ms()
        state_plot(plot, config.speed, first.created_at.timestamp(), [n.pk for n in lab.nodes])
    healthy = [n for n in nodes if not n["hardware_fault"]]
    faulty = [n for n in nodes if n["hardware_fault"]]
    cpu_s = sum(sampler.cpu.values())
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
        "makespan_ratio": round(makespan_lab_s / single_node_lab_s, 3) if makespan_lab_s else None,
        "wall_s": round(wall_s, 1),
        "cpu_s_per_node": round(cpu_s / max(len(nodes), 1), 3),
        "tasks_per_s": round(steps / wall_s, 1),
        "queries_per_phase": round(queries_logged(queries_dir) / max(phases, 1), 1),
        "worker_peak_rss_mb": round(sampler.peak_worker_rss / 2**20, 1),
        "event_latency_ms": {
            "p50": _round(percentile(latencies, 0.5)),
            "p99": _round(percentile(latencies, 0.99)),
            "events": len(latencies),
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
