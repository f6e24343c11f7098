"""Rack runs (issue 34): a DB-built GB200 NVL72 rack (8 power shelves, 9 switch trays, 18 compute
trays) brought up by its manifest's staged rules, its members' node runs settled by the test as
the node engine would settle them, time given as `now=`."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from fleet.choices import EventKind, NodeKind, NodeState, RackState
from fleet.models import Event, Node, RackSystem
from fleet.rack_lifecycle import replace_member
from provisioning.choices import PhaseStatus, RackMemberStatus, RackRunStatus, RackStageStatus
from provisioning.core.phases import PHASE_NAMES
from provisioning.models import Run
from provisioning.rack.power import power_cycle_member, settle_cycle
from provisioning.rack.report import describe
from provisioning.rack.runs import (
    RackRunRefused,
    advance_open_rack_runs,
    advance_rack_run,
    cancel_rack_run,
    start_rack_run,
)
from provisioning.rack.verify import members_answer, record_verify
from provisioning.rack_models import RackRun, RackRunMember, RackRunStage
from tests import factories

from .test_rollouts import fail, succeed

pytestmark = pytest.mark.django_db
T0 = datetime(2026, 11, 23, 10, 0, tzinfo=UTC)
W, RUNNING, DONE, FAILED = (
    RackMemberStatus.WAITING,
    RackMemberStatus.RUNNING,
    RackMemberStatus.DONE,
    RackMemberStatus.FAILED,
)


@pytest.fixture
def nvl72(db):
    """A fully enrolled NVL72 rack whose manifest gives no stages: the default rules apply."""
    return factories.make_nvl72_rack()


def stage(rack_run: RackRun, index: int) -> RackRunStage:
    return rack_run.stages.get(index=index)


def members(rack_run: RackRun, index: int) -> list[RackRunMember]:
    return list(stage(rack_run, index).members.select_related("node", "run").order_by("order"))


def statuses(rack_run: RackRun, index: int) -> list[str]:
    return [m.status for m in members(rack_run, index)]


def in_flight(rack_run: RackRun, index: int) -> list[RackRunMember]:
    return [m for m in members(rack_run, index) if m.status == RUNNING]


def snapshot(rack_run: RackRun) -> tuple:
    """Everything an advance may change, but its lock stamp."""
    row = RackRun.objects.values("status", "stage_index", "wait_reason", "last_error").get(
        pk=rack_run.pk
    )
    stages = list(
        RackRunStage.objects.filter(rack_run=rack_run)
        .order_by("index")
        .values_list("status", "verify_requested_at", "verify_holds", "deadline")
    )
    rows = list(
        RackRunMember.objects.filter(stage__rack_run=rack_run)
        .order_by("stage__index", "order")
        .values_list("status", "attempts", "run_id", "reason")
    )
    return (row, stages, rows, Run.objects.count(), Event.objects.count(),
            RackSystem.objects.get(rack=rack_run.rack).state)  # fmt: skip


def advance_twice(rack_run: RackRun, now: datetime) -> RackRun:
    """Advance, then advance again: the second call must change nothing."""
    advance_rack_run(rack_run.pk, now=now)
    before = snapshot(rack_run)
    again = advance_rack_run(rack_run.pk, now=now)
    assert snapshot(rack_run) == before, "a second advance changed the rows"
    return again


def settle_stage(rack_run: RackRun, index: int, now: datetime) -> int:
    """Succeed the stage's member runs as they start, advancing between; return the most in
    flight at once, asserting the stage never ran more than its max_parallel."""
    limit = stage(rack_run, index).max_parallel
    most = 0
    while True:
        running = in_flight(rack_run, index)
        assert len(running) <= limit
        most = max(most, len(running))
        if not running:
            return most
        for member in running:
            flash_and_succeed(member.run)
        advance_twice(rack_run, now)


def flash_and_succeed(run: Run) -> None:
    """The member's run wrote its BMC's firmware (what the power cycle activates) and passed."""
    succeed(run)
    run.phases.filter(phase="bmc_firmware").update(status=PhaseStatus.DONE)


def test_the_stages_run_in_order_never_past_their_parallelism(nvl72, bob):
    system, nodes = nvl72
    rack_run = start_rack_run(system.rack, actor=bob, now=T0)
    assert RackSystem.objects.get(pk=system.pk).state == RackState.BRINGING_UP
    shape = [(s["kind"], s["action"], s["max_parallel"]) for s in describe(rack_run)["stages"]]
    assert shape == [
        ("power_shelf", "bring_up", 1),
        ("switch_tray", "bring_up", 3),
        ("compute_tray", "bring_up", 8),
        ("compute_tray", "power_cycle", 8),
    ]
    assert [len(s["members"]) for s in describe(rack_run)["stages"]] == [8, 9, 18, 18]
    # One shelf at a time; nothing of a later stage has started.
    assert statuses(rack_run, 0) == [RUNNING] + [W] * 7
    assert not Run.objects.filter(node__kind__in=[NodeKind.SWITCH_TRAY, NodeKind.COMPUTE_TRAY])
    first = in_flight(rack_run, 0)[0]
    assert first.node == nodes["power_shelf"][0]
    assert Run.objects.get(pk=first.run_id).phases.count() == 2  # no OS: preflight, BMC firmware

    most = {}
    for index in range(3):
        most[index] = settle_stage(rack_run, index, T0)
        assert stage(rack_run, index).status == RackStageStatus.VERIFYING
        # The next stage waits for the check, not just for the members.
        assert set(statuses(rack_run, index + 1)) == {W}
        record_verify(stage(rack_run, index).pk, True, "observed")
        advance_twice(rack_run, T0)
        assert stage(rack_run, index).status == RackStageStatus.DONE
    assert most == {0: 1, 1: 3, 2: 8}

    # The power cycle: eight compute trays at once, each answered by its BMC's reset.
    assert len(in_flight(rack_run, 3)) == 8
    while running := in_flight(rack_run, 3):
        for member in running:
            settle_cycle(member, DONE, "")
        advance_twice(rack_run, T0)
    record_verify(stage(rack_run, 3).pk, True, "all 18 answer")
    rack_run = advance_twice(rack_run, T0)

    # The engine's own count of members in flight, from each start's audit.
    assert [s["peak_parallel"] for s in describe(rack_run)["stages"]] == [1, 3, 8, 8]
    # Every stage done: the rack is validating, and the rack run waits for the rack-wide gate
    # (acceptance.rack_gate; tests/acceptance/test_rack_gate.py follows it to its verdict).
    assert rack_run.status == RackRunStatus.RUNNING and rack_run.stage_index == 4
    assert RackSystem.objects.get(pk=system.pk).state == RackState.VALIDATING
    assert rack_run.wait_reason == (
        "rack-wide gate: waiting for 18 of 18 compute trays' reports and the power shelves' BMCs"
    )
    # Every member came up once: no member was run twice.
    assert Run.objects.count() == 35
    started = [e.data.get("stage") for e in Event.objects.filter(
        kind=EventKind.RACK_RUN, message__contains=") started:").order_by("id")]  # fmt: skip
    assert started == [0, 1, 2, 3]


def test_the_next_stage_waits_until_the_check_holds(nvl72, bob):
    system, nodes = nvl72
    rack_run = start_rack_run(system.rack, actor=bob, now=T0)
    settle_stage(rack_run, 0, T0)
    shelves = stage(rack_run, 0)
    assert shelves.status == RackStageStatus.VERIFYING and shelves.verify_holds is None
    rack_run = advance_twice(rack_run, T0)
    assert rack_run.wait_reason.endswith("checking members_answer: not observed yet (unknown)")

    record_verify(shelves.pk, False, "1 of 35 do not answer: compute tray 7 (X): refused")
    rack_run = advance_twice(rack_run, T0 + timedelta(seconds=10))
    assert set(statuses(rack_run, 1)) == {W}
    assert "compute tray 7 (X): refused" in rack_run.wait_reason
    # An observation that never came back is asked for again, once, after a minute.
    later = T0 + timedelta(seconds=61)
    advance_twice(rack_run, later)
    assert stage(rack_run, 0).verify_requested_at == later

    record_verify(shelves.pk, True, "all 35 answer")
    advance_twice(rack_run, later)
    assert statuses(rack_run, 1) == [RUNNING] * 3 + [W] * 6
    assert [m.node for m in in_flight(rack_run, 1)] == nodes["switch_tray"][:3]


def test_a_failed_member_is_retried_then_the_rack_run_stops_naming_it(nvl72, bob):
    system, nodes = nvl72
    rack_run = start_rack_run(system.rack, actor=bob, now=T0)
    shelf = nodes["power_shelf"][0]
    runs = []
    for attempt in (1, 2, 3):  # the default allows shelves two retries
        (member,) = in_flight(rack_run, 0)
        assert (member.node, member.attempts) == (shelf, attempt)
        runs.append(member.run_id)
        fail(member.run, "BMC unreachable")
        rack_run = advance_twice(rack_run, T0)
    assert len(set(runs)) == 3  # a new node run per attempt
    assert Event.objects.filter(kind=EventKind.RACK_RUN, message__contains="retrying").count() == 2

    assert rack_run.status == RackRunStatus.FAILED
    assert rack_run.last_error == (
        "stage 1 (power_shelf, bring_up): power shelf 1 (NVL01-power_shelf-01) failed 3 of 3 "
        "attempt(s): preflight: BMC unreachable"
    )
    assert statuses(rack_run, 0) == [FAILED] + [W] * 7  # nothing else was started
    assert stage(rack_run, 0).status == RackStageStatus.FAILED
    system.refresh_from_db()
    assert system.state == RackState.DEGRADED
    rack_event = Event.objects.filter(kind=EventKind.RACK_STATE_CHANGED).latest("id")
    assert "NVL01-power_shelf-01" in rack_event.message


def test_a_stage_past_its_time_limit_fails_naming_what_is_still_open(nvl72, bob):
    system, nodes = nvl72
    rack_run = start_rack_run(system.rack, actor=bob, now=T0)
    (member,) = in_flight(rack_run, 0)
    rack_run = advance_twice(rack_run, T0 + timedelta(seconds=1799))
    assert rack_run.status == RackRunStatus.RUNNING
    rack_run = advance_twice(rack_run, T0 + timedelta(seconds=1800))
    assert rack_run.status == RackRunStatus.FAILED
    assert rack_run.last_error.startswith(
        "stage 1 (power_shelf, bring_up) ran past its time limit of 1800 s: "
        f"power shelf 1 (NVL01-power_shelf-01) running (run {member.run_id}); "
        "power shelf 2 (NVL01-power_shelf-02) waiting;"
    )
    assert rack_run.last_error.endswith("and 3 more")
    assert RackSystem.objects.get(pk=system.pk).state == RackState.DEGRADED


def test_a_check_that_never_holds_trips_the_time_limit_with_what_it_saw(nvl72, bob):
    system, _ = nvl72
    rack_run = start_rack_run(system.rack, actor=bob, now=T0)
    settle_stage(rack_run, 0, T0)
    record_verify(stage(rack_run, 0).pk, None, "power shelf 4 (P): no answer yet")
    rack_run = advance_twice(rack_run, T0 + timedelta(hours=1))
    assert rack_run.status == RackRunStatus.FAILED
    assert rack_run.last_error == (
        "stage 1 (power_shelf, bring_up) ran past its time limit of 1800 s: its check "
        "members_answer did not hold: power shelf 4 (P): no answer yet"
    )


def test_a_crash_mid_stage_resumes_where_the_rows_stand_reflashing_nothing(nvl72, bob):
    system, nodes = nvl72
    rack_run = start_rack_run(system.rack, actor=bob, now=T0)
    settle_stage(rack_run, 0, T0)
    record_verify(stage(rack_run, 0).pk, True, "all answer")
    advance_rack_run(rack_run.pk, now=T0)
    # Mid switch stage: two of the three switch trays finish while no worker is there to hear.
    first, second, third = in_flight(rack_run, 1)
    succeed(first.run)
    succeed(second.run)
    assert advance_open_rack_runs(now=T0) == 1  # the sweep, after the restart
    assert statuses(rack_run, 1) == [DONE, DONE, RUNNING, RUNNING, RUNNING] + [W] * 4
    done_nodes = [first.node_id, second.node_id]
    assert Run.objects.filter(node_id__in=done_nodes).count() == 2  # not run (flashed) again
    assert in_flight(rack_run, 1)[0].run_id == third.run_id


def test_replacing_a_tray_mid_run_cancels_the_rack_run(nvl72, bob):
    system, nodes = nvl72
    rack_run = start_rack_run(system.rack, actor=bob, now=T0)
    old = nodes["compute_tray"][5]
    spare = factories.make_node("SPARE-CT", rack=None, position=None, sku=old.sku,
                                kind=NodeKind.COMPUTE_TRAY)  # fmt: skip
    replace_member(old, spare, actor=bob)
    rack_run = advance_twice(rack_run, T0)
    assert rack_run.status == RackRunStatus.CANCELLED
    assert rack_run.last_error == "the rack is discovering; start a new rack run"
    # Discovered again (the spare in its slot), a new rack run may start.
    assert start_rack_run(system.rack, actor=bob, now=T0).status == RackRunStatus.RUNNING


def test_a_rack_run_is_refused_clearly(nvl72, bob):
    system, nodes = nvl72
    with pytest.raises(RackRunRefused, match="is not a rack-scale system"):
        start_rack_run(factories.make_rack("PLAIN"), actor=bob)
    Node.objects.filter(pk=nodes["switch_tray"][8].pk).update(state=NodeState.DECOMMISSIONED)
    with pytest.raises(RackRunRefused, match="not fully discovered: 8 of 9 NVLink switch trays"):
        start_rack_run(system.rack, actor=bob)
    Node.objects.filter(pk=nodes["switch_tray"][8].pk).update(state=NodeState.ENROLLED)
    start_rack_run(system.rack, actor=bob, now=T0)
    with pytest.raises(RackRunRefused, match="is bringing up"):
        start_rack_run(system.rack, actor=bob)


def test_stages_from_the_manifest_replace_the_default(bob):
    stages = """rack_stages:
  - {kind: power_shelf, max_parallel: 4, verify: none, time_limit: 10m}
  - {kind: switch_tray, max_parallel: 9, verify: none, time_limit: 10m}
  - {kind: compute_tray, max_parallel: 18, verify: none, retries: 0, time_limit: 10m}
