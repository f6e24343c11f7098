"""Greenlight's side of the agent channel: queue a command, look at it, judge liveness.

The agent pulls: `send` only queues a row that the agent's next poll takes, and the agent pushes
the result back. Greenlight never connects to a node, so nothing here has an address to call.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.db.models import Q, QuerySet
from django.utils import timezone

from common.prepared_reads import PreparedRead
from fleet.models import Node

from ..choices import AgentEnvironment, CommandStatus
from ..errors import AgentRefused, AgentUnavailable
from ..models import AgentCommand, AgentSession, Run

# Polls an agent may miss before it counts as gone (its node rebooted, or the process died).
MISSED_POLLS = 4
# Never judge an agent gone sooner than this, however short the poll interval.
MIN_SILENCE_S = 10.0
# A command whose result has not come: its agent may still be running it.
OPEN_STATUSES = (CommandStatus.QUEUED, CommandStatus.SENT)

__all__ = ["AgentRefused", "AgentUnavailable"]


def _live_sessions(node_id: int, environment: str | None) -> QuerySet[AgentSession]:
    sessions = AgentSession.objects.filter(node_id=node_id, revoked_at__isnull=True)
    if environment:
        sessions = sessions.filter(environment=environment)
    return sessions.order_by("-created_at")


# Most looks of an in-band phase ask for the live session: compiled once per environment.
_LIVE_SESSION = {
    environment: PreparedRead(lambda node_id, e=environment: _live_sessions(node_id, e)[:1])
    for environment in (None, *AgentEnvironment.values)
}


def live_session(node: Node, environment: str | None = None) -> AgentSession | None:
    """The node's current (latest, unrevoked) agent session, optionally of one environment."""
    prepared = _LIVE_SESSION.get(environment or None)
    if prepared is None:
        return _live_sessions(node.pk, environment).first()
    return prepared.first(node.pk)


def revoke_sessions(node_id: int, environment: str | None = None) -> int:
    """End the node's live sessions (of one environment, or all): their tokens answer 401 from
    now on, and their open commands are judged lost at the next look (refresh). How many."""
    return _live_sessions(node_id, environment).update(revoked_at=timezone.now())


def silence_after(poll_s: float) -> timedelta:
    """How long after a poll an agent told to come back in `poll_s` counts as gone."""
    return timedelta(seconds=max(MISSED_POLLS * poll_s, MIN_SILENCE_S))


def is_polling(session: AgentSession) -> bool:
    """Whether the session's agent has asked for commands as often as it was told to."""
    return session.expected_by >= timezone.now()


def is_alive(node: Node, environment: str | None = None) -> AgentSession | None:
    """The live session if its agent is still polling, else None."""
    session = live_session(node, environment)
    if session is None or not is_polling(session):
        return None
    return session


def inventory(session: AgentSession) -> dict[str, Any]:
    """The node's in-band inventory as its agent last reported it (at check-in, and after each
    command that can change it); AgentUnavailable if it never reported one."""
    if not session.inventory:
        raise AgentUnavailable(f"the agent of {session.node_id} reported no inventory")
    return session.inventory


def send(
    session: AgentSession, run: Run | None, phase: str, kind: str, params: dict[str, Any]
) -> AgentCommand:
    """Queue a command for the session's agent; its next poll takes it."""
    return AgentCommand.objects.create(
        node_id=session.node_id, run=run, phase=phase, session=session, kind=kind, params=params
    )


def refresh(command: AgentCommand) -> AgentCommand:
    """One look at a command whose result has not arrived: it is lost if its agent is gone.

    A new boot already marked it lost at check-in; an agent that stopped polling (the process
    died, the node hung) is judged here.
    """
    command.refresh_from_db()
    if command.status not in OPEN_STATUSES:
        return command
    session = command.session
    if session is None or session.revoked_at is not None or not is_polling(session):
        AgentCommand.objects.filter(pk=command.pk, status__in=OPEN_STATUSES).update(
            status=CommandStatus.LOST, finished_at=timezone.now()
        )
        command.refresh_from_db()
    return command


def awaited(now: datetime, through: str = "") -> Q:
    """refresh's judgement as a filter: commands still open whose session is not revoked and
    whose agent still polls, which a look would leave as they are. `through`: the path from the
    queried model to the command ("command__" from a phase record)."""
    return Q(
        **{
            f"{through}status__in": OPEN_STATUSES,
            f"{through}session__isnull": False,
            f"{through}session__revoked_at__isnull": True,
            f"{through}session__expected_by__gte": now,
        }
    )


def store_result(command: AgentCommand, body: dict[str, Any]) -> bool:
    """Record a command's (validated) result once; False if it already had one."""
    status = CommandStatus.DONE if body.get("status") == "done" else CommandStatus.FAILED
    return bool(
        AgentCommand.objects.filter(
            pk=command.pk, status__in=(CommandStatus.QUEUED, CommandStatus.SENT)
        ).update(
            status=status,
            exit_code=body.get("exit_code"),
            result=body.get("result") or {},
            output=str(body.get("output") or ""),
            finished_at=timezone.now(),
        )
    )


EPHEMERAL = AgentEnvironment.EPHEMERAL
HOST_OS = AgentEnvironment.HOST_OS
