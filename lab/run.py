"""A lab run: a rack of simulated nodes provisioned through Greenlight's real pipeline.

It starts the lab (BMCs, agents, artifacts), Greenlight's web server and Celery workers as child
processes, enrolls the rack over Redfish, injects the fault mix, starts a run on every node, and
waits (polling the database, the source of truth) until every run has ended. Used by `manage.py
lab run`, the tests and the benchmark.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.db.models import Count, Q

from fleet.choices import EventKind, NodeState
from fleet.lifecycle import RUN_STARTABLE_STATES
from fleet.models import Event, Node
from provisioning.choices import ACTIVE_RUN_STATUSES, PhaseStatus
from provisioning.core.runs import start_runs
from provisioning.models import Run

from . import processes
from .enrollment import enroll_hall, publish_lab_documents
from .fault_mix import describe, is_hardware, plan_faults
from .hall import LabHall
from .proxy import TcpProxy
from .site import LabSite


@dataclass
class LabRunConfig:
    nodes: int = 16
    faults: str = "standard"
    seed: int = 0
    speed: float = 200.0
    passes: int = 1
    flavour: str = "dell"
    # Several vendors in one hall: node i gets flavours[i % len(flavours)]; empty: `flavour`.
    flavours: tuple[str, ...] = ()
    workers: int = 1
    concurrency: int = 16
    # Node planes the agents report to; more than one sit behind a proxy (lab/proxy.py), as an
    # installation's web processes sit behind its load balancer.
    node_planes: int = 1
    soak_hours: float = 1.0
    power_batch: int = 4
    site: str = "lab"
    rack: str = "LAB-R01"
    racks: int = 1
    timeout_s: float = 900.0
    extra_env: dict[str, str] = field(default_factory=dict)

    def hall_flavours(self) -> tuple[str, ...]:
        """The flavours the hall cycles through."""
        return self.flavours or (self.flavour,)


class LabRun:
    """Context manager: everything is up inside the block; `run_pass()` does one pass."""

    def __init__(self, config: LabRunConfig, log_dir: Path | None = None):
        self.config = config
        self.log_dir = Path(log_dir or "var/lab")
        self.fault_plan = plan_faults(config.nodes, config.faults, config.seed)
        self.hall = LabHall(
            config.nodes, flavours=config.hall_flavours(), speed=config.speed, seed=config.seed
        )
        self.site: LabSite | None = None
        self.web = None
        self.agent_api = None
        # Every node plane (the first is `agent_api`) and, with several, the proxy before them.
        self.node_planes: list = []
        self.proxy: TcpProxy | None = None
        self.workers: list = []
        self.beat = None
        self.env: dict[str, str] = {}
        self.nodes: list[Node] = []
        self._logs: list = []
        self._restore_sigterm = lambda: None

    def _log(self, name: str):
        self.log_dir.mkdir(parents=True, exist_ok=True)
        handle = open(self.log_dir / f"{name}.log", "ab")  # noqa: SIM115 (closed in __exit__)
        self._logs.append(handle)
        return handle

    def __enter__(self) -> LabRun:
        c = self.config
        defaults = {
            "GREENLIGHT_TIME_SCALE": c.speed,
            "GREENLIGHT_POWER_ON_BATCH": c.power_batch,
            "GREENLIGHT_STEP_LEASE_S": 30,
            "GREENLIGHT_SWEEP_GRACE_S": 5,
            "GREENLIGHT_SWEEP_SECONDS": 2,
            # A beat killed by an earlier run on this database is taken over in seconds.
            "GREENLIGHT_BEAT_LEASE_S": 6,
        }
        # extra_env may override any of these (a failover test's shorter step lease).
        self.env = processes.child_env(**{**defaults, **c.extra_env})
        self._restore_sigterm = processes.interrupt_on_sigterm()
        try:
            self.web, self.env_url = processes.start_web(self.env, log=self._log("web"))
            # The agents talk to a server of their own, as in production (docs/operators-guide.md):
            # hundreds of agents' check-ins and results must not queue the browsers' live updates.
            agent_api_url = self._start_node_planes()
            self.site = LabSite(self.hall, agent_api_url)
            self.site.start()
            self.nodes = self.prepare()
            for i in range(c.workers):
                self.add_worker(name=f"lab{i}")
            self.beat = processes.start_beat(
                self.env, self.log_dir / "beat-schedule", log=self._log("beat")
            )
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _start_node_planes(self) -> str:
        """Start the node planes (and the proxy before several); the URL the agents get."""
        urls = []
        for i in range(self.config.node_planes):
            name = "agent-api" if i == 0 else f"agent-api{i}"
            proc, url = processes.start_agent_api(self.env, log=self._log(name))
            self.node_planes.append(proc)
            urls.append(url)
        self.agent_api = self.node_planes[0]
        if len(urls) == 1:
            return urls[0]
        self.proxy = TcpProxy([("127.0.0.1", int(url.rsplit(":", 1)[1])) for url in urls])
        self.proxy.start()
        return self.proxy.url

    def prepare(self) -> list[Node]:
        """Publish the documents, enroll the hall and inject the fault mix; the nodes."""
        c = self.config
        assert self.site is not None
        for flavour in dict.fromkeys(c.hall_flavours()):
            publish_lab_documents(flavour, self.site.artifact_url, soak_hours=c.soak_hours)
        nodes = enroll_hall(self.hall, site=c.site, rack=c.rack, racks=c.racks)
        for index, specs in self.fault_plan.items():
            for spec in specs:
                self.hall.set_fault(index, spec)
        return nodes

    def add_worker(self, name: str = "lab"):
        worker = processes.start_worker(
            self.env, concurrency=self.config.concurrency, name=name, log=self._log(name)
        )
        self.workers.append(worker)
        return worker

    def __exit__(self, *exc_info: object) -> None:
        for proc in [self.beat, *self.workers, self.web, *self.node_planes]:
            if proc is not None:
                processes.stop(proc)
        if self.site is not None:
            self.site.stop()
        if self.proxy is not None:
            self.proxy.stop()
        for handle in self._logs:
            handle.close()
        self._restore_sigterm()

    # -- passes ----------------------------------------------------------------------------

    def start_pass(self) -> dict[int, Run]:
        """Start a run on every node that can take one; node id -> run."""
        nodes = Node.objects.filter(
            pk__in=[n.pk for n in self.nodes], state__in=RUN_STARTABLE_STATES
        ).select_related("rack", "sku")
        runs, refused = start_runs(nodes.order_by("pk"))
        if refused:
            raise RuntimeError(f"runs refused to start: {refused}")
        return runs

    def wait(self, runs: dict[int, Run], poll_s: float = 0.25) -> bool:
        """Poll until none of `runs` is active (True) or the time limit passes (False)."""
        deadline = time.monotonic() + self.config.timeout_s
        ids = {r.pk for r in runs.values()}
        # A range, not `pk IN (...)`: with hundreds of runs, building that statement four times
        # a second was a fifth of the lab's CPU, on the cores the control plane is measured on.
        span = (min(ids), max(ids)) if ids else (0, -1)
        active = Run.objects.filter(pk__range=span, status__in=ACTIVE_RUN_STATUSES)
        # The runs of one pass are usually the whole range: then whether any is active is one
        # EXISTS, not 5,000 ids read four times a second (a sixth of the lab's CPU at 5,000).
        whole_range = len(ids) == span[1] - span[0] + 1
        while time.monotonic() < deadline:
            processes.raise_if_stopping()
            if whole_range:
                if not active.exists():
                    return True
            elif not ids.intersection(active.values_list("pk", flat=True)):
                return True
            time.sleep(poll_s)
        return False

    def run_pass(self) -> dict[str, Any]:
        """One pass over the rack; the summary of every node."""
        runs = self.start_pass()
        finished = self.wait(runs)
        return {"finished": finished, "nodes": self.summary(runs)}

    def summary(self, runs: dict[int, Run]) -> list[dict[str, Any]]:
        index_of = {bmc.node.serial: bmc.node.index for bmc in self.hall.bmcs}
        out = []
        for node in Node.objects.filter(pk__in=[n.pk for n in self.nodes]).order_by("pk"):
            run = runs.get(node.pk)
            specs = self.fault_plan.get(index_of[node.serial], [])
            out.append(
                {
                    "serial": node.serial,
                    "injected_faults": [describe(s) for s in specs],
                    "final_state": node.state,
                    "failed_component": failed_component(run) if run else "",
                    "reason": run_reason(run) if run else "not started: node is " + node.state,
                    **phase_counts(run),
                    "lab_seconds": lab_seconds(run, self.config.speed),
                    "hardware_fault": any(is_hardware(s) for s in specs),
                }
            )
        return out


def failed_component(run: Run) -> str:
    run.refresh_from_db()
    event = (
        Event.objects.filter(node_id=run.node_id, kind=EventKind.PHASE_FAILED, data__run=run.pk)
        .order_by("-id")
        .first()
    )
    return str(event.data.get("component", "")) if event else ""


def run_reason(run: Run) -> str:
    run.refresh_from_db()
    return run.last_error or run.wait_reason or run.get_status_display()


def phase_counts(run: Run | None) -> dict[str, int]:
    if run is None:
        return {"phases_run": 0, "phases_skipped": 0}
    counts = run.phases.aggregate(
        done=Count("pk", filter=Q(status=PhaseStatus.DONE)),
        skipped=Count("pk", filter=Q(status=PhaseStatus.SKIPPED)),
    )
    return {"phases_run": counts["done"], "phases_skipped": counts["skipped"]}


def lab_seconds(run: Run | None, speed: float) -> float:
    if run is None or run.started_at is None:
        return 0.0
    run.refresh_from_db()
    end = run.finished_at or run.started_at
    return round((end - run.created_at).total_seconds() * speed, 1)


def healthy_ok(node: dict[str, Any]) -> bool:
    """A node without hardware faults must end provisioned (validating or later, not failed)."""
    return node["final_state"] in (
        NodeState.AWAITING_APPROVAL,
        NodeState.VALIDATING,
        NodeState.IN_SERVICE,
    )
