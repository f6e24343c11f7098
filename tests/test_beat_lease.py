"""Two beats at once send each periodic task once: the one holding the lease row sends, the other
stands by, and takes over (saying from whom) once the first stops renewing.

Each beat is the real scheduler over a real Celery app publishing to an in-memory broker, its
own queue naming which beat sent a message; the lease is the real row. The lease's clock is an
input, never slept.
"""

from __future__ import annotations

import logging
from collections import Counter
from datetime import datetime, timedelta

import pytest
from celery import Celery
from celery.signals import before_task_publish
from django.utils import timezone

from common import leases
from common.beat_lease import BEAT_LEASE, LeasedScheduler
from common.models import Lease

LEASE_S = 30.0
PERIODIC = {
    "sweep-lost-runs": {"task": "provisioning.tasks.sweep", "schedule": 30.0},
    "dcim-sync-netbox": {"task": "console.tasks.netbox_sync", "schedule": 900.0},
}


class Clock:
    """A clock the test moves."""

    def __init__(self, now: datetime):
        self.now = now

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


@pytest.fixture(autouse=True)
def _lease_length(settings):
    settings.GREENLIGHT_BEAT_LEASE_S = LEASE_S


@pytest.fixture
def sent():
    """(beat, task) of every message the beats published."""
    seen: Counter[tuple[str, str]] = Counter()

    def keep(sender=None, routing_key=None, **_: object) -> None:
        seen[(routing_key, sender)] += 1

    before_task_publish.connect(keep, weak=False)
    try:
        yield seen
    finally:
        before_task_publish.disconnect(keep)


@pytest.fixture
def clock() -> Clock:
    return Clock(timezone.now())


class Beats:
    """Beats named "a", "b"...: each its own app, queue and schedule file; one lease row."""

    def __init__(self, tmp_path, clock: Clock):
        self.tmp_path, self.clock = tmp_path, clock
        self.running: list[LeasedScheduler] = []

    def __call__(self, name: str) -> LeasedScheduler:
        app = Celery(f"beat-{name}", broker="memory://localhost/", set_as_current=False)
        app.conf.beat_schedule = PERIODIC
        app.conf.task_default_queue = name
        app.conf.result_expires = None  # no results: no cleanup entry of Celery's own, as here
        scheduler = LeasedScheduler(
            app=app, schedule_filename=str(self.tmp_path / name), holder=name, clock=self.clock
        )
        self.running.append(scheduler)
        return scheduler

    def stop(self, scheduler: LeasedScheduler) -> None:
        """Stop a beat as beat's shutdown does (SIGTERM)."""
        self.running.remove(scheduler)
        scheduler.close()


@pytest.fixture
def beats(tmp_path, clock):
    made = Beats(tmp_path, clock)
    yield made
    for scheduler in list(made.running):
        made.stop(scheduler)


def all_due(scheduler: LeasedScheduler) -> None:
    """Make every periodic task due, as it is when its interval has passed."""
    for entry in scheduler.schedule.values():
        entry.last_run_at = entry.default_now() - timedelta(hours=1)
    scheduler.populate_heap()


def run_beat(scheduler: LeasedScheduler, ticks: int = 5) -> float:
    """Tick as beat's loop does until it would sleep; return the sleep."""
    for _ in range(ticks):
        sleep = scheduler.tick()
        if sleep > 0:
            return sleep
    raise AssertionError("beat kept sending")


@pytest.mark.django_db
def test_two_beats_send_each_periodic_task_once(beats, sent):
    a, b = beats("a"), beats("b")
    for beat in (a, b):
        all_due(beat)
    run_beat(a)
    sleep = run_beat(b)
    assert sent == {("a", entry["task"]): 1 for entry in PERIODIC.values()}
    # The second looks again within a third of the lease, and sends nothing.
    assert sleep == LEASE_S / 3
    assert Lease.objects.get(name=BEAT_LEASE).holder == "a"


@pytest.mark.django_db
def test_the_second_beat_takes_over_once_the_first_stops_renewing(beats, sent, clock, caplog):
    a, b = beats("a"), beats("b")
    all_due(a)
    run_beat(a)
    run_beat(b)
    # The first beat hangs (or its machine went away): it renews no more.
    clock.advance(LEASE_S - 1)
    all_due(b)
    with caplog.at_level(logging.WARNING, logger="common.beat_lease"):
        run_beat(b)
        assert sent[("b", "provisioning.tasks.sweep")] == 0  # not yet lapsed
        # It looks again a third of a lease later: by then the first one's has lapsed.
        clock.advance(LEASE_S / 3 + 1)
        run_beat(b)
    assert sent[("b", "provisioning.tasks.sweep")] == 1
    assert "beat b took over the periodic tasks from a" in caplog.text
    lease = Lease.objects.get(name=BEAT_LEASE)
    assert (lease.holder, lease.acquired_at) == ("b", clock.now)
    # The first comes back: it has lost the lease, says so, and sends nothing.
    all_due(a)
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="common.beat_lease"):
        run_beat(a)
    assert sent[("a", "provisioning.tasks.sweep")] == 1
    assert "beat a lost the lease to b" in caplog.text


@pytest.mark.django_db
def test_a_beat_stopped_cleanly_hands_its_lease_over_at_once(beats, sent, clock):
    a, b = beats("a"), beats("b")
    run_beat(a)
    beats.stop(a)
    clock.advance(1)
    all_due(b)
    run_beat(b)
    assert sent[("b", "provisioning.tasks.sweep")] == 1


@pytest.mark.django_db
def test_a_lease_is_renewed_by_its_holder_and_taken_only_once_lapsed(clock):
    first = leases.hold("job", "x", 10, now=clock.now)
    assert first.held and first.expires_at == clock.now + timedelta(seconds=10)
    assert not leases.hold("job", "y", 10, now=clock.now + timedelta(seconds=5)).held
    renewed = leases.hold("job", "x", 10, now=clock.now + timedelta(seconds=8))
    assert renewed.held and renewed.expires_at == clock.now + timedelta(seconds=18)
    # The renewal counts: at 15 s "y" still waits; past 18 s it takes the lease over.
    waiting = leases.hold("job", "y", 10, now=clock.now + timedelta(seconds=15))
    assert (waiting.held, waiting.holder) == (False, "x")
    taken = leases.hold("job", "y", 10, now=clock.now + timedelta(seconds=19))
    assert (taken.held, taken.taken_from) == (True, "x")
    assert not leases.hold("job", "x", 10, now=clock.now + timedelta(seconds=20)).held
