"""Query counts pinned in tests/query_counts.json: each test checks (or rewrites) its own pages.

After a deliberate change, rerun the tests with UPDATE_QUERY_COUNTS=1 to rewrite the counts of
the pages they measure, and commit the file with the change.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

from django.db import connection
from django.test.utils import CaptureQueriesContext

PINNED = Path(__file__).resolve().parents[1] / "query_counts.json"


def count_queries(request: Callable[[], object]) -> int:
    """How many queries one call of `request` makes (a streamed body is read to its end)."""
    with CaptureQueriesContext(connection) as ctx:
        response = request()
        if getattr(response, "streaming", False):
            b"".join(response.streaming_content)  # type: ignore[attr-defined]
    return len(ctx.captured_queries)


def assert_pinned(counts: dict[str, int]) -> None:
    """Each page's count is the pinned one (UPDATE_QUERY_COUNTS=1: pin these counts instead)."""
    pinned = json.loads(PINNED.read_text())
    if os.environ.get("UPDATE_QUERY_COUNTS"):
        pinned.update(counts)
        PINNED.write_text(json.dumps(pinned, indent=2, sort_keys=True) + "\n")
    assert counts == {name: pinned.get(name) for name in counts}
