"""Greenlight's processes for a lab run: the web servers and Celery workers, as children."""

from __future__ import annotations

import os
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
from django.conf import settings
from django.db import connection

from common.env import WEB_SERVER_ENV
from greenlight.celery import app

ROOT = Path(__file__).resolve().parents[1]


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def database_url() -> str:
    """A DATABASE_URL for the database this process uses (the test database under pytest)."""
    s = connection.settings_dict
    if s["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{Path(s['NAME']).resolve()}"
    auth = (s.get("USER") or "") + (f":{s['PASSWORD']}" if s.get("PASSWORD") else "")
    # A primary and its standbys are libpq's comma lists (common/database_url.py): host:port
    # pairs again, and the session attribute that picks whichever of them takes writes.
    hosts = str(s.get("HOST") or "127.0.0.1").split(",")
    ports = str(s.get("PORT") or 5432).split(",")
    if len(ports) == 1:  # libpq: one port for every host
        ports = ports * len(hosts)
    servers = ",".join(f"{h}:{p}" for h, p in zip(hosts, ports, strict=True))
    attrs = (s.get("OPTIONS") or {}).get("target_session_attrs")
    query = f"?target_session_attrs={attrs}" if attrs else ""
    return f"postgres://{auth}@{servers}/{s['NAME']}{query}"


def child_env(**extra: str) -> dict[str, str]:
    """Environment for a child that must share this process's database, Redis and queue."""
    env = dict(os.environ)
    env.update(
        DATABASE_URL=database_url(),
        REDIS_URL=settings.REDIS_URL,
        CELERY_QUEUE=settings.CELERY_TASK_DEFAULT_QUEUE,
        CHANNEL_PREFIX=settings.CHANNEL_LAYERS["default"]["CONFIG"]["prefix"],
        GREENLIGHT_TIME_SCALE=str(settings.GREENLIGHT_TIME_SCALE),
        PYTHONUNBUFFERED="1",
    )
    env.update({k: str(v) for k, v in extra.items()})
    return env


def start_web(
    env: dict[str, str], port: int | None = None, log=None
) -> tuple[subprocess.Popen, str]:
    """Start daphne serving Greenlight; return the process and its URL once it answers."""
    port = port or free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port),
         "greenlight.asgi:application"],
        cwd=ROOT, env={**WEB_SERVER_ENV, **env}, stdout=log or subprocess.DEVNULL, stderr=subprocess.STDOUT,
        start_new_session=True,
    )  # fmt: skip
    return proc, _wait_until_answering(proc, f"http://127.0.0.1:{port}", "daphne")


