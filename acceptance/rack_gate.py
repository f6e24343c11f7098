"""The rack-wide gate of a rack run (issue 34): after every stage, including the members' own
single-node gates, each compute tray reports its view of the NVLink domain through its agent and
each power shelf's BMC is read; the rack is judged on all of it together (rack_judge).

Registered with provisioning.rack.validation when the app is ready. `look` runs in the rack run's
advance (its transaction and lock): it queues work and reads rows, never waits. Per compute tray
one agent command runs RACK_GATE_TOOLS in the tray's installed OS, on a session that booted after
the tray's power cycle (its new firmware running); a command lost to a reboot is asked again, at
most MAX_ATTEMPTS times. The shelves are read by a worker of the rack's site (tasks.py). Once
every tray answered and the shelves were read, or the deadline passed, the verdict is written
once; a tray that never answered is unknown, and the verdict is never a pass with it.

Where the rack's profile asks for it (`rack_gates: [mndiag]`, the rack-scale SKU's profile),
once every tray answered, the first tray whose host OS is up (the head) runs `dcgmi mndiag`
over every tray that reported, by the address it reported (the one IMEX lists): one more agent
command, asked again like a tray's when lost; its output joins the verdict (rack_mndiag).
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db.models import F

from agent import protocol
from fleet.choices import NodeKind
from fleet.models import Node
from provisioning.agents import link as agent_link
from provisioning.agents.link import HOST_OS
from provisioning.choices import CommandStatus
from provisioning.models import AgentCommand
from provisioning.rack.messages import say, send_advance, send_to_site
from provisioning.rack.validation import RackGate, RackGateLook
from provisioning.rack_models import RackRun, RackRunMember

from . import rack_judge
from .choices import Verdict
from .models import AcceptanceProfile
from .profiles import rack_gates_of
from .rack_models import RackTrayReport, RackVerdict

# What a compute tray runs for the verdict, each a tool of the agent's (agent.protocol.TOOLS).
RACK_GATE_TOOLS = ("nvidia-smi", "imex", "nvlink", "host-addresses", "hostname")
# What the head tray runs over every tray, when the rack's profile asks for it.
MNDIAG_TOOL = "mndiag"
OBSERVE_SHELVES_TASK = "acceptance.tasks.observe_rack_shelves"
PHASE = "rack_gate"
# Seconds every tray and shelf has to answer, real ones like a stage's time limit (the lab's
# compressed clock speeds the trays, not Greenlight's own work): one that has not answered by then
# is judged as silent (unknown).
COLLECT_LIMIT_S = 1800.0
MAX_ATTEMPTS = 3
# An unanswered read of the shelves (a lost message, a worker gone) is asked again after this.
SHELF_LOOK_S = 60.0
FINISHED = (CommandStatus.DONE, CommandStatus.FAILED)
# Where a command the gate asked for stands (_command_state).
ASK, RUNNING_STATE, FINISHED_STATE = "ask", "running", "finished"


def look(rack_run: RackRun, now: datetime) -> RackGateLook:
    """Take the rack-wide gate as far as its rows allow; its verdict once it has one."""
    verdict, created = RackVerdict.objects.get_or_create(
        rack_run=rack_run,
        defaults={
            "started_at": now,
            "deadline": now + timedelta(seconds=COLLECT_LIMIT_S),
            # A callable: the profile is read only when the verdict is created.
            "mndiag_required": lambda: mndiag_required(rack_run),
        },
    )
    if verdict.verdict != Verdict.RUNNING:
        return _answer(verdict)
    mndiag = verdict.mndiag_required
    if created:
        also = ", dcgmi mndiag over them" if mndiag else ""
        say(rack_run, f"rack-wide gate started: {', '.join(RACK_GATE_TOOLS)} on every compute "
                      f"tray{also}, the power shelves' BMCs")  # fmt: skip
    members = list(rack_run.rack.system.members())
    trays = [m for m in members if m.kind == NodeKind.COMPUTE_TRAY]
    shelves = [m for m in members if m.kind == NodeKind.POWER_SHELF]
    silent = [tray for tray in trays if not _collect(rack_run, verdict, tray, now)]
    shelves_pending = _ask_shelves(rack_run, verdict, shelves, now)
    mndiag_pending = mndiag and not silent and _ask_mndiag(verdict, trays)
    if (silent or shelves_pending or mndiag_pending) and now < verdict.deadline:
        waits = [f"{len(silent)} of {len(trays)} compute trays' reports"] if silent else []
        waits += ["dcgmi mndiag over the compute trays"] if mndiag_pending else []
        waits += ["the power shelves' BMCs"] if shelves_pending else []
        return RackGateLook(None, f"waiting for {' and '.join(waits)}")
    rack_judge.judge(rack_run, verdict, trays, shelves, now, mndiag_required=mndiag)
    say(rack_run, f"rack-wide gate: {verdict.get_verdict_display().lower()}: {verdict.summary}",
        verdict=verdict.verdict, findings=len(verdict.findings))  # fmt: skip
    return _answer(verdict)


def _answer(verdict: RackVerdict) -> RackGateLook:
    return RackGateLook(verdict.verdict == Verdict.PASS, verdict.summary)


def _collect(rack_run: RackRun, verdict: RackVerdict, tray: Node, now: datetime) -> bool:
    """Ask the tray for its reports as needed; True once they are in (or it is out of tries)."""
    report, _ = RackTrayReport.objects.get_or_create(verdict=verdict, node=tray)
    state = _command_state(report.command)
    if state != ASK:
        return state == FINISHED_STATE
    if report.attempts >= MAX_ATTEMPTS:
        return True
    session = agent_link.is_alive(tray, HOST_OS)
    cycled = _cycled_at(rack_run, tray)
    if session is None or (cycled is not None and session.created_at < cycled):
        return False  # the tray is still booting after its power cycle
    tools = [{"tool": tool, "duration_s": 1} for tool in RACK_GATE_TOOLS]
    sent = agent_link.send(session, None, PHASE, protocol.RUN_TOOLS, {"tools": tools})
    RackTrayReport.objects.filter(pk=report.pk, attempts=report.attempts).update(
        command=sent, attempts=F("attempts") + 1, asked_at=now
    )
    return False


def _command_state(command: AgentCommand | None) -> str:
    """Where a command the gate asked for stands: finished, still running, or to be asked
    (never asked, or lost to a reboot: its agent stopped polling)."""
    if command is None:
        return ASK
    if command.status not in FINISHED and command.status != CommandStatus.LOST:
        command = agent_link.refresh(command)
    if command.status in FINISHED:
        return FINISHED_STATE
    return ASK if command.status == CommandStatus.LOST else RUNNING_STATE


def mndiag_required(rack_run: RackRun) -> bool:
    """Whether the rack's profile (its rack-scale SKU's, as its manifest pins it) asks for
    dcgmi mndiag."""
    spec = rack_run.manifest.spec if rack_run.manifest_id else {}
    profile = AcceptanceProfile.for_manifest(rack_run.rack.system.sku_id, spec or {})
    return profile is not None and MNDIAG_TOOL in rack_gates_of(profile.spec)


def _ask_mndiag(verdict: RackVerdict, trays: list[Node]) -> bool:
    """Have the head tray run dcgmi mndiag over every tray that reported; True while it runs.
    False once it finished, ran out of tries, or no tray reported an address to run it over."""
    state = _command_state(verdict.mndiag_command)
    if state != ASK:
        return state == RUNNING_STATE
    if verdict.mndiag_attempts >= MAX_ATTEMPTS:
        return False
    addresses = rack_judge.tray_addresses(rack_judge.tray_outputs(verdict, trays))
    if not addresses:
        return False
    for tray in trays:
        session = agent_link.is_alive(tray, HOST_OS)
        if rack_judge.tray_name(tray) not in addresses or session is None:
            continue
        tools = [{"tool": MNDIAG_TOOL, "hosts": list(addresses.values()), "duration_s": 1}]
        sent = agent_link.send(session, None, PHASE, protocol.RUN_TOOLS, {"tools": tools})
        RackVerdict.objects.filter(pk=verdict.pk, mndiag_attempts=verdict.mndiag_attempts).update(
            mndiag_command=sent, mndiag_attempts=F("mndiag_attempts") + 1
        )
        return True
    return True  # every reporting tray is between boots: ask at the next look


def _cycled_at(rack_run: RackRun, tray: Node) -> datetime | None:
    """When this rack run power-cycled the tray (its last cycle), if it did."""
    return (
        RackRunMember.objects.filter(
            stage__rack_run=rack_run, node=tray, cycle_sent_at__isnull=False
        )
        .order_by("-cycle_sent_at")
        .values_list("cycle_sent_at", flat=True)
        .first()
    )


def _ask_shelves(
    rack_run: RackRun, verdict: RackVerdict, shelves: list[Node], now: datetime
) -> bool:
    """Have the shelves' BMCs read by a worker of the rack's site; True while unanswered."""
    if verdict.shelves is not None:
        return False
    if not shelves:
        RackVerdict.objects.filter(pk=verdict.pk, shelves__isnull=True).update(shelves=[])
        verdict.shelves = []
        return False
    asked = verdict.shelves_asked_at
    if asked is not None and now - asked < timedelta(seconds=SHELF_LOOK_S):
        return True
    if RackVerdict.objects.filter(pk=verdict.pk, shelves_asked_at=asked).update(
        shelves_asked_at=now
    ):
        verdict.shelves_asked_at = now
        send_to_site(rack_run, OBSERVE_SHELVES_TASK, (verdict.pk,))
    return True


def observe_shelves(verdict_id: int) -> bool:
    """Read every power shelf's output from its BMC and wake the rack run; False if the verdict
    needs no reading any more. Outside any transaction: BMC reads take seconds."""
    verdict = RackVerdict.objects.select_related("rack_run__rack__system").get(pk=verdict_id)
    if verdict.verdict != Verdict.RUNNING or verdict.shelves is not None:
        return False
    shelves = verdict.rack_run.rack.system.members().filter(kind=NodeKind.POWER_SHELF)
    seen = [rack_judge.read_shelf(shelf) for shelf in shelves]
    if RackVerdict.objects.filter(
        pk=verdict.pk, verdict=Verdict.RUNNING, shelves__isnull=True
    ).update(shelves=seen):
        send_advance(verdict.rack_run_id)
    return True


RACK_GATE = RackGate(look=look)
