"""The node plane holds a connection for every agent of its hall between polls (agents keep
theirs 60 s): past gunicorn's default of 1,000 connections its gthread loop stopped reading
requests and spun a core (gunicorn issue #3407), so its settings (greenlight/node_gunicorn.py)
make room for the hall, and raise the server's open-files limit to match: each connection is a
file descriptor, and the usual soft limit (1,024, or less) refuses them first."""

from __future__ import annotations

import os
import resource
import socket
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from lab import processes

ROOT = Path(__file__).resolve().parents[2]

AGENTS = 1_000  # gunicorn's default worker_connections
JUST_CONNECTED = 16  # boots connecting meanwhile, their first request not yet sent
# The open-files limit the node plane is started under: far below what its agents need.
STARTED_UNDER = 256


def _ask(sock: socket.socket, host: str) -> None:
    sock.sendall(f"GET /agent/v1/nothing HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
    answer = b""
    while b"\r\n\r\n" not in answer:
        chunk = sock.recv(4096)
        assert chunk, "the node plane closed the connection without answering"
        answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":")[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    while len(body) < length:
        body += sock.recv(4096)
    assert head.startswith(b"HTTP/1.1 404")


@pytest.fixture
def node_plane():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = AGENTS + JUST_CONNECTED + 256
    if hard != resource.RLIM_INFINITY and hard < wanted:
        pytest.skip(f"needs {wanted} open files, the hard limit is {hard}")
    env = {k: v for k, v in os.environ.items() if k != "GREENLIGHT_QUERY_LOG_DIR"}
    # The server inherits the limit it is started under; this test's own sockets need the room.
    # Room too for what this process holds open meanwhile (a test worker's connections).
    started_under = max(STARTED_UNDER, len(os.listdir("/proc/self/fd")) + 64)
    assert started_under < AGENTS
    resource.setrlimit(resource.RLIMIT_NOFILE, (started_under, hard))
    try:
        proc, url = processes.start_agent_api(env)
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, wanted), hard))
    try:
        yield url
    finally:
        processes.stop(proc)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_the_node_plane_answers_past_a_thousand_kept_agent_connections(node_plane):
    address = urlsplit(node_plane)
    host = address.netloc
    kept = []
    try:
        for _ in range(AGENTS):
            sock = socket.create_connection((address.hostname, address.port), timeout=10)
            kept.append(sock)
            _ask(sock, host)  # an agent's poll; it keeps the connection for the next
        kept += [
            socket.create_connection((address.hostname, address.port), timeout=10)
            for _ in range(JUST_CONNECTED)
        ]
        # A new client (a boot, an agent reconnecting) is answered on a connection of its own,
        fresh = socket.create_connection((address.hostname, address.port), timeout=10)
        kept.append(fresh)
        _ask(fresh, host)
        _ask(kept[0], host)  # and an agent polling again on its kept connection
    finally:
        for sock in kept:
            sock.close()


@pytest.mark.parametrize("value", ["lots", "10"])
def test_a_bad_connection_count_stops_the_node_plane_saying_why(value):
    env = {**os.environ, "GREENLIGHT_NODE_PLANE_CONNECTIONS": value}
    out = subprocess.run(
        [sys.executable, "-c", "import greenlight.node_gunicorn"],
        env=env, cwd=ROOT, capture_output=True, text=True,
    )  # fmt: skip
    assert out.returncode != 0
    assert "GREENLIGHT_NODE_PLANE_CONNECTIONS" in out.stderr


def test_a_hard_limit_too_low_for_the_hall_is_said_at_start(tmp_path):
    def low_limits() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (STARTED_UNDER, 600))

    log = tmp_path / "node-plane.log"
    env = {k: v for k, v in os.environ.items() if k != "GREENLIGHT_QUERY_LOG_DIR"}
    with log.open("w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "-c", "python:greenlight.node_gunicorn",
             "-b", f"127.0.0.1:{processes.free_port()}", "greenlight.node_wsgi:application"],
            cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, preexec_fn=low_limits,
            start_new_session=True,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while "open-files limit" not in log.read_text() and time.monotonic() < deadline:
            assert proc.poll() is None, log.read_text()
            time.sleep(0.1)
        # As far as the hard limit allows, and the operator told what the hall needs.
        assert "open-files limit 600 is below the 10256 that 10000 connections need" in (
            log.read_text()
        )
    finally:
        processes.stop(proc)
