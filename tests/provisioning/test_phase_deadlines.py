"""A phase's deadline measures the node, never Greenlight's own real-time delays.

The demo runs at 600x: wait_for_agent's 20 node minutes are 2 real seconds. A restarted demo
failed a node's wait_for_agent three times in six real seconds while its agent was coming back
(the web server, the lab and the agents take real seconds to start, whatever the clock's scale).
So a phase's window is never shorter than GREENLIGHT_PHASE_MIN_REAL_S of real time, a phase
resumed after Greenlight was away gets that much again from the resumption, and an agent's
check-in that arrives during the look that would pass the verdict is looked at first.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db.models import F
from django.utils import timezone

from provisioning.agents.sessions import CheckIn, check_in
from provisioning.choices import PhaseStatus, RunStatus
from provisioning.core.engine import advance
from provisioning.core.runs import start_run
from provisioning.models import PhaseRecord, Run
from tests.support.scenes import booted_secret

pytestmark = pytest.mark.django_db
DEMO_SCALE = 600.0
PHASE = "wait_for_agent"


@pytest.fixture
def demo_clock(settings):
    settings.GREENLIGHT_TIME_SCALE = DEMO_SCALE
    return settings


def at_wait_for_agent(node, django_capture_on_commit_callbacks) -> Run:
    """A run whose phases before wait_for_agent are done; nothing has looked at it yet."""
    with django_capture_on_commit_callbacks(execute=False):
        run = start_run(node)
    record = run.phases.get(phase=PHASE)
    run.phases.filter(order__lt=record.order).update(status=PhaseStatus.DONE)
    Run.objects.filter(pk=run.pk).update(status=RunStatus.WAITING, next_look_at=timezone.now())
    run.refresh_from_db()
    return run


def look(run: Run, capture) -> Run:
    """One look at the run, as the worker takes it (the next look's message is not sent)."""
    run.refresh_from_db()
    with capture(execute=False):
        advance(run.pk, run.step)
    run.refresh_from_db()
    # The next look is due now (the demo's waits are a tenth of a real second).
    Run.objects.filter(pk=run.pk).update(next_look_at=timezone.now())
    return run


def real_seconds_pass(run: Run, seconds: float) -> None:
    """`seconds` of real time pass while Greenlight looks on time: every clock moves back."""
    span = timedelta(seconds=seconds)
    run.phases.filter(phase=PHASE).update(
        started_at=F("started_at") - span,
        stage_started_at=F("stage_started_at") - span,
        deadline_at=F("deadline_at") - span,
    )


def record(run: Run) -> PhaseRecord:
    return run.phases.get(phase=PHASE)


def agent_checks_in(run: Run, node) -> None:
    secret = booted_secret(run)
    check_in(
        CheckIn(
            node.serial,
            node.mac_addresses,
            "boot-after-restart",
            "ephemeral",
            secret,
            inventory={"system": {"serial": node.serial}},
        )
    )


def test_an_agent_a_few_real_seconds_late_at_600x_is_not_timed_out(
    node, manifest, demo_clock, django_capture_on_commit_callbacks
):
    capture = django_capture_on_commit_callbacks
    run = at_wait_for_agent(node, capture)
    run = look(run, capture)
    assert record(run).status == PhaseStatus.WAITING
    # 1,200 node seconds are 2 real seconds here; the agent takes 6 to come back.
    for _ in range(3):
        real_seconds_pass(run, 2.0)
        run = look(run, capture)
    phase = record(run)
    assert phase.status == PhaseStatus.WAITING and phase.attempts == 1, phase.error
    assert run.failure_used == 0 and run.status == RunStatus.WAITING

    agent_checks_in(run, node)
    run = look(run, capture)
    assert record(run).status == PhaseStatus.DONE
    assert run.current_phase != PHASE


def test_a_phase_resumed_after_greenlight_was_away_gets_its_floor_again(
    node, manifest, demo_clock, django_capture_on_commit_callbacks
):
    capture = django_capture_on_commit_callbacks
    run = at_wait_for_agent(node, capture)
    run = look(run, capture)
    window = demo_clock.GREENLIGHT_PHASE_MIN_REAL_S
    # The phase is near its end when every process stops; they come back ten minutes later.
    real_seconds_pass(run, window - 1.0)
    away = timedelta(minutes=10)
    Run.objects.filter(pk=run.pk).update(next_look_at=timezone.now() - away)
    run.phases.filter(phase=PHASE).update(
        started_at=F("started_at") - away,
        stage_started_at=F("stage_started_at") - away,
        deadline_at=F("deadline_at") - away,
    )
    run.refresh_from_db()
    with capture(execute=False):
        advance(run.pk, run.step)
    phase = record(run)
    assert phase.status == PhaseStatus.WAITING
    # A full window from the resumption, not the one second it had left when it stopped.
    left = (phase.deadline_at - timezone.now()).total_seconds()
    assert window - 5 < left <= window


def test_a_check_in_during_the_look_that_would_time_out_is_looked_at_first(
    node, manifest, demo_clock, django_capture_on_commit_callbacks
):
    capture = django_capture_on_commit_callbacks
    run = at_wait_for_agent(node, capture)
    run = look(run, capture)
    real_seconds_pass(run, demo_clock.GREENLIGHT_PHASE_MIN_REAL_S + 1)
    # The agent's check-in lands while this look runs: it nudged the run after the claim.
    Run.objects.filter(pk=run.pk).update(nudged_at=timezone.now() + timedelta(seconds=30))
    run = look(run, capture)
    phase = record(run)
    assert phase.status == PhaseStatus.WAITING and run.failure_used == 0, phase.error
    assert run.next_look_at <= timezone.now()  # looked at again at once

    agent_checks_in(run, node)
    run = look(run, capture)
    assert record(run).status == PhaseStatus.DONE


def test_a_phase_whose_agent_never_comes_still_times_out(
    node, manifest, demo_clock, django_capture_on_commit_callbacks
):
    capture = django_capture_on_commit_callbacks
    run = at_wait_for_agent(node, capture)
    run = look(run, capture)
    real_seconds_pass(run, demo_clock.GREENLIGHT_PHASE_MIN_REAL_S + 1)
    run = look(run, capture)
    phase = record(run)
    assert phase.status == PhaseStatus.FAILED and run.failure_used == 1
    assert phase.error.startswith("timed out after 20 min"), phase.error
