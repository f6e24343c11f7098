"""Folding a node's event feed: a run of identical events reads as one line with a count.

A waiting phase records "Phase waiting" every time it looks again; twelve of those in a row say
nothing twelve lines do not say once, and they push the events a person came for off the panel.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime

from fleet.models import Event


@dataclass
class EventGroup:
    """Consecutive events of the same kind and message, newest first as the feed is."""

    events: list[Event] = field(default_factory=list)

    @property
    def newest(self) -> Event:
        return self.events[0]

    @property
    def count(self) -> int:
        return len(self.events)

    @property
    def first_at(self) -> datetime:
        """When the run of events began (its oldest one)."""
        return self.events[-1].created_at

    @property
    def last_at(self) -> datetime:
        """When it last happened (its newest one)."""
        return self.events[0].created_at


def same_event(a: Event, b: Event) -> bool:
    """Whether two events say the same thing: the same kind and the same words."""
    return a.kind == b.kind and a.message == b.message


def fold_events(events: Iterable[Event], limit: int | None = None) -> list[EventGroup]:
    """Fold consecutive identical events (in the order given) into groups; at most `limit`."""
    groups: list[EventGroup] = []
    for event in events:
        if groups and same_event(groups[-1].newest, event):
            groups[-1].events.append(event)
            continue
        if limit is not None and len(groups) == limit:
            break
        groups.append(EventGroup([event]))
    return groups
