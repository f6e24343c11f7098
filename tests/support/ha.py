"""Real high-availability peers for tests (issue 33), private to each test, on loopback.

`postgres_pair`: a PostgreSQL primary and its streaming standby (Debian's PostgreSQL 15), which a
test kills and promotes as Patroni or an operator would. `sentinel_redis`: a Redis master, its
replica and three sentinels (the one redis-server binary), which promote the replica when the
master dies. Both are started as process-group leaders, so a kill is a machine's sudden death.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest
import redis

from lab.processes import free_port
from tests.support.slurm import until


def _pg_bin() -> Path:
    """Debian's newest PostgreSQL server programs (bookworm has 15, trixie 17)."""
    found = [p.parent for p in Path("/usr/lib/postgresql").glob("*/bin/initdb")]
    found.sort(key=lambda bin_dir: int(bin_dir.parent.name) if bin_dir.parent.name.isdigit() else 0)
    return found[-1] if found else Path("/usr/lib/postgresql/15/bin")


PG_BIN = _pg_bin()
# PostgreSQL refuses to run as root: as root, its programs run as the postgres user (the
# process itself, not a wrapper's child, so that the test kills the postmaster by its pid).
RUN_AS = {"user": "postgres", "group": "postgres"} if os.geteuid() == 0 else {}
REDIS_SERVER = shutil.which("redis-server")
SENTINEL_MASTER = "greenlight-ha"

needs_postgres = pytest.mark.skipif(
    not (PG_BIN / "initdb").exists(), reason="PostgreSQL's server programs are not installed"
)
needs_redis = pytest.mark.skipif(REDIS_SERVER is None, reason="redis-server is not installed")


# -- PostgreSQL -------------------------------------------------------------------------------


def pg(*args: str, **kw) -> subprocess.CompletedProcess:
    """Run one of PostgreSQL's programs (as postgres when this is root)."""
    return subprocess.run(args, check=True, capture_output=True, text=True, **RUN_AS, **kw)


def _start_postgres(data: Path, port: int, log: Path) -> subprocess.Popen:
    # A postmaster of its own (not pg_ctl's daemon), so the test can kill it by its pid.
    return subprocess.Popen(
        [str(PG_BIN / "postgres"), "-D", str(data), "-p", str(port),
         "-c", "listen_addresses=127.0.0.1", "-c", f"unix_socket_directories={data}",
         "-c", "fsync=off", "-c", "max_connections=200"],
        stdout=log.open("wb"), stderr=subprocess.STDOUT, start_new_session=True, **RUN_AS,
    )  # fmt: skip


def query(port: int, sql: str, dbname: str = "postgres"):
    """The rows of one statement on the server at `port` ([] for a statement that returns none),
    or None if it cannot be reached or refuses."""
    try:
        with psycopg.connect(
            host="127.0.0.1",
            port=port,
            user="postgres",
            dbname=dbname,
            connect_timeout=2,
            autocommit=True,
        ) as conn:
            cursor = conn.execute(sql)
            return cursor.fetchall() if cursor.description else []
    except psycopg.Error:
        return None


@dataclass
class PostgresPair:
    """A running primary and standby; `url` names both, as every Greenlight process is told."""

    primary: subprocess.Popen
    primary_port: int
    standby_port: int
    standby_dir: Path

    def url(self, dbname: str) -> str:
        return (
            f"postgres://postgres@127.0.0.1:{self.primary_port},127.0.0.1:{self.standby_port}"
            f"/{dbname}?target_session_attrs=read-write"
        )

    def kill_primary(self) -> None:
        """The primary's machine dies: SIGKILL, no checkpoint, no goodbye to the standby."""
        self.primary.send_signal(signal.SIGKILL)
        self.primary.wait(timeout=30)

    def promote(self) -> None:
        """What Patroni or an operator does: the standby becomes the primary."""
        pg(str(PG_BIN / "pg_ctl"), "promote", "-w", "-D", str(self.standby_dir))


