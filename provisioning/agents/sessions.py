"""Agent check-in, authentication and polling: a token per node and per boot, and nothing more.

A check-in must present a live boot credential (see boot_credentials): serial and MACs alone earn
nothing and revoke nothing. The first check-in of a boot gets the token; a second one claiming
the same boot is refused. A new boot revokes the node's older sessions, so a token of an old boot
is refused, and a token is only ever accepted for its own node. Refusals are events, bounded by
fleet.refusals: a flood of them from one source within a minute is one event with a count.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, NoReturn

from django.db import IntegrityError, transaction
from django.db.models import Exists, F, OuterRef, QuerySet, Subquery
from django.utils import timezone

from common.prepared_reads import PreparedRead
from fleet.choices import EventKind
from fleet.events import record as record_event
from fleet.events import truncate
from fleet.models import Node
from fleet.refusals import record_refusal

from ..boot import credentials as boot_credentials
from ..boot.credentials import derive_token, hash_token
from ..choices import (
    AgentEnvironment,
    CommandStatus,
)
from ..models import AgentCommand, AgentSession, BootCredential
from ..scheduling import nudge_runs_of_node
from .intervals import (
    INTERVAL_FACTS,
    LIVE_AGENTS,
    interval,
    interval_facts,
    poll_interval,
    recent_activity_since,
)
from .link import silence_after

# Caller-provided text kept in a refusal's reason (the 403 answer and the event).
REFUSAL_TEXT_LIMIT = 200
# A boot's commands still to run or running: what a poll delivers.
OPEN_COMMANDS = (CommandStatus.QUEUED, CommandStatus.SENT)

# Who stops what a contested credential served: the run core registers it at ready()
# (core/contests.py). Each returns the reason shown on the node, or None when the redemption
# is only refused.
ContestSettler = Callable[[BootCredential, str, str], "str | None"]
_CONTEST_SETTLERS: list[ContestSettler] = []


def on_contest(settler: ContestSettler) -> None:
    """Have `settler` stop what a contested credential served (once, whatever the calls)."""
    if settler not in _CONTEST_SETTLERS:
        _CONTEST_SETTLERS.append(settler)


def settle_contest(credential: BootCredential, boot_id: str, remote: str) -> str | None:
    """Tell the settlers of a contested credential; the first reason one gives."""
    reasons = [settler(credential, boot_id, remote) for settler in _CONTEST_SETTLERS]
    return next((r for r in reasons if r), None)


class AgentRefusal(Exception):
    """An agent's request that must be refused (HTTP 403); the reason goes to the event log."""


class AgentUnauthenticated(AgentRefusal):
    """No live token: none, an unknown one, or one whose session ended (HTTP 401)."""


@dataclass(frozen=True)
class CheckIn:
    serial: str
    macs: list[str]
    boot_id: str
    environment: str
    credential: str
    inventory: dict[str, Any] = field(default_factory=dict)


# A check-in's read of its credential with the node's interval facts, compiled once per thread as
# the poll's is.
CHECK_IN_CREDENTIAL = PreparedRead(
    lambda secret_hash, recent: (
        boot_credentials.live_credentials(secret_hash)
        .annotate(**interval_facts(OuterRef("node_id"), recent))
        .order_by("pk")[:1]
    )
)


def _credential_with_facts(secret_hash: str) -> BootCredential | None:
    return CHECK_IN_CREDENTIAL.first(secret_hash, recent_activity_since())


