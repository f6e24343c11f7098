"""PostgreSQL failover (issue 33): a private primary and a streaming standby on loopback ports,
Greenlight given both in one DATABASE_URL (`?target_session_attrs=read-write`). The primary is
killed and the standby promoted (`pg_ctl promote`, what Patroni or an operator does); a
Greenlight process that lived through it writes on, to the new primary, without a restart."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import psycopg
import pytest

from lab.processes import ROOT, child_env, free_port
from tests.support.slurm import until

PG_BIN = Path("/usr/lib/postgresql/15/bin")
# PostgreSQL refuses to run as root: as root, its programs run as the postgres user (the
# process itself, not a wrapper's child, so that the test kills the postmaster by its pid).
RUN_AS = {"user": "postgres", "group": "postgres"} if os.geteuid() == 0 else {}

pytestmark = [
    pytest.mark.skipif(not (PG_BIN / "initdb").exists(), reason="PostgreSQL 15 is not installed"),
    pytest.mark.timeout(300),
]


def _pg(*args: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(args, check=True, capture_output=True, text=True, **RUN_AS, **kw)


def _start(data: Path, port: int, log: Path) -> subprocess.Popen:
    # A postmaster of its own (not pg_ctl's daemon), so the test can kill it by its pid.
    return subprocess.Popen(
        [str(PG_BIN / "postgres"), "-D", str(data), "-p", str(port),
         "-c", "listen_addresses=127.0.0.1", "-c", f"unix_socket_directories={data}",
         "-c", "fsync=off"],
        stdout=log.open("wb"), stderr=subprocess.STDOUT, start_new_session=True, **RUN_AS,
    )  # fmt: skip


def _query(port: int, sql: str, dbname: str = "postgres"):
    try:
        with psycopg.connect(
            host="127.0.0.1",
            port=port,
            user="postgres",
            dbname=dbname,
            connect_timeout=2,
            autocommit=True,
        ) as conn:
            return conn.execute(sql).fetchall()
    except psycopg.Error:
        return None


@pytest.fixture
def primary_and_standby():
    """A primary and its streaming standby, private to this test."""
    # Not under tmp_path: pytest's base directory is its owner's only, and the server runs as
    # postgres, which must reach its data directory.
    root = Path(tempfile.mkdtemp(prefix="greenlight-pg-"))
    if RUN_AS:
        shutil.chown(root, "postgres")
    primary_dir, standby_dir = root / "primary", root / "standby"
    primary_port, standby_port = free_port(), free_port()
    _pg(str(PG_BIN / "initdb"), "-D", str(primary_dir), "-U", "postgres", "--auth=trust")
    procs = [_start(primary_dir, primary_port, root / "primary.log")]
    try:
        until(lambda: _query(primary_port, "SELECT 1"), "the primary")
        _pg(str(PG_BIN / "pg_basebackup"), "-h", "127.0.0.1", "-p", str(primary_port),
            "-U", "postgres", "-D", str(standby_dir), "-R", "-X", "stream")  # fmt: skip
        procs.append(_start(standby_dir, standby_port, root / "standby.log"))
        until(
            lambda: _query(standby_port, "SELECT pg_is_in_recovery()") == [(True,)],
            "the standby to stream",
        )
        yield {
            "primary": procs[0],
            "primary_port": primary_port,
            "standby_port": standby_port,
            "standby_dir": standby_dir,
        }
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=30)
        shutil.rmtree(root, ignore_errors=True)


PROBE = """
import json, sys
import django
django.setup()
from django.db import close_old_connections, connection
from fleet.models import Site
for line in sys.stdin:
    # What a request or a task does first: drop a connection that is broken or too old.
    close_old_connections()
    try:
        Site.objects.create(name=line.strip())
        port = connection.cursor().connection.info.port
        answer = {"sites": sorted(Site.objects.values_list("name", flat=True)), "port": port}
    except Exception as exc:
        answer = {"error": repr(exc)}
    print(json.dumps(answer), flush=True)
"""


def test_a_running_process_writes_on_after_the_standby_is_promoted(primary_and_standby, tmp_path):
    ports = primary_and_standby["primary_port"], primary_and_standby["standby_port"]
    _query(ports[0], "CREATE DATABASE greenlight_ha")
    url = (
        f"postgres://postgres@127.0.0.1:{ports[0]},127.0.0.1:{ports[1]}/greenlight_ha"
        "?target_session_attrs=read-write"
    )
    env = child_env(
        DATABASE_URL=url, GREENLIGHT_LAB_MODE="1", DJANGO_SETTINGS_MODULE="greenlight.settings"
    )
    migrate = [sys.executable, "manage.py", "migrate", "-v", "0"]
    subprocess.run(migrate, cwd=ROOT, env=env, check=True, timeout=240)
    probe = subprocess.Popen(
        [sys.executable, "-c", PROBE], cwd=ROOT, env=env,
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip

    def ask(name: str) -> dict:
        assert probe.stdin is not None and probe.stdout is not None
        probe.stdin.write(name + "\n")
        probe.stdin.flush()
        return json.loads(probe.stdout.readline())

    try:
        before = ask("before-failover")
        assert before == {"sites": ["before-failover"], "port": ports[0]}
        # The standby has it before the primary dies (streaming is asynchronous).
        until(
            lambda: _query(ports[1], "SELECT name FROM fleet_site", "greenlight_ha"),
            "the standby to replay the write",
        )
        primary_and_standby["primary"].send_signal(signal.SIGKILL)
        primary_and_standby["primary"].wait(timeout=30)
        _pg(str(PG_BIN / "pg_ctl"), "promote", "-w", "-D", str(primary_and_standby["standby_dir"]))

        # The same process, no restart: the next unit of work finds the new primary.
        after = until(lambda: (a := ask("after-failover")) and "sites" in a and a, "a write")
        assert after == {"sites": ["after-failover", "before-failover"], "port": ports[1]}
    finally:
        if probe.stdin:
            probe.stdin.close()
        probe.wait(timeout=30)
