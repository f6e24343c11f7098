"""A tenant release of one node through the real pipeline on a lab rack.

Three nodes are provisioned and approved into service; one goes to acme, one to globex, the third
stays idle. acme's node is released alone: its fabric gate borrows the idle node (never globex's),
it comes back, and the request says "returned" only once it is approved back into service.
globex's node is released with a GPU that falls off the bus: its re-validation fails, and the
request says "failed", naming the node and why.
"""

from __future__ import annotations

import pytest
from django.utils import timezone

from acceptance import decisions
from acceptance.gates import GateName
from acceptance.models import GateResult
from fleet.choices import EventKind, NodeState
from fleet.models import Event, Node
from fleet.roles import FLEET_ADMIN
from lab.run import LabRun, LabRunConfig
from provisioning.choices import CertificateResult, RunKind, RunStatus, WipeStatus
from provisioning.day2.wipes.requests import request_wipe
from provisioning.models import Run, WipeCertificate
from tests import factories


def _release(lab: LabRun, node: Node, tenant: str, actor) -> tuple[Run, object]:
    Node.objects.filter(pk=node.pk).update(
        tenant=tenant, allocation_ref=f"{tenant}-1", allocated_at=timezone.now()
    )
    node.refresh_from_db()
    wipe = request_wipe([node], tenant, f"{tenant}-1", actor)
    run = Run.objects.get(node=node, kind=RunKind.WIPE)
    assert lab.wait({node.pk: run}), "the wipe run did not end in time"
    run.refresh_from_db()
    node.refresh_from_db()
    wipe.refresh_from_db()
    return run, wipe


@pytest.mark.timeout(900)
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_lone_node_comes_back_returned_and_a_failed_revalidation_fails_the_request(tmp_path):
    config = LabRunConfig(nodes=3, faults="none", speed=400, soak_hours=0.5, timeout_s=300)
    with LabRun(config, log_dir=tmp_path) as lab:
        first = lab.run_pass()
        assert {n["final_state"] for n in first["nodes"]} == {NodeState.AWAITING_APPROVAL}, first
        alice = factories.make_user("alice", FLEET_ADMIN)
        nodes = list(Node.objects.filter(pk__in=[n.pk for n in lab.nodes]).order_by("position"))
        for node in nodes:
            decisions.approve(node, alice, reason="lab rack accepted")
        released, sick, idle = nodes
        Node.objects.filter(pk=sick.pk).update(tenant="globex", allocation_ref="globex-1")

        run, wipe = _release(lab, released, "acme", alice)
        assert (run.status, released.state) == (RunStatus.SUCCEEDED, NodeState.AWAITING_APPROVAL), (
            run.last_error
        )
        # Erased and re-validated, not yet back in service: the request is not "returned" yet.
        assert wipe.status == WipeStatus.IN_PROGRESS
        (certificate,) = WipeCertificate.objects.filter(wipe_request=wipe)
        assert certificate.result == CertificateResult.PASSED
        fabric = GateResult.objects.get(run=run, gate=GateName.FABRIC)
        assert {p["b"] for p in fabric.metrics["pairs"]} == {idle.serial}
        assert Event.objects.filter(node=idle, kind=EventKind.FABRIC_PARTNER).exists()
        assert not Event.objects.filter(node=sick, kind=EventKind.FABRIC_PARTNER).exists()
        decisions.approve(released, alice, reason="re-validated after release")
        wipe.refresh_from_db()
        released.refresh_from_db()
        assert (released.state, wipe.status) == (NodeState.IN_SERVICE, WipeStatus.RETURNED)

        lab.hall.set_fault(sick.serial, "gpu_xid79:3")
        run, wipe = _release(lab, sick, "globex", alice)

    assert run.status == RunStatus.FAILED
    assert sick.state == NodeState.QUARANTINED
    assert wipe.status == WipeStatus.FAILED
    assert wipe.failed_node == sick
    assert wipe.failure_reason == run.last_error[:500]
    assert "GPU 3" in wipe.failure_reason
    # The erase itself passed: its certificate says so, and only that.
    (certificate,) = WipeCertificate.objects.filter(wipe_request=wipe)
    assert certificate.result == CertificateResult.PASSED
