"""Two beats running at once send each periodic task once (issue 33): two real `celery beat`
processes with the leased scheduler (common/beat_lease.py), sending to a real Redis on a queue of
this test's own that nobody consumes. Every message there is read, with the beat that sent it
(Celery's `origin` header names the sender's pid); then the sending beat is killed and the other
takes over.
"""

from __future__ import annotations

import json
import socket
import time
from collections import Counter

import pytest
import redis
from django.conf import settings

from common.beat_lease import BEAT_LEASE
from common.models import Lease
from lab.processes import child_env, kill, start_beat, stop
from tests.support.slurm import until

pytestmark = pytest.mark.timeout(120)

SWEEP = "provisioning.tasks.sweep"
INTERVAL_S = 1.0  # the sweep's schedule in this test
LEASE_S = 3.0  # the shortest lease the settings take


class Queue:
    """The messages on one Redis queue, each with the pid of the beat that sent it and when
    this test first saw it."""

    def __init__(self, client: redis.Redis, name: str) -> None:
        self.client, self.name = client, name
        self.seen: dict[str, tuple[int, str, float]] = {}  # id -> (pid, task, first seen)

    def read(self) -> list[tuple[int, str, float]]:
        """Every message so far, oldest first."""
        now = time.monotonic()
        # kombu pushes on the left: the list is newest first.
        for raw in reversed(self.client.lrange(self.name, 0, -1)):
            headers = json.loads(raw)["headers"]
            pid = int(headers["origin"].removeprefix("gen").split("@")[0])
            self.seen.setdefault(headers["id"], (pid, headers["task"], now))
        return sorted(self.seen.values(), key=lambda m: m[2])

    def sent_by(self, pid: int) -> list[tuple[int, str, float]]:
        return [m for m in self.read() if m[0] == pid]

    def watch(self, seconds: float) -> list[tuple[int, str, float]]:
        """The messages that come within the next `seconds` (read every tenth of a second, so
        each is timed as it comes)."""
        start = time.monotonic()
        while time.monotonic() < start + seconds:
            self.read()
            time.sleep(0.1)
        return [m for m in self.read() if m[2] > start]


def _holder_pid() -> int | None:
    holder = Lease.objects.filter(name=BEAT_LEASE).values_list("holder", flat=True).first()
    return int(holder.split(":")[1]) if holder else None


def _assert_once_per_tick(sent: list[tuple[int, str, float]], window_s: float) -> None:
    """One sender, one task, and no more messages than the window holds ticks (one to spare
    for where the window starts and ends); two beats would send about twice as many. At least
    half of them: a beat slowed by a busy machine sends a late tick once, not twice."""
    assert len({pid for pid, _, _ in sent}) == 1, sent
    assert Counter(task for _, task, _ in sent) == {SWEEP: len(sent)}
    ticks = window_s / INTERVAL_S
    assert ticks / 2 <= len(sent) <= ticks + 1, (len(sent), sent)


@pytest.mark.ha
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_two_beats_send_each_tick_once_and_the_second_takes_over_a_killed_first(tmp_path):
    name = f"beats-{tmp_path.name}-{time.monotonic_ns()}"
    env = child_env(
        CELERY_QUEUE=name,
        CHANNEL_PREFIX=name,
        GREENLIGHT_SWEEP_SECONDS=INTERVAL_S,
        GREENLIGHT_BEAT_LEASE_S=LEASE_S,
    )
    client = redis.Redis.from_url(settings.REDIS_URL)
    queue = Queue(client, name)
    beats = {}
    try:
        for label in ("a", "b"):
            with (tmp_path / f"beat-{label}.log").open("wb") as log:
                beats[label] = start_beat(env, tmp_path / f"schedule-{label}", log=log)
        holder = until(_holder_pid, "a beat to take the lease", timeout=60)
        (dead,) = [proc for proc in beats.values() if proc.pid == holder]
        (other,) = [proc for proc in beats.values() if proc.pid != holder]
        (label,) = [label for label, proc in beats.items() if proc is other]
        other_log = tmp_path / f"beat-{label}.log"
        # Both beats are up: the second has read the lease and stands by. Then a window.
        until(lambda: "stands by" in other_log.read_text(), "the second beat to stand by")
        window = queue.watch(6 * INTERVAL_S)
        _assert_once_per_tick(window, 6 * INTERVAL_S)
        assert {pid for pid, _, _ in queue.read()} == {holder}
        assert all(proc.poll() is None for proc in beats.values())

        # The holder dies without handing its lease back: the other sends once it lapses.
        kill(dead)
        killed_at = time.monotonic()
        until(lambda: queue.sent_by(other.pid), "the other beat to take over", timeout=LEASE_S * 4)
        first = queue.sent_by(other.pid)[0][2]
        # The lease lapses at most LEASE_S after the kill and the other looks every third of
        # it (measured: 3.2 s); twice the lease leaves room for a busy machine.
        assert first - killed_at <= 2 * LEASE_S, first - killed_at
        assert _holder_pid() == other.pid
        _assert_once_per_tick(queue.watch(4 * INTERVAL_S), 4 * INTERVAL_S)
        assert {pid for pid, _, _ in queue.read()} == {holder, other.pid}
    finally:
        for proc in beats.values():
            stop(proc)
        # The queue, and kombu's notes of it.
        client.delete(name, f"_kombu.binding.{name}", f"_kombu.binding_permanent.{name}")
    # The survivor's log says whose lease it took over.
    log = other_log.read_text()
    assert f"took over the periodic tasks from {socket.gethostname()}:{holder}:" in log, log
