"""Greenlight talking to a node's agent: send a command, look at it, ping. Never waits long."""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any
from urllib.parse import urlsplit

import httpx
from django.db.models import QuerySet
from django.utils import timezone

from fleet.models import Node
from greenlight.prepared_reads import PreparedRead

from .agent_sessions import token_of
from .choices import AgentEnvironment, CommandStatus
from .errors import AgentRefused, AgentUnavailable
from .models import AgentCommand, AgentSession, Run
from .redfish.tls import default_context

TIMEOUT = httpx.Timeout(5.0, connect=2.0)

# One small client per agent, not one pool for all: httpcore scans every connection of a pool on
# each request and each close, and with hundreds of agents in one pool that scan was a quarter
# of a worker's CPU. The least recently used clients are closed past the cap.
MAX_AGENT_CLIENTS = 2048
_clients: OrderedDict[str, httpx.Client] = OrderedDict()
_clients_lock = threading.Lock()


def agent_http(url: str) -> httpx.Client:
    """The process's client for the agent at `url` (shared by threads, kept between steps).

    Building a client per call (TLS context, pool) cost more CPU than the calls themselves, so
    each agent's client lives on, and all of them share one TLS context.
    """
    parts = urlsplit(url)
    origin = f"{parts.scheme}://{parts.netloc}"
    with _clients_lock:
        client = _clients.get(origin)
        if client is not None:
            _clients.move_to_end(origin)
            return client
        client = httpx.Client(
            timeout=TIMEOUT,
            verify=default_context(),
            limits=httpx.Limits(
                max_connections=4, max_keepalive_connections=2, keepalive_expiry=30
            ),
        )
        _clients[origin] = client
        while len(_clients) > MAX_AGENT_CLIENTS:
            _, oldest = _clients.popitem(last=False)
            oldest.close()
        return client


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


def _call(
    session: AgentSession, method: str, path: str, body: dict | None = None
) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token_of(session)}"}
    try:
        return agent_http(session.agent_url).request(
            method, session.agent_url + path, json=body, headers=headers
        )
    except httpx.TransportError as exc:
        raise AgentUnavailable(f"agent of {session.node.serial} did not answer: {exc}") from None


def ping(session: AgentSession) -> dict[str, Any]:
    """Ask the agent who it is; AgentUnavailable if it does not answer (a read, never a write)."""
    answer = _call(session, "GET", "/v1/ping")
    if answer.status_code != 200:
        raise AgentRefused(f"agent ping answered {answer.status_code}")
    return answer.json()


def inventory(session: AgentSession) -> dict[str, Any]:
    """The node's in-band inventory, read from the agent (a read: no command is created)."""
    answer = _call(session, "GET", "/v1/inventory")
    if answer.status_code != 200:
        raise AgentRefused(f"agent inventory answered {answer.status_code}")
    return answer.json()


def is_alive(node: Node, environment: str | None = None) -> AgentSession | None:
    """The live session if its agent answers a ping for the same boot, else None."""
    session = live_session(node, environment)
    if session is None:
        return None
    try:
        answer = ping(session)
    except (AgentUnavailable, AgentRefused):
        return None
    return session if answer.get("boot_id") == session.boot_id else None


def send(
    session: AgentSession, run: Run | None, phase: str, kind: str, params: dict[str, Any]
) -> AgentCommand:
    """Create the command row, then hand it to the agent (which answers at once)."""
    command = AgentCommand.objects.create(
        node=session.node, run=run, phase=phase, session=session, kind=kind, params=params
    )
    answer = _call(
        session, "POST", "/v1/commands", {"id": command.pk, "kind": kind, "params": params}
    )
    if answer.status_code not in (200, 202):
        command.status = CommandStatus.FAILED
        command.output = f"agent refused the command: HTTP {answer.status_code} {answer.text[:300]}"
        command.finished_at = timezone.now()
        command.save()
        raise AgentRefused(command.output)
    sent_at = timezone.now()
    queued = AgentCommand.objects.filter(pk=command.pk, status=CommandStatus.QUEUED)
    if queued.update(status=CommandStatus.SENT, sent_at=sent_at):
        command.status, command.sent_at = CommandStatus.SENT, sent_at
    else:
        command.refresh_from_db()  # the agent's result came in before this write
    return command


def refresh(command: AgentCommand) -> AgentCommand:
    """One look at a sent command whose result has not arrived: ask the agent directly.

    The agent pushes results; this covers a push that was lost. A command the agent does not
    know (it restarted, or the node rebooted) is marked lost.
    """
    command.refresh_from_db()
    if command.status != CommandStatus.SENT or command.session is None:
        return command
    answer = _call(command.session, "GET", f"/v1/commands/{command.pk}")
    if answer.status_code == 404:
        AgentCommand.objects.filter(pk=command.pk, status=CommandStatus.SENT).update(
            status=CommandStatus.LOST, finished_at=timezone.now()
        )
    elif answer.status_code == 200 and answer.json().get("status") in ("done", "failed"):
        store_result(command, answer.json())
    command.refresh_from_db()
    return command


def store_result(command: AgentCommand, body: dict[str, Any]) -> bool:
    """Record a command's result once; False if it already had one."""
    status = CommandStatus.DONE if body.get("status") == "done" else CommandStatus.FAILED
    return bool(
        AgentCommand.objects.filter(
            pk=command.pk, status__in=(CommandStatus.QUEUED, CommandStatus.SENT)
        ).update(
            status=status,
            exit_code=body.get("exit_code"),
            result=body.get("result") or {},
            output=str(body.get("output") or "")[-200_000:],
            finished_at=timezone.now(),
        )
    )


EPHEMERAL = AgentEnvironment.EPHEMERAL
HOST_OS = AgentEnvironment.HOST_OS
