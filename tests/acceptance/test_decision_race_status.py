"""A decision that comes second is always 409, naming where the node is and who decided first.

Losers used to get 400 or 409 depending on which check they reached: a second quarantine hit
"not an allowed transition" (400), a stale one hit the compare-and-set (409, without the winner).
"""

from __future__ import annotations

import pytest

from acceptance import decisions
from fleet.choices import NodeState
from fleet.models import Node
from tests.api.conftest import client_for
from tests.support import scenes

pytestmark = pytest.mark.django_db


def verb(user, node, action: str, reason: str = "fan noise"):
    url = f"/api/v1/nodes/{node.pk}/{action}/"
    return client_for(user).post(url, {"reason": reason}, format="json")


@pytest.mark.parametrize(
    ("first", "second", "state", "winner_kind"),
    [
        ("quarantine", "quarantine", NodeState.QUARANTINED, "quarantine"),
        ("quarantine", "approve", NodeState.QUARANTINED, "quarantine"),
        ("approve", "approve", NodeState.IN_SERVICE, "approve"),
    ],
)
def test_the_second_decision_is_409_with_the_winner(
    alice, bob, rack, first, second, state, winner_kind
):
    node = scenes.awaiting_node(rack)
    assert verb(alice, node, first).status_code == 200
    lost = verb(bob, node, second)
    assert lost.status_code == 409, lost.content
    body = lost.json()
    assert body["state"] == state
    assert body["winner"]["decision"] == winner_kind
    assert body["winner"]["actor"] == "alice"
    verb_past = {"approve": "approved", "quarantine": "quarantined"}[winner_kind]
    assert body["detail"].endswith(f"alice {verb_past} it first")


def test_a_stale_quarantine_loses_to_the_approval_with_409_and_the_winner(alice, bob, rack):
    node = scenes.awaiting_node(rack)
    stale = Node.objects.get(pk=node.pk)  # bob's page, read while the node was awaiting
    decisions.approve(node, alice, reason="all green")
    with pytest.raises(decisions.DecisionConflict) as caught:
        decisions.quarantine(stale, bob, reason="fan noise")
    assert caught.value.state == NodeState.IN_SERVICE
    assert caught.value.winner.actor == alice
    assert str(caught.value).endswith("alice approved it first")


def test_a_refusal_that_is_no_race_stays_400(bob, rack):
    node = scenes.awaiting_node(rack)
    assert verb(bob, node, "quarantine", reason="").status_code == 400
