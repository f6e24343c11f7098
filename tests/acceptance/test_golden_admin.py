"""Golden measurements recorded from a reference node: shown first, pinned into a new draft.

The reference node is a software TPM that measured a recorded boot and attested through the
real gate, with a manifest that pins nothing yet; the admin then pins what it showed.
"""

from __future__ import annotations

import pytest
from django.contrib.admin import helpers
from django.urls import reverse

from acceptance.golden import GoldenRefused, plan_golden
from acceptance.models import GateResult
from fleet.choices import DocumentStatus
from fleet.models import Event, Manifest
from provisioning.choices import RunStatus
from provisioning.models import Run
from provisioning.outcomes import Done
from tests.acceptance.test_attestation_gate import attest, gate_ctx, hardware
from tests.acceptance.test_tpm_quote import measure_boot
from tests.support.swtpm import software_tpm

pytestmark = pytest.mark.django_db
CHANGELIST = reverse("admin:acceptance_gateresult_changelist")


@pytest.fixture
def reference_node(node, profile, manifest, tmp_path):
    """The reference node attested once, its TPM still running: (its result, its hardware)."""
    with software_tpm(tmp_path) as tpm:
        measure_boot(tpm, "event-bootorder")
        hw = hardware(tmp_path / "node", tpm.tcti, "event-bootorder")
        ctx = gate_ctx(node, manifest.spec)
        outcome, _ = attest(ctx, hw, manifest.spec)
        assert isinstance(outcome, Done), outcome
        yield GateResult.objects.get(node=node), hw


@pytest.fixture
def reference(reference_node) -> GateResult:
    return reference_node[0]


def post(client, result: GateResult, **extra):
    data = {"action": "record_golden", helpers.ACTION_CHECKBOX_NAME: [result.pk], **extra}
    return client.post(CHANGELIST, data)


def test_alice_sees_what_will_be_pinned_before_anything_changes(client, alice, reference):
    client.force_login(alice)
    response = post(client, reference)
    assert response.status_code == 200
    html = response.content.decode()
    assert "Record golden measurements from" in html
    assert 'id="golden-measurements"' in html
    kernel = reference.metrics["tpm"]["measurements"]["kernel"][0]["digest"]
    assert kernel in html  # the kernel's digest, in the table and the diff
    assert "+attestation:" in html
    assert Manifest.objects.count() == 1  # nothing pinned yet


def test_alice_pins_them_into_a_new_draft_that_then_attests(
    client, alice, reference_node, manifest
):
    reference, hw = reference_node
    client.force_login(alice)
    response = post(client, reference, pin="yes")
    draft = Manifest.objects.exclude(pk=manifest.pk).get()
    assert response.status_code == 302
    assert response["Location"] == reverse("admin:fleet_manifest_change", args=[draft.pk])
    assert draft.status == DocumentStatus.DRAFT and draft.version == "1.0.1"
    golden = draft.spec["attestation"]
    assert golden["pcrs"] == list(range(10))
    assert set(golden["measurements"]) == {
        "firmware", "bootloader", "secure_boot", "kernel", "initramfs",
    }  # fmt: skip
    assert golden["measurements"]["bootloader"]["count"] == 2
    seen = reference.metrics["tpm"]["measurements"]["initramfs"]
    assert golden["measurements"]["initramfs"]["digests"] == [seen[0]["digest"]]
    assert Event.objects.filter(node=reference.node, message__contains="golden values").exists()
    manifest.refresh_from_db()
    assert manifest.status == DocumentStatus.PUBLISHED  # published versions are never edited
    # The same node, judged by the draft's golden values, attests (now required, and compared).
    Run.objects.update(status=RunStatus.SUCCEEDED)
    ctx = gate_ctx(reference.node, draft.spec, boot="b2", again=True)
    outcome, _ = attest(ctx, hw, draft.spec)
    assert isinstance(outcome, Done), outcome
    again = GateResult.objects.get(run=ctx.run)
    assert again.findings == [] and again.metrics["tpm_required"] is True


def test_a_result_without_a_verified_quote_is_no_reference(client, alice, reference):
    GateResult.objects.filter(pk=reference.pk).update(metrics={"tpm": {"quote_verified": False}})
    reference.refresh_from_db()
    with pytest.raises(GoldenRefused, match="no verified TPM quote"):
        plan_golden(reference)
    client.force_login(alice)
    response = post(client, reference, pin="yes")
    assert response.status_code == 302
    assert Manifest.objects.count() == 1


def test_a_site_tech_cannot_pin(client, bob, reference):
    client.force_login(bob)
    response = post(client, reference, pin="yes")
    assert response.status_code in (302, 403)
    assert Manifest.objects.count() == 1
