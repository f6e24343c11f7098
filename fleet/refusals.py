"""Refused requests as events, bounded: a flood of refusals becomes a few summarised rows.

Anyone on the management network can send requests that are refused (an agent check-in with no
token, a malformed result). Each refusal is worth an event for the audit trail, but not each one
as its own row holding whatever text the caller sent: 500 anonymous check-ins were 500 rows, and
one 2 MB serial a 2 MB event. Here a refusal is written at most once per (kind, source) per
window, with the caller's text cut to a limit; the ones in between are counted in the cache
(Redis, shared by every process) and the count rides on the source's next recorded refusal.
A window also holds at most `max_sources` distinct sources per kind, so varying the source
(a new serial per request) buys no more rows; the refusals over that budget are counted too, and
the kind's next recorded event says how many.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

from django.core.cache import cache
from django.utils import timezone

from .events import record, truncate

if TYPE_CHECKING:
    from .models import Event, Node

WINDOW_S = 60
MAX_TEXT = 500
MAX_SOURCES = 20
MAX_ITEMS = 20
# Counts of suppressed refusals wait this long for the source's next refusal to report them.
COUNT_TTL_S = 24 * 3600
ALL_SOURCES = "*"


def bounded(value: Any, limit: int = MAX_TEXT) -> Any:
    """A JSON value with every string cut to `limit` and every list or mapping to MAX_ITEMS."""
    if isinstance(value, str):
        return truncate(value, limit)
    if isinstance(value, dict):
        items = list(value.items())[:MAX_ITEMS]
        return {truncate(str(k), limit): bounded(v, limit) for k, v in items}
    if isinstance(value, list | tuple):
        return [bounded(v, limit) for v in value[:MAX_ITEMS]]
    if value is None or isinstance(value, bool | int | float):
        return value
    return truncate(repr(value), limit)


def _key(kind: str, source: str, what: str) -> str:
    digest = hashlib.sha256(source.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    return f"refusal:{kind}:{digest}:{what}"


def _take_suppressed(kind: str, source: str) -> int:
    """How many refusals from `source` went unrecorded since its last recorded one; resets it."""
    last = cache.get(_key(kind, source, "last"))
    if last is None:
        return 0
    count_key = _key(kind, source, f"count:{last}")
    suppressed = max(int(cache.get(count_key, 1)) - 1, 0)
    cache.delete(count_key)
    return suppressed


def _count_overflow(kind: str) -> None:
    """Count a refusal from a source over the window's budget: reported by the kind's next event."""
    key = _key(kind, ALL_SOURCES, "overflow")
    cache.add(key, 0, timeout=COUNT_TTL_S)
    try:
        cache.incr(key)
    except ValueError:  # expired between add and incr
        cache.add(key, 1, timeout=COUNT_TTL_S)


def _take_overflow(kind: str) -> int:
    """How many refusals of this kind went uncounted by source since the last report; resets it."""
    key = _key(kind, ALL_SOURCES, "overflow")
    overflow = int(cache.get(key, 0))
    if overflow:
        try:
            cache.decr(key, overflow)  # keeps what arrived since the read
        except ValueError:
            pass
    return overflow


def _first_in_window(kind: str, source: str, window: int) -> bool:
    """Count this refusal in its window; True if it is the window's first from `source`."""
    count_key = _key(kind, source, f"count:{window}")
    if cache.add(count_key, 1, timeout=COUNT_TTL_S):
        return True
    try:
        cache.incr(count_key)
    except ValueError:  # expired between add and incr: this one starts the count again
        return cache.add(count_key, 1, timeout=COUNT_TTL_S)
    return False


def record_refusal(
    kind: str,
    *,
    source: str,
    message: str,
    node: Node | None = None,
    data: dict[str, Any] | None = None,
    actor_label: str = "",
    window_s: float = WINDOW_S,
    max_text: int = MAX_TEXT,
    max_sources: int = MAX_SOURCES,
) -> Event | None:
    """Record a refused request, at most once per (kind, source) per window; count the rest.

    `source` says who was refused (the remote address, best: callers choose it, cannot forge
    it). The caller's text in `message`, `data` and `source` is cut to `max_text`. Returns the
    event written, or None when this refusal was only counted.
    """
    window = int(timezone.now().timestamp() // window_s)
    if not _first_in_window(kind, source, window):
        return None
    # A new source in this window: within the kind's budget of sources, or only counted.
    if not _first_in_window(kind, ALL_SOURCES, window):
        sources_key = _key(kind, ALL_SOURCES, f"count:{window}")
        if int(cache.get(sources_key, 0)) > max_sources:
            _count_overflow(kind)
            return None
    suppressed = _take_suppressed(kind, source)
    overflow = _take_overflow(kind)
    cache.set(_key(kind, source, "last"), window, timeout=COUNT_TTL_S)
    text = truncate(message, max_text)
    if suppressed:
        text += f" ({suppressed} more from this source were counted, not recorded)"
    if overflow:
        text += f" ({overflow} from sources over the window's budget were counted, not recorded)"
    return record(
        node,
        kind,
        actor_label=actor_label[:100],  # the column's length
        message=text,
        data={
            **bounded(data or {}, max_text),
            "source": truncate(source, max_text),
            "suppressed_before": suppressed,
            "other_sources_suppressed": overflow,
            "window_s": window_s,
        },
    )
