"""Tenant release through the real pipeline on a lab rack (real web and worker processes).

Pass one provisions five nodes; they are approved into service and allocated: four to acme's
allocation, one to globex, whose first drive then refuses the erase. Both allocations are
released. acme's four nodes are drained, crypto-erased, reimaged, re-validated and, the profile
allowing it, back in service with four passed certificates; globex's node ends quarantined with
a failed certificate naming the drive, still globex's, never back in the pool.
"""

from __future__ import annotations

import pytest
from django.utils import timezone

from acceptance import decisions
from acceptance.models import AcceptanceProfile
from fleet.choices import NodeState
from fleet.models import Node
from fleet.roles import FLEET_ADMIN
from lab.manifests import profile_yaml
from lab.run import LabRun, LabRunConfig
from provisioning.choices import CertificateResult, PhaseStatus, RunKind, RunStatus, WipeStatus
from provisioning.day2.wipes.requests import request_wipe
from provisioning.models import Run, WipeCertificate
from tests import factories


def _allocate(nodes: list[Node], tenant: str, allocation: str, admin) -> None:
    for node in nodes:
        decisions.approve(node, admin, reason="lab rack accepted")
        Node.objects.filter(pk=node.pk).update(
            tenant=tenant, allocation_ref=allocation, allocated_at=timezone.now()
        )
        node.refresh_from_db()


def _return_without_a_click(config: LabRunConfig) -> AcceptanceProfile:
    current = AcceptanceProfile.objects.filter(status="published").get()
    text = profile_yaml(config.flavour, soak_hours=config.soak_hours, version="9.0.0")
    profile = AcceptanceProfile(yaml_text=text + "auto_return_to_service: true\n")
    profile.full_clean()
    profile.save()
    profile.publish()
    assert profile.sku == current.sku
    return profile


@pytest.mark.timeout(900)
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_tenant_allocation_comes_back_wiped_and_a_refusing_drive_is_quarantined(tmp_path):
    config = LabRunConfig(nodes=5, faults="none", speed=400, soak_hours=0.5, timeout_s=300)
    with LabRun(config, log_dir=tmp_path) as lab:
        first = lab.run_pass()
        assert first["finished"], first
        assert {n["final_state"] for n in first["nodes"]} == {NodeState.AWAITING_APPROVAL}

        alice = factories.make_user("alice", FLEET_ADMIN)
        nodes = list(Node.objects.filter(pk__in=[n.pk for n in lab.nodes]).order_by("position"))
        acme, globex = nodes[:4], nodes[4]
        _allocate(acme, "acme", "acme-7", alice)
        _allocate([globex], "globex", "globex-1", alice)
        profile = _return_without_a_click(config)
        lab_node = next(n for n in lab.hall.nodes if n.serial == globex.serial)
        refusing = lab_node.drives[0]["serial"]
        lab.hall.set_fault(lab_node.serial, f"erase_refused:{refusing}")
        erased_before = {n.serial: n.last_erased_at for n in nodes}

        acme_wipe = request_wipe(acme, "acme", "acme-7", alice)
        globex_wipe = request_wipe([globex], "globex", "globex-1", alice)
        runs = {n.pk: Run.objects.get(node=n, kind=RunKind.WIPE) for n in nodes}
        assert lab.wait(runs), "the wipe runs did not end in time"

    for node in acme:
        node.refresh_from_db()
        run = Run.objects.get(pk=runs[node.pk].pk)
        assert (node.state, run.status) == (NodeState.IN_SERVICE, RunStatus.SUCCEEDED), (
            node.serial,
            run.last_error,
        )
        assert (node.tenant, node.allocation_ref) == ("", "")
        assert node.last_erased_at > erased_before[node.serial]
        statuses = dict(run.phases.values_list("phase", "status"))
        assert statuses["drain"] == statuses["secure_erase"] == PhaseStatus.DONE
        assert statuses["os_install"] == PhaseStatus.DONE  # reimaged: the erase took the OS
        assert all(statuses[p] == PhaseStatus.DONE for p in statuses if p.startswith("gate:"))

    certificates = WipeCertificate.objects.filter(wipe_request=acme_wipe).order_by("node__position")
    assert [c.node for c in certificates] == acme
    for certificate in certificates:
        lab_drives = next(n for n in lab.hall.nodes if n.serial == certificate.node.serial).drives
        assert certificate.result == CertificateResult.PASSED
        assert sorted(d["serial"] for d in certificate.drives) == sorted(
            d["serial"] for d in lab_drives
        )
        assert {d["result"] for d in certificate.drives} == {"passed"}
        assert all(d["method"].startswith("NIST SP 800-88") for d in certificate.drives)
        assert certificate.requested_by == "alice"
        assert (
            certificate.approved_by == f"policy: profile {profile.version} auto_return_to_service"
        )
    acme_wipe.refresh_from_db()
    assert acme_wipe.status == WipeStatus.RETURNED

    globex.refresh_from_db()
    run = Run.objects.get(pk=runs[globex.pk].pk)
    assert (globex.state, run.status) == (NodeState.QUARANTINED, RunStatus.FAILED)
    assert run.last_error.startswith(f"secure_erase: drive {refusing}: erase failed")
    assert (globex.tenant, globex.last_erased_at) == ("globex", erased_before[globex.serial])
    (certificate,) = WipeCertificate.objects.filter(wipe_request=globex_wipe)
    assert certificate.result == CertificateResult.FAILED and certificate.approved_by == ""
    failed = [d for d in certificate.drives if d["result"] == "failed"]
    assert [d["serial"] for d in failed] == [refusing]
    assert "exited 5" in failed[0]["verification"]
    globex_wipe.refresh_from_db()
    assert globex_wipe.status == WipeStatus.FAILED
    assert (globex_wipe.failed_node, globex_wipe.failure_reason) == (
        globex,
        f"erase failed on {refusing} (certificate {certificate.pk})",
    )
    # Never back in the pool: a quarantined node cannot be approved into service.
    with pytest.raises(decisions.DecisionRefused):
        decisions.approve(globex, alice, reason="try", override=True)
