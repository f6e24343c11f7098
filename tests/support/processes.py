"""Real processes for tests: a Celery worker against the test database, through lab.processes."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager

from lab.processes import ROOT, child_env, start_worker, stop

__all__ = ["ROOT", "celery_worker", "child_env", "start_test_worker", "stop"]


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
