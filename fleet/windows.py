"""Maintenance windows: when a site lets Greenlight take nodes out for firmware and upgrades.

A site with no window is always open. A window is a span of local time on chosen weekdays, in
the site's own time zone (daylight saving included); one whose end is before its start runs past
midnight into the next day, and belongs to the day it starts on.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, time, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

WEEKDAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")


class BadWindow(ValueError):
    """A window or time zone that cannot be read; the message says what is wrong."""


@dataclass(frozen=True)
class Window:
    """Open from `start` to `end` local time on `days` (0 is Monday)."""

    days: frozenset[int]
    start: time
    end: time

    def spans(self, day: datetime) -> tuple[datetime, datetime]:
        """When the window opening on `day` (local) opens and closes."""
        opens = day.replace(hour=self.start.hour, minute=self.start.minute, second=0, microsecond=0)
        closes = day.replace(hour=self.end.hour, minute=self.end.minute, second=0, microsecond=0)
        if closes <= opens:
            closes += timedelta(days=1)
        return opens, closes


def zone(name: str) -> ZoneInfo:
    """The IANA time zone `name`; BadWindow naming it if there is no such zone."""
    try:
        if name not in available_timezones():
            raise ZoneInfoNotFoundError(name)
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise BadWindow(f"{name!r} is not an IANA time zone (e.g. Europe/Berlin, UTC)") from None


def parse_days(text: str) -> frozenset[int]:
    """Weekdays from "mon,tue" or "sat-sun" or "daily"; BadWindow naming a wrong word."""
    words = [w.strip().lower() for w in str(text).split(",") if w.strip()]
    if words == ["daily"]:
        return frozenset(range(7))
    days: set[int] = set()
    for word in words:
        first, _, last = word.partition("-")
        if first not in WEEKDAYS or (last and last not in WEEKDAYS):
            raise BadWindow(
                f"{word!r} is not a weekday: use mon..sun, ranges like mon-fri, or daily"
            )
        a, b = WEEKDAYS.index(first), WEEKDAYS.index(last or first)
        days.update(range(a, b + 1) if a <= b else [*range(a, 7), *range(0, b + 1)])
    if not days:
        raise BadWindow("a window needs at least one weekday")
    return frozenset(days)


def is_open(windows: Iterable[Window], tz: ZoneInfo, at: datetime) -> bool:
    """Whether `at` falls inside one of the windows (always, with none)."""
    windows = list(windows)
    if not windows:
        return True
    local = at.astimezone(tz)
    for window in windows:
        # Yesterday's window may run past midnight into today.
        for day in (local - timedelta(days=1), local):
            if day.weekday() in window.days:
                opens, closes = window.spans(day)
                if opens <= local < closes:
                    return True
    return False


def next_opening(windows: Iterable[Window], tz: ZoneInfo, at: datetime) -> datetime | None:
    """When the next window opens after `at` (in the site's zone); None with no windows."""
    local = at.astimezone(tz)
    starts = [
        window.spans(local + timedelta(days=offset))[0]
        for window in windows
        for offset in range(8)
        if (local + timedelta(days=offset)).weekday() in window.days
    ]
    later = [start for start in starts if start > local]
    return min(later) if later else None
