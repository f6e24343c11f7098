"""A soak's phase limit follows the profile's soak length, so a 72-hour soak is never cut off."""

from __future__ import annotations

import pytest

from provisioning.core.phase_state import SoakState
from provisioning.core.phases import phase_for
from provisioning.core.phases.base import PhaseContext
from provisioning.models import PhaseRecord, Run


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


def test_the_soak_state_reads_back_what_it_keeps():
    between = SoakState(soaked_s=7200, wanted_s=259200)
    assert between.as_json() == {"soaked_s": 7200, "wanted_s": 259200}
    chunk = SoakState(7200, 50400, 259200)
    assert SoakState.of(chunk.as_json()) == chunk
    assert SoakState.of({}) == SoakState()
