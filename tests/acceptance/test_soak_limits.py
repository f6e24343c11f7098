"""A soak's phase limit follows the profile's soak length, so a 72-hour soak is never cut off."""

from __future__ import annotations

import pytest

from provisioning.models import PhaseRecord, Run
from provisioning.phases import phase_for
from provisioning.phases.base import PhaseContext


@pytest.mark.django_db
@pytest.mark.parametrize(("phase", "at_least"), [("gate:burn_in", 72 * 3600), ("preflight", 600)])
def test_phase_limits(node, manifest, profile, phase, at_least):
    run = Run.objects.create(node=node, manifest=manifest)
    record = PhaseRecord(run=run, phase=phase, order=0)
    ctx = PhaseContext(run=run, node=node, record=record, manifest=manifest.spec)
    limit = ctx.time_limit(phase_for(record.phase))
    assert limit >= at_least
    if phase == "preflight":
        assert limit == 600
