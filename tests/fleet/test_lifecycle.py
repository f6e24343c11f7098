"""Every allowed and every forbidden lifecycle transition, generated from the table."""

from __future__ import annotations

import itertools

import pytest

from fleet.choices import EventKind, NodeState
from fleet.lifecycle import (
    TRANSITIONS,
    TransitionConflict,
    TransitionNotAllowed,
    transition,
)
from fleet.models import Event, Node

ALL_PAIRS = list(itertools.product(NodeState.values, NodeState.values))
ALLOWED = sorted(TRANSITIONS)
FORBIDDEN = [pair for pair in ALL_PAIRS if pair not in TRANSITIONS]


def _node_in(state: str) -> Node:
    from tests.factories import make_node

    node = make_node()
    # Test set-up only: put the node in the starting state without going through the table.
    Node.objects.filter(pk=node.pk).update(state=state)
    node.refresh_from_db()
    return node


@pytest.mark.django_db
@pytest.mark.parametrize(("from_state", "to_state"), ALLOWED)
def test_allowed_transition_moves_the_node_and_writes_an_event(from_state, to_state, bob):
    node = _node_in(from_state)
    result = transition(node, to_state, actor=bob, reason="test")
    node.refresh_from_db()
    assert node.state == to_state
    event = Event.objects.get(pk=result.event_id)
    assert event.kind == EventKind.STATE_CHANGED
    assert event.data["from"] == from_state and event.data["to"] == to_state
    assert event.actor == bob


@pytest.mark.django_db
@pytest.mark.parametrize(("from_state", "to_state"), FORBIDDEN)
def test_forbidden_transition_is_refused_and_changes_nothing(from_state, to_state):
    node = _node_in(from_state)
    with pytest.raises(TransitionNotAllowed, match="not an allowed transition"):
        transition(node, to_state)
    node.refresh_from_db()
    assert node.state == from_state
    assert not Event.objects.filter(node=node).exists()


@pytest.mark.django_db
def test_stale_state_loses_to_whoever_moved_first():
    node = _node_in(NodeState.AWAITING_APPROVAL)
    stale = Node.objects.get(pk=node.pk)
    transition(node, NodeState.IN_SERVICE)
    with pytest.raises(TransitionConflict, match="someone else acted first"):
        transition(stale, NodeState.QUARANTINED)
    node.refresh_from_db()
    assert node.state == NodeState.IN_SERVICE


def test_every_transition_has_its_sentence():
    assert all(sentence.strip().endswith(".") for sentence in TRANSITIONS.values())


@pytest.mark.django_db
def test_events_are_append_only():
    node = _node_in(NodeState.ENROLLED)
    result = transition(node, NodeState.PROVISIONING)
    event = Event.objects.get(pk=result.event_id)
    with pytest.raises(TypeError):
        event.save()
    with pytest.raises(TypeError):
        event.delete()
    with pytest.raises(TypeError):
        Event.objects.filter(pk=event.pk).update(message="x")
