"""The certificate an erase writes, what it moves, and who it says approved the node back."""

from __future__ import annotations

import json

import pytest
from django.utils import timezone

from acceptance import decisions
from acceptance.models import AcceptanceProfile
from fleet.choices import EventKind, NodeState
from fleet.lifecycle import transition
from fleet.models import Event, Node
from provisioning.choices import CertificateResult, RunStatus, WipeStatus
from provisioning.core.completion import complete_run
from provisioning.day2.wipes.certificates import certificate_document, erase_finished
from provisioning.day2.wipes.requests import request_wipe
from provisioning.models import Run, WipeCertificate
from tests import factories

from .conftest import ALLOCATION, TENANT, drive_report

CERTIFICATE_KEYS = {
    "certificate",
    "standard",
    "purpose",
    "scope",
    "result",
    "node",
    "tenant",
    "allocation_ref",
    "wipe_request",
    "run",
    "drives",
    "firmware_restored",
    "requested_by",
    "approved_by",
    "started_at",
    "finished_at",
    "issued_at",
}
DRIVE_KEYS = {
    "name",
    "model",
    "serial",
    "method",
    "technique",
    "tool",
    "exit_code",
    "result",
    "verification",
    "started_at",
    "finished_at",
}


def _wiping(actor, nodes) -> list[Run]:
    """File the wipe and move every node on to wiping, as the drain phase would."""
    request_wipe(nodes, TENANT, ALLOCATION, actor)
    for node in nodes:
        node.refresh_from_db()
        transition(node, NodeState.WIPING, actor_label="test")
    return [Run.objects.get(node=node) for node in nodes]


def test_a_passed_erase_certifies_every_drive_and_sends_the_node_to_reimage(alice, nodes):
    run, _ = _wiping(alice, nodes)
    node = run.node
    drives = [drive_report(node, 0), drive_report(node, 1, method="opal_psid_revert")]

    certificate = erase_finished(run, drives, passed=True)

    assert certificate.result == CertificateResult.PASSED
    assert (certificate.node, certificate.run, certificate.requested_by) == (node, run, "alice")
    assert certificate.approved_by == ""
    assert [d["serial"] for d in certificate.drives] == [f"{node.serial}-D0", f"{node.serial}-D1"]
    assert certificate.drives[0]["method"] == (
        "NIST SP 800-88 Rev. 1: Purge by cryptographic erase (NVMe Sanitize, Crypto Erase action)"
    )
    assert certificate.drives[1]["method"].endswith("(TCG Opal PSID revert)")
    assert set(certificate.drives[0]) == DRIVE_KEYS
    assert certificate.started_at.isoformat() == "2026-01-05T10:00:00+00:00"
    assert certificate.finished_at.isoformat() == "2026-01-05T10:00:20+00:00"
    node.refresh_from_db()
    assert node.state == NodeState.PROVISIONING
    assert (node.tenant, node.allocation_ref, node.allocated_at) == ("", "", None)
    assert node.last_erased_at is not None
    assert Event.objects.filter(node=node, kind=EventKind.WIPE, data__certificate=certificate.pk)
    # One of two nodes certified: the request is still in progress.
    assert certificate.wipe_request.status == WipeStatus.IN_PROGRESS


def test_the_request_is_returned_only_when_every_node_is_back_in_service(alice, nodes):
    runs = _wiping(alice, nodes)
    wipe = runs[0].node.wipe_requests.get()
    for run in runs:
        erase_finished(run, [drive_report(run.node, i) for i in range(2)], passed=True)
    # Every erase passed: the nodes are still to be reimaged and re-validated.
    wipe.refresh_from_db()
    assert wipe.status == WipeStatus.IN_PROGRESS
    for run in runs:
        Run.objects.filter(pk=run.pk).update(status=RunStatus.SUCCEEDED)
        _awaiting_approval(run.node)
    decisions.approve(runs[0].node, alice, reason="gates checked by hand", override=True)
    wipe.refresh_from_db()
    assert wipe.status == WipeStatus.IN_PROGRESS, "one node of two is back"
    decisions.approve(runs[1].node, alice, reason="gates checked by hand", override=True)
    wipe.refresh_from_db()
    assert (wipe.status, wipe.failed_node, wipe.failure_reason) == (WipeStatus.RETURNED, None, "")
    said = Event.objects.filter(kind=EventKind.WIPE, data__status=WipeStatus.RETURNED)
    assert said.count() == 2  # one on each node
    assert "every node erased and back in service" in said.first().message


