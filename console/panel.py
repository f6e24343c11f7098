"""The node panel: a node's pipeline timeline, gate results, soak telemetry and recent events."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.utils import timezone

from acceptance.choices import VERDICT_COLORS, VERDICT_ICONS, Verdict
from acceptance.decisions import gate_problems
from acceptance.gates import GATES_BY_NAME, GateName
from acceptance.models import GateResult, SoakSample
from acceptance.parsers import PARSERS
from fleet.choices import EventKind, NodeKind, NodeState
from fleet.lifecycle import is_allowed
from fleet.models import Event, Node
from provisioning import clock
from provisioning.agents import logs as phase_logs
from provisioning.choices import ACTIVE_RUN_STATUSES, PHASE_STATUS_COLORS, PhaseStatus
from provisioning.core import progress
from provisioning.core.eta import Eta, run_eta
from provisioning.core.gates import step_name
from provisioning.core.phases import PHASES
from provisioning.core.progress import Progress
from provisioning.day2.behind import Behind, behind_of
from provisioning.day2.moves import Move, fitting
from provisioning.models import PhaseRecord, Run

from .charts import Series, line_chart
from .folding import EventGroup, fold_events
from .situation import Situation, situation

EVENT_TAIL = 25  # lines of the events list, a folded run of identical events being one
# Events read to fill those lines: enough that a long wait's repeated looks fold into one line
# and the events before it still show; one query, whatever the number.
EVENT_WINDOW = 200
# Phases a person can no longer skip: they are over.
SETTLED = (PhaseStatus.DONE, PhaseStatus.SKIPPED)
# Phases a run is held at: the one a skip would skip.
STUCK = (PhaseStatus.FAILED, PhaseStatus.RUNNING, PhaseStatus.WAITING)
UNDER_WAY = (PhaseStatus.RUNNING, PhaseStatus.WAITING)


@dataclass
class PhaseRow:
    name: str
    label: str
    band: str
    status: str
    status_label: str
    color: str
    attempts: int = 0
    duration_s: float | None = None
    # A phase under way: node time since it started ("12 min"), counted at each render.
    elapsed: str = ""
    changes: list[dict] = field(default_factory=list)
    error: str = ""
    wait_reason: str = ""
    progress: Progress | None = None  # a long phase's own, while it runs
    log_record: int | None = None  # the phase record whose log there is to read


def phase_records(run: Run | None) -> list[PhaseRecord]:
    """The run's phase records in run order (none without a run), each knowing if it has a log."""
    if not run:
        return []
    return list(phase_logs.with_relayed(PhaseRecord.objects.filter(run=run)).order_by("order"))


def log_of(record: PhaseRecord | None) -> int | None:
    """The record's id if it has a log to read, for the panel's link."""
    return record.pk if record is not None and phase_logs.has_log(record) else None


def elapsed_text(record: PhaseRecord | None, status: PhaseStatus) -> str:
    """How long a phase under way has taken so far, in node time; "" for any other."""
    if record is None or record.started_at is None or status not in UNDER_WAY:
        return ""
    return clock.minutes_text(clock.node_seconds(timezone.now() - record.started_at))


def timeline(run: Run | None, loaded: list[PhaseRecord] | None = None) -> list[PhaseRow]:
    """Every phase of the pipeline, in order, with what the run's record says of it."""
    records = {r.phase: r for r in (phase_records(run) if loaded is None else loaded)}
    rows = []
    for info in PHASES:
        rec = records.get(info.name)
        status = PhaseStatus(rec.status) if rec else PhaseStatus.PENDING
        rows.append(
            PhaseRow(
                name=info.name,
                label=info.label,
                band=info.band,
                status=status.value,
                status_label="Ran" if status == PhaseStatus.DONE else status.label,
                color=PHASE_STATUS_COLORS[status],
                attempts=rec.attempts if rec else 0,
                duration_s=rec.duration_s if rec else None,
                elapsed=elapsed_text(rec, status),
                changes=[c for c in (rec.changes if rec else []) if isinstance(c, dict)],
                error=rec.error if rec else "",
                wait_reason=rec.wait_reason if rec else "",
                progress=progress.of_phase(rec.resume) if rec and status in STUCK else None,
                log_record=log_of(rec),
            )
        )
    return rows


