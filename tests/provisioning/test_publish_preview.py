"""Publishing a manifest shows first what it does: its diff and the nodes it puts behind; only the
confirming POST publishes. A published manifest's page starts a rollout; its page steers it."""

from __future__ import annotations

import pytest
from django.urls import reverse

from fleet.choices import DocumentStatus, NodeState
from fleet.models import Manifest, Node
from provisioning.choices import RolloutNodeStatus, RolloutState
from provisioning.models import Rollout
from tests import factories
from tests.support.scenes import walk

pytestmark = pytest.mark.django_db
S = NodeState


@pytest.fixture
def fleet(manifest, profile):
    """Three nodes on 1.0.0 in two racks, an enrolled one, and a draft 1.0.1 that changes a BIOS
    setting."""
    r1, r2 = factories.make_rack("R01"), factories.make_rack("R02")
    nodes = [
        walk(factories.make_node("GPU-A", rack=r1, position=3), S.IN_SERVICE),
        walk(factories.make_node("GPU-B", rack=r1, position=4), S.FAILED),
        walk(factories.make_node("GPU-C", rack=r2, position=1), S.AWAITING_APPROVAL),
    ]
    Node.objects.filter(pk__in=[n.pk for n in nodes]).update(manifest=manifest)
    factories.make_node("GPU-NEW", rack=r2, position=2)
    draft = manifest.clone_as_draft()
    draft.yaml_text = draft.yaml_text.replace("BootMode: Uefi", "BootMode: Legacy")
    draft.full_clean()
    draft.save()
    return draft


def publish_url(doc: Manifest) -> str:
    return reverse("admin:fleet_manifest_publish", args=[doc.pk])


def status_of(doc: Manifest) -> str:
    doc.refresh_from_db()
    return doc.status


def test_the_preview_shows_the_diff_and_the_nodes_it_puts_behind_by_rack(client, alice, fleet):
    client.force_login(alice)
    response = client.get(publish_url(fleet))
    assert response.status_code == 200
    html = response.content.decode()
    assert "Publish hgx-h100-8gpu 1.0.1 in place of 1.0.0" in html
    assert ">-  BootMode: Uefi</span>" in html and ">+  BootMode: Legacy</span>" in html
    assert "Publishing 1.0.1 puts 3 nodes behind:" in html
    assert "<b>hall-1/R01</b>: " in html and "<b>hall-1/R02</b>: " in html
    assert html.index("GPU-A (U3, in service)") < html.index("GPU-B (U4, failed)")
    assert "GPU-C (U1, awaiting approval)" in html
    assert "GPU-NEW" not in html, "a node never provisioned is put behind nothing"
    assert 'name="confirm" value="yes"' in html and 'id="publish-cancel"' in html
    assert status_of(fleet) == DocumentStatus.DRAFT, "a GET publishes nothing"


def test_a_post_without_the_confirmation_is_the_preview_again(client, alice, fleet):
    client.force_login(alice)
    response = client.post(publish_url(fleet), {"confirm": "no"})
    assert response.status_code == 200
    assert "puts 3 nodes behind" in response.content.decode()
    assert status_of(fleet) == DocumentStatus.DRAFT


def test_confirming_publishes_and_the_page_offers_to_bring_the_nodes_forward(client, alice, fleet):
    client.force_login(alice)
    response = client.post(publish_url(fleet), {"confirm": "yes"})
    change = reverse("admin:fleet_manifest_change", args=[fleet.pk])
    assert (response.status_code, response.url) == (302, change)
    assert status_of(fleet) == DocumentStatus.PUBLISHED
    html = client.get(change).content.decode()
    assert "There are 3 nodes behind:" in html
    assert 'value="Bring 3 behind nodes to 1.0.1"' in html
    assert reverse("admin:fleet_manifest_rollout", args=[fleet.pk]) in html


def test_the_bulk_action_previews_first_and_publishes_on_its_confirmation(client, alice, fleet):
    client.force_login(alice)
    changelist = reverse("admin:fleet_manifest_changelist")
    picked = {"action": "publish_selected", "_selected_action": [fleet.pk]}
    response = client.post(changelist, picked)
    assert response.status_code == 200
    html = response.content.decode()
    assert "Publishing 1.0.1 puts 3 nodes behind:" in html
    assert 'name="post" value="yes"' in html and f'value="{fleet.pk}"' in html
    assert status_of(fleet) == DocumentStatus.DRAFT
    response = client.post(changelist, {**picked, "post": "yes"})
    assert response.status_code == 302
    assert status_of(fleet) == DocumentStatus.PUBLISHED


