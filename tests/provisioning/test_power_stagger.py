"""Power-on is staggered per rack: never more than the configured batch ramps at once."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from provisioning.core.phases.base import PhaseContext
from provisioning.core.phases.oob import (
    POWER_RAMP_S,
    SLOT_MARGIN_S,
    power_slot_wait_s,
    take_power_slot,
)
from provisioning.models import PhaseRecord, Run
from tests.factories import make_node, make_rack


def _context(node, manifest) -> PhaseContext:
    run = Run.objects.create(node=node, manifest=manifest, status="running")
    record = PhaseRecord.objects.create(
        run=run, phase="power_on", order=1, status="running", started_at=timezone.now()
    )
    return PhaseContext(run=run, node=node, record=record, manifest=manifest.spec)


@pytest.mark.django_db
def test_a_rack_powers_on_at_most_a_batch_at_a_time(manifest, settings):
    settings.GREENLIGHT_POWER_ON_BATCH = 3
    rack, other = make_rack("R01"), make_rack("R02")
    contexts = [_context(make_node(rack=rack, position=i + 1), manifest) for i in range(5)]
    granted = [take_power_slot(ctx) for ctx in contexts]
    assert granted == [True, True, True, False, False]
    # Another rack has its own PDUs and its own slots.
    assert take_power_slot(_context(make_node(rack=other, position=1), manifest))
    # A slot frees once its node's ramp is over (its stage moved on).
    PhaseRecord.objects.filter(pk=contexts[0].record.pk).update(stage="")
    assert take_power_slot(contexts[3])
    assert not take_power_slot(contexts[4])


@pytest.mark.django_db
def test_a_node_without_a_slot_waits_for_its_turn_not_a_fixed_half_ramp(manifest, settings):
    # Each node waits until the slot it is in line for frees: the waiters of a 741-node hall
    # looked every half ramp, 400 looks a second the workers could not take, so slots stood idle.
    settings.GREENLIGHT_POWER_ON_BATCH = 2
    rack = make_rack("R01")
    contexts = [_context(make_node(rack=rack, position=i + 1), manifest) for i in range(6)]
    assert [take_power_slot(ctx) for ctx in contexts[:2]] == [True, True]

    waits = [power_slot_wait_s(ctx) for ctx in contexts[2:]]

    ramp, margin = POWER_RAMP_S, SLOT_MARGIN_S
    # Two in line for the two slots that free at the end of this ramp, two for the next ramp.
    assert waits == pytest.approx([ramp + margin] * 2 + [2 * ramp + margin] * 2, abs=0.5)
    # A node that left the line (its ramp long over) is ahead of no one any more.
    PhaseRecord.objects.filter(pk=contexts[2].record.pk).update(
        stage="ramping", stage_started_at=timezone.now() - timedelta(minutes=5)
    )
    assert power_slot_wait_s(contexts[4]) == pytest.approx(ramp + margin, abs=0.5)
