"""Long phases show how far they have come, in one unit each: soak hours, a BMC task's percent."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from acceptance.choices import Verdict
from acceptance.gates import GateName
from acceptance.models import GateResult
from console.board import rack_slots
from console.panel import elapsed_text, node_panel
from fleet.choices import NodeState
from provisioning.choices import PhaseStatus, RunStatus
from provisioning.core.gates import step_name
from provisioning.core.phases import PHASES
from provisioning.core.progress import Progress, of_phase
from provisioning.models import PhaseRecord, Run
from tests.support import scenes

pytestmark = pytest.mark.django_db
SOAK = step_name(GateName.BURN_IN)


def test_units_are_hours_for_a_soak_and_percent_for_a_task():
    assert of_phase({"soaked_s": 12 * 3600, "wanted_s": 72 * 3600}).words == "12.0 h of 72 h"
    assert of_phase({"task_percent": 40}) == Progress(40.0, 100.0, "%")
    assert of_phase({"task_percent": 40}).words == "40% of the update task"
    assert of_phase({"soaked_s": 10}) is None and of_phase({}) is None
    assert Progress(80, 72, "h").percent == 100


def _soaking(rack) -> Run:
    (node,) = scenes.build_rack(rack, {NodeState.VALIDATING: 1})
    run = node.runs.get()
    PhaseRecord.objects.filter(run=run).update(status=PhaseStatus.DONE)
    gates = [step_name(g) for g in ("attestation", "gpu_health", "fabric", "storage")]
    PhaseRecord.objects.bulk_create(
        PhaseRecord(run=run, phase=name, order=len(PHASES) + i, status=PhaseStatus.DONE)
        for i, name in enumerate(gates)
    )
    PhaseRecord.objects.create(
        run=run,
        phase=SOAK,
        order=len(PHASES) + len(gates),
        status=PhaseStatus.WAITING,
        resume={"soaked_s": 36 * 3600, "chunk_end_s": 48 * 3600, "wanted_s": 72 * 3600},
    )
    Run.objects.filter(pk=run.pk).update(current_phase=SOAK, status=RunStatus.WAITING)
    GateResult.objects.create(
        run=run,
        node=node,
        gate=GateName.BURN_IN,
        verdict=Verdict.RUNNING,
        metrics={"samples": 217, "ran_s": 129600.0, "wanted_s": 259200, "stopped_at_sample": None},
    )
    return run


def test_a_node_in_its_soak_is_not_shown_as_all_but_done(rack, manifest):
    run = _soaking(rack)
    (slot,) = rack_slots(rack)
    # 19 of 20 phases and gates done, and half the soak: 98%, never a full bar before the end.
    assert (slot.phases_done, slot.progress) == (19, 98)
    assert slot.phase_progress == "36.0 h of 72 h"
    # The gate's own label, as its row declares it (it once read "gate:burn in").
    assert slot.phase_label == "Gate: Burn-in soak"
    panel = node_panel(run.node)
    soak = next(g for g in panel.gates if g.result.gate == GateName.BURN_IN)
    assert soak.progress.words == "36.0 h of 72 h"
    assert soak.other_metrics == {"soaked": "36.0 h of 72 h", "samples": 217}


def test_a_bmc_update_task_shows_its_percent_in_the_timeline(rack, manifest):
    (node,) = scenes.build_rack(rack, {NodeState.PROVISIONING: 1})
    record = PhaseRecord.objects.filter(run__node=node, status=PhaseStatus.RUNNING).get()
    PhaseRecord.objects.filter(pk=record.pk).update(resume={"task_percent": 40})
    row = next(p for p in node_panel(node).phases if p.name == record.phase)
    assert row.progress.words == "40% of the update task" and row.progress.percent == 40


def test_a_waits_text_names_the_phase_limit_as_a_limit(rack, manifest):
    from provisioning.core.engine import wait
    from provisioning.core.phases.base import PhaseContext

    run = _soaking(rack)
    record = run.phases.get(phase=SOAK)
    PhaseRecord.objects.filter(pk=record.pk).update(started_at=run.started_at)
    record.refresh_from_db()
    ctx = PhaseContext(run=run, node=run.node, record=record, manifest=run.manifest.spec)
    wait(run, record, ctx, "soaked 36.0 h of 72 h", 60)
    record.refresh_from_db()
    assert record.wait_reason.startswith("soaked 36.0 h of 72 h; phase limit ")
    # The time spent is the panel's to count at each render: no look may come for as long as
    # a command runs (the sweep sets its net again), so a count written here would stand still.
    assert elapsed_text(record, PhaseStatus.WAITING) == "40 min"
    PhaseRecord.objects.filter(pk=record.pk).update(
        started_at=run.started_at - timedelta(minutes=20)
    )
    record.refresh_from_db()
    assert elapsed_text(record, PhaseStatus.WAITING) == "60 min"
    assert elapsed_text(record, PhaseStatus.DONE) == ""


@pytest.mark.django_db
def test_the_panel_counts_the_time_of_a_phase_under_way(rack, manifest):
    (node,) = scenes.build_rack(rack, {NodeState.PROVISIONING: 1})
    run = node.runs.get()
    record = run.phases.order_by("order").first()
    PhaseRecord.objects.filter(pk=record.pk).update(
        status=PhaseStatus.WAITING,
        started_at=timezone.now() - timedelta(minutes=12),
        finished_at=None,
    )
    row = next(p for p in node_panel(node).phases if p.name == record.phase)
    assert row.elapsed == "12 min" and row.duration_s is None


def test_the_panel_gives_an_eta_from_this_fleets_runs(rack, manifest):
    from datetime import timedelta

    from django.utils import timezone

    run = _soaking(rack)
    assert node_panel(run.node).eta is None, "no soak has finished here yet: no guess"
    (done,) = scenes.build_rack(rack, {NodeState.IN_SERVICE: 1}, start=10)
    ended = timezone.now()
    PhaseRecord.objects.create(
        run=done.runs.get(),
        phase=SOAK,
        order=len(PHASES),
        status=PhaseStatus.DONE,
        started_at=ended - timedelta(hours=72),
        finished_at=ended,
    )
    # Half of a 72 h soak is left, by its own progress.
    assert node_panel(run.node).eta.words == "about 36 h 00 min left"


def test_an_eta_says_at_least_when_a_phase_has_no_history(rack, manifest, profile):
    from provisioning.core.runs import start_run
    from tests import factories

    node = factories.make_node(rack=rack, position=20)
    run = start_run(node)
    # The first three phases done, the fourth under way since now.
    for record in run.phases.order_by("order")[:3]:
        PhaseRecord.objects.filter(pk=record.pk).update(status=PhaseStatus.DONE)
    fourth = run.phases.get(order=3)
    PhaseRecord.objects.filter(pk=fourth.pk).update(status=PhaseStatus.RUNNING)
    node.refresh_from_db()
    assert node_panel(node).eta is None, "nothing has finished on this fleet yet"
    # Another node's run finished the provisioning phases (20 s + 7 s per phase index), but for
    # the BMC and DPU firmware, which it skipped.
    scenes.build_rack(rack, {NodeState.IN_SERVICE: 1}, start=10)
    eta = node_panel(node).eta
    skipped = {"bmc_firmware", "dpu_firmware"}
    expected = sum(20 + 7 * i for i, p in enumerate(PHASES) if i >= 3 and p.name not in skipped)
    # The gates have no history here: the estimate is a lower bound and says so.
    assert (round(eta.seconds), eta.partial) == (expected, True)
    assert eta.words == f"at least {round(expected / 60)} min left"