def test_a_drive_that_refused_the_erase_fails_the_certificate_and_keeps_the_node(alice, nodes):
    run, _ = _wiping(alice, nodes)
    node = run.node
    refused = drive_report(node, 1, result="failed", exit_code=5, verification="nvme exited 5")

    certificate = erase_finished(run, [drive_report(node, 0), refused], passed=False)

    assert certificate.result == CertificateResult.FAILED
    assert [d["result"] for d in certificate.drives] == ["passed", "failed"]
    assert certificate.drives[1]["verification"] == "nvme exited 5"
    node.refresh_from_db()
    # The engine quarantines it; until then it stays where the erase left it, still the tenant's.
    assert (node.state, node.tenant) == (NodeState.WIPING, TENANT)
    assert node.last_erased_at is None
    certificate.wipe_request.refresh_from_db()
    assert certificate.wipe_request.status == WipeStatus.FAILED
    assert certificate.wipe_request.failed_node == node
    assert certificate.wipe_request.failure_reason == (
        f"erase failed on {node.serial}-D1 (certificate {certificate.pk})"
    )


def test_a_drive_the_agent_never_reported_fails_the_certificate(alice, nodes):
    run, _ = _wiping(alice, nodes)
    node = run.node

    certificate = erase_finished(run, [drive_report(node, 0)], passed=True)

    assert certificate.result == CertificateResult.FAILED
    missing = certificate.drives[1]
    assert (missing["serial"], missing["result"]) == (f"{node.serial}-D1", "failed")
    assert "did not report" in missing["verification"]
    node.refresh_from_db()
    assert node.state == NodeState.WIPING


def test_a_repeated_look_writes_no_second_certificate(alice, nodes):
    run, _ = _wiping(alice, nodes)
    drives = [drive_report(run.node, i) for i in range(2)]
    first = erase_finished(run, drives, passed=True)
    assert erase_finished(run, drives, passed=True).pk == first.pk
    assert WipeCertificate.objects.count() == 1


def test_a_certificate_is_immutable(alice, nodes):
    run, _ = _wiping(alice, nodes)
    certificate = erase_finished(run, [drive_report(run.node, i) for i in range(2)], passed=True)
    certificate.result = CertificateResult.FAILED
    with pytest.raises(TypeError, match="immutable"):
        certificate.save()


def _awaiting_approval(node: Node) -> None:
    node.refresh_from_db()
    transition(node, NodeState.VALIDATING, actor_label="test")
    transition(node, NodeState.AWAITING_APPROVAL, actor_label="test")


def test_the_approval_names_who_let_the_node_back_into_service(alice, nodes):
    run, _ = _wiping(alice, nodes)
    certificate = erase_finished(run, [drive_report(run.node, i) for i in range(2)], passed=True)
    _awaiting_approval(run.node)

    # No gate results in this unit test: alice approves with an override and a reason.
    decisions.approve(run.node, alice, reason="gates checked by hand", override=True)

    certificate.refresh_from_db()
    assert certificate.approved_by == "alice"
    assert certificate_document(certificate)["approved_by"] == "alice"
    assert Event.objects.filter(node=run.node, kind=EventKind.WIPE, actor_label="alice").exists()


def test_an_approval_of_a_node_without_a_wipe_run_touches_no_certificate(alice, nodes, rack):
    run, other = _wiping(alice, nodes)
    certificate = erase_finished(run, [drive_report(run.node, i) for i in range(2)], passed=True)
    # The node's latest run is a plain provisioning run: its approval is not the wipe's.
    Run.objects.filter(pk=run.pk).update(status=RunStatus.SUCCEEDED)
    Run.objects.create(node=run.node, manifest=run.manifest, status=RunStatus.SUCCEEDED)
    _awaiting_approval(run.node)
    decisions.approve(run.node, alice, reason="by hand", override=True)
    certificate.refresh_from_db()
    assert certificate.approved_by == ""


