"""Decisions on a rack-scale system (issue 34): the rack approved or quarantined as one decision
with its members listed, one tray quarantined with the rack degraded, the wrong role refused,
and a rack whose NVLink fabric did not pass (or was never observed) refused, saying why."""

from __future__ import annotations

import threading

import pytest
from django.core.exceptions import PermissionDenied
from django.db import connection, connections

from acceptance import decisions, rack_decisions
from acceptance.choices import DecisionKind
from acceptance.models import Decision
from fleet.choices import EventKind, NodeKind, NodeState, RackState
from fleet.models import Event, Node, RackSystem
from tests.support import rack_scenes

pytestmark = pytest.mark.django_db
MEMBERS = 35  # 8 power shelves, 9 switch trays, 18 compute trays


def states(system: RackSystem) -> set[str]:
    return set(Node.objects.filter(rack=system.rack).values_list("state", flat=True))


def rack_state(system: RackSystem) -> str:
    return RackSystem.objects.get(pk=system.pk).state


def test_a_site_tech_approves_the_rack_and_every_member_in_one_decision(bob):
    system, members = rack_scenes.awaiting_nvl72()
    made = rack_decisions.approve_rack(system, bob, reason="fabric green, cabling checked")

    assert rack_state(system) == RackState.IN_SERVICE
    assert states(system) == {NodeState.IN_SERVICE}
    # Every member has its own decision in bob's name (nothing enters service without one).
    rows = Decision.objects.filter(node__rack=system.rack)
    assert rows.count() == MEMBERS == len(made.decisions)
    assert set(rows.values_list("kind", "actor__username")) == {(DecisionKind.APPROVE, "bob")}
    tray = members["compute_tray"][0]
    assert rows.get(node=tray).run == decisions.latest_run(tray)
    # The rack's one decision lists every member, by serial, kind and number.
    event = Event.objects.get(pk=made.event_id)
    assert (event.kind, event.node, event.rack, event.actor) == (
        EventKind.DECISION, None, system.rack, bob,
    )  # fmt: skip
    listed = {(m["serial"], m["kind"], m["member_index"]) for m in event.data["members"]}
    every = {(n.serial, n.kind, n.member_index) for ms in members.values() for n in ms}
    assert listed == every and len(listed) == MEMBERS
    assert "as one decision, 35 members: fabric green" in event.message
    moved = Event.objects.filter(rack=system.rack, kind=EventKind.RACK_STATE_CHANGED).first()
    assert moved.data["to"] == RackState.IN_SERVICE and len(moved.data["members"]) == MEMBERS


@pytest.mark.parametrize(
    ("fabric", "runs", "words"),
    [
        (
            "fail",
            True,
            r"failed: tray c04 \(serial \d+\) GPU 2 \(00000018:01:00.0, .*in clique 4027",
        ),
        ("error", True, r"unknown: .*tray c09 \(serial \d+\): reported nothing"),
        ("running", True, r"unknown: rack run \d+: the rack-wide verdict is still collecting"),
        (None, True, r"unknown: rack run \d+ has no rack-wide verdict"),
        ("pass", False, r"unknown: no rack run has judged the rack"),
    ],
    ids=["failed", "only-unknowns", "still-collecting", "no-verdict", "no-rack-run"],
)
def test_a_rack_whose_fabric_did_not_pass_is_refused_and_nothing_moves(bob, fabric, runs, words):
    system, _ = rack_scenes.awaiting_nvl72(fabric=fabric, runs=runs)
    pattern = rf"rack NVL01 cannot be approved: its NVLink fabric verdict is {words}"
    with pytest.raises(decisions.DecisionRefused, match=pattern):
        rack_decisions.approve_rack(system, bob)
    assert rack_state(system) == RackState.AWAITING_APPROVAL
    assert states(system) == {NodeState.AWAITING_APPROVAL}
    assert not Decision.objects.exists()


def test_a_compute_tray_with_a_failed_gate_or_a_member_not_waiting_is_named(bob):
    system, members = rack_scenes.awaiting_nvl72()
    tray = members["compute_tray"][6]
    decisions.latest_run(tray).gate_results.filter(gate="fabric").update(verdict="fail")
    shelf = members["power_shelf"][1]
    Node.objects.filter(pk=shelf.pk).update(state=NodeState.FAILED)  # set-up: a shelf that failed
    with pytest.raises(decisions.DecisionRefused) as refused:
        rack_decisions.approve_rack(system, bob)
    message = str(refused.value)
    assert f"power shelf 2 ({shelf.serial}) is failed" in message
    assert f"1 compute tray(s) without every gate passed: compute tray 7 ({tray.serial})" in message
    assert rack_state(system) == RackState.AWAITING_APPROVAL


@pytest.mark.parametrize("who", ["charlie", "dora"])
def test_who_may_not_approve_or_quarantine_is_refused(request, who):
    person = request.getfixturevalue(who)
    system, members = rack_scenes.awaiting_nvl72()
    with pytest.raises(PermissionDenied, match="not allowed to approve racks"):
        rack_decisions.approve_rack(system, person)
    with pytest.raises(PermissionDenied, match="not allowed to quarantine racks"):
        rack_decisions.quarantine_rack(system, person, reason="smoke")
    with pytest.raises(PermissionDenied, match="not allowed to quarantine nodes"):
        rack_decisions.quarantine_member(members["compute_tray"][0], person, reason="smoke")
    assert rack_state(system) == RackState.AWAITING_APPROVAL
    assert states(system) == {NodeState.AWAITING_APPROVAL}


