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

from provisioning.choices import RunStatus
from provisioning.core.engine import advance
from provisioning.core.phases.base import PhaseContext
from provisioning.core.phases.common import awaiting_boot
from provisioning.core.sweep import dispatch_due
from provisioning.models import Run
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
        return waiting_on_agent(node, "gate:gpu_health", "running")


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
