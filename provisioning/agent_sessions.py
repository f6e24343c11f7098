"""Agent check-in and authentication: a token per node and per boot, and nothing more.

The first check-in of a boot gets the token ("first lookup wins"); a second check-in claiming
the same boot is refused. A new boot revokes the node's older sessions, so a token of an old boot
is refused, and a token is only ever accepted for its own node. Refusals are events.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from dataclasses import dataclass

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from fleet.choices import EventKind
from fleet.events import record as record_event
from fleet.models import Node

from .choices import ACTIVE_RUN_STATUSES, AgentEnvironment, CommandStatus
from .models import AgentCommand, AgentSession, Run
from .scheduling import nudge


class AgentRefusal(Exception):
    """An agent's request that must be refused (HTTP 403); the reason goes to the event log."""


def derive_token(node_id: int, boot_id: str, nonce: str) -> str:
    """The session's token: derived from the server's key, never stored."""
    message = f"greenlight-agent:{node_id}:{boot_id}:{nonce}".encode()
    digest = hmac.new(settings.SECRET_KEY.encode(), message, hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest).decode().rstrip("=")


def token_of(session: AgentSession) -> str:
    return derive_token(session.node_id, session.boot_id, session.nonce)


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def _normalise_mac(mac: str) -> str:
    return mac.strip().lower().replace("-", ":")


@dataclass(frozen=True)
class CheckIn:
    serial: str
    macs: list[str]
    boot_id: str
    environment: str
    agent_url: str


def check_in(claim: CheckIn, *, remote: str = "") -> tuple[AgentSession, str]:
    """Recognise the node by serial and MACs, issue this boot's token, revoke older boots."""
    # The rack comes along: the check-in event names the node's site.
    node = Node.objects.select_related("rack").filter(serial=claim.serial).first()
    if node is None:
        _refuse(None, f"check-in from unknown serial {claim.serial!r}", remote=remote)
    known = {_normalise_mac(m) for m in node.mac_addresses}
    if known and not known & {_normalise_mac(m) for m in claim.macs}:
        _refuse(node, "check-in MACs match none of the node's recorded MACs", remote=remote)
    if claim.environment not in AgentEnvironment.values:
        _refuse(node, f"unknown environment {claim.environment!r}", remote=remote)
    nonce = secrets.token_hex(16)
    token = derive_token(node.pk, claim.boot_id, nonce)
    now = timezone.now()
    try:
        with transaction.atomic():
            session = AgentSession.objects.create(
                node=node,
                boot_id=claim.boot_id,
                environment=claim.environment,
                agent_url=claim.agent_url,
                token_hash=hash_token(token),
                nonce=nonce,
            )
            older = AgentSession.objects.filter(node=node, revoked_at__isnull=True)
            older.exclude(pk=session.pk).update(revoked_at=now)
            AgentCommand.objects.filter(
                node=node, status__in=(CommandStatus.QUEUED, CommandStatus.SENT)
            ).exclude(session=session).update(status=CommandStatus.LOST, finished_at=now)
            record_event(
                node,
                EventKind.AGENT_CHECKIN,
                actor_label=f"agent:{node.serial}",
                message=f"agent checked in ({claim.environment}, boot {claim.boot_id[:8]})",
                data={"boot_id": claim.boot_id, "environment": claim.environment},
            )
    except IntegrityError:
        _refuse(
            node, f"boot {claim.boot_id} already checked in; its token was issued", remote=remote
        )
    nudge_runs_of(node)
    return session, token


def authenticate(header: str, *, remote: str = "", path: str = "") -> AgentSession:
    """The live session a bearer token speaks for, or AgentRefusal."""
    token = header.removeprefix("Bearer ").strip() if header.startswith("Bearer ") else ""
    if not token:
        _refuse(None, f"agent request without a token ({path})", remote=remote)
    session = (
        AgentSession.objects.select_related("node").filter(token_hash=hash_token(token)).first()
    )
    if session is None:
        _refuse(None, f"agent request with an unknown token ({path})", remote=remote)
    if session.revoked_at is not None:
        _refuse(
            session.node,
            f"token of an old boot ({session.boot_id[:8]}) used for {path}",
            remote=remote,
        )
    return session


def command_for(session: AgentSession, command_id: int, *, remote: str = "") -> AgentCommand:
    """The command a session may report on: its own node's, of its own boot."""
    command = AgentCommand.objects.select_related("node").filter(pk=command_id).first()
    if command is None:
        _refuse(session.node, f"report on unknown command {command_id}", remote=remote)
    if command.node_id != session.node_id:
        _refuse(
            command.node,
            f"agent of node {session.node.serial} reported on a command of {command.node.serial}",
            remote=remote,
        )
    if command.session_id != session.pk:
        _refuse(session.node, f"report on command {command_id} of another boot", remote=remote)
    return command


def heartbeat(session: AgentSession, agent_url: str) -> None:
    """An agent restarted within its boot: note where it now listens."""
    AgentSession.objects.filter(pk=session.pk).update(
        agent_url=agent_url or session.agent_url, last_seen_at=timezone.now()
    )
    nudge_runs_of(session.node)


def nudge_runs_of(node: Node) -> None:
    """Look at the node's active run now instead of at its next scheduled look."""
    active = Run.objects.filter(node=node, status__in=ACTIVE_RUN_STATUSES).order_by()
    for run_id in active.values_list("pk", flat=True):
        nudge(run_id)


def _refuse(node: Node | None, reason: str, *, remote: str = "") -> None:
    with transaction.atomic():
        record_event(
            node,
            EventKind.AGENT_REFUSED,
            actor_label=f"agent@{remote}" if remote else "agent",
            message=reason,
            data={"remote": remote},
        )
    raise AgentRefusal(reason)
