"""A phase's start and end are written with their events in one transaction: the database lost
between the record's write and its event (as the HA failover test loses it, at a moment no test
can pick) leaves neither, so the worker that takes the run over writes both, and the event log
misses no attempt and no end (the failover test's `_assert_no_event_lost`)."""

from __future__ import annotations

import pytest
from django.db import OperationalError

from fleet.choices import EventKind
from fleet.models import Event
from provisioning.choices import PhaseStatus
from provisioning.core import engine
from provisioning.core.phases.base import PhaseContext
from provisioning.models import PhaseRecord
from provisioning.outcomes import Done, Failure
from tests.support.scenes import make_run

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)


def _database_lost(*args, **kwargs):
    raise OperationalError("server closed the connection unexpectedly")


def _current(run) -> PhaseRecord:
    record = run.phases.get(order=3)
    record.run = run
    return record


def _events(kind: str) -> int:
    return Event.objects.filter(kind=kind).count()


def test_a_phase_start_whose_event_is_lost_is_not_written_either(node, monkeypatch):
    run = make_run(node, phases_done=3)
    PhaseRecord.objects.filter(run=run, order=3).update(status=PhaseStatus.PENDING, attempts=0)
    monkeypatch.setattr(engine, "record_event", _database_lost)
    with pytest.raises(OperationalError):
        engine.start_phase(run, _current(run))
    assert run.phases.values_list("status", "attempts").get(order=3) == (PhaseStatus.PENDING, 0)

    monkeypatch.undo()
    engine.start_phase(run, _current(run))
    assert run.phases.values_list("status", "attempts").get(order=3) == (PhaseStatus.RUNNING, 1)
    assert _events(EventKind.PHASE_STARTED) == 1


def test_a_phase_end_whose_event_is_lost_is_not_written_either(node, monkeypatch):
    run = make_run(node, phases_done=3)
    monkeypatch.setattr(engine, "record_event", _database_lost)
    with pytest.raises(OperationalError):
        engine.finish_phase(run, _current(run), Done())
    assert run.phases.get(order=3).status == PhaseStatus.RUNNING

    monkeypatch.undo()
    engine.finish_phase(run, _current(run), Done())
    assert run.phases.get(order=3).status == PhaseStatus.DONE
    assert _events(EventKind.PHASE_DONE) == 1


def test_a_wait_whose_event_is_lost_is_not_written_either(node, monkeypatch):
    run = make_run(node, phases_done=3)
    record = _current(run)
    ctx = PhaseContext(run=run, node=run.node, record=record, manifest=run.manifest.spec)
    monkeypatch.setattr(engine, "record_event", _database_lost)
    with pytest.raises(OperationalError):
        engine.wait(run, record, ctx, "waiting for the BMC's task", 30)
    # Still running, no reason: the next look waits again and says so.
    assert run.phases.values_list("status", "wait_reason").get(order=3) == (
        PhaseStatus.RUNNING,
        "",
    )


def test_a_failed_attempt_whose_event_is_lost_is_not_written_either(node, monkeypatch):
    run = make_run(node, phases_done=3, failure_budget=3)
    record = _current(run)
    ctx = PhaseContext(run=run, node=run.node, record=record, manifest=run.manifest.spec)
    monkeypatch.setattr(engine, "record_event", _database_lost)
    with pytest.raises(OperationalError):
        engine.phase_failure(run, record, ctx, Failure("the BMC refused the image"))
    assert run.phases.values_list("status", "error").get(order=3) == (PhaseStatus.RUNNING, "")
