"""`manage.py demo` (what `make demo` runs): serves the login page and the admin, prints the new
admin password once, reuses everything on a second start, and stops every child on a signal."""

from __future__ import annotations

import os
import queue
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import psutil
import pytest
from django.conf import settings

from tests.support.processes import ROOT

STARTUP_TIMEOUT_S = 120


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def demo_env(tmp_path: Path, port: int) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        # Its own database, var/ and queue: the demo must not touch the test run's.
        DATABASE_URL=f"sqlite:///{tmp_path / 'demo.sqlite3'}",
        GREENLIGHT_VAR_DIR=str(tmp_path / "var"),
        REDIS_URL=settings.REDIS_URL,
        CELERY_QUEUE=f"demo-test-{port}",
        CHANNEL_PREFIX=f"demo-test-{port}",
        PORT=str(port),
        PYTHONUNBUFFERED="1",
    )
    env.pop("PYTEST_XDIST_WORKER", None)
    return env


def start_demo(env: dict[str, str]) -> tuple[subprocess.Popen, str]:
    """Start the demo; return it and its output up to the banner's last line."""
    proc = subprocess.Popen(
        [sys.executable, "manage.py", "demo", "--no-lab"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines: queue.Queue[str] = queue.Queue()
    # A reader thread: the pipe is read line by line without blocking the deadline checks.
    threading.Thread(target=lambda: [lines.put(x) for x in proc.stdout], daemon=True).start()
    proc.lines = lines
    output = ""
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    while "Stop:" not in output:
        if time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"demo did not start:\n{output}")
        try:
            output += lines.get(timeout=0.5)
        except queue.Empty:
            if proc.poll() is not None and lines.empty():
                pytest.fail(f"demo exited with {proc.returncode}:\n{output}")
    return proc, output


def stop_demo(proc: subprocess.Popen, sig: int) -> tuple[int, str, list[psutil.Process]]:
    children = psutil.Process(proc.pid).children(recursive=True)
    proc.send_signal(sig)
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise
    rest = []
    deadline = time.monotonic() + 10
    while "Demo stopped" not in "".join(rest) and time.monotonic() < deadline:
        try:
            rest.append(proc.lines.get(timeout=0.5))
        except queue.Empty:
            pass
    return proc.returncode, "".join(rest), children


def log_in(base: str, password: str) -> httpx.Response:
    with httpx.Client(base_url=base, timeout=10) as client:
        client.get("/admin/login/")
        return client.post(
            "/admin/login/?next=/admin/",
            data={
                "username": "admin",
                "password": password,
                "csrfmiddlewaretoken": client.cookies["csrftoken"],
                "next": "/admin/",
            },
            headers={"Referer": f"{base}/admin/login/"},
        )


def test_the_demo_serves_the_admin_and_stops_cleanly(tmp_path):
    port = free_port()
    env = demo_env(tmp_path, port)
    base = f"http://127.0.0.1:{port}"

    proc, output = start_demo(env)
    try:
        assert f"Greenlight is running at {base}/" in output
        assert "Lab rack: not started (--no-lab)" in output
        password = re.search(r"Password:\s+(\S+)\s+\(shown once", output).group(1)
        with httpx.Client(base_url=base, timeout=10) as client:
            assert client.get("/admin/login/").status_code == 200
            assert client.get("/accounts/login/").status_code == 200
            assert client.get("/static/admin/css/base.css").status_code == 200
        response = log_in(base, password)
        assert response.status_code == 302 and response.headers["location"] == "/admin/"
    finally:
        code, rest, children = stop_demo(proc, signal.SIGINT)
    assert code == 0, rest
    assert "Demo stopped" in rest
    assert len(children) >= 3
    assert not [c for c in children if c.is_running()]
    assert password not in (tmp_path / "var" / "log" / "web.log").read_text()

    # A second start reuses the database and the user, and shows no password.
    proc, output = start_demo(env)
    try:
        assert "User 'admin' exists" in output and "changepassword admin" in output
        assert "Samples: 0 created" in output
        assert password not in output
        assert log_in(base, password).status_code == 302
    finally:
        code, rest, children = stop_demo(proc, signal.SIGTERM)
    assert code == 0, rest
    assert not [c for c in children if c.is_running()]
