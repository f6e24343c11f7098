"""Drain: before a wipe, a suspect-node check or a rolling upgrade acts, the scheduler lets go of the node.

Cordon through the adapter settings choose, wait (without sleeping) until no job runs, then move
the node from releasing on: to wiping in a tenant release, to provisioning (the re-check) for a
suspect node. Each stage is saved before it acts, so a resumed phase repeats only idempotent
calls.
"""

from __future__ import annotations

from fleet.choices import NodeState
from fleet.lifecycle import transition

from ... import schedulers
from ...choices import RunKind, Stage
from ...outcomes import Done, Failure, Outcome, Skipped, TransientFailure, Wait
from .base import Phase, PhaseContext

DRAIN_LOOK_S = 60.0

# Where a drained node goes, by run kind, and the cordon's reason the scheduler shows.
NEXT: dict[str, tuple[NodeState, str, str]] = {
    RunKind.WIPE: (NodeState.WIPING, "tenant release of", "erasing every drive"),
    RunKind.SUSPECT: (NodeState.PROVISIONING, "suspect node", "re-checking it, drives kept"),
    RunKind.BURN_IN: (NodeState.PROVISIONING, "burn-in of", "burning it in, drives kept"),
    RunKind.UPGRADE: (NodeState.PROVISIONING, "upgrade of", "reprovisioning it to its manifest"),
}


class Drain(Phase):
    """Cordon and drain the node from the tenant's scheduler; hand it over to the wipe."""

    def execute(self, ctx: PhaseContext) -> Outcome:
        node = ctx.node
        target, why, then = NEXT.get(ctx.run.kind, NEXT[RunKind.WIPE])
        if node.state == target:
            # A step that died after the move: the drain already happened.
            return Skipped({"reason": f"the node is already drained and {target.label.lower()}"})
        if node.state != NodeState.RELEASING:
            return Failure(
                f"node {node.serial} is {node.get_state_display()}, not releasing",
                permanent=True,
            )
        try:
            scheduler = schedulers.configured()
            if ctx.record.stage in (Stage.NONE, Stage.CORDONING):
                ctx.set_stage(Stage.CORDONING)
                scheduler.cordon(node, f"greenlight: {why} {node.serial}")
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
            target,
            actor_label="engine",
            reason=f"drained from {scheduler.label}; {then}",
            data={"run": ctx.run.pk, "scheduler": scheduler.name},
        )
        return Done(
            changes=[{"component": "scheduler", "from": "schedulable", "to": "drained"}],
            compared={"scheduler": scheduler.name, "node_name": scheduler.node_name(node)},
        )
