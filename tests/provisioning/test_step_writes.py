"""A step's claim, hand-over, nudge and record fields, as the SQL of provisioning/step_writes.py writes them:
each condition of the ORM calls they replaced, on SQLite and on PostgreSQL."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import DatabaseError
from django.utils import timezone

from provisioning.choices import RunStatus
from provisioning.models import PhaseRecord, Run
from provisioning.step_writes import (
    claim_step,
    hand_over_step,
    nudge_steps,
    write_record,
    write_run,
)
from tests.factories import make_node

pytestmark = pytest.mark.django_db


def _run(manifest, **fields) -> Run:
    return Run.objects.create(node=make_node(), manifest=manifest, step=7, **fields)


@pytest.mark.parametrize("status", [RunStatus.QUEUED, RunStatus.WAITING])
def test_a_waiting_run_is_claimed_once_for_its_step(manifest, status):
    run = _run(manifest, status=status)
    now = timezone.now()
    lease = now + timedelta(seconds=120)
    assert not claim_step(run.pk, 6, now=now, lease=lease, worker="w1"), "a stale step"
    assert claim_step(run.pk, 7, now=now, lease=lease, worker="w1")
    assert not claim_step(run.pk, 7, now=now, lease=lease, worker="w2"), "taken already"
    run.refresh_from_db()
    assert (run.step, run.status, run.next_look_at, run.held_by) == (
        8, RunStatus.RUNNING, lease, "w1"
    )  # fmt: skip


def test_a_running_run_is_claimed_only_once_its_lease_lapsed(manifest):
    now = timezone.now()
    run = _run(manifest, status=RunStatus.RUNNING, next_look_at=now + timedelta(seconds=5))
    lease = now + timedelta(seconds=120)
    assert not claim_step(run.pk, 7, now=now, lease=lease, worker="w2"), "its worker is alive"
    assert claim_step(run.pk, 7, now=now + timedelta(seconds=6), lease=lease, worker="w2")
    assert Run.objects.get(pk=run.pk).held_by == "w2"


@pytest.mark.parametrize("status", [RunStatus.SUCCEEDED, RunStatus.FAILED, RunStatus.ABORTED])
def test_an_ended_run_is_never_claimed(manifest, status):
    run = _run(manifest, status=status)
    now = timezone.now()
    assert not claim_step(run.pk, 7, now=now, lease=now, worker="w1")


def test_the_hand_over_writes_the_wait_and_only_from_the_holding_step(manifest):
    now = timezone.now()
    run = _run(manifest, status=RunStatus.RUNNING, next_look_at=now)
    due = now + timedelta(seconds=30)
    assert not hand_over_step(run.pk, 6, due=due, dispatched_at=now, safety_net=True)
    assert hand_over_step(
        run.pk, 7, due=due, dispatched_at=None, safety_net=True, wait_reason="agent running"
    )
    run.refresh_from_db()
    assert (run.status, run.next_look_at, run.dispatched_at, run.safety_net, run.wait_reason) == (
        RunStatus.WAITING, due, None, True, "agent running"
    )  # fmt: skip
    assert not hand_over_step(run.pk, 7, due=due, dispatched_at=now, safety_net=False)


def test_without_a_reason_the_hand_over_keeps_the_one_written(manifest):
    now = timezone.now()
    run = _run(manifest, status=RunStatus.RUNNING, wait_reason="rebooting")
    assert hand_over_step(run.pk, 7, due=now, dispatched_at=now, safety_net=False)
    assert Run.objects.get(pk=run.pk).wait_reason == "rebooting"


def test_a_nudge_since_the_claim_stops_the_conditional_hand_over(manifest):
    claimed = timezone.now()
    nudged = _run(manifest, status=RunStatus.RUNNING, nudged_at=claimed + timedelta(seconds=1))
    before = _run(manifest, status=RunStatus.RUNNING, nudged_at=claimed - timedelta(seconds=1))
    never = _run(manifest, status=RunStatus.RUNNING)
    due = claimed + timedelta(seconds=60)
    for run, handed in ((nudged, False), (before, True), (never, True)):
        assert (
            hand_over_step(
                run.pk, 7, due=due, dispatched_at=None, safety_net=False,
                unless_nudged_since=claimed,
            )
            is handed
        ), run.nudged_at  # fmt: skip


def test_a_nudge_marks_the_run_and_says_its_step_and_status_as_written(manifest):
    now = timezone.now()
    run = _run(manifest, status=RunStatus.WAITING)
    assert nudge_steps(now=now, run_id=run.pk) == [(run.pk, 7, RunStatus.WAITING)]
    assert Run.objects.get(pk=run.pk).nudged_at == now
    assert nudge_steps(now=now, run_id=run.pk + 1000) == [], "no such run"
    # A step that claimed the run before the nudge may not hand it over to a later look.
    claimed = now - timedelta(seconds=1)
    Run.objects.filter(pk=run.pk).update(status=RunStatus.RUNNING)
    assert not hand_over_step(
        run.pk, 7, due=now, dispatched_at=None, safety_net=False, unless_nudged_since=claimed
    )


def test_a_node_nudge_marks_its_active_runs_only(manifest):
    now = timezone.now()
    ended = _run(manifest, status=RunStatus.FAILED)
    node = ended.node
    active = Run.objects.create(node=node, manifest=manifest, step=3, status=RunStatus.RUNNING)
    other = _run(manifest, status=RunStatus.WAITING)
    assert nudge_steps(now=now, node_id=node.pk) == [(active.pk, 3, RunStatus.RUNNING)]
    assert Run.objects.get(pk=ended.pk).nudged_at is None
    assert Run.objects.get(pk=other.pk).nudged_at is None
    with pytest.raises(ValueError, match="a run_id or a node_id"):
        nudge_steps(now=now)


def test_a_record_s_fields_are_written_as_save_would_write_them(manifest):
    run = _run(manifest, status=RunStatus.RUNNING)
    record = PhaseRecord.objects.create(run=run, phase="bios_settings", order=1)
    other = PhaseRecord.objects.create(run=run, phase="boot_disk", order=2)
    now = timezone.now()
    record.status, record.stage, record.stage_started_at = "waiting", "rebooting", now
    record.compared = {"drift": [{"component": "BIOS SriovEnable", "matched": False}]}
    record.changes = [{"component": "bios", "from": "1.0", "to": "1.1"}]
    record.error = "not written"
    write_record(record, ("status", "stage", "stage_started_at", "compared", "changes"))
    stored = PhaseRecord.objects.get(pk=record.pk)
    assert (stored.status, stored.stage, stored.stage_started_at) == ("waiting", "rebooting", now)
    assert stored.compared == record.compared and stored.changes == record.changes
    assert stored.error == "", "only the fields named are written"
    assert PhaseRecord.objects.get(pk=other.pk).status == "pending", "only the record's row"
    record.command = None
    write_record(record, ("command",))
    PhaseRecord.objects.filter(pk=record.pk).delete()
    with pytest.raises(DatabaseError, match="is gone"):
        write_record(record, ("status",))


def test_a_run_s_fields_are_written_as_the_orm_update_would_write_them(manifest):
    run, other = _run(manifest, status=RunStatus.RUNNING), _run(manifest)
    now = timezone.now()
    run.current_phase, run.started_at, run.wait_reason = "power_on", now, "not to be written"
    assert write_run(run, ("current_phase", "started_at"))
    stored = Run.objects.get(pk=run.pk)
    assert (stored.current_phase, stored.started_at) == ("power_on", now)
    assert stored.wait_reason == "", "only the fields named are written"
    assert Run.objects.get(pk=other.pk).current_phase == "", "only the run's row"
    Run.objects.filter(pk=run.pk).delete()
    assert not write_run(run, ("current_phase",)), "a run that is gone: nothing written"
