"""Power-on is staggered per rack: never more than the configured batch ramps at once."""

from __future__ import annotations

import pytest
from django.utils import timezone

from provisioning.core.phases.base import PhaseContext
from provisioning.core.phases.oob import take_power_slot
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
