"""A rollout's report: per wave and per node, what changed from which version to which, how
long it took and what failed in the BMC's (or agent's) words; which nodes to roll back, and the
roll back itself: a rollout of those nodes to the manifest published before this one's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from fleet.choices import DocumentStatus
from fleet.models import Manifest, Node

from ..choices import PhaseStatus, RolloutNodeStatus
from ..models import PhaseRecord, Rollout, RolloutNode
from .rollouts import RolloutRefused, start_rollout

if TYPE_CHECKING:
    from .rollouts import Actor

# Changes every run makes on its way (power, boot order, drain): not what the rollout is about.
ROUTINE = frozenset({"power", "boot", "scheduler"})


@dataclass
class NodeReport:
    entry: RolloutNode
    changes: list[dict] = field(default_factory=list)
    failed_phase: str = ""

    @property
    def duration_s(self) -> float | None:
        started, finished = self.entry.started_at, self.entry.finished_at
        return (finished - started).total_seconds() if started and finished else None

    @property
    def roll_back(self) -> bool:
        """Failed: whatever it flashed before failing is not the version anyone chose."""
        return self.entry.status == RolloutNodeStatus.FAILED

    def as_dict(self) -> dict:
        entry = self.entry
        return {
            "node": entry.node_id,
            "serial": entry.node.serial,
            "wave": entry.wave + 1,
            "status": entry.status,
            "started_at": _iso(entry.started_at),
            "finished_at": _iso(entry.finished_at),
            "duration_s": self.duration_s,
            "changes": self.changes,
            "failed_phase": self.failed_phase,
            "failure": entry.reason if entry.status == RolloutNodeStatus.FAILED else "",
            "roll_back": self.roll_back,
        }


@dataclass
class WaveReport:
    number: int
    nodes: list[NodeReport]

    def _count(self, status: str) -> int:
        return sum(1 for n in self.nodes if n.entry.status == status)

    @property
    def failure_pct(self) -> float:
        settled = self._count(RolloutNodeStatus.DONE) + self._count(RolloutNodeStatus.FAILED)
        return round(100 * self._count(RolloutNodeStatus.FAILED) / settled, 1) if settled else 0.0

    def as_dict(self) -> dict:
        return {
            "wave": self.number,
            "nodes": len(self.nodes),
            **{status.value: self._count(status) for status in RolloutNodeStatus},
            "failure_pct": self.failure_pct,
            "detail": [n.as_dict() for n in self.nodes],
        }


def report(rollout: Rollout) -> list[WaveReport]:
    """The rollout's waves with their nodes (two queries)."""
    entries = list(rollout.entries.select_related("node").order_by("order"))
    by_run: dict[int, NodeReport] = {}
    nodes = [NodeReport(entry) for entry in entries]
    for node in nodes:
        if node.entry.run_id:
            by_run[node.entry.run_id] = node
    records = PhaseRecord.objects.filter(run_id__in=by_run).order_by("run_id", "order")
    for record in records.only("run_id", "phase", "status", "changes"):
        node = by_run[record.run_id]
        node.changes += [
            {**change, "phase": record.phase}
            for change in record.changes or []
            if change.get("component") not in ROUTINE
        ]
        if record.status == PhaseStatus.FAILED and not node.failed_phase:
            node.failed_phase = record.phase
    waves: dict[int, list[NodeReport]] = {}
    for node in nodes:
        waves.setdefault(node.entry.wave, []).append(node)
    return [WaveReport(wave + 1, members) for wave, members in sorted(waves.items())]


def previous_manifest(rollout: Rollout) -> Manifest | None:
    """The manifest of the rollout's SKU published before the one it rolls out."""
    current = rollout.manifest
    earlier = Manifest.objects.filter(sku_id=current.sku_id, status=DocumentStatus.RETIRED)
    if current.published_at:
        earlier = earlier.filter(published_at__lt=current.published_at)
    return earlier.exclude(pk=current.pk).order_by("-published_at", "-pk").first()


def roll_back(rollout: Rollout, node_ids: list[int] | None, *, actor: Actor) -> Rollout:
    """Start a rollout returning `node_ids` (default: the report's roll-back list) of this
    rollout to the manifest published before its own; RolloutRefused saying why not."""
    previous = previous_manifest(rollout)
    if previous is None:
        raise RolloutRefused(
            f"{rollout.manifest.sku.name} has no manifest published before "
            f"{rollout.manifest.version}: there is nothing to roll back to"
        )
    reports = [n for wave in report(rollout) for n in wave.nodes]
    ours = {n.entry.node_id for n in reports}
    if node_ids is None:
        node_ids = [n.entry.node_id for n in reports if n.roll_back]
    strangers = sorted(set(node_ids) - ours)
    if strangers:
        raise RolloutRefused(f"nodes {strangers} are not in rollout {rollout.pk}")
    if not node_ids:
        raise RolloutRefused(f"rollout {rollout.pk} has no node to roll back")
    order = {node_id: i for i, node_id in enumerate(node_ids)}
    nodes = sorted(
        Node.objects.filter(pk__in=node_ids).select_related("rack"), key=lambda n: order[n.pk]
    )
    return start_rollout(
        previous,
        actor=actor,
        concurrency=rollout.concurrency,
        rollback_of=rollout,
        nodes=nodes,
    )


def _iso(moment: datetime | None) -> str | None:
    return moment.isoformat() if moment else None
