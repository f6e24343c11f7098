"""The web server pools its PostgreSQL connections when GREENLIGHT_DB_POOL says how many."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from common.env import WEB_SERVER_ENV
from lab.processes import ROOT

SHOW = (
    "import json, os; os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'greenlight.settings');"
    "from django.conf import settings; d = settings.DATABASES['default'];"
    "print(json.dumps([d['CONN_MAX_AGE'], d.get('OPTIONS', {}).get('pool')]))"
)


def database_settings(**env: str) -> list:
    base = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "GREENLIGHT_DB_POOL")}
    out = subprocess.run(
        [sys.executable, "-c", SHOW],
        # A REDIS_URL, so the settings do not start an embedded Redis for this one import.
        env={**base, "REDIS_URL": "redis://127.0.0.1:6379/0", **env},
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize(
    ("env", "pooled"),
    [
        ({"DATABASE_URL": "postgres://gl@db.example:5432/gl", **WEB_SERVER_ENV}, True),
        ({"DATABASE_URL": "postgres://gl@db.example:5432/gl"}, False),
        ({"GREENLIGHT_DB_POOL": "16"}, False),  # SQLite: nothing to pool
    ],
)
def test_only_a_postgresql_process_told_to_pools(env, pooled):
    max_age, pool = database_settings(**env)
    if pooled:
        # A pool and persistent connections exclude each other (Django refuses both).
        assert max_age == 0 and pool["max_size"] == int(WEB_SERVER_ENV["GREENLIGHT_DB_POOL"])
    else:
        assert pool is None
