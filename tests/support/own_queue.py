"""A Celery queue of a test's own, for tests whose workers run beside other sessions' tests.

Test sessions run with `-n 0` all default to the queue "greenlight" on the checkout's embedded
Redis: a worker of another session would take this test's tasks and run them against its own
database. The test process routes what it sends (Celery reads task_default_queue at each send),
and lab.processes.child_env hands the workers it starts the same name.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager

from greenlight.celery import app


@contextmanager
def own_queue(settings) -> Iterator[str]:
    """Send to, and start workers on, a queue named for this test; `settings` is pytest-django's
    fixture (it restores the setting)."""
    name = f"test-{os.getpid()}-{time.monotonic_ns()}"
    before = app.conf.task_default_queue
    settings.CELERY_TASK_DEFAULT_QUEUE = name
    app.conf.task_default_queue = name
    try:
        yield name
    finally:
        app.conf.task_default_queue = before
