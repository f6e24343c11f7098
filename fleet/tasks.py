"""Celery tasks of the fleet app: a thin shell over the lifecycle.

The webhook delivery task lives beside what it delivers (fleet.webhooks), which the lifecycle
imports; the DCIM sync task is the console's (console.tasks).
"""

from __future__ import annotations

from celery import shared_task

from .lifecycle import transition
from .models import Node


@shared_task
def transition_node(
    node_id: int, to_state: str, reason: str = "", actor_label: str = "worker"
) -> int:
    """Move a node through the lifecycle table; return the id of the event written."""
    node = Node.objects.select_related("rack").get(pk=node_id)
    return transition(node, to_state, actor_label=actor_label, reason=reason).event_id
