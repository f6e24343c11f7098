"""A stage's check (its `verify`), observed over Redfish from the rack's members' BMCs.

The rack run asks for the check once every member of a stage settled (stages.py); a worker of
the rack's site observes it here and records the answer with `record_verify`, which any other
observer (the rack-wide fabric gate, a person's tool) may call too. An answer is True (holds),
False (does not, naming the member) or None: not observed, which reads "unknown" and never
"holds" (NVIDIA's infra controller once reported a fabric "synced" when it had lost contact with
the NVLink manager). The next stage starts only on True.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from fleet.choices import NodeKind, StageVerify
from fleet.models import Node

from ..choices import RackStageStatus
from ..rack_models import RackRunStage
from ..redfish import RedfishError
from ..redfish.bmc import bmc_session
from .messages import say, send_advance
from .stages import NAMED, member_label, title

CHASSIS = "/redfish/v1/Chassis"
FABRICS = "/redfish/v1/Fabrics"


@dataclass(frozen=True)
class Verdict:
    """A check's answer: holds True, False or None (unknown), and what was seen."""

    holds: bool | None
    reason: str


def _named(items: list[str]) -> str:
    more = f" and {len(items) - NAMED} more" if len(items) > NAMED else ""
    return "; ".join(items[:NAMED]) + more


def members_answer(nodes: list[Node]) -> Verdict:
    """Every member's BMC answers an authenticated read of its chassis."""
    silent = []
    for node in nodes:
        try:
            with bmc_session(node) as client:
                client.members(CHASSIS)
        except RedfishError as exc:
            silent.append(f"{member_label(node)}: {exc.reason}")
    if silent:
        return Verdict(False, f"{len(silent)} of {len(nodes)} do not answer: {_named(silent)}")
    return Verdict(True, f"all {len(nodes)} answer")


def _nvlink_fabric(fabrics: list[dict]) -> dict | None:
    return next((f for f in fabrics if str(f.get("FabricType", "")).lower() == "nvlink"), None)


def fabric_formed(nodes: list[Node]) -> Verdict:
    """Every switch tray's BMC reports its NVLink fabric (the DMTF Fabric resource, FabricType
    NVLink) Enabled with Health OK. A tray that reports no such fabric is unknown, not formed."""
    broken, unknown = [], []
    for node in nodes:
        try:
            with bmc_session(node) as client:
                fabrics = [body for _, body in client.expanded_members(FABRICS)]
        except RedfishError as exc:
            unknown.append(f"{member_label(node)}: {exc.reason}")
            continue
        fabric = _nvlink_fabric(fabrics)
        if fabric is None:
            unknown.append(f"{member_label(node)}: reports no NVLink fabric")
            continue
        status = fabric.get("Status") or {}
        state, health = status.get("State"), status.get("Health")
        if state != "Enabled" or health != "OK":
            broken.append(
                f"{member_label(node)}: NVLink fabric {state or '?'}, health {health or '?'}"
            )
    if broken:
        return Verdict(False, f"fabric not formed: {_named(broken + unknown)}")
    if unknown:
        return Verdict(None, f"fabric unknown: {_named(unknown)}")
    return Verdict(True, f"NVLink fabric formed on all {len(nodes)} switch trays")


# The one table of checks a stage may name (fleet.choices.StageVerify); NONE needs no observer.
CHECKS: dict[str, Callable[[list[Node]], Verdict]] = {
    StageVerify.MEMBERS_ANSWER: members_answer,
    StageVerify.FABRIC_FORMED: fabric_formed,
}


def observed_nodes(stage: RackRunStage) -> list[Node]:
    """Whose BMCs a check reads: after power shelves, every tray behind them (the whole rack);
    for the fabric, every switch tray of the rack; else the stage's own members."""
    system = stage.rack_run.rack.system
    if stage.verify == StageVerify.FABRIC_FORMED:
        return list(system.members().filter(kind=NodeKind.SWITCH_TRAY))
    if stage.kind == NodeKind.POWER_SHELF:
        return list(system.members())
    return [m.node for m in stage.members.select_related("node").order_by("order")]


def observe_stage(stage_id: int) -> Verdict | None:
    """Observe a verifying stage's check and record the answer; None if it is not verifying."""
    stage = RackRunStage.objects.select_related("rack_run__rack__system").get(pk=stage_id)
    check = CHECKS.get(stage.verify)
    if stage.status != RackStageStatus.VERIFYING or check is None:
        return None
    # Outside any transaction: BMC reads take seconds, and no row is held meanwhile.
    verdict = check(observed_nodes(stage))
    record_verify(stage.pk, verdict.holds, verdict.reason)
    return verdict


def record_verify(
    stage_id: int, holds: bool | None, reason: str, *, now: datetime | None = None
) -> bool:
    """Record an observation of a verifying stage's check and wake its rack run; False if the
    stage is not verifying (any more). An unchanged answer is not written twice."""
    now = now or timezone.now()
    reason = reason[:500]
    with transaction.atomic():
        stage = (
            RackRunStage.objects.select_related("rack_run__rack__site", "rack_run__started_by")
            .filter(pk=stage_id, status=RackStageStatus.VERIFYING)
            .first()
        )
        if stage is None:
            return False
        if (stage.verify_holds, stage.verify_reason) == (holds, reason):
            return True
        RackRunStage.objects.filter(pk=stage.pk, status=RackStageStatus.VERIFYING).update(
            verify_holds=holds, verify_reason=reason, verified_at=now
        )
        word = {True: "holds", False: "does not hold", None: "unknown"}[holds]
        say(
            stage.rack_run,
            f"{title(stage)}: check {stage.verify} {word}: {reason}",
            stage=stage.index,
            verify=stage.verify,
            holds=holds,
        )
        send_advance(stage.rack_run_id)
    return True
