"""Refused requests become a few bounded events, however many arrive and whatever text they carry.

Time is an input: each test puts "now" in a window of its own, far from any other test's, so the
counts in the shared cache never meet.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest

from fleet import refusals
from fleet.choices import EventKind
from fleet.events import MAX_MESSAGE, record
from fleet.models import Event

pytestmark = pytest.mark.django_db

KIND = EventKind.AGENT_REFUSED


@pytest.fixture
def clock(monkeypatch):
    """A settable "now", starting in a window no other test uses."""
    start = datetime(2300, 1, 1, tzinfo=UTC) + timedelta(days=uuid.uuid4().int % 100_000)
    now = {"t": start}
    monkeypatch.setattr(refusals.timezone, "now", lambda: now["t"])

    def advance(seconds: float) -> None:
        now["t"] += timedelta(seconds=seconds)

    return advance


def refuse(source: str, message: str = "no token", **kw):
    return refusals.record_refusal(KIND, source=source, message=message, **kw)


def test_a_flood_from_one_source_is_one_event_per_window_with_the_count(clock):
    source = f"10.9.{uuid.uuid4().int % 250}.7"
    written = [refuse(source) for _ in range(500)]
    assert sum(e is not None for e in written) == 1
    assert Event.objects.filter(kind=KIND, data__source=source).count() == 1

    clock(refusals.WINDOW_S)
    event = refuse(source)
    assert event is not None
    assert event.data["suppressed_before"] == 499
    assert event.message == "no token (499 more from this source were counted, not recorded)"
    assert Event.objects.filter(kind=KIND, data__source=source).count() == 2


def test_the_callers_text_is_cut_to_the_limit(clock):
    serial = "S" * 2_000_000
    event = refuse(
        serial, message=f"unknown serial {serial}", data={"serial": serial, "macs": [5] * 1000}
    )
    assert len(event.message) < refusals.MAX_TEXT + 40
    assert event.message.endswith("(2000015 characters)")
    assert len(event.data["source"]) < refusals.MAX_TEXT + 40
    assert len(event.data["serial"]) < refusals.MAX_TEXT + 40
    assert event.data["macs"] == [5] * refusals.MAX_ITEMS


def test_a_new_source_per_request_buys_no_more_than_the_kinds_budget(clock):
    kind = EventKind.ATTENTION  # a kind of its own: the overflow count is per kind, not window
    refusals._take_overflow(kind)  # whatever an earlier run left
    tag = uuid.uuid4().hex[:8]
    written = [
        refusals.record_refusal(kind, source=f"serial-{tag}-{i}", message="no token")
        for i in range(200)
    ]
    assert sum(e is not None for e in written) == refusals.MAX_SOURCES
    assert Event.objects.filter(kind=kind, data__source__startswith=f"serial-{tag}-").count() == (
        refusals.MAX_SOURCES
    )
    # The ones over the budget are not lost: the kind's next event says how many.
    clock(refusals.WINDOW_S)
    event = refusals.record_refusal(kind, source=f"serial-{tag}-next", message="no token")
    assert event.data["other_sources_suppressed"] == 200 - refusals.MAX_SOURCES
    assert "(180 from sources over the window's budget were counted, not recorded)" in (
        event.message
    )


def test_bounded_keeps_small_values_as_they_are():
    value = {"a": 1, "b": [True, None, 2.5], "c": {"d": "short"}}
    assert refusals.bounded(value) == value


def test_every_event_message_is_bounded():
    event = record(None, EventKind.TEST, message="x" * 3_000_000)
    assert len(event.message) <= MAX_MESSAGE + 40
    assert event.message.endswith("(3000000 characters)")
