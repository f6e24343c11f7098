"""Celery beat that sends only while it holds the beat lease: a second beat started alongside does
nothing until the first one's lease lapses, then takes over.

Configured as CELERY_BEAT_SCHEDULER. Each beat is Celery's own PersistentScheduler (the
`-s` schedule file) with one change: before a tick sends anything, the beat must hold the lease
row "celery-beat" (common/leases.py). The holder renews it every third of
GREENLIGHT_BEAT_LEASE_S and stops sending a third before it would lapse unrenewed; a beat that
does not hold it looks again every third of the lease. A beat stopped cleanly hands its lease
back at once; a killed one is taken over once its lease has lapsed. Only Celery's public
scheduler API is used: `tick()`, `close()` and `max_interval`.
"""

from __future__ import annotations

import logging
import os
import socket
import uuid
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from celery.beat import PersistentScheduler
from django.conf import settings
from django.db import DatabaseError, close_old_connections, transaction
from django.utils import timezone

from . import leases
from .leases import LeaseState

logger = logging.getLogger(__name__)

BEAT_LEASE = "celery-beat"
# After a database error, the holder tries to renew again this soon (seconds).
RETRY_S = 1.0


def process_name() -> str:
    """This process, as a lease names its holder: host, pid and a nonce (a pid is reused)."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


class LeasedScheduler(PersistentScheduler):
    """Celery's persistent beat scheduler, sending only while it holds the beat lease."""

    max_interval: float  # Celery's own attribute, untyped there

    def __init__(
        self,
        *args: Any,
        holder: str | None = None,
        clock: Callable[[], datetime] = timezone.now,
        **kwargs: Any,
    ) -> None:
        self.holder = holder or process_name()
        self.clock = clock  # the lease's clock; the entries keep Celery's own
        self.lease_s = float(settings.GREENLIGHT_BEAT_LEASE_S)
        self.renew_s = self.lease_s / 3
        self.lease: LeaseState | None = None
        self.renew_at: datetime | None = None
        super().__init__(*args, **kwargs)
        # Beat sleeps up to max_interval between ticks: never past the next renewal.
        self.max_interval = min(self.max_interval, self.renew_s)

    def tick(self, *args: Any, **kwargs: Any) -> float:
        """Send what is due if this beat holds the lease; return how long to sleep."""
        now = self.clock()
        if self.renew_at is None or now >= self.renew_at:
            self.check_lease(now)
        if not self.sends(now):
            return self.renew_s
        assert self.renew_at is not None  # set by check_lease whenever the lease is held
        until_renewal = max((self.renew_at - now).total_seconds(), 0.0)
        return min(super().tick(*args, **kwargs), until_renewal)

    def sends(self, now: datetime) -> bool:
        """Whether this beat holds the lease with a third of it to spare."""
        if self.lease is None or not self.lease.held:
            return False
        return now < self.lease.expires_at - timedelta(seconds=self.renew_s)

    def check_lease(self, now: datetime) -> None:
        """Take, renew or look at the lease, and say when its holder changes."""
        # Beat keeps one connection for its life: replace it when broken or past CONN_MAX_AGE,
        # as a request would. Not inside a caller's transaction (a test's), which it would end.
        if transaction.get_autocommit():
            close_old_connections()
        try:
            state = leases.hold(BEAT_LEASE, self.holder, self.lease_s, now=now)
        except DatabaseError:
            # The lease held so far still stands (nobody takes it before it lapses): send on
            # until a third before it would, and try again soon.
            logger.warning("beat %s could not reach its lease", self.holder, exc_info=True)
            self.renew_at = now + timedelta(seconds=RETRY_S)
            return
        self.tell(self.lease, state)
        self.lease = state
        self.renew_at = now + timedelta(seconds=self.renew_s)

    def tell(self, before: LeaseState | None, after: LeaseState) -> None:
        """Log a change of the lease's holder, as seen from this beat."""
        was_held = before is not None and before.held
        if after.held and after.taken_from:
            logger.warning(
                "beat %s took over the periodic tasks from %s, whose lease lapsed unrenewed",
                self.holder,
                after.taken_from,
            )
        elif after.held and not was_held:
            logger.info("beat %s holds the lease: it sends the periodic tasks", self.holder)
        elif was_held and not after.held:
            logger.warning(
                "beat %s lost the lease to %s: it stops sending the periodic tasks",
                self.holder,
                after.holder or "nobody",
            )
        elif not after.held and (before is None or before.holder != after.holder):
            logger.warning(
                "beat %s stands by: %s holds the lease until %s and sends the periodic tasks",
                self.holder,
                after.holder,
                after.expires_at.isoformat(timespec="seconds"),
            )

    def close(self) -> None:
        """Close the schedule file and hand the lease back, so a standing-by beat takes over."""
        try:
            super().close()
        finally:
            if self.lease is not None and self.lease.held:
                try:
                    leases.release(BEAT_LEASE, self.holder, now=self.clock())
                except DatabaseError:
                    logger.warning("beat %s could not hand its lease back", self.holder)
                self.lease = None
