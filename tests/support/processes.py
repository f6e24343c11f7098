"""Real processes for tests: a Celery worker against the test database and the test broker."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

from lab.processes import child_env, database_url

ROOT = Path(__file__).resolve().parents[2]


def test_database_url() -> str:
    """A DATABASE_URL naming the database the test run is using right now."""
    return database_url()


@contextmanager
def celery_worker(
    *, concurrency: int = 4, pool: str = "threads", env: dict | None = None, log=None
):
    """Run a real Celery worker for the duration of the block; yield its Popen."""
    proc = start_celery_worker(concurrency=concurrency, pool=pool, env=env, log=log)
    try:
        yield proc
    finally:
        stop_process(proc)


def start_celery_worker(*, concurrency=4, pool="threads", env=None, log=None) -> subprocess.Popen:
    """Start a Celery worker on the test queue and wait until it is ready to take tasks."""
    from django.conf import settings

    queue = settings.CELERY_TASK_DEFAULT_QUEUE
    cmd = [
        sys.executable, "-m", "celery", "-A", "greenlight", "worker",
        "-Q", queue, "-P", pool, "-c", str(concurrency), "--without-gossip",
        "--without-mingle", "--without-heartbeat", "-l", "INFO",
        "-n", f"test-{queue}-{os.getpid()}-{time.monotonic_ns()}@%h",
    ]  # fmt: skip
    out = log if log is not None else subprocess.DEVNULL
    proc = subprocess.Popen(
        cmd, cwd=ROOT, env=env or child_env(), stdout=out, stderr=subprocess.STDOUT
    )
    wait_for_worker(queue, proc)
    return proc


def wait_for_worker(queue: str, proc: subprocess.Popen, timeout: float = 60.0) -> None:
    """Block until a worker consuming `queue` answers a ping."""
    from greenlight.celery import app

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"celery worker exited with {proc.returncode}")
        replies = app.control.ping(timeout=0.5) or []
        if any(f"test-{queue}-" in name for reply in replies for name in reply):
            return
    raise RuntimeError("celery worker did not become ready")


def stop_process(proc: subprocess.Popen, timeout: float = 15.0) -> None:
    """Stop a child process: SIGTERM, then SIGKILL if it will not go."""
    if proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
