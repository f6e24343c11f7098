"""Drain: before a wipe touches anything, the tenant's scheduler lets go of the node.

Cordon through the adapter settings choose, wait (without sleeping) until no job runs, then move
the node from releasing to wiping. Each stage is saved before it acts, so a resumed phase
repeats only idempotent calls.
"""

from __future__ import annotations

from fleet.choices import NodeState
from fleet.lifecycle import transition

from .. import schedulers
from ..choices import Stage
from ..outcomes import Done, Failure, Outcome, Skipped, TransientFailure, Wait
from .base import Phase, PhaseContext

DRAIN_LOOK_S = 60.0


class Drain(Phase):
    """Cordon and drain the node from the tenant's scheduler; hand it over to the wipe."""

    def execute(self, ctx: PhaseContext) -> Outcome:
        node = ctx.node
        if node.state == NodeState.WIPING:
            # A step that died after the move: the drain already happened.
            return Skipped({"reason": "the node is already drained and wiping"})
        if node.state != NodeState.RELEASING:
            return Failure(
                f"node {node.serial} is {node.get_state_display()}, not releasing",
                permanent=True,
            )
        try:
            scheduler = schedulers.configured()
            if ctx.record.stage in (Stage.NONE, Stage.CORDONING):
                ctx.set_stage(Stage.CORDONING)
                scheduler.cordon(node, f"greenlight: tenant release of {node.serial}")
                # The stage start of "draining" is when the cordon took: the lab reads it.
                ctx.set_stage(Stage.DRAINING)
            if not scheduler.is_drained(node):
                return Wait(DRAIN_LOOK_S, f"waiting for jobs to leave {scheduler.label}")
        except schedulers.SchedulerUnavailable as exc:
            return TransientFailure(str(exc), kind="SchedulerUnavailable", component="scheduler")
        except schedulers.SchedulerError as exc:
            return Failure(f"scheduler: {exc}", component="scheduler")
        transition(
            node,
            NodeState.WIPING,
            actor_label="engine",
            reason=f"drained from {scheduler.label}; erasing every drive",
            data={"run": ctx.run.pk, "scheduler": scheduler.name},
        )
        return Done(
            changes=[{"component": "scheduler", "from": "schedulable", "to": "drained"}],
            compared={"scheduler": scheduler.name, "node_name": scheduler.node_name(node)},
        )