def check_in(claim: CheckIn, *, remote: str = "") -> tuple[AgentSession, str]:
    """Redeem the boot credential, issue this boot's token, revoke the node's older boots."""
    if claim.environment not in AgentEnvironment.values:
        _refuse(None, f"check-in for unknown environment {_clip(claim.environment)!r}", remote)
    try:
        # The node's interval facts come with the credential: the check-in reads them once.
        credential = boot_credentials.redeem(
            claim.credential, claim.environment, claim.boot_id, find=_credential_with_facts
        )
    except boot_credentials.CredentialContested as exc:
        reason = settle_contest(exc.credential, claim.boot_id, remote)
        _refuse(exc.credential.node, reason or _not_ordered(exc.credential), remote)
    except boot_credentials.CredentialNotArmed as exc:
        _refuse(exc.credential.node, _not_ordered(exc.credential), remote)
    if credential is None:
        # Nothing is looked up by serial here: a claim without the secret learns nothing.
        _refuse(None, "check-in without a live boot credential", remote)
    node = credential.node
    if claim.serial != node.serial:
        _refuse(
            node, f"boot credential of {node.serial} presented by {_clip(claim.serial)!r}", remote
        )
    known = {boot_credentials.normalise_mac(m) for m in node.mac_addresses} - {""}
    claimed = {boot_credentials.normalise_mac(m) for m in claim.macs}
    if known and not known & claimed:
        _refuse(node, "check-in MACs match none of the node's recorded MACs", remote)
    facts = {name: getattr(credential, name) for name in INTERVAL_FACTS}
    nonce = secrets.token_hex(16)
    token = derive_token(node.pk, claim.boot_id, nonce)
    now = timezone.now()
    try:
        with transaction.atomic():
            session = AgentSession.objects.create(
                node=node,
                boot_id=claim.boot_id,
                environment=claim.environment,
                credential=credential,
                token_hash=hash_token(token),
                nonce=nonce,
                inventory=claim.inventory,
                inventory_at=now,
                expected_by=now + silence_after(interval(facts)),
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
            # In the transaction: once it commits, the boot credential is spent and a retried
            # check-in is refused, so nothing after the commit may fail the answer (a database
            # failover between the two would leave the boot without its token).
            nudge_runs_of(node)
    except IntegrityError:
        _refuse(
            node, f"boot {_clip(claim.boot_id)} already checked in; its token was issued", remote
        )
    # The interval the answer tells, as poll_interval would read it now, without a read after
    # the commit (that spent the credential: nothing after it may fail the answer). This boot
    # checked in just now, and the node has no command running: the older boots' open ones
    # were judged lost above, and this one has none yet.
    session.poll_s = interval({**facts, "command_running": False, "boot_at": session.created_at})
    return session, token


def authenticate(header: str, *, remote: str = "", path: str = "") -> AgentSession:
    """The live session a bearer token speaks for, or AgentRefusal."""
    return _authenticated(_session_by_token, header, remote, path)


def authenticate_poll(header: str, *, remote: str = "", path: str = "") -> AgentSession:
    """As authenticate, with what a poll needs read in the same query: whether the boot has
    open commands and the facts its next interval follows from (see poll)."""
    return _authenticated(_poll_session_by_token, header, remote, path)


def _session_by_token(token_hash: str) -> AgentSession | None:
    return AgentSession.objects.select_related("node").filter(token_hash=token_hash).first()


def _sent_ids(rank: slice) -> Subquery:
    sent = AgentCommand.objects.filter(session=OuterRef("pk"), status=CommandStatus.SENT)
    return Subquery(sent.order_by("-pk").values("pk")[rank])


# The poll's one read, compiled once per thread: building and compiling this queryset cost
# 3.0 ms of CPU on PostgreSQL against 0.27 ms for running it (common/prepared_reads.py), and
# polls are most of the agents' requests (80 a node in a 74-node benchmark). What the boot has
# open comes with it: whether a command is queued, and the newest two sent, which is enough to
# tell a poll while its one command runs that it has nothing to deliver (see poll).
POLL_SESSION = PreparedRead(
    lambda token_hash, recent: (
        AgentSession.objects.annotate(
            has_queued_commands=Exists(
                AgentCommand.objects.filter(session=OuterRef("pk"), status=CommandStatus.QUEUED)
            ),
            newest_sent_id=_sent_ids(slice(0, 1)),
            second_sent_id=_sent_ids(slice(1, 2)),
            **interval_facts(OuterRef("node_id"), recent),
        )
        .select_related("node")
        .filter(token_hash=token_hash)
        .order_by("pk")[:1]
    )
)


def _poll_session_by_token(token_hash: str) -> AgentSession | None:
    return POLL_SESSION.first(token_hash, recent_activity_since())


def _reported_commands(command_id: int, token_hash: str) -> QuerySet[AgentCommand]:
    """The command, if the token's live session may report on it (its own node's, its boot's)."""
    return AgentCommand.objects.select_related("session__node").filter(
        pk=command_id,
        session__token_hash=token_hash,
        session__revoked_at__isnull=True,
        node_id=F("session__node_id"),
    )


def _reported_commands_with_facts(
    command_id: int, token_hash: str, recent: datetime
) -> QuerySet[AgentCommand]:
    facts = interval_facts(OuterRef("node_id"), recent)
    # Once the result is stored this command runs no more: only the node's others count.
    facts["command_running"] = Exists(
        AgentCommand.objects.filter(node_id=OuterRef("node_id"), status=CommandStatus.SENT).exclude(
            pk=OuterRef("pk")
        )
    )
    return _reported_commands(command_id, token_hash).annotate(**facts)


MAX_ID = 2**63 - 1
# A result's read, compiled once per thread as the poll's is (4.1 ms of CPU to build and
# compile with the interval's facts).
REPORTED_COMMAND = PreparedRead(lambda *args: _reported_commands(*args).order_by("pk")[:1])
REPORTED_COMMAND_WITH_FACTS = PreparedRead(
    lambda *args: _reported_commands_with_facts(*args).order_by("pk")[:1]
)


def authenticate_report(
    header: str, command_id: int, *, remote: str = "", path: str = "", interval: bool = False
) -> AgentCommand:
    """The command a bearer token's live session may report on, with that session (and its
    node) on it: authenticate and command_for in one read where the request is in order, and
    their two reads, which refuse as they always did, where it is not. `interval`: read the
    facts of the interval to tell after the result (interval_after_result) as well."""
    token = _bearer(header)
    # An id past a database integer takes the ORM's path, which reads it as no command.
    if token and 0 < command_id <= MAX_ID:
        if interval:
            command = REPORTED_COMMAND_WITH_FACTS.first(
                command_id, hash_token(token), recent_activity_since()
            )
        else:
            command = REPORTED_COMMAND.first(command_id, hash_token(token))
        if command is not None:
            return command
    session = authenticate(header, remote=remote, path=path)
    command = command_for(session, command_id, remote=remote)
    command.session = session
    return command


def _bearer(header: str) -> str:
    return header.removeprefix("Bearer ").strip() if header.startswith("Bearer ") else ""


def _authenticated(
    find: Callable[[str], AgentSession | None], header: str, remote: str, path: str
) -> AgentSession:
    """The live session `find` reads for the header's token (by its hash), or AgentRefusal."""
    token = _bearer(header)
    if not token:
        _refuse(
            None, f"agent request without a token ({_clip(path)})", remote, AgentUnauthenticated
        )
    session = find(hash_token(token))
    if session is None:
        _refuse(
            None,
            f"agent request with an unknown token ({_clip(path)})",
            remote,
            AgentUnauthenticated,
        )
    if session.revoked_at is not None:
        # Revoked by a newer boot, by the end of its run, or by the node's move (session_ends).
        _refuse(
            session.node,
            f"token of an ended session (boot {session.boot_id[:8]}, an old boot or a finished "
            f"run) used for {_clip(path)}",
            remote,
            AgentUnauthenticated,
        )
    return session


def command_for(session: AgentSession, command_id: int, *, remote: str = "") -> AgentCommand:
    """The command a session may report on: its own node's, of its own boot."""
    command = AgentCommand.objects.select_related("node").filter(pk=command_id).first()
    if command is None:
        _refuse(session.node, f"report on unknown command {command_id}", remote)
    if command.node_id != session.node_id:
        _refuse(
            command.node,
            f"agent of node {session.node.serial} reported on a command of {command.node.serial}",
            remote,
        )
    if command.session_id != session.pk:
        _refuse(session.node, f"report on command {command_id} of another boot", remote)
    return command


def poll(session: AgentSession, known: set[int]) -> tuple[list[dict[str, Any]], float]:
    """The commands this boot's agent should run now (marked sent), and when to ask again.

    A command already sent that the agent does not list as known was lost on the way (the
    answer to an earlier poll never arrived): it is sent again. The agent never runs an id twice.
    A session from authenticate_poll with nothing to deliver costs no query here (a fleet's
    polls are mostly that: nothing open, or the one command the agent runs), and its liveness
    is written only every few polls (see seen).
    """
    now = timezone.now()
    pending: list[Any] = []
    if _may_deliver(session, known):
        pending = list(
            AgentCommand.objects.filter(session=session, status__in=OPEN_COMMANDS)
            .order_by("pk")
            .values("pk", "kind", "params", "status")
        )
    deliver = [c for c in pending if c["status"] == CommandStatus.QUEUED or c["pk"] not in known]
    queued = [c["pk"] for c in deliver if c["status"] == CommandStatus.QUEUED]
    if queued:
        AgentCommand.objects.filter(pk__in=queued, status=CommandStatus.QUEUED).update(
            status=CommandStatus.SENT, sent_at=now
        )
    LIVE_AGENTS.saw(session.pk)
    if hasattr(session, "command_running"):
        poll_s = interval(vars(session), sent_now=bool(queued))
    else:
        poll_s = poll_interval(session.node_id)
    seen(session, poll_s, now)
    commands = [
        {"id": c["pk"], "kind": c["kind"], "params": boot_credentials.with_secrets(c["params"])}
        for c in deliver
    ]
    return commands, poll_s


def _may_deliver(session: AgentSession, known: set[int]) -> bool:
    """Whether the boot may have a command to deliver, from what authenticate_poll read with
    the session (True where it read nothing): one queued, or one sent the agent does not list
    as known (two or more sent: the commands are read to tell)."""
    if getattr(session, "has_queued_commands", True):
        return True
    newest, second = (
        getattr(session, "newest_sent_id", None),
        getattr(session, "second_sent_id", None),
    )
    return second is not None or (newest is not None and newest not in known)


def seen(session: AgentSession, poll_s: float, now=None) -> bool:
    """The agent was here now and was told to come back in `poll_s`. Written only when the
    stored deadline has less than a whole silence left, and then with half a silence to spare:
    a live agent is never judged silent sooner than before, and two polls in three are reads.
    Whether it wrote."""
    now = now or timezone.now()
    silence = silence_after(poll_s)
    if session.expected_by - now >= silence:
        return False
    AgentSession.objects.filter(pk=session.pk).update(
        last_seen_at=now, expected_by=now + silence + silence / 2
    )
    return True


def interval_after_result(command: AgentCommand) -> float:
    """The interval to tell the agent whose result for `command` was just stored: as
    poll_interval would read it now, from the facts read with the command where it has them
    (authenticate_report): the command finished just now."""
    if not hasattr(command, "command_running"):
        return poll_interval(command.node_id)
    facts = {name: getattr(command, name) for name in INTERVAL_FACTS}
    return interval({**facts, "command_finished_at": timezone.now()})


def record_inventory(session: AgentSession, inventory: dict[str, Any]) -> None:
    """Keep what the agent reported of its node: the in-band phases observe through it."""
    AgentSession.objects.filter(pk=session.pk).update(
        inventory=inventory, inventory_at=timezone.now(), last_seen_at=timezone.now()
    )


def nudge_runs_of(node: Node) -> None:
    """Look at the node's active run now instead of at its next scheduled look."""
    nudge_runs_of_node(node.pk)


def _not_ordered(credential: BootCredential) -> str:
    return (
        f"{credential.environment} boot credential presented with no boot of the node ordered by "
        "Greenlight since its last check-in (the node rebooted on its own, or someone else holds it)"
    )


def _clip(text: str) -> str:
    return truncate(text, REFUSAL_TEXT_LIMIT)


def _refuse(
    node: Node | None,
    reason: str,
    remote: str = "",
    refusal: type[AgentRefusal] = AgentRefusal,
) -> NoReturn:
    """Record the refusal (bounded per source and minute: fleet.refusals) and raise it."""
    record_refusal(
        EventKind.AGENT_REFUSED,
        source=remote or "unknown",
        message=reason,
        node=node,
        data={"remote": remote},
        actor_label=f"agent@{remote}" if remote else "agent",
    )
    raise refusal(_clip(reason))
