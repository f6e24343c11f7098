"""Agent check-in, authentication and polling: a token per node and per boot, and nothing more.

A check-in must present a live boot credential (see boot_credentials): serial and MACs alone earn
nothing and revoke nothing. The first check-in of a boot gets the token; a second one claiming
the same boot is refused. A new boot revokes the node's older sessions, so a token of an old boot
is refused, and a token is only ever accepted for its own node. Refusals are events, bounded by
fleet.refusals: a flood of them from one source within a minute is one event with a count.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, NoReturn

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Exists, F, OuterRef, QuerySet, Subquery
from django.utils import timezone

from common import instrumentation
from common.prepared_reads import PreparedRead
from fleet.choices import EventKind
from fleet.events import record as record_event
from fleet.events import truncate
from fleet.models import Node
from fleet.refusals import record_refusal

from .. import clock
from ..boot import credentials as boot_credentials
from ..boot.credentials import derive_token, hash_token
from ..choices import (
    ACTIVE_RUN_STATUSES,
    OPEN_RACK_RUN_STATUSES,
    AgentEnvironment,
    CommandStatus,
)
from ..models import AgentCommand, AgentSession, BootCredential, RackRun, Run
from ..scheduling import nudge_runs
from .link import silence_after

# Caller-provided text kept in a refusal's reason (the 403 answer and the event).
REFUSAL_TEXT_LIMIT = 200
# No agent is asked to poll more often than this, however fast the clock runs.
MIN_POLL_S = 0.1
# Node seconds after a check-in or a finished command in which the next command is expected;
# past them, an agent with nothing to do polls this many times less often.
RECENT_ACTIVITY_S = 120.0
# A boot's commands still to run or running: what a poll delivers.
OPEN_COMMANDS = (CommandStatus.QUEUED, CommandStatus.SENT)
SETTLED_POLL_FACTOR = 5
# Within that span the interval is this share of the time since the activity (between the short
# and the settled one): the next command usually comes within seconds, and an agent still asking
# after twenty has most likely a reboot or a firmware act to wait for. A fixed short interval
# made 60 polls of every such span (two thirds of the agents' API's CPU in the benchmark).
BACKOFF_SHARE = 0.5
# In a phase that sends its agent nothing (an out-of-band one: the BMC's firmware, its BIOS
# settings) the interval grows, the same way, up to this many short intervals: two thirds of a
# node's polls came in its firmware phases at the settled interval (111 of 154 a node in a lab
# run of 2 nodes at speed 20), for commands that only the next phase sends. The phase that follows waits at most this
# for its first command's poll (60 node seconds at the defaults, once or twice a run).
QUIET_POLL_FACTOR = 30


# The run phases that send the agent nothing, as the run core names them at ready() (the agent
# channel sits below it): its out-of-band phases.
_QUIET_PHASES: set[str] = set()


def phases_without_commands(names: Iterable[str]) -> None:
    """Name the run phases that send the agent nothing; a poll in them backs off further."""
    _QUIET_PHASES.update(names)


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
        .annotate(**_interval_facts(OuterRef("node_id"), recent))
        .order_by("pk")[:1]
    )
)


def _credential_with_facts(secret_hash: str) -> BootCredential | None:
    return CHECK_IN_CREDENTIAL.first(secret_hash, _recent_activity_since())


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
                expected_by=now + silence_after(_interval(facts)),
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
    session.poll_s = _interval({**facts, "command_running": False, "boot_at": session.created_at})
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


# The poll's one read, compiled once per thread: building and compiling this queryset cost
# 3.0 ms of CPU on PostgreSQL against 0.27 ms for running it (common/prepared_reads.py), and
# polls are most of the agents' requests (80 a node in a 74-node benchmark).
POLL_SESSION = PreparedRead(
    lambda token_hash, recent: (
        AgentSession.objects.annotate(
            has_open_commands=Exists(
                AgentCommand.objects.filter(session=OuterRef("pk"), status__in=OPEN_COMMANDS)
            ),
            **_interval_facts(OuterRef("node_id"), recent),
        )
        .select_related("node")
        .filter(token_hash=token_hash)
        .order_by("pk")[:1]
    )
)


def _poll_session_by_token(token_hash: str) -> AgentSession | None:
    return POLL_SESSION.first(token_hash, _recent_activity_since())


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
    facts = _interval_facts(OuterRef("node_id"), recent)
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
                command_id, hash_token(token), _recent_activity_since()
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
    A session from authenticate_poll with nothing open costs no query here (a fleet's polls are
    mostly that), and its liveness is written only every few polls (see seen).
    """
    now = timezone.now()
    pending: list[Any] = []
    if getattr(session, "has_open_commands", True):
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
    if hasattr(session, "command_running"):
        poll_s = _interval(vars(session), sent_now=bool(queued))
    else:
        poll_s = poll_interval(session.node_id)
    seen(session, poll_s, now)
    commands = [
        {"id": c["pk"], "kind": c["kind"], "params": boot_credentials.with_secrets(c["params"])}
        for c in deliver
    ]
    return commands, poll_s


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


