"""Long waits are rows, not messages: no step is sent with a countdown over
GREENLIGHT_MAX_COUNTDOWN_S, and the sweep sends each look as it comes due, once.

Redis hands a message still unacknowledged after its visibility timeout to a second worker, and a
message with a countdown stays unacknowledged until it is due (Celery #5935, #2599, #5306): a look
hours ahead, sent at once, was delivered again every ten minutes while it waited.

The messages are published for real, to an in-memory broker, and read at Celery's publish signal;
time is an input (`now=`), never slept.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest
from celery import Celery
from celery.signals import before_task_publish
from django.utils import timezone

from fleet.choices import NodeState
from greenlight.celery import app as greenlight_app
from provisioning.choices import RunStatus
from provisioning.core.phases.inband import COMMAND_LOOK_S
from provisioning.core.sweep import dispatch_due, sweep
from provisioning.models import Run
from provisioning.scheduling import ADVANCE_RUN_TASK, hand_over, send_step
from tests import factories
from tests.support.scenes import make_run, walk

MAX_S = 60.0
SWEEP_S = 30.0
GRACE_S = 30.0
VISIBILITY_S = 600.0
SOAK_S = 72 * 3600
# A worker takes a message this long after it is due: a queue is never instant, and a look never
# lands on the very microsecond of a sweep.
QUEUE_LAG_S = 0.25


@dataclass(frozen=True)
class Published:
    """One advance_run message as the broker received it."""

    run_id: int
    step: int
    countdown_s: float


@pytest.fixture(autouse=True)
def _timing(settings):
    settings.GREENLIGHT_MAX_COUNTDOWN_S = MAX_S
    settings.GREENLIGHT_SWEEP_GRACE_S = GRACE_S


@pytest.fixture
def published():
    """The step messages published during the test, to an in-memory broker, in order."""
    seen: list[Published] = []

    def keep(sender=None, body=None, headers=None, **_: object) -> None:
        if sender != ADVANCE_RUN_TASK:
            return
        eta = headers.get("eta")
        # Read just after Celery turned the countdown into an eta: this is the countdown, less
        # the microseconds in between.
        countdown = (datetime.fromisoformat(eta) - datetime.now(UTC)).total_seconds() if eta else 0
        run_id, step = body[0]
        seen.append(Published(run_id, step, countdown))

    memory_app = Celery("long-waits", broker="memory://localhost/", set_as_current=False)
    memory_app.set_current()
    before_task_publish.connect(keep, weak=False)
    try:
        yield seen
    finally:
        before_task_publish.disconnect(keep)
        greenlight_app.set_current()


@pytest.fixture
def running(db) -> Run:
    """A run whose step is being taken (RUNNING, claimed)."""
    return make_run(walk(factories.make_node(), NodeState.VALIDATING))


def test_send_step_refuses_a_countdown_over_the_longest():
    with pytest.raises(ValueError, match="GREENLIGHT_MAX_COUNTDOWN_S"):
        send_step(1, 1, MAX_S + 1)


@pytest.mark.django_db
def test_a_look_hours_ahead_is_a_row_and_the_sweep_sends_it_as_it_comes_due(
    running, published, django_capture_on_commit_callbacks
):
    now = timezone.now()
    due = now + timedelta(hours=6)
    with django_capture_on_commit_callbacks(execute=True):
        hand_over(running, due, wait_reason="soaking", now=now)
    running.refresh_from_db()
    assert running.status == RunStatus.WAITING and running.next_look_at == due
    assert running.dispatched_at is None and published == []

    def tick(at: datetime) -> int:
        with django_capture_on_commit_callbacks(execute=True):
            return dispatch_due(now=at) + sweep(now=at)

    # Hours ahead, and still more than the longest countdown ahead: left alone.
    assert tick(due - timedelta(hours=1)) == 0
    assert tick(due - timedelta(seconds=MAX_S + 1)) == 0
    # Within it: sent, with the countdown to its due time.
    assert tick(due - timedelta(seconds=45)) == 1
    (message,) = published
    assert (message.run_id, message.step) == (running.pk, running.step)
    assert 44 < message.countdown_s <= 45
    # The next sweeps, before and at the due time, leave it alone: it is on its way.
    assert tick(due - timedelta(seconds=15)) == 0
    assert tick(due + timedelta(seconds=1)) == 0
    assert len(published) == 1
    # Never claimed a grace past its due time, it was lost: the sweep sends it again, at once.
    assert tick(due + timedelta(seconds=GRACE_S + 1)) == 1
    assert [m.countdown_s for m in published[1:]] == [0]


@pytest.mark.django_db
def test_a_look_within_the_longest_countdown_is_sent_at_the_hand_over_and_only_then(
    running, published, django_capture_on_commit_callbacks
):
    now = timezone.now()
    with django_capture_on_commit_callbacks(execute=True):
        hand_over(running, now + timedelta(seconds=20), now=now)
        assert dispatch_due(now=now + timedelta(seconds=1)) == 0
    (message,) = published
    assert 19 < message.countdown_s <= 20


class SimulatedHall:
    """A run whose every look waits `interval_s` (a soak between its chunks' results), with a
    broker that redelivers as Redis does, one worker that claims steps as engine.advance does,
    and a sweep every SWEEP_S: looks, ticks and deliveries in simulated time."""

    def __init__(self, run: Run, start: datetime, capture, published: list[Published]):
        self.run, self.start, self.capture, self.published = run, start, capture, published
        self.events: list[tuple[float, int, str, Published | None]] = []
        self.order = 0
        self.looks_late_s: list[float] = []
        self.deliveries = 0
        self.resent = 0

    def at(self, seconds: float) -> datetime:
        return self.start + timedelta(seconds=seconds)

    def schedule(self, seconds: float, kind: str, message: Published | None = None) -> None:
        self.order += 1
        heapq.heappush(self.events, (seconds, self.order, kind, message))

    def deliver_published(self, now_s: float, before: int) -> None:
        """Queue what the last call published, due after its countdown: once, and once more for
        every visibility timeout it waits unacknowledged in a worker (Redis hands it to another
        worker, which holds it until the same due time)."""
        for message in self.published[before:]:
            for _ in range(1 + math.floor(message.countdown_s / VISIBILITY_S)):
                self.schedule(now_s + message.countdown_s, "msg", message)

    def look(self, now_s: float, message: Published, interval_s: float) -> None:
        """A worker takes a delivered message: claim its step, hand the run over to the next."""
        now = self.at(now_s)
        due = Run.objects.values_list("next_look_at", flat=True).get(pk=self.run.pk)
        claimed = Run.objects.filter(
            pk=message.run_id, step=message.step, status=RunStatus.WAITING
        ).update(step=message.step + 1, status=RunStatus.RUNNING)
        if not claimed:
            return  # a duplicate: the step number lets only one task claim it
        self.looks_late_s.append((now - due).total_seconds())
        self.run.step = message.step + 1
        before = len(self.published)
        with self.capture(execute=True):
            hand_over(self.run, now + timedelta(seconds=interval_s), claimed_at=now, now=now)
        self.deliver_published(now_s, before)

    def tick(self, now_s: float) -> None:
        before = len(self.published)
        with self.capture(execute=True):
            self.resent += sweep(now=self.at(now_s))
            dispatch_due(now=self.at(now_s))
        self.deliver_published(now_s, before)

    def soak(self, length_s: float, interval_s: float) -> None:
        """Hand the run over once, then let the hall run for `length_s`."""
        before = len(self.published)
        with self.capture(execute=True):
            hand_over(self.run, self.at(interval_s), now=self.start)
        self.deliver_published(0.0, before)
        for n in range(int(length_s // SWEEP_S) + 1):
            self.schedule(n * SWEEP_S, "tick")
        while self.events and self.events[0][0] <= length_s:
            now_s, _, kind, message = heapq.heappop(self.events)
            if kind == "tick":
                self.tick(now_s)
            else:
                assert message is not None
                self.deliveries += 1
                self.look(now_s + QUEUE_LAG_S, message, interval_s)


@pytest.mark.django_db
@pytest.mark.parametrize(
    "interval_s",
    [
        pytest.param(COMMAND_LOOK_S, id="soak-looks-every-5-min"),
        pytest.param(12 * 3600.0, id="one-look-per-12h-chunk"),
    ],
)
def test_a_72_hour_soak_sends_a_bounded_number_of_messages(
    running, published, django_capture_on_commit_callbacks, interval_s
):
    hall = SimulatedHall(running, timezone.now(), django_capture_on_commit_callbacks, published)
    hall.soak(SOAK_S, interval_s)

    looks = len(hall.looks_late_s)
    ticks = int(SOAK_S // SWEEP_S) + 1
    print(  # the numbers, for the record: -s shows them
        f"72 h, a look every {interval_s:g} s: {looks} looks, {len(published)} messages, "
        f"{hall.deliveries} deliveries, {ticks} sweeps"
    )
    # Every look the soak asked for was taken, on time: the sweep sent each before it was due,
    # and a look is only ever the queue's lag late.
    assert looks == SOAK_S // (interval_s + QUEUE_LAG_S)
    assert max(hall.looks_late_s) <= QUEUE_LAG_S + 0.01
    # One message per look, each delivered once: nothing lost, nothing redelivered.
    assert len(published) <= looks + 1  # the last look's message, due past the 72 hours
    assert len(published) <= looks + ticks
    assert hall.deliveries == looks and hall.resent == 0
    assert max(m.countdown_s for m in published) <= MAX_S
