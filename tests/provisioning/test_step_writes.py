"""A step's claim and hand-over, as the SQL of provisioning/step_writes.py writes them: each
condition of the ORM calls they replaced, on SQLite and on PostgreSQL."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from provisioning.choices import RunStatus
from provisioning.models import Run
from provisioning.step_writes import claim_step, hand_over_step
from tests.factories import make_node

pytestmark = pytest.mark.django_db


def _run(manifest, **fields) -> Run:
    return Run.objects.create(node=make_node(), manifest=manifest, step=7, **fields)


@pytest.mark.parametrize("status", [RunStatus.QUEUED, RunStatus.WAITING])
def test_a_waiting_run_is_claimed_once_for_its_step(manifest, status):
    run = _run(manifest, status=status)
    now = timezone.now()
    lease = now + timedelta(seconds=120)
    assert not claim_step(run.pk, 6, now=now, lease=lease, worker="w1"), "a stale step"
    assert claim_step(run.pk, 7, now=now, lease=lease, worker="w1")
    assert not claim_step(run.pk, 7, now=now, lease=lease, worker="w2"), "taken already"
    run.refresh_from_db()
    assert (run.step, run.status, run.next_look_at, run.held_by) == (
        8, RunStatus.RUNNING, lease, "w1"
    )  # fmt: skip


def test_a_running_run_is_claimed_only_once_its_lease_lapsed(manifest):
    now = timezone.now()
    run = _run(manifest, status=RunStatus.RUNNING, next_look_at=now + timedelta(seconds=5))
    lease = now + timedelta(seconds=120)
    assert not claim_step(run.pk, 7, now=now, lease=lease, worker="w2"), "its worker is alive"
    assert claim_step(run.pk, 7, now=now + timedelta(seconds=6), lease=lease, worker="w2")
    assert Run.objects.get(pk=run.pk).held_by == "w2"


@pytest.mark.parametrize("status", [RunStatus.SUCCEEDED, RunStatus.FAILED, RunStatus.ABORTED])
def test_an_ended_run_is_never_claimed(manifest, status):
    run = _run(manifest, status=status)
    now = timezone.now()
    assert not claim_step(run.pk, 7, now=now, lease=now, worker="w1")


def test_the_hand_over_writes_the_wait_and_only_from_the_holding_step(manifest):
    now = timezone.now()
    run = _run(manifest, status=RunStatus.RUNNING, next_look_at=now)
    due = now + timedelta(seconds=30)
    assert not hand_over_step(run.pk, 6, due=due, dispatched_at=now, safety_net=True)
    assert hand_over_step(
        run.pk, 7, due=due, dispatched_at=None, safety_net=True, wait_reason="agent running"
    )
    run.refresh_from_db()
    assert (run.status, run.next_look_at, run.dispatched_at, run.safety_net, run.wait_reason) == (
        RunStatus.WAITING, due, None, True, "agent running"
    )  # fmt: skip
    assert not hand_over_step(run.pk, 7, due=due, dispatched_at=now, safety_net=False)


def test_without_a_reason_the_hand_over_keeps_the_one_written(manifest):
    now = timezone.now()
    run = _run(manifest, status=RunStatus.RUNNING, wait_reason="rebooting")
    assert hand_over_step(run.pk, 7, due=now, dispatched_at=now, safety_net=False)
    assert Run.objects.get(pk=run.pk).wait_reason == "rebooting"


def test_a_nudge_since_the_claim_stops_the_conditional_hand_over(manifest):
    claimed = timezone.now()
    nudged = _run(manifest, status=RunStatus.RUNNING, nudged_at=claimed + timedelta(seconds=1))
    before = _run(manifest, status=RunStatus.RUNNING, nudged_at=claimed - timedelta(seconds=1))
    never = _run(manifest, status=RunStatus.RUNNING)
    due = claimed + timedelta(seconds=60)
    for run, handed in ((nudged, False), (before, True), (never, True)):
        assert (
            hand_over_step(
                run.pk, 7, due=due, dispatched_at=None, safety_net=False,
                unless_nudged_since=claimed,
            )
            is handed
        ), run.nudged_at  # fmt: skip
