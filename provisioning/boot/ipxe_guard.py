"""The iPXE endpoint's guard: its misses are counted, recorded and throttled per source.

Anyone on the management network can ask /boot/v1/ipxe for any MAC. A hit answers only the node
whose armed boot awaits its script; everything else is a miss, and a MAC scan is a stream of
misses from one address. Each source may miss so often per minute; past that it is answered 429
without a database read until the minute ends. Misses are bounded refusal events (a scan is a
few rows with counts, not a row per guess) and running totals in the cache, shared by every web
process, that /metrics reports.
"""

from __future__ import annotations

import hashlib

from django.core.cache import cache
from django.utils import timezone
from redis.exceptions import RedisError

from fleet.choices import EventKind
from fleet.refusals import record_refusal

WINDOW_S = 60
# A node's boot asks once (its firmware retries a few times on errors): 30 misses a minute from
# one address is a scan, or a misconfigured DHCP relay worth an operator's look.
MISSES_PER_WINDOW = 30
MISSES_TOTAL = "ipxe:misses_total"
THROTTLED_TOTAL = "ipxe:throttled_total"
# The running totals outlive any scrape interval by far; losing Redis resets them, as a
# Prometheus counter may.
TOTAL_TTL_S = 30 * 24 * 3600


def _window_key(source: str) -> str:
    digest = hashlib.sha256(source.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    window = int(timezone.now().timestamp() // WINDOW_S)
    return f"ipxe:misses:{digest}:{window}"


def _incr(key: str, timeout: int) -> int:
    cache.add(key, 0, timeout=timeout)
    try:
        return cache.incr(key)
    except ValueError:  # expired between add and incr
        cache.add(key, 1, timeout=timeout)
        return 1


def throttled(source: str) -> bool:
    """Whether `source` has missed too often this minute (then it is counted, not looked up).

    No, while the cache cannot be read: the counts live in Redis, and during its failover a
    guard that failed every request would refuse the boots of the very nodes it serves (a
    node's firmware tries its iPXE script a few times, then boots the next device)."""
    try:
        if int(cache.get(_window_key(source), 0)) < MISSES_PER_WINDOW:
            return False
        _incr(THROTTLED_TOTAL, TOTAL_TTL_S)
    except RedisError:
        return False
    return True


def miss(source: str, why: str) -> None:
    """Count a miss against `source` and record it (bounded per source and minute)."""
    _incr(_window_key(source), 2 * WINDOW_S)
    _incr(MISSES_TOTAL, TOTAL_TTL_S)
    record_refusal(
        EventKind.BOOT_REFUSED,
        source=source or "unknown",
        message=f"iPXE script refused: {why}",
        data={"remote": source},
        actor_label=f"boot@{source}" if source else "boot",
    )


def totals() -> dict[str, int]:
    """Misses and throttled requests so far, fleet-wide: what /metrics reports."""
    return {
        "misses": int(cache.get(MISSES_TOTAL, 0)),
        "throttled": int(cache.get(THROTTLED_TOTAL, 0)),
    }