@contextmanager
def postgres_pair(*, synchronous: bool = False) -> Iterator[PostgresPair]:
    """A primary and its streaming standby, stopped and removed at the end.

    `synchronous`: the primary acknowledges a commit only once the standby has it
    (`synchronous_standby_names`), so a primary killed at any moment loses no committed write.
    """
    # Not under pytest's tmp_path: its base directory is its owner's only, and the server runs
    # as postgres, which must reach its data directory.
    root = Path(tempfile.mkdtemp(prefix="greenlight-pg-"))
    if RUN_AS:
        shutil.chown(root, "postgres")
    primary_dir, standby_dir = root / "primary", root / "standby"
    primary_port, standby_port = free_port(), free_port()
    procs: list[subprocess.Popen] = []
    try:
        pg(str(PG_BIN / "initdb"), "-D", str(primary_dir), "-U", "postgres", "--auth=trust")
        procs.append(_start_postgres(primary_dir, primary_port, root / "primary.log"))
        until(lambda: query(primary_port, "SELECT 1"), "the primary")
        pg(str(PG_BIN / "pg_basebackup"), "-h", "127.0.0.1", "-p", str(primary_port),
           "-U", "postgres", "-D", str(standby_dir), "-R", "-X", "stream")  # fmt: skip
        procs.append(_start_postgres(standby_dir, standby_port, root / "standby.log"))
        until(
            lambda: query(standby_port, "SELECT pg_is_in_recovery()") == [(True,)],
            "the standby to stream",
        )
        if synchronous:
            # Set on the primary only, after the base backup: the standby, once promoted, has
            # no standby of its own and must not wait for one.
            query(primary_port, "ALTER SYSTEM SET synchronous_standby_names = '*'")
            query(primary_port, "SELECT pg_reload_conf()")
            until(
                lambda: (
                    query(primary_port, "SELECT sync_state FROM pg_stat_replication") == [("sync",)]
                ),
                "the standby to be synchronous",
            )
        yield PostgresPair(procs[0], primary_port, standby_port, standby_dir)
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=30)
        shutil.rmtree(root, ignore_errors=True)


# -- Redis under Sentinel ---------------------------------------------------------------------


def _start_redis(args: list[str], log: Path) -> subprocess.Popen:
    assert REDIS_SERVER is not None
    return subprocess.Popen(
        [REDIS_SERVER, *args], stdout=log.open("wb"), stderr=subprocess.STDOUT,
        start_new_session=True,
    )  # fmt: skip


def answers(port: int) -> bool:
    """Whether the Redis at `port` answers a ping."""
    try:
        return bool(redis.Redis(port=port, socket_timeout=0.5).ping())
    except redis.RedisError:
        return False


def master_of(sentinel_port: int) -> int | None:
    """The port of the master the sentinel at `sentinel_port` names now."""
    try:
        _host, port = redis.Redis(port=sentinel_port, socket_timeout=0.5).execute_command(
            "SENTINEL", "get-master-addr-by-name", SENTINEL_MASTER
        )
        return int(port)
    except (redis.RedisError, TypeError, ValueError):
        return None


@dataclass
class SentinelRedis:
    """A running master, replica and sentinels; `env` is what every Greenlight process gets."""

    master: subprocess.Popen
    master_port: int
    replica_port: int
    sentinels: list[int]

    def env(self) -> dict[str, str]:
        return {
            "REDIS_SENTINELS": ",".join(f"127.0.0.1:{p}" for p in self.sentinels),
            "REDIS_SENTINEL_MASTER": SENTINEL_MASTER,
        }

    def kill_master(self) -> None:
        """The master's machine dies."""
        self.master.send_signal(signal.SIGKILL)
        self.master.wait(timeout=30)

    def wait_for_failover(self, timeout: float = 60.0) -> None:
        """Until every sentinel names the replica as the master."""
        until(
            lambda: all(master_of(p) == self.replica_port for p in self.sentinels),
            "the sentinels to promote the replica",
            timeout=timeout,
        )


@contextmanager
def sentinel_redis(directory: Path) -> Iterator[SentinelRedis]:
    """A master, its replica and three sentinels watching it (quorum 2, 1 s to judge it down)."""
    procs: list[subprocess.Popen] = []
    master, replica = free_port(), free_port()
    common = ["--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", str(directory)]
    try:
        procs.append(_start_redis(["--port", str(master), *common], directory / "master.log"))
        until(lambda: answers(master), "the master")
        replica_args = ["--port", str(replica), *common, "--replicaof", "127.0.0.1", str(master)]
        procs.append(_start_redis(replica_args, directory / "replica.log"))
        until(lambda: answers(replica), "the replica")
        sentinels = [free_port() for _ in range(3)]
        for port in sentinels:
            conf = directory / f"sentinel-{port}.conf"
            conf.write_text(
                f"port {port}\nbind 127.0.0.1\ndir {directory}\n"
                f"sentinel monitor {SENTINEL_MASTER} 127.0.0.1 {master} 2\n"
                f"sentinel down-after-milliseconds {SENTINEL_MASTER} 1000\n"
                f"sentinel failover-timeout {SENTINEL_MASTER} 5000\n"
            )
            procs.append(
                _start_redis([str(conf), "--sentinel"], directory / f"sentinel-{port}.log")
            )
        until(lambda: all(master_of(p) == master for p in sentinels), "the sentinels")
        yield SentinelRedis(procs[0], master, replica, sentinels)
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
            proc.wait(timeout=10)
