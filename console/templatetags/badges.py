"""`{% state_badge entry %}`: a lifecycle state's badge (colour, icon, label, optional count).

A tag, not an `{% include %}`: the fleet overview draws one badge per state per rack, over a
thousand at 5,000 nodes, and an include costs a context copy and a template render each, which
was most of the page's server time. The markup is the one the board's fragments always had; a
state's part of it is escaped once per process, only the count is written per badge.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from django import template
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

register = template.Library()


@cache
def _badge_head(color: str, label: str, icon: str) -> str:
    label = escape(label)
    return (
        f'<span class="badge c-{escape(color)}" title="{label}">'
        f'<span class="ico" aria-hidden="true">{escape(icon)}</span> {label}'
    )


@register.simple_tag
def state_badge(entry: Any) -> SafeString:
    """The badge of a board.StateCount (with its count) or a board.LegendEntry (without)."""
    count = getattr(entry, "count", None)
    tail = f" <b>{int(count)}</b></span>" if count is not None else "</span>"
    # The head is escaped in _badge_head and the count is an int: nothing else reaches the page.
    return mark_safe(_badge_head(str(entry.color), str(entry.label), str(entry.icon)) + tail)