@dataclass
class Bar:
    """One measured value against its threshold, scaled so the threshold sits at 80%."""

    name: str
    value: float
    threshold: float
    bound: str  # "min" or "max"
    ok: bool

    @property
    def value_pct(self) -> float:
        top = max(self.value, self.threshold) / 0.8 or 1
        return min(100.0, 100 * self.value / top)

    @property
    def threshold_pct(self) -> float:
        top = max(self.value, self.threshold) / 0.8 or 1
        return 100 * self.threshold / top


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def bars(metrics: dict, thresholds: dict) -> list[Bar]:
    """Pair each min_/max_ threshold with the metric it bounds (same name without the prefix)."""
    out = []
    for key, limit in thresholds.items():
        limit = _number(limit)
        bound = key[:3]
        if limit is None or bound not in ("min", "max"):
            continue
        name = key[4:]
        value = _number(metrics.get(name, metrics.get(key)))
        if value is None:
            continue
        ok = value >= limit if bound == "min" else value <= limit
        out.append(Bar(name.replace("_", " "), value, limit, bound, ok))
    return out


@dataclass
class GateRow:
    result: GateResult
    label: str
    color: str
    icon: str
    bars: list[Bar]
    other_metrics: dict
    findings: list[dict]
    progress: Progress | None = None  # the soak's hours, while it runs
    log_record: int | None = None  # the gate's phase record, if it has a log to read


def soak_metrics(metrics: dict) -> dict:
    """A soak's bookkeeping in words and hours, not its raw fields."""
    out = {}
    if metrics.get("wanted_s"):
        out["soaked"] = progress.soak(metrics.get("ran_s") or 0, metrics["wanted_s"]).words
    if metrics.get("samples") is not None:
        out["samples"] = metrics["samples"]
    if metrics.get("stopped_at_sample") is not None:
        out["stopped at sample"] = metrics["stopped_at_sample"]
    return out


SOAK_FIELDS = {"ran_s", "wanted_s", "samples", "stopped_at_sample"}


def gate_rows(results: list[GateResult], records: list[PhaseRecord] | None = None) -> list[GateRow]:
    by_phase = {r.phase: r for r in records or []}
    running = {name: r for name, r in by_phase.items() if r.status in STUCK}
    rows = []
    for r in results:
        shown = bars(r.metrics or {}, r.thresholds or {})
        names = {b.name.replace(" ", "_") for b in shown}
        soak = r.gate == GateName.BURN_IN
        other = {
            k: v
            for k, v in (r.metrics or {}).items()
            if k not in names and not isinstance(v, dict | list) and not (soak and k in SOAK_FIELDS)
        }
        if soak:
            other = {**soak_metrics(r.metrics or {}), **other}
        record = running.get(step_name(r.gate))
        spec = GATES_BY_NAME.get(r.gate)
        rows.append(
            GateRow(
                result=r,
                label=GateName(r.gate).label if spec else r.gate,
                color=VERDICT_COLORS[Verdict(r.verdict)],
                icon=VERDICT_ICONS[Verdict(r.verdict)],
                bars=shown,
                other_metrics=other,
                findings=[f for f in (r.findings or []) if isinstance(f, dict)],
                progress=progress.of_phase(record.resume) if record else None,
                log_record=log_of(by_phase.get(step_name(r.gate))),
            )
        )
    return rows


