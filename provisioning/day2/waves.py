"""Waves: a rollout's nodes in growing batches, inside each site's maintenance windows, under
caps per site and per rack, pausing itself when a finished wave failed too many nodes.

Wave 0 holds the first `canary` nodes and each next wave `wave_growth` times the one before; a
wave's nodes start only once every node of the waves before it is settled and none of those
waves failed more than `failure_threshold_pct` of its nodes (the rollout pauses, naming them;
resuming accepts the waves settled so far). A node starts only while its site's maintenance
window is open (fleet/windows.py) and its site and rack are under their caps; the rollout's
concurrency bounds the whole. With no canary, no caps and no windows a rollout is one wave, as
it was before waves.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

from fleet import windows
from fleet.models import MaintenanceWindow, Node, Site

from ..choices import RolloutNodeStatus
from ..models import Rollout, RolloutNode

OPEN = (RolloutNodeStatus.WAITING, RolloutNodeStatus.RUNNING)
MAX_WAVE_SETTING = 1000


class BadWaves(ValueError):
    """A wave setting that is not a whole number in its range; the message names it."""


@dataclass(frozen=True)
class WavePolicy:
    canary: int = 0
    wave_growth: int = 2
    failure_threshold_pct: int = 100
    site_cap: int = 0
    rack_cap: int = 0

    def wave_of(self, order: int) -> int:
        """The wave of the node at `order` (0-based) in the rollout."""
        if self.canary <= 0:
            return 0
        wave, start, size = 0, 0, self.canary
        while order >= start + size:
            start, size, wave = start + size, size * self.wave_growth, wave + 1
        return wave


def spread_over_sites(nodes: list[Node]) -> list[Node]:
    """The nodes in turn from each site (each site's own order kept), so that every wave takes
    from every site and the sites' caps add up, instead of a wave filling one site's cap while
    the others idle. A fleet of one site keeps its order."""
    by_site: dict[int | None, list[Node]] = defaultdict(list)
    for node in nodes:
        by_site[node.rack.site_id if node.rack is not None else None].append(node)
    queues = list(by_site.values())
    return [q[i] for i in range(max(map(len, queues), default=0)) for q in queues if i < len(q)]


def bmc_of(node: Node) -> str:
    """The BMC a node is reached through: its address's host and port (nodes of one blade
    share it, each by its own system's path)."""
    return urlsplit(node.bmc_address.strip().lower()).netloc


RANGES = {
    "canary": (0, MAX_WAVE_SETTING),
    "wave_growth": (1, 100),
    "failure_threshold_pct": (0, 100),
    "site_cap": (0, MAX_WAVE_SETTING),
    "rack_cap": (0, MAX_WAVE_SETTING),
}


def parse_policy(data: Mapping[str, Any]) -> WavePolicy:
    """A wave policy from a form or a request body; BadWaves naming the first wrong setting."""
    values = {}
    for name, (low, high) in RANGES.items():
        value = data.get(name)
        if value is None or value == "":
            continue
        text = str(value).strip()
        if isinstance(value, bool) or not text.isdigit() or not low <= int(text) <= high:
            raise BadWaves(f"{name} must be a whole number from {low} to {high}, not {value!r}")
        values[name] = int(text)
    return WavePolicy(**values)


def policy_of(rollout: Rollout) -> WavePolicy:
    return WavePolicy(**{name: getattr(rollout, name) for name in RANGES})


def tripped(rollout: Rollout, entries: list[RolloutNode]) -> str:
    """Why the rollout must pause: a settled wave it has not been let past failed more than
    its threshold of nodes; "" when none did."""
    by_wave: dict[int, list[RolloutNode]] = defaultdict(list)
    for entry in entries:
        by_wave[entry.wave].append(entry)
    for wave in sorted(by_wave):
        members = by_wave[wave]
        if any(e.status in OPEN for e in members):
            return ""
        failed = [e for e in members if e.status == RolloutNodeStatus.FAILED]
        share = 100 * len(failed) / len(members)
        if wave >= rollout.waves_cleared and share > rollout.failure_threshold_pct:
            named = "; ".join(f"{e.node.serial}: {e.reason or 'failed'}" for e in failed[:5])
            more = f" and {len(failed) - 5} more" if len(failed) > 5 else ""
            return (
                f"wave {wave + 1} failed {len(failed)} of {len(members)} nodes ({share:.0f}% > "
                f"{rollout.failure_threshold_pct}%): {named}{more}"
            )[:300]
    return ""


def current_wave(entries: list[RolloutNode]) -> int | None:
    """The lowest wave with a node waiting or in flight: the one that may start nodes."""
    open_waves = [e.wave for e in entries if e.status in OPEN]
    return min(open_waves) if open_waves else None


def settled_waves(entries: list[RolloutNode]) -> int:
    """How many waves from the first are wholly settled (what resuming accepts)."""
    waves = sorted({e.wave for e in entries})
    for wave in waves:
        if any(e.status in OPEN for e in entries if e.wave == wave):
            return wave
    return (waves[-1] + 1) if waves else 0


@dataclass
class Gate:
    """Which waiting node of the current wave may start now: its site's window is open, its
    site and rack are under their caps, and no other node behind its BMC is in flight (a BMC
    serving several nodes, as a blade chassis's does, takes one update at a time). Counts what
    it lets through."""

    rollout: Rollout
    now: datetime
    in_flight_sites: Counter = field(default_factory=Counter)
    in_flight_racks: Counter = field(default_factory=Counter)
    in_flight_bmcs: dict[str, str] = field(default_factory=dict)
    _windows: dict[int, list[windows.Window]] = field(default_factory=dict)
    _zones: dict[int, Any] = field(default_factory=dict)
    # Sites whose windows cannot be read (a zone or weekday the admin's checks never saw, as a
    # raw edit of the rows could leave): their nodes wait, saying why, and nothing else stops.
    _unreadable: dict[int, str] = field(default_factory=dict)

    @classmethod
    def of(cls, rollout: Rollout, entries: list[RolloutNode], now: datetime) -> Gate:
        gate = cls(rollout, now)
        for entry in entries:
            if entry.status == RolloutNodeStatus.RUNNING:
                gate.count(entry)
        site_ids = {e.node.rack.site_id for e in entries if e.node.rack is not None}
        for window in MaintenanceWindow.objects.filter(site_id__in=site_ids):
            try:
                gate._windows.setdefault(window.site_id, []).append(window.as_window())
            except windows.BadWindow as exc:
                gate._unreadable[window.site_id] = f"window {window}: {exc}"
        for site in Site.objects.filter(pk__in=gate._windows):
            try:
                gate._zones[site.pk] = windows.zone(site.time_zone)
            except windows.BadWindow as exc:
                gate._unreadable[site.pk] = str(exc)
        return gate

    def count(self, entry: RolloutNode) -> None:
        self.in_flight_bmcs.setdefault(bmc_of(entry.node), entry.node.serial)
        rack = entry.node.rack
        if rack is not None:
            self.in_flight_racks[rack.pk] += 1
            self.in_flight_sites[rack.site_id] += 1

    def refusal(self, entry: RolloutNode) -> str:
        """Why the entry waits now, or "" when it may start."""
        busy = self.in_flight_bmcs.get(bmc_of(entry.node))
        if busy and busy != entry.node.serial:
            return f"waiting: its BMC is busy with {busy} (one node per BMC at a time)"
        rack = entry.node.rack
        if rack is None:
            return ""
        unreadable = self._unreadable.get(rack.site_id)
        if unreadable:
            return f"waiting: {rack.site.name}'s maintenance windows cannot be read ({unreadable})"
        site_windows = self._windows.get(rack.site_id, [])
        zone = self._zones.get(rack.site_id)
        if site_windows and zone and not windows.is_open(site_windows, zone, self.now):
            opens = windows.next_opening(site_windows, zone, self.now)
            when = f" (opens {opens:%a %H:%M} {zone.key})" if opens else ""
            return f"waiting for {rack.site.name}'s maintenance window{when}"
        cap = self.rollout.site_cap
        if cap and self.in_flight_sites[rack.site_id] >= cap:
            return f"waiting: {cap} node(s) of {rack.site.name} in flight (the site cap)"
        cap = self.rollout.rack_cap
        if cap and self.in_flight_racks[rack.pk] >= cap:
            return f"waiting: {cap} node(s) of rack {rack.name} in flight (the rack cap)"
        return ""
