"""PostgreSQL failover (issue 33): a private primary and a streaming standby on loopback ports,
Greenlight given both in one DATABASE_URL (`?target_session_attrs=read-write`). The primary is
killed and the standby promoted (`pg_ctl promote`, what Patroni or an operator does); a
Greenlight process that lived through it writes on, to the new primary, without a restart."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from lab.processes import ROOT, child_env
from tests.support.ha import needs_postgres, postgres_pair, query
from tests.support.slurm import until

pytestmark = [needs_postgres, pytest.mark.ha, pytest.mark.timeout(300)]


@pytest.fixture
def primary_and_standby():
    """A primary and its streaming standby, private to this test."""
    with postgres_pair() as pair:
        yield pair


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
    ports = primary_and_standby.primary_port, primary_and_standby.standby_port
    query(ports[0], "CREATE DATABASE greenlight_ha")
    url = primary_and_standby.url("greenlight_ha")
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
            lambda: query(ports[1], "SELECT name FROM fleet_site", "greenlight_ha"),
            "the standby to replay the write",
        )
        primary_and_standby.kill_primary()
        primary_and_standby.promote()

        # The same process, no restart: the next unit of work finds the new primary.
        after = until(lambda: (a := ask("after-failover")) and "sites" in a and a, "a write")
        assert after == {"sites": ["after-failover", "before-failover"], "port": ports[1]}
    finally:
        if probe.stdin:
            probe.stdin.close()
        probe.wait(timeout=30)
