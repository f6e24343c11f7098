"""The agents this process hears from: the fleet's size as the agents' API sees it.

The poll budget (intervals.budget_floor_s) spreads the idle agents' polls so the fleet asks at
most so many times a second. It needs how many agents are polling, and reads it here, from the
polls this process answered, so that knowing it costs no query. A site's node-plane processes
each see nearly every agent within the window (an agent's polls land on any of them), so each
counts about the whole fleet and the budget holds for the site, not per process.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable


class LiveAgents:
    """Distinct agent sessions that polled within the last `window_s` real seconds."""

    def __init__(self, window_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.window_s = window_s
        self._clock = clock
        self._last_poll: dict[int, float] = {}
        self._lock = threading.Lock()
        self._pruned_at = clock()

    def saw(self, session_id: int) -> None:
        """The session's agent polled now."""
        with self._lock:
            self._last_poll[session_id] = self._clock()

    def count(self) -> int:
        """How many sessions polled within the window (the stale ones forgotten at most once a
        second: a fleet of 5,000 is a dictionary walk of 5,000, not one a poll)."""
        now = self._clock()
        with self._lock:
            if now - self._pruned_at >= 1.0:
                cutoff = now - self.window_s
                self._last_poll = {k: t for k, t in self._last_poll.items() if t >= cutoff}
                self._pruned_at = now
            return len(self._last_poll)

    def forget(self) -> None:
        """Start counting afresh (a test's fleet, not the one before it)."""
        with self._lock:
            self._last_poll.clear()
