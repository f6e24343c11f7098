"""A deployment's runs start only while the workers keep up; the others wait queued, say why, and
the sweep starts them oldest first (provisioning/admission.py)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from fleet.choices import NodeState
from fleet.models import Node
from provisioning import admission
from provisioning.choices import RunStatus
from provisioning.core.runs import start_runs
from provisioning.models import Run
from provisioning.scheduling import nudge
from provisioning.tasks import sweep as sweep_task
from tests import factories
from tests.support.scenes import make_run, manifest, walk

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _admission(settings):
    settings.GREENLIGHT_ADMISSION_LAG_S = 10.0
    settings.GREENLIGHT_ADMISSION_BATCH = 2
    settings.GREENLIGHT_MAX_RUNS_IN_FLIGHT = 0


def _steps(callbacks) -> int:
    """The step messages among the callbacks run at commit (events publish there too)."""
    return sum(1 for c in callbacks if c.__qualname__ == "send_step.<locals>.send")


def _behind(seconds: float) -> Run:
    """A run of another node whose next look was sent and has waited `seconds` for a worker."""
    run = make_run(walk(factories.make_node(), NodeState.VALIDATING), status=RunStatus.WAITING)
    due = timezone.now() - timedelta(seconds=seconds)
    Run.objects.filter(pk=run.pk).update(next_look_at=due, dispatched_at=due)
    return run


def _deploy(count: int, capture) -> list[Run]:
    manifest()
    nodes = [factories.make_node() for _ in range(count)]
    with capture(execute=False) as sent:
        runs, refused = start_runs(Node.objects.filter(pk__in=[n.pk for n in nodes]).order_by("pk"))
    assert refused == {}
    _deploy.sent = _steps(sent)
    return [runs[n.pk] for n in nodes]


def _held(runs: list[Run]) -> list[int]:
    return list(
        Run.objects.filter(
            pk__in=[r.pk for r in runs], status=RunStatus.QUEUED, next_look_at__isnull=True
        )
        .order_by("pk")
        .values_list("pk", flat=True)
    )


def test_a_fleet_the_workers_keep_up_with_starts_at_once(django_capture_on_commit_callbacks):
    _behind(3)  # a queue a few seconds behind is a queue that keeps up
    runs = _deploy(3, django_capture_on_commit_callbacks)
    assert _deploy.sent == 3
    assert _held(runs) == []


def test_runs_past_a_lagging_queue_wait_queued_saying_why(django_capture_on_commit_callbacks):
    _behind(60)
    runs = _deploy(3, django_capture_on_commit_callbacks)
    assert _deploy.sent == 0, "no first step while the queue is a minute behind"
    assert _held(runs) == [r.pk for r in runs]
    for run in Run.objects.filter(pk__in=[r.pk for r in runs]):
        assert run.status == RunStatus.QUEUED
        assert run.wait_reason == (
            "waiting for the workers: their queue is over 10 s behind (GREENLIGHT_ADMISSION_LAG_S)"
        )
        assert run.node.state == NodeState.PROVISIONING


def test_the_sweep_starts_held_runs_oldest_first_a_batch_at_a_time_once_the_queue_keeps_up(
    django_capture_on_commit_callbacks,
):
    lagging = _behind(60)
    runs = _deploy(3, django_capture_on_commit_callbacks)
    with django_capture_on_commit_callbacks(execute=False) as sent:
        assert admission.admit_held_runs() == 0, "still behind"
    assert _steps(sent) == 0
    # The look that was waiting is taken: the queue keeps up again.
    Run.objects.filter(pk=lagging.pk).update(status=RunStatus.RUNNING, next_look_at=None)
    with django_capture_on_commit_callbacks(execute=False) as sent:
        assert admission.admit_held_runs() == 2
    assert _steps(sent) == 2
    assert _held(runs) == [runs[2].pk], "the two started first go first"
    started = Run.objects.get(pk=runs[0].pk)
    assert started.next_look_at is not None and started.wait_reason == ""
    # The Celery task the beat sends runs the same admission.
    with django_capture_on_commit_callbacks(execute=False):
        sweep_task.apply()
    assert _held(runs) == []


def test_a_cap_on_runs_under_way_holds_the_rest_until_one_ends(
    settings, django_capture_on_commit_callbacks
):
    settings.GREENLIGHT_MAX_RUNS_IN_FLIGHT = 2
    runs = _deploy(3, django_capture_on_commit_callbacks)
    assert _deploy.sent == 2
    assert _held(runs) == [runs[2].pk]
    held = Run.objects.get(pk=runs[2].pk)
    assert (
        held.wait_reason == "waiting for a slot: 2 runs under way (GREENLIGHT_MAX_RUNS_IN_FLIGHT)"
    )
    assert admission.admit_held_runs() == 0
    Run.objects.filter(pk=runs[0].pk).update(status=RunStatus.SUCCEEDED, next_look_at=None)
    with django_capture_on_commit_callbacks(execute=False) as sent:
        assert admission.admit_held_runs() == 1
    assert _steps(sent) == 1
    assert _held(runs) == []


def test_a_nudge_does_not_start_a_held_run_before_its_turn(django_capture_on_commit_callbacks):
    lagging = _behind(60)
    runs = _deploy(1, django_capture_on_commit_callbacks)
    with django_capture_on_commit_callbacks(execute=False) as sent:
        nudge(runs[0].pk)
    assert _steps(sent) == 0
    Run.objects.filter(pk=lagging.pk).update(status=RunStatus.RUNNING, next_look_at=None)
    admission.admit_held_runs()
    with django_capture_on_commit_callbacks(execute=False) as sent:
        nudge(runs[0].pk)
    assert _steps(sent) == 1, "once started, a nudge sends its step as before"


def test_a_run_started_while_others_are_held_waits_its_turn(django_capture_on_commit_callbacks):
    lagging = _behind(60)
    first = _deploy(1, django_capture_on_commit_callbacks)
    # The queue keeps up again before the sweep came round: a later deployment must not start
    # ahead of the run held first.
    Run.objects.filter(pk=lagging.pk).update(status=RunStatus.RUNNING, next_look_at=None)
    later = _deploy(1, django_capture_on_commit_callbacks)
    assert _deploy.sent == 0
    assert Run.objects.get(pk=later[0].pk).wait_reason.startswith("waiting for its turn")
    with django_capture_on_commit_callbacks(execute=False):
        assert admission.admit_held_runs() == 2
    assert _held(first + later) == []
