"""A lab run stopped with SIGTERM (how a benchmark is stopped) stops every process it started."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from lab import processes

ROOT = Path(__file__).resolve().parents[2]


def read_until(proc: subprocess.Popen, marker: str, timeout: float) -> str:
    """The child's output up to the first line holding `marker`."""
    assert proc.stdout is not None
    seen = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line and proc.poll() is not None:
            break
        seen.append(line)
        if marker in line:
            return "".join(seen)
    raise AssertionError(f"no {marker!r} within {timeout} s:\n{''.join(seen)}")


@pytest.mark.timeout(300)
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_sigterm_stops_the_runs_servers_workers_and_lab(tmp_path):
    # Its children lead sessions of their own, so only the run itself can stop them: before,
    # a SIGTERM ended it at once and left them all running.
    proc = subprocess.Popen(
        [sys.executable, "manage.py", "lab", "run", "--nodes", "2", "--speed", "20",
         "--soak-hours", "1", "--timeout", "600", "--json", str(tmp_path / "run.json")],
        cwd=ROOT, env=processes.child_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True,
    )  # fmt: skip
    children: list[psutil.Process] = []
    try:
        read_until(proc, "pass 1: provisioning", timeout=180)
        children = psutil.Process(proc.pid).children(recursive=True)
        # The web server, the node plane, two workers and beat at least.
        assert len(children) >= 5, children
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        # Whatever outlived it is killed here, not left to the rest of the suite.
        _, alive = psutil.wait_procs(children, timeout=20)
        left = [" ".join(child.cmdline()[1:4]) for child in alive]
        for child in alive:
            child.kill()
    assert proc.returncode != 0, out
    assert left == []
    assert "summary written" not in out


def test_a_sigterm_swallowed_where_it_landed_still_stops_the_waiting_loop():
    # A 5,000-node benchmark took its SIGTERM inside a weakref callback, where Python prints
    # "Exception ignored in" and goes on; the handler ignored every later SIGTERM, and the run
    # ran on for 13 minutes.
    restore = processes.interrupt_on_sigterm()
    try:
        processes.raise_if_stopping()  # nothing taken yet
        try:
            signal.raise_signal(signal.SIGTERM)
        except KeyboardInterrupt:
            pass  # swallowed, as a weakref callback does
        with pytest.raises(KeyboardInterrupt):
            processes.raise_if_stopping()
    finally:
        restore()
    processes.raise_if_stopping()  # the next run starts afresh
