"""Waking a rollout when one of its runs ends.

The engine (a run succeeded or failed) and the run actions (a run aborted) call `run_settled`;
it sends the rollout's advance once the run's end commits. This module knows only the rows, so
the modules that end runs can call it without importing the rollouts themselves (which start
runs). A message lost here costs only time: the periodic sweep advances every open rollout.
"""

from __future__ import annotations

from celery import current_app
from django.db import transaction

from .choices import RolloutNodeStatus
from .models import RolloutNode

# provisioning.tasks.advance_rollout, sent by name: the task imports the rollouts module.
ADVANCE_ROLLOUT_TASK = "provisioning.tasks.advance_rollout"


def send_advance(rollout_id: int) -> None:
    """Ask a worker to advance the rollout once the current transaction commits."""
    transaction.on_commit(lambda: current_app.send_task(ADVANCE_ROLLOUT_TASK, (rollout_id,)))


def run_settled(run_id: int) -> None:
    """A run ended: the rollout that waits on it (if any) starts its next node."""
    waiting = RolloutNode.objects.filter(run_id=run_id, status=RolloutNodeStatus.RUNNING)
    for rollout_id in waiting.values_list("rollout_id", flat=True):
        send_advance(rollout_id)
