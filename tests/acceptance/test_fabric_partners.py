"""Whom a node's fabric gate pairs with: healthy nodes of its rack, in-service ones borrowed when
the node is alone in the pipeline (a tenant release), the profile's rule when there is none."""

from __future__ import annotations

import pytest

from acceptance.choices import Verdict
from acceptance.fabric import choose_partners
from acceptance.gates import FABRIC, GateName
from acceptance.models import GateResult
from acceptance.partners import partner_choice
from acceptance.runner import GatePhase
from fleet.choices import EventKind, NodeState
from fleet.models import Event, Node
from provisioning.choices import PhaseStatus
from provisioning.core.phases.base import PhaseContext
from provisioning.core.runs import start_run
from provisioning.models import AgentSession, PhaseRecord
from provisioning.outcomes import Failure, Skipped
from tests import factories

pytestmark = pytest.mark.django_db


def _node(rack, serial: str, state: str, tenant: str = "", **kw) -> Node:
    node = factories.make_node(serial, rack=rack, **kw)
    # Set-up only: put the node where the scene needs it without walking the lifecycle.
    Node.objects.filter(pk=node.pk).update(state=state, tenant=tenant)
    node.refresh_from_db()
    return node


def test_the_plan_gives_pipeline_peers_and_borrows_only_to_make_up_two():
    assert choose_partners("a", ["b", "c", "d"], ["x"]).all == ["b", "d"]
    assert choose_partners("a", ["b"], ["y", "x"]).all == ["b", "x"]
    lone = choose_partners("a", [], ["z", "y", "x"])
    assert (lone.peers, lone.borrowed) == ((), ("x", "y"))
    assert choose_partners("a", [], []).all == []


def test_unhealthy_and_tenant_held_nodes_are_never_partners(rack, manifest):
    me = _node(rack, "N-ME", NodeState.VALIDATING)
    _node(rack, "N-PEER", NodeState.VALIDATING)
    _node(rack, "N-IDLE", NodeState.IN_SERVICE)
    _node(rack, "N-ACME", NodeState.IN_SERVICE, tenant="acme")
    _node(rack, "N-QUAR", NodeState.QUARANTINED)
    _node(rack, "N-FAIL", NodeState.FAILED)
    _node(rack, "N-FIX", NodeState.BREAK_FIX)
    _node(factories.make_rack("R02"), "N-AWAY", NodeState.VALIDATING)
    partners = partner_choice(me)
    assert (partners.peers, partners.borrowed) == (("N-PEER",), ("N-IDLE",))


def _fabric_ctx(node: Node) -> PhaseContext:
    AgentSession.objects.create(node=node, boot_id="b1", environment="ephemeral", token_hash="t1")
    run = start_run(node)
    record = run.phases.get(phase=f"gate:{GateName.FABRIC}")
    PhaseRecord.objects.filter(pk=record.pk).update(status=PhaseStatus.RUNNING)
    record.refresh_from_db()
    return PhaseContext(run=run, node=node, record=record, manifest=run.manifest.spec)


def test_a_lone_node_borrows_idle_in_service_nodes_and_says_so_on_them(rack, manifest, profile):
    me = _node(rack, "N-ME", NodeState.ENROLLED)
    idle = [_node(rack, f"N-IDLE{i}", NodeState.IN_SERVICE) for i in range(3)]
    ctx = _fabric_ctx(me)
    outcome = GatePhase(FABRIC).send_tools(ctx, {})
    assert ctx.record.stage == "running", outcome
    tools = ctx.record.command.params["tools"]
    assert sorted({t["peer"] for t in tools}) == ["N-IDLE0", "N-IDLE1"]
    lent = Event.objects.filter(kind=EventKind.FABRIC_PARTNER)
    assert sorted(lent.values_list("node__serial", flat=True)) == ["N-IDLE0", "N-IDLE1"]
    assert "lent to N-ME as NCCL partner" in lent.first().message
    assert not Event.objects.filter(node=idle[2], kind=EventKind.FABRIC_PARTNER).exists()


def test_a_node_with_no_healthy_partner_follows_the_profile(rack, manifest, profile):
    me = _node(rack, "N-ME", NodeState.ENROLLED)
    _node(rack, "N-ACME", NodeState.IN_SERVICE, tenant="acme")
    _node(rack, "N-QUAR", NodeState.QUARANTINED)
    ctx = _fabric_ctx(me)
    stops = GatePhase(FABRIC).send_tools(ctx, {})
    assert isinstance(stops, Failure)
    assert f"no healthy partner node in {rack.name}" in stops.reason
    result = GateResult.objects.get(run=ctx.run, gate=GateName.FABRIC)
    assert result.verdict == Verdict.ERROR
    skips = GatePhase(FABRIC).send_tools(ctx, {"lone_node_skips": 1})
    assert isinstance(skips, Skipped)
    assert "the profile lets a lone node skip the fabric gate" in skips.compared["reason"]
