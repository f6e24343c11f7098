"""Rolling upgrades (provisioning.day2.rollouts): a concurrency limit, failures that stop nothing
else, a crash that loses nothing, pause, resume and cancel."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.utils import timezone

from fleet.choices import DocumentStatus, NodeState
from fleet.lifecycle import transition
from fleet.models import Node
from provisioning.choices import PhaseStatus, RolloutNodeStatus, RolloutState, RunKind, RunStatus
from provisioning.core.completion import complete_run
from provisioning.core.engine import fail_run
from provisioning.core.phases import phase_for
from provisioning.core.phases.base import PhaseContext
from provisioning.day2.rollouts import (
    RolloutRefused,
    advance_open_rollouts,
    advance_rollout,
    cancel_rollout,
    parse_concurrency,
    pause_rollout,
    progress,
    resume_rollout,
    start_rollout,
)
from provisioning.models import PhaseRecord, Rollout, RolloutNode, Run
from provisioning.outcomes import Done, Wait
from provisioning.schedulers.lab import DRAIN_SECONDS
from provisioning.tasks import sweep as sweep_task
from tests import factories
from tests.support.scenes import walk

pytestmark = pytest.mark.django_db
S = NodeState
W, RUNNING, DONE, FAILED = (
    RolloutNodeStatus.WAITING,
    RolloutNodeStatus.RUNNING,
    RolloutNodeStatus.DONE,
    RolloutNodeStatus.FAILED,
)


def provisioned(state: str, manifest, **kw) -> Node:
    """A node in `state` that was provisioned to `manifest`."""
    node = walk(factories.make_node(**kw), state)
    Node.objects.filter(pk=node.pk).update(manifest=manifest)
    node.refresh_from_db()
    return node


@pytest.fixture
def fleet(manifest, profile):
    """Four nodes on 1.0.0, then 1.0.1 published: all four are behind it."""
    # Placed U1 to U4: a rollout takes nodes in rack order.
    nodes = [
        provisioned(S.FAILED, manifest, position=1),
        provisioned(S.AWAITING_APPROVAL, manifest, position=2),
        provisioned(S.IN_SERVICE, manifest, position=3),
        provisioned(S.FAILED, manifest, position=4),
    ]
    new = manifest.clone_as_draft()
    new.publish()
    return new, nodes


def statuses(rollout: Rollout) -> list[str]:
    return list(rollout.entries.order_by("order").values_list("status", flat=True))


def entry(rollout: Rollout, node: Node) -> RolloutNode:
    return rollout.entries.get(node=node)


def succeed(run: Run) -> None:
    """The run's every phase and gate passed (the engine's own completion)."""
    node = Node.objects.get(pk=run.node_id)
    if node.state == S.RELEASING:
        transition(node, S.PROVISIONING, actor_label="drain")  # what the drain phase does
    Run.objects.filter(pk=run.pk).update(status=RunStatus.RUNNING)
    complete_run(Run.objects.get(pk=run.pk))


def fail(run: Run, reason: str) -> None:
    """The run failed in its first phase (the engine's own failure)."""
    run = Run.objects.select_related("node").get(pk=run.pk)
    fail_run(run, run.phases.order_by("order").first(), reason)


def test_it_keeps_at_most_concurrency_nodes_in_flight_and_moves_on_as_runs_end(fleet, bob):
    manifest, (a, b, c, d) = fleet
    rollout = start_rollout(manifest, actor=bob, concurrency=2)
    assert rollout.state == RolloutState.RUNNING and rollout.created_by == bob
    assert statuses(rollout) == [RUNNING, RUNNING, W, W]
    run_a = entry(rollout, a).run
    assert (run_a.kind, run_a.manifest, run_a.started_by) == (RunKind.REPROVISION, manifest, bob)
    assert advance_rollout(rollout.pk) and statuses(rollout) == [RUNNING, RUNNING, W, W]

    succeed(run_a)
    advance_rollout(rollout.pk)
    assert statuses(rollout) == [DONE, RUNNING, RUNNING, W]
    # The in-service node goes through the suspect loop's path: released, drained first.
    run_c = entry(rollout, c).run
    assert run_c.kind == RunKind.UPGRADE
    assert run_c.phases.order_by("order").first().phase == "drain"
    assert Node.objects.get(pk=c.pk).state == S.RELEASING

    for node in (b, c):
        succeed(entry(rollout, node).run)
    advance_rollout(rollout.pk)
    # c is upgraded but out of service until a person approves it: still in flight.
    assert statuses(rollout) == [DONE, DONE, RUNNING, RUNNING]
    assert entry(rollout, c).reason == "upgraded; awaiting approval back into service"
    succeed(entry(rollout, d).run)
    advance_rollout(rollout.pk)
    assert statuses(rollout) == [DONE, DONE, RUNNING, DONE]
    transition(Node.objects.get(pk=c.pk), S.IN_SERVICE, actor=bob, reason="approved")
    rollout = advance_open_rollouts() and Rollout.objects.get(pk=rollout.pk)
    assert statuses(rollout) == [DONE] * 4
    assert rollout.state == RolloutState.FINISHED and rollout.finished_at is not None
    assert set(Node.objects.values_list("manifest", flat=True)) == {manifest.pk}
    shown = progress(rollout)
    assert (shown.total, shown.done, shown.running, shown.waiting, shown.failed) == (4, 4, 0, 0, [])


def test_a_failed_node_is_named_with_its_reason_and_stops_nothing_else(fleet, bob):
    manifest, (a, b, c, d) = fleet
    rollout = start_rollout(manifest, actor=bob, concurrency=1)
    fail(entry(rollout, a).run, "BMC unreachable")
    advance_rollout(rollout.pk)
    assert statuses(rollout) == [FAILED, RUNNING, W, W]
    assert entry(rollout, a).reason == "preflight: BMC unreachable"
    assert [e.node for e in progress(rollout).failed] == [a]


def test_nodes_that_cannot_start_are_failed_with_why_and_the_next_one_takes_the_slot(
    manifest, profile, bob
):
    lent = provisioned(S.IN_SERVICE, manifest, tenant="acme", position=1)
    sick = provisioned(S.QUARANTINED, manifest, position=2)
    idle = provisioned(S.FAILED, manifest, position=3)
    new = manifest.clone_as_draft()
    new.publish()
    rollout = start_rollout(new, actor=bob, concurrency=1)
    assert statuses(rollout) == [FAILED, FAILED, RUNNING]
    assert "allocated to a tenant" in entry(rollout, lent).reason
    assert "send it to break/fix first" in entry(rollout, sick).reason
    assert Node.objects.get(pk=lent.pk).state == S.IN_SERVICE, "a refused node is left alone"
    assert entry(rollout, idle).run is not None


def test_a_node_upgraded_meanwhile_is_done_and_a_busy_one_waits(fleet, bob):
    manifest, (a, b, c, d) = fleet
    rollout = start_rollout(manifest, actor=bob, concurrency=1)
    Node.objects.filter(pk=b.pk).update(manifest=manifest)  # someone reprovisioned it by hand
    busy = Run.objects.create(node=c, manifest=manifest, status=RunStatus.WAITING)
    succeed(entry(rollout, a).run)
    advance_rollout(rollout.pk)
    # b is done already; c's own run is under way (not the rollout's to stop): d takes the slot.
    assert statuses(rollout) == [DONE, DONE, W, RUNNING]
    assert entry(rollout, b).reason == "already on 1.0.1"
    assert entry(rollout, c).reason == f"waiting for run {busy.pk} to end"


def test_a_crash_mid_advance_loses_nothing(fleet, bob):
    manifest, (a, b, c, d) = fleet
    rollout = start_rollout(manifest, actor=bob, concurrency=1)
    succeed(entry(rollout, a).run)
    with pytest.raises(RuntimeError), transaction.atomic():
        advance_rollout(rollout.pk)
        assert statuses(rollout) == [DONE, RUNNING, W, W]
        raise RuntimeError("worker killed before the commit")
    assert statuses(rollout) == [RUNNING, W, W, W]
    assert not Run.objects.filter(node=b).exists(), "nothing of the lost advance remains"
    # The sweep advances it again: from the rows, the same result.
    assert advance_open_rollouts() == 1
    assert statuses(rollout) == [DONE, RUNNING, W, W]
    assert Run.objects.filter(node=b).count() == 1


def test_pause_starts_nothing_new_resume_goes_on_cancel_ends_it(fleet, bob):
    manifest, (a, b, c, d) = fleet
    rollout = start_rollout(manifest, actor=bob, concurrency=1)
    pause_rollout(rollout, actor=bob, reason="change freeze")
    succeed(entry(rollout, a).run)
    rollout = advance_rollout(rollout.pk)
    assert rollout.state == RolloutState.PAUSED and rollout.reason == "change freeze"
    assert statuses(rollout) == [DONE, W, W, W], "its run is settled, no new one started"
    rollout = resume_rollout(rollout, actor=bob)
    assert statuses(rollout) == [DONE, RUNNING, W, W]
    with pytest.raises(RolloutRefused, match="not paused"):
        resume_rollout(rollout, actor=bob)
    rollout = cancel_rollout(rollout, actor=bob)
    assert rollout.state == RolloutState.CANCELLED and rollout.reason == "cancelled by bob"
    run_b = entry(rollout, b).run
    assert run_b.status == RunStatus.QUEUED, "a run in flight is not aborted"
    succeed(run_b)
    advance_rollout(rollout.pk)
    assert statuses(rollout) == [DONE, RUNNING, W, W], "a cancelled rollout moves no more"
    with pytest.raises(RolloutRefused, match="already ended"):
        cancel_rollout(rollout, actor=bob)


def test_a_rollout_whose_manifest_is_superseded_is_cancelled(fleet, bob):
    manifest, _ = fleet
    rollout = start_rollout(manifest, actor=bob, concurrency=1)
    manifest.clone_as_draft().publish()
    rollout = advance_rollout(rollout.pk)
    assert rollout.state == RolloutState.CANCELLED
    assert rollout.reason == "1.0.1 is no longer published"


def test_refusals(fleet, bob, dora, manifest):
    new, _ = fleet
    with pytest.raises(PermissionDenied):
        start_rollout(new, actor=dora)
    with pytest.raises(RolloutRefused, match="from 1 to 50, not 0"):
        start_rollout(new, actor=bob, concurrency=0)
    manifest.refresh_from_db()
    assert manifest.status == DocumentStatus.RETIRED
    with pytest.raises(RolloutRefused, match="only the published manifest"):
        start_rollout(manifest, actor=bob)
    rollout = start_rollout(new, actor=bob)
    with pytest.raises(RolloutRefused, match=f"rollout {rollout.pk} is already"):
        start_rollout(new, actor=bob)
    with pytest.raises(PermissionDenied):
        pause_rollout(rollout, actor=dora)
    assert Rollout.objects.count() == 1


def test_nothing_behind_is_refused(manifest, bob):
    provisioned(S.IN_SERVICE, manifest)
    with pytest.raises(RolloutRefused, match="no node is behind"):
        start_rollout(manifest, actor=bob)


@pytest.mark.parametrize("value", ["two", "", None, "2.5", "-1", "51", True, 0])
def test_a_bad_concurrency_says_what_is_wanted(value):
    with pytest.raises(RolloutRefused, match="whole number from 1 to 50"):
        parse_concurrency(value)


@pytest.mark.parametrize(("value", "limit"), [("1", 1), (3, 3), (" 50 ", 50)])
def test_a_good_concurrency(value, limit):
    assert parse_concurrency(value) == limit


def test_an_in_service_node_is_drained_by_the_lab_scheduler_then_reprovisioned(
    fleet, bob, settings
):
    settings.GREENLIGHT_SCHEDULER = "lab"
    settings.GREENLIGHT_TIME_SCALE = 1.0
    manifest, (a, b, c, d) = fleet
    Node.objects.filter(pk__in=[a.pk, b.pk, d.pk]).update(manifest=manifest)  # only c is behind
    rollout = start_rollout(manifest, actor=bob, concurrency=1)
    run = entry(rollout, c).run
    assert list(run.phases.order_by("order").values_list("phase", flat=True)[:3]) == [
        "drain",
        "preflight",
        "power_on",
    ]
    assert run.phases.filter(phase="os_install").exists(), "a reprovision, not a re-check"
    record = run.phases.get(phase="drain")
    PhaseRecord.objects.filter(pk=record.pk).update(status=PhaseStatus.RUNNING)
    record.refresh_from_db()
    node = Node.objects.get(pk=c.pk)
    ctx = PhaseContext(run=run, node=node, record=record, manifest=manifest.spec)
    assert isinstance(phase_for("drain").execute(ctx), Wait)  # cordoned; jobs are leaving
    earlier = timezone.now() - timedelta(seconds=DRAIN_SECONDS + 1)
    PhaseRecord.objects.filter(pk=record.pk).update(stage_started_at=earlier)
    ctx.record.refresh_from_db()
    ctx.node.refresh_from_db()
    assert isinstance(phase_for("drain").execute(ctx), Done)
    assert Node.objects.get(pk=c.pk).state == S.PROVISIONING


def test_an_upgraded_node_a_person_quarantines_instead_of_approving_is_failed(fleet, bob):
    manifest, (a, b, c, d) = fleet
    Node.objects.filter(pk__in=[a.pk, b.pk, d.pk]).update(manifest=manifest)  # only c is behind
    rollout = start_rollout(manifest, actor=bob, concurrency=1)
    succeed(entry(rollout, c).run)
    transition(Node.objects.get(pk=c.pk), S.QUARANTINED, actor=bob, reason="fans loud")
    rollout = advance_rollout(rollout.pk)
    assert statuses(rollout) == [FAILED]
    assert entry(rollout, c).reason == "upgraded, then quarantined"
    assert rollout.state == RolloutState.FINISHED


def test_the_periodic_sweep_advances_a_rollout_whose_wake_up_was_lost(fleet, bob):
    manifest, (a, b, c, d) = fleet
    rollout = start_rollout(manifest, actor=bob, concurrency=1)
    # The run's end sends the wake-up on commit, which never comes in this test: as if lost.
    succeed(entry(rollout, a).run)
    assert statuses(rollout) == [RUNNING, W, W, W]
    sweep_task.apply()
    assert statuses(rollout) == [DONE, RUNNING, W, W]
