"""Acceptance profiles in the admin share the manifests' rules: drafts, publish, clone, diff."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from acceptance.models import AcceptanceProfile
from fleet.choices import DocumentStatus
from tests import factories

pytestmark = pytest.mark.django_db


def change_url(profile: AcceptanceProfile) -> str:
    return reverse("admin:acceptance_acceptanceprofile_change", args=[profile.pk])


def test_alice_adds_a_profile_draft(client, alice, sku):
    client.force_login(alice)
    response = client.post(
        reverse("admin:acceptance_acceptanceprofile_add"),
        {"yaml_text": factories.sample_profile_yaml()},
    )
    assert response.status_code == 302
    profile = AcceptanceProfile.objects.get()
    assert (profile.version, profile.status) == ("1.0.0", DocumentStatus.DRAFT)
    assert [g["gate"] for g in profile.spec["gates"]][:2] == ["attestation", "gpu_health"]


def test_an_unknown_threshold_names_line_and_field(client, alice, sku):
    text = factories.sample_profile_yaml().replace("min_busbw_fraction", "min_busbw")
    line = next(i for i, s in enumerate(text.splitlines(), 1) if "min_busbw:" in s)
    client.force_login(alice)
    response = client.post(reverse("admin:acceptance_acceptanceprofile_add"), {"yaml_text": text})
    assert response.status_code == 200
    assert f"line {line}: gates.3.thresholds.min_busbw: unknown threshold" in (
        response.content.decode()
    )


def test_a_published_profile_is_read_only(client, alice, profile):
    client.force_login(alice)
    html = client.get(change_url(profile)).content.decode()
    assert 'name="yaml_text"' not in html and "Clone as new draft" in html
    assert client.post(change_url(profile), {"yaml_text": "x: 1"}).status_code == 403
    profile.yaml_text = profile.yaml_text.replace("soak_hours: 72", "soak_hours: 1")
    with pytest.raises(ValidationError):
        profile.save()


def test_clone_edit_diff_and_publish(client, alice, profile):
    client.force_login(alice)
    client.post(reverse("admin:acceptance_acceptanceprofile_clone", args=[profile.pk]))
    draft = AcceptanceProfile.objects.get(version="1.0.1")
    text = draft.yaml_text.replace("soak_hours: 72", "soak_hours: 24")
    assert client.post(change_url(draft), {"yaml_text": text}).status_code == 302
    html = client.get(change_url(draft)).content.decode()
    assert "soak_hours: 72" in html and "soak_hours: 24" in html
    assert '<pre class="yaml-diff"' in html
    publish = reverse("admin:acceptance_acceptanceprofile_publish", args=[draft.pk])
    preview = client.get(publish).content.decode()
    assert "Publish hgx-h100-8gpu 1.0.1 in place of 1.0.0" in preview
    assert "soak_hours: 24" in preview and "behind" not in preview
    client.post(publish, {"confirm": "yes"})
    profile.refresh_from_db()
    draft.refresh_from_db()
    assert (profile.status, draft.status) == (DocumentStatus.RETIRED, DocumentStatus.PUBLISHED)
    assert (
        AcceptanceProfile.current_for(profile.sku).spec["gates"][-1]["thresholds"]["soak_hours"]
        == 24
    )
