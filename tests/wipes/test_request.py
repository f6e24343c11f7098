"""Filing a wipe: who may, which nodes are refused and why, and the same request again."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import AnonymousUser
from django.core.exceptions import PermissionDenied

from fleet.choices import EventKind, NodeState
from fleet.models import Event
from provisioning.choices import PhaseStatus, RunKind, RunStatus, WipeStatus
from provisioning.day2.wipes.requests import WipeRefused, request_wipe
from provisioning.models import Run, WipeRequest

from .conftest import ALLOCATION, TENANT, allocated_node


def test_a_fleet_admin_releases_nodes_and_each_gets_a_wipe_run(alice, nodes):
    wipe = request_wipe(nodes, TENANT, ALLOCATION, alice)

    assert (wipe.tenant, wipe.allocation_ref, wipe.requested_by) == (TENANT, ALLOCATION, alice)
    assert wipe.status == WipeStatus.IN_PROGRESS
    assert set(wipe.nodes.all()) == set(nodes)
    for node in nodes:
        node.refresh_from_db()
        assert node.state == NodeState.RELEASING
        run = Run.objects.get(node=node)
        assert (run.kind, run.status, run.started_by) == (RunKind.WIPE, RunStatus.QUEUED, alice)
        phases = list(run.phases.values_list("phase", flat=True))
        assert phases[0] == "drain" and "secure_erase" in phases
        assert not run.phases.exclude(status=PhaseStatus.PENDING).exists()
        moved = Event.objects.get(node=node, kind=EventKind.STATE_CHANGED)
        assert (moved.actor, moved.data["to"], moved.data["wipe_request"]) == (
            alice,
            NodeState.RELEASING,
            wipe.pk,
        )
        assert Event.objects.filter(node=node, kind=EventKind.WIPE, actor=alice).exists()


def test_the_tenant_platform_token_user_may_release_its_nodes(tina, nodes):
    wipe = request_wipe(nodes, TENANT, ALLOCATION, tina)
    assert wipe.requested_by == tina
    assert {n.state for n in wipe.nodes.all()} == {NodeState.RELEASING}


def test_the_same_request_again_is_a_no_op(alice, tina, nodes):
    first = request_wipe(nodes, TENANT, ALLOCATION, alice)
    events = Event.objects.count()

    again = request_wipe(list(reversed(nodes)), TENANT, ALLOCATION, tina)

    assert again.pk == first.pk and again.requested_by == alice
    assert WipeRequest.objects.count() == 1
    assert Run.objects.count() == 2
    assert Event.objects.count() == events


def test_the_same_allocation_with_other_nodes_is_refused(alice, rack, nodes):
    request_wipe(nodes[:1], TENANT, ALLOCATION, alice)
    with pytest.raises(WipeRefused, match="already has wipe request .* for other nodes"):
        request_wipe(nodes, TENANT, ALLOCATION, alice)
    assert Run.objects.count() == 1


def _refused(actor, nodes, tenant=TENANT, allocation=ALLOCATION) -> list[str]:
    states = {n.pk: n.state for n in nodes}
    with pytest.raises(WipeRefused) as refused:
        request_wipe(nodes, tenant, allocation, actor)
    # Nothing moved, nothing was filed: a refusal is all or nothing.
    assert not WipeRequest.objects.exists() and not Run.objects.exists()
    for node in nodes:
        node.refresh_from_db()
        assert node.state == states[node.pk]
    return refused.value.reasons


def test_a_node_of_another_tenant_is_refused_without_naming_that_tenant(alice, rack, manifest):
    mine = allocated_node(rack)
    theirs = allocated_node(rack, tenant="globex", allocation="globex-1")
    reasons = _refused(alice, [mine, theirs])
    assert reasons == [f"node {theirs.serial} is allocated to another tenant, not {TENANT}"]
    assert "globex" not in " ".join(reasons)


def test_an_unallocated_node_is_refused(alice, rack, manifest):
    free = allocated_node(rack, tenant="", allocation="")
    assert _refused(alice, [free]) == [f"node {free.serial} is allocated to no tenant, not acme"]


def test_a_node_of_another_allocation_of_the_tenant_is_refused(alice, rack, manifest):
    other = allocated_node(rack, allocation="acme-8")
    assert _refused(alice, [other]) == [f"node {other.serial} is not part of allocation acme-7"]


@pytest.mark.parametrize(
    "state", [NodeState.AWAITING_APPROVAL, NodeState.QUARANTINED, NodeState.RELEASING]
)
def test_a_node_not_in_service_is_refused(alice, rack, manifest, state):
    ok = allocated_node(rack)
    busy = allocated_node(rack, state=state)
    label = NodeState(state).label
    assert _refused(alice, [ok, busy]) == [f"node {busy.serial} is {label}, not in service"]


def test_every_refusal_is_listed_at_once(alice, rack, manifest):
    theirs = allocated_node(rack, tenant="globex", state=NodeState.FAILED)
    assert len(_refused(alice, [theirs])) == 2


@pytest.mark.parametrize("blank", ["tenant", "allocation"])
def test_tenant_and_allocation_are_required(alice, nodes, blank):
    kwargs = {"tenant": TENANT, "allocation": ALLOCATION, blank: "  "}
    assert len(_refused(alice, nodes, **kwargs)) == 1


def test_no_nodes_is_refused(alice, db):
    with pytest.raises(WipeRefused, match="at least one node"):
        request_wipe([], TENANT, ALLOCATION, alice)


@pytest.mark.parametrize("who", ["bob", "dora", "charlie", "anonymous"])
def test_people_without_the_permission_are_refused(request, nodes, who):
    actor = AnonymousUser() if who == "anonymous" else request.getfixturevalue(who)
    with pytest.raises(PermissionDenied):
        request_wipe(nodes, TENANT, ALLOCATION, actor)
    assert not WipeRequest.objects.exists()
    assert {n.state for n in nodes} == {NodeState.IN_SERVICE}


def test_a_wipe_run_that_fails_before_the_erase_fails_its_request_until_retried(alice, nodes):
    from provisioning.core.engine import fail_run
    from provisioning.core.runs import abort_run, retry_run

    wipe = request_wipe(nodes, TENANT, ALLOCATION, alice)
    first, second = (Run.objects.get(node=node) for node in nodes)
    fail_run(first, first.phases.get(phase="drain"), "the scheduler would not drain the node")
    wipe.refresh_from_db()
    assert wipe.status == WipeStatus.FAILED, "not 'in progress' for ever"
    said = (
        Event.objects.filter(kind=EventKind.WIPE, data__wipe_request=wipe.pk).order_by("pk").last()
    )
    assert f"failed: node {first.node.serial}: drain: the scheduler would not drain" in said.message
    assert (wipe.failed_node, wipe.failure_reason) == (
        first.node,
        "drain: the scheduler would not drain the node",
    )
    retry_run(Run.objects.get(pk=first.pk), actor=alice, reason="scheduler fixed")
    wipe.refresh_from_db()
    assert (wipe.status, wipe.failed_node, wipe.failure_reason) == (
        WipeStatus.IN_PROGRESS,
        None,
        "",
    )
    abort_run(Run.objects.get(pk=second.pk), actor=alice, reason="pulled from the rack")
    wipe.refresh_from_db()
    assert wipe.status == WipeStatus.FAILED
    assert (wipe.failed_node, wipe.failure_reason) == (second.node, "aborted: pulled from the rack")
