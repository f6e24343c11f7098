"""Counting database queries per process, for the benchmark (off unless GREENLIGHT_QUERY_LOG_DIR).

Each worker thread counts the queries its tasks run; the web server counts per request, and per
endpoint (URL name) the requests, queries and thread CPU seconds they cost. A worker counts the
same per task name, and per engine look by phase (`work`). Totals are written to
`<dir>/<role>-<pid>.json` as they grow, so a benchmark can add them up.
"""

from __future__ import annotations

import gc
import json
import os
import re
import threading
import time
from contextlib import contextmanager
from pathlib import Path

from django.db import connection

_lock = threading.Lock()
_total = {"queries": 0}
# Per endpoint: requests, queries and CPU seconds of the thread that answered them.
_endpoints: dict[str, dict[str, float]] = {}
# Per worker task name, and per engine look ("look:<phase>"): the same three.
_work: dict[str, dict[str, float]] = {}
_local = threading.local()
_last_write = [0.0]
# With GREENLIGHT_QUERY_LOG_SHAPES set, queries are also counted by shape (literals and numbers
# blanked), to find which statements a step repeats.
_shapes: dict[str, int] = {}
_LITERALS = re.compile(r"'[^']*'|\b\d+\b|%s")


# The cyclic garbage collector's passes in this process and the seconds they took (it holds the
# interpreter throughout, so their wall time is CPU the process could not spend otherwise).
_gc = {"collections": 0, "seconds": 0.0, "full": 0}
_gc_started = [0.0]


def _time_gc(phase: str, info: dict) -> None:
    if phase == "start":
        _gc_started[0] = time.perf_counter()
        return
    _gc["collections"] += 1
    _gc["full"] += info.get("generation") == 2
    _gc["seconds"] = round(_gc["seconds"] + time.perf_counter() - _gc_started[0], 6)


def time_gc() -> None:
    """Count the garbage collector's passes and time in this process (once per process)."""
    if _time_gc not in gc.callbacks:
        gc.callbacks.append(_time_gc)


def enabled() -> Path | None:
    value = os.environ.get("GREENLIGHT_QUERY_LOG_DIR")
    return Path(value) if value else None


def _count(execute, sql, params, many, context):
    shapes = os.environ.get("GREENLIGHT_QUERY_LOG_SHAPES")
    with _lock:
        _total["queries"] += 1
        _local.queries = getattr(_local, "queries", 0) + 1
        if shapes:
            shape = _LITERALS.sub("?", sql)[:300]
            _shapes[shape] = _shapes.get(shape, 0) + 1
    return execute(sql, params, many, context)


def _flush(role: str, force: bool = False) -> None:
    directory = enabled()
    if directory is None:
        return
    now = time.monotonic()
    if not force and now - _last_write[0] < 1.0:
        return
    _last_write[0] = now
    directory.mkdir(parents=True, exist_ok=True)
    with _lock:
        totals: dict = dict(_total)
        if _endpoints:
            totals["endpoints"] = _endpoints
        if _work:
            totals["work"] = _work
        if _shapes:
            totals["shapes"] = _shapes
        if _gc["collections"]:
            totals["gc"] = dict(_gc)
        data = json.dumps(totals)
    (directory / f"{role}-{os.getpid()}.json").write_text(data)


def counting(role: str):
    """A context manager counting the queries run inside it on this thread's connection."""

    @contextmanager
    def block():
        with connection.execute_wrapper(_count):
            yield
        _flush(role)

    return block()


def detail(why: str) -> None:
    """Say why this request did what it did: the web server counts the request under its
    endpoint and under `endpoint[why]` too (a no-op when not enabled)."""
    if enabled() is not None:
        _local.detail = why


def _add(into: dict[str, dict[str, float]], name: str, queries: int, cpu_s: float) -> None:
    with _lock:
        entry = into.setdefault(name, {"requests": 0, "queries": 0, "cpu_s": 0.0})
        entry["requests"] += 1
        entry["queries"] += queries
        entry["cpu_s"] = round(entry["cpu_s"] + cpu_s, 6)


@contextmanager
def work(name: str):
    """Count the queries and thread CPU of the block under `name` (a no-op when not enabled):
    the engine's looks, by phase, inside the task that took them."""
    if enabled() is None:
        yield
        return
    queries, started = getattr(_local, "queries", 0), time.thread_time()
    try:
        yield
    finally:
        _add(_work, name, getattr(_local, "queries", 0) - queries, time.thread_time() - started)


def install_celery_hooks() -> None:
    """Count every task's queries and CPU in this worker (called from the Celery app when
    enabled)."""
    from celery import signals

    local = threading.local()
    time_gc()

    @signals.task_prerun.connect(weak=False)
    def start(task=None, **kwargs):
        _local.queries = 0
        local.started = time.thread_time()
        local.block = counting("worker")
        local.block.__enter__()

    @signals.task_postrun.connect(weak=False)
    def stop(task=None, **kwargs):
        block = getattr(local, "block", None)
        if block is not None:
            name = getattr(task, "name", "unknown")
            _add(_work, name, getattr(_local, "queries", 0), time.thread_time() - local.started)
            block.__exit__(None, None, None)
            local.block = None

    @signals.worker_shutdown.connect(weak=False)
    def shutdown(**kwargs):
        _flush("worker", force=True)


class QueryCountMiddleware:
    """Count the queries of every request in the web server (benchmark only)."""

    def __init__(self, get_response):
        self.get_response = get_response
        time_gc()

    def __call__(self, request):
        _local.queries, _local.detail = 0, ""
        started = time.thread_time()
        with connection.execute_wrapper(_count):
            response = self.get_response(request)
        match = getattr(request, "resolver_match", None)
        name = f"{match.namespace}:{match.url_name}" if match and match.url_name else "unresolved"
        cpu_s = time.thread_time() - started
        _add(_endpoints, name, _local.queries, cpu_s)
        if _local.detail:
            _add(_endpoints, f"{name}[{_local.detail}]", _local.queries, cpu_s)
        _flush("web")
        return response
