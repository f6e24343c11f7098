"""The call to the scheduler that cordons or resumes a node, and the task that makes it.

scheduler_sync sends the task once a decision's move commits; the task is a thin shell that
reads the node and calls `tell_scheduler`, which records the outcome as an event on the node.
"""

from __future__ import annotations

import logging

from celery import shared_task
from django.conf import settings

from fleet.choices import EventKind
from fleet.events import record as record_event
from fleet.models import Node

from .. import schedulers

logger = logging.getLogger(__name__)

CORDON = "cordon"
RESUME = "resume"
VERBS = (CORDON, RESUME)
TELL_SCHEDULER_TASK = "provisioning.tasks.tell_scheduler"


def ask_a_person(node: Node, verb: str, what: str, exc: Exception) -> None:
    """A scheduler call that did not happen: the node's log asks a person to make it by hand."""
    record_event(
        node,
        EventKind.ATTENTION,
        actor_label="scheduler",
        message=f"{what}; do it by hand",
        data={"scheduler": settings.GREENLIGHT_SCHEDULER, "action": verb, "error": str(exc)},
    )


def tell_scheduler(node: Node, verb: str, reason: str = "") -> bool:
    """Cordon or resume the node in the configured scheduler now; True when it took.

    No scheduler configured (GREENLIGHT_SCHEDULER empty): nothing to tell, nothing recorded.
    """
    if verb not in VERBS:
        raise ValueError(f"unknown scheduler verb {verb!r}; known: {', '.join(VERBS)}")
    if not settings.GREENLIGHT_SCHEDULER:
        return False
    try:
        scheduler = schedulers.configured()
        if verb == CORDON:
            scheduler.cordon(node, reason)
        else:
            scheduler.uncordon(node)
    except schedulers.SchedulerError as exc:
        logger.warning("scheduler %s of %s failed: %s", verb, node.serial, exc)
        ask_a_person(node, verb, f"could not {verb} the node in the scheduler ({exc})", exc)
        return False
    name = scheduler.node_name(node)
    record_event(
        node,
        EventKind.UPDATED,
        actor_label="scheduler",
        message=(
            f"cordoned as {name} in {scheduler.label}: {reason}"
            if verb == CORDON
            else f"resumed as {name} in {scheduler.label}"
        ),
        data={"scheduler": scheduler.name, "action": verb, "node_name": name},
    )
    return True


@shared_task(name=TELL_SCHEDULER_TASK)
def tell_scheduler_task(node_id: int, verb: str, reason: str = "") -> bool:
    """Cordon or resume a node in the scheduler (sent by scheduler_sync once a move commits)."""
    node = Node.objects.filter(pk=node_id).first()
    if node is None:
        return False  # deleted since the move: no node left to tell the scheduler of
    return tell_scheduler(node, verb, reason)
