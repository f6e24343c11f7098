"""Repeated events fold into one line with a count: the plain function, then the panel."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.urls import reverse

from console.folding import fold_events
from console.panel import EVENT_TAIL, node_panel
from fleet.choices import EventKind
from fleet.models import Event

T0 = datetime(2026, 11, 24, 18, 40, 2, tzinfo=UTC)
WAIT = (EventKind.PHASE_WAITING, "bmc_firmware: BMC task 7 at 40%")


def ev(kind: str, message: str, minute: int) -> Event:
    return Event(kind=kind, message=message, created_at=T0 + timedelta(minutes=minute))


def test_consecutive_identical_events_fold_into_one_group_with_a_count():
    newest_first = [
        ev(EventKind.PHASE_DONE, "bmc_firmware", 13),
        *[ev(*WAIT, m) for m in range(12, 0, -1)],
        ev(EventKind.PHASE_STARTED, "bmc_firmware", 0),
    ]
    groups = fold_events(newest_first)
    assert [(g.newest.kind, g.count) for g in groups] == [
        (EventKind.PHASE_DONE, 1),
        (EventKind.PHASE_WAITING, 12),
        (EventKind.PHASE_STARTED, 1),
    ]
    waiting = groups[1]
    assert waiting.first_at == T0 + timedelta(minutes=1)
    assert waiting.last_at == T0 + timedelta(minutes=12)


def test_only_consecutive_events_fold_and_a_different_message_breaks_the_run():
    events = [
        ev(*WAIT, 5),
        ev(EventKind.PHASE_WAITING, "bmc_firmware: BMC task 7 at 80%", 4),
        ev(*WAIT, 3),
        ev(EventKind.AGENT_CHECKIN, WAIT[1], 2),  # the same words, another kind
        ev(*WAIT, 1),
        ev(*WAIT, 0),
    ]
    assert [g.count for g in fold_events(events)] == [1, 1, 1, 1, 2]


def test_the_limit_counts_lines_not_events():
    events = [ev(*WAIT, m) for m in range(30, 0, -1)] + [
        ev(EventKind.PHASE_STARTED, str(m), -m) for m in range(1, 5)
    ]
    groups = fold_events(events, limit=3)
    assert [g.count for g in groups] == [30, 1, 1]
    assert fold_events([]) == []


@pytest.mark.django_db
def test_the_panel_shows_a_long_wait_once_with_its_count_and_zoned_times(client, bob, node):
    Event.objects.create(
        node=node, kind=EventKind.PHASE_STARTED, message="bmc_firmware", created_at=T0
    )
    for m in range(1, 41):
        Event.objects.create(
            node=node, kind=WAIT[0], message=WAIT[1], created_at=T0 + timedelta(minutes=m)
        )
    panel = node_panel(node)
    assert [g.count for g in panel.event_groups[:2]] == [40, 1]
    assert len(panel.event_groups) <= EVENT_TAIL

    client.force_login(bob)
    html = client.get(reverse("console:node-panel", args=[node.pk])).content.decode()
    assert html.count("BMC task 7 at 40%") == 1
    assert 'data-count="40"' in html
    assert "×40, last " in html
    # Every event time carries its date and zone, in the text and in the title.
    assert '<time datetime="2026-11-24T18:41:02+00:00" title="2026-11-24 18:41:02 UTC">' in html
    assert ">2026-11-24 19:20:02 UTC</time>" in html
    assert ">2026-11-24 18:40:02 UTC</time>" in html
