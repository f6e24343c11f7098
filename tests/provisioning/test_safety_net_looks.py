"""A look that only guards against news that never came is not a message until it is nearly due.

A phase waiting for its agent's result, or for a boot's check-in, is nudged when that news comes:
the nudge sends the look that matters. The timed look beside it is a safety net. Sent with its
countdown at the hand-over, it reached a worker after the news had been handled and found its step
taken: 84 of 264 step messages in a four-node lab run were such stale looks, each a message to
publish, hold and read for nothing.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from provisioning import clock
from provisioning.agents import link as agent_link
from provisioning.choices import AgentEnvironment, CommandStatus, RunStatus
from provisioning.core.engine import advance
from provisioning.core.phases.base import PhaseContext
from provisioning.core.phases.common import awaiting_boot
from provisioning.core.phases.inband import COMMAND_LOOK_S
from provisioning.core.sweep import dispatch_due, renew_command_nets
from provisioning.models import AgentCommand, AgentSession, PhaseRecord, Run
from provisioning.outcomes import Wait
from provisioning.scheduling import hand_over, nudge
from tests.provisioning.test_step_queries import waiting_on_agent

SWEEP_S = 2.0
MAX_S = 60.0


@pytest.fixture(autouse=True)
def _timing(settings):
    settings.GREENLIGHT_MAX_COUNTDOWN_S = MAX_S
    settings.GREENLIGHT_SWEEP_SECONDS = SWEEP_S


@pytest.fixture
def gate_run(node, manifest, profile, django_capture_on_commit_callbacks) -> Run:
    """A run at its GPU health gate whose agent is running the gate's tools."""
    with django_capture_on_commit_callbacks(execute=False):
        run = waiting_on_agent(node, "gate:gpu_health", "running")
    Run.objects.filter(pk=run.pk).update(current_phase="gate:gpu_health")
    run.refresh_from_db()
    return run


@pytest.fixture
def handing_over(gate_run) -> Run:
    """The gate's run while a step holds it, about to hand it over."""
    Run.objects.filter(pk=gate_run.pk).update(status=RunStatus.RUNNING)
    return gate_run


@pytest.mark.django_db
def test_a_wait_for_an_agents_result_is_a_row_not_a_message(
    gate_run, settings, django_capture_on_commit_callbacks
):
    # At a tenth of the time, the 300 node s safety net is 30 real s: within the longest
    # countdown, so an ordinary look would be sent at the hand-over.
    settings.GREENLIGHT_TIME_SCALE = 10
    with django_capture_on_commit_callbacks(execute=False) as sent:
        advance(gate_run.pk, gate_run.step)
    gate_run.refresh_from_db()
    assert gate_run.wait_reason.startswith("agent running run_tools")
    assert gate_run.safety_net and gate_run.dispatched_at is None
    assert sent == []
    # The result comes: its nudge is the one message of this step.
    with django_capture_on_commit_callbacks(execute=False) as sent:
        nudge(gate_run.pk)
    assert len(sent) == 1


@pytest.mark.django_db
def test_a_safety_net_is_sent_once_it_falls_within_one_sweep(
    handing_over, django_capture_on_commit_callbacks
):
    now = timezone.now()
    due = now + timedelta(seconds=30)
    with django_capture_on_commit_callbacks(execute=False) as sent:
        hand_over(
            handing_over, due, wait_reason="agent running run_tools", now=now, safety_net=True
        )
        # Within the longest countdown, but more than a sweep ahead: the sweep leaves it.
        assert dispatch_due(now=due - timedelta(seconds=SWEEP_S + 1)) == 0
        assert sent == []
        # The news never came: the sweep before it is due sends it, once.
        assert dispatch_due(now=due - timedelta(seconds=SWEEP_S)) == 1
        assert dispatch_due(now=due - timedelta(seconds=1)) == 0
    assert len(sent) == 1


@pytest.mark.django_db
def test_an_ordinary_look_after_a_safety_net_is_sent_as_before(
    handing_over, django_capture_on_commit_callbacks
):
    run = handing_over
    now = timezone.now()
    with django_capture_on_commit_callbacks(execute=False):
        hand_over(run, now + timedelta(seconds=30), now=now, safety_net=True)
    run.refresh_from_db()
    run.step += 1
    Run.objects.filter(pk=run.pk).update(step=run.step, status=RunStatus.RUNNING)
    with django_capture_on_commit_callbacks(execute=False) as sent:
        hand_over(run, now + timedelta(seconds=30), now=now)
    run.refresh_from_db()
    assert not run.safety_net and run.dispatched_at == now
    assert len(sent) == 1


@pytest.mark.django_db
def test_a_wait_for_a_boots_check_in_is_a_safety_net(gate_run):
    record = gate_run.phases.get(phase="gate:gpu_health")
    ctx = PhaseContext(run=gate_run, node=gate_run.node, record=record, manifest={})
    waiting = awaiting_boot(ctx)
    assert waiting is not None and waiting.safety_net
    # A look at a BMC, which nothing nudges, is not one.
    assert Wait(10, "powering on").safety_net is False


# -- a command's net set again by the sweep, while its agent runs it and polls -------------------


