"""Decisions: approve and quarantine, who may, when they are refused, and the race between them."""

from __future__ import annotations

import threading

import pytest
from django.core.exceptions import PermissionDenied
from django.db import connection, connections

from acceptance import decisions
from acceptance.choices import DecisionKind
from acceptance.models import Decision
from fleet.choices import EventKind, NodeState
from fleet.models import Event, Node
from tests import factories
from tests.support import scenes

pytestmark = pytest.mark.django_db


def test_bob_approves_a_passed_node(bob, rack):
    node = scenes.awaiting_node(rack)
    decision = decisions.approve(node, bob, reason="all green")
    node.refresh_from_db()
    assert node.state == NodeState.IN_SERVICE
    assert (decision.kind, decision.actor, decision.override) == (DecisionKind.APPROVE, bob, False)
    assert decision.run == decisions.latest_run(node)
    kinds = list(Event.objects.filter(node=node).values_list("kind", flat=True)[:2])
    assert kinds == [EventKind.DECISION, EventKind.STATE_CHANGED]


def test_approval_is_refused_when_a_gate_failed(bob, rack):
    node = scenes.awaiting_node(rack, passed=False)
    with pytest.raises(decisions.DecisionRefused, match="not every gate passed.*Fabric"):
        decisions.approve(node, bob, reason="looks fine")
    with pytest.raises(PermissionDenied, match="gates did not all pass"):
        decisions.approve(node, bob, reason="looks fine", override=True)
    node.refresh_from_db()
    assert node.state == NodeState.AWAITING_APPROVAL
    assert not Decision.objects.exists()


def test_approval_is_refused_without_gate_results(bob, rack):
    node = factories.make_node(rack=rack)
    scenes.walk(node, NodeState.AWAITING_APPROVAL)
    with pytest.raises(decisions.DecisionRefused, match="no run"):
        decisions.approve(node, bob)


def test_alice_overrides_with_a_written_reason(alice, rack):
    node = scenes.awaiting_node(rack, passed=False)
    with pytest.raises(decisions.DecisionRefused, match="written reason"):
        decisions.approve(node, alice, override=True)
    decision = decisions.approve(
        node, alice, reason="NIC 0 reseated, verified by hand", override=True
    )
    node.refresh_from_db()
    assert node.state == NodeState.IN_SERVICE
    assert decision.override is True


@pytest.mark.parametrize("who", ["charlie", "dora"])
def test_users_without_the_permission_are_refused(who, request, rack):
    user = request.getfixturevalue(who)
    node = scenes.awaiting_node(rack)
    with pytest.raises(PermissionDenied):
        decisions.approve(node, user)
    with pytest.raises(PermissionDenied):
        decisions.quarantine(node, user, reason="no")
    with pytest.raises(PermissionDenied):
        decisions.approve_all_passed(rack, user)
    node.refresh_from_db()
    assert node.state == NodeState.AWAITING_APPROVAL


def test_quarantine_needs_a_reason(bob, rack):
    node = scenes.awaiting_node(rack)
    with pytest.raises(decisions.DecisionRefused, match="needs a reason"):
        decisions.quarantine(node, bob, reason="  ")
    decision = decisions.quarantine(node, bob, reason="fan noise in U7")
    node.refresh_from_db()
    assert node.state == NodeState.QUARANTINED
    assert (decision.kind, decision.reason) == (DecisionKind.QUARANTINE, "fan noise in U7")


def test_quarantine_from_a_state_the_table_forbids_is_refused(bob, rack):
    node = factories.make_node(rack=rack)
    with pytest.raises(decisions.DecisionRefused, match="not an allowed transition"):
        decisions.quarantine(node, bob, reason="x")


def test_a_stale_click_gets_a_clear_message(bob, rack):
    node = scenes.awaiting_node(rack)
    stale = Node.objects.get(pk=node.pk)
    decisions.approve(node, bob)
    with pytest.raises(decisions.DecisionConflict, match="someone else acted first"):
        decisions.quarantine(stale, bob, reason="too late")
    node.refresh_from_db()
    assert node.state == NodeState.IN_SERVICE


def test_approve_all_passed_makes_one_decision_per_passed_node(bob, rack):
    passed = [scenes.awaiting_node(rack) for _ in range(3)]
    failed = scenes.awaiting_node(rack, passed=False)
    made = decisions.approve_all_passed(rack, bob)
    assert sorted(d.node_id for d in made) == sorted(n.pk for n in passed)
    states = dict(Node.objects.filter(rack=rack).values_list("pk", "state"))
    assert {states[n.pk] for n in passed} == {NodeState.IN_SERVICE}
    assert states[failed.pk] == NodeState.AWAITING_APPROVAL


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_approve_and_quarantine_at_the_same_moment_exactly_one_wins(bob, alice, rack):
    """Two threads, two PostgreSQL connections, one barrier: the row lock settles it."""
    if connection.vendor != "postgresql":
        pytest.skip("needs two real database connections (PostgreSQL)")
    node = scenes.awaiting_node(rack)
    barrier = threading.Barrier(2)
    outcomes: dict[str, object] = {}

    def act(name, fn):
        try:
            mine = Node.objects.get(pk=node.pk)  # each thread reads on its own connection
            barrier.wait(timeout=10)
            outcomes[name] = fn(mine)
        except Exception as exc:  # noqa: BLE001 - the loser's exception is the assertion
            outcomes[name] = exc
        finally:
            connections.close_all()

    threads = [
        threading.Thread(target=act, args=("approve", lambda n: decisions.approve(n, bob))),
        threading.Thread(
            target=act,
            args=("quarantine", lambda n: decisions.quarantine(n, alice, reason="smoke")),
        ),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)

    won = [k for k, v in outcomes.items() if isinstance(v, Decision)]
    lost = [v for v in outcomes.values() if not isinstance(v, Decision)]
    assert len(won) == 1 and len(lost) == 1, outcomes
    assert isinstance(lost[0], decisions.DecisionConflict)
    assert "someone else acted first" in str(lost[0])
    node.refresh_from_db()
    expected = NodeState.IN_SERVICE if won == ["approve"] else NodeState.QUARANTINED
    assert node.state == expected
    assert Decision.objects.filter(node=node).count() == 1