def test_the_profile_may_return_a_revalidated_node_without_a_click(alice, nodes):
    text = factories.sample_profile_yaml().replace(
        "auto_return_to_service: false", "auto_return_to_service: true"
    )
    profile = AcceptanceProfile(yaml_text=text)
    profile.full_clean()
    profile.save()
    profile.publish()
    run, _ = _wiping(alice, nodes)
    certificate = erase_finished(run, [drive_report(run.node, i) for i in range(2)], passed=True)
    Run.objects.filter(pk=run.pk).update(status=RunStatus.RUNNING, started_at=timezone.now())

    complete_run(run)

    run.node.refresh_from_db()
    assert run.node.state == NodeState.IN_SERVICE
    certificate.refresh_from_db()
    assert certificate.approved_by == f"policy: profile {profile.version} auto_return_to_service"


def test_the_document_has_every_field_the_certificate_states(alice, nodes):
    run, _ = _wiping(alice, nodes)
    certificate = erase_finished(run, [drive_report(run.node, i) for i in range(2)], passed=True)
    document = json.loads(json.dumps(certificate_document(certificate)))
    assert set(document) == CERTIFICATE_KEYS
    assert document["node"]["serial"] == run.node.serial
    assert (document["tenant"], document["allocation_ref"]) == (TENANT, ALLOCATION)
    assert document["standard"] == "NIST SP 800-88 Rev. 1"
    assert document["purpose"] == "Purge by cryptographic erase"
    assert {tuple(sorted(d)) for d in document["drives"]} == {tuple(sorted(DRIVE_KEYS))}


def test_a_drive_report_quoting_the_bmc_password_is_certified_redacted(alice, nodes):
    # The certificate goes to the tenant and to /api/v1/wipe-certificates/: the agent's words
    # on a drive are the node's, and may quote what it must not (issue 30).
    run, _ = _wiping(alice, nodes)
    node = run.node
    node.bmc_password = "Tr0ub4dor-bmc-&3"
    node.save(update_fields=["bmc_password"])
    leaky = drive_report(node, 1, result="failed", exit_code=5,
                         verification="sedutil: ipmitool -P Tr0ub4dor-bmc-&3 refused")  # fmt: skip

    certificate = erase_finished(run, [drive_report(node, 0), leaky], passed=False)

    assert certificate.drives[1]["verification"] == "sedutil: ipmitool -P [redacted] refused"
    assert "Tr0ub4dor" not in json.dumps(certificate_document(certificate))


def test_the_certificate_records_the_firmware_a_tenant_flashed_and_the_wipe_restored(
    alice, nodes, client
):
    # The tenant flashed its own BMC and changed a BIOS setting; the wipe run's phases, which
    # run before the erase, brought both back to the manifest.
    run, _ = _wiping(alice, nodes)
    run.phases.filter(phase="bmc_firmware").update(
        changes=[{"component": "bmc", "from": "1.14.0-tenant", "to": "1.12.0"}]
    )
    run.phases.filter(phase="bios_settings").update(
        changes=[{"component": "SriovGlobalEnable", "from": "Disabled", "to": "Enabled"}]
    )
    certificate = erase_finished(run, [drive_report(run.node, i) for i in range(2)], passed=True)
    assert certificate.firmware_restored == [
        {"component": "bmc", "from": "1.14.0-tenant", "to": "1.12.0", "phase": "bmc_firmware"},
        {"component": "SriovGlobalEnable", "from": "Disabled", "to": "Enabled",
         "phase": "bios_settings"},
    ]  # fmt: skip
    assert certificate_document(certificate)["firmware_restored"] == certificate.firmware_restored
    client.force_login(alice)
    page = client.get(f"/wipes/certificates/{certificate.pk}/").content.decode()
    assert "1.14.0-tenant" in page and "SriovGlobalEnable" in page

    other = erase_finished(
        _wiping_second(nodes), [drive_report(nodes[1], i) for i in range(2)], passed=True
    )
    assert other.firmware_restored == []
    page = client.get(f"/wipes/certificates/{other.pk}/").content.decode()
    assert "already matched the manifest" in page


def _wiping_second(nodes) -> Run:
    return Run.objects.get(node=nodes[1])


def test_restored_versions_are_kept_redacted(alice, nodes):
    # A BMC that echoes its own password into a version string must not put it on a document.
    run, _ = _wiping(alice, nodes)
    password = run.node.bmc_password
    run.phases.filter(phase="bmc_firmware").update(
        changes=[{"component": "bmc", "from": f"1.0 (user admin:{password})", "to": "1.12.0"}]
    )
    certificate = erase_finished(run, [drive_report(run.node, i) for i in range(2)], passed=True)
    assert password not in json.dumps(certificate_document(certificate))
    assert certificate.firmware_restored[0]["to"] == "1.12.0"
