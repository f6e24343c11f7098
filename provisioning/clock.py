"""Greenlight's notion of time: wall time, scaled by GREENLIGHT_TIME_SCALE.

Production runs at scale 1. The lab runs its hall faster (a 78-minute run in seconds) and sets the
same factor here, so a "20 minute" phase limit is 20 lab minutes and every wait stays in
proportion. Durations in manifests and phase definitions are always in node (lab) seconds.

Maintenance windows are read against `wall_now()`: the real clock, unless a lab process names a
file in GREENLIGHT_WALL_CLOCK_FILE (lab mode only, provisioning/checks.py) that says what the
wall reads; the lab writes it (`wall_clock_record`) to shut a window and open the next one.
"""

from __future__ import annotations

import json
import time
from datetime import datetime, timedelta
from pathlib import Path

from django.conf import settings
from django.utils import timezone


def now() -> datetime:
    return timezone.now()


def wall_now() -> datetime:
    """The wall-clock time maintenance windows are read against (the real one by default)."""
    path = settings.GREENLIGHT_WALL_CLOCK_FILE
    if not (path and settings.GREENLIGHT_LAB_MODE and Path(path).exists()):
        # Production; or a lab whose test has not set the time yet.
        return timezone.now()
    return _steered(Path(path))


def wall_clock_record(reads: datetime, speed: float = 0.0) -> str:
    """The file's text: the wall reads `reads` now and runs on at `speed` (0: it stands)."""
    if reads.tzinfo is None:
        raise ValueError("a wall-clock time needs its time zone")
    return json.dumps({"reads": reads.isoformat(), "since": time.time(), "speed": speed})


def _steered(path: Path) -> datetime:
    try:
        record = json.loads(path.read_text())
        reads = datetime.fromisoformat(record["reads"])
        elapsed = (time.time() - float(record["since"])) * float(record["speed"])
        if reads.tzinfo is None:
            raise ValueError(f"{record['reads']!r} has no time zone")
    except (OSError, ValueError, KeyError, TypeError) as exc:
        # Never the real clock instead: a window read against the wrong time takes nodes out.
        raise ValueError(f"the wall clock in {path} cannot be read: {exc}") from None
    return reads + timedelta(seconds=elapsed)


def scale() -> float:
    return max(float(settings.GREENLIGHT_TIME_SCALE), 1e-6)


def real_delta(node_seconds: float) -> timedelta:
    """The wall-clock span of `node_seconds` of node time."""
    return timedelta(seconds=node_seconds / scale())


def window(node_seconds: float) -> timedelta:
    """The real span a phase limit of `node_seconds` gives: never under the real-time floor.

    What a phase waits on also takes real seconds that no clock scale shrinks (a process starting,
    a TLS handshake, a queue's lag): at the demo's 600x, 20 node minutes are 2 real seconds, less
    than its web server takes to start. At scale 1 every limit is far above the floor.
    """
    return max(real_delta(node_seconds), timedelta(seconds=settings.GREENLIGHT_PHASE_MIN_REAL_S))


def limit_text(node_seconds: float) -> str:
    """A phase limit in words, saying so when the real-time floor is what holds."""
    text = minutes_text(node_seconds)
    if real_delta(node_seconds) < window(node_seconds):
        text += f" (at least {settings.GREENLIGHT_PHASE_MIN_REAL_S:g} real s)"
    return text


def node_seconds(span: timedelta) -> float:
    """Node (lab) seconds elapsed in a wall-clock span."""
    return span.total_seconds() * scale()


def minutes_text(seconds: float) -> str:
    """Human text for a node-time duration: '45 s', '4 min', '2.5 h'."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
