"""The scheduler hears of a node leaving or entering service outside a run.

A quarantine of an in-service node cordons it in the scheduler (no new work lands on a node a
person pulled); every admission into service (a person's approval, the profile's return without
a click) resumes it (Slurm `State=RESUME`, Kubernetes uncordon). The drain phase of a run does
its own cordon; these are the moves made by decisions.

The call is a Celery task sent once the move commits: a move rolled back must not leave the
scheduler changed, and a scheduler that is slow (an `scontrol` that hangs, a Kubernetes API far
away) must never hold the browser's request or the engine's step that made the move. Its outcome
is an event on the node either way (scheduler_calls); a scheduler that refuses or does not answer
never undoes the move, it asks a person to finish the job by hand.
"""

from __future__ import annotations

import logging

from django.conf import settings
from django.db import transaction
from kombu.exceptions import OperationalError

from fleet.models import Node

from ..core.run_end import How, RunEnding
from .scheduler_calls import CORDON, RESUME, ask_a_person, tell_scheduler_task

__all__ = ["CORDON", "RESUME", "admitted", "follow_run_end", "pulled_from_service"]

logger = logging.getLogger(__name__)


def _send(node: Node, verb: str, reason: str) -> None:
    try:
        tell_scheduler_task.delay(node.pk, verb, reason)
    except OperationalError as exc:
        # The broker is down: the move stands (it committed), and no sweep re-sends this call,
        # so a person is asked to make it.
        logger.warning("could not send the scheduler %s of %s: %s", verb, node.serial, exc)
        ask_a_person(node, verb, f"could not ask for the scheduler's {verb} ({exc})", exc)


def _send_on_commit(node: Node, verb: str, reason: str = "") -> None:
    if not settings.GREENLIGHT_SCHEDULER:
        return  # no scheduler configured: nothing to tell, no task to send
    transaction.on_commit(lambda: _send(node, verb, reason))


def follow_run_end(ending: RunEnding) -> None:
    """run_end's follower: a node entering service is resumed, one leaving it cordoned."""
    if ending.how == How.ENTERED_SERVICE:
        admitted(ending.node)
    elif ending.how == How.LEFT_SERVICE:
        pulled_from_service(ending.node, ending.reason)


def pulled_from_service(node: Node, reason: str) -> None:
    """A person took an in-service node out (quarantine): cordon it once the move commits."""
    line = " ".join(f"greenlight: quarantined: {reason}".split())
    _send_on_commit(node, CORDON, line)


def admitted(node: Node) -> None:
    """The node entered service: let the scheduler place work on it once the move commits."""
    _send_on_commit(node, RESUME)
