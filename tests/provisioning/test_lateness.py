"""Time Greenlight itself was late to look is not charged to a phase's deadline."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from provisioning.core.engine import excuse_lateness
from provisioning.models import PhaseRecord, Run
from tests.factories import make_node


def _waiting_phase(manifest) -> PhaseRecord:
    run = Run.objects.create(node=make_node(), manifest=manifest, status="waiting")
    return PhaseRecord.objects.create(
        run=run, phase="wait_for_host_os", order=1, status="waiting",
        started_at=timezone.now(), deadline_at=timezone.now() + timedelta(seconds=4.5),
    )  # fmt: skip


@pytest.mark.django_db
@pytest.mark.parametrize(("speed", "late_s", "excused"), [(1, 0.5, False), (400, 0.5, True)])
def test_lateness_is_excused_in_node_time(manifest, settings, speed, late_s, excused):
    # Half a real second is nothing at speed 1 but 200 node seconds in a lab at speed 400:
    # summed over a phase's looks it would fail a healthy node for Greenlight's own delays.
    settings.GREENLIGHT_TIME_SCALE = speed
    record = _waiting_phase(manifest)
    before = record.deadline_at
    excuse_lateness(record.run, timedelta(seconds=late_s))
    record.refresh_from_db()
    assert (record.deadline_at > before) is excused
