"""Golden manifests in the admin: YAML editing, errors by line, publish, clone, diff, immutability."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from fleet.choices import DocumentStatus
from fleet.models import Manifest
from tests import factories

pytestmark = pytest.mark.django_db

ADD_URL = reverse("admin:fleet_manifest_add")


def change_url(doc: Manifest) -> str:
    return reverse("admin:fleet_manifest_change", args=[doc.pk])


def test_alice_adds_a_draft_from_yaml(client, alice, sku):
    client.force_login(alice)
    response = client.post(ADD_URL, {"yaml_text": factories.sample_manifest_yaml()})
    assert response.status_code == 302
    manifest = Manifest.objects.get()
    assert (manifest.sku, manifest.version, manifest.status) == (sku, "1.0.0", "draft")
    assert manifest.created_by == alice
    assert manifest.spec["firmware"]["bmc"]["version"] == "7.10.30.00"


def test_the_add_form_is_a_monospace_yaml_textarea(client, alice):
    client.force_login(alice)
    html = client.get(ADD_URL).content.decode()
    assert '<textarea name="yaml_text"' in html
    assert "monospace" in html


def test_errors_in_the_form_name_line_and_field(client, alice, sku):
    text = factories.sample_manifest_yaml().replace("  hgx:\n", "  gpu:\n")
    line = next(i for i, s in enumerate(text.splitlines(), 1) if s == "  gpu:")
    client.force_login(alice)
    response = client.post(ADD_URL, {"yaml_text": text})
    assert response.status_code == 200
    assert f"line {line}: firmware.gpu: unknown component" in response.content.decode()
    assert not Manifest.objects.exists()


def test_a_draft_is_edited_and_its_spec_follows(client, alice, sku):
    draft = factories.make_manifest(publish=False)
    client.force_login(alice)
    text = draft.yaml_text.replace("bios_settings:\n", "bios_settings:\n  NumaNodesPerSocket: 2\n")
    response = client.post(change_url(draft), {"yaml_text": text})
    assert response.status_code == 302
    draft.refresh_from_db()
    assert draft.spec["bios_settings"]["NumaNodesPerSocket"] == 2


def test_a_published_manifest_cannot_be_saved_with_new_yaml(manifest):
    manifest.yaml_text += "\n# sneaky\n"
    with pytest.raises(ValidationError, match="published and cannot be edited"):
        manifest.save()
    with pytest.raises(ValidationError, match="clone it as a new draft"):
        manifest.full_clean()
    manifest.refresh_from_db()
    assert "sneaky" not in manifest.yaml_text


def test_the_admin_shows_a_published_manifest_read_only_with_clone(client, alice, manifest):
    client.force_login(alice)
    html = client.get(change_url(manifest)).content.decode()
    assert 'name="yaml_text"' not in html
    assert '<pre class="yaml-source"' in html
    assert "Clone as new draft" in html
    assert 'name="publish"' not in html


def test_the_admin_refuses_a_post_to_a_published_manifest(client, alice, manifest):
    client.force_login(alice)
    response = client.post(change_url(manifest), {"yaml_text": "sku: x\n"})
    assert response.status_code == 403
    manifest.refresh_from_db()
    assert manifest.yaml_text == factories.sample_manifest_yaml()


def test_clone_as_new_draft(client, alice, manifest):
    client.force_login(alice)
    response = client.post(reverse("admin:fleet_manifest_clone", args=[manifest.pk]))
    clone = Manifest.objects.get(version="1.0.1")
    assert response.status_code == 302 and response.url == change_url(clone)
    assert clone.status == DocumentStatus.DRAFT
    assert clone.created_by == alice
    assert 'version: "1.0.1"' in clone.yaml_text
    html = client.get(change_url(clone)).content.decode()
    assert 'name="yaml_text"' in html
    assert 'name="publish"' in html


def test_publish_retires_the_previous_version(client, alice, manifest):
    draft = manifest.clone_as_draft(actor=alice)
    client.force_login(alice)
    response = client.post(
        reverse("admin:fleet_manifest_publish", args=[draft.pk]), {"confirm": "yes"}
    )
    assert response.status_code == 302
    draft.refresh_from_db()
    manifest.refresh_from_db()
    assert draft.status == DocumentStatus.PUBLISHED and draft.published_at is not None
    assert manifest.status == DocumentStatus.RETIRED
    assert Manifest.current_for(manifest.sku) == draft


def test_publish_action_on_the_changelist(client, alice, manifest):
    draft = manifest.clone_as_draft(actor=alice)
    client.force_login(alice)
    response = client.post(
        reverse("admin:fleet_manifest_changelist"),
        {"action": "publish_selected", "_selected_action": [draft.pk], "post": "yes"},
    )
    assert response.status_code == 302
    assert Manifest.current_for(manifest.sku) == draft


def test_publish_action_refuses_two_drafts_of_one_sku(client, alice, manifest):
    first = manifest.clone_as_draft(actor=alice)
    second = manifest.clone_as_draft(actor=alice)
    client.force_login(alice)
    client.post(
        reverse("admin:fleet_manifest_changelist"),
        {"action": "publish_selected", "_selected_action": [first.pk, second.pk], "post": "yes"},
    )
    assert Manifest.current_for(manifest.sku) == manifest


def test_a_retired_version_cannot_be_published_again(client, alice, manifest):
    manifest.clone_as_draft(actor=alice).publish()
    manifest.refresh_from_db()
    with pytest.raises(ValidationError, match="only a draft can be published"):
        manifest.publish()
    client.force_login(alice)
    response = client.post(reverse("admin:fleet_manifest_publish", args=[manifest.pk]))
    assert response.status_code == 403


def test_the_diff_against_the_previous_version(client, alice, manifest):
    draft = manifest.clone_as_draft(actor=alice)
    draft.yaml_text = draft.yaml_text.replace("BootMode: Uefi", "BootMode: Legacy")
    draft.full_clean()
    draft.save()
    client.force_login(alice)
    html = client.get(change_url(draft)).content.decode()
    assert '<pre class="yaml-diff"' in html
    assert "--- 1.0.0 (published)" in html
    assert "+++ 1.0.1 (draft)" in html
    assert ">-  BootMode: Uefi</span>" in html
    assert ">+  BootMode: Legacy</span>" in html
    first = client.get(change_url(manifest)).content.decode()
    assert "This is the first version of this SKU." in first


def test_the_diff_escapes_html(client, alice, manifest):
    draft = manifest.clone_as_draft(actor=alice)
    draft.yaml_text += "# <script>alert(1)</script>\n"
    draft.save()
    client.force_login(alice)
    html = client.get(change_url(draft)).content.decode()
    assert "<script>alert(1)" not in html
    assert "&lt;script&gt;alert(1)" in html


def test_a_site_tech_can_not_publish(client, bob, manifest):
    draft = manifest.clone_as_draft()
    bob.is_staff = True
    bob.save()
    client.force_login(bob)
    response = client.post(reverse("admin:fleet_manifest_publish", args=[draft.pk]))
    assert response.status_code == 403
    draft.refresh_from_db()
    assert draft.status == DocumentStatus.DRAFT