def test_a_site_tech_may_not_see_the_preview(client, bob, fleet):
    bob.is_staff = True
    bob.save()
    client.force_login(bob)
    assert client.get(publish_url(fleet)).status_code == 403


def test_the_rollout_starts_from_the_manifest_page_with_its_concurrency(client, alice, fleet):
    fleet.publish()
    client.force_login(alice)
    url = reverse("admin:fleet_manifest_rollout", args=[fleet.pk])
    response = client.post(url, {"concurrency": "1"})
    rollout = Rollout.objects.get()
    assert (response.status_code, response.url) == (
        302,
        reverse("console:rollout", args=[rollout.pk]),
    )
    assert (rollout.concurrency, rollout.created_by, rollout.manifest) == (1, alice, fleet)
    assert rollout.entries.filter(status=RolloutNodeStatus.RUNNING).count() == 1
    page = client.get(response.url).content.decode()
    assert "0 of 3 done" in page and "1 in flight (at most 1)" in page and "2 waiting" in page
    assert 'id="rollout-pause"' in page


def test_a_bad_concurrency_starts_nothing_and_says_why(client, alice, fleet):
    fleet.publish()
    client.force_login(alice)
    url = reverse("admin:fleet_manifest_rollout", args=[fleet.pk])
    response = client.post(url, {"concurrency": "lots"}, follow=True)
    said = "Concurrency must be a whole number from 1 to 50, not &#x27;lots&#x27;"
    assert said in response.content.decode()  # the admin's messages start with a capital
    assert not Rollout.objects.exists()


def test_the_manifest_page_starts_a_rollout_in_waves(client, alice, fleet):
    fleet.publish()
    client.force_login(alice)
    url = reverse("admin:fleet_manifest_rollout", args=[fleet.pk])
    form = {"concurrency": "3", "canary": "1", "wave_growth": "2", "failure_threshold_pct": "0"}
    response = client.post(url, form)
    rollout = Rollout.objects.get()
    assert (rollout.canary, rollout.failure_threshold_pct) == (1, 0)
    assert rollout.entries.filter(status=RolloutNodeStatus.RUNNING).count() == 1  # the canary
    page = client.get(response.url).content.decode()
    assert "Waves: 1 canary node, each next wave 2× the one before" in page
    bad = client.post(url, {**form, "canary": "-2"}, follow=True).content.decode()
    assert "canary must be a whole number from 0" in bad.lower()


def test_a_dcim_reader_may_not_start_a_rollout(client, dora, fleet):
    fleet.publish()
    dora.is_staff = True
    dora.save()
    client.force_login(dora)
    url = reverse("admin:fleet_manifest_rollout", args=[fleet.pk])
    assert client.post(url, {"concurrency": "1"}).status_code == 403
    assert not Rollout.objects.exists()


def test_the_rollout_page_pauses_resumes_and_cancels(client, bob, dora, fleet):
    fleet.publish()
    client.force_login(bob)
    rollout = Rollout.objects.create(manifest=fleet, concurrency=1, created_by=bob)
    steer = lambda verb: reverse("console:rollout-steer", args=[rollout.pk, verb])  # noqa: E731
    client.post(steer("pause"), {"reason": "change freeze"})
    rollout.refresh_from_db()
    assert (rollout.state, rollout.reason) == (RolloutState.PAUSED, "change freeze")
    page = client.get(reverse("console:rollout", args=[rollout.pk])).content.decode()
    assert "change freeze" in page and 'id="rollout-resume"' in page
    client.post(steer("resume"))
    client.post(steer("cancel"))
    rollout.refresh_from_db()
    # Resumed with no node in it, it finished; a cancel then says it has ended.
    assert rollout.state == RolloutState.FINISHED
    assert client.post(steer("explode")).status_code == 404
    client.force_login(dora)
    assert client.get(reverse("console:rollout", args=[rollout.pk])).status_code == 200
    assert client.post(steer("pause")).status_code == 403
    assert client.get(reverse("console:rollouts")).status_code == 200
