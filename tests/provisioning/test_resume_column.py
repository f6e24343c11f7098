"""A phase's state between looks lives in its record's `resume` column, apart from what observe and
diff saw (`compared`); an upgrade mid-run moves the state of unfinished phases there."""

from __future__ import annotations

from importlib import import_module

import pytest
from django.apps import apps

from provisioning.choices import PhaseStatus
from provisioning.core.phase_state import PowerOnRequests
from provisioning.core.phases.base import PhaseContext
from provisioning.core.phases.oob import take_power_slot
from provisioning.models import PhaseRecord
from tests.factories import make_node
from tests.support.scenes import make_run

pytestmark = pytest.mark.django_db

move_resume_state = import_module(
    "provisioning.migrations.0014_phase_record_resume"
).move_resume_state


def test_a_power_on_keeps_its_count_in_resume_and_leaves_compared_to_what_was_seen(rack):
    node = make_node(rack=rack)
    run = make_run(node, phases_done=1)
    record = run.phases.get(phase="power_on")
    record.compared = {"drift": []}
    record.save(update_fields=["compared"])
    ctx = PhaseContext(run=run, node=node, record=record, manifest=run.manifest.spec)

    assert take_power_slot(ctx)

    record.refresh_from_db()
    assert PowerOnRequests.of(record.resume) == PowerOnRequests(1)
    assert record.compared == {"drift": []}


def test_the_upgrade_moves_the_state_of_unfinished_phases_only(rack):
    node = make_node(rack=rack)
    run = make_run(node, phases_done=3)
    drift = [{"component": "BMC", "expected": "2.1", "actual": "2.0", "matched": False}]
    waiting = run.phases.get(phase=run.current_phase)
    waiting.compared = {"drift": drift, "from": "2.0", "tasks_before": ["/t/1"]}
    waiting.status = PhaseStatus.WAITING
    waiting.save()
    done = run.phases.filter(status=PhaseStatus.DONE).first()
    done.compared = {"verdict": "pass", "soaked_s": 3600, "wanted_s": 3600}
    done.save()

    move_resume_state(apps, None)

    waiting.refresh_from_db()
    done.refresh_from_db()
    assert waiting.compared == {"drift": drift}
    assert waiting.resume == {"from": "2.0", "tasks_before": ["/t/1"]}
    assert done.resume == {} and done.compared["soaked_s"] == 3600
    assert PhaseRecord.objects.filter(resume__has_key="from").count() == 1
