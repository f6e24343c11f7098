"""Real processes for tests: a Celery worker against the test database, through lab.processes."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from lab.processes import ROOT, child_env, start_worker, stop

__all__ = [
    "ROOT",
    "celery_worker",
    "child_env",
    "fresh_settings_env",
    "run_python",
    "start_test_worker",
    "stop",
]


def fresh_settings_env(**variables: str) -> dict[str, str]:
    """The test's environment as `make test` gives a process (lab mode, the session's own
    DATABASE_URL and REDIS_URL, the one settings module), plus `variables`."""
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "greenlight.settings",
        "GREENLIGHT_LAB_MODE": "1",
        **variables,
    }


def run_python(code: str, **variables: str) -> subprocess.CompletedProcess:
    """`python -c code` in a fresh process of the project (fresh_settings_env)."""
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env=fresh_settings_env(**variables),
        capture_output=True,
        text=True,
        timeout=120,
    )


def start_test_worker(
    *, concurrency: int = 4, env: dict[str, str] | None = None, log=None
) -> subprocess.Popen:
    """A worker on the test queue, logging every task it takes; returned once it answers."""
    return start_worker(
        env or child_env(), concurrency=concurrency, name="test", log=log, loglevel="INFO"
    )


@contextmanager
def celery_worker(
    *, concurrency: int = 4, env: dict[str, str] | None = None, log=None
) -> Iterator[subprocess.Popen]:
    """Run a real Celery worker for the duration of the block; yield its Popen."""
    proc = start_test_worker(concurrency=concurrency, env=env, log=log)
    try:
        yield proc
    finally:
        stop(proc)
