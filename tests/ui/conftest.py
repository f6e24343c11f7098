"""Fixtures of the board tests: a real daphne server, Debian's chromium, and node drivers.

Playwright's sync API keeps its asyncio loop marked as running in the test's thread, where
Django refuses ORM calls and async_to_sync (so live events would not be published). Every write
the tests make while a browser is open therefore runs on a thread of its own (`db_thread`), and
plain reads are allowed with DJANGO_ALLOW_ASYNC_UNSAFE. Transactional tests use
serialized_rollback so the role groups of the data migration survive the flush.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import pytest

from lab.processes import free_port, start_web
from tests.support.processes import ROOT, child_env, start_test_worker
from tests.support.processes import stop as stop_process

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
SCREENSHOTS = ROOT / "var" / "screenshots"


# --- a real ASGI server ------------------------------------------------------------------------


@dataclass
class Server:
    """daphne serving greenlight.asgi against the test database, Redis and channel prefix."""

    port: int
    proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        env = child_env(GREENLIGHT_LIVE_COALESCE_MS="100", SERVE_STATIC="1")
        env.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        self.proc, _ = start_web(env, port=self.port)

    def stop(self) -> None:
        if self.proc is not None:
            stop_process(self.proc)
            self.proc = None


@pytest.fixture
def server(transactional_db) -> Iterator[Server]:
    srv = Server(free_port())
    srv.start()
    try:
        yield srv
    finally:
        srv.stop()


# --- the browser -------------------------------------------------------------------------------


@pytest.fixture
def browser(monkeypatch):
    """Chromium for one test. Not session-wide: while Playwright lives, its loop counts as running
    in this thread, which would break async_to_sync in every later test of the process."""
    from playwright.sync_api import sync_playwright

    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            # While Playwright lives, the ORM in this thread gets a connection of its own (Django's
            # connections are context-local); close it here, in that context, or it outlives the
            # test and blocks dropping the test database.
            from django.db import connections

            connections.close_all()
            chromium.close()


@pytest.fixture
def db_thread(transactional_db) -> Iterator[Callable[..., Any]]:
    """Run a function on a thread with no event loop, where the ORM and publishing work."""
    from django.db import connections

    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="db")

    def call(fn: Callable[..., Any], *args, **kwargs) -> Any:
        return pool.submit(fn, *args, **kwargs).result(timeout=60)

    try:
        yield call
    finally:
        pool.submit(connections.close_all).result()
        pool.shutdown()


@pytest.fixture
def open_as(browser, server, db_thread):
    """Open a browser context signed in as a user (by session cookie); returns a new page."""
    from django.conf import settings
    from django.test import Client

    contexts = []

    def open_page(user, path: str = "/"):
        def cookie():
            client = Client()
            client.force_login(user)
            return client.cookies[settings.SESSION_COOKIE_NAME].value

        context = browser.new_context(viewport={"width": 1440, "height": 1000})
        contexts.append(context)
        context.add_cookies(
            [{"name": settings.SESSION_COOKIE_NAME, "value": db_thread(cookie), "url": server.url}]
        )
        page = context.new_page()
        page.goto(server.url + path)
        return page

    yield open_page
    for context in contexts:
        context.close()


# --- who moves the nodes -----------------------------------------------------------------------


class DirectDriver:
    """Moves nodes with fleet.lifecycle.transition from the test (on the db thread)."""

    name = "direct"

    def __init__(self, db_thread, settings=None):
        self.db = db_thread

    def move(self, node_id: int, to_state: str) -> None:
        from fleet.models import Node
        from tests.support.scenes import walk

        self.db(lambda: walk(Node.objects.get(pk=node_id), to_state, actor_label="driver"))

    def close(self) -> None:
        pass


class CeleryDriver(DirectDriver):
    """Moves nodes through fleet.tasks.transition_node in a real Celery worker."""

    name = "celery"

    def __init__(self, db_thread, settings):
        super().__init__(db_thread)
        # A queue of our own: another test run's worker on the same broker must not take our
        # tasks (and run them against its own database).
        self.queue = f"ui-{os.getpid()}-{time.monotonic_ns()}"
        settings.CELERY_TASK_DEFAULT_QUEUE = self.queue
        env = child_env()
        env.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        self.worker = db_thread(start_test_worker, concurrency=2, env=env)

    def move(self, node_id: int, to_state: str) -> None:
        from fleet.models import Node
        from fleet.tasks import transition_node
        from tests.support.scenes import PATHS

        def run():
            path = PATHS[to_state]
            node = Node.objects.get(pk=node_id)
            start = path.index(node.state) + 1 if node.state in path else 0
            for state in path[start:]:
                transition_node.apply_async((node_id, state, "", "celery driver"), queue=self.queue)
                deadline = time.monotonic() + 30
                # A bounded wait on a real condition: the worker's UPDATE becoming visible.
                while not Node.objects.filter(pk=node_id, state=state).exists():
                    if time.monotonic() > deadline:
                        raise TimeoutError(f"worker did not move node {node_id} to {state}")
                    time.sleep(0.05)

        self.db(run)

    def close(self) -> None:
        stop_process(self.worker)


@pytest.fixture
def driver(request, db_thread, settings):
    """The one thing that moves nodes; `lab` (the pipeline driving a lab rack) slots in here."""
    kind = getattr(request, "param", os.environ.get("GREENLIGHT_UI_DRIVER", "direct"))
    drv = {"direct": DirectDriver, "celery": CeleryDriver}[kind](db_thread, settings)
    try:
        yield drv
    finally:
        drv.close()


def wait_until_true(page, expression: str, timeout_s: float = 30.0) -> None:
    """Poll `expression` in the page until it is truthy.

    Playwright's wait_for_function re-evaluates its predicate with `new Function` inside the
    page, which the Content-Security-Policy (no 'unsafe-eval') forbids as it should; each
    page.evaluate here goes through the DevTools protocol instead, which the policy does not
    govern.
    """
    deadline = time.monotonic() + timeout_s
    while not page.evaluate(expression):
        if time.monotonic() > deadline:
            raise AssertionError(f"{expression!r} still false after {timeout_s} s")
        time.sleep(0.05)