def _wait_until_answering(
    proc: subprocess.Popen, url: str, name: str, verify: ssl.SSLContext | bool = True
) -> str:
    """The server's URL once it answers; stops it and raises if it exits or never answers."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{name} exited with {proc.returncode}")
        try:
            httpx.get(url + "/accounts/login/", timeout=1, verify=verify)
            return url
        except httpx.TransportError:
            time.sleep(0.1)
    stop(proc)
    raise RuntimeError(f"{name} did not start")


def start_agent_api(
    env: dict[str, str],
    port: int | None = None,
    threads: int = 8,
    log=None,
    tls: tuple[Path, Path, Path] | None = None,
) -> tuple[subprocess.Popen, str]:
    """Start the node plane's server (the agents' API and the boot plane: gunicorn, threads,
    greenlight/node_wsgi.py); return the process and its URL.

    The agents' API is plain HTTP: a WSGI server answers it for a tenth of daphne's CPU per
    request (measured: 0.6 ms against 5.4 ms for the same refused check-in), and hundreds of
    agents reporting at once is where that adds up.

    With `tls` (certificate, key, the CA that signed them) it serves HTTPS, as for real nodes.
    """
    port = port or free_port()
    tls_args = ["--certfile", str(tls[0]), "--keyfile", str(tls[1])] if tls else []
    proc = subprocess.Popen(
        # The node plane's own settings (greenlight/node_gunicorn.py), as a site runs it.
        [sys.executable, "-m", "gunicorn", "-c", "python:greenlight.node_gunicorn",
         "-b", f"127.0.0.1:{port}", "--threads", str(threads), *tls_args,
         "greenlight.node_wsgi:application"],
        cwd=ROOT, env={**WEB_SERVER_ENV, **env}, stdout=log or subprocess.DEVNULL, stderr=subprocess.STDOUT,
        start_new_session=True,
    )  # fmt: skip
    scheme = "https" if tls else "http"
    verify = ssl.create_default_context(cafile=str(tls[2])) if tls else True
    return proc, _wait_until_answering(proc, f"{scheme}://127.0.0.1:{port}", "gunicorn", verify)


def start_worker(
    env: dict[str, str],
    *,
    concurrency: int = 16,
    name: str = "lab",
    log=None,
    loglevel: str = "WARNING",
    extra_args: tuple[str, ...] = (),
) -> subprocess.Popen:
    """Start a Celery worker (thread pool: steps wait on the network, not the CPU).

    It returns once the worker answers a ping. At INFO its log names every task it takes.
    """
    queue = env.get("CELERY_QUEUE", settings.CELERY_TASK_DEFAULT_QUEUE)
    node_name = f"{name}-{os.getpid()}-{time.monotonic_ns()}@%h"
    proc = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "greenlight", "worker", "-Q", queue,
         "-P", "threads", "-c", str(concurrency), "--without-gossip", "--without-mingle",
         "--without-heartbeat", "-l", loglevel, "-n", node_name, *extra_args],
        cwd=ROOT, env=env, stdout=log or subprocess.DEVNULL, stderr=subprocess.STDOUT,
        start_new_session=True,
    )  # fmt: skip
    try:
        wait_for_worker(proc, node_name.split("@")[0])
    except BaseException:
        stop(proc)  # never leave a worker behind that nobody will stop
        raise
    return proc


def wait_for_worker(proc: subprocess.Popen, prefix: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"celery worker exited with {proc.returncode}")
        replies = app.control.ping(timeout=0.5) or []
        if any(name.startswith(prefix) for reply in replies for name in reply):
            return
    raise RuntimeError("celery worker did not become ready")


def start_beat(env: dict[str, str], schedule: Path, log=None) -> subprocess.Popen:
    """Start Celery beat (it sends the periodic sweep)."""
    return subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "greenlight", "beat", "-l", "WARNING",
         "-s", str(schedule)],
        cwd=ROOT, env=env, stdout=log or subprocess.DEVNULL, stderr=subprocess.STDOUT,
        start_new_session=True,
    )  # fmt: skip


def start_command(args: list[str], env: dict[str, str], log=None) -> subprocess.Popen:
    """Start `manage.py <args>` (a lab of simulated BMCs, for one) in a process group of its own."""
    return subprocess.Popen(
        [sys.executable, "manage.py", *args],
        cwd=ROOT, env=env, stdout=log or subprocess.DEVNULL, stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip


def stop(proc: subprocess.Popen, timeout: float = 15.0) -> None:
    """SIGTERM the child's process group, then SIGKILL what is left of the group.

    Every child here leads a process group of its own (start_new_session): a Ctrl-C in the
    terminal reaches only the parent, which stops its children in order. Grandchildren (Celery's
    pool, a lab's servers) may outlive their parent briefly: the group's SIGKILL ends them too.
    """
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()


# Set by the first SIGTERM. The KeyboardInterrupt the handler raises lands wherever the main
# thread is, and there Python may swallow it: a 5,000-node benchmark took its SIGTERM inside a
# weakref callback ("Exception ignored in"), ignored every later one and ran on for 13 minutes.
_stopping = threading.Event()


def _interrupt(signum: int, frame: Any) -> None:
    # Once: a second SIGTERM must not cut short the stopping that the first one started.
    signal.signal(signum, signal.SIG_IGN)
    _stopping.set()
    raise KeyboardInterrupt(f"signal {signum}")


def raise_if_stopping() -> None:
    """Raise the KeyboardInterrupt of a SIGTERM taken earlier, in case it was swallowed where it
    landed; a run's waiting loops call this."""
    if _stopping.is_set():
        raise KeyboardInterrupt("signal 15 (taken earlier)")


def interrupt_on_sigterm() -> Callable[[], None]:
    """Make a SIGTERM to this process stop it as a Ctrl-C does; returns what undoes that.

    A lab run's children lead sessions of their own, so a signal to the run reaches none of
    them: only the run's exit stops them. Python's default for SIGTERM ends the process with no
    exit (a benchmark stopped so left its web servers, workers and lab BMCs running); as a
    KeyboardInterrupt it unwinds through the run's `with` block. Outside the main thread, where
    no handler can be set, it changes nothing.
    """
    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    _stopping.clear()
    previous = signal.signal(signal.SIGTERM, _interrupt)

    def restore() -> None:
        signal.signal(signal.SIGTERM, previous)
        _stopping.clear()

    return restore


def kill(proc: subprocess.Popen) -> None:
    """SIGKILL the child and its group at once (a crash, for tests)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()
