"""Redis failover under Sentinel (issue 33): a real master, a replica and three sentinels on
loopback. The broker, the channel layer and the cache find the master through the sentinels;
the master is killed, the sentinels promote the replica, and a worker and a client that lived
through it carry on without a restart."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import redis

from lab.processes import ROOT, child_env
from tests.support import ha
from tests.support.slurm import until

pytestmark = [ha.needs_redis, pytest.mark.ha, pytest.mark.timeout(300)]


@pytest.fixture
def sentinel_redis(tmp_path):
    """A master, its replica and three sentinels watching it."""
    with ha.sentinel_redis(tmp_path) as peers:
        yield peers


def _env(peers: ha.SentinelRedis, tmp_path: Path) -> dict[str, str]:
    env = child_env(
        **peers.env(),
        GREENLIGHT_LAB_MODE="1",
        DATABASE_URL=f"sqlite:///{tmp_path / 'ha.sqlite3'}",
        CELERY_QUEUE=f"greenlight-ha-{tmp_path.name}",
        CHANNEL_PREFIX=f"greenlight-ha-{tmp_path.name}",
    )
    env.pop("REDIS_URL", None)
    return env


class Probe:
    """The long-lived client (tests/ha/sentinel_probe.py): one round trip per ask."""

    def __init__(self, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.ha.sentinel_probe"],
            cwd=ROOT, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )  # fmt: skip

    def ask(self, key: str) -> dict:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(key + "\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        self.proc.wait(timeout=30)


def _tasks_done(log: Path) -> int:
    """Tasks the worker ran to the end (the probe sends celery.accumulate, a built-in)."""
    return sum(
        1
        for line in log.read_text(errors="replace").splitlines()
        if "Task celery.accumulate[" in line and "succeeded" in line
    )


def _healthy(answer: dict, key: str) -> bool:
    return (
        answer.get("cache") == key
        and answer.get("live") == key
        and any(name.startswith("ha-") for name in answer.get("workers", []))
    )


def test_broker_channel_layer_and_cache_ride_through_a_master_failover(sentinel_redis, tmp_path):
    env = _env(sentinel_redis, tmp_path)
    worker_log = tmp_path / "worker.log"
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "greenlight", "worker", "-P", "threads",
         "-c", "2", "-l", "INFO", "-n", "ha-worker@%h", "-Q", env["CELERY_QUEUE"],
         "--without-gossip", "--without-mingle", "--without-heartbeat"],
        cwd=ROOT, env=env, stdout=worker_log.open("wb"), stderr=subprocess.STDOUT,
        start_new_session=True,
    )  # fmt: skip
    probe = Probe(env)
    try:
        until(
            lambda: (a := probe.ask("before")) and _healthy(a, "before") and a,
            "a first round",
            timeout=90,
        )
        # It went through the sentinels' master, not some other Redis.
        master = redis.Redis(port=sentinel_redis.master_port)
        assert master.keys("*sentinel-probe*"), "the cache did not write to the master"
        until(lambda: _tasks_done(worker_log), "the worker to take a task")
        done_before = _tasks_done(worker_log)
        # The worker holds a message it has not acknowledged (a task due later, as a run's
        # next look is) when the master dies: kombu 5.7 took such a worker down with it.
        assert probe.ask("hold")["held"]
        until(lambda: master.hlen("unacked"), "the worker to hold the task unacknowledged")

        # The master dies without a word; the sentinels promote the replica.
        sentinel_redis.kill_master()
        promoted = sentinel_redis.replica_port
        until(lambda: ha.master_of(sentinel_redis.sentinels[0]) == promoted, "the failover", 60)

        # The same client and the same worker, without a restart, through the new master.
        after = until(
            lambda: (a := probe.ask("after")) and _healthy(a, "after") and a,
            "a round through the promoted replica",
            timeout=90,
        )
        assert after["cache"] == "after" and after["live"] == "after"
        assert worker.poll() is None, "the worker died with the master"
        until(
            lambda: _tasks_done(worker_log) > done_before,
            "the worker to take a task sent after the failover",
            timeout=90,
        )
        promoted_redis = redis.Redis(port=promoted)
        assert promoted_redis.info("replication")["role"] == "master"
        [key] = promoted_redis.keys("*sentinel-probe*")
        assert b"after" in promoted_redis.get(key)  # the value the cache wrote, pickled
    finally:
        probe.close()
        worker.send_signal(signal.SIGTERM)
        try:
            worker.wait(timeout=30)
        except subprocess.TimeoutExpired:
            worker.kill()
