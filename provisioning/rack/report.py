"""A rack run as JSON-ready data: its stages in order with their rules and parallelism, each
member with its attempts and latest run, and the most members each stage had in flight at once
(for the API, the lab's JSON and the rack view)."""

from __future__ import annotations

from typing import Any

from fleet.choices import EventKind
from fleet.models import Event

from ..rack_models import RackRun, RackRunMember


def _when(value) -> str | None:
    return value.isoformat() if value is not None else None


def peaks(rack_run: RackRun) -> dict[int, int]:
    """The most members each stage had in flight at once, by stage index, as the engine counted
    them when it started each (its audit: every start's event says how many were in flight)."""
    found: dict[int, int] = {}
    starts = Event.objects.filter(
        rack_id=rack_run.rack_id,
        kind=EventKind.RACK_RUN,
        data__rack_run=rack_run.pk,
        data__has_key="in_flight",
    )
    for stage, in_flight in starts.values_list("data__stage", "data__in_flight"):
        found[stage] = max(found.get(stage, 0), in_flight)
    return found


def describe(rack_run: RackRun) -> dict[str, Any]:
    """The rack run, its stages and their members (four queries)."""
    stages = list(rack_run.stages.order_by("index"))
    peak = peaks(rack_run)
    members = RackRunMember.objects.filter(stage__rack_run=rack_run).select_related("node")
    by_stage: dict[int, list[dict[str, Any]]] = {s.pk: [] for s in stages}
    for member in members.order_by("stage__index", "order"):
        by_stage[member.stage_id].append(
            {
                "node": member.node_id,
                "serial": member.node.serial,
                "kind": member.node.kind,
                "member_index": member.node.member_index,
                "status": member.status,
                "attempts": member.attempts,
                "run": member.run_id,
                "reason": member.reason,
                "started_at": _when(member.started_at),
                "finished_at": _when(member.finished_at),
            }
        )
    return {
        "id": rack_run.pk,
        "rack": rack_run.rack_id,
        "manifest": rack_run.manifest_id,
        "status": rack_run.status,
        "stage_index": rack_run.stage_index,
        "wait_reason": rack_run.wait_reason,
        "last_error": rack_run.last_error,
        "started_at": _when(rack_run.started_at),
        "finished_at": _when(rack_run.finished_at),
        "stages": [
            {
                "index": stage.index,
                "kind": stage.kind,
                "action": stage.action,
                "max_parallel": stage.max_parallel,
                "peak_parallel": peak.get(stage.index, 0),
                "verify": stage.verify,
                "retries": stage.retries,
                "time_limit_s": stage.time_limit_s,
                "status": stage.status,
                "started_at": _when(stage.started_at),
                "finished_at": _when(stage.finished_at),
                "verify_holds": stage.verify_holds,
                "verify_reason": stage.verify_reason,
                "members": by_stage[stage.pk],
            }
            for stage in stages
        ],
    }
