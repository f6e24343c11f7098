"""The rack view marks nodes behind their SKU's published manifest and counts them; the node
panel says which version the node is on and which is published."""

from __future__ import annotations

import pytest
from django.urls import reverse

from fleet.choices import NodeState
from fleet.models import Node
from tests import factories
from tests.support import scenes

pytestmark = pytest.mark.django_db
S = NodeState


@pytest.fixture
def rack_with_a_new_manifest(manifest, profile):
    rack = factories.make_rack("R07")
    behind, current, enrolled = scenes.build_rack(
        rack, {S.IN_SERVICE: 1, S.AWAITING_APPROVAL: 1, S.ENROLLED: 1}
    )
    new = manifest.clone_as_draft()
    new.publish()
    # One node was brought to the new version already: it is not behind.
    Node.objects.filter(pk=current.pk).update(manifest=new)
    return rack, behind, current, enrolled


def test_the_rack_marks_and_counts_the_nodes_behind(client, bob, rack_with_a_new_manifest):
    rack, behind, current, enrolled = rack_with_a_new_manifest
    client.force_login(bob)
    html = client.get(reverse("console:rack", args=[rack.pk])).content.decode()
    assert html.count('class="behind-mark"') == 1
    slot = html[html.index(f'id="slot-{behind.pk}"') :]
    slot = slot[: slot.index("</a>")]
    assert 'data-behind="1.0.1"' in slot and "Manifest 1.0.0; 1.0.1 is published" in slot
    assert 'data-behind="1"' in html and "1 node behind the published manifest" in html
    assert reverse("console:rollouts") in html


def test_the_live_snapshot_carries_the_mark_too(client, bob, rack_with_a_new_manifest):
    rack, behind, current, enrolled = rack_with_a_new_manifest
    client.force_login(bob)
    body = client.get(reverse("console:rack-snapshot", args=[rack.pk])).json()
    assert 'class="behind-mark"' in body["slots"][str(behind.pk)]
    assert "behind-mark" not in body["slots"][str(current.pk)]
    assert "behind-mark" not in body["slots"][str(enrolled.pk)]
    assert "1 node behind" in body["summary"]


def test_the_panel_says_which_version_is_published(client, bob, rack_with_a_new_manifest):
    rack, behind, current, enrolled = rack_with_a_new_manifest
    client.force_login(bob)
    html = client.get(reverse("console:node-panel", args=[behind.pk])).content.decode()
    assert (
        f'<dd class="behind" id="behind-{behind.pk}">Manifest 1.0.0; 1.0.1 is published</dd>'
        in html
    )
    other = client.get(reverse("console:node-panel", args=[current.pk])).content.decode()
    assert 'class="behind"' not in other
