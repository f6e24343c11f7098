"""The lab's scheduler: a cordoned node's jobs finish after a simulated delay of lab time.

It keeps no state of its own: the moment of the cordon is the drain phase's stage start on its
PhaseRecord, so any worker (or a restarted one) gives the same answer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.utils import timezone

from .. import clock
from ..choices import ACTIVE_RUN_STATUSES
from ..models import PhaseRecord
from .base import Scheduler

if TYPE_CHECKING:
    from fleet.models import Node

# Lab seconds between the cordon and the tenant's last job ending.
DRAIN_SECONDS = 600.0


class LabScheduler(Scheduler):
    name = "lab"
    label = "the lab scheduler"

    def cordon(self, node: Node, reason: str) -> None:
        """Nothing to call: the drain phase's stage start is the cordon's timestamp."""

    def is_drained(self, node: Node) -> bool:
        record = (
            PhaseRecord.objects.filter(
                run__node=node, run__status__in=ACTIVE_RUN_STATUSES, phase="drain"
            )
            .values("stage", "stage_started_at")
            .first()
        )
        if record is None or record["stage"] != "draining" or record["stage_started_at"] is None:
            return False
        return clock.node_seconds(timezone.now() - record["stage_started_at"]) >= DRAIN_SECONDS

    def uncordon(self, node: Node) -> None:
        """Nothing to call: the lab places no jobs."""
