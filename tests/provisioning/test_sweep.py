"""The sweep re-sends lost looks, and only lost ones: a look late because the queue is long is
not lost, and re-sending it would lengthen the queue that made it late (a backlog that feeds
itself: 26,844 queued messages in a 741-node benchmark before this was fixed).
"""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from django.utils import timezone

from fleet.choices import NodeState
from provisioning.choices import RunStatus
from provisioning.core.sweep import SENT_AT_HEADER, queue_lag_s, sweep
from provisioning.models import Run
from provisioning.tasks import sweep as sweep_task
from tests import factories
from tests.support.processes import celery_worker
from tests.support.scenes import make_run, walk

GRACE_S = 5.0


@pytest.fixture(autouse=True)
def _grace(settings):
    settings.GREENLIGHT_SWEEP_GRACE_S = GRACE_S


def _overdue_run(seconds: float) -> Run:
    """A waiting run whose every phase is done, its next look due `seconds` ago and sent."""
    node = walk(factories.make_node(), NodeState.VALIDATING)
    run = make_run(node, status=RunStatus.WAITING)
    due = timezone.now() - timedelta(seconds=seconds)
    Run.objects.filter(pk=run.pk).update(next_look_at=due, dispatched_at=due)
    return run


@pytest.mark.django_db
def test_a_lost_look_is_sent_again_once_per_margin(django_capture_on_commit_callbacks):
    run = _overdue_run(10)
    with django_capture_on_commit_callbacks() as sent:
        assert sweep() == 1
    assert len(sent) == 1
    # The next sweeps (every few seconds) leave it alone: its message may be on its way.
    with django_capture_on_commit_callbacks() as sent:
        assert sweep() == 0
        assert sweep() == 0
    assert sent == []
    # A whole margin later without a claim, that message was lost too: send it again.
    Run.objects.filter(pk=run.pk).update(resent_at=timezone.now() - timedelta(seconds=GRACE_S + 1))
    assert sweep() == 1


@pytest.mark.django_db
@pytest.mark.parametrize(("lag_s", "resent"), [(0.0, 1), (10.0, 1), (30.0, 0)])
def test_a_look_late_only_because_the_queue_is_long_is_not_sent_again(lag_s, resent):
    _overdue_run(20)
    assert sweep(queue_lag_s=lag_s) == resent


@pytest.mark.django_db
def test_a_look_not_yet_overdue_by_the_grace_is_left_alone():
    _overdue_run(GRACE_S / 2)
    assert sweep() == 0


def test_queue_lag_reads_the_stamp_of_an_eager_or_a_delivered_message():
    sent = time.time() - 42
    delivered = {SENT_AT_HEADER: sent}  # a worker puts a message's own headers among its fields
    eager = {"headers": {SENT_AT_HEADER: sent}}
    for request in (delivered, eager):
        assert 41 < queue_lag_s(request) < 60
    assert queue_lag_s({}) == 0.0


def _wait_until(condition, what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def _resent(run: Run) -> bool:
    return Run.objects.filter(pk=run.pk, resent_at__isnull=False).exists()


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_worker_measures_the_lag_on_the_sweeps_own_message(tmp_path):
    late = _overdue_run(30)
    lost = _overdue_run(600)
    with open(tmp_path / "worker.log", "wb") as log, celery_worker(concurrency=2, log=log):
        # A sweep whose message waited two minutes in the queue: the queue is that long, so a
        # look 30 s overdue is still in it, but one 10 minutes overdue was lost.
        sweep_task.apply_async(headers={SENT_AT_HEADER: time.time() - 120})
        _wait_until(lambda: _resent(lost), "the sweep to re-send the lost look")
        assert not _resent(late)
        # A sweep published now (the publish signal stamps it) sees no lag.
        sweep_task.delay()
        _wait_until(lambda: _resent(late), "the sweep to re-send the late look")
