"""Waking a rollout when one of its runs ends.

Every end of a run (succeeded, failed, aborted) reaches `run_settled` through run_end's follower;
it sends the rollout's advance once the run's end commits. This module knows only the rows, so it
can follow run_end without importing the rollouts themselves (which start runs). A message lost
here costs only time: the periodic sweep advances every open rollout.
"""

from __future__ import annotations

from celery import current_app
from django.db import transaction

from .choices import RolloutNodeStatus
from .models import RolloutNode
from .run_end import How, RunEnding

# provisioning.tasks.advance_rollout, sent by name: the task imports the rollouts module.
ADVANCE_ROLLOUT_TASK = "provisioning.tasks.advance_rollout"


def send_advance(rollout_id: int) -> None:
    """Ask a worker to advance the rollout once the current transaction commits."""
    transaction.on_commit(lambda: current_app.send_task(ADVANCE_ROLLOUT_TASK, (rollout_id,)))


def follow_run_end(ending: RunEnding) -> None:
    """run_end's follower: any end of a run settles it for its rollout."""
    if ending.run is not None and ending.how in (How.SUCCEEDED, How.FAILED, How.ABORTED):
        run_settled(ending.run.pk)


def run_settled(run_id: int) -> None:
    """A run ended: the rollout that waits on it (if any) starts its next node."""
    waiting = RolloutNode.objects.filter(run_id=run_id, status=RolloutNodeStatus.RUNNING)
    for rollout_id in waiting.values_list("rollout_id", flat=True):
        send_advance(rollout_id)
