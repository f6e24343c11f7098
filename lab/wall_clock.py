"""The wall clock Greenlight's processes read maintenance windows against in a lab run."""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path

from provisioning.clock import wall_clock_record

VARIABLE = "GREENLIGHT_WALL_CLOCK_FILE"


class LabWallClock:
    """The wall-clock time every Greenlight process of a lab run reads maintenance windows
    against: a file they share (GREENLIGHT_WALL_CLOCK_FILE), which a test sets and moves, so a
    window shuts and opens again when the test says, whatever the real time and the CPU load."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)

    @property
    def env(self) -> dict[str, str]:
        """What a child process needs in its environment to read this clock."""
        return {VARIABLE: str(self.path)}

    def set(self, reads: datetime, speed: float = 0.0) -> None:
        """From now on the wall reads `reads`, running at `speed` (0: it stands still)."""
        scratch = self.path.with_name(self.path.name + ".new")
        scratch.write_text(wall_clock_record(reads, speed))
        # A rename is atomic: a worker reading meanwhile sees the old time or the new, never half.
        os.replace(scratch, self.path)