def polled_by(run: Run, *, expected_in: timedelta, revoked: bool = False) -> AgentCommand:
    """Give the run's command a session whose agent is next expected `expected_in` from now."""
    now = timezone.now()
    session = AgentSession.objects.create(
        node=run.node,
        boot_id="boot-1",
        environment=AgentEnvironment.EPHEMERAL,
        token_hash="a" * 64,
        expected_by=now + expected_in,
        revoked_at=now if revoked else None,
    )
    command = AgentCommand.objects.get(run=run)
    AgentCommand.objects.filter(pk=command.pk).update(session=session)
    return command


def net_handed_over(run: Run, now, in_s: float = 30.0):
    """The step hands the run over with a safety net `in_s` from `now`; when it is due."""
    Run.objects.filter(pk=run.pk).update(status=RunStatus.RUNNING)
    due = now + timedelta(seconds=in_s)
    hand_over(run, due, wait_reason="agent running run_tools", now=now, safety_net=True)
    return due


@pytest.mark.django_db
def test_a_net_over_a_command_its_polling_agent_still_runs_is_set_again_not_sent(
    gate_run, django_capture_on_commit_callbacks
):
    polled_by(gate_run, expected_in=timedelta(minutes=5))
    now = timezone.now()
    with django_capture_on_commit_callbacks(execute=False) as sent:
        due = net_handed_over(gate_run, now)
        sweep_at = due - timedelta(seconds=SWEEP_S)
        assert dispatch_due(now=sweep_at) == 0
        assert sent == []
    gate_run.refresh_from_db()
    assert gate_run.next_look_at == sweep_at + clock.real_delta(COMMAND_LOOK_S)
    assert gate_run.safety_net and gate_run.dispatched_at is None
    assert gate_run.status == RunStatus.WAITING
    # The result comes: its nudge sends the step, which claims the run as before.
    with django_capture_on_commit_callbacks(execute=False) as sent:
        nudge(gate_run.pk)
    assert len(sent) == 1


@pytest.mark.django_db
@pytest.mark.parametrize(
    "why",
    ["agent stopped polling", "session revoked", "past the deadline", "result came", "no session"],
)
def test_a_net_is_sent_as_before_when_its_look_has_something_to_find(
    gate_run, django_capture_on_commit_callbacks, why
):
    now = timezone.now()
    if why != "no session":
        polled_by(
            gate_run,
            expected_in=timedelta(seconds=-1 if why == "agent stopped polling" else 300),
            revoked=why == "session revoked",
        )
    if why == "past the deadline":
        # The next net would fall past the phase's deadline: the look enforces it.
        PhaseRecord.objects.filter(run=gate_run, phase="gate:gpu_health").update(
            deadline_at=now + timedelta(seconds=60)
        )
    if why == "result came":
        AgentCommand.objects.filter(run=gate_run).update(status=CommandStatus.DONE)
    with django_capture_on_commit_callbacks(execute=False) as sent:
        due = net_handed_over(gate_run, now)
        assert dispatch_due(now=due - timedelta(seconds=SWEEP_S)) == 1
    assert len(sent) == 1
    gate_run.refresh_from_db()
    assert gate_run.next_look_at == due


@pytest.mark.django_db
def test_the_sweep_leaves_a_net_of_another_kind_and_an_ordinary_look_alone(
    gate_run, django_capture_on_commit_callbacks
):
    polled_by(gate_run, expected_in=timedelta(minutes=5))
    now = timezone.now()
    # A wait that is not a safety net (a BMC's): sent with its countdown at the hand-over.
    Run.objects.filter(pk=gate_run.pk).update(status=RunStatus.RUNNING)
    with django_capture_on_commit_callbacks(execute=False) as sent:
        hand_over(gate_run, now + timedelta(seconds=30), now=now)
        assert renew_command_nets(now=now + timedelta(seconds=28)) == 0
    assert len(sent) == 1
    # A net in another phase than the one that sent the command (a boot's check-in after it).
    gate_run.refresh_from_db()
    Run.objects.filter(pk=gate_run.pk).update(current_phase="wait_for_agent")
    with django_capture_on_commit_callbacks(execute=False):
        due = net_handed_over(gate_run, now)
    assert renew_command_nets(now=due - timedelta(seconds=SWEEP_S)) == 0


@pytest.mark.django_db
@pytest.mark.parametrize(
    "case", ["polling", "stopped polling", "revoked", "no session", "queued", "done"]
)
def test_the_sweeps_filter_judges_a_command_as_a_look_would(gate_run, case):
    # The sweep leaves a net only where the look's refresh would leave the command as it is.
    if case != "no session":
        polled_by(
            gate_run,
            expected_in=timedelta(seconds=-1 if case == "stopped polling" else 300),
            revoked=case == "revoked",
        )
    status = {"queued": CommandStatus.QUEUED, "done": CommandStatus.DONE}.get(
        case, CommandStatus.SENT
    )
    AgentCommand.objects.filter(run=gate_run).update(status=status)
    command = AgentCommand.objects.get(run=gate_run)
    awaited = AgentCommand.objects.filter(agent_link.awaited(timezone.now()), pk=command.pk)
    left_awaited = awaited.exists()
    assert left_awaited == (case in ("polling", "queued"))
    after = agent_link.refresh(command)
    assert (after.status in agent_link.OPEN_STATUSES) == left_awaited
