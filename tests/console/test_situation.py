"""The one sentence a node that needs a person shows, and the next step it offers."""

from __future__ import annotations

import pytest

from console.panel import node_panel
from fleet.choices import NodeState
from fleet.models import Node
from provisioning.choices import RunStatus
from tests.support import scenes

pytestmark = pytest.mark.django_db


def test_a_stuck_run_says_what_it_waits_for_and_offers_abort(rack, manifest):
    (node,) = scenes.build_rack(rack, {NodeState.PROVISIONING: 1})
    Node.objects.filter(pk=node.pk).update(
        attention="AC power cycle needed: the NIC firmware needs power removed from the node."
    )
    node.refresh_from_db()
    panel = node_panel(node)
    assert panel.situation.happened == (
        f"Run {panel.run.pk} is waiting for a person: AC power cycle needed: the NIC firmware "
        "needs power removed from the node."
    )
    assert "abort the run" in panel.situation.next_step
    assert [m.name for m in panel.moves] == ["abort", "skip"]


def test_gates_that_did_not_pass_say_which_and_offer_quarantine_or_revalidation(rack, manifest):
    (node,) = scenes.build_rack(rack, {NodeState.QUARANTINED: 1})
    # Set-up only: the node waits for a decision although two of its gates failed.
    Node.objects.filter(pk=node.pk).update(state=NodeState.AWAITING_APPROVAL)
    node.refresh_from_db()
    panel = node_panel(node)
    assert panel.situation.happened.startswith("Not every gate passed: ")
    assert "fail" in panel.situation.happened
    assert {"reprovision", "revalidate", "decommission"} <= {m.name for m in panel.moves}


def test_a_healthy_node_in_service_needs_nobody(rack, manifest):
    (node,) = scenes.build_rack(rack, {NodeState.IN_SERVICE: 1})
    panel = node_panel(node)
    assert panel.situation is None
    assert panel.run.status == RunStatus.SUCCEEDED
    assert [m.name for m in panel.moves] == ["suspect", "burn-in", "decommission"]
