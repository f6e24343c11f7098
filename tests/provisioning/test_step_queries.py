"""What one engine step costs the database, pinned: a look is the engine's unit of work, taken
tens of thousands of times in a deployment (84 looks per node in a lab rack), so a query added
to every look shows here before it shows in the benchmark."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from fleet.models import Event
from provisioning.choices import CommandStatus, PhaseStatus, RunStatus
from provisioning.core.engine import advance
from provisioning.core.runs import start_run
from provisioning.models import AgentCommand, PhaseRecord, Run

# Claim the step (read the run, compare-and-set it), read the phase with its command, write the
# wait, hand the run over. A gate reads its profile only once its tools are done; the soak reads
# it on every look (its length is the phase's time limit) but its result row only between chunks.
WAITING_LOOK_QUERIES = {"gate:gpu_health": 5, "gate:burn_in": 6}


def waiting_on_agent(node, phase: str, stage: str) -> Run:
    """A run at `phase`, in `stage`, whose agent is still running the phase's command."""
    run = start_run(node)
    gate = run.phases.get(phase=phase)
    run.phases.filter(order__lt=gate.order).update(status=PhaseStatus.DONE)
    now = timezone.now()
    command = AgentCommand.objects.create(
        node=node, run=run, phase=gate.phase, kind="run_tools", status=CommandStatus.SENT
    )
    PhaseRecord.objects.filter(pk=gate.pk).update(
        status=PhaseStatus.WAITING,
        stage=stage,
        command=command,
        started_at=now,
        stage_started_at=now,
        deadline_at=now + timedelta(hours=1),
        wait_reason="agent running run_tools, 0 min of 24.0 h",
    )
    Run.objects.filter(pk=run.pk).update(
        status=RunStatus.WAITING, next_look_at=now, started_at=now - timedelta(hours=1)
    )
    run.refresh_from_db()
    return run


@pytest.fixture
def gate_waiting_on_agent(node, manifest, profile, django_capture_on_commit_callbacks):
    """A run at its GPU health gate, whose agent is still running the tools."""
    with django_capture_on_commit_callbacks(execute=False):
        return waiting_on_agent(node, "gate:gpu_health", "running")


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("phase", "stage"), [("gate:gpu_health", "running"), ("gate:burn_in", "soaking")]
)
def test_a_look_at_a_gate_waiting_on_its_agent_costs_a_pinned_number_of_queries(
    node, manifest, profile, django_assert_num_queries, django_capture_on_commit_callbacks,
    phase, stage,
):  # fmt: skip
    with django_capture_on_commit_callbacks(execute=False):
        run = waiting_on_agent(node, phase, stage)
    with django_capture_on_commit_callbacks(execute=False) as sent:
        with django_assert_num_queries(WAITING_LOOK_QUERIES[phase]):
            advance(run.pk, run.step)
    run.refresh_from_db()
    assert run.status == RunStatus.WAITING and run.step == 1
    assert run.wait_reason.startswith("agent running run_tools")
    # The next look is minutes ahead: only its row until the sweep sends it (scheduling.py).
    assert run.dispatched_at is None and sent == []


@pytest.mark.django_db
def test_a_look_that_waits_as_the_last_did_writes_only_the_hand_over(
    gate_waiting_on_agent, django_assert_num_queries, django_capture_on_commit_callbacks
):
    run = gate_waiting_on_agent
    with django_capture_on_commit_callbacks(execute=False):
        advance(run.pk, run.step)
    record = run.phases.get(phase="gate:gpu_health")
    events = Event.objects.filter(node=run.node).count()
    run.refresh_from_db()
    # The same wait again: no write of the record (its status and reason are already these).
    with django_capture_on_commit_callbacks(execute=False):
        with django_assert_num_queries(WAITING_LOOK_QUERIES["gate:gpu_health"] - 1):
            advance(run.pk, run.step)
    run.refresh_from_db()
    assert run.status == RunStatus.WAITING and run.step == 2
    assert run.phases.get(phase="gate:gpu_health").wait_reason == record.wait_reason
    assert record.wait_reason.startswith("agent running run_tools; phase limit")
    assert Event.objects.filter(node=run.node).count() == events


@pytest.mark.django_db
def test_a_stale_task_costs_one_query_and_changes_nothing(
    gate_waiting_on_agent, django_assert_num_queries
):
    run = gate_waiting_on_agent
    with django_assert_num_queries(1):
        advance(run.pk, run.step + 5)
    assert Run.objects.get(pk=run.pk).step == run.step


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("nudged", "look_now"), [(None, False), ("before the claim", False), ("during", True)]
)
def test_hand_over_honours_a_nudge_that_came_while_the_step_ran(
    gate_waiting_on_agent, django_capture_on_commit_callbacks, nudged, look_now
):
    from provisioning.scheduling import hand_over

    run = gate_waiting_on_agent
    claimed_at = timezone.now() - timedelta(seconds=5)
    nudged_at = {"before the claim": claimed_at - timedelta(seconds=1), "during": timezone.now()}
    Run.objects.filter(pk=run.pk).update(status=RunStatus.RUNNING, nudged_at=nudged_at.get(nudged))
    later = timezone.now() + timedelta(hours=1)
    with django_capture_on_commit_callbacks(execute=False) as sent:
        hand_over(run, later, wait_reason="waiting", claimed_at=claimed_at)
    run.refresh_from_db()
    assert run.status == RunStatus.WAITING and run.wait_reason == "waiting"
    assert (run.next_look_at < later) is look_now
    # A look an hour ahead is only its row (the sweep sends it); a nudged one is sent at once.
    assert len(sent) == (1 if look_now else 0)


@pytest.mark.django_db
def test_a_step_that_lost_the_run_hands_nothing_over(
    gate_waiting_on_agent, django_capture_on_commit_callbacks
):
    from provisioning.scheduling import hand_over

    run = gate_waiting_on_agent
    # Its lease lapsed and another worker claimed the next step meanwhile.
    Run.objects.filter(pk=run.pk).update(status=RunStatus.RUNNING, step=run.step + 1)
    with django_capture_on_commit_callbacks(execute=False) as sent:
        hand_over(run, timezone.now())
    assert Run.objects.get(pk=run.pk).status == RunStatus.RUNNING
    assert sent == []
