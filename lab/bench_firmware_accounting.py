"""What the firmware-wave benchmark reports, counted from the rollout's rows: how many nodes (or
BMC updates) were in flight at once, overall and per site, and each wave's span.

Plain functions over spans, so a test checks the counting itself with spans it made up.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any


@dataclass(frozen=True)
class Span:
    """One node's time in flight (or one BMC's update), in the group it counts against."""

    group: str
    start: datetime
    end: datetime


def peak(spans: Iterable[Span]) -> int:
    """The most spans open at one instant. One ending when another starts is not overlap: the
    gate starts a node in the same advance that settles the one before."""
    events = sorted(
        [(s.start, 1) for s in spans] + [(s.end, -1) for s in spans],
        key=lambda event: (event[0], event[1]),  # ends (-1) before starts at the same instant
    )
    most = now = 0
    for _, step in events:
        now += step
        most = max(most, now)
    return most


def peaks_by_group(spans: Iterable[Span]) -> dict[str, int]:
    """`peak` of each group's spans, by group name."""
    groups: dict[str, list[Span]] = defaultdict(list)
    for span in spans:
        groups[span.group].append(span)
    return {name: peak(members) for name, members in sorted(groups.items())}


def caps_honoured(peaks: dict[str, int], cap: int) -> bool:
    """Whether no group ever had more than `cap` in flight (0: no cap)."""
    return cap == 0 or all(most <= cap for most in peaks.values())


def rounds(by_site: dict[str, int], site_cap: int, concurrency: int) -> int:
    """How many node-times a wave takes at the least: its busiest site's nodes through the site
    cap, and all its nodes through the concurrency, whichever is slower."""
    nodes = sum(by_site.values())
    through_cap = max((-(-n // site_cap) for n in by_site.values()), default=0) if site_cap else 0
    return max(through_cap, -(-nodes // concurrency))


@dataclass(frozen=True)
class Row:
    """One node of the rollout: its wave (0-based), site, status and time in flight."""

    wave: int
    site: str
    status: str
    start: datetime | None
    end: datetime | None


def waves(rows: Iterable[Row], speed: float, site_cap: int, concurrency: int) -> list:
    """Each wave (numbered from 1, as the rollout's page prints it): its nodes per site and by
    outcome, its span in lab seconds, and the fewest node-times the caps allow it (`rounds`)."""
    by_wave: dict[int, list[Row]] = defaultdict(list)
    for row in rows:
        by_wave[row.wave].append(row)
    out: list[dict[str, Any]] = []
    for wave, members in sorted(by_wave.items()):
        starts = [row.start for row in members if row.start is not None]
        ends = [row.end for row in members if row.end is not None]
        span = (max(ends) - min(starts)).total_seconds() if starts and ends else None
        counts: dict[str, int] = defaultdict(int)
        sites: dict[str, int] = defaultdict(int)
        for row in members:
            counts[row.status] += 1
            sites[row.site] += 1
        out.append(
            {
                "wave": wave + 1,
                "nodes": len(members),
                **dict(sorted(counts.items())),
                "by_site": dict(sorted(sites.items())),
                "rounds": rounds(sites, site_cap, concurrency),
                "lab_s": round(span * speed, 1) if span is not None else None,
            }
        )
    return out
