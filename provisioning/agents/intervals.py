"""How often an agent is told to poll: often only when its next command is likely soon.

What the interval follows from (INTERVAL_FACTS) is read with what the request reads anyway (a
check-in's credential, a poll's session, a result's command: interval_facts annotates them), so
telling it costs no query; poll_interval reads them alone for a caller that has none of those.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db.models import Exists, OuterRef, Subquery
from django.utils import timezone

from common import instrumentation
from fleet.models import Node

from .. import clock
from ..choices import ACTIVE_RUN_STATUSES, OPEN_RACK_RUN_STATUSES, CommandStatus
from ..models import AgentCommand, AgentSession, RackRun, Run
from .poll_load import LiveAgents

# No agent is asked to poll more often than this, however fast the clock runs.
MIN_POLL_S = 0.1
# Node seconds after a check-in or a finished command in which the next command is expected;
# past them, an agent with nothing to do polls this many times less often.
RECENT_ACTIVITY_S = 120.0
SETTLED_POLL_FACTOR = 5
# Within that span the interval is this share of the time since the activity (between the short
# and the settled one): the next command usually comes within seconds, and an agent still asking
# after twenty has most likely a reboot or a firmware act to wait for. A fixed short interval
# made 60 polls of every such span (two thirds of the agents' API's CPU in the benchmark).
BACKOFF_SHARE = 0.5
# In a phase that sends its agent nothing (an out-of-band one: the BMC's firmware, its BIOS
# settings) the interval grows, the same way, up to this many short intervals: two thirds of a
# node's polls came in its firmware phases at the settled interval (111 of 154 a node in a lab
# run of 2 nodes at speed 20), for commands that only the next phase sends. The phase that
# follows waits at most this for its first command's poll (60 node seconds at the defaults, once
# or twice a run).
QUIET_POLL_FACTOR = 30
# The intervals a poll budget may stretch: an agent told one of these expects no command soon
# (its command runs and pushes its result, its node has no run, or nothing came for a while).
# The backing-off ones after a check-in or a finished command stay as they are: the next
# command usually follows within seconds.
_STRETCHABLE = frozenset({"no run", "command running", "quiet phase, settled", "in band, settled"})


# The run phases that send the agent nothing, as the run core names them at ready() (the agent
# channel sits below it): its out-of-band phases.
_QUIET_PHASES: set[str] = set()


def phases_without_commands(names: Iterable[str]) -> None:
    """Name the run phases that send the agent nothing; a poll in them backs off further."""
    _QUIET_PHASES.update(names)


# What the poll interval follows from: EXISTS on the node's rows, and when it last did
# something a next command follows (its boot checked in, a command finished), if recently.
INTERVAL_FACTS = (
    "run_phase",
    "rack_run_open",
    "command_running",
    "boot_at",
    "command_finished_at",
)


def recent_activity_since() -> datetime:
    """From when a boot's check-in or a finished command counts as recent (RECENT_ACTIVITY_S)."""
    return timezone.now() - clock.real_delta(RECENT_ACTIVITY_S)


def interval_facts(node: OuterRef, recent: datetime | None = None) -> dict[str, Exists | Subquery]:
    """The interval's facts (INTERVAL_FACTS) of the node `node` refers to; `recent`: from when
    activity counts as recent (now's, when not given)."""
    recent = recent or recent_activity_since()
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


def interval(facts: dict[str, Any], *, sent_now: bool = False) -> float:
    """The interval the facts call for, no shorter than the poll budget allows an agent that
    expects no command soon; `sent_now` when this poll just sent a command."""
    seconds, why = _interval_and_why(facts, sent_now=sent_now)
    if why in _STRETCHABLE:
        floor = budget_floor_s()
        if floor > seconds:
            seconds, why = floor, f"{why}, budget"
    # The benchmark counts polls by why they came when they did (a no-op otherwise).
    instrumentation.detail(why)
    return seconds


def budget_floor_s() -> float:
    """The interval at which the agents this process hears from poll at most
    GREENLIGHT_AGENT_POLLS_PER_S times a second together; never longer than an agent may be told
    anyway (longest_interval_s), so liveness and the keep-alive hold as before.

    Why: an agent with nothing to do costs a request and a read however large the fleet, so
    without a bound the idle polls grow with it. 5,000 lab nodes at speed 4 (the polls of 20,000
    real ones) in their firmware phases asked about 270 times a second at the settled 15 s, and
    the agents' API and their simulated agents took two thirds of two cores while the workers
    that advance the runs had under half of one (session 31).
    """
    return min(LIVE_AGENTS.count() / settings.GREENLIGHT_AGENT_POLLS_PER_S, longest_interval_s())


def _interval_and_why(facts: dict[str, Any], *, sent_now: bool) -> tuple[float, str]:
    if facts.get("run_phase") is None and not facts.get("rack_run_open"):
        return settings.GREENLIGHT_AGENT_IDLE_POLL_S, "no run"
    if facts.get("command_running") or sent_now:
        return settings.GREENLIGHT_AGENT_IDLE_POLL_S, "command running"
    short = settings.GREENLIGHT_AGENT_POLL_S
    quiet = facts.get("run_phase") in _QUIET_PHASES and not facts.get("rack_run_open")
    settled = settled_node_s(quiet=quiet)
    active = [at for at in (facts.get("boot_at"), facts.get("command_finished_at")) if at]
    if active:
        # Node seconds since the latest activity: the longer nothing came, the less to expect.
        since = clock.node_seconds(timezone.now() - max(active))
        node_s = min(max(BACKOFF_SHARE * since, short), settled)
    else:
        node_s = settled
    why = ("quiet phase" if quiet else "in band") + (", settled" if node_s >= settled else "")
    return max(node_s / clock.scale(), MIN_POLL_S), why


def settled_node_s(*, quiet: bool) -> float:
    """Node seconds between the polls of an agent that nothing happened to lately: in a quiet
    (out-of-band) phase, or in an in-band one."""
    factor = QUIET_POLL_FACTOR if quiet else SETTLED_POLL_FACTOR
    return factor * settings.GREENLIGHT_AGENT_POLL_S


def longest_interval_s() -> float:
    """The longest interval an agent can be told, in real seconds on a real clock: a run's quiet
    phase settled, or a command running, or no run."""
    return max(settings.GREENLIGHT_AGENT_IDLE_POLL_S, settled_node_s(quiet=True))


# An agent polling at the longest interval is seen twice within the window.
LIVE_AGENTS = LiveAgents(window_s=2 * longest_interval_s())


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
        .annotate(**interval_facts(OuterRef("pk")))
        .values(*INTERVAL_FACTS)
        .first()
    )
    return interval(facts or {})
