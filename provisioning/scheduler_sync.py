"""The scheduler hears of a node leaving or entering service outside a run.

A quarantine of an in-service node cordons it in the scheduler (no new work lands on a node a
person pulled); every admission into service (a person's approval, the profile's return without
a click) resumes it (Slurm `State=RESUME`, Kubernetes uncordon). The drain phase of a run does
its own cordon; these are the moves made by decisions.

The call is made once the move commits: a move rolled back must not leave the scheduler changed.
Its outcome is an event on the node either way; a scheduler that refuses or does not answer never
undoes the move, it asks a person to finish the job by hand.
"""

from __future__ import annotations

import logging

from django.conf import settings
from django.db import transaction

from fleet.choices import EventKind
from fleet.events import record as record_event
from fleet.models import Node

from . import schedulers

logger = logging.getLogger(__name__)

CORDON = "cordon"
RESUME = "resume"


def tell_scheduler(node: Node, verb: str, reason: str = "") -> bool:
    """Cordon or resume the node in the configured scheduler now; True when it took.

    No scheduler configured (GREENLIGHT_SCHEDULER empty): nothing to tell, nothing recorded.
    """
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
        record_event(
            node,
            EventKind.ATTENTION,
            actor_label="scheduler",
            message=f"could not {verb} the node in the scheduler ({exc}); do it by hand",
            data={"scheduler": settings.GREENLIGHT_SCHEDULER, "action": verb, "error": str(exc)},
        )
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


def pulled_from_service(node: Node, reason: str) -> None:
    """A person took an in-service node out (quarantine): cordon it once the move commits."""
    line = " ".join(f"greenlight: quarantined: {reason}".split())
    transaction.on_commit(lambda: tell_scheduler(node, CORDON, line))


def admitted(node: Node) -> None:
    """The node entered service: let the scheduler place work on it once the move commits."""
    transaction.on_commit(lambda: tell_scheduler(node, RESUME))
