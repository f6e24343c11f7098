"""The lab's clock: lab seconds run `speed` times faster than real ones, and tests can step it."""

from __future__ import annotations

import threading
import time


class LabClock:
    """Lab time in seconds since the hall started: real elapsed x speed, plus manual steps.

    speed=0 stops the clock entirely, so a test moves time only with advance() and never
    races a real clock.
    """

    def __init__(self, speed: float = 1.0) -> None:
        if speed < 0:
            raise ValueError("speed must be >= 0")
        self.speed = speed
        self._real_start = time.monotonic()
        self._offset = 0.0
        self._lock = threading.Lock()

    def now(self) -> float:
        """Lab seconds elapsed."""
        with self._lock:
            return (time.monotonic() - self._real_start) * self.speed + self._offset

    def advance(self, seconds: float) -> float:
        """Move lab time forward (tests, or a demo skipping a long soak); returns the new now."""
        if seconds < 0:
            raise ValueError("lab time only moves forward")
        with self._lock:
            self._offset += seconds
        return self.now()

    def real_seconds(self, lab_seconds: float) -> float:
        """How long lab_seconds take in real time (inf when the clock is stopped)."""
        return lab_seconds / self.speed if self.speed else float("inf")