"""
    system, _ = factories.make_nvl72_rack(stages_yaml=stages)
    rack_run = start_rack_run(system.rack, actor=bob, now=T0)
    assert [settle_stage(rack_run, i, T0) for i in range(3)] == [4, 9, 18]
    rack_run.refresh_from_db()
    # Verify none: no check to wait for; the rack-wide gate is next.
    assert (rack_run.status, rack_run.stage_index) == (RackRunStatus.RUNNING, 3)
    assert RackSystem.objects.get(pk=system.pk).state == RackState.VALIDATING


def test_a_tray_whose_runs_flashed_nothing_is_not_power_cycled(nvl72, bob):
    system, _ = nvl72
    rack_run = start_rack_run(system.rack, actor=bob, now=T0)
    for index in range(2):
        settle_stage(rack_run, index, T0)
        record_verify(stage(rack_run, index).pk, True, "ok")
        advance_rack_run(rack_run.pk, now=T0)
    # The compute trays were at their manifest already: every firmware phase skipped.
    while running := in_flight(rack_run, 2):
        for member in running:
            succeed(member.run)
        advance_twice(rack_run, T0)
    record_verify(stage(rack_run, 2).pk, True, "ok")
    advance_twice(rack_run, T0)
    cycles = members(rack_run, 3)
    assert {(m.status, m.cycle_sent_at) for m in cycles} == {(DONE, None)}
    assert {m.reason for m in cycles} == {
        "nothing was flashed in this rack run: no power cycle needed"
    }
    assert describe(rack_run)["stages"][3]["peak_parallel"] == 0


def test_a_power_cycle_is_sent_once_and_a_refusal_is_retried(nvl72, bob):
    system, _ = nvl72
    rack_run = start_rack_run(system.rack, actor=bob, now=T0)
    for index in range(3):
        settle_stage(rack_run, index, T0)
        record_verify(stage(rack_run, index).pk, True, "ok")
        advance_rack_run(rack_run.pk, now=T0)
    member = in_flight(rack_run, 3)[0]
    # The lab's address has no BMC behind it: the reset is refused, and only one is ever sent.
    assert power_cycle_member(member.pk) is True
    assert power_cycle_member(member.pk) is False
    member.refresh_from_db()
    assert member.status == FAILED and member.reason.startswith("power cycle refused:")
    advance_rack_run(rack_run.pk, now=T0)
    member.refresh_from_db()
    assert (member.status, member.attempts, member.cycle_sent_at) == (RUNNING, 2, None)


def test_members_answer_names_the_trays_whose_bmc_is_silent(nvl72):
    system, nodes = nvl72
    verdict = members_answer(nodes["power_shelf"][:2])
    assert verdict.holds is False
    assert verdict.reason.startswith("2 of 2 do not answer: power shelf 1 (NVL01-power_shelf-01):")


def test_cancel_stops_the_rack_run_and_degrades_the_rack(nvl72, bob):
    system, _ = nvl72
    rack_run = start_rack_run(system.rack, actor=bob, now=T0)
    cancel_rack_run(rack_run, actor=bob, reason="shelf 1 reseated by hand")
    rack_run.refresh_from_db()
    assert (rack_run.status, rack_run.last_error) == (
        RackRunStatus.CANCELLED, "shelf 1 reseated by hand",
    )  # fmt: skip
    assert RackSystem.objects.get(pk=system.pk).state == RackState.DEGRADED
    with pytest.raises(RackRunRefused, match="has already ended"):
        cancel_rack_run(rack_run, actor=bob)


def test_member_plans_follow_their_kind(nvl72, bob):
    system, nodes = nvl72
    rack_run = start_rack_run(system.rack, actor=bob, now=T0)
    settle_stage(rack_run, 0, T0)
    record_verify(stage(rack_run, 0).pk, True, "ok")
    advance_rack_run(rack_run.pk, now=T0)
    switch_run = in_flight(rack_run, 1)[0].run
    phases = list(switch_run.phases.order_by("order").values_list("phase", flat=True))
    assert phases == ["preflight", "power_on", "bmc_firmware"]
    assert set(PHASE_NAMES) - set(phases)  # no OS phases for a device