def soak_charts(result: GateResult | None) -> list:
    """Temperatures, power and bus bandwidth of a burn-in soak, as three small SVG charts."""
    if result is None:
        return []
    samples = list(
        SoakSample.objects.filter(gate_result=result).values_list(
            "lab_t_s", "gpu_temps_c", "gpu_power_w", "busbw_gbps"
        )
    )
    if not samples:
        return []
    hours = [t / 3600 for t, *_ in samples]

    def per(values, fn):
        return [(h, fn(v)) for h, v in zip(hours, values, strict=True) if v]

    temps = [s[1] for s in samples]
    power = [s[2] for s in samples]
    busbw = [s[3] for s in samples]
    limit = _number((result.thresholds or {}).get("max_gpu_temp_c"))
    return [
        line_chart(
            "GPU temperature, °C",
            [
                Series("hottest GPU", "red", per(temps, max)),
                Series("mean", "amber", per(temps, lambda v: sum(v) / len(v))),
            ],
            limit=limit,
        ),
        line_chart("Board power, W (sum of GPUs)", [Series("power", "indigo", per(power, sum))]),
        line_chart(
            "NCCL bus bandwidth, GB/s",
            [Series("busbw", "teal", [(h, b) for h, b in zip(hours, busbw, strict=True) if b])],
        ),
    ]


@dataclass
class Panel:
    node: Node
    run: Run | None
    phases: list[PhaseRow]
    gates: list[GateRow]
    charts: list
    events: list[Event]
    gate_problems: list[str]
    last_audit: Event | None
    situation: Situation | None = None
    # The events list as shown: consecutive identical events folded into one line with a count.
    event_groups: list[EventGroup] = field(default_factory=list)
    # The moves the node allows now; the template shows those the person holds the permission of.
    moves: list[Move] = field(default_factory=list)
    skippable: list[str] = field(default_factory=list)
    stuck_phase: str = ""
    eta: Eta | None = None  # an active run's likely time left, from this fleet's runs
    behind: Behind | None = None  # on an older manifest than its SKU's published one

    @property
    def approvable(self) -> bool:
        # A rack-scale member is approved with its rack, as one decision (the rack's panel).
        return self.node.state == NodeState.AWAITING_APPROVAL and self.node.kind == NodeKind.SERVER

    @property
    def quarantinable(self) -> bool:
        return is_allowed(self.node.state, NodeState.QUARANTINED)

    @property
    def upload_tools(self) -> list[str]:
        """Tools whose manual output a person may upload (the gates' parsers)."""
        return sorted(PARSERS)


def node_panel(node: Node) -> Panel:
    """Everything the node panel shows, for the node's latest run.

    A node read with provisioning.day2.behind.with_manifests costs no query for its manifest line.
    """
    run = (
        Run.objects.filter(node=node)
        .select_related("manifest")
        .order_by("-created_at", "-pk")
        .first()
    )
    results = list(GateResult.objects.filter(run=run).order_by("started_at", "pk")) if run else []
    soak = next((r for r in results if r.gate == GateName.BURN_IN), None)
    events = list(
        Event.objects.filter(node=node).select_related("actor").order_by("-pk")[:EVENT_WINDOW]
    )
    problems = gate_problems(run) if node.state == NodeState.AWAITING_APPROVAL else []
    records = phase_records(run)
    under_way = next((r for r in records if r.status in STUCK), None)
    stuck = under_way.phase if under_way else ""
    active = run is not None and run.status in ACTIVE_RUN_STATUSES
    current = progress.of_phase(under_way.resume) if under_way else None
    return Panel(
        node=node,
        run=run,
        phases=timeline(run, records),
        gates=gate_rows(results, records),
        charts=soak_charts(soak),
        events=events,
        gate_problems=problems,
        last_audit=next((e for e in events if e.kind == EventKind.AUDIT), None),
        event_groups=fold_events(events, limit=EVENT_TAIL),
        situation=situation(node, run, problems, events),
        moves=fitting(node, run, stuck),
        skippable=[r.phase for r in records if r.status not in SETTLED],
        stuck_phase=stuck,
        eta=run_eta(run, records, current) if active else None,
        behind=behind_of(node),
    )