def poll_interval(node_id: int) -> float:
    """Seconds until the agent should ask again.

    Short right after its boot checked in or its last command finished, when the run's next
    command usually follows, then growing with the time since (half of it) up to the settled
    interval; longer while a command of it is running (the result is pushed, and
    a pushed result wakes the agent's next poll at once) or while an out-of-band phase keeps the
    run busy elsewhere; long when the node has no run (nor a rack run open over its rack). The
    short and middle intervals run on Greenlight's clock, so the lab's compressed time keeps
    commands in proportion. One query.
    """
    facts = (
        Node.objects.filter(pk=node_id)
        .annotate(**_interval_facts(OuterRef("pk")))
        .values(*INTERVAL_FACTS)
        .first()
    )
    return _interval(facts or {})


def interval_after_result(command: AgentCommand) -> float:
    """The interval to tell the agent whose result for `command` was just stored: as
    poll_interval would read it now, from the facts read with the command where it has them
    (authenticate_report): the command finished just now."""
    if not hasattr(command, "command_running"):
        return poll_interval(command.node_id)
    facts = {name: getattr(command, name) for name in INTERVAL_FACTS}
    return _interval({**facts, "command_finished_at": timezone.now()})


# What the poll interval follows from: EXISTS on the node's rows, and when it last did
# something a next command follows (its boot checked in, a command finished), if recently.
INTERVAL_FACTS = (
    "run_phase",
    "rack_run_open",
    "command_running",
    "boot_at",
    "command_finished_at",
)


def _recent_activity_since() -> datetime:
    """From when a boot's check-in or a finished command counts as recent (RECENT_ACTIVITY_S)."""
    return timezone.now() - clock.real_delta(RECENT_ACTIVITY_S)


def _interval_facts(node: OuterRef, recent: datetime | None = None) -> dict[str, Exists | Subquery]:
    """The interval's facts (INTERVAL_FACTS) of the node `node` refers to; `recent`: from when
    activity counts as recent (now's, when not given)."""
    recent = recent or _recent_activity_since()
    commands = AgentCommand.objects.filter(node_id=node)
    boots = AgentSession.objects.filter(node_id=node, created_at__gte=recent)
    finished = commands.filter(finished_at__gte=recent)
    runs = Run.objects.filter(node_id=node, status__in=ACTIVE_RUN_STATUSES).order_by()
    return {
        # The active run's phase ("" before its first): None, no active run.
        "run_phase": Subquery(runs.values("current_phase")[:1]),
        # A rack member while its rack's rack run is open: after the members' own runs ended,
        # the rack-wide gate asks each compute tray for its reports (provisioning.rack).
        "rack_run_open": Exists(
            RackRun.objects.filter(rack__nodes__pk=node, status__in=OPEN_RACK_RUN_STATUSES)
        ),
        "command_running": Exists(commands.filter(status=CommandStatus.SENT)),
        "boot_at": Subquery(boots.order_by("-created_at").values("created_at")[:1]),
        "command_finished_at": Subquery(
            finished.order_by("-finished_at").values("finished_at")[:1]
        ),
    }


def _interval(facts: dict[str, Any], *, sent_now: bool = False) -> float:
    """The interval the facts call for; `sent_now` when this poll just sent a command."""
    seconds, why = _interval_and_why(facts, sent_now=sent_now)
    # The benchmark counts polls by why they came when they did (a no-op otherwise).
    instrumentation.detail(why)
    return seconds


def _interval_and_why(facts: dict[str, Any], *, sent_now: bool) -> tuple[float, str]:
    if facts.get("run_phase") is None and not facts.get("rack_run_open"):
        return settings.GREENLIGHT_AGENT_IDLE_POLL_S, "no run"
    if facts.get("command_running") or sent_now:
        return settings.GREENLIGHT_AGENT_IDLE_POLL_S, "command running"
    short = settings.GREENLIGHT_AGENT_POLL_S
    quiet = facts.get("run_phase") in _QUIET_PHASES and not facts.get("rack_run_open")
    settled = (QUIET_POLL_FACTOR if quiet else SETTLED_POLL_FACTOR) * short
    active = [at for at in (facts.get("boot_at"), facts.get("command_finished_at")) if at]
    if active:
        # Node seconds since the latest activity: the longer nothing came, the less to expect.
        since = clock.node_seconds(timezone.now() - max(active))
        node_s = min(max(BACKOFF_SHARE * since, short), settled)
    else:
        node_s = settled
    why = ("quiet phase" if quiet else "in band") + (", settled" if node_s >= settled else "")
    return max(node_s / clock.scale(), MIN_POLL_S), why


def record_inventory(session: AgentSession, inventory: dict[str, Any]) -> None:
    """Keep what the agent reported of its node: the in-band phases observe through it."""
    AgentSession.objects.filter(pk=session.pk).update(
        inventory=inventory, inventory_at=timezone.now(), last_seen_at=timezone.now()
    )


def nudge_runs_of(node: Node) -> None:
    """Look at the node's active run now instead of at its next scheduled look."""
    nudge_runs(Run.objects.filter(node=node, status__in=ACTIVE_RUN_STATUSES))


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