def test_a_rack_not_awaiting_approval_is_a_lost_race(bob):
    system, _ = rack_scenes.awaiting_nvl72()
    rack_decisions.approve_rack(system, bob)
    with pytest.raises(decisions.DecisionConflict, match="is in service, not awaiting") as lost:
        rack_decisions.approve_rack(system, bob)
    assert lost.value.state == RackState.IN_SERVICE


def test_one_tray_quarantined_degrades_the_rack_naming_the_tray(bob):
    system, members = rack_scenes.awaiting_nvl72()
    tray = members["compute_tray"][2]
    decision = rack_decisions.quarantine_member(tray, bob, reason="GPU 2 in another clique")

    tray.refresh_from_db()
    assert tray.state == NodeState.QUARANTINED
    assert (decision.kind, decision.node, decision.actor) == (DecisionKind.QUARANTINE, tray, bob)
    assert rack_state(system) == RackState.DEGRADED
    moved = Event.objects.filter(rack=system.rack, kind=EventKind.RACK_STATE_CHANGED).first()
    assert moved.data == {
        "from": RackState.AWAITING_APPROVAL,
        "to": RackState.DEGRADED,
        "decision": DecisionKind.QUARANTINE,
        "decision_id": decision.pk,
        "member": tray.serial,
        "kind": NodeKind.COMPUTE_TRAY,
        "member_index": 3,
    }
    assert moved.message == f"compute tray 3 ({tray.serial}) quarantined: GPU 2 in another clique"
    # The other 34 members wait on, and the degraded rack cannot be approved as a whole.
    assert Node.objects.filter(rack=system.rack, state=NodeState.AWAITING_APPROVAL).count() == 34
    with pytest.raises(decisions.DecisionConflict, match="is degraded, not awaiting approval"):
        rack_decisions.approve_rack(system, bob)


def test_a_tray_pulled_from_an_in_service_rack_degrades_it(bob):
    system, members = rack_scenes.awaiting_nvl72()
    rack_decisions.approve_rack(system, bob)
    switch = Node.objects.get(pk=members["switch_tray"][3].pk)  # as the page shows it: in service
    rack_decisions.quarantine_member(switch, bob, reason="link 7 down on port 12")
    assert rack_state(system) == RackState.DEGRADED
    switch.refresh_from_db()
    assert switch.state == NodeState.QUARANTINED
    assert Node.objects.filter(rack=system.rack, state=NodeState.IN_SERVICE).count() == 34


def test_quarantining_the_rack_pulls_every_member_as_one_decision(bob):
    system, members = rack_scenes.awaiting_nvl72()
    with pytest.raises(decisions.DecisionRefused, match="needs a reason"):
        rack_decisions.quarantine_rack(system, bob, reason="  ")
    made = rack_decisions.quarantine_rack(system, bob, reason="rack leaks coolant")
    assert rack_state(system) == RackState.DEGRADED
    assert states(system) == {NodeState.QUARANTINED}
    assert len(made.decisions) == MEMBERS
    event = Event.objects.get(pk=made.event_id)
    assert len(event.data["members"]) == MEMBERS and event.data["kind"] == DecisionKind.QUARANTINE


def test_a_member_cannot_be_approved_alone(bob):
    system, members = rack_scenes.awaiting_nvl72()
    tray = members["compute_tray"][0]
    with pytest.raises(decisions.DecisionRefused, match="compute tray: approve its rack as one"):
        decisions.approve(tray, bob)
    assert decisions.approve_all_passed(system.rack, bob) == []
    assert states(system) == {NodeState.AWAITING_APPROVAL}


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_rack_approval_and_a_tray_quarantine_at_once_settle_on_one(bob, alice):
    """Two threads, two PostgreSQL connections, one barrier: the rack's row lock settles it,
    and either the whole rack is in service or the tray is out and the rack degraded."""
    if connection.vendor != "postgresql":
        pytest.skip("needs two real database connections (PostgreSQL)")
    system, members = rack_scenes.awaiting_nvl72()
    tray_id = members["compute_tray"][8].pk
    barrier = threading.Barrier(2)
    outcomes: dict[str, object] = {}

    def act(name, fn):
        try:
            mine = RackSystem.objects.get(pk=system.pk), Node.objects.get(pk=tray_id)
            barrier.wait(timeout=10)
            outcomes[name] = fn(*mine)
        except Exception as exc:  # noqa: BLE001 - the loser's exception is the assertion
            outcomes[name] = exc
        finally:
            connections.close_all()

    def approve(rack, _tray):
        return rack_decisions.approve_rack(rack, bob)

    def pull(_rack, tray):
        return rack_decisions.quarantine_member(tray, alice, reason="GPU 1 in clique 9")

    threads = [threading.Thread(target=act, args=a) for a in (("approve", approve), ("pull", pull))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)

    lost = [v for v in outcomes.values() if isinstance(v, Exception)]
    assert len(outcomes) == 2 and len(lost) == 1, outcomes
    assert isinstance(lost[0], decisions.DecisionConflict), lost[0]
    nodes = dict(Node.objects.filter(rack=system.rack).values_list("pk", "state"))
    if isinstance(outcomes["approve"], rack_decisions.RackDecision):
        assert rack_state(system) == RackState.IN_SERVICE
        assert set(nodes.values()) == {NodeState.IN_SERVICE}
    else:
        assert rack_state(system) == RackState.DEGRADED
        assert nodes.pop(tray_id) == NodeState.QUARANTINED
        assert set(nodes.values()) == {NodeState.AWAITING_APPROVAL}
        assert not Decision.objects.filter(kind=DecisionKind.APPROVE).exists()
